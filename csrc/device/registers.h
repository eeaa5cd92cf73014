// The NACC register file (NACC_SPEC §5, §6): host reads and writes with the
// RO / write-one-to-clear / write-only-trigger semantics of the register
// table, device-side setters, and typed field access cheap enough for the
// device's hot path (an enum index and a shift/mask known at compile time).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"
#include "device/register_table.h"

namespace nacc {

// Bit masks of one register, derived from its fields.
struct RegisterMasks {
  uint32_t defined = 0;   // bits covered by some field (the rest are reserved: read 0)
  uint32_t rw = 0, ro = 0, w1c = 0, wo = 0;
  uint32_t readable = 0;  // defined & ~wo
  uint32_t reset = 0;     // reset value
};

// Byte addresses [0, kRegisterSpaceBytes) hold the three banks.
inline constexpr uint32_t kRegisterSpaceBytes = 0x3000;

namespace detail {

constexpr bool str_eq(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

constexpr RegisterMasks compute_masks(const RegisterDesc& r) {
  RegisterMasks m;
  for (int i = 0; i < r.num_fields; ++i) {
    const FieldDesc& f = r.fields[i];
    m.defined |= f.mask();
    switch (f.access) {
      case Access::kRW: m.rw |= f.mask(); break;
      case Access::kRO: m.ro |= f.mask(); break;
      case Access::kW1C: m.w1c |= f.mask(); break;
      case Access::kWO: m.wo |= f.mask(); break;
    }
    m.reset |= (f.reset << f.lsb) & f.mask();
  }
  m.readable = m.defined & ~m.wo;
  return m;
}

constexpr std::array<RegisterMasks, kNumRegisters> make_masks() {
  std::array<RegisterMasks, kNumRegisters> out{};
  for (int i = 0; i < kNumRegisters; ++i) out[i] = compute_masks(kRegisters[i]);
  return out;
}

// Storage slot of each register: its own index, or its alias target's.
constexpr std::array<uint16_t, kNumRegisters> make_storage() {
  std::array<uint16_t, kNumRegisters> out{};
  for (int i = 0; i < kNumRegisters; ++i) {
    out[i] = uint16_t(kRegisters[i].alias_of >= 0 ? kRegisters[i].alias_of : i);
  }
  return out;
}

// Register index per 32-bit word of the address space, -1 where none.
constexpr std::array<int16_t, kRegisterSpaceBytes / 4> make_address_index() {
  std::array<int16_t, kRegisterSpaceBytes / 4> out{};
  for (auto& v : out) v = -1;
  for (int i = 0; i < kNumRegisters; ++i) out[kRegisters[i].offset / 4] = int16_t(i);
  return out;
}

// Structural checks of the table, evaluated at compile time (static_assert in
// registers.cc): aligned unique offsets inside their bank, fields inside 0..31
// in ascending order without overlap, unique field names per register, resets
// that fit their field, aliases that view plain RW registers.
constexpr bool table_is_consistent() {
  for (int i = 0; i < kNumRegisters; ++i) {
    const RegisterDesc& r = kRegisters[i];
    if (r.offset % 4 != 0 || r.offset >= kRegisterSpaceBytes) return false;
    const uint32_t bank_base = r.bank == Bank::kCompute   ? 0x0000
                               : r.bank == Bank::kCommand ? 0x1000
                                                          : 0x2000;
    if (r.offset < bank_base || r.offset >= bank_base + 0x1000) return false;
    if (r.bank == Bank::kCompute && r.offset > 0xFC) return false;
    for (int j = 0; j < i; ++j) {
      if (kRegisters[j].offset == r.offset || str_eq(kRegisters[j].name, r.name)) return false;
    }
    if (r.num_fields == 0) return false;
    uint32_t seen = 0;
    for (int k = 0; k < r.num_fields; ++k) {
      const FieldDesc& f = r.fields[k];
      if (f.msb > 31 || f.lsb > f.msb) return false;
      if (k > 0 && f.lsb <= r.fields[k - 1].msb) return false;
      if (seen & f.mask()) return false;
      seen |= f.mask();
      if (f.width() < 32 && (f.reset >> f.width()) != 0) return false;
      for (int q = 0; q < k; ++q) {
        if (str_eq(r.fields[q].name, f.name)) return false;
      }
    }
    if (r.alias_of >= 0) {
      const RegisterMasks a = compute_masks(r), t = compute_masks(kRegisters[r.alias_of]);
      if (a.rw != a.defined || t.rw != t.defined) return false;
      if (kRegisters[r.alias_of].alias_of >= 0) return false;
      if ((a.reset | t.reset) != 0) return false;
    }
  }
  return true;
}

}  // namespace detail

inline constexpr std::array<RegisterMasks, kNumRegisters> kRegisterMasks = detail::make_masks();
inline constexpr std::array<uint16_t, kNumRegisters> kRegisterStorage = detail::make_storage();
inline constexpr std::array<int16_t, kRegisterSpaceBytes / 4> kRegisterAtWord =
    detail::make_address_index();

constexpr const RegisterDesc& describe(Reg r) { return kRegisters[int(r)]; }
constexpr const RegisterMasks& masks_of(Reg r) { return kRegisterMasks[int(r)]; }
constexpr uint32_t reset_value(Reg r) { return kRegisterMasks[int(r)].reset; }

// Index of the register at byte address `addr`, or -1 (unaligned, outside the
// map, or a gap).
constexpr int register_index_at(uint32_t addr) {
  if (addr % 4 != 0 || addr >= kRegisterSpaceBytes) return -1;
  return kRegisterAtWord[addr / 4];
}

// A register with a write-one-to-clear or write-only field: writing it has an
// effect beyond storing a value, so an emitter never drops a write to it.
constexpr bool is_trigger_register(Reg r) {
  return (kRegisterMasks[int(r)].w1c | kRegisterMasks[int(r)].wo) != 0;
}

// Index of the register called `name`, or -1.
int find_register(std::string_view name);
// The register called `name`; InvalidArgument naming the closest matches otherwise.
Reg register_by_name(std::string_view name);
// "NACC compute bank (0x0000-0x00FC)" etc. for messages about `addr`.
std::string describe_address(uint32_t addr);

// A field of a register, resolved once; extracting it is a shift and a mask.
struct FieldRef {
  Reg reg;
  uint8_t index;   // position in describe(reg).fields
  uint8_t lsb;
  uint8_t width;
  bool is_signed;

  constexpr uint32_t low_mask() const { return width >= 32 ? 0xFFFFFFFFu : (1u << width) - 1u; }
  constexpr uint32_t mask() const { return low_mask() << lsb; }
  // The field's value in a register value (zero-extended).
  constexpr uint32_t extract(uint32_t reg_value) const { return (reg_value >> lsb) & low_mask(); }
  // The field's value sign-extended from `width` bits.
  constexpr int32_t extract_signed(uint32_t reg_value) const {
    const uint32_t v = extract(reg_value);
    const uint32_t sign = 1u << (width - 1);
    return int32_t(int64_t((v ^ sign)) - int64_t(sign));
  }
  // `reg_value` with the field replaced by the low `width` bits of `v`.
  constexpr uint32_t insert(uint32_t reg_value, uint32_t v) const {
    return (reg_value & ~mask()) | ((v << lsb) & mask());
  }
  constexpr const FieldDesc& desc() const { return kRegisters[int(reg)].fields[index]; }
};

// The field `name` of register r. Use in a constexpr context
// (`constexpr FieldRef kKSizeX = field_of(Reg::NACC_KERNEL, "K_SIZE_X");`):
// a misspelt name is then a compile error. At run time it throws InvalidArgument.
constexpr FieldRef field_of(Reg r, const char* name) {
  const RegisterDesc& d = kRegisters[int(r)];
  for (int i = 0; i < d.num_fields; ++i) {
    if (detail::str_eq(d.fields[i].name, name)) {
      return FieldRef{r, uint8_t(i), d.fields[i].lsb, uint8_t(d.fields[i].width()),
                      d.fields[i].is_signed};
    }
  }
  throw InvalidArgument(str_cat(d.name, " has no field '", name, "'"));
}

// Run-time lookup by names, with a message listing the register's fields.
FieldRef field_by_name(Reg r, std::string_view name);
// "NACC_KERNEL.K_SIZE_X"
std::string field_path(FieldRef f);
// Range a value of the field may take: [0, 2^w - 1], or [-2^(w-1), 2^(w-1) - 1] if signed.
int64_t field_min(FieldRef f);
int64_t field_max(FieldRef f);
// `reg_value` with field f set to `value`; InvalidArgument when it does not fit:
// "NACC_KERNEL.K_SIZE_X: value 16 out of range [0, 15]".
uint32_t with_field(uint32_t reg_value, FieldRef f, int64_t value);

// The register file of one device: storage for every register of the three
// banks, reset values from the table. Aliases ([C]'s QBASE0/1 and BASEP0..15)
// have no storage of their own: they view INSTR_ADDR_L/H and BATCH0_ADDRn_L/H,
// and a write through a narrower view zero-extends (NACC_SPEC §6).
class RegisterFile {
 public:
  RegisterFile() { reset(); }

  // Every register to its reset value.
  void reset();
  // Every stream-writable register that is not a trigger register to its
  // reset value; CMD.START does this before a stream runs, so a compiled
  // stream starts from known values (docs/command_stream.md).
  void reset_stream_registers();

  // --- Host access (ICB slave port) ---
  // Reads the register at byte address `addr`: stored bits of RW/RO/W1C fields,
  // 0 for reserved and write-only bits. DeviceFault when no register is there.
  uint32_t read(uint32_t addr) const;
  // Writes the register at `addr`: RW bits take the value, RO and reserved bits
  // ignore it, W1C bits written as 1 clear, write-only bits are not stored.
  // Returns the write-only (trigger) bits written as 1, for the device to act
  // on (e.g. CMD.START). DeviceFault when no register is there.
  uint32_t write(uint32_t addr, uint32_t value);
  // Same semantics, by enum.
  uint32_t write(Reg r, uint32_t value);

  // --- Device side (no access rules) ---
  // Readable value of r (as a host read would return).
  uint32_t get(Reg r) const {
    return values_[kRegisterStorage[int(r)]] & kRegisterMasks[int(r)].readable;
  }
  uint32_t field(FieldRef f) const { return f.extract(get(f.reg)); }
  int32_t field_signed(FieldRef f) const { return f.extract_signed(get(f.reg)); }
  // Stores the defined bits of `value` whatever their access (RO counters,
  // QREAD, status bits). Through an alias, the target is replaced (zero-extended).
  void set(Reg r, uint32_t value) {
    values_[kRegisterStorage[int(r)]] = value & kRegisterMasks[int(r)].defined;
  }
  void set_field(FieldRef f, uint32_t value) { set(f.reg, f.insert(get(f.reg), value)); }
  // Sets status bits (e.g. NACC_INT_STATUS.BUS_RD_ERR_INTR); the host clears them (W1C).
  void raise(Reg r, uint32_t bits) {
    values_[kRegisterStorage[int(r)]] |= bits & kRegisterMasks[int(r)].defined;
  }

  // 44-bit base address of `region` for batch handler `handler` (BATCHb_ADDRi_H:L).
  uint64_t region_base(int handler, int region) const;
  // 44-bit command stream address (INSTR_ADDR_H:L, QBASE1:0).
  uint64_t instruction_address() const;

 private:
  std::array<uint32_t, kNumRegisters> values_{};
};

}  // namespace nacc

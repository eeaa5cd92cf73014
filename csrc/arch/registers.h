// The NACC register map as code (NACC_SPEC §5, §6): per-register masks derived
// from the table, address and name lookups, and typed field access cheap
// enough for the device's hot path (an enum index and a shift/mask known at
// compile time). The named field constants are arch/fields.h.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "arch/register_table.h"
#include "common/error.h"

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

// The stored bits of a (non-alias) register after a host or NPU_SET_REGISTER
// write of `value` over `stored`: RW bits take the value, RO and reserved bits
// keep theirs, W1C bits written as 1 clear, write-only bits are not stored.
constexpr uint32_t host_write_bits(Reg r, uint32_t stored, uint32_t value) {
  const RegisterMasks& m = kRegisterMasks[int(r)];
  return ((stored & ~m.rw) | (value & m.rw)) & ~(value & m.w1c);
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

// The symbolic name of `value` in an enumerated field ("DEPTHWISE"), or "?"
// when the field has no such value (or is not enumerated).
constexpr const char* enum_value_name(FieldRef f, uint32_t value) {
  const FieldDesc& d = f.desc();
  for (int i = 0; i < d.num_values; ++i) {
    if (d.values[i].value == value) return d.values[i].name;
  }
  return "?";
}

// Run-time lookup by names, with a message listing the register's fields.
FieldRef field_by_name(Reg r, std::string_view name);
// "NACC_KERNEL.K_SIZE_X"
std::string field_path(FieldRef f);
// Range a value of the field may take: [0, 2^w - 1], or [-2^(w-1), 2^(w-1) - 1] if signed.
constexpr int64_t field_min(FieldRef f) {
  return f.is_signed ? -(int64_t(1) << (f.width - 1)) : 0;
}
constexpr int64_t field_max(FieldRef f) {
  return f.is_signed ? (int64_t(1) << (f.width - 1)) - 1 : (int64_t(1) << f.width) - 1;
}
// `reg_value` with field f set to `value`; InvalidArgument when it does not fit:
// "NACC_KERNEL.K_SIZE_X: value 16 out of range [0, 15]".
uint32_t with_field(uint32_t reg_value, FieldRef f, int64_t value);

}  // namespace nacc

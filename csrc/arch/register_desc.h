// Types that describe the NACC register map as data (NACC_SPEC §5, §6): the
// three banks, each register's offset and flags, each field's bit range,
// access and reset value. The table itself is register_table.h; the register
// file, the emitter, the disassembler and the generated docs all read it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nacc {

// How the host (ICB slave port) sees a field.
enum class Access : uint8_t {
  kRW,   // read/write
  kRO,   // read-only: host writes are ignored; the device sets the value
  kW1C,  // write-one-to-clear ([N] "WOC"): writing 1 clears the bit, 0 leaves it
  kWO,   // write-only trigger: writing 1 performs an action; never stored, reads 0
};

// The three banks of the one device address map (NACC_SPEC §6).
enum class Bank : uint8_t {
  kCompute,  // 0x0000-0x00FC: NACC compute registers, exactly as [N] §5
  kCommand,  // 0x1000 + [C] offset: command processor, regions, PMU
  kBatch,    // 0x2000 + [D] offset: instruction address, batch-handler bases
};

// A named value of an enumerated field, e.g. NACC_CTRL.CONV_MODE 3 = DEPTHWISE.
struct EnumName {
  uint32_t value;
  const char* name;
};

struct FieldDesc {
  const char* name;
  uint8_t msb, lsb;   // bit range msb..lsb, 31 >= msb >= lsb >= 0
  Access access;
  uint32_t reset;     // field value after reset (not shifted)
  bool is_signed;     // two's complement in width() bits (the project's reading)
  const EnumName* values;  // symbolic values, or nullptr
  uint8_t num_values;
  const char* description;

  constexpr uint32_t width() const { return uint32_t(msb) - lsb + 1u; }
  // The field's bits in place, e.g. bits 7..4 -> 0x000000F0.
  constexpr uint32_t mask() const {
    return (width() >= 32 ? 0xFFFFFFFFu : ((1u << width()) - 1u)) << lsb;
  }
};

// Register flags.
enum RegisterFlag : uint8_t {
  // A command stream may write it with NPU_SET_REGISTER (docs/command_stream.md).
  kStreamWritable = 1u << 0,
  // Holds a region address: region number in bits 31..29, byte offset in 28..0.
  kRegionAddress = 1u << 1,
  // Not in the vendor documents: the project's own register or field layout.
  kProjectDefined = 1u << 2,
};

struct RegisterDesc {
  const char* name;
  uint16_t offset;    // byte address in the device map, multiple of 4
  Bank bank;
  const FieldDesc* fields;  // ascending lsb; bits no field covers are reserved
  uint8_t num_fields;
  uint8_t flags;      // RegisterFlag bits
  int16_t alias_of;   // register index whose storage this one views, or -1
  const char* description;
};

// Constructors used by the table (keep the table rows short).
constexpr FieldDesc field(const char* name, int msb, int lsb, Access access, uint32_t reset,
                          const char* description) {
  return FieldDesc{name,  uint8_t(msb), uint8_t(lsb), access, reset, false, nullptr, 0,
                   description};
}
constexpr FieldDesc rw(const char* name, int msb, int lsb, uint32_t reset,
                       const char* description) {
  return field(name, msb, lsb, Access::kRW, reset, description);
}
constexpr FieldDesc rw_signed(const char* name, int msb, int lsb, const char* description) {
  return FieldDesc{name, uint8_t(msb), uint8_t(lsb), Access::kRW, 0, true, nullptr, 0,
                   description};
}
template <size_t N>
constexpr FieldDesc rw_enum(const char* name, int msb, int lsb, uint32_t reset,
                            const EnumName (&values)[N], const char* description) {
  return FieldDesc{name, uint8_t(msb), uint8_t(lsb), Access::kRW, reset, false, values,
                   uint8_t(N), description};
}

}  // namespace nacc

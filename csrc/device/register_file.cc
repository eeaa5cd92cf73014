// The register file of one simulated device: reset, host access with RO /
// W1C / write-only semantics, region bases (NACC_SPEC §5, §6).
#include "device/register_file.h"

#include <cstdio>
#include <string>

namespace nacc {
namespace {

std::string hex4(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04X", v);
  return buf;
}

DeviceFault no_register(const char* what, uint32_t addr) {
  if (addr % 4 != 0) {
    return DeviceFault(
        str_cat("register ", what, " at ", hex4(addr), ": address is not a multiple of 4"));
  }
  return DeviceFault(str_cat("register ", what, " at ", hex4(addr),
                             ": no register at this address (", describe_address(addr), ")"));
}

}  // namespace

void RegisterFile::reset() {
  for (int i = 0; i < kNumRegisters; ++i) values_[i] = kRegisterMasks[i].reset;
}

void RegisterFile::reset_stream_registers() {
  for (int i = 0; i < kNumRegisters; ++i) {
    if ((kRegisters[i].flags & kStreamWritable) && !is_trigger_register(Reg(i))) {
      values_[i] = kRegisterMasks[i].reset;
    }
  }
}

uint32_t RegisterFile::read(uint32_t addr) const {
  const int i = register_index_at(addr);
  if (i < 0) throw no_register("read", addr);
  return get(Reg(i));
}

uint32_t RegisterFile::write(uint32_t addr, uint32_t value) {
  const int i = register_index_at(addr);
  if (i < 0) throw no_register("write", addr);
  return write(Reg(i), value);
}

uint32_t RegisterFile::write(Reg r, uint32_t value) {
  const RegisterMasks& m = kRegisterMasks[int(r)];
  uint32_t& slot = values_[kRegisterStorage[int(r)]];
  if (describe(r).alias_of >= 0) {
    // A view replaces its target, zero-extended (aliases are plain RW, checked above).
    slot = value & m.rw;
    return 0;
  }
  slot = host_write_bits(r, slot, value);
  return value & m.wo;
}

uint64_t RegisterFile::region_base(int handler, int region) const {
  check_arg(handler >= 0 && handler < limits::kNumBatchHandlers, "batch handler ", handler,
            " out of range [0, ", limits::kNumBatchHandlers - 1, "]");
  check_arg(region >= 0 && region < limits::kNumRegions, "region ", region, " out of range [0, ",
            limits::kNumRegions - 1, "]");
  const uint64_t hi = get(batch_addr_hi(handler, region));
  return (hi << 32) | get(batch_addr_lo(handler, region));
}

uint64_t RegisterFile::instruction_address() const {
  return (uint64_t(get(Reg::INSTR_ADDR_H)) << 32) | get(Reg::INSTR_ADDR_L);
}

}  // namespace nacc

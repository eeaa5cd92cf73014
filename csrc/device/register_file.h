// The register file of one simulated device (NACC_SPEC §5, §6): storage for
// every register of the three banks, host reads and writes with the RO /
// write-one-to-clear / write-only-trigger semantics of the register table
// (arch/registers.h), and device-side setters.
#pragma once

#include <array>
#include <cstdint>

#include "arch/registers.h"

namespace nacc {

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

// The compiler's register-shadow emitter (docs/command_stream.md): writes the
// command words of arch/command_stream.h, dropping register writes that would
// not change what the device holds.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <vector>

#include "arch/command_stream.h"

namespace nacc {

// ---------------------------------------------------------------------------
// Register-shadow emitter. It keeps the value each register will hold when
// the device reaches the current end of the stream and drops an
// NPU_SET_REGISTER that would not change it. Writes to trigger registers
// (W1C or write-only fields) are never dropped. By default the shadow starts
// at the reset values, because CMD.START resets the compute bank and the
// DMA_*/VNCHWCONV_* registers before the stream runs (docs/command_stream.md).
class Emitter {
 public:
  explicit Emitter(bool assume_reset_state = true);

  // NPU_SET_REGISTER r = value, unless the shadow already holds value.
  // InvalidArgument when a stream may not write it (check_register_write).
  void set_register(Reg r, uint32_t value);
  void set_register_at(uint32_t offset, uint32_t value);
  // A cmd0. Kernel opcodes are checked against the NACC_CTRL shadow when it is
  // known. InvalidArgument for NPU_SET_REGISTER (use set_register), bad
  // parameters, or anything after stop().
  void op(Opcode op, uint16_t param = 0);
  void stop() { op(Opcode::NPU_OP_STOP, 0); }

  // Forget what the device holds (e.g. after a hand-written block of words).
  void forget(Reg r) { known_.reset(size_t(r)); }
  void forget_all() { known_.reset(); }

  bool known(Reg r) const { return known_.test(size_t(r)); }
  uint32_t shadow(Reg r) const { return shadow_[size_t(r)]; }
  const std::vector<uint32_t>& words() const { return words_; }
  size_t emitted_writes() const { return emitted_writes_; }
  size_t skipped_writes() const { return skipped_writes_; }
  bool stopped() const { return stopped_; }

 private:
  void check_open(const char* what) const;

  std::vector<uint32_t> words_;
  std::array<uint32_t, kNumRegisters> shadow_{};
  std::bitset<kNumRegisters> known_;
  size_t emitted_writes_ = 0;
  size_t skipped_writes_ = 0;
  bool stopped_ = false;
};

}  // namespace nacc

// The register-shadow emitter (compiler/emitter.h).
#include "compiler/emitter.h"

namespace nacc {

Emitter::Emitter(bool assume_reset_state) {
  for (int i = 0; i < kNumRegisters; ++i) {
    shadow_[i] = kRegisterMasks[i].reset;
    const bool reset_by_start =
        (kRegisters[i].flags & kStreamWritable) && !is_trigger_register(Reg(i));
    if (assume_reset_state && reset_by_start) known_.set(size_t(i));
  }
}

void Emitter::check_open(const char* what) const {
  check_arg(!stopped_, "emitter: ", what, " after NPU_OP_STOP (the stream is complete)");
}

void Emitter::set_register(Reg r, uint32_t value) {
  check_open("NPU_SET_REGISTER");
  const RegisterDesc& d = describe(r);
  const std::string err = check_register_write(d.offset, value);
  check_arg(err.empty(), "emitter: ", err);
  const bool trigger = is_trigger_register(r);
  if (!trigger && known_.test(size_t(r)) && shadow_[size_t(r)] == value) {
    ++skipped_writes_;
    return;
  }
  words_.push_back(encode_cmd1(Opcode::NPU_SET_REGISTER, d.offset));
  words_.push_back(value);
  ++emitted_writes_;
  if (!trigger) {
    shadow_[size_t(r)] = value;
    known_.set(size_t(r));
  }
}

void Emitter::set_register_at(uint32_t offset, uint32_t value) {
  const std::string err = check_register_write(offset, value);
  check_arg(err.empty(), "emitter: ", err);
  set_register(Reg(register_index_at(offset)), value);
}

void Emitter::op(Opcode op, uint16_t param) {
  const OpcodeDesc& d = describe(op);
  check_open(d.name);
  check_arg(d.kind == CommandKind::kCmd0, "emitter: ", d.name,
            " is a cmd1; use set_register() to write registers");
  std::string err = check_param(op, param);
  check_arg(err.empty(), "emitter: ", err);
  if (d.is_kernel && known_.test(size_t(Reg::NACC_CTRL))) {
    err = check_kernel_mode(op, shadow_[size_t(Reg::NACC_CTRL)]);
    check_arg(err.empty(), "emitter: ", err);
  }
  words_.push_back(encode_cmd0(op, param));
  if (op == Opcode::NPU_OP_STOP) stopped_ = true;
}

}  // namespace nacc

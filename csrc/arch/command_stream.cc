// The NACC command-stream format: opcode lookups, the shared checks, the
// validating decoder and the disassembler (NACC_SPEC §6, docs/command_stream.md).
#include "arch/command_stream.h"

#include <cinttypes>
#include <cstdio>
#include <iterator>

#include "arch/fields.h"

namespace nacc {

namespace {

std::string hex(uint32_t v, int digits) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%0*X", digits, v);
  return buf;
}


constexpr uint32_t bit(uint32_t v) { return 1u << v; }
template <typename E>
constexpr uint32_t bit(E e) {
  return bit(value_of(e));
}

// The kernel-mode table: what NACC_CTRL must select for each kernel opcode.
// Fused conv + pool is not claimed by the project (POOL_MODE = NONE for the
// MAC modes); relaxing a row here relaxes emitter, decoder and device at once.
struct KernelRule {
  Opcode op;
  uint32_t conv_modes;     // allowed CONV_MODE values, as a bit set
  uint32_t pool_modes;     // allowed POOL_MODE values, as a bit set
  uint32_t element_en;     // required ELEMENT_EN
  bool im2col_allowed;     // IM2COL_EN may be 1 (else it must be 0)
  bool needs_activation;   // ACT_MODE must not be NONE
};

constexpr KernelRule kKernelRules[] = {
    {Opcode::NPU_OP_CONV, bit(ConvMode::CONVOLUTION) | bit(ConvMode::RGB_CONV), bit(PoolMode::NONE),
     0, false, false},
    {Opcode::NPU_OP_DEPTHWISE, bit(ConvMode::DEPTHWISE), bit(PoolMode::NONE), 0, false, false},
    {Opcode::NPU_OP_POOL, bit(ConvMode::NONE), bit(PoolMode::MAX) | bit(PoolMode::AVERAGE), 0,
     false, false},
    {Opcode::NPU_OP_ELEMENTWISE, bit(ConvMode::NONE), bit(PoolMode::NONE), 1, false, false},
    {Opcode::NPU_OP_MATMUL, bit(ConvMode::MATRIX), bit(PoolMode::NONE), 0, true, false},
    {Opcode::NPU_OP_FULLY_CONNECTED, bit(ConvMode::FULLY_CONNECTED), bit(PoolMode::NONE), 0, false,
     false},
    {Opcode::NPU_OP_ACTIVATION, bit(ConvMode::NONE), bit(PoolMode::NONE), 0, false, true},
};

const KernelRule* kernel_rule(Opcode op) {
  for (const auto& r : kKernelRules) {
    if (r.op == op) return &r;
  }
  return nullptr;
}

// Symbolic name of a field value, or its number (signed fields signed).
std::string field_value_text(FieldRef f, uint32_t reg_value) {
  const FieldDesc& d = f.desc();
  const uint32_t v = f.extract(reg_value);
  for (int i = 0; i < d.num_values; ++i) {
    if (d.values[i].value == v) return d.values[i].name;
  }
  if (f.is_signed) return std::to_string(f.extract_signed(reg_value));
  return std::to_string(v);
}

std::string mode_set_text(FieldRef f, uint32_t allowed) {
  std::vector<std::string> names;
  for (uint32_t v = 0; v < 32; ++v) {
    if (allowed & bit(v)) names.push_back(field_value_text(f, f.insert(0, v)));
  }
  if (names.size() == 1) return str_cat(f.desc().name, " = ", names[0]);
  std::string out = str_cat(f.desc().name, " in {");
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out + "}";
}

}  // namespace

// ---------------------------------------------------------------------------
// Opcodes.

const OpcodeDesc* find_opcode(uint32_t opcode_bits, CommandKind kind) {
  for (const auto& d : kOpcodes) {
    if ((uint32_t(d.op) & kOpcodeMask) == opcode_bits && d.kind == kind) return &d;
  }
  return nullptr;
}

const OpcodeDesc& describe(Opcode op) {
  for (const auto& d : kOpcodes) {
    if (d.op == op) return d;
  }
  throw InvalidArgument(str_cat("unknown opcode ", hex(uint32_t(op), 3)));
}

const char* opcode_name(Opcode op) { return describe(op).name; }

Opcode opcode_by_name(std::string_view name) {
  std::string names;
  for (const auto& d : kOpcodes) {
    if (name == d.name) return d.op;
    names += (names.empty() ? "" : ", ") + std::string(d.name);
  }
  throw InvalidArgument(str_cat("unknown opcode '", name, "' (opcodes: ", names, ")"));
}

uint32_t region_address(int region, int64_t offset) {
  check_arg(region >= 0 && region < limits::kNumRegions, "region ", region, " out of range [0, ",
            limits::kNumRegions - 1, "]");
  check_arg(offset >= 0 && offset <= int64_t(kRegionOffsetMask), "region offset ", offset,
            " out of range [0, ", kRegionOffsetMask, "] (29 bits)");
  return (uint32_t(region) << kRegionShift) | uint32_t(offset);
}

// ---------------------------------------------------------------------------
// Shared checks.

std::string check_register_write(uint32_t offset, uint32_t value) {
  if (offset % 4 != 0) {
    return str_cat("register offset ", hex(offset, 4), " is not a multiple of 4");
  }
  const int i = register_index_at(offset);
  if (i < 0) {
    return str_cat("no register at offset ", hex(offset, 4), " (", describe_address(offset), ")");
  }
  const RegisterDesc& d = kRegisters[i];
  if (!(d.flags & kStreamWritable)) {
    return str_cat(d.name, " (", hex(offset, 4),
                   ") is not stream-writable: a command stream may write the NACC compute bank "
                   "except NACC_INT_EN, NACC_INT_STATUS and NACC_VERSION, the DMA_* and "
                   "VNCHWCONV_* registers and PMU_CTRL");
  }
  const RegisterMasks& m = kRegisterMasks[i];
  const uint32_t bad = value & ~(m.rw | m.w1c | m.wo);
  if (bad != 0) {
    return str_cat(d.name, " = ", hex(value, 8), " sets reserved or read-only bits ", hex(bad, 8),
                   " (writable bits ", hex(m.rw | m.w1c | m.wo, 8), ")");
  }
  if (Reg(i) == Reg::NACC_CTRL && fields::NACC_CTRL::START.extract(value) != 0) {
    return "NACC_CTRL.START must be 0 in a command stream: kernels are started by "
           "NPU_OP_<KERNEL> commands";
  }
  return "";
}

std::string check_param(Opcode op, uint16_t param) {
  const OpcodeDesc& d = describe(op);
  if (d.param == ParamUse::kReserved && param != 0) {
    return str_cat(d.name, ": parameter ", hex(param, 4), " must be 0 (reserved)");
  }
  return "";
}

std::string kernel_mode_rule(Opcode op) {
  const KernelRule* r = kernel_rule(op);
  if (!r) return "";
  std::string out = str_cat(mode_set_text(fields::NACC_CTRL::CONV_MODE, r->conv_modes), ", ",
                            mode_set_text(fields::NACC_CTRL::POOL_MODE, r->pool_modes),
                            ", ELEMENT_EN = ", r->element_en);
  out += r->im2col_allowed ? ", IM2COL_EN = 0 or 1" : ", IM2COL_EN = 0";
  if (r->needs_activation) out += ", ACT_MODE != NONE";
  return out;
}

std::string check_kernel_mode(Opcode op, uint32_t ctrl) {
  const KernelRule* r = kernel_rule(op);
  if (!r) return "";
  // Mode fields are 4 bits wide, so bit(value) stays inside the 32-bit sets.
  const FieldRef* bad = nullptr;
  if (!(r->conv_modes & bit(fields::NACC_CTRL::CONV_MODE.extract(ctrl)))) {
    bad = &fields::NACC_CTRL::CONV_MODE;
  } else if (!(r->pool_modes & bit(fields::NACC_CTRL::POOL_MODE.extract(ctrl)))) {
    bad = &fields::NACC_CTRL::POOL_MODE;
  } else if (fields::NACC_CTRL::ELEMENT_EN.extract(ctrl) != r->element_en) {
    bad = &fields::NACC_CTRL::ELEMENT_EN;
  } else if (!r->im2col_allowed && fields::NACC_CTRL::IM2COL_EN.extract(ctrl) != 0) {
    bad = &fields::NACC_CTRL::IM2COL_EN;
  } else if (r->needs_activation &&
             fields::NACC_CTRL::ACT_MODE.extract(ctrl) == value_of(ActMode::NONE)) {
    bad = &fields::NACC_CTRL::ACT_MODE;
  }
  if (!bad) return "";
  return str_cat(describe(op).name, " needs NACC_CTRL ", kernel_mode_rule(op), "; NACC_CTRL = ",
                 hex(ctrl, 8), " has ", bad->desc().name, "=", field_value_text(*bad, ctrl));
}

// ---------------------------------------------------------------------------
// Decoding.

std::string stream_position(size_t word) {
  return str_cat("command stream word ", word, " (byte ", hex(uint32_t(word * 4), 4), "): ");
}

std::string decode_command(const uint32_t* words, size_t num_words, size_t pos, Command* out) {
  if (pos >= num_words) return "stream ends without NPU_OP_STOP";
  const uint32_t w = words[pos];
  const uint32_t flags = (w >> kFlagsShift) & kFlagsMask;
  const uint32_t opcode = w & kOpcodeMask;
  const uint16_t param = uint16_t(w >> kParamShift);
  CommandKind kind;
  if (flags == kCmd0Flags) {
    kind = CommandKind::kCmd0;
  } else if (flags == kCmd1Flags) {
    kind = CommandKind::kCmd1;
  } else {
    return str_cat("word ", hex(w, 8), " has flags ", hex(flags, 2),
                   " in bits 15..10: must be 0x00 (cmd0) or 0x10 (cmd1)");
  }
  const OpcodeDesc* d = find_opcode(opcode, kind);
  if (!d) {
    const char* kind_name = kind == CommandKind::kCmd0 ? "cmd0" : "cmd1";
    const OpcodeDesc* other =
        find_opcode(opcode, kind == CommandKind::kCmd0 ? CommandKind::kCmd1 : CommandKind::kCmd0);
    if (other) {
      return str_cat("word ", hex(w, 8), ": ", other->name, " is a ",
                     kind == CommandKind::kCmd0 ? "cmd1 (flags 0x10)" : "cmd0 (flags 0x00)",
                     " but the word has ", kind_name, " flags");
    }
    return str_cat("word ", hex(w, 8), ": unknown ", kind_name, " opcode ", hex(opcode, 3),
                   opcode == 0 ? " (opcode 0 is reserved: zero-filled memory?)" : "");
  }
  Command c;
  c.op = d->op;
  c.param = param;
  c.word = pos;
  if (kind == CommandKind::kCmd1) {
    if (pos + 1 >= num_words) {
      return str_cat("truncated ", d->name, ": the stream ends before its payload word");
    }
    c.payload = words[pos + 1];
  }
  std::string err = check_param(c.op, param);
  if (!err.empty()) return err;
  if (c.op == Opcode::NPU_SET_REGISTER) {
    err = check_register_write(param, c.payload);
    if (!err.empty()) return "NPU_SET_REGISTER: " + err;
  }
  *out = c;
  return "";
}

namespace {

// Walks a stream as the device would, calling on_command for each decoded
// command and on_error(word, reason) for each problem. Returns false when it
// had to stop (an undecodable word); state errors do not stop it.
template <typename OnCommand, typename OnError>
bool walk_stream(const uint32_t* words, size_t n, OnCommand on_command, OnError on_error) {
  // NACC_CTRL as the stream has programmed it, from its reset value (CMD.START).
  uint32_t ctrl = reset_value(Reg::NACC_CTRL);
  size_t pos = 0;
  bool stopped = false;
  if (n == 0) {
    on_error(0, std::string("empty stream: a stream ends with NPU_OP_STOP"));
    return false;
  }
  while (pos < n) {
    Command c;
    std::string err = decode_command(words, n, pos, &c);
    if (!err.empty()) {
      on_error(pos, err);
      return false;
    }
    on_command(c);
    if (c.op == Opcode::NPU_SET_REGISTER) {
      if (register_index_at(c.param) == int(Reg::NACC_CTRL)) {
        ctrl = host_write_bits(Reg::NACC_CTRL, ctrl, c.payload);
      }
    } else {
      err = check_kernel_mode(c.op, ctrl & masks_of(Reg::NACC_CTRL).readable);
      if (!err.empty()) on_error(pos, err);
    }
    pos += size_t(command_words(c.op));
    if (c.op == Opcode::NPU_OP_STOP) {
      stopped = true;
      break;
    }
  }
  if (!stopped) {
    on_error(n, std::string("stream ends without NPU_OP_STOP"));
    return false;
  }
  if (pos < n) {
    on_error(pos, str_cat(n - pos,
                          " word(s) after NPU_OP_STOP: NPU_OP_STOP must be the last command"));
    return false;
  }
  return true;
}

}  // namespace

std::vector<Command> decode_stream(const uint32_t* words, size_t n) {
  std::vector<Command> out;
  walk_stream(
      words, n, [&](const Command& c) { out.push_back(c); },
      [&](size_t word, const std::string& err) {
        throw InvalidArgument(stream_position(word) + err);
      });
  return out;
}

std::vector<uint32_t> encode_commands(const std::vector<Command>& commands) {
  std::vector<uint32_t> out;
  for (const Command& c : commands) {
    if (describe(c.op).kind == CommandKind::kCmd1) {
      out.push_back(encode_cmd1(c.op, c.param));
      out.push_back(c.payload);
    } else {
      out.push_back(encode_cmd0(c.op, c.param));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Formatting.

std::string format_register_value(Reg r, uint32_t value) {
  const RegisterDesc& d = describe(r);
  std::string out = str_cat(d.name, " = ", hex(value, 8));
  if (d.flags & kRegionAddress) {
    return out + str_cat(" (region ", region_of(value), " + ", hex(region_offset(value), 8), ")");
  }
  // Every field, except numeric fields that are 0 and reset to 0 (a line per
  // NACC_CTRL write would otherwise list ten zero flags); all fields if that
  // leaves none.
  std::string fields;
  for (int pass = 0; pass < 2 && fields.empty(); ++pass) {
    for (int i = 0; i < d.num_fields; ++i) {
      const FieldDesc& fd = d.fields[i];
      const FieldRef f = field_of(r, fd.name);
      if (pass == 0 && fd.num_values == 0 && fd.reset == 0 && f.extract(value) == 0) continue;
      fields += str_cat(fields.empty() ? "" : " ", fd.name, "=", field_value_text(f, value));
    }
  }
  const uint32_t reserved = value & ~kRegisterMasks[int(r)].defined;
  if (reserved) fields += str_cat(" reserved=", hex(reserved, 8));
  return out + " (" + fields + ")";
}

std::string format_command(const Command& c) {
  const OpcodeDesc& d = describe(c.op);
  if (c.op == Opcode::NPU_SET_REGISTER) {
    const int i = register_index_at(c.param);
    if (i < 0) return str_cat(d.name, " ", hex(c.param, 4), " = ", hex(c.payload, 8));
    return str_cat(d.name, " ", format_register_value(Reg(i), c.payload));
  }
  if (d.param == ParamUse::kCount) return str_cat(d.name, " ", c.param);
  if (c.param != 0) return str_cat(d.name, " param=", hex(c.param, 4));
  return d.name;
}

namespace {

std::string listing_prefix(const uint32_t* words, size_t n, size_t pos, int count) {
  char buf[64];
  if (count == 2 && pos + 1 < n) {
    std::snprintf(buf, sizeof buf, "0x%04zX: %08" PRIX32 " %08" PRIX32 "  ", pos * 4, words[pos],
                  words[pos + 1]);
  } else if (pos < n) {
    std::snprintf(buf, sizeof buf, "0x%04zX: %08" PRIX32 "           ", pos * 4, words[pos]);
  } else {
    std::snprintf(buf, sizeof buf, "0x%04zX:                     ", pos * 4);
  }
  return buf;
}

}  // namespace

std::string disassemble(const uint32_t* words, size_t n, bool best_effort) {
  if (!best_effort) decode_stream(words, n);  // throws on the first problem
  std::string out;
  walk_stream(
      words, n,
      [&](const Command& c) {
        out += listing_prefix(words, n, c.word, command_words(c.op)) + format_command(c) + "\n";
      },
      [&](size_t word, const std::string& err) {
        out += listing_prefix(words, n, word, 1) + "error: " + err + "\n";
      });
  return out;
}

}  // namespace nacc

#include "arch/fields.h"
// The project's NACC command-stream format (NACC_SPEC §6, docs/command_stream.md):
// cmd0/cmd1 word encodings, the opcode table, region addresses, the checks
// that the compiler's emitter (compiler/emitter.h), the decoder and the device
// share, a validating decoder and a disassembler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "arch/limits.h"
#include "arch/registers.h"

namespace nacc {

// ---------------------------------------------------------------------------
// Word encodings (NACC_SPEC §6, [C]).
//   cmd0, one 32-bit word:  [31:16] parameter | [15:10] flags 000000 | [9:0] opcode
//   cmd1, two words:        word 0 as cmd0 with flags 010000, word 1 = 32-bit payload

enum class CommandKind : uint8_t { kCmd0, kCmd1 };

inline constexpr uint32_t kOpcodeMask = 0x3FFu;  // bits 9..0
inline constexpr int kFlagsShift = 10;            // bits 15..10
inline constexpr uint32_t kFlagsMask = 0x3Fu;
inline constexpr uint32_t kCmd0Flags = 0x00u;     // 0b000000
inline constexpr uint32_t kCmd1Flags = 0x10u;     // 0b010000
inline constexpr int kParamShift = 16;            // bits 31..16

// Opcodes (bits 9..0). The values are the project's own (NACC_SPEC §6);
// opcode 0 is reserved so that zero-filled memory never decodes as a command.
enum class Opcode : uint16_t {
  NPU_OP_STOP = 0x001,
  NPU_OP_DMA_START = 0x002,
  NPU_OP_DMA_WAIT = 0x003,
  NPU_OP_KERNEL_WAIT = 0x004,
  NPU_OP_CONV = 0x010,
  NPU_OP_DEPTHWISE = 0x011,
  NPU_OP_POOL = 0x012,
  NPU_OP_ELEMENTWISE = 0x013,
  NPU_OP_MATMUL = 0x014,
  NPU_OP_FULLY_CONNECTED = 0x015,
  NPU_OP_ACTIVATION = 0x016,
  NPU_OP_VNCHWCONV = 0x017,
  NPU_SET_REGISTER = 0x100,
};

// What a command's parameter means.
enum class ParamUse : uint8_t {
  kReserved,       // must be 0
  kCount,          // WAIT: outstanding operations allowed after the wait
  kRegisterOffset  // NPU_SET_REGISTER: byte offset of the register, 0x0000-0x2FFF
};

struct OpcodeDesc {
  Opcode op;
  const char* name;
  CommandKind kind;
  ParamUse param;
  bool is_kernel;        // starts a compute kernel selected by NACC_CTRL
  const char* parameter;  // docs: the parameter
  const char* payload;    // docs: the payload (cmd1)
  const char* semantics;  // docs: what it does
};

inline constexpr OpcodeDesc kOpcodes[] = {
    {Opcode::NPU_OP_STOP, "NPU_OP_STOP", CommandKind::kCmd0, ParamUse::kReserved, false, "0", "",
     "End of the stream: waits for every outstanding DMA copy and kernel, raises "
     "NACC_INT_STATUS.FULL_TRANS_DONE_INTR and stops. Exactly one, the last command."},
    {Opcode::NPU_OP_DMA_START, "NPU_OP_DMA_START", CommandKind::kCmd0, ParamUse::kReserved, false,
     "0", "",
     "Memory-to-memory copy of DMA_LEN bytes from DMA_SRC to DMA_DST (region addresses). "
     "Issued to the DMA queue; the stream continues."},
    {Opcode::NPU_OP_DMA_WAIT, "NPU_OP_DMA_WAIT", CommandKind::kCmd0, ParamUse::kCount, false, "n",
     "", "Waits until at most n DMA-queue operations (NPU_OP_DMA_START, NPU_OP_VNCHWCONV) are "
         "outstanding; 0 waits for all."},
    {Opcode::NPU_OP_KERNEL_WAIT, "NPU_OP_KERNEL_WAIT", CommandKind::kCmd0, ParamUse::kCount, false,
     "n", "", "Waits until at most n kernel operations are outstanding; 0 waits for all."},
    {Opcode::NPU_OP_CONV, "NPU_OP_CONV", CommandKind::kCmd0, ParamUse::kReserved, true, "0", "",
     "Convolution (or q7 RGB convolution) with the compute bank as programmed."},
    {Opcode::NPU_OP_DEPTHWISE, "NPU_OP_DEPTHWISE", CommandKind::kCmd0, ParamUse::kReserved, true,
     "0", "", "Depthwise convolution."},
    {Opcode::NPU_OP_POOL, "NPU_OP_POOL", CommandKind::kCmd0, ParamUse::kReserved, true, "0", "",
     "Max or average pooling."},
    {Opcode::NPU_OP_ELEMENTWISE, "NPU_OP_ELEMENTWISE", CommandKind::kCmd0, ParamUse::kReserved,
     true, "0", "", "Element-wise add, sub, mul or mul_s16_s8 (NACC_ELEMENTWISE)."},
    {Opcode::NPU_OP_MATMUL, "NPU_OP_MATMUL", CommandKind::kCmd0, ParamUse::kReserved, true, "0",
     "", "Matrix multiply, optionally fed by im2col (IM2COL_EN)."},
    {Opcode::NPU_OP_FULLY_CONNECTED, "NPU_OP_FULLY_CONNECTED", CommandKind::kCmd0,
     ParamUse::kReserved, true, "0", "", "Fully connected layer."},
    {Opcode::NPU_OP_ACTIVATION, "NPU_OP_ACTIVATION", CommandKind::kCmd0, ParamUse::kReserved, true,
     "0", "", "Activation unit alone (LUT, Tanh, Sigmoid, ReLU, clamp) on a feature map."},
    {Opcode::NPU_OP_VNCHWCONV, "NPU_OP_VNCHWCONV", CommandKind::kCmd0, ParamUse::kReserved, false,
     "0", "",
     "scatter_vnchwconv layout conversion (NACC_SPEC §7) with the VNCHWCONV_* registers, on "
     "device memory. Issued to the DMA queue."},
    {Opcode::NPU_SET_REGISTER, "NPU_SET_REGISTER", CommandKind::kCmd1,
     ParamUse::kRegisterOffset, false, "register byte offset", "value",
     "Writes the register, with the host's write semantics (W1C bits clear where 1). Only "
     "stream-writable registers; NACC_CTRL.START must be 0."},
};

// Descriptor of an opcode value of the given kind, or nullptr.
const OpcodeDesc* find_opcode(uint32_t opcode_bits, CommandKind kind);
const OpcodeDesc& describe(Opcode op);
const char* opcode_name(Opcode op);
// InvalidArgument listing the opcodes when `name` is none of them.
Opcode opcode_by_name(std::string_view name);
inline int command_words(Opcode op) { return describe(op).kind == CommandKind::kCmd1 ? 2 : 1; }

constexpr uint32_t encode_cmd0(Opcode op, uint16_t param) {
  return (uint32_t(param) << kParamShift) | (kCmd0Flags << kFlagsShift) | uint32_t(op);
}
// First word of a cmd1; the payload word follows.
constexpr uint32_t encode_cmd1(Opcode op, uint16_t param) {
  return (uint32_t(param) << kParamShift) | (kCmd1Flags << kFlagsShift) |
         (uint32_t(op) & kOpcodeMask);
}

// ---------------------------------------------------------------------------
// Region addresses: every kRegionAddress register (the *_DMA_ADDR registers,
// DMA_SRC/DST, VNCHWCONV_SRC/DST) holds region in bits 31..29 and a byte
// offset into that region in bits 28..0 (NACC_SPEC §6: "the project's own
// encoding"). The device adds the region base of the running batch handler.
inline constexpr int kRegionShift = limits::kRegionOffsetBits;  // 29 (arch/limits.h)
inline constexpr uint32_t kRegionOffsetMask = (1u << kRegionShift) - 1u;  // 512 MB per region

constexpr int region_of(uint32_t address) { return int(address >> kRegionShift); }
constexpr uint32_t region_offset(uint32_t address) { return address & kRegionOffsetMask; }
// InvalidArgument when region is outside [0, 7] or offset outside [0, 2^29 - 1].
uint32_t region_address(int region, int64_t offset);

// ---------------------------------------------------------------------------
// Checks shared by the emitter, the decoder and the device. Each returns ""
// when the command is allowed, else the reason (without position).

// NPU_SET_REGISTER at byte offset `offset` with `value`: a stream-writable
// register, no reserved or read-only bits set, NACC_CTRL.START = 0.
std::string check_register_write(uint32_t offset, uint32_t value);
// The parameter of a cmd0: reserved parameters must be 0.
std::string check_param(Opcode op, uint16_t param);
// A kernel opcode against the NACC_CTRL value it would run with (one row of
// the kernel-mode table, docs/command_stream.md); "" for non-kernel opcodes.
std::string check_kernel_mode(Opcode op, uint32_t nacc_ctrl);
// The NACC_CTRL requirement of a kernel opcode as text, e.g. "CONV_MODE in
// {CONVOLUTION, RGB_CONV}, POOL_MODE = NONE, ELEMENT_EN = 0, IM2COL_EN = 0".
std::string kernel_mode_rule(Opcode op);

// ---------------------------------------------------------------------------
// Commands, decoding and disassembly.

struct Command {
  Opcode op = Opcode::NPU_OP_STOP;
  uint16_t param = 0;
  uint32_t payload = 0;  // cmd1 only
  size_t word = 0;       // decoder output: index of the command's first word
};

// Decodes the command at words[pos] (encoding checks only: flags, opcode,
// length, parameter, register write). Returns "" and fills *out, or the reason.
std::string decode_command(const uint32_t* words, size_t num_words, size_t pos, Command* out);

// Decodes and validates a whole stream: every command decodes, every kernel
// opcode agrees with NACC_CTRL as the stream has programmed it (from reset
// values), and the stream ends with its only NPU_OP_STOP. Throws
// InvalidArgument "command stream word 5 (byte 0x0014): <reason>".
std::vector<Command> decode_stream(const uint32_t* words, size_t num_words);
inline std::vector<Command> decode_stream(const std::vector<uint32_t>& words) {
  return decode_stream(words.data(), words.size());
}
// "command stream word 5 (byte 0x0014): " + reason.
std::string stream_position(size_t word);

// Words of `commands` (no validation beyond the opcode kind).
std::vector<uint32_t> encode_commands(const std::vector<Command>& commands);

// "NACC_KERNEL = 0x11110833 (K_SIZE_X=3 K_SIZE_Y=3 ...)": a register value
// with its decoded fields: enumerated fields by name, signed fields signed,
// numeric fields omitted when 0 with reset value 0 (all shown if that leaves
// none), region addresses as "(region r + 0x...)".
std::string format_register_value(Reg r, uint32_t value);
// One command without position, e.g. "NPU_OP_DMA_WAIT 0".
std::string format_command(const Command& c);
// A listing, one line per command: byte offset, raw words, command:
//   0x0000: 00044100 11110833  NPU_SET_REGISTER NACC_KERNEL = 0x11110833 (K_SIZE_X=3 ...)
//   0x0008: 00000010           NPU_OP_CONV
// Validates as decode_stream (throws) unless best_effort, which prints what
// decodes and an "error:" line where it stops or where a check fails.
std::string disassemble(const uint32_t* words, size_t num_words, bool best_effort = false);

}  // namespace nacc

// Internals of the kernel commands of the simulated NACC (docs/device_model.md
// §1-§6), shared by the register decode (kernel_decode.cc), the per-core plan
// (kernel_plan.cc), the unit dispatch (kernel_units.cc), the interpreter's
// executor (exec_kernel.cc) and the execution plan (plan.cc).
#pragma once

#include <array>
#include <cstdint>
#include <exception>
#include <ostream>
#include <string>
#include <vector>

#include "arch/command_stream.h"
#include "arch/cost_model.h"
#include "arch/fields.h"
#include "arch/unit_params.h"
#include "device/device_internal.h"
#include "device/units/prepared.h"

namespace nacc::device_detail {

enum class Family { kConv, kDepthwise, kFullyConnected, kMatmul, kPool, kElementwise, kActivation };

Family family_of(Opcode op);

inline bool is_window(Family f) {
  return f == Family::kConv || f == Family::kDepthwise || f == Family::kPool;
}
inline bool has_weights(Family f) {
  return f == Family::kConv || f == Family::kDepthwise || f == Family::kFullyConnected;
}

using cost::ceil_div;
inline int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

template <typename... A>
void require(bool ok, const A&... parts) {
  if (!ok) throw DeviceFault(str_cat(parts...));
}

// Message parts that cost nothing unless a check fails: each prints itself
// when a message is built (str_cat), so the success path formats nothing.
struct FieldPath {
  FieldRef f;
};
inline std::ostream& operator<<(std::ostream& o, FieldPath p) {
  return o << describe(p.f.reg).name << "." << p.f.desc().name;
}
inline FieldPath path(FieldRef f) { return FieldPath{f}; }

// Everything one kernel command reads from the compute bank, validated.
struct Setup {
  Opcode op = Opcode::NPU_OP_CONV;
  Family fam = Family::kConv;
  ActMode act = ActMode::NONE;
  bool quant_en = false, bias_en = false, fm_upd = false, k_upd = false;
  uint32_t pool_mode = 0;
  int kx = 1, ky = 1, sx = 1, sy = 1, pad_l = 0, pad_t = 0, pad_r = 0, pad_b = 0;
  int in_w = 0, in_h = 0, in_c = 0, out_w = 0, out_h = 0, out_c = 0;
  int32_t in_zp = 0, out_zp = 0, act_min = 0, act_max = 0;
  uint32_t a_in = 0, a_out = 0, a_k = 0, a_bias = 0, a_mul = 0, a_shift = 0, a_act = 0;
  uint64_t in_pix = 0, in_row = 0, out_pix = 0, out_row = 0, k_pitch = 0;
  int64_t k_block = 0;  // K_TRANS_LEN * 16 bytes per weight block
  int depth_mult = 1;
  // Output tile of the command and the width of its input tile.
  int y0 = 0, h = 0, x0 = 0, w = 0, ix0 = 0, iw = 0;
  int iy0 = 0, ih = 0;
  // Multi-core.
  uint32_t mode = value_of(BroadcastMode::NONE);
  int ncores = 1;
  int avg_h = 0, ov_h = 0, avg_in_step = 0, ov_in_rows = 0, oc_per_core = 0;
  // Mode 3 (SPLIT_2D, docs/device_model.md §5): `groups` channel groups x
  // `row_pieces` row pieces; core i = g * row_pieces + r. ncores is then
  // groups * row_pieces (the cores that work), at most BROADCAST_NUM + 1.
  int groups = 1, row_pieces = 1;
  // The core's row piece and channel group (mode 3); its index otherwise.
  int row_index(int i) const { return mode == value_of(BroadcastMode::SPLIT_2D) ? i % row_pieces : i; }
  int group_index(int i) const { return mode == value_of(BroadcastMode::SPLIT_2D) ? i / row_pieces : i; }
  // SRAM areas.
  SramRange ifm_area, k_area, ofm_area, temp_area;
  bool needs_bias = false, needs_quant = false, needs_lut = false;
  bool real_scale = false;  // NACC_ACT_PARA.QUANT_REAL_SCALE: float64 scales, no shifts
  bool fp32_scale = false;  // NACC_ACT_PARA.QUANT_FP32_SCALE: float32 scales, no shifts (MAC units)
  // NACC_ACT_PARA.QUANT_MUL32 (project extension): a 16-bit depthwise pass with
  // the 32-bit fixed-point stage (OutputStageKind::kFixedPoint on an int32 accumulator).
  bool mul32 = false;
  // NACC_ACT_PARA.MAC_FP32 (project extension, docs/device_model.md §4):
  // ONNX Runtime's unfused float32 convolution on NPU_OP_CONV, its K blocks
  // from NACC_FP32_KBLOCK (2^kblock_log2 products for the output pixels n <
  // kblock_split, 2^kblock_tail_log2 from there; n row-major over the whole
  // OUT_FM); QUANT_MUL_DMA_ADDR holds 4 float32 per output channel.
  bool mac_fp32 = false;
  // NACC_ACT_PARA.MAC_FP32_ORDER (arch/unit_params.h Fp32SumOrder): FMA blocks
  // (NPU_OP_CONV, NPU_OP_DW_CONV), GROUPS4 (NPU_OP_DW_CONV, NPU_OP_FULLY_CONNECTED)
  // or LANES8 (NPU_OP_FULLY_CONNECTED: kblock_split / kblock_tail_log2 are
  // its tail's first output channel and length).
  Fp32SumOrder mac_fp32_order = Fp32SumOrder::kFmaBlocks;
  int kblock_log2 = 0, kblock_tail_log2 = 0;
  int64_t kblock_split = 0;
  // NACC_ACT_PARA.ELEMENT_FP32 / POOL_FP32 / U8_DOMAIN (project extensions,
  // docs/device_model.md §4): ONNX Runtime's float32 element-wise and average
  // pool; their float32 parameters are loaded as fp32_scale's are.
  ElementwiseFloat ew_fp32 = ElementwiseFloat::kOff;
  bool pool_fp32 = false, u8_domain = false;
  PoolFloat pool_fp32_mode = PoolFloat::kQLinear;  // NACC_ACT_PARA.POOL_FP32_MODE
  // NPU_OP_MATMUL with NACC_CTRL.IM2COL_EN = 1: A is gathered by the DMA from
  // the feature map as im2col rows (docs/device_model.md §4); K = ky * kx * in_c.
  bool im2col = false;
  // NACC_CTRL.DATA_FORM = INT4 (NACC_SPEC §9): the K area holds the weights
  // two per byte (element 2i in the low nibble, sign-extended by the unit);
  // the weight block's stream decodes to ceil(weights / 2) bytes.
  bool int4 = false;
  // NACC_CTRL.DATA_FORM = INT16 (NACC_SPEC §9), NPU_OP_CONV only: int16
  // feature maps with zero point 0 (elem = 2 bytes per element in SRAM and
  // on the bus; pitches stay in bytes), int8 weights, int64 bias entries,
  // the 16x8 output stage (OutputStageKind::kFixedPoint16x8).
  bool i16 = false;
  int elem = 1;  // feature-map bytes per element (the IFM and the element-wise operand)
  // ELEMENTWISE_MODE = MUL_S16_S8 (DATA_FORM = INT16): int16 inputs, an int8
  // output, so out_elem = 1 while elem = 2.
  bool mul_s16_s8 = false;
  int out_elem = 1;  // OFM bytes per element (in SRAM and on the output DMA)
  // The q7 modes (docs/device_model.md §4): NACC_CTRL.CONV_MODE = RGB_CONV,
  // CMSIS-NN's arm_convolve_HWC_q7_RGB with NACC_FULL_CONV_PARA.BIAS_SHIFT /
  // OUT_SHIFT; ACT_MODE TANH / SIGMOID on NPU_OP_ACTIVATION, CMSIS-NN's
  // arm_nn_activations_direct_q7 with NACC_ACT_PARA.ACT_INT_W.
  bool rgb = false;
  int bias_shift = 0, out_shift = 0;
  bool q7_act = false;
  bool table16 = false;  // DATA_FORM INT16 with ACT_MODE TANH / SIGMOID: the 16-bit table modes
  int act_int_w = 0;
  int64_t mat_k = 0;  // K of a matmul (IN_FM_CH, or ky * kx * IN_FM_CH with im2col)
  int quant_entries = 0;  // per core, 0 = per output channel
  // Element-wise / matmul extras.
  ElementwiseParams ew;
  int32_t b_zp = 0;
};

// Bytes of one entry of the scale array at QUANT_MUL_DMA_ADDR (TileWork::
// scale_lo): float64 (QUANT_REAL_SCALE), 4 float32 (MAC_FP32) or one float32.
inline int64_t scale_entry_bytes(const Setup& s) {
  return s.real_scale ? 8 : s.mac_fp32 ? 4 * limits::kMacFp32EntryFloats : 4;
}

// Decodes and validates the compute bank for kernel opcode `op` (every check
// of docs/device_model.md §7 that does not depend on a core); DeviceFault
// naming the register otherwise.
Setup read_setup(const RegisterFile& r, Opcode op, const HwConfig& hw);

// One external read into SRAM: rows x cols pixels of `bytes` each, packed in SRAM.
struct Read {
  uint64_t addr = 0;  // device address of the first byte
  int rows = 1, cols = 1;
  int64_t bytes = 0;
  uint64_t row_pitch = 0, pix_pitch = 0;
  int64_t sram = 0;               // SRAM destination
  const uint8_t* host = nullptr;  // host pointer of addr (after the bounds check)
  int64_t total() const { return int64_t(rows) * cols * bytes; }
  uint64_t span() const {
    return uint64_t(rows - 1) * row_pitch + uint64_t(cols - 1) * pix_pitch + uint64_t(bytes);
  }
  Interval interval() const { return Interval{addr, addr + span()}; }
};

// One core's tile of a kernel command as its unit and the execution plan's
// replay see it: geometry, SRAM layout and work. No host pointers, no
// allocations (the plan keeps one per tile).
struct TileWork {
  int core = 0;
  int y0 = 0, h = 0, oc0 = 0, noc = 0;
  int iy0 = 0, ih = 0;
  int vy0 = 0, vh = 0, vx0 = 0, vw = 0;            // valid part of the input tile
  int pad_t = 0, pad_b = 0, pad_l = 0, pad_r = 0;  // the tile's padding as the unit sees it
  SramRange ifm, kern, ofm, temp;
  int64_t w_lo = 0, bias_lo = -1, mul_lo = -1, shift_lo = -1, lut_lo = -1, scale_lo = -1;
  int64_t weight_count = 0, quant_count = 0;
  // Bytes of the weights in the K area: weight_count, or ceil(weight_count / 2) with int4.
  int64_t weight_bytes() const { return int4 ? (weight_count + 1) / 2 : weight_count; }
  bool int4 = false;  // the command's Setup::int4
  bool load_fm = false, load_k = false, load_temp = false;
  int64_t gathered = 0;  // im2col: IFM bytes the DMA gathers (padding positions excluded)
  int64_t mac_cycles = 0, act_cycles = 0, macs = 0;
};

// The K area's small parts of one core (bias, multipliers, shifts or scales,
// LUT), held in place: no allocation per core and command.
class SmallReads {
 public:
  static constexpr size_t kCapacity = 6;  // every part plan_core knows
  void push_back(const Read& r) {
    if (n_ == kCapacity) throw Error("SmallReads: more than 6 K-area parts");
    r_[n_++] = r;
  }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  Read& operator[](size_t i) { return r_[i]; }
  const Read& operator[](size_t i) const { return r_[i]; }
  Read* begin() { return r_.data(); }
  Read* end() { return r_.data() + n_; }
  const Read* begin() const { return r_.data(); }
  const Read* end() const { return r_.data() + n_; }

 private:
  std::array<Read, kCapacity> r_{};
  size_t n_ = 0;
};

// One core's part of a kernel command in the interpreter: its tile plus the
// bounds-checked external accesses, residency keys and DMA counts.
struct CoreWork : TileWork {
  Read fm_read, temp_read, b_read;  // IFM tile, element-wise operand, matmul B
  Read wblock;                      // weight block (u32 length + stream + padding)
  SmallReads small_reads;           // bias, multipliers, shifts, LUT
  uint64_t ofm_addr = 0, ofm_span = 0;
  uint8_t* ofm_host = nullptr;
  ResidencyKey fm_key{}, k_key{};
  int64_t rd_unicast = 0, rd_broadcast = 0, wr_bytes = 0;
  std::exception_ptr error;
};

// Core i's tile, SRAM layout, external accesses (bounds-checked) and whether
// its IFM and K areas must be loaded or are resident; counts its work.
CoreWork plan_core(const ExecEnv& env, const Setup& s, int i);
// Every core's plan_core, in `work`. With `derive` (building an execution
// plan) the middle cores of a height or kernel split, and of a mode 3 split's
// channel groups and row pieces, may be derived from two
// planned ones where that is proven the same (kernel_plan.cc); a command that
// faults is planned core by core, so the fault is the first core's, as in a
// stepped run.
void plan_cores(const ExecEnv& env, const Setup& s, std::vector<CoreWork>& work, bool derive);

// " (core i)" when the command uses several cores.
struct CoreText {
  int ncores, core;
};
inline std::ostream& operator<<(std::ostream& o, CoreText t) {
  if (t.ncores > 1) o << " (core " << t.core << ")";
  return o;
}
inline CoreText core_text(const Setup& s, int i) { return CoreText{s.ncores, i}; }

// The DMA data movements of the interpreter.
void copy_in(const Read& r, uint8_t* sram);
void gather_im2col(const Setup& s, const CoreWork& c, uint8_t* sram);
// Decodes core c's weight block into `dst` (c.weight_bytes() bytes).
void load_weights(const Setup& s, const CoreWork& c, int8_t* dst);
// int4 weights two per byte -> n int8 values (element 2i from the low nibble,
// sign-extended; NACC_SPEC §9).
void unpack_int4(const int8_t* packed, int64_t n, int8_t* out);
void copy_out(const Setup& s, const CoreWork& c, const uint8_t* sram);

// Where one core's unit finds its operands and puts its result: the
// command's SRAM areas in the reference interpreter, pre-decoded kernel data
// and host memory in the execution plan (device/plan.h). Layouts as the SRAM
// areas (docs/device_model.md §1): in [vh, vw, in_c] (with im2col [h * w, K]),
// out [h, w, noc], temp the element-wise operand ([vh, vw, in_c] or one pixel).
struct TileBuffers {
  const int8_t* in = nullptr;
  int8_t* out = nullptr;
  const int8_t* weights = nullptr;
  const int32_t* bias = nullptr;
  const int32_t* mul = nullptr;
  const int32_t* shift = nullptr;
  const void* scale = nullptr;  // float64 (QUANT_REAL_SCALE) or float32 (QUANT_FP32_SCALE)
  const int8_t* lut = nullptr;
  const int8_t* temp = nullptr;
  // The weights prepared for the unit's fast path (device/units/prepared.h), or null.
  const PreparedWeights* prepared = nullptr;
};

// Runs the command's unit for core c on `b` (docs/device_model.md §4);
// nacc::Error from a unit's own checks.
void run_unit(const Setup& s, const TileWork& c, const TileBuffers& b);

// The buffers of core c in its SRAM.
TileBuffers sram_buffers(const TileWork& c, uint8_t* sram);

}  // namespace nacc::device_detail

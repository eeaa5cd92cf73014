// The compiler driver: re-checks every op with the capability rules, lowers
// it, plans memory, tiles each op and emits its commands through the
// register-shadow Emitter, then fills the Program's records (docs/compiler.md).
#include "compiler/compiler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "arch/command_stream.h"
#include "arch/cost_model.h"
#include "arch/field_values.h"
#include "arch/fields.h"
#include "arch/limits.h"
#include "arch/sram.h"
#include "common/error.h"
#include "compiler/emitter.h"
#include "compiler/memory.h"
#include "compiler/weight_codec.h"
#include "support/pad_fold.h"
#include "support/rules.h"

namespace nacc {

using compiler::CoreSplit;
using compiler::LoweredOp;
using compiler::Span;
using compiler::Storage;
using compiler::TilePlan;
using compiler::Unit;

namespace {

// A register value assembled field by field (InvalidArgument if a value does not fit).
class Value {
 public:
  Value& set(FieldRef f, int64_t v) {
    v_ = with_field(v_, f, v);
    return *this;
  }
  uint32_t get() const { return v_; }

 private:
  uint32_t v_ = 0;
};

using cost::ceil_div;

int64_t tensor_bytes(const ir::Tensor& t) { return t.elements() * ir::dtype_size(t.dtype); }

// ---- hazards between ops -----------------------------------------------------

struct Interval {
  int region;
  int64_t begin, end;
  bool overlaps(const Interval& o) const {
    return region == o.region && begin < o.end && o.begin < end;
  }
};

bool any_overlap(const std::vector<Interval>& a, const Interval& b) {
  for (const Interval& x : a) {
    if (x.overlaps(b)) return true;
  }
  return false;
}

// ---- the compilation context -------------------------------------------------

struct Context {
  const ir::Graph& graph;
  const CompileOptions& options;
  SramGeometry geo;
  compiler::MemoryPlan mem;
  compiler::ConstantPool pool;
  Emitter em;
  // Memory kernels issued since the last NPU_OP_KERNEL_WAIT read and wrote.
  std::vector<Interval> reads_since_wait, writes_since_wait;
  bool wait_pending = false;  // a KERNEL_WAIT 0 is due before the next kernel

  Context(const ir::Graph& g, const CompileOptions& o)
      : graph(g), options(o), geo(sram_geometry(o.hw.sram_bytes)) {}

  Interval interval_of(int tensor) const {
    const Storage& s = mem.storage.at(tensor);
    return {s.region, s.offset, s.offset + s.size};
  }
  uint32_t address(int tensor, int64_t byte_offset) const {
    const Storage& s = mem.storage.at(tensor);
    check_arg(s.valid(), "tensor '", graph.tensor(tensor).name, "' has no storage");
    return region_address(s.region, s.offset + byte_offset);
  }

  // NPU_OP_KERNEL_WAIT 0 before work that reads what earlier kernels may still
  // be writing, or writes what they may still be reading or writing. The wait
  // is only marked here and emitted by kernel_op just before the next kernel
  // opcode: the register writes that program that kernel take effect at once
  // and are latched only when it issues (docs/command_stream.md §3.2), so the
  // command processor runs them while the earlier kernels finish.
  void wait_if_needed(const std::vector<Interval>& reads, const std::vector<Interval>& writes) {
    bool hazard = false;
    for (const Interval& r : reads) hazard = hazard || any_overlap(writes_since_wait, r);
    for (const Interval& w : writes) {
      hazard = hazard || any_overlap(writes_since_wait, w) || any_overlap(reads_since_wait, w);
    }
    if (hazard) {
      wait_pending = true;
      reads_since_wait.clear();
      writes_since_wait.clear();
    }
    reads_since_wait.insert(reads_since_wait.end(), reads.begin(), reads.end());
    writes_since_wait.insert(writes_since_wait.end(), writes.begin(), writes.end());
  }

  // A kernel opcode, after the wait wait_if_needed marked (if any).
  void kernel_op(Opcode opcode) {
    if (wait_pending) em.op(Opcode::NPU_OP_KERNEL_WAIT, 0);
    wait_pending = false;
    em.op(opcode, 0);
  }

  // A DMA copy of `bytes` bytes (after every kernel, then waited for; the
  // DMA registers are written before the kernel wait, as in kernel_op).
  void copy(const Storage& src, const Storage& dst, int64_t bytes) {
    em.set_register(Reg::DMA_SRC, region_address(src.region, src.offset));
    em.set_register(Reg::DMA_DST, region_address(dst.region, dst.offset));
    em.set_register(Reg::DMA_LEN, uint32_t(bytes));
    em.op(Opcode::NPU_OP_KERNEL_WAIT, 0);
    wait_pending = false;
    reads_since_wait.clear();
    writes_since_wait.clear();
    em.op(Opcode::NPU_OP_DMA_START, 0);
    em.op(Opcode::NPU_OP_DMA_WAIT, 0);
  }
};

// ---- per-op constants --------------------------------------------------------

// Weights of basis channels [c0, c0 + n) in the unit's layout.
std::vector<int8_t> weight_slice(const LoweredOp& op, int c0, int n) {
  switch (op.unit) {
    case Unit::kConv:
    case Unit::kFullyConnected: {
      const int64_t per = op.weight_elements(1);
      return std::vector<int8_t>(op.weights.begin() + c0 * per, op.weights.begin() + (c0 + n) * per);
    }
    case Unit::kDepthwise: {
      const int m = op.depth_multiplier, cout = op.out_shape.c;
      std::vector<int8_t> out;
      out.reserve(size_t(n) * m * op.kernel_h * op.kernel_w);
      for (int t = 0; t < op.kernel_h * op.kernel_w; ++t) {
        const auto first = op.weights.begin() + int64_t(t) * cout + int64_t(c0) * m;
        out.insert(out.end(), first, first + int64_t(n) * m);
      }
      return out;
    }
    default:
      return {};
  }
}

// int4 weights two per byte (NACC_SPEC §9): element 2i in the low nibble,
// 2i + 1 in the high nibble; an odd count leaves the last high nibble 0.
std::vector<int8_t> pack_int4(const std::vector<int8_t>& w) {
  std::vector<int8_t> out((w.size() + 1) / 2, 0);
  for (size_t i = 0; i < w.size(); ++i) {
    const uint8_t nib = uint8_t(w[i]) & 0xF;
    out[i / 2] = int8_t(uint8_t(out[i / 2]) | (i % 2 ? uint8_t(nib << 4) : nib));
  }
  return out;
}

struct WeightStream {
  int64_t offset = 0;    // region 0 offset of core 0's stream
  int k_trans_len = 0;   // 16-byte beats per core
};

struct OpConstants {
  int64_t bias = -1, multiplier = -1, shift = -1, real_scale = -1, lut = -1, operand2 = -1;
  int64_t fp32_scale = -1, b_matrix = -1;  // ONNX float32 scales; im2col: B [K, N]
  int64_t ones = -1;                       // LoweredOp::ones_a: A = K ones
  // (c0, group, cores, channels per core) -> stream
  std::map<std::tuple<int, int, int, int>, WeightStream> streams;
  int64_t weight_raw = 0, weight_stored = 0;
};

void add_op_constants(Context& ctx, const LoweredOp& op, OpConstants& k) {
  if (!op.bias.empty()) k.bias = ctx.pool.add_int32(op.bias);
  if (!op.bias64.empty()) {  // 16x8: 8-byte little-endian bias entries
    std::vector<uint8_t> b(op.bias64.size() * 8);
    for (size_t i = 0; i < op.bias64.size(); ++i) {
      for (int j = 0; j < 8; ++j) b[8 * i + size_t(j)] = uint8_t(uint64_t(op.bias64[i]) >> (8 * j));
    }
    k.bias = ctx.pool.add(b.data(), b.size());
  }
  if (!op.real_scale.empty()) {
    k.real_scale = ctx.pool.add_float64(op.real_scale);
  } else if (!op.fp32_scale.empty()) {
    std::vector<int32_t> bits(op.fp32_scale.size());
    std::memcpy(bits.data(), op.fp32_scale.data(), 4 * bits.size());
    k.fp32_scale = ctx.pool.add_int32(bits);
  } else if (!op.multiplier.empty()) {
    k.multiplier = ctx.pool.add_int32(op.multiplier);
    k.shift = ctx.pool.add_int32(op.shift);
  }
  if (op.has_lut) k.lut = ctx.pool.add(op.lut.data(), op.lut.size());
  if (op.input2_is_constant) {
    k.operand2 = ctx.pool.add(op.input2_constant.data(), op.input2_constant.size());
  }
  k.weight_raw = op.int4_weights ? int64_t(op.weights.size() + 1) / 2 : int64_t(op.weights.size());
  if (op.ones_a) {
    const std::vector<uint8_t> ones(size_t(op.matmul_k()), 1);
    k.ones = ctx.pool.add(ones.data(), ones.size());
  }
  if (op.unit == Unit::kMatmul && op.im2col) {
    // B of an im2col convolution: [K, N] uncompressed (NPU_OP_MATMUL reads B as is).
    k.b_matrix = ctx.pool.add(op.weights.data(), op.weights.size());
    k.weight_stored = int64_t(op.weights.size());
  }
}

// The weight blocks of one command: one per core in mode 1, each padded with
// zeros to the common per-core stride K_TRANS_LEN * 16 (docs/device_model.md §4, §5).
const WeightStream& weight_stream(Context& ctx, const LoweredOp& op, OpConstants& k, int c0,
                                  int group, const CoreSplit& split, bool split_kernel) {
  const int cores = split_kernel ? split.cores : 1;
  const int per_core = split_kernel ? split.avg : group;
  const auto key = std::make_tuple(c0, group, cores, per_core);
  auto it = k.streams.find(key);
  if (it != k.streams.end()) return it->second;
  // Weight block: u32 little-endian stream length, the stream, zero padding.
  std::vector<std::vector<uint8_t>> streams;
  size_t longest = 0;
  for (int i = 0; i < cores; ++i) {
    const int first = c0 + i * per_core;
    const int n = i + 1 < cores ? per_core : group - per_core * (cores - 1);
    std::vector<int8_t> w = weight_slice(op, first, n);
    if (op.int4_weights) w = pack_int4(w);
    const std::vector<uint8_t> stream = weight_codec::encode(w.data(), w.size());
    const uint32_t len = uint32_t(stream.size());
    std::vector<uint8_t> block = {uint8_t(len), uint8_t(len >> 8), uint8_t(len >> 16),
                                  uint8_t(len >> 24)};
    block.insert(block.end(), stream.begin(), stream.end());
    longest = std::max(longest, block.size());
    streams.push_back(std::move(block));
  }
  const int64_t stride = ceil_div(int64_t(longest), kBusBeatBytes) * kBusBeatBytes;
  constexpr int64_t kMaxBeats = field_max(fields::NACC_CONV_TRANS_LEN::K_TRANS_LEN);
  if (stride / kBusBeatBytes > kMaxBeats) {
    throw Unsupported(str_cat(op.label, ": a weight stream of ", stride,
                              " bytes exceeds NACC_CONV_TRANS_LEN.K_TRANS_LEN (", kMaxBeats,
                              " beats)"));
  }
  WeightStream ws;
  ws.k_trans_len = int(stride / kBusBeatBytes);
  for (int i = 0; i < cores; ++i) {
    const int64_t at = ctx.pool.add(streams[i].data(), streams[i].size(), size_t(stride));
    if (i == 0) ws.offset = at;
  }
  k.weight_stored += stride * cores;
  return k.streams.emplace(key, ws).first->second;
}

// ---- emission ------------------------------------------------------------------

struct Residency {
  // The kernel and the IFM tile each core loaded last, as the registers (and
  // SRAM base) that loaded them: the device keeps one of each per core
  // (docs/device_model.md §1), so only the last load can be reused.
  std::vector<uint32_t> k, fm;
  // How many cores (0 .. n-1) hold them. A kernel the same on every core
  // (mode 2 broadcasts it; one core) and an IFM tile the same on every core
  // (mode 1 broadcasts it; one core) are held by each core that loaded them,
  // so a later command on no more cores reuses them; the signatures then
  // leave the core count out (kernel_cores_key, fm_cores_key).
  int k_cores = 0, fm_cores = 0;
};

// The part of the kernel signature that depends on the core split: mode 1
// gives every core its own slice (the whole NACC_BROADCAST_CTRL counts); mode
// 2 and one core hold the same kernel on every core (nothing: Residency::k_cores).
uint32_t kernel_cores_key(const Emitter& em, BroadcastMode mode) {
  return mode == BroadcastMode::SPLIT_KERNEL || mode == BroadcastMode::SPLIT_2D
             ? em.shadow(Reg::NACC_BROADCAST_CTRL)
             : 0u;
}

int log2_exact(int v) {
  int l = 0;
  while ((1 << l) < v) ++l;
  return l;
}

// One command: which part of the op, on which cores, with which SRAM set.
struct CommandShape {
  Span rows, cols, group;   // output rows, columns and basis channels
  CoreSplit split;          // cores of this command
  BroadcastMode mode = BroadcastMode::NONE;
  int set = 0;              // buffer set (double buffering)
};

// The layer: window, feature-map sizes, channels, zero points, clamp, and where
// the feature maps are in external memory (docs/device_model.md §2-§4).
void set_layer(Context& ctx, const LoweredOp& op, const OpConstants& k, const CommandShape& c) {
  Emitter& em = ctx.em;
  const int in_c0 = (op.unit == Unit::kConv || op.unit == Unit::kFullyConnected ||
                     op.unit == Unit::kMatmul) ? 0 : c.group.start;
  em.set_register(Reg::NACC_KERNEL,
                  Value()
                      .set(fields::NACC_KERNEL::K_SIZE_X, op.kernel_w)
                      .set(fields::NACC_KERNEL::K_SIZE_Y, op.kernel_h)
                      .set(fields::NACC_KERNEL::K_SIZE_XY, op.kernel_w * op.kernel_h - 1)
                      .set(fields::NACC_KERNEL::K_STRIDE_X, op.stride_w)
                      .set(fields::NACC_KERNEL::K_STRIDE_Y, op.stride_h)
                      .set(fields::NACC_KERNEL::K_DILATION_X, 1)
                      .set(fields::NACC_KERNEL::K_DILATION_Y, 1)
                      .get());
  em.set_register(Reg::NACC_IN_FM, Value()
                                       .set(fields::NACC_IN_FM::IN_FM_WIDTH, op.in_shape.w)
                                       .set(fields::NACC_IN_FM::IN_FM_HEIGHT, op.in_shape.h)
                                       .get());
  em.set_register(Reg::NACC_OUT_FM, Value()
                                        .set(fields::NACC_OUT_FM::OUT_FM_WIDTH, op.out_shape.w)
                                        .set(fields::NACC_OUT_FM::OUT_FM_HEIGHT, op.out_shape.h)
                                        .get());
  em.set_register(Reg::NACC_PADDING, Value()
                                         .set(fields::NACC_PADDING::PAD_X, op.pad_left)
                                         .set(fields::NACC_PADDING::PAD_Y, op.pad_top)
                                         .get());
  em.set_register(Reg::NACC_FM_CH,
                  Value()
                      .set(fields::NACC_FM_CH::IN_FM_CH, op.in_channels(c.group.size))
                      .set(fields::NACC_FM_CH::OUT_FM_CH, op.out_channels(c.group.size))
                      .get());
  em.set_register(Reg::NACC_FM_OFFSET,
                  Value()
                      .set(fields::NACC_FM_OFFSET::IN_FM_OFFSET, -op.input_zero_point)
                      .set(fields::NACC_FM_OFFSET::OUT_FM_OFFSET, op.output_zero_point)
                      .get());
  em.set_register(Reg::NACC_ACT_MIN, Value().set(fields::NACC_ACT_MIN::ACT_MIN, op.act_min).get());
  em.set_register(Reg::NACC_ACT_MAX, Value().set(fields::NACC_ACT_MAX::ACT_MAX, op.act_max).get());
  em.set_register(Reg::NACC_ACT_PARA,
                  Value()
                      .set(fields::NACC_ACT_PARA::ACT_INT_W, 0)
                      .set(fields::NACC_ACT_PARA::QUANT_REAL_SCALE, !op.real_scale.empty())
                      .set(fields::NACC_ACT_PARA::QUANT_FP32_SCALE,
                           !op.fp32_scale.empty() && op.is_mac_unit() && !op.mac_fp32)
                      .set(fields::NACC_ACT_PARA::ELEMENT_FP32,
                           op.unit == Unit::kElementwise ? int(op.eltwise.float_mode) : 0)
                      .set(fields::NACC_ACT_PARA::U8_DOMAIN, op.u8_domain)
                      .set(fields::NACC_ACT_PARA::POOL_FP32, op.pool_fp32)
                      .set(fields::NACC_ACT_PARA::POOL_FP32_MODE, int(op.pool_fp32_mode))
                      .set(fields::NACC_ACT_PARA::QUANT_MUL32, op.mul32)
                      .set(fields::NACC_ACT_PARA::MAC_FP32, op.mac_fp32)
                      .set(fields::NACC_ACT_PARA::MAC_FP32_ORDER,
                           op.mac_fp32 ? int(op.mac_fp32_order) : 0)
                      .get());
  // LANES8's tail starts at a channel of the layer; the command's channels
  // start at oc0 (the split in the command's own channels, 0 when past it).
  const int64_t kblock_split =
      op.mac_fp32 && op.mac_fp32_order == Fp32SumOrder::kLanes8
          ? std::max<int64_t>(0, op.kblock_split - op.out_channels(c.group.start))
          : op.kblock_split;
  // MAC_FP32's K blocks; 0 (the reset value, never written) for every other command.
  em.set_register(Reg::NACC_FP32_KBLOCK,
                  op.mac_fp32 ? Value()
                                    .set(fields::NACC_FP32_KBLOCK::KBLOCK_LOG2, op.kblock_log2)
                                    .set(fields::NACC_FP32_KBLOCK::KBLOCK_TAIL_LOG2,
                                         op.kblock_tail_log2)
                                    .set(fields::NACC_FP32_KBLOCK::KBLOCK_SPLIT, kblock_split)
                                    .get()
                              : 0u);
  // A rectangle of a tensor (LoweredOp::in_y0 ...) starts at its first pixel
  // and keeps the tensor's row pitch.
  // Byte pitches and offsets: 2 bytes an element with 16-bit maps (NACC_SPEC §9).
  const int64_t e = op.elem();
  const int64_t in_row = int64_t(op.in_row_pixels()) * op.in_shape.c * e;
  const int64_t in_origin = op.in_y0 * in_row + int64_t(op.in_x0) * op.in_shape.c * e;
  const int64_t oe = op.out_elem();  // 1 for MUL_S16_S8 (int16 inputs, int8 output)
  const int64_t out_row =
      op.out_row_pitch ? op.out_row_pitch : int64_t(op.out_row_pixels()) * op.out_pitch() * oe;
  const int64_t out_origin = op.out_y0 * out_row + int64_t(op.out_x0) * op.out_pitch() * oe;
  em.set_register(Reg::NACC_IN_FM_DMA_ADDR,
                  op.ones_a ? region_address(compiler::kConstantRegion, k.ones)
                            : ctx.address(op.input, in_origin + in_c0 * e + op.in_byte_offset));
  em.set_register(Reg::NACC_DMA_PARA2,
                  Value()
                      .set(fields::NACC_DMA_PARA2::FM_TRANS_OFFSET,
                           op.in_pixel_pitch ? op.in_pixel_pitch : int64_t(op.in_shape.c) * e)
                      .get());
  em.set_register(Reg::NACC_DMA_OFFSET1,
                  Value()
                      .set(fields::NACC_DMA_OFFSET1::IN_DMA_ROW_OFFSET,
                           op.in_row_pitch ? op.in_row_pitch : in_row)
                      .get());
  em.set_register(Reg::NACC_OUT_DMA_ADDR,
                  ctx.address(op.output, out_origin + op.out_byte_offset +
                                             (op.out_channel_offset + op.out_channels(c.group.start)) * oe));
  em.set_register(
      Reg::NACC_DMA_OUT_TRANS_LEN,
      Value().set(fields::NACC_DMA_OUT_TRANS_LEN::DMA_OUT_TRANS_LEN, op.out_pitch() * oe).get());
  em.set_register(Reg::NACC_DMA_OFFSET2,
                  Value().set(fields::NACC_DMA_OFFSET2::OUT_DMA_OFFSET, out_row).get());
}

// The output tile, its input tile (halo included) and the cores
// (docs/device_model.md §3, §5).
void set_tile(Context& ctx, const LoweredOp& op, const CommandShape& c) {
  Emitter& em = ctx.em;
  const CoreSplit& s = c.split;
  const bool two_d = c.mode == BroadcastMode::SPLIT_2D;
  const int core_rows = c.mode == BroadcastMode::SPLIT_HEIGHT || two_d ? s.avg : c.rows.size;
  em.set_register(
      Reg::NACC_OUT_FM_SPLIT_H_OFFSET,
      Value()
          .set(fields::NACC_OUT_FM_SPLIT_H_OFFSET::OUT_FM_START_SPLIT_H_OFFSET, c.rows.start)
          .get());
  em.set_register(Reg::NACC_OUT_FM_SPLIT_LEN,
                  Value()
                      .set(fields::NACC_OUT_FM_SPLIT_LEN::OUT_FM_SPLIT_LEN, c.rows.size)
                      .set(fields::NACC_OUT_FM_SPLIT_LEN::OUT_FM_SPLIT_LEFT_LEN, c.cols.start)
                      .get());
  em.set_register(Reg::NACC_OUT_FM_SPLIT,
                  Value().set(fields::NACC_OUT_FM_SPLIT::OUT_FM_SPLIT_WIDTH, c.cols.size).get());
  em.set_register(Reg::NACC_IN_FM_SPLIT_H_OFFSET,
                  Value()
                      .set(fields::NACC_IN_FM_SPLIT_H_OFFSET::IN_FM_START_SPLIT_H_OFFSET,
                           c.rows.start * op.stride_h - op.pad_top)
                      .get());
  em.set_register(Reg::NACC_IN_FM_SPLIT_W_OFFSET,
                  Value()
                      .set(fields::NACC_IN_FM_SPLIT_W_OFFSET::IN_FM_START_SPLIT_W_OFFSET,
                           c.cols.start * op.stride_w - op.pad_left)
                      .get());
  em.set_register(Reg::NACC_IN_FM_SPLIT,
                  Value()
                      .set(fields::NACC_IN_FM_SPLIT::IN_FM_SPLIT_WIDTH,
                           compiler::input_extent(c.cols.size, op.stride_w, op.kernel_w))
                      .set(fields::NACC_IN_FM_SPLIT::IN_FM_SPLIT_LEFT_LEN,
                           compiler::input_extent(core_rows, op.stride_h, op.kernel_h))
                      .get());
  em.set_register(Reg::NACC_BROADCAST_CTRL,
                  Value()
                      .set(fields::NACC_BROADCAST_CTRL::BROADCAST_MODE, int(c.mode))
                      .set(fields::NACC_BROADCAST_CTRL::BROADCAST_NUM, s.total() - 1)
                      .set(fields::NACC_BROADCAST_CTRL::SPLIT_2D_GROUPS, two_d ? s.groups - 1 : 0)
                      .set(fields::NACC_BROADCAST_CTRL::SPLIT_2D_ROWS, two_d ? s.cores - 1 : 0)
                      .get());
  if (c.mode == BroadcastMode::NONE) return;
  em.set_register(
      Reg::NACC_BROADCAST_CTRL1,
      Value().set(fields::NACC_BROADCAST_CTRL1::BROADCAST_OVER_EN, s.avg != s.last ? 1 : 0).get());
  if (c.mode == BroadcastMode::SPLIT_HEIGHT || two_d) {
    em.set_register(Reg::NACC_BROADCAST_SPLIT,
                    Value()
                        .set(fields::NACC_BROADCAST_SPLIT::OUT_FM_SPLIT_OV_HEIGHT, s.last)
                        .set(fields::NACC_BROADCAST_SPLIT::OUT_FM_SPLIT_AVG_HEIGHT, s.avg)
                        .get());
    em.set_register(
        Reg::NACC_BROADCAST_DMA,
        Value()
            .set(fields::NACC_BROADCAST_DMA::IN_DMA_UNICAST_OV_OFFSET,
                 compiler::input_extent(s.last, op.stride_h, op.kernel_h))
            .set(fields::NACC_BROADCAST_DMA::IN_DMA_UNICAST_AVG_OFFSET, s.avg * op.stride_h)
            .set(fields::NACC_BROADCAST_DMA::EU_BIAS_START_OFFSET,
                 two_d ? op.out_channels(s.gavg) : 0)
            .get());
  } else {
    em.set_register(Reg::NACC_BROADCAST_DMA,
                    Value().set(fields::NACC_BROADCAST_DMA::EU_BIAS_START_OFFSET, s.avg).get());
  }
}

// The operands of the K area and the unit's own registers. Returns the
// registers that identify the loaded kernel (empty: the command has none).
std::vector<uint32_t> set_operands(Context& ctx, const LoweredOp& op, OpConstants& k,
                                   const CommandShape& c) {
  Emitter& em = ctx.em;
  const auto constant = [](int64_t offset) {
    return region_address(compiler::kConstantRegion, offset);
  };
  const int64_t oc0 = op.out_channels(c.group.start);
  uint32_t k_addr = 0;
  int k_trans_len = 0;
  switch (op.unit) {
    case Unit::kConv:
    case Unit::kDepthwise:
    case Unit::kFullyConnected: {
      // Mode 3: one weight block per channel group (its row pieces share it).
      const CoreSplit groups{c.split.groups, c.split.gavg, c.split.glast};
      const bool two_d = c.mode == BroadcastMode::SPLIT_2D;
      const WeightStream& ws = weight_stream(ctx, op, k, c.group.start, c.group.size,
                                             two_d ? groups : c.split,
                                             c.mode == BroadcastMode::SPLIT_KERNEL || two_d);
      k_addr = constant(ws.offset);
      k_trans_len = ws.k_trans_len;
      em.set_register(Reg::NACC_IN_K_DMA_ADDR, k_addr);
      em.set_register(Reg::NACC_CONV_TRANS_LEN,
                      Value().set(fields::NACC_CONV_TRANS_LEN::K_TRANS_LEN, k_trans_len).get());
      if (k.bias >= 0) {
        em.set_register(Reg::NACC_BIAS_DMA_ADDR, constant(k.bias + op.bias_entry_bytes() * oc0));
      }
      if (k.fp32_scale >= 0) {  // ONNX Runtime's float32 output stage (QUANT_FP32_SCALE, MAC_FP32)
        em.set_register(Reg::NACC_QUANT_MUL_DMA_ADDR,
                        constant(k.fp32_scale + 4 * op.fp32_entry_floats() * oc0));
        if (op.unit == Unit::kFullyConnected) {
          em.set_register(Reg::NACC_FULL_CONV_PARA,
                          Value()
                              .set(fields::NACC_FULL_CONV_PARA::FULL_KER_SIZE,
                                   op.in_shape.w * ceil_div(op.in_shape.c, limits::kMacLanes) - 1)
                              .get());
        }
      } else if (op.unit == Unit::kFullyConnected && k.real_scale >= 0) {
        em.set_register(Reg::NACC_QUANT_MUL_DMA_ADDR, constant(k.real_scale + 8 * oc0));
        em.set_register(Reg::NACC_FULL_CONV_PARA,
                        Value()
                            .set(fields::NACC_FULL_CONV_PARA::FULL_KER_SIZE,
                                 op.in_shape.w * ceil_div(op.in_shape.c, limits::kMacLanes) - 1)
                            .get());
      } else if (op.unit == Unit::kFullyConnected) {  // a 1x1 conv in matrix mode
        em.set_register(Reg::NACC_QUANT_MUL_DMA_ADDR, constant(k.multiplier + 4 * oc0));
        em.set_register(Reg::NACC_QUANT_SHIFT_DMA_ADDR, constant(k.shift + 4 * oc0));
        em.set_register(Reg::NACC_FULL_CONV_PARA,
                        Value()
                            .set(fields::NACC_FULL_CONV_PARA::FULL_KER_SIZE,
                                 op.in_shape.w * ceil_div(op.in_shape.c, limits::kMacLanes) - 1)
                            .get());
      } else {
        em.set_register(Reg::NACC_QUANT_MUL_DMA_ADDR, constant(k.multiplier + 4 * oc0));
        em.set_register(Reg::NACC_QUANT_SHIFT_DMA_ADDR, constant(k.shift + 4 * oc0));
      }
      if (op.unit == Unit::kDepthwise) {
        em.set_register(
            Reg::NACC_DMA_PARA3,
            Value().set(fields::NACC_DMA_PARA3::DW_CH_MULT, log2_exact(op.depth_multiplier)).get());
      }
      break;
    }
    case Unit::kMatmul: {
      // B: the runtime operand (BATCH_MATMUL) or the transposed weights
      // (im2col), columns [n0, n0 + group) at row pitch N (docs/device_model.md §4).
      const int k_dim = op.matmul_k();
      const int64_t n0 = c.group.start;
      k_addr = op.im2col ? constant(k.b_matrix + n0) : ctx.address(op.input2, n0);
      em.set_register(Reg::NACC_IN_K_DMA_ADDR, k_addr);
      em.set_register(Reg::NACC_DMA_PARAA,
                      Value().set(fields::NACC_DMA_PARAA::K_TRANS_OFFSET, op.out_shape.c).get());
      const int64_t m = op.im2col ? int64_t(op.out_shape.h) * op.out_shape.w : op.in_shape.h;
      em.set_register(Reg::NACC_MATRIX_A, Value()
                                              .set(fields::NACC_MATRIX_A::MATRIX_A_XSIZE, k_dim)
                                              .set(fields::NACC_MATRIX_A::MATRIX_A_YSIZE, m)
                                              .get());
      em.set_register(Reg::NACC_MATRIX_B,
                      Value()
                          .set(fields::NACC_MATRIX_B::MATRIX_B_XSIZE, op.out_channels(c.group.size))
                          .set(fields::NACC_MATRIX_B::MATRIX_B_YSIZE, k_dim)
                          .get());
      em.set_register(
          Reg::NACC_ELEMENTWISE,
          Value().set(fields::NACC_ELEMENTWISE::IN_ELEMENT_OFFSET2, -op.b_zero_point).get());
      if (k.bias >= 0) {
        em.set_register(Reg::NACC_BIAS_DMA_ADDR, constant(k.bias + op.bias_entry_bytes() * oc0));
      }
      if (k.fp32_scale >= 0) {
        em.set_register(Reg::NACC_QUANT_MUL_DMA_ADDR, constant(k.fp32_scale + 4 * oc0));
      } else {
        em.set_register(Reg::NACC_QUANT_MUL_DMA_ADDR, constant(k.multiplier + 4 * oc0));
        em.set_register(Reg::NACC_QUANT_SHIFT_DMA_ADDR, constant(k.shift + 4 * oc0));
      }
      return {k_addr,
              em.shadow(Reg::NACC_DMA_PARAA),
              em.shadow(Reg::NACC_MATRIX_B),
              em.shadow(Reg::NACC_ELEMENTWISE),
              em.shadow(Reg::NACC_CONV_TRANS_LEN),
              em.shadow(Reg::NACC_ACT_PARA),
              em.shadow(Reg::NACC_BIAS_DMA_ADDR),
              em.shadow(Reg::NACC_QUANT_MUL_DMA_ADDR),
              em.shadow(Reg::NACC_QUANT_SHIFT_DMA_ADDR),
              uint32_t(op.out_channels(c.group.size)),
              kernel_cores_key(em, c.mode),
              uint32_t(c.mode == BroadcastMode::SPLIT_KERNEL ? c.split.avg
                   : c.mode == BroadcastMode::SPLIT_2D ? c.split.gavg : 0)};
    }
    case Unit::kElementwise: {
      // The output multiplier and shift (K area); the second operand (TEMP
      // area; docs/device_model.md §2: pixel pitch 0 = one pixel broadcast).
      if (k.fp32_scale >= 0) {  // ELEMENT_FP32: the mode's 3 float32
        em.set_register(Reg::NACC_QUANT_MUL_DMA_ADDR, constant(k.fp32_scale));
      } else {
        em.set_register(Reg::NACC_QUANT_MUL_DMA_ADDR, constant(k.multiplier));
        em.set_register(Reg::NACC_QUANT_SHIFT_DMA_ADDR, constant(k.shift));
      }
      em.set_register(Reg::NACC_IN_K_DMA_ADDR, op.input2_is_constant
                                                   ? constant(k.operand2 + c.group.start)
                                                   : ctx.address(op.input2, int64_t(c.group.start) * op.elem()));
      em.set_register(Reg::NACC_DMA_PARAA, Value()
                                               .set(fields::NACC_DMA_PARAA::K_TRANS_OFFSET,
                                                    op.input2_broadcast ? 0 : op.out_shape.c * op.elem())
                                               .get());
      const ElementwiseParams& e = op.eltwise;
      em.set_register(Reg::NACC_ELEMENTWISE,
                      Value()
                          .set(fields::NACC_ELEMENTWISE::ELEMENTWISE_MODE, int(e.mode))
                          .set(fields::NACC_ELEMENTWISE::IN_ELEMENT_OFFSET1, e.input1_offset)
                          .set(fields::NACC_ELEMENTWISE::IN_ELEMENT_OFFSET2, e.input2_offset)
                          .set(fields::NACC_ELEMENTWISE::LEFT_SHIFT, e.left_shift)
                          .get());
      em.set_register(
          Reg::NACC_ELEMENT_QUANT1_MULT,
          Value()
              .set(fields::NACC_ELEMENT_QUANT1_MULT::IN_ELEMENT_MULT1, e.input1_multiplier)
              .get());
      em.set_register(
          Reg::NACC_ELEMENT_QUANT1_SHIFT,
          Value().set(fields::NACC_ELEMENT_QUANT1_SHIFT::IN_ELEMENT_SHIFT1, e.input1_shift).get());
      em.set_register(
          Reg::NACC_ELEMENT_QUANT2_MULT,
          Value()
              .set(fields::NACC_ELEMENT_QUANT2_MULT::IN_ELEMENT_MULT2, e.input2_multiplier)
              .get());
      em.set_register(
          Reg::NACC_ELEMENT_QUANT2_SHIFT,
          Value().set(fields::NACC_ELEMENT_QUANT2_SHIFT::IN_ELEMENT_SHIFT2, e.input2_shift).get());
      // The TEMP operand is loaded with every tile; the K area (multiplier and
      // shift) stays resident (K_UPD = 0) while the device's kernel key — these
      // addresses, the channel count, the K base — is unchanged, so a double-
      // buffered tile's loads need not wait for the previous tile's compute to
      // release the K area.
      return {em.shadow(Reg::NACC_IN_K_DMA_ADDR), em.shadow(Reg::NACC_QUANT_MUL_DMA_ADDR),
              em.shadow(Reg::NACC_QUANT_SHIFT_DMA_ADDR), em.shadow(Reg::NACC_ACT_PARA),
              em.shadow(Reg::NACC_FM_CH), kernel_cores_key(em, c.mode)};
    }
    case Unit::kActivation:
      if (op.int16_maps) {  // the 16-bit Tanh / Sigmoid: input multiplier and shift
        em.set_register(Reg::NACC_QUANT_MUL_DMA_ADDR, constant(k.multiplier));
        em.set_register(Reg::NACC_QUANT_SHIFT_DMA_ADDR, constant(k.shift));
        return {em.shadow(Reg::NACC_QUANT_MUL_DMA_ADDR), em.shadow(Reg::NACC_QUANT_SHIFT_DMA_ADDR),
                em.shadow(Reg::NACC_FM_CH)};
      }
      em.set_register(Reg::NACC_IN_ACT_DMA_ADDR, constant(k.lut));
      break;
    case Unit::kAvgPool:
      if (op.pool_fp32) {  // POOL_FP32: input and output scale (float32)
        em.set_register(Reg::NACC_QUANT_MUL_DMA_ADDR, constant(k.fp32_scale));
        // The device's kernel key also holds the channel count and the cores
        // (two pools with the same scales share one constant).
        return {em.shadow(Reg::NACC_QUANT_MUL_DMA_ADDR), em.shadow(Reg::NACC_ACT_PARA),
                em.shadow(Reg::NACC_FM_CH), kernel_cores_key(em, c.mode)};
      }
      return {};
    default:
      return {};  // pooling: no K operands
  }
  return {k_addr,
          uint32_t(k_trans_len),
          em.shadow(Reg::NACC_BIAS_DMA_ADDR),
          em.shadow(Reg::NACC_QUANT_MUL_DMA_ADDR),
          em.shadow(Reg::NACC_QUANT_SHIFT_DMA_ADDR),
          em.shadow(Reg::NACC_IN_ACT_DMA_ADDR),
          uint32_t(op.out_channels(c.group.size)),
          kernel_cores_key(em, c.mode),
          uint32_t(c.mode == BroadcastMode::SPLIT_KERNEL ? c.split.avg
                   : c.mode == BroadcastMode::SPLIT_2D ? c.split.gavg : 0)};
}

// NACC_CTRL with every mode field explicit (NACC_SPEC §1: never rely on reset
// values meaning "off"), and the opcode.
std::pair<uint32_t, Opcode> control(const LoweredOp& op, bool fm_upd, bool k_upd) {
  Value ctrl;
  ctrl.set(fields::NACC_CTRL::IM2COL_EN, op.im2col ? 1 : 0)
      .set(fields::NACC_CTRL::DATA_FORM,
           value_of(op.int4_weights ? DataForm::INT4
                    : op.int16_maps ? DataForm::INT16
                                    : DataForm::INT8))
      .set(fields::NACC_CTRL::CLK_BYPASS, 0);
  ctrl.set(fields::NACC_CTRL::FM_UPD, fm_upd).set(fields::NACC_CTRL::K_UPD, k_upd);
  ctrl.set(fields::NACC_CTRL::ELEMENT_EN, 0)
      .set(fields::NACC_CTRL::ELEMENT_INPUT_QUANT_EN, 0)
      .set(fields::NACC_CTRL::QUANT_EN, 0)
      .set(fields::NACC_CTRL::BIAS_EN, 0);
  ctrl.set(fields::NACC_CTRL::ACT_MODE, int(op.act_mode));
  switch (op.unit) {
    case Unit::kConv:
    case Unit::kDepthwise:
    case Unit::kFullyConnected:
      ctrl.set(fields::NACC_CTRL::CONV_MODE,
               op.unit == Unit::kConv        ? value_of(ConvMode::CONVOLUTION)
               : op.unit == Unit::kDepthwise ? value_of(ConvMode::DEPTHWISE)
                                             : value_of(ConvMode::FULLY_CONNECTED));
      ctrl.set(fields::NACC_CTRL::POOL_MODE, value_of(PoolMode::NONE))
          .set(fields::NACC_CTRL::QUANT_EN, 1)
          .set(fields::NACC_CTRL::BIAS_EN, op.has_bias() ? 1 : 0);
      return {ctrl.get(), op.unit == Unit::kConv        ? Opcode::NPU_OP_CONV
                          : op.unit == Unit::kDepthwise ? Opcode::NPU_OP_DEPTHWISE
                                                        : Opcode::NPU_OP_FULLY_CONNECTED};
    case Unit::kMatmul:
      ctrl.set(fields::NACC_CTRL::CONV_MODE, value_of(ConvMode::MATRIX))
          .set(fields::NACC_CTRL::POOL_MODE, value_of(PoolMode::NONE))
          .set(fields::NACC_CTRL::QUANT_EN, 1);
      ctrl.set(fields::NACC_CTRL::BIAS_EN, op.has_bias() ? 1 : 0);
      return {ctrl.get(), Opcode::NPU_OP_MATMUL};
    case Unit::kMaxPool:
    case Unit::kAvgPool:
      ctrl.set(fields::NACC_CTRL::CONV_MODE, value_of(ConvMode::NONE))
          .set(fields::NACC_CTRL::POOL_MODE,
               op.unit == Unit::kMaxPool ? value_of(PoolMode::MAX) : value_of(PoolMode::AVERAGE))
          .set(fields::NACC_CTRL::QUANT_EN, op.pool_fp32 ? 1 : 0);
      return {ctrl.get(), Opcode::NPU_OP_POOL};
    case Unit::kElementwise:
      ctrl.set(fields::NACC_CTRL::CONV_MODE, value_of(ConvMode::NONE))
          .set(fields::NACC_CTRL::POOL_MODE, value_of(PoolMode::NONE))
          .set(fields::NACC_CTRL::ELEMENT_EN, 1)
          .set(fields::NACC_CTRL::QUANT_EN, 1);
      ctrl.set(fields::NACC_CTRL::ELEMENT_INPUT_QUANT_EN,
               op.eltwise.mode == ElementwiseMode::MUL ||
                       op.eltwise.mode == ElementwiseMode::MUL_S16_S8
                   ? 0
                   : 1);
      return {ctrl.get(), Opcode::NPU_OP_ELEMENTWISE};
    case Unit::kActivation:
      ctrl.set(fields::NACC_CTRL::CONV_MODE, value_of(ConvMode::NONE))
          .set(fields::NACC_CTRL::POOL_MODE, value_of(PoolMode::NONE))
          .set(fields::NACC_CTRL::QUANT_EN, op.int16_maps ? 1 : 0);
      return {ctrl.get(), Opcode::NPU_OP_ACTIVATION};
    default:
      throw InvalidArgument(str_cat(op.label, ": no command for unit ", compiler::unit_name(op.unit)));
  }
}

void emit_command(Context& ctx, const LoweredOp& op, const TilePlan& plan, OpConstants& k,
                  Residency& res, const CommandShape& c) {
  Emitter& em = ctx.em;
  set_layer(ctx, op, k, c);
  set_tile(ctx, op, c);
  std::vector<uint32_t> k_sig = set_operands(ctx, op, k, c);
  const bool uses_k = (op.unit != Unit::kMaxPool && op.unit != Unit::kAvgPool) || op.pool_fp32;

  // SRAM areas; the base of an area the command does not use is 0 (ignored).
  const compiler::SramLayout& lay = plan.layout;
  const int64_t ifm_base = lay.ifm[c.set], ofm_base = lay.ofm[c.set];
  const int64_t k_base = uses_k ? lay.k[c.set] : 0;
  const int64_t temp_base = op.unit == Unit::kElementwise ? lay.temp[c.set] : 0;
  em.set_register(Reg::NACC_MEM_RANGE,
                  Value()
                      .set(fields::NACC_MEM_RANGE::IFM_MEM_BASE, ifm_base / ctx.geo.quarter)
                      .set(fields::NACC_MEM_RANGE::K_MEM_BASE, k_base / ctx.geo.unit)
                      .set(fields::NACC_MEM_RANGE::OFM_MEM_BASE, ofm_base / ctx.geo.unit)
                      .set(fields::NACC_MEM_RANGE::TEMP_MEM_BASE, temp_base / ctx.geo.unit)
                      .get());

  // Reuse the kernel / IFM tile a core holds when the same registers (and
  // SRAM base) loaded it: K_UPD = 0 / FM_UPD = 0 (docs/device_model.md §1).
  if (!k_sig.empty()) k_sig.push_back(uint32_t(k_base));
  std::vector<uint32_t> fm_sig = {em.shadow(Reg::NACC_IN_FM_DMA_ADDR),
                                        em.shadow(Reg::NACC_DMA_PARA2),
                                        em.shadow(Reg::NACC_DMA_OFFSET1),
                                        em.shadow(Reg::NACC_IN_FM_SPLIT),
                                        em.shadow(Reg::NACC_IN_FM_SPLIT_H_OFFSET),
                                        em.shadow(Reg::NACC_IN_FM_SPLIT_W_OFFSET),
                                        em.shadow(Reg::NACC_FM_CH) & 0xFFFFu,
                                        uint32_t(ifm_base)};
  // Mode 2 gives each core its own rows and depthwise mode 1 its own channels
  // (the split registers count); mode 1 otherwise and one core hold the same
  // tile on every core (Residency::fm_cores).
  const bool fm_per_core = c.mode == BroadcastMode::SPLIT_HEIGHT ||
                           c.mode == BroadcastMode::SPLIT_2D ||
                           (c.mode == BroadcastMode::SPLIT_KERNEL && op.unit == Unit::kDepthwise);
  if (fm_per_core) {
    for (Reg r : {Reg::NACC_BROADCAST_CTRL, Reg::NACC_BROADCAST_DMA, Reg::NACC_BROADCAST_SPLIT}) {
      fm_sig.push_back(em.shadow(r));
    }
  }
  fm_sig.push_back(uint32_t(fm_per_core));
  const int cores = c.split.total();
  const bool k_resident = !k_sig.empty() && res.k == k_sig &&
                          (c.mode == BroadcastMode::SPLIT_KERNEL ||
                           c.mode == BroadcastMode::SPLIT_2D || cores <= res.k_cores);
  const bool fm_resident = op.unit != Unit::kElementwise && res.fm == fm_sig &&
                           (fm_per_core || cores <= res.fm_cores);
  if (!k_sig.empty()) {
    res.k = k_sig;
    res.k_cores = k_resident ? std::max(res.k_cores, cores) : cores;
  }
  res.fm = fm_sig;
  res.fm_cores = fm_resident ? std::max(res.fm_cores, cores) : cores;

  const auto [ctrl, opcode] = control(op, !fm_resident, !k_resident);
  em.set_register(Reg::NACC_CTRL, ctrl);
  ctx.kernel_op(opcode);
}

// Unit::kLayout (LoweredOp::LayoutConversion): the DMA queue's commands,
// after every kernel and waited for (as Context::copy). The channel rows
// (pitch P) and the pixels (pitch Cp) are the tensors themselves or areas of
// the staging tensor; each NPU_OP_VNCHWCONV transposes 16 channels x 16
// pixels per iteration (a half of each 32-byte block, b8), `repeat` <= 255
// iterations of 32 pixels each.
void emit_layout(Context& ctx, const LoweredOp& op) {
  const LoweredOp::LayoutConversion& L = op.layout;
  const int64_t e = L.elem, c0 = limits::kUbBlockBytes / e;  // C0 elements a block
  const int64_t C = L.c, HW = int64_t(L.h) * L.w;
  const int64_t Cp = ceil_div(C, c0) * c0, P = ceil_div(HW, c0) * c0;
  const int planar = L.to_nhwc ? op.input : op.output;   // [1, C, H, W]
  const int pixels = L.to_nhwc ? op.output : op.input;   // [1, H, W, C]
  // A part before (scatter) or after (gather) moves pixels of Cp elements in
  // and out of the staging slab when C % C0 != 0; its own tensor otherwise.
  // Offsets in elements.
  const auto rows_at = [&](int64_t off) {
    return L.rows_offset < 0 ? ctx.address(planar, off * e)
                             : ctx.address(op.input2, L.rows_offset + off * e);
  };
  const auto slab_at = [&](int64_t off) {
    return L.slab_offset < 0 ? ctx.address(pixels, off * e)
                             : ctx.address(op.input2, L.slab_offset + off * e);
  };
  Emitter& em = ctx.em;
  em.op(Opcode::NPU_OP_KERNEL_WAIT, 0);
  ctx.wait_pending = false;
  ctx.reads_since_wait.clear();
  ctx.writes_since_wait.clear();
  const auto dma = [&](uint32_t src, uint32_t dst, int64_t len) {
    em.set_register(Reg::DMA_SRC, src);
    em.set_register(Reg::DMA_DST, dst);
    em.set_register(Reg::DMA_LEN, uint32_t(len));
    em.op(Opcode::NPU_OP_DMA_START, 0);
  };
  // The NCHW rows to or from their pitch-P area (one copy when P = H*W).
  const auto move_rows = [&](bool in) {
    if (L.rows_offset < 0) return;
    const auto move = [&](int64_t c, int64_t len) {  // channel c's row onward, len elements
      const uint32_t tensor = ctx.address(planar, c * HW * e), area = rows_at(c * P);
      in ? dma(tensor, area, len * e) : dma(area, tensor, len * e);
    };
    if (P == HW) {
      move(0, C * HW);
      return;
    }
    for (int64_t c = 0; c < C; ++c) move(c, HW);
  };
  // The dense pixels to or from the slab when C % C0 == 0 but P > H*W.
  const bool slab_copy = L.slab_offset >= 0 && C % c0 == 0;
  if (L.to_nhwc) {
    move_rows(true);
  } else if (slab_copy) {
    dma(ctx.address(pixels, 0), slab_at(0), HW * C * e);
  }
  // b8: a command moves 16 channels x 16 pixels, half of each block (two
  // halves per side); b16: 16 x 16 elements, whole blocks.
  const int halves = e == 1 ? 2 : 1;
  const int64_t iterations = P / c0;
  for (int64_t c1 = 0; c1 < Cp / c0; ++c1) {
    for (int ch_half = 0; ch_half < halves; ++ch_half) {
      if (c1 * c0 + 16 * ch_half >= C) continue;  // padding channels only
      for (int hw_half = 0; hw_half < halves; ++hw_half) {
        for (int64_t it0 = 0; it0 < iterations; it0 += limits::kVnchwMaxRepeat) {
          const int64_t repeat = std::min<int64_t>(limits::kVnchwMaxRepeat, iterations - it0);
          const uint32_t rows = rows_at((c1 * c0 + 16 * ch_half) * P + it0 * c0);
          const uint32_t slab = slab_at((it0 * c0 + 16 * hw_half) * Cp + c1 * c0);
          em.set_register(Reg::VNCHWCONV_SRC, L.to_nhwc ? rows : slab);
          em.set_register(Reg::VNCHWCONV_DST, L.to_nhwc ? slab : rows);
          em.set_register(Reg::VNCHWCONV_SRC_BLOCK_STRIDE, uint32_t((L.to_nhwc ? P : Cp) * e));
          em.set_register(Reg::VNCHWCONV_DST_BLOCK_STRIDE, uint32_t((L.to_nhwc ? Cp : P) * e));
          // Per iteration: the rows advance one block, the slab C0 pixels
          // (C0 * Cp * e bytes = Cp blocks).
          const int64_t rows_step = 1, slab_step = Cp;
          const int64_t src_step = L.to_nhwc ? rows_step : slab_step;
          const int64_t dst_step = L.to_nhwc ? slab_step : rows_step;
          em.set_register(Reg::VNCHWCONV_STRIDE,
                          Value()
                              .set(fields::VNCHWCONV_STRIDE::SRC_STRIDE, src_step)
                              .set(fields::VNCHWCONV_STRIDE::DST_STRIDE, dst_step)
                              .get());
          // The rows side's half selects pixels 16..31 of a block, the slab
          // side's channels 16..31 of a pixel.
          const int src_high = L.to_nhwc ? hw_half : ch_half;
          const int dst_high = L.to_nhwc ? ch_half : hw_half;
          em.set_register(Reg::VNCHWCONV_CFG,
                          Value()
                              .set(fields::VNCHWCONV_CFG::REPEAT, repeat)
                              .set(fields::VNCHWCONV_CFG::DTYPE,
                                   int64_t(e == 1 ? VnchwconvType::B8 : VnchwconvType::B16))
                              .set(fields::VNCHWCONV_CFG::SRC_HIGH_HALF, src_high)
                              .set(fields::VNCHWCONV_CFG::DST_HIGH_HALF, dst_high)
                              .set(fields::VNCHWCONV_CFG::REVERSE, L.to_nhwc ? 0 : 1)
                              .get());
          em.op(Opcode::NPU_OP_VNCHWCONV, 0);
        }
      }
    }
  }
  if (!L.to_nhwc) {
    move_rows(false);
  } else if (slab_copy) {
    dma(slab_at(0), ctx.address(pixels, 0), HW * C * e);
  }
  em.op(Opcode::NPU_OP_DMA_WAIT, 0);
}

// The device cycles of emit_layout's commands: the DMA queue runs them one
// after another, each moving its bytes in and out through one port
// (exec_dma.cc queue_op): the row copies (one, or one per channel when P >
// H*W), the slab copy, and one NPU_OP_VNCHWCONV per (slab, channel half,
// pixel half (b8; one pair for b16), <= 255 iterations) of 512 bytes each way — the same loops as
// emit_layout, counted instead of written.
int64_t layout_unit_cycles(const LoweredOp& op, const HwConfig& hw) {
  const LoweredOp::LayoutConversion& L = op.layout;
  const int64_t block = limits::kUbBlockBytes, e = L.elem, c0 = block / e;
  const int64_t C = L.c, HW = int64_t(L.h) * L.w;
  const int64_t Cp = ceil_div(C, c0) * c0, P = ceil_div(HW, c0) * c0;
  const auto transfer = [&](int64_t bytes) { return cost::transfer_cycles(2 * bytes, 2 * bytes, hw); };
  int64_t cycles = 0;
  if (L.rows_offset >= 0) cycles += P == HW ? transfer(C * HW * e) : C * transfer(HW * e);
  if (L.slab_offset >= 0 && C % c0 == 0) cycles += transfer(HW * C * e);
  const int halves = e == 1 ? 2 : 1;
  const int64_t iterations = P / c0;
  const int64_t per_operand = limits::kVnchwBlocksPerOperand * block;
  int64_t commands = 0;  // per run of iterations: (channel half, pixel half) pairs holding a real channel
  for (int64_t c1 = 0; c1 < Cp / c0; ++c1) {
    for (int ch_half = 0; ch_half < halves; ++ch_half) commands += (c1 * c0 + 16 * ch_half < C) * halves;
  }
  for (int64_t it0 = 0; it0 < iterations; it0 += limits::kVnchwMaxRepeat) {
    const int64_t repeat = std::min<int64_t>(limits::kVnchwMaxRepeat, iterations - it0);
    cycles += commands * transfer(repeat * per_operand);
  }
  return cycles;
}

void emit_op(Context& ctx, const LoweredOp& op, const TilePlan& plan, OpConstants& k) {
  if (op.unit == Unit::kLayout) {
    emit_layout(ctx, op);
    return;
  }
  // Order the hazard check: this op reads its inputs and writes its output.
  std::vector<Interval> reads = {ctx.interval_of(op.input)};
  if (op.input2 >= 0 && !op.input2_is_constant) reads.push_back(ctx.interval_of(op.input2));
  ctx.wait_if_needed(reads, {ctx.interval_of(op.output)});

  Residency res;
  int index = 0;
  const auto emit = [&](const Span& r, const Span& c, const Span& g) {
    CommandShape shape;
    shape.rows = r;
    shape.cols = c;
    shape.group = g;
    shape.split = compiler::command_split(op, plan, r.size, g.size);
    shape.mode =
        shape.split.total() > 1 ? plan.mode : BroadcastMode::NONE;  // a short tile may use one core
    shape.set = plan.double_buffer ? index++ % 2 : 0;
    emit_command(ctx, op, plan, k, res, shape);
  };
  compiler::for_each_command(plan, emit);
}

// ---- records -------------------------------------------------------------------

// ir::op_macs (ir/macs.h) on the lowered geometry: a folded PAD's taps are
// padding here, a standalone PAD is its identity depthwise pass.
int64_t useful_macs(const LoweredOp& op) {
  const int64_t taps =
      cost::valid_taps(op.out_shape.h, op.stride_h, op.kernel_h, op.pad_top, op.in_shape.h) *
      cost::valid_taps(op.out_shape.w, op.stride_w, op.kernel_w, op.pad_left, op.in_shape.w);
  switch (op.unit) {
    case Unit::kConv:
      return taps * op.in_shape.c * op.out_shape.c;
    case Unit::kDepthwise:
      return taps * op.out_shape.c;
    case Unit::kFullyConnected:
      return int64_t(op.in_shape.h) * op.in_shape.c * op.out_shape.c;
    case Unit::kMatmul:  // im2col: as the convolution (padding taps excluded); else M*K*N
      return op.im2col ? taps * op.in_shape.c * op.out_shape.c
                       : int64_t(op.in_shape.h) * op.in_shape.c * op.out_shape.c;
    default:
      return 0;
  }
}

// Input positions [0, in) inside at least one of the `outputs` windows of
// `kernel` taps starting at out*stride - pad (a 1x1 kernel of stride 2 covers
// every other position; padding positions are not input).
int64_t covered_inputs(int outputs, int in, int kernel, int stride, int pad) {
  int64_t covered = 0;
  int next = 0;  // first position not yet counted (windows start in increasing order)
  for (int o = 0; o < outputs; ++o) {
    const int b = std::max(next, std::max(0, o * stride - pad));
    const int e = std::min(in, o * stride - pad + kernel);
    if (e > b) {
      covered += e - b;
      next = e;
    }
  }
  return covered;
}

// The IFM bytes of the move-once minimum (docs/performance_model.md §4): every
// input element at least one output reads, once. Windowed ops (convolution in
// every lowering, depthwise, pooling) read the rows and columns their windows
// cover; the others read their whole input.
int64_t input_read_once(const Context& ctx, const LoweredOp& op) {
  const bool windowed = op.unit == Unit::kConv || op.unit == Unit::kDepthwise ||
                        op.unit == Unit::kMaxPool || op.unit == Unit::kAvgPool ||
                        (op.unit == Unit::kMatmul && op.im2col);
  if (!windowed) return tensor_bytes(ctx.graph.tensor(op.input));
  return covered_inputs(op.out_shape.h, op.in_shape.h, op.kernel_h, op.stride_h, op.pad_top) *
         covered_inputs(op.out_shape.w, op.in_shape.w, op.kernel_w, op.stride_w, op.pad_left) *
         op.in_shape.c * op.elem();
}

// MAC-array cycles of the §8 bound: the cheapest lowering of the layer on one
// core (docs/performance_model.md §4). A CONV_2D may run direct (= matrix mode
// for 1x1 stride 1) or, where the MATRIX_A fields hold it and it does not
// write a CONCATENATION slice, as im2col; the bound takes the fewer cycles
// whichever lowering the planner chose. A ones-operand matmul over at most
// 15x15 cells could run as one depthwise window (conv_modes.h
// ones_matmul_of): the bound takes the fewer cycles of the two.
int64_t bound_mac_cycles(const Context& ctx, const LoweredOp& op) {
  const int channels = op.split_channels();
  const int64_t chosen = compiler::mac_cycles(op, op.out_shape.h, op.out_shape.w, channels);
  if (op.ones_a) {
    const Shape4 in = compiler::nhwc_of(ctx.graph.tensor(op.input).shape);
    if (in.h > limits::kMaxKernel || in.w > limits::kMaxKernel) return chosen;
    return std::min(chosen, cost::window_mac_cycles(1, 1, op.out_shape.c, int64_t(in.h) * in.w));
  }
  const bool conv = op.unit == Unit::kConv || (op.unit == Unit::kMatmul && op.im2col) ||
                    op.lowering == "matrix";
  if (!conv || op.lowering == "matrix") return chosen;  // matrix == direct cycles
  if (op.int16_maps || op.mac_fp32) return chosen;  // 16-bit maps, MAC_FP32: direct only
  const int64_t taps = int64_t(op.kernel_h) * op.kernel_w;
  const int64_t m = int64_t(op.out_shape.h) * op.out_shape.w, n = op.out_shape.c;
  int64_t best = cost::conv_mac_cycles(op.out_shape.h, op.out_shape.w, n, taps, op.in_shape.c);
  if (taps * op.in_shape.c <= limits::kMaxFeatureMapDim && m <= limits::kMaxFeatureMapDim &&
      !op.out_pixel_pitch) {
    best = std::min(best, cost::matrix_mac_cycles(m, n, taps * op.in_shape.c));
  }
  return std::min(best, chosen);
}

void fill_record(const Context& ctx, const LoweredOp& op, const OpConstants& k, OpRecord& rec) {
  const HwConfig& hw = ctx.options.hw;
  rec.macs = useful_macs(op);
  rec.lowering = op.lowering;
  rec.weight_bytes = k.weight_raw;
  rec.weight_bytes_stored = k.weight_stored;
  if (op.unit == Unit::kView) return;
  // Move-once DMA bytes: every input element some output reads, every
  // constant byte as stored, every output byte, once.
  int64_t read = input_read_once(ctx, op);
  if (op.ones_a) {
    read += op.matmul_k();  // the ones (B is the input, counted above)
  } else if (op.unit == Unit::kMatmul && !op.im2col) {
    read += tensor_bytes(ctx.graph.tensor(op.input2));
  }
  if (op.unit == Unit::kElementwise) {
    read += op.input2_is_constant ? int64_t(op.input2_constant.size())
                                  : tensor_bytes(ctx.graph.tensor(op.input2));
  }
  read += k.weight_stored + 4 * int64_t(op.bias.size()) + 8 * int64_t(op.bias64.size());
  read += 4 * int64_t(op.multiplier.size() + op.shift.size());             // multipliers, shifts
  read += 8 * int64_t(op.real_scale.size());                               // FC scales
  read += 4 * int64_t(op.fp32_scale.size());                               // ONNX float32 scales
  read += op.has_lut ? limits::kLutEntries : 0;                            // LUT
  // A producer writing its slice of a CONCATENATION writes only its own channels.
  const int64_t write = op.out_pixel_pitch
                            ? int64_t(op.out_shape.h) * op.out_shape.w * op.out_shape.c * op.out_elem()
                            : tensor_bytes(ctx.graph.tensor(op.output));
  rec.min_dma_bytes = read + write;
  // NACC_SPEC §8: max(MAC-array cycles, activation cycles, move-once bytes /
  // bandwidth) with the work spread over every core and the bandwidth the
  // lesser of the shared external port and the cores' own DMA ports.
  const int channels = op.split_channels();
  const int64_t mac = bound_mac_cycles(ctx, op);
  const int64_t act = compiler::act_cycles(op, op.out_shape.h, op.out_shape.w, channels);
  rec.bound_cycles = cost::op_bound_cycles(mac, act, read, write, hw);
}

// ---- driver --------------------------------------------------------------------

void check_options(const CompileOptions& o) {
  validate_hw_config(o.hw);  // the device's own limits (runtime/program.h)
  const int cores = o.hw.cores;
  check_arg(o.force_cores == 0 || (o.force_cores <= cores && (o.force_cores & (o.force_cores - 1)) == 0),
            "compile: force_cores ", o.force_cores, " must be 0 or a power of two <= cores ", cores);
  check_arg(o.force_mode >= -1 && o.force_mode <= 3, "compile: force_mode ", o.force_mode,
            " must be -1, 0, 1, 2 or 3");
}

compiler::PlanOptions plan_options(const CompileOptions& o) {
  compiler::PlanOptions p;
  p.allow_double_buffer = o.double_buffer;
  p.force_cores = o.force_cores;
  p.force_mode = o.force_mode;
  return p;
}

// Re-checks the op with the capability rules (claim and compile share the
// predicate) and lowers it.
LoweredOp check_and_lower(const ir::Graph& g, int i, const CompileOptions& o) {
  // The rules see the SRAM the compiler tiles to, with its buffer alignment.
  const auto violations = support::check_op(g, i, support::support_config(o.hw));
  if (!violations.empty()) {
    std::string msg = violations[0].message;
    for (size_t v = 1; v < violations.size(); ++v) msg += "; " + violations[v].message;
    throw Unsupported(msg);
  }
  return compiler::lower_op(g, i);
}

void resolve_io(const ir::Graph& g, std::vector<int>* inputs, std::vector<int>* outputs) {
  *inputs = g.inputs;
  *outputs = g.outputs;
  if (!inputs->empty() || !outputs->empty()) return;
  std::set<int> produced, consumed;
  for (const ir::Op& op : g.ops) {
    for (int id : op.outputs) produced.insert(id);
    for (int id : op.inputs) {
      if (id >= 0) consumed.insert(id);
    }
  }
  for (int id : consumed) {
    if (!produced.count(id) && !g.tensor(id).is_constant()) inputs->push_back(id);
  }
  for (int id : produced) {
    if (!consumed.count(id)) outputs->push_back(id);
  }
}

void check_partition(const ir::Graph& g, const std::vector<int>& inputs,
                     const std::vector<int>& outputs) {
  std::vector<char> ready(g.tensors.size(), 0);
  for (int id : inputs) {
    const ir::Tensor& t = g.tensor(id);
    check_arg(!t.is_constant(), "compile: partition input '", t.name, "' is a constant");
    ready[id] = 1;
  }
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const ir::Op& op = g.ops[i];
    for (int id : op.inputs) {
      if (id < 0 || g.tensor(id).is_constant()) continue;
      check_arg(ready[id], "compile: ", op.display_type(), " ", g.op_label(int(i)), " reads '",
                g.tensor(id).name,
                "', which is neither a partition input nor produced by an earlier op "
                "(ops must be in topological order)");
    }
    for (int id : op.outputs) ready[id] = 1;
  }
  for (int id : outputs) {
    check_arg(ready[id], "compile: partition output '", g.tensor(id).name, "' is never produced");
  }
  std::set<int> seen;
  for (int id : inputs) check_arg(seen.insert(id).second, "compile: input '", g.tensor(id).name, "' listed twice");
  seen.clear();
  for (int id : outputs) check_arg(seen.insert(id).second, "compile: output '", g.tensor(id).name, "' listed twice");
  // int8, or int16 (16x8 feature maps, zero point 0; NACC_SPEC §9).
  const auto io_ok = [&](const ir::Tensor& t) {
    return (t.dtype == ir::DType::kInt8 ||
            (t.dtype == ir::DType::kInt16 && t.quant.zero_points.size() == 1 &&
             t.quant.zero_points[0] == 0)) &&
           t.quant.scales.size() == 1 && t.is_static();
  };
  for (int id : inputs) {
    const ir::Tensor& t = g.tensor(id);
    check_arg(io_ok(t), "compile: partition input '", t.name,
              "' must be a static per-tensor int8 tensor (or int16 with zero point 0)");
  }
  for (int id : outputs) {
    const ir::Tensor& t = g.tensor(id);
    check_arg(io_ok(t), "compile: partition output '", t.name,
              "' must be a static per-tensor int8 tensor (or int16 with zero point 0)");
  }
}

// ---- CONCATENATION (compiler/lower.h lower_concatenation) --------------------------

// The rules, then the op's lowered parts (compiler/lower.h lower_op_parts).
std::vector<LoweredOp> check_and_lower_parts(const ir::Graph& g, int i, const CompileOptions& o) {
  check_and_lower(g, i, o);  // the rules, and the first part's lowering
  return compiler::lower_op_parts(g, i);
}

// An AVERAGE_POOL_2D's region passes or a convolution's group / phase parts: the input and output moved once, the
// constants of every pass, the passes' MAC-array cycles spread over every core.
void fill_region_record(const Context& ctx, const std::vector<const LoweredOp*>& parts,
                        const std::vector<const OpConstants*>& consts, OpRecord& rec) {
  const HwConfig& hw = ctx.options.hw;
  // Every runtime tensor the parts read, and every one they write, once (a
  // space-to-depth convolution's staging tensor both).
  std::set<int> reads, writes;
  for (const LoweredOp* p : parts) {
    reads.insert(p->input);
    writes.insert(p->output);
  }
  // A layout conversion's staging areas are its own detour, not data the op
  // must move (docs/compiler.md "Layout conversion").
  for (const LoweredOp* p : parts) {
    if (p->unit == Unit::kLayout && p->input2 >= 0) {
      reads.erase(p->input2);
      writes.erase(p->input2);
    }
  }
  int64_t read = 0, write = 0, mac = 0;
  for (int id : reads) read += tensor_bytes(ctx.graph.tensor(id));
  for (int id : writes) write += tensor_bytes(ctx.graph.tensor(id));
  rec.macs = 0;
  rec.weight_bytes = rec.weight_bytes_stored = 0;
  rec.lowering = parts[0]->lowering;
  for (size_t i = 0; i < parts.size(); ++i) {
    const LoweredOp& p = *parts[i];
    read += consts[i]->weight_stored + 4 * int64_t(p.multiplier.size() + p.shift.size());
    mac += compiler::mac_cycles(p, p.out_shape.h, p.out_shape.w, p.split_channels());
    rec.macs += useful_macs(p);
    rec.weight_bytes += consts[i]->weight_raw;
    rec.weight_bytes_stored += consts[i]->weight_stored;
  }
  rec.min_dma_bytes = read + write;
  rec.bound_cycles = cost::op_bound_cycles(mac, 0, read, write, hw);
}

// Every input and the output moved once; the parts' copy passes spread over
// every core (NACC_SPEC §8 bound, as fill_record).
void fill_concat_record(const Context& ctx, const std::vector<const LoweredOp*>& parts, OpRecord& rec) {
  const HwConfig& hw = ctx.options.hw;
  int64_t read = 0, mac = 0;
  for (const LoweredOp* p : parts) {
    read += tensor_bytes(ctx.graph.tensor(p->input));
    mac += compiler::mac_cycles(*p, p->out_shape.h, p->out_shape.w, p->split_channels());
  }
  const int64_t write = parts.empty() ? 0 : tensor_bytes(ctx.graph.tensor(parts[0]->output));
  rec.min_dma_bytes = read + write;
  rec.bound_cycles = cost::op_bound_cycles(mac, 0, read, write, hw);
}

// Producers that write their output straight into a CONCATENATION's output
// at the input's channel offset (OFM pixel pitch = the output's channels), so
// the concatenation's copy pass for that input disappears. Applies to an
// input produced by one op of this partition (not a view, not another
// CONCATENATION, and lowered with the tensor's own NHWC layout), read only by
// this CONCATENATION and only once, and neither a partition input nor output.
// The graph is rewritten so that memory planning sees the producer writing the
// CONCATENATION's output (its lifetime starts there) and the old tensor
// unused; `lowered` loses the input's copy part.
void alias_concat_producers(ir::Graph& g, const std::vector<int>& inputs,
                            const std::vector<int>& outputs, std::vector<LoweredOp>& lowered) {
  const auto is_io = [&](int id) {
    return std::count(inputs.begin(), inputs.end(), id) || std::count(outputs.begin(), outputs.end(), id);
  };
  std::vector<int> readers(g.tensors.size(), 0), producer(g.tensors.size(), -1);
  for (int i = 0; i < int(g.ops.size()); ++i) {
    for (int id : g.ops[i].inputs) {
      if (id >= 0) ++readers[id];
    }
    for (int id : g.ops[i].outputs) producer[id] = i;
  }
  std::vector<char> drop(lowered.size(), 0);
  for (int c = 0; c < int(g.ops.size()); ++c) {
    ir::Op& cat = g.ops[c];
    if (cat.kind != ir::OpKind::kConcatenation) continue;
    const int out = cat.outputs[0];
    for (size_t k = 0; k < cat.inputs.size(); ++k) {
      const int t = cat.inputs[k];
      const int p = t >= 0 ? producer[t] : -1;
      if (p < 0 || readers[t] != 1 || is_io(t) || g.ops[p].outputs.size() != 1 ||
          g.ops[p].kind == ir::OpKind::kConcatenation) {
        continue;
      }
      // The producer's single lowered op and this input's copy part.
      int prod = -1, part = -1;
      for (int l = 0; l < int(lowered.size()); ++l) {
        if (lowered[l].op_index == p) prod = prod == -1 ? l : -2;
        if (lowered[l].op_index == c && lowered[l].input == t && !drop[l]) part = l;
      }
      if (prod < 0 || part < 0) continue;
      // A part placed by rows or columns (a CONCATENATION on another axis)
      // keeps its copy, unless it is the dense first block of the output.
      if (lowered[part].out_byte_offset != 0 || lowered[part].out_row_pitch != 0) continue;
      LoweredOp& lp = lowered[prod];
      const ir::Tensor& tt = g.tensor(t);
      // (The layout unit writes whole pixels of its own tensor: no slice.)
      if (lp.unit == Unit::kView || lp.unit == Unit::kLayout || lp.output != t ||
          lp.out_pixel_pitch != 0 ||
          lp.out_shape.c != tt.shape.back() ||
          int64_t(lp.out_shape.h) * lp.out_shape.w * lp.out_shape.c != tt.elements()) {
        continue;
      }
      lp.output = out;
      lp.out_channel_offset = lowered[part].out_channel_offset;
      lp.out_pixel_pitch = lowered[part].out_pixel_pitch;
      drop[part] = 1;
      g.ops[p].outputs[0] = out;
      cat.inputs[k] = -1;
    }
  }
  std::vector<LoweredOp> kept;
  for (size_t l = 0; l < lowered.size(); ++l) {
    if (!drop[l]) kept.push_back(std::move(lowered[l]));
  }
  lowered = std::move(kept);
}

// ---- PAD folding (support/pad_fold.h) ---------------------------------------------

// The partition with every PAD that folds into its consumer removed from the
// data flow: the consumer reads the PAD's input with the PAD's height/width
// padding added to its own, and the PAD keeps no inputs or outputs (no
// storage, no command). folded[i] is 1 for such a PAD. The PAD passed the
// rules on the original partition (pad_lowering); its consumer is re-checked
// on the rewritten graph by check_and_lower.
ir::Graph fold_pads(const ir::Graph& g, const std::vector<int>& outputs, const CompileOptions& o,
                    std::vector<char>* folded) {
  ir::Graph out = g;
  out.outputs = outputs;  // a PAD output that leaves the partition cannot fold
  folded->assign(g.ops.size(), 0);
  const support::SupportConfig cfg = support::support_config(o.hw);
  for (int i = 0; i < int(g.ops.size()); ++i) {
    if (g.ops[i].kind != ir::OpKind::kPad) continue;
    const auto fold = support::pad_fold(out, i, cfg, nullptr);
    if (!fold) continue;
    ir::Op& conv = out.ops[fold->consumer];
    conv.inputs[0] = out.ops[i].inputs[0];
    conv.attrs.padding.top += fold->pads.top;
    conv.attrs.padding.bottom += fold->pads.bottom;
    conv.attrs.padding.left += fold->pads.left;
    conv.attrs.padding.right += fold->pads.right;
    out.ops[i].inputs.clear();
    out.ops[i].outputs.clear();
    (*folded)[i] = 1;
  }
  out.outputs = g.outputs;
  return out;
}

// ---- space-to-depth staging (compiler/lower.h lower_space_to_depth) ------------------

// Each op whose parts use compiler::kStagingTensor gets its staging tensor in
// `graph`: the shape of the part that reads it; a space-to-depth gather
// (read as a part's input): int8 with the op input's quantization; the alpha
// term of an int16 LEAKY_RELU (read as the second operand of its sum): int16
// with the op output's; an int16 MEAN split or QUANTIZE int16 -> int8
// (LoweredOp::staging_shape): int16 of that shape. The parts are pointed at
// it. Memory planning keeps it
// live during the op (its parts read and write it).
void add_staging_tensors(ir::Graph& graph, std::vector<LoweredOp>& lowered) {
  for (size_t i = 0; i < lowered.size(); ++i) {
    const bool first_operand = lowered[i].input == compiler::kStagingTensor;
    if (!first_operand && lowered[i].input2 != compiler::kStagingTensor) continue;
    const LoweredOp& reader = lowered[i];
    const ir::Op& op = graph.ops[reader.op_index];
    ir::Tensor t;
    const bool declared = reader.staging_shape.n != 0;
    const bool layout = reader.unit == Unit::kLayout;  // int8 bytes (LayoutConversion)
    const Shape4 shape = declared ? reader.staging_shape : reader.in_shape;
    const char* suffix = layout      ? "/vnchwconv"
                         : !declared ? (first_operand ? "/space_to_depth" : "/leaky_relu_alpha")
                         : op.kind == ir::OpKind::kMean ? "/mean_split"
                                                        : "/int16_staging";
    t.name = str_cat(graph.tensor(op.outputs[0]).name, suffix);
    t.shape = {1, shape.h, shape.w, shape.c};
    t.dtype = (declared && !layout) || reader.int16_maps ? ir::DType::kInt16 : ir::DType::kInt8;
    t.quant = graph.tensor(first_operand ? op.inputs[0] : op.outputs[0]).quant;
    const int id = int(graph.tensors.size());
    graph.tensors.push_back(std::move(t));
    for (LoweredOp& l : lowered) {
      if (l.op_index != reader.op_index) continue;
      if (l.input == compiler::kStagingTensor) l.input = id;
      if (l.input2 == compiler::kStagingTensor) l.input2 = id;
      if (l.output == compiler::kStagingTensor) l.output = id;
    }
  }
}

// ---- compile() per op kind ---------------------------------------------------------

// The lowered ops of graph.ops[i], appended to *lowered in op order: none for
// a PAD folded into its consumer, one part per input for a CONCATENATION
// (lower.h lower_concatenation), one per output for a SLICE (lower_slice), one
// otherwise (a view included).
// The estimated cycles of an op's parts: the layout unit's commands counted
// (layout_unit_cycles), every other part's chosen tile plan.
int64_t parts_cycles(const std::vector<LoweredOp>& parts, const CompileOptions& options) {
  int64_t cycles = 0;
  for (const LoweredOp& p : parts) {
    cycles += p.unit == Unit::kLayout
                  ? layout_unit_cycles(p, options.hw)
                  : compiler::choose_lowering(p, options.hw, plan_options(options),
                                              compiler::ConvLowering::kAuto)
                        .plan.estimate.cycles;
  }
  return cycles;
}

// An NCHW <-> NHWC TRANSPOSE: the layout unit's passes or the DMA copy
// passes, whichever the estimate prices lower (a tie keeps the unit), or
// the one options.layout_lowering forces (docs/compiler.md "Layout
// conversion"). Both are device work; the unit pays for 16 channels per
// pixel and 512 bytes each way per iteration, the copy passes per byte.
std::vector<LoweredOp> lower_transpose_cheaper(const ir::Graph& graph, int i,
                                               const CompileOptions& options) {
  using LL = CompileOptions::LayoutLowering;
  std::vector<LoweredOp> unit = check_and_lower_parts(graph, i, options);
  const bool on_unit = std::any_of(unit.begin(), unit.end(),
                                   [](const LoweredOp& p) { return p.unit == Unit::kLayout; });
  if (!on_unit || options.layout_lowering == LL::kUnit) return unit;
  // The copy passes: the TRANSPOSE's loops, or one pass per channel.
  std::vector<LoweredOp> best = unit;
  int64_t best_cycles = options.layout_lowering == LL::kCopy ? -1 : parts_cycles(unit, options);
  for (const auto form : {compiler::TransposeForm::kCopy, compiler::TransposeForm::kChannelCopies}) {
    std::vector<LoweredOp> copy;
    try {
      copy = compiler::lower_transpose(graph, i, form);
    } catch (const Unsupported&) {
      continue;  // this form cannot express it (pitches, pass count)
    }
    const int64_t cycles = parts_cycles(copy, options);
    if (best_cycles < 0 || cycles < best_cycles) {
      best = std::move(copy);
      best_cycles = cycles;
    }
  }
  return best;
}

void lower_into(const ir::Graph& graph, int i, bool folded, const CompileOptions& options,
                std::vector<LoweredOp>* lowered) {
  if (folded) return;
  const ir::OpKind kind = graph.ops[i].kind;
  if (kind == ir::OpKind::kTranspose) {
    for (LoweredOp& part : lower_transpose_cheaper(graph, i, options)) {
      lowered->push_back(std::move(part));
    }
    return;
  }
  if (kind == ir::OpKind::kConcatenation || kind == ir::OpKind::kAveragePool2D ||
      kind == ir::OpKind::kConv2D || kind == ir::OpKind::kDepthwiseConv2D ||
      kind == ir::OpKind::kSlice || kind == ir::OpKind::kResizeNearest ||
      kind == ir::OpKind::kSpaceToDepth || kind == ir::OpKind::kDepthToSpace ||
      kind == ir::OpKind::kLeakyRelu || kind == ir::OpKind::kTransposeConv ||
      kind == ir::OpKind::kResizeBilinear || kind == ir::OpKind::kTranspose ||
      kind == ir::OpKind::kMean || kind == ir::OpKind::kQuantize || kind == ir::OpKind::kMul) {
    // parts, AVERAGE_POOL_2D region passes, grouped / dilated convolution parts
    for (LoweredOp& part : check_and_lower_parts(graph, i, options)) {
      lowered->push_back(std::move(part));
    }
    return;
  }
  lowered->push_back(check_and_lower(graph, i, options));
}

// The record of graph.ops[i] as its words begin: name ("#i" when unnamed),
// kind, first word.
OpRecord begin_record(const Context& ctx, const ir::Graph& graph, int i) {
  OpRecord rec;
  rec.name = graph.ops[i].name.empty() ? str_cat("#", i) : graph.ops[i].name;
  rec.kind = ir::op_kind_name(graph.ops[i].kind);
  rec.first_word = uint32_t(ctx.em.words().size());
  return rec;
}

// A CONCATENATION, or an AVERAGE_POOL_2D's region passes or a grouped /
// dilated convolution's parts (`regions`): each part's constants and
// commands, one record for all.
void emit_parts(Context& ctx, const std::vector<const LoweredOp*>& parts,
                const std::vector<const TilePlan*>& plans, bool regions, OpRecord& rec) {
  std::vector<OpConstants> consts(parts.size());
  for (size_t p = 0; p < parts.size(); ++p) {
    add_op_constants(ctx, *parts[p], consts[p]);
    emit_op(ctx, *parts[p], *plans[p], consts[p]);
  }
  rec.end_word = uint32_t(ctx.em.words().size());
  if (regions) {
    std::vector<const OpConstants*> kp;
    for (const OpConstants& k : consts) kp.push_back(&k);
    fill_region_record(ctx, parts, kp, rec);
  } else {
    fill_concat_record(ctx, parts, rec);
  }
}

// Any other op: its constants and commands; a view (RESHAPE) has none, or a
// copy where memory planning could not alias its output (`copy`). The record
// says where the output sits once the op's words have run (debug dumps).
void emit_single(Context& ctx, const LoweredOp& op, const TilePlan& plan, bool copy,
                 OpRecord& rec) {
  OpConstants k;
  if (op.unit == Unit::kView) {
    if (copy) {
      ctx.copy(ctx.mem.storage.at(op.input), ctx.mem.storage.at(op.output),
               tensor_bytes(ctx.graph.tensor(op.output)));
    }
  } else {
    add_op_constants(ctx, op, k);
    emit_op(ctx, op, plan, k);
  }
  rec.end_word = uint32_t(ctx.em.words().size());
  fill_record(ctx, op, k, rec);
  const ir::Tensor& out = ctx.graph.tensor(op.output);
  const compiler::Storage& where = ctx.mem.storage.at(op.output);
  if (where.valid()) {
    rec.output_name = out.name;
    rec.output_shape = out.shape;
    rec.output_region = where.region;
    rec.output_offset = where.offset;
    rec.output_size = tensor_bytes(out);
  }
}

}  // namespace

compiler::TilePlan plan_op(const ir::Graph& graph, int op_index, const CompileOptions& options) {
  check_options(options);
  const LoweredOp op = check_and_lower(graph, op_index, options);
  check_arg(op.unit != Unit::kView, "plan_op: ", op.label, " moves no data (a view)");
  return compiler::choose_lowering(op, options.hw, plan_options(options), options.conv_lowering).plan;
}

Program compile(const ir::Graph& partition, const CompileOptions& options) {
  check_options(options);
  const compiler::PlanMemoScope plan_memo;  // identical layers are planned once
  partition.validate();
  std::vector<int> inputs, outputs;
  resolve_io(partition, &inputs, &outputs);
  check_partition(partition, inputs, outputs);

  // PADs that fold into their convolution: checked on the partition as given,
  // then removed from the data flow of the graph the rest compiles.
  for (int i = 0; i < int(partition.ops.size()); ++i) {
    if (partition.ops[i].kind == ir::OpKind::kPad) {
      const auto v = support::check_op(partition, i, support::support_config(options.hw));
      if (!v.empty()) throw Unsupported(v[0].message);
    }
  }
  std::vector<char> folded;
  ir::Graph graph = fold_pads(partition, outputs, options, &folded);

  std::vector<LoweredOp> lowered;
  for (int i = 0; i < int(graph.ops.size()); ++i) lower_into(graph, i, folded[i], options, &lowered);
  add_staging_tensors(graph, lowered);

  alias_concat_producers(graph, inputs, outputs, lowered);

  // Plan every op; a CONV_2D takes the cheapest of its lowerings (direct,
  // matrix, im2col: compiler/conv_modes.h) — direct when it writes a slice of
  // a CONCATENATION (strided OFM writes are a direct-mode feature).
  std::vector<TilePlan> plans;
  for (LoweredOp& op : lowered) {
    if (op.unit == Unit::kView || op.unit == Unit::kLayout) {  // no tiles
      plans.emplace_back();
      continue;
    }
    const auto mode = op.out_pixel_pitch ? compiler::ConvLowering::kDirect : options.conv_lowering;
    compiler::ChosenLowering c = compiler::choose_lowering(op, options.hw, plan_options(options), mode);
    op = std::move(c.op);
    plans.push_back(std::move(c.plan));
  }

  Context ctx(graph, options);
  ctx.mem = compiler::plan_memory(graph, lowered, inputs, outputs);

  Program prog;
  prog.hw = options.hw;
  std::set<int> copy_ops(ctx.mem.copy_ops.begin(), ctx.mem.copy_ops.end());
  size_t next_lowered = 0;
  for (int i = 0; i < int(graph.ops.size()); ++i) {
    OpRecord rec = begin_record(ctx, graph, i);
    if (folded[i]) {  // no command: its padding is in the consumer's registers
      rec.end_word = rec.first_word;
    } else if (graph.ops[i].kind == ir::OpKind::kConcatenation ||
               (next_lowered + 1 < lowered.size() && lowered[next_lowered + 1].op_index == i)) {
      std::vector<const LoweredOp*> parts;
      std::vector<const TilePlan*> part_plans;
      for (; next_lowered < lowered.size() && lowered[next_lowered].op_index == i; ++next_lowered) {
        parts.push_back(&lowered[next_lowered]);
        part_plans.push_back(&plans[next_lowered]);
      }
      emit_parts(ctx, parts, part_plans,
                 graph.ops[i].kind != ir::OpKind::kConcatenation, rec);
    } else {
      const size_t li = next_lowered++;
      emit_single(ctx, lowered[li], plans[li], copy_ops.count(lowered[li].op_index) > 0, rec);
    }
    prog.ops.push_back(rec);
  }
  for (const auto& c : ctx.mem.end_copies) ctx.copy(c.src, c.dst, c.src.size);
  ctx.em.stop();

  prog.commands = ctx.em.words();
  prog.constants = ctx.pool.bytes();
  prog.regions = ctx.mem.regions;
  if (!prog.constants.empty()) {
    prog.regions[compiler::kConstantRegion] =
        RegionDesc{RegionKind::kConstant, -1, int64_t(prog.constants.size())};
  }
  prog.inputs = ctx.mem.inputs;
  prog.outputs = ctx.mem.outputs;
  return prog;
}

}  // namespace nacc

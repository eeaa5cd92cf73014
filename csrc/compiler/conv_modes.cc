// CONV_2D lowerings onto the matrix unit and the choice between them (see
// conv_modes.h, docs/compiler.md §2).
#include "compiler/conv_modes.h"

#include <algorithm>

#include "arch/cost_model.h"
#include "arch/fields.h"
#include "arch/limits.h"
#include "common/error.h"

namespace nacc::compiler {

namespace {

// NACC_MATRIX_A/B x and y sizes (16 bits); NACC_FULL_CONV_PARA.FULL_KER_SIZE
// holds groups - 1 (8 bits).
constexpr int64_t kMaxMatrixDim = field_max(fields::NACC_MATRIX_A::MATRIX_A_XSIZE);
constexpr int64_t kMaxFcGroups = field_max(fields::NACC_FULL_CONV_PARA::FULL_KER_SIZE) + 1;
static_assert(kMaxMatrixDim == 65535 && kMaxFcGroups == 256);

using cost::ceil_div;

}  // namespace

ConvLowering parse_conv_lowering(const std::string& name) {
  if (name == "auto") return ConvLowering::kAuto;
  if (name == "direct") return ConvLowering::kDirect;
  if (name == "matrix") return ConvLowering::kMatrix;
  if (name == "im2col") return ConvLowering::kIm2col;
  if (name == "subsampled") return ConvLowering::kSubsampled;
  throw InvalidArgument(
      str_cat("conv lowering '", name, "' is not auto, direct, matrix, im2col or subsampled"));
}

std::optional<LoweredOp> matrix_mode_of(const LoweredOp& conv) {
  // 16-bit feature maps run on NPU_OP_CONV / NPU_OP_DEPTHWISE only (NACC_SPEC §9);
  // MAC_FP32 is NPU_OP_CONV's.
  if (conv.int16_maps || conv.mac_fp32) return std::nullopt;
  if (conv.unit != Unit::kConv || conv.in_pixel_pitch || conv.in_row_pitch || conv.kernel_h != 1 || conv.kernel_w != 1 || conv.stride_h != 1 ||
      conv.stride_w != 1 || conv.pad_top || conv.pad_left || conv.pad_bottom || conv.pad_right) {
    return std::nullopt;
  }
  const int64_t m = int64_t(conv.out_shape.h) * conv.out_shape.w;
  if (m > limits::kMaxFeatureMapDim || ceil_div(conv.in_shape.c, limits::kMacLanes) > kMaxFcGroups) {
    return std::nullopt;
  }
  LoweredOp l = conv;
  l.unit = Unit::kFullyConnected;
  l.in_shape = Shape4{1, int(m), 1, conv.in_shape.c};
  l.out_shape = Shape4{1, int(m), 1, conv.out_shape.c};
  l.real_scale.clear();  // the conv's multiplier/shift output stage (QUANT_REAL_SCALE = 0)
  l.lowering = "matrix";
  return l;
}

std::optional<LoweredOp> im2col_of(const LoweredOp& conv) {
  // NPU_OP_MATMUL reads B uncompressed as int8; int4 weights go through the
  // weight path of the convolution and fully-connected units (NACC_SPEC §9).
  if (conv.unit != Unit::kConv || conv.int4_weights || conv.int16_maps || conv.mac_fp32 ||
      conv.in_pixel_pitch ||
      conv.in_row_pitch || conv.in_byte_offset || conv.out_pixel_pitch) {
    return std::nullopt;  // the gather reads a dense input (grouped / dilated parts do not)
  }
  const int64_t taps = int64_t(conv.kernel_h) * conv.kernel_w;
  const int64_t k = taps * conv.in_shape.c;
  const int64_t m = int64_t(conv.out_shape.h) * conv.out_shape.w;
  if (k > kMaxMatrixDim || m > kMaxMatrixDim) return std::nullopt;
  if (ceil_div(k, limits::kMacLanes) >= taps * ceil_div(conv.in_shape.c, limits::kMacLanes)) {
    return std::nullopt;  // no fewer passes through the array
  }
  LoweredOp l = conv;
  l.unit = Unit::kMatmul;
  l.im2col = true;
  l.b_zero_point = 0;
  const int n = conv.out_shape.c;
  l.weights.assign(size_t(k) * size_t(n), 0);  // OHWI [N, K] -> [K, N]
  for (int o = 0; o < n; ++o) {
    for (int64_t i = 0; i < k; ++i) l.weights[size_t(i) * n + size_t(o)] = conv.weights[size_t(o) * k + size_t(i)];
  }
  l.lowering = "im2col";
  return l;
}

std::optional<LoweredOp> subsampled_of(const LoweredOp& conv) {
  if (conv.unit != Unit::kConv || conv.kernel_h != 1 || conv.kernel_w != 1 ||
      (conv.stride_h == 1 && conv.stride_w == 1) || conv.pad_top || conv.pad_left ||
      conv.pad_bottom || conv.pad_right || conv.in_pixel_pitch || conv.in_row_pitch ||
      conv.in_tensor_w || conv.in_y0 || conv.in_x0 || conv.out_tensor_w || conv.out_y0 ||
      conv.out_x0) {
    return std::nullopt;
  }
  LoweredOp l = conv;
  l.in_pixel_pitch = int64_t(conv.stride_w) * conv.in_shape.c * conv.elem();  // bytes
  l.in_row_pitch = int64_t(conv.stride_h) * conv.in_shape.w * conv.in_shape.c * conv.elem();
  l.in_shape = Shape4{1, conv.out_shape.h, conv.out_shape.w, conv.in_shape.c};
  l.stride_h = l.stride_w = 1;
  l.lowering = "subsampled";
  return l;
}

std::optional<LoweredOp> pixel_rows_of(const LoweredOp& op) {
  if ((op.unit != Unit::kElementwise && op.unit != Unit::kActivation) || op.out_shape.w == 1 ||
      op.out_pixel_pitch || op.in_pixel_pitch || op.in_row_pitch || op.ones_a ||
      op.in_tensor_w || op.in_y0 || op.in_x0 || op.out_tensor_w || op.out_y0 || op.out_x0 ||
      op.in_shape.h != op.out_shape.h || op.in_shape.w != op.out_shape.w) {
    return std::nullopt;
  }
  const int64_t m = int64_t(op.out_shape.h) * op.out_shape.w;
  if (m > limits::kMaxFeatureMapDim) return std::nullopt;
  LoweredOp l = op;
  l.in_shape = Shape4{1, int(m), 1, op.in_shape.c};
  l.out_shape = Shape4{1, int(m), 1, op.out_shape.c};
  return l;
}

std::optional<LoweredOp> element_rows_of(const LoweredOp& op, int cores) {
  if ((op.unit != Unit::kElementwise && op.unit != Unit::kActivation) || op.input2_broadcast ||
      op.out_pixel_pitch || op.in_pixel_pitch || op.in_row_pitch || op.ones_a ||
      op.in_tensor_w || op.in_y0 || op.in_x0 || op.out_tensor_w || op.out_y0 || op.out_x0 ||
      op.out_channel_offset || op.in_byte_offset || op.out_byte_offset || op.out_row_pitch ||
      op.in_shape.h != op.out_shape.h ||
      op.in_shape.w != op.out_shape.w || op.in_shape.c != op.out_shape.c || cores < 2) {
    return std::nullopt;
  }
  const int64_t total = int64_t(op.out_shape.h) * op.out_shape.w * op.out_shape.c;
  // The fewest rows that are a multiple of the cores with at most
  // kElementRowMax elements each.
  for (int64_t m = 1; m <= 64; ++m) {
    const int64_t rows = cores * m;
    if (rows > limits::kMaxFeatureMapDim) break;
    if (total % rows != 0 || total / rows > kElementRowMax) continue;
    if (rows == int64_t(op.out_shape.h) * op.out_shape.w) return std::nullopt;  // = pixel rows
    LoweredOp l = op;
    l.in_shape = Shape4{1, int(rows), 1, int(total / rows)};
    l.out_shape = l.in_shape;
    return l;
  }
  return std::nullopt;
}

std::optional<LoweredOp> ones_matmul_of(const LoweredOp& op) {
  // (The matrix unit has no 16-bit form.)
  if (op.unit != Unit::kDepthwise || op.depth_multiplier != 1 || op.int4_weights ||
      op.int16_maps || op.kernel_h != op.in_shape.h || op.kernel_w != op.in_shape.w || op.out_shape.h != 1 ||
      op.out_shape.w != 1 || op.pad_top || op.pad_left || op.pad_bottom || op.pad_right ||
      !op.bias.empty() || op.pool_fp32 || op.out_pixel_pitch || op.out_channel_offset ||
      op.in_pixel_pitch || op.in_row_pitch || op.in_tensor_w || op.in_y0 || op.in_x0 ||
      op.out_tensor_w || op.out_y0 || op.out_x0) {
    return std::nullopt;
  }
  if (!std::all_of(op.weights.begin(), op.weights.end(), [](int8_t w) { return w == 1; })) {
    return std::nullopt;
  }
  LoweredOp l = op;
  l.unit = Unit::kMatmul;
  l.ones_a = true;
  l.input2 = op.input;
  l.in_shape = Shape4{1, 1, 1, op.in_shape.h * op.in_shape.w};
  l.out_shape = Shape4{1, 1, 1, op.out_shape.c};
  l.b_zero_point = op.input_zero_point;
  l.input_zero_point = 0;  // A's (the ones)
  l.kernel_h = l.kernel_w = l.stride_h = l.stride_w = 1;
  l.weights.clear();
  l.lowering = "ones_matmul";
  return l;
}

ChosenLowering choose_lowering(const LoweredOp& op, const HwConfig& hw, const PlanOptions& options,
                               ConvLowering mode) {
  ChosenLowering best{op, plan_tiles(op, hw, options)};
  // A whole-input window has one output pixel, which mode 2 cannot share:
  // on more cores its ones-operand matmul splits the channels (mode 1).
  if (hw.cores > 1 && mode != ConvLowering::kDirect) {
    if (std::optional<LoweredOp> ones = ones_matmul_of(op)) {
      try {
        TilePlan plan = plan_tiles(*ones, hw, options);
        if (plan.estimate.cycles < best.plan.estimate.cycles) {
          best = ChosenLowering{std::move(*ones), std::move(plan)};
        }
      } catch (const Unsupported&) {
      }
      return best;
    }
  }
  // Pixel rows where the rows are too few to share across the cores evenly.
  if (hw.cores > 1 && op.out_shape.h < 8 * hw.cores && mode != ConvLowering::kDirect) {
    std::optional<LoweredOp> flat = pixel_rows_of(op);
    for (std::optional<LoweredOp> l : {flat, element_rows_of(op, hw.cores)}) {
      if (!l) continue;
      try {
        TilePlan plan = plan_tiles(*l, hw, options);
        if (plan.estimate.cycles < best.plan.estimate.cycles) {
          best = ChosenLowering{std::move(*l), std::move(plan)};
        }
      } catch (const Unsupported&) {
      }
    }
    if (flat) return best;
  }
  if (op.unit != Unit::kConv || mode == ConvLowering::kDirect) return best;
  // A subsampled 1x1 reads only the pixels it needs: it replaces the direct
  // convolution when it is estimated no slower, within the planner's 1 %
  // tolerance, while moving fewer bytes (tiling.h: the same rule as between
  // plans).
  if (mode == ConvLowering::kAuto || mode == ConvLowering::kSubsampled) {
    if (std::optional<LoweredOp> sub = subsampled_of(op)) {
      try {
        TilePlan plan = plan_tiles(*sub, hw, options);
        const PlanEstimate &a = plan.estimate, &b = best.plan.estimate;
        const bool no_slower = double(a.cycles) <= double(b.cycles) * (1.0 + kPlanCycleTolerance);
        const bool fewer_bytes = a.read_bytes + a.write_bytes < b.read_bytes + b.write_bytes;
        if (mode != ConvLowering::kAuto || a.cycles < b.cycles || (no_slower && fewer_bytes)) {
          best = ChosenLowering{std::move(*sub), std::move(plan)};
        }
      } catch (const Unsupported&) {
      }
    }
    if (mode == ConvLowering::kSubsampled) return best;
  }
  for (auto make : {matrix_mode_of, im2col_of}) {
    const bool is_matrix = make == &matrix_mode_of;
    if (mode == ConvLowering::kMatrix && !is_matrix) continue;
    if (mode == ConvLowering::kIm2col && is_matrix) continue;
    std::optional<LoweredOp> alt = make(op);
    if (!alt) continue;
    TilePlan plan;
    try {
      plan = plan_tiles(*alt, hw, options);
    } catch (const Unsupported&) {
      continue;  // no tile of this lowering fits the SRAM
    }
    if (mode != ConvLowering::kAuto || plan.estimate.cycles < best.plan.estimate.cycles) {
      best = ChosenLowering{std::move(*alt), std::move(plan)};
    }
  }
  return best;
}

}  // namespace nacc::compiler

// CONV_2D lowerings onto the matrix unit and the choice between them (see
// conv_modes.h, docs/compiler.md §2).
#include "compiler/conv_modes.h"

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
  throw InvalidArgument(str_cat("conv lowering '", name, "' is not auto, direct, matrix or im2col"));
}

std::optional<LoweredOp> matrix_mode_of(const LoweredOp& conv) {
  if (conv.unit != Unit::kConv || conv.kernel_h != 1 || conv.kernel_w != 1 || conv.stride_h != 1 ||
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
  if (conv.unit != Unit::kConv || conv.int4_weights) return std::nullopt;
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

ChosenLowering choose_lowering(const LoweredOp& op, const HwConfig& hw, const PlanOptions& options,
                               ConvLowering mode) {
  ChosenLowering best{op, plan_tiles(op, hw, options)};
  if (op.unit != Unit::kConv || mode == ConvLowering::kDirect) return best;
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

// Argument checks shared by every compute unit (see unit_checks.h). Messages
// are built only on failure.
#include "arch/unit_checks.h"

#include <cmath>
#include <limits>
#include <string>
#include <string_view>

#include "arch/fields.h"
#include "arch/limits.h"
#include "common/error.h"

namespace nacc {

int window_output_size(int in, int kernel, int stride, int pad_before, int pad_after) {
  check_arg(in >= 1, "window_output_size: input size ", in, " must be >= 1");
  check_arg(kernel >= 1, "window_output_size: kernel ", kernel, " must be >= 1");
  check_arg(stride >= 1, "window_output_size: stride ", stride, " must be >= 1");
  check_arg(pad_before >= 0 && pad_after >= 0, "window_output_size: padding ", pad_before, "/",
            pad_after, " must be >= 0");
  const int64_t padded = int64_t{in} + pad_before + pad_after;
  check_arg(padded >= kernel, "window_output_size: kernel ", kernel,
            " larger than the padded input ", padded, " (input ", in, " + padding ", pad_before,
            " + ", pad_after, ")");
  return static_cast<int>((padded - kernel) / stride + 1);
}

}  // namespace nacc

namespace nacc::detail {

namespace {

constexpr int32_t kInt8Min = std::numeric_limits<int8_t>::min();
constexpr int32_t kInt8Max = std::numeric_limits<int8_t>::max();

// "[<index>]" for an array entry, nothing for a scalar (index < 0).
std::string subscript(int index) { return index < 0 ? std::string() : str_cat("[", index, "]"); }

// "<op>: <name> <value> out of range [<lo>, <hi>] (<reg>)" unless lo <= value <= hi.
void check_in_range(const char* op, const char* name, int value, int lo, int hi,
                    const char* reg) {
  check_arg(value >= lo && value <= hi, op, ": ", name, " ", value, " out of range [", lo, ", ",
            hi, "] (", reg, ")");
}

}  // namespace

void check_not_null(const char* op, const char* name, const void* ptr) {
  check_arg(ptr != nullptr, op, ": ", name, " is null");
}

void check_extent(const char* op, const char* name, int value) {
  check_arg(value >= 1, op, ": ", name, " ", value, " must be >= 1");
}

void check_zero_point(const char* op, const char* name, int32_t zero_point, const char* source) {
  if (zero_point >= kInt8Min && zero_point <= kInt8Max) return;
  throw InvalidArgument(str_cat(op, ": ", name, " ", zero_point, " out of range [", kInt8Min,
                                ", ", kInt8Max, "]",
                                source != nullptr ? str_cat(" (", source, ")") : std::string()));
}

void check_offset(const char* op, const char* name, int32_t value, const char* reg) {
  check_arg(value >= limits::kMinOffset && value <= limits::kMaxOffset, op, ": ", name, " ",
            value, " out of range [", limits::kMinOffset, ", ", limits::kMaxOffset, "] (", reg,
            ", ", limits::kOffsetBits, "-bit signed)");
}

void check_scale(const char* op, const char* what, float scale) {
  check_arg(std::isfinite(scale) && scale > 0.0f, op, ": ", what,
            " scale must be positive and finite, got ", scale);
}

void check_multiplier(const char* op, const char* name, int index, int32_t multiplier,
                      const char* reg) {
  // The upper bound 2^31 - 1 is int32's: every int32 >= 0 is a valid multiplier.
  if (multiplier >= limits::kMinMultiplier) return;
  throw InvalidArgument(str_cat(op, ": ", name, subscript(index), " ", multiplier,
                                " out of range [", limits::kMinMultiplier, ", 2^",
                                limits::kMultiplierBits, ") (", reg, ")"));
}

void check_shift(const char* op, const char* name, int index, int shift, int max_shift,
                 const char* reg) {
  if (shift >= limits::kMinShift && shift <= max_shift) return;
  throw InvalidArgument(str_cat(op, ": ", name, subscript(index), " ", shift, " out of range [",
                                limits::kMinShift, ", ", max_shift, "] (", reg, ")"));
}

void check_act_range(const char* op, int32_t act_min, int32_t act_max) {
  check_arg(act_min >= kInt8Min && act_max <= kInt8Max && act_min <= act_max, op,
            ": activation range [", act_min, ", ", act_max, "] must satisfy ", kInt8Min,
            " <= act_min <= act_max <= ", kInt8Max, " (NACC_ACT_MIN, NACC_ACT_MAX)");
}

void check_output_stage(const char* op, const OutputStage& stage, int channels) {
  check_zero_point(op, "output_zero_point", stage.output_zero_point,
                   "NACC_FM_OFFSET.OUT_FM_OFFSET");
  check_act_range(op, stage.act_min, stage.act_max);
  switch (stage.kind) {
    case OutputStageKind::kFixedPoint:
      check_not_null(op, "multiplier", stage.multiplier);
      check_not_null(op, "shift", stage.shift);
      {
        // A branch-free scan first (this runs per replayed layer); the
        // per-channel checks below name the first bad channel.
        bool ok = true;
        for (int c = 0; c < channels; ++c) {
          ok &= stage.multiplier[c] >= limits::kMinMultiplier &&
                stage.shift[c] >= limits::kMinShift && stage.shift[c] <= limits::kMaxShift;
        }
        if (ok) return;
      }
      for (int c = 0; c < channels; ++c) {
        check_multiplier(op, "multiplier", c, stage.multiplier[c],
                         "QUANT_MUL array, NACC_SPEC §1");
        check_shift(op, "shift", c, stage.shift[c], limits::kMaxShift,
                    "QUANT_SHIFT array, NACC_SPEC §1");
      }
      return;
    case OutputStageKind::kRealScale:
      check_not_null(op, "effective_scale", stage.real_scale);
      for (int c = 0; c < channels; ++c) {
        check_arg(std::isfinite(stage.real_scale[c]) && stage.real_scale[c] >= 0.0, op,
                  ": effective_scale[", c, "] ", stage.real_scale[c],
                  " must be finite and >= 0");
      }
      return;
    case OutputStageKind::kFloat32:
      check_not_null(op, "scale", stage.float_scale);
      for (int c = 0; c < channels; ++c) {
        check_arg(std::isfinite(stage.float_scale[c]) && stage.float_scale[c] > 0.0f, op,
                  ": scale[", c, "] = ", stage.float_scale[c],
                  " must be finite and > 0 (QUANT_MUL array, QUANT_FP32_SCALE = 1)");
      }
      return;
    case OutputStageKind::kFixedPoint16x8:
      throw Unsupported(str_cat(op, ": the ", output_stage_kind_name(stage.kind),
                                " output stage is not modelled yet (NACC_SPEC §9)"));
  }
  throw InvalidArgument(str_cat(op, ": unknown output stage kind ", int(stage.kind)));
}

void check_batch(const char* op, const char* what, int n) {
  check_arg(n == limits::kMaxBatch, op, ": ", what, " batch ", n, " must be ", limits::kMaxBatch,
            " (NACC_SPEC §1: N = 1 only)");
}

void check_feature_map_extent(const char* op, std::string_view what, const char* dim,
                              int value) {
  check_arg(value >= 1 && value <= limits::kMaxFeatureMapDim, op, ": ", what, " ", dim, " ",
            value, " out of range [1, ", limits::kMaxFeatureMapDim,
            "] (16-bit feature-map size field, NACC_SPEC §3)");
}

void check_feature_map(const char* op, const char* name, const Shape4& s) {
  check_batch(op, name, s.n);
  check_feature_map_extent(op, name, "height", s.h);
  check_feature_map_extent(op, name, "width", s.w);
  check_feature_map_extent(op, name, "channels", s.c);
}

void check_window(const char* op, const WindowParams& w, int kernel_h, int kernel_w) {
  using namespace limits;
  check_in_range(op, "kernel_h", kernel_h, kMinKernel, kMaxKernel, "NACC_KERNEL.K_SIZE_Y");
  check_in_range(op, "kernel_w", kernel_w, kMinKernel, kMaxKernel, "NACC_KERNEL.K_SIZE_X");
  check_in_range(op, "stride_h", w.stride_h, kMinStride, kMaxStride, "NACC_KERNEL.K_STRIDE_Y");
  check_in_range(op, "stride_w", w.stride_w, kMinStride, kMaxStride, "NACC_KERNEL.K_STRIDE_X");
  check_in_range(op, "pad_top", w.pad_top, 0, kMaxPadding, "NACC_PADDING.PAD_Y");
  check_in_range(op, "pad_bottom", w.pad_bottom, 0, kMaxPadding, "NACC_PADDING.PAD_Y");
  check_in_range(op, "pad_left", w.pad_left, 0, kMaxPadding, "NACC_PADDING.PAD_X");
  check_in_range(op, "pad_right", w.pad_right, 0, kMaxPadding, "NACC_PADDING.PAD_X");
}

void check_avg_pool_window(const char* op, int kernel_h, int kernel_w, const WindowParams& w,
                           bool float32) {
  using namespace limits;
  if (float32) return;
  check_arg(kernel_h == kAvgPoolKernel && kernel_w == kAvgPoolKernel, op, ": kernel ", kernel_h,
            "x", kernel_w, " not supported, average pooling is ", kAvgPoolKernel, "x",
            kAvgPoolKernel, " only (NACC_SPEC §2)");
  check_arg(w.stride_h == kAvgPoolStride && w.stride_w == kAvgPoolStride, op, ": stride ",
            w.stride_h, "x", w.stride_w, " not supported, average pooling is stride ",
            kAvgPoolStride, " only (NACC_SPEC §2)");
}

Shape4 window_output_shape(const char* op, const Shape4& in, int kernel_h, int kernel_w,
                           const WindowParams& w, int out_c) {
  const int padded_h = in.h + w.pad_top + w.pad_bottom;
  const int padded_w = in.w + w.pad_left + w.pad_right;
  check_arg(padded_h >= kernel_h && padded_w >= kernel_w, op, ": kernel ", kernel_h, "x",
            kernel_w, " larger than the padded input ", padded_h, "x", padded_w,
            ", no output position (input ", in.h, "x", in.w, ", padding top/bottom ", w.pad_top,
            "/", w.pad_bottom, ", left/right ", w.pad_left, "/", w.pad_right, ")");
  return {1, window_output_size(in.h, kernel_h, w.stride_h, w.pad_top, w.pad_bottom),
          window_output_size(in.w, kernel_w, w.stride_w, w.pad_left, w.pad_right), out_c};
}

void check_output_shape(const char* op, const Shape4& expected, const Shape4& actual) {
  if (actual == expected) return;  // the message is formatted only on failure
  check_arg(false, op, ": output shape ", actual.str(), " does not match the ", "expected ",
            expected.str());
}

}  // namespace nacc::detail

namespace nacc {

void validate_activation_params(const ActivationParams& p) {
  const char* op = "activation_s8";
  switch (p.mode) {
    case ActMode::RELU:
    case ActMode::RELU6:
    case ActMode::NONE:
      break;
    case ActMode::LUT:
      check_arg(p.lut != nullptr, op,
                ": ACT_MODE LUT (4'b0101) needs a 256-entry table (NACC_IN_ACT_DMA_ADDR)");
      break;
    case ActMode::TANH:
    case ActMode::SIGMOID:
      throw Unsupported(str_cat(op, ": ACT_MODE ", act_mode_name(p.mode), " (",
                                static_cast<int>(p.mode),
                                ") is the hardware's q7 (ACT_INT_W) function, not an int8 "
                                "one: NPU_OP_ACTIVATION runs it as CMSIS-NN's "
                                "arm_nn_activations_direct_q7 (docs/device_model.md §4); "
                                "int8 TANH / LOGISTIC run through ACT_MODE LUT (5) with "
                                "lut_tflite_tanh / lut_tflite_logistic"));
    default:
      throw InvalidArgument(str_cat(op, ": ACT_MODE ", static_cast<int>(p.mode),
                                    " is not a mode (RELU 0, RELU6 1, TANH 2, SIGMOID 3, "
                                    "NONE 4, LUT 5)"));
  }
  detail::check_offset(op, "input_zero_point", p.input_zero_point,
                       "NACC_FM_OFFSET.IN_FM_OFFSET");
  detail::check_offset(op, "output_zero_point", p.output_zero_point,
                       "NACC_FM_OFFSET.OUT_FM_OFFSET");
  detail::check_multiplier(op, "multiplier", -1, p.multiplier, "QUANT_MUL[0]");
  detail::check_shift(op, "shift", -1, p.shift, limits::kMaxShift, "QUANT_SHIFT[0]");
  detail::check_act_range(op, p.act_min, p.act_max);
}

namespace {

// A zero point of a float32 mode, within its value domain (U8_DOMAIN).
void check_domain_zero_point(const char* op, const char* name, int32_t zp, const ValueDomain& d,
                             const char* reg) {
  check_arg(zp >= d.qmin() && zp <= d.qmax(), op, ": ", name, " ", zp, " out of range [",
            d.qmin(), ", ", d.qmax(), "] (", reg, ", U8_DOMAIN = ", int(d.u8), ")");
}

void check_float_param(const char* op, const char* name, float v, bool positive) {
  check_arg(std::isfinite(v) && (!positive || v > 0.0f), op, ": ", name, " ", v, " must be finite",
            positive ? " and > 0" : "", " (QUANT_MUL array, float32 mode)");
}

}  // namespace

void validate_mac_fp32_params(const MacFp32Params& p, int channels) {
  const char* op = "conv2d_s8_mac_fp32";
  detail::check_offset(op, "input offset", -p.input_zero_point, "NACC_FM_OFFSET.IN_FM_OFFSET");
  detail::check_offset(op, "output zero point", p.output_zero_point, "NACC_FM_OFFSET.OUT_FM_OFFSET");
  detail::check_act_range(op, p.act_min, p.act_max);
  check_arg(p.kblock_log2 >= 0 && p.kblock_log2 <= limits::kMaxKblockLog2 &&
                p.kblock_tail_log2 >= 0 && p.kblock_tail_log2 <= limits::kMaxKblockLog2,
            op, ": K blocks 2^", p.kblock_log2, " / 2^", p.kblock_tail_log2,
            " out of range (NACC_FP32_KBLOCK.KBLOCK_LOG2 / KBLOCK_TAIL_LOG2 in [0, ",
            limits::kMaxKblockLog2, "])");
  check_arg(p.split >= 0 && p.pixel_row >= 1 && p.pixel_y0 >= 0 && p.pixel_x0 >= 0, op,
            ": pixel origin (", p.pixel_y0, ", ", p.pixel_x0, "), row ", p.pixel_row, ", split ",
            p.split, " must be >= 0");
  detail::check_not_null(op, "entries", p.entries);
  bool ok = true;  // a branch-free scan first; the loop below names the first bad entry
  for (int c = 0; c < channels; ++c) {
    const float* e = p.entries + int64_t(c) * limits::kMacFp32EntryFloats;
    ok &= std::isfinite(e[0]) && e[0] > 0.0f && std::isfinite(e[1]) && e[1] > 0.0f &&
          std::isfinite(e[2]) && std::isfinite(e[3]) && e[3] > 0.0f;
  }
  if (ok) return;
  static const char* names[4] = {"s_x", "s_w", "bias", "s_y"};
  for (int c = 0; c < channels; ++c) {
    const float* e = p.entries + int64_t(c) * limits::kMacFp32EntryFloats;
    for (int j = 0; j < 4; ++j) {
      check_arg(std::isfinite(e[j]) && (j == 2 || e[j] > 0.0f), op, ": channel ", c, " ",
                names[j], " = ", e[j], " must be finite", j == 2 ? "" : " and > 0",
                " (QUANT_MUL array, MAC_FP32 = 1: {s_x, s_w, bias, s_y} per output channel)");
    }
  }
}

namespace {

// ELEMENT_FP32 = 1 or 2 (unit_params.h): the float32 parameters and the
// zero points in their domain.
void validate_elementwise_float(const ElementwiseParams& p) {
  const char* op = "elementwise_s8";
  check_arg(p.float_mode == ElementwiseFloat::kQLinear || p.float_mode == ElementwiseFloat::kDequantize,
            op, ": ELEMENT_FP32 ", int(p.float_mode), " is not a mode (0 off, 1 QLINEAR, 2 DEQUANTIZE)");
  check_domain_zero_point(op, "input1 zero point", -p.input1_offset, p.domain,
                          "NACC_ELEMENTWISE.IN_ELEMENT_OFFSET1");
  check_domain_zero_point(op, "input2 zero point", -p.input2_offset, p.domain,
                          "NACC_ELEMENTWISE.IN_ELEMENT_OFFSET2");
  check_domain_zero_point(op, "output zero point", p.output_zero_point, p.domain,
                          "NACC_FM_OFFSET.OUT_FM_OFFSET");
  if (p.float_mode == ElementwiseFloat::kDequantize) {
    for (int i = 0; i < 3; ++i) check_float_param(op, i < 2 ? "input scale" : "output scale", p.float_params[i], true);
  } else if (p.mode == ElementwiseMode::MUL) {
    check_float_param(op, "scale ratio", p.float_params[0], true);
  } else {
    check_arg(p.mode == ElementwiseMode::ADD, op, ": ELEMENT_FP32 = 1 (QLINEAR) computes ADD and MUL, ",
              "not ", elementwise_mode_name(p.mode), " (ONNX Runtime has no QLinearSub; use 2)");
    check_float_param(op, "rA", p.float_params[0], true);
    check_float_param(op, "rB", p.float_params[1], true);
    check_float_param(op, "F", p.float_params[2], false);
  }
  detail::check_act_range(op, p.act_min, p.act_max);
}

}  // namespace

void validate_pool_float(const PoolParams& p) {
  const char* op = "avg_pool_s8";
  if (static_cast<int>(p.float_mode) > static_cast<int>(PoolFloat::kQuantizeColumns)) {
    throw InvalidArgument(str_cat(op, ": NACC_ACT_PARA.POOL_FP32_MODE ",
                                  static_cast<int>(p.float_mode), " is not a mode (0 QLINEAR, ",
                                  "1 QUANTIZE_ROWS, 2 QUANTIZE_COLUMNS)"));
  }
  check_float_param(op, "input scale", p.input_scale, true);
  check_float_param(op, "output scale", p.output_scale, true);
  check_domain_zero_point(op, "input zero point", p.input_zero_point, p.domain,
                          "NACC_FM_OFFSET.IN_FM_OFFSET");
  check_domain_zero_point(op, "output zero point", p.output_zero_point, p.domain,
                          "NACC_FM_OFFSET.OUT_FM_OFFSET");
  detail::check_act_range(op, p.act_min, p.act_max);
}

void validate_elementwise_params(const ElementwiseParams& p) {
  const char* op = "elementwise_s8";
  switch (p.mode) {
    case ElementwiseMode::ADD:
    case ElementwiseMode::SUB:
    case ElementwiseMode::MUL:
      break;
    case ElementwiseMode::MUL_S16_S8:
      throw InvalidArgument(
          "elementwise_s8: ELEMENTWISE_MODE MUL_S16_S8 (4'b0100) multiplies int16 inputs "
          "(NACC_CTRL.DATA_FORM = INT16, elementwise_mul_s16_s8); the 8-bit unit takes "
          "ADD (4'b0010), SUB (4'b0001) or MUL (4'b1000)");
    default:
      throw InvalidArgument(str_cat("elementwise_s8: ELEMENTWISE_MODE ",
                                    static_cast<int>(p.mode),
                                    " is not a mode (SUB 1, ADD 2, MUL_S16_S8 4, MUL 8)"));
  }
  if (p.float_mode != ElementwiseFloat::kOff) {
    validate_elementwise_float(p);
    return;
  }
  detail::check_offset(op, "input1_offset", p.input1_offset,
                       "NACC_ELEMENTWISE.IN_ELEMENT_OFFSET1");
  detail::check_offset(op, "input2_offset", p.input2_offset,
                       "NACC_ELEMENTWISE.IN_ELEMENT_OFFSET2");
  detail::check_offset(op, "output_zero_point", p.output_zero_point,
                       "NACC_FM_OFFSET.OUT_FM_OFFSET");
  check_arg(p.left_shift >= 0 && p.left_shift <= limits::kMaxElementwiseLeftShift, op,
            ": left_shift ", p.left_shift, " out of range [0, ",
            limits::kMaxElementwiseLeftShift, "] (NACC_ELEMENTWISE.LEFT_SHIFT)");
  // The per-input scalings and ADD/SUB's output scaling are right shifts only.
  const int right_only = limits::kMaxSmallerThanOneShift;
  detail::check_multiplier(op, "input1_multiplier", -1, p.input1_multiplier,
                           "NACC_ELEMENT_QUANT1_MULT");
  detail::check_shift(op, "input1_shift", -1, p.input1_shift, right_only,
                      "NACC_ELEMENT_QUANT1_SHIFT");
  detail::check_multiplier(op, "input2_multiplier", -1, p.input2_multiplier,
                           "NACC_ELEMENT_QUANT2_MULT");
  detail::check_shift(op, "input2_shift", -1, p.input2_shift, right_only,
                      "NACC_ELEMENT_QUANT2_SHIFT");
  detail::check_multiplier(op, "output_multiplier", -1, p.output_multiplier, "QUANT_MUL[0]");
  detail::check_shift(op, "output_shift", -1, p.output_shift,
                      p.mode == ElementwiseMode::MUL ? limits::kMaxShift : right_only,
                      "QUANT_SHIFT[0]");
  detail::check_act_range(op, p.act_min, p.act_max);
}

void validate_mul_s16_s8_params(const ElementwiseParams& p) {
  const char* op = "elementwise_mul_s16_s8";
  check_arg(p.mode == ElementwiseMode::MUL_S16_S8, op, ": ELEMENTWISE_MODE ",
            static_cast<int>(p.mode), " is not MUL_S16_S8 (4)");
  check_arg(p.float_mode == ElementwiseFloat::kOff, op,
            ": ELEMENT_FP32 takes 8-bit maps (NACC_ACT_PARA.ELEMENT_FP32 must be 0)");
  detail::check_offset(op, "input1_offset", p.input1_offset,
                       "NACC_ELEMENTWISE.IN_ELEMENT_OFFSET1");
  detail::check_offset(op, "input2_offset", p.input2_offset,
                       "NACC_ELEMENTWISE.IN_ELEMENT_OFFSET2");
  detail::check_offset(op, "output_zero_point", p.output_zero_point,
                       "NACC_FM_OFFSET.OUT_FM_OFFSET");
  // The product is not rescaled per input and not shifted left before the
  // output stage: those registers must be 0.
  check_arg(p.left_shift == 0, op, ": left_shift ", p.left_shift,
            " must be 0 (NACC_ELEMENTWISE.LEFT_SHIFT; MUL_S16_S8 multiplies the offset inputs "
            "unscaled)");
  check_arg(p.input1_multiplier == 0 && p.input1_shift == 0 && p.input2_multiplier == 0 &&
                p.input2_shift == 0,
            op, ": input multipliers / shifts ", p.input1_multiplier, "/", p.input1_shift, ", ",
            p.input2_multiplier, "/", p.input2_shift,
            " must be 0 (NACC_ELEMENT_QUANT1/2_MULT/SHIFT; MUL_S16_S8 does not rescale its inputs)");
  detail::check_multiplier(op, "output_multiplier", -1, p.output_multiplier, "QUANT_MUL[0]");
  // |(x1 + o1)(x2 + o2)| <= 33024^2 > 2^30: a left shift could leave int32.
  detail::check_shift(op, "output_shift", -1, p.output_shift, limits::kMaxSmallerThanOneShift,
                      "QUANT_SHIFT[0]; the int32 product is not shifted left");
  detail::check_act_range(op, p.act_min, p.act_max);
}

}  // namespace nacc

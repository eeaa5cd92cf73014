// Argument checks shared by every compute unit (see unit_checks.h). Messages
// are built only on failure.
#include "device/units/unit_checks.h"

#include <cmath>
#include <limits>
#include <string>
#include <string_view>

#include "common/error.h"
#include "arch/limits.h"

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
  check_not_null(op, "multiplier", stage.multiplier);
  check_not_null(op, "shift", stage.shift);
  for (int c = 0; c < channels; ++c) {
    check_multiplier(op, "multiplier", c, stage.multiplier[c], "QUANT_MUL array, NACC_SPEC §1");
    check_shift(op, "shift", c, stage.shift[c], limits::kMaxShift,
                "QUANT_SHIFT array, NACC_SPEC §1");
  }
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

void check_avg_pool_window(const char* op, int kernel_h, int kernel_w, const WindowParams& w) {
  using namespace limits;
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
  check_arg(actual == expected, op, ": output shape ", actual.str(), " does not match the ",
            "expected ", expected.str());
}

}  // namespace nacc::detail

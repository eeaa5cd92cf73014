// Argument checks shared by the window units (depthwise convolution, max and
// average pooling): geometry against the NACC_KERNEL / NACC_PADDING limits
// (NACC_SPEC §2), feature-map shapes, activation range. Internal to
// device/units; every check throws InvalidArgument naming the register/limit.
#pragma once

#include <cstdint>

#include "common/error.h"
#include "common/limits.h"
#include "common/shape.h"
#include "device/units/conv.h"

namespace nacc::units_detail {

// Kernel, stride and padding of a window op against NACC_SPEC §2.
inline void check_window_geometry(const char* op, int kernel_h, int kernel_w,
                                  const WindowParams& w) {
  using namespace limits;
  auto in_range = [op](int v, int lo, int hi, const char* name, const char* reg) {
    check_arg(v >= lo && v <= hi, op, ": ", name, " ", v, " out of range [", lo, ", ", hi, "] (",
              reg, ")");
  };
  in_range(kernel_h, kMinKernel, kMaxKernel, "kernel_h", "NACC_KERNEL.K_SIZE_Y");
  in_range(kernel_w, kMinKernel, kMaxKernel, "kernel_w", "NACC_KERNEL.K_SIZE_X");
  in_range(w.stride_h, kMinStride, kMaxStride, "stride_h", "NACC_KERNEL.K_STRIDE_Y");
  in_range(w.stride_w, kMinStride, kMaxStride, "stride_w", "NACC_KERNEL.K_STRIDE_X");
  in_range(w.pad_top, 0, kMaxPadding, "pad_top", "NACC_PADDING.PAD_Y");
  in_range(w.pad_bottom, 0, kMaxPadding, "pad_bottom", "NACC_PADDING.PAD_Y");
  in_range(w.pad_left, 0, kMaxPadding, "pad_left", "NACC_PADDING.PAD_X");
  in_range(w.pad_right, 0, kMaxPadding, "pad_right", "NACC_PADDING.PAD_X");
}

// Average pooling is exactly 2x2, stride 2 (NACC_SPEC §2).
inline void check_avg_pool_window(const char* op, int kernel_h, int kernel_w,
                                  const WindowParams& w) {
  using namespace limits;
  check_arg(kernel_h == kAvgPoolKernel && kernel_w == kAvgPoolKernel, op, ": kernel ", kernel_h,
            "x", kernel_w, " not supported, average pooling is ", kAvgPoolKernel, "x",
            kAvgPoolKernel, " only (NACC_SPEC §2)");
  check_arg(w.stride_h == kAvgPoolStride && w.stride_w == kAvgPoolStride, op, ": stride ",
            w.stride_h, "x", w.stride_w, " not supported, average pooling is stride ",
            kAvgPoolStride, " only (NACC_SPEC §2)");
}

// A feature map: N == 1 (NACC_SPEC §1), H, W, C in [1, 65535] (16-bit FM
// size fields, NACC_SPEC §3).
inline void check_feature_map(const char* op, const char* name, const Shape4& s) {
  check_arg(s.n == 1, op, ": ", name, " batch ", s.n, " must be 1 (NACC processes N = 1 only)");
  const int dims[3] = {s.h, s.w, s.c};
  const char* dim_names[3] = {"height", "width", "channels"};
  for (int i = 0; i < 3; ++i) {
    check_arg(dims[i] >= 1 && dims[i] <= limits::kMaxFeatureMapDim, op, ": ", name, " ",
              dim_names[i], " ", dims[i], " out of range [1, ", limits::kMaxFeatureMapDim,
              "] (16-bit feature-map size field)");
  }
}

// -128 <= act_min <= act_max <= 127 (NACC_ACT_MIN / NACC_ACT_MAX on int8).
inline void check_act_range(const char* op, int32_t act_min, int32_t act_max) {
  check_arg(act_min >= -128 && act_max <= 127 && act_min <= act_max, op,
            ": activation range [", act_min, ", ", act_max,
            "] must satisfy -128 <= act_min <= act_max <= 127 (NACC_ACT_MIN, NACC_ACT_MAX)");
}

// An int8 zero point, [-128, 127] (NACC_FM_OFFSET fields).
inline void check_zero_point(const char* op, const char* name, int32_t zp, const char* reg) {
  check_arg(zp >= -128 && zp <= 127, op, ": ", name, " ", zp, " out of range [-128, 127] (", reg,
            ")");
}

// The output shape [1, OH, OW, out_c] of a window op (window_output_size per
// axis). Call after check_window_geometry; throws, naming `op`, when the
// padded input is smaller than the kernel.
inline Shape4 window_output_shape(const char* op, const Shape4& in, int kernel_h, int kernel_w,
                                  const WindowParams& w, int out_c) {
  const int padded_h = in.h + w.pad_top + w.pad_bottom;
  const int padded_w = in.w + w.pad_left + w.pad_right;
  check_arg(padded_h >= kernel_h && padded_w >= kernel_w, op, ": kernel ", kernel_h, "x",
            kernel_w, " larger than the padded input ", padded_h, "x", padded_w,
            ", no output position");
  return {1, window_output_size(in.h, kernel_h, w.stride_h, w.pad_top, w.pad_bottom),
          window_output_size(in.w, kernel_w, w.stride_w, w.pad_left, w.pad_right), out_c};
}

// The output shape a window op was given must be the one it computes.
inline void check_output_shape(const char* op, const Shape4& expected, const Shape4& actual) {
  check_arg(actual == expected, op, ": output shape ", actual.str(), " does not match the ",
            "expected ", expected.str());
}

}  // namespace nacc::units_detail

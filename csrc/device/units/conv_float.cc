// conv2d_s8_float_scale, depthwise_conv2d_s8_float_scale and
// fully_connected_s8_float_scale: the MAC unit with ONNX Runtime's float32
// requantization (see conv_float.h). Plain reference loops: only models from
// the ONNX Runtime EP take this path.
#include "device/units/conv_float.h"

#include <cmath>

#include "common/error.h"
#include "arch/unit_checks.h"

namespace nacc {

namespace detail {

void check_float_stage(const char* op, const FloatStage& stage, int channels) {
  check_zero_point(op, "output_zero_point", stage.output_zero_point,
                   "NACC_FM_OFFSET.OUT_FM_OFFSET");
  check_act_range(op, stage.act_min, stage.act_max);
  check_not_null(op, "scale", stage.scale);
  for (int c = 0; c < channels; ++c) {
    check_arg(std::isfinite(stage.scale[c]) && stage.scale[c] > 0.0f, op, ": scale[", c, "] = ",
              stage.scale[c], " must be finite and > 0 (QUANT_MUL array, QUANT_FP32_SCALE = 1)");
  }
}

}  // namespace detail

namespace {

// The window checks of conv2d_s8 / depthwise_conv2d_s8 (shapes, kernel,
// stride, padding, zero point, output shape).
void check_window_op(const char* op, const WindowParams& window, int32_t input_zero_point,
                     const FloatStage& os, const Shape4& input_shape, const int8_t* input,
                     int kernel_h, int kernel_w, const int8_t* filter, int out_c,
                     const Shape4& output_shape, const int8_t* output) {
  detail::check_not_null(op, "input", input);
  detail::check_not_null(op, "filter", filter);
  detail::check_not_null(op, "output", output);
  detail::check_feature_map(op, "input", input_shape);
  detail::check_feature_map_extent(op, "output", "channels", out_c);
  detail::check_window(op, window, kernel_h, kernel_w);
  detail::check_zero_point(op, "input_zero_point", input_zero_point, "NACC_FM_OFFSET.IN_FM_OFFSET");
  detail::check_float_stage(op, os, out_c);
  const Shape4 expected =
      detail::window_output_shape(op, input_shape, kernel_h, kernel_w, window, out_c);
  detail::check_output_shape(op, expected, output_shape);
}

}  // namespace

void conv2d_s8_float_scale(const WindowParams& window, int32_t input_zero_point,
                           const FloatStage& os, const Shape4& input_shape, const int8_t* input,
                           const Shape4& filter_shape, const int8_t* filter, const int32_t* bias,
                           const Shape4& output_shape, int8_t* output) {
  constexpr const char* kOp = "conv2d_s8_float_scale";
  check_arg(filter_shape.c == input_shape.c, kOp, ": filter ", filter_shape.str(), " has ",
            filter_shape.c, " input channels, input ", input_shape.str(), " has ", input_shape.c);
  check_window_op(kOp, window, input_zero_point, os, input_shape, input, filter_shape.h,
                  filter_shape.w, filter, filter_shape.n, output_shape, output);
  const int in_h = input_shape.h, in_w = input_shape.w, in_c = input_shape.c;
  const int kh = filter_shape.h, kw = filter_shape.w;
  const int out_h = output_shape.h, out_w = output_shape.w, out_c = output_shape.c;
  const float lo = static_cast<float>(os.act_min - os.output_zero_point);
  const float hi = static_cast<float>(os.act_max - os.output_zero_point);
  for (int oy = 0; oy < out_h; ++oy) {
    const int iy0 = oy * window.stride_h - window.pad_top;
    for (int ox = 0; ox < out_w; ++ox) {
      const int ix0 = ox * window.stride_w - window.pad_left;
      for (int oc = 0; oc < out_c; ++oc) {
        int64_t acc = 0;
        for (int ky = 0; ky < kh; ++ky) {
          const int iy = iy0 + ky;
          if (iy < 0 || iy >= in_h) continue;
          for (int kx = 0; kx < kw; ++kx) {
            const int ix = ix0 + kx;
            if (ix < 0 || ix >= in_w) continue;
            const int8_t* x = input + (static_cast<int64_t>(iy) * in_w + ix) * in_c;
            const int8_t* w = filter + ((static_cast<int64_t>(oc) * kh + ky) * kw + kx) * in_c;
            for (int ic = 0; ic < in_c; ++ic) acc += int64_t{w[ic]} * (int64_t{x[ic]} - input_zero_point);
          }
        }
        if (bias != nullptr) acc += bias[oc];
        output[(static_cast<int64_t>(oy) * out_w + ox) * out_c + oc] = detail::float_requantize(
            static_cast<int32_t>(static_cast<uint32_t>(acc)), os.scale[oc], lo, hi,
            os.output_zero_point);
      }
    }
  }
}

void depthwise_conv2d_s8_float_scale(const WindowParams& window, int depth_multiplier,
                                     int32_t input_zero_point, const FloatStage& os,
                                     const Shape4& input_shape, const int8_t* input,
                                     const Shape4& filter_shape, const int8_t* filter,
                                     const int32_t* bias, const Shape4& output_shape,
                                     int8_t* output) {
  constexpr const char* kOp = "depthwise_conv2d_s8_float_scale";
  check_arg(depth_multiplier == 1 || depth_multiplier == 2 || depth_multiplier == 4 ||
                depth_multiplier == 8,
            kOp, ": depth_multiplier ", depth_multiplier, " not in {1, 2, 4, 8} (DW_CH_MULT)");
  const int64_t out_c64 = int64_t{input_shape.c} * depth_multiplier;
  check_arg(filter_shape.n == 1 && filter_shape.c == out_c64, kOp, ": filter ",
            filter_shape.str(), " must be [1, KH, KW, ", out_c64, "]");
  check_window_op(kOp, window, input_zero_point, os, input_shape, input, filter_shape.h,
                  filter_shape.w, filter, int(out_c64), output_shape, output);
  const int in_h = input_shape.h, in_w = input_shape.w, in_c = input_shape.c;
  const int kh = filter_shape.h, kw = filter_shape.w;
  const int out_h = output_shape.h, out_w = output_shape.w, out_c = output_shape.c;
  const float lo = static_cast<float>(os.act_min - os.output_zero_point);
  const float hi = static_cast<float>(os.act_max - os.output_zero_point);
  for (int oy = 0; oy < out_h; ++oy) {
    const int iy0 = oy * window.stride_h - window.pad_top;
    for (int ox = 0; ox < out_w; ++ox) {
      const int ix0 = ox * window.stride_w - window.pad_left;
      for (int ic = 0; ic < in_c; ++ic) {
        for (int m = 0; m < depth_multiplier; ++m) {
          const int oc = ic * depth_multiplier + m;
          int64_t acc = 0;
          for (int ky = 0; ky < kh; ++ky) {
            const int iy = iy0 + ky;
            if (iy < 0 || iy >= in_h) continue;
            for (int kx = 0; kx < kw; ++kx) {
              const int ix = ix0 + kx;
              if (ix < 0 || ix >= in_w) continue;
              const int64_t x = input[(static_cast<int64_t>(iy) * in_w + ix) * in_c + ic];
              const int64_t w = filter[(static_cast<int64_t>(ky) * kw + kx) * out_c + oc];
              acc += w * (x - input_zero_point);
            }
          }
          if (bias != nullptr) acc += bias[oc];
          output[(static_cast<int64_t>(oy) * out_w + ox) * out_c + oc] = detail::float_requantize(
              static_cast<int32_t>(static_cast<uint32_t>(acc)), os.scale[oc], lo, hi,
              os.output_zero_point);
        }
      }
    }
  }
}

void fully_connected_s8_float_scale(int32_t input_zero_point, const FloatStage& os, int m, int k,
                                    int n, const int8_t* input, const int8_t* weights,
                                    const int32_t* bias, int8_t* output) {
  constexpr const char* kOp = "fully_connected_s8_float_scale";
  detail::check_extent(kOp, "m (rows)", m);
  detail::check_extent(kOp, "k (input depth)", k);
  detail::check_extent(kOp, "n (output units)", n);
  detail::check_not_null(kOp, "input", input);
  detail::check_not_null(kOp, "weights", weights);
  detail::check_not_null(kOp, "output", output);
  detail::check_zero_point(kOp, "input_zero_point", input_zero_point);
  detail::check_float_stage(kOp, os, n);
  const float lo = static_cast<float>(os.act_min - os.output_zero_point);
  const float hi = static_cast<float>(os.act_max - os.output_zero_point);
  for (int row = 0; row < m; ++row) {
    const int8_t* x = input + static_cast<int64_t>(row) * k;
    for (int col = 0; col < n; ++col) {
      const int8_t* w = weights + static_cast<int64_t>(col) * k;
      int64_t acc = 0;
      for (int i = 0; i < k; ++i) acc += int64_t{w[i]} * (int64_t{x[i]} - input_zero_point);
      if (bias != nullptr) acc += bias[col];
      output[static_cast<int64_t>(row) * n + col] = detail::float_requantize(
          static_cast<int32_t>(static_cast<uint32_t>(acc)), os.scale[col], lo, hi,
          os.output_zero_point);
    }
  }
}

}  // namespace nacc

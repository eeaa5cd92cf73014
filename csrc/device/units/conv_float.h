// Convolution, depthwise and fully-connected modes with the float32 output
// stage (project extension NACC_ACT_PARA.QUANT_FP32_SCALE): the int32
// accumulator of conv.h / fully_connected.h requantized as ONNX Runtime's CPU
// QLinearConv / QLinearMatMul / QGemm do (MLAS MlasRequantizeOutput).
#pragma once

#include <cmath>
#include <cstdint>

#include "common/shape.h"
#include "device/units/conv.h"

namespace nacc {

// The float32 output stage shared by the three units (and matmul_float.h):
// out = clamp(round_half_even(float(acc) * scale[c]) + output_zero_point, act_min, act_max)
//   acc     int32, bias already added in int32 (two's-complement wrap-around)
//   scale   [C_out] float32, finite and > 0 (ONNX Runtime: float(s_x * s_w[c]) / s_y)
// float(acc) is the int32 -> float32 conversion (round to nearest even), the
// product one float32 multiply (no FMA); clamping to [act_min - zp, act_max - zp]
// in float before rounding gives the same integers as clamping after it.
struct FloatStage {
  const float* scale = nullptr;           // [C_out]
  int32_t output_zero_point = 0;          // [-128, 127]
  int32_t act_min = -128, act_max = 127;  // -128 <= act_min <= act_max <= 127
};

// conv2d_s8 with the float32 output stage. Layouts and limits as conv2d_s8.
void conv2d_s8_float_scale(const WindowParams& window, int32_t input_zero_point,
                           const FloatStage& out_stage, const Shape4& input_shape,
                           const int8_t* input, const Shape4& filter_shape, const int8_t* filter,
                           const int32_t* bias, const Shape4& output_shape, int8_t* output);

// depthwise_conv2d_s8 with the float32 output stage (oc = ic * depth_multiplier + m).
void depthwise_conv2d_s8_float_scale(const WindowParams& window, int depth_multiplier,
                                     int32_t input_zero_point, const FloatStage& out_stage,
                                     const Shape4& input_shape, const int8_t* input,
                                     const Shape4& filter_shape, const int8_t* filter,
                                     const int32_t* bias, const Shape4& output_shape,
                                     int8_t* output);

// fully_connected_s8 with the float32 output stage: input [M, K], weights
// [N, K] (zero point 0), bias [N] or nullptr, output [M, N]. M, K, N >= 1.
void fully_connected_s8_float_scale(int32_t input_zero_point, const FloatStage& out_stage, int m,
                                    int k, int n, const int8_t* input, const int8_t* weights,
                                    const int32_t* bias, int8_t* output);

namespace detail {
// Validates a FloatStage for `channels` output channels (InvalidArgument).
void check_float_stage(const char* op, const FloatStage& stage, int channels);
// One output of the float32 stage (see FloatStage); lo, hi = float(act_min -
// zp), float(act_max - zp).
inline int8_t float_requantize(int32_t acc, float scale, float lo, float hi, int32_t zero_point) {
  float v = static_cast<float>(acc) * scale;
  v = std::fmin(std::fmax(v, lo), hi);
  // Round half to even (the default rounding mode; MLAS uses the same).
  return static_cast<int8_t>(static_cast<int32_t>(std::nearbyint(v)) + zero_point);
}
}  // namespace detail

}  // namespace nacc

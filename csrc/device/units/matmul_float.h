// The matrix unit with the float32 output stage (project extension
// NACC_ACT_PARA.QUANT_FP32_SCALE): int8 x int8 -> int32 exactly as matmul_s8,
// then requantized the way ONNX Runtime's CPU QLinearMatMul (MLAS) does, so
// that an ONNX MatMul of two activations is bit-exact to the CPU EP.
#pragma once

#include <cstdint>

namespace nacc {

// out[m, n] = clamp(round_half_even(float(acc) * scale[n]) + out_zp, act_min, act_max),
// acc = sum_k (a[m, k] - a_zp) * (b[k, n] - b_zp) (int32, wrapping as TFLite's).
//   a Format [M, K] int8, b Format [K, N] int8 (row pitch N), zero points in [-128, 127]
//   scale [N] float32, finite and > 0 (ONNX Runtime: float(a_scale * b_scale) / y_scale)
//   float(acc) is the int32 -> float32 conversion (round to nearest even), the
//   product a float32 multiply, as MlasRequantizeOutput; the clamp bounds are
//   [act_min - out_zp, act_max - out_zp] applied in float before rounding,
//   which gives the same integers as clamping after it.
//   M, K, N >= 1; InvalidArgument for a bad argument.
void matmul_s8_float_scale(int32_t a_zero_point, int32_t b_zero_point, const float* scale,
                           int32_t output_zero_point, int32_t act_min, int32_t act_max, int m,
                           int k, int n, const int8_t* a, const int8_t* b, int8_t* output);

}  // namespace nacc

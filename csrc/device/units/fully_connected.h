// The MAC unit's fully-connected and matrix modes (NACC_SPEC §1):
// int8 x int8 -> int32 -> requantized int8. Bit-exact to TFLite's reference
// FULLY_CONNECTED (per-tensor and per-channel) and BATCH_MATMUL int8 kernels.
#pragma once

#include <cstdint>

#include "device/units/conv.h"
#include "device/units/prepared.h"

namespace nacc {

// Fully connected: out[m, n] = requant(sum_k (in[m, k] - in_zp) * w[n, k] + bias[n]).
//   input   Format [M, K] int8, Range [-128, 127], zero point input_zero_point
//   weights Format [N, K] int8 (TFLite layout), zero point 0
//   bias    [N] int32 or nullptr
//   output  Format [M, N] int8; out_stage arrays have N entries
//   M, K, N >= 1; sums wrap in int32 as TFLite's accumulator does.
// Requantization by out_stage (arch/unit_params.h): kFixedPoint
// (multiply_by_quantized_multiplier, what a 1x1 conv lowered to this mode
// needs), kRealScale (multiply_by_real_scale with double(input_scale) *
// double(filter_scale[n]) / double(output_scale): TFLite 2.21's *reference*
// FULLY_CONNECTED; the multiplier/shift form differs from it by one near
// rounding ties) or kFloat32 (ONNX Runtime's QGemm / QLinearMatMul).
void fully_connected_s8(int32_t input_zero_point, const OutputStage& out_stage, int m, int k, int n,
                        const int8_t* input, const int8_t* weights, const int32_t* bias,
                        int8_t* output, const PreparedWeights* prepared = nullptr);

// Matrix multiply: out[m, n] = requant(sum_k (a[m, k] - a_zp) * (b[k, n] - b_zp)).
//   a Format [M, K] int8, b Format [K, N] int8 (both activations, any zero point
//   in [-128, 127]); M, K, N >= 1
//   out_stage arrays have N entries (per-tensor callers repeat one value);
//   kFixedPoint as TFLite BATCH_MATMUL, kFloat32 as ONNX Runtime's QLinearMatMul.
void matmul_s8(int32_t a_zero_point, int32_t b_zero_point, const OutputStage& out_stage, int m,
               int k, int n, const int8_t* a, const int8_t* b, int8_t* output);

}  // namespace nacc

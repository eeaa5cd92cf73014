// MEAN over height and width as one depthwise pass with unit weights.
// TFLite 2.21's int8 MEAN on the reference kernels (reduce.cc EvalMean,
// kReference -> EvalQuantizedMean -> reference_ops::QuantizedMeanOrSum, one
// path for every keep_dims / axes / quantization) computes
//   out = clamp(MultiplyByQuantizedMultiplier(sum(x) - N * zi, m', s') + zo)
// where (m, s) = QuantizeMultiplier(si / so) and the 1/N is folded in:
//   k = min(floor(log2 N), 32, 31 + s), m' = (int64(m) << k) / N, s' = s - k.
// The depthwise unit computes MBQM(sum(w * (x - zi)) + bias, m, s) + zo with
// the same arithmetic (common/quant.h), so weights 1, no bias and (m', s')
// give the same bits for every input (docs/compiler.md §2, "MEAN").
#pragma once

#include <cstdint>

namespace nacc::compiler {

struct MeanRequantization {
  int32_t multiplier = 0;
  int shift = 0;
};

// (m', s') for N reduced elements and the tensors' scales.
MeanRequantization tflite_mean_requantization(float input_scale, float output_scale, int64_t n);

// TFLite's int8 output for the raw sum `sum` (no zero point subtracted) of n
// elements (tests and documentation of the formula).
int8_t tflite_mean_output(int64_t sum, int64_t n, float input_scale, int32_t input_zero_point,
                          float output_scale, int32_t output_zero_point);

}  // namespace nacc::compiler

// TFLite 2.21's int8 MEAN requantization (see mean.h).
#include "compiler/mean.h"

#include <algorithm>

#include "common/error.h"
#include "common/quant.h"

namespace nacc::compiler {

namespace {

// Index of the highest set bit (63 - CountLeadingZeros for v > 0).
int floor_log2(uint64_t v) {
  int k = -1;
  while (v) {
    v >>= 1;
    ++k;
  }
  return k;
}

}  // namespace

MeanRequantization tflite_mean_requantization(float input_scale, float output_scale, int64_t n) {
  check_arg(n >= 1, "tflite_mean_requantization: ", n, " reduced elements");
  const QuantizedMultiplier q =
      quantize_multiplier(static_cast<double>(input_scale) / static_cast<double>(output_scale));
  int k = floor_log2(static_cast<uint64_t>(n));
  k = std::min(k, 32);
  k = std::min(k, 31 + q.shift);
  MeanRequantization r;
  r.multiplier = static_cast<int32_t>((static_cast<int64_t>(q.multiplier) << k) / n);
  r.shift = q.shift - k;
  return r;
}

int8_t tflite_mean_output(int64_t sum, int64_t n, float input_scale, int32_t input_zero_point,
                          float output_scale, int32_t output_zero_point) {
  const MeanRequantization r = tflite_mean_requantization(input_scale, output_scale, n);
  const int32_t shifted = static_cast<int32_t>(sum - int64_t(input_zero_point) * n);
  const int32_t v = multiply_by_quantized_multiplier(shifted, r.multiplier, r.shift) + output_zero_point;
  return static_cast<int8_t>(std::min(std::max(v, int32_t(-128)), int32_t(127)));
}

}  // namespace nacc::compiler

// matmul_s8_float_scale: the matrix unit with ONNX Runtime's float32
// requantization (see matmul_float.h). A plain reference loop: the EP's
// MatMul of two activations is small next to the convolutions around it.
#include "device/units/matmul_float.h"

#include <cmath>

#include "common/error.h"

namespace nacc {

void matmul_s8_float_scale(int32_t a_zero_point, int32_t b_zero_point, const float* scale,
                           int32_t output_zero_point, int32_t act_min, int32_t act_max, int m,
                           int k, int n, const int8_t* a, const int8_t* b, int8_t* output) {
  check_arg(m >= 1 && k >= 1 && n >= 1, "matmul_s8_float_scale: m, k, n = ", m, ", ", k, ", ", n,
            " must be >= 1");
  check_arg(a && b && scale && output, "matmul_s8_float_scale: null pointer");
  check_arg(a_zero_point >= -128 && a_zero_point <= 127 && b_zero_point >= -128 &&
                b_zero_point <= 127 && output_zero_point >= -128 && output_zero_point <= 127,
            "matmul_s8_float_scale: zero points ", a_zero_point, ", ", b_zero_point, ", ",
            output_zero_point, " out of range [-128, 127]");
  check_arg(act_min >= -128 && act_max <= 127 && act_min <= act_max,
            "matmul_s8_float_scale: clamp [", act_min, ", ", act_max, "] outside [-128, 127]");
  for (int col = 0; col < n; ++col) {
    check_arg(std::isfinite(scale[col]) && scale[col] > 0.0f, "matmul_s8_float_scale: scale[",
              col, "] = ", scale[col], " must be finite and > 0");
  }
  const float lo = static_cast<float>(act_min - output_zero_point);
  const float hi = static_cast<float>(act_max - output_zero_point);
  for (int row = 0; row < m; ++row) {
    for (int col = 0; col < n; ++col) {
      int64_t acc = 0;
      for (int i = 0; i < k; ++i) {
        const int64_t av = a[static_cast<int64_t>(row) * k + i];
        const int64_t bv = b[static_cast<int64_t>(i) * n + col];
        acc += (av - a_zero_point) * (bv - b_zero_point);
      }
      const int32_t acc32 = static_cast<int32_t>(static_cast<uint32_t>(acc));
      float v = static_cast<float>(acc32) * scale[col];
      v = std::fmin(std::fmax(v, lo), hi);
      // Round half to even (the default rounding mode; MLAS uses the same).
      const int32_t q = static_cast<int32_t>(std::nearbyint(v)) + output_zero_point;
      output[static_cast<int64_t>(row) * n + col] = static_cast<int8_t>(q);
    }
  }
}

}  // namespace nacc

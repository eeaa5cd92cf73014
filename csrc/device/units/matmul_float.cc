// matmul_s8_float_scale: the matrix unit with ONNX Runtime's float32
// requantization (see matmul_float.h). A plain reference loop: the EP's
// MatMul of two activations is small next to the convolutions around it.
#include "device/units/matmul_float.h"

#include "device/units/conv_float.h"
#include "arch/unit_checks.h"

namespace nacc {

void matmul_s8_float_scale(int32_t a_zero_point, int32_t b_zero_point, const float* scale,
                           int32_t output_zero_point, int32_t act_min, int32_t act_max, int m,
                           int k, int n, const int8_t* a, const int8_t* b, int8_t* output) {
  constexpr const char* kOp = "matmul_s8_float_scale";
  detail::check_extent(kOp, "m (rows of a)", m);
  detail::check_extent(kOp, "k (columns of a, rows of b)", k);
  detail::check_extent(kOp, "n (columns of b)", n);
  detail::check_not_null(kOp, "a", a);
  detail::check_not_null(kOp, "b", b);
  detail::check_not_null(kOp, "output", output);
  detail::check_zero_point(kOp, "a_zero_point", a_zero_point);
  detail::check_zero_point(kOp, "b_zero_point", b_zero_point);
  const FloatStage os{scale, output_zero_point, act_min, act_max};
  detail::check_float_stage(kOp, os, n);
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
      output[static_cast<int64_t>(row) * n + col] = detail::float_requantize(
          static_cast<int32_t>(static_cast<uint32_t>(acc)), scale[col], lo, hi,
          output_zero_point);
    }
  }
}

}  // namespace nacc

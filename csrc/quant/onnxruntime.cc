// ONNX Runtime's CPU EP arithmetic as NPU parameters (see onnxruntime.h).
#include "quant/onnxruntime.h"

#include <algorithm>
#include <cmath>

#include "arch/fields.h"
#include "arch/unit_checks.h"
#include "common/error.h"

namespace nacc {

namespace {

ValueDomain domain_of(OrtKernel k) {
  ValueDomain d;
  d.u8 = k == OrtKernel::kFusedU8;
  return d;
}

}  // namespace

ElementwiseParams ort_elementwise_params(ElementwiseMode mode, OrtKernel kernel, const OrtQuant& a,
                                         const OrtQuant& b, const OrtQuant& out, int32_t act_min,
                                         int32_t act_max, bool swapped) {
  ElementwiseParams p;
  p.mode = mode;
  p.domain = domain_of(kernel);
  const int32_t off = p.domain.offset();
  const int32_t za = a.zero_point + off, zb = b.zero_point + off, zc = out.zero_point + off;
  p.input1_offset = -za;
  p.input2_offset = -zb;
  p.output_zero_point = zc;
  p.act_min = act_min;
  p.act_max = act_max;
  p.left_shift = 0;
  if (kernel == OrtKernel::kUnfused) {
    p.float_mode = ElementwiseFloat::kDequantize;
    p.float_params[0] = a.scale;
    p.float_params[1] = b.scale;
    p.float_params[2] = out.scale;
  } else if (mode == ElementwiseMode::MUL) {
    // MLAS QLinearMul: the scale ratio in float32, (sA * sB) / sC.
    p.float_mode = ElementwiseFloat::kQLinear;
    const float product = a.scale * b.scale;
    p.float_params[0] = product / out.scale;
  } else {
    check_arg(mode == ElementwiseMode::ADD, "ort_elementwise_params: ",
              elementwise_mode_name(mode), " has no fused QLinear kernel in ONNX Runtime");
    // MLAS QLinearAdd: rA = sA / sC, rB = sB / sC, F = zC - (rA * zA + rB * zB)
    // with one fused multiply-add (the compiler's contraction in MLAS).
    p.float_mode = ElementwiseFloat::kQLinear;
    const float r1 = a.scale / out.scale, r2 = b.scale / out.scale;
    // F in ONNX order: A's term fused, B's product rounded.
    const float ra = swapped ? r2 : r1, rb = swapped ? r1 : r2;
    const int32_t onnx_za = swapped ? zb : za, onnx_zb = swapped ? za : zb;
    const float rbzb = rb * static_cast<float>(onnx_zb);
    p.float_params[0] = r1;
    p.float_params[1] = r2;
    p.float_params[2] = static_cast<float>(zc) - std::fmaf(ra, static_cast<float>(onnx_za), rbzb);
  }
  validate_elementwise_params(p);
  return p;
}

void ort_average_pool_params(OrtKernel kernel, const OrtQuant& in, const OrtQuant& out,
                             bool by_columns, PoolParams* params) {
  check_arg(kernel == OrtKernel::kUnfused || !by_columns, "ort_average_pool_params: ",
            "QLinearAveragePool sums row-major (by_columns is for the unfused float pool)");
  params->float32 = true;
  params->float_mode = kernel != OrtKernel::kUnfused ? PoolFloat::kQLinear
                       : by_columns                  ? PoolFloat::kQuantizeColumns
                                                     : PoolFloat::kQuantizeRows;
  params->domain = domain_of(kernel);
  params->input_scale = in.scale;
  params->output_scale = out.scale;
  params->input_zero_point = in.zero_point + params->domain.offset();
  params->output_zero_point = out.zero_point + params->domain.offset();
  validate_pool_float(*params);
}

float ort_global_average_pool_scale(float input_scale, float output_scale, int64_t n) {
  check_arg(n >= 1, "ort_global_average_pool_scale: ", n, " cells");
  return input_scale / (output_scale * static_cast<float>(n));
}

std::array<int8_t, 256> ort_requantize_lut(const OrtQuant& in, const OrtQuant& out) {
  std::array<int8_t, 256> t{};
  for (int i = 0; i < 256; ++i) {
    const int32_t x = static_cast<int8_t>(static_cast<uint8_t>(i));
    if (in.scale == out.scale && in.zero_point == out.zero_point) {
      t[size_t(i)] = static_cast<int8_t>(x);
      continue;
    }
    const float real = static_cast<float>(x - in.zero_point) * in.scale;
    float v = std::nearbyint(real / out.scale);
    v = std::fmin(std::fmax(v, static_cast<float>(-128 - out.zero_point)),
                  static_cast<float>(127 - out.zero_point));
    t[size_t(i)] = static_cast<int8_t>(static_cast<int32_t>(v) + out.zero_point);
  }
  return t;
}

}  // namespace nacc

// The activation unit (NACC_SPEC §1): an int8 requantize-and-clamp path
// (ReLU, ReLU6, none; bit-exact to TFLite's int8 RELU / RELU6 / RELU_N1_TO_1)
// and a 256-entry int8 LUT (a project extension, ACT_MODE 4'b0101) that runs
// TFLite's int8 LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU and int8 -> int8
// QUANTIZE exactly. Also the LUT builders.
#pragma once

#include <array>
#include <cstdint>

#include "arch/fields.h"
#include "common/quant.h"

namespace nacc {

// NACC_CTRL.ACT_MODE is arch's ActMode (field_values.h). The hardware's q7
// (ACT_INT_W) TANH and SIGMOID are not modelled here (Unsupported).

// The unit's registers for one int8 -> int8 activation.
//
// ReLU, ReLU6, None (TFLite optimized_ops::ReluX for int8, which RELU, RELU6 and
// RELU_N1_TO_1 use under every resolver):
//   v   = output_zero_point + MultiplyByQuantizedMultiplier(x - input_zero_point,
//                                                          multiplier, shift)
//   out = clamp(v, lo, act_max) with lo = act_min for None and
//         lo = max(act_min, output_zero_point) (real 0) for ReLU and ReLU6;
//   ReLU6's upper bound (quantized 6.0) comes from act_max.
// LUT: out = clamp(lut[uint8(x)], act_min, act_max); the requantization
//   registers are not used.
struct ActivationParams {
  ActMode mode = ActMode::NONE;
  // NACC_FM_OFFSET.IN_FM_OFFSET / OUT_FM_OFFSET: 9-bit signed, [-256, 255].
  int32_t input_zero_point = 0;
  int32_t output_zero_point = 0;
  // QUANT_MUL[0] / QUANT_SHIFT[0]: multiplier in [0, 2^31), shift in [-31, 31].
  // The default is the identity (2^30 * 2^(1-31) = 1).
  int32_t multiplier = 1 << 30;
  int shift = 1;
  // NACC_ACT_MIN / NACC_ACT_MAX: -128 <= act_min <= act_max <= 127.
  int32_t act_min = -128;
  int32_t act_max = 127;
  // LUT mode: 256 int8 entries fetched from NACC_IN_ACT_DMA_ADDR, indexed by
  // the input byte read as uint8 (entry i is f((int8)i)); nullptr otherwise.
  const int8_t* lut = nullptr;
};

// Throws InvalidArgument naming the first register out of range, or
// Unsupported for the q7 Tanh / Sigmoid modes.
void validate_activation_params(const ActivationParams& params);

// out[i] = act(in[i]) for `size` elements (any layout: the unit is pointwise).
//   in   int8, Range [-128, 127];  out  int8, Range [act_min, act_max]
// `in` and `out` may be the same buffer.
void activation_s8(const ActivationParams& params, int64_t size, const int8_t* in, int8_t* out);

// TFLite's int8 RELU family and the registers that reproduce it.
enum class ReluKind { kRelu, kRelu6, kReluN1To1 };
// Multiplier: QuantizeMultiplier(input_scale / output_scale), the quotient in
// float32 as activations.cc ReluPrepare; range: QuantizedReluX's
// max(-128, zp + round(lo / s)), min(127, zp + round(hi / s)) in float32.
// Throws InvalidArgument for non-positive or non-finite scales or zero points
// outside [-128, 127].
ActivationParams tflite_relu_params(ReluKind kind, float input_scale, int32_t input_zero_point,
                                    float output_scale, int32_t output_zero_point);

// A 256-entry table in the unit's order (entry i is the output for input
// (int8)i), equal entry by entry to the table TFLite 2.21 builds for int8
// LOGISTIC / TANH under BUILTIN_REF: activations.cc SigmoidPrepare /
// TanhPrepare call LUTPopulate<int8_t> (kernels/internal/common.h) with
// float32 arithmetic: x = input_scale * (q - input_zp); y = f(x) with
// f = 1 / (1 + expf(-x)) or tanhf(x); q_out = (int)(roundf(y * (1 / output_scale))
// + output_zp), clamped to [-128, 127]. Eval is then a plain table lookup.
// TFLite requires output_scale == 1/256 for LOGISTIC (checked here); the
// converter also fixes its zero point at -128 and TANH's output at 1/128, 0
// (the defaults), but the reference kernels accept any, and so do these.
std::array<int8_t, 256> lut_tflite_logistic(float input_scale, int32_t input_zero_point,
                                            float output_scale = 1.0f / 256,
                                            int32_t output_zero_point = -128);
std::array<int8_t, 256> lut_tflite_tanh(float input_scale, int32_t input_zero_point,
                                        float output_scale = 1.0f / 128,
                                        int32_t output_zero_point = 0);

// The tables of TFLite 2.21's *reference* int8 HARD_SWISH, LEAKY_RELU and
// int8 -> int8 QUANTIZE (BUILTIN_REF), evaluated for all 256 inputs with the
// kernels' own fixed-point arithmetic (common/quant.h). Each throws
// InvalidArgument, naming the parameter and the allowed range, where TFLite
// rejects the quantization in Prepare or where its arithmetic leaves defined
// behaviour; every accepted quantization gives TFLite's bits.
//
// HARD_SWISH (activations.cc HardSwishPrepare, reference_ops::HardSwish):
//   hires = input_scale / 128 (float32); output multiplier hires / output_scale
//   and "reluish" multiplier hires / (3 / 32768), both float32 quotients,
//   QuantizeMultiplier'd and rounded to Q0.15 (DownScaleInt32ToInt16Multiplier).
//   Per input, in int16: v = (q - input_zp) * 128; the output-scale product
//   SRDHM16(v, out_mul); the reluish value v rescaled (saturating left shift
//   by exponent - 1, SRDHM16, last saturating shift by 1, or a rounding right
//   shift) into [-1, 1] as Q0.15, then mapped to [0, 1]; their product by
//   TFLite's truncating SaturatingDoublingHighMul; rounding right shift by
//   -out_exponent (rounding_divide_by_pot_s16); + output_zp; clamp.
//   Declined: an output multiplier >= 1, i.e. input_scale / output_scale
//   >= 128 (its exponent would be > 0: TFLite's HardSwishPrepare fails the
//   model), and a reluish multiplier >= 2^31 (input_scale >= ~2.5e7: a left
//   shift above 31, where TFLite's 1 << shift overflows int).
std::array<int8_t, 256> lut_tflite_hard_swish(float input_scale, int32_t input_zero_point,
                                              float output_scale, int32_t output_zero_point);

// LEAKY_RELU (activations.cc LeakyReluPrepare, reference_ops::QuantizeLeakyRelu):
//   identity multiplier = input_scale / output_scale and alpha multiplier =
//   input_scale * alpha / output_scale, both float32 expressions widened to
//   double and QuantizeMultiplier'd (the alpha one may be negative or zero);
//   x = q - input_zp; out = output_zp + MultiplyByQuantizedMultiplier(x, identity)
//   for x >= 0, with the alpha multiplier for x < 0; clamp. Any finite alpha
//   (0, negative, > 1). Declined: a non-finite multiplier or one needing a
//   left shift > 31 (a ratio >= 2^31: TFLite's 1 << shift is undefined).
std::array<int8_t, 256> lut_tflite_leaky_relu(float input_scale, int32_t input_zero_point,
                                              float output_scale, int32_t output_zero_point,
                                              float alpha);

// QUANTIZE int8 -> int8 (quantize.cc Prepare, reference_ops::Requantize):
//   multiplier = QuantizeMultiplier(double(input_scale) / double(output_scale));
//   out = clamp(MultiplyByQuantizedMultiplier(q - input_zp) + output_zp).
//   Declined: a ratio needing a left shift > 31 (as for LEAKY_RELU).
std::array<int8_t, 256> lut_tflite_requantize(float input_scale, int32_t input_zero_point,
                                              float output_scale, int32_t output_zero_point);

}  // namespace nacc

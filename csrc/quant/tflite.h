// TensorFlow Lite's reference int8 arithmetic, turned into NPU parameters
// (TF 2.21: kernels/internal/quantization_util.cc, common.h, activations.cc,
// add.cc / sub.cc / mul.cc, quantize.cc): QuantizeMultiplier and its
// variants, the fused-activation clamp range, the ReLU family's registers, the
// 256-entry activation tables (LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU,
// QUANTIZE) and the element-wise registers of ADD / SUB / MUL. Each gives the
// bits TFLite's BUILTIN_REF kernels compute; the parameter types are arch's
// (arch/unit_params.h), executed by the device's units.
#pragma once

#include <array>
#include <cstdint>

#include "arch/fixed_point.h"
#include "arch/unit_params.h"

namespace nacc {

// TFLite QuantizeMultiplier: frexp, round half away from zero, renormalise
// 2^31 to 2^30 with shift+1, flush shifts below -31 to zero.
QuantizedMultiplier quantize_multiplier(double real_multiplier);
// TFLite QuantizeMultiplierSmallerThanOneExp: as above, requires 0 < m < 1;
// the returned shift is <= 0.
QuantizedMultiplier quantize_multiplier_smaller_than_one(double real_multiplier);
// TFLite QuantizeMultiplierGreaterThanOne: requires m > 1; shift >= 0.
QuantizedMultiplier quantize_multiplier_greater_than_one(double real_multiplier);

// TFLite QuantizeMultiplier for a multiplier of either sign (LEAKY_RELU's
// alpha multiplier is negative for a negative alpha): frexp, round half away
// from zero; only +2^31 is renormalised (to 2^30 with shift+1), so a negative
// multiplier may come out as -2^31; shifts below -31 flush to zero. The
// multiplier is in [-2^31, -2^30] U {0} U [2^30, 2^31). Throws InvalidArgument
// for a non-finite value or a left shift above kMaxShift (31).
QuantizedMultiplier quantize_multiplier_signed(double real_multiplier);

// The clamp range TFLite derives for a fused activation
// (CalculateActivationRangeQuantized) on an int8 output.
enum class FusedActivation { kNone, kRelu, kReluN1To1, kRelu6 };
void fused_activation_range_int8(FusedActivation act, double output_scale, int32_t output_zero_point,
                                 int32_t* act_min, int32_t* act_max);
// The same on an int16 output ([-32768, 32767]; 16x8 ops, zero point 0).
void fused_activation_range_int16(FusedActivation act, double output_scale,
                                  int32_t output_zero_point, int32_t* act_min, int32_t* act_max);

// TFLite's int8 RELU family and the registers that reproduce it.
enum class ReluKind { kRelu, kRelu6, kReluN1To1 };
// Multiplier: QuantizeMultiplier(input_scale / output_scale), the quotient in
// float32 as activations.cc ReluPrepare; range: QuantizedReluX's
// max(-128, zp + round(lo / s)), min(127, zp + round(hi / s)) in float32.
// Throws InvalidArgument for non-positive or non-finite scales or zero points
// outside [-128, 127].
ActivationParams tflite_relu_params(ReluKind kind, float input_scale, int32_t input_zero_point,
                                    float output_scale, int32_t output_zero_point);

// The table of the RELU family (entry i is the output for input (int8)i):
// TFLite's ReluX with tflite_relu_params' registers on all 256 inputs, i.e.
// what ACT_MODE RELU / RELU6 / NONE computes with them.
std::array<int8_t, 256> lut_tflite_relu(ReluKind kind, float input_scale,
                                        int32_t input_zero_point, float output_scale,
                                        int32_t output_zero_point);

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

// TFLite-compatible register values (the Prepare arithmetic of TFLite 2.21's
// add.cc / sub.cc / mul.cc for int8 tensors). Scales are the float32 values a
// .tflite file stores; zero points are int8. The act range is TFLite's
// CalculateActivationRangeQuantized for `activation`.
//   ADD/SUB: left_shift 20; twice_max = 2 * max(s1, s2) (float, then double);
//            input_i real multiplier s_i / twice_max, output real multiplier
//            twice_max / (2^20 * s_out), each by QuantizeMultiplierSmallerThanOneExp.
//   MUL:     real multiplier (s1 * s2 / s_out) computed in float, QuantizeMultiplier.
// Throws InvalidArgument for non-positive or non-finite scales, zero points
// outside [-128, 127], or an output multiplier TFLite's int8 reference kernel
// cannot apply (>= 1 for ADD/SUB: only a tiny output scale does that).
ElementwiseParams tflite_add_params(float input1_scale, int32_t input1_zero_point,
                                    float input2_scale, int32_t input2_zero_point,
                                    float output_scale, int32_t output_zero_point,
                                    FusedActivation activation);
// ADD / SUB 16x8 (int16 tensors, zero points 0, pot_scale_int16 = false: the
// general path of add.cc / sub.cc): as above with left_shift 15 and the int16
// clamp.
ElementwiseParams tflite_add_sub_params_16x8(ElementwiseMode mode, float input1_scale,
                                             float input2_scale, float output_scale,
                                             FusedActivation activation);
// LOGISTIC / TANH 16x8 (activations.cc SigmoidPrepare / TanhPrepare for
// int16): the input multiplier and right shift of the 16-bit table modes
// (device/units/fm16.h sigmoid_tanh_s16). A power-of-two input scale 2^-12
// (also 2^-11 for TANH) gives (3 << shift, 0); any other scale
// (int(s * 4096 * 3 * 2^k), k) with the smallest k that takes it above
// 16383.5. Throws InvalidArgument for a non-positive scale, or a multiplier
// above 65535 (input scale > 5.3: x * multiplier would leave int32).
struct SigmoidTanh16Params {
  int32_t multiplier = 0;
  int32_t shift = 0;
};
SigmoidTanh16Params tflite_sigmoid_tanh16_params(bool tanh, float input_scale);
ElementwiseParams tflite_sub_params(float input1_scale, int32_t input1_zero_point,
                                    float input2_scale, int32_t input2_zero_point,
                                    float output_scale, int32_t output_zero_point,
                                    FusedActivation activation);
ElementwiseParams tflite_mul_params(float input1_scale, int32_t input1_zero_point,
                                    float input2_scale, int32_t input2_zero_point,
                                    float output_scale, int32_t output_zero_point,
                                    FusedActivation activation);

// MEAN over height and width as one depthwise pass with unit weights.
// TFLite 2.21's int8 MEAN on the reference kernels (reduce.cc EvalMean,
// kReference -> EvalQuantizedMean -> reference_ops::QuantizedMeanOrSum, one
// path for every keep_dims / axes / quantization) computes
//   out = clamp(MultiplyByQuantizedMultiplier(sum(x) - N * zi, m', s') + zo)
// where (m, s) = QuantizeMultiplier(si / so) and the 1/N is folded in:
//   k = min(floor(log2 N), 32, 31 + s), m' = (int64(m) << k) / N, s' = s - k.
// The depthwise unit computes MBQM(sum(w * (x - zi)) + bias, m, s) + zo with
// the same arithmetic (arch/fixed_point.h), so weights 1, no bias and (m', s')
// give the same bits for every input (docs/compiler.md §2, "MEAN").
// (m', s') for N reduced elements and the tensors' scales.
QuantizedMultiplier tflite_mean_requantization(float input_scale, float output_scale, int64_t n);

// TFLite's int8 output for the raw sum `sum` (no zero point subtracted) of n
// elements (tests and documentation of the formula).
int8_t tflite_mean_output(int64_t sum, int64_t n, float input_scale, int32_t input_zero_point,
                          float output_scale, int32_t output_zero_point);

// AVERAGE_POOL_2D's division on the output stage. TFLite's reference int8
// kernel (reference_integer_ops::AveragePool) sums the raw int8 values of the
// in-bounds cells of a window and divides by their count n rounding half away
// from zero ((sum + n/2) / n for sum > 0, (sum - n/2) / n otherwise, C++
// truncating division). MultiplyByQuantizedMultiplier(sum, m, s) with
// m = floor(2^31 / n) + 1, s = 0 (n >= 2; n = 1: 2^30, 1, exactly 1.0) gives
// the same integer for every sum in [-128 n, 127 n]: one rounding of
// sum * m / 2^31 (SaturatingRoundingDoublingHighMul: half up for a positive
// product, toward zero for a negative one), where m > 2^31 / n puts every tie
// strictly past its half-integer, away from zero, and the overshoot of
// |sum / n| is at most 128 n / 2^31 < 1 / (2 n) for n < 2896 — less than the
// distance of any non-tie sum / n from a half-integer. The argument covers
// n <= 2895 (n^2 < 2^23); larger counts are not lowered. The
// function checks every sum of the range and throws InvalidArgument if one
// differed (never for 1 <= n <= kMaxAveragePoolCells; tests) or n is outside.
inline constexpr int64_t kMaxAveragePoolCells = 2895;
QuantizedMultiplier tflite_average_pool_division(int64_t n);

// The same division for int16 sums (TFLite's reference_integer_ops::
// AveragePool on int16 rounds alike): the same (m, s), whose overshoot of
// |sum / n| is at most 32768 n / 2^31 = n / 2^16, below 1 / (2 n) for
// n^2 < 2^15, so n <= 181 (tests check every int16 sum of those counts).
// Throws InvalidArgument outside [1, kMaxAveragePoolCells16].
inline constexpr int64_t kMaxAveragePoolCells16 = 181;
QuantizedMultiplier tflite_average_pool_division16(int64_t n);

// TFLite's int8 average for the raw sum of n in-bounds cells (before the
// activation clamp): round half away from zero of sum / n, as the reference
// kernel computes it.
int32_t tflite_average_pool_output(int64_t sum, int64_t n);

}  // namespace nacc

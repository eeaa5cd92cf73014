// TensorFlow Lite's reference int8 arithmetic as NPU parameters (quant/tflite.h).
#include "quant/tflite.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "arch/limits.h"
#include "arch/unit_checks.h"
#include "common/error.h"

namespace nacc {

QuantizedMultiplier quantize_multiplier(double real_multiplier) {
  check_arg(std::isfinite(real_multiplier) && real_multiplier >= 0.0,
            "quantize_multiplier: multiplier must be finite and >= 0, got ", real_multiplier);
  QuantizedMultiplier out;
  if (real_multiplier == 0.0) return out;
  int shift = 0;
  const double q = std::frexp(real_multiplier, &shift);
  const int64_t one = int64_t{1} << limits::kMultiplierBits;  // 1.0 in Q0.31
  int64_t q_fixed = static_cast<int64_t>(std::round(q * static_cast<double>(one)));
  if (q_fixed == one) {
    q_fixed /= 2;
    ++shift;
  }
  if (shift < limits::kMinShift) {
    shift = 0;
    q_fixed = 0;
  }
  check_arg(shift <= limits::kMaxShift, "quantize_multiplier: multiplier ", real_multiplier,
            " is too large (needs a left shift of ", shift, " > ", limits::kMaxShift, ")");
  out.multiplier = static_cast<int32_t>(q_fixed);
  out.shift = shift;
  return out;
}

QuantizedMultiplier quantize_multiplier_signed(double real_multiplier) {
  check_arg(std::isfinite(real_multiplier), "quantize_multiplier_signed: multiplier must be "
            "finite, got ", real_multiplier);
  if (real_multiplier >= 0.0) return quantize_multiplier(real_multiplier);
  QuantizedMultiplier out;
  int shift = 0;
  const double q = std::frexp(real_multiplier, &shift);  // q in (-1, -0.5]
  const int64_t one = int64_t{1} << limits::kMultiplierBits;
  // q * 2^31 rounds to at least -2^31, which fits int32: no renormalisation.
  int64_t q_fixed = static_cast<int64_t>(std::round(q * static_cast<double>(one)));
  if (shift < limits::kMinShift) {
    shift = 0;
    q_fixed = 0;
  }
  check_arg(shift <= limits::kMaxShift, "quantize_multiplier_signed: multiplier ",
            real_multiplier, " is too large (needs a left shift of ", shift, " > ",
            limits::kMaxShift, ")");
  out.multiplier = static_cast<int32_t>(q_fixed);
  out.shift = shift;
  return out;
}

QuantizedMultiplier quantize_multiplier_smaller_than_one(double real_multiplier) {
  check_arg(real_multiplier > 0.0 && real_multiplier < 1.0,
            "quantize_multiplier_smaller_than_one: multiplier must be in (0, 1), got ",
            real_multiplier);
  QuantizedMultiplier out = quantize_multiplier(real_multiplier);
  check_arg(out.shift <= 0, "quantize_multiplier_smaller_than_one: shift ", out.shift, " > 0");
  return out;
}

QuantizedMultiplier quantize_multiplier_greater_than_one(double real_multiplier) {
  check_arg(real_multiplier > 1.0,
            "quantize_multiplier_greater_than_one: multiplier must be > 1, got ", real_multiplier);
  QuantizedMultiplier out = quantize_multiplier(real_multiplier);
  check_arg(out.shift >= 0, "quantize_multiplier_greater_than_one: shift ", out.shift, " < 0");
  return out;
}

namespace {

void fused_activation_range(FusedActivation act, double output_scale, int32_t output_zero_point,
                            int32_t qmin, int32_t qmax, int32_t* act_min, int32_t* act_max) {
  check_arg(output_scale > 0.0 && std::isfinite(output_scale),
            "fused activation: output scale must be positive and finite, got ", output_scale);
  // TFLite's Quantize lambda: zero_point + round(f / scale), computed in float.
  // TFLite fails Prepare ("no_integer_overflow_from_quantization") when the
  // rounded bound does not fit int32; so does this (instead of UB).
  auto quantize = [&](float f) {
    const float scaled = std::round(f / static_cast<float>(output_scale));
    check_arg(scaled >= -2147483648.0f && scaled < 2147483648.0f, "fused activation: bound ", f,
              " / output scale ", output_scale, " does not fit int32 (TFLite rejects the model)");
    return output_zero_point + static_cast<int32_t>(scaled);
  };
  switch (act) {
    case FusedActivation::kNone:
      *act_min = qmin;
      *act_max = qmax;
      break;
    case FusedActivation::kRelu:
      *act_min = std::max(qmin, quantize(0.0f));
      *act_max = qmax;
      break;
    case FusedActivation::kRelu6:
      *act_min = std::max(qmin, quantize(0.0f));
      *act_max = std::min(qmax, quantize(6.0f));
      break;
    case FusedActivation::kReluN1To1:
      *act_min = std::max(qmin, quantize(-1.0f));
      *act_max = std::min(qmax, quantize(1.0f));
      break;
  }
}

}  // namespace

void fused_activation_range_int8(FusedActivation act, double output_scale, int32_t output_zero_point,
                                 int32_t* act_min, int32_t* act_max) {
  fused_activation_range(act, output_scale, output_zero_point, -128, 127, act_min, act_max);
}

void fused_activation_range_int16(FusedActivation act, double output_scale,
                                  int32_t output_zero_point, int32_t* act_min, int32_t* act_max) {
  fused_activation_range(act, output_scale, output_zero_point, -32768, 32767, act_min, act_max);
}

namespace {

// float -> int32 as x86's cvttss2si (what TFLite's static_cast compiles to):
// truncation, and INT32_MIN for NaN or out-of-range values instead of UB.
inline int32_t truncate_like_x86(float f) {
  if (!(f >= -2147483648.0f && f < 2147483648.0f)) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(f);
}

float logistic_f32(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float tanh_f32(float x) { return std::tanh(x); }

// TFLite's LUTPopulate<int8_t> arithmetic, all in float32 (see activation.h).
std::array<int8_t, 256> populate_lut(float input_scale, int32_t input_zero_point,
                                     float output_scale, int32_t output_zero_point,
                                     float (*f)(float)) {
  std::array<int8_t, 256> lut{};
  const float inverse_scale = 1.0f / output_scale;
  for (int32_t q = -128; q <= 127; ++q) {
    const float dequantized = input_scale * static_cast<float>(q - input_zero_point);
    const float transformed = f(dequantized);
    const float rescaled = std::round(transformed * inverse_scale);
    const int32_t quantized =
        truncate_like_x86(rescaled + static_cast<float>(output_zero_point));
    lut[static_cast<uint8_t>(static_cast<int8_t>(q))] =
        static_cast<int8_t>(std::min(std::max(quantized, -128), 127));
  }
  return lut;
}

// Scales and int8 zero points of the input and output tensors.
void check_tensor_quantization(const char* op, float input_scale, int32_t input_zero_point,
                               float output_scale, int32_t output_zero_point) {
  detail::check_scale(op, "input", input_scale);
  detail::check_scale(op, "output", output_scale);
  detail::check_zero_point(op, "input zero point", input_zero_point, "int8 tensor");
  detail::check_zero_point(op, "output zero point", output_zero_point, "int8 tensor");
}

// QuantizeMultiplier of a TFLite Prepare, with the op and the multiplier's
// role in the message when TFLite's arithmetic could not use the result:
// its MultiplyByQuantizedMultiplier computes x * (1 << shift), undefined for
// a shift above 31 (a real multiplier >= 2^31), so those are declined.
QuantizedMultiplier prepare_multiplier(const char* op, const char* what, double real,
                                       bool allow_negative = false) {
  check_arg(std::isfinite(real) && (allow_negative || real >= 0.0), op, ": ", what, " ", real,
            " is not a finite", allow_negative ? "" : ", non-negative", " number");
  try {
    return allow_negative ? quantize_multiplier_signed(real) : quantize_multiplier(real);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(str_cat(op, ": ", what, " ", real, ": ", e.what(),
                                  " (TFLite's 1 << shift overflows int)"));
  }
}

// The 256 table entries of f(q) for q = -128..127, in the unit's order.
template <typename F>
std::array<int8_t, 256> tabulate(F&& f) {
  std::array<int8_t, 256> lut{};
  for (int32_t q = -128; q <= 127; ++q) {
    lut[static_cast<uint8_t>(static_cast<int8_t>(q))] = saturate_to_int8(f(q));
  }
  return lut;
}

// TFLite's DownScaleInt32ToInt16Multiplier: a Q0.31 multiplier (>= 0) rounded
// to Q0.15, saturating near 1.0.
int16_t downscale_multiplier_q15(int32_t multiplier) {
  constexpr int32_t kRoundingOffset = 1 << 15;
  if (multiplier >= std::numeric_limits<int32_t>::max() - kRoundingOffset) {
    return std::numeric_limits<int16_t>::max();
  }
  return static_cast<int16_t>((multiplier + kRoundingOffset) >> 16);
}

// reference_ops::SaturatingLeftShift (hard_swish.h): value * 2^amount clamped
// to int16; amount in [0, 30].
int16_t saturating_left_shift_s16(int16_t value, int amount) {
  const int64_t r = int64_t{value} * (int64_t{1} << amount);
  return static_cast<int16_t>(std::min<int64_t>(std::max<int64_t>(r, INT16_MIN), INT16_MAX));
}

// reference_ops::SaturatingDoublingHighMul (hard_swish.h): like the rounding
// Q0.15 product but truncating toward zero.
int16_t saturating_doubling_high_mul_s16(int16_t a, int16_t b) {
  if (a == b && a == std::numeric_limits<int16_t>::min()) {
    return std::numeric_limits<int16_t>::max();
  }
  return static_cast<int16_t>((int32_t{a} * int32_t{b}) / (1 << 15));
}

void check_binary_quantization(const char* op, float s1, int32_t zp1, float s2, int32_t zp2,
                               float so, int32_t zpo) {
  detail::check_scale(op, "input1", s1);
  detail::check_scale(op, "input2", s2);
  detail::check_scale(op, "output", so);
  detail::check_zero_point(op, "input1 zero point", zp1, "int8 tensor");
  detail::check_zero_point(op, "input2 zero point", zp2, "int8 tensor");
  detail::check_zero_point(op, "output zero point", zpo, "int8 tensor");
}

// TFLite add.cc / sub.cc Prepare for int8 (the general rescaling path).
ElementwiseParams tflite_add_sub_params(ElementwiseMode mode, const char* op, float s1,
                                        int32_t zp1, float s2, int32_t zp2, float so,
                                        int32_t zpo, FusedActivation activation,
                                        bool int16 = false) {
  check_binary_quantization(op, s1, zp1, s2, zp2, so, zpo);
  ElementwiseParams p;
  p.mode = mode;
  p.input1_offset = -zp1;
  p.input2_offset = -zp2;
  p.output_zero_point = zpo;
  p.left_shift = int16 ? 15 : 20;  // add.cc / sub.cc Prepare: 15 for int16 (general path)
  // As TFLite: 2 * max(float, float) is a float product, then widened; the
  // divisor (1 << left_shift) * output_scale is a float product too.
  const double twice_max_input_scale = 2 * std::max(s1, s2);
  const double real_input1_multiplier = s1 / twice_max_input_scale;
  const double real_input2_multiplier = s2 / twice_max_input_scale;
  const double real_output_multiplier = twice_max_input_scale / ((1 << p.left_shift) * so);
  check_arg(real_output_multiplier < 1.0, op, ": output scale ", so,
            " is too small for the input scales (real output multiplier ",
            real_output_multiplier,
            " >= 1; TFLite's int8 reference kernel applies it as a right shift only)");
  const QuantizedMultiplier q1 = quantize_multiplier_smaller_than_one(real_input1_multiplier);
  const QuantizedMultiplier q2 = quantize_multiplier_smaller_than_one(real_input2_multiplier);
  const QuantizedMultiplier qo = quantize_multiplier_smaller_than_one(real_output_multiplier);
  p.input1_multiplier = q1.multiplier;
  p.input1_shift = q1.shift;
  p.input2_multiplier = q2.multiplier;
  p.input2_shift = q2.shift;
  p.output_multiplier = qo.multiplier;
  p.output_shift = qo.shift;
  if (int16) {
    fused_activation_range_int16(activation, so, zpo, &p.act_min, &p.act_max);
  } else {
    fused_activation_range_int8(activation, so, zpo, &p.act_min, &p.act_max);
  }
  return p;
}

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

ActivationParams tflite_relu_params(ReluKind kind, float input_scale, int32_t input_zero_point,
                                    float output_scale, int32_t output_zero_point) {
  const char* op = "tflite_relu_params";
  check_tensor_quantization(op, input_scale, input_zero_point, output_scale, output_zero_point);
  ActivationParams p;
  p.input_zero_point = input_zero_point;
  p.output_zero_point = output_zero_point;
  // As ReluPrepare: float32 quotient, widened to double.
  const float real_multiplier = input_scale / output_scale;
  check_arg(std::isfinite(real_multiplier) && real_multiplier > 0.0f, op,
            ": input_scale / output_scale = ", real_multiplier,
            " is not a positive finite float32");
  const QuantizedMultiplier q = quantize_multiplier(static_cast<double>(real_multiplier));
  p.multiplier = q.multiplier;
  p.shift = q.shift;
  // QuantizedReluX's bounds are CalculateActivationRangeQuantized's for the
  // matching fused activation (same float32 round(bound / scale) + zp).
  FusedActivation fused = FusedActivation::kRelu;
  switch (kind) {
    case ReluKind::kRelu:
      p.mode = ActMode::RELU;
      fused = FusedActivation::kRelu;
      break;
    case ReluKind::kRelu6:
      p.mode = ActMode::RELU6;
      fused = FusedActivation::kRelu6;
      break;
    case ReluKind::kReluN1To1:
      p.mode = ActMode::NONE;
      fused = FusedActivation::kReluN1To1;
      break;
  }
  fused_activation_range_int8(fused, output_scale, output_zero_point, &p.act_min, &p.act_max);
  return p;
}

std::array<int8_t, 256> lut_tflite_relu(ReluKind kind, float input_scale,
                                        int32_t input_zero_point, float output_scale,
                                        int32_t output_zero_point) {
  const ActivationParams p =
      tflite_relu_params(kind, input_scale, input_zero_point, output_scale, output_zero_point);
  // optimized_ops::ReluX: zp_out + MultiplyByQuantizedMultiplier(q - zp_in), clamped to
  // QuantizedReluX's bounds (act_min >= zp_out for RELU and RELU6 already).
  return tabulate([&](int32_t q) {
    const int32_t v = p.output_zero_point +
                      multiply_by_quantized_multiplier(q - p.input_zero_point, p.multiplier, p.shift);
    return std::min(std::max(v, p.act_min), p.act_max);
  });
}

std::array<int8_t, 256> lut_tflite_logistic(float input_scale, int32_t input_zero_point,
                                            float output_scale, int32_t output_zero_point) {
  const char* op = "lut_tflite_logistic";
  check_tensor_quantization(op, input_scale, input_zero_point, output_scale, output_zero_point);
  check_arg(output_scale == 1.0f / 256, op, ": output scale ", output_scale,
            " must be 1/256 (TFLite int8 LOGISTIC requires it)");
  return populate_lut(input_scale, input_zero_point, output_scale, output_zero_point,
                      &logistic_f32);
}

std::array<int8_t, 256> lut_tflite_tanh(float input_scale, int32_t input_zero_point,
                                        float output_scale, int32_t output_zero_point) {
  check_tensor_quantization("lut_tflite_tanh", input_scale, input_zero_point, output_scale,
                            output_zero_point);
  return populate_lut(input_scale, input_zero_point, output_scale, output_zero_point, &tanh_f32);
}

std::array<int8_t, 256> lut_tflite_hard_swish(float input_scale, int32_t input_zero_point,
                                              float output_scale, int32_t output_zero_point) {
  const char* op = "lut_tflite_hard_swish";
  check_tensor_quantization(op, input_scale, input_zero_point, output_scale, output_zero_point);
  // HardSwishPrepare, in float32 as TFLite computes it.
  const float hires_input_scale = (1.0f / 128.0f) * input_scale;
  const float reluish_scale = 3.0f / 32768.0f;
  const float output_real = hires_input_scale / output_scale;
  const float reluish_real = hires_input_scale / reluish_scale;
  // QuantizeMultiplier's exponent is <= 0 exactly when the float32 quotient is
  // below 1 (no float32 below 1 rounds up to 2^31 in Q0.31).
  check_arg(output_real < 1.0f, op, ": output multiplier input_scale / (128 * output_scale) = ",
            output_real, " is not below 1; TFLite's HardSwishPrepare requires its exponent "
            "to be <= 0 and fails the model");
  const QuantizedMultiplier out_q = prepare_multiplier(
      op, "output multiplier input_scale / (128 * output_scale) =", static_cast<double>(output_real));
  const QuantizedMultiplier reluish_q =
      prepare_multiplier(op, "reluish multiplier input_scale * 256 / 3 =",
                         static_cast<double>(reluish_real));
  const int16_t out_multiplier = downscale_multiplier_q15(out_q.multiplier);
  const int16_t reluish_multiplier = downscale_multiplier_q15(reluish_q.multiplier);
  const int reluish_exponent = reluish_q.shift;  // in [-31, 31]
  return tabulate([&](int32_t q) -> int32_t {
    // reference_ops::HardSwish, all in int16 as TFLite does it.
    const int16_t input_value = static_cast<int16_t>(q - input_zero_point);
    const int16_t hires_value = static_cast<int16_t>(input_value * (1 << 7));
    const int16_t preshift_output =
        saturating_rounding_doubling_high_mul_s16(hires_value, out_multiplier);
    int16_t reluish = hires_value;
    if (reluish_exponent > 0) reluish = saturating_left_shift_s16(reluish, reluish_exponent - 1);
    reluish = saturating_rounding_doubling_high_mul_s16(reluish, reluish_multiplier);
    if (reluish_exponent > 0) reluish = saturating_left_shift_s16(reluish, 1);
    if (reluish_exponent < 0) reluish = rounding_divide_by_pot_s16(reluish, -reluish_exponent);
    // [-1, 1] -> [0, 1] in Q0.15.
    reluish = static_cast<int16_t>((int32_t{reluish} + (1 << 15)) >> 1);
    const int16_t preshift = saturating_doubling_high_mul_s16(reluish, preshift_output);
    const int16_t shifted = rounding_divide_by_pot_s16(preshift, -out_q.shift);
    return static_cast<int16_t>(int32_t{shifted} + output_zero_point);
  });
}

std::array<int8_t, 256> lut_tflite_leaky_relu(float input_scale, int32_t input_zero_point,
                                              float output_scale, int32_t output_zero_point,
                                              float alpha) {
  const char* op = "lut_tflite_leaky_relu";
  check_tensor_quantization(op, input_scale, input_zero_point, output_scale, output_zero_point);
  check_arg(std::isfinite(alpha), op, ": alpha ", alpha, " must be finite");
  // LeakyReluPrepare: float32 expressions, widened to double.
  const float identity_real = input_scale / output_scale;
  const float alpha_real = input_scale * alpha / output_scale;
  const QuantizedMultiplier identity = prepare_multiplier(
      op, "identity multiplier input_scale / output_scale =", static_cast<double>(identity_real));
  const QuantizedMultiplier slope =
      prepare_multiplier(op, "alpha multiplier input_scale * alpha / output_scale =",
                         static_cast<double>(alpha_real), /*allow_negative=*/true);
  return tabulate([&](int32_t q) {
    const int32_t x = q - input_zero_point;
    const QuantizedMultiplier& m = x >= 0 ? identity : slope;
    return wrapping_add(output_zero_point, multiply_by_quantized_multiplier(x, m.multiplier, m.shift));
  });
}

std::array<int8_t, 256> lut_tflite_requantize(float input_scale, int32_t input_zero_point,
                                              float output_scale, int32_t output_zero_point) {
  const char* op = "lut_tflite_requantize";
  check_tensor_quantization(op, input_scale, input_zero_point, output_scale, output_zero_point);
  const QuantizedMultiplier m = prepare_multiplier(
      op, "multiplier input_scale / output_scale =",
      static_cast<double>(input_scale) / static_cast<double>(output_scale));
  return tabulate([&](int32_t q) {
    return wrapping_add(multiply_by_quantized_multiplier(q - input_zero_point, m.multiplier, m.shift),
                        output_zero_point);
  });
}

ElementwiseParams tflite_add_params(float input1_scale, int32_t input1_zero_point,
                                    float input2_scale, int32_t input2_zero_point,
                                    float output_scale, int32_t output_zero_point,
                                    FusedActivation activation) {
  return tflite_add_sub_params(ElementwiseMode::ADD, "tflite_add_params", input1_scale,
                               input1_zero_point, input2_scale, input2_zero_point,
                               output_scale, output_zero_point, activation);
}

ElementwiseParams tflite_add_sub_params_16x8(ElementwiseMode mode, float input1_scale,
                                             float input2_scale, float output_scale,
                                             FusedActivation activation) {
  return tflite_add_sub_params(mode, "tflite_add_sub_params_16x8", input1_scale, 0, input2_scale,
                               0, output_scale, 0, activation, true);
}

SigmoidTanh16Params tflite_sigmoid_tanh16_params(bool tanh, float input_scale) {
  check_arg(std::isfinite(input_scale) && input_scale > 0.0f, "tflite_sigmoid_tanh16_params: ",
            "input scale ", input_scale, " must be positive");
  // CheckedLog2 (kernels/internal/quantization_util), in float as TFLite has it.
  const float x_log2 = std::log(input_scale) * (1.0f / std::log(2.0f));
  const float rounded = std::round(x_log2);
  const int shift_pot = (15 - 3) + static_cast<int>(rounded);
  const bool pot = std::abs(x_log2 - rounded) < 1e-3f &&
                   (shift_pot == 0 || (tanh && shift_pot == 1));
  SigmoidTanh16Params p;
  if (pot) {
    p.multiplier = 3 << shift_pot;
    p.shift = 0;
    return p;
  }
  double multiplier = static_cast<double>(input_scale) * 4096.0 * 3.0;
  int shift = 0;
  while (multiplier <= 32767.0 / 2.0 && shift <= 30) {
    ++shift;
    multiplier *= 2.0;
  }
  check_arg(multiplier <= 65535.0, "tflite_sigmoid_tanh16_params: input scale ", input_scale,
            " gives the input multiplier ", multiplier,
            " (above 65535, the int16 product would leave int32)");
  p.multiplier = static_cast<int32_t>(multiplier);
  p.shift = shift;
  return p;
}

ElementwiseParams tflite_sub_params(float input1_scale, int32_t input1_zero_point,
                                    float input2_scale, int32_t input2_zero_point,
                                    float output_scale, int32_t output_zero_point,
                                    FusedActivation activation) {
  return tflite_add_sub_params(ElementwiseMode::SUB, "tflite_sub_params", input1_scale,
                               input1_zero_point, input2_scale, input2_zero_point,
                               output_scale, output_zero_point, activation);
}

ElementwiseParams tflite_mul_params(float input1_scale, int32_t input1_zero_point,
                                    float input2_scale, int32_t input2_zero_point,
                                    float output_scale, int32_t output_zero_point,
                                    FusedActivation activation) {
  const char* op = "tflite_mul_params";
  check_binary_quantization(op, input1_scale, input1_zero_point, input2_scale, input2_zero_point,
                            output_scale, output_zero_point);
  ElementwiseParams p;
  p.mode = ElementwiseMode::MUL;
  p.input1_offset = -input1_zero_point;
  p.input2_offset = -input2_zero_point;
  p.output_zero_point = output_zero_point;
  p.left_shift = 0;
  // As TFLite mul.cc: the product and quotient are float arithmetic.
  const float real_multiplier_f = input1_scale * input2_scale / output_scale;
  check_arg(std::isfinite(real_multiplier_f) && real_multiplier_f > 0.0f, op,
            ": real multiplier s1 * s2 / s_out = ", real_multiplier_f,
            " is not a positive finite float32");
  const QuantizedMultiplier q = quantize_multiplier(static_cast<double>(real_multiplier_f));
  p.output_multiplier = q.multiplier;
  p.output_shift = q.shift;
  fused_activation_range_int8(activation, output_scale, output_zero_point, &p.act_min,
                              &p.act_max);
  return p;
}

QuantizedMultiplier tflite_mean_requantization(float input_scale, float output_scale, int64_t n) {
  check_arg(n >= 1, "tflite_mean_requantization: ", n, " reduced elements");
  const QuantizedMultiplier q =
      quantize_multiplier(static_cast<double>(input_scale) / static_cast<double>(output_scale));
  int k = floor_log2(static_cast<uint64_t>(n));
  k = std::min(k, 32);
  k = std::min(k, 31 + q.shift);
  QuantizedMultiplier r;
  r.multiplier = static_cast<int32_t>((static_cast<int64_t>(q.multiplier) << k) / n);
  r.shift = q.shift - k;
  return r;
}

int8_t tflite_mean_output(int64_t sum, int64_t n, float input_scale, int32_t input_zero_point,
                          float output_scale, int32_t output_zero_point) {
  const QuantizedMultiplier r = tflite_mean_requantization(input_scale, output_scale, n);
  const int32_t shifted = static_cast<int32_t>(sum - int64_t(input_zero_point) * n);
  const int32_t v = multiply_by_quantized_multiplier(shifted, r.multiplier, r.shift) + output_zero_point;
  return static_cast<int8_t>(std::min(std::max(v, int32_t(-128)), int32_t(127)));
}

int32_t tflite_average_pool_output(int64_t sum, int64_t n) {
  check_arg(n >= 1, "tflite_average_pool_output: ", n, " cells");
  return static_cast<int32_t>(sum > 0 ? (sum + n / 2) / n : (sum - n / 2) / n);
}

QuantizedMultiplier tflite_average_pool_division(int64_t n) {
  check_arg(n >= 1 && n <= kMaxAveragePoolCells, "tflite_average_pool_division: ", n,
            " cells out of range [1, ", kMaxAveragePoolCells, "]");
  QuantizedMultiplier q;
  if (n == 1) {
    q.multiplier = int32_t(1) << 30;
    q.shift = 1;
  } else {
    // Strictly above 2^31 / n: SaturatingRoundingDoublingHighMul rounds a
    // negative tie toward zero, so an exact 2^31 / n (n a power of two) would
    // give -127 for -127.5; one more puts every tie past its half-integer.
    q.multiplier = static_cast<int32_t>((int64_t(1) << 31) / n + 1);
    q.shift = 0;
  }
  // Every sum of n int8 values: the output stage must give TFLite's division.
  for (int64_t sum = -128 * n; sum <= 127 * n; ++sum) {
    const int32_t got = multiply_by_quantized_multiplier(int32_t(sum), q.multiplier, q.shift);
    check_arg(got == tflite_average_pool_output(sum, n), "tflite_average_pool_division: ",
              "multiplier ", q.multiplier, " shift ", q.shift, " gives ", got, " for the sum ",
              sum, " of ", n, " cells, TFLite ", tflite_average_pool_output(sum, n));
  }
  return q;
}

QuantizedMultiplier tflite_average_pool_division16(int64_t n) {
  check_arg(n >= 1 && n <= kMaxAveragePoolCells16, "tflite_average_pool_division16: ", n,
            " cells out of range [1, ", kMaxAveragePoolCells16, "]");
  return tflite_average_pool_division(n);
}

}  // namespace nacc

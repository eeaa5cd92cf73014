// The activation unit: register validation, the reference per-element loop,
// a fast path that folds the whole pointwise function (requantize + clamp, or
// LUT + clamp) into one 256-byte table and then only looks bytes up, and the
// TFLite-compatible ReLU parameters and the LOGISTIC / TANH / HARD_SWISH /
// LEAKY_RELU / QUANTIZE table builders.
#include "device/units/activation.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/cpu.h"
#include "common/error.h"
#include "arch/limits.h"
#include "device/units/unit_checks.h"

namespace nacc {

namespace {

// The output of one input byte: the unit's definition.
inline int8_t activate_one(const ActivationParams& p, int32_t lo, int8_t x) {
  if (p.mode == ActMode::LUT) {
    return saturate_to_int8(p.lut[static_cast<uint8_t>(x)], p.act_min, p.act_max);
  }
  const int32_t v = p.output_zero_point + multiply_by_quantized_multiplier(
                                              x - p.input_zero_point, p.multiplier, p.shift);
  return saturate_to_int8(v, lo, p.act_max);
}

// Lower clamp bound: ReLU and ReLU6 also cut at real 0 (the output zero point).
int32_t lower_bound(const ActivationParams& p) {
  if (p.mode == ActMode::RELU || p.mode == ActMode::RELU6) {
    return std::max(p.act_min, p.output_zero_point);
  }
  return p.act_min;
}

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

}  // namespace

void validate_activation_params(const ActivationParams& p) {
  const char* op = "activation_s8";
  switch (p.mode) {
    case ActMode::RELU:
    case ActMode::RELU6:
    case ActMode::NONE:
      break;
    case ActMode::LUT:
      check_arg(p.lut != nullptr, op,
                ": ACT_MODE LUT (4'b0101) needs a 256-entry table (NACC_IN_ACT_DMA_ADDR)");
      break;
    case ActMode::TANH:
    case ActMode::SIGMOID:
      throw Unsupported(str_cat(op, ": ACT_MODE ", act_mode_name(p.mode), " (",
                                static_cast<int>(p.mode),
                                ") is the hardware's q7 (ACT_INT_W) function, not modelled; "
                                "int8 TANH / LOGISTIC run through ACT_MODE LUT (5) with "
                                "lut_tflite_tanh / lut_tflite_logistic"));
    default:
      throw InvalidArgument(str_cat(op, ": ACT_MODE ", static_cast<int>(p.mode),
                                    " is not a mode (RELU 0, RELU6 1, TANH 2, SIGMOID 3, "
                                    "NONE 4, LUT 5)"));
  }
  detail::check_offset(op, "input_zero_point", p.input_zero_point,
                       "NACC_FM_OFFSET.IN_FM_OFFSET");
  detail::check_offset(op, "output_zero_point", p.output_zero_point,
                       "NACC_FM_OFFSET.OUT_FM_OFFSET");
  detail::check_multiplier(op, "multiplier", -1, p.multiplier, "QUANT_MUL[0]");
  detail::check_shift(op, "shift", -1, p.shift, limits::kMaxShift, "QUANT_SHIFT[0]");
  detail::check_act_range(op, p.act_min, p.act_max);
}

void activation_s8(const ActivationParams& params, int64_t size, const int8_t* in, int8_t* out) {
  validate_activation_params(params);
  check_arg(size >= 0, "activation_s8: size ", size, " must be >= 0");
  if (size == 0) return;
  detail::check_not_null("activation_s8", "input", in);
  detail::check_not_null("activation_s8", "output", out);
  const int32_t lo = lower_bound(params);
  if (kernel_path() == KernelPath::kReference) {
    for (int64_t i = 0; i < size; ++i) out[i] = activate_one(params, lo, in[i]);
    return;
  }
  // Fast path: any int8 -> int8 pointwise function is a 256-byte table.
  int8_t table[256];
  for (int v = 0; v < 256; ++v) {
    table[v] = activate_one(params, lo, static_cast<int8_t>(static_cast<uint8_t>(v)));
  }
  for (int64_t i = 0; i < size; ++i) out[i] = table[static_cast<uint8_t>(in[i])];
}

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

}  // namespace nacc

// Quantization parameter derivation, TFLite-compatible (see quant.h).
#include "common/quant.h"

#include <cmath>

#include "common/error.h"
#include "arch/limits.h"

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

void fused_activation_range_int8(FusedActivation act, double output_scale, int32_t output_zero_point,
                                 int32_t* act_min, int32_t* act_max) {
  check_arg(output_scale > 0.0 && std::isfinite(output_scale),
            "fused activation: output scale must be positive and finite, got ", output_scale);
  const int32_t qmin = -128;
  const int32_t qmax = 127;
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

}  // namespace nacc

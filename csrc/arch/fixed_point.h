// The NPU's fixed-point arithmetic (NACC_SPEC §1): the requantization its
// output stages and element-wise unit compute, bit for bit as gemmlowp and
// TensorFlow Lite's reference kernels define it (SaturatingRoundingDoublingHighMul,
// RoundingDivideByPOT, MultiplyByQuantizedMultiplier), and the real-scale
// form of TFLite's reference FULLY_CONNECTED. How a host runtime turns its
// float scales into these multipliers is quant/ (quant/tflite.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace nacc {

// A real multiplier expressed as quantized_multiplier * 2^(shift - 31):
// the QUANT_MUL / QUANT_SHIFT register pair. multiplier is in [2^30, 2^31)
// (or 0); shift > 0 is a left shift.
struct QuantizedMultiplier {
  int32_t multiplier = 0;
  int shift = 0;
};

// gemmlowp SaturatingRoundingDoublingHighMul: (a * b * 2 + 2^31) >> 32 with
// round-half-away-from-zero nudging; saturates the single overflow case.
inline int32_t saturating_rounding_doubling_high_mul(int32_t a, int32_t b) {
  if (a == b && a == std::numeric_limits<int32_t>::min()) {
    return std::numeric_limits<int32_t>::max();
  }
  const int64_t ab = static_cast<int64_t>(a) * static_cast<int64_t>(b);
  const int64_t nudge = ab >= 0 ? (int64_t{1} << 30) : (1 - (int64_t{1} << 30));
  return static_cast<int32_t>((ab + nudge) / (int64_t{1} << 31));
}

// gemmlowp RoundingDivideByPOT: x / 2^exponent rounded half away from zero.
// exponent in [0, 31].
inline int32_t rounding_divide_by_pot(int32_t x, int exponent) {
  const int32_t mask = static_cast<int32_t>((int64_t{1} << exponent) - 1);
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

// gemmlowp's int16 SaturatingRoundingDoublingHighMul (Q0.15): (a * b + nudge)
// / 2^15 with nudge +-2^14, truncated toward zero; saturates (-2^15)^2.
inline int16_t saturating_rounding_doubling_high_mul_s16(int16_t a, int16_t b) {
  if (a == b && a == std::numeric_limits<int16_t>::min()) {
    return std::numeric_limits<int16_t>::max();
  }
  const int32_t ab = int32_t{a} * int32_t{b};
  const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
  return static_cast<int16_t>((ab + nudge) / (1 << 15));
}

// gemmlowp's RoundingDivideByPOT instantiated for int16_t, exponent in
// [0, 31], bit for bit including its behaviour for exponents >= 16: the mask
// (2^exponent - 1) is narrowed to int16 and becomes -1, so the result is +1
// for x >= 0 and -1 for x < 0 (TFLite's int8 HARD_SWISH reaches this with
// output multipliers below 2^-16).
inline int16_t rounding_divide_by_pot_s16(int16_t x, int exponent) {
  const int16_t mask = static_cast<int16_t>((int64_t{1} << exponent) - 1);
  const int16_t remainder = static_cast<int16_t>(x & mask);
  const int16_t threshold = static_cast<int16_t>((mask >> 1) + (x < 0 ? 1 : 0));
  return static_cast<int16_t>((x >> exponent) + (remainder > threshold ? 1 : 0));
}

// x * 2^left_shift with the two's-complement wrap-around of TFLite's int32
// multiply, but without signed-overflow undefined behaviour.
inline int32_t wrapping_shift_left(int32_t x, int left_shift) {
  return static_cast<int32_t>(static_cast<uint32_t>(x) << left_shift);
}

// TFLite MultiplyByQuantizedMultiplier (the default double-rounding form).
inline int32_t multiply_by_quantized_multiplier(int32_t x, int32_t multiplier, int shift) {
  const int left_shift = shift > 0 ? shift : 0;
  const int right_shift = shift > 0 ? 0 : -shift;
  return rounding_divide_by_pot(
      saturating_rounding_doubling_high_mul(wrapping_shift_left(x, left_shift), multiplier),
      right_shift);
}

// TFLite MultiplyByQuantizedMultiplierSmallerThanOneExp (shift <= 0).
inline int32_t multiply_by_quantized_multiplier_smaller_than_one(int32_t x, int32_t multiplier,
                                                                 int shift) {
  return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier), -shift);
}

// TFLite MultiplyByQuantizedMultiplierGreaterThanOne (shift >= 0).
inline int32_t multiply_by_quantized_multiplier_greater_than_one(int32_t x, int32_t multiplier,
                                                                 int shift) {
  return saturating_rounding_doubling_high_mul(wrapping_shift_left(x, shift), multiplier);
}

// TFLite's *reference* FULLY_CONNECTED int8 requantization (TF 2.21
// reference_integer_ops::FullyConnected / FullyConnectedPerChannel with float
// scales): the accumulator times the real effective scale
// (double(input_scale) * double(filter_scale) / double(output_scale)) in
// double, rounded half away from zero. It is not MultiplyByQuantizedMultiplier:
// the two differ by one near ties. A product outside int32 gives INT32_MIN,
// the value TFLite's static_cast<int32_t>(double) produces on x86-64
// (cvttsd2si "integer indefinite").
inline int32_t multiply_by_real_scale(int32_t x, double scale) {
  const double r = std::round(static_cast<double>(x) * scale);
  if (!(r >= -2147483648.0 && r < 2147483648.0)) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(r);
}

// x + y with two's-complement wrap-around (TFLite adds the output zero point
// to the scaled accumulator in int32), without signed-overflow UB.
inline int32_t wrapping_add(int32_t x, int32_t y) {
  return static_cast<int32_t>(static_cast<uint32_t>(x) + static_cast<uint32_t>(y));
}

// Clamps to [lo, hi] and narrows; used at the end of every output stage.
inline int8_t saturate_to_int8(int32_t v, int32_t lo = -128, int32_t hi = 127) {
  return static_cast<int8_t>(std::min(std::max(v, lo), hi));
}

}  // namespace nacc

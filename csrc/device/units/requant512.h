// TFLite's MultiplyByQuantizedMultiplier plus the output zero point on 16
// int32 lanes with AVX-512, the rounding of both of its steps fused into one
// arithmetic shift of an int64 product (the epilogue of the AVX-512 VNNI GEMM
// in gemm_s8.cc, and the scalings of the AVX-512 ADD/SUB in elementwise.cc).
// The AVX-512 depthwise unit keeps its int32 form: with this one (six
// per-channel vectors per 16 lanes instead of three) it measured 3-8% slower.
//
// For a right shift e in [1, kFusedMaxShift] (no left shift), a multiplier m
// in [0, 2^31) and B = x * m + 2^30: SaturatingRoundingDoublingHighMul(x, m)
// is h = floor(B / 2^31) (its nudge and truncating division agree with that
// floor for either sign; m < 2^31 never saturates) and RoundingDivideByPOT(h, e)
// is floor((h + 2^(e-1) - [h < 0]) / 2^e). Nested floor divisions compose, so
//   q + zp = floor((x * m + 2^30 + 2^(30+e) + zp * 2^(31+e) - [x < 0] * 2^31) / 2^(31+e))
// (x < 0 with h >= 0 only when h = 0, where both corrections give 0); the
// correction is bit 31 of each int64 lane, an and and a subtract (a sign mask
// and a masked subtract measured about 2% slower in the GEMM). The sum
// stays inside int64 for |x| <= 2^31, |zp| <= 128 and e <= 23. Even lanes
// shift by 31 + e and keep the low dword; odd lanes shift by e - 1 so that
// their result is the high dword, and one blend interleaves them: 12
// instructions per 16 outputs. tests/test_unit_isa_stages.py checks the GEMM
// against the reference loops over the stage's range, rounding ties of both
// signs and the int32 extremes; tests/test_unit_elementwise.py the ADD/SUB.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace nacc::detail {

constexpr int kFusedMaxShift = 23;

// The exponents and zero point requantize16_fused takes.
inline bool fused_requant_ok(int right_shift, int32_t output_zero_point) {
  return right_shift >= 1 && right_shift <= kFusedMaxShift && output_zero_point >= -128 &&
         output_zero_point <= 128;
}

// One lane's int64 constants: the addend, and the shift of an even (31 + e)
// or odd (e - 1) lane.
inline int64_t fused_requant_add(int right_shift, int32_t output_zero_point) {
  return (int64_t{1} << 30) + (int64_t{1} << (30 + right_shift)) +
         static_cast<int64_t>(static_cast<uint64_t>(static_cast<int64_t>(output_zero_point))
                              << (31 + right_shift));
}
inline int64_t fused_requant_shift(int right_shift, bool odd_lane) {
  return odd_lane ? right_shift - 1 : 31 + right_shift;
}

// acc: 16 int32 lanes; multiplier: lane 2i's multiplier in int64 lane i's low
// dword, multiplier_odd: lane 2i+1's; add/shift[0] for the even lanes (int64
// lane i = int32 lane 2i), [1] for the odd ones. Returns q + zp per lane.
__attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni"),
               always_inline)) inline __m512i
requantize16_fused(__m512i acc, __m512i multiplier, __m512i multiplier_odd, __m512i add_even,
                   __m512i add_odd, __m512i shift_even, __m512i shift_odd) {
  // Bit 31 of an int64 lane: the sign of its low int32 lane, which is 2^31
  // exactly when that lane is negative (the odd lanes' after the shift down).
  const __m512i bit31 = _mm512_set1_epi64(int64_t{1} << 31);
  const __m512i hi = _mm512_srli_epi64(acc, 32);
  __m512i even = _mm512_add_epi64(_mm512_mul_epi32(acc, multiplier), add_even);
  __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(hi, multiplier_odd), add_odd);
  even = _mm512_sub_epi64(even, _mm512_and_si512(acc, bit31));
  odd = _mm512_sub_epi64(odd, _mm512_and_si512(hi, bit31));
  return _mm512_mask_blend_epi32(0xAAAA, _mm512_srav_epi64(even, shift_even),
                                 _mm512_srav_epi64(odd, shift_odd));
}

}  // namespace nacc::detail

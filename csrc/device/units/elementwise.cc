// The element-wise unit: register validation, a
// plain reference loop over the broadcast output, and a fast path that merges
// dimensions into contiguous runs and processes each run 16 lanes at a time
// with AVX2 (scalar tail). Both give the bits of TFLite's reference kernels.
#include "device/units/elementwise.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "arch/limits.h"
#include "arch/unit_checks.h"
#include "common/cpu.h"
#include "common/error.h"
#include "device/units/requant512.h"

namespace nacc {

namespace {

// ---------------------------------------------------------------------------
// Scalar arithmetic, one element (inlined into every loop).

inline int32_t scale_input(int32_t x, int32_t offset, int left_shift, int32_t multiplier,
                           int shift) {
  return multiply_by_quantized_multiplier_smaller_than_one(
      wrapping_shift_left(x + offset, left_shift), multiplier, shift);
}

template <ElementwiseMode kMode>
inline int8_t compute_one(const ElementwiseParams& p, int32_t x1, int32_t x2) {
  int32_t v;
  if constexpr (kMode == ElementwiseMode::MUL) {
    v = multiply_by_quantized_multiplier((x1 + p.input1_offset) * (x2 + p.input2_offset),
                                         p.output_multiplier, p.output_shift);
  } else {
    const int32_t s1 =
        scale_input(x1, p.input1_offset, p.left_shift, p.input1_multiplier, p.input1_shift);
    const int32_t s2 =
        scale_input(x2, p.input2_offset, p.left_shift, p.input2_multiplier, p.input2_shift);
    const int32_t raw = kMode == ElementwiseMode::SUB ? s1 - s2 : s1 + s2;
    v = multiply_by_quantized_multiplier_smaller_than_one(raw, p.output_multiplier,
                                                          p.output_shift);
  }
  return saturate_to_int8(v + p.output_zero_point, p.act_min, p.act_max);
}

// The float32 modes (ELEMENT_FP32, unit_params.h): one element. kMode and
// kFloat are template parameters so every loop is specialised.
template <ElementwiseMode kMode, ElementwiseFloat kFloat>
inline int8_t compute_float_one(const ElementwiseParams& p, int32_t x1, int32_t x2) {
  const ValueDomain d = p.domain;
  const int32_t a = x1 + d.offset(), b = x2 + d.offset();
  const float* f = p.float_params;
  float v;
  float lo = static_cast<float>(d.qmin()), hi = static_cast<float>(d.qmax());
  int32_t add = 0;  // added after rounding (kDequantize: the output zero point)
  if constexpr (kFloat == ElementwiseFloat::kQLinear && kMode == ElementwiseMode::ADD) {
    v = std::fmaf(static_cast<float>(a), f[0], std::fmaf(static_cast<float>(b), f[1], f[2]));
  } else if constexpr (kFloat == ElementwiseFloat::kQLinear) {  // MUL
    const int32_t prod = (a + p.input1_offset) * (b + p.input2_offset);
    const float scaled = static_cast<float>(prod) * f[0];
    v = scaled + static_cast<float>(p.output_zero_point);
  } else {  // kDequantize
    const float da = static_cast<float>(a + p.input1_offset) * f[0];
    const float db = static_cast<float>(b + p.input2_offset) * f[1];
    const float y = kMode == ElementwiseMode::ADD ? da + db
                    : kMode == ElementwiseMode::SUB ? da - db
                                                    : da * db;
    v = y / f[2];
    add = p.output_zero_point;
    lo -= static_cast<float>(add);
    hi -= static_cast<float>(add);
  }
  // Clamping before rounding to nearest even gives the same integers as after.
  v = std::fmin(std::fmax(v, lo), hi);
  const int32_t q = static_cast<int32_t>(std::nearbyint(v)) + add - d.offset();
  return static_cast<int8_t>(std::min(std::max(q, p.act_min), p.act_max));
}

// ---------------------------------------------------------------------------
// Reference path: one loop nest over the output, operands indexed with
// broadcasting, exactly the definition.

template <ElementwiseMode kMode, ElementwiseFloat kFloat>
inline int8_t compute_any(const ElementwiseParams& p, int32_t x1, int32_t x2) {
  if constexpr (kFloat == ElementwiseFloat::kOff) {
    return compute_one<kMode>(p, x1, x2);
  } else {
    return compute_float_one<kMode, kFloat>(p, x1, x2);
  }
}

template <ElementwiseMode kMode, ElementwiseFloat kFloat>
void elementwise_reference(const ElementwiseParams& p, const Shape4& s1, const int8_t* in1,
                           const Shape4& s2, const int8_t* in2, const Shape4& so, int8_t* out) {
  auto index = [](const Shape4& s, int n, int h, int w, int c) {
    const int64_t nn = s.n == 1 ? 0 : n, hh = s.h == 1 ? 0 : h;
    const int64_t ww = s.w == 1 ? 0 : w, cc = s.c == 1 ? 0 : c;
    return ((nn * s.h + hh) * s.w + ww) * s.c + cc;
  };
  int64_t o = 0;
  for (int n = 0; n < so.n; ++n) {
    for (int h = 0; h < so.h; ++h) {
      for (int w = 0; w < so.w; ++w) {
        for (int c = 0; c < so.c; ++c) {
          out[o++] = compute_any<kMode, kFloat>(p, in1[index(s1, n, h, w, c)],
                                                in2[index(s2, n, h, w, c)]);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Fast path. The broadcast output is split into runs: the innermost dimension
// after merging every pair of dimensions that both operands walk contiguously.
// In a run each operand advances by 1 or stays put (stride 0: its value, and
// for ADD/SUB its scaled value, is computed once per run).

struct Run {
  const int8_t* a;
  const int8_t* b;
  bool a_const, b_const;
  int8_t* out;
  int64_t n;
};

template <ElementwiseMode kMode, ElementwiseFloat kFloat = ElementwiseFloat::kOff>
void run_scalar(const ElementwiseParams& p, const Run& r, int64_t start) {
  for (int64_t i = start; i < r.n; ++i) {
    r.out[i] = compute_any<kMode, kFloat>(p, r.a[r.a_const ? 0 : i], r.b[r.b_const ? 0 : i]);
  }
}

#define NACC_AVX2 __attribute__((target("avx2")))

// Vector constants of MultiplyByQuantizedMultiplier-style arithmetic.
struct RequantAvx2 {
  __m256i multiplier;  // in every 64-bit lane's low half (and the high half)
  __m128i left;        // left-shift count
  __m128i right;       // right-shift count (RoundingDivideByPOT exponent)
  __m256i mask;        // 2^right - 1
  __m256i half_mask;   // mask >> 1
};

NACC_AVX2 inline RequantAvx2 make_requant(int32_t multiplier, int left, int right) {
  RequantAvx2 r;
  r.multiplier = _mm256_set1_epi32(multiplier);
  r.left = _mm_cvtsi32_si128(left);
  r.right = _mm_cvtsi32_si128(right);
  const int32_t mask = static_cast<int32_t>((int64_t{1} << right) - 1);
  r.mask = _mm256_set1_epi32(mask);
  r.half_mask = _mm256_set1_epi32(mask >> 1);
  return r;
}

// SaturatingRoundingDoublingHighMul(a, m) for a multiplier m in [0, 2^31):
// floor((a * m + 2^30) / 2^31), which equals gemmlowp's nudge-and-truncate form
// for both signs; the saturating case (a == m == INT32_MIN) cannot occur.
NACC_AVX2 inline __m256i srdhm_avx2(__m256i a, __m256i m) {
  const __m256i nudge = _mm256_set1_epi64x(int64_t{1} << 30);
  const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(a, m), nudge);
  const __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(a, 32), m), nudge);
  // Bits 31..62 of each 64-bit product: into the low half (even lanes) or the
  // high half (odd lanes). Logical shifts suffice: only those bits are kept.
  return _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
}

// RoundingDivideByPOT(x, right): round half away from zero.
NACC_AVX2 inline __m256i rdbpot_avx2(__m256i x, const RequantAvx2& r) {
  const __m256i remainder = _mm256_and_si256(x, r.mask);
  const __m256i negative = _mm256_cmpgt_epi32(_mm256_setzero_si256(), x);  // -1 where x < 0
  const __m256i threshold = _mm256_sub_epi32(r.half_mask, negative);
  return _mm256_sub_epi32(_mm256_sra_epi32(x, r.right), _mm256_cmpgt_epi32(remainder, threshold));
}

NACC_AVX2 inline __m256i requant_avx2(__m256i x, const RequantAvx2& r) {
  return rdbpot_avx2(srdhm_avx2(_mm256_sll_epi32(x, r.left), r.multiplier), r);
}

// 16 int8 -> two vectors of 8 int32.
NACC_AVX2 inline void load16(const int8_t* p, __m256i* lo, __m256i* hi) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  *lo = _mm256_cvtepi8_epi32(v);
  *hi = _mm256_cvtepi8_epi32(_mm_srli_si128(v, 8));
}

// Two vectors of 8 int32, each already within [-128, 127] -> 16 int8 in order.
NACC_AVX2 inline void store16(int8_t* p, __m256i lo, __m256i hi) {
  const __m256i w16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(lo, hi), 0xD8);
  const __m128i b8 = _mm_packs_epi16(_mm256_castsi256_si128(w16), _mm256_extracti128_si256(w16, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), b8);
}

// + output zero point, clamp to [act_min, act_max].
NACC_AVX2 inline __m256i finish_avx2(__m256i v, __m256i zp, __m256i lo, __m256i hi) {
  return _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(v, zp), lo), hi);
}

template <ElementwiseMode kMode>
NACC_AVX2 void run_avx2(const ElementwiseParams& p, const Run& r) {
  const __m256i zp = _mm256_set1_epi32(p.output_zero_point);
  const __m256i lo_clamp = _mm256_set1_epi32(p.act_min);
  const __m256i hi_clamp = _mm256_set1_epi32(p.act_max);
  const __m256i off1 = _mm256_set1_epi32(p.input1_offset);
  const __m256i off2 = _mm256_set1_epi32(p.input2_offset);
  int64_t i = 0;
  if constexpr (kMode == ElementwiseMode::MUL) {
    const RequantAvx2 out_q = make_requant(p.output_multiplier, std::max(p.output_shift, 0),
                                           std::max(-p.output_shift, 0));
    // A constant operand: its offset value, broadcast.
    const __m256i a_val = _mm256_set1_epi32(r.a[0] + p.input1_offset);
    const __m256i b_val = _mm256_set1_epi32(r.b[0] + p.input2_offset);
    for (; i + 16 <= r.n; i += 16) {
      __m256i a_lo = a_val, a_hi = a_val, b_lo = b_val, b_hi = b_val;
      if (!r.a_const) {
        load16(r.a + i, &a_lo, &a_hi);
        a_lo = _mm256_add_epi32(a_lo, off1);
        a_hi = _mm256_add_epi32(a_hi, off1);
      }
      if (!r.b_const) {
        load16(r.b + i, &b_lo, &b_hi);
        b_lo = _mm256_add_epi32(b_lo, off2);
        b_hi = _mm256_add_epi32(b_hi, off2);
      }
      const __m256i lo = requant_avx2(_mm256_mullo_epi32(a_lo, b_lo), out_q);
      const __m256i hi = requant_avx2(_mm256_mullo_epi32(a_hi, b_hi), out_q);
      store16(r.out + i, finish_avx2(lo, zp, lo_clamp, hi_clamp),
              finish_avx2(hi, zp, lo_clamp, hi_clamp));
    }
  } else {
    const RequantAvx2 in1_q = make_requant(p.input1_multiplier, p.left_shift, -p.input1_shift);
    const RequantAvx2 in2_q = make_requant(p.input2_multiplier, p.left_shift, -p.input2_shift);
    const RequantAvx2 out_q = make_requant(p.output_multiplier, 0, -p.output_shift);
    const __m256i a_scaled = _mm256_set1_epi32(
        scale_input(r.a[0], p.input1_offset, p.left_shift, p.input1_multiplier, p.input1_shift));
    const __m256i b_scaled = _mm256_set1_epi32(
        scale_input(r.b[0], p.input2_offset, p.left_shift, p.input2_multiplier, p.input2_shift));
    for (; i + 16 <= r.n; i += 16) {
      __m256i a_lo = a_scaled, a_hi = a_scaled, b_lo = b_scaled, b_hi = b_scaled;
      if (!r.a_const) {
        load16(r.a + i, &a_lo, &a_hi);
        a_lo = requant_avx2(_mm256_add_epi32(a_lo, off1), in1_q);
        a_hi = requant_avx2(_mm256_add_epi32(a_hi, off1), in1_q);
      }
      if (!r.b_const) {
        load16(r.b + i, &b_lo, &b_hi);
        b_lo = requant_avx2(_mm256_add_epi32(b_lo, off2), in2_q);
        b_hi = requant_avx2(_mm256_add_epi32(b_hi, off2), in2_q);
      }
      __m256i lo, hi;
      if constexpr (kMode == ElementwiseMode::SUB) {
        lo = _mm256_sub_epi32(a_lo, b_lo);
        hi = _mm256_sub_epi32(a_hi, b_hi);
      } else {
        lo = _mm256_add_epi32(a_lo, b_lo);
        hi = _mm256_add_epi32(a_hi, b_hi);
      }
      store16(r.out + i, finish_avx2(requant_avx2(lo, out_q), zp, lo_clamp, hi_clamp),
              finish_avx2(requant_avx2(hi, out_q), zp, lo_clamp, hi_clamp));
    }
  }
  run_scalar<kMode>(p, r, i);
}

// ADD and SUB with AVX-512, 16 lanes at a time: each input's
// MultiplyByQuantizedMultiplierSmallerThanOneExp and the output's (with the
// zero point) as requant512.h's int64 form; the tail of a run masked, so no
// scalar loop is left. The path takes parameters whose shifted inputs fit
// int32 without wrapping (|x + offset| < 2^9, left_shift <= 21 < 22), input
// exponents in [0, kFusedMaxShift] (0: SaturatingRoundingDoublingHighMul
// alone), an output exponent in [1, kFusedMaxShift] and a zero point in
// [-128, 128]; other parameters take run_avx2.
#define NACC_AVX512 \
  __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))

// GCC 12 warns that the _mm512_undefined_* placeholders inside its own
// AVX-512 intrinsics "may be used uninitialized" (a false positive of the
// headers, as in gemm_s8.cc).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// One scaling's vectors: the multiplier (every lane) and requantize16_fused's
// constants, the same for every lane; exponent 0 uses the plain high multiply.
struct Scale512 {
  __m512i multiplier, add, shift_even, shift_odd;
  bool exponent0 = false;
};

struct Add512 {
  Scale512 in1, in2, out;
  __m512i off1, off2, act_min, act_max;
  __m128i left_shift;
};

inline bool add512_ok(const ElementwiseParams& p) {
  const auto in_ok = [](int shift) { return shift <= 0 && -shift <= detail::kFusedMaxShift; };
  return p.left_shift <= 21 && in_ok(p.input1_shift) && in_ok(p.input2_shift) &&
         detail::fused_requant_ok(-p.output_shift, p.output_zero_point);
}

NACC_AVX512 inline Scale512 make_scale512(int32_t multiplier, int right_shift, int32_t zp) {
  Scale512 s;
  s.multiplier = _mm512_set1_epi32(multiplier);
  s.exponent0 = right_shift == 0;
  if (!s.exponent0) {
    s.add = _mm512_set1_epi64(detail::fused_requant_add(right_shift, zp));
    s.shift_even = _mm512_set1_epi64(detail::fused_requant_shift(right_shift, false));
    s.shift_odd = _mm512_set1_epi64(detail::fused_requant_shift(right_shift, true));
  }
  return s;
}

NACC_AVX512 void make_add512(const ElementwiseParams& p, Add512* out) {
  Add512& c = *out;
  c.in1 = make_scale512(p.input1_multiplier, -p.input1_shift, 0);
  c.in2 = make_scale512(p.input2_multiplier, -p.input2_shift, 0);
  c.out = make_scale512(p.output_multiplier, -p.output_shift, p.output_zero_point);
  c.off1 = _mm512_set1_epi32(p.input1_offset);
  c.off2 = _mm512_set1_epi32(p.input2_offset);
  c.act_min = _mm512_set1_epi32(p.act_min);
  c.act_max = _mm512_set1_epi32(p.act_max);
  c.left_shift = _mm_cvtsi32_si128(p.left_shift);
}

NACC_AVX512 inline __m512i scale512(__m512i x, const Scale512& s) {
  if (s.exponent0) {  // floor((x * m + 2^30) / 2^31), as srdhm_avx2
    const __m512i nudge = _mm512_set1_epi64(int64_t{1} << 30);
    const __m512i even = _mm512_add_epi64(_mm512_mul_epi32(x, s.multiplier), nudge);
    const __m512i odd =
        _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), s.multiplier), nudge);
    return _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 31), _mm512_slli_epi64(odd, 1));
  }
  return detail::requantize16_fused(x, s.multiplier, s.multiplier, s.add, s.add, s.shift_even,
                                    s.shift_odd);
}

// One input's 16 (or `keep`) int8 values scaled: (x + offset) << left_shift, then its scaling.
NACC_AVX512 inline __m512i scale_input512(const int8_t* p, __mmask16 keep, __m512i offset,
                                          const Add512& c, const Scale512& s) {
  const __m512i x = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(keep, p));
  return scale512(_mm512_sll_epi32(_mm512_add_epi32(x, offset), c.left_shift), s);
}

template <ElementwiseMode kMode>
NACC_AVX512 void run_add512(const ElementwiseParams& p, const Run& r, const Add512& c) {
  // A constant operand: its scaled value, once per run.
  const __m512i a_scaled = _mm512_set1_epi32(
      scale_input(r.a[0], p.input1_offset, p.left_shift, p.input1_multiplier, p.input1_shift));
  const __m512i b_scaled = _mm512_set1_epi32(
      scale_input(r.b[0], p.input2_offset, p.left_shift, p.input2_multiplier, p.input2_shift));
  for (int64_t i = 0; i < r.n; i += 16) {
    const __mmask16 keep = r.n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (r.n - i)) - 1);
    const __m512i a = r.a_const ? a_scaled : scale_input512(r.a + i, keep, c.off1, c, c.in1);
    const __m512i b = r.b_const ? b_scaled : scale_input512(r.b + i, keep, c.off2, c, c.in2);
    const __m512i raw = kMode == ElementwiseMode::SUB ? _mm512_sub_epi32(a, b)
                                                       : _mm512_add_epi32(a, b);
    const __m512i q = _mm512_min_epi32(_mm512_max_epi32(scale512(raw, c.out), c.act_min),
                                       c.act_max);
    _mm_mask_storeu_epi8(r.out + i, keep, _mm512_cvtsepi32_epi8(q));
  }
}

#pragma GCC diagnostic pop

// The float32 modes, 8 lanes at a time: the same operations as
// compute_float_one in the same order (fused multiply-adds only where it
// has std::fmaf; the build passes -ffp-contract=off).
#define NACC_AVX2_FMA __attribute__((target("avx2,fma")))

NACC_AVX2_FMA inline __m256 load8_ps(const int8_t* p, int32_t offset) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_cvtepi8_epi32(v), _mm256_set1_epi32(offset)));
}

template <ElementwiseMode kMode, ElementwiseFloat kFloat>
NACC_AVX2_FMA void run_float_avx2(const ElementwiseParams& p, const Run& r) {
  const ValueDomain d = p.domain;
  const float* f = p.float_params;
  const int32_t add = kFloat == ElementwiseFloat::kDequantize ? p.output_zero_point : 0;
  const __m256 lo = _mm256_set1_ps(static_cast<float>(d.qmin() - add));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(d.qmax() - add));
  const __m256i post = _mm256_set1_epi32(add - d.offset());
  const __m256i act_lo = _mm256_set1_epi32(p.act_min), act_hi = _mm256_set1_epi32(p.act_max);
  const __m256 f0 = _mm256_set1_ps(f[0]), f1 = _mm256_set1_ps(f[1]), f2 = _mm256_set1_ps(f[2]);
  const __m256 zc = _mm256_set1_ps(static_cast<float>(p.output_zero_point));
  // Domain value minus zero point (MUL, kDequantize): x + offset - z.
  const int32_t sh1 = d.offset() + p.input1_offset, sh2 = d.offset() + p.input2_offset;
  const int32_t a_sh = kFloat == ElementwiseFloat::kQLinear && kMode == ElementwiseMode::ADD
                           ? d.offset() : sh1;
  const int32_t b_sh = kFloat == ElementwiseFloat::kQLinear && kMode == ElementwiseMode::ADD
                           ? d.offset() : sh2;
  const __m256 a_const = _mm256_set1_ps(static_cast<float>(r.a[0] + a_sh));
  const __m256 b_const = _mm256_set1_ps(static_cast<float>(r.b[0] + b_sh));
  // QLinearAdd with a constant B: its term folded once (ORT's scalar path),
  // the same value as evaluating it per element.
  const __m256 b_term = _mm256_fmadd_ps(b_const, f1, f2);
  int64_t i = 0;
  for (; i + 8 <= r.n; i += 8) {
    const __m256 a = r.a_const ? a_const : load8_ps(r.a + i, a_sh);
    const __m256 b = r.b_const ? b_const : load8_ps(r.b + i, b_sh);
    __m256 v;
    if constexpr (kFloat == ElementwiseFloat::kQLinear && kMode == ElementwiseMode::ADD) {
      v = _mm256_fmadd_ps(a, f0, r.b_const ? b_term : _mm256_fmadd_ps(b, f1, f2));
    } else if constexpr (kFloat == ElementwiseFloat::kQLinear) {
      // (a - zA) * (b - zB) exactly in int32 (|.| <= 255 * 255), then float.
      const __m256i prod = _mm256_mullo_epi32(_mm256_cvtps_epi32(a), _mm256_cvtps_epi32(b));
      v = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(prod), f0), zc);
    } else {
      const __m256 da = _mm256_mul_ps(a, f0), db = _mm256_mul_ps(b, f1);
      const __m256 y = kMode == ElementwiseMode::ADD   ? _mm256_add_ps(da, db)
                       : kMode == ElementwiseMode::SUB ? _mm256_sub_ps(da, db)
                                                       : _mm256_mul_ps(da, db);
      v = _mm256_div_ps(y, f2);
    }
    v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    __m256i q = _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    q = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(q, post), act_lo), act_hi);
    const __m128i w16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(r.out + i), _mm_packs_epi16(w16, w16));
  }
  run_scalar<kMode, kFloat>(p, r, i);
}

template <ElementwiseMode kMode, ElementwiseFloat kFloat>
void run_fast(const ElementwiseParams& p, const Run& r, bool use_vector, const Add512* add512) {
  if constexpr (kFloat == ElementwiseFloat::kOff && kMode != ElementwiseMode::MUL) {
    if (add512 != nullptr) {
      run_add512<kMode>(p, r, *add512);
      return;
    }
  }
  if constexpr (kFloat == ElementwiseFloat::kOff) {
    if (use_vector) {
      run_avx2<kMode>(p, r);
    } else {
      run_scalar<kMode>(p, r, 0);
    }
  } else {
    if (use_vector) {
      run_float_avx2<kMode, kFloat>(p, r);
    } else {
      run_scalar<kMode, kFloat>(p, r, 0);
    }
  }
}

template <ElementwiseMode kMode, ElementwiseFloat kFloat>
void elementwise_fast(const ElementwiseParams& p, const Shape4& s1, const int8_t* in1,
                      const Shape4& s2, const int8_t* in2, const Shape4& so, int8_t* out) {
  // Per dimension (outer to inner): output extent and each operand's stride
  // (0 where it is broadcast).
  struct Dim {
    int64_t extent, stride1, stride2;
  };
  const int e1[4] = {s1.n, s1.h, s1.w, s1.c};
  const int e2[4] = {s2.n, s2.h, s2.w, s2.c};
  const int eo[4] = {so.n, so.h, so.w, so.c};
  Dim dims[4];
  int64_t st1 = 1, st2 = 1;
  for (int d = 3; d >= 0; --d) {
    dims[d] = {eo[d], e1[d] == 1 ? 0 : st1, e2[d] == 1 ? 0 : st2};
    st1 *= e1[d];
    st2 *= e2[d];
  }
  // Drop extent-1 dimensions, then merge a dimension into the next inner one
  // when both operands continue contiguously across it.
  Dim merged[4];
  int k = 0;
  for (int d = 0; d < 4; ++d) {
    if (dims[d].extent == 1) continue;
    merged[k++] = dims[d];
  }
  for (int d = k - 2; d >= 0; --d) {
    Dim& outer = merged[d];
    const Dim& inner = merged[d + 1];
    if (outer.stride1 == inner.stride1 * inner.extent &&
        outer.stride2 == inner.stride2 * inner.extent) {
      const Dim combined{outer.extent * inner.extent, inner.stride1, inner.stride2};
      for (int j = d + 1; j + 1 < k; ++j) merged[j] = merged[j + 1];
      --k;
      merged[d] = combined;
    }
  }
  if (k == 0) merged[k++] = {1, 1, 1};
  // Pad to 4 dimensions at the outer end.
  Dim loop[4];
  for (int d = 0; d < 4 - k; ++d) loop[d] = {1, 0, 0};
  for (int d = 0; d < k; ++d) loop[4 - k + d] = merged[d];

  const Dim& inner = loop[3];
  // The float32 modes' vector path uses FMA (every AVX2 machine the
  // project targets has it; without it, the scalar std::fmaf path).
  const bool use_vector =
      use_avx2() && (kFloat == ElementwiseFloat::kOff || cpu_features().fma);
  // ADD/SUB on the AVX-512 path: its constants once per call.
  Add512 add512;
  const bool use512 = kFloat == ElementwiseFloat::kOff && kMode != ElementwiseMode::MUL &&
                      use_avx512_vnni() && add512_ok(p);
  if (use512) make_add512(p, &add512);
  int8_t* dst = out;
  for (int64_t i0 = 0; i0 < loop[0].extent; ++i0) {
    for (int64_t i1 = 0; i1 < loop[1].extent; ++i1) {
      for (int64_t i2 = 0; i2 < loop[2].extent; ++i2) {
        const int64_t o1 = i0 * loop[0].stride1 + i1 * loop[1].stride1 + i2 * loop[2].stride1;
        const int64_t o2 = i0 * loop[0].stride2 + i1 * loop[1].stride2 + i2 * loop[2].stride2;
        const Run r{in1 + o1, in2 + o2, inner.stride1 == 0, inner.stride2 == 0, dst,
                    inner.extent};
        run_fast<kMode, kFloat>(p, r, use_vector, use512 ? &add512 : nullptr);
        dst += inner.extent;
      }
    }
  }
}

template <ElementwiseMode kMode, ElementwiseFloat kFloat>
void dispatch_float(const ElementwiseParams& p, const Shape4& s1, const int8_t* in1,
                    const Shape4& s2, const int8_t* in2, const Shape4& so, int8_t* out) {
  if (kernel_path() == KernelPath::kReference) {
    elementwise_reference<kMode, kFloat>(p, s1, in1, s2, in2, so, out);
  } else {
    elementwise_fast<kMode, kFloat>(p, s1, in1, s2, in2, so, out);
  }
}

template <ElementwiseMode kMode>
void dispatch(const ElementwiseParams& p, const Shape4& s1, const int8_t* in1, const Shape4& s2,
              const int8_t* in2, const Shape4& so, int8_t* out) {
  switch (p.float_mode) {
    case ElementwiseFloat::kOff:
      return dispatch_float<kMode, ElementwiseFloat::kOff>(p, s1, in1, s2, in2, so, out);
    case ElementwiseFloat::kQLinear:
      if constexpr (kMode != ElementwiseMode::SUB) {  // rejected by the validation
        return dispatch_float<kMode, ElementwiseFloat::kQLinear>(p, s1, in1, s2, in2, so, out);
      }
      break;
    case ElementwiseFloat::kDequantize:
      return dispatch_float<kMode, ElementwiseFloat::kDequantize>(p, s1, in1, s2, in2, so, out);
  }
}

}  // namespace

Shape4 broadcast_shape(const Shape4& a, const Shape4& b) {
  const int ea[4] = {a.n, a.h, a.w, a.c};
  const int eb[4] = {b.n, b.h, b.w, b.c};
  const char* names[4] = {"N", "H", "W", "C"};
  // The message text is built only when an extent is out of range: a replayed
  // model calls this per layer, and formatting it cost more than the check.
  const auto in_range = [](int v) { return v >= 1 && v <= limits::kMaxFeatureMapDim; };
  bool extents_ok = true;
  for (int d = 0; d < 4; ++d) extents_ok = extents_ok && in_range(ea[d]) && in_range(eb[d]);
  if (!extents_ok) {
    const std::string shapes = str_cat("shapes ", a.str(), " / ", b.str(), ": dimension");
    for (int d = 0; d < 4; ++d) {
      detail::check_feature_map_extent("elementwise_s8", shapes, names[d], ea[d]);
      detail::check_feature_map_extent("elementwise_s8", shapes, names[d], eb[d]);
    }
  }
  int eo[4];
  for (int d = 0; d < 4; ++d) {
    if (!(ea[d] == eb[d] || ea[d] == 1 || eb[d] == 1))
        check_arg(false, "elementwise_s8: shapes ", a.str(),
              " and ", b.str(), " do not broadcast: dimension ", names[d], " is ", ea[d],
              " vs ", eb[d], " (each dimension must be equal or 1 on one side)");
    eo[d] = std::max(ea[d], eb[d]);
  }
  detail::check_batch("elementwise_s8", "output", eo[0]);
  return Shape4{eo[0], eo[1], eo[2], eo[3]};
}

void elementwise_s8(const ElementwiseParams& params, const Shape4& in1_shape, const int8_t* in1,
                    const Shape4& in2_shape, const int8_t* in2, const Shape4& out_shape,
                    int8_t* out) {
  validate_elementwise_params(params);
  const Shape4 expected = broadcast_shape(in1_shape, in2_shape);
  if (!(out_shape == expected)) check_arg(false, "elementwise_s8: output shape ", out_shape.str(),
            " must be the broadcast shape ", expected.str(), " of ", in1_shape.str(), " and ",
            in2_shape.str());
  detail::check_not_null("elementwise_s8", "input1", in1);
  detail::check_not_null("elementwise_s8", "input2", in2);
  detail::check_not_null("elementwise_s8", "output", out);
  switch (params.mode) {
    case ElementwiseMode::ADD:
      dispatch<ElementwiseMode::ADD>(params, in1_shape, in1, in2_shape, in2, out_shape, out);
      break;
    case ElementwiseMode::SUB:
      dispatch<ElementwiseMode::SUB>(params, in1_shape, in1, in2_shape, in2, out_shape, out);
      break;
    case ElementwiseMode::MUL:
      dispatch<ElementwiseMode::MUL>(params, in1_shape, in1, in2_shape, in2, out_shape, out);
      break;
    default:
      break;  // rejected by validate_elementwise_params
  }
}

}  // namespace nacc

// The MAC unit's AVX2 int8 GEMM and GEMV with fused requantization (see
// gemm_s8.h). The plain reference loops live beside each caller (conv.cc,
// fully_connected.cc); tests check every result of this file against them and
// against TFLite.
#include "device/units/gemm_s8.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "common/cpu.h"
#include "common/error.h"
#include "device/units/requant512.h"

#define NACC_AVX2 NACC_AVX2_TARGET
// AVX-512 VNNI with the 256-bit forms (the AVX2 epilogue inlines into it).
#define NACC_VNNI512 \
  __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))
// AVX-VNNI: the VEX vpdpbusd on ymm (Alder Lake and later, AMD Zen 5).
#define NACC_AVXVNNI __attribute__((target("avx2,fma,avxvnni")))

namespace nacc::detail {

namespace {

constexpr int kTileRows = 4;   // rows of A per micro-tile
constexpr int kTileCols = 16;  // columns of B per micro-tile (two 8-lane int32 vectors)
constexpr size_t kPanelBytes = 96 * 1024;  // A panel kept in L2 while the weights sweep it

// Per-column requantization parameters of one 16-column block, as vectors,
// with the per-channel constants of RoundingDivideByPOT precomputed.
struct BlockParams {
  __m256i col_offset[2];
  __m256i multiplier[2], multiplier_odd[2];  // multiplier_odd: odd lanes moved to even
  __m256i left_shift[2], right_shift[2];
  __m256i remainder_mask[2], half_mask[2];  // (1 << right_shift) - 1 and its half
  __m256d scale[4];                         // kRealScale
  __m256 float_scale[2];                    // kFloat32
  bool any_left_shift = false;
};

// Per-column parameter arrays padded to a multiple of 16 columns, so a block
// load never reads past the end.
struct PaddedParams {
  std::vector<int32_t> col_offset, multiplier, left_shift, right_shift, remainder_mask;
  std::vector<double> scale;
  std::vector<float> float_scale;
  std::vector<char> block_left_shift;  // per block: some column shifts left
  std::vector<char> block_zero_right_shift;  // per block: some column has right shift 0
  OutputStageKind kind = OutputStageKind::kFixedPoint;
  int32_t output_zero_point = 0;

  PaddedParams() = default;
  PaddedParams(int n, const int32_t* col_off, const OutputStage& rq) { reset(n, col_off, rq); }

  // Refills every array for n columns (reusing their storage: the VNNI GEMM
  // keeps one per thread, so a replayed layer allocates nothing here).
  void reset(int n, const int32_t* col_off, const OutputStage& rq) {
    kind = rq.kind;
    output_zero_point = rq.output_zero_point;
    const int np = (n + kTileCols - 1) / kTileCols * kTileCols;
    col_offset.assign(np, 0);
    if (col_off != nullptr) std::copy(col_off, col_off + n, col_offset.begin());
    block_left_shift.assign(np / kTileCols, 0);
    block_zero_right_shift.assign(np / kTileCols, 0);
    if (kind == OutputStageKind::kRealScale) {
      scale.assign(np, 0.0);
      std::copy(rq.real_scale, rq.real_scale + n, scale.begin());
      return;
    }
    if (kind == OutputStageKind::kFloat32) {
      float_scale.assign(np, 0.0f);
      std::copy(rq.float_scale, rq.float_scale + n, float_scale.begin());
      return;
    }
    multiplier.assign(np, 0);
    left_shift.assign(np, 0);
    right_shift.assign(np, 0);
    remainder_mask.assign(np, 0);
    for (int c = n; c < np; ++c) right_shift[c] = 1;  // padding lanes: any valid exponent
    // Branch-free (GCC vectorises it): a replayed model runs this per layer.
    for (int c = 0; c < n; ++c) {
      const int32_t sh = rq.shift[c];  // in [-31, 31] (check_output_stage)
      multiplier[c] = rq.multiplier[c];
      left_shift[c] = std::max(sh, 0);
      right_shift[c] = std::max(-sh, 0);
      remainder_mask[c] = static_cast<int32_t>((1u << right_shift[c]) - 1u);
    }
    for (int blk = 0; blk < np / kTileCols; ++blk) {
      int any_left = 0, any_zero = 0;
      for (int j = 0; j < kTileCols; ++j) {
        any_left |= left_shift[blk * kTileCols + j];
        any_zero |= right_shift[blk * kTileCols + j] == 0 ? 1 : 0;
      }
      block_left_shift[blk] = any_left != 0;
      block_zero_right_shift[blk] = any_zero;
    }
  }
};

// The stage's constants as vectors: zero point, clamp bounds, and the float32
// stage's bounds act_min - zp, act_max - zp.
struct StageVectors {
  OutputStageKind kind;
  __m256i zero_point, act_min, act_max;
  __m128i act_min8, act_max8;  // the bounds as 16 int8 lanes (the clamp after narrow16)
  __m256 float_lo, float_hi;
};

NACC_AVX2 inline StageVectors stage_vectors(const OutputStage& s) {
  StageVectors v;
  v.kind = s.kind;
  v.zero_point = _mm256_set1_epi32(s.output_zero_point);
  v.act_min = _mm256_set1_epi32(s.act_min);
  v.act_max = _mm256_set1_epi32(s.act_max);
  v.act_min8 = _mm_set1_epi8(static_cast<int8_t>(s.act_min));
  v.act_max8 = _mm_set1_epi8(static_cast<int8_t>(s.act_max));
  v.float_lo = _mm256_set1_ps(static_cast<float>(s.act_min - s.output_zero_point));
  v.float_hi = _mm256_set1_ps(static_cast<float>(s.act_max - s.output_zero_point));
  return v;
}

NACC_AVX2 inline __m256i load8(const int32_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Lanes [n0, n0 + 16) of the padded parameters.
NACC_AVX2 inline BlockParams load_block(const PaddedParams& p, int n0) {
  BlockParams b;
  for (int h = 0; h < 2; ++h) {
    b.col_offset[h] = load8(p.col_offset.data() + n0 + 8 * h);
    switch (p.kind) {
      case OutputStageKind::kRealScale:
        b.scale[2 * h] = _mm256_loadu_pd(p.scale.data() + n0 + 8 * h);
        b.scale[2 * h + 1] = _mm256_loadu_pd(p.scale.data() + n0 + 8 * h + 4);
        break;
      case OutputStageKind::kFloat32:
        b.float_scale[h] = _mm256_loadu_ps(p.float_scale.data() + n0 + 8 * h);
        break;
      default:
        b.multiplier[h] = load8(p.multiplier.data() + n0 + 8 * h);
        b.multiplier_odd[h] = _mm256_srli_epi64(b.multiplier[h], 32);
        b.left_shift[h] = load8(p.left_shift.data() + n0 + 8 * h);
        b.right_shift[h] = load8(p.right_shift.data() + n0 + 8 * h);
        b.remainder_mask[h] = load8(p.remainder_mask.data() + n0 + 8 * h);
        b.half_mask[h] = _mm256_srli_epi32(b.remainder_mask[h], 1);
        break;
    }
  }
  b.any_left_shift =
      p.kind == OutputStageKind::kFixedPoint && p.block_left_shift[n0 / kTileCols];
  return b;
}

// MultiplyByQuantizedMultiplier on 8 lanes of block half h (multiplier >= 0,
// so the saturating case of SaturatingRoundingDoublingHighMul cannot occur).
// The high-mul's "(ab + nudge) / 2^31 truncated" equals floor((ab + 2^30) / 2^31)
// for either sign of ab, and its int32 result is bits 31..62 of the 64-bit sum.
NACC_AVX2 inline __m256i multiply_by_quantized_multiplier8(__m256i x, const BlockParams& b,
                                                           int h) {
  const __m256i half = _mm256_set1_epi64x(int64_t{1} << 30);
  if (b.any_left_shift) {
    x = _mm256_sllv_epi32(x, b.left_shift[h]);  // wraps, as TFLite's x * (1 << shift)
  }
  __m256i even = _mm256_add_epi64(_mm256_mul_epi32(x, b.multiplier[h]), half);
  __m256i odd =
      _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), b.multiplier_odd[h]), half);
  even = _mm256_srli_epi64(even, 31);  // bits 31..62 -> low dword
  odd = _mm256_slli_epi64(odd, 1);     // bits 31..62 -> high dword
  const __m256i high = _mm256_blend_epi32(even, odd, 0xAA);
  // RoundingDivideByPOT with a per-lane exponent: + 1 when the remainder
  // exceeds half the divisor (half + 1 for negative values). The compares
  // give -1 for true, so the threshold and result subtract them.
  const __m256i remainder = _mm256_and_si256(high, b.remainder_mask[h]);
  const __m256i negative = _mm256_cmpgt_epi32(_mm256_setzero_si256(), high);
  const __m256i threshold = _mm256_sub_epi32(b.half_mask[h], negative);
  const __m256i round_up = _mm256_cmpgt_epi32(remainder, threshold);
  return _mm256_sub_epi32(_mm256_srav_epi32(high, b.right_shift[h]), round_up);
}

// std::round (half away from zero) on 4 doubles, exactly: x - trunc(x) is exact.
NACC_AVX2 inline __m256d round_half_away4(__m256d x) {
  const __m256d t = _mm256_round_pd(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256d frac = _mm256_sub_pd(x, t);
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256d up = _mm256_and_pd(_mm256_cmp_pd(frac, _mm256_set1_pd(0.5), _CMP_GE_OQ), one);
  const __m256d down = _mm256_and_pd(_mm256_cmp_pd(frac, _mm256_set1_pd(-0.5), _CMP_LE_OQ), one);
  return _mm256_sub_pd(_mm256_add_pd(t, up), down);
}

// multiply_by_real_scale on 8 lanes; cvttpd2dq gives INT32_MIN out of range,
// like the scalar cvttsd2si TFLite's cast compiles to.
NACC_AVX2 inline __m256i multiply_by_real_scale8(__m256i x, __m256d scale_lo, __m256d scale_hi) {
  const __m256d lo = _mm256_cvtepi32_pd(_mm256_castsi256_si128(x));
  const __m256d hi = _mm256_cvtepi32_pd(_mm256_extracti128_si256(x, 1));
  const __m128i qlo = _mm256_cvttpd_epi32(round_half_away4(_mm256_mul_pd(lo, scale_lo)));
  const __m128i qhi = _mm256_cvttpd_epi32(round_half_away4(_mm256_mul_pd(hi, scale_hi)));
  return _mm256_set_m128i(qhi, qlo);
}

// Requantizes 8 accumulators of lanes [8h, 8h + 8) of a block, the column
// offset already in them: requantize_output() up to its saturate_to_int8,
// i.e. (multiplier stage) + zero point, wrapping like its int32 add. The
// callers clamp after narrow16's saturating packs (clamp8): the packs keep
// the order of values, so that equals clamping in int32 (the float32 stage's
// result is in [act_min, act_max] already).
NACC_AVX2 inline __m256i requantize8(__m256i acc, const BlockParams& b, int h,
                                     const StageVectors& s) {
  if (s.kind == OutputStageKind::kFloat32) {
    // float(acc) * scale (one multiply), clamped in float, rounded half to even
    // (cvtps2dq under the default MXCSR), + zp: requantize_output's kFloat32.
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), b.float_scale[h]);
    v = _mm256_min_ps(_mm256_max_ps(v, s.float_lo), s.float_hi);
    return _mm256_add_epi32(_mm256_cvtps_epi32(v), s.zero_point);
  }
  const __m256i q = s.kind == OutputStageKind::kRealScale
                        ? multiply_by_real_scale8(acc, b.scale[2 * h], b.scale[2 * h + 1])
                        : multiply_by_quantized_multiplier8(acc, b, h);
  return _mm256_add_epi32(q, s.zero_point);
}

// Two vectors of 8 int32 -> 16 int8 in lane order, saturated.
NACC_AVX2 inline __m128i narrow16(__m256i v0, __m256i v1) {
  __m256i p = _mm256_packs_epi32(v0, v1);  // [v0 0-3, v1 0-3 | v0 4-7, v1 4-7]
  p = _mm256_permute4x64_epi64(p, 0xD8);   // [v0 0-3, v0 4-7 | v1 0-3, v1 4-7]
  return _mm_packs_epi16(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
}

NACC_AVX2 inline void store_partial(int8_t* dst, __m128i v, int count) {
  if (count == 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), v);
  } else {
    alignas(16) int8_t tmp[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(tmp), v);
    std::memcpy(dst, tmp, static_cast<size_t>(count));
  }
}

// The activation clamp of 16 saturated int8 outputs.
NACC_AVX2 inline __m128i clamp8(__m128i v, const StageVectors& s) {
  return _mm_min_epi8(_mm_max_epi8(v, s.act_min8), s.act_max8);
}

// Requantizes one row of a micro-tile (16 accumulators with the column offset
// in them; only v0 when cols <= 8) and stores `cols` bytes.
NACC_AVX2 inline void store_row(__m256i v0, __m256i v1, const BlockParams& params,
                                const StageVectors& stage, int8_t* dst, int cols) {
  v0 = requantize8(v0, params, 0, stage);
  v1 = cols > 8 ? requantize8(v1, params, 1, stage) : v0;
  store_partial(dst, clamp8(narrow16(v0, v1), stage), cols);
}

NACC_AVX2 inline __m256i broadcast_pair(const int16_t* p) {
  int32_t pair;  // A(r, k) and A(r, k + 1)
  std::memcpy(&pair, p, sizeof(pair));
  return _mm256_set1_epi32(pair);
}

// One micro-tile: 4 rows of the A panel (row stride kp) times one packed
// 16-column block of B (kHalves = 2) or its first 8 columns (kHalves = 1: the
// last block when N % 16 is 1..8, half the multiplies), accumulators in named
// registers (8 of the 16 ymm), then the epilogue for the first `rows` rows and
// `cols` columns into `out`. (Six rows with 12 accumulators measured no faster
// here: the loop is bound by vpmaddwd either way, and the compiler spills.)
template <int kHalves>
NACC_AVX2 void tile4x16(const int16_t* a, int kp, const int16_t* b_block,
                        const BlockParams& params, const StageVectors& stage, int8_t* out,
                        std::ptrdiff_t out_row_stride, int rows, int cols) {
  // The accumulators start at the column offset (the sum wraps modulo 2^32
  // either way).
  __m256i c00 = params.col_offset[0], c10 = c00, c20 = c00, c30 = c00;
  __m256i c01 = params.col_offset[1], c11 = c01, c21 = c01, c31 = c01;
  const int16_t* a0 = a;
  const int16_t* a1 = a0 + kp;
  const int16_t* a2 = a1 + kp;
  const int16_t* a3 = a2 + kp;
  const int pairs = kp / 2;
  for (int kk = 0; kk < pairs; ++kk) {
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b_block + 32 * kk));
    __m256i x0 = broadcast_pair(a0 + 2 * kk), x1 = broadcast_pair(a1 + 2 * kk);
    __m256i x2 = broadcast_pair(a2 + 2 * kk), x3 = broadcast_pair(a3 + 2 * kk);
    c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(x0, w0));
    c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(x1, w0));
    c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(x2, w0));
    c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(x3, w0));
    if constexpr (kHalves == 2) {
      const __m256i w1 =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b_block + 32 * kk + 16));
      c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(x0, w1));
      c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(x1, w1));
      c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(x2, w1));
      c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(x3, w1));
    }
  }
  store_row(c00, c01, params, stage, out, cols);
  if (rows > 1) store_row(c10, c11, params, stage, out + out_row_stride, cols);
  if (rows > 2) store_row(c20, c21, params, stage, out + 2 * out_row_stride, cols);
  if (rows > 3) store_row(c30, c31, params, stage, out + 3 * out_row_stride, cols);
}

// Lane j of the result = the sum of the 8 lanes of acc[j].
NACC_AVX2 inline __m256i horizontal_sums8(const __m256i acc[8]) {
  const __m256i h01 = _mm256_hadd_epi32(acc[0], acc[1]);
  const __m256i h23 = _mm256_hadd_epi32(acc[2], acc[3]);
  const __m256i h45 = _mm256_hadd_epi32(acc[4], acc[5]);
  const __m256i h67 = _mm256_hadd_epi32(acc[6], acc[7]);
  const __m256i h0123 = _mm256_hadd_epi32(h01, h23);
  const __m256i h4567 = _mm256_hadd_epi32(h45, h67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x20),
                          _mm256_permute2x128_si256(h0123, h4567, 0x31));
}

}  // namespace

PackedB::PackedB(const int8_t* b, int n, int k, std::ptrdiff_t n_stride, std::ptrdiff_t k_stride,
                 int32_t zero_point)
    : n_(n), k_(k), kp_((k + 1) / 2 * 2) {
  const int pairs = kp_ / 2;
  data_.assign(static_cast<size_t>(blocks()) * kp_ * kTileCols, 0);
  for (int col = 0; col < n; ++col) {
    int16_t* dst = data_.data() + static_cast<size_t>(col / kTileCols) * kp_ * kTileCols +
                   (col % kTileCols) * 2;
    const int8_t* src = b + col * n_stride;
    for (int kk = 0; kk < pairs; ++kk) {
      dst[32 * kk] = static_cast<int16_t>(src[(2 * kk) * k_stride] - zero_point);
      if (2 * kk + 1 < k) {
        dst[32 * kk + 1] = static_cast<int16_t>(src[(2 * kk + 1) * k_stride] - zero_point);
      }
    }
  }
}

NACC_AVX2 void widen_s8_avx2(const int8_t* src, int count, int32_t offset, int16_t* dst) {
  const __m256i off = _mm256_set1_epi16(static_cast<int16_t>(offset));
  int i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm256_sub_epi16(_mm256_cvtepi8_epi16(v), off));
  }
  if (i + 8 <= count) {  // 8 bytes: the short segments of a small-C_in im2col
    const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm_sub_epi16(_mm_cvtepi8_epi16(v), _mm256_castsi256_si128(off)));
    i += 8;
  }
  for (; i < count; ++i) dst[i] = static_cast<int16_t>(src[i] - offset);
}

NACC_AVX2 void gemm_s8_avx2(int m, const PackedB& b, const FillRows& fill_rows,
                            const int32_t* col_offset, const OutputStage& rq, int8_t* out,
                            std::ptrdiff_t out_row_stride) {
  const int n = b.n();
  const int kp = b.kp();
  const PaddedParams padded(n, col_offset, rq);
  const StageVectors stage = stage_vectors(rq);

  // Rows per A panel: about kPanelBytes, whole tiles; all of M when it is at
  // most a quarter more (a second panel of a few rows would sweep every
  // weight block again for them), never more rows than M needs.
  const int m_tiles = (m + kTileRows - 1) / kTileRows * kTileRows;
  int panel_rows = static_cast<int>(kPanelBytes / (sizeof(int16_t) * kp));
  panel_rows = std::max(kTileRows, std::min(256, panel_rows / kTileRows * kTileRows));
  if (m_tiles <= panel_rows + panel_rows / 4) panel_rows = m_tiles;
  // The panel is this thread's scratch buffer (kept between calls: no
  // allocation or zeroing per call); fill_rows writes every row it is given,
  // and the rows of the last tile past them are zeroed below, so the tiles
  // never read values of an earlier call.
  thread_local std::vector<int16_t> scratch;
  const size_t panel_size = static_cast<size_t>(panel_rows) * kp;
  if (scratch.size() < panel_size) scratch.resize(panel_size);
  int16_t* const panel = scratch.data();

  for (int m0 = 0; m0 < m; m0 += panel_rows) {
    const int rows = std::min(panel_rows, m - m0);
    fill_rows(m0, rows, panel);
    const int tile_end = (rows + kTileRows - 1) / kTileRows * kTileRows;  // <= panel_rows
    std::fill(panel + static_cast<size_t>(rows) * kp, panel + static_cast<size_t>(tile_end) * kp,
              int16_t{0});
    for (int nb = 0; nb < b.blocks(); ++nb) {
      const int n0 = nb * kTileCols;
      const int cols = std::min(kTileCols, n - n0);
      const BlockParams params = load_block(padded, n0);
      const int16_t* b_block = b.block(nb);
      // The panel holds whole tiles of rows; rows past `rows` hold stale data
      // whose results are not stored.
      for (int r = 0; r < rows; r += kTileRows) {
        const int16_t* a = panel + static_cast<size_t>(r) * kp;
        int8_t* o = out + (m0 + r) * out_row_stride + n0;
        const int tr = std::min(kTileRows, rows - r);
        if (cols > 8) {
          tile4x16<2>(a, kp, b_block, params, stage, o, out_row_stride, tr, cols);
        } else {
          tile4x16<1>(a, kp, b_block, params, stage, o, out_row_stride, tr, cols);
        }
      }
    }
  }
}

NACC_AVX2 void gemv_s8_avx2(int m, int n, int k, const int8_t* a, int32_t a_zero_point,
                            const int8_t* b, const int32_t* col_offset, const OutputStage& rq,
                            int8_t* out) {
  const PaddedParams padded(n, col_offset, rq);
  const StageVectors stage = stage_vectors(rq);
  const std::vector<int8_t> zero_row(k, 0);  // stands in for columns past N
  const int k16 = k / 16 * 16;
  std::vector<int16_t> a16(k);  // one row of A - a_zero_point

  for (int row = 0; row < m; ++row) {
    widen_s8_avx2(a + static_cast<std::ptrdiff_t>(row) * k, k, a_zero_point, a16.data());
    for (int n0 = 0; n0 < n; n0 += kTileCols) {
      const BlockParams params = load_block(padded, n0);
      __m256i result[2];
      for (int h = 0; h < 2; ++h) {
        const int8_t* w[8];
        for (int j = 0; j < 8; ++j) {
          const int col = n0 + 8 * h + j;
          w[j] = col < n ? b + static_cast<std::ptrdiff_t>(col) * k : zero_row.data();
        }
        __m256i acc[8];
        for (int j = 0; j < 8; ++j) acc[j] = _mm256_setzero_si256();
        for (int i = 0; i < k16; i += 16) {
          const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a16.data() + i));
#pragma GCC unroll 8
          for (int j = 0; j < 8; ++j) {
            const __m256i wv =
                _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[j] + i)));
            acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(av, wv));
          }
        }
        __m256i sums = horizontal_sums8(acc);
        if (k16 < k) {  // the last k % 16 terms (each |term| <= 255 * 128)
          alignas(32) int32_t tail[8] = {0, 0, 0, 0, 0, 0, 0, 0};
          for (int j = 0; j < 8; ++j) {
            for (int i = k16; i < k; ++i) tail[j] += a16[i] * w[j][i];
          }
          sums = _mm256_add_epi32(sums, _mm256_load_si256(reinterpret_cast<const __m256i*>(tail)));
        }
        result[h] = requantize8(_mm256_add_epi32(sums, params.col_offset[h]), params, h, stage);
      }
      store_partial(out + static_cast<std::ptrdiff_t>(row) * n + n0,
                    clamp8(narrow16(result[0], result[1]), stage),
                    std::min(kTileCols, n - n0));
    }
  }
}


// ---- VNNI (vpdpbusd) ----

// GCC 12 warns that the _mm512_undefined_* placeholders inside its own
// AVX-512 extract/shuffle/narrowing intrinsics "may be used" or "is used
// uninitialized" (a false positive of the headers, not of this code).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace {

// The epilogue on 16 lanes (one zmm per output row of a 16-column block): the
// same arithmetic as requantize8 — MultiplyByQuantizedMultiplier with its
// rounding, the real-scale and float32 stages — with mask registers for the
// compares and a masked store for the last partial block.
struct BlockParams512 {
  __m512i col_offset, multiplier, multiplier_odd, left_shift, right_shift, remainder_mask,
      half_mask;
  __m512i right_shift_m1;  // right_shift - 1 (rounding_divide16 when no lane has 0)
  // requantize16_fused's int64 constants, [0] for the even columns, [1] for
  // the odd ones (made from right_shift and the zero point per block).
  __m512i fused_add[2], fused_shift[2];
  __m512d scale[2];
  __m512 float_scale;
  bool any_left_shift = false;
  bool any_zero_right_shift = false;  // some column of the block has right_shift 0
  bool fused = false;  // every column takes requantize16_fused
};

struct StageVectors512 {
  OutputStageKind kind;
  __m512i zero_point, act_min, act_max;
  __m512 float_lo, float_hi;
  bool full_range = false;  // act_min <= -128 and act_max >= 127: no clamp before the narrow
};

NACC_VNNI512 inline StageVectors512 stage_vectors512(const OutputStage& s) {
  StageVectors512 v;
  v.kind = s.kind;
  v.zero_point = _mm512_set1_epi32(s.output_zero_point);
  v.act_min = _mm512_set1_epi32(s.act_min);
  v.act_max = _mm512_set1_epi32(s.act_max);
  v.float_lo = _mm512_set1_ps(static_cast<float>(s.act_min - s.output_zero_point));
  v.float_hi = _mm512_set1_ps(static_cast<float>(s.act_max - s.output_zero_point));
  v.full_range = s.act_min <= -128 && s.act_max >= 127;
  return v;
}

NACC_VNNI512 inline BlockParams512 load_block512(const PaddedParams& p, int n0) {
  // Not value-initialised: zeroing the whole struct (about 1 KB) per block was
  // a `rep stos` costing as much as the rest of gemm_vnni512; each kind sets
  // the members its epilogue reads.
  BlockParams512 b;
  b.col_offset = _mm512_loadu_si512(p.col_offset.data() + n0);
  switch (p.kind) {
    case OutputStageKind::kRealScale:
      b.scale[0] = _mm512_loadu_pd(p.scale.data() + n0);
      b.scale[1] = _mm512_loadu_pd(p.scale.data() + n0 + 8);
      break;
    case OutputStageKind::kFloat32:
      b.float_scale = _mm512_loadu_ps(p.float_scale.data() + n0);
      break;
    default:
      b.multiplier = _mm512_loadu_si512(p.multiplier.data() + n0);
      b.multiplier_odd = _mm512_srli_epi64(b.multiplier, 32);
      b.left_shift = _mm512_loadu_si512(p.left_shift.data() + n0);
      b.right_shift = _mm512_loadu_si512(p.right_shift.data() + n0);
      b.remainder_mask = _mm512_loadu_si512(p.remainder_mask.data() + n0);
      b.half_mask = _mm512_srli_epi32(b.remainder_mask, 1);
      b.right_shift_m1 = _mm512_sub_epi32(b.right_shift, _mm512_set1_epi32(1));
      {
        // requantize16_fused's constants (requant512.h's fused_requant_add and
        // _shift on the even and the odd columns' int64 lanes).
        const __m512i e[2] = {_mm512_and_si512(b.right_shift, _mm512_set1_epi64(0xFFFFFFFF)),
                              _mm512_srli_epi64(b.right_shift, 32)};
        const __m512i one = _mm512_set1_epi64(1);
        const __m512i zp = _mm512_set1_epi64(p.output_zero_point);
        for (int h = 0; h < 2; ++h) {
          const __m512i shift = _mm512_add_epi64(e[h], _mm512_set1_epi64(31));
          b.fused_add[h] = _mm512_add_epi64(
              _mm512_add_epi64(_mm512_set1_epi64(int64_t{1} << 30),
                               _mm512_sllv_epi64(one, _mm512_sub_epi64(shift, one))),
              _mm512_sllv_epi64(zp, shift));
          b.fused_shift[h] = h == 0 ? shift : _mm512_sub_epi64(e[h], one);
        }
        // Every column's exponent in [1, kFusedMaxShift] (no left shift is tested below).
        const __mmask16 in_range = _mm512_mask_cmple_epi32_mask(
            _mm512_cmpge_epi32_mask(b.right_shift, _mm512_set1_epi32(1)), b.right_shift,
            _mm512_set1_epi32(detail::kFusedMaxShift));
        b.fused = in_range == 0xFFFF && detail::fused_requant_ok(1, p.output_zero_point) &&
                  !p.block_left_shift[n0 / kTileCols];
      }
      break;
  }
  b.any_left_shift =
      p.kind == OutputStageKind::kFixedPoint && p.block_left_shift[n0 / kTileCols];
  b.any_zero_right_shift =
      p.kind == OutputStageKind::kFixedPoint && p.block_zero_right_shift[n0 / kTileCols];
  return b;
}

NACC_VNNI512 inline __m512i multiply_by_quantized_multiplier16(__m512i x, const BlockParams512& b) {
  const __m512i half = _mm512_set1_epi64(int64_t{1} << 30);
  const __m512i one = _mm512_set1_epi32(1);
  if (b.any_left_shift) x = _mm512_sllv_epi32(x, b.left_shift);
  __m512i even = _mm512_add_epi64(_mm512_mul_epi32(x, b.multiplier), half);
  __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), b.multiplier_odd),
                                 half);
  even = _mm512_srli_epi64(even, 31);
  odd = _mm512_slli_epi64(odd, 1);
  const __m512i high = _mm512_mask_blend_epi32(0xAAAA, even, odd);
  if (!b.any_zero_right_shift) {
    // RoundingDivideByPOT for exponents e in [1, 31] as floor((h + 2^(e-1) - [h < 0]) / 2^e),
    // computed without overflow as ((t >> (e - 1)) + 1) >> 1 with t = h - [h < 0]: h is in
    // [-2^31 + 1, 2^31 - 2] (multiplier < 2^31), so t and t >> (e - 1) plus 1 fit int32.
    // The same value as gemmlowp's remainder/threshold form (tests: every path, and all
    // exponents against it in test_unit_conv's requantization sweep).
    const __m512i t = _mm512_add_epi32(high, _mm512_srai_epi32(high, 31));
    return _mm512_srai_epi32(_mm512_add_epi32(_mm512_srav_epi32(t, b.right_shift_m1), one), 1);
  }
  const __m512i remainder = _mm512_and_si512(high, b.remainder_mask);
  const __mmask16 negative = _mm512_cmplt_epi32_mask(high, _mm512_setzero_si512());
  const __m512i threshold = _mm512_mask_add_epi32(b.half_mask, negative, b.half_mask, one);
  const __mmask16 round_up = _mm512_cmpgt_epi32_mask(remainder, threshold);
  const __m512i shifted = _mm512_srav_epi32(high, b.right_shift);
  return _mm512_mask_add_epi32(shifted, round_up, shifted, one);
}

NACC_VNNI512 inline __m512d round_half_away8(__m512d x) {
  const __m512d t = _mm512_roundscale_pd(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512d frac = _mm512_sub_pd(x, t);
  const __m512d one = _mm512_set1_pd(1.0);
  const __mmask8 up = _mm512_cmp_pd_mask(frac, _mm512_set1_pd(0.5), _CMP_GE_OQ);
  const __mmask8 down = _mm512_cmp_pd_mask(frac, _mm512_set1_pd(-0.5), _CMP_LE_OQ);
  const __m512d rounded_up = _mm512_mask_add_pd(t, up, t, one);
  return _mm512_mask_sub_pd(rounded_up, down, rounded_up, one);
}

// acc: the accumulator with the column offset already in it (the micro-tile
// starts from it).
NACC_VNNI512 inline __m512i requantize16(__m512i acc, const BlockParams512& b,
                                         const StageVectors512& s) {
  if (s.kind == OutputStageKind::kFloat32) {
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), b.float_scale);
    v = _mm512_min_ps(_mm512_max_ps(v, s.float_lo), s.float_hi);
    return _mm512_add_epi32(_mm512_cvtps_epi32(v), s.zero_point);
  }
  __m512i q;
  if (s.kind == OutputStageKind::kRealScale) {
    const __m512d lo = _mm512_cvtepi32_pd(_mm512_castsi512_si256(acc));
    const __m512d hi = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(acc, 1));
    const __m256i qlo = _mm512_cvttpd_epi32(round_half_away8(_mm512_mul_pd(lo, b.scale[0])));
    const __m256i qhi = _mm512_cvttpd_epi32(round_half_away8(_mm512_mul_pd(hi, b.scale[1])));
    q = _mm512_inserti64x4(_mm512_castsi256_si512(qlo), qhi, 1);
  } else {
    q = multiply_by_quantized_multiplier16(acc, b);
  }
  return _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(q, s.zero_point), s.act_min),
                          s.act_max);
}

NACC_VNNI512 inline __m512i fused16(__m512i acc, const BlockParams512& b) {
  return detail::requantize16_fused(acc, b.multiplier, b.multiplier_odd, b.fused_add[0], b.fused_add[1],
                            b.fused_shift[0], b.fused_shift[1]);
}

// The epilogue a block takes: the general one, or requantize16_fused with the
// activation clamp, or without it when the bounds are int8's own (the
// saturating narrow to int8 is then the clamp).
enum class Epilogue512 { kGeneral, kFusedClamp, kFused };

NACC_VNNI512 inline Epilogue512 block_epilogue512(const BlockParams512& b,
                                                  const StageVectors512& s) {
  if (s.kind != OutputStageKind::kFixedPoint || !b.fused) return Epilogue512::kGeneral;
  return s.full_range ? Epilogue512::kFused : Epilogue512::kFusedClamp;
}

NACC_VNNI512 inline __mmask16 keep_mask16(int cols) {
  return cols >= 16 ? __mmask16(0xFFFF) : cols <= 0 ? __mmask16(0) : __mmask16((1u << cols) - 1);
}

// keep: the columns of the 16 to store (keep_mask16).
template <Epilogue512 kMode = Epilogue512::kGeneral>
NACC_VNNI512 inline void store_row512(__m512i acc, const BlockParams512& b,
                                      const StageVectors512& s, int8_t* dst, __mmask16 keep) {
  __m512i q;
  if constexpr (kMode == Epilogue512::kGeneral) {
    q = requantize16(acc, b, s);
  } else if constexpr (kMode == Epilogue512::kFusedClamp) {
    q = _mm512_min_epi32(_mm512_max_epi32(fused16(acc, b), s.act_min), s.act_max);
  } else {
    q = fused16(acc, b);
  }
  _mm_mask_storeu_epi8(dst, keep, _mm512_cvtsepi32_epi8(q));  // in [-128, 127]
}

constexpr int kVnniRows512 = 8;  // rows per micro-tile: 8 x 32 columns = 16 zmm accumulators
constexpr int kVnniRows256 = 4;  // 4 x 16 columns = 8 ymm accumulators

inline int32_t load_quad(const uint8_t* p) {
  int32_t q;  // A(r, k..k+3) as one dword, broadcast to every lane
  std::memcpy(&q, p, sizeof q);
  return q;
}

// `rows` (<= 8) rows of the u8 panel (row stride k4) times NB (1 or 2)
// 16-column blocks of B4; the epilogue for the first `rows` rows and `cols`
// columns. Rows past `rows` read stale panel bytes whose results are dropped.
template <int NB, Epilogue512 kMode>
NACC_VNNI512 void tile8_vnni512(const uint8_t* a, int k4, const int8_t* b0, const int8_t* b1,
                                const BlockParams512* params, const StageVectors512& stage,
                                int8_t* out, std::ptrdiff_t out_row_stride, int rows, int cols) {
  __m512i c[kVnniRows512][NB];
#pragma GCC unroll 8
  for (int r = 0; r < kVnniRows512; ++r) {
    for (int j = 0; j < NB; ++j) c[r][j] = params[j].col_offset;  // the epilogue's offset first
  }
  const int quads = k4 / 4;
  for (int q = 0; q < quads; ++q) {
    const __m512i w0 = _mm512_loadu_si512(b0 + 64 * q);
    const __m512i w1 = NB == 2 ? _mm512_loadu_si512(b1 + 64 * q) : w0;
#pragma GCC unroll 8
    for (int r = 0; r < kVnniRows512; ++r) {
      const __m512i x = _mm512_set1_epi32(load_quad(a + static_cast<std::ptrdiff_t>(r) * k4 + 4 * q));
      c[r][0] = _mm512_dpbusd_epi32(c[r][0], x, w0);
      if (NB == 2) c[r][NB - 1] = _mm512_dpbusd_epi32(c[r][NB - 1], x, w1);
    }
  }
  // Constant indices only (unrolled, the row count tested inside): an index
  // known at run time only would keep the accumulators in memory, and GCC
  // then copied all 16 of them through the stack in every step of the K loop.
  // The column masks once per tile (cols > 16 * (NB - 1): every block has a column).
  const __mmask16 keep[2] = {keep_mask16(cols), keep_mask16(cols - 16)};
#pragma GCC unroll 8
  for (int r = 0; r < kVnniRows512; ++r) {
    if (r >= rows) break;
#pragma GCC unroll 2
    for (int j = 0; j < NB; ++j) {
      store_row512<kMode>(c[r][j], params[j], stage, out + r * out_row_stride + 16 * j, keep[j]);
    }
  }
}

NACC_AVXVNNI void tile4_avxvnni(const uint8_t* a, int k4, const int8_t* b, const BlockParams& params,
                                const StageVectors& stage, int8_t* out,
                                std::ptrdiff_t out_row_stride, int rows, int cols) {
  __m256i c[kVnniRows256][2];
#pragma GCC unroll 4
  for (int r = 0; r < kVnniRows256; ++r) {
    c[r][0] = params.col_offset[0];  // the epilogue's column offset, added first
    c[r][1] = params.col_offset[1];
  }
  const int quads = k4 / 4;
  for (int q = 0; q < quads; ++q) {
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * q));
    const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * q + 32));
#pragma GCC unroll 4
    for (int r = 0; r < kVnniRows256; ++r) {
      const __m256i x = _mm256_set1_epi32(load_quad(a + static_cast<std::ptrdiff_t>(r) * k4 + 4 * q));
      c[r][0] = _mm256_dpbusd_avx_epi32(c[r][0], x, w0);
      c[r][1] = _mm256_dpbusd_avx_epi32(c[r][1], x, w1);
    }
  }
  for (int r = 0; r < rows; ++r) {
    store_row(c[r][0], c[r][1], params, stage, out + r * out_row_stride, cols);
  }
}

// One row of A (u8, k4 bytes) times NB consecutive 16-column blocks of B4
// from block nb: the broadcast of each quad of A is shared by NB independent
// accumulators (the GEMV case: no panel of eight rows to fill).
template <int NB>
NACC_VNNI512 void row_vnni512(const uint8_t* a, const PackedB4& b, int nb,
                              const PaddedParams& padded, const StageVectors512& stage,
                              int8_t* out) {
  const int k4 = b.k4(), n = b.n();
  BlockParams512 params[NB];
  __m512i c[NB];
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) {
    params[j] = load_block512(padded, (nb + j) * kTileCols);
    c[j] = params[j].col_offset;
  }
  const int8_t* blocks[NB];
  for (int j = 0; j < NB; ++j) blocks[j] = b.block(nb + j);
  for (int q = 0; q < k4 / 4; ++q) {
    const __m512i x = _mm512_set1_epi32(load_quad(a + 4 * q));
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) {
      c[j] = _mm512_dpbusd_epi32(c[j], x, _mm512_loadu_si512(blocks[j] + 64 * q));
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) {
    const int n0 = (nb + j) * kTileCols;
    store_row512(c[j], params[j], stage, out + n0, keep_mask16(n - n0));
  }
}

NACC_VNNI512 void gemv_vnni512(int m, const PackedB4& b, const int8_t* a, int k,
                               const PaddedParams& padded, const OutputStage& rq, int8_t* out) {
  const StageVectors512 stage = stage_vectors512(rq);
  thread_local std::vector<uint8_t> row;
  if (row.size() < static_cast<size_t>(b.k4())) row.resize(b.k4());
  for (int r = 0; r < m; ++r) {
    flip_rows_u8(a + static_cast<std::ptrdiff_t>(r) * k, 1, k, b.k4(), row.data());
    int8_t* o = out + static_cast<std::ptrdiff_t>(r) * b.n();
    int nb = 0;
    for (; nb + 4 <= b.blocks(); nb += 4) row_vnni512<4>(row.data(), b, nb, padded, stage, o);
    for (; nb < b.blocks(); ++nb) row_vnni512<1>(row.data(), b, nb, padded, stage, o);
  }
}

NACC_VNNI512 void gemm_vnni512(int m, const PackedB4& b, const FillRowsU8& fill_rows,
                               const PaddedParams& padded, const OutputStage& rq,
                               std::vector<uint8_t>& panel, int panel_rows, int8_t* out,
                               std::ptrdiff_t out_row_stride) {
  const StageVectors512 stage = stage_vectors512(rq);
  const int n = b.n(), k4 = b.k4();
  for (int m0 = 0; m0 < m; m0 += panel_rows) {
    const int rows = std::min(panel_rows, m - m0);
    fill_rows(m0, rows, panel.data());
    for (int nb = 0; nb < b.blocks(); nb += 2) {
      const int n0 = nb * kTileCols;
      const int cols = std::min(2 * kTileCols, n - n0);
      const BlockParams512 params[2] = {
          load_block512(padded, n0),
          nb + 1 < b.blocks() ? load_block512(padded, n0 + kTileCols)
                              : load_block512(padded, n0)};  // unread: no second block
      const bool pair = nb + 1 < b.blocks();
      Epilogue512 mode = block_epilogue512(params[0], stage);
      if (pair && block_epilogue512(params[1], stage) != mode) mode = Epilogue512::kGeneral;
      const int8_t* b1 = pair ? b.block(nb + 1) : nullptr;
      using Tile = decltype(&tile8_vnni512<1, Epilogue512::kGeneral>);
      const Tile tiles[2][3] = {
          {tile8_vnni512<1, Epilogue512::kGeneral>, tile8_vnni512<1, Epilogue512::kFusedClamp>,
           tile8_vnni512<1, Epilogue512::kFused>},
          {tile8_vnni512<2, Epilogue512::kGeneral>, tile8_vnni512<2, Epilogue512::kFusedClamp>,
           tile8_vnni512<2, Epilogue512::kFused>}};
      const Tile tile = tiles[pair ? 1 : 0][static_cast<int>(mode)];
      for (int r = 0; r < rows; r += kVnniRows512) {
        const uint8_t* a = panel.data() + static_cast<size_t>(r) * k4;
        int8_t* o = out + (m0 + r) * out_row_stride + n0;
        const int tr = std::min(kVnniRows512, rows - r);
        tile(a, k4, b.block(nb), b1, params, stage, o, out_row_stride, tr, cols);
      }
    }
  }
}

NACC_AVXVNNI void gemm_avxvnni(int m, const PackedB4& b, const FillRowsU8& fill_rows,
                               const PaddedParams& padded, const OutputStage& rq,
                               std::vector<uint8_t>& panel, int panel_rows, int8_t* out,
                               std::ptrdiff_t out_row_stride) {
  const StageVectors stage = stage_vectors(rq);
  const int n = b.n(), k4 = b.k4();
  for (int m0 = 0; m0 < m; m0 += panel_rows) {
    const int rows = std::min(panel_rows, m - m0);
    fill_rows(m0, rows, panel.data());
    for (int nb = 0; nb < b.blocks(); ++nb) {
      const int n0 = nb * kTileCols;
      const int cols = std::min(kTileCols, n - n0);
      const BlockParams params = load_block(padded, n0);
      for (int r = 0; r < rows; r += kVnniRows256) {
        tile4_avxvnni(panel.data() + static_cast<size_t>(r) * k4, k4, b.block(nb), params, stage,
                      out + (m0 + r) * out_row_stride + n0, out_row_stride,
                      std::min(kVnniRows256, rows - r), cols);
      }
    }
  }
}

}  // namespace

#pragma GCC diagnostic pop

PackedB4::PackedB4(const int8_t* b, int n, int k, std::ptrdiff_t n_stride,
                   std::ptrdiff_t k_stride)
    : n_(n), k_(k), k4_((k + 3) / 4 * 4) {
  data_.assign(static_cast<size_t>(blocks()) * k4_ * kTileCols, 0);
  col_sum_.assign(static_cast<size_t>(blocks()) * kTileCols, 0);
  for (int col = 0; col < n; ++col) {
    int8_t* dst = data_.data() + static_cast<size_t>(col / kTileCols) * k4_ * kTileCols +
                  (col % kTileCols) * 4;
    const int8_t* src = b + col * n_stride;
    int32_t sum = 0;
    if (k_stride == 1) {
      // A column's k values are contiguous (the [N, K] weights of every
      // plan): four at a time into each 64-byte group, the sum on its own
      // (vectorized) loop. The same bytes as the general loop below.
      const int whole = k / 4 * 4;
      for (int kk = 0; kk < whole; kk += 4) std::memcpy(dst + (kk / 4) * 64, src + kk, 4);
      for (int kk = whole; kk < k; ++kk) dst[(kk / 4) * 64 + kk % 4] = src[kk];
      for (int kk = 0; kk < k; ++kk) sum += src[kk];
    } else {
      for (int kk = 0; kk < k; ++kk) {
        const int8_t v = src[kk * k_stride];
        dst[(kk / 4) * 64 + kk % 4] = v;
        sum += v;
      }
    }
    col_sum_[col] = sum;
  }
}

bool use_vnni() { return use_avx_vnni() || use_avx512_vnni(); }

PackedFilter::PackedFilter(const int8_t* w, int n, int k)
    : w_(w, w + static_cast<size_t>(n) * k), n_(n), k_(k) {
  if (use_vnni()) {
    vnni();
  } else {
    int16();
  }
}

const PackedB& PackedFilter::int16() const {
  std::call_once(int16_once_, [&] { int16_ = std::make_unique<PackedB>(w_.data(), n_, k_, k_, 1); });
  return *int16_;
}

const PackedB4& PackedFilter::vnni() const {
  std::call_once(vnni_once_, [&] { vnni_ = std::make_unique<PackedB4>(w_.data(), n_, k_, k_, 1); });
  return *vnni_;
}

namespace {

NACC_AVX2 void flip_s8_to_u8_avx2(const int8_t* src, int count, uint8_t* dst) {
  const __m256i sign = _mm256_set1_epi8(static_cast<char>(0x80));
  int i = 0;
  for (; i + 128 <= count; i += 128) {
#pragma GCC unroll 4
    for (int j = 0; j < 128; j += 32) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + j));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i + j), _mm256_xor_si256(v, sign));
    }
  }
  for (; i + 32 <= count; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_xor_si256(v, sign));
  }
  for (; i < count; ++i) dst[i] = static_cast<uint8_t>(src[i]) ^ 0x80u;
}

// Any count in whole 64-byte vectors, the last one masked: short im2col
// segments (a 3x3 window over 3 channels: 9 bytes) cost one load and store.
NACC_VNNI512 void flip_s8_to_u8_avx512(const int8_t* src, int count, uint8_t* dst) {
  const __m512i sign = _mm512_set1_epi8(static_cast<char>(0x80));
  int i = 0;
  for (; i + 64 <= count; i += 64) {
    _mm512_storeu_si512(dst + i, _mm512_xor_si512(_mm512_loadu_si512(src + i), sign));
  }
  if (i < count) {
    const __mmask64 keep = (~__mmask64{0}) >> (64 - (count - i));
    _mm512_mask_storeu_epi8(dst + i, keep,
                            _mm512_xor_si512(_mm512_maskz_loadu_epi8(keep, src + i), sign));
  }
}

}  // namespace

void flip_s8_to_u8(const int8_t* src, int count, uint8_t* dst) {
  if (count <= 0) return;
  if (use_avx512_vnni()) {
    flip_s8_to_u8_avx512(src, count, dst);
    return;
  }
  if (count >= 32 && cpu_has_avx2()) {  // the VNNI paths that call this imply AVX2
    flip_s8_to_u8_avx2(src, count, dst);
    return;
  }
  for (int i = 0; i < count; ++i) dst[i] = static_cast<uint8_t>(src[i]) ^ 0x80u;
}

void flip_rows_u8(const int8_t* src, int rows, int k, int k4, uint8_t* panel) {
  if (k4 == k) {  // the rows are one contiguous block (a pointwise layer's pixels)
    flip_s8_to_u8(src, rows * k, panel);
    return;
  }
  for (int r = 0; r < rows; ++r) {
    uint8_t* dst = panel + static_cast<std::ptrdiff_t>(r) * k4;
    flip_s8_to_u8(src + static_cast<std::ptrdiff_t>(r) * k, k, dst);
    std::fill(dst + k, dst + k4, uint8_t{0});
  }
}

namespace {

// sum_k (A + 128) B = sum_k (A - zp) B + (zp + 128) col_sum: the second term
// taken off with the bias, in unsigned (wrapping) arithmetic like the int32
// accumulator.
// This thread's parameters of the call (kept between calls, see PaddedParams::reset).
const PaddedParams& vnni_params(const PackedB4& b, int32_t a_zero_point, const int32_t* col_offset,
                                const OutputStage& rq) {
  const int n = b.n();
  thread_local std::vector<int32_t> offset;
  thread_local PaddedParams padded;
  offset.resize(n);
  const uint32_t lift = static_cast<uint32_t>(a_zero_point + 128);
  for (int c = 0; c < n; ++c) {
    const uint32_t bias = col_offset != nullptr ? static_cast<uint32_t>(col_offset[c]) : 0u;
    offset[c] = static_cast<int32_t>(bias - lift * static_cast<uint32_t>(b.col_sums()[c]));
  }
  padded.reset(n, offset.data(), rq);
  return padded;
}

}  // namespace

void gemv_s8_vnni(int m, const PackedB4& b, const int8_t* a, int32_t a_zero_point,
                  const int32_t* col_offset, const OutputStage& rq, int8_t* out) {
  check_arg(use_avx512_vnni(), "gemv_s8_vnni: AVX-512 VNNI is not in use");
  gemv_vnni512(m, b, a, b.k(), vnni_params(b, a_zero_point, col_offset, rq), rq, out);
}

void gemm_s8_vnni(int m, const PackedB4& b, const FillRowsU8& fill_rows, int32_t a_zero_point,
                  const int32_t* col_offset, const OutputStage& rq, int8_t* out,
                  std::ptrdiff_t out_row_stride) {
  const PaddedParams& padded = vnni_params(b, a_zero_point, col_offset, rq);
  const bool wide = use_avx512_vnni();
  const int tile_rows = wide ? kVnniRows512 : kVnniRows256;
  // Rows per panel as in gemm_s8_avx2: about kPanelBytes of whole tiles, all of
  // M when that is at most a quarter more.
  const int m_tiles = (m + tile_rows - 1) / tile_rows * tile_rows;
  int panel_rows = static_cast<int>(kPanelBytes / std::max(1, b.k4()));
  panel_rows = std::max(tile_rows, std::min(256, panel_rows / tile_rows * tile_rows));
  if (m_tiles <= panel_rows + panel_rows / 4) panel_rows = m_tiles;
  // This thread's scratch panel, kept between calls (no allocation or zeroing
  // per call): fill_rows writes every row it is given; the rows of a last
  // partial tile past them read earlier bytes whose results are not stored.
  thread_local std::vector<uint8_t> panel;
  const size_t panel_size = static_cast<size_t>(panel_rows) * b.k4();
  if (panel.size() < panel_size) panel.resize(panel_size);
  if (wide) {
    gemm_vnni512(m, b, fill_rows, padded, rq, panel, panel_rows, out,
                 out_row_stride);
  } else {
    check_arg(use_avx_vnni(), "gemm_s8_vnni: neither AVX-512 VNNI nor AVX-VNNI is in use");
    gemm_avxvnni(m, b, fill_rows, padded, rq, panel, panel_rows, out,
                 out_row_stride);
  }
}

}  // namespace nacc::detail

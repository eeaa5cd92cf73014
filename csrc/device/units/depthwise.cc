// The MAC unit's depthwise convolution (CONV_MODE 4'b0011, NACC_SPEC §1-§2):
// argument validation, the plain reference loop (bit-exact to TFLite's
// reference_integer_ops::DepthwiseConvPerChannel), an AVX2 kernel that
// vectorises over output channels and gives the same bits, and its AVX-512
// VNNI form (32 channels per block, vpdpwssd) on the avx512_vnni path.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "arch/fixed_point.h"
#include "arch/limits.h"
#include "arch/unit_checks.h"
#include "common/cpu.h"
#include "common/error.h"
#include "device/units/conv.h"

namespace nacc {
namespace {

constexpr const char* kOp = "depthwise_conv2d_s8";

// int32 addition with two's-complement wrap-around (TFLite adds bias and
// output offset in plain int32; this is the same result without UB).
inline int32_t wrapping_add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

// Everything the kernels need, validated.
struct DwProblem {
  int in_h, in_w, in_c;
  int kernel_h, kernel_w;
  int depth_multiplier;
  int out_h, out_w, out_c;  // out_c = in_c * depth_multiplier
  WindowParams window;
  int32_t input_zero_point;
  OutputStage stage;
  const int8_t* input;   // [in_h, in_w, in_c]
  const int8_t* filter;  // [kernel_h, kernel_w, out_c]
  const int32_t* bias;   // [out_c] or nullptr
  int8_t* output;        // [out_h, out_w, out_c]
};

// ---------------------------------------------------------------------------
// Reference path: the plain loop, one output element at a time. Padded input
// positions hold the input zero point, so they contribute w * 0 and are
// skipped, as in TFLite.
void depthwise_reference(const DwProblem& p) {
  const int m_count = p.depth_multiplier;
  for (int oy = 0; oy < p.out_h; ++oy) {
    for (int ox = 0; ox < p.out_w; ++ox) {
      const int iy0 = oy * p.window.stride_h - p.window.pad_top;
      const int ix0 = ox * p.window.stride_w - p.window.pad_left;
      for (int ic = 0; ic < p.in_c; ++ic) {
        for (int m = 0; m < m_count; ++m) {
          const int oc = ic * m_count + m;
          int32_t acc = 0;
          for (int ky = 0; ky < p.kernel_h; ++ky) {
            const int iy = iy0 + ky;
            if (iy < 0 || iy >= p.in_h) continue;
            for (int kx = 0; kx < p.kernel_w; ++kx) {
              const int ix = ix0 + kx;
              if (ix < 0 || ix >= p.in_w) continue;
              const int32_t x = p.input[(static_cast<int64_t>(iy) * p.in_w + ix) * p.in_c + ic];
              const int32_t w = p.filter[(static_cast<int64_t>(ky) * p.kernel_w + kx) * p.out_c + oc];
              acc += w * (x - p.input_zero_point);
            }
          }
          if (p.bias != nullptr) acc = wrapping_add(acc, p.bias[oc]);
          p.output[(static_cast<int64_t>(oy) * p.out_w + ox) * p.out_c + oc] =
              requantize_output(p.stage, oc, acc);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// AVX2 path.
//
// 1. Input rows are converted, as the output rows need them, into a ring of
//    kernel_h int16 rows with the padding made explicit:
//    [W + pad_left + pad_right][Cp], each entry x[ic] - input_zero_point
//    (range [-255, 255]) replicated for the depth_multiplier output channels
//    oc = ic * M + m, 0 in the padding and in the channel tail (Cp = out_c
//    rounded up to 16). Every multiplier then becomes the M = 1 case and no
//    tap needs a bounds test.
// 2. Taps are taken in pairs; for 16 channels, _mm256_unpack{lo,hi}_epi16 of
//    the two taps' inputs interleaves them and _mm256_madd_epi16 with the
//    filter pre-interleaved the same way adds both products per channel into
//    int32 (|x - zp| * |w| <= 255 * 128, a pair sum fits easily). The odd
//    last tap is paired with a zero-weight copy of itself. Two output pixels
//    share each filter load.
// 3. The unpacks are in-lane, so accumulator A holds channels {0-3, 8-11} and
//    B {4-7, 12-15} of the block; bias, multipliers and shifts are stored in
//    that order, and _mm256_packs_epi32(A, B) restores channel order 0..15.

constexpr int kBlock = 16;  // output channels per accumulator pair
constexpr int kMaxPairs = (limits::kMaxKernel * limits::kMaxKernel + 1) / 2;

// Channel of the block held by lane j of accumulator A (half 0) or B (half 1).
inline int permuted_channel(int half, int j) { return (j & 3) + 4 * half + (j >= 4 ? 8 : 0); }

// Output stage of one 16-channel block, per half (A, B) and lane.
struct alignas(32) BlockStage {
  int32_t bias[2][8];
  int32_t multiplier[2][8];
  int32_t multiplier_odd[2][8];  // lane 2i holds lane 2i+1's multiplier (for _mm256_mul_epi32)
  int32_t left_shift[2][8];
  int32_t right_shift[2][8];
  int32_t round_mask[2][8];  // 2^right_shift - 1
  int32_t round_half[2][8];  // round_mask >> 1
  float float_scale[2][8];   // OutputStageKind::kFloat32
};

// The epilogue variant of the main loop: the fixed-point stage without and
// with left shifts, or the float32 stage.
enum class DwEpilogue { kFixedPoint, kFixedPointLeftShift, kFloat32 };

__attribute__((target("avx2,fma"), always_inline)) inline __m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// TFLite MultiplyByQuantizedMultiplier on the 8 lanes of one half, multiplier >= 0.
// SaturatingRoundingDoublingHighMul is (a*b + nudge) / 2^31 truncated, which
// for both signs equals floor((a*b + 2^30) / 2^31) (its nudge is 2^30 for
// a*b >= 0 and 1 - 2^30 otherwise); the low 32 bits of that floor are bits
// 31..62 of a*b + 2^30, which a logical 64-bit shift extracts. The saturating
// case a == b == INT32_MIN cannot occur with b >= 0. RoundingDivideByPOT
// follows gemmlowp: (x >> e) + (remainder > (mask >> 1) + (x < 0)).
template <bool kLeftShift>
__attribute__((target("avx2,fma"), always_inline)) inline __m256i requantize_avx2(
    __m256i acc, const BlockStage& s, int half) {
  const __m256i x = kLeftShift ? _mm256_sllv_epi32(acc, load256(s.left_shift[half])) : acc;
  const __m256i nudge = _mm256_set1_epi64x(int64_t{1} << 30);
  __m256i even = _mm256_mul_epi32(x, load256(s.multiplier[half]));
  __m256i odd = _mm256_mul_epi32(_mm256_srli_epi64(x, 32), load256(s.multiplier_odd[half]));
  even = _mm256_srli_epi64(_mm256_add_epi64(even, nudge), 31);
  odd = _mm256_slli_epi64(_mm256_add_epi64(odd, nudge), 1);
  const __m256i high = _mm256_blend_epi32(even, odd, 0xAA);
  const __m256i remainder = _mm256_and_si256(high, load256(s.round_mask[half]));
  const __m256i threshold =
      _mm256_add_epi32(load256(s.round_half[half]), _mm256_srli_epi32(high, 31));
  return _mm256_sub_epi32(_mm256_srav_epi32(high, load256(s.right_shift[half])),
                          _mm256_cmpgt_epi32(remainder, threshold));
}

// Output stage of one 16-channel block up to int16: requantize, output zero
// point, saturate to int16 in channel order 0..15. Saturating packs keep the
// order of values, so clamping after them to the int8 activation range gives
// the same result as clamping in int32. The float32 stage (requantize_output's
// kFloat32: float(acc) * scale, clamped in float, rounded half to even)
// already lands in [act_min, act_max].
template <DwEpilogue kEpilogue>
__attribute__((target("avx2,fma"), always_inline)) inline __m256i requantize_half(
    __m256i acc, const BlockStage& s, int half, __m256 lo, __m256 hi) {
  if constexpr (kEpilogue == DwEpilogue::kFloat32) {
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc),
                             _mm256_loadu_ps(s.float_scale[half]));
    v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    return _mm256_cvtps_epi32(v);
  } else {
    return requantize_avx2<kEpilogue == DwEpilogue::kFixedPointLeftShift>(acc, s, half);
  }
}

template <DwEpilogue kEpilogue>
__attribute__((target("avx2,fma"), always_inline)) inline __m256i requantize_block(
    __m256i acc_a, __m256i acc_b, const BlockStage& s, __m256i out_zp, __m256 lo, __m256 hi) {
  const __m256i ra = _mm256_add_epi32(requantize_half<kEpilogue>(acc_a, s, 0, lo, hi), out_zp);
  const __m256i rb = _mm256_add_epi32(requantize_half<kEpilogue>(acc_b, s, 1, lo, hi), out_zp);
  return _mm256_packs_epi32(ra, rb);
}

// Stores `count` (1..16) int8 channels from the low 128 bits of `bytes`.
__attribute__((target("avx2,fma"), always_inline)) inline void store_channels(__m128i bytes,
                                                                             int count,
                                                                             int8_t* out) {
  if (count == kBlock) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), bytes);
  } else {
    alignas(16) int8_t tmp[kBlock];
    _mm_store_si128(reinterpret_cast<__m128i*>(tmp), bytes);
    std::memcpy(out, tmp, count);
  }
}

// Padded input row y (of H + pad_top + pad_bottom) into `dst`, see step 1.
__attribute__((target("avx2,fma"))) void build_row(const DwProblem& p, int y, int cp,
                                                   int16_t* dst) {
  const int wp = p.in_w + p.window.pad_left + p.window.pad_right;
  const int iy = y - p.window.pad_top;
  if (iy < 0 || iy >= p.in_h) {
    std::memset(dst, 0, sizeof(int16_t) * wp * cp);
    return;
  }
  std::memset(dst, 0, sizeof(int16_t) * p.window.pad_left * cp);
  std::memset(dst + static_cast<int64_t>(p.window.pad_left + p.in_w) * cp, 0,
              sizeof(int16_t) * p.window.pad_right * cp);
  const int m_count = p.depth_multiplier;
  const int16_t zp = static_cast<int16_t>(p.input_zero_point);
  const __m256i zp16 = _mm256_set1_epi16(zp);
  alignas(32) int8_t expand[4][32];  // multiplier expansion controls, see below
  for (int j = 0; j < m_count / 2; ++j) {
    for (int i = 0; i < kBlock; ++i) {
      const int channel = (kBlock * j + i) / m_count;  // 0..7 within the group of 8
      expand[j][2 * i] = static_cast<int8_t>(2 * channel);
      expand[j][2 * i + 1] = static_cast<int8_t>(2 * channel + 1);
    }
  }
  const int8_t* src_row = p.input + static_cast<int64_t>(iy) * p.in_w * p.in_c;
  if (m_count == 1 && cp == p.in_c) {  // contiguous row, no channel tail
    int16_t* px = dst + static_cast<int64_t>(p.window.pad_left) * cp;
    const int64_t n = static_cast<int64_t>(p.in_w) * p.in_c;
    for (int64_t i = 0; i < n; i += kBlock) {
      const __m256i v =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src_row + i)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(px + i), _mm256_sub_epi16(v, zp16));
    }
    return;
  }
  for (int ix = 0; ix < p.in_w; ++ix) {
    const int8_t* src = src_row + static_cast<int64_t>(ix) * p.in_c;
    int16_t* px = dst + static_cast<int64_t>(ix + p.window.pad_left) * cp;
    if (m_count == 1) {
      int c = 0;
      for (; c + kBlock <= p.in_c; c += kBlock) {
        const __m256i v =
            _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + c)));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(px + c), _mm256_sub_epi16(v, zp16));
      }
      for (; c < p.in_c; ++c) px[c] = static_cast<int16_t>(src[c] - zp);
    } else {
      // 8 input channels -> 8 * M outputs (M / 2 vectors): both lanes hold the
      // 8 values, and pshufb control j picks value (16 j + i) / M for output i
      // of vector j.
      int ic = 0;
      for (; ic + 8 <= p.in_c; ic += 8) {
        const __m128i v = _mm_sub_epi16(
            _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + ic))),
            _mm256_castsi256_si128(zp16));
        const __m256i both = _mm256_broadcastsi128_si256(v);
        for (int j = 0; j < m_count / 2; ++j) {
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(px + ic * m_count + kBlock * j),
                              _mm256_shuffle_epi8(both, load256(expand[j])));
        }
      }
      for (; ic < p.in_c; ++ic) {
        const int16_t v = static_cast<int16_t>(src[ic] - zp);
        for (int m = 0; m < m_count; ++m) px[ic * m_count + m] = v;
      }
    }
    for (int c = p.out_c; c < cp; ++c) px[c] = 0;
  }
}

// An int16 buffer starting on a 64-byte cache line, so that the kernel's
// 32-byte loads at multiples of 32 bytes never split a line.
class AlignedInt16 {
 public:
  AlignedInt16() = default;
  explicit AlignedInt16(size_t n) : storage_(new int16_t[n + 32]) {
    const auto addr = reinterpret_cast<uintptr_t>(storage_.get());
    data_ = storage_.get() + (64 - addr % 64) % 64 / sizeof(int16_t);
  }
  int16_t* get() const { return data_; }

 private:
  std::unique_ptr<int16_t[]> storage_;
  int16_t* data_ = nullptr;
};

// Filter and output stage rearranged for the kernel (steps 2 and 3).
struct Packed {
  int blocks = 0, cp = 0, taps = 0, pairs = 0;
  bool any_left_shift = false;
  AlignedInt16 filter;  // [block][pair][A 16 | B 16] int16
  std::unique_ptr<BlockStage[]> stage;  // [block]
};

__attribute__((target("avx2,fma"))) Packed pack(const DwProblem& p) {
  Packed k;
  const int out_c = p.out_c;
  k.blocks = (out_c + kBlock - 1) / kBlock;
  k.cp = k.blocks * kBlock;
  k.taps = p.kernel_h * p.kernel_w;
  k.pairs = (k.taps + 1) / 2;
  k.filter = AlignedInt16(static_cast<size_t>(k.blocks) * k.pairs * 2 * kBlock);
  for (int b = 0; b < k.blocks; ++b) {
    for (int q = 0; q < k.pairs; ++q) {
      alignas(32) int16_t w[2][kBlock];
      for (int i = 0; i < 2; ++i) {
        const int t = 2 * q + i;
        for (int j = 0; j < kBlock; ++j) {
          const int oc = b * kBlock + j;
          w[i][j] = (t < k.taps && oc < out_c) ? p.filter[static_cast<int64_t>(t) * out_c + oc]
                                               : int16_t{0};
        }
      }
      const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(w[0]));
      const __m256i w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(w[1]));
      int16_t* dst = k.filter.get() + (static_cast<size_t>(b) * k.pairs + q) * 2 * kBlock;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_unpacklo_epi16(w0, w1));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + kBlock), _mm256_unpackhi_epi16(w0, w1));
    }
  }
  k.stage.reset(new BlockStage[k.blocks]);
  for (int b = 0; b < k.blocks; ++b) {
    BlockStage& s = k.stage[b];
    for (int half = 0; half < 2; ++half) {
      for (int j = 0; j < 8; ++j) {
        const int oc = b * kBlock + permuted_channel(half, j);
        const bool real = oc < out_c;
        const bool fixed = p.stage.kind == OutputStageKind::kFixedPoint;
        const int shift = real && fixed ? p.stage.shift[oc] : 0;
        const int right = shift > 0 ? 0 : -shift;
        s.bias[half][j] = (real && p.bias != nullptr) ? p.bias[oc] : 0;
        s.float_scale[half][j] = real && !fixed ? p.stage.float_scale[oc] : 0.0f;
        s.multiplier[half][j] = real && fixed ? p.stage.multiplier[oc] : 0;
        s.left_shift[half][j] = shift > 0 ? shift : 0;
        s.right_shift[half][j] = right;
        s.round_mask[half][j] = static_cast<int32_t>((int64_t{1} << right) - 1);
        s.round_half[half][j] = s.round_mask[half][j] >> 1;
        k.any_left_shift = k.any_left_shift || shift > 0;
      }
      for (int j = 0; j < 8; j += 2) {
        s.multiplier_odd[half][j] = s.multiplier[half][j + 1];
        s.multiplier_odd[half][j + 1] = 0;
      }
    }
  }
  return k;
}

// The main loop. (Fully unrolling the pair loop for 3x3 measured slower: the
// extra live registers spill.)
template <DwEpilogue kEpilogue>
__attribute__((target("avx2,fma"))) void depthwise_avx2_loop(const DwProblem& p, const Packed& k) {
  const int out_c = p.out_c;
  const int blocks = k.blocks, cp = k.cp, taps = k.taps;
  const int pairs = k.pairs;
  const int kh = p.kernel_h, kw = p.kernel_w;
  const int wp = p.in_w + p.window.pad_left + p.window.pad_right;
  const int64_t row_stride = static_cast<int64_t>(wp) * cp;

  // Step 1: the ring of kernel_h padded rows; padded row y lives in slot y % kh.
  // It is this thread's scratch buffer, kept between calls (no allocation per
  // call); every row is built before a tap reads it.
  thread_local AlignedInt16 ring;
  thread_local size_t ring_capacity = 0;
  const size_t ring_size = static_cast<size_t>(kh) * row_stride;
  if (ring_capacity < ring_size) {
    ring = AlignedInt16(ring_size);
    ring_capacity = ring_size;
  }
  int next_row = 0;  // first padded row not converted yet
  const int16_t* tap0[kMaxPairs];  // this output row's pair pointers
  const int16_t* tap1[kMaxPairs];

  const __m256i out_zp = _mm256_set1_epi32(p.stage.output_zero_point);
  const __m256i act_min = _mm256_set1_epi8(static_cast<int8_t>(p.stage.act_min));
  const __m256i act_max = _mm256_set1_epi8(static_cast<int8_t>(p.stage.act_max));
  const int32_t zp = p.stage.output_zero_point;
  const __m256 float_lo = _mm256_set1_ps(static_cast<float>(p.stage.act_min - zp));
  const __m256 float_hi = _mm256_set1_ps(static_cast<float>(p.stage.act_max - zp));
  const int64_t pixel_step = static_cast<int64_t>(p.window.stride_w) * cp;

  for (int oy = 0; oy < p.out_h; ++oy) {
    const int y0 = oy * p.window.stride_h;
    for (int y = std::max(next_row, y0); y < y0 + kh; ++y) {
      build_row(p, y, cp, ring.get() + (y % kh) * row_stride);
    }
    next_row = y0 + kh;
    auto tap_ptr = [&](int t) {
      return ring.get() + ((y0 + t / kw) % kh) * row_stride + static_cast<int64_t>(t % kw) * cp;
    };
    for (int q = 0; q < pairs; ++q) {
      tap0[q] = tap_ptr(2 * q);
      tap1[q] = 2 * q + 1 < taps ? tap_ptr(2 * q + 1) : tap0[q];
    }
    int8_t* out_row = p.output + static_cast<int64_t>(oy) * p.out_w * out_c;

    int ox = 0;
    for (; ox + 2 <= p.out_w; ox += 2) {  // two output pixels per step
      const int64_t px0 = ox * pixel_step;
      const int64_t px1 = px0 + pixel_step;
      for (int b = 0; b < blocks; ++b) {
        const BlockStage& s = k.stage[b];
        const int16_t* wq = k.filter.get() + static_cast<size_t>(b) * pairs * 2 * kBlock;
        const int64_t c0 = px0 + b * kBlock, c1 = px1 + b * kBlock;
        __m256i a0 = load256(s.bias[0]), b0 = load256(s.bias[1]);
        __m256i a1 = a0, b1 = b0;
        for (int q = 0; q < pairs; ++q) {
          const __m256i wa = load256(wq + 2 * q * kBlock);
          const __m256i wb = load256(wq + (2 * q + 1) * kBlock);
          const __m256i x00 = load256(tap0[q] + c0), x01 = load256(tap1[q] + c0);
          const __m256i x10 = load256(tap0[q] + c1), x11 = load256(tap1[q] + c1);
          a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_unpacklo_epi16(x00, x01), wa));
          b0 = _mm256_add_epi32(b0, _mm256_madd_epi16(_mm256_unpackhi_epi16(x00, x01), wb));
          a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_unpacklo_epi16(x10, x11), wa));
          b1 = _mm256_add_epi32(b1, _mm256_madd_epi16(_mm256_unpackhi_epi16(x10, x11), wb));
        }
        // Both pixels narrowed together: after the permute, pixel 0's 16
        // channels are the low half and pixel 1's the high half.
        const __m256i r0 = requantize_block<kEpilogue>(a0, b0, s, out_zp, float_lo, float_hi);
        const __m256i r1 = requantize_block<kEpilogue>(a1, b1, s, out_zp, float_lo, float_hi);
        __m256i r8 = _mm256_permute4x64_epi64(_mm256_packs_epi16(r0, r1), 0xD8);
        r8 = _mm256_min_epi8(_mm256_max_epi8(r8, act_min), act_max);
        const int count = std::min(kBlock, out_c - b * kBlock);
        int8_t* out = out_row + static_cast<int64_t>(ox) * out_c + b * kBlock;
        store_channels(_mm256_castsi256_si128(r8), count, out);
        store_channels(_mm256_extracti128_si256(r8, 1), count, out + out_c);
      }
    }
    for (; ox < p.out_w; ++ox) {  // odd last pixel
      const int64_t px0 = ox * pixel_step;
      for (int b = 0; b < blocks; ++b) {
        const BlockStage& s = k.stage[b];
        const int16_t* wq = k.filter.get() + static_cast<size_t>(b) * pairs * 2 * kBlock;
        const int64_t c0 = px0 + b * kBlock;
        __m256i a0 = load256(s.bias[0]), b0 = load256(s.bias[1]);
        for (int q = 0; q < pairs; ++q) {
          const __m256i x00 = load256(tap0[q] + c0), x01 = load256(tap1[q] + c0);
          a0 = _mm256_add_epi32(
              a0, _mm256_madd_epi16(_mm256_unpacklo_epi16(x00, x01), load256(wq + 2 * q * kBlock)));
          b0 = _mm256_add_epi32(b0, _mm256_madd_epi16(_mm256_unpackhi_epi16(x00, x01),
                                                      load256(wq + (2 * q + 1) * kBlock)));
        }
        const __m256i r0 = requantize_block<kEpilogue>(a0, b0, s, out_zp, float_lo, float_hi);
        __m256i r8 = _mm256_permute4x64_epi64(_mm256_packs_epi16(r0, r0), 0xD8);
        r8 = _mm256_min_epi8(_mm256_max_epi8(r8, act_min), act_max);
        store_channels(_mm256_castsi256_si128(r8), std::min(kBlock, out_c - b * kBlock),
                       out_row + static_cast<int64_t>(ox) * out_c + b * kBlock);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// AVX-512 VNNI path: the AVX2 scheme at twice the width with vpdpwssd.
//
// The ring is the same (build_row with Cp = out_c rounded up to 32), blocks
// are 32 channels, and a zmm load of a tap holds a block's 32 int16 inputs.
// The in-lane unpacks of the two taps of a pair give accumulator A the
// channels 8l + {0..3} and B 8l + {4..7} of each 128-bit lane l; vpdpwssd
// adds both products of a channel to its int32 lane in one instruction
// (exact: |x - zp| * |w| * 2 <= 2 * 255 * 128). _mm512_packs_epi32(A, B)
// gives channel order 0..31 back as int16, _mm512_packs_epi16 of two pixels
// and a qword permute put pixel 0's 32 bytes in the low half and pixel 1's in
// the high half. The output stage is the AVX2 one on 16 lanes, with the
// rounding division ((t >> (e - 1)) + 1) >> 1, t = h - [h < 0], for blocks
// whose exponents are all >= 1 (gemm_s8.cc has the proof; the general
// remainder/threshold form otherwise).

// GCC 12 warns that the _mm512_undefined_* placeholders inside its own
// AVX-512 intrinsics "may be used uninitialized" (a false positive of the
// headers, as in gemm_s8.cc).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define NACC_DW512 \
  __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))

constexpr int kBlock512 = 32;

// Channel of the block held by lane j of accumulator A (half 0) or B (half 1).
inline int permuted_channel512(int half, int j) { return 8 * (j / 4) + 4 * half + j % 4; }

struct alignas(64) BlockStage512 {
  int32_t bias[2][16];
  int32_t multiplier[2][16];
  int32_t multiplier_odd[2][16];  // lane 2i holds lane 2i+1's multiplier
  int32_t left_shift[2][16];
  int32_t right_shift[2][16];
  int32_t right_shift_m1[2][16];  // right_shift - 1 (the fast rounding division)
  int32_t round_mask[2][16];
  int32_t round_half[2][16];
  float float_scale[2][16];
};

// kFixedPoint: no left shift and every exponent >= 1 (the fast division);
// kFixedPointGeneral: left shifts or exponent 0 somewhere; kFloat32.
enum class DwEpilogue512 { kFixedPoint, kFixedPointGeneral, kFloat32 };

struct Packed512 {
  int blocks = 0, cp = 0, taps = 0, pairs = 0;
  DwEpilogue512 epilogue = DwEpilogue512::kFixedPoint;
  AlignedInt16 filter;  // [block][pair][A 32 | B 32] int16
  std::unique_ptr<BlockStage512[]> stage;  // [block]
};

NACC_DW512 Packed512 pack512(const DwProblem& p) {
  Packed512 k;
  const int out_c = p.out_c;
  k.blocks = (out_c + kBlock512 - 1) / kBlock512;
  k.cp = k.blocks * kBlock512;
  k.taps = p.kernel_h * p.kernel_w;
  k.pairs = (k.taps + 1) / 2;
  k.filter = AlignedInt16(static_cast<size_t>(k.blocks) * k.pairs * 2 * kBlock512);
  for (int b = 0; b < k.blocks; ++b) {
    for (int q = 0; q < k.pairs; ++q) {
      alignas(64) int16_t w[2][kBlock512];
      for (int i = 0; i < 2; ++i) {
        const int t = 2 * q + i;
        for (int j = 0; j < kBlock512; ++j) {
          const int oc = b * kBlock512 + j;
          w[i][j] = (t < k.taps && oc < out_c) ? p.filter[static_cast<int64_t>(t) * out_c + oc]
                                               : int16_t{0};
        }
      }
      const __m512i w0 = _mm512_load_si512(w[0]);
      const __m512i w1 = _mm512_load_si512(w[1]);
      int16_t* dst = k.filter.get() + (static_cast<size_t>(b) * k.pairs + q) * 2 * kBlock512;
      _mm512_storeu_si512(dst, _mm512_unpacklo_epi16(w0, w1));
      _mm512_storeu_si512(dst + kBlock512, _mm512_unpackhi_epi16(w0, w1));
    }
  }
  const bool fixed = p.stage.kind == OutputStageKind::kFixedPoint;
  bool general = false;
  k.stage.reset(new BlockStage512[k.blocks]);
  for (int b = 0; b < k.blocks; ++b) {
    BlockStage512& s = k.stage[b];
    for (int half = 0; half < 2; ++half) {
      for (int j = 0; j < 16; ++j) {
        const int oc = b * kBlock512 + permuted_channel512(half, j);
        const bool real = oc < out_c;
        // Padding lanes: exponent 1, results dropped.
        const int shift = real && fixed ? p.stage.shift[oc] : -1;
        const int right = shift > 0 ? 0 : -shift;
        s.bias[half][j] = (real && p.bias != nullptr) ? p.bias[oc] : 0;
        s.float_scale[half][j] = real && !fixed ? p.stage.float_scale[oc] : 0.0f;
        s.multiplier[half][j] = real && fixed ? p.stage.multiplier[oc] : 0;
        s.left_shift[half][j] = shift > 0 ? shift : 0;
        s.right_shift[half][j] = right;
        s.right_shift_m1[half][j] = right - 1;
        s.round_mask[half][j] = static_cast<int32_t>((int64_t{1} << right) - 1);
        s.round_half[half][j] = s.round_mask[half][j] >> 1;
        general = general || (real && fixed && right == 0);
      }
      for (int j = 0; j < 16; j += 2) {
        s.multiplier_odd[half][j] = s.multiplier[half][j + 1];
        s.multiplier_odd[half][j + 1] = 0;
      }
    }
  }
  k.epilogue = !fixed ? DwEpilogue512::kFloat32
               : general ? DwEpilogue512::kFixedPointGeneral
                         : DwEpilogue512::kFixedPoint;
  return k;
}

NACC_DW512 __attribute__((always_inline)) inline __m512i load512(const void* p) {
  return _mm512_loadu_si512(p);
}

// requantize_half on 16 lanes (see requantize_avx2 for the arithmetic).
template <DwEpilogue512 kEpilogue>
NACC_DW512 __attribute__((always_inline)) inline __m512i requantize_half512(
    __m512i acc, const BlockStage512& s, int half, __m512 lo, __m512 hi) {
  if constexpr (kEpilogue == DwEpilogue512::kFloat32) {
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), _mm512_loadu_ps(s.float_scale[half]));
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    return _mm512_cvtps_epi32(v);
  } else {
    constexpr bool kGeneral = kEpilogue == DwEpilogue512::kFixedPointGeneral;
    const __m512i x = kGeneral ? _mm512_sllv_epi32(acc, load512(s.left_shift[half])) : acc;
    const __m512i nudge = _mm512_set1_epi64(int64_t{1} << 30);
    const __m512i one = _mm512_set1_epi32(1);
    __m512i even = _mm512_mul_epi32(x, load512(s.multiplier[half]));
    __m512i odd = _mm512_mul_epi32(_mm512_srli_epi64(x, 32), load512(s.multiplier_odd[half]));
    even = _mm512_srli_epi64(_mm512_add_epi64(even, nudge), 31);
    odd = _mm512_slli_epi64(_mm512_add_epi64(odd, nudge), 1);
    const __m512i high = _mm512_mask_blend_epi32(0xAAAA, even, odd);
    if constexpr (!kGeneral) {
      const __m512i t = _mm512_add_epi32(high, _mm512_srai_epi32(high, 31));
      return _mm512_srai_epi32(
          _mm512_add_epi32(_mm512_srav_epi32(t, load512(s.right_shift_m1[half])), one), 1);
    } else {
      const __m512i remainder = _mm512_and_si512(high, load512(s.round_mask[half]));
      const __m512i threshold =
          _mm512_add_epi32(load512(s.round_half[half]), _mm512_srli_epi32(high, 31));
      const __m512i shifted = _mm512_srav_epi32(high, load512(s.right_shift[half]));
      return _mm512_mask_add_epi32(shifted, _mm512_cmpgt_epi32_mask(remainder, threshold),
                                   shifted, one);
    }
  }
}

// One pixel's 32 channels as int16 in channel order (zero point added,
// saturated to int16).
template <DwEpilogue512 kEpilogue>
NACC_DW512 __attribute__((always_inline)) inline __m512i requantize_block512(
    __m512i acc_a, __m512i acc_b, const BlockStage512& s, __m512i out_zp, __m512 lo, __m512 hi) {
  const __m512i ra = _mm512_add_epi32(requantize_half512<kEpilogue>(acc_a, s, 0, lo, hi), out_zp);
  const __m512i rb = _mm512_add_epi32(requantize_half512<kEpilogue>(acc_b, s, 1, lo, hi), out_zp);
  return _mm512_packs_epi32(ra, rb);
}

// build_row for depth multiplier 1 with AVX-512: each pixel's channels in
// 32-channel steps, the last one masked (the channel tail up to Cp becomes 0
// with a zero-masking subtract), so no per-channel scalar loop is left.
NACC_DW512 void build_row512(const DwProblem& p, int y, int cp, int16_t* dst) {
  if (p.depth_multiplier != 1) {
    build_row(p, y, cp, dst);
    return;
  }
  const int wp = p.in_w + p.window.pad_left + p.window.pad_right;
  const int iy = y - p.window.pad_top;
  if (iy < 0 || iy >= p.in_h) {
    std::memset(dst, 0, sizeof(int16_t) * wp * cp);
    return;
  }
  std::memset(dst, 0, sizeof(int16_t) * p.window.pad_left * cp);
  std::memset(dst + static_cast<int64_t>(p.window.pad_left + p.in_w) * cp, 0,
              sizeof(int16_t) * p.window.pad_right * cp);
  const __m512i zp16 = _mm512_set1_epi16(static_cast<int16_t>(p.input_zero_point));
  const int8_t* src_row = p.input + static_cast<int64_t>(iy) * p.in_w * p.in_c;
  const int full = p.in_c / kBlock512 * kBlock512;
  const int rest = p.in_c - full;
  const __mmask32 tail = rest == 0 ? __mmask32{0} : (~__mmask32{0}) >> (32 - rest);
  for (int ix = 0; ix < p.in_w; ++ix) {
    const int8_t* src = src_row + static_cast<int64_t>(ix) * p.in_c;
    int16_t* px = dst + static_cast<int64_t>(ix + p.window.pad_left) * cp;
    int c = 0;
    for (; c < full; c += kBlock512) {
      const __m512i v =
          _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + c)));
      _mm512_storeu_si512(px + c, _mm512_sub_epi16(v, zp16));
    }
    if (c < cp) {  // the channel tail: 0 past in_c up to the block's end
      const __m512i v = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(tail, src + c));
      _mm512_storeu_si512(px + c, _mm512_maskz_sub_epi16(tail, v, zp16));
      for (c += kBlock512; c < cp; c += kBlock512) {
        _mm512_storeu_si512(px + c, _mm512_setzero_si512());
      }
    }
  }
}

template <DwEpilogue512 kEpilogue>
NACC_DW512 void depthwise_vnni512_loop(const DwProblem& p, const Packed512& k) {
  const int out_c = p.out_c;
  const int blocks = k.blocks, cp = k.cp, taps = k.taps;
  const int pairs = k.pairs;
  const int kh = p.kernel_h, kw = p.kernel_w;
  const int wp = p.in_w + p.window.pad_left + p.window.pad_right;
  const int64_t row_stride = static_cast<int64_t>(wp) * cp;

  // The ring of kernel_h padded rows, this thread's scratch (see the AVX2 loop).
  thread_local AlignedInt16 ring;
  thread_local size_t ring_capacity = 0;
  const size_t ring_size = static_cast<size_t>(kh) * row_stride;
  if (ring_capacity < ring_size) {
    ring = AlignedInt16(ring_size);
    ring_capacity = ring_size;
  }
  int next_row = 0;
  const int16_t* tap0[kMaxPairs];
  const int16_t* tap1[kMaxPairs];

  const __m512i out_zp = _mm512_set1_epi32(p.stage.output_zero_point);
  const __m512i act_min = _mm512_set1_epi8(static_cast<int8_t>(p.stage.act_min));
  const __m512i act_max = _mm512_set1_epi8(static_cast<int8_t>(p.stage.act_max));
  const int32_t zp = p.stage.output_zero_point;
  const __m512 float_lo = _mm512_set1_ps(static_cast<float>(p.stage.act_min - zp));
  const __m512 float_hi = _mm512_set1_ps(static_cast<float>(p.stage.act_max - zp));
  const __m512i pixel_order = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
  const int64_t pixel_step = static_cast<int64_t>(p.window.stride_w) * cp;

  for (int oy = 0; oy < p.out_h; ++oy) {
    const int y0 = oy * p.window.stride_h;
    for (int y = std::max(next_row, y0); y < y0 + kh; ++y) {
      build_row512(p, y, cp, ring.get() + (y % kh) * row_stride);
    }
    next_row = y0 + kh;
    auto tap_ptr = [&](int t) {
      return ring.get() + ((y0 + t / kw) % kh) * row_stride + static_cast<int64_t>(t % kw) * cp;
    };
    for (int q = 0; q < pairs; ++q) {
      tap0[q] = tap_ptr(2 * q);
      tap1[q] = 2 * q + 1 < taps ? tap_ptr(2 * q + 1) : tap0[q];
    }
    int8_t* out_row = p.output + static_cast<int64_t>(oy) * p.out_w * out_c;

    for (int b = 0; b < blocks; ++b) {
      const BlockStage512& s = k.stage[b];
      const int16_t* wq = k.filter.get() + static_cast<size_t>(b) * pairs * 2 * kBlock512;
      const int count = std::min(kBlock512, out_c - b * kBlock512);
      const __mmask32 keep = count == kBlock512 ? ~__mmask32{0} : ((__mmask32{1} << count) - 1);
      const __m512i bias_a = load512(s.bias[0]), bias_b = load512(s.bias[1]);
      int ox = 0;
      for (; ox + 4 <= p.out_w; ox += 4) {  // four output pixels per step: 8 accumulator chains
        const int64_t c0 = ox * pixel_step + b * kBlock512;
        const int64_t c[4] = {c0, c0 + pixel_step, c0 + 2 * pixel_step, c0 + 3 * pixel_step};
        __m512i acc_a[4] = {bias_a, bias_a, bias_a, bias_a};
        __m512i acc_b[4] = {bias_b, bias_b, bias_b, bias_b};
        for (int q = 0; q < pairs; ++q) {
          const __m512i wa = load512(wq + 2 * q * kBlock512);
          const __m512i wb = load512(wq + (2 * q + 1) * kBlock512);
#pragma GCC unroll 4
          for (int i = 0; i < 4; ++i) {
            const __m512i x0 = load512(tap0[q] + c[i]), x1 = load512(tap1[q] + c[i]);
            acc_a[i] = _mm512_dpwssd_epi32(acc_a[i], _mm512_unpacklo_epi16(x0, x1), wa);
            acc_b[i] = _mm512_dpwssd_epi32(acc_b[i], _mm512_unpackhi_epi16(x0, x1), wb);
          }
        }
        int8_t* out = out_row + static_cast<int64_t>(ox) * out_c + b * kBlock512;
#pragma GCC unroll 2
        for (int i = 0; i < 4; i += 2) {
          const __m512i r0 =
              requantize_block512<kEpilogue>(acc_a[i], acc_b[i], s, out_zp, float_lo, float_hi);
          const __m512i r1 = requantize_block512<kEpilogue>(acc_a[i + 1], acc_b[i + 1], s, out_zp,
                                                            float_lo, float_hi);
          __m512i r8 = _mm512_permutexvar_epi64(pixel_order, _mm512_packs_epi16(r0, r1));
          r8 = _mm512_min_epi8(_mm512_max_epi8(r8, act_min), act_max);
          _mm256_mask_storeu_epi8(out + i * out_c, keep, _mm512_castsi512_si256(r8));
          _mm256_mask_storeu_epi8(out + (i + 1) * out_c, keep, _mm512_extracti64x4_epi64(r8, 1));
        }
      }
      for (; ox + 2 <= p.out_w; ox += 2) {  // two output pixels per step
        const int64_t c0 = ox * pixel_step + b * kBlock512, c1 = c0 + pixel_step;
        __m512i a0 = bias_a, b0 = bias_b, a1 = bias_a, b1 = bias_b;
        for (int q = 0; q < pairs; ++q) {
          const __m512i wa = load512(wq + 2 * q * kBlock512);
          const __m512i wb = load512(wq + (2 * q + 1) * kBlock512);
          const __m512i x00 = load512(tap0[q] + c0), x01 = load512(tap1[q] + c0);
          const __m512i x10 = load512(tap0[q] + c1), x11 = load512(tap1[q] + c1);
          a0 = _mm512_dpwssd_epi32(a0, _mm512_unpacklo_epi16(x00, x01), wa);
          b0 = _mm512_dpwssd_epi32(b0, _mm512_unpackhi_epi16(x00, x01), wb);
          a1 = _mm512_dpwssd_epi32(a1, _mm512_unpacklo_epi16(x10, x11), wa);
          b1 = _mm512_dpwssd_epi32(b1, _mm512_unpackhi_epi16(x10, x11), wb);
        }
        const __m512i r0 = requantize_block512<kEpilogue>(a0, b0, s, out_zp, float_lo, float_hi);
        const __m512i r1 = requantize_block512<kEpilogue>(a1, b1, s, out_zp, float_lo, float_hi);
        // Saturating packs keep order, so the int8 clamp after them equals the int32 one.
        __m512i r8 = _mm512_permutexvar_epi64(pixel_order, _mm512_packs_epi16(r0, r1));
        r8 = _mm512_min_epi8(_mm512_max_epi8(r8, act_min), act_max);
        int8_t* out = out_row + static_cast<int64_t>(ox) * out_c + b * kBlock512;
        _mm256_mask_storeu_epi8(out, keep, _mm512_castsi512_si256(r8));
        _mm256_mask_storeu_epi8(out + out_c, keep, _mm512_extracti64x4_epi64(r8, 1));
      }
      for (; ox < p.out_w; ++ox) {  // odd last pixel
        const int64_t c0 = ox * pixel_step + b * kBlock512;
        __m512i a0 = bias_a, b0 = bias_b;
        for (int q = 0; q < pairs; ++q) {
          const __m512i x00 = load512(tap0[q] + c0), x01 = load512(tap1[q] + c0);
          a0 = _mm512_dpwssd_epi32(a0, _mm512_unpacklo_epi16(x00, x01),
                                   load512(wq + 2 * q * kBlock512));
          b0 = _mm512_dpwssd_epi32(b0, _mm512_unpackhi_epi16(x00, x01),
                                   load512(wq + (2 * q + 1) * kBlock512));
        }
        const __m512i r0 = requantize_block512<kEpilogue>(a0, b0, s, out_zp, float_lo, float_hi);
        __m512i r8 = _mm512_permutexvar_epi64(pixel_order, _mm512_packs_epi16(r0, r0));
        r8 = _mm512_min_epi8(_mm512_max_epi8(r8, act_min), act_max);
        _mm256_mask_storeu_epi8(out_row + static_cast<int64_t>(ox) * out_c + b * kBlock512, keep,
                                _mm512_castsi512_si256(r8));
      }
    }
  }
}

#pragma GCC diagnostic pop

void depthwise_vnni512(const DwProblem& p, const Packed512& k) {
  switch (k.epilogue) {
    case DwEpilogue512::kFloat32:
      depthwise_vnni512_loop<DwEpilogue512::kFloat32>(p, k);
      break;
    case DwEpilogue512::kFixedPointGeneral:
      depthwise_vnni512_loop<DwEpilogue512::kFixedPointGeneral>(p, k);
      break;
    case DwEpilogue512::kFixedPoint:
      depthwise_vnni512_loop<DwEpilogue512::kFixedPoint>(p, k);
      break;
  }
}

// A depthwise layer's filter and output stage packed once (prepared.h): the
// AVX2 form, and the AVX-512 one when the CPU has AVX-512 VNNI (either may
// run: tests and benchmarks switch paths).
struct PreparedDepthwise : PreparedWeights {
  Packed k;
  std::unique_ptr<Packed512> k512;
};

void depthwise_avx2(const DwProblem& p, const PreparedWeights* prepared) {
  const auto* ready = dynamic_cast<const PreparedDepthwise*>(prepared);
  if (use_avx512_vnni()) {
    if (ready && ready->k512) {
      depthwise_vnni512(p, *ready->k512);
    } else {
      depthwise_vnni512(p, pack512(p));
    }
    return;
  }
  Packed own;
  if (!ready) own = pack(p);
  const Packed& k = ready ? ready->k : own;
  if (p.stage.kind == OutputStageKind::kFloat32) {
    depthwise_avx2_loop<DwEpilogue::kFloat32>(p, k);
  } else if (k.any_left_shift) {
    depthwise_avx2_loop<DwEpilogue::kFixedPointLeftShift>(p, k);
  } else {
    depthwise_avx2_loop<DwEpilogue::kFixedPoint>(p, k);
  }
}

}  // namespace

void depthwise_conv2d_s8(const WindowParams& window, int depth_multiplier,
                         int32_t input_zero_point, const OutputStage& out_stage,
                         const Shape4& input_shape, const int8_t* input,
                         const Shape4& filter_shape, const int8_t* filter, const int32_t* bias,
                         const Shape4& output_shape, int8_t* output,
                         const PreparedWeights* prepared) {
  detail::check_not_null(kOp, "input", input);
  detail::check_not_null(kOp, "filter", filter);
  detail::check_not_null(kOp, "output", output);
  detail::check_feature_map(kOp, "input", input_shape);
  if (!(filter_shape.n == 1)) check_arg(false, kOp, ": filter shape ", filter_shape.str(),
            " must be [1, KH, KW, C_in * depth_multiplier]");
  detail::check_window(kOp, window, filter_shape.h, filter_shape.w);
  bool multiplier_ok = false;
  for (int k = 0; k <= limits::kMaxDepthMultiplierLog2; ++k) {
    multiplier_ok = multiplier_ok || depth_multiplier == (1 << k);
  }
  check_arg(multiplier_ok, kOp, ": depth_multiplier ", depth_multiplier,
            " not in {1, 2, 4, 8} (NACC_DMA_PARA3.DW_CH_MULT 0..",
            limits::kMaxDepthMultiplierLog2, ")");
  const int out_c = input_shape.c * depth_multiplier;
  check_arg(filter_shape.c == out_c, kOp, ": filter channels ", filter_shape.c,
            " must equal input channels ", input_shape.c, " x depth_multiplier ", depth_multiplier,
            " = ", out_c);
  const Shape4 expected = detail::window_output_shape(kOp, input_shape, filter_shape.h,
                                                      filter_shape.w, window, out_c);
  detail::check_output_shape(kOp, expected, output_shape);
  detail::check_zero_point(kOp, "input_zero_point", input_zero_point,
                           "NACC_FM_OFFSET.IN_FM_OFFSET");
  detail::check_output_stage(kOp, out_stage, out_c);

  const DwProblem p{input_shape.h, input_shape.w, input_shape.c, filter_shape.h, filter_shape.w,
                    depth_multiplier, output_shape.h, output_shape.w, out_c, window,
                    input_zero_point, out_stage, input, filter, bias, output};
  // The fast path has the fixed-point and float32 epilogues (a real-scale
  // depthwise is nothing a frontend lowers to).
  if (use_avx2() && out_stage.kind != OutputStageKind::kRealScale) {
    depthwise_avx2(p, prepared);
  } else {
    depthwise_reference(p);
  }
}

std::shared_ptr<const PreparedWeights> prepare_depthwise_conv2d_s8(
    const Shape4& filter_shape, const int8_t* filter, const int32_t* bias,
    const OutputStage& out_stage) {
  if (!cpu_has_avx2() || out_stage.kind == OutputStageKind::kRealScale) return nullptr;
  // pack() reads the filter, the bias and the stage's per-channel arrays only.
  DwProblem p{};
  p.kernel_h = filter_shape.h;
  p.kernel_w = filter_shape.w;
  p.out_c = filter_shape.c;
  p.stage = out_stage;
  p.filter = filter;
  p.bias = bias;
  auto prepared = std::make_shared<PreparedDepthwise>();
  prepared->k = pack(p);
  if (kernel_path_available(KernelPath::kAvx512Vnni)) {
    prepared->k512 = std::make_unique<Packed512>(pack512(p));
  }
  return prepared;
}

}  // namespace nacc

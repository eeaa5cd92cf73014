// The MAC unit's float32 convolution (NACC_ACT_PARA.MAC_FP32, conv_fp32.h): a
// plain reference loop (MacFp32Params' formula, loop for loop) and AVX-512 /
// AVX2 paths that run 16 / 8 output channels per vector, each lane its own in-order
// chain of fused multiply-adds (vfmadd, one rounding, as fmaf), the block
// sums, bias, division and rounding lane-wise IEEE float32: the same bits.
// The build compiles with -ffp-contract=off, so only the written fmas fuse.
#include "device/units/conv_fp32.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "arch/limits.h"
#include "arch/unit_checks.h"
#include "common/cpu.h"
#include "common/error.h"

namespace nacc {

namespace {

constexpr const char* kOp = "conv2d_s8_mac_fp32";
constexpr int kLanes = 16;  // float32 per AVX-512 vector
constexpr int kE = limits::kMacFp32EntryFloats;

struct Geometry {
  int in_h, in_w, in_c;
  int kernel_h, kernel_w;
  int out_h, out_w, out_c;
  WindowParams window;
  int k() const { return in_c * kernel_h * kernel_w; }
};

// The K block of output pixel (oy, ox) of the call.
int64_t block_of(const MacFp32Params& p, int oy, int ox) {
  const int64_t n = (p.pixel_y0 + oy) * p.pixel_row + p.pixel_x0 + ox;
  return int64_t{1} << (n < p.split ? p.kblock_log2 : p.kblock_tail_log2);
}

// nearbyintf(total / s_y) + zero point, clamped; the clamp is taken on the
// rounded float first ([act_min - zp, act_max - zp] holds integers, so this
// is the integer clamp after adding the zero point; a NaN gives act_min, as
// the vector path's max(q, lo) does).
int8_t quantize(float total, float s_y, const MacFp32Params& p) {
  float q = std::nearbyint(total / s_y);
  q = std::fmin(std::fmax(q, float(p.act_min - p.output_zero_point)),
                float(p.act_max - p.output_zero_point));
  return static_cast<int8_t>(static_cast<int32_t>(q) + p.output_zero_point);
}

// Reference: the formula of arch/unit_params.h MacFp32Params, loop for loop.
void reference(const Geometry& g, const MacFp32Params& p, const int8_t* input,
               const int8_t* filter, int8_t* output) {
  const int64_t K = g.k();
  const int taps = g.kernel_h * g.kernel_w;
  for (int oy = 0; oy < g.out_h; ++oy) {
    for (int ox = 0; ox < g.out_w; ++ox) {
      const int64_t S = block_of(p, oy, ox);
      for (int c = 0; c < g.out_c; ++c) {
        const float* e = p.entries + int64_t(c) * kE;  // {s_x, s_w, b_f, s_y}
        float total = 0.0f;
        for (int64_t k0 = 0; k0 < K; k0 += S) {
          float acc = 0.0f;
          for (int64_t k = k0; k < std::min(K, k0 + S); ++k) {
            const int ic = int(k / taps), ky = int(k % taps) / g.kernel_w,
                      kx = int(k % taps) % g.kernel_w;
            const int iy = oy * g.window.stride_h + ky - g.window.pad_top;
            const int ix = ox * g.window.stride_w + kx - g.window.pad_left;
            float x_f = 0.0f;
            if (iy >= 0 && iy < g.in_h && ix >= 0 && ix < g.in_w) {
              const int32_t x = input[(int64_t(iy) * g.in_w + ix) * g.in_c + ic];
              x_f = static_cast<float>(x - p.input_zero_point) * e[0];
            }
            const int8_t w = filter[((int64_t(c) * g.kernel_h + ky) * g.kernel_w + kx) * g.in_c + ic];
            const float w_f = static_cast<float>(w) * e[1];
            acc = std::fma(w_f, x_f, acc);
          }
          total = k0 == 0 ? acc : total + acc;
        }
        total = total + e[2];
        output[(int64_t(oy) * g.out_w + ox) * g.out_c + c] = quantize(total, e[3], p);
      }
    }
  }
}

// The float32 weights of the fast path: [K][cp] in ONNX's K order, channels
// padded to whole vectors with 0 (their lanes are computed, never stored).
struct Prepared final : PreparedWeights {
  int channels = 0, k = 0, kernel_h = 0, kernel_w = 0, in_c = 0, cp = 0;
  std::vector<float> w, bias, s_y;  // w [k][cp]; bias, s_y [cp]
  bool uniform_sx = true;           // every channel's s_x the same (the fast path needs it)
  float s_x = 1.0f;
};

std::shared_ptr<Prepared> make_prepared(const Shape4& fs, const int8_t* filter, const float* entries) {
  auto p = std::make_shared<Prepared>();
  p->channels = fs.n;
  p->kernel_h = fs.h;
  p->kernel_w = fs.w;
  p->in_c = fs.c;
  p->k = fs.c * fs.h * fs.w;
  p->cp = (fs.n + kLanes - 1) / kLanes * kLanes;
  p->w.assign(size_t(p->k) * size_t(p->cp), 0.0f);
  p->bias.assign(size_t(p->cp), 0.0f);
  p->s_y.assign(size_t(p->cp), 1.0f);
  p->s_x = entries[0];
  for (int c = 0; c < fs.n; ++c) {
    const float* e = entries + int64_t(c) * kE;
    p->uniform_sx &= e[0] == p->s_x;
    p->bias[size_t(c)] = e[2];
    p->s_y[size_t(c)] = e[3];
    for (int ky = 0; ky < fs.h; ++ky) {
      for (int kx = 0; kx < fs.w; ++kx) {
        const int8_t* src = filter + ((int64_t(c) * fs.h + ky) * fs.w + kx) * fs.c;
        for (int ic = 0; ic < fs.c; ++ic) {
          const int64_t k = (int64_t(ic) * fs.h + ky) * fs.w + kx;
          p->w[size_t(k * p->cp + c)] = static_cast<float>(src[ic]) * e[1];
        }
      }
    }
  }
  return p;
}

// GCC 12 warns that the _mm512_undefined_* placeholders inside its own
// AVX-512 intrinsics "may be used uninitialized" (a false positive of the
// headers, as in gemm_s8.cc).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#define NACC_AVX512 __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl")))

// NP pixels x NV channel vectors: the block sums of each lane over K, in
// order. xk[p] is pixel p's K values in ONNX order (x_f, 0 at padding).
template <int NP, int NV>
NACC_AVX512 void block_sums(const float* w, int cp, const float* const* xk, int64_t K, int64_t S,
                            __m512 (&total)[NP][NV]) {
  for (int i = 0; i < NP; ++i) {
    for (int v = 0; v < NV; ++v) total[i][v] = _mm512_setzero_ps();  // K >= 1: overwritten
  }
  for (int64_t k0 = 0; k0 < K; k0 += S) {
    const int64_t k1 = std::min(K, k0 + S);
    __m512 acc[NP][NV];
    for (int i = 0; i < NP; ++i) {
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
    }
    for (int64_t k = k0; k < k1; ++k) {
      const float* wr = w + k * cp;
      __m512 wv[NV];
      for (int v = 0; v < NV; ++v) wv[v] = _mm512_loadu_ps(wr + kLanes * v);
      for (int i = 0; i < NP; ++i) {
        const __m512 x = _mm512_set1_ps(xk[i][k]);
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(wv[v], x, acc[i][v]);
      }
    }
    for (int i = 0; i < NP; ++i) {
      for (int v = 0; v < NV; ++v) {
        total[i][v] = k0 == 0 ? acc[i][v] : _mm512_add_ps(total[i][v], acc[i][v]);
      }
    }
  }
}

// total + bias, / s_y, round half to even, clamp, + zero point, stored for
// the channels [c0, c0 + 16) that exist.
NACC_AVX512 void store_vector(__m512 total, const Prepared& pw, int c0, const MacFp32Params& p,
                              int8_t* out) {
  const __m512 lo = _mm512_set1_ps(float(p.act_min - p.output_zero_point));
  const __m512 hi = _mm512_set1_ps(float(p.act_max - p.output_zero_point));
  __m512 t = _mm512_add_ps(total, _mm512_loadu_ps(pw.bias.data() + c0));
  __m512 q = _mm512_div_ps(t, _mm512_loadu_ps(pw.s_y.data() + c0));
  q = _mm512_roundscale_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  q = _mm512_min_ps(_mm512_max_ps(q, lo), hi);  // max(NaN, lo) = lo, as fmax
  const __m512i v = _mm512_add_epi32(_mm512_cvtps_epi32(q), _mm512_set1_epi32(p.output_zero_point));
  const int n = std::min(kLanes, pw.channels - c0);
  const __mmask16 m = static_cast<__mmask16>((1u << n) - 1u);
  _mm_mask_storeu_epi8(out + c0, m, _mm512_cvtepi32_epi8(v));
}

template <int NP, int NV>
NACC_AVX512 void pixels_avx512(const Prepared& pw, const MacFp32Params& p, const float* const* xk,
                               int64_t S, int c0, int8_t* const* out) {
  __m512 total[NP][NV];
  block_sums<NP, NV>(pw.w.data() + c0, pw.cp, xk, pw.k, S, total);
  for (int i = 0; i < NP; ++i) {
    for (int v = 0; v < NV; ++v) store_vector(total[i][v], pw, c0 + kLanes * v, p, out[i]);
  }
}

// NP pixels over every channel vector, four at a time.
template <int NP>
NACC_AVX512 void channels_avx512(const Prepared& pw, const MacFp32Params& p, const float* const* xk,
                                 int64_t S, int8_t* const* out) {
  const int nv = pw.cp / kLanes;
  int v = 0;
  for (; v + 4 <= nv; v += 4) pixels_avx512<NP, 4>(pw, p, xk, S, kLanes * v, out);
  switch (nv - v) {
    case 3: pixels_avx512<NP, 3>(pw, p, xk, S, kLanes * v, out); break;
    case 2: pixels_avx512<NP, 2>(pw, p, xk, S, kLanes * v, out); break;
    case 1: pixels_avx512<NP, 1>(pw, p, xk, S, kLanes * v, out); break;
    default: break;
  }
}

// np (1..4) pixels of one K block over every channel (an ISA path below).
using PixelsKernel = void (*)(const Prepared& pw, const MacFp32Params& p, const float* const* xk,
                              int np, int64_t S, int8_t* const* out);

NACC_AVX512 void pixels_avx512_any(const Prepared& pw, const MacFp32Params& p,
                                   const float* const* xk, int np, int64_t S, int8_t* const* out) {
  switch (np) {
    case 4: channels_avx512<4>(pw, p, xk, S, out); break;
    case 3: channels_avx512<3>(pw, p, xk, S, out); break;
    case 2: channels_avx512<2>(pw, p, xk, S, out); break;
    default: channels_avx512<1>(pw, p, xk, S, out); break;
  }
}

#undef NACC_AVX512

// AVX2 + FMA: the same lanes, 8 per vector (16 ymm registers: 4 pixels x 2
// vectors of accumulators).
#define NACC_AVX2 __attribute__((target("avx2,fma")))

template <int NP>
NACC_AVX2 void pixels_avx2(const Prepared& pw, const MacFp32Params& p, const float* const* xk,
                           int64_t S, int c0, int8_t* const* out) {
  constexpr int NV = 2;
  __m256 total[NP][NV];
  for (int i = 0; i < NP; ++i) {
    for (int v = 0; v < NV; ++v) total[i][v] = _mm256_setzero_ps();
  }
  const int64_t K = pw.k;
  const float* w = pw.w.data() + c0;
  for (int64_t k0 = 0; k0 < K; k0 += S) {
    const int64_t k1 = std::min(K, k0 + S);
    __m256 acc[NP][NV];
    for (int i = 0; i < NP; ++i) {
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_setzero_ps();
    }
    for (int64_t k = k0; k < k1; ++k) {
      const float* wr = w + k * pw.cp;
      const __m256 w0 = _mm256_loadu_ps(wr), w1 = _mm256_loadu_ps(wr + 8);
      for (int i = 0; i < NP; ++i) {
        const __m256 x = _mm256_broadcast_ss(xk[i] + k);
        acc[i][0] = _mm256_fmadd_ps(w0, x, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(w1, x, acc[i][1]);
      }
    }
    for (int i = 0; i < NP; ++i) {
      for (int v = 0; v < NV; ++v) {
        total[i][v] = k0 == 0 ? acc[i][v] : _mm256_add_ps(total[i][v], acc[i][v]);
      }
    }
  }
  const __m256 lo = _mm256_set1_ps(float(p.act_min - p.output_zero_point));
  const __m256 hi = _mm256_set1_ps(float(p.act_max - p.output_zero_point));
  for (int i = 0; i < NP; ++i) {
    for (int v = 0; v < NV; ++v) {
      const int c = c0 + 8 * v;
      if (c >= pw.channels) break;
      __m256 t = _mm256_add_ps(total[i][v], _mm256_loadu_ps(pw.bias.data() + c));
      __m256 q = _mm256_div_ps(t, _mm256_loadu_ps(pw.s_y.data() + c));
      q = _mm256_round_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      q = _mm256_min_ps(_mm256_max_ps(q, lo), hi);  // max(NaN, lo) = lo, as fmax
      alignas(32) int32_t r[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(r), _mm256_cvtps_epi32(q));
      const int n = std::min(8, pw.channels - c);
      for (int j = 0; j < n; ++j) out[i][c + j] = static_cast<int8_t>(r[j] + p.output_zero_point);
    }
  }
}

NACC_AVX2 void pixels_avx2_any(const Prepared& pw, const MacFp32Params& p, const float* const* xk,
                               int np, int64_t S, int8_t* const* out) {
  for (int c0 = 0; c0 < pw.cp; c0 += 16) {
    switch (np) {
      case 4: pixels_avx2<4>(pw, p, xk, S, c0, out); break;
      case 3: pixels_avx2<3>(pw, p, xk, S, c0, out); break;
      case 2: pixels_avx2<2>(pw, p, xk, S, c0, out); break;
      default: pixels_avx2<1>(pw, p, xk, S, c0, out); break;
    }
  }
}

#undef NACC_AVX2
#pragma GCC diagnostic pop

// The fast path: x_f once per input element (channel-major for windows, so
// a pixel's K values in ONNX order are runs of kx; plain float32 multiplies),
// then up to 4 pixels of one K block at a time through `kernel`.
void run_fast(const Geometry& g, const MacFp32Params& p, const Prepared& pw, const int8_t* input,
              int8_t* output, PixelsKernel kernel) {
  const int64_t pixels_in = int64_t(g.in_h) * g.in_w;
  const bool pointwise = g.kernel_h == 1 && g.kernel_w == 1;
  std::vector<float> xf(size_t(pixels_in * g.in_c));
  if (pointwise) {  // NHWC: a pixel's K = C_in values are contiguous
    for (int64_t i = 0; i < pixels_in * g.in_c; ++i) {
      xf[size_t(i)] = static_cast<float>(int32_t(input[i]) - p.input_zero_point) * pw.s_x;
    }
  } else {  // [C_in][H][W]
    for (int64_t px = 0; px < pixels_in; ++px) {
      for (int ic = 0; ic < g.in_c; ++ic) {
        xf[size_t(ic * pixels_in + px)] =
            static_cast<float>(int32_t(input[px * g.in_c + ic]) - p.input_zero_point) * pw.s_x;
      }
    }
  }
  const int64_t K = pw.k;
  constexpr int kMaxPixels = 4;  // 4 pixels x 4 channel vectors: 16 independent chains
  std::vector<float> rows(size_t(kMaxPixels * K));
  const std::vector<float> zeros(pointwise ? size_t(K) : 0, 0.0f);
  auto k_values = [&](int64_t m, float* dst) -> const float* {
    const int oy = int(m / g.out_w), ox = int(m % g.out_w);
    const int iy0 = oy * g.window.stride_h - g.window.pad_top;
    const int ix0 = ox * g.window.stride_w - g.window.pad_left;
    if (pointwise) {
      if (iy0 < 0 || iy0 >= g.in_h || ix0 < 0 || ix0 >= g.in_w) return zeros.data();
      return xf.data() + (int64_t(iy0) * g.in_w + ix0) * g.in_c;
    }
    const int kx_lo = std::max(0, -ix0), kx_hi = std::min(g.kernel_w, g.in_w - ix0);
    float* d = dst;
    for (int ic = 0; ic < g.in_c; ++ic) {
      for (int ky = 0; ky < g.kernel_h; ++ky, d += g.kernel_w) {
        const int iy = iy0 + ky;
        if (iy < 0 || iy >= g.in_h || kx_hi <= kx_lo) {
          std::fill_n(d, g.kernel_w, 0.0f);
          continue;
        }
        const float* src = xf.data() + ic * pixels_in + int64_t(iy) * g.in_w + ix0;
        for (int kx = 0; kx < kx_lo; ++kx) d[kx] = 0.0f;
        for (int kx = kx_lo; kx < kx_hi; ++kx) d[kx] = src[kx];
        for (int kx = kx_hi; kx < g.kernel_w; ++kx) d[kx] = 0.0f;
      }
    }
    return dst;
  };
  const int64_t M = int64_t(g.out_h) * g.out_w;
  for (int64_t m = 0; m < M;) {
    const int64_t S = block_of(p, int(m / g.out_w), int(m % g.out_w));
    // The next pixels of the same K block, up to kMaxPixels.
    int np = 1;
    while (np < kMaxPixels && m + np < M &&
           block_of(p, int((m + np) / g.out_w), int((m + np) % g.out_w)) == S) {
      ++np;
    }
    const float* xk[kMaxPixels];
    int8_t* out[kMaxPixels];
    for (int i = 0; i < np; ++i) {
      xk[i] = k_values(m + i, rows.data() + i * K);
      out[i] = output + (m + i) * g.out_c;
    }
    kernel(pw, p, xk, np, S, out);
    m += np;
  }
}

void validate(const MacFp32Params& p, const Shape4& input_shape, const int8_t* input,
              const Shape4& filter_shape, const int8_t* filter, const Shape4& output_shape,
              int8_t* output) {
  detail::check_not_null(kOp, "input", input);
  detail::check_not_null(kOp, "filter", filter);
  detail::check_not_null(kOp, "output", output);
  detail::check_feature_map(kOp, "input", input_shape);
  detail::check_feature_map_extent(kOp, "output", "channels", filter_shape.n);
  check_arg(filter_shape.c == input_shape.c, kOp, ": filter ", filter_shape.str(), " has ",
            filter_shape.c, " input channels, input ", input_shape.str(), " has ", input_shape.c);
  detail::check_window(kOp, p.window, filter_shape.h, filter_shape.w);
  validate_mac_fp32_params(p, filter_shape.n);
  const Shape4 expected = detail::window_output_shape(kOp, input_shape, filter_shape.h,
                                                      filter_shape.w, p.window, filter_shape.n);
  detail::check_output_shape(kOp, expected, output_shape);
}

}  // namespace

std::shared_ptr<const PreparedWeights> prepare_conv2d_mac_fp32(const Shape4& filter_shape,
                                                               const int8_t* filter,
                                                               const float* entries) {
  if (filter == nullptr || entries == nullptr) return nullptr;
  return make_prepared(filter_shape, filter, entries);
}

void conv2d_s8_mac_fp32(const MacFp32Params& params, const Shape4& input_shape,
                        const int8_t* input, const Shape4& filter_shape, const int8_t* filter,
                        const Shape4& output_shape, int8_t* output,
                        const PreparedWeights* prepared) {
  validate(params, input_shape, input, filter_shape, filter, output_shape, output);
  const Geometry g{input_shape.h,  input_shape.w,  input_shape.c,  filter_shape.h, filter_shape.w,
                   output_shape.h, output_shape.w, output_shape.c, params.window};
  if (use_avx2()) {  // AVX2 + FMA on every ISA path; AVX-512 from the avx512_vnni path on
    const auto* ready = dynamic_cast<const Prepared*>(prepared);
    std::shared_ptr<Prepared> own;
    if (!ready || ready->channels != g.out_c || ready->k != g.k() ||
        ready->kernel_w != g.kernel_w) {
      own = make_prepared(filter_shape, filter, params.entries);
      ready = own.get();
    }
    if (ready->uniform_sx) {
      run_fast(g, params, *ready, input, output,
               use_avx512_vnni() ? pixels_avx512_any : pixels_avx2_any);
      return;
    }
  }
  reference(g, params, input, filter, output);
}

}  // namespace nacc

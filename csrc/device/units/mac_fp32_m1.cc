// The MAC unit's one-row float32 sums (mac_fp32_m1.h): plain reference loops
// (the header's formulas, loop for loop) and AVX-512 paths that keep each
// output's order: depthwise and FC kGroups4 run 16 output channels per
// vector, each lane its own sequence of rounded products and adds; FC
// kLanes8 holds one output's 8 lanes in a 256-bit vector (lane l adds the
// products k = l mod 8 in K order) and reduces them with the scalar tree.
// Every operation is a separate IEEE float32 multiply or add (the build
// compiles with -ffp-contract=off): the same bits as the reference.
#include "device/units/mac_fp32_m1.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "arch/limits.h"
#include "arch/unit_checks.h"
#include "common/cpu.h"
#include "common/error.h"

namespace nacc {

namespace {

constexpr int kE = limits::kMacFp32EntryFloats;  // {s_x, s_w, b_f, s_y}
constexpr int kLanes = 16;   // float32 per AVX-512 vector
constexpr int kMaxKblockLog2 = limits::kMaxKblockLog2;

// nearbyintf(total / s_y) + zero point, clamped; the clamp is taken on the
// rounded float ([act_min - zp, act_max - zp] holds integers, so this is the
// integer clamp after adding the zero point; NaN gives act_min, as the vector
// path's max(q, lo) does).
int8_t quantize(float total, float s_y, const MacFp32M1Params& p) {
  float q = std::nearbyint(total / s_y);
  q = std::fmin(std::fmax(q, float(p.act_min - p.output_zero_point)),
                float(p.act_max - p.output_zero_point));
  return static_cast<int8_t>(static_cast<int32_t>(q) + p.output_zero_point);
}

// kGroups4 over n products p(0..n-1) onto c: C = G_j + C.
template <typename P>
float groups4(int64_t n, float c, P p) {
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    float g = p(k) + p(k + 1);
    g = g + p(k + 2);
    g = g + p(k + 3);
    c = g + c;
  }
  if (n - k >= 2) {
    c = (p(k) + p(k + 1)) + c;
    k += 2;
  }
  if (n - k == 1) c = p(k) + c;
  return c;
}

// The same with C starting as the first group (depthwise: the bias follows).
template <typename P>
float groups4_first(int64_t n, P p) {
  int64_t k = 0;
  float c = 0.0f;
  bool first = true;
  const auto put = [&](float g) {
    c = first ? g : g + c;
    first = false;
  };
  for (; k + 4 <= n; k += 4) {
    float g = p(k) + p(k + 1);
    g = g + p(k + 2);
    g = g + p(k + 3);
    put(g);
  }
  if (n - k >= 2) {
    put(p(k) + p(k + 1));
    k += 2;
  }
  if (n - k == 1) put(p(k));
  return c;
}

// kLanes8's reduction of lanes l[8] for output channel n of the command.
float lanes8_tree(const float* l, int64_t n, const MacFp32M1Params& p) {
  if (n < p.split) {
    return (((l[0] + l[1]) + l[2]) + l[3]) + (((l[4] + l[5]) + l[6]) + l[7]);
  }
  if (p.tail >= 2 && n < p.split + 2) {
    return ((l[0] + l[2]) + (l[4] + l[6])) + ((l[1] + l[3]) + (l[5] + l[7]));
  }
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

void validate_params(const char* op, const MacFp32M1Params& p, int channels) {
  detail::check_offset(op, "input offset", -p.input_zero_point, "NACC_FM_OFFSET.IN_FM_OFFSET");
  detail::check_offset(op, "output zero point", p.output_zero_point, "NACC_FM_OFFSET.OUT_FM_OFFSET");
  detail::check_act_range(op, p.act_min, p.act_max);
  detail::check_not_null(op, "entries", p.entries);
  check_arg(p.kblock_log2 >= 0 && p.kblock_log2 <= kMaxKblockLog2, op, ": K block 2^",
            p.kblock_log2, " out of range (log2 in [0, ", kMaxKblockLog2, "])");
  static const char* names[4] = {"s_x", "s_w", "bias", "s_y"};
  for (int c = 0; c < channels; ++c) {
    const float* e = p.entries + int64_t(c) * kE;
    for (int j = 0; j < kE; ++j) {
      check_arg(std::isfinite(e[j]) && (j == 2 || e[j] > 0.0f), op, ": channel ", c, " ",
                names[j], " = ", e[j], " must be finite", j == 2 ? "" : " and > 0",
                " ({s_x, s_w, bias, s_y} per output channel)");
    }
  }
}

// ---- depthwise ---------------------------------------------------------------------

constexpr const char* kDwOp = "depthwise_conv2d_s8_mac_fp32";

struct DwGeometry {
  int in_h, in_w, in_c, kernel_h, kernel_w, out_h, out_w, out_c, dm;
  WindowParams window;
};

void dw_reference(const DwGeometry& g, const MacFp32M1Params& p, const int8_t* input,
                  const int8_t* filter, int8_t* output) {
  const int taps = g.kernel_h * g.kernel_w;
  const int64_t block = int64_t{1} << p.kblock_log2;
  for (int oy = 0; oy < g.out_h; ++oy) {
    for (int ox = 0; ox < g.out_w; ++ox) {
      for (int oc = 0; oc < g.out_c; ++oc) {
        const float* e = p.entries + int64_t(oc) * kE;
        const int ic = oc / g.dm;
        const auto x_f = [&](int64_t t) {
          const int iy = oy * g.window.stride_h + int(t) / g.kernel_w - g.window.pad_top;
          const int ix = ox * g.window.stride_w + int(t) % g.kernel_w - g.window.pad_left;
          if (iy < 0 || iy >= g.in_h || ix < 0 || ix >= g.in_w) return 0.0f;
          const int32_t x = input[(int64_t(iy) * g.in_w + ix) * g.in_c + ic];
          return static_cast<float>(x - p.input_zero_point) * e[0];
        };
        const auto w_f = [&](int64_t t) {
          return static_cast<float>(filter[t * g.out_c + oc]) * e[1];
        };
        float total = 0.0f;
        if (p.order == Fp32SumOrder::kGroups4) {
          total = groups4_first(taps, [&](int64_t t) { return x_f(t) * w_f(t); });
        } else {
          for (int64_t t0 = 0; t0 < taps; t0 += block) {
            float acc = 0.0f;
            for (int64_t t = t0; t < std::min<int64_t>(taps, t0 + block); ++t) {
              acc = std::fma(w_f(t), x_f(t), acc);
            }
            total = t0 == 0 ? acc : total + acc;
          }
        }
        total = total + e[2];
        output[(int64_t(oy) * g.out_w + ox) * g.out_c + oc] = quantize(total, e[3], p);
      }
    }
  }
}

// The fast path's float32 filter [taps][cp] (channels padded to whole
// vectors with 0), bias and output scale.
struct DwPrepared final : PreparedWeights {
  int channels = 0, taps = 0, cp = 0;
  std::vector<float> w, bias, s_y, s_x;
};

std::shared_ptr<DwPrepared> make_dw_prepared(const Shape4& fs, const int8_t* filter,
                                             const float* entries) {
  auto p = std::make_shared<DwPrepared>();
  p->channels = fs.c;
  p->taps = fs.h * fs.w;
  p->cp = (fs.c + kLanes - 1) / kLanes * kLanes;
  p->w.assign(size_t(p->taps) * size_t(p->cp), 0.0f);
  p->bias.assign(size_t(p->cp), 0.0f);
  p->s_y.assign(size_t(p->cp), 1.0f);
  p->s_x.assign(size_t(p->cp), 0.0f);
  for (int c = 0; c < fs.c; ++c) {
    const float* e = entries + int64_t(c) * kE;
    p->s_x[size_t(c)] = e[0];
    p->bias[size_t(c)] = e[2];
    p->s_y[size_t(c)] = e[3];
    for (int t = 0; t < p->taps; ++t) {
      p->w[size_t(t) * size_t(p->cp) + size_t(c)] = static_cast<float>(filter[int64_t(t) * fs.c + c]) * e[1];
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

// total / s_y, round half to even, clamp, + zero point; stored for the
// `count` channels from out (mask).
NACC_AVX512 void store_vector(__m512 total, const float* s_y, const MacFp32M1Params& p, int count,
                              int8_t* out) {
  const __m512 lo = _mm512_set1_ps(float(p.act_min - p.output_zero_point));
  const __m512 hi = _mm512_set1_ps(float(p.act_max - p.output_zero_point));
  __m512 q = _mm512_div_ps(total, _mm512_loadu_ps(s_y));
  q = _mm512_roundscale_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  q = _mm512_min_ps(_mm512_max_ps(q, lo), hi);  // max(NaN, lo) = lo, as fmax
  const __m512i v = _mm512_add_epi32(_mm512_cvtps_epi32(q), _mm512_set1_epi32(p.output_zero_point));
  const __mmask16 m = static_cast<__mmask16>((1u << count) - 1u);
  _mm_mask_storeu_epi8(out, m, _mm512_cvtepi32_epi8(v));
}

// One tap's products for 16 channels: x (0 where padded) times the filter.
NACC_AVX512 inline __m512 dw_product(const float* const* src, const DwPrepared& pw, int t, int c0,
                                     __mmask16 m) {
  const float* s = src[t];
  const __m512 x = s ? _mm512_maskz_loadu_ps(m, s + c0) : _mm512_setzero_ps();
  return _mm512_mul_ps(x, _mm512_loadu_ps(pw.w.data() + size_t(t) * size_t(pw.cp) + size_t(c0)));
}

// Depth multiplier 1, kGroups4: per output pixel and 16 channels, the taps'
// products in order, grouped by 4, C the first group, then + bias.
NACC_AVX512 void dw_run_avx512(const DwGeometry& g, const MacFp32M1Params& p, const DwPrepared& pw,
                               const int8_t* input, int8_t* output) {
  const int C = g.in_c;
  std::vector<float> xf(static_cast<size_t>(int64_t(g.in_h) * g.in_w * C));
  for (int64_t px = 0; px < int64_t(g.in_h) * g.in_w; ++px) {
    for (int c = 0; c < C; ++c) {
      xf[size_t(px * C + c)] =
          static_cast<float>(int32_t(input[px * C + c]) - p.input_zero_point) * pw.s_x[size_t(c)];
    }
  }
  const int taps = pw.taps;
  std::vector<const float*> src(static_cast<size_t>(taps));  // the tap's pixel, null when padded
  for (int oy = 0; oy < g.out_h; ++oy) {
    for (int ox = 0; ox < g.out_w; ++ox) {
      for (int t = 0; t < taps; ++t) {
        const int iy = oy * g.window.stride_h + t / g.kernel_w - g.window.pad_top;
        const int ix = ox * g.window.stride_w + t % g.kernel_w - g.window.pad_left;
        src[size_t(t)] = iy < 0 || iy >= g.in_h || ix < 0 || ix >= g.in_w
                             ? nullptr
                             : xf.data() + (int64_t(iy) * g.in_w + ix) * C;
      }
      int8_t* out = output + (int64_t(oy) * g.out_w + ox) * C;
      for (int c0 = 0; c0 < C; c0 += kLanes) {
        const int count = std::min(kLanes, C - c0);
        const __mmask16 m = static_cast<__mmask16>((1u << count) - 1u);
        const float* const* s = src.data();
        __m512 acc = _mm512_setzero_ps();
        int t = 0;
        for (; t + 4 <= taps; t += 4) {
          __m512 gsum = _mm512_add_ps(dw_product(s, pw, t, c0, m), dw_product(s, pw, t + 1, c0, m));
          gsum = _mm512_add_ps(gsum, dw_product(s, pw, t + 2, c0, m));
          gsum = _mm512_add_ps(gsum, dw_product(s, pw, t + 3, c0, m));
          acc = t == 0 ? gsum : _mm512_add_ps(gsum, acc);
        }
        if (taps - t >= 2) {
          const __m512 gsum = _mm512_add_ps(dw_product(s, pw, t, c0, m), dw_product(s, pw, t + 1, c0, m));
          acc = t == 0 ? gsum : _mm512_add_ps(gsum, acc);
          t += 2;
        }
        if (taps - t == 1) {
          const __m512 gsum = dw_product(s, pw, t, c0, m);
          acc = t == 0 ? gsum : _mm512_add_ps(gsum, acc);
        }
        acc = _mm512_add_ps(acc, _mm512_loadu_ps(pw.bias.data() + c0));  // the bias last
        store_vector(acc, pw.s_y.data() + c0, p, count, out + c0);
      }
    }
  }
}

// ---- fully connected ---------------------------------------------------------------

constexpr const char* kFcOp = "fully_connected_s8_mac_fp32";

void fc_reference(const MacFp32M1Params& p, int m, int k, int n, const int8_t* input,
                  const int8_t* weights, int8_t* output) {
  for (int r = 0; r < m; ++r) {
    const int8_t* x = input + int64_t(r) * k;
    for (int j = 0; j < n; ++j) {
      const float* e = p.entries + int64_t(j) * kE;
      const int8_t* w = weights + int64_t(j) * k;
      const auto prod = [&](int64_t i) {
        const float x_f = static_cast<float>(int32_t(x[i]) - p.input_zero_point) * e[0];
        return x_f * (static_cast<float>(w[i]) * e[1]);
      };
      float total;
      if (p.order == Fp32SumOrder::kGroups4) {
        total = groups4(k, e[2], prod);
      } else {
        float lanes[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        for (int64_t i = 0; i < k; ++i) lanes[i % 8] = lanes[i % 8] + prod(i);
        total = lanes8_tree(lanes, p.n0 + j, p) + e[2];
      }
      output[int64_t(r) * n + j] = quantize(total, e[3], p);
    }
  }
}

// kGroups4: w_f [k][np] (outputs padded to whole vectors with 0); kLanes8:
// w_f [n][kp] (K padded to whole 8-lane steps with 0, which adds +0.0f).
struct FcPrepared final : PreparedWeights {
  Fp32SumOrder order = Fp32SumOrder::kGroups4;
  int k = 0, n = 0, np = 0, kp = 0;
  std::vector<float> w, bias, s_y;
  bool uniform_sx = true;
  float s_x = 1.0f;
};

std::shared_ptr<FcPrepared> make_fc_prepared(int k, int n, const int8_t* weights,
                                             const float* entries, Fp32SumOrder order) {
  auto p = std::make_shared<FcPrepared>();
  p->order = order;
  p->k = k;
  p->n = n;
  p->np = (n + kLanes - 1) / kLanes * kLanes;
  p->kp = (k + 7) / 8 * 8;
  p->bias.assign(size_t(p->np), 0.0f);
  p->s_y.assign(size_t(p->np), 1.0f);
  p->s_x = entries[0];
  p->w.assign(order == Fp32SumOrder::kGroups4 ? size_t(k) * size_t(p->np) : size_t(n) * size_t(p->kp),
              0.0f);
  for (int j = 0; j < n; ++j) {
    const float* e = entries + int64_t(j) * kE;
    p->uniform_sx &= e[0] == p->s_x;
    p->bias[size_t(j)] = e[2];
    p->s_y[size_t(j)] = e[3];
    for (int i = 0; i < k; ++i) {
      const float w = static_cast<float>(weights[int64_t(j) * k + i]) * e[1];
      if (order == Fp32SumOrder::kGroups4) p->w[size_t(i) * size_t(p->np) + size_t(j)] = w;
      else p->w[size_t(j) * size_t(p->kp) + size_t(i)] = w;
    }
  }
  return p;
}

NACC_AVX512 inline __m512 fc_product(const float* w, int np, float x, int i, int v) {
  return _mm512_mul_ps(_mm512_set1_ps(x), _mm512_loadu_ps(w + size_t(i) * size_t(np) + size_t(kLanes * v)));
}

// kGroups4 for NV output vectors from j0: C = bias, then the groups.
template <int NV>
NACC_AVX512 void fc_groups4_vectors(const FcPrepared& pw, const float* xf, int j0,
                                    const MacFp32M1Params& p, int8_t* out) {
  const int k = pw.k, np = pw.np;
  const float* w = pw.w.data() + j0;
  __m512 c[NV];
  for (int v = 0; v < NV; ++v) c[v] = _mm512_loadu_ps(pw.bias.data() + j0 + kLanes * v);
  int i = 0;
  for (; i + 4 <= k; i += 4) {
    for (int v = 0; v < NV; ++v) {
      __m512 g = _mm512_add_ps(fc_product(w, np, xf[i], i, v), fc_product(w, np, xf[i + 1], i + 1, v));
      g = _mm512_add_ps(g, fc_product(w, np, xf[i + 2], i + 2, v));
      g = _mm512_add_ps(g, fc_product(w, np, xf[i + 3], i + 3, v));
      c[v] = _mm512_add_ps(g, c[v]);
    }
  }
  if (k - i >= 2) {
    for (int v = 0; v < NV; ++v) {
      const __m512 g = _mm512_add_ps(fc_product(w, np, xf[i], i, v), fc_product(w, np, xf[i + 1], i + 1, v));
      c[v] = _mm512_add_ps(g, c[v]);
    }
    i += 2;
  }
  if (k - i == 1) {
    for (int v = 0; v < NV; ++v) c[v] = _mm512_add_ps(fc_product(w, np, xf[i], i, v), c[v]);
  }
  for (int v = 0; v < NV; ++v) {  // the bias is C's initial value
    const int j = j0 + kLanes * v;
    store_vector(c[v], pw.s_y.data() + j, p, std::min(kLanes, pw.n - j), out + j);
  }
}

// kLanes8 for 4 outputs from j0 (fewer at the end): 8 lanes each, then the tree.
NACC_AVX512 void fc_lanes8_outputs(const FcPrepared& pw, const float* xf, int j0, int count,
                                   const MacFp32M1Params& p, int8_t* out) {
  __m256 acc[4];
  for (int u = 0; u < 4; ++u) acc[u] = _mm256_setzero_ps();
  const float* w = pw.w.data() + size_t(j0) * pw.kp;
  for (int i = 0; i < pw.kp; i += 8) {
    const __m256 x = _mm256_loadu_ps(xf + i);
    for (int u = 0; u < count; ++u) {
      acc[u] = _mm256_add_ps(acc[u], _mm256_mul_ps(_mm256_loadu_ps(w + size_t(u) * pw.kp + i), x));
    }
  }
  for (int u = 0; u < count; ++u) {
    alignas(32) float l[8];
    _mm256_store_ps(l, acc[u]);
    const int j = j0 + u;
    const float total = lanes8_tree(l, p.n0 + j, p) + pw.bias[size_t(j)];
    out[j] = quantize(total, pw.s_y[size_t(j)], p);
  }
}

NACC_AVX512 void fc_run_avx512(const FcPrepared& pw, const MacFp32M1Params& p, int m,
                               const int8_t* input, int8_t* output) {
  const int k = pw.k, n = pw.n;
  std::vector<float> xf(size_t(pw.kp), 0.0f);
  for (int r = 0; r < m; ++r) {
    const int8_t* x = input + int64_t(r) * k;
    for (int i = 0; i < k; ++i) {
      xf[size_t(i)] = static_cast<float>(int32_t(x[i]) - p.input_zero_point) * pw.s_x;
    }
    int8_t* out = output + int64_t(r) * n;
    if (pw.order == Fp32SumOrder::kGroups4) {
      const int nv = pw.np / kLanes;
      int v = 0;
      for (; v + 4 <= nv; v += 4) fc_groups4_vectors<4>(pw, xf.data(), kLanes * v, p, out);
      switch (nv - v) {
        case 3: fc_groups4_vectors<3>(pw, xf.data(), kLanes * v, p, out); break;
        case 2: fc_groups4_vectors<2>(pw, xf.data(), kLanes * v, p, out); break;
        case 1: fc_groups4_vectors<1>(pw, xf.data(), kLanes * v, p, out); break;
        default: break;
      }
    } else {
      for (int j = 0; j < n; j += 4) {
        fc_lanes8_outputs(pw, xf.data(), j, std::min(4, n - j), p, out);
      }
    }
  }
}

#undef NACC_AVX512
#pragma GCC diagnostic pop

}  // namespace

std::shared_ptr<const PreparedWeights> prepare_depthwise_mac_fp32(const Shape4& filter_shape,
                                                                  const int8_t* filter,
                                                                  const float* entries) {
  if (!use_avx512_vnni() || filter == nullptr || entries == nullptr) return nullptr;
  return make_dw_prepared(filter_shape, filter, entries);
}

std::shared_ptr<const PreparedWeights> prepare_fully_connected_mac_fp32(int k, int n,
                                                                        const int8_t* weights,
                                                                        const float* entries,
                                                                        Fp32SumOrder order) {
  if (!use_avx512_vnni() || weights == nullptr || entries == nullptr || k < 1 || n < 1) {
    return nullptr;
  }
  return make_fc_prepared(k, n, weights, entries, order);
}

void depthwise_conv2d_s8_mac_fp32(const WindowParams& window, int depth_multiplier,
                                  const MacFp32M1Params& params, const Shape4& input_shape,
                                  const int8_t* input, const Shape4& filter_shape,
                                  const int8_t* filter, const Shape4& output_shape,
                                  int8_t* output, const PreparedWeights* prepared) {
  detail::check_not_null(kDwOp, "input", input);
  detail::check_not_null(kDwOp, "filter", filter);
  detail::check_not_null(kDwOp, "output", output);
  detail::check_feature_map(kDwOp, "input", input_shape);
  check_arg(depth_multiplier >= 1, kDwOp, ": depth multiplier ", depth_multiplier, " must be >= 1");
  check_arg(filter_shape.n == 1 && filter_shape.c == input_shape.c * depth_multiplier, kDwOp,
            ": filter ", filter_shape.str(), " must be [1, KH, KW, ", input_shape.c, " x ",
            depth_multiplier, "]");
  check_arg(params.order == Fp32SumOrder::kGroups4 || params.order == Fp32SumOrder::kFmaBlocks,
            kDwOp, ": sum order ", int(params.order), " (kGroups4 or kFmaBlocks)");
  detail::check_window(kDwOp, window, filter_shape.h, filter_shape.w);
  validate_params(kDwOp, params, filter_shape.c);
  const Shape4 expected = detail::window_output_shape(kDwOp, input_shape, filter_shape.h,
                                                      filter_shape.w, window, filter_shape.c);
  detail::check_output_shape(kDwOp, expected, output_shape);
  const DwGeometry g{input_shape.h,  input_shape.w,  input_shape.c,  filter_shape.h,
                     filter_shape.w, output_shape.h, output_shape.w, output_shape.c,
                     depth_multiplier, window};
  if (depth_multiplier == 1 && params.order == Fp32SumOrder::kGroups4 && use_avx512_vnni()) {
    const auto* ready = dynamic_cast<const DwPrepared*>(prepared);
    std::shared_ptr<DwPrepared> own;
    if (!ready || ready->channels != g.out_c || ready->taps != g.kernel_h * g.kernel_w) {
      own = make_dw_prepared(filter_shape, filter, params.entries);
      ready = own.get();
    }
    dw_run_avx512(g, params, *ready, input, output);
    return;
  }
  dw_reference(g, params, input, filter, output);
}

void fully_connected_s8_mac_fp32(const MacFp32M1Params& params, int m, int k, int n,
                                 const int8_t* input, const int8_t* weights, int8_t* output,
                                 const PreparedWeights* prepared) {
  detail::check_extent(kFcOp, "M", m);
  detail::check_extent(kFcOp, "K", k);
  detail::check_extent(kFcOp, "N", n);
  detail::check_not_null(kFcOp, "input", input);
  detail::check_not_null(kFcOp, "weights", weights);
  detail::check_not_null(kFcOp, "output", output);
  check_arg(params.order == Fp32SumOrder::kGroups4 || params.order == Fp32SumOrder::kLanes8,
            kFcOp, ": sum order ", int(params.order), " (kGroups4 or kLanes8)");
  check_arg(params.n0 >= 0 && params.split >= 0 && params.tail >= 0 && params.tail <= 3, kFcOp,
            ": first channel ", params.n0, ", tail ", params.tail, " from ", params.split,
            " (n0 >= 0, split >= 0, tail in [0, 3])");
  validate_params(kFcOp, params, n);
  if (use_avx512_vnni()) {
    const auto* ready = dynamic_cast<const FcPrepared*>(prepared);
    std::shared_ptr<FcPrepared> own;
    if (!ready || ready->k != k || ready->n != n || ready->order != params.order) {
      own = make_fc_prepared(k, n, weights, params.entries, params.order);
      ready = own.get();
    }
    if (ready->uniform_sx) {
      fc_run_avx512(*ready, params, m, input, output);
      return;
    }
  }
  fc_reference(params, m, k, n, input, weights, output);
}

}  // namespace nacc

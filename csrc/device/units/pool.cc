// The pooling unit (POOL_MODE, NACC_SPEC §1-§2): max pool and 2x2/2 average
// pool on int8 NHWC maps. Argument validation, plain reference loops
// (bit-exact to TFLite's reference_integer_ops::MaxPool / AveragePool) and
// AVX2 kernels vectorised over channels that give the same bits.
#include "device/units/pool.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "arch/fixed_point.h"
#include "arch/limits.h"
#include "arch/unit_checks.h"
#include "common/cpu.h"
#include "common/error.h"

namespace nacc {
namespace {

// The validated problem; windows are clipped to the input (padding ignored).
struct PoolProblem {
  int in_h, in_w, channels;
  int out_h, out_w;
  PoolParams params;
  const int8_t* input;  // [in_h, in_w, channels]
  int8_t* output;       // [out_h, out_w, channels]
};

// The in-bounds part [begin, end) of the window at output index `o` along
// one axis (TFLite's filter_{x,y}_{start,end}, shifted to input coordinates).
struct Span {
  int begin, end;
};
inline Span clipped_window(int o, int stride, int pad_before, int kernel, int in) {
  const int origin = o * stride - pad_before;
  return {std::max(origin, 0), std::min(origin + kernel, in)};
}

// TFLite's average rounding: half away from zero, C++ truncating division.
inline int32_t rounded_average(int32_t sum, int32_t count) {
  return sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
}

void validate(const char* op, const PoolParams& params, const Shape4& input_shape,
              const int8_t* input, const Shape4& output_shape, const int8_t* output) {
  detail::check_not_null(op, "input", input);
  detail::check_not_null(op, "output", output);
  detail::check_feature_map(op, "input", input_shape);
  detail::check_window(op, params.window, params.kernel_h, params.kernel_w);
  detail::check_act_range(op, params.act_min, params.act_max);
  const Shape4 expected = detail::window_output_shape(
      op, input_shape, params.kernel_h, params.kernel_w, params.window, input_shape.c);
  detail::check_output_shape(op, expected, output_shape);
}

// ---------------------------------------------------------------------------
// Reference paths.

void max_pool_reference(const PoolProblem& p) {
  const WindowParams& w = p.params.window;
  for (int oy = 0; oy < p.out_h; ++oy) {
    const Span ys = clipped_window(oy, w.stride_h, w.pad_top, p.params.kernel_h, p.in_h);
    for (int ox = 0; ox < p.out_w; ++ox) {
      const Span xs = clipped_window(ox, w.stride_w, w.pad_left, p.params.kernel_w, p.in_w);
      for (int c = 0; c < p.channels; ++c) {
        // An empty window (possible only with explicit padding) gives -128
        // before the clamp, exactly as TFLite's loop.
        int32_t m = -128;
        for (int iy = ys.begin; iy < ys.end; ++iy) {
          for (int ix = xs.begin; ix < xs.end; ++ix) {
            m = std::max<int32_t>(m, p.input[(static_cast<int64_t>(iy) * p.in_w + ix) * p.channels + c]);
          }
        }
        p.output[(static_cast<int64_t>(oy) * p.out_w + ox) * p.channels + c] =
            saturate_to_int8(m, p.params.act_min, p.params.act_max);
      }
    }
  }
}

void avg_pool_reference(const PoolProblem& p) {
  const WindowParams& w = p.params.window;
  for (int oy = 0; oy < p.out_h; ++oy) {
    const Span ys = clipped_window(oy, w.stride_h, w.pad_top, p.params.kernel_h, p.in_h);
    for (int ox = 0; ox < p.out_w; ++ox) {
      const Span xs = clipped_window(ox, w.stride_w, w.pad_left, p.params.kernel_w, p.in_w);
      const int32_t count = (ys.end - ys.begin) * (xs.end - xs.begin);  // >= 1, validated
      for (int c = 0; c < p.channels; ++c) {
        int32_t sum = 0;
        for (int iy = ys.begin; iy < ys.end; ++iy) {
          for (int ix = xs.begin; ix < xs.end; ++ix) {
            sum += p.input[(static_cast<int64_t>(iy) * p.in_w + ix) * p.channels + c];
          }
        }
        p.output[(static_cast<int64_t>(oy) * p.out_w + ox) * p.channels + c] =
            saturate_to_int8(rounded_average(sum, count), p.params.act_min, p.params.act_max);
      }
    }
  }
}

// POOL_FP32 (PoolParams::float32): ONNX Runtime's float32 average pools, one
// output element; `at(iy, ix)` reads the stored input byte. kQLinear
// (QLinearAveragePool) and kQuantizeRows sum row-major from 0.0f,
// kQuantizeColumns each column first; the QuantizeLinear modes add the zero
// point after rounding.
template <typename At>
inline int8_t float_average(const PoolParams& q, const Span& ys, const Span& xs, At at) {
  const int32_t zx = q.input_zero_point - q.domain.offset();  // stored x - zx = x - zx_stored
  const auto d = [&](int iy, int ix) {
    return static_cast<float>(at(iy, ix) - zx) * q.input_scale;
  };
  float sum = 0.0f;
  if (q.float_mode == PoolFloat::kQuantizeColumns) {
    for (int ix = xs.begin; ix < xs.end; ++ix) {
      float col = 0.0f;
      for (int iy = ys.begin; iy < ys.end; ++iy) col += d(iy, ix);
      sum += col;
    }
  } else {
    for (int iy = ys.begin; iy < ys.end; ++iy) {
      for (int ix = xs.begin; ix < xs.end; ++ix) sum += d(iy, ix);
    }
  }
  const float count = static_cast<float>((ys.end - ys.begin) * (xs.end - xs.begin));
  const bool quantize = q.float_mode != PoolFloat::kQLinear;
  const int32_t add = quantize ? q.output_zero_point : 0;  // added after rounding
  float v = sum / count / q.output_scale +
            (quantize ? 0.0f : static_cast<float>(q.output_zero_point));
  // Clamping before rounding to nearest even gives the same integers as after.
  v = std::fmin(std::fmax(v, static_cast<float>(q.domain.qmin() - add)),
                static_cast<float>(q.domain.qmax() - add));
  const int32_t out = static_cast<int32_t>(std::nearbyint(v)) + add - q.domain.offset();
  return static_cast<int8_t>(std::min(std::max(out, q.act_min), q.act_max));
}

void avg_pool_float_reference(const PoolProblem& p) {
  const WindowParams& w = p.params.window;
  for (int oy = 0; oy < p.out_h; ++oy) {
    const Span ys = clipped_window(oy, w.stride_h, w.pad_top, p.params.kernel_h, p.in_h);
    for (int ox = 0; ox < p.out_w; ++ox) {
      const Span xs = clipped_window(ox, w.stride_w, w.pad_left, p.params.kernel_w, p.in_w);
      for (int c = 0; c < p.channels; ++c) {
        p.output[(static_cast<int64_t>(oy) * p.out_w + ox) * p.channels + c] =
            float_average(p.params, ys, xs, [&](int iy, int ix) -> int32_t {
              return p.input[(static_cast<int64_t>(iy) * p.in_w + ix) * p.channels + c];
            });
      }
    }
  }
}

// ---------------------------------------------------------------------------
// AVX2 paths. One output pixel at a time, channels in vector blocks; a
// channel count that is not a multiple of the block width is finished with
// one more block ending at the last channel (it recomputes a few channels with
// the same result), so only maps with fewer than 8 channels take the scalar
// loop. Input and output must not overlap.

#define NACC_AVX2 __attribute__((target("avx2,fma"), always_inline)) inline

// The clipped window of one output pixel: `rows` x `cols` positions from `first`.
struct Window {
  const int8_t* first;
  int rows, cols;
  int64_t row_stride;  // bytes between input rows
  int pixel_stride;    // bytes between input pixels (= channels)
};

NACC_AVX2 void max_block32(const Window& win, int c, __m256i lo, __m256i hi, int8_t* out) {
  __m256i m = _mm256_set1_epi8(-128);
  for (int r = 0; r < win.rows; ++r) {
    const int8_t* src = win.first + r * win.row_stride + c;
    for (int k = 0; k < win.cols; ++k) {
      m = _mm256_max_epi8(m, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)));
      src += win.pixel_stride;
    }
  }
  m = _mm256_min_epi8(_mm256_max_epi8(m, lo), hi);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c), m);
}

NACC_AVX2 void max_block16(const Window& win, int c, __m256i lo, __m256i hi, int8_t* out) {
  __m128i m = _mm_set1_epi8(-128);
  for (int r = 0; r < win.rows; ++r) {
    const int8_t* src = win.first + r * win.row_stride + c;
    for (int k = 0; k < win.cols; ++k) {
      m = _mm_max_epi8(m, _mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
      src += win.pixel_stride;
    }
  }
  m = _mm_min_epi8(_mm_max_epi8(m, _mm256_castsi256_si128(lo)), _mm256_castsi256_si128(hi));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + c), m);
}

NACC_AVX2 void max_block8(const Window& win, int c, __m256i lo, __m256i hi, int8_t* out) {
  __m128i m = _mm_set1_epi8(-128);
  for (int r = 0; r < win.rows; ++r) {
    const int8_t* src = win.first + r * win.row_stride + c;
    for (int k = 0; k < win.cols; ++k) {
      m = _mm_max_epi8(m, _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src)));
      src += win.pixel_stride;
    }
  }
  m = _mm_min_epi8(_mm_max_epi8(m, _mm256_castsi256_si128(lo)), _mm256_castsi256_si128(hi));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out + c), m);
}

__attribute__((target("avx2,fma"))) void max_pool_avx2(const PoolProblem& p) {
  const WindowParams& w = p.params.window;
  const int channels = p.channels;
  const int64_t row_stride = static_cast<int64_t>(p.in_w) * channels;
  const __m256i lo = _mm256_set1_epi8(static_cast<int8_t>(p.params.act_min));
  const __m256i hi = _mm256_set1_epi8(static_cast<int8_t>(p.params.act_max));
  for (int oy = 0; oy < p.out_h; ++oy) {
    const Span ys = clipped_window(oy, w.stride_h, w.pad_top, p.params.kernel_h, p.in_h);
    for (int ox = 0; ox < p.out_w; ++ox) {
      const Span xs = clipped_window(ox, w.stride_w, w.pad_left, p.params.kernel_w, p.in_w);
      Window win{p.input, std::max(ys.end - ys.begin, 0), std::max(xs.end - xs.begin, 0),
                 row_stride, channels};
      if (win.rows > 0 && win.cols > 0) {  // an empty window reads nothing
        win.first = p.input + ys.begin * row_stride + static_cast<int64_t>(xs.begin) * channels;
      } else {
        win.rows = win.cols = 0;
      }
      int8_t* out = p.output + (static_cast<int64_t>(oy) * p.out_w + ox) * channels;
      if (channels >= 32) {
        int c = 0;
        for (; c + 32 <= channels; c += 32) max_block32(win, c, lo, hi, out);
        if (c < channels) max_block32(win, channels - 32, lo, hi, out);
      } else if (channels >= 16) {
        max_block16(win, 0, lo, hi, out);
        if (channels > 16) max_block16(win, channels - 16, lo, hi, out);
      } else if (channels >= 8) {
        max_block8(win, 0, lo, hi, out);
        if (channels > 8) max_block8(win, channels - 8, lo, hi, out);
      } else {
        for (int c = 0; c < channels; ++c) {
          int32_t m = -128;
          for (int r = 0; r < win.rows; ++r) {
            for (int k = 0; k < win.cols; ++k) {
              m = std::max<int32_t>(m, win.first[r * row_stride + k * channels + c]);
            }
          }
          out[c] = saturate_to_int8(m, p.params.act_min, p.params.act_max);
        }
      }
    }
  }
}

// The 2x2 window clipped to the input holds 1, 2 or 4 positions, so TFLite's
// rounded division is sign(sum) * ((|sum| + count/2) >> log2(count)).
struct AvgDivisor {
  __m128i shift;  // log2(count)
  __m256i half;   // count / 2 in every int16 lane
};

NACC_AVX2 void avg_block16(const Window& win, int c, const AvgDivisor& d, __m256i lo, __m256i hi,
                           int8_t* out) {
  __m256i sum = _mm256_setzero_si256();
  for (int r = 0; r < win.rows; ++r) {
    const int8_t* src = win.first + r * win.row_stride + c;
    for (int k = 0; k < win.cols; ++k) {
      sum = _mm256_add_epi16(
          sum, _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src))));
      src += win.pixel_stride;
    }
  }
  const __m256i magnitude =
      _mm256_srl_epi16(_mm256_add_epi16(_mm256_abs_epi16(sum), d.half), d.shift);
  __m256i avg = _mm256_min_epi16(_mm256_max_epi16(_mm256_sign_epi16(magnitude, sum), lo), hi);
  avg = _mm256_permute4x64_epi64(_mm256_packs_epi16(avg, avg), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + c), _mm256_castsi256_si128(avg));
}

NACC_AVX2 void avg_block8(const Window& win, int c, const AvgDivisor& d, __m256i lo, __m256i hi,
                          int8_t* out) {
  __m128i sum = _mm_setzero_si128();
  for (int r = 0; r < win.rows; ++r) {
    const int8_t* src = win.first + r * win.row_stride + c;
    for (int k = 0; k < win.cols; ++k) {
      sum = _mm_add_epi16(
          sum, _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src))));
      src += win.pixel_stride;
    }
  }
  const __m128i magnitude =
      _mm_srl_epi16(_mm_add_epi16(_mm_abs_epi16(sum), _mm256_castsi256_si128(d.half)), d.shift);
  __m128i avg = _mm_sign_epi16(magnitude, sum);
  avg = _mm_min_epi16(_mm_max_epi16(avg, _mm256_castsi256_si128(lo)), _mm256_castsi256_si128(hi));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out + c), _mm_packs_epi16(avg, avg));
}

__attribute__((target("avx2,fma"))) void avg_pool_avx2(const PoolProblem& p) {
  const WindowParams& w = p.params.window;
  const int channels = p.channels;
  const int64_t row_stride = static_cast<int64_t>(p.in_w) * channels;
  const __m256i lo = _mm256_set1_epi16(static_cast<int16_t>(p.params.act_min));
  const __m256i hi = _mm256_set1_epi16(static_cast<int16_t>(p.params.act_max));
  for (int oy = 0; oy < p.out_h; ++oy) {
    const Span ys = clipped_window(oy, w.stride_h, w.pad_top, p.params.kernel_h, p.in_h);
    for (int ox = 0; ox < p.out_w; ++ox) {
      const Span xs = clipped_window(ox, w.stride_w, w.pad_left, p.params.kernel_w, p.in_w);
      const Window win{p.input + ys.begin * row_stride + static_cast<int64_t>(xs.begin) * channels,
                       ys.end - ys.begin, xs.end - xs.begin, row_stride, channels};
      const int32_t count = win.rows * win.cols;  // 1, 2 or 4 (validated non-empty)
      const AvgDivisor d{_mm_cvtsi32_si128(count == 4 ? 2 : count - 1),
                         _mm256_set1_epi16(static_cast<int16_t>(count / 2))};
      int8_t* out = p.output + (static_cast<int64_t>(oy) * p.out_w + ox) * channels;
      if (channels >= 16) {
        int c = 0;
        for (; c + 16 <= channels; c += 16) avg_block16(win, c, d, lo, hi, out);
        if (c < channels) avg_block16(win, channels - 16, d, lo, hi, out);
      } else if (channels >= 8) {
        avg_block8(win, 0, d, lo, hi, out);
        if (channels > 8) avg_block8(win, channels - 8, d, lo, hi, out);
      } else {
        for (int c = 0; c < channels; ++c) {
          int32_t sum = 0;
          for (int r = 0; r < win.rows; ++r) {
            for (int k = 0; k < win.cols; ++k) sum += win.first[r * row_stride + k * channels + c];
          }
          out[c] = saturate_to_int8(rounded_average(sum, count), p.params.act_min,
                                    p.params.act_max);
        }
      }
    }
  }
}

// POOL_FP32's DequantizeLinear of 8 stored bytes: float(x - zx) * sx.
NACC_AVX2 __m256 dequant8(const int8_t* src, __m256i zx, __m256 sx) {
  const __m256i x = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src)));
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(x, zx)), sx);
}

// POOL_FP32, 8 channels at a time: the same float32 operations in the same
// order as float_average (no fused multiply-add: -ffp-contract=off).
__attribute__((target("avx2,fma"))) void avg_pool_float_avx2(const PoolProblem& p) {
  const WindowParams& w = p.params.window;
  const PoolParams& q = p.params;
  const int channels = p.channels;
  const int64_t row_stride = static_cast<int64_t>(p.in_w) * channels;
  const __m256i zx = _mm256_set1_epi32(q.input_zero_point - q.domain.offset());
  const __m256 sx = _mm256_set1_ps(q.input_scale), sy = _mm256_set1_ps(q.output_scale);
  const bool quantize = q.float_mode != PoolFloat::kQLinear;
  const bool columns = q.float_mode == PoolFloat::kQuantizeColumns;
  const int32_t add = quantize ? q.output_zero_point : 0;  // added after rounding
  const __m256 zy = _mm256_set1_ps(quantize ? 0.0f : static_cast<float>(q.output_zero_point));
  const __m256 lo = _mm256_set1_ps(static_cast<float>(q.domain.qmin() - add));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(q.domain.qmax() - add));
  const __m256i off = _mm256_set1_epi32(q.domain.offset() - add);
  const __m256i act_lo = _mm256_set1_epi32(q.act_min), act_hi = _mm256_set1_epi32(q.act_max);
  for (int oy = 0; oy < p.out_h; ++oy) {
    const Span ys = clipped_window(oy, w.stride_h, w.pad_top, q.kernel_h, p.in_h);
    for (int ox = 0; ox < p.out_w; ++ox) {
      const Span xs = clipped_window(ox, w.stride_w, w.pad_left, q.kernel_w, p.in_w);
      const __m256 count = _mm256_set1_ps(static_cast<float>((ys.end - ys.begin) * (xs.end - xs.begin)));
      int8_t* out = p.output + (static_cast<int64_t>(oy) * p.out_w + ox) * channels;
      int c = 0;
      for (; c + 8 <= channels; c += 8) {
        const int8_t* base = p.input + c;
        const auto at = [row_stride, channels](int iy, int ix) {
          return iy * row_stride + static_cast<int64_t>(ix) * channels;
        };
        __m256 sum = _mm256_setzero_ps();
        if (columns) {
          for (int ix = xs.begin; ix < xs.end; ++ix) {
            __m256 col = _mm256_setzero_ps();
            for (int iy = ys.begin; iy < ys.end; ++iy) {
              col = _mm256_add_ps(col, dequant8(base + at(iy, ix), zx, sx));
            }
            sum = _mm256_add_ps(sum, col);
          }
        } else {
          for (int iy = ys.begin; iy < ys.end; ++iy) {
            for (int ix = xs.begin; ix < xs.end; ++ix) {
              sum = _mm256_add_ps(sum, dequant8(base + at(iy, ix), zx, sx));
            }
          }
        }
        __m256 v = _mm256_add_ps(_mm256_div_ps(_mm256_div_ps(sum, count), sy), zy);
        v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
        __m256i r = _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        r = _mm256_min_epi32(_mm256_max_epi32(_mm256_sub_epi32(r, off), act_lo), act_hi);
        const __m128i w16 = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out + c), _mm_packs_epi16(w16, w16));
      }
      for (; c < channels; ++c) {
        out[c] = float_average(q, ys, xs, [&](int iy, int ix) -> int32_t {
          return p.input[iy * row_stride + static_cast<int64_t>(ix) * channels + c];
        });
      }
    }
  }
}

#undef NACC_AVX2

}  // namespace

void max_pool_s8(const PoolParams& params, const Shape4& input_shape, const int8_t* input,
                 const Shape4& output_shape, int8_t* output) {
  validate("max_pool_s8", params, input_shape, input, output_shape, output);
  const PoolProblem p{input_shape.h, input_shape.w, input_shape.c, output_shape.h, output_shape.w,
                      params, input, output};
  if (use_avx2()) {
    max_pool_avx2(p);
  } else {
    max_pool_reference(p);
  }
}

void avg_pool_s8(const PoolParams& params, const Shape4& input_shape, const int8_t* input,
                 const Shape4& output_shape, int8_t* output) {
  constexpr const char* kOp = "avg_pool_s8";
  detail::check_avg_pool_window(kOp, params.kernel_h, params.kernel_w, params.window,
                                params.float32);
  validate(kOp, params, input_shape, input, output_shape, output);
  // TFLite fails an average pool with a window entirely in the padding (no
  // divisor); window origins grow monotonically, so checking the first and
  // last window per axis covers all.
  const WindowParams& w = params.window;
  const Span first_y = clipped_window(0, w.stride_h, w.pad_top, params.kernel_h, input_shape.h);
  const Span last_y =
      clipped_window(output_shape.h - 1, w.stride_h, w.pad_top, params.kernel_h, input_shape.h);
  const Span first_x = clipped_window(0, w.stride_w, w.pad_left, params.kernel_w, input_shape.w);
  const Span last_x =
      clipped_window(output_shape.w - 1, w.stride_w, w.pad_left, params.kernel_w, input_shape.w);
  check_arg(first_y.end > first_y.begin && last_y.end > last_y.begin, kOp,
            ": padding top ", w.pad_top, " / bottom ", w.pad_bottom, " leaves an output row whose ",
            "window lies entirely in the padding (no input to average)");
  check_arg(first_x.end > first_x.begin && last_x.end > last_x.begin, kOp,
            ": padding left ", w.pad_left, " / right ", w.pad_right, " leaves an output column ",
            "whose window lies entirely in the padding (no input to average)");

  const PoolProblem p{input_shape.h, input_shape.w, input_shape.c, output_shape.h, output_shape.w,
                      params, input, output};
  if (params.float32) {
    validate_pool_float(params);
    if (use_avx2() && cpu_features().fma) {
      avg_pool_float_avx2(p);
    } else {
      avg_pool_float_reference(p);
    }
  } else if (use_avx2()) {
    avg_pool_avx2(p);
  } else {
    avg_pool_reference(p);
  }
}

}  // namespace nacc

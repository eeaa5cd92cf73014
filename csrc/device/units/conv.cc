// The MAC unit's 2-D convolution mode (NACC_SPEC §1-§2), bit-exact to TFLite's
// reference_integer_ops::ConvPerChannel: a plain reference loop, and an AVX2
// path that runs the convolution as an int8 GEMM over im2col rows
// (x - input_zero_point sign-extended to int16, padding 0).
// (Depthwise convolution is in depthwise.cc.)
#include "device/units/conv.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "arch/fixed_point.h"
#include "arch/unit_checks.h"
#include "common/cpu.h"
#include "common/error.h"
#include "device/units/gemm_s8.h"
#include "device/units/prepared.h"

namespace nacc {

namespace {

constexpr const char* kOp = "conv2d_s8";

// The GEMM view of one convolution: rows are output pixels (M = OH * OW), the
// reduction runs over a filter window in [KH][KW][C_in] order (K), columns are
// output channels (N = C_out).
struct ConvGeometry {
  int in_h, in_w, in_c;
  int kernel_h, kernel_w;
  int out_h, out_w, out_c;
  WindowParams window;
  int k() const { return kernel_h * kernel_w * in_c; }
};

void validate(const WindowParams& window, int32_t input_zero_point, const OutputStage& out_stage,
              const Shape4& input_shape, const int8_t* input, const Shape4& filter_shape,
              const int8_t* filter, const Shape4& output_shape, int8_t* output) {
  detail::check_not_null(kOp, "input", input);
  detail::check_not_null(kOp, "filter", filter);
  detail::check_not_null(kOp, "output", output);
  detail::check_feature_map(kOp, "input", input_shape);
  detail::check_feature_map_extent(kOp, "output", "channels", filter_shape.n);
  if (!(filter_shape.c == input_shape.c))
      check_arg(false, kOp, ": filter ", filter_shape.str(), " has ",
            filter_shape.c, " input channels, input ", input_shape.str(), " has ", input_shape.c);
  detail::check_window(kOp, window, filter_shape.h, filter_shape.w);
  detail::check_zero_point(kOp, "input_zero_point", input_zero_point,
                           "NACC_FM_OFFSET.IN_FM_OFFSET");
  detail::check_output_stage(kOp, out_stage, filter_shape.n);
  const Shape4 expected = detail::window_output_shape(kOp, input_shape, filter_shape.h,
                                                      filter_shape.w, window, filter_shape.n);
  if (!(int64_t{expected.h} * expected.w <= 0x7fffffff))
      check_arg(false, kOp, ": output ", expected.str(),
            " has more than 2^31 - 1 pixels");
  if (!(output_shape == expected)) check_arg(false, kOp, ": output shape ", output_shape.str(),
            " does not match input ", input_shape.str(), ", filter ", filter_shape.str(),
            ", stride ", window.stride_h, "x", window.stride_w, " and padding (", window.pad_top,
            ",", window.pad_bottom, ",", window.pad_left, ",", window.pad_right, "): expected ",
            expected.str());
}

// Reference: TFLite ConvPerChannel, loop for loop. Padded positions are
// skipped (they would contribute (zp - zp) * w = 0). The int64 sum wraps to
// int32 at the end, equal to TFLite's int32 accumulator modulo 2^32.
void conv_reference(const ConvGeometry& g, int32_t input_zero_point, const OutputStage& os,
                    const int8_t* input, const int8_t* filter, const int32_t* bias,
                    int8_t* output) {
  for (int oy = 0; oy < g.out_h; ++oy) {
    const int iy0 = oy * g.window.stride_h - g.window.pad_top;
    for (int ox = 0; ox < g.out_w; ++ox) {
      const int ix0 = ox * g.window.stride_w - g.window.pad_left;
      for (int oc = 0; oc < g.out_c; ++oc) {
        int64_t acc = 0;
        for (int ky = 0; ky < g.kernel_h; ++ky) {
          const int iy = iy0 + ky;
          if (iy < 0 || iy >= g.in_h) continue;
          for (int kx = 0; kx < g.kernel_w; ++kx) {
            const int ix = ix0 + kx;
            if (ix < 0 || ix >= g.in_w) continue;
            const int8_t* x = input + (static_cast<int64_t>(iy) * g.in_w + ix) * g.in_c;
            const int8_t* w =
                filter + ((static_cast<int64_t>(oc) * g.kernel_h + ky) * g.kernel_w + kx) * g.in_c;
            for (int ic = 0; ic < g.in_c; ++ic) {
              acc += int64_t{w[ic]} * (int64_t{x[ic]} - input_zero_point);
            }
          }
        }
        if (bias != nullptr) acc += bias[oc];
        const int32_t acc32 = static_cast<int32_t>(static_cast<uint32_t>(acc));
        output[(static_cast<int64_t>(oy) * g.out_w + ox) * g.out_c + oc] =
            requantize_output(os, oc, acc32);
      }
    }
  }
}

// im2col: output pixels [m0, m0 + rows) as rows of the K values over the
// filter window ([KH][KW][C_in] order), row r at panel + r * kp, columns
// [K, kp) 0. `convert(src, count, dst)` turns input bytes into panel elements;
// a padded position holds `pad`, the element of the input zero point. Two
// forms: int16 x - input_zero_point (gemm_s8_avx2: pad 0) and unsigned bytes
// x + 128 (gemm_s8_vnni: pad input_zero_point + 128).
template <typename T, typename Convert>
void im2col_rows(const ConvGeometry& g, const int8_t* input, T pad, int kp, int m0, int rows,
                 T* panel, Convert convert) {
  const int segment = g.kernel_w * g.in_c;  // one filter row of the window
  const WindowParams& w = g.window;
  if (g.kernel_h == 1 && g.kernel_w == 1 && w.stride_h == 1 && w.stride_w == 1 &&
      w.pad_top == 0 && w.pad_bottom == 0 && w.pad_left == 0 && w.pad_right == 0 && kp == g.k()) {
    // Pointwise: the rows are consecutive input pixels, one contiguous block.
    convert(input + static_cast<int64_t>(m0) * g.in_c, rows * g.in_c, panel);
    return;
  }
  for (int r = 0; r < rows; ++r) {
    const int m = m0 + r;
    const int oy = m / g.out_w;
    const int ox = m % g.out_w;
    const int iy0 = oy * g.window.stride_h - g.window.pad_top;
    const int ix0 = ox * g.window.stride_w - g.window.pad_left;
    // Filter columns [kx_lo, kx_hi) fall inside the image, contiguous in memory.
    const int kx_lo = std::max(0, -ix0);
    const int kx_hi = std::min(g.kernel_w, g.in_w - ix0);
    T* dst = panel + static_cast<std::ptrdiff_t>(r) * kp;
    for (int ky = 0; ky < g.kernel_h; ++ky) {
      T* d = dst + ky * segment;
      const int iy = iy0 + ky;
      if (iy < 0 || iy >= g.in_h || kx_hi <= kx_lo) {
        std::fill_n(d, segment, pad);
        continue;
      }
      std::fill_n(d, kx_lo * g.in_c, pad);
      convert(input + (static_cast<int64_t>(iy) * g.in_w + ix0 + kx_lo) * g.in_c,
              (kx_hi - kx_lo) * g.in_c, d + kx_lo * g.in_c);
      std::fill_n(d + kx_hi * g.in_c, (g.kernel_w - kx_hi) * g.in_c, pad);
    }
    std::fill(dst + g.k(), dst + kp, T{0});
  }
}

// im2col_rows in the unsigned-byte form of gemm_s8_vnni with AVX-512, for
// windows whose filter rows are at most 64 bytes (kernel_w * C_in <= 64: the
// first convolution of an image network, 3x3 over 3 channels, has 9): each
// filter row is one masked load, xor and store, the padding one masked store
// of pad before it, and the row's position advances without a division.
__attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni"))) void
im2col_rows_u8_avx512(const ConvGeometry& g, const int8_t* input, uint8_t pad, int k4, int m0,
                      int rows, uint8_t* panel) {
  const int segment = g.kernel_w * g.in_c;  // <= 64
  const WindowParams& w = g.window;
  const __m512i sign = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i pad_bytes = _mm512_set1_epi8(static_cast<char>(pad));
  auto first = [](int n) { return n <= 0 ? __mmask64{0} : (~__mmask64{0}) >> (64 - n); };
  const __mmask64 whole = first(segment);
  // Rows with every filter row inside the image, when a filter row fits 16
  // bytes and a 16-byte store at the last filter row covers the K tail:
  // unmasked 16-byte stores in order, each overwriting the previous one's
  // excess, zeros past the filter row (the masked load zero-fills and
  // `sign16` flips only the filter row's bytes). The last store reaches up to
  // `over` bytes into the next row, which is written after it; the call's
  // last row takes the masked form below.
  const int last_store = (g.kernel_h - 1) * segment;
  const bool short16 = segment <= 16 && last_store + 16 >= k4 && last_store + 16 - k4 <= k4;
  const __mmask16 seg16 = static_cast<__mmask16>(first(std::min(segment, 16)));
  const __m128i sign16 = _mm_maskz_mov_epi8(seg16, _mm_set1_epi8(static_cast<char>(0x80)));
  const int64_t row_bytes = static_cast<int64_t>(g.in_w) * g.in_c;
  int oy = m0 / g.out_w, ox = m0 % g.out_w;
  for (int r = 0; r < rows; ++r) {
    const int iy0 = oy * w.stride_h - w.pad_top;
    const int ix0 = ox * w.stride_w - w.pad_left;
    const int kx_lo = std::max(0, -ix0);
    const int kx_hi = std::min(g.kernel_w, g.in_w - ix0);
    const bool padded_columns = kx_lo > 0 || kx_hi < g.kernel_w;
    uint8_t* dst = panel + static_cast<std::ptrdiff_t>(r) * k4;
    if (short16 && !padded_columns && iy0 >= 0 && iy0 + g.kernel_h <= g.in_h && r + 1 < rows) {
      const int8_t* src = input + (static_cast<int64_t>(iy0) * g.in_w + ix0) * g.in_c;
      for (int ky = 0; ky < g.kernel_h; ++ky) {
        const __m128i v = _mm_maskz_loadu_epi8(seg16, src + ky * row_bytes);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + ky * segment), _mm_xor_si128(v, sign16));
      }
      if (++ox == g.out_w) {
        ox = 0;
        ++oy;
      }
      continue;
    }
    const __mmask64 inside = first((kx_hi - kx_lo) * g.in_c);
    for (int ky = 0; ky < g.kernel_h; ++ky) {
      uint8_t* d = dst + ky * segment;
      const int iy = iy0 + ky;
      if (iy < 0 || iy >= g.in_h || kx_hi <= kx_lo) {
        _mm512_mask_storeu_epi8(d, whole, pad_bytes);
        continue;
      }
      if (padded_columns) _mm512_mask_storeu_epi8(d, whole, pad_bytes);
      const int8_t* src = input + (static_cast<int64_t>(iy) * g.in_w + ix0 + kx_lo) * g.in_c;
      _mm512_mask_storeu_epi8(d + kx_lo * g.in_c, inside,
                              _mm512_xor_si512(_mm512_maskz_loadu_epi8(inside, src), sign));
    }
    for (int i = g.k(); i < k4; ++i) dst[i] = 0;
    if (++ox == g.out_w) {
      ox = 0;
      ++oy;
    }
  }
}

// AVX2: one GEMM of the im2col rows (x - input_zero_point) with the filter,
// bias added in the epilogue.
void conv_avx2(const ConvGeometry& g, int32_t input_zero_point, const OutputStage& os,
               const int8_t* input, const detail::PackedB& packed, const int32_t* bias,
               int8_t* output) {
  const int kp = packed.kp();
  detail::gemm_s8_avx2(
      g.out_h * g.out_w, packed,
      [&](int m0, int rows, int16_t* panel) {
        im2col_rows<int16_t>(g, input, 0, kp, m0, rows, panel,
                             [&](const int8_t* src, int count, int16_t* dst) {
                               detail::widen_s8_avx2(src, count, input_zero_point, dst);
                             });
      },
      bias, os, output, g.out_c);
}

// VNNI: the same GEMM on vpdpbusd (gemm_s8_vnni).
void conv_vnni(const ConvGeometry& g, int32_t input_zero_point, const OutputStage& os,
               const int8_t* input, const detail::PackedB4& packed, const int32_t* bias,
               int8_t* output) {
  const int k4 = packed.k4();
  const bool pointwise = g.kernel_h == 1 && g.kernel_w == 1 && k4 == g.k();
  const bool short_rows = !pointwise && g.kernel_w * g.in_c <= 64 && use_avx512_vnni();
  detail::gemm_s8_vnni(
      g.out_h * g.out_w, packed,
      [&](int m0, int rows, uint8_t* panel) {
        if (short_rows) {
          im2col_rows_u8_avx512(g, input, static_cast<uint8_t>(input_zero_point + 128), k4, m0,
                                rows, panel);
          return;
        }
        im2col_rows<uint8_t>(g, input, static_cast<uint8_t>(input_zero_point + 128), k4, m0, rows,
                             panel, detail::flip_s8_to_u8);
      },
      input_zero_point, bias, os, output, g.out_c);
}

}  // namespace

std::shared_ptr<const PreparedWeights> prepare_conv2d_s8(const Shape4& filter_shape,
                                                         const int8_t* filter) {
  if (!cpu_has_avx2()) return nullptr;
  const int k = filter_shape.h * filter_shape.w * filter_shape.c;
  return std::make_shared<detail::PackedFilter>(filter, filter_shape.n, k);
}

void conv2d_s8(const WindowParams& window, int32_t input_zero_point, const OutputStage& out_stage,
               const Shape4& input_shape, const int8_t* input, const Shape4& filter_shape,
               const int8_t* filter, const int32_t* bias, const Shape4& output_shape,
               int8_t* output, const PreparedWeights* prepared) {
  validate(window, input_zero_point, out_stage, input_shape, input, filter_shape, filter,
           output_shape, output);
  const ConvGeometry g{input_shape.h,   input_shape.w,  input_shape.c,  filter_shape.h,
                       filter_shape.w,  output_shape.h, output_shape.w, output_shape.c,
                       window};
  if (detail::use_vnni()) {
    const auto* ready = dynamic_cast<const detail::PackedFilter*>(prepared);
    if (ready) {
      conv_vnni(g, input_zero_point, out_stage, input, ready->vnni(), bias, output);
    } else {
      const detail::PackedB4 packed(filter, g.out_c, g.k(), g.k(), 1);
      conv_vnni(g, input_zero_point, out_stage, input, packed, bias, output);
    }
  } else if (use_avx2()) {
    const auto* ready = dynamic_cast<const detail::PackedFilter*>(prepared);
    if (ready) {
      conv_avx2(g, input_zero_point, out_stage, input, ready->int16(), bias, output);
    } else {
      const detail::PackedB packed(filter, g.out_c, g.k(), g.k(), 1);
      conv_avx2(g, input_zero_point, out_stage, input, packed, bias, output);
    }
  } else {
    conv_reference(g, input_zero_point, out_stage, input, filter, bias, output);
  }
}

}  // namespace nacc

// The 16-bit feature-map units besides the convolutions (device/units/fm16.h).
#include "device/units/fm16.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "arch/fixed_point.h"
#include "arch/limits.h"
#include "arch/unit_checks.h"
#include "common/error.h"

namespace nacc {

namespace {

void check_clamp16(const char* op, int32_t lo, int32_t hi) {
  check_arg(lo >= -32768 && hi <= 32767 && lo <= hi, op, ": clamp [", lo, ", ", hi,
            "] must lie in int16");
}

int16_t clamp16(int32_t v, int32_t lo, int32_t hi) {
  return static_cast<int16_t>(v < lo ? lo : v > hi ? hi : v);
}

// In-bounds window of output (oy, ox): [y0, y1) x [x0, x1).
struct Window {
  int y0, y1, x0, x1;
};
Window window_at(const PoolParams& p, const Shape4& is, int oy, int ox) {
  const int ys = oy * p.window.stride_h - p.window.pad_top;
  const int xs = ox * p.window.stride_w - p.window.pad_left;
  return {std::max(ys, 0), std::min(ys + p.kernel_h, is.h), std::max(xs, 0),
          std::min(xs + p.kernel_w, is.w)};
}

void check_pool(const char* op, const PoolParams& p, const Shape4& is, const Shape4& os) {
  if (!(is.n == 1 && os.n == 1 && is.c == os.c && p.kernel_h >= 1 && p.kernel_w >= 1 &&
                p.window.stride_h >= 1 && p.window.stride_w >= 1)) check_arg(false,
            op, ": shapes input ", is.str(), ", output ", os.str(), " do not match");
  check_clamp16(op, p.act_min, p.act_max);
  check_arg(!p.float32, op, ": POOL_FP32 takes 8-bit maps");
}

// The two operands of a 16-bit element-wise command broadcast to the output
// (one image; each of H, W, C equal to the output's or 1).
void check_broadcast(const char* op, const Shape4& s1, const Shape4& s2, const Shape4& so) {
  const auto dims_ok = [&](const Shape4& s) {
    return s.n == 1 && (s.h == so.h || s.h == 1) && (s.w == so.w || s.w == 1) &&
           (s.c == so.c || s.c == 1);
  };
  if (!(so.n == 1 && dims_ok(s1) && dims_ok(s2))) {
    check_arg(false, op, ": shapes ", s1.str(), " and ", s2.str(), " do not broadcast to ",
              so.str());
  }
}

// The element of an operand of shape s that output element (h, w, c) reads.
int64_t broadcast_index(const Shape4& s, int h, int w, int c) {
  return (int64_t(s.h == 1 ? 0 : h) * s.w + (s.w == 1 ? 0 : w)) * s.c + (s.c == 1 ? 0 : c);
}

}  // namespace

void fully_connected_s16x8(const OutputStage& stage, int rows, int k, int n, const int16_t* input,
                           const int8_t* weights, const int64_t* bias, int16_t* output) {
  constexpr const char* kOp = "fully_connected_s16x8";
  check_arg(rows >= 0 && k >= 1 && n >= 1, kOp, ": rows ", rows, ", K ", k, ", N ", n);
  check_arg(stage.kind == OutputStageKind::kRealScale && stage.real_scale, kOp,
            ": needs the real-scale output stage (QUANT_REAL_SCALE)");
  check_clamp16(kOp, stage.act_min, stage.act_max);
  const int64_t bias_limit = int64_t{1} << (limits::kBias16Bits - 1);
  const int64_t acc_limit = int64_t{1} << (limits::kAcc16Bits - 1);
  for (int c = 0; c < n; ++c) {
    check_arg(std::isfinite(stage.real_scale[c]) && stage.real_scale[c] >= 0, kOp, ": scale[", c,
              "] = ", stage.real_scale[c], " must be finite and >= 0");
    if (bias) {
      check_arg(bias[c] > -bias_limit && bias[c] < bias_limit, kOp, ": bias[", c, "] = ", bias[c],
                " does not fit ", limits::kBias16Bits, " bits (NACC_SPEC §9)");
    }
  }
  for (int r = 0; r < rows; ++r) {
    const int16_t* x = input + int64_t(r) * k;
    for (int c = 0; c < n; ++c) {
      const int8_t* w = weights + int64_t(c) * k;
      int64_t acc = 0;
      for (int i = 0; i < k; ++i) acc += int64_t(x[i]) * int64_t(w[i]);
      if (bias) acc += bias[c];
      check_arg(acc > -acc_limit && acc < acc_limit, kOp, ": row ", r, " output ", c,
                ": accumulator ", acc, " leaves ", limits::kAcc16Bits, " bits");
      const double v = std::round(static_cast<double>(acc) * stage.real_scale[c]);
      const int32_t q = v >= -2147483648.0 && v < 2147483648.0
                            ? static_cast<int32_t>(v)
                            : std::numeric_limits<int32_t>::min();
      output[int64_t(r) * n + c] =
          clamp16(wrapping_add(q, stage.output_zero_point), stage.act_min, stage.act_max);
    }
  }
}

void max_pool_s16(const PoolParams& p, const Shape4& is, const int16_t* in, const Shape4& os,
                  int16_t* out) {
  check_pool("max_pool_s16", p, is, os);
  for (int oy = 0; oy < os.h; ++oy) {
    for (int ox = 0; ox < os.w; ++ox) {
      const Window w = window_at(p, is, oy, ox);
      check_arg(w.y0 < w.y1 && w.x0 < w.x1, "max_pool_s16: output (", oy, ", ", ox,
                ") has no input cell in its window");
      for (int c = 0; c < os.c; ++c) {
        int32_t m = std::numeric_limits<int32_t>::min();
        for (int y = w.y0; y < w.y1; ++y) {
          for (int x = w.x0; x < w.x1; ++x) m = std::max<int32_t>(m, in[(int64_t(y) * is.w + x) * is.c + c]);
        }
        out[(int64_t(oy) * os.w + ox) * os.c + c] = clamp16(m, p.act_min, p.act_max);
      }
    }
  }
}

void avg_pool_s16(const PoolParams& p, const Shape4& is, const int16_t* in, const Shape4& os,
                  int16_t* out) {
  check_pool("avg_pool_s16", p, is, os);
  check_arg(p.kernel_h == limits::kAvgPoolKernel && p.kernel_w == limits::kAvgPoolKernel &&
                p.window.stride_h == limits::kAvgPoolStride &&
                p.window.stride_w == limits::kAvgPoolStride,
            "avg_pool_s16: the pooling unit averages ", limits::kAvgPoolKernel, "x",
            limits::kAvgPoolKernel, " windows of stride ", limits::kAvgPoolStride);
  for (int oy = 0; oy < os.h; ++oy) {
    for (int ox = 0; ox < os.w; ++ox) {
      const Window w = window_at(p, is, oy, ox);
      const int count = (w.y1 - w.y0) * (w.x1 - w.x0);
      check_arg(w.y0 < w.y1 && w.x0 < w.x1, "avg_pool_s16: output (", oy, ", ", ox,
                ") has no input cell in its window");
      for (int c = 0; c < os.c; ++c) {
        int32_t acc = 0;
        for (int y = w.y0; y < w.y1; ++y) {
          for (int x = w.x0; x < w.x1; ++x) acc += in[(int64_t(y) * is.w + x) * is.c + c];
        }
        acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
        out[(int64_t(oy) * os.w + ox) * os.c + c] = clamp16(acc, p.act_min, p.act_max);
      }
    }
  }
}

void elementwise_s16(const ElementwiseParams& p, const Shape4& s1, const int16_t* in1,
                     const Shape4& s2, const int16_t* in2, const Shape4& so, int16_t* out) {
  constexpr const char* kOp = "elementwise_s16";
  check_arg(p.mode == ElementwiseMode::ADD || p.mode == ElementwiseMode::SUB ||
                p.mode == ElementwiseMode::MUL,
            kOp, ": 16-bit outputs come from ADD, SUB and MUL (MUL_S16_S8 writes int8: "
            "elementwise_mul_s16_s8)");
  check_arg(p.float_mode == ElementwiseFloat::kOff, kOp, ": ELEMENT_FP32 takes 8-bit maps");
  check_arg(p.input1_offset == 0 && p.input2_offset == 0 && p.output_zero_point == 0, kOp,
            ": int16 maps have zero offsets");
  check_arg(p.left_shift >= 0 && p.left_shift <= limits::kMaxElementwiseLeftShift, kOp,
            ": left shift ", p.left_shift);
  const bool mul = p.mode == ElementwiseMode::MUL;
  // MUL: no left shift of the int32 product (|a b| <= 2^30 could overflow).
  check_arg(mul || (p.input1_shift <= 0 && p.input1_shift >= -31 && p.input2_shift <= 0 &&
                p.input2_shift >= -31),
            kOp, ": input shifts must be in [-31, 0]");
  check_arg(p.output_shift <= 0 && p.output_shift >= -31 &&
                p.input1_multiplier >= 0 && p.input2_multiplier >= 0 && p.output_multiplier >= 0,
            kOp, ": multipliers must be in [0, 2^31) with shifts in [-31, 0]");
  check_clamp16(kOp, p.act_min, p.act_max);
  check_broadcast(kOp, s1, s2, so);
  const auto scale = [&](int32_t x, int32_t m, int sh) {
    return multiply_by_quantized_multiplier_smaller_than_one(wrapping_shift_left(x, p.left_shift),
                                                             m, sh);
  };
  int64_t o = 0;
  for (int h = 0; h < so.h; ++h) {
    for (int w = 0; w < so.w; ++w) {
      for (int c = 0; c < so.c; ++c) {
        if (mul) {  // 16x8 MUL: the 32-bit MBQM of the int32 product (|a b| <= 2^30)
          const int32_t prod =
              int32_t(in1[broadcast_index(s1, h, w, c)]) * in2[broadcast_index(s2, h, w, c)];
          out[o++] = clamp16(multiply_by_quantized_multiplier(prod, p.output_multiplier,
                                                              p.output_shift),
                             p.act_min, p.act_max);
          continue;
        }
        const int32_t a =
            scale(in1[broadcast_index(s1, h, w, c)], p.input1_multiplier, p.input1_shift);
        const int32_t b =
            scale(in2[broadcast_index(s2, h, w, c)], p.input2_multiplier, p.input2_shift);
        const int32_t raw = p.mode == ElementwiseMode::SUB ? a - b : a + b;
        const int32_t v =
            multiply_by_quantized_multiplier_smaller_than_one(raw, p.output_multiplier, p.output_shift);
        out[o++] = clamp16(v, p.act_min, p.act_max);
      }
    }
  }
}

void elementwise_mul_s16_s8(const ElementwiseParams& p, const Shape4& s1, const int16_t* in1,
                            const Shape4& s2, const int16_t* in2, const Shape4& so, int8_t* out) {
  constexpr const char* kOp = "elementwise_mul_s16_s8";
  validate_mul_s16_s8_params(p);
  check_broadcast(kOp, s1, s2, so);
  int64_t o = 0;
  for (int h = 0; h < so.h; ++h) {
    for (int w = 0; w < so.w; ++w) {
      for (int c = 0; c < so.c; ++c) {
        // |x + offset| <= 33024, so the product fits int32 (< 2^31).
        const int32_t a = int32_t(in1[broadcast_index(s1, h, w, c)]) + p.input1_offset;
        const int32_t b = int32_t(in2[broadcast_index(s2, h, w, c)]) + p.input2_offset;
        const int32_t v = wrapping_add(
            multiply_by_quantized_multiplier(a * b, p.output_multiplier, p.output_shift),
            p.output_zero_point);
        out[o++] = static_cast<int8_t>(v < p.act_min ? p.act_min : v > p.act_max ? p.act_max : v);
      }
    }
  }
}

// sigmoid(i / 24) in 0.16 fixed point for i in [0, 255] (entry 255 saturated),
// the table TFLite's int16 LOGISTIC / TANH interpolate. The entries are not
// round(65536 sigmoid(i / 24)) (44 of them differ by one from that), so they
// are data, read out of TFLite 2.21's BUILTIN_REF (TANH at input scale 1/6144
// gives table[i] - 32768 at x = 128 i); tests/test_int16_delegate.py
// test_sigmoid_tanh_16x8_every_input checks every entry against it.
const uint16_t sigmoid_table16[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149,
    40794, 41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369,
    47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169,
    53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
    60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302,
    62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786,
    64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
    65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258,
    65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
    65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522,
    65523, 65523, 65524, 65524, 65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528,
    65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530, 65530, 65531, 65531,
    65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535,
};

void sigmoid_tanh_s16(bool tanh, int32_t multiplier, int32_t shift, int64_t size,
                      const int16_t* in, int16_t* out) {
  const char* kOp = tanh ? "tanh_s16" : "sigmoid_s16";
  check_arg(multiplier >= 1 && multiplier <= 65535 && shift >= 0 && shift <= 31, kOp,
            ": input multiplier ", multiplier, " must be in [1, 65535] and shift ", shift,
            " in [0, 31] (QUANT_MUL / QUANT_SHIFT entry 0)");
  check_arg(size >= 0, kOp, ": size ", size, " must be >= 0");
  if (size == 0) return;
  check_arg(in != nullptr && out != nullptr, kOp, ": null buffer");
  const int32_t round = shift > 0 ? int32_t(1) << (shift - 1) : 0;
  const int frac = tanh ? 8 : 9;  // fraction bits of the table index
  const uint32_t frac_mask = (uint32_t(1) << frac) - 1;
  for (int64_t i = 0; i < size; ++i) {
    // |x * multiplier| < 2^31: the int32 arithmetic of the reference.
    const int32_t v = int32_t((int64_t(in[i]) * multiplier + round) >> shift);
    const uint32_t a = uint32_t(v < 0 ? -int64_t(v) : int64_t(v));
    const uint32_t uh = a >> frac;
    int64_t r;
    if (uh >= 255) {
      r = tanh ? int64_t(0xFFFF) << 8 : int64_t(0x7FFF) << 10;
    } else {
      const int64_t ua = sigmoid_table16[uh], ub = sigmoid_table16[uh + 1];
      r = (ua << frac) + int64_t(a & frac_mask) * (ub - ua);
    }
    if (tanh) {
      r = v >= 0 ? r - (int64_t(1) << 23) + (1 << 7) : -r + (int64_t(1) << 23) + (1 << 7) - 1;
      out[i] = int16_t(r >> 8);
    } else {
      r = v >= 0 ? r + (1 << 9) : (int64_t(1) << 25) - r + (1 << 9) - 1;
      out[i] = int16_t(r >> 10);
    }
  }
}

}  // namespace nacc

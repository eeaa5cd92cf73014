// The 16-bit feature-map units besides the convolutions (device/units/fm16.h).
#include "device/units/fm16.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "arch/fixed_point.h"
#include "arch/limits.h"
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
  check_arg(is.n == 1 && os.n == 1 && is.c == os.c && p.kernel_h >= 1 && p.kernel_w >= 1 &&
                p.window.stride_h >= 1 && p.window.stride_w >= 1,
            op, ": shapes input ", is.str(), ", output ", os.str(), " do not match");
  check_clamp16(op, p.act_min, p.act_max);
  check_arg(!p.float32, op, ": POOL_FP32 takes 8-bit maps");
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
  check_arg(p.mode == ElementwiseMode::ADD || p.mode == ElementwiseMode::SUB, kOp,
            ": 16-bit maps take ADD and SUB (MUL is mul_s16_s8, not modelled)");
  check_arg(p.float_mode == ElementwiseFloat::kOff, kOp, ": ELEMENT_FP32 takes 8-bit maps");
  check_arg(p.input1_offset == 0 && p.input2_offset == 0 && p.output_zero_point == 0, kOp,
            ": int16 maps have zero offsets");
  check_arg(p.left_shift >= 0 && p.left_shift <= limits::kMaxElementwiseLeftShift, kOp,
            ": left shift ", p.left_shift);
  check_arg(p.input1_shift <= 0 && p.input1_shift >= -31 && p.input2_shift <= 0 &&
                p.input2_shift >= -31 && p.output_shift <= 0 && p.output_shift >= -31 &&
                p.input1_multiplier >= 0 && p.input2_multiplier >= 0 && p.output_multiplier >= 0,
            kOp, ": multipliers must be in [0, 2^31) with shifts in [-31, 0]");
  check_clamp16(kOp, p.act_min, p.act_max);
  const auto dims_ok = [&](const Shape4& s) {
    return s.n == 1 && (s.h == so.h || s.h == 1) && (s.w == so.w || s.w == 1) &&
           (s.c == so.c || s.c == 1);
  };
  check_arg(so.n == 1 && dims_ok(s1) && dims_ok(s2), kOp, ": shapes ", s1.str(), " and ",
            s2.str(), " do not broadcast to ", so.str());
  const auto index = [](const Shape4& s, int h, int w, int c) {
    return (int64_t(s.h == 1 ? 0 : h) * s.w + (s.w == 1 ? 0 : w)) * s.c + (s.c == 1 ? 0 : c);
  };
  const auto scale = [&](int32_t x, int32_t m, int sh) {
    return multiply_by_quantized_multiplier_smaller_than_one(wrapping_shift_left(x, p.left_shift),
                                                             m, sh);
  };
  int64_t o = 0;
  for (int h = 0; h < so.h; ++h) {
    for (int w = 0; w < so.w; ++w) {
      for (int c = 0; c < so.c; ++c) {
        const int32_t a = scale(in1[index(s1, h, w, c)], p.input1_multiplier, p.input1_shift);
        const int32_t b = scale(in2[index(s2, h, w, c)], p.input2_multiplier, p.input2_shift);
        const int32_t raw = p.mode == ElementwiseMode::SUB ? a - b : a + b;
        const int32_t v =
            multiply_by_quantized_multiplier_smaller_than_one(raw, p.output_multiplier, p.output_shift);
        out[o++] = clamp16(v, p.act_min, p.act_max);
      }
    }
  }
}

}  // namespace nacc

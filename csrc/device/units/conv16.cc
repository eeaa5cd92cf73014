// The 16x8 convolution: a plain reference loop (device/units/conv16.h).
#include "device/units/conv16.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "arch/limits.h"
#include "common/error.h"

namespace nacc {

namespace {

// The checks both units share: the output stage and the bias of `channels`.
void check_stage(const char* op, const OutputStage& stage, const int64_t* bias, int channels,
                 bool mul32_allowed = false) {
  check_arg((stage.kind == OutputStageKind::kFixedPoint16x8 ||
             (mul32_allowed && stage.kind == OutputStageKind::kFixedPoint)) &&
                stage.multiplier && stage.shift,
            op, ": needs the 16x8 fixed-point output stage (QUANT_MUL / QUANT_SHIFT arrays)",
            mul32_allowed ? " or the 32-bit one (QUANT_MUL32)" : "");
  const bool mul32 = stage.kind == OutputStageKind::kFixedPoint;
  check_arg(stage.act_min >= -32768 && stage.act_max <= 32767 && stage.act_min <= stage.act_max,
            op, ": clamp [", stage.act_min, ", ", stage.act_max, "] must lie in int16");
  const int64_t bias_limit = int64_t{1} << (limits::kBias16Bits - 1);
  for (int c = 0; c < channels; ++c) {
    check_arg(stage.multiplier[c] >= 0, op, ": multiplier[", c, "] = ", stage.multiplier[c],
              " must be in [0, 2^31)");
    const int max_shift = mul32 ? 31 : 7;
    check_arg(stage.shift[c] >= -31 && stage.shift[c] <= max_shift, op, ": shift[", c, "] = ",
              stage.shift[c], " must be in [-31, ", max_shift, "] (the ",
              mul32 ? "32-bit" : "16x8", " output stage)");
    if (bias) {
      check_arg(bias[c] > -bias_limit && bias[c] < bias_limit, op, ": bias[", c, "] = ",
                bias[c], " does not fit ", limits::kBias16Bits, " bits (NACC_SPEC §9)");
    }
  }
}

void check_acc(const char* op, int64_t acc, int oy, int ox, int c) {
  const int64_t acc_limit = int64_t{1} << (limits::kAcc16Bits - 1);
  check_arg(acc > -acc_limit && acc < acc_limit, op, ": output (", oy, ", ", ox, ") channel ", c,
            ": accumulator ", acc, " leaves ", limits::kAcc16Bits, " bits");
}

// The 32-bit fixed-point stage on a 16-bit depthwise pass (QUANT_MUL32):
// TFLite's MultiplyByQuantizedMultiplier of the int32 accumulator, clamped
// within int16 (an accumulator beyond int32 is an error, as one beyond 48
// bits is for the 16x8 stage).
int16_t requantize_mul32(const char* op, const OutputStage& stage, int c, int64_t acc, int oy,
                         int ox) {
  check_arg(acc >= INT32_MIN && acc <= INT32_MAX, op, ": output (", oy, ", ", ox, ") channel ",
            c, ": accumulator ", acc, " leaves int32 (NACC_ACT_PARA.QUANT_MUL32)");
  const int32_t v = wrapping_add(
      multiply_by_quantized_multiplier(int32_t(acc), stage.multiplier[c], stage.shift[c]),
      stage.output_zero_point);
  return static_cast<int16_t>(v < stage.act_min ? stage.act_min
                              : v > stage.act_max ? stage.act_max
                                                  : v);
}

}  // namespace

void depthwise_conv2d_s16x8(const WindowParams& window, int m, const OutputStage& stage,
                            const Shape4& is, const int16_t* input, const Shape4& fs,
                            const int8_t* filter, const int64_t* bias, const Shape4& os,
                            int16_t* output) {
  constexpr const char* kOp = "depthwise_conv2d_s16x8";
  if (!(m >= 1 && is.n == 1 && os.n == 1 && fs.n == 1 && fs.c == os.c &&
                int64_t(is.c) * m == os.c)) check_arg(false,
            kOp, ": shapes input ", is.str(), ", filter ", fs.str(), ", output ", os.str(),
            " with multiplier ", m, " do not match");
  check_stage(kOp, stage, bias, os.c, /*mul32_allowed=*/true);
  const bool mul32 = stage.kind == OutputStageKind::kFixedPoint;
  // A pixel's taps, channel-inner: each product of an int16 and an int8 is
  // within 2^22, so the at most kMaxInt32Taps products of a channel sum
  // exactly in int32 (a vectorisable loop); a longer window sums in int64.
  constexpr int kMaxInt32Taps = 256;
  const bool int32_sums = int64_t(fs.h) * fs.w <= kMaxInt32Taps;
  static thread_local std::vector<int32_t> sums32;
  static thread_local std::vector<int64_t> sums64;
  static thread_local std::vector<int16_t> filter16;  // widened once (int16 lanes)
  filter16.assign(filter, filter + int64_t(fs.h) * fs.w * fs.c);
  sums32.assign(size_t(os.c), 0);
  sums64.assign(size_t(os.c), 0);
  for (int oy = 0; oy < os.h; ++oy) {
    for (int ox = 0; ox < os.w; ++ox) {
      const int y0 = oy * window.stride_h - window.pad_top;
      const int x0 = ox * window.stride_w - window.pad_left;
      std::fill(sums32.begin(), sums32.end(), 0);
      std::fill(sums64.begin(), sums64.end(), 0);
      int32_t* s32 = sums32.data();
      int64_t* s64 = sums64.data();
      for (int ky = 0; ky < fs.h; ++ky) {
        const int iy = y0 + ky;
        if (iy < 0 || iy >= is.h) continue;
        for (int kx = 0; kx < fs.w; ++kx) {
          const int ix = x0 + kx;
          if (ix < 0 || ix >= is.w) continue;
          const int16_t* px = input + (int64_t(iy) * is.w + ix) * is.c;
          const int16_t* fw = filter16.data() + (int64_t(ky) * fs.w + kx) * fs.c;
          if (int32_sums && m == 1) {
            for (int c = 0; c < os.c; ++c) s32[c] += int32_t(px[c]) * int32_t(fw[c]);
          } else if (int32_sums) {
            for (int c = 0; c < os.c; ++c) s32[c] += int32_t(px[c / m]) * int32_t(fw[c]);
          } else {
            for (int c = 0; c < os.c; ++c) s64[c] += int64_t(px[c / m]) * int64_t(fw[c]);
          }
        }
      }
      for (int c = 0; c < os.c; ++c) {
        int64_t acc = int64_t(s32[c]) + s64[c];
        if (bias) acc += bias[c];
        check_acc(kOp, acc, oy, ox, c);
        output[(int64_t(oy) * os.w + ox) * os.c + c] =
            mul32 ? requantize_mul32(kOp, stage, c, acc, oy, ox)
                  : requantize_output_16x8(stage, c, acc);
      }
    }
  }
}

void conv2d_s16x8(const WindowParams& window, const OutputStage& stage, const Shape4& is,
                  const int16_t* input, const Shape4& fs, const int8_t* filter,
                  const int64_t* bias, const Shape4& os, int16_t* output) {
  constexpr const char* kOp = "conv2d_s16x8";
  if (!(is.n == 1 && os.n == 1 && fs.c == is.c && fs.n == os.c))
      check_arg(false, kOp, ": shapes input ",
            is.str(), ", filter ", fs.str(), ", output ", os.str(), " do not match");
  check_stage(kOp, stage, bias, os.c);
  // The weights widened to int16 once: an int16 x int16 multiply-add into
  // int32 is the vector dot product (pmaddwd) the loop below compiles to.
  static thread_local std::vector<int16_t> filter16;
  filter16.assign(filter, filter + int64_t(fs.n) * fs.h * fs.w * fs.c);
  for (int oy = 0; oy < os.h; ++oy) {
    for (int ox = 0; ox < os.w; ++ox) {
      const int y0 = oy * window.stride_h - window.pad_top;
      const int x0 = ox * window.stride_w - window.pad_left;
      for (int c = 0; c < os.c; ++c) {
        int64_t acc = 0;
        const int16_t* f = filter16.data() + int64_t(c) * fs.h * fs.w * fs.c;
        for (int ky = 0; ky < fs.h; ++ky) {
          const int iy = y0 + ky;
          if (iy < 0 || iy >= is.h) continue;
          for (int kx = 0; kx < fs.w; ++kx) {
            const int ix = x0 + kx;
            if (ix < 0 || ix >= is.w) continue;
            const int16_t* px = input + (int64_t(iy) * is.w + ix) * is.c;
            const int16_t* fw = f + (int64_t(ky) * fs.w + kx) * fs.c;
            // Runs of kInt32Run products (each within 2^22) sum exactly in
            // int32 (a vectorisable loop), then join the int64 accumulator.
            constexpr int kInt32Run = 256;
            for (int l0 = 0; l0 < is.c; l0 += kInt32Run) {
              const int l1 = std::min(is.c, l0 + kInt32Run);
              int32_t run = 0;
              for (int l = l0; l < l1; ++l) run += int32_t(px[l]) * int32_t(fw[l]);
              acc += run;
            }
          }
        }
        if (bias) acc += bias[c];
        check_acc(kOp, acc, oy, ox, c);
        output[(int64_t(oy) * os.w + ox) * os.c + c] = requantize_output_16x8(stage, c, acc);
      }
    }
  }
}

}  // namespace nacc

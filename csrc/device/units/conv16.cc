// The 16x8 convolution: a plain reference loop (device/units/conv16.h).
#include "device/units/conv16.h"

#include "arch/limits.h"
#include "common/error.h"

namespace nacc {

void conv2d_s16x8(const WindowParams& window, const OutputStage& stage, const Shape4& is,
                  const int16_t* input, const Shape4& fs, const int8_t* filter,
                  const int64_t* bias, const Shape4& os, int16_t* output) {
  constexpr const char* kOp = "conv2d_s16x8";
  check_arg(is.n == 1 && os.n == 1 && fs.c == is.c && fs.n == os.c, kOp, ": shapes input ",
            is.str(), ", filter ", fs.str(), ", output ", os.str(), " do not match");
  check_arg(stage.kind == OutputStageKind::kFixedPoint16x8 && stage.multiplier && stage.shift,
            kOp, ": needs the 16x8 fixed-point output stage (QUANT_MUL / QUANT_SHIFT arrays)");
  check_arg(stage.act_min >= -32768 && stage.act_max <= 32767 && stage.act_min <= stage.act_max,
            kOp, ": clamp [", stage.act_min, ", ", stage.act_max, "] must lie in int16");
  const int64_t bias_limit = int64_t{1} << (limits::kBias16Bits - 1);
  const int64_t acc_limit = int64_t{1} << (limits::kAcc16Bits - 1);
  for (int c = 0; c < os.c; ++c) {
    check_arg(stage.multiplier[c] >= 0, kOp, ": multiplier[", c, "] = ", stage.multiplier[c],
              " must be in [0, 2^31)");
    check_arg(stage.shift[c] >= -31 && stage.shift[c] <= 7, kOp, ": shift[", c, "] = ",
              stage.shift[c], " must be in [-31, 7] (the 16x8 output stage)");
    if (bias) {
      check_arg(bias[c] > -bias_limit && bias[c] < bias_limit, kOp, ": bias[", c, "] = ",
                bias[c], " does not fit ", limits::kBias16Bits, " bits (NACC_SPEC §9)");
    }
  }
  for (int oy = 0; oy < os.h; ++oy) {
    for (int ox = 0; ox < os.w; ++ox) {
      const int y0 = oy * window.stride_h - window.pad_top;
      const int x0 = ox * window.stride_w - window.pad_left;
      for (int c = 0; c < os.c; ++c) {
        int64_t acc = 0;
        const int8_t* f = filter + int64_t(c) * fs.h * fs.w * fs.c;
        for (int ky = 0; ky < fs.h; ++ky) {
          const int iy = y0 + ky;
          if (iy < 0 || iy >= is.h) continue;
          for (int kx = 0; kx < fs.w; ++kx) {
            const int ix = x0 + kx;
            if (ix < 0 || ix >= is.w) continue;
            const int16_t* px = input + (int64_t(iy) * is.w + ix) * is.c;
            const int8_t* fw = f + (int64_t(ky) * fs.w + kx) * fs.c;
            for (int l = 0; l < is.c; ++l) acc += int64_t(px[l]) * int64_t(fw[l]);
          }
        }
        if (bias) acc += bias[c];
        check_arg(acc > -acc_limit && acc < acc_limit, kOp, ": output (", oy, ", ", ox,
                  ") channel ", c, ": accumulator ", acc, " leaves ", limits::kAcc16Bits,
                  " bits");
        output[(int64_t(oy) * os.w + ox) * os.c + c] = requantize_output_16x8(stage, c, acc);
      }
    }
  }
}

}  // namespace nacc

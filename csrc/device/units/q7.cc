// The q7 modes: CMSIS-NN's legacy q7 RGB convolution and direct-table
// Tanh / Sigmoid, written from their documented arithmetic (device/units/q7.h).
#include "device/units/q7.h"

#include <array>
#include <cmath>
#include <limits>

#include "arch/fields.h"
#include "arch/limits.h"
#include "common/error.h"

namespace nacc {

namespace {

std::array<int8_t, 256> make_table(bool tanh_table) {
  std::array<int8_t, 256> t{};
  for (int j = 0; j < 256; ++j) {
    const double x = static_cast<double>(static_cast<int8_t>(static_cast<uint8_t>(j))) / 16.0;
    const double f = tanh_table ? std::tanh(x) : 1.0 / (1.0 + std::exp(-x));
    const double v = std::floor(f * 128.0 + 0.5);
    t[size_t(j)] = static_cast<int8_t>(v > 127.0 ? 127.0 : v < -128.0 ? -128.0 : v);
  }
  return t;
}

}  // namespace

const int8_t* q7_activation_table(ActMode mode) {
  static const std::array<int8_t, 256> sigmoid = make_table(false);
  static const std::array<int8_t, 256> tanh_t = make_table(true);
  check_arg(mode == ActMode::TANH || mode == ActMode::SIGMOID, "q7 activation: ACT_MODE ",
            act_mode_name(mode), " has no q7 table (TANH or SIGMOID)");
  return mode == ActMode::TANH ? tanh_t.data() : sigmoid.data();
}

void activations_direct_q7(ActMode mode, int int_width, int64_t size, const int8_t* in,
                           int8_t* out) {
  check_arg(int_width >= 0 && int_width <= limits::kMaxQ7IntWidth, "q7 activation: ACT_INT_W ",
            int_width, " must be in [0, ", limits::kMaxQ7IntWidth, "]");
  check_arg(size >= 0, "q7 activation: size ", size, " must be >= 0");
  const int8_t* table = q7_activation_table(mode);
  const int shift = limits::kMaxQ7IntWidth - int_width;
  for (int64_t i = 0; i < size; ++i) {
    out[i] = table[static_cast<uint8_t>(static_cast<int8_t>(in[i] >> shift))];
  }
}

void convolve_hwc_q7_rgb(const WindowParams& window, int bias_shift, int out_shift,
                         int32_t act_min, int32_t act_max, const Shape4& is,
                         const int8_t* input, const Shape4& fs, const int8_t* filter,
                         const int32_t* bias, const Shape4& os, int8_t* output) {
  constexpr const char* kOp = "convolve_hwc_q7_rgb";
  check_arg(is.c == limits::kRgbChannels && fs.c == limits::kRgbChannels, kOp,
            ": input and filter must have ", limits::kRgbChannels, " channels, got ", is.c,
            " and ", fs.c);
  check_arg(os.c == fs.n && is.n == 1 && os.n == 1, kOp, ": output channels ", os.c,
            " must equal the filter count ", fs.n);
  check_arg(bias_shift >= 0 && bias_shift <= limits::kMaxQ7Shift && out_shift >= 0 &&
                out_shift <= limits::kMaxQ7Shift,
            kOp, ": bias_shift ", bias_shift, " / out_shift ", out_shift, " must be in [0, ",
            limits::kMaxQ7Shift, "]");
  check_arg(bias != nullptr, kOp, ": the q7 RGB convolution needs its bias");
  for (int c = 0; c < os.c; ++c) {
    check_arg(bias[c] >= -128 && bias[c] <= 127, kOp, ": bias[", c, "] = ", bias[c],
              " is not a q7 value (CMSIS-NN's bias is q7_t, Range [-128, 127])");
  }
  const int64_t round = (int64_t{1} << out_shift) >> 1;
  constexpr int64_t kLo = std::numeric_limits<int32_t>::min(),
                    kHi = std::numeric_limits<int32_t>::max();
  for (int oy = 0; oy < os.h; ++oy) {
    for (int ox = 0; ox < os.w; ++ox) {
      const int y0 = oy * window.stride_h - window.pad_top;
      const int x0 = ox * window.stride_w - window.pad_left;
      for (int c = 0; c < os.c; ++c) {
        int64_t acc = (int64_t{bias[c]} * (int64_t{1} << bias_shift)) + round;
        check_arg(acc >= kLo && acc <= kHi, kOp, ": bias[", c, "] << ", bias_shift,
                  " leaves the 32-bit accumulator");
        const int8_t* f = filter + int64_t(c) * fs.h * fs.w * fs.c;
        for (int ky = 0; ky < fs.h; ++ky) {
          const int iy = y0 + ky;
          if (iy < 0 || iy >= is.h) continue;
          for (int kx = 0; kx < fs.w; ++kx) {
            const int ix = x0 + kx;
            if (ix < 0 || ix >= is.w) continue;
            const int8_t* px = input + (int64_t(iy) * is.w + ix) * is.c;
            const int8_t* fw = f + (int64_t(ky) * fs.w + kx) * fs.c;
            for (int l = 0; l < is.c; ++l) acc += int32_t(px[l]) * int32_t(fw[l]);
          }
        }
        check_arg(acc >= kLo && acc <= kHi, kOp, ": output (", oy, ", ", ox, ") channel ", c,
                  ": the sum ", acc, " leaves the 32-bit accumulator");
        int64_t v = acc >> out_shift;
        v = v < -128 ? -128 : v > 127 ? 127 : v;
        v = v < act_min ? act_min : v > act_max ? act_max : v;
        output[(int64_t(oy) * os.w + ox) * os.c + c] = static_cast<int8_t>(v);
      }
    }
  }
}

}  // namespace nacc

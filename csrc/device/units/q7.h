// The q7 modes of the MAC and activation units (docs/device_model.md §4): the
// arithmetic of CMSIS-NN's legacy q7 functions, which use fixed-point shifts
// instead of zero points and multipliers. No frontend maps a model onto them;
// command streams written by hand (or by a q7 toolchain) reach them.
#pragma once

#include <cstdint>

#include "arch/unit_params.h"
#include "common/shape.h"

namespace nacc {

// NACC_CTRL.CONV_MODE = RGB_CONV: CMSIS-NN arm_convolve_HWC_q7_RGB.
//   in      [1, H, W, 3] q7 (int8), positions outside the input contribute 0
//   filter  [C_out, KH, KW, 3] q7
//   bias    [C_out] int32 entries holding q7 values, Range [-128, 127]
//   out     [1, OH, OW, C_out] int8:
//     acc = (bias[c] << bias_shift) + ((1 << out_shift) >> 1) + sum(in * filter)
//     out = clamp(saturate_int8(acc >> out_shift), act_min, act_max)
// with acc a 32-bit accumulator (InvalidArgument if it would leave int32;
// CMSIS-NN's q31 sum would overflow). CMSIS-NN's image is square; the unit
// takes any H x W and the tile's explicit padding (`window`).
void convolve_hwc_q7_rgb(const WindowParams& window, int bias_shift, int out_shift,
                         int32_t act_min, int32_t act_max, const Shape4& input_shape,
                         const int8_t* input, const Shape4& filter_shape, const int8_t* filter,
                         const int32_t* bias, const Shape4& output_shape, int8_t* output);

// ACT_MODE TANH / SIGMOID on NPU_OP_ACTIVATION: CMSIS-NN
// arm_nn_activations_direct_q7. in is q(int_width).(7 - int_width), int_width
// in [0, 3]; out[i] = table[uint8(in[i] >> (3 - int_width))] (arithmetic
// shift), table entry j = round(f(int8(j) / 16) * 128) saturated to int8 —
// CMSIS-NN's sigmoidTable_q7 / tanhTable_q7 (q3.4 in, q0.7 out), f = sigmoid
// or tanh. `in` and `out` may be the same buffer.
void activations_direct_q7(ActMode mode, int int_width, int64_t size, const int8_t* in,
                           int8_t* out);

// The 256-entry q7 table of `mode` (TANH or SIGMOID), entry j for input int8(j).
const int8_t* q7_activation_table(ActMode mode);

}  // namespace nacc

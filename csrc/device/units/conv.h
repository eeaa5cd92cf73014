// The MAC unit's convolution modes (NACC_SPEC §1-§2): 2-D convolution and
// depthwise convolution on int8 NHWC feature maps, with per-output-channel
// requantization, output zero point and activation clamp. Bit-exact to
// TFLite's reference ConvPerChannel / DepthwiseConvPerChannel.
#pragma once

#include <cstdint>

#include "arch/unit_checks.h"
#include "arch/unit_params.h"
#include "common/shape.h"
#include "device/units/prepared.h"

namespace nacc {


// 2-D convolution (implemented in conv.cc):
//   acc[c] = bias[c] + sum over the window of (x - input_zero_point) * w, in
//            int32 with two's-complement wrap-around like TFLite's accumulator;
//            padded positions hold the input zero point, so they add 0
//   out    = clamp(multiply_by_quantized_multiplier(acc, mult[c], shift[c])
//                  + output_zero_point, act_min, act_max)
//   input   Format [1, H, W, C_in], int8, Range [-128, 127], zero point input_zero_point
//           in [-128, 127]; H, W, C_in in [1, 65535]
//   filter  Format [C_out, KH, KW, C_in] (TFLite OHWI), int8, zero point 0
//   bias    [C_out] int32, or nullptr for no bias (TFLite's int8 CONV_2D always
//           has one; nullptr equals an all-zero bias)
//   output  Format [1, OH, OW, C_out], int8; OH/OW from window_output_size
// Limits (NACC_SPEC §2, limits.h): KH, KW in [1, 15]; stride in [1, 3]; padding in
// [0, 5] per side (asymmetric allowed). Throws InvalidArgument naming the
// offending argument and its allowed range.
void conv2d_s8(const WindowParams& window, int32_t input_zero_point, const OutputStage& out_stage,
               const Shape4& input_shape, const int8_t* input, const Shape4& filter_shape,
               const int8_t* filter, const int32_t* bias, const Shape4& output_shape,
               int8_t* output, const PreparedWeights* prepared = nullptr);

// Depthwise convolution, output channel oc = ic * depth_multiplier + m.
//   filter  Format [1, KH, KW, C_in * depth_multiplier] (TFLite layout)
//   depth_multiplier in {1, 2, 4, 8} (NACC_SPEC §2, DW_CH_MULT)
// Other arguments as conv2d_s8.
void depthwise_conv2d_s8(const WindowParams& window, int depth_multiplier,
                         int32_t input_zero_point, const OutputStage& out_stage,
                         const Shape4& input_shape, const int8_t* input,
                         const Shape4& filter_shape, const int8_t* filter, const int32_t* bias,
                         const Shape4& output_shape, int8_t* output,
                         const PreparedWeights* prepared = nullptr);

}  // namespace nacc

// The convolution unit with 16-bit feature maps (NACC_CTRL.DATA_FORM = 01,
// NACC_SPEC §9): TFLite 2.21's 16x8 CONV_2D (reference_integer_ops::
// ConvPerChannel with an int64 accumulator, EvalQuantizedPerChannel16x8).
#pragma once

#include <cstdint>

#include "arch/unit_params.h"
#include "common/shape.h"

namespace nacc {

// input   [1, H, W, C_in]  int16, zero point 0; padded positions contribute 0
// filter  [C_out, KH, KW, C_in] int8, zero point 0
// bias    [C_out] int64, |value| < 2^39 (NACC_SPEC §9: 40-bit bias), or null
// output  [1, OH, OW, C_out] int16:
//   acc = bias[c] + sum(input * filter)   (int64; |acc| < 2^47, the 48-bit
//         accumulator, else InvalidArgument)
//   out = requantize_output_16x8(stage, c, acc)  (stage.kind kFixedPoint16x8,
//         multiplier in [0, 2^31), shift in [-31, 7], clamp within int16)
void conv2d_s16x8(const WindowParams& window, const OutputStage& stage, const Shape4& input_shape,
                  const int16_t* input, const Shape4& filter_shape, const int8_t* filter,
                  const int64_t* bias, const Shape4& output_shape, int16_t* output);

// DEPTHWISE_CONV_2D 16x8 (reference_integer_ops::DepthwiseConvPerChannel with
// an int64 accumulator): output channel o = i * depth_multiplier + j reads
// input channel i;
//   input   [1, H, W, C_in] int16, zero point 0
//   filter  [1, KH, KW, C_out] int8, C_out = C_in * depth_multiplier
//   bias, output stage and output as conv2d_s16x8, or (stage.kind kFixedPoint,
//   NACC_ACT_PARA.QUANT_MUL32) the 32-bit stage: the accumulator must fit int32
//   (else InvalidArgument), out = clamp(MultiplyByQuantizedMultiplier(acc,
//   multiplier[c], shift[c]) + output_zero_point), shift in [-31, 31].
void depthwise_conv2d_s16x8(const WindowParams& window, int depth_multiplier,
                            const OutputStage& stage, const Shape4& input_shape,
                            const int16_t* input, const Shape4& filter_shape, const int8_t* filter,
                            const int64_t* bias, const Shape4& output_shape, int16_t* output);

}  // namespace nacc

// The element-wise unit (NACC_SPEC §1): int8 add, sub and mul of two NHWC
// feature maps with per-input offsets, a common left shift, per-input and
// output requantization and an activation clamp, bit-exact to TFLite's
// reference int8 ADD / SUB / MUL kernels, including broadcasting.
#pragma once

#include <cstdint>

#include "common/quant.h"
#include "arch/fields.h"
#include "common/shape.h"

namespace nacc {

// NACC_ELEMENTWISE.ELEMENTWISE_MODE is arch's ElementwiseMode (field_values.h);
// MUL_S16_S8 is listed by the hardware and not modelled here (Unsupported).

// The unit's registers for one element-wise operation.
//
// ADD / SUB (TFLite reference_integer_ops::AddFunc, reference_ops::SubElementwise):
//   a_i    = (x_i + input_i_offset) << left_shift                      i = 1, 2
//   s_i    = MultiplyByQuantizedMultiplierSmallerThanOneExp(a_i, input_i_multiplier, input_i_shift)
//   raw    = s_1 + s_2   (ADD)   or   s_1 - s_2   (SUB)
//   out    = clamp(MultiplyByQuantizedMultiplierSmallerThanOneExp(raw, output_multiplier,
//                  output_shift) + output_zero_point, act_min, act_max)
// MUL (TFLite reference_integer_ops::MulElementwise):
//   out    = clamp(MultiplyByQuantizedMultiplier((x_1 + input1_offset) * (x_2 + input2_offset),
//                  output_multiplier, output_shift) + output_zero_point, act_min, act_max)
//   MUL ignores left_shift and the per-input multipliers (ELEMENT_INPUT_QUANT_EN off).
struct ElementwiseParams {
  ElementwiseMode mode = ElementwiseMode::ADD;
  // NACC_ELEMENTWISE.IN_ELEMENT_OFFSET1/2: added to each input, i.e. minus the
  // input zero point. 9-bit signed field: [-256, 255].
  int32_t input1_offset = 0;
  int32_t input2_offset = 0;
  // NACC_ELEMENTWISE.LEFT_SHIFT: [0, limits::kMaxElementwiseLeftShift]; TFLite uses 20.
  int left_shift = 20;
  // NACC_ELEMENT_QUANT1/2_MULT, _SHIFT: multiplier in [0, 2^31), shift in [-31, 0].
  int32_t input1_multiplier = 0;
  int input1_shift = 0;
  int32_t input2_multiplier = 0;
  int input2_shift = 0;
  // The output multiplier/shift are entry 0 of the QUANT_MUL / QUANT_SHIFT
  // arrays (NACC_SPEC §1 decision). Multiplier in [0, 2^31); shift in [-31, 0]
  // for ADD/SUB, [-31, 31] for MUL.
  int32_t output_multiplier = 0;
  int output_shift = 0;
  // NACC_FM_OFFSET.OUT_FM_OFFSET: 9-bit signed, [-256, 255].
  int32_t output_zero_point = 0;
  // NACC_ACT_MIN / NACC_ACT_MAX: -128 <= act_min <= act_max <= 127.
  int32_t act_min = -128;
  int32_t act_max = 127;
};

// Throws InvalidArgument (or Unsupported for MUL_S16_S8) naming the first
// register out of range.
void validate_elementwise_params(const ElementwiseParams& params);

// The broadcast output shape of two operands: per dimension the extents are
// equal or one of them is 1. Throws InvalidArgument naming the first
// incompatible dimension, or when N != 1 (NACC_SPEC §1: batch 1 only).
Shape4 broadcast_shape(const Shape4& a, const Shape4& b);

// out = in1 (op) in2 with NHWC broadcasting.
//   in1, in2  Format [1, H, W, C] int8, Range [-128, 127]; each dimension equal
//             to the output's or 1 (the operand is re-read along it)
//   out       Format broadcast_shape(in1_shape, in2_shape), int8, Range [act_min, act_max]
// Every dimension is at most limits::kMaxFeatureMapDim. The buffers must not
// overlap unless `out` is exactly an operand of the output's shape.
void elementwise_s8(const ElementwiseParams& params, const Shape4& in1_shape, const int8_t* in1,
                    const Shape4& in2_shape, const int8_t* in2, const Shape4& out_shape,
                    int8_t* out);

// TFLite-compatible register values (the Prepare arithmetic of TFLite 2.21's
// add.cc / sub.cc / mul.cc for int8 tensors). Scales are the float32 values a
// .tflite file stores; zero points are int8. The act range is TFLite's
// CalculateActivationRangeQuantized for `activation`.
//   ADD/SUB: left_shift 20; twice_max = 2 * max(s1, s2) (float, then double);
//            input_i real multiplier s_i / twice_max, output real multiplier
//            twice_max / (2^20 * s_out), each by QuantizeMultiplierSmallerThanOneExp.
//   MUL:     real multiplier (s1 * s2 / s_out) computed in float, QuantizeMultiplier.
// Throws InvalidArgument for non-positive or non-finite scales, zero points
// outside [-128, 127], or an output multiplier TFLite's int8 reference kernel
// cannot apply (>= 1 for ADD/SUB: only a tiny output scale does that).
ElementwiseParams tflite_add_params(float input1_scale, int32_t input1_zero_point,
                                    float input2_scale, int32_t input2_zero_point,
                                    float output_scale, int32_t output_zero_point,
                                    FusedActivation activation);
ElementwiseParams tflite_sub_params(float input1_scale, int32_t input1_zero_point,
                                    float input2_scale, int32_t input2_zero_point,
                                    float output_scale, int32_t output_zero_point,
                                    FusedActivation activation);
ElementwiseParams tflite_mul_params(float input1_scale, int32_t input1_zero_point,
                                    float input2_scale, int32_t input2_zero_point,
                                    float output_scale, int32_t output_zero_point,
                                    FusedActivation activation);

}  // namespace nacc

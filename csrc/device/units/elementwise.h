// The element-wise unit (NACC_SPEC §1): int8 add, sub and mul of two NHWC
// feature maps with per-input offsets, a common left shift, per-input and
// output requantization and an activation clamp, bit-exact to TFLite's
// reference int8 ADD / SUB / MUL kernels, including broadcasting.
#pragma once

#include <cstdint>

#include "arch/fields.h"
#include "arch/unit_params.h"
#include "common/shape.h"

namespace nacc {



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

}  // namespace nacc

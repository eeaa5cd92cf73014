// The units besides the convolutions with 16-bit feature maps (NACC_CTRL.
// DATA_FORM = 01, NACC_SPEC §9; the convolutions are device/units/conv16.h):
// TFLite 2.21's 16x8 FULLY_CONNECTED, int16 MAX_POOL_2D / AVERAGE_POOL_2D and
// 16x8 ADD / SUB reference kernels. Plain reference loops (correctness first).
#pragma once

#include <cstdint>

#include "arch/unit_params.h"
#include "common/shape.h"

namespace nacc {

// FULLY_CONNECTED 16x8 (reference_integer_ops::FullyConnected with an int64
// accumulator, the real-scale requantization of TFLite 2.21):
//   input   [rows, K] int16, zero point 0;  weights [N, K] int8, zero point 0
//   bias    [N] int64 within 40 bits, or null
//   acc     = bias[n] + sum_k input * weights   (int64, within 48 bits)
//   out     = clamp((int32)round(double(acc) * real_scale[n]) + output_zero_point)
//             (stage.kind kRealScale; a product beyond int32 gives INT32_MIN,
//             as x86's conversion does; the clamp is within int16)
void fully_connected_s16x8(const OutputStage& stage, int rows, int k, int n, const int16_t* input,
                           const int8_t* weights, const int64_t* bias, int16_t* output);

// MAX_POOL_2D on int16: the largest in-bounds value, clamped to
// [act_min, act_max] (within int16).
void max_pool_s16(const PoolParams& params, const Shape4& input_shape, const int16_t* input,
                  const Shape4& output_shape, int16_t* output);

// AVERAGE_POOL_2D on int16 (2x2, stride 2: the pooling unit): the int32 sum of
// the in-bounds cells divided by their count, rounded half away from zero,
// clamped (TFLite's reference_integer_ops::AveragePool for int16).
void avg_pool_s16(const PoolParams& params, const Shape4& input_shape, const int16_t* input,
                  const Shape4& output_shape, int16_t* output);

// ADD / SUB 16x8 (TFLite's general int16 path, pot_scale_int16 = false): the
// int8 arithmetic with left_shift 15 and zero offsets, on int16 values,
// broadcasting as elementwise_s8; the clamp within int16. MUL: the 32-bit
// MultiplyByQuantizedMultiplier of the int32 product (output shift <= 0).
void elementwise_s16(const ElementwiseParams& params, const Shape4& in1_shape, const int16_t* in1,
                     const Shape4& in2_shape, const int16_t* in2, const Shape4& out_shape,
                     int16_t* out);

// ELEMENTWISE_MODE = MUL_S16_S8 (unit_params.h; CMSIS-NN
// arm_elementwise_mul_s16_s8): int16 inputs, int8 output, per element
//   clamp(MBQM((x1 + input1_offset) * (x2 + input2_offset), output_multiplier,
//              output_shift) + output_zero_point, act_min, act_max),
// broadcasting as elementwise_s16. Registers as validate_mul_s16_s8_params.
void elementwise_mul_s16_s8(const ElementwiseParams& params, const Shape4& in1_shape,
                            const int16_t* in1, const Shape4& in2_shape, const int16_t* in2,
                            const Shape4& out_shape, int8_t* out);

// LOGISTIC / TANH 16x8 (TFLite 2.21's reference_integer_ops::Logistic / Tanh
// for int16; the activation unit's 16-bit Tanh / Sigmoid table modes, NACC_SPEC
// §9): one 256-entry uint16 sigmoid table (sigmoid_table16) shared by both,
//   v   = (x * multiplier + round) >> shift    (round = 2^(shift-1), 0 if shift 0)
//   sigmoid: 9 fraction bits of |v| interpolate table[|v| >> 9 ..], output Q0.15
//   tanh:    8 fraction bits (tanh(x) = 2 sigmoid(2x) - 1), output Q0.15
// multiplier in [1, 65535] (x * multiplier stays within int32), shift in [0, 31];
// the frontend folds TFLite's power-of-two case (3 << shift, 0) in.
void sigmoid_tanh_s16(bool tanh, int32_t multiplier, int32_t shift, int64_t size,
                      const int16_t* in, int16_t* out);

// The shared table: entry i is sigmoid(i / 24) in 0.16 fixed point, entry 255
// saturated to 65535 (the values TFLite and CMSIS-NN use).
extern const uint16_t sigmoid_table16[256];

}  // namespace nacc

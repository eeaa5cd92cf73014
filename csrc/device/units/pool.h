// The pooling unit (NACC_SPEC §1-§2): max pool (window 1..15, stride 1..3,
// padding 0..5, padded positions ignored) and average pool 2x2 stride 2 with
// TFLite's rounding (the divisor counts only in-bounds positions). Input and
// output share one quantization, as TFLite requires for int8 pooling.
#pragma once

#include <cstdint>

#include "device/units/conv.h"

namespace nacc {


//   input  Format [1, H, W, C] int8; output Format [1, OH, OW, C] int8 (OH, OW
//          as window_output_size); the two must not overlap.
// Max pool: the maximum over the window's in-bounds positions, clamped to
// [act_min, act_max]; a window entirely in the padding (explicit padding only,
// never TFLite SAME) gives -128 before the clamp, as TFLite's loop would.
void max_pool_s8(const PoolParams& params, const Shape4& input_shape, const int8_t* input,
                 const Shape4& output_shape, int8_t* output);
// Average pool: sum of the in-bounds positions / their count, rounded half
// away from zero (TFLite). kernel and stride must be 2x2 / 2
// (limits::kAvgPoolKernel, kAvgPoolStride); padding that leaves a window
// entirely in the padding is rejected (TFLite fails such a pool).
void avg_pool_s8(const PoolParams& params, const Shape4& input_shape, const int8_t* input,
                 const Shape4& output_shape, int8_t* output);

}  // namespace nacc

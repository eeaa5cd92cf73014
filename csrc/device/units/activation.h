// The activation unit (NACC_SPEC §1): an int8 requantize-and-clamp path
// (ReLU, ReLU6, none; bit-exact to TFLite's int8 RELU / RELU6 / RELU_N1_TO_1)
// and a 256-entry int8 LUT (a project extension, ACT_MODE 4'b0101) that runs
// TFLite's int8 LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU and int8 -> int8
// QUANTIZE exactly. The tables and parameters come from quant/ (quant/tflite.h).
#pragma once

#include <array>
#include <cstdint>

#include "arch/fields.h"
#include "arch/unit_params.h"

namespace nacc {



// out[i] = act(in[i]) for `size` elements (any layout: the unit is pointwise).
//   in   int8, Range [-128, 127];  out  int8, Range [act_min, act_max]
// `in` and `out` may be the same buffer.
void activation_s8(const ActivationParams& params, int64_t size, const int8_t* in, int8_t* out);

}  // namespace nacc

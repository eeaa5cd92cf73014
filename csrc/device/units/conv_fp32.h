// The MAC unit's float32 convolution (NACC_ACT_PARA.MAC_FP32, project
// extension, docs/device_model.md §4): ONNX Runtime's CPU EP running a QDQ
// Conv unfused (DequantizeLinear -> float32 MLAS Conv -> QuantizeLinear), bit
// for bit. The arithmetic is MacFp32Params' (arch/unit_params.h).
#pragma once

#include <cstdint>
#include <memory>

#include "arch/unit_params.h"
#include "common/shape.h"
#include "device/units/prepared.h"

namespace nacc {

//   input   Format [1, H, W, C_in], int8 (the tile's valid part; padding from
//           params.window contributes x_f = 0.0f)
//   filter  Format [C_out, KH, KW, C_in] (the NPU's OHWI), int8, zero point 0;
//           the sum runs in ONNX's order (C_in, KH, KW) whatever this layout
//   output  Format [1, OH, OW, C_out], int8
// Limits as conv2d_s8 (kernel 1..15, stride 1..3, padding 0..5 per side);
// InvalidArgument naming the bad argument otherwise. `prepared` (from
// prepare_conv2d_mac_fp32 for this filter and these entries, or null) holds
// the float32 weights for the fast path; the reference loop ignores it.
void conv2d_s8_mac_fp32(const MacFp32Params& params, const Shape4& input_shape,
                        const int8_t* input, const Shape4& filter_shape, const int8_t* filter,
                        const Shape4& output_shape, int8_t* output,
                        const PreparedWeights* prepared = nullptr);

}  // namespace nacc

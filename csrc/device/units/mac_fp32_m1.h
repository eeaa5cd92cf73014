// The MAC unit's float32 depthwise convolution and fully-connected modes:
// ONNX Runtime's unfused QDQ depthwise Conv / Gemm / MatMul, whose float32
// op runs on MLAS's one-row kernels (products rounded to float32 and added,
// no fused multiply-add; ir.h Attributes::ort_sum_order,
// docs/device_model.md §4). A depthwise Conv with depth multiplier > 1 runs
// MLAS's SGEMM instead: K blocks of fused multiply-adds, as CONV_2D's float32
// MAC mode (Fp32SumOrder::kFmaBlocks).
//
// Common to both units, in float32 and with every operation written out
// (the build compiles with -ffp-contract=off; fused only where fmaf is written):
//   e = entries + 4 * c = {s_x, s_w, b_f, s_y} for output channel c
//   x_f = float(x - input_zero_point) * s_x   (0.0f at a padded position)
//   w_f = float(w) * s_w                       (weights stored with zero point 0)
//   p_k = x_f(k) * w_f(k)                      (rounded; kGroups4, kLanes8)
//   out = clamp(nearbyintf(total / s_y) + output_zero_point, act_min, act_max)
// (round half to even, a true division, the zero point added after rounding:
// MLAS's QuantizeLinear, whose saturation the clamp includes).
#pragma once

#include <cstdint>
#include <memory>

#include "arch/unit_params.h"
#include "common/shape.h"
#include "device/units/prepared.h"

namespace nacc {

// Fp32SumOrder and MacFp32M1Params: arch/unit_params.h (NACC_ACT_PARA.MAC_FP32_ORDER).

// Depthwise convolution, output channel oc = ic * depth_multiplier + j:
//   kGroups4:   total = C over the taps (ky, kx) in order, then total + b_f
//   kFmaBlocks: total = the block sums over the taps, then total + b_f
//   input  Format [1, H, W, C_in] int8;  filter Format [1, KH, KW, C_out] int8
//   output Format [1, OH, OW, C_out] int8 (window_output_size per axis)
// Limits as depthwise_conv2d_s8 (conv.h; depth multiplier >= 1); order
// kGroups4 or kFmaBlocks. InvalidArgument naming the bad argument otherwise.
// `prepared` (prepare_depthwise_mac_fp32 for this filter and these entries,
// or null) holds the float32 filter of the fast path; the reference ignores it.
void depthwise_conv2d_s8_mac_fp32(const WindowParams& window, int depth_multiplier,
                                  const MacFp32M1Params& params, const Shape4& input_shape,
                                  const int8_t* input, const Shape4& filter_shape,
                                  const int8_t* filter, const Shape4& output_shape,
                                  int8_t* output, const PreparedWeights* prepared = nullptr);

// Fully connected, each of the m rows by itself (MLAS's one-row kernels):
//   kGroups4: C starts at b_f[n] (Gemm's C, beta = 1; 0.0f for no bias)
//   kLanes8:  total = tree(lanes) + b_f[n], the tree by n0 + j vs split / tail
//   input Format [M, K] int8; weights Format [N, K] int8; output [M, N] int8
//   M, K, N >= 1; order kGroups4 or kLanes8; `prepared` as above
//   (prepare_fully_connected_mac_fp32 for these weights, entries and order).
void fully_connected_s8_mac_fp32(const MacFp32M1Params& params, int m, int k, int n,
                                 const int8_t* input, const int8_t* weights, int8_t* output,
                                 const PreparedWeights* prepared = nullptr);

// Each returns nullptr when the CPU has no fast path (or an argument is null).
std::shared_ptr<const PreparedWeights> prepare_depthwise_mac_fp32(const Shape4& filter_shape,
                                                                  const int8_t* filter,
                                                                  const float* entries);
std::shared_ptr<const PreparedWeights> prepare_fully_connected_mac_fp32(int k, int n,
                                                                        const int8_t* weights,
                                                                        const float* entries,
                                                                        Fp32SumOrder order);

}  // namespace nacc

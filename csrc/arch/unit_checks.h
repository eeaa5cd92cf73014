// Argument checks shared by every compute unit (MAC modes, depthwise, pooling,
// element-wise, activation): one function per limit. Each throws
// nacc::InvalidArgument with a message naming the op, the offending value, the
// allowed range and the NACC register field or limit it comes from
// (limits.h, NACC_SPEC §1-§3). Used by the device units and by quant/.
#pragma once

#include <cstdint>
#include <string_view>

#include "arch/unit_params.h"
#include "common/shape.h"

namespace nacc {

// Output extent of a window op along one axis:
// (in + pad_before + pad_after - kernel) / stride + 1; throws if < 1.
int window_output_size(int in, int kernel, int stride, int pad_before, int pad_after);


// Throws InvalidArgument naming the first register out of range, or
// Unsupported for the q7 Tanh / Sigmoid modes.
void validate_activation_params(const ActivationParams& params);

// Throws InvalidArgument naming the first register out of range (MUL_S16_S8
// is not a mode of the 8-bit unit: validate_mul_s16_s8_params).
void validate_elementwise_params(const ElementwiseParams& params);

// ELEMENTWISE_MODE = MUL_S16_S8 (DATA_FORM INT16, unit_params.h): throws
// InvalidArgument naming the first register out of range.
void validate_mul_s16_s8_params(const ElementwiseParams& params);

// POOL_FP32 (PoolParams::float32): the two float32 scales and the zero points
// within their domain; throws InvalidArgument naming the first one out of range.
void validate_pool_float(const PoolParams& params);

// MAC_FP32 (MacFp32Params): zero points within the 9-bit offset fields, the
// clamp within int8, the K blocks within their fields, and `channels`
// entries whose scales are finite and > 0 and whose bias is finite.
void validate_mac_fp32_params(const MacFp32Params& params, int channels);

}  // namespace nacc

namespace nacc::detail {

// `ptr` must be non-null: "<op>: <name> is null".
void check_not_null(const char* op, const char* name, const void* ptr);
// A matrix / vector extent, >= 1.
void check_extent(const char* op, const char* name, int value);

// An int8 zero point, [-128, 127]; `source` (the register field, or e.g.
// "int8 tensor"), when given, is quoted in parentheses.
void check_zero_point(const char* op, const char* name, int32_t zero_point,
                      const char* source = nullptr);
// A 9-bit signed offset register field, [limits::kMinOffset, kMaxOffset].
void check_offset(const char* op, const char* name, int32_t value, const char* reg);
// A float32 quantization scale: finite and > 0 ("<op>: <what> scale ...").
void check_scale(const char* op, const char* what, float scale);

// A requantization multiplier, [limits::kMinMultiplier, 2^limits::kMultiplierBits).
// `index` >= 0 names an array entry: "<name>[<index>]".
void check_multiplier(const char* op, const char* name, int index, int32_t multiplier,
                      const char* reg);
// A requantization shift, [limits::kMinShift, max_shift]; max_shift is
// limits::kMaxShift, or limits::kMaxSmallerThanOneShift for right-shift-only
// registers. `index` as check_multiplier.
void check_shift(const char* op, const char* name, int index, int shift, int max_shift,
                 const char* reg);
// -128 <= act_min <= act_max <= 127 (NACC_ACT_MIN / NACC_ACT_MAX on int8).
void check_act_range(const char* op, int32_t act_min, int32_t act_max);
// Output zero point (NACC_FM_OFFSET.OUT_FM_OFFSET), activation range and the
// per-channel QUANT_MUL / QUANT_SHIFT arrays of `stage` for `channels` output
// channels: multiplier in [0, 2^31), shift in [-31, 31].
void check_output_stage(const char* op, const OutputStage& stage, int channels);

// A feature map's batch: N == limits::kMaxBatch (1) only (NACC_SPEC §1).
void check_batch(const char* op, const char* what, int n);
// One feature-map extent, [1, limits::kMaxFeatureMapDim] (16-bit FM size
// fields, NACC_SPEC §3): "<op>: <what> <dim> <value> out of range ...".
void check_feature_map_extent(const char* op, std::string_view what, const char* dim,
                              int value);
// A feature map: batch as check_batch, H, W, C as check_feature_map_extent
// ("<name> height", "<name> width", "<name> channels").
void check_feature_map(const char* op, const char* name, const Shape4& s);

// Kernel (limits::kMinKernel..kMaxKernel per axis), stride (kMinStride..kMaxStride)
// and padding (0..kMaxPadding per side) of a window op (NACC_KERNEL, NACC_PADDING).
void check_window(const char* op, const WindowParams& window, int kernel_h, int kernel_w);
// Average pooling is exactly 2x2, stride 2 (NACC_SPEC §2); the float32 modes
// (POOL_FP32, a project extension, `float32`) take any window check_window
// admits, as max pooling does (docs/device_model.md §4).
void check_avg_pool_window(const char* op, int kernel_h, int kernel_w, const WindowParams& w,
                           bool float32 = false);
// The output shape [1, OH, OW, out_c] of a window op (window_output_size per
// axis). Call after check_window; throws, naming `op`, when the padded input
// is smaller than the kernel.
Shape4 window_output_shape(const char* op, const Shape4& in, int kernel_h, int kernel_w,
                           const WindowParams& w, int out_c);
// The output shape a window op was given must be the one it computes.
void check_output_shape(const char* op, const Shape4& expected, const Shape4& actual);

}  // namespace nacc::detail

// Argument checks shared by the MAC unit's modes (conv, fully connected,
// matrix): each throws nacc::InvalidArgument with a message naming the op, the
// offending value and the allowed range (the NACC register field where the
// limit comes from the hardware, NACC_SPEC §1-§2).
#pragma once

#include <cstdint>

#include "device/units/conv.h"

namespace nacc::detail {

// `ptr` must be non-null: "<op>: <name> is null".
void check_not_null(const char* op, const char* name, const void* ptr);
// An int8 zero point, [-128, 127].
void check_zero_point(const char* op, const char* name, int32_t zero_point);
// Output zero point, activation clamp and the per-channel multiplier/shift
// arrays of `stage` for `channels` output channels: multiplier in [0, 2^31),
// shift in [-31, 31], -128 <= act_min <= act_max <= 127.
void check_output_stage(const char* op, const OutputStage& stage, int channels);
// Kernel (limits::kMinKernel..kMaxKernel per axis), stride (kMinStride..kMaxStride)
// and padding (0..kMaxPadding per side) of a window op.
void check_window(const char* op, const WindowParams& window, int kernel_h, int kernel_w);
// A matrix / vector extent, >= 1.
void check_extent(const char* op, const char* name, int value);

}  // namespace nacc::detail

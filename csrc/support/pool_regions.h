// How a TFLite AVERAGE_POOL_2D other than the pooling unit's 2x2 stride 2 is
// cut into depthwise region passes (compiler/lower.h
// lower_average_pool_regions): one decision shared by the capability rules
// (which must know how many passes it takes) and the compiler.
#pragma once

#include <vector>

#include "ir/ir.h"

namespace nacc::support {

// A run of output positions along one axis whose windows all hold `count`
// in-bounds input positions, computed as one window op on the input
// positions [in_start, in_start + in_size) with `kernel`, `stride` and
// `pad_before` (the padding after follows from the sizes). A run of one
// position is its clipped window: kernel = count, stride 1, no padding.
struct PoolBand {
  int out_start = 0, out_size = 0;
  int in_start = 0, in_size = 0;
  int kernel = 1, stride = 1, pad_before = 0;
  int count = 0;
};

// The runs along one axis of `out` output positions over `in` inputs, for a
// window of `kernel` taps, `stride` and `pad` positions of padding before the
// first input. Consecutive positions with one count form one run while its
// padding stays within NACC_PADDING (5 per side) and the stride within 3;
// otherwise each position is its own run. An empty result: some window holds
// no input position.
std::vector<PoolBand> average_pool_bands(int out, int in, int kernel, int stride, int pad);

// TFLite AVERAGE_POOL_2D that the compiler lowers as region passes (not the
// pooling unit's 2x2 stride 2, not an ONNX Runtime kernel).
bool is_region_average_pool(const ir::Op& op);

// At most this many region passes (commands per channel group and tile) per op.
inline constexpr int kMaxAveragePoolRegions = 256;

}  // namespace nacc::support

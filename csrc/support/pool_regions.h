// How a TFLite AVERAGE_POOL_2D other than the pooling unit's 2x2 stride 2 is
// cut into depthwise region passes (compiler/lower.h
// lower_average_pool_regions): one decision shared by the capability rules
// (which must know how many passes it takes) and the compiler.
#pragma once

#include <cstdint>
#include <optional>
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

// An int16 (16x8) MEAN over more cells than one 16-bit depthwise window holds
// (a side above 15) as exact 16-bit passes (compiler/lower.h
// lower_mean16_split): each value split as x = 2^kInt16SumSplitShift * hi +
// lo, the N = H * W cells of hi and of lo summed in groups of `group`
// consecutive cells (1 x group windows, the N cells read as rows of `group`),
// and the 2 * groups partial sums read as one `rows` x `cols` window that
// weighs the hi sums 2^kInt16SumSplitShift and the lo sums -1 (lo is stored
// negated) — the exact int32 sum of the N values, requantized once.
// group divides N, group <= 15, rows * cols = 2 * groups, rows, cols <= 15.
struct Int16SumSplit {
  int group = 0, groups = 0, rows = 0, cols = 0;
};
inline constexpr int kInt16SumSplitShift = 6;  // hi's weight 64 is an int8 weight

// The split for `cells` values (the largest group that works), or nullopt.
std::optional<Int16SumSplit> int16_sum_split(int64_t cells);

}  // namespace nacc::support

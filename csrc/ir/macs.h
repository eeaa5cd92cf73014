// The one count of useful multiply-accumulates of an IR op: what the
// frontends report per node and partition and what the fragmentation guard
// (partition/policy.h) compares with min_partition_macs.
#pragma once

#include <cstdint>

#include "ir/ir.h"

namespace nacc::ir {

// Useful MACs of `op`: products of a valid input element (padding taps
// excluded, arch/cost_model.h valid_taps) with a weight or second operand.
//   CONV_2D            N * taps_h * taps_w * C_in * C_out
//   DEPTHWISE_CONV_2D  N * taps_h * taps_w * C_out          (C_out = C_in * M)
//   FULLY_CONNECTED    M * K * N        (output elements * K)
//   BATCH_MATMUL       output elements * K
//   MEAN               input elements   (a window of ones over H x W)
//   every other kind   0
// taps_h = valid_taps(OH, stride_h, KH, padding.top, H, dilation_h), likewise
// for the width. 0 for an op with a dynamic shape or unexpected ranks.
//
// The compiler's per-op record (runtime/program.h OpRecord::macs) counts the
// same products on the geometry of the unit an op was lowered to, with the
// same valid_taps: equal to op_macs but for a PAD, which the compiler folds
// into its consumer's padding (those taps are then not useful) or runs as an
// identity depthwise pass (counted as that pass's taps). The device's
// performance counter (device/kernel_plan.cc) counts from the registers it
// executes: it models the hardware's counter, not the model.
int64_t op_macs(const Graph& graph, const Op& op);

// Sum of op_macs over graph.ops[i] for i in `ops`.
int64_t ops_macs(const Graph& graph, const std::vector<int>& ops);

}  // namespace nacc::ir

// SRAM feasibility: the bytes the smallest tile of an op needs in one core's
// SRAM — the analogue of CMSIS-NN's arm_*_get_buffer_size. The "sram_tile"
// capability rule declines an op whose smallest tile does not fit; the
// compiler's tiler must be able to reach every op that passes.
#pragma once

#include <cstdint>

#include "arch/hw_config.h"
#include "arch/limits.h"
#include "ir/ir.h"

namespace nacc::support {

struct SupportConfig {
  // One core's SRAM, bytes (NACC_SPEC §1: 64 KB).
  int64_t sram_bytes = limits::kDefaultSramBytes;
  // Every SRAM buffer starts on a multiple of this (NACC_SPEC §3: 64 bytes).
  int64_t sram_alignment = limits::kSramAlignment;
  // Decline the op kinds the compiler does not lower yet (rule
  // "compiler_lowering"). Frontends keep it on; tests of the hardware rules
  // on those kinds turn it off.
  bool check_lowering = true;
};

// The SRAM size and buffer alignment of `hw` as the compiler tiles to them
// (arch/sram.h sram_geometry: lcm(SRAM / 1024, 64), so 128 bytes from 128 KB
// up): the one SupportConfig of the compiler's own checks and of both
// frontends' claims (partition/policy.h), so claim and compile agree.
// InvalidArgument for an SRAM size sram_geometry refuses.
SupportConfig support_config(const HwConfig& hw);

// Bytes of the per-output-channel requantization data the compiler keeps in
// SRAM, one buffer each: bias, multiplier, shift (int32 each; NACC_SPEC §1
// NACC_QUANT_MUL_DMA_ADDR / NACC_QUANT_SHIFT_DMA_ADDR).
constexpr int64_t kBiasBytesPerChannel = 4;
constexpr int64_t kMultiplierBytesPerChannel = 4;
constexpr int64_t kShiftBytesPerChannel = 4;

// SRAM bytes of the smallest tile of `op` (graph.ops[op_index]).
//
// The tile is the least work the compiler can issue without changing the
// arithmetic: it may split the output by height, width (NACC_SPEC §3
// NACC_IN/OUT_FM_SPLIT) and output channels (kernel split), but never the
// input channels or kernel taps of a convolution — partial sums do not leave
// the MAC array, so the whole receptive field of an output must be resident;
// likewise a fully connected output needs its whole input row and weight row
// (the K area holds a command's decompressed weights, docs/device_model.md §1).
// Matrix mode walks its depth in 64-lane groups (NACC_SPEC §2), one group
// resident at a time. Each buffer is
// rounded up to the allocator's granularity: A(x) = ceil(x / g) * g with
// g = config.sram_alignment; P = 3 * A(4) (bias, multiplier, shift of one
// output channel). No double buffering: this is the lower bound.
//
//   CONV_2D            one output pixel x one output channel:
//                        A(min(KH,H) * min(KW,W) * C_in)   input window
//                      + A(KH * KW * C_in)                 that channel's filter
//                      + P + A(1)                          bias/mult/shift, output
//                      (a stride above 3 or kernel above 15: the same for the
//                      convolution over the space-to-depth gather, support/conv_parts.h)
//   DEPTHWISE_CONV_2D  one output pixel x the M = depth_multiplier outputs of
//                      one input channel:
//                        A(min(KH,H) * min(KW,W)) + A(KH * KW * M)
//                      + 3 * A(4 * M) + A(M)
//   MEAN               H, W <= 15: as DEPTHWISE_CONV_2D with KH = H, KW = W, M = 1
//                      (a window of ones); larger: the ones-operand matrix
//                      product, as BATCH_MATMUL with K = H * W
//   FULLY_CONNECTED    one output x its K inputs: 2 * A(K) + P + A(1)
//                      (P covers the bias and the float64 scale of the
//                      real-scale output stage, 12 bytes, as well)
//   BATCH_MATMUL       one output x its K inputs (NPU_OP_MATMUL reads all of K:
//                      one row of A, one column of B; multiplier, shift):
//                        2 * A(K) + 2 * A(4) + A(1)
//   MAX/AVERAGE_POOL   one output pixel x one channel: A(min(KH,H) * min(KW,W)) + A(1)
//                      (the pooling unit; TFLite AVERAGE_POOL_2D other than 2x2
//                      stride 2: as DEPTHWISE_CONV_2D with M = 1 for windows up
//                      to 15, else as MEAN's matrix product with K = H * W)
//   ADD, SUB, MUL      one element of each operand and of the output, and the
//                      output multiplier and shift: 3 * A(1) + 2 * A(4)
//   LUT ops (RELU*, LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU, QUANTIZE)
//                      the 256-entry table and one element in and out: A(256) + 2 * A(1)
//   PAD, CONCATENATION one element staged in and out: 2 * A(1)
//   RESHAPE            0 (a view; no data moves)
//
// Throws InvalidArgument for an OTHER op, an op with a dynamic shape, or an
// op whose operands are not the ranks its kind needs (check_op declines
// those before it gets here).
int64_t min_sram_bytes(const ir::Graph& graph, int op_index, const SupportConfig& config);
// The same for an op of `graph` given by reference (graph.ops[i]).
int64_t min_sram_bytes(const ir::Graph& graph, const ir::Op& op, const SupportConfig& config);

}  // namespace nacc::support

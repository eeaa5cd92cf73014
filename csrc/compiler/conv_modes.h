// CONV_2D on the matrix unit (NACC_SPEC §1, §2, §8): a 1x1 stride-1
// convolution as a matrix product over its H*W pixels (NPU_OP_FULLY_CONNECTED
// with the conv's multiplier/shift output stage), and a small-channel
// convolution as im2col + matrix mode (NPU_OP_MATMUL, IM2COL_EN = 1). The
// compiler plans every applicable lowering and keeps the one the planner's
// model of the §8 counters says is cheapest (docs/compiler.md §2).
#pragma once

#include <optional>
#include <string>

#include "compiler/lower.h"
#include "compiler/tiling.h"

namespace nacc::compiler {

// Which CONV_2D lowerings the compiler may use: kAuto the cheapest applicable
// one; the others force that lowering where it applies (direct otherwise) —
// for tests and reports.
enum class ConvLowering { kAuto, kDirect, kMatrix, kIm2col, kSubsampled };
// "auto", "direct", "matrix", "im2col", "subsampled"; InvalidArgument otherwise.
ConvLowering parse_conv_lowering(const std::string& name);

// The 1x1 stride-1 convolution `conv` (unit kConv) as M = H*W rows of C_in
// channels times its [C_out, C_in] weights on the fully-connected unit, with
// the conv's bias, per-channel multipliers/shifts and clamp (bit-identical:
// the same sums and the same output stage). nullopt when not applicable
// (kernel, stride, M > 65535 rows, ceil(C_in / 64) > 256 FULL_KER_SIZE).
std::optional<LoweredOp> matrix_mode_of(const LoweredOp& conv);

// `conv` as im2col + matrix mode: A = one row of K = KH*KW*C_in bytes per
// output pixel, gathered by the DMA (padding positions = the input zero
// point, so they add (zp - zp) * w = 0, exactly as the direct convolution
// skips them); B = the weights transposed to [K, C_out]; bias, multipliers,
// shifts and clamp unchanged. nullopt when not applicable (MATRIX_A fields:
// K and OH*OW <= 65535) or when its MAC-array cycles per output
// (ceil(K / 64)) are not below the direct ones (KH*KW*ceil(C_in / 64)).
std::optional<LoweredOp> im2col_of(const LoweredOp& conv);

// The 1x1 convolution `conv` of stride > 1 (no padding) as the stride-1 1x1
// convolution of the OH x OW pixels it reads: IN_FM = OH x OW, the IFM pixel
// pitch stride_w * C_in and row pitch stride_h * W * C_in (NACC_DMA_PARA2,
// NACC_DMA_OFFSET1, docs/device_model.md §2), so the DMA fetches only the
// pixels the outputs read (a quarter of the input for stride 2) instead of
// whole rows. The same pixels, weights and output stage: bit-identical.
// nullopt when not applicable.
std::optional<LoweredOp> subsampled_of(const LoweredOp& conv);

// An element-wise or activation op (no window: every output pixel reads its
// own input pixel) over its H*W pixels as rows of one pixel: in_shape and
// out_shape [1, H*W, 1, C], the same dense bytes, so mode 2 shares pixels
// instead of whole rows (14 rows cannot keep 32 cores busy, 196 pixels can).
// The same element-wise arithmetic per element: bit-identical. nullopt when not
// applicable (a width of 1, H*W > 65535, or a strided output slice).
std::optional<LoweredOp> pixel_rows_of(const LoweredOp& op);

// An element-wise or activation op whose second operand (if any) is a whole
// tensor, not a broadcast pixel, over its H*W*C elements as rows of X
// elements: in_shape and out_shape [1, R, 1, X] with R a multiple of `cores`
// (the fewest with X <= kElementRowMax), the same dense bytes, so mode 2
// gives every core the same share (49 pixels of 1152 channels cannot: 16
// cores take 3 or 4 pixels each; 32 rows of 1764 elements can). Every element
// is computed from the elements at its own offset with the op's per-tensor
// parameters: bit-identical. nullopt when not applicable (as pixel_rows_of,
// a broadcast second operand, no such R, or R = H*W).
constexpr int64_t kElementRowMax = 4096;
std::optional<LoweredOp> element_rows_of(const LoweredOp& op, int cores);

// A depthwise pass whose one window covers the whole input (a MEAN or a
// global AVERAGE_POOL_2D of at most 15x15 cells, lower.cc) as the ones-operand
// matmul (docs/compiler.md "MEAN"): A = K = H*W ones, B = the input as [K, C]
// with the depthwise input zero point as B's, the same output stage. The
// depthwise unit sums 1 * (x - zi) over the window, the matrix unit
// 1 * (x - zi) over the K rows: the same int32 sums, bit-identical. Its
// columns split over the cores in mode 1 (docs/device_model.md §5), where a
// 1x1 output gives mode 2 nothing to share. nullopt when not applicable.
std::optional<LoweredOp> ones_matmul_of(const LoweredOp& op);

struct ChosenLowering {
  LoweredOp op;
  TilePlan plan;
};

// Plans `op` (for kConv: every lowering `mode` allows) and returns the one
// with the fewest estimated cycles (ties keep the direct convolution).
ChosenLowering choose_lowering(const LoweredOp& op, const HwConfig& hw, const PlanOptions& options,
                               ConvLowering mode);

}  // namespace nacc::compiler

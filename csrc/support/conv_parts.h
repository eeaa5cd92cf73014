// How a grouped or dilated CONV_2D / DEPTHWISE_CONV_2D is cut into ordinary
// convolutions the units run (compiler/lower.h lower_conv_parts), and how a
// CONV_2D of a stride above 3 or a kernel above 15 becomes a space-to-depth
// gather and a convolution within the window limits (lower_space_to_depth):
// one decision shared by the capability rules and the compiler.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace nacc::support {

// One phase of a dilated window along one axis (stride 1): the output
// positions out_start + d*i, i in [0, out_size), are the undilated window of
// `kernel` taps over the input positions in_start + d*m, m in [0, in_size),
// with `pad_before` positions of padding before m = 0 and `pad_after` after
// the last (the sizes imply it). Input positions no window of the phase reads
// are left out of in_size.
struct DilationPhase {
  int out_start = 0, out_size = 0;
  int in_start = 0, in_size = 0;
  int pad_before = 0, pad_after = 0;
};

// The phases with at least one output position of a window of `kernel` taps,
// `dilation` apart, stride 1, `pad` positions of padding before the first of
// `in` inputs, giving `out` outputs. dilation 1: the one phase of the whole
// axis. A phase may have in_size 0 (its windows read only padding) or
// paddings beyond NACC_PADDING; dilation_phase_error says so.
std::vector<DilationPhase> dilation_phases(int out, int in, int kernel, int dilation, int pad);

// Why the phases of a window along one axis cannot run as undilated windows
// (a phase reading only padding, a phase padding above 5 or not below the
// kernel), or nullopt.
std::optional<std::string> dilation_phase_error(const std::vector<DilationPhase>& phases,
                                                int kernel);

// Groups of a CONV_2D: input channels / filter input channels (1 when they
// are equal, 0 when they do not divide the input channels or the output
// channels). Needs a rank-4 input and filter.
int conv_groups(const ir::Graph& graph, const ir::Op& op);

// The phases of a CONV_2D / DEPTHWISE_CONV_2D along height and width (the
// one phase of each axis without dilation). Needs rank-4 tensors.
struct ConvPhases {
  std::vector<DilationPhase> rows, cols;
};
ConvPhases conv_phases(const ir::Graph& graph, const ir::Op& op);

// At most this many parts (groups x row phases x column phases) per op.
inline constexpr int kMaxConvParts = 256;

// ---- space-to-depth (compiler/lower.h lower_space_to_depth) ----------------------

// One axis of a CONV_2D through a space-to-depth of `factor` (the stride;
// 1: the axis is kept as it is). The staged tensor T holds `cells` positions
// along the axis, cell i holding the input positions factor*i + r, r in
// [0, factor) (the last cell holds fewer when `whole_cells` < `cells`:
// those positions of T are never written, and only taps of weight 0 read
// them). The original tap t of output y reads input factor*(stride'*y + q) + r
// with t - pad = factor*q + r; the new window's taps are q in [first_tap,
// first_tap + kernel), stride' = stride / factor, pad_before = -first_tap
// cells of padding, pad_after implied by the sizes.
struct SpaceToDepthAxis {
  int factor = 1;
  int stride = 1;       // the new window's stride (1 when factor > 1)
  int first_tap = 0;    // q of the new window's first tap (<= 0)
  int kernel = 1;       // taps of the new window
  int pad_before = 0, pad_after = 0;
  int cells = 0;        // positions of T along the axis
  int whole_cells = 0;  // cells holding `factor` input positions
  int input = 0;        // input positions
  int orig_pad = 0;     // the original window's padding before the input
  int orig_kernel = 1;  // the original window's taps
};

// The axis of `in` inputs, `out` outputs, a window of `kernel` taps, `stride`
// and `pad` before (factor = stride when `gather`, else 1).
SpaceToDepthAxis space_to_depth_axis(int in, int out, int kernel, int stride, int pad, bool gather);

// The original tap of new tap q (0-based) at sub-position r, or -1 (a tap of
// weight 0: before the window or past its end).
int space_to_depth_tap(const SpaceToDepthAxis& a, int q, int r);

struct SpaceToDepth {
  SpaceToDepthAxis rows, cols;
  int64_t in_channels = 0;   // C of the input
  int64_t channels = 0;      // rows.factor * cols.factor * C: channels of T
};

// Whether the CONV_2D's window or stride is outside the limits of
// NACC_KERNEL (a stride above 3 or a kernel above 15 on an axis) — the ones
// the space-to-depth form applies to. Needs rank-4 tensors.
bool needs_space_to_depth(const ir::Graph& graph, const ir::Op& op);

// The space-to-depth of such a CONV_2D: every axis of a stride above 3 or a
// kernel above 15 gathered by its stride, the other kept.
SpaceToDepth space_to_depth(const ir::Graph& graph, const ir::Op& op);

// Why the space-to-depth form cannot run the CONV_2D exactly within the
// limits (a depthwise, grouped, dilated or 16-bit convolution, an axis of
// stride 1 with a kernel above 15, a new window above 15 or padding above 5,
// a partial cell the window reads as padding, channels of T above 65535), or
// nullopt.
std::optional<std::string> space_to_depth_error(const ir::Graph& graph, const ir::Op& op);

// ---- TRANSPOSE_CONV (compiler/lower.h lower_transpose_conv) ------------------------

// One output phase of a transposed convolution along one axis (stride s,
// kernel K, padding `pad` before the output, as TFLite's kernel places it:
// input i, tap k feed output s*i - pad + k). The outputs o = out_start + s*m,
// m in [0, out_size), all have (o + pad) mod s = `residue` and receive exactly
// the taps k = residue + s*j, j in [0, taps) (taps = ceil((K - residue) / s),
// 0 when K <= residue), from input q0 + m - j. As a stride-1 correlation:
// `kernel` taps over the input positions in_start + n, n in [0, in_size),
// with pad_before / pad_after positions of padding; new tap t is j = top_j - t
// (transpose_phase_tap). The window is widened past the real taps by taps of
// weight 0 where an output would otherwise read only padding (outputs past
// the input's reach, or a phase with no tap at all): those outputs are the
// bias alone in TFLite, and the zero products add nothing, so the sum is the
// same.
struct TransposePhase {
  int residue = 0;
  int taps = 0;    // real taps of the phase
  int kernel = 0;  // the window: taps plus the weight-0 taps around them
  int top_j = 0;   // j of new tap 0
  int out_start = 0, out_size = 0;
  int in_start = 0, in_size = 0;
  int pad_before = 0, pad_after = 0;
};

// The phases with at least one output position, in residue order.
std::vector<TransposePhase> transpose_conv_phases(int out, int in, int kernel, int stride, int pad);

// The original tap of new tap t of a phase, or -1 for a tap of weight 0.
inline int transpose_phase_tap(const TransposePhase& p, int stride, int t) {
  const int j = p.top_j - t;
  return j >= 0 && j < p.taps ? p.residue + stride * j : -1;
}

// Why the phases of one axis cannot run as stride-1 windows (a window above
// 15 taps, padding above 5), or nullopt.
std::optional<std::string> transpose_phase_error(const std::vector<TransposePhase>& phases);

struct TransposeConvPhases {
  std::vector<TransposePhase> rows, cols;
};
// The phases of a TRANSPOSE_CONV (rank-4 input, weights and output).
TransposeConvPhases transpose_conv_phases(const ir::Graph& graph, const ir::Op& op);

// Why the TRANSPOSE_CONV cannot run as its phase convolutions exactly, or
// nullopt: the phases' errors, more than kMaxConvParts parts, an output pixel
// pitch s_w * C_out above the DMA's 16-bit field, or per-tensor weights with
// more than one output channel (TFLite 2.21's Prepare sizes the per-channel
// multiplier arrays by the number of weight scales and its kernel indexes
// them by output channel, past their end: no defined result to match).
std::optional<std::string> transpose_conv_error(const ir::Graph& graph, const ir::Op& op);

}  // namespace nacc::support

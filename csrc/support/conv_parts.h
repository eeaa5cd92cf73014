// How a grouped or dilated CONV_2D / DEPTHWISE_CONV_2D is cut into ordinary
// convolutions the units run (compiler/lower.h lower_conv_parts): one
// decision shared by the capability rules and the compiler.
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

}  // namespace nacc::support

// How a PAD runs on the NPU: folded into the padding registers of the
// convolution that consumes it, or as a standalone identity depthwise pass
// (compiler/lower.cc lower_pad), or not at all — one decision shared by the
// capability rules (which must say why a PAD is declined) and the compiler
// (which must fold exactly the PADs the rules claimed that way).
#pragma once

#include <optional>
#include <string>

#include "ir/ir.h"
#include "support/sram.h"

namespace nacc::support {

struct PadLowering {
  bool fold = false;   // true: into graph.ops[consumer]; false: standalone
  int consumer = -1;
  ir::Padding pads;    // the PAD's height / width padding
};

// Folding needs: pads of height and width only; exactly one consumer, a
// CONV_2D or DEPTHWISE_CONV_2D reading it as its input (the PAD output is no
// graph output); that consumer claimed by the rules; the consumer's padding
// plus the PAD's at most limits::kMaxPadding per side (NACC_PADDING) and below
// the kernel on that axis (an output row or column whose window lies wholly in
// the padding would make an all-padding input tile, which the device rejects).
// The pad value is the PAD's output zero point, which is the consumer's input
// zero point, the value the convolution unit pads with.
// Otherwise a standalone pass needs top + bottom and left + right at most
// limits::kMaxPadding. nullopt: neither; *why_not names why it cannot fold and
// why it cannot run alone.
std::optional<PadLowering> pad_lowering(const ir::Graph& graph, int op_index,
                                        const SupportConfig& config, std::string* why_not);

// Only the fold (nullopt with *why_not when the PAD cannot fold).
std::optional<PadLowering> pad_fold(const ir::Graph& graph, int op_index,
                                    const SupportConfig& config, std::string* why_not);

}  // namespace nacc::support

// Grouped and dilated convolution parts (support/conv_parts.h).
#include "support/conv_parts.h"

#include "arch/limits.h"
#include <algorithm>

#include "common/error.h"

namespace nacc::support {

std::vector<DilationPhase> dilation_phases(int out, int in, int kernel, int dilation, int pad) {
  check_arg(out >= 1 && in >= 1 && kernel >= 1 && dilation >= 1 && pad >= 0,
            "dilation_phases: out ", out, ", in ", in, ", kernel ", kernel, ", dilation ",
            dilation, ", pad ", pad);
  std::vector<DilationPhase> phases;
  for (int a = 0; a < dilation && a < out; ++a) {
    DilationPhase p;
    p.out_start = a;
    p.out_size = (out - a + dilation - 1) / dilation;
    // Output a + d*i, tap k reads input a - pad + d*(i + k); the phase's
    // inputs are those congruent to a - pad modulo d.
    const int first = a - pad;
    p.in_start = ((first % dilation) + dilation) % dilation;
    p.pad_before = (p.in_start - first) / dilation;
    const int available = p.in_start < in ? (in - p.in_start + dilation - 1) / dilation : 0;
    const int reach = p.out_size - 1 + kernel - p.pad_before;  // sub-grid positions read
    p.in_size = std::max(0, std::min(available, reach));
    p.pad_after = std::max(0, reach - p.in_size);
    phases.push_back(p);
  }
  return phases;
}

std::optional<std::string> dilation_phase_error(const std::vector<DilationPhase>& phases,
                                                int kernel) {
  for (const DilationPhase& p : phases) {
    if (p.in_size == 0) {
      return str_cat("the outputs from ", p.out_start, " on read only padding");
    }
    if (p.pad_before > limits::kMaxPadding || p.pad_after > limits::kMaxPadding ||
        p.pad_before >= kernel || p.pad_after >= kernel) {
      return str_cat("a phase from output ", p.out_start, " pads ", p.pad_before, "/",
                     p.pad_after, " around its ", kernel, "-tap window");
    }
  }
  return std::nullopt;
}

int conv_groups(const ir::Graph& graph, const ir::Op& op) {
  const ir::Tensor& in = graph.tensor(op.inputs.at(0));
  const ir::Tensor& w = graph.tensor(op.inputs.at(1));
  const ir::Tensor& out = graph.tensor(op.outputs.at(0));
  check_arg(in.rank() == 4 && w.rank() == 4 && out.rank() == 4, "conv_groups: ", op.display_type(),
            " needs rank-4 input, filter and output");
  const int64_t c_in = in.shape[3], f = w.shape[3], c_out = out.shape[3];
  if (f <= 0 || c_in % f != 0) return 0;
  const int64_t g = c_in / f;
  if (c_out % g != 0 || w.shape[0] != c_out) return 0;
  return int(g);
}

ConvPhases conv_phases(const ir::Graph& graph, const ir::Op& op) {
  const ir::Tensor& in = graph.tensor(op.inputs.at(0));
  const ir::Tensor& w = graph.tensor(op.inputs.at(1));
  const ir::Tensor& out = graph.tensor(op.outputs.at(0));
  check_arg(in.rank() == 4 && w.rank() == 4 && out.rank() == 4, "conv_phases: ",
            op.display_type(), " needs rank-4 input, filter and output");
  const auto& a = op.attrs;
  ConvPhases p;
  p.rows = dilation_phases(int(out.shape[1]), int(in.shape[1]), int(w.shape[1]),
                           std::max(1, a.dilation_h), int(a.padding.top));
  p.cols = dilation_phases(int(out.shape[2]), int(in.shape[2]), int(w.shape[2]),
                           std::max(1, a.dilation_w), int(a.padding.left));
  return p;
}

}  // namespace nacc::support

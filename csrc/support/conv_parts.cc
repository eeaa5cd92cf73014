// Grouped and dilated convolution parts (support/conv_parts.h).
#include "support/conv_parts.h"

#include "arch/fields.h"
#include "arch/limits.h"
#include "arch/registers.h"
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

// ---- space-to-depth --------------------------------------------------------------

namespace {

int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

bool axis_needs_gather(int kernel, int stride) {
  return stride > limits::kMaxStride || kernel > limits::kMaxKernel;
}

}  // namespace

SpaceToDepthAxis space_to_depth_axis(int in, int out, int kernel, int stride, int pad, bool gather) {
  check_arg(in >= 1 && out >= 1 && kernel >= 1 && stride >= 1 && pad >= 0,
            "space_to_depth_axis: in ", in, ", out ", out, ", kernel ", kernel, ", stride ",
            stride, ", pad ", pad);
  SpaceToDepthAxis a;
  a.input = in;
  a.orig_pad = pad;
  a.orig_kernel = kernel;
  a.factor = gather ? stride : 1;
  a.stride = stride / a.factor;
  // Tap t of output y reads input factor*(stride'*y + q) + r with t - pad = factor*q + r.
  a.first_tap = floor_div(-pad, a.factor);
  const int last_tap = floor_div(kernel - 1 - pad, a.factor);
  a.kernel = last_tap - a.first_tap + 1;
  a.pad_before = -a.first_tap;
  if (a.factor == 1) {
    a.cells = a.whole_cells = in;
  } else {
    // Every cell holding an input position, but none past the last one read.
    a.cells = std::min((in + a.factor - 1) / a.factor, out + last_tap);
    a.whole_cells = std::min(in / a.factor, a.cells);
  }
  a.pad_after = std::max(0, (out - 1) * a.stride + a.kernel - a.cells - a.pad_before);
  return a;
}

int space_to_depth_tap(const SpaceToDepthAxis& a, int q, int r) {
  const int t = a.factor * (q + a.first_tap) + r + a.orig_pad;
  return t >= 0 && t < a.orig_kernel ? t : -1;
}

bool needs_space_to_depth(const ir::Graph& graph, const ir::Op& op) {
  if (op.kind != ir::OpKind::kConv2D && op.kind != ir::OpKind::kDepthwiseConv2D) return false;
  if (op.inputs.size() < 2 || op.inputs[1] < 0) return false;
  const ir::Tensor& w = graph.tensor(op.inputs[1]);
  if (w.rank() != 4) return false;
  return axis_needs_gather(int(w.shape[1]), op.attrs.stride_h) ||
         axis_needs_gather(int(w.shape[2]), op.attrs.stride_w);
}

SpaceToDepth space_to_depth(const ir::Graph& graph, const ir::Op& op) {
  const ir::Tensor& in = graph.tensor(op.inputs.at(0));
  const ir::Tensor& w = graph.tensor(op.inputs.at(1));
  const ir::Tensor& out = graph.tensor(op.outputs.at(0));
  check_arg(in.rank() == 4 && w.rank() == 4 && out.rank() == 4, "space_to_depth: ",
            op.display_type(), " needs rank-4 input, filter and output");
  const auto& a = op.attrs;
  const int kh = int(w.shape[1]), kw = int(w.shape[2]);
  SpaceToDepth s;
  s.rows = space_to_depth_axis(int(in.shape[1]), int(out.shape[1]), kh, a.stride_h,
                               int(a.padding.top), axis_needs_gather(kh, a.stride_h));
  s.cols = space_to_depth_axis(int(in.shape[2]), int(out.shape[2]), kw, a.stride_w,
                               int(a.padding.left), axis_needs_gather(kw, a.stride_w));
  s.in_channels = in.shape[3];
  s.channels = int64_t(s.rows.factor) * s.cols.factor * in.shape[3];
  return s;
}

namespace {

// Why one axis of the space-to-depth form does not fit, or nullopt.
std::optional<std::string> axis_error(const SpaceToDepthAxis& a, int out, int stride,
                                      const char* dim) {
  if (a.factor == 1 && axis_needs_gather(a.orig_kernel, stride)) {
    return str_cat("a ", a.orig_kernel, "-tap window along the ", dim, " with stride ", stride,
                   " has no space-to-depth form (it needs a stride of at least 2 per axis above ",
                   limits::kMaxKernel, " taps)");
  }
  if (a.kernel > limits::kMaxKernel) {
    return str_cat("the gathered window is ", a.kernel, " cells along the ", dim, ", above ",
                   limits::kMaxKernel);
  }
  if (a.pad_before > limits::kMaxPadding || a.pad_after > limits::kMaxPadding) {
    return str_cat("the gathered window pads ", a.pad_before, "/", a.pad_after, " cells along the ", dim,
                   ", above ", limits::kMaxPadding);
  }
  if (a.whole_cells < a.cells) {
    // The last cell's positions past the input: only taps of weight 0 may read them.
    const int last = a.cells - 1;
    for (int q = 0; q < a.kernel; ++q) {
      const int y = last - (q + a.first_tap);
      if (y < 0 || y >= out) continue;
      for (int r = a.input - a.factor * last; r < a.factor; ++r) {
        if (space_to_depth_tap(a, q, r) >= 0) {
          return str_cat("the input ", dim, " ", a.input, " is not a multiple of the stride ",
                         a.factor, " and the window reads the padding past it (a cell of the "
                         "gather would mix input and padding)");
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> space_to_depth_error(const ir::Graph& graph, const ir::Op& op) {
  if (op.kind == ir::OpKind::kDepthwiseConv2D) {
    return std::string("a DEPTHWISE_CONV_2D has no space-to-depth form here (the gather would "
                       "mix its channels)");
  }
  const auto& a = op.attrs;
  if (a.dilation_h > 1 || a.dilation_w > 1) {
    return str_cat("dilation ", a.dilation_h, "x", a.dilation_w, " with a space-to-depth gather");
  }
  if (conv_groups(graph, op) != 1) return std::string("a grouped convolution with a space-to-depth gather");
  const ir::Tensor& in = graph.tensor(op.inputs.at(0));
  if (in.dtype != ir::DType::kInt8) {
    return std::string("the space-to-depth gather takes int8 feature maps (its copy passes are 8-bit)");
  }
  const ir::Tensor& out = graph.tensor(op.outputs.at(0));
  const SpaceToDepth s = space_to_depth(graph, op);
  if (auto e = axis_error(s.rows, int(out.shape[1]), a.stride_h, "height")) return e;
  if (auto e = axis_error(s.cols, int(out.shape[2]), a.stride_w, "width")) return e;
  const int64_t max_channels =
      std::min(field_max(fields::NACC_FM_CH::IN_FM_CH),
               field_max(fields::NACC_DMA_OUT_TRANS_LEN::DMA_OUT_TRANS_LEN));
  if (s.channels > max_channels) {
    return str_cat("the gather has ", s.rows.factor, " x ", s.cols.factor, " x ", s.in_channels,
                   " = ", s.channels, " channels, above ", max_channels,
                   " (NACC_FM_CH.IN_FM_CH, NACC_DMA_OUT_TRANS_LEN)");
  }
  const int64_t parts = 2 * int64_t(s.rows.factor) + 1;
  if (parts > kMaxConvParts) return str_cat("stride ", s.rows.factor, ": ", parts, " parts");
  return std::nullopt;
}

// ---- TRANSPOSE_CONV ---------------------------------------------------------------

std::vector<TransposePhase> transpose_conv_phases(int out, int in, int kernel, int stride,
                                                  int pad) {
  check_arg(out >= 1 && in >= 1 && kernel >= 1 && stride >= 1 && pad >= 0,
            "transpose_conv_phases: out ", out, ", in ", in, ", kernel ", kernel, ", stride ",
            stride, ", pad ", pad);
  std::vector<TransposePhase> phases;
  for (int r = 0; r < stride; ++r) {
    TransposePhase p;
    p.residue = r;
    p.taps = r < kernel ? (kernel - r + stride - 1) / stride : 0;
    p.out_start = (((r - pad) % stride) + stride) % stride;
    if (p.out_start >= out) continue;
    p.out_size = (out - p.out_start + stride - 1) / stride;
    const int q0 = (p.out_start + pad - r) / stride;  // output m reads inputs q0 + m - j
    const int n = std::max(p.taps, 1);                // a phase with no tap: one of weight 0
    // Window of output m: positions first + m + t, t in [0, kernel). Widen it
    // towards earlier inputs until the last output reaches input in - 1, and
    // towards later ones until the first reaches input 0.
    int first = q0 - (n - 1);
    const int lo = std::max(0, first + p.out_size - 1 - (in - 1));
    first -= lo;
    const int hi = std::max(0, -(first + n + lo - 1));
    p.kernel = n + lo + hi;
    p.top_j = n - 1 + lo;
    p.in_start = std::max(0, first);
    p.pad_before = p.in_start - first;
    const int last = first + p.out_size - 1 + p.kernel - 1;
    const int in_end = std::min(in - 1, last);
    p.in_size = in_end - p.in_start + 1;
    p.pad_after = last - in_end;
    phases.push_back(p);
  }
  return phases;
}

std::optional<std::string> transpose_phase_error(const std::vector<TransposePhase>& phases) {
  for (const TransposePhase& p : phases) {
    if (p.kernel > limits::kMaxKernel) {
      return str_cat("the phase from output ", p.out_start, " needs a window of ", p.kernel,
                     " taps (", p.taps, " of the kernel), above ", limits::kMaxKernel);
    }
    if (p.pad_before > limits::kMaxPadding || p.pad_after > limits::kMaxPadding) {
      return str_cat("the phase from output ", p.out_start, " pads ", p.pad_before, "/",
                     p.pad_after, " around its ", p.kernel, "-tap window");
    }
  }
  return std::nullopt;
}

TransposeConvPhases transpose_conv_phases(const ir::Graph& graph, const ir::Op& op) {
  const ir::Tensor& in = graph.tensor(op.inputs.at(0));
  const ir::Tensor& w = graph.tensor(op.inputs.at(1));
  const ir::Tensor& out = graph.tensor(op.outputs.at(0));
  check_arg(in.rank() == 4 && w.rank() == 4 && out.rank() == 4, "transpose_conv_phases: ",
            op.display_type(), " needs rank-4 input, weights and output");
  const auto& a = op.attrs;
  TransposeConvPhases p;
  p.rows = transpose_conv_phases(int(out.shape[1]), int(in.shape[1]), int(w.shape[1]), a.stride_h,
                                 int(a.padding.top));
  p.cols = transpose_conv_phases(int(out.shape[2]), int(in.shape[2]), int(w.shape[2]), a.stride_w,
                                 int(a.padding.left));
  return p;
}

std::optional<std::string> transpose_conv_error(const ir::Graph& graph, const ir::Op& op) {
  const ir::Tensor& w = graph.tensor(op.inputs.at(1));
  const ir::Tensor& out = graph.tensor(op.outputs.at(0));
  const auto& a = op.attrs;
  if (a.stride_h < 1 || a.stride_w < 1 || a.padding.top < 0 || a.padding.left < 0) {
    return str_cat("stride ", a.stride_h, "x", a.stride_w, " padding ", a.padding.top, "/",
                   a.padding.left);
  }
  const TransposeConvPhases p = transpose_conv_phases(graph, op);
  if (auto e = transpose_phase_error(p.rows)) return str_cat("rows: ", *e);
  if (auto e = transpose_phase_error(p.cols)) return str_cat("columns: ", *e);
  const int64_t parts = int64_t(p.rows.size()) * int64_t(p.cols.size());
  if (parts > kMaxConvParts) return str_cat(parts, " phases");
  const int64_t pitch = int64_t(a.stride_w) * out.shape[3];
  if (pitch > int64_t(field_max(fields::NACC_DMA_OUT_TRANS_LEN::DMA_OUT_TRANS_LEN))) {
    return str_cat("an output pixel pitch of ", pitch, " bytes (NACC_DMA_OUT_TRANS_LEN)");
  }
  if (w.quant.scales.size() == 1 && out.shape[3] > 1) {
    return str_cat("per-tensor weights with ", out.shape[3], " output channels");
  }
  return std::nullopt;
}

}  // namespace nacc::support

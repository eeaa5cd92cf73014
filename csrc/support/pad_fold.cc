// PAD: fold into the consuming convolution, or a standalone pass (pad_fold.h).
#include "support/pad_fold.h"

#include <algorithm>

#include "arch/limits.h"
#include "common/error.h"
#include "support/rules.h"

namespace nacc::support {

namespace {

std::string pads_str(const ir::Padding& p) {
  return str_cat(p.top, "/", p.bottom, "/", p.left, "/", p.right);
}

// The PAD's height/width padding, or nullopt when it pads other axes.
std::optional<ir::Padding> hw_pads(const ir::Op& op, std::string* why_not) {
  const auto& p = op.attrs.paddings;
  if (p.size() != 4) {
    if (why_not) *why_not = str_cat("paddings for rank ", p.size(), " (4-D NHWC only)");
    return std::nullopt;
  }
  if (p[0][0] || p[0][1] || p[3][0] || p[3][1]) {
    if (why_not) *why_not = "it pads batch or channels";
    return std::nullopt;
  }
  return ir::Padding{p[1][0], p[1][1], p[2][0], p[2][1]};
}

}  // namespace

std::optional<PadLowering> pad_fold(const ir::Graph& graph, int op_index,
                                    const SupportConfig& config, std::string* why_not) {
  const ir::Op& op = graph.op(op_index);
  const auto pads = hw_pads(op, why_not);
  if (!pads) return std::nullopt;
  const int out = op.outputs.at(0);
  const auto fail = [&](std::string why) -> std::optional<PadLowering> {
    if (why_not) *why_not = std::move(why);
    return std::nullopt;
  };
  if (std::count(graph.outputs.begin(), graph.outputs.end(), out)) {
    return fail("its output is a graph output");
  }
  std::vector<int> readers;
  for (int i = 0; i < int(graph.ops.size()); ++i) {
    for (int id : graph.ops[i].inputs) {
      if (id == out) {
        readers.push_back(i);
        break;
      }
    }
  }
  if (readers.size() != 1) return fail(str_cat("its output has ", readers.size(), " consumers, not one"));
  const int c = readers[0];
  const ir::Op& conv = graph.ops[c];
  const std::string who = str_cat(conv.display_type(), " ", graph.op_label(c));
  if (conv.kind != ir::OpKind::kConv2D && conv.kind != ir::OpKind::kDepthwiseConv2D) {
    return fail(str_cat("its consumer ", who, " is not a CONV_2D or DEPTHWISE_CONV_2D"));
  }
  if (conv.inputs.empty() || conv.inputs[0] != out) {
    return fail(str_cat("its consumer ", who, " reads it as weights or bias"));
  }
  const auto violations = check_op(graph, c, config);
  if (!violations.empty()) {
    return fail(str_cat("its consumer ", who, " is not claimed (", violations[0].rule, ")"));
  }
  const auto kernel = ir::window_kernel(graph, conv);
  if (!kernel) return fail(str_cat("its consumer ", who, " has no 4-D filter"));
  const ir::Padding& cp = conv.attrs.padding;
  const ir::Padding sum{cp.top + pads->top, cp.bottom + pads->bottom, cp.left + pads->left,
                        cp.right + pads->right};
  const int64_t kh = (*kernel)[0], kw = (*kernel)[1];
  const int64_t lim = limits::kMaxPadding;
  if (sum.top > lim || sum.bottom > lim || sum.left > lim || sum.right > lim) {
    return fail(str_cat("the summed padding top/bottom/left/right ", pads_str(sum), " of ", who,
                        " exceeds ", lim, " (NACC_PADDING)"));
  }
  if (sum.top >= kh || sum.bottom >= kh || sum.left >= kw || sum.right >= kw) {
    return fail(str_cat("the summed padding top/bottom/left/right ", pads_str(sum), " of ", who,
                        " is not below its ", kh, "x", kw,
                        " kernel (an output row or column would read only padding)"));
  }
  PadLowering l;
  l.fold = true;
  l.consumer = c;
  l.pads = *pads;
  return l;
}

std::optional<PadLowering> pad_lowering(const ir::Graph& graph, int op_index,
                                        const SupportConfig& config, std::string* why_not) {
  std::string fold_why;
  if (auto f = pad_fold(graph, op_index, config, &fold_why)) return f;
  const auto pads = hw_pads(graph.op(op_index), why_not);
  if (!pads) return std::nullopt;
  const int64_t lim = limits::kMaxPadding;
  if (pads->top + pads->bottom <= lim && pads->left + pads->right <= lim) {
    PadLowering l;
    l.pads = *pads;
    return l;
  }
  if (why_not) {
    *why_not = str_cat("padding top/bottom/left/right ", pads_str(*pads),
                       " cannot run alone (more than ", lim,
                       " rows or columns in all) and cannot fold: ", fold_why);
  }
  return std::nullopt;
}

}  // namespace nacc::support

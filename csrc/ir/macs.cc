// Useful MACs of an IR op (macs.h).
#include "ir/macs.h"

#include <algorithm>

#include "arch/cost_model.h"

namespace nacc::ir {

int64_t op_macs(const Graph& g, const Op& op) {
  if (op.outputs.size() != 1 || op.inputs.empty() || op.inputs[0] < 0) return 0;
  const Tensor& in = g.tensor(op.inputs[0]);
  const Tensor& out = g.tensor(op.outputs[0]);
  if (!in.is_static() || !out.is_static()) return 0;
  const Tensor* w = op.inputs.size() > 1 && op.inputs[1] >= 0 ? &g.tensor(op.inputs[1]) : nullptr;
  // N * valid taps of a KH x KW window over the NHWC input.
  const auto window_taps = [&](int64_t kh, int64_t kw) -> int64_t {
    if (in.rank() != 4 || out.rank() != 4) return 0;
    const Attributes& a = op.attrs;
    return out.shape[0] *
           cost::valid_taps(out.shape[1], a.stride_h, kh, a.padding.top, in.shape[1],
                            a.dilation_h) *
           cost::valid_taps(out.shape[2], a.stride_w, kw, a.padding.left, in.shape[2],
                            a.dilation_w);
  };
  switch (op.kind) {
    case OpKind::kConv2D:  // filter [C_out, KH, KW, C_in]
      if (!w || w->rank() != 4 || !w->is_static()) return 0;
      return window_taps(w->shape[1], w->shape[2]) * w->shape[3] * w->shape[0];
    case OpKind::kDepthwiseConv2D:  // filter [1, KH, KW, C_out]
      if (!w || w->rank() != 4 || !w->is_static()) return 0;
      return window_taps(w->shape[1], w->shape[2]) * out.dim(-1);
    case OpKind::kTransposeConv: {  // weights [C_out, KH, KW, C_in]: every in-bounds tap
      if (!w || w->rank() != 4 || !w->is_static() || in.rank() != 4 || out.rank() != 4) return 0;
      const Attributes& a = op.attrs;
      const auto taps = [](int64_t n_in, int64_t n_out, int64_t k, int64_t s, int64_t pad) {
        int64_t t = 0;
        for (int64_t i = 0; i < n_in; ++i) {
          const int64_t o0 = i * s - pad;
          t += std::max<int64_t>(0, std::min(n_out, o0 + k) - std::max<int64_t>(0, o0));
        }
        return t;
      };
      return in.shape[0] * taps(in.shape[1], out.shape[1], w->shape[1], a.stride_h, a.padding.top) *
             taps(in.shape[2], out.shape[2], w->shape[2], a.stride_w, a.padding.left) *
             w->shape[3] * w->shape[0];
    }
    case OpKind::kFullyConnected:  // weights [N, K]
      if (!w || w->rank() != 2 || !w->is_static()) return 0;
      return out.elements() * w->shape[1];
    case OpKind::kBatchMatMul:
      return out.elements() * in.dim(-1);
    case OpKind::kMean:
      return in.elements();
    default:
      return 0;
  }
}

int64_t ops_macs(const Graph& graph, const std::vector<int>& ops) {
  int64_t macs = 0;
  for (int i : ops) macs += op_macs(graph, graph.op(i));
  return macs;
}

}  // namespace nacc::ir

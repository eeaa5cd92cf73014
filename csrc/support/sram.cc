// Smallest-tile SRAM estimate per op family; the formulas are in sram.h.
#include "support/sram.h"

#include <algorithm>

#include "arch/sram.h"
#include "common/error.h"
#include "support/conv_parts.h"

namespace nacc::support {

namespace {

int64_t align_up(int64_t bytes, int64_t granularity) {
  return (bytes + granularity - 1) / granularity * granularity;
}

}  // namespace

SupportConfig support_config(const HwConfig& hw) {
  SupportConfig c;
  c.sram_bytes = hw.sram_bytes;
  c.sram_alignment = sram_geometry(hw.sram_bytes).align;
  return c;
}

int64_t min_sram_bytes(const ir::Graph& graph, int op_index, const SupportConfig& config) {
  return min_sram_bytes(graph, graph.op(op_index), config);
}

int64_t min_sram_bytes(const ir::Graph& graph, const ir::Op& op, const SupportConfig& config) {
  using ir::OpKind;
  check_arg(config.sram_alignment >= 1, "min_sram_bytes: sram_alignment ",
            config.sram_alignment, " must be >= 1");
  const std::string label = str_cat("min_sram_bytes: ", op.display_type(),
                                    op.name.empty() ? "" : str_cat(" '", op.name, "'"));
  check_arg(op.kind != OpKind::kOther, label, " is not an NPU op");
  if (auto e = ir::op_arity_error(graph, op)) throw InvalidArgument(str_cat(label, ": ", *e));
  const ir::OpSignature& sig = ir::op_signature(op.kind);
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const int id = op.inputs[i];
    if (id >= 0 && sig.role(i) != ir::OperandRole::kParameter && !graph.tensor(id).is_static()) {
      throw InvalidArgument(str_cat(label, ": dynamic shape ", ir::shape_str(graph.tensor(id).shape)));
    }
  }

  const auto A = [&](int64_t bytes) { return align_up(bytes, config.sram_alignment); };
  const ir::Tensor& in = graph.tensor(op.inputs[0]);
  // Feature-map bytes per element: 2 for int16 maps (16x8, NACC_SPEC §9: the
  // tile capacity halves), whose bias entries are 8 bytes.
  const int64_t e = in.dtype == ir::DType::kInt16 ? 2 : 1;
  const int64_t bias_bytes = e == 2 ? 2 * kBiasBytesPerChannel : kBiasBytesPerChannel;
  const int64_t per_channel_params =
      A(bias_bytes) + A(kMultiplierBytesPerChannel) + A(kShiftBytesPerChannel);
  const auto need_rank = [&](const ir::Tensor& t, int rank) {
    check_arg(t.rank() == rank, label, ": tensor '", t.name, "' has rank ", t.rank(),
              ", expected ", rank);
  };
  // Window rows x columns of the input that one output pixel reads.
  const auto window_area = [&](int64_t kh, int64_t kw) {
    return std::min(kh, in.shape[1]) * std::min(kw, in.shape[2]);
  };
  const auto depthwise_tile = [&](int64_t kh, int64_t kw, int64_t m) {
    return A(e * window_area(kh, kw)) + A(kh * kw * m) +
           A(bias_bytes * m) + A(kMultiplierBytesPerChannel * m) +
           A(kShiftBytesPerChannel * m) + A(e * m);
  };

  // The ones-operand matrix product over `cells` cells, one channel: A (the
  // ones), one column of B, the multiplier and shift, one output byte.
  const auto ones_matmul_tile = [&](int64_t cells) {
    return 2 * A(cells) + A(kMultiplierBytesPerChannel) + A(kShiftBytesPerChannel) + A(1);
  };

  switch (op.kind) {
    case OpKind::kConv2D: {
      const ir::Tensor& f = graph.tensor(op.inputs[1]);
      need_rank(in, 4);
      need_rank(f, 4);
      int64_t kh = f.shape[1], kw = f.shape[2], c_in = f.shape[3], h = in.shape[1], w = in.shape[2];
      if (needs_space_to_depth(graph, op) && !space_to_depth_error(graph, op)) {
        // The convolution over the gathered tensor (its copy passes need less).
        const SpaceToDepth s = space_to_depth(graph, op);
        kh = s.rows.kernel, kw = s.cols.kernel, c_in = s.channels;
        h = s.rows.cells, w = s.cols.cells;
      }
      return A(e * std::min(kh, h) * std::min(kw, w) * c_in) + A(kh * kw * c_in) +
             per_channel_params + A(e);
    }
    case OpKind::kTransposeConv: {
      // The largest phase convolution's window (ceil(K / s) taps, or more
      // where weight-0 taps widen it).
      const ir::Tensor& f = graph.tensor(op.inputs[1]);
      need_rank(in, 4);
      need_rank(f, 4);
      const auto& a = op.attrs;
      int64_t kh = (f.shape[1] + a.stride_h - 1) / std::max(1, a.stride_h);
      int64_t kw = (f.shape[2] + a.stride_w - 1) / std::max(1, a.stride_w);
      if (!transpose_conv_error(graph, op)) {
        const TransposeConvPhases p = transpose_conv_phases(graph, op);
        for (const TransposePhase& r : p.rows) kh = std::max<int64_t>(kh, r.kernel);
        for (const TransposePhase& c : p.cols) kw = std::max<int64_t>(kw, c.kernel);
      }
      const int64_t c_in = f.shape[3];
      return A(e * std::min(kh, in.shape[1]) * std::min(kw, in.shape[2]) * c_in) +
             A(kh * kw * c_in) + per_channel_params + A(e);
    }
    case OpKind::kDepthwiseConv2D: {
      const ir::Tensor& f = graph.tensor(op.inputs[1]);
      need_rank(in, 4);
      need_rank(f, 4);
      return depthwise_tile(f.shape[1], f.shape[2], op.attrs.depth_multiplier);
    }
    case OpKind::kResizeBilinear:
      need_rank(in, 4);
      return depthwise_tile(2, 2, 1);
    case OpKind::kTranspose:
      return 2 * A(1);
    case OpKind::kMean:
      need_rank(in, 4);
      if (in.shape[1] <= limits::kMaxKernel && in.shape[2] <= limits::kMaxKernel) {
        return depthwise_tile(in.shape[1], in.shape[2], 1);
      }
      return ones_matmul_tile(in.shape[1] * in.shape[2]);
    case OpKind::kFullyConnected: {
      const ir::Tensor& w = graph.tensor(op.inputs[1]);
      need_rank(w, 2);
      return 2 * A(w.shape[1]) + per_channel_params + A(1);
    }
    case OpKind::kBatchMatMul: {
      check_arg(in.rank() >= 2, label, ": operand rank ", in.rank(), " < 2");
      const int64_t k = in.dim(-1);  // NPU_OP_MATMUL takes all of K in one command
      return 2 * A(k) + A(kMultiplierBytesPerChannel) + A(kShiftBytesPerChannel) + A(1);
    }
    case OpKind::kAveragePool2D: {
      need_rank(in, 4);
      const auto& a = op.attrs;
      const bool pool_unit = a.kernel_h == limits::kAvgPoolKernel &&
                             a.kernel_w == limits::kAvgPoolKernel &&
                             a.stride_h == limits::kAvgPoolStride &&
                             a.stride_w == limits::kAvgPoolStride;
      if (pool_unit || a.onnx_kernel != ir::Attributes::OnnxKernel::kNone) {
        return A(window_area(a.kernel_h, a.kernel_w)) + A(1);
      }
      if (a.kernel_h <= limits::kMaxKernel && a.kernel_w <= limits::kMaxKernel) {
        return depthwise_tile(a.kernel_h, a.kernel_w, 1);  // region passes
      }
      return ones_matmul_tile(in.shape[1] * in.shape[2]);
    }
    case OpKind::kMaxPool2D:
      need_rank(in, 4);
      return A(window_area(op.attrs.kernel_h, op.attrs.kernel_w)) + A(1);
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
      return 3 * A(1) + A(kMultiplierBytesPerChannel) + A(kShiftBytesPerChannel);
    case OpKind::kPad:
    case OpKind::kConcatenation:
    case OpKind::kSlice:
    case OpKind::kResizeNearest:
    case OpKind::kSpaceToDepth:
    case OpKind::kDepthToSpace:
      return 2 * A(1);
    case OpKind::kReshape:
      return 0;
    default:  // the LUT ops
      return A(limits::kLutEntries) + 2 * A(1);
  }
}

}  // namespace nacc::support

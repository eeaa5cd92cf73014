// Graph IR: names of the enums, the builders' checks, per-kind operand
// signatures, shape consistency and the TFLite window/padding helpers.
#include "ir/ir.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/error.h"

namespace nacc::ir {

namespace {

struct DTypeInfo {
  DType dtype;
  const char* name;
  int size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::kInt8, "int8", 1},   {DType::kUInt8, "uint8", 1},     {DType::kInt16, "int16", 2},
    {DType::kInt32, "int32", 4}, {DType::kInt64, "int64", 8},     {DType::kFloat32, "float32", 4},
    {DType::kOther, "other", 0}, {DType::kInt4, "int4", 1},  // int4: unpacked, one per byte
};

struct OpKindInfo {
  OpKind kind;
  const char* name;
  const char* description;
};
// In enum order.
constexpr OpKindInfo kOpKinds[] = {
    {OpKind::kConv2D, "CONV_2D", "MAC unit, convolution mode (1x1 may lower to matrix mode)"},
    {OpKind::kDepthwiseConv2D, "DEPTHWISE_CONV_2D", "MAC unit, depthwise mode"},
    {OpKind::kFullyConnected, "FULLY_CONNECTED", "MAC unit, fully-connected mode"},
    {OpKind::kBatchMatMul, "BATCH_MATMUL", "MAC unit, matrix mode (both operands activations)"},
    {OpKind::kMaxPool2D, "MAX_POOL_2D", "pooling unit, max mode"},
    {OpKind::kAveragePool2D, "AVERAGE_POOL_2D", "pooling unit, average mode"},
    {OpKind::kAdd, "ADD", "element-wise unit"},
    {OpKind::kSub, "SUB", "element-wise unit"},
    {OpKind::kMul, "MUL", "element-wise unit"},
    {OpKind::kRelu, "RELU", "activation unit, 256-entry LUT"},
    {OpKind::kRelu6, "RELU6", "activation unit, 256-entry LUT"},
    {OpKind::kReluN1To1, "RELU_N1_TO_1", "activation unit, 256-entry LUT"},
    {OpKind::kLogistic, "LOGISTIC", "activation unit, 256-entry LUT filled as TFLite fills its table (or the frontend's table)"},
    {OpKind::kTanh, "TANH", "activation unit, 256-entry LUT filled as TFLite fills its table (or the frontend's table)"},
    {OpKind::kHardSwish, "HARD_SWISH", "activation unit, 256-entry LUT of TFLite's reference int8 arithmetic (or the frontend's table)"},
    {OpKind::kLeakyRelu, "LEAKY_RELU", "activation unit, 256-entry LUT of TFLite's reference int8 arithmetic (or the frontend's table)"},
    {OpKind::kQuantize, "QUANTIZE", "int8 -> int8 requantize: activation unit, 256-entry LUT of TFLite's reference arithmetic"},
    {OpKind::kReshape, "RESHAPE", "a view of the same bytes (also SQUEEZE, EXPAND_DIMS); no data moves"},
    {OpKind::kPad, "PAD",
     "folded into the next convolution's PADDING registers, or an identity depthwise window"},
    {OpKind::kConcatenation, "CONCATENATION",
     "producers write at channel offsets of the output (strided OFM); 1x1 pool copies otherwise"},
    {OpKind::kMean, "MEAN", "MAC unit, depthwise window of ones over height and width"},
    {OpKind::kSlice, "SLICE",
     "also STRIDED_SLICE, SPLIT, SPLIT_V: 1x1 pool copies reading each output's window of the "
     "input through DMA offsets and pitches"},
    {OpKind::kResizeNearest, "RESIZE_NEAREST_NEIGHBOR",
     "integer factors: 1x1 pool copies, one per (row, column) replica, writing through DMA "
     "offsets and pitches"},
    {OpKind::kSpaceToDepth, "SPACE_TO_DEPTH",
     "1x1 pool copies, one per row of the block, gathering through DMA pitches"},
    {OpKind::kDepthToSpace, "DEPTH_TO_SPACE",
     "1x1 pool copies, one per row of the block, scattering through DMA pitches"},
    {OpKind::kMaximum, "MAXIMUM",
     "with a constant operand of one value: activation unit, 256-entry LUT max(x, c)"},
    {OpKind::kMinimum, "MINIMUM",
     "with a constant operand of one value: activation unit, 256-entry LUT min(x, c)"},
    {OpKind::kTransposeConv, "TRANSPOSE_CONV",
     "MAC unit, convolution mode: one stride-1 convolution per output phase (s_h x s_w "
     "sub-kernels), each writing its interleaved sub-grid of the output through DMA pitches"},
    {OpKind::kResizeBilinear, "RESIZE_BILINEAR",
     "integer factors: MAC unit, depthwise mode, one pass per run of output rows x columns of "
     "one interpolation weight pair, with TFLite's exact rounded division"},
    {OpKind::kTranspose, "TRANSPOSE",
     "1x1 pool copies through DMA pitches: runs of the innermost bytes that stay innermost "
     "(an H/W swap keeps the channels), single bytes otherwise; one pass per outer index"},
    {OpKind::kOther, "OTHER", "any op the core does not implement; runs on the host"},
};

constexpr const char* kActivationNames[] = {"NONE", "RELU", "RELU_N1_TO_1", "RELU6", "TANH",
                                            "SIGN_BIT"};

std::string join_names(const char* const* names, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += (i ? ", " : "") + std::string(names[i]);
  return out;
}

std::string tensor_label(const Graph& g, int id) {
  const Tensor& t = g.tensor(id);
  return t.name.empty() ? str_cat("#", id) : str_cat("'", t.name, "'");
}

// Normalises a possibly negative axis; -1 when out of range.
int normalize_axis(int axis, int rank) {
  const int a = axis < 0 ? axis + rank : axis;
  return (a >= 0 && a < rank) ? a : -1;
}

const Tensor* input_or_null(const Graph& g, const Op& op, size_t i) {
  return i < op.inputs.size() && op.inputs[i] >= 0 ? &g.tensor(op.inputs[i]) : nullptr;
}

std::optional<std::string> window_shape_error(const Graph& g, const Op& op) {
  const Tensor& ifm = g.tensor(op.inputs[0]);
  const Tensor& ofm = g.tensor(op.outputs[0]);
  if (ifm.rank() != 4 || ofm.rank() != 4) return std::nullopt;
  const auto kernel = window_kernel(g, op);
  if (!kernel) return std::nullopt;
  const auto [kh, kw] = *kernel;
  if (kh < 1 || kw < 1) return str_cat("kernel ", kh, "x", kw, " is empty");
  const Attributes& a = op.attrs;
  int64_t c_out = ifm.shape[3];
  const bool is_conv = op.kind == OpKind::kConv2D || op.kind == OpKind::kDepthwiseConv2D;
  const int dh = is_conv ? a.dilation_h : 1, dw = is_conv ? a.dilation_w : 1;
  if (op.kind == OpKind::kConv2D) {
    const Tensor& filter = g.tensor(op.inputs[1]);
    const int64_t in_ch = filter.shape[3];
    if (ifm.shape[3] % in_ch != 0) {
      return str_cat("filter input channels ", in_ch, " do not divide input channels ",
                     ifm.shape[3]);
    }
    c_out = filter.shape[0];
  } else if (op.kind == OpKind::kDepthwiseConv2D) {
    const Tensor& filter = g.tensor(op.inputs[1]);
    if (filter.shape[0] != 1) return str_cat("depthwise filter ", shape_str(filter.shape),
                                             " must have leading dimension 1");
    c_out = filter.shape[3];
    if (ifm.shape[3] * a.depth_multiplier != c_out) {
      return str_cat("filter channels ", c_out, " != input channels ", ifm.shape[3],
                     " x depth multiplier ", a.depth_multiplier);
    }
  }
  if (is_conv) {
    if (const Tensor* bias = input_or_null(g, op, 2)) {
      if (bias->is_static() && bias->elements() != c_out) {
        return str_cat("bias ", shape_str(bias->shape), " has ", bias->elements(),
                       " elements for ", c_out, " output channels");
      }
    }
  }
  const int64_t oh = window_output_size(ifm.shape[1], kh, a.stride_h, a.padding.top,
                                        a.padding.bottom, dh);
  const int64_t ow = window_output_size(ifm.shape[2], kw, a.stride_w, a.padding.left,
                                        a.padding.right, dw);
  const std::vector<int64_t> expected = {ifm.shape[0], oh, ow, c_out};
  if (oh < 1 || ow < 1 || ofm.shape != expected) {
    return str_cat("output ", shape_str(ofm.shape), " but input ", shape_str(ifm.shape),
                   ", kernel ", kh, "x", kw, ", stride ", a.stride_h, "x", a.stride_w,
                   ", padding ", a.padding.top, "/", a.padding.bottom, "/", a.padding.left, "/",
                   a.padding.right, " give ", shape_str(expected));
  }
  return std::nullopt;
}

}  // namespace

// ---- names ----------------------------------------------------------------

const char* dtype_name(DType dtype) {
  for (const auto& d : kDTypes) {
    if (d.dtype == dtype) return d.name;
  }
  return "?";
}

int dtype_size(DType dtype) {
  for (const auto& d : kDTypes) {
    if (d.dtype == dtype) return d.size;
  }
  return 0;
}

DType parse_dtype(const std::string& name) {
  std::string known;
  for (const auto& d : kDTypes) {
    if (name == d.name) return d.dtype;
    known += (known.empty() ? "" : ", ") + std::string(d.name);
  }
  throw InvalidArgument(str_cat("unknown dtype '", name, "' (known: ", known, ")"));
}

const char* op_kind_name(OpKind kind) { return kOpKinds[static_cast<int>(kind)].name; }

const char* op_kind_description(OpKind kind) {
  return kOpKinds[static_cast<int>(kind)].description;
}

OpKind parse_op_kind(const std::string& name) {
  std::string known;
  for (const auto& k : kOpKinds) {
    if (name == k.name) return k.kind;
    known += (known.empty() ? "" : ", ") + std::string(k.name);
  }
  throw InvalidArgument(str_cat("unknown op kind '", name, "' (known: ", known,
                                "; use OTHER with the frontend's op name for anything else)"));
}

const std::vector<OpKind>& npu_op_kinds() {
  static const std::vector<OpKind> kinds = [] {
    std::vector<OpKind> v;
    for (const auto& k : kOpKinds) {
      if (k.kind != OpKind::kOther) v.push_back(k.kind);
    }
    return v;
  }();
  return kinds;
}

const char* activation_name(Activation act) {
  return kActivationNames[static_cast<int>(act)];
}

Activation parse_activation(const std::string& name) {
  constexpr size_t n = sizeof(kActivationNames) / sizeof(kActivationNames[0]);
  for (size_t i = 0; i < n; ++i) {
    if (name == kActivationNames[i]) return static_cast<Activation>(i);
  }
  throw InvalidArgument(str_cat("unknown fused activation '", name, "' (known: ",
                                join_names(kActivationNames, n), ")"));
}

const char* requant_mode_name(RequantMode mode) {
  return mode == RequantMode::kOnnxRuntime ? "onnxruntime" : "tflite";
}

RequantMode parse_requant_mode(const std::string& name) {
  if (name == "tflite") return RequantMode::kTflite;
  if (name == "onnxruntime") return RequantMode::kOnnxRuntime;
  throw InvalidArgument(str_cat("unknown requantization mode '", name, "' (tflite or onnxruntime)"));
}

PaddingMode parse_padding_mode(const std::string& name) {
  if (name == "SAME") return PaddingMode::kSame;
  if (name == "VALID") return PaddingMode::kValid;
  throw InvalidArgument(str_cat("unknown padding '", name, "' (SAME or VALID)"));
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// ---- tensors --------------------------------------------------------------

bool QuantParams::operator==(const QuantParams& o) const {
  return scales == o.scales && zero_points == o.zero_points &&
         (!per_channel() || axis == o.axis);
}

bool Tensor::is_static() const {
  return std::all_of(shape.begin(), shape.end(), [](int64_t d) { return d > 0; });
}

int64_t Tensor::elements() const {
  if (!is_static()) return -1;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t Tensor::dim(int i) const {
  const int r = rank();
  const int a = i < 0 ? i + r : i;
  check_arg(a >= 0 && a < r, "tensor '", name, "': dimension ", i, " out of range for rank ", r);
  return shape[a];
}

void check_tensor(const Tensor& t) {
  const auto& q = t.quant;
  check_arg(q.scales.size() == q.zero_points.size(), "tensor '", t.name, "': ", q.scales.size(),
            " scales but ", q.zero_points.size(), " zero points");
  if (q.per_channel()) {
    check_arg(q.axis >= 0 && q.axis < t.rank(), "tensor '", t.name, "': quantization axis ",
              q.axis, " out of range for rank ", t.rank());
    const int64_t channels = t.shape[q.axis];
    check_arg(channels <= 0 || channels == static_cast<int64_t>(q.scales.size()), "tensor '",
              t.name, "': ", q.scales.size(), " scales for ", channels, " channels on axis ",
              q.axis);
  }
  for (int64_t d : t.shape) {
    check_arg(d >= -1, "tensor '", t.name, "': dimension ", d, " (use -1 or 0 for unknown)");
  }
  if (t.data) {
    check_arg(dtype_size(t.dtype) > 0, "tensor '", t.name, "': dtype ", dtype_name(t.dtype),
              " cannot carry data");
    check_arg(t.is_static(), "tensor '", t.name, "': constant data needs a static shape, got ",
              shape_str(t.shape));
    const int64_t expected = t.elements() * dtype_size(t.dtype);
    check_arg(static_cast<int64_t>(t.data->size()) == expected, "tensor '", t.name, "': ",
              t.data->size(), " data bytes, shape ", shape_str(t.shape), " x ",
              dtype_name(t.dtype), " needs ", expected);
    if (t.dtype == DType::kInt4) {
      for (size_t i = 0; i < t.data->size(); ++i) {
        const int v = int8_t((*t.data)[i]);
        check_arg(v >= -8 && v <= 7, "tensor '", t.name, "': int4 element ", i, " is ", v,
                  " (int4 data is held unpacked, one value in [-8, 7] per byte)");
      }
    }
  }
}

// ---- ops ------------------------------------------------------------------

std::string Op::display_type() const {
  return type_name.empty() ? std::string(op_kind_name(kind)) : type_name;
}

OperandRole OpSignature::role(size_t index) const {
  if (roles.empty()) return OperandRole::kActivation;
  return roles[std::min(index, roles.size() - 1)];
}

const OpSignature& op_signature(OpKind kind) {
  using R = OperandRole;
  static const OpSignature mac{2, 3, {R::kActivation, R::kWeights, R::kBias}};
  static const OpSignature binary{2, 2, {R::kActivation, R::kActivation}};
  static const OpSignature unary{1, 1, {R::kActivation}};
  static const OpSignature with_param{1, 2, {R::kActivation, R::kParameter}};
  static const OpSignature pad{1, 3, {R::kActivation, R::kParameter, R::kParameter}};
  static const OpSignature variadic{1, -1, {R::kActivation}};
  static const OpSignature other{0, -1, {R::kActivation}};
  switch (kind) {
    case OpKind::kConv2D:
    case OpKind::kDepthwiseConv2D:
    case OpKind::kFullyConnected:
    case OpKind::kTransposeConv:
      return mac;
    case OpKind::kBatchMatMul:
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kMaximum:
    case OpKind::kMinimum:
      return binary;
    case OpKind::kReshape:
    case OpKind::kMean:
    case OpKind::kResizeNearest:
    case OpKind::kResizeBilinear:
    case OpKind::kTranspose:
      return with_param;
    case OpKind::kPad:
      return pad;
    case OpKind::kConcatenation:
      return variadic;
    case OpKind::kOther:
      return other;
    default:
      return unary;
  }
}

std::optional<std::string> op_arity_error(const Graph& graph, const Op& op) {
  if (op.kind == OpKind::kOther) return std::nullopt;
  const OpSignature& sig = op_signature(op.kind);
  const int n = static_cast<int>(op.inputs.size());
  if (n < sig.min_inputs || (sig.max_inputs >= 0 && n > sig.max_inputs)) {
    if (sig.max_inputs < 0) return str_cat(n, " inputs, expected at least ", sig.min_inputs);
    if (sig.min_inputs == sig.max_inputs) return str_cat(n, " inputs, expected ", sig.min_inputs);
    return str_cat(n, " inputs, expected ", sig.min_inputs, " to ", sig.max_inputs);
  }
  for (int i = 0; i < n; ++i) {
    const OperandRole role = sig.role(i);
    const bool optional = role == OperandRole::kBias || role == OperandRole::kParameter;
    if (op.inputs[i] < 0 && !optional) return str_cat("input ", i, " is missing");
  }
  if (op.kind == OpKind::kSlice) {
    if (op.outputs.empty()) return std::string("0 outputs, expected at least 1");
    if (op.attrs.slice_begin.size() != op.outputs.size()) {
      return str_cat(op.outputs.size(), " outputs but ", op.attrs.slice_begin.size(),
                     " slice origins (slice_begin)");
    }
    return std::nullopt;
  }
  if (op.outputs.size() != 1) return str_cat(op.outputs.size(), " outputs, expected 1");
  return std::nullopt;
}

std::optional<std::string> op_shape_error(const Graph& g, const Op& op) {
  if (op.kind == OpKind::kOther || op_arity_error(g, op)) return std::nullopt;
  if (!op.attrs.unsupported_options.empty()) return std::nullopt;
  // Every operand that matters must be static.
  const OpSignature& sig = op_signature(op.kind);
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (op.inputs[i] >= 0 && sig.role(i) != OperandRole::kParameter &&
        !g.tensor(op.inputs[i]).is_static()) {
      return std::nullopt;
    }
  }
  const Tensor& out = g.tensor(op.outputs[0]);
  if (!out.is_static()) return std::nullopt;
  const Tensor& in = g.tensor(op.inputs[0]);
  const Attributes& a = op.attrs;

  switch (op.kind) {
    case OpKind::kConv2D:
    case OpKind::kDepthwiseConv2D:
      if (g.tensor(op.inputs[1]).rank() != 4) return std::nullopt;
      return window_shape_error(g, op);
    case OpKind::kMaxPool2D:
    case OpKind::kAveragePool2D:
      if (a.kernel_h < 1 || a.kernel_w < 1) {
        return str_cat("pool window ", a.kernel_h, "x", a.kernel_w, " not set (kernel_h, kernel_w)");
      }
      return window_shape_error(g, op);
    case OpKind::kFullyConnected: {
      const Tensor& w = g.tensor(op.inputs[1]);
      if (w.rank() != 2) return std::nullopt;
      const int64_t n = w.shape[0], k = w.shape[1];
      if (in.elements() % k != 0) {
        return str_cat("input ", shape_str(in.shape), " is not a whole number of rows of ", k,
                       " (weights ", shape_str(w.shape), ")");
      }
      const int64_t m = in.elements() / k;
      if (out.rank() < 1 || out.shape.back() != n || out.elements() != m * n) {
        return str_cat("output ", shape_str(out.shape), " but input ", shape_str(in.shape),
                       " and weights ", shape_str(w.shape), " give [", m, ",", n, "]");
      }
      if (const Tensor* bias = input_or_null(g, op, 2)) {
        if (bias->elements() != n) {
          return str_cat("bias ", shape_str(bias->shape), " has ", bias->elements(),
                         " elements for ", n, " outputs");
        }
      }
      return std::nullopt;
    }
    case OpKind::kBatchMatMul: {
      const Tensor& b = g.tensor(op.inputs[1]);
      if (in.rank() < 2 || b.rank() < 2 || out.rank() < 2) return std::nullopt;
      const std::vector<int64_t> batch_a(in.shape.begin(), in.shape.end() - 2);
      const std::vector<int64_t> batch_b(b.shape.begin(), b.shape.end() - 2);
      auto batch = broadcast_shape(batch_a, batch_b);
      if (!batch || in.dim(-1) != b.dim(-2)) {
        return str_cat("operands ", shape_str(in.shape), " and ", shape_str(b.shape),
                       " cannot be multiplied");
      }
      std::vector<int64_t> expected = *batch;
      expected.push_back(in.dim(-2));
      expected.push_back(b.dim(-1));
      if (out.shape != expected) {
        return str_cat("output ", shape_str(out.shape), " but operands give ", shape_str(expected));
      }
      return std::nullopt;
    }
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kMaximum:
    case OpKind::kMinimum: {
      const Tensor& b = g.tensor(op.inputs[1]);
      auto expected = broadcast_shape(in.shape, b.shape);
      if (!expected) {
        return str_cat("operands ", shape_str(in.shape), " and ", shape_str(b.shape),
                       " do not broadcast");
      }
      if (out.shape != *expected) {
        return str_cat("output ", shape_str(out.shape), " but operands give ", shape_str(*expected));
      }
      return std::nullopt;
    }
    case OpKind::kReshape:
      if (in.elements() != out.elements()) {
        return str_cat("reshape of ", shape_str(in.shape), " (", in.elements(), " elements) to ",
                       shape_str(out.shape), " (", out.elements(), " elements)");
      }
      return std::nullopt;
    case OpKind::kPad: {
      if (static_cast<int>(a.paddings.size()) != in.rank()) {
        return str_cat("paddings has ", a.paddings.size(), " entries for a rank-", in.rank(),
                       " input");
      }
      std::vector<int64_t> expected = in.shape;
      for (int i = 0; i < in.rank(); ++i) expected[i] += a.paddings[i][0] + a.paddings[i][1];
      if (out.shape != expected) {
        return str_cat("output ", shape_str(out.shape), " but paddings give ", shape_str(expected));
      }
      return std::nullopt;
    }
    case OpKind::kConcatenation: {
      const int axis = normalize_axis(a.axis, out.rank());
      if (axis < 0) return str_cat("axis ", a.axis, " out of range for rank ", out.rank());
      int64_t total = 0;
      for (int id : op.inputs) {
        const Tensor& t = g.tensor(id);
        bool ok = t.rank() == out.rank();
        for (int d = 0; ok && d < t.rank(); ++d) ok = d == axis || t.shape[d] == out.shape[d];
        if (!ok) {
          return str_cat("input ", tensor_label(g, id), " ", shape_str(t.shape),
                         " does not match output ", shape_str(out.shape), " off axis ", axis);
        }
        total += t.shape[axis];
      }
      if (total != out.shape[axis]) {
        return str_cat("output has ", out.shape[axis], " on axis ", axis, ", inputs sum to ", total);
      }
      return std::nullopt;
    }
    case OpKind::kMean: {
      std::set<int> reduced;
      for (int ax : a.axes) {
        const int n = normalize_axis(ax, in.rank());
        if (n < 0) return str_cat("axis ", ax, " out of range for rank ", in.rank());
        reduced.insert(n);
      }
      std::vector<int64_t> expected;
      for (int d = 0; d < in.rank(); ++d) {
        if (!reduced.count(d)) {
          expected.push_back(in.shape[d]);
        } else if (a.keep_dims) {
          expected.push_back(1);
        }
      }
      if (out.shape != expected) {
        return str_cat("output ", shape_str(out.shape), " but reducing ", shape_str(in.shape),
                       " gives ", shape_str(expected));
      }
      return std::nullopt;
    }
    case OpKind::kTranspose: {
      const int rank = in.rank();
      std::vector<int> seen(size_t(rank), 0);
      bool ok = int(a.perm.size()) == rank;
      for (int p : a.perm) {
        if (!ok || p < 0 || p >= rank || seen[size_t(p)]++) ok = false;
      }
      if (!ok) return str_cat("perm has ", a.perm.size(), " entries, not a permutation of ", rank);
      std::vector<int64_t> expected(static_cast<size_t>(rank), 0);
      for (int k = 0; k < rank; ++k) expected[size_t(k)] = in.shape[size_t(a.perm[size_t(k)])];
      if (out.shape != expected) {
        return str_cat("output ", shape_str(out.shape), " but the perm gives ", shape_str(expected));
      }
      return std::nullopt;
    }
    case OpKind::kTransposeConv: {
      const Tensor& w = g.tensor(op.inputs[1]);
      if (in.rank() != 4 || out.rank() != 4 || w.rank() != 4) return std::nullopt;
      if (w.shape[3] != in.shape[3] || w.shape[0] != out.shape[3] || out.shape[0] != in.shape[0]) {
        return str_cat("weights ", shape_str(w.shape), " do not take input ", shape_str(in.shape),
                       " to output ", shape_str(out.shape), " ([C_out, KH, KW, C_in])");
      }
      if (a.stride_h < 1 || a.stride_w < 1) {
        return str_cat("stride ", a.stride_h, "x", a.stride_w, " must be >= 1");
      }
      return std::nullopt;
    }
    case OpKind::kResizeNearest:
    case OpKind::kResizeBilinear: {
      if (in.rank() != 4 || out.rank() != 4) return std::nullopt;
      if (out.shape[0] != in.shape[0] || out.shape[3] != in.shape[3]) {
        return str_cat("output ", shape_str(out.shape), " but resizing ", shape_str(in.shape),
                       " keeps the batch and the channels");
      }
      return std::nullopt;
    }
    case OpKind::kSpaceToDepth:
    case OpKind::kDepthToSpace: {
      if (in.rank() != 4 || out.rank() != 4) return std::nullopt;
      const int64_t b = a.block_size;
      if (b < 1) return str_cat("block_size ", b, " must be >= 1");
      std::vector<int64_t> expected = in.shape;
      if (op.kind == OpKind::kSpaceToDepth) {
        if (in.shape[1] % b || in.shape[2] % b) {
          return str_cat("input ", shape_str(in.shape), " is not a whole number of ", b, "x", b,
                         " blocks");
        }
        expected = {in.shape[0], in.shape[1] / b, in.shape[2] / b, in.shape[3] * b * b};
      } else {
        if (in.shape[3] % (b * b)) {
          return str_cat("input ", shape_str(in.shape), " channels are no multiple of ", b * b);
        }
        expected = {in.shape[0], in.shape[1] * b, in.shape[2] * b, in.shape[3] / (b * b)};
      }
      if (out.shape != expected) {
        return str_cat("output ", shape_str(out.shape), " but block ", b, " gives ",
                       shape_str(expected));
      }
      return std::nullopt;
    }
    case OpKind::kSlice: {
      const int rank = in.rank();
      if (static_cast<int>(a.slice_strides.size()) != rank) {
        return str_cat("slice_strides has ", a.slice_strides.size(), " entries for a rank-", rank,
                       " input");
      }
      for (size_t k = 0; k < op.outputs.size(); ++k) {
        const Tensor& o = g.tensor(op.outputs[k]);
        if (!o.is_static()) return std::nullopt;
        const std::vector<int64_t>& b = a.slice_begin[k];
        if (o.rank() != rank || static_cast<int>(b.size()) != rank) {
          return str_cat("output ", k, " ", shape_str(o.shape), " with ", b.size(),
                         " origins does not match the rank-", rank, " input ", shape_str(in.shape));
        }
        for (int d = 0; d < rank; ++d) {
          const int64_t s = a.slice_strides[d];
          if (s < 1 || b[d] < 0 || b[d] + (o.shape[d] - 1) * s >= in.shape[d]) {
            return str_cat("output ", k, " ", shape_str(o.shape), " from ", shape_str(b),
                           " stride ", shape_str(a.slice_strides), " reads past input ",
                           shape_str(in.shape), " on axis ", d);
          }
        }
      }
      return std::nullopt;
    }
    default:  // unary: element-wise, same shape
      if (out.shape != in.shape) {
        return str_cat("output ", shape_str(out.shape), " differs from input ", shape_str(in.shape));
      }
      return std::nullopt;
  }
}

// ---- graph ----------------------------------------------------------------

int Graph::add_tensor(Tensor tensor) {
  check_tensor(tensor);
  tensors.push_back(std::move(tensor));
  return static_cast<int>(tensors.size()) - 1;
}

namespace {
void check_op_fields(const Graph& g, const Op& op, const std::string& label) {
  const int n = static_cast<int>(g.tensors.size());
  check_arg(op.kind != OpKind::kOther || !op.type_name.empty(), "op ", label,
            ": an OTHER op needs the frontend's op name (type_name)");
  for (int id : op.inputs) {
    check_arg(id >= -1 && id < n, "op ", label, ": input tensor id ", id, " out of range [-1, ",
              n - 1, "]");
  }
  for (int id : op.outputs) {
    check_arg(id >= 0 && id < n, "op ", label, ": output tensor id ", id, " out of range [0, ",
              n - 1, "]");
  }
  const Attributes& a = op.attrs;
  check_arg(a.stride_h >= 1 && a.stride_w >= 1, "op ", label, ": stride ", a.stride_h, "x",
            a.stride_w, " must be >= 1");
  check_arg(a.dilation_h >= 1 && a.dilation_w >= 1, "op ", label, ": dilation ", a.dilation_h,
            "x", a.dilation_w, " must be >= 1");
  check_arg(a.kernel_h >= 0 && a.kernel_w >= 0, "op ", label, ": kernel ", a.kernel_h, "x",
            a.kernel_w, " must be >= 0 (0: not a pool)");
  check_arg(a.depth_multiplier >= 1, "op ", label, ": depth_multiplier ", a.depth_multiplier,
            " must be >= 1");
}
}  // namespace

int Graph::add_op(Op op) {
  const int index = static_cast<int>(ops.size());
  check_op_fields(*this, op, op.name.empty() ? str_cat("#", index) : str_cat("'", op.name, "'"));
  ops.push_back(std::move(op));
  return index;
}

const Tensor& Graph::tensor(int id) const {
  check_arg(id >= 0 && id < static_cast<int>(tensors.size()), "tensor id ", id,
            " out of range [0, ", static_cast<int>(tensors.size()) - 1, "]");
  return tensors[id];
}

const Op& Graph::op(int index) const {
  check_arg(index >= 0 && index < static_cast<int>(ops.size()), "op index ", index,
            " out of range [0, ", static_cast<int>(ops.size()) - 1, "]");
  return ops[index];
}

std::string Graph::op_label(int index) const {
  const Op& o = op(index);
  return o.name.empty() ? str_cat("#", index) : str_cat("'", o.name, "'");
}

void Graph::validate() const {
  const int n = static_cast<int>(tensors.size());
  for (const Tensor& t : tensors) check_tensor(t);
  for (int id : inputs) check_arg(id >= 0 && id < n, "graph input tensor id ", id, " out of range");
  for (int id : outputs) check_arg(id >= 0 && id < n, "graph output tensor id ", id, " out of range");
  std::vector<int> producer(n, -1);
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    const Op& o = ops[i];
    const std::string label = str_cat(o.display_type(), " ", op_label(i));
    check_op_fields(*this, o, label);
    for (int id : o.outputs) {
      if (producer[id] >= 0) {
        throw InvalidArgument(str_cat("op ", label, ": output ", tensor_label(*this, id),
                                      " is already produced by op ", op_label(producer[id])));
      }
      producer[id] = i;
    }
    if (auto e = op_arity_error(*this, o)) throw InvalidArgument(str_cat("op ", label, ": ", *e));
    if (auto e = op_shape_error(*this, o)) throw InvalidArgument(str_cat("op ", label, ": ", *e));
  }
}

// ---- window helpers -------------------------------------------------------

int64_t window_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad_before,
                           int64_t pad_after, int64_t dilation) {
  check_arg(stride >= 1 && dilation >= 1, "window_output_size: stride ", stride, " and dilation ",
            dilation, " must be >= 1");
  const int64_t effective = dilation * (kernel - 1) + 1;
  const int64_t span = in + pad_before + pad_after - effective;
  return span < 0 ? 0 : span / stride + 1;
}

Padding tflite_padding(PaddingMode mode, int64_t in_h, int64_t in_w, int64_t kernel_h,
                       int64_t kernel_w, int64_t stride_h, int64_t stride_w, int64_t dilation_h,
                       int64_t dilation_w) {
  check_arg(stride_h >= 1 && stride_w >= 1 && dilation_h >= 1 && dilation_w >= 1,
            "tflite_padding: stride and dilation must be >= 1");
  Padding p;
  if (mode == PaddingMode::kValid) return p;
  auto split = [](int64_t in, int64_t k, int64_t s, int64_t d, int64_t* before, int64_t* after) {
    const int64_t out = (in + s - 1) / s;
    const int64_t effective = (k - 1) * d + 1;
    const int64_t total = std::max<int64_t>((out - 1) * s + effective - in, 0);
    *before = total / 2;
    *after = total - *before;
  };
  split(in_h, kernel_h, stride_h, dilation_h, &p.top, &p.bottom);
  split(in_w, kernel_w, stride_w, dilation_w, &p.left, &p.right);
  return p;
}

std::optional<std::array<int64_t, 2>> window_kernel(const Graph& g, const Op& op) {
  switch (op.kind) {
    case OpKind::kConv2D:
    case OpKind::kDepthwiseConv2D: {
      if (op.inputs.size() < 2 || op.inputs[1] < 0) return std::nullopt;
      const Tensor& f = g.tensor(op.inputs[1]);
      if (f.rank() != 4) return std::nullopt;
      return std::array<int64_t, 2>{f.shape[1], f.shape[2]};
    }
    case OpKind::kMaxPool2D:
    case OpKind::kAveragePool2D:
      return std::array<int64_t, 2>{op.attrs.kernel_h, op.attrs.kernel_w};
    default:
      return std::nullopt;
  }
}

void resolve_tflite_padding(const Graph& g, Op& op, PaddingMode mode) {
  check_arg(!op.inputs.empty() && op.inputs[0] >= 0, "resolve_tflite_padding: ",
            op.display_type(), " has no input");
  const Tensor& in = g.tensor(op.inputs[0]);
  const auto kernel = window_kernel(g, op);
  check_arg(kernel.has_value(), "resolve_tflite_padding: ", op.display_type(),
            " is not a window op with a known kernel");
  check_arg(in.rank() == 4 && in.shape[1] > 0 && in.shape[2] > 0,
            "resolve_tflite_padding: input shape ", shape_str(in.shape),
            " needs static height and width");
  const bool is_conv = op.kind == OpKind::kConv2D || op.kind == OpKind::kDepthwiseConv2D;
  const Attributes& a = op.attrs;
  op.attrs.padding = tflite_padding(mode, in.shape[1], in.shape[2], (*kernel)[0], (*kernel)[1],
                                    a.stride_h, a.stride_w, is_conv ? a.dilation_h : 1,
                                    is_conv ? a.dilation_w : 1);
}

std::optional<std::vector<int64_t>> broadcast_shape(const std::vector<int64_t>& a,
                                                    const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace nacc::ir

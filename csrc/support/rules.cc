// The capability rule table (see rules.h): one predicate per rule, each
// returning the detail of the violation, and the table tying each to its
// name, the op kinds it applies to and its rule text (built from limits.h).
#include "support/rules.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>

#include "arch/fields.h"
#include "arch/limits.h"
#include "arch/registers.h"
#include "common/error.h"
#include "quant/tflite.h"
#include "support/conv_parts.h"
#include "support/pad_fold.h"
#include "support/pool_regions.h"
#include "support/resize_nearest.h"
#include "support/transpose_copy.h"

namespace nacc::support {

using ir::Activation;
using ir::DType;
using ir::Graph;
using ir::Op;
using ir::OperandRole;
using ir::OpKind;
using ir::Tensor;

namespace {

// ---- constants that are not hardware limits --------------------------------

// Output-channel axis of the weights, the only axis per-channel scales may use.
constexpr int kConvOutputChannelAxis = 0;       // CONV_2D filter [O, KH, KW, I]
constexpr int kDepthwiseOutputChannelAxis = 3;  // DEPTHWISE_CONV_2D filter [1, KH, KW, O]
constexpr int kFcOutputChannelAxis = 0;         // FULLY_CONNECTED weights [N, K]
// TFLite's int8 quantization spec fixes the outputs of LOGISTIC and TANH.
constexpr int kLogisticOutputScaleInverse = 256;
constexpr int kLogisticOutputZeroPoint = -128;
constexpr int kTanhOutputScaleInverse = 128;
constexpr int kTanhOutputZeroPoint = 0;
// The fused activations the output stage clamps exactly (common/quant.h).
constexpr Activation kFusableActivations[] = {Activation::kNone, Activation::kRelu,
                                              Activation::kRelu6, Activation::kReluN1To1};
constexpr int kInt8Min = -128, kInt8Max = 127;

// ---- formatting -------------------------------------------------------------

std::string range_text(int64_t lo, int64_t hi) { return str_cat("[", lo, ", ", hi, "]"); }

// "a, b, c or d"
std::string or_list(const std::vector<std::string>& items) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) s += i + 1 == items.size() ? " or " : ", ";
    s += items[i];
  }
  return s;
}

// Shortest decimal that reads back as the same float.
std::string float_str(float v) {
  char buf[32];
  for (int precision = 6; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, static_cast<double>(v));
    if (std::strtof(buf, nullptr) == v) break;
  }
  return buf;
}

std::string quant_str(const ir::QuantParams& q) {
  if (q.empty()) return "no quantization";
  if (q.per_channel()) return str_cat(q.scales.size(), " scales on axis ", q.axis);
  return str_cat("scale ", float_str(q.scales[0]), " zero point ", q.zero_points[0]);
}

std::string join(const std::vector<std::string>& parts, const char* sep = "; ") {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? sep : "") + parts[i];
  return s;
}

std::optional<std::string> joined_or_none(const std::vector<std::string>& parts) {
  if (parts.empty()) return std::nullopt;
  return join(parts);
}

// ---- operand access ---------------------------------------------------------

// An operand with the word that names its role in messages.
struct Operand {
  const Tensor* tensor;
  int id;
  const char* role;  // "input", "output", "weights", "bias"
  std::string label() const {
    return tensor->name.empty() ? str_cat(role, " #", id) : str_cat(role, " '", tensor->name, "'");
  }
};

// Activation inputs and the output (the int8 feature maps / matrices).
std::vector<Operand> activations(const Graph& g, const Op& op) {
  std::vector<Operand> out;
  const ir::OpSignature& sig = ir::op_signature(op.kind);
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (op.inputs[i] >= 0 && sig.role(i) == OperandRole::kActivation) {
      out.push_back({&g.tensor(op.inputs[i]), op.inputs[i], "input"});
    }
  }
  for (int id : op.outputs) out.push_back({&g.tensor(id), id, "output"});
  return out;
}

// Every operand but the parameter tensors.
std::vector<Operand> data_operands(const Graph& g, const Op& op) {
  std::vector<Operand> out;
  const ir::OpSignature& sig = ir::op_signature(op.kind);
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (op.inputs[i] < 0) continue;
    switch (sig.role(i)) {
      case OperandRole::kActivation:
        out.push_back({&g.tensor(op.inputs[i]), op.inputs[i], "input"});
        break;
      case OperandRole::kWeights:
        out.push_back({&g.tensor(op.inputs[i]), op.inputs[i], "weights"});
        break;
      case OperandRole::kBias:
        out.push_back({&g.tensor(op.inputs[i]), op.inputs[i], "bias"});
        break;
      case OperandRole::kParameter:
        break;
    }
  }
  for (int id : op.outputs) out.push_back({&g.tensor(id), id, "output"});
  return out;
}

Operand input(const Graph& g, const Op& op, int i = 0) {
  return {&g.tensor(op.inputs[i]), op.inputs[i], "input"};
}
Operand output(const Graph& g, const Op& op) {
  return {&g.tensor(op.outputs[0]), op.outputs[0], "output"};
}
Operand weights(const Graph& g, const Op& op) {
  return {&g.tensor(op.inputs[1]), op.inputs[1], "weights"};
}
std::optional<Operand> bias(const Graph& g, const Op& op) {
  if (op.inputs.size() < 3 || op.inputs[2] < 0) return std::nullopt;
  return Operand{&g.tensor(op.inputs[2]), op.inputs[2], "bias"};
}

std::array<int64_t, 2> kernel_of(const Graph& g, const Op& op) { return *ir::window_kernel(g, op); }

// (lo, hi) rank of an operand of `kind` with role word `role` (see Operand).
// RESHAPE and TRANSPOSE take tensors up to this rank (views and copies).
constexpr int kMaxCopyRank = 6;

std::pair<int, int> rank_range(OpKind kind, const char* role) {
  const std::string r = role;
  const int max = limits::kMaxTensorRank;
  switch (kind) {
    case OpKind::kConv2D:
    case OpKind::kDepthwiseConv2D:
    case OpKind::kTransposeConv:
      return r == "bias" ? std::pair{1, 1} : std::pair{4, 4};
    case OpKind::kFullyConnected:
      if (r == "weights") return {2, 2};
      if (r == "bias") return {1, 1};
      return {1, max};
    case OpKind::kBatchMatMul:
      return {2, max};
    case OpKind::kMaxPool2D:
    case OpKind::kAveragePool2D:
    case OpKind::kPad:
    case OpKind::kResizeNearest:
    case OpKind::kResizeBilinear:
    case OpKind::kSpaceToDepth:
    case OpKind::kDepthToSpace:
      return {4, 4};
    case OpKind::kMean:
      return r == "input" ? std::pair{4, 4} : std::pair{1, max};
    case OpKind::kReshape:
    case OpKind::kTranspose:
      // Views and byte copies that never read a tensor as NHWC: ShuffleNet's
      // channel shuffle RESHAPE [1,H,W,g,C/g] -> TRANSPOSE(0,1,2,4,3) -> RESHAPE.
      return {0, kMaxCopyRank};
    default:
      return {0, max};
  }
}

// ---- gates ------------------------------------------------------------------

std::optional<std::string> check_npu_op_kind(const Graph&, const Op& op, const SupportConfig&) {
  return std::string("no NPU implementation");
}

// The op kinds the hardware could run but this compiler does not lower yet
// (csrc/compiler/lower.cc): declined up front so that nothing is claimed and
// then fails to compile. Every NPU kind is lowered now; the gate (rule
// "compiler_lowering", only in the table while this list is not empty) stays
// for kinds added to the IR before the compiler lowers them.
const std::vector<ir::OpKind>& not_yet_lowered_kinds() {
  static const std::vector<ir::OpKind> kinds = {};
  return kinds;
}

std::optional<std::string> check_compiler_lowering(const Graph&, const Op& op,
                                                   const SupportConfig& config) {
  if (!config.check_lowering) return std::nullopt;
  return str_cat(op.display_type(), " is not lowered by this compiler version");
}

std::optional<std::string> check_operand_count(const Graph& g, const Op& op,
                                               const SupportConfig&) {
  return ir::op_arity_error(g, op);
}

std::optional<std::string> check_static_shape(const Graph& g, const Op& op, const SupportConfig&) {
  std::vector<std::string> bad;
  for (const Operand& o : data_operands(g, op)) {
    if (!o.tensor->is_static()) bad.push_back(str_cat(o.label(), " has shape ",
                                                      ir::shape_str(o.tensor->shape)));
  }
  return joined_or_none(bad);
}

std::optional<std::string> check_tensor_rank(const Graph& g, const Op& op, const SupportConfig&) {
  std::vector<std::string> bad;
  for (const Operand& o : data_operands(g, op)) {
    const auto [lo, hi] = rank_range(op.kind, o.role);
    const int r = o.tensor->rank();
    if (r < lo || r > hi) {
      bad.push_back(str_cat(o.label(), " has rank ", r, ", expected ",
                            lo == hi ? std::to_string(lo) : str_cat(lo, " to ", hi)));
    }
  }
  return joined_or_none(bad);
}

std::optional<std::string> check_shape_consistency(const Graph& g, const Op& op,
                                                   const SupportConfig&) {
  return ir::op_shape_error(g, op);
}

// ---- data types and quantization ---------------------------------------------

// The op kinds with a 16-bit (16x8, NACC_CTRL.DATA_FORM 01, NACC_SPEC §9)
// lowering: TFLite's int16-activation kernels the device reproduces.
const std::vector<OpKind>& int16_kinds() {
  static const std::vector<OpKind> kinds = {
      OpKind::kConv2D,  OpKind::kDepthwiseConv2D, OpKind::kFullyConnected, OpKind::kMaxPool2D,
      OpKind::kAveragePool2D, OpKind::kAdd,       OpKind::kSub,            OpKind::kReshape,
      OpKind::kConcatenation, OpKind::kPad,            OpKind::kRelu,           OpKind::kRelu6,
      OpKind::kLogistic,      OpKind::kTanh,           OpKind::kMul,            OpKind::kMean,
      OpKind::kQuantize,      OpKind::kLeakyRelu};
  return kinds;
}

bool is_int16_kind(OpKind kind) {
  const auto& k = int16_kinds();
  return std::find(k.begin(), k.end(), kind) != k.end();
}

}  // namespace

std::vector<std::string> data_forms(OpKind kind) {
  std::vector<std::string> forms = {"int8"};
  if (is_int16_kind(kind)) forms.push_back("16x8");
  if (kind == OpKind::kConv2D || kind == OpKind::kFullyConnected) {
    forms.push_back("int8, int4 weights");
  }
  if (kind == OpKind::kFullyConnected) forms.push_back("16x8, int4 weights");
  if (kind == OpKind::kQuantize || kind == OpKind::kMul) forms.push_back("int16 -> int8");
  return forms;
}

namespace {

// QUANTIZE with an int16 input and an int8 output.
bool is_int16_to_int8_quantize(const Graph& g, const Op& op) {
  return op.kind == OpKind::kQuantize && op.inputs.size() == 1 && op.inputs[0] >= 0 &&
         op.outputs.size() == 1 && g.tensor(op.inputs[0]).dtype == DType::kInt16 &&
         g.tensor(op.outputs[0]).dtype == DType::kInt8;
}

// MUL of two int16 operands with an int8 output (compiler/lower.h
// lower_mul16_to_8).
bool is_int16_to_int8_mul(const Graph& g, const Op& op) {
  return op.kind == OpKind::kMul && op.inputs.size() == 2 && op.inputs[0] >= 0 &&
         op.inputs[1] >= 0 && op.outputs.size() == 1 &&
         g.tensor(op.inputs[0]).dtype == DType::kInt16 &&
         g.tensor(op.inputs[1]).dtype == DType::kInt16 &&
         g.tensor(op.outputs[0]).dtype == DType::kInt8;
}

// Every activation operand of `op` is int16 (a 16x8 op).
bool all_int16(const Graph& g, const Op& op) {
  const auto acts = activations(g, op);
  if (acts.empty()) return false;
  for (const Operand& o : acts) {
    if (o.tensor->dtype != DType::kInt16) return false;
  }
  return true;
}

std::optional<std::string> check_activation_dtype(const Graph& g, const Op& op,
                                                  const SupportConfig&) {
  // 16x8: every activation int16, TFLite's arithmetic (the ONNX frontend has
  // no exact oracle for int16, issue 16), a kind with a 16-bit lowering.
  if (all_int16(g, op) && is_int16_kind(op.kind) && op.attrs.requant == ir::RequantMode::kTflite) {
    return std::nullopt;
  }
  // An int16 NCHW <-> NHWC TRANSPOSE: the layout unit's b16 form or the copy
  // passes over each element's bytes (compiler/lower.h lower_transpose).
  if (op.kind == OpKind::kTranspose && all_int16(g, op) &&
      layout_transpose(g.tensor(op.inputs[0]).shape, op.attrs.perm, nullptr, 2)) {
    return std::nullopt;
  }
  // QUANTIZE int16 -> int8 (a 16-bit pass into int16 staging, then an 8-bit
  // LUT pass over its low bytes: compiler/lower.h lower_quantize16_to_8).
  if ((is_int16_to_int8_quantize(g, op) || is_int16_to_int8_mul(g, op)) &&
      op.attrs.requant == ir::RequantMode::kTflite) {
    return std::nullopt;
  }
  std::vector<std::string> bad;
  for (const Operand& o : activations(g, op)) {
    if (o.tensor->dtype != DType::kInt8) {
      bad.push_back(str_cat(o.label(), " is ", ir::dtype_name(o.tensor->dtype)));
    }
  }
  if (!bad.empty() && all_int16(g, op)) {
    bad.back() += is_int16_kind(op.kind)
                      ? " (16x8 with ONNX Runtime's requantization: no exact oracle)"
                      : str_cat(" (", op.display_type(), " has no 16-bit lowering)");
  }
  return joined_or_none(bad);
}

// int16 activations (16x8): TFLite requires zero point 0 on every int16
// tensor (each kernel's Prepare checks it) and one positive scale.
std::optional<std::string> check_int16_quantization(const Graph& g, const Op& op,
                                                    const SupportConfig&) {
  std::vector<std::string> bad;
  for (const Operand& o : activations(g, op)) {
    if (o.tensor->dtype != DType::kInt16) continue;
    const auto& q = o.tensor->quant;
    if (q.scales.size() != 1) {
      bad.push_back(str_cat(o.label(), " has ", quant_str(q)));
    } else if (!(std::isfinite(q.scales[0]) && q.scales[0] > 0)) {
      bad.push_back(str_cat(o.label(), " has scale ", float_str(q.scales[0])));
    } else if (q.zero_points[0] != 0) {
      bad.push_back(str_cat(o.label(), " has zero point ", q.zero_points[0]));
    }
  }
  return joined_or_none(bad);
}

std::optional<std::string> check_activation_quantization(const Graph& g, const Op& op,
                                                         const SupportConfig&) {
  std::vector<std::string> bad;
  for (const Operand& o : activations(g, op)) {
    if (o.tensor->dtype != DType::kInt8) continue;  // activation_dtype's business
    const auto& q = o.tensor->quant;
    if (q.scales.size() != 1) {
      bad.push_back(str_cat(o.label(), " has ", quant_str(q)));
    } else if (!(std::isfinite(q.scales[0]) && q.scales[0] > 0)) {
      bad.push_back(str_cat(o.label(), " has scale ", float_str(q.scales[0])));
    } else if (q.zero_points[0] < kInt8Min || q.zero_points[0] > kInt8Max) {
      bad.push_back(str_cat(o.label(), " has zero point ", q.zero_points[0]));
    }
  }
  return joined_or_none(bad);
}

std::optional<std::string> check_weights_dtype(const Graph& g, const Op& op, const SupportConfig&) {
  const Operand w = weights(g, op);
  const auto& q = w.tensor->quant;
  const DType dt = w.tensor->dtype;
  // int4 depthwise weights are the int4_depthwise rule's business.
  if (dt != DType::kInt8 && dt != DType::kInt4) return str_cat(w.label(), " is ", ir::dtype_name(dt));
  if (dt == DType::kInt4 && all_int16(g, op) && op.kind != OpKind::kFullyConnected) {
    return str_cat(w.label(), " is int4 with int16 activations (16x8 with int4 weights: "
                              "FULLY_CONNECTED only, TFLite's version 13)");
  }
  if (q.empty()) return str_cat(w.label(), " has no quantization");
  // The channel's text is built only when a check fails (this runs for every
  // channel of every MAC op on each prepare, cached ones too).
  const auto where = [&](size_t c) {
    return q.per_channel() ? str_cat(" (channel ", c, ")") : std::string();
  };
  for (size_t c = 0; c < q.scales.size(); ++c) {
    if (q.zero_points[c] != 0) {
      return str_cat(w.label(), " has zero point ", q.zero_points[c], where(c));
    }
    if (!(std::isfinite(q.scales[c]) && q.scales[c] > 0)) {
      return str_cat(w.label(), " has scale ", float_str(q.scales[c]), where(c));
    }
  }
  return std::nullopt;
}

std::optional<std::string> check_int4_depthwise(const Graph& g, const Op& op, const SupportConfig&) {
  const Operand w = weights(g, op);
  if (w.tensor->dtype == DType::kInt4) return str_cat(w.label(), " is int4");
  return std::nullopt;
}

int output_channel_axis(OpKind kind) {
  return kind == OpKind::kDepthwiseConv2D ? kDepthwiseOutputChannelAxis
         : kind == OpKind::kConv2D        ? kConvOutputChannelAxis
                                          : kFcOutputChannelAxis;
}

std::optional<std::string> check_weights_per_channel_axis(const Graph& g, const Op& op,
                                                          const SupportConfig&) {
  const Operand w = weights(g, op);
  const auto& q = w.tensor->quant;
  const int expected = output_channel_axis(op.kind);
  if (q.per_channel() && q.axis != expected) {
    return str_cat(w.label(), " has ", q.scales.size(), " scales on axis ", q.axis,
                   ", expected axis ", expected);
  }
  return std::nullopt;
}

std::optional<std::string> check_weights_constant(const Graph& g, const Op& op,
                                                  const SupportConfig&) {
  std::vector<std::string> bad;
  const Operand w = weights(g, op);
  if (!w.tensor->is_constant()) bad.push_back(str_cat(w.label(), " is not constant"));
  if (auto b = bias(g, op); b && !b->tensor->is_constant()) {
    bad.push_back(str_cat(b->label(), " is not constant"));
  }
  return joined_or_none(bad);
}

std::optional<std::string> check_bias_dtype(const Graph& g, const Op& op, const SupportConfig&) {
  auto b = bias(g, op);
  const bool i16 = all_int16(g, op);
  if (!b || b->tensor->dtype == (i16 ? DType::kInt64 : DType::kInt32)) return std::nullopt;
  // 16x8: TFLite's int64 bias. With an int32 bias TFLite's 16x8 kernels
  // accumulate in 32 bits and requantize with the 32-bit multiplier, which the
  // 16-bit form's 48-bit accumulator and 16x8 output stage do not reproduce.
  return str_cat(b->label(), " is ", ir::dtype_name(b->tensor->dtype),
                 i16 ? " with int16 activations (TFLite then accumulates in 32 bits)"
                     : " (int64 bias only with int16 activations)");
}

// 16x8: bias entries of 8 bytes whose values fit 40 bits (NACC_SPEC §9).
std::optional<std::string> check_bias_16x8_range(const Graph& g, const Op& op,
                                                 const SupportConfig&) {
  auto b = bias(g, op);
  if (!b || b->tensor->dtype != DType::kInt64 || !b->tensor->is_constant() || !b->tensor->data) {
    return std::nullopt;
  }
  const auto& d = *b->tensor->data;
  constexpr int64_t lim = int64_t{1} << (limits::kBias16Bits - 1);
  for (size_t i = 0; i + 8 <= d.size(); i += 8) {
    uint64_t u = 0;
    for (int k = 0; k < 8; ++k) u |= uint64_t(d[i + size_t(k)]) << (8 * k);
    const int64_t v = int64_t(u);
    if (v < -lim || v >= lim) return str_cat(b->label(), " entry ", i / 8, " is ", v);
  }
  return std::nullopt;
}

std::optional<std::string> check_same_quantization(const Graph& g, const Op& op,
                                                   const SupportConfig&) {
  using OK = ir::Attributes::OnnxKernel;
  if (op.kind == OpKind::kAveragePool2D && op.attrs.onnx_kernel != OK::kNone) {
    // ONNX Runtime's QLinearAveragePool and its unfused float AveragePool
    // both requantize (the float32 pool modes, NACC_ACT_PARA.POOL_FP32_MODE).
    return std::nullopt;
  }
  const Operand out = output(g, op);
  std::vector<std::string> bad;
  for (const Operand& o : activations(g, op)) {
    if (o.id != out.id && !(o.tensor->quant == out.tensor->quant)) {
      bad.push_back(str_cat(o.label(), " has ", quant_str(o.tensor->quant)));
    }
  }
  if (bad.empty()) return std::nullopt;
  bad.push_back(str_cat(out.label(), " has ", quant_str(out.tensor->quant)));
  return join(bad, ", ");
}

std::optional<std::string> check_sigmoid_tanh_output_quantization(const Graph& g, const Op& op,
                                                                  const SupportConfig&) {
  // A frontend-supplied table is exact for any output quantization.
  if (op.attrs.lut.size() == static_cast<size_t>(limits::kLutEntries)) return std::nullopt;
  const Operand out = output(g, op);
  const auto& q = out.tensor->quant;
  const bool logistic = op.kind == OpKind::kLogistic;
  if (all_int16(g, op)) {
    // 16x8 (the 16-bit table modes): output scale 2^-15, zero point 0; an input
    // scale whose multiplier keeps x * multiplier within int32.
    if (!(q.scales.size() == 1 && q.scales[0] == 1.0f / 32768.0f && q.zero_points[0] == 0)) {
      return str_cat(out.label(), " has ", quant_str(q), " (int16: scale 1/32768, zero point 0)");
    }
    const auto& qi = input(g, op).tensor->quant;
    if (qi.scales.size() != 1) return std::nullopt;  // int16_quantization says why
    try {
      tflite_sigmoid_tanh16_params(!logistic, qi.scales[0]);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::nullopt;
  }
  const int inverse = logistic ? kLogisticOutputScaleInverse : kTanhOutputScaleInverse;
  const int zero_point = logistic ? kLogisticOutputZeroPoint : kTanhOutputZeroPoint;
  if (q.scales.size() == 1 && q.scales[0] == 1.0f / static_cast<float>(inverse) &&
      q.zero_points[0] == zero_point) {
    return std::nullopt;
  }
  return str_cat(out.label(), " has ", quant_str(q));
}

// HARD_SWISH, LEAKY_RELU and QUANTIZE run TFLite's reference arithmetic from a
// table: the table builder is the rule (it declines exactly the quantizations
// TFLite's Prepare rejects or its arithmetic cannot evaluate).
std::optional<std::string> check_lut_arithmetic(const Graph& g, const Op& op,
                                                const SupportConfig&) {
  if (op.attrs.lut.size() == static_cast<size_t>(limits::kLutEntries)) return std::nullopt;
  const Tensor& in = *input(g, op).tensor;
  const Tensor& out = *output(g, op).tensor;
  const auto usable = [](const Tensor& t) {  // else activation_dtype / _quantization decline
    return t.dtype == DType::kInt8 && t.quant.scales.size() == 1 &&
           std::isfinite(t.quant.scales[0]) && t.quant.scales[0] > 0 &&
           t.quant.zero_points[0] >= kInt8Min && t.quant.zero_points[0] <= kInt8Max;
  };
  if (!usable(in) || !usable(out)) return std::nullopt;
  const float is = in.quant.scales[0], os = out.quant.scales[0];
  const int32_t iz = in.quant.zero_points[0], oz = out.quant.zero_points[0];
  try {
    switch (op.kind) {
      case OpKind::kHardSwish: lut_tflite_hard_swish(is, iz, os, oz); break;
      case OpKind::kLeakyRelu: lut_tflite_leaky_relu(is, iz, os, oz, op.attrs.alpha); break;
      default: lut_tflite_requantize(is, iz, os, oz); break;
    }
  } catch (const InvalidArgument& e) {
    std::string what = e.what();
    const size_t colon = what.find(": ");  // drop the builder's name
    return colon == std::string::npos ? what : what.substr(colon + 2);
  }
  return std::nullopt;
}

std::optional<std::string> check_frontend_lut(const Graph&, const Op& op, const SupportConfig&) {
  const size_t n = op.attrs.lut.size();
  if (n == 0 || n == static_cast<size_t>(limits::kLutEntries)) return std::nullopt;
  return str_cat("the frontend's lookup table has ", n, " entries");
}

// ---- shapes -------------------------------------------------------------------

std::optional<std::string> check_batch_size(const Graph& g, const Op& op, const SupportConfig&) {
  return batch_wise(g, op);
}

std::optional<std::string> check_feature_map_dims(const Graph& g, const Op& op,
                                                  const SupportConfig&) {
  std::vector<std::string> bad;
  for (const Operand& o : activations(g, op)) {
    for (size_t d = 0; d < o.tensor->shape.size(); ++d) {
      if (o.tensor->shape[d] > limits::kMaxFeatureMapDim) {
        bad.push_back(str_cat(o.label(), " dimension ", d, " is ", o.tensor->shape[d]));
      }
    }
  }
  return joined_or_none(bad);
}

// Bytes of a static tensor, saturated at INT64_MAX (dimensions are not
// bounded yet when this runs: feature_map_dims is not a gate).
int64_t tensor_bytes_saturated(const Tensor& t) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t bytes = ir::dtype_size(t.dtype);
  for (int64_t d : t.shape) {
    if (d > 0 && bytes > kMax / d) return kMax;
    bytes *= d;
  }
  return bytes;
}

// Every runtime tensor of a Program lives in one region (its own for a
// partition input or output, the scratch region between ops) and an op's
// weights, bias and requantization arrays in the constant region; region
// offsets are 29 bits (NACC_SPEC §6, limits.h), so none may exceed 2^29 bytes.
// Checked before anything is compiled: the Program loader would reject the
// Program only after the compiler had tiled the whole tensor.
std::optional<std::string> check_region_size(const Graph& g, const Op& op, const SupportConfig&) {
  std::vector<std::string> bad;
  int64_t constant_bytes = 0;
  for (const Operand& o : data_operands(g, op)) {
    const int64_t bytes = tensor_bytes_saturated(*o.tensor);
    if (o.tensor->is_constant()) {
      constant_bytes = constant_bytes > std::numeric_limits<int64_t>::max() - bytes
                           ? std::numeric_limits<int64_t>::max()
                           : constant_bytes + bytes;
      continue;
    }
    if (bytes > limits::kMaxRegionBytes) {
      bad.push_back(str_cat(o.label(), " ", ir::shape_str(o.tensor->shape), " is ", bytes, " bytes"));
    }
  }
  if (constant_bytes > limits::kMaxRegionBytes) {
    bad.push_back(str_cat("its constant operands are ", constant_bytes, " bytes"));
  }
  return joined_or_none(bad);
}

// The Program container stores op names and the names of the tensors that
// cross a partition boundary or are dumped per op (docs/command_stream.md §9).
std::optional<std::string> check_program_strings(const Graph& g, const Op& op,
                                                 const SupportConfig&) {
  std::vector<std::string> bad;
  if (op.name.size() > size_t(limits::kMaxProgramStringBytes)) {
    bad.push_back(str_cat("the op name is ", op.name.size(), " bytes"));
  }
  for (const Operand& o : activations(g, op)) {
    if (o.tensor->name.size() > size_t(limits::kMaxProgramStringBytes)) {
      bad.push_back(str_cat(o.role, " #", o.id, " has a name of ", o.tensor->name.size(), " bytes"));
    }
  }
  return joined_or_none(bad);
}

std::optional<std::string> check_elementwise_broadcast(const Graph& g, const Op& op,
                                                       const SupportConfig&) {
  const Tensor& a = *input(g, op, 0).tensor;
  const Tensor& b = *input(g, op, 1).tensor;
  const Tensor& out = *output(g, op).tensor;
  // The element-wise unit streams a runtime IFM of the output's shape and
  // re-reads the small second operand by DMA (NACC_SPEC §1): exact for a
  // per-channel vector [.., 1, 1, C] and for a scalar (a constant is expanded
  // to C entries; a runtime scalar re-read once per element of the
  // [1, H, W*C, 1] view, so W*C must fit the 16-bit width field). ADD and MUL
  // may swap their operands, SUB may not (csrc/compiler/lower.cc,
  // lower_elementwise).
  const auto is_channel_vector = [&](const Tensor& t) {
    for (int d = 0; d + 1 < t.rank(); ++d) {
      if (t.shape[d] != 1) return false;
    }
    return t.rank() >= 1 && out.rank() >= 1 && t.shape.back() == out.shape.back();
  };
  const int64_t row = out.rank() >= 2 ? out.shape[out.rank() - 2] * out.shape.back()
                                      : (out.rank() == 1 ? out.shape[0] : 1);
  const auto second_ok = [&](const Tensor& second) {
    if (second.shape == out.shape || is_channel_vector(second)) return true;
    return second.elements() == 1 && (second.is_constant() || row <= limits::kMaxFeatureMapDim);
  };
  const auto order_ok = [&](const Tensor& first, const Tensor& second) {
    return first.shape == out.shape && !first.is_constant() && second_ok(second);
  };
  if (order_ok(a, b) || (op.kind != OpKind::kSub && order_ok(b, a))) return std::nullopt;
  const auto describe = [](const Tensor& t) {
    return str_cat(t.is_constant() ? "constant " : "", ir::shape_str(t.shape));
  };
  std::string detail = str_cat("operands ", describe(a), " and ", describe(b));
  if ((a.elements() == 1 || b.elements() == 1) && row > limits::kMaxFeatureMapDim) {
    detail += str_cat(" (a runtime scalar against rows of ", row, " elements; W*C must be <= ",
                      limits::kMaxFeatureMapDim, ")");
  }
  return detail;
}

// ---- windows ------------------------------------------------------------------

bool stride_in_range(const Op& op) {
  const auto ok = [](int s) { return s >= limits::kMinStride && s <= limits::kMaxStride; };
  return ok(op.attrs.stride_h) && ok(op.attrs.stride_w);
}

// A CONV_2D of a stride above 3 or a kernel above 15 runs as a space-to-depth
// gather and a convolution within the limits (compiler/lower.h
// lower_space_to_depth); the kernel and stride rules pass it when that form
// fits and quote why it does not otherwise.
std::optional<std::string> check_kernel_size(const Graph& g, const Op& op, const SupportConfig&) {
  const auto [kh, kw] = kernel_of(g, op);
  const auto ok = [](int64_t k) { return k >= limits::kMinKernel && k <= limits::kMaxKernel; };
  if (ok(kh) && ok(kw)) return std::nullopt;
  const std::string what = str_cat("kernel ", kh, "x", kw);
  if (kh < limits::kMinKernel || kw < limits::kMinKernel || !needs_space_to_depth(g, op)) return what;
  // A kernel above 15 along an axis of stride 1 has no gather factor.
  if ((kh > limits::kMaxKernel && op.attrs.stride_h == 1) ||
      (kw > limits::kMaxKernel && op.attrs.stride_w == 1)) {
    return what;
  }
  if (!stride_in_range(op)) return std::nullopt;  // the stride rule says why
  if (auto e = space_to_depth_error(g, op)) return str_cat(what, ": ", *e);
  return std::nullopt;
}

std::optional<std::string> check_stride(const Graph& g, const Op& op, const SupportConfig&) {
  if (stride_in_range(op)) return std::nullopt;
  const std::string what = str_cat("stride ", op.attrs.stride_h, "x", op.attrs.stride_w);
  if (op.attrs.stride_h < limits::kMinStride || op.attrs.stride_w < limits::kMinStride ||
      !needs_space_to_depth(g, op)) {
    return what;
  }
  if (auto e = space_to_depth_error(g, op)) return str_cat(what, ": ", *e);
  return std::nullopt;
}

// Dilation > 1 runs as d_h x d_w phases of undilated windows (compiler/lower.h
// lower_conv_parts): stride 1, every phase within NACC_PADDING and reading
// an input position.
std::optional<std::string> check_dilation(const Graph& g, const Op& op, const SupportConfig&) {
  const auto& a = op.attrs;
  if (a.dilation_h <= limits::kMaxDilation && a.dilation_w <= limits::kMaxDilation) {
    return std::nullopt;
  }
  const std::string what = str_cat("dilation ", a.dilation_h, "x", a.dilation_w);
  if (a.stride_h != 1 || a.stride_w != 1) {
    return str_cat(what, " with stride ", a.stride_h, "x", a.stride_w);
  }
  const ConvPhases p = conv_phases(g, op);
  const ir::Tensor& w = *weights(g, op).tensor;
  if (auto e = dilation_phase_error(p.rows, int(w.shape[1]))) return str_cat(what, ": ", *e);
  if (auto e = dilation_phase_error(p.cols, int(w.shape[2]))) return str_cat(what, ": ", *e);
  const int64_t groups = op.kind == OpKind::kConv2D ? std::max(1, conv_groups(g, op)) : 1;
  const int64_t parts = groups * int64_t(p.rows.size()) * int64_t(p.cols.size());
  if (parts > kMaxConvParts) return str_cat(what, ": ", parts, " parts");
  return std::nullopt;
}

std::optional<std::string> check_padding(const Graph& g, const Op& op, const SupportConfig&) {
  ir::Padding p = op.attrs.padding;
  if (op.kind == OpKind::kPad) {
    // Rank 4 (gate); 4 entries unless shape_consistency could not look
    // because of unsupported options, which decline the op anyway.
    if (op.attrs.paddings.size() != 4) return std::nullopt;
    p = {op.attrs.paddings[1][0], op.attrs.paddings[1][1], op.attrs.paddings[2][0],
         op.attrs.paddings[2][1]};
  }
  if ((op.kind == OpKind::kConv2D || op.kind == OpKind::kDepthwiseConv2D) &&
      (op.attrs.dilation_h > 1 || op.attrs.dilation_w > 1) && op.attrs.stride_h == 1 &&
      op.attrs.stride_w == 1 && p.top >= 0 && p.bottom >= 0 && p.left >= 0 && p.right >= 0) {
    return std::nullopt;  // the phases' padding: the dilation rule checks it
  }
  if (op.kind == OpKind::kConv2D && needs_space_to_depth(g, op) && p.top >= 0 && p.bottom >= 0 &&
      p.left >= 0 && p.right >= 0 && !space_to_depth_error(g, op)) {
    return std::nullopt;  // the gathered window's padding: the kernel / stride rules check it
  }
  if (is_region_average_pool(op)) {
    // Region passes take any padding below the window: each edge row or
    // column with more than 5 becomes its own clipped window.
    if (p.top >= 0 && p.bottom >= 0 && p.left >= 0 && p.right >= 0 && p.top < op.attrs.kernel_h &&
        p.bottom < op.attrs.kernel_h && p.left < op.attrs.kernel_w && p.right < op.attrs.kernel_w) {
      return std::nullopt;
    }
    return str_cat("padding top/bottom/left/right ", p.top, "/", p.bottom, "/", p.left, "/",
                   p.right, " of a ", op.attrs.kernel_h, "x", op.attrs.kernel_w, " window");
  }
  const auto ok = [](int64_t v) { return v >= 0 && v <= limits::kMaxPadding; };
  if (ok(p.top) && ok(p.bottom) && ok(p.left) && ok(p.right)) return std::nullopt;
  return str_cat("padding top/bottom/left/right ", p.top, "/", p.bottom, "/", p.left, "/",
                 p.right);
}

std::vector<int> allowed_depth_multipliers() {
  std::vector<int> v;
  for (int log2 = 0; log2 <= limits::kMaxDepthMultiplierLog2; ++log2) v.push_back(1 << log2);
  return v;
}

std::optional<std::string> check_depth_multiplier(const Graph&, const Op& op,
                                                  const SupportConfig&) {
  const auto allowed = allowed_depth_multipliers();
  if (std::count(allowed.begin(), allowed.end(), op.attrs.depth_multiplier)) return std::nullopt;
  return str_cat("depth multiplier ", op.attrs.depth_multiplier);
}

// Groups run as one convolution per group over its channel slice
// (compiler/lower.h lower_conv_parts).
std::optional<std::string> check_grouped_convolution(const Graph& g, const Op& op,
                                                     const SupportConfig&) {
  const int64_t in_ch = input(g, op).tensor->shape[3];
  const int64_t filter_ch = weights(g, op).tensor->shape[3];
  if (in_ch == filter_ch) return std::nullopt;
  const int groups = conv_groups(g, op);
  if (groups == 0) {
    return str_cat("filter input channels ", filter_ch, ", input channels ", in_ch,
                   ", output channels ", g.tensor(op.outputs[0]).shape[3]);
  }
  if (groups > kMaxConvParts) return str_cat(groups, " groups");
  return std::nullopt;
}

// TRANSPOSE_CONV as phase convolutions (compiler/lower.h lower_transpose_conv).
std::optional<std::string> check_transpose_conv(const Graph& g, const Op& op, const SupportConfig&) {
  if (weights(g, op).tensor->dtype == DType::kInt4) return std::string("int4 weights");
  return transpose_conv_error(g, op);
}

std::optional<std::string> check_max_pool_window(const Graph&, const Op& op,
                                                 const SupportConfig&) {
  const auto ok = [](int k) { return k >= limits::kMinKernel && k <= limits::kMaxKernel; };
  if (ok(op.attrs.kernel_h) && ok(op.attrs.kernel_w)) return std::nullopt;
  return str_cat("window ", op.attrs.kernel_h, "x", op.attrs.kernel_w);
}

// The pooling unit's average pool (2x2, stride 2); TFLite's any other window
// as depthwise region passes (compiler/lower.h lower_average_pool_regions) or,
// for one window over the whole input, the ones-operand matrix product.
// The 16-bit forms of the units (NACC_SPEC §9): an average pool on the
// pooling unit only (the region passes and the ones matrix product are 8-bit
// depthwise / matrix passes), element-wise ops of two runtime int16 operands.
std::optional<std::string> check_int16_form(const Graph& g, const Op& op, const SupportConfig&) {
  if (is_int16_to_int8_mul(g, op)) {
    const auto& a = g.tensor(op.inputs[0]);
    const auto& b = g.tensor(op.inputs[1]);
    if (a.is_constant() || b.is_constant()) return std::string("int16 -> int8 MUL of a constant");
    if (a.shape != b.shape || a.shape != g.tensor(op.outputs[0]).shape) {
      return std::string("int16 -> int8 MUL with a broadcast operand");
    }
    return std::nullopt;
  }
  if (!all_int16(g, op)) return std::nullopt;
  const auto& a = op.attrs;
  if (op.kind == OpKind::kAveragePool2D &&
      !(a.kernel_h == limits::kAvgPoolKernel && a.kernel_w == limits::kAvgPoolKernel &&
        a.stride_h == limits::kAvgPoolStride && a.stride_w == limits::kAvgPoolStride) &&
      !(a.kernel_h <= limits::kMaxKernel && a.kernel_w <= limits::kMaxKernel &&
        int64_t(a.kernel_h) * a.kernel_w <= kMaxAveragePoolCells16)) {
    return str_cat("int16 window ", a.kernel_h, "x", a.kernel_w, " stride ", a.stride_h, "x",
                   a.stride_w);
  }
  if (op.kind == OpKind::kConv2D || op.kind == OpKind::kDepthwiseConv2D) {
    // The group / dilation-phase parts (compiler/lower.h lower_conv_parts)
    // are 8-bit passes.
    if (a.dilation_h > 1 || a.dilation_w > 1) {
      return str_cat("int16 dilation ", a.dilation_h, "x", a.dilation_w);
    }
    if (op.kind == OpKind::kConv2D && conv_groups(g, op) > 1) {
      return str_cat("int16 grouped convolution (", conv_groups(g, op), " groups)");
    }
  }
  if (op.kind == OpKind::kLeakyRelu) {
    const auto& qi = g.tensor(op.inputs[0]).quant;
    const auto& qo = g.tensor(op.outputs[0]).quant;
    if (qi.scales.size() == 1 && qo.scales.size() == 1) {
      const float alpha_real = qi.scales[0] * op.attrs.alpha / qo.scales[0];
      bool ok = std::isfinite(alpha_real);
      if (ok && alpha_real < 0.0f) {
        try {
          const QuantizedMultiplier q = quantize_multiplier_signed(double(alpha_real));
          ok = q.multiplier != std::numeric_limits<int32_t>::min() && q.shift <= 15;
        } catch (const InvalidArgument&) {
          ok = false;
        }
      }
      if (!ok) return str_cat("int16 LEAKY_RELU with alpha ", op.attrs.alpha);
    }
  }
  if (op.kind == OpKind::kMean) {
    const auto& s = input(g, op).tensor->shape;
    if (s.size() == 4 && (s[1] > limits::kMaxKernel || s[2] > limits::kMaxKernel) &&
        !int16_sum_split(s[1] * s[2])) {
      return str_cat("int16 MEAN over ", s[1], "x", s[2], " = ", s[1] * s[2], " cells");
    }
  }
  if (op.kind == OpKind::kAdd || op.kind == OpKind::kSub || op.kind == OpKind::kMul) {
    for (size_t i = 0; i < 2 && i < op.inputs.size(); ++i) {
      if (op.inputs[i] >= 0 && g.tensor(op.inputs[i]).is_constant()) {
        return str_cat("int16 input ", i, " is a constant");
      }
    }
  }
  if (op.kind == OpKind::kMul && op.inputs.size() == 2) {
    const auto& q1 = g.tensor(op.inputs[0]).quant;
    const auto& q2 = g.tensor(op.inputs[1]).quant;
    const auto& qo = g.tensor(op.outputs[0]).quant;
    if (q1.scales.size() == 1 && q2.scales.size() == 1 && qo.scales.size() == 1 &&
        q1.scales[0] * q2.scales[0] / qo.scales[0] >= 1.0f) {
      return str_cat("int16 MUL with s1 * s2 / s_out = ", q1.scales[0] * q2.scales[0] / qo.scales[0],
                     " >= 1");
    }
  }
  return std::nullopt;
}

std::optional<std::string> check_avg_pool_window(const Graph& g, const Op& op,
                                                 const SupportConfig&) {
  const auto& a = op.attrs;
  if (a.kernel_h == limits::kAvgPoolKernel && a.kernel_w == limits::kAvgPoolKernel &&
      a.stride_h == limits::kAvgPoolStride && a.stride_w == limits::kAvgPoolStride) {
    return std::nullopt;
  }
  const std::string what =
      str_cat("window ", a.kernel_h, "x", a.kernel_w, ", stride ", a.stride_h, "x", a.stride_w);
  if (op.attrs.onnx_kernel != ir::Attributes::OnnxKernel::kNone) {
    // The pooling unit's float32 modes take the max pool's windows.
    if (a.kernel_h <= limits::kMaxKernel && a.kernel_w <= limits::kMaxKernel &&
        a.stride_h <= limits::kMaxStride && a.stride_w <= limits::kMaxStride) {
      return std::nullopt;
    }
    return str_cat(what, " (ONNX Runtime's float average pool: windows up to ", limits::kMaxKernel,
                   ", strides up to ", limits::kMaxStride, ")");
  }
  const auto& is = input(g, op).tensor->shape;
  const auto& os = output(g, op).tensor->shape;
  if (a.kernel_h <= limits::kMaxKernel && a.kernel_w <= limits::kMaxKernel) {
    const size_t ny = average_pool_bands(int(os[1]), int(is[1]), a.kernel_h, a.stride_h,
                                         int(a.padding.top)).size();
    const size_t nx = average_pool_bands(int(os[2]), int(is[2]), a.kernel_w, a.stride_w,
                                         int(a.padding.left)).size();
    // A window with no input cell is the padding rule's (padding below the window).
    if (ny * nx <= size_t(kMaxAveragePoolRegions)) return std::nullopt;
    return str_cat(what, " needs ", ny * nx, " region passes");
  }
  const bool one_window = os[1] == 1 && os[2] == 1 &&
                          a.kernel_h - a.padding.top >= is[1] && a.kernel_w - a.padding.left >= is[2];
  if (one_window && is[1] * is[2] <= kMaxAveragePoolCells) return std::nullopt;
  if (one_window) return str_cat(what, " over ", is[1] * is[2], " cells");
  return what;
}

// ---- per-kind options -----------------------------------------------------------

std::optional<std::string> check_unsupported_options(const Graph&, const Op& op,
                                                     const SupportConfig&) {
  const auto& opts = op.attrs.unsupported_options;
  if (opts.empty()) return std::nullopt;
  return str_cat(opts.size() == 1 ? "option " : "options ", join(opts, ", "));
}

std::optional<std::string> check_fused_activation(const Graph&, const Op& op,
                                                  const SupportConfig&) {
  for (Activation a : kFusableActivations) {
    if (op.attrs.activation == a) return std::nullopt;
  }
  return str_cat("fused activation ", ir::activation_name(op.attrs.activation));
}

// MEAN runs over H and W of a 4-D input (the rank gate held).
std::optional<std::string> check_mean_axes(const Graph& g, const Op& op, const SupportConfig&) {
  std::set<int> axes;
  for (int a : op.attrs.axes) axes.insert(a < 0 ? a + 4 : a);
  if (axes == std::set<int>{1, 2}) return std::nullopt;
  std::vector<std::string> items;
  for (int a : op.attrs.axes) items.push_back(std::to_string(a));
  return str_cat("axes [", join(items, ", "), "]");
}

// A depthwise window up to 15 x 15, else the ones-operand matrix product
// (K = H * W in a 16-bit field).
std::optional<std::string> check_mean_window(const Graph& g, const Op& op, const SupportConfig&) {
  const auto& s = input(g, op).tensor->shape;
  if (s[1] <= limits::kMaxKernel && s[2] <= limits::kMaxKernel) return std::nullopt;
  if (s[1] * s[2] <= limits::kMaxFeatureMapDim) return std::nullopt;
  return str_cat("height x width ", s[1], "x", s[2], " = ", s[1] * s[2], " cells");
}

std::optional<std::string> check_pad_axes(const Graph&, const Op& op, const SupportConfig&) {
  const auto& p = op.attrs.paddings;
  if (p.size() != 4) return std::nullopt;  // see check_padding
  std::vector<std::string> bad;
  if (p[0][0] || p[0][1]) bad.push_back(str_cat("batch ", p[0][0], "/", p[0][1]));
  if (p[3][0] || p[3][1]) bad.push_back(str_cat("channels ", p[3][0], "/", p[3][1]));
  if (bad.empty()) return std::nullopt;
  return str_cat("pads ", join(bad, ", "));
}

// How the PAD lowers (support/pad_fold.h): folded into its convolution's
// padding or a standalone identity pass; otherwise why neither works.
std::optional<std::string> check_pad_lowering(const Graph& g, const Op& op,
                                              const SupportConfig& config) {
  const int index = static_cast<int>(&op - g.ops.data());
  if (index < 0 || index >= static_cast<int>(g.ops.size())) return std::nullopt;
  const auto& p = op.attrs.paddings;
  if (p.size() != 4) return std::nullopt;  // see check_padding
  // Batch / channel padding and a side beyond the register are pad_axes' and
  // padding's to report.
  if (p[0][0] || p[0][1] || p[3][0] || p[3][1]) return std::nullopt;
  for (int d : {1, 2}) {
    if (p[d][0] > limits::kMaxPadding || p[d][1] > limits::kMaxPadding) return std::nullopt;
  }
  std::string why;
  if (pad_lowering(g, index, config, &why)) return std::nullopt;
  return why;
}

// CONCATENATION places each input's channels at its offset of every output
// pixel, or its rows / columns at their offset (compiler/lower.h
// lower_concatenation): the last three axes of the NHWC view, runtime inputs.
std::optional<std::string> check_concat_axis(const Graph& g, const Op& op, const SupportConfig&) {
  const Tensor& out = *output(g, op).tensor;
  const int axis = op.attrs.axis < 0 ? op.attrs.axis + out.rank() : op.attrs.axis;
  std::vector<std::string> bad;
  // The channels, columns or rows of the NHWC view with leading ones (not the batch).
  if (axis < 0 || axis >= out.rank() || 4 - out.rank() + axis < 1) {
    bad.push_back(str_cat("axis ", op.attrs.axis, " of rank ", out.rank()));
  }
  if (op.attrs.activation != Activation::kNone) {
    bad.push_back(str_cat("fused activation ", ir::activation_name(op.attrs.activation)));
  }
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (op.inputs[i] >= 0 && g.tensor(op.inputs[i]).is_constant()) {
      bad.push_back(str_cat("input ", i, " is a constant"));
    }
  }
  return joined_or_none(bad);
}

// At most this many outputs of one SLICE / SPLIT (copy passes per op, as
// kMaxConvParts; docs/device_model.md §4).
constexpr int kMaxSliceOutputs = 256;

// SLICE (and STRIDED_SLICE, SPLIT, SPLIT_V) is one 1x1 pool copy per output
// whose DMA reads the output's window of the input (compiler/lower.h
// lower_slice): contiguous channels, one image per output, a runtime input.
std::optional<std::string> check_slice_window(const Graph& g, const Op& op, const SupportConfig&) {
  const Tensor& in = *input(g, op).tensor;
  const int rank = in.rank();
  std::vector<std::string> bad;
  if (in.is_constant()) bad.push_back("the input is a constant");
  if (op.outputs.size() > size_t(kMaxSliceOutputs)) {
    bad.push_back(str_cat(op.outputs.size(), " outputs"));
  }
  if (rank >= 1 && op.attrs.slice_strides.size() == size_t(rank)) {
    const int64_t cs = op.attrs.slice_strides.back();
    for (size_t k = 0; k < op.outputs.size(); ++k) {
      const Tensor& o = g.tensor(op.outputs[k]);
      if (o.rank() != rank) continue;  // shape_consistency's business
      if (cs != 1 && o.shape.back() > 1) {
        bad.push_back(str_cat("channel stride ", cs));
        break;
      }
    }
    if (rank == 4) {
      for (size_t k = 0; k < op.outputs.size(); ++k) {
        const Tensor& o = g.tensor(op.outputs[k]);
        if (o.rank() == 4 && o.shape[0] != 1) {
          bad.push_back(str_cat("output ", k, " ", ir::shape_str(o.shape), " holds ", o.shape[0],
                                " images"));
          break;
        }
      }
    }
  }
  return joined_or_none(bad);
}

// RESIZE_NEAREST_NEIGHBOR: integer replication on both axes in TFLite's own
// index arithmetic (support/resize_nearest.h), at most kMaxResizeReplicas.
std::optional<std::string> check_resize_nearest(const Graph& g, const Op& op, const SupportConfig&) {
  const Tensor& in = *input(g, op).tensor;
  const Tensor& out = *output(g, op).tensor;
  if (in.rank() != 4 || out.rank() != 4) return std::nullopt;  // tensor_rank's business
  std::vector<std::string> bad;
  if (in.is_constant()) bad.push_back("the input is a constant");
  std::string why;
  const auto fh = nearest_replication_factor(int(in.shape[1]), int(out.shape[1]),
                                             op.attrs.align_corners, op.attrs.half_pixel_centers, &why);
  if (!fh) bad.push_back(str_cat("height ", in.shape[1], " -> ", out.shape[1], ": ", why));
  const auto fw = nearest_replication_factor(int(in.shape[2]), int(out.shape[2]),
                                             op.attrs.align_corners, op.attrs.half_pixel_centers, &why);
  if (!fw) bad.push_back(str_cat("width ", in.shape[2], " -> ", out.shape[2], ": ", why));
  if (fh && fw && *fh * *fw > kMaxResizeReplicas) {
    bad.push_back(str_cat(*fh, "x", *fw, " = ", *fh * *fw, " replicas"));
  }
  return joined_or_none(bad);
}

// RESIZE_BILINEAR as depthwise passes (compiler/lower.h lower_resize_bilinear).
std::optional<std::string> check_resize_bilinear(const Graph& g, const Op& op,
                                                 const SupportConfig&) {
  const Tensor& in = *input(g, op).tensor;
  const Tensor& out = *output(g, op).tensor;
  if (in.rank() != 4 || out.rank() != 4) return std::nullopt;  // tensor_rank's business
  if (in.is_constant()) return std::string("the input is a constant");
  std::string why;
  const auto ah = bilinear_axis(int(in.shape[1]), int(out.shape[1]), op.attrs.align_corners,
                                op.attrs.half_pixel_centers, &why);
  if (!ah) return str_cat("height ", in.shape[1], " -> ", out.shape[1], ": ", why);
  const auto aw = bilinear_axis(int(in.shape[2]), int(out.shape[2]), op.attrs.align_corners,
                                op.attrs.half_pixel_centers, &why);
  if (!aw) return str_cat("width ", in.shape[2], " -> ", out.shape[2], ": ", why);
  return bilinear_error(*ah, *aw);
}

// TRANSPOSE as DMA copy passes (compiler/lower.h lower_transpose).
std::optional<std::string> check_transpose_copy(const Graph& g, const Op& op, const SupportConfig&) {
  const Tensor& in = *input(g, op).tensor;
  if (in.is_constant()) return std::string("the input is a constant");
  const Tensor& out = *output(g, op).tensor;
  if (in.rank() == 4 && in.shape[0] != 1) return str_cat("a batch of ", in.shape[0]);
  if (out.rank() == 4 && out.shape[0] != 1) {
    return str_cat("an output ", ir::shape_str(out.shape), " of ", out.shape[0],
                   " images (its first axis is a batch)");
  }
  if (layout_transpose(in.shape, op.attrs.perm, nullptr, ir::dtype_size(in.dtype))) {
    return std::nullopt;  // the layout unit
  }
  std::string why;
  const auto t = transpose_copy(in.shape, op.attrs.perm, &why);
  if (!t) return why;
  return transpose_copy_error(*t);
}

std::optional<std::string> check_block_copy(const Graph& g, const Op& op, const SupportConfig&) {
  if (g.tensor(op.inputs[0]).is_constant()) return std::string("the input is a constant");
  if (op.attrs.block_size > kMaxSliceOutputs) return str_cat("block size ", op.attrs.block_size);
  return std::nullopt;
}

// MAXIMUM / MINIMUM: the element-wise unit has no max / min mode (NACC_SPEC
// §1: add, sub, mul, mul_s16_s8), so only a runtime tensor against a
// constant of one value is claimed: the 256-entry table max(x, c) / min(x, c)
// (compiler/lower.h lower_max_min).
std::optional<std::string> check_max_min_operands(const Graph& g, const Op& op, const SupportConfig&) {
  const Tensor& a = g.tensor(op.inputs[0]);
  const Tensor& b = g.tensor(op.inputs[1]);
  const Tensor& out = *output(g, op).tensor;
  if (a.is_constant() == b.is_constant()) {
    return std::string(a.is_constant() ? "both operands are constants"
                                       : "two runtime operands (no max / min element-wise mode)");
  }
  const Tensor& x = a.is_constant() ? b : a;
  const Tensor& c = a.is_constant() ? a : b;
  if (x.shape != out.shape) {
    return str_cat("the runtime operand ", ir::shape_str(x.shape), " is broadcast to ",
                   ir::shape_str(out.shape));
  }
  if (c.dtype == DType::kInt8 && c.data && !c.data->empty()) {
    const auto& d = *c.data;
    for (uint8_t v : d) {
      if (v != d[0]) return std::string("the constant operand holds more than one value");
    }
  }
  return std::nullopt;
}

// ONNX Runtime's GlobalAveragePool / ReduceMean dequantize, average in float
// and requantize (round half to even); the NPU lowering reproduces TFLite's
// MEAN paths only.
std::optional<std::string> check_mean_semantics(const Graph&, const Op& op, const SupportConfig&) {
  using OK = ir::Attributes::OnnxKernel;
  if (op.attrs.requant == ir::RequantMode::kTflite) return std::nullopt;
  // QLinearGlobalAveragePool: the integer sum and the float32 output stage.
  if (op.attrs.onnx_kernel == OK::kFusedS8 || op.attrs.onnx_kernel == OK::kFusedU8) {
    return std::nullopt;
  }
  if (op.attrs.onnx_kernel == OK::kUnfused) {
    return str_cat(op.display_type(),
                   " that ONNX Runtime runs unfused (dequantize, float mean, QuantizeLinear)");
  }
  return str_cat(op.display_type(), " with ONNX Runtime's rounding (dequantize, float mean, "
                                    "requantize half to even)");
}

// A fully connected command reads its K inputs per output in 64-lane groups
// counted by NACC_FULL_CONV_PARA.FULL_KER_SIZE = IN_FM_WIDTH * ceil(K / 64) - 1
// with IN_FM_WIDTH = 1 (compiler/lower.cc lower_fully_connected).
constexpr int64_t kMaxFcLaneGroups = field_max(fields::NACC_FULL_CONV_PARA::FULL_KER_SIZE) + 1;

std::optional<std::string> check_fc_depth(const Graph& g, const Op& op, const SupportConfig&) {
  if (op.inputs.size() < 2 || op.inputs[1] < 0) return std::nullopt;
  const ir::Tensor& w = g.tensor(op.inputs[1]);
  if (w.rank() != 2 || !w.is_static()) return std::nullopt;  // the rank rules say why
  const int64_t k = w.shape[1];
  if ((k + limits::kMacLanes - 1) / limits::kMacLanes <= kMaxFcLaneGroups) return std::nullopt;
  return str_cat(k, " inputs per output");
}

// ---- SRAM -----------------------------------------------------------------------

std::optional<std::string> check_sram_tile(const Graph& g, const Op& op,
                                           const SupportConfig& config) {
  const int64_t need = min_sram_bytes(g, op, config);
  if (need <= config.sram_bytes) return std::nullopt;
  return str_cat("smallest tile needs ", need, " bytes of SRAM, ", config.sram_bytes, " available");
}

// ---- the table ---------------------------------------------------------------------

std::vector<Rule> build_rules() {
  using K = OpKind;
  const std::vector<K> conv_like = {K::kConv2D, K::kDepthwiseConv2D};
  const std::vector<K> mac_with_weights = {K::kConv2D, K::kDepthwiseConv2D, K::kFullyConnected,
                                           K::kTransposeConv};
  const std::vector<K> elementwise = {K::kAdd, K::kSub, K::kMul};
  // The activation unit's LUT-mode kinds (compiler/lower.cc lower_activation).
  const std::vector<K> lut_kinds = {K::kRelu,      K::kRelu6,     K::kReluN1To1,
                                    K::kLogistic,  K::kTanh,      K::kHardSwish,
                                    K::kLeakyRelu, K::kQuantize};

  std::vector<K> batched;  // every kind whose feature maps carry a batch
  for (K k : ir::npu_op_kinds()) {
    // FC: [M, K] rows are independent; SLICE reads one image out of any batch
    // (slice_window checks its outputs; in a partition of N > 1 images,
    // partition_images refuses a slice that does not keep the batch).
    if (k != K::kFullyConnected && k != K::kSlice) batched.push_back(k);
  }
  std::vector<std::string> fusable;
  for (Activation a : kFusableActivations) fusable.push_back(ir::activation_name(a));
  std::vector<std::string> int16_names;
  for (K k : int16_kinds()) int16_names.push_back(ir::op_kind_name(k));
  std::vector<std::string> multipliers;
  for (int m : allowed_depth_multipliers()) multipliers.push_back(std::to_string(m));

  const auto window = range_text(limits::kMinKernel, limits::kMaxKernel);
  const std::string avg = str_cat(limits::kAvgPoolKernel, "x", limits::kAvgPoolKernel);

  std::vector<Rule> rules = {
      // Gates: the structure the later rules read.
      {"npu_op_kind", {K::kOther},
       "only the op kinds `nacc supported-ops` lists run on the NPU; every other op runs on the host",
       true, check_npu_op_kind},
      {"operand_count", {},
       "inputs and outputs must be those of the op kind (optional bias, parameter tensors)", true,
       check_operand_count},
      {"static_shape", {}, "every tensor shape must be static (no -1 or 0 dimension)", true,
       check_static_shape},
      {"tensor_rank", {},
       str_cat("ranks must be those of the op kind (4-D NHWC feature maps for windows, PAD and "
               "MEAN) and at most ", limits::kMaxTensorRank, " (RESHAPE and TRANSPOSE: ",
               kMaxCopyRank, ")"),
       true, check_tensor_rank},
      {"shape_consistency", {},
       "the output shape must follow from the input shapes and attributes", true,
       check_shape_consistency},

      // Data types and quantization.
      {"activation_dtype", {},
       str_cat("input and output activations must be int8, or all int16 (TFLite's 16x8 "
               "quantization, NACC_CTRL.DATA_FORM 01, nacc docs hardware, §9) for ",
               or_list(int16_names), " (nacc docs hardware, §1)"),
       false, check_activation_dtype},
      {"int16_quantization", {},
       "int16 activations must be quantized per tensor with one positive scale and zero point 0 "
       "(TFLite's 16x8 kernels require it)",
       false, check_int16_quantization},
      {"activation_quantization", {},
       str_cat("int8 activations must be quantized per tensor: one positive scale, one zero point "
               "in ", range_text(kInt8Min, kInt8Max)),
       false, check_activation_quantization},
      {"weights_dtype", mac_with_weights,
       "weights must be int8, or int4 for CONV_2D and FULLY_CONNECTED (NACC_CTRL.DATA_FORM 10: "
       "int8 feature maps, int4 weights stored two per byte, nacc docs hardware, §9; with int16 "
       "activations int8, or int4 for FULLY_CONNECTED (TFLite's version 13), which the 16-bit "
       "unit reads unpacked as int8), with zero point 0 and positive scales",
       false, check_weights_dtype},
      {"int4_depthwise", {K::kDepthwiseConv2D},
       "DEPTHWISE_CONV_2D weights must be int8: TFLite 2.21 has no reference kernel for int4 "
       "depthwise weights (version 7), so there is no exact oracle to match",
       false, check_int4_depthwise},
      {"weights_per_channel_axis", mac_with_weights,
       str_cat("per-channel weight scales must be on the output-channel axis (CONV_2D: ",
               kConvOutputChannelAxis, ", DEPTHWISE_CONV_2D: ", kDepthwiseOutputChannelAxis,
               ", FULLY_CONNECTED: ", kFcOutputChannelAxis, ")"),
       false, check_weights_per_channel_axis},
      {"weights_constant", mac_with_weights,
       "weights and bias must be constant tensors (the compiler packs them offline)", false,
       check_weights_constant},
      {"bias_dtype", mac_with_weights,
       "bias must be int32 with int8 activations, int64 with int16 activations (16x8: with an int32 "
       "bias TFLite accumulates in 32 bits and requantizes with the 32-bit multiplier, which the "
       "16-bit form does not reproduce)", false, check_bias_dtype},
      {"bias_16x8_range", mac_with_weights,
       str_cat("an int64 bias (16x8) must fit ", limits::kBias16Bits,
               " bits (8-byte bias entries of the 16-bit form, nacc docs hardware, §9)"),
       false, check_bias_16x8_range},
      {"same_quantization", {K::kMaxPool2D, K::kAveragePool2D, K::kPad, K::kConcatenation},
       "inputs and output must share one scale and zero point", false, check_same_quantization},
      {"sigmoid_tanh_output_quantization", {K::kLogistic, K::kTanh},
       str_cat("the output must be quantized as TFLite's int8 spec requires: LOGISTIC scale 1/",
               kLogisticOutputScaleInverse, " zero point ", kLogisticOutputZeroPoint,
               ", TANH scale 1/", kTanhOutputScaleInverse, " zero point ", kTanhOutputZeroPoint,
               " (any, when the frontend supplies the op's lookup table); int16 (16x8): scale "
               "1/32768 zero point 0 and an input scale up to about 5.3 (the 16-bit table "
               "modes' input multiplier must stay below 65536)"),
       false, check_sigmoid_tanh_output_quantization},
      {"frontend_lut", lut_kinds,
       str_cat("a lookup table given by the frontend must have ", limits::kLutEntries,
               " entries (entry i = output for the int8 input i)"),
       false, check_frontend_lut},
      {"lut_arithmetic", {K::kHardSwish, K::kLeakyRelu, K::kQuantize},
       str_cat("HARD_SWISH, LEAKY_RELU and int8 QUANTIZE run TFLite's reference int8 arithmetic "
               "from a ", limits::kLutEntries, "-entry table: TFLite must accept the quantization "
               "(HARD_SWISH: input scale / (128 x output scale) below 1) and every fixed-point "
               "multiplier must need a left shift of at most ", limits::kMaxShift,
               " (TFLite's 1 << shift overflows beyond); LEAKY_RELU's alpha may be any finite "
               "value. Any quantization when the frontend supplies the op's lookup table"),
       false, check_lut_arithmetic},

      // Shapes.
      {"batch_size", batched,
       str_cat("a batch N > 1 (first dimension of 4-D feature maps) runs image by image: every "
               "feature map of the op leads with N, constant operands have batch 1, no "
               "concatenation or mean over the batch; BATCH_MATMUL's leading dimensions must be ",
               limits::kMaxBatch, " (nacc docs hardware, §1; nacc docs device_model, \"Batches\")"),
       false, check_batch_size},
      {"feature_map_dims", {},
       str_cat("activation dimensions must be at most ", limits::kMaxFeatureMapDim,
               " (16-bit FM size fields, nacc docs hardware, §3)"),
       false, check_feature_map_dims},
      {"region_size", {},
       str_cat("each input and output feature map, and the constant operands of one op, must fit "
               "one memory region: at most ", limits::kMaxRegionBytes, " bytes (",
               limits::kRegionOffsetBits, "-bit region offsets, nacc docs hardware, §6)"),
       false, check_region_size},
      {"program_strings", {},
       str_cat("op and tensor names must be at most ", limits::kMaxProgramStringBytes,
               " bytes (strings of the Program container, nacc docs command_stream, §9)"),
       false, check_program_strings},
      {"elementwise_broadcast", elementwise,
       "the first operand must be a runtime tensor of the output's shape and the second one of "
       "the same shape, a [1,1,1,C] vector or a scalar (a runtime scalar needs W*C <= 65535; "
       "ADD and MUL: either order; exact DMA re-reads, nacc docs hardware, §1)",
       false, check_elementwise_broadcast},

      // Options.
      {"unsupported_options", {}, "the op must not set options the core does not implement",
       false, check_unsupported_options},
      {"fused_activation",
       {K::kConv2D, K::kDepthwiseConv2D, K::kFullyConnected, K::kMaxPool2D, K::kAveragePool2D,
        K::kAdd, K::kSub, K::kMul, K::kConcatenation, K::kTransposeConv},
       str_cat("fused activation must be ", or_list(fusable)), false, check_fused_activation},

      // Windows (NACC_SPEC §2).
      {"kernel_size", conv_like,
       str_cat("kernel height and width must be in ", window, " (NACC_KERNEL.K_SIZE_X/Y); a "
               "CONV_2D of a larger kernel with a stride of at least 2 on that axis: see rule "
               "stride's space-to-depth form"), false,
       check_kernel_size},
      {"stride", {K::kConv2D, K::kDepthwiseConv2D, K::kMaxPool2D},
       str_cat("stride must be in ", range_text(limits::kMinStride, limits::kMaxStride),
               " (NACC_KERNEL.K_STRIDE_X/Y), or, for an int8 CONV_2D without groups or dilation, "
               "above (or a kernel above ", limits::kMaxKernel, "): a space-to-depth gather by the "
               "stride of each such axis (DMA copy passes) and a stride-1 convolution over "
               "s_h x s_w x C channels (at most 65535) whose window is at most ",
               limits::kMaxKernel, " cells and pads at most ", limits::kMaxPadding,
               " per side, where a cell of the gather past the input is read by taps of weight 0 "
               "only"),
       false, check_stride},
      {"dilation", conv_like,
       str_cat("dilation must be ", limits::kMaxDilation,
               " (NACC_KERNEL.K_DILATION_X/Y), or above with stride 1: the d_h x d_w interleaved "
               "phases run as undilated windows, each padding at most ", limits::kMaxPadding,
               " per side and below the kernel and reading an input position; at most ",
               kMaxConvParts, " parts (groups x phases)"),
       false, check_dilation},
      {"padding", {K::kConv2D, K::kDepthwiseConv2D, K::kMaxPool2D, K::kAveragePool2D, K::kPad},
       str_cat("padding must be in ", range_text(0, limits::kMaxPadding),
               " on each side, after SAME is made explicit (NACC_PADDING.PAD_X/Y); a TFLite "
               "AVERAGE_POOL_2D other than 2x2 stride 2: below its window on each side (region "
               "passes clip the edge windows)"),
       false, check_padding},
      {"depth_multiplier", {K::kDepthwiseConv2D},
       str_cat("depth multiplier must be ", or_list(multipliers), " (DW_CH_MULT)"), false,
       check_depth_multiplier},
      {"grouped_convolution", {K::kConv2D},
       str_cat("the filter input channels must divide the input channels into groups that also "
               "divide the output channels (one convolution per group over its channel slice); "
               "at most ", kMaxConvParts, " groups"),
       false, check_grouped_convolution},
      {"transpose_conv", {K::kTransposeConv},
       str_cat("TRANSPOSE_CONV runs as one stride-1 convolution per output phase (s_h x s_w of "
               "them, at most ", kMaxConvParts, "): phase r of an axis takes the taps r, r + s, "
               ".. of the kernel, widened by taps of weight 0 where an output reads no input "
               "(those outputs are the bias alone); each window must be at most ",
               limits::kMaxKernel, " taps and pad at most ", limits::kMaxPadding, " per side; "
               "the output pixel pitch s_w x C_out must fit NACC_DMA_OUT_TRANS_LEN; int8 weights "
               "quantized per channel (or one output channel: TFLite 2.21's kernel indexes its "
               "multiplier arrays, sized by the weight scales, by output channel)"),
       false, check_transpose_conv},
      {"max_pool_window", {K::kMaxPool2D},
       str_cat("window height and width must be in ", window), false, check_max_pool_window},
      {"avg_pool_window", {K::kAveragePool2D},
       str_cat("window must be ", avg, " with stride ", limits::kAvgPoolStride,
               " (the pooling unit, nacc docs hardware, §2; the only form for ONNX Runtime's "
               "AveragePool), or, for TFLite, at most ", limits::kMaxKernel, " per axis (depthwise "
               "passes, one per region of one cell count: at most ", kMaxAveragePoolRegions,
               "; a stride above ", limits::kMaxStride, " makes every output row or column its "
               "own region) or one window over the whole input of at most ", kMaxAveragePoolCells,
               " cells (a matrix product with a ones operand)"),
       false, check_avg_pool_window},
      {"int16_form",
       {K::kConv2D, K::kDepthwiseConv2D, K::kAveragePool2D, K::kMean, K::kAdd, K::kSub, K::kMul,
        K::kRelu, K::kRelu6, K::kLeakyRelu},
       str_cat("with int16 maps, AVERAGE_POOL_2D must be ", avg, " with stride ",
               limits::kAvgPoolStride, " (the pooling unit's 16-bit form) or a window of at most ",
               limits::kMaxKernel, " per axis and ", kMaxAveragePoolCells16, " cells (16-bit "
               "depthwise region passes with the 32-bit output stage, QUANT_MUL32: their "
               "division is exact for int16 sums of up to that many cells), MEAN reduce at most ",
               limits::kMaxKernel, " x ", limits::kMaxKernel, " cells (one 16-bit depthwise "
               "window with the 32-bit output stage; the ones matrix product is 8-bit) or N = H "
               "x W cells with a divisor g <= ", limits::kMaxKernel, " such that 2N / g is a product "
               "of two factors <= ", limits::kMaxKernel, " (each value split as 2^",
               kInt16SumSplitShift, " hi + lo, the hi and lo summed in groups of g cells, the "
               "partial sums weighed in one window: exact 16-bit passes), "
               "ADD / SUB / MUL take two runtime operands (MUL int16 x int16 -> int8 of one "
               "shape: TFLite's product MBQM(a * b, 2^16, -8) + zo, scales unused, as one "
               "element-wise command in the MUL_S16_S8 mode: int16 inputs, an int8 output) "
               "(MUL with s1 * s2 / s_out < 1: no left shift of the int32 product); "
               "RELU / RELU6 of one scale are an identity pass with the clamp, a rescaling one "
               "(as QUANTIZE int16 -> int16) a 16-bit identity depthwise pass with the 32-bit "
               "stage; LEAKY_RELU's two terms are such passes, summed (a negative alpha's term "
               "the pass of -x with weight -1 and the multiplier's magnitude: declined when "
               "TFLite's multiplier is -2^31 or shifts left by more than 15); "
               "CONV_2D / DEPTHWISE_CONV_2D have no dilation or groups (their parts are 8-bit)"),
       false, check_int16_form},
      {"mean_axes", {K::kMean}, "MEAN must reduce exactly height and width (axes 1 and 2)", false,
       check_mean_axes},
      {"mean_window", {K::kMean},
       str_cat("the reduced height and width must each be in ", window,
               " (a depthwise window) or hold at most ", limits::kMaxFeatureMapDim,
               " cells in all (a matrix product with a ones operand)"),
       false, check_mean_window},
      {"pad_axes", {K::kPad}, "PAD may pad only height and width (axes 1 and 2)", false,
       check_pad_axes},
      {"pad_lowering", {K::kPad},
       str_cat("PAD must fold into its only consumer, a claimed CONV_2D or DEPTHWISE_CONV_2D, with "
               "the summed padding at most ", limits::kMaxPadding,
               " per side and below the kernel, or pad at most ", limits::kMaxPadding,
               " rows and ", limits::kMaxPadding, " columns in all (a standalone identity depthwise pass)"),
       false, check_pad_lowering},
      {"concat_axis", {K::kConcatenation},
       "CONCATENATION must join runtime tensors along the channels, the columns or the rows (the "
       "last three axes of a 4-D tensor, not the batch) with no fused activation (TFLite's int8 "
       "kernel requires NONE; each input is written at its channel offset of the output pixels, "
       "or at its first column or row through the output DMA offset and row pitch)",
       false, check_concat_axis},
      {"slice_window", {K::kSlice},
       str_cat("SLICE, STRIDED_SLICE, SPLIT and SPLIT_V must read a runtime tensor's channels as "
               "one contiguous run (channel stride 1, or one channel), each output one image (the "
               "fourth dimension from the end 1), at most ", kMaxSliceOutputs, " outputs: each "
               "output is a 1x1 pool copy whose DMA reads its window through an address offset "
               "and pixel / row pitches (any begin, end and positive stride on the other axes; "
               "a byte copy, as TFLite's int8 kernels copy)"),
       false, check_slice_window},
      {"resize_replication", {K::kResizeNearest},
       str_cat("RESIZE_NEAREST_NEIGHBOR must upsample height and width by whole factors that "
               "TFLite's index mapping turns into plain replication (input index = output index "
               "/ factor for every output index, evaluated in TFLite's float32 arithmetic with the "
               "op's align_corners and half_pixel_centers), at most ",
               kMaxResizeReplicas, " replicas (factor_h x factor_w; one 1x1 pool copy each, "
               "written through DMA pitches)"),
       false, check_resize_nearest},
      {"resize_bilinear", {K::kResizeBilinear},
       str_cat("RESIZE_BILINEAR (int8) must upsample height and width by whole factors; it runs "
               "TFLite's integer interpolation as depthwise passes, one per run of output rows x "
               "columns with one weight pair (the 10-bit weights divided by their common "
               "divisor), the raw sum divided with TFLite's round half away from zero: each "
               "weight product at most 127 (an int8 weight), the product of the two "
               "denominators at most ", kMaxAveragePoolCells, " (the exact division), at most ",
               kMaxBilinearPasses, " passes (factors 2 and 4 fit; 3 does not: its 10-bit "
               "fractions have no common divisor, a division by 1024 x 1024)"),
       false, check_resize_bilinear},
      {"transpose_copy", {K::kTranspose},
       str_cat("TRANSPOSE must move one image of a runtime tensor (a 4-D input and output "
               "lead with 1) as at most ",
               kMaxTransposePasses, " 1x1 pool copy passes: the output's loops (size-1 axes "
               "dropped, contiguous neighbours merged) as a run of bytes contiguous in both "
               "tensors (the trailing axes that stay innermost, e.g. the channels of an H/W "
               "swap; else single bytes), a pass's pixels and rows through the DMA pitches "
               "(16-bit sizes and pitch fields), one pass per index of the loops outside; a "
               "byte copy, as TFLite's kernel copies; NCHW [1,C,H,W] <-> NHWC (perm 0,2,3,1 "
               "or 0,3,1,2) with C > 1 and H*W > 1 runs on the layout unit instead "
               "(NPU_OP_VNCHWCONV, any such shape with C <= 65504)"),
       false, check_transpose_copy},
      {"block_copy", {K::kSpaceToDepth, K::kDepthToSpace},
       str_cat("SPACE_TO_DEPTH and DEPTH_TO_SPACE must move a runtime tensor with a block size of "
               "at most ", kMaxSliceOutputs, " (one 1x1 pool copy per row of the block, through "
               "DMA pitches)"),
       false, check_block_copy},
      {"max_min_operands", {K::kMaximum, K::kMinimum},
       "MAXIMUM and MINIMUM must compare a runtime tensor of the output's shape with a constant "
       "of one value (a 256-entry table max(x, c) / min(x, c) on the stored int8 values, as "
       "TFLite's kernels compare them); the element-wise unit has no max / min mode for two "
       "runtime operands (nacc docs hardware, §1: add, sub, mul)",
       false, check_max_min_operands},
      {"mean_semantics", {K::kMean},
       "MEAN must have TFLite's rounding or be ONNX Runtime's QLinearGlobalAveragePool "
       "(integer sum, float32 output stage); ONNX Runtime's unfused float mean is not lowered",
       false, check_mean_semantics},
      {"fc_depth", {K::kFullyConnected},
       str_cat("a fully connected op may take at most ", kMaxFcLaneGroups * limits::kMacLanes,
               " inputs per output (", kMaxFcLaneGroups,
               " 64-lane groups, NACC_FULL_CONV_PARA.FULL_KER_SIZE)"),
       false, check_fc_depth},
      // Memory.
      {"sram_tile", {},
       str_cat("the smallest tile (min_sram_bytes) must fit one core's SRAM (",
               limits::kDefaultSramBytes, " bytes unless configured, nacc docs hardware, §1)"),
       false, check_sram_tile},
  };
  if (!not_yet_lowered_kinds().empty()) {
    std::vector<std::string> names;
    for (K k : not_yet_lowered_kinds()) names.push_back(ir::op_kind_name(k));
    rules.insert(rules.begin() + 1,
                 Rule{"compiler_lowering", not_yet_lowered_kinds(),
                      str_cat("the compiler must lower the op kind (", join(names, ", "),
                              " not lowered yet: they run on the host)"),
                      true, check_compiler_lowering});
  }
  return rules;
}

std::string format_message(const Graph& g, int op_index, const std::string& detail,
                           const std::string& text) {
  return str_cat(g.op(op_index).display_type(), " ", g.op_label(op_index), ": ", detail,
                 " \u2014 ", text);
}

}  // namespace

bool Rule::applies_to(OpKind kind) const {
  if (kinds.empty()) return kind != OpKind::kOther;
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

std::optional<std::string> batch_wise(const ir::Graph& g, const ir::Op& op) {
  std::vector<std::string> bad;
  const auto acts = activations(g, op);
  if (op.kind == OpKind::kBatchMatMul) {
    for (const Operand& o : acts) {
      const auto& s = o.tensor->shape;
      for (size_t d = 0; d + 2 < s.size(); ++d) {
        if (s[d] != limits::kMaxBatch) {
          bad.push_back(str_cat(o.label(), " has batch dimensions ", ir::shape_str(s)));
          break;
        }
      }
    }
    return joined_or_none(bad);
  }
  // The batch: the first dimension of the op's first 4-D feature map.
  int64_t n = 1;
  for (const Operand& o : acts) {
    if (o.tensor->shape.size() == 4) {
      n = o.tensor->shape[0];
      break;
    }
  }
  if (n == limits::kMaxBatch) return std::nullopt;
  for (const Operand& o : acts) {
    const auto& s = o.tensor->shape;
    if (o.tensor->is_constant()) {
      if (s.size() == 4 && s[0] != 1) bad.push_back(str_cat(o.label(), " is a constant of batch ", s[0]));
    } else if (s.empty() || s[0] != n) {
      bad.push_back(str_cat(o.label(), " ", ir::shape_str(s), " does not lead with the batch ", n));
    }
  }
  const int rank = int(g.tensor(op.outputs.at(0)).shape.size());
  const auto axis0 = [&](int a) { return a == 0 || a + rank == 0; };
  if (op.kind == OpKind::kConcatenation && axis0(op.attrs.axis)) {
    bad.push_back("concatenates along the batch");
  }
  if (op.kind == OpKind::kMean) {
    for (int a : op.attrs.axes) {
      if (axis0(a)) bad.push_back("reduces over the batch");
    }
  }
  return joined_or_none(bad);
}

const std::vector<Rule>& rules() {
  static const std::vector<Rule> table = build_rules();
  return table;
}

std::vector<Violation> check_op(const Graph& graph, int op_index, const SupportConfig& config) {
  const Op& op = graph.op(op_index);
  std::vector<Violation> out;
  for (const Rule& rule : rules()) {
    if (!rule.applies_to(op.kind)) continue;
    if (auto detail = rule.check(graph, op, config)) {
      out.push_back({rule.name, *detail, format_message(graph, op_index, *detail, rule.text)});
      if (rule.gate) break;
    }
  }
  return out;
}

}  // namespace nacc::support

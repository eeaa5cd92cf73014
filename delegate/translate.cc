// TFLite node -> IR op translation with the frontend's decline reasons, shape
// propagation for NPU-kind ops, and the capability-rule pass (translate.h).
#include "translate.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <set>

#include "common/error.h"
#include "ir/macs.h"

namespace nacc::tflite {

namespace {

using ir::OpKind;

const char* const kBuiltinNames[] = {
#include "builtin_names.inc"
};
constexpr int kNumBuiltinNames = sizeof(kBuiltinNames) / sizeof(kBuiltinNames[0]);

// Highest op version of each builtin the core implements (TFLite's op
// versioning, tensorflow/lite/tools/versioning/op_version.cc): the versions
// past these add int16, int4, hybrid, sparse or grouped variants.
struct VersionLimit {
  int32_t code;
  int max_version;
  const char* why;  // what the next version adds
};
constexpr VersionLimit kVersionLimits[] = {
    {kTfLiteBuiltinConv2d, 3, "4: int16x16, 5: hybrid per-channel, 6: grouped, 7: int4 weights"},
    {kTfLiteBuiltinDepthwiseConv2d, 3, "4: hybrid, 5: int16, 7: int4 weights"},
    {kTfLiteBuiltinFullyConnected, 6, "7: int16, 8: sparse weights, 9+: hybrid / int4"},
    {kTfLiteBuiltinBatchMatmul, 2, "3: int16, 4: hybrid"},
    {kTfLiteBuiltinMaxPool2d, 2, "3: int16"},
    {kTfLiteBuiltinAveragePool2d, 2, "3: int16"},
    {kTfLiteBuiltinAdd, 2, "3: int16, 4: int64"},
    {kTfLiteBuiltinSub, 3, "4: int64, 5: int16"},
    {kTfLiteBuiltinMul, 3, "4: int16, 5+: int64 / complex"},
    {kTfLiteBuiltinRelu, 2, "3: int16"},
    {kTfLiteBuiltinRelu6, 2, "3: int16"},
    {kTfLiteBuiltinReluN1To1, 1, ""},
    {kTfLiteBuiltinLogistic, 2, "3: int16"},
    {kTfLiteBuiltinTanh, 2, "3: int16"},
    {kTfLiteBuiltinHardSwish, 1, ""},
    {kTfLiteBuiltinLeakyRelu, 1, "2: int16"},
    {kTfLiteBuiltinQuantize, 2, "3: per-channel, 4: int4"},
    {kTfLiteBuiltinPad, 2, "3: int16, 4: rank > 4"},
    {kTfLiteBuiltinPadv2, 2, "3: int16, 4: rank > 4"},
    {kTfLiteBuiltinConcatenation, 2, "3: int16, 4: uint32"},
    {kTfLiteBuiltinMean, 2, "3: int16"},
    {kTfLiteBuiltinSqueeze, 1, "2: string"},
    {kTfLiteBuiltinSplit, 2, "3: int16, 4: int32"},
    {kTfLiteBuiltinSplitV, 2, "3: int16"},
    {kTfLiteBuiltinSlice, 2, "3: string, 4: int16, 5: rank 5"},
    {kTfLiteBuiltinStridedSlice, 2, "3: rank 5, 4: int16 / ellipsis"},
    {kTfLiteBuiltinResizeNearestNeighbor, 3, "4: int16"},
    {kTfLiteBuiltinSpaceToDepth, 2, "3: int16"},
    {kTfLiteBuiltinDepthToSpace, 2, "3: int16"},
    {kTfLiteBuiltinMaximum, 2, "3+: int16 / rank-5 broadcast"},
    {kTfLiteBuiltinMinimum, 2, "3+: int16 / rank-5 broadcast"},
    {kTfLiteBuiltinTransposeConv, 4, "5+: not implemented by the core"},
    {kTfLiteBuiltinResizeBilinear, 3, "4: int16"},
    {kTfLiteBuiltinTranspose, 4, "5: int16"},
};

// The 16x8 kernels (int16 activations, int8 weights, NACC_SPEC §9) the core
// lowers, with the version TFLite gives them (op_version.cc: the first
// version that adds int16 activations; the converter writes it).
constexpr VersionLimit kInt16VersionLimits[] = {
    {kTfLiteBuiltinConv2d, 4, "5: hybrid per-channel, 6: grouped, 7: int4 weights"},
    {kTfLiteBuiltinDepthwiseConv2d, 5, "6: dilation with hybrid, 7: int4 weights"},
    {kTfLiteBuiltinFullyConnected, 7, "8: sparse weights, 9+: hybrid / int4"},
    {kTfLiteBuiltinMaxPool2d, 3, ""},
    {kTfLiteBuiltinAveragePool2d, 3, ""},
    {kTfLiteBuiltinAdd, 3, "4: int64"},
    {kTfLiteBuiltinSub, 5, ""},
    {kTfLiteBuiltinReshape, 0, ""},  // 0: the int8 limit (none or the table above)
    {kTfLiteBuiltinSqueeze, 0, ""},
    {kTfLiteBuiltinExpandDims, 0, ""},
    {kTfLiteBuiltinConcatenation, 3, "4: uint32"},
    {kTfLiteBuiltinPad, 3, "4: rank > 4"},
    {kTfLiteBuiltinPadv2, 3, "4: rank > 4"},
    {kTfLiteBuiltinRelu, 3, ""},
    {kTfLiteBuiltinRelu6, 3, ""},
    {kTfLiteBuiltinMul, 4, "5+: int64 / complex"},
    {kTfLiteBuiltinLogistic, 3, ""},
    {kTfLiteBuiltinTanh, 3, ""},
    {kTfLiteBuiltinMean, 3, ""},
    {kTfLiteBuiltinQuantize, 2, "3: per-channel, 4: int4"},
    {kTfLiteBuiltinLeakyRelu, 2, ""},
};

// Why an int16 kind has no 16-bit lowering (the int16_activations reason).
const char* int16_decline_why(int32_t code) {
  switch (code) {
    case kTfLiteBuiltinReluN1To1:
    case kTfLiteBuiltinHardSwish:
      return "TFLite 2.21 has no int16 kernel for it (and the activation unit's lookup table is "
             "for 8-bit inputs)";
    case kTfLiteBuiltinBatchMatmul:
      return "the matrix unit has no 16-bit form";
    default:
      return nullptr;
  }
}

std::optional<VersionLimit> int16_version_limit(int32_t code) {
  for (const VersionLimit& v : kInt16VersionLimits) {
    if (v.code == code) return v;
  }
  return std::nullopt;
}

std::optional<VersionLimit> version_limit(int32_t code) {
  for (const VersionLimit& v : kVersionLimits) {
    if (v.code == code) return v;
  }
  return std::nullopt;
}

// The IR kind a builtin becomes (kOther for everything the core lacks).
OpKind kind_of(int32_t code) {
  switch (code) {
    case kTfLiteBuiltinConv2d: return OpKind::kConv2D;
    case kTfLiteBuiltinDepthwiseConv2d: return OpKind::kDepthwiseConv2D;
    case kTfLiteBuiltinFullyConnected: return OpKind::kFullyConnected;
    case kTfLiteBuiltinBatchMatmul: return OpKind::kBatchMatMul;
    case kTfLiteBuiltinMaxPool2d: return OpKind::kMaxPool2D;
    case kTfLiteBuiltinAveragePool2d: return OpKind::kAveragePool2D;
    case kTfLiteBuiltinAdd: return OpKind::kAdd;
    case kTfLiteBuiltinSub: return OpKind::kSub;
    case kTfLiteBuiltinMul: return OpKind::kMul;
    case kTfLiteBuiltinRelu: return OpKind::kRelu;
    case kTfLiteBuiltinRelu6: return OpKind::kRelu6;
    case kTfLiteBuiltinReluN1To1: return OpKind::kReluN1To1;
    case kTfLiteBuiltinLogistic: return OpKind::kLogistic;
    case kTfLiteBuiltinTanh: return OpKind::kTanh;
    case kTfLiteBuiltinHardSwish: return OpKind::kHardSwish;
    case kTfLiteBuiltinLeakyRelu: return OpKind::kLeakyRelu;
    case kTfLiteBuiltinQuantize: return OpKind::kQuantize;
    case kTfLiteBuiltinReshape:
    case kTfLiteBuiltinSqueeze:
    case kTfLiteBuiltinExpandDims: return OpKind::kReshape;
    case kTfLiteBuiltinPad:
    case kTfLiteBuiltinPadv2: return OpKind::kPad;
    case kTfLiteBuiltinConcatenation: return OpKind::kConcatenation;
    case kTfLiteBuiltinMean: return OpKind::kMean;
    case kTfLiteBuiltinSlice:
    case kTfLiteBuiltinStridedSlice:
    case kTfLiteBuiltinSplit:
    case kTfLiteBuiltinSplitV: return OpKind::kSlice;
    case kTfLiteBuiltinResizeNearestNeighbor: return OpKind::kResizeNearest;
    case kTfLiteBuiltinSpaceToDepth: return OpKind::kSpaceToDepth;
    case kTfLiteBuiltinDepthToSpace: return OpKind::kDepthToSpace;
    case kTfLiteBuiltinMaximum: return OpKind::kMaximum;
    case kTfLiteBuiltinMinimum: return OpKind::kMinimum;
    case kTfLiteBuiltinTransposeConv: return OpKind::kTransposeConv;
    case kTfLiteBuiltinResizeBilinear: return OpKind::kResizeBilinear;
    case kTfLiteBuiltinTranspose: return OpKind::kTranspose;
    default: return OpKind::kOther;
  }
}

bool has_weights(OpKind k) {
  return k == OpKind::kConv2D || k == OpKind::kDepthwiseConv2D || k == OpKind::kFullyConnected ||
         k == OpKind::kTransposeConv;
}

ir::DType dtype_of(TfLiteType t) {
  switch (t) {
    case kTfLiteInt8: return ir::DType::kInt8;
    case kTfLiteUInt8: return ir::DType::kUInt8;
    case kTfLiteInt16: return ir::DType::kInt16;
    case kTfLiteInt32: return ir::DType::kInt32;
    case kTfLiteInt64: return ir::DType::kInt64;
    case kTfLiteFloat32: return ir::DType::kFloat32;
    default: return ir::DType::kOther;
  }
}

const char* tflite_type_name(TfLiteType t) {
  switch (t) {
    case kTfLiteFloat32: return "float32";
    case kTfLiteInt32: return "int32";
    case kTfLiteUInt8: return "uint8";
    case kTfLiteInt64: return "int64";
    case kTfLiteInt16: return "int16";
    case kTfLiteInt8: return "int8";
    case kTfLiteFloat16: return "float16";
    case kTfLiteInt4: return "int4";
    case kTfLiteBool: return "bool";
    case kTfLiteString: return "string";
    default: return "other";
  }
}

std::vector<int64_t> dims_of(const TfLiteTensor& t) {
  std::vector<int64_t> shape;
  if (t.dims) {
    for (int i = 0; i < t.dims->size; ++i) shape.push_back(t.dims->data[i]);
  }
  return shape;
}

bool is_constant(const TfLiteTensor& t) {
  return t.allocation_type == kTfLiteMmapRo && t.data.raw != nullptr;
}

// Values of a constant int32 / int64 tensor (shape, axes, paddings).
std::optional<std::vector<int64_t>> constant_ints(const TfLiteContext& ctx, int index) {
  if (index < 0 || static_cast<size_t>(index) >= ctx.tensors_size) return std::nullopt;
  const TfLiteTensor& t = ctx.tensors[index];
  if (!is_constant(t)) return std::nullopt;
  std::vector<int64_t> out;
  if (t.type == kTfLiteInt32) {
    for (size_t i = 0; i < t.bytes / 4; ++i) out.push_back(t.data.i32[i]);
  } else if (t.type == kTfLiteInt64) {
    for (size_t i = 0; i < t.bytes / 8; ++i) out.push_back(t.data.i64[i]);
  } else {
    return std::nullopt;
  }
  return out;
}

int64_t product(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

bool all_positive(const std::vector<int64_t>& s) {
  return std::all_of(s.begin(), s.end(), [](int64_t d) { return d > 0; });
}

class Translator {
 public:
  explicit Translator(const TfLiteContext& ctx) : ctx_(ctx) {}

  Translation run(const std::vector<NodeSpec>& specs) {
    for (const NodeSpec& spec : specs) {
      out_.node_position[spec.index] = static_cast<int>(out_.nodes.size());
      out_.nodes.push_back(translate_node(spec));
    }
    return std::move(out_);
  }

 private:
  const TfLiteTensor& tfl(int index) const { return ctx_.tensors[index]; }

  // IR id of TFLite tensor `index`, adding it on first use. Problems that
  // make the tensor unusable on the NPU are kept in tensor_problem_.
  int tensor(int index) {
    if (index < 0) return -1;
    check_arg(static_cast<size_t>(index) < ctx_.tensors_size, "tensor index ", index,
              " out of range (", ctx_.tensors_size, " tensors)");
    auto it = out_.ir_tensor.find(index);
    if (it != out_.ir_tensor.end()) return it->second;
    const TfLiteTensor& t = tfl(index);
    ir::Tensor x;
    x.name = t.name && *t.name ? t.name : str_cat("t", index);
    x.shape = dims_of(t);
    x.dtype = dtype_of(t.type);
    if (t.type == kTfLiteInt4) {
      // Constant int4 weights (CONV_2D v7, FULLY_CONNECTED v10): TFLite packs
      // them two per byte, element 2i in the low nibble; the IR holds them
      // unpacked (ir::DType::kInt4) and the compiler packs its weight blocks
      // again (NACC_SPEC §9). Runtime int4 tensors stay unusable.
      const int64_t n = product(x.shape);
      if (is_constant(t) && all_positive(x.shape) && t.bytes == static_cast<size_t>((n + 1) / 2)) {
        x.dtype = ir::DType::kInt4;
        const auto* p = reinterpret_cast<const uint8_t*>(t.data.raw_const);
        std::vector<uint8_t> v(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          const int nib = (i % 2 ? p[i / 2] >> 4 : p[i / 2]) & 0xF;
          v[static_cast<size_t>(i)] = static_cast<uint8_t>(static_cast<int8_t>(nib >= 8 ? nib - 16 : nib));
        }
        x.data = std::move(v);
      } else {
        tensor_problem_[index] = {"int4_weights",
                                  is_constant(t) ? str_cat("int4 data of ", t.bytes, " bytes for ", n,
                                                           " elements (expected ceil(n / 2))")
                                                 : std::string("runtime int4 data")};
      }
    }
    if (t.quantization.type == kTfLiteAffineQuantization && t.quantization.params) {
      const auto* q = static_cast<const TfLiteAffineQuantization*>(t.quantization.params);
      if (q->scale && q->zero_point) {
        for (int i = 0; i < q->scale->size; ++i) x.quant.scales.push_back(q->scale->data[i]);
        for (int i = 0; i < q->zero_point->size; ++i) {
          x.quant.zero_points.push_back(q->zero_point->data[i]);
        }
        // A single zero point with several scales: broadcast it.
        if (x.quant.zero_points.size() == 1 && x.quant.scales.size() > 1) {
          x.quant.zero_points.resize(x.quant.scales.size(), x.quant.zero_points[0]);
        }
        x.quant.axis = q->quantized_dimension;
      }
    } else if (t.quantization.type == kTfLiteBlockwiseQuantization) {
      tensor_problem_[index] = {"block_quantized", "blockwise quantization"};
    } else if (t.params.scale != 0.0f) {
      x.quant.scales = {t.params.scale};
      x.quant.zero_points = {t.params.zero_point};
    }
    if (!x.data && is_constant(t) && ir::dtype_size(x.dtype) > 0 && all_positive(x.shape) &&
        t.bytes == static_cast<size_t>(product(x.shape) * ir::dtype_size(x.dtype))) {
      const auto* p = reinterpret_cast<const uint8_t*>(t.data.raw_const);
      x.data = std::vector<uint8_t>(p, p + t.bytes);
    }
    int id;
    try {
      id = out_.graph.add_tensor(x);
    } catch (const InvalidArgument& e) {
      tensor_problem_[index] = {"tensor", e.what()};
      x.quant = {};
      x.data.reset();
      id = out_.graph.add_tensor(x);
    }
    out_.ir_tensor[index] = id;
    out_.tflite_tensor.push_back(index);
    return id;
  }

  TfLiteType type_of(int index) const { return index >= 0 ? tfl(index).type : kTfLiteNoType; }

  static void reason(NodeResult& r, const std::string& rule, const std::string& detail,
                     const std::string& text) {
    r.reasons.push_back({rule, detail, text});
  }

  NodeResult translate_node(const NodeSpec& spec) {
    NodeResult r;
    r.spec = spec;
    const int32_t code = spec.builtin_code;
    r.op_type = code == kTfLiteBuiltinCustom && !spec.custom_name.empty() ? spec.custom_name
                                                                          : builtin_name(code);
    if (!spec.outputs.empty() && spec.outputs[0] >= 0) {
      const char* n = tfl(spec.outputs[0]).name;
      r.name = n ? n : "";
    }
    const OpKind kind = kind_of(code);

    ir::Op op;
    op.kind = kind;
    op.name = r.name;
    op.type_name = r.op_type;
    for (int i : spec.inputs) op.inputs.push_back(tensor(i));
    for (int o : spec.outputs) op.outputs.push_back(tensor(o));

    if (kind == OpKind::kOther) {
      r.host_kind = true;
      reason(r, "npu_op_kind", "no NPU implementation",
             "only the op kinds `nacc supported-ops` lists run on the NPU");
      add(r, op);
      return r;
    }

    frontend_checks(spec, kind, r);
    std::optional<ir::PaddingMode> padding;
    fill_attributes(spec, kind, op, r, &padding);
    if (add(r, op) && padding) {
      try {
        ir::resolve_tflite_padding(out_.graph, out_.graph.ops[r.ir_op], *padding);
      } catch (const InvalidArgument& e) {
        reason(r, "padding_resolution", e.what(), "SAME/VALID padding needs 4-D NHWC shapes");
      }
    }
    if (r.ir_op >= 0) {
      propagate_shape(spec, out_.graph.ops[r.ir_op]);
      r.macs = ir::op_macs(out_.graph, out_.graph.ops[r.ir_op]);
    }
    return r;
  }

  bool add(NodeResult& r, ir::Op& op) {
    try {
      r.ir_op = out_.graph.add_op(op);
      return true;
    } catch (const InvalidArgument& e) {
      reason(r, "translation", e.what(), "the node must translate into the IR");
      return false;
    }
  }

  // Reasons that lie in TFLite's terms, before the capability rules.
  // The data-type reasons come first: they explain the op version too.
  void frontend_checks(const NodeSpec& spec, OpKind kind, NodeResult& r) {
    if (dtype_checks(spec, kind, r)) return;
    // int4 weights (NACC_SPEC §9): CONV_2D version 7 and FULLY_CONNECTED
    // version 10 are the int4-weight versions (DEPTHWISE_CONV_2D's version 7
    // is declined by the int4_depthwise rule, which says why).
    const int w = spec.inputs.size() > 1 ? spec.inputs[1] : -1;
    if (w >= 0 && type_of(w) == kTfLiteInt4 && has_weights(kind)) {
      // FULLY_CONNECTED version 13: 16x8 with int4 weights.
      const int int4_version = kind == OpKind::kConv2D ? 7
                               : kind == OpKind::kFullyConnected ? (int16_activations(spec) ? 13 : 10)
                                                                  : -1;
      if (int4_version < 0 || spec.version <= int4_version) return;
    }
    // CONV_2D version 6 is the grouped convolution: one convolution per group
    // (compiler/lower.h lower_conv_parts); the grouped_convolution rule checks it.
    if (kind == OpKind::kConv2D && spec.version == 6 && !int16_activations(spec)) return;
    // 16x8: the int16 version of the kernel (dtype_checks let only those through).
    auto lim = int16_activations(spec) ? int16_version_limit(spec.builtin_code)
                                       : version_limit(spec.builtin_code);
    if (lim && lim->max_version == 0) lim = version_limit(spec.builtin_code);
    if (lim && spec.version > lim->max_version) {
      reason(r, "op_version", str_cat("version ", spec.version),
             str_cat("the core implements versions 1 to ", lim->max_version, " (", lim->why, ")"));
    }
  }

  // An int16 input or output (TFLite's 16x8 quantization).
  bool int16_activations(const NodeSpec& spec) {
    const int in0 = spec.inputs.empty() ? -1 : spec.inputs[0];
    const int out0 = spec.outputs.empty() ? -1 : spec.outputs[0];
    return type_of(in0) == kTfLiteInt16 || type_of(out0) == kTfLiteInt16;
  }

  static std::string int16_kind_list() {
    std::string s;
    for (size_t i = 0; i < std::size(kInt16VersionLimits); ++i) {
      const int32_t code = kInt16VersionLimits[i].code;
      s += i ? (i + 1 == std::size(kInt16VersionLimits) ? " and " : ", ") : "";
      s += code >= 0 && code < kNumBuiltinNames ? kBuiltinNames[code] : "?";
    }
    return s;
  }

  // Hybrid, 16x8, float and int4 / block-quantized operands; true when one applies.
  bool dtype_checks(const NodeSpec& spec, OpKind kind, NodeResult& r) {
    const int in0 = spec.inputs.empty() ? -1 : spec.inputs[0];
    const int out0 = spec.outputs.empty() ? -1 : spec.outputs[0];
    const TfLiteType tin = type_of(in0), tout = type_of(out0);
    const int w = spec.inputs.size() > 1 ? spec.inputs[1] : -1;
    if (has_weights(kind) || kind == OpKind::kBatchMatMul) {
      if (tin == kTfLiteFloat32 && w >= 0 &&
          (type_of(w) == kTfLiteInt8 || type_of(w) == kTfLiteUInt8 || type_of(w) == kTfLiteInt4)) {
        reason(r, "hybrid", str_cat("float32 activations with ", tflite_type_name(type_of(w)),
                                    " weights (dynamic-range quantization)"),
               "only fully int8-quantized ops run on the NPU; convert with a representative "
               "dataset and integer-only quantization");
        return true;
      }
    }
    // 16x8 (NACC_SPEC §9): the kinds with a 16-bit lowering go on to the
    // capability rules (int16_quantization, bias_dtype, bias_16x8_range).
    if ((tin == kTfLiteInt16 || tout == kTfLiteInt16) && !int16_version_limit(spec.builtin_code)) {
      const char* why = int16_decline_why(spec.builtin_code);
      reason(r, "int16_activations", "int16 activations (16x8 quantization)",
             str_cat(why ? why : "no 16-bit lowering", "; the NPU's 16-bit form (NACC_CTRL.",
                     "DATA_FORM 01) is lowered for ", int16_kind_list(),
                     " (nacc docs hardware, §9)"));
      return true;
    }
    bool all_float = true, any_float = false;
    for (int t : spec.inputs) {
      if (t < 0 || is_constant(tfl(t))) continue;
      all_float &= tfl(t).type == kTfLiteFloat32;
      any_float |= tfl(t).type == kTfLiteFloat32;
    }
    for (int t : spec.outputs) {
      all_float &= tfl(t).type == kTfLiteFloat32;
      any_float |= tfl(t).type == kTfLiteFloat32;
    }
    if (all_float) {
      r.host_kind = true;
      reason(r, "float32", "float32 op", "the NPU runs int8-quantized ops only");
      return true;
    }
    if (kind == OpKind::kQuantize && any_float) {
      r.host_kind = true;
      reason(r, "float_quantize",
             str_cat(tflite_type_name(tin), " -> ", tflite_type_name(tout), " conversion"),
             "the NPU requantizes int8 -> int8 only; float conversions stay on the host");
      return true;
    }
    for (int t : spec.inputs) {
      if (t < 0) continue;
      auto it = tensor_problem_.find(t);
      if (it != tensor_problem_.end()) {
        const auto& [rule, detail] = it->second;
        const std::string text = rule == "int4_weights"
                                     ? "int4 weights must be constant, ceil(n / 2) bytes (NACC_SPEC §9)"
                                 : rule == "block_quantized"
                                     ? "weights must be quantized per tensor or per channel"
                                     : "tensors must have consistent shape and quantization";
        reason(r, rule, str_cat("tensor '", tfl(t).name ? tfl(t).name : "", "' has ", detail),
               text);
      }
    }
    return !r.reasons.empty();
  }

  static void activation(const NodeParams& p, ir::Op& op) {
    if (p.activation >= kTfLiteActNone && p.activation <= kTfLiteActSignBit) {
      op.attrs.activation = static_cast<ir::Activation>(p.activation);
    } else {
      op.attrs.unsupported_options.push_back(str_cat("fused activation ", p.activation ==
                                                     kTfLiteActSigmoid ? "SIGMOID" : "unknown"));
    }
  }

  static std::optional<ir::PaddingMode> padding_mode(const NodeParams& p, ir::Op& op) {
    if (p.padding == kTfLitePaddingSame) return ir::PaddingMode::kSame;
    if (p.padding == kTfLitePaddingValid) return ir::PaddingMode::kValid;
    op.attrs.unsupported_options.push_back("padding UNKNOWN");
    return std::nullopt;
  }

  void fill_attributes(const NodeSpec& spec, OpKind kind, ir::Op& op, NodeResult& r,
                       std::optional<ir::PaddingMode>* padding) {
    const NodeParams& p = spec.params;
    ir::Attributes& a = op.attrs;
    const auto positive = [&](int v, const char* what) {
      if (v < 1) a.unsupported_options.push_back(str_cat(what, " ", v));
      return std::max(v, 1);
    };
    switch (spec.builtin_code) {
      case kTfLiteBuiltinConv2d:
      case kTfLiteBuiltinDepthwiseConv2d:
        a.stride_w = positive(p.stride_w, "stride_w");
        a.stride_h = positive(p.stride_h, "stride_h");
        a.dilation_w = positive(p.dilation_w, "dilation_w");
        a.dilation_h = positive(p.dilation_h, "dilation_h");
        activation(p, op);
        *padding = padding_mode(p, op);
        if (kind == OpKind::kDepthwiseConv2D) {
          // C_out / C_in from the shapes (the params field is redundant, may be 0).
          const TfLiteTensor* in = spec.inputs.size() > 0 && spec.inputs[0] >= 0 ? &tfl(spec.inputs[0]) : nullptr;
          const TfLiteTensor* f = spec.inputs.size() > 1 && spec.inputs[1] >= 0 ? &tfl(spec.inputs[1]) : nullptr;
          int m = p.depth_multiplier > 0 ? p.depth_multiplier : 1;
          if (in && f && in->dims && f->dims && in->dims->size == 4 && f->dims->size == 4 &&
              in->dims->data[3] > 0 && f->dims->data[3] % in->dims->data[3] == 0) {
            m = f->dims->data[3] / in->dims->data[3];
          }
          a.depth_multiplier = std::max(m, 1);
        }
        break;
      case kTfLiteBuiltinTransposeConv:
        transpose_conv_attributes(spec, op);
        break;
      case kTfLiteBuiltinTranspose: {
        auto perm = spec.inputs.size() > 1 ? constant_ints(ctx_, spec.inputs[1]) : std::nullopt;
        if (!perm) {
          a.unsupported_options.push_back("non-constant perm");
        } else {
          for (int64_t v : *perm) a.perm.push_back(static_cast<int>(v));
          if (!op.inputs.empty()) op.inputs.resize(1);
        }
        break;
      }
      case kTfLiteBuiltinMaxPool2d:
      case kTfLiteBuiltinAveragePool2d:
        a.stride_w = positive(p.stride_w, "stride_w");
        a.stride_h = positive(p.stride_h, "stride_h");
        a.kernel_w = std::max(p.filter_w, 0);
        a.kernel_h = std::max(p.filter_h, 0);
        activation(p, op);
        *padding = padding_mode(p, op);
        break;
      case kTfLiteBuiltinFullyConnected:
        activation(p, op);
        if (p.weights_format != kTfLiteFullyConnectedWeightsFormatDefault) {
          a.unsupported_options.push_back("weights_format SHUFFLED4x16INT8");
        }
        if (p.keep_num_dims) a.unsupported_options.push_back("keep_num_dims");
        if (p.asymmetric_quantize_inputs) a.unsupported_options.push_back("asymmetric_quantize_inputs");
        break;
      case kTfLiteBuiltinBatchMatmul:
        if (p.adj_x) a.unsupported_options.push_back("adj_x");
        if (p.adj_y) a.unsupported_options.push_back("adj_y");
        if (p.asymmetric_quantize_inputs) a.unsupported_options.push_back("asymmetric_quantize_inputs");
        break;
      case kTfLiteBuiltinAdd:
      case kTfLiteBuiltinSub:
      case kTfLiteBuiltinMul:
        activation(p, op);
        // 16x8 ADD / SUB: TFLite's power-of-two path (pot_scale_int16 = true,
        // which the converter does not write) is not lowered.
        if (p.pot_scale_int16 && int16_activations(spec)) {
          a.unsupported_options.push_back(
              "pot_scale_int16 (TFLite's power-of-two int16 path; the general 16x8 path with "
              "left_shift 15 is lowered when it is false)");
        }
        break;
      case kTfLiteBuiltinConcatenation:
        a.axis = p.axis;
        activation(p, op);
        break;
      case kTfLiteBuiltinLeakyRelu:
        a.alpha = p.alpha;
        break;
      case kTfLiteBuiltinReshape:
        if (spec.inputs.size() > 1 && spec.inputs[1] >= 0 && !constant_ints(ctx_, spec.inputs[1])) {
          a.unsupported_options.push_back("non-constant shape");
        }
        break;
      case kTfLiteBuiltinExpandDims:
        if (spec.inputs.size() < 2 || !constant_ints(ctx_, spec.inputs[1])) {
          a.unsupported_options.push_back("non-constant axis");
        }
        break;
      case kTfLiteBuiltinPad:
      case kTfLiteBuiltinPadv2: {
        auto pads = spec.inputs.size() > 1 ? constant_ints(ctx_, spec.inputs[1]) : std::nullopt;
        if (!pads || pads->size() % 2 != 0) {
          a.unsupported_options.push_back("non-constant paddings");
        } else {
          for (size_t i = 0; i + 1 < pads->size(); i += 2) a.paddings.push_back({(*pads)[i], (*pads)[i + 1]});
        }
        if (spec.builtin_code == kTfLiteBuiltinPadv2 && spec.inputs.size() > 2 && spec.inputs[2] >= 0) {
          pad_value_check(spec, a);
          // The IR's PAD takes its value from the zero point; drop the value operand.
          op.inputs.resize(2);
        }
        break;
      }
      case kTfLiteBuiltinSlice:
      case kTfLiteBuiltinStridedSlice:
      case kTfLiteBuiltinSplit:
      case kTfLiteBuiltinSplitV:
        slice_attributes(spec, op);
        // A slice the frontend could not read out keeps one (unused) origin
        // per output, so the rule that explains it is unsupported_options.
        if (!a.unsupported_options.empty() && a.slice_begin.size() != op.outputs.size()) {
          const size_t rank = op.inputs.empty() || op.inputs[0] < 0
                                  ? 0 : out_.graph.tensor(op.inputs[0]).shape.size();
          a.slice_begin.assign(op.outputs.size(), std::vector<int64_t>(rank, 0));
        }
        break;
      case kTfLiteBuiltinResizeNearestNeighbor:
      case kTfLiteBuiltinResizeBilinear: {
        a.align_corners = p.align_corners;
        a.half_pixel_centers = p.half_pixel_centers;
        // The output size operand must be the constant the output shape says.
        auto size = spec.inputs.size() > 1 ? constant_ints(ctx_, spec.inputs[1]) : std::nullopt;
        const auto out = spec.outputs.empty() ? std::vector<int64_t>{} : dims_of(tfl(spec.outputs[0]));
        if (!size || size->size() != 2) {
          a.unsupported_options.push_back("non-constant size");
        } else if (out.size() == 4 && ((*size)[0] != out[1] || (*size)[1] != out[2])) {
          a.unsupported_options.push_back(str_cat("size [", (*size)[0], ",", (*size)[1],
                                                  "] but output ", ir::shape_str(out)));
        }
        break;
      }
      case kTfLiteBuiltinSpaceToDepth:
      case kTfLiteBuiltinDepthToSpace:
        a.block_size = positive(p.block_size, "block_size");
        break;
      case kTfLiteBuiltinMean: {
        auto axes = spec.inputs.size() > 1 ? constant_ints(ctx_, spec.inputs[1]) : std::nullopt;
        if (!axes) {
          a.unsupported_options.push_back("non-constant axes");
        } else {
          for (int64_t x : *axes) a.axes.push_back(static_cast<int>(x));
        }
        a.keep_dims = p.keep_dims;
        break;
      }
      default:
        break;
    }
    (void)r;
  }

  // SLICE, STRIDED_SLICE, SPLIT, SPLIT_V as the IR's SLICE: the data input
  // only (SPLIT's comes second), each output's origin in the input and the
  // strides (ir::Attributes::slice_begin). The extents are the output shapes;
  // shape_consistency checks that they stay inside the input.
  void slice_attributes(const NodeSpec& spec, ir::Op& op) {
    ir::Attributes& a = op.attrs;
    const int code = spec.builtin_code;
    const size_t data = code == kTfLiteBuiltinSplit ? 1 : 0;
    if (spec.inputs.size() <= data || spec.inputs[data] < 0) return;  // operand_count says so
    op.inputs = {op.inputs[data]};
    const TfLiteTensor& in = tfl(spec.inputs[data]);
    const std::vector<int64_t> shape = dims_of(in);
    const int rank = static_cast<int>(shape.size());
    a.slice_strides.assign(size_t(rank), 1);
    const auto param = [&](size_t i) {
      return i < spec.inputs.size() ? constant_ints(ctx_, spec.inputs[i]) : std::nullopt;
    };
    if (code == kTfLiteBuiltinSplit || code == kTfLiteBuiltinSplitV) {
      auto axis = param(code == kTfLiteBuiltinSplit ? 0 : 2);
      if (!axis || axis->size() != 1) {
        a.unsupported_options.push_back("non-constant axis");
        return;
      }
      const int64_t ax = (*axis)[0] < 0 ? (*axis)[0] + rank : (*axis)[0];
      if (ax < 0 || ax >= rank) {
        a.unsupported_options.push_back(str_cat("axis ", (*axis)[0], " of a rank-", rank, " input"));
        return;
      }
      // Output k starts where the outputs before it end along the axis.
      int64_t at = 0;
      for (int o : spec.outputs) {
        std::vector<int64_t> b(size_t(rank), 0);
        b[size_t(ax)] = at;
        a.slice_begin.push_back(std::move(b));
        const std::vector<int64_t> od = dims_of(tfl(o));
        at += od.size() == size_t(rank) ? od[size_t(ax)] : 0;
      }
      return;
    }
    auto begin = param(1);
    if (!begin || begin->size() != size_t(rank)) {
      a.unsupported_options.push_back("non-constant begin");
      return;
    }
    std::vector<int64_t> b = *begin;
    std::vector<int64_t> extent(size_t(rank), 0);
    if (code == kTfLiteBuiltinStridedSlice) {
      const NodeParams& p = spec.params;
      auto end = param(2);
      if (p.ellipsis_mask) a.unsupported_options.push_back(str_cat("ellipsis_mask ", p.ellipsis_mask));
      if (p.new_axis_mask) a.unsupported_options.push_back(str_cat("new_axis_mask ", p.new_axis_mask));
      if (p.shrink_axis_mask) {
        a.unsupported_options.push_back(str_cat("shrink_axis_mask ", p.shrink_axis_mask));
      }
      auto strides = param(3);
      if (!strides || strides->size() != size_t(rank)) {
        a.unsupported_options.push_back("non-constant strides");
        return;
      }
      for (int d = 0; d < rank; ++d) {
        const int64_t st = (*strides)[size_t(d)];
        if (st < 1) {
          a.unsupported_options.push_back(str_cat("stride ", st, " on axis ", d));
          return;
        }
        a.slice_strides[size_t(d)] = st;
        // TFLite's start and stop for a positive stride: 0 / dim under
        // begin_mask / end_mask, else the value (from the end when negative;
        // stop = start + end with offset) clamped to [0, dim].
        const int64_t dim = shape[size_t(d)];
        const int64_t given = b[size_t(d)];
        int64_t v = (p.begin_mask >> d) & 1 ? 0 : given;
        if (v < 0) v += dim;
        b[size_t(d)] = std::clamp<int64_t>(v, 0, dim);
        if (end && end->size() == size_t(rank)) {
          int64_t e = (*end)[size_t(d)];
          if ((p.end_mask >> d) & 1) {
            e = dim;
          } else if (p.slice_offset) {
            e = given + e;
          }
          if (e < 0) e += dim;
          e = std::clamp<int64_t>(e, 0, dim);
          extent[size_t(d)] = e > b[size_t(d)] ? (e - b[size_t(d)] + st - 1) / st : 0;
        }
      }
      if (!end || end->size() != size_t(rank)) a.unsupported_options.push_back("non-constant end");
    } else {
      auto size = param(2);
      for (int d = 0; d < rank; ++d) {
        if (b[size_t(d)] < 0) a.unsupported_options.push_back(str_cat("begin ", b[size_t(d)], " on axis ", d));
        if (size && size->size() == size_t(rank)) {
          const int64_t n = (*size)[size_t(d)];
          extent[size_t(d)] = n < 0 ? shape[size_t(d)] - b[size_t(d)] : n;
        }
      }
      if (!size || size->size() != size_t(rank)) a.unsupported_options.push_back("non-constant size");
    }
    // The model's output shape must be the slice's (TFLite computes it so).
    if (!spec.outputs.empty() && spec.outputs[0] >= 0 && a.unsupported_options.empty() &&
        dims_of(tfl(spec.outputs[0])) != extent) {
      a.unsupported_options.push_back(str_cat("output shape ", ir::shape_str(dims_of(tfl(spec.outputs[0]))),
                                              " but the slice gives ", ir::shape_str(extent)));
    }
    a.slice_begin.push_back(std::move(b));
  }

  // TRANSPOSE_CONV [output_shape, weights, input, bias?] as the IR's
  // [input, weights, bias?]; the output shape operand must be the constant
  // the output tensor has. Padding as TFLite 2.21's Eval computes it
  // (padding.h ComputePaddingHeightWidth over the *output* size: n = ceil(O /
  // s) for SAME, (O + s - K) / s for VALID; total = max(0, (n - 1) s + K - O);
  // the kernel places total / 2 before the output and ignores the offset).
  void transpose_conv_attributes(const NodeSpec& spec, ir::Op& op) {
    const NodeParams& p = spec.params;
    ir::Attributes& a = op.attrs;
    a.stride_w = std::max(p.stride_w, 1);
    a.stride_h = std::max(p.stride_h, 1);
    if (p.stride_w < 1 || p.stride_h < 1) {
      a.unsupported_options.push_back(str_cat("stride ", p.stride_h, "x", p.stride_w));
    }
    activation(p, op);
    if (spec.inputs.size() < 3 || spec.inputs.size() > 4 || spec.inputs[1] < 0 ||
        spec.inputs[2] < 0) {
      return;  // operand_count says so
    }
    std::vector<int> inputs = {op.inputs[2], op.inputs[1]};
    if (spec.inputs.size() == 4 && spec.inputs[3] >= 0) inputs.push_back(op.inputs[3]);
    op.inputs = inputs;
    const std::vector<int64_t> out =
        spec.outputs.empty() ? std::vector<int64_t>{} : dims_of(tfl(spec.outputs[0]));
    const std::vector<int64_t> w = dims_of(tfl(spec.inputs[1]));
    auto shape = constant_ints(ctx_, spec.inputs[0]);
    if (!shape) {
      a.unsupported_options.push_back("non-constant output_shape");
      return;
    }
    if (*shape != out) {
      a.unsupported_options.push_back(str_cat("output_shape ", ir::shape_str(*shape),
                                              " but output ", ir::shape_str(out)));
      return;
    }
    if (p.padding != kTfLitePaddingSame && p.padding != kTfLitePaddingValid) {
      a.unsupported_options.push_back("padding UNKNOWN");
      return;
    }
    if (out.size() != 4 || w.size() != 4) return;  // tensor_rank says so
    const auto pad = [&](int64_t size, int64_t k, int64_t s) -> int64_t {
      const int64_t n = p.padding == kTfLitePaddingSame ? (size + s - 1) / s : (size + s - k) / s;
      return std::max<int64_t>(0, (n - 1) * s + k - size) / 2;
    };
    a.padding.top = pad(out[1], w[1], a.stride_h);
    a.padding.left = pad(out[2], w[2], a.stride_w);
  }

  // PADV2 pads with its constant operand; the NPU pads with the zero point.
  void pad_value_check(const NodeSpec& spec, ir::Attributes& a) {
    const TfLiteTensor& v = tfl(spec.inputs[2]);
    const TfLiteTensor& out = tfl(spec.outputs[0]);
    const bool i16 = v.type == kTfLiteInt16 && v.bytes == 2;  // 16x8: the value must be 0
    if (!is_constant(v) || !((v.type == kTfLiteInt8 && v.bytes == 1) || i16)) {
      a.unsupported_options.push_back("non-constant pad value");
    } else if ((i16 ? int(v.data.i16[0]) : int(v.data.int8[0])) != out.params.zero_point) {
      a.unsupported_options.push_back(
          str_cat("pad value ", i16 ? int(v.data.i16[0]) : int(v.data.int8[0]),
                  " != output zero point ", out.params.zero_point));
    }
  }

  // Sets the output shape of an NPU-kind op to what its inputs imply.
  void propagate_shape(const NodeSpec& spec, const ir::Op& op) {
    if (op.outputs.size() != 1 || op.inputs.empty() || op.inputs[0] < 0) return;
    std::optional<std::vector<int64_t>> s;
    try {
      s = infer(spec, op);
    } catch (const Error&) {
      return;
    }
    if (s && all_positive(*s)) out_.graph.tensors[op.outputs[0]].shape = *s;
  }

  std::optional<std::vector<int64_t>> infer(const NodeSpec& spec, const ir::Op& op) {
    const ir::Graph& g = out_.graph;
    const ir::Tensor& in = g.tensor(op.inputs[0]);
    if (!in.is_static()) return std::nullopt;
    const ir::Attributes& a = op.attrs;
    auto input = [&](size_t i) -> const ir::Tensor* {
      return i < op.inputs.size() && op.inputs[i] >= 0 ? &g.tensor(op.inputs[i]) : nullptr;
    };
    switch (op.kind) {
      case OpKind::kConv2D:
      case OpKind::kDepthwiseConv2D:
      case OpKind::kMaxPool2D:
      case OpKind::kAveragePool2D: {
        const auto k = ir::window_kernel(g, op);
        if (!k || in.rank() != 4) return std::nullopt;
        const bool conv = op.kind == OpKind::kConv2D || op.kind == OpKind::kDepthwiseConv2D;
        int64_t c = in.shape[3];
        if (conv) {
          const ir::Tensor* f = input(1);
          c = op.kind == OpKind::kConv2D ? f->shape[0] : f->shape[3];
        }
        const int64_t oh = ir::window_output_size(in.shape[1], (*k)[0], a.stride_h, a.padding.top,
                                                  a.padding.bottom, conv ? a.dilation_h : 1);
        const int64_t ow = ir::window_output_size(in.shape[2], (*k)[1], a.stride_w, a.padding.left,
                                                  a.padding.right, conv ? a.dilation_w : 1);
        return std::vector<int64_t>{in.shape[0], oh, ow, c};
      }
      case OpKind::kFullyConnected: {
        const ir::Tensor* w = input(1);
        if (!w || w->rank() != 2 || w->shape[1] <= 0 || in.elements() % w->shape[1]) return std::nullopt;
        if (spec.params.keep_num_dims) {
          std::vector<int64_t> s = in.shape;
          s.back() = w->shape[0];
          return s;
        }
        return std::vector<int64_t>{in.elements() / w->shape[1], w->shape[0]};
      }
      case OpKind::kBatchMatMul: {
        const ir::Tensor* b = input(1);
        if (!b || in.rank() < 2 || b->rank() < 2) return std::nullopt;
        auto batch = ir::broadcast_shape({in.shape.begin(), in.shape.end() - 2},
                               {b->shape.begin(), b->shape.end() - 2});
        if (!batch) return std::nullopt;
        batch->push_back(in.dim(-2));
        batch->push_back(b->dim(-1));
        return batch;
      }
      case OpKind::kAdd:
      case OpKind::kSub:
      case OpKind::kMul:
      case OpKind::kMaximum:
      case OpKind::kMinimum: {
        const ir::Tensor* b = input(1);
        if (!b) return std::nullopt;
        return ir::broadcast_shape(in.shape, b->shape);
      }
      case OpKind::kReshape:
        return infer_reshape(spec, in);
      case OpKind::kPad: {
        if (a.paddings.size() != in.shape.size()) return std::nullopt;
        std::vector<int64_t> s = in.shape;
        for (size_t i = 0; i < s.size(); ++i) s[i] += a.paddings[i][0] + a.paddings[i][1];
        return s;
      }
      case OpKind::kConcatenation: {
        const int rank = in.rank();
        const int axis = a.axis < 0 ? a.axis + rank : a.axis;
        if (axis < 0 || axis >= rank) return std::nullopt;
        std::vector<int64_t> s = in.shape;
        s[axis] = 0;
        for (int id : op.inputs) {
          const ir::Tensor& t = g.tensor(id);
          if (t.rank() != rank) return std::nullopt;
          s[axis] += t.shape[axis];
        }
        return s;
      }
      case OpKind::kSlice:
      case OpKind::kResizeNearest:
      case OpKind::kTransposeConv:
      case OpKind::kResizeBilinear:
      case OpKind::kTranspose:
        return std::nullopt;  // the model's output shapes (checked against the operands)
      case OpKind::kSpaceToDepth:
      case OpKind::kDepthToSpace: {
        const int64_t bs = a.block_size;
        if (in.rank() != 4 || bs < 1) return std::nullopt;
        if (op.kind == OpKind::kSpaceToDepth) {
          return std::vector<int64_t>{in.shape[0], in.shape[1] / bs, in.shape[2] / bs,
                                      in.shape[3] * bs * bs};
        }
        return std::vector<int64_t>{in.shape[0], in.shape[1] * bs, in.shape[2] * bs,
                                    in.shape[3] / (bs * bs)};
      }
      case OpKind::kMean: {
        std::set<int> reduced;
        for (int ax : a.axes) reduced.insert(ax < 0 ? ax + in.rank() : ax);
        std::vector<int64_t> s;
        for (int d = 0; d < in.rank(); ++d) {
          if (!reduced.count(d)) {
            s.push_back(in.shape[d]);
          } else if (a.keep_dims) {
            s.push_back(1);
          }
        }
        return s;
      }
      default:
        return in.shape;  // element-wise unary ops
    }
  }

  // RESHAPE (shape operand or options, one -1 allowed), SQUEEZE, EXPAND_DIMS.
  std::optional<std::vector<int64_t>> infer_reshape(const NodeSpec& spec, const ir::Tensor& in) {
    const int64_t n = in.elements();
    if (spec.builtin_code == kTfLiteBuiltinSqueeze) {
      std::set<int> dims;
      for (int d : spec.params.squeeze_dims) dims.insert(d < 0 ? d + in.rank() : d);
      std::vector<int64_t> s;
      for (int d = 0; d < in.rank(); ++d) {
        const bool squeeze = dims.empty() ? in.shape[d] == 1 : dims.count(d) > 0;
        if (!squeeze) s.push_back(in.shape[d]);
      }
      return s;
    }
    if (spec.builtin_code == kTfLiteBuiltinExpandDims) {
      auto axis = constant_ints(ctx_, spec.inputs[1]);
      if (!axis || axis->size() != 1) return std::nullopt;
      int64_t ax = (*axis)[0];
      if (ax < 0) ax += in.rank() + 1;
      if (ax < 0 || ax > in.rank()) return std::nullopt;
      std::vector<int64_t> s = in.shape;
      s.insert(s.begin() + ax, 1);
      return s;
    }
    std::vector<int64_t> target;
    if (spec.inputs.size() > 1 && spec.inputs[1] >= 0) {
      auto t = constant_ints(ctx_, spec.inputs[1]);
      if (!t) return std::nullopt;
      target = *t;
    } else if (!spec.params.reshape_shape.empty()) {
      target.assign(spec.params.reshape_shape.begin(), spec.params.reshape_shape.end());
    } else {
      return std::nullopt;
    }
    int64_t known = 1;
    int unknown = -1;
    for (size_t i = 0; i < target.size(); ++i) {
      if (target[i] == -1) {
        if (unknown >= 0) return std::nullopt;
        unknown = static_cast<int>(i);
      } else if (target[i] <= 0) {
        return std::nullopt;
      } else {
        known *= target[i];
      }
    }
    if (unknown >= 0) {
      if (known == 0 || n % known) return std::nullopt;
      target[unknown] = n / known;
    }
    if (product(target) != n) return std::nullopt;
    return target;
  }

  const TfLiteContext& ctx_;
  Translation out_;
  std::unordered_map<int, std::pair<std::string, std::string>> tensor_problem_;
};

}  // namespace

std::string builtin_name(int32_t code) {
  if (code >= 0 && code < kNumBuiltinNames) return kBuiltinNames[code];
  return str_cat("UNKNOWN_", code);
}

std::string Reason::display() const { return text.empty() ? detail : str_cat(detail, " \u2014 ", text); }

std::string NodeResult::label() const {
  // Converter tensor names list every fused layer, separated by ';': the first names the node.
  const std::string shown = name.substr(0, name.find(';'));
  return shown.empty() ? str_cat(op_type, " #", spec.index) : str_cat(op_type, " '", shown, "'");
}

const NodeResult* Translation::node(int tflite_index) const {
  auto it = node_position.find(tflite_index);
  return it == node_position.end() ? nullptr : &nodes[it->second];
}

NodeSpec capture_node(int index, const TfLiteNode& node, const TfLiteRegistration& reg) {
  NodeSpec s;
  s.index = index;
  s.builtin_code = reg.builtin_code;
  s.version = reg.version;
  if (reg.custom_name) s.custom_name = reg.custom_name;
  if (node.inputs) s.inputs.assign(node.inputs->data, node.inputs->data + node.inputs->size);
  if (node.outputs) s.outputs.assign(node.outputs->data, node.outputs->data + node.outputs->size);
  NodeParams& p = s.params;
  const void* d = node.builtin_data;
  p.present = d != nullptr;
  if (!d) return s;
  switch (reg.builtin_code) {
    case kTfLiteBuiltinConv2d: {
      const auto* c = static_cast<const TfLiteConvParams*>(d);
      p.padding = c->padding;
      p.stride_w = c->stride_width;
      p.stride_h = c->stride_height;
      p.activation = c->activation;
      p.dilation_w = c->dilation_width_factor;
      p.dilation_h = c->dilation_height_factor;
      break;
    }
    case kTfLiteBuiltinDepthwiseConv2d: {
      const auto* c = static_cast<const TfLiteDepthwiseConvParams*>(d);
      p.padding = c->padding;
      p.stride_w = c->stride_width;
      p.stride_h = c->stride_height;
      p.depth_multiplier = c->depth_multiplier;
      p.activation = c->activation;
      p.dilation_w = c->dilation_width_factor;
      p.dilation_h = c->dilation_height_factor;
      break;
    }
    case kTfLiteBuiltinTransposeConv: {
      const auto* c = static_cast<const TfLiteTransposeConvParams*>(d);
      p.padding = c->padding;
      p.stride_w = c->stride_width;
      p.stride_h = c->stride_height;
      p.activation = c->activation;
      break;
    }
    case kTfLiteBuiltinMaxPool2d:
    case kTfLiteBuiltinAveragePool2d: {
      const auto* c = static_cast<const TfLitePoolParams*>(d);
      p.padding = c->padding;
      p.stride_w = c->stride_width;
      p.stride_h = c->stride_height;
      p.filter_w = c->filter_width;
      p.filter_h = c->filter_height;
      p.activation = c->activation;
      break;
    }
    case kTfLiteBuiltinFullyConnected: {
      const auto* c = static_cast<const TfLiteFullyConnectedParams*>(d);
      p.activation = c->activation;
      p.weights_format = c->weights_format;
      p.keep_num_dims = c->keep_num_dims;
      p.asymmetric_quantize_inputs = c->asymmetric_quantize_inputs;
      break;
    }
    case kTfLiteBuiltinBatchMatmul: {
      const auto* c = static_cast<const TfLiteBatchMatMulParams*>(d);
      p.adj_x = c->adj_x;
      p.adj_y = c->adj_y;
      p.asymmetric_quantize_inputs = c->asymmetric_quantize_inputs;
      break;
    }
    case kTfLiteBuiltinAdd:
      p.activation = static_cast<const TfLiteAddParams*>(d)->activation;
      p.pot_scale_int16 = static_cast<const TfLiteAddParams*>(d)->pot_scale_int16;
      break;
    case kTfLiteBuiltinSub:
      p.activation = static_cast<const TfLiteSubParams*>(d)->activation;
      p.pot_scale_int16 = static_cast<const TfLiteSubParams*>(d)->pot_scale_int16;
      break;
    case kTfLiteBuiltinMul:
      p.activation = static_cast<const TfLiteMulParams*>(d)->activation;
      break;
    case kTfLiteBuiltinConcatenation: {
      const auto* c = static_cast<const TfLiteConcatenationParams*>(d);
      p.axis = c->axis;
      p.activation = c->activation;
      break;
    }
    case kTfLiteBuiltinMean:
      p.keep_dims = static_cast<const TfLiteReducerParams*>(d)->keep_dims;
      break;
    case kTfLiteBuiltinLeakyRelu:
      p.alpha = static_cast<const TfLiteLeakyReluParams*>(d)->alpha;
      break;
    case kTfLiteBuiltinReshape: {
      const auto* c = static_cast<const TfLiteReshapeParams*>(d);
      const int n = std::clamp(c->num_dimensions, 0, 8);
      p.reshape_shape.assign(c->shape, c->shape + n);
      break;
    }
    case kTfLiteBuiltinResizeNearestNeighbor: {
      const auto* c = static_cast<const TfLiteResizeNearestNeighborParams*>(d);
      p.align_corners = c->align_corners;
      p.half_pixel_centers = c->half_pixel_centers;
      break;
    }
    case kTfLiteBuiltinResizeBilinear: {
      const auto* c = static_cast<const TfLiteResizeBilinearParams*>(d);
      p.align_corners = c->align_corners;
      p.half_pixel_centers = c->half_pixel_centers;
      break;
    }
    case kTfLiteBuiltinSpaceToDepth:
      p.block_size = static_cast<const TfLiteSpaceToDepthParams*>(d)->block_size;
      break;
    case kTfLiteBuiltinDepthToSpace:
      p.block_size = static_cast<const TfLiteDepthToSpaceParams*>(d)->block_size;
      break;
    case kTfLiteBuiltinStridedSlice: {
      const auto* c = static_cast<const TfLiteStridedSliceParams*>(d);
      p.begin_mask = c->begin_mask;
      p.end_mask = c->end_mask;
      p.ellipsis_mask = c->ellipsis_mask;
      p.new_axis_mask = c->new_axis_mask;
      p.shrink_axis_mask = c->shrink_axis_mask;
      p.slice_offset = c->offset;
      break;
    }
    case kTfLiteBuiltinSqueeze: {
      const auto* c = static_cast<const TfLiteSqueezeParams*>(d);
      const int n = std::clamp(c->num_squeeze_dims, 0, 8);
      p.squeeze_dims.assign(c->squeeze_dims, c->squeeze_dims + n);
      break;
    }
    default:
      break;
  }
  return s;
}

Translation translate(const TfLiteContext& context, const std::vector<NodeSpec>& specs) {
  return Translator(context).run(specs);
}

void apply_rules(Translation& t, const support::SupportConfig& config) {
  for (NodeResult& r : t.nodes) {
    if (!r.reasons.empty() || r.ir_op < 0) continue;
    for (const support::Violation& v : support::check_op(t.graph, r.ir_op, config)) {
      std::string text;
      for (const support::Rule& rule : support::rules()) {
        if (rule.name == v.rule) text = rule.text;
      }
      r.reasons.push_back({v.rule, v.detail, text});
    }
  }
}

}  // namespace nacc::tflite

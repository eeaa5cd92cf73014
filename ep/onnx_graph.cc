// Reading an OrtGraph into the OnnxGraph snapshot, and folding constant
// weight chains (onnx_graph.h).
#include "ep/onnx_graph.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "ir/ir.h"

namespace nacc::ep {

int64_t OnnxValue::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    n *= d;
  }
  return n;
}

bool OnnxValue::is_static() const {
  for (int64_t d : shape) {
    if (d <= 0) return false;
  }
  return true;
}

std::vector<double> OnnxValue::numbers() const {
  const int size = onnx_elem_size(elem_type);
  check_arg(is_constant && size > 0 && data.size() % size == 0, "value '", name,
            "' is not a numeric constant");
  const size_t n = data.size() / size;
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = data.data() + i * size;
    switch (elem_type) {
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: out[i] = static_cast<int8_t>(*p); break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: out[i] = *p; break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4: out[i] = static_cast<int8_t>(*p); break;  // unpacked
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT4: out[i] = *p; break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16: {
        int16_t v;
        std::memcpy(&v, p, 2);
        out[i] = v;
        break;
      }
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        out[i] = v;
        break;
      }
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: {
        int32_t v;
        std::memcpy(&v, p, 4);
        out[i] = v;
        break;
      }
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: {
        int64_t v;
        std::memcpy(&v, p, 8);
        out[i] = static_cast<double>(v);
        break;
      }
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: {
        float v;
        std::memcpy(&v, p, 4);
        out[i] = v;
        break;
      }
      default:
        throw InvalidArgument(str_cat("value '", name, "' has element type ",
                                      onnx_elem_name(elem_type)));
    }
  }
  return out;
}

std::optional<int64_t> OnnxNode::attr_int(const std::string& n) const {
  auto it = attrs.find(n);
  if (it == attrs.end() || it->second.type != ORT_OP_ATTR_INT) return std::nullopt;
  return it->second.i;
}

int64_t OnnxNode::attr_int(const std::string& n, int64_t fallback) const {
  return attr_int(n).value_or(fallback);
}

float OnnxNode::attr_float(const std::string& n, float fallback) const {
  auto it = attrs.find(n);
  return it == attrs.end() || it->second.type != ORT_OP_ATTR_FLOAT ? fallback : it->second.f;
}

std::string OnnxNode::attr_string(const std::string& n, const std::string& fallback) const {
  auto it = attrs.find(n);
  return it == attrs.end() || it->second.type != ORT_OP_ATTR_STRING ? fallback : it->second.s;
}

std::optional<std::vector<int64_t>> OnnxNode::attr_ints(const std::string& n) const {
  auto it = attrs.find(n);
  if (it == attrs.end() || it->second.type != ORT_OP_ATTR_INTS) return std::nullopt;
  return it->second.ints;
}

std::string OnnxNode::label() const {
  return str_cat(op_type, " '", name, "'");
}

bool OnnxNode::is(const char* type, const char* dom) const {
  if (op_type != type) return false;
  if (std::strcmp(dom, "*") == 0) return domain.empty() || domain == "com.microsoft";
  return domain == dom || (dom[0] == '\0' && domain == "ai.onnx");
}

int OnnxGraph::find_value(const std::string& n) const {
  auto it = by_name_.find(n);
  return it == by_name_.end() ? -1 : it->second;
}

const OnnxNode* OnnxGraph::producer_if(int id, const char* op_type) const {
  if (id < 0) return nullptr;
  const int p = value(id).producer;
  if (p < 0) return nullptr;
  const OnnxNode& n = nodes[p];
  return n.is(op_type, "*") ? &n : nullptr;
}

const OnnxNode* OnnxGraph::sole_consumer(int id) const {
  if (id < 0) return nullptr;
  const OnnxValue& v = value(id);
  if (v.is_graph_output || v.consumers.size() != 1) return nullptr;
  return &nodes[v.consumers[0]];
}

// ---- constant folding of weight chains -------------------------------------------

int64_t ConstTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

constexpr int kMaxFoldDepth = 16;                  // chain length
constexpr int64_t kMaxFoldElements = int64_t{1} << 26;  // 64 Mi elements per tensor

bool is_int8_type(int t) {
  return t == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8 || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
}

// Element i of an int8 / uint8 / int32 tensor as an integer.
int64_t int_at(const ConstTensor& t, int64_t i) {
  switch (t.elem_type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: return static_cast<int8_t>(t.data[i]);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: return t.data[i];
    default: {
      int32_t v;
      std::memcpy(&v, t.data.data() + i * 4, 4);
      return v;
    }
  }
}

float float_at(const ConstTensor& t, int64_t i) {
  float v;
  std::memcpy(&v, t.data.data() + i * 4, 4);
  return v;
}

// Axis `a` of a rank-`rank` tensor in [0, rank), or -1.
int64_t normalize_axis(int64_t a, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (a < 0) a += r;
  return a >= 0 && a < r ? a : -1;
}

// Per-element channel index along `axis` (0 for per-tensor parameters).
struct AxisIndex {
  int64_t inner = 1, dim = 1;
  bool per_axis = false;
  int64_t operator()(int64_t i) const { return per_axis ? (i / inner) % dim : 0; }
};

}  // namespace

std::optional<std::string> OnnxGraph::fold_constant(int id, ConstTensor* out,
                                                    std::vector<int>* chain) const {
  std::vector<int> nodes;
  auto why = fold(id, out, &nodes, 0);
  if (!why && chain != nullptr) chain->insert(chain->end(), nodes.begin(), nodes.end());
  return why;
}

std::optional<std::string> OnnxGraph::fold(int id, ConstTensor* out, std::vector<int>* chain,
                                           int depth) const {
  if (id < 0) return std::string("an input is missing");
  const OnnxValue& v = value(id);
  if (v.is_constant) {
    const int size = onnx_elem_size(v.elem_type);
    if (size <= 0 || v.elements() < 0 ||
        static_cast<int64_t>(v.data.size()) != v.elements() * size) {
      return str_cat("'", v.name, "' is a constant without readable contents (",
                     onnx_elem_name(v.elem_type), ")");
    }
    out->elem_type = v.elem_type;
    out->shape = v.shape;
    out->data = v.data;
    return std::nullopt;
  }
  if (v.producer < 0) return str_cat("'", v.name, "' is not a constant initializer");
  if (depth >= kMaxFoldDepth) return str_cat("'", v.name, "' is more than ", kMaxFoldDepth,
                                             " nodes from its initializer");
  const OnnxNode& n = nodes[v.producer];
  if (sole_consumer(id) == nullptr) {
    return str_cat("'", v.name, "' (output of ", n.label(),
                   ") has other consumers, so its chain cannot be folded into one node");
  }
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    if (n.outputs[o] != id && n.outputs[o] >= 0 && !value(n.outputs[o]).consumers.empty()) {
      return str_cat(n.label(), " has another used output");
    }
  }
  // A parameter input (scale, zero point, shape, axes): a constant initializer.
  auto param = [&](size_t i, const char* what, const OnnxValue** p) -> std::optional<std::string> {
    *p = nullptr;
    const int pid = n.input(i);
    if (pid < 0) return std::nullopt;
    const OnnxValue& pv = value(pid);
    if (!pv.is_constant) return str_cat(n.label(), ": ", what, " '", pv.name, "' is not a constant");
    *p = &pv;
    return std::nullopt;
  };
  const bool layout = n.is("Transpose") || n.is("Reshape") || n.is("Flatten") || n.is("Squeeze") ||
                      n.is("Unsqueeze") || n.is("Identity");
  const bool qdq = n.is("QuantizeLinear", "*") || n.is("DequantizeLinear", "*");
  if (!layout && !qdq) {
    return str_cat("'", v.name, "' is computed by ", n.label(), ", which is not foldable (",
                   "DequantizeLinear, QuantizeLinear, Transpose, Reshape, Flatten, Squeeze, "
                   "Unsqueeze and Identity are)");
  }
  ConstTensor x;
  if (auto e = fold(n.input(0), &x, chain, depth + 1)) return e;
  chain->insert(chain->begin(), v.producer);  // consumer first
  const size_t rank = x.shape.size();
  const int64_t count = x.elements();
  if (count > kMaxFoldElements) return str_cat("'", v.name, "' has too many elements to fold");
  const int esize = onnx_elem_size(x.elem_type);

  if (layout) {
    std::vector<int64_t> shape;
    if (n.is("Identity")) {
      shape = x.shape;
    } else if (n.is("Transpose")) {
      std::vector<int64_t> perm(rank);
      std::iota(perm.rbegin(), perm.rend(), 0);
      if (auto p = n.attr_ints("perm")) perm = *p;
      std::vector<int64_t> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      std::vector<int64_t> identity(rank);
      std::iota(identity.begin(), identity.end(), 0);
      if (sorted != identity) {
        return str_cat(n.label(), ": perm ", ir::shape_str(perm), " is not a permutation of ",
                       rank, " axes");
      }
      std::vector<int64_t> in_stride(rank, 1);
      for (size_t d = rank; d-- > 1;) in_stride[d - 1] = in_stride[d] * x.shape[d];
      for (size_t d = 0; d < rank; ++d) shape.push_back(x.shape[perm[d]]);
      std::vector<uint8_t> data(x.data.size());
      std::vector<int64_t> idx(rank, 0);
      for (int64_t o = 0; o < count; ++o) {
        int64_t src = 0;
        for (size_t d = 0; d < rank; ++d) src += idx[d] * in_stride[perm[d]];
        std::memcpy(data.data() + o * esize, x.data.data() + src * esize, esize);
        for (size_t d = rank; d-- > 0;) {
          if (++idx[d] < shape[d]) break;
          idx[d] = 0;
        }
      }
      x.data = std::move(data);
    } else if (n.is("Flatten")) {
      const int64_t a = n.attr_int("axis", 1);
      const int64_t axis = a < 0 ? a + static_cast<int64_t>(rank) : a;
      if (axis < 0 || axis > static_cast<int64_t>(rank)) return str_cat(n.label(), ": axis ", a);
      int64_t outer = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
      shape = {outer, outer ? count / outer : 0};
    } else if (n.is("Reshape")) {
      const OnnxValue* sv = nullptr;
      if (auto e = param(1, "shape", &sv)) return e;
      if (sv == nullptr || sv->elem_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64) {
        return str_cat(n.label(), ": the shape is not an int64 constant");
      }
      const bool allowzero = n.attr_int("allowzero", 0) != 0;
      int infer = -1;
      int64_t known = 1;
      for (double d : sv->numbers()) {
        int64_t s = static_cast<int64_t>(d);
        if (s == 0 && !allowzero) {
          if (shape.size() >= rank) return str_cat(n.label(), ": shape 0 past the input's rank");
          s = x.shape[shape.size()];
        }
        if (s == -1) {
          if (infer >= 0) return str_cat(n.label(), ": two -1 in the shape");
          infer = static_cast<int>(shape.size());
        } else if (s < 0) {
          return str_cat(n.label(), ": dimension ", s);
        } else {
          known *= s;
        }
        shape.push_back(s);
      }
      if (infer >= 0) {
        if (known == 0 || count % known != 0) return str_cat(n.label(), ": cannot infer -1");
        shape[infer] = count / known;
      }
    } else {  // Squeeze / Unsqueeze: axes from input 1 (opset 13) or the attribute
      std::vector<int64_t> axes;
      const OnnxValue* av = nullptr;
      if (auto e = param(1, "axes", &av)) return e;
      if (av != nullptr) {
        for (double d : av->numbers()) axes.push_back(static_cast<int64_t>(d));
      } else if (auto a = n.attr_ints("axes")) {
        axes = *a;
      }
      if (n.is("Squeeze")) {
        std::vector<bool> drop(rank, axes.empty());
        for (int64_t a : axes) {
          const int64_t d = normalize_axis(a, rank);
          if (d < 0 || x.shape[d] != 1) return str_cat(n.label(), ": axis ", a, " is not of size 1");
          drop[d] = true;
        }
        for (size_t d = 0; d < rank; ++d) {
          if (!(drop[d] && x.shape[d] == 1)) shape.push_back(x.shape[d]);
        }
      } else {
        const size_t out_rank = rank + axes.size();
        std::vector<bool> inserted(out_rank, false);
        for (int64_t a : axes) {
          const int64_t d = normalize_axis(a, out_rank);
          if (d < 0 || inserted[d]) return str_cat(n.label(), ": axis ", a);
          inserted[d] = true;
        }
        size_t k = 0;
        for (size_t d = 0; d < out_rank; ++d) shape.push_back(inserted[d] ? 1 : x.shape[k++]);
      }
    }
    int64_t out_count = 1;
    for (int64_t d : shape) out_count *= d;
    if (out_count != count) {
      return str_cat(n.label(), ": ", ir::shape_str(x.shape), " -> ", ir::shape_str(shape),
                     " changes the element count");
    }
    x.shape = std::move(shape);
    *out = std::move(x);
    return std::nullopt;
  }

  // QuantizeLinear / DequantizeLinear.
  const bool quantize = n.is("QuantizeLinear", "*");
  if (n.attr_int("block_size", 0) != 0) return str_cat(n.label(), ": blocked quantization");
  const OnnxValue *sv = nullptr, *zv = nullptr;
  if (auto e = param(1, "scale", &sv)) return e;
  if (auto e = param(2, "zero point", &zv)) return e;
  if (sv == nullptr || sv->elem_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
    return str_cat(n.label(), ": the scale is not a float32 constant");
  }
  const std::vector<double> scales = sv->numbers();
  std::vector<double> zps = zv ? zv->numbers() : std::vector<double>(scales.size(), 0.0);
  if (zps.size() != scales.size() || scales.empty()) {
    return str_cat(n.label(), ": ", zps.size(), " zero points for ", scales.size(), " scales");
  }
  AxisIndex ax;
  if (!sv->shape.empty()) {  // a 1-D scale is per axis
    const int64_t a = normalize_axis(n.attr_int("axis", 1), rank);
    if (sv->shape.size() != 1 || a < 0 || x.shape[a] != static_cast<int64_t>(scales.size())) {
      return str_cat(n.label(), ": ", scales.size(), " scales do not fit axis ",
                     n.attr_int("axis", 1), " of ", ir::shape_str(x.shape));
    }
    ax.per_axis = true;
    ax.dim = x.shape[a];
    for (size_t d = static_cast<size_t>(a) + 1; d < rank; ++d) ax.inner *= x.shape[d];
  }
  ConstTensor y;
  y.shape = x.shape;
  if (!quantize) {
    if (!(is_int8_type(x.elem_type) || x.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32) ||
        (zv && zv->elem_type != x.elem_type)) {
      return str_cat(n.label(), ": dequantizes ", onnx_elem_name(x.elem_type),
                     " (int8, uint8 or int32 with a zero point of that type needed)");
    }
    y.elem_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    y.data.resize(static_cast<size_t>(count) * 4);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t c = ax(i);
      // ONNX Runtime: static_cast<float>(x - zero_point) * scale
      const float f = static_cast<float>(int_at(x, i) - static_cast<int64_t>(zps[c])) *
                      static_cast<float>(scales[c]);
      std::memcpy(y.data.data() + i * 4, &f, 4);
    }
    *out = std::move(y);
    return std::nullopt;
  }
  if (x.elem_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
    return str_cat(n.label(), ": quantizes ", onnx_elem_name(x.elem_type), " (float32 needed)");
  }
  int out_type = zv ? zv->elem_type
                    : static_cast<int>(n.attr_int("output_dtype", ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8));
  if (out_type == 0) out_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
  if (!is_int8_type(out_type)) {
    return str_cat(n.label(), ": quantizes to ", onnx_elem_name(out_type), " (int8 or uint8 folded)");
  }
  const bool u8 = out_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
  const float lo = u8 ? 0.0f : -128.0f, hi = u8 ? 255.0f : 127.0f;
  y.elem_type = out_type;
  y.data.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t c = ax(i);
    const float s = static_cast<float>(scales[c]);
    const float f = float_at(x, i);
    if (!std::isfinite(f) || !(s > 0.0f) || !std::isfinite(s)) {
      return str_cat(n.label(), ": a non-finite value or scale (not folded)");
    }
    // ONNX Runtime (MLAS): x / scale in float32, round half to even, plus the
    // zero point, saturated to the output type.
    const float q = std::nearbyint(f / s) + static_cast<float>(zps[c]);
    const int32_t r = static_cast<int32_t>(std::min(hi, std::max(lo, q)));
    y.data[i] = static_cast<uint8_t>(r);  // two's complement for int8
  }
  *out = std::move(y);
  return std::nullopt;
}

OnnxGraph OnnxGraph::read(const Api& api, const OrtGraph* graph) {
  OnnxGraph g;
  const char* gname = nullptr;
  api.check(api.ort->Graph_GetName(graph, &gname));
  g.name = gname ? gname : "";

  // Value ids by OrtValueInfo* (ORT keeps one OrtValueInfo per value in a graph)
  std::map<const OrtValueInfo*, int> ids;
  std::vector<const OrtValueInfo*> infos;
  auto intern = [&](const OrtValueInfo* vi) -> int {
    if (vi == nullptr) return -1;
    auto it = ids.find(vi);
    if (it != ids.end()) return it->second;
    const std::string name = value_name(api, vi);
    if (name.empty()) return -1;  // an omitted optional input / output
    auto by = g.by_name_.find(name);
    if (by != g.by_name_.end()) {  // same value seen through another OrtValueInfo*
      ids[vi] = by->second;
      return by->second;
    }
    OnnxValue v;
    v.name = name;
    const TensorType t = value_type(api, vi);
    v.elem_type = t.elem_type;
    v.shape = t.shape;
    bool constant = false;
    api.check(api.ort->ValueInfo_IsConstantInitializer(vi, &constant));
    if (constant) {
      const OrtValue* init = nullptr;
      api.check(api.ort->ValueInfo_GetInitializerValue(vi, &init));
      if (init != nullptr) {
        const TensorView view = tensor_view(api, init);
        const int size = onnx_elem_size(view.elem_type);
        v.is_constant = true;
        v.elem_type = view.elem_type;
        v.shape = view.shape;
        const bool four_bit = view.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4 ||
                              view.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT4;
        if (four_bit && view.data != nullptr) {
          // ORT packs 4-bit tensors two per byte, element 2i in the low
          // nibble; held unpacked (INT4 sign-extended) like ir::DType::kInt4.
          const auto* p = static_cast<const uint8_t*>(view.data);
          v.data.resize(static_cast<size_t>(view.elements));
          for (size_t i = 0; i < view.elements; ++i) {
            const int nib = (i % 2 ? p[i / 2] >> 4 : p[i / 2]) & 0xF;
            const bool s4 = view.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4;
            v.data[static_cast<size_t>(i)] = static_cast<uint8_t>(s4 && nib >= 8 ? nib - 16 : nib);
          }
        } else if (size > 0 && view.data != nullptr) {
          const auto* p = static_cast<const uint8_t*>(view.data);
          v.data.assign(p, p + view.elements * size);
        }
      }
    }
    bool out = false;
    api.check(api.ort->ValueInfo_IsGraphOutput(vi, &out));
    v.is_graph_output = out;
    const int id = static_cast<int>(g.values.size());
    g.values.push_back(std::move(v));
    infos.push_back(vi);
    ids[vi] = id;
    g.by_name_[name] = id;
    return id;
  };

  size_t n = 0;
  api.check(api.ort->Graph_GetNumInputs(graph, &n));
  std::vector<const OrtValueInfo*> vis(n);
  if (n) api.check(api.ort->Graph_GetInputs(graph, vis.data(), n));
  for (const OrtValueInfo* vi : vis) {
    const int id = intern(vi);
    if (id >= 0) {
      g.values[id].is_graph_input = true;
      g.inputs.push_back(id);
    }
  }
  api.check(api.ort->Graph_GetNumOutputs(graph, &n));
  vis.assign(n, nullptr);
  if (n) api.check(api.ort->Graph_GetOutputs(graph, vis.data(), n));
  for (const OrtValueInfo* vi : vis) {
    const int id = intern(vi);
    if (id >= 0) {
      g.values[id].is_graph_output = true;
      g.outputs.push_back(id);
    }
  }

  api.check(api.ort->Graph_GetNumNodes(graph, &n));
  std::vector<const OrtNode*> handles(n);
  if (n) api.check(api.ort->Graph_GetNodes(graph, handles.data(), n));
  g.nodes.reserve(n);
  for (const OrtNode* h : handles) {
    OnnxNode node;
    node.handle = h;
    const char* s = nullptr;
    api.check(api.ort->Node_GetName(h, &s));
    node.name = s ? s : "";
    api.check(api.ort->Node_GetOperatorType(h, &s));
    node.op_type = s ? s : "";
    api.check(api.ort->Node_GetDomain(h, &s));
    node.domain = s ? s : "";
    api.check(api.ort->Node_GetSinceVersion(h, &node.since_version));
    size_t k = 0;
    api.check(api.ort->Node_GetNumInputs(h, &k));
    std::vector<const OrtValueInfo*> ins(k);
    if (k) api.check(api.ort->Node_GetInputs(h, ins.data(), k));
    for (const OrtValueInfo* vi : ins) node.inputs.push_back(intern(vi));
    api.check(api.ort->Node_GetNumOutputs(h, &k));
    std::vector<const OrtValueInfo*> outs(k);
    if (k) api.check(api.ort->Node_GetOutputs(h, outs.data(), k));
    for (const OrtValueInfo* vi : outs) node.outputs.push_back(intern(vi));
    for (auto& [name, attr] : read_attributes(api, h)) node.attrs.emplace(name, std::move(attr));
    g.nodes.push_back(std::move(node));
  }

  // Producers and consumers within this graph.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int id : g.nodes[i].inputs) {
      if (id >= 0) g.values[id].consumers.push_back(static_cast<int>(i));
    }
    for (int id : g.nodes[i].outputs) {
      if (id >= 0) g.values[id].producer = static_cast<int>(i);
    }
  }
  // A value with more consumers in ORT's view than in this graph (implicit
  // inputs of control-flow subgraphs, nodes outside a fused subgraph) is
  // treated like a graph output: it must stay visible.
  for (size_t id = 0; id < g.values.size(); ++id) {
    size_t count = 0;
    api.check(api.ort->ValueInfo_GetValueNumConsumers(infos[id], &count));
    if (count > g.values[id].consumers.size()) g.values[id].is_graph_output = true;
  }
  return g;
}

}  // namespace nacc::ep

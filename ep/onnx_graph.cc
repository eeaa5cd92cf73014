// Reading an OrtGraph into the OnnxGraph snapshot (onnx_graph.h).
#include "ep/onnx_graph.h"

#include <cstring>

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
        if (size > 0 && view.data != nullptr) {
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

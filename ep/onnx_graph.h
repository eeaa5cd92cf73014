// A plain C++ snapshot of the OrtGraph ORT hands to GetCapability / Compile:
// nodes (type, domain, attributes, input/output value ids), values (element
// type, shape, constant contents, producer, consumers). The capability and
// translation code reads this snapshot, never the ORT API, so it has one
// source of truth and no ORT calls in its logic.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ep/ort_api.h"

namespace nacc::ep {

struct OnnxValue {
  std::string name;
  int elem_type = 0;             // ONNXTensorElementDataType; 0 = unknown / not a tensor
  std::vector<int64_t> shape;    // -1 for a symbolic dimension
  bool is_constant = false;      // a constant initializer (not overridable)
  std::vector<uint8_t> data;     // its contents (row-major, little-endian) when constant
  bool is_graph_input = false;
  bool is_graph_output = false;  // or consumed outside the graph ORT showed us
  int producer = -1;             // node index, -1 for graph inputs and initializers
  std::vector<int> consumers;    // node indices (a node appears once per input it uses)

  int64_t elements() const;      // product of shape, -1 when a dimension is unknown
  bool is_static() const;
  // Constant contents as numbers (int8, uint8, int32, int64, float; throws otherwise).
  std::vector<double> numbers() const;
};

// A constant tensor evaluated from initializers (OnnxGraph::fold_constant).
struct ConstTensor {
  int elem_type = 0;             // ONNXTensorElementDataType
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;     // row-major, little-endian, elements() x element size
  int64_t elements() const;
};

struct OnnxNode {
  const OrtNode* handle = nullptr;
  std::string name, op_type, domain;  // domain "" for the default ONNX domain
  int since_version = 0;              // the opset version of the op's schema
  std::vector<int> inputs;            // value ids; -1 = omitted optional input
  std::vector<int> outputs;           // value ids; -1 = omitted optional output
  std::map<std::string, Attribute> attrs;

  std::optional<int64_t> attr_int(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  float attr_float(const std::string& name, float fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::optional<std::vector<int64_t>> attr_ints(const std::string& name) const;
  int input(size_t i) const { return i < inputs.size() ? inputs[i] : -1; }
  // "Conv 'name'" for messages.
  std::string label() const;
  bool is(const char* type, const char* dom = "") const;
};

// Data derived from a graph once and shared by its copies (translate.cc's
// layout-chain maps, by chain input and steps).
struct OnnxGraphMemo {
  std::mutex mu;
  std::map<std::vector<int>, std::shared_ptr<const std::vector<int64_t>>> layout_maps;
};

struct OnnxGraph {
  std::shared_ptr<OnnxGraphMemo> memo = std::make_shared<OnnxGraphMemo>();
  std::string name;
  std::vector<OnnxNode> nodes;    // in the order ORT lists them (topological)
  std::vector<OnnxValue> values;
  std::vector<int> inputs;        // graph inputs (value ids)
  std::vector<int> outputs;       // graph outputs (value ids)

  // Reads `graph` through the C API. Constant initializers are copied.
  static OnnxGraph read(const Api& api, const OrtGraph* graph);

  const OnnxValue& value(int id) const { return values.at(static_cast<size_t>(id)); }
  int find_value(const std::string& name) const;  // -1 when absent
  // The node producing value `id` when it is `op_type` (default domain or
  // com.microsoft), else nullptr.
  const OnnxNode* producer_if(int id, const char* op_type) const;
  // The only consumer of value `id` (nullptr if zero or several, or a graph output).
  const OnnxNode* sole_consumer(int id) const;
  // Value `id` as a constant: a constant initializer, or the output of a
  // chain of DequantizeLinear / QuantizeLinear / Transpose / Reshape /
  // Flatten / Squeeze / Unsqueeze / Identity nodes over constant
  // initializers (what quantize_static, PyTorch and tf2onnx exports put
  // between a weight initializer and the DequantizeLinear of a Conv, MatMul or
  // Gemm), evaluated with ONNX Runtime's CPU semantics: DequantizeLinear
  // (x - zero point) * scale in float32, QuantizeLinear round-half-even of
  // x / scale in float32 plus zero point, saturated; per-axis scales on the
  // node's own `axis`. Every value in the chain must have exactly one
  // consumer, so the chain can be claimed with the node it feeds. Appends the
  // chain's nodes (consumer first) to `chain` when not null; returns why the
  // value is not such a constant (and leaves *out unspecified).
  std::optional<std::string> fold_constant(int id, ConstTensor* out,
                                           std::vector<int>* chain = nullptr) const;
  int index_of(const OnnxNode* node) const { return static_cast<int>(node - nodes.data()); }

 private:
  std::optional<std::string> fold(int id, ConstTensor* out, std::vector<int>* chain,
                                  int depth) const;
  std::map<std::string, int> by_name_;
};

}  // namespace nacc::ep

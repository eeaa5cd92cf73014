// ONNX -> IR: finds the node units the NPU may run (QDQ groups
// DequantizeLinear -> op -> QuantizeLinear, and QOperator ops), and translates
// each into IR ops. One function decides and builds (STYLE.md, Arm NN): the
// same translate_unit answers "can this unit be expressed?" for GetCapability
// and builds the partition graph for Compile, so claim and compile agree.
//
// Layout: every rank-4 ONNX activation (NCHW) becomes an NHWC IR tensor;
// Compute converts at the partition boundary (kernel.h). uint8 activations
// map exactly to int8 with zero point - 128 (the bytes are flipped at the
// boundary); uint8 weights only when their zero point is 128.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ep/config.h"
#include "ep/onnx_graph.h"
#include "ir/ir.h"

namespace nacc::ep {

// The ONNX nodes that become one IR op.
struct NodeUnit {
  // kInt8: MaxPool / Reshape / Flatten applied directly to an int8 tensor
  // (QOperator models); its quantization is its input's, found upstream.
  enum class Form { kQdq, kQOperator, kInt8 };
  Form form = Form::kQdq;
  int target = -1;            // the op node (Conv, QLinearConv, ...)
  std::vector<int> dq;        // QDQ: DequantizeLinear node per target input (-1: none / param)
  int activation = -1;        // QDQ: Relu / Clip between the target and its QuantizeLinear
  int q = -1;                 // QDQ: the QuantizeLinear of the output
  // QDQ Split: the QuantizeLinear of each output, in output order (q is the
  // first); empty for every other unit.
  std::vector<int> outputs_q;
  std::vector<int> nodes;     // every node of the unit, target first
  // A layout chain folded into the unit (find_layout_chain in translate.cc):
  // Reshape / Flatten / Transpose / Squeeze / Unsqueeze steps, with
  // same-quantization QuantizeLinear -> DequantizeLinear pairs between them,
  // from the 4-D NCHW value `layout_input` to the target's input (a Gemm /
  // MatMul: its weight columns are permuted to the NPU's HWC order) or ending
  // in the target itself (a channel permutation of a 4-D map). -1: none.
  int layout_input = -1;
  std::vector<int> layout_steps;  // the layout nodes, in data order

  const char* form_name() const {
    return form == Form::kQdq ? "QDQ" : form == Form::kQOperator ? "QOperator" : "int8";
  }
};

// Result of scanning a graph for units: the units, and for op nodes the NPU
// implements that do not form a unit, the reason.
struct UnitScan {
  std::vector<NodeUnit> units;
  std::map<int, std::string> not_a_unit;  // node index -> reason
};

UnitScan find_units(const OnnxGraph& g);

// Whether the op type names an op the NPU may run in some unit form (for the
// two-level "runs on the host" messages).
bool is_npu_candidate(const OnnxNode& node);
// Whether it is the float op of a QDQ unit form (Conv, Relu, ...), as opposed
// to a QOperator op or a (De)QuantizeLinear.
bool translate_is_float_op(const OnnxNode& node);

// How a partition input/output crosses the boundary.
struct IoBinding {
  std::string name;                 // ONNX value name (= IR tensor name)
  int elem_type = 0;                // ONNX int8 or uint8
  std::vector<int64_t> onnx_shape;  // as ORT sees it (NCHW for rank 4)
  std::vector<int64_t> ir_shape;    // as the Program sees it (NHWC for rank 4)
  bool nchw = false;                // rank 4: NCHW <-> NHWC conversion
  int64_t bytes() const;
};

// Builds IR ops for units, one IR tensor per ONNX value.
class IrBuilder {
 public:
  IrBuilder(const OnnxGraph& g, const Config& config) : g_(g), config_(config) {}

  // Adds the IR op(s) of `unit`, or returns why the unit cannot be expressed
  // (the graph is left unchanged in that case).
  std::optional<std::string> add_unit(const NodeUnit& unit);

  const ir::Graph& graph() const { return graph_; }
  ir::Graph& graph() { return graph_; }
  // IR tensor id of ONNX value `value_id`, or -1.
  int tensor_of(int value_id) const;
  // Boundary description of ONNX value `value_id` (must have an IR tensor).
  IoBinding binding(int value_id) const;
  // Useful multiply-accumulates of the ops added so far (ir::op_macs).
  int64_t macs() const;
  // Only nodes with (*in_set)[node] may define the quantization of int8-form
  // units (a partition cannot see nodes outside it at Compile time).
  void restrict_to(const std::vector<bool>* in_set) { restrict_ = in_set; }
  // IR op indices added by the last successful add_unit.
  const std::vector<int>& last_ops() const { return last_ops_; }

 private:
  struct Pending;  // ops and tensors of one unit before they are committed
  const OnnxGraph& g_;
  const Config& config_;
  ir::Graph graph_;
  std::map<int, int> tensor_of_;  // ONNX value id -> IR tensor id
  std::map<int, int> elem_type_;  // ONNX value id -> ONNX elem type (int8 / uint8)
  // Rank-4 values whose IR tensor holds the ONNX bytes as they are (a
  // partition input read through a layout chain): bound without the NCHW
  // conversion, and read by no other unit.
  std::set<int> raw_order_;
  std::vector<int> last_ops_;
  const std::vector<bool>* restrict_ = nullptr;
  friend struct UnitTranslator;
};

}  // namespace nacc::ep

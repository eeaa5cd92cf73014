// TFLite nodes -> the core's IR. One function translates a node into an IR op
// and records why it cannot run on the NPU when the reason lies in TFLite's
// own terms (op version, hybrid or 16x8 quantization, int4 / block-quantized
// weights, options the IR has no field for). The capability rules of
// csrc/support then judge the very op that the compiler will get, so claim
// and compile cannot disagree (STYLE.md, "one function decides and builds").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"
#include "support/rules.h"
#include "tflite_abi.h"

namespace nacc::tflite {

// Name of a builtin operator code ("CONV_2D"), "UNKNOWN_<code>" past the table.
std::string builtin_name(int32_t code);

// The builtin options of a node, read out of its builtin_data once (the
// delegate may translate the node again after its Prepare, when TFLite no
// longer lets it look nodes up). Only the fields the translation reads.
struct NodeParams {
  bool present = false;  // builtin_data was non-null
  int padding = 0;       // TfLitePadding
  int stride_w = 1, stride_h = 1;
  int dilation_w = 1, dilation_h = 1;
  int filter_w = 0, filter_h = 0;  // pools
  int depth_multiplier = 0;
  int activation = 0;  // TfLiteFusedActivation
  int weights_format = 0;
  bool keep_num_dims = false;
  bool asymmetric_quantize_inputs = false;
  bool adj_x = false, adj_y = false;
  bool keep_dims = false;
  int axis = 0;
  float alpha = 0.0f;
  bool pot_scale_int16 = false;  // ADD / SUB
  std::vector<int> squeeze_dims;
  std::vector<int> reshape_shape;
  // STRIDED_SLICE
  int begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0, shrink_axis_mask = 0;
  bool slice_offset = false;
  bool align_corners = false, half_pixel_centers = false;  // RESIZE_NEAREST_NEIGHBOR
  int block_size = 0;                                      // SPACE_TO_DEPTH, DEPTH_TO_SPACE
};

// A TFLite node as the delegate keeps it.
struct NodeSpec {
  int index = -1;  // TFLite node index
  int32_t builtin_code = 0;
  int version = 1;
  std::string custom_name;  // CUSTOM ops
  NodeParams params;
  std::vector<int> inputs;   // TFLite tensor indices, -1 = omitted optional input
  std::vector<int> outputs;
};

NodeSpec capture_node(int index, const TfLiteNode& node, const TfLiteRegistration& registration);

// Why a node stays on the host.
struct Reason {
  std::string rule;    // capability-rule name, or a frontend check ("op_version", "hybrid", ...)
  std::string detail;  // what the node has: "stride 4x4"
  std::string text;    // the rule: "stride must be in [1, 3] (...)"
  std::string display() const;  // "detail — text"
};

struct NodeResult {
  NodeSpec spec;
  std::string op_type;  // "CONV_2D", "SOFTMAX", a custom op's name
  std::string name;     // the node's first output tensor name ("" if none)
  int ir_op = -1;       // index into Translation::graph.ops, -1 if not translated
  // Host-only by kind or data type (an op the NPU has no unit for, a float32
  // op, a float<->int8 (de)quantization): logged at info level, by kind.
  bool host_kind = false;
  std::vector<Reason> reasons;  // empty: the NPU runs it
  int64_t macs = 0;             // ir::op_macs of its IR op
  bool claimable() const { return reasons.empty() && ir_op >= 0; }
  std::string label() const;    // "CONV_2D 'name'" or "CONV_2D #12"
};

struct Translation {
  ir::Graph graph;
  std::vector<NodeResult> nodes;  // in the order translated
  std::unordered_map<int, int> node_position;  // TFLite node index -> position in nodes
  std::unordered_map<int, int> ir_tensor;      // TFLite tensor index -> IR tensor id
  std::vector<int> tflite_tensor;              // IR tensor id -> TFLite tensor index
  const NodeResult* node(int tflite_index) const;
};

// Translates `specs` (in execution order) into one IR graph with tensors
// read from `context`. Outputs of NPU-kind ops get the shapes their inputs
// imply (TFLite's dims for everything else): after an input resize, the
// runtime re-applies the delegate before it has re-prepared its own ops, so
// downstream dims may still be the old ones.
// Frontend reasons are recorded; the capability rules are not run.
Translation translate(const TfLiteContext& context, const std::vector<NodeSpec>& specs);

// Runs the capability rules on every translated node that has no frontend
// reason yet, appending the violations as reasons.
void apply_rules(Translation& translation, const support::SupportConfig& config);

}  // namespace nacc::tflite

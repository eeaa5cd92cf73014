// The capability rules: ONE declarative table saying which IR ops the NPU
// runs. Each rule is a named predicate with a one-line rule text built from
// the named limits of common/limits.h; it returns the detail of a violating
// node. The same table answers the frontends' per-node "supported?" (and
// why not), generates docs/supported_ops.md, and fills per-model reports.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "support/sram.h"

namespace nacc::support {

// Returns the detail of the violation ("stride 4x4"), or nullopt when the op
// satisfies the rule. Called only for ops of the rule's kinds, and only after
// every earlier gate rule held.
using RuleCheck = std::optional<std::string> (*)(const ir::Graph& graph, const ir::Op& op,
                                                 const SupportConfig& config);

struct Rule {
  std::string name;               // stable identifier, e.g. "stride"
  std::vector<ir::OpKind> kinds;  // the kinds it applies to; empty = every NPU kind
  std::string text;               // the user-facing rule, e.g. "stride must be in [1, 3]"
  // A gate checks the structure later rules rely on (operand count, static
  // shapes, ranks, consistent shapes); when it fails, check_op stops there.
  bool gate = false;
  RuleCheck check = nullptr;

  bool is_general() const { return kinds.empty(); }
  bool applies_to(ir::OpKind kind) const;
};

// The table, in evaluation order.
const std::vector<Rule>& rules();

struct Violation {
  std::string rule;     // Rule::name
  std::string detail;   // what the node has, e.g. "stride 4x4"
  // "<op type> <label>: <detail> — <rule text>", e.g.
  // "CONV_2D 'conv7': stride 4x4 — stride must be in [1, 3] (...)".
  std::string message;
};

// Every rule `graph.ops[op_index]` violates (stopping after a failed gate);
// empty = the NPU runs it. An OTHER op yields the single violation
// "npu_op_kind". Throws InvalidArgument only for an op index out of range.
std::vector<Violation> check_op(const ir::Graph& graph, int op_index,
                                const SupportConfig& config = SupportConfig{});

// The data forms (NACC_SPEC §9) in which the NPU runs TFLite ops of `kind`:
// "int8" (every kind), "16x8" (int16 maps, int8 weights: the kinds with a
// 16-bit lowering), "int8, int4 weights" (CONV_2D, FULLY_CONNECTED) and
// "16x8, int4 weights" (FULLY_CONNECTED, TFLite's version 13), "int16 ->
// int8" (QUANTIZE, MUL: int16 inputs, an int8 output). The rules
// above decide each node; this is the summary docs/supported_ops.md prints.
std::vector<std::string> data_forms(ir::OpKind kind);

// Whether `op` can run image by image on a batch (docs/device_model.md
// "Batches"): nullopt when its first 4-D feature map has batch 1, or when
// every feature map leads with that batch N (constant operands batch 1) and
// it neither concatenates nor reduces along the batch; BATCH_MATMUL only
// with leading dimensions 1. Otherwise what violates it. The batch_size rule
// and partition::compile_partition (which compiles one image) both use it.
std::optional<std::string> batch_wise(const ir::Graph& graph, const ir::Op& op);

}  // namespace nacc::support

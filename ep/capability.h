// GetCapability's decision: which node units the NPU runs (translation into
// the IR + the capability rules of support/), grouped into partitions that
// keep the graph acyclic, with a fragmentation guard; everything else is
// declined with its reason. The result doubles as nacc's partition report.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ep/config.h"
#include "ep/onnx_graph.h"
#include "ep/translate.h"

namespace nacc::ep {

struct PlannedPartition {
  std::vector<int> nodes;  // OnnxGraph node indices, in graph order
  std::vector<int> units;  // indices into CapabilityPlan::units
  int ir_ops = 0;
  int64_t macs = 0;
};

// A node that stays on the host and why.
struct HostNode {
  int node = -1;
  std::string reason;
  bool npu_candidate = false;  // an op kind the NPU runs in some form (Warning) or not (Info)
};

struct CapabilityPlan {
  std::string graph_name;
  int total_nodes = 0;
  std::vector<NodeUnit> units;             // every unit found
  std::vector<PlannedPartition> partitions;
  std::vector<HostNode> host_nodes;        // one per node left on the host
  std::vector<std::string> ep_context_nodes;  // names of our EPContext nodes (compiled models)

  int claimed_nodes() const;
  // "claimed 58/64 nodes in 3 partitions"
  std::string summary() const;
  // The partition report as JSON (graph, claimed, partitions with nodes, ops,
  // MACs, host nodes with reasons).
  std::string to_json(const OnnxGraph& g) const;
};

// `declined`: unit target node -> reason, for units already known not to run
// (e.g. the compiler rejected them); they stay on the host with that reason.
// `cuts`: unit target nodes that start a partition of their own instead of
// joining a predecessor's (a partition that does not compile as a whole, e.g.
// with more inputs and outputs than the DMA regions hold, is cut before its
// last unit rather than giving that unit to the host).
CapabilityPlan plan_capability(const OnnxGraph& g, const Config& config,
                               const std::map<int, std::string>& declined = {},
                               const std::set<int>& cuts = {});

}  // namespace nacc::ep

namespace nacc::ep {

// The IR graph of one partition: the units whose nodes are all in `nodes`,
// translated in graph order; inputs / outputs are the boundary activations
// sorted by name (the same for the full graph in GetCapability and the fused
// subgraph in Compile, so both build the identical graph and fingerprint).
struct PartitionIr {
  ir::Graph graph;
  std::vector<IoBinding> inputs, outputs;
  int64_t macs = 0;
  // Boundary TRANSPOSEs the Program runs on the layout unit (option
  // boundary_layout=device; docs/onnxruntime_ep.md "Layout and types").
  int layout_transposes = 0;
};

// Throws Unsupported naming the unit that does not translate or a node that
// belongs to no unit.
PartitionIr build_partition(const OnnxGraph& g, const std::vector<int>& nodes, const Config& config);

}  // namespace nacc::ep

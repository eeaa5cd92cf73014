// Partition planning for GetCapability (capability.h).
//
// Pipeline: (1) find node units; (2) translate each unit alone into the IR and
// ask the capability rules; (3) walk the units in topological order and put
// each into a partition of one of its producers unless a path leaves that
// partition and comes back (which would make the fused graph cyclic — ORT
// rejects such groups), or the shared tensor is quantized differently; (4)
// dissolve partitions below the fragmentation guard; (5) give every node left
// on the host its reason.
#include "ep/capability.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "ep/backend.h"
#include "partition/policy.h"
#include "support/rules.h"
#include "support/transpose_copy.h"

namespace nacc::ep {

namespace {

std::string q(const std::string& s) { return json_quote(s); }

bool is_our_ep_context(const OnnxNode& n) {
  return n.op_type == "EPContext" && n.domain == "com.microsoft" &&
         n.attr_string("source", "") == kEpName;
}

}  // namespace

int CapabilityPlan::claimed_nodes() const {
  int n = 0;
  for (const auto& p : partitions) n += static_cast<int>(p.nodes.size());
  return n;
}

std::string CapabilityPlan::summary() const {
  return str_cat("NaccExecutionProvider: claimed ", claimed_nodes(), "/", total_nodes,
                 " nodes in ", partitions.size(), " partition", partitions.size() == 1 ? "" : "s",
                 " of graph '", graph_name, "'");
}

std::string CapabilityPlan::to_json(const OnnxGraph& g) const {
  std::string s = "{";
  s += str_cat("\"graph\": ", q(graph_name), ", \"total_nodes\": ", total_nodes,
               ", \"claimed_nodes\": ", claimed_nodes(), ", \"partitions\": [");
  for (size_t i = 0; i < partitions.size(); ++i) {
    const auto& p = partitions[i];
    s += str_cat(i ? ", " : "", "{\"index\": ", i, ", \"ir_ops\": ", p.ir_ops,
                 ", \"macs\": ", p.macs, ", \"nodes\": [");
    for (size_t k = 0; k < p.nodes.size(); ++k) {
      const OnnxNode& n = g.nodes[p.nodes[k]];
      s += str_cat(k ? ", " : "", "{\"name\": ", q(n.name), ", \"op_type\": ", q(n.op_type), "}");
    }
    s += "], \"units\": [";
    for (size_t k = 0; k < p.units.size(); ++k) {
      const NodeUnit& u = units[p.units[k]];
      s += str_cat(k ? ", " : "", "{\"form\": ", q(u.form_name()), ", \"op_type\": ",
                   q(g.nodes[u.target].op_type), ", \"name\": ", q(g.nodes[u.target].name), "}");
    }
    s += "]}";
  }
  s += "], \"host_nodes\": [";
  for (size_t i = 0; i < host_nodes.size(); ++i) {
    const auto& h = host_nodes[i];
    const OnnxNode& n = g.nodes[h.node];
    s += str_cat(i ? ", " : "", "{\"name\": ", q(n.name), ", \"op_type\": ", q(n.op_type),
                 ", \"domain\": ", q(n.domain), ", \"reason\": ", q(h.reason),
                 ", \"npu_candidate\": ", h.npu_candidate ? "true" : "false", "}");
  }
  s += "]}";
  return s;
}

CapabilityPlan plan_capability(const OnnxGraph& g, const Config& config,
                               const std::map<int, std::string>& declined,
                               const std::set<int>& cuts) {
  CapabilityPlan plan;
  plan.graph_name = g.name;
  plan.total_nodes = static_cast<int>(g.nodes.size());
  const int n_nodes = plan.total_nodes;
  const support::SupportConfig sc = partition::support_config(hw_config(config));

  // Compiled models: each of our EPContext nodes is a partition of its own.
  std::vector<bool> is_context(n_nodes, false);
  for (int i = 0; i < n_nodes; ++i) {
    if (is_our_ep_context(g.nodes[i])) {
      is_context[i] = true;
      plan.ep_context_nodes.push_back(g.nodes[i].name);
    }
  }

  // (1) + (2): units, each checked alone.
  UnitScan scan = find_units(g);
  plan.units = scan.units;
  const int n_units = static_cast<int>(plan.units.size());
  std::vector<std::string> unit_reason(n_units);
  std::vector<int> owner(n_nodes, -1);
  for (int u = 0; u < n_units; ++u) {
    const NodeUnit& unit = plan.units[u];
    for (int n : unit.nodes) {
      if (owner[n] >= 0 && unit_reason[u].empty()) {
        unit_reason[u] = str_cat(g.nodes[n].label(), " also belongs to another node unit");
      }
    }
    if (auto it = declined.find(unit.target); it != declined.end() && unit_reason[u].empty()) {
      unit_reason[u] = it->second;
    }
    if (!unit_reason[u].empty()) continue;
    IrBuilder solo(g, config);
    if (auto why = solo.add_unit(unit)) {
      unit_reason[u] = *why;
    } else {
      std::vector<std::string> violations;
      for (int op : solo.last_ops()) {
        for (const auto& v : support::check_op(solo.graph(), op, sc)) violations.push_back(v.message);
      }
      for (size_t k = 0; k < violations.size(); ++k) {
        unit_reason[u] += (k ? "; " : "") + violations[k];
      }
    }
    if (unit_reason[u].empty()) {
      for (int n : unit.nodes) owner[n] = u;
    }
  }

  // (3) groups: a claimable unit, or a single other node.
  std::vector<int> group_of(n_nodes, -1);
  std::vector<int> group_unit;  // unit index, or -1 for a single host node
  std::vector<std::vector<int>> group_nodes;
  for (int u = 0; u < n_units; ++u) {
    if (!unit_reason[u].empty()) continue;
    const int gid = static_cast<int>(group_unit.size());
    group_unit.push_back(u);
    group_nodes.push_back(plan.units[u].nodes);
    for (int n : plan.units[u].nodes) group_of[n] = gid;
  }
  for (int n = 0; n < n_nodes; ++n) {
    if (group_of[n] >= 0) continue;
    group_of[n] = static_cast<int>(group_unit.size());
    group_unit.push_back(-1);
    group_nodes.push_back({n});
  }
  const int n_groups = static_cast<int>(group_unit.size());
  std::vector<std::set<int>> preds(n_groups);
  std::vector<std::vector<int>> succs(n_groups);
  for (int n = 0; n < n_nodes; ++n) {
    for (int v : g.nodes[n].inputs) {
      if (v < 0) continue;
      const int p = g.value(v).producer;
      if (p < 0 || group_of[p] == group_of[n]) continue;
      if (preds[group_of[n]].insert(group_of[p]).second) succs[group_of[p]].push_back(group_of[n]);
    }
  }
  // Kahn's topological order of the groups, stable in node order.
  std::vector<int> indegree(n_groups), order;
  for (int gi = 0; gi < n_groups; ++gi) indegree[gi] = static_cast<int>(preds[gi].size());
  std::set<std::pair<int, int>> ready;  // (first node index, group)
  auto first_node = [&](int gi) { return *std::min_element(group_nodes[gi].begin(), group_nodes[gi].end()); };
  for (int gi = 0; gi < n_groups; ++gi) {
    if (indegree[gi] == 0) ready.insert({first_node(gi), gi});
  }
  while (!ready.empty()) {
    const int gi = ready.begin()->second;
    ready.erase(ready.begin());
    order.push_back(gi);
    for (int s : succs[gi]) {
      if (--indegree[s] == 0) ready.insert({first_node(s), s});
    }
  }
  const bool acyclic = static_cast<int>(order.size()) == n_groups;

  // A partition under construction. Its builder sees only the partition's
  // nodes as quantization sources (as Compile will), so an int8-form unit
  // joins only a partition that holds the op defining its quantization.
  struct Part {
    Part(const OnnxGraph& g, const Config& c) : builder(g, c), in_set(g.nodes.size(), false) {
      builder.restrict_to(&in_set);
    }
    std::vector<int> units;
    IrBuilder builder;
    std::vector<bool> in_set;
    std::optional<std::string> try_add(const NodeUnit& u) {
      for (int n : u.nodes) in_set[n] = true;
      auto why = builder.add_unit(u);
      if (why) {
        for (int n : u.nodes) in_set[n] = false;
      }
      return why;
    }
  };
  std::vector<std::unique_ptr<Part>> parts;
  std::vector<int> part_of(n_groups, -1);
  std::vector<std::set<int>> ext(n_groups);  // partitions reaching the group via a path that left them
  // Siblings: per value produced outside every partition (a graph input or a
  // host node's output), the partitions holding a unit that reads it. A unit
  // reading such a value may join them (after its producers' partitions):
  // sharing an input adds no path between partitions, and the forbidden set
  // (paths that left a partition) still keeps the partitions acyclic.
  std::map<int, std::vector<int>> readers;
  const auto outside_inputs = [&](int gi) {
    std::vector<int> vs;
    for (int n : group_nodes[gi]) {
      for (int v : g.nodes[n].inputs) {
        if (v < 0 || g.value(v).is_constant) continue;
        const int p = g.value(v).producer;
        if (p >= 0 && (group_of[p] == gi || part_of[group_of[p]] >= 0)) continue;
        if (std::find(vs.begin(), vs.end(), v) == vs.end()) vs.push_back(v);
      }
    }
    return vs;
  };
  if (acyclic) {
    for (int gi : order) {
      const int u = group_unit[gi];
      std::set<int> forbidden;
      std::vector<int> candidates;
      const auto add_candidate = [&](int c) {
        if (c >= 0 && std::find(candidates.begin(), candidates.end(), c) == candidates.end()) {
          candidates.push_back(c);
        }
      };
      for (int p : preds[gi]) {
        forbidden.insert(ext[p].begin(), ext[p].end());
        add_candidate(part_of[p]);
      }
      const std::vector<int> shared = u >= 0 ? outside_inputs(gi) : std::vector<int>{};
      for (int v : shared) {
        if (auto it = readers.find(v); it != readers.end()) {
          for (int c : it->second) add_candidate(c);
        }
      }
      if (u >= 0) {
        if (cuts.count(plan.units[u].target)) candidates.clear();
        for (int c : candidates) {
          if (forbidden.count(c)) continue;
          if (!parts[c]->try_add(plan.units[u])) {
            part_of[gi] = c;
            parts[c]->units.push_back(u);
            break;
          }
        }
        if (part_of[gi] < 0) {
          parts.push_back(std::make_unique<Part>(g, config));
          if (auto why = parts.back()->try_add(plan.units[u])) {
            // e.g. an int8-form unit whose quantization is defined outside
            // every partition it could join
            unit_reason[u] = *why;
            parts.pop_back();
          } else {
            parts.back()->units.push_back(u);
            part_of[gi] = static_cast<int>(parts.size()) - 1;
          }
        }
        if (part_of[gi] >= 0) {
          for (int v : shared) {
            auto& r = readers[v];
            if (std::find(r.begin(), r.end(), part_of[gi]) == r.end()) r.push_back(part_of[gi]);
          }
        }
      }
      for (int p : preds[gi]) {
        ext[gi].insert(ext[p].begin(), ext[p].end());
        if (part_of[p] >= 0 && part_of[p] != part_of[gi]) ext[gi].insert(part_of[p]);
      }
    }
  }

  // (4) fragmentation guard, then the plan's partitions.
  std::vector<std::string> node_reason(n_nodes);
  for (size_t pi = 0; pi < parts.size(); ++pi) {
    Part& part = *parts[pi];
    PlannedPartition pp;
    pp.units = part.units;
    pp.macs = part.builder.macs();
    pp.ir_ops = static_cast<int>(part.builder.graph().ops.size());
    for (int u : part.units) {
      pp.nodes.insert(pp.nodes.end(), plan.units[u].nodes.begin(), plan.units[u].nodes.end());
    }
    std::sort(pp.nodes.begin(), pp.nodes.end());
    std::vector<int> ops(part.builder.graph().ops.size());
    for (size_t k = 0; k < ops.size(); ++k) ops[k] = static_cast<int>(k);
    if (auto why = partition::fragmentation_guard(part.builder.graph(), ops,
                                                  config.min_partition_macs)) {
      for (int n : pp.nodes) node_reason[n] = why->message();
      continue;
    }
    plan.partitions.push_back(std::move(pp));
  }
  for (int i = 0; i < n_nodes; ++i) {
    if (is_context[i]) plan.partitions.push_back({{i}, {}, 0, 0});
  }

  // (5) reasons for everything left on the host.
  std::vector<bool> claimed(n_nodes, false);
  for (const auto& p : plan.partitions) {
    for (int n : p.nodes) claimed[n] = true;
  }
  std::vector<int> unit_of(n_nodes, -1);
  for (int u = 0; u < n_units; ++u) {
    for (int n : plan.units[u].nodes) {
      if (unit_of[n] < 0) unit_of[n] = u;
    }
  }
  for (int n = 0; n < n_nodes; ++n) {
    if (claimed[n]) continue;
    const OnnxNode& node = g.nodes[n];
    HostNode h;
    h.node = n;
    // Warning-level: quantized work the NPU could have run (a unit, a
    // would-be unit, a QOperator op, a Q/DQ); Info-level: everything else.
    h.npu_candidate = unit_of[n] >= 0 || scan.not_a_unit.count(n) > 0 ||
                      (is_npu_candidate(node) && !translate_is_float_op(node));
    const int u = unit_of[n];
    if (!node_reason[n].empty()) {
      h.reason = node_reason[n];
    } else if (!acyclic) {
      h.reason = "the graph's node units form a cycle; nothing is claimed";
    } else if (u >= 0 && !unit_reason[u].empty()) {
      const OnnxNode& t = g.nodes[plan.units[u].target];
      h.reason = u >= 0 && plan.units[u].target == n
                     ? unit_reason[u]
                     : str_cat("part of ", plan.units[u].form_name(), " unit ", t.label(), ": ",
                               unit_reason[u].rfind(t.label() + ": ", 0) == 0
                                   ? unit_reason[u].substr(t.label().size() + 2)
                                   : unit_reason[u]);
    } else if (auto it = scan.not_a_unit.find(n); it != scan.not_a_unit.end()) {
      h.reason = it->second;
    } else if (node.is("QuantizeLinear", "*") || node.is("DequantizeLinear", "*")) {
      h.reason = "not part of a claimed node unit (float <-> integer conversion at a host boundary)";
    } else if (is_npu_candidate(node) && node.op_type.rfind("QLinear", 0) != 0) {
      h.reason = "float op (not quantized): runs on the host";
    } else {
      h.reason = "no NPU implementation";
    }
    plan.host_nodes.push_back(std::move(h));
  }
  return plan;
}

}  // namespace nacc::ep

namespace nacc::ep {

namespace {

// How a rank-4 NCHW binding crosses the boundary (docs/onnxruntime_ep.md
// "Layout and types"): kDevice: a TRANSPOSE inside the Program (the layout
// unit, compiler/lower.h LoweredOp::LayoutConversion); kSameBytes: C = 1 or
// H*W = 1, where NCHW and NHWC hold the same bytes (any batch); kHost:
// converted by the host around each run (the option boundary_layout=host,
// shapes the unit does not take: C rounded up to C0 above 65535).
enum class BoundaryLayout { kHost, kDevice, kSameBytes };

BoundaryLayout boundary_layout(const IoBinding& b, const Config& config) {
  if (!b.nchw || !config.device_layout) return BoundaryLayout::kHost;
  const bool i16 = b.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16;
  if (!i16 && b.elem_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8 &&
      b.elem_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8) {
    return BoundaryLayout::kHost;
  }
  // A batch of N is N consecutive images in both layouts, and a batched
  // Program runs image by image (docs/device_model.md "Batches"): the
  // TRANSPOSE of [N, C, H, W] is compiled as one image's.
  const std::vector<int64_t>& s = b.onnx_shape;
  if (s[1] == 1 || s[2] * s[3] == 1) return BoundaryLayout::kSameBytes;
  return support::layout_transpose({1, s[1], s[2], s[3]}, {0, 2, 3, 1}, nullptr, i16 ? 2 : 1)
             ? BoundaryLayout::kDevice
             : BoundaryLayout::kHost;
}

// The binding's IR tensor `nhwc` becomes internal ("<name>/nhwc"); a new
// tensor of the ONNX name and NCHW shape is the Program's input (TRANSPOSE
// 0,2,3,1 before every op) or output (TRANSPOSE 0,3,1,2 after every op).
// Returns the new tensor's id.
int add_layout_transpose(ir::Graph& graph, int nhwc, const IoBinding& b, bool input) {
  ir::Tensor planar = graph.tensor(nhwc);
  planar.shape = b.onnx_shape;
  graph.tensors[size_t(nhwc)].name = str_cat(b.name, "/nhwc");
  const int id = graph.add_tensor(std::move(planar));
  ir::Op op;
  op.kind = ir::OpKind::kTranspose;
  op.name = str_cat(b.name, input ? "/to_nhwc" : "/to_nchw");
  op.inputs = {input ? id : nhwc};
  op.outputs = {input ? nhwc : id};
  op.attrs.perm = input ? std::vector<int>{0, 2, 3, 1} : std::vector<int>{0, 3, 1, 2};
  if (input) {
    graph.ops.insert(graph.ops.begin(), std::move(op));
  } else {
    graph.ops.push_back(std::move(op));
  }
  return id;
}

}  // namespace

PartitionIr build_partition(const OnnxGraph& g, const std::vector<int>& nodes, const Config& config) {
  std::vector<bool> in_set(g.nodes.size(), false);
  for (int n : nodes) in_set.at(static_cast<size_t>(n)) = true;
  std::vector<bool> covered(g.nodes.size(), false);
  IrBuilder b(g, config);
  b.restrict_to(&in_set);
  for (const NodeUnit& u : find_units(g).units) {
    if (!in_set[u.target]) continue;
    for (int n : u.nodes) {
      if (!in_set[n]) {
        throw Unsupported(str_cat("NaccExecutionProvider: ", g.nodes[n].label(), " of unit ",
                                  g.nodes[u.target].label(), " is not in the partition"));
      }
      covered[n] = true;
    }
    if (auto why = b.add_unit(u)) {
      throw Unsupported(str_cat("NaccExecutionProvider: ", g.nodes[u.target].label(), ": ", *why));
    }
  }
  for (int n : nodes) {
    if (!covered[n]) {
      throw Unsupported(str_cat("NaccExecutionProvider: ", g.nodes[n].label(),
                                " belongs to no node unit of the partition"));
    }
  }
  PartitionIr p;
  std::vector<std::pair<std::string, int>> ins, outs;
  for (size_t v = 0; v < g.values.size(); ++v) {
    const OnnxValue& val = g.values[v];
    const int id = static_cast<int>(v);
    if (b.tensor_of(id) < 0 || val.is_constant) continue;
    const bool produced = val.producer >= 0 && in_set[val.producer];
    bool used_inside = false, used_outside = val.is_graph_output;
    for (int c : val.consumers) (in_set[c] ? used_inside : used_outside) = true;
    if (!produced && used_inside) ins.emplace_back(val.name, id);
    if (produced && used_outside) outs.emplace_back(val.name, id);
  }
  std::sort(ins.begin(), ins.end());
  std::sort(outs.begin(), outs.end());
  for (int pass = 0; pass < 2; ++pass) {
    const bool input = pass == 0;
    for (const auto& [name, id] : input ? ins : outs) {
      IoBinding io = b.binding(id);
      int t = b.tensor_of(id);
      switch (boundary_layout(io, config)) {
        case BoundaryLayout::kDevice:
          t = add_layout_transpose(b.graph(), t, io, input);
          ++p.layout_transposes;
          io.nchw = false;  // the Program reads / writes the NCHW bytes
          io.ir_shape = io.onnx_shape;
          break;
        case BoundaryLayout::kSameBytes:
          io.nchw = false;  // a plain copy
          break;
        case BoundaryLayout::kHost:
          break;
      }
      (input ? b.graph().inputs : b.graph().outputs).push_back(t);
      (input ? p.inputs : p.outputs).push_back(std::move(io));
    }
  }
  p.macs = b.macs();
  p.graph = std::move(b.graph());
  return p;
}

}  // namespace nacc::ep

// NaccEp: capability, compilation and compute of the NACC plugin EP (ep.h).
#include "ep/ep.h"

#include <algorithm>
#include <deque>
#include <fstream>
#include <map>

#include "ep/capability.h"
#include "ep/ep_context.h"
#include "ep/onnx_graph.h"
#include "partition/policy.h"
#include "runtime/runtime.h"
#include "support/graph_digest.h"

namespace nacc::ep {

namespace {

constexpr size_t kMaxReports = 32;
std::mutex g_reports_mu;
std::deque<std::string> g_reports;

// The compute function ORT calls for one fused node.
struct NodeComputeInfo : OrtNodeComputeInfo {
  NodeComputeInfo(const Api& a, std::unique_ptr<CompiledPartition> p)
      : OrtNodeComputeInfo{}, api(a), partition(std::move(p)) {
    ort_version_supported = kOrtApiVersion;
    CreateState = CreateStateImpl;
    Compute = ComputeImpl;
    ReleaseState = ReleaseStateImpl;
  }
  static OrtStatus* CreateStateImpl(OrtNodeComputeInfo* self, OrtNodeComputeContext*,
                                    void** state) noexcept {
    auto* info = static_cast<NodeComputeInfo*>(self);
    *state = info->partition.get();
    return nullptr;
  }
  static OrtStatus* ComputeImpl(OrtNodeComputeInfo* self, void* state,
                                OrtKernelContext* context) noexcept {
    auto* info = static_cast<NodeComputeInfo*>(self);
    return guarded(info->api, [&] {
      static_cast<const CompiledPartition*>(state)->compute(info->api, context);
    });
  }
  static void ReleaseStateImpl(OrtNodeComputeInfo*, void*) noexcept {}

  const Api& api;
  std::unique_ptr<CompiledPartition> partition;
};

std::string node_name(const Api& api, const OrtNode* node) {
  const char* s = nullptr;
  api.check(api.ort->Node_GetName(node, &s));
  return s ? s : "";
}

std::vector<std::string> value_names(const Api& api, const OrtNode* node, bool inputs) {
  size_t n = 0;
  api.check(inputs ? api.ort->Node_GetNumInputs(node, &n) : api.ort->Node_GetNumOutputs(node, &n));
  std::vector<const OrtValueInfo*> vis(n);
  if (n) {
    api.check(inputs ? api.ort->Node_GetInputs(node, vis.data(), n)
                     : api.ort->Node_GetOutputs(node, vis.data(), n));
  }
  std::vector<std::string> names;
  for (const OrtValueInfo* vi : vis) names.push_back(vi ? value_name(api, vi) : "");
  return names;
}

// Reorders a blob's bindings into the fused node's input / output order.
std::vector<IoBinding> in_order(const std::vector<IoBinding>& bindings,
                                const std::vector<std::string>& names, const std::string& what) {
  std::vector<IoBinding> out;
  for (const std::string& n : names) {
    auto it = std::find_if(bindings.begin(), bindings.end(),
                           [&](const IoBinding& b) { return b.name == n; });
    if (it == bindings.end()) {
      throw OrtError(ORT_EP_FAIL, str_cat("NaccExecutionProvider: fused node ", what, " '", n,
                                          "' is not a boundary tensor of its partition"));
    }
    out.push_back(*it);
  }
  if (out.size() != bindings.size()) {
    throw OrtError(ORT_EP_FAIL, str_cat("NaccExecutionProvider: fused node has ", out.size(), " ",
                                        what, "s, its partition ", bindings.size()));
  }
  return out;
}

// `text` without `prefix` (a reason that starts with the node's own label).
std::string without_prefix(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : text;
}

}  // namespace

void record_report(const std::string& json) {
  std::lock_guard<std::mutex> lock(g_reports_mu);
  // "seq" numbers the reports of the process from 1: a caller tells the
  // reports of its own session from older ones by it, also once the oldest
  // have been dropped (the list keeps the last kMaxReports).
  static uint64_t seq = 0;
  const bool empty = json.size() <= 2;  // "{}"
  g_reports.push_back(str_cat("{\"seq\": ", ++seq, empty ? "" : ", ", json.substr(1)));
  while (g_reports.size() > kMaxReports) g_reports.pop_front();
}

std::string reports_json() {
  std::lock_guard<std::mutex> lock(g_reports_mu);
  std::string s = "[";
  for (size_t i = 0; i < g_reports.size(); ++i) s += (i ? ", " : "") + g_reports[i];
  return s + "]";
}

NaccEp::NaccEp(const Api& api, Config config, const OrtLogger* logger)
    : OrtEpExtended{}, api_(api), config_(std::move(config)), log_{&api, logger, config_.log_floor()} {
  ort_version_supported = kOrtApiVersion;
  GetName = GetNameImpl;
  GetCapability = GetCapabilityImpl;
  Compile = CompileImpl;
  ReleaseNodeComputeInfos = ReleaseNodeComputeInfosImpl;
  OnRunStart = OnRunStartImpl;
  GetCompiledModelCompatibilityInfo = GetCompiledModelCompatibilityInfoImpl;
  if (const uint32_t v = profiler_table_version(api_)) {
    ort_version_supported = v;  // ORT then reads the longer table; the other new slots stay NULL
    CreateProfiler = CreateProfilerImpl;
  }
  executor_ = std::make_shared<Executor>(config_.threads);
  compatibility_ = compatibility_string(config_);
  log_(ORT_LOGGING_LEVEL_INFO,
           str_cat("NaccExecutionProvider created: ", config_.summary()), "NaccEp");
}

NaccEp::~NaccEp() = default;

const char* NaccEp::GetNameImpl(const OrtEp*) noexcept { return kEpName; }

OrtStatus* NaccEp::GetCapabilityImpl(OrtEp* self, const OrtGraph* graph,
                                     OrtEpGraphSupportInfo* info) noexcept {
  auto* ep = static_cast<NaccEp*>(self);
  return guarded(ep->api_, [&] { ep->get_capability(graph, info); });
}

OrtStatus* NaccEp::CompileImpl(OrtEp* self, const OrtGraph** graphs, const OrtNode** fused_nodes,
                               size_t count, OrtNodeComputeInfo** infos,
                               OrtNode** ep_context_nodes) noexcept {
  auto* ep = static_cast<NaccEp*>(self);
  return guarded(ep->api_, [&] { ep->compile(graphs, fused_nodes, count, infos, ep_context_nodes); });
}

void NaccEp::ReleaseNodeComputeInfosImpl(OrtEp*, OrtNodeComputeInfo** infos, size_t count) noexcept {
  for (size_t i = 0; i < count; ++i) delete static_cast<NodeComputeInfo*>(infos[i]);
}

OrtStatus* NaccEp::CreateProfilerImpl(OrtEp* self, OrtEpProfilerImpl** profiler) noexcept {
  auto* ep = static_cast<NaccEp*>(self);
  return guarded(ep->api_, [&] {
    *profiler = create_profiler(ep->api_, ep->ort_version_supported, ep->config_.clock_mhz);
  });
}

OrtStatus* NaccEp::OnRunStartImpl(OrtEp* self, const OrtRunOptions*) noexcept {
  auto* ep = static_cast<NaccEp*>(self);
  return guarded(ep->api_, [&] { ep->fail_if_fallback_error(); });
}

const char* NaccEp::GetCompiledModelCompatibilityInfoImpl(OrtEp* self, const OrtGraph*) noexcept {
  return static_cast<NaccEp*>(self)->compatibility_.c_str();
}

void NaccEp::fail_if_fallback_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [graph, error] : fallback_errors_) {
    if (!error.empty()) throw OrtError(ORT_FAIL, error);
  }
}

std::shared_ptr<const PartitionBlob> NaccEp::compiled(const PartitionIr& ir, bool* compiled_now) {
  *compiled_now = false;
  const std::string ir_digest = support::graph_digest(ir.graph);
  const support::CacheEntryId id{kCacheEntryKind,
                                 partition_key(ir_digest, ir.inputs, ir.outputs, config_), ir_digest};
  if (auto blob = memory_cache_get(id.key)) return blob;
  if (!config_.cache_dir.empty()) {
    std::string problem;
    if (auto blob = cache_load(config_.cache_dir, id, &problem)) {
      try {
        check_program_for_device(blob->program, hw_config(config_));
        auto shared = std::make_shared<const PartitionBlob>(std::move(*blob));
        memory_cache_put(id.key, shared);
        return shared;
      } catch (const nacc::Error& e) {
        problem = str_cat("its Program fails the runtime's check: ", e.what());
      }
    }
    if (!problem.empty()) {
      log_(ORT_LOGGING_LEVEL_WARNING,
           str_cat("NaccExecutionProvider: cache entry ", cache_path(config_.cache_dir, id.key),
                   " is not used: ", problem, "; the partition is compiled again and the entry "
                   "replaced"),
           "Compile");
    }
  }
  auto blob = std::make_shared<PartitionBlob>();
  blob->inputs = ir.inputs;
  blob->outputs = ir.outputs;
  blob->program = compile_partition(ir.graph, config_);
  *compiled_now = true;
  if (!config_.cache_dir.empty()) {
    try {
      cache_store(config_.cache_dir, id, *blob);
    } catch (const std::exception& e) {
      log_(ORT_LOGGING_LEVEL_WARNING,
           str_cat("NaccExecutionProvider: cannot store the compiled partition in cache_dir: ",
                   e.what()),
           "Compile");
    }
  }
  memory_cache_put(id.key, blob);
  return blob;
}

std::shared_ptr<const PartitionBlob> NaccEp::build_and_compile(const OnnxGraph& g,
                                                               const std::vector<int>& nodes,
                                                               bool* compiled_now) {
  const PartitionIr ir = build_partition(g, nodes, config_);
  try {
    return compiled(ir, compiled_now);
  } catch (const nacc::Error& e) {
    if (ir.layout_transposes == 0) throw;
    Config host = config_;
    host.device_layout = false;
    log_(ORT_LOGGING_LEVEL_INFO,
         str_cat("NaccExecutionProvider: a partition does not compile with its boundary layout "
                 "conversion on the device (", e.what(), "); the host converts its boundaries"),
         "GetCapability");
    return compiled(build_partition(g, nodes, host), compiled_now);
  }
}

std::optional<std::string> NaccEp::try_compile(const OnnxGraph& g, const std::vector<int>& nodes) {
  try {
    bool now = false;
    build_and_compile(g, nodes, &now);
    return std::nullopt;
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
}

void NaccEp::get_capability(const OrtGraph* graph, OrtEpGraphSupportInfo* info) {
  const OnnxGraph g = OnnxGraph::read(api_, graph);

  // Compile each planned partition now: what the compiler rejects stays on
  // the host with the compiler's reason instead of failing the session later
  // (STYLE.md rule 2), and Compile() then finds the Program in the cache.
  // A partition that fails is retried unit by unit; the units that fail
  // alone are declined and the graph is planned again without them.
  std::map<int, std::string> rejected;  // unit target -> compiler's reason
  // Units that start a partition of their own: a partition whose members each
  // compile but not all together is cut before its last unit, which then
  // starts the next partition, instead of giving that unit to the host. (More
  // inputs and outputs than the DMA regions of NACC_SPEC §6 hold no longer
  // fail: they share staging regions, docs/device_model.md.)
  std::set<int> cuts;
  CapabilityPlan plan;
  constexpr int kMaxReplans = 32;
  for (int attempt = 0;; ++attempt) {
    plan = plan_capability(g, config_, rejected, cuts);
    bool changed = false;
    for (const PlannedPartition& p : plan.partitions) {
      if (p.units.empty()) continue;  // an EPContext node
      if (auto why = try_compile(g, p.nodes)) {
        // partition/policy.h compile_fallback: the units that fail alone,
        // else the last unit (the graph is planned again), else all of them.
        // int8-form units cannot stand alone (their quantization comes from
        // a neighbour); they follow whatever happens to that one.
        std::vector<int> alone;
        int last = -1;
        for (int u : p.units) {
          if (plan.units[u].form == NodeUnit::Form::kInt8) continue;
          alone.push_back(u);
          if (last < 0 || plan.units[u].target > plan.units[last].target) last = u;
        }
        if (!(attempt + 1 < kMaxReplans && p.units.size() > 1)) last = -1;
        const partition::CompileFallback f = partition::compile_fallback(
            *why, alone, last, [&](int u) { return try_compile(g, plan.units[u].nodes); });
        if (f.combination && !cuts.count(plan.units[last].target)) {
          cuts.insert(plan.units[last].target);
        } else {
          for (const auto& [u, decline] : f.members) {
            rejected[plan.units[u].target] = decline.message();
          }
        }
        if (f.whole) {
          for (int u : p.units) rejected[plan.units[u].target] = f.whole->message();
        }
        changed = true;
      }
    }
    if (!changed) break;
    if (attempt == kMaxReplans) {  // plan once more without the last rejections
      plan = plan_capability(g, config_, rejected, cuts);
      break;
    }
  }

  // fallback=error: any host node other than the float <-> int8 boundary
  // conversions fails the session (at Compile, or at the first Run).
  {
    std::vector<std::string> offending;
    for (const HostNode& h : plan.host_nodes) {
      const OnnxNode& n = g.nodes[h.node];
      const bool boundary = (n.is("QuantizeLinear", "*") || n.is("DequantizeLinear", "*")) &&
                            h.reason.rfind("not part of a claimed", 0) == 0;
      if (!boundary) offending.push_back(str_cat(n.label(), " (", h.reason, ")"));
    }
    std::lock_guard<std::mutex> lock(mu_);
    std::string& error = fallback_errors_[g.name];
    error.clear();
    if (config_.fallback == Fallback::kError && !offending.empty()) {
      error = str_cat("NaccExecutionProvider: fallback=error and ", offending.size(), " node",
                      offending.size() == 1 ? "" : "s", " of graph '", g.name,
                      "' would run on the host: ");
      for (size_t i = 0; i < offending.size(); ++i) error += (i ? "; " : "") + offending[i];
    }
  }

  // Placement messages, once per graph: Info per host-only op kind, Warning
  // per declined instance of an op the NPU runs, and the summary.
  const std::string report = plan.to_json(g);
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    first = logged_graphs_.insert(str_cat(g.name, "#", g.nodes.size(), "#", report.size())).second;
  }
  if (first) {
    std::set<std::string> host_kinds;
    for (const HostNode& h : plan.host_nodes) {
      const OnnxNode& n = g.nodes[h.node];
      if (!h.npu_candidate) {
        if (host_kinds.insert(n.op_type).second) {
          log_(ORT_LOGGING_LEVEL_INFO,
                   str_cat("NaccExecutionProvider: ", n.op_type, " runs on the host"), "GetCapability");
        }
      } else if (!n.is("QuantizeLinear", "*") && !n.is("DequantizeLinear", "*")) {
        log_(ORT_LOGGING_LEVEL_WARNING,
                 str_cat("NaccExecutionProvider: ", n.label(), " stays on the host \u2014 ",
                         without_prefix(h.reason, n.label() + ": ")),
                 "GetCapability");
      }
    }
    log_(ORT_LOGGING_LEVEL_INFO, plan.summary(), "GetCapability");
    record_report(report);
    if (!config_.dump_dir.empty()) {
      std::ofstream(config_.dump_dir + "/partition_report.json") << report << "\n";
    }
  }

  for (const PlannedPartition& p : plan.partitions) {
    std::vector<const OrtNode*> handles;
    for (int n : p.nodes) handles.push_back(g.nodes[n].handle);
    OrtNodeFusionOptions options{};
    options.ort_version_supported = kOrtApiVersion;
    options.drop_constant_initializers = true;  // the Program holds its own weights
    api_.check(api_.ep->EpGraphSupportInfo_AddNodesToFuse(info, handles.data(), handles.size(),
                                                          &options));
  }
}

void NaccEp::compile(const OrtGraph** graphs, const OrtNode** fused_nodes, size_t count,
                     OrtNodeComputeInfo** infos, OrtNode** ep_context_nodes) {
  fail_if_fallback_error();
  for (size_t i = 0; i < count; ++i) infos[i] = nullptr;
  for (size_t i = 0; i < count; ++i) {
    OrtNode** context_node = config_.ep_context_enable && ep_context_nodes ? &ep_context_nodes[i]
                                                                           : nullptr;
    auto partition = compile_one(graphs[i], fused_nodes[i], context_node);
    infos[i] = new NodeComputeInfo(api_, std::move(partition));
  }
}

std::unique_ptr<CompiledPartition> NaccEp::compile_one(const OrtGraph* graph,
                                                       const OrtNode* fused_node,
                                                       OrtNode** ep_context_node) {
  const std::string name = node_name(api_, fused_node);
  const std::vector<std::string> in_names = value_names(api_, fused_node, true);
  const std::vector<std::string> out_names = value_names(api_, fused_node, false);
  const OnnxGraph g = OnnxGraph::read(api_, graph);

  PartitionBlob blob;
  if (g.nodes.size() == 1 && g.nodes[0].op_type == "EPContext") {
    // A compiled model: the Program is in the node; nothing is compiled.
    if (ep_context_node) {
      throw OrtError(ORT_INVALID_ARGUMENT,
                     "NaccExecutionProvider: ep.context_enable=1 but the model is already "
                     "compiled (it has NaccExecutionProvider EPContext nodes); load the original "
                     "model to compile it again");
    }
    const OnnxNode& n = g.nodes[0];
    if (n.attr_int("embed_mode", 1) != 1) {
      throw OrtError(ORT_NOT_IMPLEMENTED, str_cat("NaccExecutionProvider: EPContext '", n.name,
                                                  "' has embed_mode=0; nacc embeds its Programs"));
    }
    auto it = n.attrs.find("ep_cache_context");
    if (it == n.attrs.end()) {
      throw OrtError(ORT_INVALID_GRAPH, str_cat("NaccExecutionProvider: EPContext '", n.name,
                                                "' has no ep_cache_context"));
    }
    const std::string& s = it->second.s;
    blob = PartitionBlob::deserialize(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    // Integrity (checksum), nacc version and format were checked by
    // deserialize; the hardware it was compiled for is checked against this
    // session's options here.
    const std::string note = check_ep_context_blob(blob, n.name, config_);
    if (!note.empty()) log_(ORT_LOGGING_LEVEL_WARNING, note, "Compile");
    log_(ORT_LOGGING_LEVEL_INFO,
             str_cat("NaccExecutionProvider: loaded compiled partition '", n.name,
                     "' from its EPContext node (no compilation)"),
             "Compile");
  } else {
    std::vector<int> all(g.nodes.size());
    for (size_t k = 0; k < all.size(); ++k) all[k] = static_cast<int>(k);
    bool now = false;
    blob = *build_and_compile(g, all, &now);
    if (!config_.dump_dir.empty()) {
      const auto bytes = blob.serialize();
      std::ofstream(config_.dump_dir + "/" + name + ".naccpart", std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    if (ep_context_node) {
      *ep_context_node = make_ep_context_node(api_, name, in_names, out_names, blob.serialize());
    }
  }
  blob.inputs = in_order(blob.inputs, in_names, "input");
  blob.outputs = in_order(blob.outputs, out_names, "output");
  return std::make_unique<CompiledPartition>(name, std::move(blob), executor_);
}

}  // namespace nacc::ep

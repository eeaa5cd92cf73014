// The OrtEp of one session: GetCapability (plan, compile to decide, claim),
// Compile (one Program per fused partition, EPContext nodes), the compute
// functions ORT calls, and compiled-model compatibility information. ABI
// entry points are noexcept trampolines around member functions (guarded()).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>
#include <set>
#include <string>

#include "ep/backend.h"
#include "ep/config.h"
#include "ep/kernel.h"
#include "ep/onnx_graph.h"
#include "ep/ort_api.h"
#include "ep/profiler.h"

namespace nacc::ep {

class NaccEpFactory;

class NaccEp : public OrtEpExtended {
 public:
  NaccEp(const Api& api, Config config, const OrtLogger* logger);
  ~NaccEp();

  const Api& api() const { return api_; }
  const Config& config() const { return config_; }

 private:
  static const char* GetNameImpl(const OrtEp* self) noexcept;
  static OrtStatus* GetCapabilityImpl(OrtEp* self, const OrtGraph* graph,
                                      OrtEpGraphSupportInfo* info) noexcept;
  static OrtStatus* CompileImpl(OrtEp* self, const OrtGraph** graphs, const OrtNode** fused_nodes,
                                size_t count, OrtNodeComputeInfo** infos,
                                OrtNode** ep_context_nodes) noexcept;
  static void ReleaseNodeComputeInfosImpl(OrtEp* self, OrtNodeComputeInfo** infos,
                                          size_t count) noexcept;
  static OrtStatus* OnRunStartImpl(OrtEp* self, const OrtRunOptions* run_options) noexcept;
  // ORT >= 1.31 (profiler.h): per-op simulated times in ORT's profile JSON.
  static OrtStatus* CreateProfilerImpl(OrtEp* self, OrtEpProfilerImpl** profiler) noexcept;
  static const char* GetCompiledModelCompatibilityInfoImpl(OrtEp* self,
                                                           const OrtGraph* graph) noexcept;

  void get_capability(const OrtGraph* graph, OrtEpGraphSupportInfo* info);
  void compile(const OrtGraph** graphs, const OrtNode** fused_nodes, size_t count,
               OrtNodeComputeInfo** infos, OrtNode** ep_context_nodes);
  std::unique_ptr<CompiledPartition> compile_one(const OrtGraph* graph, const OrtNode* fused_node,
                                                 OrtNode** ep_context_node);
  // The compiled blob of a partition: process cache, then cache_dir, then the compiler.
  std::shared_ptr<const PartitionBlob> compiled(const struct PartitionIr& ir, bool* compiled_now);
  // The blob of the partition of `nodes` (build_partition, then compiled); when
  // it fails with boundary TRANSPOSEs on the layout unit, the partition is
  // built again with the host converting its boundaries (so a shape the
  // conversion cannot take never declines a node).
  std::shared_ptr<const PartitionBlob> build_and_compile(const struct OnnxGraph& g,
                                                         const std::vector<int>& nodes,
                                                         bool* compiled_now);
  // nullopt when the partition of `nodes` compiles (the Program is then cached), else why not.
  std::optional<std::string> try_compile(const OnnxGraph& g, const std::vector<int>& nodes);
  void fail_if_fallback_error() const;

  const Api& api_;
  Config config_;
  EpLog log_;  // ORT's logger under config_.log_level
  std::shared_ptr<Executor> executor_;
  std::string compatibility_;
  mutable std::mutex mu_;
  std::set<std::string> logged_graphs_;  // graphs whose placement was already logged
  // fallback=error: per graph (the main graph and control-flow subgraphs are
  // offered separately; the latest offer of a graph counts), the nodes that
  // would run on the host.
  std::map<std::string, std::string> fallback_errors_;
};

// Partition reports of this process (JSON objects), most recent last; kept
// for nacc.onnxruntime.partition_reports().
void record_report(const std::string& json);
std::string reports_json();

}  // namespace nacc::ep

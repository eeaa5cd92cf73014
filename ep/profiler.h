// ONNX Runtime profiling bridge: with `enable_profiling`, each run of a nacc
// partition adds to ORT's profile JSON one event for the partition and one per
// Program op, timed in simulated NPU time (cycles / clock_mhz) from the host
// time at which the partition's Compute started. Uses the plugin-EP profiler
// ABI (OrtEp::CreateProfiler, OrtEpProfilerImpl, OrtEpApi::CreateProfilingEvent
// / ProfilingEventsContainer_AddEvents), declared here past the version-23
// layout of ep/ort_abi.h and enabled only on ONNX Runtime >= 1.31 (verified on
// 1.31.1); on older releases the EP keeps its version-23 tables.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ep/ort_abi.h"
#include "runtime/op_counters.h"

namespace nacc::ep {

using namespace nacc::ortabi;  // NOLINT: the ABI names, as in ort_api.h

struct Api;

// ---- ABI past version 23 (onnxruntime_ep_c_api.h, append-only slots) ---------------------
struct OrtEpProfilerImpl;
struct OrtProfilingEvent;
struct OrtProfilingEventsContainer;

// OrtProfilingEventCategory.
enum OrtProfilingEventCategory : int { kProfilingSession = 0, kProfilingNode = 1, kProfilingKernel = 2 };

// Struct an EP implements for profiling (field order of the header).
struct OrtEpProfilerImpl {
  uint32_t ort_version_supported;
  void (*Release)(OrtEpProfilerImpl* self) noexcept;
  StatusPtr (*StartProfiling)(OrtEpProfilerImpl* self, int64_t ep_profiling_start_offset_ns) noexcept;
  StatusPtr (*StartEvent)(OrtEpProfilerImpl* self, uint64_t ort_event_correlation_id) noexcept;
  StatusPtr (*StopEvent)(OrtEpProfilerImpl* self, uint64_t ort_event_correlation_id,
                         const OrtProfilingEvent* ort_event) noexcept;
  StatusPtr (*EndProfiling)(OrtEpProfilerImpl* self, OrtProfilingEventsContainer* container) noexcept;
};

// OrtEp with the slots appended after GetCompiledModelCompatibilityInfo (13 ..):
// GetKernelRegistry, IsConcurrentRunSupported, Sync, CreateProfiler, then nine
// more up to GetWeightlessSupport, and spare zeroed slots so that a newer
// release reading a longer table finds NULL ("not implemented") there.
struct OrtEpExtended : OrtEp {
  StatusPtr (*GetKernelRegistry)(OrtEp* self, const void** registry) noexcept;
  StatusPtr (*IsConcurrentRunSupported)(OrtEp* self, bool* supported) noexcept;
  StatusPtr (*Sync)(OrtEp* self) noexcept;
  StatusPtr (*CreateProfiler)(OrtEp* self, OrtEpProfilerImpl** profiler) noexcept;
  void* later_slots[9 + 16];  // IsGraphCaptureEnabled .. GetWeightlessSupport, spare: NULL
};
// OrtEp is a plain struct of 13 slots, so the members above follow it directly:
// CreateProfiler is slot 16 of the table (counting the version field as slot 0).
static_assert(sizeof(OrtEp) == 13 * sizeof(void*) &&
                  sizeof(OrtEpExtended) == (13 + 4 + 9 + 16) * sizeof(void*),
              "OrtEpExtended layout: OrtEp v23 + 4 named slots + 25 NULL slots");

// OrtEpApi slots of the profiling functions (counted in onnxruntime_ep_c_api.h).
constexpr size_t kSlotCreateProfilingEvent = 65;
constexpr size_t kSlotReleaseProfilingEvent = 66;
constexpr size_t kSlotProfilingEventsContainerAddEvents = 72;

// The OrtEp table version to write when the profiler is used: 31 on ONNX
// Runtime >= 1.31, else 0 (keep kOrtApiVersion, no profiler).
uint32_t profiler_table_version(const Api& api);

// Creates the EP's profiler (ORT owns it and calls Release). clock_mhz turns
// simulated cycles into microseconds.
OrtEpProfilerImpl* create_profiler(const Api& api, uint32_t version, int clock_mhz);

// Called by every partition run: when some profiler is active, records the
// run (host start / end on the steady clock, in ns) for its EndProfiling.
void profile_run(const std::string& partition, int64_t host_start_ns, int64_t host_end_ns,
                 int64_t cycles, const std::shared_ptr<const std::vector<OpCounters>>& ops);
// The steady clock in ns.
int64_t steady_now_ns();

}  // namespace nacc::ep

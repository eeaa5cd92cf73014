// ONNX Runtime profiling bridge (profiler.h).
#include "ep/profiler.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <set>

#include "common/error.h"
#include "ep/ort_api.h"

namespace nacc::ep {

namespace {

struct RunRecord {
  std::string partition;
  int64_t host_start_ns = 0, host_end_ns = 0, cycles = 0;
  std::shared_ptr<const std::vector<OpCounters>> ops;  // never null
};

class NaccProfiler;
std::mutex g_profilers_mu;
std::set<NaccProfiler*> g_active;

using CreateEventFn = StatusPtr (*)(int category, int32_t process_id, int32_t thread_id,
                                    const char* name, int64_t timestamp_us, int64_t duration_us,
                                    const char* const* keys, const char* const* values,
                                    size_t num_args, OrtProfilingEvent** out) noexcept;
using ReleaseEventFn = void (*)(OrtProfilingEvent* event) noexcept;
using AddEventsFn = StatusPtr (*)(OrtProfilingEventsContainer* container,
                                  const OrtProfilingEvent* const* events, size_t count) noexcept;

template <typename Fn>
Fn ep_slot(const Api& api, size_t slot) {
  return reinterpret_cast<Fn>(reinterpret_cast<void* const*>(api.ep)[slot]);
}

// Event thread id of nacc's simulated events (they are not host threads).
constexpr int32_t kNaccTid = 0x4e414343;  // "NACC"

class NaccProfiler : public OrtEpProfilerImpl {
 public:
  NaccProfiler(const Api& api, uint32_t version, int clock_mhz)
      : OrtEpProfilerImpl{}, api_(api), clock_mhz_(clock_mhz > 0 ? clock_mhz : 500) {
    ort_version_supported = version;
    Release = ReleaseImpl;
    StartProfiling = StartProfilingImpl;
    StartEvent = StartEventImpl;
    StopEvent = StopEventImpl;
    EndProfiling = EndProfilingImpl;
  }
  ~NaccProfiler() { deactivate(); }

  void record(const RunRecord& r) {
    std::lock_guard<std::mutex> lock(mu_);
    runs_.push_back(r);
  }

 private:
  void deactivate() {
    std::lock_guard<std::mutex> lock(g_profilers_mu);
    g_active.erase(this);
  }

  static void ReleaseImpl(OrtEpProfilerImpl* self) noexcept {
    delete static_cast<NaccProfiler*>(self);
  }
  static StatusPtr StartProfilingImpl(OrtEpProfilerImpl* self, int64_t offset_ns) noexcept {
    auto* p = static_cast<NaccProfiler*>(self);
    return guarded(p->api_, [&] {
      {
        std::lock_guard<std::mutex> lock(p->mu_);
        // ORT's profiling clock started offset_ns before now.
        p->ort_start_ns_ = steady_now_ns() - offset_ns;
        p->runs_.clear();
      }
      std::lock_guard<std::mutex> lock(g_profilers_mu);
      g_active.insert(p);
    });
  }
  static StatusPtr StartEventImpl(OrtEpProfilerImpl*, uint64_t) noexcept { return nullptr; }
  static StatusPtr StopEventImpl(OrtEpProfilerImpl*, uint64_t, const OrtProfilingEvent*) noexcept {
    return nullptr;
  }
  static StatusPtr EndProfilingImpl(OrtEpProfilerImpl* self,
                                    OrtProfilingEventsContainer* container) noexcept {
    auto* p = static_cast<NaccProfiler*>(self);
    return guarded(p->api_, [&] {
      p->deactivate();
      std::vector<RunRecord> runs;
      int64_t start_ns = 0;
      {
        std::lock_guard<std::mutex> lock(p->mu_);
        runs.swap(p->runs_);
        start_ns = p->ort_start_ns_;
      }
      p->emit(runs, start_ns, container);
    });
  }

  // One event: name, start and duration in µs on ORT's profiling clock, args.
  void add_event(std::vector<OrtProfilingEvent*>& out, const std::string& name, double ts_us,
                 double dur_us, const std::vector<std::pair<std::string, std::string>>& args) const {
    std::vector<const char*> keys, values;
    for (const auto& [k, v] : args) {
      keys.push_back(k.c_str());
      values.push_back(v.c_str());
    }
    OrtProfilingEvent* e = nullptr;
    const auto create = ep_slot<CreateEventFn>(api_, kSlotCreateProfilingEvent);
    api_.check(create(kProfilingNode, static_cast<int32_t>(getpid()), kNaccTid, name.c_str(),
                      static_cast<int64_t>(std::llround(ts_us)),
                      std::max<int64_t>(1, static_cast<int64_t>(std::llround(dur_us))),
                      keys.data(), values.data(), keys.size(), &e));
    out.push_back(e);
  }

  void emit(const std::vector<RunRecord>& runs, int64_t ort_start_ns,
            OrtProfilingEventsContainer* container) const {
    std::vector<OrtProfilingEvent*> events;
    const auto release = ep_slot<ReleaseEventFn>(api_, kSlotReleaseProfilingEvent);
    struct Releaser {
      const std::vector<OrtProfilingEvent*>& events;
      ReleaseEventFn release;
      ~Releaser() {
        for (auto* e : events) release(e);
      }
    } releaser{events, release};
    const double mhz = clock_mhz_;
    const std::string provider = "NaccExecutionProvider";
    for (const RunRecord& r : runs) {
      const double t0 = (r.host_start_ns - ort_start_ns) / 1e3;
      add_event(events, r.partition + " (NACC simulated)", t0, r.cycles / mhz,
                {{"provider", provider},
                 {"simulated", "1"},
                 {"op_name", "nacc_partition"},
                 {"cycles", std::to_string(r.cycles)},
                 {"clock_mhz", std::to_string(clock_mhz_)},
                 {"host_us", std::to_string((r.host_end_ns - r.host_start_ns) / 1000)}});
      for (const OpCounters& o : *r.ops) {
        add_event(events, o.name, t0 + o.start / mhz, o.cycles / mhz,
                  {{"provider", provider},
                   {"simulated", "1"},
                   {"op_name", o.kind},
                   {"partition", r.partition},
                   {"cycles", std::to_string(o.cycles)},
                   {"bound_cycles", std::to_string(o.bound_cycles)},
                   {"macs", std::to_string(o.macs)},
                   {"dma_bytes", std::to_string(o.dma_read_bytes + o.dma_write_bytes)},
                   {"min_dma_bytes", std::to_string(o.min_dma_bytes)},
                   {"stall_cycles", std::to_string(o.stall_cycles)}});
      }
    }
    if (events.empty()) return;
    const auto add = ep_slot<AddEventsFn>(api_, kSlotProfilingEventsContainerAddEvents);
    api_.check(add(container, events.data(), events.size()));
  }

  const Api& api_;
  const int clock_mhz_;
  std::mutex mu_;
  int64_t ort_start_ns_ = 0;
  std::vector<RunRecord> runs_;
};

}  // namespace

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint32_t profiler_table_version(const Api& api) {
  // 1.31 and later -> 31, the layout declared in profiler.h (checked on 1.31.1);
  // older releases keep version 23 and no profiler.
  const std::string& v = api.ort_version;
  if (v.rfind("1.", 0) != 0) return 0;
  const long minor = std::strtol(v.c_str() + 2, nullptr, 10);
  return minor >= 31 ? 31 : 0;  // never more than the layout declared in profiler.h
}

OrtEpProfilerImpl* create_profiler(const Api& api, uint32_t version, int clock_mhz) {
  return new NaccProfiler(api, version, clock_mhz);
}

void profile_run(const std::string& partition, int64_t host_start_ns, int64_t host_end_ns,
                 int64_t cycles, const std::shared_ptr<const std::vector<OpCounters>>& ops) {
  std::lock_guard<std::mutex> lock(g_profilers_mu);
  if (g_active.empty()) return;
  RunRecord r{partition, host_start_ns, host_end_ns, cycles,
              ops ? ops : std::make_shared<const std::vector<OpCounters>>()};
  for (NaccProfiler* p : g_active) p->record(r);
}

}  // namespace nacc::ep

// The exported entry points of the plugin EP library: CreateEpFactories /
// ReleaseEpFactory (what ORT looks up after register_execution_provider_library)
// and the functions python/nacc/onnxruntime.py reads through ctypes: the
// partition reports and run statistics (nacc_ep_reports_json,
// nacc_ep_run_stats_json), the option table and validator, test hooks.
// Everything else in the library is hidden (ep/exports.lds).
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ep/config.h"
#include "ep/ep.h"
#include "ep/ep_factory.h"
#include "ep/kernel.h"
#include "partition/executor.h"

using nacc::ep::Api;
using nacc::ep::NaccEpFactory;
using nacc::ortabi::OrtApiBase;
using nacc::ortabi::OrtEpFactory;
using nacc::ortabi::OrtLogger;
using nacc::ortabi::OrtStatus;

extern "C" {

__attribute__((visibility("default"))) OrtStatus* CreateEpFactories(
    const char* registered_name, const OrtApiBase* ort_api_base, const OrtLogger* default_logger,
    OrtEpFactory** factories, size_t max_factories, size_t* num_factories) noexcept {
  (void)registered_name;
  *num_factories = 0;
  Api api;
  try {
    api = Api::load(ort_api_base);
  } catch (const nacc::ep::OrtError& e) {
    // Only report through ORT when its status functions are usable.
    if (api.ort == nullptr && ort_api_base != nullptr) {
      const auto* any = ort_api_base->GetApi(1);  // version 1 always exists: CreateStatus is slot 0
      if (any) return any->CreateStatus(e.code(), e.what());
    }
    return api.ort ? api.status(e.code(), e.what()) : nullptr;
  }
  return nacc::ep::guarded(api, [&] {
    if (max_factories < 1) {
      throw nacc::ep::OrtError(nacc::ortabi::ORT_INVALID_ARGUMENT,
                               "NaccExecutionProvider: no room for its factory");
    }
    factories[0] = new NaccEpFactory(api, default_logger);
    *num_factories = 1;
  });
}

__attribute__((visibility("default"))) OrtStatus* ReleaseEpFactory(OrtEpFactory* factory) noexcept {
  delete static_cast<NaccEpFactory*>(factory);
  return nullptr;
}

// Copies the JSON array of this process's partition reports into `buffer`
// (NUL-terminated when it fits) and returns its length in bytes.
__attribute__((visibility("default"))) size_t nacc_ep_reports_json(char* buffer,
                                                                   size_t capacity) noexcept {
  try {
    const std::string s = nacc::ep::reports_json();
    if (buffer != nullptr && capacity > s.size()) std::memcpy(buffer, s.c_str(), s.size() + 1);
    return s.size();
  } catch (...) {
    return 0;
  }
}

// The same for nacc.onnxruntime.run_stats(): per fused partition, the runs
// and the simulated cycles and MACs of the last run.
__attribute__((visibility("default"))) size_t nacc_ep_run_stats_json(char* buffer,
                                                                     size_t capacity) noexcept {
  try {
    const std::string s = nacc::ep::run_stats_json();
    if (buffer != nullptr && capacity > s.size()) std::memcpy(buffer, s.c_str(), s.size() + 1);
    return s.size();
  } catch (...) {
    return 0;
  }
}

// The provider-option table as a JSON array of {name, allowed, default, help}
// (nacc.onnxruntime.provider_option_specs()); a static string.
__attribute__((visibility("default"))) const char* nacc_ep_option_specs_json() noexcept {
  static const std::string json = nacc::ep::option_specs_json();
  return json.c_str();
}

// Validates provider options (keys without the session-config prefix) with
// the parser CreateEp uses, so Python rejects what the EP would reject before
// a session exists (dump_dir / cache_dir are created, as CreateEp does).
// Returns 0 when valid; otherwise 1 with the message in `error`
// (NUL-terminated, truncated to error_size).
__attribute__((visibility("default"))) int nacc_ep_validate_options(
    const char* const* keys, const char* const* values, size_t num_options, char* error,
    size_t error_size) noexcept {
  std::string message;
  try {
    std::vector<std::pair<std::string, std::string>> pairs;
    for (size_t i = 0; i < num_options; ++i) {
      pairs.emplace_back(keys[i] ? keys[i] : "", values[i] ? values[i] : "");
    }
    nacc::ep::Config::from_pairs(pairs);
    return 0;
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
    message = "NaccExecutionProvider: unknown error while validating options";
  }
  if (error != nullptr && error_size > 0) {
    const size_t n = std::min(message.size(), error_size - 1);
    std::memcpy(error, message.data(), n);
    error[n] = '\0';
  }
  return 1;
}

// Test only (tests/test_ep_numerics.py): the node whose weight scales the
// translation doubles in sessions created from now on ("" or NULL = off), to
// show that accuracy checks catch a wrong multiplier. Not an EP option.
__attribute__((visibility("default"))) void nacc_ep_test_perturb_node(const char* node) noexcept {
  try {
    nacc::ep::set_test_perturb_node(node ? node : "");
  } catch (...) {
  }
}

// Test only (docs/reliability.md): arms nacc::testing::inject_faults in this
// library's copy of the runtime. kind: "none", "bus_error", "dma_overrun".
// Returns 0, or 1 for a bad argument. Not reachable through any EP option.
__attribute__((visibility("default"))) int nacc_ep_test_inject_fault(const char* kind,
                                                                   int64_t command,
                                                                   int runs) noexcept {
  return nacc::partition::test_inject_fault(kind, command, runs);
}

}  // extern "C"

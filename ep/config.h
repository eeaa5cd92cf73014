// The EP's provider options, parsed and validated once per session from the
// session config entries `ep.naccexecutionprovider.<key>` (where ORT puts the
// options of all three selection forms) plus ORT's own `ep.context_*` keys.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ep/ort_api.h"

namespace nacc::ep {

constexpr const char* kEpName = "NaccExecutionProvider";
constexpr const char* kEpVendor = "nacc";
// Session config prefix of the provider options: "ep." + lower-cased EP name + ".".
constexpr const char* kOptionPrefix = "ep.naccexecutionprovider.";

enum class Fallback { kAllow, kError };

// The EP's own floor under ORT's logger (option log_level). kDefault adds
// none: what prints is decided by the logger ORT hands the EP (the session
// logger, i.e. SessionOptions.log_severity_level, with add_provider /
// add_provider_for_devices; ORT's default logger with the Python
// providers=[...] list). The others drop the EP's messages below that level;
// they cannot show what ORT's logger filters out.
enum class LogLevel { kDefault, kDebug, kInfo, kWarning, kError, kOff };

// One documented provider option: the table python/nacc/onnxruntime.py reads
// (nacc_ep_option_specs_json) and the text of the unknown-option error.
struct OptionSpec {
  const char* name;
  const char* allowed;
  const char* default_text;
  const char* help;
};

struct Config {
  int threads = 0;                 // host threads simulating cores; 0 = one per core, up to the CPUs
  int cores = 1;                   // simulated NACC cores: 1, 2, 4, 8, 16 or 32 (NACC_SPEC §4)
  int sram_kb = 64;                // SRAM per core in KiB (NACC_SPEC §1: 64)
  int clock_mhz = 500;             // for latency figures in reports (as the delegate)
  std::string dump_dir;            // write the partition report and compiled partitions here
  std::string cache_dir;           // reuse compiled Programs across sessions
  // (both directories are created if missing and must be writable)
  Fallback fallback = Fallback::kAllow;
  int64_t min_partition_macs = 0;  // fragmentation guard: partitions below this stay on the host
  LogLevel log_level = LogLevel::kDefault;
  // Test only, not an option: the node whose weight scales are doubled in the
  // IR (a shift off by one in that layer), to show that accuracy checks catch
  // it. from_session copies it from set_test_perturb_node (the exported
  // nacc_ep_test_perturb_node, which only tests call).
  std::string test_perturb_node;

  // How the CPU EP would run a QDQ node unit, which the EP reproduces bit for
  // bit (docs/onnxruntime_ep.md "Exactness"). The plugin ABI does not expose
  // the session's graph optimization level: the option ort_optimization_level
  // (default all, ORT's default) says it; session.qdqisint8allowed is read
  // from the session's config entries.
  enum class OrtOptLevel { kDisabled = 0, kBasic = 1, kExtended = 2, kAll = 99 };
  OrtOptLevel ort_opt_level = OrtOptLevel::kAll;
  // Option ort_intra_op_threads: the session's intra_op_num_threads (not
  // readable through the plugin ABI either). MLAS's float32 Conv cuts its
  // work into thread segments whose K blocks follow from the count, so the
  // float Conv's bits do (docs/onnxruntime_ep.md "Float Conv"). 0 = ORT's
  // default, one thread per physical core (ort_threads()).
  int ort_intra_op_threads = 0;
  // The intra-op thread count MLAS sees: ort_intra_op_threads, or for 0 the
  // physical cores of the online CPUs (ORT's default; 1 when unknown).
  int ort_threads() const;
  // Option int16_activations: claim QDQ Conv units with int16 (QInt16, zero
  // point 0) activations, computed with the compiler's 16x8 (TFLite) output
  // stage, and same-quantization int16 MaxPool / Reshape / Flatten. The CPU
  // EP runs them in float, so outputs may differ from it by one quantization
  // step (docs/onnxruntime_ep.md "16-bit activations").
  bool int16_activations = false;
  // Option boundary_layout (device / host): rank-4 int8 / uint8 partition
  // inputs and outputs change between NCHW and NHWC inside the Program (a
  // TRANSPOSE the compiler runs on the layout unit, NPU_OP_VNCHWCONV) or on
  // the host around each run (docs/onnxruntime_ep.md "Layout and types").
  bool device_layout = true;
  // Option int4_weights: claim QDQ Conv / Gemm / MatMul units whose constant
  // weights are INT4 (QInt4, zero point 0, per tensor or per channel),
  // lowered onto DATA_FORM 10 (NACC_SPEC §9). The CPU EP dequantizes them and
  // runs float, so outputs may differ from it by one quantization step
  // (docs/onnxruntime_ep.md "4-bit weights").
  bool int4_weights = false;
  bool ort_qdq_int8_allowed = false;
  // The decision per node unit (keyed by its op's output value name), made on
  // the first, whole-graph GetCapability view and reused by later views and
  // by Compile, whose fused subgraphs no longer show the producing
  // QuantizeLinear nodes. Shared by the copies of one EP's Config.
  struct OrtKernelMemo {
    std::mutex mu;
    std::map<std::string, int> kernel;
  };
  std::shared_ptr<OrtKernelMemo> ort_kernel_memo = std::make_shared<OrtKernelMemo>();

  // ORT's EP-context (compiled model) settings.
  bool ep_context_enable = false;
  bool ep_context_embed = true;

  // Parses the options; throws OrtError(ORT_INVALID_ARGUMENT) naming the key,
  // the value and what is allowed, for every bad or unknown option at once.
  static Config from_session(const Api& api, const OrtSessionOptions* options);
  // Parses (key, value) pairs as given by the user (keys without the prefix).
  static Config from_pairs(const std::vector<std::pair<std::string, std::string>>& pairs);

  // "cores=4 sram_kb=64 ..." for logs and compatibility strings.
  std::string summary() const;
  // ORT severity below which the EP drops its own messages (log_level):
  // ORT_LOGGING_LEVEL_VERBOSE for kDefault and kDebug, ORT_LOGGING_LEVEL_FATAL + 1 for kOff.
  int log_floor() const;
};

// The documented options, in documentation order.
const std::vector<OptionSpec>& option_specs();
// The table as a JSON array of {name, allowed, default, help}.
std::string option_specs_json();

// Test hook behind Config::test_perturb_node ("" = off); process-wide.
void set_test_perturb_node(const std::string& node);

}  // namespace nacc::ep

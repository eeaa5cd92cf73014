// Provider-option parsing and validation (config.h).
#include "ep/config.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "arch/limits.h"

namespace nacc::ep {

namespace {

constexpr int kMaxThreads = 256;
constexpr int kMinSramKb = 16;
constexpr int kMaxSramKb = 1024;
constexpr int kMaxClockMhz = 10000;

bool parse_int(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end == nullptr || *end != '\0') return false;
  *out = v;
  return true;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

// Creates `path` if missing and checks it is a writable directory; returns
// the problem, or "" when fine.
std::string directory_problem(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) return "must be a directory path";
  std::error_code ec;
  fs::create_directories(path, ec);
  if (!fs::is_directory(path)) {
    return str_cat("cannot create directory '", path, "'", ec ? str_cat(" (", ec.message(), ")") : "");
  }
  const fs::path probe = fs::path(path) / ".nacc_write_probe";
  {
    std::ofstream f(probe);
    if (!f) return str_cat("directory '", path, "' is not writable");
  }
  fs::remove(probe, ec);
  return "";
}

}  // namespace

// In the order of the original option_keys() list (error messages list them so).
const std::vector<OptionSpec>& option_specs() {
  static const std::vector<OptionSpec> table = {
      {"threads", "an integer in [0, 256]", "0 (one per simulated core, up to the CPUs)",
       "host threads that run the simulated cores (results never depend on it)"},
      {"cores", "1, 2, 4, 8, 16 or 32", "1", "simulated NACC cores the compiler splits work across"},
      {"sram_kb", "a power of two in [16, 1024]", "64", "SRAM per core in KiB (the NACC has 64)"},
      {"clock_mhz", "an integer in [1, 10000]", "500",
       "NPU clock that turns simulated cycles into reported latency"},
      {"dump_dir", "a directory path (created if missing, must be writable)", "(none)",
       "writes partition_report.json and each compiled partition there"},
      {"cache_dir", "a directory path (created if missing, must be writable)", "(none)",
       "reuses compiled Programs across sessions and processes"},
      {"fallback", "allow or error", "allow",
       "error: fail when any node other than the float<->int8 boundary conversions stays on "
       "the host"},

      {"min_partition_macs", "an integer >= 0", "0",
       "fragmentation guard: partitions doing fewer useful MACs stay on the host"},
      {"log_level", "default, off, error, warning, info or debug", "default",
       "floor under ORT's logger: default follows the logger ORT hands the EP (the session's "
       "log_severity_level with add_provider / add_provider_for_devices); the others also drop "
       "nacc's messages below that level (warning = declined nodes, info = host-only op kinds "
       "and the placement summary)"},
      {"ort_optimization_level", "disabled, basic, extended or all", "all",
       "the session's graph_optimization_level (ORT's plugin ABI does not expose it): the EP "
       "computes what the CPU EP computes at that level (QDQ fusion from extended on)"},
      {"ort_intra_op_threads", "an integer in [0, 1024]", "0 (ORT's default: the physical cores)",
       "the session's intra_op_num_threads (ORT's plugin ABI does not expose it): where ORT runs "
       "a QDQ Conv unfused (float32), MLAS's thread segments decide the order of its sums, which "
       "the EP reproduces"},
      {"int16_activations", "0 or 1", "0",
       "1: claim QDQ Conv units with int16 (QInt16, zero point 0) activations and int8 weights "
       "(16x8 output stage; not bit-exact: the CPU EP computes them in float, outputs may differ "
       "by one quantization step), QDQ Add / Sub / Mul of two int16 maps and Gemm / MatMul with "
       "constant weights (16x8 arithmetic, likewise within one step) and same-quantization "
       "int16 MaxPool / Reshape / Flatten"},
      {"boundary_layout", "device or host", "device",
       "where rank-4 int8 / uint8 / int16 tensors (any batch) change between ONNX's NCHW and "
       "the Program's NHWC at a partition boundary: device = inside the Program, on the layout "
       "unit (NPU_OP_VNCHWCONV) or as DMA copy passes, whichever the compiler estimates "
       "cheaper (counted in the device's cycles and DMA bytes; the host only copies), host = "
       "converted by the host around each run"},
      {"int4_weights", "0 or 1", "0",
       "1: claim QDQ Conv units (and Gemm / MatMul with constant weights) whose weights are "
       "INT4 (QInt4, zero point 0, per tensor or per channel) with int8 / uint8 activations, "
       "run with int4 weights (DATA_FORM 10; not bit-exact: the CPU EP dequantizes them and "
       "computes in float, outputs may differ by one quantization step)"},
  };
  return table;
}

std::string option_specs_json() {
  std::string s = "[";
  for (const OptionSpec& o : option_specs()) {
    s += str_cat(s.size() > 1 ? ", " : "", "{\"name\": ", json_quote(o.name),
                 ", \"allowed\": ", json_quote(o.allowed), ", \"default\": ",
                 json_quote(o.default_text), ", \"help\": ", json_quote(o.help), "}");
  }
  return s + "]";
}

namespace {

std::mutex g_test_mu;
std::string g_test_perturb_node;

std::string current_test_perturb_node() {
  std::lock_guard<std::mutex> lock(g_test_mu);
  return g_test_perturb_node;
}

const char* const kLogLevelNames[] = {"default", "debug", "info", "warning", "error", "off"};

}  // namespace

void set_test_perturb_node(const std::string& node) {
  std::lock_guard<std::mutex> lock(g_test_mu);
  g_test_perturb_node = node;
}

Config Config::from_pairs(const std::vector<std::pair<std::string, std::string>>& pairs) {
  Config c;
  std::vector<std::string> errors;
  auto bad = [&](const std::string& key, const std::string& value, const std::string& allowed) {
    errors.push_back(str_cat(kOptionPrefix, key, "='", value, "': ", allowed));
  };
  auto int_in = [&](const std::string& key, const std::string& value, int64_t lo, int64_t hi,
                    int64_t* out) {
    int64_t v = 0;
    if (!parse_int(value, &v) || v < lo || v > hi) {
      bad(key, value, str_cat("must be an integer in [", lo, ", ", hi, "]"));
      return false;
    }
    *out = v;
    return true;
  };
  for (const auto& [key, value] : pairs) {
    int64_t v = 0;
    if (key == "threads") {
      if (int_in(key, value, 0, kMaxThreads, &v)) c.threads = static_cast<int>(v);
    } else if (key == "cores") {
      if (parse_int(value, &v) && v >= 1 && v <= limits::kMaxCores && (v & (v - 1)) == 0) {
        c.cores = static_cast<int>(v);
      } else {
        bad(key, value, str_cat("must be 1, 2, 4, 8, 16 or ", limits::kMaxCores));
      }
    } else if (key == "sram_kb") {
      if (parse_int(value, &v) && v >= kMinSramKb && v <= kMaxSramKb && (v & (v - 1)) == 0) {
        c.sram_kb = static_cast<int>(v);
      } else {
        bad(key, value, str_cat("must be a power of two in [", kMinSramKb, ", ", kMaxSramKb,
                                "] (KiB of SRAM per core; the NACC has ",
                                limits::kDefaultSramBytes / 1024, ")"));
      }
    } else if (key == "clock_mhz") {
      if (int_in(key, value, 1, kMaxClockMhz, &v)) c.clock_mhz = static_cast<int>(v);
    } else if (key == "dump_dir" || key == "cache_dir") {
      const std::string problem = directory_problem(value);
      if (!problem.empty()) {
        bad(key, value, problem);
      } else {
        (key == "dump_dir" ? c.dump_dir : c.cache_dir) = value;
      }
    } else if (key == "fallback") {
      if (value == "allow") {
        c.fallback = Fallback::kAllow;
      } else if (value == "error") {
        c.fallback = Fallback::kError;
      } else {
        bad(key, value, "must be 'allow' (unsupported nodes run on the host) or 'error' (fail "
                        "when any node would run on the host)");
      }
    } else if (key == "min_partition_macs") {
      if (int_in(key, value, 0, int64_t{1} << 62, &v)) c.min_partition_macs = v;
    } else if (key == "log_level") {
      bool found = false;
      for (size_t i = 0; i < std::size(kLogLevelNames); ++i) {
        if (value == kLogLevelNames[i]) {
          c.log_level = static_cast<LogLevel>(i);
          found = true;
        }
      }
      if (!found) bad(key, value, "must be default, off, error, warning, info or debug");
    } else if (key == "ort_optimization_level") {
      using L = Config::OrtOptLevel;
      const std::pair<const char*, L> levels[] = {
          {"disabled", L::kDisabled}, {"basic", L::kBasic}, {"extended", L::kExtended}, {"all", L::kAll}};
      bool found = false;
      for (const auto& [name, level] : levels) {
        if (value == name) {
          c.ort_opt_level = level;
          found = true;
        }
      }
      if (!found) bad(key, value, "must be disabled, basic, extended or all");
    } else if (key == "ort_intra_op_threads") {
      if (int_in(key, value, 0, 1024, &v)) c.ort_intra_op_threads = static_cast<int>(v);
    } else if (key == "int16_activations") {
      if (value == "0" || value == "1") {
        c.int16_activations = value == "1";
      } else {
        bad(key, value, "must be 0 or 1");
      }
    } else if (key == "boundary_layout") {
      if (value == "device" || value == "host") {
        c.device_layout = value == "device";
      } else {
        bad(key, value, "must be device or host");
      }
    } else if (key == "int4_weights") {
      if (value == "0" || value == "1") {
        c.int4_weights = value == "1";
      } else {
        bad(key, value, "must be 0 or 1");
      }
    } else {
      std::vector<std::string> known;
      for (const OptionSpec& o : option_specs()) known.emplace_back(o.name);
      errors.push_back(str_cat("unknown option '", kOptionPrefix, key, "'; known options: ",
                               join(known, ", ")));
    }
  }
  if (!errors.empty()) {
    throw OrtError(ORT_INVALID_ARGUMENT,
                   str_cat("NaccExecutionProvider: invalid provider option",
                           errors.size() > 1 ? "s" : "", ": ", join(errors, "; ")));
  }
  return c;
}

Config Config::from_session(const Api& api, const OrtSessionOptions* options) {
  std::vector<std::pair<std::string, std::string>> pairs;
  const std::string prefix = kOptionPrefix;
  bool context_enable = false, context_embed = true, int8_allowed = false;
  for (const auto& [key, value] : config_entries(api, options)) {
    if (key.compare(0, prefix.size(), prefix) == 0) {
      pairs.emplace_back(key.substr(prefix.size()), value);
    } else if (key == "session.qdqisint8allowed") {
      int8_allowed = value == "1";
    } else if (key == "ep.context_enable") {
      context_enable = value == "1";
    } else if (key == "ep.context_embed_mode") {
      context_embed = value != "0";
    }
  }
  Config c = from_pairs(pairs);
  c.test_perturb_node = current_test_perturb_node();
  c.ep_context_enable = context_enable;
  c.ep_context_embed = context_embed;
  c.ort_qdq_int8_allowed = int8_allowed;
  return c;
}

std::string Config::summary() const {
  return str_cat("cores=", cores, " sram_kb=", sram_kb, " clock_mhz=", clock_mhz,
                 " threads=", threads, " fallback=", fallback == Fallback::kAllow ? "allow" : "error",
                 " min_partition_macs=", min_partition_macs,
                 " log_level=", kLogLevelNames[static_cast<int>(log_level)],
                 " ort_optimization_level=", static_cast<int>(ort_opt_level),
                 " qdqisint8allowed=", int(ort_qdq_int8_allowed),
                 " ort_intra_op_threads=", ort_threads(),
                 int16_activations ? " int16_activations=1" : "",
                 int4_weights ? " int4_weights=1" : "",
                 device_layout ? "" : " boundary_layout=host");
}

int Config::ort_threads() const {
  if (ort_intra_op_threads > 0) return ort_intra_op_threads;
  // ORT's default intra-op pool has one thread per physical core (cpuinfo's
  // core count): distinct (package, core) pairs of the online CPUs.
  static const int cores = [] {
    std::set<std::pair<long, long>> seen;
    for (unsigned cpu = 0; cpu < 4096; ++cpu) {
      const std::string base = str_cat("/sys/devices/system/cpu/cpu", cpu, "/topology/");
      std::ifstream pkg(base + "physical_package_id"), core(base + "core_id");
      long p = -1, c = -1;
      if (!(pkg >> p) || !(core >> c)) {
        if (cpu >= std::thread::hardware_concurrency()) break;
        continue;
      }
      seen.emplace(p, c);
    }
    return seen.empty() ? std::max(1, int(std::thread::hardware_concurrency())) : int(seen.size());
  }();
  return cores;
}

int Config::log_floor() const {
  switch (log_level) {
    case LogLevel::kDefault:
    case LogLevel::kDebug: return ORT_LOGGING_LEVEL_VERBOSE;
    case LogLevel::kInfo: return ORT_LOGGING_LEVEL_INFO;
    case LogLevel::kWarning: return ORT_LOGGING_LEVEL_WARNING;
    case LogLevel::kError: return ORT_LOGGING_LEVEL_ERROR;
    case LogLevel::kOff: break;
  }
  return ORT_LOGGING_LEVEL_FATAL + 1;
}

}  // namespace nacc::ep

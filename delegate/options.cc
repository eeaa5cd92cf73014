// Option table and parser of the TFLite delegate (see options.h).
#include "options.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/error.h"
#include "arch/limits.h"
#include "json.h"

namespace nacc::tflite {

namespace {

constexpr int kAllowedCores[] = {1, 2, 4, 8, 16, 32};  // NACC_SPEC §4
constexpr int kMaxThreads = 256;
// SRAM per core: a power of two so that NACC_MEM_RANGE's SRAM/4 and SRAM/1024
// base units stay whole bytes (NACC_SPEC §3); 64 KB is the hardware's.
constexpr int kMinSramKb = 16;
constexpr int kMaxSramKb = 1024;
constexpr int kMinClockMhz = 1;
constexpr int kMaxClockMhz = 10000;

const char* const kLogLevels[] = {"off", "error", "warning", "info", "debug"};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Edit distance, for "did you mean" hints.
size_t distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string known_keys() {
  std::string s;
  for (const OptionSpec& o : option_specs()) s += (s.empty() ? "" : ", ") + std::string(o.name);
  return s;
}

const OptionSpec& spec(const std::string& name) {
  for (const OptionSpec& o : option_specs()) {
    if (name == o.name) return o;
  }
  std::string hint;
  size_t best = 3;
  for (const OptionSpec& o : option_specs()) {
    const size_t d = distance(lower(name), o.name);
    if (d < best) {
      best = d;
      hint = str_cat(" (did you mean '", o.name, "'?)");
    }
  }
  throw InvalidArgument(str_cat("unknown option '", name, "'", hint, "; known options: ",
                                known_keys()));
}

std::string bad_value(const std::string& key, const std::string& value) {
  const OptionSpec& o = spec(key);
  return str_cat("option '", key, "': '", value, "' is not allowed; allowed: ", o.allowed);
}

int64_t parse_int(const std::string& key, const std::string& value, int64_t lo, int64_t hi) {
  const char* s = value.c_str();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 10);
  const bool whole = !value.empty() && end && *end == '\0' &&
                     value.find_first_of(" \t\n") == std::string::npos;
  check_arg(whole && errno == 0 && v >= lo && v <= hi, bad_value(key, value));
  return v;
}

// Creates `path` (and parents) if missing; checks it is a writable directory.
std::string prepare_directory(const std::string& key, const std::string& path) {
  check_arg(!path.empty(), "option '", key, "': empty path; allowed: ", spec(key).allowed);
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(path, ec);
  check_arg(fs::is_directory(path), "option '", key, "': cannot create directory '", path, "'",
            ec ? str_cat(" (", ec.message(), ")") : std::string());
  const fs::path probe = fs::path(path) / ".nacc_write_probe";
  {
    std::ofstream f(probe);
    check_arg(static_cast<bool>(f), "option '", key, "': directory '", path,
              "' is not writable");
  }
  fs::remove(probe, ec);
  return path;
}

}  // namespace

const std::vector<OptionSpec>& option_specs() {
  static const std::vector<OptionSpec> table = {
      {"cores", "1, 2, 4, 8, 16 or 32 (nacc docs hardware, §4)", "1",
       "simulated NPU cores the compiler splits work across"},
      {"threads", "an integer in [1, 256]", "the interpreter's num_threads (1 if unset)",
       "host threads that run the simulated cores"},
      {"sram_kb", "a power of two in [16, 1024]", "64", "SRAM per core in KB (hardware: 64)"},
      {"clock_mhz", "an integer in [1, 10000]", "500",
       "NPU clock used to turn simulated cycles into reported latency"},
      {"min_partition_macs", "an integer >= 0", "0",
       "partitions doing fewer multiply-accumulates stay on the host (fragmentation guard)"},
      {"log_level", "off, error, warning, info or debug", "info",
       "stderr log: info = host-only op kinds and the summary, warning = declined nodes"},
      {"dump_dir", "a directory path (created if missing)", "(none)",
       "writes each partition's Program, disassembly and report there"},
      {"cache_dir", "a directory path (created if missing)", "(none)",
       "reuses compiled Programs across runs, keyed by a hash of subgraph, weights, "
       "hardware configuration and nacc version"},
      {"fallback", "allow or error", "allow",
       "error: fail when any node would stay on the host (strict mode)"},
      {"debug_dump_dir", "a directory path (created if missing)", "(none)",
       "debug mode: on every Invoke, writes each claimed op's output tensor as the simulated "
       "device computed it (<op>.bin + .json, matched to TFLite tensors by name; nacc compare "
       "reads them); runs slower"},
  };
  return table;
}

const char* log_level_name(LogLevel level) { return kLogLevels[static_cast<int>(level)]; }

DelegateOptions parse_options(const std::vector<std::pair<std::string, std::string>>& kv) {
  DelegateOptions o;
  std::set<std::string> seen;
  for (const auto& [key, value] : kv) {
    spec(key);  // unknown keys
    check_arg(seen.insert(key).second, "option '", key, "' given twice");
    if (key == "cores") {
      const int64_t v = parse_int(key, value, 1, limits::kMaxCores);
      check_arg(std::count(std::begin(kAllowedCores), std::end(kAllowedCores), v) > 0,
                bad_value(key, value));
      o.cores = static_cast<int>(v);
    } else if (key == "threads") {
      o.threads = static_cast<int>(parse_int(key, value, 1, kMaxThreads));
    } else if (key == "sram_kb") {
      const int64_t v = parse_int(key, value, kMinSramKb, kMaxSramKb);
      check_arg((v & (v - 1)) == 0, bad_value(key, value));
      o.sram_kb = static_cast<int>(v);
    } else if (key == "clock_mhz") {
      o.clock_mhz = static_cast<int>(parse_int(key, value, kMinClockMhz, kMaxClockMhz));
    } else if (key == "min_partition_macs") {
      o.min_partition_macs = parse_int(key, value, 0, INT64_MAX);
    } else if (key == "log_level") {
      const std::string v = lower(value);
      bool found = false;
      for (int i = 0; i < 5; ++i) {
        if (v == kLogLevels[i]) {
          o.log_level = static_cast<LogLevel>(i);
          found = true;
        }
      }
      check_arg(found, bad_value(key, value));
    } else if (key == "dump_dir") {
      o.dump_dir = prepare_directory(key, value);
    } else if (key == "cache_dir") {
      o.cache_dir = prepare_directory(key, value);
    } else if (key == "debug_dump_dir") {
      o.debug_dump_dir = prepare_directory(key, value);
    } else if (key == "fallback") {
      const std::string v = lower(value);
      check_arg(v == "allow" || v == "error", bad_value(key, value));
      o.fallback = v == "allow" ? Fallback::kAllow : Fallback::kError;
    }
  }
  return o;
}

std::vector<std::pair<std::string, std::string>> DelegateOptions::as_strings() const {
  return {
      {"cores", std::to_string(cores)},
      {"threads", std::to_string(threads)},
      {"sram_kb", std::to_string(sram_kb)},
      {"clock_mhz", std::to_string(clock_mhz)},
      {"min_partition_macs", std::to_string(min_partition_macs)},
      {"log_level", log_level_name(log_level)},
      {"dump_dir", dump_dir},
      {"cache_dir", cache_dir},
      {"fallback", fallback == Fallback::kAllow ? "allow" : "error"},
      {"debug_dump_dir", debug_dump_dir},
  };
}

std::string option_specs_json() {
  JsonWriter w;
  w.begin_array();
  for (const OptionSpec& o : option_specs()) {
    w.begin_object();
    w.field("name", o.name).field("allowed", o.allowed).field("default", o.default_text);
    w.field("help", o.help);
    w.end_object();
  }
  w.end_array();
  return w.str();
}

}  // namespace nacc::tflite

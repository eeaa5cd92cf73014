// The delegate's options: one table of key, allowed values, default and help
// text, parsed once from the external-delegate key/value strings. The same
// table validates the raw-.so path (tflite_plugin_create_delegate) and, via
// the library's C API, nacc.load_delegate() in Python.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace nacc::tflite {

enum class LogLevel { kOff = 0, kError = 1, kWarning = 2, kInfo = 3, kDebug = 4 };
enum class Fallback { kAllow, kError };

struct DelegateOptions {
  int cores = 1;                  // simulated NPU cores: 1, 2, 4, 8, 16, 32 (NACC_SPEC §4)
  int threads = 0;                // host threads running the simulation; 0: the interpreter's
  int sram_kb = 64;               // SRAM per core, KB (NACC_SPEC §1: 64)
  int clock_mhz = 500;            // NPU clock for reported latencies (docs/device_model.md §6)
  int64_t min_partition_macs = 0; // partitions with fewer MACs stay on the host
  LogLevel log_level = LogLevel::kInfo;
  std::string dump_dir;           // empty: no dumps
  std::string cache_dir;          // empty: no compiled-Program cache
  std::string debug_dump_dir;     // empty: off; else every op's output tensor per Invoke
  Fallback fallback = Fallback::kAllow;

  // The options as the key/value strings they parse from (all keys, defaults
  // included), for reports and cache keys.
  std::vector<std::pair<std::string, std::string>> as_strings() const;
};

struct OptionSpec {
  const char* name;
  const char* allowed;       // "1, 2, 4, 8, 16 or 32"
  const char* default_text;  // "1"
  const char* help;
};

// The option table, in documentation order.
const std::vector<OptionSpec>& option_specs();

// Parses and validates key/value strings. Throws nacc::InvalidArgument with
// a message naming the key, the value and what is allowed; unknown and
// repeated keys are errors. Creates dump_dir / cache_dir if missing and
// checks that they are writable directories.
DelegateOptions parse_options(const std::vector<std::pair<std::string, std::string>>& kv);

const char* log_level_name(LogLevel level);

// The table as JSON: [{"name":..., "allowed":..., "default":..., "help":...}, ...].
std::string option_specs_json();

}  // namespace nacc::tflite

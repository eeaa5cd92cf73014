// Provider-option parsing and validation (config.h).
#include "ep/config.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>

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

const std::vector<std::string>& option_keys() {
  static const std::vector<std::string> keys = {
      "threads", "cores", "sram_kb", "clock_mhz", "dump_dir", "cache_dir",
      "fallback", "min_partition_macs", "test_perturb_node"};
  return keys;
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
        bad(key, value, str_cat("must be 1, 2, 4, 8, 16 or ", limits::kMaxCores,
                                " (NACC_SPEC §4)"));
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
    } else if (key == "test_perturb_node") {
      c.test_perturb_node = value;
    } else {
      errors.push_back(str_cat("unknown option '", kOptionPrefix, key, "'; known options: ",
                               join(option_keys(), ", ")));
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
  bool context_enable = false, context_embed = true;
  for (const auto& [key, value] : config_entries(api, options)) {
    if (key.compare(0, prefix.size(), prefix) == 0) {
      pairs.emplace_back(key.substr(prefix.size()), value);
    } else if (key == "ep.context_enable") {
      context_enable = value == "1";
    } else if (key == "ep.context_embed_mode") {
      context_embed = value != "0";
    }
  }
  Config c = from_pairs(pairs);
  c.ep_context_enable = context_enable;
  c.ep_context_embed = context_embed;
  return c;
}

std::string Config::summary() const {
  return str_cat("cores=", cores, " sram_kb=", sram_kb, " clock_mhz=", clock_mhz,
                 " threads=", threads, " fallback=", fallback == Fallback::kAllow ? "allow" : "error",
                 " min_partition_macs=", min_partition_macs);
}

}  // namespace nacc::ep

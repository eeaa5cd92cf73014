// What the delegate decided and measured, per model: claimed / declined nodes
// with their reasons, partitions with their compile and run numbers. Printed
// as the two-level fallback log and summary of STYLE.md rule 3, and returned
// as JSON through the library's C API (python/nacc/tflite.py reads it).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine.h"
#include "options.h"
#include "translate.h"

namespace nacc::tflite {

struct PartitionReport {
  int index = 0;                   // partition number within its subgraph
  std::vector<int> nodes;          // TFLite node indices, execution order
  std::vector<std::string> ops;    // their op types
  std::vector<int> input_tensors;  // TFLite tensor indices bound to Program inputs
  std::vector<int> output_tensors;
  int64_t macs = 0;
  std::string cache_key;
  bool cache_hit = false;
  // Why the cache_dir entry under cache_key was not used and was replaced
  // (another partition's Program, an old format, ...); empty: none was there,
  // or it was used.
  std::string cache_replaced;
  double compile_ms = 0;
  int64_t program_ops = 0, command_words = 0, constant_bytes = 0;

  // Updated by the kernel on every Invoke (guarded by mu).
  mutable std::mutex mu;
  int64_t invocations = 0;
  RunStats last;
  int64_t total_cycles = 0;
  double host_ms_total = 0;
  int recompilations = 0;  // after input resizes
};

struct NodeReport {
  int node = -1;
  std::string op;
  std::string name;
  bool claimed = false;
  int partition = -1;
  bool host_kind = false;  // info level (kind / dtype), else a warning-level decline
  std::vector<Reason> reasons;
  int64_t macs = 0;
};

struct SubgraphReport {
  int ordinal = 0;        // order in which this delegate prepared subgraphs
  uint64_t context = 0;   // the TfLiteContext address, to tell interpreters apart
  int total_nodes = 0;
  int claimed_nodes = 0;
  std::vector<NodeReport> nodes;
  std::vector<std::shared_ptr<PartitionReport>> partitions;
  std::string summary;    // "NACC delegate: claimed X of Y nodes in Z partitions"
  std::vector<std::string> messages;  // the log lines, whatever log_level printed
};

// Prints "NACC delegate: <level>: <message>" to stderr at or below the level.
class Logger {
 public:
  explicit Logger(LogLevel level) : level_(level) {}
  void log(LogLevel level, const std::string& message) const;
  bool enabled(LogLevel level) const { return level <= level_ && level != LogLevel::kOff; }

 private:
  LogLevel level_;
};

std::string report_json(const DelegateOptions& options,
                        const std::vector<std::shared_ptr<SubgraphReport>>& subgraphs);

}  // namespace nacc::tflite

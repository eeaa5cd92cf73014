// A claimed partition: the IR subgraph of its nodes, compiled once into a
// Program (through cache_dir when set), and the kernel TFLite runs in their
// place. Prepare compiles; Invoke only binds TFLite's buffers and runs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine.h"
#include "options.h"
#include "report.h"
#include "translate.h"

namespace nacc::tflite {

// The IR graph of the nodes `nodes` (TFLite indices, execution order) of a
// translation. Graph inputs are `inputs` minus constants, outputs `outputs`
// (TFLite tensor indices, the partition's I/O as TFLite computed it); the
// tensor indices actually bound are returned in *bound_inputs.
ir::Graph extract_partition(const Translation& t, const std::vector<int>& nodes,
                            const std::vector<int>& inputs, const std::vector<int>& outputs,
                            std::vector<int>* bound_inputs);

// The cache key (32 hex characters, support::Digest128) of a partition whose IR has
// the support::graph_digest `ir_digest`, for the options' hardware: names its
// cache_dir entry <key>.nacc and is stored in it.
std::string cache_key(const std::string& ir_digest, const DelegateOptions& options);

// A compiled partition, ready for a kernel.
struct CompiledPartition {
  std::vector<int> nodes;          // TFLite node indices, execution order
  std::vector<NodeSpec> specs;     // to translate again after an input resize
  std::vector<int> inputs;         // TFLite tensors bound to program->inputs, in order
  std::vector<int> outputs;        // ... to program->outputs
  std::vector<std::vector<int64_t>> input_shapes, output_shapes;
  std::shared_ptr<const Program> program;
  std::shared_ptr<PartitionReport> report;
  std::string label;               // "partition 1 of subgraph 0 (nodes 3-17)"
};

// Compiles `graph` for the options (cache lookup, compile, cache store,
// dumps to <dump_dir>/nacc_<key prefix><dump_suffix>.*). Fills the compile
// fields of *report. A cache_dir entry is used only when its header names
// this partition's key and IR digest (support/cache_entry.h) and its Program
// passes the runtime's check; any other entry is logged as a warning, the
// partition compiled again and the entry replaced. Throws nacc::Error when the
// compiler cannot place the graph or its Program fails the runtime's check.
std::shared_ptr<const Program> compile_partition(const ir::Graph& graph,
                                                 const DelegateOptions& options,
                                                 const std::string& dump_suffix,
                                                 PartitionReport* report, const Logger& log);

}  // namespace nacc::tflite

// One fused partition at inference time: its compiled Program and the
// binding of ORT's input/output buffers to the Program's int8 regions.
// Compiled once (in OrtEp::Compile); Compute copies the buffers (converting
// NCHW <-> NHWC only for the bindings the Program does not convert itself,
// ep/layout.h) and runs the Program on the simulated device. Thread-safe: sessions may Run from
// several threads at once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ep/backend.h"
#include "ep/ep_context.h"
#include "ep/ort_api.h"

namespace nacc::ep {

// Simulated-device statistics of the partitions run in this process, by
// fused node name: {"name": {"runs": n, "cycles": last, "macs": last,
// "dma_bytes": last, "sram_high_water": last, "ops": [last run per Program
// op, op_counters_json]}, ...} as JSON (nacc.onnxruntime.run_stats()).
std::string run_stats_json();

class CompiledPartition {
 public:
  CompiledPartition(std::string name, PartitionBlob blob, std::shared_ptr<Executor> executor);

  const std::string& name() const { return name_; }
  const PartitionBlob& blob() const { return blob_; }

  // Reads the fused node's inputs from `context`, runs the Program, writes
  // the outputs. Throws OrtError / nacc::Error with the reason.
  void compute(const Api& api, OrtKernelContext* context) const;

 private:
  std::string name_;
  PartitionBlob blob_;
  std::shared_ptr<Executor> executor_;
  std::shared_ptr<const Program> loaded_;  // blob_.program, loaded with its execution plan
  std::vector<int> program_input_of_;   // fused input i -> Program input index
  std::vector<int> program_output_of_;  // fused output i -> Program output index
};

}  // namespace nacc::ep

// The EP's one seam to the core: compile a partition's IR graph into a
// Program, and run a Program on the simulated device. Claimed work always
// goes through here — the same compiler and device the TFLite delegate uses;
// the EP has no kernels of its own.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ep/config.h"
#include "ir/ir.h"
#include "runtime/op_counters.h"
#include "runtime/program.h"

namespace nacc::ep {

// The hardware configuration the options describe.
HwConfig hw_config(const Config& config);

// Compiles `partition` (graph.inputs / outputs are the partition's I/O) and
// checks the Program as the runtime will (check_program_for_device), so a
// Program the device would refuse is a compile failure GetCapability falls
// back from. Throws nacc::Unsupported / InvalidArgument with the reason.
Program compile_partition(const ir::Graph& partition, const Config& config);

// Program <-> bytes (the container format of docs/command_stream.md).
std::vector<uint8_t> serialize_program(const Program& program);
Program deserialize_program(const uint8_t* data, size_t size);

// Statistics of one run.
struct RunStats {
  int64_t cycles = 0;
  int64_t macs = 0;
  int64_t dma_bytes = 0;        // external-memory bytes read and written
  int64_t sram_high_water = 0;  // largest core
  std::vector<OpCounters> ops;  // the run cut per Program op (runtime/op_counters.h)
};

// Runs Programs on one simulated device; thread-safe (concurrent runs use
// different batch handlers, NACC_SPEC §6).
class Executor {
 public:
  explicit Executor(const Config& config);
  ~Executor();
  // Validates `program` against the device it will run on (once, at compile
  // time) and builds its execution plan; run() the returned copy (it then
  // skips the check and replays the plan). Throws InvalidArgument.
  std::shared_ptr<const Program> load(const Program& program);
  // inputs[i] / outputs[i]: int8 buffers of program.inputs[i] / outputs[i]
  // (NHWC for rank 4), sizes as the Program says.
  RunStats run(const Program& program, const std::vector<const void*>& inputs,
               const std::vector<void*>& outputs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nacc::ep

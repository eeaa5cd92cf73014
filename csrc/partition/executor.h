// The one compile-and-run path of both frontends: a partition's IR graph
// compiled into a Program that the runtime is sure to accept, and an Executor
// that runs Programs on simulated devices and reports one RunStats. The
// frontends keep only what their runtime needs (buffer binding, layouts,
// dumps, reports); neither reaches the compiler or the device but through here.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "arch/hw_config.h"
#include "ir/ir.h"
#include "runtime/op_counters.h"
#include "runtime/program.h"
#include "runtime/runtime.h"

namespace nacc::partition {

// Compiles `graph` (inputs / outputs = the partition's I/O, in order) for
// `hw` and checks the Program as the runtime will (check_program_for_device),
// so a Program the device would refuse is a compile failure the frontend
// falls back from. Throws nacc::Unsupported / InvalidArgument with the reason.
// A partition whose feature maps carry a batch N > 1 (docs/device_model.md
// "Batches") compiles one image (every runtime tensor's first dimension 1)
// into a Program of `images` N, which the runtime runs once per image.
Program compile_partition(const ir::Graph& graph, const HwConfig& hw);

// The images of a partition: the largest first dimension of its runtime 4-D
// feature maps (1 when there are none). Above 1 every op must be batch-wise
// (support::batch_wise) and every runtime tensor lead with it; Unsupported
// naming the first that does not.
int partition_images(const ir::Graph& graph);

// What one run of a Program cost on the simulated device.
struct RunStats {
  int64_t cycles = 0;           // device cycles, start to done interrupt
  int64_t macs = 0;             // useful MACs, as the device counted them
  int64_t dma_bytes = 0;        // external-memory bytes read and written
  int64_t sram_high_water = 0;  // SRAM high-water mark, bytes (largest core)
  // The run cut per Program op (runtime/op_counters.h; shared with the
  // runtime's RunStats, never null after a run).
  std::shared_ptr<const std::vector<OpCounters>> ops;
};

// Runs Programs, each on a simulated device of the HwConfig it was compiled
// for (one Runtime per configuration: a compiled model may carry Programs
// for another core count than the session's options). Thread-safe:
// concurrent runs use different batch handlers (NACC_SPEC §6).
class Executor {
 public:
  // host_threads: host threads simulating the cores of one command; 0 = one
  // per core, up to the machine's CPUs.
  explicit Executor(int host_threads = 0);
  ~Executor();
  // Debug mode: every run steps the device and calls `hook` with each op's
  // output (Runtime::set_op_output_hook). Set before the first load or run.
  void set_op_output_hook(Runtime::OpOutputHook hook);
  // Validates `program` against the device it will run on and builds its
  // execution plan; run() the returned copy (it then skips the check and
  // replays the plan). Throws InvalidArgument.
  std::shared_ptr<const Program> load(const Program& program);
  // The same without the copy, for a Program the caller shares immutably
  // (Runtime::load(std::shared_ptr<const Program>)); returns `program`.
  std::shared_ptr<const Program> load(std::shared_ptr<const Program> program);
  // inputs[i] / outputs[i]: buffers of program.inputs[i] / outputs[i].size
  // bytes. Throws nacc::DeviceFault or nacc::Error.
  RunStats run(const Program& program, const std::vector<const void*>& inputs,
               const std::vector<void*>& outputs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The frontends' test-only exports (nacc_tflite_test_inject_fault,
// nacc_ep_test_inject_fault; docs/reliability.md): nacc::testing::inject_faults
// with the kind given by name ("none", "bus_error", ...; null = ""). Returns
// 0, or 1 for a bad argument.
int test_inject_fault(const char* kind, int64_t command, int runs) noexcept;

}  // namespace nacc::partition

// The delegate's two calls into the core, both through csrc/partition/:
// compile a partition's IR graph into a Program and run a Program on the
// simulated device. Kept in one file so the frontend stays thin: nothing here
// decides or computes, it only adapts the delegate's options and adds its
// debug dumps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "options.h"
#include "partition/executor.h"
#include "runtime/program.h"
#include "support/sram.h"

namespace nacc::tflite {

// The hardware the options describe.
HwConfig hardware_config(const DelegateOptions& options);

// The SRAM size and buffer alignment the capability rules judge with: those
// the compiler tiles to, so claim and compile agree.
support::SupportConfig support_config(const DelegateOptions& options);

// Compiles `graph` (inputs/outputs = the partition's I/O, in order) for the
// options' hardware and checks the Program as the runtime will
// (check_program). Throws nacc::Error (Unsupported, InvalidArgument) when the
// compiler cannot place it or the runtime would refuse it; the caller falls
// back to TFLite.
Program compile_graph(const ir::Graph& graph, const DelegateOptions& options);

// The runtime's check of a Program (nacc::check_program_for_device) for the
// options' hardware: what loading it into an Executor would check, done
// before its nodes are claimed. Throws InvalidArgument.
void check_program(const Program& program, const DelegateOptions& options);

// Disassembly of the Program's command stream, for dump_dir.
std::string disassemble_program(const Program& program);

// Program::serialize / Program::deserialize (cache_dir, dump_dir). Throw
// nacc::Error on malformed bytes.
std::vector<uint8_t> serialize_program(const Program& program);
Program deserialize_program(const uint8_t* data, size_t size,
                            Program::Checksum checksum = Program::Checksum::kVerify);

// What one run of a Program cost on the simulated device (the one type of
// both frontends).
using RunStats = partition::RunStats;

// Runs one Program on the shared executor (partition/executor.h), adding
// what only the delegate has: the Program bound at construction (a TFLite
// kernel runs one) and the debug dumps.
class Executor {
 public:
  // With options.debug_dump_dir set, every run writes each op's output tensor,
  // as the device left it, to <debug_dump_dir>/<dump_prefix>_op<NNN>.bin (raw
  // int8, IR layout) and a .json beside it (tensor name, shape, op, partition
  // label, invocation); see docs/tflite_delegate.md "Debug dumps".
  // `program` is loaded as it is (shared, not copied): it must not change.
  Executor(std::shared_ptr<const Program> program, const DelegateOptions& options, int host_threads,
           const std::string& dump_prefix = "partition", const std::string& dump_label = "");
  ~Executor();
  // inputs[i] / outputs[i]: buffers of program.inputs[i].size / outputs[i].size bytes.
  // Throws nacc::DeviceFault or nacc::Error.
  RunStats run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs);

 private:
  void set_dump_hook(const DelegateOptions& options, const std::string& dump_prefix,
                     const std::string& dump_label);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nacc::tflite

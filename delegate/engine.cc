// Adapter from the delegate to the core's compiler and runtime (engine.h).
// TEMPORARY: csrc/compiler (nacc::compile) and csrc/runtime (nacc::Runtime)
// are not on main yet; until they land, compile_graph throws Unsupported so
// every partition falls back to TFLite with that reason logged.
#include "engine.h"

#include "common/error.h"
#include "compiler/command_stream.h"

namespace nacc::tflite {

HwConfig hardware_config(const DelegateOptions& options) {
  HwConfig hw;
  hw.cores = options.cores;
  hw.sram_bytes = int64_t{options.sram_kb} * 1024;
  return hw;
}

Program compile_graph(const ir::Graph& graph, const DelegateOptions& options) {
  (void)graph;
  (void)options;
  throw Unsupported("the NPU compiler is not part of this build yet (csrc/compiler)");
}

std::string disassemble_program(const Program& program) {
  return disassemble(program.commands.data(), program.commands.size(), /*best_effort=*/true);
}

std::vector<uint8_t> serialize_program(const Program& program) {
  (void)program;
  throw Unsupported("Program serialization is not part of this build yet (csrc/runtime)");
}

Program deserialize_program(const std::vector<uint8_t>& bytes) {
  (void)bytes;
  throw Unsupported("Program serialization is not part of this build yet (csrc/runtime)");
}

struct Executor::Impl {};

Executor::Executor(const Program& program, const DelegateOptions& options, int host_threads)
    : impl_(std::make_unique<Impl>()) {
  (void)program;
  (void)options;
  (void)host_threads;
}

Executor::~Executor() = default;

RunStats Executor::run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
  (void)inputs;
  (void)outputs;
  throw Unsupported("the NPU runtime is not part of this build yet (csrc/runtime)");
}

}  // namespace nacc::tflite

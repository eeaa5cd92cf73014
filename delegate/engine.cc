// Adapter from the delegate to the core's compiler and runtime (engine.h).
// TRANSITIONAL: csrc/compiler/compiler.h (nacc::compile) and
// csrc/runtime/runtime.h (nacc::Runtime) are landing on main; until both are
// in the tree the stubs below throw Unsupported, so every partition falls
// back to TFLite with that reason logged. Remove the stubs once they landed.
#include "engine.h"

#include "common/error.h"
#include "compiler/command_stream.h"

#if __has_include("compiler/compiler.h") && __has_include("runtime/runtime.h")
#define NACC_DELEGATE_HAS_CORE 1
#include "compiler/compiler.h"
#include "compiler/tiling.h"
#include "runtime/runtime.h"
#else
#define NACC_DELEGATE_HAS_CORE 0
#endif

namespace nacc::tflite {

HwConfig hardware_config(const DelegateOptions& options) {
  HwConfig hw;
  hw.cores = options.cores;
  hw.sram_bytes = int64_t{options.sram_kb} * 1024;
  return hw;
}

std::string disassemble_program(const Program& program) {
  return disassemble(program.commands.data(), program.commands.size(), /*best_effort=*/true);
}

#if NACC_DELEGATE_HAS_CORE

support::SupportConfig support_config(const DelegateOptions& options) {
  // The SRAM and buffer alignment the compiler tiles to (claim and compile
  // must judge with the same numbers).
  support::SupportConfig c;
  c.sram_bytes = hardware_config(options).sram_bytes;
  c.sram_alignment = compiler::sram_geometry(c.sram_bytes).align;
  return c;
}

Program compile_graph(const ir::Graph& graph, const DelegateOptions& options) {
  CompileOptions co;
  co.hw = hardware_config(options);
  return compile(graph, co);
}

std::vector<uint8_t> serialize_program(const Program& program) { return program.serialize(); }

Program deserialize_program(const std::vector<uint8_t>& bytes) {
  return Program::deserialize(bytes.data(), bytes.size());
}

struct Executor::Impl {
  Runtime runtime;
  std::shared_ptr<const Program> program;
  Impl(const Program& p, const HwConfig& hw, int threads)
      : runtime(hw, threads), program(runtime.load(p)) {}
};

Executor::Executor(const Program& program, const DelegateOptions& options, int host_threads)
    : impl_(std::make_unique<Impl>(program, hardware_config(options), host_threads)) {}

Executor::~Executor() = default;

RunStats Executor::run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
  const Program& p = *impl_->program;
  check_arg(inputs.size() == p.inputs.size() && outputs.size() == p.outputs.size(),
            "Executor::run: ", inputs.size(), " inputs and ", outputs.size(), " outputs for a "
            "Program of ", p.inputs.size(), " and ", p.outputs.size());
  std::vector<InputBuffer> in;
  std::vector<OutputBuffer> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    in.push_back({inputs[i], static_cast<size_t>(p.inputs[i].size)});
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    out.push_back({outputs[i], static_cast<size_t>(p.outputs[i].size)});
  }
  const nacc::RunStats s = impl_->runtime.run(p, in, out, /*checked=*/true);
  RunStats r;
  r.cycles = s.counters.cycles;
  r.dma_bytes = s.counters.dma_read_bytes + s.counters.dma_write_bytes;
  r.sram_peak = s.counters.sram_high_water;
  return r;
}

#else  // the compiler and runtime are not in this tree yet

support::SupportConfig support_config(const DelegateOptions& options) {
  support::SupportConfig c;
  c.sram_bytes = hardware_config(options).sram_bytes;
  return c;
}

Program compile_graph(const ir::Graph&, const DelegateOptions&) {
  throw Unsupported("the NPU compiler is not part of this build yet (csrc/compiler)");
}

std::vector<uint8_t> serialize_program(const Program&) {
  throw Unsupported("Program serialization is not part of this build yet (csrc/runtime)");
}

Program deserialize_program(const std::vector<uint8_t>&) {
  throw Unsupported("Program serialization is not part of this build yet (csrc/runtime)");
}

struct Executor::Impl {};

Executor::Executor(const Program&, const DelegateOptions&, int) : impl_(std::make_unique<Impl>()) {}

Executor::~Executor() = default;

RunStats Executor::run(const std::vector<const void*>&, const std::vector<void*>&) {
  throw Unsupported("the NPU runtime is not part of this build yet (csrc/runtime)");
}

#endif

}  // namespace nacc::tflite

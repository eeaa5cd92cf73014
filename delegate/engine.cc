// Adapter from the delegate to the core's compiler and runtime (engine.h):
// the only place the delegate calls nacc::compile and nacc::Runtime.
#include "engine.h"

#include "common/error.h"
#include "compiler/command_stream.h"
#include "compiler/compiler.h"
#include "compiler/tiling.h"
#include "runtime/runtime.h"

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
  r.ops = s.ops;
  return r;
}

}  // namespace nacc::tflite

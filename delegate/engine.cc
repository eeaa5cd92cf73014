// Adapter from the delegate to the core's compiler and runtime (engine.h):
// the only place the delegate calls nacc::compile and nacc::Runtime.
#include "engine.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "arch/command_stream.h"
#include "compiler/compiler.h"
#include "json.h"
#include "partition/policy.h"
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
  return partition::support_config(hardware_config(options));
}

Program compile_graph(const ir::Graph& graph, const DelegateOptions& options) {
  CompileOptions co;
  co.hw = hardware_config(options);
  Program program = compile(graph, co);
  check_program(program, options);
  return program;
}

void check_program(const Program& program, const DelegateOptions& options) {
  check_program_for_device(program, hardware_config(options));
}

std::vector<uint8_t> serialize_program(const Program& program) { return program.serialize(); }

Program deserialize_program(const uint8_t* data, size_t size) {
  return Program::deserialize(data, size);
}

namespace {

void write_dump_file(const std::filesystem::path& p, const void* data, size_t size) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  check_arg(static_cast<bool>(f), "debug_dump_dir: cannot write '", p.string(), "'");
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  check_arg(static_cast<bool>(f), "debug_dump_dir: cannot write '", p.string(), "'");
}

}  // namespace

struct Executor::Impl {
  Runtime runtime;
  std::shared_ptr<const Program> program;
  int64_t invocation = 0;
  Impl(const Program& p, const HwConfig& hw, int threads)
      : runtime(hw, threads), program(runtime.load(p)) {}
};

Executor::Executor(const Program& program, const DelegateOptions& options, int host_threads,
                   const std::string& dump_prefix, const std::string& dump_label)
    : impl_(std::make_unique<Impl>(program, hardware_config(options), host_threads)) {
  if (options.debug_dump_dir.empty()) return;
  // Debug mode: the runtime steps the device and hands over each op's output
  // as soon as the op's command words have run (Runtime::set_op_output_hook).
  const std::filesystem::path dir(options.debug_dump_dir);
  Impl* impl = impl_.get();
  impl_->runtime.set_op_output_hook([dir, dump_prefix, dump_label, impl](
                                        int index, const OpRecord& op, const uint8_t* data,
                                        size_t size) {
    char num[16];
    std::snprintf(num, sizeof num, "%03d", index);
    const std::string base = str_cat(dump_prefix, "_op", num);
    JsonWriter w;
    w.begin_object();
    w.field("partition", dump_label).field("op_index", index).field("op", op.name);
    w.field("kind", op.kind).field("tensor", op.output_name);
    w.field("shape", op.output_shape).field("dtype", "int8");
    w.field("invocation", impl->invocation);
    if (data != nullptr) {
      write_dump_file(dir / (base + ".bin"), data, size);
      w.field("file", base + ".bin");
    } else {
      w.key("file").null();  // a Program without output records (format version 1)
    }
    w.end_object();
    const std::string text = w.str();
    write_dump_file(dir / (base + ".json"), text.data(), text.size());
  });
}

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
  ++impl_->invocation;
  const nacc::RunStats s = impl_->runtime.run(p, in, out, /*checked=*/true);
  RunStats r;
  r.cycles = s.counters.cycles;
  r.dma_bytes = s.counters.dma_read_bytes + s.counters.dma_write_bytes;
  r.sram_peak = s.counters.sram_high_water;
  r.ops = s.ops;
  return r;
}

}  // namespace nacc::tflite

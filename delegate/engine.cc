// Adapter from the delegate to the shared compile-and-run path (engine.h).
#include "engine.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "arch/command_stream.h"
#include "json.h"
#include "partition/executor.h"
#include "partition/policy.h"

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
  return partition::compile_partition(graph, hardware_config(options));
}

void check_program(const Program& program, const DelegateOptions& options) {
  check_program_for_device(program, hardware_config(options));
}

std::vector<uint8_t> serialize_program(const Program& program) { return program.serialize(); }

Program deserialize_program(const uint8_t* data, size_t size, Program::Checksum checksum) {
  return Program::deserialize(data, size, checksum);
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
  partition::Executor executor;
  std::shared_ptr<const Program> program;
  int64_t invocation = 0;
  explicit Impl(int threads) : executor(threads) {}
};

Executor::Executor(std::shared_ptr<const Program> program, const DelegateOptions& options,
                   int host_threads, const std::string& dump_prefix, const std::string& dump_label)
    : impl_(std::make_unique<Impl>(host_threads)) {
  if (!options.debug_dump_dir.empty()) set_dump_hook(options, dump_prefix, dump_label);
  impl_->program = impl_->executor.load(std::move(program));
}

void Executor::set_dump_hook(const DelegateOptions& options, const std::string& dump_prefix,
                             const std::string& dump_label) {
  // Debug mode: the runtime steps the device and hands over each op's output
  // as soon as the op's command words have run (Runtime::set_op_output_hook).
  const std::filesystem::path dir(options.debug_dump_dir);
  Impl* impl = impl_.get();
  impl_->executor.set_op_output_hook([dir, dump_prefix, dump_label, impl](
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
  ++impl_->invocation;
  return impl_->executor.run(*impl_->program, inputs, outputs);
}

}  // namespace nacc::tflite

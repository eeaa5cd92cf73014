// The core seam (backend.h): the only place the EP calls nacc::compile and
// the nacc::Runtime driver.
#include "ep/backend.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "compiler/compiler.h"
#include "runtime/runtime.h"

namespace nacc::ep {

HwConfig hw_config(const Config& config) {
  HwConfig hw;
  hw.cores = config.cores;
  hw.sram_bytes = static_cast<int64_t>(config.sram_kb) * 1024;
  return hw;
}

Program compile_partition(const ir::Graph& partition, const Config& config) {
  CompileOptions options;
  options.hw = hw_config(config);
  Program program = nacc::compile(partition, options);
  check_program_for_device(program, options.hw);
  return program;
}

std::vector<uint8_t> serialize_program(const Program& program) { return program.serialize(); }

Program deserialize_program(const uint8_t* data, size_t size) {
  return Program::deserialize(data, size);
}

// One Runtime (simulated device + driver) per hardware configuration a
// Program was compiled for: a compiled model may carry Programs for another
// core count than this session's options.
struct Executor::Impl {
  Config config;
  std::mutex mu;
  std::map<std::pair<int, int64_t>, std::unique_ptr<Runtime>> runtimes;

  Runtime& runtime_for(const HwConfig& hw) {
    std::lock_guard<std::mutex> lock(mu);
    auto& rt = runtimes[{hw.cores, hw.sram_bytes}];
    if (!rt) {
      int threads = config.threads;
      if (threads == 0) {
        const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        threads = std::min(hw.cores, cpus);
      }
      rt = std::make_unique<Runtime>(hw, threads);
    }
    return *rt;
  }
};

Executor::Executor(const Config& config) : impl_(std::make_unique<Impl>()) { impl_->config = config; }
Executor::~Executor() = default;

std::shared_ptr<const Program> Executor::load(const Program& program) {
  return impl_->runtime_for(program.hw).load(program);
}

RunStats Executor::run(const Program& program, const std::vector<const void*>& inputs,
                       const std::vector<void*>& outputs) {
  Runtime& rt = impl_->runtime_for(program.hw);
  std::vector<InputBuffer> ins;
  std::vector<OutputBuffer> outs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ins.push_back({inputs[i], static_cast<size_t>(program.inputs.at(i).size)});
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    outs.push_back({outputs[i], static_cast<size_t>(program.outputs.at(i).size)});
  }
  const nacc::RunStats s = rt.run(program, ins, outs, /*checked=*/true);
  RunStats r;
  r.cycles = s.counters.cycles;
  r.macs = s.counters.macs;
  r.dma_bytes = s.counters.dma_read_bytes + s.counters.dma_write_bytes;
  r.sram_high_water = s.counters.sram_high_water;
  r.ops = s.ops;
  return r;
}


}  // namespace nacc::ep

// The shared compile-and-run path (executor.h).
#include "partition/executor.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "common/error.h"
#include "compiler/compiler.h"
#include "support/rules.h"

namespace nacc::partition {

int partition_images(const ir::Graph& graph) {
  int64_t n = 1;
  for (const ir::Tensor& t : graph.tensors) {
    if (!t.is_constant() && t.rank() == 4 && t.shape[0] > n) n = t.shape[0];
  }
  if (n == 1) return 1;
  // A batch read only by SLICEs (one image, or a split of the batch, taken out
  // of it): the slices address the batch tensor themselves, one image program.
  const auto batched = [&](const ir::Op& op) {
    for (const auto* list : {&op.inputs, &op.outputs}) {
      for (int id : *list) {
        if (id >= 0 && !graph.tensor(id).is_constant() && graph.tensor(id).rank() >= 1 &&
            graph.tensor(id).shape[0] > 1) {
          return true;
        }
      }
    }
    return false;
  };
  bool only_slices = true;
  for (const ir::Op& op : graph.ops) {
    if (batched(op) && op.kind != ir::OpKind::kSlice) only_slices = false;
  }
  if (only_slices) return 1;
  for (const ir::Op& op : graph.ops) {
    if (auto why = support::batch_wise(graph, op)) {
      throw Unsupported(str_cat(op.display_type(), " '", op.name, "': ", *why,
                                " (a batch runs image by image, docs/device_model.md)"));
    }
    for (const auto* list : {&op.inputs, &op.outputs}) {
      for (int id : *list) {
        if (id < 0) continue;
        const ir::Tensor& t = graph.tensor(id);
        if (!t.is_constant() && (t.rank() == 0 || t.shape[0] != n)) {
          throw Unsupported(str_cat("tensor '", t.name, "' ", ir::shape_str(t.shape),
                                    " does not lead with the partition's batch ", n,
                                    " (a batch runs image by image, docs/device_model.md)"));
        }
      }
    }
  }
  return int(n);
}

Program compile_partition(const ir::Graph& graph, const HwConfig& hw) {
  CompileOptions options;
  options.hw = hw;
  const int images = partition_images(graph);
  Program program;
  if (images == 1) {
    program = compile(graph, options);
  } else {
    ir::Graph one = graph;  // one image: every runtime tensor's batch 1
    for (ir::Tensor& t : one.tensors) {
      if (!t.is_constant() && t.rank() >= 1) t.shape[0] = 1;
    }
    program = compile(one, options);
    program.images = images;
  }
  check_program_for_device(program, hw);
  return program;
}

struct Executor::Impl {
  int host_threads = 0;
  Runtime::OpOutputHook hook;
  std::mutex mu;
  std::map<std::pair<int, int64_t>, std::unique_ptr<Runtime>> runtimes;

  Runtime& runtime_for(const HwConfig& hw) {
    std::lock_guard<std::mutex> lock(mu);
    auto& rt = runtimes[{hw.cores, hw.sram_bytes}];
    if (!rt) {
      int threads = host_threads;
      if (threads <= 0) {
        const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        threads = std::min(hw.cores, cpus);
      }
      rt = std::make_unique<Runtime>(hw, threads);
      if (hook) rt->set_op_output_hook(hook);
    }
    return *rt;
  }
};

Executor::Executor(int host_threads) : impl_(std::make_unique<Impl>()) {
  impl_->host_threads = host_threads;
}
Executor::~Executor() = default;

void Executor::set_op_output_hook(Runtime::OpOutputHook hook) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  check_arg(impl_->runtimes.empty(), "Executor::set_op_output_hook: set it before the first run");
  impl_->hook = std::move(hook);
}

std::shared_ptr<const Program> Executor::load(const Program& program) {
  return impl_->runtime_for(program.hw).load(program);
}

std::shared_ptr<const Program> Executor::load(std::shared_ptr<const Program> program) {
  check_arg(program != nullptr, "Executor::load: no Program");
  Runtime& rt = impl_->runtime_for(program->hw);
  return rt.load(std::move(program));
}

RunStats Executor::run(const Program& program, const std::vector<const void*>& inputs,
                       const std::vector<void*>& outputs) {
  check_arg(inputs.size() == program.inputs.size() && outputs.size() == program.outputs.size(),
            "Executor::run: ", inputs.size(), " inputs and ", outputs.size(),
            " outputs for a Program of ", program.inputs.size(), " and ", program.outputs.size());
  Runtime& rt = impl_->runtime_for(program.hw);
  std::vector<InputBuffer> ins;
  std::vector<OutputBuffer> outs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ins.push_back({inputs[i], static_cast<size_t>(program.images * program.inputs[i].size)});
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    outs.push_back({outputs[i], static_cast<size_t>(program.images * program.outputs[i].size)});
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

int test_inject_fault(const char* kind, int64_t command, int runs) noexcept {
  try {
    testing::inject_faults(testing::fault_kind_by_name(kind ? kind : ""), command, runs);
    return 0;
  } catch (...) {
    return 1;
  }
}

}  // namespace nacc::partition

// The NACC driver: batch-handler allocation, region binding, submission via
// the register interface, completion and fault reporting (see runtime.h).
#include "runtime/runtime.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <limits>
#include <thread>

#include "arch/fields.h"
#include "common/error.h"

namespace nacc {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the command stream is bound in place: host words must be little-endian");

namespace {

uint32_t offset_of(Reg r) { return describe(r).offset; }

// The armed test fault (testing::inject_faults); g_fault_runs is the fast-path check.
struct FaultPlan {
  testing::FaultKind kind = testing::FaultKind::kNone;
  int64_t command = 0;
};
std::atomic<int> g_fault_runs{0};
std::atomic<int> g_invalid_program_checks{0};  // kInvalidProgram, armed on its own
std::mutex g_fault_mu;
FaultPlan g_fault_plan;

// A run fault is armed (the run then steps, so the fault lands where it is aimed).
bool faults_armed() { return g_fault_runs.load(std::memory_order_relaxed) > 0; }

// Takes one run's injection, if any is armed.
FaultPlan take_fault() {
  if (g_fault_runs.load(std::memory_order_relaxed) <= 0) return {};
  std::lock_guard<std::mutex> lk(g_fault_mu);
  if (g_fault_runs.load(std::memory_order_relaxed) <= 0) return {};
  g_fault_runs.fetch_sub(1, std::memory_order_relaxed);
  return g_fault_plan;
}
}  // namespace

namespace testing {
void inject_faults(FaultKind kind, int64_t command, int runs) {
  check_arg(runs >= 0, "inject_faults: runs ", runs, " must be >= 0");
  check_arg(command >= 0, "inject_faults: command ", command, " must be >= 0");
  check_arg(kind != FaultKind::kDmaOverrun || command >= 1,
            "inject_faults: dma_overrun needs a shortfall of at least 1 byte");
  std::lock_guard<std::mutex> lk(g_fault_mu);
  if (kind == FaultKind::kInvalidProgram) {
    g_invalid_program_checks.store(runs, std::memory_order_relaxed);
    return;
  }
  if (kind == FaultKind::kNone) g_invalid_program_checks.store(0, std::memory_order_relaxed);
  g_fault_plan = FaultPlan{kind, command};
  g_fault_runs.store(kind == FaultKind::kNone ? 0 : runs, std::memory_order_relaxed);
}

FaultKind fault_kind_by_name(const std::string& name) {
  if (name == "none") return FaultKind::kNone;
  if (name == "bus_error") return FaultKind::kBusError;
  if (name == "dma_overrun") return FaultKind::kDmaOverrun;
  if (name == "invalid_program") return FaultKind::kInvalidProgram;
  throw InvalidArgument(str_cat("fault kind '", name,
                                "' is not one of none, bus_error, dma_overrun, invalid_program"));
}
}  // namespace testing

Runtime::Runtime(const HwConfig& hw, int host_threads)
    : device_(hw, host_threads),
      busy_(size_t(limits::kNumBatchHandlers), false),
      scratch_(size_t(limits::kNumBatchHandlers),
               std::vector<std::vector<uint8_t>>(size_t(limits::kNumRegions))) {}

uint64_t Runtime::region_address(int handler, int region) {
  return (uint64_t(handler + 1) << 36) | (uint64_t(region) << 32);
}

uint64_t Runtime::stream_address(int handler) {
  return (uint64_t(handler + 1) << 36) | (uint64_t(limits::kNumRegions) << 32);
}

void check_program_for_device(const Program& program, const HwConfig& device) {
  if (g_invalid_program_checks.load(std::memory_order_relaxed) > 0) {
    std::lock_guard<std::mutex> lk(g_fault_mu);
    if (g_invalid_program_checks.load(std::memory_order_relaxed) > 0) {
      g_invalid_program_checks.fetch_sub(1, std::memory_order_relaxed);
      throw InvalidArgument("program: rejected by the test fault hook (invalid_program)");
    }
  }
  program.validate();
  check_arg(program.hw.cores <= device.cores, "program compiled for ", program.hw.cores,
            " cores; the runtime's device has ", device.cores);
  check_arg(program.hw.sram_bytes == device.sram_bytes, "program compiled for ",
            program.hw.sram_bytes, " bytes of SRAM per core; the runtime's device has ",
            device.sram_bytes);
  check_arg(program.commands.size() * 4 <= 0xFFFFFFFFull, "program: stream of ",
            program.commands.size(), " words does not fit QSIZE");
}

void Runtime::check_program(const Program& program) const {
  check_program_for_device(program, hw());
}

std::shared_ptr<const Program> Runtime::load(Program program) {
  check_program(program);
  return load_checked(std::make_shared<const Program>(std::move(program)));
}

std::shared_ptr<const Program> Runtime::load(std::shared_ptr<const Program> program) {
  check_arg(program != nullptr, "Runtime::load: no Program");
  check_program(*program);
  return load_checked(std::move(program));
}

std::shared_ptr<const Program> Runtime::load_checked(std::shared_ptr<const Program> loaded) {
  PlanEntry entry = build_plan(loaded);
  std::lock_guard<std::mutex> lk(plans_mu_);
  for (auto it = plans_.begin(); it != plans_.end();) {  // forget unloaded Programs
    it = it->second.program.expired() ? plans_.erase(it) : std::next(it);
  }
  plans_[loaded.get()] = std::move(entry);
  return loaded;
}

Runtime::PlanEntry Runtime::build_plan(const std::shared_ptr<const Program>& program) {
  // The stream runs once through the reference interpreter with its data
  // effects off: the constants are bound, every other region to memory of
  // its size that nothing reads or writes.
  const Program& p = *program;
  PlanEntry entry;
  entry.program = program;
  uint64_t largest = 0;
  std::array<uint64_t, limits::kNumRegions> sizes{};
  uint32_t immutable = 0;
  for (int i = 0; i < limits::kNumRegions; ++i) {
    const RegionDesc& d = p.regions[size_t(i)];
    switch (d.kind) {
      case RegionKind::kUnused: break;
      case RegionKind::kConstant:
        sizes[size_t(i)] = p.constants.size();
        immutable |= 1u << i;
        break;
      case RegionKind::kInput:
        sizes[size_t(i)] = uint64_t(p.staged(i) ? d.size : p.inputs[size_t(d.io_index)].size);
        break;
      case RegionKind::kOutput:
        sizes[size_t(i)] = uint64_t(p.staged(i) ? d.size : p.outputs[size_t(d.io_index)].size);
        break;
      case RegionKind::kScratch: sizes[size_t(i)] = uint64_t(d.size); break;
    }
    if (d.kind != RegionKind::kConstant) largest = std::max(largest, sizes[size_t(i)]);
  }
  std::unique_ptr<uint8_t[]> untouched(new uint8_t[std::max<uint64_t>(largest, 1)]);
  const int b = acquire();
  std::vector<uint64_t> bound;
  struct Guard {
    Runtime* rt;
    int b;
    std::vector<uint64_t>* bound;
    ~Guard() {
      for (uint64_t a : *bound) {
        try {
          rt->device_.unbind_buffer(a);
        } catch (...) {  // cannot happen: these addresses were bound above
        }
      }
      rt->release(b);
    }
  } guard{this, b, &bound};
  std::vector<std::pair<uint32_t, uint32_t>> writes;
  for (int i = 0; i < limits::kNumRegions; ++i) {
    const uint64_t addr = region_address(b, i);
    if (sizes[size_t(i)] > 0) {
      uint8_t* data = p.regions[size_t(i)].kind == RegionKind::kConstant
                          ? const_cast<uint8_t*>(p.constants.data())
                          : untouched.get();
      device_.bind_buffer(addr, data, sizes[size_t(i)],
                          p.regions[size_t(i)].kind != RegionKind::kConstant &&
                              p.regions[size_t(i)].kind != RegionKind::kInput,
                          str_cat("handler ", b, " region ", i, " (plan)"));
      bound.push_back(addr);
    }
    writes.emplace_back(offset_of(batch_addr_lo(b, i)), uint32_t(addr));
    writes.emplace_back(offset_of(batch_addr_hi(b, i)), uint32_t(addr >> 32));
  }
  const uint64_t stream = stream_address(b);
  device_.bind_buffer(stream, const_cast<uint32_t*>(p.commands.data()), p.commands.size() * 4,
                      false, str_cat("handler ", b, " stream"));
  bound.push_back(stream);
  writes.emplace_back(offset_of(Reg::INSTR_ADDR_L), uint32_t(stream));
  writes.emplace_back(offset_of(Reg::INSTR_ADDR_H), uint32_t(stream >> 32));
  writes.emplace_back(offset_of(Reg::QSIZE), uint32_t(p.commands.size() * 4));
  uint32_t cmd = 0;
  cmd = fields::CMD::BATCH_HANDLER.insert(cmd, uint32_t(b));
  cmd = fields::CMD::CLEAR_IRQ.insert(cmd, 1);
  cmd = fields::CMD::START.insert(cmd, 1);
  writes.emplace_back(offset_of(Reg::CMD), cmd);
  try {
    device_.write_registers(writes);
    entry.plan = device_.build_plan(b, immutable, &entry.why);
  } catch (const DeviceFault& e) {
    entry.why = e.what();  // every run faults the same way; it steps and raises
  }
  if (entry.plan) {
    entry.ops = std::make_shared<const std::vector<OpCounters>>(
        op_counters(p, entry.plan->counters(), entry.plan->timeline()));
  }
  return entry;
}

std::vector<uint8_t>& Runtime::stage_inputs(const Program& program, int b, int region,
                                            const std::vector<InputBuffer>& inputs) {
  auto& mem = scratch_[size_t(b)][size_t(region)];
  mem.assign(size_t(program.regions[size_t(region)].size), 0);  // the gaps are zero
  for (size_t k = 0; k < program.inputs.size(); ++k) {
    const IoTensor& t = program.inputs[k];
    if (t.region == region) std::memcpy(mem.data() + t.offset, inputs[k].data, size_t(t.size));
  }
  return mem;
}

void Runtime::unstage_outputs(const Program& program, int b,
                              const std::vector<OutputBuffer>& outputs) {
  for (size_t k = 0; k < program.outputs.size(); ++k) {
    const IoTensor& t = program.outputs[k];
    if (!program.staged(t.region)) continue;
    const auto& mem = scratch_[size_t(b)][size_t(t.region)];
    std::memcpy(outputs[k].data, mem.data() + t.offset, size_t(t.size));
  }
}

const Runtime::PlanEntry* Runtime::entry_of(const Program& program) {
  std::lock_guard<std::mutex> lk(plans_mu_);
  auto it = plans_.find(&program);
  if (it == plans_.end()) return nullptr;
  // A Program load() returned is immutable and alive while the caller holds
  // it: the same address and a live owner are the same Program.
  if (it->second.program.lock().get() != &program) return nullptr;
  return &it->second;
}

std::shared_ptr<const ExecutionPlan> Runtime::plan_of(const Program& program, std::string* why) {
  const PlanEntry* e = entry_of(program);
  if (why) *why = e ? e->why : "not loaded by this runtime";
  return e ? e->plan : nullptr;
}

int Runtime::acquire() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    for (size_t b = 0; b < busy_.size(); ++b) {
      if (!busy_[b]) {
        busy_[b] = true;
        return int(b);
      }
    }
    free_cv_.wait(lk);
  }
}

void Runtime::release(int handler) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    busy_[size_t(handler)] = false;
  }
  free_cv_.notify_one();
}

RunStats Runtime::run(const Program& program, const std::vector<InputBuffer>& inputs,
                      const std::vector<OutputBuffer>& outputs, bool checked, bool timeline) {
  if (!checked) check_program(program);
  check_arg(inputs.size() == program.inputs.size(), "run: ", inputs.size(),
            " input buffers for a program with ", program.inputs.size(), " inputs");
  check_arg(outputs.size() == program.outputs.size(), "run: ", outputs.size(),
            " output buffers for a program with ", program.outputs.size(), " outputs");
  const size_t n = size_t(program.images);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const IoTensor& t = program.inputs[i];
    check_arg(inputs[i].data != nullptr && inputs[i].size == n * size_t(t.size), "run: input ", i,
              " '", t.name, "' has ", inputs[i].size, " bytes; the program expects ",
              n * size_t(t.size));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const IoTensor& t = program.outputs[i];
    check_arg(outputs[i].data != nullptr && outputs[i].size == n * size_t(t.size), "run: output ",
              i, " '", t.name, "' has ", outputs[i].size, " bytes; the program expects ",
              n * size_t(t.size));
  }
  if (n == 1) return run_image(program, inputs, outputs, timeline);

  // A batch (docs/device_model.md "Batches"): image k's bytes at k x size in
  // each buffer, every image on its own batch handler, up to the 12 at once.
  const auto image = [&](size_t k, std::vector<InputBuffer>* in, std::vector<OutputBuffer>* out) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const size_t size = size_t(program.inputs[i].size);
      in->push_back({static_cast<const uint8_t*>(inputs[i].data) + k * size, size});
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      const size_t size = size_t(program.outputs[i].size);
      out->push_back({static_cast<uint8_t*>(outputs[i].data) + k * size, size});
    }
  };
  std::vector<RunStats> stats(n);
  std::vector<std::exception_ptr> errors(n);
  const auto run_one = [&](size_t k) {
    try {
      std::vector<InputBuffer> in;
      std::vector<OutputBuffer> out;
      image(k, &in, &out);
      stats[k] = run_image(program, in, out, timeline && k == 0);
    } catch (...) {
      errors[k] = std::current_exception();
    }
  };
  // The debug hook sees the images one after another (in order, on this thread).
  const size_t wave = op_hook_ ? 1 : size_t(limits::kNumBatchHandlers);
  for (size_t first = 0; first < n; first += wave) {
    std::vector<std::thread> threads;
    for (size_t k = first + 1; k < std::min(n, first + wave); ++k) threads.emplace_back(run_one, k);
    run_one(first);
    for (std::thread& t : threads) t.join();
  }
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  // The batch's counters: the images' summed (the handlers share the cores),
  // the SRAM high-water mark the largest; the timeline and cores of image 0.
  RunStats total = std::move(stats[0]);
  // The images' per-op cuts summed into a copy (each run's may be its plan's, shared).
  std::vector<OpCounters> ops = total.ops ? *total.ops : std::vector<OpCounters>{};
  for (size_t k = 1; k < n; ++k) {
    const RunCounters& c = stats[k].counters;
    RunCounters& t = total.counters;
    t.cycles += c.cycles;
    t.macs += c.macs;
    t.dma_read_bytes += c.dma_read_bytes;
    t.dma_write_bytes += c.dma_write_bytes;
    t.commands += c.commands;
    t.kernels += c.kernels;
    t.dma_ops += c.dma_ops;
    t.mac_cycles += c.mac_cycles;
    t.act_cycles += c.act_cycles;
    t.stall_cycles += c.stall_cycles;
    t.sram_high_water = std::max(t.sram_high_water, c.sram_high_water);
    const size_t kops = stats[k].ops ? stats[k].ops->size() : 0;
    for (size_t o = 0; o < ops.size() && o < kops; ++o) {
      OpCounters& a = ops[o];
      const OpCounters& b = (*stats[k].ops)[o];
      a.cycles += b.cycles;
      a.commands += b.commands;
      a.kernels += b.kernels;
      a.dma_ops += b.dma_ops;
      a.macs += b.macs;
      a.mac_cycles += b.mac_cycles;
      a.act_cycles += b.act_cycles;
      a.stall_cycles += b.stall_cycles;
      a.busy_cycles += b.busy_cycles;
      a.dma_read_bytes += b.dma_read_bytes;
      a.dma_write_bytes += b.dma_write_bytes;
      a.bound_cycles += b.bound_cycles;
      a.min_dma_bytes += b.min_dma_bytes;
    }
    total.replayed = total.replayed && stats[k].replayed;
  }
  total.ops = std::make_shared<const std::vector<OpCounters>>(std::move(ops));
  return total;
}

RunStats Runtime::run_image(const Program& program, const std::vector<InputBuffer>& inputs,
                            const std::vector<OutputBuffer>& outputs, bool timeline) {
  const PlanEntry* entry = mode_ == ExecutionMode::kReplay && !op_hook_ ? entry_of(program) : nullptr;
  if (entry && entry->plan && !faults_armed()) {
    const int b = acquire();
    struct Release {
      Runtime* rt;
      int b;
      ~Release() { rt->release(b); }
    } release_guard{this, b};
    std::array<RegionMemory, limits::kNumRegions> regions{};
    for (int i = 0; i < limits::kNumRegions; ++i) {
      const RegionDesc& d = program.regions[size_t(i)];
      RegionMemory& m = regions[size_t(i)];
      switch (d.kind) {
        case RegionKind::kUnused: break;
        case RegionKind::kConstant:
          m = {const_cast<uint8_t*>(program.constants.data()), program.constants.size()};
          break;
        case RegionKind::kInput:
          if (program.staged(i)) {
            auto& mem = stage_inputs(program, b, i, inputs);
            m = {mem.data(), mem.size()};
            break;
          }
          m = {static_cast<uint8_t*>(const_cast<void*>(inputs[size_t(d.io_index)].data)),
               uint64_t(program.inputs[size_t(d.io_index)].size)};
          break;
        case RegionKind::kOutput:
          if (program.staged(i)) {
            auto& mem = scratch_[size_t(b)][size_t(i)];
            mem.assign(size_t(d.size), 0);
            m = {mem.data(), mem.size()};
            break;
          }
          m = {static_cast<uint8_t*>(outputs[size_t(d.io_index)].data),
               uint64_t(program.outputs[size_t(d.io_index)].size)};
          break;
        case RegionKind::kScratch: {
          auto& mem = scratch_[size_t(b)][size_t(i)];
          mem.assign(size_t(d.size), 0);  // zeroed per run, as the stepped run's
          m = {mem.data(), mem.size()};
          break;
        }
      }
    }
    bool replayed = true;
    try {
      device_.replay(*entry->plan, b, regions);
    } catch (const DeviceFault&) {
      replayed = false;  // a unit refused its arguments: the stepped run says why
    }
    if (replayed) {
      unstage_outputs(program, b, outputs);
      RunStats stats;
      stats.handler = b;
      stats.replayed = true;
      const RunCounters& rc = entry->plan->counters();
      if (timeline) {
        stats.counters = rc;
        stats.counters.timeline = entry->plan->timeline();
      } else {
        stats.counters.cycles = rc.cycles;
        stats.counters.macs = rc.macs;
        stats.counters.dma_read_bytes = rc.dma_read_bytes;
        stats.counters.dma_write_bytes = rc.dma_write_bytes;
        stats.counters.commands = rc.commands;
        stats.counters.kernels = rc.kernels;
        stats.counters.dma_ops = rc.dma_ops;
        stats.counters.mac_cycles = rc.mac_cycles;
        stats.counters.act_cycles = rc.act_cycles;
        stats.counters.stall_cycles = rc.stall_cycles;
        stats.counters.sram_high_water = rc.sram_high_water;
        stats.counters.cores = rc.cores;
      }
      stats.ops = entry->ops;
      return stats;
    }
  }
  return step_run(program, inputs, outputs, timeline);
}

RunStats Runtime::step_run(const Program& program, const std::vector<InputBuffer>& inputs,
                           const std::vector<OutputBuffer>& outputs, bool timeline) {
  const FaultPlan fault = take_fault();
  const int b = acquire();
  std::vector<uint64_t> bound;
  struct Guard {
    Runtime* rt;
    int b;
    std::vector<uint64_t>* bound;
    ~Guard() {
      for (uint64_t a : *bound) {
        try {
          rt->device_.unbind_buffer(a);
        } catch (...) {  // cannot happen: these addresses were bound above
        }
      }
      rt->release(b);
    }
  } guard{this, b, &bound};

  auto bind = [&](uint64_t addr, const void* data, size_t size, bool writable, std::string name) {
    device_.bind_buffer(addr, const_cast<void*>(data), size, writable, std::move(name));
    bound.push_back(addr);
  };
  std::vector<std::pair<uint32_t, uint32_t>> writes;
  std::array<const uint8_t*, limits::kNumRegions> region_data{};  // host bytes behind each region
  for (int i = 0; i < limits::kNumRegions; ++i) {
    const RegionDesc& d = program.regions[size_t(i)];
    const uint64_t addr = region_address(b, i);
    const std::string where = str_cat("handler ", b, " region ", i);
    switch (d.kind) {
      case RegionKind::kUnused: break;
      case RegionKind::kConstant:
        bind(addr, program.constants.data(), program.constants.size(), false,
             where + " (constants)");
        break;
      case RegionKind::kInput: {
        if (program.staged(i)) {
          const auto& mem = stage_inputs(program, b, i, inputs);
          bind(addr, mem.data(), mem.size(), false, where + " (staged inputs)");
          region_data[size_t(i)] = mem.data();
          break;
        }
        const IoTensor& t = program.inputs[size_t(d.io_index)];
        bind(addr, inputs[size_t(d.io_index)].data, size_t(t.size), false,
             str_cat(where, " (input '", t.name, "')"));
        region_data[size_t(i)] = static_cast<const uint8_t*>(inputs[size_t(d.io_index)].data);
        break;
      }
      case RegionKind::kOutput: {
        // The test fault shortens the region that holds output 0.
        const bool overrun = fault.kind == testing::FaultKind::kDmaOverrun &&
                             program.outputs[0].region == i;
        if (program.staged(i)) {
          auto& mem = scratch_[size_t(b)][size_t(i)];
          mem.assign(size_t(d.size), 0);
          size_t bytes = mem.size();
          if (overrun) bytes -= std::min(bytes - 1, size_t(fault.command));
          bind(addr, mem.data(), bytes, true, where + " (staged outputs)");
          region_data[size_t(i)] = mem.data();
          break;
        }
        const IoTensor& t = program.outputs[size_t(d.io_index)];
        size_t bytes = size_t(t.size);
        if (overrun) bytes -= std::min(bytes - 1, size_t(fault.command));  // a buffer stays >= 1 byte
        bind(addr, outputs[size_t(d.io_index)].data, bytes, true,
             str_cat(where, " (output '", t.name, "')"));
        region_data[size_t(i)] = static_cast<const uint8_t*>(outputs[size_t(d.io_index)].data);
        break;
      }
      case RegionKind::kScratch: {
        auto& mem = scratch_[size_t(b)][size_t(i)];
        mem.assign(size_t(d.size), 0);  // zeroed per run: results never depend on history
        bind(addr, mem.data(), mem.size(), true, where + " (scratch)");
        region_data[size_t(i)] = mem.data();
        break;
      }
    }
    writes.emplace_back(offset_of(batch_addr_lo(b, i)), uint32_t(addr));
    writes.emplace_back(offset_of(batch_addr_hi(b, i)), uint32_t(addr >> 32));
  }
  const uint64_t stream = stream_address(b);
  const size_t stream_bytes = program.commands.size() * 4;
  bind(stream, program.commands.data(), stream_bytes, false, str_cat("handler ", b, " stream"));
  writes.emplace_back(offset_of(Reg::INSTR_ADDR_L), uint32_t(stream));
  writes.emplace_back(offset_of(Reg::INSTR_ADDR_H), uint32_t(stream >> 32));
  writes.emplace_back(offset_of(Reg::QSIZE), uint32_t(stream_bytes));
  uint32_t cmd = 0;
  cmd = fields::CMD::BATCH_HANDLER.insert(cmd, uint32_t(b));
  cmd = fields::CMD::CLEAR_IRQ.insert(cmd, 1);
  cmd = fields::CMD::START.insert(cmd, 1);
  writes.emplace_back(offset_of(Reg::CMD), cmd);
  device_.write_registers(writes);
  if (fault.kind == testing::FaultKind::kBusError) device_.inject_bus_error(b, fault.command);

  if (op_hook_) {
    run_with_op_hook(program, b, region_data);  // throws DeviceFault on a fault
  } else {
    device_.run(b);  // throws DeviceFault on a fault
  }
  const uint32_t status = device_.handler_register(b, Reg::NACC_INT_STATUS);
  if (status != fields::NACC_INT_STATUS::FULL_TRANS_DONE_INTR.mask() ||
      device_.state(b) != HandlerState::kStopped) {
    throw DeviceFault(str_cat("batch handler ", b, ": run ended with NACC_INT_STATUS = ", status,
                              " (expected FULL_TRANS_DONE_INTR only)"));
  }
  unstage_outputs(program, b, outputs);
  RunStats stats;
  stats.handler = b;
  stats.counters = device_.counters(b);
  stats.ops = std::make_shared<const std::vector<OpCounters>>(op_counters(program, stats.counters));
  if (!timeline) stats.counters.timeline.clear();
  return stats;
}

void Runtime::run_with_op_hook(const Program& program, int b,
                               const std::array<const uint8_t*, limits::kNumRegions>& region_data) {
  // Data effects happen in stream order, each command's when it is stepped
  // (docs/device_model.md, "Order and races"), so once the command processor
  // is about to fetch word w, every op whose words end at or before w has left
  // its output in external memory.
  const std::vector<Command> cmds = decode_stream(program.commands);
  size_t next_op = 0;
  std::exception_ptr hook_error;
  auto report_done = [&](uint64_t done_words) {
    while (next_op < program.ops.size() && program.ops[next_op].end_word <= done_words) {
      const OpRecord& o = program.ops[next_op];
      const uint8_t* data = nullptr;
      if (o.output_region >= 0 && region_data[size_t(o.output_region)] != nullptr) {
        data = region_data[size_t(o.output_region)] + o.output_offset;
      }
      if (!hook_error) {
        try {
          op_hook_(int(next_op), o, data, data ? size_t(o.output_size) : 0);
        } catch (...) {
          hook_error = std::current_exception();  // finish the stream first
        }
      }
      ++next_op;
    }
  };
  for (size_t k = 0;; ++k) {
    report_done(k < cmds.size() ? cmds[k].word : std::numeric_limits<uint64_t>::max());
    if (!device_.step(b)) break;
  }
  report_done(std::numeric_limits<uint64_t>::max());
  if (hook_error) std::rethrow_exception(hook_error);
}

}  // namespace nacc

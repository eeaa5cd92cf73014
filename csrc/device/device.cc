// The simulated NACC device: host register access with per-batch-handler
// contexts, CMD.START, the command processor (fetch, decode with the shared
// checks of command_stream.h, execute, WAITs, STOP), interrupts, the PMU and
// the fault path (docs/device_model.md, docs/command_stream.md §1-§5).
#include "device/device.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "arch/fields.h"
#include "device/device_internal.h"
#include "device/plan.h"
#include "device/plan_internal.h"

namespace nacc {

using device_detail::BusError;
using device_detail::HandlerContext;
using device_detail::Interval;
using device_detail::PendingOp;

namespace {
void publish_pmu(HandlerContext& c);

// Cycles the command processor spends on one command (docs/performance_model.md).
constexpr int64_t kCommandCycles = 1;

bool is_pmu(Reg r) { return r >= Reg::PMU_CTRL && r <= Reg::PMU_SRAM_HIGH_WATER; }

void set_pair(RegisterFile& regs, Reg lo, uint64_t v) {
  regs.set(lo, uint32_t(v));
  regs.set(Reg(int(lo) + 1), uint32_t(v >> 32));
}

}  // namespace

namespace device_detail {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llX", static_cast<unsigned long long>(v));
  return buf;
}

std::string region_text(uint32_t region_addr, uint64_t extra) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "region %d + 0x%08llX", region_of(region_addr),
                static_cast<unsigned long long>(region_offset(region_addr) + extra));
  return buf;
}

const BoundBuffer* find_access(const ExecEnv& env, uint64_t addr, uint64_t size, bool write) {
  const BoundBuffer* b = env.mem.find(addr, size);
  return b && (!write || b->writable) ? b : nullptr;
}

void access_fault(const ExecEnv& env, uint64_t addr, uint64_t size, bool write,
                  const std::string& what) {
  const BoundBuffer* b = env.mem.find(addr, size);
  const char* kind = write ? "bus write error: " : "bus read error: ";
  if (!b) {
    const BoundBuffer* first = env.mem.find_byte(addr);
    if (first) {
      throw BusError(str_cat(kind, what, " accesses device bytes [", hex(addr), ", ",
                             hex(addr + size), "), past the end ", hex(first->address + first->size),
                             " of the buffer bound at ", hex(first->address), " (",
                             first->size, " bytes, ", first->name, ")"),
                     write);
    }
    throw BusError(str_cat(kind, what, " accesses device bytes [", hex(addr), ", ",
                           hex(addr + size), "): no buffer is bound at ", hex(addr)),
                   write);
  }
  throw BusError(str_cat(kind, what, " writes device bytes [", hex(addr), ", ", hex(addr + size),
                         ") of the read-only buffer bound at ", hex(b->address), " (", b->name,
                         ")"),
                 true);
}

void retire(HandlerContext& ctx, std::deque<PendingOp>& queue, size_t keep) {
  while (queue.size() > keep) {
    ctx.cp_time = std::max(ctx.cp_time, queue.front().end);
    queue.pop_front();
  }
}

void check_race(const std::deque<PendingOp>& other, const PendingOp& op, const char* other_queue) {
  auto hit = [](const std::vector<Interval>& a, const std::vector<Interval>& b) -> const Interval* {
    for (const Interval& x : a) {
      for (const Interval& y : b) {
        if (x.overlaps(y)) return &x;
      }
    }
    return nullptr;
  };
  for (const PendingOp& o : other) {
    const Interval* x = hit(op.writes, o.reads);
    if (!x) x = hit(op.writes, o.writes);
    if (!x) x = hit(op.reads, o.writes);
    if (x) {
      throw DeviceFault(str_cat(
          "race: device bytes [", hex(x->lo), ", ", hex(x->hi), ") are also accessed by the ",
          opcode_name(o.op), " at word ", o.word, ", still outstanding in the ", other_queue,
          " queue (one of the two writes them); put a ",
          std::string(other_queue) == "DMA" ? "NPU_OP_DMA_WAIT" : "NPU_OP_KERNEL_WAIT",
          " between them (docs/command_stream.md §3.2)"));
    }
  }
}

}  // namespace device_detail

const char* handler_state_name(HandlerState s) {
  switch (s) {
    case HandlerState::kIdle: return "idle";
    case HandlerState::kRunning: return "running";
    case HandlerState::kStopped: return "stopped";
    case HandlerState::kFaulted: return "faulted";
  }
  return "?";
}

Device::Device(const HwConfig& hw, int host_threads) : hw_(hw), pool_(host_threads) {
  validate_hw_config(hw);
  for (int b = 0; b < limits::kNumBatchHandlers; ++b) {
    auto ctx = std::make_unique<HandlerContext>();
    ctx->index = b;
    ctx->cores.resize(size_t(hw.cores));
    ctx->run.cores.resize(size_t(hw.cores));
    handlers_.push_back(std::move(ctx));
  }
}

Device::~Device() = default;

HandlerContext& Device::ctx(int handler) const {
  if (handler < 0 || handler >= limits::kNumBatchHandlers) {
    throw DeviceFault(str_cat("batch handler ", handler, " out of range [0, ",
                              limits::kNumBatchHandlers - 1, "]"));
  }
  return *handlers_[size_t(handler)];
}

// ---------------------------------------------------------------------------
// Memory map.

void Device::bind_buffer(uint64_t address, void* data, uint64_t size, bool writable,
                         std::string name) {
  std::unique_lock<std::shared_mutex> lk(mem_mu_);
  mem_.bind(address, data, size, writable, std::move(name));
}

void Device::unbind_buffer(uint64_t address) {
  std::unique_lock<std::shared_mutex> lk(mem_mu_);
  mem_.unbind(address);
}

std::vector<BoundBuffer> Device::bound_buffers() const {
  std::shared_lock<std::shared_mutex> lk(mem_mu_);
  return mem_.buffers();
}

// ---------------------------------------------------------------------------
// Host register access.

bool Device::is_handler_register(Reg r) const {
  const RegisterDesc& d = describe(r);
  return d.bank == Bank::kCompute || (d.flags & kStreamWritable) || is_pmu(r) || r == Reg::QREAD;
}

uint32_t Device::read_register(uint32_t addr) {
  std::lock_guard<std::mutex> lk(host_mu_);
  return read_locked(addr);
}

uint32_t Device::read_locked(uint32_t addr) {
  const int i = register_index_at(addr);
  if (i < 0) return host_regs_.read(addr);  // throws the "no register" fault
  if (is_handler_register(Reg(i))) {
    HandlerContext& c = ctx(int(host_regs_.field(fields::CMD::BATCH_HANDLER)));
    std::lock_guard<std::mutex> lk(c.mu);
    return c.regs.read(addr);
  }
  return host_regs_.read(addr);
}

void Device::write_register(uint32_t addr, uint32_t value) {
  std::lock_guard<std::mutex> lk(host_mu_);
  write_locked(addr, value);
}

void Device::write_registers(const std::vector<std::pair<uint32_t, uint32_t>>& writes) {
  std::lock_guard<std::mutex> lk(host_mu_);
  for (const auto& [addr, value] : writes) write_locked(addr, value);
}

void Device::write_locked(uint32_t addr, uint32_t value) {
  const int i = register_index_at(addr);
  if (i < 0) {
    host_regs_.write(addr, value);  // throws the "no register" fault
    return;
  }
  const Reg r = Reg(i);
  if (r == Reg::CMD) {
    const uint32_t triggers = host_regs_.write(r, value);
    const int b = int(fields::CMD::BATCH_HANDLER.extract(value));
    if (!(triggers & (fields::CMD::CLEAR_IRQ.mask() | fields::CMD::START.mask()))) return;
    HandlerContext& c = ctx(b);
    std::lock_guard<std::mutex> lk(c.mu);
    if (triggers & fields::CMD::CLEAR_IRQ.mask()) c.regs.set(Reg::NACC_INT_STATUS, 0);
    if (triggers & fields::CMD::START.mask()) start_locked(b);
    return;
  }
  if (is_handler_register(r)) {
    HandlerContext& c = ctx(int(host_regs_.field(fields::CMD::BATCH_HANDLER)));
    std::lock_guard<std::mutex> lk(c.mu);
    if (r == Reg::NACC_CTRL && fields::NACC_CTRL::START.extract(value)) {
      throw DeviceFault(
          "NACC_CTRL.START = 1: the register-driven use of [N] is not modelled; kernels run from "
          "a command stream (CMD.START)");
    }
    if (c.state == HandlerState::kRunning && !(r == Reg::NACC_INT_STATUS || r == Reg::NACC_INT_EN)) {
      throw DeviceFault(str_cat("host write to ", describe(r).name, " while batch handler ",
                                c.index, " is running its stream"));
    }
    const uint32_t triggers = c.regs.write(r, value);
    if (r == Reg::PMU_CTRL && (triggers & fields::PMU_CTRL::CNT_RST.mask())) {
      c.pmu = device_detail::Pmu{};
      publish_pmu(c);
    }
    return;
  }
  host_regs_.write(r, value);
}

uint32_t Device::handler_register(int handler, Reg r) const {
  std::lock_guard<std::mutex> lk(host_mu_);
  if (is_handler_register(r)) {
    HandlerContext& c = ctx(handler);
    std::lock_guard<std::mutex> lk2(c.mu);
    return c.regs.get(r);
  }
  return host_regs_.get(r);
}

// Called with host_mu_ and the handler's mutex held.
void Device::start_locked(int b) {
  HandlerContext& c = ctx(b);
  if (c.state == HandlerState::kRunning) {
    throw DeviceFault(str_cat("CMD.START: batch handler ", b, " is still running its stream"));
  }
  // CMD.START resets the stream registers (docs/command_stream.md §1).
  c.regs.reset_stream_registers();
  c.regs.set(Reg::QREAD, 0);
  c.stream_addr = host_regs_.instruction_address();
  c.stream_bytes = host_regs_.get(Reg::QSIZE);
  c.pc = 0;
  for (int i = 0; i < limits::kNumRegions; ++i) c.region_base[size_t(i)] = host_regs_.region_base(b, i);
  for (auto& core : c.cores) {
    core.kernel = {};
    core.fm = {};
    core.rd_free = core.wr_free = core.mac_free = 0;
    core.busy.clear();
  }
  c.kernels.clear();
  c.dmas.clear();
  c.cp_time = 0;
  c.dma_free = 0;
  c.run = RunCounters{};
  c.replay_timeline.reset();
  c.run.cores.resize(size_t(hw_.cores));
  c.fault.clear();
  c.injected_bus_error_at = -1;
  c.state = HandlerState::kRunning;
}

// ---------------------------------------------------------------------------
// Execution.

HandlerState Device::state(int handler) const {
  HandlerContext& c = ctx(handler);
  std::lock_guard<std::mutex> lk(c.mu);
  return c.state;
}

std::string Device::fault_message(int handler) const {
  HandlerContext& c = ctx(handler);
  std::lock_guard<std::mutex> lk(c.mu);
  return c.fault;
}

RunCounters Device::counters(int handler) const {
  HandlerContext& c = ctx(handler);
  std::lock_guard<std::mutex> lk(c.mu);
  RunCounters r = c.run;
  if (c.replay_timeline) r.timeline = *c.replay_timeline;
  return r;
}

void Device::inject_bus_error(int handler, int64_t command) {
  HandlerContext& c = ctx(handler);
  std::lock_guard<std::mutex> lk(c.mu);
  c.injected_bus_error_at = command;
}

namespace {

// Copies the PMU accumulators into the handler's PMU registers.
void publish_pmu(HandlerContext& c) {
  set_pair(c.regs, Reg::PMU_CYCLES_LO, c.pmu.cycles);
  set_pair(c.regs, Reg::PMU_MAC_CYCLES_LO, c.pmu.mac_cycles);
  set_pair(c.regs, Reg::PMU_ACT_CYCLES_LO, c.pmu.act_cycles);
  set_pair(c.regs, Reg::PMU_DMA_RD_BYTES_LO, c.pmu.dma_rd);
  set_pair(c.regs, Reg::PMU_DMA_WR_BYTES_LO, c.pmu.dma_wr);
  set_pair(c.regs, Reg::PMU_STALL_CYCLES_LO, c.pmu.stall);
  c.regs.set(Reg::PMU_CMD_COUNT, c.pmu.commands);
  c.regs.set(Reg::PMU_SRAM_HIGH_WATER, c.pmu.sram_high_water);
}

// Adds a command's counts to the PMU (when PMU_CTRL.CNT_EN) and publishes it (NACC_SPEC §8).
void update_pmu(HandlerContext& c, const RunCounters& before) {
  const RunCounters& r = c.run;
  if (c.regs.field(fields::PMU_CTRL::CNT_EN)) {
    c.pmu.cycles += uint64_t(r.cycles - before.cycles);
    c.pmu.mac_cycles += uint64_t(r.mac_cycles - before.mac_cycles);
    c.pmu.act_cycles += uint64_t(r.act_cycles - before.act_cycles);
    c.pmu.dma_rd += uint64_t(r.dma_read_bytes - before.dma_read_bytes);
    c.pmu.dma_wr += uint64_t(r.dma_write_bytes - before.dma_write_bytes);
    c.pmu.stall += uint64_t(r.stall_cycles - before.stall_cycles);
    c.pmu.commands += uint32_t(r.commands - before.commands);
    c.pmu.sram_high_water =
        std::max<uint32_t>(c.pmu.sram_high_water, uint32_t(r.sram_high_water));
  }
  publish_pmu(c);
}

// Reads stream word `index` of handler c from device memory (bounds-checked).
bool fetch_word(const MemoryMap& mem, const HandlerContext& c, uint64_t index, uint32_t* out) {
  if ((index + 1) * 4 > c.stream_bytes) return false;
  const uint64_t addr = c.stream_addr + index * 4;
  const BoundBuffer* b = mem.find(addr, 4);
  if (!b) {
    throw BusError(str_cat("bus read error: command fetch at device address ",
                           device_detail::hex(addr), " (instruction address ",
                           device_detail::hex(c.stream_addr), " + ", index * 4,
                           "): no buffer is bound there"),
                   false);
  }
  const uint8_t* p = b->data + (addr - b->address);
  *out = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
  return true;
}

}  // namespace

bool Device::step(int handler) {
  HandlerContext& c = ctx(handler);
  std::lock_guard<std::mutex> handler_lock(c.mu);
  if (c.state != HandlerState::kRunning) {
    throw DeviceFault(str_cat("batch handler ", handler, " is not running (",
                              handler_state_name(c.state), ")"));
  }
  std::shared_lock<std::shared_mutex> mem_lock(mem_mu_);
  const uint64_t pc = c.pc;
  const RunCounters before_counts = [&] {
    RunCounters r;
    r.cycles = c.run.cycles;
    r.mac_cycles = c.run.mac_cycles;
    r.act_cycles = c.run.act_cycles;
    r.dma_read_bytes = c.run.dma_read_bytes;
    r.dma_write_bytes = c.run.dma_write_bytes;
    r.stall_cycles = c.run.stall_cycles;
    r.commands = c.run.commands;
    return r;
  }();
  const char* op_name = nullptr;  // no string per command: the fault message formats it
  try {
    if (c.stream_bytes % 4 != 0) {
      throw DeviceFault(str_cat("QSIZE = ", c.stream_bytes, " is not a multiple of 4"));
    }
    uint32_t words[2] = {0, 0};
    if (!fetch_word(mem_, c, pc, &words[0])) {
      throw DeviceFault(c.stream_bytes == 0 ? std::string("QSIZE = 0: empty stream")
                                            : std::string("stream ends without NPU_OP_STOP"));
    }
    const size_t avail = fetch_word(mem_, c, pc + 1, &words[1]) ? 2 : 1;
    Command cmd;
    const std::string err = decode_command(words, avail, 0, &cmd);
    if (!err.empty()) throw DeviceFault(err);
    cmd.word = size_t(pc);
    op_name = opcode_name(cmd.op);
    if (c.injected_bus_error_at >= 0 &&
        (c.run.commands == c.injected_bus_error_at || cmd.op == Opcode::NPU_OP_STOP)) {
      throw BusError(str_cat("bus read error: command fetch at device address ",
                             device_detail::hex(c.stream_addr + pc * 4),
                             " (injected by the test fault hook)"),
                     false);
    }
    c.regs.set(Reg::QREAD, uint32_t(pc * 4));
    device_detail::ExecEnv env{hw_, c, mem_, pool_, parallel_min_macs_, c.recorder};
    bool stopped = false;
    switch (cmd.op) {
      case Opcode::NPU_SET_REGISTER: {
        const uint32_t triggers = c.regs.write(cmd.param, cmd.payload);
        if (Reg(register_index_at(cmd.param)) == Reg::PMU_CTRL &&
            (triggers & fields::PMU_CTRL::CNT_RST.mask())) {
          c.pmu = device_detail::Pmu{};  // published after the command
        }
        break;
      }
      case Opcode::NPU_OP_DMA_START: device_detail::execute_dma_copy(env, uint32_t(pc)); break;
      case Opcode::NPU_OP_VNCHWCONV: device_detail::execute_vnchwconv(env, uint32_t(pc)); break;
      case Opcode::NPU_OP_DMA_WAIT: device_detail::retire(c, c.dmas, cmd.param); break;
      case Opcode::NPU_OP_KERNEL_WAIT: device_detail::retire(c, c.kernels, cmd.param); break;
      case Opcode::NPU_OP_STOP: {
        device_detail::retire(c, c.dmas, 0);
        device_detail::retire(c, c.kernels, 0);
        uint32_t extra = 0;
        if (fetch_word(mem_, c, pc + 1, &extra)) {
          throw DeviceFault(str_cat((c.stream_bytes / 4) - (pc + 1),
                                    " word(s) after NPU_OP_STOP: NPU_OP_STOP must be the last "
                                    "command"));
        }
        stopped = true;
        break;
      }
      default: {
        const std::string mode_err = check_kernel_mode(cmd.op, c.regs.get(Reg::NACC_CTRL));
        if (!mode_err.empty()) throw DeviceFault(mode_err);
        device_detail::execute_kernel(env, cmd.op, uint32_t(pc));
        break;
      }
    }
    c.pc = pc + uint64_t(command_words(cmd.op));
    c.cp_time += kCommandCycles;
    c.run.commands += 1;
    c.run.cycles = std::max(c.run.cycles, c.cp_time);
    update_pmu(c, before_counts);
    if (stopped) {
      c.regs.raise(Reg::NACC_INT_STATUS, fields::NACC_INT_STATUS::FULL_TRANS_DONE_INTR.mask());
      c.state = HandlerState::kStopped;
      return false;
    }
    return true;
  } catch (const std::exception& e) {
    const auto* bus = dynamic_cast<const BusError*>(&e);
    std::string msg = str_cat("batch handler ", handler, ": ", stream_position(size_t(pc)),
                              op_name ? op_name : "", op_name && *op_name ? ": " : "", e.what());
    if (!dynamic_cast<const Error*>(&e)) msg += " (host error)";
    if (bus)
      c.regs.raise(Reg::NACC_INT_STATUS, bus->write
                                             ? fields::NACC_INT_STATUS::BUS_WR_ERR_INTR.mask()
                                             : fields::NACC_INT_STATUS::BUS_RD_ERR_INTR.mask());
    c.regs.set(Reg::QREAD, uint32_t(pc * 4));
    c.state = HandlerState::kFaulted;
    c.fault = msg;
    throw DeviceFault(msg);
  }
}

void Device::run(int handler) {
  while (step(handler)) {
  }
}

std::shared_ptr<const ExecutionPlan> Device::build_plan(int handler, uint32_t immutable_regions,
                                                        std::string* why) {
  HandlerContext& c = ctx(handler);
  device_detail::Recorder rec;
  rec.immutable_regions = immutable_regions;
  {
    std::lock_guard<std::mutex> lk(c.mu);
    if (c.state != HandlerState::kRunning) {
      throw DeviceFault(str_cat("build_plan: batch handler ", handler, " has not been started"));
    }
    std::shared_lock<std::shared_mutex> mem_lock(mem_mu_);
    for (int i = 0; i < limits::kNumRegions; ++i) {
      const uint64_t base = c.region_base[size_t(i)];
      const BoundBuffer* b = mem_.find_byte(base);
      if (b && b->address == base) {
        rec.region_base[size_t(i)] = base;
        rec.region_size[size_t(i)] = b->size;
      }
    }
    c.recorder = &rec;
  }
  struct Clear {
    HandlerContext& c;
    ~Clear() {
      std::lock_guard<std::mutex> lk(c.mu);
      c.recorder = nullptr;
    }
  } clear{c};
  run(handler);  // throws DeviceFault as a stepped run would
  std::lock_guard<std::mutex> lk(c.mu);
  if (!rec.unsupported.empty()) {
    if (why) *why = rec.unsupported;
    return nullptr;
  }
  const std::array<uint64_t, limits::kNumRegions> sizes = rec.region_size;
  std::unique_ptr<device_detail::PlanData> data = device_detail::make_plan(std::move(rec));
  device_detail::prepare_parts(*data, pool_.threads());
  // The timeline moves to the plan (one record per command and core: not
  // copied); the handler's counters keep reading it, as after a replay.
  data->timeline = std::make_shared<const std::vector<CommandRecord>>(std::move(c.run.timeline));
  c.run.timeline.clear();
  c.replay_timeline = data->timeline;
  data->counters = c.run;
  data->region_sizes = sizes;
  data->final_registers = c.regs;
  data->final_qread = c.regs.get(Reg::QREAD);
  return std::shared_ptr<const ExecutionPlan>(new ExecutionPlan(std::move(data)));
}

void Device::replay(const ExecutionPlan& plan, int handler,
                    const std::array<RegionMemory, limits::kNumRegions>& regions) {
  const device_detail::PlanData& p = *plan.d_;
  HandlerContext& c = ctx(handler);
  std::lock_guard<std::mutex> lk(c.mu);
  if (c.state == HandlerState::kRunning) {
    throw DeviceFault(str_cat("replay: batch handler ", handler, " is running a stream"));
  }
  for (int i = 0; i < limits::kNumRegions; ++i) {
    if (p.region_sizes[size_t(i)] == 0) continue;
    if (regions[size_t(i)].data == nullptr || regions[size_t(i)].size != p.region_sizes[size_t(i)]) {
      throw DeviceFault(str_cat("replay: region ", i, " is ", regions[size_t(i)].size,
                                " bytes; the plan was built for ", p.region_sizes[size_t(i)]));
    }
  }
  c.state = HandlerState::kRunning;
  try {
    device_detail::replay_plan(p, regions, pool_);
  } catch (const std::exception& e) {
    c.state = HandlerState::kFaulted;
    c.fault = str_cat("batch handler ", handler, ": replay: ", e.what());
    throw DeviceFault(c.fault);
  }
  // The handler as a stepped run leaves it: the stream's final registers (the
  // PMU's own state kept), counters, PMU totals, the done interrupt.
  const uint32_t pmu_ctrl = c.regs.get(Reg::PMU_CTRL);
  c.regs = p.final_registers;
  c.regs.set(Reg::PMU_CTRL, pmu_ctrl);
  c.run = p.counters;  // no timeline: counters() reads the plan's shared one
  c.replay_timeline = p.timeline;
  if (fields::PMU_CTRL::CNT_EN.extract(pmu_ctrl)) {
    c.pmu.cycles += uint64_t(c.run.cycles);
    c.pmu.mac_cycles += uint64_t(c.run.mac_cycles);
    c.pmu.act_cycles += uint64_t(c.run.act_cycles);
    c.pmu.dma_rd += uint64_t(c.run.dma_read_bytes);
    c.pmu.dma_wr += uint64_t(c.run.dma_write_bytes);
    c.pmu.stall += uint64_t(c.run.stall_cycles);
    c.pmu.commands += uint32_t(c.run.commands);
    c.pmu.sram_high_water = std::max<uint32_t>(c.pmu.sram_high_water, uint32_t(c.run.sram_high_water));
  }
  publish_pmu(c);
  c.regs.set(Reg::QREAD, p.final_qread);
  c.pc = c.stream_bytes / 4;
  c.fault.clear();
  c.state = HandlerState::kStopped;
}

}  // namespace nacc

// Internals of the device model shared by device.cc (command processor),
// exec_kernel.cc (kernel commands) and exec_dma.cc (DMA-queue commands): the
// per-batch-handler context, per-core SRAM and timeline state, bus errors.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/device.h"

namespace nacc::device_detail {

// An access outside every bound buffer (or a write to a read-only one): the
// device raises NACC_INT_STATUS.BUS_RD_ERR_INTR / BUS_WR_ERR_INTR.
class BusError : public DeviceFault {
 public:
  BusError(const std::string& what, bool write) : DeviceFault(what), write(write) {}
  bool write;
};

// A device address range [lo, hi).
struct Interval {
  uint64_t lo = 0, hi = 0;
  bool overlaps(const Interval& o) const { return lo < o.hi && o.lo < hi; }
};

// A byte range of a core's SRAM [lo, hi).
struct SramRange {
  int64_t lo = 0, hi = 0;
  bool empty() const { return hi <= lo; }
  bool overlaps(const SramRange& o) const { return !empty() && !o.empty() && lo < o.hi && o.lo < hi; }
};

// What an SRAM area holds from an earlier command, for K_UPD = 0 / FM_UPD = 0.
// Every register-derived value that defines what an SRAM area holds, unused
// entries zero: fixed-size, no allocation per core and command.
using ResidencyKey = std::array<uint64_t, 16>;

struct Resident {
  bool valid = false;
  SramRange range;
  ResidencyKey key{};
};

// SRAM range that issued work still reads until cycle `until`.
struct Busy {
  SramRange range;
  int64_t until = 0;
};

struct CoreState {
  std::vector<uint8_t> sram;  // allocated on first use, hw.sram_bytes
  Resident kernel, fm;
  int64_t rd_free = 0, wr_free = 0, mac_free = 0;  // when each channel is next free
  std::vector<Busy> busy;
};

// An issued operation not yet retired by a WAIT: its external footprint, for
// the cross-queue race check (docs/command_stream.md §3.2).
struct PendingOp {
  uint32_t word = 0;
  Opcode op = Opcode::NPU_OP_STOP;
  int64_t end = 0;
  std::vector<Interval> reads, writes;
};

// The PMU accumulators (kept across streams until PMU_CTRL.CNT_RST).
struct Pmu {
  uint64_t cycles = 0, mac_cycles = 0, act_cycles = 0, dma_rd = 0, dma_wr = 0, stall = 0;
  uint32_t commands = 0, sram_high_water = 0;
};

struct Recorder;  // device/plan_internal.h

// One batch handler (NACC_SPEC §6): its own copy of the stream registers, its
// latched stream and region bases, its own SRAM set and timeline.
// Locking: `mu` guards everything here; step() holds it for a whole command,
// host register access takes Device::host_mu_ first, then `mu`.
struct HandlerContext {
  std::mutex mu;
  int index = 0;
  RegisterFile regs;  // per-handler registers (compute bank, DMA_*, VNCHWCONV_*, PMU, QREAD)
  // After a replay: the plan's timeline, which `run` (copied from the plan
  // without it) stands for; reset when a stepped run starts.
  std::shared_ptr<const std::vector<CommandRecord>> replay_timeline;
  HandlerState state = HandlerState::kIdle;
  uint64_t stream_addr = 0;
  uint64_t stream_bytes = 0;
  uint64_t pc = 0;  // word index of the next command
  std::array<uint64_t, limits::kNumRegions> region_base{};
  std::vector<CoreState> cores;
  std::deque<PendingOp> kernels, dmas;
  int64_t cp_time = 0;   // command-processor cycle
  int64_t dma_free = 0;  // DMA-queue engine free at
  RunCounters run;
  Pmu pmu;
  std::string fault;
  // Set while Device::build_plan runs the stream.
  Recorder* recorder = nullptr;
  // Test-only fault injection (Device::inject_bus_error): the executed-command
  // count at which this run raises a bus read error; -1 = none. CMD.START clears it.
  int64_t injected_bus_error_at = -1;
};

// Everything a command executor needs.
struct ExecEnv {
  const HwConfig& hw;
  HandlerContext& ctx;
  const MemoryMap& mem;
  ThreadPool& pool;
  int64_t parallel_min_macs;
  // Building an execution plan (device/plan_internal.h): the commands are
  // checked, counted and recorded, and their data effects are left out —
  // except loading kernel data from immutable regions, which the plan keeps.
  Recorder* rec = nullptr;
  bool data() const { return rec == nullptr; }
};

// Device address of a region address register value plus a byte offset.
inline uint64_t device_address(const HandlerContext& ctx, uint32_t region_addr, uint64_t extra) {
  return ctx.region_base[region_of(region_addr)] + region_offset(region_addr) + extra;
}

// "region 1 + 0x00000100"
std::string region_text(uint32_t region_addr, uint64_t extra = 0);
std::string hex(uint64_t v);

// The bound buffer holding [addr, addr + size) (for a write, a writable one),
// or nullptr when the access faults. size >= 1.
const BoundBuffer* find_access(const ExecEnv& env, uint64_t addr, uint64_t size, bool write);
// The BusError of a faulting access, naming `what`.
[[noreturn]] void access_fault(const ExecEnv& env, uint64_t addr, uint64_t size, bool write,
                               const std::string& what);
// Checks that [addr, addr + size) lies in one bound buffer (and, for a write,
// a writable one); returns it. BusError naming what() otherwise (the message
// is built only then). size >= 1.
template <typename What>
const BoundBuffer& check_access(const ExecEnv& env, uint64_t addr, uint64_t size, bool write,
                                What&& what) {
  if (const BoundBuffer* b = find_access(env, addr, size, write)) return *b;
  access_fault(env, addr, size, write, what());
}

// Retires pending ops of a queue down to `keep` outstanding, advancing the
// command processor to their completion.
void retire(HandlerContext& ctx, std::deque<PendingOp>& queue, size_t keep);

// DeviceFault when `op` (about to issue) overlaps an outstanding op of the other queue.
void check_race(const std::deque<PendingOp>& other, const PendingOp& op, const char* other_queue);

// Executors; each validates everything before any data effect, then applies
// it, updates counters and the timeline and queues a PendingOp.
void execute_kernel(ExecEnv& env, Opcode op, uint32_t word);
void execute_dma_copy(ExecEnv& env, uint32_t word);
void execute_vnchwconv(ExecEnv& env, uint32_t word);

}  // namespace nacc::device_detail

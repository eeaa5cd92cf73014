// The simulated NACC device (NACC_SPEC §1-§8, docs/device_model.md): N cores,
// each with its own SRAM, a memory map of bound external buffers, 12 batch
// handlers, the command processor that fetches and executes command streams,
// interrupts, and the counters and timeline of the performance model
// (docs/performance_model.md).
//
// Threading: host register access and the memory map are guarded inside the
// device. Each batch handler is driven by one host thread at a time (step /
// run); different handlers may run concurrently on different host threads and
// share one pool of host threads for the cores of a command.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "arch/command_stream.h"
#include "arch/hw_config.h"
#include "device/memory_map.h"
#include "device/register_file.h"
#include "device/thread_pool.h"

namespace nacc {

// What one core counted during a run (docs/performance_model.md).
struct CoreCounters {
  int64_t dma_read_bytes = 0;   // bytes its DMA port moved into its SRAM (a broadcast operand counts on every core)
  int64_t dma_write_bytes = 0;  // bytes its DMA port moved out of its SRAM
  int64_t mac_cycles = 0;       // MAC-array cycles (every tap, padding included)
  int64_t act_cycles = 0;       // activation-unit cycles (LUT: one per element)
  int64_t stall_cycles = 0;     // cycles the MAC array waited for a DMA read
  int64_t busy_cycles = 0;      // cycles the MAC array computed: sum of max(mac, act) per command
  int64_t macs = 0;             // useful multiply-accumulates
  int64_t sram_high_water = 0;  // highest SRAM byte offset + 1 ever written
  int64_t kernels = 0;          // kernel commands this core took part in
};

// One core's part of a kernel command on the timeline (cycles from CMD.START).
struct CoreSpan {
  int core = 0;
  int64_t read_start = 0, read_end = 0;
  int64_t compute_start = 0, compute_end = 0;
  int64_t write_start = 0, write_end = 0;
  int64_t read_bytes = 0, write_bytes = 0;
  int64_t mac_cycles = 0, act_cycles = 0, stall_cycles = 0, macs = 0;
  int64_t sram_high = 0;  // highest SRAM byte offset + 1 this command's buffers reach
};

// One executed kernel or DMA-queue command (NPU_OP_DMA_START, NPU_OP_VNCHWCONV).
struct CommandRecord {
  uint32_t word = 0;  // word offset of the command in the stream
  Opcode op = Opcode::NPU_OP_STOP;
  int64_t issue = 0;            // command-processor cycle at which it was issued
  int64_t start = 0, end = 0;   // first and last cycle over all cores (or of the DMA queue)
  int64_t ext_read_bytes = 0;   // external memory traffic (a broadcast operand once)
  int64_t ext_write_bytes = 0;
  int64_t macs = 0;
  std::vector<CoreSpan> cores;  // kernels only, one per core used
};

// Counters of one run of a batch handler (reset by CMD.START).
struct RunCounters {
  int64_t cycles = 0;           // latest end of anything the run did
  int64_t macs = 0;             // useful multiply-accumulates
  int64_t dma_read_bytes = 0;   // external memory bytes read (broadcast once; stream words not counted)
  int64_t dma_write_bytes = 0;  // external memory bytes written
  int64_t commands = 0;         // commands executed, STOP included
  int64_t kernels = 0;          // kernel commands
  int64_t dma_ops = 0;          // NPU_OP_DMA_START and NPU_OP_VNCHWCONV
  int64_t mac_cycles = 0, act_cycles = 0, stall_cycles = 0;  // sums over cores
  int64_t sram_high_water = 0;  // max over cores
  std::vector<CoreCounters> cores;  // hw.cores entries
  std::vector<CommandRecord> timeline;
};

enum class HandlerState : uint8_t { kIdle, kRunning, kStopped, kFaulted };

class ExecutionPlan;  // device/plan.h
struct RegionMemory;
const char* handler_state_name(HandlerState s);

namespace device_detail {
struct HandlerContext;
}

class Device {
 public:
  // host_threads: host threads used for the cores of one command (the caller's
  // thread included), independent of hw.cores.
  explicit Device(const HwConfig& hw, int host_threads = 1);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const HwConfig& hw() const { return hw_; }
  int host_threads() const { return pool_.threads(); }
  // Work (useful MACs) of one command above which its cores run on the pool.
  void set_parallel_min_macs(int64_t macs) { parallel_min_macs_ = macs; }

  // --- Memory map (waits for running commands to finish their current step).
  void bind_buffer(uint64_t address, void* data, uint64_t size, bool writable,
                   std::string name = "");
  void unbind_buffer(uint64_t address);
  std::vector<BoundBuffer> bound_buffers() const;

  // --- Host register access (the ICB slave port), docs/command_stream.md §7.
  // The NACC compute bank, QREAD, the DMA_* / VNCHWCONV_* registers and the
  // PMU exist once per batch handler; a host access reaches the handler
  // selected by CMD.BATCH_HANDLER (the last value written). Writing CMD with
  // START = 1 starts that handler's stream (DeviceFault when it is running).
  uint32_t read_register(uint32_t addr);
  void write_register(uint32_t addr, uint32_t value);
  // Several writes as one atomic sequence (no other host access interleaves).
  void write_registers(const std::vector<std::pair<uint32_t, uint32_t>>& writes);
  // Device-side view of one handler's copy of a per-handler register, or of a
  // global register (no selection involved).
  uint32_t handler_register(int handler, Reg r) const;

  // --- Execution.
  // Executes the next command of a running handler. Returns true while the
  // handler is still running (false after NPU_OP_STOP). Throws DeviceFault
  // when the command faults (the handler is then faulted) or when the handler
  // is not running.
  bool step(int handler);
  // Steps until NPU_OP_STOP; throws DeviceFault on a fault.
  void run(int handler);
  HandlerState state(int handler) const;
  // The message of the fault that stopped the handler ("" if none).
  std::string fault_message(int handler) const;
  // Counters of the handler's current or last run (a copy).
  RunCounters counters(int handler) const;

  // --- Execution plans (device/plan.h).
  // Builds the plan of the stream handler `handler` was started with
  // (CMD.START, its regions bound: the sizes the plan keeps): the reference
  // interpreter runs it once with its data effects off, so every check is
  // made and every counter counted. Bit i of `immutable_regions` marks region i
  // as holding bytes that never change (the Program's constants): kernel data
  // read from it is decoded once. The handler ends as run() leaves it. Returns
  // nullptr when the stream does something a plan does not replay (the caller
  // then steps it; `why`, if given, says what); DeviceFault as step() would.
  std::shared_ptr<const ExecutionPlan> build_plan(int handler, uint32_t immutable_regions,
                                                  std::string* why = nullptr);
  // One run of `plan` on batch handler `handler` (not running), with regions[i]
  // the host memory of region i, of the sizes the plan was built with: the
  // same output bits as starting and running the stream, and the handler ends
  // as run() leaves it (stopped, FULL_TRANS_DONE_INTR, counters, PMU, registers).
  // Host threads of the device split the large kernel calls. DeviceFault on a
  // size mismatch or when a unit rejects its arguments (the caller may then
  // step the stream to obtain the interpreter's fault).
  void replay(const ExecutionPlan& plan, int handler,
              const std::array<RegionMemory, limits::kNumRegions>& regions);

  // Test only (docs/reliability.md, fault injection): the running handler's
  // stream raises a bus read error, through the normal fault path
  // (NACC_INT_STATUS.BUS_RD_ERR_INTR, handler faulted, DeviceFault), when it
  // is about to execute its `command`-th command (0-based count of executed
  // commands). Cleared by the next CMD.START. No register or stream reaches it.
  void inject_bus_error(int handler, int64_t command);

 private:
  device_detail::HandlerContext& ctx(int handler) const;
  bool is_handler_register(Reg r) const;
  void write_locked(uint32_t addr, uint32_t value);
  uint32_t read_locked(uint32_t addr);
  void start_locked(int handler);

  HwConfig hw_;
  mutable std::mutex host_mu_;       // host register file and CMD; taken before a handler's mutex
  RegisterFile host_regs_;           // global registers (CMD, INSTR_ADDR, bases, ...)
  mutable std::shared_mutex mem_mu_;  // memory map: shared while a command executes
  MemoryMap mem_;
  ThreadPool pool_;
  int64_t parallel_min_macs_ = 2'000'000;
  std::vector<std::unique_ptr<device_detail::HandlerContext>> handlers_;
};

}  // namespace nacc

// The NACC driver (NACC_SPEC §5, §6): loads Programs, binds their regions to
// buffers per batch handler (constants from the Program, inputs and outputs to
// the caller's buffers, scratch owned per handler), places the command stream
// at a 4 KB-aligned instruction address, starts it with CMD, runs it to
// NPU_OP_STOP and turns every fault into an exception. Thread-safe: several
// threads may run (the same or different) Programs at once, one batch handler
// each; more concurrent runs than handlers wait for a free one.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "device/device.h"
#include "device/plan.h"
#include "runtime/op_counters.h"
#include "runtime/program.h"

namespace nacc {

struct InputBuffer {
  const void* data = nullptr;
  size_t size = 0;  // bytes; must equal the Program's IoTensor size
};

struct OutputBuffer {
  void* data = nullptr;
  size_t size = 0;
};

struct RunStats {
  int handler = 0;       // batch handler the run used
  RunCounters counters;  // the run's counters (the timeline only when asked for)
  // The run cut per Program op (op_counters.h), shared: a replayed run hands
  // out its plan's cut, so no run copies it (it has ops x cores entries).
  std::shared_ptr<const std::vector<OpCounters>> ops;
  bool replayed = false;  // the run replayed the Program's execution plan
};

// How Runtime::run executes a loaded Program.
enum class ExecutionMode : uint8_t {
  // Replay the Program's execution plan (device/plan.h), built once by load():
  // the same bits and counters as stepping, at the host cost of the kernels.
  // Programs without a plan (a stream the plan does not replay) are stepped.
  kReplay,
  // Step the reference interpreter command by command (debug dumps, fault
  // injection and the equivalence tests use it).
  kStep,
};

// What Runtime::check_program checks, without a Runtime: Program::validate,
// program.hw.cores <= device.cores, equal SRAM size, a stream QSIZE can hold.
// The frontends call it on every Program they compile or load from a cache,
// before they claim its nodes, so a Program the runtime would refuse falls
// back to the host instead of failing the interpreter or session later.
// Throws InvalidArgument naming the first problem.
void check_program_for_device(const Program& program, const HwConfig& device);

class Runtime {
 public:
  // host_threads: host threads for the cores of one command (see Device).
  Runtime(const HwConfig& hw, int host_threads = 1);

  const HwConfig& hw() const { return device_.hw(); }
  Device& device() { return device_; }

  // Validates the Program (Program::validate) and that it fits this device:
  // program.hw.cores <= hw.cores, equal SRAM size. InvalidArgument otherwise.
  // (check_program_for_device with this runtime's HwConfig.)
  void check_program(const Program& program) const;
  // A validated, shared, immutable copy for repeated runs, with its execution
  // plan built (the stream decoded and checked once; a stream that faults
  // keeps no plan and faults again on every run).
  std::shared_ptr<const Program> load(Program program);
  // The same for a Program the caller already shares immutably: loaded as
  // it is, not copied (a cached ResNet50's constants are 25 MB). Returns
  // `program`.
  std::shared_ptr<const Program> load(std::shared_ptr<const Program> program);

  // Execution mode of run() (default kReplay); the debug hook and the test
  // fault injection always step.
  void set_execution_mode(ExecutionMode mode) { mode_ = mode; }
  ExecutionMode execution_mode() const { return mode_; }
  // The plan load() built for `program`, or nullptr (not loaded, no plan);
  // `why` gets the reason a loaded Program has none.
  std::shared_ptr<const ExecutionPlan> plan_of(const Program& program, std::string* why = nullptr);

  // Runs `program` once. inputs/outputs are in the order of program.inputs /
  // program.outputs, sizes checked (program.images x each tensor's size: a
  // batch runs each image on its own batch handler, its counters summed). Throws DeviceFault (naming command, register
  // and address) when the run faults; outputs are then unspecified. `checked`:
  // the program was already checked (e.g. it came from load()). `timeline`:
  // fill RunStats::counters.timeline (off by default: a copy of every
  // command's record per run costs what small models take to run).
  RunStats run(const Program& program, const std::vector<InputBuffer>& inputs,
               const std::vector<OutputBuffer>& outputs, bool checked = false,
               bool timeline = false);

  // Device address of region `region` of batch handler `handler`, and of its
  // instruction stream: handler windows of 64 GB at (handler + 1) << 36, regions
  // 4 GB apart, the stream after region 7; all 4 KB aligned.
  static uint64_t region_address(int handler, int region);
  static uint64_t stream_address(int handler);

  // Debug mode (delegate option debug_dump_dir): with a hook set, run() steps
  // the device one command at a time and, as soon as every command word of op
  // i of the Program has executed, calls hook(i, op, data, size) with the op's
  // output tensor as the device left it in external memory (its scratch,
  // output or input region: what the device computed, not a recomputation).
  // data is null for ops without an output record (version-1 Programs). The
  // hook runs on the calling thread; an exception it throws is rethrown after
  // the stream has run to its end. Set it before any run; empty: off.
  using OpOutputHook =
      std::function<void(int op_index, const OpRecord& op, const uint8_t* data, size_t size)>;
  void set_op_output_hook(OpOutputHook hook) { op_hook_ = std::move(hook); }

 private:
  // One image of run(): buffers of the Program's I/O sizes.
  RunStats run_image(const Program& program, const std::vector<InputBuffer>& inputs,
                     const std::vector<OutputBuffer>& outputs, bool timeline);
  void run_with_op_hook(const Program& program, int handler,
                        const std::array<const uint8_t*, limits::kNumRegions>& region_data);
  RunStats step_run(const Program& program, const std::vector<InputBuffer>& inputs,
                    const std::vector<OutputBuffer>& outputs, bool timeline);
  // The plan of a Program load() returned, if it has one.
  struct PlanEntry {
    std::weak_ptr<const Program> program;
    std::shared_ptr<const ExecutionPlan> plan;
    std::shared_ptr<const std::vector<OpCounters>> ops;  // op_counters of the plan's counters
    std::string why;              // no plan: why not
  };
  const PlanEntry* entry_of(const Program& program);
  // Staging regions (program.h RegionDesc): handler b's buffer of input
  // region `region`, zeroed and filled with the inputs it holds; and the
  // outputs copied out of the staging output regions after a run.
  std::vector<uint8_t>& stage_inputs(const Program& program, int b, int region,
                                     const std::vector<InputBuffer>& inputs);
  void unstage_outputs(const Program& program, int b, const std::vector<OutputBuffer>& outputs);
  std::shared_ptr<const Program> load_checked(std::shared_ptr<const Program> loaded);
  PlanEntry build_plan(const std::shared_ptr<const Program>& program);

  int acquire();
  void release(int handler);

  Device device_;
  std::mutex mu_;
  std::condition_variable free_cv_;
  std::vector<bool> busy_;
  // Scratch and staging memory per handler and region, grown as needed, zeroed per run.
  std::vector<std::vector<std::vector<uint8_t>>> scratch_;
  OpOutputHook op_hook_;
  ExecutionMode mode_ = ExecutionMode::kReplay;
  std::mutex plans_mu_;
  std::unordered_map<const Program*, PlanEntry> plans_;
};

// Test-only fault injection (docs/reliability.md). Off by default; reached only
// through this function (nacc._core._test_inject_fault and the test entry points
// of the delegate and EP libraries), never through an option. Each of the next
// `runs` Runtime::run calls in this library (any Runtime, any thread) faults:
//   kBusError:   the device raises a bus read error before executing its
//                `command`-th command (0-based; at NPU_OP_STOP when the stream
//                is shorter, after the output was written);
//   kDmaOverrun: the first output region is bound `command` bytes (>= 1) shorter
//                than the output, so the DMA writing the output's tail runs past
//                the end of its buffer (a bus write error after part of the
//                output was written);
//   kInvalidProgram: not a run fault — the next `runs` check_program_for_device
//                calls (Runtime::check_program and the frontends' checks of
//                each Program they compile or load) reject the Program, as if
//                the compiler had produced one the runtime refuses; `command`
//                is unused. Armed independently of the run faults.
// runs = 0 disarms that kind; kNone disarms every kind. Throws InvalidArgument
// for a negative runs or command.
namespace testing {
enum class FaultKind { kNone, kBusError, kDmaOverrun, kInvalidProgram };
void inject_faults(FaultKind kind, int64_t command, int runs);
// "none", "bus_error", "dma_overrun", "invalid_program"; InvalidArgument for other names.
FaultKind fault_kind_by_name(const std::string& name);
}  // namespace testing

}  // namespace nacc

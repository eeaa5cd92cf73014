// The execution plan of a command stream (DESIGN: "the command stream is the
// execution — decoded once, replayed fast"; docs/device_model.md §8).
//
// Device::build_plan runs a started stream through the reference interpreter
// once with its data effects off: every register, SRAM-area, halo, address and
// race check of every command is made, the weight blocks are decompressed and
// the run's counters and timeline are computed — none of which depends on
// tensor values. What remains are the data movements and unit calls, kept in
// region-relative form; Device::replay performs them on each inference's
// buffers. Consecutive commands that compute the tiles of one layer (every
// core, every SRAM tile, every channel group) become one host kernel call
// where the plan proves, when it is built, that the result is the same: the
// tiles partition the layer's output exactly, share its geometry and output
// stage, read inputs that no tile of the layer writes, and their kernel data
// assembles into the layer's. Replay and step give identical output bits,
// counters and faults (tests/test_replay.py).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "arch/limits.h"
#include "device/device.h"

namespace nacc {

namespace device_detail {
struct PlanData;
}

// Host memory behind one region for a replay.
struct RegionMemory {
  uint8_t* data = nullptr;
  uint64_t size = 0;
};

class ExecutionPlan {
 public:
  ~ExecutionPlan();

  // The counters every run of the stream produces (their timeline empty) and
  // the run's timeline.
  const RunCounters& counters() const;
  const std::vector<CommandRecord>& timeline() const;
  // The region sizes the plan was built with; a replay needs the same.
  const std::array<uint64_t, limits::kNumRegions>& region_sizes() const;

  // What the plan does per run, for reports and tests.
  struct Summary {
    int kernel_commands = 0;  // kernel commands of the stream
    int layer_calls = 0;      // host kernel calls that each run a merged layer
    int tile_calls = 0;       // host kernel calls that each run one core's tile
    int copies = 0;           // NPU_OP_DMA_START copies
    int layout_ops = 0;       // NPU_OP_VNCHWCONV layout conversions
    // Identity copy passes (1x1 max pools over the full range) replayed as
    // strided byte copies instead of unit calls: the kernel commands, and the
    // host copies they became (docs/host_speed.md "Copy passes").
    int copy_pass_commands = 0;
    int strided_copies = 0;
    int merged_commands = 0;  // kernel commands run inside layer calls
    // Calls split across the device's host threads (one part per thread), by
    // output rows and by output channels (docs/host_speed.md "Host threads").
    int row_split_calls = 0;
    int channel_split_calls = 0;
    int parallel_tile_steps = 0;  // commands whose core tiles run side by side
  };
  Summary summary() const;

 private:
  friend class Device;
  explicit ExecutionPlan(std::unique_ptr<device_detail::PlanData> d);
  std::unique_ptr<device_detail::PlanData> d_;
};

}  // namespace nacc

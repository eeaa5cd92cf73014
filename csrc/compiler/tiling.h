// SRAM tiling and multi-core splitting of one lowered op (NACC_SPEC §3, §4,
// docs/device_model.md §1, §3, §5): the output tile of each command (rows,
// columns <= 255, channel group), how each command is split across cores
// (mode 2: height, mode 1: output channels), the loop order (weights resident
// across spatial tiles, or the IFM resident across channel groups), double
// buffering, and the SRAM layout of one core. The algorithm is described in
// docs/compiler.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arch/field_values.h"
#include "arch/hw_config.h"
#include "arch/sram.h"
#include "compiler/lower.h"

namespace nacc::compiler {

// NACC_BROADCAST_CTRL.BROADCAST_MODE is arch's BroadcastMode (field_values.h).
const char* broadcast_mode_name(BroadcastMode mode);

// A half-open range [start, start + size).
struct Span {
  int start = 0, size = 0;
  int end() const { return start + size; }
};

// How one command's work is spread over cores: `cores` (a power of two), the
// first cores - 1 take `avg` rows (mode 2) or channels (mode 1) each, the last
// core `last`. With one core, avg = last = the whole extent.
// Mode 3 (SPLIT_2D, depthwise; docs/device_model.md §5) splits both: `cores`
// row pieces of avg / last rows times `groups` channel groups of gavg / glast
// basis channels, on cores * groups cores.
struct CoreSplit {
  int cores = 1;
  int avg = 0, last = 0;
  int groups = 1, gavg = 0, glast = 0;
  int max_per_core() const { return avg > last ? avg : last; }
  int max_group() const { return gavg > glast ? gavg : glast; }
  int total() const { return cores * groups; }
};

// Splits `total` (rows or channels) over a power-of-two number of cores <=
// max_cores, each core taking between 1 and `cap`; the most cores that work,
// then the most even split. nullopt when even one core cannot (total > cap).
// `avg_cap` further bounds the per-core average (a register field).
std::optional<CoreSplit> split_across_cores(int total, int max_cores, int cap, int avg_cap);

// SRAM areas of one core, byte offsets (docs/device_model.md §1). Set 1 is the
// second buffer set when double buffering; otherwise set 1 == set 0.
struct SramLayout {
  int64_t ifm[2] = {0, 0}, temp[2] = {0, 0}, ofm[2] = {0, 0}, k[2] = {0, 0};
  int64_t ifm_bytes = 0, temp_bytes = 0, ofm_bytes = 0, k_bytes = 0;  // capacities used
  int64_t end = 0;  // highest byte in use + 1
};

// What a plan is expected to cost (the compiler's model of the device
// counters, used to choose between plans).
struct PlanEstimate {
  int64_t cycles = 0;
  int64_t read_bytes = 0;   // external DMA reads
  int64_t write_bytes = 0;  // external DMA writes
  int64_t commands = 0;
};

struct TilePlan {
  std::string lowering = "direct";  // LoweredOp::lowering of the op planned
  int cores = 1;  // most cores a command uses
  BroadcastMode mode = BroadcastMode::NONE;
  // true: for each channel group, the group's weights stay resident (K_UPD = 0)
  // while the spatial tiles stream through; false: for each spatial tile, the
  // IFM stays resident (FM_UPD = 0) while the channel groups stream through.
  bool weights_outer = true;
  bool double_buffer = false;
  // Double buffered with a K area in each buffer set (weights resident only):
  // every command loads its kernel with its tile, so a new channel group (or
  // core split) loads under the previous command's compute instead of waiting
  // for it to release the one K area. Depthwise only (its kernel is small).
  bool k_per_set = false;
  int rows_per_core = 0;      // output rows one core holds (mode 2: per core)
  int cols = 0;               // output columns of a tile
  int channels_per_core = 0;  // basis channels one core holds
  int groups2d = 1;  // mode 3: channel groups of a command (cores / groups2d row pieces)
  std::vector<Span> row_pieces, col_pieces, groups;  // output rows, columns, basis channels
  SramLayout layout;
  PlanEstimate estimate;

  std::string describe() const;
};

// How one command of `plan` with `rows` output rows and `channels` basis
// channels is spread over cores (mode 2: rows, mode 1: channels; one core
// otherwise). The planner's estimate and the emitter both use it.
CoreSplit command_split(const LoweredOp& op, const TilePlan& plan, int rows, int channels);

// The commands of `plan` in the order the emitter issues them: f(rows, cols,
// group) for each. Weights resident: groups outer, then row and column
// pieces; IFM resident: row and column pieces outer, groups inner. A K area
// per set loads every command's kernel with its tile, so the order is free:
// with channel groups and row pieces of different core splits, row pieces
// outer keeps each split's commands consecutive, alternating the two sets on
// every core (groups outer put each group's big row piece in the same set,
// and its load waited for the previous group's compute).
template <typename F> void for_each_command(const TilePlan &plan, F &&f) {
  const bool rows_outer =
      plan.k_per_set && plan.groups.size() > 1 && plan.row_pieces.size() > 1;
  if (plan.weights_outer && !rows_outer) {
    for (const Span &g : plan.groups) {
      for (const Span &r : plan.row_pieces) {
        for (const Span &c : plan.col_pieces)
          f(r, c, g);
      }
    }
  } else {
    for (const Span &r : plan.row_pieces) {
      for (const Span &c : plan.col_pieces) {
        for (const Span &g : plan.groups)
          f(r, c, g);
      }
    }
  }
}

// Plans whose estimated cycles are within this fraction of the fewest count as
// equally fast; among them the fewest DMA bytes win.
constexpr double kPlanCycleTolerance = 0.01;

struct PlanOptions {
  bool allow_double_buffer = true;
  // Restrict the search (tests, experiments): 0 = any.
  int force_cores = 0;
  int force_mode = -1;  // -1 any, else BroadcastMode value
};

// The cheapest plan for `op` on `hw` (fewest estimated cycles, then fewest DMA
// bytes, then fewest commands). Throws Unsupported naming the op when no tile
// fits one core's SRAM.
TilePlan plan_tiles(const LoweredOp& op, const HwConfig& hw, const PlanOptions& options = {});

// While a PlanMemoScope is alive on this thread (compile() holds one for its
// partition), plan_tiles returns a copy of its earlier result for an op with
// the same planning key (tiling.cc plan_key: every LoweredOp field the planner
// reads, the HwConfig and the PlanOptions): the repeated blocks of a network
// are planned once. Nested scopes share the outermost one's memo.
class PlanMemoScope {
 public:
  PlanMemoScope();
  ~PlanMemoScope();
  PlanMemoScope(const PlanMemoScope&) = delete;
  PlanMemoScope& operator=(const PlanMemoScope&) = delete;

 private:
  bool owner_ = false;
};

// Bytes of the K area for `group` basis channels (weights, bias, multipliers,
// shifts, LUT, each 64-byte aligned; docs/device_model.md §1).
int64_t k_area_bytes(const LoweredOp& op, int group);

// MAC-array cycles of one core computing `rows` x `cols` output pixels of
// `channels` basis channels (docs/device_model.md §6): convolution
// rows*cols*C_out*KH*KW*ceil(C_in/64); fully connected rows*N*ceil(K/64);
// matmul rows*N*ceil(K/64) (im2col: rows*cols*N*ceil(KH*KW*C_in/64));
// depthwise and pooling rows*cols*ceil(C_out/64)*KH*KW; element-wise
// ceil(3*rows*cols*C/16) (bus-bound); activation 0.
int64_t mac_cycles(const LoweredOp& op, int64_t rows, int64_t cols, int channels);
// Activation-unit cycles: one per output element for a LUT op, else 0.
int64_t act_cycles(const LoweredOp& op, int64_t rows, int64_t cols, int channels);

// Rows (or columns) of the input a run of `out` outputs reads: (out - 1) *
// stride + kernel.
inline int input_extent(int out, int stride, int kernel) { return (out - 1) * stride + kernel; }

// The input rows [start, start + size) a run of output rows needs, clipped to
// [0, in_size): what the DMA fetches (padding is not stored).
Span valid_input_span(int out_start, int out_size, int stride, int kernel, int pad, int in_size);

}  // namespace nacc::compiler

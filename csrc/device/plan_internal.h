// Internals of the execution plan (device/plan.h): what the interpreter
// records while it builds a plan (exec_kernel.cc, exec_dma.cc, device.cc) and
// the plan's steps (plan.cc builds and replays them).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "device/kernel.h"
#include "device/plan.h"
#include "device/register_file.h"
#include "device/units/vnchwconv.h"

namespace nacc::device_detail {

// A device address as (region, byte offset): the runtime binds one buffer per
// region, at the region's base, so a plan holds no device address or host pointer.
struct RegionRef {
  int region = -1;
  uint64_t offset = 0;
};

// One read of the interpreter (Read) in region-relative form.
struct ReadRef {
  RegionRef at;
  int rows = 1, cols = 1;
  int64_t bytes = 0;
  uint64_t row_pitch = 0, pix_pitch = 0;
  int64_t total() const { return int64_t(rows) * cols * bytes; }
  uint64_t span() const {
    return uint64_t(rows - 1) * row_pitch + uint64_t(cols - 1) * pix_pitch + uint64_t(bytes);
  }
  // The external bytes are laid out as the SRAM copy would be (no gather needed).
  bool packed() const {
    return (cols == 1 || pix_pitch == uint64_t(bytes)) &&
           (rows == 1 || row_pitch == uint64_t(cols) * uint64_t(bytes));
  }
};

// A K-area part loaded at run time (its source region's bytes can change
// between runs): copied to `sram` of the K area.
struct KernelRead {
  ReadRef src;
  int64_t sram = 0;
};

// The K area of one core after one load, as the unit reads it: bytes from
// SRAM offset `lo` (weights decompressed, bias, quantization, LUT in place).
struct KernelData {
  int64_t lo = 0;
  std::vector<uint8_t> bytes;
};

// One core's part of a kernel command, as the replay needs it.
struct TileTrace {
  TileWork work;     // geometry and SRAM layout
  ReadRef fm;        // IFM tile; with im2col the feature map the windows are gathered from
  ReadRef temp;      // element-wise operand (work.load_temp)
  RegionRef out;     // OFM tile, pitches of the command (Setup::out_row, out_pix)
  int kdata = -1;    // K area: index into PlanData::kernel_data, or -1
  std::vector<KernelRead> k_reads;  // K parts to load at run time (mutable sources)
};

struct KernelTrace {
  uint32_t word = 0;
  Setup s;
  std::vector<TileTrace> tiles;
};

struct CopyTrace {
  uint32_t word = 0;
  RegionRef src, dst;
  uint64_t len = 0;
};

// One NPU_OP_VNCHWCONV (device/exec_dma.cc), its block pointers resolved to
// region offsets: source block k of iteration r at src + k * src_block_stride
// + r * src_step, destination block e at dst + e * dst_block_stride + r *
// dst_step (bytes). Every block of the command lies in src.region /
// dst.region (checked when it was recorded).
struct VnchwTrace {
  uint32_t word = 0;
  RegionRef src, dst;
  uint64_t src_block_stride = 0, dst_block_stride = 0, src_step = 0, dst_step = 0;
  int repeat = 0;
  VnchwElem elem = VnchwElem::kB8;
  bool src_high_half = false, dst_high_half = false, reverse = false;
};

// Identity copy passes (1x1 max pools over the full int8 range, proven so
// when the plan is built: copy_group, plan.cc) replayed as one strided byte
// copy: for i < n[0], j < n[1], k < n[2], the `run` bytes at src + i * ss[0]
// + j * ss[1] + k * ss[2] go to dst + i * ds[0] + j * ds[1] + k * ds[2]. The
// bytes it writes are disjoint and none of them is read by it (checked), so
// any loop order gives the interpreter's bytes; `inner` is the dimension the
// replay runs innermost (the one with the smallest destination stride).
struct StridedCopy {
  RegionRef src, dst;
  std::array<int64_t, 3> n{1, 1, 1};
  std::array<int64_t, 3> ss{}, ds{};
  int64_t run = 0;
  int inner = 2;
};

struct PlanData;

// What execute_kernel / execute_dma_copy report while a plan is built, in
// stream order, and the bookkeeping that proves the replay's reads equal the
// interpreter's (a resident IFM or K area may be reused only if no command
// wrote its source bytes since it was loaded). The plan's steps are made as
// the stream goes: the commands of one layer are held until the layer ends
// (the next command belongs to another layer, or is a copy), then merged into
// one call where that is proven exact, or kept as tile calls.
struct Recorder {
  Recorder();
  ~Recorder();
  uint32_t immutable_regions = 0;  // bit i: region i's bytes never change
  std::array<uint64_t, limits::kNumRegions> region_base{};
  std::array<uint64_t, limits::kNumRegions> region_size{};
  int last_region = 0;  // ref(): the region of the last address found
  std::vector<KernelTrace> group;  // the commands of the current layer, in stream order
  std::vector<KernelData> kernel_data;
  std::unique_ptr<PlanData> plan;  // the steps so far

  struct CoreResidency {
    int loaded = -1;                      // load_kernel's K area of the current command
    int kdata = -1;                       // the K area's contents
    std::vector<KernelRead> k_reads;      // its run-time parts
    std::vector<Interval> fm_src, k_src;  // the external bytes each was loaded from
    Interval k_hull{};                    // [min lo, max hi) of k_src (empty: none)
    bool fm_dirty = false, k_dirty = false;  // a later write overlapped them
  };
  std::vector<CoreResidency> cores;
  std::string unsupported;  // non-empty: the stream cannot be replayed, and why

  std::unordered_multimap<uint64_t, int> by_digest;  // kernel_data by content digest

  // (region, offset) of a device address inside a region's buffer; records
  // `unsupported` and returns region -1 when it is in no region.
  RegionRef ref(uint64_t addr);
  ReadRef ref(const Read& r);
  bool immutable(const RegionRef& r) const {
    return r.region >= 0 && ((immutable_regions >> r.region) & 1u) != 0;
  }
  // Records external writes: marks the resident areas whose sources they
  // overlap. `ws` is sorted and coalesced in place.
  void wrote(const Interval& w);
  void wrote(std::vector<Interval>& ws);
};

// While a plan is built, the K load of core c of a command (c.load_k; every
// core but 1..n-1 of a mode-2 broadcast, which receive core 0's): decodes the
// weight block and copies the other parts from the immutable regions into the
// recorder's kernel data, not into SRAM — a plan build never runs a unit, so
// no SRAM byte is read; the bytes of mutable parts and the alignment gaps are
// zero (the units read neither: the replay loads the mutable parts), so the
// kernel data depends on nothing but what the load reads. Identical contents
// share one kernel data. DeviceFault as the interpreter's load (a bad weight
// block).
void load_kernel(Recorder& rec, const Setup& s, const CoreWork& c);
// Records one kernel command (called by execute_kernel after every check and
// load_kernel, before its data effects).
void record_kernel(Recorder& rec, const ExecEnv& env, const Setup& s,
                   std::vector<CoreWork>& work);
// Records one NPU_OP_DMA_START copy.
void record_copy(Recorder& rec, uint32_t word, uint64_t src, uint64_t dst, uint64_t len);
// Records one NPU_OP_VNCHWCONV (after its checks): `t` with src/dst unset,
// `s0` / `d0` the device addresses of block 0 of iteration 0, `rd` / `wr` the
// bounding intervals of every block it reads / writes.
void record_vnchwconv(Recorder& rec, VnchwTrace t, uint64_t s0, uint64_t d0, const Interval& rd,
                      const Interval& wr);

// ---------------------------------------------------------------------------
// The plan.

// One host kernel call: a merged layer (the layer as one command of one core)
// or one core's tile of one command.
struct PlanCall {
  Setup s;
  TileTrace t;
  // The call's weights packed for the unit's fast path, made when the plan
  // is built (null: the unit packs them itself, or has no fast path).
  std::shared_ptr<const PreparedWeights> prepared;
};

struct PlanStep {
  enum class Kind : uint8_t { kCalls, kCopy, kVnchwconv, kStridedCopy } kind = Kind::kCalls;
  // calls, copies, vnchwconvs or strided_copies [first, first + count)
  // (one copy or vnchwconv per step)
  int first = 0, count = 0;
  // The command's outputs overlap its inputs: read every input before any
  // output is written, as the interpreter's SRAM staging does.
  bool stage_inputs = false;
  // The calls (one command's core tiles) run on the host threads side by side
  // (prepare_parts: their outputs are disjoint and together worth it).
  bool parallel_calls = false;
};

struct PlanData {
  RunCounters counters;  // without the timeline: that is `timeline`, shared with the handlers
  // The run's command records, shared (not copied) by every replay's handler.
  std::shared_ptr<const std::vector<CommandRecord>> timeline;
  std::array<uint64_t, limits::kNumRegions> region_sizes{};
  std::vector<KernelData> kernel_data;
  std::vector<PlanCall> calls;
  std::vector<CopyTrace> copies;
  std::vector<VnchwTrace> vnchwconvs;
  std::vector<StridedCopy> strided_copies;
  std::vector<PlanStep> steps;
  // Each call's parts for `parts_threads` host threads (prepare_parts; empty:
  // the call runs whole), with their own packed weights where they slice them.
  int parts_threads = 0;
  std::vector<std::vector<PlanCall>> parts;
  RegisterFile final_registers;  // the handler's registers after the run
  uint32_t final_qread = 0;
  ExecutionPlan::Summary summary;
};

// The plan of a recording: its last layer's steps, the kernel data the calls
// use, the weights packed (plan.cc).
std::unique_ptr<PlanData> make_plan(Recorder&& rec);
// Splits every call of `plan` for `threads` host threads once (replay_plan
// uses them when its pool has that many threads, else splits per run).
void prepare_parts(PlanData& plan, int threads);

// Runs the plan's data effects on `regions` (plan.cc). DeviceFault from a
// unit's own checks (which the build has already passed, so only on bugs).
void replay_plan(const PlanData& plan, const std::array<RegionMemory, limits::kNumRegions>& regions,
                 ThreadPool& pool);

}  // namespace nacc::device_detail

// Per-op results of one run: the device's timeline (device/device.h) cut along
// the command-word ranges the compiler recorded for each IR op
// (Program::ops), so a report can say what every layer cost as executed —
// cycles, per-core busy time, MAC cycles, DMA bytes, stalls, SRAM high water.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device/device.h"
#include "runtime/program.h"

namespace nacc {

// One core's share of one op (sums of its CoreSpans of the op's kernels).
struct OpCoreCounters {
  int64_t busy_cycles = 0;      // compute_end - compute_start summed over its kernels
  int64_t mac_cycles = 0, act_cycles = 0, stall_cycles = 0;
  int64_t dma_read_bytes = 0;   // into this core's SRAM (a broadcast operand on every core)
  int64_t dma_write_bytes = 0;
  int64_t macs = 0;
  int64_t sram_high_water = 0;  // highest SRAM byte offset + 1 this op's buffers reached
  int64_t kernels = 0;
};

// What one op (or, with op == -1, the commands outside every op's word range,
// e.g. the copies at the end of a Program) cost in one run. Every additive
// field sums over the entries of op_counters() to the RunCounters total.
struct OpCounters {
  int op = -1;                  // index into Program::ops; -1 = outside any op
  std::string name, kind;       // from the OpRecord ("(outside ops)", "" for op -1)
  int64_t start = 0, end = 0;   // first / last cycle of its commands on the timeline
  int64_t cycles = 0;           // end - start (0 when it executed no command)
  int64_t commands = 0;         // timeline records (kernels + DMA-queue commands)
  int64_t kernels = 0, dma_ops = 0;
  int64_t macs = 0;             // useful MACs, as the device counted them
  int64_t mac_cycles = 0, act_cycles = 0, stall_cycles = 0;  // sums over cores
  int64_t busy_cycles = 0;      // sum over cores
  int64_t dma_read_bytes = 0;   // external memory bytes (broadcast once), as RunCounters
  int64_t dma_write_bytes = 0;
  int64_t sram_high_water = 0;  // max over cores
  int64_t bound_cycles = 0;     // NACC_SPEC §8 bound from the OpRecord (0 for op -1)
  int64_t min_dma_bytes = 0;    // move-once bytes from the OpRecord
  std::vector<int64_t> output_shape;  // from the OpRecord (reports: rows over cores)
  std::vector<OpCoreCounters> cores;  // hw.cores entries
};

// Cuts `run`'s timeline by `program`'s op word ranges: one entry per
// Program::ops entry, in order, plus a final op -1 entry when some executed
// command lies outside every range. `run` must come from running `program`.
std::vector<OpCounters> op_counters(const Program& program, const RunCounters& run);
// The same with the timeline given apart (a replay plan keeps its own).
std::vector<OpCounters> op_counters(const Program& program, const RunCounters& run,
                                    const std::vector<CommandRecord>& timeline);

// The entries as a JSON array of objects with the field names above ("cores":
// an array of per-core objects), for the TFLite delegate's and the ORT EP's
// reports.
std::string op_counters_json(const std::vector<OpCounters>& ops);

}  // namespace nacc

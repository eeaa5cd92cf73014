// Per-op cut of a run's timeline (op_counters.h).
#include "runtime/op_counters.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <sstream>

namespace nacc {

namespace {

void add_record(OpCounters& o, const CommandRecord& rec) {
  if (o.commands == 0) {
    o.start = rec.start;
    o.end = rec.end;
  } else {
    o.start = std::min(o.start, rec.start);
    o.end = std::max(o.end, rec.end);
  }
  o.commands += 1;
  o.dma_read_bytes += rec.ext_read_bytes;
  o.dma_write_bytes += rec.ext_write_bytes;
  if (rec.op == Opcode::NPU_OP_DMA_START || rec.op == Opcode::NPU_OP_VNCHWCONV) {
    o.dma_ops += 1;
    return;
  }
  o.kernels += 1;
  o.macs += rec.macs;
  for (const CoreSpan& s : rec.cores) {
    if (s.core < 0 || size_t(s.core) >= o.cores.size()) continue;
    OpCoreCounters& c = o.cores[size_t(s.core)];
    c.busy_cycles += s.compute_end - s.compute_start;
    c.mac_cycles += s.mac_cycles;
    c.act_cycles += s.act_cycles;
    c.stall_cycles += s.stall_cycles;
    c.dma_read_bytes += s.read_bytes;
    c.dma_write_bytes += s.write_bytes;
    c.macs += s.macs;
    c.sram_high_water = std::max(c.sram_high_water, s.sram_high);
    c.kernels += 1;
    o.mac_cycles += s.mac_cycles;
    o.act_cycles += s.act_cycles;
    o.stall_cycles += s.stall_cycles;
    o.busy_cycles += s.compute_end - s.compute_start;
    o.sram_high_water = std::max(o.sram_high_water, s.sram_high);
  }
}

}  // namespace

std::vector<OpCounters> op_counters(const Program& program, const RunCounters& run) {
  return op_counters(program, run, run.timeline);
}

std::vector<OpCounters> op_counters(const Program& program, const RunCounters& run,
                                    const std::vector<CommandRecord>& timeline) {
  const size_t n_cores = std::max<size_t>(run.cores.size(), size_t(program.hw.cores));
  std::vector<OpCounters> ops(program.ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpRecord& r = program.ops[i];
    ops[i].op = int(i);
    ops[i].name = r.name;
    ops[i].kind = r.kind;
    ops[i].bound_cycles = r.bound_cycles;
    ops[i].min_dma_bytes = r.min_dma_bytes;
    ops[i].output_shape = r.output_shape;
    ops[i].cores.resize(n_cores);
  }
  // Word -> op: the ranges are disjoint and in stream order; empty ranges own nothing.
  std::vector<std::pair<uint32_t, size_t>> starts;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (program.ops[i].end_word > program.ops[i].first_word) {
      starts.emplace_back(program.ops[i].first_word, i);
    }
  }
  std::sort(starts.begin(), starts.end());
  OpCounters outside;
  outside.name = "(outside ops)";
  outside.cores.resize(n_cores);
  for (const CommandRecord& rec : timeline) {
    auto it = std::upper_bound(starts.begin(), starts.end(), std::make_pair(rec.word, SIZE_MAX));
    OpCounters* target = &outside;
    if (it != starts.begin()) {
      const size_t i = std::prev(it)->second;
      if (rec.word < program.ops[i].end_word) target = &ops[i];
    }
    add_record(*target, rec);
  }
  for (OpCounters& o : ops) o.cycles = o.end - o.start;
  if (outside.commands > 0) {
    outside.cycles = outside.end - outside.start;
    ops.push_back(std::move(outside));
  }
  return ops;
}

namespace {

void json_string(std::ostringstream& out, const std::string& s) {
  out << '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out << '\\' << ch;
    } else if (c < 0x20) {
      const char* hex = "0123456789abcdef";
      out << "\\u00" << hex[c >> 4] << hex[c & 15];
    } else {
      out << ch;
    }
  }
  out << '"';
}

}  // namespace

std::string op_counters_json(const std::vector<OpCounters>& ops) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpCounters& o = ops[i];
    out << (i ? ", " : "") << "{\"op\": " << o.op << ", \"name\": ";
    json_string(out, o.name);
    out << ", \"kind\": ";
    json_string(out, o.kind);
    out << ", \"start\": " << o.start << ", \"end\": " << o.end << ", \"cycles\": " << o.cycles
        << ", \"commands\": " << o.commands << ", \"kernels\": " << o.kernels
        << ", \"dma_ops\": " << o.dma_ops << ", \"macs\": " << o.macs
        << ", \"mac_cycles\": " << o.mac_cycles << ", \"act_cycles\": " << o.act_cycles
        << ", \"stall_cycles\": " << o.stall_cycles << ", \"busy_cycles\": " << o.busy_cycles
        << ", \"dma_read_bytes\": " << o.dma_read_bytes
        << ", \"dma_write_bytes\": " << o.dma_write_bytes
        << ", \"sram_high_water\": " << o.sram_high_water
        << ", \"bound_cycles\": " << o.bound_cycles << ", \"min_dma_bytes\": " << o.min_dma_bytes
        << ", \"output_shape\": [";
    for (size_t d = 0; d < o.output_shape.size(); ++d) out << (d ? ", " : "") << o.output_shape[d];
    out << "], \"cores\": [";
    for (size_t k = 0; k < o.cores.size(); ++k) {
      const OpCoreCounters& c = o.cores[k];
      out << (k ? ", " : "") << "{\"busy_cycles\": " << c.busy_cycles
          << ", \"mac_cycles\": " << c.mac_cycles << ", \"act_cycles\": " << c.act_cycles
          << ", \"stall_cycles\": " << c.stall_cycles
          << ", \"dma_read_bytes\": " << c.dma_read_bytes
          << ", \"dma_write_bytes\": " << c.dma_write_bytes << ", \"macs\": " << c.macs
          << ", \"sram_high_water\": " << c.sram_high_water << ", \"kernels\": " << c.kernels
          << '}';
    }
    out << "]}";
  }
  out << ']';
  return out.str();
}

}  // namespace nacc

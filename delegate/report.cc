// Logger and JSON serialization of the delegate's report (report.h).
#include "report.h"

#include <cstdio>

#include "common/version.h"
#include "json.h"

namespace nacc::tflite {

namespace {

const char* level_word(LogLevel level) {
  switch (level) {
    case LogLevel::kError: return "Error";
    case LogLevel::kWarning: return "Warning";
    case LogLevel::kInfo: return "Info";
    default: return "Debug";
  }
}

void write_reason(JsonWriter& w, const Reason& r) {
  w.begin_object().field("rule", r.rule).field("detail", r.detail).field("text", r.text);
  w.field("message", r.display()).end_object();
}

}  // namespace

void Logger::log(LogLevel level, const std::string& message) const {
  if (!enabled(level)) return;
  std::fprintf(stderr, "NACC delegate: %s: %s\n", level_word(level), message.c_str());
  std::fflush(stderr);
}

std::string report_json(const DelegateOptions& options,
                        const std::vector<std::shared_ptr<SubgraphReport>>& subgraphs) {
  JsonWriter w;
  w.begin_object();
  w.field("nacc_version", kVersion);
  w.key("options").begin_object();
  for (const auto& [k, v] : options.as_strings()) w.field(k, v);
  w.end_object();
  w.key("subgraphs").begin_array();
  for (const auto& sg : subgraphs) {
    w.begin_object();
    w.field("ordinal", sg->ordinal).field("context", sg->context);
    w.field("total_nodes", sg->total_nodes).field("claimed_nodes", sg->claimed_nodes);
    w.field("summary", sg->summary).field("messages", sg->messages);
    w.key("nodes").begin_array();
    for (const NodeReport& n : sg->nodes) {
      w.begin_object();
      w.field("node", n.node).field("op", n.op).field("name", n.name).field("claimed", n.claimed);
      w.field("partition", n.partition).field("host_kind", n.host_kind).field("macs", n.macs);
      w.key("reasons").begin_array();
      for (const Reason& r : n.reasons) write_reason(w, r);
      w.end_array();
      w.end_object();
    }
    w.end_array();
    w.key("partitions").begin_array();
    for (const auto& p : sg->partitions) {
      std::lock_guard<std::mutex> lock(p->mu);
      w.begin_object();
      w.field("index", p->index).field("nodes", p->nodes).field("ops", p->ops);
      w.field("input_tensors", p->input_tensors).field("output_tensors", p->output_tensors);
      w.field("macs", p->macs).field("cache_key", p->cache_key).field("cache_hit", p->cache_hit);
      w.field("cache_replaced", p->cache_replaced);
      w.field("compile_ms", p->compile_ms).field("program_ops", p->program_ops);
      w.field("command_words", p->command_words).field("constant_bytes", p->constant_bytes);
      w.field("invocations", p->invocations).field("recompilations", p->recompilations);
      w.field("last_cycles", p->last.cycles).field("last_dma_bytes", p->last.dma_bytes);
      w.field("sram_peak", p->last.sram_high_water).field("total_cycles", p->total_cycles);
      w.field("host_ms_total", p->host_ms_total);
      const double us = options.clock_mhz > 0 ? double(p->last.cycles) / options.clock_mhz : 0.0;
      w.field("last_latency_us", us);
      w.key("last_ops").raw(p->last.ops ? op_counters_json(*p->last.ops) : std::string("[]"));
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str();
}

}  // namespace nacc::tflite

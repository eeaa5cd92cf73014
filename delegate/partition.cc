// Partition extraction, cache keys, compile-with-cache and dumps (partition.h).
#include "partition.h"

#include <chrono>
#include <filesystem>
#include <unordered_map>

#include "common/error.h"
#include "common/version.h"
#include "support/cache_entry.h"
#include "support/graph_digest.h"

namespace nacc::tflite {

namespace {

// Part of every key: bump when the entry's meaning changes. v2: keys are
// built from support::graph_digest (v1 hashed the IR directly, without LUTs
// and requant) and entries carry the support/cache_entry.h header; v3 keys
// and IR digests are support::Digest128 (v2: SHA-256).
constexpr const char* kCacheFormat = "nacc-tflite-program-cache-v3";
constexpr const char* kEntryKind = "tflite-program";

std::string entry_path(const DelegateOptions& options, const std::string& key) {
  return (std::filesystem::path(options.cache_dir) / (key + ".nacc")).string();
}

// The cached Program of the partition `id` from cache_dir, or null when there
// is none or the entry there is not this partition's (then *problem says why).
std::shared_ptr<Program> load_cached(const DelegateOptions& options, const support::CacheEntryId& id,
                                     std::string* problem) {
  const auto bytes = support::read_cache_file(entry_path(options, id.key));
  if (!bytes) return nullptr;
  const auto payload = support::decode_cache_entry(*bytes, id, problem);
  if (!payload) return nullptr;
  try {
    auto program = std::make_shared<Program>(
        deserialize_program(bytes->data() + payload->offset, payload->size,
                            Program::Checksum::kCoveredByCaller));  // the entry's digest
    check_program(*program, options);
    return program;
  } catch (const std::exception& e) {
    *problem = str_cat("its Program is unusable: ", e.what());
    return nullptr;
  }
}

}  // namespace

ir::Graph extract_partition(const Translation& t, const std::vector<int>& nodes,
                            const std::vector<int>& inputs, const std::vector<int>& outputs,
                            std::vector<int>* bound_inputs) {
  ir::Graph g;
  std::unordered_map<int, int> remap;  // IR id in t.graph -> id in g
  const auto id_of = [&](int old_id) {
    if (old_id < 0) return -1;
    auto it = remap.find(old_id);
    if (it != remap.end()) return it->second;
    const int id = g.add_tensor(t.graph.tensor(old_id));
    remap[old_id] = id;
    return id;
  };
  for (int index : inputs) {
    auto it = t.ir_tensor.find(index);
    check_arg(it != t.ir_tensor.end(), "partition input tensor ", index, " was not translated");
    if (t.graph.tensor(it->second).is_constant()) continue;
    g.inputs.push_back(id_of(it->second));
    bound_inputs->push_back(index);
  }
  for (int node : nodes) {
    const NodeResult* r = t.node(node);
    check_arg(r && r->ir_op >= 0, "partition node ", node, " was not translated");
    ir::Op op = t.graph.op(r->ir_op);
    for (int& id : op.inputs) id = id_of(id);
    for (int& id : op.outputs) id = id_of(id);
    g.add_op(std::move(op));
  }
  for (int index : outputs) {
    auto it = t.ir_tensor.find(index);
    check_arg(it != t.ir_tensor.end(), "partition output tensor ", index, " was not translated");
    g.outputs.push_back(id_of(it->second));
  }
  g.validate();
  return g;
}

std::string cache_key(const std::string& ir_digest, const DelegateOptions& options) {
  const HwConfig hw = hardware_config(options);
  return support::bytes_digest(
      str_cat(kCacheFormat, "\nnacc=", kVersion, "\ncores=", hw.cores, ";sram_bytes=", hw.sram_bytes,
              ";dma_bytes_per_cycle=", hw.dma_bytes_per_cycle, ";ext_bytes_per_cycle=",
              hw.ext_bytes_per_cycle, "\nir=", ir_digest));
}

std::shared_ptr<const Program> compile_partition(const ir::Graph& graph,
                                                 const DelegateOptions& options,
                                                 const std::string& dump_suffix,
                                                 PartitionReport* report, const Logger& log) {
  namespace fs = std::filesystem;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string ir_digest = support::graph_digest(graph);
  const support::CacheEntryId id{kEntryKind, cache_key(ir_digest, options), ir_digest};
  report->cache_key = id.key;
  report->cache_hit = false;
  report->cache_replaced.clear();
  std::shared_ptr<Program> program;
  if (!options.cache_dir.empty()) {
    std::string problem;
    program = load_cached(options, id, &problem);
    report->cache_hit = program != nullptr;
    if (!program && !problem.empty()) {
      report->cache_replaced = problem;
      log.log(LogLevel::kWarning,
              str_cat("cache entry ", entry_path(options, id.key), " is not used: ", problem,
                      "; the partition is compiled again and the entry replaced"));
    }
  }
  if (!program) {
    program = std::make_shared<Program>(compile_graph(graph, options));
    if (!options.cache_dir.empty()) {
      try {
        support::write_cache_file(entry_path(options, id.key),
                                  support::encode_cache_entry(id, serialize_program(*program)));
      } catch (const std::exception& e) {
        log.log(LogLevel::kWarning, str_cat("cannot store the compiled Program in cache_dir: ",
                                            e.what()));
      }
    }
  }
  report->compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  report->program_ops = static_cast<int64_t>(program->ops.size());
  report->command_words = static_cast<int64_t>(program->commands.size());
  report->constant_bytes = static_cast<int64_t>(program->constants.size());
  if (!options.dump_dir.empty()) {
    const fs::path base =
        fs::path(options.dump_dir) / str_cat("nacc_", id.key.substr(0, 16), dump_suffix);
    try {
      support::write_cache_file(base.string() + ".program", serialize_program(*program));
    } catch (const std::exception& e) {
      log.log(LogLevel::kWarning, str_cat("dump_dir: cannot write the Program: ", e.what()));
    }
    try {
      const std::string text = disassemble_program(*program);
      support::write_cache_file(base.string() + ".txt", std::vector<uint8_t>(text.begin(), text.end()));
    } catch (const std::exception& e) {
      log.log(LogLevel::kWarning, str_cat("dump_dir: cannot write the disassembly: ", e.what()));
    }
  }
  return program;
}

}  // namespace nacc::tflite

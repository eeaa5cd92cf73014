// Partition extraction, cache keys, compile-with-cache and dumps (partition.h).
#include "partition.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unordered_map>

#include "common/error.h"
#include "common/version.h"
#include "sha256.h"

namespace nacc::tflite {

namespace {

constexpr const char* kCacheFormat = "nacc-tflite-program-cache-v1";

std::vector<uint8_t> read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// Writes atomically (temporary file + rename) so a concurrent reader never
// sees a partial entry.
void write_file(const std::filesystem::path& p, const void* data, size_t size) {
  // Unique per process and call: concurrent writers (threads or processes
  // sharing cache_dir) never write into one temporary file.
  static std::atomic<uint64_t> counter{0};
  const std::filesystem::path tmp =
      p.string() + ".tmp" + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  {
    std::ofstream f(tmp, std::ios::binary);
    check_arg(static_cast<bool>(f), "cannot write '", tmp.string(), "'");
    f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    check_arg(static_cast<bool>(f), "cannot write '", tmp.string(), "'");
  }
  std::filesystem::rename(tmp, p);
}

void hash_string(Sha256& h, const std::string& s) {
  h.update_pod(static_cast<uint64_t>(s.size()));
  h.update(s);
}

template <typename T>
void hash_vector(Sha256& h, const std::vector<T>& v) {
  h.update_pod(static_cast<uint64_t>(v.size()));
  if (!v.empty()) h.update(v.data(), v.size() * sizeof(T));
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

std::string cache_key(const ir::Graph& g, const DelegateOptions& options) {
  Sha256 h;
  hash_string(h, kCacheFormat);
  hash_string(h, kVersion);
  const HwConfig hw = hardware_config(options);
  h.update_pod(hw.cores).update_pod(hw.sram_bytes);
  h.update_pod(hw.dma_bytes_per_cycle).update_pod(hw.ext_bytes_per_cycle);
  h.update_pod(static_cast<uint64_t>(g.tensors.size()));
  for (const ir::Tensor& t : g.tensors) {
    hash_string(h, t.name);
    hash_vector(h, t.shape);
    h.update_pod(static_cast<int>(t.dtype));
    hash_vector(h, t.quant.scales);
    hash_vector(h, t.quant.zero_points);
    h.update_pod(t.quant.axis);
    h.update_pod(t.data.has_value());
    if (t.data) hash_vector(h, *t.data);
  }
  h.update_pod(static_cast<uint64_t>(g.ops.size()));
  for (const ir::Op& op : g.ops) {
    h.update_pod(static_cast<int>(op.kind));
    hash_string(h, op.name);
    hash_string(h, op.type_name);
    hash_vector(h, op.inputs);
    hash_vector(h, op.outputs);
    const ir::Attributes& a = op.attrs;
    h.update_pod(a.stride_h).update_pod(a.stride_w).update_pod(a.dilation_h).update_pod(a.dilation_w);
    h.update_pod(a.padding.top).update_pod(a.padding.bottom).update_pod(a.padding.left);
    h.update_pod(a.padding.right).update_pod(a.kernel_h).update_pod(a.kernel_w);
    h.update_pod(a.depth_multiplier).update_pod(static_cast<int>(a.activation)).update_pod(a.axis);
    hash_vector(h, a.axes);
    h.update_pod(a.keep_dims).update_pod(a.alpha);
    hash_vector(h, a.paddings);
    for (const std::string& s : a.unsupported_options) hash_string(h, s);
  }
  hash_vector(h, g.inputs);
  hash_vector(h, g.outputs);
  return h.hex_digest();
}

std::shared_ptr<const Program> compile_partition(const ir::Graph& graph,
                                                 const DelegateOptions& options,
                                                 const std::string& dump_tag,
                                                 PartitionReport* report, const Logger& log) {
  namespace fs = std::filesystem;
  const std::string key = cache_key(graph, options);
  report->cache_key = key;
  report->cache_hit = false;
  std::shared_ptr<Program> program;
  const auto t0 = std::chrono::steady_clock::now();
  if (!options.cache_dir.empty()) {
    const fs::path entry = fs::path(options.cache_dir) / (key + ".nacc");
    std::error_code ec;
    if (fs::exists(entry, ec)) {
      try {
        program = std::make_shared<Program>(deserialize_program(read_file(entry)));
        report->cache_hit = true;
      } catch (const std::exception& e) {
        log.log(LogLevel::kWarning, str_cat("cache entry ", entry.string(),
                                            " is unusable and will be replaced: ", e.what()));
      }
    }
  }
  if (!program) {
    program = std::make_shared<Program>(compile_graph(graph, options));
    if (!options.cache_dir.empty()) {
      try {
        const std::vector<uint8_t> bytes = serialize_program(*program);
        write_file(fs::path(options.cache_dir) / (key + ".nacc"), bytes.data(), bytes.size());
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
    const fs::path base = fs::path(options.dump_dir) / dump_tag;
    try {
      const std::vector<uint8_t> bytes = serialize_program(*program);
      write_file(base.string() + ".program", bytes.data(), bytes.size());
    } catch (const std::exception& e) {
      log.log(LogLevel::kWarning, str_cat("dump_dir: cannot write the Program: ", e.what()));
    }
    try {
      const std::string text = disassemble_program(*program);
      write_file(base.string() + ".txt", text.data(), text.size());
    } catch (const std::exception& e) {
      log.log(LogLevel::kWarning, str_cat("dump_dir: cannot write the disassembly: ", e.what()));
    }
  }
  return program;
}

}  // namespace nacc::tflite

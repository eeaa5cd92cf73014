// What a compiled partition is made of (its Program and how its inputs and
// outputs cross the boundary), serialized for ORT's compiled-model flow
// (EPContext nodes, `ep.context_enable=1`) and for the `cache_dir` option.
//
// Blob format (little-endian): magic "NACCEPC1", u32 format version, string
// nacc version, string hardware summary, u32 input count + bindings, u32
// output count + bindings, u64 Program size + Program bytes (its own format,
// with its own checksum: docs/command_stream.md). A binding is string name,
// i32 elem type, u8 nchw, u32 rank + i64 dims (ONNX shape).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/version.h"
#include "ep/config.h"
#include "ep/ort_api.h"
#include "ep/translate.h"
#include "ir/ir.h"
#include "runtime/program.h"

namespace nacc::ep {

// The nacc version recorded in blobs and compatibility strings.
constexpr const char* kNaccVersion = nacc::kVersion;

struct PartitionBlob {
  std::vector<IoBinding> inputs;   // in the fused node's input order
  std::vector<IoBinding> outputs;  // in the fused node's output order
  Program program;

  std::vector<uint8_t> serialize() const;
  // Throws InvalidArgument naming what is malformed.
  static PartitionBlob deserialize(const uint8_t* data, size_t size);
};

// "nacc=0.1.0;cores=4;sram_kb=64" — compiled-model compatibility information.
std::string compatibility_string(const Config& config);
// How a compatibility string from a compiled model fits this build + options.
OrtCompiledModelCompatibility check_compatibility(const std::string& info, const Config& config);

// Stable 64-bit fingerprint of an IR graph, its boundary and the hardware options (FNV-1a over a
// canonical description), the cache_dir key.
// The boundary bindings count: an int8 and a uint8 model can have the same IR.
uint64_t fingerprint(const ir::Graph& graph, const std::vector<IoBinding>& inputs,
                     const std::vector<IoBinding>& outputs, const Config& config);

// cache_dir: the blob stored for `key`, or nullopt (missing or unreadable).
std::optional<PartitionBlob> cache_load(const std::string& dir, uint64_t key);
// Stores atomically (temp file + rename); failures are ignored by callers.
void cache_store(const std::string& dir, uint64_t key, const PartitionBlob& blob);

// Process-wide cache of compiled partitions by fingerprint, so GetCapability
// (which compiles to decide) and Compile, and several sessions of one model,
// compile each partition once. Bounded; oldest entries are dropped.
std::shared_ptr<const PartitionBlob> memory_cache_get(uint64_t key);
void memory_cache_put(uint64_t key, std::shared_ptr<const PartitionBlob> blob);

// An EPContext node (com.microsoft) carrying `blob`, made with the model
// editor API for ORT to write into the compiled model.
OrtNode* make_ep_context_node(const Api& api, const std::string& node_name,
                              const std::vector<std::string>& inputs,
                              const std::vector<std::string>& outputs,
                              const std::vector<uint8_t>& blob);

}  // namespace nacc::ep

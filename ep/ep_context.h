// What a compiled partition is made of (its Program and how its inputs and
// outputs cross the boundary), serialized for ORT's compiled-model flow
// (EPContext nodes, `ep.context_enable=1`) and for the `cache_dir` option.
//
// Blob format 2 (little-endian): magic "NACCEPC1", u32 format version, string
// nacc version, string hardware summary, u32 input count + bindings, u32
// output count + bindings, u64 Program size + Program bytes (its own format,
// with its own checksum: docs/command_stream.md), u64 FNV-1a-64 checksum of
// every preceding byte. A binding is string name, i32 elem type, u8 nchw, u32
// rank + i64 dims (ONNX shape). A cache_dir file is the blob inside the
// support/cache_entry.h container (key and IR digest of its partition).
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
#include "support/cache_entry.h"

namespace nacc::ep {

// The nacc version recorded in blobs and compatibility strings.
constexpr const char* kNaccVersion = nacc::kVersion;

struct PartitionBlob {
  std::vector<IoBinding> inputs;   // in the fused node's input order
  std::vector<IoBinding> outputs;  // in the fused node's output order
  Program program;

  std::vector<uint8_t> serialize() const;
  // Throws InvalidArgument naming what is malformed. The blob's checksum
  // covers the Program's bytes, so the Program's own checksum is not
  // computed again; kCoveredByCaller skips the blob's too, for bytes whose
  // digest the caller checked (a cache_dir entry's).
  static PartitionBlob deserialize(const uint8_t* data, size_t size,
                                   Program::Checksum checksum = Program::Checksum::kVerify);
};

// "nacc=0.1.0;format=2;cores=4;sram_kb=64" — compiled-model compatibility
// information (ORT writes it into the compiled model's metadata).
std::string compatibility_string(const Config& config);
// How a compatibility string from a compiled model fits this build (the
// factory's ValidateCompiledModelCompatibilityInfo, which sees no session
// options): not nacc's is EP_NOT_APPLICABLE; another nacc version or blob
// format, a malformed string or a hardware configuration no NACC has is
// EP_UNSUPPORTED; otherwise EP_SUPPORTED_OPTIMAL. Whether the hardware is this
// session's is checked at Compile (check_ep_context_blob).
OrtCompiledModelCompatibility check_compatibility(const std::string& info);

// Checks a compiled partition loaded from an EPContext node before it is
// used: its Program must pass the runtime's check for this session's NPU
// (options cores and sram_kb). Throws OrtError(ORT_FAIL) naming the partition,
// the hardware it was compiled for and the session's; a Program for fewer
// cores than the session's NPU runs (returned: a warning for the log).
// There is no original subgraph to compile again (ORT's EPContext contract).
std::string check_ep_context_blob(const PartitionBlob& blob, const std::string& node_name,
                                  const Config& config);

// The cache_dir key of a partition (32 hex characters, support::Digest128): its
// boundary bindings (an int8 and a uint8 model can have the same IR), this
// nacc version and blob format, the hardware options and `ir_digest`, the
// support::graph_digest of its IR.
std::string partition_key(const std::string& ir_digest, const std::vector<IoBinding>& inputs,
                          const std::vector<IoBinding>& outputs, const Config& config);

// cache_dir/<key>.naccpart
std::string cache_path(const std::string& dir, const std::string& key);
// The blob in cache_path(dir, id.key) stored for `id`, or nullopt when there is
// none or the entry is not this partition's (another partition's, another
// format, damaged): then *problem says why, for the caller's warning, and
// the caller compiles and stores a new entry. The caller checks the Program
// against its session's NPU.
std::optional<PartitionBlob> cache_load(const std::string& dir, const support::CacheEntryId& id,
                                        std::string* problem);
// Stores atomically (temp file + rename). Throws nacc::Error when it cannot.
void cache_store(const std::string& dir, const support::CacheEntryId& id, const PartitionBlob& blob);
// The entry kind of the EP's cache_dir entries.
constexpr const char* kCacheEntryKind = "ort-partition";

// Process-wide cache of compiled partitions by key, so GetCapability
// (which compiles to decide) and Compile, and several sessions of one model,
// compile each partition once. Bounded; oldest entries are dropped.
std::shared_ptr<const PartitionBlob> memory_cache_get(const std::string& key);
void memory_cache_put(const std::string& key, std::shared_ptr<const PartitionBlob> blob);

// An EPContext node (com.microsoft) carrying `blob`, made with the model
// editor API for ORT to write into the compiled model.
OrtNode* make_ep_context_node(const Api& api, const std::string& node_name,
                              const std::vector<std::string>& inputs,
                              const std::vector<std::string>& outputs,
                              const std::vector<uint8_t>& blob);

}  // namespace nacc::ep

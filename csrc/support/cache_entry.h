// The cache_dir entry container of both frontends (the TFLite delegate's
// <key>.nacc Programs, the ONNX Runtime EP's <key>.naccpart partitions): a
// header naming what the payload was compiled from, so that an entry that is
// not this partition's (copied or renamed from another model, written by
// another nacc, another format) is detected on load, never used.
//
// Layout (little-endian): magic "NACCCENT", u32 container version (2), then
// four strings (u32 length + bytes): payload kind ("tflite-program",
// "ort-partition"), nacc version, cache key, IR digest (graph_digest.h); then
// u64 payload size, the payload's Digest128 (digest128.h; u64 hi, u64 lo) and
// the payload (its own format, with its own checksum). A decoded payload's
// bytes are those that were encoded (the digest is checked), so a loader may
// skip the payload's own byte-serial checksum (Program::Checksum).
//
// What it protects against: stale, misplaced or foreign entries and damaged
// headers. What it does not: someone who can write cache_dir can write an
// entry with any header; the cache directory must be as trusted as the model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nacc::support {

// What a cache entry was compiled from.
struct CacheEntryId {
  std::string kind;       // "tflite-program", "ort-partition"
  std::string key;        // the cache key, also the file name stem
  std::string ir_digest;  // graph_digest of the partition's IR
};

// The entry's bytes: header for `id` (and this nacc version) + payload.
std::vector<uint8_t> encode_cache_entry(const CacheEntryId& id, const std::vector<uint8_t>& payload);

// Where the payload sits in an entry's bytes.
struct CachePayload {
  size_t offset = 0;
  size_t size = 0;
};

// The payload of `bytes` when its header names `want` and this nacc version
// and the payload's digest matches the header's; otherwise nullopt and *why says what differs, e.g. "it has no nacc cache
// header (an entry of an older nacc, or not a nacc cache entry)" or "it holds
// the Program of another partition (IR digest 1a2b3c4d5e6f7a8b..., this
// partition's 0f1e2d3c4b5a6978...)". Never throws.
std::optional<CachePayload> decode_cache_entry(const std::vector<uint8_t>& bytes,
                                               const CacheEntryId& want, std::string* why);

// The bytes of file `path`, or nullopt when it does not exist or cannot be read.
std::optional<std::vector<uint8_t>> read_cache_file(const std::string& path);

// Writes `bytes` to `path` atomically (a temporary file unique per process
// and call, then rename), so that a concurrent reader never sees a partial
// entry. Throws InvalidArgument naming the file when it cannot be written.
void write_cache_file(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace nacc::support

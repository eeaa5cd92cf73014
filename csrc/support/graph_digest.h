// The content digest of a partition's IR graph, for the compiled-Program
// caches of both frontends (the TFLite delegate's and the ONNX Runtime EP's
// cache_dir): one canonical encoding of everything a Program depends on in the
// IR, hashed once. Cache keys are built from this digest and the options, and
// each cache entry stores both so that a load can tell whose Program it holds.
#pragma once

#include <string>

#include "ir/ir.h"

namespace nacc::support {

// SHA-256 (FIPS 180-4; 64 lower-case hex characters; on the CPU's SHA
// extensions where it has them, 25 MB of weights in about 20-40 ms): the
// TFLite delegate's keys. FNV-1a-64 (16 hex characters, not collision
// resistant): the ONNX Runtime EP's keys, as before.
enum class DigestKind { kSha256, kFnv1a64 };

// Hex digest of the canonical encoding of `graph`: every tensor (name, shape,
// dtype, quantization, constant bytes), every op (kind, name, type name,
// operand ids, every ir::Attributes field) and the graph's inputs and
// outputs, each variable-length field length-prefixed so that two different
// graphs never encode alike. This is the only pass over the constant bytes
// (the weights) a cache key makes: a faster weight digest replaces the
// hashing here and nowhere else.
std::string graph_digest(const ir::Graph& graph, DigestKind kind);

// Hex digest of `bytes` with the same algorithm (for keys built from a graph
// digest and the options).
std::string bytes_digest(const std::string& bytes, DigestKind kind);

// FNV-1a-64 of `size` bytes, continuing from `h` (the offset basis by
// default): the checksum of the EP's partition blobs.
uint64_t fnv1a64(const void* data, size_t size, uint64_t h = 14695981039346656037ull);

}  // namespace nacc::support

// The content digest of a partition's IR graph, for the compiled-Program
// caches of both frontends (the TFLite delegate's and the ONNX Runtime EP's
// cache_dir): one canonical encoding of everything a Program depends on in the
// IR, hashed once. Cache keys are built from this digest and the options, and
// each cache entry stores both so that a load can tell whose Program it holds.
#pragma once

#include <string>

#include "ir/ir.h"

namespace nacc::support {

// Hex digest of the canonical encoding of `graph`: every tensor (name, shape,
// dtype, quantization, constant bytes), every op (kind, name, type name,
// operand ids, every ir::Attributes field) and the graph's inputs and
// outputs, each variable-length field length-prefixed so that two different
// graphs never encode alike. This is the only pass over the constant bytes
// (the weights) a cache key makes: a faster weight digest replaces the
// hashing here and nowhere else. The digest is Digest128 (digest128.h: 32
// lower-case hex characters, a few ms for 25 MB of weights; the collision
// reasoning is there), for both frontends' keys.
std::string graph_digest(const ir::Graph& graph);

// Hex digest of `bytes` with the same algorithm (for keys built from a graph
// digest and the options).
std::string bytes_digest(const std::string& bytes);

// FNV-1a-64 of `size` bytes, continuing from `h` (the offset basis by
// default): the checksum of the EP's partition blobs.
uint64_t fnv1a64(const void* data, size_t size, uint64_t h = 14695981039346656037ull);

}  // namespace nacc::support

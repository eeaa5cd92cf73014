// Memory planning of a partition (NACC_SPEC §6, docs/compiler.md "Memory"):
// which region holds each runtime tensor (region 0 constants, one region per
// partition input and output or, past 8 regions, a staging region shared by
// several, one scratch region for the tensors between
// ops, reused by a linear scan over lifetimes), RESHAPE as an alias of the
// same bytes, and the constant pool that becomes region 0.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/lower.h"
#include "runtime/program.h"

namespace nacc::compiler {

// Where a tensor's bytes live: a region and a byte offset into it.
struct Storage {
  int region = -1;
  int64_t offset = 0;
  int64_t size = 0;
  bool valid() const { return region >= 0; }
};

inline constexpr int kConstantRegion = 0;
// Scratch and constant offsets are multiples of this (one 64-byte burst).
inline constexpr int64_t kBufferAlignment = 64;
// Constant-pool entries start on a 16-byte bus beat.
inline constexpr int64_t kConstantAlignment = 16;

struct MemoryPlan {
  std::vector<Storage> storage;  // per tensor id; invalid for constants / unused
  std::array<RegionDesc, limits::kNumRegions> regions{};
  std::vector<IoTensor> inputs, outputs;
  int scratch_region = -1;
  // RESHAPE ops (by op index) whose output cannot alias their input (both are
  // partition inputs/outputs): the compiler copies the bytes with a DMA.
  std::vector<int> copy_ops;
  // Partition outputs that are also partition inputs: the input's bytes are
  // copied into the output's region at the end of the stream.
  struct Copy {
    Storage src, dst;
  };
  std::vector<Copy> end_copies;
};

// Plans the partition's memory. `lowered[i]` is the lowering of graph op i;
// `inputs` / `outputs` are the partition's I/O tensor ids. Any number of
// inputs and outputs fits the 8 regions: when they do not each get one, the
// smallest share a staging region per kind (program.h RegionDesc).
MemoryPlan plan_memory(const ir::Graph& graph, const std::vector<LoweredOp>& lowered,
                       const std::vector<int>& inputs, const std::vector<int>& outputs);

// The bytes of region 0: appended buffers, each at a 16-byte-aligned offset.
class ConstantPool {
 public:
  // Appends `n` bytes (zero-padded to `pad_to` bytes if larger); returns the offset.
  int64_t add(const void* data, size_t n, size_t pad_to = 0);
  int64_t add_int32(const std::vector<int32_t>& v);
  int64_t add_float64(const std::vector<double>& v);
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace nacc::compiler

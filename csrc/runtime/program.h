// A compiled Program: the command stream, the constant region (packed,
// compressed weights, bias, quantization arrays, LUTs), the region layout,
// the I/O tensor bindings, the hardware configuration it was compiled for and
// per-op metadata for reports. Serializes to bytes (magic, format version,
// checksum) and loads back; loading rejects anything malformed.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "arch/hw_config.h"
#include "arch/limits.h"

namespace nacc {

enum class RegionKind : uint8_t { kUnused = 0, kConstant = 1, kInput = 2, kOutput = 3, kScratch = 4 };

// One of the 8 regions (NACC_SPEC §6). Inputs/outputs are bound by the
// runtime to the caller's buffers; constants live in the Program; scratch is
// allocated per batch handler. An input or output region with io_index -1 is
// a staging region (docs/device_model.md "Staging regions"): it holds two or
// more of the Program's inputs (outputs), each at its IoTensor::offset, in a
// buffer the runtime owns per batch handler and copies the caller's inputs
// into before the run (the outputs out of after it).
struct RegionDesc {
  RegionKind kind = RegionKind::kUnused;
  int io_index = -1;  // index into Program::inputs / outputs for kInput / kOutput; -1: staging
  int64_t size = 0;   // bytes the stream may touch in this region
};

// A graph input or output: an int8 NHWC (or [M, K]) tensor in its own region
// (offset 0, the region's size) or in a staging region at `offset`.
struct IoTensor {
  std::string name;
  std::vector<int64_t> shape;
  int region = -1;
  int64_t size = 0;  // bytes
  float scale = 0.0f;
  int32_t zero_point = 0;
  int64_t offset = 0;  // byte offset in its region (format version 4; 0 before)
};

// What one IR op became: its command words and the numbers reports need.
struct OpRecord {
  std::string name;
  std::string kind;          // IR op kind name, e.g. "CONV_2D"
  uint32_t first_word = 0;   // command-stream word range [first_word, end_word)
  uint32_t end_word = 0;
  int64_t macs = 0;          // useful multiply-accumulates
  int64_t bound_cycles = 0;  // NACC_SPEC §8 per-op bound for the Program's HwConfig
  int64_t weight_bytes = 0;  // uncompressed weight bytes
  int64_t weight_bytes_stored = 0;  // as stored (compressed)
  int64_t min_dma_bytes = 0;  // each weight, IFM and OFM byte moved once
  // Where the op leaves its output tensor once its words have executed (the
  // runtime's debug dumps read it there; format version 2). output_region -1:
  // not recorded (a version-1 Program). The bytes are the int8 tensor in its
  // IR layout (NHWC or [M, K]), output_size = element count.
  std::string output_name;            // IR tensor name (the frontend's tensor name)
  std::vector<int64_t> output_shape;
  int output_region = -1;             // 0..7, a scratch, output or input region
  int64_t output_offset = 0;          // byte offset in that region
  int64_t output_size = 0;            // bytes
  // How the op was lowered (docs/compiler.md §2): CONV_2D "direct", "matrix"
  // or "im2col"; other ops their unit ("fully_connected", "matmul", ...).
  std::string lowering;
};

// Project decision (docs/device_model.md "Batches"): the images of one batch,
// at most (a 16-bit count, as the feature-map dimensions).
inline constexpr int kMaxImages = 65535;

struct Program {
  HwConfig hw;
  // Images of a batch (docs/device_model.md "Batches"): the stream computes
  // one image; the runtime runs it once per image, each on its own batch
  // handler (NACC_SPEC §6), image n's inputs and outputs at n x size bytes in
  // the caller's buffers. 1 for a Program of batch 1 (format version 4; 1 before).
  int images = 1;
  std::vector<uint32_t> commands;
  std::array<RegionDesc, limits::kNumRegions> regions{};
  std::vector<uint8_t> constants;  // contents of the kConstant region
  std::vector<IoTensor> inputs;
  std::vector<IoTensor> outputs;
  std::vector<OpRecord> ops;

  // Whether region `r` is a staging region (an input or output region that
  // holds several tensors at their offsets).
  bool staged(int r) const {
    const RegionDesc& d = regions[size_t(r)];
    return (d.kind == RegionKind::kInput || d.kind == RegionKind::kOutput) && d.io_index == -1;
  }
  // Format: docs/command_stream.md, "Program container".
  std::vector<uint8_t> serialize() const;
  // Throws InvalidArgument with a precise reason on any malformed input
  // (structure, checksum, then validate()). kCoveredByCaller skips only the
  // FNV-1a-64 pass over the bytes (byte-serial: about 30 ms for ResNet50's
  // 25 MB), for a caller that has checked a stronger digest of exactly these
  // bytes (the cache_dir container's, the EP blob's checksum); the structure
  // and validate() are checked as always.
  enum class Checksum { kVerify, kCoveredByCaller };
  static Program deserialize(const uint8_t* data, size_t size,
                             Checksum checksum = Checksum::kVerify);
  // Checks that the parts agree: the HwConfig (validate_hw_config), region
  // kinds and sizes against the constants and the I/O tensors, op word ranges
  // inside the stream, and the stream itself (decode_stream). InvalidArgument
  // "program: ..." naming the first problem.
  void validate() const;
};

// "unused", "constant", "input", "output", "scratch"; region_kind_by_name
// throws InvalidArgument for other names.
const char* region_kind_name(RegionKind kind);
RegionKind region_kind_by_name(const std::string& name);

}  // namespace nacc

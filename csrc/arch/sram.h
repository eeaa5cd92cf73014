// A core's SRAM as the hardware lays it out (NACC_SPEC §1, §3,
// docs/device_model.md §1): the NACC_MEM_RANGE base units, the buffer
// alignment, the K-area sub-buffer alignment, and the weight block framing
// of K_TRANS_LEN. The compiler's planner and emitter, the capability rules and
// the device all read these.
#pragma once

#include <cstdint>
#include <numeric>

#include "arch/hw_config.h"
#include "common/error.h"

namespace nacc {

// K-area parts (weights, bias, multipliers, shifts, LUT) each start 64-byte
// aligned (docs/device_model.md §1).
inline constexpr int64_t kKAreaAlignment = 64;
// NACC_CONV_TRANS_LEN.K_TRANS_LEN counts 16-byte bus beats (NACC_SPEC §1: 128-bit bus).
inline constexpr int64_t kBusBeatBytes = 16;
// A weight block starts with the uint32 byte length of its compressed stream
// (docs/device_model.md §4).
inline constexpr int64_t kWeightLengthBytes = 4;

// The SRAM geometry of one core.
struct SramGeometry {
  int64_t bytes = 0;      // one core's SRAM
  int64_t unit = 0;       // NACC_MEM_RANGE K/OFM/TEMP base unit: bytes / 1024
  int64_t quarter = 0;    // IFM_MEM_BASE unit: bytes / 4
  int64_t align = 0;      // buffer alignment: lcm(unit, 64)
  int64_t round(int64_t b) const { return (b + align - 1) / align * align; }
};

// InvalidArgument when sram_bytes is not a multiple of 1024 in
// [kMinSramBytes, kMaxSramBytes].
inline SramGeometry sram_geometry(int64_t sram_bytes) {
  check_arg(sram_bytes >= kMinSramBytes && sram_bytes <= kMaxSramBytes && sram_bytes % 1024 == 0,
            "sram_bytes ", sram_bytes, " must be a multiple of 1024 (NACC_MEM_RANGE bases count "
            "SRAM/1024 units) in [", kMinSramBytes, ", ", kMaxSramBytes, "]");
  SramGeometry g;
  g.bytes = sram_bytes;
  g.unit = sram_bytes / 1024;
  g.quarter = sram_bytes / 4;
  g.align = std::lcm(g.unit, kKAreaAlignment);
  return g;
}

// `b` rounded up to the K-area alignment.
constexpr int64_t align_k_area(int64_t b) {
  return (b + kKAreaAlignment - 1) / kKAreaAlignment * kKAreaAlignment;
}

}  // namespace nacc

// The hardware configuration a Program is compiled for and a device is built
// with (NACC_SPEC §1, §3, §4, §8): core count, SRAM per core, DMA port width
// and shared external bandwidth, and its validation.
#pragma once

#include <cstdint>

#include "arch/limits.h"

namespace nacc {

struct HwConfig {
  int cores = 1;                      // 1, 2, 4, 8, 16 or 32
  int64_t sram_bytes = limits::kDefaultSramBytes;  // per core
  int dma_bytes_per_cycle = 16;       // per core DMA port (128-bit bus)
  int ext_bytes_per_cycle = 64;       // external memory bandwidth shared by all cores
};

// The SRAM sizes the model accepts (NACC_MEM_RANGE bases count SRAM/1024 units).
inline constexpr int64_t kMinSramBytes = 4 * 1024;
inline constexpr int64_t kMaxSramBytes = 16 * 1024 * 1024;
// Bounds of the two bandwidth figures, bytes per cycle.
inline constexpr int kMaxBytesPerCycle = 4096;

// True for 1, 2, 4, 8, 16 and 32 (NACC_SPEC §4, BROADCAST_NUM = cores - 1).
constexpr bool valid_core_count(int cores) {
  return cores >= 1 && cores <= limits::kMaxCores && (cores & (cores - 1)) == 0;
}

// Checks a HwConfig: cores in {1, 2, 4, 8, 16, 32}, sram_bytes a multiple of
// 1024 in [4 KB, 16 MB], bytes-per-cycle figures in [1, 4096]. InvalidArgument
// naming the field otherwise.
void validate_hw_config(const HwConfig& hw);

}  // namespace nacc

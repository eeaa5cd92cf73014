// Validation of HwConfig (arch/hw_config.h).
#include "arch/hw_config.h"

#include "common/error.h"

namespace nacc {

void validate_hw_config(const HwConfig& hw) {
  check_arg(valid_core_count(hw.cores), "cores ", hw.cores,
            " must be 1, 2, 4, 8, 16 or 32 (NACC_SPEC §4)");
  check_arg(hw.sram_bytes >= kMinSramBytes && hw.sram_bytes <= kMaxSramBytes &&
                hw.sram_bytes % 1024 == 0,
            "sram_bytes ", hw.sram_bytes, " must be a multiple of 1024 in [", kMinSramBytes, ", ",
            kMaxSramBytes, "] (NACC_MEM_RANGE bases are in units of SRAM/1024)");
  check_arg(hw.dma_bytes_per_cycle >= 1 && hw.dma_bytes_per_cycle <= kMaxBytesPerCycle,
            "dma_bytes_per_cycle ", hw.dma_bytes_per_cycle, " out of range [1, ",
            kMaxBytesPerCycle, "]");
  check_arg(hw.ext_bytes_per_cycle >= 1 && hw.ext_bytes_per_cycle <= kMaxBytesPerCycle,
            "ext_bytes_per_cycle ", hw.ext_bytes_per_cycle, " out of range [1, ",
            kMaxBytesPerCycle, "]");
}

}  // namespace nacc

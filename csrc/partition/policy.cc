// The partitioning policy (policy.h).
#include "partition/policy.h"

#include "arch/sram.h"

namespace nacc::partition {

support::SupportConfig support_config(const HwConfig& hw) {
  support::SupportConfig c;
  c.sram_bytes = hw.sram_bytes;
  c.sram_alignment = sram_geometry(hw.sram_bytes).align;
  return c;
}

}  // namespace nacc::partition

// The partitioning policy both frontends apply (docs/architecture.md). One
// copy, so the TFLite delegate and the ONNX Runtime EP cannot decide or word
// the same case differently.
#pragma once

#include "arch/hw_config.h"
#include "support/sram.h"

namespace nacc::partition {

// The SRAM size and buffer alignment the capability rules judge with: those
// the compiler tiles to (arch/sram.h sram_geometry: lcm(SRAM / 1024, 64), so
// 128 bytes from 128 KB up), so a claimed op is one the compiler can place.
// InvalidArgument for an SRAM size sram_geometry refuses.
support::SupportConfig support_config(const HwConfig& hw);

}  // namespace nacc::partition

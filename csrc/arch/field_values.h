// The values of the enumerated register fields under their spec names
// (NACC_SPEC §1, §4, §6, §7): NACC_CTRL.CONV_MODE, POOL_MODE, ACT_MODE,
// DATA_FORM, NACC_ELEMENTWISE.ELEMENTWISE_MODE, NACC_BROADCAST_CTRL.BROADCAST_MODE,
// AXI_LIMITn.MAX_BEATS and VNCHWCONV_CFG.DTYPE. The register table's symbolic
// names (register_table.h) are built from these, so the two cannot disagree.
#pragma once

#include <cstdint>

namespace nacc {

// NACC_CTRL.CONV_MODE ([N] §5). Reset value 0 is convolution: a stream must
// select NONE explicitly (NACC_SPEC §1).
enum class ConvMode : uint32_t {
  CONVOLUTION = 0, MATRIX = 1, RGB_CONV = 2, DEPTHWISE = 3, FULLY_CONNECTED = 4, NONE = 5
};
// NACC_CTRL.POOL_MODE; reset value 0 is max pooling.
enum class PoolMode : uint32_t { MAX = 0, AVERAGE = 1, NONE = 2 };
// NACC_CTRL.ACT_MODE; reset value 0 is ReLU. LUT (5) is a project extension (NACC_SPEC §1).
enum class ActMode : uint32_t { RELU = 0, RELU6 = 1, TANH = 2, SIGMOID = 3, NONE = 4, LUT = 5 };
// NACC_CTRL.DATA_FORM (NACC_SPEC §9).
enum class DataForm : uint32_t { INT8 = 0, INT16 = 1, INT4 = 2 };
// NACC_ELEMENTWISE.ELEMENTWISE_MODE.
enum class ElementwiseMode : uint32_t { SUB = 1, ADD = 2, MUL_S16_S8 = 4, MUL = 8 };
// NACC_BROADCAST_CTRL.BROADCAST_MODE (NACC_SPEC §4): mode 1 splits kernels
// (output channels), mode 2 splits the output height.
// SPLIT_2D (3): project extension, docs/device_model.md §5 (channel groups x
// row pieces in one depthwise command).
enum class BroadcastMode : uint32_t { NONE = 0, SPLIT_KERNEL = 1, SPLIT_HEIGHT = 2, SPLIT_2D = 3 };
// AXI_LIMITn.MAX_BEATS ([C]).
enum class AxiBeats : uint32_t { BEATS_64B = 0, BEATS_128B = 1, BEATS_256B = 2 };
// VNCHWCONV_CFG.DTYPE (NACC_SPEC §7).
enum class VnchwconvType : uint32_t { B8 = 0, B16 = 1, B32 = 2 };

// The raw field value of an enumerated value.
template <typename E>
constexpr uint32_t value_of(E e) {
  return static_cast<uint32_t>(e);
}

}  // namespace nacc

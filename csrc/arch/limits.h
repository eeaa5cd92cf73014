// Hardware limits of the NACC compute unit (NACC_SPEC §1-§4), as named
// constants. The units validate against them, the capability rules quote them
// in their rule texts, and the compiler tiles to them.
#pragma once

#include <cstdint>

namespace nacc::limits {

// NACC_SPEC §2: NACC_KERNEL.K_SIZE_X/Y are 4-bit fields, range [1, 15].
constexpr int kMinKernel = 1;
constexpr int kMaxKernel = 15;
// NACC_SPEC §2: K_STRIDE_X/Y "only 1, 2, 3".
constexpr int kMinStride = 1;
constexpr int kMaxStride = 3;
// NACC_SPEC §2: K_DILATION_X/Y "only 1".
constexpr int kMaxDilation = 1;
// NACC_SPEC §2: NACC_PADDING.PAD_X/PAD_Y "only 0..5".
constexpr int kMaxPadding = 5;
// NACC_SPEC §2: average pooling is 2x2, stride 2 only.
constexpr int kAvgPoolKernel = 2;
constexpr int kAvgPoolStride = 2;
// NACC_SPEC §2: DW_CH_MULT in 0..3 -> depth multiplier 2^DW_CH_MULT.
constexpr int kMaxDepthMultiplierLog2 = 3;
// NACC_SPEC §1: the MAC array consumes input channels in groups of 64.
constexpr int kMacLanes = 64;
// NACC_SPEC §1: one core's local SRAM, bytes.
constexpr int64_t kDefaultSramBytes = 64 * 1024;
// NACC_SPEC §3: NACC_MEM_RANGE bases are 10-bit, so SRAM buffers start on
// multiples of SRAM size / 1024 (64 bytes in 64 KB).
constexpr int64_t kSramAlignment = kDefaultSramBytes / 1024;
// NACC_SPEC §1: feature maps are NHWC with batch N = 1 only; tensors have
// at most these four dimensions.
constexpr int kMaxTensorRank = 4;
constexpr int kMaxBatch = 1;
// NACC_SPEC §1: activation LUT entries for int8.
constexpr int kLutEntries = 256;
// NACC_SPEC §3: FM sizes are 16-bit register fields.
constexpr int kMaxFeatureMapDim = 65535;
// NACC_SPEC §4: supported core counts.
constexpr int kMaxCores = 32;
// NACC_SPEC §1: IN_ELEMENT_OFFSET1/2 and FM_OFFSET are 9-bit fields
// (signed: [-256, 255]); an int8 zero point's negation always fits.
constexpr int kOffsetBits = 9;
constexpr int32_t kMinOffset = -(1 << (kOffsetBits - 1));     // -256
constexpr int32_t kMaxOffset = (1 << (kOffsetBits - 1)) - 1;  // 255
// NACC_SPEC §1: requantization by multiplier + shift, as TFLite's
// QuantizeMultiplier produces them. The QUANT_MUL array and
// NACC_ELEMENT_QUANT1/2_MULT hold Q0.31 multipliers in [0, 2^31) (2^31 is 1.0);
// the QUANT_SHIFT array and NACC_ELEMENT_QUANT1/2_SHIFT hold shifts in
// [-31, 31] (negative: right shift).
constexpr int kMultiplierBits = 31;
constexpr int32_t kMinMultiplier = 0;
constexpr int32_t kMaxMultiplier = static_cast<int32_t>((int64_t{1} << kMultiplierBits) - 1);
constexpr int kMinShift = -31;
constexpr int kMaxShift = 31;
// The q7 RGB convolution (NACC_CTRL.CONV_MODE = RGB_CONV, docs/device_model.md
// §4): CMSIS-NN's arm_convolve_HWC_q7_RGB takes exactly 3 input channels; its
// BIAS_SHIFT / OUT_SHIFT shift a 32-bit accumulator.
constexpr int kRgbChannels = 3;
constexpr int kMaxQ7Shift = 31;
// The q7 Tanh / Sigmoid: NACC_ACT_PARA.ACT_INT_W integer bits of the q7
// input, at most 3 (the table's input is q3.4).
constexpr int kMaxQ7IntWidth = 3;
// 16-bit feature maps (NACC_CTRL.DATA_FORM = 01, NACC_SPEC §9): int16
// elements, 32 lanes of int16 x int8 products, 8-byte bias entries whose
// values fit 40 bits, accumulators of 48 bits.
constexpr int kMacLanes16 = 32;
constexpr int kBias16Bits = 40;
constexpr int kAcc16Bits = 48;
// NACC_ACT_PARA.MAC_FP32 (project extension, docs/device_model.md §4):
// ONNX Runtime's float32 convolution. Its K blocks are 2^KBLOCK_LOG2 products
// (NACC_FP32_KBLOCK, 4-bit fields: 1 .. 2^15), the tail split a 24-bit
// pixel index; the unit runs 16 float32 fused multiply-add lanes per core,
// one per output channel (docs/performance_model.md), 4 float32 parameters
// per output channel.
constexpr int kMaxKblockLog2 = 15;
constexpr int kKblockSplitBits = 24;
constexpr int kMacFp32Lanes = 16;
constexpr int kMacFp32EntryFloats = 4;
// The element-wise unit's per-input shifts and ADD/SUB's output shift apply
// multipliers < 1 (TFLite's ...SmallerThanOneExp): right shifts only,
// [kMinShift, kMaxSmallerThanOneShift].
constexpr int kMaxSmallerThanOneShift = 0;
// NACC_SPEC §1: NACC_ELEMENTWISE.LEFT_SHIFT is an 8-bit field. The model
// accepts [0, 21]: the shifts for which two (int8 + 9-bit offset) << shift
// terms, each scaled by a multiplier < 1, cannot overflow the int32 sum
// (384 * 2^21 * 2 < 2^31). TFLite's int8 ADD/SUB use 20.
constexpr int kMaxElementwiseLeftShift = 21;

// NACC_SPEC §7 (scatter_vnchwconv, seed [V]). The unified buffer (UB) is
// addressed in 32-byte blocks; a vector address register VA0..VA7 is 128 bits
// holding 8 block pointers, so each pointer is 16 bits and counts 32-byte
// blocks: a block address is a multiple of 32 below 2^16 * 32 bytes.
constexpr int kUbBlockBytes = 32;
constexpr int kUbBlockPointerBits = 16;
constexpr int64_t kUbMaxBlockAddress =
    ((int64_t{1} << kUbBlockPointerBits) - 1) * kUbBlockBytes;
// One operand is a register pair (VAn, VAn+1): 16 block pointers, 512 bytes.
constexpr int kVnchwBlocksPerOperand = 16;
// `repeat` is uint8_t, [0, 255]; strides are uint16_t, [0, 65535] blocks.
constexpr int kVnchwMaxRepeat = 255;
constexpr int kVnchwMaxStride = 65535;
// C0 of NC1HWC0: 32 for 8-bit data, 16 for 16- and 32-bit data.
constexpr int kC0For8Bit = 32;
constexpr int kC0For16And32Bit = 16;

// NACC_SPEC §6: addresses in a command stream are offsets into 8 numbered
// regions; region bases are 44-bit device addresses ([D]), one set of 8 per
// batch handler, up to 12 batch handlers.
constexpr int kNumRegions = 8;
constexpr int kNumBatchHandlers = 12;
// NACC_SPEC §6, the project's region-address encoding (docs/command_stream.md
// §4): region number in bits 31..29, byte offset in bits 28..0, so one region
// spans at most 2^29 bytes (512 MB): every feature map, the scratch tensors of
// a Program and its constants must each fit one region.
constexpr int kRegionOffsetBits = 29;
constexpr int64_t kMaxRegionBytes = int64_t{1} << kRegionOffsetBits;
// docs/command_stream.md §9: strings in the Program container (tensor and op
// names) are u32-length-prefixed and at most this many bytes.
constexpr int kMaxProgramStringBytes = 65535;
constexpr int kDeviceAddressBits = 44;
// NACC_SPEC §6 ([D]): the instruction (command stream) address is 4 KB aligned.
constexpr int kInstructionAlignment = 4096;

}  // namespace nacc::limits

// The NACC register map as one constexpr table (NACC_SPEC §5, §6): every
// register of the three banks with its fields. `Reg` enumerates the registers
// in table order; kRegisters[int(r)] describes r. Seeds: [N] 000 §5 (compute
// bank), [C] 002 (command processor), [D] 003 (batch handlers).
#pragma once

#include <cstdint>
#include <iterator>

#include "arch/field_values.h"
#include "arch/limits.h"
#include "arch/register_desc.h"

namespace nacc {
namespace regtable {

constexpr Access RW = Access::kRW;
constexpr Access RO = Access::kRO;
constexpr Access W1C = Access::kW1C;
constexpr Access WO = Access::kWO;

// ---------------------------------------------------------------------------
// Symbolic field values.

#define NACC_V(E, NAME) {value_of(E::NAME), #NAME}
inline constexpr EnumName kConvModes[] = {
    NACC_V(ConvMode, CONVOLUTION), NACC_V(ConvMode, MATRIX),          NACC_V(ConvMode, RGB_CONV),
    NACC_V(ConvMode, DEPTHWISE),   NACC_V(ConvMode, FULLY_CONNECTED), NACC_V(ConvMode, NONE)};
inline constexpr EnumName kPoolModes[] = {NACC_V(PoolMode, MAX), NACC_V(PoolMode, AVERAGE),
                                          NACC_V(PoolMode, NONE)};
// LUT is a project extension (NACC_SPEC §1).
inline constexpr EnumName kActModes[] = {NACC_V(ActMode, RELU), NACC_V(ActMode, RELU6),
                                         NACC_V(ActMode, TANH), NACC_V(ActMode, SIGMOID),
                                         NACC_V(ActMode, NONE), NACC_V(ActMode, LUT)};
inline constexpr EnumName kDataForms[] = {NACC_V(DataForm, INT8), NACC_V(DataForm, INT16),
                                          NACC_V(DataForm, INT4)};
inline constexpr EnumName kElementwiseModes[] = {
    NACC_V(ElementwiseMode, SUB), NACC_V(ElementwiseMode, ADD),
    NACC_V(ElementwiseMode, MUL_S16_S8), NACC_V(ElementwiseMode, MUL)};
inline constexpr EnumName kBroadcastModes[] = {NACC_V(BroadcastMode, NONE),
                                               NACC_V(BroadcastMode, SPLIT_KERNEL),
                                               NACC_V(BroadcastMode, SPLIT_HEIGHT),
                                               NACC_V(BroadcastMode, SPLIT_2D)};
inline constexpr EnumName kAxiBeats[] = {{value_of(AxiBeats::BEATS_64B), "64B"},
                                         {value_of(AxiBeats::BEATS_128B), "128B"},
                                         {value_of(AxiBeats::BEATS_256B), "256B"}};
inline constexpr EnumName kVnchwconvTypes[] = {NACC_V(VnchwconvType, B8),
                                               NACC_V(VnchwconvType, B16),
                                               NACC_V(VnchwconvType, B32)};
#undef NACC_V

// ---------------------------------------------------------------------------
// NACC compute bank, 0x0000-0x00FC: [N] §5, field by field.

inline constexpr FieldDesc kF_NACC_CTRL[] = {
    rw_enum("CONV_MODE", 3, 0, 0, kConvModes, "MAC unit mode; 0 is convolution, NONE is 5"),
    rw_enum("POOL_MODE", 7, 4, 0, kPoolModes, "pooling mode; 0 is max pool, NONE is 2"),
    rw_enum("ACT_MODE", 11, 8, 0, kActModes,
            "activation; 0 is ReLU, NONE is 4; LUT (5) is a project extension (NACC_SPEC §1)"),
    rw("START", 12, 12, 0,
       "1: start the configured operation (register-driven use); command streams keep it 0 "
       "and start kernels with NPU_OP_<KERNEL>"),
    rw("QUANT_EN", 13, 13, 0, "1: requantize the accumulators (multiplier + shift)"),
    rw("BIAS_EN", 14, 14, 0, "1: add the 32-bit bias"),
    rw("FM_UPD", 15, 15, 0, "1: (re)load the feature map for this operation"),
    rw("K_UPD", 16, 16, 0, "1: (re)load the kernel for this operation"),
    rw("IM2COL_EN", 17, 17, 0, "1: im2col mode"),
    rw("ELEMENT_EN", 18, 18, 0, "1: element-wise mode"),
    rw("ELEMENT_INPUT_QUANT_EN", 19, 19, 0, "1: quantize the element-wise inputs"),
    rw_enum("DATA_FORM", 21, 20, 0, kDataForms,
            "data format: 8-bit; 4-bit weights (int8 maps, int4 weights two per byte, element 2i "
            "in the low nibble); 16-bit maps (int16 elements, convolution and depthwise)"),
    rw("CLK_BYPASS", 27, 22, 0,
       "clock-gating bypass bits: 0x1 quantization, 0x2 accumulate-add, 0x4 pooling, "
       "0x8 depthwise, 0x10 top level; no effect in the model"),
};
inline constexpr FieldDesc kF_NACC_KERNEL[] = {
    rw("K_SIZE_X", 3, 0, 0, "kernel width, [1, 15]"),
    rw("K_SIZE_Y", 7, 4, 0, "kernel height, [1, 15]"),
    rw("K_SIZE_XY", 15, 8, 0, "K_SIZE_X * K_SIZE_Y - 1"),
    rw("K_STRIDE_X", 19, 16, 1, "stride in x, 1..3"),
    rw("K_STRIDE_Y", 23, 20, 1, "stride in y, 1..3"),
    rw("K_DILATION_X", 27, 24, 1, "dilation in x, only 1"),
    rw("K_DILATION_Y", 31, 28, 1, "dilation in y, only 1"),
};
inline constexpr FieldDesc kF_NACC_IN_FM[] = {
    rw("IN_FM_WIDTH", 15, 0, 0, "input feature map width"),
    rw("IN_FM_HEIGHT", 31, 16, 0, "input feature map height"),
};
inline constexpr FieldDesc kF_NACC_OUT_FM[] = {
    rw("OUT_FM_WIDTH", 15, 0, 0, "output feature map width"),
    rw("OUT_FM_HEIGHT", 31, 16, 0, "output feature map height"),
};
inline constexpr FieldDesc kF_NACC_PADDING[] = {
    rw("PAD_X", 3, 0, 0, "padding in x, 0..5"),
    rw("PAD_Y", 7, 4, 0, "padding in y, 0..5"),
};
inline constexpr FieldDesc kF_NACC_INT_EN[] = {
    rw("BUS_WR_ERR_INTR_EN", 0, 0, 0, "enable the bus write error interrupt"),
    rw("BUS_RD_ERR_INTR_EN", 1, 1, 0, "enable the bus read error interrupt"),
    rw("FULL_TRANS_DONE_INTR_EN", 2, 2, 0, "enable the transfer-done interrupt"),
};
inline constexpr FieldDesc kF_NACC_INT_STATUS[] = {
    field("BUS_WR_ERR_INTR", 0, 0, W1C, 0, "bus write error (an access outside a region's memory)"),
    field("BUS_RD_ERR_INTR", 1, 1, W1C, 0, "bus read error (an access outside a region's memory)"),
    field("FULL_TRANS_DONE_INTR", 2, 2, W1C, 0,
          "transfer done; in command-stream mode raised by NPU_OP_STOP"),
};
inline constexpr FieldDesc kF_NACC_ELEMENTWISE[] = {
    rw_enum("ELEMENTWISE_MODE", 3, 0, 0, kElementwiseModes, "element-wise operation"),
    rw_signed("IN_ELEMENT_OFFSET1", 12, 4, "input 1 offset (9-bit signed)"),
    rw_signed("IN_ELEMENT_OFFSET2", 21, 13, "input 2 offset (9-bit signed)"),
    rw("LEFT_SHIFT", 29, 22, 0, "left shift applied to both inputs"),
};
inline constexpr FieldDesc kF_NACC_QUANT_MUL_DMA_ADDR[] = {
    rw("QUANT_MUL_DMA_ADDR", 31, 0, 0, "requantization multipliers (int32 per channel)"),
};
inline constexpr FieldDesc kF_NACC_QUANT_SHIFT_DMA_ADDR[] = {
    rw("QUANT_SHIFT_DMA_ADDR", 31, 0, 0, "requantization shifts (int32 per channel)"),
};
inline constexpr FieldDesc kF_NACC_ACT_MAX[] = {
    rw_signed("ACT_MAX", 31, 0, "activation clamp maximum"),
};
inline constexpr FieldDesc kF_NACC_ACT_MIN[] = {
    rw_signed("ACT_MIN", 31, 0, "activation clamp minimum"),
};
inline constexpr FieldDesc kF_NACC_MATRIX_A[] = {
    rw("MATRIX_A_XSIZE", 15, 0, 0, "matrix A size in x"),
    rw("MATRIX_A_YSIZE", 31, 16, 0, "matrix A size in y"),
};
inline constexpr FieldDesc kF_NACC_MATRIX_B[] = {
    rw("MATRIX_B_XSIZE", 15, 0, 0, "matrix B size in x"),
    rw("MATRIX_B_YSIZE", 31, 16, 0, "matrix B size in y"),
};
inline constexpr FieldDesc kF_NACC_ACT_PARA[] = {
    rw("ACT_INT_W", 1, 0, 0,
       "integer bits of the q7 Tanh/Sigmoid input (q(w).(7-w); the table reads x >> (3 - w))"),
    rw("QUANT_REAL_SCALE", 2, 2, 0,
       "project extension: 1 = QUANT_MUL_DMA_ADDR holds float64 scales and the output stage "
       "rounds acc * scale (TFLite's reference FULLY_CONNECTED); QUANT_SHIFT unused"),
    rw("QUANT_FP32_SCALE", 3, 3, 0,
       "project extension: 1 = QUANT_MUL_DMA_ADDR holds float32 scales and the output stage "
       "rounds float(acc) * scale half to even (ONNX Runtime's QLinearConv / QLinearMatMul); "
       "MAC units (CONV, DW_CONV, FULLY_CONNECTED, MATMUL) only, not with QUANT_REAL_SCALE; "
       "QUANT_SHIFT unused"),
    rw("ELEMENT_FP32", 5, 4, 0,
       "project extension: NPU_OP_ELEMENTWISE in float32 (ONNX Runtime's CPU EP): 0 = off "
       "(fixed point), 1 = QLINEAR (QLinearAdd's fused multiply-adds / QLinearMul), 2 = DEQUANTIZE "
       "(DequantizeLinear, the float op, QuantizeLinear); QUANT_MUL_DMA_ADDR holds 3 float32"),
    rw("U8_DOMAIN", 6, 6, 0,
       "project extension: with ELEMENT_FP32 or POOL_FP32, the float32 arithmetic reads each "
       "stored int8 byte as the uint8 value byte + 128 and its zero-point registers as uint8 "
       "zero points (ONNX Runtime's U8 kernels); the output is stored as q - 128"),
    rw("POOL_FP32", 7, 7, 0,
       "project extension: NPU_OP_POOL average in float32 (ONNX Runtime's QLinearAveragePool); "
       "QUANT_EN = 1 and QUANT_MUL_DMA_ADDR holds 2 float32 (input scale, output scale)"),
    rw("POOL_FP32_MODE", 9, 8, 0,
       "project extension, with POOL_FP32 = 1: 0 = QLINEAR (QLinearAveragePool: round(y / "
       "output scale + output zero point)), 1 = QUANTIZE_ROWS (DequantizeLinear, ONNX Runtime's "
       "float NCHWc AveragePool summing each window row by row, QuantizeLinear: round(y / output "
       "scale) + output zero point), 2 = QUANTIZE_COLUMNS (the same with MLAS's NCHW vector "
       "kernel: each window column summed first, then the column sums)"),
    rw("QUANT_MUL32", 10, 10, 0,
       "project extension, NPU_OP_DW_CONV with DATA_FORM = INT16 only: 1 = the output stage is "
       "the 32-bit MultiplyByQuantizedMultiplier of QUANT_MUL / QUANT_SHIFT on the accumulator, "
       "which must fit int32 (TFLite's int16 MEAN, AVERAGE_POOL_2D, ReLU rescale and "
       "requantize), instead of the 16x8 stage with the multiplier reduced to 16 bits"),
    rw("MAC_FP32", 11, 11, 0,
       "project extension, NPU_OP_CONV (CONVOLUTION), NPU_OP_DW_CONV and NPU_OP_FULLY_CONNECTED "
       "with DATA_FORM = INT8 only: 1 = ONNX Runtime's unfused float32 Conv / depthwise Conv / "
       "Gemm: x and w dequantized to float32, the sum over K in ONNX order (input channel, "
       "kernel row, kernel column) as MAC_FP32_ORDER says, the float32 bias added, "
       "round(sum / s_y) + zero point; QUANT_MUL_DMA_ADDR holds 4 float32 per output channel "
       "{s_x, s_w, bias, s_y}; BIAS_EN = 0, QUANT_SHIFT unused"),
    rw("MAC_FP32_ORDER", 13, 12, 0,
       "project extension, with MAC_FP32 = 1: the float32 sum's order over K: 0 = FMA_BLOCKS "
       "(blocks of fused multiply-adds, NACC_FP32_KBLOCK; NPU_OP_CONV, NPU_OP_DW_CONV), "
       "1 = GROUPS4 (products rounded, added in groups of 4 onto the sum: MLAS's one-row "
       "kernel; NPU_OP_DW_CONV with the bias last, NPU_OP_FULLY_CONNECTED with the bias first), "
       "2 = LANES8 (NPU_OP_FULLY_CONNECTED: 8 lanes k mod 8 and a reduction tree by the output "
       "channel: KBLOCK_SPLIT the first channel of the tail, KBLOCK_TAIL_LOG2 its length, "
       "0..3); 3 reserved"),
};
inline constexpr FieldDesc kF_NACC_IN_ACT_DMA_ADDR[] = {
    rw("IN_ACT_DMA_ADDR", 31, 0, 0, "activation data (the 256-byte LUT, NACC_SPEC §1)"),
};
inline constexpr FieldDesc kF_NACC_BIAS_DMA_ADDR[] = {
    rw("BIAS_DMA_ADDR", 31, 0, 0, "bias data (int32 per channel)"),
};
inline constexpr FieldDesc kF_NACC_IN_K_DMA_ADDR[] = {
    rw("IN_K_DMA_ADDR", 31, 0, 0, "kernel (weight) data"),
};
inline constexpr FieldDesc kF_NACC_IN_FM_DMA_ADDR[] = {
    rw("IN_FM_DMA_ADDR", 31, 0, 0, "input feature map data"),
};
inline constexpr FieldDesc kF_NACC_OUT_DMA_ADDR[] = {
    rw("OUT_DMA_ADDR", 31, 0, 0, "output feature map data"),
};
inline constexpr FieldDesc kF_NACC_FM_OFFSET[] = {
    rw_signed("IN_FM_OFFSET", 8, 0, "input feature map offset (9-bit signed)"),
    rw_signed("OUT_FM_OFFSET", 17, 9, "output feature map offset (9-bit signed)"),
};
inline constexpr FieldDesc kF_NACC_DMA_OFFSET[] = {
    rw("IN_DMA_OFFSET", 31, 0, 0, "input DMA address offset per batch"),
};
inline constexpr FieldDesc kF_NACC_IM2COL_TRANS_LEN[] = {
    rw("IM2COL_IN_TRANS_LEN", 15, 0, 0, "im2col input DMA transfer length"),
    rw("IM2COL_OUT_TRANS_LEN", 31, 16, 0, "im2col output DMA transfer length"),
};
inline constexpr FieldDesc kF_NACC_CONV_TRANS_LEN[] = {
    rw("K_TRANS_LEN", 15, 0, 0, "kernel DMA transfer length"),
    rw("FM_TRANS_LEN", 31, 16, 0, "input feature map DMA transfer length"),
};
inline constexpr FieldDesc kF_NACC_DMA_OUT_TRANS_LEN[] = {
    rw("DMA_OUT_TRANS_LEN", 15, 0, 0, "output feature map DMA transfer length"),
};
inline constexpr FieldDesc kF_NACC_FULL_CONV_PARA[] = {
    rw("FULL_KER_SIZE", 7, 0, 0, "fully connected: in_fm_width * ceil(in_fm_ch / 64) - 1"),
    rw("BIAS_SHIFT", 15, 8, 0, "RGB convolution: left shift of the q7 bias, [0, 31]"),
    rw("OUT_SHIFT", 23, 16, 0,
       "RGB convolution: rounding right shift of the accumulator, [0, 31]"),
};
inline constexpr FieldDesc kF_NACC_DMA_PARA1[] = {
    rw("IFM_TRANS_END_SIZE", 15, 0, 0, "input feature map transfer batch size"),
    rw("K_TRANS_END_SIZE", 31, 16, 0, "kernel transfer batch size"),
};
inline constexpr FieldDesc kF_NACC_DMA_PARA2[] = {
    rw("FM_TRANS_OFFSET", 31, 0, 0, "input feature map offset (non-contiguous addresses)"),
};
inline constexpr FieldDesc kF_NACC_DMA_PARA3[] = {
    rw("OFM_TRANS_END_SIZE", 15, 0, 0, "output feature map transfer batch size"),
    rw("DW_CH_MULT", 19, 16, 0,
       "depthwise channel multiplier, only 0..3: depth multiplier 2^DW_CH_MULT (NACC_SPEC §2)"),
};
inline constexpr FieldDesc kF_NACC_DMA_PARAA[] = {
    rw("K_TRANS_OFFSET", 31, 0, 0,
       "kernel data offset (fully connected, element-wise, matrix modes)"),
};
inline constexpr FieldDesc kF_NACC_BATCH_SIZE[] = {
    rw("IN_CH_BATCH_SIZE", 7, 0, 0, "input channel batch size"),
    rw("K_BATCH_SIZE", 15, 8, 0, "kernel batch size"),
    rw("K_ONE_BATCH_SIZE", 23, 16, 0, "kernel size transferred per batch"),
    rw("TEMP_RES_BATCH_SIZE", 27, 24, 0, "temporary result batch size"),
};
// [N] labels are garbled: bits 1..0 are "IFM_MEM_BASE" described as an input
// channel batch size, bits 11..2 "K_BATCH_SIZE" described as the kernel base.
// Project reading (NACC_SPEC §3): three 10-bit bases in SRAM/1024 units (64 B
// of 64 KB), and the 2-bit IFM base in SRAM/4 units (16 KB of 64 KB).
inline constexpr FieldDesc kF_NACC_MEM_RANGE[] = {
    rw("IFM_MEM_BASE", 1, 0, 0,
       "IFM buffer base in units of SRAM/4 (16 KB of 64 KB); [N] describes it as a channel "
       "batch size (garbled)"),
    rw("K_MEM_BASE", 11, 2, 0,
       "kernel buffer base in units of SRAM/1024 (64 B of 64 KB); labelled K_BATCH_SIZE in [N] "
       "(garbled)"),
    rw("OFM_MEM_BASE", 21, 12, 0, "OFM buffer base in units of SRAM/1024 (64 B of 64 KB)"),
    rw("TEMP_MEM_BASE", 31, 22, 0,
       "temporary-result buffer base in units of SRAM/1024 (64 B of 64 KB)"),
};
inline constexpr FieldDesc kF_NACC_DMA_OFFSET1[] = {
    rw("IN_DMA_ROW_OFFSET", 31, 0, 0, "input feature map row offset"),
};
inline constexpr FieldDesc kF_NACC_DMA_OFFSET2[] = {
    rw("OUT_DMA_OFFSET", 31, 0, 0, "output feature map offset"),
};
inline constexpr FieldDesc kF_NACC_IM2COL_DMA_ADDR[] = {
    rw("IM2COL_DMA_ADDR", 31, 0, 0, "im2col data"),
};
inline constexpr FieldDesc kF_NACC_FM_CH[] = {
    rw("IN_FM_CH", 15, 0, 0, "input feature map channels"),
    rw("OUT_FM_CH", 31, 16, 0, "output feature map channels"),
};
inline constexpr FieldDesc kF_NACC_IN_FM_SPLIT[] = {
    rw("IN_FM_SPLIT_WIDTH", 7, 0, 0, "input split width"),
    rw("IN_FM_SPLIT_LEFT_WIDTH", 15, 8, 0, "input split left width"),
    rw("IN_FM_SPLIT_LEFT_LEN", 31, 16, 0, "input split left length"),
};
inline constexpr FieldDesc kF_NACC_OUT_FM_SPLIT[] = {
    rw("OUT_FM_SPLIT_SIZE", 7, 0, 0, "output split size"),
    rw("OUT_FM_SPLIT_WIDTH", 15, 8, 0, "output split width"),
    rw("OUT_FM_SPLIT_LEFT_WIDTH", 23, 16, 0, "output split left width"),
};
inline constexpr FieldDesc kF_NACC_OUT_FM_SPLIT_LEN[] = {
    rw("OUT_FM_SPLIT_LEN", 15, 0, 0, "output split length"),
    rw("OUT_FM_SPLIT_LEFT_LEN", 31, 16, 0, "output split left length"),
};
inline constexpr FieldDesc kF_NACC_IN_FM_SPLIT_W_OFFSET[] = {
    rw_signed("IN_FM_START_SPLIT_W_OFFSET", 31, 0,
              "input first split width offset: the tile's first input column (negative in the left padding)"),
};
inline constexpr FieldDesc kF_NACC_IN_FM_SPLIT_W_OFFSET1[] = {
    rw("IN_FM_MID_SPLIT_W_OFFSET", 31, 0, 0, "input middle split width offset"),
};
inline constexpr FieldDesc kF_NACC_IN_FM_SPLIT_H_OFFSET[] = {
    rw_signed("IN_FM_START_SPLIT_H_OFFSET", 31, 0,
              "input first split height offset: the tile's first input row (negative in the top padding)"),
};
inline constexpr FieldDesc kF_NACC_IN_FM_SPLIT_H_OFFSET1[] = {
    rw("IN_FM_MID_SPLIT_H_OV_OFFSET", 31, 0, 0, "input middle split height overflow offset"),
};
inline constexpr FieldDesc kF_NACC_IN_FM_SPLIT_H_OFFSET2[] = {
    rw("IN_FM_MID_SPLIT_H_AVG_OFFSET", 31, 0, 0, "input middle split height average offset"),
};
inline constexpr FieldDesc kF_NACC_OUT_FM_SPLIT_H_OFFSET[] = {
    rw("OUT_FM_START_SPLIT_H_OFFSET", 31, 0, 0, "output first split height offset"),
};
inline constexpr FieldDesc kF_NACC_OUT_FM_SPLIT_H_OFFSET1[] = {
    rw("OUT_FM_MID_SPLIT_H_OFFSET", 31, 0, 0, "output middle split height offset"),
};
inline constexpr FieldDesc kF_NACC_BROADCAST_CTRL[] = {
    rw_enum("BROADCAST_MODE", 1, 0, 0, kBroadcastModes,
            "multi-core mode: 1 split kernels (mode 1), 2 split height (mode 2), 3 both "
            "(project extension, depthwise)"),
    rw("BROADCAST_NUM", 7, 2, 0, "cores - 1: 0, 1, 3, 7, 15 or 31"),
    rw("SPLIT_2D_GROUPS", 13, 8, 0,
       "mode 3 (project extension): channel groups - 1; 0 in the other modes"),
    rw("SPLIT_2D_ROWS", 19, 14, 0,
       "mode 3 (project extension): row pieces - 1; 0 in the other modes"),
};
inline constexpr FieldDesc kF_NACC_BROADCAST_CTRL1[] = {
    rw("BROADCAST_OVER_EN", 31, 0, 0, "broadcast split overflow enable flags"),
};
inline constexpr FieldDesc kF_NACC_BROADCAST_DMA[] = {
    rw("IN_DMA_UNICAST_OV_OFFSET", 9, 0, 0, "input DMA unicast overflow offset"),
    rw("IN_DMA_UNICAST_AVG_OFFSET", 19, 10, 0, "input DMA unicast average offset"),
    rw("EU_BIAS_START_OFFSET", 27, 20, 0, "MAC unit bias start offset"),
};
inline constexpr FieldDesc kF_NACC_BROADCAST_SPLIT[] = {
    rw("OUT_FM_SPLIT_OV_HEIGHT", 9, 0, 0, "output split height of the last core (overflow)"),
    rw("OUT_FM_SPLIT_AVG_HEIGHT", 19, 10, 0, "output split height of the other cores (average)"),
};
inline constexpr FieldDesc kF_NACC_ELEMENT_QUANT1_MULT[] = {
    rw_signed("IN_ELEMENT_MULT1", 31, 0, "input 1 multiplier"),
};
inline constexpr FieldDesc kF_NACC_ELEMENT_QUANT1_SHIFT[] = {
    rw_signed("IN_ELEMENT_SHIFT1", 31, 0, "input 1 shift"),
};
inline constexpr FieldDesc kF_NACC_ELEMENT_QUANT2_MULT[] = {
    rw_signed("IN_ELEMENT_MULT2", 31, 0, "input 2 multiplier"),
};
inline constexpr FieldDesc kF_NACC_ELEMENT_QUANT2_SHIFT[] = {
    rw_signed("IN_ELEMENT_SHIFT2", 31, 0, "input 2 shift"),
};
// Project extension in a hole of [N]'s map (0xF8): the K blocks of
// NACC_ACT_PARA.MAC_FP32 (docs/device_model.md §4).
inline constexpr FieldDesc kF_NACC_FP32_KBLOCK[] = {
    rw("KBLOCK_LOG2", 3, 0, 0,
       "MAC_FP32: log2 of the K block (fused multiply-add chain length) of the output pixels "
       "n < KBLOCK_SPLIT, n = y * OUT_FM_WIDTH + x over the whole output; 0 without MAC_FP32"),
    rw("KBLOCK_TAIL_LOG2", 7, 4, 0,
       "MAC_FP32: log2 of the K block of the output pixels n >= KBLOCK_SPLIT (MAC_FP32_ORDER = "
       "LANES8: the tail's length, 0..3); 0 without MAC_FP32"),
    rw("KBLOCK_SPLIT", 31, 8, 0,
       "MAC_FP32: the first output pixel (row-major over the whole output) in the tail block, "
       "at most OUT_FM_WIDTH * OUT_FM_HEIGHT; 0 without MAC_FP32"),
};
inline constexpr FieldDesc kF_NACC_VERSION[] = {
    field("VERSION", 31, 0, RO, 0x00010102u,
          "[31:24] reserved, [23:16] major, [15:8] minor, [7:0] revision"),
};

// ---------------------------------------------------------------------------
// Command-processor bank, 0x1000 + [C] offset. [C] gives the offsets of CMD,
// QBASE0/1, QREAD, QSIZE, REGIONCFG, AXI_LIMIT0..3 and BASEP0..7 but no
// fields; fields, ID, BASEP8..15, the DMA_*/VNCHWCONV_* command registers and
// the PMU are the project's (flag kProjectDefined).

inline constexpr FieldDesc kF_ID[] = {
    field("ID", 31, 0, RO, 0x4E414343u, "0x4E414343, ASCII \"NACC\""),
};
inline constexpr FieldDesc kF_CMD[] = {
    field("START", 0, 0, WO, 0,
          "1: reset every stream-writable register that is not a trigger register, then run "
          "the command stream at QBASE (QSIZE bytes) with the region bases of BATCH_HANDLER"),
    field("CLEAR_IRQ", 1, 1, WO, 0, "1: clear every NACC_INT_STATUS bit"),
    rw("BATCH_HANDLER", 7, 4, 0, "batch handler (0..11) whose BATCHb_ADDR0..7 are the regions"),
};
inline constexpr FieldDesc kF_QBASE0[] = {
    rw("ADDR", 31, 12, 0,
       "command stream address bits 31..12; bits 11..0 read as 0 (4 KB aligned, [D]); "
       "view of INSTR_ADDR_L"),
};
inline constexpr FieldDesc kF_QBASE1[] = {
    rw("ADDR", 7, 0, 0,
       "command stream address bits 39..32; view of INSTR_ADDR_H (a write clears bits 43..40)"),
};
inline constexpr FieldDesc kF_QREAD[] = {
    field("OFFSET", 31, 0, RO, 0,
          "byte offset of the command being executed, from the stream start"),
};
inline constexpr FieldDesc kF_QSIZE[] = {
    rw("SIZE", 31, 0, 0, "command stream size in bytes, a multiple of 4"),
};
inline constexpr FieldDesc kF_REGIONCFG[] = {
    rw("REGION0", 1, 0, 0, "AXI_LIMIT set used by region 0"),
    rw("REGION1", 3, 2, 0, "AXI_LIMIT set used by region 1"),
    rw("REGION2", 5, 4, 0, "AXI_LIMIT set used by region 2"),
    rw("REGION3", 7, 6, 0, "AXI_LIMIT set used by region 3"),
    rw("REGION4", 9, 8, 0, "AXI_LIMIT set used by region 4"),
    rw("REGION5", 11, 10, 0, "AXI_LIMIT set used by region 5"),
    rw("REGION6", 13, 12, 0, "AXI_LIMIT set used by region 6"),
    rw("REGION7", 15, 14, 0, "AXI_LIMIT set used by region 7"),
};
inline constexpr FieldDesc kF_AXI_LIMIT[] = {
    rw_enum("MAX_BEATS", 1, 0, 0, kAxiBeats, "burst length"),
    rw("MAX_OUTSTANDING_READ_M1", 20, 16, 0, "outstanding reads - 1"),
    rw("MAX_OUTSTANDING_WRITE_M1", 28, 24, 0, "outstanding writes - 1"),
};
inline constexpr FieldDesc kF_BASEP_LO[] = {
    rw("ADDR", 31, 0, 0, "region base bits 31..0; view of BATCH0_ADDRn_L"),
};
inline constexpr FieldDesc kF_BASEP_HI[] = {
    rw("ADDR", 7, 0, 0, "region base bits 39..32; view of BATCH0_ADDRn_H (a write clears 43..40)"),
};
inline constexpr FieldDesc kF_DMA_SRC[] = {
    rw("ADDR", 31, 0, 0, "NPU_OP_DMA_START source (region address)"),
};
inline constexpr FieldDesc kF_DMA_DST[] = {
    rw("ADDR", 31, 0, 0, "NPU_OP_DMA_START destination (region address)"),
};
inline constexpr FieldDesc kF_DMA_LEN[] = {
    rw("LEN", 31, 0, 0, "NPU_OP_DMA_START length in bytes"),
};
inline constexpr FieldDesc kF_VNCHWCONV_SRC[] = {
    rw("ADDR", 31, 0, 0, "source block pointer 0 (region address)"),
};
inline constexpr FieldDesc kF_VNCHWCONV_DST[] = {
    rw("ADDR", 31, 0, 0, "destination block pointer 0 (region address)"),
};
inline constexpr FieldDesc kF_VNCHWCONV_SRC_BLOCK_STRIDE[] = {
    rw("STRIDE", 31, 0, 0, "bytes between the 16 source block pointers"),
};
inline constexpr FieldDesc kF_VNCHWCONV_DST_BLOCK_STRIDE[] = {
    rw("STRIDE", 31, 0, 0, "bytes between the 16 destination block pointers"),
};
inline constexpr FieldDesc kF_VNCHWCONV_STRIDE[] = {
    rw("SRC_STRIDE", 15, 0, 0, "[V] srcStride: source advance per repeat, 32-byte blocks"),
    rw("DST_STRIDE", 31, 16, 0, "[V] dstStride: destination advance per repeat, 32-byte blocks"),
};
inline constexpr FieldDesc kF_VNCHWCONV_CFG[] = {
    rw("REPEAT", 7, 0, 0, "[V] repeat, 0..255 (0 does nothing)"),
    rw_enum("DTYPE", 9, 8, 0, kVnchwconvTypes, "element type: b8 (C0 = 32), b16 or b32 (C0 = 16)"),
    rw("SRC_HIGH_HALF", 12, 12, 0, "[V] srcHighHalf (b8 only)"),
    rw("DST_HIGH_HALF", 13, 13, 0, "[V] dstHighHalf (b8 only)"),
    rw("REVERSE", 16, 16, 0,
       "1: NC1HWC0 -> NCHW, the same transposition with source and destination exchanged "
       "(NACC_SPEC §7)"),
};
inline constexpr FieldDesc kF_PMU_CTRL[] = {
    rw("CNT_EN", 0, 0, 1, "1: counters count (on after reset; kept across streams)"),
    field("CNT_RST", 1, 1, WO, 0, "1: zero every PMU counter"),
};
inline constexpr FieldDesc kF_PMU_LO[] = {
    field("COUNT", 31, 0, RO, 0, "counter bits 31..0"),
};
inline constexpr FieldDesc kF_PMU_HI[] = {
    field("COUNT", 31, 0, RO, 0, "counter bits 63..32"),
};
inline constexpr FieldDesc kF_PMU_CMD_COUNT[] = {
    field("COUNT", 31, 0, RO, 0, "commands executed"),
};
inline constexpr FieldDesc kF_PMU_SRAM_HIGH_WATER[] = {
    field("BYTES", 31, 0, RO, 0, "highest SRAM byte count in use on any core"),
};

// ---------------------------------------------------------------------------
// Batch-handler bank, 0x2000 + [D] offset.

inline constexpr FieldDesc kF_INSTR_ADDR_L[] = {
    rw("ADDR", 31, 12, 0, "instruction address bits 31..12; bits 11..0 read as 0 (4 KB aligned)"),
};
inline constexpr FieldDesc kF_INSTR_ADDR_H[] = {
    rw("ADDR", 11, 0, 0, "instruction address bits 43..32"),
};
inline constexpr FieldDesc kF_BATCH_ADDR_L[] = {
    rw("ADDR", 31, 0, 0, "region base bits 31..0"),
};
inline constexpr FieldDesc kF_BATCH_ADDR_H[] = {
    rw("ADDR", 11, 0, 0, "region base bits 43..32"),
};

}  // namespace regtable

// ---------------------------------------------------------------------------
// The register list. X(NAME, OFFSET, BANK, FIELDS, FLAGS, ALIAS, DESCRIPTION);
// ALIAS is NACC_NO_ALIAS or NACC_ALIAS(TARGET).

#define NACC_COMPUTE_REG(X, NAME, OFF, FLAGS, DESC) \
  X(NAME, OFF, kCompute, kF_##NAME, FLAGS, NACC_NO_ALIAS, DESC)
#define NACC_SW (::nacc::kStreamWritable)
#define NACC_SWA (::nacc::kStreamWritable | ::nacc::kRegionAddress)
#define NACC_PD (::nacc::kProjectDefined)
#define NACC_PD_SW (::nacc::kProjectDefined | ::nacc::kStreamWritable)
#define NACC_PD_SWA (::nacc::kProjectDefined | ::nacc::kStreamWritable | ::nacc::kRegionAddress)

#define NACC_BASEP_PAIR(X, N, LO, HI)                                                   \
  X(BASEP##LO, 0x1080 + 8 * N, kCommand, kF_BASEP_LO, 0, NACC_ALIAS(BATCH0_ADDR##N##_L), \
    "region " #N " base, bits 31..0 ([C] view of handler 0)")                            \
  X(BASEP##HI, 0x1084 + 8 * N, kCommand, kF_BASEP_HI, 0, NACC_ALIAS(BATCH0_ADDR##N##_H), \
    "region " #N " base, bits 39..32 ([C] view of handler 0)")

#define NACC_BATCH_PAIR(X, B, I)                                                          \
  X(BATCH##B##_ADDR##I##_L, 0x2200 + 0x40 * B + 8 * I, kBatch, kF_BATCH_ADDR_L, 0,        \
    NACC_NO_ALIAS, "batch handler " #B ", region " #I " base, bits 31..0")                \
  X(BATCH##B##_ADDR##I##_H, 0x2204 + 0x40 * B + 8 * I, kBatch, kF_BATCH_ADDR_H, 0,        \
    NACC_NO_ALIAS, "batch handler " #B ", region " #I " base, bits 43..32")
#define NACC_BATCH_HANDLER(X, B)                                                    \
  NACC_BATCH_PAIR(X, B, 0) NACC_BATCH_PAIR(X, B, 1) NACC_BATCH_PAIR(X, B, 2)        \
  NACC_BATCH_PAIR(X, B, 3) NACC_BATCH_PAIR(X, B, 4) NACC_BATCH_PAIR(X, B, 5)        \
  NACC_BATCH_PAIR(X, B, 6) NACC_BATCH_PAIR(X, B, 7)

#define NACC_REGISTER_LIST(X)                                                                  \
  NACC_COMPUTE_REG(X, NACC_CTRL, 0x00, NACC_SW, "compute mode configuration")                 \
  NACC_COMPUTE_REG(X, NACC_KERNEL, 0x04, NACC_SW, "convolution kernel size")                  \
  NACC_COMPUTE_REG(X, NACC_IN_FM, 0x08, NACC_SW, "input feature map size")                    \
  NACC_COMPUTE_REG(X, NACC_OUT_FM, 0x0C, NACC_SW, "output feature map size")                  \
  NACC_COMPUTE_REG(X, NACC_PADDING, 0x10, NACC_SW, "padding")                                 \
  NACC_COMPUTE_REG(X, NACC_INT_EN, 0x14, 0, "bus interrupt enables")                          \
  NACC_COMPUTE_REG(X, NACC_INT_STATUS, 0x18, 0, "bus interrupt status")                       \
  NACC_COMPUTE_REG(X, NACC_ELEMENTWISE, 0x1C, NACC_SW, "element-wise configuration")          \
  NACC_COMPUTE_REG(X, NACC_QUANT_MUL_DMA_ADDR, 0x20, NACC_SWA, "requantization multipliers")  \
  NACC_COMPUTE_REG(X, NACC_QUANT_SHIFT_DMA_ADDR, 0x24, NACC_SWA, "requantization shifts")     \
  NACC_COMPUTE_REG(X, NACC_ACT_MAX, 0x28, NACC_SW, "activation maximum")                      \
  NACC_COMPUTE_REG(X, NACC_ACT_MIN, 0x2C, NACC_SW, "activation minimum")                      \
  NACC_COMPUTE_REG(X, NACC_MATRIX_A, 0x30, NACC_SW, "matrix A size")                          \
  NACC_COMPUTE_REG(X, NACC_MATRIX_B, 0x34, NACC_SW, "matrix B size")                          \
  NACC_COMPUTE_REG(X, NACC_ACT_PARA, 0x38, NACC_SW, "activation parameter")                   \
  NACC_COMPUTE_REG(X, NACC_IN_ACT_DMA_ADDR, 0x3C, NACC_SWA, "activation data source")         \
  NACC_COMPUTE_REG(X, NACC_BIAS_DMA_ADDR, 0x40, NACC_SWA, "bias data source")                 \
  NACC_COMPUTE_REG(X, NACC_IN_K_DMA_ADDR, 0x44, NACC_SWA, "kernel data source")               \
  NACC_COMPUTE_REG(X, NACC_IN_FM_DMA_ADDR, 0x48, NACC_SWA, "input feature map source")        \
  NACC_COMPUTE_REG(X, NACC_OUT_DMA_ADDR, 0x4C, NACC_SWA, "output feature map destination")    \
  NACC_COMPUTE_REG(X, NACC_FM_OFFSET, 0x64, NACC_SW, "feature map offsets (zero points)")     \
  NACC_COMPUTE_REG(X, NACC_DMA_OFFSET, 0x68, NACC_SW, "input DMA offset per batch")           \
  NACC_COMPUTE_REG(X, NACC_IM2COL_TRANS_LEN, 0x6C, NACC_SW, "im2col DMA transfer lengths")    \
  NACC_COMPUTE_REG(X, NACC_CONV_TRANS_LEN, 0x70, NACC_SW, "convolution DMA transfer lengths") \
  NACC_COMPUTE_REG(X, NACC_DMA_OUT_TRANS_LEN, 0x74, NACC_SW, "output DMA transfer length")    \
  NACC_COMPUTE_REG(X, NACC_FULL_CONV_PARA, 0x78, NACC_SW, "fully connected parameters")       \
  NACC_COMPUTE_REG(X, NACC_DMA_PARA1, 0x7C, NACC_SW, "DMA transfer batch sizes")              \
  NACC_COMPUTE_REG(X, NACC_DMA_PARA2, 0x80, NACC_SW, "input feature map offset")              \
  NACC_COMPUTE_REG(X, NACC_DMA_PARA3, 0x84, NACC_SW, "DMA transfer parameters")               \
  NACC_COMPUTE_REG(X, NACC_DMA_PARAA, 0x88, NACC_SW, "kernel data offset")                    \
  NACC_COMPUTE_REG(X, NACC_BATCH_SIZE, 0x8C, NACC_SW, "batch parameters")                     \
  NACC_COMPUTE_REG(X, NACC_MEM_RANGE, 0x90, NACC_SW, "SRAM buffer bases")                     \
  NACC_COMPUTE_REG(X, NACC_DMA_OFFSET1, 0x94, NACC_SW, "input feature map row offset")        \
  NACC_COMPUTE_REG(X, NACC_DMA_OFFSET2, 0x98, NACC_SW, "output feature map offset")           \
  NACC_COMPUTE_REG(X, NACC_IM2COL_DMA_ADDR, 0xA4, NACC_SWA, "im2col data source")             \
  NACC_COMPUTE_REG(X, NACC_FM_CH, 0xAC, NACC_SW, "feature map channels")                      \
  NACC_COMPUTE_REG(X, NACC_IN_FM_SPLIT, 0xB0, NACC_SW, "input split size")                    \
  NACC_COMPUTE_REG(X, NACC_OUT_FM_SPLIT, 0xB4, NACC_SW, "output split size")                  \
  NACC_COMPUTE_REG(X, NACC_OUT_FM_SPLIT_LEN, 0xB8, NACC_SW, "output split length")            \
  NACC_COMPUTE_REG(X, NACC_IN_FM_SPLIT_W_OFFSET, 0xBC, NACC_SW, "input split width offset")   \
  NACC_COMPUTE_REG(X, NACC_IN_FM_SPLIT_W_OFFSET1, 0xC0, NACC_SW, "input split width offset 1") \
  NACC_COMPUTE_REG(X, NACC_IN_FM_SPLIT_H_OFFSET, 0xC4, NACC_SW, "input split height offset")  \
  NACC_COMPUTE_REG(X, NACC_IN_FM_SPLIT_H_OFFSET1, 0xC8, NACC_SW,                              \
                   "input split height overflow offset 1")                                    \
  NACC_COMPUTE_REG(X, NACC_IN_FM_SPLIT_H_OFFSET2, 0xCC, NACC_SW,                              \
                   "input split height average offset 2")                                     \
  NACC_COMPUTE_REG(X, NACC_OUT_FM_SPLIT_H_OFFSET, 0xD0, NACC_SW, "output split height offset") \
  NACC_COMPUTE_REG(X, NACC_OUT_FM_SPLIT_H_OFFSET1, 0xD4, NACC_SW,                             \
                   "output split height offset 1")                                            \
  NACC_COMPUTE_REG(X, NACC_BROADCAST_CTRL, 0xD8, NACC_SW, "broadcast (multi-core) mode")      \
  NACC_COMPUTE_REG(X, NACC_BROADCAST_CTRL1, 0xDC, NACC_SW, "broadcast mode 1")                \
  NACC_COMPUTE_REG(X, NACC_BROADCAST_DMA, 0xE0, NACC_SW, "broadcast DMA offsets")             \
  NACC_COMPUTE_REG(X, NACC_BROADCAST_SPLIT, 0xE4, NACC_SW, "broadcast split heights")         \
  NACC_COMPUTE_REG(X, NACC_ELEMENT_QUANT1_MULT, 0xE8, NACC_SW, "element-wise input 1 multiplier") \
  NACC_COMPUTE_REG(X, NACC_ELEMENT_QUANT1_SHIFT, 0xEC, NACC_SW, "element-wise input 1 shift") \
  NACC_COMPUTE_REG(X, NACC_ELEMENT_QUANT2_MULT, 0xF0, NACC_SW, "element-wise input 2 multiplier") \
  NACC_COMPUTE_REG(X, NACC_ELEMENT_QUANT2_SHIFT, 0xF4, NACC_SW, "element-wise input 2 shift") \
  NACC_COMPUTE_REG(X, NACC_FP32_KBLOCK, 0xF8, NACC_PD_SW,                                      \
                   "float32 MAC K blocks (project extension)")                                \
  NACC_COMPUTE_REG(X, NACC_VERSION, 0xFC, 0, "IP version")                                    \
  X(ID, 0x1000, kCommand, kF_ID, NACC_PD, NACC_NO_ALIAS, "product identification")            \
  X(CMD, 0x1008, kCommand, kF_CMD, 0, NACC_NO_ALIAS, "start the command stream, clear interrupts") \
  X(QBASE0, 0x1010, kCommand, kF_QBASE0, 0, NACC_ALIAS(INSTR_ADDR_L),                         \
    "command stream address bits 31..0")                                                      \
  X(QBASE1, 0x1014, kCommand, kF_QBASE1, 0, NACC_ALIAS(INSTR_ADDR_H),                         \
    "command stream address bits 39..32")                                                     \
  X(QREAD, 0x1018, kCommand, kF_QREAD, 0, NACC_NO_ALIAS, "current command offset (debug)")    \
  X(QSIZE, 0x1020, kCommand, kF_QSIZE, 0, NACC_NO_ALIAS, "command stream size in bytes")      \
  X(REGIONCFG, 0x103C, kCommand, kF_REGIONCFG, 0, NACC_NO_ALIAS, "AXI limit set per region")  \
  X(AXI_LIMIT0, 0x1040, kCommand, kF_AXI_LIMIT, 0, NACC_NO_ALIAS, "AXI limits, set 0")        \
  X(AXI_LIMIT1, 0x1044, kCommand, kF_AXI_LIMIT, 0, NACC_NO_ALIAS, "AXI limits, set 1")        \
  X(AXI_LIMIT2, 0x1048, kCommand, kF_AXI_LIMIT, 0, NACC_NO_ALIAS, "AXI limits, set 2")        \
  X(AXI_LIMIT3, 0x104C, kCommand, kF_AXI_LIMIT, 0, NACC_NO_ALIAS, "AXI limits, set 3")        \
  NACC_BASEP_PAIR(X, 0, 0, 1)                                                                 \
  NACC_BASEP_PAIR(X, 1, 2, 3)                                                                 \
  NACC_BASEP_PAIR(X, 2, 4, 5)                                                                 \
  NACC_BASEP_PAIR(X, 3, 6, 7)                                                                 \
  NACC_BASEP_PAIR(X, 4, 8, 9)                                                                 \
  NACC_BASEP_PAIR(X, 5, 10, 11)                                                               \
  NACC_BASEP_PAIR(X, 6, 12, 13)                                                               \
  NACC_BASEP_PAIR(X, 7, 14, 15)                                                               \
  X(DMA_SRC, 0x1100, kCommand, kF_DMA_SRC, NACC_PD_SWA, NACC_NO_ALIAS, "DMA copy source")     \
  X(DMA_DST, 0x1104, kCommand, kF_DMA_DST, NACC_PD_SWA, NACC_NO_ALIAS, "DMA copy destination") \
  X(DMA_LEN, 0x1108, kCommand, kF_DMA_LEN, NACC_PD_SW, NACC_NO_ALIAS, "DMA copy length")      \
  X(VNCHWCONV_SRC, 0x1110, kCommand, kF_VNCHWCONV_SRC, NACC_PD_SWA, NACC_NO_ALIAS,            \
    "layout conversion source")                                                               \
  X(VNCHWCONV_DST, 0x1114, kCommand, kF_VNCHWCONV_DST, NACC_PD_SWA, NACC_NO_ALIAS,            \
    "layout conversion destination")                                                          \
  X(VNCHWCONV_SRC_BLOCK_STRIDE, 0x1118, kCommand, kF_VNCHWCONV_SRC_BLOCK_STRIDE, NACC_PD_SW,  \
    NACC_NO_ALIAS, "layout conversion source block pointer stride")                           \
  X(VNCHWCONV_DST_BLOCK_STRIDE, 0x111C, kCommand, kF_VNCHWCONV_DST_BLOCK_STRIDE, NACC_PD_SW,  \
    NACC_NO_ALIAS, "layout conversion destination block pointer stride")                      \
  X(VNCHWCONV_STRIDE, 0x1120, kCommand, kF_VNCHWCONV_STRIDE, NACC_PD_SW, NACC_NO_ALIAS,       \
    "layout conversion repeat strides")                                                       \
  X(VNCHWCONV_CFG, 0x1124, kCommand, kF_VNCHWCONV_CFG, NACC_PD_SW, NACC_NO_ALIAS,             \
    "layout conversion configuration")                                                        \
  X(PMU_CTRL, 0x1180, kCommand, kF_PMU_CTRL, NACC_PD_SW, NACC_NO_ALIAS, "PMU control")           \
  X(PMU_CYCLES_LO, 0x1190, kCommand, kF_PMU_LO, NACC_PD, NACC_NO_ALIAS, "device cycles")      \
  X(PMU_CYCLES_HI, 0x1194, kCommand, kF_PMU_HI, NACC_PD, NACC_NO_ALIAS, "device cycles")      \
  X(PMU_MAC_CYCLES_LO, 0x1198, kCommand, kF_PMU_LO, NACC_PD, NACC_NO_ALIAS,                   \
    "MAC array busy cycles, summed over cores")                                               \
  X(PMU_MAC_CYCLES_HI, 0x119C, kCommand, kF_PMU_HI, NACC_PD, NACC_NO_ALIAS,                   \
    "MAC array busy cycles, summed over cores")                                               \
  X(PMU_ACT_CYCLES_LO, 0x11A0, kCommand, kF_PMU_LO, NACC_PD, NACC_NO_ALIAS,                   \
    "activation unit busy cycles (Tanh, Sigmoid, LUT), summed over cores")                    \
  X(PMU_ACT_CYCLES_HI, 0x11A4, kCommand, kF_PMU_HI, NACC_PD, NACC_NO_ALIAS,                   \
    "activation unit busy cycles (Tanh, Sigmoid, LUT), summed over cores")                    \
  X(PMU_DMA_RD_BYTES_LO, 0x11A8, kCommand, kF_PMU_LO, NACC_PD, NACC_NO_ALIAS,                 \
    "bytes read from device memory")                                                          \
  X(PMU_DMA_RD_BYTES_HI, 0x11AC, kCommand, kF_PMU_HI, NACC_PD, NACC_NO_ALIAS,                 \
    "bytes read from device memory")                                                          \
  X(PMU_DMA_WR_BYTES_LO, 0x11B0, kCommand, kF_PMU_LO, NACC_PD, NACC_NO_ALIAS,                 \
    "bytes written to device memory")                                                         \
  X(PMU_DMA_WR_BYTES_HI, 0x11B4, kCommand, kF_PMU_HI, NACC_PD, NACC_NO_ALIAS,                 \
    "bytes written to device memory")                                                         \
  X(PMU_STALL_CYCLES_LO, 0x11B8, kCommand, kF_PMU_LO, NACC_PD, NACC_NO_ALIAS,                 \
    "cycles a unit waited for a buffer or a WAIT")                                            \
  X(PMU_STALL_CYCLES_HI, 0x11BC, kCommand, kF_PMU_HI, NACC_PD, NACC_NO_ALIAS,                 \
    "cycles a unit waited for a buffer or a WAIT")                                            \
  X(PMU_CMD_COUNT, 0x11C0, kCommand, kF_PMU_CMD_COUNT, NACC_PD, NACC_NO_ALIAS,                \
    "commands executed")                                                                      \
  X(PMU_SRAM_HIGH_WATER, 0x11C4, kCommand, kF_PMU_SRAM_HIGH_WATER, NACC_PD, NACC_NO_ALIAS,    \
    "SRAM high-water mark in bytes")                                                          \
  X(INSTR_ADDR_L, 0x2050, kBatch, kF_INSTR_ADDR_L, 0, NACC_NO_ALIAS,                          \
    "instruction (command stream) address bits 31..0")                                        \
  X(INSTR_ADDR_H, 0x2054, kBatch, kF_INSTR_ADDR_H, 0, NACC_NO_ALIAS,                          \
    "instruction (command stream) address bits 43..32")                                       \
  NACC_BATCH_HANDLER(X, 0)                                                                    \
  NACC_BATCH_HANDLER(X, 1)                                                                    \
  NACC_BATCH_HANDLER(X, 2)                                                                    \
  NACC_BATCH_HANDLER(X, 3)                                                                    \
  NACC_BATCH_HANDLER(X, 4)                                                                    \
  NACC_BATCH_HANDLER(X, 5)                                                                    \
  NACC_BATCH_HANDLER(X, 6)                                                                    \
  NACC_BATCH_HANDLER(X, 7)                                                                    \
  NACC_BATCH_HANDLER(X, 8)                                                                    \
  NACC_BATCH_HANDLER(X, 9)                                                                    \
  NACC_BATCH_HANDLER(X, 10)                                                                   \
  NACC_BATCH_HANDLER(X, 11)

// Every register, in table order. Reg::kCount is the number of registers.
enum class Reg : uint16_t {
#define NACC_X_ENUM(NAME, OFF, BANK, FIELDS, FLAGS, ALIAS, DESC) NAME,
  NACC_REGISTER_LIST(NACC_X_ENUM)
#undef NACC_X_ENUM
  kCount
};

inline constexpr int kNumRegisters = static_cast<int>(Reg::kCount);

#define NACC_NO_ALIAS int16_t(-1)
#define NACC_ALIAS(TARGET) int16_t(::nacc::Reg::TARGET)

inline constexpr RegisterDesc kRegisters[kNumRegisters] = {
#define NACC_X_DESC(NAME, OFF, BANK, FIELDS, FLAGS, ALIAS, DESC)                              \
  RegisterDesc{#NAME, uint16_t(OFF), Bank::BANK, regtable::FIELDS,                            \
               uint8_t(std::size(regtable::FIELDS)), uint8_t(FLAGS), ALIAS, DESC},
    NACC_REGISTER_LIST(NACC_X_DESC)
#undef NACC_X_DESC
};

#undef NACC_NO_ALIAS
#undef NACC_ALIAS
#undef NACC_COMPUTE_REG
#undef NACC_SW
#undef NACC_SWA
#undef NACC_PD
#undef NACC_PD_SW
#undef NACC_PD_SWA
#undef NACC_BASEP_PAIR
#undef NACC_BATCH_PAIR
#undef NACC_BATCH_HANDLER
#undef NACC_REGISTER_LIST

// Batch-handler geometry (NACC_SPEC §6, [D]): BATCHb_ADDRi_L at
// 0x2200 + 0x40 * b + 8 * i, _H at +4; b in [0, 12), i in [0, 8).
constexpr Reg batch_addr_lo(int handler, int region) {
  return Reg(int(Reg::BATCH0_ADDR0_L) + 2 * (limits::kNumRegions * handler + region));
}
constexpr Reg batch_addr_hi(int handler, int region) {
  return Reg(int(batch_addr_lo(handler, region)) + 1);
}

}  // namespace nacc

// Every named field of the NACC register map under its spec name, as a
// typed FieldRef: `fields::NACC_KERNEL::K_SIZE_X`. The compiler, the device,
// the runtime and the bindings read and write fields only through these; no
// other file declares a field alias. Each constant is resolved against the
// table at compile time (a misspelt name does not build) and a static_assert
// below checks that every field of every register is listed exactly once.
// The value enums of enumerated fields are arch/field_values.h.
//
// The 16 BASEPn views and the 192 BATCHb_ADDRi_L/H registers share one
// layout each (a single ADDR field): batch_addr_field_lo/hi(b, i) below.
#pragma once

#include "arch/field_values.h"
#include "arch/registers.h"

namespace nacc::fields {

// X(register, field) for every field of every register with fields of its own.
#define NACC_FIELD_LIST(X) \
  X(NACC_CTRL, CONV_MODE) \
  X(NACC_CTRL, POOL_MODE) \
  X(NACC_CTRL, ACT_MODE) \
  X(NACC_CTRL, START) \
  X(NACC_CTRL, QUANT_EN) \
  X(NACC_CTRL, BIAS_EN) \
  X(NACC_CTRL, FM_UPD) \
  X(NACC_CTRL, K_UPD) \
  X(NACC_CTRL, IM2COL_EN) \
  X(NACC_CTRL, ELEMENT_EN) \
  X(NACC_CTRL, ELEMENT_INPUT_QUANT_EN) \
  X(NACC_CTRL, DATA_FORM) \
  X(NACC_CTRL, CLK_BYPASS) \
  X(NACC_KERNEL, K_SIZE_X) \
  X(NACC_KERNEL, K_SIZE_Y) \
  X(NACC_KERNEL, K_SIZE_XY) \
  X(NACC_KERNEL, K_STRIDE_X) \
  X(NACC_KERNEL, K_STRIDE_Y) \
  X(NACC_KERNEL, K_DILATION_X) \
  X(NACC_KERNEL, K_DILATION_Y) \
  X(NACC_IN_FM, IN_FM_WIDTH) \
  X(NACC_IN_FM, IN_FM_HEIGHT) \
  X(NACC_OUT_FM, OUT_FM_WIDTH) \
  X(NACC_OUT_FM, OUT_FM_HEIGHT) \
  X(NACC_PADDING, PAD_X) \
  X(NACC_PADDING, PAD_Y) \
  X(NACC_INT_EN, BUS_WR_ERR_INTR_EN) \
  X(NACC_INT_EN, BUS_RD_ERR_INTR_EN) \
  X(NACC_INT_EN, FULL_TRANS_DONE_INTR_EN) \
  X(NACC_INT_STATUS, BUS_WR_ERR_INTR) \
  X(NACC_INT_STATUS, BUS_RD_ERR_INTR) \
  X(NACC_INT_STATUS, FULL_TRANS_DONE_INTR) \
  X(NACC_ELEMENTWISE, ELEMENTWISE_MODE) \
  X(NACC_ELEMENTWISE, IN_ELEMENT_OFFSET1) \
  X(NACC_ELEMENTWISE, IN_ELEMENT_OFFSET2) \
  X(NACC_ELEMENTWISE, LEFT_SHIFT) \
  X(NACC_QUANT_MUL_DMA_ADDR, QUANT_MUL_DMA_ADDR) \
  X(NACC_QUANT_SHIFT_DMA_ADDR, QUANT_SHIFT_DMA_ADDR) \
  X(NACC_ACT_MAX, ACT_MAX) \
  X(NACC_ACT_MIN, ACT_MIN) \
  X(NACC_MATRIX_A, MATRIX_A_XSIZE) \
  X(NACC_MATRIX_A, MATRIX_A_YSIZE) \
  X(NACC_MATRIX_B, MATRIX_B_XSIZE) \
  X(NACC_MATRIX_B, MATRIX_B_YSIZE) \
  X(NACC_ACT_PARA, ACT_INT_W) \
  X(NACC_ACT_PARA, QUANT_REAL_SCALE) \
  X(NACC_ACT_PARA, QUANT_FP32_SCALE) \
  X(NACC_ACT_PARA, ELEMENT_FP32) \
  X(NACC_ACT_PARA, U8_DOMAIN) \
  X(NACC_ACT_PARA, POOL_FP32) \
  X(NACC_ACT_PARA, POOL_FP32_MODE) \
  X(NACC_ACT_PARA, QUANT_MUL32) \
  X(NACC_ACT_PARA, MAC_FP32) \
  X(NACC_ACT_PARA, MAC_FP32_ORDER) \
  X(NACC_IN_ACT_DMA_ADDR, IN_ACT_DMA_ADDR) \
  X(NACC_BIAS_DMA_ADDR, BIAS_DMA_ADDR) \
  X(NACC_IN_K_DMA_ADDR, IN_K_DMA_ADDR) \
  X(NACC_IN_FM_DMA_ADDR, IN_FM_DMA_ADDR) \
  X(NACC_OUT_DMA_ADDR, OUT_DMA_ADDR) \
  X(NACC_FM_OFFSET, IN_FM_OFFSET) \
  X(NACC_FM_OFFSET, OUT_FM_OFFSET) \
  X(NACC_DMA_OFFSET, IN_DMA_OFFSET) \
  X(NACC_IM2COL_TRANS_LEN, IM2COL_IN_TRANS_LEN) \
  X(NACC_IM2COL_TRANS_LEN, IM2COL_OUT_TRANS_LEN) \
  X(NACC_CONV_TRANS_LEN, K_TRANS_LEN) \
  X(NACC_CONV_TRANS_LEN, FM_TRANS_LEN) \
  X(NACC_DMA_OUT_TRANS_LEN, DMA_OUT_TRANS_LEN) \
  X(NACC_FULL_CONV_PARA, FULL_KER_SIZE) \
  X(NACC_FULL_CONV_PARA, BIAS_SHIFT) \
  X(NACC_FULL_CONV_PARA, OUT_SHIFT) \
  X(NACC_DMA_PARA1, IFM_TRANS_END_SIZE) \
  X(NACC_DMA_PARA1, K_TRANS_END_SIZE) \
  X(NACC_DMA_PARA2, FM_TRANS_OFFSET) \
  X(NACC_DMA_PARA3, OFM_TRANS_END_SIZE) \
  X(NACC_DMA_PARA3, DW_CH_MULT) \
  X(NACC_DMA_PARAA, K_TRANS_OFFSET) \
  X(NACC_BATCH_SIZE, IN_CH_BATCH_SIZE) \
  X(NACC_BATCH_SIZE, K_BATCH_SIZE) \
  X(NACC_BATCH_SIZE, K_ONE_BATCH_SIZE) \
  X(NACC_BATCH_SIZE, TEMP_RES_BATCH_SIZE) \
  X(NACC_MEM_RANGE, IFM_MEM_BASE) \
  X(NACC_MEM_RANGE, K_MEM_BASE) \
  X(NACC_MEM_RANGE, OFM_MEM_BASE) \
  X(NACC_MEM_RANGE, TEMP_MEM_BASE) \
  X(NACC_DMA_OFFSET1, IN_DMA_ROW_OFFSET) \
  X(NACC_DMA_OFFSET2, OUT_DMA_OFFSET) \
  X(NACC_IM2COL_DMA_ADDR, IM2COL_DMA_ADDR) \
  X(NACC_FM_CH, IN_FM_CH) \
  X(NACC_FM_CH, OUT_FM_CH) \
  X(NACC_IN_FM_SPLIT, IN_FM_SPLIT_WIDTH) \
  X(NACC_IN_FM_SPLIT, IN_FM_SPLIT_LEFT_WIDTH) \
  X(NACC_IN_FM_SPLIT, IN_FM_SPLIT_LEFT_LEN) \
  X(NACC_OUT_FM_SPLIT, OUT_FM_SPLIT_SIZE) \
  X(NACC_OUT_FM_SPLIT, OUT_FM_SPLIT_WIDTH) \
  X(NACC_OUT_FM_SPLIT, OUT_FM_SPLIT_LEFT_WIDTH) \
  X(NACC_OUT_FM_SPLIT_LEN, OUT_FM_SPLIT_LEN) \
  X(NACC_OUT_FM_SPLIT_LEN, OUT_FM_SPLIT_LEFT_LEN) \
  X(NACC_IN_FM_SPLIT_W_OFFSET, IN_FM_START_SPLIT_W_OFFSET) \
  X(NACC_IN_FM_SPLIT_W_OFFSET1, IN_FM_MID_SPLIT_W_OFFSET) \
  X(NACC_IN_FM_SPLIT_H_OFFSET, IN_FM_START_SPLIT_H_OFFSET) \
  X(NACC_IN_FM_SPLIT_H_OFFSET1, IN_FM_MID_SPLIT_H_OV_OFFSET) \
  X(NACC_IN_FM_SPLIT_H_OFFSET2, IN_FM_MID_SPLIT_H_AVG_OFFSET) \
  X(NACC_OUT_FM_SPLIT_H_OFFSET, OUT_FM_START_SPLIT_H_OFFSET) \
  X(NACC_OUT_FM_SPLIT_H_OFFSET1, OUT_FM_MID_SPLIT_H_OFFSET) \
  X(NACC_BROADCAST_CTRL, BROADCAST_MODE) \
  X(NACC_BROADCAST_CTRL, BROADCAST_NUM) \
  X(NACC_BROADCAST_CTRL, SPLIT_2D_GROUPS) \
  X(NACC_BROADCAST_CTRL, SPLIT_2D_ROWS) \
  X(NACC_BROADCAST_CTRL1, BROADCAST_OVER_EN) \
  X(NACC_BROADCAST_DMA, IN_DMA_UNICAST_OV_OFFSET) \
  X(NACC_BROADCAST_DMA, IN_DMA_UNICAST_AVG_OFFSET) \
  X(NACC_BROADCAST_DMA, EU_BIAS_START_OFFSET) \
  X(NACC_BROADCAST_SPLIT, OUT_FM_SPLIT_OV_HEIGHT) \
  X(NACC_BROADCAST_SPLIT, OUT_FM_SPLIT_AVG_HEIGHT) \
  X(NACC_ELEMENT_QUANT1_MULT, IN_ELEMENT_MULT1) \
  X(NACC_ELEMENT_QUANT1_SHIFT, IN_ELEMENT_SHIFT1) \
  X(NACC_ELEMENT_QUANT2_MULT, IN_ELEMENT_MULT2) \
  X(NACC_ELEMENT_QUANT2_SHIFT, IN_ELEMENT_SHIFT2) \
  X(NACC_FP32_KBLOCK, KBLOCK_LOG2) \
  X(NACC_FP32_KBLOCK, KBLOCK_TAIL_LOG2) \
  X(NACC_FP32_KBLOCK, KBLOCK_SPLIT) \
  X(NACC_VERSION, VERSION) \
  X(ID, ID) \
  X(CMD, START) \
  X(CMD, CLEAR_IRQ) \
  X(CMD, BATCH_HANDLER) \
  X(QBASE0, ADDR) \
  X(QBASE1, ADDR) \
  X(QREAD, OFFSET) \
  X(QSIZE, SIZE) \
  X(REGIONCFG, REGION0) \
  X(REGIONCFG, REGION1) \
  X(REGIONCFG, REGION2) \
  X(REGIONCFG, REGION3) \
  X(REGIONCFG, REGION4) \
  X(REGIONCFG, REGION5) \
  X(REGIONCFG, REGION6) \
  X(REGIONCFG, REGION7) \
  X(AXI_LIMIT0, MAX_BEATS) \
  X(AXI_LIMIT0, MAX_OUTSTANDING_READ_M1) \
  X(AXI_LIMIT0, MAX_OUTSTANDING_WRITE_M1) \
  X(AXI_LIMIT1, MAX_BEATS) \
  X(AXI_LIMIT1, MAX_OUTSTANDING_READ_M1) \
  X(AXI_LIMIT1, MAX_OUTSTANDING_WRITE_M1) \
  X(AXI_LIMIT2, MAX_BEATS) \
  X(AXI_LIMIT2, MAX_OUTSTANDING_READ_M1) \
  X(AXI_LIMIT2, MAX_OUTSTANDING_WRITE_M1) \
  X(AXI_LIMIT3, MAX_BEATS) \
  X(AXI_LIMIT3, MAX_OUTSTANDING_READ_M1) \
  X(AXI_LIMIT3, MAX_OUTSTANDING_WRITE_M1) \
  X(DMA_SRC, ADDR) \
  X(DMA_DST, ADDR) \
  X(DMA_LEN, LEN) \
  X(VNCHWCONV_SRC, ADDR) \
  X(VNCHWCONV_DST, ADDR) \
  X(VNCHWCONV_SRC_BLOCK_STRIDE, STRIDE) \
  X(VNCHWCONV_DST_BLOCK_STRIDE, STRIDE) \
  X(VNCHWCONV_STRIDE, SRC_STRIDE) \
  X(VNCHWCONV_STRIDE, DST_STRIDE) \
  X(VNCHWCONV_CFG, REPEAT) \
  X(VNCHWCONV_CFG, DTYPE) \
  X(VNCHWCONV_CFG, SRC_HIGH_HALF) \
  X(VNCHWCONV_CFG, DST_HIGH_HALF) \
  X(VNCHWCONV_CFG, REVERSE) \
  X(PMU_CTRL, CNT_EN) \
  X(PMU_CTRL, CNT_RST) \
  X(PMU_CYCLES_LO, COUNT) \
  X(PMU_CYCLES_HI, COUNT) \
  X(PMU_MAC_CYCLES_LO, COUNT) \
  X(PMU_MAC_CYCLES_HI, COUNT) \
  X(PMU_ACT_CYCLES_LO, COUNT) \
  X(PMU_ACT_CYCLES_HI, COUNT) \
  X(PMU_DMA_RD_BYTES_LO, COUNT) \
  X(PMU_DMA_RD_BYTES_HI, COUNT) \
  X(PMU_DMA_WR_BYTES_LO, COUNT) \
  X(PMU_DMA_WR_BYTES_HI, COUNT) \
  X(PMU_STALL_CYCLES_LO, COUNT) \
  X(PMU_STALL_CYCLES_HI, COUNT) \
  X(PMU_CMD_COUNT, COUNT) \
  X(PMU_SRAM_HIGH_WATER, BYTES) \
  X(INSTR_ADDR_L, ADDR) \
  X(INSTR_ADDR_H, ADDR)

#define NACC_X_FIELD(REG, FIELD) \
  namespace REG {                \
  inline constexpr FieldRef FIELD = field_of(Reg::REG, #FIELD); \
  }
NACC_FIELD_LIST(NACC_X_FIELD)
#undef NACC_X_FIELD

// Every constant above, in table order.
inline constexpr FieldRef kNamedFields[] = {
#define NACC_X_REF(REG, FIELD) REG::FIELD,
    NACC_FIELD_LIST(NACC_X_REF)
#undef NACC_X_REF
};
#undef NACC_FIELD_LIST

// The ADDR field of BATCHb_ADDRi_L / _H (NACC_SPEC §6, [D]).
constexpr FieldRef batch_addr_field_lo(int handler, int region) {
  return field_of(batch_addr_lo(handler, region), "ADDR");
}
constexpr FieldRef batch_addr_field_hi(int handler, int region) {
  return field_of(batch_addr_hi(handler, region), "ADDR");
}

}  // namespace nacc::fields

namespace nacc {
// Names of enumerated values, from the register table.
constexpr const char* act_mode_name(ActMode m) {
  return enum_value_name(fields::NACC_CTRL::ACT_MODE, value_of(m));
}
constexpr const char* elementwise_mode_name(ElementwiseMode m) {
  return enum_value_name(fields::NACC_ELEMENTWISE::ELEMENTWISE_MODE, value_of(m));
}
}  // namespace nacc

namespace nacc::fields {
namespace detail {
// A register whose fields are listed above: every register but the BASEPn
// views and the BATCHb_ADDRi registers.
constexpr bool has_named_fields(int reg) {
  const char* n = kRegisters[reg].name;
  const bool basep = n[0] == 'B' && n[1] == 'A' && n[2] == 'S' && n[3] == 'E' && n[4] == 'P';
  const bool batch = n[0] == 'B' && n[1] == 'A' && n[2] == 'T' && n[3] == 'C' && n[4] == 'H';
  return !basep && !batch;
}
// Every field of every such register appears exactly once in kNamedFields.
constexpr bool named_fields_complete() {
  int expected = 0;
  for (int r = 0; r < kNumRegisters; ++r) {
    if (!has_named_fields(r)) continue;
    for (int i = 0; i < kRegisters[r].num_fields; ++i) {
      ++expected;
      int seen = 0;
      for (const FieldRef& f : kNamedFields) seen += (int(f.reg) == r && f.index == i);
      if (seen != 1) return false;
    }
  }
  return expected == int(sizeof(kNamedFields) / sizeof(kNamedFields[0]));
}
}  // namespace detail
static_assert(detail::named_fields_complete(),
              "arch/fields.h: a field of register_table.h is missing or listed twice");

}  // namespace nacc::fields

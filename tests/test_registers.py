"""The register map (csrc/arch/register_table.h) and RegisterFile semantics.

Golden data is transcribed from the vendor documents, independently of the
C++ table: the compute bank field by field from [N] §5 (seed 000), the
command-processor offsets from [C] (seed 002), the batch-handler pattern from
[D] (seed 003) as fixed by NACC_SPEC §6.
"""
import random
import re

import pytest

from nacc import DeviceFault, _core

TABLE = _core.register_table()
BY_NAME = {r["name"]: r for r in TABLE}

# [N] §5, every register and field: "offset NAME FIELD msb:lsb[=reset][ ACCESS], ...".
# Reset 0 and access RW unless given. NACC_MEM_RANGE bits 11:2 are K_MEM_BASE
# (labelled K_BATCH_SIZE in [N], garbled; NACC_SPEC §3).
SEED_N = """
0x00 NACC_CTRL CONV_MODE 3:0, POOL_MODE 7:4, ACT_MODE 11:8, START 12, QUANT_EN 13, BIAS_EN 14, FM_UPD 15, K_UPD 16, IM2COL_EN 17, ELEMENT_EN 18, ELEMENT_INPUT_QUANT_EN 19, DATA_FORM 21:20, CLK_BYPASS 27:22
0x04 NACC_KERNEL K_SIZE_X 3:0, K_SIZE_Y 7:4, K_SIZE_XY 15:8, K_STRIDE_X 19:16=1, K_STRIDE_Y 23:20=1, K_DILATION_X 27:24=1, K_DILATION_Y 31:28=1
0x08 NACC_IN_FM IN_FM_WIDTH 15:0, IN_FM_HEIGHT 31:16
0x0C NACC_OUT_FM OUT_FM_WIDTH 15:0, OUT_FM_HEIGHT 31:16
0x10 NACC_PADDING PAD_X 3:0, PAD_Y 7:4
0x14 NACC_INT_EN BUS_WR_ERR_INTR_EN 0, BUS_RD_ERR_INTR_EN 1, FULL_TRANS_DONE_INTR_EN 2
0x18 NACC_INT_STATUS BUS_WR_ERR_INTR 0 W1C, BUS_RD_ERR_INTR 1 W1C, FULL_TRANS_DONE_INTR 2 W1C
0x1C NACC_ELEMENTWISE ELEMENTWISE_MODE 3:0, IN_ELEMENT_OFFSET1 12:4, IN_ELEMENT_OFFSET2 21:13, LEFT_SHIFT 29:22
0x20 NACC_QUANT_MUL_DMA_ADDR QUANT_MUL_DMA_ADDR 31:0
0x24 NACC_QUANT_SHIFT_DMA_ADDR QUANT_SHIFT_DMA_ADDR 31:0
0x28 NACC_ACT_MAX ACT_MAX 31:0
0x2C NACC_ACT_MIN ACT_MIN 31:0
0x30 NACC_MATRIX_A MATRIX_A_XSIZE 15:0, MATRIX_A_YSIZE 31:16
0x34 NACC_MATRIX_B MATRIX_B_XSIZE 15:0, MATRIX_B_YSIZE 31:16
0x38 NACC_ACT_PARA ACT_INT_W 1:0
0x3C NACC_IN_ACT_DMA_ADDR IN_ACT_DMA_ADDR 31:0
0x40 NACC_BIAS_DMA_ADDR BIAS_DMA_ADDR 31:0
0x44 NACC_IN_K_DMA_ADDR IN_K_DMA_ADDR 31:0
0x48 NACC_IN_FM_DMA_ADDR IN_FM_DMA_ADDR 31:0
0x4C NACC_OUT_DMA_ADDR OUT_DMA_ADDR 31:0
0x64 NACC_FM_OFFSET IN_FM_OFFSET 8:0, OUT_FM_OFFSET 17:9
0x68 NACC_DMA_OFFSET IN_DMA_OFFSET 31:0
0x6C NACC_IM2COL_TRANS_LEN IM2COL_IN_TRANS_LEN 15:0, IM2COL_OUT_TRANS_LEN 31:16
0x70 NACC_CONV_TRANS_LEN K_TRANS_LEN 15:0, FM_TRANS_LEN 31:16
0x74 NACC_DMA_OUT_TRANS_LEN DMA_OUT_TRANS_LEN 15:0
0x78 NACC_FULL_CONV_PARA FULL_KER_SIZE 7:0, BIAS_SHIFT 15:8, OUT_SHIFT 23:16
0x7C NACC_DMA_PARA1 IFM_TRANS_END_SIZE 15:0, K_TRANS_END_SIZE 31:16
0x80 NACC_DMA_PARA2 FM_TRANS_OFFSET 31:0
0x84 NACC_DMA_PARA3 OFM_TRANS_END_SIZE 15:0, DW_CH_MULT 19:16
0x88 NACC_DMA_PARAA K_TRANS_OFFSET 31:0
0x8C NACC_BATCH_SIZE IN_CH_BATCH_SIZE 7:0, K_BATCH_SIZE 15:8, K_ONE_BATCH_SIZE 23:16, TEMP_RES_BATCH_SIZE 27:24
0x90 NACC_MEM_RANGE IFM_MEM_BASE 1:0, K_MEM_BASE 11:2, OFM_MEM_BASE 21:12, TEMP_MEM_BASE 31:22
0x94 NACC_DMA_OFFSET1 IN_DMA_ROW_OFFSET 31:0
0x98 NACC_DMA_OFFSET2 OUT_DMA_OFFSET 31:0
0xA4 NACC_IM2COL_DMA_ADDR IM2COL_DMA_ADDR 31:0
0xAC NACC_FM_CH IN_FM_CH 15:0, OUT_FM_CH 31:16
0xB0 NACC_IN_FM_SPLIT IN_FM_SPLIT_WIDTH 7:0, IN_FM_SPLIT_LEFT_WIDTH 15:8, IN_FM_SPLIT_LEFT_LEN 31:16
0xB4 NACC_OUT_FM_SPLIT OUT_FM_SPLIT_SIZE 7:0, OUT_FM_SPLIT_WIDTH 15:8, OUT_FM_SPLIT_LEFT_WIDTH 23:16
0xB8 NACC_OUT_FM_SPLIT_LEN OUT_FM_SPLIT_LEN 15:0, OUT_FM_SPLIT_LEFT_LEN 31:16
0xBC NACC_IN_FM_SPLIT_W_OFFSET IN_FM_START_SPLIT_W_OFFSET 31:0
0xC0 NACC_IN_FM_SPLIT_W_OFFSET1 IN_FM_MID_SPLIT_W_OFFSET 31:0
0xC4 NACC_IN_FM_SPLIT_H_OFFSET IN_FM_START_SPLIT_H_OFFSET 31:0
0xC8 NACC_IN_FM_SPLIT_H_OFFSET1 IN_FM_MID_SPLIT_H_OV_OFFSET 31:0
0xCC NACC_IN_FM_SPLIT_H_OFFSET2 IN_FM_MID_SPLIT_H_AVG_OFFSET 31:0
0xD0 NACC_OUT_FM_SPLIT_H_OFFSET OUT_FM_START_SPLIT_H_OFFSET 31:0
0xD4 NACC_OUT_FM_SPLIT_H_OFFSET1 OUT_FM_MID_SPLIT_H_OFFSET 31:0
0xD8 NACC_BROADCAST_CTRL BROADCAST_MODE 1:0, BROADCAST_NUM 7:2
0xDC NACC_BROADCAST_CTRL1 BROADCAST_OVER_EN 31:0
0xE0 NACC_BROADCAST_DMA IN_DMA_UNICAST_OV_OFFSET 9:0, IN_DMA_UNICAST_AVG_OFFSET 19:10, EU_BIAS_START_OFFSET 27:20
0xE4 NACC_BROADCAST_SPLIT OUT_FM_SPLIT_OV_HEIGHT 9:0, OUT_FM_SPLIT_AVG_HEIGHT 19:10
0xE8 NACC_ELEMENT_QUANT1_MULT IN_ELEMENT_MULT1 31:0
0xEC NACC_ELEMENT_QUANT1_SHIFT IN_ELEMENT_SHIFT1 31:0
0xF0 NACC_ELEMENT_QUANT2_MULT IN_ELEMENT_MULT2 31:0
0xF4 NACC_ELEMENT_QUANT2_SHIFT IN_ELEMENT_SHIFT2 31:0
0xFC NACC_VERSION VERSION 31:0=0x00010102 RO
"""


def _parse_seed():
    regs = {}
    for line in SEED_N.strip().splitlines():
        offset, name, rest = line.split(" ", 2)
        fields = []
        for item in rest.split(", "):
            m = re.fullmatch(r"(\w+) (\d+)(?::(\d+))?(?:=(\w+))?(?: (RO|W1C))?", item)
            assert m, item
            fname, msb, lsb, reset, access = m.groups()
            fields.append((fname, int(msb), int(lsb if lsb else msb), int(reset or "0", 0), access or "RW"))
        regs[name] = (int(offset, 16), fields)
    return regs


SEED_REGS = _parse_seed()

# [C] offsets (seed 002) at 0x1000 + offset; BASEP pairs low word first (docs §7).
SEED_C_OFFSETS = {"CMD": 0x08, "QBASE0": 0x10, "QBASE1": 0x14, "QREAD": 0x18, "QSIZE": 0x20,
                  "REGIONCFG": 0x3C, "AXI_LIMIT0": 0x40, "AXI_LIMIT1": 0x44, "AXI_LIMIT2": 0x48,
                  "AXI_LIMIT3": 0x4C, **{f"BASEP{k}": 0x80 + 4 * k for k in range(16)}}


# Fields the project adds in bits [N] marks reserved; each is documented as a
# deviation where it is used (docs/device_model.md).
PROJECT_EXTENSION_FIELDS = {
    "NACC_ACT_PARA": [("QUANT_REAL_SCALE", 2, 2, 0, "RW"), ("QUANT_FP32_SCALE", 3, 3, 0, "RW"),
                      ("ELEMENT_FP32", 5, 4, 0, "RW"), ("U8_DOMAIN", 6, 6, 0, "RW"),
                      ("POOL_FP32", 7, 7, 0, "RW"), ("POOL_FP32_MODE", 9, 8, 0, "RW"),
                      ("QUANT_MUL32", 10, 10, 0, "RW"), ("MAC_FP32", 11, 11, 0, "RW"),
                      ("MAC_FP32_ORDER", 13, 12, 0, "RW")],
    # Mode 3 (BROADCAST_MODE = SPLIT_2D): channel groups x row pieces (§5).
    "NACC_BROADCAST_CTRL": [("SPLIT_2D_GROUPS", 13, 8, 0, "RW"), ("SPLIT_2D_ROWS", 19, 14, 0, "RW")],
}


# Registers the project adds in holes of [N]'s compute bank (flag project_defined), each
# documented where it is used: the K blocks of NACC_ACT_PARA.MAC_FP32 (device_model.md §4).
PROJECT_EXTENSION_REGISTERS = {
    "NACC_FP32_KBLOCK": (0xF8, [("KBLOCK_LOG2", 3, 0, 0, "RW"), ("KBLOCK_TAIL_LOG2", 7, 4, 0, "RW"),
                                ("KBLOCK_SPLIT", 31, 8, 0, "RW")]),
}


def test_compute_bank_matches_seed_n_field_by_field():
    """Every register of [N] §5 and only those, with every field's bits, access and reset,
    plus the documented project-extension fields and registers (flagged project_defined)."""
    compute = {r["name"]: r for r in TABLE if r["bank"] == "compute" and not r["project_defined"]}
    assert sorted(compute) == sorted(SEED_REGS)
    extensions = {r["name"]: r for r in TABLE if r["bank"] == "compute" and r["project_defined"]}
    assert sorted(extensions) == sorted(PROJECT_EXTENSION_REGISTERS)
    for name, (offset, fields) in PROJECT_EXTENSION_REGISTERS.items():
        reg = extensions[name]
        assert reg["offset"] == offset and reg["stream_writable"], name
        got = [(f["name"], f["msb"], f["lsb"], f["reset"], f["access"]) for f in reg["fields"]]
        assert got == fields, name
    for name, (offset, fields) in SEED_REGS.items():
        reg = compute[name]
        assert reg["offset"] == offset, name
        got = [(f["name"], f["msb"], f["lsb"], f["reset"], f["access"]) for f in reg["fields"]]
        assert got == fields + PROJECT_EXTENSION_FIELDS.get(name, []), name


def test_command_and_batch_bank_offsets():
    """[C] registers at 0x1000 + their [C] offset; [D] at 0x2000 + offset, BATCHb_ADDRi at
    0x200 + 0x40*b + 8*i for 12 handlers x 8 regions (NACC_SPEC §6)."""
    for name, off in SEED_C_OFFSETS.items():
        assert BY_NAME[name]["offset"] == 0x1000 + off, name
    assert BY_NAME["INSTR_ADDR_L"]["offset"] == 0x2050
    assert BY_NAME["INSTR_ADDR_H"]["offset"] == 0x2054
    for b in range(12):
        for i in range(8):
            assert BY_NAME[f"BATCH{b}_ADDR{i}_L"]["offset"] == 0x2200 + 0x40 * b + 8 * i
            assert BY_NAME[f"BATCH{b}_ADDR{i}_H"]["offset"] == 0x2204 + 0x40 * b + 8 * i
    assert "BATCH12_ADDR0_L" not in BY_NAME and "BATCH0_ADDR8_L" not in BY_NAME
    banks = {bank: sum(r["bank"] == bank for r in TABLE) for bank in ("compute", "command", "batch")}
    assert banks == {"compute": 55 + len(PROJECT_EXTENSION_REGISTERS), "command": 51,
                     "batch": 2 + 12 * 8 * 2}


# Reset values that are not 0 (docstring of the test says where each comes from).
NONZERO_RESETS = {"NACC_KERNEL": 0x11110000, "NACC_VERSION": 0x00010102, "ID": 0x4E414343,
                  "PMU_CTRL": 0x00000001}


def test_reset_values():
    """After reset every register reads its reset value: NACC_KERNEL 0x11110000 (strides and
    dilations reset to 1, [N] §5), NACC_VERSION 0x0001_0102 (NACC_SPEC §5), ID "NACC" and
    PMU_CTRL.CNT_EN = 1 (project); every other register 0."""
    rf = _core.RegisterFile()
    for r in TABLE:
        expected = NONZERO_RESETS.get(r["name"], 0)
        assert r["reset"] == expected, r["name"]
        assert rf.read(r["offset"]) == expected, r["name"]
    assert rf.field("NACC_KERNEL", "K_STRIDE_X") == 1
    assert rf.field("NACC_KERNEL", "K_DILATION_Y") == 1


def test_reset_restores_after_writes():
    rf = _core.RegisterFile()
    for r in TABLE:
        rf.set(r["name"], 0xFFFFFFFF)
    rf.reset()
    for r in TABLE:
        assert rf.read(r["offset"]) == r["reset"], r["name"]


GAPS = [0x50, 0x54, 0x58, 0x5C, 0x60, 0x9C, 0xA0, 0xA8, 0x100, 0xFFC, 0x1004, 0x101C, 0x10C0,
        0x11C8, 0x2000, 0x2058, 0x2500, 0x2FFC, 0x3000, 0xFFFFFFFC]


@pytest.mark.parametrize("addr", GAPS)
def test_unknown_address_faults(addr):
    rf = _core.RegisterFile()
    with pytest.raises(DeviceFault, match=f"at 0x{addr:04X}: no register at this address"):
        rf.read(addr)
    with pytest.raises(DeviceFault, match=f"register write at 0x{addr:04X}"):
        rf.write(addr, 1)


@pytest.mark.parametrize("addr", [0x1, 0x2, 0x3, 0x1006])
def test_unaligned_address_faults(addr):
    with pytest.raises(DeviceFault, match="not a multiple of 4"):
        _core.RegisterFile().read(addr)


@pytest.mark.parametrize("name", ["NACC_VERSION", "ID", "QREAD", "PMU_CYCLES_LO", "PMU_SRAM_HIGH_WATER"])
def test_read_only_write_is_ignored(name):
    """Host writes to RO registers are ignored, as on hardware (docs §7); only the device
    side (set) changes them."""
    rf = _core.RegisterFile()
    before = rf.get(name)
    assert rf.write(BY_NAME[name]["offset"], 0x5A5A5A5A) == 0
    assert rf.get(name) == before
    rf.set(name, 0x1234)
    assert rf.get(name) == 0x1234
    rf.write(BY_NAME[name]["offset"], 0)
    assert rf.get(name) == 0x1234


# (status before, value written, status after): W1C clears exactly the bits written as 1.
W1C_CASES = [(0b111, 0b000, 0b111), (0b111, 0b010, 0b101), (0b111, 0b101, 0b010),
             (0b111, 0b111, 0b000), (0b101, 0b010, 0b101), (0b000, 0b111, 0b000),
             (0b111, 0xFFFFFFF8, 0b111)]


@pytest.mark.parametrize("before,written,after", W1C_CASES)
def test_int_status_write_one_to_clear(before, written, after):
    rf = _core.RegisterFile()
    rf.raise_bits("NACC_INT_STATUS", before)
    assert rf.get("NACC_INT_STATUS") == before
    rf.write(0x18, written)
    assert rf.get("NACC_INT_STATUS") == after


def test_raise_bits_accumulates_and_masks_reserved():
    rf = _core.RegisterFile()
    rf.raise_bits("NACC_INT_STATUS", 0b001)
    rf.raise_bits("NACC_INT_STATUS", 0xFFFFFFF4)  # bit 2 plus reserved bits
    assert rf.get("NACC_INT_STATUS") == 0b101


def test_write_only_trigger_bits():
    """CMD.START / CLEAR_IRQ and PMU_CTRL.CNT_RST are returned to the caller, never stored."""
    rf = _core.RegisterFile()
    assert rf.write(0x1008, 0x31) == 0x1  # START with BATCH_HANDLER 3
    assert rf.read(0x1008) == 0x30
    assert rf.field("CMD", "BATCH_HANDLER") == 3
    assert rf.write(0x1008, 0x2) == 0x2
    assert rf.read(0x1008) == 0x0
    assert rf.write(0x1180, 0x3) == 0x2  # CNT_EN stays 1, CNT_RST triggers
    assert rf.read(0x1180) == 0x1


# (register, value written, value read back): reserved bits read 0.
MASK_CASES = [("NACC_PADDING", 0xFFFFFFFF, 0x000000FF), ("NACC_CTRL", 0xFFFFFFFF, 0x0FFFFFFF),
              ("NACC_ELEMENTWISE", 0xFFFFFFFF, 0x3FFFFFFF), ("NACC_DMA_PARA3", 0xFFFFFFFF, 0x000FFFFF),
              ("NACC_BROADCAST_DMA", 0xFFFFFFFF, 0x0FFFFFFF), ("NACC_ACT_PARA", 0xFFFFFFFF, 0x3FFF),
              ("INSTR_ADDR_L", 0x12345678, 0x12345000), ("INSTR_ADDR_H", 0xFFFFFFFF, 0xFFF),
              ("BATCH5_ADDR3_H", 0xFFFFFFFF, 0xFFF), ("BATCH5_ADDR3_L", 0xFFFFFFFF, 0xFFFFFFFF),
              ("REGIONCFG", 0xFFFFFFFF, 0xFFFF), ("AXI_LIMIT2", 0xFFFFFFFF, 0x1F1F0003)]


@pytest.mark.parametrize("name,written,read", MASK_CASES)
def test_reserved_bits_read_zero(name, written, read):
    rf = _core.RegisterFile()
    rf.write(BY_NAME[name]["offset"], written)
    assert rf.read(BY_NAME[name]["offset"]) == read


def test_qbase_and_basep_are_views_zero_extended():
    """QBASE0/1 view INSTR_ADDR_L/H and BASEP(2n)/(2n+1) view BATCH0_ADDRn_L/H; a write through
    the 40-bit [C] view zero-extends to 44 bits (NACC_SPEC §6)."""
    rf = _core.RegisterFile()
    rf.write(BY_NAME["BASEP2"]["offset"], 0x89ABCDEF)
    rf.write(BY_NAME["BASEP3"]["offset"], 0x12)
    assert rf.get("BATCH0_ADDR1_L") == 0x89ABCDEF
    assert rf.get("BATCH0_ADDR1_H") == 0x12
    assert rf.region_base(0, 1) == 0x12_89ABCDEF
    rf.write(BY_NAME["BATCH0_ADDR1_H"]["offset"], 0xABC)
    assert rf.read(BY_NAME["BASEP3"]["offset"]) == 0xBC  # the 40-bit view
    rf.write(BY_NAME["BASEP3"]["offset"], 0x34)
    assert rf.get("BATCH0_ADDR1_H") == 0x034  # bits 43..40 cleared
    rf.write(BY_NAME["QBASE0"]["offset"], 0x1234_5FFF)
    rf.write(BY_NAME["QBASE1"]["offset"], 0xFF)
    assert rf.get("INSTR_ADDR_L") == 0x1234_5000
    assert rf.instruction_address() == 0xFF_1234_5000
    rf.write(BY_NAME["INSTR_ADDR_H"]["offset"], 0xFFF)
    assert rf.instruction_address() == 0xFFF_1234_5000
    assert rf.read(BY_NAME["QBASE1"]["offset"]) == 0xFF
    for n in range(8):
        assert BY_NAME[f"BASEP{2 * n}"]["alias_of"] == f"BATCH0_ADDR{n}_L"
        assert BY_NAME[f"BASEP{2 * n + 1}"]["alias_of"] == f"BATCH0_ADDR{n}_H"


def test_region_base_every_handler_and_region():
    rf = _core.RegisterFile()
    rng = random.Random(6)
    expected = {}
    for b in range(12):
        for i in range(8):
            base = rng.randrange(1 << 44)
            expected[b, i] = base
            rf.write(BY_NAME[f"BATCH{b}_ADDR{i}_L"]["offset"], base & 0xFFFFFFFF)
            rf.write(BY_NAME[f"BATCH{b}_ADDR{i}_H"]["offset"], base >> 32)
    for (b, i), base in expected.items():
        assert rf.region_base(b, i) == base


@pytest.mark.parametrize("handler,region,message", [(12, 0, r"batch handler 12 out of range \[0, 11\]"),
                                                     (-1, 0, "batch handler -1"),
                                                     (0, 8, r"region 8 out of range \[0, 7\]")])
def test_region_base_limits(handler, region, message):
    with pytest.raises(ValueError, match=message):
        _core.RegisterFile().region_base(handler, region)


def test_reset_stream_registers_keeps_host_state():
    """CMD.START's reset: stream-writable, non-trigger registers only."""
    rf = _core.RegisterFile()
    for name in ("NACC_CTRL", "NACC_KERNEL", "DMA_LEN", "VNCHWCONV_CFG", "NACC_INT_EN", "QSIZE",
                 "BATCH3_ADDR2_L", "REGIONCFG"):
        rf.write(BY_NAME[name]["offset"], 0x5)
    rf.write(BY_NAME["PMU_CTRL"]["offset"], 0x0)
    rf.raise_bits("NACC_INT_STATUS", 0x4)
    rf.reset_stream_registers()
    assert rf.get("NACC_CTRL") == 0 and rf.get("NACC_KERNEL") == 0x11110000
    assert rf.get("DMA_LEN") == 0 and rf.get("VNCHWCONV_CFG") == 0
    for name in ("NACC_INT_EN", "QSIZE", "BATCH3_ADDR2_L", "REGIONCFG"):
        assert rf.get(name) == 0x5, name
    assert rf.get("NACC_INT_STATUS") == 0x4
    assert rf.get("PMU_CTRL") == 0


def _fields():
    for r in TABLE:
        for f in r["fields"]:
            if f["access"] in ("RW",) and not r["alias_of"]:
                yield r, f


def test_field_encode_decode_round_trip_every_field():
    """For every RW field: min, max, and seeded random values encode into exactly the field's
    bits and decode back (signed fields sign-extended); other fields keep their reset values."""
    rng = random.Random(7)
    for r, f in _fields():
        width = f["msb"] - f["lsb"] + 1
        lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if f["signed"] else (0, (1 << width) - 1)
        for value in (lo, hi, rng.randint(lo, hi), rng.randint(lo, hi)):
            word = _core.register_value(r["name"], {f["name"]: value})
            mask = ((1 << width) - 1) << f["lsb"]
            assert word & mask == (value << f["lsb"]) & mask
            assert word & ~mask & 0xFFFFFFFF == r["reset"] & ~mask & 0xFFFFFFFF
            assert _core.decode_fields(r["name"], word)[f["name"]] == value
            rf = _core.RegisterFile()
            rf.write(r["offset"], word)
            assert rf.field(r["name"], f["name"]) == value


# Boundary: each limit and one past it.
FIELD_LIMITS = [("NACC_KERNEL", "K_SIZE_X", 15, 16, "[0, 15]"), ("NACC_KERNEL", "K_SIZE_XY", 255, 256, "[0, 255]"),
                ("NACC_ELEMENTWISE", "IN_ELEMENT_OFFSET1", 255, 256, "[-256, 255]"),
                ("NACC_ELEMENTWISE", "IN_ELEMENT_OFFSET2", -256, -257, "[-256, 255]"),
                ("NACC_FM_OFFSET", "OUT_FM_OFFSET", -256, -257, "[-256, 255]"),
                ("NACC_ACT_MIN", "ACT_MIN", -(1 << 31), -(1 << 31) - 1, "[-2147483648, 2147483647]"),
                ("NACC_MEM_RANGE", "K_MEM_BASE", 1023, 1024, "[0, 1023]"),
                ("NACC_MEM_RANGE", "IFM_MEM_BASE", 3, 4, "[0, 3]"),
                ("NACC_FULL_CONV_PARA", "FULL_KER_SIZE", 255, 256, "[0, 255]"),
                ("NACC_DMA_PARA3", "DW_CH_MULT", 15, 16, "[0, 15]"),
                ("NACC_BROADCAST_SPLIT", "OUT_FM_SPLIT_AVG_HEIGHT", 1023, 1024, "[0, 1023]"),
                ("BATCH11_ADDR7_H", "ADDR", 4095, 4096, "[0, 4095]"),
                ("NACC_PADDING", "PAD_X", 0, -1, "[0, 15]")]


@pytest.mark.parametrize("reg,field,ok,bad,range_text", FIELD_LIMITS)
def test_field_limits(reg, field, ok, bad, range_text):
    assert _core.decode_fields(reg, _core.register_value(reg, {field: ok}))[field] == ok
    with pytest.raises(ValueError, match=re.escape(f"{reg}.{field}: value {bad} out of range {range_text}")):
        _core.register_value(reg, {field: bad})


def test_kernel_register_golden():
    """3x3 kernel, stride 1: K_SIZE_XY = 3*3-1 = 8, strides/dilations keep reset 1 -> 0x11110833."""
    v = _core.register_value("NACC_KERNEL", {"K_SIZE_X": 3, "K_SIZE_Y": 3, "K_SIZE_XY": 8})
    assert v == 0x11110833
    assert _core.register_value("NACC_KERNEL", {"K_STRIDE_X": 2}, base=0) == 0x00020000


def test_lookup_errors_name_alternatives():
    with pytest.raises(ValueError, match=r"unknown register 'NACC_KERNAL' \(closest: NACC_KERNEL"):
        _core.register_offset("NACC_KERNAL")
    with pytest.raises(ValueError, match=r"NACC_KERNEL has no field 'K_SIZE' \(fields: K_SIZE_X, K_SIZE_Y"):
        _core.register_value("NACC_KERNEL", {"K_SIZE": 1})
    with pytest.raises(ValueError, match=r"no register at offset 0x0050 \(NACC compute bank"):
        _core.register_name(0x50)
    for r in TABLE:
        assert _core.register_name(r["offset"]) == r["name"]
        assert _core.register_offset(r["name"]) == r["offset"]


def test_mem_range_reading():
    """NACC_MEM_RANGE per NACC_SPEC §3: three 10-bit bases in SRAM/1024 units; the 2-bit IFM base
    (garbled in [N]) in SRAM/4 units; K_MEM_BASE replaces the garbled label K_BATCH_SIZE."""
    fields = {f["name"]: (f["msb"], f["lsb"]) for f in BY_NAME["NACC_MEM_RANGE"]["fields"]}
    assert fields == {"IFM_MEM_BASE": (1, 0), "K_MEM_BASE": (11, 2), "OFM_MEM_BASE": (21, 12),
                      "TEMP_MEM_BASE": (31, 22)}
    assert "K_BATCH_SIZE" in next(f["description"] for f in BY_NAME["NACC_MEM_RANGE"]["fields"]
                                  if f["name"] == "K_MEM_BASE")

"""The command-stream format (csrc/arch/command_stream.h, docs/command_stream.md):
word encodings, opcodes, region addresses, the register-shadow emitter, the validating
decoder and the disassembler. Includes an independent decoder written from the document
alone, as a check that the document is precise enough for a second implementation."""
import pathlib
import random
import re

import numpy as np
import pytest

from nacc import _core, docs_gen

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]

TABLE = _core.register_table()
BY_NAME = {r["name"]: r for r in TABLE}
STREAM_REGS = [r for r in TABLE if r["stream_writable"]]

# docs/command_stream.md §3, golden: name -> (value, kind).
OPCODES = {
    "NPU_OP_STOP": (0x001, "cmd0"), "NPU_OP_DMA_START": (0x002, "cmd0"),
    "NPU_OP_DMA_WAIT": (0x003, "cmd0"), "NPU_OP_KERNEL_WAIT": (0x004, "cmd0"),
    "NPU_OP_CONV": (0x010, "cmd0"), "NPU_OP_DEPTHWISE": (0x011, "cmd0"),
    "NPU_OP_POOL": (0x012, "cmd0"), "NPU_OP_ELEMENTWISE": (0x013, "cmd0"),
    "NPU_OP_MATMUL": (0x014, "cmd0"), "NPU_OP_FULLY_CONNECTED": (0x015, "cmd0"),
    "NPU_OP_ACTIVATION": (0x016, "cmd0"), "NPU_OP_VNCHWCONV": (0x017, "cmd0"),
    "NPU_SET_REGISTER": (0x100, "cmd1"),
}


def op_word(name, param=0):
    """cmd0 per docs §2: param << 16 | opcode."""
    return (param << 16) | OPCODES[name][0]


def set_words(reg, value):
    """NPU_SET_REGISTER per docs §2: [param << 16 | 0x4000 | 0x100, payload]."""
    offset = BY_NAME[reg]["offset"] if isinstance(reg, str) else reg
    return [(offset << 16) | 0x4000 | 0x100, value & 0xFFFFFFFF]


def stream(*parts):
    words = []
    for p in parts:
        words += p if isinstance(p, list) else [p]
    return np.array(words, dtype=np.uint32)


def ctrl(**fields):
    return _core.register_value("NACC_CTRL", fields)


def reference_decode(words):
    """A decoder written from docs/command_stream.md §2 only (no nacc code)."""
    by_value = {(v, k): n for n, (v, k) in OPCODES.items()}
    out, pos = [], 0
    while pos < len(words):
        w = int(words[pos])
        flags, opcode, param = (w >> 10) & 0x3F, w & 0x3FF, w >> 16
        kind = {0b000000: "cmd0", 0b010000: "cmd1"}[flags]
        name = by_value[(opcode, kind)]
        cmd = {"word": pos, "opcode": name, "param": param}
        if kind == "cmd1":
            cmd["payload"] = int(words[pos + 1])
            cmd["register"] = _core.register_name(param)
        out.append(cmd)
        pos += 2 if kind == "cmd1" else 1
    return out


# ---------------------------------------------------------------------------
# Encoding and opcode table


def test_opcode_table_golden():
    table = {o["name"]: (o["value"], o["kind"]) for o in _core.opcode_table()}
    assert table == OPCODES
    values = [v for v, _ in OPCODES.values()]
    assert len(set(values)) == len(values) and 0 not in values and max(values) <= 0x3FF


# (opcode, param) -> the exact word(s), from the bit layout of docs §2.
ENCODING_GOLDEN = [
    ("NPU_OP_STOP", 0, None, [0x00000001]),
    ("NPU_OP_DMA_WAIT", 3, None, [0x00030003]),
    ("NPU_OP_KERNEL_WAIT", 0xFFFF, None, [0xFFFF0004]),
    ("NPU_OP_CONV", 0, None, [0x00000010]),
    ("NPU_SET_REGISTER", 0x0004, 0x11110833, [0x00044100, 0x11110833]),
    ("NPU_SET_REGISTER", 0x2054, 0xFFF, [0x20544100, 0x00000FFF]),
]


@pytest.mark.parametrize("name,param,payload,words", ENCODING_GOLDEN)
def test_encoding_golden(name, param, payload, words):
    cmd = {"opcode": name, "param": param}
    if payload is not None:
        cmd["payload"] = payload
    assert _core.encode_commands([cmd]).tolist() == words
    w0 = words[0]
    assert (w0 >> 10) & 0x3F == (0b010000 if payload is not None else 0)


def test_emitter_words_golden():
    e = _core.Emitter()
    e.set_fields("NACC_KERNEL", K_SIZE_X=3, K_SIZE_Y=3, K_SIZE_XY=8)
    e.set_fields("NACC_CTRL", CONV_MODE=0, POOL_MODE=2, ACT_MODE=4)
    e.op("NPU_OP_CONV")
    e.op("NPU_OP_KERNEL_WAIT", 0)
    e.stop()
    assert e.words.dtype == np.uint32
    assert e.words.tolist() == [0x00044100, 0x11110833, 0x00004100, 0x00000420, 0x00000010,
                                0x00000004, 0x00000001]
    assert e.stopped


# ---------------------------------------------------------------------------
# Region addresses


@pytest.mark.parametrize("region,offset,word", [(0, 0, 0), (1, 0x100, 0x20000100),
                                                (7, (1 << 29) - 1, 0xFFFFFFFF), (3, 0, 0x60000000)])
def test_region_address(region, offset, word):
    assert _core.region_address(region, offset) == word
    assert _core.split_region_address(word) == (region, offset)


@pytest.mark.parametrize("region,offset,message", [
    (8, 0, r"region 8 out of range \[0, 7\]"), (-1, 0, "region -1 out of range"),
    (0, 1 << 29, r"region offset 536870912 out of range \[0, 536870911\]"),
    (0, -1, "region offset -1 out of range")])
def test_region_address_limits(region, offset, message):
    with pytest.raises(ValueError, match=message):
        _core.region_address(region, offset)


def test_region_address_registers():
    names = {r["name"] for r in TABLE if r["region_address"]}
    assert names == {"NACC_QUANT_MUL_DMA_ADDR", "NACC_QUANT_SHIFT_DMA_ADDR", "NACC_IN_ACT_DMA_ADDR",
                     "NACC_BIAS_DMA_ADDR", "NACC_IN_K_DMA_ADDR", "NACC_IN_FM_DMA_ADDR",
                     "NACC_OUT_DMA_ADDR", "NACC_IM2COL_DMA_ADDR", "DMA_SRC", "DMA_DST",
                     "VNCHWCONV_SRC", "VNCHWCONV_DST"}


def test_stream_writable_set_matches_rule():
    """docs §5: the compute bank except NACC_INT_EN, NACC_INT_STATUS, NACC_VERSION, plus DMA_*,
    VNCHWCONV_* and PMU_CTRL; nothing of the host's (CMD, QBASE, BASEP, batch bank)."""
    expected = {r["name"] for r in TABLE if r["bank"] == "compute"} - {
        "NACC_INT_EN", "NACC_INT_STATUS", "NACC_VERSION"}
    expected |= {r["name"] for r in TABLE if r["name"].startswith(("DMA_", "VNCHWCONV_"))}
    expected |= {"PMU_CTRL"}
    assert {r["name"] for r in STREAM_REGS} == expected


# ---------------------------------------------------------------------------
# Emitter shadow

# (case, writes as (register, value), emitted, skipped). The shadow starts at reset values.
SKIP_CASES = [
    ("reset value dropped", [("NACC_KERNEL", 0x11110000), ("NACC_CTRL", 0)], 0, 2),
    ("new value emitted", [("NACC_KERNEL", 0x11110833)], 1, 0),
    ("repeat dropped", [("NACC_KERNEL", 0x11110833)] * 3, 1, 2),
    ("change back emitted", [("NACC_PADDING", 1), ("NACC_PADDING", 0), ("NACC_PADDING", 0)], 2, 1),
    ("registers independent", [("NACC_IN_FM", 1), ("NACC_OUT_FM", 1), ("NACC_IN_FM", 1)], 2, 1),
    ("name and offset share the shadow", [("NACC_IN_FM", 5), (0x0008, 5)], 1, 1),
    ("command-processor registers", [("DMA_LEN", 64), ("DMA_LEN", 64), ("DMA_SRC", 0)], 1, 2),
    ("trigger register never dropped", [("PMU_CTRL", 1)] * 3, 3, 0),
    ("trigger register never dropped, W0 value", [("PMU_CTRL", 2), ("PMU_CTRL", 2)], 2, 0),
]


@pytest.mark.parametrize("case,writes,emitted,skipped", SKIP_CASES, ids=[c[0] for c in SKIP_CASES])
def test_emitter_skips_redundant_writes(case, writes, emitted, skipped):
    e = _core.Emitter()
    for reg, value in writes:
        e.set_register(reg, value)
    assert (e.emitted_writes, e.skipped_writes) == (emitted, skipped)
    assert len(e.words) == 2 * emitted


def test_emitter_without_reset_assumption():
    e = _core.Emitter(assume_reset_state=False)
    assert e.shadow("NACC_KERNEL") is None
    e.set_register("NACC_KERNEL", 0x11110000)
    e.set_register("NACC_KERNEL", 0x11110000)
    assert (e.emitted_writes, e.skipped_writes) == (1, 1)
    assert e.shadow("NACC_KERNEL") == 0x11110000


def test_emitter_forget_and_ops_do_not_change_shadow():
    e = _core.Emitter()
    e.set_fields("NACC_CTRL", CONV_MODE=3, POOL_MODE=2)
    e.op("NPU_OP_DEPTHWISE")
    e.set_fields("NACC_CTRL", CONV_MODE=3, POOL_MODE=2)  # ops leave registers as they are
    assert e.skipped_writes == 1
    e.forget("NACC_CTRL")
    assert e.shadow("NACC_CTRL") is None
    e.op("NPU_OP_CONV")  # NACC_CTRL unknown: the emitter cannot check, the decoder will
    e.set_fields("NACC_CTRL", CONV_MODE=3, POOL_MODE=2)
    assert e.emitted_writes == 2
    e.forget_all()
    assert e.shadow("NACC_KERNEL") is None
    assert e.shadow("PMU_CTRL") is None  # trigger registers are never shadowed


EMITTER_REJECTS = [
    ("host register", lambda e: e.set_register("CMD", 1), r"CMD \(0x1008\) is not stream-writable"),
    ("view", lambda e: e.set_register("BASEP0", 0), r"BASEP0 \(0x1080\) is not stream-writable"),
    ("interrupt status", lambda e: e.set_register("NACC_INT_STATUS", 4), "NACC_INT_STATUS .* not stream-writable"),
    ("interrupt enable", lambda e: e.set_register("NACC_INT_EN", 4), "NACC_INT_EN .* not stream-writable"),
    ("read-only", lambda e: e.set_register("NACC_VERSION", 0), "NACC_VERSION .* not stream-writable"),
    ("region base", lambda e: e.set_register("BATCH0_ADDR0_L", 0), "BATCH0_ADDR0_L .* not stream-writable"),
    ("stream address", lambda e: e.set_register("INSTR_ADDR_L", 0), "not stream-writable"),
    ("reserved bits", lambda e: e.set_register("NACC_PADDING", 0x100),
     r"NACC_PADDING = 0x00000100 sets reserved or read-only bits 0x00000100 \(writable bits 0x000000FF\)"),
    ("START", lambda e: e.set_register("NACC_CTRL", 0x1000), "NACC_CTRL.START must be 0"),
    ("gap", lambda e: e.set_register(0x50, 1), r"no register at offset 0x0050"),
    ("unaligned", lambda e: e.set_register(0x6, 1), r"no register at offset 0x0006"),
    ("kernel mode", lambda e: e.op("NPU_OP_POOL"),
     r"NPU_OP_POOL needs NACC_CTRL CONV_MODE = NONE, POOL_MODE in \{MAX, AVERAGE\}.*has CONV_MODE=CONVOLUTION"),
    ("reserved param", lambda e: e.op("NPU_OP_DMA_START", 1), "NPU_OP_DMA_START: parameter 0x0001 must be 0"),
    ("param range", lambda e: e.op("NPU_OP_DMA_WAIT", 0x10000), r"param 65536 out of range \[0, 65535\]"),
    ("cmd1 as op", lambda e: e.op("NPU_SET_REGISTER"), "NPU_SET_REGISTER is a cmd1; use set_register"),
    ("unknown opcode", lambda e: e.op("NPU_OP_FOO"), r"unknown opcode 'NPU_OP_FOO' \(opcodes: NPU_OP_STOP"),
    ("after stop", lambda e: (e.stop(), e.op("NPU_OP_DMA_WAIT")), "NPU_OP_DMA_WAIT after NPU_OP_STOP"),
    ("field range", lambda e: e.set_fields("NACC_PADDING", PAD_X=16), r"NACC_PADDING.PAD_X: value 16 out of range"),
]


@pytest.mark.parametrize("case,action,message", EMITTER_REJECTS, ids=[c[0] for c in EMITTER_REJECTS])
def test_emitter_rejects(case, action, message):
    e = _core.Emitter()
    with pytest.raises(ValueError, match=message):
        action(e)


# (opcode, NACC_CTRL fields it runs with, fields it does not, the field the message names)
KERNEL_MODES = [
    ("NPU_OP_CONV", dict(CONV_MODE=0, POOL_MODE=2), dict(CONV_MODE=3, POOL_MODE=2), "CONV_MODE=DEPTHWISE"),
    ("NPU_OP_CONV", dict(CONV_MODE=2, POOL_MODE=2, ACT_MODE=1), dict(CONV_MODE=2, POOL_MODE=0), "POOL_MODE=MAX"),
    ("NPU_OP_DEPTHWISE", dict(CONV_MODE=3, POOL_MODE=2), dict(CONV_MODE=3, POOL_MODE=2, IM2COL_EN=1), "IM2COL_EN=1"),
    ("NPU_OP_POOL", dict(CONV_MODE=5, POOL_MODE=1), dict(CONV_MODE=5, POOL_MODE=2), "POOL_MODE=NONE"),
    ("NPU_OP_ELEMENTWISE", dict(CONV_MODE=5, POOL_MODE=2, ELEMENT_EN=1), dict(CONV_MODE=5, POOL_MODE=2), "ELEMENT_EN=0"),
    ("NPU_OP_MATMUL", dict(CONV_MODE=1, POOL_MODE=2, IM2COL_EN=1), dict(CONV_MODE=4, POOL_MODE=2), "CONV_MODE=FULLY_CONNECTED"),
    ("NPU_OP_FULLY_CONNECTED", dict(CONV_MODE=4, POOL_MODE=2), dict(CONV_MODE=4, POOL_MODE=2, ELEMENT_EN=1), "ELEMENT_EN=1"),
    ("NPU_OP_ACTIVATION", dict(CONV_MODE=5, POOL_MODE=2, ACT_MODE=5), dict(CONV_MODE=5, POOL_MODE=2, ACT_MODE=4), "ACT_MODE=NONE"),
]


@pytest.mark.parametrize("opcode,good,bad,named", KERNEL_MODES)
def test_kernel_mode_checked_by_emitter_and_decoder(opcode, good, bad, named):
    e = _core.Emitter()
    e.set_fields("NACC_CTRL", **good)
    e.op(opcode)
    e.stop()
    assert [c["opcode"] for c in _core.decode_stream(e.words)][-2:] == [opcode, "NPU_OP_STOP"]
    e = _core.Emitter()
    e.set_fields("NACC_CTRL", **bad)
    with pytest.raises(ValueError, match=f"{opcode} needs NACC_CTRL .* has {named}"):
        e.op(opcode)
    words = stream(set_words("NACC_CTRL", ctrl(**bad)), op_word(opcode), op_word("NPU_OP_STOP"))
    with pytest.raises(ValueError, match=rf"command stream word 2 \(byte 0x0008\): {opcode} needs .* has {named}"):
        _core.decode_stream(words)


# ---------------------------------------------------------------------------
# Round trips on seeded random streams

KERNEL_CTRL = {k[0]: k[1] for k in KERNEL_MODES}


def writable_mask(reg):
    mask = 0
    for f in reg["fields"]:
        if f["access"] in ("RW", "W1C", "WO"):
            mask |= ((1 << (f["msb"] - f["lsb"] + 1)) - 1) << f["lsb"]
    return mask


def random_stream(seed, length):
    rng = random.Random(seed)
    e = _core.Emitter()
    for _ in range(length):
        choice = rng.random()
        if choice < 0.6:
            reg = rng.choice(STREAM_REGS)
            value = rng.getrandbits(32) & writable_mask(reg)
            if reg["name"] == "NACC_CTRL":
                value &= ~(1 << 12)  # START
            if rng.random() < 0.3:
                value = reg["reset"]
            e.set_register(reg["name"], value)
        elif choice < 0.8:
            opcode = rng.choice(list(KERNEL_CTRL))
            e.set_fields("NACC_CTRL", **KERNEL_CTRL[opcode])
            e.op(opcode)
        else:
            opcode = rng.choice(["NPU_OP_DMA_START", "NPU_OP_VNCHWCONV", "NPU_OP_DMA_WAIT", "NPU_OP_KERNEL_WAIT"])
            e.op(opcode, rng.randrange(4) if opcode.endswith("WAIT") else 0)
    e.stop()
    return e


@pytest.mark.parametrize("seed", range(8))
def test_encode_decode_disassemble_round_trip(seed):
    e = random_stream(seed, length=60)
    words = e.words
    commands = _core.decode_stream(words)
    assert commands == reference_decode(words)  # the document's reading agrees
    assert np.array_equal(_core.encode_commands(commands), words)
    listing = _core.disassemble(words).splitlines()
    assert len(listing) == len(commands)
    for line, c in zip(listing, commands):
        raw = f"{int(words[c['word']]):08X}"
        if c["opcode"] == "NPU_SET_REGISTER":
            raw += f" {int(words[c['word'] + 1]):08X}"
            assert f"NPU_SET_REGISTER {c['register']} = 0x{c['payload']:08X}" in line
        assert line.startswith(f"0x{4 * c['word']:04X}: {raw}")
        assert c["opcode"] in line
    # Replaying the decoded writes through the register file reproduces the emitter's shadow.
    rf = _core.RegisterFile()
    for c in commands:
        if c["opcode"] == "NPU_SET_REGISTER":
            rf.write(c["param"], c["payload"])
    for reg in STREAM_REGS:
        if e.shadow(reg["name"]) is not None:
            assert rf.get(reg["name"]) == e.shadow(reg["name"]), reg["name"]
    assert e.skipped_writes > 0


def test_disassembly_golden():
    """The listing line of docs §8: offset, raw words, decoded fields (strides and dilations
    keep their reset value 1, so NACC_KERNEL = 0x11110833 for a 3x3 kernel)."""
    e = _core.Emitter()
    e.set_fields("NACC_KERNEL", K_SIZE_X=3, K_SIZE_Y=3, K_SIZE_XY=8)
    e.set_register("NACC_IN_FM_DMA_ADDR", _core.region_address(1, 0x100))
    e.set_fields("NACC_FM_OFFSET", IN_FM_OFFSET=-128, OUT_FM_OFFSET=5)
    e.set_fields("NACC_CTRL", CONV_MODE=5, POOL_MODE=1, ACT_MODE=5)
    e.set_register("NACC_PADDING", 0)  # reset value: dropped
    e.op("NPU_OP_POOL")
    e.op("NPU_OP_DMA_WAIT", 2)
    e.stop()
    assert _core.disassemble(e.words) == (
        "0x0000: 00044100 11110833  NPU_SET_REGISTER NACC_KERNEL = 0x11110833 (K_SIZE_X=3 K_SIZE_Y=3 "
        "K_SIZE_XY=8 K_STRIDE_X=1 K_STRIDE_Y=1 K_DILATION_X=1 K_DILATION_Y=1)\n"
        "0x0008: 00484100 20000100  NPU_SET_REGISTER NACC_IN_FM_DMA_ADDR = 0x20000100 (region 1 + 0x00000100)\n"
        "0x0010: 00644100 00000B80  NPU_SET_REGISTER NACC_FM_OFFSET = 0x00000B80 (IN_FM_OFFSET=-128 OUT_FM_OFFSET=5)\n"
        "0x0018: 00004100 00000515  NPU_SET_REGISTER NACC_CTRL = 0x00000515 (CONV_MODE=NONE POOL_MODE=AVERAGE "
        "ACT_MODE=LUT DATA_FORM=INT8)\n"
        "0x0020: 00000012           NPU_OP_POOL\n"
        "0x0024: 00020003           NPU_OP_DMA_WAIT 2\n"
        "0x0028: 00000001           NPU_OP_STOP\n")


# ---------------------------------------------------------------------------
# Malformed streams: (case, words, word index of the error, message)

STOP = op_word("NPU_OP_STOP")
MALFORMED = [
    ("empty", [], 0, "empty stream"),
    ("zero word", [0, STOP], 0, r"unknown cmd0 opcode 0x000 \(opcode 0 is reserved"),
    ("unknown cmd0 opcode", [op_word("NPU_OP_DMA_WAIT"), 0x3FF, STOP], 1, "word 0x000003FF: unknown cmd0 opcode 0x3FF"),
    ("unknown cmd1 opcode", [0x00004155, 0, STOP], 0, "unknown cmd1 opcode 0x155"),
    ("non-zero cmd0 flags", [0x00000401, STOP], 0, "has flags 0x01 in bits 15..10: must be 0x00 .cmd0. or 0x10 .cmd1."),
    ("high flag bit", [STOP | 0x8000], 0, "has flags 0x20"),
    ("cmd1 opcode with cmd0 flags", [0x00040100, 0x11110833, STOP], 0, "NPU_SET_REGISTER is a cmd1 .flags 0x10. but the word has cmd0 flags"),
    ("cmd0 opcode with cmd1 flags", [0x00004001, 0], 0, "NPU_OP_STOP is a cmd0 .flags 0x00. but the word has cmd1 flags"),
    ("truncated cmd1", [op_word("NPU_OP_DMA_WAIT"), set_words("NACC_KERNEL", 0)[0]], 1,
     "truncated NPU_SET_REGISTER: the stream ends before its payload word"),
    ("missing STOP", [op_word("NPU_OP_DMA_WAIT"), *set_words("NACC_PADDING", 1)], 3, "stream ends without NPU_OP_STOP"),
    ("words after STOP", [STOP, op_word("NPU_OP_DMA_WAIT")], 1, r"1 word\(s\) after NPU_OP_STOP"),
    ("two STOPs", [STOP, STOP], 1, "NPU_OP_STOP must be the last command"),
    ("reserved parameter", [op_word("NPU_OP_CONV", 1), STOP], 0, "NPU_OP_CONV: parameter 0x0001 must be 0"),
    ("STOP parameter", [op_word("NPU_OP_STOP", 0x8000)], 0, "NPU_OP_STOP: parameter 0x8000 must be 0"),
    ("unaligned register", [*set_words(0x0006, 1), STOP], 0, "register offset 0x0006 is not a multiple of 4"),
    ("register gap", [*set_words(0x0050, 1), STOP], 0, r"no register at offset 0x0050 \(NACC compute bank"),
    ("outside the map", [*set_words(0x3000, 1), STOP], 0, "outside the register map"),
    ("host register", [*set_words("CMD", 1), STOP], 0, r"CMD \(0x1008\) is not stream-writable"),
    ("region base", [*set_words("BATCH2_ADDR1_L", 1), STOP], 0, "BATCH2_ADDR1_L .* not stream-writable"),
    ("read-only register", [*set_words("NACC_VERSION", 0), STOP], 0, "NACC_VERSION .* not stream-writable"),
    ("reserved bits", [*set_words("NACC_DMA_OUT_TRANS_LEN", 0x10000), STOP], 0, "sets reserved or read-only bits 0x00010000"),
    ("START bit", [*set_words("NACC_CTRL", 0x1000), STOP], 0, "NACC_CTRL.START must be 0"),
    ("kernel at reset NACC_CTRL", [op_word("NPU_OP_ELEMENTWISE"), STOP], 0, "NPU_OP_ELEMENTWISE needs NACC_CTRL"),
    ("error late in a stream", [*set_words("NACC_PADDING", 1)] * 5 + [0xFFFFFFFF], 10, "flags 0x3F"),
]


@pytest.mark.parametrize("case,words,word,message", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_stream_rejected_with_offset(case, words, word, message):
    arr = np.array(words, dtype=np.uint32)
    position = rf"command stream word {word} \(byte 0x{4 * word:04X}\): "
    with pytest.raises(ValueError, match=position + ".*" + message):
        _core.decode_stream(arr)
    with pytest.raises(ValueError, match=position):
        _core.disassemble(arr)
    listing = _core.disassemble(arr, best_effort=True)
    assert re.search(rf"^0x{4 * word:04X}: .*error: .*{message}", listing, re.M), listing


def test_best_effort_listing_continues_after_state_error():
    words = stream(op_word("NPU_OP_POOL"), op_word("NPU_OP_DMA_WAIT"), STOP)
    lines = _core.disassemble(words, best_effort=True).splitlines()
    assert lines[0].endswith("NPU_OP_POOL")
    assert "error: NPU_OP_POOL needs NACC_CTRL" in lines[1]
    assert lines[2:] == ["0x0004: 00000003           NPU_OP_DMA_WAIT 0",
                         "0x0008: 00000001           NPU_OP_STOP"]


def test_words_must_be_uint32_vector():
    with pytest.raises(TypeError, match="words: expected dtype uint32, got int64"):
        _core.decode_stream(np.array([1], dtype=np.int64))
    with pytest.raises(ValueError, match="words: expected 1 dimensions, got 2"):
        _core.decode_stream(np.zeros((1, 1), dtype=np.uint32))


# ---------------------------------------------------------------------------
# Documentation


def test_checked_in_doc_is_current():
    """docs/command_stream.md's generated tables match the C++ tables (python -m nacc.docs_gen)."""
    text = (REPO_ROOT / docs_gen.DOC_PATH).read_text(encoding="utf-8")
    assert docs_gen.render(text) == text, "docs/command_stream.md is stale: run python -m nacc.docs_gen"
    for block in ("opcodes", "registers", "example"):
        assert f"<!-- BEGIN GENERATED: {block} -->" in text
    assert "## 9. Program container" in text


def test_doc_example_stream_is_valid():
    e = docs_gen.example_stream()
    assert _core.decode_stream(e.words)[-1]["opcode"] == "NPU_OP_STOP"
    assert e.skipped_writes == 2
    assert pathlib.Path(docs_gen.DOC_PATH).name == "command_stream.md"

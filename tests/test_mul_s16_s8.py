"""The element-wise unit's MUL_S16_S8 mode (NACC_ELEMENTWISE.ELEMENTWISE_MODE = 4'b0100 with
NACC_CTRL.DATA_FORM = INT16, NACC_SPEC §9, docs/device_model.md §4): int16 inputs (2-byte
elements on the IFM and operand DMAs), an int8 output (1-byte elements on the output DMA).

The reference is a numpy transcription of CMSIS-NN's documented arm_elementwise_mul_s16_s8
arithmetic, written from its behaviour: the int32 product, arm_nn_requantize (the
non-single-rounding form: a left shift of max(shift, 0), the doubling high multiply
floor((x * m + 2^30) / 2^31), then the rounding divide by 2^max(-shift, 0) with its
remainder / threshold rule), plus out_offset, clamped. The NPU's registers add the input
offsets and the activation bounds that CMSIS-NN's int16 MUL (arm_elementwise_mul_s16) has;
with offsets 0 and bounds [-128, 127] it is CMSIS-NN's function exactly.

Covered: the unit (nacc._core.mul_s16_s8) on every kernel path, >= 100 random cases with
int16 extremes, offsets, multipliers, shifts and bounds; the device (step and replay) on
hand-written streams, tiled, multi-core, with a broadcast operand; the register faults; the
delegate's MUL int16 x int16 -> int8 compiling to one such command, replay == step.
"""
from __future__ import annotations

import glob
import os
import tempfile

import numpy as np
import pytest

import nacc
from nacc import _core
import nacc_streams as ns
from nacc_streams import Layer, Tile, grid

INT16_EXTREMES = np.array([-32768, -32767, 32767, 0, 1, -1], np.int16)


# ---- numpy transcription of CMSIS-NN's arithmetic --------------------------------------

def cmsis_requantize(val, mult, shift):
    """arm_nn_requantize (CMSIS_NN_USE_SINGLE_ROUNDING off) on int64 arrays of int32 values."""
    val = np.asarray(val, np.int64)
    left, right = max(shift, 0), max(-shift, 0)
    v = val * (1 << left)
    v = ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)  # the int32 product val * (1 << left)
    # arm_nn_doubling_high_mult_no_sat: (2^30 + v * m) >> 31 in 64 bits
    high = (np.int64(1 << 30) + v * np.int64(mult)) >> 31
    # arm_nn_divide_by_power_of_two
    mask = (1 << right) - 1
    remainder = high & mask
    result = high >> right
    threshold = (mask >> 1) + (result < 0)
    return result + (remainder > threshold)


def cmsis_mul_s16_s8(a, b, mult, shift, out_offset=0, in1_offset=0, in2_offset=0,
                     act_min=-128, act_max=127):
    a, b = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(b, np.int64))
    prod = (a + in1_offset) * (b + in2_offset)
    assert np.all(np.abs(prod) < 2 ** 31)
    v = cmsis_requantize(prod, mult, shift) + out_offset
    return np.clip(v, act_min, act_max).astype(np.int8)


def test_transcription_against_known_values():
    """The transcription itself: TFLite's (2^16, -8) Q0.15 product and hand-checked ties."""
    # 2^16 / 2^31 / 2^8 = 2^-23: a * b / 2^23, halves away from zero in the doubling step,
    # then the divide's rule (ties away from zero).
    assert cmsis_requantize([1 << 23, 3 << 22, -(3 << 22), 1 << 30], 1 << 16, -8).tolist() == \
        [1, 2, -2, 128]
    assert cmsis_requantize([5], (1 << 30), 0).tolist() == [3]   # 2.5 -> 3
    assert cmsis_requantize([-5], (1 << 30), 0).tolist() == [-2]  # -2.5 -> -2 (floor((-5 * 2^30 + 2^30) / 2^31))


# ---- the unit ------------------------------------------------------------------------

def random_unit_case(i):
    rng = np.random.default_rng(9100 + i)
    shape = (1, int(rng.integers(1, 6)), int(rng.integers(1, 7)), int(rng.integers(1, 20)))
    a = rng.integers(-32768, 32768, shape).astype(np.int16)
    b = rng.integers(-32768, 32768, shape).astype(np.int16)
    flat = a.reshape(-1)
    flat[: min(flat.size, INT16_EXTREMES.size)] = INT16_EXTREMES[: flat.size]
    b.reshape(-1)[: min(b.size, 3)] = np.array([-32768, 32767, -32768], np.int16)[: min(b.size, 3)]
    if i % 7 == 3:
        b = b[:, :1, :1, :]  # one pixel broadcast
    mult = int(rng.choice([1 << 16, (1 << 31) - 1, 1 << 30, 0, 1, int(rng.integers(0, 1 << 31))]))
    shift = int(rng.choice([-8, 0, -31, int(rng.integers(-31, 1))]))
    lo = int(rng.integers(-128, 128))
    hi = int(rng.integers(lo, 128))
    if i % 3 == 0:
        lo, hi = -128, 127
    kw = dict(output_multiplier=mult, output_shift=shift,
              output_zero_point=int(rng.choice([0, -128, 127, -256, 255, int(rng.integers(-256, 256))])),
              input1_offset=int(rng.choice([0, -256, 255, int(rng.integers(-256, 256))])),
              input2_offset=int(rng.choice([0, -256, 255, int(rng.integers(-256, 256))])),
              act_min=lo, act_max=hi)
    return a, b, kw


def kernel_paths():
    return ["reference"] + [p for p in _core.kernel_paths() if p != "reference"]


@pytest.mark.parametrize("path", kernel_paths())
def test_unit_matches_cmsis_arithmetic(path):
    """120 random cases (int16 extremes, offsets +-256, multipliers 0 .. 2^31 - 1, shifts -31 .. 0,
    output zero points over 9 bits, random bounds, broadcast operands) on each kernel path."""
    _core.set_kernel_path(path)
    try:
        for i in range(120):
            a, b, kw = random_unit_case(i)
            got = _core.mul_s16_s8(a, b, **kw)
            want = cmsis_mul_s16_s8(a, b, kw["output_multiplier"], kw["output_shift"],
                                    kw["output_zero_point"], kw["input1_offset"],
                                    kw["input2_offset"], kw["act_min"], kw["act_max"])
            assert got.dtype == np.int8 and got.shape == want.shape, i
            bad = np.argwhere(got != want)
            assert bad.size == 0, (i, kw, bad[:3])
    finally:
        _core.set_kernel_path("auto")


def test_unit_every_product_extreme():
    """Every pair of int16 extremes with offsets +-256 and the TFLite mapping (2^16, -8)."""
    v = np.array([-32768, -32767, -1, 0, 1, 32766, 32767], np.int16)
    a, b = np.meshgrid(v, v)
    for o1 in (-256, 0, 255):
        for o2 in (-256, 0, 255):
            got = _core.mul_s16_s8(a, b, output_multiplier=1 << 16, output_shift=-8,
                                   input1_offset=o1, input2_offset=o2, output_zero_point=-5)
            np.testing.assert_array_equal(got, cmsis_mul_s16_s8(a, b, 1 << 16, -8, -5, o1, o2))


@pytest.mark.parametrize("kw, fragment", [
    (dict(output_shift=1), "output_shift 1 out of range"),
    (dict(output_multiplier=-1), "output_multiplier"),
    (dict(input1_offset=256), "IN_ELEMENT_OFFSET1"),
    (dict(input2_offset=-257), "IN_ELEMENT_OFFSET2"),
    (dict(output_zero_point=300), "OUT_FM_OFFSET"),
    (dict(act_min=-129), "NACC_ACT_MIN"),
    (dict(act_min=5, act_max=4), "NACC_ACT_MIN"),
])
def test_unit_register_limits(kw, fragment):
    a = np.zeros((1, 2, 2, 3), np.int16)
    args = dict(output_multiplier=1 << 16, output_shift=-8)
    args.update(kw)
    with pytest.raises(ValueError, match=fragment):
        _core.mul_s16_s8(a, a, **args)


def test_unit_wrong_dtype():
    with pytest.raises(TypeError):
        _core.mul_s16_s8(np.zeros(4, np.int8), np.zeros(4, np.int16), output_multiplier=1,
                         output_shift=0)


# ---- the device ----------------------------------------------------------------------

def layer(rng, h, w, c, broadcast=False, **kw):
    x = rng.integers(-32768, 32768, (1, h, w, c)).astype(np.int16)
    x.reshape(-1)[:3] = (-32768, 32767, -32767)
    x2 = rng.integers(-32768, 32768, (1, 1, 1, c) if broadcast else (1, h, w, c)).astype(np.int16)
    x2.reshape(-1)[:2] = (-32768, 32767)
    mult = kw.pop("mult", int(rng.integers(1 << 14, 1 << 31)))
    shift = kw.pop("shift", int(rng.integers(-20, -6)))
    ew = dict(input1_offset=int(rng.integers(-256, 256)), input2_offset=int(rng.integers(-256, 256)))
    ew.update(kw.pop("ew", {}))
    args = dict(out_zp=int(rng.integers(-128, 128)), act_min=-128, act_max=127)
    args.update(kw)
    return Layer("mul_s16_s8", x, x2=x2, mult=np.array([mult], np.int32),
                 shift=np.array([shift], np.int32), ew=ew, **args)


def expected(L):
    return cmsis_mul_s16_s8(L.x, L.x2, int(L.mult[0]), int(L.shift[0]), L.out_zp,
                            L.ew["input1_offset"], L.ew["input2_offset"], L.act_min, L.act_max)


def run(p, ins, cores, kb=64, execution="step"):
    rt = _core.Runtime(cores=cores, sram_kb=kb, execution=execution)
    outs, stats = rt.run(p, ins, timeline=True)
    return np.ascontiguousarray(outs[0]).view(np.int8), stats


@pytest.mark.parametrize("case", range(12))
def test_device_step_and_replay_match_cmsis(case):
    """Random layers as 1 to 6 tiles (single core, or split height over 2 / 4 cores), one
    broadcast operand in three: step == replay == the transcription, counters equal, and the
    cycles follow docs/performance_model.md: ceil(5 h w C / 16) per tile (2 + 2 + 1 bytes)."""
    rng = np.random.default_rng(300 + case)
    cores = [1, 2, 4][case % 3]
    h, w, c = int(rng.integers(cores, 9)), int(rng.integers(1, 9)), int(rng.integers(1, 40))
    L = layer(rng, h, w, c, broadcast=case % 3 == 2,
              act_min=int(rng.integers(-128, 0)), act_max=int(rng.integers(0, 128)))
    if cores == 1:
        tiles = grid(h, w, int(rng.integers(1, h + 1)), int(rng.integers(1, w + 1)))
    else:
        tiles = [Tile(0, h, 0, w, mode=2, cores=cores)]
    p, ins = ns.single_layer(L, tiles, cores=cores)
    want = expected(L)
    got, st = run(p, ins, cores)
    np.testing.assert_array_equal(got.reshape(want.shape), want)
    np.testing.assert_array_equal(L.reference(), want)
    rgot, rst = run(p, ins, cores, execution="replay")
    np.testing.assert_array_equal(rgot, got)
    from test_replay import COUNTERS
    for k in COUNTERS:
        assert rst[k] == st[k], k
    assert _core.Runtime(cores=cores, sram_kb=64).plan_summary(p)["plan"]
    if cores == 1:
        # bus-bound: 5 bytes an element per tile, as the counters add them up
        mac = sum(-(-5 * t.h * t.w * c // 16) for t in tiles)
        assert st["mac_cycles"] == mac, (st["mac_cycles"], mac)
        assert st["dma_write_bytes"] == h * w * c  # one byte per output element
        assert st["dma_read_bytes"] >= 2 * h * w * c + 2 * c


def test_device_output_pitch_is_bytes():
    """The output DMA moves 1-byte elements: an OFM pixel pitch wider than C (a channel slice
    of a larger int8 tensor) writes C bytes a pixel and leaves the rest."""
    rng = np.random.default_rng(5)
    L = layer(rng, 3, 4, 6)
    p, ins = ns.single_layer(L, [Tile(0, 3, 0, 4)], out_pitch=(6, 24))
    got, _ = run(p, ins, 1)
    np.testing.assert_array_equal(got.reshape(1, 3, 4, 6), expected(L))


def fault(L, match, **patch):
    p, ins = ns.single_layer(L, [Tile(0, L.x.shape[1], 0, L.x.shape[2])], patch=patch or None)
    for execution in ("step", "replay"):
        with pytest.raises(nacc.DeviceFault, match=match):
            run(p, ins, 1, execution=execution)


@pytest.mark.parametrize("change, match", [
    (dict(ew=dict(left_shift=3)), r"MUL_S16_S8 multiplies the offset inputs unscaled"),
    (dict(ew=dict(input1_multiplier=5)), r"NACC_ELEMENT_QUANT1/2_MULT"),
    (dict(ew=dict(input2_shift=-1)), r"NACC_ELEMENT_QUANT1/2_MULT"),
    (dict(in_zp=-3), r"IN_FM_OFFSET must be 0"),
    (dict(act_max=128), r"writes int8; NACC_ACT_MIN / NACC_ACT_MAX"),
    (dict(act_min=-200), r"writes int8"),
    (dict(shift=2), r"output_shift 2 out of range \[-31, 0\]"),
    (dict(mult=-5), r"output_multiplier"),
])
def test_register_faults(change, match):
    rng = np.random.default_rng(1)
    kw = dict(change)
    ew = kw.pop("ew", {})
    L = layer(rng, 2, 3, 5, ew=ew, **kw)
    fault(L, match)


def test_mode_needs_the_16_bit_form_and_no_input_quant():
    """MUL_S16_S8 on DATA_FORM INT8 faults (it reads int16 inputs); so does
    ELEMENT_INPUT_QUANT_EN = 1; the mode, not DATA_FORM, sets the output element size."""
    rng = np.random.default_rng(2)
    L = layer(rng, 2, 3, 5)
    fields = dict(CONV_MODE=5, POOL_MODE=2, ACT_MODE=4, QUANT_EN=1, BIAS_EN=0, FM_UPD=1,
                  K_UPD=1, ELEMENT_EN=1, ELEMENT_INPUT_QUANT_EN=0, DATA_FORM=1)
    for change, match in (
            (dict(DATA_FORM=0), r"MUL_S16_S8 multiplies int16 inputs: it needs "
                                r"NACC_CTRL.DATA_FORM = INT16, not INT8"),
            (dict(ELEMENT_INPUT_QUANT_EN=1),
             r"ELEMENT_INPUT_QUANT_EN = 1 with ELEMENTWISE_MODE MUL_S16_S8")):
        f = dict(fields, **change)
        fault(L, match, NACC_CTRL=_core.register_value("NACC_CTRL", f))
    L = layer(rng, 2, 3, 5, out_zp=0)
    # The mode picks the output element size: the same stream in the 16-bit MUL mode writes
    # int16, so its 5-byte OFM pixel pitch (5 int8 channels) is too short.
    fault(L, r"DMA_OUT_TRANS_LEN = 5 is less than OUT_FM_CH = 5 x 2 bytes",
          NACC_ELEMENTWISE=_core.register_value("NACC_ELEMENTWISE", dict(ELEMENTWISE_MODE=8)))


# ---- the compiler: TFLite MUL int16 x int16 -> int8 as one command -----------------------

def _programs(model, cores, kb):
    from tflite_builder import make_interpreter
    with tempfile.TemporaryDirectory() as tmp:
        d = nacc.load_delegate(log_level="off", dump_dir=tmp, cores=cores, sram_kb=kb)
        interp = make_interpreter(model, delegates=[d])
        interp.allocate_tensors()
        del interp
        return [_core.Program.from_bytes(open(f, "rb").read())
                for f in sorted(glob.glob(os.path.join(tmp, "*.program")))]


@pytest.mark.parametrize("cores, kb", [(1, 32), (8, 16), (32, 32)])
@pytest.mark.parametrize("seed", [1, 2, 4])
def test_delegate_mul_int16_to_int8_is_one_command_and_replays(seed, cores, kb):
    """The delegate's Program for MUL int16 x int16 -> int8 has no staging pass: its kernel
    commands are MUL_S16_S8 element-wise commands only (one per tile), and replay == step."""
    from test_int16_delegate import random_mul_s16_s8_case
    from test_replay16 import _inputs16
    model, _, _ = random_mul_s16_s8_case(seed)
    progs = _programs(model, cores, kb)
    assert len(progs) == 1
    prog = progs[0]
    summary = _core.Runtime(cores=cores, sram_kb=kb).plan_summary(prog)
    assert summary["plan"], summary
    x = _inputs16(prog, seed)
    ref, ref_stats = _run_bytes(prog, x, cores, kb, "step")
    for t in (1, 2):
        got, stats = _run_bytes(prog, x, cores, kb, "replay", t)
        assert np.array_equal(ref, got)
        from test_replay import COUNTERS
        for k in COUNTERS:
            assert stats[k] == ref_stats[k], k
    info = _core.program_info(prog)
    # int8 output: one byte an element
    assert [int(o["size"]) for o in info["outputs"]] == [int(np.prod(o["shape"])) for o in info["outputs"]]
    text = _core.disassemble(np.asarray(prog.commands, dtype=np.uint32))
    ops = [ln.split()[-1] for ln in text.splitlines() if ln.split() and ln.split()[-1].startswith("NPU_OP_")
           and "KERNEL_WAIT" not in ln and "STOP" not in ln]
    assert ops and set(ops) == {"NPU_OP_ELEMENTWISE"}, ops  # no activation (LUT) pass
    modes = [ln for ln in text.splitlines() if "NACC_ELEMENTWISE =" in ln]
    assert modes and all("ELEMENTWISE_MODE=MUL_S16_S8" in ln for ln in modes), modes
    assert ref_stats["kernels"] == len(ops)


def _run_bytes(program, inputs, cores, kb, execution, threads=1):
    rt = _core.Runtime(cores=cores, sram_kb=kb, threads=threads, execution=execution)
    outs, stats = rt.run(program, [x.view(np.int8) for x in inputs], timeline=True)
    return np.asarray(outs[0]).copy(), stats


def _set(field, value):
    def change(f):
        f[field] = value
        return f
    return change


# The element-wise registers of the mode, then the shared tile / address mutations; the
# third entry: a valid value that may keep the bits (offsets on products scaled by 2^-23).
EW_MUTATIONS = [
    ("NACC_ELEMENTWISE", _set("ELEMENTWISE_MODE", 8), False),    # the 16-bit MUL: int16 output
    ("NACC_ELEMENTWISE", _set("ELEMENTWISE_MODE", 2), False),    # ADD
    ("NACC_ELEMENTWISE", _set("LEFT_SHIFT", 1), False),
    ("NACC_ELEMENTWISE", _set("IN_ELEMENT_OFFSET1", 255), True),
    ("NACC_ELEMENTWISE", _set("IN_ELEMENT_OFFSET2", -256), True),
    ("NACC_ELEMENT_QUANT1_MULT", _set("IN_ELEMENT_MULT1", 1), False),
    ("NACC_ELEMENT_QUANT2_SHIFT", _set("IN_ELEMENT_SHIFT2", -1), False),
    ("NACC_CTRL", _set("DATA_FORM", 0), False),
    ("NACC_CTRL", _set("ELEMENT_INPUT_QUANT_EN", 1), False),
    ("NACC_FM_OFFSET", _set("IN_FM_OFFSET", 1), False),
    ("NACC_FM_OFFSET", _set("OUT_FM_OFFSET", 3), False),
    ("NACC_ACT_MAX", _set("ACT_MAX", 128), False),
    # the compiler runs the op as 30 rows of one pixel: the OFM row pitch is C int8 bytes
    ("NACC_DMA_OFFSET2", lambda f: dict(f, OUT_DMA_OFFSET=f["OUT_DMA_OFFSET"] - 1), False),
    ("NACC_DMA_OFFSET2", lambda f: dict(f, OUT_DMA_OFFSET=f["OUT_DMA_OFFSET"] * 2), False),
    ("NACC_DMA_PARAA", lambda f: dict(f, K_TRANS_OFFSET=f["K_TRANS_OFFSET"] - 1), False),
    ("NACC_QUANT_SHIFT_DMA_ADDR",
     lambda f: dict(f, QUANT_SHIFT_DMA_ADDR=f["QUANT_SHIFT_DMA_ADDR"] + 4), False),
]


# Registers of the shared list an element-wise command does not read (no window, no bias).
UNREAD = {"NACC_KERNEL", "NACC_PADDING", "NACC_BIAS_DMA_ADDR"}


def _mul_model():
    """MUL int16 x int16 -> int8, 6 x 5 x 24, output zero point -3, no fused activation."""
    from delegate_models import ModelBuilder
    from int16_models import input16
    from tflite_builder import QTensor
    m = ModelBuilder(3)
    a, b = input16(m, (1, 6, 5, 24), 1e-3), input16(m, (1, 6, 5, 24), 3e-4)
    o = m.tensor(QTensor((1, 6, 5, 24), "int8", scale=0.05, zero_point=-3))
    m.g.add_op("MUL", [a, b], [o], dict(fused_activation_function="NONE"), version=4)
    return m.build([o])


def test_corrupted_registers_fault_or_change_bits_the_same_both_ways():
    """Each mutation of the compiled MUL int16 -> int8 stream's first command (its mode
    registers, then the shared tile / address list of test_compiler) raises DeviceFault or
    changes the output bits — never passes silently — and replay gives step's fault message,
    or its bits and counters."""
    from test_compiler import MUTATIONS, _mutated
    from test_replay import COUNTERS
    from test_replay16 import _inputs16
    (prog,) = _programs(_mul_model(), 4, 16)
    words = _core.program_info(prog)["commands"]
    x = _inputs16(prog, 0)
    good, _ = _run_bytes(prog, x, 4, 16, "step")
    assert len(np.unique(good)) > 20
    faults = changed = 0
    for i, (register, change, may_keep) in enumerate(
            EW_MUTATIONS + [(r, c, False) for r, c in MUTATIONS if r not in UNREAD]):
        bad = _core.Program.from_bytes(prog.to_bytes())
        try:
            bad.commands = _mutated(words, register, change)
        except (ValueError, KeyError):  # a field this stream does not use / cannot go below 0
            continue
        outcome = []
        for execution in ("step", "replay"):
            try:
                outcome.append(_run_bytes(bad, x, 4, 16, execution))
            except nacc.DeviceFault as e:
                outcome.append(str(e))
        ref, got = outcome
        if isinstance(ref, str):
            faults += 1
            assert got == ref, (register, i, got, ref)
            continue
        assert not isinstance(got, str), (register, i, got)
        assert np.array_equal(ref[0], got[0]), (register, i)
        for k in COUNTERS:
            assert ref[1][k] == got[1][k], (register, i, k)
        if may_keep:
            continue
        assert not np.array_equal(ref[0], good), f"{register} (mutation {i}): the change passed silently"
        changed += 1
    assert faults >= 10 and changed >= 2, (faults, changed)

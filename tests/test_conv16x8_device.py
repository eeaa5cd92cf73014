"""16-bit feature maps on the device (NACC_CTRL.DATA_FORM = 01, NACC_SPEC §9),
NPU_OP_CONV and NPU_OP_DEPTHWISE only: int16 maps with zero point 0 (2 bytes per element in SRAM
and on the bus), int8 weights, int64 bias entries within 40 bits, an int64
accumulator and TFLite's int64 MultiplyByQuantizedMultiplier with the reduced
16-bit multiplier. Device-level tests (streams from tests/nacc_streams.py)
against a numpy model of TFLite 2.21's 16x8 CONV_2D arithmetic, and against
TFLite BUILTIN_REF itself on flatbuffer models. No compiler or frontend emits
DATA_FORM = 01 yet; the execution plan refuses it and the runtime steps.
"""
from __future__ import annotations

import numpy as np
import pytest

import nacc
from nacc import _core
import nacc_streams as ns
from nacc_streams import Layer, Tile, grid
from quant_helpers import conv_multipliers
from tflite_builder import QTensor, build_model, run_tflite


def tflite_conv_16x8(x, w, bias, mult, shift, stride, pad, out_hw, act=(-32768, 32767)):
    """TFLite's 16x8 CONV_2D (reference_integer_ops::ConvPerChannel, int64
    accumulator; common.cc MultiplyByQuantizedMultiplier(int64_t, ...)):
    acc = bias + sum(x * w) over the taps inside the input (zero point 0),
    m16 = (m + 2^15) >> 16 if m < 0x7FFF0000 else 0x7FFF,
    out = clamp((acc * m16 + 2^(14 - s)) >> (15 - s))."""
    h, wd, _ = x.shape
    cout, kh, kw, _ = w.shape
    (sh, sw), (pt, pl), (oh, ow) = stride, pad, out_hw
    xi, wi = x.astype(np.int64), w.astype(np.int64)
    m16 = np.where(mult.astype(np.int64) < 0x7FFF0000, (mult.astype(np.int64) + (1 << 15)) >> 16,
                   0x7FFF)
    total = 15 - shift.astype(np.int64)
    out = np.zeros((oh, ow, cout), np.int16)
    for oy in range(oh):
        for ox in range(ow):
            acc = np.zeros(cout, np.int64) if bias is None else bias.astype(np.int64).copy()
            for ky in range(kh):
                iy = oy * sh - pt + ky
                if not 0 <= iy < h:
                    continue
                for kx in range(kw):
                    ix = ox * sw - pl + kx
                    if 0 <= ix < wd:
                        acc = acc + wi[:, ky, kx, :] @ xi[iy, ix, :]
            v = (acc * m16 + (np.int64(1) << (total - 1))) >> total
            out[oy, ox] = np.clip(v, act[0], act[1])
    return out


def run_program(p, ins, cores, kb=64, execution="step"):
    rt = _core.Runtime(cores=cores, sram_kb=kb, execution=execution)
    outs, stats = rt.run(p, ins)
    return np.ascontiguousarray(outs[0]).view(np.int16), stats


def random_layer(rng, h, w, cin, cout, k, stride, pad, with_bias=True, act=(-32768, 32767)):
    x = rng.integers(-32768, 32768, (1, h, w, cin)).astype(np.int16)
    wt = rng.integers(-128, 128, (cout, k, k, cin)).astype(np.int8)
    bias = rng.integers(-(1 << 30), 1 << 30, cout).astype(np.int64) if with_bias else None
    # Scales that keep the outputs spread over int16: std(acc) ~ sqrt(n) * 18900 * 74.
    n = k * k * cin
    target = 12000.0 / (np.sqrt(n) * 18900 * 74)
    eff = target * rng.uniform(0.5, 2.0, cout)
    pairs = [_core.quantize_multiplier(float(e)) for e in eff]
    mult = np.array([p[0] for p in pairs], np.int32)
    shift = np.array([p[1] for p in pairs], np.int32)
    L = Layer("conv", x, weights=wt, bias=bias, mult=mult, shift=shift, stride=(stride, stride),
              act_min=act[0], act_max=act[1])
    oh = (h + 2 * pad - k) // stride + 1
    ow = (w + 2 * pad - k) // stride + 1
    L.pad = (pad, max(0, (oh - 1) * stride + k - h - pad), pad,
             max(0, (ow - 1) * stride + k - w - pad))
    want = tflite_conv_16x8(x[0], wt, bias, mult, shift, (stride, stride), (pad, pad), (oh, ow),
                            act)
    return L, want[None]


def cases():
    rng = np.random.default_rng(16)
    out = []
    for i in range(110):
        h, w = int(rng.integers(2, 14)), int(rng.integers(2, 14))
        k = min(int(rng.choice([1, 2, 3, 5])), h, w)
        cin = int(rng.choice([1, 3, 8, 17, 40, 70]))
        cout = int(rng.choice([1, 4, 9, 16, 33]))
        cout = max(1, min(cout, 12000 // (k * k * cin)))  # the weights fit one K area
        out.append(dict(i=i, h=h, w=w, cin=cin, cout=cout, k=k,
                        stride=int(rng.integers(1, 4)), pad=int(rng.integers(0, min(k, 3))),
                        bias=bool(i % 5), split=i % 4))
    return out


@pytest.mark.parametrize("case", cases(), ids=lambda c: f"c{c['i']}")
def test_conv16x8_matches_tflite_arithmetic(case):
    rng = np.random.default_rng(200 + case["i"])
    act = (-32768, 32767) if case["i"] % 3 else (0, 20000)
    L, want = random_layer(rng, case["h"], case["w"], case["cin"], case["cout"], case["k"],
                           case["stride"], case["pad"], case["bias"], act)
    oh, ow = L.out_hw
    split, cores = case["split"], 1
    if split == 0:
        tiles = [Tile(0, oh, 0, ow)]
    elif split == 1:
        tiles = grid(oh, ow, max(1, oh // 2), max(1, ow // 2))
    elif split == 2 and oh >= 2:
        cores = 2
        tiles = [Tile(0, oh, 0, ow, mode=2, cores=2)]
    else:
        cores = 4 if case["cout"] >= 4 else 1
        tiles = [Tile(0, oh, 0, ow, mode=1 if cores > 1 else 0, cores=cores)]
    p, ins = ns.single_layer(L, tiles, cores=cores)
    got, stats = run_program(p, ins, cores)
    np.testing.assert_array_equal(got, want)
    # The replay of the 16-bit Program: the same bits and counters.
    rgot, rstats = run_program(p, ins, cores, execution="replay")
    np.testing.assert_array_equal(rgot, want)
    assert rstats["replayed"] and rstats["cycles"] == stats["cycles"]


def test_plan_replays_16_bit_maps():
    rng = np.random.default_rng(1)
    L, _ = random_layer(rng, 4, 4, 3, 2, 3, 1, 1)
    p, _ = ns.single_layer(L, [Tile(0, 4, 0, 4)])
    s = _core.Runtime().plan_summary(p)
    assert s["plan"], s


def test_conv16x8_extremes():
    """int16 extremes, weights -128 / 127, the largest multiplier (m16 = 0x7FFF),
    shifts at both ends of [-31, 7] and a bias at the 40-bit limit."""
    x = np.full((1, 4, 4, 16), -32768, np.int16)
    x[0, 1::2] = 32767
    wt = np.full((6, 3, 3, 16), 127, np.int8)
    wt[1::2] = -128
    bias = np.array([(1 << 39) - 1, -(1 << 39) + 1, 0, 12345, -1, 1], np.int64)
    mult = np.array([0x7FFFFFFF, 0x7FFF0000, 0x7FFEFFFF, 1 << 30, 0, 1518500250], np.int32)
    shift = np.array([-31, 7, -20, -10, 0, -16], np.int32)
    L = Layer("conv", x, weights=wt, bias=bias, mult=mult, shift=shift, pad=(1, 1, 1, 1),
              act_min=-32768, act_max=32767)
    want = tflite_conv_16x8(x[0], wt, bias, mult, shift, (1, 1), (1, 1), (4, 4))[None]
    assert (want == 32767).any() and (want == -32768).any()  # saturation on both sides
    p, ins = ns.single_layer(L, [Tile(0, 4, 0, 4)])
    got, stats = run_program(p, ins, 1)
    np.testing.assert_array_equal(got, want)
    # Half rate (NACC_SPEC §9): 32 int16 x int8 lanes, so 16 channels take one
    # pass and 40 channels two (int8: one pass up to 64).
    assert stats["mac_cycles"] == 4 * 4 * 6 * 9 * 1
    x40 = np.zeros((1, 4, 4, 40), np.int16)
    L40 = Layer("conv", x40, weights=np.zeros((6, 3, 3, 40), np.int8), bias=bias, mult=mult,
                shift=shift, pad=(1, 1, 1, 1), act_min=-32768, act_max=32767)
    p40, ins40 = ns.single_layer(L40, [Tile(0, 4, 0, 4)])
    assert run_program(p40, ins40, 1)[1]["mac_cycles"] == 4 * 4 * 6 * 9 * 2


@pytest.mark.parametrize("seed", range(4))
def test_conv16x8_equals_tflite_builtin_ref(seed):
    """The device against TFLite itself: a 16x8 CONV_2D flatbuffer (int16 input
    and output with zero point 0, per-channel int8 weights, int64 bias) run on
    BUILTIN_REF, with the multipliers TFLite derives from the scales."""
    rng = np.random.default_rng(seed)
    h, w, cin, cout, k = 7, 6, 5, 6, 3
    s_in, s_out = 0.0005, 0.002
    ws = [float(v) for v in rng.uniform(0.003, 0.02, cout).astype(np.float32)]
    wt = rng.integers(-127, 128, (cout, k, k, cin)).astype(np.int8)
    bias = rng.integers(-(1 << 24), 1 << 24, cout).astype(np.int64)
    x = rng.integers(-32768, 32768, (1, h, w, cin)).astype(np.int16)
    model = build_model("CONV_2D", [
        QTensor((1, h, w, cin), "int16", scale=s_in, zero_point=0),
        QTensor((cout, k, k, cin), "int8", scale=ws, zero_point=[0] * cout, quantized_dimension=0,
                data=wt),
        QTensor((cout,), "int64", scale=[s_in * v for v in ws], zero_point=[0] * cout, data=bias)],
        [QTensor((1, h, w, cout), "int16", scale=s_out, zero_point=0)],
        options=dict(padding="SAME", fused_activation_function="NONE"), version=4)
    (want,) = run_tflite(model, [x])
    mult, shift = conv_multipliers(s_in, ws, s_out, cout)
    L = Layer("conv", x, weights=wt, bias=bias, mult=mult, shift=shift, pad=(1, 1, 1, 1),
              act_min=-32768, act_max=32767)
    p, ins = ns.single_layer(L, grid(h, w, 3, 4))
    got, _ = run_program(p, ins, 1)
    np.testing.assert_array_equal(got, want)


def test_conv16x8_tile_capacity_halves():
    """Two bytes per element in SRAM: the first 6-row tile reads 7 valid input
    rows of 24 x 64 int16 = 21504 bytes, which overflows the 16 KB IFM area of a
    64 KB SRAM (as int8 it would be 10752) and fits the 32 KB area of 128 KB."""
    rng = np.random.default_rng(2)
    L, want = random_layer(rng, 24, 24, 64, 8, 3, 1, 1)
    tiles = [Tile(y, 6, 0, 24) for y in range(0, 24, 6)]
    p, ins = ns.single_layer(L, tiles, sram_kb=128)
    got, _ = run_program(p, ins, 1, kb=128)
    np.testing.assert_array_equal(got, want)
    p, ins = ns.single_layer(L, tiles, sram_kb=64)
    with pytest.raises(nacc.DeviceFault, match=r"IFM tile needs 21504 bytes, area holds 16384"):
        run_program(p, ins, 1, kb=64)


FAULTS = [
    ("offset", dict(in_zp=2), "zero point 0"),
    ("bias_41_bits", dict(bias=1 << 39), "does not fit 40 bits"),
    ("shift_8", dict(shift=8), r"must be in \[-31, 7\]"),
    ("clamp", dict(act_max=40000), "need -32768 <= min <= max <= 32767"),
]


@pytest.mark.parametrize("case,change,match", FAULTS, ids=[c[0] for c in FAULTS])
def test_conv16x8_faults(case, change, match):
    rng = np.random.default_rng(4)
    L, _ = random_layer(rng, 5, 5, 3, 4, 3, 1, 1)
    if "in_zp" in change:
        L.in_zp = change["in_zp"]
    if "bias" in change:
        L.bias[1] = change["bias"]
    if "shift" in change:
        L.shift[2] = change["shift"]
    if "act_max" in change:
        L.act_max = change["act_max"]
    p, ins = ns.single_layer(L, [Tile(0, 5, 0, 5)])
    with pytest.raises(nacc.DeviceFault, match=match):
        run_program(p, ins, 1)


def test_int16_form_on_other_units():
    """NPU_OP_POOL takes int16 maps (device/units/fm16.h: the largest value of
    each window); NPU_OP_ACTIVATION does not (its LUT is for 8-bit data)."""
    x = np.random.default_rng(0).integers(-32768, 32768, (1, 4, 4, 8)).astype(np.int16)
    L = Layer("maxpool", x, kernel=(2, 2), stride=(2, 2), act_min=-32768, act_max=32767)
    p, ins = ns.single_layer(L, [Tile(0, 2, 0, 2)])
    got, _ = run_program(p, ins, 1)
    want = x.reshape(1, 2, 2, 2, 2, 8).max(axis=(2, 4))
    np.testing.assert_array_equal(got, want)
    L = Layer("act", x, act_mode="LUT", lut=np.arange(256).astype(np.int8))
    p, ins = ns.single_layer(L, [Tile(0, 4, 0, 4)])
    with pytest.raises(nacc.DeviceFault, match="only ACT_MODE TANH / SIGMOID"):
        run_program(p, ins, 1)


@pytest.mark.parametrize("mode, op", [("SIGMOID", "LOGISTIC"), ("TANH", "TANH")])
def test_int16_table_modes_on_the_activation_unit(mode, op):
    """NPU_OP_ACTIVATION with DATA_FORM INT16 and ACT_MODE SIGMOID / TANH (the
    16-bit table modes) from a hand-written stream: input multiplier 25165,
    shift 11 (TFLite's for input scale 1e-3) on every 8th int16 value and +-32767, against
    BUILTIN_REF's int16 LOGISTIC / TANH at that scale."""
    from delegate_models import ModelBuilder
    from int16_models import act16, input16
    from tflite_builder import make_interpreter

    x = np.arange(-32768, 32768, 8, dtype=np.int16).reshape(1, 8, 64, 16)  # every 8th value
    x[0, 0, 0, 1], x[0, -1, -1, -1] = -32767, 32767
    L = Layer("act", x, act_mode=mode, mult=np.array([25165], np.int32),
              shift=np.array([11], np.int32), act_min=-32768, act_max=32767)
    p, ins = ns.single_layer(L, [Tile(0, 8, 0, 64)])
    got, _ = run_program(p, ins, 1)
    m = ModelBuilder(0)
    i = input16(m, x.shape, 1e-3)
    o = m.tensor(act16(x.shape, 1.0 / 32768))
    m.g.add_op(op, [i], [o], version=3)
    ref = make_interpreter(m.build([o]))
    ref.allocate_tensors()
    ref.set_tensor(ref.get_input_details()[0]["index"], x)
    ref.invoke()
    np.testing.assert_array_equal(np.asarray(got).view(np.int16).reshape(x.shape),
                                  ref.get_tensor(ref.get_output_details()[0]["index"]))


def tflite_depthwise_16x8(x, w, bias, mult, shift, m, stride, pad, out_hw):
    """TFLite's 16x8 DEPTHWISE_CONV_2D (DepthwiseConvPerChannel, int64
    accumulator): output channel o reads input channel o // m; the output stage
    as tflite_conv_16x8."""
    h, wd, _ = x.shape
    _, kh, kw, cout = w.shape
    (sh, sw), (pt, pl), (oh, ow) = stride, pad, out_hw
    src = np.arange(cout) // m
    xi, wi = x.astype(np.int64)[:, :, src], w.astype(np.int64)[0]
    m16 = np.where(mult.astype(np.int64) < 0x7FFF0000, (mult.astype(np.int64) + (1 << 15)) >> 16,
                   0x7FFF)
    total = 15 - shift.astype(np.int64)
    out = np.zeros((oh, ow, cout), np.int16)
    for oy in range(oh):
        for ox in range(ow):
            acc = bias.astype(np.int64).copy()
            for ky in range(kh):
                iy = oy * sh - pt + ky
                for kx in range(kw):
                    ix = ox * sw - pl + kx
                    if 0 <= iy < h and 0 <= ix < wd:
                        acc = acc + wi[ky, kx] * xi[iy, ix]
            v = (acc * m16 + (np.int64(1) << (total - 1))) >> total
            out[oy, ox] = np.clip(v, -32768, 32767)
    return out


@pytest.mark.parametrize("i", range(40))
def test_depthwise16x8_matches_tflite_arithmetic(i):
    rng = np.random.default_rng(500 + i)
    h, w = int(rng.integers(2, 12)), int(rng.integers(2, 12))
    k = min(int(rng.choice([1, 3, 5])), h, w)
    cin, m = int(rng.choice([1, 5, 16, 40])), int(rng.choice([1, 2, 4]))
    stride, pad = int(rng.integers(1, 3)), int(rng.integers(0, min(k, 3)))
    cout = cin * m
    x = rng.integers(-32768, 32768, (1, h, w, cin)).astype(np.int16)
    x.reshape(-1)[:2] = (-32768, 32767)
    wt = rng.integers(-128, 128, (1, k, k, cout)).astype(np.int8)
    bias = rng.integers(-(1 << 39) + 1, 1 << 39, cout).astype(np.int64) >> int(rng.integers(0, 20))
    eff = 12000.0 / (k * 18900 * 74) * rng.uniform(0.5, 2.0, cout)
    pairs = [_core.quantize_multiplier(float(e)) for e in eff]
    mult = np.array([p[0] for p in pairs], np.int32)
    shift = np.array([p[1] for p in pairs], np.int32)
    L = Layer("depthwise", x, weights=wt, bias=bias, mult=mult, shift=shift,
              stride=(stride, stride), depth_multiplier=m, act_min=-32768, act_max=32767)
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    L.pad = (pad, max(0, (oh - 1) * stride + k - h - pad), pad,
             max(0, (ow - 1) * stride + k - w - pad))
    want = tflite_depthwise_16x8(x[0], wt, bias, mult, shift, m, (stride, stride), (pad, pad),
                                 (oh, ow))[None]
    if i % 3 == 0 or cin == 1:
        tiles, cores = [Tile(0, oh, 0, ow)], 1
    elif i % 3 == 1:
        tiles, cores = grid(oh, ow, max(1, oh // 2), max(1, ow // 2)), 1
    else:  # channel groups of whole input channels
        half = (cin // 2) * m
        tiles = [Tile(0, oh, 0, ow, c0=0, nc=half), Tile(0, oh, 0, ow, c0=half, nc=cout - half)]
        cores = 1
    if oh >= 2 and i % 4 == 3:
        tiles, cores = [Tile(0, oh, 0, ow, mode=2, cores=2)], 2
    p, ins = ns.single_layer(L, tiles, cores=cores)
    got, stats = run_program(p, ins, cores)
    np.testing.assert_array_equal(got, want)
    if len(tiles) == 1 and cores == 1:  # 32 channels per tap and cycle
        assert stats["mac_cycles"] == oh * ow * -(-cout // 32) * k * k


@pytest.mark.parametrize("seed", range(3))
def test_depthwise16x8_equals_tflite_builtin_ref(seed):
    """A 16x8 DEPTHWISE_CONV_2D flatbuffer (version 5) on BUILTIN_REF against the device."""
    rng = np.random.default_rng(seed)
    h, w, cin, m, k = 6, 7, 4, 2, 3
    cout = cin * m
    s_in, s_out = 0.0004, 0.001
    ws = [float(v) for v in rng.uniform(0.003, 0.02, cout).astype(np.float32)]
    wt = rng.integers(-127, 128, (1, k, k, cout)).astype(np.int8)
    bias = rng.integers(-(1 << 24), 1 << 24, cout).astype(np.int64)
    x = rng.integers(-32768, 32768, (1, h, w, cin)).astype(np.int16)
    model = build_model("DEPTHWISE_CONV_2D", [
        QTensor((1, h, w, cin), "int16", scale=s_in, zero_point=0),
        QTensor((1, k, k, cout), "int8", scale=ws, zero_point=[0] * cout, quantized_dimension=3,
                data=wt),
        QTensor((cout,), "int64", scale=[s_in * v for v in ws], zero_point=[0] * cout, data=bias)],
        [QTensor((1, h, w, cout), "int16", scale=s_out, zero_point=0)],
        options=dict(padding="SAME", depth_multiplier=m, fused_activation_function="NONE"),
        version=5)
    (want,) = run_tflite(model, [x])
    mult, shift = conv_multipliers(s_in, ws, s_out, cout)
    L = Layer("depthwise", x, weights=wt, bias=bias, mult=mult, shift=shift, pad=(1, 1, 1, 1),
              depth_multiplier=m, act_min=-32768, act_max=32767)
    p, ins = ns.single_layer(L, grid(h, w, 4, 3))
    got, _ = run_program(p, ins, 1)
    np.testing.assert_array_equal(got, want)

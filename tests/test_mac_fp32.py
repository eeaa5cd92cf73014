"""NACC_ACT_PARA.MAC_FP32 (docs/device_model.md §4): ONNX Runtime's unfused
float32 Conv (DequantizeLinear -> MLAS float Conv -> QuantizeLinear) on
NPU_OP_CONV. The expected outputs come from an independent transcription of
the formula (the lead's emu.c, tests below): x_f = float(x - zx) * s_x (0.0f in
the padding), w_f = float(w) * s_w[c], K in ONNX order (input channel, kernel
row, kernel column), blocks of S products each a chain of libm fmaf from
0.0f, the block sums added in order, + b_f[c], nearbyintf(total / s_y) + zy,
clamped; S per output pixel of the whole output (KBLOCK_LOG2 below
KBLOCK_SPLIT, KBLOCK_TAIL_LOG2 from there). The streams come from
tests/nacc_streams.py and run stepped and replayed (every kernel path), which
must agree bit for bit and counter for counter (test_replay.assert_equivalent).
"""
from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
import pytest

import nacc
from nacc import _core
import nacc_streams as ns
from nacc_streams import Layer, Tile, grid
from test_replay import assert_equivalent

_libm = ctypes.CDLL(ctypes.util.find_library("m"))
_libm.fmaf.restype = ctypes.c_float
_libm.fmaf.argtypes = [ctypes.c_float, ctypes.c_float, ctypes.c_float]
_f32 = np.float32


def _div(a, b):
    return _f32(_f32(a) / _f32(b))


def totals(x, w, entries, stride, pad, zx, kblock):
    """The float32 Conv's sums, loop for loop: x [1, H, W, C] int8, w [OC, KH, KW, C] int8 (the
    NPU's layout; the sum runs in ONNX's (C, KH, KW) order), entries [OC, 4] {s_x, s_w, b_f,
    s_y}. Returns [OH, OW, OC] Python floats (float32 values): the block sums plus b_f."""
    _, H, W, C = x.shape
    OC, KH, KW, _ = w.shape
    (sh, sw), (pt, pb, pl, pr) = stride, pad
    OH, OW = (H + pt + pb - KH) // sh + 1, (W + pl + pr - KW) // sw + 1
    log2, tail_log2, split = kblock
    K = C * KH * KW
    fma = _libm.fmaf
    out = np.zeros((OH, OW, OC), np.float64)
    for oy in range(OH):
        for ox in range(OW):
            n = oy * OW + ox
            S = 1 << (log2 if n < split else tail_log2)
            for c in range(OC):
                sx, sw_, bf, _ = (float(v) for v in entries[c])
                xs, ws = [], []
                for ic in range(C):
                    for ky in range(KH):
                        for kx in range(KW):
                            iy, ix = oy * sh + ky - pt, ox * sw + kx - pl
                            inside = 0 <= iy < H and 0 <= ix < W
                            xs.append(float(_f32(float(int(x[0, iy, ix, ic]) - zx)) * _f32(sx))
                                      if inside else 0.0)
                            ws.append(float(_f32(float(w[c, ky, kx, ic])) * _f32(sw_)))
                total = None
                for k0 in range(0, K, S):
                    acc = 0.0
                    for k in range(k0, min(K, k0 + S)):
                        acc = fma(ws[k], xs[k], acc)
                    total = acc if total is None else float(_f32(total) + _f32(acc))
                out[oy, ox, c] = float(_f32(total) + _f32(bf))
    return out


def quantize(t, entries, zy, act):
    """nearbyintf(total / s_y) + zy (float32 division, round half to even), clamped."""
    q = np.rint((t.astype(np.float32) / entries[:, 3].astype(np.float32)).astype(np.float32))
    return np.clip(q + zy, act[0], act[1]).astype(np.int8)[None]


def reference(x, w, entries, stride, pad, zx, zy, act, kblock):
    return quantize(totals(x, w, entries, stride, pad, zx, kblock), entries, zy, act)


def make_layer(rng, h, w, c, oc, k, stride, pad, kblock, zx=3, zy=-5, act=(-128, 127),
               bias=True):
    kh, kw = k
    x = rng.integers(-128, 128, (1, h, w, c)).astype(np.int8)
    wt = rng.integers(-127, 128, (oc, kh, kw, c)).astype(np.int8)
    sx = _f32(rng.uniform(0.01, 0.05))
    sws = rng.uniform(0.002, 0.02, oc).astype(np.float32)
    # bias = float(int32 bias) * its own scale, as the DequantizeLinear of the bias gives it
    bint = rng.integers(-5000, 5000, oc) if bias else np.zeros(oc, np.int64)
    bf = (bint.astype(np.float32) * (sx * sws).astype(np.float32)).astype(np.float32)
    # an output scale that puts the sums over the int8 range, ties near round numbers
    sy = _f32(np.sqrt(k[0] * k[1] * c) * 127 * 0.02 * 0.01 * 40 / 127 * 3)
    entries = np.stack([np.full(oc, sx, np.float32), sws, bf, np.full(oc, sy, np.float32)], 1)
    L = Layer("conv", x, weights=wt, stride=stride, pad=pad, in_zp=zx, out_zp=zy,
              act_min=act[0], act_max=act[1], mac_fp32=entries.astype(np.float32), kblock=kblock)
    want = reference(x, wt, entries, stride, pad, zx, zy, act, kblock)
    return L, want


def run(p, ins, cores, execution):
    rt = _core.Runtime(cores=cores, sram_kb=64, execution=execution)
    outs, _ = rt.run(p, ins)
    return outs[0]


# (name, h, w, c, oc, kernel, stride, pad (t, b, l, r), (log2, tail log2, split), tiling)
CASES = [
    # 3x3 over 5 channels: K = 45 in blocks of 16 (tail 4) with the split inside a tile
    ("k3_blocks", 6, 7, 5, 20, (3, 3), (1, 1), (1, 1, 1, 1), (4, 2, 17), "grid"),
    # the split across the cores of a height split (2 and 4 cores)
    ("k3_mode2", 8, 5, 4, 9, (3, 3), (1, 1), (1, 1, 1, 1), (3, 5, 13), "mode2x2"),
    ("k3_mode2_4", 9, 6, 3, 17, (3, 3), (1, 1), (0, 1, 1, 0), (2, 4, 20), "mode2x4"),
    # channels split over 4 cores (mode 1), 33 channels: vectors with a tail
    ("k2_mode1", 5, 6, 6, 33, (2, 2), (1, 1), (0, 0, 0, 0), (3, 0, 11), "mode1x4"),
    # 8 cores: the middle cores of a kernel and of a height split derived by the plan
    ("k1_mode1_8", 4, 5, 12, 70, (1, 1), (1, 1), (0, 0, 0, 0), (2, 3, 7), "mode1x8"),
    ("k3_mode2_8", 17, 4, 3, 10, (3, 3), (1, 1), (1, 1, 1, 1), (3, 1, 30), "mode2x8"),
    # the 7x7 stride-2 stem with padding (2, 3, 2, 3) on 3 channels: K = 147
    ("stem", 13, 12, 3, 16, (7, 7), (2, 2), (2, 3, 2, 3), (5, 4, 12), "whole"),
    # pointwise over 70 channels, blocks of 32 (3 per pixel), no tail split
    ("pointwise", 4, 5, 70, 24, (1, 1), (1, 1), (0, 0, 0, 0), (5, 5, 20), "whole"),
    # one chain (S >= K) then blocks of 1 product from the split
    ("chain_then_1", 5, 5, 4, 7, (3, 3), (2, 2), (1, 1, 1, 1), (6, 0, 5), "grid"),
]


def _tiles(kind, oh, ow, oc):
    if kind == "whole":
        return [Tile(0, oh, 0, ow)], 1
    if kind == "grid":
        return grid(oh, ow, max(1, oh // 2), max(1, (ow + 2) // 3)), 1
    if kind.startswith("mode2"):
        n = int(kind[-1])
        return [Tile(0, oh, 0, ow, mode=2, cores=n)], n
    n = int(kind[-1])
    return [Tile(0, oh, 0, ow, mode=1, cores=n)], n


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_mac_fp32_matches_reference(case, kernel_path):
    name, h, w, c, oc, k, stride, pad, kblock, tiling = case
    rng = np.random.default_rng(sum(map(ord, name)))
    L, want = make_layer(rng, h, w, c, oc, k, stride, pad, kblock)
    oh, ow = L.out_hw
    tiles, cores = _tiles(tiling, oh, ow, oc)
    p, ins = ns.single_layer(L, tiles, cores=cores)
    for execution in ("step", "replay"):
        got = run(p, ins, cores, execution)
        assert np.array_equal(got, want), f"{execution}: {int((got != want).sum())} differ"
    assert_equivalent(p, cores, 64, threads=(1, 2))


def test_blocks_change_the_result():
    """The K blocks decide the bits: where one chain over K and blocks of 2 give different
    float32 sums, an output scale that puts the two sums on either side of a rounding tie
    makes the outputs differ, and the device gives each its own result."""
    rng = np.random.default_rng(7)
    L, _ = make_layer(rng, 4, 4, 16, 8, (3, 3), (1, 1), (1, 1, 1, 1), (8, 8, 0))
    chain, pairs = (8, 8, 0), (1, 1, 0)
    t_chain = totals(L.x, L.weights, L.mac_fp32, L.stride, L.pad, L.in_zp, chain)
    t_pairs = totals(L.x, L.weights, L.mac_fp32, L.stride, L.pad, L.in_zp, pairs)
    where = np.argwhere(t_chain != t_pairs)
    assert len(where), "no sum differs: the layer cannot tell the orders apart"
    y, x, c = where[0]
    entries = L.mac_fp32.copy()
    mid = (t_chain[y, x, c] + t_pairs[y, x, c]) / 2
    for n in range(20, 120):  # s_y with the tie n + 1/2 between the two sums
        entries[c, 3] = _f32(abs(mid) / (n + 0.5))
        a, b = (quantize(t, entries, L.out_zp, (-128, 127))[0, y, x, c] for t in (t_chain, t_pairs))
        if a != b:
            break
    else:
        pytest.fail("no output scale separates the two sums")
    results = []
    for kblock, t in ((chain, t_chain), (pairs, t_pairs)):
        lay = Layer(**{**L.__dict__, "mac_fp32": entries, "kblock": kblock})
        p, ins = ns.single_layer(lay, [Tile(0, 4, 0, 4)])
        for execution in ("step", "replay"):
            got = run(p, ins, 1, execution)
            assert np.array_equal(got, quantize(t, entries, L.out_zp, (-128, 127))), execution
        results.append(got[0, y, x, c])
    assert results[0] != results[1]


def test_relu_clamp_uint8_zero_points_and_bias():
    """A fused ReLU is the clamp [zy, 127]; zero points at the ends of the int8 range (the
    shifted zero points of uint8 models: zx = -128, zy = 127 - ...), a large bias."""
    rng = np.random.default_rng(11)
    for zx, zy, act in ((-128, -128, (-128, 127)), (127, 20, (20, 127)), (-100, 0, (0, 127))):
        L, want = make_layer(rng, 6, 6, 5, 18, (3, 3), (2, 2), (1, 1, 1, 1), (4, 3, 4), zx=zx,
                             zy=zy, act=act)
        p, ins = ns.single_layer(L, grid(3, 3, 2, 2))
        for execution in ("step", "replay"):
            assert np.array_equal(run(p, ins, 1, execution), want), (zx, zy, execution)


def _base_layer():
    rng = np.random.default_rng(3)
    L, _ = make_layer(rng, 5, 5, 4, 8, (3, 3), (1, 1), (1, 1, 1, 1), (3, 2, 10))
    return L


def _fault(L, tiles, patch, cores=1):
    p, ins = ns.single_layer(L, tiles, cores=cores, patch=patch)
    for execution in ("step", "replay"):
        rt = _core.Runtime(cores=cores, sram_kb=64, execution=execution)
        with pytest.raises(nacc.DeviceFault) as e:
            rt.run(p, ins)
        yield str(e.value)


def test_bad_register_combinations_fault():
    L = _base_layer()
    whole = [Tile(0, 5, 0, 5)]
    act_para = _core.register_value
    cases = [
        ({"NACC_CTRL": act_para("NACC_CTRL", dict(CONV_MODE=0, POOL_MODE=2, ACT_MODE=4, QUANT_EN=1,
                                                   BIAS_EN=1, FM_UPD=1, K_UPD=1))},
         "BIAS_EN must be 0"),
        ({"NACC_ACT_PARA": act_para("NACC_ACT_PARA", dict(MAC_FP32=1, QUANT_FP32_SCALE=1))},
         "QUANT_FP32_SCALE and QUANT_REAL_SCALE must be 0"),
        ({"NACC_CTRL": act_para("NACC_CTRL", dict(CONV_MODE=0, POOL_MODE=2, ACT_MODE=4, QUANT_EN=1,
                                                   FM_UPD=1, K_UPD=1, DATA_FORM=2))},
         "DATA_FORM INT4"),
        ({"NACC_CTRL": act_para("NACC_CTRL", dict(CONV_MODE=0, POOL_MODE=2, ACT_MODE=4, QUANT_EN=1,
                                                   FM_UPD=1, K_UPD=1, DATA_FORM=1))},
         "DATA_FORM INT16"),
        ({"NACC_FP32_KBLOCK": act_para("NACC_FP32_KBLOCK", dict(KBLOCK_LOG2=3, KBLOCK_SPLIT=26))},
         "KBLOCK_SPLIT = 26 is past the last output pixel"),
    ]
    for patch, message in cases:
        for text in _fault(L, whole, patch):
            assert message in text, text
    # K blocks without the mode
    L0 = Layer(**{**L.__dict__, "mac_fp32": None, "mult": np.full(8, 1 << 30, np.int32),
                  "shift": np.zeros(8, np.int32)})
    for text in _fault(L0, whole, {"NACC_FP32_KBLOCK": 0x105}):
        assert "NACC_FP32_KBLOCK = 0x105 must be 0 without NACC_ACT_PARA.MAC_FP32" in text, text


def test_other_units_reject_the_mode():
    """Pooling commands fault with MAC_FP32 set; a depthwise command with a sum
    order it has no form for (LANES8) faults naming MAC_FP32_ORDER."""
    rng = np.random.default_rng(4)
    x = rng.integers(-128, 128, (1, 5, 5, 8)).astype(np.int8)
    dw = Layer("depthwise", x, weights=rng.integers(-127, 128, (1, 3, 3, 8)).astype(np.int8),
               mult=np.full(8, 1 << 30, np.int32), shift=np.zeros(8, np.int32), pad=(1, 1, 1, 1))
    pool = Layer("maxpool", x, kernel=(2, 2), stride=(2, 2))
    oh, ow = pool.out_hw
    for text in _fault(pool, [Tile(0, oh, 0, ow)], {"NACC_ACT_PARA": 1 << 11}):
        assert "MAC_FP32 = 1 is only for NPU_OP_CONV" in text, text
    oh, ow = dw.out_hw
    for text in _fault(dw, [Tile(0, oh, 0, ow)], {"NACC_ACT_PARA": 1 << 11 | 2 << 12}):
        assert "MAC_FP32_ORDER = 2 is not for" in text, text


def test_bad_entries_fault():
    """A scale that is 0 or not finite faults naming the channel (the unit's own check)."""
    L = _base_layer()
    e = L.mac_fp32.copy()
    e[5, 3] = 0.0
    bad = Layer(**{**L.__dict__, "mac_fp32": e})
    p, ins = ns.single_layer(bad, [Tile(0, 5, 0, 5)])
    for execution in ("step", "replay"):
        rt = _core.Runtime(cores=1, sram_kb=64, execution=execution)
        with pytest.raises((nacc.DeviceFault, ValueError)) as ex:
            rt.run(p, ins)
        assert "channel 5 s_y" in str(ex.value), str(ex.value)


# ---------------------------------------------------------------------------
# The compiler: CONV_2D with requant onnxruntime, onnx_kernel unfused and ort_kblock > 0
# (docs/compiler.md "The float32 convolution") lowers to MAC_FP32.

def build_graph(x, w, w_s, bias, b_s, out_hw, stride, pad, kblock, split=-1, tail=0,
                x_q=(0.03, -3), y_q=(0.07, 5), activation="NONE", kind="CONV_2D", **extra):
    g = _core.Graph()
    xt = g.add_tensor("x", list(x.shape), "int8", scales=float(x_q[0]), zero_points=x_q[1])
    oc = w.shape[0] if kind == "CONV_2D" else w.shape[3]
    wt = g.add_tensor("w", list(w.shape), "int8", scales=[float(s) for s in w_s],
                      zero_points=[0] * len(w_s), axis=0 if kind == "CONV_2D" else 3, data=w)
    inputs = [xt, wt]
    if bias is not None:
        inputs.append(g.add_tensor("b", [oc], "int32", scales=[float(s) for s in b_s],
                                   zero_points=[0] * oc, data=bias))
    y = g.add_tensor("y", [1, *out_hw, oc], "int8", scales=float(y_q[0]), zero_points=y_q[1])
    g.add_op(kind, inputs, [y], name="conv", requant="onnxruntime", onnx_kernel="unfused",
             ort_kblock=kblock, ort_kblock_split=split, ort_kblock_tail=tail,
             stride_h=stride[0], stride_w=stride[1], pad_top=pad[0], pad_bottom=pad[1],
             pad_left=pad[2], pad_right=pad[3], activation=activation, **extra)
    g.inputs, g.outputs = [xt], [y]
    return g


def entries_of(x_q, w_s, bias, b_s, y_q):
    oc = len(w_s)
    bf = (np.zeros(oc, np.float32) if bias is None else
          (bias.astype(np.float32) * np.asarray(b_s, np.float32)).astype(np.float32))
    return np.stack([np.full(oc, x_q[0], np.float32), np.asarray(w_s, np.float32), bf,
                     np.full(oc, y_q[0], np.float32)], 1).astype(np.float32)


# (id, h, w, c_in, c_out, k, stride, pad (t, b, l, r), kblock, split, tail, cores, sram_kb)
COMPILE_CASES = [
    ("stem_7x7_s2", 15, 14, 3, 20, 7, 2, (2, 3, 2, 3), 16, 23, 32, 1, 64),
    ("stem_4cores_16k", 15, 14, 3, 20, 7, 2, (2, 3, 2, 3), 16, 23, 32, 4, 16),
    ("k3_split_tiles", 12, 11, 8, 40, 3, 1, (1, 1, 1, 1), 32, 70, 8, 8, 16),
    ("pointwise", 7, 6, 96, 24, 1, 1, (0, 0, 0, 0), 64, -1, 0, 1, 64),
    ("pointwise_s2", 8, 8, 40, 12, 1, 2, (0, 0, 0, 0), 16, 9, 4, 2, 64),
    ("one_chain", 6, 6, 4, 9, 3, 1, (1, 1, 1, 1), 1024, -1, 0, 1, 64),
]


@pytest.mark.parametrize("case", COMPILE_CASES, ids=lambda c: c[0])
def test_compiled_float_conv_matches_reference(case):
    name, h, wd, c, oc, k, s, pad, kblock, split, tail, cores, kb = case
    rng = np.random.default_rng(sum(map(ord, name)))
    x = rng.integers(-128, 128, (1, h, wd, c)).astype(np.int8)
    w = rng.integers(-127, 128, (oc, k, k, c)).astype(np.int8)
    w_s = rng.uniform(0.002, 0.02, oc).astype(np.float32)
    bias = rng.integers(-4000, 4000, oc).astype(np.int32)
    b_s = (np.float32(0.03) * w_s * rng.uniform(0.5, 2, oc)).astype(np.float32)  # its own scale
    oh, ow = (h + pad[0] + pad[1] - k) // s + 1, (wd + pad[2] + pad[3] - k) // s + 1
    x_q, y_q = (0.03, -3), (0.07, 5)
    g = build_graph(x, w, w_s, bias, b_s, (oh, ow), (s, s), pad, kblock, split, tail, x_q, y_q)
    prog = _core.compile(g, cores=cores, sram_kb=kb)
    info = _core.program_info(prog)["ops"][0]
    assert info["lowering"] in ("direct", "subsampled"), info["lowering"]
    log2 = int(np.log2(kblock))
    kbl = (log2, int(np.log2(tail)) if split >= 0 else log2, split if split >= 0 else oh * ow)
    want = reference(x, w, entries_of(x_q, w_s, bias, b_s, y_q), (s, s), pad, x_q[1], y_q[1],
                     (-128, 127), kbl)
    for execution in ("step", "replay"):
        (out,), _ = _core.Runtime(cores=cores, sram_kb=kb, execution=execution).run(prog, [x])
        got = np.asarray(out).reshape(want.shape)
        assert np.array_equal(got, want), f"{execution}: {int((got != want).sum())} differ"
    assert_equivalent(prog, cores, kb, threads=(1, 2))


def test_compiled_relu_and_no_bias():
    rng = np.random.default_rng(21)
    x = rng.integers(-128, 128, (1, 6, 7, 5)).astype(np.int8)
    w = rng.integers(-127, 128, (10, 3, 3, 5)).astype(np.int8)
    w_s = rng.uniform(0.002, 0.02, 10).astype(np.float32)
    x_q, y_q = (0.04, -128), (0.05, -20)
    g = build_graph(x, w, w_s, None, None, (6, 7), (1, 1), (1, 1, 1, 1), 16, 20, 4, x_q, y_q,
                    activation="RELU")
    prog = _core.compile(g, cores=2)
    want = reference(x, w, entries_of(x_q, w_s, None, None, y_q), (1, 1), (1, 1, 1, 1), -128, -20,
                     (-20, 127), (4, 2, 20))
    (out,), _ = _core.Runtime(cores=2).run(prog, [x])
    assert np.array_equal(np.asarray(out).reshape(want.shape), want)


def test_without_kblock_the_int_path_is_kept():
    """ort_kblock = 0: QLinearConv's integer path (QUANT_FP32_SCALE), not MAC_FP32."""
    rng = np.random.default_rng(2)
    x = rng.integers(-128, 128, (1, 5, 5, 4)).astype(np.int8)
    w = rng.integers(-127, 128, (6, 3, 3, 4)).astype(np.int8)
    w_s = np.full(6, 0.01, np.float32)
    g0 = build_graph(x, w, w_s, None, None, (5, 5), (1, 1), (1, 1, 1, 1), 0)
    g1 = build_graph(x, w, w_s, None, None, (5, 5), (1, 1), (1, 1, 1, 1), 16)
    words = [_core.decode_stream(_core.compile(g).commands) for g in (g0, g1)]
    text = [repr(wd) for wd in words]
    assert "NACC_FP32_KBLOCK" not in text[0] and "NACC_FP32_KBLOCK" in text[1]


DECLINED = [
    ("stride 4 (space-to-depth)", dict(k=5, stride=4, pad=(0, 0, 0, 0)), "stride above 3"),
    ("dilation", dict(k=3, stride=1, pad=(2, 2, 2, 2), dilation_h=2, dilation_w=2), "dilation"),
    ("groups", dict(k=3, stride=1, pad=(1, 1, 1, 1), groups=2), "groups"),
    ("block 24", dict(k=3, stride=1, pad=(1, 1, 1, 1), kblock=24), "not a power of two"),
]


@pytest.mark.parametrize("name,kw,message", DECLINED, ids=[d[0] for d in DECLINED])
def test_declined_shapes_name_the_reason(name, kw, message):
    kw = dict(kw)
    k, s, pad = kw.pop("k"), kw.pop("stride"), kw.pop("pad")
    groups = kw.pop("groups", 1)
    kind = kw.get("kind", "CONV_2D")
    kblock = kw.pop("kblock", 16)
    c = 8
    if kind == "DEPTHWISE_CONV_2D":
        w = np.ones((1, k, k, c), np.int8)
        kw["depth_multiplier"] = 1
    else:
        w = np.ones((8, k, k, c // groups), np.int8)
    d = kw.get("dilation_h", 1)
    h = 12
    oh = (h + pad[0] + pad[1] - (k - 1) * d - 1) // s + 1
    x = np.zeros((1, h, h, c), np.int8)
    g = build_graph(x, w, np.full(8, 0.01, np.float32), None, None, (oh, oh), (s, s), pad,
                    kblock, **kw)
    with pytest.raises(nacc.UnsupportedError) as e:
        _core.compile(g)
    assert message in str(e.value) and "float32 Conv" in str(e.value), str(e.value)

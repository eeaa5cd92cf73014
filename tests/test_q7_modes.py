"""The q7 modes of the NPU (docs/device_model.md §4): the RGB convolution
(NACC_CTRL.CONV_MODE = RGB_CONV with NACC_FULL_CONV_PARA.BIAS_SHIFT / OUT_SHIFT)
and the q7 Tanh / Sigmoid (ACT_MODE TANH / SIGMOID with NACC_ACT_PARA.ACT_INT_W)
compute what CMSIS-NN's legacy q7 functions arm_convolve_HWC_q7_RGB and
arm_nn_activations_direct_q7 compute. The expected outputs are numpy
transcriptions of those functions' documented arithmetic (below); the streams
come from the Python program builder (tests/nacc_streams.py), run on the
reference interpreter (step) and the execution plan (replay), which must agree
bit for bit and counter for counter (tests/test_replay.py's check).
"""
from __future__ import annotations

import numpy as np
import pytest

import nacc
from nacc import _core
import nacc_streams as ns
from nacc_streams import Layer, Tile, grid
from test_replay import assert_equivalent


# ---------------------------------------------------------------------------
# numpy transcriptions of CMSIS-NN's q7 arithmetic.

def cmsis_convolve_hwc_q7_rgb(x, w, bias, bias_shift, out_shift, stride, pad, out_hw):
    """arm_convolve_HWC_q7_RGB: x [H, W, 3] q7, w [C_out, KH, KW, 3] q7, bias [C_out] q7.
    Each output starts at (bias << bias_shift) + NN_ROUND(out_shift) (NN_ROUND(s) =
    (1 << s) >> 1), adds input x weight over the taps that lie inside the image
    (padding contributes nothing), and is __SSAT(sum >> out_shift, 8)."""
    h, wd, _ = x.shape
    cout, kh, kw, _ = w.shape
    (sh, sw), (pt, pl), (oh, ow) = stride, pad, out_hw
    xi, wi = x.astype(np.int64), w.astype(np.int64)
    out = np.zeros((oh, ow, cout), np.int8)
    for oy in range(oh):
        for ox in range(ow):
            acc = (bias.astype(np.int64) << bias_shift) + ((1 << out_shift) >> 1)
            for ky in range(kh):
                iy = oy * sh - pt + ky
                if not 0 <= iy < h:
                    continue
                for kx in range(kw):
                    ix = ox * sw - pl + kx
                    if 0 <= ix < wd:
                        acc = acc + wi[:, ky, kx, :] @ xi[iy, ix, :]
            out[oy, ox] = np.clip(acc >> out_shift, -128, 127)
    return out


def cmsis_q7_table(kind):
    """sigmoidTable_q7 / tanhTable_q7: entry j is f(x) in q0.7 for x = int8(j) in
    q3.4 (range [-8, 8)), rounded to nearest and saturated to int8."""
    x = np.arange(256).astype(np.uint8).view(np.int8).astype(np.float64) / 16
    f = np.tanh(x) if kind == "TANH" else 1 / (1 + np.exp(-x))
    return np.clip(np.round(f * 128), -128, 127).astype(np.int8)


def cmsis_activations_direct_q7(x, int_width, kind):
    """arm_nn_activations_direct_q7: out = table[(uint8)(in >> (3 - int_width))]."""
    shifted = (x.astype(np.int8) >> (3 - int_width)).astype(np.int8)
    return cmsis_q7_table(kind)[shifted.view(np.uint8)]


def test_q7_tables_known_points():
    """A few points the functions' documentation fixes: sigmoid(0) = 0.5 -> 64,
    tanh(0) = 0, saturation at +-8, odd symmetry of tanh below saturation."""
    s, t = cmsis_q7_table("SIGMOID"), cmsis_q7_table("TANH")
    assert s[0] == 64 and t[0] == 0
    assert s[127] == 127 and s[128] == 0 and t[127] == 127 and t[128] == -128
    j = np.arange(1, 40)  # below saturation (tanh(x) * 128 < 127 for x < 2.5)
    assert np.array_equal(t[256 - j], -t[j])


# ---------------------------------------------------------------------------
# The device.

def run_program(p, ins, cores, kb=64, execution="step"):
    rt = _core.Runtime(cores=cores, sram_kb=kb, execution=execution)
    outs, _ = rt.run(p, ins)
    return outs[0]


def rgb_layer(rng, h, w, cout, k, stride, pad, bias_shift, out_shift, act=(-128, 127)):
    x = rng.integers(-128, 128, (1, h, w, 3)).astype(np.int8)
    wt = rng.integers(-128, 128, (cout, k, k, 3)).astype(np.int8)
    bias = rng.integers(-128, 128, cout).astype(np.int32)
    L = Layer("rgbconv", x, weights=wt, bias=bias, stride=(stride, stride), bias_shift=bias_shift,
              out_shift=out_shift, act_min=act[0], act_max=act[1])
    oh = (h + 2 * pad - k) // stride + 1
    ow = (w + 2 * pad - k) // stride + 1
    # Symmetric padding as CMSIS-NN's `padding`; the bottom/right pads are what the sizes imply.
    L.pad = (pad, max(0, (oh - 1) * stride + k - h - pad), pad,
             max(0, (ow - 1) * stride + k - w - pad))
    want = cmsis_convolve_hwc_q7_rgb(x[0], wt, bias, bias_shift, out_shift, (stride, stride),
                                     (pad, pad), (oh, ow))
    want = np.clip(want, act[0], act[1]).astype(np.int8)
    return L, want[None]


def rgb_cases():
    rng = np.random.default_rng(5)
    cases = []
    for i in range(40):
        h = int(rng.integers(3, 20))
        w = h if i % 2 == 0 else int(rng.integers(3, 20))  # CMSIS-NN's images are square
        k = int(rng.choice([1, 2, 3, 5]))
        k = min(k, h, w)
        stride = int(rng.integers(1, 4))
        pad = int(rng.integers(0, min(k, 3)))
        cout = int(rng.choice([1, 4, 7, 16, 33]))
        bias_shift = int(rng.integers(0, 10))
        out_shift = int(rng.integers(0, 12))
        tiled = i % 3
        cases.append((i, h, w, k, stride, pad, cout, bias_shift, out_shift, tiled))
    return cases


@pytest.mark.parametrize("case", rgb_cases(), ids=lambda c: f"rgb{c[0]}")
def test_rgb_conv_matches_cmsis(case):
    i, h, w, k, stride, pad, cout, bias_shift, out_shift, tiled = case
    rng = np.random.default_rng(100 + i)
    act = (-128, 127) if i % 4 else (0, 127)  # a ReLU clamp after the q7 saturation
    L, want = rgb_layer(rng, h, w, cout, k, stride, pad, bias_shift, out_shift, act)
    oh, ow = L.out_hw
    if tiled == 0:
        tiles, cores = [Tile(0, oh, 0, ow)], 1
    elif tiled == 1:
        tiles, cores = grid(oh, ow, max(1, oh // 2), max(1, ow // 3)), 1
    else:
        n = 2 if oh >= 2 else 1
        tiles, cores = [Tile(0, oh, 0, ow, mode=2 if n > 1 else 0, cores=n)], n
    p, ins = ns.single_layer(L, tiles, cores=cores)
    for execution in ("step", "replay"):
        got = run_program(p, ins, cores, execution=execution)
        np.testing.assert_array_equal(got, want, err_msg=execution)
    assert_equivalent(p, cores, 64, threads=(1, 2))


def test_rgb_conv_split_kernels_and_replay():
    """Mode 1 (output channels across 4 cores) and many tiles: the plan merges
    the commands into one layer call and still computes the q7 arithmetic."""
    rng = np.random.default_rng(9)
    L, want = rgb_layer(rng, 16, 16, 32, 3, 1, 1, 6, 9)
    tiles = grid(16, 16, 4, 8, mode=1, cores=4)
    p, ins = ns.single_layer(L, tiles, cores=4)
    for execution in ("step", "replay"):
        np.testing.assert_array_equal(run_program(p, ins, 4, execution=execution), want)
    assert_equivalent(p, 4, 64, threads=(1, 2, 4))


def test_rgb_conv_extremes():
    """Saturation at both ends, out_shift 0 (no rounding term), the largest
    products (-128 x -128) and a bias shifted far left."""
    x = np.full((1, 5, 5, 3), -128, np.int8)
    wt = np.full((4, 3, 3, 3), -128, np.int8)
    wt[1] = 127
    bias = np.array([127, -128, 0, 1], np.int32)
    for bias_shift, out_shift in ((0, 0), (16, 8), (20, 20), (23, 31)):
        L = Layer("rgbconv", x, weights=wt, bias=bias, pad=(1, 1, 1, 1), bias_shift=bias_shift,
                  out_shift=out_shift)
        want = cmsis_convolve_hwc_q7_rgb(x[0], wt, bias, bias_shift, out_shift, (1, 1), (1, 1),
                                         (5, 5))[None]
        p, ins = ns.single_layer(L, [Tile(0, 5, 0, 5)])
        np.testing.assert_array_equal(run_program(p, ins, 1), want)


RGB_FAULTS = [
    ("four_channels", dict(channels=4), "takes 3 input channels"),
    ("quant_en", dict(patch={"NACC_CTRL": None, "QUANT_EN": 1}), "QUANT_EN must be 0"),
    ("bias_off", dict(patch={"NACC_CTRL": None, "BIAS_EN": 0}), "needs BIAS_EN = 1"),
    ("input_offset", dict(in_zp=3), "no zero points"),
    ("bias_not_q7", dict(bias=300), "is not a q7 value"),
    ("accumulator", dict(bias_shift=25, bias=127), "leaves the 32-bit accumulator"),
]


@pytest.mark.parametrize("case,change,match", RGB_FAULTS, ids=[c[0] for c in RGB_FAULTS])
def test_rgb_conv_faults(case, change, match):
    """What the q7 RGB convolution does not take faults with the reason, and the
    output is not written."""
    rng = np.random.default_rng(3)
    c = change.get("channels", 3)
    x = rng.integers(-128, 128, (1, 6, 6, c)).astype(np.int8)
    wt = rng.integers(-128, 128, (4, 3, 3, c)).astype(np.int8)
    bias = rng.integers(-128, 128, 4).astype(np.int32)
    if "bias" in change:
        bias[2] = change["bias"]
    L = Layer("rgbconv", x, weights=wt, bias=bias, pad=(1, 1, 1, 1), in_zp=change.get("in_zp", 0),
              bias_shift=change.get("bias_shift", 2), out_shift=7)
    patch = None
    if "patch" in change:
        fields = dict(CONV_MODE=2, POOL_MODE=2, ACT_MODE=4, QUANT_EN=0, BIAS_EN=1, FM_UPD=1,
                      K_UPD=1)
        fields.update({k: v for k, v in change["patch"].items() if k != "NACC_CTRL"})
        patch = {"NACC_CTRL": _core.register_value("NACC_CTRL", fields)}
    p, ins = ns.single_layer(L, [Tile(0, 6, 0, 6)], patch=patch)
    for execution in ("step", "replay"):
        with pytest.raises(nacc.DeviceFault, match=match):
            run_program(p, ins, 1, execution=execution)


@pytest.mark.parametrize("kind", ["SIGMOID", "TANH"])
@pytest.mark.parametrize("int_width", [0, 1, 2, 3])
def test_q7_activation_matches_cmsis(kind, int_width):
    """Every q7 input (all 256 values, twice, in a 4 x 8 x 16 map) at every
    ACT_INT_W, one tile and channel-split tiles, stepping and replaying."""
    x = np.concatenate([np.arange(-128, 128), np.arange(127, -129, -1)]).astype(np.int8)
    x = x.reshape(1, 4, 8, 16)
    L = Layer("act_q7", x, act_mode=kind, int_width=int_width)
    want = cmsis_activations_direct_q7(x, int_width, kind)
    for tiles in ([Tile(0, 4, 0, 8)], grid(4, 8, 2, 4), [Tile(0, 4, 0, 8, c0=0, nc=7),
                                                        Tile(0, 4, 0, 8, c0=7, nc=9)]):
        p, ins = ns.single_layer(L, tiles)
        for execution in ("step", "replay"):
            np.testing.assert_array_equal(run_program(p, ins, 1, execution=execution), want)
        stats = assert_equivalent(p, 1, 64)
        assert stats["act_cycles"] == x.size  # one element per cycle (NACC_SPEC §8)


def test_q7_activation_faults():
    x = np.zeros((1, 2, 2, 8), np.int8)
    L = Layer("act_q7", x, act_mode="TANH", int_width=1, in_zp=1)
    p, ins = ns.single_layer(L, [Tile(0, 2, 0, 2)])
    with pytest.raises(nacc.DeviceFault, match="no zero points"):
        run_program(p, ins, 1)
    # TANH as the output stage of a convolution is not a q7 mode.
    rng = np.random.default_rng(0)
    C = Layer("conv", rng.integers(-5, 5, (1, 4, 4, 3)).astype(np.int8),
              weights=rng.integers(-5, 5, (2, 1, 1, 3)).astype(np.int8),
              mult=np.array([1 << 30] * 2, np.int32), shift=np.array([0, 0], np.int32))
    fields = dict(CONV_MODE=0, POOL_MODE=2, ACT_MODE=2, QUANT_EN=1, BIAS_EN=0, FM_UPD=1, K_UPD=1)
    p, ins = ns.single_layer(C, [Tile(0, 4, 0, 4)],
                             patch={"NACC_CTRL": _core.register_value("NACC_CTRL", fields)})
    with pytest.raises(nacc.DeviceFault, match="functions of NPU_OP_ACTIVATION"):
        run_program(p, ins, 1)

"""The float32 output stage for ONNX (ir::RequantMode::kOnnxRuntime ->
NACC_ACT_PARA.QUANT_FP32_SCALE) on CONV_2D (direct, matrix and im2col
lowerings), DEPTHWISE_CONV_2D and FULLY_CONNECTED, compiled from IR graphs
and run on the device model, against an independent numpy reference of ONNX
Runtime's QLinearConv / QGemm output stage: float(acc + bias) * float32 scale
float(s_x * s_w[c]) / s_y, round half to even, + zero point, clamp
(docs/compiler.md §2.2). The TFLite path (attribute unset) is covered by
test_compiler.py against BUILTIN_REF.
"""
from __future__ import annotations

import numpy as np
import pytest

from nacc import _core

X_S, X_Z, Y_S, Y_Z = np.float32(0.05), -3, np.float32(0.1), 5


def float_stage(acc, w_s, act_min=-128, act_max=127):
    """acc int64 [..., C] (bias included) -> int8 as MLAS MlasRequantizeOutput."""
    acc32 = ((acc + (1 << 31)) % (1 << 32)) - (1 << 31)
    scale = (X_S * w_s.astype(np.float32)).astype(np.float32) / Y_S
    v = acc32.astype(np.float32) * scale.astype(np.float32)
    return np.clip(np.rint(v).astype(np.int64) + Y_Z, act_min, act_max).astype(np.int8)


def build(kind, x_shape, w, w_s, bias, out_shape, axis, onnx=True, **attrs):
    g = _core.Graph()
    x = g.add_tensor("x", list(x_shape), "int8", scales=float(X_S), zero_points=X_Z)
    wt = g.add_tensor("w", list(w.shape), "int8", scales=[float(s) for s in w_s],
                      zero_points=[0] * len(w_s), axis=axis, data=w)
    bt = g.add_tensor("b", [len(bias)], "int32", scales=[float(X_S * s) for s in w_s],
                      zero_points=[0] * len(bias), data=bias)
    y = g.add_tensor("y", list(out_shape), "int8", scales=float(Y_S), zero_points=Y_Z)
    g.add_op(kind, [x, wt, bt], [y], name="op", requant="onnxruntime" if onnx else "tflite", **attrs)
    g.inputs, g.outputs = [x], [y]
    return g


def conv_ref(x, w, bias, stride, pad, depthwise):
    """NHWC int8 x, OHWI (depthwise [1, KH, KW, C]) int8 w -> int64 acc."""
    xp = np.pad(x.astype(np.int64) - X_Z, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    kh, kw = w.shape[1], w.shape[2]
    oh = (xp.shape[1] - kh) // stride + 1
    ow = (xp.shape[2] - kw) // stride + 1
    c_out = w.shape[3] if depthwise else w.shape[0]
    acc = np.zeros((1, oh, ow, c_out), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[:, ky:ky + stride * oh:stride, kx:kx + stride * ow:stride, :]
            if depthwise:
                acc += patch * w[0, ky, kx].astype(np.int64)
            else:
                acc += np.einsum("nhwc,oc->nhwo", patch, w[:, ky, kx, :].astype(np.int64))
    return acc + bias


CONV_CASES = [  # (id, h, w, c_in, c_out, k, stride, pad, lowering)
    ("direct_3x3", 9, 7, 5, 12, 3, 1, 1, "direct"),
    ("im2col_3x3_s2", 11, 10, 3, 16, 3, 2, 1, "im2col"),
    ("matrix_1x1", 6, 6, 70, 9, 1, 1, 0, "matrix"),
    ("direct_5x5_s3", 13, 11, 4, 7, 5, 3, 2, "direct"),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=[c[0] for c in CONV_CASES])
@pytest.mark.parametrize("cores", [1, 4])
def test_conv_float_stage(case, cores):
    _, h, wd, c_in, c_out, k, stride, pad, lowering = case
    rng = np.random.default_rng(h * 100 + c_out)
    x = rng.integers(-128, 128, (1, h, wd, c_in)).astype(np.int8)
    w = rng.integers(-127, 128, (c_out, k, k, c_in)).astype(np.int8)
    w_s = rng.uniform(0.002, 0.02, c_out).astype(np.float32)
    bias = rng.integers(-3000, 3000, c_out).astype(np.int32)
    acc = conv_ref(x, w, bias, stride, pad, False)
    g = build("CONV_2D", x.shape, w, w_s, bias, acc.shape, 0, stride_h=stride, stride_w=stride,
              pad_top=pad, pad_bottom=pad, pad_left=pad, pad_right=pad)
    prog = _core.compile(g, cores=cores, conv_lowering=lowering)
    assert _core.program_info(prog)["ops"][0]["lowering"] == lowering
    (out,), _ = _core.Runtime(cores=cores).run(prog, [x])
    np.testing.assert_array_equal(np.asarray(out).reshape(acc.shape), float_stage(acc, w_s))


@pytest.mark.parametrize("mult", [1, 2])
@pytest.mark.parametrize("cores", [1, 4])
def test_depthwise_float_stage(mult, cores):
    rng = np.random.default_rng(7 + mult)
    c = 12
    x = rng.integers(-128, 128, (1, 9, 8, c)).astype(np.int8)
    w = rng.integers(-127, 128, (1, 3, 3, c * mult)).astype(np.int8)
    w_s = rng.uniform(0.002, 0.05, c * mult).astype(np.float32)
    bias = rng.integers(-3000, 3000, c * mult).astype(np.int32)
    xr = np.repeat(x, mult, axis=3)  # oc = ic * mult + m
    acc = conv_ref(xr, w, bias, 1, 1, True)
    g = build("DEPTHWISE_CONV_2D", x.shape, w, w_s, bias, acc.shape, 3, stride_h=1, stride_w=1,
              pad_top=1, pad_bottom=1, pad_left=1, pad_right=1, depth_multiplier=mult)
    prog = _core.compile(g, cores=cores)
    (out,), _ = _core.Runtime(cores=cores).run(prog, [x])
    np.testing.assert_array_equal(np.asarray(out).reshape(acc.shape), float_stage(acc, w_s))


@pytest.mark.parametrize("m,k,n", [(1, 64, 10), (4, 130, 33), (40, 20, 8)])
@pytest.mark.parametrize("cores", [1, 4])
def test_fully_connected_float_stage(m, k, n, cores):
    rng = np.random.default_rng(m * k + n)
    x = rng.integers(-128, 128, (m, k)).astype(np.int8)
    w = rng.integers(-127, 128, (n, k)).astype(np.int8)
    w_s = rng.uniform(0.002, 0.02, n).astype(np.float32)
    bias = rng.integers(-3000, 3000, n).astype(np.int32)
    acc = (x.astype(np.int64) - X_Z) @ w.astype(np.int64).T + bias
    g = build("FULLY_CONNECTED", x.shape, w, w_s, bias, (m, n), 0)
    prog = _core.compile(g, cores=cores)
    (out,), _ = _core.Runtime(cores=cores).run(prog, [x])
    np.testing.assert_array_equal(np.asarray(out).reshape(m, n), float_stage(acc, w_s))


def test_float_stage_differs_from_fixed_point_somewhere():
    """The same CONV_2D without the attribute (TFLite's multiplier/shift) gives
    other bits near rounding ties: the tests above can tell the stages apart."""
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (1, 20, 20, 64)).astype(np.int8)
    w = rng.integers(-127, 128, (16, 1, 1, 64)).astype(np.int8)
    w_s = rng.uniform(0.0002, 0.002, 16).astype(np.float32)  # outputs mostly unsaturated
    bias = rng.integers(-3000, 3000, 16).astype(np.int32)
    acc = conv_ref(x, w, bias, 1, 0, False)
    outs = []
    for onnx in (True, False):
        g = build("CONV_2D", x.shape, w, w_s, bias, acc.shape, 0, onnx=onnx, stride_h=1,
                  stride_w=1)
        (o,), _ = _core.Runtime().run(_core.compile(g, conv_lowering="direct"), [x])
        outs.append(np.asarray(o).reshape(acc.shape))
    np.testing.assert_array_equal(outs[0], float_stage(acc, w_s))
    n = np.count_nonzero(outs[0] != outs[1])
    print(f"the fixed-point stage differs in {n}/{acc.size} elements")
    assert 0 < n and np.abs(outs[0].astype(int) - outs[1]).max() == 1

"""Tests of the pooling unit (NACC_SPEC §1-§2): nacc._core.max_pool and avg_pool
against TensorFlow Lite 2.21's BUILTIN_REF MAX_POOL_2D / AVERAGE_POOL_2D on
single-op int8 models (declarative, seeded case tables), through both kernel
paths; limits at each boundary and one past it against an independent numpy
model (explicit padding TFLite cannot express); and argument errors."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from nacc import _core
from quant_helpers import activation_range, same_padding
from tflite_builder import QTensor, build_model, run_tflite
from unit_check import assert_both_paths

ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


@dataclasses.dataclass(frozen=True)
class PoolCase:
    """One pooling model: input and output [1,h,w,c] share (scale, zero_point)."""

    name: str
    op: str  # "MAX_POOL_2D" | "AVERAGE_POOL_2D"
    h: int
    w: int
    c: int
    kh: int
    kw: int
    sh: int
    sw: int
    padding: str  # "SAME" | "VALID"
    activation: str
    scale: float
    zero_point: int
    seed: int


def tflite_pads(case: PoolCase):
    if case.padding == "VALID":
        return (case.h - case.kh) // case.sh + 1, (case.w - case.kw) // case.sw + 1, (0, 0, 0, 0)
    oh, top, bottom = same_padding(case.h, case.kh, case.sh)
    ow, left, right = same_padding(case.w, case.kw, case.sw)
    return oh, ow, (top, bottom, left, right)


def expressible(case: PoolCase) -> bool:
    oh, ow, pads = tflite_pads(case)
    return oh >= 1 and ow >= 1 and max(pads) <= 5


# ---- the case tables ------------------------------------------------------------------

NAMED = [
    # name, op, h, w, c, kh, kw, sh, sw, padding, activation, scale, zero_point, seed
    PoolCase("max_3x3_s2_same_odd", "MAX_POOL_2D", 15, 17, 37, 3, 3, 2, 2, "SAME", "NONE", 0.02, -3, 1),
    PoolCase("max_2x2_s2_valid", "MAX_POOL_2D", 16, 16, 64, 2, 2, 2, 2, "VALID", "NONE", 0.1, 0, 2),
    PoolCase("max_stride_gt_kernel", "MAX_POOL_2D", 20, 19, 33, 1, 2, 3, 3, "VALID", "NONE", 0.1, 5, 3),
    PoolCase("max_11x11_same_pad5", "MAX_POOL_2D", 13, 12, 19, 11, 11, 1, 1, "SAME", "RELU", 0.05, -20, 4),
    PoolCase("max_15x15_valid", "MAX_POOL_2D", 15, 16, 8, 15, 15, 1, 1, "VALID", "RELU6", 0.03, -128, 5),
    PoolCase("max_relu_n1_to_1", "MAX_POOL_2D", 9, 9, 16, 3, 3, 1, 1, "SAME", "RELU_N1_TO_1", 0.01, 10, 6),
    PoolCase("max_one_pixel", "MAX_POOL_2D", 1, 1, 1, 1, 1, 1, 1, "VALID", "NONE", 1.0, 127, 7),
    PoolCase("avg_even_valid", "AVERAGE_POOL_2D", 16, 16, 64, 2, 2, 2, 2, "VALID", "NONE", 0.1, 0, 8),
    PoolCase("avg_odd_same_partial", "AVERAGE_POOL_2D", 13, 11, 35, 2, 2, 2, 2, "SAME", "NONE", 0.1, -7, 9),
    PoolCase("avg_one_pixel_same", "AVERAGE_POOL_2D", 1, 1, 3, 2, 2, 2, 2, "SAME", "RELU", 0.1, -128, 10),
    PoolCase("avg_1xN_same", "AVERAGE_POOL_2D", 1, 9, 17, 2, 2, 2, 2, "SAME", "RELU6", 0.05, 127, 11),
]


def random_case(rng: np.random.Generator, index: int, op: str) -> PoolCase:
    kind = ("realistic", "odd", "odd", "extreme")[index % 4]
    if kind == "realistic":  # tens of channels, tens of pixels
        c = int(rng.integers(16, 129))
        h, w = (int(v) for v in rng.integers(10, 57, 2))
    else:
        c = int(rng.integers(1, 70))
        h, w = (int(v) for v in rng.integers(1, 16, 2))
    if op == "AVERAGE_POOL_2D":
        kh = kw = sh = sw = 2
    elif kind == "realistic":
        kh = kw = int(rng.choice([2, 3, 3, 5]))
        sh = sw = int(rng.choice([1, 2, 2]))
    else:
        kh, kw = (int(v) for v in rng.integers(1, 12, 2))
        sh, sw = (int(v) for v in rng.integers(1, 4, 2))
    if kind == "extreme":
        zero_point = int(rng.choice([-128, 127, -127, 126]))
        scale = float(10 ** rng.uniform(-5, 2))
    else:
        zero_point = int(rng.integers(-128, 128))
        scale = float(10 ** rng.uniform(-3, 0))
    return PoolCase(f"{kind}{index}", op, h, w, c, kh, kw, sh, sw,
                    str(rng.choice(["SAME", "VALID"])), str(rng.choice(ACTIVATIONS)), scale,
                    zero_point, int(rng.integers(1 << 31)))


def make_cases(op: str, n: int, seed: int):
    rng = np.random.default_rng(seed)
    cases, index = [], 0
    while len(cases) < n:
        case = random_case(rng, index, op)
        index += 1
        if expressible(case):
            cases.append(case)
    return cases


MAX_CASES = [c for c in NAMED if c.op == "MAX_POOL_2D"] + make_cases("MAX_POOL_2D", 210, 0x900D)
AVG_CASES = [c for c in NAMED if c.op == "AVERAGE_POOL_2D"] + make_cases("AVERAGE_POOL_2D", 210, 0xA7E)


@pytest.mark.parametrize("cases", [MAX_CASES, AVG_CASES], ids=["max", "avg"])
def test_case_table_coverage(cases):
    realistic = [c for c in cases if c.c >= 10 and c.h * c.w >= 100]
    assert len(cases) >= 200 and len(realistic) >= len(cases) // 4
    assert any(len(set(tflite_pads(c)[2])) > 1 for c in cases if c.padding == "SAME")
    assert any(c.h % 2 and c.w % 2 for c in cases)
    assert any(c.c % 16 and c.c > 32 for c in cases)
    assert {c.activation for c in cases} == set(ACTIVATIONS)
    if cases is MAX_CASES:
        assert any(c.sh > c.kh or c.sw > c.kw for c in cases)


def tflite_pool(case: PoolCase, x: np.ndarray) -> np.ndarray:
    oh, ow, _ = tflite_pads(case)
    t_in = QTensor((1, case.h, case.w, case.c), "int8", case.scale, case.zero_point)
    t_out = QTensor((1, oh, ow, case.c), "int8", case.scale, case.zero_point)
    model = build_model(case.op, [t_in], [t_out],
                        options=dict(padding=case.padding, stride_h=case.sh, stride_w=case.sw,
                                     filter_height=case.kh, filter_width=case.kw,
                                     fused_activation_function=case.activation),
                        version=2)
    (out,) = run_tflite(model, [x])
    return out


@pytest.mark.parametrize("case", MAX_CASES + AVG_CASES, ids=lambda c: f"{c.op}-{c.name}")
def test_matches_tflite_reference(case: PoolCase):
    x = np.random.default_rng(case.seed).integers(-128, 128, (1, case.h, case.w, case.c),
                                                  dtype=np.int8)
    expected = tflite_pool(case, x)
    act_min, act_max = activation_range(case.activation, case.scale, case.zero_point)
    _, _, pads = tflite_pads(case)
    if case.op == "MAX_POOL_2D":
        fn = lambda: _core.max_pool(x, kernel=(case.kh, case.kw), stride=(case.sh, case.sw),  # noqa: E731
                                    padding=pads, act_min=act_min, act_max=act_max)
    else:
        fn = lambda: _core.avg_pool(x, padding=pads, act_min=act_min, act_max=act_max)  # noqa: E731
    assert_both_paths(expected, fn, f"{case.op} {case.name}")


# ---- limits: at each boundary and one past it ------------------------------------------


def numpy_pool(x, kernel, stride, pads, act_min, act_max, average):
    """An independent model with explicit padding: windows over a padded copy, padded
    positions excluded (a mask); max of an empty window is -128 before the clamp (as
    TFLite's loop); the average is TFLite's sum/count rounded half away from zero."""
    top, bottom, left, right = pads
    kh, kw = kernel
    sh, sw = stride
    xs = np.pad(x[0].astype(np.int64), ((top, bottom), (left, right), (0, 0)))
    inside = np.pad(np.ones(x.shape[1:3], bool), ((top, bottom), (left, right)))
    oh = (xs.shape[0] - kh) // sh + 1
    ow = (xs.shape[1] - kw) // sw + 1
    out = np.empty((oh, ow, x.shape[3]), np.int64)
    for oy in range(oh):
        for ox in range(ow):
            win = xs[oy * sh:oy * sh + kh, ox * sw:ox * sw + kw]
            mask = inside[oy * sh:oy * sh + kh, ox * sw:ox * sw + kw]
            vals = win[mask]
            if average:
                n = len(vals)
                s = vals.sum(axis=0)
                out[oy, ox] = np.where(s > 0, (s + n // 2) // n, -((-s + n // 2) // n))
            else:
                out[oy, ox] = vals.max(axis=0) if len(vals) else -128
    return np.clip(out, act_min, act_max).astype(np.int8)[None]


def boundary_input(h=9, w=8, c=37, seed=0):
    return np.random.default_rng(seed).integers(-128, 128, (1, h, w, c), dtype=np.int8)


MAX_OK = [
    # id, input size, kernel, stride, padding, act
    ("kernel_15x15", (15, 16), (15, 15), (1, 1), (0, 0, 0, 0), (-128, 127)),
    ("kernel_15x1_stride_3", (17, 9), (15, 1), (3, 3), (0, 0, 0, 0), (-128, 127)),
    ("stride_3x3", (9, 8), (3, 3), (3, 3), (1, 1, 1, 1), (-128, 127)),
    ("pad_5_all_sides_kernel_15", (5, 6), (15, 15), (1, 2), (5, 5, 5, 5), (-128, 127)),
    ("pad_5_one_side", (9, 8), (3, 2), (1, 1), (5, 0, 0, 5), (-100, 100)),
    ("empty_window_gives_act_min", (5, 5), (2, 2), (3, 3), (5, 5, 5, 5), (-3, 50)),
    ("empty_window_gives_minus_128", (5, 5), (1, 1), (2, 2), (5, 5, 5, 5), (-128, 127)),
    ("act_range_single_value", (9, 8), (3, 3), (1, 1), (1, 1, 1, 1), (7, 7)),
]


@pytest.mark.parametrize("name,size,kernel,stride,pads,act", MAX_OK, ids=[b[0] for b in MAX_OK])
def test_max_limit_accepted(name, size, kernel, stride, pads, act):
    x = boundary_input(*size)
    expected = numpy_pool(x, kernel, stride, pads, *act, average=False)
    assert_both_paths(expected, lambda: _core.max_pool(x, kernel=kernel, stride=stride,
                                                       padding=pads, act_min=act[0],
                                                       act_max=act[1]), name)


# Average pooling's 2x2/2 window lies entirely in the padding for any top/left pad >= 2
# and most bottom/right pads >= 2 (TFLite fails such a pool), so the accepted pads are
# 0..1, or 2 after an odd extent; 5 is within NACC_PADDING but always rejected.
AVG_OK = [
    ("pad_1_all_sides", (9, 8), (1, 1, 1, 1)),
    ("pad_1_bottom_right", (9, 9), (0, 1, 0, 1)),
    ("one_pixel_pad_1", (1, 1), (0, 1, 0, 1)),
    ("pad_2_bottom_odd_height", (9, 7), (0, 2, 1, 1)),
    ("no_padding_odd", (9, 7), (0, 0, 0, 0)),
]


@pytest.mark.parametrize("name,size,pads", AVG_OK, ids=[b[0] for b in AVG_OK])
def test_avg_limit_accepted(name, size, pads):
    x = boundary_input(*size)
    expected = numpy_pool(x, (2, 2), (2, 2), pads, -128, 127, average=True)
    assert_both_paths(expected, lambda: _core.avg_pool(x, padding=pads), name)


def test_avg_rounding_half_away_from_zero():
    """Sums on every rounding tie: +-2/4 -> +-1, +-6/4 -> +-2, +-1/2 -> +-1 (TFLite)."""
    x = np.array([[[[1], [1]], [[0], [0]]]], np.int8)  # one 2x2 window, sum 2
    cases = {2: 1, -2: -1, 6: 2, -6: -2, 1: 0, -1: 0, 3: 1, -3: -1}
    for total, want in cases.items():
        x = np.zeros((1, 2, 2, 1), np.int8)
        x.flat[:4] = [total // 2, total - total // 2, 0, 0]
        assert_both_paths(np.array([[[[want]]]], np.int8), lambda: _core.avg_pool(x),
                          f"sum {total}")
    x = np.array([[[[1]], [[0]]]], np.int8).reshape(1, 2, 1, 1)  # window clipped to 2 rows x 1
    assert_both_paths(np.array([[[[1]]]], np.int8), lambda: _core.avg_pool(x, padding=(0, 0, 0, 1)),
                      "1/2 -> 1")
    x = -x
    assert_both_paths(np.array([[[[-1]]]], np.int8),
                      lambda: _core.avg_pool(x, padding=(0, 0, 0, 1)), "-1/2 -> -1")


REJECTED = [
    # id, function, kwargs, message
    ("max_kernel_h_16", "max", dict(kernel=(16, 3)), r"max_pool_s8: kernel_h 16 out of range \[1, 15\] \(NACC_KERNEL\.K_SIZE_Y\)"),
    ("max_kernel_w_16", "max", dict(kernel=(3, 16)), r"kernel_w 16 out of range \[1, 15\] \(NACC_KERNEL\.K_SIZE_X\)"),
    ("max_kernel_0", "max", dict(kernel=(0, 3)), r"kernel_h 0 out of range \[1, 15\]"),
    ("max_stride_4", "max", dict(kernel=(3, 3), stride=(4, 1)), r"stride_h 4 out of range \[1, 3\] \(NACC_KERNEL\.K_STRIDE_Y\)"),
    ("max_stride_w_4", "max", dict(kernel=(3, 3), stride=(1, 4)), r"stride_w 4 out of range \[1, 3\] \(NACC_KERNEL\.K_STRIDE_X\)"),
    ("max_pad_top_6", "max", dict(kernel=(3, 3), padding=(6, 0, 0, 0)), r"pad_top 6 out of range \[0, 5\] \(NACC_PADDING\.PAD_Y\)"),
    ("max_pad_right_6", "max", dict(kernel=(3, 3), padding=(0, 0, 0, 6)), r"pad_right 6 out of range \[0, 5\] \(NACC_PADDING\.PAD_X\)"),
    ("max_act_min_gt_max", "max", dict(kernel=(3, 3), act_min=10, act_max=9), r"activation range \[10, 9\]"),
    ("max_act_max_128", "max", dict(kernel=(3, 3), act_max=128), r"activation range \[-128, 128\]"),
    ("max_kernel_larger_than_padded_input", "max", dict(kernel=(15, 3)), r"max_pool_s8: kernel 15x3 larger than the padded input 9x8, no output position"),
    ("avg_kernel_3x3", "avg", dict(kernel=(3, 3)), r"avg_pool_s8: kernel 3x3 not supported, average pooling is 2x2 only"),
    ("avg_kernel_2x1", "avg", dict(kernel=(2, 1)), r"kernel 2x1 not supported"),
    ("avg_kernel_1x1", "avg", dict(kernel=(1, 1)), r"kernel 1x1 not supported"),
    ("avg_stride_1", "avg", dict(stride=(1, 1)), r"stride 1x1 not supported, average pooling is stride 2 only"),
    ("avg_stride_3", "avg", dict(stride=(3, 2)), r"stride 3x2 not supported"),
    ("avg_pad_6", "avg", dict(padding=(0, 6, 0, 0)), r"pad_bottom 6 out of range \[0, 5\]"),
    ("avg_window_all_padding_top", "avg", dict(padding=(2, 0, 0, 0)), r"window lies entirely in the padding"),
    ("avg_pad_5_bottom", "avg", dict(padding=(0, 5, 0, 0)), r"padding top 0 / bottom 5 leaves an output row whose window lies entirely in the padding"),
    ("avg_window_all_padding_right", "avg", dict(padding=(0, 0, 0, 3)), r"output column whose window lies entirely in the padding"),
    ("avg_act_min_-129", "avg", dict(act_min=-129), r"activation range \[-129, 127\]"),
]


@pytest.mark.parametrize("name,fn,kwargs,message", REJECTED, ids=[r[0] for r in REJECTED])
def test_limit_rejected(name, fn, kwargs, message):
    x = boundary_input()
    with pytest.raises(ValueError, match=message):
        (_core.max_pool if fn == "max" else _core.avg_pool)(x, **kwargs)


ARGUMENT_ERRORS = [
    ("float32", boundary_input().astype(np.float32), TypeError, r"input: expected dtype int8, got float32"),
    ("uint8", boundary_input().view(np.uint8), TypeError, r"input: expected dtype int8, got uint8"),
    ("int16", boundary_input().astype(np.int16), TypeError, r"input: expected dtype int8, got int16"),
    ("3d", boundary_input()[0], ValueError, r"input: expected 4 dimensions, got 3"),
    ("batch_2", np.concatenate([boundary_input()] * 2), ValueError, r"input batch 2 must be 1"),
    ("zero_channels", boundary_input()[..., :0], ValueError, r"input channels 0 out of range \[1, 65535\]"),
]


@pytest.mark.parametrize("name,x,exc,message", ARGUMENT_ERRORS, ids=[e[0] for e in ARGUMENT_ERRORS])
@pytest.mark.parametrize("fn", ["max", "avg"])
def test_argument_errors(fn, name, x, exc, message):
    with pytest.raises(exc, match=message):
        if fn == "max":
            _core.max_pool(x, kernel=(2, 2))
        else:
            _core.avg_pool(x)


def test_kernel_is_required_for_max_pool():
    with pytest.raises(TypeError):
        _core.max_pool(boundary_input())

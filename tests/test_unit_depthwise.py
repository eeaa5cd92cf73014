"""Tests of the MAC unit's depthwise convolution (NACC_SPEC §1-§2):
nacc._core.depthwise_conv2d against TensorFlow Lite 2.21's BUILTIN_REF
DEPTHWISE_CONV_2D on single-op int8 models (a declarative, seeded case table),
through both kernel paths; limits at each boundary and one past it against an
independent numpy model (explicit padding that TFLite cannot express); and
argument errors."""
from __future__ import annotations

import dataclasses
import re
from typing import Optional, Tuple

import numpy as np
import pytest

from nacc import _core
from quant_helpers import activation_range, conv_multipliers, f32, same_padding
from tflite_builder import QTensor, build_model, run_tflite
from unit_check import assert_both_paths, assert_same, run_path

ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


@dataclasses.dataclass(frozen=True)
class DwCase:
    """One DEPTHWISE_CONV_2D model: input [1,h,w,c], filter [1,kh,kw,c*m]."""

    name: str
    h: int
    w: int
    c: int
    m: int
    kh: int
    kw: int
    sh: int
    sw: int
    padding: str  # "SAME" | "VALID" (TFLite's)
    activation: str
    in_scale: float
    in_zp: int
    filter_scales: Tuple[float, ...]  # 1 entry: per-tensor; c*m entries: per-channel
    out_scale: float
    out_zp: int
    bias: bool
    seed: int
    bias_range: int = 1 << 16


def tflite_pads(case: DwCase):
    """(out_h, out_w, (top, bottom, left, right)) as TFLite derives them."""
    if case.padding == "VALID":
        return (case.h - case.kh) // case.sh + 1, (case.w - case.kw) // case.sw + 1, (0, 0, 0, 0)
    oh, top, bottom = same_padding(case.h, case.kh, case.sh)
    ow, left, right = same_padding(case.w, case.kw, case.sw)
    return oh, ow, (top, bottom, left, right)


def expressible(case: DwCase) -> bool:
    """Within the unit's limits (pads <= 5, kernel <= 15) with at least one output."""
    oh, ow, pads = tflite_pads(case)
    return oh >= 1 and ow >= 1 and max(pads) <= 5 and max(case.kh, case.kw) <= 15


# ---- the case table -------------------------------------------------------------------

NAMED = [
    # name, h, w, c, m, kh, kw, sh, sw, padding, act, in_scale, in_zp, filter_scales, out_scale,
    # out_zp, bias, seed
    DwCase("mobilenet_3x3_s1", 28, 28, 64, 1, 3, 3, 1, 1, "SAME", "RELU6", 0.0235, -128,
           tuple(np.linspace(0.002, 0.03, 64)), 0.0235, -128, True, 1),
    DwCase("mobilenet_3x3_s2_even", 32, 32, 48, 1, 3, 3, 2, 2, "SAME", "RELU6", 0.0235, -128,
           tuple(np.linspace(0.03, 0.002, 48)), 0.0235, -128, True, 2),
    DwCase("asym_same_5x5_s2", 17, 22, 24, 1, 5, 5, 2, 2, "SAME", "NONE", 0.05, 3, (0.01,), 0.08,
           -7, True, 3),
    DwCase("stride_gt_kernel", 19, 23, 21, 1, 2, 1, 3, 3, "VALID", "NONE", 0.1, 0, (0.02,), 0.1, 0,
           True, 4),
    DwCase("depth_mult_8", 9, 11, 5, 8, 3, 3, 1, 2, "SAME", "RELU", 0.02, 10,
           tuple(np.geomspace(1e-3, 1e-1, 40)), 0.05, 20, True, 5),
    DwCase("one_pixel_1x1", 1, 1, 1, 1, 1, 1, 1, 1, "VALID", "NONE", 0.5, -128, (0.5,), 0.01, 127,
           False, 6),
    DwCase("left_shift_multiplier", 6, 7, 33, 2, 3, 3, 1, 1, "SAME", "NONE", 0.9, 127, (0.9,), 1e-5,
           0, True, 7),
    DwCase("flushed_multiplier", 6, 7, 17, 1, 3, 3, 1, 1, "SAME", "NONE", 1e-3, 5, (1e-5,), 1e3,
           -3, True, 8),
    DwCase("pad5_kernel11_same", 12, 13, 18, 1, 11, 11, 1, 1, "SAME", "RELU_N1_TO_1", 0.03, -20,
           (0.004,), 0.01, 4, True, 9),
    DwCase("kernel15_valid", 16, 17, 20, 2, 15, 15, 1, 1, "VALID", "NONE", 0.02, 1, (0.001,), 0.5,
           -1, True, 10),
    DwCase("no_bias_per_channel", 10, 9, 40, 1, 3, 5, 2, 1, "SAME", "RELU", 0.04, -60,
           tuple(np.geomspace(1e-4, 1e-1, 40)), 0.02, -90, False, 11),
    DwCase("large_bias", 8, 8, 32, 1, 3, 3, 1, 1, "SAME", "NONE", 0.01, 0, (0.01,), 0.3, 0, True,
           12, bias_range=1 << 24),
]


def random_case(rng: np.random.Generator, index: int) -> DwCase:
    kind = ("realistic", "odd", "odd", "extreme")[index % 4]
    if kind == "realistic":  # tens of channels, tens of pixels
        c = int(rng.integers(16, 97))
        m = int(rng.choice([1, 1, 1, 2]))
        h, w = (int(v) for v in rng.integers(10, 41, 2))
        kh = kw = int(rng.choice([3, 3, 5]))
        sh = sw = int(rng.choice([1, 2]))
    else:
        c = int(rng.integers(1, 41))
        m = int(rng.choice([1, 2, 4, 8]))
        h, w = (int(v) for v in rng.integers(1, 14, 2))
        kh, kw = (int(v) for v in rng.integers(1, 8, 2))
        sh, sw = (int(v) for v in rng.integers(1, 4, 2))
    padding = str(rng.choice(["SAME", "VALID"]))
    channels = c * m
    per_channel = bool(rng.random() < 0.7)
    if kind == "extreme":
        in_zp = int(rng.choice([-128, 127, -127, 126]))
        out_zp = int(rng.choice([-128, 127]))
        in_scale = float(10 ** rng.uniform(-4, 1))
        out_scale = float(10 ** rng.uniform(-6, 3))
        fs = 10 ** rng.uniform(-6, 0, channels if per_channel else 1)
    else:
        in_zp, out_zp = (int(v) for v in rng.integers(-128, 128, 2))
        in_scale = float(10 ** rng.uniform(-3, 0))
        out_scale = float(10 ** rng.uniform(-3, 0.5))
        fs = 10 ** rng.uniform(-4, -1, channels if per_channel else 1)
    return DwCase(f"{kind}{index}", h, w, c, m, kh, kw, sh, sw, padding,
                  str(rng.choice(ACTIVATIONS)), in_scale, in_zp, tuple(float(v) for v in fs),
                  out_scale, out_zp, bool(rng.random() < 0.85), int(rng.integers(1 << 31)))


def make_cases(n: int, seed: int):
    rng = np.random.default_rng(seed)
    cases, index = [], 0
    while len(cases) < n:
        case = random_case(rng, index)
        index += 1
        if expressible(case):
            cases.append(case)
    return cases


CASES = NAMED + make_cases(220, seed=0xD3B7)


def test_case_table_coverage():
    """The table covers what the unit must get right."""
    realistic = [c for c in CASES if c.c * c.m >= 10 and c.h * c.w >= 100]
    assert len(CASES) >= 200 and len(realistic) >= len(CASES) // 4
    assert {c.m for c in CASES} == {1, 2, 4, 8}
    assert any(c.m > 1 and c.c >= 8 for c in CASES)  # vector multiplier expansion
    assert any(c.sh > c.kh or c.sw > c.kw for c in CASES)
    assert any(len(set(tflite_pads(c)[2])) > 1 for c in CASES if c.padding == "SAME")
    assert any((c.c * c.m) % 32 for c in CASES if c.c * c.m > 32)
    assert {c.activation for c in CASES} == set(ACTIVATIONS)
    assert any(len(c.filter_scales) == 1 for c in CASES)
    assert any(len(c.filter_scales) > 1 for c in CASES)


def case_data(case: DwCase):
    rng = np.random.default_rng(case.seed)
    channels = case.c * case.m
    x = rng.integers(-128, 128, (1, case.h, case.w, case.c), dtype=np.int8)
    filt = rng.integers(-127, 128, (1, case.kh, case.kw, channels), dtype=np.int8)
    bias = (rng.integers(-case.bias_range, case.bias_range, channels, dtype=np.int32)
            if case.bias else None)
    return x, filt, bias


def tflite_depthwise(case: DwCase, x, filt, bias) -> np.ndarray:
    channels = case.c * case.m
    oh, ow, _ = tflite_pads(case)
    per_channel = len(case.filter_scales) > 1
    fscales = list(case.filter_scales)
    t_in = QTensor((1, case.h, case.w, case.c), "int8", case.in_scale, case.in_zp)
    t_w = QTensor(filt.shape, "int8", fscales, [0] * len(fscales),
                  quantized_dimension=3 if per_channel else 0, data=filt)
    t_b = None
    if bias is not None:
        bscales = [float(f32(case.in_scale) * f32(s)) for s in
                   np.broadcast_to(np.array(fscales), (channels,))]
        t_b = QTensor((channels,), "int32", bscales, [0] * channels, data=bias)
    t_out = QTensor((1, oh, ow, channels), "int8", case.out_scale, case.out_zp)
    # No bias means two inputs: TFLite's Prepare reads input 2 whenever the node has
    # three, and rejects an omitted (-1) one ("Tensor at index 2 was optional").
    model = build_model(
        "DEPTHWISE_CONV_2D", [t_in, t_w] + ([t_b] if t_b is not None else []), [t_out],
        options=dict(padding=case.padding, stride_h=case.sh, stride_w=case.sw,
                     depth_multiplier=case.m, fused_activation_function=case.activation),
        version=3)
    (out,) = run_tflite(model, [x])
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_matches_tflite_reference(case: DwCase):
    x, filt, bias = case_data(case)
    expected = tflite_depthwise(case, x, filt, bias)
    channels = case.c * case.m
    mult, shift = conv_multipliers(case.in_scale, case.filter_scales, case.out_scale, channels)
    act_min, act_max = activation_range(case.activation, case.out_scale, case.out_zp)
    _, _, pads = tflite_pads(case)
    assert_both_paths(
        expected,
        lambda: _core.depthwise_conv2d(
            x, filt, bias, mult, shift, depth_multiplier=case.m, stride=(case.sh, case.sw),
            padding=pads, input_zero_point=case.in_zp, output_zero_point=case.out_zp,
            act_min=act_min, act_max=act_max),
        case.name)


# ---- limits: at each boundary and one past it ------------------------------------------


def numpy_depthwise(x, filt, bias, mult, shift, m, stride, pads, in_zp, out_zp, act_min, act_max):
    """An independent model with explicit padding: pad (x - zp) with zeros (a padded
    position holds the input zero point), repeat channels for the multiplier, sum the
    taps in int64, then TFLite's MultiplyByQuantizedMultiplier per channel."""
    top, bottom, left, right = pads
    sh, sw = stride
    xs = np.pad(x[0].astype(np.int64) - in_zp, ((top, bottom), (left, right), (0, 0)))
    xs = np.repeat(xs, m, axis=2)  # output channel oc = ic * m + mi
    _, kh, kw, channels = filt.shape
    oh = (xs.shape[0] - kh) // sh + 1
    ow = (xs.shape[1] - kw) // sw + 1
    acc = np.zeros((oh, ow, channels), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            acc += xs[ky:ky + sh * (oh - 1) + 1:sh, kx:kx + sw * (ow - 1) + 1:sw] * filt[0, ky, kx]
    if bias is not None:
        acc += bias
    assert np.abs(acc).max(initial=0) < 2**31
    out = np.empty(acc.shape, np.int32)
    for oc in range(channels):
        out[..., oc] = _core.multiply_by_quantized_multiplier(
            acc[..., oc].astype(np.int32), int(mult[oc]), int(shift[oc]))
    return np.clip(out.astype(np.int64) + out_zp, act_min, act_max).astype(np.int8)[None]


BOUNDARY_OK = [
    # id, overrides of the base call
    ("kernel_15x15", dict(kernel=(15, 15), h=16, w=15)),
    ("kernel_15x1", dict(kernel=(15, 1), h=15)),
    ("kernel_1x15", dict(kernel=(1, 15), w=14)),
    ("stride_3", dict(stride=(3, 3))),
    ("stride_3x1", dict(stride=(3, 1))),
    ("pad_5_all_sides", dict(padding=(5, 5, 5, 5))),
    ("pad_5_one_side", dict(padding=(0, 5, 5, 0), kernel=(2, 3))),
    ("pad_5_kernel_15", dict(padding=(5, 5, 5, 5), kernel=(15, 15), h=6, w=5)),
    ("depth_multiplier_8", dict(m=8)),
    ("depth_multiplier_4", dict(m=4, c=9)),
    ("zero_points_min", dict(in_zp=-128, out_zp=-128)),
    ("zero_points_max", dict(in_zp=127, out_zp=127)),
    ("shift_31_left", dict(shift=31, mult=1)),
    ("shift_minus_31", dict(shift=-31)),
    ("act_range_single_value", dict(act=(7, 7))),
    ("window_larger_than_input", dict(kernel=(5, 5), h=1, w=1, padding=(2, 2, 2, 2))),
]


def boundary_call(h=9, w=8, c=11, m=1, kernel=(3, 3), stride=(1, 1), padding=(1, 1, 1, 1),
                  in_zp=-5, out_zp=3, shift=-9, mult=1 << 30, act=(-128, 127), seed=0):
    rng = np.random.default_rng(seed)
    channels = c * m
    x = rng.integers(-128, 128, (1, h, w, c), dtype=np.int8)
    filt = rng.integers(-128, 128, (1, *kernel, channels), dtype=np.int8)
    bias = rng.integers(-5000, 5000, channels, dtype=np.int32)
    mults = np.full(channels, mult, np.int32)
    shifts = np.full(channels, shift, np.int32)
    args = (x, filt, bias, mults, shifts)
    kwargs = dict(depth_multiplier=m, stride=stride, padding=padding, input_zero_point=in_zp,
                  output_zero_point=out_zp, act_min=act[0], act_max=act[1])
    return args, kwargs


@pytest.mark.parametrize("name,overrides", BOUNDARY_OK, ids=[b[0] for b in BOUNDARY_OK])
def test_limit_accepted(name, overrides):
    args, kwargs = boundary_call(**overrides)
    expected = numpy_depthwise(*args, kwargs["depth_multiplier"], kwargs["stride"],
                               kwargs["padding"], kwargs["input_zero_point"],
                               kwargs["output_zero_point"], kwargs["act_min"], kwargs["act_max"])
    assert_both_paths(expected, lambda: _core.depthwise_conv2d(*args, **kwargs), name)


BOUNDARY_REJECTED = [
    ("kernel_h_16", dict(kernel=(16, 3), h=20), r"kernel_h 16 out of range \[1, 15\] \(NACC_KERNEL\.K_SIZE_Y\)"),
    ("kernel_w_16", dict(kernel=(3, 16), w=20), r"kernel_w 16 out of range \[1, 15\] \(NACC_KERNEL\.K_SIZE_X\)"),
    ("stride_h_4", dict(stride=(4, 1)), r"stride_h 4 out of range \[1, 3\] \(NACC_KERNEL\.K_STRIDE_Y\)"),
    ("stride_w_4", dict(stride=(1, 4)), r"stride_w 4 out of range \[1, 3\] \(NACC_KERNEL\.K_STRIDE_X\)"),
    ("stride_0", dict(stride=(0, 1)), r"stride_h 0 out of range \[1, 3\]"),
    ("pad_top_6", dict(padding=(6, 0, 0, 0)), r"pad_top 6 out of range \[0, 5\] \(NACC_PADDING\.PAD_Y\)"),
    ("pad_bottom_6", dict(padding=(0, 6, 0, 0)), r"pad_bottom 6 out of range \[0, 5\] \(NACC_PADDING\.PAD_Y\)"),
    ("pad_left_6", dict(padding=(0, 0, 6, 0)), r"pad_left 6 out of range \[0, 5\] \(NACC_PADDING\.PAD_X\)"),
    ("pad_right_6", dict(padding=(0, 0, 0, 6)), r"pad_right 6 out of range \[0, 5\] \(NACC_PADDING\.PAD_X\)"),
    ("pad_negative", dict(padding=(-1, 0, 0, 0)), r"pad_top -1 out of range \[0, 5\]"),
    ("depth_multiplier_3", dict(m=3), r"depth_multiplier 3 not in \{1, 2, 4, 8\} \(NACC_DMA_PARA3\.DW_CH_MULT"),
    ("depth_multiplier_16", dict(m=16, c=2), r"depth_multiplier 16 not in \{1, 2, 4, 8\}"),
    ("in_zp_128", dict(in_zp=128), r"input_zero_point 128 out of range \[-128, 127\] \(NACC_FM_OFFSET\.IN_FM_OFFSET\)"),
    ("in_zp_-129", dict(in_zp=-129), r"input_zero_point -129 out of range"),
    ("out_zp_128", dict(out_zp=128), r"output_zero_point 128 out of range \[-128, 127\] \(NACC_FM_OFFSET\.OUT_FM_OFFSET\)"),
    ("act_min_gt_max", dict(act=(5, 4)), r"activation range \[5, 4\] must satisfy"),
    ("act_max_128", dict(act=(-128, 128)), r"activation range \[-128, 128\]"),
    ("act_min_-129", dict(act=(-129, 127)), r"activation range \[-129, 127\]"),
    ("shift_32", dict(shift=32), r"shift\[0\] 32 out of range \[-31, 31\] \(QUANT_SHIFT array"),
    ("shift_-32", dict(shift=-32), r"shift\[0\] -32 out of range \[-31, 31\]"),
    ("multiplier_negative", dict(mult=-1), r"multiplier\[0\] -1 out of range \[0, 2\^31\)"),
    ("padded_input_smaller_than_kernel", dict(kernel=(5, 5), h=2, w=2, padding=(1, 1, 1, 1)),
     r"kernel 5x5 larger than the padded input 4x4, no output position"),
]


@pytest.mark.parametrize("name,overrides,message", BOUNDARY_REJECTED,
                         ids=[b[0] for b in BOUNDARY_REJECTED])
def test_limit_rejected(name, overrides, message):
    args, kwargs = boundary_call(**overrides)
    with pytest.raises(ValueError, match=message):
        _core.depthwise_conv2d(*args, **kwargs)


def _base():
    args, kwargs = boundary_call()
    return list(args), kwargs


ARGUMENT_ERRORS = [
    # id, mutate(args, kwargs), exception, message
    ("input_float32", lambda a, k: a.__setitem__(0, a[0].astype(np.float32)), TypeError,
     r"input: expected dtype int8, got float32"),
    ("input_uint8", lambda a, k: a.__setitem__(0, a[0].view(np.uint8)), TypeError,
     r"input: expected dtype int8, got uint8"),
    ("filter_int16", lambda a, k: a.__setitem__(1, a[1].astype(np.int16)), TypeError,
     r"filter: expected dtype int8"),
    ("bias_int64", lambda a, k: a.__setitem__(2, a[2].astype(np.int64)), TypeError,
     r"bias: expected dtype int32"),
    ("multiplier_float", lambda a, k: a.__setitem__(3, a[3].astype(np.float64)), TypeError,
     r"multiplier: expected dtype int32"),
    ("input_3d", lambda a, k: a.__setitem__(0, a[0][0]), ValueError,
     r"input: expected 4 dimensions, got 3"),
    ("filter_5d", lambda a, k: a.__setitem__(1, a[1][None]), ValueError,
     r"filter: expected 4 dimensions, got 5"),
    ("batch_2", lambda a, k: a.__setitem__(0, np.concatenate([a[0], a[0]])), ValueError,
     r"input batch 2 must be 1"),
    ("filter_batch_2", lambda a, k: a.__setitem__(1, np.concatenate([a[1], a[1]])), ValueError,
     r"filter shape \[2,3,3,11\] must be \[1, KH, KW, C_in \* depth_multiplier\]"),
    ("filter_channels_mismatch", lambda a, k: k.__setitem__("depth_multiplier", 2), ValueError,
     r"filter channels 11 must equal input channels 11 x depth_multiplier 2 = 22"),
    ("bias_length", lambda a, k: a.__setitem__(2, a[2][:5]), ValueError,
     r"bias: expected 11 entries \(output channels\), got 5"),
    ("shift_length", lambda a, k: a.__setitem__(4, np.zeros(12, np.int32)), ValueError,
     r"shift: expected 11 entries \(output channels\), got 12"),
    ("zero_width_input", lambda a, k: a.__setitem__(0, a[0][:, :, :0]), ValueError,
     r"input width 0 out of range \[1, 65535\]"),
]


@pytest.mark.parametrize("name,mutate,exc,message", ARGUMENT_ERRORS,
                         ids=[e[0] for e in ARGUMENT_ERRORS])
def test_argument_errors(name, mutate, exc, message):
    args, kwargs = _base()
    mutate(args, kwargs)
    with pytest.raises(exc, match=message):
        _core.depthwise_conv2d(*args, **kwargs)


def test_bias_none_and_non_contiguous_input():
    """bias=None means no bias; a strided numpy view is accepted (copied)."""
    args, kwargs = boundary_call(h=12, w=10)
    x, filt, bias, mult, shift = args
    view = np.ascontiguousarray(x)[:, ::2, ::2, :]
    expected = numpy_depthwise(view, filt, None, mult, shift, 1, (1, 1), (1, 1, 1, 1), -5, 3,
                               -128, 127)
    assert_both_paths(expected,
                      lambda: _core.depthwise_conv2d(view, filt, None, mult, shift, **kwargs),
                      "bias None, strided view")


def test_output_zero_point_add_wraps_like_int32():
    """acc = 127 * (127 - (-1)) + bias = 2^31 - 1; multiplier 2^31 - 1, shift 0 gives
    2^31 - 2, and + output zero point 127 wraps in int32 as TFLite's plain int32 add
    does in practice, so the clamp yields -128. Both paths agree."""
    x = np.full((1, 1, 1, 1), 127, np.int8)
    filt = np.full((1, 1, 1, 1), 127, np.int8)
    bias = np.array([2**31 - 1 - 127 * 128], np.int32)
    mult, shift = np.array([2**31 - 1], np.int32), np.array([0], np.int32)
    kw = dict(input_zero_point=-1, output_zero_point=127)
    for path in ("reference", "auto"):
        out = run_path(path, lambda: _core.depthwise_conv2d(x, filt, bias, mult, shift, **kw))
        assert int(out[0, 0, 0, 0]) == -128, path


def test_gil_released_results_independent_of_threads():
    """Two threads computing at once get the same bits as one (no shared scratch)."""
    import concurrent.futures

    args, kwargs = boundary_call(h=40, w=40, c=48, kernel=(3, 3))
    single = _core.depthwise_conv2d(*args, **kwargs)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: _core.depthwise_conv2d(*args, **kwargs), range(4)))
    for r in results:
        assert_same(single, r, "threaded")


def test_error_message_names_unit():
    args, kwargs = boundary_call(stride=(4, 1))
    with pytest.raises(ValueError) as info:
        _core.depthwise_conv2d(*args, **kwargs)
    assert re.match(r"depthwise_conv2d_s8: ", str(info.value))

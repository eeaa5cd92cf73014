"""The MAC unit's 2-D convolution (nacc._core.conv2d) against TFLite's reference
CONV_2D int8 kernel (BUILTIN_REF) on single-op models, through both kernel
paths, with zero differing elements; then the unit's argument checks at each
limit and one past it (kernel 15/16, stride 3/4, padding 5/6, ...)."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from nacc import _core
from quant_helpers import activation_range, conv_multipliers, f32, same_padding
from tflite_builder import QTensor, build_model, run_tflite

ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


@dataclasses.dataclass(frozen=True)
class ConvCase:
    """One CONV_2D model: geometry, quantization and data seed."""

    name: str
    h: int
    w: int
    cin: int
    cout: int
    kh: int
    kw: int
    stride: tuple = (1, 1)
    padding: str = "VALID"  # TFLite padding: "SAME" or "VALID"
    input_zero_point: int = 0
    output_zero_point: int = 0
    input_scale: float = 0.05
    output_scale: float = 0.1
    filter_scales: tuple = (0.01,)  # one entry: per-tensor; cout entries: per-channel
    activation: str = "NONE"
    bias: bool = True
    bias_at_limits: bool = False  # bias within 2^16 of INT32_MAX / INT32_MIN
    seed: int = 0

    def pads(self):
        """(top, bottom, left, right) as TFLite computes them."""
        if self.padding == "VALID":
            return (0, 0, 0, 0)
        _, t, b = same_padding(self.h, self.kh, self.stride[0])
        _, l, r = same_padding(self.w, self.kw, self.stride[1])
        return (t, b, l, r)


# ---- the declarative table: named cases for the shapes and corners that matter ----

NAMED_CASES = [
    ConvCase("resnet_3x3_pad1", 14, 14, 64, 64, 3, 3, padding="SAME", input_zero_point=-128,
             output_zero_point=-5, filter_scales=tuple(np.linspace(0.002, 0.02, 64)),
             input_scale=0.02, output_scale=0.05, activation="RELU", seed=1),
    ConvCase("mobilenet_1x1_expand", 14, 14, 24, 144, 1, 1, input_zero_point=3,
             output_zero_point=-128, filter_scales=tuple(np.linspace(0.01, 0.05, 144)),
             input_scale=0.03, output_scale=0.02, activation="RELU6", seed=2),
    ConvCase("first_layer_3ch_stride2", 17, 17, 3, 32, 3, 3, stride=(2, 2), padding="SAME",
             input_zero_point=-1, filter_scales=tuple(np.linspace(0.005, 0.05, 32)), seed=3),
    ConvCase("stride3_kernel1", 10, 11, 5, 7, 1, 1, stride=(3, 3), padding="SAME", seed=4),
    ConvCase("stride3_kernel2_valid", 11, 13, 6, 9, 2, 2, stride=(3, 3), seed=5),
    ConvCase("kernel15_valid", 16, 17, 3, 5, 15, 15, filter_scales=(0.001,), seed=6),
    ConvCase("kernel15x1_asymmetric", 18, 4, 4, 6, 15, 1, seed=7),
    ConvCase("pad5_same_kernel11", 12, 13, 3, 4, 11, 11, padding="SAME",
             filter_scales=(0.0005,), seed=8),
    ConvCase("same_stride2_even_input_asymmetric", 8, 10, 7, 5, 3, 3, stride=(2, 2),
             padding="SAME", seed=9),
    ConvCase("zero_points_127_127", 6, 6, 9, 11, 3, 3, padding="SAME", input_zero_point=127,
             output_zero_point=127, seed=10),
    ConvCase("zero_points_-128_-128", 6, 6, 9, 11, 3, 3, input_zero_point=-128,
             output_zero_point=-128, seed=11),
    ConvCase("multiplier_above_one", 5, 5, 2, 3, 2, 2, input_scale=0.5, output_scale=0.01,
             filter_scales=(0.02, 0.1, 0.5), seed=12),
    ConvCase("multiplier_flushed_to_zero", 5, 5, 4, 3, 3, 3, input_scale=1e-6,
             output_scale=100.0, filter_scales=(1e-6,), seed=13),
    ConvCase("no_bias_relu_n1_to_1", 7, 5, 33, 31, 3, 2, activation="RELU_N1_TO_1",
             bias=False, output_scale=0.01, seed=14),
    ConvCase("one_pixel", 1, 1, 1, 1, 1, 1, seed=15),
    # Effective multiplier 1e5: shift 17, the accumulator's left shift wraps in int32.
    ConvCase("left_shift_wraps", 4, 4, 8, 6, 3, 3, input_scale=1.0, output_scale=1e-5,
             filter_scales=(1.0,), seed=17),
    # Bias near the int32 limits: bias + sum wraps like TFLite's int32 accumulator.
    ConvCase("accumulator_wraps", 5, 5, 16, 8, 3, 3, padding="SAME", input_zero_point=-128,
             bias_at_limits=True, output_scale=1e5, input_scale=1.0,
             filter_scales=(1.0,), seed=18),
    ConvCase("channels_65_to_33", 9, 9, 65, 33, 3, 3, padding="SAME",
             filter_scales=tuple(np.linspace(0.0005, 0.003, 33)), seed=16),
    # The AVX2 GEMM's edges: 4-row tiles (M % 4 != 0), the 8-column kernel for
    # the last block (C_out % 16 in 1..8), A panels of 84 rows at K = 576 (M =
    # 99 fits one panel, M = 196 takes three), im2col segments of 8 + n bytes.
    ConvCase("gemm_one_panel_m99_cout24", 9, 11, 64, 24, 3, 3, padding="SAME",
             input_zero_point=-7, output_zero_point=3, input_scale=0.02, output_scale=0.05,
             filter_scales=tuple(np.linspace(0.001, 0.004, 24)), seed=19),
    ConvCase("gemm_three_panels_m196_cout20", 14, 14, 64, 20, 3, 3, padding="SAME",
             input_zero_point=5, input_scale=0.02, output_scale=0.05,
             filter_scales=tuple(np.linspace(0.001, 0.004, 20)), seed=21),
    ConvCase("gemm_1x1_m49_cout40_k960", 7, 7, 960, 40, 1, 1, input_zero_point=-128,
             input_scale=0.02, output_scale=0.2,
             filter_scales=tuple(np.linspace(0.0005, 0.002, 40)), seed=22),
    ConvCase("im2col_segments_15_and_tail", 10, 9, 5, 9, 3, 3, padding="SAME",
             input_zero_point=11, seed=23),
]


def _random_case(index: int, rng: np.random.Generator) -> ConvCase:
    """A random case; every fourth has realistic sizes (tens of channels and pixels)."""
    realistic = index % 4 == 0
    for _ in range(100):
        if realistic:
            h, w = (int(v) for v in rng.integers(8, 21, 2))
            cin, cout = (int(v) for v in rng.integers(12, 80, 2))
            kh = kw = int(rng.choice([1, 3, 3, 5]))
        else:
            h, w = (int(v) for v in rng.integers(1, 13, 2))
            cin, cout = (int(v) for v in rng.integers(1, 40, 2))
            kh, kw = (int(v) for v in rng.integers(1, 8, 2))
            if rng.random() < 0.1:
                kh, kw = (int(v) for v in rng.integers(8, 16, 2))
        stride = tuple(int(v) for v in rng.integers(1, 4, 2))
        padding = "SAME" if rng.random() < 0.5 else "VALID"
        case = ConvCase("", h, w, cin, cout, kh, kw, stride, padding)
        pads = case.pads()
        if max(pads) > 5:
            continue
        if h + pads[0] + pads[1] < kh or w + pads[2] + pads[3] < kw:
            continue
        break
    zp_choices = [-128, 127, 0]
    in_zp = int(rng.choice(zp_choices)) if rng.random() < 0.3 else int(rng.integers(-128, 128))
    out_zp = int(rng.choice(zp_choices)) if rng.random() < 0.3 else int(rng.integers(-128, 128))
    k = kh * kw * cin
    # Effective multiplier: mostly scaled so outputs spread over the int8 range;
    # sometimes tiny (deep right shifts) or above one (left shifts).
    mode = rng.choice(["spread"] * 4 + ["tiny", "large"])
    if mode == "spread":
        eff = 30.0 / (math.sqrt(k) * 6000.0) * math.exp(rng.uniform(-1.5, 1.5))
    elif mode == "tiny":
        eff = 10.0 ** rng.uniform(-9, -5)
    else:
        eff = 10.0 ** rng.uniform(0, 1.5)
    in_scale = float(f32(10.0 ** rng.uniform(-3, 0)))
    out_scale = float(f32(10.0 ** rng.uniform(-3, 0)))
    per_channel = rng.random() < 0.6
    spread = np.exp(rng.uniform(-1, 1, cout if per_channel else 1))
    filter_scales = tuple(float(v) for v in f32(eff * out_scale / in_scale * spread))
    return dataclasses.replace(
        case, name=f"random{index}", input_zero_point=in_zp, output_zero_point=out_zp,
        input_scale=in_scale, output_scale=out_scale, filter_scales=filter_scales,
        activation=str(rng.choice(ACTIVATIONS)), bias=bool(rng.random() < 0.8),
        seed=int(rng.integers(1 << 30)))


def _random_cases(count: int, seed: int):
    rng = np.random.default_rng(seed)
    return [_random_case(i, rng) for i in range(count)]


RANDOM_CASES = _random_cases(256, seed=20240601)
CHUNK = 16  # cases per test function (keeps pytest overhead and the session short)


# ---- running one case through TFLite and nacc ----------------------------------------


def _case_data(case: ConvCase):
    rng = np.random.default_rng(case.seed)
    x = rng.integers(-128, 128, (1, case.h, case.w, case.cin), dtype=np.int8)
    w = rng.integers(-128, 128, (case.cout, case.kh, case.kw, case.cin), dtype=np.int8)
    fs = np.broadcast_to(f32(case.filter_scales), (case.cout,))
    bound = int(math.sqrt(case.kh * case.kw * case.cin) * 6000.0)
    b = rng.integers(-bound, bound + 1, case.cout).astype(np.int32) if case.bias else None
    if case.bias_at_limits:
        near = rng.integers(0, 1 << 16, case.cout)
        b = np.where(np.arange(case.cout) % 2 == 0, 2**31 - 1 - near, -2**31 + near).astype(np.int32)
    return x, w, b, fs


def _tflite_conv(case: ConvCase, x, w, b, fs):
    per_channel = len(case.filter_scales) > 1
    oh, _, _ = same_padding(case.h, case.kh, case.stride[0]) if case.padding == "SAME" else (
        (case.h - case.kh) // case.stride[0] + 1, 0, 0)
    ow, _, _ = same_padding(case.w, case.kw, case.stride[1]) if case.padding == "SAME" else (
        (case.w - case.kw) // case.stride[1] + 1, 0, 0)
    t_in = QTensor(x.shape, "int8", scale=case.input_scale, zero_point=case.input_zero_point)
    t_w = QTensor(w.shape, "int8", scale=list(case.filter_scales),
                  zero_point=[0] * len(case.filter_scales), quantized_dimension=0, data=w)
    bias_scales = [float(f32(case.input_scale) * f32(s)) for s in case.filter_scales]
    # TFLite's int8 CONV_2D requires a bias tensor (conv.cc: has_bias); nacc's
    # bias=None is compared against an all-zero bias.
    t_b = QTensor((case.cout,), "int32", scale=bias_scales, zero_point=[0] * len(bias_scales),
                  data=b if b is not None else np.zeros(case.cout, np.int32))
    t_out = QTensor((1, oh, ow, case.cout), "int8", scale=case.output_scale,
                    zero_point=case.output_zero_point)
    inputs = [t_in, t_w, t_b]
    model = build_model("CONV_2D", inputs, [t_out],
                        options=dict(padding=case.padding, stride_h=case.stride[0],
                                     stride_w=case.stride[1],
                                     fused_activation_function=case.activation),
                        version=3 if per_channel else 2)
    (out,) = run_tflite(model, [x])
    return out


def _nacc_conv(case: ConvCase, x, w, b, path: str):
    mult, shift = conv_multipliers(case.input_scale, case.filter_scales, case.output_scale,
                                   case.cout)
    act_min, act_max = activation_range(case.activation, case.output_scale,
                                        case.output_zero_point)
    _core.set_kernel_path(path)
    try:
        return _core.conv2d(x, w, b, mult, shift, stride=case.stride, padding=case.pads(),
                            input_zero_point=case.input_zero_point,
                            output_zero_point=case.output_zero_point, act_min=act_min,
                            act_max=act_max)
    finally:
        _core.set_kernel_path("auto")


def _check(case: ConvCase):
    x, w, b, fs = _case_data(case)
    expected = _tflite_conv(case, x, w, b, fs)
    for path in ("reference", "auto"):
        got = _nacc_conv(case, x, w, b, path)
        assert got.shape == expected.shape, f"{case.name} [{path}]: shape {got.shape} vs {expected.shape}"
        diff = np.argwhere(got != expected)
        assert diff.size == 0, (
            f"{case.name} [{path}]: {len(diff)} of {expected.size} elements differ, first at "
            f"{tuple(diff[0])}: nacc {got[tuple(diff[0])]} vs TFLite {expected[tuple(diff[0])]}; "
            f"{case}")


@pytest.mark.parametrize("case", NAMED_CASES, ids=lambda c: c.name)
def test_conv2d_named_case_matches_tflite_reference(case):
    _check(case)


@pytest.mark.parametrize("chunk", range(math.ceil(len(RANDOM_CASES) / CHUNK)))
def test_conv2d_random_cases_match_tflite_reference(chunk):
    for case in RANDOM_CASES[chunk * CHUNK:(chunk + 1) * CHUNK]:
        _check(case)


def test_random_cases_cover_the_brief():
    """The generated table really covers what it claims to."""
    cases = RANDOM_CASES
    assert len(cases) + len(NAMED_CASES) >= 200
    realistic = [c for c in cases if min(c.cin, c.cout) >= 10 and c.h * c.w >= 64]
    assert len(realistic) >= len(cases) // 4
    assert any(c.stride[0] > c.kh or c.stride[1] > c.kw for c in cases)
    assert any(c.padding == "SAME" and c.pads()[0] != c.pads()[1] for c in cases)
    assert {c.activation for c in cases} == set(ACTIVATIONS)
    assert any(not c.bias for c in cases)
    assert any(len(c.filter_scales) == 1 for c in cases)
    assert any(len(c.filter_scales) > 1 for c in cases)
    assert {-128, 127} <= {c.input_zero_point for c in cases}
    assert {-128, 127} <= {c.output_zero_point for c in cases}
    assert any(c.cout % 32 and c.cout > 32 for c in cases)
    shifts = [s for c in cases for s in conv_multipliers(c.input_scale, c.filter_scales,
                                                         c.output_scale, c.cout)[1]]
    assert min(shifts) <= -20 and max(shifts) >= 1


# ---- argument checks: each limit and one past it --------------------------------------


def _conv_args(h=6, w=6, cin=3, cout=2, kh=3, kw=3):
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, h, w, cin), dtype=np.int8)
    f = rng.integers(-128, 128, (cout, kh, kw, cin), dtype=np.int8)
    b = np.zeros(cout, np.int32)
    mult = np.full(cout, 1 << 30, np.int32)
    shift = np.full(cout, -8, np.int32)
    return x, f, b, mult, shift


@pytest.mark.parametrize("h,k,stride,pads,expected", [
    (7, 3, 2, (1, 1), 4),
    (7, 2, 3, (0, 0), 2),  # stride > kernel: (7 - 2) // 3 + 1
    (3, 3, 1, (0, 0), 1),  # window exactly the input
    (1, 3, 1, (1, 1), 1),  # window exactly the padded input
    (8, 3, 2, (0, 1), 4),  # TFLite SAME, stride 2, even input: asymmetric pads
])
def test_output_extent_is_window_output_size(h, k, stride, pads, expected):
    """conv2d's output extent: (in + pad_before + pad_after - kernel) // stride + 1."""
    x, f, b, mult, shift = _conv_args(h=h, w=h, kh=k, kw=k)
    out = _core.conv2d(x, f, b, mult, shift, stride=(stride, stride), padding=pads + pads)
    assert out.shape == (1, expected, expected, 2)


@pytest.mark.parametrize("kernel,ok", [(15, True), (16, False)])
def test_kernel_size_limit(kernel, ok):
    for kh, kw in ((kernel, 1), (1, kernel)):
        x, f, b, mult, shift = _conv_args(h=16, w=16, kh=kh, kw=kw)
        if ok:
            assert _core.conv2d(x, f, b, mult, shift).shape == (1, 17 - kh, 17 - kw, 2)
        else:
            axis = "kernel_h" if kh == kernel else "kernel_w"
            with pytest.raises(ValueError, match=rf"{axis} 16 out of range \[1, 15\]"):
                _core.conv2d(x, f, b, mult, shift)


@pytest.mark.parametrize("stride,ok", [(1, True), (3, True), (4, False)])
def test_stride_limit(stride, ok):
    x, f, b, mult, shift = _conv_args(h=9, w=9)
    for s in ((stride, 1), (1, stride)):
        if ok:
            _core.conv2d(x, f, b, mult, shift, stride=s)
        else:
            with pytest.raises(ValueError, match=r"stride_[hw] 4 out of range \[1, 3\]"):
                _core.conv2d(x, f, b, mult, shift, stride=s)


@pytest.mark.parametrize("pad,ok", [(5, True), (6, False)])
@pytest.mark.parametrize("side", range(4))
def test_padding_limit(pad, ok, side):
    x, f, b, mult, shift = _conv_args()
    padding = [0, 0, 0, 0]
    padding[side] = pad
    if ok:
        out = _core.conv2d(x, f, b, mult, shift, padding=tuple(padding))
        assert out.shape == (1, 4 + padding[0] + padding[1], 4 + padding[2] + padding[3], 2)
    else:
        name = ("pad_top", "pad_bottom", "pad_left", "pad_right")[side]
        with pytest.raises(ValueError, match=rf"{name} 6 out of range \[0, 5\]"):
            _core.conv2d(x, f, b, mult, shift, padding=tuple(padding))


def test_padding_is_input_zero_point(kernel_path):
    """A window entirely in the padding contributes nothing: out = requant(bias)."""
    x, f, b, mult, shift = _conv_args(h=1, w=1, kh=1, kw=1)
    b[:] = [100, -100]
    out = _core.conv2d(x, f, b, mult, np.zeros(2, np.int32), padding=(1, 1, 1, 1),
                       input_zero_point=37)
    border = np.ones((3, 3), bool)
    border[1, 1] = False
    assert (out[0][border] == [50, -50]).all()  # multiplier 2^30 with shift 0 halves


BAD_ARGUMENTS = [
    # (description, override, error type, message pattern)
    ("input zero point 128", dict(input_zero_point=128), ValueError, r"input_zero_point 128"),
    ("input zero point -129", dict(input_zero_point=-129), ValueError, r"input_zero_point -129"),
    ("output zero point 128", dict(output_zero_point=128), ValueError, r"output_zero_point 128"),
    ("act_min > act_max", dict(act_min=5, act_max=4), ValueError, r"activation range"),
    ("act_max 128", dict(act_max=128), ValueError, r"activation range"),
    ("act_min -129", dict(act_min=-129), ValueError, r"activation range"),
    ("shift 32", dict(shift=np.full(2, 32, np.int32)), ValueError, r"shift\[0\] 32"),
    ("shift -32", dict(shift=np.full(2, -32, np.int32)), ValueError, r"shift\[0\] -32"),
    ("negative multiplier", dict(multiplier=np.array([1, -1], np.int32)), ValueError,
     r"multiplier\[1\] -1"),
    ("batch 2", dict(input=np.zeros((2, 6, 6, 3), np.int8)), ValueError, r"batch 2 must be 1"),
    ("input channels mismatch", dict(input=np.zeros((1, 6, 6, 4), np.int8)), ValueError,
     r"input channels"),
    ("window larger than input", dict(input=np.zeros((1, 2, 6, 3), np.int8)), ValueError,
     r"larger than the padded input"),
    ("bias length", dict(bias=np.zeros(3, np.int32)), ValueError, r"bias has 3 entries"),
    ("multiplier length", dict(multiplier=np.zeros(1, np.int32)), ValueError,
     r"multiplier has 1 entries"),
    ("input dtype uint8", dict(input=np.zeros((1, 6, 6, 3), np.uint8)), TypeError, r"input"),
    ("filter dtype int16", dict(filter=np.zeros((2, 3, 3, 3), np.int16)), TypeError, r"filter"),
    ("bias dtype int64", dict(bias=np.zeros(2, np.int64)), TypeError, r"bias"),
    ("multiplier dtype float", dict(multiplier=np.zeros(2, np.float32)), TypeError,
     r"multiplier"),
    ("input 3-D", dict(input=np.zeros((6, 6, 3), np.int8)), ValueError, r"dimensions"),
    ("filter 5-D", dict(filter=np.zeros((1, 2, 3, 3, 3), np.int8)), ValueError, r"dimensions"),
    ("zero output channels", dict(filter=np.zeros((0, 3, 3, 3), np.int8),
                                  bias=np.zeros(0, np.int32), multiplier=np.zeros(0, np.int32),
                                  shift=np.zeros(0, np.int32)), ValueError, r"output channels 0"),
]


@pytest.mark.parametrize("desc,override,error,pattern", BAD_ARGUMENTS,
                         ids=[a[0] for a in BAD_ARGUMENTS])
def test_bad_arguments_raise(desc, override, error, pattern):
    x, f, b, mult, shift = _conv_args()
    args = dict(input=x, filter=f, bias=b, multiplier=mult, shift=shift)
    kwargs = {}
    for key, value in override.items():
        (args if key in args else kwargs)[key] = value
    with pytest.raises(error, match=pattern):
        _core.conv2d(args["input"], args["filter"], args["bias"], args["multiplier"],
                     args["shift"], **kwargs)

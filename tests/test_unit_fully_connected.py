"""The MAC unit's fully-connected and matrix modes (nacc._core.fully_connected,
matmul) against TFLite's reference FULLY_CONNECTED and BATCH_MATMUL int8 kernels
(BUILTIN_REF) on single-op models, through both kernel paths, with zero
differing elements; then the argument checks.

TFLite 2.21's reference FULLY_CONNECTED requantizes in double
(round(acc * in_scale * w_scale / out_scale)), not with MultiplyByQuantizedMultiplier;
the tests drive nacc's fully_connected with effective_scale accordingly, and one
test pins that difference down so a TFLite change in either direction shows."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from nacc import _core
from quant_helpers import (activation_range, batch_matmul_multiplier, conv_multipliers, f32,
                           fc_effective_scales)
from tflite_builder import QTensor, build_model, run_tflite

ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")
CHUNK = 16  # cases per test function


def _both_paths(fn):
    """fn() under the reference loops and under 'auto'; restores 'auto'."""
    results = {}
    for path in ("reference", "auto"):
        _core.set_kernel_path(path)
        try:
            results[path] = fn()
        finally:
            _core.set_kernel_path("auto")
    return results


def _assert_equal(name, path, got, expected, case):
    assert got.shape == expected.shape, f"{name} [{path}]: shape {got.shape} vs {expected.shape}"
    diff = np.argwhere(got != expected)
    assert diff.size == 0, (
        f"{name} [{path}]: {len(diff)} of {expected.size} elements differ, first at "
        f"{tuple(diff[0])}: nacc {got[tuple(diff[0])]} vs TFLite {expected[tuple(diff[0])]}; {case}")


def _zero_point(rng):
    if rng.random() < 0.3:
        return int(rng.choice([-128, 127, 0]))
    return int(rng.integers(-128, 128))


def _effective(rng, k):
    """A target effective scale: mostly spreading outputs over int8, sometimes tiny or > 1."""
    mode = rng.choice(["spread"] * 4 + ["tiny", "large"])
    if mode == "spread":
        return 30.0 / (math.sqrt(k) * 6000.0) * math.exp(rng.uniform(-1.5, 1.5))
    if mode == "tiny":
        return 10.0 ** rng.uniform(-9, -5)
    return 10.0 ** rng.uniform(0, 1.5)


# ---- FULLY_CONNECTED -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FcCase:
    name: str
    m: int
    k: int
    n: int
    input_zero_point: int = 0
    output_zero_point: int = 0
    input_scale: float = 0.05
    output_scale: float = 0.1
    filter_scales: tuple = (0.01,)  # one entry: per-tensor; n entries: per-channel
    activation: str = "NONE"
    bias: bool = True
    bias_magnitude: float = 1.0  # bias range relative to the accumulator's spread
    seed: int = 0


FC_NAMED = [
    FcCase("mobilenet_classifier_1280_1000", 1, 1280, 1000, -128, -20, 0.02, 0.1,
           (0.0005,), seed=1),
    FcCase("per_channel_batch_40", 40, 96, 70, 5, -3, 0.03, 0.05,
           tuple(np.linspace(0.001, 0.01, 70)), activation="RELU", seed=2),
    FcCase("k_1_n_1", 1, 1, 1, seed=3),
    FcCase("odd_k_tail_37", 3, 37, 19, 127, 127, seed=4),
    FcCase("zero_points_-128", 33, 50, 17, -128, -128, activation="RELU6", seed=5),
    FcCase("no_bias", 2, 64, 33, bias=False, activation="RELU_N1_TO_1", output_scale=0.01,
           seed=6),
    # The AVX2 GEMM over several A panels (256 rows each) with odd and even K and
    # an 8-column last block.
    FcCase("batch_600_odd_k_45_n_24", 600, 45, 24, 9, -4, 0.03, 0.05,
           tuple(np.linspace(0.001, 0.01, 24)), activation="RELU6", seed=21),
    FcCase("batch_530_k_64_n_40", 530, 64, 40, -128, 3, 0.03, 0.05, (0.004,), seed=22),
    FcCase("multiplier_above_one", 4, 8, 5, 0, 0, 0.5, 0.01, (0.05,), seed=7),
    # round(acc * scale) outside int32 gives INT32_MIN in TFLite (x86 cvttsd2si),
    # then + zero point (wrapping) and the clamp.
    FcCase("real_scale_overflow", 3, 16, 8, 0, -7, 1.0, 0.001, (1.0,), bias_magnitude=5e4,
           seed=8),
    FcCase("real_scale_overflow_zp_positive", 3, 16, 8, 0, 9, 1.0, 0.001, (1.0,),
           bias_magnitude=5e4, seed=9),
]


def _random_fc(index, rng):
    realistic = index % 4 == 0
    if realistic:
        m = int(rng.choice([1, 1, 2, 8, 40]))
        k, n = (int(v) for v in rng.integers(24, 300, 2))
    else:
        m = int(rng.integers(1, 70))
        k, n = (int(v) for v in rng.integers(1, 80, 2))
    eff = _effective(rng, k)
    in_scale = float(f32(10.0 ** rng.uniform(-3, 0)))
    out_scale = float(f32(10.0 ** rng.uniform(-3, 0)))
    per_channel = rng.random() < 0.5
    spread = np.exp(rng.uniform(-1, 1, n if per_channel and n > 1 else 1))
    return FcCase(f"random{index}", m, k, n, _zero_point(rng), _zero_point(rng), in_scale,
                  out_scale, tuple(float(v) for v in f32(eff * out_scale / in_scale * spread)),
                  str(rng.choice(ACTIVATIONS)), bool(rng.random() < 0.8), 1.0,
                  int(rng.integers(1 << 30)))


FC_RANDOM = [_random_fc(i, r) for r in [np.random.default_rng(777)] for i in range(224)]


def _fc_data(case):
    rng = np.random.default_rng(case.seed)
    x = rng.integers(-128, 128, (case.m, case.k), dtype=np.int8)
    w = rng.integers(-128, 128, (case.n, case.k), dtype=np.int8)
    bound = int(math.sqrt(case.k) * 6000.0 * case.bias_magnitude)
    b = rng.integers(-bound, bound + 1, case.n).astype(np.int32) if case.bias else None
    return x, w, b


def _tflite_fc(case, x, w, b):
    scales = list(case.filter_scales)
    t_in = QTensor(x.shape, "int8", scale=case.input_scale, zero_point=case.input_zero_point)
    t_w = QTensor(w.shape, "int8", scale=scales, zero_point=[0] * len(scales),
                  quantized_dimension=0, data=w)
    bias_scales = [float(f32(case.input_scale) * f32(s)) for s in scales]
    t_b = (QTensor((case.n,), "int32", scale=bias_scales, zero_point=[0] * len(scales), data=b)
           if b is not None else None)
    t_out = QTensor((case.m, case.n), "int8", scale=case.output_scale,
                    zero_point=case.output_zero_point)
    model = build_model("FULLY_CONNECTED", [t_in, t_w, t_b], [t_out],
                        options=dict(fused_activation_function=case.activation), version=4)
    (out,) = run_tflite(model, [x])
    return out


def _check_fc(case):
    x, w, b = _fc_data(case)
    expected = _tflite_fc(case, x, w, b)
    scale = fc_effective_scales(case.input_scale, case.filter_scales, case.output_scale, case.n)
    act_min, act_max = activation_range(case.activation, case.output_scale,
                                        case.output_zero_point)
    results = _both_paths(lambda: _core.fully_connected(
        x, w, b, effective_scale=scale, input_zero_point=case.input_zero_point,
        output_zero_point=case.output_zero_point, act_min=act_min, act_max=act_max))
    for path, got in results.items():
        _assert_equal(case.name, path, got, expected, case)


@pytest.mark.parametrize("case", FC_NAMED, ids=lambda c: c.name)
def test_fully_connected_named_case_matches_tflite_reference(case):
    _check_fc(case)


@pytest.mark.parametrize("chunk", range(math.ceil(len(FC_RANDOM) / CHUNK)))
def test_fully_connected_random_cases_match_tflite_reference(chunk):
    for case in FC_RANDOM[chunk * CHUNK:(chunk + 1) * CHUNK]:
        _check_fc(case)


def test_fully_connected_real_scale_overflow_is_exercised():
    """The overflow cases really leave int32 (otherwise they test nothing)."""
    for case in FC_NAMED:
        if case.name.startswith("real_scale_overflow"):
            x, w, b = _fc_data(case)
            acc = (x.astype(np.int64) - case.input_zero_point) @ w.astype(np.int64).T + b
            scale = fc_effective_scales(case.input_scale, case.filter_scales, case.output_scale,
                                        case.n)
            assert (np.abs(acc * scale) >= 2.0**31).any()


def test_tflite_reference_fc_rounds_in_double_not_by_quantized_multiplier():
    """TFLite 2.21's reference FULLY_CONNECTED is round(acc * effective_scale) in
    double: the conv-style multiplier/shift result differs from it near ties,
    while effective_scale matches. Power-of-two scales make ties common."""
    rng = np.random.default_rng(5)
    case = FcCase("ties", 64, 16, 32, 3, 1, 0.5, 1.0, (0.25,), seed=11)
    x, w, b = _fc_data(case)
    x = rng.integers(-4, 5, x.shape).astype(np.int8)
    w = rng.integers(-4, 5, w.shape).astype(np.int8)
    b = rng.integers(-50, 50, case.n).astype(np.int32)
    expected = _tflite_fc(case, x, w, b)
    scale = fc_effective_scales(case.input_scale, case.filter_scales, case.output_scale, case.n)
    mult, shift = conv_multipliers(case.input_scale, case.filter_scales, case.output_scale,
                                   case.n)
    kw = dict(input_zero_point=case.input_zero_point, output_zero_point=case.output_zero_point)
    via_scale = _core.fully_connected(x, w, b, effective_scale=scale, **kw)
    via_multiplier = _core.fully_connected(x, w, b, mult, shift, **kw)
    np.testing.assert_array_equal(via_scale, expected)
    assert (via_multiplier != expected).sum() > 0


@pytest.mark.parametrize("index", range(0, 224, 8))
def test_fully_connected_multiplier_mode_matches_tflite_1x1_conv(index):
    """fully_connected with multiplier/shift is a 1x1 CONV_2D (what the compiler
    may lower a pointwise conv to): checked against TFLite's reference CONV_2D
    on [1, 1, M, K] with the conv's multipliers."""
    case = FC_RANDOM[index]
    x, w, b = _fc_data(case)
    if b is None:
        b = np.zeros(case.n, np.int32)  # TFLite's int8 CONV_2D requires a bias
    scales = list(case.filter_scales)
    bias_scales = [float(f32(case.input_scale) * f32(s)) for s in scales]
    model = build_model(
        "CONV_2D",
        [QTensor((1, 1, case.m, case.k), "int8", scale=case.input_scale,
                 zero_point=case.input_zero_point),
         QTensor((case.n, 1, 1, case.k), "int8", scale=scales, zero_point=[0] * len(scales),
                 data=w.reshape(case.n, 1, 1, case.k)),
         QTensor((case.n,), "int32", scale=bias_scales, zero_point=[0] * len(scales), data=b)],
        [QTensor((1, 1, case.m, case.n), "int8", scale=case.output_scale,
                 zero_point=case.output_zero_point)],
        options=dict(padding="VALID", fused_activation_function=case.activation), version=3)
    (expected,) = run_tflite(model, [x.reshape(1, 1, case.m, case.k)])
    mult, shift = conv_multipliers(case.input_scale, case.filter_scales, case.output_scale,
                                   case.n)
    act_min, act_max = activation_range(case.activation, case.output_scale,
                                        case.output_zero_point)
    results = _both_paths(lambda: _core.fully_connected(
        x, w, b, mult, shift, input_zero_point=case.input_zero_point,
        output_zero_point=case.output_zero_point, act_min=act_min, act_max=act_max))
    for path, got in results.items():
        _assert_equal(case.name, path, got, expected.reshape(case.m, case.n), case)


def test_fc_cases_cover_the_brief():
    cases = FC_RANDOM
    assert len(cases) + len(FC_NAMED) >= 200
    assert sum(1 for c in cases if min(c.k, c.n) >= 24) >= len(cases) // 4
    assert {c.activation for c in cases} == set(ACTIVATIONS)
    assert any(not c.bias for c in cases) and any(c.bias for c in cases)
    assert any(len(c.filter_scales) == 1 for c in cases)
    assert any(len(c.filter_scales) > 1 for c in cases)
    assert {-128, 127} <= {c.input_zero_point for c in cases}
    assert {-128, 127} <= {c.output_zero_point for c in cases}
    assert any(c.m >= 32 for c in cases) and any(c.m < 32 for c in cases)  # both AVX2 kernels
    scales = [s for c in cases for s in fc_effective_scales(c.input_scale, c.filter_scales,
                                                            c.output_scale, c.n)]
    assert min(scales) < 1e-6 and max(scales) > 1


# ---- BATCH_MATMUL ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class MatmulCase:
    name: str
    m: int
    k: int
    n: int
    a_zero_point: int = 0
    b_zero_point: int = 0
    output_zero_point: int = 0
    a_scale: float = 0.05
    b_scale: float = 0.05
    output_scale: float = 0.5
    b_constant: bool = False
    seed: int = 0


MM_NAMED = [
    MatmulCase("attention_scores_49x32x49", 49, 32, 49, 3, -7, 2, 0.05, 0.04, 0.3, seed=1),
    MatmulCase("zero_points_-128_127", 17, 33, 35, -128, 127, -128, seed=2),
    MatmulCase("zero_points_127_-128", 5, 9, 6, 127, -128, 127, seed=3),
    MatmulCase("constant_rhs", 12, 64, 40, 1, 0, -1, b_constant=True, seed=4),
    MatmulCase("one_by_one", 1, 1, 1, seed=5),
    MatmulCase("multiplier_above_one", 4, 3, 5, 0, 0, 0, 0.5, 0.5, 0.01, seed=6),
]


def _random_mm(index, rng):
    if index % 4 == 0:
        m, k, n = (int(v) for v in rng.integers(16, 100, 3))
    else:
        m, k, n = (int(v) for v in rng.integers(1, 48, 3))
    eff = _effective(rng, k)
    a_scale = float(f32(10.0 ** rng.uniform(-3, 0)))
    b_scale = float(f32(10.0 ** rng.uniform(-3, 0)))
    out_scale = float(f32(a_scale * b_scale / eff))
    return MatmulCase(f"random{index}", m, k, n, _zero_point(rng), _zero_point(rng),
                      _zero_point(rng), a_scale, b_scale, out_scale, bool(rng.random() < 0.3),
                      int(rng.integers(1 << 30)))


MM_RANDOM = [_random_mm(i, r) for r in [np.random.default_rng(4242)] for i in range(224)]


def _check_mm(case):
    rng = np.random.default_rng(case.seed)
    a = rng.integers(-128, 128, (case.m, case.k), dtype=np.int8)
    b = rng.integers(-128, 128, (case.k, case.n), dtype=np.int8)
    t_a = QTensor(a.shape, "int8", scale=case.a_scale, zero_point=case.a_zero_point)
    t_b = QTensor(b.shape, "int8", scale=case.b_scale, zero_point=case.b_zero_point,
                  data=b if case.b_constant else None)
    t_out = QTensor((case.m, case.n), "int8", scale=case.output_scale,
                    zero_point=case.output_zero_point)
    model = build_model("BATCH_MATMUL", [t_a, t_b], [t_out],
                        options=dict(adj_x=False, adj_y=False), version=2)
    (expected,) = run_tflite(model, [a] if case.b_constant else [a, b])
    mult, shift = batch_matmul_multiplier(case.a_scale, case.b_scale, case.output_scale)
    results = _both_paths(lambda: _core.matmul(
        a, b, np.array([mult], np.int32), np.array([shift], np.int32),
        a_zero_point=case.a_zero_point, b_zero_point=case.b_zero_point,
        output_zero_point=case.output_zero_point))
    for path, got in results.items():
        _assert_equal(case.name, path, got, expected, case)


@pytest.mark.parametrize("case", MM_NAMED, ids=lambda c: c.name)
def test_matmul_named_case_matches_tflite_reference(case):
    _check_mm(case)


@pytest.mark.parametrize("chunk", range(math.ceil(len(MM_RANDOM) / CHUNK)))
def test_matmul_random_cases_match_tflite_reference(chunk):
    for case in MM_RANDOM[chunk * CHUNK:(chunk + 1) * CHUNK]:
        _check_mm(case)


def test_matmul_cases_cover_the_brief():
    cases = MM_RANDOM
    assert len(cases) + len(MM_NAMED) >= 200
    assert sum(1 for c in cases if min(c.m, c.k, c.n) >= 16) >= len(cases) // 4
    for field in ("a_zero_point", "b_zero_point", "output_zero_point"):
        assert {-128, 127} <= {getattr(c, field) for c in cases}
    shifts = [batch_matmul_multiplier(c.a_scale, c.b_scale, c.output_scale)[1] for c in cases]
    assert min(shifts) <= -20 and max(shifts) >= 1


# ---- argument checks ---------------------------------------------------------------------


def _fc_args(m=2, k=5, n=3):
    rng = np.random.default_rng(0)
    return dict(input=rng.integers(-128, 128, (m, k), dtype=np.int8),
                weights=rng.integers(-128, 128, (n, k), dtype=np.int8),
                bias=np.zeros(n, np.int32), multiplier=np.full(n, 1 << 30, np.int32),
                shift=np.full(n, -3, np.int32))


FC_BAD = [
    ("input zero point 128", dict(input_zero_point=128), ValueError, r"input_zero_point 128"),
    ("output zero point -129", dict(output_zero_point=-129), ValueError,
     r"output_zero_point -129"),
    ("act_min > act_max", dict(act_min=3, act_max=2), ValueError, r"activation range"),
    ("shift 32", dict(shift=np.full(3, 32, np.int32)), ValueError, r"shift\[0\] 32"),
    ("negative multiplier", dict(multiplier=np.array([1, 2, -3], np.int32)), ValueError,
     r"multiplier\[2\] -3"),
    ("weights depth mismatch", dict(weights=np.zeros((3, 4), np.int8)), ValueError,
     r"do not match input depth 5"),
    ("bias length", dict(bias=np.zeros(4, np.int32)), ValueError, r"bias has 4 entries"),
    ("shift length", dict(shift=np.zeros(2, np.int32)), ValueError, r"shift has 2 entries"),
    ("input dtype int16", dict(input=np.zeros((2, 5), np.int16)), TypeError, r"input"),
    ("weights dtype uint8", dict(weights=np.zeros((3, 5), np.uint8)), TypeError, r"weights"),
    ("bias dtype float", dict(bias=np.zeros(3, np.float32)), TypeError, r"bias"),
    ("input 3-D", dict(input=np.zeros((1, 2, 5), np.int8)), ValueError, r"dimensions"),
    ("empty input", dict(input=np.zeros((0, 5), np.int8)), ValueError, r"m \(rows\) 0"),
    ("both scale modes", dict(effective_scale=np.ones(3)), ValueError, r"either multiplier"),
    ("no scale at all", dict(multiplier=None, shift=None), ValueError, r"either multiplier"),
    ("negative effective scale", dict(multiplier=None, shift=None,
                                      effective_scale=np.array([1.0, -1.0, 1.0])), ValueError,
     r"effective_scale\[1\]"),
    ("effective scale dtype", dict(multiplier=None, shift=None,
                                   effective_scale=np.ones(3, np.float32)), TypeError,
     r"effective_scale"),
]


@pytest.mark.parametrize("desc,override,error,pattern", FC_BAD, ids=[a[0] for a in FC_BAD])
def test_fully_connected_bad_arguments_raise(desc, override, error, pattern):
    args = _fc_args()
    kwargs = {}
    for key, value in override.items():
        (args if key in args else kwargs)[key] = value
    with pytest.raises(error, match=pattern):
        _core.fully_connected(args["input"], args["weights"], args["bias"], args["multiplier"],
                              args["shift"], **kwargs)


MM_BAD = [
    ("a zero point 128", dict(a_zero_point=128), ValueError, r"a_zero_point 128"),
    ("b zero point -129", dict(b_zero_point=-129), ValueError, r"b_zero_point -129"),
    ("act range", dict(act_min=10, act_max=-10), ValueError, r"activation range"),
    ("shift -32", dict(shift=np.array([-32], np.int32)), ValueError, r"shift\[0\] -32"),
    ("inner dims mismatch", dict(b=np.zeros((4, 3), np.int8)), ValueError, r"expected \[5, N\]"),
    ("multiplier length", dict(multiplier=np.zeros(2, np.int32)), ValueError,
     r"expected 1 or 3"),
    ("a dtype", dict(a=np.zeros((2, 5), np.uint8)), TypeError, r"a: expected dtype int8"),
    ("b 1-D", dict(b=np.zeros(5, np.int8)), ValueError, r"dimensions"),
]


@pytest.mark.parametrize("desc,override,error,pattern", MM_BAD, ids=[a[0] for a in MM_BAD])
def test_matmul_bad_arguments_raise(desc, override, error, pattern):
    rng = np.random.default_rng(0)
    args = dict(a=rng.integers(-128, 128, (2, 5), dtype=np.int8),
                b=rng.integers(-128, 128, (5, 3), dtype=np.int8),
                multiplier=np.array([1 << 30], np.int32), shift=np.array([-2], np.int32))
    kwargs = {}
    for key, value in override.items():
        (args if key in args else kwargs)[key] = value
    with pytest.raises(error, match=pattern):
        _core.matmul(args["a"], args["b"], args["multiplier"], args["shift"], **kwargs)

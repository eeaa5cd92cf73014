"""The activation unit (nacc._core.activation) against TFLite's BUILTIN_REF
int8 RELU / RELU6 / RELU_N1_TO_1, LOGISTIC and TANH kernels: exact equality,
through both kernel paths.

TFLite 2.21's reference int8 LOGISTIC and TANH are table lookups: Prepare fills
a 256-entry table in float32 (LUTPopulate<int8_t>), Eval looks bytes up. The
unit's LUT mode runs the tables from lut_tflite_logistic / lut_tflite_tanh; an
exhaustive sweep feeds all 256 input values through TFLite for many input
quantizations and compares entry by entry.
"""
from __future__ import annotations

import dataclasses
from typing import Tuple

import numpy as np
import pytest

from nacc import UnsupportedError, _core
from tflite_builder import QTensor, build_model, run_tflite

pytestmark = pytest.mark.filterwarnings("ignore:.*tf.lite.Interpreter is deprecated")

RANDOM_CASES_PER_KIND = 200
ALL_INT8 = np.arange(-128, 128, dtype=np.int8)
# The converter's fixed int8 output quantization (TFLite requires 1/256 for
# LOGISTIC; TANH's 1/128, 0 is only a convention, so other values are tested too).
LOGISTIC_OUT = (1.0 / 256, -128)
TANH_OUT = (1.0 / 128, 0)


def f32(x: float) -> float:
    return float(np.float32(x))


@dataclasses.dataclass(frozen=True)
class Case:
    op: str  # RELU, RELU6, RELU_N1_TO_1, LOGISTIC, TANH
    shape: Tuple[int, ...]
    in_scale: float
    in_zp: int
    out_scale: float
    out_zp: int
    seed: int = 0

    def __str__(self) -> str:
        return (f"{self.op}-r{self.seed}-{self.shape}-s{self.in_scale:.3g}z{self.in_zp}"
                f"-s{self.out_scale:.3g}z{self.out_zp}")


def random_zp(rng) -> int:
    u = rng.random()
    return -128 if u < 0.12 else 127 if u < 0.24 else int(rng.integers(-128, 128))


def random_shape(rng) -> Tuple[int, ...]:
    c = int(rng.integers(1, 71))
    shape = (1, int(rng.integers(1, 9)), int(rng.integers(1, 9)), c + (c % 32 == 0))
    return shape[-int(rng.integers(1, 5)):] if rng.random() < 0.15 else shape


def random_cases(op: str, count: int, seed: int):
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(count):
        in_scale = 10 ** rng.uniform(-4, 1)
        if op == "LOGISTIC":
            out_scale, out_zp = LOGISTIC_OUT
            if rng.random() < 0.2:
                out_zp = random_zp(rng)  # the reference kernel accepts any zero point
        elif op == "TANH":
            out_scale, out_zp = TANH_OUT
            if rng.random() < 0.3:
                out_scale, out_zp = 10 ** rng.uniform(-3, 0), random_zp(rng)
        else:
            u = rng.random()
            out_scale = in_scale if u < 0.2 else in_scale * 10 ** rng.uniform(-1.5, 1.5)
        cases.append(Case(op, random_shape(rng), f32(in_scale), random_zp(rng), f32(out_scale),
                          out_zp if op in ("LOGISTIC", "TANH") else random_zp(rng),
                          seed * 1000 + i))
    return cases


RELU_KINDS = ("RELU", "RELU6", "RELU_N1_TO_1")
CASES = ([c for k, op in enumerate(RELU_KINDS)
          for c in random_cases(op, RANDOM_CASES_PER_KIND if op != "RELU_N1_TO_1" else 60, 21 + k)]
         + random_cases("LOGISTIC", RANDOM_CASES_PER_KIND, 31)
         + random_cases("TANH", RANDOM_CASES_PER_KIND, 32))


def tflite_reference(op, shape, in_scale, in_zp, out_scale, out_zp, x):
    model = build_model(op, [QTensor(shape, "int8", in_scale, in_zp)],
                        [QTensor(shape, "int8", out_scale, out_zp)])
    (out,) = run_tflite(model, [x])
    return out


def nacc_params(case: Case) -> dict:
    if case.op == "LOGISTIC":
        lut = _core.lut_tflite_logistic(case.in_scale, case.in_zp, case.out_scale, case.out_zp)
        return dict(mode=_core.ActMode.LUT, lut=lut)
    if case.op == "TANH":
        lut = _core.lut_tflite_tanh(case.in_scale, case.in_zp, case.out_scale, case.out_zp)
        return dict(mode=_core.ActMode.LUT, lut=lut)
    return _core.tflite_relu_params(case.in_scale, case.in_zp, case.out_scale, case.out_zp,
                                    case.op)


def on_both_paths(fn):
    results = {}
    try:
        for path in ("reference", "auto"):
            _core.set_kernel_path(path)
            results[path] = fn()
    finally:
        _core.set_kernel_path("auto")
    return results


def assert_same(got, want, what):
    assert got.dtype == np.int8 and got.shape == want.shape, what
    diff = np.argwhere(got != want)
    assert diff.size == 0, (f"{what}: {len(diff)} of {want.size} elements differ; first at "
                            f"{tuple(diff[0])}: {got[tuple(diff[0])]} != {want[tuple(diff[0])]}")


def test_case_table_size():
    for op in ("RELU", "RELU6", "LOGISTIC", "TANH"):
        assert sum(c.op == op for c in CASES) >= RANDOM_CASES_PER_KIND


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_tflite_reference(case: Case):
    rng = np.random.default_rng(case.seed + 5000)
    x = rng.integers(-128, 128, case.shape, dtype=np.int8)
    want = tflite_reference(case.op, case.shape, case.in_scale, case.in_zp, case.out_scale,
                            case.out_zp, x)
    params = nacc_params(case)
    for path, got in on_both_paths(lambda: _core.activation(x, **params)).items():
        assert_same(got, want, f"{case} [{path}]")


# ---------------------------------------------------------------------------
# Exhaustive: every int8 input through TFLite, compared with the table entry.

SWEEP_SCALES = [f32(2.0 ** e) for e in range(-10, 4)] + [
    f32(v) for v in (1 / 255, 1 / 127, 0.0123, 0.0393, 0.05, 0.0784, 0.1, 0.2571, 0.333,
                     0.75, 1.37, 3.3, 1e-4, 0.019607844)]
SWEEP_ZPS = [-128, -100, -1, 0, 1, 37, 127]
TANH_OUTS = [TANH_OUT, (f32(1 / 127), -1), (f32(0.01), 20), (f32(0.2), -128)]


def sweep_luts(op: str):
    """(in_scale, in_zp, out_scale, out_zp) combinations of the sweep."""
    outs = [LOGISTIC_OUT, (LOGISTIC_OUT[0], 0)] if op == "LOGISTIC" else TANH_OUTS
    return [(s, z, os_, oz) for s in SWEEP_SCALES for z in SWEEP_ZPS
            for k, (os_, oz) in enumerate(outs)
            if k == 0 or (z in (0, 127) and s in SWEEP_SCALES[::3])]


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
def test_lut_equals_tflite_entry_by_entry(op):
    build = _core.lut_tflite_logistic if op == "LOGISTIC" else _core.lut_tflite_tanh
    x = ALL_INT8.reshape(1, 1, 16, 16)
    combos = sweep_luts(op)
    assert len(combos) >= 150
    for in_scale, in_zp, out_scale, out_zp in combos:
        want = tflite_reference(op, x.shape, in_scale, in_zp, out_scale, out_zp, x).reshape(-1)
        lut = build(in_scale, in_zp, out_scale, out_zp)
        assert lut.dtype == np.int8 and lut.shape == (256,)
        got = lut[ALL_INT8.view(np.uint8)]  # entry i is the output for input (int8)i
        bad = np.nonzero(got != want)[0]
        assert bad.size == 0, (f"{op} in ({in_scale}, {in_zp}) out ({out_scale}, {out_zp}): "
                               f"{bad.size} entries differ, first input {ALL_INT8[bad[0]]}: "
                               f"{got[bad[0]]} != {want[bad[0]]}")
        # and through the unit, both paths
        for path, out in on_both_paths(
                lambda: _core.activation(x, mode=_core.ActMode.LUT, lut=lut)).items():
            assert_same(out.reshape(-1), want, f"{op} LUT mode [{path}]")


def test_lut_order_is_uint8_index():
    """Entry i holds the output for input (int8)i: 0..127, then -128..-1."""
    lut = _core.lut_tflite_tanh(0.05, 0)
    assert lut[0] == 0  # tanh(0)
    assert lut[1] == 6 and lut[255] == -6  # inputs +1, -1: round(128 * tanh(+-0.05))
    assert lut[127] == 127 and lut[128] == -128  # inputs 127, -128 saturate


# ---------------------------------------------------------------------------
# The full register space: the fast path (a folded 256-byte table) equals the
# reference loop, including 9-bit zero points and the clamp in LUT mode.

def test_fast_path_equals_reference_on_any_registers():
    rng = np.random.default_rng(9)
    x = rng.integers(-128, 128, (3, 7, 41), dtype=np.int8)
    modes = [_core.ActMode.RELU, _core.ActMode.RELU6, _core.ActMode.NONE, _core.ActMode.LUT]
    for trial in range(120):
        lo = int(rng.integers(-128, 128))
        regs = dict(mode=modes[trial % 4], input_zero_point=int(rng.integers(-256, 256)),
                    output_zero_point=int(rng.integers(-256, 256)),
                    multiplier=int(rng.integers(0, 2**31)), shift=int(rng.integers(-31, 32)),
                    act_min=lo, act_max=int(rng.integers(lo, 128)))
        if regs["mode"] == _core.ActMode.LUT:
            regs["lut"] = rng.integers(-128, 128, 256, dtype=np.int8)
        res = on_both_paths(lambda: _core.activation(x, **regs))
        assert_same(res["auto"], res["reference"], f"trial {trial} {regs}")


def test_identity_defaults_and_relu_cut_at_zero_point():
    x = ALL_INT8.copy()
    for path, out in on_both_paths(lambda: _core.activation(x, mode=_core.ActMode.NONE)).items():
        assert_same(out, x, f"identity [{path}]")
    # ReLU cuts at the output zero point (real 0) even with act_min = -128.
    out = _core.activation(x, mode=_core.ActMode.RELU, output_zero_point=-20, input_zero_point=-20)
    assert_same(out, np.maximum(x, -20).astype(np.int8), "relu at zp")
    out = _core.activation(x, mode=_core.ActMode.NONE, act_min=-3, act_max=9)
    assert_same(out, np.clip(x, -3, 9).astype(np.int8), "clamp")
    out = _core.activation(x, mode=_core.ActMode.LUT, lut=x[::-1].copy(), act_min=-10, act_max=10)
    assert_same(out, np.clip(x[::-1][x.view(np.uint8)], -10, 10).astype(np.int8), "lut + clamp")


def test_empty_input():
    empty = np.zeros((0, 4), np.int8)
    assert _core.activation(empty, mode=_core.ActMode.NONE).shape == (0, 4)


# ---------------------------------------------------------------------------
# Boundaries and validation.

GOOD_LUT = np.zeros(256, np.int8)
# (override, error or None, message fragment)
REGISTER_LIMITS = [
    (dict(input_zero_point=255), None, ""),
    (dict(input_zero_point=256), ValueError, "IN_FM_OFFSET"),
    (dict(input_zero_point=-256), None, ""),
    (dict(input_zero_point=-257), ValueError, "IN_FM_OFFSET"),
    (dict(output_zero_point=255), None, ""),
    (dict(output_zero_point=256), ValueError, "OUT_FM_OFFSET"),
    (dict(output_zero_point=-257), ValueError, "OUT_FM_OFFSET"),
    (dict(shift=31), None, ""),
    (dict(shift=32), ValueError, "QUANT_SHIFT[0]"),
    (dict(shift=-31), None, ""),
    (dict(shift=-32), ValueError, "QUANT_SHIFT[0]"),
    (dict(multiplier=2**31 - 1), None, ""),
    (dict(multiplier=-1), ValueError, "QUANT_MUL[0]"),
    (dict(multiplier=2**31), ValueError, "does not fit int32"),
    (dict(act_min=127, act_max=127), None, ""),
    (dict(act_min=1, act_max=0), ValueError, "act_min <= act_max"),
    (dict(act_min=-129), ValueError, "NACC_ACT_MIN"),
    (dict(act_max=128), ValueError, "NACC_ACT_MAX"),
    (dict(mode=_core.ActMode.LUT), ValueError, "needs lut="),
    (dict(mode=_core.ActMode.LUT, lut=np.zeros(255, np.int8)), ValueError, "256 entries"),
    (dict(mode=_core.ActMode.LUT, lut=np.zeros((16, 16), np.int8)), ValueError, "dimensions"),
    (dict(mode=_core.ActMode.LUT, lut=np.zeros(256, np.uint8)), TypeError, "expected dtype int8"),
    (dict(mode=_core.ActMode.RELU, lut=GOOD_LUT), ValueError, "not LUT"),
    (dict(mode=_core.ActMode.TANH), UnsupportedError, "q7"),
    (dict(mode=_core.ActMode.SIGMOID), UnsupportedError, "q7"),
]


@pytest.mark.parametrize("override,error,fragment", REGISTER_LIMITS,
                         ids=[f"{list(r[0])[-1]}-{i}" for i, r in enumerate(REGISTER_LIMITS)])
def test_register_limits(override, error, fragment):
    x = ALL_INT8.reshape(16, 16)
    regs = {"mode": _core.ActMode.NONE, **override}
    if error is None:
        res = on_both_paths(lambda: _core.activation(x, **regs))
        assert_same(res["auto"], res["reference"], str(override))
    else:
        with pytest.raises(error) as info:
            _core.activation(x, **regs)
        assert fragment in str(info.value), str(info.value)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
def test_wrong_input_dtype_is_type_error(dtype):
    with pytest.raises(TypeError, match="expected dtype int8"):
        _core.activation(np.zeros((1, 2, 2, 3), dtype), mode=_core.ActMode.NONE)


DERIVE_ERRORS = [
    (lambda: _core.lut_tflite_logistic(0.1, 0, 1 / 128, -128), "must be 1/256"),
    (lambda: _core.lut_tflite_logistic(0.0, 0), "input scale must be positive"),
    (lambda: _core.lut_tflite_tanh(float("inf"), 0), "input scale must be positive"),
    (lambda: _core.lut_tflite_tanh(0.1, 128), "input zero point 128"),
    (lambda: _core.lut_tflite_tanh(0.1, 0, -1.0, 0), "output scale must be positive"),
    (lambda: _core.lut_tflite_tanh(0.1, 0, 0.1, -129), "output zero point -129"),
    (lambda: _core.tflite_relu_params(0.1, 0, 0.0, 0), "output scale must be positive"),
    (lambda: _core.tflite_relu_params(0.1, -129, 0.1, 0), "input zero point -129"),
    (lambda: _core.tflite_relu_params(0.1, 0, 0.1, 0, "LEAKY"), "unknown kind"),
]


@pytest.mark.parametrize("call,fragment", DERIVE_ERRORS, ids=[d[1] for d in DERIVE_ERRORS])
def test_derivation_errors(call, fragment):
    with pytest.raises(ValueError) as info:
        call()
    assert fragment in str(info.value), str(info.value)


def test_tflite_relu_params_golden():
    """in/out scale 0.1/0.05 = 2 exactly: multiplier 2^30, shift 2. RELU6's top
    is zp + round(6 / 0.05) = -5 + 120 = 115; the bottom is the zero point."""
    d = _core.tflite_relu_params(0.1, 3, 0.05, -5, "RELU6")
    assert d == dict(mode=_core.ActMode.RELU6, input_zero_point=3, output_zero_point=-5,
                     multiplier=1 << 30, shift=2, act_min=-5, act_max=115)
    n1 = _core.tflite_relu_params(0.1, 0, 0.1, 0, "RELU_N1_TO_1")
    assert n1["mode"] == _core.ActMode.NONE and (n1["act_min"], n1["act_max"]) == (-10, 10)

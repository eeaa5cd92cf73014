"""The element-wise unit (nacc._core.add / sub / mul) against TFLite's
BUILTIN_REF int8 ADD, SUB and MUL kernels: exact equality on every element,
through both kernel paths (AVX2 and the plain reference loops).

The cases are a declarative table: hand-picked corners (equal scales, extreme
zero points, very different scales, every broadcast pattern, fused
activations) plus >= 200 seeded random cases per op. Register values come from
nacc._core.tflite_*_params, the C++ replica of TFLite's Prepare arithmetic.
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Tuple

import numpy as np
import pytest

from nacc import _core
from unit_check import PATHS
from tflite_builder import QTensor, build_model, run_tflite

pytestmark = pytest.mark.filterwarnings("ignore:.*tf.lite.Interpreter is deprecated")

OPS = ("ADD", "SUB", "MUL")
ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")
RANDOM_CASES_PER_OP = 200


def f32(x: float) -> float:
    """A scale as a .tflite file stores it (float32)."""
    return float(np.float32(x))


@dataclasses.dataclass(frozen=True)
class Case:
    op: str
    shape1: Tuple[int, ...]
    shape2: Tuple[int, ...]
    scale1: float
    zp1: int
    scale2: float
    zp2: int
    out_scale: float
    out_zp: int
    activation: str = "NONE"
    seed: int = 0
    fill: Optional[str] = None  # None: uniform random; "extremes": only -128 / 127
    name: str = ""

    def __str__(self) -> str:
        label = self.name or f"r{self.seed}"
        return f"{self.op}-{label}-{self.shape1}x{self.shape2}-{self.activation}"

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return tuple(np.broadcast_shapes(self.shape1, self.shape2))

    def inputs(self):
        rng = np.random.default_rng(self.seed + 1000)
        if self.fill == "extremes":
            pick = lambda s: rng.choice(np.array([-128, 127], np.int8), size=s)  # noqa: E731
        else:
            pick = lambda s: rng.integers(-128, 128, size=s, dtype=np.int8)  # noqa: E731
        return pick(self.shape1), pick(self.shape2)


def corner_cases():
    """Hand-picked corners; every one runs for ADD, SUB and MUL."""
    full = (1, 5, 7, 19)
    rows = [
        # name, shape1, shape2, s1, z1, s2, z2, s_out, z_out, activation, fill
        ("equal-scales", full, full, 0.05, 0, 0.05, 0, 0.05, 0, "NONE", None),
        ("equal-all-scales-zp", full, full, 0.1, 3, 0.1, 3, 0.1, 3, "NONE", None),
        ("equal-in-scales-other-out", full, full, 0.02, -7, 0.02, 11, 0.07, -20, "NONE", None),
        ("zp-min", full, full, 0.03, -128, 0.04, -128, 0.05, -128, "NONE", None),
        ("zp-max", full, full, 0.03, 127, 0.04, 127, 0.05, 127, "NONE", None),
        ("zp-mixed", full, full, 0.03, -128, 0.04, 127, 0.06, 127, "NONE", None),
        ("extreme-values", full, full, 0.03, -128, 0.04, 127, 0.02, 0, "NONE", "extremes"),
        ("scales-1000x", full, full, 1e-4, 5, 0.1, -5, 0.1, 0, "NONE", None),
        ("scales-1e6x", full, full, 1e-7, 5, 0.1, -5, 0.1, 0, "NONE", None),
        ("scale-ratio-flushed", full, full, 1e-10, 0, 1.0, 0, 1.0, 0, "NONE", None),
        ("scales-reversed", full, full, 0.5, 1, 2e-4, -1, 0.4, 2, "NONE", None),
        ("tiny-out-scale", full, full, 0.01, 0, 0.02, 0, 1e-4, 0, "NONE", None),
        ("huge-out-scale", full, full, 0.01, 0, 0.02, 0, 50.0, 0, "NONE", None),
        ("relu", full, full, 0.05, 10, 0.07, -9, 0.06, -30, "RELU", None),
        ("relu6", full, full, 0.05, 10, 0.07, -9, 0.03, -100, "RELU6", None),
        ("relu-n1-to-1", full, full, 0.05, 10, 0.07, -9, 0.01, 5, "RELU_N1_TO_1", None),
        ("relu-zp-127", full, full, 0.05, 0, 0.05, 0, 0.05, 127, "RELU", None),
        ("relu6-clips-all", full, full, 0.5, 0, 0.5, 0, 1.0, -128, "RELU6", None),
        # broadcasting, both directions
        ("bcast-channel", (1, 1, 1, 19), full, 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
        ("bcast-channel-rev", full, (1, 1, 1, 19), 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
        ("bcast-scalar", (1, 1, 1, 1), full, 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
        ("bcast-scalar-rev", full, (1, 1, 1, 1), 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
        ("bcast-pixel", (1, 5, 7, 1), full, 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
        ("bcast-pixel-rev", full, (1, 5, 7, 1), 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
        ("bcast-row", (1, 1, 7, 19), full, 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
        ("bcast-col", (1, 5, 1, 19), full, 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
        ("bcast-both", (1, 5, 1, 19), (1, 1, 7, 19), 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
        ("bcast-both-c", (1, 5, 7, 1), (1, 1, 1, 19), 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
        ("bcast-rank1", (19,), full, 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
        ("bcast-rank1-rev", full, (19,), 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
        ("bcast-rank2", (7, 19), full, 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
        ("rank3-same", (5, 7, 19), (5, 7, 19), 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
        # sizes around the 16-lane vector and its tail
        ("one-element", (1, 1, 1, 1), (1, 1, 1, 1), 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
        ("c15", (1, 1, 1, 15), (1, 1, 1, 15), 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
        ("c16", (1, 1, 1, 16), (1, 1, 1, 16), 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
        ("c17", (1, 1, 1, 17), (1, 1, 1, 17), 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
        ("large", (1, 33, 31, 65), (1, 33, 31, 65), 0.05, 1, 0.03, -2, 0.06, 0, "RELU", None),
        ("large-bcast", (1, 33, 31, 65), (1, 1, 1, 65), 0.05, 1, 0.03, -2, 0.06, 0, "NONE", None),
    ]
    cases = []
    for op in OPS:
        for name, sh1, sh2, s1, z1, s2, z2, so, zo, act, fill in rows:
            if op == "MUL":
                # keep MUL's real multiplier s1*s2/so in a sensible band: rescale so.
                so = s1 * s2 / 0.3 if name not in ("tiny-out-scale", "huge-out-scale") else (
                    s1 * s2 / (3e4 if name == "tiny-out-scale" else 1e-7))
            cases.append(Case(op, sh1, sh2, f32(s1), z1, f32(s2), z2, f32(so), zo, act, 0,
                              fill, name))
    return cases


def random_cases(op: str, count: int, seed: int):
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(count):
        full = [1, int(rng.integers(1, 10)), int(rng.integers(1, 10)), int(rng.integers(1, 71))]
        if full[3] % 32 == 0:
            full[3] += 1
        # each operand keeps or drops (1) each dimension independently; the
        # output dimension is whichever side is larger.
        keep1 = rng.random(3) < 0.75
        keep2 = rng.random(3) < 0.75
        sh1 = tuple([1] + [d if k else 1 for d, k in zip(full[1:], keep1)])
        sh2 = tuple([1] + [d if k else 1 for d, k in zip(full[1:], keep2)])
        if rng.random() < 0.1:  # lower rank operand
            sh2 = sh2[-int(rng.integers(1, 4)):]
        zps = []
        for _ in range(3):
            u = rng.random()
            zps.append(-128 if u < 0.12 else 127 if u < 0.24 else int(rng.integers(-128, 128)))
        s1 = 10 ** rng.uniform(-3, 0.5)
        u = rng.random()
        if u < 0.2:
            s2 = s1  # equal scales
        elif u < 0.3:
            s2 = s1 * 10.0 ** (rng.choice([-1.0, 1.0]) * rng.uniform(2, 6))  # very different
        else:
            s2 = 10 ** rng.uniform(-3, 0.5)
        if op == "MUL":
            so = s1 * s2 * 10 ** rng.uniform(-2, 2.5)
        else:
            so = max(s1, s2) * 10 ** rng.uniform(-1, 1)
            if rng.random() < 0.1:
                so = s1  # output scale equal to an input scale
        so = max(so, 1e-8)  # 6 / so must fit int32 or TFLite rejects a fused RELU6
        act = ACTIVATIONS[int(rng.integers(0, 4))] if rng.random() < 0.5 else "NONE"
        cases.append(Case(op, sh1, sh2, f32(s1), zps[0], f32(s2), zps[1], f32(so), zps[2], act,
                          seed * 1000 + i))
    return cases


CASES = corner_cases() + [c for k, op in enumerate(OPS)
                          for c in random_cases(op, RANDOM_CASES_PER_OP, seed=11 + k)]


def tflite_reference(case: Case, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    model = build_model(
        case.op,
        [QTensor(case.shape1, "int8", case.scale1, case.zp1),
         QTensor(case.shape2, "int8", case.scale2, case.zp2)],
        [QTensor(case.out_shape, "int8", case.out_scale, case.out_zp)],
        options=dict(fused_activation_function=case.activation))
    (out,) = run_tflite(model, [a, b])
    return out


def nacc_params(case: Case) -> dict:
    derive = getattr(_core, f"tflite_{case.op.lower()}_params")
    return derive(case.scale1, case.zp1, case.scale2, case.zp2, case.out_scale, case.out_zp,
                  case.activation)


def on_both_paths(fn):
    """{path: fn()} for the reference loops and every ISA path this CPU has."""
    results = {}
    try:
        for path in PATHS:
            _core.set_kernel_path(path)
            results[path] = fn()
    finally:
        _core.set_kernel_path("auto")
    return results


def assert_same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == np.int8, what
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    diff = np.argwhere(got != want)
    assert diff.size == 0, (f"{what}: {len(diff)} of {want.size} elements differ; first at "
                            f"{tuple(diff[0])}: {got[tuple(diff[0])]} != {want[tuple(diff[0])]}")


def test_case_table_size():
    for op in OPS:
        assert sum(c.op == op for c in CASES) >= RANDOM_CASES_PER_OP


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_tflite_reference(case: Case):
    a, b = case.inputs()
    want = tflite_reference(case, a, b)
    fn = getattr(_core, case.op.lower())
    params = nacc_params(case)
    for path, got in on_both_paths(lambda: fn(a, b, **params)).items():
        assert_same(got, want, f"{case} [{path}]")


# ---------------------------------------------------------------------------
# The full register space (values TFLite never derives, e.g. 9-bit offsets and
# arbitrary multipliers): the AVX2 path must equal the reference loops.

def random_registers(op: str, rng) -> dict:
    d = dict(input1_offset=int(rng.integers(-256, 256)),
             input2_offset=int(rng.integers(-256, 256)),
             output_multiplier=int(rng.integers(0, 2**31)),
             output_zero_point=int(rng.integers(-256, 256)))
    lo = int(rng.integers(-128, 128))
    d["act_min"], d["act_max"] = ((lo, int(rng.integers(lo, 128))) if rng.random() < 0.5
                                  else (-128, 127))
    if op == "MUL":
        d["output_shift"] = int(rng.integers(-31, 14))
    else:
        d.update(left_shift=int(rng.integers(0, 22)),
                 input1_multiplier=int(rng.integers(0, 2**31)),
                 input1_shift=int(rng.integers(-31, 1)),
                 input2_multiplier=int(rng.integers(0, 2**31)),
                 input2_shift=int(rng.integers(-31, 1)),
                 output_shift=int(rng.integers(-31, 1)))
    return d


@pytest.mark.parametrize("op", OPS)
def test_fast_path_equals_reference_on_any_registers(op):
    rng = np.random.default_rng(7)
    fn = getattr(_core, op.lower())
    shapes = [((1, 9, 11, 37), (1, 9, 11, 37)), ((1, 9, 11, 37), (1, 1, 1, 37)),
              ((1, 1, 1, 37), (1, 9, 11, 37)), ((1, 9, 11, 1), (1, 9, 11, 37)),
              ((1, 9, 1, 37), (1, 1, 11, 37)), ((1, 3, 2, 1), (1, 1, 1, 1))]
    for trial in range(60):
        sh1, sh2 = shapes[trial % len(shapes)]
        a = rng.integers(-128, 128, sh1, dtype=np.int8)
        b = rng.integers(-128, 128, sh2, dtype=np.int8)
        regs = random_registers(op, rng)
        res = on_both_paths(lambda: fn(a, b, **regs))
        for path in PATHS:
            assert_same(res[path], res["reference"], f"{op} trial {trial} {regs} [{path}]")


@pytest.mark.parametrize("op", ["ADD", "SUB"])
def test_add_sub_int64_epilogue_registers(op):
    """Registers inside the AVX-512 ADD/SUB path's range (input exponents 0..23,
    0 often; output exponent 1..23; zero point in [-128, 128]; small exponents
    make rounding ties common), runs with 16-lane tails and broadcast operands:
    every path equals the reference loops."""
    rng = np.random.default_rng(11)
    fn = getattr(_core, op.lower())
    shapes = [((1, 5, 7, 37), (1, 5, 7, 37)), ((1, 5, 7, 37), (1, 1, 1, 37)),
              ((1, 1, 1, 37), (1, 5, 7, 37)), ((1, 5, 7, 1), (1, 5, 7, 16)),
              ((1, 2, 3, 48), (1, 2, 3, 48))]
    for trial in range(40):
        sh1, sh2 = shapes[trial % len(shapes)]
        a = rng.integers(-128, 128, sh1, dtype=np.int8)
        b = rng.integers(-128, 128, sh2, dtype=np.int8)
        in_shift = [0 if rng.random() < 0.4 else -int(rng.integers(1, 24)) for _ in range(2)]
        left = 0 if rng.random() < 0.3 else int(rng.integers(0, 22))
        # Multipliers 2^30 (and near it) with left shift 0 make the high multiply tie.
        mults = [int(rng.choice([rng.integers(0, 2**31), 1 << 30, (1 << 30) + (1 << 12)]))
                 for _ in range(2)]
        out_shift = -int(rng.integers(1, 4)) if trial % 2 else -int(rng.integers(1, 24))
        regs = dict(input1_offset=int(rng.integers(-256, 256)),
                    input2_offset=int(rng.integers(-256, 256)), left_shift=left,
                    input1_multiplier=mults[0], input1_shift=in_shift[0],
                    input2_multiplier=mults[1], input2_shift=in_shift[1],
                    output_multiplier=int(rng.integers(1 << 30, 2**31)),
                    output_shift=out_shift, output_zero_point=int(rng.integers(-128, 129)))
        # An output scale that keeps most results inside int8: about 2^(left - 1) per unit.
        regs["output_shift"] = max(-23, min(-1, out_shift - max(left - 8, 0)))
        res = on_both_paths(lambda: fn(a, b, **regs))
        for path in PATHS:
            assert_same(res[path], res["reference"], f"{op} trial {trial} {regs} [{path}]")


# ---------------------------------------------------------------------------
# Boundaries and validation: each limit and one past it.

BASE_ADD = dict(input1_offset=0, input2_offset=0, left_shift=20, input1_multiplier=1 << 30,
                input1_shift=0, input2_multiplier=1 << 30, input2_shift=0,
                output_multiplier=1 << 30, output_shift=-19, output_zero_point=0)
BASE_MUL = dict(input1_offset=0, input2_offset=0, output_multiplier=1 << 30, output_shift=-6,
                output_zero_point=0)

# (op, override, error or None, message fragment)
REGISTER_LIMITS = [
    ("ADD", dict(input1_offset=255), None, ""),
    ("ADD", dict(input1_offset=256), ValueError, "IN_ELEMENT_OFFSET1"),
    ("ADD", dict(input2_offset=-256), None, ""),
    ("ADD", dict(input2_offset=-257), ValueError, "IN_ELEMENT_OFFSET2"),
    ("MUL", dict(input1_offset=-257), ValueError, "[-256, 255]"),
    ("ADD", dict(output_zero_point=255), None, ""),
    ("ADD", dict(output_zero_point=256), ValueError, "OUT_FM_OFFSET"),
    ("SUB", dict(output_zero_point=-257), ValueError, "OUT_FM_OFFSET"),
    ("ADD", dict(left_shift=21), None, ""),
    ("ADD", dict(left_shift=22), ValueError, "LEFT_SHIFT"),
    ("SUB", dict(left_shift=0), None, ""),
    ("SUB", dict(left_shift=-1), ValueError, "LEFT_SHIFT"),
    ("ADD", dict(input1_shift=-31), None, ""),
    ("ADD", dict(input1_shift=-32), ValueError, "NACC_ELEMENT_QUANT1_SHIFT"),
    ("ADD", dict(input2_shift=1), ValueError, "NACC_ELEMENT_QUANT2_SHIFT"),
    ("ADD", dict(input1_multiplier=2**31 - 1), None, ""),
    ("ADD", dict(input1_multiplier=-1), ValueError, "NACC_ELEMENT_QUANT1_MULT"),
    ("ADD", dict(input2_multiplier=2**31), ValueError, "input2_multiplier"),
    ("ADD", dict(output_shift=0), None, ""),
    ("ADD", dict(output_shift=1), ValueError, "QUANT_SHIFT[0]"),
    ("SUB", dict(output_shift=-32), ValueError, "QUANT_SHIFT[0]"),
    ("ADD", dict(output_multiplier=-5), ValueError, "QUANT_MUL[0]"),
    ("MUL", dict(output_shift=31), None, ""),
    ("MUL", dict(output_shift=32), ValueError, "QUANT_SHIFT[0]"),
    ("MUL", dict(output_shift=-31), None, ""),
    ("MUL", dict(output_shift=-32), ValueError, "QUANT_SHIFT[0]"),
    ("ADD", dict(act_min=-128, act_max=-128), None, ""),
    ("ADD", dict(act_min=5, act_max=4), ValueError, "act_min <= act_max"),
    ("ADD", dict(act_min=-129), ValueError, "NACC_ACT_MIN"),
    ("MUL", dict(act_max=128), ValueError, "NACC_ACT_MAX"),
]


@pytest.mark.parametrize("op,override,error,fragment", REGISTER_LIMITS,
                         ids=[f"{r[0]}-{list(r[1].items())[0]}" for r in REGISTER_LIMITS])
def test_register_limits(op, override, error, fragment):
    a = np.arange(-128, 127, 3, dtype=np.int8).reshape(1, 1, 1, -1)
    regs = {**(BASE_MUL if op == "MUL" else BASE_ADD), **override}
    fn = getattr(_core, op.lower())
    if error is None:
        res = on_both_paths(lambda: fn(a, a[:, :, :, ::-1].copy(), **regs))
        for path in PATHS:
            assert_same(res[path], res["reference"], f"{op} {override} [{path}]")
    else:
        with pytest.raises(error, match=None) as info:
            fn(a, a, **regs)
        assert fragment in str(info.value), str(info.value)


SHAPE_ERRORS = [
    ((1, 4, 4, 3), (1, 4, 4, 2), "do not broadcast: dimension C is 3 vs 2"),
    ((1, 4, 5, 3), (1, 4, 4, 3), "dimension W is 5 vs 4"),
    ((2, 4, 4, 3), (2, 4, 4, 3), "batch 2"),
    ((2, 1, 1, 3), (1, 4, 4, 3), "batch 2"),
    ((1, 1, 4, 4, 3), (1, 4, 4, 3), "at most 4"),
    ((1, 0, 4, 3), (1, 0, 4, 3), "out of range [1, 65535]"),
]


@pytest.mark.parametrize("shape1,shape2,fragment", SHAPE_ERRORS)
def test_incompatible_shapes(shape1, shape2, fragment):
    a = np.zeros(shape1, np.int8)
    b = np.zeros(shape2, np.int8)
    with pytest.raises(ValueError) as info:
        _core.add(a, b, **BASE_ADD)
    assert fragment in str(info.value), str(info.value)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.float32])
@pytest.mark.parametrize("which", [0, 1])
def test_wrong_dtype_is_type_error(dtype, which):
    good = np.zeros((1, 2, 2, 3), np.int8)
    bad = np.zeros((1, 2, 2, 3), dtype)
    args = (bad, good) if which == 0 else (good, bad)
    with pytest.raises(TypeError, match="expected dtype int8"):
        _core.mul(*args, **BASE_MUL)


def test_missing_register_is_type_error():
    a = np.zeros((1, 1, 1, 4), np.int8)
    with pytest.raises(TypeError):
        _core.add(a, a, input1_offset=0)


def test_non_contiguous_and_scalar_operands():
    rng = np.random.default_rng(3)
    big = rng.integers(-128, 128, (1, 6, 10, 8), dtype=np.int8)
    view = big[:, :, ::2, :]  # non-contiguous
    params = _core.tflite_add_params(0.1, 2, 0.2, -3, 0.15, 1)
    got = _core.add(view, np.array(5, np.int8), **params)
    want = _core.add(np.ascontiguousarray(view), np.full((1, 1, 1, 1), 5, np.int8), **params)
    assert got.shape == view.shape
    assert_same(got, want, "non-contiguous")


# TFLite parameter derivation: invalid quantization is rejected with a reason.
DERIVE_ERRORS = [
    ("add", (0.0, 0, 0.1, 0, 0.1, 0), "input1 scale must be positive"),
    ("sub", (0.1, 0, -0.1, 0, 0.1, 0), "input2 scale must be positive"),
    ("mul", (0.1, 0, 0.1, 0, float("nan"), 0), "output scale must be positive"),
    ("add", (0.1, 128, 0.1, 0, 0.1, 0), "input1 zero point 128"),
    ("mul", (0.1, 0, 0.1, -129, 0.1, 0), "input2 zero point -129"),
    ("sub", (0.1, 0, 0.1, 0, 0.1, 200), "output zero point 200"),
    ("add", (1.0, 0, 1.0, 0, 1e-7, 0), "too small"),
    ("sub", (1.0, 0, 1.0, 0, 1e-7, 0), "too small"),
    # TFLite fails Prepare when a fused bound / output scale overflows int32
    ("mul", (1e-5, 0, 1e-5, 0, 1e-10, 0, "RELU6"), "does not fit int32"),
]


@pytest.mark.parametrize("op,args,fragment", DERIVE_ERRORS)
def test_tflite_param_errors(op, args, fragment):
    with pytest.raises(ValueError) as info:
        getattr(_core, f"tflite_{op}_params")(*args)
    assert fragment in str(info.value), str(info.value)


def test_unknown_fused_activation():
    with pytest.raises(ValueError, match="RELU_N1_TO_1"):
        _core.tflite_add_params(0.1, 0, 0.1, 0, 0.1, 0, "TANH")


def test_tflite_add_params_golden():
    """Equal input scales: each input's real multiplier is exactly 1/2 (2^30,
    shift 0); the output's is 2s / (2^20 s) = 2^-19 (2^30, shift -18)."""
    d = _core.tflite_add_params(0.25, -3, 0.25, 4, 0.25, 1, "RELU")
    assert d == dict(input1_offset=3, input2_offset=-4, left_shift=20,
                     input1_multiplier=1 << 30, input1_shift=0,
                     input2_multiplier=1 << 30, input2_shift=0,
                     output_multiplier=1 << 30, output_shift=-18, output_zero_point=1,
                     act_min=1, act_max=127)
    m = _core.tflite_mul_params(0.5, 0, 0.5, 0, 0.25, 0, "NONE")
    assert m == dict(input1_offset=0, input2_offset=0, output_multiplier=1 << 30,
                     output_shift=1, output_zero_point=0, act_min=-128, act_max=127)

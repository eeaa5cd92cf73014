"""HARD_SWISH, LEAKY_RELU and int8 -> int8 QUANTIZE through the activation
unit's 256-entry LUT, bit-exact against TFLite 2.21's reference kernels
(BUILTIN_REF), and the frontend's own table (ir::Attributes::lut).

- Tables: for many quantization settings per op (seeded random ones plus
  boundary ones: tiny and huge scales, zero points at -128 / 127, alpha 0,
  negative alpha, alpha > 1, HARD_SWISH's ratio just below TFLite's limit and
  its output shifts >= 16, shifts at 31), every one of the 256 int8 inputs goes
  through TFLite and is compared with the table entry; the capability rules
  accept every one of these settings (so nothing they accept is unchecked).
  All settings of one op run as one TFLite model of parallel single ops (one
  interpreter instead of hundreds).
- Declines: what TFLite's Prepare rejects (HARD_SWISH input / output scale >=
  128) and what its arithmetic cannot evaluate (shifts above 31) are declined
  by the rules with the reason; the TFLite rejection is confirmed.
- Compiler + runtime: one Program per op over several settings and core counts.
- Delegate: conv -> HARD_SWISH -> LEAKY_RELU -> QUANTIZE claimed as one
  partition and exact.
- Frontend tables: a given 256-entry table is what the Program computes, for
  any output quantization (LOGISTIC included).
"""
from __future__ import annotations

import dataclasses
from typing import List, Optional

import numpy as np
import pytest

import nacc
from nacc import _core
from tflite_builder import GraphBuilder, QTensor, make_interpreter

pytestmark = pytest.mark.filterwarnings("ignore:.*tf.lite.Interpreter is deprecated")

ALL_INT8 = np.arange(-128, 128, dtype=np.int8)
RANDOM_SETTINGS_PER_OP = 500


def f32(x: float) -> float:
    return float(np.float32(x))


@dataclasses.dataclass(frozen=True)
class Setting:
    op: str  # HARD_SWISH, LEAKY_RELU, QUANTIZE
    in_scale: float
    in_zp: int
    out_scale: float
    out_zp: int
    alpha: float = 0.0  # LEAKY_RELU only
    note: str = ""

    def __str__(self) -> str:
        a = f" alpha {self.alpha!r}" if self.op == "LEAKY_RELU" else ""
        return (f"{self.op} in ({self.in_scale!r}, {self.in_zp}) out ({self.out_scale!r}, "
                f"{self.out_zp}){a} {self.note}")

    def lut(self) -> np.ndarray:
        args = (self.in_scale, self.in_zp, self.out_scale, self.out_zp)
        if self.op == "HARD_SWISH":
            return _core.lut_tflite_hard_swish(*args)
        if self.op == "LEAKY_RELU":
            return _core.lut_tflite_leaky_relu(*args, self.alpha)
        return _core.lut_tflite_requantize(*args)

    def options(self) -> Optional[dict]:
        return dict(alpha=self.alpha) if self.op == "LEAKY_RELU" else None

    def ir_attrs(self) -> dict:
        return dict(alpha=self.alpha) if self.op == "LEAKY_RELU" else {}


def random_zp(rng) -> int:
    u = rng.random()
    return -128 if u < 0.12 else 127 if u < 0.24 else int(rng.integers(-128, 128))


def random_settings(op: str, count: int, seed: int) -> List[Setting]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        in_scale = 10 ** rng.uniform(-4, 1)
        if op == "HARD_SWISH":
            # ratio in / out below TFLite's limit of 128 (the rules decline >= 128)
            out_scale = in_scale * 10 ** rng.uniform(-1.9, 2.0)
        elif op == "QUANTIZE":
            out_scale = in_scale * 10 ** rng.uniform(-2.5, 2.5)
        else:
            out_scale = in_scale * 10 ** rng.uniform(-1.5, 1.5)
        alpha = 0.0
        if op == "LEAKY_RELU":
            u = rng.random()
            alpha = (rng.uniform(0, 1) if u < 0.6 else rng.uniform(1, 8) if u < 0.8
                     else -rng.uniform(0, 4))
        out.append(Setting(op, f32(in_scale), random_zp(rng), f32(out_scale), random_zp(rng),
                           f32(alpha), "random"))
    return out


def boundary_settings(op: str) -> List[Setting]:
    S = lambda *a, **k: Setting(op, *a, **k)  # noqa: E731
    zps = [(-128, -128), (127, 127), (-128, 127), (127, -128), (0, 0)]
    out = []
    for iz, oz in zps:  # zero points at the int8 limits
        out.append(S(f32(0.05), iz, f32(0.05), oz, f32(0.1), "zp limits"))
        out.append(S(f32(0.0123), iz, f32(0.2), oz, f32(-0.5), "zp limits"))
    if op == "HARD_SWISH":
        out += [
            S(1.0, 0, f32(1 / 127.99), 0, note="ratio just below 128"),
            S(1.0, -128, f32(1 / 127.99), 127, note="ratio just below 128"),
            S(f32(0.5), 3, f32(0.5 / 127.5), -7, note="ratio 127.5"),
            S(f32(1e-4), 0, 1.0, 0, note="output shift >= 16"),
            S(f32(1e-5), -128, f32(0.3), -128, note="output shift >= 16"),
            S(f32(0.001), 127, f32(0.9), 5, note="output shift 16"),
            S(f32(1e-8), 0, f32(1e-8), 0, note="tiny scales"),
            S(f32(1e-12), 0, f32(1e-10), 3, note="reluish multiplier flushed to 0"),
            S(f32(2e7), 0, f32(2e7 / 100), 0, note="reluish shift 31"),
            S(f32(1000.0), -20, f32(900.0), 10, note="huge scales"),
            S(f32(3 / 128), 0, f32(3 / 128), 0, note="3.0 is exactly 128"),
        ]
    elif op == "LEAKY_RELU":
        for alpha in (0.0, -0.0, 1.0, -1.0, 1e-30, -1e-30, 0.999, 1.001, 2.0, 10.0, 100.0, -5.0,
                      -0.01, 0.2):
            out.append(S(f32(0.05), -3, f32(0.07), 4, f32(alpha), note="alpha"))
        out += [
            S(f32(1e-6), 0, f32(1e-6), 0, f32(0.1), "tiny scales"),
            S(f32(1e-9), 5, f32(1.0), -5, f32(0.1), "multipliers flushed to 0"),
            S(1.0, 0, f32(2.0 ** -30), 0, f32(0.5), "identity shift 31"),
            S(1.0, 1, f32(2.0 ** -24), -1, f32(1.0), "x * 2^25 overflows int32 (wraps)"),
            S(1.0, 0, 1.0, 0, f32(-1e9), "alpha multiplier shift 30"),
            S(f32(1e4), 100, f32(1e-3), -100, f32(0.01), "huge ratio"),
        ]
    else:
        out += [
            S(f32(0.05), 10, f32(0.05), -20, note="same scale"),
            S(1.0, 0, f32(2.0 ** -30), 0, note="shift 31"),
            S(1.0, 0, f32(2.0 ** -31 * 1.0000001), 3, note="ratio just below 2^31"),
            S(1.0, 0, f32(2.0 ** -20), 0, note="x * 2^21 (saturating)"),
            S(f32(2.0 ** -40), 0, 1.0, 7, note="ratio 2^-40: flushed to 0"),
            S(f32(2.0 ** -31), 0, 1.0, 7, note="ratio 2^-31"),
            S(f32(1e-7), -128, f32(1e3), 127, note="tiny ratio"),
        ]
    return out


SETTINGS = {op: random_settings(op, RANDOM_SETTINGS_PER_OP, seed) + boundary_settings(op)
            for op, seed in (("HARD_SWISH", 41), ("LEAKY_RELU", 42), ("QUANTIZE", 43))}


def tflite_outputs(settings: List[Setting], x: np.ndarray) -> List[np.ndarray]:
    """TFLite BUILTIN_REF on `x` for every setting: one model with one op per
    setting, each on its own input."""
    g = GraphBuilder()
    ins, outs = [], []
    for s in settings:
        i = g.add_tensor(QTensor(x.shape, "int8", s.in_scale, s.in_zp))
        o = g.add_tensor(QTensor(x.shape, "int8", s.out_scale, s.out_zp))
        g.add_op(s.op, [i], [o], s.options())
        ins.append(i)
        outs.append(o)
    interp = make_interpreter(g.build(ins, outs))
    interp.allocate_tensors()
    for d in interp.get_input_details():
        interp.set_tensor(d["index"], x)
    interp.invoke()
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]


def ir_graph(s: Setting, shape, lut=None):
    g = _core.Graph()
    x = g.add_tensor("x", list(shape), "int8", scales=s.in_scale, zero_points=s.in_zp)
    y = g.add_tensor("y", list(shape), "int8", scales=s.out_scale, zero_points=s.out_zp)
    attrs = s.ir_attrs()
    if lut is not None:
        attrs["lut"] = lut
    op = g.add_op(s.op, [x], [y], name=s.op.lower(), **attrs)
    g.inputs, g.outputs = [x], [y]
    return g, op


def first_difference(got, want):
    bad = np.nonzero(got.reshape(-1) != want.reshape(-1))[0]
    if bad.size == 0:
        return None
    i = bad[0]
    return (f"{bad.size} of {want.size} differ, first input {ALL_INT8[i % 256]}: "
            f"{got.reshape(-1)[i]} != {want.reshape(-1)[i]}")


@pytest.mark.parametrize("op", list(SETTINGS))
def test_tables_equal_tflite_for_all_inputs(op):
    """Every setting, all 256 inputs: table entry == TFLite BUILTIN_REF; the
    rules accept each setting."""
    settings = SETTINGS[op]
    assert len(settings) >= RANDOM_SETTINGS_PER_OP + 15
    wants = tflite_outputs(settings, ALL_INT8)
    compared = 0
    for s, want in zip(settings, wants):
        lut = s.lut()
        assert lut.dtype == np.int8 and lut.shape == (256,)
        got = lut[ALL_INT8.view(np.uint8)]  # entry i is the output for input (int8)i
        assert first_difference(got, want) is None, f"{s}: {first_difference(got, want)}"
        compared += got.size
        g, i = ir_graph(s, (1, 1, 1, 256))
        assert _core.check_op(g, i) == [], [v.message for v in _core.check_op(g, i)]
    print(f"{op}: {len(settings)} quantization settings, {compared} elements compared")


@pytest.mark.parametrize("op", list(SETTINGS))
def test_tables_through_the_unit_both_paths(op):
    """The unit's LUT mode runs the tables (reference loop and fast path)."""
    x = ALL_INT8.reshape(16, 16)
    settings = SETTINGS[op][:: max(1, len(SETTINGS[op]) // 20)]
    for s in settings:
        lut = s.lut()
        want = lut[x.view(np.uint8)]
        try:
            for path in ("reference", "auto"):
                _core.set_kernel_path(path)
                got = _core.activation(x, mode=_core.ActMode.LUT, lut=lut)
                np.testing.assert_array_equal(got, want, err_msg=f"{s} [{path}]")
        finally:
            _core.set_kernel_path("auto")


# ---------------------------------------------------------------------------
# What is declined, and why.

# (setting, does TFLite's Prepare reject it, fragment of the rule's detail)
DECLINED = [
    (Setting("HARD_SWISH", 1.0, 0, f32(1 / 128), 0), True, "is not below 1"),
    (Setting("HARD_SWISH", f32(0.5), 0, f32(0.001), 0), True, "is not below 1"),
    (Setting("HARD_SWISH", f32(3e7), 0, f32(3e7), 0), False, "reluish multiplier"),
    (Setting("LEAKY_RELU", 1.0, 0, f32(2.0 ** -31), 0, 0.5), False, "identity multiplier"),
    (Setting("LEAKY_RELU", 1.0, 0, 1.0, 0, f32(-3e9)), False, "alpha multiplier"),
    (Setting("QUANTIZE", 1.0, 0, f32(2.0 ** -31), 0), False, "left shift of 32"),
    (Setting("QUANTIZE", f32(1e20), 0, f32(1e-20), 0), False, "left shift of"),
]


@pytest.mark.parametrize("setting,tflite_rejects,fragment", DECLINED,
                         ids=[f"{d[0].op}-{i}" for i, d in enumerate(DECLINED)])
def test_declined_settings_have_a_reason(setting, tflite_rejects, fragment):
    g, i = ir_graph(setting, (1, 4, 4, 8))
    (v,) = _core.check_op(g, i)
    assert v.rule == "lut_arithmetic" and fragment in v.detail, v.message
    with pytest.raises(ValueError, match=fragment.split()[0]):
        setting.lut()
    with pytest.raises(nacc.UnsupportedError, match=setting.op):
        _core.compile(g)
    if tflite_rejects:
        with pytest.raises(RuntimeError):
            tflite_outputs([setting], ALL_INT8)
    # and a frontend table makes the same quantization runnable
    g, i = ir_graph(setting, (1, 4, 4, 8), lut=np.zeros(256, np.int8))
    assert _core.check_op(g, i) == []


def test_float_quantize_stays_declined():
    g = _core.Graph()
    x = g.add_tensor("x", [1, 4, 4, 8], "float32")
    y = g.add_tensor("y", [1, 4, 4, 8], "int8", scales=0.1, zero_points=0)
    i = g.add_op("QUANTIZE", [x], [y], name="q")
    assert [v.rule for v in _core.check_op(g, i)] == ["activation_dtype"]


# ---------------------------------------------------------------------------
# Through the compiler and the simulated device.

_RUNTIMES: dict = {}


def run_program(g, x, cores=1, kb=64):
    key = (cores, kb)
    if key not in _RUNTIMES:
        _RUNTIMES[key] = _core.Runtime(cores=cores, sram_kb=kb)
    prog = _core.compile(g, cores=cores, sram_kb=kb)
    (out,), _ = _RUNTIMES[key].run(prog, [x])
    return np.asarray(out).reshape(x.shape)


@pytest.mark.parametrize("op", list(SETTINGS))
def test_programs_equal_tflite(op):
    """Compiled Programs on the device == TFLite, at 1, 4 and 32 cores and a
    small SRAM, on a map holding every int8 value."""
    rng = np.random.default_rng(7)
    x = np.concatenate([ALL_INT8, rng.integers(-128, 128, 24 * 20 * 37 - 256)]).astype(np.int8)
    x = rng.permutation(x).reshape(1, 24, 20, 37)
    settings = [s for s in SETTINGS[op] if s.note != "random"][::3] + SETTINGS[op][:4]
    wants = tflite_outputs(settings, x)
    for s, want in zip(settings, wants):
        g, _ = ir_graph(s, x.shape)
        for cores, kb in ((1, 64), (4, 4), (32, 64)):
            got = run_program(g, x, cores, kb)
            assert first_difference(got, want) is None, f"{s} {cores} cores {kb} KB: " \
                                                         f"{first_difference(got, want)}"


def test_frontend_table_is_what_runs():
    """A given table (e.g. the ONNX Runtime EP's ONNX semantics) replaces
    TFLite's for every LUT kind, with any output quantization; LOGISTIC's
    TFLite output rule (1/256, -128) then does not apply."""
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (1, 9, 11, 21)).astype(np.int8)
    for op in ("LOGISTIC", "TANH", "RELU", "HARD_SWISH", "LEAKY_RELU", "QUANTIZE"):
        lut = rng.integers(-128, 128, 256).astype(np.int8)
        s = Setting(op, f32(0.03), 4, f32(0.011), -9, f32(0.3))
        g, i = ir_graph(s, x.shape, lut=lut)
        assert _core.check_op(g, i) == [], [v.message for v in _core.check_op(g, i)]
        assert g.op(i).attrs["lut"] == list(lut)
        for cores in (1, 8):
            np.testing.assert_array_equal(run_program(g, x, cores), lut[x.view(np.uint8)],
                                          err_msg=op)
    # without the table, LOGISTIC's output quantization is TFLite's to decide
    g, i = ir_graph(Setting("LOGISTIC", f32(0.03), 4, f32(0.011), -9), x.shape)
    assert [v.rule for v in _core.check_op(g, i)] == ["sigmoid_tanh_output_quantization"]


def test_frontend_table_of_the_wrong_size_is_declined():
    g, i = ir_graph(Setting("LOGISTIC", 0.1, 0, 1 / 256, -128), (1, 4, 4, 8),
                    lut=np.zeros(255, np.int8))
    assert [(v.rule, v.detail) for v in _core.check_op(g, i)] == [
        ("frontend_lut", "the frontend's lookup table has 255 entries")]


# ---------------------------------------------------------------------------
# End to end through the TFLite delegate.

def test_delegate_chain_claimed_and_exact():
    """conv -> HARD_SWISH -> LEAKY_RELU -> QUANTIZE: all four claimed (one
    partition) and bit-exact to BUILTIN_REF."""
    from delegate_models import ModelBuilder

    m = ModelBuilder(seed=11)
    x = m.input((1, 12, 12, 8), scale=0.04, zp=-5)
    c = m.conv(x, 16, activation="NONE")
    h = m.unary("HARD_SWISH", c, QTensor((1, 12, 12, 16), "int8", scale=0.03, zero_point=-100))
    lr = m.unary("LEAKY_RELU", h, QTensor((1, 12, 12, 16), "int8", scale=0.02, zero_point=-20),
                 options=dict(alpha=0.15))
    q = m.unary("QUANTIZE", lr, QTensor((1, 12, 12, 16), "int8", scale=0.05, zero_point=3))
    model = m.build([q])
    d = nacc.load_delegate(log_level="off")
    interp = make_interpreter(model, delegates=[d])
    interp.allocate_tensors()
    ref = make_interpreter(model)
    ref.allocate_tensors()
    rng = np.random.default_rng(2)
    for run in range(2):
        xv = rng.integers(-128, 128, (1, 12, 12, 8)).astype(np.int8)
        for it in (interp, ref):
            it.set_tensor(it.get_input_details()[0]["index"], xv)
            it.invoke()
        got = interp.get_tensor(interp.get_output_details()[0]["index"])
        want = ref.get_tensor(ref.get_output_details()[0]["index"])
        np.testing.assert_array_equal(got, want)
    report = d.report()
    ops = [(n.op, n.claimed) for n in report.nodes]
    assert ops == [("CONV_2D", True), ("HARD_SWISH", True), ("LEAKY_RELU", True),
                   ("QUANTIZE", True)], [(n.op, n.reasons) for n in report.nodes]
    (p,) = report.partitions
    assert p.invocations == 2


BUILDER_ERRORS = [
    (lambda: _core.lut_tflite_hard_swish(0.1, 128, 0.1, 0), "input zero point 128"),
    (lambda: _core.lut_tflite_hard_swish(0.1, 0, 0.0, 0), "output scale must be positive"),
    (lambda: _core.lut_tflite_leaky_relu(0.1, 0, 0.1, 0, float("nan")), "alpha nan must be finite"),
    (lambda: _core.lut_tflite_leaky_relu(0.1, 0, 0.1, -129, 0.2), "output zero point -129"),
    (lambda: _core.lut_tflite_requantize(float("inf"), 0, 0.1, 0), "input scale must be positive"),
]


@pytest.mark.parametrize("call,fragment", BUILDER_ERRORS, ids=[e[1] for e in BUILDER_ERRORS])
def test_builder_argument_errors(call, fragment):
    with pytest.raises(ValueError, match=fragment):
        call()


def test_lut_order_and_known_values():
    """Entry i is the output for input (int8)i; spot values by hand."""
    # QUANTIZE 0.1 -> 0.2, zero points 0 -> 10: q / 2 + 10, the multiplier 0.5 is
    # 2^30 with shift 0, so gemmlowp's SaturatingRoundingDoublingHighMul alone
    # rounds, and its nudge (1 - 2^30 for negative products) sends ties up:
    # 1.5 -> 2, -0.5 -> 0, -1.5 -> -1 (not half away from zero).
    lut = _core.lut_tflite_requantize(0.1, 0, 0.2, 10)
    assert lut[3] == 12 and lut[255] == 10 and lut[253] == 9 and lut[128] == -54
    # LEAKY_RELU alpha 0: every negative input maps to the output zero point
    lut = _core.lut_tflite_leaky_relu(0.05, 0, 0.05, -7, 0.0)
    assert (lut[128:] == -7).all() and lut[5] == -2
    # HARD_SWISH is 0 at 0 and at inputs <= -3
    lut = _core.lut_tflite_hard_swish(0.1, 0, 0.05, 0)
    assert lut[0] == 0 and lut[256 - 30] == 0 and lut[256 - 40] == 0

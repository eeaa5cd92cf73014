"""TFLite 16x8 models (int16 activations with zero point 0, int8 weights, int64
or int32 bias; NACC_SPEC §9, issue 16) through the delegate: the compiler
lowers them to the 16-bit form of the device (NACC_CTRL.DATA_FORM 01: 2-byte
feature-map elements, half the tile capacity, the 16x8 output stage) and the
outputs are bit-exact against TFLite's reference kernels (BUILTIN_REF) at 1, 8
and 32 cores and 16 and 32 KB of SRAM. Models come from the tests' flatbuffer
builder (int16_models)."""
from __future__ import annotations

import numpy as np
import pytest

from nacc import _core
from delegate_models import ModelBuilder
from int16_models import (BIAS40, act16, compare, conv16, delegated, input16, mul16,
                          random_input_sets)

CORES = (1, 8, 32)
SRAM_KB = (16, 32)


def random_conv_case(seed, depthwise):
    rng = np.random.default_rng(7000 + seed + (500 if depthwise else 0))
    m = ModelBuilder(seed)
    cores = CORES[seed % 3]
    kb = SRAM_KB[(seed // 3) % 2]
    h, w = int(rng.integers(2, 14)), int(rng.integers(2, 14))
    k = min(int(rng.choice([1, 2, 3, 5])), h, w)
    stride = int(rng.integers(1, 4))
    padding = str(rng.choice(["SAME", "VALID"]))
    activation = str(rng.choice(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]))
    scale = float(rng.choice([1.0 / 32768, 1.0 / 4096, 3e-4, 0.01]))
    gain = float(2.0 ** rng.uniform(-3, 3))
    opts = dict(k=k, stride=stride, padding=padding, activation=activation, gain=gain,
                bias_scale=float(rng.choice([0.0, 1.0, 1000.0])), bias_extreme=seed % 11 == 5,
                per_channel=seed % 5 != 2)
    if depthwise:
        cin = int(rng.choice([1, 3, 8, 17, 33, 64, 70]))
        mult = int(rng.choice([1, 1, 2, 4, 8])) if cin <= 17 else 1
        x = input16(m, (1, h, w, cin), scale)
        o = conv16(m, x, 0, depthwise=True, multiplier=mult, **opts)
    else:
        cin = int(rng.choice([1, 3, 5, 16, 33, 70, 130]))
        cout = int(rng.choice([1, 3, 8, 17, 32, 40]))
        x = input16(m, (1, h, w, cin), scale)
        o = conv16(m, x, cout, **opts)
    return m.build([o]), cores, kb


def check_claimed_and_exact(model, cores, kb, seed):
    d, interp = delegated(model, cores=cores, sram_kb=kb)
    rep = d.report()
    assert all(n.claimed and not n.reasons for n in rep.nodes), [(n.op, n.reasons) for n in rep.nodes]
    bad = compare(model, interp, random_input_sets(interp, seed))
    assert not bad, bad
    return rep


@pytest.mark.parametrize("seed", range(120))
def test_conv2d_16x8_exact(seed):
    check_claimed_and_exact(*random_conv_case(seed, False), seed)


@pytest.mark.parametrize("seed", range(120))
def test_depthwise_16x8_exact(seed):
    check_claimed_and_exact(*random_conv_case(seed, True), seed)


@pytest.mark.parametrize("depthwise", [False, True])
@pytest.mark.parametrize("cores", CORES)
def test_16x8_conv_boundaries(depthwise, cores):
    """The reduced multiplier's clamp (effective scale mantissa >= 0x7FFF0000 /
    2^31: m16 = 0x7FFF), accumulators far beyond 32 bits (130 input channels x
    9 taps of +-32767 x +-127 reach 2^32.3), bias entries at the 40-bit limit."""
    m = ModelBuilder(11)
    x = input16(m, (1, 9, 7, 130 if not depthwise else 64), 1.0 / 32768)
    a = conv16(m, x, 24, depthwise=depthwise, eff=0.99999 * 2.0 ** -14, per_channel=False,
               bias_extreme=True)
    b = conv16(m, a, 16, k=5, stride=2, depthwise=depthwise, eff=0.999995 * 2.0 ** -13,
               per_channel=False, bias_scale=3e5, activation="RELU")
    model = m.build([b])
    for kb in SRAM_KB:
        check_claimed_and_exact(model, cores, kb, seed=cores + kb)


def graph_of(model):
    d, _ = delegated(model)
    return d


def test_declines_name_the_16x8_limit():
    """What the 16-bit form does not take is declined with its reason."""
    from int16_models import act16
    from tflite_builder import QTensor

    # int16 with a zero point != 0 (TFLite's Prepare rejects it too), an int32
    # bias, int4 weights: the IR rules say why.
    def ir_conv(x_zp=0, bias_dtype="int64", weights_dtype="int8", y_dtype="int16"):
        g = _core.Graph()
        x = g.add_tensor("x", [1, 6, 6, 4], "int16", scales=0.001, zero_points=x_zp)
        w = g.add_tensor("w", [4, 3, 3, 4], weights_dtype, scales=[0.01] * 4,
                         zero_points=[0] * 4, axis=0, data=np.ones((4, 3, 3, 4), np.int8))
        bd = np.zeros(4, np.int64 if bias_dtype == "int64" else np.int32)
        b = g.add_tensor("b", [4], bias_dtype, scales=[1e-5] * 4, zero_points=[0] * 4, data=bd)
        y = g.add_tensor("y", [1, 6, 6, 4], y_dtype, scales=0.01, zero_points=0)
        g.add_op("CONV_2D", [x, w, b], [y], padding="SAME")
        return [(v.rule, v.detail) for v in _core.check_op(g, 0)]

    assert ir_conv() == []
    assert ir_conv(x_zp=5) == [("int16_quantization", "input 'x' has zero point 5")]
    (rule, detail), = ir_conv(bias_dtype="int32")
    assert rule == "bias_dtype" and "accumulates in 32 bits" in detail
    (rule, detail), = ir_conv(weights_dtype="int4")
    assert rule == "weights_dtype" and "int4 with int16 activations" in detail
    (rule, detail), = [v for v in ir_conv(y_dtype="int8") if v[0] == "activation_dtype"]
    assert "input 'x' is int16" in detail
    # A bias beyond 40 bits.
    m = ModelBuilder(0)
    x = input16(m, (1, 6, 6, 3))
    o = conv16(m, x, 4)
    t = m.meta[o]
    big = ModelBuilder(0)
    x = input16(big, (1, 6, 6, 3))
    w = QTensor((4, 3, 3, 3), "int8", scale=[0.01] * 4, zero_point=[0] * 4,
                data=np.ones((4, 3, 3, 3), np.int8))
    b = QTensor((4,), "int64", scale=[t.scale * 0.01] * 4, zero_point=[0] * 4,
                data=np.array([0, BIAS40 + 1, 0, 0], np.int64))
    y = big.tensor(act16((1, 6, 6, 4), 0.01))
    big.g.add_op("CONV_2D", [x, big.tensor(w), big.tensor(b)], [y], dict(padding="SAME"), version=4)
    d, _ = delegated(big.build([y]))
    (node,) = d.report().nodes
    assert [r.rule for r in node.reasons] == ["bias_16x8_range"], node.reasons
    assert str(BIAS40 + 1) in node.reasons[0].message
    # int8 CONV_2D at the 16x8 version stays declined (version 4 is the int16 form).
    rules = {r["name"]: r["text"] for r in _core.rules_table()}
    assert "int16" in rules["activation_dtype"] and "CONV_2D" in rules["activation_dtype"]
    assert "40 bits" in rules["bias_16x8_range"]


def ir_conv_graph(dtype, h=24, cin=64, cout=32, k=3, depthwise=False):
    """One CONV_2D / DEPTHWISE_CONV_2D as an IR graph with int8 or int16 (16x8) maps."""
    rng = np.random.default_rng(1)
    g = _core.Graph()
    x = g.add_tensor("x", [1, h, h, cin], dtype, scales=0.001, zero_points=0)
    n = cin if depthwise else cout
    wshape = [1, k, k, n] if depthwise else [n, k, k, cin]
    w = g.add_tensor("w", wshape, "int8", scales=[0.01] * n, zero_points=[0] * n,
                     axis=3 if depthwise else 0,
                     data=rng.integers(-127, 128, wshape).astype(np.int8))
    bt = "int64" if dtype == "int16" else "int32"
    b = g.add_tensor("b", [n], bt, scales=[1e-5] * n, zero_points=[0] * n,
                     data=rng.integers(-999, 999, n).astype(np.int64 if bt == "int64" else np.int32))
    y = g.add_tensor("y", [1, h, h, n], dtype, scales=0.01, zero_points=0)
    g.add_op("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", [x, w, b], [y], padding="SAME")
    return g


@pytest.mark.parametrize("depthwise", [False, True])
@pytest.mark.parametrize("kb", SRAM_KB)
def test_tiles_hold_half_the_elements(depthwise, kb):
    """2-byte elements: the smallest tile of a 16-bit layer needs more SRAM than
    the int8 layer's (the capability rule's estimate), the planner's tile holds
    fewer output rows x channels, the Program's kernel commands set
    NACC_CTRL.DATA_FORM = INT16 (1) with 2-byte pitches, and the half-rate MAC
    array shows in the estimate."""
    from test_compiler import kernel_commands

    g8, g16 = ir_conv_graph("int8", depthwise=depthwise), ir_conv_graph("int16", depthwise=depthwise)
    m8, m16 = _core.min_sram_bytes(g8, 0), _core.min_sram_bytes(g16, 0)
    assert m16 >= m8 and (depthwise or m16 > m8)  # depthwise: one window fits the alignment
    p8 = _core.plan_op(g8, 0, sram_kb=kb, conv_lowering="direct")
    p16 = _core.plan_op(g16, 0, sram_kb=kb, conv_lowering="direct")
    assert p16["lowering"] == ("depthwise" if depthwise else "direct")
    assert (p16["rows_per_core"] * p16["cols"] * p16["channels_per_core"] <
            p8["rows_per_core"] * p8["cols"] * p8["channels_per_core"]), (p8, p16)
    assert p16["layout"]["ifm_bytes"] <= kb * 1024
    assert p16["estimate"]["cycles"] > p8["estimate"]["cycles"]
    k16 = kernel_commands(_core.compile(g16, sram_kb=kb))
    k8 = kernel_commands(_core.compile(g8, sram_kb=kb))
    assert {c["DATA_FORM"] for c in k16} == {1} and {c["DATA_FORM"] for c in k8} == {0}
    assert {c["FM_TRANS_OFFSET"] for c in k16} == {2 * 64}
    assert len(k16) >= len(k8)


# ---- FULLY_CONNECTED, pools, ADD / SUB, CONCATENATION, RESHAPE (16x8) --------

from int16_models import add16, concat16, fc16, pool16  # noqa: E402


def random_fc_case(seed):
    rng = np.random.default_rng(9000 + seed)
    m = ModelBuilder(seed)
    rows, k, n = int(rng.integers(1, 5)), int(rng.integers(1, 300)), int(rng.integers(1, 48))
    x = input16(m, (rows, k), float(rng.choice([1.0 / 32768, 1e-3, 0.02])))
    o = fc16(m, x, n, str(rng.choice(["NONE", "RELU", "RELU6"])), per_channel=seed % 2 == 1,
             gain=float(2.0 ** rng.uniform(-3, 3)), bias_extreme=seed % 13 == 4)
    return m.build([o]), CORES[seed % 3], SRAM_KB[(seed // 3) % 2]


@pytest.mark.parametrize("seed", range(100))
def test_fully_connected_16x8_exact(seed):
    check_claimed_and_exact(*random_fc_case(seed), seed)


def random_fc_int4_case(seed):
    rng = np.random.default_rng(9300 + seed)
    m = ModelBuilder(seed)
    # Odd element counts (k x n) included: the int4 tensor packs two per byte.
    rows, k, n = int(rng.integers(1, 5)), int(rng.integers(1, 300)), int(rng.integers(1, 48))
    x = input16(m, (rows, k), float(rng.choice([1.0 / 32768, 1e-3, 0.02])))
    o = fc16(m, x, n, str(rng.choice(["NONE", "RELU", "RELU6"])), per_channel=seed % 2 == 1,
             gain=float(2.0 ** rng.uniform(-3, 3)), bias_extreme=seed % 13 == 4, int4=True)
    return m.build([o]), CORES[seed % 3], SRAM_KB[(seed // 3) % 2]


@pytest.mark.parametrize("seed", range(100))
def test_fully_connected_16x8_int4_weights_exact(seed):
    """FULLY_CONNECTED version 13 (int16 activations, int4 weights), which
    TFLite 2.21's BUILTIN_REF runs: the 16-bit unit takes the unpacked int4
    values as int8 weights (one data form per command)."""
    check_claimed_and_exact(*random_fc_int4_case(seed), seed)


def random_pool_case(seed):
    rng = np.random.default_rng(9500 + seed)
    m = ModelBuilder(seed)
    h, w, c = int(rng.integers(2, 17)), int(rng.integers(2, 17)), int(rng.choice([1, 3, 8, 33, 64]))
    x = input16(m, (1, h, w, c), float(rng.choice([1.0 / 32768, 1e-3, 0.02])))
    act = str(rng.choice(["NONE", "RELU", "RELU6"]))
    if seed % 2 == 0:  # MAX_POOL_2D: any window up to 15, stride up to 3
        k = min(int(rng.integers(1, 6)), h, w)
        o = pool16(m, x, "MAX_POOL_2D", k, int(rng.integers(1, 4)),
                   str(rng.choice(["SAME", "VALID"])), act)
    else:  # AVERAGE_POOL_2D: the pooling unit's 2x2 stride 2
        o = pool16(m, x, "AVERAGE_POOL_2D", 2, 2, str(rng.choice(["SAME", "VALID"])), act)
    return m.build([o]), CORES[seed % 3], SRAM_KB[(seed // 3) % 2]


@pytest.mark.parametrize("seed", range(100))
def test_pools_16x8_exact(seed):
    check_claimed_and_exact(*random_pool_case(seed), seed)


def two_operands16(rng, m, seed):
    """Two int16 inputs of an element-wise op (the second a channel vector when
    seed % 5 == 1) with scales 2^-4..2^4 apart."""
    h, w, c = int(rng.integers(1, 12)), int(rng.integers(1, 12)), int(rng.choice([1, 3, 8, 33]))
    sa = float(rng.choice([1.0 / 32768, 1e-3, 0.02]))
    sb = sa * float(2.0 ** rng.uniform(-4, 4))
    a = input16(m, (1, h, w, c), sa)
    b = input16(m, (1, 1, 1, c) if seed % 5 == 1 else (1, h, w, c), sb)
    return a, b, sa, sb


def random_add_case(seed):
    rng = np.random.default_rng(9900 + seed)
    m = ModelBuilder(seed)
    a, b, sa, sb = two_operands16(rng, m, seed)
    op = "SUB" if seed % 3 == 2 else "ADD"
    if op == "ADD" and seed % 4 == 3:
        a, b = b, a  # the broadcast operand first: ADD swaps them
    o = add16(m, a, b, op, out_scale=max(sa, sb) * float(2.0 ** rng.uniform(-1, 2)),
              activation=str(rng.choice(["NONE", "RELU", "RELU6"])))
    return m.build([o]), CORES[seed % 3], SRAM_KB[(seed // 3) % 2]


@pytest.mark.parametrize("seed", range(100))
def test_add_sub_16x8_exact(seed):
    check_claimed_and_exact(*random_add_case(seed), seed)


@pytest.mark.parametrize("seed", range(12))
def test_concat_reshape_16x8_exact(seed):
    """conv16 -> CONCATENATION of two int16 maps (no rescale: one scale) -> RESHAPE
    -> FULLY_CONNECTED: the concat's producers write their slices directly."""
    rng = np.random.default_rng(seed)
    m = ModelBuilder(seed)
    h, w = int(rng.integers(2, 8)), int(rng.integers(2, 8))
    x = input16(m, (1, h, w, int(rng.integers(1, 9))))
    y = input16(m, (1, h, w, int(rng.integers(1, 9))), m.meta[x].scale)
    cat = concat16(m, [x, y])
    r = m.reshape(cat, (1, h * w * m.meta[cat].shape[3]))
    o = fc16(m, r, int(rng.integers(1, 20)))
    check_claimed_and_exact(m.build([o]), CORES[seed % 3], SRAM_KB[seed % 2], seed)


def test_add_pot_scale_int16_declined():
    m = ModelBuilder(0)
    a = input16(m, (1, 4, 4, 8))
    b = input16(m, (1, 4, 4, 8))
    t = m.tensor(act16((1, 4, 4, 8), 1.0 / 4096))  # powers of two: TFLite takes its pot path
    m.g.add_op("ADD", [a, b], [t], dict(fused_activation_function="NONE", pot_scale_int16=True),
               version=3)
    d, interp = delegated(m.build([t]))
    (node,) = d.report().nodes
    assert not node.claimed
    assert [r.rule for r in node.reasons] == ["unsupported_options"], node.reasons
    assert "pot_scale_int16" in node.reasons[0].message


def test_int16_without_lowering_declined_with_reason():
    """An int16 HARD_SWISH (no 16-bit lowering) keeps the delegate's reason,
    which names the kinds that have one."""
    m = ModelBuilder(0)
    x = input16(m, (1, 4, 4, 8))
    o = m.tensor(act16((1, 4, 4, 8), 3.0 / 4096))
    m.g.add_op("HARD_SWISH", [x], [o], None, version=1)
    d, _ = delegated(m.build([o]))
    (node,) = d.report().nodes
    assert [r.rule for r in node.reasons] == ["int16_activations"], node.reasons
    assert "CONV_2D" in node.reasons[0].message and "FULLY_CONNECTED" in node.reasons[0].message


def pad16(m, x, pads, v2=False):
    from tflite_builder import QTensor

    t = m.meta[x]
    p = m.tensor(QTensor((4, 2), "int32", data=np.array(pads, np.int32)))
    shape = tuple(d + a + b for d, (a, b) in zip(t.shape, pads))
    o = m.tensor(act16(shape, t.scale))
    ins = [x, p]
    if v2:
        ins.append(m.tensor(QTensor((1,), "int16", scale=t.scale, zero_point=0,
                                    data=np.zeros(1, np.int16))))
    m.g.add_op("PADV2" if v2 else "PAD", ins, [o], version=3)
    return o


def relu16(m, x, op="RELU", out_scale=None):
    t = m.meta[x]
    o = m.tensor(act16(t.shape, out_scale or t.scale))
    m.g.add_op(op, [x], [o], version=3)
    return o


@pytest.mark.parametrize("seed", range(24))
def test_pad_relu_16x8_exact(seed):
    """PAD / PADV2 (standalone: an identity depthwise pass whose 16x8 output stage
    is the identity; before a CONV_2D: folded into its padding) and RELU / RELU6
    with one scale (an identity pass with TFLite's clamp)."""
    rng = np.random.default_rng(seed)
    m = ModelBuilder(seed)
    h, w, c = int(rng.integers(2, 9)), int(rng.integers(2, 9)), int(rng.choice([1, 4, 17]))
    x = input16(m, (1, h, w, c), float(rng.choice([1.0 / 32768, 1e-3, 1.0 / 4096])))
    pads = [[0, 0], [int(rng.integers(0, 3)), int(rng.integers(0, 3))],
            [int(rng.integers(0, 3)), int(rng.integers(0, 3))], [0, 0]]
    y = pad16(m, x, pads, v2=seed % 2 == 1)
    y = relu16(m, y, "RELU6" if seed % 3 == 0 else "RELU")
    if seed % 4 == 0:  # a PAD that folds into the convolution after it
        y = conv16(m, pad16(m, y, [[0, 0], [1, 1], [1, 1], [0, 0]]), 5, k=3, padding="VALID")
    check_claimed_and_exact(m.build([y]), CORES[seed % 3], SRAM_KB[seed % 2], seed)


@pytest.mark.parametrize("op, why", [
    ("HARD_SWISH", "no int16 kernel"),
])
def test_int16_kinds_without_lowering_say_why(op, why):
    m = ModelBuilder(0)
    x = input16(m, (1, 4, 4, 8))
    scale = 1.0 / 32768 if op in ("LOGISTIC", "TANH") else 3.0 / 4096
    o = m.tensor(act16((1, 4, 4, 8), scale))
    m.g.add_op(op, [x], [o], None, version={"HARD_SWISH": 1}.get(op, 3))
    model = m.build([o])
    d, interp = delegated(model)
    (node,) = d.report().nodes
    assert [r.rule for r in node.reasons] == ["int16_activations"], node.reasons
    assert why in node.reasons[0].message
    # TFLite itself rejects an int16 HARD_SWISH at invoke: nothing to compare.


def test_16_bit_units_run_at_half_rate():
    """NACC_SPEC §9: 32 int16 x int8 lanes. A 16x8 FULLY_CONNECTED of K = 100
    inputs takes ceil(100 / 32) = 4 passes per output (int8: ceil(100 / 64) = 2),
    and the compiled Program computes what the delegate would (bit-exact vs
    BUILTIN_REF is checked above; here the device's counters)."""
    rng = np.random.default_rng(0)
    counts = {}
    for dtype in ("int8", "int16"):
        g = _core.Graph()
        x = g.add_tensor("x", [1, 100], dtype, scales=0.001, zero_points=0)
        w = g.add_tensor("w", [24, 100], "int8", scales=0.01, zero_points=0,
                         data=rng.integers(-127, 128, (24, 100)).astype(np.int8))
        y = g.add_tensor("y", [1, 24], dtype, scales=0.05, zero_points=0)
        g.add_op("FULLY_CONNECTED", [x, w], [y])
        p = _core.compile(g, cores=1, sram_kb=16)
        xin = rng.integers(-100, 100, (1, 100)).astype(np.int8 if dtype == "int8" else np.int16)
        rt = _core.Runtime(cores=1, sram_kb=16, execution="step")
        _, stats = rt.run(p, [xin.view(np.int8)])
        counts[dtype] = stats["mac_cycles"]
    assert counts == {"int8": 24 * 2, "int16": 24 * 4}, counts


def sigmoid_tanh16(m, x, op):
    """LOGISTIC / TANH 16x8 (version 3): output scale 2^-15, zero point 0."""
    o = m.tensor(act16(m.meta[x].shape, 1.0 / 32768))
    m.g.add_op(op, [x], [o], version=3)
    return o


# Power-of-two input scales (TFLite's 3 << shift path: 2^-12, and 2^-11 for
# TANH) and general ones (int(s * 4096 * 3 * 2^k)), the smallest and largest
# the 16-bit table modes take.
SIGMOID_SCALES = (1.0 / 4096, 1.0 / 2048, 1.0 / 32768, 3e-4, 1e-3, 0.01, 0.37, 2e-6, 5.0)


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
@pytest.mark.parametrize("scale", SIGMOID_SCALES)
def test_sigmoid_tanh_16x8_every_input(op, scale):
    """Every int16 input value (-32768 .. 32767) through the activation unit's
    16-bit table modes: each of the 256 table entries and every interpolation
    fraction is exercised, so a wrong table entry or rounding constant fails."""
    m = ModelBuilder(0)
    x = input16(m, (1, 64, 64, 16), scale)
    model = m.build([sigmoid_tanh16(m, x, op)])
    d, interp = delegated(model, cores=8, sram_kb=16)
    assert all(n.claimed for n in d.report().nodes), [n.reasons for n in d.report().nodes]
    every = np.arange(-32768, 32768, dtype=np.int16).reshape(1, 64, 64, 16)
    assert not compare(model, interp, [[every]])


def random_sigmoid_case(seed):
    rng = np.random.default_rng(12100 + seed)
    m = ModelBuilder(seed)
    h, w, c = int(rng.integers(1, 12)), int(rng.integers(1, 12)), int(rng.choice([1, 3, 8, 33, 70]))
    scale = float(rng.choice([1.0 / 4096, 1.0 / 2048, float(10 ** rng.uniform(-6, 0.7))]))
    if seed % 4 == 3:  # after a 16x8 convolution (its output scale near the input's)
        scale = min(scale, 1e-3)
    x = input16(m, (1, h, w, c), scale)
    if seed % 4 == 3:
        x = conv16(m, x, int(rng.integers(1, 20)), k=int(rng.choice([1, 3])))
    op = "TANH" if seed % 2 else "LOGISTIC"
    return m.build([sigmoid_tanh16(m, x, op)]), CORES[seed % 3], SRAM_KB[(seed // 3) % 2]


@pytest.mark.parametrize("seed", range(100))
def test_sigmoid_tanh_16x8_exact(seed):
    check_claimed_and_exact(*random_sigmoid_case(seed), seed)


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
def test_sigmoid_tanh_16x8_large_input_scale_declined(op):
    """An input scale above ~5.33 gives a multiplier beyond 65535 (x * multiplier
    would leave int32 in TFLite's kernel): declined with the reason; the host
    runs it."""
    m = ModelBuilder(0)
    x = input16(m, (1, 4, 4, 8), 8.0)
    model = m.build([sigmoid_tanh16(m, x, op)])
    d, interp = delegated(model)
    (node,) = d.report().nodes
    assert not node.claimed
    assert [r.rule for r in node.reasons] == ["sigmoid_tanh_output_quantization"], node.reasons
    assert "65535" in node.reasons[0].message


def random_mul_case(seed):
    rng = np.random.default_rng(13300 + seed)
    m = ModelBuilder(seed)
    a, b, sa, sb = two_operands16(rng, m, seed)
    if seed % 4 == 3:
        a, b = b, a  # the broadcast operand first: MUL swaps them
    # s1 s2 / s_out in [2^-16, 2^-1): products of +-32767 saturate for the larger ones
    ratio = float(2.0 ** rng.uniform(-16, -1.05))
    act = str(rng.choice(["NONE", "RELU", "RELU6"]))
    if sa * sb / ratio < 1e-8:  # TFLite's Prepare: 6 / s_out must fit int32
        act = "NONE"
    o = mul16(m, a, b, out_scale=sa * sb / ratio, activation=act)
    return m.build([o]), CORES[seed % 3], SRAM_KB[(seed // 3) % 2]


@pytest.mark.parametrize("seed", range(100))
def test_mul_16x8_exact(seed):
    """16x8 MUL: the 32-bit MultiplyByQuantizedMultiplier of the int32 product on
    the element-wise unit's 16-bit form (±32767 and -32768 in every input set)."""
    check_claimed_and_exact(*random_mul_case(seed), seed)


def test_mul_16x8_declines():
    """MUL with s1 s2 / s_out >= 1 (a left-shifted product) is declined with its
    reason and runs exactly on the host; so is an int16 -> int8 MUL with a
    constant operand (TFLite 2.21's reference aborts on a broadcast one)."""
    from tflite_builder import QTensor
    m = ModelBuilder(0)
    a, b = input16(m, (1, 4, 4, 8), 0.5), input16(m, (1, 4, 4, 8), 0.5)
    o = mul16(m, a, b, out_scale=0.125)
    model = m.build([o])
    d, interp = delegated(model)
    (node,) = d.report().nodes
    assert [r.rule for r in node.reasons] == ["int16_form"], node.reasons
    assert not compare(model, interp, random_input_sets(interp, 0, 1))

    m = ModelBuilder(0)
    a = input16(m, (1, 4, 4, 8), 1e-3)
    b = m.tensor(QTensor((1, 4, 4, 8), "int16", scale=2e-3, zero_point=0,
                         data=np.arange(-64, 64, dtype=np.int16).reshape(1, 4, 4, 8) * 500))
    o = m.tensor(QTensor((1, 4, 4, 8), "int8", scale=20.0, zero_point=3))
    m.g.add_op("MUL", [a, b], [o], dict(fused_activation_function="NONE"), version=4)
    model = m.build([o])
    d, interp = delegated(model)
    (node,) = d.report().nodes
    assert not node.claimed
    assert [r.rule for r in node.reasons] == ["int16_form"], node.reasons
    assert "constant" in node.reasons[0].detail
    assert not compare(model, interp, random_input_sets(interp, 0, 1))


def random_mul_s16_s8_case(seed):
    """MUL of two int16 maps into an int8 output: random shapes, input and
    output scales (TFLite's kernel uses none of them), output zero points over
    the int8 range (extremes included), fused NONE / RELU / RELU6 /
    RELU_N1_TO_1; sometimes behind 16x8 convs."""
    from tflite_builder import QTensor
    rng = np.random.default_rng(13700 + seed)
    m = ModelBuilder(seed)
    h, w = int(rng.integers(1, 12)), int(rng.integers(1, 12))
    c = int(rng.choice([1, 3, 8, 17, 33, 64]))
    s1, s2 = (float(np.float32(v)) for v in rng.choice([1.0 / 32768, 1e-3, 3e-4, 0.02], 2))
    a, b = input16(m, (1, h, w, c), s1), input16(m, (1, h, w, c), s2)
    if seed % 5 == 0:
        a = conv16(m, a, c, k=1)
    so = float(np.float32(rng.choice([1.0 / 128, 0.01, 0.05, 1e-4, 0.1, 3.0])))
    zo = int(rng.choice([0, -128, 127, int(rng.integers(-128, 128))]))
    act = str(rng.choice(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]))
    o = m.tensor(QTensor((1, h, w, c), "int8", scale=so, zero_point=zo))
    m.g.add_op("MUL", [a, b], [o], dict(fused_activation_function=act), version=4)
    return m.build([o]), CORES[seed % 3], SRAM_KB[(seed // 3) % 2]


@pytest.mark.parametrize("seed", range(100))
def test_mul_int16_to_int8_exact(seed):
    """TFLite 2.21's int16 x int16 -> int8 MUL (the Q0.15 product of its LSTM
    kernels, scales unused) = clamp(MBQM(a * b, 2^16, -8) + zo): one element-wise
    command in the MUL_S16_S8 mode (int16 inputs, int8 output; tests/test_mul_s16_s8.py
    checks the Program has no other pass)."""
    check_claimed_and_exact(*random_mul_s16_s8_case(seed), seed)

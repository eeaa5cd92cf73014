"""Graph-level lowerings of issue 3, bit-exact against TFLite 2.21 BUILTIN_REF
through the delegate (which compiles and runs each partition on the simulated
device): PAD folded into the next convolution's padding or run alone as an
identity depthwise pass, MEAN over height and width as one depthwise pass
(compiler/mean.h), and element-wise broadcasts (runtime scalar, channel
vector). Every case runs at 1, 2, 8 and 32 cores and at 16 KB of SRAM."""
import numpy as np
import pytest

import nacc
from delegate_models import ModelBuilder, act, random_inputs, run
from tflite_builder import QTensor, make_interpreter

CONFIGS = [dict(cores=1), dict(cores=2), dict(cores=8), dict(cores=32), dict(cores=4, sram_kb=16)]


def exact(model, runs=1, **options):
    """Delegate output == TFLite BUILTIN_REF; returns the report."""
    options.setdefault("log_level", "off")
    options.setdefault("min_partition_macs", 0)
    d = nacc.load_delegate(**options)
    interp = make_interpreter(model, delegates=[d])
    interp.allocate_tensors()
    ref = make_interpreter(model)
    ref.allocate_tensors()
    for i in range(runs):
        x = random_inputs(ref, seed=i)
        for det, v in zip(interp.get_input_details(), x):
            interp.set_tensor(det["index"], v)
        interp.invoke()
        got = [interp.get_tensor(o["index"]) for o in interp.get_output_details()]
        for g, w in zip(got, run(model, x)):
            np.testing.assert_array_equal(g, w)
    return d.report()


def claimed(report):
    return {n.name: n.claimed for n in report.nodes}


def reasons(report, name):
    (n,) = [n for n in report.nodes if n.name == name]
    return " ".join(r.message for r in n.reasons)


# ---- PAD ------------------------------------------------------------------------

def pad(m, x, paddings, name):
    t = m.meta[x]
    p = m.tensor(QTensor((4, 2), "int32", data=np.array(paddings, dtype=np.int32)))
    shape = [s + a + b for s, (a, b) in zip(t.shape, paddings)]
    o = m.tensor(QTensor(shape, "int8", scale=t.scale, zero_point=t.zero_point, name=name))
    m.g.add_op("PAD", [x, p], [o], version=2)
    return o


def depthwise(m, x, k, stride, padding, name):
    return m.depthwise(x, k=k, stride=stride, name=name) if padding == "SAME" else \
        _depthwise_valid(m, x, k, stride, name)


def _depthwise_valid(m, x, k, stride, name):
    t = m.meta[x]
    c = t.shape[3]
    w = m.rng.integers(-127, 128, (1, k, k, c), dtype=np.int8)
    ws = m.rng.uniform(0.002, 0.01, c).astype(np.float32)
    wt = m.tensor(QTensor((1, k, k, c), "int8", scale=ws, zero_point=[0] * c,
                          quantized_dimension=3, data=w))
    bs = (np.float32(t.scale) * ws).astype(np.float32)
    b = m.tensor(QTensor((c,), "int32", scale=bs, zero_point=[0] * c,
                         data=m.rng.integers(-500, 500, c, dtype=np.int32)))
    oh, ow = (t.shape[1] - k) // stride + 1, (t.shape[2] - k) // stride + 1
    o = m.tensor(act((1, oh, ow, c), 0.08, 2, name=name))
    m.g.add_op("DEPTHWISE_CONV_2D", [x, wt, b], [o],
               dict(padding="VALID", stride_w=stride, stride_h=stride, depth_multiplier=1,
                    fused_activation_function="RELU6"), version=3)
    return o


# (id, build(m, x) -> outputs, input shape, PAD name -> claimed)
PAD_CASES = [
    # keras ZeroPadding2D(1) + Conv 3x3 VALID: folds (summed padding 1 < 3)
    ("zeropad-conv", lambda m, x: [m.conv(pad(m, x, [[0, 0], [1, 1], [1, 1], [0, 0]], "p"), 5,
                                          padding="VALID", name="c")], (1, 9, 9, 3), True),
    # MobileNetV2's ZeroPadding2D(((0, 1), (0, 1))) + stride-2 depthwise VALID: asymmetric fold
    ("mnv2-depthwise-s2", lambda m, x: [depthwise(m, pad(m, x, [[0, 0], [0, 1], [0, 1], [0, 0]], "p"),
                                                  3, 2, "VALID", "d")], (1, 10, 10, 19), True),
    # ResNet50 stem: ZeroPadding2D(3) + 7x7 stride 2 VALID (summed 3 < 7)
    ("resnet-stem", lambda m, x: [m.conv(pad(m, x, [[0, 0], [3, 3], [3, 3], [0, 0]], "p"), 4, k=7,
                                         stride=2, padding="VALID", name="c")], (1, 20, 20, 3), True),
    # summed padding at the limit: PAD 2 + 7x7 SAME (3) = 5
    ("fold-at-limit", lambda m, x: [m.conv(pad(m, x, [[0, 0], [2, 2], [2, 2], [0, 0]], "p"), 4, k=7,
                                           name="c")], (1, 9, 9, 4), True),
    # one past: 3 + 3 = 6 > 5 cannot fold, 3 + 3 rows cannot run alone -> host
    ("fold-past-limit", lambda m, x: [m.conv(pad(m, x, [[0, 0], [3, 3], [3, 3], [0, 0]], "p"), 4, k=7,
                                             name="c")], (1, 9, 9, 4), False),
    # PAD before MAX_POOL (ResNet50's second ZeroPadding2D): standalone pass
    ("pad-maxpool", lambda m, x: [m.pool("MAX_POOL_2D", pad(m, x, [[0, 0], [1, 1], [1, 1], [0, 0]], "p"),
                                         k=3, stride=2)], (1, 11, 11, 6), True),
    # summed padding not below the kernel (1x1 conv): standalone pass, asymmetric 2+3
    ("pad-1x1-standalone", lambda m, x: [m.conv(pad(m, x, [[0, 0], [2, 3], [1, 0], [0, 0]], "p"), 3, k=1,
                                                name="c")], (1, 6, 7, 5), True),
    # two consumers: standalone
    ("two-consumers", lambda m, x: (lambda p: [m.conv(p, 4, padding="VALID", name="c1"),
                                               m.conv(p, 2, k=1, padding="VALID", name="c2")])(
        pad(m, x, [[0, 0], [1, 2], [2, 1], [0, 0]], "p")), (1, 8, 8, 17), True),
    # channel padding: declined
    ("channel-pad", lambda m, x: [pad(m, x, [[0, 0], [1, 1], [1, 1], [0, 2]], "p")], (1, 4, 4, 3), False),
]


@pytest.mark.parametrize("build,shape,pad_claimed", [c[1:] for c in PAD_CASES],
                         ids=[c[0] for c in PAD_CASES])
def test_pad(build, shape, pad_claimed):
    m = ModelBuilder()
    x = m.input(shape)
    model = m.build(build(m, x))
    for cfg in CONFIGS:
        rep = exact(model, **cfg)
        assert claimed(rep)["p"] == pad_claimed, reasons(rep, "p")
        if not pad_claimed:
            assert "cannot fold" in reasons(rep, "p") or "channels" in reasons(rep, "p")


# ---- MEAN ------------------------------------------------------------------------

def mean(m, x, axes, keep_dims, out_scale, out_zp, name="mean"):
    t = m.meta[x]
    ax = m.tensor(QTensor((len(axes),), "int32", data=np.array(axes, dtype=np.int32)))
    shape = [1 if i in axes else d for i, d in enumerate(t.shape)] if keep_dims else \
        [d for i, d in enumerate(t.shape) if i not in axes]
    o = m.tensor(act(shape, out_scale, out_zp, name=name))
    m.g.add_op("MEAN", [x, ax], [o], dict(keep_dims=keep_dims), version=2)
    return o


# (id, input shape, in (scale, zp), axes, keep_dims, out (scale, zp))
MEAN_CASES = [
    ("1x1", (1, 1, 1, 21), (0.05, -3), (1, 2), True, (0.04, -1)),
    ("7x7-keep", (1, 7, 7, 20), (0.05, -3), (1, 2), True, (0.04, -1)),
    ("7x7-float-path", (1, 7, 7, 20), (0.05, -3), (1, 2), False, (0.04, -1)),
    ("13x13-keep", (1, 13, 13, 9), (0.02, 5), (2, 1), True, (0.011, -7)),
    ("13x13-float-path", (1, 13, 13, 9), (0.02, 5), (1, 2), False, (0.011, -7)),
    ("mobilenet-v1-head", (1, 4, 4, 70), (0.021776244044303894, -128), (1, 2), True,
     (0.00586096802726388, -128)),
    ("mobilenet-v2-head", (1, 3, 3, 40), (0.018781444057822227, -128), (1, 2), False,
     (0.006502545904368162, -128)),
    ("same-quant-truncating", (1, 5, 5, 8), (0.05, -3), (1, 2), False, (0.05, -3)),
    ("negative-axes", (1, 6, 6, 8), (0.05, -3), (-3, -2), True, (0.03, 4)),
]


@pytest.mark.parametrize("shape,qin,axes,keep,qout", [c[1:] for c in MEAN_CASES],
                         ids=[c[0] for c in MEAN_CASES])
def test_mean(shape, qin, axes, keep, qout):
    m = ModelBuilder()
    x = m.input(shape, scale=qin[0], zp=qin[1])
    model = m.build([mean(m, x, axes, keep, *qout)])
    for cfg in CONFIGS:
        rep = exact(model, runs=2, **cfg)
        assert claimed(rep)["mean"], reasons(rep, "mean")


def test_mean_after_conv_is_one_partition():
    """conv -> MEAN (a classifier head) runs as one program when MEAN is claimed."""
    m = ModelBuilder()
    x = m.input((1, 7, 7, 8))
    y = m.conv(x, 16, name="c")
    model = m.build([mean(m, y, (1, 2), True, 0.05, -2)])
    rep = exact(model, runs=2, cores=8)
    assert claimed(rep) == {"c": True, "mean": True}
    assert len(rep.partitions) == 1


# ---- element-wise broadcasts ----------------------------------------------------------

@pytest.mark.parametrize("op", ["ADD", "MUL", "SUB"])
@pytest.mark.parametrize("b_shape", [(1, 1, 1, 1), (1, 1, 1, 13)], ids=["scalar", "channels"])
def test_runtime_broadcast_operand(op, b_shape):
    m = ModelBuilder()
    a = m.input((1, 6, 5, 13))
    b = m.input(b_shape, scale=0.07, zp=2)
    o = m.tensor(act((1, 6, 5, 13), 0.12, 1, name="e"))
    m.g.add_op(op, [a, b], [o], dict(fused_activation_function="NONE"), version=2)
    model = m.build([o])
    for cfg in CONFIGS:
        rep = exact(model, **cfg)
        assert claimed(rep)["e"], reasons(rep, "e")


def test_sub_with_broadcast_first_operand_is_declined_with_reason():
    m = ModelBuilder()
    a = m.input((1, 1, 1, 13))
    b = m.input((1, 6, 5, 13), scale=0.07, zp=2)
    o = m.tensor(act((1, 6, 5, 13), 0.12, 1, name="e"))
    m.g.add_op("SUB", [a, b], [o], dict(fused_activation_function="NONE"), version=2)
    rep = exact(m.build([o]))
    assert not claimed(rep)["e"]
    assert "operands [1,1,1,13] and [1,6,5,13]" in reasons(rep, "e")


# ---- direct: nacc._core.compile + Runtime ------------------------------------------------

from nacc import _core  # noqa: E402
import ir_builders as irb  # noqa: E402

_RUNTIMES = {}


def _runtime(cores, kb):
    if (cores, kb) not in _RUNTIMES:
        _RUNTIMES[(cores, kb)] = _core.Runtime(cores=cores, sram_kb=kb)
    return _RUNTIMES[(cores, kb)]


def _pad_conv_graph(paddings, kernel=3, conv_pads=(0, 0, 0, 0), pad_is_output=False, c=5):
    """x -> PAD -> CONV_2D (explicit padding); PAD's output is also a graph
    output when pad_is_output (then it cannot fold)."""
    rng = np.random.default_rng(7)
    g = _core.Graph()
    x = irb.activation(g, "x", [1, 9, 8, c])
    ph = 9 + paddings[1][0] + paddings[1][1]
    pw = 8 + paddings[2][0] + paddings[2][1]
    p = irb.activation(g, "p", [1, ph, pw, c])
    g.add_op("PAD", [x], [p], name="pad", paddings=[list(q) for q in paddings])
    w = g.add_tensor("w", [6, kernel, kernel, c], "int8", scales=[0.02] * 6, zero_points=[0] * 6,
                     axis=0, data=rng.integers(-127, 128, (6, kernel, kernel, c), dtype=np.int8))
    b = g.add_tensor("b", [6], "int32", scales=[irb.IN_SCALE * 0.02] * 6, zero_points=[0] * 6,
                     data=rng.integers(-300, 300, 6, dtype=np.int32))
    t, bo, l, r = conv_pads
    oh, ow = ph + t + bo - kernel + 1, pw + l + r - kernel + 1
    y = irb.activation(g, "y", [1, oh, ow, 6], scale=irb.OUT_SCALE, zero_point=irb.OUT_ZP)
    g.add_op("CONV_2D", [p, w, b], [y], name="conv", pad_top=t, pad_bottom=bo,
             pad_left=l, pad_right=r)
    g.inputs = [x]
    g.outputs = [p, y] if pad_is_output else [y]
    return g, (1, 9, 8, c), [(1, ph, pw, c), (1, oh, ow, 6)] if pad_is_output else [(1, oh, ow, 6)]


@pytest.mark.parametrize("paddings,conv_pads", [
    (((0, 0), (1, 1), (1, 1), (0, 0)), (0, 0, 0, 0)),
    (((0, 0), (0, 1), (2, 0), (0, 0)), (1, 1, 0, 2)),
    (((0, 0), (2, 2), (1, 1), (0, 0)), (0, 0, 1, 1)),
], ids=["symmetric", "asymmetric", "summed"])
@pytest.mark.parametrize("cores,kb", [(1, 64), (2, 64), (8, 64), (32, 64), (4, 16)])
def test_pad_fold_direct(paddings, conv_pads, cores, kb):
    """The folded program (PAD without commands) equals the standalone one
    (PAD as its own pass, kept because its output leaves the partition), and
    the standalone PAD output equals numpy's constant pad with the zero point."""
    g, in_shape, _ = _pad_conv_graph(paddings, conv_pads=conv_pads)
    prog = _core.compile(g, cores=cores, sram_kb=kb)
    ops = {o["name"]: o for o in _core.program_info(prog)["ops"]}
    assert ops["pad"]["first_word"] == ops["pad"]["end_word"]  # folded: no command
    g2, _, _ = _pad_conv_graph(paddings, conv_pads=conv_pads, pad_is_output=True)
    prog2 = _core.compile(g2, cores=cores, sram_kb=kb)
    ops2 = {o["name"]: o for o in _core.program_info(prog2)["ops"]}
    assert ops2["pad"]["end_word"] > ops2["pad"]["first_word"]
    x = np.random.default_rng(cores).integers(-128, 128, in_shape, dtype=np.int8)
    (y,), _ = _runtime(cores, kb).run(prog, [x])
    (p2, y2), _ = _runtime(cores, kb).run(prog2, [x])
    want_p = np.pad(x, paddings, constant_values=irb.IN_ZP)
    np.testing.assert_array_equal(np.asarray(p2).reshape(want_p.shape), want_p)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(y2))


@pytest.mark.parametrize("hw", [1, 7, 13])
@pytest.mark.parametrize("cores,kb", [(1, 64), (8, 64), (32, 64), (2, 16)])
def test_mean_direct_matches_tflite_formula(hw, cores, kb):
    """MEAN compiled alone == TFLite 2.21's QuantizedMeanOrSum arithmetic
    computed in numpy (sum - N*zi, folded multiplier, MBQM, zero point)."""
    g, op = irb.mean(in_shape=(1, hw, hw, 19), keep_dims=False)
    prog = _core.compile(g, cores=cores, sram_kb=kb)
    x = np.random.default_rng(hw).integers(-128, 128, (1, hw, hw, 19), dtype=np.int8)
    (y,), _ = _runtime(cores, kb).run(prog, [x])
    m = ModelBuilder()
    xi = m.input((1, hw, hw, 19), scale=irb.IN_SCALE, zp=irb.IN_ZP)
    model = m.build([mean(m, xi, (1, 2), False, irb.OUT_SCALE, irb.OUT_ZP)])
    (want,) = run(model, [x])
    np.testing.assert_array_equal(np.asarray(y).reshape(want.shape), want)


# ---- CONCATENATION -------------------------------------------------------------------

def concat(m, xs, axis, name="cat"):
    shapes = [m.meta[x].shape for x in xs]
    t = m.meta[xs[0]]
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    o = m.tensor(QTensor(out, "int8", scale=t.scale, zero_point=t.zero_point, name=name))
    m.g.add_op("CONCATENATION", xs, [o], dict(axis=axis, fused_activation_function="NONE"))
    return o


def _same_quant_conv(m, x, cout, name, k=3):
    """A conv whose output carries the model input's quantization (concat
    inputs must share the output's scale and zero point)."""
    return m.conv(x, cout, k=k, out_scale=0.05, out_zp=-3, name=name)


CONCAT_CASES = [
    # two partition inputs (copy passes only)
    ("inputs-2", lambda m, x: [concat(m, [x, m.input((1, 6, 7, 5))], 3)], (1, 6, 7, 3)),
    # producers inside the partition, 3 inputs, channel counts 3 + 17 + 1
    ("convs-3", lambda m, x: [concat(m, [x, _same_quant_conv(m, x, 17, "c1"),
                                         _same_quant_conv(m, x, 1, "c2", k=1)], -1)], (1, 9, 8, 3)),
    # 4 inputs, one used twice, and a consumer after the concat
    ("four-then-conv", lambda m, x: (lambda a: [m.conv(concat(m, [a, x, a, m.input((1, 5, 5, 2))], 3),
                                                       6, name="after")])(
        _same_quant_conv(m, x, 7, "c1")), (1, 5, 5, 9)),
    # rows and columns of 4-D maps (written from their first row / column)
    ("rows", lambda m, x: [concat(m, [x, _same_quant_conv(m, x, 3, "c1"), m.input((1, 2, 7, 3))], 1)],
     (1, 6, 7, 3)),
    # a producer of the first rows writes them in place (a dense prefix of the output)
    ("rows-producer-first", lambda m, x: [concat(m, [_same_quant_conv(m, x, 3, "c1"), x], 1)],
     (1, 5, 6, 3)),
    ("cols-then-conv", lambda m, x: [m.conv(concat(m, [_same_quant_conv(m, x, 5, "c1"),
                                                       m.input((1, 6, 3, 5))], 2), 4, name="after")],
     (1, 6, 7, 3)),
    # 2-D: fully connected outputs along the feature axis
    ("fc-2d", lambda m, x: (lambda r: [concat(m, [r, m.input((1, 11))], 1)])(
        m.unary("RELU", m.input((1, 13)))), (1, 2, 2, 2)),
]


@pytest.mark.parametrize("build,shape", [c[1:] for c in CONCAT_CASES],
                         ids=[c[0] for c in CONCAT_CASES])
def test_concatenation(build, shape):
    m = ModelBuilder()
    x = m.input(shape)
    model = m.build(build(m, x))
    for cfg in CONFIGS:
        rep = exact(model, **cfg)
        assert claimed(rep)["cat"], reasons(rep, "cat")


def test_concatenation_on_the_batch_axis_is_declined():
    m = ModelBuilder()
    x = m.input((1, 4, 5, 3))
    model = m.build([concat(m, [x, m.input((1, 4, 5, 3))], 0)])
    rep = exact(model)
    assert not claimed(rep)["cat"]
    assert "axis 0 of rank 4" in reasons(rep, "cat")


def _conv_concat_graph(with_concat):
    rng = np.random.default_rng(3)
    g = _core.Graph()
    x = irb.activation(g, "x", [1, 6, 7, 4])
    w = g.add_tensor("w", [7, 3, 3, 4], "int8", scales=[0.02] * 7, zero_points=[0] * 7, axis=0,
                     data=rng.integers(-127, 128, (7, 3, 3, 4), dtype=np.int8))
    y = irb.activation(g, "y", [1, 6, 7, 7])
    g.add_op("CONV_2D", [x, w], [y], name="conv", padding="SAME")
    if not with_concat:
        return g
    z = irb.activation(g, "z", [1, 6, 7, 11])
    g.add_op("CONCATENATION", [y, x], [z], name="cat", axis=3)
    return g


@pytest.mark.parametrize("cores,kb", [(1, 64), (8, 64), (4, 16)])
def test_concat_producer_writes_its_slice_directly(cores, kb):
    """conv -> CONCATENATION: the conv writes channels [0, 7) of the output with
    pixel pitch 11 (no copy pass for it); only the partition input x is copied."""
    prog = _core.compile(_conv_concat_graph(True), cores=cores, sram_kb=kb)
    info = _core.program_info(prog)
    assert [o["region"] for o in info["outputs"]] and len(info["outputs"]) == 1
    ops = {o["name"]: o for o in info["ops"]}
    assert ops["cat"]["min_dma_bytes"] == 6 * 7 * 4 + 6 * 7 * 11  # only x is read
    x = np.random.default_rng(1).integers(-128, 128, (1, 6, 7, 4), dtype=np.int8)
    (z,), _ = _runtime(cores, kb).run(prog, [x])
    (y,), _ = _runtime(cores, kb).run(_core.compile(_conv_concat_graph(False), cores=cores,
                                                    sram_kb=kb), [x])
    want = np.concatenate([np.asarray(y).reshape(1, 6, 7, 7), x], axis=3)
    np.testing.assert_array_equal(np.asarray(z).reshape(want.shape), want)

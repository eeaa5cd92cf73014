"""What the delegate claims and why it declines: per-node decisions and reasons,
partitions, the fragmentation guard, strict mode, the fallback log and the
report, on small flatbuffer models (milliseconds to build)."""
import numpy as np
import pytest

import nacc
from delegate_models import ModelBuilder, act, bias, conv_weights
from tflite_builder import QTensor, make_interpreter

def npu_ok(node) -> bool:
    """Claimed, and compiled: a claimed node that failed to compile carries a reason."""
    return node.claimed and not node.reasons


def assert_same_as_reference(model: bytes, interp) -> None:
    """The delegated interpreter gives exactly BUILTIN_REF's outputs, whatever was claimed."""
    ref = make_interpreter(model)
    ref.allocate_tensors()
    interp.allocate_tensors()
    rng = np.random.default_rng(7)
    for d in interp.get_input_details():
        if np.issubdtype(d["dtype"], np.integer):
            info = np.iinfo(d["dtype"])
            x = rng.integers(info.min, info.max + 1, d["shape"]).astype(d["dtype"])
        else:
            x = rng.standard_normal(d["shape"]).astype(d["dtype"])
        interp.set_tensor(d["index"], x)
        ref.set_tensor(d["index"], x)
    interp.invoke()
    ref.invoke()
    for d in interp.get_output_details():
        np.testing.assert_array_equal(interp.get_tensor(d["index"]), ref.get_tensor(d["index"]))


def prepare(model: bytes, **options):
    options.setdefault("log_level", "off")
    d = nacc.load_delegate(**options)
    interp = make_interpreter(model, delegates=[d])
    return d.report(), interp


def single_conv(hw=8, **conv):
    m = ModelBuilder()
    x = m.input((1, hw, hw, 3))
    return m.build([m.conv(x, 4, **conv)])


def int16x8_conv():
    rng = np.random.default_rng(0)
    x = act((1, 6, 6, 3), 0.001, 0, "int16")
    w, scales = conv_weights(rng, 4, 3, 3, 3)
    b = bias(rng, 0.001, scales, "int64")
    o = act((1, 6, 6, 4), 0.002, 0, "int16")
    m = ModelBuilder()
    xi = m.tensor(x)
    m.inputs.append(xi)
    oi = m.tensor(o)
    m.g.add_op("CONV_2D", [xi, m.tensor(w), m.tensor(b)], [oi], dict(padding="SAME"), version=4)
    return m.build([oi])


def int4_conv():
    """CONV_2D (version 7) with int4 per-channel weights: TFLite's reference
    kernel unpacks them; the NPU's weight path unpacks them (DATA_FORM 10)."""
    rng = np.random.default_rng(0)
    m = ModelBuilder()
    x = m.input((1, 6, 6, 3))
    scales = list(np.linspace(0.04, 0.2, 4))
    w = QTensor((4, 3, 3, 3), "int4", scale=scales, zero_point=[0] * 4, quantized_dimension=0,
                data=rng.integers(-8, 8, (4, 3, 3, 3)))
    b = bias(rng, 0.05, scales)
    o = m.tensor(act((1, 6, 6, 4), 0.1, -5))
    m.g.add_op("CONV_2D", [x, m.tensor(w), m.tensor(b)], [o],
               dict(padding="SAME", fused_activation_function="RELU"), version=7)
    return m.build([o])


def hybrid_fc():
    rng = np.random.default_rng(0)
    m = ModelBuilder()
    xi = m.tensor(QTensor((1, 16), "float32"))
    m.inputs.append(xi)
    w = m.tensor(QTensor((8, 16), "int8", scale=[0.01], zero_point=[0],
                         data=rng.integers(-127, 128, (8, 16))))
    b = m.tensor(QTensor((8,), "float32", data=rng.standard_normal(8)))
    o = m.tensor(QTensor((1, 8), "float32"))
    m.g.add_op("FULLY_CONNECTED", [xi, w, b], [o],
               dict(fused_activation_function="NONE", asymmetric_quantize_inputs=True), version=9)
    return m.build([o])


def float_conv(with_softmax=True):
    rng = np.random.default_rng(0)
    m = ModelBuilder()
    xi = m.tensor(QTensor((1, 6, 6, 3), "float32"))
    m.inputs.append(xi)
    w = m.tensor(QTensor((4, 3, 3, 3), "float32", data=rng.standard_normal((4, 3, 3, 3))))
    b = m.tensor(QTensor((4,), "float32", data=rng.standard_normal(4)))
    o = m.tensor(QTensor((1, 6, 6, 4), "float32"))
    m.g.add_op("CONV_2D", [xi, w, b], [o], dict(padding="SAME"), version=1)
    if not with_softmax:
        return m.build([o])
    r = m.tensor(QTensor((1, 6, 6, 4), "float32"))
    m.g.add_op("SOFTMAX", [o], [r], dict(beta=1.0))
    return m.build([r])


def single(op_builder):
    def build():
        m = ModelBuilder()
        x = m.input((1, 8, 8, 16))
        return m.build([op_builder(m, x)])
    return build


# (id, model builder, expected: "npu" or (rule, substring of the reason), host_kind)
SINGLE_NODE_CASES = [
    ("conv_same_relu", lambda: single_conv(), "npu", False),
    ("conv_valid_stride2", lambda: single_conv(stride=2, padding="VALID"), "npu", False),
    ("conv_stride3", lambda: single_conv(stride=3), "npu", False),
    ("conv_stride4", lambda: single_conv(stride=4), "npu", False),  # space-to-depth
    ("conv_stride4_same_ragged", lambda: single_conv(hw=10, stride=4),
     ("stride", "stride 4x4: the input height 10 is not a multiple of the stride 4"), False),
    ("conv_kernel16_stride16", lambda: single_conv(hw=32, k=16, stride=16, padding="VALID"), "npu",
     False),
    ("conv_dilation2", lambda: single_conv(dilation=2), "npu", False),  # phases
    ("conv_dilation2_stride2", lambda: single_conv(dilation=2, stride=2, padding="VALID"),
     ("dilation", "dilation 2x2 with stride 2x2"), False),
    ("conv_grouped_v6", lambda: single_conv(hw=8, groups=1, version=6), "npu", False),
    ("conv_kernel15", lambda: single_conv(hw=17, k=15, padding="VALID"), "npu", False),
    ("conv_kernel16", lambda: single_conv(hw=17, k=16, padding="VALID"), ("kernel_size", "kernel 16x16"), False),
    ("conv_relu_n1", lambda: single_conv(activation="RELU_N1_TO_1"), "npu", False),
    ("conv_tanh_fused", lambda: single_conv(activation="TANH"), ("fused_activation", "TANH"), False),
    ("conv_version4", lambda: single_conv(version=4), ("op_version", "version 4"), False),
    ("conv_int16x8", int16x8_conv, "npu", False),  # DATA_FORM 01 (NACC_SPEC §9)
    ("fc_hybrid", hybrid_fc, ("hybrid", "dynamic-range"), False),
    ("conv_int4", int4_conv, "npu", False),  # DATA_FORM 10 (NACC_SPEC §9)
    ("conv_float", lambda: float_conv(with_softmax=False), ("float32", "float32 op"), True),
    ("depthwise", single(lambda m, x: m.depthwise(x)), "npu", False),
    ("depthwise_mult2", single(lambda m, x: m.depthwise(x, multiplier=2)), "npu", False),
    ("depthwise_stride4", single(lambda m, x: m.depthwise(x, stride=4)), ("stride", "4x4"), False),
    ("fc", single(lambda m, x: m.fully_connected(m.reshape(x, (1, 1024)), 10)), "npu", False),
    ("fc_keep_num_dims", single(lambda m, x: m.fully_connected(
        m.reshape(x, (1, 1024)), 10, keep_num_dims=True)), ("unsupported_options", "keep_num_dims"), False),
    ("softmax", single(lambda m, x: m.softmax(x)), ("npu_op_kind", "no NPU implementation"), True),
    ("max_pool", single(lambda m, x: m.pool("MAX_POOL_2D", x, 3, 2, "SAME")), "npu", False),
    ("avg_pool_2x2", single(lambda m, x: m.pool("AVERAGE_POOL_2D", x, 2, 2)), "npu", False),
    # Any window up to 15: depthwise region passes (docs/compiler.md "AVERAGE_POOL_2D").
    ("avg_pool_3x3", single(lambda m, x: m.pool("AVERAGE_POOL_2D", x, 3, 1)), "npu", False),
    ("avg_pool_stride4", single(lambda m, x: m.pool("AVERAGE_POOL_2D", x, 4, 4)), "npu", False),
    # MEAN over H and W: one depthwise pass (docs/compiler.md "MEAN").
    ("mean_hw", single(lambda m, x: m.mean(x)), "npu", False),
    ("add", single(lambda m, x: m.add(x, x)), "npu", False),
    ("relu", single(lambda m, x: m.unary("RELU", x, version=2)), "npu", False),
    ("logistic", single(lambda m, x: m.unary(
        "LOGISTIC", x, QTensor((1, 8, 8, 16), "int8", scale=1 / 256, zero_point=-128), version=2)),
     "npu", False),
    ("tanh_bad_output", single(lambda m, x: m.unary(
        "TANH", x, QTensor((1, 8, 8, 16), "int8", scale=1 / 128, zero_point=3), version=2)),
     ("sigmoid_tanh_output_quantization", "zero point 3"), False),
]


@pytest.mark.parametrize("case,build,expected,host_kind", SINGLE_NODE_CASES,
                         ids=[c[0] for c in SINGLE_NODE_CASES])
def test_single_node_decision(case, build, expected, host_kind):
    model = build()
    report, interp = prepare(model)
    assert_same_as_reference(model, interp)
    decisive = [n for n in report.nodes if n.op not in ("RESHAPE",)]
    node = decisive[-1]
    if expected == "npu":
        assert npu_ok(node), node.reasons
        return
    rule, detail = expected
    assert not node.claimed and node.partition == -1
    assert node.host_kind == host_kind
    assert node.reasons[0].rule == rule, node.reasons
    assert detail in node.reasons[0].detail, node.reasons[0]
    assert node.reasons[0].text  # the rule text is always given


def conv_softmax_conv():
    m = ModelBuilder()
    x = m.input((1, 8, 8, 8))
    a = m.conv(x, 8, k=1, name="small")           # 8*8*8*8 = 4096 MACs
    s = m.softmax(a, name="softmax")
    # SAME 3x3 over 8x8: 22 of the 24 taps per axis land on the input (ir::op_macs
    # counts no padding taps), 22*22*8*16 = 61952 MACs
    b = m.conv(s, 16, k=3, name="big")
    return m.build([b])


def test_host_op_in_the_middle_splits_partitions():
    report, _ = prepare(conv_softmax_conv())
    (sg,) = report.subgraphs
    assert sg.total_nodes == 3
    by_name = {n.name: n for n in sg.nodes}
    assert npu_ok(by_name["small"]) and npu_ok(by_name["big"])
    assert by_name["softmax"].host_kind and by_name["softmax"].reasons[0].rule == "npu_op_kind"


def test_fragmentation_guard():
    report, _ = prepare(conv_softmax_conv(), min_partition_macs=10000)
    by_name = {n.name: n for n in report.nodes}
    small = by_name["small"]
    assert not small.claimed and small.reasons[-1].rule == "min_partition_macs"
    # the one wording of csrc/partition/policy.h, as the EP reports it
    assert small.reasons[-1].detail == "fragmentation guard: its partition (1 op) does 4096 MACs"
    assert small.reasons[-1].text == ("partitions must do at least min_partition_macs = 10000 MACs "
                                      "(the host round trip would cost more than it saves)")
    assert npu_ok(by_name["big"])
    assert by_name["small"].macs == 4096 and by_name["big"].macs == 61952


def test_partition_macs_are_the_device_count():
    """One MAC count (ir::op_macs): the partition's MACs in the report before
    any run are what the device counts when it runs it (padding taps excluded
    on both sides: strided SAME conv, depthwise, fully connected)."""
    m = ModelBuilder()
    x = m.input((1, 9, 7, 8))
    a = m.conv(x, 8, k=3, stride=2, name="c")
    b = m.depthwise(a, k=3, name="dw")
    o = m.fully_connected(m.reshape(b, (1, 5 * 4 * 8)), 10, name="fc")
    d = nacc.load_delegate(log_level="off")
    interp = make_interpreter(m.build([o]), delegates=[d])
    interp.allocate_tensors()
    interp.invoke()
    (p,) = d.report().partitions
    nodes = {n.name: n.macs for n in d.report().nodes}
    # valid taps of the 3-tap windows: SAME stride 2 over 9 rows -> 2+3+3+3+2 = 13,
    # over 7 columns -> 2+3+3+2 = 10; SAME stride 1 over 5 x 4 -> 13 x 10
    assert nodes == {"c": 13 * 10 * 8 * 8, "dw": 13 * 10 * 8, "fc": 160 * 10} | {
        k: v for k, v in nodes.items() if k not in ("c", "dw", "fc")}
    device = sum(op["macs"] for op in p.last_ops)
    assert p.macs == device > 0, (p.macs, device, p.last_ops)


def test_views_only_partition_stays_on_host():
    m = ModelBuilder()
    x = m.input((1, 4, 4, 8))
    s = m.softmax(x)
    r = m.reshape(s, (1, 128))
    o = m.softmax(r)
    report, _ = prepare(m.build([o]))
    (reshape,) = [n for n in report.nodes if n.op == "RESHAPE"]
    assert not reshape.claimed and reshape.reasons[-1].rule == "partition_views_only"


def test_float_io_model_edges_stay_on_host():
    """QUANTIZE float->int8 and DEQUANTIZE at the edges are host kinds (info), not warnings."""
    m = ModelBuilder()
    xf = m.tensor(QTensor((1, 8, 8, 3), "float32"))
    m.inputs.append(xf)
    xq = m.tensor(act((1, 8, 8, 3)))
    m.g.add_op("QUANTIZE", [xf], [xq])
    m.meta[xq] = act((1, 8, 8, 3))
    c = m.conv(xq, 4, name="conv")
    of = m.tensor(QTensor((1, 8, 8, 4), "float32"))
    m.g.add_op("DEQUANTIZE", [c], [of], version=2)
    report, _ = prepare(m.build([of]))
    ops = {n.op: n for n in report.nodes}
    assert ops["QUANTIZE"].host_kind and ops["QUANTIZE"].reasons[0].rule == "float_quantize"
    assert ops["DEQUANTIZE"].host_kind
    assert npu_ok(ops["CONV_2D"])


def test_float_model_untouched(capfd):
    report, interp = prepare(float_conv(), log_level="info")
    assert report.claimed_nodes == 0 and all(n.host_kind for n in report.nodes)
    err = capfd.readouterr().err
    assert "Warning" not in err
    assert "Info: CONV_2D runs on the host (float32 op" in err
    assert "NACC delegate: claimed 0 of 2 nodes in 0 partitions" in err
    interp.allocate_tensors()
    x = np.random.default_rng(0).standard_normal((1, 6, 6, 3)).astype(np.float32)
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()


def test_fallback_log_two_levels_once_per_model(capfd):
    model = conv_softmax_conv()
    d = nacc.load_delegate(log_level="info")
    first = make_interpreter(model, delegates=[d])
    second = make_interpreter(model, delegates=[d])  # same model, same delegate: logged once
    err = capfd.readouterr().err
    lines = [l for l in err.splitlines() if l.startswith("NACC delegate")]
    assert sum(l.startswith("NACC delegate: claimed") for l in lines) == 1
    assert sum(l.startswith("NACC delegate: Info: SOFTMAX runs on the host") for l in lines) == 1
    assert len(d.report().subgraphs) == 2  # one entry per live interpreter subgraph
    del first, second


def test_log_level_off_is_silent(capfd):
    prepare(conv_softmax_conv(), log_level="off")
    assert "NACC" not in capfd.readouterr().err


def test_warning_names_node_and_rule(capfd):
    prepare(single_conv(hw=17, k=16, padding="VALID"), log_level="warning")
    err = capfd.readouterr().err
    assert ("NACC delegate: Warning: CONV_2D 't1' (node 0) stays on the host: kernel 16x16 \u2014 "
            "kernel height and width must be in [1, 15] (NACC_KERNEL.K_SIZE_X/Y)") in err
    assert "claimed 0 of 1" not in err  # the summary is info level


def test_strict_mode_fails_with_the_host_nodes():
    d = nacc.load_delegate(fallback="error", log_level="off")
    with pytest.raises((RuntimeError, ValueError), match="(?s)fallback=error.*SOFTMAX 'softmax' \\(node 1\\): no NPU implementation"):
        make_interpreter(conv_softmax_conv(), delegates=[d])


def test_strict_mode_rejects_float_model():
    d = nacc.load_delegate(fallback="error", log_level="off")
    with pytest.raises((RuntimeError, ValueError), match="2 of 2 nodes would stay on the host"):
        make_interpreter(float_conv(), delegates=[d])


def test_report_structure():
    report, _ = prepare(conv_softmax_conv())
    (sg,) = report.subgraphs
    assert sg.summary.startswith("NACC delegate: claimed ")
    assert [n.node for n in sg.nodes] == [0, 1, 2]
    assert report.nacc_version == nacc.__version__
    assert str(report).startswith("NACC delegate: claimed")


def test_every_subgraph_is_prepared():
    """IF's then / else subgraphs get their own decisions and partitions."""
    from delegate_models import if_model

    report, interp = prepare(if_model())
    assert [s.total_nodes for s in report.subgraphs] == [1, 1, 2]
    main, then, other = report.subgraphs
    assert main.nodes[0].op == "IF" and main.nodes[0].host_kind
    assert all(npu_ok(n) for n in then.nodes + other.nodes)
    assert [n.name for n in other.nodes] == ["else_conv0", "else_conv1"]

"""The EP's int4 weights (issue 16): QDQ Conv / Gemm / MatMul units whose
constant weights are INT4 (QInt4, opset 21) are claimed only with the provider
option int4_weights=1 and run with the NPU's int4 weights (DATA_FORM 10).

ONNX Runtime's CPU EP dequantizes 4-bit weights and runs the float op, so
there is no exact oracle: each test measures the number of output elements
that differ from the CPU EP (printed; `-s` shows it) and asserts at most one
quantization step per element. With the option off every such unit stays on
the host with its reason and the output is the CPU EP's.
"""
import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

import nacc.onnxruntime as nort  # noqa: E402
import onnx_models as om  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Specified .providers.:UserWarning")

ON = {"min_partition_macs": "0", "int4_weights": "1"}
OFF = {"min_partition_macs": "0"}
OFF_REASON = ("are int4 (QInt4): int4 weights are claimed only with the provider option "
              "int4_weights=1")


@pytest.fixture(scope="module", autouse=True)
def registered():
    nort.register()


def report():
    return nort.partition_reports()[-1]


def claimed_ops(rep):
    return sorted(u["op_type"] for p in rep["partitions"] for u in p["units"])


def reasons(rep):
    return {h["op_type"]: h["reason"] for h in rep["host_nodes"]
            if h["op_type"] not in ("QuantizeLinear", "DequantizeLinear")}


def _steps(model, options, seed):
    """(claimed op types, |nacc - cpu| in output steps) of a qdq_unit model (8-bit output)."""
    feeds = om.int8_feeds(model, seed=seed)
    got = om.session(model, "nacc", options).run(None, feeds)[0]
    claimed = claimed_ops(report())
    ref = om.session(model, ["CPUExecutionProvider"]).run(None, feeds)[0]
    return claimed, np.abs(got.astype(np.int64) - ref.astype(np.int64)), report()


UNITS = [
    # id, float model, per-channel, activation dtype, op
    ("conv3x3", lambda: om.conv(c_in=8, c_out=16, hw=(10, 10), k=3), False, "int8", "Conv"),
    ("conv3x3_per_channel", lambda: om.conv(c_in=8, c_out=16, hw=(10, 10), k=3), True, "int8",
     "Conv"),
    ("conv3x3_uint8", lambda: om.conv(c_in=8, c_out=16, hw=(10, 10), k=3), False, "uint8",
     "Conv"),
    ("conv3x3_per_channel_uint8", lambda: om.conv(c_in=8, c_out=16, hw=(10, 10), k=3), True,
     "uint8", "Conv"),
    ("conv1x1_stride2", lambda: om.conv(c_in=12, c_out=6, hw=(9, 9), k=1, stride=2,
                                        pads=(0, 0, 0, 0)), True, "int8", "Conv"),
    ("conv1x1_no_bias_uint8", lambda: om.conv(c_in=7, c_out=5, hw=(8, 8), k=1,
                                              pads=(0, 0, 0, 0), bias=False), False, "uint8",
     "Conv"),
    ("conv5x5_no_bias", lambda: om.conv(c_in=3, c_out=5, hw=(12, 12), k=5, pads=(2, 2, 2, 2),
                                        bias=False), True, "int8", "Conv"),
    # odd element counts: 3*5*3*3 = 135 weights (the last byte half used)
    ("conv3x3_odd", lambda: om.conv(c_in=3, c_out=5, hw=(7, 7), k=3), False, "int8", "Conv"),
    ("gemm", lambda: om.gemm(m=3, k=64, n=10), True, "int8", "Gemm"),
    ("gemm_no_trans_uint8", lambda: om.gemm(m=2, k=40, n=17, trans_b=0), False, "uint8", "Gemm"),
    ("matmul", lambda: om.matmul(m=4, k=32, n=16), False, "int8", "MatMul"),
    ("matmul_per_channel", lambda: om.matmul(m=4, k=33, n=15), True, "int8", "MatMul"),
]


@pytest.mark.parametrize("builder,per_channel,dtype,op", [c[1:] for c in UNITS],
                         ids=[c[0] for c in UNITS])
def test_int4_units_with_option_within_one_step(builder, per_channel, dtype, op):
    total = differ = 0
    for seed in range(3):
        model = om.qdq_unit(builder(), dtype=dtype, weight_dtype="int4", per_channel=per_channel,
                            seed=seed)
        claimed, steps, rep = _steps(model, ON, seed)
        assert claimed == [op], (claimed, reasons(rep))
        assert steps.max() <= 1, steps.max()
        total += steps.size
        differ += int((steps > 0).sum())
    print(f"int4 {op} per_channel={per_channel} {dtype}: {differ} of {total} elements "
          f"differ by one step")
    # the option off: declined with its reason, the output is the CPU EP's
    claimed, steps, rep = _steps(model, OFF, 0)
    assert claimed == [] and steps.max() == 0
    assert OFF_REASON in reasons(rep)[op], reasons(rep)


def test_int4_weights_option_values():
    """The option is in the EP's table, default 0; other values are rejected."""
    spec = {s.name: s for s in nort.provider_option_specs()}["int4_weights"]
    assert (spec.allowed, spec.default) == ("0 or 1", "0")
    model = om.qdq_unit(om.conv(), weight_dtype="int4")
    with pytest.raises(Exception, match="int4_weights='2': must be 0 or 1"):
        om.session(model, "nacc", {"int4_weights": "2"})


def _declined(model, needle):
    om.session(model, "nacc", ON)
    rep = report()
    assert claimed_ops(rep) == [], rep
    r = reasons(rep)["Conv"]
    assert needle in r, r
    return r


def test_int4_uint4_declined():
    _declined(om.qdq_unit(om.conv(), weight_dtype="uint4"),
              "are uint4 (QUInt4): 4-bit weights need int4 (QInt4) with zero point 0")


def test_int4_nonzero_zero_point_declined():
    _declined(om.qdq_unit(om.conv(), weight_dtype="int4", int4_zero=1),
              "need zero point 0 (has 1)")


def test_int4_block_size_declined():
    """Blocked quantization (DequantizeLinear block_size, opset 21): one scale
    per block of input channels; the NPU has one per output channel."""
    m = onnx.load_from_string(om.qdq_unit(om.conv(c_in=8, c_out=16), weight_dtype="int4",
                                          per_channel=True))
    inits = {i.name: i for i in m.graph.initializer}
    ws = onnx.numpy_helper.to_array(inits["w_s"])
    s = np.repeat(ws.reshape(16, 1, 1, 1), 2, axis=1) * np.ones((16, 2, 3, 3), np.float32)
    inits["w_s"].CopyFrom(onnx.numpy_helper.from_array(s.astype(np.float32), "w_s"))
    inits["w_z"].CopyFrom(onnx.helper.make_tensor("w_z", onnx.TensorProto.INT4, s.shape,
                                                  [0] * s.size))
    dq = next(n for n in m.graph.node if n.name == "w_dq")
    del dq.attribute[:]
    dq.attribute.extend([onnx.helper.make_attribute("axis", 1),
                         onnx.helper.make_attribute("block_size", 4)])
    onnx.checker.check_model(m)
    model = m.SerializeToString()
    om.session(model, ["CPUExecutionProvider"]).run(None, om.int8_feeds(model))  # ORT runs it
    _declined(model, "are int4 with blocked quantization (block_size 4)")


def test_int4_depthwise_declined():
    r = _declined(om.qdq_unit(om.conv(c_in=8, c_out=8, k=3, group=8), weight_dtype="int4",
                              per_channel=True), "int4")
    assert "depthwise" in r.lower(), r


def test_int4_small_cnn():
    """quantize_static(weight_type=QInt4) small CNN: with the option the two
    Conv units and the Gemm head are claimed (the int4 depthwise Conv is
    declined: no TFLite reference kernel); logits within one step per Conv."""
    model = om.quantize(om.small_cnn(), activation="int8", weight="int4")
    m = onnx.load_from_string(model)
    assert any(i.data_type == onnx.TensorProto.INT4 for i in m.graph.initializer)
    feeds = om.input_feeds(model, seed=1)[0]
    ref = om.session(model, ["CPUExecutionProvider"]).run(None, feeds)[0]
    off = om.session(model, "nacc", OFF).run(None, feeds)[0]
    rep = report()
    assert [u for p in rep["partitions"] for u in p["units"]
            if u["op_type"] in ("Conv", "Gemm")] == []
    np.testing.assert_array_equal(off, ref)
    got = om.session(model, "nacc", ON).run(None, feeds)[0]
    rep = report()
    claimed = claimed_ops(rep)
    assert claimed.count("Conv") == 2 and "Gemm" in claimed, (claimed, reasons(rep))
    assert "depthwise" in reasons(rep)["Conv"].lower(), reasons(rep)
    # the float logits: the last DequantizeLinear's scale is one step
    out_dq = next(n for n in m.graph.node if n.output[0] == m.graph.output[0].name)
    ys = float(onnx.numpy_helper.to_array(
        next(i for i in m.graph.initializer if i.name == out_dq.input[1])))
    steps = np.rint(np.abs(got.astype(np.float64) - ref.astype(np.float64)) / ys)
    print(f"int4 small_cnn: {rep['claimed_nodes']} of {rep['total_nodes']} nodes claimed "
          f"({claimed}), {len(rep['partitions'])} partitions; logits differ in "
          f"{int((steps > 0).sum())} of {steps.size}, max {int(steps.max())} steps")
    assert steps.max() <= 2  # two int4 units in series before the logits


def test_int4_full_range_weights():
    """Random INT4 weights over the whole range [-8, 7] (the per-tensor Conv's
    initializer replaced): -8 sign-extends, the high nibble is element 2i+1."""
    rng = np.random.default_rng(4)
    total = differ = 0
    for seed, dtype in ((0, "int8"), (1, "uint8")):
        m = onnx.load_from_string(om.qdq_unit(om.conv(c_in=5, c_out=7, hw=(9, 9), k=3),
                                              dtype=dtype, weight_dtype="int4", seed=seed))
        init = next(i for i in m.graph.initializer if i.name == "w_q")
        vals = rng.integers(-8, 8, size=tuple(init.dims))
        vals.flat[:2] = (-8, 7)
        init.CopyFrom(onnx.helper.make_tensor("w_q", onnx.TensorProto.INT4, vals.shape,
                                              vals.ravel().tolist()))
        model = m.SerializeToString()
        claimed, steps, rep = _steps(model, ON, seed)
        assert claimed == ["Conv"], reasons(rep)
        assert steps.max() <= 1, steps.max()
        total += steps.size
        differ += int((steps > 0).sum())
    print(f"int4 Conv full-range weights: {differ} of {total} elements differ by one step")

"""ONNX Split on the EP (issue 15, item 8): one node unit with an output per
part — DequantizeLinear -> Split -> a QuantizeLinear per output (QDQ), or an
int8 Split (QOperator models) — translated into one IR SLICE with an output
per part (a byte copy of each extent). Every output is compared with the CPU
EP's, zero differing elements; a requantizing output is rescaled with ONNX
Runtime's Quantize(Dequantize(x)) table; a ShuffleNet-v2-style block (Split channels -> branch convs ->
Concat -> channel shuffle) runs in one partition."""
import numpy as np
import pytest

pytest.importorskip("onnxruntime")
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import onnx_models as om  # noqa: E402


def _nort():
    import nacc.onnxruntime as nort
    nort.register()
    return nort


def _opt(level):
    import onnxruntime as ort
    return {"all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
            "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC}[level]


def _finish(nodes, inputs, outputs, inits, opset, ms=False):
    g = helper.make_graph(nodes, "split", inputs, outputs, inits)
    ops = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("com.microsoft", 1)] if ms else [])
    m = helper.make_model(g, opset_imports=ops, ir_version=om.IR_VERSION)
    m = onnx.shape_inference.infer_shapes(m)
    onnx.checker.check_model(m)
    return m.SerializeToString()


def _split_node(src, outs, axis, sizes, opset, num_outputs, inits):
    """A Split node: sizes as input (opset >= 13), attribute (older) or none
    (equal parts; `num_outputs` in opset 18)."""
    attrs = {"axis": axis}
    ins = [src]
    if sizes is not None:
        if opset >= 13:
            ins.append("split_sizes")
            inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "split_sizes"))
        else:
            attrs["split"] = list(sizes)
    elif opset >= 18:
        attrs["num_outputs"] = num_outputs
    return helper.make_node("Split", ins, outs, name="split", **attrs)


def qdq_split(shape, axis, sizes=None, n=2, opset=17, dtype="int8", scale=0.05, zp=-3,
              out_q=None):
    """8-bit x -> DequantizeLinear -> Split -> QuantizeLinear per output ->
    8-bit graph outputs, each at the input's quantization (output 1 at
    `out_q` if given; zero points in int8 terms, + 128 for uint8)."""
    et = TensorProto.INT8 if dtype == "int8" else TensorProto.UINT8
    npt = np.int8 if dtype == "int8" else np.uint8
    zp0, zp = zp, zp if dtype == "int8" else zp + 128
    n_out = len(sizes) if sizes is not None else n
    inits = [numpy_helper.from_array(np.array(scale, np.float32), "s"),
             numpy_helper.from_array(np.array(zp, npt), "z")]
    nodes = [helper.make_node("DequantizeLinear", ["x_q", "s", "z"], ["x"], name="dq")]
    nodes.append(_split_node("x", [f"y{k}" for k in range(n_out)], axis, sizes, opset, n_out, inits))
    for k in range(n_out):
        s, z = "s", "z"
        if out_q is not None and k == 1:
            inits += [numpy_helper.from_array(np.array(out_q[0], np.float32), "s1"),
                      numpy_helper.from_array(np.array(out_q[1] + zp - zp0, npt), "z1")]
            s, z = "s1", "z1"
        nodes.append(helper.make_node("QuantizeLinear", [f"y{k}", s, z], [f"y{k}_q"], name=f"q{k}"))
    return _finish(nodes, [helper.make_tensor_value_info("x_q", et, shape)],
                   [helper.make_tensor_value_info(f"y{k}_q", et, None) for k in range(n_out)],
                   inits, opset)


def qop_split(shape, axis, sizes=None, n=2, opset=17):
    """QOperator form: int8 x -> QLinearConv 1x1 -> int8 Split -> int8
    outputs (the Split's quantization is the QLinearConv's)."""
    c = shape[1]
    rng = np.random.default_rng(5)
    n_out = len(sizes) if sizes is not None else n
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "xs"),
             numpy_helper.from_array(np.array(-2, np.int8), "xz"),
             numpy_helper.from_array(rng.integers(-60, 61, (c, c, 1, 1)).astype(np.int8), "w"),
             numpy_helper.from_array(np.array(0.02, np.float32), "ws"),
             numpy_helper.from_array(np.array(0, np.int8), "wz"),
             numpy_helper.from_array(np.array(0.1, np.float32), "ys"),
             numpy_helper.from_array(np.array(5, np.int8), "yz"),
             numpy_helper.from_array(rng.integers(-300, 300, (c,)).astype(np.int32), "b")]
    nodes = [helper.make_node("QLinearConv", ["x_q", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                              ["t"], name="conv")]
    nodes.append(_split_node("t", [f"y{k}" for k in range(n_out)], axis, sizes, opset, n_out, inits))
    return _finish(nodes, [helper.make_tensor_value_info("x_q", TensorProto.INT8, shape)],
                   [helper.make_tensor_value_info(f"y{k}", TensorProto.INT8, None)
                    for k in range(n_out)], inits, opset)


def assert_all_exact(model, seed=3, cores="1", opt="all", expect_host=("QuantizeLinear",
                                                                        "DequantizeLinear")):
    """Every output of `model` on the EP equals the CPU EP's; only
    `expect_host` op types stay on the host. Returns the partition report."""
    nort = _nort()
    feeds = om.int8_feeds(model, seed=seed)
    cpu = om.session(model, ["CPUExecutionProvider"], opt_level=_opt(opt)).run(None, feeds)
    s = om.session(model, "nacc", {"min_partition_macs": 0, "cores": cores,
                                   "ort_optimization_level": opt}, opt_level=_opt(opt))
    rep = nort.partition_reports()[-1]
    assert len(rep["partitions"]) == 1, rep
    assert all(h["op_type"] in expect_host for h in rep["host_nodes"]), rep["host_nodes"]
    assert any(u["op_type"] == "Split" for u in rep["partitions"][0]["units"]), rep
    got = s.run(None, feeds)
    assert len(got) == len(cpu)
    for k, (a, b) in enumerate(zip(got, cpu)):
        assert a.dtype == b.dtype and a.shape == b.shape, (k, a.dtype, b.dtype, a.shape, b.shape)
        assert int(np.count_nonzero(a != b)) == 0, f"output {k}: {np.count_nonzero(a != b)} differ"
    return rep


# (id, shape, axis, sizes, n, opset)
CASES = [
    ("c-equal-op13", (1, 16, 5, 6), 1, None, 2, 13),
    ("c-unequal-op13", (1, 24, 4, 5), 1, [4, 12, 8], 3, 13),
    ("h-unequal-op17", (1, 8, 13, 7), 2, [5, 8], 2, 17),
    ("w-equal3-op17", (1, 8, 6, 12), 3, None, 3, 17),
    ("c-num-outputs-op18", (1, 20, 4, 4), 1, None, 4, 18),
    ("h-num-outputs-uneven-op18", (1, 6, 11, 5), 2, None, 3, 18),
    ("w-sizes-op18", (1, 4, 5, 9), -1, [2, 7], 2, 18),
    ("c-attr-op11", (1, 12, 3, 3), 1, [3, 9], 2, 11),
    ("rank2", (3, 40), 1, [8, 32], 2, 13),
]


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_qdq_split_exact(case, dtype):
    _, shape, axis, sizes, n, opset = case
    i = CASES.index(case)
    assert_all_exact(qdq_split(shape, axis, sizes, n, opset, dtype), seed=i,
                     cores="8" if i % 2 else "1", opt="basic" if i % 3 == 2 else "all")


@pytest.mark.parametrize("opt", ["all", "basic"])
@pytest.mark.parametrize("case", CASES[:7], ids=[c[0] for c in CASES[:7]])
def test_qoperator_split_exact(case, opt):
    _, shape, axis, sizes, n, opset = case
    assert_all_exact(qop_split(shape, axis, sizes, n, opset), seed=7, opt=opt, expect_host=())


def _host_reason(model, op_type):
    nort = _nort()
    feeds = om.int8_feeds(model, seed=1)
    want = om.session(model, ["CPUExecutionProvider"]).run(None, feeds)
    got = om.session(model, "nacc", {"min_partition_macs": 0}).run(None, feeds)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    rep = nort.partition_reports()[-1]
    hs = [h for h in rep["host_nodes"] if h["op_type"] == op_type]
    assert hs, rep
    return hs[0]["reason"]


# (shape, axis, sizes, output 1's (scale, zero point)): coarser, finer (saturating)
REQUANT = [((1, 8, 4, 4), 1, [4, 4], (0.1, 4)),
           ((1, 6, 9, 5), 2, [3, 6], (0.021, -7)),
           ((1, 4, 5, 8), 3, [2, 3, 3], (0.05, 20)),
           ((1, 12, 3, 3), 1, None, (0.0731, -100)),
           ((1, 16, 16, 16), 1, [8, 8], (0.0123, 3))]  # 2048 values: every int8 input


@pytest.mark.parametrize("opt", ["all", "basic"])
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("case", REQUANT, ids=[f"axis{c[1]}-s{c[3][0]}" for c in REQUANT])
def test_requantizing_split_exact(case, dtype, opt):
    """Output 1 at another quantization: the SLICE part rescaled by ONNX
    Runtime's Quantize(Dequantize(x)) table, equal to the CPU EP's."""
    shape, axis, sizes, out_q = case
    model = qdq_split(shape, axis, sizes, 2, 13, dtype, out_q=out_q)
    rep = assert_all_exact(model, seed=REQUANT.index(case), opt=opt)
    assert rep["partitions"][0]["ir_ops"] == 2, rep


def test_batch_axis_declined():
    m = qdq_split((2, 4, 3, 3), 0, [1, 1])
    assert "not the batch" in _host_reason(m, "Split")


def test_output_feeding_float_op_declined():
    """An output consumed by a float op (no QuantizeLinear of its own) is not a unit."""
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.int8), "z")]
    nodes = [helper.make_node("DequantizeLinear", ["x_q", "s", "z"], ["x"], name="dq"),
             helper.make_node("Split", ["x"], ["a", "b"], name="split", axis=1),
             helper.make_node("QuantizeLinear", ["a", "s", "z"], ["a_q"], name="q"),
             helper.make_node("Relu", ["b"], ["b_r"], name="relu")]
    m = _finish(nodes, [helper.make_tensor_value_info("x_q", TensorProto.INT8, (1, 4, 2, 2))],
                [helper.make_tensor_value_info("a_q", TensorProto.INT8, None),
                 helper.make_tensor_value_info("b_r", TensorProto.FLOAT, None)], inits, 13)
    assert "not quantized by its own QuantizeLinear" in _host_reason(m, "Split")


def test_outputs_feed_host_and_npu_nodes():
    """Split outputs that are graph outputs and feed both an NPU unit and a
    host node (Softmax) cross the partition boundary correctly."""
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"),
             numpy_helper.from_array(np.array(-1, np.int8), "z"),
             numpy_helper.from_array(np.array([2, 6], np.int64), "sz")]
    nodes = [helper.make_node("DequantizeLinear", ["x_q", "s", "z"], ["x"], name="dq"),
             helper.make_node("Split", ["x", "sz"], ["a", "b"], name="split", axis=1),
             helper.make_node("QuantizeLinear", ["a", "s", "z"], ["a_q"], name="qa"),
             helper.make_node("QuantizeLinear", ["b", "s", "z"], ["b_q"], name="qb"),
             helper.make_node("DequantizeLinear", ["b_q", "s", "z"], ["b2"], name="dqb"),
             helper.make_node("Relu", ["b2"], ["b3"], name="relu"),
             helper.make_node("QuantizeLinear", ["b3", "s", "z"], ["b3_q"], name="qr"),
             helper.make_node("DequantizeLinear", ["a_q", "s", "z"], ["a2"], name="dqa"),
             helper.make_node("Softmax", ["a2"], ["sm"], name="softmax", axis=1)]
    m = _finish(nodes, [helper.make_tensor_value_info("x_q", TensorProto.INT8, (1, 8, 3, 4))],
                [helper.make_tensor_value_info("b_q", TensorProto.INT8, None),
                 helper.make_tensor_value_info("b3_q", TensorProto.INT8, None),
                 helper.make_tensor_value_info("sm", TensorProto.FLOAT, None)], inits, 13)
    rep = assert_all_exact(m, expect_host=("Softmax", "DequantizeLinear", "QuantizeLinear"))
    assert {u["op_type"] for u in rep["partitions"][0]["units"]} == {"Split", "Relu"}, rep


def shufflenet_v2_block(c=16, hw=8, units=2, shuffle=True):
    """A 3x3 conv stem, then ShuffleNet-v2 basic units: Split channels in halves -> (identity,
    1x1 conv-relu -> 3x3 depthwise -> 1x1 conv-relu) -> Concat -> channel
    shuffle (Reshape -> Transpose -> Reshape), twice, then a 1x1 conv;
    float32, quantized by quantize_static."""
    h = c // 2
    rng = np.random.default_rng(11)
    inits = {"sz": np.array([h, h], np.int64),
             "shape5": np.array([1, 2, h, hw, hw], np.int64),
             "shape4": np.array([1, c, hw, hw], np.int64)}
    nodes = []

    def conv(name, x, cin, cout, k, group=1, relu=True):
        inits[name + "_w"] = (rng.standard_normal((cout, cin // group, k, k)) * 0.4).astype(np.float32)
        inits[name + "_b"] = (rng.standard_normal(cout) * 0.1).astype(np.float32)
        nodes.append(helper.make_node("Conv", [x, name + "_w", name + "_b"], [name], name=name,
                                      group=group, pads=[k // 2] * 4))
        if not relu:
            return name
        nodes.append(helper.make_node("Relu", [name], [name + "_r"], name=name + "_relu"))
        return name + "_r"

    x = conv("stem", "x", c, c, 3)
    for u in range(units):
        a, b = f"u{u}_a", f"u{u}_b"
        nodes.append(helper.make_node("Split", [x, "sz"], [a, b], name=f"u{u}_split", axis=1))
        y = conv(f"u{u}_pw1", b, h, h, 1)
        y = conv(f"u{u}_dw", y, h, h, 3, group=h, relu=False)
        y = conv(f"u{u}_pw2", y, h, h, 1)
        nodes.append(helper.make_node("Concat", [a, y], [f"u{u}_cat"], name=f"u{u}_cat", axis=1))
        if not shuffle:
            x = f"u{u}_cat"
            continue
        nodes.append(helper.make_node("Reshape", [f"u{u}_cat", "shape5"], [f"u{u}_r5"], name=f"u{u}_r5"))
        nodes.append(helper.make_node("Transpose", [f"u{u}_r5"], [f"u{u}_t"], name=f"u{u}_t",
                                      perm=[0, 2, 1, 3, 4]))
        nodes.append(helper.make_node("Reshape", [f"u{u}_t", "shape4"], [f"u{u}_out"], name=f"u{u}_r4"))
        x = f"u{u}_out"
    y = conv("head", x, c, c, 1, relu=False)
    nodes.append(helper.make_node("Identity", [y], ["y"], name="out"))
    m = om.float_model(nodes, {"x": (1, c, hw, hw)}, {"y": (1, c, hw, hw)}, inits, "shufflenet_v2")
    return m


@pytest.mark.parametrize("opt", ["all", "basic"])
@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_shufflenet_v2_block_one_partition_exact(fmt, opt):
    nort = _nort()
    # 7-bit weights (reduce_range): at `all` the CPU EP runs the QDQ convs
    # with uint8 inputs on x86's u8s8 kernels, whose vpmaddubsw saturates
    # pairs of products (om.qdq_unit's weight_bits; with 8-bit weights 19 to
    # 109 of 1024 elements differ, in the plain stem -> head convs too).
    model = om.quantize(shufflenet_v2_block(), fmt=fmt, reduce_range=True)
    feeds = om.input_feeds(model, seed=2)[0]
    cpu = om.session(model, ["CPUExecutionProvider"], opt_level=_opt(opt)).run(None, feeds)
    s = om.session(model, "nacc", {"min_partition_macs": 0, "cores": "8",
                                   "ort_optimization_level": opt}, opt_level=_opt(opt))
    rep = nort.partition_reports()[-1]
    got = s.run(None, feeds)
    assert int(np.count_nonzero(got[0] != cpu[0])) == 0
    assert len(rep["partitions"]) == 1, rep
    claimed = {n["op_type"] for p in rep["partitions"] for n in p["nodes"]}
    assert {"Split", "Transpose"} <= claimed, claimed
    # only the float boundary (the input's QuantizeLinear, the output's
    # DequantizeLinear) stays on the host
    host = [h["op_type"] for h in rep["host_nodes"]]
    assert sorted(host) == ["DequantizeLinear", "QuantizeLinear"], rep["host_nodes"]
    print(f"{fmt} {opt}: claimed {rep['claimed_nodes']}/{rep['total_nodes']} nodes, 1 partition")

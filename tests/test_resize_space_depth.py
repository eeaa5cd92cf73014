"""RESIZE_NEAREST_NEIGHBOR by integer factors, SPACE_TO_DEPTH and
DEPTH_TO_SPACE (issue 15, item 8), bit-exact against TFLite 2.21 BUILTIN_REF
through the delegate (docs/compiler.md "RESIZE_NEAREST_NEIGHBOR",
"SPACE_TO_DEPTH, DEPTH_TO_SPACE"):

all three are byte copies in TFLite's int8 kernels, lowered to 1x1 max-pool
identity passes whose DMA offsets and pitches place every element: a resize
by f_h x f_w is one pass per replica (a, b) writing output pixels
(f_h*i + a, f_w*j + b); SPACE_TO_DEPTH / DEPTH_TO_SPACE one pass per row of
the block. A resize is claimed only where TFLite's own float32 index mapping
is in = out / f at every output index (align_corners mostly declines: it
is a replication only for some sizes, e.g. factor 2).

Single ops at 1, 8 and 32 cores and at 16 KB of SRAM (each case at one of them
in turn; all four with -m slow) on boundary and random inputs, the declines,
a YOLO / FPN-style model (upsample x2 of a deep feature map, concatenation
with a shallow one, a convolution) claimed in one partition, and ONNX
SpaceToDepth / DepthToSpace on the EP.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import nacc
from delegate_models import ModelBuilder, act, run
from test_mean_avgpool import assert_model_one_partition_exact
from test_slice_split import assert_all_outputs_exact, round_robin
from tflite_builder import QTensor, make_interpreter


def resize_model(shape, out_hw, align_corners=False, half_pixel_centers=False, version=None):
    m = ModelBuilder()
    x = m.input(shape)
    size = np.array(out_hw, np.int32)
    o = m.tensor(act((shape[0], out_hw[0], out_hw[1], shape[3]), 0.07, 5, name="resized"))
    version = version or (3 if half_pixel_centers else 2)
    m.g.add_op("RESIZE_NEAREST_NEIGHBOR", [x, m.tensor(QTensor((2,), "int32", data=size))], [o],
               dict(align_corners=align_corners, half_pixel_centers=half_pixel_centers),
               version=version)
    return m.build([o])


def block_model(op, shape, bs):
    m = ModelBuilder()
    x = m.input(shape)
    n, h, w, c = shape
    out = ((n, h // bs, w // bs, c * bs * bs) if op == "SPACE_TO_DEPTH"
           else (n, h * bs, w * bs, c // (bs * bs)))
    o = m.tensor(act(out, 0.07, 5, name="moved"))
    # BUILTIN_REF registers DEPTH_TO_SPACE version 1 only (its int8 kernel is the same)
    m.g.add_op(op, [x], [o], dict(block_size=bs), version=1 if op == "DEPTH_TO_SPACE" else 2)
    return m.build([o])


CASES = [
    ("resize-2x", lambda: resize_model((1, 7, 9, 16), (14, 18)), (1, 7, 9, 16)),
    ("resize-2x-half-pixel", lambda: resize_model((1, 5, 6, 8), (10, 12), half_pixel_centers=True),
     (1, 5, 6, 8)),
    ("resize-3x2", lambda: resize_model((1, 4, 5, 3), (12, 10)), (1, 4, 5, 3)),
    ("resize-3x-half-pixel", lambda: resize_model((1, 6, 6, 5), (18, 18), half_pixel_centers=True),
     (1, 6, 6, 5)),
    ("resize-1x4", lambda: resize_model((1, 8, 3, 70), (8, 12)), (1, 8, 3, 70)),
    ("resize-8x", lambda: resize_model((1, 2, 3, 4), (16, 24)), (1, 2, 3, 4)),
    # align_corners by 2 is a replication too (round((o) (n-1)/(2n-1)) = o / 2)
    ("resize-2x-align-corners", lambda: resize_model((1, 4, 5, 8), (8, 10), align_corners=True),
     (1, 4, 5, 8)),
    ("resize-2x-big", lambda: resize_model((1, 20, 20, 32), (40, 40)), (1, 20, 20, 32)),
    ("s2d-2", lambda: block_model("SPACE_TO_DEPTH", (1, 8, 6, 3), 2), (1, 8, 6, 3)),
    ("s2d-3", lambda: block_model("SPACE_TO_DEPTH", (1, 9, 12, 5), 3), (1, 9, 12, 5)),
    ("s2d-4-c16", lambda: block_model("SPACE_TO_DEPTH", (1, 16, 8, 16), 4), (1, 16, 8, 16)),
    ("d2s-2", lambda: block_model("DEPTH_TO_SPACE", (1, 5, 7, 12), 2), (1, 5, 7, 12)),
    ("d2s-3", lambda: block_model("DEPTH_TO_SPACE", (1, 4, 3, 18), 3), (1, 4, 3, 18)),
    ("d2s-2-c64", lambda: block_model("DEPTH_TO_SPACE", (1, 12, 10, 64), 2), (1, 12, 10, 64)),
]


@pytest.mark.parametrize("case,config", round_robin(CASES))
def test_copy_ops_exact(case, config):
    _, build, shape = case
    report = assert_all_outputs_exact(build(), shape, **config)
    assert len({n.partition for n in report.nodes}) == 1


def test_random_copy_ops_exact():
    """Random shapes, factors and block sizes at 4 cores and 16 KB of SRAM."""
    rng = np.random.default_rng(8)
    for _ in range(5):
        h, w, c = (int(v) for v in rng.integers(1, 12, 3))
        fh, fw = (int(v) for v in rng.integers(1, 5, 2))
        assert_all_outputs_exact(resize_model((1, h, w, c), (h * fh, w * fw),
                                              half_pixel_centers=bool(rng.random() < 0.5)),
                                 (1, h, w, c), cores=4, sram_kb=16)
        bs = int(rng.integers(2, 4))
        assert_all_outputs_exact(block_model("SPACE_TO_DEPTH", (1, h * bs, w * bs, c), bs),
                                 (1, h * bs, w * bs, c), cores=4, sram_kb=16)
        assert_all_outputs_exact(block_model("DEPTH_TO_SPACE", (1, h, w, c * bs * bs), bs),
                                 (1, h, w, c * bs * bs), cores=4, sram_kb=16)


def _reasons(model, shape):
    report = assert_all_outputs_exact(model, shape, expect_claimed=False)
    (node,) = report.nodes
    assert not node.claimed
    return " ".join(r.message for r in node.reasons)


@pytest.mark.parametrize("build,shape,expect", [
    # align_corners over 3 -> 9 rows: output 2 reads round(2 * 2/8) = round(0.5) = 1, not 0
    (lambda: resize_model((1, 3, 3, 8), (9, 9), align_corners=True), (1, 3, 3, 8),
     "output index 2 reads input 1, not 0 (align_corners) \u2014 RESIZE_NEAREST_NEIGHBOR must"),
    (lambda: resize_model((1, 4, 6, 8), (6, 9)), (1, 4, 6, 8), "6 is not a whole multiple of 4"),
    (lambda: resize_model((1, 8, 8, 8), (4, 4)), (1, 8, 8, 8), "4 is not a whole multiple of 8"),
    (lambda: resize_model((1, 2, 2, 8), (34, 34)), (1, 2, 2, 8), "17x17 = 289 replicas"),
])
def test_copy_ops_declined(build, shape, expect):
    msg = _reasons(build(), shape)
    assert expect in msg, msg


def yolo_fpn():
    """A YOLO / FPN neck step: a deep 8x8 map upsampled x2 (nearest) and
    concatenated with the 16x16 shallow map, then a 3x3 convolution; the
    shallow path also goes through SPACE_TO_DEPTH and DEPTH_TO_SPACE."""
    m = ModelBuilder(seed=9)
    x = m.input((1, 16, 16, 8))
    shallow = m.conv(x, 16, k=3, activation="RELU", out_scale=0.05, out_zp=-3)
    deep = m.conv(shallow, 24, k=3, stride=2, activation="RELU", out_scale=0.05, out_zp=-3)
    up = m.tensor(act((1, 16, 16, 24), 0.05, -3))
    m.g.add_op("RESIZE_NEAREST_NEIGHBOR", [deep, m.tensor(QTensor((2,), "int32",
                                                                  data=np.array([16, 16], np.int32)))],
               [up], dict(align_corners=False, half_pixel_centers=True), version=3)
    s2d = m.tensor(act((1, 8, 8, 64), 0.05, -3))
    m.g.add_op("SPACE_TO_DEPTH", [shallow], [s2d], dict(block_size=2), version=2)
    d2s = m.tensor(act((1, 16, 16, 16), 0.05, -3))
    m.g.add_op("DEPTH_TO_SPACE", [s2d], [d2s], dict(block_size=2), version=1)
    cat = m.tensor(act((1, 16, 16, 40), 0.05, -3))
    m.g.add_op("CONCATENATION", [up, d2s], [cat], dict(axis=3), version=2)
    y = m.conv(cat, 16, k=3, activation="RELU")
    return m.build([y])


@pytest.mark.parametrize("cores", [1, 8])
def test_yolo_fpn_one_partition_exact(cores):
    model = yolo_fpn()
    r = assert_model_one_partition_exact(model, cores)
    assert {"RESIZE_NEAREST_NEIGHBOR", "SPACE_TO_DEPTH", "DEPTH_TO_SPACE"} <= {n.op for n in r.nodes}


# ---- ONNX: SpaceToDepth / DepthToSpace on the EP against the CPU EP --------------------

def onnx_block(op, shape, bs, mode=None, scale=0.05, zp=-3):
    """int8 x -> DequantizeLinear -> op -> QuantizeLinear -> int8 y at one quantization."""
    pytest.importorskip("onnxruntime")
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    import onnx_models as om

    inits = [numpy_helper.from_array(np.array(scale, np.float32), "s"),
             numpy_helper.from_array(np.array(zp, np.int8), "z")]
    attrs = {"blocksize": bs}
    if mode:
        attrs["mode"] = mode
    nodes = [helper.make_node("DequantizeLinear", ["x_q", "s", "z"], ["x"], name="dq"),
             helper.make_node(op, ["x"], ["y"], name=op.lower(), **attrs),
             helper.make_node("QuantizeLinear", ["y", "s", "z"], ["y_q"], name="q")]
    g = helper.make_graph(nodes, op, [helper.make_tensor_value_info("x_q", TensorProto.INT8, shape)],
                          [helper.make_tensor_value_info("y_q", TensorProto.INT8, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", om.OPSET)], ir_version=om.IR_VERSION)
    m = onnx.shape_inference.infer_shapes(m)
    onnx.checker.check_model(m)
    return m.SerializeToString()


@pytest.mark.parametrize("op,shape,bs,cores", [
    ("SpaceToDepth", (1, 3, 8, 6), 2, "1"), ("SpaceToDepth", (1, 16, 12, 9), 3, "8"),
    ("DepthToSpace", (1, 12, 5, 7), 2, "8"), ("DepthToSpace", (1, 64, 6, 4), 4, "1"),
])
def test_onnx_block_exact(op, shape, bs, cores):
    from test_grouped_dilated import assert_onnx_unit_exact

    assert_onnx_unit_exact(onnx_block(op, shape, bs), cores, 3)


def test_onnx_depth_to_space_crd_declined():
    from test_grouped_dilated import _onnx

    nort, om = _onnx()
    model = onnx_block("DepthToSpace", (1, 8, 3, 3), 2, mode="CRD")
    feeds = om.int8_feeds(model, seed=1)
    want = om.session(model, ["CPUExecutionProvider"]).run(None, feeds)[0]
    got = om.session(model, "nacc", {"min_partition_macs": 0}).run(None, feeds)[0]
    np.testing.assert_array_equal(got, want)
    rep = nort.partition_reports()[-1]
    assert any(h["op_type"] == "DepthToSpace" and "CRD" in str(h) for h in rep["host_nodes"]), \
        rep["host_nodes"]


def _converted_data_movement_model():
    """The model of _convert_data_movement_model, converted in a fresh Python
    process (so no state of earlier tests reaches the converter; it did not make
    the converter deterministic, see the test)."""
    pytest.importorskip("tensorflow")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import test_resize_space_depth as t; "
            "sys.stdout.buffer.write(t._convert_data_movement_model())")
    p = subprocess.run([sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__))],
                       capture_output=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert p.returncode == 0, p.stderr.decode(errors="replace")[-2000:]
    return p.stdout


def _convert_data_movement_model():
    """A float tf.function converted by the TFLite converter (full int8):
    tf.split, concat, tf.image.resize nearest (TF 2's half-pixel centres),
    a strided slice, space_to_depth, clip_by_value (MAXIMUM / MINIMUM) and a
    SPLIT_V between convolutions, with the op versions the converter writes."""
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(1)
    filters = []

    def conv(x, cout, k, stride=1, relu=True):
        w = tf.constant(rng.standard_normal((k, k, x.shape[-1], cout)).astype(np.float32) * 0.3)
        filters.append(w)
        y = tf.nn.conv2d(x, w, stride, "SAME")
        return tf.nn.relu(y) if relu else y

    @tf.function(input_signature=[tf.TensorSpec((1, 16, 16, 8), tf.float32)])
    def f(inp):
        x = conv(inp, 16, 3)
        a, b = tf.split(x, 2, axis=-1)
        c = tf.concat([a, conv(b, 8, 1)], axis=-1)
        u = tf.image.resize(conv(c, 16, 3, stride=2), (16, 16), method="nearest")
        s = tf.concat([c, u], axis=-1)[:, 1:15, ::2, 4:20]
        h = tf.clip_by_value(tf.nn.space_to_depth(s, 2), -1.0, 2.0)
        p1, _, p3 = tf.split(h, [3, 5, -1], axis=-1)
        return conv(tf.concat([p3, p1], axis=-1), 4, 1, relu=False)

    data = np.random.default_rng(0)
    converter = tf.lite.TFLiteConverter.from_concrete_functions([f.get_concrete_function()], f)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = lambda: (
        [data.standard_normal((1, 16, 16, 8)).astype(np.float32)] for _ in range(8))
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    return converter.convert()


def test_converted_model_one_partition_exact():
    """Every int8 node of the converter's model claimed (SPLIT v2, SPLIT_V v2,
    STRIDED_SLICE v2, RESIZE_NEAREST_NEIGHBOR v3, SPACE_TO_DEPTH v2, MAXIMUM /
    MINIMUM v2), one partition when the converter quantized it all, bit-exact vs
    BUILTIN_REF at 8 cores."""
    model = _converted_data_movement_model()
    d = nacc.load_delegate(log_level="off", cores=8)
    interp = make_interpreter(model, delegates=[d])
    interp.allocate_tensors()
    det = interp.get_input_details()[0]
    rng = np.random.default_rng(3)
    for _ in range(2):
        x = rng.integers(-128, 128, det["shape"], dtype=np.int8)
        interp.set_tensor(det["index"], x)
        interp.invoke()
        got = interp.get_tensor(interp.get_output_details()[0]["index"])
        np.testing.assert_array_equal(got, run(model, [x])[0])
    r = d.report()
    host = [(n.op, " ".join(x.message for x in n.reasons)) for n in r.nodes if not n.claimed]
    # The converter does not always quantize this graph the same way: in about
    # half of the full-suite runs (fresh processes included) it leaves the
    # SPLIT_V float, between a DEQUANTIZE and a float QUANTIZE. Those float
    # nodes are not the NPU's to claim; every int8 node still must be.
    converter_float = [h for h in host if h[0] == "DEQUANTIZE" or "float" in h[1]]
    assert [h for h in host if h not in converter_float] == [], host
    if not converter_float:
        assert len({n.partition for n in r.nodes}) == 1
    claimed = {n.op for n in r.nodes if n.claimed}
    assert {"SPLIT", "STRIDED_SLICE", "RESIZE_NEAREST_NEIGHBOR", "SPACE_TO_DEPTH",
            "MAXIMUM", "MINIMUM"} <= claimed, claimed

"""SPLIT, SPLIT_V, SLICE and STRIDED_SLICE (issue 15, item 8), bit-exact
against TFLite 2.21 BUILTIN_REF through the delegate (docs/compiler.md
"SLICE, STRIDED_SLICE, SPLIT, SPLIT_V"):

each output is a 1x1 max-pool identity pass (offsets 0, the full int8 clamp: a
byte copy, which is what TFLite's int8 kernels do) whose input DMA starts at
the output's origin in the input and steps s_w x C bytes a pixel and
s_h x W x C bytes a row, so channel, row and column windows and height /
width strides are DMA patterns; nothing moves through the host.

Hand-built single ops (channel, row and column splits, SPLIT_V with a -1
size, SLICE with -1 sizes, STRIDED_SLICE with masks, negative begins and
strides 2 and 3, ranks 2 to 4, random and boundary inputs) at 1, 8 and 32
cores and at 16 KB of SRAM (each case at one of them in turn; every case at
all four with -m slow), the declines with their reasons, and two whole
models claimed in one partition: a ShuffleNet v2 unit (channel split, a
branch, concatenation) and a YOLOv5 "Focus" stem (four stride-2 slices,
concatenation, a convolution).
"""
import numpy as np
import pytest

import nacc
from delegate_models import ModelBuilder, act, run
from test_mean_avgpool import CONFIG_IDS, CONFIGS, assert_model_one_partition_exact, boundary_inputs
from tflite_builder import QTensor, make_interpreter


def _int32(m, values):
    v = np.asarray(values, dtype=np.int32)
    return m.tensor(QTensor(v.shape, "int32", data=v))


def _out(m, shape, name):
    # A different scale and zero point than the input: TFLite copies the bytes.
    return m.tensor(act(shape, 0.07, 5, name=name))


def split_model(shape, axis, n):
    m = ModelBuilder()
    x = m.input(shape)
    ax = axis % len(shape)
    part = list(shape)
    part[ax] //= n
    outs = [_out(m, part, f"split{k}") for k in range(n)]
    m.g.add_op("SPLIT", [_int32(m, [axis]), x], outs, dict(num_splits=n), version=2)
    return m.build(outs)


def split_v_model(shape, axis, sizes):
    m = ModelBuilder()
    x = m.input(shape)
    ax = axis % len(shape)
    known = sum(s for s in sizes if s >= 0)
    outs = []
    for k, s in enumerate(sizes):
        part = list(shape)
        part[ax] = s if s >= 0 else shape[ax] - known
        outs.append(_out(m, part, f"split{k}"))
    m.g.add_op("SPLIT_V", [x, _int32(m, sizes), _int32(m, [axis])], outs,
               dict(num_splits=len(sizes)), version=2)
    return m.build(outs)


def slice_model(shape, begin, size):
    m = ModelBuilder()
    x = m.input(shape)
    out = [shape[d] - begin[d] if size[d] < 0 else size[d] for d in range(len(shape))]
    o = _out(m, out, "slice")
    m.g.add_op("SLICE", [x, _int32(m, begin), _int32(m, size)], [o], version=2)
    return m.build([o])


def _strided_extent(dim, b, e, s, bm, em):
    b = 0 if bm else (b + dim if b < 0 else b)
    e = dim if em else (e + dim if e < 0 else e)
    b, e = min(max(b, 0), dim), min(max(e, 0), dim)
    return max(0, -(-(e - b) // s))


def strided_slice_model(shape, begin, end, strides, begin_mask=0, end_mask=0, **masks):
    m = ModelBuilder()
    x = m.input(shape)
    out = [_strided_extent(shape[d], begin[d], end[d], strides[d], (begin_mask >> d) & 1,
                           (end_mask >> d) & 1) for d in range(len(shape))]
    o = _out(m, out, "strided")
    m.g.add_op("STRIDED_SLICE", [x, _int32(m, begin), _int32(m, end), _int32(m, strides)], [o],
               dict(begin_mask=begin_mask, end_mask=end_mask, **masks), version=2)
    return m.build([o])


def round_robin(cases):
    """(case, config) pairs for the default run: every case at one of the
    four configurations (1, 8, 32 cores; 4 cores at 16 KB), in turn, so each
    configuration sees a quarter of the cases; the full matrix is marked slow."""
    default = [pytest.param(c, CONFIGS[i % len(CONFIGS)], id=f"{c[0]}-{CONFIG_IDS[i % len(CONFIGS)]}")
               for i, c in enumerate(cases)]
    full = [pytest.param(c, cfg, id=f"{c[0]}-{cid}-all", marks=pytest.mark.slow)
            for c in cases for cfg, cid in zip(CONFIGS, CONFIG_IDS)]
    return default + full


def assert_all_outputs_exact(model, in_shape, expect_claimed=True, **options):
    """Every output of the delegated model == BUILTIN_REF on boundary and
    random inputs; returns the delegate's report."""
    d = nacc.load_delegate(log_level="off", min_partition_macs=0, **options)
    interp = make_interpreter(model, delegates=[d])
    interp.allocate_tensors()
    for x in boundary_inputs(in_shape):
        interp.set_tensor(interp.get_input_details()[0]["index"], x)
        interp.invoke()
        want = run(model, [x])
        got = [interp.get_tensor(o["index"]) for o in interp.get_output_details()]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    report = d.report()
    if expect_claimed:
        assert all(n.claimed for n in report.nodes), [
            r.message for n in report.nodes for r in n.reasons]
    return report


# (id, model builder, input shape)
CASES = [
    ("split-c2", lambda: split_model((1, 8, 8, 16), 3, 2), (1, 8, 8, 16)),
    ("split-c3-neg-axis", lambda: split_model((1, 7, 5, 24), -1, 3), (1, 7, 5, 24)),
    ("split-rows", lambda: split_model((1, 12, 6, 8), 1, 2), (1, 12, 6, 8)),
    ("split-cols4", lambda: split_model((1, 5, 12, 6), 2, 4), (1, 5, 12, 6)),
    ("split-rank2", lambda: split_model((6, 40), 1, 4), (6, 40)),
    ("split-rank2-rows", lambda: split_model((6, 40), 0, 3), (6, 40)),
    ("split-batch-rank4", lambda: split_model((2, 4, 4, 8), 0, 2), (2, 4, 4, 8)),
    ("split_v-c", lambda: split_v_model((1, 9, 7, 20), 3, [5, 12, 3]), (1, 9, 7, 20)),
    ("split_v-c-minus1", lambda: split_v_model((1, 6, 6, 33), -1, [1, -1, 7]), (1, 6, 6, 33)),
    ("split_v-rows", lambda: split_v_model((1, 8, 5, 4), 1, [2, 5, 1]), (1, 8, 5, 4)),
    ("slice-c", lambda: slice_model((1, 10, 9, 16), [0, 2, 1, 3], [1, 5, -1, 8]), (1, 10, 9, 16)),
    ("slice-one-pixel", lambda: slice_model((1, 4, 4, 70), [0, 3, 3, 0], [1, 1, 1, 70]),
     (1, 4, 4, 70)),
    ("slice-rank3", lambda: slice_model((9, 7, 12), [2, 0, 5], [4, 7, 6]), (9, 7, 12)),
    ("strided-s2-s3", lambda: strided_slice_model((1, 12, 11, 10), [0, 1, 0, 2], [1, 12, 11, 9],
                                                  [1, 2, 3, 1]), (1, 12, 11, 10)),
    ("strided-focus", lambda: strided_slice_model((1, 16, 16, 3), [0, 1, 0, 0], [0, 0, 0, 0],
                                                  [1, 2, 2, 1], begin_mask=0b1101,
                                                  end_mask=0b1111), (1, 16, 16, 3)),
    ("strided-negative-begin", lambda: strided_slice_model((1, 9, 9, 12), [0, -5, -9, -6],
                                                           [1, -1, 9, 12], [1, 1, 2, 1]),
     (1, 9, 9, 12)),
    ("strided-one-channel-s4", lambda: strided_slice_model((1, 6, 6, 9), [0, 0, 0, 4],
                                                           [1, 6, 6, 5], [1, 1, 1, 4]),
     (1, 6, 6, 9)),
]


@pytest.mark.parametrize("case,config", round_robin(CASES))
def test_slice_split_exact(case, config):
    _, build, shape = case
    report = assert_all_outputs_exact(build(), shape, **config)
    assert len({n.partition for n in report.nodes}) == 1


def test_random_slices_exact():
    """Random shapes and windows: SLICE and STRIDED_SLICE of ranks 2 to 4,
    SPLIT_V on a random axis, at 4 cores and 16 KB of SRAM."""
    rng = np.random.default_rng(15)
    for _ in range(6):
        rank = int(rng.integers(2, 5))
        shape = [int(v) for v in rng.integers(2, 14, rank)]
        if rank == 4:
            shape[0] = 1
        begin = [int(rng.integers(0, d)) for d in shape]
        size = [int(rng.integers(1, d - b + 1)) for d, b in zip(shape, begin)]
        assert_all_outputs_exact(slice_model(tuple(shape), begin, size), tuple(shape),
                                 cores=4, sram_kb=16)
        strides = [int(rng.integers(1, 4)) for _ in shape]
        strides[-1] = 1
        end = [b + s for b, s in zip(begin, size)]
        assert_all_outputs_exact(strided_slice_model(tuple(shape), begin, end, strides),
                                 tuple(shape), cores=4, sram_kb=16)
        axis = int(rng.integers(0, rank))
        if shape[axis] >= 2:
            cut = int(rng.integers(1, shape[axis]))
            assert_all_outputs_exact(split_v_model(tuple(shape), axis, [cut, -1]), tuple(shape),
                                     cores=4, sram_kb=16)


def _reasons(model, shape):
    report = assert_all_outputs_exact(model, shape, expect_claimed=False)
    (node,) = report.nodes
    assert not node.claimed
    return " ".join(r.message for r in node.reasons)


@pytest.mark.parametrize("build,shape,expect", [
    (lambda: strided_slice_model((1, 4, 4, 12), [0, 0, 0, 0], [1, 4, 4, 12], [1, 1, 1, 2]),
     (1, 4, 4, 12), "channel stride 2 \u2014 SLICE, STRIDED_SLICE, SPLIT and SPLIT_V must read"),
    (lambda: slice_model((2, 4, 4, 8), [0, 0, 0, 0], [2, 2, 4, 8]), (2, 4, 4, 8),
     "holds 2 images"),
])
def test_slice_declines(build, shape, expect):
    msg = _reasons(build(), shape)
    assert expect in msg, msg


def _strided(shape, out_shape, begin, end, strides, **options):
    m = ModelBuilder()
    x = m.input(shape)
    o = _out(m, out_shape, "strided")
    m.g.add_op("STRIDED_SLICE", [x, _int32(m, begin), _int32(m, end), _int32(m, strides)], [o],
               options or None, version=2)
    return m.build([o])


def test_negative_stride_declined():
    # x[:, :, 3:0:-1, :] reverses columns: no DMA pitch walks backwards
    model = _strided((1, 4, 4, 12), (1, 4, 3, 12), [0, 0, 3, 0], [1, 4, 0, 12], [1, 1, -1, 1])
    msg = _reasons(model, (1, 4, 4, 12))
    assert "stride -1 on axis 2" in msg, msg


def test_shrink_axis_declined():
    model = _strided((1, 4, 4, 12), (1, 4, 12), [0, 1, 0, 0], [1, 2, 4, 12], [1, 1, 1, 1],
                     shrink_axis_mask=2)
    msg = _reasons(model, (1, 4, 4, 12))
    assert "shrink_axis_mask 2" in msg, msg


def test_int16_split_declined():
    m = ModelBuilder()
    x = m.input((1, 4, 4, 8), scale=0.001, zp=0, dtype="int16")
    outs = [m.tensor(act((1, 4, 4, 4), 0.001, 0, dtype="int16")) for _ in range(2)]
    m.g.add_op("SPLIT", [_int32(m, [3]), x], outs, dict(num_splits=2), version=3)
    d = nacc.load_delegate(log_level="off", min_partition_macs=0)
    interp = make_interpreter(m.build(outs), delegates=[d])
    interp.allocate_tensors()
    (node,) = d.report().nodes
    assert not node.claimed
    assert "int16 activations" in " ".join(r.message for r in node.reasons)


# ---- whole models -----------------------------------------------------------------------

def shufflenet_unit():
    """A ShuffleNet v2 basic unit: split the channels in two, one half through
    1x1 conv -> 3x3 depthwise -> 1x1 conv, concatenated with the other half,
    then a stride-2 unit's two branches on the result."""
    m = ModelBuilder(seed=7)
    x = m.input((1, 16, 16, 32))
    left, right = (m.tensor(act((1, 16, 16, 16), 0.05, -3)) for _ in range(2))
    m.g.add_op("SPLIT", [_int32(m, [3]), x], [left, right], dict(num_splits=2), version=2)
    b = m.conv(right, 16, k=1, activation="RELU", out_scale=0.05, out_zp=-3)
    b = m.depthwise(b, k=3, activation="NONE")
    b = m.conv(b, 16, k=1, activation="RELU", out_scale=0.05, out_zp=-3)
    cat = m.tensor(act((1, 16, 16, 32), 0.05, -3))
    m.g.add_op("CONCATENATION", [left, b], [cat], dict(axis=3), version=2)
    # the next unit splits again with SPLIT_V and slices a window
    a2, b2 = (m.tensor(act((1, 16, 16, c), 0.05, -3)) for c in (8, 24))
    m.g.add_op("SPLIT_V", [cat, _int32(m, [8, -1]), _int32(m, [-1])], [a2, b2],
               dict(num_splits=2), version=2)
    y = m.conv(b2, 8, k=3, stride=2, activation="RELU", out_scale=0.05, out_zp=-3)
    s = m.tensor(act((1, 8, 8, 8), 0.05, -3))
    m.g.add_op("STRIDED_SLICE", [a2, _int32(m, [0, 0, 0, 0]), _int32(m, [1, 16, 16, 8]),
                                 _int32(m, [1, 2, 2, 1])], [s], version=2)
    out = m.tensor(act((1, 8, 8, 16), 0.05, -3))
    m.g.add_op("CONCATENATION", [s, y], [out], dict(axis=3), version=2)
    return m.build([out])


def yolo_focus():
    """YOLOv5's Focus stem: x[::2, ::2], x[1::2, ::2], x[::2, 1::2],
    x[1::2, 1::2] concatenated on channels, then a 3x3 convolution."""
    m = ModelBuilder(seed=8)
    x = m.input((1, 32, 32, 3))
    parts = []
    for r, c in ((0, 0), (1, 0), (0, 1), (1, 1)):
        p = m.tensor(act((1, 16, 16, 3), 0.05, -3))
        m.g.add_op("STRIDED_SLICE", [x, _int32(m, [0, r, c, 0]), _int32(m, [1, 32, 32, 3]),
                                     _int32(m, [1, 2, 2, 1])], [p], version=2)
        parts.append(p)
    cat = m.tensor(act((1, 16, 16, 12), 0.05, -3))
    m.g.add_op("CONCATENATION", parts, [cat], dict(axis=3), version=2)
    y = m.conv(cat, 16, k=3, activation="RELU")
    return m.build([y])


@pytest.mark.parametrize("build", [shufflenet_unit, yolo_focus], ids=["shufflenet", "focus"])
@pytest.mark.parametrize("cores", [1, 8])
def test_models_one_partition_exact(build, cores):
    model = build()
    r = assert_model_one_partition_exact(model, cores)
    kinds = [n.op for n in r.nodes]
    assert {"SPLIT", "STRIDED_SLICE"} & set(kinds), kinds


# ---- ONNX: Slice on the EP against the CPU EP ------------------------------------------

def onnx_slice(shape, starts, ends, axes=None, steps=None, scale=0.05, zp=-3, out_q=None):
    """int8 x -> DequantizeLinear -> Slice -> QuantizeLinear -> int8 y (at the
    input's quantization unless `out_q`)."""
    pytest.importorskip("onnxruntime")
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    import onnx_models as om

    inits = [numpy_helper.from_array(np.array(scale, np.float32), "s"),
             numpy_helper.from_array(np.array(zp, np.int8), "z"),
             numpy_helper.from_array(np.array((out_q or (scale, zp))[0], np.float32), "ys"),
             numpy_helper.from_array(np.array((out_q or (scale, zp))[1], np.int8), "yz")]
    ins = ["x", "starts", "ends"]
    inits += [numpy_helper.from_array(np.array(starts, np.int64), "starts"),
              numpy_helper.from_array(np.array(ends, np.int64), "ends")]
    if axes is not None:
        ins.append("axes")
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
    elif steps is not None:
        ins.append("")  # axes omitted: all of them
    if steps is not None:
        ins.append("steps")
        inits.append(numpy_helper.from_array(np.array(steps, np.int64), "steps"))
    nodes = [helper.make_node("DequantizeLinear", ["x_q", "s", "z"], ["x"], name="dq"),
             helper.make_node("Slice", ins, ["y"], name="slice"),
             helper.make_node("QuantizeLinear", ["y", "ys", "yz"], ["y_q"], name="q")]
    g = helper.make_graph(nodes, "slice", [helper.make_tensor_value_info("x_q", TensorProto.INT8, shape)],
                          [helper.make_tensor_value_info("y_q", TensorProto.INT8, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", om.OPSET)], ir_version=om.IR_VERSION)
    m = onnx.shape_inference.infer_shapes(m)
    onnx.checker.check_model(m)
    return m.SerializeToString()


ONNX_SLICE_CASES = [
    ("channels", (1, 16, 6, 5), [4], [12], [1], None),
    ("rows-cols-step", (1, 8, 13, 11), [1, 0], [13, 11], [2, 3], [2, 3]),
    ("negative-and-int64-max", (1, 12, 7, 7), [-8, 1], [2**63 - 1, -1], [1, 3], None),
    ("all-axes", (1, 10, 9, 8), [0, 2, 1, 3], [1, 9, 8, 8], None, [1, 1, 3, 2]),
    ("rank2", (4, 40), [8], [33], [1], None),
]


@pytest.mark.parametrize("case,cores", [(c, "8" if i % 2 else "1")
                                        for i, c in enumerate(ONNX_SLICE_CASES)],
                         ids=[c[0] for c in ONNX_SLICE_CASES])
def test_onnx_slice_exact(case, cores):
    from test_grouped_dilated import assert_onnx_unit_exact

    _, shape, starts, ends, axes, steps = case
    assert_onnx_unit_exact(onnx_slice(shape, starts, ends, axes, steps), cores, 3)


def test_onnx_requantizing_slice_declined():
    from test_grouped_dilated import _onnx

    nort, om = _onnx()
    model = onnx_slice((1, 8, 4, 4), [2], [6], [1], out_q=(0.1, 4))
    feeds = om.int8_feeds(model, seed=1)
    want = om.session(model, ["CPUExecutionProvider"]).run(None, feeds)[0]
    got = om.session(model, "nacc", {"min_partition_macs": 0}).run(None, feeds)[0]
    np.testing.assert_array_equal(got, want)
    rep = nort.partition_reports()[-1]
    slice_nodes = [h for h in rep["host_nodes"] if h["op_type"] == "Slice"]
    assert slice_nodes and "quantized differently" in str(slice_nodes[0]), rep["host_nodes"]

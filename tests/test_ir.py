"""Graph IR (csrc/ir/): building graphs from Python, the builders' checks,
whole-graph validation (ids, producers, shape consistency) and the TFLite
padding / window helpers."""
from __future__ import annotations

import numpy as np
import pytest

import ir_builders as b
from nacc import _core

BRIEF_KINDS = [
    "CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "BATCH_MATMUL", "MAX_POOL_2D",
    "AVERAGE_POOL_2D", "ADD", "SUB", "MUL", "RELU", "RELU6", "RELU_N1_TO_1", "LOGISTIC", "TANH",
    "HARD_SWISH", "LEAKY_RELU", "QUANTIZE", "RESHAPE", "PAD", "CONCATENATION", "MEAN", "SLICE",
    "RESIZE_NEAREST_NEIGHBOR", "SPACE_TO_DEPTH", "DEPTH_TO_SPACE", "MAXIMUM", "MINIMUM",
    "TRANSPOSE_CONV", "RESIZE_BILINEAR", "TRANSPOSE",
]


def test_op_kinds_are_the_npu_kinds_in_order():
    assert [k["name"] for k in _core.op_kinds()] == BRIEF_KINDS
    assert all(k["description"] for k in _core.op_kinds())


def test_build_and_read_back():
    g = _core.Graph()
    x = g.add_tensor("x", [1, 8, 8, 3], "int8", scales=0.05, zero_points=-3)
    w = g.add_tensor("w", [4, 3, 3, 3], "int8", scales=[0.01, 0.02, 0.03, 0.04], axis=0,
                     data=np.arange(108, dtype=np.int8).reshape(4, 3, 3, 3))
    bias = g.add_tensor("b", [4], "int32", scales=[1e-4] * 4, data=np.zeros(4, np.int32))
    y = g.add_tensor("y", [1, 4, 4, 4], "int8", scales=0.1, zero_points=5)
    op = g.add_op("CONV_2D", [x, w, bias], [y], name="conv1", stride_h=2, stride_w=2,
                  padding="SAME", activation="RELU6")
    g.inputs, g.outputs = [x], [y]
    g.validate()
    assert (x, w, bias, y, op) == (0, 1, 2, 3, 0)
    assert (g.num_tensors, g.num_ops) == (4, 1)
    t = g.tensor(w)
    assert (t.name, t.shape, t.dtype, t.axis, t.is_constant) == ("w", [4, 3, 3, 3], "int8", 0, True)
    assert t.scales == pytest.approx([0.01, 0.02, 0.03, 0.04])
    assert t.zero_points == [0, 0, 0, 0]
    assert not g.tensor(x).is_constant and g.tensor(x).zero_points == [-3]
    o = g.op(op)
    assert (o.kind, o.name, o.type_name, o.inputs, o.outputs) == ("CONV_2D", "conv1", "", [0, 1, 2], [3])
    # SAME, 8 -> 4 with a 3x3 window at stride 2: total padding 1, on the bottom/right.
    assert o.attrs["padding"] == (0, 1, 0, 1)
    assert (o.attrs["stride_h"], o.attrs["activation"]) == (2, "RELU6")
    assert (g.inputs, g.outputs) == ([0], [3])


def test_other_op_keeps_frontend_name():
    g, op = b.other("SOFTMAX")
    assert (g.op(op).kind, g.op(op).type_name) == ("OTHER", "SOFTMAX")
    g.validate()  # OTHER ops are not shape-checked


def _tensor(g, **kw):
    args = dict(name="t", shape=[4, 3], dtype="int8")
    args.update(kw)
    return g.add_tensor(**args)


ADD_TENSOR_ERRORS = [
    ("scale-count", dict(scales=[0.1, 0.2], zero_points=[0]), ValueError,
     "2 scales but 1 zero points"),
    ("channel-count", dict(scales=[0.1] * 3, axis=0), ValueError, "3 scales for 4 channels on axis 0"),
    ("axis-range", dict(scales=[0.1] * 4, axis=2), ValueError,
     "quantization axis 2 out of range for rank 2"),
    ("dim-below-minus-1", dict(shape=[4, -2]), ValueError, "dimension -2"),
    ("unknown-dtype", dict(dtype="bfloat16"), ValueError,
     r"unknown dtype 'bfloat16' \(known: int8, uint8, int16, int32, int64, float32, other, int4\)"),
    ("data-dtype", dict(data=np.zeros((4, 3), np.int32)), TypeError, "expected dtype int8, got int32"),
    ("data-shape", dict(data=np.zeros(12, np.int8)), ValueError, r"has shape \[12\], the tensor \[4,3\]"),
    ("data-dynamic", dict(shape=[4, -1], data=np.zeros((4, 3), np.int8)), ValueError,
     r"has shape \[4,3\], the tensor \[4,-1\]"),
    ("data-not-array", dict(data=[1, 2, 3]), TypeError, "data must be a numpy array or None"),
    ("data-other-dtype", dict(dtype="other", data=np.zeros((4, 3), np.int8)), ValueError,
     "dtype 'other' cannot carry data"),
]


@pytest.mark.parametrize("kw, exc, match", [c[1:] for c in ADD_TENSOR_ERRORS],
                         ids=[c[0] for c in ADD_TENSOR_ERRORS])
def test_add_tensor_rejects(kw, exc, match):
    g = _core.Graph()
    with pytest.raises(exc, match=match):
        _tensor(g, **kw)
    assert g.num_tensors == 0


def test_add_tensor_accepts_unknown_dims_and_unquantized_float():
    g = _core.Graph()
    assert _tensor(g, shape=[-1, 0, 3], scales=[0.1] * 3, axis=2) == 0
    assert _tensor(g, dtype="float32") == 1
    assert g.tensor(1).scales == [] and g.tensor(1).zero_points == []


ADD_OP_ERRORS = [
    ("unknown-kind", dict(kind="SOFTMAX"), ValueError,
     r"unknown op kind 'SOFTMAX' \(known: CONV_2D, .*, OTHER; use OTHER"),
    ("other-unnamed", dict(kind="OTHER"), ValueError, "needs the frontend's op name"),
    ("input-id", dict(inputs=[0, 99]), ValueError, r"input tensor id 99 out of range \[-1, 1\]"),
    ("output-id", dict(outputs=[-1]), ValueError, r"output tensor id -1 out of range \[0, 1\]"),
    ("stride-0", dict(stride_h=0), ValueError, "stride 0x1 must be >= 1"),
    ("dilation-0", dict(dilation_w=0), ValueError, "dilation 1x0 must be >= 1"),
    ("depth-multiplier-0", dict(depth_multiplier=0), ValueError, "depth_multiplier 0 must be >= 1"),
    ("unknown-attr", dict(strides=[1, 1]), TypeError, r"unknown attribute 'strides' \(known: "),
    ("attr-type", dict(stride_h="2"), TypeError, "attribute 'stride_h' must be an int"),
    ("padding-twice", dict(padding="SAME", pad_top=1), ValueError,
     "either padding='SAME'/'VALID' or pad_top/bottom/left/right"),
    ("padding-mode", dict(padding="FULL"), ValueError, r"unknown padding 'FULL' \(SAME or VALID\)"),
    ("activation", dict(activation="GELU"), ValueError,
     r"unknown fused activation 'GELU' \(known: NONE, RELU, RELU_N1_TO_1, RELU6, TANH, SIGN_BIT\)"),
]


@pytest.mark.parametrize("kw, exc, match", [c[1:] for c in ADD_OP_ERRORS],
                         ids=[c[0] for c in ADD_OP_ERRORS])
def test_add_op_rejects(kw, exc, match):
    g = _core.Graph()
    x = g.add_tensor("x", [1, 4, 4, 8], "int8", scales=0.1, zero_points=0)
    y = g.add_tensor("y", [1, 4, 4, 8], "int8", scales=0.1, zero_points=0)
    args = dict(kind="RELU", inputs=[x], outputs=[y])
    args.update(kw)
    with pytest.raises(exc, match=match):
        g.add_op(args.pop("kind"), args.pop("inputs"), args.pop("outputs"), **args)
    assert g.num_ops == 0


# (mode, in, kernel, stride, dilation) -> (before, after), per TFLite's
# ComputePaddingHeightWidth: out = ceil(in / stride) for SAME, total =
# max((out - 1) * stride + (kernel - 1) * dilation + 1 - in, 0), before =
# total // 2, the odd element after.
PADDING_GOLDEN = [
    ("SAME", 8, 3, 2, 1, (0, 1)),     # out 4: 3*2+3-8 = 1
    ("SAME", 7, 3, 2, 1, (1, 1)),     # out 4: 6+3-7 = 2
    ("SAME", 224, 3, 2, 1, (0, 1)),   # out 112: 222+3-224 = 1
    ("SAME", 5, 4, 1, 1, (1, 2)),     # out 5: 4+4-5 = 3
    ("SAME", 8, 3, 1, 2, (2, 2)),     # effective kernel 5: 7+5-8 = 4
    ("SAME", 16, 12, 1, 1, (5, 6)),   # 15+12-16 = 11
    ("SAME", 8, 1, 3, 1, (0, 0)),     # out 3: 6+1-8 < 0
    ("VALID", 8, 3, 2, 1, (0, 0)),
    ("VALID", 5, 5, 1, 2, (0, 0)),
]


@pytest.mark.parametrize("mode, size, kernel, stride, dilation, expected", PADDING_GOLDEN)
def test_tflite_padding_golden(mode, size, kernel, stride, dilation, expected):
    # Height gets the case, width a fixed 1x1/stride-1 window (no padding), so
    # a swapped axis would show.
    pads = _core.tflite_padding(mode, size, 9, kernel, 1, stride, 1, dilation, 1)
    assert pads == (*expected, 0, 0)
    pads = _core.tflite_padding(mode, 9, size, 1, kernel, 1, stride, 1, dilation)
    assert pads == (0, 0, *expected)


@pytest.mark.parametrize("args, expected", [
    ((8, 3, 1, 0, 0), 6),
    ((8, 3, 2, 0, 1), 4),
    ((7, 2, 2, 0, 1), 4),
    ((8, 3, 1, 0, 0, 2), 4),
    ((8, 3, 3, 1, 1), 3),
    ((3, 5, 1, 0, 0), 0),   # window larger than the padded input
    ((3, 5, 1, 1, 1), 1),
])
def test_window_output_size(args, expected):
    assert _core.window_output_size(*args) == expected


def test_window_output_size_rejects_stride_0():
    with pytest.raises(ValueError, match="stride 0 and dilation 1 must be >= 1"):
        _core.window_output_size(8, 3, 0, 0, 0)


@pytest.mark.parametrize("kind, build", [
    ("CONV_2D", lambda p: b.conv(kernel=(3, 3), stride=(2, 2), in_hw=(8, 7), padding=p)),
    ("DEPTHWISE_CONV_2D", lambda p: b.conv("DEPTHWISE_CONV_2D", kernel=(5, 3), dilation=(2, 1),
                                           in_hw=(9, 9), padding=p)),
    ("MAX_POOL_2D", lambda p: b.pool(kernel=(3, 3), stride=(2, 2), in_hw=(8, 8), padding=p)),
])
@pytest.mark.parametrize("mode", ["SAME", "VALID"])
def test_add_op_padding_mode_matches_tflite_padding(kind, build, mode):
    """add_op(padding=...) resolves through the same helper as frontends use."""
    g, op = build(mode)
    a = g.op(op).attrs
    g2 = _core.Graph()
    x = g2.add_tensor("x", g.tensor(g.op(op).inputs[0]).shape, "int8", scales=0.05, zero_points=-3)
    inputs = [x] + g.op(op).inputs[1:]
    for i in g.op(op).inputs[1:]:
        t = g.tensor(i)
        g2.add_tensor(t.name, t.shape, t.dtype, scales=t.scales, zero_points=t.zero_points,
                      axis=t.axis, data=np.zeros(t.shape, b.NP_DTYPES[t.dtype]))
    y = g2.add_tensor("y", g.tensor(g.op(op).outputs[0]).shape, "int8", scales=0.1, zero_points=5)
    kw = {k: a[k] for k in ("stride_h", "stride_w", "dilation_h", "dilation_w", "kernel_h",
                            "kernel_w", "depth_multiplier")}
    op2 = g2.add_op(kind, inputs, [y], padding=mode, **kw)
    assert g2.op(op2).attrs["padding"] == a["padding"]
    g2.validate()


def test_padding_mode_needs_static_input():
    g = _core.Graph()
    x = g.add_tensor("x", [1, -1, 8, 4], "int8", scales=0.1, zero_points=0)
    y = g.add_tensor("y", [1, -1, 8, 4], "int8", scales=0.1, zero_points=0)
    with pytest.raises(ValueError, match=r"input shape \[1,-1,8,4\] needs static height and width"):
        g.add_op("MAX_POOL_2D", [x], [y], kernel_h=2, kernel_w=2, padding="SAME")


def test_validate_accepts_a_chain():
    g = _core.Graph()
    x = b.activation(g, "x", [1, 8, 8, 3])
    w = b.constant(g, "w", [8, 3, 3, 3], "int8", [0.02] * 8)
    c = b.activation(g, "c", [1, 8, 8, 8])
    r = b.activation(g, "r", [1, 8, 8, 8])
    y = b.activation(g, "y", [1, 512])
    g.add_op("CONV_2D", [x, w, -1], [c], name="conv", padding="SAME")
    g.add_op("RELU", [c], [r], name="relu")
    g.add_op("RESHAPE", [r], [y], name="flatten", type_name="SQUEEZE")
    g.inputs, g.outputs = [x], [y]
    g.validate()
    assert g.op(2).type_name == "SQUEEZE"


def _bad_graph(build):
    return lambda: build()[0]


def _manual(kind, in_shapes, out_shape, **attrs):
    def make():
        g = _core.Graph()
        ins = [b.activation(g, f"x{i}", s) for i, s in enumerate(in_shapes)]
        y = b.activation(g, "y", out_shape)
        g.add_op(kind, ins, [y], name="op", **attrs)
        return g
    return make


def _depthwise_channels():
    g = _core.Graph()
    x = b.activation(g, "x", [1, 8, 8, 4])
    w = b.constant(g, "w", [1, 3, 3, 8], "int8", 0.02)
    y = b.activation(g, "y", [1, 6, 6, 8])
    g.add_op("DEPTHWISE_CONV_2D", [x, w], [y], name="op")  # depth_multiplier left at 1
    return g


def _conv_bias_length():
    g = _core.Graph()
    x = b.activation(g, "x", [1, 8, 8, 4])
    w = b.constant(g, "w", [4, 3, 3, 4], "int8", 0.02)
    bias = b.constant(g, "b", [3], "int32", 0.001)
    y = b.activation(g, "y", [1, 6, 6, 4])
    g.add_op("CONV_2D", [x, w, bias], [y], name="op")
    return g


def _two_producers():
    g = _core.Graph()
    x = b.activation(g, "x", [1, 4])
    y = b.activation(g, "y", [1, 4])
    g.add_op("RELU", [x], [y], name="first")
    g.add_op("RELU6", [x], [y], name="second")
    return g


def _graph_input_range():
    g, _ = b.unary()
    g.inputs = [7]
    return g


VALIDATE_ERRORS = [
    ("conv-output", _bad_graph(lambda: b.conv(out_shape=[1, 8, 8, 4])),
     r"op CONV_2D 'conv': output \[1,8,8,4\] but input \[1,8,8,4\], kernel 3x3, stride 1x1, "
     r"padding 0/0/0/0 give \[1,6,6,4\]"),
    ("conv-window-too-big", _bad_graph(lambda: b.conv(kernel=(5, 5), in_hw=(3, 3),
                                                      out_shape=[1, 1, 1, 4])),
     r"give \[1,0,0,4\]"),
    ("conv-filter-channels", _bad_graph(lambda: b.conv(c_in=4, filter_c_in=3)),
     "filter input channels 3 do not divide input channels 4"),
    ("conv-bias-length", _conv_bias_length, r"bias \[3\] has 3 elements for 4 output channels"),
    ("depthwise-multiplier", _depthwise_channels,
     "filter channels 8 != input channels 4 x depth multiplier 1"),
    ("pool-window-unset", _manual("MAX_POOL_2D", [[1, 4, 4, 8]], [1, 4, 4, 8]),
     r"pool window 0x0 not set \(kernel_h, kernel_w\)"),
    ("fc-rows", _bad_graph(lambda: b.fully_connected(in_shape=[1, 15], out_shape=[1, 8])),
     r"input \[1,15\] is not a whole number of rows of 16"),
    ("fc-output", _bad_graph(lambda: b.fully_connected(out_shape=[1, 7])),
     r"output \[1,7\] but input \[1,16\] and weights \[8,16\] give \[1,8\]"),
    ("matmul-depth", _manual("BATCH_MATMUL", [[4, 16], [15, 8]], [4, 8]),
     r"operands \[4,16\] and \[15,8\] cannot be multiplied"),
    ("matmul-output", _manual("BATCH_MATMUL", [[4, 16], [16, 8]], [4, 9]),
     r"output \[4,9\] but operands give \[4,8\]"),
    ("add-broadcast", _manual("ADD", [[1, 4, 4, 8], [1, 4, 4, 3]], [1, 4, 4, 8]),
     r"operands \[1,4,4,8\] and \[1,4,4,3\] do not broadcast"),
    ("add-output", _manual("ADD", [[1, 4, 4, 8], [1, 1, 1, 8]], [1, 4, 4, 1]),
     r"output \[1,4,4,1\] but operands give \[1,4,4,8\]"),
    ("unary-shape", _manual("TANH", [[1, 4, 4, 8]], [1, 4, 8, 4]),
     r"output \[1,4,8,4\] differs from input \[1,4,4,8\]"),
    ("reshape-count", _manual("RESHAPE", [[1, 4, 4, 8]], [1, 100]),
     r"reshape of \[1,4,4,8\] \(128 elements\) to \[1,100\] \(100 elements\)"),
    ("pad-entries", _manual("PAD", [[1, 4, 4, 8]], [1, 6, 6, 8], paddings=[[0, 0], [1, 1], [1, 1]]),
     "paddings has 3 entries for a rank-4 input"),
    ("pad-output", _manual("PAD", [[1, 4, 4, 8]], [1, 6, 6, 8],
                           paddings=[[0, 0], [1, 1], [1, 2], [0, 0]]),
     r"output \[1,6,6,8\] but paddings give \[1,6,7,8\]"),
    ("concat-off-axis", _manual("CONCATENATION", [[1, 4, 4, 8], [1, 4, 5, 8]], [1, 4, 4, 16],
                                axis=3),
     r"input 'x1' \[1,4,5,8\] does not match output \[1,4,4,16\] off axis 3"),
    ("concat-sum", _manual("CONCATENATION", [[1, 4, 4, 8], [1, 4, 4, 8]], [1, 4, 4, 15], axis=-1),
     "output has 15 on axis 3, inputs sum to 16"),
    ("concat-axis", _manual("CONCATENATION", [[1, 4, 4, 8]], [1, 4, 4, 8], axis=4),
     "axis 4 out of range for rank 4"),
    ("mean-axis", _manual("MEAN", [[1, 4, 4, 8]], [1, 8], axes=[1, 5]),
     "axis 5 out of range for rank 4"),
    ("mean-output", _manual("MEAN", [[1, 4, 4, 8]], [1, 8], axes=[1, 2], keep_dims=True),
     r"output \[1,8\] but reducing \[1,4,4,8\] gives \[1,1,1,8\]"),
    ("add-arity", _manual("ADD", [[1, 4]], [1, 4]), "op ADD 'op': 1 inputs, expected 2"),
    ("two-producers", _two_producers,
     "op RELU6 'second': output 'y' is already produced by op 'first'"),
    ("graph-input", _graph_input_range, "graph input tensor id 7 out of range"),
]


@pytest.mark.parametrize("make, match", [c[1:] for c in VALIDATE_ERRORS],
                         ids=[c[0] for c in VALIDATE_ERRORS])
def test_validate_rejects(make, match):
    g = make()
    with pytest.raises(ValueError, match=match):
        g.validate()


def test_validate_rejects_missing_required_input():
    g = _core.Graph()
    w = b.constant(g, "w", [4, 3, 3, 4], "int8", 0.02)
    y = b.activation(g, "y", [1, 6, 6, 4])
    g.add_op("CONV_2D", [-1, w], [y], name="op")
    with pytest.raises(ValueError, match="op CONV_2D 'op': input 0 is missing"):
        g.validate()


def test_validate_skips_shapes_it_cannot_know():
    """Dynamic dimensions, unexpected ranks and unmodelled options are left to
    the capability rules (which decline them) rather than rejected."""
    for make in (lambda: b.conv(in_shape=[1, -1, 8, 4], out_shape=[1, 5, 5, 4]),
                 lambda: b.conv(in_shape=[8, 8, 4], out_shape=[6, 6, 5]),
                 lambda: b.fully_connected(out_shape=[1, 1, 8, 3], options=["keep_num_dims"])):
        g, _ = make()
        g.validate()


def test_requant_mode_is_an_enum():
    """Whose requantization an op reproduces is ir::RequantMode (issue 12 item
    6), not a flag naming ONNX: TFLite's by default, ONNX Runtime's by name."""
    g = _core.Graph()
    x = b.activation(g, "x", [1, 8, 8, 3])
    w = b.constant(g, "w", [8, 3, 3, 3], "int8", [0.02] * 8)
    y = b.activation(g, "y", [1, 8, 8, 8])
    plain = g.add_op("CONV_2D", [x, w], [y], name="c")
    assert g.op(plain).attrs["requant"] == "tflite"
    y2 = b.activation(g, "y2", [1, 8, 8, 8])
    ort = g.add_op("CONV_2D", [x, w], [y2], name="c2", requant="onnxruntime")
    assert g.op(ort).attrs["requant"] == "onnxruntime"
    with pytest.raises(ValueError, match="unknown requantization mode 'onnx' .tflite or onnxruntime"):
        g.add_op("CONV_2D", [x, w], [b.activation(g, "y3", [1, 8, 8, 8])], requant="onnx")

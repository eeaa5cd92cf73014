"""Issue 14 item 3: layout chains in NCHW models folded by the NACC EP.

Reshape / Flatten / Transpose / Squeeze / Unsqueeze between a 4-D NCHW map
and what reads it (with same-scale QuantizeLinear -> DequantizeLinear pairs
between the steps in QDQ models, on int8 tensors directly in QOperator
models) reorder elements only. The EP folds such a chain
(ep/translate.cc find_layout_chains):

- into the Gemm / MatMul it feeds: the weight columns move from the chain's
  order (CHW for a Flatten) to the NPU's HWC order;
- when it ends in a map of the input's shape and only moves whole channels
  (ShuffleNet's channel shuffle Reshape -> Transpose -> Reshape), into a 1x1
  CONV_2D with a permutation matrix (weight scale 1, no bias, output
  quantized as the input: exact).

Each unit: every layout node claimed, one partition, zero differing
elements against the CPU EP (7-bit weights: the CPU EP's AVX2 u8s8 kernels
cannot saturate, so this holds on CPUs without VNNI too).
"""
import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

import nacc.onnxruntime as nort  # noqa: E402
import onnx_models as om  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Specified .providers.:UserWarning")

LAYOUT_OPS = {"Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze"}
LEVELS = om.optimization_levels()


@pytest.fixture(scope="module", autouse=True)
def backend():
    nort.register()


class _G:
    def __init__(self, seed=0):
        self.nodes, self.inits, self.n, self.seed = [], {}, 0, seed

    def op(self, op_type, ins, **attrs):
        self.n += 1
        out = f"{op_type.lower()}_{self.n}"
        self.nodes.append(helper.make_node(op_type, ins, [out], name=out, **attrs))
        return out

    def const(self, v):
        self.n += 1
        k = f"c{self.n}"
        self.inits[k] = v
        return k

    def w(self, shape, scale):
        self.seed += 1
        return self.const(om.rng_weights(shape, self.seed, scale))

    def conv(self, x, c_in, c_out, k=3):
        y = self.op("Conv", [x, self.w((c_out, c_in, k, k), 0.3), self.w((c_out,), 0.1)],
                    kernel_shape=[k, k], pads=[k // 2] * 4)
        return self.op("Relu", [y])

    def model(self, y, in_shape, out_shape):
        self.nodes[-1].output[0] = "y"
        return om.float_model(self.nodes, {"x": in_shape}, {"y": out_shape}, self.inits)


def _chain(g, x, chain, c, h, w):
    """The layout steps of `chain` applied to x [1, c, h, w]."""
    if chain == "flatten":
        return g.op("Flatten", [x], axis=1)
    if chain == "reshape":
        return g.op("Reshape", [x, g.const(np.array([1, -1], np.int64))])
    if chain == "nhwc_flatten":  # tf2onnx: Transpose to NHWC, then flatten
        t = g.op("Transpose", [x], perm=[0, 2, 3, 1])
        return g.op("Reshape", [t, g.const(np.array([1, -1], np.int64))])
    if chain == "wh_flatten":  # the spatial axes swapped, then flattened
        return g.op("Flatten", [g.op("Transpose", [x], perm=[0, 1, 3, 2])], axis=1)
    if chain == "rows_then_flatten":  # [1, C, HW] -> [1, HW, C] -> [1, HW*C]
        r = g.op("Reshape", [x, g.const(np.array([1, c, h * w], np.int64))])
        t = g.op("Transpose", [r], perm=[0, 2, 1])
        return g.op("Reshape", [t, g.const(np.array([1, -1], np.int64))])
    if chain == "squeeze_flatten":  # Unsqueeze to 5-D, Squeeze back, Flatten
        u = g.op("Unsqueeze", [x, g.const(np.array([2], np.int64))])
        s = g.op("Squeeze", [u, g.const(np.array([2], np.int64))])
        return g.op("Flatten", [s], axis=1)
    raise ValueError(chain)


def _fc_model(chain, op="Gemm", c=8, hw=(4, 4), n=10):
    g = _G(10)
    h, w = hw
    x = g.conv("x", 3, c)
    a = _chain(g, x, chain, c, h, w)
    k = c * h * w
    if op == "Gemm":
        y = g.op("Gemm", [a, g.w((n, k), 0.1), g.w((n,), 0.1)], transB=1)
    else:
        y = g.op("MatMul", [a, g.w((k, n), 0.1)])
    return g.model(y, (1, 3, h, w), (1, n))


def _shuffle_model(c=12, groups=3, hw=(6, 6), graph_output=False):
    g = _G(20)
    h, w = hw
    x = g.conv("x", 3, c, k=1)
    r = g.op("Reshape", [x, g.const(np.array([1, groups, c // groups, h, w], np.int64))])
    t = g.op("Transpose", [r], perm=[0, 2, 1, 3, 4])
    y = g.op("Reshape", [t, g.const(np.array([1, c, h, w], np.int64))])
    if not graph_output:
        y = g.conv(y, c, 4, k=1)
    return g.model(y, (1, 3, h, w), (1, c if graph_output else 4, h, w))


def _quantized(model, dt, fmt="QDQ", per_channel=False):
    return om.quantize(model, activation=dt, weight="int8", fmt=fmt, per_channel=per_channel,
                       reduce_range=True, calib=om.calibration(model, n=8, seed=3))


def _compare(model, level="all", seeds=(1, 2, 3), config=None):
    return om.compare_with_cpu_ep(model, level, seeds=seeds, config=config)


def _assert_folded(rep, differ, total):
    host = [(h["op_type"], h["reason"]) for h in rep["host_nodes"]
            if h["op_type"] not in ("QuantizeLinear", "DequantizeLinear")]
    assert not host, host
    assert len(rep["partitions"]) == 1, rep["partitions"]
    assert rep["claimed_nodes"] == rep["total_nodes"] - 2  # the graph's input Q and output DQ
    assert differ == 0, f"{differ}/{total} elements differ"


FC_CASES = [(ch, op, dt, pc, fmt, lvl)
            for ch in ("flatten", "reshape", "nhwc_flatten", "wh_flatten", "rows_then_flatten",
                       "squeeze_flatten")
            for op in ("Gemm", "MatMul")
            for dt, pc, fmt, lvl in (("int8", False, "QDQ", "all"), ("uint8", True, "QDQ", "all"),
                                     ("int8", True, "QDQ", "basic"), ("uint8", False, "QOperator", "all"))]


@pytest.mark.parametrize("chain,op,dt,per_channel,fmt,level", FC_CASES,
                         ids=["-".join(map(str, c)) for c in FC_CASES])
def test_layout_chain_into_fc_bit_exact(chain, op, dt, per_channel, fmt, level):
    model = _quantized(_fc_model(chain, op), dt, fmt, per_channel)
    differ, total, rep = _compare(model, level)
    _assert_folded(rep, differ, total)


SHUFFLES = [(c, g, dt, fmt, lvl, out)
            for c, g in ((12, 3), (24, 2), (16, 4))
            for dt, fmt, lvl, out in (("int8", "QDQ", "all", False), ("uint8", "QDQ", "basic", False),
                                      ("uint8", "QOperator", "all", False),
                                      ("int8", "QDQ", "all", True))]


@pytest.mark.parametrize("c,groups,dt,fmt,level,graph_output", SHUFFLES,
                         ids=["-".join(map(str, s)) for s in SHUFFLES])
def test_channel_shuffle_bit_exact(c, groups, dt, fmt, level, graph_output):
    model = _quantized(_shuffle_model(c, groups, graph_output=graph_output), dt, fmt)
    differ, total, rep = _compare(model, level)
    _assert_folded(rep, differ, total)
    ir_ops = sum(p["ir_ops"] for p in rep["partitions"])
    assert ir_ops <= (2 if graph_output else 3), rep["partitions"]  # conv, shuffle (, conv)


def _pixel_chain(g, x, chain, c, h, w):
    """Layout steps on x [1, c, h, w] that move elements across pixels (no
    channel permutation, no view on the NPU); the result [1, c', h', w']."""
    if chain == "hw_swap":  # [1, C, H, W] -> [1, C, W, H]
        return g.op("Transpose", [x], perm=[0, 1, 3, 2]), (c, w, h)
    if chain == "reshape_rows":  # the NCHW bytes read as [1, C, W, H]
        return g.op("Reshape", [x, g.const(np.array([1, c, w, h], np.int64))]), (c, w, h)
    if chain == "to_nhwc_as_nchw":  # tf2onnx-like: Transpose(0,2,3,1) then read as NCHW
        t = g.op("Transpose", [x], perm=[0, 2, 3, 1])
        return g.op("Reshape", [t, g.const(np.array([1, c, h, w], np.int64))]), (c, h, w)
    if chain == "space_fold":  # [1, C, H, W] -> [1, C*2, H/2, W] through a 5-D transpose
        r = g.op("Reshape", [x, g.const(np.array([1, c, h // 2, 2, w], np.int64))])
        t = g.op("Transpose", [r], perm=[0, 1, 3, 2, 4])
        return g.op("Reshape", [t, g.const(np.array([1, c * 2, h // 2, w], np.int64))]), (c * 2, h // 2, w)
    raise ValueError(chain)


PIXEL_CHAINS = ["hw_swap", "reshape_rows", "to_nhwc_as_nchw", "space_fold"]


@pytest.mark.parametrize("chain", PIXEL_CHAINS)
@pytest.mark.parametrize("dt,fmt", [("int8", "QDQ"), ("uint8", "QDQ"), ("int8", "QOperator")])
@pytest.mark.parametrize("at_output", [False, True])
def test_chain_moving_elements_between_pixels_is_one_transpose(chain, dt, fmt, at_output):
    """A chain that moves elements across pixels, read by a Conv or ending at
    the graph output (a partition output), with nothing to absorb its order:
    one TRANSPOSE (DMA copy passes) between RESHAPE views on the NPU (before:
    the chain on the host, 2 partitions when a Conv read it). Every layout
    node claimed, one partition, zero differing elements."""
    g = _G(30)
    c, h, w = 8, 6, 5
    if chain == "space_fold":
        h = 6
    x = g.conv("x", 3, c, k=1)
    t, (c2, h2, w2) = _pixel_chain(g, x, chain, c, h, w)
    if at_output:
        y, out = t, (1, c2, h2, w2)
    else:
        y, out = g.conv(t, c2, 4, k=1), (1, 4, h2, w2)
    model = _quantized(g.model(y, (1, 3, h, w), out), dt, fmt=fmt)
    differ, total, rep = _compare(model)
    host = {h_["op_type"] for h_ in rep["host_nodes"]}
    assert host <= {"QuantizeLinear", "DequantizeLinear"}, rep["host_nodes"]
    assert len(rep["partitions"]) == 1, rep["partitions"]
    assert differ == 0, f"{differ}/{total} elements differ"


@pytest.mark.parametrize("dt", ["int8", "uint8"])
def test_chain_splitting_an_axis_unevenly_is_two_copies(dt):
    """Transpose(0,1,3,2) then Reshape [1, 4, 6, 6] -> [1, 4, 4, 9]: the
    Reshape cuts the transposed rows unevenly, so no single transpose moves
    these bytes: one copy to the Transpose's ONNX order, the Reshape a view of
    it, one copy to the NPU's order; one partition, exact."""
    g = _G(31)
    x = g.conv("x", 3, 4, k=1)
    t = g.op("Transpose", [x], perm=[0, 1, 3, 2])
    r = g.op("Reshape", [t, g.const(np.array([1, 4, 4, 9], np.int64))])
    y = g.conv(r, 4, 4, k=1)
    model = _quantized(g.model(y, (1, 3, 6, 6), (1, 4, 4, 9)), dt)
    differ, total, rep = _compare(model)
    assert {h["op_type"] for h in rep["host_nodes"]} <= {"QuantizeLinear", "DequantizeLinear"}
    assert len(rep["partitions"]) == 1
    assert differ == 0, f"{differ}/{total} elements differ"


def test_layout_chain_with_two_readers():
    """A flattened map that something else also reads cannot be folded into
    one Gemm's weights. Its Flatten keeps the ONNX (NCHW) order: the Conv's
    output, already in the partition in NHWC, goes through one TRANSPOSE to
    that order (before: read without the NCHW conversion as a partition
    input, two partitions); the Gemm and the other reader claimed, one
    partition, results exact."""
    g = _G(40)
    x = g.conv("x", 3, 8)
    f = g.op("Flatten", [x], axis=1)
    y1 = g.op("Gemm", [f, g.w((10, 128), 0.1), g.w((10,), 0.1)], transB=1)
    y2 = g.op("Relu", [f])
    m = om.float_model(g.nodes, {"x": (1, 3, 4, 4)}, {y1: (1, 10), y2: (1, 128)}, g.inits)
    model = _quantized(m, "int8")
    differ, total, rep = _compare(model)
    host = {h["op_type"] for h in rep["host_nodes"]}
    assert host <= {"QuantizeLinear", "DequantizeLinear"}, rep["host_nodes"]
    assert len(rep["partitions"]) == 1
    assert differ == 0, f"{differ}/{total} elements differ"


def _boundary_model(kind, c=1, hw=(6, 5)):
    g = _G(50)
    h, w = hw
    if kind == "nhwc_input":  # tf2onnx: an NHWC graph input transposed to NCHW
        t = g.op("Transpose", ["x"], perm=[0, 3, 1, 2])
        in_shape = (1, h, w, c)
    else:  # tf2onnx's one-channel form of the same: a Reshape
        t = g.op("Reshape", ["x", g.const(np.array([1, c, h, w], np.int64))])
        in_shape = (1, h, w, c)
    y = g.conv(t, c, 4)
    return g.model(y, in_shape, (1, 4, h, w))


@pytest.mark.parametrize("kind,c", [("nhwc_input", 3), ("nhwc_input", 1), ("reshape_input", 1)])
@pytest.mark.parametrize("dt", ["int8", "uint8"])
def test_nhwc_partition_input_read_in_onnx_order(kind, c, dt):
    """A chain at a partition input whose output's NHWC order is its input's
    ONNX order (tf2onnx's input Transpose(0,3,1,2), or its Reshape for one
    channel): the input enters the Program as it is (no NCHW conversion)."""
    model = _quantized(_boundary_model(kind, c), dt)
    differ, total, rep = _compare(model)
    _assert_folded(rep, differ, total)


def test_nhwc_view_read_by_the_host():
    """tf2onnx's Transpose(0,2,3,1) -> Reshape([1, H*W*C]) read by a host op
    (Softmax): the chain keeps the NPU's order, a RESHAPE (a view); the
    partition's output bytes are the CPU EP's.

    The Softmax after it is ORT's business, and the partition boundary
    changes how ORT runs it: alone, the CPU EP turns the int8 Q -> DQ pairs
    around it into uint8 (QDQS8ToU8Transformer) and fuses QLinearSoftmax
    (U8); next to the partition, its DequantizeLinear reads the partition's
    int8 output, the types no longer match and it runs unfused in float. At
    ORT_ENABLE_BASIC and with session.qdqisint8allowed (no conversion) the
    outputs are equal; at the default level the differences are reported."""
    g = _G(60)
    x = g.conv("x", 3, 8)
    t = g.op("Transpose", [x], perm=[0, 2, 3, 1])
    r = g.op("Reshape", [t, g.const(np.array([1, -1], np.int64))])
    y = g.op("Softmax", [r], axis=-1)
    model = _quantized(g.model(y, (1, 3, 4, 4), (1, 128)), "int8")
    for level, config in (("basic", None), ("all", {"session.qdqisint8allowed": "1"})):
        differ, total, rep = _compare(model, level, config=config)
        host = {h["op_type"] for h in rep["host_nodes"]}
        assert not host & LAYOUT_OPS, rep["host_nodes"]
        assert len(rep["partitions"]) == 1
        assert differ == 0, f"{level}: {differ}/{total} elements differ"
    differ, total, _ = _compare(model, "all")
    print(f"default level: {differ}/{total} elements differ (ORT's QLinearSoftmax U8 alone, "
          "float Softmax next to the partition)")


@pytest.mark.parametrize("dt,fmt", [("int8", "QDQ"), ("uint8", "QDQ"), ("uint8", "QOperator")])
def test_squeeze_unsqueeze_units(dt, fmt):
    """tf2onnx's GlobalAveragePool -> Squeeze(axes 2, 3) -> MatMul head, and
    an Unsqueeze / Squeeze pair on a [1, C] vector: views (their NCHW and
    NHWC orders agree), claimed as RESHAPE units; zero differing elements."""
    g = _G(70)
    x = g.conv("x", 3, 8)
    p = g.op("GlobalAveragePool", [x])
    s = g.op("Squeeze", [p, g.const(np.array([2, 3], np.int64))])
    u = g.op("Unsqueeze", [s, g.const(np.array([1], np.int64))])
    s = g.op("Squeeze", [u, g.const(np.array([1], np.int64))])
    y = g.op("MatMul", [s, g.w((8, 6), 0.3)])
    model = _quantized(g.model(y, (1, 3, 4, 4), (1, 6)), dt, fmt)
    differ, total, rep = _compare(model)
    _assert_folded(rep, differ, total)


@pytest.mark.parametrize("consumer", ["depthwise_s2", "conv", "maxpool"])
@pytest.mark.parametrize("dt", ["int8", "uint8"])
@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_pad_units(consumer, dt, fmt):
    """Pad (constant 0) of height and width, as tf2onnx writes before a
    stride-2 depthwise convolution: DQ -> Pad -> Q at one scale is the IR's
    PAD (the padding is the zero point), folded into a convolution or a
    standalone pass; QOperator: the Pad on the 8-bit tensor itself, its value
    the zero point (quantize_static's QPad); zero differing elements."""
    if fmt == "QOperator" and dt == "uint8" and consumer == "maxpool":
        pytest.skip("the CPU EP alone fails to create the session: its PadFusion folds the uint8 "
                    "Pad into the MaxPool, a pad of 2 with a 2x2 kernel ('Pad should be smaller "
                    "than kernel')")
    g = _G(80)
    x = g.conv("x", 3, 8, k=1)
    p = g.op("Pad", [x, g.const(np.array([0, 0, 0, 1, 0, 0, 1, 2], np.int64))], mode="constant")
    if consumer == "depthwise_s2":
        y = g.op("Conv", [p, g.w((8, 1, 3, 3), 0.3), g.w((8,), 0.1)], kernel_shape=[3, 3],
                 strides=[2, 2], group=8)
        out = (1, 8, 3, 4)
    elif consumer == "conv":
        y = g.op("Conv", [p, g.w((4, 8, 3, 3), 0.3), g.w((4,), 0.1)], kernel_shape=[3, 3])
        out = (1, 4, 6, 7)
    else:
        y = g.op("MaxPool", [p], kernel_shape=[2, 2], strides=[2, 2])
        out = (1, 8, 4, 4)
    model = _quantized(g.model(y, (1, 3, 7, 6), out), dt, fmt=fmt)
    if fmt == "QOperator":  # the Pad runs on the 8-bit tensor
        pads = [n for n in onnx.load_from_string(model).graph.node if n.op_type == "Pad"]
        assert len(pads) == 1 and not pads[0].input[0].endswith("DequantizeLinear"), pads
    differ, total, rep = _compare(model)
    _assert_folded(rep, differ, total)


def test_pad_reflect_declined_with_reason():
    g = _G(90)
    x = g.conv("x", 3, 8, k=1)
    p = g.op("Pad", [x, g.const(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))], mode="reflect")
    y = g.conv(p, 8, 4)
    model = _quantized(g.model(y, (1, 3, 6, 6), (1, 4, 8, 8)), "int8")
    differ, total, rep = _compare(model)
    reasons = [h["reason"] for h in rep["host_nodes"] if h["op_type"] == "Pad"]
    assert reasons and "reflect" in reasons[0], rep["host_nodes"]
    assert differ == 0


@pytest.mark.parametrize("source", ["graph_input", "host_tensor"])
@pytest.mark.parametrize("dt", ["int8", "uint8"])
def test_sibling_units_share_a_partition(source, dt):
    """Three Conv units reading the same graph input (or the same host
    tensor: a Softmax's output) have no producer in common on the NPU; they
    share one partition instead of one each (3 before)."""
    g = _G(60)
    x = "x"
    if source == "host_tensor":
        x = g.op("Softmax", ["x"], axis=1)  # no NPU implementation: on the host
    ys = [g.conv(x, 3, 4, k=k) for k in (1, 3, 5)]
    g.nodes[-1].output[0] = "y"
    ys[-1] = "y"
    m = om.float_model(g.nodes, {"x": (1, 3, 6, 6)}, {y: (1, 4, 6, 6) for y in ys}, g.inits)
    model = _quantized(m, dt)
    differ, total, rep = _compare(model)
    assert {n["op_type"] for p in rep["partitions"] for n in p["nodes"]} >= {"Conv"}
    assert sum(n["op_type"] == "Conv" for p in rep["partitions"] for n in p["nodes"]) == 3
    assert len(rep["partitions"]) == 1, rep["partitions"]
    assert differ == 0, f"{differ}/{total} elements differ"


@pytest.mark.parametrize("dt,fmt", [("int8", "QDQ"), ("uint8", "QDQ"), ("int8", "QOperator"),
                                    ("uint8", "QOperator")])
def test_nhwc_graph_output_leaves_raw(dt, fmt):
    """tf2onnx's closing Transpose(0,2,3,1) to an NHWC graph output: the
    output's ONNX order is the Conv's NHWC bytes, so the partition output
    leaves as it is (no NCHW conversion at the boundary, no copy): the IR is
    the Conv and a RESHAPE view (2 ops; a TRANSPOSE copy and its views
    before). Exact."""
    g = _G(32)
    x = g.conv("x", 3, 8, k=1)
    y = g.op("Transpose", [x], perm=[0, 2, 3, 1])
    model = _quantized(g.model(y, (1, 3, 6, 5), (1, 6, 5, 8)), dt, fmt=fmt)
    differ, total, rep = _compare(model)
    assert {h["op_type"] for h in rep["host_nodes"]} <= {"QuantizeLinear", "DequantizeLinear"}
    assert len(rep["partitions"]) == 1 and rep["partitions"][0]["ir_ops"] == 2, rep["partitions"]
    assert differ == 0, f"{differ}/{total} elements differ"


def test_nhwc_output_also_read_on_the_npu_is_copied():
    """The same Transpose read by a Conv too: its NPU reader needs the NHWC
    layout of [1, H, W, C], so the chain is a copy and the partition output
    converted as usual; one partition, exact."""
    g = _G(33)
    x = g.conv("x", 3, 8, k=1)
    t = g.op("Transpose", [x], perm=[0, 2, 3, 1])
    y1 = g.op("Relu", [t])
    y2 = g.conv(t, 6, 4, k=1)
    m = om.float_model(g.nodes, {"x": (1, 3, 6, 5)}, {y1: (1, 6, 5, 8), y2: (1, 4, 5, 8)}, g.inits)
    differ, total, rep = _compare(_quantized(m, "int8"))
    assert {h["op_type"] for h in rep["host_nodes"]} <= {"QuantizeLinear", "DequantizeLinear"}
    assert len(rep["partitions"]) == 1 and rep["partitions"][0]["ir_ops"] > 4, rep["partitions"]
    assert differ == 0, f"{differ}/{total} elements differ"


def test_int16_chain_moving_elements_declined_with_reason():
    """int16_activations: the TRANSPOSE copy moves 8-bit tensors only, so a
    16-bit chain across pixels stays on the host with that reason (not a
    compile failure); the session runs (the int16 Convs are within one step,
    test_ep_onnxruntime)."""
    g = _G(34)
    x = g.conv("x", 3, 8, k=1)
    t = g.op("Transpose", [x], perm=[0, 1, 3, 2])
    y = g.conv(t, 8, 4, k=1)
    m = om.quantize(g.model(y, (1, 3, 6, 5), (1, 4, 5, 6)), activation="int16", weight="int8",
                    extra_options={"ActivationSymmetric": True})
    opts = {"int16_activations": "1", "min_partition_macs": "0"}
    feeds = om.input_feeds(m, seed=1)[0]
    got = om.session(m, "nacc", opts).run(None, feeds)[0]
    rep = nort.partition_reports()[-1]
    reasons = [h["reason"] for h in rep["host_nodes"] if h["op_type"] == "Transpose"]
    assert reasons and "8-bit tensors only" in reasons[0], rep["host_nodes"]
    want = om.session(m, ["CPUExecutionProvider"]).run(None, feeds)[0]
    assert got.shape == want.shape

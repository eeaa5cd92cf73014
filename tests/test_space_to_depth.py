"""Convolutions of a stride above 3 or a kernel above 15 (issue 15, item 4),
bit-exact against TFLite 2.21 BUILTIN_REF through the delegate and against
ORT's CPU EP through the EP (docs/compiler.md "Space-to-depth convolution"):

a CONV_2D whose stride (s_h, s_w) or kernel exceeds NACC_KERNEL's limits is a
space-to-depth gather T[i, j, (r, u, c)] = x[s_h*i + r, s_w*j + u, c] by DMA
copy passes into a staging tensor, then a stride-1 convolution over
s_h*s_w*C channels whose window holds the original weights rearranged and
zero-padded at compile time: a ViT 16x16 stride-16 patch embedding becomes a
1x1 matrix product, an AlexNet 11x11 stride 4 a 3x3 stride-1 convolution.

Hand-built single ops (SAME and VALID, several channel counts, boundary and
random inputs) at 1, 8 and 32 cores and at 16 KB of SRAM, the declines with
their reasons, the Keras models patch_embed_64 and alexnet_stem_67 (every node
claimed, one partition), and the ONNX counterparts on the EP.
"""
import numpy as np
import pytest

import nacc
from delegate_models import ModelBuilder, run
from test_grouped_dilated import _onnx, assert_onnx_unit_exact
from test_mean_avgpool import CONFIG_IDS, CONFIGS, assert_exact, assert_model_one_partition_exact
from tflite_builder import make_interpreter


def conv_model(in_shape, cout, k, stride, padding, kw=None):
    m = ModelBuilder()
    x = m.input(in_shape)
    y = m.conv(x, cout, k=k, kw=kw, stride=stride, padding=padding, activation="NONE")
    return m.build([y])


# (id, input NHWC, output channels, kernel, stride, padding)
TFLITE_CASES = [
    ("16x16-s16-valid-c3", (1, 32, 48, 3), 16, 16, 16, "VALID"),
    ("16x16-s16-same-c8", (1, 32, 32, 8), 24, 16, 16, "SAME"),
    ("16x16-s16-valid-ragged", (1, 37, 35, 3), 8, 16, 16, "VALID"),
    ("11x11-s4-valid-c3", (1, 35, 35, 3), 32, 11, 4, "VALID"),
    ("11x11-s4-same-c3", (1, 32, 28, 3), 16, 11, 4, "SAME"),
    ("11x11-s4-valid-c1", (1, 27, 31, 1), 8, 11, 4, "VALID"),
    ("7x7-s4-same-c8", (1, 28, 28, 8), 16, 7, 4, "SAME"),
    ("7x7-s4-valid-c16", (1, 27, 29, 16), 8, 7, 4, "VALID"),
    ("8x8-s8-valid-c4", (1, 32, 24, 4), 16, 8, 8, "VALID"),
    ("8x8-s8-same-c4", (1, 32, 24, 4), 16, 8, 8, "SAME"),
    ("8x8-s8-valid-ragged", (1, 30, 27, 4), 8, 8, 8, "VALID"),
    ("3x3-s4-valid", (1, 17, 17, 8), 8, 3, 4, "VALID"),      # kernel below the stride
    ("17x17-s2-valid", (1, 21, 21, 2), 8, 17, 2, "VALID"),   # kernel above 15, stride 2
    ("5x5-s5-same-c70", (1, 20, 15, 70), 8, 5, 5, "SAME"),   # 1750 gathered channels
    # 17 taps high (gathered by 2), 3 wide (kept: a stride-2 window)
    ("17x3-s2-one-axis", (1, 21, 12, 3), 8, (17, 3), 2, "VALID"),
]


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("case", TFLITE_CASES, ids=[c[0] for c in TFLITE_CASES])
def test_tflite_space_to_depth_exact(case, config):
    _, shape, cout, k, stride, padding = case
    kh, kw = k if isinstance(k, tuple) else (k, k)
    report = assert_exact(conv_model(shape, cout, kh, stride, padding, kw), shape, **config)
    assert len({n.partition for n in report.nodes}) == 1


def _reasons(model, shape):
    report = assert_exact(model, shape, expect_claimed=False)
    (node,) = report.nodes
    assert not node.claimed
    return " ".join(r.message for r in node.reasons)


@pytest.mark.parametrize("shape,k,stride,padding,expect", [
    # SAME over a height that is no multiple of the stride: the last cell
    # mixes input and padding that taps of nonzero weight read.
    ((1, 40, 40, 3), 16, 16, "SAME", "is not a multiple of the stride 16"),
    ((1, 30, 32, 4), 8, 8, "SAME", "is not a multiple of the stride 8"),
    # 16 x 16 x 300 gathered channels exceed the 16-bit channel fields.
    ((1, 16, 16, 300), 16, 16, "VALID", "76800 channels, above 65535"),
    # a kernel above 15 with stride 1 has no gather factor
    ((1, 18, 18, 2), 16, 1, "VALID", "kernel 16x16 \u2014 kernel height and width must be in"),
])
def test_space_to_depth_declines(shape, k, stride, padding, expect):
    msg = _reasons(conv_model(shape, 4, k, stride, padding), shape)
    assert expect in msg, msg


def test_depthwise_stride4_declined():
    m = ModelBuilder()
    x = m.input((1, 16, 16, 8))
    y = m.depthwise(x, k=3, stride=4, activation="NONE", padding="VALID")
    msg = _reasons(m.build([y]), (1, 16, 16, 8))
    assert "stride 4x4: a DEPTHWISE_CONV_2D has no space-to-depth form" in msg, msg


def test_ragged_valid_claimed_with_the_ops_macs():
    """A ragged 11x11 stride-4 VALID convolution (35 = 8 x 4 + 3: a last
    partial cell per axis, read by taps of weight 0 only) is claimed, exact,
    and reports the op's own MACs (not the zero-padded 12x12 window's)."""
    shape = (1, 35, 35, 3)
    model = conv_model(shape, 8, 11, 4, "VALID")
    d = nacc.load_delegate(log_level="off", min_partition_macs=0, cores=1)
    interp = make_interpreter(model, delegates=[d])
    interp.allocate_tensors()
    x0 = np.random.default_rng(0).integers(-128, 128, shape, dtype=np.int8)
    interp.set_tensor(interp.get_input_details()[0]["index"], x0)
    interp.invoke()
    np.testing.assert_array_equal(interp.get_tensor(interp.get_output_details()[0]["index"]),
                                  run(model, [x0])[0])
    (node,) = d.report().nodes
    assert node.claimed
    assert node.macs == 7 * 7 * 11 * 11 * 3 * 8


# ---- whole models -----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["patch_embed_64", "alexnet_stem_67"])
@pytest.mark.parametrize("cores", [1, 8, 32])
def test_keras_models_one_partition_bit_exact(name, cores):
    """A ViT-style 16x16 stride-16 patch embedding and an AlexNet-style
    11x11 stride-4 first layer: every node claimed, one partition, bit-exact
    vs BUILTIN_REF."""
    keras_models = pytest.importorskip("keras_models")
    model = keras_models.converted(name)
    assert_model_one_partition_exact(model, cores)
    # the model really has the large-stride layer: its first CONV_2D's filter
    # and output size (16x16 over 64 -> 4x4; 11x11 stride 4 over 67 -> 15x15)
    ref = make_interpreter(model)
    shapes = {t["index"]: tuple(t["shape"]) for t in ref.get_tensor_details()}
    first = next(o for o in ref._get_ops_details() if o["op_name"] == "CONV_2D")
    kernel, out = shapes[first["inputs"][1]][1:3], shapes[first["outputs"][0]][1:3]
    assert (kernel, out) == {"patch_embed_64": ((16, 16), (4, 4)),
                             "alexnet_stem_67": ((11, 11), (15, 15))}[name]


# ---- ONNX: the EP against the CPU EP ----------------------------------------------------

# 7-bit weights (ORT's reduce_range): the CPU EP's AVX2 u8s8 kernel saturates
# int16 pair sums with 8-bit weights (tests/test_ep_exact.py).
ONNX_CASES = [
    ("16x16-s16", dict(c_in=3, c_out=16, hw=(32, 48), k=16, stride=16, pads=(0, 0, 0, 0))),
    ("16x16-s16-c8", dict(c_in=8, c_out=8, hw=(32, 32), k=16, stride=16, pads=(0, 0, 0, 0))),
    ("11x11-s4", dict(c_in=3, c_out=16, hw=(35, 35), k=11, stride=4, pads=(0, 0, 0, 0))),
    ("11x11-s4-pad2", dict(c_in=3, c_out=8, hw=(32, 32), k=11, stride=4, pads=(2, 2, 2, 2))),
    ("7x7-s4-pad3", dict(c_in=8, c_out=16, hw=(28, 28), k=7, stride=4, pads=(3, 3, 3, 3))),
    ("8x8-s8", dict(c_in=4, c_out=16, hw=(32, 24), k=8, stride=8, pads=(0, 0, 0, 0))),
    ("8x8-s8-asym", dict(c_in=4, c_out=8, hw=(32, 24), k=8, stride=8, pads=(1, 2, 0, 3))),
]


@pytest.mark.parametrize("cores", ["1", "8", "32"])
@pytest.mark.parametrize("case", ONNX_CASES, ids=[c[0] for c in ONNX_CASES])
def test_onnx_space_to_depth_exact(case, cores):
    _, om = _onnx()
    assert_onnx_unit_exact(om.qdq_unit(om.conv(**case[1]), per_channel=True, seed=3,
                                       weight_bits=7), cores, 3)


@pytest.mark.parametrize("cores", ["1", "8", "32"])
@pytest.mark.parametrize("kind", ["patch_embed", "alexnet"])
def test_onnx_stem_models_exact(kind, cores):
    """quantize_static QDQ models (7-bit weights) of a ViT patch embedding and
    an AlexNet first layer: every Conv on the EP, equal to the CPU EP."""
    nort, om = _onnx()
    model = om.quantize(om.strided_stem(kind), per_channel=True, reduce_range=True)
    cpu = om.session(model, ["CPUExecutionProvider"])
    npu = om.session(model, "nacc", {"cores": cores})
    rep = nort.partition_reports()[-1]
    host = [h["op_type"] for h in rep["host_nodes"]]
    assert "Conv" not in host, rep["host_nodes"]
    claimed = [n["op_type"] for p in rep["partitions"] for n in p["nodes"]]
    assert claimed.count("Conv") == 2, claimed
    for seed in (5, 6):
        feeds = om.input_feeds(model, seed=seed)[0]
        np.testing.assert_array_equal(npu.run(None, feeds)[0], cpu.run(None, feeds)[0])

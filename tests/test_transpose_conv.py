"""TRANSPOSE_CONV (issue 15, item 7) by phase decomposition, bit-exact against
TFLite 2.21 BUILTIN_REF (reference_integer_ops::TransposeConv: an int32
scratch sum of (x - zp_in) * w over every in-bounds tap, plus the bias,
MultiplyByQuantizedMultiplier per output channel, the output zero point and
the fused activation's clamp). docs/compiler.md "TRANSPOSE_CONV": stride s_h x
s_w becomes s_h * s_w stride-1 convolutions with the sub-kernels of taps
r, r + s, .., each writing its interleaved sub-grid of the output through the
DMA pitches.

Hand-built single ops (strides 1-3, kernels 2-5, SAME / VALID, output sizes
the converter writes and others, per-channel weights, with and without bias,
fused RELU) on random and boundary inputs at 1, 8 and 32 cores and at 16 KB of
SRAM; a random sweep; the declines with their reasons; a U-Net-style Keras
model (Conv2DTranspose) converted by the TFLite converter, in one partition.
"""
import numpy as np
import pytest

import nacc
from test_mean_avgpool import CONFIG_IDS, CONFIGS, assert_exact
from tflite_builder import GraphBuilder, QTensor


def transpose_conv_model(in_shape, cout, k, stride, padding, out_hw=None, bias=True,
                         activation="NONE", seed=0, kw=None, per_tensor=False, version=3):
    """One TRANSPOSE_CONV; out_hw defaults to what Keras' Conv2DTranspose gives."""
    rng = np.random.default_rng(seed)
    _, h, w, cin = in_shape
    kh, kw = k, kw or k
    sh, sw = (stride, stride) if np.isscalar(stride) else stride
    if out_hw is None:
        out_hw = ((h * sh, w * sw) if padding == "SAME"
                  else ((h - 1) * sh + kh, (w - 1) * sw + kw))
    oh, ow = out_hw
    g = GraphBuilder()
    shape = g.add_tensor(QTensor((4,), "int32", data=np.array([1, oh, ow, cout], np.int32)))
    scales = [0.01] if per_tensor else list(np.linspace(0.004, 0.02, cout))
    wt = g.add_tensor(QTensor((cout, kh, kw, cin), "int8", scale=scales,
                              zero_point=[0] * len(scales), quantized_dimension=0,
                              data=rng.integers(-127, 128, (cout, kh, kw, cin))))
    x = g.add_tensor(QTensor(tuple(in_shape), "int8", scale=0.05, zero_point=-3))
    inputs = [shape, wt, x]
    if bias:
        bscales = [0.05 * s for s in (scales * cout if per_tensor else scales)]
        inputs.append(g.add_tensor(QTensor((cout,), "int32", scale=bscales, zero_point=[0] * cout,
                                           data=rng.integers(-3000, 3000, cout))))
    o = g.add_tensor(QTensor((1, oh, ow, cout), "int8", scale=0.08, zero_point=-5))
    opts = dict(padding=padding, strideH=sh, strideW=sw)
    if activation != "NONE":
        opts["fusedActivationFunction"] = activation
    g.add_op("TRANSPOSE_CONV", inputs, [o], opts, version=version)
    return g.build([x], [o])


# (id, in_shape, cout, k, stride, padding, out_hw, extra options)
CASES = [
    ("s2-k3-same", (1, 5, 6, 8), 8, 3, 2, "SAME", None, {}),
    ("s2-k4-same-unet", (1, 6, 7, 16), 8, 4, 2, "SAME", None, {}),
    ("s2-k2-valid", (1, 5, 4, 8), 6, 2, 2, "VALID", None, {}),
    ("s2-k2-same", (1, 5, 4, 8), 6, 2, 2, "SAME", None, {}),
    ("s2-k3-valid", (1, 4, 5, 3), 5, 3, 2, "VALID", None, {}),
    ("s3-k3-same", (1, 4, 5, 6), 4, 3, 3, "SAME", None, {}),
    ("s3-k5-valid", (1, 3, 4, 6), 4, 5, 3, "VALID", None, {}),
    ("s3-k4-same-relu", (1, 4, 4, 5), 7, 4, 3, "SAME", None, dict(activation="RELU")),
    ("s1-k3-same", (1, 6, 7, 8), 8, 3, 1, "SAME", None, {}),
    ("s1-k5-valid", (1, 6, 7, 4), 3, 5, 1, "VALID", None, {}),
    ("s2x1-k3x5-same", (1, 5, 6, 4), 4, 3, (2, 1), "SAME", None, dict(kw=5)),
    ("s2-k5-same-out-odd", (1, 5, 5, 8), 8, 5, 2, "SAME", (9, 10), {}),
    ("s2-k3-valid-out-padding", (1, 4, 4, 8), 8, 3, 2, "VALID", (10, 10), {}),
    ("s2-k3-same-no-bias", (1, 5, 6, 8), 8, 3, 2, "SAME", None, dict(bias=False)),
    ("s2-k4-relu6-c70", (1, 4, 5, 70), 70, 4, 2, "SAME", None, dict(activation="RELU6")),
    ("s2-k3-one-channel-per-tensor", (1, 5, 5, 4), 1, 3, 2, "SAME", None, dict(per_tensor=True)),
    ("s2-k4-v4-relu", (1, 5, 5, 8), 8, 4, 2, "SAME", None, dict(activation="RELU", version=4)),
    # Outputs no input reaches (TFLite: the bias alone) and phases with no tap:
    # windows widened by taps of weight 0.
    ("s3-k2-kernel-below-stride", (1, 4, 4, 4), 4, 2, 3, "SAME", None, {}),
    ("s2-k1-kernel-below-stride", (1, 4, 5, 4), 6, 1, 2, "VALID", (8, 10), {}),
    ("s2-k3-outputs-past-the-input", (1, 3, 3, 4), 4, 3, 2, "VALID", (12, 12), {}),
]


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_transpose_conv_exact(case, config):
    _, in_shape, cout, k, stride, padding, out_hw, extra = case
    model = transpose_conv_model(in_shape, cout, k, stride, padding, out_hw, **extra)
    report = assert_exact(model, in_shape, **config)
    assert [n.op for n in report.nodes] == ["TRANSPOSE_CONV"]


def test_phases_in_the_program():
    """Stride 2x3 runs as 2 x 3 = 6 phase convolutions (direct mode, one
    NPU_OP_CONV each at least) under one op record."""
    from nacc import _core
    g = _core.Graph()
    x = g.add_tensor("x", [1, 5, 6, 8], "int8", scales=0.05, zero_points=-3)
    w = g.add_tensor("w", [8, 4, 4, 8], "int8", scales=[0.02] * 8, zero_points=[0] * 8, axis=0,
                     data=np.ones((8, 4, 4, 8), np.int8))
    y = g.add_tensor("y", [1, 10, 18, 8], "int8", scales=0.1, zero_points=5)
    g.add_op("TRANSPOSE_CONV", [x, w], [y], name="tc", stride_h=2, stride_w=3, pad_top=1,
             pad_left=0)
    info = _core.program_info(_core.compile(g, cores=1))
    (rec,) = info["ops"]
    assert rec["kind"] == "TRANSPOSE_CONV" and rec["lowering"] == "transpose_phase"
    ops = [c["opcode"] for c in _core.decode_stream(info["commands"])]
    units = {o for o in ops if o.startswith("NPU_OP_")} - {"NPU_OP_KERNEL_WAIT", "NPU_OP_STOP"}
    assert ops.count("NPU_OP_CONV") >= 6 and units == {"NPU_OP_CONV"}, set(ops)


@pytest.mark.parametrize("seed", range(24))
def test_transpose_conv_random_sweep(seed):
    """Random strides 1-3, kernels 1-5 per axis, SAME / VALID, output sizes
    around the converter's (one more or less), fused activations: claimed, exact."""
    rng = np.random.default_rng(7100 + seed)
    h, w = (int(v) for v in rng.integers(1, 9, 2))
    cin, cout = int(rng.integers(1, 20)), int(rng.integers(1, 20))
    kh, kw = (int(v) for v in rng.integers(1, 6, 2))
    sh, sw = (int(v) for v in rng.integers(1, 4, 2))
    padding = "SAME" if rng.random() < 0.5 else "VALID"
    base = ((h * sh, w * sw) if padding == "SAME" else ((h - 1) * sh + kh, (w - 1) * sw + kw))
    jitter = rng.integers(-1, 2, 2) if rng.random() < 0.4 else (0, 0)
    out_hw = tuple(max(1, int(b + j)) for b, j in zip(base, jitter))
    act = str(rng.choice(["NONE", "RELU", "RELU6"]))
    model = transpose_conv_model((1, h, w, cin), cout, kh, (sh, sw), padding, out_hw,
                                 bias=bool(rng.random() < 0.8), activation=act, kw=kw,
                                 seed=seed)
    report = assert_exact(model, (1, h, w, cin), expect_claimed=False,
                          **CONFIGS[seed % len(CONFIGS)])
    (node,) = report.nodes
    # Within these sizes every window stays below 15 taps and 5 of padding.
    assert node.claimed, [r.message for r in node.reasons]


@pytest.mark.parametrize("name,in_shape,build,why", [
    ("per-tensor-multi-channel", (1, 4, 4, 4),
     lambda: transpose_conv_model((1, 4, 4, 4), 4, 3, 2, "SAME", per_tensor=True),
     "per-tensor weights with 4 output channels"),
    ("outputs-far-past-the-input", (1, 2, 2, 4),
     lambda: transpose_conv_model((1, 2, 2, 4), 4, 2, 1, "VALID", out_hw=(20, 3)),
     "needs a window of 19 taps"),
])
def test_transpose_conv_declined_with_reason(name, in_shape, build, why):
    report = assert_exact(build(), in_shape, expect_claimed=False)
    (node,) = report.nodes
    assert not node.claimed
    assert any(r.rule == "transpose_conv" and why in r.message for r in node.reasons), [
        r.message for r in node.reasons]


@pytest.mark.parametrize("cores", [1, 8, 32])
def test_unet_one_partition_bit_exact(cores):
    """A U-Net-style Keras model (Conv2DTranspose 4x4 s2 SAME + ReLU, 2x2 s2
    VALID, 3x3 s2 SAME, skip concatenations) converted by the TFLite
    converter: every node claimed, one partition, bit-exact vs BUILTIN_REF."""
    keras_models = pytest.importorskip("keras_models")
    from test_mean_avgpool import assert_model_one_partition_exact
    from tflite_builder import make_interpreter
    model = keras_models.converted("unet_32")
    assert sum(o["op_name"] == "TRANSPOSE_CONV"
               for o in make_interpreter(model)._get_ops_details()) == 3
    assert_model_one_partition_exact(model, cores)

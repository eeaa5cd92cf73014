"""RESIZE_BILINEAR (issue 15, item 7) as depthwise passes, bit-exact against
TFLite 2.21 BUILTIN_REF (reference_ops::ResizeBilinearInteger: 10-bit
fractions, the four raw products summed and divided by 2^20 rounding half
away from zero; measured: not TFLITE_SINGLE_ROUNDING). docs/compiler.md
"RESIZE_BILINEAR": per axis, runs of outputs with one weight pair; each run
pair a depthwise pass with the weights divided by their common divisor and
the exact rounded division by the denominators' product.

Whole factors 1, 2, 4 (and 8 without half_pixel_centers) on each axis, with
and without half_pixel_centers / align_corners, at 1/8/32 cores and 16 KB;
the declines with their reasons (factor 3, factor 8 with half pixel centers,
a non-integer ratio); the compiled Programs on the device's step interpreter and through the
delegate (replay); a Keras UpSampling2D(interpolation="bilinear") converted
by the TFLite converter, in one partition.
"""
import functools

import numpy as np
import pytest

from test_mean_avgpool import CONFIG_IDS, CONFIGS, assert_exact
from tflite_builder import GraphBuilder, QTensor


def bilinear_model(in_shape, out_hw, align_corners=False, half_pixel_centers=True):
    _, h, w, c = in_shape
    g = GraphBuilder()
    x = g.add_tensor(QTensor(tuple(in_shape), "int8", scale=0.05, zero_point=-3))
    size = g.add_tensor(QTensor((2,), "int32", data=np.array(out_hw, np.int32)))
    o = g.add_tensor(QTensor((1, *out_hw, c), "int8", scale=0.05, zero_point=-3))
    g.add_op("RESIZE_BILINEAR", [x, size], [o],
             dict(align_corners=align_corners, half_pixel_centers=half_pixel_centers),
             version=3 if half_pixel_centers else 2)
    return g.build([x], [o])


# (id, in_shape, out_hw, align_corners, half_pixel_centers)
CASES = [
    ("x2-half-pixel", (1, 5, 6, 8), (10, 12), False, True),
    ("x2-legacy", (1, 5, 6, 8), (10, 12), False, False),
    ("x4-half-pixel", (1, 3, 4, 5), (12, 16), False, True),
    ("x4-legacy", (1, 3, 4, 5), (12, 16), False, False),
    ("x8-legacy", (1, 2, 3, 4), (16, 24), False, False),
    ("x2x1-half-pixel", (1, 4, 7, 16), (8, 7), False, True),
    ("x1x4-half-pixel", (1, 4, 3, 70), (4, 12), False, True),
    ("x2-one-row", (1, 1, 5, 8), (2, 10), False, True),
    ("x2-c130", (1, 4, 4, 130), (8, 8), False, True),
]


def _ir_model(in_shape, out_hw, ac, hp):
    from nacc import _core
    g = _core.Graph()
    x = g.add_tensor("x", list(in_shape), "int8", scales=0.05, zero_points=-3)
    y = g.add_tensor("y", [1, *out_hw, in_shape[3]], "int8", scales=0.05, zero_points=-3)
    g.add_op("RESIZE_BILINEAR", [x], [y], name="rb", align_corners=ac, half_pixel_centers=hp)
    return g


def _run_program(g, cores, kb, execution, x):
    from nacc import _core
    prog = _core.compile(g, cores=cores, sram_kb=kb)
    rt = _core.Runtime(cores=cores, sram_kb=kb, threads=1, execution=execution)
    outs, _ = rt.run(prog, [x.reshape(-1)])
    return np.asarray(outs[0]).copy()


@pytest.mark.parametrize("cores,kb", [(1, 64), (8, 64), (32, 64), (4, 16)],
                         ids=["c1", "c8", "c32", "c4-16k"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_resize_bilinear_passes_exact_on_the_step_interpreter(case, cores, kb):
    """The compiled passes on the device's step interpreter == BUILTIN_REF,
    on random and boundary inputs."""
    from delegate_models import run
    from test_mean_avgpool import boundary_inputs
    _, in_shape, out_hw, ac, hp = case
    model = bilinear_model(in_shape, out_hw, ac, hp)
    g = _ir_model(in_shape, out_hw, ac, hp)
    for x in boundary_inputs(in_shape):
        got = _run_program(g, cores, kb, "step", x)
        np.testing.assert_array_equal(got.reshape(-1), run(model, [x])[0].reshape(-1))


def test_resize_bilinear_replay_equals_step():
    """Regression: the replay path merged the two interior column passes of a
    2x half-pixel resize (interleaved output pixels, the same input) into one
    depthwise layer of twice the channels, reading the second pass's input one
    pixel on (device/plan.cc merge_group)."""
    x = np.random.default_rng(0).integers(-128, 128, (1, 1, 6, 8)).astype(np.int8)
    g = _ir_model((1, 1, 6, 8), (2, 12), False, True)
    np.testing.assert_array_equal(_run_program(g, 1, 64, "replay", x),
                                  _run_program(g, 1, 64, "step", x))


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_resize_bilinear_exact_through_the_delegate(case, config):
    _, in_shape, out_hw, ac, hp = case
    report = assert_exact(bilinear_model(in_shape, out_hw, ac, hp), in_shape, **config)
    assert [n.op for n in report.nodes] == ["RESIZE_BILINEAR"]


@pytest.mark.parametrize("name,in_shape,out_hw,ac,hp,why", [
    ("x3", (1, 4, 4, 4), (12, 12), False, True, "exceed an int8 weight"),
    ("x8-half-pixel", (1, 2, 2, 4), (16, 16), False, True, "exceed an int8 weight"),
    ("non-integer", (1, 4, 4, 4), (6, 6), False, True, "not a whole multiple"),
    ("x2-align-corners", (1, 4, 4, 4), (8, 8), True, False, "exceed an int8 weight"),
])
def test_resize_bilinear_declined_with_reason(name, in_shape, out_hw, ac, hp, why):
    """The rule resize_bilinear names what does not fit (the compiler refuses it)."""
    import nacc
    with pytest.raises(nacc.UnsupportedError, match=why):
        _run_program(_ir_model(in_shape, out_hw, ac, hp), 1, 64, "step",
                     np.zeros(in_shape, np.int8))


@functools.lru_cache(maxsize=1)
def _keras_upsampling_model() -> bytes:
    """Keras UpSampling2D(2, interpolation="bilinear") between convolutions,
    converted by the TFLite converter (once per session)."""
    import tensorflow as tf
    import keras
    from keras import layers

    keras.utils.set_random_seed(3)
    x = inp = keras.Input((12, 12, 3), batch_size=1)
    x = layers.Conv2D(8, 3, padding="same", activation="relu")(x)
    x = layers.UpSampling2D(2, interpolation="bilinear")(x)
    x = layers.Conv2D(4, 3, padding="same")(x)
    model = keras.Model(inp, x)
    rng = np.random.default_rng(0)

    def rep():
        for _ in range(8):
            yield [rng.normal(size=(1, 12, 12, 3)).astype(np.float32)]

    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = rep
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = conv.inference_output_type = tf.int8
    return conv.convert()


@pytest.mark.parametrize("cores", [1, 8])
def test_keras_upsampling_bilinear_one_partition(cores):
    """The converter writes RESIZE_BILINEAR with half_pixel_centers: every node
    claimed, one partition, bit-exact."""
    pytest.importorskip("tensorflow")
    from test_mean_avgpool import assert_model_one_partition_exact
    from tflite_builder import make_interpreter

    blob = _keras_upsampling_model()
    assert "RESIZE_BILINEAR" in {o["op_name"] for o in make_interpreter(blob)._get_ops_details()}
    assert_model_one_partition_exact(blob, cores)

"""Batches of N > 1 images (docs/device_model.md "Batches"): a partition whose
ops are batch-wise compiles one image into a Program of N images, which the
runtime runs once per image, each on its own batch handler. The delegate
claims batch-2 and batch-4 models whole and gives BUILTIN_REF's bits at
several core counts; ops that mix the images stay on the host."""
import numpy as np
import pytest

import nacc
from delegate_models import ModelBuilder, run


def small_cnn(batch, seed=0):
    """conv -> depthwise -> residual add -> max pool -> mean -> FC, batch `batch`."""
    m = ModelBuilder(seed)
    x = m.input((batch, 12, 12, 3))
    a = m.conv(x, 8, 3, activation="RELU")
    b = m.depthwise(a, 3)
    c = m.add(m.conv(b, 8, 1, activation="NONE", out_scale=0.1, out_zp=-5), a)
    p = m.pool("MAX_POOL_2D", c)
    f = m.fully_connected(m.reshape(p, (batch, 6 * 6 * 8)), 10)
    return m.build([f, m.mean(p)])


def _inputs(model, seed):
    from delegate_models import make_interpreter

    interp = make_interpreter(model)
    interp.allocate_tensors()
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, d["shape"], dtype=np.int8) for d in interp.get_input_details()]


@pytest.mark.parametrize("batch", [2, 4])
def test_batch_model_claimed_whole_and_exact(batch):
    model = small_cnn(batch)
    x = _inputs(model, batch)
    want = run(model, x)
    for cores in (1, 4, 32):
        d = nacc.load_delegate(cores=cores, log_level="off")
        got = run(model, x, delegates=[d])
        rep = d.report()
        assert rep.claimed_nodes == rep.total_nodes, [(n.op, n.reasons) for n in rep.nodes]
        assert len(rep.partitions) == 1
        for w, g in zip(want, got):
            assert w.shape == g.shape and np.array_equal(w, g), (batch, cores)
    # the images differ, so a Program that ran image 0 only (or one image
    # everywhere) would not match
    assert not np.array_equal(want[0][0], want[0][1])


def test_batch_equals_images_one_by_one():
    """The batch-4 model's outputs are the batch-1 model's, image by image
    (the same weights: the same seed)."""
    four, one = small_cnn(4), small_cnn(1)
    x = _inputs(four, 7)
    d = nacc.load_delegate(log_level="off")
    got = run(four, x, delegates=[d])
    for k in range(4):
        ref = run(one, [x[0][k:k + 1]], delegates=[nacc.load_delegate(log_level="off")])
        for g, r in zip(got, ref):
            assert np.array_equal(g[k:k + 1], r), k


def test_ops_across_the_batch_stay_on_the_host():
    """A reshape that folds the batch into the rows and a concatenation along
    the batch mix the images: declined by the batch_size rule (the rest of the
    model is claimed and exact)."""
    m = ModelBuilder(3)
    x = m.input((2, 8, 8, 4))
    a = m.conv(x, 4, 3)
    r = m.reshape(a, (1, 16, 8, 4))  # two images stacked as one taller one
    b = m.conv(r, 4, 3)
    model = m.build([b])
    xs = _inputs(model, 1)
    d = nacc.load_delegate(log_level="off")
    got = run(model, xs, delegates=[d])
    assert np.array_equal(got[0], run(model, xs)[0])
    rep = d.report()
    by_op = {n.op: n for n in rep.nodes}
    assert by_op["CONV_2D"].claimed or any(n.claimed for n in rep.nodes if n.op == "CONV_2D")
    reshape = by_op["RESHAPE"]
    assert not reshape.claimed
    assert any(r.rule == "batch_size" for r in reshape.reasons), reshape.reasons


@pytest.mark.slow
def test_batch4_mobilenet_v2_one_partition_exact():
    """A batch-4 MobileNetV2 (alpha 0.35, 96x96, random weights, up to its global
    pool) is claimed whole in one partition and is bit-exact at 1, 8 and 32 cores.
    The classifier head is left out: TFLite's BUILTIN_REF interpreter aborts the
    process on this model's batch-4 FULLY_CONNECTED + SOFTMAX head with no
    delegate involved (seen with TensorFlow 2.21), so it could not be the oracle."""
    import tensorflow as tf
    import keras
    from nacc import models as M

    net = keras.applications.MobileNetV2(weights=None, input_shape=(96, 96, 3), alpha=0.35,
                                         classes=10)
    data = M._calibration((96, 96, 3))
    M._settle(net, data)
    pool = [l for l in net.layers if isinstance(l, keras.layers.GlobalAveragePooling2D)][-1]
    body = keras.Model(net.input, pool.output)
    inp = keras.Input((96, 96, 3), batch_size=4)
    conv = tf.lite.TFLiteConverter.from_keras_model(keras.Model(inp, body(inp)))
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([data[i:i + 4]] for i in range(0, len(data), 4))
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = conv.inference_output_type = tf.int8
    model = conv.convert()
    x = _inputs(model, 0)
    want = run(model, x)
    for cores in (1, 8, 32):
        d = nacc.load_delegate(cores=cores, log_level="off")
        got = run(model, x, delegates=[d])
        rep = d.report()
        assert len(rep.partitions) == 1, str(rep)
        assert rep.claimed_nodes == rep.total_nodes, str(rep)
        assert all(np.array_equal(w, g) for w, g in zip(want, got)), cores

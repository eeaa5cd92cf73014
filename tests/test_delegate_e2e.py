"""End to end through the NACC delegate, bit-exact against the same interpreter
without it, TFLite's reference kernels (BUILTIN_REF) on both sides: single-op
and multi-op flatbuffer models, Keras models converted with a representative
dataset (tests/keras_models.py, cached), threads, cache_dir, dump_dir, input
resize, ai_edge_litert, and the raw .so through tf.lite.experimental.load_delegate."""
import os
import threading

import numpy as np
import pytest

import nacc
from delegate_models import ModelBuilder, random_inputs, run
from test_delegate_partition import SINGLE_NODE_CASES, conv_softmax_conv
from tflite_builder import QTensor, make_interpreter


@pytest.fixture(scope="module", autouse=True)
def npu_available():
    """Fails the module at once if the delegate cannot claim a plain conv."""
    m = ModelBuilder()
    model = m.build([m.conv(m.input((1, 8, 8, 3)), 4)])
    d = nacc.load_delegate(log_level="off")
    make_interpreter(model, delegates=[d])
    (node,) = d.report().nodes
    assert node.claimed, node.reasons  # the compiler and runtime are linked into the delegate


def exact(model: bytes, inputs=None, runs=1, **options):
    """Runs `model` with and without the delegate; asserts equal outputs; returns the report."""
    options.setdefault("log_level", "off")
    d = nacc.load_delegate(**options)
    interp = make_interpreter(model, delegates=[d])
    interp.allocate_tensors()
    ref_interp = make_interpreter(model)
    ref_interp.allocate_tensors()
    for i in range(runs):
        x = inputs if inputs is not None else random_inputs(ref_interp, seed=i)
        for det, v in zip(interp.get_input_details(), x):
            interp.set_tensor(det["index"], v)
        interp.invoke()
        got = [interp.get_tensor(o["index"]) for o in interp.get_output_details()]
        want = run(model, x)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    return d.report()


NPU_CASES = [c for c in SINGLE_NODE_CASES if c[2] == "npu"]

@pytest.mark.parametrize("case,build,expected,host_kind", NPU_CASES, ids=[c[0] for c in NPU_CASES])
def test_single_op_exact(case, build, expected, host_kind):
    report = exact(build(), runs=2)
    assert report.claimed_nodes >= 1
    (p,) = report.partitions
    assert p.invocations == 2 and p.last_cycles > 0 and p.last_dma_bytes > 0


def host_ops_in_the_middle():
    """Every op the NPU declines sits between claimed ones."""
    m = ModelBuilder()
    x = m.input((1, 20, 20, 8))
    a = m.conv(x, 8, name="c0")
    b = m.softmax(a, name="softmax")                        # no NPU kind
    c = m.conv(b, 8, name="c1")
    d = m.conv(c, 8, dilation=2, stride=2, name="dilated")  # dilation 2 with stride 2
    e = m.conv(d, 8, name="c2")
    f = m.conv(e, 8, k=16, padding="SAME", name="k16")      # 16x16 kernel
    g = m.conv(f, 8, name="c3")
    h = m.depthwise(g, stride=4, name="stride4")            # depthwise stride 4
    i = m.conv(h, 16, k=1, name="c4")
    j = m.mean(i, axes=(3,), keep_dims=True, name="mean_c")  # MEAN over channels
    return m.build([j])


def test_host_ops_in_the_middle_exact():
    report = exact(host_ops_in_the_middle(), runs=2)
    by_name = {n.name: n for n in report.nodes}
    for name, rule in [("softmax", "npu_op_kind"), ("dilated", "dilation"), ("k16", "kernel_size"),
                       ("stride4", "stride"),
                       ("mean_c", "mean_axes")]:
        assert not by_name[name].claimed and by_name[name].reasons[0].rule == rule
    for name in ("c0", "c1", "c2", "c3", "c4"):
        assert by_name[name].claimed
    assert len(report.partitions) == 5


def test_cores_and_threads_give_the_same_bits():
    model = host_ops_in_the_middle()
    cycles = {}
    for cores, threads in ((1, 1), (4, 2), (8, 4)):
        report = exact(model, cores=cores, threads=threads)
        cycles[cores] = sum(p.last_cycles for p in report.partitions)
    assert cycles[8] <= cycles[1]


def test_two_interpreters_in_two_threads():
    model = conv_softmax_conv()
    ref_interp = make_interpreter(model)
    ref_interp.allocate_tensors()
    inputs = [random_inputs(ref_interp, seed=s) for s in range(4)]
    want = [run(model, x) for x in inputs]
    errors = []

    def worker():
        try:
            d = nacc.load_delegate(cores=2, threads=2, log_level="off")
            interp = make_interpreter(model, delegates=[d])
            interp.allocate_tensors()
            for x, w in zip(inputs, want):
                interp.set_tensor(interp.get_input_details()[0]["index"], x[0])
                interp.invoke()
                np.testing.assert_array_equal(
                    interp.get_tensor(interp.get_output_details()[0]["index"]), w[0])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_cache_hits_skip_compilation(tmp_path):
    model = host_ops_in_the_middle()
    first = exact(model, cache_dir=tmp_path)
    second = exact(model, cache_dir=tmp_path)
    assert not any(p.cache_hit for p in first.partitions)
    assert all(p.cache_hit for p in second.partitions)
    assert len(list(tmp_path.glob("*.nacc"))) == len(first.partitions)
    assert sum(p.compile_ms for p in second.partitions) < sum(p.compile_ms for p in first.partitions)


def test_corrupt_cache_entry_is_recompiled(tmp_path):
    model = conv_softmax_conv()
    exact(model, cache_dir=tmp_path)
    for f in tmp_path.glob("*.nacc"):
        f.write_bytes(b"garbage")
    report = exact(model, cache_dir=tmp_path)
    assert not any(p.cache_hit for p in report.partitions)


def test_dump_dir(tmp_path):
    report = exact(conv_softmax_conv(), dump_dir=tmp_path)
    assert len(list(tmp_path.glob("*.program"))) == len(report.partitions)
    texts = list(tmp_path.glob("*.txt"))
    assert texts and all(t.read_text() for t in texts)


def test_input_resize_recompiles():
    m = ModelBuilder()
    x = m.input((1, 8, 8, 4))
    model = m.build([m.conv(m.conv(x, 8), 8, stride=2)])
    d = nacc.load_delegate(log_level="off")
    interp = make_interpreter(model, delegates=[d])
    ref = make_interpreter(model)
    for it in (interp, ref):
        it.resize_tensor_input(it.get_input_details()[0]["index"], [1, 12, 10, 4])
        it.allocate_tensors()
    x = np.random.default_rng(0).integers(-128, 128, (1, 12, 10, 4), dtype=np.int8)
    for it in (interp, ref):
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
    got = interp.get_tensor(interp.get_output_details()[0]["index"])
    want = ref.get_tensor(ref.get_output_details()[0]["index"])
    assert got.shape == (1, 6, 5, 8)
    np.testing.assert_array_equal(got, want)
    assert d.report().claimed_nodes == 2


def test_litert_interpreter_exact():
    from ai_edge_litert import interpreter as litert

    model = host_ops_in_the_middle()
    ref_interp = make_interpreter(model)
    ref_interp.allocate_tensors()
    x = random_inputs(ref_interp)
    d = nacc.load_delegate(runtime="litert", log_level="off")
    got = run(model, x, delegates=[d], interpreter_cls=litert.Interpreter)
    want = run(model, x, interpreter_cls=litert.Interpreter)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got[0], run(model, x)[0])
    assert d.report().claimed_nodes == 5


def test_raw_library_through_tf_load_delegate():
    import tensorflow as tf

    model = conv_softmax_conv()
    d = tf.lite.experimental.load_delegate(nacc.delegate_library_path(),
                                           {"cores": "4", "log_level": "off"})
    ref_interp = make_interpreter(model)
    ref_interp.allocate_tensors()
    x = random_inputs(ref_interp)
    got = run(model, x, delegates=[d])
    np.testing.assert_array_equal(got[0], run(model, x)[0])


# ---- Keras models (converted once, cached in tests/.model_cache) -------------------

KERAS_CASES = [
    ("mobilenet_v1_025_128", False),
    ("mobilenet_v2_035_96", False),
    ("resnet_style_32", False),
    ("resnet_style_32", True),  # float32 I/O: QUANTIZE / DEQUANTIZE stay on the host
]


@pytest.mark.parametrize("name,float_io", KERAS_CASES)
def test_keras_model_exact(name, float_io):
    import keras_models

    model = keras_models.converted(name, float_io=float_io)
    report = exact(model, runs=1, cores=4, threads=2)
    # Only host-only kinds stay home; MEAN (global average pooling) runs on the
    # NPU, so everything between the input and the SOFTMAX is one partition.
    host = [n for n in report.nodes if not n.claimed]
    assert all(n.op in ("SOFTMAX", "QUANTIZE", "DEQUANTIZE") for n in host), \
        [(n.op, n.reasons[0].message) for n in host]
    assert report.claimed_nodes == report.total_nodes - (3 if float_io else 1)
    assert len(report.partitions) == 1
    assert all(p.last_cycles > 0 for p in report.partitions)


def test_digits_cnn_predictions_identical():
    pytest.importorskip("sklearn")
    import keras_models

    model = keras_models.converted("digits_cnn")
    _, _, x_test, _ = keras_models.digits_split()
    d = nacc.load_delegate(log_level="off")
    interp = make_interpreter(model, delegates=[d])
    ref = make_interpreter(model)
    preds = []
    for it in (interp, ref):
        it.allocate_tensors()
        inp, out = it.get_input_details()[0], it.get_output_details()[0]
        scale, zp = inp["quantization"]
        q = np.clip(np.round(x_test / scale + zp), -128, 127).astype(np.int8)
        p = []
        for i in range(len(q)):
            it.set_tensor(inp["index"], q[i:i + 1])
            it.invoke()
            p.append(it.get_tensor(out["index"]).copy())
        preds.append(np.concatenate(p))
    np.testing.assert_array_equal(preds[0], preds[1])


@pytest.mark.slow
def test_mobilenet_v2_224_exact():
    import keras_models

    exact(keras_models.converted("mobilenet_v2_100_224"), cores=8, threads=2)


def test_if_model_both_branches_exact():
    from delegate_models import if_model

    model = if_model()
    d = nacc.load_delegate(log_level="off")
    interp = make_interpreter(model, delegates=[d])
    interp.allocate_tensors()
    x = np.random.default_rng(0).integers(-128, 128, (1, 8, 8, 4), dtype=np.int8)
    for cond in (True, False):
        inputs = [np.array([cond]), x]
        for det, v in zip(interp.get_input_details(), inputs):
            interp.set_tensor(det["index"], v)
        interp.invoke()
        got = interp.get_tensor(interp.get_output_details()[0]["index"])
        np.testing.assert_array_equal(got, run(model, inputs)[0])
    assert [s.claimed_nodes for s in d.report().subgraphs] == [0, 1, 2]

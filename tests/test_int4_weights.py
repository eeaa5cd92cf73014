"""int4 weights with int8 activations (NACC_CTRL.DATA_FORM 10, NACC_SPEC §9), end
to end through the TFLite delegate: CONV_2D version 7 and FULLY_CONNECTED
version 10 with `TensorType INT4` weights (ceil(n / 2) bytes, element 2i in the
low nibble) are claimed and bit-exact against TFLite's reference kernels
(BUILTIN_REF, which unpack the weights and run the int8 kernel) at 1, 8 and 32
cores and 16 and 32 KB of SRAM; DEPTHWISE_CONV_2D with int4 weights is declined
(TFLite 2.21 has no reference kernel for it). The compiler stores each core's
weight block packed (half the weight bytes in the K area and on the bus), and
the device unpacks them (device_model.md §4).

Models come from the tests' flatbuffer builder (tflite_builder, "int4").
"""
from __future__ import annotations

import numpy as np
import pytest

import nacc
from nacc import _core
from delegate_models import ModelBuilder, act
from test_compiler import Net, kernel_commands, run
from tflite_builder import QTensor, make_interpreter, run_tflite

CORES = (1, 8, 32)
SRAM_KB = (16, 32)


def int4_values(rng, shape):
    """Random int4 weights with both extremes present (-8 and 7)."""
    w = rng.integers(-8, 8, shape).astype(np.int8)
    flat = w.reshape(-1)
    flat[0] = -8
    flat[-1] = 7
    if flat.size > 2:
        flat[rng.integers(1, flat.size - 1)] = -8
    return w


def add_int4_conv(m: ModelBuilder, x, cout, k, stride=1, padding="SAME", activation="NONE",
                  per_channel=True, out_scale=0.08, out_zp=-4, name=None):
    t = m.meta[x]
    cin = t.shape[3]
    rng = m.rng
    scales = ([float(s) for s in rng.uniform(0.02, 0.2, cout).astype(np.float32)]
              if per_channel else [0.07])
    zps = [0] * len(scales)
    w = QTensor((cout, k, k, cin), "int4", scale=scales, zero_point=zps, quantized_dimension=0,
                data=int4_values(rng, (cout, k, k, cin)))
    bs = [t.scale * s for s in scales] if per_channel else t.scale * scales[0]
    b = QTensor((cout,), "int32", scale=bs, zero_point=zps if per_channel else 0,
                data=rng.integers(-600, 600, cout))
    h, wd = t.shape[1], t.shape[2]
    if padding == "SAME":
        oh, ow = -(-h // stride), -(-wd // stride)
    else:
        oh, ow = (h - k) // stride + 1, (wd - k) // stride + 1
    o = m.tensor(act((1, oh, ow, cout), out_scale, out_zp, name=name))
    m.g.add_op("CONV_2D", [x, m.tensor(w), m.tensor(b)], [o],
               dict(padding=padding, stride_w=stride, stride_h=stride,
                    fused_activation_function=activation), version=7)
    return o


def add_int4_fc(m: ModelBuilder, x, n, activation="NONE", per_channel=False, name=None):
    t = m.meta[x]
    k = t.shape[-1]
    rows = int(np.prod(t.shape[:-1]))
    rng = m.rng
    scales = ([float(s) for s in rng.uniform(0.01, 0.1, n).astype(np.float32)]
              if per_channel else [0.03])
    w = QTensor((n, k), "int4", scale=scales, zero_point=[0] * len(scales),
                data=int4_values(rng, (n, k)))
    b = QTensor((n,), "int32", scale=t.scale * 0.03 if not per_channel else
                [t.scale * s for s in scales], zero_point=0 if not per_channel else [0] * n,
                data=rng.integers(-800, 800, n))
    o = m.tensor(act((rows, n), 0.15, 3, name=name))
    m.g.add_op("FULLY_CONNECTED", [x, m.tensor(w), m.tensor(b)], [o],
               dict(fused_activation_function=activation), version=10)
    return o


def random_case(seed):
    """(model, cores, sram_kb) of differential case `seed`: a CONV_2D or a
    FULLY_CONNECTED with int4 weights, odd element counts in most cases."""
    rng = np.random.default_rng(1000 + seed)
    m = ModelBuilder(seed)
    cores = CORES[seed % 3]
    kb = SRAM_KB[(seed // 3) % 2]
    if seed % 2 == 0:
        h, w = int(rng.integers(3, 13)), int(rng.integers(3, 13))
        cin = int(rng.choice([1, 3, 5, 7, 16, 33, 70]))
        cout = int(rng.choice([1, 3, 5, 9, 17, 32]))
        k = int(rng.choice([1, 2, 3, 5]))
        k = min(k, h, w)
        stride = int(rng.integers(1, 3))
        x = m.input((1, h, w, cin), scale=float(rng.uniform(0.02, 0.1)),
                    zp=int(rng.integers(-20, 20)))
        o = add_int4_conv(m, x, cout, k, stride, str(rng.choice(["SAME", "VALID"])),
                          str(rng.choice(["NONE", "RELU", "RELU6"])),
                          per_channel=bool(rng.integers(0, 2)))
    else:
        rows, k, n = int(rng.integers(1, 4)), int(rng.integers(1, 160)), int(rng.integers(1, 40))
        x = m.input((rows, k), scale=float(rng.uniform(0.02, 0.1)),
                    zp=int(rng.integers(-20, 20)))
        o = add_int4_fc(m, x, n, str(rng.choice(["NONE", "RELU"])),
                        per_channel=bool(rng.integers(0, 2)))
    return m.build([o]), cores, kb


def delegated(model, **options):
    options.setdefault("log_level", "off")
    d = nacc.load_delegate(**options)
    interp = make_interpreter(model, delegates=[d])
    interp.allocate_tensors()
    return d, interp


def assert_exact(model, interp, seed=0):
    ref = make_interpreter(model)
    ref.allocate_tensors()
    rng = np.random.default_rng(seed)
    for d in interp.get_input_details():
        x = rng.integers(-128, 128, d["shape"]).astype(np.int8)
        interp.set_tensor(d["index"], x)
        ref.set_tensor(d["index"], x)
    interp.invoke()
    ref.invoke()
    for d in interp.get_output_details():
        got, want = interp.get_tensor(d["index"]), ref.get_tensor(d["index"])
        assert np.array_equal(got, want), f"{int((got != want).sum())} of {got.size} differ"


@pytest.mark.parametrize("seed", range(120))
def test_single_op_int4_exact(seed):
    model, cores, kb = random_case(seed)
    d, interp = delegated(model, cores=cores, sram_kb=kb)
    (node,) = d.report().nodes
    assert node.claimed and not node.reasons, node.reasons
    assert_exact(model, interp, seed)


def small_cnn(seed=3):
    """conv (int4) -> conv (int4, stride 2) -> reshape -> FC (int4): every op on the NPU."""
    m = ModelBuilder(seed)
    x = m.input((1, 12, 12, 3), scale=0.04, zp=-2)
    a = add_int4_conv(m, x, 9, 3, activation="RELU", name="c1")
    b = add_int4_conv(m, a, 17, 3, stride=2, activation="RELU6", out_scale=0.06, out_zp=-9,
                      name="c2")
    r = m.reshape(b, (1, 6 * 6 * 17))
    o = add_int4_fc(m, r, 11, per_channel=True, name="fc")
    return m.build([o])


@pytest.mark.parametrize("cores", CORES)
@pytest.mark.parametrize("kb", SRAM_KB)
def test_int4_cnn_one_partition_exact(cores, kb):
    model = small_cnn()
    d, interp = delegated(model, cores=cores, sram_kb=kb)
    rep = d.report()
    assert all(n.claimed and not n.reasons for n in rep.nodes), [
        (n.op, n.reasons) for n in rep.nodes]
    assert len({n.partition for n in rep.nodes}) == 1
    for seed in range(3):
        assert_exact(model, interp, seed)


def test_int4_depthwise_declined_with_reason():
    """DEPTHWISE_CONV_2D version 7 with int4 weights: the capability rule says
    why (no reference kernel in TFLite 2.21, so nothing to be exact against)."""
    g = _core.Graph()
    x = g.add_tensor("x", [1, 6, 6, 4], "int8", scales=0.05, zero_points=-3)
    w = g.add_tensor("w", [1, 3, 3, 4], "int4", scales=[0.1] * 4, zero_points=[0] * 4, axis=3,
                     data=int4_values(np.random.default_rng(0), (1, 3, 3, 4)))
    y = g.add_tensor("y", [1, 6, 6, 4], "int8", scales=0.1, zero_points=0)
    g.add_op("DEPTHWISE_CONV_2D", [x, w], [y], padding="SAME")
    violations = _core.check_op(g, 0)
    assert [v.rule for v in violations] == ["int4_depthwise"], violations
    assert "no reference kernel" in violations[0].message
    # The same op with int4 CONV_2D weights passes the dtype rules.
    rules = {r["name"]: r["text"] for r in _core.rules_table()}
    assert "int4 for CONV_2D and FULLY_CONNECTED" in rules["weights_dtype"]


def test_int4_tensor_values_checked():
    g = _core.Graph()
    with pytest.raises(ValueError, match=r"int4 element 1 is 8"):
        g.add_tensor("w", [2], "int4", scales=0.1, zero_points=0,
                     data=np.array([1, 8], dtype=np.int8))


def int4_net(dtype, seed=0, cin=33, cout=40, k=3):
    """A Net (IR graph + TFLite model) with one CONV_2D whose weights are int8 or int4."""
    n = Net(seed)
    x = n.input((1, 10, 10, cin))
    rng = np.random.default_rng(seed)
    lim = 8 if dtype == "int4" else 128
    wd = rng.integers(-lim, lim, (cout, k, k, cin)).astype(np.int8)
    ws = [float(s) for s in rng.uniform(0.002, 0.02, cout).astype(np.float32)]
    w = n.tensor((cout, k, k, cin), ws, [0] * cout, data=wd, dtype=dtype)
    b = n.tensor((cout,), [0.05 * s for s in ws], [0] * cout,
                 data=rng.integers(-3000, 3000, cout).astype(np.int32), dtype="int32")
    y = n.tensor((1, 10, 10, cout), 0.1, 5)
    n.op("CONV_2D", [x, w, b], y, dict(padding="SAME", stride_h=1, stride_w=1),
         dict(padding="SAME"), version=7 if dtype == "int4" else 3)
    return n.finish(y)


@pytest.mark.parametrize("kb", SRAM_KB)
def test_compiler_packs_int4_weights(kb):
    """The weight bytes of an int4 conv are ceil(n / 2) (the K area and the DMA
    carry packed weights), its kernel commands set DATA_FORM = INT4 (2), and a
    K area that holds twice the channels needs no more commands than int8."""
    n4, n8 = int4_net("int4"), int4_net("int8")
    p4 = _core.compile(n4.g, cores=1, sram_kb=kb)
    p8 = _core.compile(n8.g, cores=1, sram_kb=kb)
    (r4,), (r8,) = _core.program_info(p4)["ops"], _core.program_info(p8)["ops"]
    elements = 40 * 3 * 3 * 33
    assert r4["weight_bytes"] == (elements + 1) // 2 and r8["weight_bytes"] == elements
    assert r4["weight_bytes_stored"] < r8["weight_bytes_stored"]
    k4, k8 = kernel_commands(p4), kernel_commands(p8)
    assert {k["DATA_FORM"] for k in k4} == {2} and {k["DATA_FORM"] for k in k8} == {0}
    assert len(k4) <= len(k8)
    # And the Program computes what TFLite computes, stepping and replaying.
    x = n4.random_inputs(seed=2)
    (want,) = run_tflite(n4.tflite(), x)
    for execution in ("step", "replay"):
        (got,), _ = run(n4, x, 1, kb, program=p4, execution=execution)
        assert np.array_equal(got, want.reshape(got.shape)), execution


def test_converter_int4_qat_cnn_exact():
    """A model from the TFLite converter with 4-bit QAT (tests/int4_qat_model.py):
    its int4 CONV_2D (v7) and FULLY_CONNECTED (v10) nodes and the RESHAPE are
    claimed in one partition and the outputs equal BUILTIN_REF's."""
    from int4_qat_model import int4_qat_cnn
    from tensorflow.lite.python import schema_py_generated as schema

    model = int4_qat_cnn()
    m = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(model, 0))
    sg = m.subgraphs[0]
    kinds = {}
    for op in sg.operators:
        oc = m.operatorCodes[op.opcodeIndex]
        code = max(oc.builtinCode, oc.deprecatedBuiltinCode)
        kinds.setdefault((code, oc.version), []).append(sg.tensors[op.inputs[1]].type
                                                        if len(op.inputs) > 1 else None)
    B, T = schema.BuiltinOperator, schema.TensorType
    assert kinds[(B.CONV_2D, 7)] == [T.INT4, T.INT4]
    assert kinds[(B.FULLY_CONNECTED, 10)] == [T.INT4]
    for cores, kb in ((1, 16), (8, 32), (32, 16)):
        d, interp = delegated(model, cores=cores, sram_kb=kb)
        rep = d.report()
        assert all(n.claimed and not n.reasons for n in rep.nodes), [
            (n.op, n.reasons) for n in rep.nodes]
        assert len({n.partition for n in rep.nodes}) == 1
        for seed in range(2):
            assert_exact(model, interp, seed)

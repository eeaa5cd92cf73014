"""NACC ONNX Runtime EP numerics, measured at two levels (issue 5):

- single node units: every output element within 1 of ORT's CPU EP; the count
  of differing elements is printed. Conv, depthwise Conv, Gemm / MatMul with
  constant weights (QDQ and QOperator) and MatMul of two activations are
  bit-exact: the EP asks for ONNX Runtime's float32 output stage
  (ir::RequantMode::kOnnxRuntime -> NACC_ACT_PARA.QUANT_FP32_SCALE); Add,
  Sub, Mul and AveragePool keep TFLite's fixed-point arithmetic and may differ
  by one;
- whole small models: cosine similarity of the dequantized outputs >= 0.99
  against the CPU EP (max difference and fraction differing printed), and a
  deliberately wrong output scale (one layer's weight scales doubled) fails it;
- exactness where it is defined: an independent numpy reference of ONNX QDQ
  Conv semantics with ONNX Runtime's float32 requantization matches the EP bit
  for bit, across core counts;
- sessions: two sessions, four threads sharing one session, the EP-context
  (compiled model) round trip and the cache_dir round trip.
"""
import threading

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

import nacc.onnxruntime as nort  # noqa: E402
import onnx_models as om  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Specified .providers.:UserWarning")

EP = "NaccExecutionProvider"


@pytest.fixture(scope="module", autouse=True)
def backend():
    nort.register()
    om.session(om.qdq_unit(om.conv()), "nacc")
    rep = nort.partition_reports()[-1]
    # The compiler and runtime are linked into the EP: a QDQ Conv must be claimed.
    assert rep["partitions"], rep["host_nodes"]


def run_both(model, feeds, options=None):
    cpu = om.session(model, ["CPUExecutionProvider"]).run(None, feeds)
    s = om.session(model, "nacc", options)
    rep = nort.partition_reports()[-1]
    return cpu, s.run(None, feeds), rep


def diff_stats(a, b):
    d = np.abs(a.astype(np.int32) - b.astype(np.int32))
    return int(d.max()), int(np.count_nonzero(d)), d.size


# ---- single units: within 1 of the CPU EP ------------------------------------------

def _pool_same_q(op, **kw):
    m = om.pool(op, **kw)
    q = onnx.load_from_string(om.qdq_unit(m))
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in q.graph.initializer}
    return om.qdq_unit(m, fixed_output=(float(inits["x_s"]), int(inits["x_z"])))


UNITS = [
    ("conv", lambda: om.qdq_unit(om.conv())),
    # uint8 activations: 7-bit weights, see om.qdq_unit (the CPU EP's U8S8
    # kernels saturate otherwise; the numpy reference below covers 8 bits)
    ("conv_uint8", lambda: om.qdq_unit(om.conv(), dtype="uint8", weight_bits=7)),
    ("conv_per_channel", lambda: om.qdq_unit(om.conv(), per_channel=True)),
    ("conv_uint8_per_channel_u8w", lambda: om.qdq_unit(om.conv(), dtype="uint8", per_channel=True,
                                                        weight_dtype="uint8", weight_bits=7)),
    ("conv_stride2_same", lambda: om.qdq_unit(om.conv(stride=2, auto_pad="SAME_UPPER"))),
    ("conv_stride3_pad5", lambda: om.qdq_unit(om.conv(hw=(13, 11), k=5, stride=3, pads=(5, 5, 5, 5)))),
    ("conv_1x1", lambda: om.qdq_unit(om.conv(k=1, pads=(0, 0, 0, 0), c_in=64, c_out=8))),
    ("conv_k15", lambda: om.qdq_unit(om.conv(c_in=2, c_out=3, hw=(16, 16), k=15, pads=(0, 0, 0, 0)))),
    ("conv_c_in_65", lambda: om.qdq_unit(om.conv(c_in=65, c_out=4, hw=(5, 5)))),
    ("depthwise", lambda: om.qdq_unit(om.conv(c_in=8, c_out=8, group=8))),
    ("depthwise_mult2_pc", lambda: om.qdq_unit(om.conv(c_in=8, c_out=16, group=8), per_channel=True)),
    ("matmul", lambda: om.qdq_unit(om.matmul())),
    ("matmul_per_channel", lambda: om.qdq_unit(om.matmul(), per_channel=True)),
    ("matmul_activations", lambda: om.qdq_unit(om.matmul(const_b=False))),
    ("gemm", lambda: om.qdq_unit(om.gemm())),
    ("gemm_uint8_pc", lambda: om.qdq_unit(om.gemm(), dtype="uint8", per_channel=True, weight_bits=7)),
    ("add", lambda: om.qdq_unit(om.binary("Add"))),
    ("sub", lambda: om.qdq_unit(om.binary("Sub"))),
    ("mul", lambda: om.qdq_unit(om.binary("Mul"))),
    ("mul_broadcast", lambda: om.qdq_unit(om.binary("Mul", shape_b=(1, 8, 1, 1)))),
    ("maxpool", lambda: _pool_same_q("MaxPool")),
    ("maxpool_3x3_s2_pad1", lambda: _pool_same_q("MaxPool", k=3, stride=2, pads=(1, 1, 1, 1), hw=(9, 9))),
    ("avgpool", lambda: _pool_same_q("AveragePool")),
    ("relu", lambda: om.qdq_unit(om.unary("Relu"))),
    ("relu6", lambda: om.qdq_unit(om.unary("Clip", lo=0.0, hi=6.0))),
    ("sigmoid", lambda: om.qdq_unit(om.unary("Sigmoid"), fixed_output=(1 / 256, -128))),
    ("tanh", lambda: om.qdq_unit(om.unary("Tanh"), fixed_output=(1 / 128, 0))),
    ("tanh_free_scale", lambda: om.qdq_unit(om.unary("Tanh"))),
    ("sigmoid_uint8", lambda: om.qdq_unit(om.unary("Sigmoid"), dtype="uint8")),
    ("leaky_relu", lambda: om.qdq_unit(om.unary("LeakyRelu", alpha=0.1))),
    ("hard_swish", lambda: om.qdq_unit(om.unary("HardSwish"))),
    ("hard_swish_uint8", lambda: om.qdq_unit(om.unary("HardSwish"), dtype="uint8")),
    ("global_average_pool", lambda: om.qdq_unit(om.global_average_pool())),
    # QOperator forms (float model I/O; the int8 core is one partition)
    ("qlinearconv", lambda: om.quantize(om.conv(), fmt="QOperator")),
    ("qlinearconv_pc", lambda: om.quantize(om.conv(), fmt="QOperator", per_channel=True)),
    ("qlinearmatmul", lambda: om.quantize(om.matmul(), fmt="QOperator")),
    ("qgemm", lambda: om.quantize(om.gemm(), fmt="QOperator")),
    ("qlinearadd", lambda: om.quantize(om.binary("Add"), fmt="QOperator")),
    ("qlinearmul", lambda: om.quantize(om.binary("Mul"), fmt="QOperator")),
    ("qlinearsigmoid", lambda: om.quantize(om.unary("Sigmoid"), fmt="QOperator")),
    ("qlinearleakyrelu", lambda: om.quantize(om.unary("LeakyRelu", alpha=0.1), fmt="QOperator")),
]


@pytest.mark.parametrize("builder", [u[1] for u in UNITS], ids=[u[0] for u in UNITS])
def test_single_unit_bit_exact_to_cpu_ep(builder):
    """Every unit kind, seeded: zero differing elements (this was "within one"
    before the float32 element-wise and pooling modes of issue 14)."""
    model = builder()
    feeds = om.int8_feeds(model, seed=3)
    (cpu,), (npu,), rep = run_both(model, feeds, {"min_partition_macs": 0})
    if not rep["partitions"]:
        why = [h["reason"] for h in rep["host_nodes"] if h["npu_candidate"]
               and h["op_type"] not in ("QuantizeLinear", "DequantizeLinear")]
        pytest.fail(f"not claimed: {why}")
    if cpu.dtype == np.float32:  # QOperator models: compare in the quantized domain
        scale = np.abs(cpu - npu).max()
        print(f"max |diff| {scale:.6f} (float outputs)")
        q = onnx.load_from_string(model)
        dq = [n for n in q.graph.node if n.op_type == "DequantizeLinear"][-1]
        inits = {i.name: onnx.numpy_helper.to_array(i) for i in q.graph.initializer}
        s = float(inits[dq.input[1]])
        cpu, npu = np.round(cpu / s), np.round(npu / s)
    mx, n, size = diff_stats(cpu, npu)
    print(f"{n}/{size} elements differ from the CPU EP, max |diff| {mx}")
    assert n == 0, f"{n}/{size} elements differ, max |diff| {mx}"


# Units whose output stage is ONNX Runtime's float32 one on the NPU: zero
# differences (seeded weights and quantization; uint8 activations with 7-bit
# weights, see om.qdq_unit).
EXACT_UNITS = [
    ("conv", lambda: om.qdq_unit(om.conv())),
    ("conv_seed2_pc", lambda: om.qdq_unit(om.conv(seed=2), per_channel=True, seed=2)),
    ("conv_uint8", lambda: om.qdq_unit(om.conv(seed=3), dtype="uint8", weight_bits=7, seed=3)),
    ("conv_uint8_pc_u8w", lambda: om.qdq_unit(om.conv(seed=4), dtype="uint8", per_channel=True,
                                              weight_dtype="uint8", weight_bits=7, seed=4)),
    ("conv_stride2_same", lambda: om.qdq_unit(om.conv(stride=2, auto_pad="SAME_UPPER", seed=5),
                                              seed=5)),
    ("conv_k5_c33_pc", lambda: om.qdq_unit(om.conv(k=5, pads=(2, 2, 2, 2), c_out=33, seed=6),
                                           per_channel=True, seed=6)),
    ("conv_1x1_c70", lambda: om.qdq_unit(om.conv(k=1, pads=(0, 0, 0, 0), c_in=70, seed=7), seed=7)),
    ("conv_relu_out", lambda: om.qdq_unit(om.conv(seed=8), fixed_output=(0.02, -128), seed=8)),
    ("depthwise", lambda: om.qdq_unit(om.conv(c_in=8, c_out=8, group=8))),
    ("depthwise_pc_seed3", lambda: om.qdq_unit(om.conv(c_in=16, c_out=16, group=16, seed=3),
                                               per_channel=True, seed=3)),
    ("depthwise_mult2_pc", lambda: om.qdq_unit(om.conv(c_in=8, c_out=16, group=8), per_channel=True)),
    ("depthwise_uint8", lambda: om.qdq_unit(om.conv(c_in=8, c_out=8, group=8, seed=5),
                                            dtype="uint8", weight_bits=7, seed=5)),
    ("matmul_const", lambda: om.qdq_unit(om.matmul())),
    ("matmul_const_pc", lambda: om.qdq_unit(om.matmul(m=8, k=100, n=33), per_channel=True, seed=2)),
    ("gemm", lambda: om.qdq_unit(om.gemm())),
    ("gemm_pc_seed3", lambda: om.qdq_unit(om.gemm(m=4, k=130, n=20), per_channel=True, seed=3)),
    ("gemm_uint8_pc", lambda: om.qdq_unit(om.gemm(), dtype="uint8", per_channel=True, weight_bits=7)),
    ("qlinearconv", lambda: om.quantize(om.conv(), fmt="QOperator")),
    ("qlinearconv_pc", lambda: om.quantize(om.conv(seed=9), fmt="QOperator", per_channel=True)),
    ("qlinearconv_depthwise", lambda: om.quantize(om.conv(c_in=8, c_out=8, group=8), fmt="QOperator")),
    ("qlinearmatmul", lambda: om.quantize(om.matmul(), fmt="QOperator")),
    ("qgemm", lambda: om.quantize(om.gemm(), fmt="QOperator")),
]


@pytest.mark.parametrize("builder", [u[1] for u in EXACT_UNITS], ids=[u[0] for u in EXACT_UNITS])
def test_mac_units_bit_exact_to_cpu_ep(builder):
    """Conv, depthwise Conv, Gemm and MatMul with constant weights: the CPU EP
    requantizes (QLinearConv, QLinearMatMul, QGemm; MLAS MlasRequantizeOutput)
    float(acc + bias) * float(s_x * s_w[c]) / s_y, rounded half to even; the
    NPU's float32 output stage does the same, so no element differs (one and
    eight cores; float model outputs are compared as they are)."""
    model = builder()
    feeds = om.int8_feeds(model, seed=3)
    for cores in ("1", "8"):
        (cpu,), (npu,), rep = run_both(model, feeds, {"min_partition_macs": 0, "cores": cores})
        assert rep["partitions"], rep["host_nodes"]
        assert all(h["op_type"] in ("QuantizeLinear", "DequantizeLinear")
                   for h in rep["host_nodes"]), rep["host_nodes"]
        d = np.abs(cpu.astype(np.float64) - npu.astype(np.float64))
        print(f"cores {cores}: {np.count_nonzero(d)}/{d.size} elements differ from the CPU EP")
        np.testing.assert_array_equal(npu, cpu)


# Convs where ONNX Runtime runs DequantizeLinear -> float32 Conv ->
# QuantizeLinear (ORT_ENABLE_BASIC here; at the default level the same where
# QDQS8ToU8Transformer leaves the types around the unit different). MLAS sums
# K in blocks whose size follows from its algorithm and thread segments:
# one block of 128 + 19 for the stem, blocks of 128 for the 1x1 over 576
# channels, 256 for the expand-then-GEMM (96 filters > 49 pixels), and at four
# threads blocks of 256 then 512 in the last segment of the 13x13 map.
# Computed with the int32 accumulator times float32 scale (QLinearConv's
# arithmetic, nacc's only Conv arithmetic before), pointwise_k576 and
# conv3x3_c64_56 differ in 3 of 200 704 elements each (measured): the test
# sees the difference between the two.
FLOAT_CONV_UNITS = [
    ("stem_7x7_s2_c3", lambda: om.qdq_unit(om.conv(c_in=3, c_out=64, hw=(64, 64), k=7, stride=2,
                                                   pads=(2, 2, 3, 3), seed=11), seed=11), (1, 2)),
    ("stem_uint8_pc", lambda: om.qdq_unit(om.conv(c_in=3, c_out=32, hw=(48, 48), k=7, stride=2,
                                                  pads=(2, 2, 3, 3), seed=12),
                                          dtype="uint8", per_channel=True, seed=12), (2,)),
    ("pointwise_k576", lambda: om.qdq_unit(om.conv(c_in=576, c_out=64, hw=(56, 56), k=1,
                                                   pads=(0, 0, 0, 0), seed=13),
                                           per_channel=True, seed=13), (1, 2)),
    ("conv3x3_c64_56", lambda: om.qdq_unit(om.conv(c_in=64, c_out=64, hw=(56, 56), seed=17),
                                           seed=17), (2,)),
    ("expand_m96_n49", lambda: om.qdq_unit(om.conv(c_in=64, c_out=96, hw=(7, 7), seed=14),
                                           seed=14), (1, 2)),
    ("segments_13x13_k2700", lambda: om.qdq_unit(om.conv(c_in=300, c_out=40, hw=(13, 13), seed=15),
                                                 per_channel=True, seed=15), (1, 2, 4)),
    ("relu_out_no_bias", lambda: om.qdq_unit(om.conv(c_in=32, c_out=24, hw=(12, 12), bias=False,
                                                     seed=16), fixed_output=(0.02, -128),
                                             seed=16), (2,)),
]


@pytest.mark.parametrize("builder,threads", [(u[1], u[2]) for u in FLOAT_CONV_UNITS],
                         ids=[u[0] for u in FLOAT_CONV_UNITS])
def test_float_conv_bit_exact_to_cpu_ep(builder, threads):
    """ONNX Runtime's unfused QDQ Conv is a float32 MLAS convolution: the NPU's
    float32 MAC mode sums K in ONNX order with MLAS's blocks of fused
    multiply-adds for the session's intra-op thread count (the option
    ort_intra_op_threads) and quantizes sum / s_y: no element differs, at 1
    and 4 cores (docs/onnxruntime_ep.md "Float Conv")."""
    model = builder()
    feeds = om.int8_feeds(model, seed=3)
    so_level, ep_level = om.optimization_levels()["basic"]
    for t in threads:
        cpu = om.session(model, ["CPUExecutionProvider"], opt_level=so_level,
                         intra_op_threads=t).run(None, feeds)[0]
        for cores in ("1", "4"):
            npu = om.session(model, "nacc", {"ort_optimization_level": ep_level,
                                             "ort_intra_op_threads": t, "cores": cores},
                             opt_level=so_level, intra_op_threads=t).run(None, feeds)[0]
            rep = nort.partition_reports()[-1]
            assert rep["partitions"], rep["host_nodes"]
            d = int(np.count_nonzero(npu != cpu))
            print(f"threads {t}, cores {cores}: {d}/{cpu.size} elements differ from the CPU EP")
            np.testing.assert_array_equal(npu, cpu)


MATMUL_ACTIVATION_UNITS = [
    ("int8_4x32x16", lambda: om.qdq_unit(om.matmul(const_b=False))),
    ("int8_rank3", lambda: om.qdq_unit(om.matmul(const_b=False, rank3=True), seed=1)),
    ("int8_49x64x49", lambda: om.qdq_unit(om.matmul(m=49, k=64, n=49, const_b=False), seed=2)),
    ("int8_k300", lambda: om.qdq_unit(om.matmul(m=8, k=300, n=70, const_b=False), seed=3)),
    ("uint8_4x32x16", lambda: om.qdq_unit(om.matmul(const_b=False), dtype="uint8", seed=4)),
]


@pytest.mark.parametrize("builder", [u[1] for u in MATMUL_ACTIVATION_UNITS],
                         ids=[u[0] for u in MATMUL_ACTIVATION_UNITS])
def test_matmul_of_two_activations_bit_exact_to_cpu_ep(builder):
    """MatMul of two activations (ir BATCH_MATMUL): the CPU EP runs it as
    QLinearMatMul, requantizing float(acc) * float(s_a * s_b) / s_y with round
    half to even (MLAS); the EP asks the compiler for that output stage
    (ir::RequantMode::kOnnxRuntime -> NACC_ACT_PARA.QUANT_FP32_SCALE), so the
    NPU result is bit-exact, on one and on 8 cores."""
    model = builder()
    feeds = om.int8_feeds(model, seed=11)
    for cores in ("1", "8"):
        (cpu,), (npu,), rep = run_both(model, feeds, {"min_partition_macs": "0", "cores": cores})
        assert rep["partitions"], rep["host_nodes"]
        mx, n, size = diff_stats(cpu, npu)
        print(f"cores {cores}: {n}/{size} elements differ from the CPU EP, max |diff| {mx}")
        np.testing.assert_array_equal(npu, cpu)


LUT_UNITS = [
    ("sigmoid", lambda: om.qdq_unit(om.unary("Sigmoid", shape=(1, 8, 32, 1)))),
    ("tanh", lambda: om.qdq_unit(om.unary("Tanh", shape=(1, 8, 32, 1)))),
    ("leaky_relu", lambda: om.qdq_unit(om.unary("LeakyRelu", shape=(1, 8, 32, 1), alpha=0.2))),
    ("relu", lambda: om.qdq_unit(om.unary("Relu", shape=(1, 8, 32, 1)))),
    ("sigmoid_uint8", lambda: om.qdq_unit(om.unary("Sigmoid", shape=(1, 8, 32, 1)), dtype="uint8")),
    ("sigmoid_1_256", lambda: om.qdq_unit(om.unary("Sigmoid", shape=(1, 8, 32, 1)),
                                          fixed_output=(1 / 256, -128))),
    ("hard_swish", lambda: om.qdq_unit(om.unary("HardSwish", shape=(1, 8, 32, 1)))),
    ("hard_swish_uint8", lambda: om.qdq_unit(om.unary("HardSwish", shape=(1, 8, 32, 1)),
                                             dtype="uint8")),
    ("leaky_relu_negative_alpha", lambda: om.qdq_unit(om.unary("LeakyRelu", shape=(1, 8, 32, 1),
                                                               alpha=-0.3))),
    ("tanh_seed2", lambda: om.qdq_unit(om.unary("Tanh", shape=(1, 8, 32, 1)), seed=2)),
    ("leaky_relu_alpha_1.5", lambda: om.qdq_unit(om.unary("LeakyRelu", shape=(1, 8, 32, 1),
                                                          alpha=1.5), seed=1)),
    ("hard_swish_out_0.02_5", lambda: om.qdq_unit(om.unary("HardSwish", shape=(1, 8, 32, 1)),
                                                  fixed_output=(0.02, 5), seed=3)),
    ("sigmoid_out_0.005_0", lambda: om.qdq_unit(om.unary("Sigmoid", shape=(1, 8, 32, 1)),
                                                fixed_output=(0.005, 0), seed=4)),
    ("tanh_uint8", lambda: om.qdq_unit(om.unary("Tanh", shape=(1, 8, 32, 1)), dtype="uint8")),
]


@pytest.mark.parametrize("builder", [u[1] for u in LUT_UNITS], ids=[u[0] for u in LUT_UNITS])
def test_lut_units_bit_exact_to_cpu_ep(builder):
    """Unary units over all 256 input values: the table is ONNX semantics."""
    model = builder()
    q = onnx.load_from_string(model)
    u8 = q.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.UINT8
    x = (np.arange(256, dtype=np.uint8) if u8 else np.arange(-128, 128).astype(np.int8)).reshape(1, 8, 32, 1)
    (cpu,), (npu,), rep = run_both(model, {"x_q": x}, {"min_partition_macs": 0})
    assert rep["partitions"]
    mx, n, size = diff_stats(cpu, npu)
    print(f"{n}/{size} table entries differ from the CPU EP, max |diff| {mx}")
    np.testing.assert_array_equal(npu, cpu)


# ---- whole small models ------------------------------------------------------------

def _cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))


MODELS = [
    ("cnn_qdq_int8", lambda: om.quantize(om.small_cnn())),
    ("cnn_qdq_uint8_per_channel", lambda: om.quantize(om.small_cnn(), activation="uint8",
                                                      per_channel=True)),
    ("cnn_qoperator", lambda: om.quantize(om.small_cnn(), fmt="QOperator")),
    ("cnn_softmax_in_middle", lambda: om.quantize(om.small_cnn(softmax_in_middle=True))),
    ("mlp_qdq", lambda: om.quantize(om.mlp(batch=4))),
]


def whole_model_stats(model, options=None, seed=5):
    feeds = om.input_feeds(model, seed=seed, n=1)[0]
    (cpu,), (npu,), rep = run_both(model, feeds, options)
    d = np.abs(cpu - npu)
    return dict(cosine=_cosine(cpu, npu), max_diff=float(d.max()),
                frac_diff=float(np.count_nonzero(d) / d.size), claimed=rep["claimed_nodes"],
                total=rep["total_nodes"], partitions=len(rep["partitions"]))


@pytest.mark.parametrize("builder", [b for _, b in MODELS], ids=[n for n, _ in MODELS])
def test_whole_model_cosine(builder):
    stats = whole_model_stats(builder())
    print(stats)
    assert stats["partitions"] >= 1
    assert stats["cosine"] >= 0.99


def _keras_inputs(name, n):
    """Realistic inputs: the digits test split for the digits CNN, else
    uniform [-1, 1] images like the models' calibration data."""
    from nacc import models

    if name == "digits_cnn":
        return models.digits_split()[2][:n]
    shape = models.MODELS[name][1]
    return np.random.default_rng(3).uniform(-1, 1, (n, *shape)).astype(np.float32)


def _with_logits_output(model: bytes) -> bytes:
    """The model with the (dequantized) input of its Softmax as an extra output."""
    m = onnx.load_from_string(model)
    (sm,) = [n for n in m.graph.node if n.op_type == "Softmax"]
    m.graph.output.append(onnx.helper.make_tensor_value_info(sm.input[0], onnx.TensorProto.FLOAT,
                                                             None))
    return m.SerializeToString()


@pytest.mark.parametrize("name,n,floor", [
    ("digits_cnn", 20, 0.99),
    # The random-weight MobileNetV1's logits (std about 0.25, a few quantization
    # steps) are unstable in ORT itself: its CPU EP with graph optimizations
    # disabled gives cosine 0.831 against the optimized CPU EP on these inputs
    # (measured), so 0.99 is not reachable by any int8 implementation; the
    # floor is ORT's own agreement with itself minus 0.05.
    pytest.param("mobilenet_v1_025_128", 3, "ort-self", marks=pytest.mark.slow),
])
def test_keras_tf2onnx_model_cosine(name, n, floor):
    """Keras models exported with tf2onnx and quantized with quantize_static
    (nacc.models), n realistic inputs: cosine similarity of the logits (the
    Softmax input, dequantized) against the CPU EP >= 0.99. The softmax
    outputs' differences are printed: a near-flat 1000-class softmax of a
    random-weight model is mostly 0 and 1/256, so its cosine says nothing (the
    nacc EP's outputs differ from the CPU EP's by at most one step there);
    on the digits CNN 13 of 200 probabilities differ, by up to 0.075, with
    the same top-1 class on 20 of 20 images."""
    import keras_models
    from nacc import models

    model = _with_logits_output(models.onnx_model(name, cache=keras_models.CACHE_DIR))
    cpu_s = om.session(model, ["CPUExecutionProvider"])
    npu_s = om.session(model, "nacc", {"min_partition_macs": "0"})
    inp = cpu_s.get_inputs()[0].name
    cpu, npu = [], []
    for x in _keras_inputs(name, n):
        cpu.append(cpu_s.run(None, {inp: x[None]}))
        npu.append(npu_s.run(None, {inp: x[None]}))
    probs = [np.concatenate([r[0] for r in runs]) for runs in (cpu, npu)]
    logits = [np.concatenate([r[1] for r in runs]) for runs in (cpu, npu)]
    rep = nort.partition_reports()[-1]
    d = np.abs(probs[0] - probs[1])
    agree = int(np.sum(probs[0].argmax(-1) == probs[1].argmax(-1)))
    cos = _cosine(*logits)
    print(f"{name}: claimed {rep['claimed_nodes']}/{rep['total_nodes']} in "
          f"{len(rep['partitions'])} partitions; softmax: {np.count_nonzero(d)}/{d.size} differ, "
          f"max {d.max():.4f}, same top-1 on {agree}/{n}; logits: "
          f"{np.count_nonzero(logits[0] != logits[1])}/{logits[0].size} differ, "
          f"max {np.abs(logits[0] - logits[1]).max():.4f}, cosine {cos:.5f}")
    assert rep["partitions"]
    if floor == "ort-self":
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        plain = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        plain_logits = np.concatenate([plain.run(None, {inp: x[None]})[1]
                                       for x in _keras_inputs(name, n)])
        floor = _cosine(logits[0], plain_logits) - 0.05
        print(f"ORT CPU EP optimized vs unoptimized: logits cosine {floor + 0.05:.5f}")
    assert cos >= floor


def _differing(model, seed=5):
    feeds = om.input_feeds(model, seed=seed, n=1)[0]
    (cpu,), (npu,), rep = run_both(model, feeds)
    return int(np.count_nonzero(cpu != npu)), cpu.size, rep


def test_whole_cnn_differing_elements():
    """Small CNNs end to end against the CPU EP (float model I/O, QDQ int8):
    the classifier (conv, conv stride 2, maxpool, depthwise conv, Gemm; ReLUs
    fused; GlobalAveragePool on the host) and its 32x32 feature map without
    the head ([1, 16, 8, 8]). With 7-bit weights (reduce_range) and without the
    residual Add, every NPU layer is exact, so no element differs (before the
    float32 output stage for conv / depthwise / Gemm: 71 of 1024 feature-map
    elements). Printed, not asserted: with the Add (TFLite's fixed-point
    element-wise arithmetic on the NPU, float32 QLinearAdd on the CPU EP), and
    with 8-bit weights, where the CPU EP's AVX2 u8s8 convolution kernel
    saturates int16 pair sums (vpmaddubsw) and so departs from exact integer
    arithmetic, which the NPU keeps (measured: 3 of 1024 features)."""
    for residual in (False, True):
        for bits, rr in ((7, True), (8, False)):
            for name, model in (("classifier", om.small_cnn(residual=residual)),
                                ("features", om.small_cnn(hw=32, residual=residual, head=False))):
                n, size, rep = _differing(om.quantize(model, reduce_range=rr))
                print(f"residual={residual} {bits}-bit weights {name}: {n}/{size} elements "
                      f"differ; host nodes {sorted({h['op_type'] for h in rep['host_nodes']})}")
                assert rep["partitions"]
                if not residual and rr:
                    assert n == 0, name


@pytest.mark.parametrize("layer", ["conv1", "conv2", "fc"])
def test_wrong_multiplier_fails_the_cosine_check(layer):
    """One layer's weight scales doubled in the IR (its float32 output scale
    doubled): the whole-model check must catch it. (Measured: cosine about
    0.96 for conv1, conv2 and fc; the depthwise conv3_dw on the residual branch
    only drops to about 0.994 — a metric this coarse cannot see every bug,
    which is why the single-unit and bit-exact tests exist.)"""
    model = om.quantize(om.small_cnn())
    good = whole_model_stats(model)
    nort._set_test_perturb_node(layer)  # a test hook of the library, not an EP option
    try:
        bad = whole_model_stats(model)
    finally:
        nort._set_test_perturb_node("")
    print("good", good, "perturbed", bad)
    assert bad["claimed"] == good["claimed"]  # the perturbed layer still runs on the NPU
    assert good["cosine"] >= 0.99 > bad["cosine"]


# ---- exactness: independent numpy reference ----------------------------------------

def quantize_multiplier(m):
    """TFLite QuantizeMultiplier: (q31 multiplier, shift) with m = q * 2^(shift-31)."""
    if m == 0:
        return 0, 0
    frac, shift = np.frexp(m)
    q = int(np.round(frac * (1 << 31))) if frac >= 0 else -int(np.round(-frac * (1 << 31)))
    if q == 1 << 31:
        q //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q, int(shift)


def rdbpot(x, e):
    mask = (1 << e) - 1
    rem = x & mask
    thr = (mask >> 1) + (x < 0)
    return (x >> e) + (rem > thr)


def mbqm(acc, q, shift):
    left, right = max(shift, 0), max(-shift, 0)
    x = acc.astype(np.int64) * (1 << left)
    x = ((x + (1 << 31)) % (1 << 32)) - (1 << 31)  # int32 wrap, as TFLite's multiply
    # SaturatingRoundingDoublingHighMul, exact in int64 (round half away from zero)
    ab = x * np.int64(q)
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    num = ab + nudge
    hi = np.where(num >= 0, num // (1 << 31), -((-num) // (1 << 31)))
    return rdbpot(hi, right)


def numpy_qdq_conv(x_q, x_s, x_z, w_q, w_s, b_q, y_s, y_z, stride, pads, qmin, qmax,
                   float_stage=True):
    """ONNX QDQ Conv: int32 accumulation of (x - zx) * w + bias, requantized per
    output channel as ONNX Runtime's CPU QLinearConv does (float_stage: float32
    float(acc) * float(x_s * w_s[c]) / y_s, round half to even), or with
    TFLite's fixed-point multiplier/shift (NACC_SPEC §1)."""
    x = x_q.astype(np.int64) - x_z
    n, c, h, w = x.shape
    o, _, kh, kw = w_q.shape
    t, l, b, r = pads
    xp = np.zeros((n, c, h + t + b, w + l + r), np.int64)
    xp[:, :, t:t + h, l:l + w] = x
    oh = (h + t + b - kh) // stride + 1
    ow = (w + l + r - kw) // stride + 1
    acc = np.zeros((n, o, oh, ow), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[:, :, ky:ky + stride * oh:stride, kx:kx + stride * ow:stride]
            acc += np.einsum("nchw,oc->nohw", patch, w_q[:, :, ky, kx].astype(np.int64))
    acc += b_q.reshape(1, o, 1, 1)
    out = np.empty_like(acc)
    ws = np.broadcast_to(np.asarray(w_s, np.float32), (o,))
    acc32 = ((acc + (1 << 31)) % (1 << 32)) - (1 << 31)  # int32 wrap
    for oc in range(o):
        if float_stage:
            scale = np.float32(np.float32(x_s) * ws[oc]) / np.float32(y_s)
            v = acc32[:, oc].astype(np.float32) * np.float32(scale)
            out[:, oc] = np.rint(v).astype(np.int64)  # half to even
        else:
            q, shift = quantize_multiplier(float(np.float64(x_s) * np.float64(ws[oc]) / np.float64(y_s)))
            out[:, oc] = mbqm(acc[:, oc], q, shift)
    return np.clip(out + y_z, qmin, qmax)


CONV_CASES = [
    dict(), dict(stride=2, pads=(1, 0, 2, 1)), dict(k=5, pads=(2, 2, 2, 2), c_out=33),
    dict(k=1, pads=(0, 0, 0, 0), c_in=70),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=[str(c) for c in CONV_CASES])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_conv_bit_exact_to_numpy_reference(case, per_channel, dtype):
    model = om.qdq_unit(om.conv(**case), dtype=dtype, per_channel=per_channel)
    q = onnx.load_from_string(model)
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in q.graph.initializer}
    feeds = om.int8_feeds(model, seed=7)
    qmin, qmax = (-128, 127) if dtype == "int8" else (0, 255)
    conv = om.conv(**case).graph.node[0]
    stride = [a.ints[0] for a in conv.attribute if a.name == "strides"][0]
    pads = tuple([a.ints for a in conv.attribute if a.name == "pads"][0])
    pads = (pads[0], pads[1], pads[2], pads[3])
    ref = numpy_qdq_conv(feeds["x_q"], inits["x_s"], int(inits["x_z"]), inits["w_q"], inits["w_s"],
                         inits["b_q"], inits["y_s"], int(inits["y_z"]), stride, pads, qmin, qmax)
    fixed = numpy_qdq_conv(feeds["x_q"], inits["x_s"], int(inits["x_z"]), inits["w_q"],
                           inits["w_s"], inits["b_q"], inits["y_s"], int(inits["y_z"]), stride,
                           pads, qmin, qmax, float_stage=False)
    print(f"TFLite's fixed-point requantization would differ in "
          f"{np.count_nonzero(fixed != ref)}/{ref.size} elements")
    for cores in (1, 4, 8):
        (npu,) = om.session(model, "nacc", {"cores": cores}).run(None, feeds)
        np.testing.assert_array_equal(npu.astype(np.int64), ref, err_msg=f"cores={cores}")


# ---- sessions ---------------------------------------------------------------------

def test_two_sessions_and_four_threads():
    model = om.quantize(om.small_cnn())
    feeds = [om.input_feeds(model, seed=s)[0] for s in range(8)]
    a = om.session(model, "nacc", {"cores": 2})
    b = om.session(model, "nacc", {"cores": 4})
    expected = [a.run(None, f)[0] for f in feeds]
    for f, e in zip(feeds, expected):
        np.testing.assert_array_equal(b.run(None, f)[0], e)
    results = [None] * len(feeds)
    errors = []

    def worker(k):
        try:
            for i in range(k, len(feeds), 4):
                results[i] = a.run(None, feeds[i])[0]
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for r, e in zip(results, expected):
        np.testing.assert_array_equal(r, e)


def test_ep_context_round_trip(tmp_path):
    model = om.quantize(om.small_cnn())
    feeds = om.input_feeds(model, seed=1)[0]
    ref = om.session(model, "nacc").run(None, feeds)[0]
    ctx = tmp_path / "model_ctx.onnx"
    om.session(model, "nacc", config={"ep.context_enable": "1", "ep.context_file_path": str(ctx),
                                      "ep.context_embed_mode": "1"})
    assert ctx.exists()
    m = onnx.load(str(ctx))
    ops = [n.op_type for n in m.graph.node]
    assert "EPContext" in ops and "Conv" not in ops
    s = om.session(str(ctx), "nacc")
    rep = nort.partition_reports()[-1]
    assert rep["partitions"] and rep["partitions"][0]["units"] == []  # the EPContext node itself
    np.testing.assert_array_equal(s.run(None, feeds)[0], ref)


def test_cache_dir_round_trip(tmp_path):
    model = om.quantize(om.small_cnn(c=6))
    feeds = om.input_feeds(model, seed=2)[0]
    first = om.session(model, "nacc", {"cache_dir": str(tmp_path)}).run(None, feeds)[0]
    files = list(tmp_path.glob("*.naccpart"))
    assert files
    stamp = [f.stat().st_mtime_ns for f in files]
    second = om.session(model, "nacc", {"cache_dir": str(tmp_path)}).run(None, feeds)[0]
    np.testing.assert_array_equal(first, second)
    assert [f.stat().st_mtime_ns for f in files] == stamp  # loaded, not recompiled


@pytest.mark.parametrize("cores,sram_kb", [(1, 16), (8, 16), (32, 16), (32, 64)])
@pytest.mark.parametrize("stride,pads", [(3, (5, 5, 5, 5)), (1, (5, 4, 5, 4))])
def test_padding_past_the_window_every_schedule(cores, sram_kb, stride, pads):
    """A 5x5 window with 5 rows / columns of padding: the first output row and
    column (and with stride 1 the last) read padding only. A tile of such
    rows or columns alone holds no input pixel, which the device refuses; the
    tiling search must not choose one at any core count or SRAM size (the
    ramped column tiles once did). Claimed, and exact to the CPU EP."""
    model = om.qdq_unit(om.conv(hw=(13, 11), k=5, stride=stride, pads=pads, c_in=8, c_out=16))
    feeds = om.int8_feeds(model, seed=5)
    (cpu,), (npu,), rep = run_both(model, feeds, {"cores": cores, "sram_kb": sram_kb,
                                                  "min_partition_macs": 0})
    assert rep["partitions"], rep["host_nodes"]
    assert np.count_nonzero(cpu != npu) == 0

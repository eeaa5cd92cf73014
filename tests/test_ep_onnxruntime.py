"""NACC ONNX Runtime plugin EP: registration, the three selection forms,
provider options, and GetCapability's claims and declines on small QDQ /
QOperator models (the partition report is nacc's own record of both).

Numerics (outputs against the CPU EP and an independent numpy reference) are
in test_ep_numerics.py.
"""
import json
import os

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

import nacc.onnxruntime as nort  # noqa: E402
import onnx_models as om  # noqa: E402

# ORT warns when its CPU fallback retry meets SessionOptions that name our EP
pytestmark = pytest.mark.filterwarnings("ignore:Specified .providers.:UserWarning")

EP = "NaccExecutionProvider"
NO_BACKEND = "this build has no NACC compiler"
# the capability rule (compiler_lowering) naming op kinds the compiler does not lower yet
NOT_LOWERED = "is not lowered by this compiler version"
# The only unit whose ONNX semantics the compiler does not lower: GlobalAveragePool
# (ONNX Runtime's float mean, requantized half to even). Any other unit the
# compiler rejects is a failure, not an expected one.


@pytest.fixture(scope="module", autouse=True)
def registered():
    nort.register()


def last_report():
    return nort.partition_reports()[-1]


def claimed_ops(report):
    """Op types of the node units the EP claims (or would claim once the core
    compiler is linked: partitions that failed only for that reason)."""
    ops = []
    for p in report["partitions"]:
        ops += [u["op_type"] for u in p["units"]]
    for h in report["host_nodes"]:
        if NO_BACKEND in h["reason"] and h["op_type"] not in ("QuantizeLinear", "DequantizeLinear"):
            ops.append(h["op_type"])
    return sorted(ops)


def declined(report):
    """{op_type: reason} of declined unit targets (not Q/DQ, not float ops)."""
    return {h["op_type"]: h["reason"] for h in report["host_nodes"]
            if h["npu_candidate"] and NO_BACKEND not in h["reason"]
            and h["op_type"] not in ("QuantizeLinear", "DequantizeLinear")}


# ---- library, registration, selection --------------------------------------------

def test_library_path_and_name():
    path = nort.get_library_path()
    assert os.path.isfile(path) and path.endswith(".so")
    assert nort.get_ep_name() == EP


def test_register_is_idempotent():
    nort.register()
    nort.register()
    devices = [d for d in ort.get_ep_devices() if d.ep_name == EP]
    assert len(devices) == 1
    assert devices[0].ep_vendor == "nacc"
    assert devices[0].device.type == ort.OrtHardwareDeviceType.CPU


def _session_providers(form, options, model):
    if form == "providers":
        return ort.InferenceSession(model, providers=[(EP, options), "CPUExecutionProvider"])
    so = ort.SessionOptions()
    if form == "devices":
        so.add_provider_for_devices(nort.ep_devices(), options)
    else:
        so.add_provider(EP, options)
    return om.strict_session(model, so)


SELECTION_FORMS = ["providers", "devices", "add_provider"]


@pytest.mark.parametrize("form", SELECTION_FORMS)
def test_selection_forms_pick_the_ep(form):
    model = om.qdq_unit(om.conv())
    s = _session_providers(form, {"cores": "4"}, model)
    assert s.get_providers()[0] == EP
    rep = last_report()
    assert rep["graph"] == "unit_Conv"
    assert claimed_ops(rep) == ["Conv"]


@pytest.mark.parametrize("form", ["devices", "add_provider"])
def test_selection_forms_pass_options(form):
    """A bad option fails in every form: the options reach CreateEp."""
    with pytest.raises(Exception, match=r"ep\.naccexecutionprovider\.cores='3'"):
        _session_providers(form, {"cores": "3"}, om.qdq_unit(om.conv()))


def test_providers_list_form_reports_bad_options(capsys):
    """With providers=[...], ORT's Python wrapper prints the EP's error and
    falls back to the CPU EP instead of raising (onnxruntime 1.31 behaviour)."""
    s = _session_providers("providers", {"cores": "3"}, om.qdq_unit(om.conv()))
    assert EP not in s.get_providers()
    assert "ep.naccexecutionprovider.cores='3': must be 1, 2, 4, 8, 16 or 32" in capsys.readouterr().out


BAD_OPTIONS = [
    # key, value, what the message must say
    ("cores", "3", "must be 1, 2, 4, 8, 16 or 32"),
    ("cores", "64", "must be 1, 2, 4, 8, 16 or 32"),
    ("cores", "four", "must be 1, 2, 4, 8, 16 or 32"),
    ("sram_kb", "100", "power of two in [16, 1024]"),
    ("sram_kb", "8", "power of two in [16, 1024]"),
    ("threads", "-1", "integer in [0, 256]"),
    ("threads", "257", "integer in [0, 256]"),
    ("clock_mhz", "0", "integer in [1, 10000]"),
    ("fallback", "maybe", "'allow'"),
    ("min_partition_macs", "-5", "integer in [0,"),
    ("corez", "4", "unknown option 'ep.naccexecutionprovider.corez'; known options: threads, cores"),
]


@pytest.mark.parametrize("key,value,message", BAD_OPTIONS)
def test_bad_provider_options(key, value, message):
    with pytest.raises(Exception) as e:
        om.session(om.qdq_unit(om.conv()), "nacc", {key: value})
    assert message in str(e.value)
    assert "INVALID_ARGUMENT" in str(e.value)


def test_all_bad_options_reported_at_once():
    with pytest.raises(Exception) as e:
        om.session(om.qdq_unit(om.conv()), "nacc", {"cores": "3", "sram_kb": "7"})
    assert "cores='3'" in str(e.value) and "sram_kb='7'" in str(e.value)


@pytest.mark.parametrize("key,value", [("cores", "1"), ("cores", "32"), ("sram_kb", "16"),
                                       ("sram_kb", "1024"), ("threads", "0"), ("threads", "256"),
                                       ("clock_mhz", "10000"), ("fallback", "allow"),
                                       ("min_partition_macs", "0")])
def test_good_provider_options_at_the_limits(key, value):
    om.session(om.qdq_unit(om.conv()), "nacc", {key: value})


# ---- capability: one unit per model --------------------------------------------

def _pool_same_q(model, **kw):
    # pools keep the input's quantization (as ORT's quantizer does)
    return om.qdq_unit(model, fixed_output=None, **kw)


CLAIMS = [
    # id, model builder, claimed op types
    ("conv_int8", lambda: om.qdq_unit(om.conv()), ["Conv"]),
    ("conv_uint8_per_channel_u8w", lambda: om.qdq_unit(om.conv(), dtype="uint8", per_channel=True,
                                                        weight_dtype="uint8"), ["Conv"]),
    ("conv_per_channel", lambda: om.qdq_unit(om.conv(), per_channel=True), ["Conv"]),
    ("conv_stride2_same_upper", lambda: om.qdq_unit(om.conv(stride=2, auto_pad="SAME_UPPER")), ["Conv"]),
    ("conv_1x1_no_bias", lambda: om.qdq_unit(om.conv(k=1, pads=(0, 0, 0, 0), bias=False)), ["Conv"]),
    ("conv_kernel_15", lambda: om.qdq_unit(om.conv(c_in=2, c_out=2, hw=(16, 16), k=15, pads=(0, 0, 0, 0))), ["Conv"]),
    ("depthwise", lambda: om.qdq_unit(om.conv(c_in=8, c_out=16, group=8)), ["Conv"]),
    ("matmul_const", lambda: om.qdq_unit(om.matmul()), ["MatMul"]),
    ("matmul_rank3", lambda: om.qdq_unit(om.matmul(rank3=True)), ["MatMul"]),
    ("matmul_two_activations", lambda: om.qdq_unit(om.matmul(const_b=False)), ["MatMul"]),
    ("gemm_per_channel", lambda: om.qdq_unit(om.gemm(), per_channel=True), ["Gemm"]),
    ("gemm_no_trans", lambda: om.qdq_unit(om.gemm(trans_b=0)), ["Gemm"]),
    ("add", lambda: om.qdq_unit(om.binary("Add")), ["Add"]),
    ("sub", lambda: om.qdq_unit(om.binary("Sub")), ["Sub"]),
    ("mul_channel_broadcast", lambda: om.qdq_unit(om.binary("Mul", shape_b=(1, 8, 1, 1))), ["Mul"]),
    ("relu", lambda: om.qdq_unit(om.unary("Relu")), ["Relu"]),
    ("clip_relu6", lambda: om.qdq_unit(om.unary("Clip", lo=0.0, hi=6.0)), ["Clip"]),
    ("sigmoid", lambda: om.qdq_unit(om.unary("Sigmoid"), fixed_output=(1 / 256, -128)), ["Sigmoid"]),
    ("tanh", lambda: om.qdq_unit(om.unary("Tanh"), fixed_output=(1 / 128, 0)), ["Tanh"]),
    ("leaky_relu", lambda: om.qdq_unit(om.unary("LeakyRelu", alpha=0.1)), ["LeakyRelu"]),
    # ONNX-semantics tables (ir::Attributes::lut) make any output quantization exact
    ("tanh_free_output_scale", lambda: om.qdq_unit(om.unary("Tanh")), ["Tanh"]),
    ("sigmoid_free_output_scale", lambda: om.qdq_unit(om.unary("Sigmoid")), ["Sigmoid"]),
    ("hard_swish", lambda: om.qdq_unit(om.unary("HardSwish")), ["HardSwish"]),
    ("global_average_pool", lambda: om.qdq_unit(om.global_average_pool()), ["GlobalAveragePool"]),
]


@pytest.mark.parametrize("builder,ops", [c[1:] for c in CLAIMS], ids=[c[0] for c in CLAIMS])
def test_claims_single_unit(builder, ops):
    om.session(builder(), "nacc", {"min_partition_macs": "0"})
    rep = last_report()
    compiler = [h["reason"] for h in rep["host_nodes"]
                if (h["reason"].startswith("the compiler rejects it") or NOT_LOWERED in h["reason"])
                and NO_BACKEND not in h["reason"]]
    # GlobalAveragePool (QLinearGlobalAveragePool's float32 output stage) is
    # lowered since issue 14: no compiler rejection is expected for any unit.
    assert not compiler, compiler
    assert claimed_ops(rep) == ops, rep
    assert not declined(rep)


def _pool_unit(op, **kw):
    m = om.pool(op, **kw)
    # pools must keep their input quantization: take it from a first pass
    b = om.qdq_unit(m)
    q = onnx.load_from_string(b)
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in q.graph.initializer}
    return om.qdq_unit(m, fixed_output=(float(inits["x_s"]), int(inits["x_z"])))


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_claims_pools_sharing_quantization(op):
    om.session(_pool_unit(op), "nacc", {"min_partition_macs": "0"})
    assert claimed_ops(last_report()) == [op]


DECLINES = [
    # id, model builder, declined op, words the reason must contain
    # grouped and dilated Conv run as parts (tests/test_grouped_dilated.py);
    # dilation with a stride, or a padding a phase cannot take, is declined
    ("conv_dilation_stride_2", lambda: om.qdq_unit(om.conv(dilation=2, stride=2,
                                                           pads=(2, 2, 2, 2))), "Conv",
     "dilation 2x2 with stride 2x2"),
    # a stride-4 Conv runs as a space-to-depth gather, but not a grouped one
    ("conv_stride_4_grouped", lambda: om.qdq_unit(om.conv(c_in=8, c_out=8, group=2, stride=4,
                                                          hw=(16, 16))), "Conv",
     "a grouped convolution with a space-to-depth gather"),
    ("conv_kernel_16", lambda: om.qdq_unit(om.conv(c_in=2, c_out=2, hw=(16, 16), k=16, pads=(0, 0, 0, 0))),
     "Conv", "kernel height and width must be in [1, 15]"),
    ("conv_dilation_2_pad_6", lambda: om.qdq_unit(om.conv(dilation=2, pads=(6, 6, 6, 6))), "Conv",
     "a phase from output 0 pads 3/3 around its 3-tap window"),
    ("conv_pad_6", lambda: om.qdq_unit(om.conv(k=3, pads=(6, 6, 6, 6))), "Conv",
     "padding must be in [0, 5]"),
    ("conv_uint8_weights_zp", lambda: _u8_weights_zp(), "Conv", "zero point"),
    ("avg_pool_count_include_pad", lambda: _pool_unit("AveragePool", pads=(1, 1, 1, 1),
                                                       count_include_pad=1), "AveragePool",
     "count_include_pad=1"),
    # 3x3 stride 1 is claimed (the float32 pool modes take the max pool's windows)
    ("avg_pool_16x16", lambda: _pool_unit("AveragePool", k=16, stride=1, hw=(20, 20)),
     "AveragePool", "windows up to 15"),
    ("max_pool_ceil_mode", lambda: _pool_unit("MaxPool", hw=(7, 7), ceil_mode=1), "MaxPool",
     "ceil_mode=1 adds a partial window"),
    ("maxpool_requantizing", lambda: om.qdq_unit(om.pool("MaxPool")), "MaxPool",
     "must share one scale and zero point"),
    ("clip_other_bounds", lambda: om.qdq_unit(om.unary("Clip", lo=-2.0, hi=3.0)), "Clip",
     "is not Relu, Relu6 or ReluN1To1"),
    ("mul_rank_broadcast", lambda: om.qdq_unit(om.binary("Mul", shape_b=(8, 1, 1))), "Mul",
     "lower rank"),
]


def _u8_weights_zp():
    """uint8 weights whose zero point is not 128 (not symmetric after the shift)."""
    b = om.qdq_unit(om.conv(), dtype="uint8", weight_dtype="uint8")
    m = onnx.load_from_string(b)
    for init in m.graph.initializer:
        if init.name == "w_z":
            init.CopyFrom(onnx.numpy_helper.from_array(np.array(120, np.uint8), "w_z"))
    return m.SerializeToString()


@pytest.mark.parametrize("builder,op,words", [c[1:] for c in DECLINES], ids=[c[0] for c in DECLINES])
def test_declines_with_reason(builder, op, words):
    om.session(builder(), "nacc", {"min_partition_macs": "0"})
    rep = last_report()
    assert claimed_ops(rep) == []
    reasons = declined(rep)
    assert op in reasons, rep
    assert words in reasons[op]


def test_dynamic_shape_declined():
    m = om.qdq_unit(om.conv())
    model = onnx.load_from_string(m)
    model.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "H"
    model.graph.output[0].type.tensor_type.shape.dim[2].dim_param = "OH"
    om.session(model.SerializeToString(), "nacc", {"min_partition_macs": "0"})
    assert "dynamic shape" in declined(last_report())["Conv"]


def test_claim_uses_the_compilers_sram_alignment():
    """Claim and compile judge SRAM with one alignment (issue 12 item 7). At
    sram_kb=128 the compiler rounds every SRAM buffer to 128 bytes
    (arch/sram.h: lcm(SRAM/1024, 64)). A MatMul of two runtime operands with
    K = 65344 needs 2*A(K) + 2*A(4) + A(1) bytes (support/sram.h): 130880
    with 64-byte rounding, which fits 131072, but 131200 with 128-byte
    rounding. The capability rule must decline it with its own reason; with
    the claim at 64 bytes it was claimed and only the compiler rejected it
    ("the compiler rejects it: ...")."""
    model = om.qdq_unit(om.matmul(m=1, k=65344, n=1, const_b=False))
    om.session(model, "nacc", {"sram_kb": "128"})
    reason = declined(last_report())["MatMul"]
    assert "smallest tile needs 131200 bytes of SRAM, 131072 available" in reason, reason
    assert "compiler rejects" not in reason, reason
    # K = 65280, a multiple of 128, needs 130944 bytes either way: claimed and compiled.
    om.session(om.qdq_unit(om.matmul(m=1, k=65280, n=1, const_b=False)), "nacc",
               {"sram_kb": "128"})
    assert claimed_ops(last_report()) == ["MatMul"]


def test_fragmentation_guard():
    model = om.qdq_unit(om.binary("Add"))
    om.session(model, "nacc", {"min_partition_macs": "1"})  # a MAC-free partition stays home
    rep = last_report()
    assert claimed_ops(rep) == []
    # the one wording of csrc/partition/policy.h, as the delegate reports it
    assert declined(rep)["Add"] == (
        "fragmentation guard: its partition (1 op) does 0 MACs \u2014 partitions must do at least "
        "min_partition_macs = 1 MACs (the host round trip would cost more than it saves)")
    om.session(model, "nacc")  # default 0: the guard is off
    assert claimed_ops(last_report()) == ["Add"]


def test_reshape_alone_stays_home():
    model = om.qdq_unit(om.float_model(
        [onnx.helper.make_node("Flatten", ["x"], ["y"], name="flatten")], {"x": (1, 8, 1, 1)},
        {"y": (1, 8)}))
    om.session(model, "nacc")
    assert declined(last_report())["Flatten"] == (
        "its partition would only reshape (1 op, views: no NPU work) \u2014 a partition must "
        "compute something; views cost nothing on the host")


@pytest.mark.parametrize("key", ["dump_dir", "cache_dir"])
def test_unwritable_directory_options(key, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(Exception) as e:
        om.session(om.qdq_unit(om.conv()), "nacc", {key: str(blocker / "sub")})
    assert f"ep.naccexecutionprovider.{key}=" in str(e.value) and "cannot create directory" in str(e.value)


# ---- capability: whole models ---------------------------------------------------

def test_qdq_cnn_is_one_partition():
    model = om.quantize(om.small_cnn())
    om.session(model, "nacc")
    rep = last_report()
    ops = set(claimed_ops(rep))
    assert {"Add", "Conv", "Flatten", "Gemm", "MaxPool"} <= ops
    host = [h for h in rep["host_nodes"] if NO_BACKEND not in h["reason"]]
    if "GlobalAveragePool" not in ops:  # this compiler may not lower MEAN yet
        gap = [h for h in host if h["op_type"] == "GlobalAveragePool"]
        assert NOT_LOWERED in gap[0]["reason"]
        host = [h for h in host if h["name"] not in ("gap", "g_QuantizeLinear", "s3_DequantizeLinear")]
    # only the model's float -> int8 input and int8 -> float output conversions stay home
    assert sorted(h["op_type"] for h in host) == ["DequantizeLinear", "QuantizeLinear"], host


def test_qoperator_cnn():
    model = om.quantize(om.small_cnn(), fmt="QOperator")
    om.session(model, "nacc")
    rep = last_report()
    ops = set(claimed_ops(rep))
    # int8-form MaxPool / Flatten join the partition of the QLinear op that
    # quantizes their input; without a linked compiler nothing forms one.
    assert {"QGemm", "QLinearAdd", "QLinearConv"} <= ops
    if rep["partitions"]:
        assert "MaxPool" in ops
        # Flatten's quantization comes from QLinearGlobalAveragePool: it can
        # only join that op's partition
        assert ("Flatten" in ops) == ("QLinearGlobalAveragePool" in ops)


def test_unsupported_node_in_the_middle_splits_partitions():
    model = om.quantize(om.small_cnn(softmax_in_middle=True))
    om.session(model, "nacc")
    rep = last_report()
    host_ops = {h["op_type"]: h for h in rep["host_nodes"]}
    assert host_ops["Softmax"]["reason"] == "float op (not quantized): runs on the host" or \
        host_ops["Softmax"]["npu_candidate"] is False
    assert "Conv" in claimed_ops(rep) and "Gemm" in claimed_ops(rep)


def test_float_model_untouched():
    model = om.small_cnn().SerializeToString()
    x = {"x": np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)}
    ref = om.session(model, ["CPUExecutionProvider"]).run(None, x)[0]
    out = om.session(model, "nacc").run(None, x)[0]
    rep = last_report()
    assert rep["claimed_nodes"] == 0 and not rep["partitions"]
    assert not any(h["npu_candidate"] for h in rep["host_nodes"])
    np.testing.assert_array_equal(out, ref)


def test_dump_dir_report(tmp_path):
    om.session(om.qdq_unit(om.conv()), "nacc", {"dump_dir": str(tmp_path)})
    rep = json.loads((tmp_path / "partition_report.json").read_text())
    assert rep["graph"] == "unit_Conv" and rep["total_nodes"] == 5


def test_fallback_error():
    model = om.quantize(om.small_cnn(softmax_in_middle=True))
    x = om.input_feeds(model)[0]
    with pytest.raises(Exception, match="fallback=error"):
        s = om.session(model, "nacc", {"fallback": "error"})
        s.run(None, x)


# ---- 16-bit QDQ (issue 16): declined, each with its reason ---------------------------
# quantize_static(activation_type=QInt16, ActivationSymmetric) writes int16 Q/DQ with
# zero point 0; ONNX Runtime's CPU EP runs those units in float between DQ and Q, so
# there is no exact oracle and the EP claims none of them. QUInt16's zero point (about
# 32768) does not fit the NPU's 9-bit offset registers.
INT16_UNITS = [
    ("conv", lambda: om.conv(), "Conv"),
    ("gemm", lambda: om.gemm(), "Gemm"),
    ("matmul", lambda: om.matmul(), "MatMul"),
    ("add", lambda: om.binary("Add"), "Add"),
    ("global_average_pool", lambda: om.global_average_pool(), "GlobalAveragePool"),
]


@pytest.mark.parametrize("builder,op", [c[1:] for c in INT16_UNITS], ids=[c[0] for c in INT16_UNITS])
@pytest.mark.parametrize("activation", ["int16", "uint16"])
def test_16bit_qdq_units_declined_with_reason(builder, op, activation):
    extra = {"ActivationSymmetric": True} if activation == "int16" else {}
    model = om.quantize(builder(), activation=activation, weight="int8", extra_options=extra)
    types = {t.data_type for t in onnx.load_from_string(model).graph.initializer}
    want = onnx.TensorProto.INT16 if activation == "int16" else onnx.TensorProto.UINT16
    assert want in types  # the quantizer really wrote 16-bit zero points
    om.session(model, "nacc", {"min_partition_macs": "0"})
    rep = last_report()
    assert claimed_ops(rep) == []
    reason = declined(rep).get(op, "")
    if activation == "int16":
        assert "is int16 (QInt16): int16 QDQ units are claimed only with the provider option " \
            "int16_activations=1" in reason, rep
        assert "no exact oracle" in reason
    else:
        assert "is uint16 (QUInt16) with zero point" in reason, rep
        assert "9-bit offset registers" in reason


def test_16bit_small_cnn_nothing_claimed():
    """A whole QInt16 model: every candidate stays on the host and the session
    still computes what the CPU EP computes."""
    model = om.quantize(om.small_cnn(), activation="int16", weight="int8",
                        extra_options={"ActivationSymmetric": True})
    feeds = om.input_feeds(model, seed=3)[0]
    got = om.session(model, "nacc", {"min_partition_macs": "0"}).run(None, feeds)
    rep = last_report()
    assert rep["partitions"] == []
    assert claimed_ops(rep) == []
    reasons = declined(rep)
    assert reasons and all("int16" in r for r in reasons.values()), reasons
    ref = om.session(model, ["CPUExecutionProvider"]).run(None, feeds)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)


def _int16_output_steps(model, options, seed):
    """(claimed op types, |nacc - cpu| in output quantization steps, elements) of
    a quantize_static QInt16 model whose one output is a DequantizeLinear."""
    m = onnx.load_from_string(model)
    out_dq = next(n for n in m.graph.node if n.output[0] == m.graph.output[0].name)
    assert out_dq.op_type == "DequantizeLinear"
    ys = float(onnx.numpy_helper.to_array(
        next(i for i in m.graph.initializer if i.name == out_dq.input[1])))
    feeds = om.input_feeds(model, seed=seed)[0]
    got = om.session(model, "nacc", options).run(None, feeds)[0]
    claimed = claimed_ops(last_report())
    ref = om.session(model, ["CPUExecutionProvider"]).run(None, feeds)[0]
    steps = np.rint(np.abs(got.astype(np.float64) - ref.astype(np.float64)) / ys).astype(np.int64)
    return claimed, steps


INT16_CONVS = [
    # id, float model, per-channel weights
    ("conv3x3", lambda: om.conv(c_in=8, c_out=16, hw=(10, 10), k=3), False),
    ("conv3x3_per_channel", lambda: om.conv(c_in=8, c_out=16, hw=(10, 10), k=3), True),
    ("conv1x1_stride2", lambda: om.conv(c_in=12, c_out=6, hw=(9, 9), k=1, stride=2,
                                        pads=(0, 0, 0, 0)), True),
    ("conv5x5_no_bias", lambda: om.conv(c_in=3, c_out=5, hw=(12, 12), k=5, pads=(2, 2, 2, 2),
                                        bias=False), False),
    ("depthwise3x3", lambda: om.conv(c_in=8, c_out=8, hw=(10, 10), k=3, group=8), True),
]


@pytest.mark.parametrize("builder,per_channel", [c[1:] for c in INT16_CONVS],
                         ids=[c[0] for c in INT16_CONVS])
def test_int16_conv_units_with_option_within_one_step(builder, per_channel):
    """int16_activations=1: the QInt16 Conv unit is claimed and runs the 16x8
    output stage; the CPU EP computes it in float, so the outputs may differ,
    by at most one quantization step (the count is printed)."""
    model = om.quantize(builder(), activation="int16", weight="int8", per_channel=per_channel,
                        extra_options={"ActivationSymmetric": True})
    total = differ = 0
    for seed in range(3):
        claimed, steps = _int16_output_steps(
            model, {"min_partition_macs": "0", "int16_activations": "1"}, seed)
        assert claimed == ["Conv"], claimed
        assert steps.max() <= 1, steps.max()
        total += steps.size
        differ += int((steps > 0).sum())
    print(f"int16 {builder().graph.node[0].op_type} per_channel={per_channel}: "
          f"{differ} of {total} elements differ by one step")
    # the option off: nothing int16 is claimed, and the output is the CPU EP's
    claimed, steps = _int16_output_steps(model, {"min_partition_macs": "0"}, 0)
    assert claimed == [] and steps.max() == 0


INT16_BINARY = [
    ("add", lambda: om.binary("Add", shape=(1, 8, 7, 9)), "Add"),
    ("add_odd_channels", lambda: om.binary("Add", shape=(1, 5, 6, 6)), "Add"),
    ("mul", lambda: om.binary("Mul", shape=(1, 16, 4, 5)), "Mul"),
    ("add_channel_vector", lambda: om.binary("Add", shape=(1, 8, 6, 6), shape_b=(1, 8, 1, 1)),
     "Add"),
    # Gemm / MatMul with constant weights: the 16x8 FULLY_CONNECTED (int64 bias,
    # TFLite's real-scale stage).
    ("gemm", lambda: om.gemm(m=3, k=64, n=10), "Gemm"),
    ("gemm_no_trans", lambda: om.gemm(m=2, k=40, n=17, trans_b=0), "Gemm"),
    ("matmul", lambda: om.matmul(m=4, k=32, n=16), "MatMul"),
    ("matmul_rank3", lambda: om.matmul(m=5, k=24, n=8, rank3=True), "MatMul"),
]


@pytest.mark.parametrize("builder,op", [c[1:] for c in INT16_BINARY],
                         ids=[c[0] for c in INT16_BINARY])
def test_int16_elementwise_units_with_option_within_one_step(builder, op):
    """int16_activations=1: QInt16 Add / Mul of two runtime maps run the 16x8
    element-wise arithmetic (ADD: left shift 15; MUL: the 32-bit MBQM of the
    product), Gemm / MatMul with constant weights the 16x8 FULLY_CONNECTED; the
    CPU EP computes them in float (round half to even), so ties may land one
    step apart: at most one step (the count is printed)."""
    model = om.quantize(builder(), activation="int16", weight="int8",
                        extra_options={"ActivationSymmetric": True})
    total = differ = 0
    for seed in range(3):
        claimed, steps = _int16_output_steps(
            model, {"min_partition_macs": "0", "int16_activations": "1"}, seed)
        assert claimed == [op], claimed
        assert steps.max() <= 1, steps.max()
        total += steps.size
        differ += int((steps > 0).sum())
    print(f"int16 {op}: {differ} of {total} elements differ by one step")
    claimed, steps = _int16_output_steps(model, {"min_partition_macs": "0"}, 0)
    assert claimed == [] and steps.max() == 0


def test_int16_option_small_cnn():
    """The QInt16 small CNN with int16_activations=1: the Conv, MaxPool,
    residual Add and the Flatten -> Gemm head are claimed, every other int16
    unit declined with its reason."""
    model = om.quantize(om.small_cnn(), activation="int16", weight="int8",
                        extra_options={"ActivationSymmetric": True})
    opts = {"min_partition_macs": "0", "int16_activations": "1"}
    om.session(model, "nacc", opts)
    rep = last_report()
    claimed = claimed_ops(rep)
    assert sorted(claimed) == ["Add", "Conv", "Conv", "Conv", "Flatten", "Gemm", "MaxPool"], claimed
    for op, reason in declined(rep).items():
        assert "int16" in reason or (op == "Flatten" and "would only reshape" in reason), (op, reason)
    feeds = om.input_feeds(model, seed=1)[0]
    got = om.session(model, "nacc", opts).run(None, feeds)[0]
    ref = om.session(model, ["CPUExecutionProvider"]).run(None, feeds)[0]
    print(f"int16 small_cnn: {rep['claimed_nodes']} nodes claimed ({claimed}), "
          f"{len(rep['partitions'])} partitions; logits max |diff| "
          f"{float(np.abs(got - ref).max()):.3g}")


def _conv_pool_flatten():
    from onnx import helper
    w = om.rng_weights((8, 4, 3, 3), 2)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["c"], ["p"], name="pool", kernel_shape=[2, 2],
                              strides=[2, 2]),
             helper.make_node("GlobalMaxPool", ["p"], ["g"], name="gmp"),
             helper.make_node("Flatten", ["g"], ["y"], name="flatten")]
    return om.float_model(nodes, {"x": (1, 4, 12, 12)}, {"y": (1, 8)}, {"w": w})


def test_int16_conv_maxpool_partition_within_one_step():
    """Conv -> MaxPool in one int16 partition (the pool shares its input's
    quantization: a copy, exact); the Conv's one-step differences pass through."""
    model = om.quantize(_conv_pool_flatten(), activation="int16", weight="int8",
                        extra_options={"ActivationSymmetric": True})
    m = onnx.load_from_string(model)
    # cut the graph at the MaxPool's QuantizeLinear: its DequantizeLinear is the output
    pool_q = next(n for n in m.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "p")
    pool_dq = next(n for n in m.graph.node if n.op_type == "DequantizeLinear"
                   and n.input[0] == pool_q.output[0])
    keep = []
    for n in m.graph.node:
        keep.append(n)
        if n is pool_dq:
            break
    del m.graph.node[:]
    m.graph.node.extend(keep)
    del m.graph.output[:]
    m.graph.output.append(onnx.helper.make_tensor_value_info(pool_dq.output[0],
                                                             onnx.TensorProto.FLOAT, None))
    model = m.SerializeToString()
    claimed, steps = _int16_output_steps(model, {"min_partition_macs": "0",
                                                 "int16_activations": "1"}, 0)
    assert claimed == ["Conv", "MaxPool"], claimed
    assert len(last_report()["partitions"]) == 1
    assert steps.max() <= 1
    print(f"int16 Conv+MaxPool: {int((steps > 0).sum())} of {steps.size} elements differ by one step")


def test_int16_activations_option_values():
    with pytest.raises(Exception, match="int16_activations='2': must be 0 or 1"):
        om.session(om.qdq_unit(om.conv()), "nacc", {"int16_activations": "2"})


def test_int16_ep_context_and_core_counts(tmp_path):
    """The int16 partitions round-trip through an EP-context model (int16
    bindings) and compute the same at 1 and 8 cores, 64 and 16 KB of SRAM."""
    model = om.quantize(om.small_cnn(), activation="int16", weight="int8",
                        extra_options={"ActivationSymmetric": True})
    feeds = om.input_feeds(model, seed=4)[0]
    opts = {"min_partition_macs": "0", "int16_activations": "1"}
    ref = om.session(model, "nacc", opts).run(None, feeds)[0]
    for cores, sram in ((8, 64), (1, 16), (8, 16)):
        got = om.session(model, "nacc", dict(opts, cores=cores, sram_kb=sram)).run(None, feeds)[0]
        assert len(last_report()["partitions"]) == 5  # host Relus / pool between them
        np.testing.assert_array_equal(got, ref)
    ctx = tmp_path / "int16_ctx.onnx"
    om.session(model, "nacc", opts, config={"ep.context_enable": "1",
                                            "ep.context_file_path": str(ctx),
                                            "ep.context_embed_mode": "1"})
    ops = [n.op_type for n in onnx.load(str(ctx)).graph.node]
    assert ops.count("EPContext") == 5 and "Conv" not in ops
    np.testing.assert_array_equal(om.session(str(ctx), "nacc", opts).run(None, feeds)[0], ref)

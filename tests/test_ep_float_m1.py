"""ONNX Runtime's unfused float32 depthwise Conv and one-row Gemm / MatMul
(MLAS's M = 1 kernels: products rounded, no fused multiply-add; ir.h
Attributes::ort_sum_order, docs/device_model.md §4).

Where ORT does not fuse a QDQ unit into its integer kernel (always at
ORT_ENABLE_BASIC), it runs DequantizeLinear -> float32 op -> QuantizeLinear:
- depthwise Conv, depth multiplier 1: the taps in groups of 4,
  g = ((p0 + p1) + p2) + p3, C = g + C, then + bias;
- depth multiplier > 1: MLAS's SGEMM, K blocks of fused multiply-adds, + bias;
- MatMul [1, K] x [K, N] and Gemm transB = 0: groups of 4 onto C = the bias;
- Gemm transB = 1: 8 lanes (k mod 8), a reduction tree by the output's place
  (the last N mod 4 outputs take other trees), + bias.

Float rounding flips an output rarely (~1e-5 per element with random data),
so the units here are built to see it: two large products that cancel
exactly (equal inputs, opposite weights) at the start and the end of K, the
small products between them added to a large partial sum, and an output
scale that resolves the small result. Which order the sum takes then decides
many outputs; the counts the int32 accumulator (QLinear's arithmetic, nacc's
only one before) gets wrong are in each unit's comment (measured on main at
253a45f through the EP, basic level, 1 thread, 1 core).

Two levels: the units (nacc._core.*_mac_fp32, reference and AVX-512 paths)
against the CPU EP, and the EP (single QDQ units at ORT_ENABLE_BASIC, threads
1 and 2, cores 1 and 4).
"""
import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import numpy_helper  # noqa: E402

import nacc._core as core  # noqa: E402
import onnx_models as om  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Specified .providers.:UserWarning")

f32 = np.float32
BIG = 32  # large products at each end of K
SYF = 1.0


# ---- the units' data ---------------------------------------------------------------

def _inits(model: bytes):
    m = onnx.load_from_string(model)
    return {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}


def _fc_model(op, k, n, trans_b, per_channel, seed):
    """A one-row MatMul / Gemm QDQ unit (om.qdq_unit) whose weights cancel:
    column 0 is +-127 (in weight steps), column K-1 its negation, the rest in
    [-3, 3]; the output scale resolves the sum of the small products."""
    rng = np.random.default_rng(seed)
    w = rng.integers(-1, 2, (n, k))
    s = rng.choice([-1, 1], (n, 1)) * 127
    head, tail = _big_columns(k)
    w[:, head], w[:, tail] = s, -s
    scale = (0.01 * rng.uniform(0.5, 1.5, (n, 1)) if per_channel else np.full((n, 1), 0.01))
    wf = (w * scale).astype(f32)
    model = om.gemm(m=1, k=k, n=n, trans_b=trans_b) if op == "Gemm" else om.matmul(m=1, k=k, n=n)
    name = "b"
    for init in model.graph.initializer:
        if init.name == name:
            init.CopyFrom(numpy_helper.from_array(wf if trans_b else wf.T.copy(), name))
    first = _inits(om.qdq_unit(model, per_channel=per_channel, seed=seed))
    sx, sw = float(first["a_s"]), float(np.max(first["b_s"]))
    for init in model.graph.initializer:  # a bias of a few steps of the small sum
        if init.name == "c":
            bias = rng.integers(-20, 21, n) * np.float32(sx) * first["b_s"].astype(f32).reshape(-1)
            init.CopyFrom(numpy_helper.from_array(bias.astype(f32), "c"))
    sy = f32(sx * sw * SYF * np.sqrt(k) / 127)
    return om.qdq_unit(model, per_channel=per_channel, seed=seed, fixed_output=(sy, 0))


def _big_columns(k):
    """BIG columns k = 0..3 mod 8 from the start and BIG columns k = 4..7 mod 8
    from the end: in 8 lanes (k mod 8) the large products of lanes 0-3 cancel
    those of lanes 4-7 only in the tree; in groups of 4 they cancel in C."""
    head = [i for i in range(k) if i % 8 < 4][:BIG]
    tail = [i for i in range(k - 1, -1, -1) if i % 8 >= 4][:BIG]
    return head, tail


def _fc_feeds(model: bytes, seed):
    i = _inits(model)
    k = onnx.load_from_string(model).graph.input[0].type.tensor_type.shape.dim[1].dim_value
    z = int(i["a_z"])
    x = np.clip(z + np.random.default_rng(seed).integers(-1, 2, (1, k)), -128, 127)
    head, tail = _big_columns(k)
    x[0, head] = x[0, tail] = 127
    return {"a_q": x.astype(np.int8)}


def _trans_b(model: bytes):
    node = [n for n in onnx.load_from_string(model).graph.node if n.op_type in ("Gemm", "MatMul")][0]
    return any(a.name == "transB" and a.i == 1 for a in node.attribute)


def _dw_model(c, dm, hw, k, stride, pads, per_channel, seed):
    """A depthwise QDQ unit whose diagonal taps cancel: weights +-127 on the
    first k // 2, -+127 on the last k // 2, 0 on a middle one, the rest in [-2, 2];
    the inputs (_dw_feeds) are equal along the diagonals i - j = 0 mod k, so
    every third (k = 3) output pixel's large products cancel exactly."""
    rng = np.random.default_rng(seed)
    o = c * dm
    w = rng.integers(-2, 3, (o, 1, k, k))
    for d in range(k):
        w[:, 0, d, d] = 0
    s = rng.choice([-1, 1], o) * 127
    for d in range(k // 2):
        w[:, 0, d, d], w[:, 0, k - 1 - d, k - 1 - d] = s, -s
    scale = (0.01 * rng.uniform(0.5, 1.5, (o, 1, 1, 1)) if per_channel else np.full((o, 1, 1, 1), 0.01))
    model = om.conv(c_in=c, c_out=o, hw=(hw, hw), k=k, stride=stride, pads=pads, group=c, seed=seed)
    for init in model.graph.initializer:
        if init.name == "w":
            init.CopyFrom(numpy_helper.from_array((w * scale).astype(f32), "w"))
        if init.name == "b":
            init.CopyFrom(numpy_helper.from_array((rng.integers(-5, 6, o) * 0.01 * 0.03).astype(f32), "b"))
    first = _inits(om.qdq_unit(model, per_channel=per_channel, seed=seed))
    sy = f32(float(first["x_s"]) * float(np.max(first["w_s"])) * 0.08)
    return om.qdq_unit(model, per_channel=per_channel, seed=seed, fixed_output=(sy, 0))


def _dw_feeds(model: bytes, seed):
    i = _inits(model)
    m = onnx.load_from_string(model)
    shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    k = i["w_q"].shape[2]
    z = int(i["x_z"])
    x = np.clip(z + np.random.default_rng(seed).integers(-1, 2, shape), -128, 127)
    ii, jj = np.meshgrid(np.arange(shape[2]), np.arange(shape[3]), indexing="ij")
    x[:, :, (ii - jj) % k == 0] = 127
    return {"x_q": x.astype(np.int8)}


# name, model, feeds; the int32 path's differing elements (of the output) in the comment
FC_UNITS = [
    # MatMul [1, 1024] x [1024, 1000]: groups of 4 from 0. int32 path: 489 of 1000 differ
    ("matmul_k1024_n1000", lambda: _fc_model("MatMul", 1024, 1000, 0, False, 1)),
    # MatMul, K = 1027 (remainder of 3: a pair, then one), per channel. int32 path: 103 of 301
    ("matmul_k1027_n301_pc", lambda: _fc_model("MatMul", 1027, 301, 0, True, 2)),
    # Gemm transB = 0 with C: groups of 4 onto C = bias. int32 path: 509 of 1000
    ("gemm_tb0_k1024_n1000", lambda: _fc_model("Gemm", 1024, 1000, 0, False, 3)),
    # Gemm transB = 1: 8 lanes, N = 1000 (all by 4), K = 1020. int32 path: 7 of 1000
    ("gemm_tb1_k1020_n1000", lambda: _fc_model("Gemm", 1020, 1000, 1, False, 4)),
    # Gemm transB = 1, N = 303 (last 3: a pair and a single tree), K = 1027, per channel.
    # int32 path: 34 of 303
    ("gemm_tb1_k1027_n303_pc", lambda: _fc_model("Gemm", 1027, 303, 1, True, 5)),
]
DW_UNITS = [
    # 3x3 stride 1, depth multiplier 1: groups of 4 + bias. int32 path: 1665 of 25088
    ("dw_c32_28_k3", lambda: _dw_model(32, 1, 28, 3, 1, (1, 1, 1, 1), False, 6)),
    # 5x5 stride 2, per channel. int32 path: 6 of 2400
    ("dw_c24_20_k5_s2_pc", lambda: _dw_model(24, 1, 20, 5, 2, (2, 2, 2, 2), True, 7)),
    # depth multiplier 2: MLAS's SGEMM, fused multiply-adds. int32 path: 1067 of 12800
    ("dw_c16_dm2_20_k3", lambda: _dw_model(16, 2, 20, 3, 1, (1, 1, 1, 1), False, 8)),
]


def _unit_fc(model: bytes, feeds):
    """The FC unit on the model's quantized tensors (the EP's arithmetic)."""
    i = _inits(model)
    tb = _trans_b(model)
    wq = i["b_q"] if tb else i["b_q"].T.copy()  # [N, K]
    n = wq.shape[0]
    sw = np.broadcast_to(i["b_s"].astype(f32), (n,))
    bias = (i["c_q"].astype(f32) * np.broadcast_to(i["c_s"].astype(f32), (n,))).astype(f32) \
        if "c_q" in i else np.zeros(n, f32)
    entries = np.stack([np.full(n, i["a_s"], f32), sw, bias, np.full(n, i["y_s"], f32)], 1)
    return core.fully_connected_mac_fp32(
        feeds["a_q"], np.ascontiguousarray(wq), np.ascontiguousarray(entries, f32),
        input_zero_point=int(i["a_z"]), output_zero_point=int(i["y_z"]),
        order="lanes8" if tb else "groups4")


def _unit_dw(model: bytes, feeds):
    i = _inits(model)
    node = [n for n in onnx.load_from_string(model).graph.node if n.op_type == "Conv"][0]
    at = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    wq = i["w_q"]  # [O, 1, KH, KW]
    o, _, kh, kw = wq.shape
    c = feeds["x_q"].shape[1]
    dm = o // c
    sw = np.broadcast_to(i["w_s"].astype(f32), (o,))
    bias = (i["b_q"].astype(f32) * np.broadcast_to(i["b_s"].astype(f32), (o,))).astype(f32)
    entries = np.stack([np.full(o, i["x_s"], f32), sw, bias, np.full(o, i["y_s"], f32)], 1)
    filt = np.ascontiguousarray(wq[:, 0].transpose(1, 2, 0)[None])  # [1, KH, KW, O]
    pads = at["pads"]
    # MLAS's K block for the depth multiplier > 1 SGEMM (one block for these small K)
    y = core.depthwise_conv2d_mac_fp32(
        np.ascontiguousarray(feeds["x_q"].transpose(0, 2, 3, 1)), filt,
        np.ascontiguousarray(entries, f32), depth_multiplier=dm, stride=tuple(at["strides"]),
        padding=(pads[0], pads[2], pads[1], pads[3]), input_zero_point=int(i["x_z"]),
        output_zero_point=int(i["y_z"]), order="groups4" if dm == 1 else "fma_blocks",
        kblock_log2=0 if dm == 1 else 7)
    return y.transpose(0, 3, 1, 2)


def _cpu(model, feeds, threads):
    so_level, _ = om.optimization_levels()["basic"]
    return om.session(model, ["CPUExecutionProvider"], opt_level=so_level,
                      intra_op_threads=threads).run(None, feeds)[0]


@pytest.fixture(params=["reference", "auto"])
def kernel_path(request):
    core.set_kernel_path(request.param)
    yield request.param
    core.set_kernel_path("auto")


@pytest.mark.parametrize("builder", [u[1] for u in FC_UNITS], ids=[u[0] for u in FC_UNITS])
def test_fc_unit_bit_exact_to_cpu_ep(builder, kernel_path):
    """fully_connected_s8_mac_fp32 (groups of 4 onto the bias, or 8 lanes and
    the tree by place) gives the CPU EP's bits at threads 1 and 2, on the
    reference and the fast path; the other order differs (the data sees it)."""
    model = builder()
    feeds = _fc_feeds(model, 3)
    ours = _unit_fc(model, feeds)
    for t in (1, 2):
        cpu = _cpu(model, feeds, t)
        np.testing.assert_array_equal(ours, cpu)


def test_fc_unit_orders_differ():
    """The data tells the orders apart: the wrong one misses elements."""
    for name, builder in FC_UNITS[:1] + FC_UNITS[3:4]:
        model = builder()
        feeds = _fc_feeds(model, 3)
        i = _inits(model)
        tb = _trans_b(model)
        cpu = _cpu(model, feeds, 1)
        wq = i["b_q"] if tb else i["b_q"].T.copy()
        n = wq.shape[0]
        bias = (i["c_q"].astype(f32) * i["c_s"]).astype(f32) if "c_q" in i else np.zeros(n, f32)
        entries = np.stack([np.full(n, i["a_s"], f32), np.broadcast_to(i["b_s"].astype(f32), (n,)),
                            bias, np.full(n, i["y_s"], f32)], 1)
        wrong = core.fully_connected_mac_fp32(
            feeds["a_q"], np.ascontiguousarray(wq), np.ascontiguousarray(entries, f32),
            input_zero_point=int(i["a_z"]), output_zero_point=int(i["y_z"]),
            order="groups4" if tb else "lanes8")
        assert np.count_nonzero(wrong != cpu) > 5, name


@pytest.mark.parametrize("builder", [u[1] for u in DW_UNITS], ids=[u[0] for u in DW_UNITS])
def test_depthwise_unit_bit_exact_to_cpu_ep(builder, kernel_path):
    """depthwise_conv2d_s8_mac_fp32 gives the CPU EP's bits (depth multiplier
    1: groups of 4; 2: fused multiply-add blocks), on both paths."""
    model = builder()
    feeds = _dw_feeds(model, 3)
    ours = _unit_dw(model, feeds)
    for t in (1, 2):
        np.testing.assert_array_equal(ours, _cpu(model, feeds, t))


def test_unit_checks():
    """Bad arguments raise, naming what is wrong."""
    x = np.zeros((1, 8), np.int8)
    w = np.zeros((4, 8), np.int8)
    e = np.tile(np.array([[0.1, 0.1, 0.0, 0.1]], f32), (4, 1))
    with pytest.raises(ValueError, match="order"):
        core.fully_connected_mac_fp32(x, w, e, order="tree")
    bad = e.copy()
    bad[2, 3] = 0.0
    with pytest.raises(Exception, match="channel 2 s_y"):
        core.fully_connected_mac_fp32(x, w, bad)
    bad = e.copy()
    bad[1, 2] = np.inf
    with pytest.raises(Exception, match="channel 1 bias"):
        core.fully_connected_mac_fp32(x, w, bad)
    with pytest.raises(Exception, match="first channel"):
        core.fully_connected_mac_fp32(x, w, e, order="lanes8", n0=-1)
    with pytest.raises(Exception, match="sum order"):
        core.depthwise_conv2d_mac_fp32(np.zeros((1, 4, 4, 4), np.int8), np.zeros((1, 3, 3, 4), np.int8),
                                       e, order="lanes8")
    with pytest.raises(Exception, match="filter"):
        core.depthwise_conv2d_mac_fp32(np.zeros((1, 4, 4, 3), np.int8), np.zeros((1, 3, 3, 4), np.int8),
                                       e)


# ---- through the EP ----------------------------------------------------------------

def _ep_diff(model, feeds, threads, cores):
    import nacc.onnxruntime as nort
    so_level, ep_level = om.optimization_levels()["basic"]
    cpu = _cpu(model, feeds, threads)
    npu = om.session(model, "nacc", {"ort_optimization_level": ep_level,
                                     "ort_intra_op_threads": threads, "cores": cores},
                     opt_level=so_level, intra_op_threads=threads).run(None, feeds)[0]
    rep = nort.partition_reports()[-1]
    assert rep["partitions"] and not rep["host_nodes"], rep["host_nodes"]
    return int(np.count_nonzero(npu != cpu)), cpu.size


@pytest.fixture(scope="module")
def ep():
    import nacc.onnxruntime as nort
    nort.register()


EP_UNITS = [(u[0], u[1], _fc_feeds) for u in FC_UNITS] + [(u[0], u[1], _dw_feeds) for u in DW_UNITS]


@pytest.mark.parametrize("builder,feeds", [(u[1], u[2]) for u in EP_UNITS], ids=[u[0] for u in EP_UNITS])
def test_ep_float_m1_bit_exact_to_cpu_ep(ep, builder, feeds):
    """The EP claims each unit and matches the CPU EP bit for bit at
    ORT_ENABLE_BASIC, intra-op threads 1 and 2, 1 and 4 cores (the int32 path
    misses the counts in the unit's comment)."""
    model = builder()
    f = feeds(model, 3)
    for t in (1, 2):
        for cores in ("1", "4"):
            d, size = _ep_diff(model, f, t, cores)
            print(f"threads {t}, cores {cores}: {d}/{size} elements differ from the CPU EP")
            assert d == 0

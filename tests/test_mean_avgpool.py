"""MEAN over any height x width and TFLite AVERAGE_POOL_2D of any window and
stride (issue 15, item 1), bit-exact against TFLite 2.21 BUILTIN_REF through
the delegate (docs/compiler.md "MEAN", "AVERAGE_POOL_2D"):

- MEAN up to 15x15: one depthwise window (unchanged); larger: the matrix unit
  with a ones operand (A = H*W ones, B = the input as [H*W, C]);
- AVERAGE_POOL_2D 2x2 stride 2: the pooling unit (unchanged); any other window
  up to 15: depthwise passes, one per region of output cells whose windows
  hold the same number of in-bounds cells, each dividing by that count
  exactly (edge rows with a padding above 5 and every row of a stride above 3
  are their own clipped windows); one window over the whole input: the ones
  matmul.

Random inputs and the boundary inputs (every cell -128, every cell 127, and an
alternating -128/127 pattern, which puts sums on rounding ties), at 1, 8 and 32
cores and at 16 KB of SRAM. The default run has a table of cases; the random
sweeps are @pytest.mark.slow.
"""
import numpy as np
import pytest

import nacc
from delegate_models import ModelBuilder, run
from tflite_builder import QTensor, make_interpreter

CONFIGS = [dict(cores=1), dict(cores=8), dict(cores=32), dict(cores=4, sram_kb=16)]
CONFIG_IDS = ["c1", "c8", "c32", "c4-16k"]


def pool_model(in_shape, kh, kw, sh, sw, padding, act="NONE", scale=0.05, zp=-3):
    m = ModelBuilder()
    x = m.input(in_shape, scale, zp)
    _, h, w, c = in_shape
    if padding == "SAME":
        oh, ow = -(-h // sh), -(-w // sw)
    else:
        oh, ow = (h - kh) // sh + 1, (w - kw) // sw + 1
    o = m.tensor(QTensor((1, oh, ow, c), "int8", scale=scale, zero_point=zp, name="pool"))
    m.g.add_op("AVERAGE_POOL_2D", [x], [o],
               dict(padding=padding, stride_w=sw, stride_h=sh, filter_width=kw, filter_height=kh,
                    fused_activation_function=act), version=2)
    return m.build([o])


def mean_model(in_shape, keep_dims, in_q=(0.05, -3), out_q=(0.04, -1)):
    m = ModelBuilder()
    x = m.input(in_shape, *in_q)
    ax = m.tensor(QTensor((2,), "int32", data=np.array([1, 2], dtype=np.int32)))
    c = in_shape[3]
    shape = (1, 1, 1, c) if keep_dims else (1, c)
    o = m.tensor(QTensor(shape, "int8", scale=out_q[0], zero_point=out_q[1], name="mean"))
    m.g.add_op("MEAN", [x, ax], [o], dict(keep_dims=keep_dims), version=2)
    return m.build([o])


def boundary_inputs(shape, seed=0):
    rng = np.random.default_rng(seed)
    alternating = np.where(np.indices(shape).sum(axis=0) % 2 == 0, -128, 127).astype(np.int8)
    return [rng.integers(-128, 128, shape, dtype=np.int8), np.full(shape, -128, np.int8),
            np.full(shape, 127, np.int8), alternating,
            rng.choice(np.array([-128, 127, -1, 0, 1], np.int8), shape)]


def assert_exact(model, in_shape, seed=0, expect_claimed=True, **options):
    """Delegate output == BUILTIN_REF on every input; returns the report."""
    d = nacc.load_delegate(log_level="off", min_partition_macs=0, **options)
    interp = make_interpreter(model, delegates=[d])
    interp.allocate_tensors()
    for x in boundary_inputs(in_shape, seed):
        interp.set_tensor(interp.get_input_details()[0]["index"], x)
        interp.invoke()
        got = interp.get_tensor(interp.get_output_details()[0]["index"])
        np.testing.assert_array_equal(got, run(model, [x])[0])
    report = d.report()
    if expect_claimed:
        assert all(n.claimed for n in report.nodes), [
            r.message for n in report.nodes for r in n.reasons]
    return report


def assert_model_one_partition_exact(model, cores):
    """A whole model through the delegate at `cores`: bit-exact vs BUILTIN_REF
    on two random inputs, every node claimed, one partition; the report."""
    d = nacc.load_delegate(log_level="off", cores=cores)
    interp = make_interpreter(model, delegates=[d])
    interp.allocate_tensors()
    rng = np.random.default_rng(cores)
    det = interp.get_input_details()[0]
    for _ in range(2):
        x = rng.integers(-128, 128, det["shape"], dtype=np.int8)
        interp.set_tensor(det["index"], x)
        interp.invoke()
        got = interp.get_tensor(interp.get_output_details()[0]["index"])
        np.testing.assert_array_equal(got, run(model, [x])[0])
    r = d.report()
    host = [(n.op, " ".join(x.message for x in n.reasons)) for n in r.nodes if not n.claimed]
    assert not host, host
    assert len({n.partition for n in r.nodes}) == 1
    return r


# (id, in_shape, kh, kw, sh, sw, padding, activation)
POOL_CASES = [
    ("inception-3x3-s1-same", (1, 9, 10, 20), 3, 3, 1, 1, "SAME", "NONE"),
    ("3x3-s2-same-relu6", (1, 11, 8, 70), 3, 3, 2, 2, "SAME", "RELU6"),
    ("2x2-s1-valid", (1, 7, 6, 5), 2, 2, 1, 1, "VALID", "NONE"),
    ("5x4-s3x2-same-relu", (1, 17, 13, 70), 5, 4, 3, 2, "SAME", "RELU"),
    ("11x11-s3-same-pad-5", (1, 20, 19, 3), 11, 11, 3, 3, "SAME", "NONE"),
    ("15x15-s3-valid", (1, 21, 30, 9), 15, 15, 3, 3, "VALID", "NONE"),
    ("1x1-s3-valid", (1, 8, 8, 4), 1, 1, 3, 3, "VALID", "NONE"),
    ("window-above-input-same", (1, 3, 2, 8), 7, 5, 1, 2, "SAME", "NONE"),
    ("2x2-s2-pool-unit", (1, 9, 8, 16), 2, 2, 2, 2, "SAME", "NONE"),
    ("global-7x7-depthwise", (1, 7, 7, 40), 7, 7, 1, 1, "VALID", "NONE"),
    ("ds-cnn-global-25x5", (1, 25, 5, 64), 25, 5, 1, 1, "VALID", "NONE"),
    ("global-32x32", (1, 32, 32, 12), 32, 32, 1, 1, "VALID", "RELU"),
    ("global-33x20-strided", (1, 33, 20, 3), 33, 20, 4, 4, "VALID", "NONE"),
    # SAME padding above 5: the edge rows / columns become clipped windows.
    ("15x15-s1-same-pad-7", (1, 20, 18, 6), 15, 15, 1, 1, "SAME", "NONE"),
    # Strides above 3: every output row / column is its own clipped window.
    ("4x4-s4-valid", (1, 16, 16, 9), 4, 4, 4, 4, "VALID", "NONE"),
    ("5x3-s5x4-same-relu6", (1, 23, 17, 33), 5, 3, 5, 4, "SAME", "RELU6"),
    ("2x2-s4-valid", (1, 13, 9, 4), 2, 2, 4, 4, "VALID", "NONE"),
]


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("case", POOL_CASES, ids=[c[0] for c in POOL_CASES])
def test_average_pool_bit_exact(case, config):
    _, shape, kh, kw, sh, sw, padding, act = case
    assert_exact(pool_model(shape, kh, kw, sh, sw, padding, act), shape, **config)


# (id, in_shape, keep_dims, input quantization, output quantization)
MEAN_CASES = [
    ("15x15-depthwise", (1, 15, 15, 8), True, (0.05, -3), (0.04, -1)),
    ("16x15", (1, 16, 15, 8), False, (0.05, -3), (0.04, -1)),
    ("vit-16x16", (1, 16, 16, 64), True, (0.02, 5), (0.01, 0)),
    ("efficientnet-28x28", (1, 28, 28, 40), True, (0.1, -128), (0.003, 127)),
    ("efficientnet-56x56", (1, 56, 56, 24), False, (0.05, 10), (0.05, 10)),
    ("80x80-fits-16k", (1, 80, 80, 3), True, (0.07, -20), (0.02, 3)),
    ("one-row-2000", (1, 1, 2000, 5), False, (0.05, -3), (0.5, -1)),
]


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("case", MEAN_CASES, ids=[c[0] for c in MEAN_CASES])
def test_mean_bit_exact(case, config):
    _, shape, keep, qi, qo = case
    assert_exact(mean_model(shape, keep, qi, qo), shape, **config)


@pytest.mark.parametrize("keep_dims", [True, False])
@pytest.mark.parametrize("config", CONFIGS[:3], ids=CONFIG_IDS[:3])
def test_mean_112x112_bit_exact(keep_dims, config):
    """EfficientNetB0's first squeeze-excite MEAN (112x112x32 at 224)."""
    assert_exact(mean_model((1, 112, 112, 32), keep_dims), (1, 112, 112, 32), **config)


def test_mean_112x112_declined_at_16kb_with_reason():
    """The ones matmul keeps all 12544 cells of a column resident: 25 KB, more
    than a 16 KB SRAM (int32 partial sums across passes are not implemented)."""
    shape = (1, 112, 112, 8)
    r = assert_exact(mean_model(shape, True), shape, expect_claimed=False, cores=4, sram_kb=16)
    (n,) = r.nodes
    assert not n.claimed
    assert "smallest tile needs" in " ".join(x.message for x in n.reasons)


@pytest.mark.parametrize("case,shape,kh,kw,sh,sw,why", [
    ("stride-4-289-regions", (1, 68, 68, 4), 3, 3, 4, 4, "needs 289 region passes"),
    ("16x16-not-global", (1, 20, 20, 4), 16, 16, 1, 1, "window 16x16, stride 1x1"),
    ("global-2896-cells", (1, 181, 16, 2), 181, 16, 1, 1, "over 2896 cells"),
])
def test_average_pool_declined_with_reason(case, shape, kh, kw, sh, sw, why):
    r = assert_exact(pool_model(shape, kh, kw, sh, sw, "VALID"), shape, expect_claimed=False)
    (n,) = r.nodes
    assert not n.claimed
    assert why in " ".join(x.message for x in n.reasons)


def test_region_passes_in_the_program():
    """A 3x3 stride-1 SAME pool on 9x10 runs as 9 depthwise passes (corners,
    edges, interior: counts 4, 6, 9) under one op record, no pooling-unit command."""
    from nacc import _core
    import ir_builders as b
    g, _ = b.pool("AVERAGE_POOL_2D", in_hw=(9, 10), c=20, kernel=(3, 3), stride=(1, 1),
                  padding="SAME")
    prog = _core.compile(g, cores=1)
    info = _core.program_info(prog)
    (rec,) = info["ops"]
    assert rec["lowering"] == "avg_regions"
    ops = [c["opcode"] for c in _core.decode_stream(info["commands"])]
    # at least one command per region (the tiler may cut a region further)
    assert ops.count("NPU_OP_DEPTHWISE") >= 9 and "NPU_OP_POOL" not in ops


# ---- random sweeps (slow) ------------------------------------------------------------------

def _random_pool(rng):
    if rng.random() < 0.2:  # one window over the whole input, 16..48 per axis
        h, w = (int(v) for v in rng.integers(1, 49, 2))
        if h * w > 2895:
            w = max(1, 2895 // h)
        return (1, h, w, int(rng.integers(1, 70))), h, w, int(rng.integers(1, 5)), \
            int(rng.integers(1, 5)), "VALID", "NONE"
    kh, kw = (int(v) for v in rng.integers(1, 16, 2))
    sh, sw = (int(v) for v in rng.integers(1, 5, 2))
    padding = "SAME" if rng.random() < 0.6 else "VALID"
    h = int(rng.integers(kh if padding == "VALID" else 1, 33))
    w = int(rng.integers(kw if padding == "VALID" else 1, 33))
    act = str(rng.choice(["NONE", "RELU", "RELU6"]))
    return (1, h, w, int(rng.integers(1, 90))), kh, kw, sh, sw, padding, act


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(60))
def test_average_pool_random_sweep(seed):
    rng = np.random.default_rng(1500 + seed)
    shape, kh, kw, sh, sw, padding, act = _random_pool(rng)
    config = CONFIGS[seed % len(CONFIGS)]
    model = pool_model(shape, kh, kw, sh, sw, padding, act)
    # Stride 4 on a large output can need more than 256 region passes, which
    # stays on the host; exact either way.
    r = assert_exact(model, shape, seed, expect_claimed=False, **config)
    (n,) = r.nodes
    reasons = " ".join(x.message for x in n.reasons)
    assert n.claimed or "region passes" in reasons, reasons


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(30))
def test_mean_random_sweep(seed):
    rng = np.random.default_rng(2500 + seed)
    h, w = int(rng.integers(1, 113)), int(rng.integers(1, 113))
    shape = (1, h, w, int(rng.integers(1, 70)))
    qi = (float(rng.uniform(0.005, 0.2)), int(rng.integers(-128, 128)))
    qo = (float(rng.uniform(0.002, 0.2)), int(rng.integers(-128, 128)))
    config = CONFIGS[seed % 3]
    assert_exact(mean_model(shape, bool(rng.random() < 0.5), qi, qo), shape, seed, **config)


# ---- whole models ------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["squeeze_excite_64", "inception_v3_block_35"])
@pytest.mark.parametrize("cores", [1, 8, 32])
def test_block_models_one_partition_bit_exact(name, cores):
    """EfficientNet-style squeeze-excite blocks (MEANs over 32x32 and 16x16) and
    an InceptionV3 block (3x3 stride-1 SAME average pool): every node claimed,
    in one partition, bit-exact."""
    keras_models = pytest.importorskip("keras_models")
    r = assert_model_one_partition_exact(keras_models.converted(name), cores)
    kinds = {n.op for n in r.nodes}
    assert ("MEAN" in kinds) if name.startswith("squeeze") else ("AVERAGE_POOL_2D" in kinds)


# ---- the execution plan ------------------------------------------------------------------

@pytest.mark.parametrize("build", [
    lambda b: b.mean(in_shape=(1, 40, 33, 70)),                                    # ones matmul
    lambda b: b.pool("AVERAGE_POOL_2D", in_hw=(9, 10), c=70, kernel=(3, 3), stride=(1, 1),
                     padding="SAME"),                                              # 9 regions
    lambda b: b.pool("AVERAGE_POOL_2D", in_hw=(20, 18), c=6, kernel=(15, 15), stride=(1, 1),
                     padding="SAME"),                                              # pad 7
    lambda b: b.pool("AVERAGE_POOL_2D", in_hw=(25, 5), c=64, kernel=(25, 5), stride=(1, 1)),
], ids=["mean-40x33", "pool-3x3-same", "pool-15x15-same", "pool-global-25x5"])
@pytest.mark.parametrize("cores,kb", [(1, 64), (8, 16), (32, 64)])
def test_replay_equals_step(build, cores, kb):
    """The decoded plan replays these Programs with the interpreter's bits and
    counters (DESIGN "decoded once, replayed fast")."""
    import ir_builders as b
    from nacc import _core
    from test_replay import assert_equivalent
    g, _ = build(b)
    assert_equivalent(_core.compile(g, cores=cores, sram_kb=kb), cores, kb)


# ---- the division ----------------------------------------------------------------------

def _tflite_average(s, n):
    """reference_integer_ops::AveragePool's rounding: (sum +- n/2) / n, C++ truncation."""
    s = np.asarray(s, dtype=np.int64)
    q = np.where(s > 0, (s + n // 2), (s - n // 2))
    return np.sign(q) * (np.abs(q) // n)


def _mbqm(x, m, shift):
    """MultiplyByQuantizedMultiplier on int64 arrays (shift <= 1 here)."""
    x = np.asarray(x, dtype=np.int64) << max(shift, 0)
    ab = x * m
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    hi = (ab + nudge)
    hi = np.sign(hi) * (np.abs(hi) >> 31)  # C++ division truncates toward zero
    assert shift >= 0
    return hi


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6, 8, 9, 16, 25, 49, 125, 225, 1024, 2047, 2895])
def test_average_pool_division_exact(n):
    """(m, s) gives TFLite's rounded average for every sum of n int8 values
    (numpy here, independently of the C++ self-check)."""
    from nacc import _core
    m, shift = _core.tflite_average_pool_division(n)
    sums = np.arange(-128 * n, 127 * n + 1)
    np.testing.assert_array_equal(_mbqm(sums, m, shift), _tflite_average(sums, n))


def test_average_pool_division_range():
    from nacc import _core
    for n in (0, 2896):
        with pytest.raises(ValueError, match="out of range"):
            _core.tflite_average_pool_division(n)


@pytest.mark.slow
def test_average_pool_division_every_count():
    """Every count the region passes and the ones matmul can divide by."""
    from nacc import _core
    for n in range(1, 2896):
        _core.tflite_average_pool_division(n)  # throws if any sum differs

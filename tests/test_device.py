"""The simulated NACC device (csrc/device, docs/device_model.md): every kernel opcode on one
tile and on many tiles (height / width splits with halos, kernel splits, padding at negative
tile origins, asymmetric padding through the implied right/bottom pads), multi-core modes 1
and 2 on 1..32 cores, counters against independent counts, faults with their interrupt bits,
DMA-queue commands, and two batch handlers stepped command by command.

Every output is compared, bit for bit, with the unit called directly on the whole tensor."""
import numpy as np
import pytest

import nacc
from nacc import _core
import nacc_streams as ns
from nacc_streams import Layer, Tile, grid, ra

RNG_SEED = 20240607


def rng_for(*key):
    return np.random.default_rng([RNG_SEED, *[hash(str(k)) % (1 << 31) for k in key]])


def i8(rng, shape):
    return rng.integers(-128, 128, shape, dtype=np.int8)


def quant(rng, n, lo_shift=-10, hi_shift=-6):
    mult = rng.integers(1 << 30, (1 << 31) - 1, n).astype(np.int32)
    shift = rng.integers(lo_shift, hi_shift, n).astype(np.int32)
    return mult, shift


# ---------------------------------------------------------------------------
# Layer factories (random tensors, realistic register values).

def conv(rng, H, W, C, OC, k=(3, 3), stride=(1, 1), pad=(1, 1, 1, 1), act="NONE", bias=True):
    mult, shift = quant(rng, OC)
    L = Layer("conv", i8(rng, (1, H, W, C)), i8(rng, (OC, *k, C)),
              bias=rng.integers(-5000, 5000, OC).astype(np.int32) if bias else None,
              mult=mult, shift=shift, stride=stride, pad=pad, in_zp=int(rng.integers(-20, 20)),
              out_zp=int(rng.integers(-10, 10)), act_mode=act)
    if act == "RELU":
        L.act_min = L.out_zp
    if act == "LUT":
        L.lut = i8(rng, 256)
    return L


def depthwise(rng, H, W, C, m=1, k=(3, 3), stride=(1, 1), pad=(1, 1, 1, 1)):
    OC = C * m
    mult, shift = quant(rng, OC, -8, -4)
    return Layer("depthwise", i8(rng, (1, H, W, C)), i8(rng, (1, *k, OC)),
                 bias=rng.integers(-3000, 3000, OC).astype(np.int32), mult=mult, shift=shift,
                 stride=stride, pad=pad, in_zp=int(rng.integers(-20, 20)),
                 out_zp=int(rng.integers(-10, 10)), depth_multiplier=m)


def pool(rng, kind, H, W, C, k=(2, 2), stride=(2, 2), pad=(0, 0, 0, 0)):
    return Layer(kind, i8(rng, (1, H, W, C)), kernel=k, stride=stride, pad=pad,
                 act_min=-100, act_max=120)


def fc(rng, M, K, N, real_scale=False):
    mult, shift = quant(rng, N, -12, -8)
    L = Layer("fc", i8(rng, (1, M, 1, K)), i8(rng, (N, K)),
              bias=rng.integers(-5000, 5000, N).astype(np.int32), mult=mult, shift=shift,
              in_zp=int(rng.integers(-20, 20)), out_zp=int(rng.integers(-10, 10)))
    if real_scale:
        L.real_scale = rng.uniform(1e-4, 3e-3, N)
    return L


def matmul(rng, M, K, N):
    mult, shift = quant(rng, N, -14, -10)
    return Layer("matmul", i8(rng, (1, M, 1, K)), i8(rng, (K, N)), mult=mult, shift=shift,
                 in_zp=int(rng.integers(-20, 20)), out_zp=int(rng.integers(-10, 10)),
                 b_zp=int(rng.integers(-20, 20)))


def eltwise(rng, op, H, W, C, broadcast=False):
    params = {"add": _core.tflite_add_params, "sub": _core.tflite_sub_params,
              "mul": _core.tflite_mul_params}[op](0.05, 3, 0.07, -2, 0.1, 5, "NONE")
    x2 = i8(rng, (1, 1, 1, C) if broadcast else (1, H, W, C))
    ew = {k: v for k, v in params.items()
          if k not in ("output_multiplier", "output_shift", "output_zero_point", "act_min", "act_max")}
    return Layer(op, i8(rng, (1, H, W, C)), x2=x2, ew=ew,
                 mult=np.array([params["output_multiplier"]], np.int32),
                 shift=np.array([params["output_shift"]], np.int32),
                 out_zp=params["output_zero_point"])


def activation(rng, mode, H, W, C):
    L = Layer("act", i8(rng, (1, H, W, C)), act_mode=mode, in_zp=4, out_zp=-3)
    if mode == "LUT":
        L.lut = i8(rng, 256)
        L.act_min, L.act_max = -120, 110
    else:
        L.mult, L.shift = np.array([1518500250], np.int32), np.array([0], np.int32)
        L.act_max = 100
    return L


def run(L, tiles, cores=1, sram_kb=64, threads=1, **kw):
    p, ins = ns.single_layer(L, tiles, cores=cores, sram_kb=sram_kb, **kw)
    rt = _core.Runtime(cores=cores, sram_kb=sram_kb, threads=threads)
    outs, stats = rt.run(p, ins)
    return outs[0], stats


def assert_exact(L, tiles, **kw):
    out, stats = run(L, tiles, **kw)
    ref = L.reference()
    assert out.shape == ref.shape
    np.testing.assert_array_equal(out, ref)
    return stats


# ---------------------------------------------------------------------------
# Every kernel opcode, one tile and many tiles.

LAYERS = {
    "conv3x3": lambda r: conv(r, 13, 17, 7, 10),
    "conv3x3_relu_lut": lambda r: conv(r, 9, 10, 70, 5, act="LUT"),
    "conv5x3_s2_nobias": lambda r: conv(r, 15, 14, 3, 9, k=(5, 3), stride=(2, 2), pad=(2, 2, 1, 1), bias=False),
    "conv1x1_relu": lambda r: conv(r, 8, 8, 130, 17, k=(1, 1), pad=(0, 0, 0, 0), act="RELU"),
    "conv_same_s2_asym": lambda r: conv(r, 12, 10, 4, 6, stride=(2, 2), pad=(0, 1, 0, 1)),
    "conv_pad5": lambda r: conv(r, 10, 9, 3, 4, k=(7, 7), pad=(5, 4, 5, 5)),
    "conv_wide": lambda r: conv(r, 5, 6, 20, 70, act="RELU"),
    "depthwise": lambda r: depthwise(r, 11, 13, 24),
    "depthwise_m2_s2": lambda r: depthwise(r, 12, 12, 8, m=2, stride=(2, 2), pad=(0, 1, 0, 1)),
    "depthwise_5x5_m4": lambda r: depthwise(r, 9, 9, 3, m=4, k=(5, 5), pad=(2, 2, 2, 2)),
    "maxpool3x3": lambda r: pool(r, "maxpool", 13, 11, 9, k=(3, 3), stride=(2, 2), pad=(1, 1, 1, 1)),
    "maxpool_2x2": lambda r: pool(r, "maxpool", 8, 10, 33),
    "avgpool": lambda r: pool(r, "avgpool", 12, 10, 19),
    "fc": lambda r: fc(r, 6, 200, 33),
    "fc_real_scale": lambda r: fc(r, 4, 70, 12, real_scale=True),
    "matmul": lambda r: matmul(r, 9, 75, 21),
    "add": lambda r: eltwise(r, "add", 7, 9, 12),
    "sub_broadcast": lambda r: eltwise(r, "sub", 6, 5, 10, broadcast=True),
    "mul": lambda r: eltwise(r, "mul", 5, 8, 16),
    "act_relu": lambda r: activation(r, "RELU", 7, 6, 11),
    "act_lut": lambda r: activation(r, "LUT", 9, 4, 20),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_kernel_one_tile(name):
    L = LAYERS[name](rng_for(name))
    OH, OW = L.out_hw
    stats = assert_exact(L, [Tile(0, OH, 0, OW)])
    assert stats["kernels"] == 1 and stats["dma_write_bytes"] == OH * OW * L.out_c


def tiles_for(L, th, tw, channel_groups=1, **kw):
    OH, OW = L.out_hw
    tiles = grid(OH, OW, th, tw, **kw)
    if channel_groups == 1:
        return tiles
    step = -(-L.out_c // channel_groups)
    if L.op == "depthwise":
        step = -(-L.x.shape[3] // channel_groups) * L.depth_multiplier
    out = []
    for t in tiles:
        for c0 in range(0, L.out_c, step):
            out.append(Tile(t.y0, t.h, t.x0, t.w, c0=c0, nc=min(step, L.out_c - c0), **kw))
    return out


@pytest.mark.parametrize("name,th,tw,groups", [
    ("conv3x3", 3, 17, 1),          # height split: halo rows, pad at the top/bottom tiles only
    ("conv3x3", 13, 4, 1),          # width split with halos, negative first column
    ("conv3x3", 5, 6, 3),           # height x width x kernel split
    ("conv3x3_relu_lut", 2, 3, 2),
    ("conv5x3_s2_nobias", 2, 3, 2),
    ("conv1x1_relu", 3, 3, 4),
    ("conv_same_s2_asym", 2, 2, 1),  # asymmetric SAME padding: implied bottom/right pad 1
    ("conv_pad5", 1, 2, 1),          # tiles whose input starts 5 rows/columns in the padding
    ("depthwise", 4, 5, 3),
    ("depthwise_m2_s2", 2, 4, 2),
    ("depthwise_5x5_m4", 3, 2, 1),
    ("maxpool3x3", 2, 2, 3),
    ("maxpool_2x2", 3, 2, 2),
    ("avgpool", 2, 3, 2),
    ("fc", 2, 1, 3),                 # rows of M, channel groups of N
    ("fc_real_scale", 1, 1, 2),
    ("matmul", 4, 1, 3),
    ("add", 2, 4, 2),
    ("sub_broadcast", 4, 2, 2),
    ("mul", 3, 3, 1),
    ("act_relu", 2, 5, 2),
    ("act_lut", 4, 1, 3),
])
def test_kernel_tiled(name, th, tw, groups):
    L = LAYERS[name](rng_for(name))
    tiles = tiles_for(L, th, tw, groups)
    assert len(tiles) > 1
    assert_exact(L, tiles)


def test_weights_reused_across_tiles_k_upd0():
    """K_UPD = 0 reuses the resident kernel across spatial tiles: same bits, weights read once."""
    L = conv(rng_for("kupd"), 12, 12, 16, 8)
    tiles = grid(12, 12, 4, 12)
    for t in tiles[1:]:
        t.k_upd = 0
    s_reuse = assert_exact(L, tiles)
    s_reload = assert_exact(L, grid(12, 12, 4, 12))
    block = len(ns.weight_block(L.weights))
    assert s_reload["dma_read_bytes"] - s_reuse["dma_read_bytes"] == 2 * (block + 3 * 4 * 8)


def test_ifm_reused_across_kernel_groups_fm_upd0():
    """FM_UPD = 0 reuses the IFM tile for the next channel group (kernel split)."""
    L = conv(rng_for("fmupd"), 8, 8, 24, 12)
    tiles = tiles_for(L, 8, 8, 3)
    for t in tiles[1:]:
        t.fm_upd = 0
    s = assert_exact(L, tiles)
    s_full = assert_exact(L, tiles_for(L, 8, 8, 3))
    assert s_full["dma_read_bytes"] - s["dma_read_bytes"] == 2 * 8 * 8 * 24


def test_pitched_input_and_concat_output():
    """A channel slice of a wider input (pixel pitch > channels) written at a channel offset
    of a wider output (concatenation)."""
    rng = rng_for("pitch")
    L = conv(rng, 6, 7, 5, 4)
    wide_in = i8(rng, (1, 6, 7, 9))
    wide_in[..., 2:7] = L.x
    sb = ns.StreamBuilder()
    sb.layer(L, grid(6, 7, 3, 4), in_addr=ra(ns.INPUT, 2), out_addr=ra(ns.OUTPUT, 3),
             in_pitch=(9, 7 * 9), out_pitch=(10, 7 * 10))
    p = ns.program(sb, [wide_in], [(1, 6, 7, 10)])
    out = _core.Runtime().run(p, [wide_in])[0][0]
    np.testing.assert_array_equal(out[..., 3:7], L.reference())
    assert not out[..., :3].any() and not out[..., 7:].any()


# ---------------------------------------------------------------------------
# Multi-core (docs/device_model.md §5).

# Layers with at least 32 output rows, so that every core count gets rows.
TALL = {
    "conv": lambda r: conv(r, 40, 6, 5, 7, stride=(1, 2), pad=(1, 1, 0, 1)),
    "conv_s2": lambda r: conv(r, 70, 5, 3, 4, stride=(2, 1), pad=(1, 1, 1, 1)),
    "depthwise": lambda r: depthwise(r, 35, 4, 9, m=2),
    "maxpool": lambda r: pool(r, "maxpool", 66, 5, 6, k=(3, 3), stride=(2, 1), pad=(1, 1, 1, 1)),
    "avgpool": lambda r: pool(r, "avgpool", 64, 4, 5),
    "add": lambda r: eltwise(r, "add", 33, 3, 4),
    "mul_broadcast": lambda r: eltwise(r, "mul", 32, 2, 5, broadcast=True),
    "act_lut": lambda r: activation(r, "LUT", 34, 2, 3),
    "matmul": lambda r: matmul(r, 40, 70, 6),
    "fc": lambda r: fc(r, 33, 20, 5),
}


@pytest.mark.parametrize("cores", [1, 2, 4, 8, 16, 32])
@pytest.mark.parametrize("name", sorted(TALL))
def test_mode2_split_height(name, cores):
    L = TALL[name](rng_for("tall", name))
    OH, OW = L.out_hw
    assert OH >= cores
    assert_exact(L, [Tile(0, OH, 0, OW, mode=2, cores=cores)], cores=cores)


@pytest.mark.parametrize("cores", [1, 2, 4, 8, 16, 32])
@pytest.mark.parametrize("name", ["conv_wide", "fc"])
def test_mode1_split_kernels(name, cores):
    L = LAYERS[name](rng_for(name))
    OH, OW = L.out_hw
    assert_exact(L, [Tile(0, OH, 0, OW, mode=1, cores=cores)], cores=cores)


def test_modes_with_tiles_and_threads_identical():
    """Mode 2 tiles across a width split on 8 cores: exact, and identical with 1 or 2 host
    threads (the pool forced on for every command)."""
    L = conv(rng_for("threads"), 24, 20, 16, 8)
    tiles = grid(24, 20, 16, 10, mode=2, cores=8)
    p, ins = ns.single_layer(L, tiles, cores=8)
    results = []
    for threads in (1, 2):
        rt = _core.Runtime(cores=8, threads=threads)
        rt.set_parallel_min_macs(0)
        out, st = rt.run(p, ins)
        results.append((out[0], {k: v for k, v in st.items() if k != "handler"}))
    np.testing.assert_array_equal(results[0][0], L.reference())
    np.testing.assert_array_equal(results[0][0], results[1][0])
    assert results[0][1] == results[1][1]


def test_depthwise_mode1_reads_each_cores_channels():
    """Depthwise in mode 1 (docs/device_model.md §5, project decision), from a
    hand-written stream: core i computes channels [i x EU_BIAS_START_OFFSET, ...)
    from its own input channels (depth multiplier 2: half as many), weight
    block and quantization entries, and equals the reference. The cores' IFM
    reads are unicast, so the external bytes are the input once plus the
    kernel data (nothing is delivered twice). An EU_BIAS_START_OFFSET that
    is not a multiple of the depth multiplier splits an input channel's
    outputs across cores: the command faults."""
    L = depthwise(rng_for("dwmode1"), 6, 7, 12, m=2)
    stats = assert_exact(L, [Tile(0, 6, 0, 7, mode=1, cores=4)], cores=4)
    # unicast: the external reads are the cores' own (a broadcast IFM would
    # count once for 4 cores); one core alone reads the input once plus more
    # kernel data than any core of the split
    assert stats["dma_read_bytes"] == sum(c["dma_read_bytes"] for c in stats["cores"])
    one = assert_exact(L, [Tile(0, 6, 0, 7)])
    assert max(c["dma_read_bytes"] for c in stats["cores"]) < one["dma_read_bytes"] / 2
    assert [c["mac_cycles"] for c in stats["cores"]] == [6 * 7 * 9] * 4
    L3 = depthwise(rng_for("dwmode1"), 6, 7, 9, m=2)  # 18 outputs: 4, 4, 4 and 6
    assert_exact(L3, [Tile(0, 6, 0, 7, mode=1, cores=4)], cores=4)
    L5 = depthwise(rng_for("dwmode1"), 6, 7, 10, m=2)  # 20 over 4 cores: 5 per core
    with pytest.raises(nacc.DeviceFault, match="multiple of the depth multiplier 2"):
        run(L5, [Tile(0, 6, 0, 7, mode=1, cores=4)], cores=4)


def test_mode_errors():
    L = conv(rng_for("modeerr"), 8, 8, 4, 4)
    p, ins = ns.single_layer(L, [Tile(0, 8, 0, 8, mode=2, cores=4)], cores=2)
    with pytest.raises(nacc.DeviceFault, match="asks for 4 cores; the device has 2"):
        _core.Runtime(cores=2).run(p, ins)
    P = pool(rng_for("modeerr"), "maxpool", 8, 8, 4)
    with pytest.raises(nacc.DeviceFault, match="SPLIT_KERNEL .mode 1. is for convolution"):
        run(P, [Tile(0, 4, 0, 4, mode=1, cores=2)], cores=2)
    with pytest.raises(nacc.DeviceFault, match="BROADCAST_OVER_EN"):
        run(L, [Tile(0, 8, 0, 8, mode=2, cores=4)], cores=4, patch={"NACC_BROADCAST_CTRL1": 1})


# ---------------------------------------------------------------------------
# Counters (docs/performance_model.md).

def valid_taps(out, stride, k, pad, size):
    return sum(max(0, min(o * stride - pad + k, size) - max(o * stride - pad, 0)) for o in range(out))


def independent_macs(L):
    H, W, C = L.in_hwc
    OH, OW = L.out_hw
    if L.op in ("fc", "matmul"):
        return H * C * L.out_c
    if L.op not in ("conv", "depthwise"):
        return 0
    kh, kw = L.ksize
    taps = valid_taps(OH, L.stride[0], kh, L.pad[0], H) * valid_taps(OW, L.stride[1], kw, L.pad[2], W)
    return taps * L.out_c * (C if L.op == "conv" else 1)


@pytest.mark.parametrize("name", ["conv3x3", "conv5x3_s2_nobias", "conv_pad5", "depthwise_m2_s2",
                                  "fc", "matmul", "maxpool3x3", "add"])
def test_mac_count_independent(name):
    L = LAYERS[name](rng_for(name))
    for tiles in ([Tile(0, *L.out_hw[:1], 0, L.out_hw[1])], tiles_for(L, 2, 3, 2)):
        stats = assert_exact(L, tiles)
        assert stats["macs"] == independent_macs(L)


def test_dma_bytes_equal_tile_bytes():
    """Read bytes = valid input tile bytes + weight blocks + bias/mult/shift per command."""
    L = conv(rng_for("dmabytes"), 10, 11, 6, 5, stride=(2, 2), pad=(1, 1, 1, 1))
    tiles = grid(*L.out_hw, 2, 3)
    stats = assert_exact(L, tiles)
    H, W, C = L.in_hwc
    block = len(ns.weight_block(L.weights))
    expect = 0
    for t in tiles:
        y0, y1 = t.y0 * 2 - 1, (t.y0 + t.h - 1) * 2 + 2
        x0, x1 = t.x0 * 2 - 1, (t.x0 + t.w - 1) * 2 + 2
        rows = min(y1, H) - max(y0, 0)
        cols = min(x1, W) - max(x0, 0)
        expect += rows * cols * C + block + 3 * 4 * 5
    assert stats["dma_read_bytes"] == expect
    assert stats["dma_write_bytes"] == L.out_hw[0] * L.out_hw[1] * 5
    assert sum(c["dma_read_bytes"] for c in stats["cores"]) == expect


def test_smaller_tiles_more_dma_and_sram():
    L = conv(rng_for("sram"), 32, 32, 16, 16)
    big = assert_exact(L, [Tile(0, 32, 0, 32)])
    small = assert_exact(L, grid(32, 32, 8, 8), sram_kb=16)
    assert small["dma_read_bytes"] > big["dma_read_bytes"]
    assert small["sram_high_water"] < big["sram_high_water"] <= 65536
    with pytest.raises(nacc.DeviceFault, match="SRAM overflow: IFM tile needs 16384 bytes"):
        run(L, [Tile(0, 32, 0, 32)], sram_kb=16)


def test_more_cores_fewer_cycles():
    L = conv(rng_for("cycles"), 32, 32, 64, 32)
    cycles = []
    big = (0, 256, 512, 768)  # 64 KB areas in a 256 KB SRAM
    for cores in (1, 2, 4, 8):
        s = assert_exact(L, [Tile(0, 32, 0, 32, mode=2, cores=cores, areas=big)], cores=cores,
                         sram_kb=256)
        cycles.append(s["cycles"])
        assert s["mac_cycles"] == 32 * 32 * 32 * 9  # every tap of every core, summed
        assert max(c["mac_cycles"] for c in s["cores"]) == 32 * 32 * 32 * 9 // cores
    assert cycles == sorted(cycles, reverse=True) and len(set(cycles)) == 4


def test_lut_activation_cycles_and_timeline():
    L = LAYERS["act_lut"](rng_for("act_lut"))
    s = assert_exact(L, [Tile(0, 9, 0, 4)])
    assert s["act_cycles"] == 9 * 4 * 20
    (rec,) = s["timeline"]
    assert rec["opcode"] == "NPU_OP_ACTIVATION" and rec["end"] <= s["cycles"]
    sp = rec["cores"][0]
    assert sp["read_start"] <= sp["read_end"] <= sp["compute_start"] < sp["compute_end"] <= sp["write_start"] < sp["write_end"]


# ---------------------------------------------------------------------------
# Register-level device: faults, interrupts, DMA queue, PMU, two handlers.

def device_run(p, ins, handler=0, cores=1, **kw):
    dev = _core.Device(cores=cores, **kw)
    outs, scratch, _ = ns.bind_program(dev, p, handler, ins)
    return dev, outs, scratch


INT = {"BUS_WR_ERR_INTR": 1, "BUS_RD_ERR_INTR": 2, "FULL_TRANS_DONE_INTR": 4}


def test_run_raises_done_interrupt_and_pmu():
    L = conv(rng_for("pmu"), 6, 6, 3, 4)
    p, ins = ns.single_layer(L, grid(6, 6, 3, 6))
    dev, outs, _ = device_run(p, ins)
    assert dev.state(0) == "running"
    dev.run(0)
    np.testing.assert_array_equal(outs[0], L.reference())
    assert dev.state(0) == "stopped"
    assert dev.handler_register(0, "NACC_INT_STATUS") == INT["FULL_TRANS_DONE_INTR"]
    st = dev.stats(0)
    dev.write_register("CMD", 0 << 4)  # select handler 0 for host reads
    assert dev.read_register("PMU_CYCLES_LO") == st["cycles"]
    assert dev.read_register("PMU_MAC_CYCLES_LO") == st["mac_cycles"]
    assert dev.read_register("PMU_DMA_RD_BYTES_LO") == st["dma_read_bytes"]
    assert dev.read_register("PMU_CMD_COUNT") == st["commands"] == len(_core.decode_stream(p.commands))
    assert dev.read_register("QREAD") == 4 * (len(p.commands) - 1)
    dev.write_register("NACC_INT_STATUS", 4)  # W1C
    assert dev.read_register("NACC_INT_STATUS") == 0
    dev.write_register("PMU_CTRL", 0b11)  # CNT_RST
    assert dev.read_register("PMU_CYCLES_LO") == 0
    with pytest.raises(nacc.DeviceFault, match="not running"):
        dev.step(0)
    with pytest.raises(nacc.DeviceFault, match="no register at"):
        dev.read_register(0x0050)


@pytest.mark.parametrize("case,match,bits", [
    ("input_short", r"bus read error: IFM tile .*past the end", "BUS_RD_ERR_INTR"),
    ("output_short", r"bus write error: OFM tile", "BUS_WR_ERR_INTR"),
    ("weights_unbound", r"bus read error: weight block .*no buffer is bound", "BUS_RD_ERR_INTR"),
    ("output_readonly", r"bus write error: OFM tile .*read-only", "BUS_WR_ERR_INTR"),
])
def test_bus_errors(case, match, bits):
    L = conv(rng_for("bus"), 8, 8, 4, 4)
    patch = {}
    if case == "input_short":
        patch = {"NACC_IN_FM_DMA_ADDR": ra(ns.INPUT, 100)}
    elif case == "output_short":
        patch = {"NACC_OUT_DMA_ADDR": ra(ns.OUTPUT, 200)}
    elif case == "weights_unbound":
        patch = {"NACC_IN_K_DMA_ADDR": ra(5, 0)}
    elif case == "output_readonly":
        patch = {"NACC_OUT_DMA_ADDR": ra(ns.CONST, 0)}
    p, ins = ns.single_layer(L, [Tile(0, 8, 0, 8)], patch=patch)
    dev, outs, _ = device_run(p, ins)
    with pytest.raises(nacc.DeviceFault, match=match) as e:
        dev.run(0)
    assert "NPU_OP_CONV" in str(e.value) and "command stream word" in str(e.value)
    assert dev.state(0) == "faulted"
    assert dev.handler_register(0, "NACC_INT_STATUS") == INT[bits]
    assert not outs[0].any()  # nothing of the faulted command was written
    # The runtime reports it too, and the handler is free again afterwards.
    rt = _core.Runtime()
    with pytest.raises(nacc.DeviceFault, match=match):
        rt.run(p, ins)
    good, _ = ns.single_layer(L, [Tile(0, 8, 0, 8)])
    np.testing.assert_array_equal(rt.run(good, ins)[0][0], L.reference())


@pytest.mark.parametrize("tile_kw,patch,match", [
    ({}, {"NACC_IN_FM_SPLIT_H_OFFSET": 0}, "input tile does not cover the output tile: rows"),
    ({}, {"NACC_IN_FM_SPLIT": _core.register_value("NACC_IN_FM_SPLIT", {"IN_FM_SPLIT_WIDTH": 9, "IN_FM_SPLIT_LEFT_LEN": 6})},
     "input tile does not cover the output tile: columns"),
    ({}, {"NACC_KERNEL": _core.register_value("NACC_KERNEL", {"K_SIZE_X": 3, "K_SIZE_Y": 3, "K_SIZE_XY": 3})},
     "K_SIZE_XY = 3 but K_SIZE_X . K_SIZE_Y - 1 = 8"),
    ({}, {"NACC_PADDING": 0x0}, "implied padding right|input tile does not cover"),
    ({}, {"NACC_MEM_RANGE": _core.register_value("NACC_MEM_RANGE", {"IFM_MEM_BASE": 1, "K_MEM_BASE": 256, "OFM_MEM_BASE": 512})},
     "the IFM and K areas both start"),
    ({"areas": (0, 1, 512, 768)}, {}, "SRAM overflow: IFM tile needs"),
    ({"areas": (0, 256, 257, 768)}, {}, "SRAM overflow: kernel data"),
    ({}, {"NACC_CONV_TRANS_LEN": 1}, "weight block .*stream is"),
    ({}, {"NACC_DMA_PARA2": 2}, "IFM pixel pitch"),
    ({}, {"NACC_OUT_FM_SPLIT_LEN": 0}, "empty output tile"),
])
def test_validation_faults(tile_kw, patch, match):
    L = conv(rng_for("val"), 8, 8, 4, 6)
    p, ins = ns.single_layer(L, [Tile(2, 3, 1, 4, **tile_kw)], patch=patch)
    with pytest.raises(nacc.DeviceFault, match=match):
        _core.Runtime().run(p, ins)


def test_stale_kernel_and_feature_map():
    L = conv(rng_for("stale"), 8, 8, 4, 6)
    t1, t2 = Tile(0, 4, 0, 8, c0=0, nc=3), Tile(0, 4, 0, 8, c0=3, nc=3, k_upd=0)
    p, ins = ns.single_layer(L, [t1, t2])
    with pytest.raises(nacc.DeviceFault, match="stale kernel: NACC_CTRL.K_UPD = 0 but the K area holds another kernel"):
        _core.Runtime().run(p, ins)
    p, ins = ns.single_layer(L, [Tile(0, 4, 0, 8, k_upd=0)])
    with pytest.raises(nacc.DeviceFault, match="holds no kernel loaded by this stream"):
        _core.Runtime().run(p, ins)
    p, ins = ns.single_layer(L, [Tile(0, 4, 0, 8), Tile(4, 4, 0, 8, fm_upd=0)])
    with pytest.raises(nacc.DeviceFault, match="stale feature map"):
        _core.Runtime().run(p, ins)
    # An IFM overwritten by a later command's OFM area is no longer resident.
    p, ins = ns.single_layer(L, [Tile(0, 4, 0, 8, c0=0, nc=3, areas=(0, 256, 512, 768)),
                                 Tile(4, 4, 0, 8, areas=(2, 256, 0, 768)),
                                 Tile(0, 4, 0, 8, c0=3, nc=3, fm_upd=0)])
    with pytest.raises(nacc.DeviceFault, match="stale feature map"):
        _core.Runtime().run(p, ins)


def test_fully_connected_register_checks():
    L = fc(rng_for("fcreg"), 3, 130, 5)
    with pytest.raises(nacc.DeviceFault, match=r"FULL_KER_SIZE = 0 but IN_FM_WIDTH \* ceil\(IN_FM_CH / 64\) - 1 = 2"):
        run(L, [Tile(0, 3, 0, 1)], patch={"NACC_FULL_CONV_PARA": 0})
    C = conv(rng_for("fcreg"), 4, 4, 3, 3)
    with pytest.raises(nacc.DeviceFault, match="QUANT_REAL_SCALE = 1 is only for NPU_OP_FULLY_CONNECTED"):
        run(C, [Tile(0, 4, 0, 4)], patch={"NACC_ACT_PARA": 4})
    with pytest.raises(nacc.DeviceFault, match="weight stream"):
        # A weight stream that decodes to the wrong count: the block of another layer.
        sb = ns.StreamBuilder()
        other = sb.const_blocks([L.weights[:2]])[0]
        sb.layer(L, [Tile(0, 3, 0, 1)], in_addr=ra(ns.INPUT, 0), out_addr=ra(ns.OUTPUT, 0),
                 patch={"NACC_IN_K_DMA_ADDR": ra(ns.CONST, other)})
        _core.Runtime().run(ns.program(sb, [L.x], [(1, 3, 1, 5)]), [L.x])


def test_fp32_scale_rejected_where_no_unit_honours_it():
    """NACC_ACT_PARA.QUANT_FP32_SCALE (bit 3) is for the MAC units only and not
    together with QUANT_REAL_SCALE (bit 2)."""
    R = np.random.default_rng(5)
    for L, tiles in ((pool(R, "maxpool", 4, 4, 3), [Tile(0, 2, 0, 2)]),
                     (eltwise(R, "add", 4, 4, 3), [Tile(0, 4, 0, 4)])):
        with pytest.raises(nacc.DeviceFault, match="QUANT_FP32_SCALE = 1 is only for the MAC units"):
            run(L, tiles, patch={"NACC_ACT_PARA": 8})
    L = fc(rng_for("fp32"), 3, 20, 5, real_scale=True)
    with pytest.raises(nacc.DeviceFault, match="with QUANT_REAL_SCALE = 1"):
        run(L, [Tile(0, 3, 0, 1)], patch={"NACC_ACT_PARA": 12})


def test_pool_fp32_mode_register_checks():
    """NACC_ACT_PARA.POOL_FP32_MODE [9:8] (project extension): 3 is no mode, and
    any mode needs POOL_FP32 = 1 (docs/device_model.md §4)."""
    L = pool(np.random.default_rng(6), "maxpool", 4, 4, 3)
    with pytest.raises(nacc.DeviceFault, match="POOL_FP32_MODE = 3 is not a mode"):
        run(L, [Tile(0, 2, 0, 2)], patch={"NACC_ACT_PARA": 3 << 8})
    with pytest.raises(nacc.DeviceFault, match="POOL_FP32_MODE = 1 needs POOL_FP32 = 1"):
        run(L, [Tile(0, 2, 0, 2)], patch={"NACC_ACT_PARA": 1 << 8})


def test_dma_copy_wait_and_race():
    """NPU_OP_DMA_START copies; a copy of a kernel's output without a KERNEL_WAIT is a race."""
    L = conv(rng_for("dma"), 6, 6, 3, 4)
    n = 6 * 6 * 4
    for wait in (True, False):
        sb = ns.StreamBuilder()
        sb.layer(L, [Tile(0, 6, 0, 6)], in_addr=ra(ns.INPUT, 0), out_addr=ra(ns.SCRATCH, 0))
        if wait:
            sb.e.op("NPU_OP_KERNEL_WAIT", 0)
        sb.reg("DMA_SRC", ra(ns.SCRATCH, 0))
        sb.reg("DMA_DST", ra(ns.OUTPUT, 0))
        sb.reg("DMA_LEN", n)
        sb.e.op("NPU_OP_DMA_START")
        sb.e.op("NPU_OP_DMA_WAIT", 0)
        p = ns.program(sb, [L.x], [(1, 6, 6, 4)], scratch=n)
        if wait:
            out, st = _core.Runtime().run(p, [L.x])
            np.testing.assert_array_equal(out[0], L.reference())
            assert st["dma_ops"] == 1 and st["dma_write_bytes"] == 2 * n
        else:
            with pytest.raises(nacc.DeviceFault, match="race: .*NPU_OP_CONV at word .*NPU_OP_KERNEL_WAIT"):
                _core.Runtime().run(p, [L.x])
    sb = ns.StreamBuilder()
    sb.reg("DMA_SRC", ra(ns.INPUT, 100))
    sb.reg("DMA_DST", ra(ns.OUTPUT, 0))
    sb.reg("DMA_LEN", 100)
    sb.e.op("NPU_OP_DMA_START")
    p = ns.program(sb, [L.x], [(1, 6, 6, 4)])
    dev, _, _ = device_run(p, [L.x])
    with pytest.raises(nacc.DeviceFault, match="bus read error: DMA source"):
        dev.run(0)
    assert dev.handler_register(0, "NACC_INT_STATUS") == INT["BUS_RD_ERR_INTR"]


@pytest.mark.parametrize("dtype,elem", [(0, 1), (1, 2), (2, 4)])
def test_vnchwconv_on_device_memory(dtype, elem):
    """NPU_OP_VNCHWCONV runs scatter_vnchwconv with device memory as the UB: an NCHW tensor
    of C0 channels (one C1 slab) becomes NC1HWC0, i.e. the [C, HW] -> [HW, C0] transposition.
    b16/b32: one command; b8: four (the two channel halves x the two position halves)."""
    rng = rng_for("vnchw", dtype)
    c0 = 32 if elem == 1 else 16
    per_block = 32 // elem
    hw = per_block * 4
    x = rng.integers(0, 256, c0 * hw * elem, dtype=np.uint8)
    sb = ns.StreamBuilder()
    passes = [(0, 0, 0, 0)] if elem != 1 else [(sh, dh, 16 * dh * hw, 16 * sh * 32)
                                               for sh in (0, 1) for dh in (0, 1)]
    reps = hw // per_block
    for sh, dh, src_off, dst_off in passes:
        sb.reg("VNCHWCONV_SRC", ra(ns.INPUT, src_off))
        sb.reg("VNCHWCONV_SRC_BLOCK_STRIDE", hw * elem)
        sb.reg("VNCHWCONV_DST", ra(ns.OUTPUT, dst_off))
        sb.reg("VNCHWCONV_DST_BLOCK_STRIDE", 32)
        sb.reg("VNCHWCONV_STRIDE", SRC_STRIDE=1, DST_STRIDE=16 if elem != 1 else 32)
        sb.reg("VNCHWCONV_CFG", REPEAT=reps, DTYPE=dtype, SRC_HIGH_HALF=sh, DST_HIGH_HALF=dh)
        sb.e.op("NPU_OP_VNCHWCONV")
    sb.e.op("NPU_OP_DMA_WAIT", 0)
    xin = x.view(np.int8).reshape(1, 1, 1, -1)
    p = ns.program(sb, [xin], [(1, 1, 1, x.size)])
    out, st = _core.Runtime().run(p, [xin])
    dt = {1: np.uint8, 2: np.uint16, 4: np.uint32}[elem]
    got = out[0].view(np.uint8).ravel().view(dt).reshape(hw, c0)
    np.testing.assert_array_equal(got, x.view(dt).reshape(c0, hw).T)
    assert st["dma_ops"] == len(passes) and st["dma_read_bytes"] == len(passes) * reps * 512


def test_vnchwconv_errors():
    xin = np.zeros((1, 1, 1, 512), np.int8)
    for regs, match in [({"VNCHWCONV_SRC": ra(ns.INPUT, 8)}, "multiples of 32"),
                        ({"VNCHWCONV_SRC_BLOCK_STRIDE": 64}, "bus read error: VNCHWCONV source block 8"),
                        ({"VNCHWCONV_CFG": _core.register_value("VNCHWCONV_CFG", {"REPEAT": 1, "DTYPE": 1, "SRC_HIGH_HALF": 1})},
                         "vnchwconv unit: .*high")]:
        sb = ns.StreamBuilder()
        sb.reg("VNCHWCONV_SRC", ra(ns.INPUT, 0))
        sb.reg("VNCHWCONV_SRC_BLOCK_STRIDE", 32)
        sb.reg("VNCHWCONV_DST", ra(ns.OUTPUT, 0))
        sb.reg("VNCHWCONV_DST_BLOCK_STRIDE", 32)
        sb.reg("VNCHWCONV_CFG", REPEAT=1, DTYPE=1)
        for name, value in regs.items():
            sb.reg(name, value)
        sb.e.op("NPU_OP_VNCHWCONV")
        p = ns.program(sb, [xin], [(1, 1, 1, 512)])
        with pytest.raises(nacc.DeviceFault, match=match):
            _core.Runtime().run(p, [xin])


def test_two_handlers_interleaved_step_by_step():
    """Two batch handlers, each a two-layer stream through its own scratch, stepped
    alternately one command at a time: both exact, scratch separate."""
    progs = []
    for h in range(2):
        rng = rng_for("interleave", h)
        A = conv(rng, 10, 9, 4, 6)
        B = conv(rng, 10, 9, 6, 5)
        sb = ns.StreamBuilder()
        sb.layer(A, grid(10, 9, 4, 9), in_addr=ra(ns.INPUT, 0), out_addr=ra(ns.SCRATCH, 0))
        sb.e.op("NPU_OP_KERNEL_WAIT", 0)
        B.x = A.reference()
        sb.layer(B, grid(10, 9, 5, 5), in_addr=ra(ns.SCRATCH, 0), out_addr=ra(ns.OUTPUT, 0))
        progs.append((ns.program(sb, [A.x], [(1, 10, 9, 5)], scratch=10 * 9 * 6), A, B))
    dev = _core.Device()
    bound = [ns.bind_program(dev, p, h, [A.x]) for h, (p, A, B) in enumerate(progs)]
    running = [True, True]
    steps = 0
    while any(running):
        for h in (0, 1):
            if running[h]:
                running[h] = dev.step(h)
                steps += 1
    for h, (p, A, B) in enumerate(progs):
        outs, scratch, _ = bound[h]
        np.testing.assert_array_equal(outs[0], B.reference())
        np.testing.assert_array_equal(scratch[ns.SCRATCH].view(np.int8).reshape(B.x.shape), B.x)
        assert dev.state(h) == "stopped"
    assert steps == sum(dev.stats(h)["commands"] for h in (0, 1))


def test_cmd_start_resets_stream_registers_and_busy_handler():
    L = conv(rng_for("reset"), 4, 4, 3, 3)
    p, ins = ns.single_layer(L, [Tile(0, 4, 0, 4)])
    dev, outs, _ = device_run(p, ins)
    dev.step(0)
    with pytest.raises(nacc.DeviceFault, match="still running"):
        dev.write_register("CMD", 0x1)
    with pytest.raises(nacc.DeviceFault, match="while batch handler 0 is running"):
        dev.write_register("NACC_CTRL", 0)
    dev.run(0)
    assert dev.handler_register(0, "NACC_CTRL") != 0
    dev.write_register("CMD", 0x3)  # restart: registers back to reset values first
    assert dev.handler_register(0, "NACC_CTRL") == 0
    dev.run(0)
    np.testing.assert_array_equal(outs[0], L.reference())
    with pytest.raises(nacc.DeviceFault, match="register-driven"):
        dev.write_register("NACC_CTRL", 1 << 12)


def test_stream_errors():
    dev = _core.Device()
    words = np.array([0x00000001, 0x00000001], np.uint32)  # STOP, then a word after it
    dev.bind(0x1000, words, readonly=True)
    dev.start(0, 0x1000, 8)
    with pytest.raises(nacc.DeviceFault, match="after NPU_OP_STOP"):
        dev.run(0)
    dev.start(1, 0x1000, 4)
    dev.run(1)
    assert dev.state(1) == "stopped"
    dev.start(2, 0x2000, 4)
    with pytest.raises(nacc.DeviceFault, match="bus read error: command fetch"):
        dev.run(2)
    assert dev.handler_register(2, "NACC_INT_STATUS") == INT["BUS_RD_ERR_INTR"]
    bad = np.array([0x00000010, 0x00000001], np.uint32)  # NPU_OP_CONV with reset NACC_CTRL
    dev.bind(0x3000, bad, readonly=True)
    dev.start(3, 0x3000, 8)
    with pytest.raises(nacc.DeviceFault, match="word 0 .*NPU_OP_CONV"):
        dev.run(3)


def test_hostile_register_values_never_crash():
    """Random register payloads (bit flips, off-by-small, random words) in a valid stream:
    every run either completes or raises DeviceFault; the device never crashes, hangs or
    writes outside the output buffer (a guard buffer is bound right after it)."""
    rng = np.random.default_rng(7)
    L = conv(rng_for("fuzz"), 6, 7, 5, 4, stride=(1, 2))
    p, ins = ns.single_layer(L, grid(*L.out_hw, 3, 2, k_upd=1))
    words = p.commands
    sets = [c["word"] for c in _core.decode_stream(words) if c["opcode"] == "NPU_SET_REGISTER"]
    outcomes = {"ok": 0, "fault": 0}
    for trial in range(250):
        w = words.copy()
        for _ in range(int(rng.integers(1, 4))):
            pos = int(rng.choice(sets)) + 1
            kind = rng.integers(0, 3)
            if kind == 0:
                w[pos] ^= np.uint32(1 << int(rng.integers(0, 32)))
            elif kind == 1:
                w[pos] = np.uint32((int(w[pos]) + int(rng.integers(-3, 4))) & 0xFFFFFFFF)
            else:
                w[pos] = np.uint32(rng.integers(0, 1 << 32))
        dev = _core.Device(cores=2)
        guard = np.full(4096, 0x5A, np.uint8)
        q = _core.Program.from_bytes(p.to_bytes())
        q.commands = w
        outs, _, _ = ns.bind_program(dev, q, 0, ins)
        dev.bind(((0 + 1) << 36) + (ns.OUTPUT << 32) + outs[0].nbytes, guard, readonly=True)
        try:
            dev.run(0)
            outcomes["ok"] += 1
        except nacc.DeviceFault as e:
            assert "command stream word" in str(e)
            outcomes["fault"] += 1
        assert (guard == 0x5A).all()
    assert outcomes["fault"] > 50 and outcomes["ok"] > 10, outcomes

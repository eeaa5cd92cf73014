"""Mode 3, channel groups x row pieces in one depthwise or fully-connected
command (a project extension, docs/device_model.md §5 "Mode 3"): bit-exact
against one core at 8 and 32 cores, replayed and stepped alike (bits and
counters), and a corrupted split field faults or changes the output, both
ways."""
from __future__ import annotations

import numpy as np
import pytest

import nacc
from nacc import _core
import ir_builders as irb
from test_compiler import _bump, _mutated
from test_replay import COUNTERS, _inputs, _run


def depthwise(hw, c, k=3, s=1, dm=1):
    g, _ = irb.conv("DEPTHWISE_CONV_2D", in_hw=(hw, hw), c_in=c, kernel=(k, k), stride=(s, s),
                    padding="SAME", weights_axis=3, depth_multiplier=dm)
    return g


FORCED = dict(force_mode="SPLIT_2D")
SHAPES = [(7, 960, 3, 1, 1), (14, 576, 3, 1, 1), (28, 192, 3, 1, 1), (14, 100, 3, 2, 1),
          (13, 72, 5, 2, 1), (10, 40, 3, 1, 2)]
IDS = ["7x960", "14x576", "28x192", "14x100s2", "13x72k5s2", "10x40dm2"]


def _step_and_replay(prog, cores, kb):
    x = _inputs(prog, 0)
    ref, ref_stats = _run(prog, x, cores, kb, "step")
    got, stats = _run(prog, x, cores, kb, "replay")
    return x, ref, ref_stats, got, stats


def _stepped_stats_per_mode(g):
    """g at 32 cores as chosen (None) and forced to modes 1 and 2: each
    Program's stepped counters, after checking its replay gives its bits."""
    stats = {}
    for mode in (None, "SPLIT_KERNEL", "SPLIT_HEIGHT"):
        opts = dict(force_mode=mode) if mode else {}
        prog = _core.compile(g, cores=32, **opts)
        _, ref, s, got, _ = _step_and_replay(prog, 32, 64)
        np.testing.assert_array_equal(got[0], ref[0])
        stats[mode] = s
    return stats


def _assert_one_core_bits(g, prog, cores, kb):
    """`prog` (g at `cores`) stepped and replayed gives one core's bits, and
    replay and step agree on every counter."""
    one = _core.compile(g, cores=1, sram_kb=kb)
    x, ref, ref_stats, got, stats = _step_and_replay(prog, cores, kb)
    want, _ = _run(one, x, 1, kb, "step")
    assert stats["replayed"]
    np.testing.assert_array_equal(ref[0], want[0])
    np.testing.assert_array_equal(got[0], want[0])
    for key in COUNTERS:
        assert stats[key] == ref_stats[key], key


def _assert_corruption_faults_or_changes(prog, register, change):
    """`prog` replays as it steps; `register` of its stream corrupted by `change`: stepping and
    replaying both fault alike, or both give the same bits and counters, and
    those bits are not the uncorrupted ones. Skips where the field is 0 and
    cannot go below."""
    x = _inputs(prog, 0)
    good, good_stats = _run(prog, x, 32, 64, "step")
    got, stats = _run(prog, x, 32, 64, "replay")
    np.testing.assert_array_equal(got[0], good[0])
    for key in COUNTERS:
        assert stats[key] == good_stats[key], key
    bad = _core.Program.from_bytes(prog.to_bytes())
    try:
        bad.commands = _mutated(_core.program_info(prog)["commands"], register, change)
    except ValueError:
        pytest.skip(f"{register}: field at 0")
    ref, ref_stats = _run(bad, x, 32, 64, "step")
    got, stats = _run(bad, x, 32, 64, "replay")
    if ref_stats is None:
        assert got == ref
        return
    assert stats is not None
    np.testing.assert_array_equal(got[0], ref[0])
    for key in COUNTERS:
        assert stats[key] == ref_stats[key], key
    assert not np.array_equal(ref[0], good[0]), f"{register} corrupted, output unchanged"


@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
@pytest.mark.parametrize("cores,kb", [(8, 64), (32, 64), (32, 16)])
def test_split_2d_is_bit_exact(shape, cores, kb):
    """Each core computes mode 2's rows of mode 1's channel group: the same
    windows, weights and output stage as one core, so the outputs are the
    one-core schedule's, and replay and step agree on every counter. Forced to
    mode 3 to test the split itself (stride 2, depth multiplier 2 and channel
    counts that are no multiple of 64 included)."""
    hw, c, k, s, dm = shape
    g = depthwise(hw, c, k, s, dm)
    plan = _core.plan_op(g, 0, cores=cores, sram_kb=kb, **FORCED)
    assert plan["mode"] == "SPLIT_2D" and plan["groups2d"] >= 2
    _assert_one_core_bits(g, _core.compile(g, cores=cores, sram_kb=kb, **FORCED), cores, kb)


def depthwise_random(hw, c, seed=7):
    """MobileNetV2's depthwise layers: 3x3 SAME, random per-channel weights
    (compressed as a real layer's), ReLU6."""
    from test_schedule import depthwise_random as make
    return make(hw, c, seed)


def test_split_2d_golden_7x7x960_at_32_cores():
    """MobileNetV2's block_14..16 depthwise (7x7x960, 3x3, random weights) at 32
    cores. Mode 2 shares 7 rows among at most 4 cores (3158 cycles forced);
    mode 1 chose 2 commands of 480 channels on 8 cores (60 each, one pass):
    each command reads 35968 / 31552 bytes through the 64-byte port before any
    core computes, so the first read (562 cycles) and the last command's
    compute (441) and write (392) do not overlap anything: 1867 cycles. Mode 3
    (docs/device_model.md §5) chose 4 commands of 256 channels (the last 192)
    on 8 cores, 4 channel groups of 64 x 2 row pieces (3 and 4 rows): each
    core's pass over 64 channels costs what 60 cost, and the commands are
    half as large, so the pipeline fills and drains with a quarter of the
    work. It is read-bound: 3 x 21568 + 16192 = 80896 bytes read (5 + 4 input
    rows per group for 7 output rows: the halo of the two pieces) at 64 bytes
    a cycle is 337 x 3 + 253 cycles after the first command's issue at cycle
    29; the last command's 4-row core then computes 4 x 7 x 9 = 252 cycles and
    writes 147 (9408 bytes / 64): 29 + 1264 + 252 + 147 = 1692, the end of
    the last write; the stream's stop makes it 1693. MAC cycles per core: 4
    commands x 4 rows x 7 x 9 = 1008 on the 4-row cores."""
    g = depthwise_random(7, 960)
    plan = _core.plan_op(g, 0, cores=32)
    assert (plan["mode"], plan["cores"], plan["groups2d"]) == ("SPLIT_2D", 8, 4), plan["describe"]
    assert len(plan["groups"]) == 4 and len(plan["row_pieces"]) == 1
    # The estimate of the mode 0-2 plan less what the replay saves (docs/compiler.md "Choice").
    assert plan["estimate"]["cycles"] == 1671
    stats = _stepped_stats_per_mode(g)
    two_d = stats[None]
    assert stats["SPLIT_KERNEL"]["cycles"] == 1867
    assert stats["SPLIT_HEIGHT"]["cycles"] == 3158
    assert two_d["cycles"] == 1693
    assert two_d["dma_read_bytes"] == 80896 and two_d["kernels"] == 4
    assert max(c["mac_cycles"] for c in two_d["cores"]) == 1008


MUTATIONS_2D = [
    ("NACC_BROADCAST_CTRL", _bump("SPLIT_2D_GROUPS", 1)),
    ("NACC_BROADCAST_CTRL", _bump("SPLIT_2D_GROUPS", -1)),
    ("NACC_BROADCAST_CTRL", _bump("SPLIT_2D_ROWS", 1)),
    ("NACC_BROADCAST_CTRL", _bump("SPLIT_2D_ROWS", -1)),
    ("NACC_BROADCAST_CTRL", _bump("BROADCAST_MODE", -1)),
    ("NACC_BROADCAST_DMA", _bump("EU_BIAS_START_OFFSET", -2)),
    ("NACC_BROADCAST_DMA", _bump("EU_BIAS_START_OFFSET", 2)),
    ("NACC_BROADCAST_SPLIT", _bump("OUT_FM_SPLIT_AVG_HEIGHT", -1)),
    ("NACC_BROADCAST_DMA", _bump("IN_DMA_UNICAST_AVG_OFFSET", 1)),
]


# (map size, channels) -> (cores, channel groups) of the forced mode 3 plan at
# 32 cores: 4 x 4 (every core planned in full), 8 groups x 4 row pieces (the
# execution plan derives each row piece's middle groups) and 2 x 8 (each
# group's middle row pieces; kernel_plan.cc, docs/device_model.md §8).
MAPS_2D = {(14, 100): (16, 4), (16, 320): (32, 8), (40, 32): (16, 2)}


@pytest.mark.parametrize("hw, c", list(MAPS_2D), ids=[f"{k[0]}x{k[1]}" for k in MAPS_2D])
@pytest.mark.parametrize("register, change", MUTATIONS_2D,
                         ids=[f"{m[0]}-{i}" for i, m in enumerate(MUTATIONS_2D)])
def test_corrupted_split_2d_field_faults_or_changes_the_output(register, change, hw, c):
    """A corrupted group or row-piece count, mode, channel offset or row split
    of a mode 3 command either raises nacc.DeviceFault or changes the output
    bits, and replaying the execution plan does exactly what stepping does:
    also where the plan derives middle groups or row pieces from planned ones."""
    g = depthwise(hw, c)
    plan = _core.plan_op(g, 0, cores=32, **FORCED)
    assert (plan["cores"], plan["groups2d"]) == MAPS_2D[(hw, c)], plan["describe"]
    _assert_corruption_faults_or_changes(_core.compile(g, cores=32, **FORCED), register, change)


def test_split_2d_fields_must_be_zero_in_other_modes():
    """SPLIT_2D_GROUPS is 0 outside mode 3: a mode 2 stream with it set faults,
    stepped and replayed alike."""
    g = depthwise(28, 64)
    prog = _core.compile(g, cores=8, force_cores=8, force_mode="SPLIT_HEIGHT")
    bad = _core.Program.from_bytes(prog.to_bytes())
    bad.commands = _mutated(_core.program_info(prog)["commands"], "NACC_BROADCAST_CTRL",
                            _bump("SPLIT_2D_GROUPS", 1))
    x = _inputs(bad, 0)
    for execution in ("step", "replay"):
        with pytest.raises(nacc.DeviceFault, match="SPLIT_2D_GROUPS"):
            _core.Runtime(cores=8, execution=execution).run(bad, x)


def test_split_2d_on_a_convolution_faults():
    """Mode 3 is for depthwise convolution and fully connected only
    (docs/device_model.md §5): a direct convolution faults."""
    g, _ = irb.conv(in_hw=(16, 16), c_in=8, c_out=8, kernel=(3, 3), padding="SAME",
                    weights_axis=0)
    prog = _core.compile(g, cores=8, force_cores=8, force_mode="SPLIT_HEIGHT")

    def to_2d(f):
        f["BROADCAST_MODE"] = 3
        return f
    bad = _core.Program.from_bytes(prog.to_bytes())
    bad.commands = _mutated(_core.program_info(prog)["commands"], "NACC_BROADCAST_CTRL", to_2d)
    with pytest.raises(nacc.DeviceFault, match="depthwise convolution and fully connected only"):
        _core.Runtime(cores=8).run(bad, _inputs(bad, 0))


def conv1x1(hw, c_in, c_out):
    from test_schedule import conv1x1_random
    return conv1x1_random(hw, c_in, c_out)


FC_SHAPES = [(14, 384, 64), (7, 960, 160), (14, 100, 37)]


@pytest.mark.parametrize("shape", FC_SHAPES, ids=["14x384-64", "7x960-160", "14x100-37"])
@pytest.mark.parametrize("cores,kb", [(8, 64), (32, 64), (32, 16)])
def test_split_2d_fully_connected_is_bit_exact(shape, cores, kb):
    """A 1x1 convolution as matrix rows (the fully-connected unit) in mode 3:
    each core computes its row piece's rows (all input channels, broadcast to
    the piece's cores) for its group's output channels, with the group's
    weight stream: the one-core result, replayed and stepped alike."""
    g = conv1x1(*shape)
    opts = dict(force_mode="SPLIT_2D", conv_lowering="matrix")
    plan = _core.plan_op(g, 0, cores=cores, sram_kb=kb, **opts)
    assert plan["mode"] == "SPLIT_2D" and plan["lowering"] == "matrix"
    _assert_one_core_bits(g, _core.compile(g, cores=cores, sram_kb=kb, **opts), cores, kb)


def test_split_2d_golden_fully_connected_14x14x384_to_64_at_32_cores():
    """MobileNetV2's block_7..9 projection (14x14x384 -> 64, 1x1) at 32 cores,
    as 196 matrix rows of K = 384 (6 passes of 64) on the fully-connected
    unit; the §8 bound's MAC term is 196 x 64 x 6 / 32 = 2352 cycles. Mode 2
    leaves the busiest core 7 of the 196 rows (7 x 64 x 6 = 2688 MAC cycles;
    4328 device cycles forced) and mode 1 (the direct convolution on 16 cores,
    4 of the 64 channels each) sends the whole input through every core's
    16-byte port (5468 forced). Mode 3 chose 8 channel groups of 8 channels x
    4 row pieces in 25 commands of 8 rows (the last 4, one row a piece; at most
    32 commands, docs/compiler.md "Choice"): every core computes 24 x 2 rows x
    8 channels x 6 passes + 1 x 8 x 6 = 2352 MAC cycles, exactly the bound's
    term; each command's input rows are read once and broadcast to the 8
    cores of their row piece, each group's weights once to its 4 cores
    (resident over the commands), so the external reads are the input once
    (75264 bytes) and the 8 weight blocks with bias and quantization once
    (25472): 100736. The device: 2829 cycles, the 2352 plus the first
    command's read (28544 bytes, weights included) and the pipeline's drain."""
    g = conv1x1(14, 384, 64)
    plan = _core.plan_op(g, 0, cores=32)
    assert (plan["mode"], plan["cores"], plan["groups2d"]) == ("SPLIT_2D", 32, 8), plan["describe"]
    stats = _stepped_stats_per_mode(g)
    two_d = stats[None]
    cycles = {mode: st["cycles"] for mode, st in stats.items()}
    assert cycles == {None: 2829, "SPLIT_KERNEL": 5468, "SPLIT_HEIGHT": 4328}
    assert two_d["dma_read_bytes"] == 100736 and two_d["kernels"] == 25
    assert max(c["mac_cycles"] for c in two_d["cores"]) == 2352


@pytest.mark.parametrize("register, change", MUTATIONS_2D,
                         ids=[f"{m[0]}-{i}" for i, m in enumerate(MUTATIONS_2D)])
def test_corrupted_split_2d_fully_connected_faults_or_changes_the_output(register, change):
    """The mutations of the depthwise test on a mode 3 fully-connected stream:
    a fault or other bits, replayed as stepped."""
    prog = _core.compile(conv1x1(14, 100, 37), cores=32, force_mode="SPLIT_2D",
                         conv_lowering="matrix")
    _assert_corruption_faults_or_changes(prog, register, change)

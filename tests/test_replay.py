"""The execution plan (csrc/device/plan.h; DESIGN "decoded once, replayed fast"):
replaying a Program's plan gives the same output bits, the same counters (every
run total, per-core counts, the timeline, the per-op cut) and the same faults as
stepping the reference interpreter command by command — on every Program the
test corpus compiles, at 1, 2 and 4 host threads.

The corpus is the one tests/test_program_golden.py pins: the compiler sweep's
seeded nets at several core counts, SRAM sizes and split modes, and the fuzzer's
frozen TFLite graphs as the delegate partitions them. The default run takes a
representative part of it; `python -m pytest -m slow tests/test_replay.py`
takes all of it.
"""
from __future__ import annotations

import glob
import json
import os
import tempfile

import numpy as np
import pytest

import nacc
from nacc import _core
from test_program_golden import SPECS, SWEEP_SETTINGS

COUNTERS = ("cycles", "macs", "dma_read_bytes", "dma_write_bytes", "commands", "kernels",
            "dma_ops", "mac_cycles", "act_cycles", "stall_cycles", "sram_high_water", "cores",
            "timeline", "ops")


def _inputs(program, seed):
    rng = np.random.default_rng(seed)
    info = _core.program_info(program)
    return [rng.integers(-128, 128, int(t["size"]), dtype=np.int64).astype(np.int8)
            for t in info["inputs"]]


def _run(program, inputs, cores, kb, execution, threads=1):
    rt = _core.Runtime(cores=cores, sram_kb=kb, threads=threads, execution=execution)
    try:
        outs, stats = rt.run(program, inputs, timeline=True)
    except nacc.DeviceFault as e:
        return ("fault", str(e)), None
    return [np.asarray(o).copy() for o in outs], stats


def assert_equivalent(program, cores, kb, seed=0, threads=(1, 2)):
    """Step and replay (at each thread count) agree bit for bit and count for count."""
    x = _inputs(program, seed)
    ref, ref_stats = _run(program, x, cores, kb, "step")
    for t in threads:
        got, stats = _run(program, x, cores, kb, "replay", t)
        if ref_stats is None:
            assert got == ref, f"replay at {t} threads faulted differently: {got} vs {ref}"
            continue
        assert stats is not None, f"replay faulted ({got}) where stepping did not"
        for a, b in zip(ref, got):
            assert np.array_equal(a, b), f"{t} threads: {int((a != b).sum())} of {a.size} differ"
        for k in COUNTERS:
            assert stats[k] == ref_stats[k], f"{t} threads: counter {k} differs"
    return ref_stats


def _sweep_programs(seeds):
    from test_compiler_sweep import random_net

    for seed in seeds:
        net = random_net(seed)
        for cores, kb, mode in SWEEP_SETTINGS:
            try:
                yield f"sweep/{seed}/c{cores}/k{kb}/{mode}", _core.compile(
                    net.g, cores=cores, sram_kb=kb, force_mode=mode), cores, kb
            except nacc.UnsupportedError:
                continue


def _delegate_programs(indices):
    pytest.importorskip("ai_edge_litert")
    from ai_edge_litert import interpreter as litert
    from fuzz.build_tflite import build_tflite

    with open(SPECS) as f:
        specs = json.load(f)["tflite"]
    for index in indices:
        spec = specs[index]
        opts = {k: v for k, v in spec["options"].items() if k != "threads"}
        with tempfile.TemporaryDirectory() as tmp:
            d = nacc.load_delegate(runtime="litert", log_level="off", dump_dir=tmp, **opts)
            try:
                interp = litert.Interpreter(model_content=build_tflite(spec), num_threads=1,
                                            experimental_delegates=[d])
                interp.allocate_tensors()
                del interp
            except Exception:
                continue
            finally:
                d.close()
            for path in sorted(glob.glob(os.path.join(tmp, "*.program"))):
                prog = _core.Program.from_bytes(open(path, "rb").read())
                hw = _core.program_info(prog)["hw"]
                yield (f"tflite/{index}/{os.path.basename(path)}", prog, hw["cores"],
                       hw["sram_bytes"] // 1024)


DEFAULT_SWEEP = range(0, 120, 3)
DEFAULT_FUZZ = range(0, 80, 4)


@pytest.mark.parametrize("seed", DEFAULT_SWEEP)
def test_sweep_nets_replay_equals_step(seed):
    for name, prog, cores, kb in _sweep_programs([seed]):
        assert_equivalent(prog, cores, kb, seed)


@pytest.mark.parametrize("index", DEFAULT_FUZZ)
def test_fuzz_graphs_replay_equals_step(index):
    for name, prog, cores, kb in _delegate_programs([index]):
        assert_equivalent(prog, cores, kb, index)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(120))
def test_all_sweep_nets_replay_equals_step(seed):
    for name, prog, cores, kb in _sweep_programs([seed]):
        assert_equivalent(prog, cores, kb, seed, threads=(1, 2, 4))


@pytest.mark.slow
@pytest.mark.parametrize("index", range(80))
def test_all_fuzz_graphs_replay_equals_step(index):
    for name, prog, cores, kb in _delegate_programs([index]):
        assert_equivalent(prog, cores, kb, index, threads=(1, 2, 4))


def test_layers_merge_into_one_call_at_every_core_count():
    """Simulated cores cost no host time: a layer the compiler splits into many
    commands (SRAM tiles, channel groups, 1..32 cores) replays as one host call."""
    from test_compiler import OP_CASES

    for case in ("conv3x3-80x80x3-spec", "depthwise3x3-relu", "add-relu", "fc-3x200-relu"):
        net = OP_CASES[case]()
        for cores, kb in ((1, 64), (8, 16), (32, 4)):
            try:
                prog = _core.compile(net.g, cores=cores, sram_kb=kb)
            except nacc.UnsupportedError:
                continue
            s = _core.Runtime(cores=cores, sram_kb=kb).plan_summary(prog)
            assert s["plan"] and s["layer_calls"] == 1 and s["tile_calls"] == 0, (case, cores, s)
            assert s["merged_commands"] == s["kernel_commands"] >= 1, (case, cores, s)
            assert_equivalent(prog, cores, kb, threads=(1, 4))


def _two_activations():
    """RELU then LOGISTIC on a 1x8x8x16 input: the intermediate lives in scratch.
    Returns the Program, its commands without the final NPU_OP_STOP, the STOP,
    and the register values the stream's last command (the second activation's
    last tile, reading scratch) runs with."""
    from test_compiler import Net

    n = Net(3)
    x = n.input((1, 8, 8, 16))
    n.finish(n.unary("LOGISTIC", n.unary("RELU", x)))
    prog = _core.compile(n.g, cores=1, sram_kb=64)
    cmds = _core.decode_stream(_core.program_info(prog)["commands"])
    stop = cmds.pop()
    last = max(i for i, c in enumerate(cmds) if c["opcode"] == "NPU_OP_ACTIVATION")
    regs = {}
    for c in cmds[:last]:
        if c["opcode"] == "NPU_SET_REGISTER":
            regs[c["register"]] = c["payload"]
    return prog, cmds, stop, regs


def _write(reg, value):
    return {"opcode": "NPU_SET_REGISTER", "register": reg, "payload": value}


def _edited(prog, cmds):
    bad = _core.Program.from_bytes(prog.to_bytes())
    bad.commands = _core.encode_commands(cmds)
    return bad


def test_a_hand_written_layout_stream_replays():
    """A hand-written stream using the layout unit (NPU_OP_VNCHWCONV; compiled
    Programs use it for NCHW <-> NHWC, tests/test_layout_unit.py) has a plan:
    the replay runs the unit's loops on device memory and gives the
    interpreter's bits and counters. (repeat = 0 does nothing.) A stream the
    plan refuses is stepped: test_resident_input_rewritten_is_not_replayed_from_memory."""
    prog, cmds, stop, regs = _two_activations()
    layout = [{"opcode": "NPU_OP_KERNEL_WAIT", "param": 0},
              _write("VNCHWCONV_SRC", regs["NACC_IN_FM_DMA_ADDR"]),
              _write("VNCHWCONV_DST", regs["NACC_OUT_DMA_ADDR"]),
              _write("VNCHWCONV_SRC_BLOCK_STRIDE", 32), _write("VNCHWCONV_DST_BLOCK_STRIDE", 32)]
    nothing = _edited(prog, cmds + layout + [_write("VNCHWCONV_CFG", 0),
                                             {"opcode": "NPU_OP_VNCHWCONV"}, stop])
    assert _core.Runtime().plan_summary(nothing)["plan"]
    assert_equivalent(nothing, 1, 64)
    once = _edited(prog, cmds + layout + [_write("VNCHWCONV_CFG", 1), {"opcode": "NPU_OP_VNCHWCONV"},
                                          {"opcode": "NPU_OP_DMA_WAIT", "param": 0}, stop])
    s = _core.Runtime().plan_summary(once)
    assert s["plan"] and s["layout_ops"] == 1, s
    _, stats = _core.Runtime().run(once, _inputs(once, 0))
    assert stats["replayed"]
    assert_equivalent(once, 1, 64)


@pytest.mark.parametrize("execution", ["replay", "step"])
def test_faults_are_the_same(execution):
    """A stream that faults faults the same way in both modes (the plan build
    fails on it, so every run steps and raises)."""
    from test_compiler import OP_CASES, _bump, _mutated

    net = OP_CASES["conv3x3-80x80x3-spec"]()
    prog = _core.compile(net.g, cores=4, sram_kb=4, force_cores=4, force_mode="SPLIT_HEIGHT")
    bad = _core.Program.from_bytes(prog.to_bytes())
    bad.commands = _mutated(_core.program_info(prog)["commands"], "NACC_IN_FM_SPLIT",
                            _bump("IN_FM_SPLIT_LEFT_LEN", 1))
    x = _inputs(bad, 0)
    with pytest.raises(nacc.DeviceFault) as step_fault:
        _core.Runtime(cores=4, sram_kb=4, execution="step").run(bad, x)
    with pytest.raises(nacc.DeviceFault) as fault:
        _core.Runtime(cores=4, sram_kb=4, execution=execution).run(bad, x)
    assert str(fault.value) == str(step_fault.value)


@pytest.mark.parametrize("mode", ["SPLIT_HEIGHT", "SPLIT_KERNEL"])
def test_corrupted_split_registers_at_8_cores_replay_as_they_step(mode):
    """At 8 cores the plan build derives the middle cores of a height or kernel
    split from cores 1 and 6 where that is proven (kernel_plan.cc); stepping
    plans every core. Each corrupted register of the mutation list gives the
    same fault message, or the same bits and counters, both ways."""
    from test_compiler import MUTATIONS, OP_CASES, _mutated

    net = OP_CASES["conv3x3-80x80x3-spec"]()
    prog = _core.compile(net.g, cores=8, sram_kb=4, force_cores=8, force_mode=mode)
    words = _core.program_info(prog)["commands"]
    x = _inputs(prog, 0)
    assert_equivalent(prog, 8, 4, threads=(1,))
    faults = 0
    for register, change in MUTATIONS:
        bad = _core.Program.from_bytes(prog.to_bytes())
        try:
            bad.commands = _mutated(words, register, change)
        except ValueError:  # the field is 0 in this mode and cannot go below
            continue
        ref, ref_stats = _run(bad, x, 8, 4, "step")
        got, stats = _run(bad, x, 8, 4, "replay")
        if ref_stats is None:
            faults += 1
            assert got == ref, f"{register}: replay {got} vs step {ref}"
            continue
        assert stats is not None, f"{register}: replay faulted ({got}) where stepping did not"
        for a, b in zip(ref, got):
            assert np.array_equal(a, b), register
        for k in COUNTERS:
            assert stats[k] == ref_stats[k], (register, k)
    assert faults > 0


def test_resident_input_rewritten_is_not_replayed_from_memory():
    """An IFM reused with FM_UPD = 0 after a command wrote its source bytes
    holds the old bytes in SRAM; a plan reading them from memory would see the
    new ones, so the build refuses the stream and it is stepped (the
    interpreter's bits)."""
    prog, cmds, stop, regs = _two_activations()
    scratch, out = regs["NACC_IN_FM_DMA_ADDR"], regs["NACC_OUT_DMA_ADDR"]
    ctrl = dict(_core.decode_fields("NACC_CTRL", regs["NACC_CTRL"]))
    ctrl["FM_UPD"] = 0
    # The second activation again, in place on its input, then once more
    # reusing the IFM that command loaded (before it overwrote the source).
    bad = _edited(prog, cmds + [
        _write("NACC_OUT_DMA_ADDR", scratch), {"opcode": "NPU_OP_ACTIVATION"},
        _write("NACC_OUT_DMA_ADDR", out), _write("NACC_CTRL", _core.register_value("NACC_CTRL", ctrl)),
        {"opcode": "NPU_OP_ACTIVATION"}, stop])
    s = _core.Runtime().plan_summary(bad)
    assert s["plan"] is False and "resident IFM" in s["why"], s
    assert_equivalent(bad, 1, 64)


def _split_net():
    """Layers small in height, as MobileNetV2's last blocks: a 1x1 convolution
    and a depthwise one on a 7x7 map (channel parts balance better than 4 + 3
    rows), the global average pool (MEAN: a 7x7 depthwise window on one output
    pixel; at 8 cores a matrix product with a ones operand per core, whose
    core tiles run side by side), a fully connected layer (one row: channel
    parts) and an ADD (rows)."""
    from test_compiler import Net

    n = Net(5)
    x = n.input((1, 7, 7, 96))
    a = n.conv(x, 512, k=1, act="RELU6")
    b = n.conv(a, 0, k=3, depthwise=True, act="RELU6")
    s = n.binary("ADD", a, b)
    m = n.tensor((1, 1, 1, 512), 0.04, 3)
    n.g.add_op("MEAN", [n.ids[s][0]], [n.ids[m][0]], axes=[1, 2], keep_dims=True)
    f = n.fully_connected(n.reshape(m, (1, 512)), 1000)
    n.finish(f)
    return n


@pytest.mark.parametrize("cores, kb", [(1, 256), (8, 32)])
def test_host_thread_splits_replay_as_they_step(cores, kb):
    """A merged layer splits across host threads by output rows or by output
    channels, whichever balances the parts better (plan.cc choose_split); a
    depthwise channel part has a K area of its own and gathers its input
    channels; the core tiles of a command that did not merge run side by side.
    At 2 and 4 threads each kind is made, and the replay gives the stepped
    run's bits and counters."""
    net = _split_net()
    prog = _core.compile(net.g, cores=cores, sram_kb=kb)
    for threads in (2, 4):
        s = _core.Runtime(cores=cores, sram_kb=kb, threads=threads).plan_summary(prog)
        assert s["plan"], (threads, s)
        # The ADD splits by rows at 2 threads (at 4, 7 rows may be too few).
        assert s["row_split_calls"] >= (threads == 2), (threads, s)
        if cores == 1:  # the 1x1 and depthwise convolutions, the MEAN, the FC
            assert s["channel_split_calls"] == 4 and s["parallel_tile_steps"] == 0, (threads, s)
        else:  # the MEAN's per-core matrix products merge into one call, too small to split
            assert s["channel_split_calls"] == 3 and s["tile_calls"] == 0, (threads, s)
            assert s["parallel_tile_steps"] == 0, (threads, s)
    one = _core.Runtime(cores=cores, sram_kb=kb).plan_summary(prog)
    assert one["row_split_calls"] == one["channel_split_calls"] == one["parallel_tile_steps"] == 0, one
    for seed in range(3):
        assert_equivalent(prog, cores, kb, seed, threads=(1, 2, 4))


def test_unmerged_core_tiles_run_side_by_side():
    """A hand-written stream that runs a 3x3 convolution twice over the same
    output, each command split over 8 cores (mode 2): the layer's boxes cover
    every output twice, so it does not merge; each command's core tiles have
    disjoint outputs and run side by side on 2 and 4 host threads, with the
    stepped run's bits and counters."""
    import nacc_streams as ns
    from test_device import conv, rng_for

    L = conv(rng_for("side-by-side"), 24, 20, 16, 8)
    tile = ns.Tile(0, 24, 0, 20, mode=2, cores=8)
    prog, _ = ns.single_layer(L, [tile, tile], cores=8)
    s = _core.Runtime(cores=8, threads=2).plan_summary(prog)
    assert s["plan"] and s["layer_calls"] == 0 and s["tile_calls"] == 16, s
    assert s["parallel_tile_steps"] == 2, s
    assert_equivalent(prog, 8, 64, threads=(1, 2, 4))


@pytest.mark.parametrize("split", ["tiles", "mode1"])
def test_matmul_with_constant_b_merges(split):
    """A hand-written NPU_OP_MATMUL whose B lies in the constants, as row bands
    and channel groups on one core or split over 4 cores by columns (mode 1):
    the plan assembles B's columns [K, N] from the tiles' kernel data and runs
    the layer as one call, with the stepped run's bits and counters."""
    import nacc_streams as ns
    from test_device import matmul, rng_for, tiles_for

    L = matmul(rng_for("matmul-merge", split), 9, 75, 21)
    cores = 4 if split == "mode1" else 1
    tiles = (tiles_for(L, 4, 1, 3) if split == "tiles"
             else [ns.Tile(0, 9, 0, 1, mode=1, cores=4)])
    prog, _ = ns.single_layer(L, tiles, cores=cores)
    s = _core.Runtime(cores=cores).plan_summary(prog)
    assert s["plan"] and s["layer_calls"] == 1 and s["tile_calls"] == 0, s
    assert_equivalent(prog, cores, 64, threads=(1, 2))

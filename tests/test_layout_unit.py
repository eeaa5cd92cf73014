"""NCHW <-> NHWC inside the Program on the layout unit (issue 14 item 3;
docs/compiler.md "Layout conversion", docs/onnxruntime_ep.md "Layout and
types").

A TRANSPOSE between [1, C, H, W] and [1, H, W, C] of int8 (perm 0,2,3,1 and
0,3,1,2) runs as NPU_OP_VNCHWCONV commands (the scatter_vnchwconv unit of
NACC_SPEC §7 on device memory), with NPU_OP_DMA_START copies where a tensor's
pitch is not a multiple of 32 bytes and an identity pool pass gathering (or
scattering) the pixels when C is not a multiple of 32. The ONNX Runtime EP
puts one such TRANSPOSE at every rank-4 int8 / uint8 partition input and
output, so the host only copies the caller's bytes.

- IR level: every output byte is numpy's transpose, at 1 / 8 cores and 16 KB
  SRAM, for odd channel counts, C not a multiple of 32, C and H*W multiples of
  32 (no staging at all), H*W not a multiple of 32, more than 255 iterations;
  stepping and the replay plan agree bit for bit and counter for counter; the
  degenerate shapes (C = 1, H*W = 1) do not use the unit.
- Faults: a corrupted VNCHWCONV register of a compiled Program faults the
  same way stepped and replayed.
- EP: whole models (Conv / Relu / MaxPool / Add QDQ units, int8 and uint8, C =
  3, 5, 33, 1x1 maps) bit-exact to the CPU EP with no host layout conversion
  (run_stats' host_layout_conversions), and the same bits with
  boundary_layout=host.
"""
import numpy as np
import pytest

import ir_builders as b
import nacc
from nacc import _core
from test_replay import _edited, _inputs, _run, _write, assert_equivalent

CONFIGS = [(1, 64), (8, 64), (4, 16)]

# (id, NCHW shape): the padded areas each shape needs (docs/compiler.md).
SHAPES = [
    ("c3-odd-hw", (1, 3, 5, 7)),          # rows staged per channel, gather
    ("c5-hw32", (1, 5, 4, 8)),            # rows in one copy, gather
    ("c33-two-slabs", (1, 33, 3, 11)),    # a second slab of 1 channel
    ("c17-half", (1, 17, 6, 6)),          # the upper channel half of a slab
    ("c32-hw64", (1, 32, 8, 8)),          # no staging: rows and pixels direct
    ("c64-7x7", (1, 64, 7, 7)),           # pixels staged (P > H*W), no gather
    ("c40-big", (1, 40, 92, 96)),         # 276 iterations: two commands per half
]


def _layout_graph(nchw, to_nhwc, dtype="int8"):
    n, c, h, w = nchw
    return b.transpose(in_shape=nchw if to_nhwc else (n, h, w, c),
                       perm=(0, 2, 3, 1) if to_nhwc else (0, 3, 1, 2), dtype=dtype)


def _opcodes(prog):
    return [c["opcode"] for c in _core.decode_stream(_core.program_info(prog)["commands"])]


@pytest.mark.parametrize("to_nhwc", [True, False], ids=["to_nhwc", "to_nchw"])
@pytest.mark.parametrize("name,nchw", SHAPES, ids=[s[0] for s in SHAPES])
def test_layout_transpose_on_the_unit_exact(name, nchw, to_nhwc):
    g, _ = _layout_graph(nchw, to_nhwc)
    rng = np.random.default_rng(sum(nchw))
    n, c, h, w = nchw
    x = rng.integers(-128, 128, nchw if to_nhwc else (n, h, w, c), dtype=np.int64).astype(np.int8)
    want = x.transpose(0, 2, 3, 1) if to_nhwc else x.transpose(0, 3, 1, 2)
    for cores, kb in CONFIGS:
        prog = _core.compile(g, cores=cores, sram_kb=kb, layout_lowering="vnchwconv")
        ops = _opcodes(prog)
        assert "NPU_OP_VNCHWCONV" in ops
        info = _core.program_info(prog)
        assert {o["lowering"] for o in info["ops"]} == {"vnchwconv"}
        outs, stats = _core.Runtime(cores=cores, sram_kb=kb).run(prog, [x])
        got = np.asarray(outs[0]).reshape(want.shape)
        assert np.array_equal(got, want), (cores, kb, int((got != want).sum()))
        assert stats["dma_ops"] >= ops.count("NPU_OP_VNCHWCONV")
        if cores == 1 and kb == 64:
            s = _core.Runtime(cores=cores, sram_kb=kb).plan_summary(prog)
            assert s["plan"] and s["layout_ops"] == ops.count("NPU_OP_VNCHWCONV"), s
            assert_equivalent(prog, cores, kb, threads=(1, 2))


def test_staging_only_where_the_pitches_need_it():
    """C and H*W multiples of 32: the unit reads and writes the tensors
    themselves (no DMA copy, no pool pass); C = 5 at H*W = 32: the rows in one
    copy, a pool pass gathers the pixels; C = 64 at H*W = 49: the rows copied
    one by one to pitch 64, the pixels out of the staging slab in one copy;
    C = 3 at H*W = 35: three row copies and the gather."""
    for nchw, copies, kernels in [((1, 32, 8, 8), 0, 0), ((1, 5, 4, 8), 1, 1),
                                  ((1, 64, 7, 7), 65, 0), ((1, 3, 5, 7), 3, 1)]:
        g, _ = _layout_graph(nchw, True)
        ops = _opcodes(_core.compile(g, layout_lowering="vnchwconv"))
        assert ops.count("NPU_OP_DMA_START") == copies, (nchw, ops)
        assert (ops.count("NPU_OP_POOL") > 0) == kernels, (nchw, ops)  # a pass per core


# (NCHW shape, cores, the path the estimate must choose): few channels pay
# the unit's 16-channel iterations for little data, the copy passes move each
# byte alone, a pass per channel or per loop of the TRANSPOSE
# (docs/compiler.md "Layout conversion").
# The copy passes use every core's DMA port, the unit one queue: on 4 cores
# they win up to a few hundred channels.
CHOICES = [((1, 3, 56, 56), 4, "transpose_copy"), ((1, 3, 5, 7), 1, "transpose_copy"),
           ((1, 64, 28, 28), 4, "transpose_copy"), ((1, 16, 28, 28), 1, "vnchwconv"),
           ((1, 33, 6, 6), 1, "vnchwconv"), ((1, 512, 7, 7), 4, "vnchwconv")]


@pytest.mark.parametrize("to_nhwc", [True, False], ids=["to_nhwc", "to_nchw"])
@pytest.mark.parametrize("nchw,cores,cheaper", CHOICES, ids=[str(c[0][1]) + "ch-" + str(c[0][2]) for c in CHOICES])
def test_layout_takes_the_cheaper_device_path(nchw, cores, cheaper, to_nhwc):
    """Both device paths are numpy's transpose, stepped = replayed; the
    compiler's choice (auto) is the path with the fewer device cycles."""
    g, _ = _layout_graph(nchw, to_nhwc)
    n, c, h, w = nchw
    x = np.random.default_rng(c * h).integers(-128, 128, nchw if to_nhwc else (n, h, w, c),
                                              dtype=np.int64).astype(np.int8)
    want = x.transpose(0, 2, 3, 1) if to_nhwc else x.transpose(0, 3, 1, 2)
    cycles = {}
    for kind in ("vnchwconv", "transpose_copy", "auto"):
        prog = _core.compile(g, cores=cores, layout_lowering=kind)
        lowering = {o["lowering"] for o in _core.program_info(prog)["ops"]}
        assert lowering == ({cheaper} if kind == "auto" else {kind}), (kind, lowering)
        assert ("NPU_OP_VNCHWCONV" in _opcodes(prog)) == (lowering == {"vnchwconv"})
        outs, stats = _core.Runtime(cores=cores).run(prog, [x])
        assert np.array_equal(np.asarray(outs[0]).reshape(want.shape), want), kind
        cycles[kind] = stats["cycles"]
        if kind != "auto":
            assert_equivalent(prog, cores, 64)
    assert cycles["auto"] == cycles[cheaper] < cycles[
        "vnchwconv" if cheaper == "transpose_copy" else "transpose_copy"], cycles


# int16 (C0 = 16, the unit's b16 form): (NCHW shape, what it exercises).
SHAPES16 = [
    ((1, 3, 5, 7), "rows staged per channel, gather"),
    ((1, 16, 4, 4), "no staging: C and H*W multiples of 16"),
    ((1, 24, 6, 6), "a second slab of 8 channels, pixels and rows staged"),
    ((1, 20, 40, 112), "280 iterations: two commands per slab"),
]


@pytest.mark.parametrize("to_nhwc", [True, False], ids=["to_nhwc", "to_nchw"])
@pytest.mark.parametrize("nchw,what", SHAPES16, ids=["x".join(map(str, s[0][1:])) for s in SHAPES16])
def test_int16_layout_both_paths_exact(nchw, what, to_nhwc):
    """int16 NCHW <-> NHWC: the unit's b16 form and the copy passes over each
    element's two bytes are numpy's transpose (full int16 range) at 1 / 8
    cores and 16 KB, stepped = replayed."""
    g, _ = _layout_graph(nchw, to_nhwc, "int16")
    n, c, h, w = nchw
    x = np.random.default_rng(c + h).integers(-32768, 32768, nchw if to_nhwc else (n, h, w, c),
                                              dtype=np.int64).astype(np.int16)
    x.reshape(-1)[:2] = (-32768, 32767)
    want = x.transpose(0, 2, 3, 1) if to_nhwc else x.transpose(0, 3, 1, 2)
    for kind in ("vnchwconv", "transpose_copy", "auto"):
        for cores, kb in CONFIGS:
            prog = _core.compile(g, cores=cores, sram_kb=kb, layout_lowering=kind)
            ops = _opcodes(prog)
            if kind == "vnchwconv":
                cfg = [c["payload"] for c in _core.decode_stream(_core.program_info(prog)["commands"])
                       if c["opcode"] == "NPU_SET_REGISTER" and c["register"] == "VNCHWCONV_CFG"]
                assert cfg and all((v >> 8) & 3 == 1 for v in cfg), what  # DTYPE = b16
            else:
                assert kind == "auto" or "NPU_OP_VNCHWCONV" not in ops
            outs, _ = _core.Runtime(cores=cores, sram_kb=kb).run(prog, [x.view(np.int8)])
            got = np.asarray(outs[0]).reshape(want.shape)
            assert np.array_equal(got, want), (kind, cores, kb, what)
            if cores == 1 and kb == 64 and kind != "auto":
                assert_equivalent(prog, cores, kb)


def test_layout_lowering_option_rejects_bad_value():
    g, _ = _layout_graph((1, 3, 5, 7), True)
    with pytest.raises(ValueError, match="layout_lowering"):
        _core.compile(g, layout_lowering="sideways")


@pytest.mark.parametrize("nchw", [(1, 1, 5, 7), (1, 40, 1, 1)])
def test_degenerate_shapes_do_not_use_the_unit(nchw):
    """C = 1 or H*W = 1: NCHW and NHWC hold the same bytes (the copy passes)."""
    g, _ = _layout_graph(nchw, True)
    prog = _core.compile(g)
    assert "NPU_OP_VNCHWCONV" not in _opcodes(prog)
    x = np.arange(np.prod(nchw), dtype=np.int64).astype(np.int8).reshape(nchw)
    outs, _ = _core.Runtime().run(prog, [x])
    assert np.array_equal(np.asarray(outs[0]).reshape(-1), x.transpose(0, 2, 3, 1).reshape(-1))


@pytest.mark.parametrize("edit,match", [
    ({"DTYPE": 3}, "DTYPE = 3"),
    ({"DTYPE": 1}, "exist only for b8"),
    ("src+8", "multiples of 32"),
    ("block-stride+1", "multiples of 32"),
    ("repeat-max", "bus read error"),
    ("dst-stride-max", "bus write error"),
])
def test_corrupted_layout_registers_fault_alike_stepped_and_replayed(edit, match):
    """A corrupted VNCHWCONV_* write of a compiled Program: the same fault (a
    bus error / parameter fault, never a wrong answer) stepped and replayed."""
    g, _ = _layout_graph((1, 5, 8, 16), True)  # 4 iterations per command
    prog = _core.compile(g, layout_lowering="vnchwconv")
    cmds = _core.decode_stream(_core.program_info(prog)["commands"])
    # The first write of the register; for b16, the first with a high half set.
    reg = {"src+8": "VNCHWCONV_SRC", "block-stride+1": "VNCHWCONV_SRC_BLOCK_STRIDE",
           "dst-stride-max": "VNCHWCONV_STRIDE"}.get(edit if isinstance(edit, str) else "",
                                                    "VNCHWCONV_CFG")
    i = next(k for k, c in enumerate(cmds) if c["opcode"] == "NPU_SET_REGISTER" and
             c["register"] == reg and (edit != {"DTYPE": 1} or c["payload"] & 0x3000))
    value = cmds[i]["payload"]
    if edit == "src+8":
        value += 8
    elif edit == "block-stride+1":
        value += 1
    elif edit == "dst-stride-max":
        value |= 0xFFFF0000
    elif edit == "repeat-max":
        value = (value & ~0xFF) | 0xFF
    else:
        value = (value & ~0x300) | (edit["DTYPE"] << 8)
    bad = _edited(prog, cmds[:i] + [_write(cmds[i]["register"], value)] + cmds[i + 1:])
    x = [np.zeros(5 * 8 * 16, np.int8)]
    for execution in ("step", "replay"):
        with pytest.raises(nacc.DeviceFault, match=match):
            _core.Runtime(execution=execution).run(bad, x)
    assert_equivalent(bad, 1, 64)


# The copy forms' host replay (docs/host_speed.md "Copy passes"): every
# identity copy pass of a layer is one strided byte copy of the plan, proven
# equal to stepping. (C, H, W, cores): one-byte pixels at 224x224 and 56x56,
# odd sizes whose row bands and column blocks are uneven, C = 1 (a plain
# copy); 16 channels and more with sizes off the 16 x 16 blocks of the
# replay's byte transpose.
COPY_CASES = [(1, 5, 7, 1), (3, 224, 224, 8), (16, 224, 224, 8), (3, 224, 224, 1),
              (3, 56, 56, 1), (8, 56, 56, 8), (16, 56, 56, 1), (8, 13, 11, 8), (3, 7, 9, 1),
              (17, 9, 11, 4), (20, 13, 11, 8)]


@pytest.mark.parametrize("to_nhwc", [True, False], ids=["to_nhwc", "to_nchw"])
@pytest.mark.parametrize("c,h,w,cores", COPY_CASES, ids=[f"c{c[0]}-{c[1]}x{c[2]}-{c[3]}core" for c in COPY_CASES])
def test_copy_forms_replay_as_strided_copies(c, h, w, cores, to_nhwc):
    """The copy passes (and the unit form's gather / scatter pass) replay as
    strided copies, not pool calls: numpy's transpose, the same bytes and
    counters stepped and replayed at 1 and 2 host threads; the tiles and
    passes of each conversion join into one copy."""
    g, _ = _layout_graph((1, c, h, w), to_nhwc)
    x = np.random.default_rng(c * h + w).integers(-128, 128, c * h * w, dtype=np.int64).astype(np.int8)
    shape = (1, c, h, w) if to_nhwc else (1, h, w, c)
    want = x.reshape(shape).transpose((0, 2, 3, 1) if to_nhwc else (0, 3, 1, 2))
    kinds = ("transpose_copy",) if c == 1 or h * w < 32 else ("transpose_copy", "vnchwconv")
    for kind in kinds:
        prog = _core.compile(g, cores=cores, layout_lowering=kind)
        outs, _ = _core.Runtime(cores=cores).run(prog, [x])
        assert np.array_equal(np.asarray(outs[0]).reshape(want.shape), want), kind
        s = _core.Runtime(cores=cores).plan_summary(prog)
        assert s["plan"] and s["tile_calls"] == 0 and s["layer_calls"] == 0, (kind, s)
        assert s["copy_pass_commands"] == s["kernel_commands"] > 0, (kind, s)
        assert s["strided_copies"] == 1, (kind, s)  # every tile and pass joined
        assert_equivalent(prog, cores, 64)


@pytest.mark.parametrize("nchw", [(1, 3, 56, 56), (1, 17, 24, 40)], ids=["c3", "c17-transpose"])
def test_corrupted_copy_pass_registers_change_the_replay_alike(nchw):
    """A corrupted register of one pass of a joined copy (its input or output
    address moved a byte, or ACT_MAX clamping every pass) changes the output,
    or faults (the input moved past its buffer), stepped and replayed alike:
    the plan's copies come from the decoded commands (the moved pass a copy
    of its own), and a pass that is no identity copy runs on the pool unit.
    (17 channels: the last pass moved, the other 16 in the replay's 16 x 16
    byte transpose.)"""
    g, _ = _layout_graph(nchw, True)
    prog = _core.compile(g, cores=8, layout_lowering="transpose_copy")
    assert _core.Runtime(cores=8).plan_summary(prog)["strided_copies"] == 1
    cmds = _core.decode_stream(_core.program_info(prog)["commands"])
    x = _inputs(prog, 3)
    good, _ = _run(prog, x, 8, 64, "replay")

    def nth_write(reg, n):
        return [k for k, c in enumerate(cmds) if c["opcode"] == "NPU_SET_REGISTER" and
                c["register"] == reg][n]

    # (register, which write, the change, the fault it must raise or None)
    for reg, n, change, fault in [("NACC_IN_FM_DMA_ADDR", -1, lambda v: v - 1, None),
                                  ("NACC_IN_FM_DMA_ADDR", -1, lambda v: v + 1, "bus read error"),
                                  ("NACC_OUT_DMA_ADDR", -1, lambda v: v - 1, None),
                                  ("NACC_OUT_DMA_ADDR", -1, lambda v: v + 1, "bus write error"),
                                  ("NACC_ACT_MAX", 0, lambda v: 100, None)]:
        i = nth_write(reg, n)
        bad = _edited(prog, cmds[:i] + [_write(reg, change(cmds[i]["payload"]))] + cmds[i + 1:])
        assert_equivalent(bad, 8, 64)
        got, _ = _run(bad, x, 8, 64, "replay")
        if fault:
            assert got[0] == "fault" and fault in got[1], got
            continue
        assert isinstance(got, list), (reg, got)
        assert not np.array_equal(got[0], good[0]), reg
        s = _core.Runtime(cores=8).plan_summary(bad)
        assert s["plan"], (reg, s)
        if reg == "NACC_IN_FM_DMA_ADDR":  # the moved pass a copy of its own
            assert s["copy_pass_commands"] == s["kernel_commands"] and s["strided_copies"] == 2, s
        else:  # writes that overlap, or clamp: pool calls
            assert s["copy_pass_commands"] < s["kernel_commands"], s


# ---- the ONNX Runtime EP ----------------------------------------------------------

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
import nacc.onnxruntime as nort  # noqa: E402
import onnx_models as om  # noqa: E402
from test_ep_layout import _G, _quantized  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Specified .providers.:UserWarning")


def _cnn(c_in, c_mid, hw, one_by_one=False, batch=1):
    """Conv -> Relu (-> MaxPool to 1x1) -> Conv with `c_mid` output channels:
    the partition's input has c_in channels, its output c_mid."""
    g = _G(7)
    h, w = hw
    x = g.conv("x", c_in, c_mid)
    if one_by_one:
        x = g.op("MaxPool", [x], kernel_shape=[h, w])
        h = w = 1
    y = g.op("Add", [g.conv(x, c_mid, c_mid, k=1), x])
    return g.model(y, (batch, c_in, *hw), (batch, c_mid, h, w))


EP_CASES = [("c3-to-c5", 3, 5, (7, 9), False, 1), ("c33", 4, 33, (6, 6), False, 1),
            ("c32-hw64", 32, 32, (8, 8), False, 1), ("c8-to-1x1", 8, 12, (5, 5), True, 1),
            ("batch2-c3-to-c20", 3, 20, (8, 8), False, 2), ("batch2-c8-to-1x1", 8, 12, (5, 5), True, 2)]


@pytest.fixture(scope="module")
def registered():
    nort.register()


@pytest.mark.parametrize("dt", ["int8", "uint8"])
@pytest.mark.parametrize("name,c_in,c_mid,hw,one,batch", EP_CASES, ids=[c[0] for c in EP_CASES])
def test_ep_model_converts_layout_on_the_device(registered, name, c_in, c_mid, hw, one, batch, dt):
    """Bit-exact to the CPU EP with every boundary converted inside the
    Program (a batch: per image, the batched Program's images)."""
    model = _quantized(_cnn(c_in, c_mid, hw, one, batch), dt)
    before = nort.run_stats()
    differ, total, rep = om.compare_with_cpu_ep(model, "all", seeds=(1, 2))
    assert differ == 0, f"{differ}/{total} elements differ"
    assert len(rep["partitions"]) == 1, rep["partitions"]
    after = nort.run_stats()
    ran = {k: v for k, v in after.items() if v["runs"] != before.get(k, {}).get("runs", 0)}
    assert ran, after
    for k, v in ran.items():
        assert v["host_layout_conversions"] == before.get(k, {}).get("host_layout_conversions", 0)
        kinds = [o["kind"] for o in v["ops"] if o.get("op", -1) >= 0]
        # One TRANSPOSE at the input and one at the output; a [1, C, 1, 1]
        # output holds the same bytes in both layouts and is copied.
        assert kinds.count("TRANSPOSE") == (1 if one else 2), kinds


@pytest.mark.parametrize("dt", ["int8", "uint8"])
def test_ep_host_layout_option_same_bits(registered, dt):
    """boundary_layout=host converts on the host (counted) and gives the same
    bits as the device's conversion."""
    model = _quantized(_cnn(3, 5, (7, 9)), dt)
    so_level, ep_level = om.optimization_levels()["all"]
    outs = {}
    for where in ("device", "host"):
        before = nort.run_stats()
        s = om.session(model, "nacc", {"ort_optimization_level": ep_level, "cores": 2,
                                       "boundary_layout": where}, opt_level=so_level)
        outs[where] = s.run(None, om.input_feeds(model, seed=4)[0])
        after = nort.run_stats()
        conv = sum(v["host_layout_conversions"] -
                   before.get(k, {}).get("host_layout_conversions", 0) for k, v in after.items())
        assert conv == (0 if where == "device" else 2), (where, conv)
    for a, c in zip(outs["device"], outs["host"]):
        assert np.array_equal(a, c)


def test_ep_int16_boundaries_on_the_device(registered):
    """int16_activations=1, batch 2: the int16 Conv and MaxPool partitions
    convert their int16 NCHW boundaries inside the Program (b16 layout unit
    or copy passes, by the estimate), with the same bits as the host's
    conversion (the int16 Conv itself is within one step of the CPU EP by
    design, docs/onnxruntime_ep.md "16-bit activations", tested there)."""
    g = _G(34)
    x = g.conv("x", 3, 20, k=1)
    y = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    m = om.quantize(g.model(y, (2, 3, 8, 6), (2, 20, 4, 3)), activation="int16", weight="int8",
                    extra_options={"ActivationSymmetric": True})
    feeds = om.input_feeds(m, seed=1)[0]
    want = om.session(m, ["CPUExecutionProvider"]).run(None, feeds)[0]
    got = {}
    for where in ("device", "host"):
        before = nort.run_stats()
        s = om.session(m, "nacc", {"int16_activations": "1", "min_partition_macs": "0",
                                   "boundary_layout": where})
        got[where] = s.run(None, feeds)[0]
        after = nort.run_stats()
        ran = [v for k, v in after.items() if v["runs"] != before.get(k, {}).get("runs", 0)]
        assert len(ran) == 2, after
        for v in ran:
            kinds = [o["kind"] for o in v["ops"] if o.get("op", -1) >= 0]
            assert v["host_layout_conversions"] == (0 if where == "device" else 2), (where, v)
            assert kinds.count("TRANSPOSE") == (2 if where == "device" else 0), kinds
    assert got["device"].shape == want.shape
    assert np.array_equal(got["device"], got["host"])


def test_ep_option_rejects_bad_value(registered):
    model = _quantized(_cnn(3, 5, (7, 9)), "int8")
    with pytest.raises(Exception, match="boundary_layout"):
        om.session(model, "nacc", {"boundary_layout": "sideways"})

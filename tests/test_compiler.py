"""The compiler (csrc/compiler, docs/compiler.md): golden tile plans and register
values, structural checks of every compiled stream (it decodes, its tiles cover
each output exactly once, its SRAM buffers fit their areas), records, the ops it
declines, and end to end on the simulated device: Program output == the unit's
output == TFLite BUILTIN_REF for every op kind at every core count and at SRAM
sizes that force each kind of split; a chain in one Program; DMA bytes and
cycles against SRAM size and core count; corrupted streams never pass silently.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np
import pytest

from nacc import _core
import nacc
from quant_helpers import activation_range, conv_multipliers, fc_effective_scales
from tflite_builder import GraphBuilder, QTensor, run_tflite

KERNEL_OPCODES = {"NPU_OP_CONV", "NPU_OP_DEPTHWISE", "NPU_OP_POOL", "NPU_OP_ELEMENTWISE",
                  "NPU_OP_FULLY_CONNECTED", "NPU_OP_ACTIVATION", "NPU_OP_MATMUL"}
REGISTERS = {r["name"]: r for r in _core.register_table()}
COMPUTE_REGS = [r["name"] for r in _core.register_table()
                if r["bank"] == "compute" and r["stream_writable"]] if "bank" in next(
    iter(REGISTERS.values())) else [n for n in REGISTERS if n.startswith("NACC_")]


# ---------------------------------------------------------------------------
# Models: one description, built as a nacc IR graph and as a TFLite model.

class Net:
    """A model built twice from one description: a nacc IR Graph (what the
    compiler takes) and a TFLite flatbuffer (the BUILTIN_REF oracle)."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.g = _core.Graph()
        self.tb = GraphBuilder()
        self.ids: dict = {}      # name -> (IR id, TFLite id)
        self.shapes: dict = {}
        self.quant: dict = {}    # name -> (scale, zero point)
        self.data: dict = {}     # name -> constant data or None
        self.axis: dict = {}
        self.ops: list = []      # (kind, inputs, output, ir attrs)
        self.inputs: list = []
        self.outputs: list = []
        self.n = 0

    def tensor(self, shape, scale, zp, data=None, dtype="int8", axis=0, name=None):
        name = name or f"t{self.n}"
        self.n += 1
        ir_id = self.g.add_tensor(name, list(shape), dtype, scales=scale, zero_points=zp,
                                  axis=axis, data=data)
        tfl_id = self.tb.add_tensor(QTensor(list(shape), dtype, scale, zp, axis, data, name))
        self.ids[name] = (ir_id, tfl_id)
        self.shapes[name] = tuple(shape)
        self.quant[name] = (scale, zp)
        self.data[name] = data
        self.axis[name] = axis
        return name

    def input(self, shape, scale=0.05, zp=-3):
        name = self.tensor(shape, scale, zp)
        self.inputs.append(name)
        return name

    def op(self, kind, inputs, out, ir_attrs=None, options=None, version=1, tfl_inputs=None):
        self.ops.append((kind, list(inputs), out, dict(ir_attrs or {})))
        self.g.add_op(kind, [self.ids[i][0] if i else -1 for i in inputs], [self.ids[out][0]],
                      name=f"{kind.lower()}{self.n}", **(ir_attrs or {}))
        ins = tfl_inputs if tfl_inputs is not None else inputs
        self.tb.add_op(kind, [self.ids[i][1] if i else -1 for i in ins], [self.ids[out][1]],
                       options, version)
        return out

    # ---- ops ----
    def conv(self, x, out_ch, k=3, stride=1, padding="SAME", act="NONE", depthwise=False,
             multiplier=1, out_scale=0.1, out_zp=5):
        _, h, w, c = self.shapes[x]
        kh, kw = (k, k) if isinstance(k, int) else k
        sh, sw = (stride, stride) if isinstance(stride, int) else stride
        if depthwise:
            out_ch = c * multiplier
            wshape, axis = (1, kh, kw, out_ch), 3
        else:
            wshape, axis = (out_ch, kh, kw, c), 0
        wd = self.rng.integers(-127, 128, wshape).astype(np.int8)
        ws = [float(s) for s in self.rng.uniform(0.002, 0.02, out_ch).astype(np.float32)]
        w_ = self.tensor(wshape, ws, [0] * out_ch, data=wd, axis=axis)
        in_scale = self.quant[x][0]
        bd = self.rng.integers(-3000, 3000, out_ch).astype(np.int32)
        b_ = self.tensor((out_ch,), [in_scale * s for s in ws], [0] * out_ch, data=bd,
                         dtype="int32")
        pads = _core.tflite_padding(padding, h, w, kh, kw, sh, sw, 1, 1)
        oh = _core.window_output_size(h, kh, sh, pads[0], pads[1])
        ow = _core.window_output_size(w, kw, sw, pads[2], pads[3])
        y = self.tensor((1, oh, ow, out_ch), out_scale, out_zp)
        kind = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
        attrs = dict(padding=padding, stride_h=sh, stride_w=sw, activation=act)
        options = dict(padding=padding, stride_h=sh, stride_w=sw, fused_activation_function=act)
        if depthwise:
            attrs["depth_multiplier"] = multiplier
            options["depth_multiplier"] = multiplier
        return self.op(kind, [x, w_, b_], y, attrs, options, version=3)

    def fully_connected(self, x, units, act="NONE", per_channel=True):
        k = self.shapes[x][-1]
        m = int(np.prod(self.shapes[x])) // k
        wd = self.rng.integers(-127, 128, (units, k)).astype(np.int8)
        ws = ([float(s) for s in self.rng.uniform(0.002, 0.02, units).astype(np.float32)]
              if per_channel else 0.01)
        w_ = self.tensor((units, k), ws, [0] * units if per_channel else 0, data=wd)
        in_scale = self.quant[x][0]
        bscale = [in_scale * s for s in ws] if per_channel else in_scale * ws
        b_ = self.tensor((units,), bscale, [0] * units if per_channel else 0,
                         data=self.rng.integers(-3000, 3000, units).astype(np.int32),
                         dtype="int32")
        y = self.tensor((m, units), 0.2, -7)
        return self.op("FULLY_CONNECTED", [x, w_, b_], y, dict(activation=act),
                       dict(fused_activation_function=act), version=4)

    def pool(self, x, kind="MAX_POOL_2D", k=2, stride=2, padding="VALID", act="NONE"):
        _, h, w, c = self.shapes[x]
        pads = _core.tflite_padding(padding, h, w, k, k, stride, stride, 1, 1)
        oh = _core.window_output_size(h, k, stride, pads[0], pads[1])
        ow = _core.window_output_size(w, k, stride, pads[2], pads[3])
        s, z = self.quant[x]
        y = self.tensor((1, oh, ow, c), s, z)
        return self.op(kind, [x], y,
                       dict(padding=padding, stride_h=stride, stride_w=stride, kernel_h=k,
                            kernel_w=k, activation=act),
                       dict(padding=padding, stride_h=stride, stride_w=stride, filter_height=k,
                            filter_width=k, fused_activation_function=act), version=2)

    def binary(self, kind, a, b, act="NONE", out_scale=0.09, out_zp=2):
        shape = np.broadcast_shapes(self.shapes[a], self.shapes[b])
        y = self.tensor(shape, out_scale, out_zp)
        return self.op(kind, [a, b], y, dict(activation=act), dict(fused_activation_function=act))

    def constant(self, shape, scale=0.04, zp=1):
        return self.tensor(shape, scale, zp,
                           data=self.rng.integers(-128, 128, shape).astype(np.int8))

    def unary(self, kind, x):
        scale, zp = {"LOGISTIC": (1 / 256, -128), "TANH": (1 / 128, 0)}.get(kind, (0.06, -10))
        y = self.tensor(self.shapes[x], scale, zp)
        return self.op(kind, [x], y)

    def reshape(self, x, shape):
        s, z = self.quant[x]
        y = self.tensor(shape, s, z)
        return self.op("RESHAPE", [x], y, options=dict(new_shape=list(shape)))

    def finish(self, *outputs):
        self.outputs = list(outputs)
        self.g.inputs = [self.ids[i][0] for i in self.inputs]
        self.g.outputs = [self.ids[o][0] for o in self.outputs]
        return self

    def tflite(self) -> bytes:
        return self.tb.build([self.ids[i][1] for i in self.inputs],
                             [self.ids[o][1] for o in self.outputs])

    def random_inputs(self, seed=1):
        rng = np.random.default_rng(seed)
        return [rng.integers(-128, 128, self.shapes[i]).astype(np.int8) for i in self.inputs]


def conv_net(h=80, w=80, c=3, out_ch=8, k=3, stride=1, padding="SAME", act="NONE", seed=0,
             depthwise=False, multiplier=1):
    n = Net(seed)
    x = n.input((1, h, w, c))
    return n.finish(n.conv(x, out_ch, k, stride, padding, act, depthwise, multiplier))


# ---------------------------------------------------------------------------
# Reading a compiled stream back.

def info(program):
    return _core.program_info(program)


def kernel_commands(program):
    """Every kernel command of the stream with the compute-bank fields it runs
    with (replaying NPU_SET_REGISTER from the reset values)."""
    regs = {name: r["reset"] for name, r in REGISTERS.items()}
    out = []
    for c in _core.decode_stream(info(program)["commands"]):
        if c["opcode"] == "NPU_SET_REGISTER":
            regs[c["register"]] = c["payload"]
        elif c["opcode"] in KERNEL_OPCODES:
            f = {"opcode": c["opcode"], "word": c["word"]}
            for name in COMPUTE_REGS:
                f.update(_core.decode_fields(name, regs[name]))
            out.append(f)
    return out


def core_tiles(k):
    """(rows, cols, out-channel range, input rows, input cols) of each core of a
    kernel command, by docs/device_model.md §3 and §5 (modes 1, 2 and 3)."""
    n = k["BROADCAST_NUM"] + 1
    mode = k["BROADCAST_MODE"]
    y0, h = k["OUT_FM_START_SPLIT_H_OFFSET"], k["OUT_FM_SPLIT_LEN"]
    x0, w = k["OUT_FM_SPLIT_LEFT_LEN"], k["OUT_FM_SPLIT_WIDTH"]
    iy0, ih = k["IN_FM_START_SPLIT_H_OFFSET"], k["IN_FM_SPLIT_LEFT_LEN"]
    ix0, iw = k["IN_FM_START_SPLIT_W_OFFSET"], k["IN_FM_SPLIT_WIDTH"]
    oc = k["OUT_FM_CH"]
    tiles = []
    if mode == 3:  # SPLIT_2D (project extension): core g * R + r
        groups, pieces = k["SPLIT_2D_GROUPS"] + 1, k["SPLIT_2D_ROWS"] + 1
        avg, ov = k["OUT_FM_SPLIT_AVG_HEIGHT"], k["OUT_FM_SPLIT_OV_HEIGHT"]
        e = k["EU_BIAS_START_OFFSET"]
        for g in range(groups):
            chans = (g * e, oc - e * (groups - 1) if g == groups - 1 else e)
            for r in range(pieces):
                last = r == pieces - 1
                rows = (y0 + r * avg, ov if last else avg)
                irows = (iy0 + r * k["IN_DMA_UNICAST_AVG_OFFSET"],
                         k["IN_DMA_UNICAST_OV_OFFSET"] if last else ih)
                tiles.append((rows, (x0, w), chans, irows, (ix0, iw)))
        return tiles
    for i in range(n):
        last = i == n - 1
        if mode == 2:
            avg, ov = k["OUT_FM_SPLIT_AVG_HEIGHT"], k["OUT_FM_SPLIT_OV_HEIGHT"]
            rows = (y0 + i * avg, ov if last else avg)
            irows = (iy0 + i * k["IN_DMA_UNICAST_AVG_OFFSET"],
                     k["IN_DMA_UNICAST_OV_OFFSET"] if last else ih)
            chans = (0, oc)
        elif mode == 1:
            e = k["EU_BIAS_START_OFFSET"]
            rows, irows = (y0, h), (iy0, ih)
            chans = (i * e, oc - e * (n - 1) if last else e)
        else:
            rows, irows, chans = (y0, h), (iy0, ih), (0, oc)
        tiles.append((rows, (x0, w), chans, irows, (ix0, iw)))
    return tiles


def check_stream(net, program, hw_sram):
    """Structural checks every compiled stream must pass; returns the kernels."""
    ks = kernel_commands(program)   # decodes and validates
    graph_ops = [net.g.op(i) for i in range(net.g.num_ops)]
    rec = info(program)["ops"]
    for op, r in zip(graph_ops, rec):
        if op.kind == "RESHAPE":
            continue
        out = net.g.tensor(op.outputs[0])
        if op.kind in ("FULLY_CONNECTED", "BATCH_MATMUL") or r["lowering"] == "matrix":
            # M rows of one pixel of N channels (a 1x1 conv in matrix mode: M = H*W)
            nhwc = (1, int(np.prod(out.shape[:-1])), 1, out.shape[-1])
        else:
            nhwc = (1,) * (4 - len(out.shape)) + tuple(out.shape)
        mine = [k for k in ks if r["first_word"] <= k["word"] < r["end_word"]]
        assert mine, f"{op.name}: no kernel command"
        if (op.kind not in ("FULLY_CONNECTED", "BATCH_MATMUL") and nhwc[2] > 1
                and mine[0]["OUT_FM_WIDTH"] == 1 and mine[0]["OUT_FM_HEIGHT"] == nhwc[1] * nhwc[2]):
            # Element-wise / activation on pixel rows (docs/compiler.md §2.1):
            # the H*W pixels as rows of one pixel.
            nhwc = (1, nhwc[1] * nhwc[2], 1, nhwc[3])
        cover = np.zeros(nhwc, np.int32)
        sh, sw = mine[0]["K_STRIDE_Y"], mine[0]["K_STRIDE_X"]
        kh, kw = mine[0]["K_SIZE_Y"], mine[0]["K_SIZE_X"]
        for k in mine:
            assert k["IN_FM_SPLIT_WIDTH"] <= 255 and k["OUT_FM_SPLIT_WIDTH"] <= 255
            chan0 = _channel_offset(k, out)
            for rows, cols, chans, irows, icols in core_tiles(k):
                # The halo: the input tile is exactly what the output rows need.
                assert irows == (rows[0] * sh - k["PAD_Y"], (rows[1] - 1) * sh + kh)
                assert icols == (cols[0] * sw - k["PAD_X"], (cols[1] - 1) * sw + kw)
                cover[0, rows[0]:rows[0] + rows[1], cols[0]:cols[0] + cols[1],
                      chan0 + chans[0]:chan0 + chans[0] + chans[1]] += 1
                check_sram(k, rows, cols, chans, irows, icols, hw_sram)
        assert cover.min() == 1 and cover.max() == 1, f"{op.name}: tiles do not cover once"
    return ks


def _channel_offset(k, out):
    """Output channel of the command's channel 0, from OUT_DMA_ADDR (the output
    tensors of these tests start at offset 0 of their region or of scratch)."""
    _, offset = _core.split_region_address(k["OUT_DMA_ADDR"])
    return offset % out.shape[-1]


def check_sram(k, rows, cols, chans, irows, icols, sram):
    """Each core's buffers fit the NACC_MEM_RANGE areas (docs/device_model.md §1)."""
    unit = sram // 1024
    bases = {"IFM": k["IFM_MEM_BASE"] * (sram // 4), "K": k["K_MEM_BASE"] * unit,
             "OFM": k["OFM_MEM_BASE"] * unit, "TEMP": k["TEMP_MEM_BASE"] * unit}
    used = {"IFM", "OFM"}
    if k["opcode"] in ("NPU_OP_CONV", "NPU_OP_DEPTHWISE", "NPU_OP_FULLY_CONNECTED",
                       "NPU_OP_ELEMENTWISE", "NPU_OP_ACTIVATION", "NPU_OP_MATMUL"):
        used.add("K")
    if k["opcode"] == "NPU_OP_ELEMENTWISE":
        used.add("TEMP")

    def area(name):
        b = bases[name]
        higher = [v for n, v in bases.items() if n in used and v > b]
        return min(higher + [sram]) - b

    in_h, in_w = k["IN_FM_HEIGHT"], k["IN_FM_WIDTH"]
    vr = min(irows[0] + irows[1], in_h) - max(irows[0], 0)
    vc = min(icols[0] + icols[1], in_w) - max(icols[0], 0)
    assert vr * vc * k["IN_FM_CH"] <= area("IFM")
    if k["IM2COL_EN"]:  # one K-byte im2col row per output pixel
        assert rows[1] * cols[1] * k["K_SIZE_X"] * k["K_SIZE_Y"] * k["IN_FM_CH"] <= area("IFM")
    assert rows[1] * cols[1] * chans[1] <= area("OFM")
    assert max(bases[n] for n in used) < sram
    assert len({bases[n] for n in used}) == len(used), "two used areas share a base"


# ---------------------------------------------------------------------------
# Golden tile plans and registers.

def first_last(program):
    ks = kernel_commands(program)
    return ks, ks[0], ks[-1]


def test_golden_spec_example_valid_78x78():
    """NACC_SPEC §3 example 2, padding 0: 80x80x3, 3x3 conv, 8 channels -> 78x78x8 at
    a 4 KB SRAM on one core.

    One output row of the full width (78 columns) needs 3 input rows x 80 x 3 =
    720 B plus 624 B of output per row: with the 448 B K area (216 B of weights,
    bias, multipliers, shifts, each 64-byte aligned) only 3 rows fit, 26 tiles
    whose 3x80-pixel halos re-read 2/3 of the input. A 20-column tile needs
    (h + 2) x 22 x 3 input bytes and 160 h output bytes: h = 15 fits (1152 + 2432 +
    448 = 4032 B), h = 16 does not (1216 + 2560 + 448 = 4224 B). The model gives
    both shapes the same cycles (the MAC array dominates), so the one that moves
    fewer bytes wins: 78 rows in 6 tiles of 13, 78 columns in 4 of 20/20/19/19.
    The weights stay resident (K_UPD = 1 only on the first command)."""
    net = conv_net(padding="VALID")
    plan = _core.plan_op(net.g, 0, sram_kb=4, double_buffer=False, conv_lowering="direct")
    assert (plan["rows_per_core"], plan["cols"], plan["channels_per_core"]) == (15, 20, 8)
    assert plan["row_pieces"] == [(0, 13), (13, 13), (26, 13), (39, 13), (52, 13), (65, 13)]
    assert plan["col_pieces"] == [(0, 20), (20, 20), (40, 19), (59, 19)]
    lay = plan["layout"]
    assert (lay["ifm"][0], lay["ofm"][0], lay["k"][0], lay["end"]) == (0, 1152, 3584, 4032)
    prog = _core.compile(net.g, sram_kb=4, double_buffer=False, conv_lowering="direct")
    ks, first, last = first_last(prog)
    assert len(ks) == 24
    assert [k["K_UPD"] for k in ks] == [1] + [0] * 23
    assert (first["OUT_FM_WIDTH"], first["OUT_FM_HEIGHT"], first["PAD_X"], first["PAD_Y"]) == (78, 78, 0, 0)
    assert (first["OUT_FM_START_SPLIT_H_OFFSET"], first["OUT_FM_SPLIT_LEN"],
            first["OUT_FM_SPLIT_LEFT_LEN"], first["OUT_FM_SPLIT_WIDTH"]) == (0, 13, 0, 20)
    assert (first["IN_FM_START_SPLIT_H_OFFSET"], first["IN_FM_SPLIT_LEFT_LEN"],
            first["IN_FM_START_SPLIT_W_OFFSET"], first["IN_FM_SPLIT_WIDTH"]) == (0, 15, 0, 22)
    # Last tile: rows [65, 78) read input rows [65, 80); columns [59, 78) read [59, 80).
    assert (last["OUT_FM_START_SPLIT_H_OFFSET"], last["OUT_FM_SPLIT_LEN"],
            last["OUT_FM_SPLIT_LEFT_LEN"], last["OUT_FM_SPLIT_WIDTH"]) == (65, 13, 59, 19)
    assert (last["IN_FM_START_SPLIT_H_OFFSET"], last["IN_FM_SPLIT_LEFT_LEN"],
            last["IN_FM_START_SPLIT_W_OFFSET"], last["IN_FM_SPLIT_WIDTH"]) == (65, 15, 59, 21)
    # NACC_MEM_RANGE in SRAM/1024 = 4-byte units: OFM at 1152, K at 3584.
    assert (first["IFM_MEM_BASE"], first["OFM_MEM_BASE"], first["K_MEM_BASE"]) == (0, 288, 896)
    check_stream(net, prog, 4096)


def test_golden_spec_example_same_80x80():
    """The same layer with padding 1 (SAME) -> 80x80x8, 4 KB SRAM, one core.

    The tile is the same 15 x 20 (its input is (15 + 2) x 22 pixels whether the
    halo is padding or data); 80 rows in 6 tiles of 14/14/13/13/13/13, 80
    columns in 4 of 20. The first tile starts one row and one column inside the
    padding (IN_FM_START_SPLIT_H/W_OFFSET = -1, PAD_X = PAD_Y = 1); the last
    reads input rows [66, 81) and columns [59, 81): row 80 and column 80 are the
    implied bottom/right padding (docs/device_model.md §3), which no register
    states and the device derives from the sizes."""
    net = conv_net(padding="SAME")
    plan = _core.plan_op(net.g, 0, sram_kb=4, double_buffer=False, conv_lowering="direct")
    assert (plan["rows_per_core"], plan["cols"]) == (15, 20)
    assert plan["row_pieces"] == [(0, 14), (14, 14), (28, 13), (41, 13), (54, 13), (67, 13)]
    assert plan["col_pieces"] == [(0, 20), (20, 20), (40, 20), (60, 20)]
    prog = _core.compile(net.g, sram_kb=4, double_buffer=False, conv_lowering="direct")
    ks, first, last = first_last(prog)
    assert len(ks) == 24
    assert (first["PAD_X"], first["PAD_Y"]) == (1, 1)
    assert (first["IN_FM_START_SPLIT_H_OFFSET"], first["IN_FM_SPLIT_LEFT_LEN"],
            first["IN_FM_START_SPLIT_W_OFFSET"], first["IN_FM_SPLIT_WIDTH"]) == (-1, 16, -1, 22)
    assert (last["OUT_FM_START_SPLIT_H_OFFSET"], last["OUT_FM_SPLIT_LEN"],
            last["OUT_FM_SPLIT_LEFT_LEN"], last["OUT_FM_SPLIT_WIDTH"]) == (67, 13, 60, 20)
    assert (last["IN_FM_START_SPLIT_H_OFFSET"], last["IN_FM_SPLIT_LEFT_LEN"],
            last["IN_FM_START_SPLIT_W_OFFSET"], last["IN_FM_SPLIT_WIDTH"]) == (66, 15, 59, 22)
    check_stream(net, prog, 4096)


def test_golden_kernel_split():
    """16x16x32 -> 64 channels, 3x3 SAME, 16 KB SRAM: the weights (64 x 3 x 3 x 32 =
    18432 B) exceed the SRAM, so the output channels are split into groups.

    The whole IFM (16 x 16 x 32 = 8192 B) fits, so there is one spatial tile and
    the IFM stays resident (FM_UPD = 0 after the first command) while the
    channel groups stream their weights through the K area. Group sizes are
    ceil(64 / k): 16 channels need K = 4608 + 3 x 64 (bias, multipliers, shifts)
    = 4800 B and OFM 16 x 16 x 16 = 4096 B, 17088 B in all, too much; 13
    channels (k = 5) need 8192 + 3328 + 3968 = 15488 B. So 5 groups of
    13/13/13/13/12 channels, each command writing its channels at their offset of
    the output pixel (OUT_DMA_ADDR + c0) with BIAS/QUANT addresses advanced by 4 c0."""
    net = conv_net(h=16, w=16, c=32, out_ch=64, k=3)
    plan = _core.plan_op(net.g, 0, sram_kb=16, double_buffer=False, conv_lowering="direct")
    assert plan["groups"] == [(0, 13), (13, 13), (26, 13), (39, 13), (52, 12)]
    assert plan["row_pieces"] == [(0, 16)] and plan["col_pieces"] == [(0, 16)]
    assert plan["weights_outer"] is False
    assert plan["layout"]["end"] == 15488
    prog = _core.compile(net.g, sram_kb=16, double_buffer=False, conv_lowering="direct")
    ks = check_stream(net, prog, 16384)
    assert [k["OUT_FM_CH"] for k in ks] == [13, 13, 13, 13, 12]
    assert [k["FM_UPD"] for k in ks] == [1, 0, 0, 0, 0]
    assert [k["K_UPD"] for k in ks] == [1, 1, 1, 1, 1]
    out_offsets = [_core.split_region_address(k["OUT_DMA_ADDR"])[1] for k in ks]
    assert out_offsets == [0, 13, 26, 39, 52]
    bias = [_core.split_region_address(k["BIAS_DMA_ADDR"])[1] for k in ks]
    assert [b - bias[0] for b in bias] == [0, 52, 104, 156, 208]
    assert all(k["IN_FM_CH"] == 32 for k in ks)


def test_golden_width_split_over_255_columns():
    """4x300x4 -> 8 channels, 3x3 SAME, 16 KB, one core: OUT_FM_SPLIT_WIDTH and
    IN_FM_SPLIT_WIDTH are 8-bit (NACC_SPEC §3), so 300 columns need at least two
    commands, 150 + 150 (all 4 rows fit). Each piece has its own halo: the left
    piece reads input columns [-1, 151) (left padding, no right padding: column
    150 is data), the right piece [149, 301) (no left padding, column 300 is the
    implied right padding) — [N]'s "IFM1 has no right padding, IFM2 has no left
    padding"."""
    net = conv_net(h=4, w=300, c=4, out_ch=8, k=3)
    plan = _core.plan_op(net.g, 0, sram_kb=16, double_buffer=False, conv_lowering="direct")
    assert plan["col_pieces"] == [(0, 150), (150, 150)]
    assert plan["row_pieces"] == [(0, 4)]
    prog = _core.compile(net.g, sram_kb=16, double_buffer=False, conv_lowering="direct")
    ks = check_stream(net, prog, 16384)
    assert [(k["OUT_FM_SPLIT_LEFT_LEN"], k["OUT_FM_SPLIT_WIDTH"]) for k in ks] == [(0, 150), (150, 150)]
    assert [(k["IN_FM_START_SPLIT_W_OFFSET"], k["IN_FM_SPLIT_WIDTH"]) for k in ks] == [(-1, 152), (149, 152)]
    assert all((k["IN_FM_START_SPLIT_H_OFFSET"], k["IN_FM_SPLIT_LEFT_LEN"]) == (-1, 6) for k in ks)
    assert [k["K_UPD"] for k in ks] == [1, 0]


def test_golden_multicore_split_height():
    """80x80x3 -> 8, 3x3 SAME at 64 KB on 4 cores, forced to mode 2: each core holds
    its own rows, so 80 rows per command is 20 per core; the weights are
    broadcast. Core i starts at output row 20 i and input row 20 i - 1
    (IN_DMA_UNICAST_AVG_OFFSET = 20 rows x stride 1) and reads 22 input rows; all
    four shares are equal (BROADCAST_OVER_EN = 0)."""
    net = conv_net()
    prog = _core.compile(net.g, cores=4, sram_kb=64, force_cores=4, force_mode="SPLIT_HEIGHT",
                         double_buffer=False)
    ks = check_stream(net, prog, 65536)
    k = ks[0]
    assert (k["BROADCAST_MODE"], k["BROADCAST_NUM"]) == (2, 3)
    plan = _core.plan_op(net.g, 0, cores=4, sram_kb=64, force_cores=4,
                         force_mode="SPLIT_HEIGHT", double_buffer=False)
    rows = plan["row_pieces"][0][1]
    assert rows % 4 == 0 and k["OUT_FM_SPLIT_AVG_HEIGHT"] == k["OUT_FM_SPLIT_OV_HEIGHT"] == rows // 4
    assert k["IN_DMA_UNICAST_AVG_OFFSET"] == rows // 4
    assert k["IN_FM_SPLIT_LEFT_LEN"] == k["IN_DMA_UNICAST_OV_OFFSET"] == rows // 4 + 2
    assert k["BROADCAST_OVER_EN"] == 0


def test_golden_multicore_split_kernel_fc():
    """FULLY_CONNECTED 1x256 -> 128 on 4 cores, single-buffered: one row cannot be
    split by height, so mode 1 gives each core 32 output channels
    (EU_BIAS_START_OFFSET = 32) and its own weight block (32 x 256 = 8 KB, which
    fits one core's K area next to the broadcast 256-byte input row), so one
    command does it all. QUANT_REAL_SCALE = 1 (the double scales of TFLite's
    reference FULLY_CONNECTED); FULL_KER_SIZE = 1 x ceil(256 / 64) - 1 = 3."""
    n = Net(3)
    x = n.input((1, 256))
    n.finish(n.fully_connected(x, 128))
    prog = _core.compile(n.g, cores=4, double_buffer=False)
    ks = check_stream(n, prog, 65536)
    assert len(ks) == 1
    k = ks[0]
    assert (k["BROADCAST_MODE"], k["BROADCAST_NUM"], k["EU_BIAS_START_OFFSET"]) == (1, 3, 32)
    assert k["BROADCAST_OVER_EN"] == 0
    assert (k["QUANT_REAL_SCALE"], k["FULL_KER_SIZE"], k["IN_FM_CH"], k["OUT_FM_CH"]) == (1, 3, 256, 128)
    # Four weight blocks of K_TRANS_LEN beats each, back to back in region 0.
    rec = info(prog)["ops"][0]
    assert rec["weight_bytes"] == 128 * 256
    assert rec["weight_bytes_stored"] == 4 * 16 * k["K_TRANS_LEN"]


# ---------------------------------------------------------------------------
# The units' own output for a Net (the middle term of device == unit == TFLite).

def _f32(v):
    return float(np.float32(v))


def unit_reference(net: Net, inputs):
    """Runs the Net op by op with the foundation's unit bindings and the TFLite
    parameter derivations of tests/quant_helpers.py (independent of the compiler)."""
    vals = dict(zip(net.inputs, inputs))
    for kind, ins, out, attrs in net.ops:
        x = vals.get(ins[0])
        s_out, z_out = net.quant[out]
        act = attrs.get("activation", "NONE")
        if kind in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            w, b = net.data[ins[1]], net.data[ins[2]]
            s_in, z_in = net.quant[ins[0]]
            ws = net.quant[ins[1]][0]
            oc = w.shape[0] if kind == "CONV_2D" else w.shape[3]
            mult, shift = conv_multipliers(s_in, ws, s_out, oc)
            lo, hi = activation_range(act, s_out, z_out)
            _, h, wd, _ = x.shape
            pads = _core.tflite_padding(attrs["padding"], h, wd, w.shape[1], w.shape[2],
                                        attrs["stride_h"], attrs["stride_w"], 1, 1)
            common = dict(stride=(attrs["stride_h"], attrs["stride_w"]), padding=tuple(pads),
                          input_zero_point=z_in, output_zero_point=z_out, act_min=lo, act_max=hi)
            if kind == "CONV_2D":
                y = _core.conv2d(x, w, b, mult, shift, **common)
            else:
                y = _core.depthwise_conv2d(x, w, b, mult, shift,
                                           depth_multiplier=attrs["depth_multiplier"], **common)
        elif kind == "FULLY_CONNECTED":
            w, b = net.data[ins[1]], net.data[ins[2]]
            s_in, z_in = net.quant[ins[0]]
            eff = fc_effective_scales(s_in, net.quant[ins[1]][0], s_out, w.shape[0])
            lo, hi = activation_range(act, s_out, z_out)
            y = _core.fully_connected(x.reshape(-1, w.shape[1]), w, b, effective_scale=eff,
                                      input_zero_point=z_in, output_zero_point=z_out,
                                      act_min=lo, act_max=hi)
        elif kind in ("MAX_POOL_2D", "AVERAGE_POOL_2D"):
            k, st = attrs["kernel_h"], attrs["stride_h"]
            _, h, wd, _ = x.shape
            pads = _core.tflite_padding(attrs["padding"], h, wd, k, k, st, st, 1, 1)
            lo, hi = activation_range(act, s_out, z_out)
            fn = _core.max_pool if kind == "MAX_POOL_2D" else _core.avg_pool
            y = fn(x, kernel=(k, k), stride=(st, st), padding=tuple(pads), act_min=lo, act_max=hi)
        elif kind in ("ADD", "SUB", "MUL"):
            a, b = (vals.get(i, net.data[i]) for i in ins)
            (sa, za), (sb, zb) = net.quant[ins[0]], net.quant[ins[1]]
            params = getattr(_core, f"tflite_{kind.lower()}_params")(
                _f32(sa), za, _f32(sb), zb, _f32(s_out), z_out, activation=act)
            y = getattr(_core, kind.lower())(a, b, **params)
        elif kind in ("RELU", "RELU6", "RELU_N1_TO_1"):
            s_in, z_in = net.quant[ins[0]]
            y = _core.activation(x, **_core.tflite_relu_params(_f32(s_in), z_in, _f32(s_out),
                                                               z_out, kind))
        elif kind in ("LOGISTIC", "TANH"):
            s_in, z_in = net.quant[ins[0]]
            lut = getattr(_core, f"lut_tflite_{kind.lower()}")(_f32(s_in), z_in, _f32(s_out), z_out)
            y = _core.activation(x, mode=_core.ActMode.LUT, lut=lut)
        elif kind == "RESHAPE":
            y = x.reshape(net.shapes[out])
        else:
            raise NotImplementedError(kind)
        vals[out] = np.asarray(y).reshape(net.shapes[out])
    return [vals[o] for o in net.outputs]


# ---------------------------------------------------------------------------
# The op cases: one small model per op kind and configuration.

def _single(build):
    def make(seed=0):
        n = Net(seed)
        return n.finish(build(n))
    return make


def _add_const_first(n):
    x = n.input((1, 9, 11, 24))
    c = n.constant((1, 1, 1, 24))
    return n.binary("ADD", c, x)


def _add_self(n):
    x = n.input((1, 6, 7, 10))
    return n.binary("ADD", x, x)


def _reshape_fc(n):
    x = n.input((1, 8, 8, 4))
    y = n.conv(x, 6, 3)
    r = n.reshape(y, (1, 384))
    return n.fully_connected(r, 10, act="RELU")


OP_CASES = {
    "conv3x3-80x80x3-spec": _single(lambda n: n.conv(n.input((1, 80, 80, 3)), 8, 3)),
    "conv3x3-s2-asymmetric-same": _single(lambda n: n.conv(n.input((1, 17, 16, 8)), 16, 3, 2)),
    "conv5x5-s3-relu": _single(lambda n: n.conv(n.input((1, 20, 23, 4)), 6, 5, 3, act="RELU")),
    "conv1x1-relu6": _single(lambda n: n.conv(n.input((1, 14, 14, 64)), 96, 1, act="RELU6")),
    "conv-kernel-split": _single(lambda n: n.conv(n.input((1, 16, 16, 32)), 64, 3)),
    "conv-300-wide": _single(lambda n: n.conv(n.input((1, 3, 300, 4)), 8, 3)),
    "depthwise3x3-relu": _single(lambda n: n.conv(n.input((1, 40, 40, 16)), 0, 3, act="RELU",
                                                  depthwise=True)),
    "depthwise-m2-s2": _single(lambda n: n.conv(n.input((1, 21, 20, 8)), 0, 3, 2, depthwise=True,
                                                multiplier=2)),
    "depthwise-m4-5x5-valid": _single(lambda n: n.conv(n.input((1, 9, 9, 3)), 0, 5,
                                                       padding="VALID", depthwise=True,
                                                       multiplier=4)),
    "fc-3x200-relu": _single(lambda n: n.fully_connected(n.input((3, 200)), 70, act="RELU")),
    "fc-per-tensor": _single(lambda n: n.fully_connected(n.input((1, 64)), 10, per_channel=False)),
    "maxpool3x3-s2-same": _single(lambda n: n.pool(n.input((1, 33, 33, 24)), k=3, stride=2,
                                                   padding="SAME")),
    "avgpool2x2-relu6": _single(lambda n: n.pool(n.input((1, 32, 30, 16)), "AVERAGE_POOL_2D",
                                                 act="RELU6")),
    "add-relu": _single(lambda n: n.binary("ADD", n.input((1, 30, 30, 20)),
                                           n.input((1, 30, 30, 20), 0.07, 4), act="RELU")),
    "add-broadcast-vector": _single(lambda n: n.binary("ADD", n.input((1, 12, 12, 40)),
                                                       n.input((1, 1, 1, 40), 0.03, -2))),
    "sub-broadcast-vector": _single(lambda n: n.binary("SUB", n.input((1, 12, 12, 40)),
                                                       n.input((1, 1, 1, 40), 0.03, -2))),
    "mul": _single(lambda n: n.binary("MUL", n.input((1, 10, 13, 16)),
                                      n.input((1, 10, 13, 16), 0.08, 3), out_scale=0.02)),
    "mul-constant-scalar": _single(lambda n: n.binary("MUL", n.input((1, 7, 9, 12)),
                                                      n.constant((1,)), out_scale=0.01)),
    "add-constant-vector-first": _single(_add_const_first),
    "relu": _single(lambda n: n.unary("RELU", n.input((1, 17, 19, 24)))),
    "relu6": _single(lambda n: n.unary("RELU6", n.input((1, 17, 19, 24)))),
    "relu-n1-to-1": _single(lambda n: n.unary("RELU_N1_TO_1", n.input((1, 17, 19, 24), 0.01, 0))),
    "logistic": _single(lambda n: n.unary("LOGISTIC", n.input((1, 17, 19, 24)))),
    "tanh": _single(lambda n: n.unary("TANH", n.input((1, 17, 19, 24)))),
    "conv-reshape-fc": _single(_reshape_fc),
    "add-same-operand-twice": _single(_add_self),
}
CORES = [1, 2, 4, 8, 16, 32]
SRAM_KB = [4, 16, 64]


def smallest_sram_kb(net, cores=1):
    """The smallest of SRAM_KB the case compiles at (a few need more than 4 KB)."""
    for kb in SRAM_KB:
        try:
            _core.compile(net.g, cores=cores, sram_kb=kb)
            return kb
        except nacc.UnsupportedError:
            continue
    raise AssertionError("compiles at no SRAM size")


@pytest.mark.parametrize("case", list(OP_CASES))
def test_stream_structure(case):
    """Every stream decodes and validates; each core's input tile is exactly the
    halo its output rows and columns need; the tiles of each op cover its output
    exactly once; every buffer fits its SRAM area — at 1 and 32 cores (each
    mode) and at the smallest and the default SRAM."""
    net = OP_CASES[case]()
    small = smallest_sram_kb(net)
    for cores, kb, mode in [(1, small, None), (1, 64, None), (32, small, None),
                            (4, small, "SPLIT_HEIGHT"), (4, 64, "SPLIT_KERNEL")]:
        try:
            prog = _core.compile(net.g, cores=cores, sram_kb=kb, force_mode=mode)
        except nacc.UnsupportedError:
            assert mode is not None  # a mode the op cannot use is declined, never mis-emitted
            continue
        check_stream(net, prog, kb * 1024)


# ---------------------------------------------------------------------------
# End to end on the simulated device.

_RUNTIMES: dict = {}


def runtime(cores, kb, execution="replay"):
    key = (cores, kb, execution)
    if key not in _RUNTIMES:
        _RUNTIMES[key] = _core.Runtime(cores=cores, sram_kb=kb, execution=execution)
    return _RUNTIMES[key]


def run(net, inputs, cores=1, kb=64, program=None, execution="replay", **options):
    prog = program or _core.compile(net.g, cores=cores, sram_kb=kb, **options)
    outs, stats = runtime(cores, kb, execution).run(prog, inputs)
    return [np.asarray(o).reshape(net.shapes[name]) for o, name in zip(outs, net.outputs)], stats


def assert_equal(expected, got, what):
    for e, g in zip(expected, got):
        assert e.shape == g.shape, f"{what}: shape {g.shape} != {e.shape}"
        if not np.array_equal(e, g):
            bad = np.argwhere(e != g)
            raise AssertionError(f"{what}: {len(bad)} of {e.size} values differ, first at "
                                 f"{tuple(bad[0])}: {g[tuple(bad[0])]} != {e[tuple(bad[0])]}")


@pytest.mark.parametrize("case", list(OP_CASES))
def test_program_equals_units_and_tflite(case):
    """Program output == the units' output == TFLite BUILTIN_REF, at 1, 2, 4, 8, 16
    and 32 cores, at the smallest SRAM the op compiles at (forcing height,
    width and kernel splits) and at 64 KB."""
    net = OP_CASES[case]()
    x = net.random_inputs()
    expected = run_tflite(net.tflite(), x)
    expected = [e.reshape(net.shapes[o]) for e, o in zip(expected, net.outputs)]
    assert_equal(expected, unit_reference(net, x), f"{case}: units vs TFLite")
    small = smallest_sram_kb(net)
    for cores in CORES:
        for kb in sorted({small, 64}):
            got, _ = run(net, x, cores, kb)
            assert_equal(expected, got, f"{case}: {cores} cores, {kb} KB")


def chain_net(seed=5, size=24):
    """conv -> depthwise -> add (residual) -> max pool, one Program."""
    n = Net(seed)
    x = n.input((1, size, size, 8))
    a = n.conv(x, 16, 3, act="RELU", out_scale=0.08, out_zp=-20)
    b = n.conv(a, 0, 3, depthwise=True, act="RELU6", out_scale=0.05, out_zp=-30)
    c = n.binary("ADD", a, b, out_scale=0.1, out_zp=-5)
    return n.finish(n.pool(c, k=2, stride=2))


def test_chain_in_one_program():
    """conv -> depthwise -> residual add -> pool: one Program (the intermediates in
    the scratch region, a KERNEL_WAIT before each op that reads its
    predecessor's output) gives TFLite's bits at every core count and SRAM size."""
    net = chain_net()
    x = net.random_inputs()
    expected = run_tflite(net.tflite(), x)
    assert_equal(expected, unit_reference(net, x), "units vs TFLite")
    for cores in CORES:
        for kb in (4, 64):
            got, _ = run(net, x, cores, kb)
            assert_equal(expected, got, f"chain: {cores} cores, {kb} KB")
    prog = _core.compile(net.g, sram_kb=8)
    ops = [c["opcode"] for c in _core.decode_stream(info(prog)["commands"])]
    assert ops.count("NPU_OP_KERNEL_WAIT") == 3
    regions = info(prog)["regions"]
    assert [r["kind"] for r in regions[:4]] == ["constant", "input", "scratch", "output"]


def eager_waits(commands):
    """The stream with each NPU_OP_KERNEL_WAIT moved back before the run of
    NPU_SET_REGISTER commands it follows (where the compiler put it before the
    waits were deferred): the same commands, so the same outputs."""
    out = []
    for c in commands:
        c = {k: v for k, v in c.items() if k != "word"}
        if c["opcode"] == "NPU_OP_KERNEL_WAIT":
            at = len(out)
            while at > 0 and out[at - 1]["opcode"] == "NPU_SET_REGISTER":
                at -= 1
            out.insert(at, c)
        else:
            out.append(c)
    return out


@pytest.mark.parametrize("cores", [1, 8, 32])
def test_kernel_wait_after_the_register_writes(cores):
    """The KERNEL_WAIT between two ops comes after the register writes that
    program the next op's first kernel, just before its opcode (registers take
    effect at once and a kernel latches them at issue, docs/command_stream.md
    §3.2): every wait is followed by a kernel or DMA_START, never by a register
    write. The command processor spends 1 cycle per command, so the writes run
    while the earlier kernels finish: the same stream with the waits before the
    writes gives the same bits in more cycles (at least one per op whose wait
    the last kernel's end decides)."""
    net = chain_net()
    x = net.random_inputs()
    prog = _core.compile(net.g, cores=cores, sram_kb=64)
    cmds = _core.decode_stream(info(prog)["commands"])
    waits = [i for i, c in enumerate(cmds) if c["opcode"] == "NPU_OP_KERNEL_WAIT"]
    assert waits
    for i in waits:
        assert cmds[i - 1]["opcode"] == "NPU_SET_REGISTER"
        assert cmds[i + 1]["opcode"] in KERNEL_OPCODES | {"NPU_OP_DMA_START"}, cmds[i + 1]
    deferred, stats = run(net, x, cores, 64, program=prog)
    eager = _core.compile(net.g, cores=cores, sram_kb=64)
    eager.commands = np.array(_core.encode_commands(eager_waits(cmds)), np.uint32)
    assert len(eager.commands) == len(prog.commands)
    got, eager_stats = run(net, x, cores, 64, program=eager)
    assert_equal(deferred, got, f"{cores} cores: deferred vs eager waits")
    assert stats["cycles"] < eager_stats["cycles"]


# ---------------------------------------------------------------------------
# Records.

def independent_macs(net):
    """Useful multiply-accumulates per op, counted from the shapes alone: for each
    output position the kernel taps that land inside the input (padding is not
    useful work), times the channels each tap multiplies."""
    def taps(out, inp, k, s, pad):
        return sum(max(0, min(inp, o * s - pad + k) - max(0, o * s - pad)) for o in range(out))
    macs = []
    for kind, ins, out, attrs in net.ops:
        if kind in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            _, h, w, c = net.shapes[ins[0]]
            _, oh, ow, oc = net.shapes[out]
            kh, kw = net.shapes[ins[1]][1:3]
            pads = _core.tflite_padding(attrs["padding"], h, w, kh, kw, attrs["stride_h"],
                                        attrs["stride_w"], 1, 1)
            t = taps(oh, h, kh, attrs["stride_h"], pads[0]) * taps(ow, w, kw, attrs["stride_w"], pads[2])
            macs.append(t * oc * (c if kind == "CONV_2D" else 1))
        elif kind == "FULLY_CONNECTED":
            n_out, k = net.shapes[ins[1]]
            macs.append(int(np.prod(net.shapes[ins[0]])) // k * k * n_out)
        else:
            macs.append(0)
    return macs


@pytest.mark.parametrize("case", ["conv3x3-80x80x3-spec", "conv3x3-s2-asymmetric-same",
                                  "conv5x5-s3-relu", "depthwise-m2-s2", "depthwise-m4-5x5-valid",
                                  "fc-3x200-relu", "maxpool3x3-s2-same", "conv-reshape-fc"])
def test_records_macs_and_weights(case):
    """OpRecord.macs equals an independent count from the shapes, whatever the
    tiling (1 core at the smallest SRAM, 32 cores at 64 KB); weight_bytes is the
    raw weight count; weight_bytes_stored counts whole 16-byte weight blocks (u32
    length + compressed stream + padding), so it is a multiple of 16 and at most
    raw + 9 (codec header) + 4 (length) + 15 (padding) per block."""
    net = OP_CASES[case]()
    want = independent_macs(net)
    for cores, kb in ((1, smallest_sram_kb(net)), (32, 64)):
        recs = info(_core.compile(net.g, cores=cores, sram_kb=kb))["ops"]
        assert [r["macs"] for r in recs] == want
        for (kind, ins, _, _), r in zip(net.ops, recs):
            raw = net.data[ins[1]].size if kind in ("CONV_2D", "DEPTHWISE_CONV_2D",
                                                    "FULLY_CONNECTED") else 0
            assert r["weight_bytes"] == raw
            if r["lowering"] == "im2col":  # B of the matrix unit: [K, N], uncompressed
                assert r["weight_bytes_stored"] == raw
                continue
            assert r["weight_bytes_stored"] % 16 == 0
            if raw:
                blocks = r["weight_bytes_stored"] // 16  # an upper bound on the block count
                assert 0 < r["weight_bytes_stored"] <= raw + 28 * blocks


def test_record_bound_golden():
    """NACC_SPEC §8 bound, max(MAC-array cycles, activation cycles, move-once bytes /
    bandwidth), the work spread over the cores and the bandwidth min(external 64,
    16 per core x cores) bytes per cycle, reads and writes each:

    * the spec's conv (80x80x3 -> 8, 3x3 SAME): the bound is its cheapest
      lowering's (docs/performance_model.md §4), im2col, 6400 x 8 x ceil(27/64) =
      51200 MAC cycles on one core, 1600 on 32, even when forced direct (whose
      array would take 80 x 80 x 8 x 3 x 3 x ceil(3/64) = 460800); its bytes are
      far below. min_dma_bytes = 19200 in + 51200 out + stored weights + 32
      (bias) + 64 (multipliers and shifts);
    * max pool 3x3/2 on 33x33x24 -> 17x17x24: 17 x 17 x ceil(24/64) x 9 = 2601
      cycles on one core, but on 32 cores 82 MAC cycles against 26136 input bytes
      / 64 = 409 cycles: the DMA binds."""
    net = OP_CASES["conv3x3-80x80x3-spec"]()
    r1 = info(_core.compile(net.g, cores=1, conv_lowering="direct"))["ops"][0]
    r32 = info(_core.compile(net.g, cores=32, conv_lowering="direct"))["ops"][0]
    assert (r1["lowering"], r1["bound_cycles"], r32["bound_cycles"]) == ("direct", 51200, 1600)
    assert r1["min_dma_bytes"] == 19200 + 51200 + r1["weight_bytes_stored"] + 96
    # Lowered to im2col (the compiler's choice): the same bound.
    i1 = info(_core.compile(net.g, cores=1))["ops"][0]
    i32 = info(_core.compile(net.g, cores=32))["ops"][0]
    assert (i1["lowering"], i1["bound_cycles"], i32["bound_cycles"]) == ("im2col", 51200, 1600)
    pool = OP_CASES["maxpool3x3-s2-same"]()
    p1 = info(_core.compile(pool.g, cores=1))["ops"][0]
    p32 = info(_core.compile(pool.g, cores=32))["ops"][0]
    assert (p1["bound_cycles"], p32["bound_cycles"]) == (2601, 409)
    assert p1["min_dma_bytes"] == 26136 + 6936


# ---------------------------------------------------------------------------
# What the compiler declines, and its limits.

def _decline(kind, **attrs):
    def make():
        n = Net()
        x = n.input((1, 8, 8, 4))
        shape = attrs.pop("out_shape", (1, 8, 8, 4))
        y = n.tensor(shape, attrs.pop("out_scale", 0.05), -3)
        n.g.add_op(kind, [n.ids[x][0]], [n.ids[y][0]], name="victim", **attrs)
        n.g.inputs, n.g.outputs = [n.ids[x][0]], [n.ids[y][0]]
        return n
    return make


DECLINED = [
    # Lowered kinds with a quantization TFLite's own arithmetic cannot take
    # (tests/test_lut_ops.py has the full set).
    ("HARD_SWISH", _decline("HARD_SWISH", out_scale=0.05 / 128),
     "HARD_SWISH 'victim'.*is not below 1"),
    ("QUANTIZE", _decline("QUANTIZE", out_scale=0.05 * 2.0 ** -31),
     "QUANTIZE 'victim'.*left shift of 32 > 31"),
    ("MEAN", _decline("MEAN", axes=[3], keep_dims=True, out_shape=(1, 8, 8, 1)),
     "MEAN 'victim': axes \\[3\\]"),
    ("PAD", _decline("PAD", paddings=[[0, 0], [3, 3], [0, 0], [0, 0]], out_shape=(1, 14, 8, 4)),
     "PAD 'victim': padding top/bottom/left/right 3/3/0/0 cannot run alone"),
    ("SOFTMAX", _decline("OTHER", type_name="SOFTMAX"), "SOFTMAX 'victim'"),
]


@pytest.mark.parametrize("kind, make, message", DECLINED, ids=[d[0] for d in DECLINED])
def test_declined_ops_raise_unsupported_naming_the_op(kind, make, message):
    """Ops this version does not lower (or the rules decline) raise
    nacc.UnsupportedError naming the op; nothing is emitted for them."""
    with pytest.raises(nacc.UnsupportedError, match=message):
        _core.compile(make().g)


def test_constant_input_is_declined():
    """An op whose feature-map input is a constant has nothing to run on the NPU
    (the host folds it): declined, naming the op."""
    n = Net()
    c = n.constant((1, 4, 4, 8))
    n.finish(n.unary("RELU", c))
    with pytest.raises(nacc.UnsupportedError, match="RELU 'relu.*is a constant"):
        _core.compile(n.g)


def test_sub_with_broadcast_first_operand_is_declined():
    """SUB(vector, map) would need the operands swapped, which SUB is not: declined."""
    n = Net()
    a = n.input((1, 1, 1, 8))
    b = n.input((1, 4, 4, 8))
    n.finish(n.binary("SUB", a, b))
    # the capability rule (elementwise_broadcast) the compiler re-checks first
    # names it since tests/fuzz found the rule claiming it
    with pytest.raises(nacc.UnsupportedError,
                       match=r"SUB 'sub\d*': operands \[1,1,1,8\] and \[1,4,4,8\]"):
        _core.compile(n.g)


def _adds(k, extra_outputs=()):
    """A chain of ADDs over k inputs (t_i = t_{i-1} + x_i); `extra_outputs`:
    indices i of sums t_i (or ("x", i) for input x_i) that are outputs too."""
    n = Net()
    xs = [n.input((1, 4, 4, 8)) for _ in range(k)]
    ys = [xs[0]]
    for x in xs[1:]:
        ys.append(n.binary("ADD", ys[-1], x))
    extra = [xs[e[1]] if isinstance(e, tuple) else ys[e] for e in extra_outputs]
    return n.finish(ys[-1], *extra)


def test_regions_fill_then_stage():
    """A chain of ADDs over k inputs needs constants + k inputs + scratch (the
    intermediate sums) + the output: 5 inputs fill the 8 regions of NACC_SPEC §6
    exactly (0 constants, 1-5 inputs, 6 scratch, 7 output), one region each and
    the Program format of before (version 3). With 6 inputs two of them share a
    staging input region (docs/compiler.md §4) and the Program is version 4."""
    prog = _core.compile(_adds(5).g)
    kinds = [r["kind"] for r in info(prog)["regions"]]
    assert kinds == ["constant"] + ["input"] * 5 + ["scratch", "output"]
    assert bytes(prog.to_bytes())[8:12] == (3).to_bytes(4, "little")
    prog = _core.compile(_adds(6).g)
    regions = info(prog)["regions"]
    assert [r["kind"] for r in regions] == ["constant"] + ["input"] * 5 + ["scratch", "output"]
    assert [r["io_index"] for r in regions[1:6]] == [0, 1, 2, 3, -1]
    ins = info(prog)["inputs"]
    assert [(t["region"], t["offset"]) for t in ins[4:]] == [(5, 0), (5, 128)]
    assert regions[5]["size"] == 256
    raw = bytes(prog.to_bytes())
    assert raw[8:12] == (4).to_bytes(4, "little")
    again = _core.Program.from_bytes(raw)
    assert [(t["region"], t["offset"]) for t in info(again)["inputs"]] == \
        [(t["region"], t["offset"]) for t in ins]


@pytest.mark.parametrize("k,extra", [(6, ()), (12, (3, 7, ("x", 2))), (20, (1, 5, 9, 13, 17))])
def test_staged_partition_bit_exact(k, extra):
    """Partitions past the 8 regions (up to 20 inputs and 6 outputs, an input
    that is also an output) compile whole and give TFLite's bits at 1, 4 and 32
    cores, replayed and stepped: the staged inputs and outputs are copied in
    and out by the runtime, the rest bound in place."""
    net = _adds(k, extra)
    x = net.random_inputs(seed=k)
    expected = [e.reshape(net.shapes[o]) for e, o in zip(run_tflite(net.tflite(), x), net.outputs)]
    prog = _core.compile(net.g)
    staged = [r for r in info(prog)["regions"] if r["kind"] in ("input", "output")
              and r["io_index"] == -1]
    assert staged, info(prog)["regions"]
    for cores in (1, 4, 32):
        for execution in ("replay", "step"):
            got, _ = run(net, x, cores, execution=execution)
            assert_equal(expected, got, f"{k} inputs: {cores} cores, {execution}")


def _wide_1x1(c_in):
    n = Net()
    return n.finish(n.conv(n.input((1, 1, 1, c_in)), 1, 1))


def test_sram_exactly_full_and_one_step_over():
    """A 1x1 conv on one pixel of 3968 channels needs A(3968) input + A(3968)
    weights + 3 x 64 (bias, multiplier, shift) + 64 (output) = 8192 B: it compiles
    at an 8 KB SRAM (the buffers fill it exactly) and runs; 3969 channels need
    4032 + 4032 + 256 = 8320 B and are declined by the shared sram_tile rule. A
    9 KB SRAM does not help: its NACC_MEM_RANGE unit is 9 bytes, so buffers align
    to lcm(9, 64) = 576 B and the tile needs 2 x 4032 -> 2 x 4608 + 2 x 576 = 10368;
    16 KB takes it."""
    ok = _wide_1x1(3968)
    plan = _core.plan_op(ok.g, 0, sram_kb=8)
    assert plan["layout"]["end"] == 8192
    prog = _core.compile(ok.g, sram_kb=8)
    check_stream(ok, prog, 8192)
    with pytest.raises(nacc.UnsupportedError, match="sram_tile|smallest tile needs 8320"):
        _core.compile(_wide_1x1(3969).g, sram_kb=8)
    with pytest.raises(nacc.UnsupportedError, match="smallest tile needs 10368"):
        _core.compile(_wide_1x1(3969).g, sram_kb=9)
    _core.compile(_wide_1x1(3969).g, sram_kb=16)


@pytest.mark.parametrize("kwargs, message", [
    (dict(cores=3), "cores 3 must be 1, 2, 4, 8, 16 or 32"),
    (dict(cores=64), "cores 64"),
    (dict(sram_bytes=4097), "multiple of 1024"),
    (dict(sram_kb=2), "must be a multiple of 1024"),
    (dict(sram_kb=4, sram_bytes=4096), "not both"),
    (dict(force_mode="SIDEWAYS"), "force_mode"),
    (dict(ext_bytes_per_cycle=0), "ext_bytes_per_cycle"),
])
def test_option_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        _core.compile(OP_CASES["relu"]().g, **kwargs)


def test_partition_errors():
    """A partition whose ops are out of order, or whose output nobody produces,
    is a caller's mistake: ValueError naming it."""
    n = Net()
    x = n.input((1, 4, 4, 8))
    y = n.unary("RELU", x)
    z = n.unary("RELU", y)
    n.finish(z)
    g = _core.Graph()
    ids = {}
    for name in (x, y, z):
        s, zp = n.quant[name]
        ids[name] = g.add_tensor(name, list(n.shapes[name]), "int8", scales=s, zero_points=zp)
    g.add_op("RELU", [ids[y]], [ids[z]], name="second")
    g.add_op("RELU", [ids[x]], [ids[y]], name="first")
    g.inputs, g.outputs = [ids[x]], [ids[z]]
    with pytest.raises(ValueError, match="topological order"):
        _core.compile(g)


# ---------------------------------------------------------------------------
# Memory planning.

def test_scratch_reuse_and_free_reshape():
    """relu -> relu -> relu -> reshape -> relu on a 1x32x32x16 map (16 KB each): the
    intermediates live in the scratch region and a linear scan reuses freed space,
    so scratch holds two tensors (32 KB), not four; the RESHAPE emits no command
    (its output aliases its input's bytes: the last RELU reads the same address
    the third wrote)."""
    n = Net()
    x = n.input((1, 32, 32, 16))
    a = n.unary("RELU", x)
    b = n.unary("RELU", a)
    c = n.unary("RELU", b)
    r = n.reshape(c, (1, 64, 16, 16))
    n.finish(n.unary("RELU", r))
    prog = _core.compile(n.g)
    inf = info(prog)
    scratch = [reg for reg in inf["regions"] if reg["kind"] == "scratch"]
    assert [s_["size"] for s_ in scratch] == [2 * 16384]
    view = inf["ops"][3]
    assert view["kind"] == "RESHAPE" and view["first_word"] == view["end_word"]
    ks = kernel_commands(prog)
    first = [next(k for k in ks if r["first_word"] <= k["word"] < r["end_word"])
             for r in inf["ops"] if r["kind"] != "RESHAPE"]
    assert first[3]["IN_FM_DMA_ADDR"] == first[2]["OUT_DMA_ADDR"]
    assert first[1]["IN_FM_DMA_ADDR"] == first[0]["OUT_DMA_ADDR"] != first[1]["OUT_DMA_ADDR"]
    assert first[2]["OUT_DMA_ADDR"] == first[0]["OUT_DMA_ADDR"]   # the freed space again


# ---------------------------------------------------------------------------
# Performance on the device: SRAM size, core count, the §8 bound.

def test_device_counts_agree_with_records():
    """On the device: MACs counted == OpRecord.macs, and the cycles never beat the
    §8 bound of the program's only op (the bound is a lower bound)."""
    for case in ("conv3x3-s2-asymmetric-same", "depthwise-m2-s2", "fc-3x200-relu",
                 "maxpool3x3-s2-same", "add-broadcast-vector", "tanh"):
        net = OP_CASES[case]()
        x = net.random_inputs()
        for cores in (1, 8, 32):
            prog = _core.compile(net.g, cores=cores, sram_kb=16)
            _, stats = run(net, x, cores, 16, program=prog)
            (rec,) = info(prog)["ops"]
            assert stats["macs"] == rec["macs"], case
            assert stats["cycles"] >= rec["bound_cycles"], case


@pytest.mark.parametrize("case", ["conv3x3-80x80x3-spec", "conv-kernel-split", "depthwise3x3-relu"])
def test_smaller_sram_raises_dma_bytes(case):
    """Less SRAM, smaller tiles: more halo rows and columns re-read (and, for a
    kernel split, the IFM or the weights reloaded per tile), so the device's DMA
    read bytes never fall as the SRAM shrinks, and at 4 KB they exceed 64 KB's."""
    net = OP_CASES[case]()
    x = net.random_inputs()
    # The direct convolution: an im2col gather reads each window once whatever
    # the tile size (tests/test_matrix_mode.py), so it has no halo to re-read.
    reads = [run(net, x, 1, kb, conv_lowering="direct")[1]["dma_read_bytes"] for kb in (4, 16, 64)]
    assert reads[0] >= reads[1] >= reads[2] and reads[0] > reads[2], reads


def test_more_cores_fewer_cycles_until_bandwidth_binds():
    """The spec's conv is MAC-bound: every doubling of the cores (1 .. 16) cuts the
    cycles by at least 40%. ADD is bus-bound: 16 bytes per cycle per core until
    the shared 64 bytes per cycle bind at 4 cores; beyond 8 cores more cores buy
    nothing, and the cycles never fall below read bytes / 64."""
    conv = OP_CASES["conv3x3-80x80x3-spec"]()
    x = conv.random_inputs()
    cycles = [run(conv, x, c, 64)[1]["cycles"] for c in CORES]
    for a, b in zip(cycles[:-2], cycles[1:-1]):
        assert b < 0.6 * a, cycles
    assert cycles[-1] < cycles[-2]
    add = OP_CASES["add-relu"]()
    x = add.random_inputs()
    stats = [run(add, x, c, 64)[1] for c in CORES]
    cyc = [s["cycles"] for s in stats]
    assert cyc[0] > cyc[1] > cyc[2] > cyc[3], cyc
    assert max(cyc[3:]) <= 1.05 * min(cyc[3:]), cyc
    assert all(s["cycles"] >= s["dma_read_bytes"] / 64 for s in stats)


# ---------------------------------------------------------------------------
# Corrupted streams: never a silently wrong result.

def _mutated(words, register, change):
    """A copy of the stream whose first kernel runs with `register` changed by
    change(fields) -> fields: its last write before that kernel is changed, or,
    when the stream relies on the reset value, a write is inserted before it."""
    cmds = _core.decode_stream(words)
    first_kernel = next(i for i, c in enumerate(cmds) if c["opcode"] in KERNEL_OPCODES)
    writes = [i for i, c in enumerate(cmds[:first_kernel])
              if c["opcode"] == "NPU_SET_REGISTER" and c["register"] == register]
    value = cmds[writes[-1]]["payload"] if writes else REGISTERS[register]["reset"]
    new = _core.register_value(register, change(dict(_core.decode_fields(register, value))))
    if writes:
        cmds[writes[-1]]["payload"] = new
    else:
        cmds.insert(first_kernel, {"opcode": "NPU_SET_REGISTER", "register": register,
                                   "payload": new})
    return _core.encode_commands(cmds)


def _bump(field, delta):
    def change(f):
        f[field] += delta
        return f
    return change


MUTATIONS = [
    # halo
    ("NACC_IN_FM_SPLIT_H_OFFSET", _bump("IN_FM_START_SPLIT_H_OFFSET", 1)),
    ("NACC_IN_FM_SPLIT_W_OFFSET", _bump("IN_FM_START_SPLIT_W_OFFSET", -1)),
    ("NACC_IN_FM_SPLIT", _bump("IN_FM_SPLIT_LEFT_LEN", 1)),
    ("NACC_IN_FM_SPLIT", _bump("IN_FM_SPLIT_WIDTH", -1)),
    # split
    ("NACC_OUT_FM_SPLIT_LEN", _bump("OUT_FM_SPLIT_LEN", -1)),
    ("NACC_OUT_FM_SPLIT_LEN", _bump("OUT_FM_SPLIT_LEFT_LEN", 1)),
    ("NACC_OUT_FM_SPLIT", _bump("OUT_FM_SPLIT_WIDTH", -1)),
    ("NACC_OUT_FM_SPLIT_H_OFFSET", _bump("OUT_FM_START_SPLIT_H_OFFSET", 1)),
    ("NACC_BROADCAST_SPLIT", _bump("OUT_FM_SPLIT_AVG_HEIGHT", -1)),
    ("NACC_BROADCAST_DMA", _bump("IN_DMA_UNICAST_AVG_OFFSET", 1)),
    # stride and padding
    ("NACC_KERNEL", _bump("K_STRIDE_X", 1)),
    ("NACC_PADDING", _bump("PAD_Y", -1)),
    # addresses
    ("NACC_IN_FM_DMA_ADDR", _bump("IN_FM_DMA_ADDR", 3)),
    ("NACC_OUT_DMA_ADDR", _bump("OUT_DMA_ADDR", 8)),
    ("NACC_IN_K_DMA_ADDR", _bump("IN_K_DMA_ADDR", 16)),
    ("NACC_BIAS_DMA_ADDR", _bump("BIAS_DMA_ADDR", 4)),
    ("NACC_QUANT_MUL_DMA_ADDR", _bump("QUANT_MUL_DMA_ADDR", 4)),
    ("NACC_DMA_OFFSET1", _bump("IN_DMA_ROW_OFFSET", 3)),
]


@pytest.mark.parametrize("execution", ["replay", "step"])
@pytest.mark.parametrize("register, change", MUTATIONS,
                         ids=[f"{m[0]}-{i}" for i, m in enumerate(MUTATIONS)])
def test_corrupted_register_never_passes_silently(register, change, execution):
    """Changing one halo, split, stride/padding or address register write of a
    compiled stream (the 80x80x3 conv at 4 KB on 4 cores in mode 2, so every tile
    register and the per-core split registers are written) either changes the
    output bits or raises nacc.DeviceFault — replaying the execution plan as well
    as stepping the interpreter."""
    net = OP_CASES["conv3x3-80x80x3-spec"]()
    x = net.random_inputs()
    prog = _core.compile(net.g, cores=4, sram_kb=4, force_cores=4, force_mode="SPLIT_HEIGHT")
    (good,), _ = run(net, x, 4, 4, program=prog, execution=execution)
    words = info(prog)["commands"]
    bad = _core.Program.from_bytes(prog.to_bytes())
    bad.commands = _mutated(words, register, change)
    try:
        (out,), _ = run(net, x, 4, 4, program=bad, execution=execution)
    except nacc.DeviceFault:
        return
    assert not np.array_equal(out, good), f"{register} corrupted, output unchanged"


def test_reshape_between_partition_input_and_output_is_a_dma_copy():
    """A RESHAPE whose input is a partition input and whose output is a partition
    output cannot alias (they are different regions, bound to the caller's
    buffers): the compiler copies the bytes with NPU_OP_DMA_START and waits."""
    n = Net()
    x = n.input((1, 4, 6, 8))
    n.finish(n.reshape(x, (1, 24, 8)))
    prog = _core.compile(n.g)
    ops = [c["opcode"] for c in _core.decode_stream(info(prog)["commands"])]
    assert "NPU_OP_DMA_START" in ops and "NPU_OP_DMA_WAIT" in ops
    assert not KERNEL_OPCODES & set(ops)
    (xin,) = n.random_inputs()
    (out,), _ = run(n, [xin], program=prog)
    assert np.array_equal(out, xin.reshape(1, 24, 8))


def _random_layer(rng, seed):
    """A random conv / depthwise / pool / FC / element-wise / LUT layer (seeded)."""
    n = Net(seed)
    kind = str(rng.choice(["conv", "dw", "maxpool", "avgpool", "fc", "add", "logistic"]))
    h, w, c = int(rng.integers(2, 30)), int(rng.integers(2, 280)), int(rng.integers(1, 48))
    k, s = int(rng.integers(1, 6)), int(rng.integers(1, 4))
    pad = "VALID" if (rng.random() < 0.3 and h >= k and w >= k) else "SAME"
    x = n.input((1, h, w, c))
    if kind == "conv":
        y = n.conv(x, int(rng.integers(1, 70)), k, s, pad, act=str(rng.choice(["NONE", "RELU6"])))
    elif kind == "dw":
        y = n.conv(x, 0, k, s, pad, depthwise=True, multiplier=int(rng.choice([1, 2, 4])))
    elif kind == "maxpool":
        y = n.pool(x, k=k, stride=s, padding=pad)
    elif kind == "avgpool":
        y = n.pool(x, "AVERAGE_POOL_2D", padding=pad)
    elif kind == "fc":
        y = n.fully_connected(n.reshape(x, (h, w * c)) if w * c <= 1024 else x, int(rng.integers(1, 200)))
    elif kind == "add":
        y = n.binary("ADD", x, n.input((1, h, w, c) if rng.random() < 0.5 else (1, 1, 1, c), 0.07, 3))
    else:
        y = n.unary("LOGISTIC", x)
    return n.finish(y)


def test_random_layers_match_units():
    """40 seeded random layers (window sizes, strides, padding, widths past 255,
    channel counts) at random core counts, SRAM sizes and buffering: the device
    output equals the units' (which equal TFLite, tests/test_unit_*.py), or the
    compiler declines the layer through the shared rules."""
    rng = np.random.default_rng(2024)
    compiled = 0
    for seed in range(40):
        net = _random_layer(rng, seed)
        cores, kb = int(rng.choice(CORES)), int(rng.choice([4, 8, 16, 64]))
        x = net.random_inputs(seed)
        try:
            prog = _core.compile(net.g, cores=cores, sram_kb=kb, double_buffer=bool(rng.random() < 0.7))
        except nacc.UnsupportedError as e:
            assert "smallest tile needs" in str(e)
            continue
        got, _ = run(net, x, cores, kb, program=prog)
        assert_equal(unit_reference(net, x), got, f"seed {seed}: {cores} cores, {kb} KB")
        compiled += 1
    assert compiled >= 35

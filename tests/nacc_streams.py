"""Hand-written NACC command streams for the device and runtime tests.

Builds kernel commands register by register with the shadow Emitter, exactly
as docs/device_model.md describes them (tiles with halos, explicit per-tile
padding via the implied right/bottom pads, channel splits, mode 1 / mode 2),
packs weights as weight blocks (u32 length + compressed stream + padding to
16 bytes) into a constant blob, and wraps everything into a nacc._core.Program.
The expected results come from the units called directly on whole tensors.
"""
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from nacc import _core

CONST, INPUT, SCRATCH, OUTPUT = 0, 1, 2, 3  # region numbers used by the tests
CONV_MODES = {"conv": 0, "matmul": 1, "rgbconv": 2, "depthwise": 3, "fc": 4}
OPCODES = {"conv": "NPU_OP_CONV", "depthwise": "NPU_OP_DEPTHWISE", "fc": "NPU_OP_FULLY_CONNECTED",
           "matmul": "NPU_OP_MATMUL", "maxpool": "NPU_OP_POOL", "avgpool": "NPU_OP_POOL",
           "add": "NPU_OP_ELEMENTWISE", "sub": "NPU_OP_ELEMENTWISE", "mul": "NPU_OP_ELEMENTWISE",
           "act": "NPU_OP_ACTIVATION", "rgbconv": "NPU_OP_CONV", "act_q7": "NPU_OP_ACTIVATION",
           "mul_s16_s8": "NPU_OP_ELEMENTWISE"}
EW_MODES = {"sub": 1, "add": 2, "mul": 8, "mul_s16_s8": 4}


def ra(region, offset):
    """Region address: region in bits 31..29, offset below (docs/command_stream.md §4)."""
    return _core.region_address(region, offset)


def weight_block(w, mode="auto"):
    """A weight block: u32 LE stream length, the compressed stream, zero padding to 16 bytes."""
    s = _core.compress_weights(np.ascontiguousarray(w, dtype=np.int8).ravel(), mode)
    b = len(s).to_bytes(4, "little") + s
    return b + bytes(-len(b) % 16)


class Blob:
    """Contents of one region: chunks appended at aligned offsets."""

    def __init__(self):
        self.data = bytearray()

    def add(self, b, align=64):
        self.data += bytes(-len(self.data) % align)
        off = len(self.data)
        self.data += bytes(b)
        return off

    def array(self):
        return np.frombuffer(bytes(self.data), dtype=np.uint8).copy()


@dataclass
class Layer:
    """One operation on whole tensors; the expected output is `reference()`."""
    op: str
    x: np.ndarray                      # [1, H, W, C] (fc/matmul: [M, K] given as [1, M, 1, K])
    weights: Optional[np.ndarray] = None  # conv OHWI, depthwise [1,KH,KW,OC], fc [N,K], matmul B [K,N]
    bias: Optional[np.ndarray] = None
    mult: Optional[np.ndarray] = None
    shift: Optional[np.ndarray] = None
    kernel: tuple = (1, 1)             # (kh, kw) for pooling
    stride: tuple = (1, 1)             # (sh, sw)
    pad: tuple = (0, 0, 0, 0)          # (top, bottom, left, right): the reference's padding
    in_zp: int = 0
    out_zp: int = 0
    act_min: int = -128
    act_max: int = 127
    act_mode: str = "NONE"             # NONE, RELU, RELU6, LUT
    lut: Optional[np.ndarray] = None
    depth_multiplier: int = 1
    x2: Optional[np.ndarray] = None    # element-wise second operand ([1,H,W,C] or [1,1,1,C])
    ew: dict = field(default_factory=dict)  # element-wise register values (see elementwise params)
    b_zp: int = 0                      # matmul B zero point
    real_scale: Optional[np.ndarray] = None  # fc: float64 effective scales (QUANT_REAL_SCALE)
    # The q7 modes (docs/device_model.md §4): "rgbconv" (CONV_MODE RGB_CONV, q7 bias in `bias`,
    # NACC_FULL_CONV_PARA.BIAS_SHIFT / OUT_SHIFT) and "act_q7" (act_mode TANH or SIGMOID,
    # NACC_ACT_PARA.ACT_INT_W = int_width). Their expected outputs come from the tests.
    bias_shift: int = 0
    out_shift: int = 0
    int_width: int = 0
    # conv with NACC_ACT_PARA.MAC_FP32 (ONNX Runtime's float32 Conv, docs/device_model.md §4):
    # [OC, 4] float32 entries {s_x, s_w, bias, s_y} at QUANT_MUL_DMA_ADDR (no bias array) and
    # NACC_FP32_KBLOCK = (KBLOCK_LOG2, KBLOCK_TAIL_LOG2, KBLOCK_SPLIT). Expected outputs come
    # from the tests (tests/test_mac_fp32.py).
    mac_fp32: Optional[np.ndarray] = None
    kblock: tuple = (0, 0, 0)

    # ---- geometry
    @property
    def elem(self):
        """Feature-map bytes per element: 2 for int16 maps (DATA_FORM INT16: x is int16, the
        bias int64, the output int16; NACC_SPEC §9), else 1."""
        return 2 if self.x.dtype == np.int16 else 1

    @property
    def out_elem(self):
        """Output bytes per element: 1 for mul_s16_s8 (int16 inputs, an int8 output), else elem."""
        return 1 if self.op == "mul_s16_s8" else self.elem

    @property
    def in_hwc(self):
        return self.x.shape[1], self.x.shape[2], self.x.shape[3]

    @property
    def ksize(self):
        if self.op in ("conv", "rgbconv"):
            return self.weights.shape[1], self.weights.shape[2]
        if self.op == "depthwise":
            return self.weights.shape[1], self.weights.shape[2]
        if self.op in ("maxpool", "avgpool"):
            return self.kernel
        return (1, 1)

    @property
    def out_c(self):
        if self.op in ("conv", "rgbconv"):
            return self.weights.shape[0]
        if self.op == "depthwise":
            return self.weights.shape[3]
        if self.op == "fc":
            return self.weights.shape[0]
        if self.op == "matmul":
            return self.weights.shape[1]
        return self.x.shape[3]

    @property
    def out_hw(self):
        h, w, _ = self.in_hwc
        kh, kw = self.ksize
        sh, sw = self.stride
        t, b, l, r = self.pad
        return (h + t + b - kh) // sh + 1, (w + l + r - kw) // sw + 1

    def reference(self):
        """The unit called directly on the whole tensors."""
        kw = dict(act_min=self.act_min, act_max=self.act_max)
        if self.op == "conv":
            y = _core.conv2d(self.x, self.weights, self.bias, self.mult, self.shift,
                             stride=self.stride, padding=self.pad, input_zero_point=self.in_zp,
                             output_zero_point=self.out_zp, **kw)
        elif self.op == "depthwise":
            y = _core.depthwise_conv2d(self.x, self.weights, self.bias, self.mult, self.shift,
                                       depth_multiplier=self.depth_multiplier, stride=self.stride,
                                       padding=self.pad, input_zero_point=self.in_zp,
                                       output_zero_point=self.out_zp, **kw)
        elif self.op == "fc":
            a = self.x.reshape(self.x.shape[1], self.x.shape[3])
            if self.real_scale is not None:
                y = _core.fully_connected(a, self.weights, self.bias, effective_scale=self.real_scale,
                                          input_zero_point=self.in_zp,
                                          output_zero_point=self.out_zp, **kw)
            else:
                y = _core.fully_connected(a, self.weights, self.bias, self.mult, self.shift,
                                          input_zero_point=self.in_zp,
                                          output_zero_point=self.out_zp, **kw)
            y = y.reshape(1, a.shape[0], 1, -1)
        elif self.op == "matmul":
            a = self.x.reshape(self.x.shape[1], self.x.shape[3])
            y = _core.matmul(a, self.weights, self.mult, self.shift, a_zero_point=self.in_zp,
                             b_zero_point=self.b_zp, output_zero_point=self.out_zp, **kw)
            y = y.reshape(1, a.shape[0], 1, -1)
        elif self.op == "maxpool":
            y = _core.max_pool(self.x, kernel=self.kernel, stride=self.stride, padding=self.pad, **kw)
        elif self.op == "avgpool":
            y = _core.avg_pool(self.x, kernel=self.kernel, stride=self.stride, padding=self.pad, **kw)
        elif self.op in ("add", "sub"):
            fn = _core.add if self.op == "add" else _core.sub
            y = fn(self.x, self.x2, output_multiplier=int(self.mult[0]),
                   output_shift=int(self.shift[0]), output_zero_point=self.out_zp, **self.ew, **kw)
        elif self.op == "mul":
            y = _core.mul(self.x, self.x2, output_multiplier=int(self.mult[0]),
                          output_shift=int(self.shift[0]), output_zero_point=self.out_zp,
                          **self.ew, **kw)
        elif self.op == "mul_s16_s8":
            y = _core.mul_s16_s8(self.x, self.x2, output_multiplier=int(self.mult[0]),
                                 output_shift=int(self.shift[0]), output_zero_point=self.out_zp,
                                 **self.ew, **kw)
        elif self.op == "act":
            extra = {}
            if self.mult is not None:
                extra = dict(multiplier=int(self.mult[0]), shift=int(self.shift[0]))
            return _core.activation(self.x, mode=getattr(_core.ActMode, self.act_mode), input_zero_point=self.in_zp,
                                    output_zero_point=self.out_zp, lut=self.lut, **extra, **kw)
        else:
            raise ValueError(self.op)
        if self.act_mode == "LUT":
            y = self.lut[y.view(np.uint8)]
        return y


@dataclass
class Tile:
    """One kernel command: output rows [y0, y0+h), columns [x0, x0+w), channels [c0, c0+nc)."""
    y0: int
    h: int
    x0: int
    w: int
    c0: int = 0
    nc: Optional[int] = None
    fm_upd: int = 1
    k_upd: int = 1
    mode: int = 0          # 0 single core, 1 split kernels, 2 split height
    cores: int = 1
    areas: tuple = (0, 256, 512, 768)  # NACC_MEM_RANGE: IFM (SRAM/4 units), K, OFM, TEMP (SRAM/1024)


def grid(out_h, out_w, th, tw, **kw):
    """Tiles of at most th x tw outputs covering the output, row-major."""
    return [Tile(y, min(th, out_h - y), x, min(tw, out_w - x), **kw)
            for y in range(0, out_h, th) for x in range(0, out_w, tw)]


class StreamBuilder:
    """A command stream plus the constant blob it refers to."""

    def __init__(self):
        self.e = _core.Emitter()
        self.const = Blob()
        self._weight_cache = {}

    def reg(self, name, value=None, **fields):
        if value is None:
            value = _core.register_value(name, fields)
        self.e.set_register(name, value & 0xFFFFFFFF)

    def const_array(self, arr, align=64):
        key = ("arr", np.asarray(arr).tobytes(), np.asarray(arr).dtype.str)
        if key not in self._weight_cache:
            self._weight_cache[key] = self.const.add(np.ascontiguousarray(arr).tobytes(), align)
        return self._weight_cache[key]

    def const_blocks(self, arrays):
        """Weight blocks for the given arrays, padded to one K_TRANS_LEN, stored back to back."""
        blocks = [weight_block(a) for a in arrays]
        size = max(len(b) for b in blocks)
        data = b"".join(b + bytes(size - len(b)) for b in blocks)
        key = ("blocks", data)
        if key not in self._weight_cache:
            self._weight_cache[key] = self.const.add(data, 16)
        return self._weight_cache[key], size // 16

    def kernel(self, L: Layer, t: Tile, *, in_addr, out_addr, in_pitch=None, out_pitch=None,
               x2_addr=None, patch=None):
        """One kernel command for tile t of layer L (registers, then the opcode). `patch`:
        {register: value} written last, just before the opcode (fault tests)."""
        H, W, C = L.in_hwc
        OH, OW = L.out_hw
        OC = L.out_c
        kh, kw = L.ksize
        sh, sw = L.stride
        pt, pb, pl, pr = L.pad
        nc = OC - t.c0 if t.nc is None else t.nc
        op = L.op
        window = op in ("conv", "rgbconv", "depthwise", "maxpool", "avgpool")
        e = L.elem
        oe = L.out_elem
        in_pix, in_row = in_pitch or (C * e, W * C * e)
        out_pix, out_row = out_pitch or (OC * oe, OW * OC * oe)
        # Channel split: depthwise/pool/eltwise/activation also advance the IFM.
        in_c = C
        in_off = 0
        if op in ("depthwise", "maxpool", "avgpool", "add", "sub", "mul", "mul_s16_s8", "act", "act_q7"):
            m = L.depth_multiplier if op == "depthwise" else 1
            in_off = t.c0 // m
            in_c = nc // m
        conv_mode = CONV_MODES.get(op, 5)
        act_value = {"RELU": 0, "RELU6": 1, "TANH": 2, "SIGMOID": 3, "NONE": 4,
                     "LUT": 5}[L.act_mode]
        pool_mode = {"maxpool": 0, "avgpool": 1}.get(op, 2)
        act = L.act_mode
        quant = op in ("conv", "depthwise", "fc", "matmul", "add", "sub", "mul", "mul_s16_s8") or (
            op == "act" and L.mult is not None)
        fp32 = L.mac_fp32 is not None
        self.reg("NACC_CTRL", CONV_MODE=conv_mode, POOL_MODE=pool_mode, ACT_MODE=act_value,
                 QUANT_EN=int(quant), BIAS_EN=int(L.bias is not None), FM_UPD=t.fm_upd,
                 K_UPD=t.k_upd, ELEMENT_EN=int(op in EW_MODES),
                 ELEMENT_INPUT_QUANT_EN=int(op in ("add", "sub")), DATA_FORM=int(e == 2))
        if window:
            self.reg("NACC_KERNEL", K_SIZE_X=kw, K_SIZE_Y=kh, K_SIZE_XY=kw * kh - 1,
                     K_STRIDE_X=sw, K_STRIDE_Y=sh, K_DILATION_X=1, K_DILATION_Y=1)
            self.reg("NACC_PADDING", PAD_X=pl, PAD_Y=pt)
        self.reg("NACC_IN_FM", IN_FM_WIDTH=W, IN_FM_HEIGHT=H)
        self.reg("NACC_OUT_FM", OUT_FM_WIDTH=OW, OUT_FM_HEIGHT=OH)
        self.reg("NACC_FM_CH", IN_FM_CH=in_c, OUT_FM_CH=nc)
        self.reg("NACC_FM_OFFSET", IN_FM_OFFSET=-L.in_zp, OUT_FM_OFFSET=L.out_zp)
        self.reg("NACC_ACT_MIN", L.act_min)
        self.reg("NACC_ACT_MAX", L.act_max)
        self.reg("NACC_IN_FM_DMA_ADDR", in_addr + in_off * e)
        self.reg("NACC_OUT_DMA_ADDR", out_addr + t.c0 * oe)
        self.reg("NACC_DMA_PARA2", in_pix)
        self.reg("NACC_DMA_OFFSET1", in_row)
        self.reg("NACC_DMA_OUT_TRANS_LEN", out_pix)
        self.reg("NACC_DMA_OFFSET2", out_row)
        # Tile and halo (docs/device_model.md §3).
        iy0 = t.y0 * sh - pt if window else t.y0
        ih = (t.h - 1) * sh + kh
        ix0 = t.x0 * sw - pl if window else t.x0
        iw = (t.w - 1) * sw + kw
        self.reg("NACC_OUT_FM_SPLIT_H_OFFSET", t.y0)
        self.reg("NACC_OUT_FM_SPLIT_LEN", OUT_FM_SPLIT_LEN=t.h, OUT_FM_SPLIT_LEFT_LEN=t.x0)
        self.reg("NACC_OUT_FM_SPLIT", OUT_FM_SPLIT_WIDTH=t.w)
        self.reg("NACC_IN_FM_SPLIT_H_OFFSET", iy0 & 0xFFFFFFFF)
        self.reg("NACC_IN_FM_SPLIT_W_OFFSET", ix0 & 0xFFFFFFFF)
        n = t.cores
        if t.mode == 2:
            avg = t.h // n
            ov = t.h - (n - 1) * avg
            self.reg("NACC_IN_FM_SPLIT", IN_FM_SPLIT_WIDTH=iw,
                     IN_FM_SPLIT_LEFT_LEN=(avg - 1) * sh + kh)
            self.reg("NACC_BROADCAST_SPLIT", OUT_FM_SPLIT_AVG_HEIGHT=avg, OUT_FM_SPLIT_OV_HEIGHT=ov)
            self.reg("NACC_BROADCAST_DMA", IN_DMA_UNICAST_AVG_OFFSET=avg * sh,
                     IN_DMA_UNICAST_OV_OFFSET=(ov - 1) * sh + kh)
            self.reg("NACC_BROADCAST_CTRL1", int(avg != ov))
        else:
            self.reg("NACC_IN_FM_SPLIT", IN_FM_SPLIT_WIDTH=iw, IN_FM_SPLIT_LEFT_LEN=ih)
        per_core = max(1, nc // n) if t.mode == 1 else 0
        if t.mode == 1:
            self.reg("NACC_BROADCAST_DMA", EU_BIAS_START_OFFSET=per_core)
        self.reg("NACC_BROADCAST_CTRL", BROADCAST_MODE=t.mode, BROADCAST_NUM=n - 1)
        ifm_q, kb, ob, tb = t.areas
        self.reg("NACC_MEM_RANGE", IFM_MEM_BASE=ifm_q, K_MEM_BASE=kb, OFM_MEM_BASE=ob,
                 TEMP_MEM_BASE=tb)
        # Kernel data (constants).
        cs = slice(t.c0, t.c0 + nc)
        if op in ("conv", "rgbconv", "fc", "depthwise"):
            w = L.weights[cs] if op != "depthwise" else L.weights[..., cs]
            if t.mode == 1:
                # one block per core: its output channels (depthwise: the last axis)
                ax = 3 if op == "depthwise" else 0
                parts = [np.take(w, range(i * per_core, (i + 1) * per_core if i < n - 1
                                          else w.shape[ax]), axis=ax) for i in range(n)]
            else:
                parts = [w]
            off, beats = self.const_blocks(parts)
            self.reg("NACC_IN_K_DMA_ADDR", ra(CONST, off))
            self.reg("NACC_CONV_TRANS_LEN", K_TRANS_LEN=beats)
        if op == "fc":
            self.reg("NACC_FULL_CONV_PARA", FULL_KER_SIZE=-(-C // 64) - 1)
            self.reg("NACC_ACT_PARA", QUANT_REAL_SCALE=int(L.real_scale is not None))
        if op == "rgbconv":
            self.reg("NACC_FULL_CONV_PARA", BIAS_SHIFT=L.bias_shift, OUT_SHIFT=L.out_shift)
        if fp32:
            self.reg("NACC_ACT_PARA", MAC_FP32=1)
            self.reg("NACC_FP32_KBLOCK", KBLOCK_LOG2=L.kblock[0], KBLOCK_TAIL_LOG2=L.kblock[1],
                     KBLOCK_SPLIT=L.kblock[2])
        if op == "act_q7":
            self.reg("NACC_ACT_PARA", ACT_INT_W=L.int_width)
        if op == "depthwise":
            self.reg("NACC_DMA_PARA3", DW_CH_MULT=int(np.log2(L.depth_multiplier)))
        if op == "matmul":
            off = self.const_array(L.weights)
            self.reg("NACC_IN_K_DMA_ADDR", ra(CONST, off + t.c0))
            self.reg("NACC_DMA_PARAA", L.weights.shape[1])
            self.reg("NACC_MATRIX_A", MATRIX_A_XSIZE=C, MATRIX_A_YSIZE=H)
            self.reg("NACC_MATRIX_B", MATRIX_B_XSIZE=nc, MATRIX_B_YSIZE=C)
            self.reg("NACC_ELEMENTWISE", IN_ELEMENT_OFFSET2=-L.b_zp)
        if L.bias is not None:
            bias_t = np.int64 if e == 2 else np.int32
            self.reg("NACC_BIAS_DMA_ADDR",
                     ra(CONST, self.const_array(L.bias.astype(bias_t)) + np.dtype(bias_t).itemsize * t.c0))
        if quant:
            if fp32:
                self.reg("NACC_QUANT_MUL_DMA_ADDR", ra(CONST, self.const_array(
                    np.ascontiguousarray(L.mac_fp32, np.float32)) + 16 * t.c0))
            elif L.real_scale is not None:
                self.reg("NACC_QUANT_MUL_DMA_ADDR",
                         ra(CONST, self.const_array(L.real_scale.astype(np.float64)) + 8 * t.c0))
            else:
                per_channel = op in ("conv", "depthwise", "fc", "matmul")
                self.reg("NACC_QUANT_MUL_DMA_ADDR", ra(CONST, self.const_array(
                    L.mult.astype(np.int32)) + (4 * t.c0 if per_channel else 0)))
                self.reg("NACC_QUANT_SHIFT_DMA_ADDR", ra(CONST, self.const_array(
                    L.shift.astype(np.int32)) + (4 * t.c0 if per_channel else 0)))
        if act == "LUT":
            self.reg("NACC_IN_ACT_DMA_ADDR", ra(CONST, self.const_array(L.lut.astype(np.int8))))
        if op in EW_MODES:
            ew = L.ew
            self.reg("NACC_ELEMENTWISE", ELEMENTWISE_MODE=EW_MODES[op],
                     IN_ELEMENT_OFFSET1=ew.get("input1_offset", 0),
                     IN_ELEMENT_OFFSET2=ew.get("input2_offset", 0), LEFT_SHIFT=ew.get("left_shift", 0))
            self.reg("NACC_ELEMENT_QUANT1_MULT", ew.get("input1_multiplier", 0))
            self.reg("NACC_ELEMENT_QUANT1_SHIFT", ew.get("input1_shift", 0))
            self.reg("NACC_ELEMENT_QUANT2_MULT", ew.get("input2_multiplier", 0))
            self.reg("NACC_ELEMENT_QUANT2_SHIFT", ew.get("input2_shift", 0))
            broadcast = L.x2.shape[1] * L.x2.shape[2] == 1
            self.reg("NACC_DMA_PARAA", 0 if broadcast else C * e)
            self.reg("NACC_IN_K_DMA_ADDR", x2_addr + in_off * e)
        for name, value in (patch or {}).items():
            self.reg(name, value)
        self.e.op(OPCODES[op])

    def layer(self, L: Layer, tiles, *, in_addr, out_addr, x2_addr=None, wait_each=False, **kw):
        for t in tiles:
            self.kernel(L, t, in_addr=in_addr, out_addr=out_addr, x2_addr=x2_addr, **kw)
            if wait_each:
                self.e.op("NPU_OP_KERNEL_WAIT", 0)


def program(sb: StreamBuilder, inputs, outputs, *, cores=1, sram_kb=64, scratch=0):
    """A Program of the builder's stream: constants in region 0, inputs from region 1 on
    (INPUT, then 4, 5, ...), outputs in region 3 (then 6, 7), optional scratch in region 2."""
    if not sb.e.stopped:
        sb.e.op("NPU_OP_KERNEL_WAIT", 0)
        sb.e.stop()
    p = _core.Program()
    p.hw = _core.HwConfig(cores=cores, sram_kb=sram_kb)
    p.commands = sb.e.words
    if sb.const.data:
        p.constants = sb.const.array()
        p.set_region(CONST, "constant", len(sb.const.data))
    in_regions = [INPUT, 4, 5]
    out_regions = [OUTPUT, 6, 7]
    for i, x in enumerate(inputs):
        p.add_input(f"in{i}", list(x.shape), in_regions[i])
    for i, shape in enumerate(outputs):
        p.add_output(f"out{i}", list(shape), out_regions[i])
    if scratch:
        p.set_region(SCRATCH, "scratch", scratch)
    return p


def single_layer(L: Layer, tiles, *, cores=1, sram_kb=64, **kw):
    """Program running layer L as the given tiles: input region 1 (and 4 for x2), output 3."""
    sb = StreamBuilder()
    x2 = [L.x2] if L.x2 is not None else []
    sb.layer(L, tiles, in_addr=ra(INPUT, 0), out_addr=ra(OUTPUT, 0),
             x2_addr=ra(4, 0) if x2 else None, **kw)
    OH, OW = L.out_hw
    out_shape = (1, OH, OW, L.out_c * L.out_elem)  # int16 maps: bytes (view the output as int16)
    ins = [L.x.view(np.int8)] + [a.view(np.int8) for a in x2]
    return program(sb, ins, [out_shape], cores=cores, sram_kb=sram_kb), ins


def bind_program(dev, p, handler, inputs, base=None):
    """Binds a Program's regions into a nacc._core.Device the way the runtime does (handler
    window at (handler + 1) << 36, regions 4 GB apart, stream after region 7), starts it, and
    returns (output arrays, scratch arrays, stream address)."""
    base = (handler + 1) << 36 if base is None else base
    bases, outs, scratch = [], [], {}
    for r in p.regions:
        addr = base + (r["index"] << 32)
        bases.append(addr)
        if r["kind"] == "constant":
            dev.bind(addr, p.constants, readonly=True)
        elif r["kind"] == "input":
            dev.bind(addr, np.ascontiguousarray(inputs[r["io_index"]]), readonly=True)
        elif r["kind"] == "output":
            o = np.zeros(p.outputs[r["io_index"]]["shape"], np.int8)
            outs.append(o)
            dev.bind(addr, o)
        elif r["kind"] == "scratch":
            scratch[r["index"]] = np.zeros(r["size"], np.uint8)
            dev.bind(addr, scratch[r["index"]])
    stream = base + (8 << 32)
    words = p.commands
    dev.bind(stream, words, readonly=True)
    dev.start(handler, stream, words.nbytes, bases)
    return outs, scratch, stream

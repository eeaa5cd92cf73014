"""The fuzzer's op table: one entry per op kind (TFLite builtin name), each
with its generator (random parameters, boundaries included), its output-shape
rule, its constant data and its ONNX mapping.

Everything here is plain numpy on JSON-able dicts, so the main process never
imports TensorFlow. A graph spec (see generate.py) holds activation tensors
{"shape": NHWC list, "scale", "zp"} and ops {"kind", "in", "out", "p", "seed"};
constants (weights, bias, constant operands) are derived from the op's "seed"
and its shapes, so a spec whose shapes shrink still builds.

Adding a kind: write gen_<kind> and add one OpKind(...) row to TABLE.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

INT8_STD = 74.0  # standard deviation of uniform int8 data

# Hardware boundaries (NACC_SPEC §1-§3, csrc/arch/limits.h): the value at
# each limit and one past it. A generated parameter equal to one of these
# counts as a boundary hit for the report.
BOUNDARIES: Dict[str, set] = {
    "kernel": {1, 15, 16},
    "stride": {1, 3, 4},
    "padding": {0, 5, 6},
    "dilation": {2},
    "channels": {1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129},
    "depth_multiplier": {1, 8, 3},
    "fc_depth": {63, 64, 65, 127, 128, 129, 255, 256, 257},
    "pool_window": {1, 15, 16},
    "avg_pool_window": {"2x2s2", "other"},
    "zero_point": {-128, 127},
    "broadcast": {"scalar", "channel", "unsupported"},
    "fused_activation": {"RELU_N1_TO_1", "TANH"},
    "multiplier_gt_1": {True},
    "sram_tiling": {True},
    "cores": {1, 32},
    "sram_kb": {16, 1024},
    "feature_map_dim": {1},
    # ONNX only: how weights reach their op (what quantize_static, PyTorch and
    # tf2onnx exports write; see build_onnx.weight_nodes), the Gemm / MatMul
    # form of FULLY_CONNECTED, the reshape before it, a weight initializer
    # shared by two ops
    "weight_chain": {"q", "q_transpose", "int8_transpose", "reshape", "dqq"},
    "fc_form": {"gemm_t1", "gemm_t0", "matmul", "matmul_3d"},
    "flatten_op": {"Flatten", "Reshape"},
    "shared_weights": {True},
    # ONNX copy ops: the Slice unit's form (QDQ, or int8 with no DQ / Q), a
    # slice 1 wide on some axis of height / width / channels, Resize's
    # coordinate mapping (asymmetric + floor, or another pair)
    "slice_form": {"qdq", "int8"},
    "slice_extent": {1},
    "resize_mapping": {"asymmetric_floor", "other"},
    # int4 weights (generate fmt "tflite4"): the kinds that carried them
    "int4_weights": {"CONV_2D", "FULLY_CONNECTED"},
    # ONNX layout ops: Reshape written as Squeeze / Unsqueeze / Flatten, a
    # Slice written as a Split, the channel shuffle (Reshape -> Transpose ->
    # Reshape), a Transpose in its QDQ or int8 form
    "reshape_op": {"Reshape", "Squeeze", "Unsqueeze", "Flatten"},
    "split": {"one_output", "all_outputs"},
    "transpose_form": {"qdq", "int8", "shuffle"},
}

# ONNX weight chains (build_onnx.weight_nodes): int8 initializer -> DQ
# ("plain"), float -> Q -> DQ ("q", quantize_static's AddQDQPairToWeight),
# float -> Q -> Transpose -> DQ ("q_transpose", an exported Linear / a
# HWIO-stored conv), int8 -> Transpose -> DQ, int8 [n] -> Reshape -> DQ,
# int8 -> DQ -> Transpose -> Q -> DQ ("dqq", per tensor only).
WEIGHT_CHAINS = ["plain", "q", "q_transpose", "int8_transpose", "reshape", "dqq"]

ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


# ---- small random helpers -------------------------------------------------------

def loguniform(rng, lo, hi) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def pick(rng, items, p=None):
    return items[int(rng.choice(len(items), p=p))]


def channels(rng, cap=72) -> int:
    """Channel counts around the 16/32/64 lane multiples, sometimes plain random."""
    if rng.random() < 0.6:
        c = pick(rng, [1, 2, 3, 4, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65])
    elif rng.random() < 0.1:
        c = pick(rng, [127, 128, 129])
    else:
        c = int(rng.integers(1, 49))
    return min(c, cap) if cap else c


def act_quant(rng) -> dict:
    zp = int(rng.integers(-128, 128)) if rng.random() < 0.8 else pick(rng, [-128, 127, 0])
    return {"scale": loguniform(rng, 0.004, 0.2), "zp": zp}


def fused_activation(rng, invalid: List[str], allow_invalid: bool = True) -> str:
    if allow_invalid and rng.random() < 0.03:
        invalid.append("fused TANH")
        return "TANH"
    return pick(rng, ACTIVATIONS, p=[0.4, 0.3, 0.2, 0.1])


def same_pads(in_size, k, s, d=1):
    """TFLite SAME padding (before, after) and output size."""
    out = -(-in_size // s)
    eff = d * (k - 1) + 1
    total = max((out - 1) * s + eff - in_size, 0)
    return total // 2, total - total // 2, out


def window_out(in_size, k, s, padding, d=1):
    if padding == "SAME":
        return same_pads(in_size, k, s, d)[2]
    eff = d * (k - 1) + 1
    return (in_size - eff) // s + 1


def window_pads(in_size, k, s, padding, d=1):
    if padding == "SAME":
        return same_pads(in_size, k, s, d)[:2]
    return 0, 0


# ---- generation context ------------------------------------------------------------

@dataclasses.dataclass
class Ctx:
    """What a kind's generator sees: the rng, the spec being built, the MAC budget."""
    rng: np.random.Generator
    spec: dict
    mac_budget: int
    invalid_rate: float
    fmt: str = "tflite"

    def tensor(self, tid) -> dict:
        return self.spec["tensors"][str(tid)]

    def new_tensor(self, shape, quant=None) -> int:
        tid = len(self.spec["tensors"])
        q = quant or act_quant(self.rng)
        self.spec["tensors"][str(tid)] = {"shape": [int(d) for d in shape],
                                          "scale": float(q["scale"]), "zp": int(q["zp"])}
        return tid

    def new_input(self, shape, quant=None) -> int:
        tid = self.new_tensor(shape, quant)
        self.spec["inputs"].append(tid)
        return tid

    def want_invalid(self) -> bool:
        return self.rng.random() < self.invalid_rate


# ---- constants (weights, bias, constant operands) -------------------------------------

def weights_of(op: dict, in_shapes: Sequence[Sequence[int]], tensors: dict):
    """(weights int8 in TFLite layout, per-channel scales list, bias int32) of a
    CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED op, from op["seed"]."""
    p, kind = op["p"], op["kind"]
    # "share_seed": the weights of another op (the same shape and parameters)
    rng = np.random.default_rng(p.get("share_seed", op["seed"]))
    x = in_shapes[0]
    if kind == "CONV_2D":
        shape = (p["cout"], p["kh"], p["kw"], x[3] // p.get("groups", 1))
    elif kind == "TRANSPOSE_CONV":
        shape = (p["cout"], p["kh"], p["kw"], x[3])
    elif kind == "DEPTHWISE_CONV_2D":
        shape = (1, p["kh"], p["kw"], x[3] * p["mult"])
    else:
        shape = (p["n"], _fc_depth(x) if len(x) > 2 else x[-1])
    n_out = shape[3] if kind == "DEPTHWISE_CONV_2D" else shape[0]
    wmax = p.get("wmax", 127)
    lo = -8 if p.get("int4") else -wmax  # int4: the whole [-8, 7]
    w = rng.integers(lo, wmax + 1, shape).astype(np.int8)
    if p.get("per_channel", True):
        scales = [float(s) for s in p["wscale"] * rng.uniform(0.5, 2.0, n_out)]
    else:
        scales = [float(p["wscale"])]
    in_s = tensors[str(op["in"][0])]["scale"]
    brange = p.get("bias_range", 2000)
    bias = rng.integers(-brange, brange + 1, n_out).astype(np.int32)
    return w, scales, bias, in_s


def const_operand(op: dict, shape, quant) -> np.ndarray:
    rng = np.random.default_rng(op["seed"] + 7)
    return rng.integers(-128, 128, shape).astype(np.int8)


# ---- per-kind generators ------------------------------------------------------------
# gen(ctx, x) adds nothing itself; it returns (op params, extra input tensor ids,
# output quant) or None when the kind does not fit input x. Shapes come from
# out_shape(op, in_shapes).

def _conv_like(ctx: Ctx, x: int, depthwise: bool):
    rng, t = ctx.rng, ctx.tensor(x)
    if len(t["shape"]) != 4:
        return None
    _, h, w, cin = t["shape"]
    inv: List[str] = []
    p: dict = {"invalid": inv}
    p["padding"] = pick(rng, ["SAME", "VALID"])
    for axis, size in (("h", h), ("w", w)):
        k = pick(rng, [1, 2, 3, 3, 5, 7, 15, int(rng.integers(1, 16))])
        s = pick(rng, [1, 1, 2, 3])
        p["s" + axis] = s
        p["k" + axis] = k
    p["dh"] = p["dw"] = 1
    if ctx.want_invalid():
        which = pick(rng, ["kernel", "stride", "dilation", "padding"] +
                     ([] if depthwise else ["kernel"]) + (["mult"] if depthwise else []))
        if which == "kernel":  # stride 1: no space-to-depth factor for it
            p["kh"] = 16
            p["padding"] = "VALID"
            p["sh"] = 1
        elif which == "stride":
            p["sh"] = 4
            if not depthwise:  # a stride-4 CONV_2D runs as a gather; dilated, it has no form
                p["dh"] = p["dw"] = 2
        elif which == "dilation":  # dilation runs as phases with stride 1 only
            p["dh"] = p["dw"] = 2
            p["sh"] = 2
        elif which == "padding":
            p["padding"], p["kh"], p["sh"] = "SAME", 13, 1   # SAME pad 6
        inv.append(which)
    # Dilation (phases of undilated windows, stride 1) and groups (CONV_2D v6,
    # ONNX group): drawn from a side stream seeded by the spec and the op's
    # position, so every other parameter of the main stream stays as it was.
    side = np.random.default_rng([int(ctx.spec.get("seed", 0)), int(ctx.spec.get("index", 0)),
                                  len(ctx.spec["tensors"]), len(ctx.spec["ops"]), 15])
    if not inv and side.random() < 0.25:
        d = int(pick(side, [2, 2, 3, 4, 6]))
        p["dh"] = p["dw"] = d
        p["sh"] = p["sw"] = 1
        p["kh"], p["kw"] = min(p["kh"], 7), min(p["kw"], 7)
    if not depthwise and not inv and side.random() < 0.25:
        groups = [g for g in (2, 3, 4, 8, cin) if 1 < g <= cin and cin % g == 0]
        if groups:
            p["groups"] = int(pick(side, groups))
    # Space-to-depth (compiler/lower.h lower_space_to_depth): a CONV_2D of a
    # stride above 3 (ViT 16x16/16, AlexNet 11x11/4, a kernel below the
    # stride), VALID, or SAME over a multiple of the stride; same side stream.
    if (not depthwise and not inv and p.get("groups", 1) == 1 and p["dh"] == 1
            and side.random() < 0.15):
        st = int(pick(side, [4, 4, 5, 8, 16]))
        k = int(pick(side, [st, st, 3, 7, 11 if st == 4 else 17]))
        for axis, size in (("h", h), ("w", w)):
            p["s" + axis], p["k" + axis] = st, min(k, size)
        p["padding"] = "SAME" if h % st == 0 and w % st == 0 and side.random() < 0.5 else "VALID"
    if depthwise:
        p["mult"] = pick(rng, [1, 1, 1, 2, 4, 8]) if "mult" not in inv else 3
        if cin * p["mult"] > 160:
            p["mult"] = 1
            if "mult" in inv:
                inv.remove("mult")
    # keep the op valid for TFLite: VALID needs the window inside the input,
    # SAME pads over the limit only when asked for
    for axis, size in (("h", h), ("w", w)):
        k, s, d = p["k" + axis], p["s" + axis], p["d" + axis]
        if p["padding"] == "VALID" and d * (k - 1) + 1 > size:
            if "kernel" in inv and axis == "h":
                return None
            k = max(1, min(k, (size - 1) // d + 1))
        if p["padding"] == "SAME" and not inv:
            # a dilated window's phases pad about (k - 1) / 2 each
            while k > 1 and max(window_pads(size, k, s, "SAME", d)) > 5 * d:
                k -= 1
        p["k" + axis] = k
    if depthwise:
        cout = cin * p["mult"]
    else:
        p["cout"] = channels(rng)
        if p.get("groups", 1) > 1:  # a multiple of the groups
            p["cout"] = max(1, p["cout"] // p["groups"]) * p["groups"]
        cout = p["cout"]
    oh = window_out(h, p["kh"], p["sh"], p["padding"], p["dh"])
    ow = window_out(w, p["kw"], p["sw"], p["padding"], p["dw"])
    if oh < 1 or ow < 1:
        return None
    depth = p["kh"] * p["kw"] * (1 if depthwise else cin // p.get("groups", 1))
    if not depthwise:
        p["cout"] = int(max(1, min(p["cout"], ctx.mac_budget // max(1, oh * ow * depth))))
        if p.get("groups", 1) > 1:
            p["cout"] = max(1, p["cout"] // p["groups"]) * p["groups"]
        cout = p["cout"]
    elif oh * ow * depth * cout > ctx.mac_budget * 2:
        return None
    p["act"] = fused_activation(rng, inv)
    p["per_channel"] = bool(rng.random() < 0.8)
    p["wmax"] = int(pick(rng, [127, 127, 127, 64, 8]))
    p["wscale"] = loguniform(rng, 0.001, 0.03)
    p["bias_range"] = int(pick(rng, [0, 100, 2000, 100000]))
    onnx_weight_chain(ctx, p)
    return p, [], _mac_out_quant(ctx, x, p, depth)


def onnx_weight_chain(ctx: Ctx, p: dict) -> None:
    """ONNX specs: how the op's weights reach it (p["wchain"], WEIGHT_CHAINS).
    Draws nothing for TFLite specs, so their random stream is unchanged."""
    if ctx.fmt != "onnx":
        return
    chains = [c for c in WEIGHT_CHAINS if c != "dqq" or not p["per_channel"]]
    p["wchain"] = pick(ctx.rng, chains)


# Weight parameters a FULLY_CONNECTED copies from the op whose weights it shares.
_SHARED_WEIGHT_KEYS = ("n", "per_channel", "wmax", "wscale", "bias_range")


def _fc_depth(shape) -> int:
    """K of a FULLY_CONNECTED on `shape`: the last dimension of a 3-D input
    (ONNX MatMul), else everything after the batch (flattened)."""
    return int(shape[-1]) if len(shape) == 3 else int(np.prod(shape[1:]))


def _mac_out_quant(ctx: Ctx, x: int, p: dict, depth: int) -> dict:
    """An output scale that keeps the accumulator's spread inside int8 (times a
    random factor; rarely a requantization multiplier above 1)."""
    rng = ctx.rng
    w_std = p["wmax"] / math.sqrt(3)
    acc_std = math.sqrt(depth) * INT8_STD * w_std + 1.0
    scale = ctx.tensor(x)["scale"] * p["wscale"] * acc_std / 40.0 * loguniform(rng, 0.3, 3.0)
    if rng.random() < 0.03:
        scale = ctx.tensor(x)["scale"] * p["wscale"] * loguniform(rng, 0.2, 0.9)  # multiplier > 1
        p["multiplier_gt_1"] = True
    q = act_quant(rng)
    q["scale"] = scale
    return q


def gen_conv(ctx, x):
    return _conv_like(ctx, x, depthwise=False)


def gen_depthwise(ctx, x):
    return _conv_like(ctx, x, depthwise=True)


def gen_fully_connected(ctx, x):
    rng, t = ctx.rng, ctx.tensor(x)
    shape = t["shape"]
    onnx = ctx.fmt == "onnx"
    # ONNX: a 3-D input is a MatMul [1, M, K] x [K, N] (no TFLite FULLY_CONNECTED form)
    if len(shape) not in ((2, 3, 4) if onnx else (2, 4)) or shape[0] != 1:
        return None
    k = _fc_depth(shape)
    if k > 4096 or (len(shape) == 3 and shape[1] * k > 4096):
        return None
    p = {"invalid": [], "n": channels(rng, cap=None)}
    p["n"] = int(max(1, min(p["n"], ctx.mac_budget // (k * (shape[1] if len(shape) == 3 else 1)))))
    # TFLite's FULLY_CONNECTED itself rejects other fused activations
    p["act"] = fused_activation(rng, p["invalid"], allow_invalid=False)
    p["per_channel"] = bool(rng.random() < 0.3)
    p["wmax"] = int(pick(rng, [127, 127, 64, 8]))
    p["wscale"] = loguniform(rng, 0.001, 0.03)
    p["bias_range"] = int(pick(rng, [0, 100, 2000, 100000]))
    if onnx:
        # the weights of an earlier FULLY_CONNECTED of the same depth, half the
        # time: build_onnx stores them once (one initializer, two consumers)
        same = [o for o in ctx.spec["ops"] if o["kind"] == "FULLY_CONNECTED" and "share_seed" not in o["p"]
                and _fc_depth(ctx.tensor(o["in"][0])["shape"]) == k]
        if same and rng.random() < 0.5:
            src = same[int(rng.integers(len(same)))]
            p.update({key: src["p"][key] for key in _SHARED_WEIGHT_KEYS})
            p["share_seed"] = int(src["seed"])
        p["fc_form"] = "matmul_3d" if len(shape) == 3 else pick(rng, ["gemm_t1", "gemm_t0", "matmul"])
        if len(shape) == 4:
            p["flatten_op"] = pick(rng, ["Flatten", "Reshape"])
        onnx_weight_chain(ctx, p)
    return p, [], _mac_out_quant(ctx, x, p, k)


def _pool(ctx, x, avg: bool):
    rng, t = ctx.rng, ctx.tensor(x)
    if len(t["shape"]) != 4:
        return None
    _, h, w, _ = t["shape"]
    inv: List[str] = []
    p = {"invalid": inv, "padding": pick(rng, ["SAME", "VALID"])}
    if avg and ctx.fmt == "tflite":
        # The pooling unit's 2x2 stride 2; depthwise region passes for any
        # window up to 15 (InceptionV3's 3x3 stride-1 SAME; a stride of 4 makes
        # every output row its own clipped window); one window over the whole
        # input (a DS-CNN's global pool) on the matrix unit; past them: a 16
        # window that is not global.
        form = pick(rng, ["unit", "inception", "any", "any", "stride4", "global"])
        p["kh"] = p["kw"] = p["sh"] = p["sw"] = 2
        if form == "inception":
            p.update(kh=3, kw=3, sh=1, sw=1, padding="SAME")
        elif form == "any":
            p["kh"] = int(pick(rng, [1, 2, 3, 5, 7, 15, int(rng.integers(1, 16))]))
            p["kw"] = int(pick(rng, [1, 2, 3, 5, 7, 15, int(rng.integers(1, 16))]))
            p["sh"], p["sw"] = int(pick(rng, [1, 2, 3])), int(pick(rng, [1, 2, 3]))
        elif form == "stride4":
            p.update(kh=int(pick(rng, [2, 4, 5])), kw=int(pick(rng, [1, 4, 7])), sh=4, sw=4)
        elif form == "global":
            p.update(kh=h, kw=w, sh=int(pick(rng, [1, 2, 4])), sw=int(pick(rng, [1, 3, 4])),
                     padding="VALID")
            if h * w > 2895:
                return None
        if ctx.want_invalid():
            if h > 16:
                p.update(kh=16, kw=min(w, 3), sh=1, sw=1, padding="VALID")
                inv.append("avg window 16")
    elif avg:
        p["kh"] = p["kw"] = p["sh"] = p["sw"] = 2
        if ctx.want_invalid():
            p["kh"] = p["kw"] = pick(rng, [1, 3])
            p["sh"] = p["sw"] = pick(rng, [1, 2])
            inv.append("avg window")
    else:
        p["kh"] = pick(rng, [1, 2, 3, 3, 15, int(rng.integers(1, 16))])
        p["kw"] = pick(rng, [1, 2, 3, 3, 15, int(rng.integers(1, 16))])
        p["sh"], p["sw"] = pick(rng, [1, 2, 3]), pick(rng, [1, 2, 3])
        if ctx.want_invalid():
            if rng.random() < 0.5:
                p["kh"], p["padding"] = 16, "VALID"
                inv.append("window 16")
            else:
                p["sw"] = 4
                inv.append("stride 4")
    for axis, size in (("h", h), ("w", w)):
        k, s = p["k" + axis], p["s" + axis]
        if p["padding"] == "VALID" and k > size:
            if inv and axis == "h" and k == 16:
                return None
            k = size
        if p["padding"] == "SAME":
            while k > 1 and max(window_pads(size, k, s, "SAME")) > 5:
                k -= 1
        p["k" + axis] = k
    if avg and ctx.fmt != "tflite" and not inv and (p["kh"], p["kw"]) != (2, 2):
        return None
    if avg and ctx.fmt == "tflite" and max(p["sh"], p["sw"]) > 3:
        # every output position its own region: at most 256 (support/pool_regions.h)
        oh = window_out(h, p["kh"], p["sh"], p["padding"], 1)
        ow = window_out(w, p["kw"], p["sw"], p["padding"], 1)
        if oh * ow > 256:
            inv.append("avg regions > 256")
    # ONNX has no fused activation on pools (Pool -> Relu -> Q is no node unit)
    p["act"] = fused_activation(rng, inv) if ctx.fmt == "tflite" or rng.random() < 0.1 else "NONE"
    return p, [], {"scale": t["scale"], "zp": t["zp"]}  # same quantization in and out


def gen_max_pool(ctx, x):
    return _pool(ctx, x, avg=False)


def gen_avg_pool(ctx, x):
    return _pool(ctx, x, avg=True)


def _elementwise(ctx, x, kind):
    rng, t = ctx.rng, ctx.tensor(x)
    shape = t["shape"]
    inv: List[str] = []
    p: dict = {"invalid": inv}
    mode = pick(rng, ["full", "full", "channel", "scalar", "self"])
    if ctx.want_invalid() and len(shape) == 4 and shape[1] > 1 and shape[2] > 1:
        mode = "row"
        inv.append("broadcast")
    other_shape = {"full": shape, "self": shape,
                   "channel": [1] * (len(shape) - 1) + [shape[-1]],
                   "scalar": [1] * len(shape),
                   "row": [1, shape[1], 1, shape[-1]] if len(shape) == 4 else shape}[mode]
    p["broadcast"] = mode
    p["const"] = bool(mode != "self" and rng.random() < (0.8 if mode == "scalar" else 0.3))
    p["swap"] = bool(rng.random() < (0.1 if kind == "SUB" else 0.3))
    # what the NPU runs (rule elementwise_broadcast): a runtime first operand of
    # the output's shape; a scalar second operand only as a constant (or one
    # channel); SUB does not swap
    full = other_shape == shape
    small_ok = full or other_shape[-1] == shape[-1] or p["const"]
    if mode != "row" and not (small_ok and (not p["swap"] or kind != "SUB" or (full and not p["const"]))):
        inv.append("operand order / runtime scalar")
    if mode == "self":
        other = x
    elif p["const"]:
        other = ctx.new_tensor(other_shape)
        p["const_tensor"] = other
    else:
        other = ctx.new_input(other_shape)
    p["act"] = fused_activation(rng, inv)
    return p, [other], act_quant(rng)


def gen_add(ctx, x):
    return _elementwise(ctx, x, "ADD")


def gen_sub(ctx, x):
    return _elementwise(ctx, x, "SUB")


def gen_mul(ctx, x):
    return _elementwise(ctx, x, "MUL")


def gen_unary_requant(ctx, x):
    return {"invalid": []}, [], act_quant(ctx.rng)


def gen_hard_swish(ctx, x):
    # TFLite's HARD_SWISH needs input scale / output scale <= 1 (activations.cc)
    q = act_quant(ctx.rng)
    q["scale"] = ctx.tensor(x)["scale"] * loguniform(ctx.rng, 1.0, 4.0)
    return {"invalid": []}, [], q


def gen_logistic(ctx, x):
    return {"invalid": []}, [], {"scale": 1 / 256, "zp": -128}


def gen_tanh(ctx, x):
    return {"invalid": []}, [], {"scale": 1 / 128, "zp": 0}


def gen_leaky_relu(ctx, x):
    return {"invalid": [], "alpha": pick(ctx.rng, [0.01, 0.1, 0.2, 0.5])}, [], act_quant(ctx.rng)


def gen_reshape(ctx, x):
    rng, t = ctx.rng, ctx.tensor(x)
    shape = t["shape"]
    n = int(np.prod(shape))
    quant = {"scale": t["scale"], "zp": t["zp"]}
    if ctx.fmt == "onnx" and rng.random() < 0.35:
        p = _onnx_unit_dims(rng, shape)
        if p is not None:
            _onnx_copy_form(ctx, p, x)
            return p, [], quant
    choices = [[1, n]] if n <= 65535 else []  # feature map dimensions are 16-bit
    if len(shape) == 4:
        choices.append([1, shape[1] * shape[2], shape[3]])
        choices.append([1, shape[2], shape[1], shape[3]])
        choices.append([1, 1, shape[1] * shape[2], shape[3]])
    else:
        for c in (1, 2, 4, 8, 16):
            if n % c == 0 and n // c <= 4096:
                h = n // c
                hs = [d for d in range(1, h + 1) if h % d == 0]
                hh = hs[len(hs) // 2]
                choices.append([1, hh, h // hh, c])
    if not choices:
        return None
    new = pick(rng, choices)
    if list(new) == list(shape):
        return None
    p = {"invalid": [], "new_shape": [int(d) for d in new]}
    if ctx.fmt == "onnx":
        if len(shape) == 4 and len(new) == 2 and rng.random() < 0.5:
            p["onnx_op"] = "Flatten"  # axis 1 of the NCHW tensor: the same [1, n]
        _onnx_copy_form(ctx, p, x)
    return p, [], quant


def _onnx_unit_dims_of(shape, op: str, axis: int) -> Optional[List[int]]:
    """The spec shape (NHWC when rank 4) after ONNX `op` (Squeeze or
    Unsqueeze) of `axis` on the ONNX (NCHW) form of `shape`; None if invalid."""
    onnx_in = [shape[0], shape[3], shape[1], shape[2]] if len(shape) == 4 else list(shape)
    if op == "Squeeze":
        if not 0 < axis < len(onnx_in) or onnx_in[axis] != 1 or len(onnx_in) <= 2:
            return None
        out = onnx_in[:axis] + onnx_in[axis + 1:]
    else:
        if not 0 < axis <= len(onnx_in) or len(onnx_in) >= 4:
            return None
        out = onnx_in[:axis] + [1] + onnx_in[axis:]
    return [out[0], out[2], out[3], out[1]] if len(out) == 4 else out


def _onnx_unit_dims(rng, shape) -> Optional[dict]:
    """ONNX specs only: a RESHAPE written as Squeeze or Unsqueeze, removing a
    1 from or inserting a 1 into the NCHW (rank 4) or plain (rank 2-3) shape
    the ONNX graph has. "new_shape" is the spec's (NHWC when rank 4), so
    that build_onnx.nchw(new_shape) is the Squeeze / Unsqueeze result."""
    forms = [(op, a, out) for op in ("Squeeze", "Unsqueeze") for a in range(1, len(shape) + 1)
             for out in [_onnx_unit_dims_of(shape, op, a)] if out is not None]  # never the batch axis
    if not forms:
        return None
    op, axis, new = forms[int(rng.integers(len(forms)))]
    return {"invalid": [], "new_shape": [int(d) for d in new], "onnx_op": op, "axes": [axis]}


def gen_softmax(ctx, x):
    return {"invalid": [], "beta": pick(ctx.rng, [1.0, 0.5, 2.0])}, [], {"scale": 1 / 256, "zp": -128}


def gen_pad(ctx, x):
    rng, t = ctx.rng, ctx.tensor(x)
    if len(t["shape"]) != 4:
        return None
    pads = [[0, 0], [int(rng.integers(0, 6)), int(rng.integers(0, 6))],
            [int(rng.integers(0, 6)), int(rng.integers(0, 6))], [0, 0]]
    p = {"invalid": [], "pads": pads}
    if ctx.want_invalid():
        pads[1][1] = 6
        p["invalid"].append("padding 6")
    return p, [], {"scale": t["scale"], "zp": t["zp"]}


def gen_concat(ctx, x):
    rng, t = ctx.rng, ctx.tensor(x)
    shape = t["shape"]
    axis = len(shape) - 1 if rng.random() < 0.7 else int(rng.integers(1, len(shape)))
    other_shape = list(shape)
    other_shape[axis] = int(rng.integers(1, 17))
    other = ctx.new_input(other_shape, {"scale": t["scale"], "zp": t["zp"]})
    return {"invalid": [], "axis": axis, "act": "NONE"}, [other], {"scale": t["scale"], "zp": t["zp"]}


def gen_slice(ctx, x):
    """SLICE: a window of every axis (begin, size; size -1 = to the end) of
    ranks 2 to 4 (one image). Invalid: a begin past the input (TFLite rejects
    it on the host too, so the spec is dropped by out_shape)."""
    rng, t = ctx.rng, ctx.tensor(x)
    shape = t["shape"]
    if ctx.fmt == "onnx" and rng.random() < 0.4:
        p = _onnx_split(rng, shape)
        if p is not None:
            _onnx_copy_form(ctx, p, x)
            return p, [], {"scale": t["scale"], "zp": t["zp"]}
    begin = [int(rng.integers(0, d)) for d in shape]
    size = [int(rng.integers(1, d - b + 1)) if rng.random() < 0.8 else -1
            for d, b in zip(shape, begin)]
    if len(shape) == 4:
        begin[0], size[0] = 0, 1
    p = {"invalid": [], "begin": begin, "size": size}
    _onnx_copy_form(ctx, p, x)
    return p, [], {"scale": t["scale"], "zp": t["zp"]}


def _onnx_split(rng, shape) -> Optional[dict]:
    """ONNX specs only: a SLICE written as one output of an ONNX Split along
    one axis (channels, rows or columns of a rank-4 tensor, any non-batch axis
    otherwise) into 2-4 pieces; the spec's op output is piece "split_out",
    the other pieces are graph-dead (ShuffleNet and YOLO use all of them:
    build_onnx makes them graph outputs with `split_all`). begin / size
    select the same piece, so out_shape needs nothing new."""
    axes = [a for a in range(1, len(shape)) if shape[a] >= 2]
    if not axes:
        return None
    a = axes[int(rng.integers(len(axes)))]
    n = int(rng.integers(2, min(4, shape[a]) + 1))
    cuts = sorted(int(c) for c in rng.choice(np.arange(1, shape[a]), n - 1, replace=False))
    sizes = [e - b for b, e in zip([0] + cuts, cuts + [shape[a]])]
    k = int(rng.integers(n))
    begin, size = [0] * len(shape), list(shape)
    begin[a], size[a] = sum(sizes[:k]), sizes[k]
    return {"invalid": [], "begin": begin, "size": size, "split_axis": a, "split": sizes,
            "split_out": k, "split_all": bool(rng.random() < 0.5)}


def _onnx_copy_form(ctx, p, x):
    """ONNX specs only (the TFLite stream is unchanged): `int8_form` (30 %),
    the Slice straight on the int8 tensor with no DequantizeLinear /
    QuantizeLinear around it (the EP's int8 unit) instead of the QDQ unit;
    never on a graph input (no QuantizeLinear defines its quantization, so
    the EP declines it, as it should)."""
    if ctx.fmt == "onnx":
        p["int8_form"] = bool(ctx.rng.random() < 0.3) and x not in ctx.spec["inputs"]


def gen_strided_slice(ctx, x):
    """STRIDED_SLICE: begin / end / stride per axis (strides 1-3 on all but
    the channel axis, some begin_mask / end_mask bits, negative begins).
    Invalid: a channel stride of 2 (declined: the channels are one DMA run)."""
    rng, t = ctx.rng, ctx.tensor(x)
    shape = t["shape"]
    rank = len(shape)
    begin, end, strides = [], [], []
    bmask = emask = 0
    for d, n in enumerate(shape):
        b = int(rng.integers(0, n))
        e = int(rng.integers(b + 1, n + 1))
        s = int(pick(rng, [1, 1, 2, 3])) if d < rank - 1 else 1
        if rng.random() < 0.2:
            b -= n  # the same start counted from the end
        if rng.random() < 0.15:
            bmask |= 1 << d
        if rng.random() < 0.15:
            emask |= 1 << d
        begin.append(b)
        end.append(e)
        strides.append(s)
    if rank == 4:
        begin[0], end[0], strides[0] = 0, 1, 1
        bmask &= ~1
        emask &= ~1
    p = {"invalid": [], "begin": begin, "end": end, "strides": strides, "begin_mask": bmask,
         "end_mask": emask}
    if ctx.want_invalid() and _strided_extent(shape[-1], begin[-1], end[-1], 2, (bmask >> (rank - 1)) & 1,
                                              (emask >> (rank - 1)) & 1) >= 2:
        strides[-1] = 2  # two or more channels a stride apart (one channel is a plain copy)
        p["invalid"].append("channel stride 2")
    _onnx_copy_form(ctx, p, x)
    return p, [], {"scale": t["scale"], "zp": t["zp"]}


def _strided_extent(n, b, e, s, bm, em):
    b = 0 if bm else (b + n if b < 0 else b)
    e = n if em else (e + n if e < 0 else e)
    b, e = min(max(b, 0), n), min(max(e, 0), n)
    return max(0, -(-(e - b) // s))


def gen_resize_nearest(ctx, x):
    """RESIZE_NEAREST_NEIGHBOR by factors 1-4 per axis, either
    half_pixel_centers; align_corners at 20 % (claimed where TFLite's mapping
    is a replication). Invalid: a non-integer factor (3/2)."""
    rng, t = ctx.rng, ctx.tensor(x)
    shape = t["shape"]
    if len(shape) != 4:
        return None
    fh, fw = int(pick(rng, [1, 2, 2, 3, 4])), int(pick(rng, [1, 2, 2, 3, 4]))
    size = [shape[1] * fh, shape[2] * fw]
    p = {"invalid": [], "size": size, "align_corners": bool(rng.random() < 0.2),
         "half_pixel_centers": bool(rng.random() < 0.5)}
    if p["align_corners"]:
        p["half_pixel_centers"] = False  # TFLite rejects both
    if ctx.want_invalid() and shape[1] % 2 == 0:
        size[0] = shape[1] * 3 // 2
        p["invalid"].append("factor 3/2")
    if ctx.fmt == "onnx":
        # ONNX Resize: asymmetric + floor (a replication for every whole
        # factor) at 60 %, otherwise a coordinate transformation and nearest
        # mode at random (the EP claims those that map output o to o / f);
        # `sizes` instead of `scales` at 30 % (always for a non-whole factor)
        if rng.random() < 0.6:
            p["ct"], p["nearest_mode"] = "asymmetric", "floor"
        else:
            p["ct"] = pick(rng, ["half_pixel", "asymmetric", "pytorch_half_pixel",
                                 "tf_half_pixel_for_nn", "align_corners"])
            p["nearest_mode"] = pick(rng, ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
        p["use_sizes"] = bool(rng.random() < 0.3)
    return p, [], {"scale": t["scale"], "zp": t["zp"]}


def gen_transpose_conv(ctx, x):
    """TRANSPOSE_CONV (phase convolutions): stride 1-3 and kernel 1-5 per axis
    (a kernel below the stride leaves phases of bias only), SAME / VALID,
    every output size TFLite accepts for the input (the converter's and up to
    s - 1 more or less), per-channel weights, bias, fused activations. No
    invalid form: per-tensor weights with several output channels make
    TFLite's kernel read past its multiplier arrays, and output sizes past the
    input's reach fail TFLite's optimized kernel's Prepare."""
    rng, t = ctx.rng, ctx.tensor(x)
    if len(t["shape"]) != 4:
        return None
    _, h, w, cin = t["shape"]
    p: dict = {"invalid": [], "padding": pick(rng, ["SAME", "VALID"])}
    for axis, size in (("h", h), ("w", w)):
        s, k = int(pick(rng, [1, 2, 2, 3])), int(pick(rng, [1, 2, 3, 3, 4, 5]))
        # TFLite's optimized kernel requires the input size its padding rule
        # gives for the output size: SAME ceil(O / s), VALID (O + s - K) / s.
        extra = int(rng.integers(0, s)) if rng.random() < 0.3 else 0
        o = size * s - extra if p["padding"] == "SAME" else (size - 1) * s + k + extra
        p["s" + axis], p["k" + axis], p["o" + axis] = s, k, o
    depth = -(-p["kh"] // p["sh"]) * -(-p["kw"] // p["sw"]) * cin
    p["cout"] = int(max(1, min(channels(rng), ctx.mac_budget // max(1, p["oh"] * p["ow"] * depth))))
    p["act"] = fused_activation(rng, p["invalid"], allow_invalid=False)
    p["per_channel"] = True
    p["wmax"] = int(pick(rng, [127, 127, 64, 8]))
    p["wscale"] = loguniform(rng, 0.001, 0.03)
    p["bias_range"] = int(pick(rng, [0, 100, 2000, 100000]))
    return p, [], _mac_out_quant(ctx, x, p, depth)


def gen_transpose(ctx, x):
    """TRANSPOSE of a rank 2-4 tensor by a random permutation (a 4-D output
    leads with one image: copy passes through DMA pitches)."""
    rng, t = ctx.rng, ctx.tensor(x)
    shape = t["shape"]
    if len(shape) < 2 or len(shape) > 4:
        return None
    for _ in range(8):
        perm = [int(v) for v in rng.permutation(len(shape))]
        if len(shape) < 4 or shape[perm[0]] == 1:
            break
    else:
        return None
    quant = {"scale": t["scale"], "zp": t["zp"]}
    if ctx.fmt == "onnx" and len(shape) == 4 and rng.random() < 0.4:
        groups = [g for g in (2, 3, 4, 8) if shape[3] % g == 0 and shape[3] > g]
        if groups:  # ShuffleNet's channel shuffle: Reshape -> Transpose -> Reshape
            p = {"invalid": [], "perm": [0, 1, 2, 3], "shuffle": int(pick(rng, groups))}
            _onnx_copy_form(ctx, p, x)
            return p, [], quant
    if perm == list(range(len(shape))):
        return None
    p = {"invalid": [], "perm": perm}
    _onnx_copy_form(ctx, p, x)
    return p, [], quant


def gen_resize_bilinear(ctx, x):
    """RESIZE_BILINEAR by factors 1, 2 or 4 per axis (depthwise passes with
    TFLite's rounding), half_pixel_centers or align_corners at random.
    Invalid: factor 3 (its 10-bit fractions share no divisor: declined)."""
    rng, t = ctx.rng, ctx.tensor(x)
    shape = t["shape"]
    if len(shape) != 4:
        return None
    fh, fw = int(pick(rng, [1, 2, 2, 4])), int(pick(rng, [1, 2, 2, 4]))
    p = {"invalid": [], "size": [shape[1] * fh, shape[2] * fw],
         "align_corners": bool(rng.random() < 0.1), "half_pixel_centers": bool(rng.random() < 0.7)}
    if p["align_corners"]:
        p["half_pixel_centers"] = False
    if ctx.want_invalid():
        p["size"][1] = shape[2] * 3
        p["invalid"].append("factor 3")
    return p, [], {"scale": t["scale"], "zp": t["zp"]}


def gen_space_to_depth(ctx, x):
    """SPACE_TO_DEPTH by a block size (2-4) dividing the height and width."""
    rng, t = ctx.rng, ctx.tensor(x)
    shape = t["shape"]
    if len(shape) != 4:
        return None
    blocks = [b for b in (2, 3, 4) if shape[1] % b == 0 and shape[2] % b == 0]
    if not blocks:
        return None
    return {"invalid": [], "block": int(pick(rng, blocks))}, [], {"scale": t["scale"], "zp": t["zp"]}


def gen_depth_to_space(ctx, x):
    """DEPTH_TO_SPACE by a block size (2-4) whose square divides the channels."""
    rng, t = ctx.rng, ctx.tensor(x)
    shape = t["shape"]
    if len(shape) != 4:
        return None
    blocks = [b for b in (2, 3, 4) if shape[3] % (b * b) == 0]
    if not blocks:
        return None
    return {"invalid": [], "block": int(pick(rng, blocks))}, [], {"scale": t["scale"], "zp": t["zp"]}


def gen_max_min(ctx, x):
    """MAXIMUM / MINIMUM against a scalar int8 constant (boundary values
    -128 / 127 / the zero point among them). Invalid: a second runtime
    operand (declined: no max / min element-wise mode)."""
    rng, t = ctx.rng, ctx.tensor(x)
    p = {"invalid": [], "value": int(pick(rng, [-128, 127, t["zp"], int(rng.integers(-128, 128))]))}
    extra = []
    if ctx.want_invalid():
        extra = [ctx.new_input(list(t["shape"]), {"scale": t["scale"], "zp": t["zp"]})]
        p["invalid"].append("two runtime operands")
    return p, extra, {"scale": t["scale"], "zp": t["zp"]}


def gen_mean(ctx, x):
    rng, t = ctx.rng, ctx.tensor(x)
    if len(t["shape"]) != 4:
        return None
    return {"invalid": [], "keep_dims": bool(rng.random() < 0.5)}, [], act_quant(rng)


def gen_batch_matmul(ctx, x):
    rng, t = ctx.rng, ctx.tensor(x)
    shape = t["shape"]
    if len(shape) != 3 or shape[0] != 1:
        return None
    n = channels(rng)
    other = ctx.new_input([1, shape[2], n])
    q = act_quant(rng)
    q["scale"] = t["scale"] * ctx.tensor(other)["scale"] * math.sqrt(shape[2]) * INT8_STD ** 2 / 40
    return {"invalid": [], "n": n}, [other], q


def gen_quantize(ctx, x):
    return {"invalid": []}, [], act_quant(ctx.rng)


# ---- output shapes ------------------------------------------------------------------------

def out_shape(op: dict, ins: Sequence[Sequence[int]]) -> Optional[List[int]]:
    """The output shape of `op` for input shapes `ins`; None when invalid."""
    k, p = op["kind"], op["p"]
    x = list(ins[0])
    if k in ("CONV_2D", "DEPTHWISE_CONV_2D", "MAX_POOL_2D", "AVERAGE_POOL_2D"):
        if len(x) != 4:
            return None
        oh = window_out(x[1], p["kh"], p["sh"], p["padding"], p.get("dh", 1))
        ow = window_out(x[2], p["kw"], p["sw"], p["padding"], p.get("dw", 1))
        if oh < 1 or ow < 1:
            return None
        c = {"CONV_2D": p.get("cout"), "DEPTHWISE_CONV_2D": x[3] * p.get("mult", 1)}.get(k, x[3])
        return [1, oh, ow, c]
    if k == "FULLY_CONNECTED":
        return [1, x[1], p["n"]] if len(x) == 3 else [1, p["n"]]
    if k in ("ADD", "SUB", "MUL"):
        a, b = list(ins[0]), list(ins[1])
        if len(a) != len(b):
            return None
        out = []
        for da, db in zip(a, b):
            if da != db and 1 not in (da, db):
                return None
            out.append(max(da, db))
        return out
    if k == "RESHAPE":
        if "axes" in p:  # ONNX Squeeze / Unsqueeze: valid only as the same unit-dimension change
            again = _onnx_unit_dims_of(x, p["onnx_op"], p["axes"][0])
            return list(p["new_shape"]) if again == list(p["new_shape"]) else None
        return list(p["new_shape"]) if int(np.prod(p["new_shape"])) == int(np.prod(x)) else None
    if k == "PAD":
        if len(x) != 4:
            return None
        return [x[i] + p["pads"][i][0] + p["pads"][i][1] for i in range(4)]
    if k == "CONCATENATION":
        out = list(x)
        out[p["axis"]] = x[p["axis"]] + ins[1][p["axis"]]
        return out
    if k == "MEAN":
        return [1, 1, 1, x[3]] if p["keep_dims"] else [1, x[3]]
    if k in ("RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"):
        return [x[0], p["size"][0], p["size"][1], x[3]] if len(x) == 4 else None
    if k == "TRANSPOSE_CONV":
        return [1, p["oh"], p["ow"], p["cout"]] if len(x) == 4 else None
    if k == "TRANSPOSE":
        if "shuffle" in p and (len(x) != 4 or x[3] % p["shuffle"]):
            return None
        return [x[i] for i in p["perm"]] if len(p["perm"]) == len(x) else None
    if k == "SPACE_TO_DEPTH":
        b = p["block"]
        if len(x) != 4 or x[1] % b or x[2] % b:
            return None
        return [x[0], x[1] // b, x[2] // b, x[3] * b * b]
    if k == "DEPTH_TO_SPACE":
        b = p["block"]
        if len(x) != 4 or x[3] % (b * b):
            return None
        return [x[0], x[1] * b, x[2] * b, x[3] // (b * b)]
    if k == "SLICE":
        if len(p["begin"]) != len(x) or any(b >= d for b, d in zip(p["begin"], x)):
            return None
        if "split" in p and (sum(p["split"]) != x[p["split_axis"]] or
                             any(p["size"][a] != x[a] for a in range(len(x)) if a != p["split_axis"])):
            return None
        out = [d - b if n < 0 else n for d, b, n in zip(x, p["begin"], p["size"])]
        return out if all(b + n <= d for b, n, d in zip(p["begin"], out, x)) else None
    if k == "STRIDED_SLICE":
        if len(p["begin"]) != len(x):
            return None
        return [_strided_extent(n, p["begin"][d], p["end"][d], p["strides"][d],
                                (p["begin_mask"] >> d) & 1, (p["end_mask"] >> d) & 1)
                for d, n in enumerate(x)]
    if k == "BATCH_MATMUL":
        return [1, x[1], ins[1][2]]
    return x  # unary


# ---- 16x8 graphs (int16 activations, NACC_SPEC §9) ---------------------------------------

# The kinds TFLite 2.21 runs with int16 activations, with the op version its
# converter writes for them (op_version.cc); generate(fmt="tflite16") draws
# only these and build_tflite writes int16 tensors with zero point 0.
INT16_VERSIONS: Dict[str, int] = {
    "CONV_2D": 4, "DEPTHWISE_CONV_2D": 5, "FULLY_CONNECTED": 7, "MAX_POOL_2D": 3,
    "AVERAGE_POOL_2D": 3, "ADD": 3, "SUB": 5, "MUL": 4, "RELU": 3, "RELU6": 3, "LOGISTIC": 3,
    "TANH": 3, "RESHAPE": 1, "LEAKY_RELU": 2, "QUANTIZE": 2, "PAD": 3, "CONCATENATION": 3,
    "MEAN": 3,
}


# ---- the table -------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class OpKind:
    name: str                 # TFLite builtin
    gen: Callable             # gen(ctx, x) -> (params, extra inputs, output quant) | None
    weight: float             # relative generation frequency
    version: int              # TFLite op version of the int8 op
    npu: bool = True          # a kind of docs/supported_ops.md (False: host-only)
    onnx: Optional[str] = None  # ONNX op type it maps to (None: TFLite only)


TABLE: List[OpKind] = [
    OpKind("CONV_2D", gen_conv, 5, 3, onnx="Conv"),
    OpKind("DEPTHWISE_CONV_2D", gen_depthwise, 3, 3, onnx="Conv"),
    OpKind("FULLY_CONNECTED", gen_fully_connected, 2, 4, onnx="Gemm"),
    OpKind("MAX_POOL_2D", gen_max_pool, 2, 2, onnx="MaxPool"),
    OpKind("AVERAGE_POOL_2D", gen_avg_pool, 1.5, 2, onnx="AveragePool"),
    OpKind("ADD", gen_add, 2, 2, onnx="Add"),
    OpKind("SUB", gen_sub, 1.5, 2, onnx="Sub"),
    OpKind("MUL", gen_mul, 2, 2, onnx="Mul"),
    OpKind("RELU", gen_unary_requant, 1, 2, onnx="Relu"),
    OpKind("RELU6", gen_unary_requant, 1, 2, onnx="Clip"),
    OpKind("RELU_N1_TO_1", gen_unary_requant, 0.7, 1, onnx="Clip"),
    OpKind("LOGISTIC", gen_logistic, 1, 2, onnx="Sigmoid"),
    OpKind("TANH", gen_tanh, 1, 2, onnx="Tanh"),
    OpKind("RESHAPE", gen_reshape, 1, 1, onnx="Reshape"),
    OpKind("HARD_SWISH", gen_hard_swish, 0.5, 1, onnx="HardSwish"),
    OpKind("LEAKY_RELU", gen_leaky_relu, 0.5, 1, onnx="LeakyRelu"),
    OpKind("QUANTIZE", gen_quantize, 0.4, 2, onnx=None),
    OpKind("PAD", gen_pad, 0.5, 2, onnx="Pad"),
    OpKind("CONCATENATION", gen_concat, 0.5, 2, onnx="Concat"),
    OpKind("MEAN", gen_mean, 0.5, 2, onnx="ReduceMean"),
    OpKind("BATCH_MATMUL", gen_batch_matmul, 0.5, 1, onnx="MatMul"),
    OpKind("SLICE", gen_slice, 0.25, 2, onnx="Slice"),
    OpKind("STRIDED_SLICE", gen_strided_slice, 0.25, 2, onnx="Slice"),
    OpKind("RESIZE_NEAREST_NEIGHBOR", gen_resize_nearest, 0.25, 3, onnx="Resize"),
    OpKind("SPACE_TO_DEPTH", gen_space_to_depth, 0.25, 2, onnx="SpaceToDepth"),
    # version 1: BUILTIN_REF registers no version 2 (the int8 kernel is the same)
    OpKind("DEPTH_TO_SPACE", gen_depth_to_space, 0.25, 1, onnx="DepthToSpace"),
    OpKind("TRANSPOSE_CONV", gen_transpose_conv, 0.4, 3, onnx=None),
    OpKind("TRANSPOSE", gen_transpose, 0.2, 2, onnx="Transpose"),
    OpKind("RESIZE_BILINEAR", gen_resize_bilinear, 0.2, 3, onnx=None),
    OpKind("MAXIMUM", gen_max_min, 0.2, 2, onnx=None),
    OpKind("MINIMUM", gen_max_min, 0.2, 2, onnx=None),
    # ops the NPU lacks
    OpKind("SOFTMAX", gen_softmax, 0.6, 2, npu=False, onnx="Softmax"),
]
KINDS: Dict[str, OpKind] = {k.name: k for k in TABLE}

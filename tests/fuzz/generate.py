"""Random graph specs (seeded: the same (seed, index) always gives the same
graph), shape propagation, random inputs, and the shrinking steps.

A spec is a JSON-able dict:
    {"format": "tflite" | "onnx", "seed", "index",
     "tensors": {"<id>": {"shape": NHWC, "scale", "zp"}},   # activations
     "inputs": [ids], "outputs": [ids],
     "ops": [{"kind", "in": [ids], "out": id, "p": {params}, "seed"}],
     "options": {"cores", "sram_kb", "threads"}, "input_seed", "input_mode"}
Extra operands (the second operand of ADD/SUB/MUL, CONCATENATION,
BATCH_MATMUL) follow their op's first input by the rule in the op's params, so
shrinking the graph's first input reshapes the whole graph consistently.
"""
from __future__ import annotations

import copy
from typing import Iterator, List, Optional

import numpy as np

from .ops import INT16_VERSIONS, KINDS, TABLE, Ctx, out_shape, pick

DEFAULT_MAC_BUDGET = 600_000
MAX_ELEMENTS = 64 * 64 * 32

CORES = [1, 2, 4, 8, 16, 32]
SRAM_KB = [16, 32, 64, 128, 1024]


def _spatial(rng) -> int:
    return int(pick(rng, [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 20, 24, 31, 32, 33]))


def _first_input(ctx: Ctx) -> int:
    rng = ctx.rng
    r = rng.random()
    if r < 0.08:
        return ctx.new_input([1, int(pick(rng, [1, 8, 16, 63, 64, 65, 100, 128, 129, 256, 257]))])
    if r < 0.12:
        return ctx.new_input([1, int(rng.integers(1, 9)), int(pick(rng, [4, 16, 64, 65]))])
    c = int(pick(rng, [1, 2, 3, 4, 8, 15, 16, 17, 32, 33, 63, 64, 65]))
    if rng.random() < 0.08:  # feature maps larger than a core's SRAM: tiling
        return ctx.new_input([1, int(rng.integers(40, 65)), int(rng.integers(40, 65)),
                              int(pick(rng, [3, 8, 16]))])
    if ctx.fmt == "tflite" and rng.random() < 0.03:  # EfficientNet's first squeeze-excite MEAN: 112x112, few channels
        return ctx.new_input([1, 112, 112, int(pick(rng, [1, 2, 3]))])
    return ctx.new_input([1, _spatial(rng), _spatial(rng), c])


BMM_FACTOR = 4
ONNX_COPY_KINDS = ("SLICE", "STRIDED_SLICE", "RESIZE_NEAREST_NEIGHBOR", "SPACE_TO_DEPTH",
                   "DEPTH_TO_SPACE")


def allowed_kinds(fmt: str) -> List:
    return [k for k in TABLE if fmt == "tflite" or k.onnx is not None]


def generate(seed: int, index: int, fmt: str = "tflite", mac_budget: int = DEFAULT_MAC_BUDGET,
             invalid_rate: float = 0.06) -> dict:
    """fmt "tflite", "onnx", or "tflite16": a TFLite 16x8 graph (the kinds of
    ops.INT16_VERSIONS, every tensor int16 with zero point 0 and its int8
    scale / 256, LOGISTIC / TANH outputs 2^-15; spec["dtype"] = "int16",
    format "tflite"), or "tflite4": an int8 graph whose CONV_2D and
    FULLY_CONNECTED weights are int4 (spec["weights"] = "int4", format
    "tflite"; see _int4)."""
    if fmt == "tflite16":
        return _int16(generate_kinds(seed, index, "tflite", mac_budget, invalid_rate,
                                     [k for k in TABLE if k.name in INT16_VERSIONS], 2))
    if fmt == "tflite4":
        return _int4(generate_kinds(seed, index, "tflite", mac_budget, invalid_rate,
                                    allowed_kinds("tflite"), 3))
    return generate_kinds(seed, index, fmt, mac_budget, invalid_rate, allowed_kinds(fmt),
                          0 if fmt == "tflite" else 1)


def _int4(spec: dict) -> dict:
    """int4 weights (NACC_SPEC §9 DATA_FORM 10; TFLite CONV_2D version 7,
    FULLY_CONNECTED version 10) on every ungrouped CONV_2D and every
    FULLY_CONNECTED: values in [-8, 7] (ops.weights_of), the weight scale
    multiplied by wmax / 7 so the real weights span what the op's output
    quantization was drawn for. DEPTHWISE_CONV_2D keeps int8 weights: TFLite
    2.21 has no reference kernel for int4 depthwise weights."""
    spec["weights"] = "int4"
    for op in spec["ops"]:
        p = op["p"]
        if op["kind"] == "FULLY_CONNECTED" or (op["kind"] == "CONV_2D" and p.get("groups", 1) == 1):
            p["int4"] = True
            p["wscale"] = float(p["wscale"] * p.get("wmax", 127) / 7.0)
            p["wmax"] = 7
    return spec


def _int16(spec: dict) -> dict:
    spec["dtype"] = "int16"
    for t in spec["tensors"].values():
        t["scale"] = float(np.float32(t["scale"] / 256.0))
        t["zp"] = 0
    for op in spec["ops"]:
        if op["kind"] in ("LOGISTIC", "TANH"):
            spec["tensors"][str(op["out"])]["scale"] = 1.0 / 32768
    return spec


def generate_kinds(seed: int, index: int, fmt: str, mac_budget: int, invalid_rate: float,
                   kinds: List, stream: int) -> dict:
    rng = np.random.default_rng([seed, index, stream])
    spec = {"format": fmt, "seed": seed, "index": index, "tensors": {}, "inputs": [],
            "outputs": [], "ops": []}
    ctx = Ctx(rng, spec, mac_budget, invalid_rate, fmt)
    produced = [_first_input(ctx)]
    # ONNX: FULLY_CONNECTED twice as often (its Gemm / MatMul forms and weight
    # chains are what exporters write most)
    # TFLite: BATCH_MATMUL BMM_FACTOR times as often (it needs one of the few
    # rank-3 inputs; the kinds added with TRANSPOSE_CONV had crowded it out)
    # ONNX: the copy kinds (Slice, Resize, SpaceToDepth / DepthToSpace) 3 times
    # as often, so a default run's 60 graphs hit their forms (the layout forms
    # have their own run: tests/test_fuzz.py::test_onnx_layout_forms)
    weights = np.array([k.weight * (2 if fmt == "onnx" and k.name == "FULLY_CONNECTED" else
                                    3 if fmt == "onnx" and k.name in ONNX_COPY_KINDS else
                                    BMM_FACTOR if fmt == "tflite" and k.name == "BATCH_MATMUL" else 1)
                        for k in kinds], dtype=float)
    weights /= weights.sum()
    n_ops = int(rng.integers(1, 7))
    for _ in range(n_ops):
        for _attempt in range(12):
            kind = kinds[int(rng.choice(len(kinds), p=weights))]
            x = produced[-1] if rng.random() < 0.75 else produced[int(rng.integers(len(produced)))]
            if fmt == "onnx" and kind.name == "FULLY_CONNECTED":
                # often beside an earlier one, on its input: they may share weights
                earlier = [o["in"][0] for o in spec["ops"] if o["kind"] == "FULLY_CONNECTED"]
                if earlier and rng.random() < 0.6:
                    x = earlier[-1]
            before = copy.deepcopy(spec)
            r = kind.gen(ctx, x)
            if r is None:
                continue
            p, extra, oq = r
            op = {"kind": kind.name, "in": [x] + extra, "out": -1, "p": p,
                  "seed": int(rng.integers(0, 2**31 - 1))}
            shape = out_shape(op, [spec["tensors"][str(t)]["shape"] for t in op["in"]])
            if (shape is None or min(shape) < 1 or int(np.prod(shape)) > MAX_ELEMENTS):
                spec.clear()
                spec.update(before)
                continue
            op["out"] = ctx.new_tensor(shape, oq)
            spec["ops"].append(op)
            produced.append(op["out"])
            break
    if not spec["ops"]:  # always at least one op
        return generate_kinds(seed, index + 1_000_003, fmt, mac_budget, invalid_rate, kinds,
                              stream) | {"index": index}
    spec["outputs"] = leaves(spec)
    spec["options"] = {"cores": int(pick(rng, CORES, p=[0.3, 0.2, 0.2, 0.1, 0.1, 0.1])),
                       "sram_kb": int(pick(rng, SRAM_KB, p=[0.3, 0.2, 0.3, 0.1, 0.1])),
                       "threads": int(pick(rng, [1, 1, 2]))}
    spec["input_seed"] = int(rng.integers(0, 2**31 - 1))
    spec["input_mode"] = pick(rng, ["full", "full", "full", "narrow", "extreme"])
    return spec


def leaves(spec: dict) -> List[int]:
    consumed = {t for op in spec["ops"] for t in op["in"]}
    return [op["out"] for op in spec["ops"] if op["out"] not in consumed]


def extra_shape(op: dict, x: List[int], old: List[int]) -> List[int]:
    """The shape an extra operand of `op` takes for first-input shape `x`."""
    k, p = op["kind"], op["p"]
    if k in ("MAXIMUM", "MINIMUM"):
        return list(x)
    if k in ("ADD", "SUB", "MUL"):
        mode = p["broadcast"]
        if mode in ("full", "self"):
            return list(x)
        if mode == "channel":
            return [1] * (len(x) - 1) + [x[-1]]
        if mode == "scalar":
            return [1] * len(x)
        return [1, x[1], 1, x[-1]]
    if k == "CONCATENATION":
        s = list(x)
        s[p["axis"]] = old[p["axis"]]
        return s
    if k == "BATCH_MATMUL":
        return [1, x[2], old[2]]
    return old


def propagate(spec: dict) -> bool:
    """Recomputes every op's output shape (and extra operand shapes) in order;
    False when some op no longer fits its input."""
    ts = spec["tensors"]
    for op in spec["ops"]:
        x = ts[str(op["in"][0])]["shape"]
        for t in op["in"][1:]:
            if t != op["in"][0]:
                ts[str(t)]["shape"] = extra_shape(op, x, ts[str(t)]["shape"])
        shape = out_shape(op, [ts[str(t)]["shape"] for t in op["in"]])
        if shape is None or min(shape) < 1:
            return False
        if op["kind"] in ("CONV_2D", "DEPTHWISE_CONV_2D") and (
                op["p"]["padding"] == "VALID" and (x[1] < op["p"]["kh"] or x[2] < op["p"]["kw"])):
            return False
        if op["kind"] in ("MAX_POOL_2D", "AVERAGE_POOL_2D") and op["p"]["padding"] == "VALID" and (
                x[1] < op["p"]["kh"] or x[2] < op["p"]["kw"]):
            return False
        if op["kind"] == "RESHAPE":
            return_ok = int(np.prod(op["p"]["new_shape"])) == int(np.prod(x))
            if not return_ok:
                return False
        ts[str(op["out"])]["shape"] = shape
    return True


def _prune(spec: dict) -> None:
    """Drops tensors and inputs no op uses any more; outputs = the leaves."""
    used = {t for op in spec["ops"] for t in op["in"]} | {op["out"] for op in spec["ops"]}
    spec["inputs"] = [t for t in spec["inputs"] if t in used]
    spec["tensors"] = {k: v for k, v in spec["tensors"].items() if int(k) in used}
    spec["outputs"] = leaves(spec)


def remove_op(spec: dict, j: int) -> Optional[dict]:
    """`spec` without op j: its consumers read op j's input instead when the
    shapes agree, otherwise everything downstream of op j goes too."""
    s = copy.deepcopy(spec)
    op = s["ops"][j]
    x = op["in"][0]
    same = s["tensors"][str(x)]["shape"] == s["tensors"][str(op["out"])]["shape"]
    del s["ops"][j]
    if same:
        for o in s["ops"]:
            o["in"] = [x if t == op["out"] else t for t in o["in"]]
    else:
        dead = {op["out"]}
        keep = []
        for o in s["ops"]:
            if any(t in dead for t in o["in"]):
                dead.add(o["out"])
            else:
                keep.append(o)
        s["ops"] = keep
    if not s["ops"]:
        return None
    _prune(s)
    return s if s["inputs"] else None


def shrink_candidates(spec: dict) -> Iterator[dict]:
    """Smaller variants of `spec`, most promising first."""
    n = len(spec["ops"])
    for j in reversed(range(n)):
        if n > 1:
            c = remove_op(spec, j)
            if c is not None:
                yield c
    if len(spec["outputs"]) > 1:
        for t in spec["outputs"]:
            c = copy.deepcopy(spec)
            c["outputs"] = [t]
            # ops not feeding the kept output go
            need, keep = {t}, []
            for op in reversed(c["ops"]):
                if op["out"] in need:
                    keep.append(op)
                    need.update(op["in"])
            c["ops"] = list(reversed(keep))
            _prune(c)
            yield c
    root = spec["inputs"][0]
    shape = spec["tensors"][str(root)]["shape"]
    for axis in range(1, len(shape)):
        for new in (1, shape[axis] // 2, shape[axis] - 1):
            if 1 <= new < shape[axis]:
                c = copy.deepcopy(spec)
                c["tensors"][str(root)]["shape"][axis] = int(new)
                if propagate(c):
                    yield c
    for j, op in enumerate(spec["ops"]):
        for key in ("cout", "n", "mult", "kh", "kw"):
            v = op["p"].get(key)
            if isinstance(v, int) and v > 1:
                for new in (1, v // 2):
                    c = copy.deepcopy(spec)
                    c["ops"][j]["p"][key] = int(new)
                    if propagate(c):
                        yield c
    opts = spec.get("options", {})
    for key, small in (("cores", 1), ("threads", 1), ("sram_kb", 64)):
        if key in opts and opts[key] != small:
            c = copy.deepcopy(spec)
            c["options"][key] = small
            yield c
    if spec.get("input_mode") != "full":
        c = copy.deepcopy(spec)
        c["input_mode"] = "full"
        yield c


def make_inputs(spec: dict) -> List[np.ndarray]:
    """The graph's int8 inputs (NHWC), from spec["input_seed"] and "input_mode"
    (int16 ones for a 16x8 graph: the int8 draw times 256 plus random low
    bytes, extremes -32768 / 32767)."""
    rng = np.random.default_rng(spec["input_seed"])
    out = []
    for t in spec["inputs"]:
        info = spec["tensors"][str(t)]
        shape = info["shape"]
        mode = spec.get("input_mode", "full")
        if spec.get("dtype") == "int16":
            if mode == "extreme":
                x = rng.choice(np.array([-32768, 32767, -32767]), shape)
            elif mode == "narrow":
                x = rng.integers(-300, 301, shape)
            else:
                x = rng.integers(-32768, 32768, shape)
            out.append(np.asarray(x, dtype=np.int16))
            continue
        if mode == "narrow":
            x = np.clip(info["zp"] + rng.integers(-3, 4, shape), -128, 127)
        elif mode == "extreme":
            x = rng.choice(np.array([-128, 127]), shape)
        else:
            x = rng.integers(-128, 128, shape)
        out.append(np.asarray(x, dtype=np.int8))
    return out


def boundary_hits(spec: dict) -> List[tuple]:
    """(parameter, value) pairs of this spec that sit on a hardware boundary."""
    from .ops import BOUNDARIES

    hits = []
    ts = spec["tensors"]

    def hit(name, value):
        if value in BOUNDARIES[name]:
            hits.append((name, value))

    for t in ts.values():
        hit("zero_point", t["zp"])
        if len(t["shape"]) == 4 and (t["shape"][1] == 1 or t["shape"][2] == 1):
            hit("feature_map_dim", 1)
    sram = spec["options"]["sram_kb"] * 1024
    for op in spec["ops"]:
        k, p = op["kind"], op["p"]
        x = ts[str(op["in"][0])]["shape"]
        y = ts[str(op["out"])]["shape"]
        if int(np.prod(x)) + int(np.prod(y)) > sram:
            hit("sram_tiling", True)
        if k in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            for key in ("kh", "kw"):
                hit("kernel", p[key])
            for key in ("sh", "sw"):
                hit("stride", p[key])
            if p.get("dh", 1) > 1:
                hit("dilation", p["dh"])
            if p["padding"] == "SAME":
                from .ops import window_pads
                for size, kk, s in ((x[1], p["kh"], p["sh"]), (x[2], p["kw"], p["sw"])):
                    for v in window_pads(size, kk, s, "SAME", p.get("dh", 1)):
                        hit("padding", v)
            else:
                hit("padding", 0)
            hit("channels", x[3])
            hit("channels", y[3])
            if k == "DEPTHWISE_CONV_2D":
                hit("depth_multiplier", p["mult"])
            hit("fused_activation", p["act"])
        elif k == "FULLY_CONNECTED":
            hit("fc_depth", int(np.prod(x[1:])))
            hit("channels", p["n"])
            hit("fused_activation", p["act"])
        elif k == "MAX_POOL_2D":
            hit("pool_window", p["kh"])
            hit("pool_window", p["kw"])
            hit("stride", p["sh"])
            hit("stride", p["sw"])
        elif k == "AVERAGE_POOL_2D":
            hit("avg_pool_window", "2x2s2" if (p["kh"], p["kw"], p["sh"]) == (2, 2, 2) else "other")
            hit("pool_window", p["kh"])
            hit("pool_window", p["kw"])
            hit("stride", p["sh"])
            hit("stride", p["sw"])
        elif k in ("ADD", "SUB", "MUL"):
            mode = {"channel": "channel", "scalar": "scalar", "row": "unsupported"}.get(p["broadcast"])
            if mode:
                hit("broadcast", mode)
        elif k == "PAD":
            for pr in p["pads"][1:3]:
                for v in pr:
                    hit("padding", v)
        elif k in ("SLICE", "STRIDED_SLICE") and spec["format"] == "onnx":
            hit("slice_form", "int8" if p.get("int8_form") else "qdq")
            if "split" in p:
                hit("split", "all_outputs" if p["split_all"] else "one_output")
            if len(y) == 4 and 1 in y[1:] and 1 not in x[1:]:
                hit("slice_extent", 1)
        elif k == "RESHAPE" and spec["format"] == "onnx":
            hit("reshape_op", p.get("onnx_op", "Reshape"))
        elif k == "TRANSPOSE" and spec["format"] == "onnx":
            hit("transpose_form", "shuffle" if "shuffle" in p else "int8" if p.get("int8_form") else "qdq")
        elif k == "RESIZE_NEAREST_NEIGHBOR" and "ct" in p:
            hit("resize_mapping", "asymmetric_floor" if (p["ct"], p["nearest_mode"]) ==
                ("asymmetric", "floor") else "other")
        if p.get("multiplier_gt_1"):
            hit("multiplier_gt_1", True)
        if p.get("int4"):
            hit("int4_weights", k)
        # ONNX weight chains (ops.WEIGHT_CHAINS) and FULLY_CONNECTED forms
        for key, name in (("wchain", "weight_chain"), ("fc_form", "fc_form"),
                          ("flatten_op", "flatten_op")):
            if key in p:
                hit(name, p[key])
        if "share_seed" in p:
            hit("shared_weights", True)
    hit("cores", spec["options"]["cores"])
    hit("sram_kb", spec["options"]["sram_kb"])
    return hits

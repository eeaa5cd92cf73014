"""Graph spec -> ONNX QDQ model (int8 graph inputs and outputs, NCHW).

Every activation tensor of the spec is an int8 tensor "t<id>"; each op is a
QDQ node unit: DequantizeLinear on each input (one per consumer), the float
op (plus Relu / Clip for a fused activation), QuantizeLinear to its output.
The ONNX model need not compute what the TFLite one does (the NCHW flatten
order differs, for example): each format is compared with its own reference.
"""
from __future__ import annotations

from typing import Dict, List

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .ops import const_operand, same_pads, weights_of

OPSET = 19
IR_VERSION = 9


def nchw(shape):
    shape = list(shape)
    return [shape[0], shape[3], shape[1], shape[2]] if len(shape) == 4 else shape


def to_nchw(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if x.ndim == 4 else x


def to_nhwc(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if x.ndim == 4 else x


def _pads(x_shape, p):
    """ONNX pads [top, left, bottom, right] of a TFLite window op (NHWC x)."""
    if p["padding"] == "VALID":
        return [0, 0, 0, 0]
    t, b, _ = same_pads(x_shape[1], p["kh"], p["sh"], p.get("dh", 1))
    l, r, _ = same_pads(x_shape[2], p["kw"], p["sw"], p.get("dw", 1))
    return [t, l, b, r]


def build_onnx(spec: dict, expose: bool = False) -> dict:
    """{"model": bytes}; with `expose`, every op output is a graph output too."""
    ts = spec["tensors"]
    nodes: List = []
    inits: Dict[str, np.ndarray] = {}
    const_ids = {op["p"]["const_tensor"]: op for op in spec["ops"] if op["p"].get("const")}

    def qparams(tid):
        name = f"t{tid}"
        if name + "_s" not in inits:
            inits[name + "_s"] = np.array(ts[str(tid)]["scale"], np.float32)
            inits[name + "_z"] = np.array(ts[str(tid)]["zp"], np.int8)
            if tid in const_ids:
                t = ts[str(tid)]
                inits[name] = to_nchw(const_operand(const_ids[tid], t["shape"], t))
        return name

    def dq(tid, j, i):
        name = qparams(tid)
        out = f"{name}_dq{j}_{i}"
        nodes.append(helper.make_node("DequantizeLinear", [name, name + "_s", name + "_z"], [out],
                                      name=f"dq{j}_{i}_t{tid}"))
        return out

    def q(y, tid, j):
        name = qparams(tid)
        nodes.append(helper.make_node("QuantizeLinear", [y, name + "_s", name + "_z"], [name],
                                      name=f"q{j}_t{tid}"))

    def activation(y, act, j):
        if act in (None, "NONE"):
            return y
        out = f"{y}_act"
        if act == "RELU":
            nodes.append(helper.make_node("Relu", [y], [out], name=f"op{j}_relu"))
        elif act == "TANH":
            nodes.append(helper.make_node("Tanh", [y], [out], name=f"op{j}_tanh"))
        else:
            lo, hi = (0.0, 6.0) if act == "RELU6" else (-1.0, 1.0)
            inits[f"op{j}_lo"] = np.array(lo, np.float32)
            inits[f"op{j}_hi"] = np.array(hi, np.float32)
            nodes.append(helper.make_node("Clip", [y, f"op{j}_lo", f"op{j}_hi"], [out],
                                          name=f"op{j}_clip"))
        return out

    def weights_dq(j, w, scales, bias, in_s, axis_w, chain="plain"):
        per_channel = len(scales) > 1
        s = np.array(scales, np.float32) if per_channel else np.array(scales[0], np.float32)
        inits[f"w{j}_s"] = s
        inits[f"w{j}_z"] = np.zeros(s.shape, np.int8)
        weight_nodes(j, w, s, axis_w if per_channel else None, chain)
        if bias is None:
            return f"w{j}_f", None
        inits[f"b{j}"] = bias
        inits[f"b{j}_s"] = (np.float32(in_s) * s).astype(np.float32)
        inits[f"b{j}_z"] = np.zeros(s.shape, np.int32)
        attrs = {"axis": 0} if per_channel else {}
        nodes.append(helper.make_node("DequantizeLinear", [f"b{j}", f"b{j}_s", f"b{j}_z"],
                                      [f"b{j}_f"], name=f"dqb{j}", **attrs))
        return f"w{j}_f", f"b{j}_f"

    def weight_nodes(j, w, s, axis, chain):
        """int8 weights `w` (the op's layout; per-channel scales `s` on `axis`,
        None: per tensor) -> float "w{j}_f" through the ONNX weight chain
        `chain` (ops.WEIGHT_CHAINS). A transposed store keeps a 2-D weight as
        its transpose and a 4-D OIHW conv weight as HWIO."""
        qs, qz = f"w{j}_s", f"w{j}_z"
        dq_attrs = {} if axis is None else {"axis": axis}
        perm = (1, 0) if w.ndim == 2 else (2, 3, 1, 0)  # op layout -> stored layout
        back = tuple(int(i) for i in np.argsort(perm))   # the Transpose node's perm
        stored_axis = None if axis is None else perm.index(axis)
        src = f"w{j}"
        if chain == "plain":
            inits[src] = w
        elif chain in ("q", "q_transpose"):
            # float weights that QuantizeLinear turns back into w exactly
            shape = [1] * w.ndim
            if axis is not None:
                shape[axis] = -1
            f = (w.astype(np.float32) * s.reshape(shape)).astype(np.float32)
            q_axis = axis
            if chain == "q_transpose":
                f, q_axis = np.ascontiguousarray(f.transpose(perm)), stored_axis
            inits[src] = f
            nodes.append(helper.make_node("QuantizeLinear", [src, qs, qz], [src + "_q"], name=f"qw{j}",
                                          **({} if q_axis is None else {"axis": q_axis})))
            src += "_q"
            if chain == "q_transpose":
                nodes.append(helper.make_node("Transpose", [src], [src + "_t"], name=f"tw{j}", perm=back))
                src += "_t"
        elif chain == "int8_transpose":
            inits[src] = np.ascontiguousarray(w.transpose(perm))
            nodes.append(helper.make_node("Transpose", [src], [src + "_t"], name=f"tw{j}", perm=back))
            src += "_t"
        elif chain == "reshape":
            inits[src] = w.reshape(-1)
            inits[f"w{j}_shape"] = np.array(w.shape, np.int64)
            nodes.append(helper.make_node("Reshape", [src, f"w{j}_shape"], [src + "_r"], name=f"rw{j}"))
            src += "_r"
        elif chain == "dqq":  # per tensor: DQ -> Transpose -> Q -> DQ, one scale
            assert axis is None
            inits[src] = np.ascontiguousarray(w.transpose(perm))
            nodes.append(helper.make_node("DequantizeLinear", [src, qs, qz], [src + "_f0"], name=f"dqw{j}_0"))
            nodes.append(helper.make_node("Transpose", [src + "_f0"], [src + "_t"], name=f"tw{j}", perm=back))
            nodes.append(helper.make_node("QuantizeLinear", [src + "_t", qs, qz], [src + "_q"], name=f"qw{j}"))
            src += "_q"
        else:
            raise ValueError(f"weight chain {chain!r}")
        nodes.append(helper.make_node("DequantizeLinear", [src, qs, qz], [f"w{j}_f"], name=f"dqw{j}",
                                      **dq_attrs))

    def layout_nodes(j, op, x_shape, src, dst):
        """RESHAPE (Reshape, or its "onnx_op" Squeeze / Unsqueeze / Flatten)
        or TRANSPOSE (Transpose, or the "shuffle" chain) from src to dst."""
        p, name = op["p"], f"op{j}"
        if op["kind"] == "RESHAPE":
            form = p.get("onnx_op", "Reshape")
            if form == "Reshape":
                inits[f"op{j}_shape"] = np.array(nchw(p["new_shape"]), np.int64)
                nodes.append(helper.make_node("Reshape", [src, f"op{j}_shape"], [dst], name=name))
            elif form == "Flatten":
                nodes.append(helper.make_node("Flatten", [src], [dst], name=name, axis=1))
            else:
                inits[f"op{j}_axes"] = np.array(p["axes"], np.int64)
                nodes.append(helper.make_node(form, [src, f"op{j}_axes"], [dst], name=name))
        elif "shuffle" in p:
            g = p["shuffle"]
            _, h, w, c = x_shape
            inits[f"op{j}_s5"] = np.array([1, g, c // g, h, w], np.int64)
            inits[f"op{j}_s4"] = np.array([1, c, h, w], np.int64)
            nodes.append(helper.make_node("Reshape", [src, f"op{j}_s5"], [f"op{j}_r5"], name=name + "_r5"))
            nodes.append(helper.make_node("Transpose", [f"op{j}_r5"], [f"op{j}_t5"], name=name,
                                          perm=[0, 2, 1, 3, 4]))
            nodes.append(helper.make_node("Reshape", [f"op{j}_t5", f"op{j}_s4"], [dst], name=name + "_r4"))
        else:
            perm = p["perm"]
            if len(perm) == 4:  # the spec's NHWC permutation, on the NCHW tensors of the graph
                perm = [NCHW_TO_NHWC[perm[NHWC_AXIS[i]]] for i in range(4)]
            nodes.append(helper.make_node("Transpose", [src], [dst], name=name, perm=perm))

    extra_outputs: List = []  # (name, NCHW shape) of Split pieces made graph outputs
    for j, op in enumerate(spec["ops"]):
        kind, p = op["kind"], op["p"]
        shapes = [ts[str(t)]["shape"] for t in op["in"]]
        x_shape = shapes[0]
        y = f"y{j}"
        name = f"op{j}"
        if kind in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            w, scales, bias, in_s = weights_of(op, shapes, ts)
            if kind == "CONV_2D":
                w_onnx, group = np.ascontiguousarray(w.transpose(0, 3, 1, 2)), p.get("groups", 1)
            else:
                w_onnx = np.ascontiguousarray(w[0].transpose(2, 0, 1)[:, None])
                group = x_shape[3]
            wf, bf = weights_dq(j, w_onnx, scales, bias, in_s, 0, p.get("wchain", "plain"))
            nodes.append(helper.make_node(
                "Conv", [dq(op["in"][0], j, 0), wf, bf], [y], name=name,
                kernel_shape=[p["kh"], p["kw"]], strides=[p["sh"], p["sw"]],
                dilations=[p["dh"], p["dw"]], pads=_pads(x_shape, p), group=group))
            y = activation(y, p["act"], j)
        elif kind == "FULLY_CONNECTED":
            w, scales, bias, in_s = weights_of(op, shapes, ts)
            x = dq(op["in"][0], j, 0)
            form = p.get("fc_form", "gemm_t1")
            if len(x_shape) == 4:
                flat = f"t{op['in'][0]}_flat{j}"
                if p.get("flatten_op", "Flatten") == "Reshape":
                    inits[flat + "_shape"] = np.array([1, -1], np.int64)
                    nodes.append(helper.make_node("Reshape", [x, flat + "_shape"], [flat + "_f"],
                                                  name=f"op{j}_flatten"))
                else:
                    nodes.append(helper.make_node("Flatten", [x], [flat + "_f"], name=f"op{j}_flatten"))
                inits[flat + "_s"] = np.array(ts[str(op["in"][0])]["scale"], np.float32)
                inits[flat + "_z"] = np.array(ts[str(op["in"][0])]["zp"], np.int8)
                nodes.append(helper.make_node("QuantizeLinear", [flat + "_f", flat + "_s", flat + "_z"],
                                              [flat], name=f"op{j}_flatten_q"))
                nodes.append(helper.make_node("DequantizeLinear", [flat, flat + "_s", flat + "_z"],
                                              [flat + "_dq"], name=f"op{j}_flatten_dq"))
                x = flat + "_dq"
            chain = p.get("wchain", "plain")
            if form == "gemm_t1":  # weights [N, K], per channel on axis 0
                wf, bf = weights_dq(j, w, scales, bias, in_s, 0, chain)
                nodes.append(helper.make_node("Gemm", [x, wf, bf], [y], name=name, transB=1))
            elif form == "gemm_t0":  # weights [K, N], per channel on axis 1
                wf, bf = weights_dq(j, np.ascontiguousarray(w.T), scales, bias, in_s, 1, chain)
                nodes.append(helper.make_node("Gemm", [x, wf, bf], [y], name=name, transB=0))
            else:  # MatMul [.., K] x [K, N], no bias (the TFLite graph keeps its own)
                wf, _ = weights_dq(j, np.ascontiguousarray(w.T), scales, None, in_s, 1, chain)
                nodes.append(helper.make_node("MatMul", [x, wf], [y], name=name))
            y = activation(y, p["act"], j)
        elif kind in ("MAX_POOL_2D", "AVERAGE_POOL_2D"):
            attrs = dict(kernel_shape=[p["kh"], p["kw"]], strides=[p["sh"], p["sw"]],
                         pads=_pads(x_shape, p))
            if kind == "AVERAGE_POOL_2D":
                attrs["count_include_pad"] = 0
            nodes.append(helper.make_node("MaxPool" if kind == "MAX_POOL_2D" else "AveragePool",
                                          [dq(op["in"][0], j, 0)], [y], name=name, **attrs))
            y = activation(y, p["act"], j)
        elif kind in ("ADD", "SUB", "MUL"):
            a, b = op["in"][0], op["in"][1]
            if p["swap"] and p["broadcast"] != "self":
                a, b = b, a
            nodes.append(helper.make_node(kind.capitalize(), [dq(a, j, 0), dq(b, j, 1)], [y],
                                          name=name))
            y = activation(y, p["act"], j)
        elif kind in ("RELU", "LOGISTIC", "TANH", "HARD_SWISH"):
            t = {"RELU": "Relu", "LOGISTIC": "Sigmoid", "TANH": "Tanh", "HARD_SWISH": "HardSwish"}[kind]
            nodes.append(helper.make_node(t, [dq(op["in"][0], j, 0)], [y], name=name))
        elif kind in ("RELU6", "RELU_N1_TO_1"):
            lo, hi = (0.0, 6.0) if kind == "RELU6" else (-1.0, 1.0)
            inits[f"op{j}_lo"] = np.array(lo, np.float32)
            inits[f"op{j}_hi"] = np.array(hi, np.float32)
            nodes.append(helper.make_node("Clip", [dq(op["in"][0], j, 0), f"op{j}_lo", f"op{j}_hi"],
                                          [y], name=name))
        elif kind == "LEAKY_RELU":
            nodes.append(helper.make_node("LeakyRelu", [dq(op["in"][0], j, 0)], [y], name=name,
                                          alpha=p["alpha"]))
        elif kind in ("RESHAPE", "TRANSPOSE"):
            if p.get("int8_form"):  # on the int8 tensor, no DQ / Q: the output keeps the quantization
                layout_nodes(j, op, x_shape, f"t{op['in'][0]}", f"t{op['out']}")
                continue
            layout_nodes(j, op, x_shape, dq(op["in"][0], j, 0), y)
        elif kind == "SOFTMAX":
            nodes.append(helper.make_node("Softmax", [dq(op["in"][0], j, 0)], [y], name=name,
                                          axis=1 if len(x_shape) == 4 else -1))
        elif kind == "PAD":
            pd = p["pads"]
            inits[f"op{j}_pads"] = np.array([0, 0, pd[1][0], pd[2][0], 0, 0, pd[1][1], pd[2][1]],
                                            np.int64)
            nodes.append(helper.make_node("Pad", [dq(op["in"][0], j, 0), f"op{j}_pads"], [y],
                                          name=name, mode="constant"))
        elif kind == "CONCATENATION":
            axis = {1: 2, 2: 3, 3: 1}[p["axis"]] if len(x_shape) == 4 else p["axis"]
            nodes.append(helper.make_node("Concat", [dq(op["in"][0], j, 0), dq(op["in"][1], j, 1)],
                                          [y], name=name, axis=axis))
        elif kind == "MEAN":
            if p["keep_dims"]:
                nodes.append(helper.make_node("GlobalAveragePool", [dq(op["in"][0], j, 0)], [y],
                                              name=name))
            else:
                inits[f"op{j}_axes"] = np.array([2, 3], np.int64)
                nodes.append(helper.make_node("ReduceMean", [dq(op["in"][0], j, 0), f"op{j}_axes"],
                                              [y], name=name, keepdims=0))
        elif kind == "BATCH_MATMUL":
            nodes.append(helper.make_node("MatMul", [dq(op["in"][0], j, 0), dq(op["in"][1], j, 1)],
                                          [y], name=name))
        elif kind == "SLICE" and "split" in p:
            inits[f"op{j}_split"] = np.array(p["split"], np.int64)
            axis = NHWC_AXIS.index(p["split_axis"]) if len(x_shape) == 4 else p["split_axis"]
            k, n = p["split_out"], len(p["split"])
            src = f"t{op['in'][0]}" if p.get("int8_form") else dq(op["in"][0], j, 0)
            dsts = [f"t{op['out']}" if i == k else f"op{j}_extra{i}" for i in range(n)]
            # the int8 form writes the graph's tensors; the QDQ form float pieces, each quantized
            pieces = dsts if p.get("int8_form") else [f"op{j}_piece{i}" for i in range(n)]
            nodes.append(helper.make_node("Split", [src, f"op{j}_split"], pieces, name=name, axis=axis))
            for i in range(n):
                if i != k and not p["split_all"]:
                    continue  # a dead output of the Split
                if i != k:
                    piece = list(nchw(x_shape))
                    piece[axis] = p["split"][i]
                    extra_outputs.append((dsts[i], piece))
                if not p.get("int8_form"):
                    qn = qparams(op["out"])
                    nodes.append(helper.make_node("QuantizeLinear", [pieces[i], qn + "_s", qn + "_z"],
                                                  [dsts[i]], name=f"q{j}_piece{i}"))
            continue
        elif kind in ("SLICE", "STRIDED_SLICE"):
            starts, ends, steps = _slice_args(kind, p, x_shape)
            rank = len(x_shape)
            axes = list(range(rank))
            inits[f"op{j}_starts"] = np.array(starts, np.int64)
            inits[f"op{j}_ends"] = np.array(ends, np.int64)
            inits[f"op{j}_axes"] = np.array(axes, np.int64)
            inits[f"op{j}_steps"] = np.array(steps, np.int64)
            args = [f"op{j}_starts", f"op{j}_ends", f"op{j}_axes", f"op{j}_steps"]
            if p.get("int8_form"):  # the int8 Slice: no DQ / Q, the output keeps the input's quantization
                nodes.append(helper.make_node("Slice", [f"t{op['in'][0]}"] + args, [f"t{op['out']}"],
                                              name=name))
                continue
            nodes.append(helper.make_node("Slice", [dq(op["in"][0], j, 0)] + args, [y], name=name))
        elif kind == "RESIZE_NEAREST_NEIGHBOR":
            oh, ow = p["size"]
            ct = p.get("ct") or ("align_corners" if p["align_corners"] else
                                 "half_pixel" if p["half_pixel_centers"] else "asymmetric")
            nm = p.get("nearest_mode", "round_prefer_ceil" if p["half_pixel_centers"] else "floor")
            whole = oh % x_shape[1] == 0 and ow % x_shape[2] == 0
            inits[f"op{j}_roi"] = np.zeros(0, np.float32)
            if p.get("use_sizes") or not whole:
                inits[f"op{j}_sizes"] = np.array([1, x_shape[3], oh, ow], np.int64)
                ins = [dq(op["in"][0], j, 0), f"op{j}_roi", "", f"op{j}_sizes"]
            else:
                inits[f"op{j}_scales"] = np.array([1, 1, oh // x_shape[1], ow // x_shape[2]], np.float32)
                ins = [dq(op["in"][0], j, 0), f"op{j}_roi", f"op{j}_scales"]
            nodes.append(helper.make_node("Resize", ins, [y], name=name, mode="nearest",
                                          coordinate_transformation_mode=ct, nearest_mode=nm))
        elif kind in ("SPACE_TO_DEPTH", "DEPTH_TO_SPACE"):
            t = "SpaceToDepth" if kind == "SPACE_TO_DEPTH" else "DepthToSpace"
            attrs = {"mode": "DCR"} if kind == "DEPTH_TO_SPACE" else {}
            nodes.append(helper.make_node(t, [dq(op["in"][0], j, 0)], [y], name=name,
                                          blocksize=p["block"], **attrs))
        else:
            raise ValueError(f"{kind} has no ONNX mapping")
        q(y, op["out"], j)

    outputs = list(spec["outputs"])
    if expose:
        outputs += [op["out"] for op in spec["ops"] if op["out"] not in outputs]

    def vi(tid):
        return helper.make_tensor_value_info(f"t{tid}", TensorProto.INT8, nchw(ts[str(tid)]["shape"]))

    if any("wchain" in op["p"] for op in spec["ops"]):
        _share_initializers(nodes, inits)
    graph_outputs = [vi(t) for t in outputs] + [
        helper.make_tensor_value_info(n, TensorProto.INT8, shape) for n, shape in extra_outputs]
    graph = helper.make_graph(nodes, f"fuzz_{spec.get('seed')}_{spec.get('index')}",
                              [vi(t) for t in spec["inputs"]], graph_outputs,
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                          ir_version=IR_VERSION)
    return {"model": m.SerializeToString(),
            "outputs": [f"t{t}" for t in outputs] + [n for n, _ in extra_outputs]}


INT64_MAX = np.iinfo(np.int64).max
NHWC_AXIS = (0, 3, 1, 2)  # NCHW axis a is NHWC axis NHWC_AXIS[a]
NCHW_TO_NHWC = (0, 2, 3, 1)  # NHWC axis a is NCHW axis NCHW_TO_NHWC[a]


def _slice_args(kind: str, p: dict, x_shape) -> tuple:
    """ONNX Slice starts / ends / steps (NCHW order) of a SLICE or
    STRIDED_SLICE: size -1 and end_mask give INT64_MAX (clamped to the end),
    begin_mask 0, negative begins stay negative (counted from the end)."""
    rank = len(x_shape)
    order = NHWC_AXIS if rank == 4 else tuple(range(rank))
    starts, ends, steps = [], [], []
    for a in range(rank):
        d = order[a]
        if kind == "SLICE":
            b, n = p["begin"][d], p["size"][d]
            starts.append(b)
            ends.append(INT64_MAX if n == -1 else b + n)
            steps.append(1)
        else:
            starts.append(0 if (p["begin_mask"] >> d) & 1 else p["begin"][d])
            ends.append(INT64_MAX if (p["end_mask"] >> d) & 1 else p["end"][d])
            steps.append(p["strides"][d])
    return starts, ends, steps


def _share_initializers(nodes: list, inits: Dict[str, np.ndarray]) -> None:
    """Stores equal constants once: every node reads the first of the
    initializers with the same dtype, shape and bytes (weights of ops that
    share them, their scales, zero points), as exporters do for tied
    weights. Specs made before the weight-chain generator (no "wchain") are
    built as they were."""
    first: Dict[tuple, str] = {}
    alias: Dict[str, str] = {}
    for name, v in list(inits.items()):
        a = np.asarray(v)
        key = (a.dtype.str, a.shape, a.tobytes())
        if key in first:
            alias[name] = first[key]
            del inits[name]
        else:
            first[key] = name
    for n in nodes:
        for i, x in enumerate(n.input):
            if x in alias:
                n.input[i] = alias[x]


def single_op_spec(spec: dict, j: int) -> dict:
    """The spec of op j alone: its activation inputs become graph inputs."""
    op = spec["ops"][j]
    const = op["p"].get("const_tensor")
    ins = []
    for t in op["in"]:
        if t != const and t not in ins:
            ins.append(t)
    keep = set(op["in"]) | {op["out"]}
    return {**spec, "ops": [op], "inputs": ins, "outputs": [op["out"]],
            "tensors": {k: v for k, v in spec["tensors"].items() if int(k) in keep}}

"""Small ONNX test models for the NACC ONNX Runtime EP.

Float models are built with ``onnx.helper`` and quantized with
``onnxruntime.quantization.quantize_static`` (QDQ or QOperator format, int8 or
uint8 activations, per-tensor or per-channel weights), calibrated on seeded
random data. QOperator ops the quantizer does not emit are built directly.
Models are returned as serialized bytes.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 9  # onnxruntime 1.31 reads IR versions <= 13; onnx 1.23 writes 14 by default


def float_model(nodes, inputs: Dict[str, Sequence[int]], outputs: Dict[str, Sequence[int]],
                initializers: Optional[Dict[str, np.ndarray]] = None, name="g") -> onnx.ModelProto:
    """A float32 model; inputs / outputs map names to shapes."""
    g = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v)) for k, v in inputs.items()],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v)) for k, v in outputs.items()],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (initializers or {}).items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    onnx.checker.check_model(m)
    return m


def calibration(model: onnx.ModelProto, n: int = 8, seed: int = 0, scale: float = 1.0):
    """Seeded random calibration inputs for every graph input."""
    rng = np.random.default_rng(seed)
    feeds = []
    for _ in range(n):
        d = {}
        for vi in model.graph.input:
            shape = [x.dim_value for x in vi.type.tensor_type.shape.dim]
            d[vi.name] = (rng.standard_normal(shape) * scale).astype(np.float32)
        feeds.append(d)
    return feeds


def quantize(model: onnx.ModelProto, *, fmt: str = "QDQ", activation: str = "int8",
             weight: str = "int8", per_channel: bool = False, calib=None,
             extra_options: Optional[dict] = None, reduce_range: bool = False) -> bytes:
    """quantize_static with a seeded calibration set; returns model bytes.
    `reduce_range`: 7-bit weights (see qdq_unit's weight_bits)."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    feeds = calib if calib is not None else calibration(model)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(feeds)

        def get_next(self):
            return next(self.it, None)

    types = {"int8": QuantType.QInt8, "uint8": QuantType.QUInt8, "int16": QuantType.QInt16,
             "uint16": QuantType.QUInt16, "int4": QuantType.QInt4}
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "f.onnx"), os.path.join(d, "q.onnx")
        onnx.save(model, src)
        quantize_static(src, dst, Reader(),
                        quant_format=QuantFormat.QDQ if fmt == "QDQ" else QuantFormat.QOperator,
                        activation_type=types[activation], weight_type=types[weight],
                        per_channel=per_channel, reduce_range=reduce_range,
                        extra_options=dict(extra_options or {}))
        q = onnx.load(dst)
    q.ir_version = min(q.ir_version, IR_VERSION)
    return q.SerializeToString()


def rng_weights(shape, seed=1, scale=0.3):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


# ---- single-op float models ------------------------------------------------------

def conv(c_in=8, c_out=16, hw=(10, 10), k=3, stride=1, pads=(1, 1, 1, 1), group=1, bias=True,
         dilation=1, auto_pad=None, seed=1) -> onnx.ModelProto:
    w = rng_weights((c_out, c_in // group, k, k), seed)
    attrs = dict(kernel_shape=[k, k], strides=[stride, stride], group=group,
                 dilations=[dilation, dilation])
    if auto_pad:
        attrs["auto_pad"] = auto_pad
    else:
        attrs["pads"] = list(pads)
    ins = ["x", "w"] + (["b"] if bias else [])
    inits = {"w": w}
    if bias:
        inits["b"] = rng_weights((c_out,), seed + 1, 0.1)
    h, wd = hw
    eff = dilation * (k - 1) + 1
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        oh, ow = -(-h // stride), -(-wd // stride)
    else:
        oh = (h + pads[0] + pads[2] - eff) // stride + 1
        ow = (wd + pads[1] + pads[3] - eff) // stride + 1
    return float_model([helper.make_node("Conv", ins, ["y"], name="conv", **attrs)],
                       {"x": (1, c_in, h, wd)}, {"y": (1, c_out, oh, ow)}, inits)


def matmul(m=4, k=32, n=16, const_b=True, rank3=False) -> onnx.ModelProto:
    a_shape = (1, m, k) if rank3 else (m, k)
    y_shape = (1, m, n) if rank3 else (m, n)
    if const_b:
        return float_model([helper.make_node("MatMul", ["a", "b"], ["y"], name="matmul")],
                           {"a": a_shape}, {"y": y_shape}, {"b": rng_weights((k, n))})
    b_shape = (1, k, n) if rank3 else (k, n)
    return float_model([helper.make_node("MatMul", ["a", "b"], ["y"], name="matmul")],
                       {"a": a_shape, "b": b_shape}, {"y": y_shape})


def gemm(m=2, k=64, n=10, trans_b=1) -> onnx.ModelProto:
    b = rng_weights((n, k) if trans_b else (k, n))
    return float_model([helper.make_node("Gemm", ["a", "b", "c"], ["y"], name="gemm", transB=trans_b)],
                       {"a": (m, k)}, {"y": (m, n)}, {"b": b, "c": rng_weights((n,), 2, 0.1)})


def binary(op="Add", shape=(1, 8, 6, 6), shape_b=None) -> onnx.ModelProto:
    shape_b = shape_b or shape
    return float_model([helper.make_node(op, ["a", "b"], ["y"], name=op.lower())],
                       {"a": shape, "b": shape_b}, {"y": shape})


def pool(op="MaxPool", c=8, hw=(8, 8), k=2, stride=2, pads=(0, 0, 0, 0), ceil_mode=0,
         count_include_pad=None) -> onnx.ModelProto:
    attrs = dict(kernel_shape=[k, k], strides=[stride, stride], pads=list(pads), ceil_mode=ceil_mode)
    if count_include_pad is not None:
        attrs["count_include_pad"] = count_include_pad
    h, w = hw
    rnd = (lambda a, b: -(-a // b)) if ceil_mode else (lambda a, b: a // b)
    oh = rnd(h + pads[0] + pads[2] - k, stride) + 1
    ow = rnd(w + pads[1] + pads[3] - k, stride) + 1
    return float_model([helper.make_node(op, ["x"], ["y"], name=op.lower(), **attrs)],
                       {"x": (1, c, h, w)}, {"y": (1, c, oh, ow)})


def global_average_pool(c=16, hw=(7, 7)) -> onnx.ModelProto:
    return float_model([helper.make_node("GlobalAveragePool", ["x"], ["y"], name="gap")],
                       {"x": (1, c, *hw)}, {"y": (1, c, 1, 1)})


def unary(op="Relu", shape=(1, 8, 6, 6), **attrs) -> onnx.ModelProto:
    ins = ["x"]
    inits = {}
    if op == "Clip":
        ins += ["lo", "hi"]
        inits = {"lo": np.array(attrs.pop("lo", 0.0), np.float32),
                 "hi": np.array(attrs.pop("hi", 6.0), np.float32)}
    return float_model([helper.make_node(op, ins, ["y"], name=op.lower(), **attrs)],
                       {"x": shape}, {"y": shape}, inits)


# ---- whole small models ------------------------------------------------------------

def small_cnn(c=8, hw=16, classes=10, softmax_in_middle=False, residual=True,
              head=True) -> onnx.ModelProto:
    """conv-relu-conv(s2)-relu-maxpool-conv(dw)-relu-add-gap-flatten-gemm
    (`residual=False`: without the add; `head=False`: the output is the feature
    map before gap, [1, 2c, hw/4, hw/4])."""
    n = []
    inits = {
        "w1": rng_weights((c, 3, 3, 3), 11), "b1": rng_weights((c,), 12, 0.1),
        "w2": rng_weights((2 * c, c, 3, 3), 13, 0.2), "b2": rng_weights((2 * c,), 14, 0.1),
        "w3": rng_weights((2 * c, 1, 3, 3), 15), "b3": rng_weights((2 * c,), 16, 0.1),
        "w4": rng_weights((classes, 2 * c), 17, 0.2), "b4": rng_weights((classes,), 18, 0.1),
    }
    n.append(helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]))
    n.append(helper.make_node("Relu", ["c1"], ["r1"], name="relu1"))
    n.append(helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1], strides=[2, 2]))
    n.append(helper.make_node("Relu", ["c2"], ["r2"], name="relu2"))
    n.append(helper.make_node("MaxPool", ["r2"], ["p2"], name="pool2", kernel_shape=[2, 2],
                              strides=[2, 2]))
    mid = "p2"
    if softmax_in_middle:
        n.append(helper.make_node("Softmax", ["p2"], ["sm"], name="softmax_mid", axis=1))
        mid = "sm"
    n.append(helper.make_node("Conv", [mid, "w3", "b3"], ["c3"], name="conv3_dw",
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=2 * c))
    features = "s3" if residual else "r3"
    if not head:
        features = "y"
        del inits["w4"], inits["b4"]
    n.append(helper.make_node("Relu", ["c3"], ["r3" if residual else features], name="relu3"))
    if residual:
        n.append(helper.make_node("Add", ["r3", mid], [features], name="add3"))
    if not head:
        return float_model(n, {"x": (1, 3, hw, hw)}, {"y": (1, 2 * c, hw // 4, hw // 4)}, inits,
                           name="small_cnn_features")
    n.append(helper.make_node("GlobalAveragePool", [features], ["g"], name="gap"))
    n.append(helper.make_node("Flatten", ["g"], ["f"], name="flatten"))
    n.append(helper.make_node("Gemm", ["f", "w4", "b4"], ["y"], name="fc", transB=1))
    return float_model(n, {"x": (1, 3, hw, hw)}, {"y": (1, classes)}, inits, name="small_cnn")


def strided_stem(kind="patch_embed", classes=10) -> onnx.ModelProto:
    """The large-stride first layers (issue 15 item 4) with a small head:
    "patch_embed" a ViT 16x16 stride-16 Conv over 64x64 (-> 4x4 tokens of 32),
    a 1x1 Conv + Relu; "alexnet" an 11x11 stride-4 Conv + Relu over 67x67
    (-> 15x15), a 3x3 stride-2 MaxPool, a 5x5 Conv + Relu. Then a
    GlobalAveragePool, Flatten and Gemm."""
    if kind == "patch_embed":
        hw, layers = 64, [(32, 3, 16, 16, 0), (48, 32, 1, 1, 0)]
    else:
        hw, layers = 67, [(32, 3, 11, 4, 0), (48, 32, 5, 1, 2)]
    n, inits, t = [], {}, "x"
    for i, (co, ci, k, s, p) in enumerate(layers):
        inits[f"w{i}"] = rng_weights((co, ci, k, k), 30 + i, 1.0 / np.sqrt(ci * k * k))
        inits[f"b{i}"] = rng_weights((co,), 40 + i, 0.1)
        n.append(helper.make_node("Conv", [t, f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}",
                                  kernel_shape=[k, k], strides=[s, s], pads=[p] * 4))
        n.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"))
        t = f"r{i}"
        if kind == "alexnet" and i == 0:
            n.append(helper.make_node("MaxPool", [t], ["p0"], name="pool0", kernel_shape=[3, 3],
                                      strides=[2, 2]))
            t = "p0"
    inits["wf"] = rng_weights((classes, layers[-1][0]), 50, 0.2)
    inits["bf"] = rng_weights((classes,), 51, 0.1)
    n.append(helper.make_node("GlobalAveragePool", [t], ["g"], name="gap"))
    n.append(helper.make_node("Flatten", ["g"], ["f"], name="flatten"))
    n.append(helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc", transB=1))
    return float_model(n, {"x": (1, 3, hw, hw)}, {"y": (1, classes)}, inits, name=kind)


def mlp(k=32, hidden=64, classes=10, batch=1) -> onnx.ModelProto:
    inits = {"w1": rng_weights((k, hidden), 21, 0.2), "b1": rng_weights((hidden,), 22, 0.1),
             "w2": rng_weights((hidden, classes), 23, 0.2), "b2": rng_weights((classes,), 24, 0.1)}
    n = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
         helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], name="fc2")]
    return float_model(n, {"x": (batch, k)}, {"y": (batch, classes)}, inits, name="mlp")


# ---- running ----------------------------------------------------------------------

def session(model: bytes, providers, options: Optional[dict] = None, config: Optional[dict] = None,
            opt_level=None, intra_op_threads: Optional[int] = None):
    import onnxruntime as ort
    so = ort.SessionOptions()
    if intra_op_threads is not None:
        so.intra_op_num_threads = intra_op_threads
    for k, v in (config or {}).items():
        so.add_session_config_entry(k, v)
    if opt_level is not None:
        so.graph_optimization_level = opt_level
    if providers == "nacc":
        so.add_provider("NaccExecutionProvider", {k: str(v) for k, v in (options or {}).items()})
        return strict_session(model, so)
    return ort.InferenceSession(model, sess_options=so, providers=providers)


class EpError(RuntimeError):
    """The EP failed to create; ORT's Python wrapper fell back to the CPU EP."""


def strict_session(model, so):
    """InferenceSession that raises when the EP fails: onnxruntime 1.31's
    Python wrapper prints an EP's creation error and retries with the CPU EP
    only, and does the same for an EP_FAIL in run() (then every later run is
    the CPU EP's); this turns both fallbacks back into exceptions."""
    import contextlib
    import io

    import onnxruntime as ort
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        s = ort.InferenceSession(model, sess_options=so)
    if "NaccExecutionProvider" not in s.get_providers():
        raise EpError(out.getvalue())
    s.disable_fallback()
    return s


def optimization_levels():
    """The session / EP optimization levels the exactness tests run at: ORT's
    default (`all`) and `basic` (no QDQ fusion), as the EP's
    `ort_optimization_level` option names them (docs/onnxruntime_ep.md)."""
    import onnxruntime as ort
    return {"all": (ort.GraphOptimizationLevel.ORT_ENABLE_ALL, "all"),
            "basic": (ort.GraphOptimizationLevel.ORT_ENABLE_BASIC, "basic")}


def compare_with_cpu_ep(model: bytes, level="all", seeds=(1, 2, 3), config=None, feeds=None,
                        cores=2):
    """Runs `model` on the CPU EP and on the NACC EP (at `cores`) at one
    optimization level for each seed's feeds (`feeds(model, seed)`, default
    the first calibration batch of `input_feeds`); returns (differing
    elements over every output, total elements, the NACC session's
    partition report)."""
    import nacc.onnxruntime as nort
    so_level, ep_level = optimization_levels()[level]
    feeds = feeds or (lambda m, seed: input_feeds(m, seed=seed)[0])
    cpu = session(model, ["CPUExecutionProvider"], opt_level=so_level, config=config)
    npu = session(model, "nacc", {"ort_optimization_level": ep_level, "cores": cores},
                  opt_level=so_level, config=config)
    rep = nort.partition_reports()[-1]
    differ = total = 0
    for s in seeds:
        f = feeds(model, s)
        for a, b in zip(cpu.run(None, f), npu.run(None, f)):
            differ += int(np.count_nonzero(a != b))
            total += a.size
    return differ, total, rep


def input_feeds(model: bytes, seed=0, n=1):
    m = onnx.load_from_string(model)
    inits = {i.name for i in m.graph.initializer}
    return calibration(onnx.helper.make_model(
        helper.make_graph([], "x", [i for i in m.graph.input if i.name not in inits], []),
        ir_version=IR_VERSION), n=n, seed=seed)


# ---- hand-built QDQ single units -------------------------------------------------

# Which input of an op holds weights, and the axis of its output channels.
_WEIGHT_AXIS = {"Conv": (1, 0), "MatMul": (1, 1)}


def _qrange(dtype):
    return (-128, 127) if dtype == "int8" else (0, 255)


def _np_dtype(dtype):
    return np.int8 if dtype == "int8" else np.uint8


def _onnx_dtype(dtype):
    return TensorProto.INT8 if dtype == "int8" else TensorProto.UINT8


def _act_qparams(lo, hi, dtype):
    """Asymmetric (scale, zero point) covering [lo, hi] (and 0)."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    qmin, qmax = _qrange(dtype)
    scale = np.float32(max(hi - lo, 1e-3) / (qmax - qmin))
    zp = int(np.clip(round(qmin - lo / float(scale)), qmin, qmax))
    return scale, zp


def qdq_unit(model: onnx.ModelProto, *, dtype="int8", weight_dtype=None, per_channel=False,
             seed=0, fixed_output=None, weight_bits=8, int4_zero=None, block_size=0) -> bytes:
    """The one-op float `model` as one QDQ node unit with 8-bit model I/O.

    Graph inputs become int8/uint8 inputs dequantized by their own
    DequantizeLinear; weights are quantized (per tensor or per output channel,
    int8 zero point 0 or uint8 zero point 128); the bias is int32 with scale
    input scale x weight scale; the output is quantized by a QuantizeLinear to
    an 8-bit graph output. Activation ranges come from running the float model
    on seeded data. `fixed_output` = (scale, zero point) overrides the output's.
    `weight_bits=7` keeps weights in [-63, 63] (ORT's reduce_range): ONNX
    Runtime's x86 uint8 x int8 kernels (vpmaddubsw) saturate pairs of products
    beyond that, so comparisons with uint8 activations use it.
    """
    import onnxruntime as ort

    weight_dtype = weight_dtype or "int8"
    node = model.graph.node[0]
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    feeds = calibration(model, n=4, seed=seed)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    outs = [sess.run(None, f)[0] for f in feeds]
    new_inits, nodes, inputs = [], [], []
    qp = {}
    for vi in model.graph.input:
        data = np.concatenate([f[vi.name].ravel() for f in feeds])
        s, z = _act_qparams(data.min(), data.max(), dtype)
        qp[vi.name] = (s, z)
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        inputs.append(helper.make_tensor_value_info(vi.name + "_q", _onnx_dtype(dtype), shape))
        new_inits += [numpy_helper.from_array(np.array(s, np.float32), vi.name + "_s"),
                      numpy_helper.from_array(np.array(z, _np_dtype(dtype)), vi.name + "_z")]
        nodes.append(helper.make_node("DequantizeLinear", [vi.name + "_q", vi.name + "_s", vi.name + "_z"],
                                      [vi.name], name=vi.name + "_dq"))
    op = node.op_type
    w_index, w_axis = _WEIGHT_AXIS.get(op, (None, None))
    if op == "Gemm":
        trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
        w_index, w_axis = 1, (0 if trans_b else 1)
    weight_scale = None
    for idx, name in enumerate(node.input):
        if name not in inits:
            continue
        if idx == w_index:
            w = inits[name]
            qw = (1 << (weight_bits - 1)) - 1
            if per_channel:
                red = tuple(d for d in range(w.ndim) if d != w_axis)
                ws = (np.abs(w).max(axis=red) / qw).astype(np.float32)
            else:
                ws = np.array(np.abs(w).max() / qw, np.float32)
            shape = [1] * w.ndim
            if per_channel:
                shape[w_axis] = -1
            wq = np.clip(np.round(w / ws.reshape(shape) if per_channel else w / ws), -qw, qw)
            if weight_dtype == "uint8":
                wq, wz = (wq + 128).astype(np.uint8), np.full(ws.shape, 128, np.uint8)
            elif weight_dtype in ("int4", "uint4"):
                # opset-21 INT4 / UINT4 initializers (packed two per byte by
                # onnx.helper); zero point 0 (int4) or 8 (uint4), `int4_zero`
                # overrides it (nonzero zero points are declined)
                qw = 7
                wq = np.clip(np.round(w / ws.reshape(shape) if per_channel else w / ws), -qw, qw)
                z = int4_zero if int4_zero is not None else (8 if weight_dtype == "uint4" else 0)
                et = TensorProto.UINT4 if weight_dtype == "uint4" else TensorProto.INT4
                weight_scale = ws
                vals = (wq + (8 if weight_dtype == "uint4" else 0)).astype(np.int64)
                new_inits += [helper.make_tensor(name + "_q", et, w.shape, vals.ravel().tolist()),
                              numpy_helper.from_array(ws, name + "_s"),
                              helper.make_tensor(name + "_z", et, ws.shape, [z] * int(ws.size))]
                attrs = {"axis": w_axis} if per_channel else {}
                if block_size:
                    attrs = {"axis": w_axis, "block_size": block_size}
                nodes.append(helper.make_node("DequantizeLinear", [name + "_q", name + "_s", name + "_z"],
                                              [name], name=name + "_dq", **attrs))
                continue
            else:
                wq, wz = wq.astype(np.int8), np.zeros(ws.shape, np.int8)
            weight_scale = ws
            new_inits += [numpy_helper.from_array(wq, name + "_q"), numpy_helper.from_array(ws, name + "_s"),
                          numpy_helper.from_array(wz, name + "_z")]
            attrs = {"axis": w_axis} if per_channel else {}
            nodes.append(helper.make_node("DequantizeLinear", [name + "_q", name + "_s", name + "_z"],
                                          [name], name=name + "_dq", **attrs))
        elif op in ("Conv", "Gemm") and idx == 2:
            b = inits[name]
            xs = qp[node.input[0]][0]
            bs = (np.float32(xs) * weight_scale).astype(np.float32)
            bq = np.round(b / bs).astype(np.int32)
            new_inits += [numpy_helper.from_array(bq, name + "_q"),
                          numpy_helper.from_array(np.asarray(bs, np.float32), name + "_s"),
                          numpy_helper.from_array(np.zeros(np.shape(bs), np.int32), name + "_z")]
            attrs = {"axis": 0} if np.ndim(bs) else {}
            nodes.append(helper.make_node("DequantizeLinear", [name + "_q", name + "_s", name + "_z"],
                                          [name], name=name + "_dq", **attrs))
        else:
            new_inits.append(numpy_helper.from_array(inits[name], name))
    nodes.append(node)
    y = model.graph.output[0]
    if fixed_output is not None:
        ys, yz = fixed_output
    else:
        data = np.concatenate([o.ravel() for o in outs])
        ys, yz = _act_qparams(data.min(), data.max(), dtype)
    new_inits += [numpy_helper.from_array(np.array(ys, np.float32), y.name + "_s"),
                  numpy_helper.from_array(np.array(yz, _np_dtype(dtype)), y.name + "_z")]
    nodes.append(helper.make_node("QuantizeLinear", [y.name, y.name + "_s", y.name + "_z"], [y.name + "_q"],
                                  name=y.name + "_q"))
    shape = [d.dim_value for d in y.type.tensor_type.shape.dim]
    g = helper.make_graph(nodes, "unit_" + op, inputs,
                          [helper.make_tensor_value_info(y.name + "_q", _onnx_dtype(dtype), shape)],
                          new_inits)
    opset = 21 if weight_dtype in ("int4", "uint4") else max(OPSET, 19 if per_channel else OPSET)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          ir_version=IR_VERSION)
    onnx.checker.check_model(m)
    return m.SerializeToString()


def int8_feeds(model: bytes, seed=0):
    """Seeded random 8-bit inputs (full range) for a model with 8-bit inputs."""
    m = onnx.load_from_string(model)
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in m.graph.input:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        if vi.type.tensor_type.elem_type == TensorProto.INT8:
            feeds[vi.name] = rng.integers(-128, 128, shape).astype(np.int8)
        elif vi.type.tensor_type.elem_type == TensorProto.UINT8:
            feeds[vi.name] = rng.integers(0, 256, shape).astype(np.uint8)
        else:
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


# ---- weight chains (issue 11, item 1) ---------------------------------------------

@dataclass
class WeightChain:
    """How a weight reaches the DequantizeLinear of its op.

    `form`: "int8" (int8 initializer -> layout steps -> DQ), "Q" (float
    initializer -> QuantizeLinear -> layout steps -> DQ: quantize_static's
    AddQDQPairToWeight, the Q -> Transpose -> DQ of exported Linear layers), or
    "DQQ" (int8 initializer -> DQ -> layout steps -> Q -> DQ, per tensor: what
    quantize_static writes around a Transpose / Reshape of a weight).
    `steps`: from the stored tensor to the op's weight, each ("Transpose",
    perm), ("Reshape", out_shape), ("Flatten", out_shape) (axis 1),
    ("Squeeze", (out_shape, axes)), ("Unsqueeze", (out_shape, axes)) or
    ("Identity", None). `per_channel`: scales per output channel of the op;
    `dq_axis` puts the per-channel scales on another axis of the op's weight
    (a wrong one, to be declined); `q_axis` is the QuantizeLinear's axis on the
    stored tensor (form "Q"; where that channel lies before the steps)."""
    form: str = "int8"
    steps: tuple = ()
    per_channel: bool = True
    q_axis: Optional[int] = None
    dq_axis: Optional[int] = None


def _target_shape(kind, arg):
    return arg[0] if kind in ("Squeeze", "Unsqueeze") else arg


def _layout_nodes(name, steps, src, out_name, inits):
    """ONNX nodes for layout steps from value `src`; the last writes `out_name`."""
    nodes = []
    for i, (kind, arg) in enumerate(steps):
        dst = out_name if i == len(steps) - 1 else f"{name}_l{i}"
        node_name = f"{name}_{kind.lower()}{i}"
        ins, attrs = [src], {}
        if kind == "Transpose":
            attrs["perm"] = list(arg)
        elif kind == "Reshape":
            inits.append(numpy_helper.from_array(np.array(arg, np.int64), f"{node_name}_shape"))
            ins.append(f"{node_name}_shape")
        elif kind == "Flatten":
            attrs["axis"] = 1
        elif kind in ("Squeeze", "Unsqueeze"):
            inits.append(numpy_helper.from_array(np.array(arg[1], np.int64), f"{node_name}_axes"))
            ins.append(f"{node_name}_axes")
        nodes.append(helper.make_node(kind, ins, [dst], name=node_name, **attrs))
        src = dst
    return nodes


def _quantize_weight(w: np.ndarray, axis: Optional[int]):
    """Symmetric int8 weights, scale per `axis` (or per tensor): (q, scale)."""
    if axis is None:
        s = np.array(max(float(np.abs(w).max()), 1e-6) / 127, np.float32)
        return np.clip(np.round(w / s), -127, 127).astype(np.int8), s
    red = tuple(d for d in range(w.ndim) if d != axis)
    s = (np.maximum(np.abs(w).max(axis=red), 1e-6) / 127).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    return np.clip(np.round(w / s.reshape(shape)), -127, 127).astype(np.int8), s


def weight_chain_nodes(name: str, w: np.ndarray, channel_axis: int, chain: WeightChain,
                       out_name: str, inits: list, stored_shape: Optional[tuple] = None) -> list:
    """Nodes (and initializers, appended to `inits`) that produce the
    dequantized weight `w` (in the op's layout, output channels on
    `channel_axis`) as value `out_name` through `chain`. `stored_shape`: the
    stored tensor's shape when the steps include a reshape."""
    def stored(x):  # the steps' inverse
        for k, (kind, arg) in reversed(list(enumerate(chain.steps))):
            if kind == "Transpose":
                x = np.transpose(x, np.argsort(arg))
            elif kind != "Identity":
                before = stored_shape if k == 0 else _target_shape(*chain.steps[k - 1])
                x = x.reshape(before)
        return x

    axis = chain.dq_axis if chain.dq_axis is not None else channel_axis
    per_axis = chain.per_channel or chain.dq_axis is not None
    nodes = []
    if chain.form == "DQQ":
        q, s = _quantize_weight(w, None)
        inits += [numpy_helper.from_array(stored(q), f"{name}_q"),
                  numpy_helper.from_array(s, f"{name}_scale"),
                  numpy_helper.from_array(np.array(0, np.int8), f"{name}_zp")]
        nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_scale", f"{name}_zp"],
                                      [f"{name}_f"], name=f"{name}_dq0"))
        nodes += _layout_nodes(name, chain.steps, f"{name}_f", f"{name}_ft", inits)
        nodes.append(helper.make_node("QuantizeLinear", [f"{name}_ft", f"{name}_scale", f"{name}_zp"],
                                      [f"{name}_qt"], name=f"{name}_requantize"))
        nodes.append(helper.make_node("DequantizeLinear", [f"{name}_qt", f"{name}_scale", f"{name}_zp"],
                                      [out_name], name=f"{name}_dq"))
        return nodes
    q, s = _quantize_weight(w, axis if per_axis else None)
    inits += [numpy_helper.from_array(s, f"{name}_scale"),
              numpy_helper.from_array(np.zeros(s.shape, np.int8), f"{name}_zp")]
    if chain.form == "int8":
        inits.append(numpy_helper.from_array(stored(q), f"{name}_q"))
        src = f"{name}_q"
    elif chain.form == "Q":
        inits.append(numpy_helper.from_array(stored(w).astype(np.float32), f"{name}_f"))
        attrs = {"axis": chain.q_axis if chain.q_axis is not None else axis} if per_axis else {}
        nodes.append(helper.make_node("QuantizeLinear", [f"{name}_f", f"{name}_scale", f"{name}_zp"],
                                      [f"{name}_qf"], name=f"{name}_quantize", **attrs))
        src = f"{name}_qf"
    else:
        raise ValueError(chain.form)
    if chain.steps:
        nodes += _layout_nodes(name, chain.steps, src, f"{name}_laid", inits)
        src = f"{name}_laid"
    nodes.append(helper.make_node("DequantizeLinear", [src, f"{name}_scale", f"{name}_zp"], [out_name],
                                  name=f"{name}_dq", **({"axis": axis} if per_axis else {})))
    return nodes


def qdq_graph(nodes: list, inits: list, inputs: Dict[str, Sequence[int]],
              outputs: Dict[str, Sequence[int]], *, seed=0, x_scale=0.05, x_zero_point=3,
              names=True, opset=OPSET) -> bytes:
    """A QDQ graph with int8 model I/O around float `nodes`: each float input
    `x` comes from int8 input `x_q` through a DequantizeLinear (scale
    `x_scale`, zero point `x_zero_point`), each float output `y` goes to int8
    output `y_q` through a QuantizeLinear whose (scale, zero point) cover the
    float output on seeded full-range int8 inputs. int8 I/O keeps ONNX
    Runtime's CPU EP on its exact int8 x int8 kernels (with float I/O it
    converts activations to uint8, whose AVX2 kernels saturate int16 pair sums;
    see tests/test_ep_weight_chains.py). `names=False` leaves every node
    unnamed, as onnx.helper, some exporters and graph rewriters do."""
    import onnxruntime as ort

    head, head_inits = [], []
    for x in inputs:
        head_inits += [numpy_helper.from_array(np.array(x_scale, np.float32), f"{x}_s"),
                       numpy_helper.from_array(np.array(x_zero_point, np.int8), f"{x}_z")]
        head.append(helper.make_node("DequantizeLinear", [f"{x}_q", f"{x}_s", f"{x}_z"], [x], name=f"{x}_dq"))
    in_vi = [helper.make_tensor_value_info(f"{x}_q", TensorProto.INT8, list(s)) for x, s in inputs.items()]

    def model(out_nodes, out_vi, out_inits):
        g = helper.make_graph(head + list(nodes) + out_nodes, "weight_chains", in_vi, out_vi,
                              head_inits + list(inits) + out_inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)
        if not names:
            for n in m.graph.node:
                n.name = ""
        onnx.checker.check_model(m)
        return m

    float_m = model([], [helper.make_tensor_value_info(y, TensorProto.FLOAT, list(s)) for y, s in outputs.items()], [])
    sess = ort.InferenceSession(float_m.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(seed)
    runs = [sess.run(None, {f"{x}_q": rng.integers(-128, 128, s).astype(np.int8) for x, s in inputs.items()})
            for _ in range(4)]
    tail, tail_inits = [], []
    for i, y in enumerate(outputs):
        data = np.concatenate([r[i].ravel() for r in runs])
        ys, yz = _act_qparams(data.min(), data.max(), "int8")
        tail_inits += [numpy_helper.from_array(np.array(ys, np.float32), f"{y}_s"),
                       numpy_helper.from_array(np.array(yz, np.int8), f"{y}_z")]
        tail.append(helper.make_node("QuantizeLinear", [y, f"{y}_s", f"{y}_z"], [f"{y}_q"], name=f"{y}_qz"))
    out_vi = [helper.make_tensor_value_info(f"{y}_q", TensorProto.INT8, list(s)) for y, s in outputs.items()]
    return model(tail, out_vi, tail_inits).SerializeToString()


def int8_io(model: bytes) -> bytes:
    """A quantize_static QDQ model with its float I/O cut off: each float graph
    input whose only consumer is a QuantizeLinear becomes that Q's int8
    output, each float graph output made by a DequantizeLinear becomes that
    DQ's int8 input. The quantizer's weight chains stay as it wrote them."""
    m = onnx.load_from_string(model)
    g = m.graph
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    drop, inputs, outputs = set(), [], []
    elem = {}
    for init in g.initializer:
        elem[init.name] = init.data_type
    for vi in g.input:
        cs = consumers.get(vi.name, [])
        if len(cs) == 1 and cs[0].op_type == "QuantizeLinear":
            q = cs[0]
            zp_type = elem.get(q.input[2], TensorProto.UINT8) if len(q.input) > 2 else TensorProto.UINT8
            drop.add(id(q))
            shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
            inputs.append(helper.make_tensor_value_info(q.output[0], zp_type, shape))
        else:
            inputs.append(vi)
    for vo in g.output:
        dq = next((n for n in g.node if vo.name in n.output), None)
        if dq is not None and dq.op_type == "DequantizeLinear":
            drop.add(id(dq))
            zp_type = elem.get(dq.input[2], TensorProto.UINT8) if len(dq.input) > 2 else TensorProto.UINT8
            shape = [d.dim_value for d in vo.type.tensor_type.shape.dim]
            outputs.append(helper.make_tensor_value_info(dq.input[0], zp_type, shape))
        else:
            outputs.append(vo)
    nodes = [n for n in g.node if id(n) not in drop]
    del g.node[:]
    g.node.extend(nodes)
    del g.input[:]
    g.input.extend(inputs)
    del g.output[:]
    g.output.extend(outputs)
    onnx.checker.check_model(m)
    return m.SerializeToString()

"""Graph spec -> int8 TFLite flatbuffer (tests/tflite_builder.GraphBuilder).

Imports TensorFlow's schema module; only the reference worker calls it."""
from __future__ import annotations

import numpy as np

from tflite_builder import GraphBuilder, QTensor

from .ops import INT16_VERSIONS, KINDS, const_operand, weights_of


def build_tflite(spec: dict) -> bytes:
    g = GraphBuilder()
    ts = spec["tensors"]
    ids: dict = {}
    int16 = spec.get("dtype") == "int16"  # a 16x8 graph (generate fmt "tflite16")
    adt = "int16" if int16 else "int8"

    def act(tid):
        if tid not in ids:
            t = ts[str(tid)]
            if tid in const_ids:
                op = const_ids[tid]
                data = const_operand(op, t["shape"], t)
                if int16:
                    data = data.astype(np.int16) * 256
                ids[tid] = g.add_tensor(QTensor(t["shape"], adt, scale=t["scale"],
                                                zero_point=t["zp"], data=data, name=f"c{tid}"))
            else:
                ids[tid] = g.add_tensor(QTensor(t["shape"], adt, scale=t["scale"],
                                                zero_point=t["zp"], name=f"t{tid}"))
        return ids[tid]

    def const(shape, dtype, data, scale=None, zp=None, axis=0):
        return g.add_tensor(QTensor(tuple(shape), dtype, scale=scale, zero_point=zp,
                                    quantized_dimension=axis, data=data))

    const_ids = {op["p"]["const_tensor"]: op for op in spec["ops"] if op["p"].get("const")}
    for tid in spec["inputs"]:
        act(tid)
    for i, op in enumerate(spec["ops"]):
        kind, p = op["kind"], op["p"]
        version = INT16_VERSIONS[kind] if int16 else KINDS[kind].version
        shapes = [ts[str(t)]["shape"] for t in op["in"]]
        ins = [act(t) for t in op["in"]]
        out = act(op["out"])
        opts = None
        if kind in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            w, scales, bias, in_s = weights_of(op, shapes, ts)
            axis = 3 if kind == "DEPTHWISE_CONV_2D" else 0
            wid = const(w.shape, "int4" if p.get("int4") else "int8", w, scales, [0] * len(scales), axis)
            bscales = [in_s * s for s in scales]
            if len(scales) == 1:
                bscales = [in_s * scales[0]]
            bid = const(bias.shape, "int64" if int16 else "int32",
                        bias.astype(np.int64) if int16 else bias, bscales, [0] * len(bscales), 0)
            ins = [ins[0], wid, bid]
            if p.get("int4"):  # int4 weights: CONV_2D v7, FULLY_CONNECTED v10
                version = 10 if kind == "FULLY_CONNECTED" else 7
            if kind == "FULLY_CONNECTED":
                opts = dict(fused_activation_function=p["act"])
            else:
                opts = dict(padding=p["padding"], stride_h=p["sh"], stride_w=p["sw"],
                            dilation_h_factor=p["dh"], dilation_w_factor=p["dw"],
                            fused_activation_function=p["act"])
                if kind == "DEPTHWISE_CONV_2D":
                    opts["depth_multiplier"] = p["mult"]
                elif p.get("groups", 1) > 1 and not int16:
                    version = 6  # CONV_2D v6: grouped
        elif kind == "TRANSPOSE_CONV":
            w, scales, bias, in_s = weights_of(op, shapes, ts)
            wid = const(w.shape, "int8", w, scales, [0] * len(scales), 0)
            bid = const(bias.shape, "int32", bias, [in_s * s for s in scales] * (
                len(bias) if len(scales) == 1 else 1), [0] * len(bias), 0)
            oshape = np.array(ts[str(op["out"])]["shape"], dtype=np.int32)
            ins = [const((4,), "int32", oshape), wid, ins[0], bid]
            opts = dict(padding=p["padding"], stride_h=p["sh"], stride_w=p["sw"],
                        fused_activation_function=p["act"])
        elif kind == "TRANSPOSE":
            ins = [ins[0], const((len(p["perm"]),), "int32", np.array(p["perm"], dtype=np.int32))]
        elif kind == "RESIZE_BILINEAR":
            ins = [ins[0], const((2,), "int32", np.array(p["size"], dtype=np.int32))]
            opts = dict(align_corners=p["align_corners"], half_pixel_centers=p["half_pixel_centers"])
            version = 3 if p["half_pixel_centers"] else 2
        elif kind in ("MAX_POOL_2D", "AVERAGE_POOL_2D"):
            opts = dict(padding=p["padding"], stride_h=p["sh"], stride_w=p["sw"],
                        filter_height=p["kh"], filter_width=p["kw"],
                        fused_activation_function=p["act"])
        elif kind in ("ADD", "SUB", "MUL"):
            if p["broadcast"] == "self":
                ins = [ins[0], ins[0]]
            elif p["swap"]:
                ins = [ins[1], ins[0]]
            opts = dict(fused_activation_function=p["act"])
            if int16 and kind != "MUL":
                opts["pot_scale_int16"] = False  # as the converter writes
        elif kind == "RESHAPE":
            shape = np.array(p["new_shape"], dtype=np.int32)
            ins = [ins[0], const(shape.shape, "int32", shape)]
            opts = dict(new_shape=[int(d) for d in shape])
        elif kind == "PAD":
            pads = np.array(p["pads"], dtype=np.int32)
            ins = [ins[0], const(pads.shape, "int32", pads)]
        elif kind == "MEAN":
            axes = np.array([1, 2], dtype=np.int32)
            ins = [ins[0], const(axes.shape, "int32", axes)]
            opts = dict(keep_dims=p["keep_dims"])
        elif kind == "CONCATENATION":
            opts = dict(axis=p["axis"], fused_activation_function="NONE")
        elif kind == "SLICE":
            ins = [ins[0]] + [const((len(p[k]),), "int32", np.array(p[k], dtype=np.int32))
                              for k in ("begin", "size")]
        elif kind == "STRIDED_SLICE":
            ins = [ins[0]] + [const((len(p[k]),), "int32", np.array(p[k], dtype=np.int32))
                              for k in ("begin", "end", "strides")]
            opts = dict(begin_mask=p["begin_mask"], end_mask=p["end_mask"])
        elif kind == "RESIZE_NEAREST_NEIGHBOR":
            ins = [ins[0], const((2,), "int32", np.array(p["size"], dtype=np.int32))]
            opts = dict(align_corners=p["align_corners"], half_pixel_centers=p["half_pixel_centers"])
        elif kind in ("SPACE_TO_DEPTH", "DEPTH_TO_SPACE"):
            opts = dict(block_size=p["block"])
        elif kind in ("MAXIMUM", "MINIMUM") and len(ins) == 1:
            t = spec["tensors"][str(op["in"][0])]
            ins = [ins[0], const((), "int8", np.array(p["value"], dtype=np.int8), scale=t["scale"],
                                 zp=t["zp"])]
        elif kind == "SOFTMAX":
            opts = dict(beta=p["beta"])
        elif kind == "LEAKY_RELU":
            opts = dict(alpha=p["alpha"])
        elif kind == "BATCH_MATMUL":
            opts = dict(adj_x=False, adj_y=False)
        g.add_op(kind, ins, [out], opts, version=version)
    return g.build([ids[t] for t in spec["inputs"]], [ids[t] for t in spec["outputs"]])

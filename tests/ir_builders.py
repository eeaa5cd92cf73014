"""Single-op IR graphs for the IR and capability-rule tests.

Each builder returns ``(graph, op_index)`` for one op whose shapes are
consistent (output shapes are computed with the IR's own window helpers), with
keyword arguments to push exactly one property past a limit.
"""
from __future__ import annotations

import numpy as np

from nacc import _core

NP_DTYPES = {"int8": np.int8, "uint8": np.uint8, "int16": np.int16, "int32": np.int32,
             "int64": np.int64, "float32": np.float32,
             "int4": np.int8}  # int4: unpacked, one value in [-8, 7] per byte
IN_SCALE, IN_ZP = 0.05, -3
OUT_SCALE, OUT_ZP = 0.1, 5


def activation(g, name, shape, dtype="int8", scale=IN_SCALE, zero_point=IN_ZP, axis=0):
    """A runtime tensor; float32 gets no quantization."""
    if dtype == "float32":
        return g.add_tensor(name, list(shape), dtype)
    return g.add_tensor(name, list(shape), dtype, scales=scale, zero_points=zero_point, axis=axis)


def constant(g, name, shape, dtype, scales, zero_points=None, axis=0, is_constant=True):
    data = np.zeros(shape, NP_DTYPES[dtype]) if is_constant else None
    return g.add_tensor(name, list(shape), dtype, scales=scales, zero_points=zero_points,
                        axis=axis, data=data)


def conv(kind="CONV_2D", *, name="conv", in_hw=(8, 8), c_in=4, c_out=4, kernel=(3, 3),
         stride=(1, 1), dilation=(1, 1), pads=(0, 0, 0, 0), padding=None, batch=1,
         depth_multiplier=1, dtype="int8", in_shape=None, out_shape=None,
         weights_dtype="int8", weights_zp=0, weights_axis=None, weights_constant=True,
         filter_c_in=None, bias=True, bias_dtype="int32", activation_fn="NONE", options=(),
         extra_inputs=()):
    """CONV_2D or DEPTHWISE_CONV_2D. weights_axis: per-channel scales on that
    filter axis (None: per tensor). padding: 'SAME'/'VALID' instead of pads."""
    g = _core.Graph()
    kh, kw = kernel
    depthwise = kind == "DEPTHWISE_CONV_2D"
    if depthwise:
        c_out = c_in * depth_multiplier
        f_shape = [1, kh, kw, c_out]
    else:
        f_shape = [c_out, kh, kw, filter_c_in or c_in]
    in_shape = list(in_shape or [batch, *in_hw, c_in])
    if padding is not None:
        pads = _core.tflite_padding(padding, in_shape[1], in_shape[2], kh, kw, *stride, *dilation)
    if out_shape is None:
        oh = _core.window_output_size(in_shape[1], kh, stride[0], pads[0], pads[1], dilation[0])
        ow = _core.window_output_size(in_shape[2], kw, stride[1], pads[2], pads[3], dilation[1])
        out_shape = [in_shape[0], oh, ow, c_out]
    x = activation(g, "x", in_shape, dtype)
    if weights_axis is None:
        w_scales, w_zps = 0.02, weights_zp
    else:
        n = f_shape[weights_axis]
        w_zps = list(weights_zp) if isinstance(weights_zp, (list, tuple)) else [weights_zp] * n
        w_scales = [0.02] * n
    w = constant(g, "w", f_shape, weights_dtype, w_scales, w_zps, axis=weights_axis or 0,
                 is_constant=weights_constant)
    inputs = [x, w]
    if bias:
        inputs.append(constant(g, "b", [c_out], bias_dtype, [0.001] * c_out, axis=0))
    inputs += list(extra_inputs)
    y = activation(g, "y", out_shape, dtype, OUT_SCALE, OUT_ZP)
    attrs = dict(stride_h=stride[0], stride_w=stride[1], dilation_h=dilation[0],
                 dilation_w=dilation[1], pad_top=pads[0], pad_bottom=pads[1], pad_left=pads[2],
                 pad_right=pads[3], activation=activation_fn,
                 unsupported_options=list(options))
    if depthwise:
        attrs["depth_multiplier"] = depth_multiplier
    return g, g.add_op(kind, inputs, [y], name=name, **attrs)


def pool(kind="MAX_POOL_2D", *, name="pool", in_hw=(8, 8), c=4, kernel=(2, 2), stride=(2, 2),
         pads=(0, 0, 0, 0), padding=None, batch=1, out_scale=IN_SCALE, out_zp=IN_ZP,
         activation_fn="NONE"):
    """MAX_POOL_2D or AVERAGE_POOL_2D; output quantization defaults to the input's."""
    g = _core.Graph()
    kh, kw = kernel
    if padding is not None:
        pads = _core.tflite_padding(padding, in_hw[0], in_hw[1], kh, kw, *stride)
    oh = _core.window_output_size(in_hw[0], kh, stride[0], pads[0], pads[1])
    ow = _core.window_output_size(in_hw[1], kw, stride[1], pads[2], pads[3])
    x = activation(g, "x", [batch, *in_hw, c])
    y = activation(g, "y", [batch, oh, ow, c], scale=out_scale, zero_point=out_zp)
    return g, g.add_op(kind, [x], [y], name=name, kernel_h=kh, kernel_w=kw, stride_h=stride[0],
                       stride_w=stride[1], pad_top=pads[0], pad_bottom=pads[1],
                       pad_left=pads[2], pad_right=pads[3], activation=activation_fn)


def fully_connected(*, name="fc", m=1, k=16, n=8, in_shape=None, out_shape=None,
                    weights_axis=None, weights_dtype="int8", options=(), activation_fn="NONE"):
    g = _core.Graph()
    x = activation(g, "x", in_shape or [m, k])
    scales = 0.02 if weights_axis is None else [0.02] * [n, k][weights_axis]
    w = constant(g, "w", [n, k], weights_dtype, scales, axis=weights_axis or 0)
    b = constant(g, "b", [n], "int32", [0.001] * n)
    y = activation(g, "y", out_shape or [m, n], scale=OUT_SCALE, zero_point=OUT_ZP)
    return g, g.add_op("FULLY_CONNECTED", [x, w, b], [y], name=name, activation=activation_fn,
                       unsupported_options=list(options))


def batch_matmul(*, name="bmm", a_shape=(1, 4, 16), b_shape=(1, 16, 8), out_shape=None):
    g = _core.Graph()
    a = activation(g, "a", a_shape)
    b = activation(g, "b", b_shape, scale=0.03, zero_point=2)
    out = out_shape or [*a_shape[:-1], b_shape[-1]]
    y = activation(g, "y", out, scale=OUT_SCALE, zero_point=OUT_ZP)
    return g, g.add_op("BATCH_MATMUL", [a, b], [y], name=name)


def binary(kind="ADD", *, name="add", a_shape=(1, 4, 4, 8), b_shape=(1, 4, 4, 8),
           out_shape=None, activation_fn="NONE"):
    g = _core.Graph()
    a = activation(g, "a", a_shape)
    b = activation(g, "b", b_shape, scale=0.07, zero_point=1)
    out = out_shape or list(np.broadcast_shapes(tuple(a_shape), tuple(b_shape)))
    y = activation(g, "y", out, scale=OUT_SCALE, zero_point=OUT_ZP)
    return g, g.add_op(kind, [a, b], [y], name=name, activation=activation_fn)


def unary(kind="RELU", *, name="act", shape=(1, 4, 4, 8), in_dtype="int8", out_dtype="int8",
          out_scale=OUT_SCALE, out_zp=OUT_ZP, in_scale=IN_SCALE, in_zp=IN_ZP, in_axis=0,
          out_shape=None, **attrs):
    g = _core.Graph()
    x = activation(g, "x", shape, in_dtype, scale=in_scale, zero_point=in_zp, axis=in_axis)
    y = activation(g, "y", out_shape or shape, out_dtype, scale=out_scale, zero_point=out_zp)
    return g, g.add_op(kind, [x], [y], name=name, **attrs)


def mean(*, name="mean", in_shape=(1, 7, 7, 16), axes=(1, 2), keep_dims=True):
    g = _core.Graph()
    x = activation(g, "x", in_shape)
    reduced = {a % len(in_shape) for a in axes}
    out = [1 if d in reduced else s for d, s in enumerate(in_shape)
           if keep_dims or d not in reduced]
    y = activation(g, "y", out, scale=OUT_SCALE, zero_point=OUT_ZP)
    return g, g.add_op("MEAN", [x], [y], name=name, axes=list(axes), keep_dims=keep_dims)


def pad(*, name="pad", in_shape=(1, 8, 8, 4), paddings=((0, 0), (1, 1), (1, 1), (0, 0)),
        out_scale=IN_SCALE, out_zp=IN_ZP):
    g = _core.Graph()
    x = activation(g, "x", in_shape)
    out = [s + a + b for s, (a, b) in zip(in_shape, paddings)]
    y = activation(g, "y", out, scale=out_scale, zero_point=out_zp)
    return g, g.add_op("PAD", [x], [y], name=name, paddings=[list(p) for p in paddings])


def concat(*, name="concat", shapes=((1, 4, 4, 8), (1, 4, 4, 8)), axis=3, out_shape=None,
           scales=None, activation_fn="NONE", **kw):
    g = _core.Graph()
    scales = scales or [IN_SCALE] * len(shapes)
    ins = [activation(g, f"x{i}", s, scale=sc) for i, (s, sc) in enumerate(zip(shapes, scales))]
    if out_shape is None:
        out_shape = list(shapes[0])
        out_shape[axis] = sum(s[axis] for s in shapes)
    y = activation(g, "y", out_shape)
    act_name = kw.pop("activation", activation_fn)
    return g, g.add_op("CONCATENATION", ins, [y], name=name, axis=axis, activation=act_name)


def reshape(*, name="reshape", in_shape=(1, 4, 4, 8), out_shape=(1, 128), with_shape_input=True):
    g = _core.Graph()
    x = activation(g, "x", in_shape)
    inputs = [x]
    if with_shape_input:
        inputs.append(g.add_tensor("shape", [len(out_shape)], "int32",
                                   data=np.array(out_shape, np.int32)))
    y = activation(g, "y", out_shape)
    return g, g.add_op("RESHAPE", inputs, [y], name=name)


def other(type_name="SOFTMAX", *, name="sm", shape=(1, 10)):
    g = _core.Graph()
    x = activation(g, "x", shape)
    y = activation(g, "y", shape, scale=1 / 256, zero_point=-128)
    return g, g.add_op("OTHER", [x], [y], name=name, type_name=type_name)


def slice_op(*, name="slice", in_shape=(1, 8, 8, 16), begins=((0, 0, 0, 4),), sizes=((1, 8, 8, 8),),
             strides=(1, 1, 1, 1)):
    """The IR's SLICE (TFLite SLICE / STRIDED_SLICE / SPLIT / SPLIT_V): one
    output per (begin, size)."""
    g = _core.Graph()
    x = activation(g, "x", in_shape)
    ys = [activation(g, f"y{k}", s) for k, s in enumerate(sizes)]
    return g, g.add_op("SLICE", [x], ys, name=name, slice_begin=[list(b) for b in begins],
                       slice_strides=list(strides))


def resize_nearest(*, name="resize", in_shape=(1, 4, 4, 8), out_hw=(8, 8), align_corners=False,
                   half_pixel_centers=False):
    g = _core.Graph()
    x = activation(g, "x", in_shape)
    y = activation(g, "y", (in_shape[0], out_hw[0], out_hw[1], in_shape[3]))
    return g, g.add_op("RESIZE_NEAREST_NEIGHBOR", [x], [y], name=name, align_corners=align_corners,
                       half_pixel_centers=half_pixel_centers)


def space_depth(kind="SPACE_TO_DEPTH", *, name="s2d", in_shape=(1, 8, 8, 4), block=2, const=False):
    g = _core.Graph()
    n, h, w, c = in_shape
    x = constant(g, "x", in_shape, "int8", IN_SCALE, IN_ZP) if const else activation(g, "x", in_shape)
    out = ((n, h // block, w // block, c * block * block) if kind == "SPACE_TO_DEPTH"
           else (n, h * block, w * block, c // (block * block)))
    y = activation(g, "y", out)
    return g, g.add_op(kind, [x], [y], name=name, block_size=block)


def transpose_conv(*, name="tconv", in_hw=(4, 4), c_in=4, c_out=4, kernel=(3, 3), stride=(2, 2),
                   pads=(1, 1), out_hw=None, per_channel=True, weights_dtype="int8"):
    """TRANSPOSE_CONV [1, H, W, c_in] -> [1, out_hw, c_out]; out_hw defaults to
    stride x the input (SAME); pads = TFLite's (top, left)."""
    g = _core.Graph()
    oh, ow = out_hw or (in_hw[0] * stride[0], in_hw[1] * stride[1])
    x = activation(g, "x", [1, *in_hw, c_in])
    n = c_out if per_channel else 1
    w = constant(g, "w", [c_out, *kernel, c_in], weights_dtype, [0.02] * n, [0] * n, axis=0)
    y = activation(g, "y", [1, oh, ow, c_out], scale=OUT_SCALE, zero_point=OUT_ZP)
    return g, g.add_op("TRANSPOSE_CONV", [x, w], [y], name=name, stride_h=stride[0],
                       stride_w=stride[1], pad_top=pads[0], pad_left=pads[1])


def transpose(*, name="transpose", in_shape=(1, 4, 6, 8), perm=(0, 2, 1, 3), dtype="int8"):
    g = _core.Graph()
    zp = 0 if dtype == "int16" else IN_ZP
    x = activation(g, "x", list(in_shape), dtype, zero_point=zp)
    y = activation(g, "y", [in_shape[p] for p in perm], dtype, zero_point=zp)
    return g, g.add_op("TRANSPOSE", [x], [y], name=name, perm=list(perm))


def resize_bilinear(*, name="bilinear", in_shape=(1, 4, 4, 8), out_hw=(8, 8), align_corners=False,
                    half_pixel_centers=True):
    g = _core.Graph()
    x = activation(g, "x", list(in_shape))
    y = activation(g, "y", [in_shape[0], *out_hw, in_shape[3]])
    return g, g.add_op("RESIZE_BILINEAR", [x], [y], name=name, align_corners=align_corners,
                       half_pixel_centers=half_pixel_centers)


def max_min(kind="MAXIMUM", *, name="max", in_shape=(1, 4, 4, 8), const_shape=(1,), values=(3,),
            runtime_both=False):
    """MAXIMUM / MINIMUM of a runtime tensor and an int8 constant (`values`
    repeated to `const_shape`), or of two runtime tensors."""
    g = _core.Graph()
    x = activation(g, "x", in_shape)
    if runtime_both:
        c = activation(g, "x2", in_shape)
    else:
        data = np.resize(np.array(values, np.int8), const_shape)
        c = g.add_tensor("c", list(const_shape), "int8", scales=IN_SCALE, zero_points=IN_ZP, data=data)
    y = activation(g, "y", in_shape)
    return g, g.add_op(kind, [x, c], [y], name=name)

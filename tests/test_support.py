"""Capability rules (csrc/support/rules.cc): for every rule a case at its limit
(supported) and one past it (declined with that rule's name and a detail
naming the value); the SRAM bound as golden numbers; message format; and the
generated docs/supported_ops.md being up to date."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import pytest

import ir_builders as b
import nacc
from nacc import _core
from nacc import supported_ops

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RULES = {r["name"]: r for r in _core.rules_table()}


@dataclass
class Case:
    id: str
    build: Callable[[], tuple]
    rule: str                       # the rule this case exercises
    declined: bool                  # False: the supported case at the limit
    detail: Optional[str] = None    # substring of the violation's detail
    config: dict = field(default_factory=dict)


def _binary_const(kind, const_shape, which):
    """`kind` of a runtime [1,4,4,8] map and a constant of `const_shape` as
    operand `which` ("a": first, "b": second)."""
    g = _core.Graph()
    shapes = {"a": (1, 4, 4, 8), "b": (1, 4, 4, 8)}
    shapes[which] = const_shape
    ids = {n: (b.constant(g, n, shapes[n], "int8", 0.07, 1) if n == which
               else b.activation(g, n, shapes[n])) for n in ("a", "b")}
    y = b.activation(g, "y", (1, 4, 4, 8), scale=b.OUT_SCALE, zero_point=b.OUT_ZP)
    return g, g.add_op(kind, [ids["a"], ids["b"]], [y], name=kind.lower())


def _conv16(kind="CONV_2D", out_dtype="int16", in_zp=0, bias_dtype="int64", bias_value=0,
            weights_dtype="int8"):
    """A 16x8 CONV_2D / DEPTHWISE_CONV_2D [1,8,8,4] -> [1,6,6,4] (int16 maps)."""
    g = _core.Graph()
    x = b.activation(g, "x", [1, 8, 8, 4], "int16", scale=0.001, zero_point=in_zp)
    dw = kind == "DEPTHWISE_CONV_2D"
    w = g.add_tensor("w", [1, 3, 3, 4] if dw else [4, 3, 3, 4], weights_dtype, scales=0.02,
                     zero_points=0, data=np.zeros((4, 3, 3, 4) if not dw else (1, 3, 3, 4), np.int8))
    bd = np.array([0, bias_value, 0, 0], np.int64 if bias_dtype == "int64" else np.int32)
    bias = g.add_tensor("b", [4], bias_dtype, scales=2e-5, zero_points=0, data=bd)
    y = b.activation(g, "y", [1, 6, 6, 4], out_dtype, scale=0.01, zero_point=0)
    return g, g.add_op(kind, [x, w, bias], [y], name="conv16")


def _pool16(k, kw=None, size=16):
    """An int16 AVERAGE_POOL_2D [1,size,size,4], k x kw (kw = k by default),
    stride 2 for 2x2 else 1."""
    kw = k if kw is None else kw
    g = _core.Graph()
    x = b.activation(g, "x", [1, size, size, 4], "int16", scale=0.001, zero_point=0)
    s = 2 if (k, kw) == (2, 2) else 1
    oh, ow = (size - k) // s + 1, (size - kw) // s + 1
    y = b.activation(g, "y", [1, oh, ow, 4], "int16", scale=0.001, zero_point=0)
    return g, g.add_op("AVERAGE_POOL_2D", [x], [y], name="pool16", kernel_h=k, kernel_w=kw,
                       stride_h=s, stride_w=s)


def _mean16(h, w):
    """An int16 MEAN [1,h,w,4] -> [1,1,1,4] over height and width (16x8)."""
    g = _core.Graph()
    x = b.activation(g, "x", [1, h, w, 4], "int16", scale=0.001, zero_point=0)
    y = b.activation(g, "y", [1, 1, 1, 4], "int16", scale=0.001, zero_point=0)
    return g, g.add_op("MEAN", [x], [y], name="mean16", axes=[1, 2], keep_dims=True)


def at(rule, id, build, **kw):
    return Case(id, build, rule, False, **kw)


def past(rule, id, build, detail, **kw):
    return Case(id, build, rule, True, detail, **kw)


# The op kinds the hardware rules describe but the compiler does not lower yet.
NOT_YET_LOWERED: set = set()

def _mean_named(type_name, requant="onnxruntime"):
    """A MEAN as the ONNX Runtime EP builds it from GlobalAveragePool (no
    ONNX Runtime kernel selected: its float mean)."""
    g = _core.Graph()
    x = b.activation(g, "x", [1, 7, 7, 16])
    y = b.activation(g, "y", [1, 1, 1, 16], scale=b.OUT_SCALE, zero_point=b.OUT_ZP)
    return g, g.add_op("MEAN", [x], [y], name="gap", axes=[1, 2], keep_dims=True,
                       type_name=type_name, requant=requant)


def _pad_then_conv(rows, kernel, conv_pad):
    """x [1,8,8,4] -> PAD (rows top/bottom) -> CONV_2D kernel x kernel with
    padding conv_pad on every side; returns the PAD's index."""
    g = _core.Graph()
    x = b.activation(g, "x", [1, 8, 8, 4])
    ph = 8 + rows[0] + rows[1]
    p = b.activation(g, "p", [1, ph, 8, 4])
    op = g.add_op("PAD", [x], [p], name="pad", paddings=[[0, 0], list(rows), [0, 0], [0, 0]])
    w = b.constant(g, "w", [4, kernel, kernel, 4], "int8", 0.02, 0)
    oh = ph + 2 * conv_pad - kernel + 1
    ow = 8 + 2 * conv_pad - kernel + 1
    y = b.activation(g, "y", [1, oh, ow, 4], scale=b.OUT_SCALE, zero_point=b.OUT_ZP)
    g.add_op("CONV_2D", [p, w], [y], name="conv", pad_top=conv_pad, pad_bottom=conv_pad,
             pad_left=conv_pad, pad_right=conv_pad)
    return g, op


CASES = [
    # Claim and compile agree: kinds the compiler cannot lower are declined up front.
    # Gates.
    at("npu_op_kind", "relu", lambda: b.unary("RELU")),
    past("npu_op_kind", "softmax", lambda: b.other("SOFTMAX"), "no NPU implementation"),
    at("operand_count", "conv-no-bias", lambda: b.conv(bias=False)),
    past("operand_count", "conv-4-inputs", lambda: b.conv(extra_inputs=[0]),
         "4 inputs, expected 2 to 3"),
    at("static_shape", "static", lambda: b.conv()),
    past("static_shape", "dynamic-height", lambda: b.conv(in_shape=[1, -1, 8, 4],
                                                         out_shape=[1, 6, 6, 4]),
         "input 'x' has shape [1,-1,8,4]"),
    past("static_shape", "zero-dim", lambda: b.unary(shape=(1, 0, 4, 8)), "[1,0,4,8]"),
    at("tensor_rank", "add-rank-4", lambda: b.binary(a_shape=(1, 2, 4, 8), b_shape=(1, 2, 4, 8))),
    past("tensor_rank", "add-rank-5", lambda: b.binary(a_shape=(1, 1, 2, 4, 8),
                                                       b_shape=(1, 1, 2, 4, 8)),
         "input 'a' has rank 5, expected 0 to 4"),
    past("tensor_rank", "conv-rank-3", lambda: b.conv(in_shape=[8, 8, 4], out_shape=[6, 6, 4]),
         "input 'x' has rank 3, expected 4"),
    at("shape_consistency", "conv-output-ok", lambda: b.conv(out_shape=[1, 6, 6, 4])),
    past("shape_consistency", "conv-output-wrong", lambda: b.conv(out_shape=[1, 8, 8, 4]),
         "output [1,8,8,4] but input [1,8,8,4], kernel 3x3, stride 1x1, padding 0/0/0/0 give "
         "[1,6,6,4]"),

    # Data types and quantization.
    at("activation_dtype", "int8", lambda: b.conv()),
    past("activation_dtype", "int16", lambda: b.unary("HARD_SWISH", in_dtype="int16",
                                                      out_dtype="int16", in_zp=0, out_zp=0),
         "input 'x' is int16; output 'y' is int16 (HARD_SWISH has no 16-bit lowering)"),
    # 16x8 (NACC_SPEC §9): CONV_2D / DEPTHWISE_CONV_2D with every map int16.
    at("activation_dtype", "conv-16x8", lambda: _conv16()),
    at("activation_dtype", "depthwise-16x8", lambda: _conv16("DEPTHWISE_CONV_2D")),
    past("activation_dtype", "conv-int16-in-int8-out", lambda: _conv16(out_dtype="int8", bias_dtype="int32"),
         "input 'x' is int16"),
    at("int16_form", "avg-pool-2x2-int16", lambda: _pool16(2)),
    # Other windows: the 16-bit depthwise region passes with the 32-bit output
    # stage, exact up to kMaxAveragePoolCells16 = 181 cells (quant/tflite.h).
    at("int16_form", "avg-pool-3x3-int16", lambda: _pool16(3)),
    at("int16_form", "avg-pool-15x12-int16", lambda: _pool16(15, 12)),
    past("int16_form", "avg-pool-13x14-int16", lambda: _pool16(13, 14),
         "int16 window 13x14 stride 1x1"),
    # int16 MEAN: one window up to 15 x 15, else the split sum (groups g <= 15
    # dividing N = H x W, 2N / g partial sums in one window): 105 x 15 = 1575
    # is the largest N, 106 x 15 has no split; a prime N has no group.
    at("int16_form", "mean-15x15-int16", lambda: _mean16(15, 15)),
    at("int16_form", "mean-25x5-int16", lambda: _mean16(25, 5)),
    at("int16_form", "mean-105x15-int16", lambda: _mean16(105, 15)),
    past("int16_form", "mean-106x15-int16", lambda: _mean16(106, 15),
         "int16 MEAN over 106x15 = 1590 cells"),
    past("int16_form", "mean-17x1-int16", lambda: _mean16(17, 1),
         "int16 MEAN over 17x1 = 17 cells"),
    at("int16_quantization", "zero-point-0", lambda: _conv16()),
    past("int16_quantization", "zero-point-3", lambda: _conv16(in_zp=3),
         "input 'x' has zero point 3"),
    at("bias_16x8_range", "bias-2^39-1", lambda: _conv16(bias_value=(1 << 39) - 1)),
    past("bias_16x8_range", "bias-2^39", lambda: _conv16(bias_value=-(1 << 39) - 1),
         "bias 'b' entry 1 is -549755813889"),
    past("bias_dtype", "int32-bias-16x8", lambda: _conv16(bias_dtype="int32"),
         "bias 'b' is int32 with int16 activations"),
    past("weights_dtype", "int4-16x8", lambda: _conv16(weights_dtype="int4"),
         "int4 with int16 activations"),
    past("activation_dtype", "quantize-float-input",
         lambda: b.unary("QUANTIZE", in_dtype="float32"), "input 'x' is float32"),
    past("activation_dtype", "uint8-output", lambda: b.unary("RELU", out_dtype="uint8",
                                                             out_zp=128),
         "output 'y' is uint8"),
    at("activation_quantization", "zero-point-min", lambda: b.unary(in_zp=-128)),
    past("activation_quantization", "zero-point-128", lambda: b.unary(in_zp=128),
         "input 'x' has zero point 128"),
    past("activation_quantization", "scale-0", lambda: b.unary(in_scale=0.0),
         "input 'x' has scale 0"),
    past("activation_quantization", "per-channel-activation",
         lambda: b.unary(shape=(1, 4, 4, 2), in_scale=[0.1, 0.2], in_zp=[0, 0], in_axis=3),
         "input 'x' has 2 scales on axis 3"),
    at("weights_dtype", "zero-point-0", lambda: b.conv(weights_zp=0)),
    past("weights_dtype", "zero-point-1", lambda: b.conv(weights_zp=1),
         "weights 'w' has zero point 1"),
    past("weights_dtype", "per-channel-zero-point-1",
         lambda: b.conv(weights_axis=0, c_out=4, weights_zp=[0, 0, 1, 0]),
         "weights 'w' has zero point 1 (channel 2)"),
    past("weights_dtype", "uint8", lambda: b.conv(weights_dtype="uint8"), "weights 'w' is uint8"),
    at("weights_dtype", "conv-int4", lambda: b.conv(weights_dtype="int4")),
    at("weights_dtype", "fc-int4", lambda: b.fully_connected(weights_dtype="int4")),
    at("int4_depthwise", "depthwise-int8", lambda: b.conv("DEPTHWISE_CONV_2D")),
    past("int4_depthwise", "depthwise-int4",
         lambda: b.conv("DEPTHWISE_CONV_2D", weights_dtype="int4"), "weights 'w' is int4"),
    at("weights_per_channel_axis", "conv-axis-0", lambda: b.conv(weights_axis=0, c_out=8)),
    past("weights_per_channel_axis", "conv-axis-3", lambda: b.conv(weights_axis=3),
         "weights 'w' has 4 scales on axis 3, expected axis 0"),
    at("weights_per_channel_axis", "depthwise-axis-3",
       lambda: b.conv("DEPTHWISE_CONV_2D", weights_axis=3)),
    past("weights_per_channel_axis", "depthwise-axis-1",
         lambda: b.conv("DEPTHWISE_CONV_2D", weights_axis=1),
         "weights 'w' has 3 scales on axis 1, expected axis 3"),
    at("weights_per_channel_axis", "fc-axis-0", lambda: b.fully_connected(weights_axis=0)),
    past("weights_per_channel_axis", "fc-axis-1", lambda: b.fully_connected(weights_axis=1),
         "weights 'w' has 16 scales on axis 1, expected axis 0"),
    at("weights_constant", "constant", lambda: b.conv()),
    past("weights_constant", "runtime-weights", lambda: b.conv(weights_constant=False),
         "weights 'w' is not constant"),
    at("bias_dtype", "int32", lambda: b.conv(bias_dtype="int32")),
    past("bias_dtype", "int64", lambda: b.conv(bias_dtype="int64"), "bias 'b' is int64"),
    at("same_quantization", "max-pool-same", lambda: b.pool()),
    past("same_quantization", "max-pool-rescaled", lambda: b.pool(out_scale=0.1),
         "input 'x' has scale 0.05 zero point -3, output 'y' has scale 0.1 zero point -3"),
    past("same_quantization", "concat-rescaled", lambda: b.concat(scales=[0.05, 0.06]),
         "input 'x1' has scale 0.06 zero point -3"),
    at("sigmoid_tanh_output_quantization", "logistic-spec",
       lambda: b.unary("LOGISTIC", out_scale=1 / 256, out_zp=-128)),
    past("sigmoid_tanh_output_quantization", "logistic-zp-0",
         lambda: b.unary("LOGISTIC", out_scale=1 / 256, out_zp=0),
         "output 'y' has scale 0.00390625 zero point 0"),
    at("sigmoid_tanh_output_quantization", "tanh-spec",
       lambda: b.unary("TANH", out_scale=1 / 128, out_zp=0)),
    past("sigmoid_tanh_output_quantization", "tanh-scale-1/256",
         lambda: b.unary("TANH", out_scale=1 / 256, out_zp=0),
         "output 'y' has scale 0.00390625 zero point 0"),
    at("sigmoid_tanh_output_quantization", "logistic-frontend-table",
       lambda: b.unary("LOGISTIC", out_scale=0.01, out_zp=3, lut=[0] * 256)),
    at("frontend_lut", "256-entries", lambda: b.unary("HARD_SWISH", lut=[1] * 256)),
    past("frontend_lut", "255-entries", lambda: b.unary("LEAKY_RELU", lut=[1] * 255),
         "the frontend's lookup table has 255 entries"),
    # HARD_SWISH: TFLite's HardSwishPrepare needs input / (128 * output) < 1.
    at("lut_arithmetic", "hard-swish-ratio-127.5",
       lambda: b.unary("HARD_SWISH", in_scale=1.0, out_scale=1 / 127.5)),
    past("lut_arithmetic", "hard-swish-ratio-128",
         lambda: b.unary("HARD_SWISH", in_scale=1.0, out_scale=1 / 128),
         "output multiplier input_scale / (128 * output_scale) = 1 is not below 1"),
    # Multipliers needing a left shift above 31 (TFLite's 1 << shift overflows).
    at("lut_arithmetic", "quantize-shift-31",
       lambda: b.unary("QUANTIZE", in_scale=1.0, out_scale=2.0 ** -30)),
    past("lut_arithmetic", "quantize-shift-32",
         lambda: b.unary("QUANTIZE", in_scale=1.0, out_scale=2.0 ** -31),
         "needs a left shift of 32 > 31"),
    at("lut_arithmetic", "leaky-relu-negative-alpha", lambda: b.unary("LEAKY_RELU", alpha=-2.0)),
    past("lut_arithmetic", "leaky-relu-alpha-shift-32",
         lambda: b.unary("LEAKY_RELU", in_scale=1.0, out_scale=1.0, alpha=-3e9),
         "alpha multiplier input_scale * alpha / output_scale = -3"),

    # Shapes.
    at("batch_size", "batch-1", lambda: b.conv(batch=1)),
    at("batch_size", "batch-2", lambda: b.conv(batch=2)),  # runs image by image
    at("batch_size", "matmul-batch-1", lambda: b.batch_matmul(a_shape=(1, 4, 16),
                                                              b_shape=(1, 16, 8))),
    past("batch_size", "matmul-batch-2", lambda: b.batch_matmul(a_shape=(2, 4, 16),
                                                                b_shape=(2, 16, 8)),
         "input 'a' has batch dimensions [2,4,16]"),
    at("feature_map_dims", "width-65535", lambda: b.unary(shape=(1, 1, 65535, 1))),
    past("feature_map_dims", "width-65536", lambda: b.unary(shape=(1, 1, 65536, 1)),
         "input 'x' dimension 2 is 65536; output 'y' dimension 2 is 65536"),
    # 29-bit region offsets (NACC_SPEC §6): 2^29 bytes per feature map.
    at("region_size", "2^29-bytes", lambda: b.unary(shape=(1, 16384, 32768, 1))),
    past("region_size", "2^29+32768-bytes", lambda: b.unary(shape=(1, 16385, 32768, 1)),
         "input 'x' [1,16385,32768,1] is 536903680 bytes; output 'y' [1,16385,32768,1] is "
         "536903680 bytes"),
    at("program_strings", "name-65535", lambda: b.unary(name="n" * 65535)),
    past("program_strings", "name-65536", lambda: b.unary(name="n" * 65536),
         "the op name is 65536 bytes"),
    at("elementwise_broadcast", "equal", lambda: b.binary()),
    at("elementwise_broadcast", "channel-vector", lambda: b.binary(b_shape=(1, 1, 1, 8))),
    at("elementwise_broadcast", "rank-1-vector", lambda: b.binary("MUL", a_shape=(8,))),
    # A constant scalar is expanded to C entries, a runtime one re-read per
    # element of the [1, H, W*C, 1] view (lower_elementwise); SUB's operands
    # do not swap. Claim == compile is checked for every case below.
    at("elementwise_broadcast", "constant-scalar", lambda: _binary_const("SUB", (1, 1, 1, 1), "b")),
    at("elementwise_broadcast", "one-channel-runtime-scalar",
       lambda: b.binary("SUB", a_shape=(1, 4, 4, 1), b_shape=(1, 1, 1, 1))),
    at("elementwise_broadcast", "runtime-scalar", lambda: b.binary("SUB", b_shape=())),
    at("elementwise_broadcast", "runtime-scalar-4d", lambda: b.binary("ADD", b_shape=(1, 1, 1, 1))),
    at("elementwise_broadcast", "runtime-scalar-row-65535",
       lambda: b.binary("ADD", a_shape=(1, 1, 13107, 5), b_shape=(1, 1, 1, 1))),
    past("elementwise_broadcast", "runtime-scalar-row-65536",
         lambda: b.binary("ADD", a_shape=(1, 1, 8192, 8), b_shape=(1, 1, 1, 1)),
         "W*C must be <= 65535"),
    at("elementwise_broadcast", "add-vector-first", lambda: b.binary(a_shape=(1, 1, 1, 8))),
    past("elementwise_broadcast", "sub-vector-first", lambda: b.binary("SUB", a_shape=(1, 1, 1, 8)),
         "operands [1,1,1,8] and [1,4,4,8]"),
    past("elementwise_broadcast", "sub-constant-first", lambda: _binary_const("SUB", (1, 4, 4, 8), "a"),
         "operands constant [1,4,4,8] and [1,4,4,8]"),
    at("elementwise_broadcast", "mul-constant-first", lambda: _binary_const("MUL", (1, 4, 4, 8), "a")),
    past("elementwise_broadcast", "row", lambda: b.binary(a_shape=(1, 4, 1, 8)),
         "operands [1,4,1,8] and [1,4,4,8]"),
    past("elementwise_broadcast", "both-broadcast",
         lambda: b.binary(a_shape=(1, 4, 1, 8), b_shape=(1, 1, 4, 8)),
         "operands [1,4,1,8] and [1,1,4,8]"),

    # Options.
    at("unsupported_options", "none", lambda: b.fully_connected()),
    past("unsupported_options", "keep_num_dims",
         lambda: b.fully_connected(options=["keep_num_dims"]), "option keep_num_dims"),
    at("fused_activation", "relu-n1-to-1", lambda: b.conv(activation_fn="RELU_N1_TO_1")),
    at("fused_activation", "relu6-add", lambda: b.binary(activation_fn="RELU6")),
    past("fused_activation", "tanh", lambda: b.conv(activation_fn="TANH"), "fused activation TANH"),
    past("fused_activation", "sign-bit-fc", lambda: b.fully_connected(activation_fn="SIGN_BIT"),
         "fused activation SIGN_BIT"),

    # Windows.
    at("kernel_size", "15x15", lambda: b.conv(kernel=(15, 15), in_hw=(15, 15))),
    past("kernel_size", "16x16", lambda: b.conv(kernel=(16, 16), in_hw=(16, 16)), "kernel 16x16"),
    past("kernel_size", "depthwise-16x3",
         lambda: b.conv("DEPTHWISE_CONV_2D", kernel=(16, 3), in_hw=(16, 16)), "kernel 16x3"),
    at("stride", "3x3", lambda: b.conv(stride=(3, 3))),
    # A CONV_2D of a stride above 3 or a kernel above 15: a space-to-depth
    # gather and a window within the limits (compiler/lower.h lower_space_to_depth).
    at("stride", "4x4-space-to-depth", lambda: b.conv(stride=(4, 4))),
    at("kernel_size", "16x16-stride-16", lambda: b.conv(kernel=(16, 16), stride=(16, 16),
                                                        in_hw=(32, 32))),
    past("stride", "4x4-depthwise", lambda: b.conv("DEPTHWISE_CONV_2D", stride=(4, 4)),
         "stride 4x4: a DEPTHWISE_CONV_2D has no space-to-depth form"),
    past("stride", "16x16-gathered-channels", lambda: b.conv(kernel=(16, 16), stride=(16, 16),
                                                             in_hw=(16, 16), c_in=300),
         "16 x 16 x 300 = 76800 channels, above 65535", config=dict(sram_bytes=1 << 20)),
    past("stride", "same-ragged", lambda: b.conv(kernel=(16, 16), stride=(16, 16), padding="SAME",
                                                 in_hw=(40, 40)),
         "the input height 40 is not a multiple of the stride 16"),
    past("stride", "max-pool-1x4", lambda: b.pool(stride=(1, 4)), "stride 1x4"),
    at("dilation", "1", lambda: b.conv(dilation=(1, 1))),
    # Dilation runs as phases of undilated windows (stride 1 only; each phase
    # padding at most 5 and below the kernel).
    at("dilation", "2x1", lambda: b.conv(dilation=(2, 1))),
    at("dilation", "6-same", lambda: b.conv(dilation=(6, 6), padding="SAME", in_hw=(9, 9))),
    at("dilation", "depthwise-4", lambda: b.conv("DEPTHWISE_CONV_2D", dilation=(4, 4),
                                                 padding="SAME")),
    past("dilation", "2-stride-2", lambda: b.conv(dilation=(2, 1), stride=(2, 2)),
         "dilation 2x1 with stride 2x2"),
    past("dilation", "phase-pad-3", lambda: b.conv(dilation=(2, 2), pads=(6, 0, 0, 0)),
         "dilation 2x2: a phase from output 0 pads 3/0 around its 3-tap window"),
    at("padding", "5", lambda: b.conv(pads=(5, 5, 5, 5))),
    past("padding", "6", lambda: b.conv(pads=(6, 6, 0, 0)), "padding top/bottom/left/right 6/6/0/0"),
    # SAME with an 11-wide kernel pads 5/5; with a 12-wide one 5/6 (the extra
    # element goes to the bottom/right): the rule is about each side.
    at("padding", "same-5-5", lambda: b.conv(kernel=(11, 11), in_hw=(16, 16), padding="SAME")),
    past("padding", "same-5-6", lambda: b.conv(kernel=(12, 12), in_hw=(16, 16), padding="SAME"),
         "padding top/bottom/left/right 5/6/5/6"),
    at("padding", "avg-pool-same-asymmetric",
       lambda: b.pool("AVERAGE_POOL_2D", in_hw=(7, 7), padding="SAME")),
    past("padding", "max-pool-6", lambda: b.pool(pads=(0, 0, 6, 0)),
         "padding top/bottom/left/right 0/0/6/0"),
    at("padding", "pad-op-5", lambda: b.pad(paddings=((0, 0), (5, 0), (0, 5), (0, 0)))),
    past("padding", "pad-op-6", lambda: b.pad(paddings=((0, 0), (0, 6), (0, 0), (0, 0))),
         "padding top/bottom/left/right 0/6/0/0"),
    at("depth_multiplier", "8", lambda: b.conv("DEPTHWISE_CONV_2D", c_in=2, depth_multiplier=8)),
    at("depth_multiplier", "4", lambda: b.conv("DEPTHWISE_CONV_2D", c_in=2, depth_multiplier=4)),
    past("depth_multiplier", "3", lambda: b.conv("DEPTHWISE_CONV_2D", c_in=2, depth_multiplier=3),
         "depth multiplier 3"),
    past("depth_multiplier", "16", lambda: b.conv("DEPTHWISE_CONV_2D", c_in=1,
                                                 depth_multiplier=16),
         "depth multiplier 16"),
    at("grouped_convolution", "dense", lambda: b.conv(c_in=4, filter_c_in=4)),
    at("grouped_convolution", "2-groups", lambda: b.conv(c_in=4, filter_c_in=2)),
    at("grouped_convolution", "4-groups-to-8", lambda: b.conv(c_in=8, filter_c_in=2, c_out=8)),
    past("grouped_convolution", "outputs-not-dividing", lambda: b.conv(c_in=8, filter_c_in=2,
                                                                       c_out=6),
         "filter input channels 2, input channels 8, output channels 6"),
    at("transpose_copy", "hw-swap", lambda: b.transpose()),
    at("transpose_copy", "nhwc-to-nchw", lambda: b.transpose(perm=(0, 3, 1, 2))),
    past("transpose_copy", "batch", lambda: b.transpose(in_shape=(2, 4, 6, 8)), "a batch of 2"),
    past("transpose_copy", "300-passes", lambda: b.transpose(in_shape=(300, 400), perm=(1, 0)),
         "300 copy passes (the loops outside a pass's rows and pixels)"),
    at("resize_bilinear", "x2-half-pixel", lambda: b.resize_bilinear()),
    at("resize_bilinear", "x4-legacy", lambda: b.resize_bilinear(out_hw=(16, 16),
                                                                 half_pixel_centers=False)),
    past("resize_bilinear", "x3", lambda: b.resize_bilinear(out_hw=(12, 12)),
         "weights up to 1024 x 1024 (denominators 1024 x 1024) exceed an int8 weight"),
    past("resize_bilinear", "non-integer", lambda: b.resize_bilinear(out_hw=(6, 6)),
         "height 4 -> 6: 6 is not a whole multiple of 4"),
    at("transpose_conv", "s2-k3", lambda: b.transpose_conv()),
    at("transpose_conv", "s3-k2-no-tap-phase", lambda: b.transpose_conv(kernel=(2, 2), stride=(3, 3),
                                                                         pads=(0, 0))),
    at("transpose_conv", "one-channel-per-tensor",
       lambda: b.transpose_conv(c_out=1, per_channel=False)),
    past("transpose_conv", "per-tensor", lambda: b.transpose_conv(per_channel=False),
         "per-tensor weights with 4 output channels"),
    past("transpose_conv", "window-19", lambda: b.transpose_conv(in_hw=(2, 2), kernel=(2, 2),
                                                                 stride=(1, 1), pads=(0, 0),
                                                                 out_hw=(20, 3)),
         "rows: the phase from output 0 needs a window of 19 taps"),
    at("max_pool_window", "15x15", lambda: b.pool(kernel=(15, 15), in_hw=(15, 15), stride=(1, 1))),
    past("max_pool_window", "16x16", lambda: b.pool(kernel=(16, 16), in_hw=(16, 16),
                                                    stride=(1, 1)),
         "window 16x16"),
    at("avg_pool_window", "2x2-stride-2", lambda: b.pool("AVERAGE_POOL_2D")),
    # Any other TFLite window: depthwise region passes up to 15 / stride 3,
    # one whole-input window up to 2895 cells on the matrix unit.
    at("avg_pool_window", "3x3", lambda: b.pool("AVERAGE_POOL_2D", kernel=(3, 3))),
    at("avg_pool_window", "stride-1", lambda: b.pool("AVERAGE_POOL_2D", stride=(1, 1))),
    at("avg_pool_window", "15x15-stride-3", lambda: b.pool("AVERAGE_POOL_2D", in_hw=(20, 20),
                                                          kernel=(15, 15), stride=(3, 3))),
    past("avg_pool_window", "16x16-stride-1", lambda: b.pool("AVERAGE_POOL_2D", in_hw=(20, 20),
                                                            kernel=(16, 16), stride=(1, 1)),
         "window 16x16, stride 1x1"),
    # A stride above 3: every output row / column its own clipped window.
    at("avg_pool_window", "stride-4-256-regions", lambda: b.pool("AVERAGE_POOL_2D", in_hw=(64, 64),
                                                                kernel=(4, 4), stride=(4, 4))),
    past("avg_pool_window", "stride-4-289-regions", lambda: b.pool(
        "AVERAGE_POOL_2D", in_hw=(68, 68), kernel=(3, 3), stride=(4, 4)),
         "window 3x3, stride 4x4 needs 289 region passes"),
    at("padding", "avg-pool-15x15-same-7", lambda: b.pool("AVERAGE_POOL_2D", in_hw=(20, 20),
                                                         kernel=(15, 15), stride=(1, 1),
                                                         padding="SAME")),
    past("padding", "avg-pool-pad-not-below-window", lambda: b.pool(
        "AVERAGE_POOL_2D", in_hw=(8, 8), kernel=(3, 3), stride=(1, 1), pads=(3, 0, 0, 0)),
         "padding top/bottom/left/right 3/0/0/0 of a 3x3 window"),
    at("avg_pool_window", "global-25x5", lambda: b.pool("AVERAGE_POOL_2D", in_hw=(25, 5),
                                                       kernel=(25, 5), stride=(1, 1))),
    at("avg_pool_window", "global-2895", lambda: b.pool("AVERAGE_POOL_2D", in_hw=(193, 15),
                                                       kernel=(193, 15), stride=(1, 1))),
    past("avg_pool_window", "global-2896", lambda: b.pool("AVERAGE_POOL_2D", in_hw=(181, 16),
                                                         kernel=(181, 16), stride=(1, 1)),
         "window 181x16, stride 1x1 over 2896 cells"),
    at("mean_axes", "1-2", lambda: b.mean(axes=(1, 2))),
    at("mean_axes", "negative", lambda: b.mean(axes=(-3, -2), keep_dims=False)),
    past("mean_axes", "channels", lambda: b.mean(axes=(3,)), "axes [3]"),
    past("mean_axes", "height-only", lambda: b.mean(axes=(1,)), "axes [1]"),
    at("mean_window", "15x15", lambda: b.mean(in_shape=(1, 15, 15, 8))),
    at("concat_axis", "channels", lambda: b.concat(shapes=((1, 4, 4, 3), (1, 4, 4, 17)))),
    at("concat_axis", "channels-negative-2d", lambda: b.concat(shapes=((3, 5), (3, 2)), axis=-1)),
    at("concat_axis", "height", lambda: b.concat(axis=1, shapes=((1, 2, 4, 8), (1, 3, 4, 8)))),
    at("concat_axis", "width", lambda: b.concat(axis=2, shapes=((1, 2, 4, 8), (1, 2, 1, 8)))),
    at("concat_axis", "rank1", lambda: b.concat(axis=0, shapes=((4,), (3,)))),
    past("concat_axis", "fused-relu", lambda: b.concat(activation="RELU"), "fused activation RELU"),
    at("slice_window", "split-channels", lambda: b.slice_op(
        begins=((0, 0, 0, 0), (0, 0, 0, 8)), sizes=((1, 8, 8, 8), (1, 8, 8, 8)))),
    at("slice_window", "rows-cols-strided", lambda: b.slice_op(
        begins=((0, 1, 2, 0),), sizes=((1, 3, 2, 16),), strides=(1, 2, 3, 1))),
    at("slice_window", "one-channel-stride", lambda: b.slice_op(
        begins=((0, 0, 0, 3),), sizes=((1, 8, 8, 1),), strides=(1, 1, 1, 5))),
    at("slice_window", "one-image-of-two", lambda: b.slice_op(
        in_shape=(2, 4, 4, 8), begins=((1, 0, 0, 0),), sizes=((1, 4, 4, 8),))),
    past("slice_window", "channel-stride", lambda: b.slice_op(
        begins=((0, 0, 0, 0),), sizes=((1, 8, 8, 8),), strides=(1, 1, 1, 2)), "channel stride 2"),
    past("slice_window", "two-images", lambda: b.slice_op(
        in_shape=(2, 4, 4, 8), begins=((0, 0, 0, 0),), sizes=((2, 4, 4, 8),)),
         "output 0 [2,4,4,8] holds 2 images"),
    past("slice_window", "257-outputs", lambda: b.slice_op(
        in_shape=(1, 1, 1, 257), begins=tuple((0, 0, 0, k) for k in range(257)),
        sizes=((1, 1, 1, 1),) * 257), "257 outputs"),
    at("resize_replication", "2x", lambda: b.resize_nearest()),
    at("resize_replication", "3x-half-pixel", lambda: b.resize_nearest(out_hw=(12, 12),
                                                                      half_pixel_centers=True)),
    at("resize_replication", "16x16", lambda: b.resize_nearest(in_shape=(1, 1, 1, 8),
                                                              out_hw=(16, 16))),
    past("resize_replication", "17x16", lambda: b.resize_nearest(in_shape=(1, 1, 1, 8),
                                                                out_hw=(17, 16)),
         "17x16 = 272 replicas"),
    past("resize_replication", "3-to-9-align-corners", lambda: b.resize_nearest(
        in_shape=(1, 3, 3, 8), out_hw=(9, 9), align_corners=True),
         "output index 2 reads input 1, not 0 (align_corners)"),
    past("resize_replication", "downsample", lambda: b.resize_nearest(out_hw=(2, 4)),
         "height 4 -> 2: 2 is not a whole multiple of 4"),
    at("block_copy", "s2d", lambda: b.space_depth()),
    at("block_copy", "d2s", lambda: b.space_depth("DEPTH_TO_SPACE", in_shape=(1, 4, 4, 16))),
    past("block_copy", "constant", lambda: b.space_depth(const=True), "the input is a constant"),
    at("max_min_operands", "max-scalar", lambda: b.max_min()),
    at("max_min_operands", "min-vector-one-value", lambda: b.max_min("MINIMUM", const_shape=(8,),
                                                                       values=(-7,))),
    past("max_min_operands", "two-runtime", lambda: b.max_min(runtime_both=True),
         "two runtime operands"),
    past("max_min_operands", "per-channel-constant", lambda: b.max_min(const_shape=(8,),
                                                                       values=(1, 2)),
         "the constant operand holds more than one value"),
    at("mean_semantics", "tflite", lambda: b.mean()),
    past("mean_semantics", "onnx-global-average-pool", lambda: _mean_named("GlobalAveragePool"),
         "GlobalAveragePool with ONNX Runtime's rounding"),
    # the rule reads the op's RequantMode, not its frontend name
    at("mean_semantics", "tflite-whatever-its-name",
       lambda: _mean_named("GlobalAveragePool", requant="tflite")),
    past("mean_semantics", "onnx-unnamed", lambda: _mean_named(""),
         "MEAN with ONNX Runtime's rounding"),
    at("pad_lowering", "standalone-5", lambda: b.pad(paddings=((0, 0), (2, 3), (5, 0), (0, 0)))),
    at("pad_lowering", "fold-5", lambda: _pad_then_conv((3, 2), kernel=7, conv_pad=2)),
    past("pad_lowering", "standalone-6", lambda: b.pad(paddings=((0, 0), (3, 3), (0, 0), (0, 0))),
         "cannot run alone (more than 5 rows or columns in all) and cannot fold: its output has 0 "
         "consumers, not one"),
    past("pad_lowering", "fold-6", lambda: _pad_then_conv((3, 3), kernel=7, conv_pad=3),
         "the summed padding top/bottom/left/right 6/6/3/3 of CONV_2D 'conv' exceeds 5"),
    past("pad_lowering", "fold-not-below-kernel", lambda: _pad_then_conv((3, 3), kernel=3, conv_pad=0),
         "the summed padding top/bottom/left/right 3/3/0/0 of CONV_2D 'conv' is not below its 3x3 "
         "kernel"),
    at("mean_window", "16x15", lambda: b.mean(in_shape=(1, 16, 15, 8))),
    # Past 15x15: the ones-operand matrix product, K = H * W in 16-bit fields
    # (an SRAM of 256 KB holds the 2 x 65535-byte smallest tile).
    at("mean_window", "65535-cells", lambda: b.mean(in_shape=(1, 65535, 1, 1)),
       config=dict(sram_bytes=262144)),
    past("mean_window", "65536-cells", lambda: b.mean(in_shape=(1, 256, 256, 1)),
         "height x width 256x256 = 65536 cells", config=dict(sram_bytes=262144)),
    at("pad_axes", "height-width", lambda: b.pad()),
    past("pad_axes", "channels", lambda: b.pad(paddings=((0, 0), (1, 1), (1, 1), (1, 1))),
         "pads channels 1/1"),

    # Memory: the golden cases are in test_min_sram_bytes_golden.
    at("sram_tile", "exactly-full", lambda: b.conv(kernel=(3, 3), in_hw=(3, 3), c_in=3626,
                                                   c_out=1)),
    # claim and compile agree on the fully connected depth (compiler/lower.cc rejected it alone)
    at("fc_depth", "256-lane-groups", lambda: b.fully_connected(k=16384)),
    past("fc_depth", "257-lane-groups", lambda: b.fully_connected(k=16385),
         "16385 inputs per output"),
    past("sram_tile", "one-byte-short", lambda: b.conv(kernel=(3, 3), in_hw=(3, 3), c_in=3626,
                                                       c_out=1),
         "smallest tile needs 65536 bytes of SRAM, 65535 available",
         config=dict(sram_bytes=65535)),
    past("sram_tile", "one-channel-more", lambda: b.conv(kernel=(3, 3), in_hw=(3, 3), c_in=3627,
                                                         c_out=1),
         "smallest tile needs 65664 bytes of SRAM, 65536 available"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.rule}-{c.id}")
def test_rule_boundary(case):
    g, op = case.build()
    # The hardware rules are tested on every kind, lowered by the compiler or not.
    config = {"check_lowering": False, **case.config}
    violations = _core.check_op(g, op, _core.SupportConfig(**config))
    if not case.declined:
        assert violations == [], [v.message for v in violations]
        return
    assert [v.rule for v in violations] == [case.rule], [v.message for v in violations]
    (v,) = violations
    assert case.detail in v.detail
    o = g.op(op)
    assert v.message == f"{o.type_name or o.kind} '{o.name}': {v.detail} \u2014 {RULES[case.rule]['text']}"


def test_every_rule_has_a_limit_and_a_past_case():
    at_limit = {c.rule for c in CASES if not c.declined}
    past_limit = {c.rule for c in CASES if c.declined}
    assert at_limit == set(RULES), set(RULES) ^ at_limit
    assert past_limit == set(RULES), set(RULES) ^ past_limit


def test_style_example_message():
    """The message of a declined instance: label, detail, rule text (a
    stride-4 depthwise has no space-to-depth form)."""
    g, op = b.conv("DEPTHWISE_CONV_2D", name="conv7", stride=(4, 4))
    (v,) = _core.check_op(g, op)
    assert v.message.startswith(
        "DEPTHWISE_CONV_2D 'conv7': stride 4x4: a DEPTHWISE_CONV_2D has no space-to-depth form "
        "here (the gather would mix its channels) \u2014 stride must be in [1, 3] "
        "(NACC_KERNEL.K_STRIDE_X/Y), or"), v.message


def test_unnamed_op_is_labelled_by_index():
    g, op = b.conv(name="", dilation=(2, 2), stride=(2, 2))
    (v,) = _core.check_op(g, op)
    assert v.message.startswith("CONV_2D #0: dilation 2x2 with stride 2x2 \u2014 ")


def test_all_non_gate_violations_are_reported_in_table_order():
    g, op = b.conv(stride=(4, 4), dilation=(2, 2), pads=(6, 0, 0, 0), activation_fn="TANH",
                   bias_dtype="int64", weights_zp=3, in_hw=(20, 20))
    names = [v.rule for v in _core.check_op(g, op)]
    assert names == ["weights_dtype", "bias_dtype", "fused_activation", "stride", "dilation",
                     "padding"]
    order = list(RULES)
    assert names == sorted(names, key=order.index)


def test_failed_gate_stops_the_check():
    """A dynamic shape fails static_shape; nothing after it runs (the stride
    would otherwise be reported too)."""
    g, op = b.conv(in_shape=[1, -1, 8, 4], out_shape=[1, -1, 2, 4], stride=(4, 4))
    assert [v.rule for v in _core.check_op(g, op)] == ["static_shape"]


def test_unsupported_options_without_modelled_attributes():
    """A frontend that could not read PAD's paddings (not constant) marks the
    op; the rules must decline it by that option, not trip over the empty list."""
    g = _core.Graph()
    x = b.activation(g, "x", [1, 4, 4, 8])
    y = b.activation(g, "y", [1, 6, 6, 8])
    op = g.add_op("PAD", [x], [y], name="pad", unsupported_options=["non-constant paddings"])
    config = _core.SupportConfig(check_lowering=False)
    assert [(v.rule, v.detail) for v in _core.check_op(g, op, config)] == [
        ("unsupported_options", "option non-constant paddings")]


def test_host_only_op_uses_frontend_name():
    g, op = b.other("SOFTMAX", name="probs")
    (v,) = _core.check_op(g, op)
    assert v.rule == "npu_op_kind"
    assert v.message.startswith("SOFTMAX 'probs': no NPU implementation \u2014 ")


@pytest.mark.parametrize("build, kind", [
    (lambda: b.conv(), "CONV_2D"),
    (lambda: b.conv("DEPTHWISE_CONV_2D", depth_multiplier=2), "DEPTHWISE_CONV_2D"),
    (lambda: b.fully_connected(m=3), "FULLY_CONNECTED"),
    (lambda: b.fully_connected(in_shape=[1, 2, 2, 4], out_shape=[1, 8]), "FULLY_CONNECTED"),
    (lambda: b.batch_matmul(a_shape=(4, 16), b_shape=(16, 8)), "BATCH_MATMUL"),
    (lambda: b.pool(padding="SAME", in_hw=(7, 7), kernel=(3, 3), stride=(2, 2)), "MAX_POOL_2D"),
    (lambda: b.unary("HARD_SWISH"), "HARD_SWISH"),
    (lambda: b.unary("LEAKY_RELU", alpha=0.2), "LEAKY_RELU"),
    (lambda: b.unary("RELU6", shape=(10,)), "RELU6"),
    (lambda: b.unary("QUANTIZE", out_scale=0.3, out_zp=0), "QUANTIZE"),
    (lambda: b.reshape(), "RESHAPE"),
    (lambda: b.reshape(with_shape_input=False, out_shape=(1, 1, 4, 32)), "RESHAPE"),
    (lambda: b.concat(axis=3, shapes=((1, 2, 4, 8), (1, 2, 4, 3), (1, 2, 4, 1))), "CONCATENATION"),
    (lambda: b.mean(keep_dims=False), "MEAN"),
])
def test_typical_ops_are_supported(build, kind):
    g, op = build()
    g.validate()
    assert g.op(op).kind == kind
    assert _core.check_op(g, op, _core.SupportConfig(check_lowering=False)) == []
    expected = [("compiler_lowering", f"{kind} is not lowered by this compiler version")]
    got = [(v.rule, v.detail) for v in _core.check_op(g, op)]
    assert got == (expected if kind in NOT_YET_LOWERED else [])


# (builder, config, expected bytes) -- see test_min_sram_bytes_golden.
SRAM_GOLDEN = [
    ("conv-3x3-3626-full", lambda: b.conv(kernel=(3, 3), in_hw=(3, 3), c_in=3626, c_out=1), {},
     65536),
    ("conv-3x3-3627", lambda: b.conv(kernel=(3, 3), in_hw=(3, 3), c_in=3627, c_out=1), {}, 65664),
    ("conv-1x1-32640-full", lambda: b.conv(kernel=(1, 1), in_hw=(1, 1), c_in=32640, c_out=1), {},
     65536),
    ("conv-window-clipped", lambda: b.conv(kernel=(5, 5), in_hw=(2, 3), c_in=64, pads=(2, 2, 1, 1)),
     {}, 384 + 1600 + 192 + 64),
    ("conv-unaligned", lambda: b.conv(kernel=(3, 3), c_in=3), dict(sram_alignment=1), 27 + 27 + 12 + 1),
    ("depthwise-x8", lambda: b.conv("DEPTHWISE_CONV_2D", c_in=2, depth_multiplier=8), {},
     64 + 128 + 3 * 64 + 64),
    ("fc-k-1000", lambda: b.fully_connected(k=1000), {}, 2 * 1024 + 192 + 64),
    ("fc-k-16-unaligned", lambda: b.fully_connected(k=16), dict(sram_alignment=1), 2 * 16 + 12 + 1),
    ("batch-matmul", lambda: b.batch_matmul(), dict(sram_alignment=1), 2 * 16 + 8 + 1),
    ("batch-matmul-k-1000", lambda: b.batch_matmul(a_shape=(1, 4, 1000), b_shape=(1, 1000, 8)), {},
     2 * 1024 + 2 * 64 + 64),
    ("max-pool-15", lambda: b.pool(kernel=(15, 15), in_hw=(15, 15), stride=(1, 1)), {}, 256 + 64),
    ("mean-7x7", lambda: b.mean(), dict(sram_alignment=1), 49 + 49 + 12 + 1),
    ("add", lambda: b.binary(), {}, 3 * 64 + 2 * 64),
    ("logistic", lambda: b.unary("LOGISTIC", out_scale=1 / 256, out_zp=-128), {}, 256 + 2 * 64),
    ("pad", lambda: b.pad(), {}, 2 * 64),
    ("reshape", lambda: b.reshape(), {}, 0),
]


@pytest.mark.parametrize("build, config, expected", [c[1:] for c in SRAM_GOLDEN],
                         ids=[c[0] for c in SRAM_GOLDEN])
def test_min_sram_bytes_golden(build, config, expected):
    """Smallest-tile SRAM bytes (formulas in csrc/support/sram.h).

    The headline case, conv-3x3-3626-full, fills the 64 KB SRAM exactly: one
    output pixel of a 3x3 conv over 3626 input channels reads a 3x3x3626 =
    32634-byte input window (aligned to 64: 32640) and the same-size filter
    slice of its one output channel (32640), plus bias, multiplier and shift
    (3 x 64 after alignment) and the 1-byte output (64): 32640 + 32640 + 192 +
    64 = 65536. One more input channel (3627: 32643 -> 32704 per buffer) needs
    65664. A 1x1 conv over 32640 channels (= 510 x 64, no alignment slack)
    fills it too. conv-window-clipped: a 5x5 kernel on a 2x3 input reads at
    most 2x3 input positions per output (384 bytes for 64 channels) while the
    filter slice stays 5x5x64 = 1600.
    """
    g, op = build()
    assert _core.min_sram_bytes(g, op, _core.SupportConfig(**config)) == expected


def test_min_sram_bytes_rejects_host_ops_and_dynamic_shapes():
    g, op = b.other()
    with pytest.raises(ValueError, match="not an NPU op"):
        _core.min_sram_bytes(g, op)
    g, op = b.conv(in_shape=[1, -1, 8, 4], out_shape=[1, 6, 6, 4])
    with pytest.raises(ValueError, match=r"dynamic shape \[1,-1,8,4\]"):
        _core.min_sram_bytes(g, op)


def test_support_config_validates():
    assert _core.SupportConfig().sram_bytes == 65536
    assert _core.SupportConfig().sram_alignment == 64
    with pytest.raises(ValueError, match="sram_bytes 0"):
        _core.SupportConfig(sram_bytes=0)


def test_rules_table_shape():
    table = _core.rules_table()
    names = [r["name"] for r in table]
    assert len(names) == len(set(names))
    kinds = {k["name"] for k in _core.op_kinds()}
    for r in table:
        assert r["text"] and "\n" not in r["text"]
        assert set(r["op_kinds"]) <= kinds | {"OTHER"}
        if r["general"]:
            assert set(r["op_kinds"]) == kinds
    # Texts quote the named limits (csrc/arch/limits.h).
    assert "[1, 15]" in RULES["kernel_size"]["text"]
    assert "[1, 3]" in RULES["stride"]["text"]
    assert "[0, 5]" in RULES["padding"]["text"]
    assert "1, 2, 4 or 8" in RULES["depth_multiplier"]["text"]
    assert "65536" in RULES["sram_tile"]["text"]
    assert "65535" in RULES["feature_map_dims"]["text"]
    assert "536870912" in RULES["region_size"]["text"] and "29-bit" in RULES["region_size"]["text"]
    assert "65535" in RULES["program_strings"]["text"]


def test_supported_ops_doc_is_current():
    """docs/supported_ops.md must be what `python -m nacc.supported_ops` prints."""
    with open(os.path.join(ROOT, "docs", "supported_ops.md"), encoding="utf-8") as f:
        checked_in = f.read()
    assert checked_in == supported_ops.render(), (
        "docs/supported_ops.md is stale: run "
        "`PYTHONPATH=python python -m nacc.supported_ops > docs/supported_ops.md`")


def test_supported_ops_cli_writes_file(tmp_path):
    out = tmp_path / "ops.md"
    assert supported_ops.main(["--output", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == supported_ops.render()


ELEMENTWISE_CASES = [c for c in CASES if c.rule == "elementwise_broadcast"]


@pytest.mark.parametrize("case", ELEMENTWISE_CASES, ids=[c.id for c in ELEMENTWISE_CASES])
def test_elementwise_broadcast_claim_agrees_with_compile(case):
    """What the rule claims the compiler lowers, and only that (tests/fuzz found
    runtime scalars and SUB(vector, map) claimed, then rejected by the compiler)."""
    g, i = case.build()
    op = g.op(i)
    g.inputs = [t for t in op.inputs if not g.tensor(t).is_constant]
    g.outputs = list(op.outputs)
    claimed = not [v for v in _core.check_op(g, i) if v.rule == case.rule]
    try:
        _core.compile(g)
        compiled = True
    except nacc.UnsupportedError:
        compiled = False
    assert claimed == compiled == (not case.declined)

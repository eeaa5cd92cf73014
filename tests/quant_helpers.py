"""Requantization parameters of the MAC ops derived from a model's float scales
exactly as TensorFlow Lite 2.21 derives them, and TFLite's SAME padding.

Scales are float32 in a .tflite file; every function here takes them as
np.float32 and repeats TFLite's float/double arithmetic operation for operation
(numpy float64 arithmetic is IEEE double, like the C++):

* CONV_2D (and DEPTHWISE_CONV_2D), kernel_util.cc PopulateConvolutionQuantizationParams:
  effective[c] = double(input_scale) * double(filter_scale[c]) / double(output_scale),
  then QuantizeMultiplier -> (multiplier, shift); a per-tensor filter scale is
  broadcast over the channels.
* FULLY_CONNECTED, reference kernel (fully_connected.cc FullyConnectedInt8 /
  FullyConnectedPerChannelInt8 with kReference): the same double effective
  scale, but applied in double at run time, round(acc * effective), not through
  a quantized multiplier. nacc reproduces it with fully_connected(...,
  effective_scale=...).
* BATCH_MATMUL, kernel_util.cc GetQuantizedConvolutionMultipler (no bias):
  effective = double(float32(lhs_scale * rhs_scale)) / double(output_scale) —
  the product is rounded to float32 first — then QuantizeMultiplier.
"""
from __future__ import annotations

import numpy as np

from nacc import _core


def f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def conv_effective_scales(input_scale, filter_scales, output_scale, channels: int) -> np.ndarray:
    """double(in) * double(filter[c]) / double(out), per output channel (float64 [channels])."""
    fs = np.broadcast_to(f32(filter_scales).reshape(-1), (channels,)).astype(np.float64)
    return np.float64(f32(input_scale)) * fs / np.float64(f32(output_scale))


def conv_multipliers(input_scale, filter_scales, output_scale, channels: int):
    """(multiplier, shift) int32 [channels] of CONV_2D / DEPTHWISE_CONV_2D."""
    eff = conv_effective_scales(input_scale, filter_scales, output_scale, channels)
    pairs = [_core.quantize_multiplier(float(e)) for e in eff]
    return (np.array([p[0] for p in pairs], dtype=np.int32),
            np.array([p[1] for p in pairs], dtype=np.int32))


def fc_effective_scales(input_scale, filter_scales, output_scale, units: int) -> np.ndarray:
    """The double scale TFLite's reference FULLY_CONNECTED multiplies the accumulator by."""
    return conv_effective_scales(input_scale, filter_scales, output_scale, units)


def batch_matmul_multiplier(lhs_scale, rhs_scale, output_scale):
    """(multiplier, shift) of BATCH_MATMUL int8: the scale product rounded to float32."""
    product = np.float32(f32(lhs_scale) * f32(rhs_scale))
    eff = np.float64(product) / np.float64(f32(output_scale))
    return _core.quantize_multiplier(float(eff))


def same_padding(size: int, kernel: int, stride: int):
    """TFLite SAME padding along one axis: (output, pad_before, pad_after), with
    total = max((out - 1) * stride + kernel - size, 0), before = total // 2."""
    out = (size + stride - 1) // stride
    total = max((out - 1) * stride + kernel - size, 0)
    return out, total // 2, total - total // 2


def activation_range(activation: str, output_scale, output_zero_point: int):
    """(act_min, act_max) of a fused activation on an int8 output (TFLite's rule)."""
    return _core.fused_activation_range(activation, float(f32(output_scale)), int(output_zero_point))

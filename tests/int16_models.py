"""Builders of TFLite 16x8 test models (int16 activations with zero point 0,
int8 weights, int64 bias; NACC_SPEC §9) as flatbuffers with tflite_builder, and
the delegate-vs-BUILTIN_REF check the 16x8 tests share."""
from __future__ import annotations

import math

import numpy as np

import nacc
from delegate_models import ModelBuilder
from tflite_builder import QTensor, make_interpreter

INT16_MIN, INT16_MAX = -32768, 32767
BIAS40 = (1 << 39) - 1  # the largest int64 bias the 16-bit form holds (40 bits)


def act16(shape, scale, name=None):
    return QTensor(tuple(shape), "int16", scale=float(np.float32(scale)), zero_point=0, name=name)


def input16(m: ModelBuilder, shape, scale=1.0 / 4096):
    i = m.tensor(act16(shape, scale))
    m.inputs.append(i)
    return i


def out_hw(h, w, k, stride, padding):
    if padding == "SAME":
        return -(-h // stride), -(-w // stride)
    return (h - k) // stride + 1, (w - k) // stride + 1


def int16_weights(rng, shape, lo=-127, hi=127):
    """int8 weights with both extremes present."""
    w = rng.integers(lo, hi + 1, shape).astype(np.int8)
    flat = w.reshape(-1)
    flat[0] = lo
    flat[-1] = hi
    return w


def conv16(m: ModelBuilder, x, cout, k=3, stride=1, padding="SAME", activation="NONE",
           depthwise=False, multiplier=1, gain=1.0, bias_dtype="int64", bias_scale=1.0,
           bias_extreme=False, per_channel=True, eff=None, name=None):
    """A 16x8 CONV_2D (version 4) or DEPTHWISE_CONV_2D (version 5). The output
    scale puts a typical accumulator (random int16 inputs, random int8 weights)
    near `gain` x 8000; `bias_scale` scales the random bias, `bias_extreme`
    sets one bias entry to +-(2^39 - 1)."""
    t = m.meta[x]
    rng = m.rng
    h, wd, cin = t.shape[1], t.shape[2], t.shape[3]
    n_out = cin * multiplier if depthwise else cout
    nw = n_out if per_channel else 1
    ws = [float(s) for s in rng.uniform(0.002, 0.02, nw).astype(np.float32)]
    if depthwise:
        wshape = (1, k, k, n_out)
        qdim = 3
        depth = k * k
    else:
        wshape = (cout, k, k, cin)
        qdim = 0
        depth = k * k * cin
    w = QTensor(wshape, "int8", scale=ws, zero_point=[0] * nw, quantized_dimension=qdim,
                data=int16_weights(rng, wshape))
    if eff is None:  # else the effective scale of channel 0 is given
        eff = 0.0058 / math.sqrt(depth) * gain
    s_out = t.scale * ws[0] / eff
    bdata = (rng.integers(-(1 << 20), 1 << 20, n_out) * bias_scale).astype(np.int64)
    if bias_extreme:
        bdata[int(rng.integers(0, n_out))] = BIAS40 if rng.integers(0, 2) else -BIAS40
    if bias_dtype == "int32":
        bdata = np.clip(bdata, -(1 << 31), (1 << 31) - 1).astype(np.int32)
    bscales = [t.scale * s for s in ws] if per_channel else t.scale * ws[0]
    b = QTensor((n_out,), bias_dtype, scale=bscales, zero_point=[0] * nw if per_channel else 0,
                data=bdata)
    oh, ow = out_hw(h, wd, k, stride, padding)
    o = m.tensor(act16((1, oh, ow, n_out), s_out, name=name))
    opts = dict(padding=padding, stride_w=stride, stride_h=stride,
                fused_activation_function=activation)
    if depthwise:
        opts["depth_multiplier"] = multiplier
    m.g.add_op("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", [x, m.tensor(w), m.tensor(b)],
               [o], opts, version=5 if depthwise else 4)
    return o


def int16_input(rng, shape, extremes=True):
    """Random int16 values with the extremes -32768, -32767 and 32767 present."""
    x = rng.integers(INT16_MIN, INT16_MAX + 1, shape).astype(np.int16)
    if extremes:
        flat = x.reshape(-1)
        n = flat.size
        for v in (INT16_MIN, -INT16_MAX, INT16_MAX):
            flat[int(rng.integers(0, n))] = v
    return x


def saturated_input(rng, shape):
    """Every value +-32767: the largest accumulators a layer can reach."""
    return np.where(rng.integers(0, 2, shape) == 1, INT16_MAX, -INT16_MAX).astype(np.int16)


def delegated(model, **options):
    options.setdefault("log_level", "off")
    d = nacc.load_delegate(**options)
    interp = make_interpreter(model, delegates=[d])
    interp.allocate_tensors()
    return d, interp


def compare(model, interp, inputs_list):
    """Runs every input set through `interp` (delegated) and BUILTIN_REF;
    returns the mismatch descriptions (empty: bit-exact)."""
    ref = make_interpreter(model)
    ref.allocate_tensors()
    bad = []
    for k, inputs in enumerate(inputs_list):
        for d, x in zip(interp.get_input_details(), inputs):
            interp.set_tensor(d["index"], x)
            ref.set_tensor(d["index"], x)
        interp.invoke()
        ref.invoke()
        for d in interp.get_output_details():
            got, want = interp.get_tensor(d["index"]), ref.get_tensor(d["index"])
            if not np.array_equal(got, want):
                bad.append(f"input set {k}, output {d['name']}: {int((got != want).sum())} of "
                           f"{got.size} differ")
    return bad


def random_input_sets(interp, seed, n=2):
    rng = np.random.default_rng(seed)
    sets = []
    for j in range(n):
        s = []
        for d in interp.get_input_details():
            assert d["dtype"] == np.int16, d
            s.append(saturated_input(rng, d["shape"]) if j == 1 else int16_input(rng, d["shape"]))
        sets.append(s)
    return sets


def fc16(m: ModelBuilder, x, n, activation="NONE", per_channel=False, gain=1.0,
         bias_extreme=False, name=None, int4=False):
    """A 16x8 FULLY_CONNECTED (version 7) with an int64 bias; `int4`: int4
    weights (version 13, values -8..7 with both extremes)."""
    t = m.meta[x]
    rng = m.rng
    k = t.shape[-1]
    rows = int(np.prod(t.shape[:-1]))
    nw = n if per_channel else 1
    ws = [float(s) for s in rng.uniform(0.002, 0.02, nw).astype(np.float32)]
    w = QTensor((n, k), "int4" if int4 else "int8", scale=ws, zero_point=[0] * nw,
                data=int16_weights(rng, (n, k), *((-8, 7) if int4 else ())))
    bdata = rng.integers(-(1 << 22), 1 << 22, n).astype(np.int64)
    if bias_extreme:
        bdata[0] = BIAS40
    b = QTensor((n,), "int64", scale=[t.scale * s for s in ws] if per_channel else t.scale * ws[0],
                zero_point=[0] * nw if per_channel else 0, data=bdata)
    eff = 0.0058 / math.sqrt(k) * gain
    o = m.tensor(act16((rows, n), t.scale * ws[0] / eff, name=name))
    m.g.add_op("FULLY_CONNECTED", [x, m.tensor(w), m.tensor(b)], [o],
               dict(fused_activation_function=activation), version=13 if int4 else 7)
    return o


def pool16(m: ModelBuilder, x, op, k=2, stride=2, padding="VALID", activation="NONE", name=None):
    t = m.meta[x]
    oh, ow = out_hw(t.shape[1], t.shape[2], k, stride, padding)
    o = m.tensor(act16((1, oh, ow, t.shape[3]), t.scale, name=name))
    m.g.add_op(op, [x], [o], dict(padding=padding, stride_w=stride, stride_h=stride,
                                  filter_width=k, filter_height=k,
                                  fused_activation_function=activation), version=3)
    return o


def add16(m: ModelBuilder, a, b, op="ADD", out_scale=None, activation="NONE", name=None):
    """16x8 ADD (version 3) / SUB (version 5) with pot_scale_int16 = false (as the
    converter writes it)."""
    ta, tb = m.meta[a], m.meta[b]
    shape = ta.shape if len(ta.shape) >= len(tb.shape) else tb.shape
    s = out_scale or 2.0 * max(ta.scale, tb.scale)
    o = m.tensor(act16(shape, s, name=name))
    m.g.add_op(op, [a, b], [o], dict(fused_activation_function=activation, pot_scale_int16=False),
               version=3 if op == "ADD" else 5)
    return o


def concat16(m: ModelBuilder, xs, name=None):
    ts = [m.meta[x] for x in xs]
    c = sum(t.shape[-1] for t in ts)
    o = m.tensor(act16(tuple(ts[0].shape[:-1]) + (c,), ts[0].scale, name=name))
    m.g.add_op("CONCATENATION", list(xs), [o], dict(axis=-1, fused_activation_function="NONE"),
               version=3)
    return o


def mul16(m: ModelBuilder, a, b, out_scale=None, activation="NONE", name=None):
    """16x8 MUL (version 4): int16 operands and output, zero points 0."""
    ta, tb = m.meta[a], m.meta[b]
    shape = ta.shape if len(ta.shape) >= len(tb.shape) else tb.shape
    s = out_scale or 4.0 * ta.scale * tb.scale * 32768
    o = m.tensor(act16(shape, s, name=name))
    m.g.add_op("MUL", [a, b], [o], dict(fused_activation_function=activation), version=4)
    return o

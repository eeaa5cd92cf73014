"""Small int8 TFLite test models for the delegate tests, built as flatbuffers with
tflite_builder (milliseconds each), and helpers to run a model with and without
the NACC delegate on TFLite's reference kernels."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from tflite_builder import GraphBuilder, QTensor, make_interpreter

SEED = 1234


def act(shape, scale=0.05, zp=-3, dtype="int8", name=None):
    return QTensor(tuple(shape), dtype, scale=scale, zero_point=zp, name=name)


def conv_weights(rng, cout, kh, kw, cin, dtype="int8"):
    scales = list(np.linspace(0.004, 0.02, cout))
    w = QTensor((cout, kh, kw, cin), dtype, scale=scales, zero_point=[0] * cout,
                quantized_dimension=0, data=rng.integers(-127, 128, (cout, kh, kw, cin)))
    return w, scales


def bias(rng, in_scale, w_scales, dtype="int32"):
    n = len(w_scales)
    return QTensor((n,), dtype, scale=[in_scale * s for s in w_scales], zero_point=[0] * n,
                   data=rng.integers(-2000, 2000, n))


class ModelBuilder:
    """GraphBuilder plus shorthands for the ops the delegate tests use; each
    method adds the op and returns its output tensor index."""

    def __init__(self, seed: int = SEED):
        self.g = GraphBuilder()
        self.rng = np.random.default_rng(seed)
        self.inputs: list = []
        self.meta: dict = {}  # tensor index -> QTensor

    def tensor(self, t: QTensor) -> int:
        i = self.g.add_tensor(t)
        self.meta[i] = t
        return i

    def input(self, shape, scale=0.05, zp=-3, dtype="int8") -> int:
        i = self.tensor(act(shape, scale, zp, dtype))
        self.inputs.append(i)
        return i

    def conv(self, x, cout, k=3, stride=1, padding="SAME", dilation=1, activation="RELU",
             out_scale=0.1, out_zp=-5, name=None, version=3, kw=None, groups=1):
        t = self.meta[x]
        cin = t.shape[3] // groups  # the filter's input channels (CONV_2D v6: grouped)
        version = 6 if groups > 1 else version
        w, scales = conv_weights(self.rng, cout, k, kw or k, cin)
        b = bias(self.rng, t.scale, scales)
        h, wd = t.shape[1], t.shape[2]
        ekh, ekw = dilation * (k - 1) + 1, dilation * ((kw or k) - 1) + 1
        if padding == "SAME":
            oh, ow = -(-h // stride), -(-wd // stride)
        else:
            oh, ow = (h - ekh) // stride + 1, (wd - ekw) // stride + 1
        o = self.tensor(act((t.shape[0], oh, ow, cout), out_scale, out_zp, name=name))
        self.g.add_op("CONV_2D", [x, self.tensor(w), self.tensor(b)], [o],
                      dict(padding=padding, stride_w=stride, stride_h=stride,
                           dilation_w_factor=dilation, dilation_h_factor=dilation,
                           fused_activation_function=activation), version=version)
        return o

    def depthwise(self, x, k=3, stride=1, multiplier=1, activation="RELU6", name=None,
                  dilation=1, padding="SAME"):
        t = self.meta[x]
        c = t.shape[3] * multiplier
        scales = list(np.linspace(0.005, 0.02, c))
        w = QTensor((1, k, k, c), "int8", scale=scales, zero_point=[0] * c, quantized_dimension=3,
                    data=self.rng.integers(-127, 128, (1, k, k, c)))
        b = bias(self.rng, t.scale, scales)
        if padding == "SAME":
            oh, ow = -(-t.shape[1] // stride), -(-t.shape[2] // stride)
        else:
            ek = dilation * (k - 1) + 1
            oh, ow = (t.shape[1] - ek) // stride + 1, (t.shape[2] - ek) // stride + 1
        o = self.tensor(act((t.shape[0], oh, ow, c), 0.08, 2, name=name))
        self.g.add_op("DEPTHWISE_CONV_2D", [x, self.tensor(w), self.tensor(b)], [o],
                      dict(padding=padding, stride_w=stride, stride_h=stride,
                           dilation_w_factor=dilation, dilation_h_factor=dilation,
                           depth_multiplier=multiplier, fused_activation_function=activation),
                      version=3)
        return o

    def fully_connected(self, x, n, name=None, **options):
        t = self.meta[x]
        k = int(np.prod(t.shape[1:]))
        scales = [0.01]
        w = QTensor((n, k), "int8", scale=scales, zero_point=[0],
                    data=self.rng.integers(-127, 128, (n, k)))
        b = QTensor((n,), "int32", scale=t.scale * 0.01, zero_point=0,
                    data=self.rng.integers(-2000, 2000, n))
        shape = (t.shape[0], n) if not options.get("keep_num_dims") else tuple(t.shape[:-1]) + (n,)
        o = self.tensor(act(shape, 0.2, 0, name=name))
        self.g.add_op("FULLY_CONNECTED", [x, self.tensor(w), self.tensor(b)], [o],
                      dict(fused_activation_function="NONE", **options), version=4)
        return o

    def unary(self, op, x, out: Optional[QTensor] = None, options=None, version=1, name=None):
        t = self.meta[x]
        o = self.tensor(out or QTensor(t.shape, t.dtype, scale=t.scale, zero_point=t.zero_point,
                                       name=name))
        self.g.add_op(op, [x], [o], options, version=version)
        return o

    def softmax(self, x, name=None):
        t = self.meta[x]
        o = self.tensor(QTensor(t.shape, "int8", scale=1 / 256, zero_point=-128, name=name))
        self.g.add_op("SOFTMAX", [x], [o], dict(beta=1.0), version=2)
        return o

    def add(self, a, b, out_scale=0.12, out_zp=1, name=None):
        t = self.meta[a]
        o = self.tensor(act(t.shape, out_scale, out_zp, name=name))
        self.g.add_op("ADD", [a, b], [o], dict(fused_activation_function="NONE"), version=2)
        return o

    def pool(self, op, x, k=2, stride=2, padding="VALID", name=None):
        t = self.meta[x]
        if padding == "SAME":
            oh, ow = -(-t.shape[1] // stride), -(-t.shape[2] // stride)
        else:
            oh, ow = (t.shape[1] - k) // stride + 1, (t.shape[2] - k) // stride + 1
        o = self.tensor(QTensor((t.shape[0], oh, ow, t.shape[3]), "int8", scale=t.scale,
                                zero_point=t.zero_point, name=name))
        self.g.add_op(op, [x], [o], dict(padding=padding, stride_w=stride, stride_h=stride,
                                         filter_width=k, filter_height=k), version=2)
        return o

    def mean(self, x, axes=(1, 2), keep_dims=False, name=None):
        t = self.meta[x]
        ax = self.tensor(QTensor((len(axes),), "int32", data=np.array(axes, dtype=np.int32)))
        shape = [d for i, d in enumerate(t.shape) if i not in axes or keep_dims]
        if keep_dims:
            shape = [1 if i in axes else d for i, d in enumerate(t.shape)]
        o = self.tensor(act(shape, 0.04, -1, name=name))
        self.g.add_op("MEAN", [x, ax], [o], dict(keep_dims=keep_dims), version=2)
        return o

    def reshape(self, x, shape, name=None):
        t = self.meta[x]
        s = self.tensor(QTensor((len(shape),), "int32", data=np.array(shape, dtype=np.int32)))
        o = self.tensor(QTensor(tuple(shape), t.dtype, scale=t.scale, zero_point=t.zero_point,
                                name=name))
        self.g.add_op("RESHAPE", [x, s], [o], dict(new_shape=list(shape)))
        return o

    def build(self, outputs: Sequence[int]) -> bytes:
        return self.g.build(self.inputs, list(outputs))


def random_inputs(interp, seed=SEED):
    rng = np.random.default_rng(seed)
    out = []
    for d in interp.get_input_details():
        if d["dtype"] == np.float32:
            out.append(rng.standard_normal(d["shape"]).astype(np.float32))
        else:
            info = np.iinfo(d["dtype"])
            out.append(rng.integers(info.min, info.max + 1, d["shape"], dtype=d["dtype"]))
    return out


def run(model: bytes, inputs, delegates=None, interpreter_cls=None, num_threads=1):
    """Outputs of one Invoke on TFLite's reference kernels, with `delegates` applied."""
    if interpreter_cls is None:
        interp = make_interpreter(model, delegates=delegates, num_threads=num_threads)
    else:
        from ai_edge_litert import interpreter as litert

        interp = interpreter_cls(
            model_content=model, num_threads=num_threads,
            experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF,
            experimental_delegates=delegates or None)
    interp.allocate_tensors()
    for d, x in zip(interp.get_input_details(), inputs):
        interp.set_tensor(d["index"], x)
    interp.invoke()
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]


def if_model(seed: int = SEED) -> bytes:
    """Three subgraphs: main = IF(cond, x) (host op), then = CONV_2D, else = 2 x CONV_2D.
    TFLite applies the delegate to every subgraph."""
    import flatbuffers
    from tensorflow.lite.python import schema_py_generated as schema

    m = ModelBuilder(seed)
    g = m.g
    subgraphs = []

    def finish(inputs, outputs, name):
        sub = schema.SubGraphT()
        sub.tensors, sub.operators = g._tensors, g._ops
        sub.inputs = np.array(inputs, dtype=np.int32)
        sub.outputs = np.array(outputs, dtype=np.int32)
        sub.name = name
        subgraphs.append(sub)
        g._tensors, g._ops = [], []
        m.meta = {}

    x_q = dict(shape=(1, 8, 8, 4), scale=0.05, zp=-3)
    # main: cond (bool), x -> IF -> y
    g._tensors, g._ops = [], []
    cond = m.tensor(QTensor((1,), "int32"))
    g._tensors[cond].type = schema.TensorType.BOOL
    x = m.tensor(act(x_q["shape"], x_q["scale"], x_q["zp"]))
    y = m.tensor(act((1, 8, 8, 4), 0.1, -5))
    o = schema.OperatorT()
    o.opcodeIndex = g._opcode("IF", 1)
    o.inputs = np.array([cond, x], dtype=np.int32)
    o.outputs = np.array([y], dtype=np.int32)
    o.builtinOptionsType = schema.BuiltinOptions.IfOptions
    opts = schema.IfOptionsT()
    opts.thenSubgraphIndex, opts.elseSubgraphIndex = 1, 2
    o.builtinOptions = opts
    g._ops.append(o)
    finish([cond, x], [y], "main")
    for name, depth in (("then", 1), ("else", 2)):
        xi = m.tensor(act(x_q["shape"], x_q["scale"], x_q["zp"]))
        t = xi
        for i in range(depth):
            t = m.conv(t, 4, out_scale=0.1, out_zp=-5, name=f"{name}_conv{i}")
        finish([xi], [t], name)
    model = schema.ModelT()
    model.version = 3
    model.operatorCodes = g._opcode_list
    model.subgraphs = subgraphs
    model.buffers = g._buffers
    b = flatbuffers.Builder(1024)
    b.Finish(model.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())

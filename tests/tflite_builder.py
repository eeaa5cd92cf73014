"""Build small int8 TFLite models directly as flatbuffers, and run them.

Building a model this way takes milliseconds and lets a test choose every
scale and zero point exactly (the TFLite converter takes ~0.5 s per model and
picks them from data). Uses the schema's Python object API shipped with
TensorFlow (tensorflow.lite.python.schema_py_generated) and `flatbuffers`.

    t = QTensor((1, 8, 8, 3), "int8", scale=0.05, zero_point=-3)
    model = build_model("CONV_2D", [t, w, b], [o], options=dict(padding="SAME"))
    (out,) = run_tflite(model, [x])          # TFLite BUILTIN_REF kernels

`GraphBuilder` builds multi-op graphs the same way.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Optional, Sequence, Union

import flatbuffers
import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
from tensorflow.lite.python import schema_py_generated as schema  # noqa: E402

_DTYPES = {
    "int8": (schema.TensorType.INT8, np.int8),
    "uint8": (schema.TensorType.UINT8, np.uint8),
    "int16": (schema.TensorType.INT16, np.int16),
    "int32": (schema.TensorType.INT32, np.int32),
    "int64": (schema.TensorType.INT64, np.int64),
    "float32": (schema.TensorType.FLOAT32, np.float32),
    # Constant data of an int4 tensor is given as int8 values in [-8, 7] and
    # packed two per byte, the first in the low nibble (TFLite's layout).
    "int4": (schema.TensorType.INT4, np.int8),
}

# BuiltinOperator name -> BuiltinOptions table name (ops without options omitted).
_OPTIONS = {
    "CONV_2D": "Conv2DOptions",
    "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions",
    "FULLY_CONNECTED": "FullyConnectedOptions",
    "BATCH_MATMUL": "BatchMatMulOptions",
    "MAX_POOL_2D": "Pool2DOptions",
    "AVERAGE_POOL_2D": "Pool2DOptions",
    "ADD": "AddOptions",
    "SUB": "SubOptions",
    "MUL": "MulOptions",
    "RESHAPE": "ReshapeOptions",
    "SQUEEZE": "SqueezeOptions",
    "CONCATENATION": "ConcatenationOptions",
    "MEAN": "ReducerOptions",
    "SOFTMAX": "SoftmaxOptions",
    "PAD": "PadOptions",
    "LEAKY_RELU": "LeakyReluOptions",
    "HARD_SWISH": "HardSwishOptions",
    "SPLIT": "SplitOptions",
    "SPLIT_V": "SplitVOptions",
    "SLICE": "SliceOptions",
    "STRIDED_SLICE": "StridedSliceOptions",
    "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions",
    "SPACE_TO_DEPTH": "SpaceToDepthOptions",
    "DEPTH_TO_SPACE": "DepthToSpaceOptions",
    "TRANSPOSE_CONV": "TransposeConvOptions",
    "RESIZE_BILINEAR": "ResizeBilinearOptions",
}

# Option fields whose values may be given by enum name.
_ENUM_FIELDS = {
    "padding": schema.Padding,
    "fusedActivationFunction": schema.ActivationFunctionType,
    "weightsFormat": schema.FullyConnectedOptionsWeightsFormat,
}

# Fields whose schema default (0) TFLite rejects; tests override as needed.
_DEFAULTS = {"strideW": 1, "strideH": 1, "filterWidth": 1, "filterHeight": 1,
             "depthMultiplier": 1}


def _pack_int4(values: np.ndarray) -> np.ndarray:
    flat = values.reshape(-1).astype(np.int64)
    if flat.size and (flat.min() < -8 or flat.max() > 7):
        raise ValueError("int4 data must lie in [-8, 7]")
    nibbles = (flat & 0xF).astype(np.uint8)
    if nibbles.size % 2:
        nibbles = np.append(nibbles, np.uint8(0))
    return nibbles[0::2] | (nibbles[1::2] << 4)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


@dataclasses.dataclass
class QTensor:
    """A tensor of a test model. `data` makes it a constant (weights, bias)."""

    shape: Sequence[int]
    dtype: str = "int8"
    scale: Union[float, Sequence[float], None] = None
    zero_point: Union[int, Sequence[int], None] = None
    quantized_dimension: int = 0
    data: Optional[np.ndarray] = None
    name: Optional[str] = None
    shape_signature: Optional[Sequence[int]] = None


class GraphBuilder:
    """Builds a one-subgraph TFLite model op by op."""

    def __init__(self) -> None:
        self._buffers = [schema.BufferT()]  # buffer 0: the empty sentinel
        self._tensors: list = []
        self._ops: list = []
        self._opcodes: dict = {}
        self._opcode_list: list = []

    def add_tensor(self, t: QTensor) -> int:
        ttype, np_dtype = _DTYPES[t.dtype]
        tensor = schema.TensorT()
        tensor.shape = np.array(t.shape, dtype=np.int32)
        if t.shape_signature is not None:
            tensor.shapeSignature = np.array(t.shape_signature, dtype=np.int32)
        tensor.type = ttype
        tensor.name = t.name or f"t{len(self._tensors)}"
        tensor.buffer = 0
        if t.data is not None:
            arr = np.ascontiguousarray(np.asarray(t.data, dtype=np_dtype).reshape(t.shape))
            buf = schema.BufferT()
            buf.data = (_pack_int4(arr) if t.dtype == "int4"
                        else np.frombuffer(arr.tobytes(), dtype=np.uint8))
            self._buffers.append(buf)
            tensor.buffer = len(self._buffers) - 1
        if t.scale is not None:
            q = schema.QuantizationParametersT()
            scales = np.atleast_1d(np.asarray(t.scale, dtype=np.float32))
            zps = np.atleast_1d(np.asarray(0 if t.zero_point is None else t.zero_point, dtype=np.int64))
            if zps.size == 1 and scales.size > 1:
                zps = np.zeros(scales.size, dtype=np.int64) + zps[0]
            q.scale = scales
            q.zeroPoint = zps
            q.quantizedDimension = int(t.quantized_dimension)
            tensor.quantization = q
        self._tensors.append(tensor)
        return len(self._tensors) - 1

    def _opcode(self, op: str, version: int) -> int:
        key = (op, version)
        if key not in self._opcodes:
            code = getattr(schema.BuiltinOperator, op)
            oc = schema.OperatorCodeT()
            oc.builtinCode = code
            oc.deprecatedBuiltinCode = min(code, schema.BuiltinOperator.PLACEHOLDER_FOR_GREATER_OP_CODES)
            oc.version = version
            self._opcodes[key] = len(self._opcode_list)
            self._opcode_list.append(oc)
        return self._opcodes[key]

    def add_op(self, op: str, inputs: Sequence[int], outputs: Sequence[int],
               options: Optional[dict] = None, version: int = 1) -> int:
        o = schema.OperatorT()
        o.opcodeIndex = self._opcode(op, version)
        o.inputs = np.array(inputs, dtype=np.int32)
        o.outputs = np.array(outputs, dtype=np.int32)
        table = _OPTIONS.get(op)
        if table is not None:
            opts = getattr(schema, table + "T")()
            for field, value in _DEFAULTS.items():  # the schema's 0 defaults are invalid
                if hasattr(opts, field):
                    setattr(opts, field, value)
            for key, value in (options or {}).items():
                field = _camel(key)
                if not hasattr(opts, field):
                    raise ValueError(f"{op}: {table} has no field '{key}'")
                if isinstance(value, str) and field in _ENUM_FIELDS:
                    value = getattr(_ENUM_FIELDS[field], value)
                setattr(opts, field, value)
            o.builtinOptionsType = getattr(schema.BuiltinOptions, table)
            o.builtinOptions = opts
        elif options:
            raise ValueError(f"{op}: options given but the op has no options table here")
        self._ops.append(o)
        return len(self._ops) - 1

    def build(self, inputs: Sequence[int], outputs: Sequence[int]) -> bytes:
        sub = schema.SubGraphT()
        sub.tensors = self._tensors
        sub.operators = self._ops
        sub.inputs = np.array(inputs, dtype=np.int32)
        sub.outputs = np.array(outputs, dtype=np.int32)
        sub.name = "main"
        model = schema.ModelT()
        model.version = 3
        model.description = "nacc test model"
        model.operatorCodes = self._opcode_list
        model.subgraphs = [sub]
        model.buffers = self._buffers
        b = flatbuffers.Builder(1024)
        b.Finish(model.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def build_model(op: str, inputs: Sequence[Optional[QTensor]], outputs: Sequence[QTensor],
                options: Optional[dict] = None, version: int = 1) -> bytes:
    """A model of one op. Non-constant inputs become the model's inputs, in order;
    `None` marks an omitted optional input."""
    g = GraphBuilder()
    in_ids, model_inputs = [], []
    for t in inputs:
        if t is None:
            in_ids.append(-1)
            continue
        idx = g.add_tensor(t)
        in_ids.append(idx)
        if t.data is None:
            model_inputs.append(idx)
    out_ids = [g.add_tensor(t) for t in outputs]
    g.add_op(op, in_ids, out_ids, options, version)
    return g.build(model_inputs, out_ids)


def make_interpreter(model: bytes, *, reference: bool = True, num_threads: int = 1,
                     delegates: Optional[list] = None) -> Any:
    import tensorflow as tf

    kwargs = {"model_content": model, "num_threads": num_threads}
    if reference:
        kwargs["experimental_op_resolver_type"] = tf.lite.experimental.OpResolverType.BUILTIN_REF
    if delegates:
        kwargs["experimental_delegates"] = delegates
    return tf.lite.Interpreter(**kwargs)


def run_tflite(model: bytes, inputs: Sequence[np.ndarray], *, reference: bool = True,
               num_threads: int = 1) -> list:
    """Runs `model` once; BUILTIN_REF (TFLite's reference kernels) by default."""
    interp = make_interpreter(model, reference=reference, num_threads=num_threads)
    interp.allocate_tensors()
    details = interp.get_input_details()
    if len(details) != len(inputs):
        raise ValueError(f"model has {len(details)} inputs, {len(inputs)} given")
    for d, x in zip(details, inputs):
        interp.set_tensor(d["index"], np.asarray(x, dtype=d["dtype"]))
    interp.invoke()
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]

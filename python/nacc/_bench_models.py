"""The benchmark's default models: int8 Keras models converted to TFLite (int8
I/O) and their ONNX QDQ counterparts, built on first use and cached.

Self-contained (the package must not import from tests/): the builders follow
tests/keras_models.py — random weights, BatchNorm statistics from calibration
data and a scaled classifier, so the logits have a realistic spread (TFLite's
reference int8 SOFTMAX aborts the process on nearly flat logits), batch size 1
(static shapes). ONNX: the same Keras model exported with tf2onnx
(``from_function``: tf2onnx 1.17's ``from_keras`` fails on Keras 3) and
quantized with ``onnxruntime.quantization.quantize_static`` (QDQ, int8
activations, per-channel int8 weights) on the same calibration data.

Cache: ``$NACC_MODEL_CACHE``, else ``$NACC_TEST_MODEL_CACHE``, else
``~/.cache/nacc/models``; file names carry a hash of the builder source and
the TensorFlow version.
"""
from __future__ import annotations

import hashlib
import inspect
import os
import tempfile
from typing import Callable, Dict, Optional, Tuple

import numpy as np

CALIBRATION_SAMPLES = 16
ONNX_IR_VERSION = 9  # onnxruntime 1.31 reads IR versions <= 13; onnx 1.23 writes 14
ONNX_OPSET = 17


def cache_dir() -> str:
    return (os.environ.get("NACC_MODEL_CACHE") or os.environ.get("NACC_TEST_MODEL_CACHE")
            or os.path.join(os.path.expanduser("~"), ".cache", "nacc", "models"))


def _calibration(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, (CALIBRATION_SAMPLES, *shape)).astype(np.float32)


def _settle(model, data, logit_scale=8.0):
    """BatchNorm statistics from `data`; the classifier scaled for a logit spread."""
    import keras

    for bn in [l for l in model.layers if isinstance(l, keras.layers.BatchNormalization)]:
        bn.momentum = 0.0
    model(data, training=True)
    dense = [l for l in model.layers if isinstance(l, keras.layers.Dense)]
    if dense:
        w, b = dense[-1].get_weights()
        dense[-1].set_weights([w * logit_scale, b])
    return model


def mobilenet_v1(alpha=0.25, size=128):
    import keras

    keras.utils.set_random_seed(1)
    m = keras.applications.MobileNet(input_shape=(size, size, 3), alpha=alpha, weights=None)
    return _settle(m, _calibration((size, size, 3)))


def mobilenet_v2(alpha=1.0, size=224):
    import keras

    keras.utils.set_random_seed(2)
    m = keras.applications.MobileNetV2(input_shape=(size, size, 3), alpha=alpha, weights=None)
    return _settle(m, _calibration((size, size, 3)))


def resnet50(size=224):
    import keras

    keras.utils.set_random_seed(5)
    m = keras.applications.ResNet50(input_shape=(size, size, 3), weights=None)
    return _settle(m, _calibration((size, size, 3)))


def digits_split():
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.images / 16.0 * 2.0 - 1.0).astype(np.float32)[..., None]
    n = int(len(x) * 0.8)
    return x[:n], d.target[:n], x[n:], d.target[n:]


def digits_cnn(epochs=12):
    """A small CNN trained on scikit-learn's load_digits (8x8 grey images)."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(4)
    x, y, _, _ = digits_split()
    m = keras.Sequential([
        keras.Input((8, 8, 1)),
        layers.Conv2D(16, 3, padding="same", activation="relu"),
        layers.Conv2D(32, 3, strides=2, padding="same", activation="relu"),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.Flatten(),
        layers.Dense(10, activation="softmax"),
    ])
    m.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    m.fit(x, y, epochs=epochs, batch_size=64, verbose=0)
    return m


def _digits_calibration(_shape):
    return digits_split()[0][:64]


# name -> (builder, input shape without batch, calibration data)
MODELS: Dict[str, Tuple[Callable, Tuple[int, ...], Callable]] = {
    "mobilenet_v1_025_128": (mobilenet_v1, (128, 128, 3), _calibration),
    "mobilenet_v2_100_224": (mobilenet_v2, (224, 224, 3), _calibration),
    "resnet50_224": (resnet50, (224, 224, 3), _calibration),
    "digits_cnn": (digits_cnn, (8, 8, 1), _digits_calibration),
}
DEFAULT_MODELS = ("mobilenet_v1_025_128", "mobilenet_v2_100_224", "resnet50_224", "digits_cnn")
QUICK_MODELS = ("digits_cnn",)


def _key(name: str) -> str:
    import tensorflow as tf

    build, _, calibration = MODELS[name]
    h = hashlib.sha256(tf.__version__.encode())
    for o in (build, calibration, _settle, _calibration, digits_split, _keras_with_batch1):
        h.update(inspect.getsource(o).encode())
    return h.hexdigest()[:12]


def _store(path: str, blob: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(blob)
    os.replace(tmp, path)


_built: Dict[str, object] = {}


def _keras_with_batch1(name: str):
    """The Keras model behind a static batch-1 input (constant RESHAPE shapes)."""
    if name not in _built:
        import keras

        build, shape, _ = MODELS[name]
        model = build()
        inp = keras.Input(shape, batch_size=1)
        _built[name] = keras.Model(inp, model(inp))
    return _built[name]


def path_of(name: str, kind: str) -> str:
    ext = {"tflite": "i8io.tflite", "onnx": "qdq.onnx"}[kind]
    return os.path.join(cache_dir(), f"bench-{name}-{_key(name)}-{ext}")


def tflite_model(name: str) -> bytes:
    """The int8 TFLite model (int8 inputs and outputs), converted once and cached."""
    path = path_of(name, "tflite")
    if os.path.exists(path):
        with open(path, "rb") as f:
            return f.read()
    import tensorflow as tf

    _, shape, calibration = MODELS[name]
    data = calibration(shape)

    def representative():
        for i in range(len(data)):
            yield [data[i:i + 1]]

    conv = tf.lite.TFLiteConverter.from_keras_model(_keras_with_batch1(name))
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = representative
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    blob = conv.convert()
    _store(path, blob)
    return blob


def onnx_model(name: str) -> bytes:
    """The QDQ ONNX model (float32 input and output, int8 inside): tf2onnx export of
    the same Keras model, quantize_static with the calibration data. Cached."""
    path = path_of(name, "onnx")
    if os.path.exists(path):
        with open(path, "rb") as f:
            return f.read()
    import onnx
    import tensorflow as tf
    import tf2onnx
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    _, shape, calibration = MODELS[name]
    model = _keras_with_batch1(name)
    spec = (tf.TensorSpec((1, *shape), tf.float32, name="input"),)
    fn = tf.function(lambda x: model(x, training=False))
    float_model, _ = tf2onnx.convert.from_function(fn, input_signature=spec, opset=ONNX_OPSET)
    data = calibration(shape)
    input_name = float_model.graph.input[0].name

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{input_name: data[i:i + 1]} for i in range(len(data))])

        def get_next(self):
            return next(self.it, None)

    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "f.onnx"), os.path.join(d, "q.onnx")
        onnx.save(float_model, src)
        quantize_static(src, dst, Reader(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                        per_channel=True)
        q = onnx.load(dst)
    q.ir_version = min(q.ir_version, ONNX_IR_VERSION)
    blob = q.SerializeToString()
    _store(path, blob)
    return blob


def model_bytes(name: str, kind: str) -> Optional[bytes]:
    return tflite_model(name) if kind == "tflite" else onnx_model(name)

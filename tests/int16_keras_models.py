"""Small Keras models converted by the TFLite converter to TFLite's 16x8
quantization (`supported_ops = [EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]`,
a representative dataset, int16 inputs and outputs): a DS-CNN keyword-spotting
model, a small residual CNN and a graph mixing CONV / DEPTHWISE / FC / ADD / SUB /
pools / CONCATENATION. Cached in tests/.model_cache/ (keras_models.CACHE_DIR) so
the converter runs once per machine."""
from __future__ import annotations

import os

import numpy as np

from keras_models import CACHE_DIR

VERSION = "v1"


def _convert(model, shape, seed):
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: (
        [rng.standard_normal((1,) + shape).astype(np.float32)] for _ in range(32))
    conv.target_spec.supported_ops = [
        tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
    conv.inference_input_type = tf.int16
    conv.inference_output_type = tf.int16
    return conv.convert()


def _ds_cnn():
    """DS-CNN (Zhang et al., "Hello Edge"), scaled down: a 49x10 MFCC map, a
    strided conv, three depthwise-separable blocks (depthwise 3x3 + ReLU, 1x1
    conv + ReLU), a 2x2 average pool, flatten, a 12-way classifier."""
    import tensorflow as tf

    L = tf.keras.layers
    inp = tf.keras.Input((49, 10, 1), batch_size=1)
    y = L.Conv2D(16, (10, 4), strides=(2, 2), padding="same", activation="relu")(inp)
    for _ in range(3):
        y = L.DepthwiseConv2D(3, padding="same", activation="relu")(y)
        y = L.Conv2D(16, 1, activation="relu")(y)
    y = L.AveragePooling2D(2)(y)
    y = L.Flatten()(y)
    y = L.Dense(12)(y)
    return tf.keras.Model(inp, y), (49, 10, 1)


def _resnet():
    """Two residual blocks (conv-conv + identity ADD, then a strided block with a
    1x1 projection), max pool, flatten, FC."""
    import tensorflow as tf

    L = tf.keras.layers
    inp = tf.keras.Input((16, 16, 3), batch_size=1)
    x = L.Conv2D(12, 3, padding="same", activation="relu")(inp)
    y = L.Conv2D(12, 3, padding="same", activation="relu")(x)
    y = L.Conv2D(12, 3, padding="same")(y)
    x = L.ReLU()(L.Add()([x, y]))
    y = L.Conv2D(24, 3, strides=2, padding="same", activation="relu")(x)
    y = L.Conv2D(24, 3, padding="same")(y)
    p = L.Conv2D(24, 1, strides=2)(x)
    x = L.Add()([p, y])
    x = L.MaxPooling2D(2)(x)
    x = L.Flatten()(x)
    x = L.Dense(10)(x)
    return tf.keras.Model(inp, x), (16, 16, 3)


def _mixed():
    """CONV / DEPTHWISE / FC / ADD / SUB / MAX and AVERAGE pools / CONCATENATION."""
    import tensorflow as tf

    L = tf.keras.layers
    inp = tf.keras.Input((12, 12, 4), batch_size=1)
    a = L.Conv2D(8, 3, padding="same", activation="relu6")(inp)
    b = L.DepthwiseConv2D(3, padding="same", depth_multiplier=2)(inp)
    s = L.Subtract()([a, b])
    m = L.MaxPooling2D(3, strides=1, padding="same")(s)
    c = L.Concatenate()([s, m])  # one scale (max pool keeps it): no requantizing QUANTIZE
    e = L.Conv2D(16, 1)(c)
    p = L.AveragePooling2D(2)(L.Add()([c, e]))
    f = L.Flatten()(p)
    y = L.Dense(16, activation="relu")(f)
    y = L.Dense(5)(y)
    return tf.keras.Model(inp, y), (12, 12, 4)


def _activations():
    """The issue's done-when mix: CONV / DEPTHWISE / FC / ADD / SUB / MUL / MAX and
    AVERAGE pools / MEAN / LOGISTIC / TANH / LEAKY_RELU (a gated block: tanh(a) *
    sigmoid(b), as in gated audio models)."""
    import tensorflow as tf

    L = tf.keras.layers
    inp = tf.keras.Input((12, 12, 4), batch_size=1)
    a = L.Conv2D(8, 3, padding="same")(inp)
    b = L.DepthwiseConv2D(3, padding="same", depth_multiplier=2)(inp)
    g = L.Multiply()([L.Activation("tanh")(a), L.Activation("sigmoid")(b)])
    s = L.Subtract()([L.Add()([g, a]), b])
    m = L.MaxPooling2D(2)(L.LeakyReLU(0.2)(s))
    p = L.AveragePooling2D(2)(L.Conv2D(8, 1)(m))
    y = L.GlobalAveragePooling2D()(p)  # MEAN over height and width
    y = L.Dense(5, activation="sigmoid")(y)
    return tf.keras.Model(inp, y), (12, 12, 4)


BUILDERS = {"ds_cnn": _ds_cnn, "resnet": _resnet, "mixed": _mixed, "activations": _activations}


def converted16(name: str) -> bytes:
    path = os.path.join(CACHE_DIR, f"int16x8_{name}_{VERSION}.tflite")
    if not os.path.exists(path):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf

        tf.keras.utils.set_random_seed(16)
        model, shape = BUILDERS[name]()
        data = _convert(model, shape, 16)
        os.makedirs(CACHE_DIR, exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    with open(path, "rb") as f:
        return f.read()

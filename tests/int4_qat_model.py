"""A small CNN with int4 CONV_2D and FULLY_CONNECTED weights made by the TFLite
converter through 4-bit quantization-aware training's fake quantization
(`fake_quant_with_min_max_vars[_per_channel](..., num_bits=4, narrow_range=True)`
on the weights, `converter._experimental_low_bit_qat = True`, a representative
dataset, int8 inputs and outputs). TF 2.21 writes CONV_2D version 7 and
FULLY_CONNECTED version 10 with INT4 weights. Cached in tests/.model_cache/
(keras_models.CACHE_DIR) so the converter runs once per machine."""
from __future__ import annotations

import os

import numpy as np

from keras_models import CACHE_DIR

NAME = "int4_qat_cnn_v1.tflite"


def _build_and_convert() -> bytes:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.keras.utils.set_random_seed(4)

    class Int4Conv(tf.keras.layers.Layer):
        def __init__(self, cout, k, stride=1, **kw):
            super().__init__(**kw)
            self.cout, self.k, self.stride = cout, k, stride

        def build(self, shape):
            self.w = self.add_weight(shape=(self.k, self.k, int(shape[-1]), self.cout),
                                     initializer="glorot_uniform")
            self.b = self.add_weight(shape=(self.cout,), initializer="random_normal")

        def call(self, x):
            m = tf.reduce_max(tf.abs(self.w), axis=[0, 1, 2])
            w = tf.quantization.fake_quant_with_min_max_vars_per_channel(
                self.w, -m, m, num_bits=4, narrow_range=True)
            return tf.nn.relu(tf.nn.conv2d(x, w, self.stride, "SAME") + self.b)

    class Int4Dense(tf.keras.layers.Layer):
        def __init__(self, n, **kw):
            super().__init__(**kw)
            self.n = n

        def build(self, shape):
            self.w = self.add_weight(shape=(int(shape[-1]), self.n), initializer="glorot_uniform")
            self.b = self.add_weight(shape=(self.n,), initializer="random_normal")

        def call(self, x):
            # Per tensor: the converter rejects per-channel fake quantization of a MatMul.
            m = tf.reduce_max(tf.abs(self.w))
            w = tf.quantization.fake_quant_with_min_max_vars(self.w, -m, m, num_bits=4,
                                                             narrow_range=True)
            return tf.matmul(x, w) + self.b

    inp = tf.keras.Input((12, 12, 3), batch_size=1)
    y = Int4Conv(7, 3)(inp)
    y = Int4Conv(13, 3, stride=2)(y)
    y = tf.keras.layers.Flatten()(y)
    y = Int4Dense(9)(y)
    model = tf.keras.Model(inp, y)
    rng = np.random.default_rng(0)
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: (
        [rng.standard_normal((1, 12, 12, 3)).astype(np.float32)] for _ in range(32))
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    conv._experimental_low_bit_qat = True
    return conv.convert()


def int4_qat_cnn() -> bytes:
    path = os.path.join(CACHE_DIR, NAME)
    if not os.path.exists(path):
        data = _build_and_convert()
        os.makedirs(CACHE_DIR, exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    with open(path, "rb") as f:
        return f.read()

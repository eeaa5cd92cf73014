"""Reference Keras models converted to int8 TFLite with a representative
dataset, cached on disk so the converter runs once per machine: the default
models of ``nacc demo``, ``nacc bench`` and benchmarks/layer_report.py, and
the tests' Keras models (tests/keras_models.py uses this module).

Cache directory: ``$NACC_MODEL_CACHE``, else ``$XDG_CACHE_HOME/nacc``, else
``~/.cache/nacc``. File names carry a hash of the TensorFlow version and of
the building code, so a change to either converts again.

Random-weight networks would end in nearly flat logits, on which TFLite's
reference int8 SOFTMAX aborts the process; so every model's BatchNorm layers
get their statistics from calibration data (one training-mode pass with
momentum 0) and the classifier weights are scaled to give the logits a
realistic spread. Models are converted through a wrapper with batch size 1: a
None batch makes the converter compute RESHAPE shapes at run time
(SHAPE/STRIDED_SLICE/PACK), and TFLite applies no static-shape delegate to a
graph with dynamic-sized tensors.

16x8 variants (``INT16X8_MODELS``, names ending in ``_16x8``): the same
Keras model converted with TFLite's int16-activation / int8-weight op set and
int16 inputs and outputs.

ONNX counterparts (``onnx_model``): the same Keras model exported with tf2onnx
(``from_function``; tf2onnx 1.17's ``from_keras`` fails on Keras 3) and
quantized with ``onnxruntime.quantization.quantize_static`` (QDQ, int8
activations, per-channel int8 weights) on the same calibration data.

Needs TensorFlow (and scikit-learn for ``digits_cnn``, tf2onnx, onnx and
onnxruntime for the ONNX models); imported only when a model must be built.
"""
from __future__ import annotations

import hashlib
import inspect
import os
import tempfile
from typing import Callable, Dict, Optional, Tuple

import numpy as np

__all__ = ["MODELS", "DEFAULT_SMALL_MODEL", "BENCH_MODELS", "QUICK_MODELS", "cache_dir",
           "converted", "model_path", "onnx_model", "onnx_model_path", "model_bytes", "digits_split",
           "HOST_BENCH_TFLITE_MODELS", "HOST_BENCH_ONNX_MODELS", "add_model_path",
           "INT16X8_MODELS", "BENCH_INT16_MODELS"]

CALIBRATION_SAMPLES = 16
ONNX_IR_VERSION = 9  # onnxruntime 1.31 reads IR versions <= 13; onnx 1.23 writes 14
ONNX_OPSET = 17
# Bump when the conversion below changes in a way the hashed sources do not show.
_FORMAT = "nacc.models/1"


def cache_dir() -> str:
    """Where converted models are kept (see the module docstring)."""
    if os.environ.get("NACC_MODEL_CACHE"):
        return os.environ["NACC_MODEL_CACHE"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "nacc")


def _calibration(shape, seed=0):
    """Uniform [-1, 1] images, one batch of CALIBRATION_SAMPLES."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, (CALIBRATION_SAMPLES, *shape)).astype(np.float32)


def _settle(model, data, logit_scale=8.0):
    """BatchNorm statistics from `data`; classifier scaled for a logit spread."""
    import keras

    bns = [l for l in model.layers if isinstance(l, keras.layers.BatchNormalization)]
    for bn in bns:
        bn.momentum = 0.0
    model(data, training=True)
    dense = [l for l in model.layers if isinstance(l, keras.layers.Dense)]
    if dense:
        w, b = dense[-1].get_weights()
        dense[-1].set_weights([w * logit_scale, b])
    return model


def mobilenet_v1(alpha=0.25, size=128, classes=1000):
    import keras

    keras.utils.set_random_seed(1)
    m = keras.applications.MobileNet(input_shape=(size, size, 3),
                                     alpha=alpha, weights=None, classes=classes)
    return _settle(m, _calibration((size, size, 3)))


def mobilenet_v2(alpha=0.35, size=96, classes=1000):
    import keras

    keras.utils.set_random_seed(2)
    m = keras.applications.MobileNetV2(input_shape=(size, size, 3),
                                       alpha=alpha, weights=None, classes=classes)
    return _settle(m, _calibration((size, size, 3)))


def resnet50(size=224, classes=1000):
    import keras

    keras.utils.set_random_seed(5)
    m = keras.applications.ResNet50(input_shape=(size, size, 3), weights=None, classes=classes)
    return _settle(m, _calibration((size, size, 3)))


def efficientnet_b0(size=224, classes=1000):
    import keras

    keras.utils.set_random_seed(7)
    m = keras.applications.EfficientNetB0(input_shape=(size, size, 3), weights=None,
                                          classes=classes)
    return _settle(m, _calibration((size, size, 3)))


def resnet_style(size=32, classes=10):
    """Three residual stages (conv-BN-ReLU x2 + identity / 1x1 projection ADD)."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(3)
    x = inp = keras.Input((size, size, 3))
    x = layers.Conv2D(16, 3, padding="same", use_bias=False)(x)
    x = layers.ReLU()(layers.BatchNormalization()(x))
    for filters, stride in ((16, 1), (32, 2), (64, 2)):
        y = layers.Conv2D(filters, 3, strides=stride, padding="same", use_bias=False)(x)
        y = layers.ReLU()(layers.BatchNormalization()(y))
        y = layers.Conv2D(filters, 3, padding="same", use_bias=False)(y)
        y = layers.BatchNormalization()(y)
        if stride != 1 or x.shape[-1] != filters:
            x = layers.BatchNormalization()(layers.Conv2D(filters, 1, strides=stride,
                                                          use_bias=False)(x))
        x = layers.ReLU()(layers.Add()([x, y]))
    x = layers.GlobalAveragePooling2D()(x)
    out = layers.Dense(classes, activation="softmax")(x)
    m = keras.Model(inp, out)
    return _settle(m, _calibration((size, size, 3)))


def squeezenet_style(size=224, classes=1000):
    """SqueezeNet 1.1 layout (conv 3x3/2 64, max pools 3x3/2, eight fire modules:
    a 1x1 squeeze and concatenated 1x1 / 3x3 expands, conv10 1x1 to the
    classes, global average pool), with BatchNorm after each conv so random
    weights keep activations in range; conv10 is scaled for a logit spread."""
    import keras
    from keras import layers

    def conv_bn(x, filters, kernel, stride=1):
        x = layers.Conv2D(filters, kernel, strides=stride, padding="same", use_bias=False)(x)
        return layers.ReLU()(layers.BatchNormalization()(x))

    def fire(x, squeeze, expand):
        s = conv_bn(x, squeeze, 1)
        return layers.Concatenate()([conv_bn(s, expand, 1), conv_bn(s, expand, 3)])

    keras.utils.set_random_seed(6)
    x = inp = keras.Input((size, size, 3))
    x = conv_bn(x, 64, 3, 2)
    x = layers.MaxPooling2D(3, 2, padding="same")(x)
    x = fire(fire(x, 16, 64), 16, 64)
    x = layers.MaxPooling2D(3, 2, padding="same")(x)
    x = fire(fire(x, 32, 128), 32, 128)
    x = layers.MaxPooling2D(3, 2, padding="same")(x)
    for squeeze, expand in ((48, 192), (48, 192), (64, 256), (64, 256)):
        x = fire(x, squeeze, expand)
    x = layers.Conv2D(classes, 1, name="conv10")(x)
    x = layers.GlobalAveragePooling2D()(layers.ReLU()(x))
    m = keras.Model(inp, layers.Softmax()(x))
    _settle(m, _calibration((size, size, 3)))
    conv10 = m.get_layer("conv10")
    w, b = conv10.get_weights()
    conv10.set_weights([w * 8.0, b])
    return m


def inception_style(size=224, classes=1000):
    """BN-Inception (Inception v2) layout: stem (conv 7x7/2 64, max pool, conv
    1x1 64, conv 3x3 192, max pool), blocks 3a-3c, 4a-4e, 5a-5b of four
    concatenated branches (1x1; 1x1 -> 3x3; 1x1 -> 3x3 -> 3x3; pool -> 1x1),
    the reduction blocks 3c / 4e with stride-2 branches and a max pool; global
    average pool and a dense classifier. Conv-BN-ReLU throughout."""
    import keras
    from keras import layers

    def conv_bn(x, filters, kernel, stride=1):
        x = layers.Conv2D(filters, kernel, strides=stride, padding="same", use_bias=False)(x)
        return layers.ReLU()(layers.BatchNormalization()(x))

    def block(x, c1, c3r, c3, d3r, d3, pool, pool_proj):
        branches = [conv_bn(x, c1, 1)] if c1 else []
        branches.append(conv_bn(conv_bn(x, c3r, 1), c3, 3))
        branches.append(conv_bn(conv_bn(conv_bn(x, d3r, 1), d3, 3), d3, 3))
        p = (layers.MaxPooling2D if pool == "max" else layers.AveragePooling2D)(
            3, 1, padding="same")(x)
        branches.append(conv_bn(p, pool_proj, 1))
        return layers.Concatenate()(branches)

    def reduction(x, c3r, c3, d3r, d3):
        a = conv_bn(conv_bn(x, c3r, 1), c3, 3, 2)
        b = conv_bn(conv_bn(conv_bn(x, d3r, 1), d3, 3), d3, 3, 2)
        return layers.Concatenate()([a, b, layers.MaxPooling2D(3, 2, padding="same")(x)])

    keras.utils.set_random_seed(7)
    x = inp = keras.Input((size, size, 3))
    x = layers.MaxPooling2D(3, 2, padding="same")(conv_bn(x, 64, 7, 2))
    x = conv_bn(conv_bn(x, 64, 1), 192, 3)
    x = layers.MaxPooling2D(3, 2, padding="same")(x)
    x = block(x, 64, 64, 64, 64, 96, "avg", 32)
    x = block(x, 64, 64, 96, 64, 96, "avg", 64)
    x = reduction(x, 128, 160, 64, 96)
    for c1, c3r, c3, d3r, d3 in ((224, 64, 96, 96, 128), (192, 96, 128, 96, 128),
                                 (160, 128, 160, 128, 160), (96, 128, 192, 160, 192)):
        x = block(x, c1, c3r, c3, d3r, d3, "avg", 128)
    x = reduction(x, 128, 192, 192, 256)
    x = block(x, 352, 192, 320, 160, 224, "avg", 128)
    x = block(x, 352, 192, 320, 192, 224, "max", 128)
    x = layers.GlobalAveragePooling2D()(x)
    m = keras.Model(inp, layers.Dense(classes, activation="softmax")(x))
    return _settle(m, _calibration((size, size, 3)))


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


def digits_split():
    """scikit-learn's load_digits as float32 [-1, 1] images (N, 8, 8, 1): an
    80/20 split (x_train, y_train, x_test, y_test)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.images / 16.0 * 2.0 - 1.0).astype(np.float32)[..., None]
    n = int(len(x) * 0.8)
    return x[:n], d.target[:n], x[n:], d.target[n:]


def _digits_calibration(_shape):
    return digits_split()[0][:64]


def squeeze_excite_style(size=64, classes=10):
    """EfficientNet-B0-style blocks: stem conv 3x3/2 + swish, two MBConv blocks
    (1x1 expand, depthwise 3x3, squeeze-excite: GlobalAveragePooling2D with
    keepdims -> 1x1 reduce swish -> 1x1 expand sigmoid -> multiply, 1x1
    project, residual ADD), global pool and a dense layer without softmax. The
    squeeze-excite MEANs run over 32x32 and 16x16 at size 64, past the 15x15
    a depthwise window holds."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(5)
    x = inp = keras.Input((size, size, 3))
    x = layers.Conv2D(16, 3, strides=2, padding="same", use_bias=False)(x)
    x = layers.Activation("swish")(layers.BatchNormalization()(x))
    for filters, stride in ((16, 1), (24, 2)):
        y = layers.Conv2D(x.shape[-1] * 4, 1, use_bias=False)(x)
        y = layers.Activation("swish")(layers.BatchNormalization()(y))
        y = layers.DepthwiseConv2D(3, strides=stride, padding="same", use_bias=False)(y)
        y = layers.Activation("swish")(layers.BatchNormalization()(y))
        se = layers.GlobalAveragePooling2D(keepdims=True)(y)
        se = layers.Conv2D(max(1, x.shape[-1] // 4), 1, activation="swish")(se)
        se = layers.Conv2D(y.shape[-1], 1, activation="sigmoid")(se)
        y = layers.Multiply()([y, se])
        y = layers.BatchNormalization()(layers.Conv2D(filters, 1, use_bias=False)(y))
        x = layers.Add()([x, y]) if stride == 1 and x.shape[-1] == filters else y
    x = layers.GlobalAveragePooling2D()(x)
    m = keras.Model(inp, layers.Dense(classes)(x))
    return _settle(m, _calibration((size, size, 3)))


def inception_v3_block_style(size=35, classes=10):
    """One InceptionV3 "mixed" block (1x1; 1x1 -> 5x5; 1x1 -> 3x3 -> 3x3; 3x3
    stride-1 SAME AveragePooling2D -> 1x1; concatenated), then a global pool
    and a dense layer without softmax: the 3x3 stride-1 average pool of every
    InceptionV3 block, in one partition."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(6)

    def cbr(t, filters, k):
        t = layers.Conv2D(filters, k, padding="same", use_bias=False)(t)
        return layers.ReLU()(layers.BatchNormalization()(t))

    x = inp = keras.Input((size, size, 3))
    x = cbr(x, 16, 3)
    b1 = cbr(x, 16, 1)
    b5 = cbr(cbr(x, 12, 1), 16, 5)
    b3 = cbr(cbr(cbr(x, 16, 1), 24, 3), 24, 3)
    bp = cbr(layers.AveragePooling2D(3, strides=1, padding="same")(x), 8, 1)
    x = layers.Concatenate()([b1, b5, b3, bp])
    x = layers.GlobalAveragePooling2D()(x)
    m = keras.Model(inp, layers.Dense(classes)(x))
    return _settle(m, _calibration((size, size, 3)))


def grouped_conv_style(size=16, classes=10):
    """Grouped convolutions (ResNeXt / ShuffleNet style; Keras Conv2D(groups=g)
    converts to CONV_2D version 6): 3x3 groups 2, 3x3 groups 4 (16 -> 32
    channels), 3x3 stride 2 groups 4, 1x1 groups 8, each BN + ReLU, then a
    global pool and a dense layer without softmax."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(7)

    def gcbr(t, filters, k, groups, stride=1):
        t = layers.Conv2D(filters, k, strides=stride, padding="same", groups=groups,
                          use_bias=False)(t)
        return layers.ReLU()(layers.BatchNormalization()(t))

    x = inp = keras.Input((size, size, 3))
    x = gcbr(x, 16, 3, 1)
    x = gcbr(x, 16, 3, 2)
    x = gcbr(x, 32, 3, 4)
    x = gcbr(x, 32, 3, 4, stride=2)
    x = gcbr(x, 32, 1, 8)
    x = layers.GlobalAveragePooling2D()(x)
    m = keras.Model(inp, layers.Dense(classes)(x))
    return _settle(m, _calibration((size, size, 3)))


def deeplab_style(size=24, classes=10):
    """A DeepLab-style block: dilated 3x3 convolutions (rates 2, 4 and 6, an
    ASPP of three parallel branches concatenated) and dilated depthwise 3x3
    (rates 2 and 4), each BN + ReLU, a 1x1 projection, a global pool and a
    dense layer without softmax."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(8)

    def cbr(t, filters, k, rate=1):
        t = layers.Conv2D(filters, k, padding="same", dilation_rate=rate, use_bias=False)(t)
        return layers.ReLU()(layers.BatchNormalization()(t))

    def dbr(t, rate):
        t = layers.DepthwiseConv2D(3, padding="same", dilation_rate=rate, use_bias=False)(t)
        return layers.ReLU()(layers.BatchNormalization()(t))

    x = inp = keras.Input((size, size, 3))
    x = cbr(x, 16, 3)
    x = dbr(x, 2)
    x = cbr(x, 16, 3, rate=2)
    x = dbr(x, 4)
    aspp = [cbr(x, 8, 1)] + [cbr(x, 8, 3, rate=r) for r in (2, 4, 6)]
    x = cbr(layers.Concatenate()(aspp), 16, 1)
    x = layers.GlobalAveragePooling2D()(x)
    m = keras.Model(inp, layers.Dense(classes)(x))
    return _settle(m, _calibration((size, size, 3)))


def unet_style(size=32, classes=3):
    """A small U-Net: two encoder levels (conv + ReLU, max pool), a bottleneck,
    and a decoder whose upsampling is Keras Conv2DTranspose (TFLite
    TRANSPOSE_CONV: 2x2 stride 2 VALID, 3x3 stride 2 SAME, 4x4 stride 2 SAME
    with a fused ReLU) concatenated with the skip connections, and a 1x1
    per-pixel classifier (segmentation logits, no softmax)."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(15)

    def cbr(t, filters):
        t = layers.Conv2D(filters, 3, padding="same", use_bias=False)(t)
        return layers.ReLU()(layers.BatchNormalization()(t))

    x = inp = keras.Input((size, size, 3))
    s1 = cbr(x, 8)
    s2 = cbr(layers.MaxPooling2D()(s1), 16)
    b = cbr(layers.MaxPooling2D()(s2), 24)
    b = layers.Conv2DTranspose(16, 4, strides=2, padding="same", activation="relu")(b)
    u2 = cbr(layers.Concatenate()([b, s2]), 16)
    u1 = layers.Conv2DTranspose(8, 2, strides=2, padding="valid")(u2)
    u1 = cbr(layers.Concatenate()([u1, s1]), 8)
    u1 = layers.Conv2DTranspose(8, 3, strides=2, padding="same")(u1)
    out = layers.Conv2D(classes, 1)(layers.ReLU()(u1))
    m = keras.Model(inp, out)
    return _settle(m, _calibration((size, size, 3)))


def patch_embed_style(size=64, classes=10):
    """A ViT-style patch embedding: a 16x16 stride-16 convolution (the patch
    projection, VALID), a 1x1 convolution per token with ReLU (the MLP's
    first layer as a convolution), a global pool and a dense layer without
    softmax."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(9)
    x = inp = keras.Input((size, size, 3))
    x = layers.Conv2D(48, 16, strides=16, padding="valid")(x)
    x = layers.Conv2D(64, 1, activation="relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    m = keras.Model(inp, layers.Dense(classes)(x))
    return _settle(m, _calibration((size, size, 3)))


def alexnet_stem_style(size=67, classes=10):
    """An AlexNet-style first layer: an 11x11 stride-4 convolution (VALID,
    ReLU), a 3x3 stride-2 max pool, a 5x5 SAME convolution, a 3x3 stride-2
    max pool, a 3x3 convolution, a global pool and a dense layer without
    softmax."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(10)
    x = inp = keras.Input((size, size, 3))
    x = layers.Conv2D(32, 11, strides=4, padding="valid", activation="relu")(x)
    x = layers.MaxPooling2D(3, strides=2)(x)
    x = layers.Conv2D(48, 5, padding="same", activation="relu")(x)
    x = layers.MaxPooling2D(3, strides=2)(x)
    x = layers.Conv2D(64, 3, padding="same", activation="relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    m = keras.Model(inp, layers.Dense(classes)(x))
    return _settle(m, _calibration((size, size, 3)))


def _mobilenet_v2_224():
    return mobilenet_v2(1.0, 224)


# Keras applications of the coverage table (nacc.coverage, docs/coverage.md):
# random-init (weights=None), BatchNorm settled on calibration data.
def _application(cls: str, size: int, seed: int, **kw):
    import keras

    keras.utils.set_random_seed(seed)
    m = getattr(keras.applications, cls)(input_shape=(size, size, 3), weights=None, **kw)
    m = _settle(m, _calibration((size, size, 3)))
    if not any(isinstance(l, keras.layers.Dense) for l in m.layers):
        # MobileNetV3's classifier is a 1x1 convolution ("Logits"): scaled as
        # _settle scales a Dense one (flat logits abort TFLite's reference SOFTMAX).
        conv = [l for l in m.layers if isinstance(l, keras.layers.Conv2D)][-1]
        w, b = conv.get_weights()
        conv.set_weights([w * 8.0, b])
    return m


def mobilenet_v3_small(size=224):
    return _application("MobileNetV3Small", size, 12)


def mobilenet_v3_large(size=224):
    return _application("MobileNetV3Large", size, 13)


def inception_v3(size=75):
    return _application("InceptionV3", size, 14)


def densenet121(size=224):
    return _application("DenseNet121", size, 15)


def xception(size=71):
    return _application("Xception", size, 16)


def nasnet_mobile(size=224):
    return _application("NASNetMobile", size, 17)


_APPLICATIONS = (mobilenet_v3_small, mobilenet_v3_large, inception_v3, densenet121, xception,
                 nasnet_mobile)


def ds_cnn(size=(49, 10), classes=12, width=64, blocks=4):
    """DS-CNN-S, the keyword-spotting network of "Hello Edge" (Zhang et al.,
    2017): a 49x10 MFCC map, a 10x4 stride-2 convolution, `blocks`
    depthwise-separable blocks (3x3 depthwise + BN + ReLU, 1x1 convolution + BN
    + ReLU), a global average pool over the 25x5 map, a `classes`-way classifier."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(11)
    inp = keras.Input((*size, 1))
    x = layers.Conv2D(width, (10, 4), strides=2, padding="same", use_bias=False)(inp)
    x = layers.ReLU()(layers.BatchNormalization()(x))
    for _ in range(blocks):
        x = layers.DepthwiseConv2D(3, padding="same", use_bias=False)(x)
        x = layers.ReLU()(layers.BatchNormalization()(x))
        x = layers.Conv2D(width, 1, use_bias=False)(x)
        x = layers.ReLU()(layers.BatchNormalization()(x))
    x = layers.GlobalAveragePooling2D()(x)
    m = keras.Model(inp, layers.Dense(classes)(x))
    return _settle(m, _calibration((*size, 1)))


# name -> (build, input shape HWC, calibration data for the shape)
MODELS: Dict[str, Tuple[Callable, Tuple[int, ...], Callable]] = {
    "mobilenet_v1_025_128": (mobilenet_v1, (128, 128, 3), _calibration),
    "mobilenet_v2_035_96": (mobilenet_v2, (96, 96, 3), _calibration),
    "mobilenet_v2_100_224": (_mobilenet_v2_224, (224, 224, 3), _calibration),
    "resnet50_224": (resnet50, (224, 224, 3), _calibration),
    "efficientnet_b0_224": (efficientnet_b0, (224, 224, 3), _calibration),
    "resnet_style_32": (resnet_style, (32, 32, 3), _calibration),
    "digits_cnn": (digits_cnn, (8, 8, 1), _digits_calibration),
    "squeezenet_224": (squeezenet_style, (224, 224, 3), _calibration),
    "inception_v2_224": (inception_style, (224, 224, 3), _calibration),
    "squeeze_excite_64": (squeeze_excite_style, (64, 64, 3), _calibration),
    "inception_v3_block_35": (inception_v3_block_style, (35, 35, 3), _calibration),
    "grouped_conv_16": (grouped_conv_style, (16, 16, 3), _calibration),
    "deeplab_block_24": (deeplab_style, (24, 24, 3), _calibration),
    "patch_embed_64": (patch_embed_style, (64, 64, 3), _calibration),
    "unet_32": (unet_style, (32, 32, 3), _calibration),
    "alexnet_stem_67": (alexnet_stem_style, (67, 67, 3), _calibration),
    "ds_cnn_kws": (ds_cnn, (49, 10, 1), _calibration),
    "mobilenet_v3_small_224": (mobilenet_v3_small, (224, 224, 3), _calibration),
    "mobilenet_v3_large_224": (mobilenet_v3_large, (224, 224, 3), _calibration),
    "inception_v3_75": (inception_v3, (75, 75, 3), _calibration),
    "densenet121_224": (densenet121, (224, 224, 3), _calibration),
    "xception_71": (xception, (71, 71, 3), _calibration),
    "nasnet_mobile_224": (nasnet_mobile, (224, 224, 3), _calibration),
}

# TFLite's "16x8" quantization (int16 activations, int8 weights, NACC_SPEC §9):
# name -> the MODELS entry it converts with supported_ops
# EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8 and int16 inputs and
# outputs (float32 with float_io). TFLite models only (ORT's CPU EP has no int16
# kernels); XNNPACK takes no int16 tensors, so TFLite's default interpreter runs
# them on its builtin kernels.
INT16X8_MODELS: Dict[str, str] = {
    "ds_cnn_kws_16x8": "ds_cnn_kws",
    "mobilenet_v2_035_96_16x8": "mobilenet_v2_035_96",
    "resnet_style_32_16x8": "resnet_style_32",
}
MODELS.update({name: MODELS[base] for name, base in INT16X8_MODELS.items()})

# The model ``nacc demo`` builds: the digits CNN trains in seconds and its
# predictions on real images make exactness visible.
DEFAULT_SMALL_MODEL = "digits_cnn"
# ``nacc bench``'s default set and its --quick set.
BENCH_MODELS = ("mobilenet_v1_025_128", "mobilenet_v2_100_224", "resnet50_224", "digits_cnn")
QUICK_MODELS = ("digits_cnn",)
# nacc.host_bench (docs/host_speed.md): the delegate against XNNPACK, the EP
# against the CPU EP on QDQ models; and their --quick sets.
HOST_BENCH_TFLITE_MODELS = ("mobilenet_v2_100_224", "resnet50_224", "mobilenet_v1_025_128")
HOST_BENCH_ONNX_MODELS = ("squeezenet_224", "resnet50_224", "inception_v2_224")
HOST_BENCH_QUICK_TFLITE_MODELS = ("mobilenet_v1_025_128",)
HOST_BENCH_QUICK_ONNX_MODELS = ("digits_cnn",)
# ``nacc bench --int16``: the 16x8 models against BUILTIN_REF (issue: the data forms).
BENCH_INT16_MODELS = ("ds_cnn_kws_16x8", "mobilenet_v2_035_96_16x8")


def _key(name: str) -> str:
    import tensorflow as tf

    build, _, calibration = MODELS[name]
    h = hashlib.sha256(f"{_FORMAT}|{tf.__version__}|{name}".encode())
    deps = [build, calibration, _settle, _calibration]
    if build in _APPLICATIONS:
        deps.append(_application)
    if name == "digits_cnn":
        deps = [digits_cnn, digits_split, _digits_calibration]
    elif name == "mobilenet_v2_100_224":
        deps.append(mobilenet_v2)
    for o in deps:
        h.update(inspect.getsource(o).encode())
    return h.hexdigest()[:12]


def model_path(name: str, float_io: bool = False, cache: Optional[str] = None) -> str:
    """Path of the cached int8 TFLite model `name` (int8 or float32 inputs and
    outputs; a 16x8 model of INT16X8_MODELS: int16 or float32), converting it first when it is not cached. `cache` overrides
    :func:`cache_dir`. Raises KeyError for an unknown name."""
    if name not in MODELS:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(sorted(MODELS))}")
    directory = cache or cache_dir()
    io = "f32io" if float_io else "i16io" if name in INT16X8_MODELS else "i8io"
    path = os.path.join(directory, f"{name}-{io}-{_key(name)}.tflite")
    if os.path.exists(path):
        return path
    _store(path, _convert(name, float_io))
    return path


def _store(path: str, blob: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + f".tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(blob)
    os.replace(tmp, path)


def converted(name: str, float_io: bool = False, cache: Optional[str] = None) -> bytes:
    """The int8 TFLite model `name` as bytes (see :func:`model_path`)."""
    with open(model_path(name, float_io, cache), "rb") as f:
        return f.read()


def _keras_with_batch1(name: str):
    """The Keras model behind a static batch-1 input (constant RESHAPE shapes)."""
    import keras

    build, shape, _ = MODELS[name]
    model = build()
    inp = keras.Input(shape, batch_size=1)
    return keras.Model(inp, model(inp))


def _convert(name: str, float_io: bool) -> bytes:
    import tensorflow as tf

    _, shape, calibration = MODELS[name]
    data = calibration(shape)

    def representative():
        for i in range(len(data)):
            yield [data[i:i + 1]]

    conv = tf.lite.TFLiteConverter.from_keras_model(_keras_with_batch1(name))
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = representative
    if name in INT16X8_MODELS:
        conv.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
        io_type = tf.int16
    else:
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        io_type = tf.int8
    if not float_io:
        conv.inference_input_type = io_type
        conv.inference_output_type = io_type
    return conv.convert()


def onnx_model_path(name: str, cache: Optional[str] = None) -> str:
    """Path of the cached QDQ ONNX counterpart of `name` (float32 input and
    output, int8 inside), converting it first when it is not cached. KeyError
    for an unknown name, ValueError for a 16x8 model (TFLite only)."""
    if name not in MODELS:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(sorted(MODELS))}")
    if name in INT16X8_MODELS:
        raise ValueError(f"model {name!r} is a TFLite 16x8 model; it has no ONNX counterpart "
                         f"(use {INT16X8_MODELS[name]!r})")
    path = os.path.join(cache or cache_dir(), f"{name}-qdq-{_key(name)}.onnx")
    if not os.path.exists(path):
        _store(path, _convert_onnx(name))
    return path


def onnx_model(name: str, cache: Optional[str] = None) -> bytes:
    """The QDQ ONNX model `name` as bytes (see :func:`onnx_model_path`)."""
    with open(onnx_model_path(name, cache), "rb") as f:
        return f.read()


def _convert_onnx(name: str) -> bytes:
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
    return q.SerializeToString()


def model_bytes(name: str, kind: str, cache: Optional[str] = None) -> bytes:
    """Model `name` as int8-I/O TFLite (`kind` "tflite") or QDQ ONNX ("onnx")."""
    if kind == "tflite":
        return converted(name, cache=cache)
    if kind == "onnx":
        return onnx_model(name, cache=cache)
    raise ValueError(f"model kind {kind!r} is not 'tflite' or 'onnx'")


# ---- the one-op model of the per-invoke overhead measurement ------------------------------

ADD_MODEL_SHAPE = (1, 1, 1, 8)


def _add_function():
    """Two float inputs of ADD_MODEL_SHAPE, one tf.add (a Keras Add layer would
    insert a RESHAPE of one operand)."""
    import tensorflow as tf

    spec = tf.TensorSpec(ADD_MODEL_SHAPE, tf.float32)

    @tf.function(input_signature=[spec, spec])
    def add(a, b):
        return tf.add(a, b)

    return add


def add_model_path(cache: Optional[str] = None) -> str:
    """Path of the cached int8-I/O TFLite model of one ADD of two 1x1x1x8 int8
    tensors (the fixed per-invoke overhead of nacc.host_bench), converted with
    a representative dataset on first use."""
    import tensorflow as tf

    h = hashlib.sha256(f"{_FORMAT}|{tf.__version__}|add".encode())
    for o in (_add_function, add_model_path):
        h.update(inspect.getsource(o).encode())
    path = os.path.join(cache or cache_dir(), f"add_1x1x1x8-i8io-{h.hexdigest()[:12]}.tflite")
    if os.path.exists(path):
        return path
    rng = np.random.default_rng(0)
    data = rng.uniform(-1.0, 1.0, (CALIBRATION_SAMPLES, 2, *ADD_MODEL_SHAPE)).astype(np.float32)

    def representative():
        for sample in data:
            yield [sample[0], sample[1]]

    fn = _add_function()
    conv = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = representative
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    _store(path, conv.convert())
    return path

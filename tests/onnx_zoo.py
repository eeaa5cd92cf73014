"""Small ONNX architectures in the style of the model zoo's classifiers, for
whole-model exactness of the NACC EP against ORT's CPU EP (issue 14).

Each builder returns a float32 onnx.ModelProto with random seeded weights
(NCHW, batch 1); `quantized(name)` runs quantize_static (QDQ, int8 by
default) on seeded calibration data. Batch normalisation is written as the
per-channel Mul and Add ([1, C, 1, 1] constants) it becomes after folding,
so the element-wise broadcasts appear as in exported models.
"""
from __future__ import annotations

import numpy as np
from onnx import helper

import onnx_models as om


class _G:
    """A tiny graph writer: nodes, initializers, unique names."""

    def __init__(self, seed=100):
        self.nodes, self.inits, self.n, self.seed = [], {}, 0, seed

    def name(self, p):
        self.n += 1
        return f"{p}{self.n}"

    def w(self, shape, scale=None):
        self.seed += 1
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        s = scale if scale is not None else float(np.sqrt(2.0 / fan_in))
        k = self.name("w")
        self.inits[k] = om.rng_weights(shape, self.seed, s)
        return k

    def op(self, op_type, ins, **attrs):
        out = self.name(op_type.lower() + "_")
        self.nodes.append(helper.make_node(op_type, ins, [out], name=out, **attrs))
        return out

    def conv(self, x, c_in, c_out, k=3, stride=1, pad=None, group=1, relu=True):
        pad = k // 2 if pad is None else pad
        y = self.op("Conv", [x, self.w((c_out, c_in // group, k, k)), self.w((c_out,), 0.1)],
                    kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4, group=group)
        return self.op("Relu", [y]) if relu else y

    def bn(self, x, c):
        """A folded batch norm: x * scale[c] + shift[c]."""
        self.seed += 1
        rng = np.random.default_rng(self.seed)
        s, b = self.name("bn_s"), self.name("bn_b")
        self.inits[s] = rng.uniform(0.5, 1.5, (1, c, 1, 1)).astype(np.float32)
        self.inits[b] = rng.uniform(-0.3, 0.3, (1, c, 1, 1)).astype(np.float32)
        return self.op("Add", [self.op("Mul", [x, s]), b])

    def head(self, x, c, classes=10):
        g = self.op("GlobalAveragePool", [x])
        f = self.op("Flatten", [g], axis=1)
        return self.op("Gemm", [f, self.w((classes, c), 0.2), self.w((classes,), 0.1)], transB=1)

    def model(self, x_shape, y, y_shape, name):
        self.nodes[-1].output[0] = "y"
        for n in self.nodes:  # rename the final output everywhere
            for i, v in enumerate(n.input):
                if v == y:
                    n.input[i] = "y"
        return om.float_model(self.nodes, {"x": x_shape}, {"y": y_shape}, self.inits, name=name)


def squeezenet(hw=32, classes=10):
    """conv s2 - maxpool 3x3 s2 - fire x2 - maxpool - fire - conv 1x1 - GAP
    (SqueezeNet 1.1's shape: fire = squeeze 1x1, concat(expand 1x1, expand 3x3))."""
    g = _G(200)

    def fire(x, c_in, s, e):
        sq = g.conv(x, c_in, s, k=1)
        return g.op("Concat", [g.conv(sq, s, e, k=1), g.conv(sq, s, e, k=3)], axis=1)

    x = g.conv("x", 3, 16, k=3, stride=2, pad=1)
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1])
    x = fire(x, 16, 8, 16)
    x = fire(x, 32, 8, 16)
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1])
    x = fire(x, 32, 12, 24)
    x = g.conv(x, 48, classes, k=1)
    y = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    return g.model((1, 3, hw, hw), y, (1, classes), "squeezenet_style")


def resnet(hw=32, classes=10, c=16):
    """conv - basic block - downsampling block (1x1 s2 shortcut) - GAP - FC."""
    g = _G(300)
    x = g.conv("x", 3, c)

    def block(x, c_in, c_out, stride):
        y = g.conv(x, c_in, c_out, stride=stride)
        y = g.conv(y, c_out, c_out, relu=False)
        short = x if stride == 1 and c_in == c_out else g.conv(x, c_in, c_out, k=1, stride=stride,
                                                               pad=0, relu=False)
        return g.op("Relu", [g.op("Add", [y, short])])

    x = block(x, c, c, 1)
    x = block(x, c, 2 * c, 2)
    y = g.head(x, 2 * c, classes)
    return g.model((1, 3, hw, hw), y, (1, classes), "resnet_style")


def inception(hw=24, classes=10):
    """conv - maxpool - inception block (1x1; 1x1-3x3; 1x1-5x5; maxpool 3x3 s1-1x1;
    concat) - avgpool 2x2 s2 - inception block - GAP - FC."""
    g = _G(400)
    x = g.conv("x", 3, 16, stride=2)
    x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])

    def block(x, c_in, b):
        p = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
        return g.op("Concat", [g.conv(x, c_in, b, k=1),
                               g.conv(g.conv(x, c_in, b, k=1), b, b, k=3),
                               g.conv(g.conv(x, c_in, b // 2, k=1), b // 2, b // 2, k=5),
                               g.conv(p, c_in, b // 2, k=1)], axis=1)

    x = block(x, 16, 8)                  # 8 + 8 + 4 + 4 = 24 channels
    x = g.op("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = block(x, 24, 16)                 # 48 channels
    y = g.head(x, 48, classes)
    return g.model((1, 3, hw, hw), y, (1, classes), "inception_style")


def densenet(hw=16, classes=10, growth=8):
    """conv - dense block (BN-ReLU-1x1-ReLU-3x3, concat) x2 - transition
    (BN-ReLU-1x1, avgpool 2x2 s2) - dense block - BN-ReLU - GAP - FC."""
    g = _G(500)
    c = 16
    x = g.conv("x", 3, c, relu=False)

    def layer(x, c):
        y = g.op("Relu", [g.bn(x, c)])
        y = g.conv(y, c, 2 * growth, k=1)
        y = g.conv(y, 2 * growth, growth, k=3, relu=False)
        return g.op("Concat", [x, y], axis=1), c + growth

    for _ in range(2):
        x, c = layer(x, c)
    x = g.conv(g.op("Relu", [g.bn(x, c)]), c, c // 2, k=1, relu=False)
    c //= 2
    x = g.op("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x, c = layer(x, c)
    x = g.op("Relu", [g.bn(x, c)])
    y = g.head(x, c, classes)
    return g.model((1, 3, hw, hw), y, (1, classes), "densenet_style")


def shufflenet(hw=32, classes=10, groups=2):
    """conv s2 - maxpool - shuffle unit (grouped 1x1, channel shuffle
    Reshape-Transpose-Reshape, depthwise 3x3 s2, grouped 1x1, concat with
    avgpool 2x2 s2 of the input) - shuffle unit (stride 1, Add) - GAP - FC."""
    g = _G(600)
    x = g.conv("x", 3, 24, stride=2)
    x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    h = hw // 4
    shape_in = g.name("shape")

    def shuffle(y, c, h):
        s1, s2 = g.name("shape"), g.name("shape")
        g.inits[s1] = np.array([1, groups, c // groups, h, h], np.int64)
        g.inits[s2] = np.array([1, c, h, h], np.int64)
        t = g.op("Transpose", [g.op("Reshape", [y, s1])], perm=[0, 2, 1, 3, 4])
        return g.op("Reshape", [t, s2])

    del shape_in
    # stride-2 unit: 24 -> 24 + 24 channels, h -> h / 2
    y = g.conv(x, 24, 24, k=1, pad=0, group=groups)
    y = shuffle(y, 24, h)
    y = g.conv(y, 24, 24, k=3, stride=2, group=24, relu=False)
    y = g.conv(y, 24, 24, k=1, pad=0, group=groups, relu=False)
    x = g.op("Relu", [g.op("Concat", [g.op("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2]),
                                      y], axis=1)])
    h //= 2
    # stride-1 unit: residual Add
    y = g.conv(x, 48, 48, k=1, pad=0, group=groups)
    y = shuffle(y, 48, h)
    y = g.conv(y, 48, 48, k=3, group=48, relu=False)
    y = g.conv(y, 48, 48, k=1, pad=0, group=groups, relu=False)
    x = g.op("Relu", [g.op("Add", [x, y])])
    y = g.head(x, 48, classes)
    return g.model((1, 3, hw, hw), y, (1, classes), "shufflenet_style")


def vgg(hw=16, classes=10, reshape=False):
    """conv - conv - maxpool - conv - maxpool - Flatten of the [1, 32, 4, 4]
    map - Gemm - ReLU - Gemm (VGG / AlexNet's classifier on an un-pooled map;
    reshape=True writes the flatten as Reshape(x, [1, -1]), as exporters do)."""
    g = _G(700)
    x = g.conv("x", 3, 16)
    x = g.conv(x, 16, 16)
    x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = g.conv(x, 16, 32)
    x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    k = 32 * (hw // 4) ** 2
    if reshape:
        s = g.name("shape")
        g.inits[s] = np.array([1, -1], np.int64)
        f = g.op("Reshape", [x, s])
    else:
        f = g.op("Flatten", [x], axis=1)
    f = g.op("Relu", [g.op("Gemm", [f, g.w((32, k), 0.05), g.w((32,), 0.1)], transB=1)])
    y = g.op("Gemm", [f, g.w((classes, 32), 0.2), g.w((classes,), 0.1)], transB=1)
    return g.model((1, 3, hw, hw), y, (1, classes), "vgg_style")


def alexnet(hw=16, classes=10):
    """vgg with the flatten written as Reshape(x, [1, -1])."""
    return vgg(hw, classes, reshape=True)


ARCHS = {"squeezenet": squeezenet, "resnet": resnet, "inception": inception,
         "densenet": densenet, "shufflenet": shufflenet, "vgg": vgg, "alexnet": alexnet}


def quantized(name, activation="int8", per_channel=False, reduce_range=False, **kw) -> bytes:
    m = ARCHS[name](**kw)
    return om.quantize(m, activation=activation, weight="int8", per_channel=per_channel,
                       reduce_range=reduce_range, calib=om.calibration(m, n=8, seed=7))

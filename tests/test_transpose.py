"""TFLite TRANSPOSE (issue 15, item 8) as DMA copy passes, bit-exact against
TFLite 2.21 BUILTIN_REF (a byte copy): docs/compiler.md "TRANSPOSE". The
output's loops (size-1 axes dropped, contiguous neighbours merged) become a
run of bytes contiguous in both tensors (the channels of an H/W swap), a
pass's pixels and rows through the DMA pitches, and one pass per index of the
loops outside.

Every permutation of a rank-4 one-image tensor, rank-2 and rank-3 ones, at
1/8/32 cores and 16 KB; the declines (a batch of images, more than 256
passes) with their reasons; TRANSPOSE between convolutions in one partition.
"""
import itertools

import numpy as np
import pytest

from delegate_models import ModelBuilder
from test_mean_avgpool import CONFIG_IDS, CONFIGS, assert_exact
from tflite_builder import GraphBuilder, QTensor


def transpose_model(in_shape, perm, version=2):
    g = GraphBuilder()
    x = g.add_tensor(QTensor(tuple(in_shape), "int8", scale=0.05, zero_point=-3))
    p = g.add_tensor(QTensor((len(perm),), "int32", data=np.array(perm, np.int32)))
    o = g.add_tensor(QTensor(tuple(in_shape[i] for i in perm), "int8", scale=0.05, zero_point=-3))
    g.add_op("TRANSPOSE", [x, p], [o], version=version)
    return g.build([x], [o])


RANK4 = [p for p in itertools.permutations(range(4)) if p != (0, 1, 2, 3)]


@pytest.mark.parametrize("perm", RANK4, ids=["".join(map(str, p)) for p in RANK4])
def test_transpose_rank4_every_perm_exact(perm):
    """Every permutation whose output leads with 1 (one image)."""
    shape = [1, 5, 7, 6]
    shape[perm[0]] = 1
    shape = tuple(shape)
    report = assert_exact(transpose_model(shape, perm), shape)
    assert [n.op for n in report.nodes] == ["TRANSPOSE"]


CASES = [
    ("hw-swap", (1, 9, 13, 24), (0, 2, 1, 3)),
    ("nhwc-to-nchw", (1, 6, 7, 40), (0, 3, 1, 2)),
    ("nchw-to-nhwc", (1, 40, 6, 7), (0, 2, 3, 1)),
    ("rank3-swap-last", (8, 17, 5), (0, 2, 1)),
    ("rank3-rotate", (4, 6, 70), (2, 0, 1)),
    ("rank2", (33, 70), (1, 0)),
    ("hw-swap-c1", (1, 20, 30, 1), (0, 2, 1, 3)),
]


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_transpose_exact(case, config):
    _, shape, perm = case
    report = assert_exact(transpose_model(shape, perm), shape, **config)
    assert [n.op for n in report.nodes] == ["TRANSPOSE"]


@pytest.mark.parametrize("name,shape,perm,why", [
    ("batch", (2, 4, 4, 8), (0, 2, 1, 3), "a batch of 2"),
    ("output-batch", (1, 3, 4, 5), (1, 0, 2, 3), "of 3 images"),
    ("too-many-passes", (300, 400), (1, 0), "300 copy passes"),
])
def test_transpose_declined_with_reason(name, shape, perm, why):
    report = assert_exact(transpose_model(shape, perm), shape, expect_claimed=False)
    (node,) = report.nodes
    assert not node.claimed
    assert any(r.rule == "transpose_copy" and why in r.message for r in node.reasons), [
        r.message for r in node.reasons]


def test_transpose_between_convolutions_one_partition():
    """conv -> TRANSPOSE(0,2,1,3) -> conv: one partition, bit-exact."""
    m = ModelBuilder()
    x = m.input((1, 8, 12, 8))
    y = m.conv(x, 16, activation="RELU")
    p = m.tensor(QTensor((4,), "int32", data=np.array([0, 2, 1, 3], np.int32)))
    t = m.meta[y]
    o = m.tensor(QTensor((1, 12, 8, 16), "int8", scale=t.scale, zero_point=t.zero_point))
    m.g.add_op("TRANSPOSE", [y, p], [o], version=2)
    z = m.conv(o, 8, activation="NONE")
    report = assert_exact(m.build([z]), (1, 8, 12, 8))
    assert len({n.partition for n in report.nodes}) == 1


def shuffle_model(h, w, c, g):
    """conv -> RESHAPE [1,H,W,g,C/g] -> TRANSPOSE(0,1,2,4,3) -> RESHAPE [1,H,W,C]
    -> conv: the channel shuffle of ShuffleNet as the TFLite converter writes it."""
    m = ModelBuilder()
    x = m.input((1, h, w, 8))
    y = m.conv(x, c, activation="RELU")
    t = m.meta[y]
    q = dict(scale=t.scale, zero_point=t.zero_point)
    s5 = m.tensor(QTensor((5,), "int32", data=np.array([1, h, w, g, c // g], np.int32)))
    r5 = m.tensor(QTensor((1, h, w, g, c // g), "int8", **q))
    m.g.add_op("RESHAPE", [y, s5], [r5], dict(new_shape=[1, h, w, g, c // g]))
    p = m.tensor(QTensor((5,), "int32", data=np.array([0, 1, 2, 4, 3], np.int32)))
    t5 = m.tensor(QTensor((1, h, w, c // g, g), "int8", **q))
    m.g.add_op("TRANSPOSE", [r5, p], [t5], version=4)
    s4 = m.tensor(QTensor((4,), "int32", data=np.array([1, h, w, c], np.int32)))
    r4 = m.tensor(QTensor((1, h, w, c), "int8", **q))
    m.g.add_op("RESHAPE", [t5, s4], [r4], dict(new_shape=[1, h, w, c]))
    z = m.conv(r4, 8, activation="NONE")
    return m.build([z])


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("h,w,c,g", [(6, 7, 24, 3), (8, 8, 32, 2), (5, 9, 64, 4)])
def test_channel_shuffle_rank5_one_partition(h, w, c, g, config):
    """The rank-5 RESHAPE / TRANSPOSE pair (RESHAPE and TRANSPOSE take ranks
    up to 6): every node claimed, one partition, bit-exact."""
    report = assert_exact(shuffle_model(h, w, c, g), (1, h, w, 8), **config)
    assert [n.op for n in report.nodes] == ["CONV_2D", "RESHAPE", "TRANSPOSE", "RESHAPE", "CONV_2D"]
    assert len({n.partition for n in report.nodes}) == 1

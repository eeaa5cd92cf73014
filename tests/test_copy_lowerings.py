"""The copy lowerings of compiler/lower.h (lower_slice, lower_resize_nearest,
lower_space_depth) compiled from IR graphs and run on the simulated device,
against numpy indexing: every output byte is the input byte the op's
definition names (TFLite's int8 kernels for these ops are byte copies; the
differential tests against BUILTIN_REF are tests/test_slice_split.py and
tests/test_resize_space_depth.py). Random shapes, windows, strides, factors
and block sizes at 1, 8 and 32 cores and at 16 KB of SRAM (tiles of a few
rows)."""
import numpy as np
import pytest

import ir_builders as b
from nacc import _core

CONFIGS = [(1, 64), (8, 64), (32, 64), (4, 16)]
_RUNTIMES: dict = {}


def _run(g, x, cores, kb):
    if (cores, kb) not in _RUNTIMES:
        _RUNTIMES[(cores, kb)] = _core.Runtime(cores=cores, sram_kb=kb)
    prog = _core.compile(g, cores=cores, sram_kb=kb)
    outs, _ = _RUNTIMES[(cores, kb)].run(prog, [x])
    return [np.asarray(o) for o in outs]


def _check(g, x, want):
    for cores, kb in CONFIGS:
        for got, w in zip(_run(g, x, cores, kb), want):
            got = got.reshape(w.shape)
            bad = np.argwhere(got != w)
            assert not len(bad), (cores, kb, len(bad), tuple(bad[0]))


def _space_to_depth(x, bs):
    n, h, w, c = x.shape
    return (x.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
            .reshape(n, h // bs, w // bs, bs * bs * c))


def _depth_to_space(x, bs):
    n, h, w, c = x.shape
    co = c // (bs * bs)
    return (x.reshape(n, h, w, bs, bs, co).transpose(0, 1, 3, 2, 4, 5)
            .reshape(n, h * bs, w * bs, co))


@pytest.mark.parametrize("seed", range(4))
def test_random_slices(seed):
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(2, 5))
    shape = [int(v) for v in rng.integers(1, 24, rank)]
    if rank == 4:
        shape[0] = int(rng.integers(1, 3))
    strides = [int(rng.integers(1, 4)) for _ in shape]
    strides[-1] = 1
    begins, sizes = [], []
    for _ in range(int(rng.integers(1, 4))):
        bg = [int(rng.integers(0, d)) for d in shape]
        sz = [int(rng.integers(1, (d - bb - 1) // s + 2)) for d, bb, s in zip(shape, bg, strides)]
        if rank == 4:
            sz[0] = 1
        begins.append(tuple(bg))
        sizes.append(tuple(sz))
    g, _ = b.slice_op(in_shape=tuple(shape), begins=begins, sizes=sizes, strides=tuple(strides))
    x = rng.integers(-128, 128, shape, dtype=np.int8)
    want = [x[tuple(slice(bb, bb + (n - 1) * s + 1, s) for bb, n, s in zip(bg, sz, strides))]
            for bg, sz in zip(begins, sizes)]
    _check(g, x, want)


@pytest.mark.parametrize("seed", range(4))
def test_random_resizes(seed):
    rng = np.random.default_rng(100 + seed)
    h, w, c = (int(v) for v in rng.integers(1, 20, 3))
    fh, fw = (int(v) for v in rng.integers(1, 5, 2))
    g, _ = b.resize_nearest(in_shape=(1, h, w, c), out_hw=(h * fh, w * fw),
                            half_pixel_centers=bool(seed % 2))
    x = rng.integers(-128, 128, (1, h, w, c), dtype=np.int8)
    _check(g, x, [np.repeat(np.repeat(x, fh, axis=1), fw, axis=2)])


@pytest.mark.parametrize("seed", range(4))
def test_random_space_depth(seed):
    rng = np.random.default_rng(200 + seed)
    bs = int(rng.integers(2, 5))
    h, w, c = (int(v) for v in rng.integers(1, 10, 3))
    g, _ = b.space_depth("SPACE_TO_DEPTH", in_shape=(1, h * bs, w * bs, c), block=bs)
    x = rng.integers(-128, 128, (1, h * bs, w * bs, c), dtype=np.int8)
    _check(g, x, [_space_to_depth(x, bs)])
    g, _ = b.space_depth("DEPTH_TO_SPACE", in_shape=(1, h, w, c * bs * bs), block=bs)
    x = rng.integers(-128, 128, (1, h, w, c * bs * bs), dtype=np.int8)
    _check(g, x, [_depth_to_space(x, bs)])


def test_compile_declines_what_the_rules_decline():
    g, _ = b.slice_op(begins=((0, 0, 0, 0),), sizes=((1, 8, 8, 8),), strides=(1, 1, 1, 2))
    with pytest.raises(_core.UnsupportedError, match="channel stride 2"):
        _core.compile(g)
    g, _ = b.resize_nearest(in_shape=(1, 3, 3, 8), out_hw=(9, 9), align_corners=True)
    with pytest.raises(_core.UnsupportedError, match="align_corners"):
        _core.compile(g)

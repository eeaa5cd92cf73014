"""Every ISA path's output stage against the reference loops over the whole
requantization range the units accept: per-channel multipliers in [0, 2^31)
and shifts in [-31, 31] (exponent 0, left shifts whose accumulator shift wraps,
the deepest right shifts), for the convolution GEMM (pointwise and 3x3), the
depthwise unit (stride 1 and 2, a channel tail past the 32-channel blocks of
the AVX-512 path) and the fully connected GEMM. The reference loops are
themselves checked against TFLite in test_unit_conv / _depthwise /
_fully_connected; here the fast paths' rounding division and epilogues meet
stage values no real model produces (reduced case count: three seeds)."""
from __future__ import annotations

import numpy as np
import pytest

from nacc import _core
from unit_check import PATHS, assert_same, run_path

FAST_PATHS = [p for p in PATHS if p != "reference"]


def _stage(rng, channels):
    mult = rng.integers(1 << 30, (1 << 31) - 1, channels, dtype=np.int64)
    mult[:3] = [0, (1 << 31) - 1, 1 << 30]
    # Mostly shifts that keep outputs inside int8 (a bias of up to 2^20), plus the extremes.
    shift = rng.integers(-24, 2, channels)
    shift[3:10] = [0, 0, -1, 1, -31, 31, 5]
    rng.shuffle(shift)
    return mult.astype(np.int32), shift.astype(np.int32)


def _check(fn, what):
    expected = run_path("reference", fn)
    # Not a stage that saturates everything: most values lie inside the int8 range.
    assert np.mean((expected > -128) & (expected < 127)) > 0.25, what
    for path in FAST_PATHS:
        assert_same(expected, run_path(path, fn), f"{what} [{path} path]")


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kernel", [1, 3])
def test_conv_stage_range(seed, kernel):
    rng = np.random.default_rng(100 + seed)
    cin, cout = 20, 40
    x = rng.integers(-128, 128, (1, 9, 11, cin), dtype=np.int8)
    f = rng.integers(-127, 128, (cout, kernel, kernel, cin), dtype=np.int8)
    b = rng.integers(-(1 << 20), 1 << 20, cout).astype(np.int32)
    mult, shift = _stage(rng, cout)
    pad = (kernel // 2,) * 4

    def run():
        return _core.conv2d(x, f, b, mult, shift, padding=pad, input_zero_point=-5,
                            output_zero_point=3)

    _check(run, f"conv2d k{kernel} seed {seed}")


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_stage_range(seed, stride):
    rng = np.random.default_rng(200 + seed)
    c = 40
    x = rng.integers(-128, 128, (1, 10, 13, c), dtype=np.int8)
    f = rng.integers(-127, 128, (1, 3, 3, c), dtype=np.int8)
    b = rng.integers(-(1 << 20), 1 << 20, c).astype(np.int32)
    mult, shift = _stage(rng, c)

    def run():
        return _core.depthwise_conv2d(x, f, b, mult, shift, stride=(stride, stride),
                                      padding=(1, 1, 1, 1), depth_multiplier=1,
                                      input_zero_point=7, output_zero_point=-2)

    _check(run, f"depthwise s{stride} seed {seed}")


@pytest.mark.parametrize("seed", range(3))
def test_fully_connected_stage_range(seed):
    rng = np.random.default_rng(300 + seed)
    k, n = 52, 40
    x = rng.integers(-128, 128, (9, k), dtype=np.int8)
    w = rng.integers(-127, 128, (n, k), dtype=np.int8)
    b = rng.integers(-(1 << 20), 1 << 20, n).astype(np.int32)
    mult, shift = _stage(rng, n)

    def run():
        return _core.fully_connected(x, w, b, mult, shift, input_zero_point=-9,
                                     output_zero_point=1)

    _check(run, f"fully_connected seed {seed}")


@pytest.mark.parametrize("cin,kernel,stride,pad", [
    (3, 3, 2, (0, 1, 0, 1)),  # the first layer of an image network (TFLite SAME, stride 2)
    (3, 3, 1, (1, 1, 1, 1)),
    (2, 3, 1, (1, 1, 1, 1)),  # 6-byte filter rows: interior rows with 16-byte stores
    (4, 4, 2, (1, 2, 1, 2)),  # 16 bytes, K = 64 with no tail
    (7, 5, 2, (2, 2, 2, 2)),
    (21, 3, 1, (0, 2, 3, 0)),  # 63 bytes per filter row, padding only on some sides
    (32, 2, 1, (1, 0, 0, 1)),  # exactly 64 bytes
    (33, 2, 1, (1, 1, 1, 1)),  # 66: the general im2col
])
def test_conv_short_filter_rows(cin, kernel, stride, pad):
    """Convolutions whose filter rows (kernel_w x C_in bytes) fit one 64-byte
    vector: the AVX-512 im2col with masked loads, padding and the panel's K tail
    (up to 16 bytes: unmasked overlapping stores on interior rows)."""
    rng = np.random.default_rng(cin * 100 + kernel)
    cout = 24
    x = rng.integers(-128, 128, (1, 13, 11, cin), dtype=np.int8)
    f = rng.integers(-127, 128, (cout, kernel, kernel, cin), dtype=np.int8)
    b = rng.integers(-5000, 5000, cout).astype(np.int32)
    mult = np.full(cout, 1 << 30, np.int32)
    shift = np.full(cout, -7, np.int32)

    def run():
        return _core.conv2d(x, f, b, mult, shift, stride=(stride, stride), padding=pad,
                            input_zero_point=11, output_zero_point=-4)

    _check(run, f"conv2d cin {cin} k{kernel} s{stride} pad {pad}")


@pytest.mark.parametrize("m,k,n", [(1, 1280, 1000), (1, 7, 12), (3, 52, 65), (31, 100, 40)])
def test_fully_connected_prepacked_rows(m, k, n):
    """Fewer rows than the GEMM's pack threshold with the weights packed once (the
    device plan's form): the AVX-512 VNNI GEMV on the packed weights, every path."""
    rng = np.random.default_rng(m * 7 + k)
    x = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-127, 128, (n, k), dtype=np.int8)
    b = rng.integers(-(1 << 16), 1 << 16, n).astype(np.int32)
    mult, shift = _stage(rng, n)
    shift = np.clip(shift, -16, -4).astype(np.int32)

    def run(prepacked):
        return _core.fully_connected(x, w, b, mult, shift, input_zero_point=-9,
                                     output_zero_point=1, prepacked=prepacked)

    expected = run_path("reference", lambda: run(False))
    for path in PATHS:
        assert_same(expected, run_path(path, lambda: run(True)), f"fc {m}x{k}->{n} [{path}]")
    assert np.mean((expected > -128) & (expected < 127)) > 0.25


def _fused_stage(rng, f, small):
    """Bias, multiplier and shift of five 16-channel groups whose exponents all
    lie in [1, 23] (the AVX-512 GEMM's fused epilogue); `f` [..., C] gets small
    weights in the first group so that its rounding ties stay inside int8."""
    f[..., :16] = rng.integers(-1, 2, f[..., :16].shape)
    big = (1 << 31) - small  # |x - zp| w summed over the filter stays below `small`
    b = np.concatenate([
        rng.integers(-256, 256, 16),                       # e 1..3, m 2^30: ties
        rng.integers(-big, big, 16),                       # e 21..23, int32 extremes
        rng.integers(-(1 << 24), 1 << 24, 16),             # e and m random
        np.array([-big, big, -big + 1, big - 1] * 4),      # e 23 at the extremes
        rng.integers(-(1 << 14), 1 << 14, 16)]).astype(np.int64)
    mult = np.concatenate([
        np.full(16, 1 << 30), rng.integers(1 << 28, 1 << 30, 16),
        rng.integers(0, (1 << 31) - 1, 16), (1 << 29) + rng.integers(0, 1 << 20, 16),
        np.array([0, 1, (1 << 31) - 1, 1 << 30] * 4)]).astype(np.int64)
    shift = np.concatenate([
        -rng.integers(1, 4, 16), -rng.integers(21, 24, 16), -rng.integers(1, 24, 16),
        np.full(16, -23), -rng.integers(1, 6, 16)])
    return b.astype(np.int32), mult.astype(np.int32), shift.astype(np.int32)


FUSED_CASES = [(0, (-128, 127)), (-128, (-128, 127)), (127, (-128, 127)), (-128, (-128, 40)),
               (5, (-3, 127))]


def _check_fused(run, act, what):
    expected = run_path("reference", run)
    assert np.mean((expected > act[0]) & (expected < act[1])) > 0.25, what
    for path in FAST_PATHS:
        assert_same(expected, run_path(path, run), f"{what} [{path}]")


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("zp,act", FUSED_CASES)
def test_conv_fused_epilogue(seed, zp, act):
    """Blocks of 16 channels whose exponents all lie in [1, 23] without left
    shifts: the AVX-512 path's int64 epilogue (rounding fused into one shift,
    the zero point in the addend), with and without the activation clamp.
    Accumulators reach both ends of int32; exponents 1..3 with multiplier
    2^30 make rounding ties of both signs common, in even and odd lanes."""
    rng = np.random.default_rng(400 + seed)
    cin, cout = 4, 80  # five 16-channel blocks, the last one without a pair
    x = rng.integers(-128, 128, (1, 8, 9, cin), dtype=np.int8)  # 72 rows: 8-row tiles
    f = rng.integers(-127, 128, (cin, cout), dtype=np.int8)
    b, mult, shift = _fused_stage(rng, f, 1 << 18)
    f = np.ascontiguousarray(f.T.reshape(cout, 1, 1, cin))

    def run():
        return _core.conv2d(x, f, b, mult, shift, input_zero_point=-7, output_zero_point=zp,
                            act_min=act[0], act_max=act[1])

    _check_fused(run, act, f"conv fused epilogue zp {zp} act {act}")


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("zp,act", FUSED_CASES)
def test_depthwise_fused_epilogue(stride, zp, act):
    """The same stage through the depthwise unit (its AVX-512 path's int32
    rounding division for exponents >= 1; 32-channel blocks with permuted
    lanes, a 16-channel tail; 4-, 2- and 1-pixel steps)."""
    rng = np.random.default_rng(500 + stride)
    c = 80
    x = rng.integers(-128, 128, (1, 9, 15, c), dtype=np.int8)
    f = rng.integers(-127, 128, (1, 3, 3, c), dtype=np.int8)
    b, mult, shift = _fused_stage(rng, f, 1 << 19)

    def run():
        return _core.depthwise_conv2d(x, f, b, mult, shift, stride=(stride, stride),
                                      padding=(1, 1, 1, 1), depth_multiplier=1,
                                      input_zero_point=7, output_zero_point=zp,
                                      act_min=act[0], act_max=act[1])

    _check_fused(run, act, f"depthwise fused epilogue s{stride} zp {zp} act {act}")

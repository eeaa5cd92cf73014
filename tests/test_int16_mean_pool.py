"""16x8 MEAN over height and width and AVERAGE_POOL_2D of any window up to 15
(int16 activations, NACC_SPEC §9, issue 16) through the delegate, bit-exact
against TFLite 2.21 BUILTIN_REF at 1, 8 and 32 cores and 16 and 32 KB of SRAM.

TFLite's int16 MEAN (reduce.cc, reference_ops::QuantizedMeanOrSum) sums the
int16 values in int32 and requantizes with the 32-bit
MultiplyByQuantizedMultiplier, 1/N folded into the multiplier (the int8
formula with zero points 0); its int16 AVERAGE_POOL_2D divides the int32 sum of
the in-bounds cells rounding half away from zero. Both run as 16-bit depthwise
passes with unit weights and the 32-bit output stage (NACC_ACT_PARA.QUANT_MUL32,
docs/compiler.md "MEAN", "AVERAGE_POOL_2D"); the 16x8 stage (multiplier reduced
to 16 bits) would round differently."""
from __future__ import annotations

import numpy as np
import pytest

from nacc import _core
from delegate_models import ModelBuilder
from int16_models import (act16, compare, delegated, input16, int16_input, pool16,
                          random_input_sets)
from tflite_builder import QTensor, make_interpreter

CORES = (1, 8, 32)
SRAM_KB = (16, 32)


def mean16(m, x, keep_dims, out_scale):
    t = m.meta[x]
    ax = m.tensor(QTensor((2,), "int32", data=np.array([1, 2], np.int32)))
    c = t.shape[3]
    o = m.tensor(act16((1, 1, 1, c) if keep_dims else (1, c), out_scale))
    m.g.add_op("MEAN", [x, ax], [o], dict(keep_dims=keep_dims), version=3)
    return o


def boundary_sets(interp, seed):
    """Random sets (with the extremes), every value +-32767, every value -32768,
    and an alternating -32768 / 32767 pattern (sums on rounding ties)."""
    sets = random_input_sets(interp, seed)
    shape = interp.get_input_details()[0]["shape"]
    sets.append([np.full(shape, -32768, np.int16)])
    sets.append([np.where(np.indices(shape).sum(axis=0) % 2 == 0, -32768, 32767).astype(np.int16)])
    return sets


def check(model, cores, kb, seed):
    d, interp = delegated(model, cores=cores, sram_kb=kb)
    rep = d.report()
    assert all(n.claimed and not n.reasons for n in rep.nodes), [
        (n.op, [r.message for r in n.reasons]) for n in rep.nodes]
    bad = compare(model, interp, boundary_sets(interp, seed))
    assert not bad, bad


def random_mean_case(seed):
    rng = np.random.default_rng(12000 + seed)
    m = ModelBuilder(seed)
    h, w = int(rng.integers(1, 16)), int(rng.integers(1, 16))
    c = int(rng.choice([1, 3, 8, 17, 33, 64, 112]))
    si = float(np.float32(rng.choice([1.0 / 32768, 1e-3, 3e-4, 0.02])))
    # The same scale (the converter's usual MEAN) or another one, up to 8x apart.
    so = si if seed % 3 == 0 else float(np.float32(si * 2.0 ** rng.uniform(-3, 3)))
    x = input16(m, (1, h, w, c), si)
    o = mean16(m, x, bool(seed % 2), so)
    return m.build([o]), CORES[seed % 3], SRAM_KB[(seed // 3) % 2]


@pytest.mark.parametrize("seed", range(100))
def test_mean_16x8_exact(seed):
    check(*random_mean_case(seed), seed)


def random_avg_pool_case(seed):
    rng = np.random.default_rng(13000 + seed)
    m = ModelBuilder(seed)
    h, w = int(rng.integers(2, 20)), int(rng.integers(2, 20))
    c = int(rng.choice([1, 3, 8, 33, 64]))
    x = input16(m, (1, h, w, c), float(rng.choice([1.0 / 32768, 1e-3, 0.02])))
    k = int(rng.integers(1, min(13, h, w) + 1))
    if k == 2 and seed % 2 == 0 and min(h, w) >= 3:  # mostly not the pooling unit's 2x2
        k = 3
    stride = int(rng.integers(1, 5))
    padding = str(rng.choice(["SAME", "VALID"]))
    act = str(rng.choice(["NONE", "RELU", "RELU6"]))
    o = pool16(m, x, "AVERAGE_POOL_2D", k, stride, padding, act)
    return m.build([o]), CORES[seed % 3], SRAM_KB[(seed // 3) % 2]


@pytest.mark.parametrize("seed", range(100))
def test_average_pool_regions_16x8_exact(seed):
    check(*random_avg_pool_case(seed), seed)


def test_mean_16x8_then_fc_one_partition():
    """A global MEAN between a 16x8 depthwise and a 16x8 FULLY_CONNECTED (a
    classifier head): one partition, exact."""
    from int16_models import conv16, fc16

    m = ModelBuilder(5)
    x = input16(m, (1, 7, 7, 40), 1.0 / 4096)
    y = conv16(m, x, 0, depthwise=True, activation="RELU6")
    z = mean16(m, y, False, m.meta[y].scale)
    o = fc16(m, z, 10)
    model = m.build([o])
    for cores in CORES:
        d, interp = delegated(model, cores=cores, sram_kb=16)
        rep = d.report()
        assert all(n.claimed for n in rep.nodes)
        assert len({n.partition for n in rep.nodes}) == 1
        assert not compare(model, interp, boundary_sets(interp, cores))


def int16_sum_split(cells):
    """support/pool_regions.h int16_sum_split, transcribed: the largest group
    g <= 15 dividing the cells whose 2N / g partial sums form one window of at
    most 15 x 15 (rows as large as possible), or None."""
    for g in range(15, 1, -1):
        if cells % g:
            continue
        partials = 2 * (cells // g)
        for rows in range(15, 0, -1):
            if partials % rows == 0 and partials // rows <= 15:
                return g, cells // g, rows, partials // rows
    return None


# More than 15 rows or columns (no 16-bit window; the ones matrix product is
# 8-bit): (h, w) the split sum claims — the DS-CNN's 25x5, squares, the largest
# count (1575 = 105 x 15: g = 15, 2G = 210 = 15 x 14) — and those it declines:
# a prime count (no group), 106 x 15 = 1590 (one row past the largest: no g
# makes 2N / g a product of two factors <= 15), 32 x 32 (g = 8 at most: 256
# partial sums).
SPLIT_CLAIMED = [(25, 5), (16, 1), (16, 4), (49, 10), (5, 25), (105, 15), (30, 14), (1, 60),
                 (16, 16), (20, 20), (28, 28)]
SPLIT_DECLINED = [(17, 1), (19, 3), (106, 15), (32, 32), (61, 1)]


@pytest.mark.parametrize("hw", SPLIT_CLAIMED + SPLIT_DECLINED)
def test_split_table_matches_the_transcription(hw):
    h, w = hw
    assert (int16_sum_split(h * w) is not None) == (hw in SPLIT_CLAIMED), hw


def random_split_case(seed):
    """A MEAN with a side above 15 that the split sum claims: random (h, w),
    channels, scales; inputs with the int16 extremes."""
    rng = np.random.default_rng(14000 + seed)
    while True:
        h, w = int(rng.integers(16, 64)), int(rng.integers(1, 16))
        if seed % 2:
            h, w = w, h
        if int16_sum_split(h * w):
            break
    c = int(rng.choice([1, 3, 8, 17, 33, 64]))
    si = float(np.float32(rng.choice([1.0 / 32768, 1e-3, 3e-4, 0.02])))
    so = si if seed % 3 == 0 else float(np.float32(si * 2.0 ** rng.uniform(-3, 3)))
    m = ModelBuilder(seed)
    x = input16(m, (1, h, w, c), si)
    o = mean16(m, x, bool(seed % 4 < 2), so)
    return m.build([o]), CORES[seed % 3], SRAM_KB[(seed // 3) % 2]


@pytest.mark.parametrize("seed", range(100))
def test_mean_16x8_split_sum_exact(seed):
    """x = 64 hi + lo, the hi and lo summed in groups, the partial sums weighed
    64 and -1 in one window: TFLite's int32 sum exactly, requantized once."""
    check(*random_split_case(seed), seed)


@pytest.mark.parametrize("hw", [(25, 5), (105, 15), (16, 16)])
@pytest.mark.parametrize("cores", CORES)
def test_mean_16x8_split_sum_boundaries(hw, cores):
    """The DS-CNN's 25x5, the largest claimed count and a square, with 64
    channels, at 16 KB: every input +-32767 or -32768 (the largest sums),
    random and alternating extremes."""
    m = ModelBuilder(cores)
    x = input16(m, (1, *hw, 64), 1e-3)
    o = mean16(m, x, True, 1.7e-3)
    check(m.build([o]), cores, 16, cores)


@pytest.mark.parametrize("hw", SPLIT_DECLINED)
def test_mean_16x8_without_split_declined(hw):
    """No split: the rule names it and the host runs it exactly."""
    m = ModelBuilder(0)
    x = input16(m, (1, *hw, 8))
    o = mean16(m, x, True, m.meta[x].scale)
    model = m.build([o])
    d, interp = delegated(model)
    (node,) = d.report().nodes
    assert not node.claimed and [r.rule for r in node.reasons] == ["int16_form"], node.reasons
    assert f"int16 MEAN over {hw[0]}x{hw[1]}" in node.reasons[0].message
    assert not compare(model, interp, boundary_sets(interp, 0))


def _division_matches(n):
    mult, shift = _core.tflite_average_pool_division(n)
    sums = np.arange(-32768 * n, 32767 * n + 1, dtype=np.int64)
    got = _core.multiply_by_quantized_multiplier(sums.astype(np.int32), mult, shift)
    half = n // 2
    want = np.where(sums > 0, (sums + half) // n, -((-sums + half) // n))
    return np.array_equal(got.astype(np.int64), want)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 9, 12, 16, 25, 49, 64, 120, 169, 180, 181])
def test_average_pool_division_exact_for_int16_sums(n):
    """The division (m, s) of quant/tflite.h gives TFLite's rounded quotient
    for every int16 sum of n cells up to kMaxAveragePoolCells16 = 181."""
    assert _division_matches(n)


@pytest.mark.slow
def test_average_pool_division_exact_for_int16_sums_every_count():
    assert all(_division_matches(n) for n in range(1, 182))

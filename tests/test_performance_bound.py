"""The NACC_SPEC §8 per-op bound and its move-once minimum (docs/performance_model.md
§4): golden values for a few layers, each with the reason the number is right,
and on the simulated device the bound is a lower bound (cycles never below it,
DMA reads never below the move-once reads)."""
from __future__ import annotations

import numpy as np
import pytest

from nacc import _core
import ir_builders as irb


def record(graph, cores=1, **options):
    prog = _core.compile(graph, cores=cores, **options)
    (rec,) = _core.program_info(prog)["ops"]
    return prog, rec


def constants_bytes(rec, c_out, per_channel_words=2):
    """The constants of the move-once minimum: the weight blocks as stored, the
    int32 bias and the multipliers and shifts (4 bytes per channel each)."""
    return rec["weight_bytes_stored"] + 4 * c_out + 4 * per_channel_words * c_out


def conv(**kw):
    kind = kw.pop("kind", "CONV_2D")
    axis = 3 if kind == "DEPTHWISE_CONV_2D" else 0
    g, _ = irb.conv(kind, weights_axis=axis, **kw)
    return g


def test_strided_1x1_reads_a_quarter():
    """ResNet50's conv3_block1_0: 1x1 stride 2, 56x56x256 -> 28x28x512. Output
    (y, x) reads input (2y, 2x) only, so the windows cover rows 0, 2, .., 54 and
    the same columns: 28 x 28 x 256 = 200704 input bytes, a quarter of the
    802816 the tensor holds. OFM 28 x 28 x 512 = 401408. MAC cycles 28 x 28 x
    512 x ceil(256/64) = 1605632 on one core (1x1: im2col saves nothing); the
    bytes / 64 are far below, so the bound is compute: 1605632, /32 = 50176."""
    g = conv(in_hw=(56, 56), c_in=256, c_out=512, kernel=(1, 1), stride=(2, 2))
    _, r1 = record(g, 1)
    _, r32 = record(g, 32)
    assert r1["min_dma_bytes"] == 200704 + 401408 + constants_bytes(r1, 512)
    assert (r1["bound_cycles"], r32["bound_cycles"]) == (1605632, 50176)


def test_first_layer_judged_by_im2col_even_when_forced_direct():
    """MobileNetV2's first layer, 224x224x3 -> 112x112x32, 3x3 stride 2 SAME
    (padding 0 top/left, 1 bottom/right): windows start at rows 0, 2, .., 222
    and cover 0..223, so the whole 150528-byte input is read once. The bound
    is the cheapest lowering's: im2col, 12544 pixels x 32 x ceil(27/64) =
    401408 MAC cycles, whether the planner keeps it direct (3612672) or not."""
    g = conv(in_hw=(224, 224), c_in=3, c_out=32, kernel=(3, 3), stride=(2, 2), padding="SAME")
    _, direct = record(g, 1, conv_lowering="direct")
    _, auto = record(g, 1)
    assert direct["lowering"] == "direct"
    assert direct["bound_cycles"] == auto["bound_cycles"] == 401408
    assert direct["min_dma_bytes"] - direct["weight_bytes_stored"] == (
        auto["min_dma_bytes"] - auto["weight_bytes_stored"]) == 150528 + 401408 + 32 * 12


def test_depthwise_stride_2_valid_covers_every_row():
    """Depthwise 3x3 stride 2 VALID on 9x9x8 -> 4x4x8: windows rows 0-2, 2-4,
    4-6, 6-8 cover all nine, so IFM once = 9 x 9 x 8 = 648; OFM 128; MAC
    cycles 4 x 4 x ceil(8/64) x 9 = 144."""
    g = conv(kind="DEPTHWISE_CONV_2D", in_hw=(9, 9), c_in=8, kernel=(3, 3), stride=(2, 2))
    _, r = record(g, 1)
    assert r["min_dma_bytes"] == 648 + 128 + constants_bytes(r, 8)
    assert r["bound_cycles"] == 144


def test_stride_3_1x1_skips_two_in_three():
    """1x1 stride 3 VALID on 8x8x64 -> 3x3x16 reads rows and columns 0, 3, 6:
    3 x 3 x 64 = 576 of the 4096 input bytes; 144 output bytes; 3 x 3 x 16 x
    1 = 144 MAC cycles."""
    g = conv(in_hw=(8, 8), c_in=64, c_out=16, kernel=(1, 1), stride=(3, 3))
    _, r = record(g, 1)
    assert r["min_dma_bytes"] == 576 + 144 + constants_bytes(r, 16)
    assert r["bound_cycles"] == 144


def test_3x3_stride_1_unchanged():
    """3x3 stride 1 SAME, 32x32x64 -> 32 (the example of docs/performance_model.md
    §4): every input byte read (65536), 32768 written; im2col's K = 576 takes 9
    passes like the direct 9 x ceil(64/64), so the bound is 32 x 32 x 32 x 9 =
    294912 on one core, 36864 on 8: compute, no term for how the rows divide."""
    g = conv(in_hw=(32, 32), c_in=64, c_out=32, kernel=(3, 3), padding="SAME")
    _, r1 = record(g, 1)
    _, r8 = record(g, 8)
    assert r1["min_dma_bytes"] == 65536 + 32768 + constants_bytes(r1, 32)
    assert (r1["bound_cycles"], r8["bound_cycles"]) == (294912, 36864)


def test_indivisible_rows_have_no_bound_term():
    """Depthwise 3x3 SAME on 7x7x960 (MobileNetV2's last blocks): 7 rows over 32
    cores. The bound spreads the 7 x 7 x ceil(960/64) x 9 = 6615 MAC cycles
    over all 32 (207), against move-once 47040 + 47040 bytes / 64 = 735 each
    way: DMA-bound at 735 plus the constants' share, whatever the split."""
    g = conv(kind="DEPTHWISE_CONV_2D", in_hw=(7, 7), c_in=960, kernel=(3, 3), padding="SAME")
    _, r = record(g, 32)
    read = 47040 + constants_bytes(r, 960)
    assert r["min_dma_bytes"] == read + 47040
    assert r["bound_cycles"] == -(-read // 64)


CASES = {
    "1x1-s2": dict(in_hw=(14, 14), c_in=64, c_out=32, kernel=(1, 1), stride=(2, 2)),
    "3x3-s2-same": dict(in_hw=(15, 15), c_in=16, c_out=8, kernel=(3, 3), stride=(2, 2),
                        padding="SAME"),
    "1x1-s3": dict(in_hw=(8, 8), c_in=64, c_out=16, kernel=(1, 1), stride=(3, 3)),
    "dw-3x3-s2": dict(kind="DEPTHWISE_CONV_2D", in_hw=(9, 9), c_in=8, kernel=(3, 3),
                      stride=(2, 2)),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("cores,kb", [(1, 64), (8, 16), (32, 64)])
def test_device_never_beats_the_bound(case, cores, kb):
    """The bound is a lower bound on the device: cycles >= bound_cycles and
    external bytes (reads + writes) >= the move-once minimum."""
    g = conv(**CASES[case])
    prog, rec = record(g, cores, sram_kb=kb)
    shape = [t["shape"] for t in _core.program_info(prog)["inputs"]][0]
    x = np.random.default_rng(0).integers(-128, 128, shape).astype(np.int8)
    rt = _core.Runtime(cores=cores, sram_kb=kb)
    _, stats = rt.run(prog, [x])
    assert stats["cycles"] >= rec["bound_cycles"]
    assert stats["dma_read_bytes"] + stats["dma_write_bytes"] >= rec["min_dma_bytes"]

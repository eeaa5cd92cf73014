"""The schedule choices of issue 17 (docs/compiler.md §2.1, §3): golden numbers
for the subsampled 1x1 convolution, the element-wise K area kept resident under
double buffering and pixel-row tiles for element-wise and activation ops on
few rows, each with the reason it is right; and every choice bit-identical to
the schedule it replaces at several core counts and SRAM sizes."""
from __future__ import annotations

import numpy as np
import pytest

from nacc import _core
import ir_builders as irb


def run(graph, cores, kb=64, **options):
    prog = _core.compile(graph, cores=cores, sram_kb=kb, **options)
    info = _core.program_info(prog)
    rng = np.random.default_rng(3)
    xs = [rng.integers(-128, 128, t["shape"]).astype(np.int8) for t in info["inputs"]]
    outs, stats = _core.Runtime(cores=cores, sram_kb=kb).run(prog, xs)
    return info["ops"][0], outs, stats


def strided_1x1():
    g, _ = irb.conv(in_hw=(56, 56), c_in=256, c_out=128, kernel=(1, 1), stride=(2, 2),
                    weights_axis=0)
    return g


def test_subsampled_1x1_reads_a_quarter():
    """ResNet50's conv3_block1_0 shape (56x56x256, 1x1 stride 2; 128 outputs here):
    lowered 'subsampled' the DMA fetches pixel (2y, 2x) only, IFM pixel pitch 512
    and row pitch 2 x 56 x 256 = 28672, so the input bytes read are 28 x 28 x 256
    = 200704, so with the weights, bias and quantization read once (one group)
    and the output written once the run moves exactly the move-once minimum. The
    direct convolution's tiles (one output row each) read one input row in two
    but its whole column span, 27 columns for 14 outputs: 186368 bytes more."""
    rec, _, stats = run(strided_1x1(), 1)
    assert rec["lowering"] == "subsampled"
    assert stats["dma_read_bytes"] + stats["dma_write_bytes"] == rec["min_dma_bytes"]
    direct, _, dstats = run(strided_1x1(), 1, conv_lowering="direct")
    assert dstats["dma_read_bytes"] - stats["dma_read_bytes"] == 186368
    assert stats["cycles"] <= 1.01 * dstats["cycles"]  # the planner's tie tolerance


@pytest.mark.parametrize("cores,kb", [(1, 64), (1, 16), (8, 16), (32, 64)])
def test_subsampled_is_bit_exact(cores, kb):
    """Same pixels, weights and output stage as the direct convolution: the
    outputs are identical at every core count and SRAM size."""
    _, want, _ = run(strided_1x1(), cores, kb, conv_lowering="direct")
    rec, got, _ = run(strided_1x1(), cores, kb, conv_lowering="subsampled")
    assert rec["lowering"] == "subsampled"
    np.testing.assert_array_equal(got[0], want[0])


def test_elementwise_keeps_its_k_area():
    """ADD 56x56x256 on one core (ResNet50's conv2 residual): the multiplier and
    shift (4 + 4 bytes) are loaded once and stay resident (K_UPD = 0), so a
    double-buffered tile's operands load under the previous tile's compute. The
    device reads both operands once plus those 8 bytes (1605640) and takes the
    §8 bound's 3 x 802816 / 16 = 150528 bus cycles plus one tile's fill and
    drain (< 1 %) — it took 251466 when every tile reloaded the K area."""
    g, _ = irb.binary("ADD", a_shape=(1, 56, 56, 256), b_shape=(1, 56, 56, 256))
    rec, _, stats = run(g, 1)
    assert rec["bound_cycles"] == 150528
    assert stats["dma_read_bytes"] == 2 * 802816 + 8
    assert stats["cycles"] <= 1.01 * 150528

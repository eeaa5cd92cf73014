"""nacc.results, the result schema every command shares: tensor differences,
agreement of output lists, host-latency statistics and NPU figures — a table of
cases each with the numbers worked out by hand."""
from __future__ import annotations

import numpy as np
import pytest

from nacc import results

DIFF_CASES = [
    # got, want, bit_exact, differing, elements, max_abs_diff
    (np.array([1, 2, 3], np.int8), np.array([1, 2, 3], np.int8), True, 0, 3, 0.0),
    (np.array([1, 2, 3], np.int8), np.array([1, 5, 2], np.int8), False, 2, 3, 3.0),
    (np.array([-128], np.int8), np.array([127], np.int8), False, 1, 1, 255.0),  # no int8 wrap
    (np.zeros((1, 4), np.float32), np.zeros(4, np.float32), True, 0, 4, 0.0),  # same size: reshaped
    (np.array([0.5, np.nan]), np.array([0.5, 1.0]), False, 1, 2, 0.0),          # NaN counts
    (np.zeros(0, np.int8), np.zeros(0, np.int8), True, 0, 0, 0.0),
]


@pytest.mark.parametrize("got,want,exact,differing,elements,max_abs", DIFF_CASES)
def test_diff(got, want, exact, differing, elements, max_abs):
    d = results.diff(got, want)
    assert d == {"bit_exact": exact, "differing": differing, "elements": elements,
                 "max_abs_diff": max_abs}


def test_diff_of_incompatible_shapes_is_not_comparable():
    d = results.diff(np.zeros(3), np.zeros(4))
    assert d["bit_exact"] is False and d["differing"] is None and d["elements"] == 4
    assert "shape" in d["note"]


def test_agreement_sums_outputs_and_names_them():
    a = results.agreement([np.array([1, 2]), np.array([3.0])], [np.array([1, 4]), np.array([3.5])],
                          ["logits", "score"])
    assert (a["bit_exact"], a["differing"], a["elements"], a["max_abs_diff"]) == (False, 2, 3, 2.0)
    assert [o["name"] for o in a["outputs"]] == ["logits", "score"]
    assert results.agreement([np.zeros(2)], [])["bit_exact"] is False  # a missing output


def test_timing_percentiles():
    t = results.timing([float(i) for i in range(1, 101)])  # 1 .. 100 ms
    assert t["runs"] == 100 and t["min"] == 1 and t["max"] == 100
    assert t["mean"] == pytest.approx(50.5) and t["median"] == pytest.approx(50.5)
    assert t["p50"] == pytest.approx(50.5) and t["p90"] == pytest.approx(90.1)
    assert t["p99"] == pytest.approx(99.01)
    assert t["throughput_per_s"] == pytest.approx(1000 / 50.5)
    with pytest.raises(ValueError):
        results.timing([])


def test_npu_record():
    n = results.npu(cycles=1000, bound_cycles=800, macs=32000, dma_bytes=300, min_dma_bytes=200,
                    sram_high_water=4096, cores=2, clock_mhz=500)
    assert n["cycles_vs_bound"] == 1.25 and n["dma_vs_min"] == 1.5
    assert n["utilization"] == 32000 / (1000 * 64 * 2) and n["latency_us"] == 2.0
    total = results.sum_npu([n, n], cores=2, clock_mhz=500)
    assert total["cycles"] == 2000 and total["sram_high_water"] == 4096
    assert total["cycles_vs_bound"] == 1.25
    empty = results.npu(cycles=0, bound_cycles=0, macs=0, dma_bytes=0, min_dma_bytes=0,
                        sram_high_water=0, cores=1, clock_mhz=500)
    assert empty["cycles_vs_bound"] is None and empty["utilization"] == 0.0

"""One result schema for every nacc command that runs a model (report,
compare, bench, perf, eval): how two runs' tensors agree, how host latency is
summarised, and what the simulated NPU did. Each is a plain JSON-ready dict
with the same keys wherever it appears (docs/cli.md, "Result schema").

- ``diff(got, want)``: one tensor — ``bit_exact``, ``differing`` (elements),
  ``elements``, ``max_abs_diff`` (``None`` with a ``note`` when the shapes
  cannot be compared).
- ``agreement(got, want, names)``: a list of output tensors — the same keys
  summed over the outputs, plus ``outputs`` (one ``diff`` each, with ``name``).
- ``timing(samples_ms)``: host latency — ``runs``, ``mean``, ``std``, ``min``,
  ``median``, ``p50``, ``p90``, ``p99``, ``max`` (milliseconds) and
  ``throughput_per_s`` (1000 / mean).
- ``npu(...)``: the simulated device over the NPU partitions of one
  inference — ``cycles``, ``bound_cycles`` (sum of the per-op performance
  bounds, docs/hardware.md §8), ``cycles_vs_bound``, ``macs`` (useful
  multiply-accumulates as the device counts them: taps on padding excluded),
  ``utilization``, ``dma_bytes`` (external memory, read + written),
  ``min_dma_bytes`` (every byte moved once), ``dma_vs_min``,
  ``sram_high_water``, ``cores``, ``clock_mhz``, ``latency_us``. Host ops take
  no simulated time: ``latency_us`` is the NPU's part of an inference only.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Optional, Sequence

import numpy as np

__all__ = ["MAC_LANES", "DMA_PORT_BYTES_PER_CYCLE", "EXT_BYTES_PER_CYCLE", "diff", "agreement", "timing", "percentile", "npu", "sum_npu", "ratio",
           "format_exactness"]

MAC_LANES = 64  # int8 MACs per core per cycle (docs/hardware.md §1)
# The HwConfig defaults the delegate and the EP run with (docs/performance_model.md §1).
DMA_PORT_BYTES_PER_CYCLE = 16  # one core's 128-bit DMA master
EXT_BYTES_PER_CYCLE = 64       # external bandwidth shared by all cores


def diff(got: Any, want: Any) -> Dict[str, Any]:
    """Element-wise comparison of one tensor with its reference (any numeric dtypes)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        if got.size != want.size:
            return {"bit_exact": False, "differing": None, "elements": int(want.size),
                    "max_abs_diff": None, "note": f"shape {got.shape} vs {want.shape}"}
        got = got.reshape(want.shape)
    g, w = got.astype(np.float64), want.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    d = np.abs(g - w)
    differing = int(np.count_nonzero((d != 0) & ~both_nan))  # NaN against a number differs
    finite = d[~np.isnan(d)]
    return {"bit_exact": differing == 0, "differing": differing, "elements": int(d.size),
            "max_abs_diff": float(finite.max()) if finite.size else 0.0}


def agreement(got: Sequence[Any], want: Sequence[Any],
              names: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """How a run's outputs agree with the reference run's, output by output."""
    outputs = []
    for i, (g, w) in enumerate(zip(got, want)):
        d = diff(g, w)
        d["name"] = names[i] if names is not None and i < len(names) else f"output {i}"
        outputs.append(d)
    comparable = [o for o in outputs if o["differing"] is not None]
    return {
        "bit_exact": len(got) == len(want) and all(o["bit_exact"] for o in outputs),
        "differing": sum(o["differing"] for o in comparable),
        "elements": sum(o["elements"] for o in outputs),
        "max_abs_diff": max([o["max_abs_diff"] for o in comparable] or [0.0]),
        "outputs": outputs,
    }


def percentile(sorted_samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation (numpy's default)."""
    return float(np.percentile(np.asarray(sorted_samples, np.float64), q))


def timing(samples_ms: Sequence[float]) -> Dict[str, Any]:
    """Latency statistics of host runs (milliseconds), as benchmark_model reports them."""
    x = np.asarray(list(samples_ms), np.float64)
    if x.size == 0:
        raise ValueError("timing: no samples")
    mean = float(x.mean())
    return {"runs": int(x.size), "mean": mean, "std": float(x.std()), "min": float(x.min()),
            "median": float(np.median(x)), "p50": percentile(x, 50), "p90": percentile(x, 90),
            "p99": percentile(x, 99), "max": float(x.max()),
            "throughput_per_s": 1e3 / mean if mean > 0 else math.inf}


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    """a / b, or None when either is missing or b is 0."""
    return a / b if a is not None and b else None


def npu(*, cycles: int, bound_cycles: int, macs: int, dma_bytes: int, min_dma_bytes: int,
        sram_high_water: int, cores: int, clock_mhz: float) -> Dict[str, Any]:
    """The simulated device's figures for one inference (see the module docstring)."""
    return {
        "cycles": int(cycles), "bound_cycles": int(bound_cycles),
        "cycles_vs_bound": ratio(cycles, bound_cycles),
        "macs": int(macs),
        "utilization": macs / (cycles * MAC_LANES * cores) if cycles else 0.0,
        "dma_bytes": int(dma_bytes), "min_dma_bytes": int(min_dma_bytes),
        "dma_vs_min": ratio(dma_bytes, min_dma_bytes),
        "sram_high_water": int(sram_high_water),
        "cores": int(cores), "clock_mhz": clock_mhz, "latency_us": cycles / clock_mhz,
    }


def sum_npu(parts: Sequence[Dict[str, Any]], *, cores: int, clock_mhz: float) -> Dict[str, Any]:
    """The NPU figures of partitions run one after another (SRAM: the highest)."""
    total = {k: sum(int(p[k]) for p in parts)
             for k in ("cycles", "bound_cycles", "macs", "dma_bytes", "min_dma_bytes")}
    return npu(**total, sram_high_water=max([int(p["sram_high_water"]) for p in parts] or [0]),
               cores=cores, clock_mhz=clock_mhz)



def format_exactness(a: Dict[str, Any]) -> str:
    """"bit-exact" or "N of M elements differ, max abs diff D" for an agreement."""
    if a["bit_exact"]:
        return "bit-exact"
    return (f"{a['differing']} of {a['elements']} elements differ, max abs diff "
            f"{a['max_abs_diff']:g}")


#!/usr/bin/env python3
"""Throughput of the MAC unit's kernels (nacc._core, each ISA path this CPU has:
AVX2, AVX-VNNI, AVX-512 VNNI, AMX) against TensorFlow Lite's default
interpreter (XNNPACK delegate) on the same single-op int8 models, one thread
each. Prints the CPU and a table of GMAC/s per path.

    PYTHONPATH=python python benchmarks/bench_units.py [--quick] [--runs N]

Each case is timed as the median of N runs after warm-up runs, nacc's and
TFLite's runs interleaved (the machine may be shared). nacc's time
includes the per-call weight packing and the Python binding; TFLite's is
Interpreter.invoke() on a prepared interpreter (its weights were packed once at
delegate creation), so the comparison favours TFLite slightly.

Adding a case: append a BenchCase to CASES (make_conv_case, make_fc_case and
make_depthwise_case build the common ones).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from typing import Callable, List, Optional

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))  # tflite_builder, quant_helpers
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from nacc import _core  # noqa: E402
from quant_helpers import conv_multipliers, fc_effective_scales, same_padding  # noqa: E402
from tflite_builder import QTensor, build_model, make_interpreter  # noqa: E402


@dataclasses.dataclass
class BenchCase:
    """One benchmark: a TFLite model, its input, and the equivalent nacc call."""

    op: str
    shape: str  # human-readable shape for the table
    macs: int  # multiply-accumulates per run
    model: bytes
    tflite_input: np.ndarray
    run_nacc: Callable[[], np.ndarray]


def _rng(seed):
    return np.random.default_rng(seed)


def make_conv_case(h, w, cin, cout, k, stride=1, padding="SAME", seed=0) -> BenchCase:
    """CONV_2D int8 per-channel, k x k, TFLite SAME/VALID padding."""
    rng = _rng(seed)
    x = rng.integers(-128, 128, (1, h, w, cin), dtype=np.int8)
    f = rng.integers(-127, 128, (cout, k, k, cin), dtype=np.int8)
    b = rng.integers(-5000, 5000, cout).astype(np.int32)
    in_s, out_s, in_zp, out_zp = 0.02, 0.05, -3, 4
    fs = [float(v) for v in np.linspace(0.001, 0.004, cout, dtype=np.float32)]
    if padding == "SAME":
        oh, pt, pb = same_padding(h, k, stride)
        ow, pl, pr = same_padding(w, k, stride)
    else:
        oh, ow, pt, pb, pl, pr = (h - k) // stride + 1, (w - k) // stride + 1, 0, 0, 0, 0
    model = build_model(
        "CONV_2D",
        [QTensor(x.shape, "int8", scale=in_s, zero_point=in_zp),
         QTensor(f.shape, "int8", scale=fs, zero_point=[0] * cout, data=f),
         QTensor((cout,), "int32", scale=[in_s * s for s in fs], zero_point=[0] * cout, data=b)],
        [QTensor((1, oh, ow, cout), "int8", scale=out_s, zero_point=out_zp)],
        options=dict(padding=padding, stride_h=stride, stride_w=stride), version=3)
    mult, shift = conv_multipliers(in_s, fs, out_s, cout)

    def run():
        return _core.conv2d(x, f, b, mult, shift, stride=(stride, stride),
                            padding=(pt, pb, pl, pr), input_zero_point=in_zp,
                            output_zero_point=out_zp)

    return BenchCase("CONV_2D", f"{h}x{w}x{cin}->{cout} k{k} s{stride} {padding}",
                     oh * ow * cout * k * k * cin, model, x, run)


def make_fc_case(m, k, n, seed=0) -> BenchCase:
    """FULLY_CONNECTED int8 per-tensor (effective_scale: TFLite reference rounding)."""
    rng = _rng(seed)
    x = rng.integers(-128, 128, (m, k), dtype=np.int8)
    wt = rng.integers(-127, 128, (n, k), dtype=np.int8)
    b = rng.integers(-5000, 5000, n).astype(np.int32)
    in_s, w_s, out_s, in_zp, out_zp = 0.02, 0.002, 0.1, -128, -20
    model = build_model(
        "FULLY_CONNECTED",
        [QTensor(x.shape, "int8", scale=in_s, zero_point=in_zp),
         QTensor(wt.shape, "int8", scale=w_s, zero_point=0, data=wt),
         QTensor((n,), "int32", scale=float(np.float32(in_s) * np.float32(w_s)), zero_point=0,
                 data=b)],
        [QTensor((m, n), "int8", scale=out_s, zero_point=out_zp)], version=4)
    scale = fc_effective_scales(in_s, [w_s], out_s, n)

    def run():
        return _core.fully_connected(x, wt, b, effective_scale=scale, input_zero_point=in_zp,
                                     output_zero_point=out_zp)

    return BenchCase("FULLY_CONNECTED", f"{m}x{k}->{n}", m * k * n, model, x, run)


def make_depthwise_case(h, w, c, k, stride=1, seed=0) -> Optional[BenchCase]:
    """DEPTHWISE_CONV_2D k x k, SAME, multiplier 1, per-channel filter scales
    (nacc._core.depthwise_conv2d; its output is exact vs BUILTIN_REF, --check).
    Returns None on a build without the depthwise unit."""
    if not hasattr(_core, "depthwise_conv2d"):
        return None
    rng = _rng(seed)
    x = rng.integers(-128, 128, (1, h, w, c), dtype=np.int8)
    f = rng.integers(-127, 128, (1, k, k, c), dtype=np.int8)
    b = rng.integers(-5000, 5000, c).astype(np.int32)
    in_s, out_s, in_zp, out_zp = 0.02, 0.05, -3, 4
    fs = [float(v) for v in np.linspace(0.01, 0.04, c, dtype=np.float32)]
    oh, pt, pb = same_padding(h, k, stride)
    ow, pl, pr = same_padding(w, k, stride)
    model = build_model(
        "DEPTHWISE_CONV_2D",
        [QTensor(x.shape, "int8", scale=in_s, zero_point=in_zp),
         QTensor(f.shape, "int8", scale=fs, zero_point=[0] * c, quantized_dimension=3, data=f),
         QTensor((c,), "int32", scale=[in_s * s for s in fs], zero_point=[0] * c, data=b)],
        [QTensor((1, oh, ow, c), "int8", scale=out_s, zero_point=out_zp)],
        options=dict(padding="SAME", stride_h=stride, stride_w=stride, depth_multiplier=1),
        version=3)
    mult, shift = conv_multipliers(in_s, fs, out_s, c)

    def run():
        return _core.depthwise_conv2d(x, f, b, mult, shift, stride=(stride, stride),
                                      padding=(pt, pb, pl, pr), depth_multiplier=1,
                                      input_zero_point=in_zp, output_zero_point=out_zp)

    return BenchCase("DEPTHWISE_CONV_2D", f"{h}x{w}x{c} k{k} s{stride} SAME",
                     oh * ow * c * k * k, model, x, run)


def cases() -> List[BenchCase]:
    """The benchmark list. Append new cases here."""
    found = [
        make_conv_case(56, 56, 24, 144, 1, padding="VALID"),  # MobileNetV2 1x1 expand
        make_conv_case(56, 56, 64, 64, 3, padding="SAME"),  # ResNet50 3x3, pad 1
        make_fc_case(1, 1280, 1000),  # MobileNetV2 classifier
        make_depthwise_case(112, 112, 96, 3),  # MobileNetV2 depthwise (depthwise unit's hook)
    ]
    return [c for c in found if c is not None]


def time_medians(fns: List[Callable[[], object]], runs: int, warmup: int) -> List[float]:
    """Median wall time of each function; the functions' runs are interleaved so
    that both sides see the same machine load."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    times: List[List[float]] = [[] for _ in fns]
    for _ in range(runs):
        for fn, t in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            t.append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few runs (smoke test)")
    parser.add_argument("--runs", type=int, default=None, help="timed runs per case (median)")
    parser.add_argument("--warmup", type=int, default=None, help="untimed runs first")
    parser.add_argument("--check", action="store_true",
                        help="also compare nacc's output with TFLite BUILTIN_REF")
    args = parser.parse_args(argv)
    runs = args.runs or (3 if args.quick else 25)
    warmup = args.warmup if args.warmup is not None else (1 if args.quick else 5)

    from nacc.bench import cpu_name

    paths = [p for p in _core.kernel_paths() if p != "reference"]
    print(f"CPU: {cpu_name()}; nacc ISA paths: {', '.join(paths)}; TFLite default interpreter "
          f"(XNNPACK), 1 thread; median of {runs} runs after {warmup} warm-up, interleaved")

    def on_path(path, fn):
        def run():
            _core.set_kernel_path(path)
            try:
                return fn()
            finally:
                _core.set_kernel_path("auto")
        return run

    rows = []
    for case in cases():
        interp = make_interpreter(case.model, reference=False, num_threads=1)
        interp.allocate_tensors()
        interp.set_tensor(interp.get_input_details()[0]["index"], case.tflite_input)
        fns = [on_path(p, case.run_nacc) for p in paths]
        *t_paths, t_tfl = time_medians(fns + [interp.invoke], runs, warmup)
        for path, t_nacc, fn in zip(paths, t_paths, fns):
            note = ""
            if args.check:
                from tflite_builder import run_tflite
                (ref,) = run_tflite(case.model, [case.tflite_input])
                got = fn().reshape(ref.shape)
                note = "exact" if np.array_equal(got, ref) else f"{int((got != ref).sum())} differ"
            rows.append((case.op, case.shape, path, case.macs / t_nacc / 1e9,
                         case.macs / t_tfl / 1e9, t_tfl / t_nacc, t_nacc * 1e3, t_tfl * 1e3, note))

    header = ("op", "shape", "nacc path", "GMAC/s nacc", "GMAC/s XNNPACK", "ratio", "ms nacc",
              "ms XNNPACK")
    if args.check:
        header += ("vs BUILTIN_REF",)
    table = [header] + [
        (op, shape, path, f"{g1:.1f}", f"{g2:.1f}", f"{ratio:.2f}", f"{t1:.3f}", f"{t2:.3f}")
        + ((note,) if args.check else ())
        for op, shape, path, g1, g2, ratio, t1, t2, note in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for i, r in enumerate(table):
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print("ratio = nacc GMAC/s / XNNPACK GMAC/s (> 1: nacc faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

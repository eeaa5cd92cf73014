"""nacc perf MODEL: latency and throughput of one model, the way TFLite's
benchmark_model and onnxruntime_perf_test report them.

Opens the model with nacc (TFLite BUILTIN_REF + the NACC delegate, or ONNX
Runtime with NaccExecutionProvider in front of the CPU EP), times
initialization (partitioning and compilation included), --warmup runs and
then --runs timed runs (or as many as fit in --duration seconds) on one
seeded random input, and prints:

- host latency: mean, std, min, p50, p90, p99, max (ms) and throughput — the
  host simulating the NPU, not the NPU's speed;
- with --reference the same for the host runtime alone;
- the simulated NPU time per inference (cycles / clock, the NPU partitions
  only: host ops are excluded) and the NPU throughput it implies.

    nacc perf MODEL [--runs N | --duration S] [--warmup N] [--reference] [--json FILE]
                    [--cores N] [--sram-kb KB] [--clock-mhz MHZ] [--threads N] [--option K=V]
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

from nacc import results
from nacc.cli import hw_arguments, model_command, model_parser, write_json

__all__ = ["main", "measure", "format_text"]


def _time_runs(runner, inputs, runs: int, duration: Optional[float]) -> List[float]:
    samples: List[float] = []
    t_end = time.perf_counter() + duration if duration else None
    while (len(samples) < runs) if t_end is None else (time.perf_counter() < t_end or not samples):
        t0 = time.perf_counter()
        runner.run(inputs)
        samples.append((time.perf_counter() - t0) * 1e3)
    return samples


def measure(path: str, kind: str, hw, *, runs: int = 50, warmup: int = 2,
            duration: Optional[float] = None, reference: bool = False, seed: int = 0,
            options: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """The perf result dict of the module docstring (schema: docs/cli.md)."""
    from nacc import model_report
    from nacc.runners import open_pair

    npu_runner, ref_runner = open_pair(path, kind, hw, options, reference=reference)
    inputs = model_report.random_inputs(npu_runner.inputs, seed)
    out: Dict[str, Any] = {"command": "perf", "model": path, "runtime": kind,
                           "hardware": hw.as_dict(), "label": npu_runner.label,
                           "init_ms": {"nacc": npu_runner.init_ms}, "warmup": {}, "host_ms": {}}
    for key, runner in (("nacc", npu_runner), ("reference", ref_runner)):
        if runner is None:
            continue
        first = _time_runs(runner, inputs, max(warmup, 1), None)
        out["warmup"][key] = {"runs": len(first), "first_ms": first[0]}
        out["host_ms"][key] = results.timing(_time_runs(runner, inputs, runs, duration))
        if key == "reference":
            out["init_ms"]["reference"] = runner.init_ms
            out["reference"] = runner.label
    rep = npu_runner.report()
    out["npu"] = rep["totals"]
    out.update(summary=rep["summary"], claimed_nodes=rep["claimed_nodes"],
               total_nodes=rep["total_nodes"], host=rep["host"])
    return out


def _timing_line(t: Dict[str, Any]) -> str:
    return (f"mean {t['mean']:.3f}, std {t['std']:.3f}, min {t['min']:.3f}, p50 {t['p50']:.3f}, "
            f"p90 {t['p90']:.3f}, p99 {t['p99']:.3f}, max {t['max']:.3f} ms over {t['runs']} runs; "
            f"{t['throughput_per_s']:,.1f} inferences/s")


def format_text(r: Dict[str, Any]) -> str:
    hw = r["hardware"]
    lines = [f"nacc perf {r['model']}: {r['label']}; {hw['cores']} core(s), {hw['sram_kb']} KB "
             f"SRAM/core, {hw['clock_mhz']} MHz, {hw['threads']} host thread(s)", r["summary"],
             f"Initialization: {r['init_ms']['nacc']:.1f} ms (partitioning and compiling "
             "included)"]
    for key, what in (("nacc", "with nacc (the host simulating the NPU, not the NPU's speed)"),
                      ("reference", f"{r.get('reference', '')} alone")):
        if key in r["host_ms"]:
            w = r["warmup"][key]
            lines.append(f"Host latency {what}: first run {w['first_ms']:.3f} ms; "
                         + _timing_line(r["host_ms"][key]))
    t = r["npu"]
    if t["cycles"]:
        lines.append(f"Simulated NPU: {t['latency_us']:,.2f} us per inference ({t['cycles']:,} "
                     f"cycles at {t['clock_mhz']} MHz) = {1e6 / t['latency_us']:,.0f} inferences/s; "
                     f"{_fmt(t['cycles_vs_bound'])} the performance bound; NPU partitions only")
    else:
        lines.append("Simulated NPU: nothing ran on the NPU")
    if r["host"]["nodes"]:
        lines.append(f"Not in the NPU time: {r['host']['nodes']} node(s) on the host runtime")
    return "\n".join(lines)


def _fmt(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.2f}x"


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = model_parser("nacc perf", __doc__)
    p.add_argument("--runs", type=int, default=50, help="timed runs (default 50)")
    p.add_argument("--duration", type=float, default=None, metavar="S",
                   help="time runs for S seconds instead of a fixed number")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs first (default 2)")
    p.add_argument("--reference", action="store_true",
                   help="also time the host runtime alone (BUILTIN_REF / CPU EP)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="extra delegate / EP option (repeatable)")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON")
    hw_arguments(p)
    a = p.parse_args(list(argv))
    if a.runs < 1 or a.warmup < 0 or (a.duration is not None and a.duration <= 0):
        p.error("--runs must be >= 1, --warmup >= 0 and --duration > 0")
    return a


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    kind, hw, options = model_command(args, "perf")
    r = measure(args.model, kind, hw, runs=args.runs, warmup=args.warmup,
                duration=args.duration, reference=args.reference, seed=args.seed,
                options=options)
    print(format_text(r))
    write_json(args.json, r)
    return 0


if __name__ == "__main__":
    from nacc.cli import guarded

    sys.exit(guarded("perf", lambda: main(sys.argv[1:])))

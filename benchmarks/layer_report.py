#!/usr/bin/env python3
"""Per-layer simulated cycles vs the NACC_SPEC §8 bound, and DMA bytes vs the
move-once minimum (each weight, IFM and OFM byte moved once), of Keras
MobileNetV2 1.0/224 and ResNet50/224 (weights=None, int8 through the TFLite
converter with a representative dataset; cached by nacc.models) at 1, 8 and
32 cores, with the weight compression ratio and the host time to compile and
to run — the numbers of issue 3's closing note. `--models efficientnet_b0_224`
adds Keras EfficientNetB0/224 (issue 17's third model; its first conversion
takes a few minutes).

    NACC_MODEL_CACHE=/work/models PYTHONPATH=python python benchmarks/layer_report.py \
        [--models mobilenet_v2_100_224 resnet50_224 efficientnet_b0_224] [--cores 1 8 32]
        [--json FILE]

Each configuration runs the model once through TFLite with the NACC delegate
(host ops on BUILTIN_REF); the per-layer numbers come from the delegate's
per-op counters of that run (nacc.model_report).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from nacc import _core, model_report, models  # noqa: E402

DEFAULT_MODELS = ["mobilenet_v2_100_224", "resnet50_224"]


def weight_bytes(dump_dir: str):
    raw = stored = 0
    for name in os.listdir(dump_dir):
        if name.endswith(".program"):
            with open(os.path.join(dump_dir, name), "rb") as f:
                prog = _core.Program.from_bytes(f.read())
            raw += sum(o["weight_bytes"] for o in prog.ops)
            stored += sum(o["weight_bytes_stored"] for o in prog.ops)
    return raw, stored


def run_config(blob: bytes, cores: int, clock: int, threads: int):
    hw = model_report.HwOptions(cores=cores, clock_mhz=clock, threads=threads)
    with tempfile.TemporaryDirectory(prefix="nacc_layers_") as tmp:
        t0 = time.perf_counter()
        report, _, _, _, run_ms, _, prepare_ms = model_report.run_tflite(blob, hw, dump_dir=tmp)
        total_s = time.perf_counter() - t0
        rep = model_report._report_from_delegate(report, hw, name="", npu_ms=run_ms,
                                                 prepare_ms=prepare_ms)
        raw, stored = weight_bytes(tmp)
    rep["weights"] = {"bytes": raw, "stored": stored}
    rep["host_s"] = {"prepare_incl_compile": prepare_ms / 1e3,
                     "compile": sum(p["compile_ms"] for p in rep["partitions"]) / 1e3,
                     "run": run_ms / 1e3, "total": total_s}
    return rep


def ratio(a, b):
    return f"{a / b:.2f}" if b else "-"


def print_model(name: str, reps: dict, convert_s: float) -> None:
    cores = sorted(reps)
    first = reps[cores[0]]
    print(f"\n## {name}\n")
    print(f"model conversion / cache load: {convert_s:.1f} s; {first['summary']}")
    declined = [f"{d['op']} '{d['name']}'" for d in first["declined"]]
    print(f"on the host: {', '.join(declined) if declined else 'nothing'}")
    w = first["weights"]
    print(f"weights: {w['bytes']} bytes -> {w['stored']} stored, compression ratio "
          f"{w['bytes'] / w['stored']:.3f}" if w["stored"] else "weights: none")
    # Per-layer table: the layer rows of every partition, in execution order.
    rows = {c: [r for p in reps[c]["partitions"] for r in p["layers"]] for c in cores}
    head = ["#", "layer", "kind", "MACs"]
    for c in cores:
        head += [f"cyc@{c}", f"bound@{c}", f"x@{c}"]
    for c in cores:
        head += [f"DMA@{c}", f"min@{c}", f"x@{c}"]
    print()
    print(" | ".join(head))
    print(" | ".join("---" for _ in head))
    for i, r0 in enumerate(rows[cores[0]]):
        line = [str(i), model_report.short_name(r0["name"], 40), r0["kind"] or "-", str(r0["macs"])]
        for c in cores:
            r = rows[c][i]
            line += [str(r["cycles"]), str(r["bound_cycles"]), ratio(r["cycles"], r["bound_cycles"])]
        for c in cores:
            r = rows[c][i]
            line += [str(r["dma_bytes"]), str(r["min_dma_bytes"]), ratio(r["dma_bytes"], r["min_dma_bytes"])]
        print(" | ".join(line))
    print()
    print("cores | cycles | §8 bound | cycles/bound | latency us @clock | DMA bytes | minimum | "
          "DMA/min | MAC util | SRAM peak | host compile s | host run s")
    print("--- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | ---")
    for c in cores:
        t = reps[c]["totals"]
        h = reps[c]["host_s"]
        print(f"{c} | {t['cycles']} | {t['bound_cycles']} | {ratio(t['cycles'], t['bound_cycles'])} | "
              f"{t['latency_us']:.1f} | {t['dma_bytes']} | {t['min_dma_bytes']} | "
              f"{ratio(t['dma_bytes'], t['min_dma_bytes'])} | {100 * t['utilization']:.1f}% | "
              f"{t['sram_high_water']} | {h['compile']:.2f} | {h['run']:.2f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=DEFAULT_MODELS, choices=sorted(models.MODELS))
    ap.add_argument("--cores", nargs="+", type=int, default=[1, 8, 32])
    ap.add_argument("--clock-mhz", type=int, default=500)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    everything = {}
    for name in args.models:
        t0 = time.perf_counter()
        blob = models.converted(name)
        convert_s = time.perf_counter() - t0
        reps = {}
        for c in args.cores:
            t0 = time.perf_counter()
            reps[c] = run_config(blob, c, args.clock_mhz, args.threads)
            print(f"[{name} at {c} cores: {time.perf_counter() - t0:.1f} s]", file=sys.stderr,
                  flush=True)
        print_model(name, reps, convert_s)
        everything[name] = {str(c): r for c, r in reps.items()}
    if args.json:
        model_report.write_json(args.json, everything)
    return 0


if __name__ == "__main__":
    sys.exit(main())

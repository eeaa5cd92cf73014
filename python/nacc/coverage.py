"""The claim-rate table: how much of real architectures the TFLite delegate runs.

For each model (random-init Keras architectures of ``nacc.models``, converted
to int8 with a representative dataset, or any .tflite path) and each
simulated core count, one delegated run against BUILTIN_REF: nodes claimed
of all nodes, partitions, the nodes left on the host by op kind with the
reason the partitioner gives, and exactness (bit-exact, or the number of
differing elements). Markdown on stdout (the table of docs/coverage.md),
``--json FILE`` for everything.

    python -m nacc.coverage [MODEL ...] [--cores 1,8,32] [--sram-kb 64] [--json FILE]
                            [--output FILE] [--in-process]

Each model runs in a child process (unless --in-process): a runtime that
aborts on a model costs its row (which says how the run ended), not the table.

Claims do not depend on the core count; exactness is checked at each one.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence

from nacc import model_report, models

# The architectures of the table (issue 15's list and the patterns it names).
DEFAULT_MODELS = (
    "mobilenet_v1_025_128", "mobilenet_v2_100_224", "mobilenet_v3_small_224",
    "mobilenet_v3_large_224", "efficientnet_b0_224", "resnet50_224", "inception_v3_75",
    "densenet121_224", "xception_71", "nasnet_mobile_224", "squeezenet_224",
    "inception_v2_224", "ds_cnn_kws", "squeeze_excite_64", "inception_v3_block_35",
    "grouped_conv_16", "deeplab_block_24", "patch_embed_64", "alexnet_stem_67", "unet_32",
    "ds_cnn_kws_16x8", "mobilenet_v2_035_96_16x8", "resnet_style_32_16x8",
)
CORES = (1, 8, 32)


def _model(name: str) -> bytes:
    if name.endswith(".tflite"):
        with open(name, "rb") as f:
            return f.read()
    return models.converted(name)


def model_row(name: str, cores: Sequence[int], sram_kb: int = 64, seed: int = 0) -> Dict[str, Any]:
    """One model of the table: claim numbers (from the run at the first core
    count), the host nodes by kind with their reasons, exactness per core count."""
    model = _model(name)
    row: Dict[str, Any] = {"model": os.path.basename(name) if name.endswith(".tflite") else name,
                           "exact": {}}
    for c in cores:
        hw = model_report.HwOptions(cores=c, sram_kb=sram_kb)
        rep = model_report.tflite_report(model, hw, name=row["model"], check=True, seed=seed)
        e = rep["exactness"]
        row["exact"][str(c)] = {k: e[k] for k in ("bit_exact", "differing", "elements",
                                                  "max_abs_diff")}
        if "nodes" not in row:
            row["nodes"] = {"claimed": rep["claimed_nodes"], "total": rep["total_nodes"]}
            row["partitions"] = len(rep["partitions"])
            reasons: Dict[str, Dict[str, Any]] = {}
            for d in rep["declined"]:
                r = reasons.setdefault(d["op"], {"count": 0, "host_kind": d["host_kind"],
                                                 "reasons": []})
                r["count"] += 1
                text = "; ".join(d["reasons"]) or ("host-only op kind" if d["host_kind"] else "")
                if text and text not in r["reasons"]:
                    r["reasons"].append(text)
            row["host"] = dict(sorted(reasons.items()))
            row["cycles"] = {}
        row["cycles"][str(c)] = rep["totals"]["cycles"]
    return row


def isolated_row(name: str, cores: Sequence[int], sram_kb: int = 64) -> Dict[str, Any]:
    """model_row in a child process: a runtime that aborts on a model (TFLite's
    reference SOFTMAX does on flat logits) costs that row, not the table."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "row.json")
        cmd = [sys.executable, "-m", "nacc.coverage", name, "--cores", ",".join(map(str, cores)),
               "--sram-kb", str(sram_kb), "--json", out, "--in-process"]
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if p.returncode == 0:
            with open(out) as f:
                return json.load(f)["models"][0]
    how = (f"signal {signal.Signals(-p.returncode).name}" if p.returncode < 0
           else f"exit code {p.returncode}")
    tail = [l for l in p.stderr.strip().splitlines() if l.strip()][-1:] or [""]
    return {"model": os.path.basename(name), "failed": f"the run ended with {how}: {tail[0][:300]}"}


def _exact_cell(row: Dict[str, Any]) -> str:
    bad = {c: e for c, e in row["exact"].items() if not e["bit_exact"]}
    if not bad:
        return "bit-exact at " + ", ".join(row["exact"]) + " cores"
    return "; ".join(f"{c} cores: {e['differing']}/{e['elements']} differ" for c, e in bad.items())


def _host_cell(row: Dict[str, Any], width: int = 160) -> str:
    if not row["host"]:
        return "none"
    parts = []
    for op, r in row["host"].items():
        why = r["reasons"][0] if r["reasons"] else ""
        if len(why) > width:
            why = why[:width - 1] + "…"
        more = f" (+{len(r['reasons']) - 1} other reasons)" if len(r["reasons"]) > 1 else ""
        parts.append(f"{r['count']} × {op}" + (f": {why}{more}" if why else ""))
    return "<br>".join(p.replace("|", "\\|") for p in parts)


def markdown(report: Dict[str, Any]) -> str:
    lines = [f"Claim rates of the TFLite delegate — {report['date']}, nacc "
             f"{report['nacc_version']}, TensorFlow {report['tensorflow']}, {report['sram_kb']} KB "
             f"SRAM; exactness against BUILTIN_REF on a random input (`{report['command']}`)", "",
             "| model | claimed / nodes | partitions | left on the host (reason) | exact |",
             "|---|---|---|---|---|"]
    for r in report["models"]:
        if "failed" in r:
            lines.append(f"| {r['model']} | - | - | {r['failed']} | - |")
            continue
        lines.append(f"| {r['model']} | {r['nodes']['claimed']} / {r['nodes']['total']} | "
                     f"{r['partitions']} | {_host_cell(r)} | {_exact_cell(r)} |")
    return "\n".join(lines)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m nacc.coverage", description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="*", metavar="MODEL",
                   help="nacc.models names or .tflite paths (default: " + ", ".join(DEFAULT_MODELS)
                        + ")")
    p.add_argument("--cores", default=",".join(map(str, CORES)),
                   help="comma-separated simulated core counts (default 1,8,32)")
    p.add_argument("--sram-kb", type=int, default=64, help="SRAM per core in KB (default 64)")
    p.add_argument("--json", metavar="FILE", help="write the full results as JSON")
    p.add_argument("--output", metavar="FILE", help="also write the markdown table to FILE")
    p.add_argument("--in-process", action="store_true",
                   help="run every model in this process (default: one child process per "
                        "model, so a runtime that aborts costs one row)")
    a = p.parse_args(list(argv))
    try:
        a.cores = [int(c) for c in a.cores.split(",") if c]
    except ValueError:
        p.error(f"--cores {a.cores!r}: give comma-separated integers")
    for c in a.cores:
        try:
            model_report.HwOptions(cores=c, sram_kb=a.sram_kb).validate("tflite")
        except ValueError as e:
            p.error(str(e))
    bad = [m for m in a.models if not m.endswith(".tflite") and m not in models.MODELS]
    if bad:
        p.error(f"unknown model(s) {', '.join(bad)}: not .tflite paths nor one of "
                f"{', '.join(sorted(models.MODELS))}")
    a.models = a.models or list(DEFAULT_MODELS)
    return a


def run(args: argparse.Namespace, command: str) -> Dict[str, Any]:
    import tensorflow as tf

    import nacc

    rows = []
    for m in args.models:
        print(f"coverage: {m} ...", file=sys.stderr, flush=True)
        rows.append(model_row(m, args.cores, args.sram_kb) if args.in_process
                    else isolated_row(m, args.cores, args.sram_kb))
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            "nacc_version": nacc.__version__, "tensorflow": tf.__version__,
            "cores": args.cores, "sram_kb": args.sram_kb, "command": command, "models": rows}


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    report = run(args, " ".join(["python -m nacc.coverage", *argv]))
    text = markdown(report)
    print(text)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text + "\n")
    if args.json:
        model_report.write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

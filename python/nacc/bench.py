"""nacc bench: how fast would a model be on the NACC, and does it compute the same numbers?

For each model (the default set, built on first use and cached — see
nacc/models.py — or any .tflite / .onnx path given), in one process:

- TFLite: XNNPACK (TFLite's default kernels), BUILTIN_REF (the oracle), and
  BUILTIN_REF + the nacc delegate;
- ONNX Runtime: the CPU EP (the oracle) and the nacc EP in front of it.

Reports host latency (mean, median, p90, p99 and min of --runs Invokes after
--warmup, the runtimes interleaved; throughput), exactness against the oracle
(bit-exact / differing elements / max abs difference), the simulated NPU
latency at 500 MHz and 1 GHz for 1-32 cores, device cycles against the
performance bound (the sum of the Programs' per-op bounds, `nacc docs
hardware` §8), useful MACs, DMA bytes against the move-once minimum, SRAM
high-water mark, partitions and the nodes that stay on the host. NPU figures
cover the NPU partitions only: host ops take no simulated time. Markdown on
stdout; --json FILE (the shared result schema of nacc/results.py); --plot DIR
(PNG charts).

    nacc bench [MODEL ...] [--quick] [--runs N] [--json out.json] [--plot DIR]
    python -m nacc.bench ...
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import textwrap
import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from nacc import results
from nacc.cli import CliError, Parser, output_dir, output_file

CORES = (1, 2, 4, 8, 16, 32)
CLOCKS_MHZ = (500, 1000)
EXTRA_HINT = "pip install 'nacc[bench]'"
# Ops shown in the per-op chart (the largest by cycles) when a model has more.
CHART_TOP_OPS = 24


# ---- small helpers -----------------------------------------------------------------------

def _lazy(module: str, what: str):
    try:
        return __import__(module, fromlist=["_"])
    except ImportError as e:
        raise CliError(f"{what} needs {module.split('.')[0]}, which is not installed: "
                       f"{EXTRA_HINT}") from e


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class Progress:
    """A tqdm bar on stderr (or nothing with --no-progress)."""

    def __init__(self, total: int, enabled: bool):
        self.bar = None
        if enabled:
            tqdm = _lazy("tqdm", "the progress bar (or pass --no-progress)").tqdm
            self.bar = tqdm(total=total, unit="step", file=sys.stderr, dynamic_ncols=True)

    def step(self, text: str, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.set_description(text[:60])
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _npu_entry(rep: Dict[str, Any]) -> Dict[str, Any]:
    """A report's NPU totals (results.npu) plus the latency at every bench clock."""
    t = dict(rep["totals"])
    t["latency_us_by_clock"] = {str(mhz): t["cycles"] / mhz for mhz in CLOCKS_MHZ}
    return t


def _common(res: Dict[str, Any], rep: Dict[str, Any]) -> None:
    """Claim, host nodes and per-op rows of the report of the host-cores run."""
    res["nodes"] = {"claimed": rep["claimed_nodes"], "total": rep["total_nodes"]}
    res["partitions"] = len(rep["partitions"])
    res["host"] = rep["host"]
    res["fallbacks"] = [{"node": d["node"], "op": d["op"], "name": d["name"],
                         "reason": "; ".join(d["reasons"]) or
                         ("host-only op kind" if d["host_kind"] else "")}
                        for d in rep["declined"]]
    res["per_layer"] = [dict(partition=p["index"], **{k: r[k] for k in (
        "name", "kind", "cycles", "bound_cycles", "cycles_vs_bound", "macs", "dma_bytes",
        "min_dma_bytes")}) for p in rep["partitions"] for r in p["layers"] if r["op"] >= 0]


def _interleaved(timed: Dict[str, Any], run_one, args) -> Dict[str, Dict[str, Any]]:
    """Host latency of each runtime, the runtimes interleaved (the machine may be shared)."""
    samples: Dict[str, List[float]] = {k: [] for k in timed}
    for i in range(args.warmup + args.runs):
        for k, it in timed.items():
            t = run_one(it)
            if i >= args.warmup:
                samples[k].append(t)
    return {k: results.timing(v) for k, v in samples.items()}


# ---- TFLite ---------------------------------------------------------------------------------

def _invoke(interp, inputs) -> float:
    for d, x in zip(interp.get_input_details(), inputs):
        interp.set_tensor(d["index"], x)
    t0 = time.perf_counter()
    interp.invoke()
    return (time.perf_counter() - t0) * 1e3


def _outputs(interp) -> List[np.ndarray]:
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]


def bench_tflite(name: str, model: bytes, args, progress: Progress) -> Dict[str, Any]:
    import tensorflow as tf

    import nacc
    from nacc import model_report

    ref_type = tf.lite.experimental.OpResolverType.BUILTIN_REF
    res: Dict[str, Any] = {"model": name, "runtime": "tflite", "oracle": "builtin_ref"}

    def make(delegate=None, ref=True):
        kw = dict(model_content=model, num_threads=1)
        if ref:
            kw["experimental_op_resolver_type"] = ref_type
        if delegate is not None:
            kw["experimental_delegates"] = [delegate]
        it = tf.lite.Interpreter(**kw)
        it.allocate_tensors()
        return it

    xnn, ref = make(ref=False), make()
    inputs = model_report.random_inputs(ref.get_input_details())
    # XNNPACK takes no int16 tensors: on a 16x8 model TFLite's default
    # interpreter runs its builtin (optimized) kernels instead.
    res["int16"] = any(d["dtype"] == np.int16 for d in ref.get_input_details())
    delegates, interps = {}, {}
    for cores in args.cores_list:
        d = nacc.load_delegate(cores=cores, threads=args.threads, log_level="off")
        delegates[cores], interps[cores] = d, make(d)
    progress.step(f"{name}: tflite prepared")

    timed = {"xnnpack": xnn, "builtin_ref": ref, "nacc": interps[args.host_cores]}
    res["host_ms"] = _interleaved(timed, lambda it: _invoke(it, inputs), args)
    res["host_cores"] = args.host_cores
    want = _outputs(ref)
    names = [d["name"] for d in ref.get_output_details()]
    res["exact"] = results.agreement(_outputs(interps[args.host_cores]), want, names)
    res["xnnpack_vs_ref"] = results.agreement(_outputs(xnn), want, names)
    progress.step(f"{name}: tflite timed")

    npu, all_exact = {}, res["exact"]["bit_exact"]
    for cores in args.cores_list:
        if cores != args.host_cores:
            _invoke(interps[cores], inputs)
            all_exact = all_exact and results.agreement(_outputs(interps[cores]), want)["bit_exact"]
        hw = model_report.HwOptions(cores=cores, clock_mhz=CLOCKS_MHZ[0], threads=args.threads)
        rep = model_report._report_from_delegate(delegates[cores].report(), hw, name=name)
        npu[str(cores)] = _npu_entry(rep)
        if cores == args.host_cores:
            _common(res, rep)
        progress.step(f"{name}: tflite {cores} cores")
    res["exact"]["bit_exact_all_cores"] = all_exact
    res["npu"] = npu
    return res


# ---- ONNX Runtime ---------------------------------------------------------------------------

def bench_onnx(name: str, model: bytes, args, progress: Progress) -> Dict[str, Any]:
    import onnxruntime as ort

    import nacc.onnxruntime as nort
    from nacc import model_report

    nort.register()
    res: Dict[str, Any] = {"model": name, "runtime": "onnxruntime", "oracle": "ort_cpu"}

    def options():
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.log_severity_level = 3
        return so

    cpu = ort.InferenceSession(model, sess_options=options(), providers=["CPUExecutionProvider"])
    feeds = model_report._ort_feeds(cpu, 0)
    sessions, reports = {}, {}
    for cores in args.cores_list:
        before = nort.report_seq()
        # create_session raises EpNotUsedError if ORT fell back to the CPU EP.
        sessions[cores] = nort.create_session(model, {
            "cores": cores, "threads": args.threads, "log_level": "off"}, options())
        reports[cores] = nort.reports_after(before, {})
    progress.step(f"{name}: onnx prepared")

    def run(sess):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        return (time.perf_counter() - t0) * 1e3

    timed = {"ort_cpu": cpu, "nacc_ep": sessions[args.host_cores]}
    res["host_ms"] = _interleaved(timed, run, args)
    res["host_cores"] = args.host_cores
    want = cpu.run(None, feeds)
    names = [o.name for o in cpu.get_outputs()]
    res["exact"] = results.agreement(sessions[args.host_cores].run(None, feeds), want, names)
    progress.step(f"{name}: onnx timed")

    npu, all_exact = {}, res["exact"]["bit_exact"]
    for cores in args.cores_list:
        before = nort.run_stats()
        got = sessions[cores].run(None, feeds)
        all_exact = all_exact and results.agreement(got, want)["bit_exact"]
        after = nort.run_stats()
        # Sessions of one model share fused node names: this run's are the entries it advanced.
        mine = {k: v for k, v in after.items() if v.get("runs", 0) != before.get(k, {}).get("runs", 0)}
        hw = model_report.HwOptions(cores=cores, clock_mhz=CLOCKS_MHZ[0], threads=args.threads)
        parts, declined, total, claimed = model_report.ep_partitions(
            nort.attach_run_stats(reports[cores], mine), hw)
        rep = {"partitions": parts, "declined": declined, "total_nodes": total,
               "claimed_nodes": claimed}
        model_report._finish(rep, hw, None, None, "")
        npu[str(cores)] = _npu_entry(rep)
        if cores == args.host_cores:
            _common(res, rep)
        progress.step(f"{name}: onnx {cores} cores")
    res["exact"]["bit_exact_all_cores"] = all_exact
    res["npu"] = npu
    return res


# ---- output ---------------------------------------------------------------------------------

def _fmt_ms(t: Optional[Dict[str, float]]) -> str:
    return "-" if not t else f"{t['median']:.2f} ({t['p90']:.2f} / {t['min']:.2f})"


def _exact_text(e: Dict[str, Any]) -> str:
    if e["bit_exact"]:
        return "bit-exact" + ("" if e.get("bit_exact_all_cores", True) else " (not at all cores)")
    return f"{e['differing']}/{e['elements']} differ, max {e['max_abs_diff']:.4g}"


def _kinds(fallbacks: Sequence[Dict[str, Any]]) -> str:
    kinds: Dict[str, int] = {}
    for f in fallbacks:
        kinds[f["op"]] = kinds.get(f["op"], 0) + 1
    return ", ".join(f"{k}×{v}" for k, v in sorted(kinds.items())) or "none"


def markdown(report: Dict[str, Any]) -> str:
    cores = report["cores"]
    lines = [f"nacc bench — {report['date']}, {report['cpu']}, nacc {report['nacc_version']}; "
             f"host ms = median (p90 / min) of {report['runs']} runs after {report['warmup']} "
             "warm-up, 1 host thread", ""]
    lines += ["| model | runtime | claimed / nodes | partitions | host ms: oracle | fast CPU | "
              "nacc | nacc vs oracle |", "|---|---|---|---|---|---|---|---|"]
    for r in report["models"]:
        h = r["host_ms"]
        if r["runtime"] == "tflite":
            oracle, fast, nacc_ms = h.get("builtin_ref"), h.get("xnnpack"), h.get("nacc")
            rt = ("TFLite 16x8 (REF / builtin: XNNPACK takes no int16)" if r.get("int16")
                  else "TFLite (REF / XNNPACK)")
        else:
            oracle, fast, nacc_ms = h.get("ort_cpu"), None, h.get("nacc_ep")
            rt = "ORT (CPU EP)"
        lines.append(f"| {r['model']} | {rt} | {r['nodes']['claimed']} / {r['nodes']['total']} | "
                     f"{r['partitions']} | {_fmt_ms(oracle)} | {_fmt_ms(fast)} | "
                     f"{_fmt_ms(nacc_ms)} @{r['host_cores']}c | {_exact_text(r['exact'])} |")
    lines += ["", "Simulated NPU latency, µs (device cycles / clock; the NPU partitions only, "
              "host ops excluded):", "",
              "| model | runtime | clock | " + " | ".join(f"{c} core{'s' * (c > 1)}" for c in cores)
              + " |", "|---|---|---|" + "---|" * len(cores)]
    for r in report["models"]:
        for mhz in CLOCKS_MHZ:
            vals = [r["npu"].get(str(c), {}).get("latency_us_by_clock", {}).get(str(mhz))
                    for c in cores]
            lines.append(f"| {r['model']} | {r['runtime']} | {mhz} MHz | "
                         + " | ".join("-" if v is None else f"{v:.1f}" for v in vals) + " |")
    lines += ["", "Device cycles (cycles / performance bound, the sum of the per-op bounds of "
              "`nacc docs hardware` §8), useful MACs, DMA and SRAM:", "",
              "| model | runtime | " + " | ".join(f"{c}c cycles (x bound)" for c in cores)
              + " | MACs | DMA MB (x min), fewest cores | SRAM peak KB | host nodes |",
              "|---|---|" + "---|" * len(cores) + "---|---|---|---|"]
    for r in report["models"]:
        cells = []
        for c in cores:
            n = r["npu"].get(str(c))
            if n is None:
                cells.append("-")
                continue
            ratio = n["cycles_vs_bound"]
            cells.append(f"{n['cycles']:,}" + (f" ({ratio:.2f})" if ratio else ""))
        n1 = r["npu"][min(r["npu"], key=int)]
        dma = f"{n1['dma_bytes'] / 1e6:.2f}" + (f" ({n1['dma_vs_min']:.2f})" if n1["dma_vs_min"]
                                                 else "")
        lines.append(f"| {r['model']} | {r['runtime']} | " + " | ".join(cells)
                     + f" | {n1['macs']:,} | {dma} | {n1['sram_high_water'] / 1024:.1f} | "
                     f"{_kinds(r['fallbacks'])} |")
    return "\n".join(lines)


def _plain(v: float, _pos=None) -> str:
    """Tick label as a plain number (12, 0.5, 1500), never 6x10^0."""
    return f"{v:,.0f}" if v >= 10 else f"{v:g}"


CAPTION = ("Simulated latency of the NACC partitions only (host ops are excluded). Bound: per op "
           "max(MAC-array cycles, activation cycles, move-once DMA bytes / bandwidth), summed "
           "over the ops (nacc docs hardware, §8).")


def plot(report: Dict[str, Any], out_dir: str) -> List[str]:
    matplotlib = _lazy("matplotlib", "--plot")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    os.makedirs(out_dir, exist_ok=True)
    written = []
    colors = {CLOCKS_MHZ[0]: "tab:blue", CLOCKS_MHZ[1]: "tab:orange"}
    for r in report["models"]:
        cores = sorted(int(c) for c in r["npu"])
        fig, ax = plt.subplots(figsize=(7, 5))
        for mhz in CLOCKS_MHZ:
            ax.plot(cores, [r["npu"][str(c)]["latency_us_by_clock"][str(mhz)] for c in cores],
                    marker="o", color=colors[mhz], label=f"simulated, {mhz} MHz")
            bound = [r["npu"][str(c)]["bound_cycles"] for c in cores]
            if all(bound):
                ax.plot(cores, [b / mhz for b in bound], ls="--", color=colors[mhz], alpha=0.6,
                        label=f"performance bound, {mhz} MHz")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(ticker.FixedLocator(cores))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(_plain))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(_plain))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_xlabel("NACC cores")
        ax.set_ylabel("NPU latency per inference (µs)")
        ax.set_title(f"{r['model']} ({r['runtime']}): simulated latency vs cores")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8)
        fig.text(0.01, 0.01, textwrap.fill(CAPTION, 120), fontsize=7, va="bottom")
        fig.tight_layout(rect=(0, 0.07, 1, 1))
        path = os.path.join(out_dir, f"latency_vs_cores_{r['model']}_{r['runtime']}.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
        written += _plot_layers(r, out_dir, plt, ticker)
    return written


def _plot_layers(r: Dict[str, Any], out_dir: str, plt, ticker) -> List[str]:
    """Per-op chart of the host-cores run: cycles and bound (top), cycles / bound (bottom);
    the CHART_TOP_OPS largest ops by cycles, in execution order; views (no work) left out."""
    layers = [l for l in r.get("per_layer") or [] if l["cycles"] or l["bound_cycles"]]
    if not layers:
        return []
    shown = sorted(sorted(range(len(layers)), key=lambda i: -layers[i]["cycles"])[:CHART_TOP_OPS])
    rows = [layers[i] for i in shown]
    x = np.arange(len(rows))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(7, 0.45 * len(rows) + 2), 7),
                                      sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    top.bar(x - 0.2, [max(l["cycles"], 1) for l in rows], 0.4, label="simulated cycles")
    top.bar(x + 0.2, [max(l["bound_cycles"], 1) for l in rows], 0.4, color="tab:gray",
            label="performance bound")
    top.set_yscale("log")
    top.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    top.yaxis.set_major_formatter(ticker.FuncFormatter(_plain))
    top.yaxis.set_minor_formatter(ticker.NullFormatter())
    top.set_ylabel("cycles")
    top.legend(fontsize=8)
    more = f", the {len(rows)} largest of {len(layers)} ops" if len(rows) < len(layers) else ""
    top.set_title(f"{r['model']} ({r['runtime']}) per op, {r.get('host_cores')} cores{more}")
    ratios = [l["cycles_vs_bound"] or 0.0 for l in rows]
    bottom.bar(x, ratios, color="tab:green")
    bottom.axhline(1.0, color="black", lw=0.8)
    for xi, v in zip(x, ratios):
        bottom.text(xi, v, f"{v:.2f}x", ha="center", va="bottom", fontsize=6)
    bottom.set_ylabel("cycles / bound")
    bottom.set_ylim(0, max(ratios + [1.0]) * 1.2)

    def label(l):
        part = l["name"].split(";")[0].strip("/").split("/")
        short = (part[-2] if len(part) > 1 and part[-1] in ("Relu", "Relu6", "BiasAdd") else
                 part[-1])[:18]
        return f"{l['kind']}\n{short}"

    bottom.set_xticks(x, [label(l) for l in rows], rotation=60, ha="right", fontsize=7)
    bottom.set_xlabel("op (kind and name, execution order)")
    fig.text(0.01, 0.005, "Ops of the NPU partitions; a ratio of 1.00x means the op runs at its "
             "bound (nacc docs hardware, §8).", fontsize=7, va="bottom")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    path = os.path.join(out_dir, f"per_layer_{r['model']}_{r['runtime']}.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


# ---- driver ---------------------------------------------------------------------------------

def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = Parser(
        prog="nacc bench", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Default models: " + ", ".join(_default_models()) + " (TFLite int8 and ONNX QDQ).")
    p.add_argument("models", nargs="*", metavar="MODEL",
                   help=".tflite / .onnx paths or default-model names (default: the default set)")
    p.add_argument("--quick", action="store_true",
                   help="small models, few runs, cores 1 and 8 (for tests)")
    p.add_argument("--int16", action="store_true",
                   help="the default set is the TFLite 16x8 models (int16 activations, int8 "
                        "weights: " + ", ".join(_int16_models()) + ") against BUILTIN_REF")
    p.add_argument("--runs", type=int, default=None, help="timed runs per runtime (default 10; quick 2)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up runs (default 2; quick 1)")
    p.add_argument("--cores", default=None,
                   help="comma-separated core counts to simulate (default 1,2,4,8,16,32)")
    p.add_argument("--host-cores", type=int, default=None,
                   help="core count of the timed nacc runs and exactness check (default 8, "
                        "or the largest simulated count below it)")
    p.add_argument("--threads", type=int, default=1, help="host threads simulating the cores")
    p.add_argument("--runtime", choices=("both", "tflite", "onnx"), default="both",
                   help="for default models: which runtimes to run")
    p.add_argument("--json", metavar="FILE", help="write the full results as JSON")
    p.add_argument("--plot", metavar="DIR", help="write PNG charts (matplotlib)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--host", action="store_true", help="the host-speed benchmark instead "
                   "(nacc.host_bench; `nacc bench --host --help`, docs/host_speed.md)")
    a = p.parse_args(list(argv))
    a.runs = a.runs if a.runs is not None else (2 if a.quick else 10)
    a.warmup = a.warmup if a.warmup is not None else 1 if a.quick else 2
    if a.runs < 1 or a.warmup < 0:
        p.error("--runs must be >= 1 and --warmup >= 0")
    try:
        a.cores_list = sorted({int(c) for c in a.cores.split(",")}) if a.cores else \
            ([1, 8] if a.quick else list(CORES))
    except ValueError:
        p.error(f"--cores {a.cores!r}: give comma-separated integers from {CORES}")
    bad = [c for c in a.cores_list if c not in CORES]
    if bad:
        p.error(f"--cores: {bad} not allowed; allowed: {', '.join(map(str, CORES))}")
    if a.host_cores is None:
        a.host_cores = max([c for c in a.cores_list if c <= 8] or a.cores_list[:1])
    elif a.host_cores not in a.cores_list:
        p.error(f"--host-cores {a.host_cores} must be one of the simulated --cores {a.cores_list}")
    if a.threads < 1:
        p.error("--threads must be >= 1")
    return a


def _default_models():
    from nacc import models as _models

    return _models.BENCH_MODELS


def _int16_models():
    from nacc import models as _models

    return _models.BENCH_INT16_MODELS


def _jobs(args) -> List[Dict[str, str]]:
    from nacc import models as _models
    from nacc.cli import model_file

    names = list(args.models) or list(
        (_models.BENCH_INT16_MODELS[:1] if args.quick else _models.BENCH_INT16_MODELS)
        if args.int16 else _models.QUICK_MODELS if args.quick else _models.BENCH_MODELS)
    jobs = []
    for m in names:
        if m in _models.INT16X8_MODELS:  # TFLite only: ORT's CPU EP has no int16 kernels
            if args.runtime == "onnx":
                raise CliError(f"{m!r} is a TFLite 16x8 model; it has no ONNX counterpart", 2)
            jobs.append({"name": m, "kind": "tflite", "source": "default"})
        elif m in _models.MODELS:
            kinds = ("tflite", "onnx") if args.runtime == "both" else (args.runtime,)
            jobs += [{"name": m, "kind": k, "source": "default"} for k in kinds]
        elif m.endswith(".tflite") or m.endswith(".onnx"):
            kind = model_file(m)
            jobs.append({"name": os.path.splitext(os.path.basename(m))[0], "kind": kind,
                         "source": os.path.abspath(m)})
        else:
            raise CliError(f"{m!r} is neither a .tflite / .onnx file nor a default "
                           f"model ({', '.join(_models.MODELS)})", 2)
    return jobs


def run(args: argparse.Namespace) -> Dict[str, Any]:
    import nacc
    from nacc import models as _models

    jobs = _jobs(args)
    steps_per_job = 2 + len(args.cores_list) + 1
    progress = Progress(len(jobs) * steps_per_job, not args.no_progress)
    out = []
    versions = {}
    try:
        for job in jobs:
            progress.step(f"{job['name']}: {job['kind']} model", 0)
            if job["source"] == "default":
                model = _models.model_bytes(job["name"], job["kind"])
            else:
                with open(job["source"], "rb") as f:
                    model = f.read()
            progress.step(f"{job['name']}: {job['kind']} model ready")
            fn = bench_tflite if job["kind"] == "tflite" else bench_onnx
            r = fn(job["name"], model, args, progress)
            r["source"] = job["source"]
            out.append(r)
            if job["kind"] == "tflite":
                import tensorflow as tf

                versions["tensorflow"] = tf.__version__
            else:
                import onnxruntime as ort

                versions["onnxruntime"] = ort.__version__
    finally:
        progress.close()
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_name(), "host_cpus": os.cpu_count(), "nacc_version": nacc.__version__,
        **versions, "runs": args.runs, "warmup": args.warmup, "cores": args.cores_list,
        "clocks_mhz": list(CLOCKS_MHZ), "host_cores": args.host_cores, "threads": args.threads,
        "models": out,
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--host" in argv:
        from nacc import host_bench

        return host_bench.main([a for a in argv if a != "--host"])
    args = parse_args(argv)
    if args.json:
        output_file(args.json)
    if args.plot:
        output_dir(args.plot)
        _lazy("matplotlib", "--plot")
    report = run(args)
    print(markdown(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    if args.plot:
        for path in plot(report, args.plot):
            print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    from nacc.cli import guarded

    sys.exit(guarded("bench", lambda: main(sys.argv[1:])))

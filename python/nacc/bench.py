"""nacc bench: how fast would a model be on the NACC, and does it compute the same numbers?

For each model (the default set, built on first use and cached — see
nacc/models.py — or any .tflite / .onnx path given), in one process:

- TFLite: XNNPACK (TFLite's default kernels), BUILTIN_REF (the oracle), and
  BUILTIN_REF + the nacc delegate;
- ONNX Runtime: the CPU EP (the oracle) and the nacc EP in front of it.

Reports host latency (median and min of --runs Invokes after --warmup, the
runtimes interleaved), exactness against the oracle (bit-exact / differing
elements / max abs difference), the simulated NPU latency at 500 MHz and 1 GHz
for 1-32 cores, device cycles against the NACC_SPEC §8 bound (the sum of the
Programs' per-op bounds), DMA bytes, SRAM high-water mark, partitions and the
nodes that stay on the host. Markdown on stdout; --json FILE; --plot DIR (PNG).

    nacc bench [MODEL ...] [--quick] [--runs N] [--json out.json] [--plot DIR]
    python -m nacc.bench ...
"""
from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

CORES = (1, 2, 4, 8, 16, 32)
CLOCKS_MHZ = (500, 1000)
EXTRA_HINT = "pip install 'nacc[bench]'"


# ---- small helpers -----------------------------------------------------------------------

def _lazy(module: str, what: str):
    try:
        return __import__(module, fromlist=["_"])
    except ImportError as e:
        raise SystemExit(f"nacc bench: {what} needs {module.split('.')[0]}, which is not "
                         f"installed: {EXTRA_HINT}") from e


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def compare_arrays(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> Dict[str, Any]:
    """Element-wise comparison of output lists: differing elements, max abs difference."""
    differing = elements = 0
    max_abs = 0.0
    for g, w in zip(got, want):
        g64, w64 = np.asarray(g, np.float64), np.asarray(w, np.float64)
        d = np.abs(g64 - w64)
        differing += int(np.count_nonzero(d))
        elements += int(d.size)
        max_abs = max(max_abs, float(d.max()) if d.size else 0.0)
    return {"bit_exact": differing == 0, "differing": differing, "elements": elements,
            "max_abs_diff": max_abs}


def _timing(samples: List[float]) -> Dict[str, float]:
    return {"median": statistics.median(samples), "min": min(samples), "runs": len(samples)}


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


def _programs(dump_dir: str) -> List[Any]:
    from nacc import _core

    progs = []
    # The delegate's dump_dir: <tag>.program (a Program container); the EP's:
    # <fused node>.naccpart (bindings, then u64 length + the Program container).
    for path in sorted(glob.glob(os.path.join(dump_dir, "*.program")) +
                       glob.glob(os.path.join(dump_dir, "*.naccpart"))):
        with open(path, "rb") as f:
            blob = f.read()
        if path.endswith(".naccpart"):
            at = blob.find(b"NACCPROG")
            if at < 8:
                continue
            n = int.from_bytes(blob[at - 8:at], "little")
            blob = blob[at:at + n]
        progs.append(_core.Program.from_bytes(blob))
    return progs


def per_layer_cycles(programs: Sequence[Any]) -> List[Dict[str, Any]]:
    """Runs each Program once on the simulated device (zero inputs: cycles do not
    depend on values) and attributes the timeline to its ops: an op's cycles are
    from the end of the previous op's last command to the end of its own."""
    from nacc import _core

    rows = []
    for pi, prog in enumerate(programs):
        hw = prog.hw
        rt = _core.Runtime(cores=hw.cores, sram_kb=hw.sram_bytes // 1024)
        inputs = [np.zeros(t["size"], np.int8) for t in prog.inputs]
        _, stats = rt.run(prog, inputs, timeline=True)
        timeline = stats["timeline"]
        prev_end = 0
        for op in prog.ops:
            ends = [c["end"] for c in timeline if op["first_word"] <= c["word"] < op["end_word"]]
            end = max(ends) if ends else prev_end
            rows.append({"partition": pi, "op": op["name"], "kind": op["kind"],
                         "cycles": max(0, end - prev_end), "bound_cycles": op["bound_cycles"],
                         "macs": op["macs"]})
            prev_end = max(prev_end, end)
    return rows


# ---- TFLite ---------------------------------------------------------------------------------

def _tflite_inputs(interp, seed=0) -> List[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for d in interp.get_input_details():
        if d["dtype"] == np.float32:
            out.append(rng.uniform(-1, 1, d["shape"]).astype(np.float32))
        else:
            info = np.iinfo(d["dtype"])
            out.append(rng.integers(info.min, info.max + 1, d["shape"], dtype=d["dtype"]))
    return out


def _invoke(interp, inputs) -> float:
    for d, x in zip(interp.get_input_details(), inputs):
        interp.set_tensor(d["index"], x)
    t0 = time.perf_counter()
    interp.invoke()
    return (time.perf_counter() - t0) * 1e3


def _outputs(interp) -> List[np.ndarray]:
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]


def bench_tflite(name: str, model: bytes, args, progress: Progress, tmp: str) -> Dict[str, Any]:
    import tensorflow as tf

    import nacc

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
    inputs = _tflite_inputs(ref)
    delegates, interps = {}, {}
    for cores in args.cores_list:
        d = nacc.load_delegate(cores=cores, threads=args.threads, log_level="off",
                               dump_dir=os.path.join(tmp, f"{name}-tfl-{cores}"))
        delegates[cores], interps[cores] = d, make(d)
    progress.step(f"{name}: tflite prepared")

    # Host latency, the three runtimes interleaved (the machine may be shared).
    timed = {"xnnpack": xnn, "builtin_ref": ref, "nacc": interps[args.host_cores]}
    samples: Dict[str, List[float]] = {k: [] for k in timed}
    for i in range(args.warmup + args.runs):
        for k, it in timed.items():
            t = _invoke(it, inputs)
            if i >= args.warmup:
                samples[k].append(t)
    res["host_ms"] = {k: _timing(v) for k, v in samples.items()}
    res["host_cores"] = args.host_cores
    want = _outputs(ref)
    res["exact"] = compare_arrays(_outputs(interps[args.host_cores]), want)
    res["xnnpack_vs_ref"] = compare_arrays(_outputs(xnn), want)
    progress.step(f"{name}: tflite timed")

    npu = {}
    for cores in args.cores_list:
        if cores != args.host_cores:
            _invoke(interps[cores], inputs)
            other = compare_arrays(_outputs(interps[cores]), want)
            res["exact"]["bit_exact_all_cores"] = (res["exact"].get("bit_exact_all_cores", True)
                                                   and other["bit_exact"])
        rep = delegates[cores].report()
        cycles = sum(p.last_cycles for p in rep.partitions)
        progs = _programs(os.path.join(tmp, f"{name}-tfl-{cores}"))
        bound = sum(op["bound_cycles"] for p in progs for op in p.ops)
        npu[str(cores)] = {
            "cycles": cycles, "bound_cycles": bound,
            "cycles_over_bound": cycles / bound if bound else None,
            "latency_us": {str(mhz): cycles / mhz for mhz in CLOCKS_MHZ},
            "dma_bytes": sum(p.last_dma_bytes for p in rep.partitions),
            "sram_peak": max((p.sram_peak for p in rep.partitions), default=0),
            "macs": sum(p.macs for p in rep.partitions),
        }
        progress.step(f"{name}: tflite {cores} cores")
    res["exact"].setdefault("bit_exact_all_cores", res["exact"]["bit_exact"])
    res["npu"] = npu
    rep = delegates[args.host_cores].report()
    res["nodes"] = {"claimed": rep.claimed_nodes, "total": rep.total_nodes}
    res["partitions"] = len(rep.partitions)
    res["fallbacks"] = [{"node": n.node, "op": n.op, "name": n.name,
                         "reason": "; ".join(r.message for r in n.reasons) or
                         ("host-only op kind" if n.host_kind else "")}
                        for n in rep.nodes if not n.claimed]
    if args.per_layer and name == args.per_layer_model:
        res["per_layer"] = per_layer_cycles(_programs(os.path.join(tmp, f"{name}-tfl-{args.host_cores}")))
        res["per_layer_cores"] = args.host_cores
    return res


# ---- ONNX Runtime ---------------------------------------------------------------------------

_ORT_TYPES = {"tensor(float)": np.float32, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8}


def _ort_inputs(sess, seed=0) -> Dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
        dt = _ORT_TYPES.get(i.type, np.float32)
        if dt == np.float32:
            feeds[i.name] = rng.uniform(-1, 1, shape).astype(np.float32)
        else:
            info = np.iinfo(dt)
            feeds[i.name] = rng.integers(info.min, info.max + 1, shape, dtype=dt)
    return feeds


def bench_onnx(name: str, model: bytes, args, progress: Progress, tmp: str) -> Dict[str, Any]:
    import onnxruntime as ort

    import nacc.onnxruntime as nort

    nort.register()
    ort.set_default_logger_severity(3)  # nacc's per-node placement warnings: see the report
    res: Dict[str, Any] = {"model": name, "runtime": "onnxruntime", "oracle": "ort_cpu"}

    def session(providers):
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.log_severity_level = 3
        return ort.InferenceSession(model, sess_options=so, providers=providers)

    cpu = session(["CPUExecutionProvider"])
    feeds = _ort_inputs(cpu)
    sessions = {}
    reports = {}
    for cores in args.cores_list:
        before = len(nort.partition_reports())
        sessions[cores] = session([(nort.get_ep_name(), {
            "cores": str(cores), "threads": str(args.threads),
            "dump_dir": os.path.join(tmp, f"{name}-ort-{cores}")}), "CPUExecutionProvider"])
        after = nort.partition_reports()
        reports[cores] = after[before:] if len(after) > before else after[-1:]
    progress.step(f"{name}: onnx prepared")

    def run(sess):
        t0 = time.perf_counter()
        out = sess.run(None, feeds)
        return (time.perf_counter() - t0) * 1e3, out

    timed = {"ort_cpu": cpu, "nacc_ep": sessions[args.host_cores]}
    samples: Dict[str, List[float]] = {k: [] for k in timed}
    for i in range(args.warmup + args.runs):
        for k, s in timed.items():
            t, _ = run(s)
            if i >= args.warmup:
                samples[k].append(t)
    res["host_ms"] = {k: _timing(v) for k, v in samples.items()}
    res["host_cores"] = args.host_cores
    want = cpu.run(None, feeds)
    res["exact"] = compare_arrays(sessions[args.host_cores].run(None, feeds), want)
    progress.step(f"{name}: onnx timed")

    npu = {}
    for cores in args.cores_list:
        before = nort.run_stats()
        sessions[cores].run(None, feeds)
        after = nort.run_stats()
        mine = [v for k, v in after.items() if v.get("runs", 0) != before.get(k, {}).get("runs", 0)]
        cycles = sum(v.get("cycles", 0) for v in mine)
        progs = _programs(os.path.join(tmp, f"{name}-ort-{cores}"))
        bound = sum(op["bound_cycles"] for p in progs for op in p.ops) if progs else None
        npu[str(cores)] = {
            "cycles": cycles, "bound_cycles": bound,
            "cycles_over_bound": cycles / bound if bound else None,
            "latency_us": {str(mhz): cycles / mhz for mhz in CLOCKS_MHZ},
            "dma_bytes": None, "sram_peak": None,  # not reported by the EP
            "macs": sum(v.get("macs", 0) for v in mine),
        }
        progress.step(f"{name}: onnx {cores} cores")
    res["npu"] = npu
    reps = reports[args.host_cores]
    res["nodes"] = {"claimed": sum(r.get("claimed_nodes", 0) for r in reps),
                    "total": sum(r.get("total_nodes", 0) for r in reps)}
    res["partitions"] = sum(len(r.get("partitions", [])) for r in reps)
    res["fallbacks"] = [{"node": h.get("name"), "op": h.get("op_type"), "name": h.get("name"),
                         "reason": h.get("reason", "")}
                        for r in reps for h in r.get("host_nodes", [])]
    return res


# ---- output ---------------------------------------------------------------------------------

def _fmt_ms(t: Optional[Dict[str, float]]) -> str:
    return "-" if not t else f"{t['median']:.2f} ({t['min']:.2f})"


def _exact_text(e: Dict[str, Any]) -> str:
    if e["bit_exact"]:
        return "bit-exact" + ("" if e.get("bit_exact_all_cores", True) else " (not at all cores)")
    return f"{e['differing']}/{e['elements']} differ, max {e['max_abs_diff']:.4g}"


def markdown(report: Dict[str, Any]) -> str:
    cores = report["cores"]
    lines = [f"nacc bench — {report['date']}, {report['cpu']}, nacc {report['nacc_version']}; "
             f"host ms = median (min) of {report['runs']} runs after {report['warmup']} warm-up, "
             "1 host thread", ""]
    lines += ["| model | runtime | claimed / nodes | partitions | host ms: oracle | fast CPU | "
              "nacc | nacc vs oracle |", "|---|---|---|---|---|---|---|---|"]
    for r in report["models"]:
        h = r["host_ms"]
        if r["runtime"] == "tflite":
            oracle, fast, nacc_ms = h.get("builtin_ref"), h.get("xnnpack"), h.get("nacc")
            rt = "TFLite (REF / XNNPACK)"
        else:
            oracle, fast, nacc_ms = h.get("ort_cpu"), None, h.get("nacc_ep")
            rt = "ORT (CPU EP)"
        lines.append(f"| {r['model']} | {rt} | {r['nodes']['claimed']} / {r['nodes']['total']} | "
                     f"{r['partitions']} | {_fmt_ms(oracle)} | {_fmt_ms(fast)} | "
                     f"{_fmt_ms(nacc_ms)} @{r['host_cores']}c | {_exact_text(r['exact'])} |")
    lines += ["", "Simulated NPU latency, µs (device cycles / clock):", "",
              "| model | runtime | clock | " + " | ".join(f"{c} core{'s' * (c > 1)}" for c in cores)
              + " |", "|---|---|---|" + "---|" * len(cores)]
    for r in report["models"]:
        for mhz in CLOCKS_MHZ:
            vals = [r["npu"].get(str(c), {}).get("latency_us", {}).get(str(mhz)) for c in cores]
            lines.append(f"| {r['model']} | {r['runtime']} | {mhz} MHz | "
                         + " | ".join("-" if v is None else f"{v:.1f}" for v in vals) + " |")
    lines += ["", "Device cycles / NACC_SPEC §8 bound (sum of per-op bounds), DMA and SRAM:", "",
              "| model | runtime | " + " | ".join(f"{c}c cycles (x bound)" for c in cores)
              + " | DMA MB (fewest cores) | SRAM peak KB | host fallbacks |",
              "|---|---|" + "---|" * len(cores) + "---|---|---|"]
    for r in report["models"]:
        cells = []
        for c in cores:
            n = r["npu"].get(str(c))
            if n is None:
                cells.append("-")
                continue
            ratio = n["cycles_over_bound"]
            cells.append(f"{n['cycles']:,}" + (f" ({ratio:.2f})" if ratio else ""))
        n1 = r["npu"][min(r["npu"], key=int)]
        dma = "-" if n1["dma_bytes"] is None else f"{n1['dma_bytes'] / 1e6:.2f}"
        sram = "-" if n1["sram_peak"] is None else f"{n1['sram_peak'] / 1024:.1f}"
        kinds: Dict[str, int] = {}
        for f in r["fallbacks"]:
            kinds[f["op"]] = kinds.get(f["op"], 0) + 1
        fb = ", ".join(f"{k}×{v}" for k, v in sorted(kinds.items())) or "none"
        lines.append(f"| {r['model']} | {r['runtime']} | " + " | ".join(cells)
                     + f" | {dma} | {sram} | {fb} |")
    return "\n".join(lines)


def plot(report: Dict[str, Any], out_dir: str) -> List[str]:
    matplotlib = _lazy("matplotlib", "--plot")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(out_dir, exist_ok=True)
    written = []
    for r in report["models"]:
        cores = sorted(int(c) for c in r["npu"])
        fig, ax = plt.subplots(figsize=(6, 4))
        for mhz in CLOCKS_MHZ:
            ax.plot(cores, [r["npu"][str(c)]["latency_us"][str(mhz)] for c in cores], marker="o",
                    label=f"{mhz} MHz")
        bound = [r["npu"][str(c)]["bound_cycles"] for c in cores]
        if all(bound):
            ax.plot(cores, [b / CLOCKS_MHZ[0] for b in bound], ls="--", color="grey",
                    label=f"§8 bound @{CLOCKS_MHZ[0]} MHz")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(cores, [str(c) for c in cores])
        ax.set_xlabel("NACC cores")
        ax.set_ylabel("simulated latency (µs)")
        ax.set_title(f"{r['model']} ({r['runtime']})")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        path = os.path.join(out_dir, f"latency_vs_cores_{r['model']}_{r['runtime']}.png")
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
        # Views (RESHAPE: no commands, bound 0) are left out.
        layers = [l for l in r.get("per_layer") or [] if l["cycles"] or l["bound_cycles"]]
        if layers:
            fig, ax = plt.subplots(figsize=(min(24, max(6, len(layers) * 0.12)), 4))
            x = np.arange(len(layers))
            ax.bar(x, [max(l["cycles"], 1) for l in layers], label="simulated cycles")
            ax.plot(x, [max(l["bound_cycles"], 1) for l in layers], color="red", marker="_",
                    ls="none", ms=8, label="§8 bound")
            ax.set_yscale("log")
            if len(layers) <= 20:
                short = [l["op"].split(";")[0].strip("/").split("/") for l in layers]
                ax.set_xticks(x, [f"{l['kind']}\n{(p[-2] if len(p) > 1 else p[0])[:16]}"
                                  for l, p in zip(layers, short)], fontsize=7)
            ax.set_xlabel("op (execution order)")
            ax.set_ylabel("cycles")
            ax.set_title(f"{r['model']} per op, {r.get('per_layer_cores')} cores")
            ax.legend()
            path = os.path.join(out_dir, f"per_layer_{r['model']}_{r['runtime']}.png")
            fig.tight_layout()
            fig.savefig(path, dpi=100)
            plt.close(fig)
            written.append(path)
    return written


# ---- driver ---------------------------------------------------------------------------------

def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="nacc bench", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Default models: " + ", ".join(_default_models()) + " (TFLite int8 and ONNX QDQ).")
    p.add_argument("models", nargs="*", metavar="MODEL",
                   help=".tflite / .onnx paths or default-model names (default: the default set)")
    p.add_argument("--quick", action="store_true",
                   help="small models, few runs, cores 1 and 8 (for tests)")
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
    p.add_argument("--per-layer-model", default=None,
                   help="model whose per-op cycles vs bound are charted (default: the first)")
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


def _jobs(args) -> List[Dict[str, str]]:
    from nacc import models as _models

    names = list(args.models) or list(_models.QUICK_MODELS if args.quick
                                      else _models.BENCH_MODELS)
    jobs = []
    for m in names:
        if m in _models.MODELS:
            kinds = ("tflite", "onnx") if args.runtime == "both" else (args.runtime,)
            jobs += [{"name": m, "kind": k, "source": "default"} for k in kinds]
        elif m.endswith(".tflite") or m.endswith(".onnx"):
            if not os.path.isfile(m):
                raise SystemExit(f"nacc bench: {m}: no such file")
            kind = "tflite" if m.endswith(".tflite") else "onnx"
            jobs.append({"name": os.path.splitext(os.path.basename(m))[0], "kind": kind,
                         "source": os.path.abspath(m)})
        else:
            raise SystemExit(f"nacc bench: {m!r} is neither a .tflite / .onnx file nor a default "
                             f"model ({', '.join(_models.MODELS)})")
    return jobs


def run(args: argparse.Namespace) -> Dict[str, Any]:
    import nacc
    from nacc import models as _models

    jobs = _jobs(args)
    if args.per_layer_model is None and jobs:
        args.per_layer_model = jobs[0]["name"]
    args.per_layer = True
    steps_per_job = 2 + len(args.cores_list) + 1
    progress = Progress(len(jobs) * steps_per_job, not args.no_progress)
    results = []
    versions = {}
    try:
        with tempfile.TemporaryDirectory(prefix="nacc-bench-") as tmp:
            for job in jobs:
                progress.step(f"{job['name']}: {job['kind']} model", 0)
                if job["source"] == "default":
                    model = _models.model_bytes(job["name"], job["kind"])
                else:
                    with open(job["source"], "rb") as f:
                        model = f.read()
                progress.step(f"{job['name']}: {job['kind']} model ready")
                fn = bench_tflite if job["kind"] == "tflite" else bench_onnx
                r = fn(job["name"], model, args, progress, tmp)
                r["source"] = job["source"]
                results.append(r)
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
        "models": results,
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--host" in argv:
        from nacc import host_bench

        return host_bench.main([a for a in argv if a != "--host"])
    args = parse_args(argv)
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
    sys.exit(main(sys.argv[1:]))

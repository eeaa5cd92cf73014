"""Host speed of the simulation (issue 13, docs/host_speed.md): how long the host
takes to compute what the NPU would, against the runtimes' own CPU kernels, in
one process with every configuration interleaved per repetition.

- TFLite: XNNPACK, TFLite's optimized kernels without XNNPACK
  (BUILTIN_WITHOUT_DEFAULT_DELEGATES), BUILTIN_REF, and the nacc delegate on
  BUILTIN_REF (so only claimed work is nacc's) at each simulated core count and
  kernel path, for each host-thread count (the interpreter's ``num_threads`` =
  the delegate's ``threads``); ratios to XNNPACK; exactness against BUILTIN_REF.
- Prepare: interpreter + delegate creation with a cold compile and with a hit
  in the delegate's ``cache_dir``, and nacc's own compile time.
- ONNX Runtime: the nacc EP against the CPU EP on QDQ models (session
  intra-op threads = the EP's ``threads``), exactness, session creation time.
- The fixed per-invoke overhead: a 1x1x1x8 int8 ADD through the delegate minus
  the same model on BUILTIN_REF.
- The CPU model, its ISA flags and the kernel path nacc used; ``--kernel-path``
  forces each path this machine has (``set_kernel_path`` reaches the copies of
  the core inside the delegate and the EP libraries too).

    nacc bench --host [--quick] [--kernel-path all] [--json FILE]
    python benchmarks/host_speed.py ...
"""
from __future__ import annotations

import argparse
import ctypes
import datetime
import gc
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from nacc import results
from nacc.bench import cpu_name
from nacc.cli import CliError, Parser, guarded, output_file

__all__ = ["set_kernel_path", "kernel_path_info", "kernel_path_libraries", "cpu_isa_flags",
           "run", "markdown", "main"]

log = logging.getLogger("nacc.host_bench")

CORES = (1, 2, 4, 8, 16, 32)
THREADS = (1, 2)
# The /proc/cpuinfo flags the header reports (what decides nacc's ISA paths).
ISA_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")
OVERHEAD_TARGET_US = 30.0
DISPLAY_NAMES = {
    "mobilenet_v2_100_224": "MobileNetV2 1.0/224", "resnet50_224": "ResNet50/224",
    "mobilenet_v1_025_128": "MobileNetV1 0.25/128", "squeezenet_224": "squeezenet (224)",
    "inception_v2_224": "inception_v2 (224)", "digits_cnn": "digits CNN (8x8)",
    "mobilenet_v2_035_96": "MobileNetV2 0.35/96",
}


# ---- the kernel-path switch in every copy of the core ------------------------------------

class _CoreSwitch:
    """nacc._core's copy of the switch."""

    def set(self, name: str) -> None:
        from nacc import _core

        _core.set_kernel_path(name)

    def info(self) -> Dict[str, Any]:
        from nacc import _core

        return json.loads(_core.kernel_path_json())


class _LibrarySwitch:
    """A shared library's copy (the C functions of csrc/common/cpu.h)."""

    def __init__(self, label: str, path: str):
        self.label = label
        self.lib = ctypes.CDLL(path)  # the same handle the runtime gets: dlopen shares it
        self.lib.nacc_set_kernel_path.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                                  ctypes.c_size_t]
        self.lib.nacc_set_kernel_path.restype = ctypes.c_int
        self.lib.nacc_kernel_path_json.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        self.lib.nacc_kernel_path_json.restype = ctypes.c_size_t

    def set(self, name: str) -> None:
        err = ctypes.create_string_buffer(512)
        if self.lib.nacc_set_kernel_path(name.encode(), err, len(err)):
            raise ValueError(f"{self.label}: {err.value.decode(errors='replace')}")

    def info(self) -> Dict[str, Any]:
        n = self.lib.nacc_kernel_path_json(None, 0)
        buf = ctypes.create_string_buffer(n + 1)
        self.lib.nacc_kernel_path_json(buf, n + 1)
        return json.loads(buf.value.decode())


_switches: Optional[Dict[str, Any]] = None


def kernel_path_libraries() -> Dict[str, Any]:
    """The copies of the kernel-path switch in this installation: "nacc._core",
    "delegate" (libnacc_tflite_delegate.so) and "ep" (libnacc_ort_ep.so), those
    whose library exists."""
    global _switches
    if _switches is None:
        from nacc import onnxruntime as nort
        from nacc import tflite

        switches: Dict[str, Any] = {"nacc._core": _CoreSwitch()}
        for label, path in (("delegate", tflite.delegate_library_path()),
                            ("ep", os.path.join(os.path.dirname(tflite.delegate_library_path()),
                                                nort._LIBRARY_NAME))):
            if os.path.isfile(path):
                switches[label] = _LibrarySwitch(label, path)
        _switches = switches
    return _switches


def set_kernel_path(name: str) -> None:
    """Selects the kernel path `name` ('auto', 'reference' or one of
    ``nacc._core.kernel_paths()``) in nacc._core, the TFLite delegate and the
    ORT EP, process-wide. Raises ValueError for an unknown or unavailable name
    (naming the available ones) before changing any copy."""
    switches = kernel_path_libraries()
    switches["nacc._core"].set(name)
    for label, s in switches.items():
        if label != "nacc._core":
            s.set(name)


def kernel_path_info() -> Dict[str, Dict[str, Any]]:
    """Per copy of the switch: selected / active / best path, available paths, CPU features."""
    return {label: s.info() for label, s in kernel_path_libraries().items()}


def cpu_isa_flags() -> Dict[str, bool]:
    """ISA_FLAGS as /proc/cpuinfo lists them (all False where it is unreadable)."""
    flags: set = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    return {f: f in flags for f in ISA_FLAGS}


# ---- timing ------------------------------------------------------------------------------

class Config:
    """One timed configuration: `run` does one inference; `path` is the kernel
    path set before it (None: 'auto'). With `self_timed`, `run` times itself
    and returns the milliseconds to record (so set-up and tear-down around
    the measured part stay out)."""

    def __init__(self, key: str, run: Callable[[], Any], path: Optional[str] = None,
                 self_timed: bool = False):
        self.key, self.run, self.path, self.self_timed = key, run, path, self_timed
        self.samples: List[float] = []


def interleave(configs: Sequence[Config], warmup: int, runs: int, what: str) -> None:
    """Per repetition, every configuration once (so drift hits all alike); the
    first `warmup` repetitions are not recorded. Fills each config's samples (ms)."""
    current = None
    # The Python garbage collector stays out of the timed calls: everything
    # set up so far is frozen (not scanned again), and collection is off while
    # a configuration runs, on for the bookkeeping between them. Without this
    # a collection of TensorFlow's large heap landed inside a random sample
    # (about a tenth of a MobileNetV2 invoke in one profile).
    gc.collect()
    gc.freeze()
    was_enabled = gc.isenabled()
    try:
        for rep in range(warmup + runs):
            t_rep = time.perf_counter()
            for c in configs:
                want = c.path or "auto"
                if want != current:
                    set_kernel_path(want)
                    current = want
                gc.disable()
                try:
                    t0 = time.perf_counter()
                    r = c.run()
                    dt = float(r) if c.self_timed else (time.perf_counter() - t0) * 1e3
                finally:
                    if was_enabled:
                        gc.enable()
                if rep >= warmup:
                    c.samples.append(dt)
            log.info("%s: repetition %d/%d (%s) in %.1f s", what, rep + 1, warmup + runs,
                     "warm-up" if rep < warmup else "timed", time.perf_counter() - t_rep)
    finally:
        gc.unfreeze()
        set_kernel_path("auto")


def _runs_for(model: str, args) -> int:
    return args.resnet50_runs if model.startswith("resnet50") and args.resnet50_runs else args.runs


# ---- TFLite ------------------------------------------------------------------------------

def _tflite():
    import tensorflow as tf  # ModuleNotFoundError: nacc.cli names the extra to install

    return tf


def _interpreter(model: bytes, threads: int, resolver=None, delegate=None):
    tf = _tflite()
    kw: Dict[str, Any] = dict(model_content=model, num_threads=threads)
    if resolver is not None:
        kw["experimental_op_resolver_type"] = resolver
    if delegate is not None:
        kw["experimental_delegates"] = [delegate]
    it = tf.lite.Interpreter(**kw)
    it.allocate_tensors()
    return it


def _set_inputs(it, seed: int = 0) -> None:
    from nacc import model_report

    details = it.get_input_details()
    for d, x in zip(details, model_report.random_inputs(details, seed)):
        it.set_tensor(d["index"], x)


def _outputs(it) -> List[np.ndarray]:
    return [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def _nacc_key(path: str, cores: int) -> str:
    return f"nacc/{path}/{cores}"


def bench_tflite(name: str, model: bytes, threads: int, args) -> Dict[str, Any]:
    """The interleaved TFLite table row of one model at one host-thread count."""
    import nacc

    tf = _tflite()
    R = tf.lite.experimental.OpResolverType
    interps: Dict[str, Any] = {
        "xnnpack": _interpreter(model, threads),
        "tflite_optimized": _interpreter(model, threads, R.BUILTIN_WITHOUT_DEFAULT_DELEGATES),
        "builtin_ref": _interpreter(model, threads, R.BUILTIN_REF),
    }
    delegates = {}
    configs = [Config(k, it.invoke) for k, it in interps.items()]
    for path in args.kernel_paths:
        set_kernel_path(path)  # prepared under the path it runs with
        for cores in args.cores:
            d = nacc.load_delegate(cores=cores, threads=threads, log_level="off")
            key = _nacc_key(path, cores)
            delegates[key] = d
            interps[key] = _interpreter(model, threads, R.BUILTIN_REF, d)
            configs.append(Config(key, interps[key].invoke, path))
    set_kernel_path("auto")
    for it in interps.values():
        _set_inputs(it)
    runs = _runs_for(name, args)
    interleave(configs, args.warmup, runs, f"tflite {name} threads={threads}")

    want = _outputs(interps["builtin_ref"])
    ms = {c.key: results.timing(c.samples) for c in configs}
    res: Dict[str, Any] = {
        "model": name, "threads": threads, "runs": runs, "warmup": args.warmup,
        "ms": {k: ms[k] for k in ("xnnpack", "tflite_optimized", "builtin_ref")},
        "exact": {k: results.agreement(_outputs(interps[k]), want)
                  for k in ("xnnpack", "tflite_optimized")},
        "nacc": {}, "nodes": None,
    }
    xnn = ms["xnnpack"]["median"]
    res["ratio_to_xnnpack"] = {k: ms[k]["median"] / xnn for k in ("tflite_optimized", "builtin_ref")}
    for path in args.kernel_paths:
        per = {}
        for cores in args.cores:
            key = _nacc_key(path, cores)
            per[str(cores)] = {**ms[key], "ratio_to_xnnpack": ms[key]["median"] / xnn,
                               "ratio_to_builtin_ref": ms[key]["median"] / ms["builtin_ref"]["median"],
                               "exact": results.agreement(_outputs(interps[key]), want)}
        res["nacc"][path] = per
    rep = delegates[_nacc_key(args.kernel_paths[0], args.cores[0])].report()
    res["nodes"] = {"claimed": rep.claimed_nodes, "total": rep.total_nodes,
                    "partitions": len(rep.partitions)}
    return res


def bench_prepare(name: str, model: bytes, args, tmp: str) -> Dict[str, Any]:
    """Interpreter + delegate creation (construction and allocate_tensors) with
    a cold compile (no cache_dir) and with a cache_dir hit, per core count,
    interleaved; plus the plain BUILTIN_REF interpreter as the baseline."""
    import nacc

    tf = _tflite()
    R = tf.lite.experimental.OpResolverType
    cache = {c: os.path.join(tmp, f"cache-{name}-{c}") for c in args.cores}
    found: Dict[str, List[Dict[str, Any]]] = {}  # per config, per repetition

    def create(key: str, cores: Optional[int], cache_dir: Optional[str]):
        def go() -> float:
            d = None
            t0 = time.perf_counter()
            if cores is not None:
                d = nacc.load_delegate(cores=cores, threads=1, log_level="off",
                                       cache_dir=cache_dir)
            it = _interpreter(model, 1, R.BUILTIN_REF, d)
            ms = (time.perf_counter() - t0) * 1e3
            if d is not None:
                parts = d.report().partitions
                found.setdefault(key, []).append({
                    "compile_ms": sum(p.compile_ms for p in parts),
                    "all_hits": all(p.cache_hit for p in parts), "partitions": len(parts)})
            del it
            if d is not None:
                d.close()
            return ms
        return go

    configs = [Config("builtin_ref", create("builtin_ref", None, None), self_timed=True)]
    for c in args.cores:
        configs.append(Config(f"cold/{c}", create(f"cold/{c}", c, None), self_timed=True))
        configs.append(Config(f"cached/{c}", create(f"cached/{c}", c, cache[c]),
                              self_timed=True))
    runs = args.prepare_runs if args.prepare_runs else _runs_for(name, args)
    # The warm-up repetition fills each cache_dir (its "cached" entry is then a hit).
    interleave(configs, max(args.warmup, 1), runs, f"prepare {name}")
    out: Dict[str, Any] = {"model": name, "runs": runs,
                           "builtin_ref_ms": results.timing(configs[0].samples), "cores": {}}
    by_key = {c.key: c for c in configs}
    for c in args.cores:
        cold, hot = found[f"cold/{c}"][-runs:], found[f"cached/{c}"][-runs:]
        out["cores"][str(c)] = {
            "cold_ms": results.timing(by_key[f"cold/{c}"].samples),
            "cold_compile_ms": statistics.median(f["compile_ms"] for f in cold),
            "cached_ms": results.timing(by_key[f"cached/{c}"].samples),
            "cached_compile_ms": statistics.median(f["compile_ms"] for f in hot),
            "cached_all_hits": all(f["all_hits"] for f in hot),
            "partitions": cold[-1]["partitions"],
        }
    return out


def bench_overhead(args) -> Dict[str, Any]:
    """The fixed per-invoke cost: the 1x1x1x8 int8 ADD through the delegate
    (1 core, 1 thread, BUILTIN_REF host ops) minus the model on BUILTIN_REF;
    each sample is the mean of `args.overhead_invokes` invokes."""
    import nacc
    from nacc import models

    tf = _tflite()
    R = tf.lite.experimental.OpResolverType
    with open(models.add_model_path(), "rb") as f:
        model = f.read()
    ref = _interpreter(model, 1, R.BUILTIN_REF)
    interps, delegates = {"builtin_ref": ref}, {}
    for path in args.kernel_paths:
        set_kernel_path(path)
        d = nacc.load_delegate(cores=1, threads=1, log_level="off")
        delegates[path] = d
        interps[path] = _interpreter(model, 1, R.BUILTIN_REF, d)
    set_kernel_path("auto")
    for it in interps.values():
        _set_inputs(it)
    n = args.overhead_invokes

    def loop(it):
        def go():
            for _ in range(n):
                it.invoke()
        return go

    configs = [Config("builtin_ref", loop(ref))] + [
        Config(p, loop(interps[p]), p) for p in args.kernel_paths]
    interleave(configs, args.warmup, max(args.runs, 5), "per-invoke overhead")
    per_us = {c.key: [s * 1e3 / n for s in c.samples] for c in configs}
    want = _outputs(ref)
    out: Dict[str, Any] = {"model": "ADD 1x1x1x8 int8", "invokes_per_sample": n,
                           "target_us": OVERHEAD_TARGET_US,
                           "builtin_ref_us": results.timing(per_us["builtin_ref"]), "nacc": {}}
    for p in args.kernel_paths:
        rep = delegates[p].report()
        t = results.timing(per_us[p])
        out["nacc"][p] = {
            "invoke_us": t,
            "overhead_us": t["median"] - out["builtin_ref_us"]["median"],
            "overhead_min_us": t["min"] - out["builtin_ref_us"]["min"],
            "claimed": f"{rep.claimed_nodes}/{rep.total_nodes}",
            "exact": results.agreement(_outputs(interps[p]), want),
        }
    return out


# ---- ONNX Runtime --------------------------------------------------------------------------

def _ort():
    import onnxruntime as ort  # ModuleNotFoundError: nacc.cli names the extra to install

    return ort


_ep_created: set = set()  # (model, cores) with a session already created in this process


def bench_onnx(name: str, model: bytes, threads: int, args) -> Dict[str, Any]:
    """The interleaved EP row of one QDQ model at one intra-op thread count."""
    import nacc.onnxruntime as nort
    from nacc import model_report

    ort = _ort()
    nort.register()
    ort.set_default_logger_severity(3)

    def session(providers):
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.log_severity_level = 3
        t0 = time.perf_counter()
        s = ort.InferenceSession(model, sess_options=so, providers=providers)
        return s, (time.perf_counter() - t0) * 1e3

    cpu, cpu_create_ms = session(["CPUExecutionProvider"])
    feeds = model_report._ort_feeds(cpu, 0)
    sessions, create_ms, reports = {}, {}, {}
    configs = [Config("ort_cpu", lambda: cpu.run(None, feeds))]
    for path in args.kernel_paths:
        set_kernel_path(path)
        for cores in args.cores:
            key = _nacc_key(path, cores)
            before = nort.report_seq()
            s, ms = session([(nort.get_ep_name(), {"cores": str(cores), "threads": str(threads)}),
                             "CPUExecutionProvider"])
            reports[key] = nort.reports_after(before)
            cold = (name, cores) not in _ep_created
            _ep_created.add((name, cores))
            sessions[key] = s
            create_ms[key] = {"ms": ms, "first_in_process": cold}
            configs.append(Config(key, (lambda s=s: s.run(None, feeds)), path))
    set_kernel_path("auto")
    runs = _runs_for(name, args)
    interleave(configs, args.warmup, runs, f"onnx {name} threads={threads}")
    want = cpu.run(None, feeds)
    ms = {c.key: results.timing(c.samples) for c in configs}
    base = ms["ort_cpu"]["median"]
    res: Dict[str, Any] = {"model": name, "threads": threads, "runs": runs, "warmup": args.warmup,
                           "ms": {"ort_cpu": ms["ort_cpu"]},
                           "session_create_ms": {"ort_cpu": cpu_create_ms}, "nacc": {}}
    for path in args.kernel_paths:
        per = {}
        for cores in args.cores:
            key = _nacc_key(path, cores)
            set_kernel_path(path)
            got = sessions[key].run(None, feeds)
            per[str(cores)] = {**ms[key], "ratio_to_cpu_ep": ms[key]["median"] / base,
                               "exact": results.agreement(got, want),
                               "session_create": create_ms[key]}
        res["nacc"][path] = per
    set_kernel_path("auto")
    reps = reports[_nacc_key(args.kernel_paths[0], args.cores[0])]
    res["nodes"] = {"claimed": sum(r.get("claimed_nodes", 0) for r in reps),
                    "total": sum(r.get("total_nodes", 0) for r in reps),
                    "partitions": sum(len(r.get("partitions", [])) for r in reps)}
    return res


# ---- the report ---------------------------------------------------------------------------

def _fmt(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}" if v >= 1 else f"{v:.3f}"


def _ratio(r: float) -> str:
    return f"{r:.2f}×" if r < 10 else f"{r:.1f}×" if r < 100 else f"{r:,.0f}×"


def _cell(t: Dict[str, Any], ratio: Optional[float] = None) -> str:
    """median / min ms (ratio)."""
    return f"{_fmt(t['median'])} / {_fmt(t['min'])} ms" + (
        f" ({_ratio(ratio)})" if ratio is not None else "")


def _nacc_exact(per_path: Dict[str, Dict[str, Any]]) -> str:
    """Every nacc configuration's exactness, configurations with the same result grouped."""
    groups: Dict[str, List[str]] = {}
    for p, per in per_path.items():
        for c, v in per.items():
            groups.setdefault(results.format_exactness(v["exact"]), []).append(f"{p} {c}c")
    n = sum(len(per) for per in per_path.values())
    if len(groups) == 1:
        text = next(iter(groups))
        return f"{text} ({n}/{n})" if text == "bit-exact" else f"all {n}: {text}"
    return "; ".join(f"{', '.join(where)}: {text}" for text, where in groups.items())


def _columns(report: Dict[str, Any]) -> List[Tuple[str, int, str]]:
    paths = report["settings"]["kernel_paths"]
    isa = report["nacc"]["resolved_paths"]
    cols = []
    for p in paths:
        label = "" if len(paths) == 1 else f" [{p if p != 'auto' else 'auto=' + isa[p]}]"
        cols += [(p, c, f"nacc {c}c{label}") for c in report["settings"]["cores"]]
    return cols


def _session_table(report: Dict[str, Any]) -> List[str]:
    """EP session creation: the first session per model and core count compiles
    (cold); later ones (other paths, thread counts) hit the EP's process cache."""
    cores = report["settings"]["cores"]
    lines = ["## EP session creation (InferenceSession construction)", "",
             "cold = the first nacc EP session of the model at that core count in the process "
             "(compiles); later = the median of the later sessions (other kernel paths and "
             "thread counts), which hit the EP's in-process Program cache while it holds them "
             "(64 partitions, least recently used evicted).", "",
             "| model | CPU EP | " + " | ".join(f"nacc EP {c}c cold" for c in cores)
             + " | nacc EP, later |", "|---|---|" + "---|" * len(cores) + "---|"]
    for model in dict.fromkeys(r["model"] for r in report["onnx"]):
        rows = [r for r in report["onnx"] if r["model"] == model]
        made = [v["session_create"] for r in rows for per in r["nacc"].values()
                for v in per.values()]
        cold: Dict[str, float] = {}
        for r in rows:
            for per in r["nacc"].values():
                for c, v in per.items():
                    if v["session_create"]["first_in_process"]:
                        cold[c] = v["session_create"]["ms"]
        again = [m["ms"] for m in made if not m["first_in_process"]]
        lines.append(f"| {DISPLAY_NAMES.get(model, model)} | "
                     f"{_fmt(rows[0]['session_create_ms']['ort_cpu'])} ms | "
                     + " | ".join(f"{_fmt(cold[str(c)])} ms" if str(c) in cold else "-"
                                  for c in cores)
                     + f" | {_fmt(statistics.median(again)) + ' ms' if again else '-'} |")
    return lines + [""]


def markdown(report: Dict[str, Any]) -> str:
    """The report as markdown: header, TFLite tables per thread count, prepare,
    EP tables, per-invoke overhead."""
    s, cpu, nc = report["settings"], report["cpu"], report["nacc"]
    flags = ", ".join(f"{f} {'yes' if on else 'no'}" for f, on in cpu["isa_flags"].items())
    paths = ", ".join(f"{p} (= {nc['resolved_paths'][p]})" if p == "auto" else p
                      for p in s["kernel_paths"])
    lines = [
        f"# nacc host benchmark — {report['date']}", "",
        f"- CPU: {cpu['model']} ({cpu['machine']}, {cpu['logical_cpus']} logical CPUs); "
        f"/proc/cpuinfo: {flags}",
        f"- nacc {nc['version']} kernel paths on this CPU: {', '.join(nc['available'])} "
        f"(auto = {nc['best']}); measured: {paths}",
        f"- {', '.join(f'{k} {v}' for k, v in report['versions'].items())}",
        f"- cells: median / min of {s['runs']} runs"
        + (f" ({s['resnet50_runs']} for ResNet50)" if s.get("resnet50_runs") else "")
        + f" after {s['warmup']} warm-up, every configuration of a table timed once per "
          "repetition (interleaved); (×) = ratio of medians to XNNPACK / the CPU EP",
        f"- command: `{report['command']}`", ""]
    cols = _columns(report)
    for threads in s["threads"]:
        rows = [r for r in report["tflite"] if r["threads"] == threads]
        if not rows:
            continue
        lines += [f"## TFLite, {threads} host thread{'s' * (threads > 1)} (delegate on "
                  "BUILTIN_REF; nacc vs BUILTIN_REF exactness)", "",
                  "| model | XNNPACK | TFLite optimized | BUILTIN_REF | "
                  + " | ".join(c[2] for c in cols) + " | exact |",
                  "|---|" + "---|" * (3 + len(cols)) + "---|"]
        for r in rows:
            cells = [_cell(r["ms"]["xnnpack"]),
                     _cell(r["ms"]["tflite_optimized"], r["ratio_to_xnnpack"]["tflite_optimized"]),
                     _cell(r["ms"]["builtin_ref"], r["ratio_to_xnnpack"]["builtin_ref"])]
            cells += [_cell(r["nacc"][p][str(c)], r["nacc"][p][str(c)]["ratio_to_xnnpack"])
                      for p, c, _ in cols]
            exact = f"nacc {_nacc_exact(r['nacc'])}; XNNPACK {results.format_exactness(r['exact']['xnnpack'])}"
            if not r["exact"]["tflite_optimized"]["bit_exact"]:
                exact += f"; optimized {results.format_exactness(r['exact']['tflite_optimized'])}"
            lines.append(f"| {DISPLAY_NAMES.get(r['model'], r['model'])} "
                         f"({r['nodes']['claimed']}/{r['nodes']['total']} nodes) | "
                         + " | ".join(cells) + f" | {exact} |")
        lines.append("")
    if report["prepare"]:
        lines += ["## Prepare (interpreter + delegate creation and allocate_tensors, 1 thread)", "",
                  "cold = no cache_dir (compiles); cached = a hit in the delegate's cache_dir; "
                  "in brackets nacc's own compile / cache-load time (PartitionReport.compile_ms); "
                  "the plain BUILTIN_REF interpreter's creation is the baseline.", "",
                  "| model | BUILTIN_REF alone | "
                  + " | ".join(f"{c}c cold" for c in s["cores"]) + " | "
                  + " | ".join(f"{c}c cached" for c in s["cores"]) + " |",
                  "|---|---|" + "---|" * (2 * len(s["cores"]))]
        for p in report["prepare"]:
            cold = [f"{_fmt(v['cold_ms']['median'])} ms [{_fmt(v['cold_compile_ms'])}]"
                    for v in p["cores"].values()]
            hot = [f"{_fmt(v['cached_ms']['median'])} ms [{_fmt(v['cached_compile_ms'])}]"
                   + ("" if v["cached_all_hits"] else " (miss!)") for v in p["cores"].values()]
            lines.append(f"| {DISPLAY_NAMES.get(p['model'], p['model'])} | "
                         f"{_fmt(p['builtin_ref_ms']['median'])} ms | " + " | ".join(cold + hot)
                         + " |")
        lines.append("")
    for threads in s["threads"]:
        rows = [r for r in report["onnx"] if r["threads"] == threads]
        if not rows:
            continue
        lines += [f"## ONNX Runtime EP vs CPU EP, {threads} intra-op thread{'s' * (threads > 1)} "
                  "(QDQ models; EP threads = intra-op threads)", "",
                  "| model | CPU EP | " + " | ".join(c[2].replace("nacc", "nacc EP") for c in cols)
                  + " | exact vs CPU EP |",
                  "|---|---|" + "---|" * len(cols) + "---|"]
        for r in rows:
            cells = [_cell(r["ms"]["ort_cpu"])]
            cells += [_cell(r["nacc"][p][str(c)], r["nacc"][p][str(c)]["ratio_to_cpu_ep"])
                      for p, c, _ in cols]
            lines.append(f"| {DISPLAY_NAMES.get(r['model'], r['model'])} "
                         f"({r['nodes']['claimed']}/{r['nodes']['total']} nodes) | "
                         + " | ".join(cells) + f" | {_nacc_exact(r['nacc'])} |")
        lines.append("")
    if report["onnx"]:
        lines += _session_table(report)
    o = report.get("overhead")
    if o:
        lines += ["## Fixed per-invoke overhead", ""]
        for p, v in o["nacc"].items():
            label = p if p != "auto" else f"auto = {nc['resolved_paths'][p]}"
            lines.append(
                f"- {o['model']}, delegate (1 core, 1 thread, claimed {v['claimed']}) minus "
                f"BUILTIN_REF [{label}]: **{v['overhead_us']:.1f} µs** per invoke "
                f"(min-based {v['overhead_min_us']:.1f} µs; target <= {o['target_us']:.0f} µs); "
                f"delegate {v['invoke_us']['median']:.1f} µs, BUILTIN_REF "
                f"{o['builtin_ref_us']['median']:.1f} µs per invoke (mean of "
                f"{o['invokes_per_sample']} invokes per sample); {results.format_exactness(v['exact'])}")
        lines.append("")
    return "\n".join(lines)


# ---- driver -------------------------------------------------------------------------------

def _int_list(text: str, what: str, allowed: Optional[Sequence[int]] = None) -> List[int]:
    try:
        values = sorted({int(v) for v in text.split(",") if v.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what}: {text!r} is not a comma-separated list of "
                                         "integers")
    if not values or (allowed and any(v not in allowed for v in values)) or min(values) < 1:
        raise argparse.ArgumentTypeError(
            f"{what}: {text!r}; allowed: {', '.join(map(str, allowed)) if allowed else '>= 1'}")
    return values


def _model_list(text: str) -> List[str]:
    from nacc import models

    names = [] if text.strip().lower() == "none" else [n for n in text.split(",") if n]
    bad = [n for n in names if n not in models.MODELS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown model(s) {bad}; known: "
                                         f"{', '.join(sorted(models.MODELS))}")
    return names


SECTIONS = ("tflite", "prepare", "ep", "overhead")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    from nacc import _core, models

    p = Parser(
        prog="nacc bench --host", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="What is measured and how: docs/host_speed.md.")
    p.add_argument("--quick", action="store_true",
                   help="small models (TFLite " + ", ".join(models.HOST_BENCH_QUICK_TFLITE_MODELS)
                   + "; EP " + ", ".join(models.HOST_BENCH_QUICK_ONNX_MODELS)
                   + "), cores 1 and 4, 3 runs (for tests)")
    p.add_argument("--runs", type=int, default=None,
                   help="timed repetitions, >= 5 for real measurements (default 5; quick 3)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up repetitions (default 1)")
    p.add_argument("--resnet50-runs", type=int, default=None,
                   help="timed repetitions for the resnet50 models only (default: --runs); "
                        "ResNet50 takes seconds per invoke at high core counts today")
    p.add_argument("--prepare-runs", type=int, default=None,
                   help="repetitions of the prepare measurement (default: as the model's runs)")
    p.add_argument("--cores", type=lambda t: _int_list(t, "--cores", CORES), default=None,
                   help="simulated core counts (default 1,2,4,8,16,32; quick 1,4)")
    p.add_argument("--threads", type=lambda t: _int_list(t, "--threads"), default=None,
                   help="host-thread counts (default 1,2)")
    p.add_argument("--kernel-path", action="append", default=None, metavar="NAME",
                   help="nacc kernel path, repeatable; 'all' = every path this CPU has ("
                        + ", ".join(_core.kernel_paths()) + " here); default 'auto'")
    p.add_argument("--tflite-models", type=_model_list, default=None,
                   help="comma-separated nacc.models names or 'none' (default "
                        + ",".join(models.HOST_BENCH_TFLITE_MODELS) + ")")
    p.add_argument("--onnx-models", type=_model_list, default=None,
                   help="comma-separated nacc.models names or 'none' (default "
                        + ",".join(models.HOST_BENCH_ONNX_MODELS) + ")")
    p.add_argument("--sections", default=",".join(SECTIONS),
                   help="comma-separated subset of " + ",".join(SECTIONS) + " (default all)")
    p.add_argument("--overhead-invokes", type=int, default=None,
                   help="invokes per overhead sample (default 2000; quick 200)")
    p.add_argument("--json", metavar="FILE", help="also write everything as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    a = p.parse_args(list(argv))
    a.runs = a.runs if a.runs is not None else (3 if a.quick else 5)
    a.warmup = a.warmup if a.warmup is not None else 1
    a.cores = a.cores or ([1, 4] if a.quick else list(CORES))
    a.threads = a.threads or list(THREADS)
    a.overhead_invokes = a.overhead_invokes or (200 if a.quick else 2000)
    if a.runs < 1 or a.warmup < 0 or (a.resnet50_runs is not None and a.resnet50_runs < 1) or (
            a.prepare_runs is not None and a.prepare_runs < 1) or a.overhead_invokes < 1:
        p.error("--runs, --resnet50-runs, --prepare-runs and --overhead-invokes must be >= 1, "
                "--warmup >= 0")
    if a.tflite_models is None:
        a.tflite_models = list(models.HOST_BENCH_QUICK_TFLITE_MODELS if a.quick
                               else models.HOST_BENCH_TFLITE_MODELS)
    if a.onnx_models is None:
        a.onnx_models = list(models.HOST_BENCH_QUICK_ONNX_MODELS if a.quick
                             else models.HOST_BENCH_ONNX_MODELS)
    a.sections = [x for x in a.sections.split(",") if x]
    if not a.sections or any(x not in SECTIONS for x in a.sections):
        p.error(f"--sections {','.join(a.sections)!r}: choose from {', '.join(SECTIONS)}")
    available = _core.kernel_paths()
    paths: List[str] = []
    for name in a.kernel_path or ["auto"]:
        for n in (available if name == "all" else [name]):
            if n != "auto" and n not in available:
                p.error(f"--kernel-path {n!r}: not a path this CPU has; available: auto, all, "
                        + ", ".join(available))
            if n not in paths:
                paths.append(n)
    a.kernel_paths = paths
    if a.json:
        try:
            output_file(a.json)
        except CliError as e:
            p.error(str(e))
    return a


def run(args: argparse.Namespace, command: str = "nacc bench --host") -> Dict[str, Any]:
    """Runs the selected sections; returns the report (see docs/host_speed.md)."""
    import nacc
    from nacc import _core, models

    versions: Dict[str, str] = {}
    report: Dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "cpu": {"model": cpu_name(), "machine": platform.machine(),
                "logical_cpus": os.cpu_count(), "isa_flags": cpu_isa_flags(),
                "features": _core.cpu_features()},
        "nacc": {"version": nacc.__version__, "available": _core.kernel_paths(),
                 "best": json.loads(_core.kernel_path_json())["best"],
                 "resolved_paths": {p: (_core.kernel_paths()[-1] if p == "auto" else p)
                                    for p in args.kernel_paths},
                 "libraries": kernel_path_info()},
        "versions": versions,
        "settings": {"quick": args.quick, "runs": args.runs, "warmup": args.warmup,
                     "resnet50_runs": args.resnet50_runs, "prepare_runs": args.prepare_runs,
                     "cores": args.cores, "threads": args.threads,
                     "kernel_paths": args.kernel_paths, "sections": args.sections,
                     "tflite_models": args.tflite_models, "onnx_models": args.onnx_models},
        "tflite": [], "prepare": [], "onnx": [], "overhead": None,
    }
    tflite_sections = {"tflite", "prepare", "overhead"} & set(args.sections)
    if tflite_sections:
        versions["tensorflow"] = _tflite().__version__
    if "ep" in args.sections and args.onnx_models:
        versions["onnxruntime"] = _ort().__version__
    with tempfile.TemporaryDirectory(prefix="nacc-host-bench-") as tmp:
        for name in args.tflite_models if {"tflite", "prepare"} & set(args.sections) else []:
            log.info("building / loading %s (TFLite int8)", name)
            model = models.converted(name)
            if "tflite" in args.sections:
                for threads in args.threads:
                    report["tflite"].append(bench_tflite(name, model, threads, args))
            if "prepare" in args.sections:
                report["prepare"].append(bench_prepare(name, model, args, tmp))
        if "ep" in args.sections:
            for name in args.onnx_models:
                log.info("building / loading %s (QDQ ONNX)", name)
                model = models.onnx_model(name)
                for threads in args.threads:
                    report["onnx"].append(bench_onnx(name, model, threads, args))
        if "overhead" in args.sections:
            report["overhead"] = bench_overhead(args)
    return report


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    args = parse_args(argv)
    if not args.quiet and not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                            format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")

    def body() -> int:
        report = run(args, command=" ".join(["nacc bench --host", *argv]))
        print(markdown(report))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
        return 0

    return guarded("bench --host", body)


if __name__ == "__main__":
    sys.exit(main())

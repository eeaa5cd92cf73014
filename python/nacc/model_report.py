"""Per-model reports of what nacc did with a model, for the ``nacc`` command
line (python/nacc/cli.py) and the benchmarks: which nodes the NPU runs and
why the others stay on the host, and per layer the simulated cycles against
the performance bound, DMA bytes against the move-once minimum and MAC-array
utilization — all from the per-op counters of an actual simulated run
(``last_ops`` of the TFLite delegate's report, ``last_ops`` of the ONNX
Runtime EP's partition reports). Also the Chrome / Perfetto trace of the
simulated timeline.

A report is a plain dict (JSON-ready, schema in docs/cli.md; its NPU figures
and exactness use the shared schema of nacc/results.py);
:func:`format_report` prints it: a one-screen summary first, the per-layer
tables on request. TensorFlow / ONNX Runtime are imported only by the
functions that need them.
"""
from __future__ import annotations

import collections
import dataclasses
import json
import os
import tempfile
import time
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from nacc import _core, results
from nacc.results import MAC_LANES

__all__ = ["HwOptions", "tflite_report", "onnx_report", "format_report", "tflite_trace",
           "layer_rows", "binding_limit", "format_limit", "random_inputs", "compare_outputs", "MAC_LANES",
           "MAX_RANDOM_INPUT_BYTES", "TOP_LAYERS"]

# Random model inputs larger than this are refused with a clear error instead
# of numpy's MemoryError (a 1x(2^31-1)x16x3 input would take 96 GiB).
MAX_RANDOM_INPUT_BYTES = 1 << 30
# Layers listed in the summary, the largest by NPU cycles first.
TOP_LAYERS = 8


@dataclasses.dataclass(frozen=True)
class HwOptions:
    """The simulated NACC a report is made for (validated by the delegate's /
    the EP's own option tables: :meth:`validate`)."""
    cores: int = 1           # 1, 2, 4, 8, 16, 32 (docs/hardware.md §4)
    sram_kb: int = 64        # per core, a power of two in [16, 1024]
    clock_mhz: int = 500     # turns cycles into microseconds, [1, 10000]
    threads: int = 1         # host threads simulating the cores (results do not depend on it)

    def delegate_options(self) -> Dict[str, Any]:
        return dict(cores=self.cores, sram_kb=self.sram_kb, clock_mhz=self.clock_mhz,
                    threads=self.threads)

    def ep_options(self) -> Dict[str, str]:
        return {k: str(v) for k, v in self.delegate_options().items()}

    def as_dict(self) -> Dict[str, int]:
        return dataclasses.asdict(self)

    def validate(self, runtime: str) -> None:
        """Checks every field with the option parser of the runtime's library
        ("tflite": the delegate, "onnx": the EP). Raises ValueError."""
        if runtime == "tflite":
            from nacc import tflite

            tflite.validate_options(**self.delegate_options())
        else:
            from nacc import onnxruntime as nort

            nort.validate_provider_options(self.ep_options())


# ---- inputs and exactness ------------------------------------------------------------------


def random_inputs(details: Sequence[Dict[str, Any]], seed: int = 0) -> List[np.ndarray]:
    """Seeded random inputs for interpreter / session input details (dicts with
    ``shape``, ``dtype`` and optionally ``name``): integers over the dtype's
    range, floats in [-1, 1]. Raises ValueError for an input larger than
    MAX_RANDOM_INPUT_BYTES."""
    rng = np.random.default_rng(seed)
    out = []
    for i, d in enumerate(details):
        shape = [int(s) if s and int(s) > 0 else 1 for s in d["shape"]]
        dtype = np.dtype(d["dtype"])
        nbytes = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
        if nbytes > MAX_RANDOM_INPUT_BYTES:
            raise ValueError(
                f"input {d.get('name', i)!r} of shape {tuple(shape)} ({dtype}) would need "
                f"{nbytes / 2**30:.1f} GiB for a random input (limit "
                f"{MAX_RANDOM_INPUT_BYTES / 2**30:.0f} GiB); a model this size cannot run")
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            out.append(rng.integers(info.min, int(info.max) + 1, shape, dtype=dtype))
        elif dtype == np.bool_:
            out.append(rng.integers(0, 2, shape).astype(np.bool_))
        else:
            out.append(rng.uniform(-1.0, 1.0, shape).astype(dtype))
    return out


def compare_outputs(got: Sequence[np.ndarray], want: Sequence[np.ndarray],
                    names: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """The agreement of two runs' outputs (nacc.results.agreement)."""
    return results.agreement(got, want, names)


# ---- per-layer rows ------------------------------------------------------------------------


# The limits a layer's time can be bound by (docs/performance_model.md §1, §3).
LIMIT_MAC = "MAC array"
LIMIT_ACT = "activation unit"
LIMIT_PORT = "DMA port"
LIMIT_EXT = "shared external bandwidth"
LIMIT_INDIVISIBLE = "indivisibility"
# A limit whose busiest core carries more than this times its even share of
# the op's work is reported as an indivisibility (work that does not spread
# over the cores), not as the resource itself.
UNEVEN = 1.10


def _rows_over_cores(shape: Sequence[int], cores: int, busy: int) -> str:
    """'7 rows over 32 cores' (NHWC: H rows; [M, N]: M rows)."""
    rows = int(shape[1]) if len(shape) == 4 else int(shape[0]) if shape else 0
    detail = f"{rows} rows over {cores} cores" if rows else f"work over {cores} cores"
    return detail + (f", {busy} busy" if busy < cores else "")


def binding_limit(o: Dict[str, Any], cores: int,
                  dma_bytes_per_cycle: int = results.DMA_PORT_BYTES_PER_CYCLE,
                  ext_bytes_per_cycle: int = results.EXT_BYTES_PER_CYCLE) -> Dict[str, Any]:
    """Which limit binds one op of a run (an ``ops`` entry of the run's
    counters): the largest of its busiest core's MAC-array cycles (element-wise:
    the bus rate), activation-unit cycles and DMA-port time (reads or writes,
    whichever is more, at `dma_bytes_per_cycle`), and the op's external reads
    or writes over the shared `ext_bytes_per_cycle`. When that limit is a
    per-core one and the busiest core carries more than UNEVEN times its even
    share (the op's total over all `cores`), the limit is the indivisibility,
    e.g. "7 rows over 32 cores". Returns ``limit`` (LIMIT_*), ``limit_detail``,
    ``limit_cycles`` (the binding term), ``limit_share`` (that term over the
    op's cycles: well below 1 when DMA and compute do not overlap) and
    ``limits`` (every term)."""
    per = o.get("cores") or []
    ceil = lambda a, b: -(-int(a) // int(b))  # noqa: E731
    port = lambda c: ceil(max(c["dma_read_bytes"], c["dma_write_bytes"]), dma_bytes_per_cycle)  # noqa: E731
    terms = {
        LIMIT_MAC: max((int(c["mac_cycles"]) for c in per), default=int(o["mac_cycles"])),
        LIMIT_ACT: max((int(c["act_cycles"]) for c in per), default=int(o["act_cycles"])),
        LIMIT_PORT: max((port(c) for c in per), default=0),
        LIMIT_EXT: ceil(max(int(o["dma_read_bytes"]), int(o["dma_write_bytes"])),
                        ext_bytes_per_cycle),
    }
    # Even shares of the per-core terms: the op's total spread over every core.
    even = {
        LIMIT_MAC: ceil(int(o["mac_cycles"]), cores),
        LIMIT_ACT: ceil(int(o["act_cycles"]), cores),
        LIMIT_PORT: ceil(max(sum(int(c["dma_read_bytes"]) for c in per),
                             sum(int(c["dma_write_bytes"]) for c in per)),
                         cores * dma_bytes_per_cycle),
    }
    name = max(terms, key=lambda k: terms[k])
    cycles = terms[name]
    out = {"limit": name, "limit_detail": "", "limit_cycles": cycles,
           "limit_share": (cycles / int(o["cycles"])) if int(o["cycles"]) else 0.0,
           "limits": dict(terms)}
    if cycles == 0:
        out["limit"] = ""
        return out
    if cores > 1 and name in even and cycles > UNEVEN * max(even[name], 1):
        busy = sum(1 for c in per if int(c.get("kernels", 0)) > 0)
        out["limit"] = LIMIT_INDIVISIBLE
        out["limit_detail"] = (_rows_over_cores(o.get("output_shape") or [], cores, busy)
                               + f" ({name}: busiest core {cycles / max(even[name], 1):.1f}x "
                               f"an even share)")
    return out


def format_limit(r: Dict[str, Any]) -> str:
    """The limit column of the per-layer table: "MAC array 97%", or for an
    indivisibility its detail ("7 rows over 32 cores, 4 busy")."""
    if not r.get("limit"):
        return "-"
    if r["limit"] == LIMIT_INDIVISIBLE:
        return r["limit_detail"].split(" (")[0]
    return f"{r['limit']} {100 * r['limit_share']:.0f}%"


def layer_rows(ops: Sequence[Dict[str, Any]], cores: int, clock_mhz: float) -> List[Dict[str, Any]]:
    """One row per Program op of a run (``last_ops`` entries): cycles against
    the performance bound, DMA bytes against the move-once minimum,
    utilization of the MAC arrays of every core over the op's span, per-core
    busy cycles, and the limit that binds it (:func:`binding_limit`)."""
    rows = []
    for o in ops:
        cycles, bound = int(o["cycles"]), int(o["bound_cycles"])
        dma = int(o["dma_read_bytes"]) + int(o["dma_write_bytes"])
        rows.append({
            "op": o["op"], "name": o["name"], "kind": o["kind"],
            "cycles": cycles, "bound_cycles": bound,
            "cycles_vs_bound": results.ratio(cycles, bound),
            "latency_us": cycles / clock_mhz,
            "macs": int(o["macs"]),
            "utilization": (int(o["macs"]) / (cycles * MAC_LANES * cores)) if cycles else 0.0,
            "dma_bytes": dma, "min_dma_bytes": int(o["min_dma_bytes"]),
            "dma_vs_min": results.ratio(dma, int(o["min_dma_bytes"])),
            "mac_cycles": int(o["mac_cycles"]), "stall_cycles": int(o["stall_cycles"]),
            "busy_cycles": [int(c["busy_cycles"]) for c in o.get("cores", [])],
            "sram_high_water": int(o["sram_high_water"]),
            "start": int(o["start"]), "end": int(o["end"]),
        })
        rows[-1].update(binding_limit(o, cores))
    return rows


def _partition_entry(index: int, nodes: Sequence[Any], ops: Sequence[str], macs: int,
                     cycles: int, dma_bytes: int, sram: int, last_ops, hw: HwOptions,
                     extra: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    layers = layer_rows(last_ops, hw.cores, hw.clock_mhz)
    if layers:
        # Useful MACs as the device counted them (the frontends' partition
        # figures also count the taps that fall on padding): the one MAC
        # definition of every nacc report.
        macs = sum(r["macs"] for r in layers)
    entry = {"index": index, "nodes": list(nodes), "ops": list(ops)}
    entry.update(results.npu(cycles=cycles, bound_cycles=sum(r["bound_cycles"] for r in layers),
                             macs=macs, dma_bytes=dma_bytes,
                             min_dma_bytes=sum(r["min_dma_bytes"] for r in layers),
                             sram_high_water=sram, cores=hw.cores, clock_mhz=hw.clock_mhz))
    entry["layers"] = layers
    entry.update(extra or {})
    return entry


def _totals(partitions: Sequence[Dict[str, Any]], hw: HwOptions) -> Dict[str, Any]:
    return results.sum_npu(partitions, cores=hw.cores, clock_mhz=hw.clock_mhz)


def _host_summary(declined: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Nodes left on the host, counted by op kind (host-only kinds and declined
    instances of kinds the NPU runs apart)."""
    kinds = collections.Counter(d["op"] for d in declined)
    host_only = collections.Counter(d["op"] for d in declined if d["host_kind"])
    return {"nodes": len(declined), "by_kind": dict(sorted(kinds.items())),
            "host_only_kinds": dict(sorted(host_only.items())),
            "declined": dict(sorted((kinds - host_only).items()))}


def _reason(op: str, name: str, reason: str) -> str:
    """A decline reason without the "<op> '<name>': " it may repeat."""
    prefix = f"{op} '{name}': "
    return reason[len(prefix):] if reason.startswith(prefix) else reason


def _finish(out: Dict[str, Any], hw: HwOptions, got, want, reference: str,
            names: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    out["totals"] = _totals(out["partitions"], hw)
    out["host"] = _host_summary(out["declined"])
    if want is not None:
        out["exactness"] = dict(reference=reference, **results.agreement(got, want, names))
    return out


# ---- TFLite --------------------------------------------------------------------------------


def _interpreter(model: bytes, delegates=None, preserve: bool = False, num_threads: int = 1):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # no CUDA / oneDNN banners
    import tensorflow as tf

    # tf.lite.Interpreter warns on every construction that it is deprecated.
    warnings.filterwarnings("ignore", message=r"\s*Warning\W+tf\.lite\.Interpreter is deprecated",
                            category=UserWarning)

    kwargs = dict(model_content=model, num_threads=num_threads,
                  experimental_op_resolver_type=tf.lite.experimental.OpResolverType.BUILTIN_REF)
    if delegates:
        kwargs["experimental_delegates"] = delegates
    if preserve:
        kwargs["experimental_preserve_all_tensors"] = True
    interp = tf.lite.Interpreter(**kwargs)
    interp.allocate_tensors()
    return interp


def _invoke(interp, inputs: Sequence[np.ndarray]) -> Tuple[List[np.ndarray], float]:
    for det, x in zip(interp.get_input_details(), inputs):
        interp.set_tensor(det["index"], x)
    t0 = time.perf_counter()
    interp.invoke()
    ms = (time.perf_counter() - t0) * 1e3
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()], ms


def run_tflite(model: bytes, hw: HwOptions, *, dump_dir: Optional[str] = None,
               check: bool = False, seed: int = 0, inputs: Optional[List[np.ndarray]] = None):
    """Runs `model` once through TFLite (BUILTIN_REF kernels on the host) with
    the NACC delegate, and with `check` once without it. Returns (delegate
    report, inputs, delegated outputs, reference outputs or None, host ms of
    the delegated run, host ms of the reference run or None, compile ms)."""
    import nacc

    options = hw.delegate_options()
    options["log_level"] = "off"
    if dump_dir:
        options["dump_dir"] = dump_dir
    delegate = nacc.load_delegate(**options)
    t0 = time.perf_counter()
    interp = _interpreter(model, delegates=[delegate])
    prepare_ms = (time.perf_counter() - t0) * 1e3
    x = inputs if inputs is not None else random_inputs(interp.get_input_details(), seed)
    got, npu_ms = _invoke(interp, x)
    want, ref_ms = (None, None)
    if check:
        want, ref_ms = _invoke(_interpreter(model), x)
    report = delegate.report()
    del interp
    return report, x, got, want, npu_ms, ref_ms, prepare_ms


def tflite_report(model: bytes, hw: HwOptions, *, name: str = "", dump_dir: Optional[str] = None,
                  check: bool = False, seed: int = 0) -> Dict[str, Any]:
    """The report of one delegated run of a TFLite model (see module docstring)."""
    report, _, got, want, npu_ms, ref_ms, prepare_ms = run_tflite(
        model, hw, dump_dir=dump_dir, check=check, seed=seed)
    return _report_from_delegate(report, hw, name=name, got=got, want=want, npu_ms=npu_ms,
                                 ref_ms=ref_ms, prepare_ms=prepare_ms)


def _report_from_delegate(report, hw: HwOptions, *, name: str, got=None, want=None,
                          npu_ms=None, ref_ms=None, prepare_ms=None) -> Dict[str, Any]:
    partitions = []
    for p in report.partitions:
        partitions.append(_partition_entry(
            p.index, p.nodes, p.ops, p.macs, p.last_cycles, p.last_dma_bytes, p.sram_peak,
            p.last_ops, hw, extra={"compile_ms": p.compile_ms, "cache_key": p.cache_key,
                                   "program_file": f"nacc_{p.cache_key[:16]}.program",
                                   "input_tensors": list(p.input_tensors),
                                   "output_tensors": list(p.output_tensors),
                                   "command_words": p.command_words,
                                   "constant_bytes": p.constant_bytes}))
    declined = [{"node": n.node, "op": n.op, "name": n.name, "host_kind": n.host_kind,
                 "reasons": [_reason(n.op, n.name, r.message) for r in n.reasons]}
                for n in report.nodes if not n.claimed]
    out = {
        "model": name, "runtime": "tflite", "hardware": hw.as_dict(),
        "summary": "; ".join(s.summary for s in report.subgraphs),
        "total_nodes": report.total_nodes, "claimed_nodes": report.claimed_nodes,
        "partitions": partitions, "declined": declined,
        "host_ms": {"nacc": npu_ms, "reference": ref_ms, "prepare": prepare_ms},
    }
    return _finish(out, hw, got, want, "TFLite BUILTIN_REF")


# ---- ONNX Runtime --------------------------------------------------------------------------

ORT_TYPES = {"tensor(float)": np.float32, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8,
             "tensor(int32)": np.int32, "tensor(int64)": np.int64, "tensor(bool)": np.bool_,
             "tensor(float16)": np.float16}


def ort_input_details(sess) -> List[Dict[str, Any]]:
    """A session's inputs as dicts (name, shape with symbolic dims as 1, dtype)."""
    return [{"name": i.name, "shape": [s if isinstance(s, int) and s > 0 else 1 for s in i.shape],
             "dtype": ORT_TYPES.get(i.type, np.float32)} for i in sess.get_inputs()]


def _ort_feeds(sess, seed: int) -> Dict[str, np.ndarray]:
    details = ort_input_details(sess)
    return {d["name"]: a for d, a in zip(details, random_inputs(details, seed))}


def ep_partitions(reports: Sequence[Dict[str, Any]], hw: HwOptions):
    """(partitions, declined, total nodes, claimed nodes) of the EP's partition
    reports (nacc.onnxruntime.partition_reports entries with their last run)."""
    partitions, declined, total, claimed = [], [], 0, 0
    for rep in reports:
        total += rep["total_nodes"]
        claimed += rep["claimed_nodes"]
        for p in rep["partitions"]:
            partitions.append(_partition_entry(
                len(partitions), [n["name"] for n in p["nodes"]], [n["op_type"] for n in p["nodes"]],
                p["macs"], p.get("last_cycles", 0), p.get("last_dma_bytes", 0),
                p.get("sram_high_water", 0), p.get("last_ops", []), hw,
                extra={"graph": rep["graph"], "fused_node": p.get("fused_node", "")}))
        for h in rep["host_nodes"]:
            declined.append({"node": h["name"], "op": h["op_type"], "name": h["name"],
                             "host_kind": not h.get("npu_candidate", False),
                             "reasons": [_reason(h["op_type"], h["name"], h["reason"])]})
    return partitions, declined, total, claimed


def onnx_report(path: str, hw: HwOptions, *, check: bool = False, seed: int = 0,
                dump_dir: Optional[str] = None) -> Dict[str, Any]:
    """The report of one run of an ONNX model on ONNX Runtime with the NACC EP
    (the rest on the CPU EP); `check` also runs the CPU EP alone and compares.
    Raises nacc.onnxruntime.EpNotUsedError when the EP did not take part."""
    import onnxruntime as ort

    import nacc.onnxruntime as nort

    nort.register()
    before = nort.report_seq()
    options = dict(hw.ep_options(), log_level="off")  # the placement messages are in the report
    if dump_dir:
        options["dump_dir"] = dump_dir
    t0 = time.perf_counter()
    sess = nort.create_session(path, options)
    prepare_ms = (time.perf_counter() - t0) * 1e3
    feeds = _ort_feeds(sess, seed)
    t0 = time.perf_counter()
    got = sess.run(None, feeds)
    npu_ms = (time.perf_counter() - t0) * 1e3
    want, ref_ms = None, None
    if check:
        so = ort.SessionOptions()
        so.log_severity_level = 3
        cpu = ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])
        t0 = time.perf_counter()
        want = cpu.run(None, feeds)
        ref_ms = (time.perf_counter() - t0) * 1e3
    # A model with subgraphs gives several reports; this session's are the new ones
    # (when the EP had seen the same graph before it does not log it again: take the last).
    partitions, declined, total, claimed = ep_partitions(
        nort.reports_after(before) or nort.partition_reports()[-1:], hw)
    out = {
        "model": path, "runtime": "onnxruntime", "hardware": hw.as_dict(),
        "summary": f"NACC EP: claimed {claimed} of {total} nodes in {len(partitions)} partitions",
        "total_nodes": total, "claimed_nodes": claimed, "partitions": partitions,
        "declined": declined,
        "host_ms": {"nacc": npu_ms, "reference": ref_ms, "prepare": prepare_ms},
    }
    return _finish(out, hw, got, want, "ONNX Runtime CPU EP", [o.name for o in sess.get_outputs()])


# ---- text ----------------------------------------------------------------------------------


def _fmt_ratio(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.2f}x"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> List[str]:
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for k, r in enumerate(cells):
        lines.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def short_name(name: str, width: int = 48) -> str:
    """A layer name for a table: TFLite's fused names ("a;b;c") by their first
    part, cut to `width` characters from the end (the JSON keeps full names)."""
    first = name.split(";")[0]
    return first if len(first) <= width else "…" + first[-(width - 1):]


def _kinds(counts: Dict[str, int]) -> str:
    return ", ".join(f"{k} x{v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _bytes(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.1f} KB" if n >= 1e3 else f"{n} B"


def npu_line(t: Dict[str, Any]) -> str:
    """One line on the NPU part of an inference (an nacc.results.npu record)."""
    if not t["cycles"]:
        return "NPU: nothing ran on the NPU"
    return (f"NPU time per inference: {t['latency_us']:,.1f} us ({t['cycles']:,} cycles at "
            f"{t['clock_mhz']} MHz), {_fmt_ratio(t['cycles_vs_bound'])} the performance bound; "
            f"MAC utilization {100 * t['utilization']:.1f}%; DMA {_bytes(t['dma_bytes'])} "
            f"({_fmt_ratio(t['dma_vs_min'])} the minimum); SRAM peak "
            f"{t['sram_high_water'] / 1024:.1f} KB")


def _all_layers(rep: Dict[str, Any]) -> List[Tuple[int, Dict[str, Any]]]:
    return [(p["index"], r) for p in rep["partitions"] for r in p["layers"] if r["op"] >= 0]


def format_summary(rep: Dict[str, Any], top: int = TOP_LAYERS) -> List[str]:
    """The one-screen summary: hardware, claim, NPU time, host work, top layers."""
    hw, t, host = rep["hardware"], rep["totals"], rep["host"]
    lines = [f"{rep['model']} ({rep['runtime']}) on NACC: {hw['cores']} core(s), "
             f"{hw['sram_kb']} KB SRAM/core, {hw['clock_mhz']} MHz", rep["summary"], npu_line(t)]
    if host["nodes"]:
        lines.append(f"Host: {host['nodes']} node(s) run on the host runtime, not in the NPU time "
                     f"above: {_kinds(host['by_kind'])}")
    else:
        lines.append("Host: every node runs on the NPU")
    layers = _all_layers(rep)
    if layers:
        ranked = sorted(layers, key=lambda pr: -pr[1]["cycles"])[:top]
        lines += ["", f"Top layers by NPU cycles ({len(ranked)} of {len(layers)}):"]
        lines += ["  " + l for l in _table(
            ["layer", "kind", "partition", "cycles", "share", "cyc/bound", "us", "MACs", "util",
             "limit"],
            [[short_name(r["name"]), r["kind"] or "-", pi, f"{r['cycles']:,}",
              f"{100 * r['cycles'] / t['cycles']:.1f}%" if t["cycles"] else "-",
              _fmt_ratio(r["cycles_vs_bound"]), f"{r['latency_us']:.2f}", f"{r['macs']:,}",
              f"{100 * r['utilization']:.1f}%", format_limit(r)] for pi, r in ranked])]
    return lines


def format_report(rep: Dict[str, Any], layers: bool = False) -> str:
    """The report as text: the summary (format_summary), partitions, nodes on
    the host with their reasons, exactness; with `layers` the per-layer tables."""
    lines = format_summary(rep) + [""]
    if rep["partitions"]:
        lines.append("Partitions:")
        lines += ["  " + l for l in _table(
            ["#", "ops", "MACs", "cycles", "bound", "cyc/bound", "us", "DMA bytes", "min DMA",
             "DMA/min", "util", "SRAM peak"],
            [[p["index"], len(p["ops"]), p["macs"], p["cycles"], p["bound_cycles"],
              _fmt_ratio(p["cycles_vs_bound"]), f"{p['latency_us']:.1f}", p["dma_bytes"],
              p["min_dma_bytes"], _fmt_ratio(p["dma_vs_min"]), f"{100 * p['utilization']:.1f}%",
              p["sram_high_water"]] for p in rep["partitions"]])]
        lines.append("")
    if rep["declined"]:
        lines.append(f"Nodes on the host ({len(rep['declined'])}):")
        for d in rep["declined"]:
            why = "; ".join(d["reasons"]) or "no reason recorded"
            node = f" (node {d['node']})" if d["node"] != d["name"] else ""
            lines.append(f"  {d['op']} '{short_name(d['name'], 64)}'{node}: {why}")
        lines.append("")
    if layers:
        for p in rep["partitions"]:
            if not p["layers"]:
                continue
            lines.append(f"Layers of partition {p['index']} (last run):")
            lines += ["  " + l for l in _table(
                ["layer", "kind", "cycles", "bound", "cyc/bound", "us", "MACs", "util",
                 "DMA bytes", "min DMA", "DMA/min", "stall", "SRAM peak", "limit"],
                [[short_name(r["name"]), r["kind"] or "-", r["cycles"], r["bound_cycles"],
                  _fmt_ratio(r["cycles_vs_bound"]), f"{r['latency_us']:.2f}", r["macs"],
                  f"{100 * r['utilization']:.1f}%", r["dma_bytes"], r["min_dma_bytes"],
                  _fmt_ratio(r["dma_vs_min"]), r["stall_cycles"], r["sram_high_water"],
                  format_limit(r)]
                 for r in p["layers"]])]
            lines.append("")
    if "exactness" in rep:
        e = rep["exactness"]
        lines.append(f"Exactness vs {e['reference']}: {results.format_exactness(e)}")
    ms = rep.get("host_ms", {})
    if ms.get("nacc") is not None:
        lines.append(f"Host time of the run: {ms['nacc']:.1f} ms with nacc (simulation)"
                     + (f", {ms['reference']:.1f} ms reference" if ms.get("reference") is not None
                        else ""))
    if not layers and _all_layers(rep):
        lines.append("Per-layer tables: --layers. What the columns and the performance bound "
                     "mean: `nacc docs hardware`, §8.")
    return "\n".join(lines).rstrip()


# ---- Chrome / Perfetto trace ---------------------------------------------------------------

_PID_CORES, _PID_DMA, _PID_OPS = 1, 2, 3


def _op_of_word(ops: Sequence[Dict[str, Any]]):
    ranges = sorted((o["first_word"], o["end_word"], i) for i, o in enumerate(ops)
                    if o["end_word"] > o["first_word"])

    def find(word: int) -> int:
        for lo, hi, i in ranges:
            if lo <= word < hi:
                return i
        return -1
    return find


def timeline_events(program: "_core.Program", stats: Dict[str, Any], *, clock_mhz: float,
                    offset_cycles: int = 0, label: str = "") -> List[Dict[str, Any]]:
    """Trace Event Format "X" events of one run's timeline (stats from
    Runtime.run(timeline=True)): per core and op, one compute span on track
    "core k" and one DMA read / DMA write span on "core k DMA read/write";
    per op one span on the "ops" track; DMA-queue commands on "DMA queue".
    Timestamps in simulated microseconds at `clock_mhz`."""
    ops = program.ops
    find = _op_of_word(ops)
    # (op, core, kind) -> [start, end, bytes/cycles]
    spans: Dict[Tuple[int, int, str], List[int]] = {}
    queue = []
    for rec in stats["timeline"]:
        i = find(rec["word"])
        if not rec["cores"]:
            queue.append((i, rec))
            continue
        for s in rec["cores"]:
            for kind, a, b, amount in (("compute", s["compute_start"], s["compute_end"], s["macs"]),
                                       ("DMA read", s["read_start"], s["read_end"], s["read_bytes"]),
                                       ("DMA write", s["write_start"], s["write_end"], s["write_bytes"])):
                if b <= a:
                    continue
                key = (i, s["core"], kind)
                if key in spans:
                    v = spans[key]
                    v[0], v[1], v[2] = min(v[0], a), max(v[1], b), v[2] + amount
                else:
                    spans[key] = [a, b, amount]

    def us(c: int) -> float:
        return (c + offset_cycles) / clock_mhz

    def name_of(i: int) -> str:
        return ops[i]["name"] if i >= 0 else "(outside ops)"

    events = []
    for (i, core, kind), (a, b, amount) in sorted(spans.items(), key=lambda kv: kv[1][0]):
        pid, tid = (_PID_CORES, core) if kind == "compute" else (
            _PID_DMA, 2 * core + (0 if kind == "DMA read" else 1))
        args = {"op": name_of(i), "kind": ops[i]["kind"] if i >= 0 else "", "partition": label}
        args["macs" if kind == "compute" else "bytes"] = amount
        events.append({"name": name_of(i), "cat": kind, "ph": "X", "pid": pid, "tid": tid,
                       "ts": us(a), "dur": (b - a) / clock_mhz, "args": args})
    for i, rec in queue:
        events.append({"name": f"{rec['opcode']} ({name_of(i)})", "cat": "DMA queue", "ph": "X",
                       "pid": _PID_OPS, "tid": 1, "ts": us(rec["start"]),
                       "dur": (rec["end"] - rec["start"]) / clock_mhz,
                       "args": {"op": name_of(i), "bytes_read": rec["ext_read_bytes"],
                                "bytes_written": rec["ext_write_bytes"]}})
    for o in stats.get("ops", []):
        if o["commands"] == 0:
            continue
        events.append({"name": o["name"], "cat": "op", "ph": "X", "pid": _PID_OPS, "tid": 0,
                       "ts": us(o["start"]), "dur": o["cycles"] / clock_mhz,
                       "args": {"kind": o["kind"], "partition": label, "cycles": o["cycles"],
                                "bound_cycles": o["bound_cycles"], "macs": o["macs"],
                                "dma_bytes": o["dma_read_bytes"] + o["dma_write_bytes"],
                                "min_dma_bytes": o["min_dma_bytes"],
                                "stall_cycles": o["stall_cycles"]}})
    return events


def trace_metadata(cores: int) -> List[Dict[str, Any]]:
    """Process / thread names of the trace tracks."""
    meta = [{"name": "process_name", "ph": "M", "pid": _PID_CORES, "args": {"name": "NACC cores (compute)"}},
            {"name": "process_name", "ph": "M", "pid": _PID_DMA, "args": {"name": "NACC core DMA ports"}},
            {"name": "process_name", "ph": "M", "pid": _PID_OPS, "args": {"name": "NACC ops"}},
            {"name": "thread_name", "ph": "M", "pid": _PID_OPS, "tid": 0, "args": {"name": "ops"}},
            {"name": "thread_name", "ph": "M", "pid": _PID_OPS, "tid": 1, "args": {"name": "DMA queue"}}]
    for c in range(cores):
        meta.append({"name": "thread_name", "ph": "M", "pid": _PID_CORES, "tid": c,
                     "args": {"name": f"core {c}"}})
        meta.append({"name": "thread_name", "ph": "M", "pid": _PID_DMA, "tid": 2 * c,
                     "args": {"name": f"core {c} DMA read"}})
        meta.append({"name": "thread_name", "ph": "M", "pid": _PID_DMA, "tid": 2 * c + 1,
                     "args": {"name": f"core {c} DMA write"}})
    return meta


def tflite_trace(model: bytes, hw: HwOptions, *, seed: int = 0) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """Runs `model` with the delegate (dumping its Programs), takes each
    partition's input tensors from a reference run that keeps every tensor,
    runs each Program again on a simulated device with the timeline on, and
    returns (Chrome trace dict, report dict). Partitions are laid out one
    after another in execution order (host ops between them take no
    simulated time). Raises RuntimeError when a re-run's outputs differ from
    the reference tensors (they never should: the device is deterministic)."""
    with tempfile.TemporaryDirectory(prefix="nacc_trace_") as tmp:
        report, x, got, _, npu_ms, _, prepare_ms = run_tflite(model, hw, dump_dir=tmp, seed=seed)
        rep = _report_from_delegate(report, hw, name="", npu_ms=npu_ms, prepare_ms=prepare_ms)
        ref = _interpreter(model, preserve=True)
        _invoke(ref, x)
        runtime = _core.Runtime(cores=hw.cores, sram_kb=hw.sram_kb, threads=hw.threads)
        events, offset = trace_metadata(hw.cores), 0
        for p in rep["partitions"]:
            path = os.path.join(tmp, p["program_file"])
            with open(path, "rb") as f:
                program = _core.Program.from_bytes(f.read())
            inputs = [np.ascontiguousarray(ref.get_tensor(t)).view(np.int8).reshape(-1)
                      for t in p["input_tensors"]]
            outs, stats = runtime.run(program, inputs, timeline=True)
            for t, o in zip(p["output_tensors"], outs):
                want = np.ascontiguousarray(ref.get_tensor(t)).view(np.int8).reshape(-1)
                if not np.array_equal(np.asarray(o).reshape(-1), want):
                    raise RuntimeError(f"partition {p['index']}: the re-run's output tensor {t} "
                                       "differs from the reference run")
            events += timeline_events(program, stats, clock_mhz=hw.clock_mhz, offset_cycles=offset,
                                      label=f"partition {p['index']}")
            offset += stats["cycles"]
    trace = {"traceEvents": events, "displayTimeUnit": "ns",
             "otherData": {"generator": "nacc trace", "clock_mhz": hw.clock_mhz,
                           "cores": hw.cores, "sram_kb": hw.sram_kb,
                           "time_unit": "simulated microseconds"}}
    return trace, rep


def write_json(path: str, data: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.write("\n")

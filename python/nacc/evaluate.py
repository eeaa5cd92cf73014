"""nacc eval MODEL --inputs DIR|FILE: a data set through the host runtime and
through nacc, and how the two agree.

Every input runs through the CPU runtime alone (TFLite BUILTIN_REF, or ONNX
Runtime's CPU EP) and through nacc (the NACC delegate, or
NaccExecutionProvider), spread over worker processes (--workers, default:
the host's CPUs), with a progress bar. Reported: the share of inputs whose
outputs are bit-exact, per output the share and the max difference, top-1
agreement (argmax of output 0), accuracy of both against --labels, the
simulated NPU time per inference, host time per inference; --json FILE
writes it all (schema: docs/cli.md).

Inputs:
- FILE.npz: one array per model input named like the input, or (one-input
  models) a single array, or the array under "x" / "inputs" / "images";
  labels may ride along as "labels" / "y".
- FILE.npy: one array, the samples along its first axis (one-input models).
- DIR: one .npy file per sample, in file-name order (one-input models).
An array holds N samples of the model input's shape with or without its
batch-1 axis. Float data for an int8 / uint8 model input is quantized with
the input's scale and zero point (round half to even, clamped); integer data
must fit the input's dtype.

    nacc eval MODEL --inputs DATA [--labels FILE] [--workers N] [--limit N] [--json FILE]
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from nacc import results
from nacc.cli import CliError, hw_arguments, model_command, model_parser, write_json

__all__ = ["main", "evaluate", "load_inputs", "prepare", "format_text"]

_X_KEYS = ("x", "inputs", "input", "images", "data")
_Y_KEYS = ("labels", "label", "y", "targets")
CHUNK = 16  # samples per task handed to a worker


# ---- data ----------------------------------------------------------------------------------

def _samples(name: str, a: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """`a` as (N, *shape): N samples of the model input's shape."""
    shape = tuple(int(s) for s in shape)
    if a.shape[1:] == shape:
        return a
    if shape and shape[0] == 1 and a.shape[1:] == shape[1:]:
        return a.reshape((a.shape[0],) + shape)
    if a.shape == shape or (shape and shape[0] == 1 and a.shape == shape[1:]):
        return a.reshape((1,) + shape)
    raise CliError(f"--inputs: array {name!r} of shape {a.shape} does not hold samples of the "
                   f"model input's shape {shape} (N x {shape} or N x {shape[1:]})", 2)


def load_inputs(path: str, inputs: Sequence[Dict[str, Any]]) -> Tuple[List[np.ndarray],
                                                                       Optional[np.ndarray]]:
    """(one (N, *shape) array per model input, labels or None) from `path`
    (the forms of the module docstring). Raises CliError."""
    names = [d["name"] for d in inputs]
    labels = None
    if os.path.isdir(path):
        files = sorted(f for f in os.listdir(path) if f.endswith(".npy"))
        if not files:
            raise CliError(f"--inputs {path}: no .npy files in the directory", 2)
        if len(inputs) != 1:
            raise CliError(f"--inputs {path}: a directory feeds one-input models; this one has "
                           f"{len(inputs)} inputs (use an .npz with one array per input)", 2)
        try:
            arrays = [np.stack([np.load(os.path.join(path, f)) for f in files])]
        except ValueError:
            raise CliError(f"--inputs {path}: the .npy files do not all have one shape", 2)
    elif not os.path.isfile(path):
        raise CliError(f"--inputs {path}: no such file or directory", 2)
    elif path.endswith(".npy"):
        if len(inputs) != 1:
            raise CliError(f"--inputs {path}: an .npy file feeds one-input models; this one has "
                           f"{len(inputs)} inputs (use an .npz with one array per input)", 2)
        arrays = [np.load(path)]
    elif path.endswith(".npz"):
        with np.load(path) as z:
            data = {k: z[k] for k in z.files}
        labels = next((data.pop(k) for k in _Y_KEYS if k in data), None)
        if all(n in data for n in names):
            arrays = [data[n] for n in names]
        elif len(inputs) == 1:
            key = next((k for k in _X_KEYS if k in data), None)
            if key is None and len(data) == 1:
                key = next(iter(data))
            if key is None:
                raise CliError(f"--inputs {path}: which array is the input? It has "
                               f"{', '.join(sorted(data))}; name it {names[0]!r} or 'x'", 2)
            arrays = [data[key]]
        else:
            raise CliError(f"--inputs {path}: needs one array per model input, named "
                           f"{', '.join(map(repr, names))}; it has {', '.join(sorted(data))}", 2)
    else:
        raise CliError(f"--inputs {path}: expected a directory, an .npz or an .npy file", 2)
    arrays = [_samples(d["name"], a, d["shape"]) for d, a in zip(inputs, arrays)]
    counts = {len(a) for a in arrays}
    if len(counts) != 1:
        raise CliError(f"--inputs {path}: the inputs hold different numbers of samples "
                       f"({sorted(counts)})", 2)
    return arrays, labels


def prepare(a: np.ndarray, d: Dict[str, Any]) -> np.ndarray:
    """Samples converted to the model input's dtype (float data for an integer
    input quantized with the input's scale and zero point)."""
    dtype = np.dtype(d["dtype"])
    if a.dtype == dtype:
        return a
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        if np.issubdtype(a.dtype, np.floating):
            scale, zp = d.get("quantization") or (0.0, 0)
            if not scale:
                raise CliError(f"--inputs: float data for input {d['name']!r} of dtype {dtype} "
                               "without quantization parameters; give integer data", 2)
            return np.clip(np.round(a / scale + zp), info.min, info.max).astype(dtype)
        if a.min(initial=0) < info.min or a.max(initial=0) > info.max:
            raise CliError(f"--inputs: values of input {d['name']!r} outside {dtype}'s range", 2)
        return a.astype(dtype)
    return a.astype(dtype)


def read_labels(path: str) -> np.ndarray:
    if not os.path.isfile(path):
        raise CliError(f"--labels {path}: no such file", 2)
    if path.endswith(".npy"):
        return np.load(path).reshape(-1)
    with open(path) as f:
        text = f.read().replace(",", " ").split()
    try:
        return np.array([int(t) for t in text])
    except ValueError:
        raise CliError(f"--labels {path}: expected integers (one per sample)", 2)


# ---- work ----------------------------------------------------------------------------------

_worker: Dict[str, Any] = {}


def _init(path: str, kind: str, hw, options) -> None:
    from nacc.runners import open_pair

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    _worker["pair"] = open_pair(path, kind, hw, options)


def _top1(y: np.ndarray) -> int:
    """The class of a batch-1 output: argmax over its elements."""
    return int(np.argmax(np.asarray(y).reshape(-1)))


def _run_chunk(task: Tuple[int, List[List[np.ndarray]]]) -> List[Dict[str, Any]]:
    start, chunk = task
    npu, ref = _worker["pair"]
    out = []
    for k, x in enumerate(chunk):
        t0 = time.perf_counter()
        got = npu.run(x)
        t1 = time.perf_counter()
        want = ref.run(x)
        t2 = time.perf_counter()
        a = results.agreement(got, want)
        out.append({"index": start + k, "bit_exact": a["bit_exact"],
                    "outputs": [(o["bit_exact"], o["differing"], o["elements"], o["max_abs_diff"])
                                for o in a["outputs"]],
                    "top1": (_top1(got[0]), _top1(want[0])),
                    "host_ms": ((t1 - t0) * 1e3, (t2 - t1) * 1e3),
                    "cycles": npu.npu()["cycles"]})
    return out


class _Bar:
    def __init__(self, total: int, enabled: bool):
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                print("nacc eval: (no progress bar: tqdm is not installed)", file=sys.stderr)
            else:
                self.bar = tqdm(total=total, unit="input", file=sys.stderr, dynamic_ncols=True,
                                desc="nacc eval")

    def update(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def evaluate(path: str, kind: str, hw, inputs: str, *, labels: Optional[str] = None,
             workers: Optional[int] = None, limit: Optional[int] = None,
             options: Optional[Dict[str, str]] = None, progress: bool = True) -> Dict[str, Any]:
    """Runs the evaluation of the module docstring; returns the result dict."""
    from nacc.runners import open_pair

    # The first pair, in this process: checks the model and options, reads the
    # input details and yields the report; workers open their own.
    npu, ref = open_pair(path, kind, hw, options)
    arrays, npz_labels = load_inputs(inputs, npu.inputs)
    arrays = [prepare(a, d) for a, d in zip(arrays, npu.inputs)]
    n = len(arrays[0]) if limit is None else min(limit, len(arrays[0]))
    if n == 0:
        raise CliError(f"--inputs {inputs}: no samples", 2)
    y = read_labels(labels) if labels else npz_labels
    if y is not None:
        y = np.asarray(y).reshape(-1)
        if len(y) < n:
            raise CliError(f"--labels: {len(y)} labels for {n} samples", 2)
        y = y[:n]
    samples = [[a[i] for a in arrays] for i in range(n)]
    # One run here first: a bad input fails now, not in every worker, and the
    # report below has this process's NPU figures (they do not depend on values).
    npu.run(samples[0])
    tasks = [(i, samples[i:i + CHUNK]) for i in range(0, n, CHUNK)]
    workers = max(1, min(workers or os.cpu_count() or 1, len(tasks)))
    rows: List[Dict[str, Any]] = []
    bar = _Bar(n, progress)
    t0 = time.perf_counter()
    try:
        if workers == 1:
            _worker["pair"] = (npu, ref)
            for t in tasks:
                rows += _run_chunk(t)
                bar.update(len(t[1]))
        else:
            ctx = multiprocessing.get_context("spawn")  # no fork of a process running TF / ORT
            with ctx.Pool(workers, initializer=_init, initargs=(path, kind, hw, options)) as pool:
                for part in pool.imap_unordered(_run_chunk, tasks):
                    rows += part
                    bar.update(len(part))
    finally:
        bar.close()
        _worker.clear()
    wall_s = time.perf_counter() - t0
    rows.sort(key=lambda r: r["index"])
    rep = npu.report()
    return summarize(rows, y, path=path, kind=kind, hw=hw, npu_label=npu.label,
                     ref_label=ref.label, workers=workers, wall_s=wall_s,
                     output_names=[o["name"] for o in npu.outputs], rep=rep)


def summarize(rows, y, *, path, kind, hw, npu_label, ref_label, workers, wall_s, output_names,
              rep) -> Dict[str, Any]:
    n = len(rows)
    outputs = []
    for j, name in enumerate(output_names):
        col = [r["outputs"][j] for r in rows]
        comparable = [c for c in col if c[1] is not None]
        outputs.append({"name": name, "bit_exact_share": sum(c[0] for c in col) / n,
                        "differing": sum(c[1] for c in comparable),
                        "elements": sum(c[2] for c in col),
                        "max_abs_diff": max([c[3] for c in comparable] or [0.0])})
    top1 = np.array([r["top1"] for r in rows])
    cycles = [r["cycles"] for r in rows]
    out = {
        "command": "eval", "model": path, "runtime": kind, "nacc": npu_label,
        "reference": ref_label, "hardware": hw.as_dict(), "samples": n, "workers": workers,
        "wall_s": wall_s,
        "bit_exact_samples": sum(r["bit_exact"] for r in rows),
        "bit_exact_share": sum(r["bit_exact"] for r in rows) / n,
        "differing_samples": [r["index"] for r in rows if not r["bit_exact"]][:50],
        "outputs": outputs,
        "top1_agreement": float(np.mean(top1[:, 0] == top1[:, 1])),
        "npu": dict(rep["totals"], cycles_min=min(cycles), cycles_max=max(cycles)),
        "host_ms": {"nacc": results.timing([r["host_ms"][0] for r in rows]),
                    "reference": results.timing([r["host_ms"][1] for r in rows])},
        "summary": rep["summary"], "host": rep["host"],
    }
    if y is not None:
        out["accuracy"] = {"labels": int(len(y)), "nacc": float(np.mean(top1[:, 0] == y)),
                           "reference": float(np.mean(top1[:, 1] == y))}
    return out


def format_text(r: Dict[str, Any]) -> str:
    hw, t = r["hardware"], r["npu"]
    lines = [f"nacc eval {r['model']}: {r['samples']} inputs, {r['nacc']} vs {r['reference']}; "
             f"{hw['cores']} core(s), {hw['sram_kb']} KB SRAM/core, {hw['clock_mhz']} MHz; "
             f"{r['workers']} worker process(es), {r['wall_s']:.1f} s", r["summary"],
             f"Bit-exact: {r['bit_exact_samples']} of {r['samples']} inputs "
             f"({100 * r['bit_exact_share']:.1f}%)"]
    for o in r["outputs"]:
        lines.append(f"  output {o['name']!r}: bit-exact on {100 * o['bit_exact_share']:.1f}% of "
                     f"the inputs, {o['differing']} of {o['elements']} elements differ, max abs "
                     f"diff {o['max_abs_diff']:g}")
    lines.append(f"Top-1 agreement: {100 * r['top1_agreement']:.1f}%")
    if "accuracy" in r:
        a = r["accuracy"]
        lines.append(f"Accuracy on {a['labels']} labels: nacc {100 * a['nacc']:.1f}%, "
                     f"reference {100 * a['reference']:.1f}%")
    if t["cycles"]:
        lines.append(f"Simulated NPU time per inference: {t['latency_us']:,.2f} us ({t['cycles']:,} "
                     f"cycles at {t['clock_mhz']} MHz; NPU partitions only, host ops excluded)")
    h = r["host_ms"]
    lines.append(f"Host time per inference: {h['nacc']['mean']:.3f} ms with nacc (simulation), "
                 f"{h['reference']['mean']:.3f} ms reference")
    return "\n".join(lines)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = model_parser("nacc eval", __doc__)
    p.add_argument("--inputs", required=True, metavar="DIR|FILE",
                   help="a directory of .npy samples, an .npz or an .npy file")
    p.add_argument("--labels", metavar="FILE", help="class labels (.npy, or text: one per sample)")
    p.add_argument("--workers", type=int, default=None,
                   help="worker processes (default: the host's CPUs; 1 = in this process)")
    p.add_argument("--limit", type=int, default=None, help="only the first N samples")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="extra delegate / EP option (repeatable)")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON")
    p.add_argument("--strict", action="store_true",
                   help="exit status 1 when any input's outputs differ")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    hw_arguments(p, seed=False)
    a = p.parse_args(list(argv))
    if (a.workers is not None and a.workers < 1) or (a.limit is not None and a.limit < 1):
        p.error("--workers and --limit must be >= 1")
    return a


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    kind, hw, options = model_command(args, "eval")
    r = evaluate(args.model, kind, hw, args.inputs, labels=args.labels, workers=args.workers,
                 limit=args.limit, options=options, progress=not args.no_progress)
    print(format_text(r))
    write_json(args.json, r)
    return 1 if args.strict and r["bit_exact_share"] < 1 else 0


if __name__ == "__main__":
    from nacc.cli import guarded

    sys.exit(guarded("eval", lambda: main(sys.argv[1:])))

"""The differential fuzzer's driver: worker processes, the per-graph jobs
(reference run, nacc run, comparison), shrinking, reproducers and the report.

Each graph is a small state machine (a generator yielding requests to the
"ref" or "nacc" worker); the scheduler keeps both workers busy on different
graphs at once, and restarts a worker that dies or hangs.
"""
from __future__ import annotations

import collections
import json
import os
import pickle
import select
import signal
import shutil
import struct
import subprocess
import sys
import time
from typing import Dict, Iterable, List, Optional

import numpy as np

from .generate import boundary_hits, generate, make_inputs, shrink_candidates
from .ops import KINDS

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS_DIR = os.path.dirname(HERE)
ROOT = os.path.dirname(TESTS_DIR)

REQUEST_TIMEOUT_S = 120.0   # one request (a worker's first one includes its imports)
STARTUP_TIMEOUT_S = 180.0   # imports on a loaded machine
ONNX_TOLERANCE = 1          # NACC_SPEC §1: the EP may differ from ORT's CPU kernels by 1
VIEW_KINDS = {"RESHAPE"}    # views: never claimed alone (reshape-only partitions stay home)


# ---- workers --------------------------------------------------------------------------

class WorkerProc:
    """One worker subprocess (fuzz/worker.py), started on first use and
    restarted after it dies."""

    def __init__(self, role: str, log_path: str, timeout: float = REQUEST_TIMEOUT_S):
        self.role, self.log_path, self.timeout = role, log_path, timeout
        self.proc: Optional[subprocess.Popen] = None
        self.starts = 0
        self.deadline = 0.0
        self._log_pos = 0

    def _start(self) -> None:
        import nacc

        paths = [TESTS_DIR, os.path.dirname(os.path.dirname(os.path.abspath(nacc.__file__)))]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        env["OMP_NUM_THREADS"] = "1"
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "fuzz.worker", self.role],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                     cwd=ROOT, env=env, start_new_session=True)
        log.close()
        self.starts += 1

    def send(self, method: str, kwargs: dict) -> None:
        started = False
        if self.proc is None or self.proc.poll() is not None:
            self._start()
            started = True
        self._log_pos = os.path.getsize(self.log_path) if os.path.exists(self.log_path) else 0
        data = pickle.dumps((method, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.proc.stdin.write(struct.pack("<Q", len(data)) + data)
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # recv reports the death
        # a fresh worker first imports TensorFlow / LiteRT / ONNX Runtime
        self.deadline = time.monotonic() + self.timeout + (STARTUP_TIMEOUT_S if started else 0)

    def fileno(self) -> int:
        return self.proc.stdout.fileno()

    def _stderr_tail(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_pos)
                return f.read()[-3000:].decode(errors="replace")
        except OSError:
            return ""

    def recv(self) -> dict:
        head = self.proc.stdout.read(8)
        if len(head) == 8:
            (n,) = struct.unpack("<Q", head)
            body = self.proc.stdout.read(n)
            if len(body) == n:
                return pickle.loads(body)
        self._kill()
        self.proc = None
        return {"died": "crash", "returncode": None, "stderr": self._stderr_tail()}

    def _kill(self) -> None:
        try:  # the worker and its forked child: the process group it leads
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def kill_for_timeout(self) -> dict:
        self._kill()
        self.proc = None
        return {"died": "timeout", "returncode": None, "stderr": self._stderr_tail()}

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except Exception:
                self._kill()
            self.proc = None


class Scheduler:
    """Runs jobs (generators yielding (role, method, kwargs), receiving the
    response) with at most one request per worker in flight."""

    def __init__(self, log_dir: str, timeout: float = REQUEST_TIMEOUT_S):
        os.makedirs(log_dir, exist_ok=True)
        self.workers = {r: WorkerProc(r, os.path.join(log_dir, f"worker_{r}.log"), timeout)
                        for r in ("ref", "nacc")}
        self.timing = collections.defaultdict(lambda: [0, 0.0, 0.0])  # method -> n, wall, cpu

    def close(self) -> None:
        for w in self.workers.values():
            w.close()

    @staticmethod
    def _advance(entry: list, resp) -> Optional[dict]:
        try:
            entry[1] = entry[0].send(resp)
            return None
        except StopIteration as e:
            entry[1] = None
            return e.value

    def run(self, jobs: Iterable, window: int = 4):
        """Yields each job's result as it finishes."""
        it = iter(jobs)
        active: List[list] = []
        busy: Dict[str, list] = {}
        exhausted = False
        while True:
            while not exhausted and len(active) < window:
                try:
                    entry = [next(it), None]
                except StopIteration:
                    exhausted = True
                    break
                result = self._advance(entry, None)
                if result is not None:
                    yield result
                else:
                    active.append(entry)
            for role, w in self.workers.items():
                if role in busy:
                    continue
                for entry in active:
                    if entry[1] is not None and entry[1][0] == role and entry not in busy.values():
                        w.send(entry[1][1], entry[1][2])
                        busy[role] = entry
                        break
            if not busy:
                if exhausted and not active:
                    return
                continue
            now = time.monotonic()
            timeout = max(0.0, min(self.workers[r].deadline for r in busy) - now)
            ready, _, _ = select.select([self.workers[r] for r in busy], [], [], timeout)
            finished = []
            if ready:
                for w in ready:
                    finished.append((w.role, w.recv()))
            else:
                for r in list(busy):
                    if self.workers[r].deadline <= time.monotonic():
                        finished.append((r, self.workers[r].kill_for_timeout()))
            for role, resp in finished:
                if "died" in resp and not resp.get("stderr"):
                    resp["stderr"] = self.workers[role]._stderr_tail()
                if "timing" in resp:
                    m, wall, cpu = resp["timing"]
                    self.timing[m][0] += 1
                    self.timing[m][1] += wall
                    self.timing[m][2] += cpu
                entry = busy.pop(role)
                result = self._advance(entry, resp)
                if result is not None:
                    active.remove(entry)
                    yield result


# ---- per-graph jobs ----------------------------------------------------------------------

def _fail(res: dict, category: str, message: str) -> dict:
    res["status"] = "fail"
    res["category"] = category
    res["message"] = message
    return res


def _diff(a: np.ndarray, b: np.ndarray) -> str:
    if a.shape != b.shape:
        return f"shape {b.shape} instead of {a.shape}"
    d = np.abs(a.astype(np.int32) - b.astype(np.int32))
    idx = np.unravel_index(int(np.argmax(d)), d.shape)
    return (f"{int(np.count_nonzero(d))} of {d.size} elements differ, max |diff| {int(d.max())} "
            f"at {tuple(int(i) for i in idx)} (reference {int(a[idx])}, nacc {int(b[idx])})")


def tflite_job(spec: dict, inject_fault: Optional[str] = None):
    res = {"spec": spec, "format": "tflite", "status": "ok", "inputs": make_inputs(spec)}
    r = yield ("ref", "build_tflite", {"spec": spec})
    if "model" not in r:
        return _fail(res, "builder_error", r.get("error") or r.get("died"))
    res["model"] = r["model"]
    r = yield ("ref", "run_tflite", {"model": res["model"], "inputs": res["inputs"]})
    if "outputs" not in r:
        res["status"] = "ref_failed"
        res["message"] = (f"reference process {r['died']} (exit {r['returncode']})" if "died" in r
                          else r.get("error", "?"))
        return res
    ref = r["outputs"]
    res["expected"] = ref
    n = yield ("nacc", "run_tflite", {"model": res["model"], "inputs": res["inputs"],
                                      "options": spec["options"], "inject_fault": inject_fault})
    if "died" in n:
        return _fail(res, n["died"], f"nacc worker {n['died']} (exit {n['returncode']}): "
                                     f"{n['stderr'][-1500:]}")
    res["nodes"] = n.get("nodes")
    if "error" in n:
        return _fail(res, f"error:{n.get('stage', '?')}", n["error"])
    res["actual"] = n["outputs"]
    compile_reasons, fallbacks = [], []
    for i, nd in enumerate(n["nodes"] or []):
        for rule, det in nd["reasons"]:
            if rule == "compile":
                # a partition the compiler rejects as a whole falls back to the
                # host by design (docs/tflite_delegate.md, Prepare step 4); a
                # node that does not compile alone was claimed by rules the
                # compiler disagrees with (the wording of csrc/partition/policy.h
                # compile_fallback, shared with the EP below)
                fallback = det.startswith("its partition does not compile")
                (fallbacks if fallback else compile_reasons).append((i, nd["op"], det))
    if fallbacks:
        res["findings"] = [("partition_fallback", f"node {i} {op}: {det}") for i, op, det in fallbacks]
    for i, (want, got) in enumerate(zip(ref, n["outputs"])):
        if want.shape != got.shape or not np.array_equal(want, got):
            host = n.get("host_outputs")
            if host is not None and np.array_equal(host[i], got):
                res["status"] = "ref_disagreement"
                res["message"] = (f"output {i}: nacc equals LiteRT's BUILTIN_REF but not "
                                  f"TensorFlow's: {_diff(want, got)}")
                return res
            return _fail(res, "mismatch", f"output {i}: {_diff(want, got)}")
    if compile_reasons:
        return _fail(res, "claimed_then_failed",
                     "; ".join(f"node {i} {op}: {det}" for i, op, det in compile_reasons))
    return res


# Op kinds ORT runs with its u8s8 integer kernels once QDQS8ToU8Transformer
# has made their int8 Q -> DQ pairs uint8 (QLinearConv, MatMulInteger, ...).
U8S8_KINDS = {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "BATCH_MATMUL"}
U8_TRANSFORMER = "QDQS8ToU8Transformer"


def cpu_has_vnni() -> bool:
    """Whether ORT's u8s8 kernels are exact-integer on this CPU (VNNI / AMX);
    without, MLAS's AVX2 u8s8 kernel saturates int16 pair sums."""
    from nacc import _core
    f = _core.cpu_features()
    return bool(f["avx512_vnni"] or f["avx_vnni"] or f["amx_int8"])


def host_u8s8_ops(spec: dict, run: dict) -> List[int]:
    """Ops of `spec` of a U8S8 kind whose node ORT ran (on the host) in `run`."""
    host = {h[0] for h in (run.get("report") or {}).get("host_nodes", [])}
    return [j for j, op in enumerate(spec["ops"]) if op["kind"] in U8S8_KINDS and f"op{j}" in host]


def downstream_of(spec: dict, ops: Iterable[int]) -> set:
    """Tensor ids computed from the outputs of `ops` (theirs included)."""
    tensors = {spec["ops"][j]["out"] for j in ops}
    for op in spec["ops"]:  # ops are in data order
        if any(t in tensors for t in op["in"]):
            tensors.add(op["out"])
    return tensors


def onnx_job(spec: dict):
    from .build_onnx import to_nchw, to_nhwc

    res = {"spec": spec, "format": "onnx", "status": "ok"}
    inputs = make_inputs(spec)
    res["inputs"] = inputs
    feeds = {f"t{t}": to_nchw(x) for t, x in zip(spec["inputs"], inputs)}
    r = yield ("ref", "build_onnx", {"spec": spec, "expose": False})
    if "model" not in r:
        return _fail(res, "builder_error", r.get("error") or r.get("died"))
    res["model"] = r["model"]
    r2 = yield ("ref", "build_onnx", {"spec": spec, "expose": True})
    exposed = r2["model"]
    r = yield ("ref", "run_onnx_cpu", {"model": res["model"], "feeds": feeds})
    if "outputs" not in r:
        res["status"] = "ref_failed"
        res["message"] = (f"reference process {r['died']} (exit {r['returncode']})" if "died" in r
                          else r.get("error", "?"))
        return res
    res["expected"] = r["outputs"]
    n = yield ("nacc", "run_onnx", {"models": [res["model"], exposed], "feeds": feeds,
                                    "options": spec["options"]})
    if "died" in n:
        return _fail(res, n["died"], f"nacc worker {n['died']} (exit {n['returncode']}): "
                                     f"{n['stderr'][-1500:]}")
    runs = n["runs"]
    res["report"] = runs[0].get("report")
    for k, run in enumerate(runs):
        if "error" in run:
            return _fail(res, f"error:{run['stage']}", f"{'exposed ' if k else ''}model: {run['error']}")
    plain, full = runs[0]["outputs"], runs[1]["outputs"]
    res["actual"] = plain
    res["findings"] = []
    for k, run in enumerate(runs):
        for h in (run.get("report") or {}).get("host_nodes", []):
            if "its partition does not compile" in (h[2] or ""):
                res["findings"].append(("partition_fallback", f"{'exposed: ' if k else ''}{h[0]}: {h[2]}"))
                break
    claims = [set((run.get("report") or {}).get("claimed_names", [])) for run in runs]
    if claims[0] == claims[1]:
        # the same nodes on the NPU: the intermediates must not change a bit
        for name, v in plain.items():
            if not np.array_equal(v, full[name]):
                msg = (f"{name}: the graph with its intermediates as outputs gives other "
                       f"values: {_diff(v, full[name])}")
                if np.array_equal(v, res["expected"].get(name)):
                    # nacc equals ORT's CPU EP on the graph as is, and the exposed
                    # graph passed the per-op check below: ORT itself computes
                    # the two graphs differently (its QDQ fusions need the
                    # intermediates internal), e.g. com.microsoft QLinearSoftmax
                    # gives 0.0 for a one-element softmax where the unfused
                    # DequantizeLinear-Softmax-QuantizeLinear gives 1.0
                    res["findings"].append(("ort_fused_vs_unfused", msg))
                    continue
                u8 = yield from _u8_at_boundary_whole(spec, res, runs, feeds, name)
                if u8:
                    res["findings"].append(("ort_u8_at_boundary", f"{msg}; {u8}"))
                    continue
                return _fail(res, "inconsistent", msg)
    else:
        res["findings"].append(("exposed_partitioned_differently",
                                f"{len(claims[0])} vs {len(claims[1])} nodes claimed"))
    values = dict(feeds)
    values.update(full)
    c = yield ("ref", "check_onnx_ops", {"spec": spec, "values": values})
    if "outputs" not in c:
        res["status"] = "ref_failed"
        res["message"] = f"per-op reference: {c.get('error') or c.get('died')}"
        return res
    res["off_by_one"] = collections.Counter()
    res["compared"] = collections.Counter()
    for j, want in c["outputs"].items():
        op = spec["ops"][j]
        got = full[f"t{op['out']}"]
        if isinstance(want, str):
            res["status"] = "ref_failed"
            res["message"] = f"per-op reference of op {j} {op['kind']}: {want}"
            return res
        d = np.abs(want.astype(np.int32) - got.astype(np.int32)) if want.shape == got.shape else None
        if d is None or int(d.max()) > ONNX_TOLERANCE:
            msg = (f"op {j} {op['kind']} (fed nacc's own inputs): {_diff(want, got)}; "
                   f"allowed |diff| <= {ONNX_TOLERANCE}")
            if d is not None and j in host_u8s8_ops(spec, runs[1]) and not cpu_has_vnni():
                # ORT ran this op on the host in nacc's session: when ORT alone,
                # the op between int8 Q -> DQ pairs (made uint8), gives nacc's
                # values exactly, the difference is ORT's u8s8 kernel, not nacc
                u = yield ("ref", "check_onnx_op_u8", {"spec": spec, "j": j, "values": values})
                if "output" in u and np.array_equal(u["output"], got):
                    res["findings"].append((
                        "ort_u8_at_boundary",
                        f"op {j} {op['kind']} on the host: {_diff(want, got)}; ORT alone with "
                        f"the op between uint8 Q -> DQ pairs gives nacc's session's values"))
                    continue
            return _fail(res, "mismatch", msg)
        res["off_by_one"][op["kind"]] += int(np.count_nonzero(d))
        res["compared"][op["kind"]] += int(d.size)
    if runs[0].get("report"):
        rejected = [h for h in runs[0]["report"]["host_nodes"]
                    if "the compiler rejects it" in (h[2] or "")]
        if rejected:
            return _fail(res, "claimed_then_failed",
                         "; ".join(f"{h[0]} {h[1]}: {h[2]}" for h in rejected))
    return res


def _u8_at_boundary_whole(spec: dict, res: dict, runs: list, feeds: dict, name: str):
    """Why output `name`, where nacc's plain and exposed sessions disagree and
    the plain one is not the CPU EP's, differs by ORT's doing: on a CPU
    without VNNI, downstream only of host ops of a u8s8 kind, and ORT's CPU
    EP without QDQS8ToU8Transformer computes exactly nacc's values in both
    graphs (the partition boundaries moved which int8 Q -> DQ pairs ORT makes
    uint8). None otherwise (then it is a failure)."""
    if cpu_has_vnni():
        return None
    hosts = sorted(set(host_u8s8_ops(spec, runs[0])) | set(host_u8s8_ops(spec, runs[1])))
    if not hosts or int(name[1:]) not in downstream_of(spec, hosts):
        return None
    r = yield ("ref", "run_onnx_cpu", {"model": res["model"], "feeds": feeds,
                                       "disabled_optimizers": [U8_TRANSFORMER]})
    if "outputs" not in r or not np.array_equal(r["outputs"].get(name), runs[0]["outputs"][name]):
        return None
    return (f"host op(s) {', '.join(f'{j} ' + spec['ops'][j]['kind'] for j in hosts)} upstream; "
            f"the CPU EP without {U8_TRANSFORMER} gives nacc's values")


JOBS = {"tflite": tflite_job, "onnx": onnx_job}


def job_for(spec: dict, inject_fault: Optional[str] = None):
    if inject_fault:
        return tflite_job(spec, inject_fault)
    return JOBS[spec["format"]](spec)


# ---- claims ------------------------------------------------------------------------------------

def lowered_kinds() -> set:
    """Op kinds the capability rules let the NPU run today (read from the rule
    table, so kinds other engineers lower start counting automatically)."""
    from nacc import _core

    rules = _core.rules_table()
    not_lowered = set(next((r["op_kinds"] for r in rules if r["name"] == "compiler_lowering"), []))
    kinds = {k["name"] for k in _core.op_kinds()} - not_lowered
    # TFLite builtins the frontend reduces to one IR kind
    return kinds | {alias for k, names in IR_ALIASES.items() if k in kinds for alias in names}


IR_ALIASES = {"SLICE": ("STRIDED_SLICE", "SPLIT", "SPLIT_V")}


def node_claims(res: dict) -> List[tuple]:
    """[(kind, claimed, intended valid, reasons, generated past a limit)] per
    generated op of a finished graph."""
    spec = res["spec"]
    out = []
    if res["format"] == "tflite":
        nodes = res.get("nodes")
        if not nodes or len(nodes) != len(spec["ops"]):
            return []
        for op, nd in zip(spec["ops"], nodes):
            inv = op["p"].get("invalid")
            out.append((op["kind"], bool(nd["claimed"]), not inv,
                        [r for r, _ in nd["reasons"]] or inv, bool(inv)))
    else:
        rep = res.get("report")
        if not rep:
            return []
        host = {h[0]: h[2] for h in rep["host_nodes"]}
        claimed = set(rep.get("claimed_names", []))
        for j, op in enumerate(spec["ops"]):
            name = f"op{j}"
            reason = host.get(name, "node not in ORT's graph (rewritten by ORT)")
            valid = not op["p"].get("invalid")
            if op["kind"] in ("MAX_POOL_2D", "AVERAGE_POOL_2D") and op["p"].get("act", "NONE") != "NONE":
                valid = False  # ONNX has no fused activation on pools: Pool -> Relu -> Q is no unit
            inv = [i for i in op["p"].get("invalid", []) if i != "fused TANH" or "POOL" not in op["kind"]]
            out.append((op["kind"], name in claimed, valid,
                        ([] if name in claimed else [reason.split(":")[0][:60]]) or inv, bool(inv)))
    return out


# ---- statistics ---------------------------------------------------------------------------------

class Stats:
    def __init__(self):
        self.lowered = lowered_kinds()
        self.graphs = collections.Counter()        # format -> graphs run
        self.status = collections.Counter()        # (format, status)
        self.ref_failed = collections.Counter()    # message head
        self.disagreements: List[str] = []
        self.failures: List[dict] = []
        self.kind_total = collections.Counter()
        self.kind_claimed = collections.Counter()
        self.unexpected_declines = collections.Counter()   # (kind, reason) of intended-valid nodes
        self.invalid_claimed = collections.Counter()
        self.boundaries = collections.Counter()
        self.off_by_one = collections.Counter()
        self.compared = collections.Counter()
        self.seconds = collections.Counter()
        self.findings = collections.Counter()      # (format, category)
        self.finding_examples: Dict[tuple, str] = {}

    def supported(self, kind: str) -> bool:
        return kind in self.lowered and KINDS[kind].npu and kind not in VIEW_KINDS

    def add(self, res: dict) -> None:
        fmt = res["format"]
        self.graphs[fmt] += 1
        self.status[(fmt, res["status"])] += 1
        for hit in boundary_hits(res["spec"]):
            self.boundaries[hit] += 1
        if res["status"] == "ref_failed":
            self.ref_failed[(fmt, res["message"][:240])] += 1
        elif res["status"] == "ref_disagreement":
            self.disagreements.append(f"{fmt} seed {res['spec']['seed']} graph {res['spec']['index']}: "
                                      f"{res['message']}")
        elif res["status"] == "fail":
            self.failures.append(res)
        for kind, claimed, valid, reasons, past_limit in node_claims(res):
            key = (fmt, kind)
            self.kind_total[key] += 1
            self.kind_claimed[key] += claimed
            if self.supported(kind):
                if valid and not claimed:
                    self.unexpected_declines[(fmt, kind, ",".join(reasons))] += 1
                if past_limit and claimed:
                    self.invalid_claimed[(fmt, kind, ",".join(reasons))] += 1
        for cat, text in res.get("findings", []):
            self.findings[(fmt, cat)] += 1
            self.finding_examples.setdefault(
                (fmt, cat), f"seed {res['spec']['seed']} graph {res['spec']['index']}: {text[:300]}")
        self.off_by_one.update(res.get("off_by_one", {}))
        self.compared.update(res.get("compared", {}))

    def claim_rate(self, fmt: Optional[str] = None) -> tuple:
        total = claimed = 0
        for (f, kind), n in self.kind_total.items():
            if (fmt is None or f == fmt) and self.supported(kind):
                total += n
                claimed += self.kind_claimed[(f, kind)]
        return claimed, total

    def report(self) -> str:
        lines = []
        for fmt in sorted(self.graphs):
            st = {s: n for (f, s), n in self.status.items() if f == fmt}
            c, t = self.claim_rate(fmt)
            lines.append(f"{fmt}: {self.graphs[fmt]} graphs ({', '.join(f'{k} {v}' for k, v in sorted(st.items()))}); "
                         f"claimed {c} of {t} generated nodes of supported kinds "
                         f"({100.0 * c / max(t, 1):.1f} %)"
                         + (f"; {self.seconds[fmt]:.1f} s, {100 * self.seconds[fmt] / self.graphs[fmt]:.1f} s per 100 graphs"
                            if self.seconds[fmt] else ""))
        lines.append("nodes per kind (claimed/generated): " + ", ".join(
            f"{f}:{k} {self.kind_claimed[(f, k)]}/{n}" for (f, k), n in sorted(self.kind_total.items())))
        if self.unexpected_declines:
            lines.append("intended-valid nodes of supported kinds declined: " + "; ".join(
                f"{f}:{k} [{r}] x{n}" for (f, k, r), n in self.unexpected_declines.most_common(12)))
        if self.invalid_claimed:
            lines.append("nodes generated past a limit yet claimed: " + ", ".join(
                f"{f}:{k} [{r}] x{n}" for (f, k, r), n in self.invalid_claimed.items()))
        by_param = collections.defaultdict(dict)
        for (param, value), n in sorted(self.boundaries.items(), key=lambda kv: str(kv[0])):
            by_param[param][str(value)] = n
        lines.append("boundary values hit: " + "; ".join(
            f"{p} {' '.join(f'{v}:{n}' for v, n in vals.items())}" for p, vals in sorted(by_param.items())))
        if self.compared:
            lines.append("ONNX elements within 1 of ORT CPU but not equal (per op kind): " + ", ".join(
                f"{k} {self.off_by_one[k]}/{self.compared[k]}" for k in sorted(self.compared)))
        for key, n in sorted(self.findings.items()):
            lines.append(f"finding {key[0]}:{key[1]} in {n} graphs, e.g. {self.finding_examples[key]}")
        if self.ref_failed:
            lines.append(f"reference failed ({sum(self.ref_failed.values())}): " + "; ".join(
                f"{f}: {m} x{n}" for (f, m), n in self.ref_failed.most_common(6)))
        for d in self.disagreements[:5]:
            lines.append("reference disagreement: " + d)
        if getattr(self, "timing", None):
            lines.append("worker time (calls, wall s, cpu s): " + ", ".join(
                f"{m} {n}/{w:.1f}/{c:.1f}" for m, (n, w, c) in sorted(self.timing.items())))
        if getattr(self, "worker_starts", None):
            lines.append(f"worker starts: {self.worker_starts}")
        lines.append(f"failures: {len(self.failures)}")
        for f in self.failures:
            lines.append(f"  {f['format']} seed {f['spec']['seed']} graph {f['spec']['index']} "
                         f"[{f['category']}] {f['message'][:300]}"
                         + (f" -> {f['repro']}" if f.get("repro") else ""))
        return "\n".join(lines)


# ---- shrinking and reproducers ---------------------------------------------------------------

def shrink(sched: Scheduler, res: dict, budget_s: float = 90.0, max_tries: int = 150,
           inject_fault: Optional[str] = None) -> dict:
    """Greedy shrinking: the first smaller variant that fails the same way
    replaces the graph, until no variant does (or the budget runs out)."""
    best = res
    start, tries = time.monotonic(), 0
    progress = True
    while progress and time.monotonic() - start < budget_s and tries < max_tries:
        progress = False
        for cand in shrink_candidates(best["spec"]):
            if time.monotonic() - start > budget_s or tries >= max_tries:
                break
            tries += 1
            (r,) = list(sched.run([job_for(cand, inject_fault)], window=1))
            if r["status"] == "fail" and r["category"] == res["category"]:
                best = r
                progress = True
                break
    best["shrink_tries"] = tries
    return best


def _jsonable(x):
    if isinstance(x, np.ndarray):
        return {"dtype": str(x.dtype), "shape": list(x.shape), "data": x.ravel().tolist()}
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    return x


def save_repro(res: dict, out_dir: str, original: dict) -> str:
    spec = res["spec"]
    name = f"{spec['format']}_seed{spec['seed']}_graph{spec['index']}_{res['category'].replace(':', '-')}"
    d = os.path.join(out_dir, "failures", name)
    os.makedirs(d, exist_ok=True)
    ext = "tflite" if spec["format"] == "tflite" else "onnx"
    if res.get("model"):
        with open(os.path.join(d, f"model.{ext}"), "wb") as f:
            f.write(res["model"])
    doc = {
        "what": "nacc differential fuzzer reproducer",
        "replay": f"PYTHONPATH=python python -m tests.fuzz --replay {os.path.join(d, 'repro.json')}",
        "seed": spec["seed"], "graph_index": spec["index"], "format": spec["format"],
        "category": res["category"], "message": res["message"],
        "options": spec["options"], "ops": [op["kind"] for op in spec["ops"]],
        "inputs": _jsonable(res.get("inputs")),
        "expected": _jsonable(res.get("expected")), "actual": _jsonable(res.get("actual")),
        "spec": spec, "original_spec": original,
        "shrink_tries": res.get("shrink_tries"),
    }
    with open(os.path.join(d, "repro.json"), "w") as f:
        json.dump(doc, f, indent=1, default=str)
    return d


# ---- the run ------------------------------------------------------------------------------------

def fuzz(graphs: int, seed: int, out_dir: str, onnx_graphs: int = 0, window: int = 4,
         shrink_failures: bool = True, log=print, mac_budget: Optional[int] = None,
         start_index: int = 0, scheduler: Optional[Scheduler] = None,
         inject_fault: Optional[str] = None, int16_graphs: int = 0,
         int4_graphs: int = 0) -> Stats:
    """Fuzzes `graphs` TFLite, `onnx_graphs` ONNX, `int16_graphs` TFLite
    16x8 and `int4_graphs` TFLite int4-weight graphs (both counted as TFLite
    graphs) of seed `seed` (graph indices
    start_index, start_index + 1, ...). `scheduler`: reuse running workers
    (tests share one); `inject_fault`: see worker._inject_fault."""
    from .generate import DEFAULT_MAC_BUDGET

    budget = mac_budget or DEFAULT_MAC_BUDGET
    stats = Stats()
    sched = scheduler or Scheduler(os.path.join(out_dir, "logs"))
    try:
        for fmt, count in (("tflite", graphs), ("onnx", onnx_graphs), ("tflite16", int16_graphs),
                           ("tflite4", int4_graphs)):
            if not count:
                continue
            t0 = time.monotonic()
            jobs = (job_for(generate(seed, start_index + i, fmt, budget), inject_fault)
                    for i in range(count))
            done = 0
            for res in sched.run(jobs, window=window):
                stats.add(res)
                done += 1
                if done % 500 == 0:
                    log(f"  {fmt}: {done}/{count} graphs, {len(stats.failures)} failures, "
                        f"{time.monotonic() - t0:.0f} s")
            stats.seconds[fmt] += time.monotonic() - t0
        if shrink_failures:
            for i, res in enumerate(stats.failures):
                original = res["spec"]
                small = shrink(sched, res, inject_fault=inject_fault)
                small["repro"] = save_repro(small, out_dir, original)
                stats.failures[i] = small
        stats.worker_starts = {r: w.starts for r, w in sched.workers.items()}
        stats.timing = {m: list(v) for m, v in sched.timing.items()}
    finally:
        if scheduler is None:
            sched.close()
    return stats


def replay(path: str, out_dir: str, scheduler: Optional[Scheduler] = None,
           inject_fault: Optional[str] = None) -> dict:
    """Runs a saved reproducer (repro.json) again."""
    with open(path) as f:
        doc = json.load(f)
    sched = scheduler or Scheduler(os.path.join(out_dir, "logs"))
    try:
        (r,) = list(sched.run([job_for(doc["spec"], inject_fault)], window=1))
    finally:
        if scheduler is None:
            sched.close()
    return r

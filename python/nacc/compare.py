"""nacc compare: where does nacc's result first differ from the CPU's?

Runs one model twice on the same inputs — without nacc (TFLite BUILTIN_REF, or
ONNX Runtime's CPU EP) and with it (BUILTIN_REF + the nacc delegate, or the
nacc EP in front of the CPU EP) — keeps every intermediate tensor and reports,
per tensor in graph order, the number of differing elements and the max
difference, naming the first tensor that diverges.

TFLite: both interpreters keep all tensors (experimental_preserve_all_tensors);
tensors computed inside a nacc partition do not exist on the host, so the
delegate runs in its debug mode (option debug_dump_dir): the runtime copies
each op's output from the simulated device's memory as the op finishes, and
compare matches those dumps to the TFLite tensors by name.
ONNX: the quantized intermediate tensors (outputs of QuantizeLinear and of
QLinear* / integer ops; --all-tensors: every node output) are added to the
graph outputs of both sessions; the nacc EP then hands them back at partition
boundaries.

    nacc compare MODEL [--cores N] [--json FILE] [--option key=value ...]
    python -m nacc.compare ...
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from nacc import results
from nacc.cli import CliError, check_flags, model_file, model_parser, output_file, parse_options


def _diff(got: np.ndarray, want: np.ndarray) -> Dict[str, Any]:
    return results.diff(got, want)


def _inputs_from(args, details) -> List[np.ndarray]:
    """--input files (.npy, in input order) or seeded random inputs of the right dtype."""
    from nacc.model_report import random_inputs

    if args.input:
        if len(args.input) != len(details):
            raise CliError(f"{len(args.input)} --input files for a model with {len(details)} "
                           "inputs", 2)
        out = []
        for p, d in zip(args.input, details):
            x = np.load(p)
            if x.size != int(np.prod(d["shape"])):
                raise CliError(f"--input {p}: shape {x.shape} does not fit the model input of "
                               f"shape {tuple(d['shape'])}", 2)
            out.append(x.astype(d["dtype"]).reshape(d["shape"]))
        return out
    return random_inputs(details, seed=args.seed)


# ---- TFLite ---------------------------------------------------------------------------------

def read_dumps(dump_dir: str) -> Dict[str, List[Dict[str, Any]]]:
    """Debug dumps of the delegate (debug_dump_dir): tensor name -> records with the data."""
    out: Dict[str, List[Dict[str, Any]]] = {}
    for path in sorted(glob.glob(os.path.join(dump_dir, "*.json"))):
        with open(path) as f:
            rec = json.load(f)
        if not rec.get("file"):
            continue
        data = np.fromfile(os.path.join(dump_dir, rec["file"]), dtype=np.int8)
        rec["data"] = data.reshape(rec["shape"]) if rec["shape"] else data
        out.setdefault(rec["tensor"], []).append(rec)
    return out


def with_extra_outputs(model: bytes, tensors: Sequence[int]) -> bytes:
    """The TFLite model with `tensors` of subgraph 0 added to its outputs (so the
    interpreter keeps them: outputs are never reused by the arena planner)."""
    import flatbuffers
    from tensorflow.lite.python import schema_py_generated as schema

    m = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(model, 0))
    sg = m.subgraphs[0]
    outs = [int(t) for t in sg.outputs]
    sg.outputs = np.array(outs + [int(t) for t in tensors if int(t) not in outs], dtype=np.int32)
    b = flatbuffers.Builder(len(model) + 1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def compare_tflite(model: bytes, args, options: Dict[str, str]) -> Dict[str, Any]:
    import tensorflow as tf

    import nacc

    ref_type = tf.lite.experimental.OpResolverType.BUILTIN_REF
    ref = tf.lite.Interpreter(model_content=model, experimental_op_resolver_type=ref_type,
                              experimental_preserve_all_tensors=True, num_threads=1)
    ref.allocate_tensors()
    inputs = _inputs_from(args, ref.get_input_details())
    ops = ref._get_ops_details()  # execution order of the interpreter without nacc
    opts = {"cores": args.cores, "log_level": "off", "threads": args.threads}
    opts.update(options)
    # experimental_preserve_all_tensors would make TFLite hand the delegate one
    # node per partition; so the nacc side keeps its host tensors by making
    # them graph outputs instead. Which nodes stay on the host: a first
    # delegate instance's decisions (Prepare only).
    probe = nacc.load_delegate(**opts)
    tf.lite.Interpreter(model_content=model, experimental_op_resolver_type=ref_type,
                        num_threads=1, experimental_delegates=[probe]).allocate_tensors()
    host_nodes = {n.node for n in probe.report().nodes if not n.claimed}
    host_tensors = [t for op in ops if op["index"] in host_nodes for t in op["outputs"] if t >= 0]
    with tempfile.TemporaryDirectory(prefix="nacc-compare-") as dump_dir:
        opts.setdefault("debug_dump_dir", dump_dir)
        delegate = nacc.load_delegate(**opts)
        npu = tf.lite.Interpreter(model_content=with_extra_outputs(model, host_tensors),
                                  experimental_op_resolver_type=ref_type, num_threads=1,
                                  experimental_delegates=[delegate])
        npu.allocate_tensors()
        for it in (ref, npu):
            for d, x in zip(it.get_input_details(), inputs):
                it.set_tensor(d["index"], x)
            it.invoke()
        dumps = read_dumps(opts["debug_dump_dir"])
        report = delegate.report()
    claimed = {n.node: n.partition for n in report.nodes if n.claimed}
    names = {d["index"]: d["name"] for d in ref.get_tensor_details()}
    rows = []
    for op in ops:
        on_npu = op["index"] in claimed
        for t in op["outputs"]:
            if t < 0:
                continue
            want = ref.get_tensor(t)
            name = names.get(t, f"t{t}") or f"t{t}"
            row = {"tensor": name, "index": int(t), "op": op["op_name"], "node": int(op["index"]),
                   "where": "nacc" if on_npu else "host", "shape": list(want.shape),
                   "dtype": str(want.dtype)}
            got = None
            if on_npu:
                recs = [r for r in dumps.get(name, []) + dumps.get(f"t{t}", [])
                        if r["data"].size == want.size]
                if recs:
                    got = max(recs, key=lambda r: r["invocation"])["data"]
                    row["source"] = "device dump"
                else:
                    row["source"] = "missing"
            else:
                got = npu.get_tensor(t)
                row["source"] = "interpreter"
            if got is not None:
                row.update(_diff(got, want))
            else:
                row.update({"differing": None, "elements": int(want.size), "max_abs_diff": None})
            rows.append(row)
    outs = [d["index"] for d in ref.get_output_details()]
    final = [_diff(npu.get_tensor(i), ref.get_tensor(i)) for i in outs]
    return {"runtime": "tflite", "oracle": "BUILTIN_REF", "tensors": rows, "outputs": final,
            "claimed": report.claimed_nodes, "total": report.total_nodes,
            "partitions": len(report.partitions)}


# ---- ONNX Runtime ---------------------------------------------------------------------------

_QUANT_OPS = {"QuantizeLinear", "QLinearConv", "QLinearMatMul", "QLinearAdd", "QLinearMul",
              "QLinearAveragePool", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearConcat",
              "QLinearGlobalAveragePool", "ConvInteger", "MatMulInteger"}


def with_intermediate_outputs(model_bytes: bytes, all_tensors: bool):
    """The model with intermediate tensors added to its graph outputs; returns
    (bytes, [(tensor name, op type, node name)] in graph order)."""
    import onnx

    m = onnx.load_from_string(model_bytes)
    try:
        inferred = onnx.shape_inference.infer_shapes(m)
        vi = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    except Exception:  # shape inference is best effort
        vi = {}
    existing = {o.name for o in m.graph.output}
    initializers = {i.name for i in m.graph.initializer}
    order = []
    for node in m.graph.node:
        if not all_tensors and node.op_type not in _QUANT_OPS:
            continue
        if node.op_type == "QuantizeLinear" and node.input and node.input[0] in initializers:
            continue  # a constant
        for out in node.output:
            if not out:
                continue
            order.append((out, node.op_type, node.name))
            if out not in existing:
                m.graph.output.append(vi[out] if out in vi else onnx.helper.make_empty_tensor_value_info(out))
                existing.add(out)
    for o in m.graph.output:
        if o.name not in {n for n, _, _ in order}:
            order.append((o.name, "graph output", ""))
    return m.SerializeToString(), order


def compare_onnx(model: bytes, args, options: Dict[str, str]) -> Dict[str, Any]:
    import onnxruntime as ort

    import nacc.onnxruntime as nort

    nort.register()
    wide, order = with_intermediate_outputs(model, args.all_tensors)

    def session(providers):
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.log_severity_level = 3
        return ort.InferenceSession(wide, sess_options=so, providers=providers)

    cpu = session(["CPUExecutionProvider"])
    opts = {"cores": str(args.cores), "threads": str(args.threads), "log_level": "off"}
    opts.update(options)
    before = nort.report_seq()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    # Raises EpNotUsedError instead of comparing the CPU EP with itself.
    npu = nort.create_session(wide, opts, so)
    reps = nort.reports_after(before)
    from nacc.model_report import ort_input_details

    details = ort_input_details(cpu)
    inputs = _inputs_from(args, details)
    feeds = {d["name"]: x for d, x in zip(details, inputs)}
    names = [o.name for o in cpu.get_outputs()]
    want = dict(zip(names, cpu.run(names, feeds)))
    got = dict(zip(names, npu.run(names, feeds)))
    claimed_nodes = {n.get("name") if isinstance(n, dict) else n
                     for r in reps for p in r.get("partitions", []) for n in p.get("nodes", [])}
    rows = []
    for name, op_type, node in order:
        if name not in want:
            continue
        row = {"tensor": name, "op": op_type, "node": node,
               "where": "nacc" if node in claimed_nodes else "?" if not claimed_nodes else "host",
               "shape": list(np.shape(want[name])), "dtype": str(np.asarray(want[name]).dtype),
               "source": "graph output"}
        row.update(_diff(np.asarray(got[name]), np.asarray(want[name])))
        rows.append(row)
    final = [_diff(np.asarray(got[o.name]), np.asarray(want[o.name]))
             for o in onnx_outputs(model)]
    return {"runtime": "onnxruntime", "oracle": "CPUExecutionProvider", "tensors": rows,
            "outputs": final,
            "claimed": sum(r.get("claimed_nodes", 0) for r in reps),
            "total": sum(r.get("total_nodes", 0) for r in reps),
            "partitions": sum(len(r.get("partitions", [])) for r in reps)}


def onnx_outputs(model_bytes: bytes):
    import onnx

    return list(onnx.load_from_string(model_bytes).graph.output)


# ---- output ---------------------------------------------------------------------------------

def first_divergence(result: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    for row in result["tensors"]:
        if row.get("differing"):
            return row
    return None


def markdown(result: Dict[str, Any], show_all: bool) -> str:
    first = first_divergence(result)
    lines = [f"nacc compare ({result['runtime']}, oracle {result['oracle']}): nacc claimed "
             f"{result['claimed']} of {result['total']} nodes in {result['partitions']} "
             f"partition(s); {len(result['tensors'])} tensors compared", ""]
    lines += ["| # | tensor | op | where | shape | differing | max diff |", "|---|---|---|---|---|---|---|"]
    hidden = 0
    for i, r in enumerate(result["tensors"]):
        if not show_all and first is not None and r is not first and not r.get("differing") \
                and len(result["tensors"]) > 40:
            hidden += 1
            continue
        diff = "n/a" if r["differing"] is None else f"{r['differing']}/{r['elements']}"
        mx = "n/a" if r["max_abs_diff"] is None else f"{r['max_abs_diff']:g}"
        mark = " **← first divergence**" if r is first else ""
        # Converter names list every fused layer, ';'-separated: show the first (JSON: all).
        shown = r["tensor"].split(";")[0]
        lines.append(f"| {i} | {shown}{mark} | {r['op']} | {r['where']} | "
                     f"{'x'.join(map(str, r['shape']))} | {diff} | {mx} |")
    lines.append("")
    if hidden:
        lines.append(f"({hidden} identical tensors not shown; --all lists them.)")
    if first is None:
        missing = [r for r in result["tensors"] if r["differing"] is None]
        lines.append("No tensor differs." + (f" ({len(missing)} tensors could not be compared.)"
                                             if missing else ""))
    else:
        lines.append(f"First divergence: tensor '{first['tensor'].split(';')[0]}' ({first['op']}, on "
                     f"{first['where']}): {first['differing']} of {first['elements']} elements "
                     f"differ, max difference {first['max_abs_diff']:g}.")
    return "\n".join(lines)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = model_parser("nacc compare", __doc__)
    p.add_argument("--cores", type=int, default=1,
                   help="simulated NACC cores: 1, 2, 4, 8, 16 or 32 (default 1)")
    p.add_argument("--threads", type=int, default=1, help="host threads for the simulation")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--input", nargs="*", metavar="NPY", help=".npy inputs, in model input order")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="extra delegate / EP option (repeatable), e.g. cache_dir=DIR")
    p.add_argument("--all-tensors", action="store_true",
                   help="ONNX: compare every node output, not only the quantized ones")
    p.add_argument("--all", action="store_true", help="list every tensor even when long")
    p.add_argument("--json", metavar="FILE", help="write the per-tensor results as JSON")
    return p.parse_args(list(argv))


def compare(model_path: str, args: argparse.Namespace) -> Dict[str, Any]:
    """Runs the comparison of the module docstring; returns its result dict.
    Raises CliError for bad arguments, nacc.onnxruntime.EpNotUsedError when
    the EP did not take part."""
    kind = model_file(model_path)
    # Every option checked by the library's own table before any work.
    check_flags(args, kind, (("cores", "--cores"), ("threads", "--threads")))
    options = parse_options(args.option, kind, "compare")
    with open(model_path, "rb") as f:
        model = f.read()
    if kind == "onnx":
        return compare_onnx(model, args, options)
    return compare_tflite(model, args, options)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.json:
        output_file(args.json)
    result = compare(args.model, args)
    result["first_divergence"] = first_divergence(result)
    print(markdown(result, args.all))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0 if result["first_divergence"] is None else 1


if __name__ == "__main__":
    from nacc.cli import guarded

    sys.exit(guarded("compare", lambda: main(sys.argv[1:])))

"""The ``nacc`` command line (console script ``nacc = nacc.cli:main``).

    nacc demo                          # builds a small model, runs it with and without nacc
    nacc report MODEL [--json FILE]    # partitions, declined nodes, per-layer cycles / bytes
    nacc compile MODEL -o DIR          # Programs, disassembly, report
    nacc disasm FILE.program           # a Program as a listing with register names
    nacc trace MODEL -o trace.json     # Chrome / Perfetto trace of the simulated timeline
    nacc supported-ops                 # what the NPU runs (docs/supported_ops.md)
    nacc bench ... / nacc compare ...  # nacc.bench / nacc.compare

MODEL is a ``.tflite`` (run through TFLite with the NACC delegate) or an
``.onnx`` file (ONNX Runtime with the NACC execution provider). Documented in
docs/cli.md.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from typing import List, Optional

__all__ = ["main"]

_DELEGATED = {"bench": "nacc.bench", "compare": "nacc.compare"}


def _hw_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cores", type=int, default=1, choices=[1, 2, 4, 8, 16, 32],
                   help="simulated NACC cores (default 1)")
    p.add_argument("--sram-kb", type=int, default=64, help="SRAM per core in KB (default 64)")
    p.add_argument("--clock-mhz", type=int, default=500,
                   help="clock that turns cycles into microseconds (default 500)")
    p.add_argument("--threads", type=int, default=1,
                   help="host threads simulating the cores (results do not depend on it)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random input (default 0)")


def _hw(args):
    from nacc.model_report import HwOptions

    return HwOptions(cores=args.cores, sram_kb=args.sram_kb, clock_mhz=args.clock_mhz,
                     threads=args.threads)


def _model_kind(path: str) -> str:
    if not os.path.isfile(path):
        raise SystemExit(f"nacc: {path}: no such file")
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".tflite", ".onnx"):
        raise SystemExit(f"nacc: {path}: expected a .tflite or .onnx model")
    return ext[1:]


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _report(path: str, args, *, check: bool = False, dump_dir: Optional[str] = None):
    from nacc import model_report

    hw = _hw(args)
    if _model_kind(path) == "tflite":
        rep = model_report.tflite_report(_read(path), hw, name=path, dump_dir=dump_dir,
                                         check=check, seed=args.seed)
    else:
        rep = model_report.onnx_report(path, hw, check=check, seed=args.seed, dump_dir=dump_dir)
    return rep


# ---- commands ------------------------------------------------------------------------------


def cmd_report(args) -> int:
    from nacc import model_report

    rep = _report(args.model, args, check=args.check)
    print(model_report.format_report(rep, layers=not args.no_layers))
    if args.json:
        model_report.write_json(args.json, rep)
        print(f"\nwrote {args.json}")
    return 0


def cmd_compile(args) -> int:
    from nacc import model_report

    os.makedirs(args.output, exist_ok=True)
    rep = _report(args.model, args, dump_dir=args.output)
    model_report.write_json(os.path.join(args.output, "report.json"), rep)
    with open(os.path.join(args.output, "report.txt"), "w", encoding="utf-8") as f:
        f.write(model_report.format_report(rep) + "\n")
    print(rep["summary"])
    for name in sorted(os.listdir(args.output)):
        print(f"  {os.path.join(args.output, name)} "
              f"({os.path.getsize(os.path.join(args.output, name))} bytes)")
    return 0


def cmd_disasm(args) -> int:
    from nacc import _core

    try:
        program = _core.Program.from_bytes(_read(args.file))
    except OSError as e:
        raise SystemExit(f"nacc: {args.file}: {e.strerror}")
    except ValueError as e:
        raise SystemExit(f"nacc: {args.file}: not a valid Program: {e}")
    hw = program.hw.as_dict() if hasattr(program.hw, "as_dict") else {}
    print(f"; {args.file}: NACC Program for {hw.get('cores', '?')} core(s), "
          f"{hw.get('sram_bytes', 0) // 1024} KB SRAM per core")
    print(f"; {len(program.to_bytes())} bytes, {len(program.ops)} ops")
    for t in program.inputs:
        print(f"; input  region {t['region']}: '{t['name']}' {tuple(t['shape'])} int8")
    for t in program.outputs:
        print(f"; output region {t['region']}: '{t['name']}' {tuple(t['shape'])} int8")
    for i, o in enumerate(program.ops):
        print(f"; op {i}: {o['kind']} '{o['name']}' words [{o['first_word']}, {o['end_word']}) "
              f"MACs {o['macs']}, §8 bound {o['bound_cycles']} cycles, weights "
              f"{o['weight_bytes']} -> {o['weight_bytes_stored']} B stored")
    print(program.disassemble(best_effort=True))
    return 0


def cmd_trace(args) -> int:
    from nacc import model_report

    if _model_kind(args.model) != "tflite":
        raise SystemExit(
            "nacc trace: only .tflite models: the trace re-runs each partition's Program, and "
            "the ONNX Runtime EP keeps its Programs inside the session. For an .onnx model, "
            "`nacc report MODEL --json FILE` gives the per-op simulated times (start, end, "
            "cycles) of the EP's last run.")
    trace, rep = model_report.tflite_trace(_read(args.model), _hw(args), seed=args.seed)
    model_report.write_json(args.output, trace)
    n = sum(1 for e in trace["traceEvents"] if e["ph"] == "X")
    print(f"{rep['summary']}\nwrote {args.output}: {n} spans over "
          f"{rep['totals']['latency_us']:.1f} simulated us ({rep['totals']['cycles']} cycles at "
          f"{args.clock_mhz} MHz); open it in https://ui.perfetto.dev or chrome://tracing")
    return 0


def cmd_supported_ops(args) -> int:
    from nacc import supported_ops

    sys.stdout.write(supported_ops.render())
    return 0


def cmd_demo(args) -> int:
    import numpy as np

    import nacc
    from nacc import model_report, models

    hw = _hw(args)
    name = args.model
    print(f"nacc demo: model {name} (cache: {models.cache_dir()})", flush=True)
    t0 = time.perf_counter()
    blob = models.converted(name)
    print(f"  model ready in {time.perf_counter() - t0:.1f} s ({len(blob)} bytes of int8 TFLite)",
          flush=True)
    if name == "digits_cnn":
        _, _, x_test, y_test = models.digits_split()
    else:
        x_test, y_test = None, None

    delegate = nacc.load_delegate(log_level="off", **hw.delegate_options())
    npu = model_report._interpreter(blob, delegates=[delegate])
    ref = model_report._interpreter(blob)
    inp, out = npu.get_input_details()[0], npu.get_output_details()[0]
    if x_test is not None:
        scale, zp = inp["quantization"]
        q = np.clip(np.round(x_test[:args.samples] / scale + zp), -128, 127).astype(np.int8)
        samples = [q[i:i + 1] for i in range(len(q))]
    else:
        samples = [model_report.random_inputs(npu.get_input_details(), seed=i)[0]
                   for i in range(args.samples)]
    outputs = {"nacc": [], "reference": []}
    host_ms = {"nacc": 0.0, "reference": 0.0}
    for x in samples:
        for key, it in (("nacc", npu), ("reference", ref)):
            (y,), ms = model_report._invoke(it, [x])
            outputs[key].append(y)
            host_ms[key] += ms
    report = delegate.report()
    rep = model_report._report_from_delegate(report, hw, name=name, npu_ms=host_ms["nacc"] / len(samples),
                                             ref_ms=host_ms["reference"] / len(samples))
    print()
    print(model_report.format_report(rep, layers=not args.no_layers))
    exact = model_report.compare_outputs(outputs["nacc"], outputs["reference"])
    print()
    print(f"Exactness over {len(samples)} inputs vs TFLite BUILTIN_REF: " + (
        "bit-exact" if exact["bit_exact"] else
        f"{exact['differing_elements']} differing elements, max abs diff {exact['max_abs_diff']}"))
    if y_test is not None:
        for key in ("nacc", "reference"):
            pred = np.argmax(np.concatenate(outputs[key]), axis=1)
            acc = float(np.mean(pred == y_test[:len(pred)]))
            print(f"  accuracy on {len(pred)} digits test images ({key}): {100 * acc:.1f}%")
    t = rep["totals"]
    peak = 64 * 2 * args.clock_mhz * 1e6 * args.cores
    print(f"Simulated speed: {t['cycles']} cycles per inference on the NPU = {t['latency_us']:.1f} us "
          f"at {args.clock_mhz} MHz ({1e6 / t['latency_us']:.0f} inferences/s if the host ops were "
          f"free; {2 * t['macs'] / (t['latency_us'] * 1e-6) / 1e9:.2f} of {peak / 1e9:.0f} GOPS peak)"
          if t["cycles"] else "Simulated speed: nothing ran on the NPU")
    print(f"Host time per inference: {host_ms['nacc'] / len(samples):.2f} ms with nacc "
          f"(simulating the NPU), {host_ms['reference'] / len(samples):.2f} ms TFLite BUILTIN_REF")
    return 0 if exact["bit_exact"] else 1


def _delegated(command: str, argv: List[str]) -> int:
    module = _DELEGATED[command]
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module:
            raise
        print(f"nacc {command}: this installation has no {module} module "
              f"(python/{module.replace('.', '/')}.py); `nacc {command}` is unavailable",
              file=sys.stderr)
        return 2
    return int(mod.main(list(argv)) or 0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nacc", description="SDK for the NACC INT8 NPU: reports, compilation, traces and "
        "a demo of TFLite / ONNX models on the simulated accelerator (docs/cli.md).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("report", help="partitions, declined nodes with reasons, per-layer "
                       "simulated cycles vs the §8 bound, DMA bytes vs minimum, utilization")
    p.add_argument("model", help="a .tflite or .onnx model")
    _hw_arguments(p)
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    p.add_argument("--check", action="store_true",
                   help="also run without nacc (TFLite BUILTIN_REF / ORT CPU EP) and compare")
    p.add_argument("--no-layers", action="store_true", help="omit the per-layer tables")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("compile", help="write each partition's Program, its disassembly and "
                       "the report to a directory")
    p.add_argument("model", help="a .tflite or .onnx model")
    p.add_argument("-o", "--output", required=True, metavar="DIR")
    _hw_arguments(p)
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser("disasm", help="a Program file as a listing with register names")
    p.add_argument("file", help="a .program file (nacc compile / the delegate's dump_dir)")
    p.set_defaults(func=cmd_disasm)

    p = sub.add_parser("trace", help="Chrome / Perfetto trace (JSON) of the simulated timeline")
    p.add_argument("model", help="a .tflite model")
    p.add_argument("-o", "--output", required=True, metavar="TRACE.json")
    _hw_arguments(p)
    p.set_defaults(func=cmd_trace)

    p = sub.add_parser("supported-ops", help="print the supported-ops document")
    p.set_defaults(func=cmd_supported_ops)

    p = sub.add_parser("demo", help="build a small model, run it with and without nacc, print "
                       "the partition report, exactness and simulated speed")
    p.add_argument("--model", default=None,
                   help="one of nacc.models.MODELS (default: the digits CNN)")
    p.add_argument("--samples", type=int, default=100, help="inputs to run (default 100)")
    p.add_argument("--no-layers", action="store_true", help="omit the per-layer table")
    _hw_arguments(p)
    p.set_defaults(func=cmd_demo)

    for name, module in _DELEGATED.items():
        sub.add_parser(name, add_help=False,
                       help=f"see `nacc {name} --help` ({module})")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's CUDA / CPU-feature banners
    if argv and argv[0] in _DELEGATED:
        return _delegated(argv[0], argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if getattr(args, "command", None) == "demo" and args.model is None:
        from nacc import models

        args.model = models.DEFAULT_SMALL_MODEL
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        return 0
    except (ValueError, RuntimeError) as e:
        print(f"nacc {args.command}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""The ``nacc`` command line (console script ``nacc = nacc.cli:main``).

    nacc demo                          # builds a small model, runs it with and without nacc
    nacc report MODEL [--json FILE]    # summary, partitions, declined nodes, per-layer numbers
    nacc compile MODEL -o DIR          # Programs, disassembly, report
    nacc disasm FILE.program           # a Program as a listing with register names
    nacc trace MODEL -o trace.json     # Chrome / Perfetto trace of the simulated timeline
    nacc perf MODEL                    # host latency percentiles, throughput, simulated NPU time
    nacc eval MODEL --inputs DATA      # a data set through nacc and the CPU runtime: agreement
    nacc supported-ops                 # what the NPU runs
    nacc docs [TOPIC]                  # the installed documentation (hardware reference, ...)
    nacc bench ... / nacc compare ...  # nacc.bench / nacc.compare

MODEL is a ``.tflite`` (run through TFLite with the NACC delegate) or an
``.onnx`` file (ONNX Runtime with the NACC execution provider). Every failure
ends in one line on stderr and a non-zero exit status (1: the command failed
or found a difference, 2: bad arguments); ``NACC_DEBUG=1`` adds the
traceback. Documented in docs/cli.md (``nacc docs cli``).
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import traceback
import warnings
from typing import Callable, Dict, List, Optional, Sequence

__all__ = ["main", "CliError", "Parser", "model_file", "output_file", "output_dir", "guarded",
           "hw_arguments", "hw_options", "check_flags", "parse_options", "model_parser",
           "model_command", "write_json"]

_DELEGATED = {"bench": "nacc.bench", "compare": "nacc.compare", "perf": "nacc.perf",
              "eval": "nacc.evaluate"}

# Missing optional modules -> what to install (setup.py extras).
_EXTRAS = {
    "tensorflow": "pip install 'nacc[tflite]' (or: pip install tensorflow-cpu==2.21.0)",
    "onnxruntime": "pip install 'nacc[onnxruntime]'",
    "onnx": "pip install 'nacc[onnxruntime]'",
    "sklearn": "pip install scikit-learn (included in 'nacc[bench]')",
    "tf2onnx": "pip install 'nacc[bench]'",
    "matplotlib": "pip install 'nacc[bench]'",
    "tqdm": "pip install 'nacc[bench]'",
    "flatbuffers": "pip install flatbuffers (included in 'nacc[tflite]')",
    "keras": "pip install 'nacc[tflite]' (Keras comes with TensorFlow)",
    "ai_edge_litert": "pip install 'nacc[litert]'",
}


class CliError(Exception):
    """A failure the CLI reports as one line; `code` is the exit status."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: "nacc report: <what> (nacc report --help)", exit 2."""

    def error(self, message: str):  # noqa: D401 - argparse's hook
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def _ort_error(e: BaseException) -> Optional[str]:
    """ONNX Runtime's exceptions (onnxruntime.capi.*: Fail, InvalidProtobuf, ...) as text."""
    if not type(e).__module__.startswith("onnxruntime"):
        return None
    text = _one_line(e)
    # "[ONNXRuntimeError] : 7 : INVALID_PROTOBUF : Failed to load ..." -> "INVALID_PROTOBUF: Failed ..."
    parts = [p.strip() for p in text.split(" : ")]
    if len(parts) >= 4 and parts[0] == "[ONNXRuntimeError]":
        text = f"{parts[2]}: {' : '.join(parts[3:])}"
    return f"ONNX Runtime: {text}"


def describe(e: BaseException) -> tuple:
    """(one-line message, exit status) of an exception raised by a command."""
    if isinstance(e, CliError):
        return _one_line(e), e.code
    if isinstance(e, ModuleNotFoundError) and e.name:
        top = e.name.split(".")[0]
        hint = _EXTRAS.get(top)
        if hint:
            return f"needs the Python module '{top}', which is not installed: {hint}", 1
        return f"missing Python module '{e.name}'", 1
    if isinstance(e, MemoryError):
        return "out of memory (the model or its inputs are too large for this machine)", 1
    ort = _ort_error(e)
    if ort:
        return ort, 1
    if isinstance(e, OSError) and e.filename:
        return f"{e.filename}: {e.strerror or _one_line(e)}", 1
    if isinstance(e, (ValueError, RuntimeError, OSError, KeyError)):
        return _one_line(e if not isinstance(e, KeyError) else e.args[0]), 1
    return f"{type(e).__name__}: {_one_line(e)} (a bug in nacc? NACC_DEBUG=1 shows the traceback)", 1


def guarded(command: str, body: Callable[[], int]) -> int:
    """Runs a command and turns every exception into one line on stderr."""
    try:
        return int(body() or 0)
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print(f"nacc {command}: interrupted", file=sys.stderr)
        return 130
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001 - the CLI's one place for every failure
        if os.environ.get("NACC_DEBUG"):
            traceback.print_exc()
        message, code = describe(e)
        print(f"nacc {command}: {message}", file=sys.stderr)
        return code


# ---- checks done before any work -----------------------------------------------------------

def model_file(path: str) -> str:
    """Checks `path` is a readable, non-empty .tflite / .onnx file; returns its
    kind ("tflite" or "onnx"). Raises CliError."""
    if os.path.isdir(path):
        raise CliError(f"{path}: is a directory, not a model file")
    if not os.path.exists(path):
        raise CliError(f"{path}: no such file")
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".tflite", ".onnx"):
        raise CliError(f"{path}: expected a .tflite or .onnx model")
    if not os.access(path, os.R_OK):
        raise CliError(f"{path}: not readable (permission denied)")
    if os.path.getsize(path) == 0:
        raise CliError(f"{path}: empty file (0 bytes), not a model")
    return ext[1:]


def _probe_dir(path: str) -> None:
    probe = os.path.join(path, f".nacc_write_probe_{os.getpid()}")
    try:
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as e:
        raise CliError(f"{path}: directory is not writable ({e.strerror})")


def output_dir(path: str) -> str:
    """Creates directory `path` if missing and checks it is writable. Raises CliError."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise CliError(f"{path}: exists and is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise CliError(f"{path}: cannot create the directory ({e.strerror})")
    _probe_dir(path)
    return path


def output_file(path: str) -> str:
    """Checks that file `path` can be written (its directory exists and is
    writable, it is not a directory) before any work is done. Raises CliError."""
    if os.path.isdir(path):
        raise CliError(f"{path}: is a directory; give a file name")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise CliError(f"{path}: directory {parent} does not exist")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise CliError(f"{path}: not writable (permission denied)")
    _probe_dir(parent)
    return path


# ---- hardware options ----------------------------------------------------------------------

def hw_arguments(p: argparse.ArgumentParser, *, seed: bool = True) -> None:
    p.add_argument("--cores", type=int, default=1,
                   help="simulated NACC cores: 1, 2, 4, 8, 16 or 32 (default 1)")
    p.add_argument("--sram-kb", type=int, default=64,
                   help="SRAM per core in KB, a power of two in [16, 1024] (default 64)")
    p.add_argument("--clock-mhz", type=int, default=500,
                   help="clock that turns cycles into microseconds, [1, 10000] (default 500)")
    p.add_argument("--threads", type=int, default=1,
                   help="host threads simulating the cores (results do not depend on it)")
    if seed:
        p.add_argument("--seed", type=int, default=0, help="seed of the random input (default 0)")


_HW_FLAGS = (("cores", "--cores"), ("sram_kb", "--sram-kb"), ("clock_mhz", "--clock-mhz"),
             ("threads", "--threads"))


def hw_options(args, kind: str):
    """HwOptions from the arguments, each checked by the option table of the
    runtime's library (`kind` "tflite": the delegate; "onnx": the EP), so the
    CLI accepts exactly what the library does. Raises CliError (exit 2)."""
    from nacc.model_report import HwOptions

    check_flags(args, kind)
    return HwOptions(cores=args.cores, sram_kb=args.sram_kb, clock_mhz=args.clock_mhz,
                     threads=args.threads)


def check_flags(args, kind: str, flags: Sequence = _HW_FLAGS) -> None:
    """Checks the (option key, --flag) pairs of `flags` present in `args` with
    the runtime library's option parser. Raises CliError (exit 2)."""
    for key, flag in flags:
        if not hasattr(args, key):
            continue
        one = {key: getattr(args, key)}
        try:
            if kind == "tflite":
                from nacc import tflite

                tflite.validate_options(**one)
            else:
                from nacc import onnxruntime as nort

                nort.validate_provider_options(one)
        except ValueError:
            raise CliError(f"{flag} {one[key]}: not allowed; allowed: {_allowed(kind, key)}", 2)


def _allowed(kind: str, key: str) -> str:
    if kind == "tflite":
        from nacc import tflite

        specs = tflite.delegate_option_specs()
    else:
        from nacc import onnxruntime as nort

        specs = nort.provider_option_specs()
    return next((s.allowed for s in specs if s.name == key), "see `nacc docs`")


def parse_options(items: Sequence[str], kind: str, command: str) -> Dict[str, str]:
    """--option KEY=VALUE items, validated by the runtime library's option
    table (the delegate's or the EP's). Raises CliError (exit 2)."""
    out: Dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise CliError(f"--option {item!r}: expected KEY=VALUE", 2)
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    try:
        if kind == "tflite":
            from nacc import tflite

            tflite.validate_options(**out)
        else:
            from nacc import onnxruntime as nort

            nort.validate_provider_options(out)
    except ValueError as e:
        raise CliError(f"--option: {_one_line(e)}", 2)
    return out


def model_parser(prog: str, doc: str) -> Parser:
    """The parser of a command that takes one MODEL (its docstring's first paragraph)."""
    p = Parser(prog=prog, description=doc.split("\n\n")[0],
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", metavar="MODEL", help="a .tflite or .onnx model")
    return p


def model_command(args, command: str):
    """Checks done before a model command's work: the model file, the
    hardware flags and --option values against the runtime library's table,
    the --json path. Returns (kind, HwOptions, options). Raises CliError."""
    kind = model_file(args.model)
    hw = hw_options(args, kind)
    options = parse_options(getattr(args, "option", []), kind, command)
    if getattr(args, "json", None):
        output_file(args.json)
    return kind, hw, options


def write_json(path: Optional[str], data) -> None:
    """Writes `data` as JSON to `path` (nothing when `path` is None)."""
    if path:
        import json

        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
            f.write("\n")


# ---- commands ------------------------------------------------------------------------------


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _report(path: str, args, *, check: bool = False, dump_dir: Optional[str] = None):
    from nacc import model_report

    kind = model_file(path)
    hw = hw_options(args, kind)
    if kind == "tflite":
        return model_report.tflite_report(_read(path), hw, name=path, dump_dir=dump_dir,
                                          check=check, seed=args.seed)
    return model_report.onnx_report(path, hw, check=check, seed=args.seed, dump_dir=dump_dir)


def cmd_report(args) -> int:
    from nacc import model_report

    if args.json:
        output_file(args.json)
    rep = _report(args.model, args, check=args.check)
    print(model_report.format_report(rep, layers=args.layers))
    if args.json:
        model_report.write_json(args.json, rep)
        print(f"\nwrote {args.json}")
    return 0 if rep.get("exactness", {}).get("bit_exact", True) or not args.strict else 1


def cmd_compile(args) -> int:
    from nacc import model_report

    model_file(args.model)
    output_dir(args.output)
    rep = _report(args.model, args, dump_dir=args.output)
    model_report.write_json(os.path.join(args.output, "report.json"), rep)
    with open(os.path.join(args.output, "report.txt"), "w", encoding="utf-8") as f:
        f.write(model_report.format_report(rep, layers=True) + "\n")
    print(rep["summary"])
    for name in sorted(os.listdir(args.output)):
        print(f"  {os.path.join(args.output, name)} "
              f"({os.path.getsize(os.path.join(args.output, name))} bytes)")
    return 0


def cmd_disasm(args) -> int:
    from nacc import _core

    if os.path.isdir(args.file):
        raise CliError(f"{args.file}: is a directory, not a Program file")
    try:
        program = _core.Program.from_bytes(_read(args.file))
    except OSError as e:
        raise CliError(f"{args.file}: {e.strerror}")
    except ValueError as e:
        raise CliError(f"{args.file}: not a valid Program: {_one_line(e)}")
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
              f"MACs {o['macs']}, bound {o['bound_cycles']} cycles, weights "
              f"{o['weight_bytes']} -> {o['weight_bytes_stored']} B stored")
    print(program.disassemble(best_effort=True))
    return 0


def cmd_trace(args) -> int:
    from nacc import model_report

    if model_file(args.model) != "tflite":
        raise CliError(
            "only .tflite models: the trace re-runs each partition's Program, and "
            "the ONNX Runtime EP keeps its Programs inside the session. For an .onnx model, "
            "`nacc report MODEL --json FILE` gives the per-op simulated times (start, end, "
            "cycles) of the EP's last run.")
    output_file(args.output)
    hw = hw_options(args, "tflite")
    trace, rep = model_report.tflite_trace(_read(args.model), hw, seed=args.seed)
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


def cmd_docs(args) -> int:
    from nacc import docs

    if args.path:
        print(docs.docs_dir())
        return 0
    if not args.topic:
        print(docs.index())
        return 0
    sys.stdout.write(docs.read(args.topic))
    return 0


def cmd_demo(args) -> int:
    import numpy as np

    import nacc
    from nacc import model_report, models, results

    hw = hw_options(args, "tflite")
    name = args.model
    if name not in models.MODELS:
        raise CliError(f"--model {name!r}: not one of {', '.join(models.MODELS)}", 2)
    print(f"nacc demo: model {name} (cache: {models.cache_dir()})", flush=True)
    t0 = time.perf_counter()
    path = models.model_path(name)
    blob = _read(path)
    print(f"  model ready in {time.perf_counter() - t0:.1f} s: {path} ({len(blob)} bytes of "
          "int8 TFLite; try `nacc report` on it)", flush=True)
    if name == "digits_cnn":
        _, _, x_test, y_test = models.digits_split()
    else:
        x_test, y_test = None, None

    delegate = nacc.load_delegate(log_level="off", **hw.delegate_options())
    npu = model_report._interpreter(blob, delegates=[delegate])
    ref = model_report._interpreter(blob)
    inp = npu.get_input_details()[0]
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
    rep = model_report._report_from_delegate(report, hw, name=name,
                                             npu_ms=host_ms["nacc"] / len(samples),
                                             ref_ms=host_ms["reference"] / len(samples))
    print()
    print(model_report.format_report(rep, layers=args.layers))
    exact = results.agreement(outputs["nacc"], outputs["reference"])
    print()
    print(f"Exactness over {len(samples)} inputs vs TFLite BUILTIN_REF: "
          f"{results.format_exactness(exact)}")
    if y_test is not None:
        for key in ("nacc", "reference"):
            pred = np.argmax(np.concatenate(outputs[key]), axis=1)
            acc = float(np.mean(pred == y_test[:len(pred)]))
            print(f"  accuracy on {len(pred)} digits test images ({key}): {100 * acc:.1f}%")
    t = rep["totals"]
    peak = results.MAC_LANES * 2 * args.clock_mhz * 1e6 * args.cores
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
    parser = Parser(
        prog="nacc", description="SDK for the NACC INT8 NPU: reports, compilation, traces, "
        "benchmarks and evaluation of TFLite / ONNX models on the simulated accelerator "
        "(`nacc docs cli`).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    p = sub.add_parser("report", help="summary (NPU time, host ops, top layers), partitions, "
                       "declined nodes with reasons; --layers: per-layer cycles vs the "
                       "performance bound, DMA bytes vs minimum, utilization")
    p.add_argument("model", help="a .tflite or .onnx model")
    hw_arguments(p)
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    p.add_argument("--check", action="store_true",
                   help="also run without nacc (TFLite BUILTIN_REF / ORT CPU EP) and compare")
    p.add_argument("--strict", action="store_true",
                   help="with --check: exit status 1 when an output differs")
    p.add_argument("--layers", action="store_true", help="add the per-layer tables")
    p.add_argument("--no-layers", action="store_false", dest="layers",
                   help="no per-layer tables (the default)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("compile", help="write each partition's Program, its disassembly and "
                       "the report to a directory")
    p.add_argument("model", help="a .tflite or .onnx model")
    p.add_argument("-o", "--output", required=True, metavar="DIR")
    hw_arguments(p)
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser("disasm", help="a Program file as a listing with register names")
    p.add_argument("file", help="a .program file (nacc compile / the delegate's dump_dir)")
    p.set_defaults(func=cmd_disasm)

    p = sub.add_parser("trace", help="Chrome / Perfetto trace (JSON) of the simulated timeline")
    p.add_argument("model", help="a .tflite model")
    p.add_argument("-o", "--output", required=True, metavar="TRACE.json")
    hw_arguments(p)
    p.set_defaults(func=cmd_trace)

    p = sub.add_parser("supported-ops", help="print the supported-ops document")
    p.set_defaults(func=cmd_supported_ops)

    p = sub.add_parser("docs", help="print the installed documentation: the hardware "
                       "reference, the CLI, the delegate and EP guides")
    p.add_argument("topic", nargs="?", help="a document name (without .md); none: the list")
    p.add_argument("--path", action="store_true", help="print the documentation directory")
    p.set_defaults(func=cmd_docs)

    p = sub.add_parser("demo", help="build a small model, run it with and without nacc, print "
                       "the report, exactness and simulated speed")
    p.add_argument("--model", default=None,
                   help="one of nacc.models.MODELS (default: the digits CNN)")
    p.add_argument("--samples", type=int, default=100, help="inputs to run (default 100)")
    p.add_argument("--layers", action="store_true", help="add the per-layer tables")
    p.add_argument("--no-layers", action="store_false", dest="layers", help=argparse.SUPPRESS)
    hw_arguments(p, seed=False)
    p.set_defaults(func=cmd_demo)

    for name, module in _DELEGATED.items():
        sub.add_parser(name, add_help=False, help=f"see `nacc {name} --help` ({module})")
    parser.commands = dict(sub.choices)  # command -> its parser (for its own usage errors)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # TensorFlow's C++ start-up messages (CPU features, oneDNN); TF reads this when imported.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # tf.lite.Interpreter warns on every construction that it is deprecated (nacc
    # supports it next to LiteRT's interpreter); not news for a command's user.
    warnings.filterwarnings("ignore", message=r"\s*Warning\W+tf\.lite\.Interpreter is deprecated",
                            category=UserWarning)
    if argv and argv[0] in _DELEGATED:
        return guarded(argv[0], lambda: _delegated(argv[0], argv[1:]))
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        parser.commands.get(getattr(args, "command", None), parser).error(
            f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if getattr(args, "command", None) == "demo":
        if args.model is None:
            from nacc import models

            args.model = models.DEFAULT_SMALL_MODEL
        if args.samples < 1:
            parser.exit(2, "nacc demo: --samples must be >= 1\n")
    return guarded(args.command, lambda: args.func(args))


if __name__ == "__main__":
    # `python -m nacc.cli`: run the imported module, so that the commands and
    # this entry point share one CliError class.
    from nacc import cli as _cli

    sys.exit(_cli.main())

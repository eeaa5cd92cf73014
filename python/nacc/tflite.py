"""The NACC TensorFlow Lite delegate from Python.

    import nacc, tensorflow as tf
    delegate = nacc.load_delegate(cores=4)
    interpreter = tf.lite.Interpreter(model_path="model_int8.tflite",
                                      experimental_delegates=[delegate])
    interpreter.allocate_tensors(); ...; interpreter.invoke()
    print(delegate.report())        # claimed / declined nodes, partitions, cycles

The same object works with ``ai_edge_litert.interpreter.Interpreter``. The
delegate itself is the plain C-ABI library ``delegate_library_path()``
(``libnacc_tflite_delegate.so``), also loadable without this module:
``tf.lite.experimental.load_delegate(nacc.delegate_library_path(), {"cores": "4"})``.

The TFLite delegate ABI carries no version number, so ``load_delegate``
refuses TensorFlow / LiteRT releases other than the tested ones
(``TESTED_RUNTIMES``) instead of risking memory corruption. The check reads
the version of the runtime *module* (``tensorflow.__version__``,
``ai_edge_litert.__version__``, or, when it is not imported yet, the version
of whichever distribution installed that module), so every official build of
the tested release is accepted: ``tensorflow``, ``tensorflow-cpu`` and the
other platform builds. Options are validated by the library's own option
table (one source of truth for the raw .so and for Python); errors name the
option and what is allowed. Integer options also accept numeric strings
(``cores="4"``), as TFLite's own ``load_delegate(path, {"cores": "4"})`` does.
"""
from __future__ import annotations

import ctypes
import dataclasses
import difflib
import importlib
import importlib.metadata
import json
import os
import re
import sys
from typing import Any, Dict, List, Mapping, Optional, Tuple

__all__ = [
    "TESTED_RUNTIMES",
    "DelegateReport",
    "IncompatibleRuntimeError",
    "NaccDelegate",
    "NodeDecision",
    "PartitionReport",
    "SubgraphReport",
    "delegate_library_path",
    "delegate_option_specs",
    "load_delegate",
]

# Runtime (its main distribution's name) -> the one release the delegate's ABI
# declaration (delegate/tflite_abi.h) was verified against. Any distribution
# that installs the same module at that version is accepted (tensorflow-cpu,
# tensorflow-intel, ... for tensorflow).
TESTED_RUNTIMES: Dict[str, str] = {"tensorflow": "2.21.0", "ai-edge-litert": "2.3.0"}
# Runtime names accepted by load_delegate(runtime=...): (module, TESTED_RUNTIMES key,
# the distributions users install it from).
_RUNTIMES = {"tensorflow": ("tensorflow", "tensorflow", ("tensorflow", "tensorflow-cpu")),
             "litert": ("ai_edge_litert", "ai-edge-litert", ("ai-edge-litert",))}
_INT_TEXT = re.compile(r"[+-]?[0-9]+")

_LIBRARY_NAME = "libnacc_tflite_delegate.so"
_INT_OPTIONS = {"cores", "threads", "sram_kb", "clock_mhz", "min_partition_macs"}
_PATH_OPTIONS = {"dump_dir", "cache_dir", "debug_dump_dir"}


class IncompatibleRuntimeError(RuntimeError):
    """The installed TensorFlow / LiteRT is not a release the delegate was tested with."""


def delegate_library_path() -> str:
    """Absolute path of the delegate library (for tf.lite.experimental.load_delegate,
    ai_edge_litert.interpreter.load_delegate or benchmark_model's --external_delegate_path)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), _LIBRARY_NAME)


_lib: Optional[ctypes.CDLL] = None


def _library() -> ctypes.CDLL:
    global _lib
    if _lib is None:
        path = delegate_library_path()
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"the NACC delegate library is missing at {path}; reinstall nacc "
                "(pip install .) or run tools/devbuild.py in a source tree")
        lib = ctypes.CDLL(path)
        lib.nacc_tflite_version.restype = ctypes.c_char_p
        lib.nacc_tflite_option_specs_json.restype = ctypes.c_char_p
        lib.nacc_tflite_validate_options.argtypes = [
            ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
            ctypes.c_char_p, ctypes.c_size_t]
        lib.nacc_tflite_validate_options.restype = ctypes.c_int
        lib.nacc_tflite_delegate_report.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64]
        lib.nacc_tflite_delegate_report.restype = ctypes.c_int64
        lib.tflite_plugin_create_delegate.argtypes = [
            ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
            ctypes.CFUNCTYPE(None, ctypes.c_char_p)]
        lib.tflite_plugin_create_delegate.restype = ctypes.c_void_p
        lib.tflite_plugin_destroy_delegate.argtypes = [ctypes.c_void_p]
        lib.tflite_plugin_destroy_delegate.restype = None
        from nacc import __version__

        lib_version = lib.nacc_tflite_version().decode()
        if lib_version != __version__:
            raise ImportError(f"{path} is nacc {lib_version}, the Python package is nacc "
                              f"{__version__}; rebuild or reinstall nacc")
        _lib = lib
    return _lib


@dataclasses.dataclass(frozen=True)
class OptionSpec:
    name: str
    allowed: str
    default: str
    help: str


def delegate_option_specs() -> List[OptionSpec]:
    """The delegate's options (the library's own table), in documentation order."""
    raw = json.loads(_library().nacc_tflite_option_specs_json().decode())
    return [OptionSpec(**o) for o in raw]


def _option_strings(options: Mapping[str, Any]) -> Dict[str, str]:
    """Checks names and Python types, returns the strings the library parses."""
    specs = {s.name: s for s in delegate_option_specs()}
    out = {}
    for key, value in options.items():
        if key not in specs:
            close = difflib.get_close_matches(key, list(specs), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"nacc.load_delegate: unknown option {key!r}{hint}; known options: "
                             f"{', '.join(specs)}")
        if value is None:
            continue  # the default
        if key in _INT_OPTIONS:
            if isinstance(value, str) and _INT_TEXT.fullmatch(value.strip()):
                value = int(value.strip())
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"nacc.load_delegate: option {key!r} must be an int or a numeric "
                                 f"string, got {type(value).__name__} {value!r}; allowed: "
                                 f"{specs[key].allowed}")
            out[key] = str(value)
        elif key in _PATH_OPTIONS:
            if not isinstance(value, (str, os.PathLike)):
                raise ValueError(f"nacc.load_delegate: option {key!r} must be a path (str or "
                                 f"os.PathLike), got {type(value).__name__}")
            out[key] = os.fspath(value)
        else:
            if not isinstance(value, str):
                raise ValueError(f"nacc.load_delegate: option {key!r} must be a str, got "
                                 f"{type(value).__name__} {value!r}; allowed: {specs[key].allowed}")
            out[key] = value
    return out


def _c_strings(options: Mapping[str, str]):
    keys = (ctypes.c_char_p * max(len(options), 1))()
    values = (ctypes.c_char_p * max(len(options), 1))()
    for i, (k, v) in enumerate(options.items()):
        keys[i] = k.encode()
        values[i] = v.encode()
    return keys, values


def validate_options(**options: Any) -> Dict[str, str]:
    """Validates delegate options as load_delegate does, without creating a delegate;
    returns them as the library's key/value strings. Raises ValueError."""
    strings = _option_strings(options)
    keys, values = _c_strings(strings)
    error = ctypes.create_string_buffer(1024)
    if _library().nacc_tflite_validate_options(keys, values, len(strings), error, len(error)):
        raise ValueError(f"nacc.load_delegate: {error.value.decode()}")
    return strings


def _installed_version(distribution: str) -> Optional[str]:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _distributions_of(module: str) -> List[str]:
    """The installed distributions that provide top-level `module` (e.g.
    ["tensorflow-cpu"] for "tensorflow"), from their metadata."""
    try:
        return sorted(set(importlib.metadata.packages_distributions().get(module, [])))
    except Exception:  # broken metadata of some unrelated distribution
        return []


def runtime_version(runtime: str) -> Tuple[Optional[str], str]:
    """(version, where it came from) of a TFLite runtime ("tensorflow" or
    "litert"): the imported module's ``__version__``; when it is not imported,
    the version of the distribution that installed the module (imported to
    ask it when several installed distributions disagree); (None, ...) when
    the module is not installed."""
    module = _RUNTIMES[runtime][0]
    if module in sys.modules:
        version = getattr(sys.modules[module], "__version__", None)
        return (str(version) if version else None), f"{module}.__version__"
    found = {d: v for d in _distributions_of(module) if (v := _installed_version(d))}
    if len(set(found.values())) == 1:
        dist, version = next(iter(found.items()))
        return version, f"distribution {dist}"
    if found:  # two distributions wrote the same module: ask the module
        try:
            version = getattr(importlib.import_module(module), "__version__", None)
        except Exception:  # a module that fails to import is no runtime
            version = None
        return (str(version) if version else None), f"{module}.__version__"
    return None, f"module {module}"


def check_runtime_versions(runtime: Optional[str] = None) -> List[str]:
    """Checks the TFLite runtime(s) the delegate will be loaded into against
    TESTED_RUNTIMES by the version of the runtime's module; returns the names
    checked. `runtime`: "tensorflow", "litert", or None for those already
    imported (all installed ones if none is). Raises IncompatibleRuntimeError
    for an untested release or when neither runtime is installed."""
    if runtime is not None and runtime not in _RUNTIMES:
        raise ValueError(f"nacc.load_delegate: runtime {runtime!r} is not one of "
                         f"{', '.join(map(repr, _RUNTIMES))} (or None: detect)")
    names = [runtime] if runtime else [n for n, (m, _, _) in _RUNTIMES.items() if m in sys.modules]
    versions = {n: runtime_version(n) for n in (names or _RUNTIMES)}
    if not names:
        names = [n for n, (v, _) in versions.items() if v]
    if not names:
        raise IncompatibleRuntimeError(
            "nacc.load_delegate: neither tensorflow nor ai-edge-litert is installed; install "
            f"tensorflow=={TESTED_RUNTIMES['tensorflow']} or tensorflow-cpu=="
            f"{TESTED_RUNTIMES['tensorflow']} (pip install 'nacc[tflite]' or 'nacc[tflite-cpu]'), "
            f"or ai-edge-litert=={TESTED_RUNTIMES['ai-edge-litert']} (pip install 'nacc[litert]')")
    for name in names:
        module, key, dists = _RUNTIMES[name]
        found, source = versions[name]
        tested = TESTED_RUNTIMES[key]
        if found != tested:
            other = [n for n in _RUNTIMES if n != name]
            what = f"{key} {found}" if found else f"{key} (not installed: no {source})"
            raise IncompatibleRuntimeError(
                f"nacc.load_delegate: {what} is not supported; the NACC delegate is built against "
                f"the TFLite C ABI of {key} {tested}, which carries no version number, so another "
                "release could corrupt memory instead of failing cleanly. Install "
                + " or ".join(f"{d}=={tested}" for d in dists)
                + (f", or pass runtime={other[0]!r} to use the other runtime." if other else "."))
    return names


@dataclasses.dataclass(frozen=True)
class DeclineReason:
    rule: str     # capability rule or frontend check, e.g. "stride", "hybrid"
    detail: str   # what the node has: "stride 4x4"
    text: str     # the rule: "stride must be in [1, 3] (...)"
    message: str  # "detail — text"


@dataclasses.dataclass(frozen=True)
class NodeDecision:
    node: int
    op: str
    name: str
    claimed: bool
    partition: int         # -1 when on the host
    host_kind: bool        # on the host by op kind or dtype (info), not a declined instance
    macs: int
    reasons: Tuple[DeclineReason, ...]


@dataclasses.dataclass(frozen=True)
class PartitionReport:
    index: int
    nodes: Tuple[int, ...]
    ops: Tuple[str, ...]
    input_tensors: Tuple[int, ...]
    output_tensors: Tuple[int, ...]
    macs: int
    cache_key: str
    cache_hit: bool
    compile_ms: float
    program_ops: int
    command_words: int
    constant_bytes: int
    invocations: int
    recompilations: int
    last_cycles: int       # simulated device cycles of the last Invoke
    last_dma_bytes: int
    sram_peak: int
    total_cycles: int
    host_ms_total: float
    last_latency_us: float  # last_cycles at clock_mhz
    # The last Invoke cut per Program op: dicts with op (index; -1 = commands
    # outside every op), name, kind, start/end/cycles (span on the simulated
    # timeline), macs, mac_cycles, act_cycles, busy_cycles, stall_cycles,
    # dma_read_bytes/dma_write_bytes, sram_high_water, bound_cycles (docs/hardware.md
    # §8), min_dma_bytes and cores (per-core dicts of the same counters).
    last_ops: Tuple[Dict[str, Any], ...] = ()
    # Why the cache_dir entry under cache_key was not used and was replaced
    # (e.g. it holds another partition's Program); "" when there was none or
    # it was used.
    cache_replaced: str = ""


@dataclasses.dataclass(frozen=True)
class SubgraphReport:
    ordinal: int
    context: int
    total_nodes: int
    claimed_nodes: int
    summary: str
    messages: Tuple[str, ...]
    nodes: Tuple[NodeDecision, ...]
    partitions: Tuple[PartitionReport, ...]

    @property
    def declined(self) -> List[NodeDecision]:
        return [n for n in self.nodes if not n.claimed]


@dataclasses.dataclass(frozen=True)
class DelegateReport:
    """What the delegate claimed and why not, per prepared subgraph (one per
    interpreter subgraph the delegate was applied to), and per partition the
    compile and simulated-run numbers (updated on every Invoke)."""

    nacc_version: str
    options: Dict[str, str]
    subgraphs: Tuple[SubgraphReport, ...]

    @classmethod
    def from_json(cls, text: str) -> "DelegateReport":
        raw = json.loads(text)
        subgraphs = []
        for sg in raw["subgraphs"]:
            nodes = tuple(
                NodeDecision(**{**n, "reasons": tuple(DeclineReason(**r) for r in n["reasons"])})
                for n in sg["nodes"])
            parts = tuple(PartitionReport(**{k: tuple(v) if isinstance(v, list) else v
                                             for k, v in p.items()}) for p in sg["partitions"])
            subgraphs.append(SubgraphReport(
                ordinal=sg["ordinal"], context=sg["context"], total_nodes=sg["total_nodes"],
                claimed_nodes=sg["claimed_nodes"], summary=sg["summary"],
                messages=tuple(sg["messages"]), nodes=nodes, partitions=parts))
        return cls(raw["nacc_version"], raw["options"], tuple(subgraphs))

    @property
    def total_nodes(self) -> int:
        return sum(s.total_nodes for s in self.subgraphs)

    @property
    def claimed_nodes(self) -> int:
        return sum(s.claimed_nodes for s in self.subgraphs)

    @property
    def partitions(self) -> List[PartitionReport]:
        return [p for s in self.subgraphs for p in s.partitions]

    @property
    def nodes(self) -> List[NodeDecision]:
        return [n for s in self.subgraphs for n in s.nodes]

    def __str__(self) -> str:
        lines = []
        for s in self.subgraphs:
            lines.append(s.summary)
            lines += [f"  {m}" for m in s.messages if m != s.summary]
            for p in s.partitions:
                lines.append(f"  partition {p.index}: {len(p.nodes)} ops, {p.macs} MACs, "
                             f"{p.last_cycles} cycles ({p.last_latency_us:.1f} us), "
                             f"{p.last_dma_bytes} DMA bytes, SRAM peak {p.sram_peak} B"
                             + (", cache hit" if p.cache_hit else ""))
        return "\n".join(lines) if lines else "NACC delegate: no subgraph prepared yet"


class NaccDelegate:
    """A NACC delegate instance; pass it in ``experimental_delegates`` of
    ``tf.lite.Interpreter`` or ``ai_edge_litert.interpreter.Interpreter``.
    Keep it alive as long as any interpreter using it (the interpreters hold a
    reference)."""

    def __init__(self, options: Mapping[str, str]):
        lib = _library()
        self._lib = lib
        self.options = dict(options)
        keys, values = _c_strings(self.options)
        messages: List[str] = []
        callback = ctypes.CFUNCTYPE(None, ctypes.c_char_p)(
            lambda m: messages.append(m.decode(errors="replace")))
        self._ptr = lib.tflite_plugin_create_delegate(keys, values, len(self.options), callback)
        if not self._ptr:
            raise ValueError("; ".join(messages) or "NACC delegate: creation failed")

    def _get_native_delegate_pointer(self) -> int:
        """The TfLiteDelegate* (what the TFLite interpreters read)."""
        return self._ptr

    def report(self) -> DelegateReport:
        """The report as of now: decisions from Prepare, run numbers from the last Invoke."""
        if not self._ptr:
            raise RuntimeError("the delegate has been closed")
        size = self._lib.nacc_tflite_delegate_report(self._ptr, None, 0)
        if size < 0:
            raise RuntimeError("the delegate is not known to the library")
        buf = ctypes.create_string_buffer(size + 1)
        self._lib.nacc_tflite_delegate_report(self._ptr, buf, size + 1)
        return DelegateReport.from_json(buf.value.decode())

    def close(self) -> None:
        """Destroys the delegate. Only once no interpreter uses it any more."""
        if getattr(self, "_ptr", None):
            self._lib.tflite_plugin_destroy_delegate(self._ptr)
            self._ptr = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: ctypes may be gone already
            pass

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"NaccDelegate({opts})"


def load_delegate(*, runtime: Optional[str] = None, **options: Any) -> NaccDelegate:
    """Creates a NACC delegate for ``tf.lite.Interpreter(experimental_delegates=[...])``
    or LiteRT's interpreter.

    Options (validated; unknown keys rejected, see ``delegate_option_specs()``):
    cores (1, 2, 4, 8, 16, 32), threads (host threads; default the interpreter's
    num_threads), sram_kb, clock_mhz, min_partition_macs, log_level
    ("off", "error", "warning", "info", "debug"), dump_dir, cache_dir,
    fallback ("allow" or "error": fail when any node would stay on the host).

    runtime: "tensorflow" or "litert" to check only that runtime's version;
    None checks the runtimes already imported (all installed ones if none is).
    Raises ValueError for a bad option, IncompatibleRuntimeError for an
    untested TensorFlow / LiteRT release.
    """
    strings = validate_options(**options)
    check_runtime_versions(runtime)
    return NaccDelegate(strings)

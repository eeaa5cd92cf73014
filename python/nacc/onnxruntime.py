"""ONNX Runtime integration: the ``NaccExecutionProvider`` plugin EP.

The package ships a plugin execution-provider library; :func:`register` hands
it to ONNX Runtime (1.23 or newer). Quantized ONNX models (QDQ or QOperator)
then run their int8 core on the simulated NACC and the rest on ORT's CPU EP::

    import onnxruntime as ort
    import nacc.onnxruntime

    nacc.onnxruntime.register()

    # 1. providers list (options are strings)
    sess = ort.InferenceSession("model.onnx", providers=[
        ("NaccExecutionProvider", {"cores": "4"}), "CPUExecutionProvider"])

    # 2. explicit devices
    so = ort.SessionOptions()
    devices = [d for d in ort.get_ep_devices() if d.ep_name == nacc.onnxruntime.get_ep_name()]
    so.add_provider_for_devices(devices, {"cores": "4"})
    sess = ort.InferenceSession("model.onnx", sess_options=so)

    # 3. by name
    so = ort.SessionOptions()
    so.add_provider("NaccExecutionProvider", {"cores": "4"})
    sess = ort.InferenceSession("model.onnx", sess_options=so)

Provider options (values strings; ORT stores them as the session config
entries ``ep.naccexecutionprovider.<key>``): ``cores``, ``threads``,
``sram_kb``, ``clock_mhz``, ``min_partition_macs``, ``log_level``,
``dump_dir``, ``cache_dir``, ``fallback`` — the EP library's own table,
:func:`provider_option_specs` (``nacc docs onnxruntime_ep`` prints it).

ONNX Runtime's Python API does not fail when an execution provider cannot be
created: it prints an "EP Error" and runs the whole model on the CPU EP. So
check: :func:`check_session` raises :class:`EpNotUsedError` when
``NaccExecutionProvider`` is not among ``session.get_providers()``, and
:func:`create_session` validates the options with the EP library's own parser
first (:func:`validate_provider_options`, a one-line ``ValueError``), creates
the session and checks it::

    sess = nacc.onnxruntime.create_session("model_qdq.onnx", {"cores": 4})

Logging: nacc logs through ORT's logger. With ``add_provider`` /
``add_provider_for_devices`` (and :func:`create_session`) that is the session
logger, so ``SessionOptions.log_severity_level`` applies (3 = errors only,
2 = also the declined nodes, 1 = also host-only op kinds and the summary);
with a ``providers=[...]`` list ONNX Runtime's Python API hands the EP its
default logger (``ort.set_default_logger_severity``). The ``log_level``
option (``off``, ``error``, ``warning``, ``info``, ``debug``) drops nacc's
messages below that level in every form.

Seeing what ran where: ``session.get_provider_graph_assignment_info()`` (with
the session config ``session.record_ep_graph_assignment_info=1``), ORT's log,
and :func:`partition_reports` (nacc's own report: partitions, node units, MACs,
and the reason for every node left on the host).

``onnxruntime`` is an optional dependency (``pip install nacc[onnxruntime]``);
it is imported only when :func:`register` is called.
"""
from __future__ import annotations

import contextlib
import ctypes
import difflib
import io
import json
import os
import re
import threading
import warnings
from typing import Any, Dict, List, Mapping, Optional, Union

EP_NAME = "NaccExecutionProvider"
_LIBRARY_NAME = "libnacc_ort_ep.so"

_lock = threading.Lock()
_registered = False

__all__ = ["EP_NAME", "EpNotUsedError", "get_ep_name", "get_library_path", "register",
           "partition_reports", "attach_run_stats", "run_stats", "ep_devices", "provider_option_specs",
           "validate_provider_options", "check_session", "create_session"]

_INT_TEXT = re.compile(r"[+-]?[0-9]+")


class EpNotUsedError(RuntimeError):
    """A session that was meant to use NaccExecutionProvider runs without it
    (ONNX Runtime fell back to the CPU EP)."""


def get_ep_name() -> str:
    """The execution provider's name, ``"NaccExecutionProvider"``."""
    return EP_NAME


def get_library_path() -> str:
    """Absolute path of the plugin EP shared library shipped in this package.

    Raises FileNotFoundError when the package was built without it.
    """
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), _LIBRARY_NAME)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"the NACC ONNX Runtime EP library {path} is missing; "
            "rebuild nacc (pip install . or python tools/devbuild.py ep)")
    return path


def _import_onnxruntime():
    try:
        import onnxruntime  # noqa: WPS433 (optional dependency, imported lazily)
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("nacc.onnxruntime needs ONNX Runtime >= 1.23: "
                          "pip install 'nacc[onnxruntime]'") from e
    return onnxruntime


def register() -> None:
    """Registers the EP library with ONNX Runtime (idempotent, thread-safe).

    After this, the three selection forms in the module docstring select the
    EP. Raises ImportError without onnxruntime, RuntimeError when ORT rejects
    the library (for example an ORT older than 1.23).
    """
    global _registered
    ort = _import_onnxruntime()
    with _lock:
        if _registered or any(d.ep_name == EP_NAME for d in ort.get_ep_devices()):
            _registered = True
            return
        try:
            ort.register_execution_provider_library(EP_NAME, get_library_path())
        except Exception as e:  # ORT raises its own exception types
            raise RuntimeError(f"ONNX Runtime {ort.__version__} could not register "
                               f"{EP_NAME}: {e}") from e
        _registered = True


def ep_devices() -> list:
    """The ``OrtEpDevice`` objects of this EP (for ``add_provider_for_devices``)."""
    ort = _import_onnxruntime()
    register()
    return [d for d in ort.get_ep_devices() if d.ep_name == EP_NAME]


_lib: Optional[ctypes.CDLL] = None


def _library() -> ctypes.CDLL:
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(get_library_path())
        lib.nacc_ep_option_specs_json.restype = ctypes.c_char_p
        lib.nacc_ep_validate_options.argtypes = [
            ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
            ctypes.c_char_p, ctypes.c_size_t]
        lib.nacc_ep_validate_options.restype = ctypes.c_int
        lib.nacc_ep_test_perturb_node.argtypes = [ctypes.c_char_p]
        lib.nacc_ep_test_perturb_node.restype = None
        _lib = lib
    return _lib


def provider_option_specs() -> list:
    """The EP's provider options (the library's own table, in documentation
    order): ``nacc.tflite.OptionSpec`` objects with ``name``, ``allowed``,
    ``default`` and ``help``."""
    from nacc.tflite import OptionSpec

    return [OptionSpec(**o) for o in json.loads(_library().nacc_ep_option_specs_json().decode())]


def validate_provider_options(options: Optional[Mapping[str, Any]] = None) -> Dict[str, str]:
    """Checks provider options with the parser the EP itself runs in CreateEp
    and returns them as the strings ONNX Runtime takes. Values may be str,
    int (for the integer options) or os.PathLike (for the directories).
    ``dump_dir`` / ``cache_dir`` are created, as the EP would. Raises
    ValueError with one line naming the option and what is allowed."""
    specs = [o.name for o in provider_option_specs()]
    strings: Dict[str, str] = {}
    for key, value in (options or {}).items():
        if key not in specs:
            close = difflib.get_close_matches(str(key), specs, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"{EP_NAME}: unknown provider option {key!r}{hint}; known options: "
                             f"{', '.join(specs)}")
        if isinstance(value, bool) or value is None:
            raise ValueError(f"{EP_NAME}: provider option {key!r} must be a string, got "
                             f"{type(value).__name__} {value!r}")
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        elif isinstance(value, int):
            value = str(value)
        elif isinstance(value, str) and _INT_TEXT.fullmatch(value.strip()):
            value = value.strip()
        if not isinstance(value, str):
            raise ValueError(f"{EP_NAME}: provider option {key!r} must be a string, got "
                             f"{type(value).__name__} {value!r}")
        strings[str(key)] = value
    n = max(len(strings), 1)
    keys, values = (ctypes.c_char_p * n)(), (ctypes.c_char_p * n)()
    for i, (k, v) in enumerate(strings.items()):
        keys[i], values[i] = k.encode(), v.encode()
    error = ctypes.create_string_buffer(2048)
    if _library().nacc_ep_validate_options(keys, values, len(strings), error, len(error)):
        raise ValueError(error.value.decode(errors="replace"))
    return strings


def _ep_error(printed: str) -> str:
    """The reason in ONNX Runtime's printed "EP Error" block, as one line."""
    lines = [l.strip() for l in printed.splitlines() if l.strip()]
    marker = "Error creating execution provider:"
    for line in lines:
        if marker in line:
            text = line.split(marker, 1)[1].strip()
            return re.sub(r"^\[ONNXRuntimeError\] : \d+ : [A-Z_]+ : ", "", text)
    body = [l for l in lines if not l.startswith("****")]
    return body[0] if body else "no reason printed"


def check_session(session, printed: str = "") -> Any:
    """Returns `session` when NaccExecutionProvider takes part in it; raises
    EpNotUsedError otherwise (ONNX Runtime fell back to the CPU EP). `printed`:
    what ONNX Runtime printed while creating the session (its reason)."""
    providers = list(session.get_providers())
    if EP_NAME not in providers:
        why = f": {_ep_error(printed)}" if printed.strip() else ""
        raise EpNotUsedError(f"{EP_NAME} is not in this session's providers {providers} "
                             f"(ONNX Runtime fell back to the CPU EP){why}")
    return session


def create_session(model: Union[str, bytes, os.PathLike],
                   provider_options: Optional[Mapping[str, Any]] = None,
                   sess_options=None, *, echo: bool = False) -> Any:
    """An ``onnxruntime.InferenceSession`` of `model` (path or bytes) with
    NaccExecutionProvider in front of the CPU EP, or an exception — never a
    session that silently runs on the CPU EP alone:

    - ValueError for a bad provider option (checked before ORT sees it, by the
      EP library's own parser);
    - EpNotUsedError when ORT still could not create the EP (its reason in the
      message);
    - ORT's own exceptions for a model it cannot load.

    The EP is added with ``add_provider_for_devices``, so nacc logs through
    the session logger (``sess_options.log_severity_level``). `sess_options`
    is modified (the EP is added to it): pass a fresh one per session.
    `echo`: also print ORT's own output while creating the session (its "EP
    Error" block is captured either way)."""
    ort = _import_onnxruntime()
    options = validate_provider_options(provider_options)
    so = sess_options if sess_options is not None else ort.SessionOptions()
    so.add_provider_for_devices(ep_devices(), options)
    if isinstance(model, os.PathLike):
        model = os.fspath(model)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        # On a fallback ORT also warns that the session options already name providers.
        warnings.simplefilter("ignore", UserWarning)
        session = ort.InferenceSession(model, sess_options=so)
    if echo and out.getvalue():
        print(out.getvalue(), end="")
    return check_session(session, out.getvalue())


def _set_test_perturb_node(node: str) -> None:
    """Test only: sessions created from now on double the weight scales of
    ONNX node `node` ("" = off), a wrong multiplier accuracy checks must catch."""
    _library().nacc_ep_test_perturb_node(node.encode())


def _json_from_library(symbol: str):
    lib = _library()
    fn = getattr(lib, symbol)
    fn.restype = ctypes.c_size_t
    fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    n = fn(None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    fn(buf, n + 1)
    return json.loads(buf.value.decode("utf-8"))


def run_stats() -> Dict[str, Dict[str, Any]]:
    """Per fused partition (ORT's fused node name) of this process: ``runs``,
    and of the last run the simulated device ``cycles``, useful ``macs``,
    external ``dma_bytes``, ``sram_high_water`` and ``ops``: the run cut per
    Program op (dicts with ``name``, ``kind``, ``start``/``end``/``cycles``,
    ``macs``, ``mac_cycles``, ``busy_cycles``, ``stall_cycles``,
    ``dma_read_bytes``/``dma_write_bytes``, ``sram_high_water``,
    ``bound_cycles``, ``min_dma_bytes`` and per-core ``cores``; a last ``op``
    -1 entry holds commands outside every op), and over all runs
    ``host_layout_conversions``: the boundary tensors the host converted
    between NCHW and NHWC (0 when the Programs convert them on the device's
    layout unit, option ``boundary_layout=device``, the default)."""
    return _json_from_library("nacc_ep_run_stats_json")


def _is_boundary_layout_op(o: Dict[str, Any]) -> bool:
    """A TRANSPOSE the EP put at a partition boundary (NCHW <-> NHWC on the
    device's layout unit, named "<value>/to_nhwc" or "<value>/to_nchw"): no
    ONNX node of the partition."""
    return o.get("kind") == "TRANSPOSE" and o.get("name", "").endswith(("/to_nhwc", "/to_nchw"))


def _program_op_names(stats: Dict[str, Any]) -> frozenset:
    return frozenset(o["name"] for o in stats.get("ops", [])
                     if o.get("op", -1) >= 0 and not _is_boundary_layout_op(o))


def partition_reports(stats: Optional[Dict[str, Dict[str, Any]]] = None) -> List[Dict[str, Any]]:
    """nacc's partition reports of this process, oldest first (at most 32).

    Each report is a dict: ``seq`` (numbers the process's reports from 1, so
    the reports of a new session are those with a larger ``seq`` than any
    before it — the list's length stops growing at 32), ``graph``,
    ``total_nodes``, ``claimed_nodes``,
    ``partitions`` (``nodes``, ``units``, ``ir_ops``, ``macs``) and
    ``host_nodes`` (``name``, ``op_type``, ``reason``). A partition that has
    run also has ``fused_node`` (ORT's fused node name), ``runs``,
    ``last_cycles``, ``last_dma_bytes``, ``sram_high_water`` and ``last_ops``
    (its last run per Program op, as in :func:`run_stats`); it is matched to
    its fused node by the node names its Program ops carry (see
    :func:`attach_run_stats`; `stats` defaults to :func:`run_stats`).
    """
    return attach_run_stats(_json_from_library("nacc_ep_reports_json"),
                            run_stats() if stats is None else stats)


def report_seq() -> int:
    """The ``seq`` of this process's newest partition report (0 before any):
    take it before creating a session, then :func:`reports_after` gives that
    session's reports, however many older ones the list has dropped."""
    return max((r["seq"] for r in _json_from_library("nacc_ep_reports_json")), default=0)


def reports_after(seq: int, stats: Optional[Dict[str, Dict[str, Any]]] = None) -> List[Dict[str, Any]]:
    """The partition reports newer than `seq` (see :func:`report_seq`)."""
    return [r for r in partition_reports(stats) if r["seq"] > seq]


def attach_run_stats(reports: List[Dict[str, Any]],
                     stats: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Adds to each partition of `reports` the last run of its fused node in
    `stats` (a :func:`run_stats` dict, or the part of it one session ran):
    ``fused_node``, ``runs``, ``last_cycles``, ``last_dma_bytes``,
    ``sram_high_water``, ``last_ops``; a partition without a match loses those
    fields. Sessions of the same model share fused node names, so pass only
    the entries of the session in question. Returns `reports`."""
    by_ops = {}
    for fused, st in stats.items():
        names = _program_op_names(st)
        if names:
            by_ops.setdefault(names, (fused, st))
    for report in reports:
        for part in report.get("partitions", []):
            for key in ("fused_node", "runs", "last_cycles", "last_dma_bytes", "sram_high_water",
                        "last_ops"):
                part.pop(key, None)
            units = frozenset(u["name"] for u in part.get("units", []))
            hit = by_ops.get(units)
            if hit is None:  # a Program may drop view-only units; accept a subset
                hit = next(((f, s) for n, (f, s) in by_ops.items() if n and n <= units), None)
            if hit is None:
                continue
            fused, st = hit
            part.update(fused_node=fused, runs=st["runs"], last_cycles=st["cycles"],
                        last_dma_bytes=st.get("dma_bytes", 0),
                        sram_high_water=st.get("sram_high_water", 0),
                        last_ops=st.get("ops", []))
    return reports

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

Provider options (all values strings; ORT stores them as the session config
entries ``ep.naccexecutionprovider.<key>``):

==================== ============================================================
``threads``          host threads simulating the cores (0 = one per simulated
                     core, up to the CPUs; the plugin ABI does not expose the
                     session's intra-op thread count, so it cannot follow it)
``cores``            simulated NACC cores: 1, 2, 4, 8, 16, 32 (default 1)
``sram_kb``          SRAM per core in KiB, a power of two in [16, 1024] (64)
``clock_mhz``        clock for latency figures, [1, 10000] (500)
``dump_dir``         write ``partition_report.json`` and compiled partitions here
                     (created if missing; must be writable)
``cache_dir``        reuse compiled Programs across sessions and processes
                     (created if missing; must be writable)
``fallback``         ``allow`` (default) or ``error``: fail when any node other
                     than the float<->int8 boundary conversions stays on the host
``min_partition_macs`` fragmentation guard: partitions with fewer useful MACs
                     stay on the host (default 0 = off; as the TFLite delegate,
                     a partition that would only reshape always stays home)
==================== ============================================================

Seeing what ran where: ``session.get_provider_graph_assignment_info()`` (with
the session config ``session.record_ep_graph_assignment_info=1``), ORT's log
(``log_severity_level=1`` shows nacc's placement summary, ``2`` its warnings),
and :func:`partition_reports` (nacc's own report: partitions, node units, MACs,
and the reason for every node left on the host).

``onnxruntime`` is an optional dependency (``pip install nacc[onnxruntime]``);
it is imported only when :func:`register` is called.
"""
from __future__ import annotations

import ctypes
import json
import os
import threading
from typing import Any, Dict, List

EP_NAME = "NaccExecutionProvider"
_LIBRARY_NAME = "libnacc_ort_ep.so"

_lock = threading.Lock()
_registered = False

__all__ = ["EP_NAME", "get_ep_name", "get_library_path", "register", "partition_reports",
           "run_stats", "ep_devices"]


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


def _json_from_library(symbol: str):
    lib = ctypes.CDLL(get_library_path())
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
    -1 entry holds commands outside every op)."""
    return _json_from_library("nacc_ep_run_stats_json")


def _program_op_names(stats: Dict[str, Any]) -> frozenset:
    return frozenset(o["name"] for o in stats.get("ops", []) if o.get("op", -1) >= 0)


def partition_reports() -> List[Dict[str, Any]]:
    """nacc's partition reports of this process, oldest first (at most 32).

    Each report is a dict: ``graph``, ``total_nodes``, ``claimed_nodes``,
    ``partitions`` (``nodes``, ``units``, ``ir_ops``, ``macs``) and
    ``host_nodes`` (``name``, ``op_type``, ``reason``). A partition that has
    run also has ``fused_node`` (ORT's fused node name), ``runs``,
    ``last_cycles``, ``last_dma_bytes``, ``sram_high_water`` and ``last_ops``
    (its last run per Program op, as in :func:`run_stats`); it is matched to
    its fused node by the node names its Program ops carry.
    """
    reports = _json_from_library("nacc_ep_reports_json")
    stats = run_stats()
    by_ops = {}
    for fused, st in stats.items():
        names = _program_op_names(st)
        if names:
            by_ops.setdefault(names, (fused, st))
    for report in reports:
        for part in report.get("partitions", []):
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

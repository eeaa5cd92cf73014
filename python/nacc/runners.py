"""A model file opened twice — with nacc and on the host runtime alone — for
the commands that run many inputs (``nacc perf``, ``nacc eval``).

``open_pair(path, hw)`` returns two :class:`Runner` objects with the same
interface: ``inputs`` / ``outputs`` (dicts: name, shape, dtype, and for TFLite
``quantization`` = (scale, zero point)), ``run(arrays) -> outputs`` and, for
the nacc one, ``npu()``: the simulated device's figures of the last run
(nacc.results.npu). TFLite: BUILTIN_REF kernels with the NACC delegate, and
BUILTIN_REF alone; ONNX: ONNX Runtime with NaccExecutionProvider in front of
the CPU EP (checked to take part: nacc.onnxruntime.create_session), and the
CPU EP alone.
"""
from __future__ import annotations

import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

__all__ = ["Runner", "open_pair"]


class Runner:
    """One way of running a model (see the module docstring)."""

    kind: str = ""        # "tflite" or "onnx"
    label: str = ""       # "TFLite BUILTIN_REF + NACC delegate", ...
    inputs: List[Dict[str, Any]] = []
    outputs: List[Dict[str, Any]] = []
    init_ms: float = 0.0  # creating it (for nacc: partitioning and compilation included)

    def run(self, arrays: Sequence[np.ndarray]) -> List[np.ndarray]:
        raise NotImplementedError

    def npu(self) -> Optional[Dict[str, Any]]:
        """The simulated NPU figures of the last run (nacc runners), else None."""
        return None

    def report(self) -> Optional[Dict[str, Any]]:
        """The nacc report (nacc.model_report) of the last run (nacc runners)."""
        return None


class _Tflite(Runner):
    kind = "tflite"

    def __init__(self, blob: bytes, hw, options: Optional[Mapping[str, str]], nacc: bool):
        from nacc import model_report

        self.hw = hw
        self.delegate = None
        import tensorflow  # noqa: F401 - imported first: its import is not initialization
        t0 = time.perf_counter()
        if nacc:
            import nacc as _nacc

            opts = dict(hw.delegate_options(), log_level="off")
            opts.update(options or {})
            self.delegate = _nacc.load_delegate(**opts)
            self.label = "TFLite BUILTIN_REF + NACC delegate"
        else:
            self.label = "TFLite BUILTIN_REF"
        self.interp = model_report._interpreter(
            blob, delegates=[self.delegate] if self.delegate else None)
        self.init_ms = (time.perf_counter() - t0) * 1e3
        self.inputs = [{"name": d["name"], "shape": [int(s) for s in d["shape"]],
                        "dtype": np.dtype(d["dtype"]), "quantization": d["quantization"],
                        "index": d["index"]} for d in self.interp.get_input_details()]
        self.outputs = [{"name": d["name"], "shape": [int(s) for s in d["shape"]],
                         "dtype": np.dtype(d["dtype"]), "index": d["index"]}
                        for d in self.interp.get_output_details()]

    def run(self, arrays):
        for d, x in zip(self.inputs, arrays):
            self.interp.set_tensor(d["index"], x)
        self.interp.invoke()
        return [self.interp.get_tensor(d["index"]).copy() for d in self.outputs]

    def report(self):
        if self.delegate is None:
            return None
        from nacc import model_report

        return model_report._report_from_delegate(self.delegate.report(), self.hw, name="")

    def npu(self):
        rep = self.report()
        return rep["totals"] if rep else None


class _Onnx(Runner):
    kind = "onnx"

    def __init__(self, path: str, hw, options: Optional[Mapping[str, str]], nacc: bool):
        import onnxruntime as ort

        from nacc import model_report

        self.hw = hw
        self.reports: Optional[List[Dict[str, Any]]] = None
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.log_severity_level = 3
        t0 = time.perf_counter()
        if nacc:
            import nacc.onnxruntime as nort

            nort.register()
            before = len(nort.partition_reports({}))
            opts = dict(hw.ep_options(), log_level="off")
            opts.update(options or {})
            self.session = nort.create_session(path, opts, so)
            after = nort.partition_reports({})
            self.reports = after[before:] or after[-1:]
            self.label = "ONNX Runtime, NaccExecutionProvider + CPU EP"
        else:
            self.session = ort.InferenceSession(path, sess_options=so,
                                                providers=["CPUExecutionProvider"])
            self.label = "ONNX Runtime CPU EP"
        self.init_ms = (time.perf_counter() - t0) * 1e3
        self.inputs = [dict(d, dtype=np.dtype(d["dtype"]), quantization=(0.0, 0))
                       for d in model_report.ort_input_details(self.session)]
        self.outputs = [{"name": o.name, "shape": list(o.shape),
                         "dtype": np.dtype(model_report.ORT_TYPES.get(o.type, np.float32))}
                        for o in self.session.get_outputs()]
        self._names = [o["name"] for o in self.outputs]

    def run(self, arrays):
        return self.session.run(self._names, {d["name"]: x for d, x in zip(self.inputs, arrays)})

    def report(self):
        if self.reports is None:
            return None
        import nacc.onnxruntime as nort
        from nacc import model_report

        parts, declined, total, claimed = model_report.ep_partitions(
            nort.attach_run_stats(self.reports, nort.run_stats()), self.hw)
        rep = {"partitions": parts, "declined": declined, "total_nodes": total,
               "claimed_nodes": claimed,
               "summary": f"NACC EP: claimed {claimed} of {total} nodes in {len(parts)} partitions"}
        return model_report._finish(rep, self.hw, None, None, "")

    def npu(self):
        rep = self.report()
        return rep["totals"] if rep else None


def open_pair(path: str, kind: str, hw, options: Optional[Mapping[str, str]] = None,
              reference: bool = True) -> Tuple[Runner, Optional[Runner]]:
    """(nacc runner, reference runner or None) of the model file `path`
    (`kind` "tflite" or "onnx"). `options`: extra delegate / EP options
    (validated strings). Raises ValueError, nacc.onnxruntime.EpNotUsedError,
    or the runtime's error for a model it cannot load."""
    if kind == "tflite":
        with open(path, "rb") as f:
            blob = f.read()
        return (_Tflite(blob, hw, options, True),
                _Tflite(blob, hw, None, False) if reference else None)
    return _Onnx(path, hw, options, True), (_Onnx(path, hw, None, False) if reference else None)

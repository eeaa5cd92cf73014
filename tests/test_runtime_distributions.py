"""The TFLite runtime check goes by the runtime *module's* version, so every
official build of the tested release is accepted — tensorflow, tensorflow-cpu
(the same module and TFLite ABI, what many servers and CI images install) —
and an untested release is refused whichever distribution installed it. The
installed distributions are faked through importlib.metadata; the imported
module through sys.modules."""
from __future__ import annotations

import importlib
import importlib.metadata
import sys
import types

import pytest

import nacc
from nacc import tflite as nt

TF = nt.TESTED_RUNTIMES["tensorflow"]
LITERT = nt.TESTED_RUNTIMES["ai-edge-litert"]


def fake_metadata(monkeypatch, distributions):
    """Pretend exactly `distributions` ({name: (version, top-level module)}) are installed."""
    def version(name):
        if name not in distributions:
            raise importlib.metadata.PackageNotFoundError(name)
        return distributions[name][0]

    provides = {}
    for name, (_, module) in distributions.items():
        provides.setdefault(module, []).append(name)
    monkeypatch.setattr(importlib.metadata, "version", version)
    monkeypatch.setattr(importlib.metadata, "packages_distributions", lambda: provides)
    monkeypatch.setattr(sys, "modules", {k: v for k, v in sys.modules.items()
                                         if k.split(".")[0] not in ("tensorflow", "ai_edge_litert")})


# (installed distributions, runtime, accepted, where the version came from)
CASES = [
    ({"tensorflow-cpu": (TF, "tensorflow")}, "tensorflow", True, "distribution tensorflow-cpu"),
    ({"tensorflow": (TF, "tensorflow")}, "tensorflow", True, "distribution tensorflow"),
    ({"tensorflow-intel": (TF, "tensorflow")}, "tensorflow", True, "distribution tensorflow-intel"),
    ({"tensorflow-cpu": ("2.20.0", "tensorflow")}, "tensorflow", False, "distribution tensorflow-cpu"),
    ({"tensorflow-cpu": (TF, "tensorflow")}, None, True, "distribution tensorflow-cpu"),
    ({"tensorflow-cpu": (TF, "tensorflow"), "ai-edge-litert": (LITERT, "ai_edge_litert")}, None,
     True, "distribution tensorflow-cpu"),
    ({"ai-edge-litert": (LITERT, "ai_edge_litert")}, "tensorflow", False, "module tensorflow"),
    ({}, None, False, None),
]


@pytest.mark.parametrize("installed,runtime,ok,source", CASES)
def test_runtime_check_by_module(monkeypatch, installed, runtime, ok, source):
    fake_metadata(monkeypatch, installed)
    if source is not None:
        assert nt.runtime_version("tensorflow")[1] == source
    if ok:
        assert "tensorflow" in nt.check_runtime_versions(runtime)
    else:
        with pytest.raises(nacc.IncompatibleRuntimeError) as e:
            nt.check_runtime_versions(runtime)
        assert f"tensorflow-cpu=={TF}" in str(e.value) and f"tensorflow=={TF}" in str(e.value)


def test_imported_module_version_wins(monkeypatch):
    """No distribution called tensorflow, an imported module of the tested release: accepted
    (the case of issue 18: tensorflow-cpu was refused as 'tensorflow (not installed)')."""
    fake_metadata(monkeypatch, {})
    monkeypatch.setitem(sys.modules, "tensorflow", types.SimpleNamespace(__version__=TF))
    assert nt.runtime_version("tensorflow") == (TF, "tensorflow.__version__")
    assert nt.check_runtime_versions() == ["tensorflow"]
    assert nacc.load_delegate(cores="2")  # and the delegate loads
    monkeypatch.setitem(sys.modules, "tensorflow", types.SimpleNamespace(__version__="2.22.0"))
    with pytest.raises(nacc.IncompatibleRuntimeError, match="tensorflow 2.22.0 is not supported"):
        nt.check_runtime_versions()


def test_two_distributions_of_one_module_ask_the_module(monkeypatch):
    """tensorflow and tensorflow-cpu both installed (an extra pinning tensorflow next to
    tensorflow-cpu) with different versions: the module that imports decides."""
    fake_metadata(monkeypatch, {"tensorflow": ("2.20.0", "tensorflow"),
                                "tensorflow-cpu": (TF, "tensorflow")})
    monkeypatch.setattr(importlib, "import_module",
                        lambda name: types.SimpleNamespace(__version__=TF))
    assert nt.runtime_version("tensorflow") == (TF, "tensorflow.__version__")
    nt.check_runtime_versions("tensorflow")

"""The TFLite delegate library: its exported ABI, option validation (one table in
the library, used by the raw .so and by nacc.load_delegate), the runtime version
check, and the generated builtin-name table. No model runs here."""
import ctypes
import os
import subprocess
import sys
import types

import numpy as np
import pytest

import nacc
from nacc import tflite as nt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIB = nacc.delegate_library_path()

# (options, substring of the error) — each option at its limits and one past.
BAD_OPTIONS = [
    (dict(cores=0), "option 'cores': '0' is not allowed; allowed: 1, 2, 4, 8, 16 or 32"),
    (dict(cores=3), "option 'cores': '3' is not allowed"),
    (dict(cores=64), "option 'cores': '64' is not allowed"),
    (dict(threads=0), "option 'threads': '0' is not allowed; allowed: an integer in [1, 256]"),
    (dict(threads=257), "option 'threads': '257'"),
    (dict(sram_kb=8), "option 'sram_kb': '8' is not allowed; allowed: a power of two in [16, 1024]"),
    (dict(sram_kb=48), "option 'sram_kb': '48'"),
    (dict(sram_kb=2048), "option 'sram_kb': '2048'"),
    (dict(clock_mhz=0), "option 'clock_mhz': '0'"),
    (dict(clock_mhz=10001), "option 'clock_mhz': '10001'"),
    (dict(min_partition_macs=-1), "option 'min_partition_macs': '-1'"),
    (dict(log_level="loud"), "option 'log_level': 'loud' is not allowed; allowed: off, error"),
    (dict(fallback="strict"), "option 'fallback': 'strict' is not allowed; allowed: allow or error"),
    (dict(core=4), "unknown option 'core' (did you mean 'cores'?)"),
    (dict(threds=2), "unknown option 'threds' (did you mean 'threads'?)"),
    (dict(cores="four"), "option 'cores' must be an int or a numeric string, got str"),
    (dict(cores="4.0"), "option 'cores' must be an int or a numeric string, got str"),
    (dict(cores="3"), "option 'cores': '3' is not allowed"),  # a numeric string, checked as an int
    (dict(cores=True), "option 'cores' must be an int or a numeric string, got bool"),
    (dict(cores=4.0), "option 'cores' must be an int or a numeric string, got float"),
    (dict(log_level=3), "option 'log_level' must be a str"),
    (dict(dump_dir=3), "option 'dump_dir' must be a path"),
]

GOOD_OPTIONS = [
    dict(),
    dict(cores=1), dict(cores=32), dict(threads=1), dict(threads=256),
    dict(sram_kb=16), dict(sram_kb=1024), dict(clock_mhz=1), dict(clock_mhz=10000),
    dict(min_partition_macs=0), dict(min_partition_macs=10**12),
    dict(log_level="off"), dict(log_level="DEBUG"), dict(fallback="error"), dict(fallback="allow"),
    dict(cores=None),
    # Numeric strings, as TFLite's own load_delegate(path, {"cores": "4"}) takes them.
    dict(cores="4"), dict(sram_kb="128", threads=" 2 ", min_partition_macs="0"),
]


@pytest.mark.parametrize("options,message", BAD_OPTIONS)
def test_load_delegate_rejects_bad_options(options, message):
    with pytest.raises(ValueError, match="nacc.load_delegate") as e:
        nacc.load_delegate(**options)
    assert message in str(e.value)


@pytest.mark.parametrize("options", GOOD_OPTIONS)
def test_load_delegate_accepts_options(options):
    d = nacc.load_delegate(**options)
    assert d._get_native_delegate_pointer()
    d.close()


def test_directory_options_are_created(tmp_path):
    d = nacc.load_delegate(cache_dir=tmp_path / "cache" / "a", dump_dir=str(tmp_path / "dump"))
    assert (tmp_path / "cache" / "a").is_dir() and (tmp_path / "dump").is_dir()
    assert d.report().options["cache_dir"] == str(tmp_path / "cache" / "a")
    d.close()


def test_unwritable_directory_option(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match="option 'cache_dir': cannot create directory"):
        nacc.load_delegate(cache_dir=blocker / "sub")


def _raw_create(lib, options):
    keys = (ctypes.c_char_p * max(1, len(options)))(*[k.encode() for k in options])
    values = (ctypes.c_char_p * max(1, len(options)))(*[str(v).encode() for v in options.values()])
    messages = []
    cb = ctypes.CFUNCTYPE(None, ctypes.c_char_p)(lambda m: messages.append(m.decode()))
    ptr = lib.tflite_plugin_create_delegate(keys, values, len(options), cb)
    return ptr, messages


@pytest.mark.parametrize("options,message", [
    ({"cores": "3"}, "option 'cores': '3' is not allowed"),
    ({"cores": "4 "}, "option 'cores': '4 ' is not allowed"),
    ({"cores": ""}, "option 'cores': '' is not allowed"),
    ({"cores": "0x4"}, "option 'cores': '0x4'"),
    ({"threads": "99999999999999999999"}, "option 'threads'"),
    ({"bogus": "1"}, "unknown option 'bogus'"),
])
def test_raw_library_reports_errors_through_report_error(options, message):
    """tflite_plugin_create_delegate returns NULL and reports through report_error."""
    lib = nt._library()
    ptr, messages = _raw_create(lib, options)
    assert not ptr
    assert len(messages) == 1 and messages[0].startswith("NACC delegate: ") and message in messages[0]


def test_raw_library_create_destroy_and_null():
    lib = nt._library()
    ptr, messages = _raw_create(lib, {"cores": "4", "fallback": "error"})
    assert ptr and not messages
    lib.tflite_plugin_destroy_delegate(ptr)
    lib.tflite_plugin_destroy_delegate(ptr)  # a second destroy is ignored
    lib.tflite_plugin_destroy_delegate(None)
    # Reports of unknown delegates: -1, no crash.
    assert lib.nacc_tflite_delegate_report(ptr, None, 0) == -1


def test_tf_load_delegate_with_string_options():
    """The .so through TensorFlow's own loader, no nacc Python in between."""
    import tensorflow as tf

    d = tf.lite.experimental.load_delegate(LIB, {"cores": "4"})
    assert d._get_native_delegate_pointer()
    with pytest.raises(ValueError, match="option 'cores': '5' is not allowed"):
        tf.lite.experimental.load_delegate(LIB, {"cores": "5"})


def test_litert_load_delegate_with_string_options():
    from ai_edge_litert import interpreter as litert

    d = litert.load_delegate(LIB, {"cores": "2", "log_level": "off"})
    assert d._get_native_delegate_pointer()
    with pytest.raises(ValueError, match="unknown option 'kores'"):
        litert.load_delegate(LIB, {"kores": "2"})


def test_option_specs_table():
    specs = {s.name: s for s in nt.delegate_option_specs()}
    assert list(specs) == ["cores", "threads", "sram_kb", "clock_mhz", "min_partition_macs",
                           "log_level", "dump_dir", "cache_dir", "fallback", "debug_dump_dir"]
    assert all(s.allowed and s.default and s.help for s in specs.values())
    # Defaults as the report shows them.
    d = nacc.load_delegate()
    opts = d.report().options
    assert opts["cores"] == "1" and opts["sram_kb"] == "64" and opts["fallback"] == "allow"
    assert opts["log_level"] == "info" and opts["clock_mhz"] == "500"


def test_library_exports_only_its_c_api_and_needs_no_tensorflow():
    out = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True, text=True,
                         check=True).stdout
    exported = sorted(line.split()[-1] for line in out.splitlines() if " T " in line)
    assert exported == sorted([
        "nacc_tflite_delegate_report", "nacc_tflite_option_specs_json", "nacc_tflite_test_inject_fault",
        "nacc_tflite_validate_options", "nacc_tflite_version",
        "tflite_plugin_create_delegate", "tflite_plugin_destroy_delegate",
        # The kernel-path switch of the library's copy of the core (common/cpu.h).
        "nacc_set_kernel_path", "nacc_kernel_path_json"])
    deps = subprocess.run(["ldd", LIB], capture_output=True, text=True, check=True).stdout
    assert "tensorflow" not in deps and "python" not in deps


def test_versions_agree():
    assert nt._library().nacc_tflite_version().decode() == nacc.__version__


@pytest.mark.parametrize("installed,runtime,ok", [
    ({"tensorflow": "2.21.0", "ai-edge-litert": "2.3.0"}, None, True),
    ({"tensorflow": "2.21.0", "ai-edge-litert": "2.3.0"}, "litert", True),
    ({"tensorflow": "2.20.0", "ai-edge-litert": "2.3.0"}, "tensorflow", False),
    ({"tensorflow": "2.20.0", "ai-edge-litert": "2.3.0"}, "litert", True),
    ({"tensorflow": None, "ai-edge-litert": "2.4.0"}, "litert", False),
    ({"tensorflow": None, "ai-edge-litert": None}, None, False),
])
def test_runtime_version_check(monkeypatch, installed, runtime, ok):
    monkeypatch.setattr(nt, "_installed_version", lambda dist: installed[dist])
    # Pretend nothing is imported so that runtime=None checks what is installed.
    monkeypatch.setattr(sys, "modules", {k: v for k, v in sys.modules.items()
                                         if k not in ("tensorflow", "ai_edge_litert")})
    if ok:
        nt.check_runtime_versions(runtime)
    else:
        with pytest.raises(nacc.IncompatibleRuntimeError) as e:
            nt.check_runtime_versions(runtime)
        assert "2.21.0" in str(e.value) or "2.3.0" in str(e.value)


def test_untested_runtime_is_refused_before_loading(monkeypatch):
    # The imported module's version is what counts (tests/test_runtime_distributions.py).
    monkeypatch.setitem(sys.modules, "tensorflow", types.SimpleNamespace(__version__="2.22.0"))
    monkeypatch.setattr(nt, "_installed_version",
                        lambda dist: "2.22.0" if dist == "tensorflow" else "2.3.0")
    with pytest.raises(nacc.IncompatibleRuntimeError,
                       match="tensorflow 2.22.0 is not supported.*tensorflow==2.21.0.*runtime='litert'"):
        nacc.load_delegate(runtime="tensorflow")
    assert nacc.load_delegate(runtime="litert")
    with pytest.raises(ValueError, match="runtime 'tf' is not one of"):
        nacc.load_delegate(runtime="tf")


def test_builtin_names_are_current():
    """delegate/builtin_names.inc is what tools/gen_tflite_builtin_names.py writes."""
    import importlib.util

    path = os.path.join(ROOT, "tools", "gen_tflite_builtin_names.py")
    spec = importlib.util.spec_from_file_location("gen_tflite_builtin_names", path)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    with open(os.path.join(ROOT, "delegate", "builtin_names.inc")) as f:
        assert f.read() == gen.render(), "run tools/gen_tflite_builtin_names.py"


def test_report_of_unused_delegate():
    d = nacc.load_delegate(log_level="off")
    r = d.report()
    assert r.subgraphs == () and r.total_nodes == 0 and "no subgraph" in str(r)
    d.close()
    with pytest.raises(RuntimeError, match="closed"):
        d.report()
    assert np.isscalar(r.claimed_nodes)

"""The kernel-path switch (csrc/common/cpu.h): CPUID detection against
/proc/cpuinfo, forcing each path this CPU has, rejecting the others with the
available ones named, the use_*() predicates per path, the same results from
the units on every path (and 'reference' turning every ISA predicate off), and
the delegate's and the EP's own copies of the switch (nacc_set_kernel_path)."""
from __future__ import annotations

import ctypes
import json

import numpy as np
import pytest

from nacc import _core

ISA_ORDER = ("reference", "avx2", "avx_vnni", "avx512_vnni", "amx")
ISAS = ISA_ORDER[1:]
AVAILABLE = _core.kernel_paths()
UNAVAILABLE = [p for p in ISA_ORDER if p not in AVAILABLE]

# /proc/cpuinfo flag -> the OS register state it needs (Linux clears a flag whose
# XSAVE state the kernel does not enable; CPUID still reports the bit then).
CPUINFO_FLAGS = {"avx2": "os_ymm", "fma": "os_ymm", "avx_vnni": "os_ymm", "avx512f": "os_zmm",
                 "avx512bw": "os_zmm", "avx512dq": "os_zmm", "avx512vl": "os_zmm",
                 "avx512_vnni": "os_zmm", "amx_tile": "os_tile", "amx_int8": "os_tile"}


@pytest.fixture(autouse=True)
def _restore_auto():
    yield
    _core.set_kernel_path("auto")


def _cpuinfo_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def test_available_paths_are_ordered_and_start_with_reference():
    assert AVAILABLE[0] == "reference"
    assert list(AVAILABLE) == [p for p in ISA_ORDER if p in AVAILABLE]
    assert ("avx2" in AVAILABLE) == _core.cpu_has_avx2()
    # Every ISA path above AVX2 includes AVX2.
    if len(AVAILABLE) > 1:
        assert "avx2" in AVAILABLE


def test_detection_agrees_with_proc_cpuinfo():
    flags = _cpuinfo_flags()
    if flags is None:
        pytest.skip("no /proc/cpuinfo")
    features = _core.cpu_features()
    for flag, state in CPUINFO_FLAGS.items():
        if features[state]:
            assert features[flag] == (flag in flags), (flag, features[flag])
        else:
            assert flag not in flags, (flag, state)
    for flag in ("sse4_1", "sha_ni"):  # no OS state: CPUID alone
        assert features[flag] == (flag in flags), (flag, features[flag])
    # Linux lists a flag only when the OS enabled its state, so each flag implies its path.
    if {"avx2", "fma"} <= flags:
        assert "avx2" in AVAILABLE
    if {"avx2", "avx_vnni"} <= flags:
        assert "avx_vnni" in AVAILABLE
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni"} <= flags:
        assert "avx512_vnni" in AVAILABLE
    if "amx" in AVAILABLE:
        assert features["amx_permitted"] and {"amx_tile", "amx_int8"} <= flags


def test_auto_resolves_to_the_best_available_path():
    _core.set_kernel_path("auto")
    assert _core.kernel_path() == "auto"
    assert _core.active_kernel_isa() == AVAILABLE[-1]


@pytest.mark.parametrize("path", AVAILABLE)
def test_forcing_each_available_path(path):
    _core.set_kernel_path(path)
    assert _core.kernel_path() == path
    assert _core.active_kernel_isa() == path
    info = json.loads(_core.kernel_path_json())
    assert info["selected"] == path and info["active"] == path
    assert info["available"] == AVAILABLE and info["best"] == AVAILABLE[-1]
    # Each ISA predicate: on for this path and the available paths below it.
    rank = ISA_ORDER.index(path)
    for isa in ISAS:
        want = isa in AVAILABLE and ISA_ORDER.index(isa) <= rank
        assert _core.uses_isa(isa) == want, (path, isa)
    assert _core.uses_avx2() == (path != "reference")


@pytest.mark.parametrize("path", UNAVAILABLE or [pytest.param(None, marks=pytest.mark.skip(
    reason="this CPU has every ISA path"))])
def test_unavailable_path_is_rejected_naming_the_available_ones(path):
    _core.set_kernel_path("reference")
    with pytest.raises(ValueError, match=f"'{path}' is not available") as e:
        _core.set_kernel_path(path)
    assert "available: auto, " + ", ".join(AVAILABLE) in str(e.value)
    assert _core.kernel_path() == "reference"  # unchanged


@pytest.mark.parametrize("name", ["", "AVX2", "avx512", "sse", "fast"])
def test_unknown_path_name_is_rejected(name):
    with pytest.raises(ValueError, match="unknown kernel path"):
        _core.set_kernel_path(name)
    with pytest.raises(ValueError):
        _core.uses_isa(name)
    assert _core.kernel_path() == "auto"


# ---- the units give the same bits on every path ------------------------------------------

def _conv(rng):
    x = rng.integers(-128, 128, (1, 19, 17, 24), dtype=np.int8)
    w = rng.integers(-127, 128, (40, 3, 3, 24), dtype=np.int8)
    b = rng.integers(-5000, 5000, 40, dtype=np.int32)
    m = rng.integers(1 << 29, 1 << 30, 40, dtype=np.int32)
    s = rng.integers(-10, -6, 40, dtype=np.int32)
    return lambda: _core.conv2d(x, w, b, m, s, stride=(1, 2), padding=(1, 1, 1, 1),
                                input_zero_point=-3, output_zero_point=5)


def _fully_connected(rng):
    x = rng.integers(-128, 128, (3, 300), dtype=np.int8)
    w = rng.integers(-127, 128, (70, 300), dtype=np.int8)
    b = rng.integers(-5000, 5000, 70, dtype=np.int32)
    m = np.full(70, 1 << 30, np.int32)
    s = np.full(70, -9, np.int32)
    return lambda: _core.fully_connected(x, w, b, m, s, input_zero_point=7, output_zero_point=-2)


def _depthwise(rng):
    x = rng.integers(-128, 128, (1, 23, 21, 32), dtype=np.int8)
    w = rng.integers(-127, 128, (1, 3, 3, 32), dtype=np.int8)
    b = rng.integers(-2000, 2000, 32, dtype=np.int32)
    m = rng.integers(1 << 29, 1 << 30, 32, dtype=np.int32)
    s = np.full(32, -7, np.int32)
    return lambda: _core.depthwise_conv2d(x, w, b, m, s, padding=(1, 1, 1, 1),
                                          input_zero_point=4, output_zero_point=-1)


def _max_pool(rng):
    x = rng.integers(-128, 128, (1, 30, 28, 48), dtype=np.int8)
    return lambda: _core.max_pool(x, kernel=(3, 3), stride=(2, 2), padding=(1, 1, 1, 1))


UNIT_CASES = {"conv2d 3x3": _conv, "fully_connected": _fully_connected,
              "depthwise 3x3": _depthwise, "max_pool 3x3/2": _max_pool}


@pytest.mark.parametrize("unit", list(UNIT_CASES))
def test_units_give_the_same_bits_on_every_path(unit):
    fn = UNIT_CASES[unit](np.random.default_rng(13))
    results = {}
    for path in AVAILABLE:
        _core.set_kernel_path(path)
        results[path] = fn()
    want = results["reference"]
    for path, got in results.items():
        assert got.dtype == want.dtype and got.shape == want.shape, (unit, path)
        diff = np.argwhere(got != want)
        assert diff.size == 0, f"{unit} [{path}]: {len(diff)} of {want.size} differ from reference"


# ---- the libraries' own copies of the switch ----------------------------------------------

def _libraries():
    from nacc import host_bench

    return host_bench.kernel_path_libraries()


def test_every_library_exports_the_switch():
    libs = _libraries()
    assert {"nacc._core", "delegate", "ep"} <= set(libs)


@pytest.mark.parametrize("path", AVAILABLE)
def test_set_kernel_path_reaches_every_library(path):
    from nacc import host_bench

    host_bench.set_kernel_path(path)
    try:
        for name, info in host_bench.kernel_path_info().items():
            assert info["selected"] == path and info["active"] == path, name
            assert info["available"] == AVAILABLE, name
    finally:
        host_bench.set_kernel_path("auto")
    for name, info in host_bench.kernel_path_info().items():
        assert info["selected"] == "auto" and info["active"] == AVAILABLE[-1], name


def test_library_switch_is_per_library_and_rejects_bad_names():
    from nacc import tflite

    lib = ctypes.CDLL(tflite.delegate_library_path())
    lib.nacc_set_kernel_path.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.nacc_set_kernel_path.restype = ctypes.c_int
    err = ctypes.create_string_buffer(256)
    try:
        assert lib.nacc_set_kernel_path(b"reference", err, len(err)) == 0
        assert _core.kernel_path() == "auto"  # nacc._core's copy is another one
        assert lib.nacc_set_kernel_path(b"nonsense", err, len(err)) == 1
        assert b"unknown kernel path 'nonsense'" in err.value
        for path in UNAVAILABLE:
            assert lib.nacc_set_kernel_path(path.encode(), err, len(err)) == 1
            assert b"not available" in err.value
        # A short error buffer is truncated and NUL-terminated, never overrun.
        small = ctypes.create_string_buffer(8)
        assert lib.nacc_set_kernel_path(b"nonsense", small, 4) == 1
        assert len(small.value) == 3
    finally:
        assert lib.nacc_set_kernel_path(b"auto", err, len(err)) == 0


def test_delegate_is_bit_exact_on_every_path():
    tf = pytest.importorskip("tensorflow")
    import keras_models
    from nacc import host_bench

    import nacc

    model = keras_models.converted("digits_cnn")
    ref = tf.lite.Interpreter(model_content=model, experimental_op_resolver_type=(
        tf.lite.experimental.OpResolverType.BUILTIN_REF))
    ref.allocate_tensors()
    d = ref.get_input_details()[0]
    x = np.random.default_rng(3).integers(-128, 128, d["shape"], dtype=np.int8)
    ref.set_tensor(d["index"], x)
    ref.invoke()
    want = ref.get_tensor(ref.get_output_details()[0]["index"])
    for path in AVAILABLE:
        host_bench.set_kernel_path(path)
        try:
            delegate = nacc.load_delegate(cores=2, log_level="off")
            it = tf.lite.Interpreter(model_content=model, experimental_delegates=[delegate],
                                     experimental_op_resolver_type=(
                                         tf.lite.experimental.OpResolverType.BUILTIN_REF))
            it.allocate_tensors()
            it.set_tensor(it.get_input_details()[0]["index"], x)
            it.invoke()
            got = it.get_tensor(it.get_output_details()[0]["index"])
            assert delegate.report().claimed_nodes > 0
        finally:
            host_bench.set_kernel_path("auto")
        np.testing.assert_array_equal(got, want, err_msg=f"delegate [{path}]")


def test_prepared_weights_follow_a_path_switch_after_prepare():
    """The plan packs each filter once for the path active at prepare time (PackedFilter);
    switching paths afterwards packs the other form on first use and stays bit-exact."""
    tf = pytest.importorskip("tensorflow")
    import keras_models
    from nacc import host_bench

    import nacc

    model = keras_models.converted("digits_cnn")
    resolver = tf.lite.experimental.OpResolverType.BUILTIN_REF
    ref = tf.lite.Interpreter(model_content=model, experimental_op_resolver_type=resolver)
    ref.allocate_tensors()
    d = ref.get_input_details()[0]
    x = np.random.default_rng(4).integers(-128, 128, d["shape"], dtype=np.int8)
    ref.set_tensor(d["index"], x)
    ref.invoke()
    want = ref.get_tensor(ref.get_output_details()[0]["index"])
    it = tf.lite.Interpreter(model_content=model, experimental_op_resolver_type=resolver,
                             experimental_delegates=[nacc.load_delegate(cores=2, log_level="off")])
    it.allocate_tensors()  # prepared on 'auto'
    it.set_tensor(it.get_input_details()[0]["index"], x)
    try:
        for path in list(reversed(AVAILABLE)) + ["auto"]:
            host_bench.set_kernel_path(path)
            it.invoke()
            got = it.get_tensor(it.get_output_details()[0]["index"])
            np.testing.assert_array_equal(got, want, err_msg=f"delegate switched to [{path}]")
    finally:
        host_bench.set_kernel_path("auto")

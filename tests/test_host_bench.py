"""nacc bench --host (nacc.host_bench) in quick mode: the JSON has every promised
field, the delegate is bit-exact to BUILTIN_REF in every configuration (each
kernel path, core count and thread count) and on the per-invoke-overhead model,
the EP gives the same bits on every path; the argument checks. Speed is never
asserted here (docs/host_speed.md)."""
from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("onnxruntime")

from nacc import _core  # noqa: E402

CORES = ["1", "2"]
THREADS = [1, 2]
TIMING = ["median", "min", "runs"]
TFLITE_BASELINES = ["xnnpack", "tflite_optimized", "builtin_ref"]
TFLITE_FIELDS = ["model", "threads", "runs", "warmup", "ms", "exact", "nacc", "nodes",
                 "ratio_to_xnnpack"]
TFLITE_NACC_FIELDS = TIMING + ["ratio_to_xnnpack", "ratio_to_builtin_ref", "exact"]
PREPARE_FIELDS = ["cold_ms", "cold_compile_ms", "cached_ms", "cached_compile_ms",
                  "cached_all_hits", "partitions"]
ONNX_FIELDS = ["model", "threads", "runs", "warmup", "ms", "session_create_ms", "nacc", "nodes"]
ONNX_NACC_FIELDS = TIMING + ["ratio_to_cpu_ep", "exact", "session_create"]
EXACT_FIELDS = ["bit_exact", "differing", "elements", "max_abs_diff"]


@pytest.fixture(scope="module")
def host_run(tmp_path_factory):
    import keras_models
    from nacc import host_bench

    # The quick models come from the tests' model cache (tests/keras_models.py).
    old = os.environ.get("NACC_MODEL_CACHE")
    os.environ["NACC_MODEL_CACHE"] = keras_models.CACHE_DIR
    path = tmp_path_factory.mktemp("host_bench") / "host.json"
    try:
        code = host_bench.main(["--quick", "--cores", ",".join(CORES), "--runs", "2",
                                "--prepare-runs", "1", "--kernel-path", "all",
                                "--quiet", "--json", str(path)])
    finally:
        if old is None:
            os.environ.pop("NACC_MODEL_CACHE", None)
        else:
            os.environ["NACC_MODEL_CACHE"] = old
    assert code == 0
    with open(path) as f:
        return json.load(f)


def _has(d, keys, what):
    for k in keys:
        assert k in d, f"{what}: no {k!r}"


def test_header_names_cpu_isa_and_paths(host_run):
    r = host_run
    _has(r, ["date", "command", "cpu", "nacc", "versions", "settings", "tflite", "prepare",
             "onnx", "overhead"], "report")
    _has(r["cpu"], ["model", "machine", "logical_cpus", "isa_flags", "features"], "cpu")
    assert set(r["cpu"]["isa_flags"]) == {"avx2", "avx512f", "avx512_vnni", "avx_vnni",
                                          "amx_int8"}
    assert r["nacc"]["available"] == _core.kernel_paths()
    assert r["settings"]["kernel_paths"] == _core.kernel_paths()  # 'all'
    for lib in ("nacc._core", "delegate", "ep"):
        assert r["nacc"]["libraries"][lib]["available"] == _core.kernel_paths(), lib
    assert set(r["versions"]) == {"tensorflow", "onnxruntime"}


def test_tflite_rows_are_complete_and_bit_exact(host_run):
    rows = host_run["tflite"]
    assert sorted(r["threads"] for r in rows) == THREADS
    for r in rows:
        what = f"{r['model']} threads={r['threads']}"
        _has(r, TFLITE_FIELDS, what)
        for k in TFLITE_BASELINES:
            _has(r["ms"][k], TIMING, f"{what} {k}")
            assert 0 < r["ms"][k]["min"] <= r["ms"][k]["median"]
        assert set(r["nacc"]) == set(_core.kernel_paths())
        assert r["nodes"]["claimed"] > 0
        for path, per in r["nacc"].items():
            assert sorted(per) == CORES, (what, path)
            for cores, v in per.items():
                _has(v, TFLITE_NACC_FIELDS, f"{what} {path} {cores}c")
                _has(v["exact"], EXACT_FIELDS, f"{what} {path} {cores}c exact")
                assert v["exact"]["bit_exact"] and v["exact"]["differing"] == 0, (what, path, cores)
                assert v["ratio_to_xnnpack"] == pytest.approx(
                    v["median"] / r["ms"]["xnnpack"]["median"])


def test_prepare_rows_compare_cold_and_cached(host_run):
    (p,) = host_run["prepare"]
    _has(p, ["model", "runs", "builtin_ref_ms", "cores"], "prepare")
    assert sorted(p["cores"]) == CORES
    for cores, v in p["cores"].items():
        _has(v, PREPARE_FIELDS, f"prepare {cores}c")
        assert v["cached_all_hits"], cores
        assert v["cold_compile_ms"] > 0 and v["partitions"] >= 1


def test_ep_rows_are_complete_and_the_same_on_every_path(host_run):
    rows = host_run["onnx"]
    assert sorted(r["threads"] for r in rows) == THREADS
    for r in rows:
        what = f"{r['model']} threads={r['threads']}"
        _has(r, ONNX_FIELDS, what)
        _has(r["ms"]["ort_cpu"], TIMING, what)
        assert r["nodes"]["claimed"] > 0
        exact = set()
        for path, per in r["nacc"].items():
            assert sorted(per) == CORES, (what, path)
            for cores, v in per.items():
                _has(v, ONNX_NACC_FIELDS, f"{what} {path} {cores}c")
                _has(v["exact"], EXACT_FIELDS, f"{what} {path} {cores}c exact")
                exact.add((v["exact"]["differing"], v["exact"]["max_abs_diff"]))
        # Against the CPU EP the EP is as exact as docs/onnxruntime_ep.md says (not
        # always bit-exact); across kernel paths and core counts nacc gives one result.
        assert len(exact) == 1, (what, exact)


def test_overhead_is_measured_on_a_one_op_model_and_bit_exact(host_run):
    o = host_run["overhead"]
    _has(o, ["model", "invokes_per_sample", "target_us", "builtin_ref_us", "nacc"], "overhead")
    assert o["target_us"] == 30.0
    assert set(o["nacc"]) == set(_core.kernel_paths())
    for path, v in o["nacc"].items():
        _has(v, ["invoke_us", "overhead_us", "overhead_min_us", "claimed", "exact"], path)
        assert v["claimed"] == "1/1", path  # the delegate ran the one ADD
        assert v["exact"]["bit_exact"], path
        assert v["overhead_us"] == pytest.approx(
            v["invoke_us"]["median"] - o["builtin_ref_us"]["median"])


def test_markdown_has_every_table(host_run):
    from nacc import host_bench

    text = host_bench.markdown(host_run)
    for heading in ("## TFLite, 1 host thread", "## TFLite, 2 host threads", "## Prepare",
                    "## ONNX Runtime EP vs CPU EP, 1 intra-op thread",
                    "## ONNX Runtime EP vs CPU EP, 2 intra-op threads",
                    "## EP session creation", "## Fixed per-invoke overhead"):
        assert heading in text, heading
    assert "nacc bit-exact" in text
    assert host_run["cpu"]["model"] in text
    for path in _core.kernel_paths():
        assert f"nacc 1c [{path}]" in text


@pytest.mark.parametrize("argv, message", [
    (["--kernel-path", "amx9"], "not a path this CPU has"),
    (["--cores", "3"], "allowed: 1, 2, 4, 8, 16, 32"),
    (["--threads", "0"], "--threads"),
    (["--runs", "0"], "must be >= 1"),
    (["--sections", "tflite,gpu"], "choose from"),
    (["--tflite-models", "nonsense"], "unknown model"),
])
def test_bad_arguments_are_rejected(argv, message, capsys):
    from nacc import host_bench

    with pytest.raises(SystemExit) as e:
        host_bench.parse_args(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_kernel_path_all_and_repeats_expand_in_order():
    from nacc import host_bench

    assert host_bench.parse_args(["--kernel-path", "all"]).kernel_paths == _core.kernel_paths()
    assert host_bench.parse_args(
        ["--kernel-path", "reference", "--kernel-path", "auto", "--kernel-path", "reference"]
    ).kernel_paths == ["reference", "auto"]
    assert host_bench.parse_args([]).kernel_paths == ["auto"]


def test_nacc_bench_host_reaches_the_host_benchmark(capsys):
    from nacc import cli

    with pytest.raises(SystemExit) as e:
        cli.main(["bench", "--host", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "nacc bench --host" in out and "--kernel-path" in out

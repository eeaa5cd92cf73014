"""nacc bench (quick mode: runs, JSON fields, charts) and nacc compare (zero
differences on a small model; a divergence injected into one op's compiled
Program is named as the first diverging tensor, found inside a partition from
the runtime's debug dumps)."""
from __future__ import annotations

import json
import os
import struct

import numpy as np
import pytest

from delegate_models import ModelBuilder

pytest.importorskip("tensorflow")


# ---- bench ---------------------------------------------------------------------------------

BENCH_MODEL_FIELDS = ["model", "runtime", "oracle", "host_ms", "host_cores", "exact", "npu",
                      "nodes", "partitions", "fallbacks", "host", "per_layer", "source"]
# nacc.results.npu plus the latency at each bench clock: the same keys as nacc report's totals.
NPU_FIELDS = ["cycles", "bound_cycles", "cycles_vs_bound", "macs", "utilization", "dma_bytes",
              "min_dma_bytes", "dma_vs_min", "sram_high_water", "cores", "clock_mhz", "latency_us",
              "latency_us_by_clock"]
TIMING_FIELDS = ["runs", "mean", "std", "min", "median", "p50", "p90", "p99", "max",
                 "throughput_per_s"]


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory):
    from nacc import bench

    # The default models share the tests' model cache (tests/keras_models.py),
    # so the digits CNN the other tests convert is not built a second time.
    import keras_models

    os.environ["NACC_MODEL_CACHE"] = keras_models.CACHE_DIR
    out = tmp_path_factory.mktemp("bench")
    json_path, plot_dir = out / "bench.json", out / "plots"
    assert bench.main(["--quick", "--json", str(json_path), "--plot", str(plot_dir)]) == 0
    with open(json_path) as f:
        return json.load(f), plot_dir


def test_bench_quick_json_has_the_promised_fields(bench_run):
    report, _ = bench_run
    for key in ["date", "cpu", "nacc_version", "runs", "warmup", "cores", "clocks_mhz", "models"]:
        assert key in report, key
    assert report["cores"] == [1, 8] and report["clocks_mhz"] == [500, 1000]
    runtimes = {m["runtime"] for m in report["models"]}
    assert runtimes == {"tflite", "onnxruntime"}
    for m in report["models"]:
        for key in BENCH_MODEL_FIELDS:
            assert key in m, (m["model"], key)
        assert m["nodes"]["claimed"] > 0 and m["partitions"] >= 1
        for t in m["host_ms"].values():
            assert sorted(t) == sorted(TIMING_FIELDS)
            assert 0 < t["min"] <= t["median"] <= t["p99"] <= t["max"]
            assert t["runs"] == report["runs"]
        for cores in ("1", "8"):
            n = m["npu"][cores]
            assert sorted(n) == sorted(NPU_FIELDS)
            assert n["cycles"] > 0 and n["cores"] == int(cores)
            by = n["latency_us_by_clock"]
            assert by["500"] == pytest.approx(2 * by["1000"]) == pytest.approx(n["cycles"] / 500)
            # Both runtimes now report the device's DMA bytes, minimum and SRAM peak.
            assert n["dma_bytes"] >= n["min_dma_bytes"] > 0 and 0 < n["sram_high_water"] <= 65536
            assert n["bound_cycles"] > 0 and n["cycles"] >= n["bound_cycles"]
        # One MAC definition: useful MACs as the device counts them, the same for every core
        # count and the same as the per-op rows.
        assert m["npu"]["1"]["macs"] == m["npu"]["8"]["macs"] == sum(l["macs"] for l in m["per_layer"])
        # More cores: not slower.
        assert m["npu"]["8"]["cycles"] <= m["npu"]["1"]["cycles"]
    tfl = next(m for m in report["models"] if m["runtime"] == "tflite")
    # The delegate is bit-exact to BUILTIN_REF; cycles never beat the performance bound.
    assert tfl["exact"]["bit_exact"] and tfl["exact"]["differing"] == 0
    assert set(tfl["exact"]) == {"bit_exact", "differing", "elements", "max_abs_diff", "outputs",
                                 "bit_exact_all_cores"}
    assert set(tfl["host_ms"]) == {"xnnpack", "builtin_ref", "nacc"}
    assert tfl["per_layer"] and all(r["cycles"] >= 0 for r in tfl["per_layer"])
    ort_m = next(m for m in report["models"] if m["runtime"] == "onnxruntime")
    assert set(ort_m["host_ms"]) == {"ort_cpu", "nacc_ep"}
    # The same digits CNN through both runtimes: the same useful MACs.
    assert tfl["npu"]["1"]["macs"] == ort_m["npu"]["1"]["macs"]


def test_bench_quick_writes_charts(bench_run):
    report, plot_dir = bench_run
    files = sorted(os.listdir(plot_dir))
    assert any(f.startswith("latency_vs_cores_digits_cnn") for f in files)
    assert any(f.startswith("per_layer_digits_cnn") for f in files)
    for f in files:
        with open(plot_dir / f, "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_bench_markdown_and_bad_arguments(bench_run, capsys):
    from nacc import bench

    report, _ = bench_run
    text = bench.markdown(report)
    assert "| digits_cnn |" in text and "500 MHz" in text and "1000 MHz" in text
    for argv, match in [(["--cores", "3"], "not allowed"), (["--runs", "0"], "--runs"),
                        (["--cores", "1,2", "--host-cores", "8"], "--host-cores")]:
        with pytest.raises(SystemExit):
            bench.parse_args(argv)
        assert match in capsys.readouterr().err
    from nacc.cli import CliError

    with pytest.raises(CliError, match="neither"):
        bench._jobs(bench.parse_args(["no_such_model"]))


def test_bench_int16_quick_runs_a_16x8_model_against_builtin_ref(tmp_path, monkeypatch):
    """`nacc bench --int16 --quick`: the DS-CNN keyword-spotting model converted
    16x8 (int16 activations, int8 weights) against BUILTIN_REF. XNNPACK takes no
    int16 tensors, so the fast column is TFLite's builtin kernels and the row says
    so; the delegate is bit-exact at every simulated core count."""
    from nacc import bench, models

    import keras_models

    monkeypatch.setenv("NACC_MODEL_CACHE", keras_models.CACHE_DIR)
    out = tmp_path / "bench16.json"
    assert bench.main(["--int16", "--quick", "--runs", "1", "--json", str(out),
                       "--no-progress"]) == 0
    report = json.loads(out.read_text())
    (m,) = report["models"]
    assert m["model"] == models.BENCH_INT16_MODELS[0] == "ds_cnn_kws_16x8"
    assert m["runtime"] == "tflite" and m["int16"] is True
    assert m["exact"]["bit_exact"] and m["exact"]["bit_exact_all_cores"], m["exact"]
    assert m["nodes"]["claimed"] > 0 and m["npu"]["8"]["cycles"] <= m["npu"]["1"]["cycles"]
    assert "XNNPACK takes no int16" in bench.markdown(report)
    # The 16x8 models are TFLite only.
    from nacc.cli import CliError

    with pytest.raises(CliError, match="no ONNX counterpart"):
        bench._jobs(bench.parse_args(["ds_cnn_kws_16x8", "--runtime", "onnx"]))
    with pytest.raises(ValueError, match="no ONNX counterpart"):
        models.onnx_model_path("ds_cnn_kws_16x8")


# ---- compare -------------------------------------------------------------------------------

def small_model() -> bytes:
    """conv -> conv -> depthwise -> conv (one partition) -> softmax (host)."""
    m = ModelBuilder(seed=7)
    x = m.input((1, 12, 12, 3), scale=0.05, zp=-3)
    a = m.conv(x, 8, out_scale=0.1, out_zp=-5, name="conv_a")
    b = m.conv(a, 8, out_scale=0.12, out_zp=7, activation="NONE", name="conv_b")
    c = m.depthwise(b, name="dw_c")
    d = m.conv(c, 4, k=1, out_scale=0.2, out_zp=1, name="conv_d")
    r = m.reshape(d, (1, 12 * 12 * 4), name="flat")
    return m.build([m.softmax(r, name="probs")])


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "small.tflite"
    path.write_bytes(small_model())
    return path


def run_compare(args, tmp_path):
    from nacc import compare

    out = tmp_path / "compare.json"
    code = compare.main([*map(str, args), "--json", str(out)])
    with open(out) as f:
        return code, json.load(f)


def test_compare_reports_zero_differences(model_file, tmp_path, capsys):
    code, result = run_compare([model_file], tmp_path)
    text = capsys.readouterr().out
    assert code == 0 and result["first_divergence"] is None, text
    assert result["partitions"] == 1 and result["claimed"] == 5  # softmax stays on the host
    assert "No tensor differs." in text
    names = [r["tensor"] for r in result["tensors"]]
    assert names == ["conv_a", "conv_b", "dw_c", "conv_d", "flat", "probs"]
    for r in result["tensors"]:
        assert r["differing"] == 0 and r["max_abs_diff"] == 0, r
    # The partition's intermediate tensors come from the device's debug dumps.
    where = {r["tensor"]: (r["where"], r["source"]) for r in result["tensors"]}
    assert where["conv_a"] == ("nacc", "device dump")
    assert where["dw_c"] == ("nacc", "device dump")
    assert where["probs"] == ("host", "interpreter")


def corrupt_op_output_offset(program_bytes: bytes, op_name: str, delta: int) -> bytes:
    """The Program with the OUT_FM_OFFSET (output zero point) that op `op_name`
    writes shifted by `delta`: the device then computes a wrong output for that
    op only (the next op writes its own NACC_FM_OFFSET)."""
    from nacc import _core

    p = _core.Program.from_bytes(program_bytes)
    op = next(o for o in p.ops if o["name"] == op_name)
    # Format version 2 records where the op's output lies (the debug dumps read it there).
    assert op["output_name"] == op_name and op["output_region"] >= 0
    assert op["output_size"] == int(np.prod(op["output_shape"]))
    assert _core.Program.from_bytes(p.to_bytes()).ops == p.ops
    words = p.commands
    cmds = [c for c in _core.decode_stream(words)
            if op["first_word"] <= c["word"] < op["end_word"] and c.get("register") == "NACC_FM_OFFSET"]
    assert cmds, f"{op_name} writes no NACC_FM_OFFSET"
    c = cmds[0]
    out = (c["payload"] >> 9) & 0x1FF
    out = out - 512 if out >= 256 else out
    new = ((out + delta) & 0x1FF) << 9 | (c["payload"] & ~(0x1FF << 9) & 0xFFFFFFFF)
    words[c["word"] + 1] = new
    p.commands = words
    return p.to_bytes()


def test_compare_names_an_injected_divergence(model_file, tmp_path, capsys):
    import nacc
    from nacc import _core
    from tflite_builder import make_interpreter

    cache = tmp_path / "cache"
    d = nacc.load_delegate(cache_dir=str(cache), log_level="off")
    it = make_interpreter(model_file.read_bytes(), delegates=[d])
    it.allocate_tensors()
    (entry,) = list(cache.glob("*.nacc"))
    # the Program after the entry's header (support/cache_entry.h), which stays
    # intact: the entry is still this partition's, its Program now wrong
    data = entry.read_bytes()
    at = 12
    for _ in range(4):
        at += 4 + struct.unpack_from("<I", data, at)[0]
    program = corrupt_op_output_offset(data[at + 8 + 16:], "conv_b", 9)
    # the header's payload size and payload digest (Digest128, u64 hi, u64 lo) of the new Program
    digest = _core._test_digest128(program)
    entry.write_bytes(data[:at] + struct.pack("<QQQ", len(program), int(digest[:16], 16),
                                              int(digest[16:], 16)) + program)
    code, result = run_compare([model_file, "--option", f"cache_dir={cache}"], tmp_path)
    text = capsys.readouterr().out
    assert code == 1
    first = result["first_divergence"]
    assert first["tensor"] == "conv_b" and first["where"] == "nacc", text
    assert "First divergence: tensor 'conv_b'" in text
    rows = {r["tensor"]: r for r in result["tensors"]}
    assert rows["conv_a"]["differing"] == 0
    assert rows["conv_b"]["differing"] > 0 and rows["conv_b"]["max_abs_diff"] >= 1


def test_debug_dump_dir_is_validated_and_documented(tmp_path):
    import nacc
    from nacc import tflite as nt

    specs = {s.name: s for s in nt.delegate_option_specs()}
    assert "debug_dump_dir" in specs
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match="debug_dump_dir"):
        nacc.load_delegate(debug_dump_dir=str(blocker / "sub"))
    with pytest.raises(ValueError, match="must be a path"):
        nacc.load_delegate(debug_dump_dir=3)
    doc = open(os.path.join(os.path.dirname(__file__), "..", "docs", "tflite_delegate.md")).read()
    assert "debug_dump_dir" in doc


def test_compare_onnx_lists_the_quantized_tensors(tmp_path, capsys):
    """ONNX: the quantized intermediate tensors become graph outputs of both
    sessions; each is compared (the EP is not bit-exact to the CPU EP, so only
    the structure and the claim are checked here)."""
    pytest.importorskip("onnxruntime")
    import onnx_models

    path = tmp_path / "cnn.onnx"
    path.write_bytes(onnx_models.quantize(onnx_models.small_cnn(), per_channel=True))
    code, result = run_compare([path], tmp_path)
    capsys.readouterr()
    assert code in (0, 1) and result["runtime"] == "onnxruntime" and result["claimed"] > 0
    rows = result["tensors"]
    assert len(rows) >= 3 and all(r["differing"] is not None for r in rows)
    assert any(r["where"] == "nacc" for r in rows)
    assert rows[-1]["op"] == "graph output"
    for r in rows:
        assert r["differing"] == 0 or r["max_abs_diff"] > 0


def test_one_result_schema_for_report_compare_and_bench(bench_run, model_file, tmp_path, capsys):
    """report's exactness, compare's per-tensor rows and bench's exactness use the keys of
    nacc.results (bit_exact, differing, elements, max_abs_diff), and report's totals are
    bench's NPU records (issue 12, item 7)."""
    from nacc import cli, results

    diff_keys = set(results.diff(np.zeros(3), np.zeros(3)))
    agreement_keys = set(results.agreement([np.zeros(3)], [np.zeros(3)]))
    code, cmp_result = run_compare([model_file], tmp_path)
    assert code == 0
    for row in cmp_result["tensors"]:
        assert diff_keys <= set(row), row
    for out in cmp_result["outputs"]:
        assert diff_keys <= set(out)
    js = tmp_path / "report.json"
    assert cli.main(["report", str(model_file), "--check", "--json", str(js)]) == 0
    rep = json.loads(js.read_text())
    assert set(rep["exactness"]) == agreement_keys | {"reference"}
    report, _ = bench_run
    for m in report["models"]:
        assert agreement_keys <= set(m["exact"])
        assert set(rep["totals"]) == set(m["npu"]["1"]) - {"latency_us_by_clock"}
    capsys.readouterr()


def test_compare_onnx_after_more_sessions_than_the_report_list_keeps(tmp_path, capsys):
    """The EP keeps its last 32 partition reports; compare took "the reports
    after the list's old length", so after 32 sessions in one process it saw
    none and printed claimed 0 (found by running tests/test_reliability.py
    before this file). Reports now carry a process-wide ``seq``."""
    pytest.importorskip("onnxruntime")
    import onnx_models
    import nacc.onnxruntime as nort

    model = onnx_models.quantize(onnx_models.small_cnn())
    for _ in range(34):
        nort.create_session(model, {"cores": "1", "log_level": "off"})
    reports = nort.partition_reports()
    assert len(reports) == 32 and [r["seq"] for r in reports] == sorted(r["seq"] for r in reports)
    seq = nort.report_seq()
    assert seq == reports[-1]["seq"] and not nort.reports_after(seq)
    path = tmp_path / "cnn.onnx"
    path.write_bytes(model)
    code, result = run_compare([path], tmp_path)
    capsys.readouterr()
    assert code in (0, 1) and result["claimed"] > 0 and result["partitions"] >= 1

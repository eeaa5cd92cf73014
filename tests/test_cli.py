"""The ``nacc`` command line (python/nacc/cli.py): each command on a small
model produces what it promises — reports that list every declined node with
its reason and per-layer numbers from the run's per-op counters, Program and
disassembly files that load, a valid Chrome trace with one track per core, the
supported-ops document, the demo — and the per-op results in the TFLite
delegate's and the ONNX Runtime EP's reports add up to the partition totals."""
from __future__ import annotations

import json
import os
import re
import sys
import types

import numpy as np
import pytest

import nacc
from nacc import _core, cli
from delegate_models import ModelBuilder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def declining_model() -> bytes:
    """Convs the NPU runs around a SOFTMAX (host-only kind) and a stride-4
    DEPTHWISE_CONV_2D (past NACC's stride limit 3, with no space-to-depth
    form): 2 declined nodes, 3 partitions."""
    m = ModelBuilder()
    x = m.input((1, 16, 16, 8))
    a = m.conv(x, 16, name="c0")
    b = m.softmax(a, name="softmax")
    c = m.conv(b, 16, name="c1")
    d = m.depthwise(c, stride=4, name="stride4")
    e = m.conv(d, 8, k=1, name="c2")
    return m.build([e])


DECLINED = {"softmax": "npu_op_kind", "stride4": "stride"}
# Useful MACs of the claimed convs, from the shapes: a 3x3 SAME window over 16
# positions touches 16*3 - 2 = 46 real input rows (and columns) in total.
USEFUL_MACS = {"c0": 46 * 46 * 8 * 16, "c1": 46 * 46 * 16 * 16, "c2": 4 * 4 * 16 * 8}


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "declining.tflite"
    path.write_bytes(declining_model())
    return str(path)


def run_cli(capsys, *argv):
    rc = cli.main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_report_lists_declined_nodes_and_layers(model_path, tmp_path, capsys):
    js = tmp_path / "r.json"
    rc, out, _ = run_cli(capsys, "report", model_path, "--cores", "2", "--json", str(js), "--check",
                         "--layers")
    assert rc == 0
    rep = json.loads(js.read_text())
    by_name = {d["name"]: d for d in rep["declined"]}
    assert set(DECLINED) <= set(by_name)
    for name in DECLINED:
        assert by_name[name]["reasons"], name
        assert f"'{name}'" in out and by_name[name]["reasons"][0] in out
    assert "stride" in by_name["stride4"]["reasons"][0]
    assert len(rep["partitions"]) == 3 and rep["exactness"]["bit_exact"]
    assert "bit-exact" in out and "Layers of partition 0" in out
    for p in rep["partitions"]:
        layers = [l for l in p["layers"] if l["op"] >= 0]
        assert layers and all(l["cycles"] > 0 and l["bound_cycles"] > 0 for l in layers)
        assert {l["name"]: l["macs"] for l in layers}.items() <= USEFUL_MACS.items()
        assert sum(l["dma_bytes"] for l in p["layers"]) == p["dma_bytes"]
        assert 0 <= p["cycles"] - max(l["end"] for l in p["layers"]) < 64  # STOP etc.
        assert all(len(l["busy_cycles"]) == 2 for l in layers)
        assert 0 < p["utilization"] <= 1
    assert rep["totals"]["cycles"] == sum(p["cycles"] for p in rep["partitions"])


def test_delegate_report_last_ops_add_up(model_path):
    """The delegate's report carries the last Invoke per Program op (TFLite side of task A)."""
    from nacc import model_report

    report = model_report.run_tflite(open(model_path, "rb").read(),
                                     model_report.HwOptions(cores=4))[0]
    for p in report.partitions:
        ops = p.last_ops
        assert [o["name"] for o in ops if o["op"] >= 0]
        assert sum(o["macs"] for o in ops) == sum(USEFUL_MACS[o["name"]] for o in ops)
        assert sum(o["dma_read_bytes"] + o["dma_write_bytes"] for o in ops) == p.last_dma_bytes
        assert max(o["sram_high_water"] for o in ops) == p.sram_peak
        assert 0 <= p.last_cycles - max(o["end"] for o in ops) < 64
        assert all(len(o["cores"]) == 4 for o in ops)


def test_compile_writes_programs_disassembly_and_report(model_path, tmp_path, capsys):
    out_dir = tmp_path / "out"
    rc, out, _ = run_cli(capsys, "compile", model_path, "-o", str(out_dir))
    assert rc == 0
    rep = json.loads((out_dir / "report.json").read_text())
    assert (out_dir / "report.txt").read_text().startswith(model_path)
    programs = sorted(out_dir.glob("*.program"))
    assert len(programs) == len(rep["partitions"]) == 3
    for p in rep["partitions"]:
        prog = _core.Program.from_bytes((out_dir / p["program_file"]).read_bytes())
        assert [o["name"] for o in prog.ops] == [l["name"] for l in p["layers"] if l["op"] >= 0]
        listing = (out_dir / p["program_file"].replace(".program", ".txt")).read_text()
        assert "NPU_OP_STOP" in listing


def test_disasm_prints_registers(model_path, tmp_path, capsys):
    out_dir = tmp_path / "out"
    assert run_cli(capsys, "compile", model_path, "-o", str(out_dir))[0] == 0
    program = sorted(out_dir.glob("*.program"))[0]
    rc, out, _ = run_cli(capsys, "disasm", str(program))
    assert rc == 0
    assert "NPU_OP_STOP" in out and "NPU_SET_" in out and "; op 0: CONV_2D" in out
    bad = tmp_path / "bad.program"
    bad.write_bytes(b"not a program")
    rc, _, err = run_cli(capsys, "disasm", str(bad))
    assert rc == 1 and "not a valid Program" in err


@pytest.mark.parametrize("cores", [1, 4])
def test_trace_is_chrome_json_with_one_track_per_core(model_path, tmp_path, capsys, cores):
    path = tmp_path / "trace.json"
    rc, out, _ = run_cli(capsys, "trace", model_path, "-o", str(path), "--cores", str(cores),
                         "--clock-mhz", "1000")
    assert rc == 0
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    assert isinstance(events, list) and events
    for e in events:
        assert e["ph"] in ("X", "M") and isinstance(e["pid"], int) and isinstance(e["name"], str)
        if e["ph"] == "X":
            assert isinstance(e["tid"], int) and e["ts"] >= 0 and e["dur"] >= 0
    core_tracks = {e["tid"]: e["args"]["name"] for e in events
                   if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == 1}
    assert core_tracks == {c: f"core {c}" for c in range(cores)}
    compute = [e for e in events if e.get("cat") == "compute"]
    assert {e["tid"] for e in compute} == set(range(cores))
    assert {"c0", "c1", "c2"} <= {e["name"] for e in compute}
    cats = {e.get("cat") for e in events}
    assert {"DMA read", "DMA write", "op"} <= cats
    # Compute spans of one core never overlap (they are merged per op, in order).
    for c in range(cores):
        spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in compute if e["tid"] == c)
        assert all(a[1] <= b[0] + 1e-9 for a, b in zip(spans, spans[1:]))


def test_supported_ops_prints_the_document(capsys):
    rc, out, _ = run_cli(capsys, "supported-ops")
    assert rc == 0
    with open(os.path.join(ROOT, "docs", "supported_ops.md"), encoding="utf-8") as f:
        assert out == f.read()


def test_bench_and_compare_are_delegated(monkeypatch, capsys):
    calls = []
    fake = types.ModuleType("nacc.bench")
    fake.main = lambda argv: calls.append(argv) or 0
    monkeypatch.setitem(sys.modules, "nacc.bench", fake)
    assert cli.main(["bench", "--quick", "x.tflite"]) == 0
    assert calls == [["--quick", "x.tflite"]]
    monkeypatch.setitem(sys.modules, "nacc.compare", None)  # its import fails: ModuleNotFoundError
    assert cli.main(["compare", "m.tflite"]) == 2
    assert "no nacc.compare module" in capsys.readouterr().err


def test_demo_runs_the_digits_cnn(monkeypatch, capsys):
    pytest.importorskip("sklearn")
    import keras_models

    monkeypatch.setenv("NACC_MODEL_CACHE", keras_models.CACHE_DIR)
    rc, out, _ = run_cli(capsys, "demo", "--samples", "20", "--no-layers")
    assert rc == 0
    assert "bit-exact" in out and "Simulated speed:" in out and "accuracy on 20" in out
    assert "claimed" in out


def test_onnx_report_has_per_op_results(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    import onnx_models
    import nacc.onnxruntime as nort

    path = tmp_path / "cnn.onnx"
    path.write_bytes(onnx_models.quantize(onnx_models.small_cnn(softmax_in_middle=True)))
    js = tmp_path / "r.json"
    rc, out, _ = run_cli(capsys, "report", str(path), "--json", str(js), "--cores", "2", "--check")
    assert rc == 0
    rep = json.loads(js.read_text())
    assert rep["runtime"] == "onnxruntime" and rep["partitions"]
    assert "softmax_mid" in {d["name"] for d in rep["declined"]}
    assert all(d["reasons"][0] for d in rep["declined"])
    # No label repeats itself ("part of QDQ unit GlobalAveragePool 'gap': GlobalAveragePool
    # 'gap': ..."), neither in the report nor in the EP's own partition reports.
    repeated = re.compile(r"(\w+ '[^']*': )\1")
    for d in rep["declined"]:
        assert not repeated.search(d["reasons"][0]), d
    for r in nort.partition_reports():
        for h in r["host_nodes"]:
            assert not repeated.search(h["reason"]) and not h["reason"].startswith(
                f"{h['op_type']} '{h['name']}': {h['op_type']} '{h['name']}'"), h
    for p in rep["partitions"]:
        assert p["fused_node"] and p["cycles"] > 0 and p["layers"]
        # The EP's partition MACs count padding taps too; the device counts useful ones.
        assert 0 < sum(l["macs"] for l in p["layers"]) <= p["macs"]
        assert 0 <= p["cycles"] - max(l["end"] for l in p["layers"]) < 64
    stats = nort.run_stats()
    for p in rep["partitions"]:
        st = stats[p["fused_node"]]
        assert sum(o["macs"] for o in st["ops"]) == st["macs"]
        assert sum(o["dma_read_bytes"] + o["dma_write_bytes"] for o in st["ops"]) == st["dma_bytes"]


# ---- exit codes and one-line errors ---------------------------------------------------------

@pytest.fixture(scope="module")
def onnx_path(tmp_path_factory):
    pytest.importorskip("onnxruntime")
    import onnx_models

    path = tmp_path_factory.mktemp("cli_onnx") / "cnn.onnx"
    path.write_bytes(onnx_models.quantize(onnx_models.small_cnn(softmax_in_middle=True)))
    return str(path)


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory, onnx_path):
    """Files no command can use: name -> path."""
    d = tmp_path_factory.mktemp("bad")
    files = {"dir": d / "model.tflite", "empty": d / "empty.tflite", "pb": d / "m.pb",
             "random_onnx": d / "random.onnx", "truncated_onnx": d / "truncated.onnx",
             "garbage_tflite": d / "garbage.tflite", "blocker": d / "blocker"}
    files["dir"].mkdir()
    files["empty"].write_bytes(b"")
    files["pb"].write_bytes(b"x")
    files["random_onnx"].write_bytes(np.random.default_rng(0).bytes(4096))
    whole = open(onnx_path, "rb").read()
    files["truncated_onnx"].write_bytes(whole[:len(whole) // 2])
    files["garbage_tflite"].write_bytes(b"\x1c\x00\x00\x00TFL3" + b"\x00" * 64)
    files["blocker"].write_text("a file where a directory is expected")
    return {k: str(v) for k, v in files.items()}


@pytest.fixture(scope="module")
def huge_input_onnx(tmp_path_factory):
    """An ONNX model whose 1x(2^31-1)x16x3 input would take 96 GiB as a random input."""
    pytest.importorskip("onnxruntime")
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.INT8, [1, 2**31 - 1, 16, 3])
    y = helper.make_tensor_value_info("y", TensorProto.INT8, [1, 2**31 - 1, 16, 3])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "huge", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    path = tmp_path_factory.mktemp("huge") / "huge.onnx"
    onnx.save(m, str(path))
    return str(path)


# (argv with placeholders, exit status, a fragment of the one stderr line). Placeholders:
# {tflite} the declining model, {onnx} a QDQ CNN, {X} bad_files[X], {tmp} a fresh directory.
ERROR_CASES = [
    (["report", "{tmp}/nope.tflite"], 1, "nope.tflite: no such file"),
    (["report", "{dir}"], 1, "is a directory, not a model file"),
    (["report", "{empty}"], 1, "empty file (0 bytes)"),
    (["report", "{pb}"], 1, "expected a .tflite or .onnx model"),
    (["report", "{random_onnx}"], 1, "ONNX Runtime: INVALID_PROTOBUF"),
    (["report", "{truncated_onnx}"], 1, "ONNX Runtime:"),
    (["report", "{garbage_tflite}"], 1, "nacc report:"),
    (["report", "{onnx}", "--sram-kb", "0"], 2, "--sram-kb 0: not allowed; allowed: a power of two"),
    (["report", "{onnx}", "--clock-mhz", "0"], 2, "--clock-mhz 0: not allowed; allowed: an integer"),
    (["report", "{onnx}", "--cores", "3"], 2, "--cores 3: not allowed; allowed: 1, 2, 4, 8, 16 or 32"),
    (["report", "{tflite}", "--cores", "3"], 2, "--cores 3: not allowed"),
    (["report", "{tflite}", "--sram-kb", "0"], 2, "--sram-kb 0: not allowed"),
    (["report", "{tflite}", "--json", "{blocker}/r.json"], 1, "does not exist"),
    (["report", "{huge_onnx}"], 1, "would need 96.0 GiB for a random input"),
    (["report", "{tflite}", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["compile", "{tflite}", "-o", "{blocker}/out"], 1, "cannot create the directory"),
    (["compile", "{tflite}", "-o", "{blocker}"], 1, "exists and is not a directory"),
    (["trace", "{tflite}", "-o", "{blocker}/sub/trace.json"], 1, "does not exist"),
    (["trace", "{tflite}", "-o", "{tmp}"], 1, "is a directory; give a file name"),
    (["trace", "{onnx}", "-o", "{tmp}/t.json"], 1, "only .tflite models"),
    (["compare", "{onnx}", "--cores", "3"], 2, "--cores 3: not allowed"),
    (["compare", "{onnx}", "--option", "bogus=1"], 2, "unknown provider option 'bogus'"),
    (["compare", "{tflite}", "--option", "bogus=1"], 2, "unknown option 'bogus'"),
    (["compare", "{tflite}", "--option", "sram_kb"], 2, "expected KEY=VALUE"),
    (["compare", "{empty}"], 1, "empty file"),
    (["bench", "{onnx}", "--cores", "3"], 2, "not allowed"),
    (["bench", "{tmp}/nope.onnx"], 1, "no such file"),
    (["perf", "{onnx}", "--runs", "0"], 2, "--runs must be >= 1"),
    (["perf", "{onnx}", "--option", "sram_kb=0"], 2, "sram_kb='0'"),
    (["eval", "{tflite}", "--inputs", "{tmp}/none.npz"], 2, "no such file or directory"),
    (["eval", "{tflite}", "--inputs", "{pb}"], 2, "expected a directory, an .npz or an .npy file"),
    (["disasm", "{dir}"], 1, "is a directory"),
    (["docs", "no_such_topic"], 1, "no document 'no_such_topic'"),
    (["demo", "--model", "no_such_model"], 2, "--model 'no_such_model': not one of"),
]


@pytest.mark.parametrize("argv,code,fragment", ERROR_CASES,
                         ids=[" ".join(c[0][:3]) for c in ERROR_CASES])
def test_errors_are_one_line_with_an_exit_status(argv, code, fragment, model_path, onnx_path,
                                                 bad_files, huge_input_onnx, tmp_path, capsys):
    subs = dict(bad_files, tflite=model_path, onnx=onnx_path, tmp=str(tmp_path),
                huge_onnx=huge_input_onnx)
    argv = [a.format(**subs) for a in argv]
    try:
        rc = cli.main(argv)
    except SystemExit as e:  # argparse's errors (exit 2)
        rc = e.code
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if l.strip()]
    assert rc == code, err
    assert len(lines) == 1, err
    assert lines[0].startswith(f"nacc {argv[0]}"), lines[0]
    assert fragment in lines[0], lines[0]
    assert "Traceback" not in err


def test_numeric_string_options_reach_the_delegate(model_path, capsys):
    """--option sram_kb=128 is a string; the delegate takes numeric strings (issue 18.2)."""
    rc, out, err = run_cli(capsys, "compare", model_path, "--option", "sram_kb=128",
                           "--option", "min_partition_macs=0")
    assert rc == 0, err
    assert "No tensor differs." in out


def test_onnx_commands_fail_when_the_ep_did_not_take_part(onnx_path, monkeypatch, capsys):
    """With the Python-side validation out of the way, ORT rejects sram_kb=0, prints its
    "EP Error" and falls back to the CPU EP; report and compare must then fail (exit 1,
    the EP's reason in one line) instead of comparing the CPU EP with itself."""
    import nacc.onnxruntime as nort

    monkeypatch.setattr(nort, "validate_provider_options",
                        lambda options=None: {k: str(v) for k, v in (options or {}).items()})
    for argv in (["report", onnx_path, "--sram-kb", "0", "--check"],
                 ["compare", onnx_path, "--option", "sram_kb=0"],
                 ["perf", onnx_path, "--sram-kb", "0", "--runs", "1"]):
        monkeypatch.setattr(cli, "check_flags", lambda *a, **k: None)
        rc, out, err = run_cli(capsys, *argv)
        lines = [l for l in err.splitlines() if l.strip()]
        assert rc == 1, (argv, out, err)
        assert len(lines) == 1 and "NaccExecutionProvider is not in this session's providers" \
            in lines[0], err
        assert "sram_kb='0'" in lines[0], lines[0]
        assert "No tensor differs" not in out


def test_missing_optional_module_names_the_extra(monkeypatch, capsys):
    """`nacc demo` after a plain `pip install .`: the missing module and what to install."""
    import keras_models

    monkeypatch.setenv("NACC_MODEL_CACHE", keras_models.CACHE_DIR)
    monkeypatch.setitem(sys.modules, "sklearn", None)  # import sklearn -> ModuleNotFoundError
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    rc, _, err = run_cli(capsys, "demo", "--samples", "2")
    assert rc == 1
    assert "needs the Python module 'sklearn'" in err and "scikit-learn" in err, err


@pytest.mark.parametrize("module", ["nacc.cli", "nacc"])
def test_console_script_exit_status_and_one_line(tmp_path, module):
    """The real process (`python -m nacc.cli` and `python -m nacc`): exit status and a
    single stderr line (no TensorFlow import needed)."""
    import subprocess

    # the nacc this test process imported (installed package in CI, python/ in a dev tree)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.run([sys.executable, "-m", module, "report", str(tmp_path / "x.tflite")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 1
    assert p.stderr.strip().splitlines() == [f"nacc report: {tmp_path / 'x.tflite'}: no such file"]


def test_report_summary_first_and_layers_on_request(model_path, capsys):
    """The summary comes first (NPU time, host nodes by kind, top layers) and says that NPU
    time excludes host ops; the per-layer tables only with --layers."""
    rc, out, _ = run_cli(capsys, "report", model_path, "--cores", "2")
    assert rc == 0
    lines = out.splitlines()
    assert lines[1].startswith("NACC delegate: claimed 3 of 5 nodes")
    assert lines[2].startswith("NPU time per inference:") and "the performance bound" in lines[2]
    assert lines[3].startswith("Host: 2 node(s) run on the host runtime, not in the NPU time")
    assert "CONV_2D x1" in lines[3] and "SOFTMAX x1" in lines[3]
    assert "Top layers by NPU cycles (3 of 3)" in out
    assert "Layers of partition" not in out and "--layers" in out
    # No reason repeats the node's own label ("CONV_2D 'stride4': CONV_2D 'stride4': ...").
    for line in lines:
        if line.strip().startswith(("CONV_2D '", "SOFTMAX '")):
            label = line.strip().split(": ")[0].split(" (node")[0]
            assert line.count(label) == 1, line
    rc, out, _ = run_cli(capsys, "report", model_path, "--cores", "2", "--layers")
    assert "Layers of partition 0 (last run):" in out


def test_docs_command_prints_the_installed_documents(capsys):
    rc, out, _ = run_cli(capsys, "docs")
    assert rc == 0 and "hardware" in out and "NACC hardware reference" in out
    rc, out, _ = run_cli(capsys, "docs", "hardware")
    assert rc == 0 and out.startswith("# NACC hardware reference")
    for words in ("## 8. Performance model", "cyc/bound", "DMA/min", "move-once", "useful"):
        assert words in out, words


def test_perf_reports_percentiles_throughput_and_npu_time(model_path, tmp_path, capsys):
    js = tmp_path / "perf.json"
    rc, out, err = run_cli(capsys, "perf", model_path, "--runs", "5", "--warmup", "1",
                           "--reference", "--json", str(js), "--cores", "2")
    assert rc == 0, err
    r = json.loads(js.read_text())
    for key in ("nacc", "reference"):
        t = r["host_ms"][key]
        assert t["runs"] == 5
        assert t["min"] <= t["p50"] <= t["p90"] <= t["p99"] <= t["max"]
        assert t["throughput_per_s"] == pytest.approx(1e3 / t["mean"])
    assert r["npu"]["cycles"] > 0 and r["npu"]["cores"] == 2
    assert r["npu"]["latency_us"] == pytest.approx(r["npu"]["cycles"] / 500)
    assert "p99" in out and "inferences/s" in out and "Simulated NPU:" in out

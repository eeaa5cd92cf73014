"""The ``nacc`` command line (python/nacc/cli.py): each command on a small
model produces what it promises — reports that list every declined node with
its reason and per-layer numbers from the run's per-op counters, Program and
disassembly files that load, a valid Chrome trace with one track per core, the
supported-ops document, the demo — and the per-op results in the TFLite
delegate's and the ONNX Runtime EP's reports add up to the partition totals."""
from __future__ import annotations

import json
import os
import sys
import types

import pytest

import nacc
from nacc import _core, cli
from delegate_models import ModelBuilder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def declining_model() -> bytes:
    """Convs the NPU runs around a SOFTMAX (host-only kind) and a stride-4
    CONV_2D (past NACC's stride limit 3): 2 declined nodes, 3 partitions."""
    m = ModelBuilder()
    x = m.input((1, 16, 16, 8))
    a = m.conv(x, 16, name="c0")
    b = m.softmax(a, name="softmax")
    c = m.conv(b, 16, name="c1")
    d = m.conv(c, 16, stride=4, name="stride4")
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
    rc, out, _ = run_cli(capsys, "report", model_path, "--cores", "2", "--json", str(js), "--check")
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
    with pytest.raises(SystemExit, match="not a valid Program"):
        cli.main(["disasm", str(bad)])


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


def test_missing_or_wrong_model_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="no such file"):
        cli.main(["report", str(tmp_path / "nope.tflite")])
    other = tmp_path / "m.pb"
    other.write_bytes(b"x")
    with pytest.raises(SystemExit, match=r"expected a \.tflite or \.onnx"):
        cli.main(["report", str(other)])


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

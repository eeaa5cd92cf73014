"""ONNX Runtime's own profiler (`enable_profiling`): with ORT >= 1.31 the NACC
EP adds, per run of each partition, one event for the partition and one per
Program op, timed in simulated NPU time (ep/profiler.h); their cycles agree
with nacc's own run statistics."""
from __future__ import annotations

import json

import pytest

ort = pytest.importorskip("onnxruntime")

import onnx_models  # noqa: E402
import nacc.onnxruntime as nort  # noqa: E402


def minor_version() -> int:
    return int(ort.__version__.split(".")[1])


@pytest.mark.skipif(minor_version() < 31, reason="plugin-EP profiler ABI used from ORT 1.31")
def test_profile_json_has_simulated_op_events(tmp_path):
    nort.register()
    model = onnx_models.quantize(onnx_models.small_cnn())
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    so.log_severity_level = 3
    sess = ort.InferenceSession(model, sess_options=so, providers=[
        (nort.EP_NAME, {"cores": "2", "clock_mhz": "1000"}), "CPUExecutionProvider"])
    feeds = onnx_models.input_feeds(model)[0]
    for _ in range(2):
        sess.run(None, feeds)
    path = sess.end_profiling()
    events = json.load(open(path))
    ours = [e for e in events if e.get("args", {}).get("provider") == nort.EP_NAME
            and e.get("args", {}).get("simulated") == "1"]
    parts = [e for e in ours if e["name"].endswith("(NACC simulated)")]
    ops = [e for e in ours if e not in parts]
    stats = nort.run_stats()
    assert parts and len(parts) % 2 == 0  # two runs
    for p in parts:
        fused = p["name"][:-len(" (NACC simulated)")]
        st = stats[fused]
        assert int(p["args"]["cycles"]) == st["cycles"]
        assert p["dur"] == max(1, round(st["cycles"] / 1000))
        names = [o["name"] for o in st["ops"]]
        mine = [o for o in ops if o["args"]["partition"] == fused]
        assert [o["name"] for o in mine] == names * 2
        for o, s in zip(mine, st["ops"] * 2):
            assert int(o["args"]["cycles"]) == s["cycles"]
            assert int(o["args"]["macs"]) == s["macs"]
        first_run = min(q["ts"] for q in parts if q["name"] == p["name"])
        assert all(o["ts"] >= first_run for o in mine)

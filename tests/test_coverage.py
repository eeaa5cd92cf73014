"""nacc.coverage, the claim-rate table (docs/coverage.md): one small pattern model
end to end (claims, host reasons, exactness per core count, the markdown row),
and its argument errors."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("tensorflow")


@pytest.fixture(autouse=True)
def _test_model_cache(monkeypatch):
    import keras_models

    monkeypatch.setenv("NACC_MODEL_CACHE", keras_models.CACHE_DIR)


def test_row_of_a_16x8_model_names_its_host_node_and_checks_every_core_count(tmp_path):
    """The 16x8 DS-CNN: every node it has a 16-bit unit for claimed (a host row gives the
    partitioner's reason), bit-exact against BUILTIN_REF at each core count; the
    claim numbers are the delegate's own."""
    from nacc import coverage, model_report, models

    out = tmp_path / "cov.json"
    assert coverage.main(["ds_cnn_kws_16x8", "--cores", "1,4", "--json", str(out),
                          "--in-process"]) == 0
    report = json.loads(out.read_text())
    (row,) = report["models"]
    assert report["cores"] == [1, 4] and row["model"] == "ds_cnn_kws_16x8"
    assert set(row["exact"]) == {"1", "4"}
    assert all(e["bit_exact"] and e["differing"] == 0 for e in row["exact"].values()), row["exact"]
    rep = model_report.tflite_report(models.converted("ds_cnn_kws_16x8"),
                                     model_report.HwOptions(cores=1))
    assert row["nodes"] == {"claimed": rep["claimed_nodes"], "total": rep["total_nodes"]}
    assert row["partitions"] == len(rep["partitions"])
    host = {d["op"] for d in rep["declined"]}
    assert set(row["host"]) == host
    assert sum(r["count"] for r in row["host"].values()) == row["nodes"]["total"] - row["nodes"]["claimed"]
    for op, r in row["host"].items():
        assert r["reasons"], op
    text = coverage.markdown(report)
    assert "| ds_cnn_kws_16x8 |" in text and "bit-exact at 1, 4 cores" in text


def test_bad_arguments(capsys):
    from nacc import coverage

    for argv, match in [(["no_such_model"], "unknown model"), (["--cores", "3"], "cores"),
                        (["--cores", "x"], "comma-separated")]:
        with pytest.raises(SystemExit):
            coverage.parse_args(argv)
        assert match in capsys.readouterr().err


def test_a_model_whose_run_fails_costs_its_row_only(tmp_path):
    """Each model runs in a child process: a model the runtime cannot load (or a
    runtime that aborts) gives a row that says how the run ended; the table
    still comes out (one child here: each costs a TensorFlow import)."""
    from nacc import coverage

    bad = tmp_path / "broken.tflite"
    bad.write_bytes(b"not a flatbuffer" * 4)
    out = tmp_path / "cov.json"
    assert coverage.main([str(bad), "--cores", "1", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    (row,) = report["models"]
    assert row["model"] == "broken.tflite" and "exit code 1" in row["failed"], row
    assert "| broken.tflite | - | - | the run ended with exit code 1" in coverage.markdown(report)

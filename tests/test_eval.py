"""nacc eval on real data: the held-out split of scikit-learn's digits (360
8x8 images; the digits CNN was trained on the other 1437) through TFLite
BUILTIN_REF and through the NACC delegate in two worker processes, and
through the ONNX Runtime EP in this process — agreement, top-1, accuracy,
simulated NPU time, the JSON report — and the input forms eval accepts."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("tensorflow")

from nacc import cli, models  # noqa: E402
import keras_models  # noqa: E402


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    _, _, x, y = models.digits_split()
    d = tmp_path_factory.mktemp("digits")
    np.savez(d / "test.npz", x=x, labels=y)
    return d, x, y


def model(kind):
    if kind == "tflite":
        return models.model_path("digits_cnn", cache=keras_models.CACHE_DIR)
    return models.onnx_model_path("digits_cnn", cache=keras_models.CACHE_DIR)


def test_eval_digits_tflite_two_workers(digits, tmp_path, capsys):
    d, x, y = digits
    js = tmp_path / "eval.json"
    rc = cli.main(["eval", model("tflite"), "--inputs", str(d / "test.npz"), "--workers", "2",
                   "--json", str(js), "--strict"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    r = json.loads(js.read_text())
    assert r["samples"] == len(x) == 360 and r["workers"] == 2
    # The delegate is bit-exact to BUILTIN_REF on every image.
    assert r["bit_exact_samples"] == 360 and r["bit_exact_share"] == 1.0
    assert r["outputs"][0]["differing"] == 0 and r["top1_agreement"] == 1.0
    assert r["accuracy"]["labels"] == 360
    assert r["accuracy"]["nacc"] == r["accuracy"]["reference"] > 0.85
    assert r["npu"]["cycles"] > 0 and r["npu"]["cycles_min"] == r["npu"]["cycles_max"]
    assert r["npu"]["latency_us"] == pytest.approx(r["npu"]["cycles"] / 500)
    for key in ("nacc", "reference"):
        assert r["host_ms"][key]["runs"] == 360
    assert "Bit-exact: 360 of 360 inputs" in out.out and "Accuracy on 360 labels" in out.out
    assert "nacc eval" in out.err  # the progress bar


def test_eval_digits_onnx_in_process(digits, tmp_path, capsys):
    d, x, y = digits
    js = tmp_path / "eval.json"
    rc = cli.main(["eval", model("onnx"), "--inputs", str(d / "test.npz"), "--workers", "1",
                   "--limit", "120", "--json", str(js), "--no-progress", "--cores", "2"])
    capsys.readouterr()
    assert rc == 0
    r = json.loads(js.read_text())
    assert r["samples"] == 120 and r["runtime"] == "onnx"
    # Not bit-exact by design everywhere (Add/AveragePool round like the NPU), but the
    # classes agree; printed numbers are the measurement.
    print({k: r[k] for k in ("bit_exact_share", "top1_agreement", "accuracy")})
    assert r["top1_agreement"] >= 0.95
    assert abs(r["accuracy"]["nacc"] - r["accuracy"]["reference"]) <= 0.05
    assert r["npu"]["cycles"] > 0 and r["hardware"]["cores"] == 2


def test_eval_input_forms(digits, tmp_path, capsys):
    """A directory of .npy samples, an .npy with labels in a text file, int8 data: the same
    answer as the .npz."""
    d, x, y = digits
    n = 20
    samples = tmp_path / "samples"
    samples.mkdir()
    for i in range(n):
        np.save(samples / f"{i:04d}.npy", x[i][None])  # with the batch axis
    np.save(tmp_path / "x.npy", x[:n])
    (tmp_path / "labels.txt").write_text("\n".join(map(str, y[:n])))
    results = []
    for argv in (["--inputs", str(samples), "--labels", str(tmp_path / "labels.txt")],
                 ["--inputs", str(tmp_path / "x.npy"), "--labels", str(tmp_path / "labels.txt")],
                 ["--inputs", str(d / "test.npz"), "--limit", str(n)]):
        js = tmp_path / "r.json"
        assert cli.main(["eval", model("tflite"), *argv, "--workers", "1", "--no-progress",
                         "--json", str(js)]) == 0
        r = json.loads(js.read_text())
        results.append((r["samples"], r["bit_exact_share"], r["accuracy"]["nacc"]))
    capsys.readouterr()
    assert results[0] == results[1] == results[2] and results[0][0] == n
    bad = tmp_path / "bad.npz"
    np.savez(bad, x=np.zeros((3, 5, 5), np.float32))
    rc = cli.main(["eval", model("tflite"), "--inputs", str(bad), "--workers", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and "does not hold samples of the model input's shape" in err

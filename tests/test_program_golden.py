"""Compiled Programs stay byte-identical across refactors (issue 12, "Programs and
output bits unchanged"): the SHA-256 of every Program the compiler produces for a
fixed, fully seeded corpus, against the table in tests/golden/program_hashes.json.

The corpus is deterministic on any machine (no Keras, no converter calibration):
- the compiler sweep's seeded random nets (tests/test_compiler_sweep.py), compiled
  straight from the IR at several core counts, SRAM sizes and forced split modes;
- the differential fuzzer's seeded TFLite graphs (specs frozen in
  tests/golden/fuzz_specs.json) through the delegate and its ONNX
  graphs through the EP (tests/fuzz), each partition's Program as the frontend's
  `dump_dir` writes it: this covers both translations and the partitioners.

A change that is meant to change Programs regenerates the table with
`NACC_UPDATE_GOLDEN=1 python -m pytest tests/test_program_golden.py` and says in
its commit message why the Programs changed; any other difference fails here,
naming the first cases that differ. Updating the table keeps the frozen fuzz
specs; re-freezing them from the current generator (which changes the corpus,
and so every fuzz entry) is a separate, explicit step:
`NACC_FREEZE_FUZZ_SPECS=1 NACC_UPDATE_GOLDEN=1 python -m pytest tests/test_program_golden.py`.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import tempfile

import numpy as np
import pytest

import nacc
from nacc import _core

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "program_hashes.json")
# The fuzzer's specs are frozen here, so that extending its generator (new kinds
# change the random stream) does not change this corpus.
SPECS = os.path.join(os.path.dirname(__file__), "golden", "fuzz_specs.json")
UPDATE = os.environ.get("NACC_UPDATE_GOLDEN") == "1"
FREEZE_SPECS = os.environ.get("NACC_FREEZE_FUZZ_SPECS") == "1"

SWEEP_SEEDS = range(120)
# (cores, sram_kb, forced multi-core mode)
SWEEP_SETTINGS = [(1, 64, None), (1, 8, None), (4, 32, None), (8, 64, "SPLIT_HEIGHT"),
                  (8, 16, "SPLIT_KERNEL"), (32, 64, None)]
FUZZ_SEED = 1009
TFLITE_GRAPHS = 80
ONNX_GRAPHS = 30


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:24]


def _sweep_hashes() -> dict:
    from test_compiler_sweep import random_net

    out = {}
    for seed in SWEEP_SEEDS:
        net = random_net(seed)
        for cores, kb, mode in SWEEP_SETTINGS:
            key = f"sweep/{seed}/c{cores}/k{kb}/{mode or 'auto'}"
            try:
                prog = _core.compile(net.g, cores=cores, sram_kb=kb, force_mode=mode)
            except nacc.UnsupportedError:
                out[key] = "unsupported"
                continue
            out[key] = _digest(bytes(prog.to_bytes()))
    return out


def _dumped_programs(directory: str) -> list:
    """(k, digest) of the Programs a frontend's dump_dir holds, in digest order:
    file names carry cache keys, which change with the key format, not with
    the Programs."""
    paths = glob.glob(os.path.join(directory, "*.program")) + glob.glob(
        os.path.join(directory, "*.naccpart"))
    digests = sorted(_digest(open(p, "rb").read()) for p in paths)
    return [(str(k), h) for k, h in enumerate(digests)]


def _fuzz_specs(fmt: str) -> list:
    if FREEZE_SPECS or not os.path.exists(SPECS):
        from fuzz.generate import generate

        specs = {"tflite": [generate(FUZZ_SEED, i, "tflite") for i in range(TFLITE_GRAPHS)],
                 "onnx": [generate(FUZZ_SEED, i, "onnx") for i in range(ONNX_GRAPHS)]}
        with open(SPECS, "w") as f:
            json.dump(specs, f, separators=(",", ":"), default=lambda x: x.item())
    with open(SPECS) as f:
        return json.load(f)[fmt]


def _tflite_hashes() -> dict:
    pytest.importorskip("ai_edge_litert")
    from ai_edge_litert import interpreter as litert
    from fuzz.build_tflite import build_tflite

    out = {}
    for index, spec in enumerate(_fuzz_specs("tflite")):
        try:
            model = build_tflite(spec)
        except Exception:  # the generator makes some invalid graphs on purpose
            continue
        with tempfile.TemporaryDirectory() as tmp:
            opts = dict(spec["options"])
            opts.pop("threads", None)
            d = nacc.load_delegate(runtime="litert", log_level="off", dump_dir=tmp, **opts)
            try:
                interp = litert.Interpreter(
                    model_content=model, num_threads=1,
                    experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF,
                    experimental_delegates=[d])
                interp.allocate_tensors()
                del interp
            except Exception as e:
                out[f"tflite/{index}"] = f"error: {type(e).__name__}"
                continue
            finally:
                d.close()
            for name, h in _dumped_programs(tmp):
                out[f"tflite/{index}/{name}"] = h
    return out


def _onnx_hashes() -> dict:
    ort = pytest.importorskip("onnxruntime")
    import nacc.onnxruntime as nort
    from fuzz.build_onnx import build_onnx

    nort.register()
    out = {}
    for index, spec in enumerate(_fuzz_specs("onnx")):
        try:
            model = build_onnx(spec)["model"]
        except Exception:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            so = ort.SessionOptions()
            so.intra_op_num_threads = 1
            so.log_severity_level = 3
            opts = {k: str(v) for k, v in spec["options"].items() if k != "threads"}
            opts["dump_dir"] = tmp
            so.add_provider("NaccExecutionProvider", opts)
            try:
                ort.InferenceSession(model, sess_options=so)
            except Exception as e:
                out[f"onnx/{index}"] = f"error: {type(e).__name__}"
                continue
            for name, h in _dumped_programs(tmp):
                out[f"onnx/{index}/{name}"] = h
    return out


@pytest.fixture(scope="module")
def golden():
    if UPDATE or not os.path.exists(GOLDEN):
        return None
    with open(GOLDEN) as f:
        return json.load(f)


def _check(golden, part: str, actual: dict):
    if golden is None:
        table = {}
        if os.path.exists(GOLDEN):
            with open(GOLDEN) as f:
                table = json.load(f)
        table[part] = actual
        os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
        with open(GOLDEN, "w") as f:
            json.dump(table, f, indent=0, sort_keys=True)
            f.write("\n")
        if not UPDATE:
            pytest.fail(f"{GOLDEN} was missing: written now; commit it")
        return
    expected = golden[part]
    compiled = sum(1 for v in actual.values() if len(v) == 24)
    assert compiled >= len(actual) // 2, f"{part}: only {compiled} of {len(actual)} cases compiled"
    differ = [k for k in sorted(set(expected) | set(actual)) if expected.get(k) != actual.get(k)]
    assert not differ, (f"{part}: {len(differ)} of {len(expected)} Programs changed, first: "
                        + ", ".join(f"{k} ({expected.get(k)} -> {actual.get(k)})"
                                    for k in differ[:6]))


def test_sweep_programs_unchanged(golden):
    _check(golden, "sweep", _sweep_hashes())


def test_delegate_programs_unchanged(golden):
    _check(golden, "tflite", _tflite_hashes())


def test_ep_programs_unchanged(golden):
    _check(golden, "onnx", _onnx_hashes())

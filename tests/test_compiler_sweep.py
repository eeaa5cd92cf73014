"""The full compiler sweep (slow; `python -m pytest -m slow tests/test_compiler_sweep.py`):
seeded random single ops and short chains of every lowered kind, with random
shapes and parameters, each compiled for every core count, for SRAM sizes from
the smallest it compiles at up to 64 KB and for each forced multi-core mode,
run on the simulated device and compared element by element with TFLite
BUILTIN_REF. The default run has the table-driven cases of test_compiler.py;
this sweep is the same check over a few hundred random nets.

An op the compiler declines (nacc.UnsupportedError) at every setting is
counted, and the sweep fails if more than a fifth of the nets are declined, so
it exercises the device rather than the declines.
"""
from __future__ import annotations

import numpy as np
import pytest

import nacc
from nacc import _core
from test_compiler import CORES, Net, assert_equal, run
from tflite_builder import run_tflite

pytestmark = pytest.mark.slow

ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]
SRAM_KB = [4, 8, 16, 32, 64]
MODES = [None, "SPLIT_HEIGHT", "SPLIT_KERNEL"]


def _window(rng, h, w, kmax=7):
    """A kernel, stride and padding valid for an h x w input (VALID needs k <= size)."""
    k = int(rng.integers(1, min(kmax, 15) + 1))
    stride = int(rng.integers(1, 4))
    padding = "SAME" if (rng.random() < 0.6 or k > min(h, w)) else "VALID"
    if padding == "SAME" and (k - 1) // 2 + 1 > 5:   # total SAME padding within the limit
        k = 7
    return k, stride, padding


def random_net(seed: int) -> Net:
    rng = np.random.default_rng(seed)
    n = Net(seed)
    kind = rng.choice(["conv", "depthwise", "fc", "maxpool", "avgpool", "binary", "unary",
                       "chain"])
    h, w = int(rng.integers(1, 41)), int(rng.integers(1, 41))
    act = str(rng.choice(ACTS))
    if kind == "conv":
        x = n.input((1, h, w, int(rng.integers(1, 72))))
        k, s, p = _window(rng, h, w)
        return n.finish(n.conv(x, int(rng.integers(1, 90)), k, s, p, act))
    if kind == "depthwise":
        m = int(rng.choice([1, 2, 4, 8]))
        x = n.input((1, h, w, int(rng.integers(1, 40))))
        k, s, p = _window(rng, h, w)
        return n.finish(n.conv(x, 0, k, s, p, act, depthwise=True, multiplier=m))
    if kind == "fc":
        x = n.input((int(rng.integers(1, 5)), int(rng.integers(1, 300))))
        return n.finish(n.fully_connected(x, int(rng.integers(1, 150)), act,
                                          per_channel=bool(rng.random() < 0.7)))
    if kind == "maxpool":
        x = n.input((1, h, w, int(rng.integers(1, 70))))
        k, s, p = _window(rng, h, w, kmax=5)
        return n.finish(n.pool(x, "MAX_POOL_2D", k, s, p, act))
    if kind == "avgpool":
        h, w = max(h, 2), max(w, 2)
        x = n.input((1, h, w, int(rng.integers(1, 70))))
        return n.finish(n.pool(x, "AVERAGE_POOL_2D", 2, 2, "VALID", act))
    if kind == "binary":
        c = int(rng.integers(1, 70))
        op = str(rng.choice(["ADD", "SUB", "MUL"]))
        a = n.input((1, h, w, c))
        b_shape = (1, h, w, c) if rng.random() < 0.6 or op == "SUB" else (1, 1, 1, c)
        b = n.input(b_shape, float(rng.uniform(0.01, 0.1)), int(rng.integers(-20, 20)))
        out_scale = 0.02 if op == "MUL" else float(rng.uniform(0.05, 0.2))
        return n.finish(n.binary(op, a, b, act if op != "MUL" else "NONE", out_scale))
    if kind == "unary":
        x = n.input((1, h, w, int(rng.integers(1, 70))))
        return n.finish(n.unary(str(rng.choice(["RELU", "RELU6", "LOGISTIC", "TANH"])), x))
    # A short chain: conv -> depthwise -> (add residual) -> max pool.
    c = int(rng.integers(1, 40))
    x = n.input((1, max(h, 4), max(w, 4), c))
    y = n.conv(x, c, 3, 1, "SAME", "RELU")
    z = n.conv(y, 0, 3, 1, "SAME", "RELU6", depthwise=True)
    if rng.random() < 0.5:
        z = n.binary("ADD", z, y, "NONE", 0.15)
    return n.finish(n.pool(z, "MAX_POOL_2D", 2, 2, "SAME"))


SEEDS = list(range(300))


@pytest.fixture(scope="module")
def declined():
    counter = {"declined": 0, "nets": 0}
    yield counter
    assert counter["declined"] <= counter["nets"] // 5, counter


@pytest.mark.parametrize("seed", SEEDS)
def test_random_net_every_setting(seed, declined):
    net = random_net(seed)
    x = net.random_inputs(seed)
    expected = [e.reshape(net.shapes[o]) for e, o in zip(run_tflite(net.tflite(), x), net.outputs)]
    declined["nets"] += 1
    ran = 0
    for cores in CORES:
        for kb in SRAM_KB:
            for mode in MODES if cores > 1 else [None]:
                try:
                    prog = _core.compile(net.g, cores=cores, sram_kb=kb, force_mode=mode)
                except nacc.UnsupportedError:
                    continue
                got, _ = run(net, x, cores, kb, program=prog)
                assert_equal(expected, got, f"seed {seed}: {cores} cores, {kb} KB, mode {mode}")
                ran += 1
    if ran == 0:
        declined["declined"] += 1

"""The execution plan replays 16-bit Programs (NACC_CTRL.DATA_FORM = INT16,
NACC_SPEC §9; DESIGN "decoded once, replayed fast"): replaying a 16x8 Program
gives the same output bits and the same counters (every run total, per-core
counts, the timeline, the per-op cut) as stepping the reference interpreter,
at 1 and 2 host threads — Programs the delegate compiles from the converter's
16x8 models and from built 16x8 graphs (every 16-bit lowering: convolution,
depthwise, fully connected, pools, MEAN, ADD / SUB / MUL, LOGISTIC / TANH,
RELU, requantize, LEAKY_RELU's staged parts), at 1, 8 and 32 cores and 16 and
32 KB of SRAM; and the layers of a 16-bit Program merge into whole-layer calls
as the 8-bit ones do."""
from __future__ import annotations

import glob
import os
import tempfile

import numpy as np
import pytest

import nacc
from nacc import _core
from delegate_models import ModelBuilder
from int16_keras_models import BUILDERS, converted16
from int16_models import add16, conv16, fc16, input16, mul16, pool16
from test_int16_mean_pool import mean16
from test_int16_requantize import leaky16, unary16
from test_replay import COUNTERS
from tflite_builder import make_interpreter


def _programs(model, cores, kb):
    with tempfile.TemporaryDirectory() as tmp:
        d = nacc.load_delegate(log_level="off", dump_dir=tmp, cores=cores, sram_kb=kb)
        interp = make_interpreter(model, delegates=[d])
        interp.allocate_tensors()
        del interp
        return [_core.Program.from_bytes(open(p, "rb").read())
                for p in sorted(glob.glob(os.path.join(tmp, "*.program")))]


def _inputs16(program, seed):
    rng = np.random.default_rng(seed)
    out = []
    for t in _core.program_info(program)["inputs"]:
        n = int(np.prod(t["shape"]))
        assert int(t["size"]) == 2 * n, t  # int16 elements
        x = rng.integers(-32768, 32768, n, dtype=np.int64).astype(np.int16)
        x[:3] = (-32768, 32767, -32767)
        out.append(x)
    return out


def _run(program, inputs, cores, kb, execution, threads=1):
    rt = _core.Runtime(cores=cores, sram_kb=kb, threads=threads, execution=execution)
    outs, stats = rt.run(program, [x.view(np.int8) for x in inputs], timeline=True)
    return [np.asarray(o).copy() for o in outs], stats


def assert_equivalent16(program, cores, kb, seed=0):
    x = _inputs16(program, seed)
    ref, ref_stats = _run(program, x, cores, kb, "step")
    for t in (1, 2):
        got, stats = _run(program, x, cores, kb, "replay", t)
        for a, b in zip(ref, got):
            assert a.dtype == np.int16 and b.dtype == np.int16
            assert np.array_equal(a, b), f"{t} threads: {int((a != b).sum())} of {a.size} differ"
        for k in COUNTERS:
            assert stats[k] == ref_stats[k], f"{t} threads: counter {k} differs"
    return ref_stats


def _mixed16(seed):
    """A 16x8 graph with every 16-bit lowering."""
    m = ModelBuilder(seed)
    x = input16(m, (1, 12, 10, 6), 1.0 / 4096)
    a = conv16(m, x, 16, k=3, activation="RELU")
    b = conv16(m, a, 0, depthwise=True, stride=2)
    c = pool16(m, b, "MAX_POOL_2D", 2, 1, "SAME")
    d = pool16(m, c, "AVERAGE_POOL_2D", 3, 1, "SAME")
    e = add16(m, d, c)
    f = mul16(m, e, c) if seed % 2 == 0 else add16(m, e, c, "SUB")
    g = leaky16(m, f, 0.2, m.meta[f].scale * 1.5)
    h = unary16(m, g, "QUANTIZE", m.meta[g].scale * 0.7)
    i = unary16(m, h, "RELU6", m.meta[h].scale * 2.0)
    j = mean16(m, i, False, m.meta[i].scale)
    o = fc16(m, j, 10)
    return m.build([o])


@pytest.mark.parametrize("cores, kb", [(1, 32), (8, 16), (32, 32), (4, 16)])
@pytest.mark.parametrize("seed", [0, 1])
def test_built_16x8_graph_replay_equals_step(seed, cores, kb):
    progs = _programs(_mixed16(seed), cores, kb)
    assert progs
    for prog in progs:
        assert_equivalent16(prog, cores, kb, seed)


@pytest.mark.parametrize("name", sorted(BUILDERS))
@pytest.mark.parametrize("cores, kb", [(1, 32), (8, 16), (32, 32)])
def test_converted_16x8_models_replay_equals_step(name, cores, kb):
    for prog in _programs(converted16(name), cores, kb):
        assert_equivalent16(prog, cores, kb, cores)


def test_16_bit_layers_merge_into_one_call():
    """A 16-bit Program is replayed (not stepped) and its multi-core layers
    merge into whole-layer calls."""
    prog = _programs(converted16("resnet"), 8, 16)[0]
    s = _core.Runtime(cores=8, sram_kb=16).plan_summary(prog)
    assert s["plan"], s
    assert s["layer_calls"] > 0 and s["merged_commands"] > s["layer_calls"], s

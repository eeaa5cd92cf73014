"""Per-op results of a run (csrc/runtime/op_counters.h, the 'ops' list of
Runtime.run's stats): the device's timeline cut along the compiler's op word
ranges. Every additive counter summed over the ops equals the run's total,
per core too; per-op MACs equal a count made independently from the shapes;
an op's span covers exactly its own commands."""
from __future__ import annotations

import numpy as np
import pytest

from nacc import _core
from test_compiler import Net, chain_net, independent_macs


def chain_with_fc(seed=7):
    """conv (stride 2, SAME) -> depthwise -> residual add -> pool -> reshape -> fc."""
    n = Net(seed)
    x = n.input((1, 20, 20, 6))
    a = n.conv(x, 12, 3, stride=2, act="RELU", out_scale=0.08, out_zp=-20)
    b = n.conv(a, 0, 3, depthwise=True, act="RELU6", out_scale=0.05, out_zp=-30)
    c = n.binary("ADD", a, b, out_scale=0.1, out_zp=-5)
    d = n.pool(c, k=2, stride=2)
    e = n.fully_connected(n.reshape(d, (1, 5 * 5 * 12)), 10, act="NONE")
    return n.finish(e)


NETS = {"chain": chain_net, "chain_with_fc": chain_with_fc}
ADDITIVE = ["macs", "mac_cycles", "act_cycles", "stall_cycles", "dma_read_bytes",
            "dma_write_bytes", "kernels", "dma_ops"]
CORE_ADDITIVE = ["busy_cycles", "mac_cycles", "act_cycles", "stall_cycles", "dma_read_bytes",
                 "dma_write_bytes", "macs", "kernels"]
CASES = [(net, cores, kb) for net in NETS for cores, kb in ((1, 64), (1, 8), (4, 16), (32, 64))]


def run_net(net, cores, kb):
    prog = _core.compile(net.g, cores=cores, sram_kb=kb)
    rt = _core.Runtime(cores=cores, sram_kb=kb)
    _, stats = rt.run(prog, net.random_inputs())
    return prog, stats


@pytest.mark.parametrize("name,cores,kb", CASES)
def test_per_op_sums_equal_run_totals(name, cores, kb):
    net = NETS[name]()
    prog, stats = run_net(net, cores, kb)
    ops = stats["ops"]
    assert [o["name"] for o in ops if o["op"] >= 0] == [r["name"] for r in prog.ops]
    for key in ADDITIVE:
        assert sum(o[key] for o in ops) == stats[key], key
    assert sum(o["commands"] for o in ops) == len(stats["timeline"])
    assert max(o["sram_high_water"] for o in ops) == stats["sram_high_water"]
    # The run ends when the command processor passes STOP: at most one cycle
    # per command after the last op's work.
    assert 0 <= stats["cycles"] - max(o["end"] for o in ops) <= stats["commands"]
    for k, core in enumerate(stats["cores"]):
        for key in CORE_ADDITIVE:
            assert sum(o["cores"][k][key] for o in ops) == core[key], (k, key)
        assert max(o["cores"][k]["sram_high_water"] for o in ops) == core["sram_high_water"]
    # Totals over cores inside each op agree with the op's own sums.
    for o in ops:
        assert o["busy_cycles"] == sum(c["busy_cycles"] for c in o["cores"])
        assert o["mac_cycles"] == sum(c["mac_cycles"] for c in o["cores"])


@pytest.mark.parametrize("name,cores,kb", CASES)
def test_per_op_macs_equal_independent_count(name, cores, kb):
    net = NETS[name]()
    _, stats = run_net(net, cores, kb)
    assert [o["macs"] for o in stats["ops"] if o["op"] >= 0] == independent_macs(net)


def test_op_span_is_the_span_of_its_commands():
    """cycles = end - start over the timeline records whose word lies in the
    op's range; ops execute in order, so each starts no earlier than the
    previous one started; copies after the last op (if any) form the op -1 entry."""
    net = chain_with_fc()
    prog, stats = run_net(net, 4, 16)
    recs = prog.ops
    for o in stats["ops"]:
        if o["op"] < 0:
            assert o["name"] == "(outside ops)" and o["commands"] > 0
            continue
        r = recs[o["op"]]
        mine = [t for t in stats["timeline"] if r["first_word"] <= t["word"] < r["end_word"]]
        assert o["commands"] == len(mine)
        if mine:
            assert o["start"] == min(t["start"] for t in mine)
            assert o["end"] == max(t["end"] for t in mine)
            assert o["cycles"] == o["end"] - o["start"] > 0
        assert o["bound_cycles"] == r["bound_cycles"]
        assert o["min_dma_bytes"] == r["min_dma_bytes"]
    starts = [o["start"] for o in stats["ops"] if o["op"] >= 0 and o["commands"]]
    assert starts == sorted(starts)


def test_more_cores_fewer_cycles_per_op():
    """The conv of the chain is split across cores: its span shrinks from 1 to 4 cores."""
    net = chain_with_fc()
    one = run_net(net, 1, 64)[1]["ops"][0]
    four = run_net(net, 4, 64)[1]["ops"][0]
    assert one["macs"] == four["macs"]
    assert four["cycles"] < one["cycles"]
    assert sum(c["busy_cycles"] > 0 for c in four["cores"]) > 1

"""`nacc report`'s per-layer limit (nacc.model_report.binding_limit): which of the
MAC array, the activation unit, a core's DMA port, the shared external
bandwidth or an indivisibility of the work across cores binds a layer — on
hand-made counters (each term by construction) and on layers run on the
simulated device, in the text table and in the JSON rows."""
from __future__ import annotations

import json

import numpy as np
import pytest

from nacc import _core
from nacc import model_report as mr
import ir_builders as irb


def op(cycles, cores, mac=None, act=None, read=None, write=None, ext_read=0, ext_write=0,
       shape=(1, 8, 8, 16)):
    """One `ops` entry with per-core counters `mac`, `act`, `read`, `write` (lists)."""
    n = len(cores)
    mac, act = mac or [0] * n, act or [0] * n
    read, write = read or [0] * n, write or [0] * n
    return {"op": 0, "name": "x", "kind": "CONV_2D", "cycles": cycles,
            "mac_cycles": sum(mac), "act_cycles": sum(act),
            "dma_read_bytes": ext_read, "dma_write_bytes": ext_write, "output_shape": list(shape),
            "cores": [{"mac_cycles": m, "act_cycles": a, "dma_read_bytes": r,
                       "dma_write_bytes": w, "kernels": k}
                      for m, a, r, w, k in zip(mac, act, read, write, cores)]}


def test_each_limit_by_construction():
    """Four cores, each term made the largest in turn: 1000 MAC cycles per core
    (MAC array), 1200 LUT cycles (activation unit), 20000 read bytes per core =
    1250 cycles at 16 B/cycle (DMA port), 96000 external bytes = 1500 cycles at
    64 B/cycle (shared bandwidth)."""
    busy = [1, 1, 1, 1]
    cases = [
        (dict(mac=[1000] * 4), mr.LIMIT_MAC, 1000),
        (dict(mac=[1000] * 4, act=[1200] * 4), mr.LIMIT_ACT, 1200),
        (dict(mac=[1000] * 4, read=[20000] * 4), mr.LIMIT_PORT, 1250),
        (dict(mac=[1000] * 4, read=[20000] * 4, ext_read=96000), mr.LIMIT_EXT, 1500),
    ]
    for kw, name, cycles in cases:
        got = mr.binding_limit(op(2000, busy, **kw), 4)
        assert (got["limit"], got["limit_cycles"], got["limit_detail"]) == (name, cycles, "")
        assert got["limit_share"] == cycles / 2000


def test_indivisibility_names_rows_and_cores():
    """7 output rows over 32 cores: the planner can keep at most 7 cores busy
    (here 4, two rows each), so the busiest core does 2/7 of the work instead
    of 1/32 — 9.1x its even share: the limit is the indivisibility, not the
    MAC array."""
    cores = [1] * 4 + [0] * 28
    mac = [2000, 2000, 2000, 1000] + [0] * 28
    got = mr.binding_limit(op(2100, cores, mac=mac, shape=(1, 7, 7, 960)), 32)
    assert got["limit"] == mr.LIMIT_INDIVISIBLE
    assert got["limit_detail"].startswith("7 rows over 32 cores, 4 busy (MAC array: busiest core")
    assert mr.format_limit(got) == "7 rows over 32 cores, 4 busy"


def test_uneven_threshold():
    """An uneven share within UNEVEN (56 rows over 32 cores: 2 rows on 24
    cores, 1 on 8, the busiest 2 / 1.75 = 1.14x) is indivisibility; 64 rows
    over 32 (2 each, 1.0x) is the MAC array."""
    even = mr.binding_limit(op(2000, [1] * 32, mac=[200] * 32), 32)
    assert even["limit"] == mr.LIMIT_MAC
    uneven = mr.binding_limit(op(2000, [1] * 32, mac=[200] * 24 + [100] * 8,
                                 shape=(1, 56, 56, 24)), 32)
    assert uneven["limit"] == mr.LIMIT_INDIVISIBLE
    assert uneven["limit_detail"].startswith("56 rows over 32 cores (")


def run_ops(graph, cores):
    prog = _core.compile(graph, cores=cores)
    shape = _core.program_info(prog)["inputs"][0]["shape"]
    x = np.random.default_rng(0).integers(-128, 128, shape).astype(np.int8)
    _, stats = _core.Runtime(cores=cores).run(prog, [x])
    return stats


def run_layer(graph, cores):
    return mr.layer_rows(run_ops(graph, cores)["ops"], cores, 500)[0]


def test_device_layers():
    """On the device: a 3x3 conv 32x32x64 -> 64 on one core is MAC-array bound
    (32 x 32 x 64 x 9 array cycles against 64 KB of input); a depthwise of 256
    channels on 7 rows at 32 cores cannot use them (indivisibility, '7 rows over
    32 cores': its busiest core runs 441 array cycles, 7.9x an even share; with
    960 channels the channel split over 16 cores brings the busiest core's 882
    below the external port's 919 cycles, which then binds);
    a LUT activation on one core is bound by the activation unit (one element
    per cycle against 16 bytes per cycle each way through the DMA port)."""
    g, _ = irb.conv(in_hw=(32, 32), c_in=64, c_out=64, kernel=(3, 3), padding="SAME",
                    weights_axis=0)
    r = run_layer(g, 1)
    assert r["limit"] == mr.LIMIT_MAC and r["limit_cycles"] == 32 * 32 * 64 * 9
    assert 0.9 < r["limit_share"] <= 1.0
    g, _ = irb.conv("DEPTHWISE_CONV_2D", in_hw=(7, 7), c_in=256, kernel=(3, 3), padding="SAME",
                    weights_axis=3)
    r = run_layer(g, 32)
    assert r["limit"] == mr.LIMIT_INDIVISIBLE
    assert r["limit_detail"].startswith("7 rows over 32 cores")
    g, _ = irb.unary("LOGISTIC", shape=(1, 16, 16, 64), out_scale=1 / 256, out_zp=-128)
    r = run_layer(g, 1)
    assert r["limit"] == mr.LIMIT_ACT and r["limit_cycles"] == 16 * 16 * 64


def test_text_and_json_carry_the_limit():
    """The per-layer table has a 'limit' column, the summary's top layers too,
    and the JSON rows the fields binding_limit returns."""
    g, _ = irb.conv(in_hw=(32, 32), c_in=64, c_out=64, kernel=(3, 3), padding="SAME",
                    weights_axis=0)
    stats = run_ops(g, 1)
    hw = mr.HwOptions(cores=1)
    part = mr._partition_entry(0, [0], ["CONV_2D"], 0, stats["cycles"],
                               stats["dma_read_bytes"] + stats["dma_write_bytes"],
                               stats["sram_high_water"], stats["ops"], hw)
    rep = {"model": "m", "runtime": "tflite", "summary": "claimed 1/1", "hardware": hw.as_dict(),
           "totals": mr._totals([part], hw), "host": {"nodes": 0, "by_kind": {}},
           "partitions": [part], "declined": []}
    text = mr.format_report(rep, layers=True)
    header = next(l for l in text.splitlines() if l.strip().startswith("layer") and "SRAM" in l)
    assert header.split()[-1] == "limit"
    assert "MAC array 9" in text
    back = json.loads(json.dumps(rep))["partitions"][0]["layers"][0]
    assert back["limit"] == mr.LIMIT_MAC and set(back["limits"]) == {
        mr.LIMIT_MAC, mr.LIMIT_ACT, mr.LIMIT_PORT, mr.LIMIT_EXT}

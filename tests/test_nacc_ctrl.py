"""Every field of NACC_CTRL is modelled or documented as having no functional
effect (issue 12; docs/device_model.md §7, first row of the table).

Each case takes a compiled Program, changes one NACC_CTRL field of its first
kernel command (the register write the kernel runs with) and runs it on the
simulated device. The expectation is one of:
- "fault":   the device (or the stream decoder) refuses the command;
- "changes": the output bits differ;
- "differs": either (a field the later commands' residency checks also see,
             e.g. BIAS_EN changes the K area layout that K_UPD = 0 reuses);
- "same":    output bits *and* counters are identical — for CLK_BYPASS (clock
             gating is power, not function or timing) and for ACT_MODE RELU /
             RELU6 / NONE on a MAC unit, which differ only in the clamp bounds
             the compiler writes to NACC_ACT_MIN / NACC_ACT_MAX
             (docs/device_model.md §4).
A field left out of the table fails test_every_nacc_ctrl_field_is_covered.
"""
from __future__ import annotations

import numpy as np
import pytest

import nacc
from nacc import _core
from test_compiler import OP_CASES, _mutated, run

CTRL = {f["name"]: f for r in _core.register_table() if r["name"] == "NACC_CTRL"
        for f in r["fields"]}
CTRL_FIELDS = set(CTRL)


def _set(field, value):
    """change(fields) for _mutated: `field` to `value` (a symbolic name or a number)."""
    if isinstance(value, str):
        value = {name: v for v, name in CTRL[field]["values"].items()}[value]

    def change(f):
        f[field] = value
        return f
    return change


# (op case, field, new value, expectation)
CASES = [
    ("conv1x1-relu6", "CONV_MODE", "DEPTHWISE", "fault"),
    ("conv1x1-relu6", "CONV_MODE", "RGB_CONV", "fault"),         # q7: QUANT_EN 0, 3 channels
    ("maxpool3x3-s2-same", "POOL_MODE", "AVERAGE", "fault"),     # average pool is 2x2 s2 only
    ("avgpool2x2-relu6", "POOL_MODE", "MAX", "changes"),
    ("conv1x1-relu6", "ACT_MODE", "LUT", "fault"),               # no table at IN_ACT_DMA_ADDR
    ("conv1x1-relu6", "ACT_MODE", "TANH", "fault"),              # q7 Tanh: NPU_OP_ACTIVATION only
    ("conv1x1-relu6", "ACT_MODE", "NONE", "same"),               # clamp from ACT_MIN / ACT_MAX
    ("relu", "ACT_MODE", "NONE", "fault"),                       # NPU_OP_ACTIVATION needs a function
    ("conv1x1-relu6", "START", 1, "fault"),                      # a stream never writes START = 1
    ("conv1x1-relu6", "QUANT_EN", 0, "fault"),
    ("maxpool3x3-s2-same", "QUANT_EN", 1, "fault"),
    ("conv5x5-s3-relu", "BIAS_EN", 0, "differs"),
    ("add-relu", "BIAS_EN", 1, "fault"),
    ("conv1x1-relu6", "FM_UPD", 0, "fault"),                     # nothing resident yet
    ("conv1x1-relu6", "K_UPD", 0, "fault"),
    ("conv1x1-relu6", "IM2COL_EN", 1, "fault"),
    ("add-relu", "ELEMENT_EN", 0, "fault"),
    ("add-relu", "ELEMENT_INPUT_QUANT_EN", 0, "fault"),
    ("mul", "ELEMENT_INPUT_QUANT_EN", 1, "fault"),
    ("conv1x1-relu6", "ELEMENT_INPUT_QUANT_EN", 1, "fault"),
    ("conv1x1-relu6", "DATA_FORM", "INT16", "fault"),            # 16-bit maps: not modelled
    ("conv1x1-relu6", "DATA_FORM", "INT4", "differs"),           # int8 stream read as packed int4
    ("add-relu", "DATA_FORM", "INT4", "fault"),                  # int4 is a weight-path form
] + [(case, "CLK_BYPASS", v, "same")
     for case in ("conv1x1-relu6", "depthwise3x3-relu", "add-relu", "avgpool2x2-relu6", "logistic")
     for v in (0x01, 0x02, 0x04, 0x08, 0x10, 0x3F)]

COUNTERS = ("cycles", "macs", "dma_read_bytes", "dma_write_bytes", "mac_cycles", "act_cycles",
            "stall_cycles", "sram_high_water")


def test_every_nacc_ctrl_field_is_covered():
    assert CTRL_FIELDS == {c[1] for c in CASES}, CTRL_FIELDS ^ {c[1] for c in CASES}


@pytest.mark.parametrize("case, field, value, expect", CASES,
                         ids=[f"{c[1]}={c[2]}-{c[0]}" for c in CASES])
def test_nacc_ctrl_field(case, field, value, expect):
    net = OP_CASES[case]()
    x = net.random_inputs()
    prog = _core.compile(net.g, cores=2, sram_kb=64)
    good, good_stats = run(net, x, 2, 64, program=prog)
    bad = _core.Program.from_bytes(prog.to_bytes())
    try:
        bad.commands = _mutated(_core.program_info(prog)["commands"], "NACC_CTRL",
                                _set(field, value))
        got, stats = run(net, x, 2, 64, program=bad)
    except (nacc.DeviceFault, ValueError) as e:  # ValueError: the stream decoder refused it
        assert expect in ("fault", "differs"), \
            f"{field} = {value} on {case}: refused ({e}), expected {expect}"
        return
    assert expect != "fault", f"{field} = {value} on {case} ran without a fault"
    same = all(np.array_equal(a, b) for a, b in zip(good, got))
    if expect in ("changes", "differs"):
        assert not same, f"{field} = {value} on {case}: output unchanged"
        return
    assert same, f"{field} = {value} on {case}: output changed"
    for k in COUNTERS:
        assert stats[k] == good_stats[k], f"{field} = {value} on {case}: counter {k} changed"

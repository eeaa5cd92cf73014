"""MAXIMUM and MINIMUM (issue 15, item 8) through the delegate, bit-exact
against TFLite 2.21 BUILTIN_REF (docs/compiler.md "MAXIMUM, MINIMUM").

TFLite's int8 kernels compare the stored values (maximum_minimum.cc reads
neither scale nor zero point). The element-wise unit has no max / min mode
(NACC_SPEC §1: add, sub, mul), so two runtime operands stay on the host; a
runtime tensor against a constant of one value (clip_by_value's MAXIMUM /
MINIMUM pair, a ReLU written as MAXIMUM(x, zero point)) is the activation
unit's 256-entry table max(x, c) / min(x, c), exact for every input.
"""
import numpy as np
import pytest

import nacc
from delegate_models import ModelBuilder, act
from test_slice_split import assert_all_outputs_exact, round_robin
from tflite_builder import QTensor


def max_min_model(op, shape, const_shape, values, const_first=False, runtime_both=False):
    m = ModelBuilder()
    x = m.input(shape)
    if runtime_both:
        c = m.input(shape)
    else:
        data = np.resize(np.array(values, np.int8), const_shape)
        c = m.tensor(QTensor(tuple(const_shape), "int8", scale=0.05, zero_point=-3, data=data))
    o = m.tensor(act(shape, 0.05, -3, name="y"))
    m.g.add_op(op, [c, x] if const_first else [x, c], [o], version=2)
    return m.build([o])


CASES = [
    ("max-scalar", lambda: max_min_model("MAXIMUM", (1, 8, 8, 16), (), [-3]), (1, 8, 8, 16)),
    ("min-scalar", lambda: max_min_model("MINIMUM", (1, 8, 8, 16), (), [117]), (1, 8, 8, 16)),
    ("max-const-first", lambda: max_min_model("MAXIMUM", (1, 5, 7, 3), (1,), [-128], True),
     (1, 5, 7, 3)),
    ("min-extreme", lambda: max_min_model("MINIMUM", (1, 6, 6, 70), (1, 1, 1, 1), [127]),
     (1, 6, 6, 70)),
    ("min-rank2", lambda: max_min_model("MINIMUM", (3, 40), (1,), [0]), (3, 40)),
    ("max-one-valued-vector", lambda: max_min_model("MAXIMUM", (1, 4, 4, 8), (8,), [5]),
     (1, 4, 4, 8)),
]


@pytest.mark.parametrize("case,config", round_robin(CASES))
def test_max_min_exact(case, config):
    _, build, shape = case
    assert_all_outputs_exact(build(), shape, **config)


def test_clip_by_value_one_partition():
    """clip_by_value(conv(x), lo, hi) as TF writes it: MAXIMUM then MINIMUM
    with scalar constants, all claimed in one partition, exact."""
    m = ModelBuilder(seed=5)
    x = m.input((1, 12, 12, 8))
    y = m.conv(x, 16, k=3, activation="NONE", out_scale=0.05, out_zp=-3)
    lo = m.tensor(QTensor((), "int8", scale=0.05, zero_point=-3, data=np.array(-23, np.int8)))
    hi = m.tensor(QTensor((), "int8", scale=0.05, zero_point=-3, data=np.array(37, np.int8)))
    a = m.tensor(act((1, 12, 12, 16), 0.05, -3))
    b = m.tensor(act((1, 12, 12, 16), 0.05, -3))
    m.g.add_op("MAXIMUM", [y, lo], [a], version=2)
    m.g.add_op("MINIMUM", [a, hi], [b], version=2)
    report = assert_all_outputs_exact(m.build([b]), (1, 12, 12, 8))
    assert len({n.partition for n in report.nodes}) == 1


@pytest.mark.parametrize("build,expect", [
    (lambda: max_min_model("MAXIMUM", (1, 4, 4, 8), None, None, runtime_both=True),
     "two runtime operands (no max / min element-wise mode)"),
    (lambda: max_min_model("MINIMUM", (1, 4, 4, 8), (8,), [1, 2, 3, 4, 5, 6, 7, 8]),
     "the constant operand holds more than one value"),
    (lambda: max_min_model("MAXIMUM", (1, 1, 1, 8), (1, 4, 4, 8), [1]),
     "is broadcast to"),
])
def test_max_min_declined(build, expect):
    model = build()
    d = nacc.load_delegate(log_level="off", min_partition_macs=0)
    from tflite_builder import make_interpreter

    interp = make_interpreter(model, delegates=[d])
    interp.allocate_tensors()
    (node,) = d.report().nodes
    assert not node.claimed
    msg = " ".join(r.message for r in node.reasons)
    assert expect in msg, msg

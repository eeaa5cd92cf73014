"""Lossless weight codec (NACC_SPEC §6, docs/weight_compression.md).

Round trips for every mode on edge cases; a second, independent decoder written
from the format document alone (so the document is complete); malformed and
corrupted streams, which must raise ValueError and never return a wrong array;
and compression ratios on synthetic tensors, bounded by their empirical entropy.
"""
import numpy as np
import pytest

from nacc import _core

MODES = ["raw", "zrun_rice", "lut"]
HEADER = 9
BLOCK = 256
ESCAPE_ZEROS = 16


# ---------------------------------------------------------------- test data --

def _laplace(rng, n, b):
    """int8 samples of a Laplace(0, b) distribution, rounded and clipped."""
    return np.clip(np.round(rng.laplace(0.0, b, n)), -128, 127).astype(np.int8)


def _sparse(rng, n, zero_fraction, b=3.0):
    """`zero_fraction` zeros; the rest Laplace(0, b) rounded away from zero."""
    v = np.round(rng.laplace(0.0, b, n))
    v[v == 0] = rng.choice([-1.0, 1.0], int((v == 0).sum()))
    v[rng.random(n) < zero_fraction] = 0
    return np.clip(v, -128, 127).astype(np.int8)


def _runs(*pieces):
    """Concatenation of (value, count) pieces."""
    return np.concatenate([np.full(c, v, np.int8) for v, c in pieces]) if pieces else np.zeros(0, np.int8)


_rng = np.random.default_rng(20240611)

# name -> array. Sizes straddle the 256-element block and the Rice escape
# (16 << k) so every boundary is crossed in some mode.
EDGE_CASES = {
    "empty": np.zeros(0, np.int8),
    "one_zero": np.array([0], np.int8),
    "one_min": np.array([-128], np.int8),
    "one_max": np.array([127], np.int8),
    "one_small": np.array([-3], np.int8),
    "all_zero_1000": np.zeros(1000, np.int8),
    "all_min_1000": np.full(1000, -128, np.int8),
    "all_max_300": np.full(300, 127, np.int8),
    "every_value": np.arange(-128, 128, dtype=np.int16).astype(np.int8),
    "every_value_x5_shuffled": _rng.permutation(np.repeat(np.arange(-128, 128), 5)).astype(np.int8),
    "block_255": _laplace(_rng, 255, 3),
    "block_256": _laplace(_rng, 256, 3),
    "block_257": _laplace(_rng, 257, 3),
    "block_513": _sparse(_rng, 513, 0.7),
    "run_15_16_17": _runs((1, 1), (0, 15), (2, 1), (0, 16), (3, 1), (0, 17), (4, 1)),
    "run_255_256_257": _runs((0, 255), (5, 1), (0, 256), (-5, 1), (0, 257), (7, 1)),
    "long_run_middle": _runs((9, 1), (0, 100_000), (-9, 1)),
    "long_run_start": _runs((0, 70_000), (1, 1)),
    "long_run_end": _runs((-1, 1), (0, 70_001)),
    "runs_past_2_16": _runs((0, 65_536), (3, 1), (0, 65_535), (3, 1), (0, 65_537)),
    # 600000 >= 16 << 15: beyond the Rice range of the largest k_run -> escape.
    "run_past_all_rice": _runs((5, 1), (0, 600_000), (-5, 1), (0, 524_288)),
    # Short runs with one run of 40 in the same block: k_run stays small and
    # the 40 is escaped.
    "run_escape_in_block": np.concatenate([np.tile(np.array([1, 0, 2, -1], np.int8), 30),
                                           np.zeros(40, np.int8), np.tile(np.array([3, 0], np.int8), 40)]),
    "alternating": np.tile(np.array([0, 1, 0, -1], np.int8), 300),
    "escapes_in_small": np.where(_rng.random(2000) < 0.02,
                                 _rng.choice([-128, 127, -100, 99], 2000),
                                 _rng.integers(-1, 2, 2000)).astype(np.int8),
    "dense_then_sparse": np.concatenate([_laplace(_rng, 1000, 20), _sparse(_rng, 3000, 0.97),
                                         _laplace(_rng, 700, 1)]),
    "ternary": _rng.choice(np.array([-37, 0, 37], np.int8), 3000, p=[0.25, 0.5, 0.25]),
    "clustered_16": _rng.choice(np.arange(-120, 128, 16).astype(np.int8), 4000),
    "random_uniform": _rng.integers(-128, 128, 5000).astype(np.int8),
    "laplace_b2": _laplace(_rng, 5000, 2),
    "two_values_no_zero": _rng.choice(np.array([-128, 127], np.int8), 1500),
}


def _compress(a, mode="auto"):
    return _core.compress_weights(a, mode)


# ------------------------------------------------- independent reference -----

class _Bits:
    """The document's bit order: stream bit i = bit (i % 8) of byte i // 8."""

    escapes = {"run": 0, "symbol": 0}  # coverage: escapes seen by any reader

    def __init__(self, data):
        self.data, self.pos = data, 0

    def field(self, m):
        x = 0
        for j in range(m):
            byte = self.data[(self.pos + j) // 8] if (self.pos + j) // 8 < len(self.data) else None
            if byte is None:
                raise ValueError("truncated")
            x |= ((byte >> ((self.pos + j) % 8)) & 1) << j
        self.pos += m
        return x

    def rice(self, k, w, what):
        q = 0
        while q < ESCAPE_ZEROS and self.field(1) == 0:
            q += 1
        if q < ESCAPE_ZEROS:
            return (q << k) | self.field(k)
        _Bits.escapes[what] += 1
        x = self.field(w)
        if x < ESCAPE_ZEROS << k:
            raise ValueError("non-canonical escape")
        return x


def _crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def _reference_decode(stream, n, check_crc=True):
    """A decoder written from docs/weight_compression.md only (slow, plain).
    check_crc=False skips the (slow in Python) CRC for big tensors; callers
    then compare the values themselves."""
    if len(stream) < HEADER or stream[0] >> 4 != 1 or stream[0] & 15 > 2:
        raise ValueError("bad header")
    mode = stream[0] & 15
    count = int.from_bytes(stream[1:5], "little")
    crc = int.from_bytes(stream[5:9], "little")
    if count != n:
        raise ValueError("count")
    if mode == 0:
        out = bytes(stream[HEADER:])
        if len(out) != n:
            raise ValueError("raw length")
    else:
        if mode == 1:
            table = [(s // 2) if s % 2 == 0 else -(s + 1) // 2 for s in range(256)]
            payload = stream[HEADER:]
        else:
            if len(stream) == HEADER:
                raise ValueError("no palette size")
            size = stream[HEADER] + 1
            table = [int(np.int8(np.uint8(b))) for b in stream[HEADER + 1:HEADER + 1 + size]]
            if len(table) != size or len(set(table)) != size:
                raise ValueError("palette")
            payload = stream[HEADER + 1 + size:]
        alphabet = len(table)
        w_sym = (alphabet - 1).bit_length()
        w_run = n.bit_length()
        bits = _Bits(payload)
        values, params = [], None
        while len(values) < n:
            block = len(values) // BLOCK
            end = min(n, (block + 1) * BLOCK)
            if bits.field(1) == 1:
                if params is None:
                    raise ValueError("keep without params")
            else:
                kind = bits.field(2)
                k = bits.field(3) if kind in (1, 2) else 0
                k_run = bits.field(4) if kind == 2 else 0
                if kind == 3:
                    raise ValueError("reserved kind")
                params = (kind, k, k_run)
            kind, k, k_run = params
            if kind in (0, 1):
                while len(values) < end:
                    s = bits.field(w_sym) if kind == 0 else bits.rice(k, w_sym, "symbol")
                    if s >= alphabet:
                        raise ValueError("symbol")
                    values.append(table[s])
            else:
                while len(values) < end:
                    run = bits.rice(k_run, w_run, "run")
                    if run > n - len(values):
                        raise ValueError("run")
                    values.extend([table[0]] * run)
                    if len(values) == n:
                        break
                    s = bits.rice(k, w_sym, "symbol") + 1
                    if s >= alphabet:
                        raise ValueError("symbol")
                    values.append(table[s])
        if (bits.pos + 7) // 8 != len(payload):
            raise ValueError("length")
        if bits.pos % 8 and payload[-1] >> (bits.pos % 8):
            raise ValueError("padding")
        out = np.array(values, np.int8).tobytes()
    if check_crc and _crc32c(out) != crc:
        raise ValueError("crc")
    return np.frombuffer(out, np.int8)


# -------------------------------------------------------------- round trips --

@pytest.mark.parametrize("mode", MODES + ["auto"])
@pytest.mark.parametrize("name", list(EDGE_CASES))
def test_round_trip(name, mode):
    a = EDGE_CASES[name]
    stream = _compress(a, mode)
    out = _core.decompress_weights(stream, a.size)
    assert out.dtype == np.int8 and out.shape == (a.size,)
    np.testing.assert_array_equal(out, a)
    info = _core.weight_stream_info(stream)
    assert info["count"] == a.size
    if mode != "auto":
        assert info["mode"] == mode
    if mode == "raw":
        assert len(stream) == HEADER + a.size


@pytest.mark.parametrize("name", list(EDGE_CASES))
def test_auto_picks_smallest_and_sizes_match(name):
    """`auto` = fewest bytes, ties to the simpler mode; sizes are the real streams'."""
    a = EDGE_CASES[name]
    sizes = _core.weight_codec_sizes(a)
    for mode in MODES:
        assert sizes[mode] == len(_compress(a, mode))
    best = min(MODES, key=lambda m: (sizes[m], MODES.index(m)))
    assert sizes["chosen"] == best
    assert sizes["auto"] == sizes[best] == len(_compress(a))
    assert _core.weight_stream_info(_compress(a))["mode"] == best
    assert sizes["auto"] <= HEADER + a.size


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(EDGE_CASES))
def test_second_implementation_decodes_the_same(name, mode):
    """The document is enough: a decoder written from it alone agrees."""
    a = EDGE_CASES[name]
    out = _reference_decode(_compress(a, mode), a.size, check_crc=a.size <= 6000)
    np.testing.assert_array_equal(out, a)


@pytest.mark.parametrize("name, what", [("run_past_all_rice", "run"), ("run_escape_in_block", "run"),
                                        ("long_run_middle", "run"), ("escapes_in_small", "symbol")])
def test_edge_cases_exercise_the_escapes(name, what):
    """These cases exist to take the Rice escape; the reference reader counts it."""
    _Bits.escapes.update(run=0, symbol=0)
    a = EDGE_CASES[name]
    _reference_decode(_compress(a, "zrun_rice"), a.size, check_crc=False)
    assert _Bits.escapes[what] > 0, _Bits.escapes


def test_multidimensional_input_is_read_in_c_order():
    a = _laplace(np.random.default_rng(1), 2 * 3 * 5 * 7, 4).reshape(2, 3, 5, 7)
    out = _core.decompress_weights(_compress(a), a.size)
    np.testing.assert_array_equal(out, a.ravel())
    f = np.asfortranarray(a)
    np.testing.assert_array_equal(_core.decompress_weights(_compress(f), f.size), a.ravel())


def test_golden_stream():
    """[0, 0, 0, 5] in zrun_rice, derived by hand from the document.

    One block of 4 elements. Fixed width costs 3 + 4 x 8 = 35 bits; Rice at its
    best k = 1 costs 6 + 13 = 19 bits (symbols 0, 0, 0, zigzag(5) = 10). Zero
    runs: one pair (run 3, symbol 10 coded as 9): the run costs 3 bits at
    k_run = 1 (tie with 2; the smaller k wins) and 9 costs 5 bits at k = 2 (tie
    with 3 and 4), 10 parameter bits -> 18 bits, the cheapest. Stream bits:
    keep 0 | kind 2: 0 1 | k 2: 0 1 0 | k_run 1: 1 0 0 0 |
    run 3 = (1 << 1) | 1: 0 1 1 | 9 = (2 << 2) | 1: 0 0 1 1 0.
    """
    a = np.array([0, 0, 0, 5], np.int8)
    bits = [0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 0]
    payload = bytes(sum(b << i for i, b in enumerate(bits[j:j + 8])) for j in range(0, len(bits), 8))
    assert payload == bytes([0x54, 0x98, 0x01])
    crc = _crc32c(a.tobytes())
    expected = bytes([0x11]) + (4).to_bytes(4, "little") + crc.to_bytes(4, "little") + payload
    assert _compress(a, "zrun_rice") == expected


@pytest.mark.parametrize("data", [b"", b"123456789", bytes(range(256)) * 3, b"\x00" * 1001])
def test_crc32c_matches_reference_on_both_kernel_paths(data):
    """CRC-32C check value of '123456789' is 0xE3069283 (RFC 3720)."""
    expected = _crc32c(data)
    try:
        for path in ("reference", "auto"):
            _core.set_kernel_path(path)
            assert _core.crc32c(data) == expected
    finally:
        _core.set_kernel_path("auto")
    if data == b"123456789":
        assert expected == 0xE3069283


def test_reference_kernel_path_decodes_identically():
    a = EDGE_CASES["dense_then_sparse"]
    stream = _compress(a)
    try:
        _core.set_kernel_path("reference")
        np.testing.assert_array_equal(_core.decompress_weights(stream, a.size), a)
    finally:
        _core.set_kernel_path("auto")


# ------------------------------------------------------------------ errors ---

def test_argument_errors():
    a = np.zeros(10, np.int8)
    with pytest.raises(TypeError, match="int8"):
        _core.compress_weights(a.astype(np.int16))
    with pytest.raises(ValueError, match="mode must be"):
        _core.compress_weights(a, "huffman")
    with pytest.raises(ValueError, match="count -1 out of range"):
        _core.decompress_weights(_compress(a), -1)
    with pytest.raises(ValueError, match="holds 10 elements, expected 11"):
        _core.decompress_weights(_compress(a), 11)
    with pytest.raises(ValueError, match="holds 10 elements, expected 9"):
        _core.decompress_weights(_compress(a), 9)


class _Writer:
    """Bit writer for hand-made (hostile) streams."""

    def __init__(self):
        self.bits = []

    def field(self, x, m):
        self.bits += [(x >> j) & 1 for j in range(m)]
        return self

    def rice(self, x, k, w, escape=False):
        q = x >> k
        if q < ESCAPE_ZEROS and not escape:
            return self.field(0, q).field(1, 1).field(x, k)
        return self.field(0, ESCAPE_ZEROS).field(x, w)

    def payload(self):
        b = self.bits + [0] * (-len(self.bits) % 8)
        return bytes(sum(b[j + i] << i for i in range(8)) for j in range(0, len(b), 8))


def _header(mode, values, crc=None):
    values = np.asarray(values, np.int8)
    crc = _crc32c(values.tobytes()) if crc is None else crc
    return bytes([0x10 | mode]) + values.size.to_bytes(4, "little") + crc.to_bytes(4, "little")


_TWO = [0, 3]
# name -> (stream, n, message fragment). Each stream is well-formed except for
# the one defect named.
MALFORMED = {
    "empty_stream": (b"", 0, "truncated header"),
    "short_header": (_header(0, [])[:8], 0, "truncated header"),
    "version_0": (bytes([0x00]) + _header(0, [])[1:], 0, "format version 0"),
    "version_2": (bytes([0x20]) + _header(0, [])[1:], 0, "format version 2"),
    "mode_3": (bytes([0x13]) + _header(0, [])[1:], 0, "unknown mode 3"),
    "raw_short": (_header(0, _TWO) + b"\x00", 2, "raw payload has 1 bytes, expected 2"),
    "raw_long": (_header(0, _TWO) + b"\x00\x03\x00", 2, "raw payload has 3 bytes, expected 2"),
    "raw_crc": (_header(0, _TWO, crc=1) + b"\x00\x03", 2, "CRC-32C mismatch"),
    "lut_no_size": (_header(2, []), 0, "no palette size byte"),
    "lut_short_palette": (_header(2, _TWO) + bytes([3, 0, 3]), 2, "truncated palette"),
    "lut_duplicate": (_header(2, _TWO) + bytes([1, 3, 3]), 2, "repeats value 3"),
    "keep_first": (_header(1, _TWO) + _Writer().field(1, 1).payload(), 2, "none to keep"),
    "kind_3": (_header(1, _TWO) + _Writer().field(0, 1).field(3, 2).payload(), 2, "reserved block kind 3"),
    "run_past_end": (_header(1, _TWO) + _Writer().field(0, 1).field(2, 2).field(0, 3).field(0, 4)
                     .rice(3, 0, 2).payload(), 2, "passes the end"),
    "symbol_out_of_lut": (_header(2, _TWO) + bytes([1, 0, 3]) + _Writer().field(0, 1).field(1, 2)
                          .field(0, 3).rice(0, 0, 1).rice(2, 0, 1).payload(), 2,
                          "outside the alphabet"),
    "fixed_symbol_out_of_lut": (_header(2, [0, 3, 5]) + bytes([2, 0, 3, 5]) + _Writer().field(0, 1)
                                .field(0, 2).field(0, 2).field(3, 2).field(2, 2).payload(), 3,
                                "outside the alphabet"),
    "rice_symbol_over_255": (_header(1, _TWO) + _Writer().field(0, 1).field(1, 2).field(7, 3)
                             .rice(0, 7, 8).rice(15 << 7, 7, 8).payload(), 2, "outside the alphabet"),
    "noncanonical_escape": (_header(1, _TWO) + _Writer().field(0, 1).field(1, 2).field(0, 3)
                            .rice(0, 0, 8).rice(6, 0, 8, escape=True).payload(), 2, "non-canonical"),
    "trailing_byte": (_header(1, _TWO) + _Writer().field(0, 1).field(0, 2).field(0, 8).field(6, 8)
                      .payload() + b"\x00", 2, "trailing bytes"),
    # Fixed width: keep 0, kind 0, symbols 0 and 6 (bits 3-18), padding bit 19 set.
    "padding_bits": (_header(1, _TWO) + bytes([0x00, 0x30, 0x08]), 2, "padding bits"),
    # 35 bits; the 5th byte holds only zero bits, so without it the reader
    # would see the same zeros past the end: the overrun check must notice.
    "truncated_bits": (_header(1, [0, 3, 0, 3]) + _Writer().field(0, 1).field(0, 2).field(0, 8)
                       .field(6, 8).field(0, 8).field(6, 8).payload()[:-1], 4, "truncated"),
    "zrun_crc": (_header(1, _TWO, crc=0) + _Writer().field(0, 1).field(0, 2).field(0, 8).field(6, 8)
                 .payload(), 2, "CRC-32C mismatch"),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_stream_raises(name):
    stream, n, message = MALFORMED[name]
    with pytest.raises(ValueError, match=message):
        _core.decompress_weights(stream, n)
    with pytest.raises(ValueError):
        _reference_decode(stream, n)


def test_hand_written_stream_is_accepted():
    """The writer above makes valid streams when it is told no lie."""
    stream = _header(1, _TWO) + _Writer().field(0, 1).field(0, 2).field(0, 8).field(6, 8).payload()
    np.testing.assert_array_equal(_core.decompress_weights(stream, 2), _TWO)


# ------------------------------------------------------------------ fuzzing --

_FUZZ_INPUTS = ["one_small", "block_257", "run_15_16_17", "long_run_middle", "escapes_in_small",
                "ternary", "clustered_16", "every_value", "all_min_1000", "empty"]


def _fuzz_streams():
    for name in _FUZZ_INPUTS:
        for mode in MODES:
            yield name, mode, _compress(EDGE_CASES[name], mode)


def _decodes_to_original_or_raises(stream, a):
    try:
        out = _core.decompress_weights(stream, a.size)
    except ValueError:
        return False
    # Never a wrong array: only a change with no effect on the values (e.g. the
    # palette of an empty tensor) may pass.
    np.testing.assert_array_equal(out, a)
    return True


def test_fuzz_truncation_always_raises():
    for name, mode, stream in _fuzz_streams():
        a = EDGE_CASES[name]
        for cut in range(len(stream)) if len(stream) < 600 else range(0, len(stream), 7):
            with pytest.raises(ValueError):
                _core.decompress_weights(stream[:cut], a.size)
        with pytest.raises(ValueError):  # and one byte too many
            _core.decompress_weights(stream + b"\x00", a.size)


def test_fuzz_bit_flips_never_give_wrong_values():
    """Every bit of small streams, 2048 random bits of large ones."""
    rng = np.random.default_rng(7)
    accepted = []
    for name, mode, stream in _fuzz_streams():
        a = EDGE_CASES[name]
        nbits = 8 * len(stream)
        positions = range(nbits) if nbits <= 2048 else rng.choice(nbits, 2048, replace=False)
        for bit in positions:
            flipped = bytearray(stream)
            flipped[bit // 8] ^= 1 << (bit % 8)
            if _decodes_to_original_or_raises(bytes(flipped), a):
                accepted.append((name, mode, int(bit)))
    # Only bits without effect on the values can flip unnoticed: the raw <->
    # zrun_rice mode bit and the palette entry of an empty tensor, and the
    # 3-bit symbol k of a zero-run block that holds no symbol (one run of
    # all 1000 values, palette index 0).
    assert {(n, m) for n, m, _ in accepted} <= {("empty", "raw"), ("empty", "zrun_rice"),
                                                ("empty", "lut"), ("all_min_1000", "lut")}
    assert len(accepted) <= 2 + 8 + 3


def test_fuzz_random_payloads_raise():
    """Valid headers followed by random bits: the CRC-32C (or a range check) stops them."""
    rng = np.random.default_rng(11)
    for _ in range(1500):
        n = int(rng.integers(1, 700))
        mode = int(rng.integers(0, 3))
        head = bytes([0x10 | mode]) + n.to_bytes(4, "little") + bytes(rng.integers(0, 256, 4, np.uint8))
        if mode == 2:
            size = int(rng.integers(1, 257))
            head += bytes([size - 1]) + rng.permutation(256)[:size].astype(np.uint8).tobytes()
        body = rng.integers(0, 256, int(rng.integers(0, 2 * n)), np.uint8).tobytes()
        with pytest.raises(ValueError):
            _core.decompress_weights(head + body, n)


def test_fuzz_random_bytes_raise():
    rng = np.random.default_rng(12)
    for _ in range(1500):
        stream = rng.integers(0, 256, int(rng.integers(0, 64)), np.uint8).tobytes()
        with pytest.raises(ValueError):
            _core.decompress_weights(stream, int(rng.integers(0, 100)))


def test_huge_claimed_count_is_bounded_by_the_callers_count():
    """A header claiming 2^32 - 1 elements is rejected before any work."""
    stream = bytes([0x11]) + (2**32 - 1).to_bytes(4, "little") + bytes(4) + b"\x00" * 8
    with pytest.raises(ValueError, match="holds 4294967295 elements, expected 100"):
        _core.decompress_weights(stream, 100)


# ------------------------------------------------------------------- ratios --

N_RATIO = 1 << 16


def _entropy_bits(a):
    """Empirical order-0 entropy of `a` in bits (the bound for any code that
    codes i.i.d. symbols one by one with a fixed model)."""
    _, counts = np.unique(a, return_counts=True)
    p = counts / a.size
    return float(-(counts * np.log2(p)).sum())


# name -> (array, max compressed bits / entropy bits, min ratio). Entropy bound
# 1.10: Rice codes of a two-sided geometric source lose 1-5% against the
# entropy (measured 1.01-1.05 here), and the block parameters and header add
# well under 1% at 64 K elements. The min ratio is 8 / (1.10 * entropy per
# element), rounded down, so it follows from the same bound.
RATIO_CASES = {
    "laplace_b2": (_laplace(np.random.default_rng(2), N_RATIO, 2), 1.10),
    "laplace_b5": (_laplace(np.random.default_rng(5), N_RATIO, 5), 1.10),
    "laplace_b10": (_laplace(np.random.default_rng(10), N_RATIO, 10), 1.10),
    "sparse_50": (_sparse(np.random.default_rng(50), N_RATIO, 0.50), 1.10),
    "sparse_80": (_sparse(np.random.default_rng(80), N_RATIO, 0.80), 1.10),
    "sparse_90": (_sparse(np.random.default_rng(90), N_RATIO, 0.90), 1.10),
    "sparse_95": (_sparse(np.random.default_rng(95), N_RATIO, 0.95), 1.10),
    "ternary_50": (np.random.default_rng(3).choice(np.array([-37, 0, 37], np.int8), N_RATIO,
                                                   p=[0.25, 0.5, 0.25]), 1.20),
    "clustered_16": (np.random.default_rng(16).choice(np.arange(-120, 128, 16).astype(np.int8),
                                                       N_RATIO), 1.01),
}


@pytest.mark.parametrize("name", list(RATIO_CASES))
def test_ratio_within_entropy_bound(name):
    """Ternary is 1.20: Rice on 3 symbols with p = 1/2, 1/4, 1/4 spends 1.75
    bits where the entropy is 1.5 (a prefix code would reach it; Rice cannot)."""
    a, bound = RATIO_CASES[name]
    h = _entropy_bits(a)
    size = _core.weight_codec_sizes(a)["auto"]
    assert 0.99 * h <= 8 * size <= bound * h, (name, 8 * size / h)


@pytest.mark.parametrize("zero_fraction, min_ratio", [(0.50, 2.5), (0.80, 4.9), (0.90, 8.4),
                                                      (0.95, 15.2)])
def test_sparse_ratio(zero_fraction, min_ratio):
    """Min ratio = 8 / (1.10 x entropy per element) of these tensors, rounded
    down (entropy 2.885, 1.480, 0.857, 0.477 bits per element; non-zeros are
    Laplace(0, 3) rounded away from zero)."""
    a = _sparse(np.random.default_rng(int(zero_fraction * 100)), N_RATIO, zero_fraction)
    assert a.size / _core.weight_codec_sizes(a)["auto"] >= min_ratio


def test_uniform_random_expands_by_at_most_the_header():
    a = np.random.default_rng(99).integers(-128, 128, N_RATIO).astype(np.int8)
    sizes = _core.weight_codec_sizes(a)
    assert sizes["chosen"] == "raw" and sizes["auto"] == a.size + HEADER


@pytest.mark.parametrize("value", [0, -128, 127, 5])
def test_constant_tensors_shrink_to_a_few_bytes(value):
    """One zero-run block holding a single run of all 65536 values: 10 parameter
    bits + Rice(k_run = 15) of 65536 (2 zeros, a one, 15 bits) = 28 bits = 4
    bytes. zrun_rice needs no palette (value 0); lut adds L - 1 and one entry."""
    a = np.full(N_RATIO, value, np.int8)
    assert _core.weight_codec_sizes(a)["auto"] == HEADER + 4 + (0 if value == 0 else 2)

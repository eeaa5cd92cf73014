"""Tests of the vector layout unit (NACC_SPEC §7): scatter_vnchwconv against a
literal Python transcription of the loops of seed [V], its reverse, operand
checks, bus faults, and the whole-tensor NCHW <-> NC1HWC0 conversions against
numpy (pad + reshape + transpose)."""
import re
import zlib

import numpy as np
import pytest

import nacc
from nacc import _core

BLOCK = 32
ELEM_BYTES = {"b8": 1, "b16": 2, "b32": 4}
MAX_BLOCK_ADDRESS = (2**16 - 1) * BLOCK  # 16-bit block pointers (limits::kUbMaxBlockAddress)


# ---- the oracle: seed [V]'s loops, element by element ---------------------------------


class _Block:
    """One 32-byte UB block seen as elements of `eb` bytes: blk[i] reads/writes element i."""

    def __init__(self, mem, addr, eb):
        self.mem, self.addr, self.eb = mem, addr, eb

    def __getitem__(self, i):
        a = self.addr + i * self.eb
        return bytes(self.mem[a : a + self.eb])

    def __setitem__(self, i, value):
        a = self.addr + i * self.eb
        self.mem[a : a + self.eb] = value


class _Operand:
    """16 block pointers: op[b][i] is element i of block b."""

    def __init__(self, mem, addrs, eb):
        self.blocks = [_Block(mem, a, eb) for a in addrs]

    def __getitem__(self, b):
        return self.blocks[b]


def oracle(ub, dtype, dst, src, repeat, dst_stride, src_stride, dst_high_half=False,
           src_high_half=False, reverse=False):
    """Runs the seed's loops on a copy of `ub` and returns it.

    Per iteration r every pointer is advanced by r * stride * 32 bytes; the 16
    source blocks are read into a "register" (a snapshot) before any element is
    written (the project's reading, documented in vnchwconv.h). b16 uses the
    NACC_SPEC §7 correction e++ (the seed writes e=e+2). The reverse is the same
    loops with every assignment turned around (NACC_SPEC §7)."""
    mem = bytearray(ub.tobytes())
    eb = ELEM_BYTES[dtype]
    dst_pointers, src_pointers = dst, src
    for r in range(repeat):
        # The source register: its 16 blocks are read before anything is written.
        register = bytearray()
        for a in src_pointers:
            a += r * src_stride * BLOCK
            register += mem[a : a + BLOCK]
        src = _Operand(register, [BLOCK * k for k in range(16)], eb)
        dst = _Operand(mem, [a + r * dst_stride * BLOCK for a in dst_pointers], eb)
        if not reverse:
            if dtype == "b32":
                for e in range(0, 16, 2):
                    for k in range(8):
                        dst[e][k] = src[k][e // 2]
                        dst[e + 1][k] = src[k + 8][e // 2]
            elif dtype == "b16":
                for e in range(16):  # seed: e=e+2; NACC_SPEC §7: e++
                    for k in range(16):
                        dst[e][k] = src[k][e]
            elif not dst_high_half and not src_high_half:
                for e in range(16):
                    for k in range(16):
                        dst[e][k] = src[k][e]
            elif dst_high_half and not src_high_half:
                for e in range(16):
                    for k in range(16):
                        dst[e][k + 16] = src[k][e]
            elif not dst_high_half and src_high_half:
                for e in range(16):
                    for k in range(16):
                        dst[e][k] = src[k][e + 16]
            else:
                for e in range(16):
                    for k in range(16):
                        dst[e][k + 16] = src[k][e + 16]
        else:  # every assignment turned around; the flags belong to this call's operands
            if dtype == "b32":
                for e in range(0, 16, 2):
                    for k in range(8):
                        dst[k][e // 2] = src[e][k]
                        dst[k + 8][e // 2] = src[e + 1][k]
            elif dtype == "b16":
                for e in range(16):
                    for k in range(16):
                        dst[k][e] = src[e][k]
            else:
                dh = 16 if dst_high_half else 0
                sh = 16 if src_high_half else 0
                for e in range(16):
                    for k in range(16):
                        dst[k][e + dh] = src[e][k + sh]
    return np.frombuffer(bytes(mem), dtype=np.uint8).copy()


def run_unit(ub, reverse, **kw):
    fn = _core.scatter_vnchwconv_reverse if reverse else _core.scatter_vnchwconv
    fn(ub, **kw)


def assert_same_bytes(got, want):
    diff = np.flatnonzero(got != want)
    assert diff.size == 0, (f"{diff.size} bytes differ, first at UB offset {diff[0]}: "
                            f"got {got[diff[0]]}, want {want[diff[0]]}")


# ---- operand layouts -------------------------------------------------------------------


def make_layout(kind, rng, repeat, dst_stride, src_stride):
    """(ub_size, dst, src): block addresses (bytes, multiples of 32) for a layout kind, with
    a UB just large enough for the last iteration."""
    pool = 48  # blocks the base pointers are drawn from
    if kind == "contiguous":  # the natural NCHW rows / NC1HWC0 slab: 512-aligned runs
        dst = [BLOCK * (16 + i) for i in range(16)]
        src = [BLOCK * i for i in range(16)]
    elif kind == "unaligned512":  # contiguous runs starting off a 512-byte boundary
        dst = [BLOCK * (21 + i) for i in range(16)]
        src = [BLOCK * (3 + i) for i in range(16)]
    elif kind == "random":  # 32 distinct blocks in random order
        blocks = rng.choice(pool, size=32, replace=False)
        dst, src = list(BLOCK * blocks[:16]), list(BLOCK * blocks[16:])
    elif kind == "overlap":  # repeated blocks, src and dst drawn from the same few blocks
        dst = list(BLOCK * rng.integers(0, 12, size=16))
        src = list(BLOCK * rng.integers(0, 12, size=16))
    elif kind == "in_place":  # src == dst
        src = list(BLOCK * rng.choice(pool, size=16, replace=False))
        dst = list(src)
    else:
        raise ValueError(kind)
    last = max(repeat - 1, 0)
    size = max(max(dst) + last * dst_stride * BLOCK, max(src) + last * src_stride * BLOCK) + BLOCK
    size += int(rng.integers(0, 3)) * BLOCK  # sometimes a little slack after the last block
    return size, [int(a) for a in dst], [int(a) for a in src]


MODES = [  # (dtype, dst_high_half, src_high_half)
    ("b8", False, False), ("b8", True, False), ("b8", False, True), ("b8", True, True),
    ("b16", False, False), ("b32", False, False),
]
LAYOUTS = ["contiguous", "unaligned512", "random", "overlap", "in_place"]
ITERATIONS = [  # (repeat, dst_stride, src_stride)
    (0, 1, 1), (1, 0, 0), (2, 0, 0), (3, 16, 1), (5, 1, 16), (4, 7, 3),
]
# repeat 255 (the uint8 limit), once per mode and direction: the oracle is slow.
BOUNDARY_ITERATIONS = [(255, 1, 1), (255, 0, 2)]

CASES = [(m, layout, it) for m in MODES for layout in LAYOUTS for it in ITERATIONS]
CASES += [(m, "random", it) for m in MODES for it in BOUNDARY_ITERATIONS]


def _case_id(case):
    (dtype, dh, sh), layout, (repeat, ds, ss) = case
    return f"{dtype}-dh{int(dh)}sh{int(sh)}-{layout}-r{repeat}-ds{ds}-ss{ss}"


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_matches_seed_loops(case, reverse):
    (dtype, dh, sh), layout, (repeat, dst_stride, src_stride) = case
    rng = np.random.default_rng(zlib.crc32(f"{_case_id(case)}-{reverse}".encode()))
    size, dst, src = make_layout(layout, rng, repeat, dst_stride, src_stride)
    ub = rng.integers(0, 256, size=size, dtype=np.uint8)
    kw = dict(dtype=dtype, dst=dst, src=src, repeat=repeat, dst_stride=dst_stride,
              src_stride=src_stride, dst_high_half=dh, src_high_half=sh)
    want = oracle(ub, reverse=reverse, **kw)
    got = ub.copy()
    run_unit(got, reverse, **kw)
    assert_same_bytes(got, want)
    if repeat == 0:
        assert_same_bytes(got, ub)


@pytest.mark.parametrize("dtype,elems", [("b8", 32), ("b16", 16), ("b32", 8)])
def test_contiguous_forward_is_nchw_to_nc1hwc0(dtype, elems):
    """Rows of 16 channels -> one slab: the layout meaning of the loops, independent of the
    oracle. b8 places 16 channels x 16 positions per call (low halves here)."""
    eb = ELEM_BYTES[dtype]
    np_dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32}[eb]
    rng = np.random.default_rng(7)
    rows = rng.integers(0, 2 ** (8 * eb), size=(16, elems), dtype=np_dtype)  # [C=16][HW]
    ub = np.zeros(1024, dtype=np.uint8)
    ub[:512] = rows.view(np.uint8).ravel()
    _core.scatter_vnchwconv(ub, dtype=dtype, dst=[512 + 32 * i for i in range(16)],
                            src=[32 * k for k in range(16)], repeat=1, dst_stride=0, src_stride=0)
    slab = ub[512:].view(np_dtype)
    if dtype == "b8":  # 16 positions x 32 channel bytes, channels 0..15 filled
        want = rows[:, :16].T
        np.testing.assert_array_equal(slab.reshape(16, 32)[:, :16], want)
    else:  # positions x 16 channels
        np.testing.assert_array_equal(slab.reshape(-1, 16), rows.T)


def test_b16_in_place_is_a_transpose():
    """src == dst, stride 0: the source register is read before any write, so the 16x16
    block of 2-byte elements is transposed in place (the literal in-place loop would not)."""
    rng = np.random.default_rng(3)
    ub = rng.integers(0, 256, size=512, dtype=np.uint8)
    before = ub.view(np.uint16).reshape(16, 16).copy()
    blocks = [32 * i for i in range(16)]
    _core.scatter_vnchwconv(ub, dtype="b16", dst=blocks, src=blocks, repeat=3, dst_stride=0,
                            src_stride=0)
    np.testing.assert_array_equal(ub.view(np.uint16).reshape(16, 16), before.T)  # 3 = 1 transpose


@pytest.mark.parametrize("dtype,dh,sh", MODES)
def test_reverse_restores_what_forward_read(dtype, dh, sh):
    """reverse(dst=A, src=B, dh=x, sh=y) restores the bytes forward(dst=B, src=A, dh=y, sh=x)
    read from A (NACC_SPEC §7: roles exchanged)."""
    rng = np.random.default_rng(11)
    ub = rng.integers(0, 256, size=64 * BLOCK * 4, dtype=np.uint8)
    blocks = rng.choice(64, size=32, replace=False) * BLOCK
    a, b = [int(x) for x in blocks[:16]], [int(x) for x in blocks[16:]]
    original = ub.copy()
    _core.scatter_vnchwconv(ub, dtype=dtype, dst=b, src=a, repeat=4, dst_stride=64,
                            src_stride=64, dst_high_half=dh, src_high_half=sh)
    read = np.zeros_like(ub, dtype=bool)  # the bytes of A the forward op read
    for r in range(4):
        for addr in a:
            lo = addr + r * 64 * BLOCK + (16 if sh else 0)
            read[lo : lo + (16 if dtype == "b8" else 32)] = True
    ub[read] = 0
    _core.scatter_vnchwconv_reverse(ub, dtype=dtype, dst=a, src=b, repeat=4, dst_stride=64,
                                    src_stride=64, dst_high_half=sh, src_high_half=dh)
    assert_same_bytes(ub[read], original[read])


# ---- operand checks ----------------------------------------------------------------------

BLOCKS16 = [32 * i for i in range(16)]


def call(ub=None, fn=None, **overrides):
    kw = dict(dtype="b16", dst=[512 + a for a in BLOCKS16], src=BLOCKS16, repeat=1,
              dst_stride=0, src_stride=0)
    kw.update(overrides)
    (fn or _core.scatter_vnchwconv)(np.zeros(1024, np.uint8) if ub is None else ub, **kw)


BAD_PARAMETERS = [  # (overrides, message fragment)
    (dict(repeat=256), "repeat 256 out of range [0, 255]"),
    (dict(repeat=-1), "repeat -1 out of range [0, 255]"),
    (dict(dst_stride=65536), "dst_stride 65536 out of range [0, 65535]"),
    (dict(src_stride=65536), "src_stride 65536 out of range [0, 65535]"),
    (dict(src_stride=-1), "src_stride -1 out of range"),
    (dict(dst=BLOCKS16[:15]), "dst must list 16 block addresses"),
    (dict(src=BLOCKS16 + [512]), "src must list 16 block addresses"),
    (dict(src=[16] + BLOCKS16[1:]), "src block 0 address 16 must be a multiple of 32"),
    (dict(dst=[-32] + BLOCKS16[1:]), "dst block 0 address -32 must be a multiple of 32"),
    (dict(dst=BLOCKS16[:15] + [MAX_BLOCK_ADDRESS + 32]), "dst block 15 address 2097152"),
    (dict(dtype="b16", dst_high_half=True), "only for b8"),
    (dict(dtype="b32", src_high_half=True), "only for b8"),
    (dict(dtype="b64"), "dtype must be 'b8', 'b16' or 'b32'"),
]


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("overrides,message", BAD_PARAMETERS,
                         ids=[m for _, m in BAD_PARAMETERS])
def test_bad_parameters_raise_value_error(overrides, message, reverse):
    fn = _core.scatter_vnchwconv_reverse if reverse else _core.scatter_vnchwconv
    with pytest.raises(ValueError, match=re.escape(message)):
        call(fn=fn, **overrides)


def test_parameter_limits_accepted():
    """The last valid value of each field: repeat 255, strides 65535, the highest block
    pointer (2^16 - 1 blocks)."""
    call(repeat=255, dst_stride=0, src_stride=0)
    call(repeat=1, dst_stride=65535, src_stride=65535)
    rng = np.random.default_rng(13)
    ub = rng.integers(0, 256, size=MAX_BLOCK_ADDRESS + BLOCK + 2 * 65535 * BLOCK, dtype=np.uint8)
    kw = dict(dtype="b16", dst=BLOCKS16[:15] + [MAX_BLOCK_ADDRESS], src=[MAX_BLOCK_ADDRESS] * 16,
              repeat=3, dst_stride=65535, src_stride=65535)
    want = oracle(ub, **kw)
    call(ub, **kw)
    assert_same_bytes(ub, want)


def test_ub_argument_checks():
    with pytest.raises(TypeError, match="expected dtype uint8"):
        call(np.zeros(1024, np.int8))
    with pytest.raises(ValueError, match="expected 1 dimension"):
        call(np.zeros((2, 512), np.uint8))
    with pytest.raises(ValueError, match="writable contiguous"):
        call(np.zeros(2048, np.uint8)[::2])
    ro = np.zeros(1024, np.uint8)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writable contiguous"):
        call(ro)


OUT_OF_BOUNDS = [  # (ub size, overrides, "operand block i at iteration r")
    (1024, dict(dst=BLOCKS16[:15] + [1024]), "dst block 15 at iteration 0"),
    (1000, dict(dst=BLOCKS16[:15] + [992 - 32]), None),  # last whole block: fits
    (1000, dict(dst=BLOCKS16[:15] + [992]), "dst block 15 at iteration 0"),  # bytes 992..1023
    (1024, dict(src=[0] * 5 + [800] + [0] * 10, repeat=8, src_stride=2),
     "src block 5 at iteration 4"),  # 800 + 4 * 64 = 1056 > 992
    (1024, dict(dst=[0] * 16, src=[0] * 16, repeat=255, dst_stride=1, src_stride=1),
     "src block 0 at iteration 32"),  # src before dst within an iteration
    (1024, dict(dst=[4096] * 16, repeat=0), None),  # repeat 0 touches nothing
    (0, dict(dst=[0] * 16, src=[0] * 16), "src block 0 at iteration 0"),
]


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("size,overrides,where", OUT_OF_BOUNDS,
                         ids=[f"{s}-{w}" for s, _, w in OUT_OF_BOUNDS])
def test_out_of_bounds_is_a_device_fault(size, overrides, where, reverse):
    fn = _core.scatter_vnchwconv_reverse if reverse else _core.scatter_vnchwconv
    ub = np.random.default_rng(5).integers(0, 256, size=size, dtype=np.uint8)
    before = ub.copy()
    if where is None:
        call(ub, fn=fn, **overrides)
        return
    with pytest.raises(nacc.DeviceFault, match=re.escape(where)):
        call(ub, fn=fn, **overrides)
    assert_same_bytes(ub, before)  # checked before anything is written


# ---- whole tensors ------------------------------------------------------------------------

DTYPES = [np.int8, np.uint8, np.int16, np.float16, np.int32, np.float32]
CHANNELS = [1, 3, 31, 32, 33, 100]
PLANES = {1: (1, 1), 7: (7, 1), 32: (4, 8), 33: (3, 11), 1000: (20, 50)}  # H*W -> (H, W)
# Several tiles (1024 positions per tile for 1/2-byte elements, 512 for 4-byte) and N > 1.
LARGE = [(2, 5, 50, 50), (1, 17, 1, 1025), (3, 40, 19, 27), (1, 2, 1, 513)]


def c0_of(dtype):
    return 32 if np.dtype(dtype).itemsize == 1 else 16


def random_tensor(rng, shape, dtype):
    """Random bytes viewed as `dtype`: every bit pattern (NaNs too) must move unchanged."""
    itemsize = np.dtype(dtype).itemsize
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def reference_nc1hwc0(x):
    n, c, h, w = x.shape
    c0 = c0_of(x.dtype)
    c1 = -(-c // c0)
    padded = np.pad(x, ((0, 0), (0, c1 * c0 - c), (0, 0), (0, 0)))
    return padded.reshape(n, c1, c0, h, w).transpose(0, 1, 3, 4, 2)


def assert_same_tensor(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


TENSOR_CASES = [(2, c, *PLANES[hw], d) for d in DTYPES for c in CHANNELS for hw in PLANES]
TENSOR_CASES += [(*shape, d) for d in DTYPES for shape in LARGE]


TENSOR_IDS = [f"{np.dtype(d).name}-{n}x{c}x{h}x{w}" for n, c, h, w, d in TENSOR_CASES]


@pytest.mark.parametrize("n,c,h,w,dtype", TENSOR_CASES, ids=TENSOR_IDS)
def test_nchw_nc1hwc0_round_trip(n, c, h, w, dtype):
    rng = np.random.default_rng(n * 1000003 + c * 1009 + h * 31 + w)
    x = random_tensor(rng, (n, c, h, w), dtype)
    y = _core.nchw_to_nc1hwc0(x)
    assert_same_tensor(y, reference_nc1hwc0(x))
    assert_same_tensor(_core.nc1hwc0_to_nchw(y, c), x)
    tail = c % c0_of(dtype)
    if tail:  # the reverse ignores whatever the padded channels hold
        y_dirty = y.copy()
        y_dirty[:, -1, :, :, tail:] = random_tensor(rng, y_dirty[:, -1, :, :, tail:].shape, dtype)
        assert_same_tensor(_core.nc1hwc0_to_nchw(y_dirty, c), x)


def test_conversion_accepts_views_and_empty_tensors():
    x = np.arange(3 * 5 * 7 * 2, dtype=np.int16).reshape(2, 7, 5, 3).transpose(0, 3, 2, 1)
    assert_same_tensor(_core.nchw_to_nc1hwc0(x), reference_nc1hwc0(x))
    e = np.zeros((0, 3, 4, 4), np.int8)
    assert _core.nchw_to_nc1hwc0(e).shape == (0, 1, 4, 4, 32)
    assert _core.nchw_to_nc1hwc0(np.zeros((1, 0, 4, 4), np.float32)).shape == (1, 0, 4, 4, 16)
    assert _core.nc1hwc0_to_nchw(np.zeros((1, 1, 0, 4, 16), np.float16), 5).shape == (1, 5, 0, 4)


CONVERSION_ERRORS = [  # (callable, exception, message fragment)
    (lambda: _core.nchw_to_nc1hwc0(np.zeros((1, 3, 4, 4), np.float64)), TypeError,
     "dtype must be int8, uint8, int16, float16, int32 or float32"),
    (lambda: _core.nchw_to_nc1hwc0(np.zeros((1, 3, 4, 4), np.uint16)), TypeError, "dtype must"),
    (lambda: _core.nchw_to_nc1hwc0(np.zeros((3, 4, 4), np.int8)), ValueError,
     "expected 4 dimensions"),
    (lambda: _core.nc1hwc0_to_nchw(np.zeros((1, 1, 4, 4, 16), np.int8), 3), ValueError,
     "C0 (last dimension) must be 32"),
    (lambda: _core.nc1hwc0_to_nchw(np.zeros((1, 2, 4, 4, 16), np.int32), 16), ValueError,
     "channels 16 does not match C1 = 2"),
    (lambda: _core.nc1hwc0_to_nchw(np.zeros((1, 2, 4, 4, 16), np.int32), 33), ValueError,
     "channels in [17, 32]"),
    (lambda: _core.nc1hwc0_to_nchw(np.zeros((1, 2, 4, 4), np.int32), 3), ValueError,
     "expected 5 dimensions"),
]


@pytest.mark.parametrize("fn,exc,message", CONVERSION_ERRORS,
                         ids=[m for _, _, m in CONVERSION_ERRORS])
def test_conversion_argument_errors(fn, exc, message):
    with pytest.raises(exc, match=re.escape(message)):
        fn()

"""The Program container (csrc/runtime/program.cc, docs/command_stream.md §9) and the runtime
(csrc/runtime/runtime.cc): byte layout, hostile bytes (every truncation, corrupted bytes,
absurd counts) rejected with ValueError, Program validation, running with the caller's
buffers, faults turned into exceptions, and concurrency beyond the 12 batch handlers."""
import struct
import threading

import numpy as np
import pytest

import nacc
from nacc import _core
import nacc_streams as ns
from nacc_streams import Layer, Tile, grid, ra


def conv_program(seed=0, H=9, W=8, C=5, OC=6, tiles=None, scratch_two_layers=False, cores=1):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (1, H, W, C), dtype=np.int8)
    L = Layer("conv", x, rng.integers(-128, 128, (OC, 3, 3, C), dtype=np.int8),
              bias=rng.integers(-3000, 3000, OC).astype(np.int32),
              mult=rng.integers(1 << 30, (1 << 31) - 1, OC).astype(np.int32),
              shift=np.full(OC, -8, np.int32), pad=(1, 1, 1, 1), in_zp=2, out_zp=-1)
    if not scratch_two_layers:
        p, ins = ns.single_layer(L, tiles or grid(H, W, 4, 5))
        return p, ins, L.reference()
    B = Layer("conv", L.reference(), rng.integers(-128, 128, (4, 3, 3, OC), dtype=np.int8),
              bias=None, mult=np.full(4, 1 << 30, np.int32), shift=np.full(4, -7, np.int32),
              pad=(1, 1, 1, 1))
    sb = ns.StreamBuilder()
    mc = dict(mode=2, cores=cores) if cores > 1 else {}
    sb.layer(L, grid(H, W, max(3, cores), 8, **mc), in_addr=ra(ns.INPUT, 0),
             out_addr=ra(ns.SCRATCH, 0))
    sb.e.op("NPU_OP_KERNEL_WAIT", 0)
    sb.layer(B, grid(H, W, 6 if cores > 1 else 5, 4, **mc), in_addr=ra(ns.SCRATCH, 0),
             out_addr=ra(ns.OUTPUT, 0))
    p = ns.program(sb, [x], [(1, H, W, 4)], scratch=H * W * OC, cores=cores)
    p.add_op("conv_a", "CONV_2D", 0, len(p.commands) // 2, macs=123, bound_cycles=456,
             weight_bytes=OC * 9 * C, weight_bytes_stored=99, min_dma_bytes=777, lowering="direct")
    return p, [x], B.reference()


# ---------------------------------------------------------------------------
# Container format.

def test_round_trip_and_fields():
    p, ins, ref = conv_program(scratch_two_layers=True)
    b = p.to_bytes()
    assert b[:8] == b"NACCPROG" and struct.unpack_from("<I", b, 8)[0] == 3
    q = _core.Program.from_bytes(b)
    assert q.to_bytes() == b
    np.testing.assert_array_equal(q.commands, p.commands)
    assert q.commands.dtype == np.uint32
    np.testing.assert_array_equal(q.constants, p.constants)
    assert q.regions == p.regions and q.inputs == p.inputs and q.outputs == p.outputs
    assert q.ops == p.ops and q.ops[0]["min_dma_bytes"] == 777 and q.ops[0]["lowering"] == "direct"
    assert q.hw.as_dict() == p.hw.as_dict()
    assert [r["kind"] for r in q.regions] == ["constant", "input", "scratch", "output"] + ["unused"] * 4
    assert "NPU_OP_CONV" in q.disassemble() and q.disassemble().count("\n") > 50
    out, _ = _core.Runtime().run(q, ins)
    np.testing.assert_array_equal(out[0], ref)


# An op record without an output location (add_op) has 28 bytes of it, added
# in format version 2: empty name (4), rank 0 (4), region -1 (4), offset (8),
# size (8); version 3 then adds the lowering string (u32 length + bytes).
OUTPUT_RECORD_BYTES = 28


def lowering_bytes(p):
    return 4 + len(p.ops[-1]["lowering"])


def test_format_versions_1_and_2_still_load():
    p, ins, ref = conv_program(scratch_two_layers=True)
    b = p.to_bytes()
    low = lowering_bytes(p)
    v2 = with_checksum(b[:8] + struct.pack("<I", 2) + b[12:-8 - low])
    v1 = with_checksum(b[:8] + struct.pack("<I", 1) + b[12:-8 - low - OUTPUT_RECORD_BYTES])
    for version, blob in ((2, v2), (1, v1)):
        q = _core.Program.from_bytes(blob)
        assert q.ops[0]["lowering"] == "", version
        assert q.ops[0]["output_region"] == (-1 if version == 1 else p.ops[0]["output_region"])
        out, _ = _core.Runtime().run(q, ins)
        np.testing.assert_array_equal(out[0], ref)


@pytest.mark.parametrize("region,offset,size,match", [
    (0, 0, 16, "output is in region 0, a constant region"),
    (8, 0, 16, "output region 8 out of range"),
    (2, 0, 10 ** 6, r"output bytes \[0, 1000000\) are not inside region 2"),
    (2, -1, 16, "output bytes"),
])
def test_bad_op_output_record_rejected(region, offset, size, match):
    p, _, _ = conv_program(scratch_two_layers=True)
    c = bytearray(p.to_bytes()[:-8])
    struct.pack_into("<iqq", c, len(c) - lowering_bytes(p) - 20, region, offset, size)
    with pytest.raises(ValueError, match=match):
        _core.Program.from_bytes(with_checksum(c))


def layout_offsets(p):
    """Byte offsets of each section, from docs/command_stream.md §9 (independent parser)."""
    b = p.to_bytes()
    off = {"magic": 0, "version": 8, "hw": 12, "regions": 32}
    pos = 32 + 4 + 8 * 13
    off["constants"] = pos
    pos += 8 + struct.unpack_from("<Q", b, pos)[0]
    off["commands"] = pos
    pos += 4 + 4 * struct.unpack_from("<I", b, pos)[0]
    off["inputs"] = pos
    return b, off


def test_layout_matches_document():
    p, _, _ = conv_program()
    b, off = layout_offsets(p)
    cores, sram, dma, ext = struct.unpack_from("<IqII", b, off["hw"])
    assert (cores, sram, dma, ext) == (1, 65536, 16, 64)
    assert struct.unpack_from("<I", b, off["regions"])[0] == 8
    kind, io, size = struct.unpack_from("<Biq", b, off["regions"] + 4 + 13 * 1)
    assert (kind, io, size) == (2, 0, 9 * 8 * 5)
    n = struct.unpack_from("<Q", b, off["constants"])[0]
    assert bytes(b[off["constants"] + 8:off["constants"] + 8 + n]) == p.constants.tobytes()
    nw = struct.unpack_from("<I", b, off["commands"])[0]
    assert list(struct.unpack_from(f"<{nw}I", b, off["commands"] + 4)) == list(p.commands)
    # FNV-1a-64 of everything before the checksum.
    h = 0xcbf29ce484222325
    for byte in b[:-8]:
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    assert struct.unpack_from("<Q", b, len(b) - 8)[0] == h


def test_every_truncation_rejected():
    p, _, _ = conv_program(H=4, W=4, C=2, OC=2, tiles=[Tile(0, 4, 0, 4)])
    b = p.to_bytes()
    seen = set()
    for n in range(len(b)):
        with pytest.raises(ValueError, match="^program: (truncated in|bad magic)") as e:
            _core.Program.from_bytes(b[:n])
        seen.add(str(e.value).split(" (")[0])
    assert {"program: truncated in header", "program: truncated in commands",
            "program: truncated in constants", "program: truncated in checksum"} <= seen
    with pytest.raises(ValueError, match=r"truncated in hardware configuration \(need 8 bytes, 1 left\)"):
        _core.Program.from_bytes(b[:17])
    _, off = layout_offsets(p)
    with pytest.raises(ValueError, match=r"truncated in commands \(command word count \d+ needs at least"):
        _core.Program.from_bytes(b[:off["commands"] + 4 + 4 * 3 + 1])


def test_corrupt_bytes_rejected():
    p, _, _ = conv_program(H=4, W=4, C=2, OC=2, tiles=[Tile(0, 4, 0, 4)])
    b = bytearray(p.to_bytes())
    rng = np.random.default_rng(1)
    for pos in list(range(8, len(b), max(1, len(b) // 200))) + [len(b) - 1]:
        c = bytearray(b)
        c[pos] ^= 1 << int(rng.integers(0, 8))
        with pytest.raises(ValueError, match="^program: "):
            _core.Program.from_bytes(bytes(c))
    with pytest.raises(ValueError, match="bad magic"):
        _core.Program.from_bytes(b"NACCPROX" + bytes(b[8:]))
    with pytest.raises(ValueError, match="format version 5 is not supported"):
        _core.Program.from_bytes(bytes(b[:8]) + struct.pack("<I", 5) + bytes(b[12:]))
    with pytest.raises(ValueError, match="checksum mismatch"):
        c = bytearray(b)
        c[-20] ^= 0x40
        _core.Program.from_bytes(bytes(c))
    with pytest.raises(ValueError, match="trailing bytes"):
        _core.Program.from_bytes(bytes(b) + b"\0")


def with_checksum(body):
    h = 0xcbf29ce484222325
    for byte in body:
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return bytes(body) + struct.pack("<Q", h)


def test_absurd_counts_rejected_before_allocation():
    """Counts far beyond the remaining bytes fail fast (valid checksum or not)."""
    p, _, _ = conv_program(H=4, W=4, C=2, OC=2, tiles=[Tile(0, 4, 0, 4)])
    b, off = layout_offsets(p)
    for section, fmt, value, match in [
        ("constants", "<Q", 1 << 62, "truncated in constants"),
        ("commands", "<I", 0xFFFFFFFF, r"truncated in commands \(command word count 4294967295"),
        ("inputs", "<I", 0x7FFFFFFF, "truncated in inputs"),
    ]:
        c = bytearray(b[:-8])
        struct.pack_into(fmt, c, off[section], value)
        with pytest.raises(ValueError, match=match):
            _core.Program.from_bytes(with_checksum(c))
    c = bytearray(b[:-8])
    struct.pack_into("<I", c, off["inputs"] + 4, 0xFFFFFF)  # name length
    with pytest.raises(ValueError, match="tensor name length 16777215 exceeds 65535"):
        _core.Program.from_bytes(with_checksum(c))


@pytest.mark.parametrize("mutate,match", [
    (lambda b, o: struct.pack_into("<I", b, o["hw"], 3), "cores 3 must be 1, 2, 4, 8, 16 or 32"),
    (lambda b, o: struct.pack_into("<q", b, o["hw"] + 4, 1000), "sram_bytes 1000"),
    (lambda b, o: struct.pack_into("<B", b, o["regions"] + 4, 9), "region kind 9"),
    (lambda b, o: struct.pack_into("<i", b, o["regions"] + 4 + 13 + 1, 3), "io_index 3 out of range"),
    (lambda b, o: struct.pack_into("<q", b, o["regions"] + 4 + 13 * 3 + 5, 7), "output 0 'out0' size 432 must equal"),
    (lambda b, o: struct.pack_into("<I", b, o["commands"] + 4, 0), "command stream word 0 .*opcode 0 is reserved"),
])
def test_semantic_validation(mutate, match):
    p, _, _ = conv_program(tiles=[Tile(0, 9, 0, 8)])
    b, off = layout_offsets(p)
    c = bytearray(b[:-8])
    mutate(c, off)
    with pytest.raises(ValueError, match=match):
        _core.Program.from_bytes(with_checksum(c))


def test_program_builder_validation():
    p = _core.Program()
    with pytest.raises(ValueError, match="empty stream"):
        p.validate()
    p.commands = np.array([1], np.uint32)
    p.validate()
    p.add_input("x", [1, 2, 2, 3], 1)
    p.constants = b"\1\2"
    with pytest.raises(ValueError, match="2 constant bytes but no constant region"):
        p.validate()
    p.set_region(0, "constant", 2)
    p.validate()
    p.set_region(5, "input", 12, 0)
    with pytest.raises(ValueError, match="input region 5 names input 0 but that tensor is in region 1"):
        p.validate()
    with pytest.raises(ValueError, match="region kind 'weights'"):
        p.set_region(5, "weights", 1)


# ---------------------------------------------------------------------------
# Runtime.

def test_run_checks_buffers_and_hw():
    p, ins, ref = conv_program()
    rt = _core.Runtime()
    with pytest.raises(ValueError, match="0 inputs given"):
        rt.run(p, [])
    with pytest.raises(ValueError, match="elements, the program expects 360"):
        rt.run(p, [ins[0][..., :4]])
    with pytest.raises(TypeError):
        rt.run(p, [ins[0].astype(np.int16)])
    with pytest.raises(ValueError, match="compiled for 65536 bytes of SRAM"):
        _core.Runtime(sram_kb=32).run(p, ins)
    p2, _ = ns.single_layer(Layer("maxpool", ins[0], kernel=(2, 2), stride=(2, 2)), [Tile(0, 4, 0, 4)], cores=4)
    with pytest.raises(ValueError, match="compiled for 4 cores"):
        rt.run(p2, ins)
    out, stats = rt.run(p, ins)
    np.testing.assert_array_equal(out[0], ref)
    assert stats["handler"] == 0 and stats["cycles"] > 0 and len(stats["timeline"]) == stats["kernels"]
    for bad in (dict(cores=3), dict(sram_kb=3), dict(threads=0), dict(ext_bytes_per_cycle=0)):
        with pytest.raises(ValueError):
            _core.Runtime(**bad)
    # The SRAM size in KB: the bounds of the bytes check, said in KB.
    for kb in (0, 3, 16385, 1 << 40):
        with pytest.raises(ValueError, match=rf"sram_kb {kb} out of range \[4, 16384\]"):
            _core.HwConfig(sram_kb=kb)
    assert _core.HwConfig(sram_kb=16384).sram_bytes == 16 << 20


@pytest.mark.parametrize("execution", ["step", "replay"])
def test_loaded_program_runs_its_copy(execution):
    """Runtime.load keeps one validated copy (its plan built once): every LoadedProgram.run
    gives Runtime.run's outputs and counters, a later change to the Program does not reach
    the loaded copy, the copy outlives the Python Runtime object, and bad inputs are refused
    as by Runtime.run."""
    p, ins, ref = conv_program(scratch_two_layers=True, cores=4, H=12)
    rt = _core.Runtime(cores=4, execution=execution)
    loaded = rt.load(p)
    want_out, want = rt.run(p, ins, timeline=False)
    for _ in range(3):
        out, st = loaded.run(ins)
        np.testing.assert_array_equal(out[0], ref)
        np.testing.assert_array_equal(out[0], want_out[0])
        assert st["replayed"] == (execution == "replay")
        assert (st["cycles"], st["kernels"], st["ops"]) == (want["cycles"], want["kernels"], want["ops"])
    summary = loaded.plan_summary()
    assert summary == rt.plan_summary(p) and summary["plan"] is True
    assert loaded.program.to_bytes() == p.to_bytes()
    # Wreck the Program's stream (no longer loadable): the loaded copy keeps the old one.
    p.commands = np.zeros_like(p.commands)
    with pytest.raises(ValueError):
        rt.load(p)
    del rt
    np.testing.assert_array_equal(loaded.run(ins)[0][0], ref)
    with pytest.raises(ValueError, match="0 inputs given"):
        loaded.run([])
    with pytest.raises(ValueError, match="elements, the program expects"):
        loaded.run([ins[0][..., :4]])
    with pytest.raises(ValueError, match="compiled for 4 cores"):
        _core.Runtime(cores=1).load(conv_program(cores=4, scratch_two_layers=True)[0])


def test_fault_never_reports_success():
    """A stream that faults after writing part of its output raises; the handler is released."""
    p, ins, ref = conv_program(tiles=grid(9, 8, 3, 8))
    words = p.commands
    stop = len(words) - 1
    # Replace the last KERNEL_WAIT + STOP by a DMA that reads far outside the input.
    bad = list(words[:stop - 1])
    bad += [int(x) for x in _core.encode_commands([
        {"opcode": "NPU_SET_REGISTER", "register": "DMA_SRC", "payload": ra(ns.INPUT, 1 << 20)},
        {"opcode": "NPU_SET_REGISTER", "register": "DMA_LEN", "payload": 16},
        {"opcode": "NPU_OP_KERNEL_WAIT"}, {"opcode": "NPU_OP_DMA_START"}, {"opcode": "NPU_OP_STOP"}])]
    p.commands = np.array(bad, np.uint32)
    rt = _core.Runtime()
    with pytest.raises(nacc.DeviceFault, match="bus read error: DMA source"):
        rt.run(p, ins)
    p.commands = words
    for _ in range(13):  # every handler still usable
        np.testing.assert_array_equal(rt.run(p, ins)[0][0], ref)


@pytest.mark.parametrize("execution", ["step", "replay"])
def test_more_concurrent_runs_than_handlers(execution):
    """16 threads x 3 runs on 12 batch handlers: every run waits for a handler, none fails,
    every output exact; the same Program runs on several handlers at once, and the cores of
    the 4-core programs share one host-thread pool between concurrent runs. (A replay is
    so short that runs rarely overlap: how many handlers it used depends on timing, so the
    several-handlers check is made on the stepped runs.)"""
    progs = [conv_program(seed=s, scratch_two_layers=True, cores=1 + s % 2 * 3, H=12)
             for s in range(4)]
    rt = _core.Runtime(cores=4, threads=2, execution=execution)
    rt.set_parallel_min_macs(0)  # every multi-core command on the shared host-thread pool
    errors, handlers = [], set()
    barrier = threading.Barrier(16)  # reused by every burst

    def worker(i):
        try:
            barrier.wait()
            for k in range(3):
                p, ins, ref = progs[(i + k) % 4]
                out, st = rt.run(p, ins, timeline=False)
                handlers.add(st["handler"])
                if not np.array_equal(out[0], ref):
                    errors.append(f"thread {i} run {k}: wrong output")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"thread {i}: {e!r}")

    # Whether runs overlap depends on the host's scheduling (a run takes a
    # fraction of a millisecond; the host-thread pool's callers spin rather
    # than sleep): bursts repeat, up to 10, until the stepped runs have used
    # several handlers.
    for _ in range(10):
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        if execution != "step" or len(handlers) > 1:
            break
    assert handlers <= set(range(12))
    if execution == "step":
        assert len(handlers) > 1

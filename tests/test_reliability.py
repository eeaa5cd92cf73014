"""Reliability of the delegate and the EP inside someone else's process (issue 7,
docs/reliability.md): injected device faults, damaged caches and Programs, bad
options, concurrency and resource use.

Faults: the runtime's test-only fault hook (nacc::testing::inject_faults, off by
default, reached only through nacc._core._test_inject_fault and the libraries'
*_test_inject_fault entry points, never through an option) makes the next run
raise a bus error at a chosen command, or bind the output one byte short so
that the DMA writing its tail runs past the buffer. Every fault must surface as
an error (never success with a partly written output) and leave the
interpreter / session usable and exact.

Default sizes fit the test budget (250 inferences per thread, 1,000 steady
inferences, 40 create/destroy cycles); the issue's full sizes (1,000 per thread,
10,000 inferences, 100 interpreters and sessions) are the @slow twins.
"""
import ctypes
import os
import struct
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import nacc
from nacc import _core
from delegate_models import ModelBuilder, random_inputs, run
from tflite_builder import make_interpreter

ort = pytest.importorskip("onnxruntime")
import nacc.onnxruntime as nort  # noqa: E402
import onnx_models as om  # noqa: E402

# ORT warns when its CPU fallback retry meets SessionOptions that name our EP
pytestmark = pytest.mark.filterwarnings("ignore:Specified .providers.:UserWarning")

HERE = os.path.dirname(os.path.abspath(__file__))
SENTINEL = 77

# ---- helpers -------------------------------------------------------------------------


def tflite_model():
    """conv -> conv on a small input: one NPU partition that writes the model output."""
    m = ModelBuilder()
    x = m.input((1, 8, 8, 3))
    return m.build([m.conv(m.conv(x, 8), 4)])


def delegate_lib():
    lib = ctypes.CDLL(nacc.delegate_library_path())
    lib.nacc_tflite_test_inject_fault.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_int]
    lib.nacc_tflite_test_inject_fault.restype = ctypes.c_int
    return lib


def ep_lib():
    import nacc.onnxruntime as nort

    lib = ctypes.CDLL(nort.get_library_path())
    lib.nacc_ep_test_inject_fault.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_int]
    lib.nacc_ep_test_inject_fault.restype = ctypes.c_int
    return lib


def inject(lib_fn, kind, command=0, runs=1):
    assert lib_fn(kind.encode(), command, runs) == 0


class Tflite:
    """An interpreter with the delegate plus its exact reference outputs."""

    def __init__(self, model, seeds=(0,), **options):
        options.setdefault("log_level", "off")
        self.delegate = nacc.load_delegate(**options)
        self.interp = make_interpreter(model, delegates=[self.delegate])
        self.interp.allocate_tensors()
        ref = make_interpreter(model)
        ref.allocate_tensors()
        self.inputs = [random_inputs(ref, seed=s) for s in seeds]
        self.want = [run(model, x) for x in self.inputs]
        self.out = self.interp.get_output_details()[0]["index"]

    def invoke(self, k=0):
        for det, v in zip(self.interp.get_input_details(), self.inputs[k]):
            self.interp.set_tensor(det["index"], v)
        self.interp.invoke()
        return self.interp.get_tensor(self.out)

    def exact(self, k=0):
        return np.array_equal(self.invoke(k), self.want[k][0])

    def fill_output(self, value):
        view = self.interp.tensor(self.out)
        view()[...] = value
        del view  # TFLite refuses to invoke while a numpy view of a tensor is alive


# ---- faults: TFLite delegate -------------------------------------------------------------

FAULTS = [  # (kind, command / shortfall, error text)
    ("bus_error", 0, "bus read error: command fetch"),     # before the first command
    ("bus_error", 40, "bus read error: command fetch"),    # mid-stream, after output writes began
    ("dma_overrun", 1, "bus write error"),                 # the last output byte
    ("dma_overrun", 100, "bus write error"),
]


@pytest.mark.parametrize("kind,command,message", FAULTS)
def test_delegate_fault_is_an_error_and_the_interpreter_recovers(kind, command, message):
    t = Tflite(tflite_model(), seeds=(0, 1))
    assert t.delegate.report().claimed_nodes == 2
    lib = delegate_lib()
    assert t.exact(0)
    t.fill_output(SENTINEL)
    inject(lib.nacc_tflite_test_inject_fault, kind, command)
    with pytest.raises(RuntimeError, match=message):
        t.invoke(1)
    # usable afterwards, exact, on every input
    assert t.exact(1) and t.exact(0)
    (p,) = t.delegate.report().partitions
    assert p.invocations == 3  # the failed run is not counted as an invocation


def test_delegate_partial_output_is_never_success():
    """The DMA overrun faults after the NPU wrote most of the output: the output
    is partly written (so the sentinel check is meaningful) and invoke raised."""
    t = Tflite(tflite_model())
    t.fill_output(SENTINEL)
    inject(delegate_lib().nacc_tflite_test_inject_fault, "dma_overrun", 1)
    with pytest.raises(RuntimeError, match="past the end"):
        t.invoke()
    got = t.interp.get_tensor(t.out)
    assert np.any(got != SENTINEL) and np.any(got == SENTINEL)  # partly written
    assert t.exact()


def test_fault_hook_is_off_by_default_and_validated():
    lib = delegate_lib()
    assert lib.nacc_tflite_test_inject_fault(b"meteor", 0, 1) == 1
    assert lib.nacc_tflite_test_inject_fault(b"bus_error", -1, 1) == 1
    assert lib.nacc_tflite_test_inject_fault(b"dma_overrun", 0, 1) == 1
    with pytest.raises(ValueError, match="not one of none, bus_error, dma_overrun"):
        _core._test_inject_fault("meteor")
    # armed for 2 runs, then off again; 'none' disarms
    t = Tflite(tflite_model())
    inject(lib.nacc_tflite_test_inject_fault, "bus_error", 0, runs=2)
    for _ in range(2):
        with pytest.raises(RuntimeError):
            t.invoke()
    assert t.exact()
    inject(lib.nacc_tflite_test_inject_fault, "bus_error", 0, runs=5)
    inject(lib.nacc_tflite_test_inject_fault, "none", 0, runs=5)
    assert t.exact()
    # no delegate option reaches the hook
    names = [s.name for s in nacc.tflite.delegate_option_specs()]
    assert names and not any("fault" in n or "inject" in n for n in names)


def test_core_runtime_fault_leaves_every_handler_usable():
    """nacc._core: a bus error mid-stream on a handler, then 13 runs (every one of
    the 12 batch handlers again) are exact."""
    import nacc_streams as ns
    from test_runtime import conv_program

    p, ins, ref = conv_program()
    rt = _core.Runtime()
    _core._test_inject_fault("bus_error", 5)
    with pytest.raises(nacc.DeviceFault, match="injected"):
        rt.run(p, ins)
    _core._test_inject_fault("dma_overrun", 3)
    with pytest.raises(nacc.DeviceFault, match="bus write error"):
        rt.run(p, ins)
    for _ in range(13):
        np.testing.assert_array_equal(rt.run(p, ins)[0][0], ref)
    assert ns  # nacc_streams is what conv_program builds with


# ---- faults: damaged Program bytes and delegate cache files --------------------------------

def _fnv1a64(data: bytes) -> int:
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def cache_entry_payload_offset(data: bytes) -> int:
    """Where the payload of a cache_dir entry starts (support/cache_entry.h: magic
    "NACCCENT", u32 version, four u32-length strings, u64 payload size, 16-byte digest)."""
    assert data[:8] == b"NACCCENT"
    pos = 12
    for _ in range(4):
        pos += 4 + struct.unpack_from("<I", data, pos)[0]
    return pos + 8 + 16  # payload size, payload Digest128


def _damage(kind, data: bytes) -> bytes:
    if kind == "empty":
        return b""
    if kind == "truncated_half":
        return data[:len(data) // 2]
    if kind == "truncated_last_byte":
        return data[:-1]
    if kind == "flipped_byte":
        b = bytearray(data)
        b[len(b) * 2 // 3] ^= 0x5A
        return bytes(b)
    if kind == "other_format_version":
        b = bytearray(data)
        b[8:12] = struct.pack("<I", struct.unpack_from("<I", data, 8)[0] + 1)
        return bytes(b)
    if kind == "trailing_garbage":
        return data + b"\0" * 16
    raise AssertionError(kind)


DAMAGE = ["empty", "truncated_half", "truncated_last_byte", "flipped_byte",
          "other_format_version", "trailing_garbage"]


@pytest.mark.parametrize("kind", DAMAGE)
def test_damaged_delegate_cache_entry_is_recompiled(kind, tmp_path):
    model = tflite_model()
    first = Tflite(model, cache_dir=tmp_path)
    assert first.exact()
    (entry,) = tmp_path.glob("*.nacc")
    entry.write_bytes(_damage(kind, entry.read_bytes()))
    t = Tflite(model, seeds=(0, 1), cache_dir=tmp_path, log_level="warning")
    (p,) = t.delegate.report().partitions
    assert not p.cache_hit  # rejected, recompiled: the documented fallback
    assert t.exact(0) and t.exact(1)
    # the entry was replaced by a good one
    again = Tflite(model, cache_dir=tmp_path)
    assert again.delegate.report().partitions[0].cache_hit and again.exact()


@pytest.mark.parametrize("kind", DAMAGE)
def test_damaged_program_bytes_are_rejected(kind):
    from test_runtime import conv_program

    p, ins, ref = conv_program()
    with pytest.raises(ValueError, match="program: "):
        _core.Program.from_bytes(_damage(kind, p.to_bytes()))
    np.testing.assert_array_equal(_core.Runtime().run(p, ins)[0][0], ref)


# ---- faults: ONNX Runtime EP ------------------------------------------------------------

def ort_model(c_out=8):
    return om.qdq_unit(om.conv(c_in=4, c_out=c_out, hw=(8, 8)))


@pytest.fixture(scope="module")
def ort_case():
    nort.register()
    model = ort_model()
    feeds = [om.int8_feeds(model, seed=s) for s in range(2)]
    s = om.session(model, "nacc")
    assert nort.partition_reports()[-1]["partitions"]
    want = [s.run(None, f)[0] for f in feeds]
    cpu = om.session(model, ["CPUExecutionProvider"])
    for f, w in zip(feeds, want):  # the EP's documented rule against the CPU EP: within 1
        assert np.abs(cpu.run(None, f)[0].astype(int) - w.astype(int)).max() <= 1
    return model, feeds, want


@pytest.mark.parametrize("kind,command,message", FAULTS)
def test_ep_fault_is_an_error_and_the_session_recovers(ort_case, kind, command, message):
    model, feeds, want = ort_case
    s = om.session(model, "nacc")
    (name,) = [o.name for o in s.get_outputs()]
    inject(ep_lib().nacc_ep_test_inject_fault, kind, command)
    out = np.full_like(want[1], SENTINEL)
    io = s.io_binding()
    for k, v in feeds[1].items():
        io.bind_cpu_input(k, v)
    io.bind_output(name, "cpu", 0, out.dtype, out.shape, out.ctypes.data)
    with pytest.raises(Exception, match=message):
        s.run_with_iobinding(io)
    # the EP writes an output only after a run succeeded: nothing partial
    assert np.all(out == SENTINEL)
    s.run_with_iobinding(io)
    np.testing.assert_array_equal(out, want[1])
    np.testing.assert_array_equal(s.run(None, feeds[0])[0], want[0])


_EP_CACHE_CHILD = textwrap.dedent("""
    import sys, numpy as np
    sys.path.insert(0, {tests!r})
    import nacc.onnxruntime as nort, onnx_models as om
    nort.register()
    data = np.load({npz!r}, allow_pickle=True)
    for i, (d, kind) in enumerate({cases!r}):
        model = bytes(data["model%d" % i])
        feeds = data["feeds%d" % i].item()
        got = om.session(model, "nacc", {{"cache_dir": d}}).run(None, feeds)[0]
        ok = np.array_equal(got, data["want%d" % i])
        print(kind, "exact" if ok else "WRONG", flush=True)
""")


def test_damaged_ep_cache_entries_in_a_fresh_process(tmp_path):
    """The EP keeps compiled partitions in a process cache, so damaged cache_dir
    files are read by a fresh process: each is rejected (or, for the damaged
    binding flags format 1 did not protect, caught by the checksum) and
    recompiled; the results are exact."""
    nort.register()
    cases, arrays = [], {}
    kinds = DAMAGE + ["flipped_layout_flag"]
    for i, kind in enumerate(kinds):
        # one model per case, none used elsewhere in this process (the EP's process
        # cache would serve it without touching cache_dir)
        model = ort_model(c_out=24 + i)
        feeds = om.int8_feeds(model, seed=i)
        d = tmp_path / kind
        want = om.session(model, "nacc", {"cache_dir": str(d)}).run(None, feeds)[0]
        (entry,) = d.glob("*.naccpart")
        data = entry.read_bytes()
        if kind == "flipped_layout_flag":
            # the first binding's NCHW flag: after the cache-entry header, then the
            # blob's magic, version and two strings
            pos = cache_entry_payload_offset(data) + 12
            for _ in range(2):
                pos += 4 + struct.unpack_from("<I", data, pos)[0]
            pos += 4 + struct.unpack_from("<I", data, pos + 4)[0] + 4  # count, name
            pos += 4  # elem type
            # 0: the Program converts the layout itself (boundary_layout=device,
            # docs/onnxruntime_ep.md "Layout and types"); 1 would make the host
            # convert the bytes a second time
            assert data[pos] == 0
            damaged = data[:pos] + b"\1" + data[pos + 1:]
        else:
            damaged = _damage(kind, data)
        entry.write_bytes(damaged)
        cases.append((str(d), kind))
        arrays.update({f"model{i}": np.frombuffer(model, np.uint8), f"feeds{i}": feeds,
                       f"want{i}": want})
    npz = tmp_path / "cases.npz"
    np.savez(npz, **{k: (np.array(v, dtype=object) if isinstance(v, dict) else v)
                     for k, v in arrays.items()})
    code = _EP_CACHE_CHILD.format(tests=HERE, npz=str(npz), cases=cases)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.split()
    assert lines == [w for k in kinds for w in (k, "exact")], r.stdout + r.stderr[-2000:]


def test_damaged_ep_context_blob_fails_session_creation(ort_case, tmp_path):
    """A compiled model whose EPContext blob was damaged: session creation fails
    naming the checksum; the intact compiled model still loads and is exact."""
    import onnx

    model, feeds, want = ort_case
    ctx = tmp_path / "ctx.onnx"
    om.session(model, "nacc", config={"ep.context_enable": "1", "ep.context_file_path": str(ctx),
                                      "ep.context_embed_mode": "1"})
    m = onnx.load(str(ctx))
    (node,) = [n for n in m.graph.node if n.op_type == "EPContext"]
    (attr,) = [a for a in node.attribute if a.name == "ep_cache_context"]
    good = attr.s
    for damaged in (good[:len(good) // 2], good[:40] + bytes([good[40] ^ 1]) + good[41:]):
        attr.s = damaged
        with pytest.raises(Exception, match="NaccExecutionProvider: compiled partition blob"):
            om.session(m.SerializeToString(), "nacc")
    attr.s = good
    np.testing.assert_array_equal(om.session(m.SerializeToString(), "nacc").run(None, feeds[0])[0],
                                  want[0])


BAD_EP_OPTIONS = [  # wrong type or range: a clear error naming key, value and what is allowed
    ("cores", "4.0", "cores"), ("cores", "four", "cores"), ("cores", "", "cores"),
    ("threads", "1e3", "threads"), ("sram_kb", "-64", "sram_kb"),
    ("min_partition_macs", "99999999999999999999999", "min_partition_macs"),
    ("fallback", "ALLOW ", "fallback"),
]


@pytest.mark.parametrize("key,value,name", BAD_EP_OPTIONS)
def test_ep_option_of_wrong_type_or_range(ort_case, key, value, name):
    model, feeds, want = ort_case
    with pytest.raises(Exception, match=f"{name}='{value}'|{name}") as e:
        om.session(model, "nacc", {key: value})
    assert "INVALID_ARGUMENT" in str(e.value)
    # the process (and a new session) is unaffected
    np.testing.assert_array_equal(om.session(model, "nacc").run(None, feeds[0])[0], want[0])


BAD_DELEGATE_OPTIONS = [
    (dict(cores="4.0"), "option 'cores'"), (dict(cores=2**40), "option 'cores'"),
    (dict(threads=-1), "option 'threads'"), (dict(min_partition_macs=2**70), "min_partition_macs"),
    (dict(sram_kb=None, cores="x"), "option 'cores'"), (dict(cache_dir=3.5), "cache_dir"),
]


@pytest.mark.parametrize("options,message", BAD_DELEGATE_OPTIONS)
def test_delegate_option_of_wrong_type_or_range(options, message):
    with pytest.raises(ValueError, match=message):
        nacc.load_delegate(**options)


# ---- concurrency ------------------------------------------------------------------------

def _run_threads(workers):
    errors = []
    barrier = threading.Barrier(len(workers))

    def wrap(fn, i):
        try:
            barrier.wait()
            fn(i)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"worker {i}: {e!r}")

    threads = [threading.Thread(target=wrap, args=(fn, i)) for i, fn in enumerate(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:5]


def concurrency(n):
    """4 interpreters (own delegates) + 4 ORT sessions + 4 threads on one shared
    ORT session, all at once, n inferences each, every output bit-exact."""
    nort.register()
    model = tflite_model()
    ref = make_interpreter(model)
    ref.allocate_tensors()
    t_inputs = [random_inputs(ref, seed=s) for s in range(4)]
    t_want = [run(model, x)[0] for x in t_inputs]
    o_model = ort_model()
    o_feeds = [om.int8_feeds(o_model, seed=s) for s in range(4)]
    first = om.session(o_model, "nacc")
    o_want = [first.run(None, f)[0] for f in o_feeds]
    cpu = om.session(o_model, ["CPUExecutionProvider"])
    for f, w in zip(o_feeds, o_want):  # the EP's documented rule against the CPU EP: within 1
        assert np.abs(cpu.run(None, f)[0].astype(int) - w.astype(int)).max() <= 1
    shared = om.session(o_model, "nacc", {"cores": 2, "threads": 2})
    counts = [0] * 12

    def tflite_worker(i):
        d = nacc.load_delegate(log_level="off", cores=1 + i % 2, threads=1 + i % 2)
        interp = make_interpreter(model, delegates=[d])
        interp.allocate_tensors()
        idx = interp.get_input_details()[0]["index"]
        out = interp.get_output_details()[0]["index"]
        for k in range(n):
            j = (i + k) % 4
            interp.set_tensor(idx, t_inputs[j][0])
            interp.invoke()
            if not np.array_equal(interp.get_tensor(out), t_want[j]):
                raise AssertionError(f"tflite inference {k}: wrong output")
            counts[i] += 1

    def own_session_worker(i):
        s = om.session(o_model, "nacc", {"threads": 1 + i % 2, "cores": 1 + i % 2})
        for k in range(n):
            j = (i + k) % 4
            if not np.array_equal(s.run(None, o_feeds[j])[0], o_want[j]):
                raise AssertionError(f"own session inference {k}: wrong output")
            counts[i] += 1

    def shared_session_worker(i):
        for k in range(n):
            j = (i + k) % 4
            if not np.array_equal(shared.run(None, o_feeds[j])[0], o_want[j]):
                raise AssertionError(f"shared session inference {k}: wrong output")
            counts[i] += 1

    _run_threads([tflite_worker] * 4 + [own_session_worker] * 4 + [shared_session_worker] * 4)
    assert counts == [n] * 12


def test_concurrency():
    concurrency(int(os.environ.get("NACC_RELIABILITY_RUNS", "250")))


@pytest.mark.slow
def test_concurrency_1000_each():
    concurrency(1000)


# ---- resources --------------------------------------------------------------------------

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def fds():
    return len(os.listdir("/proc/self/fd"))


def tasks():
    return len(os.listdir("/proc/self/task"))


def steady_inferences(n, warmup=500):
    """n inferences through the delegate and n through the EP after a warm-up:
    RSS, fds and threads measured after the warm-up and at the end."""
    nort.register()
    t = Tflite(tflite_model(), seeds=(0, 1), threads=2, cores=2)
    o_model = ort_model()
    feeds = [om.int8_feeds(o_model, seed=s) for s in range(2)]
    s = om.session(o_model, "nacc", {"threads": 2, "cores": 2})
    o_want = [s.run(None, f)[0] for f in feeds]
    for k in range(warmup):
        assert t.exact(k % 2)
        assert np.array_equal(s.run(None, feeds[k % 2])[0], o_want[k % 2])
    before = rss_mb(), fds(), tasks()
    for k in range(n):
        if not t.exact(k % 2):
            raise AssertionError(f"tflite inference {k}: wrong output")
        if not np.array_equal(s.run(None, feeds[k % 2])[0], o_want[k % 2]):
            raise AssertionError(f"ort inference {k}: wrong output")
    after = rss_mb(), fds(), tasks()
    return before, after


def check_flat(before, after, what):
    print(f"{what}: RSS {before[0]:.1f} -> {after[0]:.1f} MB, fds {before[1]} -> {after[1]}, "
          f"threads {before[2]} -> {after[2]}")
    # Under ASan (tools/run_sanitizers.sh sets NACC_SANITIZER) freed memory sits in
    # the allocator's quarantine, so RSS is not a leak measure there; fds and
    # threads still are.
    if not os.environ.get("NACC_SANITIZER"):
        assert after[0] - before[0] < 5.0, (what, before, after)
    assert after[1] == before[1] and after[2] == before[2], (what, before, after)


def test_steady_inferences_flat():
    n = int(os.environ.get("NACC_RELIABILITY_INFERENCES", "1000"))
    check_flat(*steady_inferences(n), f"{n} inferences (delegate + EP each)")


@pytest.mark.slow
def test_10000_inferences_flat():
    check_flat(*steady_inferences(10000), "10000 inferences (delegate + EP each)")


def create_destroy(n, warmup=5):
    """Creates, uses once and destroys n interpreters (each with its own delegate)
    and n ORT sessions with the EP; RSS, fds and threads after the warm-up and at
    the end. threads=2 / cores=2: each owns a host-thread pool that must go away."""
    import gc

    nort.register()
    model = tflite_model()
    ref = make_interpreter(model)
    ref.allocate_tensors()
    x = random_inputs(ref, seed=0)
    want_t = run(model, x)[0]
    o_model = ort_model()
    feeds = om.int8_feeds(o_model, seed=0)
    want_o = om.session(o_model, "nacc").run(None, feeds)[0]

    def once():
        d = nacc.load_delegate(log_level="off", threads=2, cores=2)
        interp = make_interpreter(model, delegates=[d])
        interp.allocate_tensors()
        interp.set_tensor(interp.get_input_details()[0]["index"], x[0])
        interp.invoke()
        assert np.array_equal(interp.get_tensor(interp.get_output_details()[0]["index"]), want_t)
        s = om.session(o_model, "nacc", {"threads": 2, "cores": 2})
        assert np.array_equal(s.run(None, feeds)[0], want_o)
        del interp, d, s  # reference counting frees them here

    for _ in range(warmup):  # TensorFlow's and ORT's own one-time allocations
        once()
    gc.collect()  # (only at the measurements: a collection costs ~1 s with TensorFlow loaded)
    before = rss_mb(), fds(), tasks()
    for _ in range(n):
        once()
    gc.collect()
    after = rss_mb(), fds(), tasks()
    return before, after


def test_create_destroy_interpreters_and_sessions():
    n = int(os.environ.get("NACC_RELIABILITY_CREATE", "40"))
    check_flat(*create_destroy(n), f"{n} interpreters + {n} sessions")


@pytest.mark.slow
def test_create_destroy_100_interpreters_and_sessions():
    check_flat(*create_destroy(100), "100 interpreters + 100 sessions")


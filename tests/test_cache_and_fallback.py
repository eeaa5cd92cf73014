"""Issue 11, items 3 and 4: cache entries tied to the partition they were compiled
from, EPContext compatibility checks, and "claim, then fail".

Cache poisoning: another model's cache_dir entry copied over this model's file
name (same-shaped: a valid Program with other weights; other size: other I/O
sizes; legacy: a raw entry without the support/cache_entry.h header) must be a
logged warning, a recompile, exact outputs and a replaced entry, for the TFLite
delegate and the ONNX Runtime EP. The EP's process cache would serve a partition
compiled earlier in this process without reading cache_dir, so its loads run in
a fresh process.

Claim, then fail: a CONV_2D whose feature maps exceed a 2^29-byte region is
declined by the region_size rule before anything is compiled; a partition whose
Program the runtime refuses (forced with the test-only fault kind
invalid_program, off by default and reachable through no option) falls back
whole under fallback=allow and fails with the reason under fallback=error, in
both frontends.
"""
import ctypes
import os
import shutil
import struct
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import nacc
from delegate_models import ModelBuilder, random_inputs, run
from tflite_builder import make_interpreter

ort = pytest.importorskip("onnxruntime")
import onnx  # noqa: E402
import nacc.onnxruntime as nort  # noqa: E402
import onnx_models as om  # noqa: E402
from onnxruntime.capi import onnxruntime_pybind11_state as ort_c  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Specified .providers.:UserWarning")

HERE = os.path.dirname(os.path.abspath(__file__))
# Generous bound for "declined before compiling": the 1x40000x40000x3 CONV_2D took
# 14.5 s (26 s on a loaded machine) to compile before it was rejected.
NO_COMPILE_SECONDS = 2.0


def entry_header(data: bytes):
    """(kind, nacc version, key, IR digest, payload offset) of a cache_dir entry
    (support/cache_entry.h)."""
    assert data[:8] == b"NACCCENT", data[:8]
    pos, fields = 12, []
    for _ in range(4):
        n = struct.unpack_from("<I", data, pos)[0]
        fields.append(data[pos + 4:pos + 4 + n].decode())
        pos += 4 + n
    return (*fields, pos + 8 + 16)  # payload size, payload Digest128


def payload(data: bytes) -> bytes:
    return data[entry_header(data)[4]:]


def fault_hook(lib_path, symbol):
    fn = getattr(ctypes.CDLL(lib_path), symbol)
    fn.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


class InvalidPrograms:
    """Arms the invalid_program fault kind (every Program check fails) for a block."""

    def __init__(self, hook):
        self.hook = hook

    def __enter__(self):
        assert self.hook(b"invalid_program", 0, 1_000_000) == 0

    def __exit__(self, *exc):
        assert self.hook(b"none", 0, 0) == 0


# ---- TFLite delegate: cache poisoning --------------------------------------------------

def conv_conv(seed, hw=8):
    """conv -> conv on a 1 x hw x hw x 3 input: one partition; `seed` picks the weights."""
    m = ModelBuilder(seed=seed)
    x = m.input((1, hw, hw, 3))
    return m.build([m.conv(m.conv(x, 8), 4)])


def invoke_once(it, model, seed):
    """(output of interpreter `it`, TFLite's BUILTIN_REF output) on seeded inputs."""
    ref = make_interpreter(model)
    ref.allocate_tensors()
    x = random_inputs(ref, seed=seed)
    for det, v in zip(it.get_input_details(), x):
        it.set_tensor(det["index"], v)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"]), run(model, x)[0]


def delegate_run(model, cache_dir, log_level="off"):
    """(outputs, reference outputs, partition report) of one interpreter with the delegate."""
    d = nacc.load_delegate(cache_dir=str(cache_dir), log_level=log_level)
    it = make_interpreter(model, delegates=[d])
    it.allocate_tensors()
    got, want = invoke_once(it, model, seed=3)
    (p,) = d.report().partitions
    return got, want, p


POISON = [  # (case, model B's seed and input size, what the warning says)
    ("same_shape", 99, 8, "holds the Program of another partition"),
    ("other_size", 99, 6, "holds the Program of another partition"),
    ("legacy_entry", None, 8, "has no nacc cache header"),
]


@pytest.mark.parametrize("case,seed_b,hw_b,warning", POISON, ids=[c[0] for c in POISON])
def test_delegate_foreign_cache_entry_is_replaced(case, seed_b, hw_b, warning, tmp_path, capfd):
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    model_a = conv_conv(seed=1)
    got, want, p = delegate_run(model_a, a_dir)
    assert np.array_equal(got, want) and not p.cache_hit
    entry_a = a_dir / f"{p.cache_key}.nacc"
    own = entry_a.read_bytes()
    if case == "legacy_entry":  # the raw Program an older nacc wrote, no header
        foreign = payload(own)
    else:
        _, _, pb = delegate_run(conv_conv(seed=seed_b, hw=hw_b), b_dir)
        foreign = (b_dir / f"{pb.cache_key}.nacc").read_bytes()
        assert pb.cache_key != p.cache_key
    entry_a.write_bytes(foreign)
    capfd.readouterr()

    got, want, p2 = delegate_run(model_a, a_dir, log_level="warning")
    err = capfd.readouterr().err
    assert np.array_equal(got, want)  # model A's own outputs, not B's
    assert not p2.cache_hit and warning in p2.cache_replaced
    assert f"cache entry {entry_a} is not used: " in err and warning in err
    # replaced by model A's entry: a third interpreter loads it, exact
    kind, version, key, _, _ = entry_header(entry_a.read_bytes())
    assert (kind, version, key) == ("tflite-program", nacc.__version__, p.cache_key)
    got, want, p3 = delegate_run(model_a, a_dir)
    assert p3.cache_hit and not p3.cache_replaced and np.array_equal(got, want)


def test_delegate_cache_key_covers_the_ir_digest(tmp_path):
    """Same graph, other weights: other keys (so other files) and other IR digests."""
    keys, digests = set(), set()
    for seed in (1, 2):
        _, _, p = delegate_run(conv_conv(seed=seed), tmp_path)
        _, _, key, digest, _ = entry_header((tmp_path / f"{p.cache_key}.nacc").read_bytes())
        assert key == p.cache_key and len(key) == len(digest) == 32
        keys.add(key)
        digests.add(digest)
    assert len(keys) == len(digests) == 2


# ---- TFLite delegate: claim, then fail ---------------------------------------------------

def huge_conv():
    m = ModelBuilder()
    x = m.input((1, 40000, 40000, 3))
    return m.build([m.conv(x, 4, k=1, name="huge")])


def test_delegate_huge_conv_is_declined_by_a_rule_before_compiling():
    d = nacc.load_delegate(log_level="off")
    t0 = time.monotonic()
    it = make_interpreter(huge_conv(), delegates=[d])
    it.allocate_tensors()  # TFLite's buffers are only reserved, never touched here
    elapsed = time.monotonic() - t0
    report = d.report()
    assert report.claimed_nodes == 0 and not report.subgraphs[0].partitions  # nothing compiled
    (node,) = report.subgraphs[0].declined
    (reason,) = node.reasons
    assert reason.rule == "region_size"
    assert "input 't0' [1,40000,40000,3] is 4800000000 bytes" in reason.detail
    assert "536870912 bytes (29-bit region offsets" in reason.text
    assert elapsed < NO_COMPILE_SECONDS, elapsed


def test_delegate_fallback_error_names_the_region_rule():
    d = nacc.load_delegate(log_level="off", fallback="error")
    with pytest.raises(RuntimeError) as e:
        make_interpreter(huge_conv(), delegates=[d])
    text = str(e.value)
    assert "fallback=error: 1 of 1 nodes would stay on the host" in text
    assert "4800000000 bytes" in text
    # the delegate's text ends cleanly before TFLite's own (it concatenates them)
    assert ".\nRestored original execution plan" in text, text


FALLBACK = ["allow", "error"]


@pytest.mark.parametrize("fallback", FALLBACK)
def test_delegate_partition_the_runtime_refuses_falls_back_whole(fallback):
    """Every Program check fails (invalid_program): the compiled partition is not
    claimed; fallback=allow runs the model on TFLite, bit-exact; fallback=error
    fails at delegate application with the reason, never later in prepare."""
    model = conv_conv(seed=5)
    hook = fault_hook(nacc.delegate_library_path(), "nacc_tflite_test_inject_fault")
    with InvalidPrograms(hook):
        d = nacc.load_delegate(log_level="off", fallback=fallback)
        if fallback == "error":
            with pytest.raises(RuntimeError) as e:
                make_interpreter(model, delegates=[d])
            text = str(e.value)
            assert "fallback=error: 2 of 2 nodes would stay on the host" in text
            assert "rejected by the test fault hook (invalid_program)" in text
            return
        it = make_interpreter(model, delegates=[d])
        it.allocate_tensors()
    report = d.report()
    assert report.claimed_nodes == 0 and not report.subgraphs[0].partitions
    assert all(r.rule == "compile" and "invalid_program" in r.detail
               for s in report.subgraphs for n in s.declined for r in n.reasons)
    got, want = invoke_once(it, model, seed=2)
    assert np.array_equal(got, want)
    # disarmed: the same model is claimed again
    d2 = nacc.load_delegate(log_level="off")
    make_interpreter(model, delegates=[d2])
    assert d2.report().claimed_nodes == 2


# ---- ONNX Runtime EP: cache poisoning (fresh process) ------------------------------------

def ort_conv(seed, hw=8, c_out=8):
    return om.qdq_unit(om.conv(c_in=4, c_out=c_out, hw=(hw, hw), seed=seed))


_EP_CHILD = textwrap.dedent("""
    import sys, numpy as np
    sys.path.insert(0, {tests!r})
    import nacc.onnxruntime as nort, onnx_models as om
    nort.register()
    data = np.load({npz!r}, allow_pickle=True)
    for i, d in enumerate({dirs!r}):
        got = om.session(bytes(data["model%d" % i]), "nacc", {{"cache_dir": d}}).run(
            None, data["feeds%d" % i].item())[0]
        print("exact" if np.array_equal(got, data["want%d" % i]) else "WRONG", flush=True)
""")


def run_child(models, feeds, wants, dirs):
    """Runs each model with its cache_dir in a fresh process; (results, stderr)."""
    npz = os.path.join(os.path.dirname(dirs[0]), "child.npz")
    arrays = {}
    for i, (m, f, w) in enumerate(zip(models, feeds, wants)):
        arrays.update({f"model{i}": np.frombuffer(m, np.uint8), f"feeds{i}": np.array(f, dtype=object),
                       f"want{i}": w})
    np.savez(npz, **arrays)
    code = _EP_CHILD.format(tests=HERE, npz=npz, dirs=list(dirs))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.split(), r.stderr


EP_POISON = [  # (case, model B: seed, input size, channels; what the warning says)
    ("same_shape", 77, 8, 8, "holds the Program of another partition"),
    ("other_size", 77, 6, 8, "holds the Program of another partition"),
    ("legacy_entry", None, 8, 8, "has no nacc cache header"),
]


def test_ep_foreign_cache_entries_are_replaced(tmp_path):
    """One fresh process loads each poisoned cache_dir: warning, recompile, exact,
    entry replaced; a second fresh process then loads the replaced entries, silently."""
    nort.register()
    models, feeds, wants, dirs, entries, warnings = [], [], [], [], [], []
    for i, (case, seed_b, hw_b, c_b, warning) in enumerate(EP_POISON):
        # model A of each case is used nowhere else in this process or its child
        model_a = ort_conv(seed=30 + i, c_out=12 + i)
        f = om.int8_feeds(model_a, seed=i)
        d = tmp_path / case
        want = om.session(model_a, "nacc", {"cache_dir": str(d)}).run(None, f)[0]
        (entry_a,) = d.glob("*.naccpart")
        if case == "legacy_entry":  # the format-2 blob an older nacc wrote, no header
            foreign = payload(entry_a.read_bytes())
        else:
            b_dir = tmp_path / f"{case}_b"
            om.session(ort_conv(seed=seed_b, hw=hw_b, c_out=c_b), "nacc", {"cache_dir": str(b_dir)})
            (entry_b,) = b_dir.glob("*.naccpart")
            assert entry_b.name != entry_a.name
            foreign = entry_b.read_bytes()
        entry_a.write_bytes(foreign)
        models.append(model_a)
        feeds.append(f)
        wants.append(want)
        dirs.append(str(d))
        entries.append(entry_a)
        warnings.append(warning)
    results, err = run_child(models, feeds, wants, dirs)
    assert results == ["exact"] * len(EP_POISON), err[-3000:]
    for entry, warning in zip(entries, warnings):
        assert f"cache entry {entry} is not used: " in err and warning in err, err[-3000:]
        kind, version, key, _, _ = entry_header(entry.read_bytes())
        assert (kind, version, key + ".naccpart") == ("ort-partition", nacc.__version__, entry.name)
    stamps = [e.stat().st_mtime_ns for e in entries]
    results, err = run_child(models, feeds, wants, dirs)
    assert results == ["exact"] * len(EP_POISON) and "is not used" not in err
    assert [e.stat().st_mtime_ns for e in entries] == stamps  # loaded, not rewritten


# ---- ONNX Runtime EP: EPContext integrity and compatibility ------------------------------

def compiled_model(model, options, path):
    om.session(model, "nacc", options, config={"ep.context_enable": "1",
                                               "ep.context_file_path": str(path),
                                               "ep.context_embed_mode": "1"})
    return onnx.load(str(path))


def context_attr(m):
    (node,) = [n for n in m.graph.node if n.op_type == "EPContext"]
    (attr,) = [a for a in node.attribute if a.name == "ep_cache_context"]
    return attr


def fnv1a64(data: bytes) -> int:
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def with_nacc_version(blob: bytes, version: bytes) -> bytes:
    """The blob with another nacc version string and a valid checksum (a blob an
    intact other nacc release wrote)."""
    n = struct.unpack_from("<I", blob, 12)[0]
    body = blob[:12] + struct.pack("<I", len(version)) + version + blob[16 + n:-8]
    return body + struct.pack("<Q", fnv1a64(body))


def flipped(blob: bytes) -> bytes:
    b = bytearray(blob)
    b[len(b) // 2] ^= 0x01
    return bytes(b)


EP_CONTEXT = [  # (case, options compiled with, options loaded with, blob edit, error or None)
    ("same_hardware", {"cores": 2}, {"cores": 2}, None, None),
    ("fewer_cores_than_session", {"cores": 1}, {"cores": 4}, None, None),
    ("more_cores_than_session", {"cores": 4}, {"cores": 1},
     None, "was compiled for cores=4;sram_kb=64; this session's NPU is cores=1;sram_kb=64"),
    ("other_sram", {"sram_kb": 128}, {},
     None, "was compiled for cores=1;sram_kb=128; this session's NPU is cores=1;sram_kb=64"),
    ("flipped_byte", {}, {}, flipped, "compiled partition blob checksum mismatch"),
    ("other_nacc_version", {}, {}, lambda b: with_nacc_version(b, b"9.9.9"),
     "partition compiled by nacc 9.9.9"),
]


@pytest.mark.parametrize("case,compiled_with,loaded_with,edit,error", EP_CONTEXT,
                         ids=[c[0] for c in EP_CONTEXT])
def test_ep_context_integrity_and_compatibility(case, compiled_with, loaded_with, edit, error,
                                                tmp_path):
    nort.register()
    model = ort_conv(seed=3)
    feeds = om.int8_feeds(model, seed=0)
    want = om.session(model, ["CPUExecutionProvider"]).run(None, feeds)[0]
    m = compiled_model(model, compiled_with, tmp_path / "ctx.onnx")
    if edit:
        attr = context_attr(m)
        attr.s = edit(attr.s)
    if error:
        with pytest.raises(Exception, match="NaccExecutionProvider") as e:
            om.session(m.SerializeToString(), "nacc", loaded_with)
        assert error in str(e.value)
        return
    s = om.session(m.SerializeToString(), "nacc", loaded_with)
    np.testing.assert_array_equal(s.run(None, feeds)[0], want)  # Conv: bit-exact to the CPU EP


COMPATIBILITY = [  # (compatibility string, what the factory answers without session options)
    ("nacc={v};format=2;cores=1;sram_kb=64", "EP_SUPPORTED_OPTIMAL"),
    ("nacc={v};format=2;cores=4;sram_kb=128", "EP_SUPPORTED_OPTIMAL"),  # hardware: judged at Compile
    ("nacc=0.0.1;format=2;cores=1;sram_kb=64", "EP_UNSUPPORTED"),
    ("nacc={v};format=1;cores=1;sram_kb=64", "EP_UNSUPPORTED"),
    ("nacc={v};format=2;cores=3;sram_kb=64", "EP_UNSUPPORTED"),   # not a NACC core count
    ("nacc={v};format=2;cores=x;sram_kb=64", "EP_UNSUPPORTED"),
    ("nacc={v};format=2;cores=1", "EP_UNSUPPORTED"),
    ("something else", "EP_NOT_APPLICABLE"),
]


@pytest.mark.parametrize("info,expected", COMPATIBILITY)
def test_ep_factory_compatibility_check(info, expected):
    nort.register()
    devices = nort.ep_devices() if hasattr(nort, "ep_devices") else [
        d for d in ort.get_ep_devices() if d.ep_name == "NaccExecutionProvider"]
    got = ort_c.get_model_compatibility_for_ep_devices(devices, info.format(v=nacc.__version__))
    assert got == getattr(ort_c.OrtCompiledModelCompatibility, expected)


def test_ep_compiled_model_records_its_hardware(tmp_path):
    nort.register()
    m = compiled_model(ort_conv(seed=4), {"cores": 4}, tmp_path / "ctx.onnx")
    info = ort_c.get_compatibility_info_from_model_bytes(m.SerializeToString(),
                                                          "NaccExecutionProvider")
    assert info == f"nacc={nacc.__version__};format=2;cores=4;sram_kb=64"


# ---- ONNX Runtime EP: claim, then fail -----------------------------------------------------

def huge_ort_conv():
    """The QDQ Conv unit with its input and output made 1x4x40000x40000 (built
    small, then resized: calibrating at that size is not possible)."""
    m = onnx.load_from_string(om.qdq_unit(om.conv(c_in=4, c_out=4, hw=(8, 8))))
    for vi in list(m.graph.input) + list(m.graph.output):
        dims = vi.type.tensor_type.shape.dim
        dims[2].dim_value = dims[3].dim_value = 40000
    del m.graph.value_info[:]
    return m.SerializeToString()


@pytest.mark.parametrize("fallback", FALLBACK)
def test_ep_huge_conv_is_declined_by_a_rule_before_compiling(fallback):
    nort.register()
    model = huge_ort_conv()
    t0 = time.monotonic()
    if fallback == "error":  # nothing claimed: no Compile; the first Run fails with the reason
        s = om.session(model, "nacc", {"fallback": "error"})
        (x,) = s.get_inputs()
        huge = np.empty(x.shape, np.int8)  # reserved, never touched: the run fails at its start
        with pytest.raises(Exception, match="fallback=error") as e:
            s.run(None, {x.name: huge})
        assert "each input and output feature map" in str(e.value)
        return
    s = om.session(model, "nacc")
    elapsed = time.monotonic() - t0
    rep = nort.partition_reports()[-1]
    assert not rep["partitions"] and "NaccExecutionProvider" in s.get_providers()
    (conv,) = [h for h in rep["host_nodes"] if h["op_type"] == "Conv"]
    assert "[1,40000,40000,4] is 6400000000 bytes" in conv["reason"]
    assert elapsed < NO_COMPILE_SECONDS, elapsed


@pytest.mark.parametrize("fallback", FALLBACK)
def test_ep_partition_the_runtime_refuses_is_left_to_the_cpu_ep(fallback):
    nort.register()
    # compiled nowhere else, so not in the EP's process cache (which would serve it)
    model = ort_conv(seed=11, c_out=20 + FALLBACK.index(fallback))
    feeds = om.int8_feeds(model, seed=1)
    hook = fault_hook(nort.get_library_path(), "nacc_ep_test_inject_fault")
    with InvalidPrograms(hook):
        if fallback == "error":  # nothing claimed: the first Run fails with the reason
            s = om.session(model, "nacc", {"fallback": "error"})
            with pytest.raises(Exception, match="fallback=error") as e:
                s.run(None, feeds)
            assert "rejected by the test fault hook (invalid_program)" in str(e.value)
            return
        s = om.session(model, "nacc")
    rep = nort.partition_reports()[-1]
    assert not rep["partitions"]
    (conv,) = [h for h in rep["host_nodes"] if h["op_type"] == "Conv"]
    assert "invalid_program" in conv["reason"]
    want = om.session(model, ["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_array_equal(s.run(None, feeds)[0], want)
    # disarmed: claimed again
    om.session(model, "nacc")
    assert nort.partition_reports()[-1]["partitions"]

#!/usr/bin/env python3
"""Incremental developer build of nacc._core, the TFLite delegate library and
the ONNX Runtime EP library into python/nacc/ (not for users).

`pip install .` rebuilds every source each time; this compiles only the .cc
files whose object is older than the source or any header it includes (gcc
-MMD dependency files), then links. Use with PYTHONPATH=python:

    python tools/devbuild.py && PYTHONPATH=python python -m pytest tests/...

Targets (default: all): `core` (nacc/_core*.so: csrc/ with its pybind11
bindings), `delegate` (nacc/libnacc_tflite_delegate.so: delegate/ + csrc/
without the bindings; a plain C-ABI library, no Python) and `ep`
(nacc/libnacc_ort_ep.so: ep/ + csrc/ without the bindings, exports limited by
ep/exports.lds). Same flags as setup.py. NACC_BUILD_JOBS sets the parallel compile jobs (2).

Sanitizer builds (docs/reliability.md): NACC_SANITIZE=address,undefined (ASan + UBSan,
-fno-sanitize-recover: any UB aborts) or NACC_SANITIZE=thread (TSan) compiles into
build/dev-<asan|tsan> and links the libraries into NACC_DEV_OUT (default
build/<asan|tsan>/nacc), never into python/nacc: the normal build stays untouched.
tools/run_sanitizers.sh drives both.
"""
import concurrent.futures
import glob
import os
import subprocess
import sys
import sysconfig

import pybind11

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OBJ_DIR = os.path.join(ROOT, "build", "dev")
FLAGS = ["-std=c++17", "-O3", "-fPIC", "-fvisibility=hidden", "-Wall", "-Wextra",
         "-Wno-unused-parameter", "-fno-math-errno", "-ffp-contract=off"]
EXTRA = os.environ.get("NACC_DEV_CXXFLAGS", "").split()

# NACC_SANITIZE value -> (name, compile+link flags). Shared with setup.py's list.
SANITIZERS = {
    "address,undefined": ("asan", ["-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                                   "-fno-omit-frame-pointer", "-g"]),
    "thread": ("tsan", ["-fsanitize=thread", "-fno-omit-frame-pointer", "-g"]),
}
SANITIZE = os.environ.get("NACC_SANITIZE", "").strip()
if SANITIZE:
    if SANITIZE not in SANITIZERS:
        sys.exit(f"NACC_SANITIZE={SANITIZE!r}: allowed values are {sorted(SANITIZERS)}")
    SAN_NAME, SAN_FLAGS = SANITIZERS[SANITIZE]
    # -O1: sanitizer reports with usable stacks at a bearable speed.
    FLAGS = [f for f in FLAGS if f != "-O3"] + ["-O1"]
    EXTRA = EXTRA + SAN_FLAGS
    OBJ_DIR = os.path.join(ROOT, "build", "dev-" + SAN_NAME)
    OUT_DIR = os.environ.get("NACC_DEV_OUT") or os.path.join(ROOT, "build", SAN_NAME, "nacc")
else:
    OUT_DIR = os.environ.get("NACC_DEV_OUT") or os.path.join(ROOT, "python", "nacc")


def needs_build(src, obj, dep):
    if not os.path.exists(obj) or not os.path.exists(dep):
        return True
    t = os.path.getmtime(obj)
    text = open(dep).read().replace("\\\n", " ")
    deps = text.split(":", 1)[1].split()
    return any(not os.path.exists(d) or os.path.getmtime(d) > t for d in deps)


def compile_one(src):
    rel = os.path.relpath(src, ROOT)
    obj = os.path.join(OBJ_DIR, rel.replace("/", "__") + ".o")
    dep = obj[:-2] + ".d"
    if not needs_build(src, obj, dep):
        return obj, None
    cmd = ["g++", *FLAGS, *EXTRA, "-I", os.path.join(ROOT, "csrc"), "-I", os.path.join(ROOT, "delegate"),
           "-I", ROOT,
           "-I", pybind11.get_include(),
           "-I", sysconfig.get_paths()["include"], "-MMD", "-MF", dep, "-c", src, "-o", obj]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return obj, r.stderr
    if r.stderr:
        sys.stderr.write(r.stderr)
    return obj, None


def link(out, objs, extra=()):
    if not os.path.exists(out) or any(os.path.getmtime(o) > os.path.getmtime(out) for o in objs):
        subprocess.run(["g++", "-shared", "-pthread", *EXTRA, *objs, *extra, "-o", out], check=True)
    print("built", os.path.relpath(out, ROOT))


def main():
    targets = set(sys.argv[1:]) or {"core", "delegate", "ep"}
    unknown = targets - {"core", "delegate", "ep"}
    if unknown:
        sys.exit(f"unknown target(s) {sorted(unknown)}; targets: core, delegate, ep")
    os.makedirs(OBJ_DIR, exist_ok=True)
    os.makedirs(OUT_DIR, exist_ok=True)
    bindings_dir = os.path.join(ROOT, "csrc", "bindings") + os.sep
    all_core = sorted(glob.glob(os.path.join(ROOT, "csrc", "**", "*.cc"), recursive=True))
    core = [s for s in all_core if not s.startswith(bindings_dir)]
    bindings = [s for s in all_core if s.startswith(bindings_dir)]
    delegate = sorted(glob.glob(os.path.join(ROOT, "delegate", "*.cc")))
    ep = sorted(glob.glob(os.path.join(ROOT, "ep", "*.cc")))
    sources = core + (bindings if "core" in targets else []) + (
        delegate if "delegate" in targets else []) + (ep if "ep" in targets else [])
    jobs = int(os.environ.get("NACC_BUILD_JOBS", "2"))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        results = dict(zip(sources, pool.map(compile_one, sources)))
    errors = [e for _, e in results.values() if e]
    if errors:
        sys.stderr.write("\n".join(errors))
        sys.exit(1)
    core_objs = [results[s][0] for s in core]
    if "core" in targets:
        out = os.path.join(OUT_DIR, "_core" + sysconfig.get_config_var("EXT_SUFFIX"))
        link(out, core_objs + [results[s][0] for s in bindings])
    if "delegate" in targets:
        out = os.path.join(OUT_DIR, "libnacc_tflite_delegate.so")
        link(out, core_objs + [results[s][0] for s in delegate], ["-Wl,--no-undefined"])
    if "ep" in targets:
        out = os.path.join(OUT_DIR, "libnacc_ort_ep.so")
        script = os.path.join(ROOT, "ep", "exports.lds")
        link(out, core_objs + [results[s][0] for s in ep],
             ["-Wl,--no-undefined", "-Wl,--version-script=" + script])


if __name__ == "__main__":
    main()

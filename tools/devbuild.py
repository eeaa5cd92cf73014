#!/usr/bin/env python3
"""Incremental developer build of nacc._core into python/nacc/ (not for users).

`pip install .` rebuilds every source each time; this compiles only the .cc
files whose object is older than the source or any header it includes (gcc
-MMD dependency files), then links. Use with PYTHONPATH=python:

    python tools/devbuild.py && PYTHONPATH=python python -m pytest tests/...

Same flags as setup.py. NACC_BUILD_JOBS sets the parallel compile jobs (2).
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
         "-Wno-unused-parameter", "-fno-math-errno"]
EXTRA = os.environ.get("NACC_DEV_CXXFLAGS", "").split()


def needs_build(src, obj, dep):
    if not os.path.exists(obj) or not os.path.exists(dep):
        return True
    t = os.path.getmtime(obj)
    text = open(dep).read().replace("\\\n", " ")
    deps = text.split(":", 1)[1].split()
    return any(not os.path.exists(d) or os.path.getmtime(d) > t for d in deps)


def compile_one(src):
    base = os.path.join(ROOT, "csrc") if src.startswith(os.path.join(ROOT, "csrc")) else ROOT
    rel = os.path.relpath(src, base)
    obj = os.path.join(OBJ_DIR, rel.replace("/", "__") + ".o")
    dep = obj[:-2] + ".d"
    if not needs_build(src, obj, dep):
        return obj, None
    cmd = ["g++", *FLAGS, *EXTRA, "-I", os.path.join(ROOT, "csrc"), "-I", ROOT, "-I", pybind11.get_include(),
           "-I", sysconfig.get_paths()["include"], "-MMD", "-MF", dep, "-c", src, "-o", obj]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return obj, r.stderr
    if r.stderr:
        sys.stderr.write(r.stderr)
    return obj, None


def main():
    os.makedirs(OBJ_DIR, exist_ok=True)
    sources = sorted(glob.glob(os.path.join(ROOT, "csrc", "**", "*.cc"), recursive=True))
    ep_sources = sorted(glob.glob(os.path.join(ROOT, "ep", "*.cc")))
    jobs = int(os.environ.get("NACC_BUILD_JOBS", "2"))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(compile_one, sources + ep_sources))
    errors = [e for _, e in results if e]
    if errors:
        sys.stderr.write("\n".join(errors))
        sys.exit(1)
    out = os.path.join(ROOT, "python", "nacc", "_core" + sysconfig.get_config_var("EXT_SUFFIX"))
    objs = [o for o, _ in results[:len(sources)]]
    if not os.path.exists(out) or any(os.path.getmtime(o) > os.path.getmtime(out) for o in objs):
        subprocess.run(["g++", "-shared", "-pthread", *EXTRA, *objs, "-o", out], check=True)
    print("built", os.path.relpath(out, ROOT))
    # The ONNX Runtime plugin EP: ep/*.cc + the core without its Python bindings.
    ep_out = os.path.join(ROOT, "python", "nacc", "_nacc_ort_ep" + sysconfig.get_config_var("EXT_SUFFIX"))
    ep_objs = [o for o, _ in results[len(sources):]] + [
        o for o, src in zip(objs, sources) if os.sep + "bindings" + os.sep not in src]
    if not os.path.exists(ep_out) or any(os.path.getmtime(o) > os.path.getmtime(ep_out) for o in ep_objs):
        subprocess.run(["g++", "-shared", "-pthread", *EXTRA, *ep_objs, "-Wl,--version-script=" +
                        os.path.join(ROOT, "ep", "exports.lds"), "-Wl,--no-undefined", "-o", ep_out],
                       check=True)
    print("built", os.path.relpath(ep_out, ROOT))


if __name__ == "__main__":
    main()

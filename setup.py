"""Build of nacc: the pybind11 core extension nacc._core from csrc/, and the
ONNX Runtime plugin EP library nacc/_nacc_ort_ep*.so from ep/ plus the core
(without its Python bindings; it exports only CreateEpFactories,
ReleaseEpFactory and nacc_ep_reports_json, see ep/exports.lds).

C++17, -O3, warnings on. No -march flag: AVX2 kernels are compiled per
function with a target attribute and chosen at run time (csrc/common/cpu.h),
so a wheel built here runs on any x86-64 CPU.
Set NACC_BUILD_JOBS to change the number of parallel compile jobs.
"""
import glob
import os

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import Extension, find_packages, setup

ParallelCompile("NACC_BUILD_JOBS", default=0).install()

HERE = os.path.dirname(os.path.abspath(__file__))


def _sources(*patterns):
    out = []
    for pattern in patterns:
        out += glob.glob(os.path.join("csrc", pattern), recursive=True)
    return sorted(out)


CXX_FLAGS = ["-O3", "-Wall", "-Wextra", "-Wno-unused-parameter", "-fno-math-errno"]

core = Pybind11Extension(
    "nacc._core",
    _sources("**/*.cc"),
    include_dirs=["csrc"],
    cxx_std=17,
    extra_compile_args=CXX_FLAGS,
    extra_link_args=["-pthread"],
)

# The ONNX Runtime plugin EP: not a Python module (ORT dlopens it), so a plain
# Extension with the same flags as the core and a version script.
ep_library = Extension(
    "nacc._nacc_ort_ep",
    sorted(glob.glob(os.path.join("ep", "*.cc")))
    + [s for s in _sources("**/*.cc") if os.sep + "bindings" + os.sep not in s],
    include_dirs=["csrc", "."],
    language="c++",
    extra_compile_args=["-std=c++17", "-fvisibility=hidden", *CXX_FLAGS],
    extra_link_args=["-pthread", "-Wl,--version-script=" + os.path.join("ep", "exports.lds")],
    depends=sorted(glob.glob(os.path.join("ep", "*.h"))) + [os.path.join("ep", "exports.lds")],
)

setup(
    name="nacc",
    version="0.1.0",
    description="SDK for the NACC INT8 NPU: a bit-exact, cycle-counting model, "
    "a TensorFlow Lite delegate and an ONNX Runtime execution provider",
    long_description=open(os.path.join(HERE, "README.md"), encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    package_dir={"": "python"},
    packages=find_packages("python"),
    ext_modules=[core, ep_library],
    cmdclass={"build_ext": build_ext},
    python_requires=">=3.9",
    install_requires=["numpy>=1.23"],
    extras_require={
        "tflite": ["tensorflow==2.21.0"],
        "onnxruntime": ["onnxruntime>=1.22", "onnx>=1.16"],
        "test": [
            "tensorflow==2.21.0",
            "onnxruntime>=1.22",
            "onnx>=1.16",
            "flatbuffers>=24.3",
            "pytest>=7",
        ],
    },
    zip_safe=False,
)

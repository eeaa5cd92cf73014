"""Build of nacc: the pybind11 core extension nacc._core from csrc/.

C++17, -O3, warnings on. No -march flag: AVX2 kernels are compiled per
function with a target attribute and chosen at run time (csrc/common/cpu.h),
so a wheel built here runs on any x86-64 CPU.
Set NACC_BUILD_JOBS to change the number of parallel compile jobs.
"""
import glob
import os

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import find_packages, setup

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

setup(
    name="nacc",
    version="0.1.0",
    description="SDK for the NACC INT8 NPU: a bit-exact, cycle-counting model, "
    "a TensorFlow Lite delegate and an ONNX Runtime execution provider",
    long_description=open(os.path.join(HERE, "README.md"), encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    package_dir={"": "python"},
    packages=find_packages("python"),
    ext_modules=[core],
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

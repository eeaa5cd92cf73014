"""Build of nacc: the core (csrc/) compiled once and linked into
  - nacc._core, the pybind11 extension (plus csrc/bindings/),
  - nacc/libnacc_tflite_delegate.so, the TFLite external delegate (plus
    delegate/): a plain C-ABI shared library, no Python and no TensorFlow in it,
  - nacc/libnacc_ort_ep.so, the ONNX Runtime plugin execution provider (plus
    ep/): a plain C-ABI library that exports only CreateEpFactories,
    ReleaseEpFactory and two report functions (ep/exports.lds); it declares
    the ORT C ABI subset it uses itself and does not link ONNX Runtime.

C++17, -O3, warnings on, hidden visibility (each library exports only its
entry points). No -march flag: AVX2 kernels are compiled per function with a
target attribute and chosen at run time (csrc/common/cpu.h), so a wheel built
here runs on any x86-64 CPU.
Set NACC_BUILD_JOBS to change the number of parallel compile jobs.
NACC_SANITIZE=address,undefined (ASan + UBSan, no recovery: any UB aborts) or
NACC_SANITIZE=thread (TSan) builds every library instrumented at -O1 (for
testing only; the Python process then needs the sanitizer runtime in
LD_PRELOAD, see docs/reliability.md and tools/run_sanitizers.sh).
"""
import glob
import os

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import Extension, find_packages, setup
from setuptools.command.build_py import build_py

ParallelCompile("NACC_BUILD_JOBS", default=0).install()

HERE = os.path.dirname(os.path.abspath(__file__))


def _sources(*patterns):
    out = []
    for pattern in patterns:
        out += glob.glob(os.path.join("csrc", pattern), recursive=True)
    return sorted(out)


CXX_FLAGS = ["-O3", "-Wall", "-Wextra", "-Wno-unused-parameter", "-fno-math-errno",
             "-ffp-contract=off"]  # float32 units follow the source: fmaf only where written
LINK_FLAGS = ["-pthread"]

# Sanitizer builds (the same table as tools/devbuild.py).
SANITIZERS = {
    "address,undefined": ["-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                          "-fno-omit-frame-pointer", "-g"],
    "thread": ["-fsanitize=thread", "-fno-omit-frame-pointer", "-g"],
}
SANITIZE = os.environ.get("NACC_SANITIZE", "").strip()
if SANITIZE:
    if SANITIZE not in SANITIZERS:
        raise SystemExit(f"NACC_SANITIZE={SANITIZE!r}: allowed values are {sorted(SANITIZERS)}")
    CXX_FLAGS = [f for f in CXX_FLAGS if f != "-O3"] + ["-O1", *SANITIZERS[SANITIZE]]
    LINK_FLAGS = LINK_FLAGS + SANITIZERS[SANITIZE]

CORE_FLAGS = ["-std=c++17", "-fvisibility=hidden", "-fvisibility-inlines-hidden", *CXX_FLAGS]

BINDINGS = _sources("bindings/*.cc")
CORE_SOURCES = [s for s in _sources("**/*.cc") if s not in BINDINGS]
DELEGATE = "nacc.libnacc_tflite_delegate"
ORT_EP = "nacc.libnacc_ort_ep"
PLAIN_LIBRARIES = (DELEGATE, ORT_EP)

core = Pybind11Extension(
    "nacc._core",
    BINDINGS,
    include_dirs=["csrc"],
    cxx_std=17,
    extra_compile_args=CXX_FLAGS,
    extra_link_args=LINK_FLAGS,
)

delegate = Extension(
    DELEGATE,
    sorted(glob.glob(os.path.join("delegate", "*.cc"))),
    include_dirs=["csrc", "delegate"],
    language="c++",
    extra_compile_args=CORE_FLAGS,
    extra_link_args=[*LINK_FLAGS, "-Wl,--no-undefined"],
)

ort_ep = Extension(
    ORT_EP,
    sorted(glob.glob(os.path.join("ep", "*.cc"))),
    include_dirs=["csrc", "."],
    language="c++",
    extra_compile_args=CORE_FLAGS,
    extra_link_args=[*LINK_FLAGS, "-Wl,--no-undefined",
                     "-Wl,--version-script=" + os.path.join("ep", "exports.lds")],
    depends=sorted(glob.glob(os.path.join("ep", "*.h"))) + [os.path.join("ep", "exports.lds")],
)


class BuildExt(build_ext):
    """Compiles the core sources once and links the objects into every library."""

    def build_extensions(self):
        objects = self.compiler.compile(CORE_SOURCES, output_dir=self.build_temp,
                                        include_dirs=["csrc"], extra_postargs=CORE_FLAGS)
        for ext in self.extensions:
            ext.extra_objects = list(objects) + list(ext.extra_objects or [])
        super().build_extensions()

    def get_ext_filename(self, fullname):
        # A plain shared library, not a Python module: no EXT_SUFFIX. distutils
        # asks with the full name and with its last component.
        if any(fullname in (lib, lib.split(".")[-1]) for lib in PLAIN_LIBRARIES):
            return os.path.join(*fullname.split(".")) + ".so"
        return super().get_ext_filename(fullname)

    def get_export_symbols(self, ext):
        if ext.name in PLAIN_LIBRARIES:
            return []
        return super().get_export_symbols(ext)


class BuildPy(build_py):
    """Also ships the repository's docs/*.md as nacc/_docs/ (read by `nacc docs` and
    nacc.docs), so the hardware reference and guides that messages cite are installed."""

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "nacc", "_docs")
        self.mkpath(target)
        for path in sorted(glob.glob(os.path.join(HERE, "docs", "*.md"))):
            self.copy_file(path, os.path.join(target, os.path.basename(path)))


setup(
    name="nacc",
    version="0.1.0",
    description="SDK for the NACC INT8 NPU: a bit-exact, cycle-counting model, "
    "a TensorFlow Lite delegate and an ONNX Runtime execution provider",
    long_description=open(os.path.join(HERE, "README.md"), encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    package_dir={"": "python"},
    packages=find_packages("python"),
    ext_modules=[core, delegate, ort_ep],
    cmdclass={"build_ext": BuildExt, "build_py": BuildPy},
    python_requires=">=3.9",
    install_requires=["numpy>=1.23"],
    extras_require={
        # The delegate's TFLite ABI declaration is verified against exactly these
        # releases; any official build of them works (nacc checks the module's
        # version): tensorflow, or tensorflow-cpu (`pip install nacc tensorflow-cpu==2.21.0`
        # or the tflite-cpu extra: do not combine it with an extra that pins tensorflow).
        "tflite": ["tensorflow==2.21.0", "flatbuffers>=24.3"],
        "tflite-cpu": ["tensorflow-cpu==2.21.0", "flatbuffers>=24.3"],
        "litert": ["ai-edge-litert==2.3.0"],
        # The plugin EP API the EP is built for appeared in ONNX Runtime 1.23.
        "onnxruntime": ["onnxruntime>=1.23", "onnx>=1.16"],
        # nacc bench: charts, progress bar, and what builds the default models
        # (Keras -> TFLite, Keras -> ONNX with tf2onnx, the digits data set).
        "bench": [
            "matplotlib>=3.5",
            "tqdm>=4.60",
            "tensorflow==2.21.0",
            "onnxruntime==1.31.1",
            "onnx>=1.16",
            "tf2onnx>=1.16",
            "scikit-learn>=1.3",
        ],
        "test": [
            "matplotlib>=3.5",
            "tqdm>=4.60",
            "tf2onnx>=1.16",
            "tensorflow==2.21.0",
            "ai-edge-litert==2.3.0",
            "scikit-learn>=1.3",
            "onnxruntime==1.31.1",
            "onnx>=1.16",
            "flatbuffers>=24.3",
            "pytest>=7",
        ],
    },
    zip_safe=False,
)

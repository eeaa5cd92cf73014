"""nacc: SDK for the NACC INT8 neural-network accelerator.

The accelerator is a bit-exact, cycle-counting C++ model (``nacc._core``).
"""
from nacc import _core
from nacc._core import DeviceFault, NaccError, UnsupportedError

__version__ = "0.1.0"

# The TFLite delegate (importing it does not import TensorFlow).
from nacc.tflite import (  # noqa: E402
    DelegateReport,
    IncompatibleRuntimeError,
    NaccDelegate,
    delegate_library_path,
    load_delegate,
)

__all__ = [
    "DelegateReport",
    "DeviceFault",
    "IncompatibleRuntimeError",
    "NaccDelegate",
    "NaccError",
    "UnsupportedError",
    "__version__",
    "delegate_library_path",
    "load_delegate",
]

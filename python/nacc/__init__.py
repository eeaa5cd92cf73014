"""nacc: SDK for the NACC INT8 neural-network accelerator.

The accelerator is a bit-exact, cycle-counting C++ model (``nacc._core``).
"""
from nacc import _core
from nacc._core import DeviceFault, NaccError, UnsupportedError

__version__ = "0.1.0"

__all__ = ["DeviceFault", "NaccError", "UnsupportedError", "__version__"]

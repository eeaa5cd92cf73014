"""Shared pytest configuration: quiet TensorFlow, restore the kernel path."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402


def _kernel_paths():
    """'reference' and every ISA path this CPU can run (avx2, avx_vnni, avx512_vnni, amx)."""
    try:
        from nacc import _core
    except ImportError:  # collection without the built core: the tests report that themselves
        return ["auto", "reference"]
    return list(_core.kernel_paths())


@pytest.fixture(params=_kernel_paths())
def kernel_path(request):
    """Runs a test through every kernel path this CPU has (the plain reference loops and
    each ISA path: AVX2, AVX-VNNI, AVX-512 VNNI, AMX), restoring 'auto' afterwards."""
    from nacc import _core

    _core.set_kernel_path(request.param)
    try:
        yield request.param
    finally:
        _core.set_kernel_path("auto")

"""Shared pytest configuration: quiet TensorFlow, restore the kernel path."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402


@pytest.fixture(params=["auto", "reference"])
def kernel_path(request):
    """Runs a test through both kernel paths (AVX2 where available, and the plain
    reference loops), restoring 'auto' afterwards."""
    from nacc import _core

    _core.set_kernel_path(request.param)
    try:
        yield request.param
    finally:
        _core.set_kernel_path("auto")

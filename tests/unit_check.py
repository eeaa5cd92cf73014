"""Runs a nacc unit through both kernel paths and compares with an expected
tensor element for element (zero tolerance), with a message that says where
and how the first differing element differs."""
from __future__ import annotations

from typing import Callable

import numpy as np

from nacc import _core

# The reference loops and every ISA path this CPU can run (each unit's fast code per path).
PATHS = tuple(_core.kernel_paths())


def run_path(path: str, fn: Callable[[], np.ndarray]) -> np.ndarray:
    """fn() with the kernel path set to `path`; the path is always restored to 'auto'."""
    _core.set_kernel_path(path)
    try:
        return fn()
    finally:
        _core.set_kernel_path("auto")


def assert_same(expected: np.ndarray, got: np.ndarray, what: str) -> None:
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != expected {expected.shape}"
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype} != expected {expected.dtype}"
    diff = np.argwhere(got != expected)
    if diff.size:
        first = tuple(int(i) for i in diff[0])
        raise AssertionError(
            f"{what}: {len(diff)} of {expected.size} elements differ; first at NHWC {first}: "
            f"got {int(got[first])}, expected {int(expected[first])}")


def assert_both_paths(expected: np.ndarray, fn: Callable[[], np.ndarray], what: str) -> None:
    """fn() through the reference loops and every ISA path must each equal `expected`."""
    for path in PATHS:
        assert_same(expected, run_path(path, fn), f"{what} [{path} path]")

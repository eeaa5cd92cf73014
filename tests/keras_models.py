"""Keras models converted to int8 TFLite with a representative dataset, for
the tests: the building code lives in the package (python/nacc/models.py,
also used by ``nacc demo`` and the benchmarks); this module only points its
cache at tests/.model_cache/ (git-ignored) so the converter runs once per
machine. NACC_TEST_MODEL_CACHE moves that cache (e.g. out of a fresh CI clone)."""
from __future__ import annotations

import os

from nacc import models as _models
from nacc.models import MODELS, digits_split  # noqa: F401 (re-exported for the tests)

CACHE_DIR = os.environ.get("NACC_TEST_MODEL_CACHE") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), ".model_cache")


def converted(name: str, float_io: bool = False) -> bytes:
    """The int8 TFLite model `name` (int8 or float32 inputs/outputs), from the cache."""
    return _models.converted(name, float_io=float_io, cache=CACHE_DIR)


def model_path(name: str, float_io: bool = False) -> str:
    return _models.model_path(name, float_io=float_io, cache=CACHE_DIR)

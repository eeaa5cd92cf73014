"""nacc's differential fuzzer: random int8 graphs through the references
(TFLite BUILTIN_REF, ONNX Runtime's CPU EP) and through nacc (the TFLite
delegate, the ONNX Runtime EP), compared exactly (ONNX: within 1, NACC_SPEC §1).

    PYTHONPATH=python python -m tests.fuzz --graphs 10000 --onnx-graphs 1000 --seed 1 --out /tmp/fuzz

See README.md in this directory.
"""
import os
import sys

_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _TESTS not in sys.path:  # tflite_builder and friends, as under pytest
    sys.path.insert(0, _TESTS)

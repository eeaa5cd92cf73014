#!/usr/bin/env python3
"""Prints the compression-ratio table of docs/weight_compression.md.

The tensors are the ones tests/test_weight_codec.py bounds (RATIO_CASES), so
the table and the tests measure the same data:

    PYTHONPATH=python python tools/weight_codec_ratios.py
"""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    spec = importlib.util.spec_from_file_location(
        "test_weight_codec", os.path.join(ROOT, "tests", "test_weight_codec.py"))
    tests = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tests)
    from nacc import _core

    print("| tensor (64 K int8) | entropy bits/value | zrun_rice bits/value | lut bits/value "
          "| chosen | ratio | bits / entropy |")
    print("|---|---|---|---|---|---|---|")
    for name, (a, _) in tests.RATIO_CASES.items():
        s = _core.weight_codec_sizes(a)
        h = tests._entropy_bits(a)
        print(f"| {name} | {h / a.size:.3f} | {8 * s['zrun_rice'] / a.size:.3f} | "
              f"{8 * s['lut'] / a.size:.3f} | {s['chosen']} | {a.size / s['auto']:.2f} | "
              f"{8 * s['auto'] / h:.3f} |")


if __name__ == "__main__":
    main()

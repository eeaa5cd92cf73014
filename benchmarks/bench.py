#!/usr/bin/env python3
"""The nacc benchmark, the same as `nacc bench` (python/nacc/bench.py): TFLite
XNNPACK / BUILTIN_REF / nacc delegate and ORT CPU / nacc EP on the default
models (built on first use and cached) or the .tflite / .onnx paths given.

    python benchmarks/bench.py [MODEL ...] [--quick] [--json FILE] [--plot DIR]
"""
import sys

from nacc.bench import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""The host-speed benchmark, the same as `nacc bench --host` (python/nacc/host_bench.py,
docs/host_speed.md): XNNPACK / TFLite optimized / BUILTIN_REF / the nacc delegate at
1-32 simulated cores, prepare times, the EP against the CPU EP, the per-invoke overhead.

    python benchmarks/host_speed.py [--quick] [--kernel-path all] [--json FILE]
"""
import sys

from nacc.host_bench import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Command line of the differential fuzzer."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    ap.add_argument("--graphs", type=int, default=300, help="TFLite graphs (default 300)")
    ap.add_argument("--onnx-graphs", type=int, default=60, help="ONNX QDQ graphs (default 60)")
    ap.add_argument("--int16-graphs", type=int, default=0, help="TFLite 16x8 graphs (default 0)")
    ap.add_argument("--int4-graphs", type=int, default=0,
                    help="TFLite graphs with int4 CONV_2D / FULLY_CONNECTED weights (default 0)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="first graph index (resume a long run)")
    ap.add_argument("--out", default=None, help="output directory (reproducers, logs, report)")
    ap.add_argument("--window", type=int, default=4, help="graphs in flight")
    ap.add_argument("--mac-budget", type=int, default=None, help="MACs per op (default 600000)")
    ap.add_argument("--no-shrink", action="store_true", help="save failures unshrunk")
    ap.add_argument("--replay", help="run one reproducer's repro.json again")
    args = ap.parse_args(argv)
    out = args.out or tempfile.mkdtemp(prefix="nacc_fuzz_")
    os.makedirs(out, exist_ok=True)
    from .runner import fuzz, replay

    if args.replay:
        r = replay(args.replay, out)
        print(f"{r['status']}" + (f" [{r.get('category')}] {r.get('message')}" if r["status"] != "ok" else ""))
        sys.exit(0 if r["status"] == "ok" else 1)
    t0 = time.monotonic()
    stats = fuzz(args.graphs, args.seed, out, onnx_graphs=args.onnx_graphs, window=args.window,
                 shrink_failures=not args.no_shrink, mac_budget=args.mac_budget,
                 start_index=args.start, log=lambda m: print(m, flush=True),
                 int16_graphs=args.int16_graphs, int4_graphs=args.int4_graphs)
    text = stats.report() + f"\ntotal {time.monotonic() - t0:.1f} s; output in {out}"
    print(text)
    with open(os.path.join(out, "report.txt"), "w") as f:
        f.write(text + "\n")
    sys.exit(1 if stats.failures else 0)


if __name__ == "__main__":
    main()

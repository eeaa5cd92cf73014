#!/usr/bin/env python3
"""Per-model report of the NACC ONNX Runtime EP on the test models (issue 5's
closing note): nodes claimed / total, partitions, output elements differing
from the CPU EP and the max difference, cosine similarity, host latency of one
run against the CPU EP, and simulated NPU cycles / latency at 1 and 8 cores.

    PYTHONPATH=python python tools/ep_model_report.py [--clock-mhz 1000]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import nacc.onnxruntime as nort  # noqa: E402
import onnx_models as om  # noqa: E402

MODELS = [
    ("small_cnn QDQ int8", lambda: om.quantize(om.small_cnn())),
    ("small_cnn QDQ uint8 per-channel", lambda: om.quantize(om.small_cnn(), activation="uint8",
                                                            per_channel=True)),
    ("small_cnn QOperator", lambda: om.quantize(om.small_cnn(), fmt="QOperator")),
    ("small_cnn + Softmax in the middle", lambda: om.quantize(om.small_cnn(softmax_in_middle=True))),
    ("mlp QDQ batch 4", lambda: om.quantize(om.mlp(batch=4))),
]


def timed(sess, feeds, repeat=3):
    sess.run(None, feeds)
    t = time.perf_counter()
    for _ in range(repeat):
        out = sess.run(None, feeds)
    return out[0], (time.perf_counter() - t) / repeat * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clock-mhz", type=float, default=1000.0)
    args = ap.parse_args()
    nort.register()
    rows = []
    for name, build in MODELS:
        model = build()
        feeds = om.input_feeds(model, seed=5)[0]
        cpu, t_cpu = timed(om.session(model, ["CPUExecutionProvider"]), feeds)
        cycles = {}
        for cores in (1, 8):
            s = om.session(model, "nacc", {"cores": cores})
            rep = nort.partition_reports()[-1]
            before = nort.run_stats()
            npu, t_npu = timed(s, feeds)
            after = nort.run_stats()
            cycles[cores] = sum(v["cycles"] for k, v in after.items()
                                if before.get(k, {}).get("runs") != v["runs"])
            if cores == 1:
                t1, out1, rep1 = t_npu, npu, rep
        d = np.abs(cpu - out1)
        cos = float(cpu.ravel() @ out1.ravel() / (np.linalg.norm(cpu) * np.linalg.norm(out1) + 1e-30))
        rows.append((name, f"{rep1['claimed_nodes']}/{rep1['total_nodes']}", len(rep1["partitions"]),
                     f"{np.count_nonzero(d) / d.size:.3f}", f"{d.max():.4g}", f"{cos:.5f}",
                     f"{t1:.2f} / {t_cpu:.2f}", cycles[1], cycles[8],
                     f"{cycles[1] / args.clock_mhz:.1f} / {cycles[8] / args.clock_mhz:.1f}"))
    head = ("model", "claimed", "parts", "frac diff", "max diff", "cosine", "host ms nacc/cpu",
            "cycles 1c", "cycles 8c", f"NPU us 1c/8c @{args.clock_mhz:g} MHz")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()

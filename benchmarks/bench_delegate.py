#!/usr/bin/env python3
"""The NACC TFLite delegate on the test models: per model, nodes claimed / total,
partitions, host latency of one Invoke with the delegate vs TFLite's default
kernels (XNNPACK) vs BUILTIN_REF, and the simulated NPU latency (device cycles
at clock_mhz) at 1 and 8 cores. Prints a Markdown table.

    PYTHONPATH=python python benchmarks/bench_delegate.py [--runs N] [--models a,b]

Models come from tests/keras_models.py (converted once, cached in
tests/.model_cache). Host latency is the median of N Invokes after one warm-up,
the three interpreters interleaved (the machine may be shared).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))


def timed_invoke(interp, inputs):
    for d, x in zip(interp.get_input_details(), inputs):
        interp.set_tensor(d["index"], x)
    t0 = time.perf_counter()
    interp.invoke()
    return (time.perf_counter() - t0) * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--models", default="mobilenet_v1_025_128,mobilenet_v2_035_96,resnet_style_32")
    p.add_argument("--threads", type=int, default=2, help="host threads for the simulation")
    args = p.parse_args()

    import tensorflow as tf

    import keras_models
    import nacc
    from delegate_models import random_inputs

    ref_type = tf.lite.experimental.OpResolverType.BUILTIN_REF
    print("| model | claimed / nodes | partitions | host ms: NACC delegate | XNNPACK | "
          "BUILTIN_REF | NPU us @1 core | NPU us @8 cores | bit-exact |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        model = keras_models.converted(name)
        npu = {}
        interps = {}
        for cores in (1, 8):
            d = nacc.load_delegate(cores=cores, threads=args.threads, log_level="off")
            it = tf.lite.Interpreter(model_content=model, experimental_delegates=[d],
                                     experimental_op_resolver_type=ref_type, num_threads=1)
            it.allocate_tensors()
            interps[f"nacc{cores}"] = (it, d)
        xnn = tf.lite.Interpreter(model_content=model, num_threads=1)
        ref = tf.lite.Interpreter(model_content=model, num_threads=1,
                                  experimental_op_resolver_type=ref_type)
        for it in (xnn, ref):
            it.allocate_tensors()
        x = random_inputs(ref)
        times = {"nacc8": [], "xnn": [], "ref": []}
        for i in range(args.runs + 1):
            t = {"nacc8": timed_invoke(interps["nacc8"][0], x), "xnn": timed_invoke(xnn, x),
                 "ref": timed_invoke(ref, x)}
            if i:
                for k, v in t.items():
                    times[k].append(v)
        timed_invoke(interps["nacc1"][0], x)
        exact = np.array_equal(interps["nacc8"][0].get_tensor(ref.get_output_details()[0]["index"]),
                               ref.get_tensor(ref.get_output_details()[0]["index"]))
        for cores in (1, 8):
            r = interps[f"nacc{cores}"][1].report()
            npu[cores] = sum(p.last_latency_us for p in r.partitions)
        r = interps["nacc8"][1].report()
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"| {name} | {r.claimed_nodes} / {r.total_nodes} | {len(r.partitions)} | "
              f"{med['nacc8']:.1f} | {med['xnn']:.2f} | {med['ref']:.1f} | {npu[1]:.0f} | "
              f"{npu[8]:.0f} | {'yes' if exact else 'NO'} |")


if __name__ == "__main__":
    main()

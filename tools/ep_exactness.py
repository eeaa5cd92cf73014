"""Whole-model exactness of the NACC ONNX Runtime EP against ORT's CPU EP
(issue 14): per model, claimed / total nodes, partitions and the number of
output elements that differ, on this machine's CPU.

    PYTHONPATH=python:tests python tools/ep_exactness.py [--json out.json] [names...]
"""
import argparse
import json
import logging
import sys

import numpy as np

sys.path.insert(0, "tests")

log = logging.getLogger("ep_exactness")


def models():
    import onnx_models as om
    import onnx_zoo as zoo

    out = {
        "small_cnn": lambda: om.quantize(om.small_cnn()),
        "small_cnn_u8": lambda: om.quantize(om.small_cnn(), activation="uint8"),
        "mlp": lambda: om.quantize(om.mlp()),
        "small_cnn_qop": lambda: om.quantize(om.small_cnn(), fmt="QOperator"),
    }
    for name in zoo.ARCHS:
        out[name] = (lambda n: lambda: zoo.quantized(n))(name)
        out[name + "_pc"] = (lambda n: lambda: zoo.quantized(n, per_channel=True))(name)
        out[name + "_u8"] = (lambda n: lambda: zoo.quantized(n, activation="uint8"))(name)
        # 7-bit weights (reduce_range): the CPU EP's AVX2 u8s8 convolution
        # cannot saturate, so on CPUs without VNNI these are the variants
        # whose differences are the EP's own (test_cpu_ep_departs_...).
        out[name + "_7b"] = (lambda n: lambda: zoo.quantized(n, reduce_range=True))(name)
        out[name + "_pc_7b"] = (lambda n: lambda: zoo.quantized(
            n, per_channel=True, reduce_range=True))(name)
        out[name + "_qop_7b"] = (lambda n: lambda: om.quantize(
            zoo.ARCHS[n](), fmt="QOperator", reduce_range=True,
            calib=om.calibration(zoo.ARCHS[n](), n=8, seed=7)))(name)

    def keras(name):
        import keras_models
        from nacc import models as nm
        return lambda: nm.onnx_model(name, cache=keras_models.CACHE_DIR)

    # Small Keras models via tf2onnx + quantize_static (nacc.models; cached).
    # (grouped_conv_16 does not convert: tf2onnx leaves a StatefulPartitionedCall.)
    for name in ("digits_cnn", "alexnet_stem_67", "deeplab_block_24",
                 "patch_embed_64", "resnet_style_32", "ds_cnn_kws", "squeeze_excite_64",
                 "mobilenet_v2_035_96"):
        out["keras_" + name] = keras(name)
    return out


def measure(model: bytes, seeds=(5, 6)):
    import onnx_models as om
    import nacc.onnxruntime as nort

    cpu = om.session(model, ["CPUExecutionProvider"])
    npu = om.session(model, "nacc", {"cores": 4})
    rep = nort.partition_reports()[-1]
    differ = size = 0
    before = nort.run_stats()
    for seed in seeds:
        feeds = om.input_feeds(model, seed=seed, n=1)[0]
        for a, b in zip(cpu.run(None, feeds), npu.run(None, feeds)):
            differ += int(np.count_nonzero(a != b))
            size += a.size
    # Boundary tensors the host converted NCHW <-> NHWC (0: the Programs did,
    # docs/onnxruntime_ep.md "Layout and types").
    host_layout = sum(v.get("host_layout_conversions", 0) -
                      before.get(k, {}).get("host_layout_conversions", 0)
                      for k, v in nort.run_stats().items())
    return dict(claimed=rep["claimed_nodes"], total=rep["total_nodes"],
                partitions=len(rep["partitions"]), differ=differ, elements=size,
                host_layout=host_layout, host=sorted({h["op_type"] for h in rep["host_nodes"]}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    import nacc.onnxruntime as nort
    nort.register()
    table = models()
    res = {}
    for name in args.names or table:
        try:
            r = measure(table[name]())
        except Exception as e:  # a model that does not build is reported, not fatal
            log.info("%-18s failed: %s", name, str(e).splitlines()[0][:200])
            continue
        res[name] = r
        log.info("%-18s claimed %3d/%-3d partitions %2d differ %4d/%-5d host layout %d host %s",
                 name, r["claimed"], r["total"], r["partitions"], r["differ"], r["elements"],
                 r["host_layout"], ",".join(r["host"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()

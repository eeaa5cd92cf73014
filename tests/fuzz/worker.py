"""Worker processes of the fuzzer: `python -m fuzz.worker ref|nacc`.

"ref" builds the models (TFLite with TensorFlow's schema, ONNX with onnx) and
runs the references: TFLite BUILTIN_REF (tf.lite.Interpreter) and ONNX
Runtime's CPU EP. "nacc" runs the same models through the NACC delegate (on
the LiteRT interpreter, BUILTIN_REF kernels for the host nodes: it imports in
a second where TensorFlow takes many) and the NACC ONNX Runtime EP.

Each worker serves many requests (length-prefixed pickles on stdin / a dup of
stdout; fd 1 itself goes to stderr so library prints cannot corrupt the
stream). A process that dies (TFLite's reference int8 SOFTMAX aborts on
nearly flat inputs, a crash in nacc) is restarted by the parent.
"""
from __future__ import annotations

import os
import pickle
import struct
import sys
import time
import traceback

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _read(stream):
    head = stream.read(8)
    if len(head) < 8:
        return None
    (n,) = struct.unpack("<Q", head)
    return pickle.loads(stream.read(n))


def _write(stream, obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


# ---- reference role ------------------------------------------------------------------

class Reference:
    def __init__(self):
        self._tf = None

    def preload(self):
        self.tf()
        import onnxruntime  # noqa: F401
        import fuzz.build_onnx  # noqa: F401
        import fuzz.build_tflite  # noqa: F401

    def tf(self):
        if self._tf is None:
            import tensorflow as tf
            self._tf = tf
        return self._tf

    def crash_for_test(self):
        os.abort()

    def build_tflite(self, spec):
        from fuzz.build_tflite import build_tflite
        return {"model": build_tflite(spec)}

    def build_onnx(self, spec, expose=False):
        from fuzz.build_onnx import build_onnx
        return build_onnx(spec, expose)

    def run_tflite(self, model, inputs):
        tf = self.tf()
        interp = tf.lite.Interpreter(
            model_content=model, num_threads=1,
            experimental_op_resolver_type=tf.lite.experimental.OpResolverType.BUILTIN_REF)
        return {"outputs": _invoke(interp, inputs)}

    def check_onnx_ops(self, spec, values):
        """ORT CPU on each op of `spec` alone, fed with `values` (the tensors
        nacc computed, NCHW int8 by name): {op index: output or error text}."""
        from fuzz.build_onnx import build_onnx, single_op_spec
        out = {}
        for j in range(len(spec["ops"])):
            sub = single_op_spec(spec, j)
            try:
                model = build_onnx(sub)["model"]
                feeds = {f"t{t}": values[f"t{t}"] for t in sub["inputs"]}
                out[j] = self.run_onnx_cpu(model, feeds)["outputs"][f"t{sub['outputs'][0]}"]
            except Exception as e:
                out[j] = f"{type(e).__name__}: {e}"
        return {"outputs": out}

    def run_onnx_cpu(self, model, feeds, disabled_optimizers=None):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.log_severity_level = 3
        s = ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"],
                                 disabled_optimizers=disabled_optimizers or [])
        names = [o.name for o in s.get_outputs()]
        return {"outputs": dict(zip(names, s.run(None, feeds)))}

    def check_onnx_op_u8(self, spec, j, values):
        """ORT CPU on op j alone as a host node between int8 Q -> DQ pairs (the
        input from a float graph input through QuantizeLinear, the output into
        a DequantizeLinear): the configuration in which QDQS8ToU8Transformer
        makes the op uint8 (tests/test_ep_exact.py
        test_cpu_ep_u8_conv_at_a_partition_boundary_ort_only). Fed `values`
        (int8 by name); {"output": int8 array} or {"error": text}."""
        import onnx
        from onnx import TensorProto, helper, numpy_helper
        from fuzz.build_onnx import build_onnx, single_op_spec
        sub = single_op_spec(spec, j)
        m = onnx.load_from_string(build_onnx(sub)["model"])
        inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
        feeds, nodes = {}, []
        for gi in m.graph.input:
            name = gi.name
            s, z = np.float32(inits[name + "_s"]), int(inits[name + "_z"])
            x = values[name]
            f = ((x.astype(np.float32) - np.float32(z)) * s).astype(np.float32)
            if not np.array_equal(np.clip(np.rint(f / s) + z, -128, 127), x):
                return {"error": f"{name}: QuantizeLinear does not give the values back"}
            feeds[name + "_f"] = f
            gi.name = name + "_f"
            gi.type.tensor_type.elem_type = TensorProto.FLOAT
            nodes.append(helper.make_node("QuantizeLinear", [name + "_f", name + "_s", name + "_z"],
                                          [name], name=f"u8_q_{name}"))
        out = m.graph.output[0]
        name = out.name
        nodes_after = [helper.make_node("DequantizeLinear", [name, name + "_s", name + "_z"],
                                        [name + "_f"], name=f"u8_dq_{name}")]
        out.name = name + "_f"
        out.type.tensor_type.elem_type = TensorProto.FLOAT
        all_nodes = nodes + list(m.graph.node) + nodes_after
        del m.graph.node[:]
        m.graph.node.extend(all_nodes)
        y = self.run_onnx_cpu(m.SerializeToString(), feeds)["outputs"][name + "_f"]
        s, z = np.float32(inits[name + "_s"]), int(inits[name + "_z"])
        return {"output": np.clip(np.rint(y / s) + z, -128, 127).astype(np.int8)}


def _invoke(interp, inputs):
    interp.allocate_tensors()
    for d, x in zip(interp.get_input_details(), inputs):
        interp.set_tensor(d["index"], x)
    interp.invoke()
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]


def _inject_fault(result, kind) -> None:
    """Test hook of the fuzzer's own tests (inject_fault=<KIND>): a graph where
    the delegate claimed a node of KIND gets its first output element changed,
    as a nacc bug would."""
    if kind and any(n["claimed"] and n["op"] == kind for n in result.get("nodes") or []):
        out = result["outputs"][0].reshape(-1)
        out[0] = out[0] ^ 1


# ---- nacc role ------------------------------------------------------------------------

class Nacc:
    def preload(self):
        import nacc  # noqa: F401
        import nacc.onnxruntime  # noqa: F401
        import onnxruntime  # noqa: F401
        from ai_edge_litert import interpreter  # noqa: F401

    def run_tflite(self, model, inputs, options, host_check=True, inject_fault=None):
        import nacc
        from ai_edge_litert import interpreter as litert

        result = {"stage": "load_delegate"}
        d = nacc.load_delegate(runtime="litert", log_level="off", **options)
        try:
            result["stage"] = "interpreter"
            interp = litert.Interpreter(
                model_content=model, num_threads=1,
                experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF,
                experimental_delegates=[d])
            rep = d.report()
            result["nodes"] = [
                {"op": n.op, "claimed": n.claimed, "host_kind": n.host_kind,
                 "reasons": [(r.rule, r.detail) for r in n.reasons]} for n in rep.nodes]
            result["stage"] = "allocate_tensors"
            interp.allocate_tensors()
            for det, x in zip(interp.get_input_details(), inputs):
                interp.set_tensor(det["index"], x)
            result["stage"] = "invoke"
            interp.invoke()
            result["outputs"] = [interp.get_tensor(det["index"]).copy()
                                 for det in interp.get_output_details()]
            _inject_fault(result, inject_fault)
            result["stage"] = "done"
            del interp
        except Exception as e:  # an error status from TFLite: reported, compared by the parent
            result["error"] = f"{type(e).__name__}: {e}"
        finally:
            d.close()
        if host_check and "error" not in result:
            # the same model on LiteRT's reference kernels without the delegate:
            # tells a LiteRT-vs-TensorFlow reference difference from a nacc one
            interp = litert.Interpreter(
                model_content=model, num_threads=1,
                experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)
            result["host_outputs"] = _invoke(interp, inputs)
        return result

    def run_onnx(self, models, feeds, options):
        import onnxruntime as ort
        import nacc.onnxruntime as nort

        nort.register()
        result = {"runs": []}
        for model in models:
            so = ort.SessionOptions()
            so.intra_op_num_threads = 1
            so.log_severity_level = 3
            so.add_provider("NaccExecutionProvider", {k: str(v) for k, v in options.items()})
            run = {"stage": "session"}
            result["runs"].append(run)
            try:
                before = nort.partition_reports()
                s = ort.InferenceSession(model, sess_options=so)
                if "NaccExecutionProvider" not in s.get_providers():
                    raise RuntimeError("the NACC EP was not used by the session")
                reps = _new_reports(before, nort.partition_reports())
                # ORT may offer the graph more than once (later offers lack the
                # nodes already fused): claims are the union over the offers
                rep = reps[0] if reps else {}
                run["report"] = {"claimed": sum(r.get("claimed_nodes", 0) for r in reps),
                                 "total": rep.get("total_nodes"),
                                 "claimed_names": [n.get("name") for r in reps
                                                   for p in r.get("partitions", [])
                                                   for n in p.get("nodes", [])],
                                 "host_nodes": [(h.get("name"), h.get("op_type"), h.get("reason"))
                                                for h in rep.get("host_nodes", [])],
                                 "offers": len(reps)}
                run["stage"] = "run"
                names = [o.name for o in s.get_outputs()]
                run["outputs"] = dict(zip(names, s.run(None, feeds)))
                run["stage"] = "done"
            except Exception as e:
                run["error"] = f"{type(e).__name__}: {e}"
                break
        return result


def serve(handler, stream_in, proto_out) -> None:
    while True:
        req = _read(stream_in)
        if req is None:
            return
        method, kwargs = req
        t0, c0 = time.monotonic(), time.process_time()
        try:
            resp = getattr(handler, method)(**kwargs)
        except Exception as e:
            resp = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        resp["timing"] = (method, time.monotonic() - t0, time.process_time() - c0)
        _write(proto_out, resp)


def _new_reports(before: list, after: list) -> list:
    """The reports in `after` (a capped, oldest-first list) added since `before`."""
    for k in range(len(after) + 1):
        keep = len(after) - k
        if keep <= len(before) and after[:keep] == before[len(before) - keep:]:
            return after[keep:]
    return after


def main(role: str) -> None:
    """Imports once, then serves from forked children: a child that dies (an
    abort in TFLite's reference SOFTMAX, a crash in nacc) is answered as a
    crash of that request and replaced by a new fork in milliseconds, instead
    of a new process importing TensorFlow again."""
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    handler = Reference() if role == "ref" else Nacc()
    handler.preload()
    stream_in = sys.stdin.buffer
    while True:
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                serve(handler, stream_in, proto_out)
            except BaseException:
                traceback.print_exc()
                code = 3
            finally:
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            proto_out.flush()
            os._exit(0)  # end of input (skips TensorFlow's slow interpreter teardown)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        _write(proto_out, {"died": "crash", "returncode": code, "forks": True})


if __name__ == "__main__":
    main(sys.argv[1])

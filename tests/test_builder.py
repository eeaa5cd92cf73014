"""The flatbuffer test-model builder produces models TFLite accepts, with the
exact quantization parameters the test asked for."""
import numpy as np

from tflite_builder import QTensor, build_model, make_interpreter, run_tflite


def test_single_op_model_roundtrip():
    rng = np.random.default_rng(0)
    x = QTensor((1, 5, 7, 3), "int8", scale=0.05, zero_point=-3)
    w = QTensor((4, 3, 3, 3), "int8", scale=[0.01, 0.02, 0.03, 0.04], zero_point=[0] * 4,
                quantized_dimension=0, data=rng.integers(-127, 128, (4, 3, 3, 3)))
    b = QTensor((4,), "int32", scale=[0.05 * s for s in (0.01, 0.02, 0.03, 0.04)],
                zero_point=[0] * 4, data=rng.integers(-1000, 1000, 4))
    o = QTensor((1, 5, 7, 4), "int8", scale=0.1, zero_point=5)
    model = build_model("CONV_2D", [x, w, b], [o], options=dict(padding="SAME"), version=3)
    interp = make_interpreter(model)
    interp.allocate_tensors()
    (inp,) = interp.get_input_details()
    assert inp["quantization"] == (np.float32(0.05), -3)
    out = interp.get_output_details()[0]
    assert out["quantization"] == (np.float32(0.1), 5)
    assert list(out["shape"]) == [1, 5, 7, 4]
    (res,) = run_tflite(model, [rng.integers(-128, 128, (1, 5, 7, 3), dtype=np.int8)])
    assert res.dtype == np.int8 and res.shape == (1, 5, 7, 4)

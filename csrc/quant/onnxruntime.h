// ONNX Runtime's CPU EP arithmetic (1.31, x86-64, MLAS; each formula was
// derived from the kernels' sources and checked with numpy against the
// installed wheel while it was written; tests/test_ep_exact.py compares the
// NPU's results with the CPU EP element by element) turned into NPU parameters: the
// float32 element-wise modes (QLinearAdd's fused multiply-adds, QLinearMul,
// and the unfused DequantizeLinear -> float op -> QuantizeLinear), the float32
// average pool (QLinearAveragePool), QLinearGlobalAveragePool's float32
// output scale and the 256-entry requantization table of QLinearConcat /
// QuantizeLinear after DequantizeLinear (written, not yet lowered: Concat
// stays on the host). The parameter types are arch's.
#pragma once

#include <array>
#include <cstdint>

#include "arch/unit_params.h"

namespace nacc {

// How ONNX Runtime runs a QDQ node unit on its CPU EP (decided by the ONNX
// frontend from the session's optimization level, QDQS8ToU8Transformer and
// the selectors' type match; docs/onnxruntime_ep.md "Exactness").
enum class OrtKernel : uint8_t {
  kFusedS8,   // com.microsoft QLinear* on int8 (session.qdqisint8allowed, or int8 I/O)
  kFusedU8,   // QLinear* on uint8 (uint8 models, and int8 Q->DQ pairs after S8 -> U8)
  kUnfused,   // DequantizeLinear -> the float op -> QuantizeLinear
};

// One element-wise operand or result: scale and the zero point of the stored
// int8 tensor (a uint8 tensor's zero point minus 128).
struct OrtQuant {
  float scale = 1.0f;
  int32_t zero_point = 0;  // [-128, 127]
};

// Element-wise registers (ElementwiseParams float modes) for ADD, SUB or MUL
// computed as ONNX Runtime would: a, b = the NPU's input 1 and 2; `swapped`:
// input 1 is ONNX's B (a broadcast ONNX A moved to input 2 — ONNX Runtime
// also moves a scalar / per-channel A inward but keeps F = zC - (rA zA + rB zB)
// in ONNX order); clamp [act_min, act_max] (a fused Relu's range, stored int8).
// kFused* ADD: QLinearAdd, f = {float(sA / sC), float(sB / sC), F}; MUL:
// QLinearMul, f = {float(float(sA * sB) / sC)}; kUnfused: f = {sA, sB, sC}.
// Throws InvalidArgument for SUB fused (ONNX Runtime has no QLinearSub).
ElementwiseParams ort_elementwise_params(ElementwiseMode mode, OrtKernel kernel, const OrtQuant& a,
                                         const OrtQuant& b, const OrtQuant& out, int32_t act_min,
                                         int32_t act_max, bool swapped = false);

// ONNX Runtime's float32 average pools (PoolParams float32 mode) for a
// stored-int8 input/output pair: kFusedS8 / kFusedU8 QLinearAveragePool in
// that value domain; kUnfused DequantizeLinear -> float AveragePool ->
// QuantizeLinear, the window summed by columns (MLAS's NCHW vector kernel)
// if `by_columns`, else by rows (its NCHWc kernel).
void ort_average_pool_params(OrtKernel kernel, const OrtQuant& in, const OrtQuant& out,
                             bool by_columns, PoolParams* params);

// QLinearGlobalAveragePool's float32 output scale over n = H * W cells:
// s_x / (s_y * float(n)), then the float32 output stage
// (OutputStageKind::kFloat32) with accumulator sum(x - z_x) exactly.
float ort_global_average_pool_scale(float input_scale, float output_scale, int64_t n);

// The unfused GlobalAveragePool (DequantizeLinear -> float mean ->
// QuantizeLinear) is not exact in that form; see docs/onnxruntime_ep.md.

// QLinearConcat's per-input table and DequantizeLinear -> QuantizeLinear:
// entry i (the stored int8 input (int8)i) = sat(nearbyint(float(x - z_in) *
// s_in / s_out) + z_out), the division a true float32 division. The identity
// table when the two quantizations are equal.
std::array<int8_t, 256> ort_requantize_lut(const OrtQuant& in, const OrtQuant& out);

}  // namespace nacc

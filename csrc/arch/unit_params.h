// The parameters of the NPU's compute units as the registers define them
// (NACC_SPEC §1-§2, §9, docs/device_model.md §4): window geometry, the one
// output stage of every MAC unit with its modes, pooling, the activation unit
// and the element-wise unit. The device's units execute them; quant/ builds
// them from a host runtime's quantization (TFLite's, ONNX Runtime's); the
// compiler writes them into registers.
#pragma once

#include <cmath>
#include <cstdint>

#include "arch/field_values.h"
#include "arch/fixed_point.h"

namespace nacc {

// Geometry shared by convolution, depthwise and pooling.
struct WindowParams {
  int stride_h = 1, stride_w = 1;
  // Explicit padding per side, each in [0, limits::kMaxPadding]; padded input
  // positions hold the input zero point (convolution) or are skipped (pooling).
  int pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
};

// How a MAC unit's accumulator becomes an output element. One stage with
// its modes, used by every MAC unit (convolution, depthwise, fully connected,
// matrix) on its reference and its fast path alike:
enum class OutputStageKind : uint8_t {
  // QUANT_MUL / QUANT_SHIFT arrays (NACC_SPEC §1): int32 accumulator,
  // MultiplyByQuantizedMultiplier(acc, multiplier[c], shift[c]) — TFLite's int8
  // convolution, depthwise, BATCH_MATMUL, and a 1x1 convolution lowered to FC.
  kFixedPoint,
  // NACC_ACT_PARA.QUANT_REAL_SCALE (project extension): float64 scales,
  // round(double(acc) * scale[c]) half away from zero, INT32_MIN out of range
  // — TFLite 2.21's reference FULLY_CONNECTED.
  kRealScale,
  // NACC_ACT_PARA.QUANT_FP32_SCALE (project extension): float32 scales,
  // round_half_even(float(acc) * scale[c]) (one float32 multiply, no FMA) —
  // ONNX Runtime's CPU QLinearConv / QLinearMatMul / QGemm (MLAS).
  kFloat32,
  // NACC_SPEC §9, DATA_FORM = 01 (16-bit feature maps): int64 accumulator and
  // TFLite's int64 MultiplyByQuantizedMultiplier with the reduced 16-bit
  // multiplier (requantize_output_16x8 below). The 16-bit convolution of the
  // device (device/units/conv16.h) runs it; the int8 units reject it.
  kFixedPoint16x8,
};

const char* output_stage_kind_name(OutputStageKind kind);

// out = clamp(stage(acc, c) + output_zero_point, act_min, act_max); the add
// wraps in int32 (TFLite adds the zero point to the scaled int32 value).
struct OutputStage {
  OutputStageKind kind = OutputStageKind::kFixedPoint;
  const int32_t* multiplier = nullptr;  // kFixedPoint: [C_out], each in [0, 2^31)
  const int32_t* shift = nullptr;       // kFixedPoint: [C_out], each in [-31, 31]
  const double* real_scale = nullptr;   // kRealScale: [C_out], finite and >= 0
  const float* float_scale = nullptr;   // kFloat32: [C_out], finite and > 0
  int32_t output_zero_point = 0;        // [-128, 127]
  int32_t act_min = -128, act_max = 127;  // -128 <= act_min <= act_max <= 127
};

// The output stage for one accumulator of channel c (the reference form;
// the fast paths vectorise the same arithmetic and are tested against it).
// kFloat32 clamps to [act_min - zp, act_max - zp] in float before rounding,
// which gives the same integers as clamping after it.
inline int8_t requantize_output(const OutputStage& s, int c, int32_t acc) {
  switch (s.kind) {
    case OutputStageKind::kFixedPoint:
      return saturate_to_int8(
          wrapping_add(multiply_by_quantized_multiplier(acc, s.multiplier[c], s.shift[c]),
                       s.output_zero_point),
          s.act_min, s.act_max);
    case OutputStageKind::kRealScale:
      return saturate_to_int8(
          wrapping_add(multiply_by_real_scale(acc, s.real_scale[c]), s.output_zero_point),
          s.act_min, s.act_max);
    case OutputStageKind::kFloat32: {
      float v = static_cast<float>(acc) * s.float_scale[c];
      v = std::fmin(std::fmax(v, static_cast<float>(s.act_min - s.output_zero_point)),
                    static_cast<float>(s.act_max - s.output_zero_point));
      // Round half to even (the default rounding mode; MLAS uses the same).
      return static_cast<int8_t>(static_cast<int32_t>(std::nearbyint(v)) + s.output_zero_point);
    }
    case OutputStageKind::kFixedPoint16x8:
      break;
  }
  return 0;  // unreachable: check_output_stage rejects kFixedPoint16x8
}

// kFixedPoint16x8 for one int64 accumulator of channel c (TFLite 2.21
// common.cc MultiplyByQuantizedMultiplier(int64_t, int32_t, int)):
//   m16 = multiplier < 0x7FFF0000 ? (multiplier + 2^15) >> 16 : 0x7FFF
//   v   = (acc * m16 + 2^(14 - shift)) >> (15 - shift), truncated to int32
//   out = clamp(v + output_zero_point, act_min, act_max)  (int16 range)
// shift in [-31, 7] (TFLite's range for this form).
inline int16_t requantize_output_16x8(const OutputStage& s, int c, int64_t acc) {
  const int32_t m = s.multiplier[c];
  const int64_t m16 = m < 0x7FFF0000 ? (int64_t{m} + (int64_t{1} << 15)) >> 16 : 0x7FFF;
  const int total = 15 - s.shift[c];
  const int64_t v = (acc * m16 + (int64_t{1} << (total - 1))) >> total;
  const int32_t r = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))) +
                    s.output_zero_point;
  return static_cast<int16_t>(r < s.act_min ? s.act_min : r > s.act_max ? s.act_max : r);
}

// NACC_ACT_PARA.MAC_FP32 (project extension, docs/device_model.md §4): the
// convolution ONNX Runtime's CPU EP runs when it does not fuse a QDQ Conv
// into QLinearConv (DequantizeLinear -> float32 Conv on MLAS -> QuantizeLinear).
// Per output pixel n of the whole output (row-major) and output channel c,
// with e = entries + 4 * c = {s_x, s_w, b_f, s_y}, every step in float32:
//   x_f(k) = float(x - input_zero_point) * s_x  (0.0f at a padded position)
//   w_f(k) = float(w) * s_w
//   K in ONNX's order k = (ic * KH + ky) * KW + kx, whatever the weights'
//   storage; S = 2^kblock_log2 for n < split, else 2^kblock_tail_log2:
//   block_j = fmaf(w_f, x_f, ..fmaf(w_f, x_f, 0.0f)) over k in [jS, (j+1)S) n K
//   total   = ((block_0 + block_1) + block_2) ...;   total = total + b_f
//   out     = clamp(nearbyintf(total / s_y) + output_zero_point, act_min, act_max)
// (round half to even, a true division, the zero point added after rounding:
// MLAS's QuantizeLinear, whose saturation to int8 the clamp includes).
struct MacFp32Params {
  WindowParams window;  // the tile's padding, as the convolution's
  // NACC_FM_OFFSET: IN_FM_OFFSET negated, OUT_FM_OFFSET (9-bit signed fields).
  int32_t input_zero_point = 0, output_zero_point = 0;
  int32_t act_min = -128, act_max = 127;  // -128 <= act_min <= act_max <= 127
  // [C_out][4] float32 {s_x, s_w[c], b_f[c], s_y} (QUANT_MUL_DMA_ADDR): the
  // scales finite and > 0, the bias finite.
  const float* entries = nullptr;
  // Output pixel (oy, ox) of the call is n = (pixel_y0 + oy) * pixel_row +
  // pixel_x0 + ox of the whole output (the tile's origin and OUT_FM_WIDTH).
  int64_t pixel_y0 = 0, pixel_x0 = 0, pixel_row = 1;
  int64_t split = 0;                       // NACC_FP32_KBLOCK.KBLOCK_SPLIT
  int kblock_log2 = 0, kblock_tail_log2 = 0;  // [0, limits::kMaxKblockLog2]
};

// NACC_ACT_PARA.MAC_FP32_ORDER: how MAC_FP32's float32 sum runs over K
// (docs/device_model.md §4; device/units/mac_fp32_m1.h for the one-row ones).
//   kFmaBlocks: blocks of fused multiply-adds (MacFp32Params above; also a
//     depthwise Conv with depth multiplier > 1, MLAS's SGEMM per group).
//   kGroups4 (MlasSgemmKernelM1): products x_f * w_f rounded; K in groups of
//     4, G = ((p0 + p1) + p2) + p3, a remainder of 2 as p0 + p1, then 1 as
//     p0; C = G + C group by group. Depthwise: C starts as the first group,
//     the bias added last; fully connected: C starts at the bias.
//   kLanes8 (MlasSgemmKernelM1TransposeB), fully connected: lane l = k mod 8
//     adds its products in K order from 0.0f; output channels n < split
//     reduce (((l0+l1)+l2)+l3) + (((l4+l5)+l6)+l7), the `tail` (0..3) from
//     `split`: a pair ((l0+l2)+(l4+l6)) + ((l1+l3)+(l5+l7)) while 2 or more
//     remain, then one ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)); then + bias.
enum class Fp32SumOrder : uint8_t { kFmaBlocks = 0, kGroups4 = 1, kLanes8 = 2 };

// MAC_FP32 on NPU_OP_DW_CONV / NPU_OP_FULLY_CONNECTED (mac_fp32_m1.h).
struct MacFp32M1Params {
  // NACC_FM_OFFSET: IN_FM_OFFSET negated, OUT_FM_OFFSET (9-bit signed fields).
  int32_t input_zero_point = 0, output_zero_point = 0;
  int32_t act_min = -128, act_max = 127;  // -128 <= act_min <= act_max <= 127
  // [C_out][4] float32 {s_x, s_w[c], b_f[c], s_y} (QUANT_MUL_DMA_ADDR): the
  // scales finite and > 0, the bias finite.
  const float* entries = nullptr;
  Fp32SumOrder order = Fp32SumOrder::kGroups4;
  int kblock_log2 = 0;  // kFmaBlocks: [0, limits::kMaxKblockLog2]
  // kLanes8: the call's outputs are channels [n0, n0 + n) of the command; its
  // tail of `tail` channels starts at channel `split` (NACC_FP32_KBLOCK).
  int64_t n0 = 0, split = 0;
  int tail = 0;
};

// The float32 modes' value domain (NACC_ACT_PARA.U8_DOMAIN, project
// extension): the arithmetic sees a stored int8 byte b as b (S8: ONNX
// Runtime's int8 kernels) or as the uint8 value b + 128 (U8: its uint8
// kernels, which run int8 QDQ models on x86 after QDQS8ToU8Transformer); the
// zero points are given in that domain, the result q is saturated to the
// domain's range and stored as q - offset.
struct ValueDomain {
  bool u8 = false;
  int32_t offset() const { return u8 ? 128 : 0; }
  int32_t qmin() const { return u8 ? 0 : -128; }
  int32_t qmax() const { return u8 ? 255 : 127; }
};

// NACC_ACT_PARA.POOL_FP32_MODE (project extension): which of ONNX Runtime's
// float32 average pools POOL_FP32 computes (PoolParams below).
enum class PoolFloat : uint8_t {
  kQLinear = 0,          // QLinearAveragePool
  kQuantizeRows = 1,     // DequantizeLinear, NCHWc AveragePool, QuantizeLinear
  kQuantizeColumns = 2,  // DequantizeLinear, NCHW vector AveragePool, QuantizeLinear
};

// The pooling unit: max pool (window 1..15) and average pool (2x2 stride 2;
// the float32 modes below take the max pool's windows, docs/device_model.md §4).
struct PoolParams {
  WindowParams window;
  int kernel_h = 1, kernel_w = 1;
  int32_t act_min = -128, act_max = 127;
  // NACC_ACT_PARA.POOL_FP32 (project extension, average pool only): ONNX
  // Runtime's QLinearAveragePool in float32 instead of TFLite's integer mean:
  //   d   = float(x - input_zero_point) * input_scale   (each in-bounds cell)
  //   sum = 0.0f + d ... in row-major window order;  y = sum / float(count)
  //   q   = sat(nearbyintf(y / output_scale + float(output_zero_point)))
  // with count the in-bounds cells, x and the zero points in `domain`, then
  // q - domain.offset() clamped to [act_min, act_max]. The scales come from
  // QUANT_MUL_DMA_ADDR (2 float32), the zero points from NACC_FM_OFFSET.
  // float_mode (POOL_FP32_MODE) kQuantizeRows / kQuantizeColumns: the unfused
  // DequantizeLinear -> float AveragePool -> QuantizeLinear instead,
  //   q   = sat(nearbyintf(y / output_scale)) + output_zero_point
  // (the zero point added after rounding), with kQuantizeColumns' sum
  //   sum = col(ix0) + col(ix0 + 1) + ...,  col(ix) = d(iy0, ix) + d(iy0 + 1, ix) + ...
  // (MLAS's NCHW vector pooling kernel; kQuantizeRows and kQLinear sum row-major).
  bool float32 = false;
  PoolFloat float_mode = PoolFloat::kQLinear;
  ValueDomain domain;
  float input_scale = 1.0f, output_scale = 1.0f;  // finite, > 0
  int32_t input_zero_point = 0, output_zero_point = 0;  // within the domain's range
};

// The activation unit's registers for one int8 -> int8 activation.
//
// ReLU, ReLU6, None (TFLite optimized_ops::ReluX for int8, which RELU, RELU6 and
// RELU_N1_TO_1 use under every resolver):
//   v   = output_zero_point + MultiplyByQuantizedMultiplier(x - input_zero_point,
//                                                          multiplier, shift)
//   out = clamp(v, lo, act_max) with lo = act_min for None and
//         lo = max(act_min, output_zero_point) (real 0) for ReLU and ReLU6;
//   ReLU6's upper bound (quantized 6.0) comes from act_max.
// LUT: out = clamp(lut[uint8(x)], act_min, act_max); the requantization
//   registers are not used.
// The hardware's q7 (ACT_INT_W) TANH and SIGMOID are not int8 functions
// (Unsupported here); the device runs them as device/units/q7.h.
struct ActivationParams {
  ActMode mode = ActMode::NONE;
  // NACC_FM_OFFSET.IN_FM_OFFSET / OUT_FM_OFFSET: 9-bit signed, [-256, 255].
  int32_t input_zero_point = 0;
  int32_t output_zero_point = 0;
  // QUANT_MUL[0] / QUANT_SHIFT[0]: multiplier in [0, 2^31), shift in [-31, 31].
  // The default is the identity (2^30 * 2^(1-31) = 1).
  int32_t multiplier = 1 << 30;
  int shift = 1;
  // NACC_ACT_MIN / NACC_ACT_MAX: -128 <= act_min <= act_max <= 127.
  int32_t act_min = -128;
  int32_t act_max = 127;
  // LUT mode: 256 int8 entries fetched from NACC_IN_ACT_DMA_ADDR, indexed by
  // the input byte read as uint8 (entry i is f((int8)i)); nullptr otherwise.
  const int8_t* lut = nullptr;
};

// The element-wise unit's registers for one operation.
//
// ADD / SUB (TFLite reference_integer_ops::AddFunc, reference_ops::SubElementwise):
//   a_i    = (x_i + input_i_offset) << left_shift                      i = 1, 2
//   s_i    = MultiplyByQuantizedMultiplierSmallerThanOneExp(a_i, input_i_multiplier, input_i_shift)
//   raw    = s_1 + s_2   (ADD)   or   s_1 - s_2   (SUB)
//   out    = clamp(MultiplyByQuantizedMultiplierSmallerThanOneExp(raw, output_multiplier,
//                  output_shift) + output_zero_point, act_min, act_max)
// MUL (TFLite reference_integer_ops::MulElementwise):
//   out    = clamp(MultiplyByQuantizedMultiplier((x_1 + input1_offset) * (x_2 + input2_offset),
//                  output_multiplier, output_shift) + output_zero_point, act_min, act_max)
//   MUL ignores left_shift and the per-input multipliers (ELEMENT_INPUT_QUANT_EN off).
// MUL_S16_S8 (NACC_CTRL.DATA_FORM = INT16; CMSIS-NN arm_elementwise_mul_s16_s8,
// with the input offsets and activation clamp of arm_elementwise_mul_s16):
// int16 inputs, an int8 output,
//   out    = clamp(MultiplyByQuantizedMultiplier((x_1 + input1_offset) * (x_2 + input2_offset),
//                  output_multiplier, output_shift) + output_zero_point, act_min, act_max)
//   (CMSIS-NN's arm_nn_requantize is this MBQM for multipliers >= 0); the
//   product is int32 (|.| <= 33024^2), output_shift in [-31, 0], act bounds
//   int8; left_shift and the per-input multipliers/shifts must be 0.
//
// NACC_ACT_PARA.ELEMENT_FP32 (project extension) replaces the fixed-point
// arithmetic with ONNX Runtime's CPU EP float32 arithmetic (fields below);
// a = x_1 + domain.offset(), b = x_2 + domain.offset(), zero points z_a =
// -input1_offset, z_b = -input2_offset, z_c = output_zero_point in the domain,
// f = float_params, every step in float32:
//   kQLinear ADD (QLinearAdd, MLAS: fused multiply-adds, f = {rA, rB, F} with
//     rA = sA/sC, rB = sB/sC, F = zC - fmaf(rA, zA, rB*zB)):
//       v = fmaf(a, rA, fmaf(b, rB, F))          (input 2 is ONNX's B)
//   kQLinear MUL (QLinearMul, f = {(sA*sB)/sC, -, -}):
//       v = float((a - zA) * (b - zB)) * f0 + float(zC)
//   kDequantize (DequantizeLinear -> float Add / Sub / Mul -> QuantizeLinear,
//     f = {sA, sB, sC}):
//       y = (float(a - zA) * sA) op (float(b - zB) * sB);  v = nearbyint(y / sC) + zC
//   q = sat_domain(nearbyint(v)), stored q - domain.offset(), then clamped to
//   [act_min, act_max] (a fused Relu is exactly that clamp in every mode).
enum class ElementwiseFloat : uint8_t { kOff = 0, kQLinear = 1, kDequantize = 2 };

struct ElementwiseParams {
  ElementwiseMode mode = ElementwiseMode::ADD;
  // NACC_ELEMENTWISE.IN_ELEMENT_OFFSET1/2: added to each input, i.e. minus the
  // input zero point. 9-bit signed field: [-256, 255].
  int32_t input1_offset = 0;
  int32_t input2_offset = 0;
  // NACC_ELEMENTWISE.LEFT_SHIFT: [0, limits::kMaxElementwiseLeftShift]; TFLite uses 20.
  int left_shift = 20;
  // NACC_ELEMENT_QUANT1/2_MULT, _SHIFT: multiplier in [0, 2^31), shift in [-31, 0].
  int32_t input1_multiplier = 0;
  int input1_shift = 0;
  int32_t input2_multiplier = 0;
  int input2_shift = 0;
  // The output multiplier/shift are entry 0 of the QUANT_MUL / QUANT_SHIFT
  // arrays (NACC_SPEC §1 decision). Multiplier in [0, 2^31); shift in [-31, 0]
  // for ADD/SUB, [-31, 31] for MUL.
  int32_t output_multiplier = 0;
  int output_shift = 0;
  // NACC_FM_OFFSET.OUT_FM_OFFSET: 9-bit signed, [-256, 255].
  int32_t output_zero_point = 0;
  // NACC_ACT_MIN / NACC_ACT_MAX: -128 <= act_min <= act_max <= 127.
  int32_t act_min = -128;
  int32_t act_max = 127;
  // ELEMENT_FP32 / U8_DOMAIN and the 3 float32 at QUANT_MUL_DMA_ADDR (see
  // above); each finite, the scales > 0. The fixed-point fields are unused then.
  ElementwiseFloat float_mode = ElementwiseFloat::kOff;
  ValueDomain domain;
  float float_params[3] = {0.0f, 0.0f, 0.0f};
};

inline const char* output_stage_kind_name(OutputStageKind kind) {
  switch (kind) {
    case OutputStageKind::kFixedPoint: return "fixed point (QUANT_MUL/QUANT_SHIFT)";
    case OutputStageKind::kRealScale: return "real scale (QUANT_REAL_SCALE)";
    case OutputStageKind::kFloat32: return "float32 (QUANT_FP32_SCALE)";
    case OutputStageKind::kFixedPoint16x8: return "16x8 fixed point (DATA_FORM 16-bit)";
  }
  return "?";
}

}  // namespace nacc

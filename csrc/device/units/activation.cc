// The activation unit: register validation, the reference per-element loop,
// a fast path that folds the whole pointwise function (requantize + clamp, or
// LUT + clamp) into one 256-byte table and then only looks bytes up, and the
// TFLite-compatible ReLU parameters and LOGISTIC / TANH table builders.
#include "device/units/activation.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/cpu.h"
#include "common/error.h"
#include "common/limits.h"
#include "device/units/unit_checks.h"

namespace nacc {

const char* act_mode_name(ActMode mode) {
  switch (mode) {
    case ActMode::kRelu: return "RELU";
    case ActMode::kRelu6: return "RELU6";
    case ActMode::kTanh: return "TANH";
    case ActMode::kSigmoid: return "SIGMOID";
    case ActMode::kNone: return "NONE";
    case ActMode::kLut: return "LUT";
  }
  return "?";
}

namespace {

// The output of one input byte: the unit's definition.
inline int8_t activate_one(const ActivationParams& p, int32_t lo, int8_t x) {
  if (p.mode == ActMode::kLut) {
    return saturate_to_int8(p.lut[static_cast<uint8_t>(x)], p.act_min, p.act_max);
  }
  const int32_t v = p.output_zero_point + multiply_by_quantized_multiplier(
                                              x - p.input_zero_point, p.multiplier, p.shift);
  return saturate_to_int8(v, lo, p.act_max);
}

// Lower clamp bound: ReLU and ReLU6 also cut at real 0 (the output zero point).
int32_t lower_bound(const ActivationParams& p) {
  if (p.mode == ActMode::kRelu || p.mode == ActMode::kRelu6) {
    return std::max(p.act_min, p.output_zero_point);
  }
  return p.act_min;
}

// float -> int32 as x86's cvttss2si (what TFLite's static_cast compiles to):
// truncation, and INT32_MIN for NaN or out-of-range values instead of UB.
inline int32_t truncate_like_x86(float f) {
  if (!(f >= -2147483648.0f && f < 2147483648.0f)) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(f);
}

float logistic_f32(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float tanh_f32(float x) { return std::tanh(x); }

// TFLite's LUTPopulate<int8_t> arithmetic, all in float32 (see activation.h).
std::array<int8_t, 256> populate_lut(float input_scale, int32_t input_zero_point,
                                     float output_scale, int32_t output_zero_point,
                                     float (*f)(float)) {
  std::array<int8_t, 256> lut{};
  const float inverse_scale = 1.0f / output_scale;
  for (int32_t q = -128; q <= 127; ++q) {
    const float dequantized = input_scale * static_cast<float>(q - input_zero_point);
    const float transformed = f(dequantized);
    const float rescaled = std::round(transformed * inverse_scale);
    const int32_t quantized =
        truncate_like_x86(rescaled + static_cast<float>(output_zero_point));
    lut[static_cast<uint8_t>(static_cast<int8_t>(q))] =
        static_cast<int8_t>(std::min(std::max(quantized, -128), 127));
  }
  return lut;
}

// Scales and int8 zero points of the input and output tensors.
void check_tensor_quantization(const char* op, float input_scale, int32_t input_zero_point,
                               float output_scale, int32_t output_zero_point) {
  detail::check_scale(op, "input", input_scale);
  detail::check_scale(op, "output", output_scale);
  detail::check_zero_point(op, "input zero point", input_zero_point, "int8 tensor");
  detail::check_zero_point(op, "output zero point", output_zero_point, "int8 tensor");
}

}  // namespace

void validate_activation_params(const ActivationParams& p) {
  const char* op = "activation_s8";
  switch (p.mode) {
    case ActMode::kRelu:
    case ActMode::kRelu6:
    case ActMode::kNone:
      break;
    case ActMode::kLut:
      check_arg(p.lut != nullptr, op,
                ": ACT_MODE LUT (4'b0101) needs a 256-entry table (NACC_IN_ACT_DMA_ADDR)");
      break;
    case ActMode::kTanh:
    case ActMode::kSigmoid:
      throw Unsupported(str_cat(op, ": ACT_MODE ", act_mode_name(p.mode), " (",
                                static_cast<int>(p.mode),
                                ") is the hardware's q7 (ACT_INT_W) function, not modelled; "
                                "int8 TANH / LOGISTIC run through ACT_MODE LUT (5) with "
                                "lut_tflite_tanh / lut_tflite_logistic"));
    default:
      throw InvalidArgument(str_cat(op, ": ACT_MODE ", static_cast<int>(p.mode),
                                    " is not a mode (RELU 0, RELU6 1, TANH 2, SIGMOID 3, "
                                    "NONE 4, LUT 5)"));
  }
  detail::check_offset(op, "input_zero_point", p.input_zero_point,
                       "NACC_FM_OFFSET.IN_FM_OFFSET");
  detail::check_offset(op, "output_zero_point", p.output_zero_point,
                       "NACC_FM_OFFSET.OUT_FM_OFFSET");
  detail::check_multiplier(op, "multiplier", -1, p.multiplier, "QUANT_MUL[0]");
  detail::check_shift(op, "shift", -1, p.shift, limits::kMaxShift, "QUANT_SHIFT[0]");
  detail::check_act_range(op, p.act_min, p.act_max);
}

void activation_s8(const ActivationParams& params, int64_t size, const int8_t* in, int8_t* out) {
  validate_activation_params(params);
  check_arg(size >= 0, "activation_s8: size ", size, " must be >= 0");
  if (size == 0) return;
  detail::check_not_null("activation_s8", "input", in);
  detail::check_not_null("activation_s8", "output", out);
  const int32_t lo = lower_bound(params);
  if (kernel_path() == KernelPath::kReference) {
    for (int64_t i = 0; i < size; ++i) out[i] = activate_one(params, lo, in[i]);
    return;
  }
  // Fast path: any int8 -> int8 pointwise function is a 256-byte table.
  int8_t table[256];
  for (int v = 0; v < 256; ++v) {
    table[v] = activate_one(params, lo, static_cast<int8_t>(static_cast<uint8_t>(v)));
  }
  for (int64_t i = 0; i < size; ++i) out[i] = table[static_cast<uint8_t>(in[i])];
}

ActivationParams tflite_relu_params(ReluKind kind, float input_scale, int32_t input_zero_point,
                                    float output_scale, int32_t output_zero_point) {
  const char* op = "tflite_relu_params";
  check_tensor_quantization(op, input_scale, input_zero_point, output_scale, output_zero_point);
  ActivationParams p;
  p.input_zero_point = input_zero_point;
  p.output_zero_point = output_zero_point;
  // As ReluPrepare: float32 quotient, widened to double.
  const float real_multiplier = input_scale / output_scale;
  check_arg(std::isfinite(real_multiplier) && real_multiplier > 0.0f, op,
            ": input_scale / output_scale = ", real_multiplier,
            " is not a positive finite float32");
  const QuantizedMultiplier q = quantize_multiplier(static_cast<double>(real_multiplier));
  p.multiplier = q.multiplier;
  p.shift = q.shift;
  // QuantizedReluX's bounds are CalculateActivationRangeQuantized's for the
  // matching fused activation (same float32 round(bound / scale) + zp).
  FusedActivation fused = FusedActivation::kRelu;
  switch (kind) {
    case ReluKind::kRelu:
      p.mode = ActMode::kRelu;
      fused = FusedActivation::kRelu;
      break;
    case ReluKind::kRelu6:
      p.mode = ActMode::kRelu6;
      fused = FusedActivation::kRelu6;
      break;
    case ReluKind::kReluN1To1:
      p.mode = ActMode::kNone;
      fused = FusedActivation::kReluN1To1;
      break;
  }
  fused_activation_range_int8(fused, output_scale, output_zero_point, &p.act_min, &p.act_max);
  return p;
}

std::array<int8_t, 256> lut_tflite_logistic(float input_scale, int32_t input_zero_point,
                                            float output_scale, int32_t output_zero_point) {
  const char* op = "lut_tflite_logistic";
  check_tensor_quantization(op, input_scale, input_zero_point, output_scale, output_zero_point);
  check_arg(output_scale == 1.0f / 256, op, ": output scale ", output_scale,
            " must be 1/256 (TFLite int8 LOGISTIC requires it)");
  return populate_lut(input_scale, input_zero_point, output_scale, output_zero_point,
                      &logistic_f32);
}

std::array<int8_t, 256> lut_tflite_tanh(float input_scale, int32_t input_zero_point,
                                        float output_scale, int32_t output_zero_point) {
  check_tensor_quantization("lut_tflite_tanh", input_scale, input_zero_point, output_scale,
                            output_zero_point);
  return populate_lut(input_scale, input_zero_point, output_scale, output_zero_point, &tanh_f32);
}

}  // namespace nacc

// The activation unit: register validation, the reference per-element loop,
// a fast path that folds the whole pointwise function (requantize + clamp, or
// LUT + clamp) into one 256-byte table and then only looks bytes up.
#include "device/units/activation.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "arch/limits.h"
#include "arch/unit_checks.h"
#include "common/cpu.h"
#include "common/error.h"

namespace nacc {

namespace {

// The output of one input byte: the unit's definition.
inline int8_t activate_one(const ActivationParams& p, int32_t lo, int8_t x) {
  if (p.mode == ActMode::LUT) {
    return saturate_to_int8(p.lut[static_cast<uint8_t>(x)], p.act_min, p.act_max);
  }
  const int32_t v = p.output_zero_point + multiply_by_quantized_multiplier(
                                              x - p.input_zero_point, p.multiplier, p.shift);
  return saturate_to_int8(v, lo, p.act_max);
}

// Lower clamp bound: ReLU and ReLU6 also cut at real 0 (the output zero point).
int32_t lower_bound(const ActivationParams& p) {
  if (p.mode == ActMode::RELU || p.mode == ActMode::RELU6) {
    return std::max(p.act_min, p.output_zero_point);
  }
  return p.act_min;
}

}  // namespace

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

}  // namespace nacc

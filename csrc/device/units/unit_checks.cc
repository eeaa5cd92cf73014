// Argument checks shared by the MAC unit's modes (see unit_checks.h).
#include "device/units/unit_checks.h"

#include "common/error.h"
#include "common/limits.h"

namespace nacc::detail {

void check_not_null(const char* op, const char* name, const void* ptr) {
  check_arg(ptr != nullptr, op, ": ", name, " is null");
}

void check_zero_point(const char* op, const char* name, int32_t zero_point) {
  check_arg(zero_point >= -128 && zero_point <= 127, op, ": ", name, " ", zero_point,
            " out of range [-128, 127]");
}

void check_output_stage(const char* op, const OutputStage& stage, int channels) {
  check_zero_point(op, "output_zero_point", stage.output_zero_point);
  check_arg(stage.act_min >= -128 && stage.act_max <= 127 && stage.act_min <= stage.act_max, op,
            ": activation range [", stage.act_min, ", ", stage.act_max,
            "] invalid (need -128 <= act_min <= act_max <= 127, NACC_ACT_MIN/NACC_ACT_MAX)");
  check_not_null(op, "multiplier", stage.multiplier);
  check_not_null(op, "shift", stage.shift);
  for (int c = 0; c < channels; ++c) {
    check_arg(stage.multiplier[c] >= 0, op, ": multiplier[", c, "] ", stage.multiplier[c],
              " out of range [0, 2^31) (NACC_QUANT_MUL)");
    check_arg(stage.shift[c] >= -31 && stage.shift[c] <= 31, op, ": shift[", c, "] ",
              stage.shift[c], " out of range [-31, 31] (NACC_QUANT_SHIFT)");
  }
}

void check_window(const char* op, const WindowParams& w, int kernel_h, int kernel_w) {
  check_arg(kernel_h >= limits::kMinKernel && kernel_h <= limits::kMaxKernel, op, ": kernel_h ",
            kernel_h, " out of range [", limits::kMinKernel, ", ", limits::kMaxKernel,
            "] (NACC_KERNEL.K_SIZE_Y)");
  check_arg(kernel_w >= limits::kMinKernel && kernel_w <= limits::kMaxKernel, op, ": kernel_w ",
            kernel_w, " out of range [", limits::kMinKernel, ", ", limits::kMaxKernel,
            "] (NACC_KERNEL.K_SIZE_X)");
  check_arg(w.stride_h >= limits::kMinStride && w.stride_h <= limits::kMaxStride, op,
            ": stride_h ", w.stride_h, " out of range [", limits::kMinStride, ", ",
            limits::kMaxStride, "] (NACC_KERNEL.K_STRIDE_Y)");
  check_arg(w.stride_w >= limits::kMinStride && w.stride_w <= limits::kMaxStride, op,
            ": stride_w ", w.stride_w, " out of range [", limits::kMinStride, ", ",
            limits::kMaxStride, "] (NACC_KERNEL.K_STRIDE_X)");
  const struct {
    const char* name;
    int value;
    const char* field;
  } pads[] = {{"pad_top", w.pad_top, "NACC_PADDING.PAD_Y"},
              {"pad_bottom", w.pad_bottom, "NACC_PADDING.PAD_Y"},
              {"pad_left", w.pad_left, "NACC_PADDING.PAD_X"},
              {"pad_right", w.pad_right, "NACC_PADDING.PAD_X"}};
  for (const auto& p : pads) {
    check_arg(p.value >= 0 && p.value <= limits::kMaxPadding, op, ": ", p.name, " ", p.value,
              " out of range [0, ", limits::kMaxPadding, "] (", p.field, ")");
  }
}

void check_extent(const char* op, const char* name, int value) {
  check_arg(value >= 1, op, ": ", name, " ", value, " must be >= 1");
}

}  // namespace nacc::detail

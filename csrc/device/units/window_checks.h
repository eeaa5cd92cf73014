// Former home of the window units' argument checks, now in unit_checks.h
// (nacc::detail). Kept so code written against nacc::units_detail (e.g.
// csrc/bindings/bind_pool_dw.cc) still compiles; new code includes
// unit_checks.h. Drop this header once nothing includes it.
#pragma once

#include "device/units/unit_checks.h"

namespace nacc::units_detail {

using detail::check_act_range;
using detail::check_avg_pool_window;
using detail::check_feature_map;
using detail::check_output_shape;
using detail::check_zero_point;
using detail::window_output_shape;

// detail::check_window with this header's argument order.
inline void check_window_geometry(const char* op, int kernel_h, int kernel_w,
                                  const WindowParams& w) {
  detail::check_window(op, w, kernel_h, kernel_w);
}

}  // namespace nacc::units_detail

// Bindings of the depthwise-convolution and pooling units:
// nacc._core.depthwise_conv2d, max_pool, avg_pool on numpy NHWC int8 arrays.
// Shapes are checked here as far as numpy needs; every other limit is the
// unit's own check (ValueError naming the register). The GIL is released
// while a unit computes.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <array>
#include <limits>
#include <optional>
#include <utility>

#include "arch/unit_checks.h"
#include "bindings/binding.h"
#include "common/shape.h"
#include "device/units/conv.h"
#include "device/units/pool.h"

namespace py = pybind11;

namespace {

using Pair = std::pair<int, int>;
using Padding = std::array<int, 4>;  // (top, bottom, left, right)

// The [N, H, W, C] shape of a 4-D array as a Shape4 (dims must fit an int).
template <typename T>
nacc::Shape4 shape4_of(const py::array_t<T, py::array::c_style>& a, const char* name) {
  for (int i = 0; i < 4; ++i) {
    if (a.shape(i) > std::numeric_limits<int>::max()) {
      throw py::value_error(nacc::str_cat(name, ": dimension ", i, " (", a.shape(i),
                                          ") is too large"));
    }
  }
  return {static_cast<int>(a.shape(0)), static_cast<int>(a.shape(1)),
          static_cast<int>(a.shape(2)), static_cast<int>(a.shape(3))};
}

// A per-output-channel int32 vector of exactly `n` entries.
py::array_t<int32_t, py::array::c_style> channel_vector(const py::array& arr, const char* name,
                                                        int64_t n) {
  auto v = nacc::bindings::checked_array<int32_t>(arr, name, 1);
  if (v.shape(0) != n) {
    throw py::value_error(nacc::str_cat(name, ": expected ", n, " entries (output channels), got ",
                                        v.shape(0)));
  }
  return v;
}

using nacc::bindings::window_of;

// Output shape of a window op; geometry is checked first (the extent divides
// by the stride). The unit re-checks everything.
nacc::Shape4 window_output_shape(const char* op, const nacc::Shape4& in, int kernel_h,
                                 int kernel_w, const nacc::WindowParams& w, int out_c) {
  nacc::detail::check_feature_map(op, "input", in);
  nacc::detail::check_window(op, w, kernel_h, kernel_w);
  return nacc::detail::window_output_shape(op, in, kernel_h, kernel_w, w, out_c);
}

py::array_t<int8_t> new_output(const nacc::Shape4& s) {
  return py::array_t<int8_t>(std::vector<py::ssize_t>{s.n, s.h, s.w, s.c});
}

py::array_t<int8_t> pool(bool average, const py::array& input_arr, Pair kernel, Pair stride,
                         const Padding& padding, int32_t act_min, int32_t act_max) {
  const char* op = average ? "avg_pool_s8" : "max_pool_s8";
  auto input = nacc::bindings::checked_array<int8_t>(input_arr, "input", 4);
  const nacc::Shape4 in_shape = shape4_of(input, "input");
  nacc::PoolParams params;
  params.window = window_of(stride, padding);
  params.kernel_h = kernel.first;
  params.kernel_w = kernel.second;
  params.act_min = act_min;
  params.act_max = act_max;
  if (average) {
    nacc::detail::check_avg_pool_window(op, kernel.first, kernel.second, params.window);
  }
  const nacc::Shape4 out_shape =
      window_output_shape(op, in_shape, kernel.first, kernel.second, params.window, in_shape.c);
  auto output = new_output(out_shape);
  const int8_t* in_ptr = input.data();
  int8_t* out_ptr = output.mutable_data();
  {
    py::gil_scoped_release release;
    if (average) {
      nacc::avg_pool_s8(params, in_shape, in_ptr, out_shape, out_ptr);
    } else {
      nacc::max_pool_s8(params, in_shape, in_ptr, out_shape, out_ptr);
    }
  }
  return output;
}

}  // namespace

NACC_BINDINGS(pool_dw) {
  m.def(
      "depthwise_conv2d",
      [](const py::array& input_arr, const py::array& filter_arr,
         const std::optional<py::array>& bias_arr, const py::array& multiplier_arr,
         const py::array& shift_arr, int depth_multiplier, Pair stride, const Padding& padding,
         int32_t input_zero_point, int32_t output_zero_point, int32_t act_min, int32_t act_max) {
        auto input = nacc::bindings::checked_array<int8_t>(input_arr, "input", 4);
        auto filter = nacc::bindings::checked_array<int8_t>(filter_arr, "filter", 4);
        const nacc::Shape4 in_shape = shape4_of(input, "input");
        const nacc::Shape4 filter_shape = shape4_of(filter, "filter");
        const int64_t out_c = filter_shape.c;
        auto multiplier = channel_vector(multiplier_arr, "multiplier", out_c);
        auto shift = channel_vector(shift_arr, "shift", out_c);
        std::optional<py::array_t<int32_t, py::array::c_style>> bias;
        if (bias_arr.has_value()) bias = channel_vector(*bias_arr, "bias", out_c);

        const nacc::WindowParams window = window_of(stride, padding);
        const nacc::Shape4 out_shape = window_output_shape(
            "depthwise_conv2d_s8", in_shape, filter_shape.h, filter_shape.w, window,
            filter_shape.c);
        auto output = new_output(out_shape);

        nacc::OutputStage stage;
        stage.multiplier = multiplier.data();
        stage.shift = shift.data();
        stage.output_zero_point = output_zero_point;
        stage.act_min = act_min;
        stage.act_max = act_max;
        const int8_t* in_ptr = input.data();
        const int8_t* filter_ptr = filter.data();
        const int32_t* bias_ptr = bias.has_value() ? bias->data() : nullptr;
        int8_t* out_ptr = output.mutable_data();
        {
          py::gil_scoped_release release;
          nacc::depthwise_conv2d_s8(window, depth_multiplier, input_zero_point, stage, in_shape,
                                    in_ptr, filter_shape, filter_ptr, bias_ptr, out_shape,
                                    out_ptr);
        }
        return output;
      },
      py::arg("input"), py::arg("filter"), py::arg("bias"), py::arg("multiplier"),
      py::arg("shift"), py::kw_only(), py::arg("depth_multiplier") = 1,
      py::arg("stride") = Pair{1, 1}, py::arg("padding") = Padding{0, 0, 0, 0},
      py::arg("input_zero_point") = 0, py::arg("output_zero_point") = 0,
      py::arg("act_min") = -128, py::arg("act_max") = 127,
      "Depthwise convolution (TFLite reference DepthwiseConvPerChannel semantics).\n"
      "input int8 [1,H,W,C]; filter int8 [1,KH,KW,C*depth_multiplier]; bias int32 [C*M] or None;\n"
      "multiplier, shift int32 [C*M] (TFLite QuantizeMultiplier form); stride (h, w);\n"
      "padding (top, bottom, left, right). Output channel oc = ic*M + m. Returns int8\n"
      "[1,OH,OW,C*M].");

  m.def(
      "max_pool",
      [](const py::array& input, Pair kernel, Pair stride, const Padding& padding, int32_t act_min,
         int32_t act_max) { return pool(false, input, kernel, stride, padding, act_min, act_max); },
      py::arg("input"), py::kw_only(), py::arg("kernel"), py::arg("stride") = Pair{1, 1},
      py::arg("padding") = Padding{0, 0, 0, 0}, py::arg("act_min") = -128,
      py::arg("act_max") = 127,
      "Max pool on int8 [1,H,W,C] (TFLite reference MaxPool): padded positions are ignored;\n"
      "kernel (kh, kw) in 1..15, stride (h, w) in 1..3, padding (top, bottom, left, right) in\n"
      "0..5; result clamped to [act_min, act_max].");

  m.def(
      "avg_pool",
      [](const py::array& input, Pair kernel, Pair stride, const Padding& padding, int32_t act_min,
         int32_t act_max) { return pool(true, input, kernel, stride, padding, act_min, act_max); },
      py::arg("input"), py::kw_only(), py::arg("kernel") = Pair{2, 2},
      py::arg("stride") = Pair{2, 2}, py::arg("padding") = Padding{0, 0, 0, 0},
      py::arg("act_min") = -128, py::arg("act_max") = 127,
      "Average pool 2x2 stride 2 on int8 [1,H,W,C] (TFLite reference AveragePool): the sum\n"
      "of the in-bounds positions divided by their count, rounded half away from zero;\n"
      "result clamped to [act_min, act_max].");
}

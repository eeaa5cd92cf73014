// Bindings of the MAC unit's one-row float32 modes (device/units/mac_fp32_m1.h):
// nacc._core.depthwise_conv2d_mac_fp32 and fully_connected_mac_fp32 on numpy arrays.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <string>
#include <utility>

#include "arch/unit_checks.h"
#include "bindings/binding.h"
#include "common/shape.h"
#include "device/units/mac_fp32_m1.h"

namespace py = pybind11;

namespace {

nacc::Fp32SumOrder order_of(const std::string& name) {
  if (name == "groups4") return nacc::Fp32SumOrder::kGroups4;
  if (name == "lanes8") return nacc::Fp32SumOrder::kLanes8;
  if (name == "fma_blocks") return nacc::Fp32SumOrder::kFmaBlocks;
  throw py::value_error("order: '" + name + "' is not groups4, lanes8 or fma_blocks");
}

// [channels, 4] float32 {s_x, s_w, bias, s_y}.
py::array_t<float, py::array::c_style> entries_of(const py::array& arr, int64_t channels) {
  auto e = nacc::bindings::checked_array<float>(arr, "entries", 2);
  if (e.shape(0) != channels || e.shape(1) != 4) {
    throw py::value_error(nacc::str_cat("entries: expected [", channels, ", 4], got [",
                                        e.shape(0), ", ", e.shape(1), "]"));
  }
  return e;
}

nacc::MacFp32M1Params params_of(const std::string& order, int32_t input_zero_point,
                                int32_t output_zero_point, int32_t act_min, int32_t act_max,
                                const float* entries) {
  nacc::MacFp32M1Params p;
  p.order = order_of(order);
  p.input_zero_point = input_zero_point;
  p.output_zero_point = output_zero_point;
  p.act_min = act_min;
  p.act_max = act_max;
  p.entries = entries;
  return p;
}

}  // namespace

NACC_BINDINGS(mac_fp32_m1) {
  m.def(
      "depthwise_conv2d_mac_fp32",
      [](const py::array& input_arr, const py::array& filter_arr, const py::array& entries_arr,
         int depth_multiplier, std::pair<int, int> stride, std::array<int, 4> padding,
         int32_t input_zero_point, int32_t output_zero_point, int32_t act_min, int32_t act_max,
         const std::string& order, int kblock_log2) {
        auto input = nacc::bindings::checked_array<int8_t>(input_arr, "input", 4);
        auto filter = nacc::bindings::checked_array<int8_t>(filter_arr, "filter", 4);
        const nacc::Shape4 in_shape{int(input.shape(0)), int(input.shape(1)), int(input.shape(2)),
                                    int(input.shape(3))};
        const nacc::Shape4 f_shape{int(filter.shape(0)), int(filter.shape(1)),
                                   int(filter.shape(2)), int(filter.shape(3))};
        auto entries = entries_of(entries_arr, f_shape.c);
        const nacc::WindowParams w = nacc::bindings::window_of(stride, padding);
        const char* op = "depthwise_conv2d_s8_mac_fp32";
        nacc::detail::check_feature_map(op, "input", in_shape);
        nacc::detail::check_window(op, w, f_shape.h, f_shape.w);
        const nacc::Shape4 out_shape =
            nacc::detail::window_output_shape(op, in_shape, f_shape.h, f_shape.w, w, f_shape.c);
        py::array_t<int8_t> output({py::ssize_t(out_shape.n), py::ssize_t(out_shape.h),
                                    py::ssize_t(out_shape.w), py::ssize_t(out_shape.c)});
        nacc::MacFp32M1Params p = params_of(order, input_zero_point, output_zero_point, act_min,
                                            act_max, entries.data());
        p.kblock_log2 = kblock_log2;
        const int8_t* in_ptr = input.data();
        const int8_t* f_ptr = filter.data();
        int8_t* out_ptr = output.mutable_data();
        {
          py::gil_scoped_release release;
          const auto prepared = nacc::prepare_depthwise_mac_fp32(f_shape, f_ptr, p.entries);
          nacc::depthwise_conv2d_s8_mac_fp32(w, depth_multiplier, p, in_shape, in_ptr, f_shape,
                                             f_ptr, out_shape, out_ptr, prepared.get());
        }
        return output;
      },
      py::arg("input"), py::arg("filter"), py::arg("entries"), py::kw_only(),
      py::arg("depth_multiplier") = 1, py::arg("stride") = std::pair<int, int>{1, 1},
      py::arg("padding") = std::array<int, 4>{0, 0, 0, 0}, py::arg("input_zero_point") = 0,
      py::arg("output_zero_point") = 0, py::arg("act_min") = -128, py::arg("act_max") = 127,
      py::arg("order") = "groups4", py::arg("kblock_log2") = 0,
      "ONNX Runtime's unfused float32 depthwise Conv (MLAS; device/units/mac_fp32_m1.h).\n"
      "input int8 [1,H,W,C]; filter int8 [1,KH,KW,C*M] (zero point 0); entries float32\n"
      "[C*M, 4] {s_x, s_w, bias, s_y}; order 'groups4' (depth multiplier 1: MLAS's M = 1\n"
      "kernel) or 'fma_blocks' (2^kblock_log2 taps per fused multiply-add block); padding\n"
      "(top, bottom, left, right). Returns int8 [1,OH,OW,C*M].");

  m.def(
      "fully_connected_mac_fp32",
      [](const py::array& input_arr, const py::array& weights_arr, const py::array& entries_arr,
         int32_t input_zero_point, int32_t output_zero_point, int32_t act_min, int32_t act_max,
         const std::string& order, int64_t n0, int64_t n_total) {
        auto input = nacc::bindings::checked_array<int8_t>(input_arr, "input", 2);
        auto weights = nacc::bindings::checked_array<int8_t>(weights_arr, "weights", 2);
        if (weights.shape(1) != input.shape(1)) {
          throw py::value_error(nacc::str_cat("weights: [N, K] with K = ", input.shape(1),
                                              " expected, got [", weights.shape(0), ", ",
                                              weights.shape(1), "]"));
        }
        const int m_rows = int(input.shape(0)), k = int(input.shape(1)), n = int(weights.shape(0));
        auto entries = entries_of(entries_arr, n);
        py::array_t<int8_t> output({py::ssize_t(m_rows), py::ssize_t(n)});
        nacc::MacFp32M1Params p = params_of(order, input_zero_point, output_zero_point, act_min,
                                            act_max, entries.data());
        const int64_t total = n_total > 0 ? n_total : n0 + n;  // the layer's outputs
        p.n0 = n0;
        p.split = total - total % 4;
        p.tail = int(total % 4);
        const int8_t* in_ptr = input.data();
        const int8_t* w_ptr = weights.data();
        int8_t* out_ptr = output.mutable_data();
        {
          py::gil_scoped_release release;
          const auto prepared = n >= 1 && k >= 1 ? nacc::prepare_fully_connected_mac_fp32(
                                                       k, n, w_ptr, p.entries, p.order)
                                                 : nullptr;
          nacc::fully_connected_s8_mac_fp32(p, m_rows, k, n, in_ptr, w_ptr, out_ptr,
                                            prepared.get());
        }
        return output;
      },
      py::arg("input"), py::arg("weights"), py::arg("entries"), py::kw_only(),
      py::arg("input_zero_point") = 0, py::arg("output_zero_point") = 0,
      py::arg("act_min") = -128, py::arg("act_max") = 127, py::arg("order") = "groups4",
      py::arg("n0") = 0, py::arg("n_total") = 0,
      "ONNX Runtime's unfused float32 Gemm / MatMul with one row per input row (MLAS's M = 1\n"
      "kernels; device/units/mac_fp32_m1.h). input int8 [M,K]; weights int8 [N,K] (zero\n"
      "point 0); entries float32 [N, 4] {s_x, s_w, bias, s_y}; order 'groups4' (B [K, N]: the\n"
      "bias C's initial value) or 'lanes8' (Gemm transB = 1; outputs [n0, n0 + N) of n_total,\n"
      "0 = N). Returns int8 [M,N].");
}

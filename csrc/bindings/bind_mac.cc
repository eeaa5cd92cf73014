// Bindings of the MAC unit's convolution, fully-connected and matrix modes:
// nacc._core.conv2d, fully_connected and matmul on numpy int8 arrays.
// Arguments are checked here (dtype -> TypeError, shape -> ValueError) and in
// the units (ranges -> ValueError); the GIL is released while computing.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <array>
#include <optional>
#include <vector>

#include "bindings/binding.h"
#include "common/error.h"
#include "device/units/conv.h"
#include "device/units/fully_connected.h"
#include "device/units/prepared.h"

namespace py = pybind11;
using nacc::bindings::checked_array;

namespace {

template <typename T>
using Array = py::array_t<T, py::array::c_style>;

// A per-channel int32/float64 vector of exactly `n` entries.
template <typename T>
Array<T> channel_vector(const py::array& arr, const char* op, const char* name, int n) {
  auto a = checked_array<T>(arr, name, 1);
  if (a.shape(0) != n) {
    throw py::value_error(nacc::str_cat(op, ": ", name, " has ", a.shape(0), " entries, expected ",
                                        n, " (one per output channel)"));
  }
  return a;
}

std::optional<Array<int32_t>> optional_bias(const std::optional<py::array>& bias, const char* op,
                                            int n) {
  if (!bias) return std::nullopt;
  return channel_vector<int32_t>(*bias, op, "bias", n);
}

int checked_int(py::ssize_t v, const char* op, const char* name) {
  if (v > 0x7fffffff) throw py::value_error(nacc::str_cat(op, ": ", name, " ", v, " too large"));
  return static_cast<int>(v);
}

py::array_t<int8_t> conv2d(const py::array& input_arr, const py::array& filter_arr,
                           const std::optional<py::array>& bias_arr, const py::array& mult_arr,
                           const py::array& shift_arr, std::array<int, 2> stride,
                           std::array<int, 4> padding, int32_t input_zero_point,
                           int32_t output_zero_point, int32_t act_min, int32_t act_max) {
  constexpr const char* kOp = "conv2d";
  auto input = checked_array<int8_t>(input_arr, "input", 4);
  auto filter = checked_array<int8_t>(filter_arr, "filter", 4);
  const nacc::Shape4 in_shape{checked_int(input.shape(0), kOp, "batch"),
                              checked_int(input.shape(1), kOp, "height"),
                              checked_int(input.shape(2), kOp, "width"),
                              checked_int(input.shape(3), kOp, "channels")};
  const nacc::Shape4 f_shape{checked_int(filter.shape(0), kOp, "output channels"),
                             checked_int(filter.shape(1), kOp, "kernel height"),
                             checked_int(filter.shape(2), kOp, "kernel width"),
                             checked_int(filter.shape(3), kOp, "filter input channels")};
  const int c_out = f_shape.n;
  auto bias = optional_bias(bias_arr, kOp, c_out);
  auto mult = channel_vector<int32_t>(mult_arr, kOp, "multiplier", c_out);
  auto shift = channel_vector<int32_t>(shift_arr, kOp, "shift", c_out);

  nacc::WindowParams window;
  window.stride_h = stride[0];
  window.stride_w = stride[1];
  window.pad_top = padding[0];
  window.pad_bottom = padding[1];
  window.pad_left = padding[2];
  window.pad_right = padding[3];
  nacc::OutputStage os;
  os.multiplier = mult.data();
  os.shift = shift.data();
  os.output_zero_point = output_zero_point;
  os.act_min = act_min;
  os.act_max = act_max;

  // Output extent from the geometry; invalid geometry raises here (ValueError).
  // Only positive sizes go to window_output_size: conv2d_s8 reports the rest.
  int out_h = 1, out_w = 1;
  if (in_shape.h >= 1 && f_shape.h >= 1 && window.stride_h >= 1 && window.pad_top >= 0 &&
      window.pad_bottom >= 0) {
    out_h = nacc::window_output_size(in_shape.h, f_shape.h, window.stride_h, window.pad_top,
                                     window.pad_bottom);
  }
  if (in_shape.w >= 1 && f_shape.w >= 1 && window.stride_w >= 1 && window.pad_left >= 0 &&
      window.pad_right >= 0) {
    out_w = nacc::window_output_size(in_shape.w, f_shape.w, window.stride_w, window.pad_left,
                                     window.pad_right);
  }
  const nacc::Shape4 out_shape{1, out_h, out_w, c_out};
  py::array_t<int8_t> out({py::ssize_t{1}, py::ssize_t{out_h}, py::ssize_t{out_w},
                           py::ssize_t{c_out}});
  const int8_t* in_ptr = input.data();
  const int8_t* f_ptr = filter.data();
  const int32_t* b_ptr = bias ? bias->data() : nullptr;
  int8_t* out_ptr = out.mutable_data();
  {
    py::gil_scoped_release release;
    nacc::conv2d_s8(window, input_zero_point, os, in_shape, in_ptr, f_shape, f_ptr, b_ptr,
                    out_shape, out_ptr);
  }
  return out;
}

py::array_t<int8_t> fully_connected(const py::array& input_arr, const py::array& weights_arr,
                                    const std::optional<py::array>& bias_arr,
                                    const std::optional<py::array>& mult_arr,
                                    const std::optional<py::array>& shift_arr,
                                    const std::optional<py::array>& scale_arr,
                                    int32_t input_zero_point, int32_t output_zero_point,
                                    int32_t act_min, int32_t act_max, bool prepacked) {
  constexpr const char* kOp = "fully_connected";
  auto input = checked_array<int8_t>(input_arr, "input", 2);
  auto weights = checked_array<int8_t>(weights_arr, "weights", 2);
  const int m = checked_int(input.shape(0), kOp, "rows");
  const int k = checked_int(input.shape(1), kOp, "input depth");
  const int n = checked_int(weights.shape(0), kOp, "output units");
  if (weights.shape(1) != k) {
    throw py::value_error(nacc::str_cat(kOp, ": weights [", weights.shape(0), ", ",
                                        weights.shape(1), "] do not match input depth ", k,
                                        " (expected [N, ", k, "])"));
  }
  auto bias = optional_bias(bias_arr, kOp, n);
  const bool have_mult = mult_arr.has_value() || shift_arr.has_value();
  if (have_mult == scale_arr.has_value() || mult_arr.has_value() != shift_arr.has_value()) {
    throw py::value_error(nacc::str_cat(
        kOp, ": give either multiplier and shift (int32 [N]) or effective_scale (float64 [N])"));
  }
  std::optional<Array<int32_t>> mult, shift;
  std::optional<Array<double>> scale;
  if (have_mult) {
    mult = channel_vector<int32_t>(*mult_arr, kOp, "multiplier", n);
    shift = channel_vector<int32_t>(*shift_arr, kOp, "shift", n);
  } else {
    scale = channel_vector<double>(*scale_arr, kOp, "effective_scale", n);
  }
  nacc::OutputStage os;
  os.multiplier = mult ? mult->data() : nullptr;
  os.shift = shift ? shift->data() : nullptr;
  if (scale) {
    os.kind = nacc::OutputStageKind::kRealScale;
    os.real_scale = scale->data();
  }
  os.output_zero_point = output_zero_point;
  os.act_min = act_min;
  os.act_max = act_max;
  py::array_t<int8_t> out({py::ssize_t{m}, py::ssize_t{n}});
  const int8_t* in_ptr = input.data();
  const int8_t* w_ptr = weights.data();
  const int32_t* b_ptr = bias ? bias->data() : nullptr;
  int8_t* out_ptr = out.mutable_data();
  {
    py::gil_scoped_release release;
    // prepacked: the weights packed once beforehand, as the device's plan does.
    const auto prepared = prepacked ? nacc::prepare_fully_connected_s8(k, n, w_ptr) : nullptr;
    nacc::fully_connected_s8(input_zero_point, os, m, k, n, in_ptr, w_ptr, b_ptr, out_ptr,
                             prepared.get());
  }
  return out;
}

py::array_t<int8_t> matmul(const py::array& a_arr, const py::array& b_arr,
                           const py::array& mult_arr, const py::array& shift_arr,
                           int32_t a_zero_point, int32_t b_zero_point, int32_t output_zero_point,
                           int32_t act_min, int32_t act_max) {
  constexpr const char* kOp = "matmul";
  auto a = checked_array<int8_t>(a_arr, "a", 2);
  auto b = checked_array<int8_t>(b_arr, "b", 2);
  const int m = checked_int(a.shape(0), kOp, "rows of a");
  const int k = checked_int(a.shape(1), kOp, "columns of a");
  const int n = checked_int(b.shape(1), kOp, "columns of b");
  if (b.shape(0) != k) {
    throw py::value_error(nacc::str_cat(kOp, ": a is [", m, ", ", k, "] but b is [", b.shape(0),
                                        ", ", b.shape(1), "] (expected [", k, ", N])"));
  }
  // Per-tensor callers may pass one multiplier/shift; repeat it over N.
  auto mult_in = checked_array<int32_t>(mult_arr, "multiplier", 1);
  auto shift_in = checked_array<int32_t>(shift_arr, "shift", 1);
  auto expand = [&](const Array<int32_t>& v, const char* name) {
    if (v.shape(0) != 1 && v.shape(0) != n) {
      throw py::value_error(nacc::str_cat(kOp, ": ", name, " has ", v.shape(0),
                                          " entries, expected 1 or ", n));
    }
    std::vector<int32_t> out(n);
    for (int i = 0; i < n; ++i) out[i] = v.data()[v.shape(0) == 1 ? 0 : i];
    return out;
  };
  const std::vector<int32_t> mult = expand(mult_in, "multiplier");
  const std::vector<int32_t> shift = expand(shift_in, "shift");
  nacc::OutputStage os;
  os.multiplier = mult.data();
  os.shift = shift.data();
  os.output_zero_point = output_zero_point;
  os.act_min = act_min;
  os.act_max = act_max;
  py::array_t<int8_t> out({py::ssize_t{m}, py::ssize_t{n}});
  const int8_t* a_ptr = a.data();
  const int8_t* b_ptr = b.data();
  int8_t* out_ptr = out.mutable_data();
  {
    py::gil_scoped_release release;
    nacc::matmul_s8(a_zero_point, b_zero_point, os, m, k, n, a_ptr, b_ptr, out_ptr);
  }
  return out;
}

}  // namespace

NACC_BINDINGS(mac) {
  m.def("conv2d", &conv2d, py::arg("input"), py::arg("filter"), py::arg("bias"),
        py::arg("multiplier"), py::arg("shift"), py::kw_only(),
        py::arg("stride") = std::array<int, 2>{1, 1},
        py::arg("padding") = std::array<int, 4>{0, 0, 0, 0}, py::arg("input_zero_point") = 0,
        py::arg("output_zero_point") = 0, py::arg("act_min") = -128, py::arg("act_max") = 127,
        "MAC unit 2-D convolution, bit-exact to TFLite reference CONV_2D int8 (per-channel).\n\n"
        "input int8 [1, H, W, Cin]; filter int8 [Cout, KH, KW, Cin] (zero point 0); bias int32 "
        "[Cout] or None; multiplier, shift int32 [Cout]; stride (sh, sw) in 1..3; padding "
        "(top, bottom, left, right) each 0..5; kernel 1..15 per axis. Returns int8 "
        "[1, OH, OW, Cout].");
  m.def("fully_connected", &fully_connected, py::arg("input"), py::arg("weights"),
        py::arg("bias"), py::arg("multiplier") = py::none(), py::arg("shift") = py::none(),
        py::kw_only(), py::arg("effective_scale") = py::none(), py::arg("input_zero_point") = 0,
        py::arg("output_zero_point") = 0, py::arg("act_min") = -128, py::arg("act_max") = 127,
        py::arg("prepacked") = false,
        "MAC unit fully connected: input int8 [M, K], weights int8 [N, K] (zero point 0), bias "
        "int32 [N] or None. Requantization by multiplier/shift int32 [N] "
        "(MultiplyByQuantizedMultiplier), or by effective_scale float64 [N] = "
        "in_scale * w_scale[n] / out_scale in double, which is what TFLite's reference "
        "FULLY_CONNECTED does (bit-exact to it). prepacked: pack the weights first, as the "
        "device's execution plan does (its kernels differ for few rows). Returns int8 [M, N].");
  m.def("matmul", &matmul, py::arg("a"), py::arg("b"), py::arg("multiplier"), py::arg("shift"),
        py::kw_only(), py::arg("a_zero_point") = 0, py::arg("b_zero_point") = 0,
        py::arg("output_zero_point") = 0, py::arg("act_min") = -128, py::arg("act_max") = 127,
        "MAC unit matrix multiply, bit-exact to TFLite reference BATCH_MATMUL int8 for one "
        "batch: a int8 [M, K], b int8 [K, N], multiplier/shift int32 [1] or [N]. "
        "Returns int8 [M, N].");
}

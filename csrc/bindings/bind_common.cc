// Bindings of the shared arithmetic: quantization helpers and the kernel-path
// switch (a test-only switch forcing the plain reference loops).
#include <pybind11/numpy.h>

#include "bindings/binding.h"
#include "common/cpu.h"
#include "quant/tflite.h"

namespace py = pybind11;

NACC_BINDINGS(common) {
  m.def(
      "set_kernel_path",
      [](const std::string& path) {
        if (path == "auto") {
          nacc::set_kernel_path(nacc::KernelPath::kAuto);
        } else if (path == "reference") {
          nacc::set_kernel_path(nacc::KernelPath::kReference);
        } else {
          throw py::value_error("set_kernel_path: expected 'auto' or 'reference', got '" + path + "'");
        }
      },
      py::arg("path"),
      "Select the units' kernels: 'auto' (AVX2 where the CPU has it) or 'reference' "
      "(the plain loops; test-only).");
  m.def(
      "kernel_path",
      [] { return nacc::kernel_path() == nacc::KernelPath::kAuto ? "auto" : "reference"; },
      "The current kernel path, 'auto' or 'reference'.");
  m.def("cpu_has_avx2", &nacc::cpu_has_avx2, "True when this CPU supports AVX2.");
  m.def("uses_avx2", &nacc::use_avx2, "True when the units currently take their AVX2 path.");

  m.def(
      "quantize_multiplier",
      [](double real) {
        auto q = nacc::quantize_multiplier(real);
        return py::make_tuple(q.multiplier, q.shift);
      },
      py::arg("real_multiplier"),
      "TFLite QuantizeMultiplier: returns (multiplier, shift) with real = m * 2^(shift-31).");
  m.def(
      "quantize_multiplier_smaller_than_one",
      [](double real) {
        auto q = nacc::quantize_multiplier_smaller_than_one(real);
        return py::make_tuple(q.multiplier, q.shift);
      },
      py::arg("real_multiplier"));
  m.def(
      "quantize_multiplier_greater_than_one",
      [](double real) {
        auto q = nacc::quantize_multiplier_greater_than_one(real);
        return py::make_tuple(q.multiplier, q.shift);
      },
      py::arg("real_multiplier"));
  m.def(
      "multiply_by_quantized_multiplier",
      [](const py::array& x, int32_t multiplier, int shift) {
        if (shift < -31 || shift > 31) {
          throw py::value_error("multiply_by_quantized_multiplier: shift must be in [-31, 31]");
        }
        auto in = nacc::bindings::checked_array<int32_t>(x, "x");
        py::array_t<int32_t> out(in.request().shape);
        const int32_t* src = in.data();
        int32_t* dst = out.mutable_data();
        for (py::ssize_t i = 0; i < in.size(); ++i) {
          dst[i] = nacc::multiply_by_quantized_multiplier(src[i], multiplier, shift);
        }
        return out;
      },
      py::arg("x"), py::arg("multiplier"), py::arg("shift"),
      "TFLite MultiplyByQuantizedMultiplier applied elementwise to an int32 array.");
  m.def(
      "fused_activation_range",
      [](const std::string& act, double scale, int32_t zero_point) {
        nacc::FusedActivation a;
        if (act == "NONE") a = nacc::FusedActivation::kNone;
        else if (act == "RELU") a = nacc::FusedActivation::kRelu;
        else if (act == "RELU6") a = nacc::FusedActivation::kRelu6;
        else if (act == "RELU_N1_TO_1") a = nacc::FusedActivation::kReluN1To1;
        else throw py::value_error("fused_activation_range: unknown activation '" + act +
                                   "' (NONE, RELU, RELU6, RELU_N1_TO_1)");
        int32_t lo = 0, hi = 0;
        nacc::fused_activation_range_int8(a, scale, zero_point, &lo, &hi);
        return py::make_tuple(lo, hi);
      },
      py::arg("activation"), py::arg("output_scale"), py::arg("output_zero_point"),
      "TFLite CalculateActivationRangeQuantized for an int8 output: (act_min, act_max).");
}

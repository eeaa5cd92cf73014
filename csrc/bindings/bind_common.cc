// Bindings of the shared arithmetic: quantization helpers and the kernel-path
// switch (test and benchmark switch forcing the reference loops or one ISA path).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings/binding.h"
#include "common/cpu.h"
#include "quant/tflite.h"

namespace py = pybind11;

NACC_BINDINGS(common) {
  m.def(
      "set_kernel_path",
      [](const std::string& name) {
        nacc::KernelPath path;
        if (!nacc::parse_kernel_path(name, &path)) {
          std::string known = "auto";
          for (nacc::KernelPath p : nacc::available_kernel_paths()) {
            known += std::string(", ") + nacc::kernel_path_name(p);
          }
          throw py::value_error("set_kernel_path: unknown kernel path '" + name +
                                "'; available on this CPU: " + known);
        }
        nacc::set_kernel_path(path);  // InvalidArgument (ValueError) when unavailable
      },
      py::arg("path"),
      "Select the units' kernels in nacc._core (process-wide): 'auto' (the best path this "
      "CPU has), 'reference' (the plain loops) or an ISA path from kernel_paths(). Raises "
      "ValueError for an unknown or unavailable path, naming the available ones. The TFLite "
      "delegate and the ORT EP libraries have their own copies of the switch (the C function "
      "nacc_set_kernel_path; nacc.host_bench.set_kernel_path sets all of them).");
  m.def(
      "kernel_path", [] { return std::string(nacc::kernel_path_name(nacc::kernel_path())); },
      "The current selection: 'auto', 'reference' or an ISA path name.");
  m.def(
      "kernel_paths",
      [] {
        std::vector<std::string> names;
        for (nacc::KernelPath p : nacc::available_kernel_paths()) {
          names.emplace_back(nacc::kernel_path_name(p));
        }
        return names;
      },
      "The kernel paths this CPU and OS can run, in ascending order: 'reference' first, then "
      "those of 'avx2', 'avx_vnni', 'avx512_vnni', 'amx' that are available (AMX only when "
      "Linux granted the tile-data permission).");
  m.def(
      "active_kernel_isa",
      [] { return std::string(nacc::kernel_path_name(nacc::active_kernel_path())); },
      "The path in effect now: kernel_path() with 'auto' resolved to the best available path.");
  m.def("cpu_has_avx2", &nacc::cpu_has_avx2,
        "True when this CPU supports AVX2 and FMA with OS support (independent of the switch).");
  m.def("uses_avx2", &nacc::use_avx2,
        "True when the units currently may take their AVX2 path (every ISA path but 'reference').");
  m.def(
      "uses_isa",
      [](const std::string& name) {
        if (name == "avx2") return nacc::use_avx2();
        if (name == "avx_vnni") return nacc::use_avx_vnni();
        if (name == "avx512_vnni") return nacc::use_avx512_vnni();
        if (name == "amx") return nacc::use_amx();
        throw py::value_error("uses_isa: expected 'avx2', 'avx_vnni', 'avx512_vnni' or 'amx', got '" +
                              name + "'");
      },
      py::arg("isa"),
      "True when the units currently may use that ISA's code: the active path is it or a higher "
      "one, and the CPU has it.");
  m.def(
      "cpu_features",
      [] {
        py::dict d;
        for (const auto& [name, on] : nacc::cpu_feature_list()) d[name] = on;
        return d;
      },
      "CPUID / XGETBV features as detected by the kernel-path switch (os_*: the OS saves that "
      "register state; amx_permitted: Linux granted ARCH_REQ_XCOMP_PERM for XTILEDATA).");
  m.def("kernel_path_json", &nacc::kernel_path_json,
        "The selection, active and best path, available paths and features as JSON (the same "
        "text as the libraries' nacc_kernel_path_json).");

  m.def(
      "quantize_multiplier",
      [](double real) {
        auto q = nacc::quantize_multiplier(real);
        return py::make_tuple(q.multiplier, q.shift);
      },
      py::arg("real_multiplier"),
      "TFLite QuantizeMultiplier: returns (multiplier, shift) with real = m * 2^(shift-31).");
  m.def(
      "tflite_average_pool_division",
      [](int64_t n) {
        auto q = nacc::tflite_average_pool_division(n);
        return py::make_tuple(q.multiplier, q.shift);
      },
      py::arg("cells"),
      "AVERAGE_POOL_2D's exact division by `cells` on the output stage: (multiplier, shift), "
      "checked against TFLite's rounding for every sum of `cells` int8 values (ValueError if "
      "one differs or cells is outside [1, 2895]).");
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

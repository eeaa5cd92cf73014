// The pybind11 module nacc._core: exception translation, and the bindings of
// every area (each registers itself with NACC_BINDINGS in its own file).
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "bindings/binding.h"
#include "common/error.h"

namespace nacc::bindings {
namespace {
std::vector<std::pair<const char*, BindFn>>& registry() {
  static std::vector<std::pair<const char*, BindFn>> fns;
  return fns;
}
}  // namespace

void register_bindings(const char* name, BindFn fn) { registry().emplace_back(name, fn); }

}  // namespace nacc::bindings

PYBIND11_MODULE(_core, m) {
  namespace py = pybind11;
  m.doc() = "nacc core: the NACC NPU model (compute units, compiler, device, runtime)";

  // Exception types live for the life of the interpreter; stored with
  // gil_safe_call_once_and_store so no Python object outlives finalisation.
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> nacc_error;
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> unsupported_error;
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> device_fault;
  nacc_error.call_once_and_store_result(
      [&] { return py::exception<nacc::Error>(m, "NaccError", PyExc_RuntimeError); });
  unsupported_error.call_once_and_store_result([&] {
    return py::exception<nacc::Unsupported>(m, "UnsupportedError", nacc_error.get_stored());
  });
  device_fault.call_once_and_store_result([&] {
    return py::exception<nacc::DeviceFault>(m, "DeviceFault", nacc_error.get_stored());
  });
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const nacc::InvalidArgument& e) {
      py::set_error(PyExc_ValueError, e.what());
    } catch (const nacc::Unsupported& e) {
      py::set_error(unsupported_error.get_stored(), e.what());
    } catch (const nacc::DeviceFault& e) {
      py::set_error(device_fault.get_stored(), e.what());
    } catch (const nacc::Error& e) {
      py::set_error(nacc_error.get_stored(), e.what());
    }
  });

  auto fns = nacc::bindings::registry();
  std::sort(fns.begin(), fns.end(),
            [](const auto& a, const auto& b) { return std::strcmp(a.first, b.first) < 0; });
  for (const auto& [name, fn] : fns) fn(m);
}

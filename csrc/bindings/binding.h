// Shared pieces of the pybind11 module nacc._core: self-registration of each
// area's bindings (NACC_BINDINGS), and numpy argument checks that raise
// precise errors (TypeError for a wrong dtype, ValueError for a wrong shape).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <array>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "arch/unit_params.h"
#include "common/error.h"

namespace nacc::bindings {

namespace py = pybind11;

using BindFn = void (*)(py::module_&);
// Every translation unit that defines NACC_BINDINGS(name) adds its function
// here; the module init runs them in name order.
void register_bindings(const char* name, BindFn fn);

#define NACC_BINDINGS(NAME)                                                     \
  static void nacc_bind_##NAME(pybind11::module_& m);                           \
  namespace {                                                                   \
  const bool nacc_bind_registered_##NAME =                                      \
      (::nacc::bindings::register_bindings(#NAME, &nacc_bind_##NAME), true);    \
  }                                                                             \
  static void nacc_bind_##NAME(pybind11::module_& m)

// Returns `arr` as a C-contiguous array of T, raising TypeError when its dtype
// is not exactly T (no silent casts: an int32 array passed as int8 data is a
// caller's bug) and ValueError when ndim differs from `ndim` (-1: any).
template <typename T>
py::array_t<T, py::array::c_style> checked_array(const py::array& arr, const char* name,
                                                 int ndim = -1) {
  if (!arr.dtype().is(py::dtype::of<T>())) {
    throw py::type_error(str_cat(name, ": expected dtype ", std::string(py::str(py::dtype::of<T>())),
                                 ", got ", std::string(py::str(arr.dtype()))));
  }
  if (ndim >= 0 && arr.ndim() != ndim) {
    throw py::value_error(str_cat(name, ": expected ", ndim, " dimensions, got ", arr.ndim()));
  }
  return py::array_t<T, py::array::c_style>::ensure(arr);
}

// The window of a stride (h, w) and a padding (top, bottom, left, right)
// as the window units' Python bindings take them.
inline WindowParams window_of(std::pair<int, int> stride, const std::array<int, 4>& padding) {
  WindowParams w;
  w.stride_h = stride.first;
  w.stride_w = stride.second;
  w.pad_top = padding[0];
  w.pad_bottom = padding[1];
  w.pad_left = padding[2];
  w.pad_right = padding[3];
  return w;
}

}  // namespace nacc::bindings

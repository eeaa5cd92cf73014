// Bindings of the vector layout unit (NACC_SPEC §7): scatter_vnchwconv and its
// reverse on a numpy uint8 array standing for the UB (modified in place), and
// the whole-tensor NCHW <-> NC1HWC0 conversions.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings/binding.h"
#include "device/units/vnchwconv.h"

namespace py = pybind11;

namespace {

nacc::VnchwElem parse_elem(const std::string& dtype, const char* fn) {
  if (dtype == "b8") return nacc::VnchwElem::kB8;
  if (dtype == "b16") return nacc::VnchwElem::kB16;
  if (dtype == "b32") return nacc::VnchwElem::kB32;
  throw py::value_error(
      nacc::str_cat(fn, ": dtype must be 'b8', 'b16' or 'b32', got '", dtype, "'"));
}

std::array<int64_t, 16> block_list(const std::vector<int64_t>& v, const char* fn,
                                   const char* name) {
  if (v.size() != 16) {
    throw py::value_error(nacc::str_cat(fn, ": ", name,
                                        " must list 16 block addresses (a register pair of 8 "
                                        "block pointers each), got ",
                                        v.size()));
  }
  std::array<int64_t, 16> a;
  for (int i = 0; i < 16; ++i) a[i] = v[i];
  return a;
}

// The UB must be a writable, C-contiguous 1-D uint8 array: it is modified in
// place, so no converting copy may stand in for it.
nacc::UnifiedBuffer ub_of(py::array& ub, const char* fn) {
  if (!ub.dtype().is(py::dtype::of<uint8_t>())) {
    throw py::type_error(nacc::str_cat(fn, ": ub: expected dtype uint8, got ",
                                       std::string(py::str(ub.dtype()))));
  }
  if (ub.ndim() != 1) {
    throw py::value_error(nacc::str_cat(fn, ": ub: expected 1 dimension, got ", ub.ndim()));
  }
  if (!(ub.flags() & py::array::c_style) || !ub.writeable()) {
    throw py::value_error(nacc::str_cat(fn, ": ub must be a writable contiguous array "
                                            "(it is modified in place)"));
  }
  return {static_cast<uint8_t*>(ub.mutable_data()), static_cast<int64_t>(ub.size())};
}

void bind_vnchw_op(py::module_& m, const char* name, bool reverse, const char* doc) {
  m.def(
      name,
      [name, reverse](py::array ub, const std::string& dtype, const std::vector<int64_t>& dst,
                      const std::vector<int64_t>& src, int64_t repeat, int64_t dst_stride,
                      int64_t src_stride, bool dst_high_half, bool src_high_half) {
        nacc::VnchwconvParams p;
        p.elem = parse_elem(dtype, name);
        p.dst = block_list(dst, name, "dst");
        p.src = block_list(src, name, "src");
        p.repeat = repeat;
        p.dst_stride = dst_stride;
        p.src_stride = src_stride;
        p.dst_high_half = dst_high_half;
        p.src_high_half = src_high_half;
        const nacc::UnifiedBuffer buffer = ub_of(ub, name);
        if (reverse) {
          nacc::scatter_vnchwconv_reverse(buffer, p);
        } else {
          nacc::scatter_vnchwconv(buffer, p);
        }
      },
      py::arg("ub"), py::kw_only(), py::arg("dtype"), py::arg("dst"), py::arg("src"),
      py::arg("repeat"), py::arg("dst_stride"), py::arg("src_stride"),
      py::arg("dst_high_half") = false, py::arg("src_high_half") = false, doc);
}

// Element width of a tensor accepted by the conversions (TypeError otherwise).
int tensor_elem_bytes(const py::array& a, const char* fn) {
  const char kind = a.dtype().kind();
  const auto size = a.dtype().itemsize();
  const bool ok = (kind == 'i' && (size == 1 || size == 2 || size == 4)) ||
                  (kind == 'u' && size == 1) || (kind == 'f' && (size == 2 || size == 4));
  if (!ok) {
    throw py::type_error(nacc::str_cat(fn, ": dtype must be int8, uint8, int16, float16, int32 or "
                                           "float32, got ",
                                       std::string(py::str(a.dtype()))));
  }
  return static_cast<int>(size);
}

}  // namespace

NACC_BINDINGS(vnchwconv) {
  bind_vnchw_op(
      m, "scatter_vnchwconv", false,
      "scatter_vnchwconv (NACC_SPEC §7): NCHW -> NC1HWC0 block transposition in the UB `ub` "
      "(1-D uint8, modified in place). dst/src: 16 UB byte addresses each (multiples of 32), "
      "repeat in [0, 255], strides in [0, 65535] blocks of 32 B; high-half flags for b8 only. "
      "Out-of-UB access raises nacc.DeviceFault, bad parameters ValueError.");
  bind_vnchw_op(
      m, "scatter_vnchwconv_reverse", true,
      "The reverse (NC1HWC0 -> NCHW), NACC_SPEC §7: the loops of scatter_vnchwconv with every "
      "assignment turned around; `src` holds the NC1HWC0-side blocks, `dst` the NCHW-side "
      "blocks, each high-half flag refers to its own operand.");

  m.def(
      "nchw_to_nc1hwc0",
      [](py::array array) {
        const char* fn = "nchw_to_nc1hwc0";
        const int eb = tensor_elem_bytes(array, fn);
        if (array.ndim() != 4) {
          throw py::value_error(
              nacc::str_cat(fn, ": expected 4 dimensions [N, C, H, W], got ", array.ndim()));
        }
        py::array in = py::array::ensure(array, py::array::c_style);
        const int64_t N = in.shape(0), C = in.shape(1), H = in.shape(2), W = in.shape(3);
        const int64_t c0 = nacc::nc1hwc0_c0(eb);
        py::array out(in.dtype(), std::vector<py::ssize_t>{N, (C + c0 - 1) / c0, H, W, c0});
        const void* src = in.data();
        void* dst = out.mutable_data();
        {
          py::gil_scoped_release release;
          nacc::nchw_to_nc1hwc0(eb, N, C, H, W, src, dst);
        }
        return out;
      },
      py::arg("array"),
      "NCHW -> NC1HWC0 through scatter_vnchwconv: [N, C, H, W] (int8, uint8, int16, float16, "
      "int32, float32) -> [N, ceil(C / C0), H, W, C0], C0 = 32 for 1-byte and 16 for 2/4-byte "
      "elements, padded channels zero.");

  m.def(
      "nc1hwc0_to_nchw",
      [](py::array array, int64_t channels) {
        const char* fn = "nc1hwc0_to_nchw";
        const int eb = tensor_elem_bytes(array, fn);
        if (array.ndim() != 5) {
          throw py::value_error(
              nacc::str_cat(fn, ": expected 5 dimensions [N, C1, H, W, C0], got ", array.ndim()));
        }
        py::array in = py::array::ensure(array, py::array::c_style);
        const int64_t N = in.shape(0), C1 = in.shape(1), H = in.shape(2), W = in.shape(3);
        const int64_t c0 = nacc::nc1hwc0_c0(eb);
        if (in.shape(4) != c0) {
          throw py::value_error(nacc::str_cat(fn, ": C0 (last dimension) must be ", c0, " for ",
                                              eb, "-byte elements, got ", in.shape(4)));
        }
        if (channels < 0 || (channels + c0 - 1) / c0 != C1) {
          throw py::value_error(nacc::str_cat(
              fn, ": channels ", channels, " does not match C1 = ", C1, " (need ceil(channels / ",
              c0, ") == C1, i.e. channels in [", C1 == 0 ? 0 : (C1 - 1) * c0 + 1, ", ", C1 * c0,
              "])"));
        }
        py::array out(in.dtype(), std::vector<py::ssize_t>{N, channels, H, W});
        const void* src = in.data();
        void* dst = out.mutable_data();
        {
          py::gil_scoped_release release;
          nacc::nc1hwc0_to_nchw(eb, N, channels, H, W, src, dst);
        }
        return out;
      },
      py::arg("array"), py::arg("channels"),
      "NC1HWC0 -> NCHW through scatter_vnchwconv_reverse: [N, C1, H, W, C0] -> "
      "[N, channels, H, W]; channels beyond `channels` (the zero padding) are dropped.");
}

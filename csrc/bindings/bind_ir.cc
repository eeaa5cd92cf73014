// Bindings of the graph IR and the capability rules: build a Graph from
// Python (tests, tools, report scripts), ask check_op per node, read the
// rule table (docs/supported_ops.md is generated from it) and the SRAM bound.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <functional>
#include <map>

#include "bindings/binding.h"
#include "ir/ir.h"
#include "support/rules.h"

namespace py = pybind11;
using nacc::str_cat;
namespace ir = nacc::ir;
namespace support = nacc::support;

namespace {

// Copies `arr` (dtype exactly that of `dtype`, shape exactly `shape`) into bytes.
std::vector<uint8_t> array_bytes(const py::array& arr, ir::DType dtype,
                                 const std::vector<int64_t>& shape, const std::string& name) {
  const std::string what = str_cat("add_tensor '", name, "': data");
  py::array contiguous;
  switch (dtype) {
    case ir::DType::kInt8:
    case ir::DType::kInt4:  // unpacked: one int8 in [-8, 7] per element
      contiguous = nacc::bindings::checked_array<int8_t>(arr, what.c_str());
      break;
    case ir::DType::kUInt8: contiguous = nacc::bindings::checked_array<uint8_t>(arr, what.c_str()); break;
    case ir::DType::kInt16: contiguous = nacc::bindings::checked_array<int16_t>(arr, what.c_str()); break;
    case ir::DType::kInt32: contiguous = nacc::bindings::checked_array<int32_t>(arr, what.c_str()); break;
    case ir::DType::kInt64: contiguous = nacc::bindings::checked_array<int64_t>(arr, what.c_str()); break;
    case ir::DType::kFloat32: contiguous = nacc::bindings::checked_array<float>(arr, what.c_str()); break;
    default: throw py::value_error(str_cat(what, ": dtype 'other' cannot carry data"));
  }
  std::vector<int64_t> arr_shape(contiguous.shape(), contiguous.shape() + contiguous.ndim());
  if (arr_shape != shape) {
    throw py::value_error(str_cat(what, " has shape ", ir::shape_str(arr_shape),
                                  ", the tensor ", ir::shape_str(shape)));
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(contiguous.nbytes()));
  if (!bytes.empty()) std::memcpy(bytes.data(), contiguous.data(), bytes.size());
  return bytes;
}

template <typename T>
T cast_kwarg(const py::handle& value, const std::string& key, const char* expected) {
  try {
    return value.cast<T>();
  } catch (const py::cast_error&) {
    throw py::type_error(str_cat("add_op: attribute '", key, "' must be ", expected, ", got ",
                                 std::string(py::str(py::type::of(value)))));
  }
}

// Applies add_op's keyword attributes to `op`; returns the SAME/VALID mode if
// `padding` was given (resolved once the op's tensors are known).
std::optional<ir::PaddingMode> apply_attrs(ir::Op& op, const py::kwargs& kw) {
  using Setter = std::function<void(ir::Attributes&, const py::handle&, const std::string&)>;
  auto int_field = [](int ir::Attributes::*field) -> Setter {
    return [field](ir::Attributes& a, const py::handle& v, const std::string& k) {
      a.*field = cast_kwarg<int>(v, k, "an int");
    };
  };
  auto pad_field = [](int64_t ir::Padding::*field) -> Setter {
    return [field](ir::Attributes& a, const py::handle& v, const std::string& k) {
      a.padding.*field = cast_kwarg<int64_t>(v, k, "an int");
    };
  };
  static const std::map<std::string, Setter> setters = {
      {"stride_h", int_field(&ir::Attributes::stride_h)},
      {"stride_w", int_field(&ir::Attributes::stride_w)},
      {"dilation_h", int_field(&ir::Attributes::dilation_h)},
      {"dilation_w", int_field(&ir::Attributes::dilation_w)},
      {"kernel_h", int_field(&ir::Attributes::kernel_h)},
      {"kernel_w", int_field(&ir::Attributes::kernel_w)},
      {"depth_multiplier", int_field(&ir::Attributes::depth_multiplier)},
      {"axis", int_field(&ir::Attributes::axis)},
      {"block_size", int_field(&ir::Attributes::block_size)},
      {"align_corners",
       [](ir::Attributes& a, const py::handle& v, const std::string& k) {
         a.align_corners = cast_kwarg<bool>(v, k, "a bool");
       }},
      {"half_pixel_centers",
       [](ir::Attributes& a, const py::handle& v, const std::string& k) {
         a.half_pixel_centers = cast_kwarg<bool>(v, k, "a bool");
       }},
      {"pad_top", pad_field(&ir::Padding::top)},
      {"pad_bottom", pad_field(&ir::Padding::bottom)},
      {"pad_left", pad_field(&ir::Padding::left)},
      {"pad_right", pad_field(&ir::Padding::right)},
      {"activation",
       [](ir::Attributes& a, const py::handle& v, const std::string& k) {
         a.activation = ir::parse_activation(cast_kwarg<std::string>(v, k, "a str"));
       }},
      {"perm",
       [](ir::Attributes& a, const py::handle& v, const std::string& k) {
         a.perm = cast_kwarg<std::vector<int>>(v, k, "a list of ints");
       }},
      {"axes",
       [](ir::Attributes& a, const py::handle& v, const std::string& k) {
         a.axes = cast_kwarg<std::vector<int>>(v, k, "a list of ints");
       }},
      {"keep_dims",
       [](ir::Attributes& a, const py::handle& v, const std::string& k) {
         a.keep_dims = cast_kwarg<bool>(v, k, "a bool");
       }},
      {"alpha",
       [](ir::Attributes& a, const py::handle& v, const std::string& k) {
         a.alpha = cast_kwarg<float>(v, k, "a float");
       }},
      {"lut",
       [](ir::Attributes& a, const py::handle& v, const std::string& k) {
         a.lut = cast_kwarg<std::vector<int8_t>>(v, k, "a sequence of int8 values");
       }},
      {"paddings",
       [](ir::Attributes& a, const py::handle& v, const std::string& k) {
         a.paddings = cast_kwarg<std::vector<std::array<int64_t, 2>>>(
             v, k, "a list of (before, after) pairs");
       }},
      {"slice_begin",
       [](ir::Attributes& a, const py::handle& v, const std::string& k) {
         a.slice_begin = cast_kwarg<std::vector<std::vector<int64_t>>>(
             v, k, "a list (one per output) of lists of ints");
       }},
      {"slice_strides",
       [](ir::Attributes& a, const py::handle& v, const std::string& k) {
         a.slice_strides = cast_kwarg<std::vector<int64_t>>(v, k, "a list of ints");
       }},
      {"requant",
       [](ir::Attributes& a, const py::handle& v, const std::string& k) {
         a.requant = ir::parse_requant_mode(cast_kwarg<std::string>(v, k, "'tflite' or 'onnxruntime'"));
       }},
      // How ONNX Runtime's CPU EP runs the node (ir::Attributes::onnx_kernel) and the
      // K blocks of its unfused float32 Conv (ort_kblock, ort_kblock_split, ort_kblock_tail).
      {"onnx_kernel",
       [](ir::Attributes& a, const py::handle& v, const std::string& k) {
         using OK = ir::Attributes::OnnxKernel;
         static const std::map<std::string, OK> names = {{"none", OK::kNone},
                                                         {"fused_s8", OK::kFusedS8},
                                                         {"fused_u8", OK::kFusedU8},
                                                         {"unfused", OK::kUnfused}};
         const std::string name = cast_kwarg<std::string>(v, k, "'none', 'fused_s8', 'fused_u8' or 'unfused'");
         auto it = names.find(name);
         if (it == names.end()) {
           throw py::value_error(str_cat("add_op: onnx_kernel '", name,
                                         "' is not 'none', 'fused_s8', 'fused_u8' or 'unfused'"));
         }
         a.onnx_kernel = it->second;
       }},
      {"ort_kblock", int_field(&ir::Attributes::ort_kblock)},
      {"ort_kblock_tail", int_field(&ir::Attributes::ort_kblock_tail)},
      {"ort_kblock_split",
       [](ir::Attributes& a, const py::handle& v, const std::string& k) {
         a.ort_kblock_split = cast_kwarg<int64_t>(v, k, "an int");
       }},
      {"unsupported_options",
       [](ir::Attributes& a, const py::handle& v, const std::string& k) {
         a.unsupported_options = cast_kwarg<std::vector<std::string>>(v, k, "a list of str");
       }},
  };
  std::optional<ir::PaddingMode> mode;
  bool explicit_pads = false;
  for (const auto& item : kw) {
    const std::string key = py::str(item.first);
    if (key == "type_name") {
      op.type_name = cast_kwarg<std::string>(item.second, key, "a str");
      continue;
    }
    if (key == "padding") {
      mode = ir::parse_padding_mode(cast_kwarg<std::string>(item.second, key, "'SAME' or 'VALID'"));
      continue;
    }
    auto it = setters.find(key);
    if (it == setters.end()) {
      std::string known = "type_name, padding";
      for (const auto& [name, _] : setters) known += ", " + name;
      throw py::type_error(str_cat("add_op: unknown attribute '", key, "' (known: ", known, ")"));
    }
    explicit_pads |= key.rfind("pad_", 0) == 0;
    it->second(op.attrs, item.second, key);
  }
  if (mode && explicit_pads) {
    throw py::value_error("add_op: give either padding='SAME'/'VALID' or pad_top/bottom/left/right");
  }
  return mode;
}

py::dict attrs_dict(const ir::Attributes& a) {
  py::dict d;
  d["stride_h"] = a.stride_h;
  d["stride_w"] = a.stride_w;
  d["dilation_h"] = a.dilation_h;
  d["dilation_w"] = a.dilation_w;
  d["padding"] = py::make_tuple(a.padding.top, a.padding.bottom, a.padding.left, a.padding.right);
  d["kernel_h"] = a.kernel_h;
  d["kernel_w"] = a.kernel_w;
  d["depth_multiplier"] = a.depth_multiplier;
  d["activation"] = ir::activation_name(a.activation);
  d["axis"] = a.axis;
  d["axes"] = a.axes;
  d["keep_dims"] = a.keep_dims;
  d["alpha"] = a.alpha;
  d["lut"] = a.lut;
  d["paddings"] = a.paddings;
  d["slice_begin"] = a.slice_begin;
  d["slice_strides"] = a.slice_strides;
  d["block_size"] = a.block_size;
  d["perm"] = a.perm;
  d["align_corners"] = a.align_corners;
  d["half_pixel_centers"] = a.half_pixel_centers;
  d["unsupported_options"] = a.unsupported_options;
  d["requant"] = ir::requant_mode_name(a.requant);
  static const char* kernels[] = {"none", "fused_s8", "fused_u8", "unfused"};
  d["onnx_kernel"] = kernels[int(a.onnx_kernel)];
  d["ort_kblock"] = a.ort_kblock;
  d["ort_kblock_split"] = a.ort_kblock_split;
  d["ort_kblock_tail"] = a.ort_kblock_tail;
  return d;
}

}  // namespace

NACC_BINDINGS(ir) {
  py::class_<ir::Tensor>(m, "Tensor", "A tensor of an IR Graph (read-only view).")
      .def_readonly("name", &ir::Tensor::name)
      .def_readonly("shape", &ir::Tensor::shape)
      .def_property_readonly("dtype", [](const ir::Tensor& t) { return ir::dtype_name(t.dtype); })
      .def_property_readonly("scales", [](const ir::Tensor& t) { return t.quant.scales; })
      .def_property_readonly("zero_points", [](const ir::Tensor& t) { return t.quant.zero_points; })
      .def_property_readonly("axis", [](const ir::Tensor& t) { return t.quant.axis; })
      .def_property_readonly("is_constant", &ir::Tensor::is_constant)
      .def("__repr__", [](const ir::Tensor& t) {
        return str_cat("Tensor('", t.name, "', ", ir::shape_str(t.shape), ", ",
                       ir::dtype_name(t.dtype), t.is_constant() ? ", constant" : "", ")");
      });

  py::class_<ir::Op>(m, "Op", "An op of an IR Graph (read-only view).")
      .def_property_readonly("kind", [](const ir::Op& o) { return ir::op_kind_name(o.kind); })
      .def_readonly("name", &ir::Op::name)
      .def_readonly("type_name", &ir::Op::type_name)
      .def_readonly("inputs", &ir::Op::inputs)
      .def_readonly("outputs", &ir::Op::outputs)
      .def_property_readonly("attrs", [](const ir::Op& o) { return attrs_dict(o.attrs); })
      .def("__repr__", [](const ir::Op& o) {
        return str_cat("Op(", o.display_type(), " '", o.name, "')");
      });

  py::class_<ir::Graph>(m, "Graph",
                        "The core's graph IR. Build with add_tensor / add_op; ask check_op.")
      .def(py::init<>())
      .def(
          "add_tensor",
          [](ir::Graph& g, const std::string& name, const std::vector<int64_t>& shape,
             const std::string& dtype, const py::object& scales, const py::object& zero_points,
             int axis, const py::object& data) {
            ir::Tensor t;
            t.name = name;
            t.shape = shape;
            t.dtype = ir::parse_dtype(dtype);
            if (!scales.is_none()) {
              t.quant.scales = py::isinstance<py::float_>(scales) || py::isinstance<py::int_>(scales)
                                   ? std::vector<float>{scales.cast<float>()}
                                   : scales.cast<std::vector<float>>();
            }
            if (!zero_points.is_none()) {
              t.quant.zero_points = py::isinstance<py::int_>(zero_points)
                                        ? std::vector<int32_t>{zero_points.cast<int32_t>()}
                                        : zero_points.cast<std::vector<int32_t>>();
            } else {
              t.quant.zero_points.assign(t.quant.scales.size(), 0);
            }
            t.quant.axis = axis;
            if (!data.is_none()) {
              if (!py::isinstance<py::array>(data)) {
                throw py::type_error(str_cat("add_tensor '", name, "': data must be a numpy array or None"));
              }
              t.data = array_bytes(data.cast<py::array>(), t.dtype, shape, name);
            }
            return g.add_tensor(std::move(t));
          },
          py::arg("name"), py::arg("shape"), py::arg("dtype") = "int8", py::arg("scales") = py::none(),
          py::arg("zero_points") = py::none(), py::arg("axis") = 0, py::arg("data") = py::none(),
          "Adds a tensor; returns its id. shape: -1 or 0 = unknown dimension. dtype: int8, uint8, "
          "int16, int32, int64, float32, other, int4 (unpacked int8 values in [-8, 7]). scales / zero_points: a number (per tensor) or a "
          "list (per channel along `axis`; zero_points default to 0). data: a numpy array of "
          "exactly that dtype and shape for a constant, or None.")
      .def(
          "add_op",
          [](ir::Graph& g, const std::string& kind, const std::vector<int>& inputs,
             const std::vector<int>& outputs, const std::string& name, const py::kwargs& kw) {
            ir::Op op;
            op.kind = ir::parse_op_kind(kind);
            op.name = name;
            op.inputs = inputs;
            op.outputs = outputs;
            if (auto mode = apply_attrs(op, kw)) ir::resolve_tflite_padding(g, op, *mode);
            return g.add_op(std::move(op));
          },
          py::arg("kind"), py::arg("inputs"), py::arg("outputs"), py::arg("name") = "",
          "Adds an op; returns its index. kind: CONV_2D, ..., or OTHER (then type_name='SOFTMAX'). "
          "inputs: tensor ids, -1 = omitted optional input. Attributes as keywords: stride_h, "
          "stride_w, dilation_h, dilation_w, padding='SAME'|'VALID' or pad_top/bottom/left/right, "
          "kernel_h, kernel_w (pools), depth_multiplier, activation ('RELU', ...), axis, axes, "
          "keep_dims, alpha, lut (256 int8 entries, entry i = output for input (int8)i), paddings (PAD: [(before, after)] per dimension), "
          "unsupported_options (list of str), type_name.")
      .def_readwrite("inputs", &ir::Graph::inputs, "Graph input tensor ids (assign a list).")
      .def_readwrite("outputs", &ir::Graph::outputs, "Graph output tensor ids (assign a list).")
      .def_property_readonly("num_tensors", [](const ir::Graph& g) { return g.tensors.size(); })
      .def_property_readonly("num_ops", [](const ir::Graph& g) { return g.ops.size(); })
      .def("tensor", &ir::Graph::tensor, py::arg("id"), py::return_value_policy::copy)
      .def("op", &ir::Graph::op, py::arg("index"), py::return_value_policy::copy)
      .def("validate", &ir::Graph::validate,
           "Checks ids, tensors, operand counts and shape consistency; raises ValueError.");

  py::class_<support::SupportConfig>(m, "SupportConfig", "Options of the capability check.")
      .def(py::init([](int64_t sram_bytes, int64_t sram_alignment, bool check_lowering) {
             if (sram_bytes < 1 || sram_alignment < 1) {
               throw py::value_error(str_cat("SupportConfig: sram_bytes ", sram_bytes,
                                             " and sram_alignment ", sram_alignment,
                                             " must be >= 1"));
             }
             return support::SupportConfig{sram_bytes, sram_alignment, check_lowering};
           }),
           py::kw_only(), py::arg("sram_bytes") = nacc::limits::kDefaultSramBytes,
           py::arg("sram_alignment") = nacc::limits::kSramAlignment,
           py::arg("check_lowering") = true)
      .def_readonly("check_lowering", &support::SupportConfig::check_lowering)
      .def_readonly("sram_bytes", &support::SupportConfig::sram_bytes)
      .def_readonly("sram_alignment", &support::SupportConfig::sram_alignment);

  py::class_<support::Violation>(m, "Violation", "One capability rule an op breaks.")
      .def_readonly("rule", &support::Violation::rule)
      .def_readonly("detail", &support::Violation::detail)
      .def_readonly("message", &support::Violation::message)
      .def("__str__", [](const support::Violation& v) { return v.message; })
      .def("__repr__", [](const support::Violation& v) {
        return str_cat("Violation(rule='", v.rule, "', detail='", v.detail, "')");
      });

  m.def("check_op", &support::check_op, py::arg("graph"), py::arg("op_index"),
        py::arg("config") = support::SupportConfig{},
        "Every capability rule graph.op(op_index) breaks; [] = the NPU runs it.");
  m.def(
      "min_sram_bytes",
      [](const ir::Graph& g, int op_index, const support::SupportConfig& config) {
        return support::min_sram_bytes(g, op_index, config);
      },
      py::arg("graph"), py::arg("op_index"), py::arg("config") = support::SupportConfig{},
      "SRAM bytes of the op's smallest tile (formulas in csrc/support/sram.h).");
  m.def(
      "rules_table",
      [] {
        py::list out;
        for (const auto& rule : support::rules()) {
          py::list kinds;
          for (ir::OpKind k : rule.is_general() ? ir::npu_op_kinds() : rule.kinds) {
            kinds.append(ir::op_kind_name(k));
          }
          py::dict d;
          d["name"] = rule.name;
          d["op_kinds"] = kinds;
          d["general"] = rule.is_general();
          d["gate"] = rule.gate;
          d["text"] = rule.text;
          out.append(d);
        }
        return out;
      },
      "The capability rules in evaluation order: dicts with name, op_kinds, general (applies to "
      "every NPU op kind), gate (later rules need it) and text.");
  m.def(
      "op_kinds",
      [] {
        py::list out;
        for (ir::OpKind k : ir::npu_op_kinds()) {
          py::dict d;
          d["name"] = ir::op_kind_name(k);
          d["description"] = ir::op_kind_description(k);
          d["data_forms"] = support::data_forms(k);
          out.append(d);
        }
        return out;
      },
      "The op kinds the NPU runs: dicts with name, description and data_forms (NACC_SPEC §9).");
  m.def(
      "tflite_padding",
      [](const std::string& mode, int64_t in_h, int64_t in_w, int64_t kernel_h, int64_t kernel_w,
         int64_t stride_h, int64_t stride_w, int64_t dilation_h, int64_t dilation_w) {
        const ir::Padding p = ir::tflite_padding(ir::parse_padding_mode(mode), in_h, in_w, kernel_h,
                                                 kernel_w, stride_h, stride_w, dilation_h,
                                                 dilation_w);
        return py::make_tuple(p.top, p.bottom, p.left, p.right);
      },
      py::arg("mode"), py::arg("in_h"), py::arg("in_w"), py::arg("kernel_h"), py::arg("kernel_w"),
      py::arg("stride_h"), py::arg("stride_w"), py::arg("dilation_h") = 1,
      py::arg("dilation_w") = 1,
      "TFLite's SAME/VALID padding as explicit (top, bottom, left, right).");
  m.def("window_output_size", &ir::window_output_size, py::arg("in_size"), py::arg("kernel"),
        py::arg("stride"), py::arg("pad_before"), py::arg("pad_after"), py::arg("dilation") = 1,
        "Output extent of a window along one axis (0 when the window does not fit).");
}

// Bindings of the element-wise and activation units: nacc._core.add / sub /
// mul / activation taking the raw register values as keywords, and the
// TFLite-compatible parameter derivations returning dicts that splat into them
// (`add(a, b, **tflite_add_params(...))`). Compute runs without the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "arch/unit_checks.h"
#include "bindings/binding.h"
#include "common/shape.h"
#include "device/units/activation.h"
#include "device/units/elementwise.h"
#include "device/units/fm16.h"
#include "quant/tflite.h"

namespace py = pybind11;
using namespace py::literals;

namespace {

// Python ints arrive as int64 so that a value outside int32 gets a ValueError
// naming the argument, not pybind11's generic TypeError.
int32_t to_int32(int64_t v, const char* op, const char* name) {
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    throw py::value_error(nacc::str_cat(op, ": ", name, " ", v, " does not fit int32"));
  }
  return static_cast<int32_t>(v);
}

nacc::FusedActivation parse_fused(const std::string& act, const char* op) {
  if (act == "NONE") return nacc::FusedActivation::kNone;
  if (act == "RELU") return nacc::FusedActivation::kRelu;
  if (act == "RELU6") return nacc::FusedActivation::kRelu6;
  if (act == "RELU_N1_TO_1") return nacc::FusedActivation::kReluN1To1;
  throw py::value_error(nacc::str_cat(op, ": unknown fused activation '", act,
                                      "' (NONE, RELU, RELU6, RELU_N1_TO_1)"));
}

// An int8 operand of 0 to 4 dimensions, as a Shape4 with leading 1s (TFLite's
// ExtendedShape).
nacc::Shape4 operand_shape(const py::array& a, const char* op, const char* name) {
  if (a.ndim() > 4) {
    throw py::value_error(
        nacc::str_cat(op, ": ", name, " has ", a.ndim(), " dimensions; at most 4 (NHWC)"));
  }
  int d[4] = {1, 1, 1, 1};
  const int off = 4 - static_cast<int>(a.ndim());
  for (int i = 0; i < a.ndim(); ++i) {
    if (a.shape(i) > std::numeric_limits<int>::max()) {
      throw py::value_error(nacc::str_cat(op, ": ", name, " dimension ", i, " too large"));
    }
    d[off + i] = static_cast<int>(a.shape(i));
  }
  return nacc::Shape4{d[0], d[1], d[2], d[3]};
}

// A binary element-wise unit with In operands and an int8 output: the
// operands checked and broadcast, `validate`d parameters, `unit` run without
// the GIL.
template <class In, class Unit>
py::array_t<int8_t> run_binary_to_s8(const nacc::ElementwiseParams& p, const py::array& in1,
                                     const py::array& in2, const char* op,
                                     void (*validate)(const nacc::ElementwiseParams&), Unit unit) {
  auto a = nacc::bindings::checked_array<In>(in1, "input1");
  auto b = nacc::bindings::checked_array<In>(in2, "input2");
  const nacc::Shape4 sa = operand_shape(a, op, "input1");
  const nacc::Shape4 sb = operand_shape(b, op, "input2");
  const nacc::Shape4 so = nacc::broadcast_shape(sa, sb);
  validate(p);
  // The output keeps the larger rank, like numpy / TFLite broadcasting.
  const int ndim = static_cast<int>(std::max(a.ndim(), b.ndim()));
  const int full[4] = {so.n, so.h, so.w, so.c};
  std::vector<py::ssize_t> dims(full + 4 - ndim, full + 4);
  py::array_t<int8_t> out(dims);
  const In* pa = a.data();
  const In* pb = b.data();
  int8_t* po = out.mutable_data();
  {
    py::gil_scoped_release release;
    unit(p, sa, pa, sb, pb, so, po);
  }
  return out;
}

py::array_t<int8_t> run_elementwise(const nacc::ElementwiseParams& p, const py::array& in1,
                                    const py::array& in2, const char* op) {
  return run_binary_to_s8<int8_t>(p, in1, in2, op, nacc::validate_elementwise_params,
                                  nacc::elementwise_s8);
}

py::dict elementwise_dict(const nacc::ElementwiseParams& p) {
  py::dict d("input1_offset"_a = p.input1_offset, "input2_offset"_a = p.input2_offset);
  if (p.mode != nacc::ElementwiseMode::MUL) {
    d["left_shift"] = p.left_shift;
    d["input1_multiplier"] = p.input1_multiplier;
    d["input1_shift"] = p.input1_shift;
    d["input2_multiplier"] = p.input2_multiplier;
    d["input2_shift"] = p.input2_shift;
  }
  d["output_multiplier"] = p.output_multiplier;
  d["output_shift"] = p.output_shift;
  d["output_zero_point"] = p.output_zero_point;
  d["act_min"] = p.act_min;
  d["act_max"] = p.act_max;
  return d;
}

py::dict activation_dict(const nacc::ActivationParams& p) {
  return py::dict("mode"_a = p.mode, "input_zero_point"_a = p.input_zero_point,
                  "output_zero_point"_a = p.output_zero_point, "multiplier"_a = p.multiplier,
                  "shift"_a = p.shift, "act_min"_a = p.act_min, "act_max"_a = p.act_max);
}

py::array_t<int8_t> lut_array(const std::array<int8_t, 256>& lut) {
  py::array_t<int8_t> out(256);
  std::copy(lut.begin(), lut.end(), out.mutable_data());
  return out;
}

const char* kAddSubDoc =
    "in1 {op} in2 on the element-wise unit, bit-exact to TFLite's reference int8 {OP}.\n"
    "Operands: int8 arrays of up to 4 dims (NHWC, leading 1s implied), broadcast per\n"
    "dimension (equal or 1). Registers: input{{1,2}}_offset = -zero point (9-bit\n"
    "[-256, 255]); left_shift [0, 21] (TFLite: 20); input{{1,2}}_multiplier in [0, 2^31),\n"
    "input{{1,2}}_shift in [-31, 0]; output_multiplier/_shift (shift in [-31, 0]);\n"
    "output_zero_point (9-bit); act_min <= act_max in [-128, 127].";

}  // namespace

NACC_BINDINGS(eltwise_act) {
  // ---------------- element-wise unit ----------------
  auto add_sub = [](nacc::ElementwiseMode mode, const char* op) {
    return [mode, op](const py::array& in1, const py::array& in2, int64_t input1_offset,
                      int64_t input2_offset, int64_t left_shift, int64_t input1_multiplier,
                      int64_t input1_shift, int64_t input2_multiplier, int64_t input2_shift,
                      int64_t output_multiplier, int64_t output_shift, int64_t output_zero_point,
                      int64_t act_min, int64_t act_max) {
      nacc::ElementwiseParams p;
      p.mode = mode;
      p.input1_offset = to_int32(input1_offset, op, "input1_offset");
      p.input2_offset = to_int32(input2_offset, op, "input2_offset");
      p.left_shift = to_int32(left_shift, op, "left_shift");
      p.input1_multiplier = to_int32(input1_multiplier, op, "input1_multiplier");
      p.input1_shift = to_int32(input1_shift, op, "input1_shift");
      p.input2_multiplier = to_int32(input2_multiplier, op, "input2_multiplier");
      p.input2_shift = to_int32(input2_shift, op, "input2_shift");
      p.output_multiplier = to_int32(output_multiplier, op, "output_multiplier");
      p.output_shift = to_int32(output_shift, op, "output_shift");
      p.output_zero_point = to_int32(output_zero_point, op, "output_zero_point");
      p.act_min = to_int32(act_min, op, "act_min");
      p.act_max = to_int32(act_max, op, "act_max");
      return run_elementwise(p, in1, in2, op);
    };
  };
  auto add_sub_args = [](auto&&... extra) {
    return std::make_tuple(py::arg("in1"), py::arg("in2"), py::kw_only(),
                           py::arg("input1_offset"), py::arg("input2_offset"),
                           py::arg("left_shift"), py::arg("input1_multiplier"),
                           py::arg("input1_shift"), py::arg("input2_multiplier"),
                           py::arg("input2_shift"), py::arg("output_multiplier"),
                           py::arg("output_shift"), py::arg("output_zero_point"),
                           py::arg("act_min") = -128, py::arg("act_max") = 127, extra...);
  };
  // pybind11 keeps the docstring pointer: give the formatted texts static storage.
  static const std::string add_doc = py::str(kAddSubDoc).format("op"_a = "+", "OP"_a = "ADD");
  static const std::string sub_doc = py::str(kAddSubDoc).format("op"_a = "-", "OP"_a = "SUB");
  std::apply(
      [&](auto&&... args) {
        m.def("add", add_sub(nacc::ElementwiseMode::ADD, "add"), args..., add_doc.c_str());
        m.def("sub", add_sub(nacc::ElementwiseMode::SUB, "sub"), args..., sub_doc.c_str());
      },
      add_sub_args());

  m.def(
      "mul",
      [](const py::array& in1, const py::array& in2, int64_t input1_offset, int64_t input2_offset,
         int64_t output_multiplier, int64_t output_shift, int64_t output_zero_point,
         int64_t act_min, int64_t act_max) {
        const char* op = "mul";
        nacc::ElementwiseParams p;
        p.mode = nacc::ElementwiseMode::MUL;
        p.left_shift = 0;
        p.input1_offset = to_int32(input1_offset, op, "input1_offset");
        p.input2_offset = to_int32(input2_offset, op, "input2_offset");
        p.output_multiplier = to_int32(output_multiplier, op, "output_multiplier");
        p.output_shift = to_int32(output_shift, op, "output_shift");
        p.output_zero_point = to_int32(output_zero_point, op, "output_zero_point");
        p.act_min = to_int32(act_min, op, "act_min");
        p.act_max = to_int32(act_max, op, "act_max");
        return run_elementwise(p, in1, in2, op);
      },
      py::arg("in1"), py::arg("in2"), py::kw_only(), py::arg("input1_offset"),
      py::arg("input2_offset"), py::arg("output_multiplier"), py::arg("output_shift"),
      py::arg("output_zero_point"), py::arg("act_min") = -128, py::arg("act_max") = 127,
      "in1 * in2 on the element-wise unit, bit-exact to TFLite's reference int8 MUL:\n"
      "clamp(MultiplyByQuantizedMultiplier((in1 + input1_offset) * (in2 + input2_offset),\n"
      "output_multiplier, output_shift) + output_zero_point). Shift in [-31, 31]; other\n"
      "ranges and broadcasting as add().");

  m.def(
      "mul_s16_s8",
      [](const py::array& in1, const py::array& in2, int64_t input1_offset, int64_t input2_offset,
         int64_t output_multiplier, int64_t output_shift, int64_t output_zero_point,
         int64_t act_min, int64_t act_max) {
        const char* op = "mul_s16_s8";
        nacc::ElementwiseParams p;
        p.mode = nacc::ElementwiseMode::MUL_S16_S8;
        p.left_shift = 0;
        p.input1_offset = to_int32(input1_offset, op, "input1_offset");
        p.input2_offset = to_int32(input2_offset, op, "input2_offset");
        p.output_multiplier = to_int32(output_multiplier, op, "output_multiplier");
        p.output_shift = to_int32(output_shift, op, "output_shift");
        p.output_zero_point = to_int32(output_zero_point, op, "output_zero_point");
        p.act_min = to_int32(act_min, op, "act_min");
        p.act_max = to_int32(act_max, op, "act_max");
        return run_binary_to_s8<int16_t>(p, in1, in2, op, nacc::validate_mul_s16_s8_params,
                                         nacc::elementwise_mul_s16_s8);
      },
      py::arg("in1"), py::arg("in2"), py::kw_only(), py::arg("input1_offset") = 0,
      py::arg("input2_offset") = 0, py::arg("output_multiplier"), py::arg("output_shift"),
      py::arg("output_zero_point") = 0, py::arg("act_min") = -128, py::arg("act_max") = 127,
      "ELEMENTWISE_MODE = MUL_S16_S8 (CMSIS-NN arm_elementwise_mul_s16_s8): int16 operands,\n"
      "an int8 result clamp(MultiplyByQuantizedMultiplier((in1 + input1_offset) * (in2 +\n"
      "input2_offset), output_multiplier, output_shift) + output_zero_point, act_min, act_max).\n"
      "Offsets and output zero point 9-bit; multiplier in [0, 2^31), shift in [-31, 0];\n"
      "act_min <= act_max in [-128, 127]; broadcasting as add().");

  auto tflite_params = [](auto derive, const char* op) {
    return [derive, op](float input1_scale, int32_t input1_zero_point, float input2_scale,
                        int32_t input2_zero_point, float output_scale, int32_t output_zero_point,
                        const std::string& activation) {
      return elementwise_dict(derive(input1_scale, input1_zero_point, input2_scale,
                                     input2_zero_point, output_scale, output_zero_point,
                                     parse_fused(activation, op)));
    };
  };
  auto tflite_args = std::make_tuple(
      py::arg("input1_scale"), py::arg("input1_zero_point"), py::arg("input2_scale"),
      py::arg("input2_zero_point"), py::arg("output_scale"), py::arg("output_zero_point"),
      py::arg("activation") = "NONE");
  std::apply(
      [&](auto&&... args) {
        m.def("tflite_add_params", tflite_params(&nacc::tflite_add_params, "tflite_add_params"),
              args...,
              "Register values for TFLite int8 ADD (add.cc Prepare), as a dict for add(**d). "
              "Scales are taken as float32; activation is the fused activation "
              "(NONE, RELU, RELU6, RELU_N1_TO_1).");
        m.def("tflite_sub_params", tflite_params(&nacc::tflite_sub_params, "tflite_sub_params"),
              args...,
              "Register values for TFLite int8 SUB (sub.cc Prepare), as a dict for sub(**d).");
        m.def("tflite_mul_params", tflite_params(&nacc::tflite_mul_params, "tflite_mul_params"),
              args...,
              "Register values for TFLite int8 MUL (mul.cc Prepare), as a dict for mul(**d).");
      },
      tflite_args);

  // ---------------- activation unit ----------------
  py::enum_<nacc::ActMode>(m, "ActMode", "NACC_CTRL.ACT_MODE codes (NACC_SPEC §1).")
      .value("RELU", nacc::ActMode::RELU)
      .value("RELU6", nacc::ActMode::RELU6)
      .value("TANH", nacc::ActMode::TANH)
      .value("SIGMOID", nacc::ActMode::SIGMOID)
      .value("NONE", nacc::ActMode::NONE)
      .value("LUT", nacc::ActMode::LUT);

  m.def(
      "activation",
      [](const py::array& input, nacc::ActMode mode, int64_t input_zero_point,
         int64_t output_zero_point, int64_t multiplier, int64_t shift, int64_t act_min,
         int64_t act_max, const py::object& lut) {
        const char* op = "activation";
        auto in = nacc::bindings::checked_array<int8_t>(input, "input");
        nacc::ActivationParams p;
        p.mode = mode;
        p.input_zero_point = to_int32(input_zero_point, op, "input_zero_point");
        p.output_zero_point = to_int32(output_zero_point, op, "output_zero_point");
        p.multiplier = to_int32(multiplier, op, "multiplier");
        p.shift = to_int32(shift, op, "shift");
        p.act_min = to_int32(act_min, op, "act_min");
        p.act_max = to_int32(act_max, op, "act_max");
        py::array_t<int8_t, py::array::c_style> table;
        if (!lut.is_none()) {
          table = nacc::bindings::checked_array<int8_t>(lut.cast<py::array>(), "lut", 1);
          if (table.size() != 256) {
            throw py::value_error(
                nacc::str_cat(op, ": lut must have 256 entries, got ", table.size()));
          }
          p.lut = table.data();
        }
        if (mode == nacc::ActMode::LUT && p.lut == nullptr) {
          throw py::value_error("activation: mode LUT needs lut= (an int8 array of 256)");
        }
        if (mode != nacc::ActMode::LUT && p.lut != nullptr) {
          throw py::value_error(nacc::str_cat("activation: lut given but mode is ",
                                              nacc::act_mode_name(mode), ", not LUT"));
        }
        nacc::validate_activation_params(p);
        std::vector<py::ssize_t> dims(in.shape(), in.shape() + in.ndim());
        py::array_t<int8_t> out(dims);
        const int8_t* src = in.data();
        int8_t* dst = out.mutable_data();
        const int64_t size = in.size();
        {
          py::gil_scoped_release release;
          nacc::activation_s8(p, size, src, dst);
        }
        return out;
      },
      py::arg("input"), py::kw_only(), py::arg("mode"), py::arg("input_zero_point") = 0,
      py::arg("output_zero_point") = 0, py::arg("multiplier") = 1 << 30, py::arg("shift") = 1,
      py::arg("act_min") = -128, py::arg("act_max") = 127, py::arg("lut") = py::none(),
      "The activation unit on an int8 array of any shape. RELU/RELU6/NONE: clamp(out_zp +\n"
      "MultiplyByQuantizedMultiplier(x - in_zp, multiplier, shift)) to [act_min, act_max]\n"
      "(RELU/RELU6 also at out_zp); LUT: clamp(lut[uint8(x)]). Zero points 9-bit\n"
      "[-256, 255]; multiplier [0, 2^31); shift [-31, 31]. Defaults are the identity.");

  m.def(
      "tflite_relu_params",
      [](float input_scale, int32_t input_zero_point, float output_scale,
         int32_t output_zero_point, const std::string& kind) {
        nacc::ReluKind k;
        if (kind == "RELU") k = nacc::ReluKind::kRelu;
        else if (kind == "RELU6") k = nacc::ReluKind::kRelu6;
        else if (kind == "RELU_N1_TO_1") k = nacc::ReluKind::kReluN1To1;
        else throw py::value_error("tflite_relu_params: unknown kind '" + kind +
                                   "' (RELU, RELU6, RELU_N1_TO_1)");
        return activation_dict(nacc::tflite_relu_params(k, input_scale, input_zero_point,
                                                        output_scale, output_zero_point));
      },
      py::arg("input_scale"), py::arg("input_zero_point"), py::arg("output_scale"),
      py::arg("output_zero_point"), py::arg("kind") = "RELU",
      "Register values reproducing TFLite's int8 RELU / RELU6 / RELU_N1_TO_1 op, as a dict "
      "for activation(x, **d).");

  m.def(
      "lut_tflite_logistic",
      [](float input_scale, int32_t input_zero_point, float output_scale,
         int32_t output_zero_point) {
        return lut_array(nacc::lut_tflite_logistic(input_scale, input_zero_point, output_scale,
                                                   output_zero_point));
      },
      py::arg("input_scale"), py::arg("input_zero_point"), py::arg("output_scale") = 1.0 / 256,
      py::arg("output_zero_point") = -128,
      "The 256-entry int8 table (entry i = output for input (int8)i) equal to TFLite 2.21's "
      "int8 LOGISTIC (BUILTIN_REF) for these quantization parameters.");
  m.def(
      "lut_tflite_tanh",
      [](float input_scale, int32_t input_zero_point, float output_scale,
         int32_t output_zero_point) {
        return lut_array(nacc::lut_tflite_tanh(input_scale, input_zero_point, output_scale,
                                               output_zero_point));
      },
      py::arg("input_scale"), py::arg("input_zero_point"), py::arg("output_scale") = 1.0 / 128,
      py::arg("output_zero_point") = 0,
      "The 256-entry int8 table equal to TFLite 2.21's int8 TANH (BUILTIN_REF).");
  m.def(
      "lut_tflite_hard_swish",
      [](float input_scale, int32_t input_zero_point, float output_scale,
         int32_t output_zero_point) {
        return lut_array(nacc::lut_tflite_hard_swish(input_scale, input_zero_point, output_scale,
                                                     output_zero_point));
      },
      py::arg("input_scale"), py::arg("input_zero_point"), py::arg("output_scale"),
      py::arg("output_zero_point"),
      "The 256-entry int8 table equal to TFLite 2.21's reference int8 HARD_SWISH "
      "(BUILTIN_REF); ValueError where TFLite rejects the quantization (input_scale / "
      "output_scale >= 128) or its arithmetic cannot evaluate it.");
  m.def(
      "lut_tflite_leaky_relu",
      [](float input_scale, int32_t input_zero_point, float output_scale,
         int32_t output_zero_point, float alpha) {
        return lut_array(nacc::lut_tflite_leaky_relu(input_scale, input_zero_point, output_scale,
                                                     output_zero_point, alpha));
      },
      py::arg("input_scale"), py::arg("input_zero_point"), py::arg("output_scale"),
      py::arg("output_zero_point"), py::arg("alpha"),
      "The 256-entry int8 table equal to TFLite 2.21's reference int8 LEAKY_RELU (any finite "
      "alpha, including 0, negative and > 1).");
  m.def(
      "lut_tflite_requantize",
      [](float input_scale, int32_t input_zero_point, float output_scale,
         int32_t output_zero_point) {
        return lut_array(nacc::lut_tflite_requantize(input_scale, input_zero_point, output_scale,
                                                     output_zero_point));
      },
      py::arg("input_scale"), py::arg("input_zero_point"), py::arg("output_scale"),
      py::arg("output_zero_point"),
      "The 256-entry int8 table equal to TFLite 2.21's reference int8 -> int8 QUANTIZE "
      "(Requantize).");
}

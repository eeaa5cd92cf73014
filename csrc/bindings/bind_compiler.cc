// Bindings of the compiler: nacc._core.compile(graph, cores=..., sram_kb=...)
// -> Program, plan_op (the tile plan of one op, for reports and golden tests)
// and program_info (a Program as plain Python data, independent of how the
// Program class itself is bound).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "bindings/binding.h"
#include "compiler/compiler.h"
#include "compiler/lower.h"

namespace py = pybind11;
using namespace py::literals;

namespace {

int parse_mode(const std::optional<std::string>& mode) {
  if (!mode) return -1;
  if (*mode == "NONE") return 0;
  if (*mode == "SPLIT_KERNEL") return 1;
  if (*mode == "SPLIT_HEIGHT") return 2;
  if (*mode == "SPLIT_2D") return 3;
  throw py::value_error(nacc::str_cat("force_mode '", *mode,
                                      "' is not NONE, SPLIT_KERNEL, SPLIT_HEIGHT or SPLIT_2D"));
}

nacc::CompileOptions make_options(int cores, std::optional<int64_t> sram_kb,
                                  std::optional<int64_t> sram_bytes, int ext_bytes_per_cycle,
                                  int dma_bytes_per_cycle, bool double_buffer, int force_cores,
                                  const std::optional<std::string>& force_mode,
                                  const std::string& conv_lowering) {
  if (sram_kb && sram_bytes) {
    throw py::value_error("compile: give sram_kb or sram_bytes, not both");
  }
  nacc::CompileOptions o;
  o.hw.cores = cores;
  o.hw.sram_bytes = sram_bytes ? *sram_bytes : sram_kb ? *sram_kb * 1024 : o.hw.sram_bytes;
  o.hw.ext_bytes_per_cycle = ext_bytes_per_cycle;
  o.hw.dma_bytes_per_cycle = dma_bytes_per_cycle;
  o.double_buffer = double_buffer;
  o.force_cores = force_cores;
  o.force_mode = parse_mode(force_mode);
  o.conv_lowering = nacc::compiler::parse_conv_lowering(conv_lowering);
  return o;
}

py::list spans(const std::vector<nacc::compiler::Span>& v) {
  py::list out;
  for (const auto& s : v) out.append(py::make_tuple(s.start, s.size));
  return out;
}

py::dict plan_dict(const nacc::compiler::TilePlan& p) {
  const auto& l = p.layout;
  py::dict layout("ifm"_a = py::make_tuple(l.ifm[0], l.ifm[1]),
                  "temp"_a = py::make_tuple(l.temp[0], l.temp[1]),
                  "ofm"_a = py::make_tuple(l.ofm[0], l.ofm[1]),
                  "k"_a = py::make_tuple(l.k[0], l.k[1]), "ifm_bytes"_a = l.ifm_bytes,
                  "temp_bytes"_a = l.temp_bytes, "ofm_bytes"_a = l.ofm_bytes,
                  "k_bytes"_a = l.k_bytes, "end"_a = l.end);
  py::dict est("cycles"_a = p.estimate.cycles, "read_bytes"_a = p.estimate.read_bytes,
               "write_bytes"_a = p.estimate.write_bytes, "commands"_a = p.estimate.commands);
  return py::dict("cores"_a = p.cores, "mode"_a = nacc::compiler::broadcast_mode_name(p.mode),
                  "weights_outer"_a = p.weights_outer, "double_buffer"_a = p.double_buffer,
                  "k_per_set"_a = p.k_per_set,
                  "rows_per_core"_a = p.rows_per_core, "cols"_a = p.cols,
                  "channels_per_core"_a = p.channels_per_core, "groups2d"_a = p.groups2d,
                  "row_pieces"_a = spans(p.row_pieces),
                  "col_pieces"_a = spans(p.col_pieces), "groups"_a = spans(p.groups),
                  "layout"_a = layout, "estimate"_a = est, "describe"_a = p.describe(),
                  "lowering"_a = p.lowering);
}

const char* region_kind_label(nacc::RegionKind k) {
  switch (k) {
    case nacc::RegionKind::kUnused: return "unused";
    case nacc::RegionKind::kConstant: return "constant";
    case nacc::RegionKind::kInput: return "input";
    case nacc::RegionKind::kOutput: return "output";
    case nacc::RegionKind::kScratch: return "scratch";
  }
  return "?";
}

py::list io_list(const std::vector<nacc::IoTensor>& v) {
  py::list out;
  for (const auto& t : v) {
    out.append(py::dict("name"_a = t.name, "shape"_a = t.shape, "region"_a = t.region,
                        "offset"_a = t.offset, "size"_a = t.size, "scale"_a = t.scale, "zero_point"_a = t.zero_point));
  }
  return out;
}

py::dict program_info(const nacc::Program& p) {
  py::array_t<uint32_t> words(p.commands.size());
  std::copy(p.commands.begin(), p.commands.end(), words.mutable_data());
  py::list regions;
  for (const auto& r : p.regions) {
    regions.append(py::dict("kind"_a = region_kind_label(r.kind), "io_index"_a = r.io_index,
                            "size"_a = r.size));
  }
  py::list ops;
  for (const auto& o : p.ops) {
    ops.append(py::dict("name"_a = o.name, "kind"_a = o.kind, "first_word"_a = o.first_word,
                        "end_word"_a = o.end_word, "macs"_a = o.macs,
                        "bound_cycles"_a = o.bound_cycles, "weight_bytes"_a = o.weight_bytes,
                        "weight_bytes_stored"_a = o.weight_bytes_stored,
                        "min_dma_bytes"_a = o.min_dma_bytes, "output_name"_a = o.output_name,
                        "output_shape"_a = o.output_shape, "output_region"_a = o.output_region,
                        "output_offset"_a = o.output_offset, "output_size"_a = o.output_size, "lowering"_a = o.lowering));
  }
  py::dict hw("cores"_a = p.hw.cores, "sram_bytes"_a = p.hw.sram_bytes,
              "dma_bytes_per_cycle"_a = p.hw.dma_bytes_per_cycle,
              "ext_bytes_per_cycle"_a = p.hw.ext_bytes_per_cycle);
  return py::dict("commands"_a = words,
                  "constants"_a = py::bytes(reinterpret_cast<const char*>(p.constants.data()),
                                            p.constants.size()),
                  "regions"_a = regions, "inputs"_a = io_list(p.inputs),
                  "outputs"_a = io_list(p.outputs), "ops"_a = ops, "hw"_a = hw,
                  "images"_a = p.images);
}

}  // namespace

NACC_BINDINGS(compiler) {
  m.def(
      "compile",
      [](const nacc::ir::Graph& graph, int cores, std::optional<int64_t> sram_kb,
         std::optional<int64_t> sram_bytes, int ext_bytes_per_cycle, int dma_bytes_per_cycle,
         bool double_buffer, int force_cores, const std::optional<std::string>& force_mode,
         const std::string& conv_lowering, const std::string& layout_lowering) {
        auto o = make_options(cores, sram_kb, sram_bytes, ext_bytes_per_cycle,
                              dma_bytes_per_cycle, double_buffer, force_cores, force_mode,
                              conv_lowering);
        using LL = nacc::CompileOptions::LayoutLowering;
        if (layout_lowering == "auto") {
          o.layout_lowering = LL::kAuto;
        } else if (layout_lowering == "vnchwconv") {
          o.layout_lowering = LL::kUnit;
        } else if (layout_lowering == "transpose_copy") {
          o.layout_lowering = LL::kCopy;
        } else {
          throw py::value_error(nacc::str_cat("layout_lowering '", layout_lowering,
                                              "' is not auto, vnchwconv or transpose_copy"));
        }
        py::gil_scoped_release release;
        return nacc::compile(graph, o);
      },
      py::arg("graph"), py::kw_only(), py::arg("cores") = 1, py::arg("sram_kb") = py::none(),
      py::arg("sram_bytes") = py::none(), py::arg("ext_bytes_per_cycle") = 64,
      py::arg("dma_bytes_per_cycle") = 16, py::arg("double_buffer") = true,
      py::arg("force_cores") = 0, py::arg("force_mode") = py::none(),
      py::arg("conv_lowering") = "auto", py::arg("layout_lowering") = "auto",
      "Compiles a partition (every op of `graph`, in order; its inputs/outputs become the "
      "Program's I/O regions) for `cores` cores (1..32, a power of two) with `sram_kb` KB (or "
      "`sram_bytes`, a multiple of 1024; default 64 KB) of SRAM per core. Raises "
      "nacc.UnsupportedError naming an op it cannot compile exactly, ValueError for bad "
      "arguments. force_cores / force_mode ('NONE', 'SPLIT_KERNEL', 'SPLIT_HEIGHT') restrict "
      "the tile search (tests); conv_lowering ('auto', 'direct', 'matrix', 'im2col') the CONV_2D "
      "lowering (auto: the cheapest by the planner's estimate; the others where they apply); "
      "layout_lowering ('auto', 'vnchwconv', 'transpose_copy') an NCHW <-> NHWC TRANSPOSE's "
      "(auto: the cheaper by the compiler's estimate; vnchwconv where the layout unit applies).");
  m.def(
      "plan_op",
      [](const nacc::ir::Graph& graph, int op_index, int cores, std::optional<int64_t> sram_kb,
         std::optional<int64_t> sram_bytes, int ext_bytes_per_cycle, int dma_bytes_per_cycle,
         bool double_buffer, int force_cores, const std::optional<std::string>& force_mode,
         const std::string& conv_lowering) {
        const auto o = make_options(cores, sram_kb, sram_bytes, ext_bytes_per_cycle,
                                    dma_bytes_per_cycle, double_buffer, force_cores, force_mode,
                                    conv_lowering);
        return plan_dict(nacc::plan_op(graph, op_index, o));
      },
      py::arg("graph"), py::arg("op_index"), py::kw_only(), py::arg("cores") = 1,
      py::arg("sram_kb") = py::none(), py::arg("sram_bytes") = py::none(),
      py::arg("ext_bytes_per_cycle") = 64, py::arg("dma_bytes_per_cycle") = 16,
      py::arg("double_buffer") = true, py::arg("force_cores") = 0,
      py::arg("force_mode") = py::none(), py::arg("conv_lowering") = "auto",
      "The tile plan compile() would choose for one op, as a dict: cores, mode, weights_outer, "
      "double_buffer, rows_per_core, cols, channels_per_core, row_pieces / col_pieces / groups "
      "((start, size) lists), layout (SRAM byte offsets of one core), estimate, lowering (CONV_2D: direct, matrix or "
      "im2col).");
  m.def("program_info", &program_info, py::arg("program"),
        "A Program as plain data: commands (np.uint32), constants (bytes), regions, inputs, "
        "outputs, ops (records), hw.");
}

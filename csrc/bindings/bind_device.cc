// Bindings of the device model and the runtime: nacc._core.HwConfig, Program
// (bytes round trip, fields, builders for tests), Runtime (run a Program on
// numpy arrays) and the lower-level Device (bind buffers, registers, step).
// Long-running calls release the GIL.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "arch/command_stream.h"
#include "bindings/binding.h"
#include "device/device.h"
#include "runtime/program.h"
#include "runtime/runtime.h"

namespace py = pybind11;

namespace {

using nacc::Device;
using nacc::HwConfig;
using nacc::Program;
using nacc::Runtime;
using Key = std::variant<std::string, int64_t>;

uint32_t checked_u32(int64_t v, const char* what) {
  nacc::check_arg(v >= 0 && v <= int64_t(0xFFFFFFFFu), what, " ", v,
                  " out of range [0, 4294967295]");
  return uint32_t(v);
}

// A register address from a name or a raw byte address (a raw address may
// name no register: the device then raises DeviceFault, as hardware would).
uint32_t address_of(const Key& key) {
  if (const auto* name = std::get_if<std::string>(&key)) {
    return nacc::describe(nacc::register_by_name(*name)).offset;
  }
  return checked_u32(std::get<int64_t>(key), "register address");
}

HwConfig make_hw(int cores, int64_t sram_kb, int ext_bytes_per_cycle, int dma_bytes_per_cycle) {
  // Checked in KB before the multiplication (which could overflow), with the
  // same bounds validate_hw_config applies to the bytes.
  nacc::check_arg(sram_kb >= nacc::kMinSramBytes / 1024 && sram_kb <= nacc::kMaxSramBytes / 1024,
                  "sram_kb ", sram_kb, " out of range [", nacc::kMinSramBytes / 1024, ", ",
                  nacc::kMaxSramBytes / 1024, "]");
  HwConfig hw;
  hw.cores = cores;
  hw.sram_bytes = sram_kb * 1024;
  hw.ext_bytes_per_cycle = ext_bytes_per_cycle;
  hw.dma_bytes_per_cycle = dma_bytes_per_cycle;
  nacc::validate_hw_config(hw);
  return hw;
}

py::dict hw_dict(const HwConfig& hw) {
  py::dict d;
  d["cores"] = hw.cores;
  d["sram_bytes"] = hw.sram_bytes;
  d["dma_bytes_per_cycle"] = hw.dma_bytes_per_cycle;
  d["ext_bytes_per_cycle"] = hw.ext_bytes_per_cycle;
  return d;
}

py::dict io_dict(const nacc::IoTensor& t) {
  py::dict d;
  d["name"] = t.name;
  d["shape"] = py::tuple(py::cast(t.shape));
  d["region"] = t.region;
  d["offset"] = t.offset;
  d["size"] = t.size;
  d["scale"] = t.scale;
  d["zero_point"] = t.zero_point;
  return d;
}

// Per-core counters as dicts; the run's cores and an op's cores have the same fields.
template <class Cores>
py::list core_list(const Cores& cores) {
  py::list out;
  for (const auto& c : cores) {
    py::dict cd;
    cd["dma_read_bytes"] = c.dma_read_bytes;
    cd["dma_write_bytes"] = c.dma_write_bytes;
    cd["mac_cycles"] = c.mac_cycles;
    cd["act_cycles"] = c.act_cycles;
    cd["stall_cycles"] = c.stall_cycles;
    cd["busy_cycles"] = c.busy_cycles;
    cd["macs"] = c.macs;
    cd["sram_high_water"] = c.sram_high_water;
    cd["kernels"] = c.kernels;
    out.append(cd);
  }
  return out;
}

py::dict stats_dict(const nacc::RunCounters& r, int handler, bool timeline) {
  py::dict d;
  d["handler"] = handler;
  d["cycles"] = r.cycles;
  d["macs"] = r.macs;
  d["dma_read_bytes"] = r.dma_read_bytes;
  d["dma_write_bytes"] = r.dma_write_bytes;
  d["commands"] = r.commands;
  d["kernels"] = r.kernels;
  d["dma_ops"] = r.dma_ops;
  d["mac_cycles"] = r.mac_cycles;
  d["act_cycles"] = r.act_cycles;
  d["stall_cycles"] = r.stall_cycles;
  d["sram_high_water"] = r.sram_high_water;
  d["cores"] = core_list(r.cores);
  if (timeline) {
    py::list tl;
    for (const auto& rec : r.timeline) {
      py::dict t;
      t["word"] = rec.word;
      t["opcode"] = nacc::opcode_name(rec.op);
      t["issue"] = rec.issue;
      t["start"] = rec.start;
      t["end"] = rec.end;
      t["ext_read_bytes"] = rec.ext_read_bytes;
      t["ext_write_bytes"] = rec.ext_write_bytes;
      t["macs"] = rec.macs;
      py::list spans;
      for (const auto& s : rec.cores) {
        py::dict sd;
        sd["core"] = s.core;
        sd["read_start"] = s.read_start;
        sd["read_end"] = s.read_end;
        sd["compute_start"] = s.compute_start;
        sd["compute_end"] = s.compute_end;
        sd["write_start"] = s.write_start;
        sd["write_end"] = s.write_end;
        sd["read_bytes"] = s.read_bytes;
        sd["write_bytes"] = s.write_bytes;
        sd["mac_cycles"] = s.mac_cycles;
        sd["act_cycles"] = s.act_cycles;
        sd["stall_cycles"] = s.stall_cycles;
        sd["macs"] = s.macs;
        sd["sram_high"] = s.sram_high;
        spans.append(sd);
      }
      t["cores"] = spans;
      tl.append(t);
    }
    d["timeline"] = tl;
  }
  return d;
}

// One OpCounters entry (runtime/op_counters.h) as a dict.
py::dict op_dict(const nacc::OpCounters& o) {
  py::dict d;
  d["op"] = o.op;
  d["name"] = o.name;
  d["kind"] = o.kind;
  d["start"] = o.start;
  d["end"] = o.end;
  d["cycles"] = o.cycles;
  d["commands"] = o.commands;
  d["kernels"] = o.kernels;
  d["dma_ops"] = o.dma_ops;
  d["macs"] = o.macs;
  d["mac_cycles"] = o.mac_cycles;
  d["act_cycles"] = o.act_cycles;
  d["stall_cycles"] = o.stall_cycles;
  d["busy_cycles"] = o.busy_cycles;
  d["dma_read_bytes"] = o.dma_read_bytes;
  d["dma_write_bytes"] = o.dma_write_bytes;
  d["sram_high_water"] = o.sram_high_water;
  d["bound_cycles"] = o.bound_cycles;
  d["min_dma_bytes"] = o.min_dma_bytes;
  d["output_shape"] = o.output_shape;
  d["cores"] = core_list(o.cores);
  return d;
}

std::vector<uint8_t> bytes_of(const py::object& data) {
  if (py::isinstance<py::bytes>(data) || py::isinstance<py::bytearray>(data)) {
    const std::string s = py::isinstance<py::bytes>(data) ? std::string(py::bytes(data))
                                                          : std::string(py::str(py::bytes(data)));
    return std::vector<uint8_t>(s.begin(), s.end());
  }
  const py::array arr = py::array::ensure(data);
  nacc::check_arg(arr && arr.itemsize() == 1, "expected bytes or a 1-byte numpy array (uint8/int8)");
  const py::array c = py::array::ensure(arr, py::array::c_style);
  const auto* p = static_cast<const uint8_t*>(c.data());
  return std::vector<uint8_t>(p, p + c.size());
}

// The Python-facing Device: keeps every bound numpy array alive while bound.
struct PyDevice {
  std::unique_ptr<Device> dev;
  std::map<uint64_t, py::object> arrays;
};

void bind_hw(py::module_& m) {
  py::class_<HwConfig>(m, "HwConfig", "Hardware a Program is compiled for (NACC_SPEC §1, §3, §4, §8).")
      .def(py::init([](int cores, int64_t sram_kb, int ext_bytes_per_cycle, int dma_bytes_per_cycle) {
             return make_hw(cores, sram_kb, ext_bytes_per_cycle, dma_bytes_per_cycle);
           }),
           py::kw_only(), py::arg("cores") = 1, py::arg("sram_kb") = 64,
           py::arg("ext_bytes_per_cycle") = 64, py::arg("dma_bytes_per_cycle") = 16)
      .def_readonly("cores", &HwConfig::cores)
      .def_readonly("sram_bytes", &HwConfig::sram_bytes)
      .def_readonly("dma_bytes_per_cycle", &HwConfig::dma_bytes_per_cycle)
      .def_readonly("ext_bytes_per_cycle", &HwConfig::ext_bytes_per_cycle)
      .def("as_dict", &hw_dict)
      .def("__repr__", [](const HwConfig& hw) {
        return nacc::str_cat("HwConfig(cores=", hw.cores, ", sram_kb=", hw.sram_bytes / 1024,
                             ", ext_bytes_per_cycle=", hw.ext_bytes_per_cycle,
                             ", dma_bytes_per_cycle=", hw.dma_bytes_per_cycle, ")");
      });
}

void bind_program(py::module_& m) {
  py::class_<Program>(m, "Program",
                      "A compiled program: command stream, constants, regions, I/O tensors, op "
                      "records, hardware configuration. Built by the compiler, or by hand in tests "
                      "(setters below); to_bytes / from_bytes round-trip the container format "
                      "(docs/command_stream.md §9).")
      .def(py::init<>())
      .def_static(
          "from_bytes",
          [](const py::bytes& b) {
            const std::string s = b;
            return Program::deserialize(reinterpret_cast<const uint8_t*>(s.data()), s.size());
          },
          py::arg("data"), "Loads and validates; ValueError 'program: ...' on any defect.")
      .def("to_bytes",
           [](const Program& p) {
             const auto v = p.serialize();
             return py::bytes(reinterpret_cast<const char*>(v.data()), v.size());
           })
      .def("validate", &Program::validate, "ValueError naming the first inconsistency.")
      .def_property(
          "hw", [](const Program& p) { return p.hw; },
          [](Program& p, const HwConfig& hw) { p.hw = hw; })
      .def_property(
          "commands",
          [](const Program& p) {
            py::array_t<uint32_t> out(py::ssize_t(p.commands.size()));
            std::copy(p.commands.begin(), p.commands.end(), out.mutable_data());
            return out;
          },
          [](Program& p, const py::array& words) {
            auto a = nacc::bindings::checked_array<uint32_t>(words, "commands", 1);
            p.commands.assign(a.data(), a.data() + a.size());
          },
          "The command stream as np.uint32 (a copy).")
      .def_property(
          "constants",
          [](const Program& p) {
            py::array_t<uint8_t> out(py::ssize_t(p.constants.size()));
            std::copy(p.constants.begin(), p.constants.end(), out.mutable_data());
            return out;
          },
          [](Program& p, const py::object& data) { p.constants = bytes_of(data); },
          "The constant region's bytes as np.uint8 (a copy); set from bytes or a uint8/int8 array.")
      .def_property_readonly(
          "regions",
          [](const Program& p) {
            py::list out;
            for (size_t i = 0; i < p.regions.size(); ++i) {
              py::dict d;
              d["index"] = int(i);
              d["kind"] = nacc::region_kind_name(p.regions[i].kind);
              d["size"] = p.regions[i].size;
              d["io_index"] = p.regions[i].io_index;
              out.append(d);
            }
            return out;
          })
      .def(
          "set_region",
          [](Program& p, int index, const std::string& kind, int64_t size, int io_index) {
            nacc::check_arg(index >= 0 && index < nacc::limits::kNumRegions, "region ", index,
                            " out of range [0, 7]");
            p.regions[size_t(index)] = nacc::RegionDesc{nacc::region_kind_by_name(kind), io_index, size};
          },
          py::arg("index"), py::arg("kind"), py::arg("size") = 0, py::arg("io_index") = -1)
      .def_property_readonly("inputs",
                             [](const Program& p) {
                               py::list out;
                               for (const auto& t : p.inputs) out.append(io_dict(t));
                               return out;
                             })
      .def_property_readonly("outputs",
                             [](const Program& p) {
                               py::list out;
                               for (const auto& t : p.outputs) out.append(io_dict(t));
                               return out;
                             })
      .def(
          "add_input",
          [](Program& p, const std::string& name, const std::vector<int64_t>& shape, int region,
             float scale, int32_t zero_point) {
            nacc::check_arg(region >= 0 && region < nacc::limits::kNumRegions, "region ", region,
                            " out of range [0, 7]");
            int64_t size = 1;
            for (int64_t d : shape) size *= d;
            p.inputs.push_back(nacc::IoTensor{name, shape, region, size, scale, zero_point});
            p.regions[size_t(region)] =
                nacc::RegionDesc{nacc::RegionKind::kInput, int(p.inputs.size() - 1), size};
            return int(p.inputs.size() - 1);
          },
          py::arg("name"), py::arg("shape"), py::arg("region"), py::arg("scale") = 0.0f,
          py::arg("zero_point") = 0, "Adds an int8 input in its own region (also sets the region).")
      .def(
          "add_output",
          [](Program& p, const std::string& name, const std::vector<int64_t>& shape, int region,
             float scale, int32_t zero_point) {
            nacc::check_arg(region >= 0 && region < nacc::limits::kNumRegions, "region ", region,
                            " out of range [0, 7]");
            int64_t size = 1;
            for (int64_t d : shape) size *= d;
            p.outputs.push_back(nacc::IoTensor{name, shape, region, size, scale, zero_point});
            p.regions[size_t(region)] =
                nacc::RegionDesc{nacc::RegionKind::kOutput, int(p.outputs.size() - 1), size};
            return int(p.outputs.size() - 1);
          },
          py::arg("name"), py::arg("shape"), py::arg("region"), py::arg("scale") = 0.0f,
          py::arg("zero_point") = 0, "Adds an int8 output in its own region (also sets the region).")
      .def_property_readonly("ops",
                             [](const Program& p) {
                               py::list out;
                               for (const auto& o : p.ops) {
                                 py::dict d;
                                 d["name"] = o.name;
                                 d["kind"] = o.kind;
                                 d["first_word"] = o.first_word;
                                 d["end_word"] = o.end_word;
                                 d["macs"] = o.macs;
                                 d["bound_cycles"] = o.bound_cycles;
                                 d["weight_bytes"] = o.weight_bytes;
                                 d["weight_bytes_stored"] = o.weight_bytes_stored;
                                 d["min_dma_bytes"] = o.min_dma_bytes;
                                 d["output_name"] = o.output_name;
                                 d["output_shape"] = py::tuple(py::cast(o.output_shape));
                                 d["output_region"] = o.output_region;
                                 d["output_offset"] = o.output_offset;
                                 d["output_size"] = o.output_size;
                                 d["lowering"] = o.lowering;
                                 out.append(d);
                               }
                               return out;
                             })
      .def(
          "add_op",
          [](Program& p, const std::string& name, const std::string& kind, uint32_t first_word,
             uint32_t end_word, int64_t macs, int64_t bound_cycles, int64_t weight_bytes,
             int64_t weight_bytes_stored, int64_t min_dma_bytes, const std::string& lowering) {
            nacc::OpRecord o;
            o.name = name;
            o.kind = kind;
            o.first_word = first_word;
            o.end_word = end_word;
            o.macs = macs;
            o.bound_cycles = bound_cycles;
            o.weight_bytes = weight_bytes;
            o.weight_bytes_stored = weight_bytes_stored;
            o.min_dma_bytes = min_dma_bytes;
            o.lowering = lowering;
            p.ops.push_back(std::move(o));
          },
          py::arg("name"), py::arg("kind"), py::arg("first_word"), py::arg("end_word"),
          py::arg("macs") = 0, py::arg("bound_cycles") = 0, py::arg("weight_bytes") = 0,
          py::arg("weight_bytes_stored") = 0, py::arg("min_dma_bytes") = 0,
          py::arg("lowering") = "")
      .def(
          "disassemble",
          [](const Program& p, bool best_effort) {
            return nacc::disassemble(p.commands.data(), p.commands.size(), best_effort);
          },
          py::arg("best_effort") = false, "Listing of the command stream (docs/command_stream.md §8).");
}

// Runs `p` on int8 arrays: `loaded` (a Program Runtime::load returned, p == *loaded)
// replays its plan; null: as Runtime.run (a fresh copy loaded per call).
py::tuple run_arrays(Runtime& rt, const Program& p, const std::shared_ptr<const Program>& loaded,
                     const py::sequence& inputs, bool timeline) {
  nacc::check_arg(py::len(inputs) == p.inputs.size(), "run: ", py::len(inputs),
                  " inputs given, the program has ", p.inputs.size());
  std::vector<py::array_t<int8_t, py::array::c_style>> in_arrays;
  std::vector<nacc::InputBuffer> in_bufs;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const std::string what = nacc::str_cat("input ", i, " '", p.inputs[i].name, "'");
    auto a = nacc::bindings::checked_array<int8_t>(py::array::ensure(inputs[i]), what.c_str());
    nacc::check_arg(a.size() == p.images * p.inputs[i].size, what, ": ", a.size(),
                    " elements, the program expects ", p.images * p.inputs[i].size);
    in_bufs.push_back({a.data(), size_t(a.size())});
    in_arrays.push_back(std::move(a));
  }
  std::vector<py::array> out_arrays;
  std::vector<nacc::OutputBuffer> out_bufs;
  for (const auto& t : p.outputs) {
    // int8, or int16 (16x8 maps: 2 bytes an element, NACC_SPEC §9).
    std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
    int64_t elems = 1;
    for (int64_t d : t.shape) elems *= d;
    const bool wide = t.size == 2 * elems;
    if (!shape.empty()) shape[0] *= p.images;  // a batch: every image's output
    const size_t bytes = size_t(p.images * t.size);
    py::array a = wide ? py::array(py::array_t<int16_t>(shape)) : py::array(py::array_t<int8_t>(shape));
    auto* data = static_cast<int8_t*>(a.mutable_data());
    std::fill(data, data + bytes, int8_t(0));
    out_bufs.push_back({data, bytes});
    out_arrays.push_back(std::move(a));
  }
  nacc::RunStats stats;
  {
    py::gil_scoped_release release;
    if (loaded) {
      stats = rt.run(*loaded, in_bufs, out_bufs, true, timeline);
    } else if (rt.execution_mode() == nacc::ExecutionMode::kReplay) {
      // A Python Program can change between calls: each call loads
      // a copy, which builds its plan, and replays that
      // (Runtime.load keeps one loaded copy for many runs).
      const std::shared_ptr<const Program> copy = rt.load(p);
      stats = rt.run(*copy, in_bufs, out_bufs, true, timeline);
    } else {
      stats = rt.run(p, in_bufs, out_bufs, false, timeline);
    }
  }
  py::list outs;
  for (auto& a : out_arrays) outs.append(a);
  py::dict sd = stats_dict(stats.counters, stats.handler, timeline);
  sd["replayed"] = stats.replayed;
  py::list ops;
  if (stats.ops) {
    for (const auto& o : *stats.ops) ops.append(op_dict(o));
  }
  sd["ops"] = ops;
  return py::make_tuple(outs, sd);
}

// A Program loaded once into a Runtime (Runtime.load): its plan is built
// once and replayed by every run.
struct LoadedProgram {
  Runtime* rt;
  std::shared_ptr<const Program> program;
};

py::dict plan_dict(Runtime& rt, const Program& loaded) {
  std::string why;
  auto plan = rt.plan_of(loaded, &why);
  py::dict d;
  if (!plan) {
    d["plan"] = false;
    d["why"] = why;
    return d;
  }
  const auto s = plan->summary();
  d["plan"] = true;
  d["kernel_commands"] = s.kernel_commands;
  d["layer_calls"] = s.layer_calls;
  d["tile_calls"] = s.tile_calls;
  d["copies"] = s.copies;
  d["layout_ops"] = s.layout_ops;
  d["copy_pass_commands"] = s.copy_pass_commands;
  d["strided_copies"] = s.strided_copies;
  d["merged_commands"] = s.merged_commands;
  d["row_split_calls"] = s.row_split_calls;
  d["channel_split_calls"] = s.channel_split_calls;
  d["parallel_tile_steps"] = s.parallel_tile_steps;
  return d;
}

void bind_runtime(py::module_& m) {
  py::class_<Runtime>(m, "Runtime",
                      "The driver: runs Programs on a simulated device, one batch handler per "
                      "run; thread-safe (runs beyond 12 concurrent ones wait for a handler).")
      .def(py::init([](int cores, int64_t sram_kb, int threads, int ext_bytes_per_cycle,
                       int dma_bytes_per_cycle, const std::string& execution) {
             auto rt = std::make_unique<Runtime>(
                 make_hw(cores, sram_kb, ext_bytes_per_cycle, dma_bytes_per_cycle), threads);
             if (execution == "step") {
               rt->set_execution_mode(nacc::ExecutionMode::kStep);
             } else if (execution != "replay") {
               throw py::value_error("Runtime: execution must be 'replay' or 'step', got '" +
                                     execution + "'");
             }
             return rt;
           }),
           py::kw_only(), py::arg("cores") = 1, py::arg("sram_kb") = 64, py::arg("threads") = 1,
           py::arg("ext_bytes_per_cycle") = 64, py::arg("dma_bytes_per_cycle") = 16,
           py::arg("execution") = "replay",
           "execution: 'replay' (the Program's execution plan, built when it is first run; the "
           "product's mode) or 'step' (the reference interpreter, command by command).")
      .def_property_readonly("execution", [](const Runtime& rt) {
        return rt.execution_mode() == nacc::ExecutionMode::kStep ? "step" : "replay";
      })
      .def(
          "plan_summary",
          [](Runtime& rt, const Program& p) {
            std::shared_ptr<const Program> loaded;
            {
              py::gil_scoped_release release;
              loaded = rt.load(p);
            }
            return plan_dict(rt, *loaded);
          },
          py::arg("program"),
          "Loads a copy of the program and describes its execution plan: host kernel calls per "
          "run (merged layers, single tiles, copies), or why it has none.")
      .def(
          "load",
          [](Runtime& rt, const Program& p) {
            LoadedProgram l{&rt, nullptr};
            {
              py::gil_scoped_release release;
              l.program = rt.load(p);
            }
            return l;
          },
          py::arg("program"), py::keep_alive<0, 1>(),
          "Validates the program and loads an immutable copy of it, its execution plan built "
          "once: LoadedProgram.run replays it without rebuilding (Runtime.run loads a fresh copy "
          "on every call, since a Program can change between calls). The copy does not follow "
          "later changes to `program`.")
      .def_property_readonly("hw", &Runtime::hw)
      .def_property_readonly("threads", [](Runtime& rt) { return rt.device().host_threads(); })
      .def(
          "set_parallel_min_macs",
          [](Runtime& rt, int64_t macs) { rt.device().set_parallel_min_macs(macs); },
          py::arg("macs"), "Work (MACs) of one command above which its cores run on host threads.")
      .def(
          "check_program", [](const Runtime& rt, const Program& p) { rt.check_program(p); },
          py::arg("program"))
      .def(
          "run",
          [](Runtime& rt, const Program& p, const py::sequence& inputs, bool timeline) {
            return run_arrays(rt, p, nullptr, inputs, timeline);
          },
          py::arg("program"), py::arg("inputs"), py::arg("timeline") = true,
          "Runs the program on int8 arrays (one per program input, element counts checked); "
          "returns (list of output arrays, stats dict). The stats dict's 'ops' list holds the run "
          "cut per Program op (cycles = span of the op's commands, per-core busy, MAC cycles, DMA "
          "bytes, stalls, SRAM high water; a final op -1 entry for commands outside every op). "
          "nacc.DeviceFault on a device fault.");
  py::class_<LoadedProgram>(m, "LoadedProgram",
                            "A Program loaded into a Runtime (Runtime.load): runs replay the "
                            "plan built at load.")
      .def_property_readonly("program", [](const LoadedProgram& l) { return Program(*l.program); },
                             "A copy of the loaded Program.")
      .def(
          "run",
          [](LoadedProgram& l, const py::sequence& inputs, bool timeline) {
            return run_arrays(*l.rt, *l.program, l.program, inputs, timeline);
          },
          py::arg("inputs"), py::arg("timeline") = false,
          "As Runtime.run, on the loaded copy; timeline off by default (a copy of every "
          "command's record per run).")
      .def("plan_summary", [](LoadedProgram& l) { return plan_dict(*l.rt, *l.program); },
           "As Runtime.plan_summary, for the loaded copy.");
}

void bind_dev(py::module_& m) {
  py::class_<PyDevice>(m, "Device",
                       "The simulated device at register level, for tests: bind numpy buffers at "
                       "device addresses, read/write registers (by name or address), step a batch "
                       "handler command by command.")
      .def(py::init([](int cores, int64_t sram_kb, int threads, int ext_bytes_per_cycle,
                       int dma_bytes_per_cycle) {
             auto d = std::make_unique<PyDevice>();
             d->dev = std::make_unique<Device>(
                 make_hw(cores, sram_kb, ext_bytes_per_cycle, dma_bytes_per_cycle), threads);
             return d;
           }),
           py::kw_only(), py::arg("cores") = 1, py::arg("sram_kb") = 64, py::arg("threads") = 1,
           py::arg("ext_bytes_per_cycle") = 64, py::arg("dma_bytes_per_cycle") = 16)
      .def_property_readonly("hw", [](const PyDevice& d) { return d.dev->hw(); })
      .def(
          "set_parallel_min_macs",
          [](PyDevice& d, int64_t macs) { d.dev->set_parallel_min_macs(macs); }, py::arg("macs"))
      .def(
          "bind",
          [](PyDevice& d, uint64_t address, const py::array& array, bool readonly,
             const std::string& name) {
            nacc::check_arg(array.flags() & py::array::c_style, "bind: the array must be C-contiguous");
            nacc::check_arg(readonly || array.writeable(), "bind: the array is not writeable");
            void* data = const_cast<void*>(array.data());
            d.dev->bind_buffer(address, data, uint64_t(array.nbytes()), !readonly,
                               name.empty() ? nacc::str_cat("buffer@", address) : name);
            d.arrays[address] = array;
          },
          py::arg("address"), py::arg("array"), py::arg("readonly") = false, py::arg("name") = "",
          "Binds a C-contiguous numpy array's bytes at a device address (kept alive while bound).")
      .def(
          "unbind",
          [](PyDevice& d, uint64_t address) {
            d.dev->unbind_buffer(address);
            d.arrays.erase(address);
          },
          py::arg("address"))
      .def(
          "read_register", [](PyDevice& d, const Key& k) { return d.dev->read_register(address_of(k)); },
          py::arg("register"), "Host read by name or byte address (DeviceFault where none is).")
      .def(
          "write_register",
          [](PyDevice& d, const Key& k, int64_t value) {
            d.dev->write_register(address_of(k), checked_u32(value, "value"));
          },
          py::arg("register"), py::arg("value"))
      .def(
          "handler_register",
          [](PyDevice& d, int handler, const std::string& name) {
            return d.dev->handler_register(handler, nacc::register_by_name(name));
          },
          py::arg("handler"), py::arg("register"),
          "A batch handler's copy of a per-handler register (no selection).")
      .def(
          "start",
          [](PyDevice& d, int handler, uint64_t stream_address, uint64_t stream_bytes,
             const std::vector<uint64_t>& regions) {
            nacc::check_arg(regions.size() <= size_t(nacc::limits::kNumRegions),
                            "start: at most 8 region bases");
            nacc::check_arg(handler >= 0 && handler < nacc::limits::kNumBatchHandlers,
                            "start: handler ", handler, " out of range [0, 11]");
            std::vector<std::pair<uint32_t, uint32_t>> w;
            for (size_t i = 0; i < regions.size(); ++i) {
              w.emplace_back(nacc::describe(nacc::batch_addr_lo(handler, int(i))).offset,
                             uint32_t(regions[i]));
              w.emplace_back(nacc::describe(nacc::batch_addr_hi(handler, int(i))).offset,
                             uint32_t(regions[i] >> 32));
            }
            w.emplace_back(nacc::describe(nacc::Reg::INSTR_ADDR_L).offset, uint32_t(stream_address));
            w.emplace_back(nacc::describe(nacc::Reg::INSTR_ADDR_H).offset,
                           uint32_t(stream_address >> 32));
            w.emplace_back(nacc::describe(nacc::Reg::QSIZE).offset,
                           checked_u32(int64_t(stream_bytes), "stream_bytes"));
            w.emplace_back(nacc::describe(nacc::Reg::CMD).offset,
                           uint32_t(handler) << 4 | 0x3u);  // BATCH_HANDLER, CLEAR_IRQ, START
            d.dev->write_registers(w);
          },
          py::arg("handler"), py::arg("stream_address"), py::arg("stream_bytes"),
          py::arg("regions") = std::vector<uint64_t>{},
          "Writes BATCHb_ADDR0..n, INSTR_ADDR, QSIZE, then CMD (CLEAR_IRQ | START) for the handler.")
      .def(
          "step", [](PyDevice& d, int handler) { return d.dev->step(handler); },
          py::arg("handler"), py::call_guard<py::gil_scoped_release>(),
          "Executes one command; True while the handler still runs. nacc.DeviceFault on a fault.")
      .def(
          "run", [](PyDevice& d, int handler) { d.dev->run(handler); }, py::arg("handler"),
          py::call_guard<py::gil_scoped_release>(), "Steps to NPU_OP_STOP.")
      .def(
          "state",
          [](const PyDevice& d, int handler) {
            return std::string(nacc::handler_state_name(d.dev->state(handler)));
          },
          py::arg("handler"), "'idle', 'running', 'stopped' or 'faulted'.")
      .def(
          "fault_message", [](const PyDevice& d, int handler) { return d.dev->fault_message(handler); },
          py::arg("handler"))
      .def(
          "stats",
          [](const PyDevice& d, int handler, bool timeline) {
            const nacc::RunCounters rc = d.dev->counters(handler);
            return stats_dict(rc, handler, timeline);
          },
          py::arg("handler"), py::arg("timeline") = true, "Counters of the handler's last run.");
}

}  // namespace

NACC_BINDINGS(device) {
  bind_hw(m);
  bind_program(m);
  bind_runtime(m);
  bind_dev(m);
}

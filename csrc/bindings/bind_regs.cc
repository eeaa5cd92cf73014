// Bindings of the register map and the command-stream format: table
// introspection (for docs and tools), RegisterFile, the register-shadow
// Emitter, decode / encode / disassemble of command words (np.uint32 arrays).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "arch/command_stream.h"
#include "bindings/binding.h"
#include "compiler/emitter.h"
#include "device/register_file.h"

namespace py = pybind11;

namespace {

using nacc::Reg;
using Key = std::variant<std::string, int64_t>;  // a name, or a byte offset / opcode value

const char* access_name(nacc::Access a) {
  switch (a) {
    case nacc::Access::kRW: return "RW";
    case nacc::Access::kRO: return "RO";
    case nacc::Access::kW1C: return "W1C";
    case nacc::Access::kWO: return "WO";
  }
  return "?";
}

const char* bank_name(nacc::Bank b) {
  switch (b) {
    case nacc::Bank::kCompute: return "compute";
    case nacc::Bank::kCommand: return "command";
    case nacc::Bank::kBatch: return "batch";
  }
  return "?";
}

uint32_t checked_u32(int64_t v, const char* what) {
  nacc::check_arg(v >= 0 && v <= int64_t(0xFFFFFFFFu), what, " ", v,
                  " out of range [0, 4294967295]");
  return uint32_t(v);
}

uint16_t checked_param(int64_t v) {
  nacc::check_arg(v >= 0 && v <= 0xFFFF, "param ", v, " out of range [0, 65535]");
  return uint16_t(v);
}

// A register by name or byte offset; ValueError naming the offset otherwise.
Reg reg_of(const Key& key) {
  if (const auto* name = std::get_if<std::string>(&key)) return nacc::register_by_name(*name);
  const int64_t off = std::get<int64_t>(key);
  const bool in_map = off >= 0 && off < int64_t(nacc::kRegisterSpaceBytes);
  const int i = in_map ? nacc::register_index_at(uint32_t(off)) : -1;
  if (i < 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%04llX", static_cast<long long>(off));
    const uint32_t clamped = uint32_t(std::clamp<int64_t>(off, 0, 0xFFFFFFFF));
    throw nacc::InvalidArgument(nacc::str_cat("no register at offset ",
                                              off < 0 ? std::to_string(off) : std::string(buf),
                                              " (", nacc::describe_address(clamped), ")"));
  }
  return Reg(i);
}

nacc::Opcode opcode_of(const Key& key) {
  if (const auto* name = std::get_if<std::string>(&key)) return nacc::opcode_by_name(*name);
  const int64_t v = std::get<int64_t>(key);
  for (const auto& d : nacc::kOpcodes) {
    if (int64_t(d.op) == v) return d.op;
  }
  throw nacc::InvalidArgument(nacc::str_cat("unknown opcode value ", v));
}

py::dict register_dict(int i) {
  const nacc::RegisterDesc& r = nacc::kRegisters[i];
  py::list fields;
  for (int k = 0; k < r.num_fields; ++k) {
    const nacc::FieldDesc& f = r.fields[k];
    py::dict values;
    for (int v = 0; v < f.num_values; ++v) values[py::int_(f.values[v].value)] = f.values[v].name;
    py::dict fd;
    fd["name"] = f.name;
    fd["msb"] = int(f.msb);
    fd["lsb"] = int(f.lsb);
    fd["access"] = access_name(f.access);
    fd["reset"] = f.reset;
    fd["signed"] = f.is_signed;
    fd["values"] = values;
    fd["description"] = f.description;
    fields.append(fd);
  }
  py::dict d;
  d["name"] = r.name;
  d["offset"] = int(r.offset);
  d["bank"] = bank_name(r.bank);
  d["reset"] = nacc::kRegisterMasks[i].reset;
  d["stream_writable"] = bool(r.flags & nacc::kStreamWritable);
  d["region_address"] = bool(r.flags & nacc::kRegionAddress);
  d["project_defined"] = bool(r.flags & nacc::kProjectDefined);
  d["trigger"] = nacc::is_trigger_register(Reg(i));
  d["alias_of"] = r.alias_of >= 0 ? py::object(py::str(nacc::kRegisters[r.alias_of].name))
                                  : py::object(py::none());
  d["description"] = r.description;
  d["fields"] = fields;
  return d;
}

py::dict command_dict(const nacc::Command& c) {
  py::dict d;
  d["word"] = c.word;
  d["opcode"] = nacc::opcode_name(c.op);
  d["param"] = int(c.param);
  if (c.op == nacc::Opcode::NPU_SET_REGISTER) {
    d["payload"] = c.payload;
    d["register"] = nacc::kRegisters[nacc::register_index_at(c.param)].name;
  }
  return d;
}

py::array_t<uint32_t> to_array(const std::vector<uint32_t>& words) {
  py::array_t<uint32_t> out(py::ssize_t(words.size()));
  std::copy(words.begin(), words.end(), out.mutable_data());
  return out;
}

std::vector<uint32_t> from_array(const py::array& words) {
  auto a = nacc::bindings::checked_array<uint32_t>(words, "words", 1);
  return std::vector<uint32_t>(a.data(), a.data() + a.size());
}

// Field values as Python ints (signed fields sign-extended).
py::dict fields_of(Reg r, uint32_t value) {
  py::dict out;
  const nacc::RegisterDesc& d = nacc::describe(r);
  for (int k = 0; k < d.num_fields; ++k) {
    const nacc::FieldRef f = nacc::field_of(r, d.fields[k].name);
    out[d.fields[k].name] =
        f.is_signed ? py::int_(f.extract_signed(value)) : py::int_(f.extract(value));
  }
  return out;
}

// A register value: `base` (default: the reset value) with the given fields.
uint32_t compose(Reg r, const py::dict& fields, std::optional<int64_t> base) {
  uint32_t v = base ? checked_u32(*base, "base") : nacc::reset_value(r);
  for (const auto& [k, val] : fields) {
    const nacc::FieldRef f = nacc::field_by_name(r, py::cast<std::string>(k));
    v = nacc::with_field(v, f, py::cast<int64_t>(val));
  }
  return v;
}

void bind_tables(py::module_& m) {
  m.def(
      "register_table",
      [] {
        py::list out;
        for (int i = 0; i < nacc::kNumRegisters; ++i) out.append(register_dict(i));
        return out;
      },
      "Every register of the three banks (NACC_SPEC §6) as dicts: name, offset, bank, reset, "
      "stream_writable, region_address, project_defined, trigger, alias_of, description, "
      "fields (name, msb, lsb, access RW/RO/W1C/WO, reset, signed, values, description).");
  m.def(
      "opcode_table",
      [] {
        py::list out;
        for (const auto& d : nacc::kOpcodes) {
          py::dict o;
          o["name"] = d.name;
          o["value"] = int(d.op);
          o["kind"] = d.kind == nacc::CommandKind::kCmd0 ? "cmd0" : "cmd1";
          o["parameter"] = d.parameter;
          o["payload"] = d.payload;
          o["semantics"] = d.semantics;
          o["is_kernel"] = d.is_kernel;
          o["ctrl_rule"] = nacc::kernel_mode_rule(d.op);
          out.append(o);
        }
        return out;
      },
      "The command-stream opcodes: name, value, kind (cmd0/cmd1), parameter, payload, "
      "semantics, and for kernel opcodes the NACC_CTRL rule they check.");
  m.def(
      "register_offset",
      [](const std::string& name) {
        return int(nacc::describe(nacc::register_by_name(name)).offset);
      },
      py::arg("name"), "Byte offset of the named register.");
  m.def(
      "register_name",
      [](int64_t offset) { return std::string(nacc::describe(reg_of(offset)).name); },
      py::arg("offset"), "Name of the register at a byte offset (ValueError if none).");
  m.def(
      "register_value",
      [](const std::string& name, const py::dict& fields, std::optional<int64_t> base) {
        return compose(nacc::register_by_name(name), fields, base);
      },
      py::arg("register"), py::arg("fields") = py::dict(), py::arg("base") = py::none(),
      "A register value from field values ({'K_SIZE_X': 3, ...}); fields not given keep `base` "
      "(default: the reset value). ValueError for unknown fields or values that do not fit.");
  m.def(
      "decode_fields",
      [](const std::string& name, int64_t value) {
        return fields_of(nacc::register_by_name(name), checked_u32(value, "value"));
      },
      py::arg("register"), py::arg("value"),
      "Field values of a register value (signed fields signed).");
  m.def(
      "region_address",
      [](int region, int64_t offset) { return nacc::region_address(region, offset); },
      py::arg("region"), py::arg("offset"),
      "Region address for the *_DMA_ADDR registers: region (0..7) in bits 31..29, offset in "
      "28..0.");
  m.def(
      "split_region_address",
      [](int64_t address) {
        const uint32_t a = checked_u32(address, "address");
        return py::make_tuple(nacc::region_of(a), nacc::region_offset(a));
      },
      py::arg("address"), "(region, offset) of a region address.");
}

void bind_register_file(py::module_& m) {
  using RF = nacc::RegisterFile;
  py::class_<RF>(m, "RegisterFile",
                 "The device's registers with the host's access semantics: RO writes ignored, "
                 "W1C bits cleared by writing 1, write-only trigger bits read 0; an address "
                 "without a register raises DeviceFault.")
      .def(py::init<>())
      .def("reset", &RF::reset, "Every register to its reset value.")
      .def("reset_stream_registers", &RF::reset_stream_registers,
           "What CMD.START does first: stream-writable, non-trigger registers to reset values.")
      .def(
          "read",
          [](const RF& rf, int64_t addr) { return rf.read(checked_u32(addr, "register address")); },
          py::arg("address"), "Host read of the register at a byte address.")
      .def(
          "write",
          [](RF& rf, int64_t addr, int64_t value) {
            return rf.write(checked_u32(addr, "register address"), checked_u32(value, "value"));
          },
          py::arg("address"), py::arg("value"),
          "Host write; returns the write-only trigger bits written as 1 (e.g. CMD.START).")
      .def(
          "get", [](const RF& rf, const Key& r) { return rf.get(reg_of(r)); }, py::arg("register"),
          "Readable value of a register, by name or offset.")
      .def(
          "field",
          [](const RF& rf, const std::string& reg, const std::string& field) {
            const nacc::FieldRef f = nacc::field_by_name(nacc::register_by_name(reg), field);
            return f.is_signed ? int64_t(rf.field_signed(f)) : int64_t(rf.field(f));
          },
          py::arg("register"), py::arg("field"), "A field's value (signed fields signed).")
      .def(
          "fields",
          [](const RF& rf, const Key& key) {
            const Reg r = reg_of(key);
            return fields_of(r, rf.get(r));
          },
          py::arg("register"), "All field values of a register.")
      .def(
          "set",
          [](RF& rf, const Key& r, int64_t value) {
            rf.set(reg_of(r), checked_u32(value, "value"));
          },
          py::arg("register"), py::arg("value"),
          "Device-side store (no access rules): sets RO counters, status bits, QREAD.")
      .def(
          "raise_bits",
          [](RF& rf, const Key& r, int64_t bits) {
            rf.raise(reg_of(r), checked_u32(bits, "bits"));
          },
          py::arg("register"), py::arg("bits"),
          "Device side: sets status bits (e.g. NACC_INT_STATUS).")
      .def("region_base", &RF::region_base, py::arg("handler"), py::arg("region"),
           "44-bit base of a region for a batch handler (BATCHb_ADDRi_H:L).")
      .def("instruction_address", &RF::instruction_address,
           "44-bit command stream address (INSTR_ADDR_H:L).");
}

void bind_emitter(py::module_& m) {
  using nacc::Emitter;
  py::class_<Emitter>(m, "Emitter",
                      "Builds a command stream; drops NPU_SET_REGISTER writes that would not "
                      "change a register (never writes to trigger registers).")
      .def(py::init<bool>(), py::arg("assume_reset_state") = true,
           "assume_reset_state: the shadow starts at reset values (CMD.START resets the stream "
           "registers); False: every register starts unknown.")
      .def(
          "set_register",
          [](Emitter& e, const Key& r, int64_t value) {
            e.set_register(reg_of(r), checked_u32(value, "value"));
          },
          py::arg("register"), py::arg("value"), "NPU_SET_REGISTER by name or byte offset.")
      .def(
          "set_fields",
          [](Emitter& e, const std::string& reg, const py::kwargs& fields) {
            const Reg r = nacc::register_by_name(reg);
            e.set_register(r, compose(r, fields, std::nullopt));
          },
          py::arg("register"),
          "NPU_SET_REGISTER of a value built from keyword fields; the others take reset values.")
      .def(
          "op",
          [](Emitter& e, const Key& op, int64_t param) {
            e.op(opcode_of(op), checked_param(param));
          },
          py::arg("opcode"), py::arg("param") = 0,
          "A cmd0 by name (e.g. 'NPU_OP_CONV') or value.")
      .def("stop", &Emitter::stop, "NPU_OP_STOP; the stream is then complete.")
      .def(
          "forget", [](Emitter& e, const Key& r) { e.forget(reg_of(r)); }, py::arg("register"),
          "Mark a register's value unknown (its next write is always emitted).")
      .def("forget_all", &Emitter::forget_all)
      .def(
          "shadow",
          [](const Emitter& e, const Key& key) -> std::optional<uint32_t> {
            const Reg r = reg_of(key);
            if (!e.known(r)) return std::nullopt;
            return e.shadow(r);
          },
          py::arg("register"),
          "The value the register holds at this point of the stream, or None if unknown.")
      .def_property_readonly(
          "words", [](const Emitter& e) { return to_array(e.words()); },
          "The stream so far, as a np.uint32 array (a copy).")
      .def_property_readonly("emitted_writes", &Emitter::emitted_writes)
      .def_property_readonly("skipped_writes", &Emitter::skipped_writes)
      .def_property_readonly("stopped", &Emitter::stopped);
}

void bind_streams(py::module_& m) {
  m.def(
      "decode_stream",
      [](const py::array& words) {
        py::list out;
        for (const auto& c : nacc::decode_stream(from_array(words))) out.append(command_dict(c));
        return out;
      },
      py::arg("words"),
      "Decode and validate a command stream (np.uint32 array) into dicts (word, opcode, param, "
      "payload, register); ValueError 'command stream word N (byte 0x...): ...' otherwise.");
  m.def(
      "encode_commands",
      [](const py::list& commands) {
        std::vector<nacc::Command> cmds;
        for (const auto& item : commands) {
          const py::dict d = py::cast<py::dict>(item);
          nacc::Command c;
          c.op = opcode_of(py::cast<Key>(d["opcode"]));
          if (d.contains("param")) c.param = checked_param(py::cast<int64_t>(d["param"]));
          if (d.contains("register")) {
            c.param = nacc::describe(reg_of(py::cast<Key>(d["register"]))).offset;
          }
          if (d.contains("payload")) {
            c.payload = checked_u32(py::cast<int64_t>(d["payload"]), "payload");
          }
          cmds.push_back(c);
        }
        return to_array(nacc::encode_commands(cmds));
      },
      py::arg("commands"), "Words of command dicts as decode_stream returns them (no validation).");
  m.def(
      "disassemble",
      [](const py::array& words, bool best_effort) {
        const auto w = from_array(words);
        return nacc::disassemble(w.data(), w.size(), best_effort);
      },
      py::arg("words"), py::arg("best_effort") = false,
      "A listing of the stream: byte offset, raw words, command with decoded register fields. "
      "Validates like decode_stream unless best_effort (then errors appear as 'error:' lines).");
}

}  // namespace

NACC_BINDINGS(regs) {
  bind_tables(m);
  bind_register_file(m);
  bind_emitter(m);
  bind_streams(m);
}

// The NACC register map: name lookups and checked field encoding (NACC_SPEC
// §5, §6). The table is register_table.h; its structure is checked at compile
// time here.
#include "arch/registers.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

namespace nacc {

static_assert(detail::table_is_consistent(),
              "register_table.h: overlapping/unaligned offsets, bad field ranges, "
              "duplicate names or bad aliases");
static_assert(describe(Reg::NACC_VERSION).offset == 0xFC &&
                  reset_value(Reg::NACC_VERSION) == 0x00010102u,
              "NACC_SPEC §5: NACC_VERSION at 0xFC reads 0x0001_0102");
static_assert(reset_value(Reg::NACC_KERNEL) == 0x11110000u,
              "[N] §5: strides and dilations reset to 1");
static_assert(describe(batch_addr_lo(11, 7)).offset == 0x2200 + 0x40 * 11 + 8 * 7 &&
                  describe(batch_addr_hi(11, 7)).offset == 0x24FC &&
                  batch_addr_hi(11, 7) == Reg(kNumRegisters - 1),
              "NACC_SPEC §6: BATCHb_ADDRi_L at 0x2200 + 0x40*b + 8*i, 12 handlers x 8 regions");
static_assert(~masks_of(Reg::INSTR_ADDR_L).defined + 1u == uint32_t(limits::kInstructionAlignment),
              "[D]: the instruction address is 4 KB aligned (INSTR_ADDR_L bits 11..0 read 0)");
static_assert(masks_of(Reg::BATCH0_ADDR0_H).defined ==
                      (1u << (limits::kDeviceAddressBits - 32)) - 1 &&
                  masks_of(Reg::INSTR_ADDR_H).defined == masks_of(Reg::BATCH0_ADDR0_H).defined,
              "[D]: device addresses are 44-bit (_H holds bits 43..32)");
static_assert(describe(Reg::BASEP2).offset == 0x1088 &&
                  describe(Reg::BASEP2).alias_of == int(Reg::BATCH0_ADDR1_L),
              "BASEP2/3 are region 1 (low word first)");

namespace {

const std::unordered_map<std::string_view, int>& name_index() {
  static const auto* map = [] {
    auto* m = new std::unordered_map<std::string_view, int>();
    for (int i = 0; i < kNumRegisters; ++i) m->emplace(kRegisters[i].name, i);
    return m;
  }();
  return *map;
}

// Closest register names to `name` (shared prefix), for error messages.
std::string suggestions(std::string_view name) {
  std::vector<std::pair<size_t, std::string_view>> scored;
  for (const auto& r : kRegisters) {
    std::string_view n = r.name;
    size_t common = 0;
    while (common < n.size() && common < name.size() && n[common] == name[common]) ++common;
    scored.emplace_back(common, n);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (size_t i = 0; i < 3 && i < scored.size(); ++i) {
    out += (i ? ", " : "") + std::string(scored[i].second);
  }
  return out;
}

}  // namespace

int find_register(std::string_view name) {
  const auto& m = name_index();
  auto it = m.find(name);
  return it == m.end() ? -1 : it->second;
}

Reg register_by_name(std::string_view name) {
  const int i = find_register(name);
  check_arg(i >= 0, "unknown register '", name, "' (closest: ", suggestions(name), ")");
  return Reg(i);
}

std::string describe_address(uint32_t addr) {
  if (addr < 0x1000) return "NACC compute bank 0x0000-0x00FC";
  if (addr < 0x2000) return "command-processor bank 0x1000-0x1FFF";
  if (addr < kRegisterSpaceBytes) return "batch-handler bank 0x2000-0x2FFF";
  return "outside the register map 0x0000-0x2FFF";
}

FieldRef field_by_name(Reg r, std::string_view name) {
  const RegisterDesc& d = describe(r);
  std::string names;
  for (int i = 0; i < d.num_fields; ++i) {
    if (name == d.fields[i].name) return field_of(r, d.fields[i].name);
    names += (i ? ", " : "") + std::string(d.fields[i].name);
  }
  throw InvalidArgument(str_cat(d.name, " has no field '", name, "' (fields: ", names, ")"));
}

std::string field_path(FieldRef f) { return str_cat(describe(f.reg).name, ".", f.desc().name); }

uint32_t with_field(uint32_t reg_value, FieldRef f, int64_t value) {
  // The message (a string stream) only on failure: the emitter sets every
  // field of every command through here.
  if (value < field_min(f) || value > field_max(f)) {
    throw InvalidArgument(str_cat(field_path(f), ": value ", value, " out of range [",
                                  field_min(f), ", ", field_max(f), "]"));
  }
  return f.insert(reg_value, uint32_t(uint64_t(value)));
}

}  // namespace nacc

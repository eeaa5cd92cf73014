// The device's memory map: binding host buffers to device address ranges and
// the lookups behind every bounds-checked DMA access (NACC_SPEC §5).
#include "device/memory_map.h"

#include <cstdio>

#include "arch/limits.h"
#include "common/error.h"

namespace nacc {

namespace {
std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llX", static_cast<unsigned long long>(v));
  return buf;
}
constexpr uint64_t kAddressLimit = uint64_t(1) << limits::kDeviceAddressBits;
}  // namespace

void MemoryMap::bind(uint64_t address, void* data, uint64_t size, bool writable,
                     std::string name) {
  check_arg(size > 0, "bind ", name, ": size 0 (a bound buffer holds at least one byte)");
  check_arg(data != nullptr, "bind ", name, ": null data pointer");
  check_arg(address < kAddressLimit && size <= kAddressLimit - address, "bind ", name,
            ": device range [", hex(address), ", +", size, ") leaves the ",
            limits::kDeviceAddressBits, "-bit address space");
  auto next = map_.lower_bound(address);
  if (next != map_.end()) {
    check_arg(next->first >= address + size, "bind ", name, ": device range [", hex(address),
              ", ", hex(address + size), ") overlaps '", next->second.name, "' at ",
              hex(next->first));
  }
  if (next != map_.begin()) {
    const BoundBuffer& prev = std::prev(next)->second;
    check_arg(prev.address + prev.size <= address, "bind ", name, ": device range [",
              hex(address), ", ", hex(address + size), ") overlaps '", prev.name, "' at ",
              hex(prev.address));
  }
  map_[address] = BoundBuffer{address, size, static_cast<uint8_t*>(data), writable,
                              std::move(name)};
}

void MemoryMap::unbind(uint64_t address) {
  auto it = map_.find(address);
  check_arg(it != map_.end(), "unbind: no buffer is bound at device address ", hex(address));
  map_.erase(it);
}

const BoundBuffer* MemoryMap::find_byte(uint64_t address) const {
  auto it = map_.upper_bound(address);
  if (it == map_.begin()) return nullptr;
  const BoundBuffer& b = std::prev(it)->second;
  return address - b.address < b.size ? &b : nullptr;
}

const BoundBuffer* MemoryMap::find(uint64_t address, uint64_t size) const {
  if (size == 0 || address + size < address) return nullptr;
  const BoundBuffer* b = find_byte(address);
  if (!b) return nullptr;
  return address + size - b->address <= b->size ? b : nullptr;
}

std::vector<BoundBuffer> MemoryMap::buffers() const {
  std::vector<BoundBuffer> out;
  for (const auto& [addr, b] : map_) out.push_back(b);
  return out;
}

}  // namespace nacc

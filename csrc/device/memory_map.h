// The device's external memory map (NACC_SPEC §5, §6): host buffers bound at
// 44-bit device addresses. Every DMA access of the simulated device is checked
// against it; an access that is not inside one bound buffer is a bus error.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace nacc {

// One host buffer bound at a device address range [address, address + size).
struct BoundBuffer {
  uint64_t address = 0;
  uint64_t size = 0;
  uint8_t* data = nullptr;  // not owned; must outlive the binding
  bool writable = false;    // false: a device write is a bus write error
  std::string name;         // for messages, e.g. "handler 0 region 1 (input 'x')"
};

// Buffers by device address. Not thread-safe by itself: the Device guards it
// (shared for lookups while commands run, exclusive for bind/unbind).
class MemoryMap {
 public:
  // Binds `size` bytes at `data` to device addresses [address, address + size).
  // InvalidArgument when size is 0, data is null, the range leaves the 44-bit
  // address space or overlaps a bound buffer.
  void bind(uint64_t address, void* data, uint64_t size, bool writable, std::string name);
  // InvalidArgument when no buffer starts at `address`.
  void unbind(uint64_t address);
  // The buffer holding every byte of [address, address + size) (size >= 1), or
  // nullptr (including when the range wraps around 2^64).
  const BoundBuffer* find(uint64_t address, uint64_t size) const;
  // The buffer holding byte `address`, or nullptr.
  const BoundBuffer* find_byte(uint64_t address) const;
  std::vector<BoundBuffer> buffers() const;
  bool empty() const { return map_.empty(); }

 private:
  std::map<uint64_t, BoundBuffer> map_;  // by start address
};

}  // namespace nacc

// The core seam (backend.h).
#include "ep/backend.h"

namespace nacc::ep {

HwConfig hw_config(const Config& config) {
  HwConfig hw;
  hw.cores = config.cores;
  hw.sram_bytes = static_cast<int64_t>(config.sram_kb) * 1024;
  return hw;
}

Program compile_partition(const ir::Graph& partition, const Config& config) {
  return partition::compile_partition(partition, hw_config(config));
}

std::vector<uint8_t> serialize_program(const Program& program) { return program.serialize(); }

Program deserialize_program(const uint8_t* data, size_t size, Program::Checksum checksum) {
  return Program::deserialize(data, size, checksum);
}

}  // namespace nacc::ep

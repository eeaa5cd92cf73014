// The core seam (backend.h). Until the compiler (nacc::compile) and the
// device runtime land on main, compile_partition reports that the backend is
// missing, so GetCapability declines everything with that reason instead of
// claiming work it cannot run.
#include "ep/backend.h"

#include "common/error.h"

namespace nacc::ep {

bool backend_available() { return false; }

HwConfig hw_config(const Config& config) {
  HwConfig hw;
  hw.cores = config.cores;
  hw.sram_bytes = static_cast<int64_t>(config.sram_kb) * 1024;
  return hw;
}

Program compile_partition(const ir::Graph&, const Config&) {
  throw Unsupported("NaccExecutionProvider: this build has no NACC compiler (nacc::compile is not "
                    "on this branch yet)");
}

std::vector<uint8_t> serialize_program(const Program&) {
  throw Unsupported("NaccExecutionProvider: Program serialization is not on this branch yet");
}

Program deserialize_program(const uint8_t*, size_t) {
  throw Unsupported("NaccExecutionProvider: Program serialization is not on this branch yet");
}

struct Executor::Impl {};

Executor::Executor(const Config&) : impl_(std::make_unique<Impl>()) {}
Executor::~Executor() = default;

RunStats Executor::run(const Program&, const std::vector<const void*>&, const std::vector<void*>&) {
  throw Unsupported("NaccExecutionProvider: this build has no NACC device runtime");
}

}  // namespace nacc::ep

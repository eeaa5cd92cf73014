// The EP's one seam to the core, through csrc/partition/: compile a
// partition's IR graph into a Program and run Programs on the simulated
// device with the executor and RunStats the TFLite delegate uses too. The EP
// has no kernels and no compile or run path of its own.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ep/config.h"
#include "ir/ir.h"
#include "partition/executor.h"
#include "runtime/program.h"

namespace nacc::ep {

// The hardware configuration the options describe.
HwConfig hw_config(const Config& config);

// partition::compile_partition for the options' hardware: throws
// nacc::Unsupported / InvalidArgument with the reason, which GetCapability
// falls back from.
Program compile_partition(const ir::Graph& partition, const Config& config);

// Program <-> bytes (the container format of docs/command_stream.md).
std::vector<uint8_t> serialize_program(const Program& program);
Program deserialize_program(const uint8_t* data, size_t size,
                            Program::Checksum checksum = Program::Checksum::kVerify);

// One executor for all of a session's partitions (thread-safe; one simulated
// device per hardware configuration a Program was compiled for).
using Executor = partition::Executor;
using RunStats = partition::RunStats;

}  // namespace nacc::ep

// The partitioning policy both frontends apply (docs/architecture.md): the
// SRAM the capability rules judge with and the fragmentation guard, with its
// reasons. One copy, so the TFLite delegate and the ONNX Runtime EP cannot
// decide or word the same case differently.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "arch/hw_config.h"
#include "ir/ir.h"
#include "support/sram.h"

namespace nacc::partition {

// The SRAM size and buffer alignment the capability rules judge with: the
// one support::support_config (support/sram.h) the compiler checks with too,
// so a claimed op is one the compiler can place (sram_geometry's alignment:
// 128 bytes from 128 KB up). InvalidArgument for an SRAM size it refuses.
using support::support_config;

// Why a whole partition stays on the host.
struct Decline {
  std::string rule;    // "partition_views_only" or "min_partition_macs"
  std::string detail;  // what the partition has: "... does 4096 MACs"
  std::string text;    // the policy: "partitions must do at least ..."
  // "detail — text": the one wording both frontends report.
  std::string message() const;
};

// The fragmentation guard over a partition made of graph.ops[i], i in `ops`:
//   partition_views_only  every op is a view (RESHAPE): no NPU work, and the
//                         host does a view for free;
//   min_partition_macs    its ir::op_macs total is below `min_partition_macs`
//                         (the host round trip would cost more than it saves).
// nullopt: the partition is worth running on the NPU.
std::optional<Decline> fragmentation_guard(const ir::Graph& graph, const std::vector<int>& ops,
                                           int64_t min_partition_macs);

// A partition that failed to compile with `error`: what goes back to the host
// and why, the same in both frontends. In this order:
//   (1) each member of `alone` (a node or node unit the frontend can compile
//       by itself, in execution order) for which compile_alone(member)
//       returns an error: "the compiler rejects it: <its error>";
//   (2) if none, and `last` >= 0 (the member the frontend gives back when
//       only the combination fails — since the staging regions of
//       docs/device_model.md no longer the count of partition inputs and
//       outputs — and it may plan again):
//       that member, "its partition does not compile: <error>; its last op
//       stays on the host";
//   (3) otherwise the whole partition ("its partition does not compile: <error>").
struct CompileFallback {
  std::vector<std::pair<int, Decline>> members;  // (1) or (2): member -> why
  // (2): only the combination fails. A frontend that can place the partition's
  // members in several partitions (the ONNX Runtime EP) may cut the partition
  // before `last` instead of giving it to the host.
  bool combination = false;
  std::optional<Decline> whole;                   // (3)
};
CompileFallback compile_fallback(
    const std::string& error, const std::vector<int>& alone, int last,
    const std::function<std::optional<std::string>(int member)>& compile_alone);

}  // namespace nacc::partition

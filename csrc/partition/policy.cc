// The partitioning policy (policy.h).
#include "partition/policy.h"

#include "common/error.h"
#include "ir/macs.h"

namespace nacc::partition {

std::string Decline::message() const {
  return text.empty() ? detail : str_cat(detail, " \u2014 ", text);
}

std::optional<Decline> fragmentation_guard(const ir::Graph& graph, const std::vector<int>& ops,
                                           int64_t min_partition_macs) {
  const auto n = static_cast<int64_t>(ops.size());
  const std::string op_count = str_cat(n, " op", n == 1 ? "" : "s");
  bool views_only = true;
  for (int i : ops) views_only &= graph.op(i).kind == ir::OpKind::kReshape;
  if (views_only) {
    return Decline{"partition_views_only",
                   str_cat("its partition would only reshape (", op_count,
                           ", views: no NPU work)"),
                   "a partition must compute something; views cost nothing on the host"};
  }
  const int64_t macs = ir::ops_macs(graph, ops);
  if (macs < min_partition_macs) {
    return Decline{"min_partition_macs",
                   str_cat("fragmentation guard: its partition (", op_count, ") does ", macs,
                           " MACs"),
                   str_cat("partitions must do at least min_partition_macs = ",
                           min_partition_macs,
                           " MACs (the host round trip would cost more than it saves)")};
  }
  return std::nullopt;
}

CompileFallback compile_fallback(
    const std::string& error, const std::vector<int>& alone, int last,
    const std::function<std::optional<std::string>(int member)>& compile_alone) {
  CompileFallback f;
  for (int m : alone) {
    if (auto why = compile_alone(m)) {
      f.members.push_back({m, Decline{"compile", str_cat("the compiler rejects it: ", *why),
                                      "ops the compiler cannot place stay on the host"}});
    }
  }
  if (!f.members.empty()) return f;
  if (last >= 0) {
    f.members.push_back(
        {last, Decline{"compile",
                       str_cat("its partition does not compile: ", error,
                               "; its last op stays on the host"),
                       "a partition that fails to compile gives its last op back to the host "
                       "until the rest compiles"}});
    f.combination = true;
    return f;
  }
  f.whole = Decline{"compile", str_cat("its partition does not compile: ", error),
                    "claimed partitions that fail to compile fall back to the host"};
  return f;
}

}  // namespace nacc::partition

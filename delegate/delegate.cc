// The NACC TFLite external delegate: tflite_plugin_create_delegate /
// tflite_plugin_destroy_delegate, the delegate's Prepare (translate, apply the
// capability rules, partition, compile), the partition kernel TFLite runs in
// place of the claimed nodes, and a small C API (nacc_tflite_*) that
// python/nacc/tflite.py reads through ctypes. Every entry point catches every
// exception: errors reach TFLite as kTfLiteError with a message, never as a
// crash of the host process.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/error.h"
#include "common/version.h"
#include "engine.h"
#include "ir/macs.h"
#include "options.h"
#include "partition.h"
#include "partition/policy.h"
#include "report.h"
#include "support/sha256.h"
#include "support/sram.h"
#include "tflite_abi.h"
#include "translate.h"

namespace nacc::tflite {

namespace {

constexpr const char* kRegistrationName = "NaccDelegate";
// Partition-level rounds (fragmentation guard, compile failures) before the
// claim set must be stable; each round only removes nodes.
constexpr int kMaxPartitionRounds = 64;

// A TfLiteIntArray backed by a vector (for the arrays the delegate passes to TFLite).
class IntArray {
 public:
  explicit IntArray(const std::vector<int>& values) : storage_(values.size() + 1) {
    storage_[0] = static_cast<int>(values.size());
    std::copy(values.begin(), values.end(), storage_.begin() + 1);
  }
  TfLiteIntArray* get() { return reinterpret_cast<TfLiteIntArray*>(storage_.data()); }

 private:
  std::vector<int> storage_;
};

std::vector<int> to_vector(const TfLiteIntArray* a) {
  if (!a) return {};
  return std::vector<int>(a->data, a->data + a->size);
}

std::vector<int64_t> dims_of(const TfLiteTensor& t) {
  std::vector<int64_t> s;
  if (t.dims) s.assign(t.dims->data, t.dims->data + t.dims->size);
  return s;
}

std::string plural(int64_t n, const char* word) {
  return str_cat(n, " ", word, n == 1 ? "" : "s");
}

std::string node_range(const std::vector<int>& nodes) {
  if (nodes.empty()) return "no nodes";
  const auto [lo, hi] = std::minmax_element(nodes.begin(), nodes.end());
  return nodes.size() == 1 ? str_cat("node ", *lo) : str_cat("nodes ", *lo, "-", *hi);
}

// Reports `message` to TFLite as "NACC delegate: <message>.\n". TFLite joins
// the messages of one failure without a separator (its own "Node number 4
// (NaccDelegate) failed to prepare." follows ours), so each ends in a period
// and a newline.
void report_error(TfLiteContext* ctx, std::string message) {
  while (!message.empty() && std::isspace(static_cast<unsigned char>(message.back()))) {
    message.pop_back();
  }
  if (message.empty() || message.back() != '.') message += '.';
  ctx->ReportError(ctx, "NACC delegate: %s\n", message.c_str());
}

// Sets a tensor's dims (the runtime reallocates it before the next Invoke).
TfLiteStatus resize_tensor(TfLiteContext* ctx, TfLiteTensor* t, const std::vector<int64_t>& s) {
  std::vector<int> shape(s.begin(), s.end());
  if (ctx->ResizeTensorExplicit) {
    return ctx->ResizeTensorExplicit(ctx, t, static_cast<int>(shape.size()), shape.data());
  }
  // ResizeTensor takes ownership of a malloc'ed array (TfLiteIntArrayCreate's layout).
  auto* a = static_cast<TfLiteIntArray*>(std::malloc(sizeof(int) * (shape.size() + 1)));
  if (!a) return kTfLiteError;
  a->size = static_cast<int>(shape.size());
  std::copy(shape.begin(), shape.end(), a->data);
  return ctx->ResizeTensor(ctx, t, a);
}

// ---- the partition kernel ---------------------------------------------------------

class PartitionKernel {
 public:
  PartitionKernel(CompiledPartition part, DelegateOptions options)
      : part_(std::move(part)), options_(std::move(options)), log_(options_.log_level) {}

  TfLiteStatus prepare(TfLiteContext* ctx) {
    std::vector<std::vector<int64_t>> actual;
    for (int i : part_.inputs) actual.push_back(dims_of(ctx->tensors[i]));
    if (actual != part_.input_shapes) recompile_for(ctx, actual);
    for (size_t i = 0; i < part_.outputs.size(); ++i) {
      TfLiteTensor* t = &ctx->tensors[part_.outputs[i]];
      if (dims_of(*t) != part_.output_shapes[i]) {
        if (resize_tensor(ctx, t, part_.output_shapes[i]) != kTfLiteOk) {
          throw Error(str_cat(part_.label, ": cannot resize output tensor ", part_.outputs[i]));
        }
      }
    }
    if (!executor_) {
      const int threads = options_.threads > 0              ? options_.threads
                          : ctx->recommended_num_threads > 0 ? ctx->recommended_num_threads
                                                             : 1;
      executor_ = std::make_unique<Executor>(
          part_.program, options_, threads,
          str_cat("nacc_", part_.report->cache_key.substr(0, 16)), part_.label);
    }
    return kTfLiteOk;
  }

  TfLiteStatus invoke(TfLiteContext* ctx) {
    const Program& p = *part_.program;
    std::vector<const void*> inputs;
    std::vector<void*> outputs;
    for (size_t i = 0; i < part_.inputs.size(); ++i) {
      const TfLiteTensor& t = ctx->tensors[part_.inputs[i]];
      const int64_t want = p.images * p.inputs.at(i).size;  // a batch: every image's bytes
      check_arg(t.data.raw && static_cast<int64_t>(t.bytes) == want, part_.label,
                ": input tensor ", part_.inputs[i], " has ", t.bytes, " bytes, the Program expects ",
                want);
      inputs.push_back(t.data.raw);
    }
    for (size_t i = 0; i < part_.outputs.size(); ++i) {
      TfLiteTensor& t = ctx->tensors[part_.outputs[i]];
      const int64_t want = p.images * p.outputs.at(i).size;
      check_arg(t.data.raw && static_cast<int64_t>(t.bytes) == want, part_.label,
                ": output tensor ", part_.outputs[i], " has ", t.bytes,
                " bytes, the Program writes ", want);
      outputs.push_back(t.data.raw);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const RunStats stats = executor_->run(inputs, outputs);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    PartitionReport& r = *part_.report;
    std::lock_guard<std::mutex> lock(r.mu);
    ++r.invocations;
    r.last = stats;
    r.total_cycles += stats.cycles;
    r.host_ms_total += ms;
    return kTfLiteOk;
  }

  const std::string& label() const { return part_.label; }

 private:
  // After an input resize the runtime re-prepares this kernel with new input
  // dims: translate the partition's nodes again with the new shapes, re-run
  // the rules and compile; when that cannot work, fail with the partition's name.
  void recompile_for(TfLiteContext* ctx, const std::vector<std::vector<int64_t>>& actual) {
    std::string shapes;
    for (const auto& s : actual) shapes += (shapes.empty() ? "" : ", ") + ir::shape_str(s);
    const std::string what = str_cat(part_.label, ": after the input resize to ", shapes);
    const std::string advice =
        ". Recreate the interpreter (with its delegate) for this input shape so the model is "
        "partitioned again.";
    Translation t = translate(*ctx, part_.specs);
    apply_rules(t, support_config(options_));
    for (const NodeResult& r : t.nodes) {
      if (!r.claimable()) {
        throw Error(str_cat(what, ", ", r.label(), " can no longer run on the NPU: ",
                            r.reasons.empty() ? "not translated" : r.reasons[0].display(), advice));
      }
    }
    std::vector<int> bound;
    ir::Graph g;
    try {
      g = extract_partition(t, part_.nodes, part_.inputs, part_.outputs, &bound);
      part_.program = compile_partition(g, options_, "_resized", part_.report.get(), log_);
    } catch (const Error& e) {
      throw Error(str_cat(what, ", the partition does not compile: ", e.what(), advice));
    }
    part_.input_shapes.clear();
    part_.output_shapes.clear();
    for (int id : g.inputs) part_.input_shapes.push_back(g.tensor(id).shape);
    for (int id : g.outputs) part_.output_shapes.push_back(g.tensor(id).shape);
    executor_.reset();
    std::lock_guard<std::mutex> lock(part_.report->mu);
    ++part_.report->recompilations;
  }

  CompiledPartition part_;
  DelegateOptions options_;
  Logger log_;
  std::unique_ptr<Executor> executor_;
};

// ---- the delegate --------------------------------------------------------------------

struct NaccDelegate {
  TfLiteDelegate base{};
  DelegateOptions options;
  Logger log;

  std::mutex mu;  // guards everything below
  std::vector<std::shared_ptr<SubgraphReport>> reports;
  std::map<const TfLiteContext*, std::vector<CompiledPartition>> pending;  // Prepare -> init
  std::set<std::string> logged;  // model signatures already logged

  explicit NaccDelegate(DelegateOptions o) : options(std::move(o)), log(options.log_level) {}
};

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_set<const TfLiteDelegate*>& registry() {
  static std::unordered_set<const TfLiteDelegate*> live;
  return live;
}

// The partitions TFLite would form for `claimed`.
struct PreviewPartition {
  std::vector<int> nodes, inputs, outputs;
};
std::vector<PreviewPartition> preview(TfLiteContext* ctx, const std::set<int>& claimed,
                                      const std::unordered_map<int, int>& plan_position) {
  std::vector<int> nodes(claimed.begin(), claimed.end());
  std::vector<PreviewPartition> out;
  if (nodes.empty()) return out;
  IntArray arr(nodes);
  TfLiteDelegateParams* params = nullptr;
  int n = 0;
  check_arg(ctx->PreviewDelegatePartitioning(ctx, arr.get(), &params, &n) == kTfLiteOk,
            "PreviewDelegatePartitioning failed");
  for (int i = 0; i < n; ++i) {
    PreviewPartition p{to_vector(params[i].nodes_to_replace), to_vector(params[i].input_tensors),
                       to_vector(params[i].output_tensors)};
    std::sort(p.nodes.begin(), p.nodes.end(), [&](int a, int b) {
      return plan_position.at(a) < plan_position.at(b);
    });
    out.push_back(std::move(p));
  }
  return out;
}

std::string model_signature(const TfLiteContext& ctx, const std::vector<NodeSpec>& specs) {
  support::Sha256 h;
  for (const NodeSpec& s : specs) {
    h.update_pod(s.builtin_code).update_pod(s.version);
    h.update(s.inputs.data(), s.inputs.size() * sizeof(int));
    h.update(s.outputs.data(), s.outputs.size() * sizeof(int));
  }
  for (size_t i = 0; i < ctx.tensors_size; ++i) {
    const TfLiteTensor& t = ctx.tensors[i];
    if (t.dims) h.update(t.dims->data, sizeof(int) * t.dims->size);
    h.update_pod(t.type);
  }
  return h.hex_digest();
}

// Reasons given to a whole partition rather than to one node.
bool is_partition_rule(const std::string& rule) {
  return rule == "compile" || rule == "min_partition_macs" || rule == "partition_views_only";
}

// Two-level fallback log + summary (STYLE.md rule 3), once per model.
void log_decisions(const NaccDelegate& d, SubgraphReport& report, const Translation& t) {
  std::map<std::string, int> kinds;  // "SOFTMAX runs on the host: reason" -> count
  std::vector<std::string> order;
  std::vector<std::pair<LogLevel, std::string>> lines;
  for (const NodeReport& n : report.nodes) {
    if (n.claimed) continue;
    const std::string why = n.reasons.empty() ? "" : n.reasons[0].display();
    if (n.host_kind) {
      const std::string key = str_cat(n.op, " runs on the host (", why, ")");
      if (!kinds.count(key)) order.push_back(key);
      ++kinds[key];
    }
  }
  for (const std::string& k : order) {
    lines.push_back({LogLevel::kInfo, str_cat(k, kinds[k] > 1 ? str_cat(", ", kinds[k], " nodes") : "")});
  }
  // Declined instances: one warning per node, except that nodes declined
  // together as a partition (fragmentation guard, compile failure) share one.
  std::map<std::string, std::vector<const NodeReport*>> by_partition_reason;
  std::vector<std::string> partition_reasons;
  for (const NodeReport& n : report.nodes) {
    if (n.claimed || n.host_kind) continue;
    if (n.reasons.size() == 1 && is_partition_rule(n.reasons[0].rule)) {
      const std::string why = n.reasons[0].display();
      if (!by_partition_reason.count(why)) partition_reasons.push_back(why);
      by_partition_reason[why].push_back(&n);
      continue;
    }
    const NodeResult* r = t.node(n.node);
    std::string why;
    for (const Reason& reason : n.reasons) why += (why.empty() ? "" : "; ") + reason.display();
    lines.push_back({LogLevel::kWarning, str_cat(r ? r->label() : n.op, " (node ", n.node,
                                                 ") stays on the host: ", why)});
  }
  for (const std::string& why : partition_reasons) {
    const auto& nodes = by_partition_reason[why];
    if (nodes.size() == 1) {
      const NodeResult* r = t.node(nodes[0]->node);
      lines.push_back({LogLevel::kWarning, str_cat(r ? r->label() : nodes[0]->op, " (node ",
                                                   nodes[0]->node, ") stays on the host: ", why)});
      continue;
    }
    std::map<std::string, int> ops;
    for (const NodeReport* n : nodes) ++ops[n->op];
    std::string list;
    for (const auto& [op, count] : ops) list += str_cat(list.empty() ? "" : ", ", op, " x", count);
    lines.push_back({LogLevel::kWarning, str_cat(nodes.size(), " nodes (", list,
                                                 ") stay on the host: ", why)});
  }
  for (const auto& [level, text] : lines) {
    report.messages.push_back(str_cat(level == LogLevel::kInfo ? "Info: " : "Warning: ", text));
    d.log.log(level, text);
  }
  report.messages.push_back(report.summary);
  if (d.log.enabled(LogLevel::kInfo)) {
    std::fprintf(stderr, "%s\n", report.summary.c_str());
    std::fflush(stderr);
  }
}

// Compiles node `n` of a translation as a one-op graph: nullopt, or the error.
std::optional<std::string> compile_alone(const Translation& t, int n,
                                         const DelegateOptions& options) {
  const NodeResult* r = t.node(n);
  std::vector<int> inputs, bound;
  for (int i : r->spec.inputs) {  // once each: ADD(x, x) reads one tensor twice
    if (i >= 0 && std::find(inputs.begin(), inputs.end(), i) == inputs.end()) inputs.push_back(i);
  }
  try {
    compile_graph(extract_partition(t, {n}, inputs, r->spec.outputs, &bound), options);
    return std::nullopt;
  } catch (const Error& e) {
    return std::string(e.what());
  }
}

TfLiteStatus prepare_impl(TfLiteContext* ctx, NaccDelegate* d) {
  TfLiteIntArray* plan_array = nullptr;
  check_arg(ctx->GetExecutionPlan(ctx, &plan_array) == kTfLiteOk && plan_array,
            "GetExecutionPlan failed");
  const std::vector<int> plan = to_vector(plan_array);
  std::unordered_map<int, int> plan_position;
  std::vector<NodeSpec> specs;
  for (size_t i = 0; i < plan.size(); ++i) {
    TfLiteNode* node = nullptr;
    TfLiteRegistration* reg = nullptr;
    check_arg(ctx->GetNodeAndRegistration(ctx, plan[i], &node, &reg) == kTfLiteOk,
              "GetNodeAndRegistration failed for node ", plan[i]);
    specs.push_back(capture_node(plan[i], *node, *reg));
    plan_position[plan[i]] = static_cast<int>(i);
  }

  Translation t = translate(*ctx, specs);
  apply_rules(t, support_config(d->options));

  std::set<int> claimed;
  std::map<int, std::vector<Reason>> late;  // partition-level declines per node
  for (const NodeResult& r : t.nodes) {
    if (r.claimable()) claimed.insert(r.spec.index);
  }
  const auto decline = [&](const std::vector<int>& nodes, const Reason& why) {
    for (int n : nodes) {
      claimed.erase(n);
      late[n].push_back(why);
    }
  };

  std::map<std::vector<int>, CompiledPartition> compiled;
  std::vector<PreviewPartition> parts;
  for (int round = 0;; ++round) {
    check_arg(round < kMaxPartitionRounds, "partitioning did not converge");
    parts = preview(ctx, claimed, plan_position);
    bool changed = false;
    for (const PreviewPartition& p : parts) {
      std::vector<int> ops;
      for (int n : p.nodes) ops.push_back(t.node(n)->ir_op);
      if (auto why = partition::fragmentation_guard(t.graph, ops, d->options.min_partition_macs)) {
        decline(p.nodes, {why->rule, why->detail, why->text});
        changed = true;
        continue;
      }
      const int64_t macs = ir::ops_macs(t.graph, ops);
      if (compiled.count(p.nodes)) continue;
      CompiledPartition cp;
      cp.nodes = p.nodes;
      for (int n : p.nodes) cp.specs.push_back(t.node(n)->spec);
      cp.outputs = p.outputs;
      cp.report = std::make_shared<PartitionReport>();
      cp.report->macs = macs;
      for (int n : p.nodes) cp.report->ops.push_back(t.node(n)->op_type);
      try {
        ir::Graph g = extract_partition(t, p.nodes, p.inputs, p.outputs, &cp.inputs);
        for (int id : g.inputs) cp.input_shapes.push_back(g.tensor(id).shape);
        for (int id : g.outputs) cp.output_shapes.push_back(g.tensor(id).shape);
        cp.program = compile_partition(g, d->options, "", cp.report.get(), d->log);
      } catch (const Error& e) {
        // partition/policy.h compile_fallback: the ops that do not compile
        // on their own, else the last node (the rest is planned again), else
        // the whole partition. Views compile to nothing and are not tried alone.
        std::vector<int> alone;
        if (p.nodes.size() > 1) {
          for (int n : p.nodes) {
            if (t.graph.op(t.node(n)->ir_op).kind != ir::OpKind::kReshape) alone.push_back(n);
          }
        }
        int last = -1;
        if (p.nodes.size() > 1 && round + 1 < kMaxPartitionRounds / 2) {
          last = *std::max_element(
              p.nodes.begin(), p.nodes.end(),
              [&](int a, int b) { return plan_position.at(a) < plan_position.at(b); });
        }
        const partition::CompileFallback f = partition::compile_fallback(
            e.what(), alone, last, [&](int n) { return compile_alone(t, n, d->options); });
        for (const auto& [n, why] : f.members) {
          decline(std::vector<int>{n}, {why.rule, why.detail, why.text});
        }
        if (f.whole) decline(p.nodes, {f.whole->rule, f.whole->detail, f.whole->text});
        changed = true;
        continue;
      }
      compiled.emplace(p.nodes, std::move(cp));
    }
    if (!changed) break;
  }

  // The report, in execution order.
  auto report = std::make_shared<SubgraphReport>();
  report->context = reinterpret_cast<uint64_t>(ctx);
  report->total_nodes = static_cast<int>(t.nodes.size());
  std::map<int, int> partition_of;
  std::vector<CompiledPartition> final_parts;
  for (size_t i = 0; i < parts.size(); ++i) {
    CompiledPartition cp = compiled.at(parts[i].nodes);
    cp.report->index = static_cast<int>(i);
    cp.report->nodes = cp.nodes;
    cp.report->input_tensors = cp.inputs;
    cp.report->output_tensors = cp.outputs;
    for (int n : cp.nodes) partition_of[n] = static_cast<int>(i);
    report->partitions.push_back(cp.report);
    final_parts.push_back(std::move(cp));
  }
  for (const NodeResult& r : t.nodes) {
    NodeReport n;
    n.node = r.spec.index;
    n.op = r.op_type;
    n.name = r.name;
    n.claimed = claimed.count(r.spec.index) > 0;
    n.partition = n.claimed ? partition_of.at(r.spec.index) : -1;
    n.host_kind = r.host_kind;
    n.reasons = r.reasons;
    if (late.count(r.spec.index)) {
      n.reasons.insert(n.reasons.end(), late[r.spec.index].begin(), late[r.spec.index].end());
    }
    n.macs = r.macs;
    report->claimed_nodes += n.claimed;
    report->nodes.push_back(std::move(n));
  }
  report->summary = str_cat("NACC delegate: claimed ", report->claimed_nodes, " of ",
                            report->total_nodes, " nodes in ",
                            plural(final_parts.size(), "partition"));

  const std::string signature = model_signature(*ctx, specs);
  {
    std::lock_guard<std::mutex> lock(d->mu);
    // One entry per context: a re-prepare (input resize) replaces the entry.
    auto it = std::find_if(d->reports.begin(), d->reports.end(),
                           [&](const auto& r) { return r->context == report->context; });
    if (it != d->reports.end()) {
      report->ordinal = (*it)->ordinal;
      *it = report;
    } else {
      report->ordinal = static_cast<int>(d->reports.size());
      d->reports.push_back(report);
    }
    if (d->logged.insert(signature).second) log_decisions(*d, *report, t);
  }
  for (size_t i = 0; i < final_parts.size(); ++i) {
    final_parts[i].label = str_cat("NACC partition ", i, " (", node_range(final_parts[i].nodes),
                                   ", ", plural(final_parts[i].nodes.size(), "op"), ")");
  }

  if (d->options.fallback == Fallback::kError && report->claimed_nodes < report->total_nodes) {
    std::string list;
    int shown = 0;
    for (const NodeReport& n : report->nodes) {
      if (n.claimed) continue;
      if (shown++ < 8) {
        list += str_cat("\n  ", n.op, n.name.empty() ? "" : str_cat(" '", n.name, "'"), " (node ",
                        n.node, "): ", n.reasons.empty() ? "" : n.reasons[0].display());
      }
    }
    if (shown > 8) list += str_cat("\n  ... and ", shown - 8, " more");
    report_error(ctx, str_cat("fallback=error: ", report->total_nodes - report->claimed_nodes,
                              " of ", report->total_nodes, " nodes would stay on the host:", list));
    return kTfLiteError;
  }
  if (claimed.empty()) return kTfLiteOk;

  TfLiteRegistration reg{};
  reg.init = [](TfLiteContext* ctx, const char* buffer, size_t) -> void* {
    try {
      const auto* params = reinterpret_cast<const TfLiteDelegateParams*>(buffer);
      auto* d = static_cast<NaccDelegate*>(params->delegate->data_);
      const std::vector<int> nodes = to_vector(params->nodes_to_replace);
      const std::multiset<int> wanted(nodes.begin(), nodes.end());
      std::lock_guard<std::mutex> lock(d->mu);
      auto& pending = d->pending[ctx];
      for (auto it = pending.begin(); it != pending.end(); ++it) {
        if (std::multiset<int>(it->nodes.begin(), it->nodes.end()) == wanted) {
          auto* kernel = new PartitionKernel(std::move(*it), d->options);
          pending.erase(it);
          return kernel;
        }
      }
    } catch (...) {
    }
    return nullptr;
  };
  reg.free = [](TfLiteContext*, void* buffer) { delete static_cast<PartitionKernel*>(buffer); };
  reg.prepare = [](TfLiteContext* ctx, TfLiteNode* node) -> TfLiteStatus {
    auto* k = static_cast<PartitionKernel*>(node->user_data);
    if (!k) {
      report_error(ctx, "a partition kernel has no compiled Program (the delegate's Prepare did "
                        "not produce this partition)");
      return kTfLiteError;
    }
    try {
      return k->prepare(ctx);
    } catch (const std::exception& e) {
      report_error(ctx, e.what());
    } catch (...) {
      report_error(ctx, str_cat(k->label(), ": unknown error in prepare"));
    }
    return kTfLiteError;
  };
  reg.invoke = [](TfLiteContext* ctx, TfLiteNode* node) -> TfLiteStatus {
    auto* k = static_cast<PartitionKernel*>(node->user_data);
    if (!k) return kTfLiteError;
    try {
      return k->invoke(ctx);
    } catch (const std::exception& e) {
      // Messages of the partition's own checks already start with its label.
      const bool labelled = std::string(e.what()).rfind(k->label(), 0) == 0;
      report_error(ctx, labelled ? std::string(e.what()) : str_cat(k->label(), ": ", e.what()));
    } catch (...) {
      report_error(ctx, str_cat(k->label(), ": unknown error in invoke"));
    }
    return kTfLiteError;
  };
  reg.profiling_string = [](const TfLiteContext*, const TfLiteNode* node) -> const char* {
    auto* k = static_cast<const PartitionKernel*>(node->user_data);
    return k ? k->label().c_str() : kRegistrationName;
  };
  reg.builtin_code = kTfLiteBuiltinDelegate;
  reg.custom_name = kRegistrationName;
  reg.version = 1;
  reg.registration_external = nullptr;
  reg.async_kernel = nullptr;
  reg.inplace_operator = 0;

  {
    std::lock_guard<std::mutex> lock(d->mu);
    d->pending[ctx] = std::move(final_parts);
  }
  const std::vector<int> nodes(claimed.begin(), claimed.end());
  IntArray arr(nodes);
  const TfLiteStatus status =
      ctx->ReplaceNodeSubsetsWithDelegateKernels(ctx, reg, arr.get(), &d->base);
  {
    std::lock_guard<std::mutex> lock(d->mu);
    d->pending.erase(ctx);
  }
  return status;
}

TfLiteStatus delegate_prepare(TfLiteContext* ctx, TfLiteDelegate* base) {
  auto* d = static_cast<NaccDelegate*>(base->data_);
  try {
    return prepare_impl(ctx, d);
  } catch (const std::exception& e) {
    if (d->options.fallback == Fallback::kError) {
      report_error(ctx, e.what());
      return kTfLiteError;
    }
    // Never take the interpreter down: leave the whole subgraph to TFLite.
    d->log.log(LogLevel::kError, str_cat("the subgraph stays on the host: ", e.what()));
    return kTfLiteOk;
  } catch (...) {
    d->log.log(LogLevel::kError, "the subgraph stays on the host: unknown error");
    return d->options.fallback == Fallback::kError ? kTfLiteError : kTfLiteOk;
  }
}

std::vector<std::pair<std::string, std::string>> key_values(const char* const* keys,
                                                           const char* const* values, size_t n) {
  std::vector<std::pair<std::string, std::string>> kv;
  for (size_t i = 0; i < n; ++i) {
    check_arg(keys && values && keys[i] && values[i], "option ", i, " has a null key or value");
    kv.emplace_back(keys[i], values[i]);
  }
  return kv;
}

// The low 32 bits of num_options (ctypes passes a C int; see tflite_abi.h).
size_t option_count(size_t n) { return static_cast<uint32_t>(n); }

}  // namespace
}  // namespace nacc::tflite

using nacc::tflite::NaccDelegate;

extern "C" {

TfLiteDelegate* tflite_plugin_create_delegate(const char* const* options_keys,
                                              const char* const* options_values,
                                              size_t num_options,
                                              void (*report_error)(const char*)) {
  try {
    auto kv = nacc::tflite::key_values(options_keys, options_values,
                                       nacc::tflite::option_count(num_options));
    auto* d = new NaccDelegate(nacc::tflite::parse_options(kv));
    d->base.data_ = d;
    d->base.Prepare = nacc::tflite::delegate_prepare;
    d->base.CopyFromBufferHandle = nullptr;
    d->base.CopyToBufferHandle = nullptr;
    d->base.FreeBufferHandle = nullptr;
    d->base.flags = kTfLiteDelegateFlagsNone;
    d->base.opaque_delegate_builder = nullptr;
    std::lock_guard<std::mutex> lock(nacc::tflite::registry_mutex());
    nacc::tflite::registry().insert(&d->base);
    return &d->base;
  } catch (const std::exception& e) {
    if (report_error) report_error(nacc::str_cat("NACC delegate: ", e.what()).c_str());
  } catch (...) {
    if (report_error) report_error("NACC delegate: unknown error while creating the delegate");
  }
  return nullptr;
}

void tflite_plugin_destroy_delegate(TfLiteDelegate* delegate) {
  if (!delegate) return;
  {
    std::lock_guard<std::mutex> lock(nacc::tflite::registry_mutex());
    if (!nacc::tflite::registry().erase(delegate)) return;  // not ours, or destroyed already
  }
  delete static_cast<NaccDelegate*>(delegate->data_);
}

// ---- C API for python/nacc/tflite.py ------------------------------------------------

__attribute__((visibility("default"))) const char* nacc_tflite_version() {
  return nacc::kVersion;
}

// The option table as JSON (see options.h); a static string.
__attribute__((visibility("default"))) const char* nacc_tflite_option_specs_json() {
  static const std::string json = nacc::tflite::option_specs_json();
  return json.c_str();
}

// Validates options as tflite_plugin_create_delegate would (creating dump_dir
// / cache_dir). Returns 0 when valid; otherwise 1 with the message in `error`
// (NUL-terminated, truncated to error_size).
__attribute__((visibility("default"))) int nacc_tflite_validate_options(
    const char* const* keys, const char* const* values, size_t num_options, char* error,
    size_t error_size) {
  std::string message;
  try {
    nacc::tflite::parse_options(nacc::tflite::key_values(keys, values, num_options));
    return 0;
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
    message = "unknown error";
  }
  if (error && error_size > 0) {
    const size_t n = std::min(message.size(), error_size - 1);
    std::memcpy(error, message.data(), n);
    error[n] = '\0';
  }
  return 1;
}

// Test only (docs/reliability.md): arms nacc::testing::inject_faults in this
// library's copy of the runtime. kind: "none", "bus_error", "dma_overrun".
// Returns 0, or 1 for a bad argument. Not reachable through any delegate option.
__attribute__((visibility("default"))) int nacc_tflite_test_inject_fault(const char* kind,
                                                                         int64_t command,
                                                                         int runs) {
  return nacc::partition::test_inject_fault(kind, command, runs);
}

// Copies the delegate's report as JSON into `buffer` (NUL-terminated,
// truncated to capacity) and returns its full length, or -1 when `delegate`
// is not a live delegate of this library.
__attribute__((visibility("default"))) int64_t nacc_tflite_delegate_report(
    const TfLiteDelegate* delegate, char* buffer, int64_t capacity) {
  try {
    std::lock_guard<std::mutex> registry_lock(nacc::tflite::registry_mutex());
    if (!delegate || !nacc::tflite::registry().count(delegate)) return -1;
    auto* d = static_cast<NaccDelegate*>(delegate->data_);
    std::string json;
    {
      std::lock_guard<std::mutex> lock(d->mu);
      json = nacc::tflite::report_json(d->options, d->reports);
    }
    if (buffer && capacity > 0) {
      const size_t n = std::min(json.size(), static_cast<size_t>(capacity - 1));
      std::memcpy(buffer, json.data(), n);
      buffer[n] = '\0';
    }
    return static_cast<int64_t>(json.size());
  } catch (...) {
    return -1;
  }
}

}  // extern "C"

// Region assignment, RESHAPE aliasing, the linear-scan scratch allocator and
// the constant pool (see memory.h).
#include "compiler/memory.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "common/error.h"

namespace nacc::compiler {

namespace {

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
};

int64_t tensor_bytes(const ir::Tensor& t) { return t.elements() * ir::dtype_size(t.dtype); }

}  // namespace

MemoryPlan plan_memory(const ir::Graph& graph, const std::vector<LoweredOp>& lowered,
                       const std::vector<int>& inputs, const std::vector<int>& outputs) {
  MemoryPlan plan;
  const size_t nt = graph.tensors.size();
  plan.storage.assign(nt, Storage{});
  std::vector<char> is_input(nt, 0), is_output(nt, 0);
  for (int id : inputs) is_input[id] = 1;
  for (int id : outputs) is_output[id] = 1;

  // RESHAPE: the output is a view of the input's bytes, unless both already
  // belong to partition inputs/outputs (then a DMA copy).
  UnionFind uf(nt);
  std::vector<char> io_class(nt, 0);
  for (size_t t = 0; t < nt; ++t) io_class[t] = is_input[t] || is_output[t];
  for (const LoweredOp& l : lowered) {
    if (l.unit != Unit::kView) continue;
    const int a = uf.find(l.input), b = uf.find(l.output);
    if (io_class[a] && io_class[b]) {
      plan.copy_ops.push_back(l.op_index);
      continue;
    }
    uf.parent[b] = a;
    io_class[a] = io_class[a] || io_class[b];
  }

  // Input classes: their region is chosen below, once the scratch is known.
  std::vector<int> class_region(nt, -1);
  std::vector<int64_t> io_offset(nt, 0);
  constexpr int kPending = limits::kNumRegions;
  for (int id : inputs) class_region[uf.find(id)] = kPending;

  // Lifetimes of the remaining runtime tensors, by storage class: from the
  // producing op to the last op that reads any member.
  const int nops = int(graph.ops.size());
  std::vector<int> first(nt, nops), last(nt, -1);
  std::vector<int64_t> bytes(nt, 0);
  for (int i = 0; i < nops; ++i) {
    const ir::Op& op = graph.ops[i];
    for (int id : op.outputs) {
      const int c = uf.find(id);
      first[c] = std::min(first[c], i);
      last[c] = std::max(last[c], i);
      bytes[c] = std::max(bytes[c], tensor_bytes(graph.tensor(id)));
    }
    for (int id : op.inputs) {
      if (id < 0 || graph.tensor(id).is_constant()) continue;
      const int c = uf.find(id);
      last[c] = std::max(last[c], i);
      bytes[c] = std::max(bytes[c], tensor_bytes(graph.tensor(id)));
    }
  }
  // A tensor only the lowered parts of an op use (a space-to-depth staging
  // tensor, compiler/lower.h kStagingTensor): live during that op.
  for (const LoweredOp& l : lowered) {
    for (int id : {l.input, l.input2, l.output}) {
      if (id < 0 || graph.tensor(id).is_constant()) continue;
      const int c = uf.find(id);
      first[c] = std::min(first[c], l.op_index);
      last[c] = std::max(last[c], l.op_index);
      bytes[c] = std::max(bytes[c], tensor_bytes(graph.tensor(id)));
    }
  }
  std::vector<char> output_class(nt, 0);
  for (int id : outputs) output_class[uf.find(id)] = 1;

  // Scratch: classes that are neither input nor output, placed by a linear
  // scan in order of definition at the lowest offset free over their lifetime.
  std::vector<int> scratch;
  for (size_t t = 0; t < nt; ++t) {
    if (uf.find(int(t)) == int(t) && last[t] >= 0 && class_region[t] < 0 && !output_class[t] &&
        !graph.tensors[t].is_constant()) {
      scratch.push_back(int(t));
    }
  }
  std::sort(scratch.begin(), scratch.end(),
            [&](int a, int b) { return first[a] != first[b] ? first[a] < first[b] : a < b; });
  std::vector<int64_t> offset(nt, -1);
  int64_t scratch_size = 0;
  for (size_t i = 0; i < scratch.size(); ++i) {
    const int c = scratch[i];
    std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end) of overlapping lifetimes
    for (size_t j = 0; j < i; ++j) {
      const int d = scratch[j];
      if (first[d] <= last[c] && first[c] <= last[d]) busy.push_back({offset[d], offset[d] + bytes[d]});
    }
    std::sort(busy.begin(), busy.end());
    int64_t at = 0;
    for (const auto& [b, e] : busy) {
      if (at + bytes[c] <= b) break;
      at = std::max(at, align_up(e, kBufferAlignment));
    }
    offset[c] = at;
    scratch_size = std::max(scratch_size, at + bytes[c]);
  }
  // Regions: 0 constants, then inputs, scratch, outputs ([C]'s usual order).
  // Each input and output has a region of its own while the 8 regions hold
  // them; past that the smallest share one staging region per kind
  // (docs/device_model.md "Staging regions"), so any number fits.
  const int free_regions = limits::kNumRegions - 1 - (scratch.empty() ? 0 : 1);
  const int nin = int(inputs.size()), nio = nin + int(outputs.size());
  const auto io_bytes = [&](int k) {
    return tensor_bytes(graph.tensor(k < nin ? inputs[size_t(k)] : outputs[size_t(k - nin)]));
  };
  std::vector<char> staged(size_t(nio), 0);
  const auto regions_needed = [&] {
    int direct = 0, in_staged = 0, out_staged = 0;
    for (int k = 0; k < nio; ++k) {
      if (!staged[size_t(k)]) ++direct;
      else (k < nin ? in_staged : out_staged)++;
    }
    return direct + (in_staged > 0) + (out_staged > 0);
  };
  while (regions_needed() > free_regions) {
    int pick = -1;  // the smallest tensor still in a region of its own (the later on a tie)
    for (int k = 0; k < nio; ++k) {
      if (!staged[size_t(k)] && (pick < 0 || io_bytes(k) <= io_bytes(pick))) pick = k;
    }
    staged[size_t(pick)] = 1;
  }
  for (int lo : {0, nin}) {  // a kind with one staged tensor: back in a region of its own
    const int hi = lo == 0 ? nin : nio;
    if (std::count(staged.begin() + lo, staged.begin() + hi, 1) == 1) {
      std::fill(staged.begin() + lo, staged.begin() + hi, 0);
    }
  }
  int next_region = 1;
  // Places io tensor k (of `kind`, io index `index`): its region and offset.
  int staging_region[2] = {-1, -1};
  const auto place = [&](int k, RegionKind kind, int index, int64_t bytes) -> std::pair<int, int64_t> {
    if (!staged[size_t(k)]) {
      plan.regions[next_region] = RegionDesc{kind, index, bytes};
      return {next_region++, 0};
    }
    int& r = staging_region[kind == RegionKind::kInput ? 0 : 1];
    if (r < 0) {
      r = next_region++;
      plan.regions[r] = RegionDesc{kind, -1, 0};
    }
    const int64_t at = align_up(plan.regions[r].size, kBufferAlignment);
    plan.regions[r].size = at + bytes;
    return {r, at};
  };
  for (int k = 0; k < nin; ++k) {
    const int id = inputs[size_t(k)];
    const ir::Tensor& t = graph.tensor(id);
    const auto [r, at] = place(k, RegionKind::kInput, k, tensor_bytes(t));
    class_region[uf.find(id)] = r;
    io_offset[uf.find(id)] = at;
    plan.inputs.push_back(IoTensor{t.name, t.shape, r, tensor_bytes(t), t.quant.scales.at(0),
                                   t.quant.zero_points.at(0), at});
  }
  if (!scratch.empty()) {
    plan.scratch_region = next_region++;
    plan.regions[plan.scratch_region] = RegionDesc{RegionKind::kScratch, -1, scratch_size};
    for (int c : scratch) class_region[c] = plan.scratch_region;
  }

  for (size_t k = 0; k < outputs.size(); ++k) {
    const int id = outputs[k];
    const ir::Tensor& t = graph.tensor(id);
    const int c = uf.find(id);
    const auto [r, at] = place(nin + int(k), RegionKind::kOutput, int(k), tensor_bytes(t));
    if (is_input[id]) {
      // A partition input that is also an output: its own bytes, filled by a copy.
      plan.end_copies.push_back({Storage{class_region[c], io_offset[c], tensor_bytes(t)},
                                 Storage{r, at, tensor_bytes(t)}});
    } else {
      class_region[c] = r;
      io_offset[c] = at;
    }
    plan.outputs.push_back(IoTensor{t.name, t.shape, r, tensor_bytes(t), t.quant.scales.at(0),
                                    t.quant.zero_points.at(0), at});
  }

  for (size_t t = 0; t < nt; ++t) {
    const ir::Tensor& tensor = graph.tensors[t];
    if (tensor.is_constant()) continue;
    const int c = uf.find(int(t));
    if (class_region[c] < 0) continue;
    plan.storage[t] = Storage{class_region[c], offset[c] >= 0 ? offset[c] : io_offset[c],
                              tensor_bytes(tensor)};
  }
  return plan;
}

int64_t ConstantPool::add(const void* data, size_t n, size_t pad_to) {
  const int64_t at = align_up(int64_t(bytes_.size()), kConstantAlignment);
  bytes_.resize(at, 0);
  bytes_.insert(bytes_.end(), static_cast<const uint8_t*>(data),
                static_cast<const uint8_t*>(data) + n);
  if (pad_to > n) bytes_.resize(at + pad_to, 0);
  return at;
}

int64_t ConstantPool::add_int32(const std::vector<int32_t>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint32_t u = uint32_t(v[i]);
    b[4 * i] = uint8_t(u);
    b[4 * i + 1] = uint8_t(u >> 8);
    b[4 * i + 2] = uint8_t(u >> 16);
    b[4 * i + 3] = uint8_t(u >> 24);
  }
  return add(b.data(), b.size());
}

int64_t ConstantPool::add_float64(const std::vector<double>& v) {
  std::vector<uint8_t> b(v.size() * 8);
  for (size_t i = 0; i < v.size(); ++i) {
    uint64_t u;
    std::memcpy(&u, &v[i], 8);
    for (int k = 0; k < 8; ++k) b[8 * i + k] = uint8_t(u >> (8 * k));
  }
  return add(b.data(), b.size());
}

}  // namespace nacc::compiler

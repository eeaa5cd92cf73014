// ONNX node units -> IR ops (translate.h). Reasons returned here are the
// ONNX-side limits (attribute modes, layouts, quantization forms the IR cannot
// carry); the hardware limits are the capability rules' business (support/).
#include "ep/translate.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>

#include "arch/limits.h"
#include "common/cpu.h"
#include "ir/macs.h"
#include "support/transpose_copy.h"

namespace nacc::ep {

namespace {

using ir::DType;
using ir::OpKind;

constexpr int kUint8ToInt8Offset = 128;  // q_int8 = q_uint8 - 128, exactly
constexpr const char* kMsDomain = "com.microsoft";
// Bias scale must equal input scale x weight scale up to float rounding.
constexpr double kBiasScaleTolerance = 1e-4;

bool is_8bit(int elem) {
  return elem == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8 || elem == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
}

std::vector<int64_t> to_nhwc(const std::vector<int64_t>& s) {
  if (s.size() != 4) return s;
  return {s[0], s[2], s[3], s[1]};
}

std::string shape_str(const std::vector<int64_t>& s) { return ir::shape_str(s); }

// Data types of the QDQ target ops and which inputs carry (de)quantized data.
struct QdqOpInfo {
  const char* type;
  std::vector<int> data_inputs;  // inputs that must come from a DequantizeLinear
  int optional_from = 99;        // data inputs at or after this index may be absent
  bool fuses_activation = false; // may absorb a following Relu / Clip
  // Inputs whose DequantizeLinear may read a folded constant chain
  // (OnnxGraph::fold_constant): weights and bias.
  std::vector<int> const_inputs = {};
  bool variadic = false;         // every input is a data input (Concat)
};

// The data inputs of `n` under `info`.
std::vector<int> data_inputs(const QdqOpInfo& info, const OnnxNode& n) {
  if (!info.variadic) return info.data_inputs;
  std::vector<int> all(n.inputs.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  return all;
}

const std::vector<QdqOpInfo>& qdq_ops() {
  static const std::vector<QdqOpInfo> ops = {
      {"Conv", {0, 1, 2}, 2, true, {1, 2}},
      {"MatMul", {0, 1}, 99, true, {1}},
      {"Gemm", {0, 1, 2}, 2, true, {1, 2}},
      {"Add", {0, 1}, 99, true},
      {"Sub", {0, 1}, 99, true},
      {"Mul", {0, 1}, 99, true},
      {"MaxPool", {0}},
      {"AveragePool", {0}},
      {"GlobalAveragePool", {0}},
      {"Relu", {0}},
      {"Clip", {0}},
      {"Sigmoid", {0}},
      {"Tanh", {0}},
      {"LeakyRelu", {0}},
      {"HardSwish", {0}},
      {"Reshape", {0}},
      {"Squeeze", {0}},
      {"Unsqueeze", {0}},
      {"Pad", {0}},
      {"Flatten", {0}},
      {"Concat", {}, 99, false, {}, true},
      {"Slice", {0}},
      {"Split", {0}},
      {"DepthToSpace", {0}},
      {"SpaceToDepth", {0}},
      {"Resize", {0}},
  };
  return ops;
}

const QdqOpInfo* qdq_info(const OnnxNode& n) {
  if (!(n.domain.empty() || n.domain == "ai.onnx")) return nullptr;
  for (const auto& info : qdq_ops()) {
    if (n.op_type == info.type) return &info;
  }
  return nullptr;
}

bool is_qoperator(const OnnxNode& n) {
  static const std::set<std::string> onnx_ops = {"QLinearConv", "QLinearMatMul"};
  static const std::set<std::string> ms_ops = {"QLinearAdd", "QLinearMul", "QLinearAveragePool", "QGemm",
                                               "QLinearSigmoid", "QLinearLeakyRelu",
                                               "QLinearGlobalAveragePool", "QLinearConcat"};
  if ((n.domain.empty() || n.domain == "ai.onnx") && onnx_ops.count(n.op_type)) return true;
  return n.domain == kMsDomain && ms_ops.count(n.op_type);
}

// ---- layout chains ---------------------------------------------------------------
// Reshape / Flatten / Transpose / Squeeze / Unsqueeze move no value: on an
// int8 tensor (QOperator models) or between a DequantizeLinear and a
// QuantizeLinear of one quantization (QDQ; the pair gives each value back,
// and ORT drops it) they only reorder elements. The NPU's tensors are NHWC,
// so such a chain from a 4-D NCHW map is folded where its element order can
// be absorbed exactly: into the weight columns of the Gemm / MatMul it feeds,
// or, when it ends in a 4-D map of the same shape whose elements it only
// moves between channels (ShuffleNet's channel shuffle Reshape -> Transpose
// -> Reshape), into a channel permutation.

bool is_layout_op(const OnnxNode& n) {
  return (n.domain.empty() || n.domain == "ai.onnx") &&
         (n.op_type == "Reshape" || n.op_type == "Flatten" || n.op_type == "Transpose" ||
          n.op_type == "Squeeze" || n.op_type == "Unsqueeze");
}

// Whether (De)QuantizeLinear nodes a and b quantize alike: per-tensor,
// constant and equal scale and zero point (type included).
bool same_qparams(const OnnxGraph& g, const OnnxNode& a, const OnnxNode& b) {
  for (int i : {1, 2}) {
    const int va = a.input(size_t(i)), vb = b.input(size_t(i));
    if ((va < 0) != (vb < 0)) return false;
    if (va < 0) continue;
    const OnnxValue &x = g.value(va), &y = g.value(vb);
    if (!x.is_constant || !y.is_constant || x.elem_type != y.elem_type) return false;
    if (x.numbers().size() != 1 || x.numbers() != y.numbers()) return false;
  }
  return true;
}

bool single_use(const OnnxGraph& g, int v) {
  return v >= 0 && !g.value(v).is_graph_output && g.value(v).consumers.size() == 1;
}

struct LayoutChain {
  int input = -1;          // the value the chain starts from (QDQ: int8, before its DQ)
  int first_dq = -1;       // QDQ: the DequantizeLinear reading `input`
  std::vector<int> steps;  // layout nodes in data order
  std::vector<int> nodes;  // the steps and the Q / DQ between them (not first_dq)
};

// Walks back from `v`, the value a consumer reads (QDQ: the float output of
// its DequantizeLinear `ref`; int8 form: the int8 value), through layout
// steps as far as they go.
LayoutChain walk_layout_chain(const OnnxGraph& g, int v, const OnnxNode* ref) {
  LayoutChain c;
  int cur = v;
  for (int depth = 0; depth < 16; ++depth) {
    if (ref != nullptr) {
      const OnnxNode* d = g.producer_if(cur, "DequantizeLinear");
      if (d == nullptr || !single_use(g, cur) || !same_qparams(g, *d, *ref)) return {};
      const int x = d->input(0);
      const OnnxNode* q = g.producer_if(x, "QuantizeLinear");
      const int f = q ? q->input(0) : -1;
      const int p = f >= 0 ? g.value(f).producer : -1;
      if (q == nullptr || p < 0 || !is_layout_op(g.nodes[size_t(p)]) || !single_use(g, x) ||
          !single_use(g, f) || !same_qparams(g, *q, *ref)) {
        c.input = x;
        c.first_dq = g.index_of(d);
        break;
      }
      c.nodes.insert(c.nodes.end(), {g.index_of(d), g.index_of(q), p});
      c.steps.insert(c.steps.begin(), p);
      cur = g.nodes[size_t(p)].input(0);
    } else {
      const int p = g.value(cur).producer;
      if (p < 0 || !is_layout_op(g.nodes[size_t(p)]) || !single_use(g, cur) ||
          g.nodes[size_t(p)].input(0) < 0 ||
          !is_8bit(g.value(g.nodes[size_t(p)].input(0)).elem_type)) {
        c.input = cur;
        break;
      }
      c.nodes.push_back(p);
      c.steps.insert(c.steps.begin(), p);
      cur = g.nodes[size_t(p)].input(0);
    }
  }
  if (c.input < 0) return {};
  return c;
}

constexpr int64_t kLayoutChainMaxElements = int64_t(1) << 24;

// For each element of the chain's last output (row-major), the row-major
// index of the element of `input` it holds; or why it cannot be computed.
std::optional<std::string> compute_layout_chain_map(const OnnxGraph& g, int input,
                                                    const std::vector<int>& steps,
                                                    std::vector<int64_t>* src) {
  std::vector<int64_t> shape = g.value(input).shape;
  const int64_t n = g.value(input).elements();
  if (!g.value(input).is_static() || n <= 0 || n > kLayoutChainMaxElements) {
    return str_cat("layout chain input ", shape_str(shape), " is not a static shape of at most ",
                   kLayoutChainMaxElements, " elements");
  }
  src->resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) (*src)[size_t(i)] = i;
  for (int s : steps) {
    const OnnxNode& L = g.nodes[size_t(s)];
    if (L.outputs.empty() || L.outputs[0] < 0) return str_cat(L.label(), " has no output");
    const OnnxValue& out = g.value(L.outputs[0]);
    if (!out.is_static() || out.elements() != n) {
      return str_cat(L.label(), " output ", shape_str(out.shape), " is not a static shape of ", n,
                     " elements");
    }
    if (L.op_type == "Transpose") {
      const size_t rank = shape.size();
      std::vector<int64_t> perm = L.attr_ints("perm").value_or(std::vector<int64_t>{});
      if (perm.empty()) {
        for (size_t d = 0; d < rank; ++d) perm.push_back(int64_t(rank - 1 - d));
      }
      std::vector<int64_t> out_shape(rank);
      std::vector<bool> seen(rank, false);
      if (perm.size() != rank) return str_cat(L.label(), " perm has ", perm.size(), " axes");
      for (size_t d = 0; d < rank; ++d) {
        if (perm[d] < 0 || perm[d] >= int64_t(rank) || seen[size_t(perm[d])]) {
          return str_cat(L.label(), " perm is not a permutation");
        }
        seen[size_t(perm[d])] = true;
        out_shape[d] = shape[size_t(perm[d])];
      }
      if (out_shape != out.shape)
        return str_cat(L.label(), " output shape disagrees with its perm");
      std::vector<int64_t> in_stride(rank, 1);
      for (size_t d = rank; d-- > 1;) in_stride[d - 1] = in_stride[d] * shape[d];
      std::vector<int64_t> next(static_cast<size_t>(n)), idx(rank, 0);
      for (int64_t o = 0; o < n; ++o) {
        int64_t i = 0;
        for (size_t d = 0; d < rank; ++d) i += idx[d] * in_stride[size_t(perm[d])];
        next[size_t(o)] = (*src)[size_t(i)];
        for (size_t d = rank; d-- > 0;) {  // next output index, row-major
          if (++idx[d] < out_shape[d]) break;
          idx[d] = 0;
        }
      }
      *src = std::move(next);
    }
    // Reshape / Flatten / Squeeze / Unsqueeze keep the row-major order.
    shape = out.shape;
  }
  return std::nullopt;
}

// The map of compute_layout_chain_map, computed once per graph (a chain is
// looked at by find_units at every plan and partition build and by every
// partition a unit is tried in): memoized in the graph's memo by (input,
// steps). Failures are not kept (they are found before any element moves).
std::optional<std::string> layout_chain_map(const OnnxGraph& g, int input,
                                            const std::vector<int>& steps,
                                            std::shared_ptr<const std::vector<int64_t>>* src) {
  std::vector<int> key{input};
  key.insert(key.end(), steps.begin(), steps.end());
  {
    std::lock_guard<std::mutex> lock(g.memo->mu);
    auto it = g.memo->layout_maps.find(key);
    if (it != g.memo->layout_maps.end()) {
      *src = it->second;
      return std::nullopt;
    }
  }
  auto map = std::make_shared<std::vector<int64_t>>();
  if (auto e = compute_layout_chain_map(g, input, steps, map.get())) return e;
  std::lock_guard<std::mutex> lock(g.memo->mu);
  *src = g.memo->layout_maps.emplace(std::move(key), std::move(map)).first->second;
  return std::nullopt;
}

// The channel permutation p (output channel c holds input channel p[c]) a
// chain from [1, C, H, W] to [1, C, H, W] computes, or nullopt when it moves
// elements across pixels.
std::optional<std::vector<int64_t>> channel_permutation(const std::vector<int64_t>& shape,
                                                        const std::vector<int64_t>& src) {
  if (shape.size() != 4 || shape[0] != 1) return std::nullopt;
  const int64_t C = shape[1], HW = shape[2] * shape[3];
  std::vector<int64_t> p(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    p[size_t(c)] = src[size_t(c * HW)] / HW;
    for (int64_t i = 0; i < HW; ++i) {
      if (src[size_t(c * HW + i)] != p[size_t(c)] * HW + i) return std::nullopt;
    }
  }
  return p;
}

// The position of row-major ONNX element i in the NPU's order of a tensor
// of this shape (NHWC for rank 4, row-major otherwise).
int64_t ir_position(const std::vector<int64_t>& shape, int64_t i) {
  if (shape.size() != 4) return i;
  const int64_t C = shape[1], H = shape[2], W = shape[3];
  const int64_t n = i / (C * H * W), c = i / (H * W) % C, h = i / W % H, w = i % W;
  return ((n * H + h) * W + w) * C + c;
}

// Whether the chain keeps the NPU's element order: its output, in the NPU's
// order, is its input's bytes in the NPU's order (a view, no data moves) —
// e.g. tf2onnx's Transpose to NHWC then Reshape to [1, H*W*C].
bool is_ir_view(const std::vector<int64_t>& in_shape, const std::vector<int64_t>& out_shape,
                const std::vector<int64_t>& src) {
  for (size_t o = 0; o < src.size(); ++o) {
    if (ir_position(in_shape, src[o]) != ir_position(out_shape, int64_t(o))) return false;
  }
  return true;
}

// Whether the chain's output, in the NPU's order, is its input's bytes in
// ONNX row-major order (the input read without the NCHW conversion).
bool is_raw_view(const std::vector<int64_t>& out_shape, const std::vector<int64_t>& src) {
  for (size_t o = 0; o < src.size(); ++o) {
    if (src[o] != ir_position(out_shape, int64_t(o))) return false;
  }
  return true;
}

// Whether the chain's output, in ONNX row-major order, is its input's bytes
// in the NPU's order (the output leaves a partition without the NCHW
// conversion).
bool is_raw_output(const std::vector<int64_t>& in_shape, const std::vector<int64_t>& src) {
  for (size_t o = 0; o < src.size(); ++o) {
    if (ir_position(in_shape, src[o]) != int64_t(o)) return false;
  }
  return true;
}

// Whether value v (a unit's 8-bit output) is read only as the graph's output:
// a graph output itself with no readers, or read only by DequantizeLinear
// nodes whose float outputs are graph outputs nothing else reads.
bool read_only_outside(const OnnxGraph& g, int v) {
  const OnnxValue& val = g.value(v);
  if (val.consumers.empty()) return val.is_graph_output;
  for (int c : val.consumers) {
    const OnnxNode& n = g.nodes[size_t(c)];
    if (!n.is("DequantizeLinear", "*") || n.outputs.empty() || n.outputs[0] < 0) return false;
    const OnnxValue& f = g.value(n.outputs[0]);
    if (!f.is_graph_output || !f.consumers.empty()) return false;
  }
  return true;
}

bool has_transpose(const OnnxGraph& g, const std::vector<int>& steps) {
  for (int s : steps) {
    if (g.nodes[size_t(s)].op_type == "Transpose") return true;
  }
  return false;
}

// A layout chain as byte copies: the chain's input in the NPU's order (NHWC
// for rank 4) goes through each copy in turn — the bytes viewed as `shape`,
// permuted by `perm` (output axis k is input axis perm[k]) — and ends as its
// output in the NPU's order. The chain's shapes are cut into "atoms", the
// coarsest axes no step splits: a Transpose permutes whole axes, a Reshape
// regroups consecutive atoms (splitting one where a new axis ends inside
// it). A Reshape that would split an atom unevenly first makes the bytes the
// current value's ONNX order (one copy) and starts new atoms from its output
// shape (a Reshape of row-major bytes is a view). Size-1 axes are dropped,
// atoms neighbouring in both orders merged; copies that move nothing are
// left out (no copy at all: the chain is a view).
struct ChainCopy {
  std::vector<int64_t> shape;
  std::vector<int> perm;
  bool identity() const {
    for (size_t k = 0; k < perm.size(); ++k) {
      if (perm[k] != int(k)) return false;
    }
    return true;
  }
};

namespace {

// The copy taking bytes in atom order `from` to atom order `to` (the same atoms).
std::optional<ChainCopy> atoms_copy(const std::vector<int64_t>& size, const std::vector<int>& from,
                                    const std::vector<int>& to) {
  if (from.size() != to.size()) return std::nullopt;
  std::vector<int> pos(size.size(), -1);
  for (size_t k = 0; k < from.size(); ++k) pos[size_t(from[k])] = int(k);
  std::vector<std::pair<int, int>> runs;  // (first position in `from`, length), in `to` order
  for (int a : to) {
    const int p = pos[size_t(a)];
    if (p < 0) return std::nullopt;
    if (!runs.empty() && runs.back().first + runs.back().second == p) {
      ++runs.back().second;
    } else {
      runs.push_back({p, 1});
    }
  }
  std::vector<int> by_from(runs.size());
  for (size_t r = 0; r < runs.size(); ++r) by_from[r] = int(r);
  std::sort(by_from.begin(), by_from.end(),
            [&](int a, int b) { return runs[size_t(a)].first < runs[size_t(b)].first; });
  ChainCopy c;
  std::vector<int> axis_of_run(runs.size());
  for (size_t k = 0; k < by_from.size(); ++k) {
    const auto& r = runs[size_t(by_from[k])];
    int64_t n = 1;
    for (int j = 0; j < r.second; ++j) n *= size[size_t(from[size_t(r.first + j)])];
    c.shape.push_back(n);
    axis_of_run[size_t(by_from[k])] = int(k);
  }
  for (size_t r = 0; r < runs.size(); ++r) c.perm.push_back(axis_of_run[r]);
  if (c.shape.empty()) c = {{1}, {0}};
  if (c.shape.size() == 4 && c.shape[0] != 1) {
    // a 4-D tensor's first axis is a batch to the IR: lead with 1
    c.shape.insert(c.shape.begin(), 1);
    for (int& k : c.perm) ++k;
    c.perm.insert(c.perm.begin(), 0);
  }
  return c;
}

}  // namespace

std::optional<std::vector<ChainCopy>> chain_as_copies(const OnnxGraph& g, int input,
                                                      const std::vector<int>& steps) {
  std::vector<int64_t> size;           // per atom
  std::vector<int> bytes;              // the atoms in the order of the bytes so far
  std::vector<std::vector<int>> dims;  // the current ONNX axes, atoms outer to inner
  std::vector<ChainCopy> copies;
  const auto fresh = [&](const std::vector<int64_t>& shape) {  // new atoms, one per axis
    dims.clear();
    for (int64_t d : shape) {
      dims.push_back({});
      if (d > 1) {
        dims.back().push_back(int(size.size()));
        size.push_back(d);
      }
    }
  };
  const auto npu_order = [](const std::vector<std::vector<int>>& axes) {
    std::vector<int> atoms;
    const bool four = axes.size() == 4;
    for (size_t k = 0; k < axes.size(); ++k) {
      const auto& a = axes[four ? std::array<size_t, 4>{0, 2, 3, 1}[k] : k];
      atoms.insert(atoms.end(), a.begin(), a.end());
    }
    return atoms;
  };
  const auto row_major = [](const std::vector<std::vector<int>>& axes) {
    std::vector<int> atoms;
    for (const auto& a : axes) atoms.insert(atoms.end(), a.begin(), a.end());
    return atoms;
  };
  const auto add_copy = [&](const std::vector<int>& to) {
    auto c = atoms_copy(size, bytes, to);
    if (!c) return false;
    if (!c->identity()) copies.push_back(std::move(*c));
    bytes = to;
    return true;
  };
  for (int64_t d : g.value(input).shape) {
    if (d <= 0) return std::nullopt;
  }
  fresh(g.value(input).shape);
  bytes = npu_order(dims);
  for (int s : steps) {
    const OnnxNode& L = g.nodes[size_t(s)];
    if (L.outputs.empty() || L.outputs[0] < 0 || !g.value(L.outputs[0]).is_static()) {
      return std::nullopt;
    }
    const std::vector<int64_t>& os = g.value(L.outputs[0]).shape;
    if (L.op_type == "Transpose") {
      std::vector<int64_t> perm = L.attr_ints("perm").value_or(std::vector<int64_t>{});
      if (perm.empty()) {
        for (size_t d = 0; d < dims.size(); ++d) perm.push_back(int64_t(dims.size() - 1 - d));
      }
      if (perm.size() != dims.size()) return std::nullopt;
      std::vector<std::vector<int>> next;
      for (int64_t p : perm) {
        if (p < 0 || p >= int64_t(dims.size())) return std::nullopt;
        next.push_back(dims[size_t(p)]);
      }
      dims = std::move(next);
      continue;
    }
    // A Reshape regroups the atoms in row-major order (on copies of the
    // state: an uneven split leaves it as it was).
    std::vector<int64_t> nsize = size;
    std::vector<int> nbytes = bytes, flat = row_major(dims);
    std::vector<std::vector<int>> next;
    bool even = true;
    size_t k = 0;
    for (int64_t t : os) {
      if (t <= 0) return std::nullopt;
      next.push_back({});
      int64_t p = 1;
      while (even && p < t) {
        if (k >= flat.size() || t % p != 0) {
          even = false;
          break;
        }
        const int a = flat[k];
        const int64_t need = t / p;
        if (nsize[size_t(a)] <= need) {
          if (need % nsize[size_t(a)] != 0) {
            even = false;
            break;
          }
        } else {
          if (nsize[size_t(a)] % need != 0) {
            even = false;
            break;
          }
          const int o = int(nsize.size()), i = o + 1;  // split a into (need, size / need)
          nsize.push_back(need);
          nsize.push_back(nsize[size_t(a)] / need);
          flat[k] = o;
          flat.insert(flat.begin() + std::ptrdiff_t(k) + 1, i);
          auto it = std::find(nbytes.begin(), nbytes.end(), a);
          *it = o;
          nbytes.insert(it + 1, i);
        }
        next.back().push_back(flat[k]);
        p *= nsize[size_t(flat[k])];
        ++k;
      }
      if (even && p != t) even = false;
    }
    if (even && k == flat.size()) {
      size = std::move(nsize);
      bytes = std::move(nbytes);
      dims = std::move(next);
      continue;
    }
    // Make the bytes this value's ONNX order, then view them as the output.
    if (!add_copy(row_major(dims))) return std::nullopt;
    fresh(os);
    bytes = row_major(dims);
  }
  if (!add_copy(npu_order(dims))) return std::nullopt;
  return copies;
}

// Why the chain's copies do not fit TRANSPOSE ops the DMA can copy (the
// capability rule's own test, support/transpose_copy.h), or nullopt.
std::optional<std::string> chain_copy_error(const std::vector<ChainCopy>& copies) {
  constexpr size_t kMaxChainCopies = 4;
  if (copies.size() > kMaxChainCopies) {
    return str_cat("the layout chain needs ", copies.size(), " copies (at most ",
                   kMaxChainCopies, ")");
  }
  for (const ChainCopy& c : copies) {
    if (c.shape.size() > 6) {
      return str_cat("the layout chain is a permutation of ", c.shape.size(),
                     " axes (at most 6 in one TRANSPOSE)");
    }
    std::string why;
    const auto t = support::transpose_copy(c.shape, c.perm, &why);
    if (!t) return why;
    if (auto e = support::transpose_copy_error(*t)) return e;
  }
  return std::nullopt;
}

// Chains find_units folds: per target node, the chain it absorbs.
std::map<int, LayoutChain> find_layout_chains(const OnnxGraph& g) {
  std::map<int, LayoutChain> chains;
  std::set<int> taken;
  const auto spatial = [&](int v) {
    const auto& s = g.value(v).shape;
    return s.size() == 4 && s[2] * s[3] > 1;
  };
  const auto claim = [&](int target, LayoutChain c) {
    for (int n : c.nodes) {
      if (taken.count(n)) return;
    }
    if (c.first_dq >= 0 && taken.count(c.first_dq)) return;
    for (int n : c.nodes) taken.insert(n);
    if (c.first_dq >= 0) taken.insert(c.first_dq);
    chains[target] = std::move(c);
  };
  // First the Gemm / MatMul readers (their chain is the longest), then the
  // channel permutations, the last node of a chain first (so a chain is
  // taken whole, not from its middle).
  std::vector<int> order;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      const size_t i = pass == 0 ? k : g.nodes.size() - 1 - k;
      if ((pass == 0) == !is_layout_op(g.nodes[i])) order.push_back(int(i));
    }
  }
  for (int target : order) {
    const OnnxNode& n = g.nodes[size_t(target)];
    const bool fc = n.is("Gemm") || n.is("MatMul");
    const bool fc_qop = n.is("QLinearMatMul") || (n.domain == kMsDomain && n.op_type == "QGemm");
    if ((fc || fc_qop) && n.input(0) >= 0) {
      // A Gemm / MatMul reading [1, K] through a chain from a [1, C, H, W] map.
      const OnnxNode* dq = fc ? g.producer_if(n.input(0), "DequantizeLinear") : nullptr;
      if (fc && dq == nullptr) continue;
      LayoutChain c = walk_layout_chain(g, n.input(0), dq);
      const auto& as = g.value(n.input(0)).shape;
      if (c.steps.empty() || as.size() != 2 || as[0] != 1 || g.value(c.input).shape.size() != 4 ||
          g.value(c.input).shape[0] != 1 || !(spatial(c.input) || has_transpose(g, c.steps))) {
        continue;
      }
      std::shared_ptr<const std::vector<int64_t>> map;
      if (layout_chain_map(g, c.input, c.steps, &map)) continue;
      claim(target, std::move(c));
      continue;
    }
    if (!is_layout_op(n) || n.outputs.empty() || n.outputs[0] < 0 || n.input(0) < 0) continue;
    // A chain ending in this node, [1, C, H, W] -> [1, C, H, W], that only
    // permutes channels.
    const OnnxValue& out = g.value(n.outputs[0]);
    const OnnxNode* dq = g.producer_if(n.input(0), "DequantizeLinear");
    const bool int8_form = is_8bit(g.value(n.input(0)).elem_type);
    if (!int8_form) {
      const OnnxNode* q = g.sole_consumer(n.outputs[0]);
      if (dq == nullptr || q == nullptr || !q->is("QuantizeLinear", "*") || out.is_graph_output ||
          !same_qparams(g, *q, *dq)) {
        continue;
      }
    }
    LayoutChain c = walk_layout_chain(g, n.input(0), int8_form ? nullptr : dq);
    if (c.input < 0) continue;
    c.steps.push_back(target);
    // Chains of reshapes between tensors whose NHWC and NCHW orders agree
    // are the per-node units' business (each a view).
    if (!(spatial(c.input) || spatial(n.outputs[0]) || has_transpose(g, c.steps))) continue;
    std::shared_ptr<const std::vector<int64_t>> map;
    if (layout_chain_map(g, c.input, c.steps, &map)) continue;
    const std::vector<int64_t>& src = *map;
    if (!is_ir_view(g.value(c.input).shape, out.shape, src) &&
        !(g.value(c.input).shape.size() == 4 && is_raw_view(out.shape, src)) &&
        !(g.value(c.input).shape == out.shape && channel_permutation(out.shape, src))) {
      // Elements moved across pixels, nothing to absorb the order: one
      // TRANSPOSE (DMA copy passes) when the DMA can copy it.
      // Not on a constant: that is a weight chain, folded into its op's unit.
      ConstTensor folded;
      if (g.value(c.input).is_constant || !g.fold_constant(c.input, &folded)) continue;
      const auto copies = chain_as_copies(g, c.input, c.steps);
      if (!copies || chain_copy_error(*copies)) continue;
    }
    claim(target, std::move(c));
  }
  return chains;
}

}  // namespace

bool is_npu_candidate(const OnnxNode& node) {
  return qdq_info(node) != nullptr || is_qoperator(node) ||
         node.is("DequantizeLinear", "*") || node.is("QuantizeLinear", "*");
}

bool translate_is_float_op(const OnnxNode& node) { return qdq_info(node) != nullptr; }

// ---- unit discovery ------------------------------------------------------------

UnitScan find_units(const OnnxGraph& g) {
  UnitScan scan;
  const std::map<int, LayoutChain> chains = find_layout_chains(g);
  std::set<int> absorbed;  // nodes of a chain folded into another node's unit
  for (const auto& [target, c] : chains) {
    absorbed.insert(c.nodes.begin(), c.nodes.end());
    if (c.first_dq >= 0) absorbed.insert(c.first_dq);
  }
  // The chain of `target` into unit u: its input is the chain's start.
  const auto fold_chain = [&](int target, NodeUnit* u) {
    auto it = chains.find(target);
    if (it == chains.end()) return;
    const LayoutChain& c = it->second;
    if (c.first_dq >= 0) {
      u->dq.resize(std::max<size_t>(u->dq.size(), 1), -1);
      u->nodes.erase(std::remove(u->nodes.begin(), u->nodes.end(), u->dq[0]), u->nodes.end());
      u->dq[0] = c.first_dq;
      u->nodes.insert(u->nodes.begin() + 1, c.first_dq);
    }
    for (int n : c.nodes) {
      if (std::find(u->nodes.begin(), u->nodes.end(), n) == u->nodes.end()) u->nodes.push_back(n);
    }
    u->layout_input = c.input;
    u->layout_steps = c.steps;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const OnnxNode& n = g.nodes[i];
    const int index = static_cast<int>(i);
    if (absorbed.count(index)) continue;
    if (is_qoperator(n)) {
      NodeUnit u;
      u.form = NodeUnit::Form::kQOperator;
      u.target = index;
      u.nodes.push_back(index);
      fold_chain(index, &u);
      scan.units.push_back(std::move(u));
      continue;
    }
    if (chains.count(index) && is_layout_op(n)) {
      // A channel permutation ending here (find_layout_chains).
      NodeUnit u;
      u.target = index;
      u.nodes.push_back(index);
      if (chains.at(index).first_dq >= 0) {
        u.form = NodeUnit::Form::kQdq;
        u.q = g.index_of(g.sole_consumer(n.outputs[0]));
        u.dq.assign(n.inputs.size(), -1);
      } else {
        u.form = NodeUnit::Form::kInt8;
      }
      fold_chain(index, &u);
      if (u.q >= 0) u.nodes.push_back(u.q);
      scan.units.push_back(std::move(u));
      continue;
    }
    const QdqOpInfo* info = qdq_info(n);
    if (info == nullptr) continue;
    const bool int8_copy = n.op_type == "MaxPool" || n.op_type == "Slice" || n.op_type == "Split" ||
                           n.op_type == "Pad";
    const bool reshape_like = n.op_type == "Reshape" || n.op_type == "Flatten" ||
                              n.op_type == "Squeeze" || n.op_type == "Unsqueeze";
    if ((int8_copy || reshape_like) &&
        n.input(0) >= 0 && is_8bit(g.value(n.input(0)).elem_type)) {
      // A Reshape / Flatten of an int8 constant is a step of a weight chain,
      // folded into the unit of the op it feeds. An int8 MaxPool, Slice,
      // Split or Pad (QOperator models: quantize_static pads with the zero
      // point) keeps its input's quantization.
      ConstTensor folded;
      if (!int8_copy && !g.fold_constant(n.input(0), &folded)) continue;
      NodeUnit u;
      u.form = NodeUnit::Form::kInt8;
      u.target = index;
      u.nodes.push_back(index);
      scan.units.push_back(std::move(u));
      continue;
    }
    // A float op with no DequantizeLinear input and no QuantizeLinear after
    // it is ordinary float work: not a candidate, nothing to explain.
    bool touches_qdq = false;
    const std::vector<int> ins = data_inputs(*info, n);
    for (int in : ins) {
      if (g.producer_if(n.input(static_cast<size_t>(in)), "DequantizeLinear")) touches_qdq = true;
    }
    if (!n.outputs.empty() && n.outputs[0] >= 0) {
      for (int c : g.value(n.outputs[0]).consumers) {
        if (g.nodes[c].is("QuantizeLinear", "*")) touches_qdq = true;
      }
    }
    if (!touches_qdq) continue;
    // DQ -> Reshape / Flatten -> Q over a constant is a step of a weight chain
    // (quantize_static writes it for a reshaped weight): folded into the unit
    // of the op it feeds, not a unit of its own.
    if (reshape_like && !n.outputs.empty()) {
      ConstTensor folded;
      if (!g.fold_constant(n.outputs[0], &folded)) continue;
    }
    NodeUnit u;
    u.target = index;
    u.nodes.push_back(index);
    u.dq.assign(n.inputs.size(), -1);
    std::string why;
    for (int in : ins) {
      const int v = n.input(static_cast<size_t>(in));
      if (v < 0) {
        if (in < info->optional_from) why = str_cat("input ", in, " is missing");
        continue;
      }
      const OnnxNode* dq = g.producer_if(v, "DequantizeLinear");
      if (dq == nullptr) {
        why = str_cat("input ", in, " '", g.value(v).name,
                      "' is not produced by a DequantizeLinear (not a QDQ node unit)");
        break;
      }
      if (g.sole_consumer(v) != &n) {
        why = str_cat("the DequantizeLinear output '", g.value(v).name,
                      "' also feeds other nodes");
        break;
      }
      u.dq[in] = g.index_of(dq);
    }
    if (why.empty() && n.op_type == "Split") {
      // Several outputs, each quantized by its own QuantizeLinear.
      for (size_t o = 0; o < n.outputs.size() && why.empty(); ++o) {
        const int v = n.outputs[o];
        const OnnxNode* q = v >= 0 ? g.sole_consumer(v) : nullptr;
        if (q == nullptr || !q->is("QuantizeLinear", "*")) {
          why = str_cat("output ", o, " '", v >= 0 ? g.value(v).name : std::string(),
                        "' is not quantized by its own QuantizeLinear (not a QDQ node unit)");
        } else {
          u.outputs_q.push_back(g.index_of(q));
        }
      }
      if (n.outputs.empty()) why = "has no output";
      if (why.empty()) u.q = u.outputs_q[0];
    } else if (why.empty()) {
      if (n.outputs.empty() || n.outputs[0] < 0) {
        why = "has no output";
      } else {
        for (size_t o = 1; o < n.outputs.size(); ++o) {
          if (n.outputs[o] >= 0 && !g.value(n.outputs[o]).consumers.empty()) {
            why = str_cat("output ", o, " '", g.value(n.outputs[o]).name, "' is used");
          }
        }
      }
    }
    if (why.empty()) {
      int out = n.outputs[0];
      const OnnxNode* next = g.sole_consumer(out);
      if (next && info->fuses_activation && (next->is("Relu") || next->is("Clip")) &&
          !next->outputs.empty()) {
        const OnnxNode* q = g.sole_consumer(next->outputs[0]);
        if (q && q->is("QuantizeLinear", "*")) {
          u.activation = g.index_of(next);
          next = q;
        }
      }
      if (next && next->is("QuantizeLinear", "*")) {
        u.q = g.index_of(next);
      } else {
        why = str_cat("output '", g.value(out).name,
                      "' is not quantized by its own QuantizeLinear (not a QDQ node unit)");
      }
    }
    if (!why.empty()) {
      scan.not_a_unit[index] = why;
      continue;
    }
    for (int d : u.dq) {
      if (d >= 0) u.nodes.push_back(d);
    }
    // A weight or bias reaching its DequantizeLinear through a constant chain
    // (Q -> Transpose -> DQ, ...): the chain is folded into the IR constant,
    // so its nodes belong to the unit.
    for (int in : info->const_inputs) {
      const int d = static_cast<size_t>(in) < u.dq.size() ? u.dq[in] : -1;
      if (d < 0 || g.nodes[d].input(0) < 0 || g.value(g.nodes[d].input(0)).is_constant) continue;
      ConstTensor folded;
      std::vector<int> chain;
      if (!g.fold_constant(g.nodes[d].input(0), &folded, &chain)) {
        u.nodes.insert(u.nodes.end(), chain.begin(), chain.end());
      }
    }
    if (u.activation >= 0) u.nodes.push_back(u.activation);
    if (u.outputs_q.empty()) {
      u.nodes.push_back(u.q);
    } else {
      u.nodes.insert(u.nodes.end(), u.outputs_q.begin(), u.outputs_q.end());
    }
    fold_chain(index, &u);
    scan.units.push_back(std::move(u));
  }
  return scan;
}

int64_t IoBinding::bytes() const {
  int64_t n = elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16 ? 2 : 1;
  for (int64_t d : onnx_shape) n *= d;
  return n;
}

// ---- translation -------------------------------------------------------------

namespace {

// Per-tensor quantization of an int8 / uint8 activation, in IR terms.
struct ActQuant {
  int elem_type = 0;  // ONNX int8 or uint8
  float scale = 0;
  int32_t zero_point = 0;  // IR (int8) zero point
};

// dst[c][r] = src[r][c] for a rows x cols byte matrix (one output channel's
// [I/g][KH*KW] -> [KH*KW][I/g], or a depthwise filter's [O][KH*KW] ->
// [KH*KW][O]): the writes run along dst's rows.
void transpose_2d(const int8_t* src, int64_t rows, int64_t cols, uint8_t* dst) {
  if (rows == 1 || cols == 1) {
    std::memcpy(dst, src, static_cast<size_t>(rows * cols));
    return;
  }
  for (int64_t c = 0; c < cols; ++c) {
    const int8_t* s = src + c;
    uint8_t* d = dst + c * rows;
    for (int64_t r = 0; r < rows; ++r) d[r] = static_cast<uint8_t>(s[r * cols]);
  }
}

struct Weights {
  std::vector<int64_t> shape;  // ONNX shape
  std::vector<int8_t> data;    // int8 (uint8 shifted by -128)
  std::vector<float> scales;
  std::vector<int32_t> zero_points;  // int8 terms
  int axis = 0;
  bool int4 = false;  // INT4 weights (values in [-8, 7]): ir::DType::kInt4
};

}  // namespace

// One unit's translation: collects tensors and ops locally, then commits them
// into the builder, so a unit that fails leaves the builder unchanged.
struct UnitTranslator {
  IrBuilder& b;
  const OnnxGraph& g;
  const NodeUnit& unit;
  const OnnxNode& node;

  struct LocalTensor {
    int value_id = -1;  // ONNX value, or -1 for a constant made by the unit
    ir::Tensor tensor;
    int elem_type = 0;
    bool raw_order = false;  // IrBuilder::raw_order_
  };
  std::vector<LocalTensor> tensors;
  struct LocalOp {
    ir::Op op;
    std::vector<int> in, out;  // local tensor indices, -1 = omitted
  };
  std::vector<LocalOp> ops;

  UnitTranslator(IrBuilder& builder, const NodeUnit& u)
      : b(builder), g(builder.g_), unit(u), node(builder.g_.nodes[u.target]) {}

  // -- how the CPU EP would run this unit -------------------------------------------
  // (docs/onnxruntime_ep.md "Exactness"; verified on ORT 1.31.1 x86-64 by
  // tests/test_ep_exact.py). QDQS8ToU8Transformer (level >= extended, unless
  // session.qdqisint8allowed) turns an int8 QuantizeLinear whose output feeds
  // exactly one node, a DequantizeLinear, and is no graph output into uint8;
  // the QDQ selectors then fuse DQ -> op -> Q into the QLinear kernel only when
  // every DQ input and the Q output have one 8-bit type.

  bool ort_pair_converted(const OnnxNode& q) const {
    if (b.config_.ort_qdq_int8_allowed || b.config_.ort_opt_level < Config::OrtOptLevel::kExtended) {
      return false;
    }
    if (q.outputs.empty() || q.outputs[0] < 0) return false;
    const OnnxValue& v = g.value(q.outputs[0]);
    return v.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8 && !v.is_graph_output &&
           v.consumers.size() == 1 && g.nodes[size_t(v.consumers[0])].is("DequantizeLinear", "*");
  }

  // ONNX element type the CPU EP's kernel sees at DequantizeLinear `dq`'s input.
  int ort_dq_type(const OnnxNode& dq) const {
    const int v = dq.input(0);
    const int elem = g.value(v).elem_type;
    if (elem != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8) return elem;
    const OnnxNode* q = g.producer_if(v, "QuantizeLinear");
    return q && ort_pair_converted(*q) ? ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8 : elem;
  }

  int ort_q_type(const OnnxNode& q) const {
    const int elem = g.value(q.outputs[0]).elem_type;
    return ort_pair_converted(q) ? ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8 : elem;
  }

  // The kernel the CPU EP runs for this unit: a QOperator node's own type; a
  // QDQ unit fused (same type everywhere, level >= extended, and an activation
  // between the op and its Q only when ReluQuantFusion removes it: Relu with
  // the Q's zero point at the type's minimum) or unfused.
  ir::Attributes::OnnxKernel ort_kernel() const {
    Config::OrtKernelMemo& memo = *b.config_.ort_kernel_memo;
    const std::string key = node.outputs.empty() || node.outputs[0] < 0 ? std::string()
                                                                          : g.value(node.outputs[0]).name;
    std::lock_guard<std::mutex> lock(memo.mu);
    auto it = memo.kernel.find(key);
    if (!key.empty() && it != memo.kernel.end()) return ir::Attributes::OnnxKernel(it->second);
    const ir::Attributes::OnnxKernel k = decide_ort_kernel();
    if (!key.empty()) memo.kernel[key] = int(k);
    return k;
  }

  ir::Attributes::OnnxKernel decide_ort_kernel() const {
    using K = ir::Attributes::OnnxKernel;
    const auto of_type = [](int elem) {
      return elem == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8 ? K::kFusedU8 : K::kFusedS8;
    };
    if (unit.form == NodeUnit::Form::kQOperator) {
      return of_type(g.value(node.input(0)).elem_type);
    }
    if (unit.form != NodeUnit::Form::kQdq || unit.q < 0) return K::kNone;
    if (b.config_.ort_opt_level < Config::OrtOptLevel::kExtended) return K::kUnfused;
    const int out = ort_q_type(g.nodes[size_t(unit.q)]);
    // Conv / Gemm / MatMul: ORT's selectors compare the activation input's
    // type with the output's (weights may be int8 beside uint8 activations:
    // u8s8); the element-wise, pool and concat selectors compare every input.
    const bool mac = node.is("Conv") || node.is("Gemm") || node.is("MatMul");
    for (size_t i = 0; i < (mac ? std::min<size_t>(1, unit.dq.size()) : unit.dq.size()); ++i) {
      const int dq = unit.dq[i];
      if (dq >= 0 && ort_dq_type(g.nodes[size_t(dq)]) != out) return K::kUnfused;
    }
    if (unit.activation >= 0) {
      const OnnxNode& act = g.nodes[size_t(unit.activation)];
      const OnnxNode& q = g.nodes[size_t(unit.q)];
      const OnnxValue* zp = q.input(2) >= 0 ? &g.value(q.input(2)) : nullptr;
      const bool at_min = zp && zp->is_constant && zp->numbers().size() == 1 &&
                          zp->numbers()[0] == (zp->elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8 ? 0.0 : -128.0);
      if (!(act.is("Relu") && at_min)) return K::kUnfused;
    }
    return of_type(out);
  }

  // -- reading quantization parameters ------------------------------------------

  // Scale and zero point constants of a (De)QuantizeLinear or QLinear op.
  std::optional<std::string> read_qparams(int scale_id, int zp_id, int data_elem,
                                          std::vector<float>* scales,
                                          std::vector<int32_t>* zps, int* elem) {
    if (scale_id < 0) return std::string("its quantization is unknown (no QuantizeLinear or QLinear op defines it)");
    const OnnxValue& s = g.value(scale_id);
    if (!s.is_constant || s.elem_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
      return str_cat("scale '", s.name, "' is not a float32 constant");
    }
    scales->clear();
    for (double v : s.numbers()) scales->push_back(static_cast<float>(v));
    *elem = data_elem;
    zps->assign(scales->size(), 0);
    if (zp_id >= 0) {
      const OnnxValue& z = g.value(zp_id);
      if (!z.is_constant) return str_cat("zero point '", z.name, "' is not a constant");
      *elem = z.elem_type;
      const auto nums = z.numbers();
      if (nums.size() != scales->size()) {
        return str_cat("zero point '", z.name, "' has ", nums.size(), " values for ",
                       scales->size(), " scales");
      }
      for (size_t i = 0; i < nums.size(); ++i) (*zps)[i] = static_cast<int32_t>(nums[i]);
    } else if (*elem == 0) {
      *elem = ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;  // ONNX default without a zero point
    }
    return std::nullopt;
  }

  // Activation quantization from (scale, zero point) of a DQ / Q / QLinear op.
  std::optional<std::string> act_quant(int value_id, int scale_id, int zp_id, ActQuant* out) {
    const OnnxValue& v = g.value(value_id);
    std::vector<float> scales;
    std::vector<int32_t> zps;
    int elem = v.elem_type;
    if (auto e = read_qparams(scale_id, zp_id, v.elem_type, &scales, &zps, &elem)) {
      return str_cat("'", v.name, "': ", *e);
    }
    if (elem == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16) {
      // QUInt16: the zero point (about 32768 from quantize_static) is outside
      // the 9-bit signed offset registers (NACC_SPEC §9: int16 maps need zero point 0).
      return str_cat("'", v.name, "' is uint16 (QUInt16) with zero point ",
                     zps.empty() ? 0 : zps[0],
                     ": 16-bit maps need zero point 0 (QInt16 with ActivationSymmetric); a "
                     "uint16 zero point does not fit the NPU's 9-bit offset registers");
    }
    if (elem == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16) {
      // The CPU EP has no int16 kernels: it dequantizes, runs the float op and
      // quantizes, so no bit-exact oracle exists for the 16x8 output stages.
      if (!b.config_.int16_activations || unit.form != NodeUnit::Form::kQdq) {
        return str_cat("'", v.name, "' is int16 (QInt16): int16 QDQ units are claimed only with "
                       "the provider option int16_activations=1 (ONNX Runtime's CPU EP computes "
                       "them in float between DequantizeLinear and QuantizeLinear, so there is no "
                       "exact oracle)");
      }
      if (scales.size() != 1) {
        return str_cat("'", v.name, "' is quantized per channel (", scales.size(),
                       " scales); activations need one scale");
      }
      if (zps[0] != 0) {
        return str_cat("'", v.name, "' is int16 with zero point ", zps[0], " (0 needed)");
      }
      out->elem_type = elem;
      out->scale = scales[0];
      out->zero_point = 0;
      return std::nullopt;
    }
    if (!is_8bit(elem)) {
      return str_cat("'", v.name, "' is ", onnx_elem_name(elem), " (int8 or uint8 needed)");
    }
    if (scales.size() != 1) {
      return str_cat("'", v.name, "' is quantized per channel (", scales.size(),
                     " scales); activations need one scale");
    }
    out->elem_type = elem;
    out->scale = scales[0];
    out->zero_point = zps[0] - (elem == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8 ? kUint8ToInt8Offset : 0);
    return std::nullopt;
  }

  // Weights (constant int8 / uint8) with per-tensor or per-channel scales.
  // `channel_axis` is the ONNX axis per-channel scales must be on.
  // The weights may reach the op's DequantizeLinear through a constant chain
  // (OnnxGraph::fold_constant); the per-channel axis is the DequantizeLinear's,
  // on the folded tensor.
  // Constant INT4 weights (held unpacked, OnnxGraph) are read only with the
  // option int4_weights; `w->int4` says so to the caller.
  std::optional<std::string> read_weights(int value_id, int scale_id, int zp_id, int axis_attr,
                                          int channel_axis, Weights* w, int64_t block_size = 0) {
    ConstTensor v;
    const std::string& name = g.value(value_id).name;
    const int raw_elem = g.value(value_id).elem_type;
    if (raw_elem == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT4) {
      return str_cat("weights '", name, "' are uint4 (QUInt4): 4-bit weights need int4 (QInt4) "
                     "with zero point 0 (the NPU's int4 weights are signed, DATA_FORM 10)");
    }
    if (raw_elem == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4) {
      if (!b.config_.int4_weights || unit.form != NodeUnit::Form::kQdq) {
        return str_cat("weights '", name, "' are int4 (QInt4): int4 weights are claimed only with "
                       "the provider option int4_weights=1 (ONNX Runtime's CPU EP dequantizes them "
                       "and computes in float, so there is no exact oracle)");
      }
      if (block_size != 0) {
        return str_cat("weights '", name, "' are int4 with blocked quantization (block_size ",
                       block_size, "): the NPU requantizes per output channel, one scale each");
      }
      if (!g.value(value_id).is_constant) {
        return str_cat("weights '", name, "' are int4 but not an initializer (constant int4 "
                       "weights only)");
      }
      w->int4 = true;
    }
    if (auto e = g.fold_constant(value_id, &v)) {
      return str_cat("weights '", name, "' are not a constant: ", *e);
    }
    if (w->int4) {
      int elem = v.elem_type;
      if (auto e = read_qparams(scale_id, zp_id, v.elem_type, &w->scales, &w->zero_points, &elem)) {
        return str_cat("weights '", name, "': ", *e);
      }
      for (int32_t z : w->zero_points) {
        if (z != 0) return str_cat("int4 weights '", name, "' need zero point 0 (has ", z, ")");
      }
      v.elem_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;  // unpacked values in [-8, 7]
    }
    if (!is_8bit(v.elem_type)) {
      return str_cat("weights '", name, "' are ", onnx_elem_name(v.elem_type),
                     " (int8 or uint8 needed)");
    }
    int elem = v.elem_type;
    if (auto e = read_qparams(scale_id, zp_id, v.elem_type, &w->scales, &w->zero_points, &elem)) {
      return str_cat("weights '", name, "': ", *e);
    }
    w->shape = v.shape;
    const int rank = static_cast<int>(v.shape.size());
    if (w->scales.size() > 1) {
      const int axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
      if (axis != channel_axis) {
        return str_cat("weights '", name, "' have per-channel scales on axis ", axis_attr,
                       "; the NPU requantizes per output channel (axis ", channel_axis, ")");
      }
      if (static_cast<int64_t>(w->scales.size()) != v.shape[axis]) {
        return str_cat("weights '", name, "' have ", w->scales.size(), " scales for ",
                       v.shape[axis], " channels");
      }
      w->axis = axis;
    }
    const bool u8 = v.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
    w->data.resize(v.data.size());
    if (u8) {
      // uint8 - 128 as int8 is the top bit flipped.
      for (size_t i = 0; i < v.data.size(); ++i) w->data[i] = static_cast<int8_t>(v.data[i] ^ 0x80);
      for (auto& z : w->zero_points) z -= kUint8ToInt8Offset;
    } else if (!v.data.empty()) {
      std::memcpy(w->data.data(), v.data.data(), v.data.size());
    }
    return std::nullopt;
  }

  // Test only (Config::test_perturb_node): doubles the weight scales the
  // compiler sees for this node — its requantization shift off by one. Off
  // unless the option names a node: ONNX node names are optional, and an
  // unnamed node must never match the unset (empty) option.
  void perturb(ir::QuantParams* wq) const {
    const std::string& target = b.config_.test_perturb_node;
    if (target.empty() || node.name != target) return;
    for (float& s : wq->scales) s *= 2.0f;
  }

  // int32 bias [N] (QDQ: DequantizeLinear with scale = input scale x weight scale, zero point 0).
  std::optional<std::string> read_bias(int value_id, int64_t n, const ActQuant& x,
                                       const Weights& w, bool check_scale, int scale_id,
                                       int zp_id, std::vector<int32_t>* bias) {
    const OnnxValue& bv = g.value(value_id);
    ConstTensor v;
    if (auto e = g.fold_constant(value_id, &v)) {
      return str_cat("bias '", bv.name, "' is not a constant: ", *e);
    }
    if (v.elem_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32) {
      return str_cat("bias '", bv.name, "' is ", onnx_elem_name(v.elem_type), " (int32 needed)");
    }
    if (v.elements() != n) {
      return str_cat("bias '", bv.name, "' has ", v.elements(), " values for ", n, " channels");
    }
    bias->resize(static_cast<size_t>(n));
    std::memcpy(bias->data(), v.data.data(), static_cast<size_t>(n) * 4);
    if (!check_scale) return std::nullopt;
    std::vector<float> scales;
    std::vector<int32_t> zps;
    int elem = 0;
    if (auto e = read_qparams(scale_id, zp_id, v.elem_type, &scales, &zps, &elem)) {
      return str_cat("bias '", bv.name, "': ", *e);
    }
    for (size_t c = 0; c < static_cast<size_t>(n); ++c) {
      const float s = scales.size() == 1 ? scales[0] : scales.at(c);
      const int32_t z = zps.size() == 1 ? zps[0] : zps.at(c);
      const float ws = w.scales.size() == 1 ? w.scales[0] : w.scales[c];
      const double expected = static_cast<double>(x.scale) * ws;
      if (z != 0) return str_cat("bias '", bv.name, "' has zero point ", z, " (0 needed)");
      if (std::abs(s - expected) > kBiasScaleTolerance * expected) {
        return str_cat("bias '", bv.name, "' scale ", s, " (channel ", c,
                       ") is not input scale x weight scale ", expected);
      }
    }
    return std::nullopt;
  }

  // -- local tensors -------------------------------------------------------------

  int add_local(int value_id, ir::Tensor t, int elem) {
    tensors.push_back({value_id, std::move(t), elem});
    return static_cast<int>(tensors.size()) - 1;
  }

  // The IR tensor of an activation value (NHWC for rank 4).
  std::optional<std::string> activation(int value_id, const ActQuant& q, int* local) {
    const OnnxValue& v = g.value(value_id);
    if (!v.is_static()) {
      return str_cat("'", v.name, "' has a dynamic shape ", shape_str(v.shape));
    }
    if (b.raw_order_.count(value_id)) {
      return str_cat("'", v.name, "' enters the partition in ONNX order for a layout chain");
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].value_id == value_id) {
        *local = static_cast<int>(i);
        return std::nullopt;
      }
    }
    ir::Tensor t;
    t.name = v.name;
    t.shape = to_nhwc(v.shape);
    t.dtype = q.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16 ? DType::kInt16 : DType::kInt8;
    t.quant.scales = {q.scale};
    t.quant.zero_points = {q.zero_point};
    const int existing = b.tensor_of(value_id);
    if (existing >= 0) {
      const ir::Tensor& e = b.graph_.tensor(existing);
      if (!(e.quant == t.quant)) {
        return str_cat("'", v.name, "' is quantized with scale ", q.scale, " zero point ",
                       q.zero_point, " here and scale ", e.quant.scales[0], " zero point ",
                       e.quant.zero_points[0], " by its producer");
      }
    }
    *local = add_local(value_id, std::move(t), q.elem_type);
    return std::nullopt;
  }

  int constant(const std::string& name, std::vector<int64_t> shape, DType dtype,
               std::vector<uint8_t> bytes, ir::QuantParams quant) {
    ir::Tensor t;
    t.name = name;
    t.shape = std::move(shape);
    t.dtype = dtype;
    t.quant = std::move(quant);
    t.data = std::move(bytes);
    return add_local(-1, std::move(t), 0);
  }

  void add_op(OpKind kind, std::vector<int> in, int out, ir::Attributes attrs = {}) {
    LocalOp op;
    op.op.kind = kind;
    op.op.name = node.name;
    op.op.type_name = node.op_type;
    op.op.attrs = std::move(attrs);
    op.in = std::move(in);
    op.out = {out};
    ops.push_back(std::move(op));
  }

  // -- unit forms ------------------------------------------------------------------

  // Input `i` of the target: (value, scale, zero point) ids of its quantization.
  struct QIn {
    int value = -1, scale = -1, zp = -1, axis = 1;
    int64_t block_size = 0;  // DequantizeLinear's block_size (blocked quantization)
  };
  // Where the quantization of int8 value `v` is defined: the QuantizeLinear
  // or QOperator op producing it, through any int8-form ops in between.
  QIn quant_source(int v, int depth = 0) const {
    QIn r;
    r.value = v;
    if (v < 0 || depth > 64) return r;
    const int p = g.value(v).producer;
    if (p < 0) return r;
    if (b.restrict_ != nullptr && !(*b.restrict_)[p]) return r;  // outside the partition
    const OnnxNode& n = g.nodes[p];
    if (n.is("QuantizeLinear", "*")) {
      r.scale = n.input(1);
      r.zp = n.input(2);
    } else if (is_qoperator(n)) {
      NodeUnit u;
      u.form = NodeUnit::Form::kQOperator;
      u.target = p;
      UnitTranslator other(b, u);
      const QIn o = other.out();
      r.scale = o.scale;
      r.zp = o.zp;
    } else if (n.op_type == "MaxPool" || n.op_type == "Slice" || n.op_type == "Split" ||
               n.op_type == "Pad" || n.op_type == "Transpose" || n.op_type == "Reshape" ||
               n.op_type == "Squeeze" || n.op_type == "Unsqueeze" ||
               n.op_type == "Flatten") {
      const QIn up = quant_source(n.input(0), depth + 1);
      r.scale = up.scale;
      r.zp = up.zp;
    }
    return r;
  }

  QIn in(size_t i) const {
    QIn r;
    if (unit.form == NodeUnit::Form::kInt8) {
      if (i != 0) return r;
      return quant_source(unit.layout_input >= 0 ? unit.layout_input : node.input(0));
    }
    if (unit.form == NodeUnit::Form::kQdq) {
      if (i >= unit.dq.size() || unit.dq[i] < 0) return r;
      const OnnxNode& dq = g.nodes[unit.dq[i]];
      r.value = dq.input(0);
      r.scale = dq.input(1);
      r.zp = dq.input(2);
      r.axis = static_cast<int>(dq.attr_int("axis", 1));
      r.block_size = dq.attr_int("block_size", 0);
      return r;
    }
    // QOperator: (x, x_scale, x_zp) triples; the op's own layout.
    if (node.op_type == "QLinearConcat") {  // (y_scale, y_zp, then a triple per input)
      if (2 + 3 * i >= node.inputs.size()) return r;
      r.value = node.input(2 + 3 * i);
      r.scale = node.input(3 + 3 * i);
      r.zp = node.input(4 + 3 * i);
      r.axis = 0;
      return r;
    }
    static const std::map<std::string, std::vector<std::array<int, 3>>> layouts = {
        {"QLinearConv", {{0, 1, 2}, {3, 4, 5}}},
        {"QLinearMatMul", {{0, 1, 2}, {3, 4, 5}}},
        {"QGemm", {{0, 1, 2}, {3, 4, 5}}},
        {"QLinearAdd", {{0, 1, 2}, {3, 4, 5}}},
        {"QLinearMul", {{0, 1, 2}, {3, 4, 5}}},
        {"QLinearAveragePool", {{0, 1, 2}}},
        {"QLinearGlobalAveragePool", {{0, 1, 2}}},
        {"QLinearSigmoid", {{0, 1, 2}}},
        {"QLinearLeakyRelu", {{0, 1, 2}}},
    };
    const auto& l = layouts.at(node.op_type);
    if (i >= l.size()) return r;
    r.value = i == 0 && unit.layout_input >= 0 ? unit.layout_input : node.input(l[i][0]);
    r.scale = node.input(l[i][1]);
    r.zp = node.input(l[i][2]);
    r.axis = 0;
    return r;
  }

  // The output value and its (scale, zero point) ids.
  QIn out() const {
    QIn r;
    if (unit.form == NodeUnit::Form::kInt8) {  // same quantization as the input
      r = quant_source(unit.layout_input >= 0 ? unit.layout_input : node.input(0));
      r.value = node.outputs[0];
      return r;
    }
    if (unit.form == NodeUnit::Form::kQdq) {
      const OnnxNode& q = g.nodes[unit.q];
      r.value = q.outputs[0];
      r.scale = q.input(1);
      r.zp = q.input(2);
      return r;
    }
    static const std::map<std::string, std::array<int, 2>> layouts = {
        {"QLinearConv", {6, 7}},        {"QLinearMatMul", {6, 7}},
        {"QLinearConcat", {0, 1}},
        {"QGemm", {7, 8}},
        {"QLinearAdd", {6, 7}},         {"QLinearMul", {6, 7}},
        {"QLinearAveragePool", {3, 4}}, {"QLinearGlobalAveragePool", {3, 4}},
        {"QLinearSigmoid", {3, 4}},     {"QLinearLeakyRelu", {3, 4}},
    };
    const auto& l = layouts.at(node.op_type);
    r.value = node.outputs[0];
    r.scale = node.input(l[0]);
    r.zp = node.input(l[1]);
    return r;
  }

  std::optional<std::string> act_in(size_t i, ActQuant* q, int* local) {
    const QIn x = in(i);
    if (x.value < 0) return str_cat("input ", i, " is missing");
    if (auto e = act_quant(x.value, x.scale, x.zp, q)) return e;
    return activation(x.value, *q, local);
  }

  std::optional<std::string> act_out(ActQuant* q, int* local) {
    const QIn y = out();
    if (auto e = act_quant(y.value, y.scale, y.zp, q)) return e;
    return activation(y.value, *q, local);
  }

  // The fused activation of a QDQ unit (Relu / Clip between op and Q).
  std::optional<std::string> fused_activation(ir::Activation* act) {
    *act = ir::Activation::kNone;
    if (unit.activation < 0) return std::nullopt;
    const OnnxNode& a = g.nodes[unit.activation];
    if (a.is("Relu")) {
      *act = ir::Activation::kRelu;
      return std::nullopt;
    }
    float lo = -INFINITY, hi = INFINITY;
    if (auto e = clip_bounds(a, &lo, &hi)) return e;
    if (lo == 0.0f && hi == INFINITY) *act = ir::Activation::kRelu;
    else if (lo == 0.0f && hi == 6.0f) *act = ir::Activation::kRelu6;
    else if (lo == -1.0f && hi == 1.0f) *act = ir::Activation::kReluN1To1;
    else return str_cat("fused Clip [", lo, ", ", hi, "] is not Relu, Relu6 or ReluN1To1");
    return std::nullopt;
  }

  std::optional<std::string> clip_bounds(const OnnxNode& c, float* lo, float* hi) {
    if (auto it = c.attrs.find("min"); it != c.attrs.end()) *lo = it->second.f;
    if (auto it = c.attrs.find("max"); it != c.attrs.end()) *hi = it->second.f;
    for (int i : {1, 2}) {
      const int v = c.input(static_cast<size_t>(i));
      if (v < 0) continue;
      const OnnxValue& val = g.value(v);
      if (!val.is_constant) return str_cat("Clip bound '", val.name, "' is not a constant");
      const auto nums = val.numbers();
      if (nums.size() != 1) return str_cat("Clip bound '", val.name, "' is not a scalar");
      (i == 1 ? *lo : *hi) = static_cast<float>(nums[0]);
    }
    return std::nullopt;
  }

  // Padding of a window op from ONNX pads / auto_pad.
  std::optional<std::string> window_padding(const std::vector<int64_t>& in_nchw, int64_t kh,
                                            int64_t kw, int sh, int sw, int dh, int dw,
                                            ir::Padding* p) {
    const std::string mode = node.attr_string("auto_pad", "NOTSET");
    if (mode == "NOTSET") {
      const auto pads = node.attr_ints("pads").value_or(std::vector<int64_t>(4, 0));
      if (pads.size() != 4) return str_cat("pads has ", pads.size(), " values (4 needed)");
      *p = {pads[0], pads[2], pads[1], pads[3]};
    } else if (mode == "VALID") {
      *p = {};
    } else if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
      *p = ir::tflite_padding(ir::PaddingMode::kSame, in_nchw[2], in_nchw[3], kh, kw, sh, sw, dh,
                              dw);
      if (mode == "SAME_LOWER") {
        std::swap(p->top, p->bottom);
        std::swap(p->left, p->right);
      }
    } else {
      return str_cat("auto_pad '", mode, "'");
    }
    return std::nullopt;
  }

  std::optional<std::string> strides_dilations(int* sh, int* sw, int* dh, int* dw) {
    const auto strides = node.attr_ints("strides").value_or(std::vector<int64_t>{1, 1});
    const auto dil = node.attr_ints("dilations").value_or(std::vector<int64_t>{1, 1});
    if (strides.size() != 2 || dil.size() != 2) {
      return std::string("only 2-D windows (4-D NCHW tensors) are supported");
    }
    *sh = static_cast<int>(strides[0]);
    *sw = static_cast<int>(strides[1]);
    *dh = static_cast<int>(dil[0]);
    *dw = static_cast<int>(dil[1]);
    return std::nullopt;
  }

  // -- per op ------------------------------------------------------------------------

  std::optional<std::string> conv() {
    ActQuant xq, yq;
    int x = -1, y = -1;
    if (auto e = act_in(0, &xq, &x)) return e;
    if (auto e = act_out(&yq, &y)) return e;
    const QIn wi = in(1);
    Weights w;
    if (wi.value < 0) return std::string("weights are missing");
    const bool qop = unit.form == NodeUnit::Form::kQOperator;
    if (auto e = read_weights(wi.value, wi.scale, wi.zp, qop ? 0 : wi.axis, 0, &w, wi.block_size)) {
      return e;
    }
    const auto& xs = g.value(in(0).value).shape;
    if (xs.size() != 4 || w.shape.size() != 4) {
      return str_cat("only 2-D convolutions are supported (input ", shape_str(xs), ", weights ",
                     shape_str(w.shape), ")");
    }
    const int64_t o = w.shape[0], ipg = w.shape[1], kh = w.shape[2], kw = w.shape[3];
    const int64_t c_in = xs[1];
    const int64_t group = node.attr_int("group", 1);
    if (auto ks = node.attr_ints("kernel_shape"); ks && (ks->size() != 2 || (*ks)[0] != kh ||
                                                        (*ks)[1] != kw)) {
      return str_cat("kernel_shape ", shape_str(*ks), " disagrees with weights ",
                     shape_str(w.shape));
    }
    int sh, sw, dh, dw;
    if (auto e = strides_dilations(&sh, &sw, &dh, &dw)) return e;
    ir::Attributes a;
    a.stride_h = sh;
    a.stride_w = sw;
    a.dilation_h = dh;
    a.dilation_w = dw;
    if (auto e = window_padding(xs, kh, kw, sh, sw, dh, dw, &a.padding)) return e;
    if (auto e = fused_activation(&a.activation)) return e;

    const bool depthwise = group > 1 && group == c_in && ipg == 1 && o % c_in == 0;
    OpKind kind = OpKind::kConv2D;
    std::vector<int64_t> ir_shape;
    std::vector<uint8_t> data(w.data.size());
    ir::QuantParams wq;
    wq.scales = w.scales;
    wq.zero_points = w.zero_points;
    if (depthwise) {
      kind = OpKind::kDepthwiseConv2D;
      a.depth_multiplier = static_cast<int>(o / c_in);
      ir_shape = {1, kh, kw, o};  // [1, KH, KW, O]
      transpose_2d(w.data.data(), o, kh * kw, data.data());
      wq.axis = 3;
    } else {
      // [O, I/g, KH, KW] -> [O, KH, KW, I/g]; a group > 1 stays a CONV_2D whose
      // filter depth differs from the input channels, which the
      // grouped_convolution rule declines with its own message.
      ir_shape = {o, kh, kw, ipg};
      const int64_t block = ipg * kh * kw;
      for (int64_t oc = 0; oc < o; ++oc) {
        transpose_2d(w.data.data() + oc * block, ipg, kh * kw, data.data() + oc * block);
      }
      wq.axis = 0;
    }
    if (!wq.per_channel()) wq.axis = 0;
    perturb(&wq);
    const bool i16 = xq.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16;
    if (w.int4 && i16) {
      return std::string("int4 weights with int16 activations are not translated (int4_weights "
                         "claims int8 / uint8 activations only)");
    }
    // int4 weights: the IR's kInt4 (unpacked); the capability rules decline
    // int4 depthwise with their reason (TFLite has no reference kernel for it).
    const int wt = constant(g.value(wi.value).name, ir_shape, w.int4 ? DType::kInt4 : DType::kInt8,
                            std::move(data), wq);

    int bt = -1;
    const int bias_input = qop ? 8 : 2;
    const int bias_value = qop ? node.input(bias_input) : in(2).value;
    // DequantizeLinear -> float32 Conv -> QuantizeLinear where ONNX Runtime
    // does not fuse the unit into QLinearConv: the NPU's float32 MAC mode
    // with MLAS's K blocks (float_conv_kblocks), the bias dequantized with its
    // own scale. Shapes whose MLAS path it does not model keep the int32
    // accumulator (QLinearConv's arithmetic; rare rounding differences).
    const bool unfused = !qop && xq.elem_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16 &&
                         ort_kernel() == ir::Attributes::OnnxKernel::kUnfused;
    bool float_conv = unfused && !depthwise && group == 1 &&
                      float_conv_kblocks(xs, o, ipg, kh, kw, sh, sw, dh, dw, false, &a);
    if (unfused && depthwise && dh == 1 && dw == 1) {  // dilation: phases, the int32 path
      // A float32 depthwise Conv: per group one filter row (depth multiplier
      // 1) takes MLAS's M = 1 kernel (products added in groups of 4, no fused
      // multiply-add, the bias added last); several rows take its SGEMM
      // kernel with K blocks as a grouped Conv (ir.h ort_sum_order).
      if (a.depth_multiplier == 1) {
        a.ort_sum_order = ir::Attributes::OrtSumOrder::kGroups4;
        float_conv = true;
      } else {
        float_conv = float_conv_kblocks(xs, a.depth_multiplier, 1, kh, kw, sh, sw, dh, dw, true, &a);
      }
    }
    if (float_conv) a.onnx_kernel = ir::Attributes::OnnxKernel::kUnfused;
    if (i16 != (yq.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16)) {
      return str_cat("input is ", onnx_elem_name(xq.elem_type), " and output ",
                     onnx_elem_name(yq.elem_type), " (int16 units need both int16)");
    }
    if (i16) {
      for (int32_t z : w.zero_points) {
        if (z != 0) return str_cat("int16 units need weight zero point 0 (has ", z, ")");
      }
    }
    if (bias_value >= 0) {
      std::vector<int32_t> bias;
      const QIn bi = in(2);
      if (auto e = read_bias(bias_value, o, xq, w, !qop, bi.scale, bi.zp, &bias)) return e;
      if (i16) {
        // The 16x8 form takes an int64 bias: the same integer values.
        std::vector<int64_t> b64(bias.begin(), bias.end());
        std::vector<uint8_t> bytes(b64.size() * 8);
        std::memcpy(bytes.data(), b64.data(), bytes.size());
        bt = constant(g.value(bias_value).name, {o}, DType::kInt64, std::move(bytes), {});
      } else {
        std::vector<uint8_t> bytes(bias.size() * 4);
        std::memcpy(bytes.data(), bias.data(), bytes.size());
        ir::QuantParams bq;
        if (float_conv) {
          if (auto e = float_bias_quant(bi, bias_value, &bq)) return e;
        }
        bt = constant(g.value(bias_value).name, {o}, DType::kInt32, std::move(bytes), std::move(bq));
      }
    }
    if (i16) {
      // int16 activations: the compiler's 16x8 (TFLite) output stage. ONNX
      // Runtime computes the unit in float; the difference is measured, not zero.
      add_op(kind, {x, wt, bt}, y, a);
      return std::nullopt;
    }
    // ONNX Runtime's CPU EP runs Conv as QLinearConv, whose output stage is
    // float32 (MLAS): the NPU uses the same one (NACC_ACT_PARA.QUANT_FP32_SCALE).
    a.requant = ir::RequantMode::kOnnxRuntime;
    add_op(kind, {x, wt, bt}, y, a);
    return std::nullopt;
  }

  // The float32 op's bias is float(b) * its DequantizeLinear scale: the
  // bias tensor's quant carries that scale (the float32 MAC mode reads it).
  std::optional<std::string> float_bias_quant(const QIn& bi, int bias_value, ir::QuantParams* bq) {
    int elem = 0;
    if (auto e = read_qparams(bi.scale, bi.zp, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32, &bq->scales,
                              &bq->zero_points, &elem)) {
      return str_cat("bias '", g.value(bias_value).name, "': ", *e);
    }
    return std::nullopt;
  }

  // MLAS's K block for a GEMM slice of n columns and depth k (MlasSgemmOperation
  // and MlasConvOperation: StrideN = StrideK = 128 to start; K stride halved
  // while it covers k twice when n >= k, else doubled while the N stride
  // halves, down to 16, and still covers n).
  static int64_t mlas_kblock(int64_t n, int64_t k) {
    int64_t sn = 128, sk = 128;
    if (n >= k) {
      while (sk / 2 >= k) sk /= 2;
    } else {
      while (sn > 16 && sn / 2 >= n) {
        sk *= 2;
        sn /= 2;
      }
    }
    return sk;
  }

  // The K blocks of ONNX Runtime's float32 Conv (MlasConvPrepare / MlasConv
  // in ORT 1.31; checked bit for bit against the CPU EP, docs/onnxruntime_ep.md
  // "Float Conv"): which algorithm MLAS takes, how its thread segments cut
  // the output pixels (MLAS_SGEMM_THREAD_COMPLEXITY 64K multiplies per
  // thread, at most 16 threads and the session's intra-op threads,
  // ThreadStrideN aligned to 16), and each segment's K block. Sets
  // a->ort_kblock / ort_kblock_split / ort_kblock_tail; false where MLAS
  // takes its M = 1 kernel (one filter, one output pixel, or a GEMM thread
  // slice of one filter row), whose order is not modelled. `grouped`: a
  // Conv of several groups (`filters` and `c_in` per group), which MLAS runs
  // group by group as it runs batches.
  bool float_conv_kblocks(const std::vector<int64_t>& xs, int64_t filters, int64_t c_in,
                          int64_t kh, int64_t kw, int sh, int sw, int dh, int dw, bool grouped,
                          ir::Attributes* a) const {
    const ir::Padding& p = a->padding;
    const int64_t oh = (xs[2] + p.top + p.bottom - (int64_t(dh) * (kh - 1) + 1)) / sh + 1;
    const int64_t ow = (xs[3] + p.left + p.right - (int64_t(dw) * (kw - 1) + 1)) / sw + 1;
    const int64_t n = oh * ow, k = c_in * kh * kw, m = filters;
    if (oh <= 0 || ow <= 0 || m < 2 || n < 2 || xs[0] < 1) return false;
    // What MAC_FP32 cannot run keeps the int32 path (docs/compiler.md §2.3):
    // dilation's phases and the space-to-depth gather reorder or cut K.
    if (dh > 1 || dw > 1 || sh > limits::kMaxStride || sw > limits::kMaxStride ||
        kh > limits::kMaxKernel || kw > limits::kMaxKernel) {
      return false;
    }
    const int64_t max_threads = b.config_.ort_threads();
    const auto threads_for = [&](double complexity) {
      const double per = 64.0 * 1024.0;
      const int64_t t = complexity < per * 16 ? int64_t(complexity / per) + 1 : 16;
      return std::min(t, max_threads);
    };
    const auto set = [&](int64_t block, int64_t split, int64_t tail) {
      a->ort_kblock = int(block);
      a->ort_kblock_split = split;
      a->ort_kblock_tail = int(tail);
      return true;
    };
    const bool batched = xs[0] > 1 || grouped;
    const bool ones = sh == 1 && sw == 1 && !(p.top || p.bottom || p.left || p.right);
    // MlasGemm(M = filters, N = pixels, K): split over N (aligned to 16) when
    // N > M, else over M (a one-row slice takes the M = 1 kernel).
    const auto gemm = [&]() {
      const int64_t t = threads_for(double(m) * double(n) * double(k));
      if (t <= 1) return set(mlas_kblock(n, k), -1, 0);
      if (n > m) {
        const int64_t stride = ((n + t - 1) / t + 15) & ~int64_t(15);
        if (stride >= n) return set(mlas_kblock(n, k), -1, 0);
        const int64_t last = n - ((n - 1) / stride) * stride;
        return set(mlas_kblock(stride, k), last == stride ? -1 : n - last, mlas_kblock(last, k));
      }
      const int64_t stride_m = (m + t - 1) / t;
      if (m % stride_m == 1) return false;  // a last slice of one filter row
      return set(mlas_kblock(n, k), -1, 0);
    };
    if (ones && (kh * kw == 1 || (dh == 1 && dw == 1 && c_in == 1 &&
                                  (kw == xs[3] || (kh == xs[2] && kw == 1))))) {
      // MlasConvAlgorithmGemmDirect; batches run one MlasSgemmOperation each.
      if (batched) return set(mlas_kblock(n, k), -1, 0);
      return gemm();
    }
    if (m > n) return gemm();  // MlasConvAlgorithmExpandThenGemm (MlasGemm per image)
    // MlasConvAlgorithmExpandThenGemmSegmented: thread segments of the pixels.
    if (batched) return set(mlas_kblock(n, k), -1, 0);
    int64_t t = threads_for(double(m) * double(n) * double(k));
    int64_t stride = (n + t - 1) / t;
    if (t > 1) {
      stride = (stride + 15) & ~int64_t(15);
      if (stride >= n) t = 1;
    }
    if (t <= 1 || stride >= n) return set(mlas_kblock(n, k), -1, 0);
    const int64_t last = n - ((n - 1) / stride) * stride;
    return set(mlas_kblock(stride, k), last == stride ? -1 : n - last, mlas_kblock(last, k));
  }

  std::optional<std::string> matmul_or_gemm() {
    ActQuant aq, yq;
    int a_local = -1, y = -1;
    if (auto e = act_in(0, &aq, &a_local)) return e;
    if (auto e = act_out(&yq, &y)) return e;
    const bool gemm = node.op_type == "Gemm" || node.op_type == "QGemm";
    const bool qop = unit.form == NodeUnit::Form::kQOperator;
    const bool i16 = aq.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16;
    if (i16 != (yq.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16)) {
      return str_cat("A is ", onnx_elem_name(aq.elem_type), " and the output ",
                     onnx_elem_name(yq.elem_type), " (int16 units need both int16)");
    }
    // A folded layout chain: A is read from the 4-D map the chain starts from.
    const bool folded = unit.layout_input >= 0;
    const auto& as = g.value(folded ? node.input(0) : in(0).value).shape;
    // A is rank 1 to 3; 1-D only with constant weights (ONNX MatMul treats
    // it as one row). Rank-4 operands would need their NCHW layout kept.
    if (as.empty() || as.size() > 3) {
      return str_cat("A ", shape_str(as), " must be rank 1, 2 or 3 (rank-4 operands would need "
                     "their NCHW layout kept)");
    }
    const QIn ci = in(2);
    if (gemm) {
      if (node.attr_int("transA", 0) != 0) {
        return std::string("transA=1 (A would need a transpose on the NPU)");
      }
      const float alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
      if (alpha != 1.0f) return str_cat("alpha=", alpha, " (the NPU computes A x B unscaled)");
      const int c_value = qop ? node.input(6) : ci.value;
      if (beta != 1.0f && c_value >= 0) {
        return str_cat("beta=", beta, " with a bias C (the NPU adds C unscaled)");
      }
    }
    const QIn bi = in(1);
    if (bi.value < 0) return std::string("B is missing");
    const OnnxValue& bv = g.value(bi.value);
    ir::Attributes attrs;
    if (auto e = fused_activation(&attrs.activation)) return e;
    // B is a weight when it is a constant, directly or through a folded chain
    // (as find_units decided when it put the chain into the unit).
    ConstTensor b_const;
    if (const auto not_const = g.fold_constant(bi.value, &b_const)) {
      if (gemm) return str_cat("B is not a constant: ", *not_const);
      if (folded)
        return str_cat("B is not a constant (", *not_const, ") and A comes through a layout chain");
      if (as.size() < 2) return str_cat("A ", shape_str(as), " is 1-D and B is not a constant");
      if (unit.activation >= 0) return std::string("a fused activation after MatMul of two activations");
      if (i16) {
        return std::string("an int16 MatMul of two activations (the matrix unit has no 16-bit "
                           "form; int16 MatMul / Gemm with constant weights is lowered)");
      }
      ActQuant bq;
      int b_local = -1;
      if (auto e = act_in(1, &bq, &b_local)) {
        return str_cat(*e, " (B read as an activation; as a weight it is not a constant: ",
                       *not_const, ")");
      }
      const auto& bs = bv.shape;
      if (bs.size() != as.size()) return str_cat("operands ", shape_str(as), " and ", shape_str(bs),
                                                 " differ in rank");
      // ONNX Runtime's CPU EP requantizes QLinearMatMul in float32 (MLAS):
      // the NPU uses the same output stage, so the result is bit-exact
      // (docs/compiler.md §2, NACC_ACT_PARA.QUANT_FP32_SCALE).
      ir::Attributes mm;
      mm.requant = ir::RequantMode::kOnnxRuntime;
      add_op(OpKind::kBatchMatMul, {a_local, b_local}, y, mm);
      return std::nullopt;
    }
    const bool trans_b = gemm && node.attr_int("transB", 0) != 0;
    Weights w;
    // MatMul weights: [K, N]; [1, ..., 1, K, N] of no higher rank than A (it
    // broadcasts over A's batch: the same [K, N]); 1-D [K] (N = 1, a dimension
    // ONNX drops from the output). Gemm weights: [K, N], or [N, K] with transB.
    const auto& b_shape = b_const.shape;
    if (gemm ? b_shape.size() != 2 : b_shape.empty() || b_shape.size() > std::max<size_t>(2, as.size())) {
      return str_cat("B ", shape_str(b_shape), gemm ? " is not 2-D" : " has a higher rank than A");
    }
    for (size_t d = 0; d + 2 < b_shape.size(); ++d) {
      if (b_shape[d] != 1) return str_cat("B ", shape_str(b_shape), " is a batch of weights");
    }
    // Per-channel scales are along N: the last axis of [.., K, N], axis 0 of
    // [N, K]; a 1-D B has no N axis (one scale).
    const int b_rank = static_cast<int>(b_shape.size());
    const int channel_axis = trans_b ? 0 : std::max(1, b_rank - 1);
    if (auto e = read_weights(bi.value, bi.scale, bi.zp, qop ? channel_axis : bi.axis,
                              channel_axis, &w, bi.block_size)) {
      return e;
    }
    if (w.int4 && i16) {
      return std::string("int4 weights with int16 activations are not translated (int4_weights "
                         "claims int8 / uint8 activations only)");
    }
    const int64_t k = trans_b ? w.shape[1] : b_rank == 1 ? w.shape[0] : w.shape[b_rank - 2];
    const int64_t n = trans_b ? w.shape[0] : b_rank == 1 ? 1 : w.shape[b_rank - 1];
    std::vector<uint8_t> data(w.data.size());
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < k; ++c)
        data[r * k + c] = static_cast<uint8_t>(trans_b ? w.data[r * k + c] : w.data[c * n + r]);
    bool k_in_onnx_order = true;  // the NPU's column k is A's element k
    if (folded) {
      if (auto e = fold_layout_into_weights(k, n, &data, &a_local, &k_in_onnx_order)) return e;
    }
    // DequantizeLinear -> float32 Gemm / MatMul -> QuantizeLinear where ONNX
    // Runtime does not fuse the unit: with one row of A, MLAS's M = 1 kernels
    // (ir.h ort_sum_order: groups of 4 for B [K, N], 8 lanes for Gemm's
    // transB = 1; no fused multiply-add), the bias C's initial value,
    // dequantized with its own scale. More rows (MLAS's SGEMM with K blocks)
    // and columns a layout chain reorders keep the int32 accumulator.
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < as.size(); ++d) rows *= as[d];
    const bool float_fc = !qop && !i16 && rows == 1 && k_in_onnx_order &&
                          ort_kernel() == ir::Attributes::OnnxKernel::kUnfused;
    if (float_fc) {
      attrs.onnx_kernel = ir::Attributes::OnnxKernel::kUnfused;
      attrs.ort_sum_order =
          trans_b ? ir::Attributes::OrtSumOrder::kLanes8 : ir::Attributes::OrtSumOrder::kGroups4;
    }
    ir::QuantParams wq;
    wq.scales = w.scales;
    wq.zero_points = w.zero_points;
    wq.axis = 0;
    perturb(&wq);
    const int wt = constant(bv.name, {n, k}, w.int4 ? DType::kInt4 : DType::kInt8, std::move(data), wq);
    int bt = -1;
    const int bias_value = qop ? (gemm ? node.input(6) : -1) : (gemm ? in(2).value : -1);
    if (i16) {
      for (int32_t z : w.zero_points) {
        if (z != 0) return str_cat("int16 units need weight zero point 0 (has ", z, ")");
      }
    }
    if (bias_value >= 0) {
      std::vector<int32_t> bias;
      if (auto e = read_bias(bias_value, n, aq, w, !qop, ci.scale, ci.zp, &bias)) return e;
      if (i16) {
        // The 16x8 form takes an int64 bias: the same integer values.
        std::vector<int64_t> b64(bias.begin(), bias.end());
        std::vector<uint8_t> bytes(b64.size() * 8);
        std::memcpy(bytes.data(), b64.data(), bytes.size());
        bt = constant(g.value(bias_value).name, {n}, DType::kInt64, std::move(bytes), {});
      } else {
        std::vector<uint8_t> bytes(bias.size() * 4);
        std::memcpy(bytes.data(), bias.data(), bytes.size());
        ir::QuantParams bq;
        if (float_fc) {
          if (auto e = float_bias_quant(ci, bias_value, &bq)) return e;
        }
        bt = constant(g.value(bias_value).name, {n}, DType::kInt32, std::move(bytes), std::move(bq));
      }
    }
    // QLinearMatMul / QGemm requantize in float32 on the CPU EP, as above;
    // int16 activations take the compiler's 16x8 FULLY_CONNECTED (TFLite's
    // real-scale stage), within a step of the CPU EP's float computation.
    attrs.requant = i16 ? ir::RequantMode::kTflite : ir::RequantMode::kOnnxRuntime;
    if (b_rank == 1) {
      // A 1-D B: FULLY_CONNECTED writes [..., 1], a reshape (a view) drops the 1.
      ir::Tensor t = tensors[y].tensor;
      t.name = str_cat(t.name, "/fully_connected");
      t.shape.push_back(1);
      const int fc_out = add_local(-1, std::move(t), tensors[y].elem_type);
      add_op(OpKind::kFullyConnected, {a_local, wt, bt}, fc_out, attrs);
      add_op(OpKind::kReshape, {fc_out, -1}, y);
      return std::nullopt;
    }
    add_op(OpKind::kFullyConnected, {a_local, wt, bt}, y, attrs);
    return std::nullopt;
  }

  // A layout chain from the 4-D map x ([1, C, H, W], NHWC on the NPU) to
  // the Gemm / MatMul's A [1, K]: A[k] is the map's NCHW element src[k]; the
  // NPU reads the map as [1, H*W*C] (a view), so weight column k moves to
  // the NHWC index of src[k] — y[n] = sum_k W[n, k] A[k] term for term.
  std::optional<std::string> fold_layout_into_weights(int64_t k, int64_t n,
                                                      std::vector<uint8_t>* data, int* a_local,
                                                      bool* identity) {
    std::shared_ptr<const std::vector<int64_t>> map;
    if (auto e = layout_chain_map(g, unit.layout_input, unit.layout_steps, &map)) return e;
    const std::vector<int64_t>& src = *map;
    const auto& xs = g.value(unit.layout_input).shape;
    if (xs.size() != 4 || xs[0] != 1 || int64_t(src.size()) != k) {
      return str_cat("layout chain from ", shape_str(xs), " does not give the ", k,
                     " columns of A");
    }
    const int64_t C = xs[1], H = xs[2], W = xs[3];
    std::vector<uint8_t> moved(data->size());
    *identity = true;
    for (int64_t c = 0; c < k; ++c) {
      const int64_t s = src[size_t(c)];
      const int64_t ch = s / (H * W), h = s / W % H, x0 = s % W;
      const int64_t j = (h * W + x0) * C + ch;
      *identity = *identity && j == c;
      for (int64_t r = 0; r < n; ++r) moved[size_t(r * k + j)] = (*data)[size_t(r * k + c)];
    }
    *data = std::move(moved);
    ir::Tensor t = tensors[size_t(*a_local)].tensor;
    t.name = str_cat(t.name, "/flattened for ", node.name.empty() ? node.op_type : node.name);
    t.shape = {1, k};
    const int flat = add_local(-1, std::move(t), tensors[size_t(*a_local)].elem_type);
    add_op(OpKind::kReshape, {*a_local, -1}, flat);
    *a_local = flat;
    return std::nullopt;
  }

  // A layout chain that keeps the NPU's element order: a RESHAPE (a view).
  // One [1, C, H, W] -> [1, C, H, W] that moves whole channels
  // (find_layout_chains): a 1x1 CONV_2D whose weights are the permutation
  // matrix (one 1 per output channel), weight scale 1, no bias, output
  // quantized as the input. acc = x - zx exactly; the float32 output stage
  // (kOnnxRuntime) multiplies by float(sx * 1) / sx = 1.0f exactly; adding
  // zy = zx gives x back: a bit-exact channel move.
  std::optional<std::string> channel_permute() {
    ActQuant xq, yq;
    int x = -1, y = -1;
    const int xv = unit.layout_input;
    const auto& xs = g.value(xv).shape;
    const auto& ys = g.value(node.outputs[0]).shape;
    std::shared_ptr<const std::vector<int64_t>> map;
    if (auto e = layout_chain_map(g, xv, unit.layout_steps, &map)) return e;
    const std::vector<int64_t>& src = *map;
    const bool raw_input = b.raw_order_.count(xv) > 0;
    if (xs.size() == 4 && is_raw_view(ys, src) && !is_ir_view(xs, ys, src) &&
        (b.tensor_of(xv) < 0 || raw_input)) {
      // The output's NHWC order is the input's ONNX order: the input enters
      // the partition as it is (no NCHW conversion), a RESHAPE views it (a
      // tensor the partition already holds in the NPU's order is copied by
      // chain_copy instead).
      if (auto e = act_out(&yq, &y)) return e;
      const QIn xi = in(0);
      if (auto e = act_quant(xv, xi.scale, xi.zp, &xq)) return e;
      if (xq.scale != yq.scale || xq.zero_point != yq.zero_point) {
        return std::string("input and output are quantized differently (a requantizing layout chain)");
      }
      if (!g.value(xv).is_static()) return str_cat("'", g.value(xv).name, "' has a dynamic shape");
      ir::Tensor t;
      t.name = g.value(xv).name;
      t.shape = xs;
      t.dtype = DType::kInt8;
      t.quant.scales = {xq.scale};
      t.quant.zero_points = {xq.zero_point};
      x = add_local(xv, std::move(t), xq.elem_type);
      tensors[size_t(x)].raw_order = true;
      add_op(OpKind::kReshape, {x, -1}, y);
      return std::nullopt;
    }
    if (auto e = act_in(0, &xq, &x)) return e;
    if (auto e = act_out(&yq, &y)) return e;
    if (xq.scale != yq.scale || xq.zero_point != yq.zero_point) {
      return std::string(
          "input and output are quantized differently (a requantizing layout chain)");
    }
    const auto& shape = ys;
    if (is_ir_view(g.value(unit.layout_input).shape, shape, src)) {
      add_op(OpKind::kReshape, {x, -1}, y);
      return std::nullopt;
    }
    if (shape.size() == 4 && b.tensor_of(xv) >= 0 && is_raw_output(g.value(xv).shape, src) &&
        read_only_outside(g, out().value)) {
      // The output's ONNX order is the input's bytes in the NPU's order (e.g.
      // tf2onnx's closing Transpose(0,2,3,1) to NHWC), the input is computed
      // in the partition and only the graph's output reads the result: the
      // partition output leaves in ONNX order as it is (no NCHW conversion
      // at the boundary, no copy), a RESHAPE views it.
      tensors[size_t(y)].tensor.shape = shape;
      tensors[size_t(y)].raw_order = true;
      add_op(OpKind::kReshape, {x, -1}, y);
      return std::nullopt;
    }
    const auto p = g.value(unit.layout_input).shape == shape ? channel_permutation(shape, src)
                                                             : std::nullopt;
    if (!p) return chain_copy(x, y);
    const int64_t C = shape[1];
    bool identity = true;
    for (int64_t c = 0; c < C; ++c) identity = identity && (*p)[size_t(c)] == c;
    if (identity) {
      add_op(OpKind::kReshape, {x, -1}, y);
      return std::nullopt;
    }
    std::vector<uint8_t> w(size_t(C * C), 0);
    for (int64_t c = 0; c < C; ++c) w[size_t(c * C + (*p)[size_t(c)])] = 1;
    ir::QuantParams wq;
    wq.scales = {1.0f};
    wq.zero_points = {0};
    const int wt =
        constant(str_cat(node.name.empty() ? node.op_type : node.name, "/channel_permutation"),
                 {C, 1, 1, C}, DType::kInt8, std::move(w), wq);
    ir::Attributes a;
    a.requant = ir::RequantMode::kOnnxRuntime;
    add_op(OpKind::kConv2D, {x, wt, -1}, y, a);
    return std::nullopt;
  }

  // A layout chain that moves elements across pixels: x (the NPU's order)
  // viewed as the chain's atoms (chain_as_copy), one TRANSPOSE, the result
  // viewed as y. A byte copy: exact.
  std::optional<std::string> chain_copy(int x, int y) {
    const auto copies = chain_as_copies(g, unit.layout_input, unit.layout_steps);
    if (!copies) return std::string("the layout chain's shapes are not static");
    if (auto e = chain_copy_error(*copies)) return e;
    if (!copies->empty() && tensors[size_t(x)].tensor.dtype != DType::kInt8) {
      return std::string("a layout chain that moves elements of a 16-bit map (TRANSPOSE copies "
                         "8-bit tensors only)");
    }
    const auto local = [&](const std::string& what, std::vector<int64_t> shape) {
      ir::Tensor t = tensors[size_t(x)].tensor;
      t.name = str_cat(node.name.empty() ? node.op_type : node.name, "/", what);
      t.shape = std::move(shape);
      t.data.reset();
      return add_local(-1, std::move(t), tensors[size_t(x)].elem_type);
    };
    int cur = x;
    for (size_t k = 0; k < copies->size(); ++k) {
      const ChainCopy& c = (*copies)[k];
      if (tensors[size_t(cur)].tensor.shape != c.shape) {
        const int v = local(str_cat("view", k), c.shape);
        add_op(OpKind::kReshape, {cur, -1}, v);
        cur = v;
      }
      std::vector<int64_t> moved;
      for (int a : c.perm) moved.push_back(c.shape[size_t(a)]);
      const bool last = k + 1 == copies->size();
      const int to = last && tensors[size_t(y)].tensor.shape == moved ? y
                                                                       : local(str_cat("copy", k), moved);
      ir::Attributes a;
      a.perm = c.perm;
      add_op(OpKind::kTranspose, {cur}, to, a);
      cur = to;
    }
    if (cur != y) add_op(OpKind::kReshape, {cur, -1}, y);
    return std::nullopt;
  }

  std::optional<std::string> elementwise(OpKind kind) {
    ActQuant yq;
    int y = -1;
    if (auto e = act_out(&yq, &y)) return e;
    const auto& ys = g.value(out().value).shape;
    const bool i16 = yq.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16;
    std::vector<int> operands;
    for (size_t i = 0; i < 2; ++i) {
      const QIn xi = in(i);
      if (xi.value < 0) return str_cat("input ", i, " is missing");
      const OnnxValue& v = g.value(xi.value);
      ActQuant q;
      if (auto e = act_quant(xi.value, xi.scale, xi.zp, &q)) return e;
      if (i16 != (q.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16)) {
        return str_cat("operand '", v.name, "' is ", onnx_elem_name(q.elem_type), " and the output ",
                       onnx_elem_name(yq.elem_type), " (int16 units need every map int16)");
      }
      if (i16 && v.is_constant) {
        return str_cat("operand '", v.name, "' is an int16 constant (16x8 element-wise ops take "
                       "two runtime operands)");
      }
      if (!v.is_constant) {
        if (v.shape.size() != ys.size()) {
          return str_cat("operand '", v.name, "' ", shape_str(v.shape), " has a lower rank than the output ",
                         shape_str(ys));
        }
        int local = -1;
        if (auto e = activation(xi.value, q, &local)) return e;
        operands.push_back(local);
        continue;
      }
      // A constant operand: broadcast to the output rank, NHWC for rank 4.
      if (v.shape.size() > ys.size()) return str_cat("constant '", v.name, "' has a higher rank");
      std::vector<int64_t> shape(ys.size() - v.shape.size(), 1);
      shape.insert(shape.end(), v.shape.begin(), v.shape.end());
      const bool u8 = q.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
      std::vector<uint8_t> data = v.data;
      if (u8) {
        for (auto& d : data) d = static_cast<uint8_t>(d ^ 0x80);  // uint8 -> int8, -128
      }
      if (shape.size() == 4) {
        std::vector<uint8_t> t(data.size());
        const int64_t N = shape[0], C = shape[1], H = shape[2], W = shape[3];
        for (int64_t n0 = 0; n0 < N; ++n0)
          for (int64_t c = 0; c < C; ++c)
            for (int64_t h = 0; h < H; ++h)
              for (int64_t w0 = 0; w0 < W; ++w0)
                t[((n0 * H + h) * W + w0) * C + c] = data[((n0 * C + c) * H + h) * W + w0];
        data = std::move(t);
        shape = to_nhwc(shape);
      }
      ir::QuantParams qp;
      qp.scales = {q.scale};
      qp.zero_points = {q.zero_point};
      operands.push_back(constant(v.name, shape, DType::kInt8, std::move(data), qp));
    }
    ir::Attributes a;
    if (auto e = fused_activation(&a.activation)) return e;
    if (i16) {
      // int16 activations: the compiler's 16x8 (TFLite) arithmetic (ADD / SUB
      // left shift 15, MUL the 32-bit MBQM of the product). The CPU EP computes
      // the unit in float; the difference is measured (docs/onnxruntime_ep.md).
      add_op(kind, operands, y, a);
      return std::nullopt;
    }
    a.onnx_kernel = ort_kernel();
    // ONNX Runtime has no QLinearSub: Sub always runs dequantized.
    if (kind == OpKind::kSub && a.onnx_kernel != ir::Attributes::OnnxKernel::kNone) {
      a.onnx_kernel = ir::Attributes::OnnxKernel::kUnfused;
    }
    // QLinearAdd of two full-size tensors nests B's term inside A's; the NPU
    // nests its second input, which must be the constant (its first is the
    // runtime map). One element is ORT's scalar path (A folded), which it does.
    const OnnxValue& va = g.value(in(0).value);
    if (kind == OpKind::kAdd && va.is_constant && !g.value(in(1).value).is_constant &&
        (a.onnx_kernel == ir::Attributes::OnnxKernel::kFusedS8 ||
         a.onnx_kernel == ir::Attributes::OnnxKernel::kFusedU8)) {
      int64_t elems = 1, a_elems = 1;
      for (int64_t d : ys) elems *= d;
      for (int64_t d : va.shape) a_elems *= d;
      if (elems > 1 && a_elems == elems) {
        return str_cat("QLinearAdd with the constant '", va.name, "' as its full-size first "
                       "operand nests the runtime operand's term inside the constant's; the NPU "
                       "nests its second (constant) operand (swap the Add's inputs)");
      }
    }
    add_op(kind, operands, y, a);
    return std::nullopt;
  }

  std::optional<std::string> pool(OpKind kind) {
    ActQuant xq, yq;
    int x = -1, y = -1;
    if (auto e = act_in(0, &xq, &x)) return e;
    if (auto e = act_out(&yq, &y)) return e;
    const auto& xs = g.value(in(0).value).shape;
    if (xs.size() != 4) return str_cat("input ", shape_str(xs), " is not 4-D NCHW");
    if (node.attr_int("channels_last", 0) != 0) return std::string("channels_last=1");
    const auto ks = node.attr_ints("kernel_shape");
    if (!ks || ks->size() != 2) return std::string("kernel_shape is not 2-D");
    int sh, sw, dh, dw;
    if (auto e = strides_dilations(&sh, &sw, &dh, &dw)) return e;
    if (dh != 1 || dw != 1) return str_cat("dilations ", dh, "x", dw);
    if (node.attr_int("storage_order", 0) != 0) return std::string("storage_order=1");
    ir::Attributes a;
    a.kernel_h = static_cast<int>((*ks)[0]);
    a.kernel_w = static_cast<int>((*ks)[1]);
    a.stride_h = sh;
    a.stride_w = sw;
    if (auto e = window_padding(xs, (*ks)[0], (*ks)[1], sh, sw, 1, 1, &a.padding)) return e;
    const auto& p = a.padding;
    if (node.attr_int("ceil_mode", 0) != 0) {
      // ceil_mode only matters when it adds an output row / column.
      const auto floor_out = [](int64_t in, int64_t k, int64_t s, int64_t lo, int64_t hi) {
        return (in + lo + hi - k) / s + 1;
      };
      const auto ceil_out = [](int64_t in, int64_t k, int64_t s, int64_t lo, int64_t hi) {
        return (in + lo + hi - k + s - 1) / s + 1;
      };
      if (floor_out(xs[2], a.kernel_h, sh, p.top, p.bottom) !=
              ceil_out(xs[2], a.kernel_h, sh, p.top, p.bottom) ||
          floor_out(xs[3], a.kernel_w, sw, p.left, p.right) !=
              ceil_out(xs[3], a.kernel_w, sw, p.left, p.right)) {
        return std::string("ceil_mode=1 adds a partial window (the NPU computes floor mode)");
      }
    }
    if (kind == OpKind::kAveragePool2D && node.attr_int("count_include_pad", 0) != 0 &&
        (p.top || p.bottom || p.left || p.right)) {
      return std::string("count_include_pad=1 with padding (the NPU averages the valid "
                         "elements only)");
    }
    if (kind == OpKind::kAveragePool2D) {
      a.onnx_kernel = ort_kernel();
      const bool whole_input = (*ks)[0] == xs[2] && (*ks)[1] == xs[3] &&
                               !(p.top || p.bottom || p.left || p.right);
      if (a.onnx_kernel == ir::Attributes::OnnxKernel::kUnfused) {
        const MlasPoolKernel k = ort_float_pool_kernel(xs, *ks, sh, sw, p);
        if (k == MlasPoolKernel::kGlobal) {
          return std::string("ONNX Runtime runs this unfused AveragePool over the whole input "
                             "with MLAS's global kernel (4-lane partial sums), which has no "
                             "NPU mode");
        }
        a.ort_pool_by_columns = k == MlasPoolKernel::kVector;
      }
      // QLinearAveragePool with the kernel covering the unpadded input runs
      // the global average pool's arithmetic.
      if (a.onnx_kernel != ir::Attributes::OnnxKernel::kUnfused && whole_input) {
        ir::Attributes m;
        m.axes = {1, 2};
        m.keep_dims = true;
        m.requant = ir::RequantMode::kOnnxRuntime;
        m.onnx_kernel = a.onnx_kernel;
        add_op(OpKind::kMean, {x, -1}, y, m);
        return std::nullopt;
      }
    }
    add_op(kind, {x}, y, a);
    return std::nullopt;
  }

  // The MLAS kernel ONNX Runtime's float AveragePool runs, which fixes the
  // order of the window sum: at ORT_ENABLE_ALL the NCHWc transformer takes
  // every 4-D pool whose channels are a multiple of MLAS's NCHWc block (16
  // with AVX-512F, 8 with AVX, none below) — row by row; otherwise MlasPool
  // picks its global kernel for a window over the whole input with stride 1
  // and no padding (4-lane partial sums), its vector kernel for stride <= 2,
  // kernel <= 32 and the padded width within its 2048-float reduction buffer
  // less 3 (each window column first), else its generic kernel (row by row).
  // AveragePool-19 runs ONNX Runtime's own loop instead of MlasPool: rows.
  enum class MlasPoolKernel { kNchwc, kGlobal, kVector, kGeneric };
  MlasPoolKernel ort_float_pool_kernel(const std::vector<int64_t>& xs,
                                       const std::vector<int64_t>& ks, int64_t stride_h,
                                       int64_t stride_w, const ir::Padding& p) const {
    const CpuFeatures& f = cpu_features();
    const int64_t block = f.avx512f && f.os_zmm ? 16 : f.avx && f.os_ymm ? 8 : 1;
    if (b.config_.ort_opt_level == Config::OrtOptLevel::kAll && block > 1 && xs[1] % block == 0) {
      return MlasPoolKernel::kNchwc;
    }
    const bool no_padding = !(p.top || p.bottom || p.left || p.right);
    if (ks[0] == xs[2] && ks[1] == xs[3] && stride_h == 1 && stride_w == 1 && no_padding) {
      return MlasPoolKernel::kGlobal;
    }
    // AveragePool-19 (dilations) runs ONNX Runtime's own pooling loop, row by
    // row, not MlasPool (measured with ORT 1.31; AveragePool-11 runs MlasPool).
    if (node.since_version >= 19) return MlasPoolKernel::kGeneric;
    const int64_t room = 2048 - 3 - p.left - p.right;
    if (stride_w <= 2 && ks[0] <= 32 && ks[1] <= 32 && room >= xs[3]) return MlasPoolKernel::kVector;
    return MlasPoolKernel::kGeneric;
  }

  std::optional<std::string> global_average_pool() {
    ActQuant xq, yq;
    int x = -1, y = -1;
    if (auto e = act_in(0, &xq, &x)) return e;
    if (auto e = act_out(&yq, &y)) return e;
    const auto& xs = g.value(in(0).value).shape;
    if (xs.size() != 4) return str_cat("input ", shape_str(xs), " is not 4-D NCHW");
    if (node.attr_int("channels_last", 0) != 0) return std::string("channels_last=1");
    ir::Attributes a;
    a.axes.push_back(1);
    a.axes.push_back(2);
    a.keep_dims = true;
    a.requant = ir::RequantMode::kOnnxRuntime;
    a.onnx_kernel = ort_kernel();
    if (a.onnx_kernel == ir::Attributes::OnnxKernel::kUnfused) {
      // DequantizeLinear -> float GlobalAveragePool -> QuantizeLinear: the
      // float sum's order is MLAS's (the NCHWc kernel at `all` for channels
      // a multiple of its block, else MlasPool's global kernel with lane-wise
      // partial sums), which no NPU pooling mode reproduces; the window
      // modes of the unfused AveragePool sum rows or columns in order.
      return std::string(
          "ONNX Runtime runs this GlobalAveragePool unfused (DequantizeLinear, "
          "a float mean summed in MLAS's lane-wise or NCHWc order, QuantizeLinear), "
          "which has no NPU mode");
    }
    add_op(OpKind::kMean, {x, -1}, y, a);
    return std::nullopt;
  }

  std::optional<std::string> unary(OpKind kind) {
    ActQuant xq, yq;
    int x = -1, y = -1;
    if (auto e = act_in(0, &xq, &x)) return e;
    if (auto e = act_out(&yq, &y)) return e;
    ir::Attributes a;
    if (node.op_type == "Clip") {
      float lo = -INFINITY, hi = INFINITY;
      if (auto e = clip_bounds(node, &lo, &hi)) return e;
      if (lo == 0.0f && hi == INFINITY) kind = OpKind::kRelu;
      else if (lo == 0.0f && hi == 6.0f) kind = OpKind::kRelu6;
      else if (lo == -1.0f && hi == 1.0f) kind = OpKind::kReluN1To1;
      else return str_cat("Clip [", lo, ", ", hi, "] is not Relu, Relu6 or ReluN1To1");
    }
    if (kind == OpKind::kLeakyRelu) a.alpha = node.attr_float("alpha", 0.01f);
    a.lut = onnx_lut(kind, xq, yq, a.alpha);
    add_op(kind, {x}, y, a);
    return std::nullopt;
  }

  // The op's table with ONNX Runtime's semantics: DequantizeLinear in float32,
  // the float function, QuantizeLinear (round half to even, saturate), for
  // each of the 256 int8 inputs — bit-exact to the CPU EP's unit.
  static std::vector<int8_t> onnx_lut(OpKind kind, const ActQuant& xq, const ActQuant& yq,
                                      float alpha) {
    std::vector<int8_t> lut(256);
    for (int i = 0; i < 256; ++i) {
      const int q = static_cast<int8_t>(static_cast<uint8_t>(i));
      const float x = static_cast<float>(q - xq.zero_point) * xq.scale;
      float y = x;
      switch (kind) {
        case OpKind::kLogistic: y = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x)))); break;
        case OpKind::kTanh: y = static_cast<float>(std::tanh(static_cast<double>(x))); break;
        case OpKind::kLeakyRelu: y = x >= 0.0f ? x : x * alpha; break;
        // ONNX HardSwish: x * max(0, min(1, x / 6 + 1 / 2)), alpha = 1/6 in float32.
        case OpKind::kHardSwish:
          y = x * std::max(0.0f, std::min(1.0f, x * (1.0f / 6.0f) + 0.5f));
          break;
        case OpKind::kRelu: y = std::max(x, 0.0f); break;
        case OpKind::kRelu6: y = std::min(std::max(x, 0.0f), 6.0f); break;
        case OpKind::kReluN1To1: y = std::min(std::max(x, -1.0f), 1.0f); break;
        default: break;
      }
      const float r = std::nearbyint(y / yq.scale) + static_cast<float>(yq.zero_point);
      lut[i] = static_cast<int8_t>(std::min(127.0f, std::max(-128.0f, r)));
    }
    return lut;
  }

  // Concat along the channels, rows or columns (NCHW axes 1, 2, 3). An input
  // quantized as the output is copied (QLinearConcat's copy; DequantizeLinear
  // then QuantizeLinear at one scale gives the value back); any other input
  // is first rescaled by the activation unit with ONNX Runtime's table
  // Quantize(Dequantize(x)) in float32 — what QLinearConcat's lookup table
  // and the unfused DequantizeLinear -> Concat -> QuantizeLinear both compute.
  std::optional<std::string> concat() {
    ActQuant yq;
    int y = -1;
    if (auto e = act_out(&yq, &y)) return e;
    const auto& ys = g.value(out().value).shape;
    const int64_t rank = static_cast<int64_t>(ys.size());
    int64_t axis = node.attr_int("axis", 1);
    if (axis < 0) axis += rank;
    // The IR tensors are NHWC for rank 4 (NCHW axes 1, 2, 3 -> 3, 1, 2) and
    // as given otherwise; the NPU places channels, columns or rows
    // (compiler/lower.h lower_concatenation), not the batch of a 4-D tensor.
    if (rank < 1 || rank > 4 || axis < 0 || axis >= rank || (rank == 4 && axis == 0)) {
      return str_cat("Concat along axis ", node.attr_int("axis", 1), " of a rank-", rank,
                     " tensor: only the channel, height or width axis of NCHW tensors (not the "
                     "batch), or any axis of ranks 1 to 3");
    }
    const int64_t ir_axis = rank == 4 ? std::array<int64_t, 4>{0, 3, 1, 2}[size_t(axis)] : axis;
    std::vector<int> parts;
    // com.microsoft QLinearConcat: (y_scale, y_zp) and a triple per input.
    const size_t n_in = unit.form == NodeUnit::Form::kQOperator
                            ? (node.inputs.size() >= 2 ? (node.inputs.size() - 2) / 3 : 0)
                            : node.inputs.size();
    if (unit.form == NodeUnit::Form::kQOperator && (n_in == 0 || (node.inputs.size() - 2) % 3 != 0)) {
      return str_cat("QLinearConcat has ", node.inputs.size(),
                     " inputs (y_scale, y_zero_point and a triple per input needed)");
    }
    for (size_t i = 0; i < n_in; ++i) {
      ActQuant xq;
      int x = -1;
      if (auto e = act_in(i, &xq, &x)) return e;
      if (xq.scale != yq.scale || xq.zero_point != yq.zero_point) {
        ir::Tensor t = tensors[static_cast<size_t>(x)].tensor;
        t.name = str_cat(t.name, " rescaled for ", node.name.empty() ? node.op_type : node.name);
        t.quant.scales = {yq.scale};
        t.quant.zero_points = {yq.zero_point};
        const int r = add_local(-1, std::move(t), yq.elem_type);
        ir::Attributes a;
        a.lut = onnx_lut(OpKind::kQuantize, xq, yq, 0.0f);
        add_op(OpKind::kQuantize, {x}, r, a);
        x = r;
      }
      parts.push_back(x);
    }
    ir::Attributes a;
    a.axis = static_cast<int>(ir_axis);
    add_op(OpKind::kConcatenation, parts, y, a);
    return std::nullopt;
  }

  // Slice (starts, ends, axes, steps as constant inputs, or opset 1's
  // attributes) as the IR's SLICE: the origin and stride of each axis in
  // the NHWC order of the IR tensors (compiler/lower.h lower_slice). ONNX
  // Runtime runs DequantizeLinear -> Slice -> QuantizeLinear at one scale as
  // an int8 copy (its QDQ transformer drops the pair; in float32 the pair
  // gives each value back), so the NPU's byte copy is exact; a requantizing
  // Slice is declined.
  std::optional<std::string> slice() {
    ActQuant xq, yq;
    int x = -1, y = -1;
    if (auto e = act_in(0, &xq, &x)) return e;
    if (auto e = act_out(&yq, &y)) return e;
    if (xq.scale != yq.scale || xq.zero_point != yq.zero_point) {
      return std::string("input and output are quantized differently (a requantizing Slice)");
    }
    const auto& xs = g.value(in(0).value).shape;
    const auto& ys = g.value(out().value).shape;
    const size_t rank = xs.size();
    if (ys.size() != rank || rank == 0) {
      return str_cat("Slice of ", shape_str(xs), " to ", shape_str(ys), " changes the rank");
    }
    // Constant input i as integers (INT64_MAX and INT64_MIN kept: "to the end").
    const auto ints = [&](size_t i, const char* what,
                          std::vector<int64_t>* v) -> std::optional<std::string> {
      if (node.inputs.size() <= i || node.input(i) < 0) return std::nullopt;
      const OnnxValue& val = g.value(node.input(i));
      if (!val.is_constant) return str_cat("Slice ", what, " '", val.name, "' is not a constant");
      for (double d : val.numbers()) {
        v->push_back(d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(d));
      }
      return std::nullopt;
    };
    std::vector<int64_t> starts, ends, axes, steps;
    if (node.inputs.size() > 1) {
      if (auto e = ints(1, "starts", &starts)) return e;
      if (auto e = ints(2, "ends", &ends)) return e;
      if (auto e = ints(3, "axes", &axes)) return e;
      if (auto e = ints(4, "steps", &steps)) return e;
    } else {
      starts = node.attr_ints("starts").value_or(std::vector<int64_t>{});
      ends = node.attr_ints("ends").value_or(std::vector<int64_t>{});
      axes = node.attr_ints("axes").value_or(std::vector<int64_t>{});
    }
    if (axes.empty()) {
      for (size_t d = 0; d < starts.size(); ++d) axes.push_back(static_cast<int64_t>(d));
    }
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
      return std::string("Slice starts, ends, axes and steps differ in length");
    }
    std::vector<int64_t> begin(rank, 0), stride(rank, 1), extent = xs;
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t ax = axes[i] < 0 ? axes[i] + static_cast<int64_t>(rank) : axes[i];
      if (ax < 0 || ax >= static_cast<int64_t>(rank)) return str_cat("Slice axis ", axes[i], " out of range");
      if (steps[i] < 1) return str_cat("Slice step ", steps[i], " on axis ", axes[i]);
      const int64_t dim = xs[size_t(ax)];
      const auto clamp = [&](int64_t v) {
        if (v < 0) v = v == INT64_MIN ? 0 : v + dim;
        return std::clamp<int64_t>(v, 0, dim);
      };
      const int64_t b = clamp(starts[i]), e = clamp(ends[i]);
      begin[size_t(ax)] = b;
      stride[size_t(ax)] = steps[i];
      extent[size_t(ax)] = e > b ? (e - b + steps[i] - 1) / steps[i] : 0;
    }
    if (extent != ys) {
      return str_cat("Slice output ", shape_str(ys), " but the slice gives ", shape_str(extent));
    }
    ir::Attributes a;
    a.slice_begin = {to_nhwc(begin)};
    a.slice_strides = to_nhwc(stride);
    add_op(OpKind::kSlice, {x}, y, a);
    return std::nullopt;
  }

  // Split along any axis but a 4-D map's batch (NCHW channels, rows or
  // columns) as the IR's SLICE with one output per part: output k is the
  // input's extent [offset_k, offset_k + size_k) on the axis
  // (compiler/lower.h lower_slice). The sizes come from the `split` input
  // (opset >= 13) or attribute (older), else equal parts (num_outputs in
  // opset 18: ceil(dim / n) each, the last smaller), and must match the
  // output shapes. An output quantized as the input is the byte copy (the
  // QDQ pair gives each value back; ONNX Runtime's int8 Split copies); a
  // requantizing output is copied, then rescaled by the activation unit with
  // ONNX Runtime's table Quantize(Dequantize(x)) in float32 — what the
  // unfused DequantizeLinear -> Split -> QuantizeLinear computes.
  std::optional<std::string> split() {
    ActQuant xq;
    int x = -1;
    if (auto e = act_in(0, &xq, &x)) return e;
    const auto& xs = g.value(in(0).value).shape;
    const int64_t rank = static_cast<int64_t>(xs.size());
    int64_t axis = node.attr_int("axis", 0);
    if (axis < 0) axis += rank;
    if (rank < 1 || axis < 0 || axis >= rank || (rank == 4 && axis == 0)) {
      return str_cat("Split along axis ", node.attr_int("axis", 0), " of a rank-", rank,
                     " tensor: only the channel, height or width axis of NCHW tensors (not the "
                     "batch), or any axis of other ranks");
    }
    const size_t n_out = node.outputs.size();
    const int64_t dim = xs[size_t(axis)];
    std::vector<int64_t> sizes;
    if (node.inputs.size() > 1 && node.input(1) >= 0) {
      const OnnxValue& sv = g.value(node.input(1));
      if (!sv.is_constant) return str_cat("Split sizes '", sv.name, "' are not a constant");
      for (double d : sv.numbers()) sizes.push_back(static_cast<int64_t>(d));
    } else if (auto attr = node.attr_ints("split")) {
      sizes = *attr;
    } else {
      const int64_t parts = node.attr_int("num_outputs", static_cast<int64_t>(n_out));
      if (parts < 1) return str_cat("Split into ", parts, " outputs");
      const int64_t chunk = (dim + parts - 1) / parts;
      for (int64_t k = 0; k < parts; ++k) {
        sizes.push_back(std::clamp<int64_t>(dim - k * chunk, 0, chunk));
      }
    }
    if (sizes.size() != n_out) {
      return str_cat("Split gives ", sizes.size(), " parts for ", n_out, " outputs");
    }
    int64_t offset = 0;
    ir::Attributes a;  // one SLICE op, an output per part
    std::vector<int> outs;
    struct Requantize {
      int part, y;
      std::vector<int8_t> lut;
    };
    std::vector<Requantize> requantize;
    for (size_t k = 0; k < n_out; ++k) {
      if (sizes[k] < 1) return str_cat("Split output ", k, " is empty (size ", sizes[k], ")");
      int value = node.outputs[k], scale = -1, zp = -1;
      if (unit.form == NodeUnit::Form::kQdq) {
        const OnnxNode& q = g.nodes[size_t(unit.outputs_q.at(k))];
        value = q.outputs[0];
        scale = q.input(1);
        zp = q.input(2);
      } else {
        const QIn src = in(0);
        scale = src.scale;
        zp = src.zp;
      }
      std::vector<int64_t> want = xs;
      want[size_t(axis)] = sizes[k];
      if (g.value(value).shape != want) {
        return str_cat("Split output ", k, " is ", shape_str(g.value(value).shape),
                       " but the split gives ", shape_str(want));
      }
      ActQuant yq;
      int y = -1;
      if (auto e = act_quant(value, scale, zp, &yq)) return e;
      if (auto e = activation(value, yq, &y)) return e;
      if (yq.scale != xq.scale || yq.zero_point != xq.zero_point) {
        // A requantizing output: the part is copied at the input's
        // quantization, then rescaled by the activation unit with ONNX
        // Runtime's table Quantize(Dequantize(x)) in float32 (as concat()).
        ir::Tensor t = tensors[static_cast<size_t>(y)].tensor;
        t.name = str_cat(t.name, " before requantizing");
        t.quant.scales = {xq.scale};
        t.quant.zero_points = {xq.zero_point};
        const int part = add_local(-1, std::move(t), xq.elem_type);
        requantize.push_back({part, y, onnx_lut(OpKind::kQuantize, xq, yq, 0.0f)});
        y = part;
      }
      std::vector<int64_t> begin(size_t(rank), 0);
      begin[size_t(axis)] = offset;
      a.slice_begin.push_back(to_nhwc(begin));
      outs.push_back(y);
      offset += sizes[k];
    }
    if (offset != dim) return str_cat("Split sizes add up to ", offset, ", not ", dim);
    a.slice_strides = std::vector<int64_t>(size_t(rank), 1);
    add_op(OpKind::kSlice, {x}, outs.front(), a);
    ops.back().out = outs;
    for (auto& [part, y, lut] : requantize) {
      ir::Attributes qa;
      qa.lut = std::move(lut);
      add_op(OpKind::kQuantize, {part}, y, qa);
    }
    return std::nullopt;
  }

  // SpaceToDepth and DepthToSpace (DCR mode) move NCHW channel blocks exactly
  // as TFLite's NHWC ops do: out[n, (r*b + u)*C + c, h, w] = in[n, c, b*h + r,
  // b*w + u] (and the inverse), so on the NHWC IR tensors they are the IR's
  // SPACE_TO_DEPTH / DEPTH_TO_SPACE (compiler/lower.h lower_space_depth); at
  // one scale the QDQ pair around them gives each value back. DepthToSpace's
  // CRD mode orders the channels the other way and is declined.
  std::optional<std::string> block_copy(OpKind kind) {
    ActQuant xq, yq;
    int x = -1, y = -1;
    if (auto e = act_in(0, &xq, &x)) return e;
    if (auto e = act_out(&yq, &y)) return e;
    if (xq.scale != yq.scale || xq.zero_point != yq.zero_point) {
      return str_cat("input and output are quantized differently (a requantizing ", node.op_type, ")");
    }
    if (kind == OpKind::kDepthToSpace && node.attr_string("mode", "DCR") != "DCR") {
      return str_cat("DepthToSpace mode ", node.attr_string("mode", "DCR"),
                     " (only DCR orders the channels as TFLite's DEPTH_TO_SPACE)");
    }
    if (g.value(in(0).value).shape.size() != 4) return std::string("input is not 4-D NCHW");
    ir::Attributes a;
    a.block_size = static_cast<int>(node.attr_int("blocksize", 0));
    add_op(kind, {x}, y, a);
    return std::nullopt;
  }

  // Resize, mode nearest, by whole factors on height and width: ONNX
  // Runtime's CPU kernel (upsamplebase.h) maps output index o to an input
  // index by the coordinate transformation and the nearest mode, in float32;
  // where that is o / f for every o (replication) the op is the IR's
  // RESIZE_NEAREST_NEIGHBOR (compiler/lower.h lower_resize_nearest, whose
  // TFLite mapping floor(o * in / out) is then o / f too), a byte copy; at one
  // scale the QDQ pair around it gives each value back.
  std::optional<std::string> resize_nearest() {
    ActQuant xq, yq;
    int x = -1, y = -1;
    if (auto e = act_in(0, &xq, &x)) return e;
    if (auto e = act_out(&yq, &y)) return e;
    if (xq.scale != yq.scale || xq.zero_point != yq.zero_point) {
      return std::string("input and output are quantized differently (a requantizing Resize)");
    }
    const std::string mode = node.attr_string("mode", "nearest");
    if (mode != "nearest") return str_cat("Resize mode ", mode, " (only nearest is a copy)");
    if (node.attr_ints("axes")) return std::string("Resize with axes");
    const std::string ct = node.attr_string("coordinate_transformation_mode", "half_pixel");
    const std::string nm = node.attr_string("nearest_mode", "round_prefer_floor");
    const auto& xs = g.value(in(0).value).shape;
    const auto& ys = g.value(out().value).shape;
    if (xs.size() != 4 || ys.size() != 4) return std::string("input is not 4-D NCHW");
    if (xs[0] != ys[0] || xs[1] != ys[1]) return std::string("Resize of the batch or the channels");
    // ONNX Runtime's float scales: the scales input, or sizes / input dims.
    std::vector<float> scales;
    if (node.inputs.size() > 2 && node.input(2) >= 0 && !g.value(node.input(2)).numbers().empty()) {
      const OnnxValue& v = g.value(node.input(2));
      if (!v.is_constant) return std::string("Resize scales are not a constant");
      for (double d : v.numbers()) scales.push_back(static_cast<float>(d));
    } else {
      for (size_t d = 0; d < 4; ++d) scales.push_back(static_cast<float>(ys[d]) / static_cast<float>(xs[d]));
    }
    if (scales.size() != 4) return str_cat(scales.size(), " Resize scales");
    for (int d = 2; d < 4; ++d) {
      const int64_t in_n = xs[size_t(d)], out_n = ys[size_t(d)];
      if (in_n < 1 || out_n % in_n != 0) {
        return str_cat("Resize ", in_n, " -> ", out_n, " is not a whole factor");
      }
      const int64_t f = out_n / in_n;
      const float s = scales[size_t(d)];
      for (int64_t o = 0; o < out_n; ++o) {
        const float xo = static_cast<float>(o);
        float orig;
        if (ct == "asymmetric") {
          orig = xo / s;
        } else if (ct == "half_pixel") {
          orig = (xo + 0.5f) / s - 0.5f;
        } else if (ct == "pytorch_half_pixel") {
          orig = out_n > 1 ? (xo + 0.5f) / s - 0.5f : 0.0f;
        } else if (ct == "tf_half_pixel_for_nn") {
          orig = (xo + 0.5f) / s;
        } else if (ct == "align_corners") {
          orig = out_n == 1 ? 0.0f
                            : xo * static_cast<float>(in_n - 1) / static_cast<float>(out_n - 1);
        } else {
          return str_cat("Resize coordinate_transformation_mode ", ct);
        }
        float idx;
        if (nm == "round_prefer_floor") {
          idx = orig == static_cast<float>(static_cast<int64_t>(orig)) + 0.5f ? std::floor(orig)
                                                                              : std::round(orig);
        } else if (nm == "round_prefer_ceil") {
          idx = orig == static_cast<float>(static_cast<int64_t>(orig)) + 0.5f ? std::ceil(orig)
                                                                              : std::round(orig);
        } else if (nm == "floor") {
          idx = std::floor(orig);
        } else if (nm == "ceil") {
          idx = std::ceil(orig);
        } else {
          return str_cat("Resize nearest_mode ", nm);
        }
        const int64_t i = std::clamp<int64_t>(static_cast<int64_t>(idx), 0, in_n - 1);
        if (i != o / f) {
          return str_cat("Resize (", ct, ", ", nm, ") maps output index ", o, " to input ", i,
                         ", not ", o / f, " (not a replication)");
        }
      }
    }
    add_op(OpKind::kResizeNearest, {x}, y, ir::Attributes{});
    return std::nullopt;
  }

  // Pad (mode constant, value 0) of the height and width of an NCHW map:
  // DequantizeLinear -> Pad -> QuantizeLinear at one scale gives each value
  // back and the padding Quantize(0) = the zero point, which is what the
  // IR's PAD writes (folded into the consuming convolution's padding, or a
  // standalone pass: support/pad_fold.h).
  std::optional<std::string> pad() {
    ActQuant xq, yq;
    int x = -1, y = -1;
    if (auto e = act_in(0, &xq, &x)) return e;
    if (auto e = act_out(&yq, &y)) return e;
    if (xq.scale != yq.scale || xq.zero_point != yq.zero_point) {
      return std::string("input and output are quantized differently (a requantizing Pad)");
    }
    const auto& xs = g.value(in(0).value).shape;
    if (xs.size() != 4) return str_cat("input ", shape_str(xs), " is not 4-D NCHW");
    const std::string mode = node.attr_string("mode", "constant");
    if (mode != "constant") return str_cat("Pad mode '", mode, "' (only constant)");
    std::vector<int64_t> pads;
    if (node.input(1) >= 0) {
      const OnnxValue& pv = g.value(node.input(1));
      if (!pv.is_constant) return str_cat("pads '", pv.name, "' are not a constant");
      for (double d : pv.numbers()) pads.push_back(static_cast<int64_t>(d));
    } else {
      pads = node.attr_ints("pads").value_or(std::vector<int64_t>{});
    }
    if (node.input(3) >= 0) return std::string("Pad with an axes input");
    if (unit.form == NodeUnit::Form::kInt8) {
      // On the int8 tensor itself: the value must be the input's zero point
      // (Quantize(0), what the IR's PAD writes).
      double zp = 0.0;
      if (in(0).zp >= 0) {
        const OnnxValue& zv = g.value(in(0).zp);
        if (!zv.is_constant || zv.numbers().size() != 1) {
          return str_cat("zero point '", zv.name, "' is not one constant");
        }
        zp = zv.numbers()[0];
      }
      double value = node.attr_float("value", 0.0f);  // before opset 11
      if (node.input(2) >= 0) {
        const OnnxValue& cv = g.value(node.input(2));
        if (!cv.is_constant || cv.numbers().size() != 1) {
          return str_cat("Pad value '", cv.name, "' is not one constant");
        }
        value = cv.numbers()[0];
      }
      if (value != zp) {
        return str_cat("int8 Pad value ", value, " is not the input's zero point ", zp,
                       " (the NPU pads with the zero point)");
      }
    } else if (node.input(2) >= 0) {
      const OnnxValue& cv = g.value(node.input(2));
      if (!cv.is_constant || cv.numbers().size() != 1 || cv.numbers()[0] != 0.0) {
        return str_cat("Pad value '", cv.name, "' is not the constant 0 (the NPU pads with the "
                       "zero point)");
      }
    } else if (node.attr_float("value", 0.0f) != 0.0f) {
      return std::string("Pad value is not 0 (the NPU pads with the zero point)");
    }
    if (pads.size() != 8) return str_cat("pads has ", pads.size(), " values (8 needed)");
    for (int64_t v : pads) {
      if (v < 0) return std::string("negative pads (a crop)");
    }
    if (pads[0] || pads[1] || pads[4] || pads[5]) {
      return std::string("it pads the batch or the channels (the NPU pads height and width)");
    }
    ir::Attributes a;
    a.paddings = {{0, 0}, {pads[2], pads[6]}, {pads[3], pads[7]}, {0, 0}};
    add_op(OpKind::kPad, {x, -1}, y, a);
    return std::nullopt;
  }

  std::optional<std::string> reshape() {
    ActQuant xq, yq;
    int x = -1, y = -1;
    if (auto e = act_in(0, &xq, &x)) return e;
    if (auto e = act_out(&yq, &y)) return e;
    if (xq.scale != yq.scale || xq.zero_point != yq.zero_point) {
      return std::string("input and output are quantized differently (a requantizing reshape)");
    }
    // NCHW and NHWC flatten orders agree only when H = W = 1.
    auto neutral = [&](int v) {
      const auto& s = g.value(v).shape;
      return s.size() < 4 || (s.size() == 4 && s[2] * s[3] == 1);
    };
    const int xv = in(0).value, yv = out().value;
    if (!neutral(xv) || !neutral(yv)) {
      return str_cat("reshape ", shape_str(g.value(xv).shape), " -> ", shape_str(g.value(yv).shape),
                     " depends on the NCHW element order");
    }
    add_op(OpKind::kReshape, {x, -1}, y);
    return std::nullopt;
  }

  std::optional<std::string> translate() {
    std::optional<std::string> why = translate_op();
    if (why) return why;
    // int16 activations (option int16_activations): Conv (16x8 output stage),
    // Add / Sub / Mul (16x8 element-wise) and the same-quantization copies
    // MaxPool / Reshape / Flatten so far.
    const std::string& t = node.op_type;
    const bool i16_kind = t == "Conv" || t == "MaxPool" || t == "Reshape" || t == "Flatten" ||
                          t == "Add" || t == "Sub" || t == "Mul" || t == "Gemm" || t == "MatMul";
    for (const LocalTensor& lt : tensors) {
      if (lt.tensor.dtype == DType::kInt16 && !i16_kind) {
        return str_cat(t, " with int16 activations is not translated (int16_activations claims "
                          "Conv, Gemm, MatMul, Add, Sub, Mul, MaxPool, Reshape and Flatten units "
                          "only)");
      }
    }
    return std::nullopt;
  }

  std::optional<std::string> translate_op() {
    const std::string& t = node.op_type;
    if (unit.layout_input >= 0 && is_layout_op(node)) return channel_permute();
    if (t == "Conv" || t == "QLinearConv") return conv();
    if (t == "MatMul" || t == "Gemm" || t == "QLinearMatMul" || t == "QGemm") return matmul_or_gemm();
    if (t == "Add" || t == "QLinearAdd") return elementwise(OpKind::kAdd);
    if (t == "Sub") return elementwise(OpKind::kSub);
    if (t == "Mul" || t == "QLinearMul") return elementwise(OpKind::kMul);
    if (t == "MaxPool") return pool(OpKind::kMaxPool2D);
    if (t == "AveragePool" || t == "QLinearAveragePool") return pool(OpKind::kAveragePool2D);
    if (t == "GlobalAveragePool" || t == "QLinearGlobalAveragePool") return global_average_pool();
    if (t == "Relu" || t == "Clip") return unary(OpKind::kRelu);
    if (t == "Sigmoid" || t == "QLinearSigmoid") return unary(OpKind::kLogistic);
    if (t == "Tanh") return unary(OpKind::kTanh);
    if (t == "LeakyRelu" || t == "QLinearLeakyRelu") return unary(OpKind::kLeakyRelu);
    if (t == "HardSwish") return unary(OpKind::kHardSwish);
    if (t == "Reshape" || t == "Flatten" || t == "Squeeze" || t == "Unsqueeze") return reshape();
    if (t == "Concat" || t == "QLinearConcat") return concat();
    if (t == "Pad") return pad();
    if (t == "Resize") return resize_nearest();
    if (t == "Slice") return slice();
    if (t == "Split") return split();
    if (t == "SpaceToDepth") return block_copy(OpKind::kSpaceToDepth);
    if (t == "DepthToSpace") return block_copy(OpKind::kDepthToSpace);
    return str_cat(t, " has no translation");
  }

  // Adds the local tensors and ops to the builder.
  void commit() {
    std::vector<int> ids(tensors.size(), -1);
    for (size_t i = 0; i < tensors.size(); ++i) {
      const int v = tensors[i].value_id;
      if (v >= 0) {
        const int existing = b.tensor_of(v);
        if (existing >= 0) {
          ids[i] = existing;
          continue;
        }
      }
      ir::Tensor t = tensors[i].tensor;
      if (v < 0) t.name = str_cat(t.name, "#", b.graph_.tensors.size());  // constants: unique
      ids[i] = b.graph_.add_tensor(std::move(t));
      if (v >= 0) {
        b.tensor_of_[v] = ids[i];
        b.elem_type_[v] = tensors[i].elem_type;
        if (tensors[i].raw_order) b.raw_order_.insert(v);
      }
    }
    b.last_ops_.clear();
    for (LocalOp& op : ops) {
      for (int i : op.in) op.op.inputs.push_back(i >= 0 ? ids[i] : -1);
      for (int i : op.out) op.op.outputs.push_back(ids[i]);
      b.last_ops_.push_back(b.graph_.add_op(std::move(op.op)));
    }
  }
};

int64_t IrBuilder::macs() const {
  int64_t macs = 0;
  for (const ir::Op& op : graph_.ops) macs += ir::op_macs(graph_, op);
  return macs;
}

std::optional<std::string> IrBuilder::add_unit(const NodeUnit& unit) {
  UnitTranslator t(*this, unit);
  std::optional<std::string> why;
  try {
    why = t.translate();
  } catch (const nacc::Error& e) {
    why = e.what();
  }
  if (why) return why;
  // The output of a unit must not already exist with a producer (each ONNX
  // value has one producer; a second would mean the unit was added twice).
  try {
    t.commit();
  } catch (const nacc::Error& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

int IrBuilder::tensor_of(int value_id) const {
  auto it = tensor_of_.find(value_id);
  return it == tensor_of_.end() ? -1 : it->second;
}

IoBinding IrBuilder::binding(int value_id) const {
  const OnnxValue& v = g_.value(value_id);
  IoBinding io;
  io.name = v.name;
  auto it = elem_type_.find(value_id);
  io.elem_type = it != elem_type_.end() ? it->second : v.elem_type;
  io.onnx_shape = v.shape;
  io.nchw = v.shape.size() == 4 && !raw_order_.count(value_id);
  io.ir_shape = io.nchw ? to_nhwc(v.shape) : v.shape;
  return io;
}

}  // namespace nacc::ep

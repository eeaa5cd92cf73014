// Canonical encoding of an IR graph and its digest (graph_digest.h).
#include "support/graph_digest.h"

#include <cstdio>
#include <type_traits>

#include "support/digest128.h"

namespace nacc::support {

namespace {

// Every field of these structs is encoded below: a new field must be added
// there too (and this size updated), or two graphs differing only in it would
// share a cache entry.
#if defined(__GLIBCXX__) && defined(__x86_64__)
static_assert(sizeof(ir::Attributes) == 280, "ir::Attributes changed: encode the new field");
static_assert(sizeof(ir::Tensor) == 152, "ir::Tensor changed: encode the new field");
static_assert(sizeof(ir::Op) == 400, "ir::Op changed: encode the new field");
#endif

template <typename H>
class Encoder {
 public:
  explicit Encoder(H& h) : h_(h) {}
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable<T>::value, "pod() of a non-POD");
    h_.update(&v, sizeof v);
  }
  void str(const std::string& s) {
    pod(static_cast<uint64_t>(s.size()));
    h_.update(s.data(), s.size());
  }
  template <typename T>
  void vec(const std::vector<T>& v) {
    pod(static_cast<uint64_t>(v.size()));
    if (!v.empty()) h_.update(v.data(), v.size() * sizeof(T));
  }

  void graph(const ir::Graph& g) {
    pod(static_cast<uint64_t>(g.tensors.size()));
    for (const ir::Tensor& t : g.tensors) tensor(t);
    pod(static_cast<uint64_t>(g.ops.size()));
    for (const ir::Op& op : g.ops) this->op(op);
    vec(g.inputs);
    vec(g.outputs);
  }

 private:
  void tensor(const ir::Tensor& t) {
    str(t.name);
    vec(t.shape);
    pod(static_cast<int32_t>(t.dtype));
    vec(t.quant.scales);
    vec(t.quant.zero_points);
    pod(static_cast<int32_t>(t.quant.axis));
    pod(static_cast<uint8_t>(t.data.has_value()));
    if (t.data) vec(*t.data);
  }

  void op(const ir::Op& op) {
    pod(static_cast<int32_t>(op.kind));
    str(op.name);
    str(op.type_name);
    vec(op.inputs);
    vec(op.outputs);
    const ir::Attributes& a = op.attrs;
    for (int v : {a.stride_h, a.stride_w, a.dilation_h, a.dilation_w, a.kernel_h, a.kernel_w,
                  a.depth_multiplier, static_cast<int>(a.activation), a.axis}) {
      pod(static_cast<int32_t>(v));
    }
    for (int64_t v : {a.padding.top, a.padding.bottom, a.padding.left, a.padding.right}) pod(v);
    vec(a.axes);
    pod(static_cast<uint8_t>(a.keep_dims));
    pod(a.alpha);
    vec(a.lut);
    pod(static_cast<uint8_t>(a.requant));
    pod(static_cast<uint8_t>(a.onnx_kernel));  // how ONNX Runtime's CPU EP would run the node
    pod(static_cast<uint8_t>(a.ort_pool_by_columns));
    if (a.ort_kblock != 0) {  // the float32 Conv's K blocks (absent elsewhere: older digests stay)
      pod(static_cast<int32_t>(a.ort_kblock));
      pod(a.ort_kblock_split);
      pod(static_cast<int32_t>(a.ort_kblock_tail));
    }
    if (a.ort_sum_order != ir::Attributes::OrtSumOrder::kNone) {  // MLAS's one-row kernels (ditto)
      pod(static_cast<uint8_t>(a.ort_sum_order));
    }
    pod(static_cast<uint64_t>(a.paddings.size()));
    for (const auto& p : a.paddings) pod(p);
    pod(static_cast<uint64_t>(a.slice_begin.size()));
    for (const auto& b : a.slice_begin) vec(b);
    vec(a.slice_strides);
    pod(static_cast<int32_t>(a.block_size));
    pod(static_cast<uint8_t>(a.align_corners));
    pod(static_cast<uint8_t>(a.half_pixel_centers));
    if (!a.perm.empty()) vec(a.perm);  // TRANSPOSE (absent elsewhere: older digests stay)
    pod(static_cast<uint64_t>(a.unsupported_options.size()));
    for (const std::string& s : a.unsupported_options) str(s);
  }

  H& h_;
};

}  // namespace

uint64_t fnv1a64(const void* data, size_t size, uint64_t h) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

std::string graph_digest(const ir::Graph& graph) {
  Digest128 h;
  Encoder<Digest128>(h).graph(graph);
  return h.hex_digest();
}

std::string bytes_digest(const std::string& bytes) {
  return digest128_hex(bytes.data(), bytes.size());
}

}  // namespace nacc::support

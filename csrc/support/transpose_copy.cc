// TRANSPOSE as DMA copy passes (support/transpose_copy.h).
#include "support/transpose_copy.h"

#include <algorithm>

#include "arch/fields.h"
#include "arch/limits.h"
#include "arch/registers.h"
#include "common/error.h"

namespace nacc::support {

int64_t TransposeCopy::passes() const {
  int64_t n = 1;
  for (const CopyDim& d : outer) n *= d.size;
  return n;
}

std::optional<TransposeCopy> transpose_copy(const std::vector<int64_t>& shape,
                                            const std::vector<int>& perm, std::string* why) {
  const int rank = int(shape.size());
  std::vector<int> seen(size_t(rank), 0);
  bool ok = int(perm.size()) == rank;
  for (int p : perm) {
    if (!ok || p < 0 || p >= rank || seen[size_t(p)]++) ok = false;
  }
  if (!ok) {
    if (why) *why = str_cat("perm of ", perm.size(), " entries is not a permutation of ", rank, " axes");
    return std::nullopt;
  }
  std::vector<int64_t> in_stride(size_t(rank), 1), out_stride(size_t(rank), 1);
  for (int d = rank - 2; d >= 0; --d) in_stride[size_t(d)] = in_stride[size_t(d) + 1] * shape[size_t(d) + 1];
  for (int k = rank - 2; k >= 0; --k) {
    out_stride[size_t(k)] = out_stride[size_t(k) + 1] * shape[size_t(perm[size_t(k) + 1])];
  }
  std::vector<CopyDim> dims;  // the output's loops, outermost first, merged
  for (int k = 0; k < rank; ++k) {
    const CopyDim d{shape[size_t(perm[size_t(k)])], in_stride[size_t(perm[size_t(k)])], out_stride[size_t(k)]};
    if (d.size == 1) continue;
    if (!dims.empty()) {
      CopyDim& o = dims.back();
      if (o.in_stride == d.in_stride * d.size && o.out_stride == d.out_stride * d.size) {
        o = CopyDim{o.size * d.size, d.in_stride, d.out_stride};
        continue;
      }
    }
    dims.push_back(d);
  }
  TransposeCopy t;
  if (!dims.empty() && dims.back().in_stride == 1 && dims.back().out_stride == 1) {
    t.run = dims.back().size;
    dims.pop_back();
  }
  // The pass's pixels and rows: the DMA reads and writes a row of pixels
  // below the next row's start (row pitch >= (pixels - 1) x pixel pitch +
  // run, on both sides), so the loops of a transpose proper cannot all be
  // rows and pixels: choose the pair that leaves the fewest passes.
  const CopyDim one{1, t.run, t.run};
  int64_t total = 1;
  for (const CopyDim& d : dims) total *= d.size;
  int64_t best = -1;
  size_t best_c = 0, best_r = 0;
  const size_t n = dims.size();
  for (size_t c = 0; c < std::max<size_t>(n, 1); ++c) {
    const CopyDim cols = n ? dims[c] : one;
    for (size_t r = 0; r <= n; ++r) {  // r == n: rows of one
      if (n && r == c) continue;
      const CopyDim rows = r < n ? dims[r] : one;
      if (r < n && (rows.in_stride < (cols.size - 1) * cols.in_stride + t.run ||
                    rows.out_stride < (cols.size - 1) * cols.out_stride + t.run)) {
        continue;
      }
      const int64_t passes = total / (cols.size * rows.size);
      if (best < 0 || passes < best) {
        best = passes;
        best_c = c;
        best_r = r;
      }
    }
  }
  t.cols = n ? dims[best_c] : one;
  t.rows = best_r < n ? dims[best_r] : one;
  for (size_t d = 0; d < n; ++d) {
    if (d != best_c && d != best_r) t.outer.push_back(dims[d]);
  }
  return t;
}

std::optional<std::string> transpose_copy_error(const TransposeCopy& t) {
  if (t.passes() > kMaxTransposePasses) {
    return str_cat(t.passes(), " copy passes (the loops outside a pass's rows and pixels)");
  }
  const int64_t dim = limits::kMaxFeatureMapDim;
  if (t.run > dim || t.cols.size > dim || t.rows.size > dim) {
    return str_cat("a pass of ", t.rows.size, " rows x ", t.cols.size, " pixels x ", t.run,
                   " bytes exceeds the 16-bit feature-map sizes");
  }
  const auto fits = [](int64_t v, uint64_t max) { return v >= 0 && uint64_t(v) <= max; };
  if (!fits(t.cols.in_stride, field_max(fields::NACC_DMA_PARA2::FM_TRANS_OFFSET)) ||
      !fits(t.rows.in_stride, field_max(fields::NACC_DMA_OFFSET1::IN_DMA_ROW_OFFSET)) ||
      !fits(t.cols.out_stride, field_max(fields::NACC_DMA_OUT_TRANS_LEN::DMA_OUT_TRANS_LEN)) ||
      !fits(t.rows.out_stride, field_max(fields::NACC_DMA_OFFSET2::OUT_DMA_OFFSET))) {
    return str_cat("pitches (input ", t.cols.in_stride, " / ", t.rows.in_stride, ", output ",
                   t.cols.out_stride, " / ", t.rows.out_stride, " bytes) exceed the DMA fields");
  }
  return std::nullopt;
}

bool layout_transpose(const std::vector<int64_t>& in_shape, const std::vector<int>& perm,
                      bool* to_nhwc, int elem_bytes) {
  if (in_shape.size() != 4 || in_shape[0] != 1) return false;
  if (elem_bytes != 1 && elem_bytes != 2) return false;
  const bool forward = perm == std::vector<int>{0, 2, 3, 1};
  if (!forward && perm != std::vector<int>{0, 3, 1, 2}) return false;
  const int64_t c = forward ? in_shape[1] : in_shape[3];
  const int64_t hw = forward ? in_shape[2] * in_shape[3] : in_shape[1] * in_shape[2];
  const int64_t c0 = limits::kUbBlockBytes / elem_bytes;  // elements of one block
  const int64_t cp = (c + c0 - 1) / c0 * c0;
  if (c <= 1 || hw <= 1 || cp > limits::kVnchwMaxStride) return false;
  // The staging areas (two of padded size) within one region.
  const int64_t padded = cp * ((hw + c0 - 1) / c0 * c0) * elem_bytes;
  if (2 * padded > limits::kMaxRegionBytes) return false;
  if (to_nhwc) *to_nhwc = forward;
  return true;
}

}  // namespace nacc::support

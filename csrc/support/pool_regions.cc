// Average-pool region passes (support/pool_regions.h).
#include "support/pool_regions.h"

#include <algorithm>

#include "arch/limits.h"

namespace nacc::support {

std::vector<PoolBand> average_pool_bands(int out, int in, int kernel, int stride, int pad) {
  struct Position {
    int lo, hi;
  };
  std::vector<Position> pos;
  for (int o = 0; o < out; ++o) {
    const int b = o * stride - pad;
    const int lo = std::max(0, b), hi = std::min(in, b + kernel);
    if (hi <= lo) return {};
    pos.push_back({lo, hi});
  }
  const auto single = [&](int o) {
    PoolBand band;
    band.out_start = o;
    band.out_size = 1;
    band.in_start = pos[o].lo;
    band.in_size = band.count = band.kernel = pos[o].hi - pos[o].lo;
    return band;
  };
  std::vector<PoolBand> bands;
  for (int o = 0; o < out;) {
    const int count = pos[o].hi - pos[o].lo;
    int end = o + 1;
    while (end < out && pos[end].hi - pos[end].lo == count) ++end;
    PoolBand band;
    band.out_start = o;
    band.out_size = end - o;
    band.in_start = pos[o].lo;
    band.in_size = pos[end - 1].hi - pos[o].lo;
    band.kernel = kernel;
    band.stride = stride;
    band.pad_before = pos[o].lo - (o * stride - pad);
    band.count = count;
    const int pad_after =
        (band.out_size - 1) * stride + kernel - band.in_size - band.pad_before;
    if (band.out_size == 1) {
      bands.push_back(single(o));
    } else if (stride > limits::kMaxStride || band.pad_before > limits::kMaxPadding ||
               pad_after > limits::kMaxPadding) {
      for (int i = o; i < end; ++i) bands.push_back(single(i));
    } else {
      bands.push_back(band);
    }
    o = end;
  }
  return bands;
}

bool is_region_average_pool(const ir::Op& op) {
  const auto& a = op.attrs;
  if (op.kind != ir::OpKind::kAveragePool2D) return false;
  if (a.onnx_kernel != ir::Attributes::OnnxKernel::kNone) return false;
  return !(a.kernel_h == limits::kAvgPoolKernel && a.kernel_w == limits::kAvgPoolKernel &&
           a.stride_h == limits::kAvgPoolStride && a.stride_w == limits::kAvgPoolStride);
}

std::optional<Int16SumSplit> int16_sum_split(int64_t cells) {
  for (int group = limits::kMaxKernel; group >= 2; --group) {
    if (cells % group != 0) continue;
    const int64_t partials = 2 * (cells / group);
    for (int rows = limits::kMaxKernel; rows >= 1; --rows) {
      if (partials % rows == 0 && partials / rows <= limits::kMaxKernel) {
        return Int16SumSplit{group, int(cells / group), rows, int(partials / rows)};
      }
    }
  }
  return std::nullopt;
}

}  // namespace nacc::support

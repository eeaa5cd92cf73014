// The tile planner: an exhaustive search over core count, broadcast mode,
// channel-group size, loop order, double buffering and tile width, each
// candidate taking the tallest tile that fits one core's SRAM, judged by a
// model of the device's timeline (docs/compiler.md, "Tiling").
#include "compiler/tiling.h"

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>

#include "arch/cost_model.h"
#include "arch/fields.h"
#include "arch/limits.h"
#include "common/error.h"

namespace nacc::compiler {

namespace {

// Register field widths (arch/fields.h) that bound a tile.
constexpr int kMaxSplitWidth = int(field_max(fields::NACC_OUT_FM_SPLIT::OUT_FM_SPLIT_WIDTH));
constexpr int kMaxCoreRows = int(field_max(fields::NACC_BROADCAST_SPLIT::OUT_FM_SPLIT_AVG_HEIGHT));
constexpr int kMaxCoreChannels = int(field_max(fields::NACC_BROADCAST_DMA::EU_BIAS_START_OFFSET));
constexpr int kMaxSplitLen = int(field_max(fields::NACC_IN_FM_SPLIT::IN_FM_SPLIT_LEFT_LEN));
static_assert(kMaxSplitWidth == 255 && kMaxCoreRows == 1023 && kMaxCoreChannels == 255 &&
              kMaxSplitLen == 65535);
static_assert(field_max(fields::NACC_IN_FM_SPLIT::IN_FM_SPLIT_WIDTH) == kMaxSplitWidth &&
              field_max(fields::NACC_BROADCAST_SPLIT::OUT_FM_SPLIT_OV_HEIGHT) == kMaxCoreRows &&
              field_max(fields::NACC_BROADCAST_DMA::IN_DMA_UNICAST_AVG_OFFSET) == kMaxCoreRows);

using cost::ceil_div;
int64_t align_k(int64_t b) { return align_k_area(b); }

bool ifm_shared_across_groups(const LoweredOp& op) {
  return op.unit == Unit::kConv || op.unit == Unit::kFullyConnected || op.unit == Unit::kMatmul;
}

// Per-core buffer bytes of a tile.
struct TileBytes {
  int64_t ifm = 0, temp = 0, ofm = 0, k = 0;
};

TileBytes tile_bytes(const LoweredOp& op, int rows, int cols, int channels) {
  TileBytes b;
  const int64_t in_rows = std::min(input_extent(rows, op.stride_h, op.kernel_h), op.in_shape.h);
  const int64_t in_cols = std::min(input_extent(cols, op.stride_w, op.kernel_w), op.in_shape.w);
  // im2col: one K-byte row per output pixel (docs/device_model.md §4).
  // 16-bit feature maps: 2 bytes an element (LoweredOp::elem, NACC_SPEC §9).
  const int64_t e = op.elem();
  b.ifm = op.im2col ? int64_t(rows) * cols * op.matmul_k()
                    : in_rows * in_cols * op.in_channels(channels) * e;
  b.ofm = int64_t(rows) * cols * op.out_channels(channels) * e;
  if (op.unit == Unit::kElementwise) b.temp = int64_t(rows) * cols * channels * e;
  b.k = k_area_bytes(op, channels);
  return b;
}

enum class LayoutKind { kSingle, kDoubleFm, kDoubleK, kDoubleAll };

std::optional<SramLayout> make_layout(const SramGeometry& g, const TileBytes& b, LayoutKind kind) {
  SramLayout l;
  l.ifm_bytes = b.ifm;
  l.temp_bytes = b.temp;
  l.ofm_bytes = b.ofm;
  l.k_bytes = b.k;
  const int64_t ifm = g.round(b.ifm), temp = g.round(b.temp), ofm = g.round(b.ofm),
                k = g.round(b.k);
  switch (kind) {
    case LayoutKind::kSingle:
      l.ifm[0] = l.ifm[1] = 0;
      l.temp[0] = l.temp[1] = ifm;
      l.ofm[0] = l.ofm[1] = ifm + temp;
      l.k[0] = l.k[1] = ifm + temp + ofm;
      l.end = ifm + temp + ofm + k;
      break;
    case LayoutKind::kDoubleFm: {
      // Set 0 at 0, set 1 at the first quarter boundary above set 0 (IFM_MEM_BASE
      // counts quarters), the resident K area above set 1.
      const int64_t set = ifm + temp + ofm;
      const int64_t j = std::max<int64_t>(1, ceil_div(set, g.quarter));
      if (j > 3) return std::nullopt;
      const int64_t b1 = j * g.quarter;
      l.ifm[0] = 0;
      l.temp[0] = ifm;
      l.ofm[0] = ifm + temp;
      l.ifm[1] = b1;
      l.temp[1] = b1 + ifm;
      l.ofm[1] = b1 + ifm + temp;
      l.k[0] = l.k[1] = b1 + set;
      l.end = b1 + set + k;
      break;
    }
    case LayoutKind::kDoubleAll: {
      // Two full sets (IFM, TEMP, OFM, K): set 0 at 0, set 1 at the first
      // quarter boundary above it.
      const int64_t set = ifm + temp + ofm + k;
      const int64_t j = std::max<int64_t>(1, ceil_div(set, g.quarter));
      if (j > 3) return std::nullopt;
      const int64_t b1 = j * g.quarter;
      for (int i = 0; i < 2; ++i) {
        const int64_t b = i ? b1 : 0;
        l.ifm[i] = b;
        l.temp[i] = b + ifm;
        l.ofm[i] = b + ifm + temp;
        l.k[i] = b + ifm + temp + ofm;
      }
      l.end = b1 + set;
      break;
    }
    case LayoutKind::kDoubleK:
      // The IFM resident at 0; K and OFM alternate above it.
      l.ifm[0] = l.ifm[1] = 0;
      l.temp[0] = l.temp[1] = 0;
      l.k[0] = ifm;
      l.ofm[0] = ifm + k;
      l.k[1] = ifm + k + ofm;
      l.ofm[1] = ifm + 2 * k + ofm;
      l.end = ifm + 2 * (k + ofm);
      break;
  }
  if (l.end > g.bytes) return std::nullopt;
  return l;
}

// Largest v in [1, hi] with ok(v), given ok is monotone (true then false); 0 if none.
template <typename F>
int largest(int hi, F ok) {
  if (hi < 1 || !ok(1)) return 0;
  int lo = 1;
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (ok(mid)) lo = mid; else hi = mid - 1;
  }
  return lo;
}

std::vector<Span> balanced(int total, int pieces) {
  std::vector<Span> out;
  out.reserve(pieces);
  const int base = total / pieces, extra = total % pieces;
  int start = 0;
  for (int i = 0; i < pieces; ++i) {
    const int size = base + (i < extra ? 1 : 0);
    out.push_back({start, size});
    start += size;
  }
  return out;
}

// A list of pieces as runs of equal sizes, in order: (size, count). What the
// estimate needs of a plan's pieces (their size classes, their number and the
// order in which their sizes change), without a Span per piece: the search
// estimates thousands of candidates per op, each with up to one piece per
// channel.
// Fixed capacity, no heap: balanced pieces have two sizes, make_pieces' full
// pieces one and its remainders at most one per halving of the cores (<= 7).
class Runs {
 public:
  using value_type = std::pair<int, int>;
  const value_type* begin() const { return v_.data(); }
  const value_type* end() const { return v_.data() + n_; }
  bool empty() const { return n_ == 0; }
  size_t size() const { return n_; }
  value_type& operator[](size_t i) { return v_[i]; }
  value_type& back() { return v_[n_ - 1]; }
  void push_back(const value_type& r) {
    check_arg(n_ < v_.size(), "tiling: more than ", v_.size(), " runs of piece sizes");
    v_[n_++] = r;
  }
  // Ascending sizes (distinct: a stable order needs no tie rule).
  void sort_by_size() {
    std::sort(v_.begin(), v_.begin() + n_,
              [](const value_type& a, const value_type& b) { return a.first < b.first; });
  }

 private:
  std::array<value_type, 16> v_{};
  size_t n_ = 0;
};

void push_run(Runs* runs, int size, int count) {
  if (count <= 0) return;
  if (!runs->empty() && runs->back().first == size) runs->back().second += count;
  else runs->push_back({size, count});
}

Runs runs_of(const std::vector<Span>& spans) {
  Runs runs;
  for (const Span& s : spans) push_run(&runs, s.size, 1);
  return runs;
}

// The runs of balanced(total, pieces): `extra` pieces one longer, then the rest.
Runs balanced_runs(int total, int pieces) {
  Runs runs;
  const int base = total / pieces, extra = total % pieces;
  push_run(&runs, base + 1, extra);
  push_run(&runs, base, pieces - extra);
  return runs;
}

// Pieces of `total` rows (mode 2) or channels (mode 1) for commands split
// across up to max_cores cores of at most `cap` each: full pieces of
// max_cores * cap, then the remainder in one piece when the cores can share it
// (split_across_cores), else in pieces of the most cores that fit it whole.
template <typename F>
void visit_pieces(int total, int max_cores, int cap, int avg_cap, F piece) {
  const int full = max_cores * std::min(cap, avg_cap);
  int left = total;
  while (left > 0) {
    int take = full;
    if (left < full) {
      if (split_across_cores(left, max_cores, cap, avg_cap)) {
        take = left;
      } else {
        int n = max_cores;
        while (n > 1 && n * std::min(cap, avg_cap) > left) n /= 2;
        take = std::min(left, n * std::min(cap, avg_cap));
      }
    }
    piece(take);
    left -= take;
  }
}

std::vector<Span> make_pieces(int total, int max_cores, int cap, int avg_cap) {
  std::vector<Span> out;
  int start = 0;
  visit_pieces(total, max_cores, cap, avg_cap, [&](int take) {
    out.push_back({start, take});
    start += take;
  });
  return out;
}

// The runs of make_pieces.
Runs make_pieces_runs(int total, int max_cores, int cap, int avg_cap) {
  Runs runs;
  visit_pieces(total, max_cores, cap, avg_cap, [&](int take) { push_run(&runs, take, 1); });
  return runs;
}

// (size, count) of the spans by ascending size. The pieces of a plan have at
// most three sizes, so a short sorted vector (not a map: no node per class;
// the tiling search builds these for every candidate plan).
Runs size_classes(const Runs& runs) {
  Runs m;
  for (const auto& [size, count] : runs) {
    size_t i = 0;
    while (i < m.size() && m[i].first != size) ++i;
    if (i < m.size()) m[i].second += count;
    else m.push_back({size, count});
  }
  m.sort_by_size();
  return m;
}

int64_t pieces_in(const Runs& runs) {
  int64_t n = 0;
  for (const auto& r : runs) n += r.second;
  return n;
}

// Plans within this fraction of the fewest estimated cycles count as equally
// fast; among them the fewest DMA bytes win (the estimate is a model, and a
// plan that moves less data is the more robust choice).
constexpr double kCycleTolerance = kPlanCycleTolerance;

// a before b among equally fast plans: fewer DMA bytes, fewer cycles, fewer commands.
bool better(const PlanEstimate& a, const PlanEstimate& b) {
  if (a.read_bytes + a.write_bytes != b.read_bytes + b.write_bytes) {
    return a.read_bytes + a.write_bytes < b.read_bytes + b.write_bytes;
  }
  if (a.cycles != b.cycles) return a.cycles < b.cycles;
  return a.commands < b.commands;
}

int row_cap(const LoweredOp& op, BroadcastMode mode) {
  const int field_cap = mode == BroadcastMode::SPLIT_HEIGHT || mode == BroadcastMode::SPLIT_2D
                            ? std::min(kMaxCoreRows, (kMaxCoreRows - op.kernel_h) / op.stride_h + 1)
                            : (kMaxSplitLen - op.kernel_h) / op.stride_h + 1;
  return std::min(op.out_shape.h, field_cap);
}

int row_avg_cap(const LoweredOp& op) { return kMaxCoreRows / op.stride_h; }

// Mode 3: EU_BIAS_START_OFFSET holds a channel group's output channels.
int group_avg_cap(const LoweredOp& op) {
  return kMaxCoreChannels / std::max(1, op.out_channels(1));
}

// The cost of one command of `h` rows, `w` columns and `g` basis channels of
// plan `p` split over cores as `split`, on its busiest core
// (docs/device_model.md §6): the times of its IFM (and second operand) read,
// kernel read, compute and write-out, each max(core bytes / DMA port, external
// bytes / shared bandwidth), and the external bytes. The estimate and the
// timeline replay (replay_timeline) both use it.
struct CommandCost {
  double read_fm_t = 0, read_k_t = 0, compute = 0, write_t = 0;
  double fm_ext = 0, k_ext = 0, write_ext = 0;
  double fm_core = 0, k_core = 0;  // bytes through the busiest core's port
};

CommandCost command_cost(const LoweredOp& op, const HwConfig& hw, const TilePlan& p,
                         const CoreSplit& split, int h, int w, int g) {
  const double core_bw = hw.dma_bytes_per_cycle, ext_bw = hw.ext_bytes_per_cycle;
  const auto transfer = [&](double core_bytes, double ext_bytes) {
    return std::max(core_bytes / core_bw, ext_bytes / ext_bw);
  };
  const auto rows_in = [&](int r) {
    return std::min(input_extent(r, op.stride_h, op.kernel_h), op.in_shape.h);
  };
  const auto cols_in = [&](int c) {
    return std::min(input_extent(c, op.stride_w, op.kernel_w), op.in_shape.w);
  };
  CommandCost c;
  int r = h, e = g;
  const bool two_d = p.mode == BroadcastMode::SPLIT_2D;
  if (p.mode == BroadcastMode::SPLIT_HEIGHT || two_d) r = split.max_per_core();
  if (p.mode == BroadcastMode::SPLIT_KERNEL) e = split.max_per_core();
  if (two_d) e = split.max_group();
  const int n = split.cores;
  const double e_fm = op.elem();  // feature-map bytes per element
  const double in_ch = op.in_channels(g) * e_fm;
  double fm_core = double(rows_in(r)) * cols_in(w) * op.in_channels(e) * e_fm;
  // Mode 2: each core its rows (halo included); depthwise mode 1: each core
  // its channels (together the tile once); mode 3: each core its rows of its
  // channels (the groups together: mode 2's rows of all channels); else the
  // IFM is broadcast.
  double fm_ext = p.mode == BroadcastMode::SPLIT_HEIGHT || two_d
                      ? double(rows_in(split.avg)) * (n - 1) * cols_in(w) * in_ch +
                            double(rows_in(split.last)) * cols_in(w) * in_ch
                  : p.mode == BroadcastMode::SPLIT_KERNEL && op.unit == Unit::kDepthwise
                      ? double(rows_in(r)) * cols_in(w) * in_ch
                      : fm_core;
  if (two_d && h == op.out_shape.h) {
    // A command of the whole height (the small maps mode 3 is for): each row
    // piece's input rows as the DMA fetches them, without the padding rows
    // (every piece of a 7-row map is an edge piece).
    double rows_ext = 0, rows_max = 0;
    for (int i = 0; i < n; ++i) {
      const int size = i + 1 < n ? split.avg : split.last;
      const double v = valid_input_span(i * split.avg, size, op.stride_h, op.kernel_h,
                                        op.pad_top, op.in_shape.h).size;
      rows_ext += v;
      rows_max = std::max(rows_max, v);
    }
    fm_core = rows_max * cols_in(w) * op.in_channels(e) * e_fm;
    fm_ext = rows_ext * cols_in(w) * in_ch;
  }
  if (op.im2col) {  // the DMA gathers every window (an upper bound: padding is not read)
    fm_core = double(r) * w * op.matmul_k();
    fm_ext = double(h) * w * op.matmul_k();
  }
  if (op.unit == Unit::kElementwise) {  // the second operand
    // A broadcast pixel (pitch 0) is a feature-map operand, not part of the K
    // area: every core of the command reads it through its own port and the
    // device counts it once per core in the external traffic too
    // (docs/device_model.md §5: mode 2 broadcasts the K area only).
    const double t_core = op.input2_broadcast ? e : double(r) * w * e;
    const double t_ext = op.input2_broadcast ? double(n) * g : double(h) * w * g;
    fm_core += t_core;
    fm_ext += t_ext;
  }
  const double k_core = k_area_bytes(op, e);
  // Mode 3: each group's kernel once (its row pieces share it).
  const double k_ext = p.mode == BroadcastMode::SPLIT_KERNEL ? k_area_bytes(op, g) + (n - 1) * 64.0
                       : two_d ? k_area_bytes(op, g) + (split.groups - 1) * 64.0
                               : k_core;
  c.read_fm_t = transfer(fm_core, fm_ext);
  c.read_k_t = transfer(k_core, k_ext);
  c.compute = std::max(mac_cycles(op, r, w, e), act_cycles(op, r, w, e));
  c.write_t = transfer(double(r) * w * op.out_channels(e) * e_fm,
                       double(h) * w * op.out_channels(g) * e_fm);
  c.fm_ext = fm_ext;
  c.k_ext = k_ext;
  c.fm_core = fm_core;
  c.k_core = k_core;
  c.write_ext = double(h) * w * op.out_channels(g) * e_fm;
  return c;
}

// The model of docs/device_model.md §6 applied to a plan (see docs/compiler.md)
// whose pieces are row_runs, col_runs and group_runs (runs_of its row_pieces,
// col_pieces and groups; p's own vectors are not read).
PlanEstimate estimate(const LoweredOp& op, const HwConfig& hw, const TilePlan& p,
                      const Runs& row_runs, const Runs& col_runs, const Runs& group_runs) {
  using Cmd = CommandCost;
  // command_split depends on the rows alone in mode 2, on the channels alone
  // in mode 1 (and on neither otherwise): the splits of the few size classes
  // asked for, kept by that extent.
  std::array<std::pair<int, CoreSplit>, 8> splits;
  size_t nsplits = 0;
  const auto split_of = [&](int h, int g) {
    const int key = p.mode == BroadcastMode::SPLIT_HEIGHT ? h
                    : p.mode == BroadcastMode::SPLIT_KERNEL ? g
                    : p.mode == BroadcastMode::SPLIT_2D     ? h * 65536 + g
                                                            : -1;
    if (key < 0) return command_split(op, p, h, g);
    for (size_t i = 0; i < nsplits; ++i) {
      if (splits[i].first == key) return splits[i].second;
    }
    const CoreSplit s = command_split(op, p, h, g);
    if (nsplits < splits.size()) splits[nsplits++] = {key, s};
    return s;
  };
  // One command of `h` rows, `w` columns, `g` basis channels.
  const auto command = [&](int h, int w, int g) {
    return command_cost(op, hw, p, split_of(h, g), h, w, g);
  };

  const auto rows = size_classes(row_runs), cols = size_classes(col_runs),
             groups = size_classes(group_runs);
  const int64_t spatial = pieces_in(row_runs) * pieces_in(col_runs);
  const int64_t ngroups = pieces_in(group_runs);
  double cycles = 0, read = 0, write = 0;
  double first_read = -1, last_write = 0;
  if (p.k_per_set) {
    // Every command loads its tile and its kernel into its own set.
    for (const auto& [g, ng] : groups) {
      for (const auto& [h, nh] : rows) {
        for (const auto& [w, nw] : cols) {
          const Cmd c = command(h, w, g);
          const double cnt = double(ng) * nh * nw;
          cycles += cnt * std::max({c.read_fm_t + c.read_k_t, c.compute, c.write_t});
          read += cnt * (c.fm_ext + c.k_ext);
          write += cnt * c.write_ext;
          if (first_read < 0) first_read = c.read_fm_t + c.read_k_t;
          last_write = c.write_t;
        }
      }
    }
    PlanEstimate e;
    e.cycles = int64_t(cycles + std::max(0.0, first_read) + last_write + 0.5);
    e.read_bytes = int64_t(read + 0.5);
    e.write_bytes = int64_t(write + 0.5);
    e.commands = spatial * ngroups;
    return e;
  }
  const bool fm_once = !p.double_buffer && spatial == 1 && ifm_shared_across_groups(op);
  const bool k_once = !p.double_buffer && ngroups == 1;
  const auto stage = [&](double r, double c, double w) {
    return p.double_buffer ? std::max({r, c, w}) : std::max(r, w) + c;
  };
  // Sums over the size classes; an instance that reuses the resident IFM
  // (fm_once) or kernel (k_once) reads nothing for it.
  if (p.weights_outer) {
    bool first = true;
    for (const auto& [g, ng] : groups) {
      double with_fm = 0, without_fm = 0, fm_read = 0, wr = 0;
      Cmd any{};
      for (const auto& [h, nh] : rows) {
        for (const auto& [w, nw] : cols) {
          const Cmd c = command(h, w, g);
          const double cnt = double(nh) * nw;
          with_fm += cnt * stage(c.read_fm_t, c.compute, c.write_t);
          without_fm += cnt * stage(0.0, c.compute, c.write_t);
          fm_read += cnt * c.fm_ext;
          wr += cnt * c.write_ext;
          if (first_read < 0) first_read = c.read_fm_t;
          last_write = c.write_t;
          any = c;
        }
      }
      const double n_with = fm_once ? (first ? 1.0 : 0.0) : double(ng);
      const double n_without = double(ng) - n_with;
      // Each group's weights are loaded once, before its first tile.
      cycles += n_with * with_fm + n_without * without_fm + double(ng) * any.read_k_t;
      if (p.double_buffer && any.k_ext > 0) {
        // A kernel load waits for the previous command's compute to release
        // the one K area, so the pipeline drains and refills: at each group
        // (but the op's first, the fill below) and wherever a command uses
        // more cores than the one before within the group (cores beyond those
        // that loaded the broadcast kernel do not hold it). Not for an op
        // without a K area (pooling).
        int reloads = 1;
        if (p.mode == BroadcastMode::SPLIT_HEIGHT || p.mode == BroadcastMode::SPLIT_2D) {
          int prev = -1, prev_size = -1;
          for (const auto& r : row_runs) {
            if (r.first == prev_size) continue;  // same size, same split
            prev_size = r.first;
            const int n = split_of(r.first, g).cores;
            if (prev >= 0 && n > prev) ++reloads;
            prev = n;
          }
        }
        // A LUT kernel is the same for every group of one size: it reloads
        // once per size class, other kernels at every group.
        const double loads = op.unit == Unit::kActivation ? 1.0 : double(ng);
        cycles += (loads * reloads - (first ? 1.0 : 0.0)) * any.read_fm_t +
                  loads * (reloads - 1) * any.read_k_t;
        read += loads * (reloads - 1) * any.k_ext;
      }
      read += n_with * fm_read + double(ng) * any.k_ext;
      write += double(ng) * wr;
      first = false;
    }
  } else {
    bool first = true;
    for (const auto& [h, nh] : rows) {
      for (const auto& [w, nw] : cols) {
        double with_k = 0, without_k = 0, k_read = 0, wr = 0;
        Cmd any{};
        for (const auto& [g, ng] : groups) {
          const Cmd c = command(h, w, g);
          with_k += double(ng) * stage(c.read_k_t, c.compute, c.write_t);
          without_k += double(ng) * stage(0.0, c.compute, c.write_t);
          k_read += double(ng) * c.k_ext;
          wr += double(ng) * c.write_ext;
          if (first_read < 0) first_read = c.read_k_t;
          last_write = c.write_t;
          any = c;
        }
        const double cnt = double(nh) * nw;
        const double n_with = k_once ? (first ? 1.0 : 0.0) : cnt;
        const double n_without = cnt - n_with;
        // Each spatial tile's IFM is loaded once, before its first group.
        cycles += n_with * with_k + n_without * without_k + cnt * any.read_fm_t;
        if (p.double_buffer) {
          // An IFM load waits for the previous command's compute to release
          // the one IFM area: the pipeline drains and refills at each spatial
          // tile (but the op's first) and wherever a command uses more cores
          // than the one before across the groups (cores beyond those that
          // loaded the broadcast tile do not hold it).
          int reloads = 1;
          if (p.mode == BroadcastMode::SPLIT_KERNEL) {
            int prev = -1, prev_size = -1;
            for (const auto& g : group_runs) {
              if (g.first == prev_size) continue;  // same size, same split
              prev_size = g.first;
              const int n = split_of(h, g.first).cores;
              if (prev >= 0 && n > prev) ++reloads;
              prev = n;
            }
          }
          cycles += (cnt * reloads - (first ? 1.0 : 0.0)) * any.read_k_t +
                    cnt * (reloads - 1) * any.read_fm_t;
          read += cnt * (reloads - 1) * any.fm_ext;
        }
        read += n_with * k_read + cnt * any.fm_ext;
        write += cnt * wr;
        first = false;
      }
    }
  }
  if (p.double_buffer) cycles += std::max(0.0, first_read) + last_write;
  else cycles += last_write;
  PlanEstimate e;
  e.cycles = int64_t(cycles + 0.5);
  e.read_bytes = int64_t(read + 0.5);
  e.write_bytes = int64_t(write + 0.5);
  e.commands = spatial * ngroups;
  return e;
}

}  // namespace

const char* broadcast_mode_name(BroadcastMode mode) {
  switch (mode) {
    case BroadcastMode::NONE: return "NONE";
    case BroadcastMode::SPLIT_KERNEL: return "SPLIT_KERNEL";
    case BroadcastMode::SPLIT_HEIGHT: return "SPLIT_HEIGHT";
    case BroadcastMode::SPLIT_2D: return "SPLIT_2D";
  }
  return "?";
}

std::optional<CoreSplit> split_across_cores(int total, int max_cores, int cap, int avg_cap) {
  if (total < 1 || cap < 1) return std::nullopt;
  std::optional<CoreSplit> best;
  // Called for every piece of every candidate plan: n is a power of two, so
  // total / n is a shift, and an n whose even share ceil(total / n) cannot
  // beat the best so far is skipped before its divisions.
  for (int n = 1, shift = 0; n <= std::min(max_cores, total); n *= 2, ++shift) {
    std::optional<CoreSplit> c;
    const int even = int((int64_t(total) + n - 1) >> shift);  // ceil_div(total, n)
    if (best && best->max_per_core() <= even) continue;  // no split over n beats it
    if (n == 1) {
      if (total <= cap) c = CoreSplit{1, total, total};
    } else {
      // avg in [lo, hi] keeps the last core's share in [1, cap]; the most even
      // split is the avg nearest total / n.
      const int lo = std::max<int>(1, int(ceil_div(std::max(0, total - cap), n - 1)));
      const int hi = std::min({cap, avg_cap, (total - 1) / (n - 1)});
      if (lo > hi) continue;
      for (int a : {total >> shift, even}) {
        const int avg = std::clamp(a, lo, hi);
        const CoreSplit s{n, avg, total - avg * (n - 1)};
        if (!c || s.max_per_core() < c->max_per_core()) c = s;
      }
    }
    // The shortest longest share wins; on a tie, fewer cores (less halo traffic).
    if (c && (!best || c->max_per_core() < best->max_per_core())) best = c;
  }
  return best;
}

CoreSplit command_split(const LoweredOp& op, const TilePlan& plan, int rows, int channels) {
  std::optional<CoreSplit> s;
  if (plan.mode == BroadcastMode::SPLIT_HEIGHT) {
    s = split_across_cores(rows, plan.cores, plan.rows_per_core, row_avg_cap(op));
  } else if (plan.mode == BroadcastMode::SPLIT_KERNEL) {
    s = split_across_cores(channels, plan.cores, plan.channels_per_core, kMaxCoreChannels);
  } else if (plan.mode == BroadcastMode::SPLIT_2D) {
    const int g = std::max(1, plan.groups2d);
    s = split_across_cores(rows, plan.cores / g, plan.rows_per_core, row_avg_cap(op));
    const std::optional<CoreSplit> c =
        split_across_cores(channels, g, plan.channels_per_core, group_avg_cap(op));
    if (s && c) {
      s->groups = c->cores;
      s->gavg = c->avg;
      s->glast = c->last;
    } else {
      s.reset();
    }
  } else {
    s = CoreSplit{1, rows, rows};
  }
  check_arg(s.has_value(), op.label, ": no core split for a command of ", rows, " rows, ",
            channels, " channels");
  return *s;
}

int64_t k_area_bytes(const LoweredOp& op, int group) {
  const int64_t oc = op.out_channels(group);
  int64_t bytes = 0;
  switch (op.unit) {
    case Unit::kConv:
    case Unit::kDepthwise:
      bytes += align_k(op.weight_bytes(group));
      if (op.has_bias()) bytes += align_k(op.bias_entry_bytes() * oc);
      // multipliers and shifts, or float32 scales (ONNX, QUANT_FP32_SCALE), or
      // MAC_FP32's 4 float32 per channel
      bytes += op.fp32_scale.empty() ? align_k(4 * oc) + align_k(4 * oc)
                                     : align_k(4 * op.fp32_entry_floats() * oc);
      break;
    case Unit::kFullyConnected:
      bytes += align_k(op.weight_bytes(group));
      if (op.has_bias()) bytes += align_k(op.bias_entry_bytes() * oc);
      // binary64 scales (no shifts), float32 scales (ONNX; MAC_FP32: 4 per
      // channel), or multipliers and shifts (a 1x1 conv in matrix mode)
      bytes += !op.real_scale.empty()   ? align_k(8 * oc)
               : !op.fp32_scale.empty() ? align_k(4 * op.fp32_entry_floats() * oc)
                                        : align_k(4 * oc) + align_k(4 * oc);
      break;
    case Unit::kMatmul:
      bytes += align_k(op.weight_bytes(group));  // B: K x group, uncompressed
      if (op.has_bias()) bytes += align_k(op.bias_entry_bytes() * oc);
      bytes += op.fp32_scale.empty() ? align_k(4 * oc) + align_k(4 * oc) : align_k(4 * oc);
      break;
    case Unit::kElementwise:
      bytes += 2 * align_k(4);  // the output multiplier and shift, or ELEMENT_FP32's 3 float32
      break;
    case Unit::kAvgPool:
      if (op.pool_fp32) bytes += align_k(8);  // POOL_FP32: input and output scale
      break;
    case Unit::kActivation:
      // The LUT, or the 16-bit Tanh / Sigmoid's input multiplier and shift.
      bytes += op.has_lut ? align_k(limits::kLutEntries) : 2 * align_k(4);
      break;
    default:
      break;
  }
  return bytes;
}

int64_t mac_cycles(const LoweredOp& op, int64_t rows, int64_t cols, int channels) {
  const int64_t taps = int64_t(op.kernel_h) * op.kernel_w;
  switch (op.unit) {
    case Unit::kConv:
      if (op.mac_fp32) {  // 16 float32 lanes along output channels (docs/performance_model.md)
        return cost::mac_fp32_cycles(rows, cols, op.out_channels(channels), taps, op.in_shape.c);
      }
      if (op.int16_maps) {  // half rate (NACC_SPEC §9)
        return cost::conv16_mac_cycles(rows, cols, op.out_channels(channels), taps, op.in_shape.c);
      }
      return cost::conv_mac_cycles(rows, cols, op.out_channels(channels), taps, op.in_shape.c);
    case Unit::kFullyConnected:
      if (op.int16_maps) return cost::matrix16_mac_cycles(rows, op.out_channels(channels), op.in_shape.c);
      return cost::matrix_mac_cycles(rows, op.out_channels(channels), op.in_shape.c);
    case Unit::kMatmul:  // M = rows (x cols with im2col), K = matmul_k()
      return cost::matrix_mac_cycles(rows * (op.im2col ? cols : 1), op.out_channels(channels),
                                     op.matmul_k());
    case Unit::kDepthwise:
    case Unit::kMaxPool:
    case Unit::kAvgPool:
      if (op.int16_maps) {  // 32 channels per tap and cycle (NACC_SPEC §9)
        return cost::window16_mac_cycles(rows, cols, op.out_channels(channels), taps);
      }
      return cost::window_mac_cycles(rows, cols, op.out_channels(channels), taps);
    case Unit::kElementwise:
      if (op.int16_maps) return cost::elementwise16_cycles(rows * cols * channels);
      return cost::elementwise_cycles(rows * cols * channels);
    default:
      return 0;
  }
}

int64_t act_cycles(const LoweredOp& op, int64_t rows, int64_t cols, int channels) {
  return op.unit == Unit::kActivation ? cost::activation_cycles(rows * cols * channels) : 0;
}

Span valid_input_span(int out_start, int out_size, int stride, int kernel, int pad, int in_size) {
  const int begin = out_start * stride - pad;
  const int end = begin + input_extent(out_size, stride, kernel);
  const int b = std::max(0, begin), e = std::min(in_size, end);
  return {b, std::max(0, e - b)};
}

std::string TilePlan::describe() const {
  std::ostringstream os;
  os << lowering << ": cores " << cores << " mode " << broadcast_mode_name(mode) << ", "
     << (weights_outer ? "weights resident" : "IFM resident")
     << (double_buffer ? ", double-buffered" : "") << (k_per_set ? " (K per set)" : "")
     << ", tile " << rows_per_core
     << " rows/core x " << cols << " cols x " << channels_per_core << " ch/core"
     << (mode == BroadcastMode::SPLIT_2D ? str_cat(" (", groups2d, " channel groups)") : std::string())
     << "; "
     << row_pieces.size() << " row x " << col_pieces.size() << " col x " << groups.size()
     << " channel pieces; SRAM " << layout.end << " B; est. " << estimate.cycles << " cycles, "
     << estimate.read_bytes << " B read, " << estimate.write_bytes << " B written";
  return os.str();
}

namespace {

// One point of the search space; build_plan turns it into a TilePlan.
struct Choice {
  int cores = 1;
  BroadcastMode mode = BroadcastMode::NONE;
  int channels_per_core = 1;
  int groups2d = 1;  // mode 3: channel groups (cores / groups2d row pieces)
  bool weights_outer = true;
  bool double_buffer = false;
  bool k_per_set = false;
  int cols = 1;            // tile width
  int rows_per_core = 1;   // tile height one core holds
  PlanEstimate estimate;
  // Position in the search's canonical order (core counts ascending, then the
  // loops of search_tiles): the tie rule of select_choice and of the replay's
  // rivals. The search visits the core counts from the most down, to prune.
  uint64_t order = 0;
};

LayoutKind layout_kind(bool double_buffer, bool weights_outer, bool k_per_set) {
  return !double_buffer ? LayoutKind::kSingle
         : k_per_set     ? LayoutKind::kDoubleAll
         : weights_outer ? LayoutKind::kDoubleFm
                         : LayoutKind::kDoubleK;
}

// The plan of `c` without its pieces, layout and estimate.
TilePlan plan_fields(const LoweredOp& op, const Choice& c) {
  TilePlan p;
  p.cores = c.cores;
  p.mode = c.mode;
  p.weights_outer = c.weights_outer;
  p.double_buffer = c.double_buffer;
  p.k_per_set = c.k_per_set;
  p.cols = c.cols;
  p.rows_per_core = c.rows_per_core;
  p.channels_per_core = c.channels_per_core;
  p.groups2d = c.groups2d;
  return p;
}

// The estimate of `c` (what build_plan(c).estimate is), from the runs of its
// pieces: the search's per-candidate cost.
PlanEstimate estimate_choice(const LoweredOp& op, const HwConfig& hw, const Choice& c) {
  const int channels = op.split_channels();
  const int oh = op.out_shape.h, ow = op.out_shape.w;
  const TilePlan p = plan_fields(op, c);
  const Runs cols = balanced_runs(ow, int(ceil_div(ow, c.cols)));
  const bool two_d = c.mode == BroadcastMode::SPLIT_2D;
  const Runs rows =
      c.mode == BroadcastMode::SPLIT_HEIGHT
          ? make_pieces_runs(oh, c.cores, c.rows_per_core, row_avg_cap(op))
      : two_d ? make_pieces_runs(oh, c.cores / c.groups2d, c.rows_per_core, row_avg_cap(op))
              : balanced_runs(oh, int(ceil_div(oh, c.rows_per_core)));
  const Runs groups =
      c.mode == BroadcastMode::SPLIT_KERNEL
          ? make_pieces_runs(channels, c.cores, c.channels_per_core, kMaxCoreChannels)
      : two_d ? make_pieces_runs(channels, c.groups2d, c.channels_per_core, group_avg_cap(op))
              : balanced_runs(channels, int(ceil_div(channels, c.channels_per_core)));
  return estimate(op, hw, p, rows, cols, groups);
}

// The row, column and channel pieces of choice c.
void set_pieces(const LoweredOp& op, const Choice& c, TilePlan* p) {
  const int channels = op.split_channels();
  const int oh = op.out_shape.h, ow = op.out_shape.w;
  p->col_pieces = balanced(ow, int(ceil_div(ow, c.cols)));
  if (c.mode == BroadcastMode::SPLIT_HEIGHT) {
    p->row_pieces = make_pieces(oh, c.cores, c.rows_per_core, row_avg_cap(op));
  } else if (c.mode == BroadcastMode::SPLIT_2D) {
    p->row_pieces = make_pieces(oh, c.cores / c.groups2d, c.rows_per_core, row_avg_cap(op));
  } else {
    p->row_pieces = balanced(oh, int(ceil_div(oh, c.rows_per_core)));
  }
  if (c.mode == BroadcastMode::SPLIT_KERNEL) {
    p->groups = make_pieces(channels, c.cores, c.channels_per_core, kMaxCoreChannels);
  } else if (c.mode == BroadcastMode::SPLIT_2D) {
    p->groups = make_pieces(channels, c.groups2d, c.channels_per_core, group_avg_cap(op));
  } else {
    p->groups = balanced(channels, int(ceil_div(channels, c.channels_per_core)));
  }
}

// Whether every piece of one axis reads at least one input index: with more
// padding than a window reaches past (a 5-wide pad of a 3-tap window, which
// ONNX allows), an edge piece can read padding only, a tile the device
// refuses (kernel_plan.cc: "holds no pixel of the input").
bool axis_pieces_read_input(const std::vector<Span>& pieces, int stride, int kernel, int pad,
                            int in) {
  for (Span s : pieces) {
    const int64_t lo = int64_t(s.start) * stride - pad;
    const int64_t hi = int64_t(s.end() - 1) * stride - pad + kernel - 1;
    if (hi < 0 || lo >= in) return false;
  }
  return true;
}

// In mode 2 each command's rows are split again over the cores (average and
// overflow, command_split): every core's share must read an input row too.
bool plan_reads_input(const LoweredOp& op, const TilePlan& p) {
  std::vector<Span> rows = p.row_pieces;
  if (p.mode == BroadcastMode::SPLIT_HEIGHT || p.mode == BroadcastMode::SPLIT_2D) {
    rows.clear();
    const int row_cores = p.mode == BroadcastMode::SPLIT_2D ? p.cores / p.groups2d : p.cores;
    for (Span r : p.row_pieces) {
      const auto s = split_across_cores(r.size, row_cores, p.rows_per_core, row_avg_cap(op));
      if (!s) return false;
      for (int i = 0; i < s->cores; ++i) {
        rows.push_back({r.start + i * s->avg, i + 1 < s->cores ? s->avg : s->last});
      }
    }
  }
  return axis_pieces_read_input(rows, op.stride_h, op.kernel_h, op.pad_top, op.in_shape.h) &&
         axis_pieces_read_input(p.col_pieces, op.stride_w, op.kernel_w, op.pad_left,
                                op.in_shape.w);
}

// Whether some output row or column at an edge reads padding only (then the
// search checks each choice's pieces with plan_reads_input).
bool has_padding_only_edges(const LoweredOp& op) {
  const int oh = op.out_shape.h, ow = op.out_shape.w;
  if (oh < 1 || ow < 1) return false;
  const auto edge = [](int out, int stride, int kernel, int pad, int in) {
    return !axis_pieces_read_input({{0, 1}, {out - 1, 1}}, stride, kernel, pad, in);
  };
  return edge(oh, op.stride_h, op.kernel_h, op.pad_top, op.in_shape.h) ||
         edge(ow, op.stride_w, op.kernel_w, op.pad_left, op.in_shape.w);
}

TilePlan build_plan(const LoweredOp& op, const HwConfig& hw, const SramGeometry& geo,
                    const Choice& c) {
  TilePlan p = plan_fields(op, c);
  p.lowering = op.lowering;
  set_pieces(op, c, &p);
  p.layout = *make_layout(geo, tile_bytes(op, c.rows_per_core, c.cols, c.channels_per_core),
                          layout_kind(c.double_buffer, c.weights_outer, c.k_per_set));
  p.estimate = estimate(op, hw, p, runs_of(p.row_pieces), runs_of(p.col_pieces), runs_of(p.groups));
  return p;
}

// ---- ramped ends and the timeline replay --------------------------------------

// Command-processor cycles of one command: its opcode and NACC_CTRL, and the
// register writes the emitter's shadow cannot skip: the row offsets (2) when
// the rows move, their lengths and the core split (3) when they change size,
// the column registers (4), the channel group's layer and operand registers
// (about 12), the SRAM bases (1) when the buffer set changes.
double issue_cycles(const Span& r, const Span& c, const Span& g, int set, const Span& pr,
                    const Span& pc, const Span& pg, int pset) {
  double n = 2;
  if (r.start != pr.start) n += 2;
  if (r.size != pr.size) n += 3;
  if (c.start != pc.start || c.size != pc.size) n += 4;
  if (g.start != pg.start || g.size != pg.size) n += 12;
  if (set != pset) n += 1;
  return n;
}

// The device's timeline (docs/performance_model.md §3) replayed over the
// commands of `p` in emission order (for_each_command) on its busiest core:
// each command's read waits for the read channel and for the last compute
// that used the SRAM areas it loads, its compute for the array, its read and
// the write-out of its OFM area, its write for the write channel; the command
// processor issues each command's words (issue_cycles). A tile or kernel the
// same registers loaded last is reused (the emitter's Residency rule). Unlike
// the estimate, which sums per size class, it sees the order of the pieces, so
// it can tell the fill (the first read) and the drain (the last compute and
// write) of one ordering from another's.
double replay_timeline(const LoweredOp& op, const HwConfig& hw, const TilePlan& p) {
  struct Area {
    int64_t base;
    double free;
  };
  std::vector<Area> fm_areas, k_areas, ofm_areas;
  const auto area = [](std::vector<Area>& v, int64_t base) -> double& {
    for (Area& a : v) {
      if (a.base == base) return a.free;
    }
    v.push_back({base, 0.0});
    return v.back().free;
  };
  const bool has_k = k_area_bytes(op, 1) > 0;
  const bool fm_shared = ifm_shared_across_groups(op);
  std::array<int64_t, 8> k_sig{}, fm_sig{};
  bool k_valid = false, fm_valid = false;
  int k_cores = 0, fm_cores = 0;
  double t = 0, read_free = 0, mac_free = 0, write_free = 0, end = 0;
  int index = 0, prev_set = -1;
  Span prev_r{-1, -1}, prev_c{-1, -1}, prev_g{-1, -1};
  const double core_bw = hw.dma_bytes_per_cycle, ext_bw = hw.ext_bytes_per_cycle;
  // A plan's commands have few distinct sizes: their splits and costs, by size.
  struct Sized {
    int h, w, g;
    CoreSplit split;
    CommandCost cost;
  };
  std::vector<Sized> sized;
  const auto sized_of = [&](int h, int w, int g) -> const Sized& {
    for (const Sized& x : sized) {
      if (x.h == h && x.w == w && x.g == g) return x;
    }
    const CoreSplit split = command_split(op, p, h, g);
    sized.push_back({h, w, g, split, command_cost(op, hw, p, split, h, w, g)});
    return sized.back();
  };
  for_each_command(p, [&](const Span& r, const Span& c, const Span& g) {
    const Sized& z = sized_of(r.size, c.size, g.size);
    const CoreSplit split = z.split;
    const BroadcastMode mode = split.total() > 1 ? p.mode : BroadcastMode::NONE;
    const bool two_d = mode == BroadcastMode::SPLIT_2D;
    const int set = p.double_buffer ? index++ % 2 : 0;
    const CommandCost cost = z.cost;
    const int64_t ifm_base = p.layout.ifm[set], k_base = p.layout.k[set],
                  ofm_base = p.layout.ofm[set];
    const bool fm_per_core = mode == BroadcastMode::SPLIT_HEIGHT || two_d ||
                             (mode == BroadcastMode::SPLIT_KERNEL && op.unit == Unit::kDepthwise);
    const std::array<int64_t, 8> fs = {r.start,
                                       r.size,
                                       c.start,
                                       c.size,
                                       fm_shared ? -1 : g.start,
                                       fm_shared ? -1 : g.size,
                                       ifm_base,
                                       fm_per_core ? (int64_t(split.groups) << 32) +
                                                         split.cores * 4096 + split.avg
                                                   : -1};
    const std::array<int64_t, 8> ks = {
        g.start, g.size, k_base,
        mode == BroadcastMode::SPLIT_KERNEL ? split.cores
        : two_d                             ? (int64_t(split.groups) << 32) + split.cores
                                            : 0,
        mode == BroadcastMode::SPLIT_KERNEL ? split.avg : two_d ? split.gavg : 0};
    const bool k_res = has_k && k_valid && k_sig == ks &&
                       (mode == BroadcastMode::SPLIT_KERNEL || two_d || split.cores <= k_cores);
    const bool fm_res = op.unit != Unit::kElementwise && fm_valid && fm_sig == fs &&
                        (fm_per_core || split.cores <= fm_cores);
    if (has_k) {
      k_cores = k_res ? std::max(k_cores, split.cores) : split.cores;
      k_sig = ks;
      k_valid = true;
    }
    fm_cores = fm_res ? std::max(fm_cores, split.cores) : split.cores;
    fm_sig = fs;
    fm_valid = true;

    t += issue_cycles(r, c, g, set, prev_r, prev_c, prev_g, prev_set);
    prev_r = r;
    prev_c = c;
    prev_g = g;
    prev_set = set;
    double& fm_free = area(fm_areas, ifm_base);
    double& k_free = area(k_areas, k_base);
    double& ofm_free = area(ofm_areas, ofm_base);
    double read_start = std::max(t, read_free), core_bytes = 0, ext_bytes = 0;
    if (!fm_res) {
      read_start = std::max(read_start, fm_free);
      core_bytes += cost.fm_core;
      ext_bytes += cost.fm_ext;
    }
    if (has_k && !k_res) {
      read_start = std::max(read_start, k_free);
      core_bytes += cost.k_core;
      ext_bytes += cost.k_ext;
    }
    const double read_end = read_start + std::max(core_bytes / core_bw, ext_bytes / ext_bw);
    const double compute_start = std::max({read_end, mac_free, ofm_free, t});
    const double compute_end = compute_start + cost.compute;
    const double write_end = std::max(compute_end, write_free) + cost.write_t;
    read_free = read_end;
    mac_free = compute_end;
    write_free = write_end;
    fm_free = std::max(fm_free, compute_end);
    if (has_k) k_free = std::max(k_free, compute_end);
    ofm_free = write_end;
    end = std::max(end, write_end);
  });
  return std::max(end, t);
}

// A replay of `replayed` cycles beats one of `base` when it saves more than
// the planner's tolerance and at least kReplayMinGain cycles: the replay is a
// model too, and on an op of a few hundred cycles its command-processor
// approximation alone is worth a few percent.
constexpr double kReplayMinGain = 32;
bool replay_gain(double base, double replayed) {
  return base - replayed > std::max(base * kPlanCycleTolerance, kReplayMinGain);
}

// Column widths that double from `edge` while below `cols`: 1, 2, 4, .. The
// pieces of a ramp.
std::vector<int> doubling_widths(int edge, int cols) {
  std::vector<int> out;
  for (int w = edge; w >= 1 && w < cols; w *= 2) out.push_back(w);
  return out;
}

// Column pieces of `ow` columns at most `cols` wide: `head` widths first
// (ascending), the middle balanced, `tail` widths last (descending); empty
// when the ramps do not leave a middle.
std::vector<Span> ramped_columns(int ow, int cols, const std::vector<int>& head,
                                 const std::vector<int>& tail) {
  int used = 0;
  for (int w : head) used += w;
  for (int w : tail) used += w;
  const int mid = ow - used;
  if (mid < 1) return {};
  std::vector<Span> out;
  int x = 0;
  for (int w : head) {
    out.push_back({x, w});
    x += w;
  }
  for (Span s : balanced(mid, int(ceil_div(mid, cols)))) out.push_back({x + s.start, s.size});
  x += mid;
  for (auto it = tail.rbegin(); it != tail.rend(); ++it) {
    out.push_back({x, *it});
    x += *it;
  }
  return out;
}

// `plan` with column pieces that ramp up from a narrow first tile and down to
// a narrow last one where the replayed timeline says that is faster. The
// first command's read is the pipeline's fill (every later read overlaps a
// compute); the drain is what follows the last wide read: that command's
// compute and write-out, which the later reads must cover, so the tiles
// narrow by halves towards each end (each halving one more column halo and
// command). A plan of few wide tiles (MobileNetV2's 112x112x32 depthwise at
// 32 cores: 4 tiles of 28 columns, read-bound) spent a third of its time
// filling and draining. The estimate of the result is the plan's less the
// time the replay saves, so it stays comparable with the other plans and
// lowerings of the op.
TilePlan with_ramped_ends(const LoweredOp& op, const HwConfig& hw, TilePlan plan,
                          double* replayed = nullptr) {
  const int ow = op.out_shape.w;
  const bool rampable = plan.double_buffer && ow >= 3 && plan.cols >= 2;
  if (!rampable && !replayed) return plan;
  const double base = replay_timeline(op, hw, plan);
  if (replayed) *replayed = base;
  if (!rampable) return plan;
  double best = base;
  std::vector<Span> best_cols;
  TilePlan trial = plan;
  for (int edge : {1, 2, 4}) {
    const std::vector<int> ramp = doubling_widths(edge, plan.cols);
    if (ramp.empty()) continue;
    for (int ends : {1, 2, 3}) {  // head, tail, both
      trial.col_pieces = ramped_columns(ow, plan.cols, ends & 1 ? ramp : std::vector<int>{},
                                        ends & 2 ? ramp : std::vector<int>{});
      if (trial.col_pieces.empty() || !plan_reads_input(op, trial)) continue;
      const double cycles = replay_timeline(op, hw, trial);
      if (cycles < best) {
        best = cycles;
        best_cols = trial.col_pieces;
      }
    }
  }
  // Worth a change of plan only beyond the planner's tolerance.
  if (best_cols.empty() || !replay_gain(base, best)) return plan;
  if (replayed) *replayed = best;
  const int64_t saved = int64_t(base - best + 0.5);
  plan.col_pieces = std::move(best_cols);
  const PlanEstimate was = plan.estimate;
  plan.estimate = estimate(op, hw, plan, runs_of(plan.row_pieces), runs_of(plan.col_pieces),
                           runs_of(plan.groups));
  plan.estimate.cycles = std::max<int64_t>(1, was.cycles - saved);
  return plan;
}

// The estimate sums commands per size class and cannot see their order (the
// fill before the first compute, the drain after the last read, a kernel load
// waiting for the one K area): plans it ranks within a few percent of each
// other can differ by more on the device. So the estimate's choice and its
// nearest runners-up (at most kReplayCandidates, within kReplayWindow of the
// fewest estimated cycles) are replayed command by command
// (replay_timeline); the estimate's choice and the best runner-up are then
// given ramped ends (with_ramped_ends), and the faster replay of the two
// wins, the runner-up only by more than the planner's tolerance. Plans of
// more than kReplayMaxCommands commands are not replayed: their fill and
// drain are a small part of their time, and the replay's cost grows with
// the commands. The winner's estimate is the estimate's choice's less the
// cycles the replay saves, so it stays comparable with the other lowerings
// of the op.
constexpr int kReplayCandidates = 8;
constexpr double kReplayWindow = 0.15;
constexpr int64_t kReplayMaxCommands = 128;
// Mode 3 plans replayed per op (search_tiles).
constexpr int kSplit2dRivals = 8;
constexpr int64_t kSplit2dMaxCommands = 32;

// Rows of a width-1 op (the matrix lowering's H*W pixel rows, NPU_OP_FULLY_CONNECTED
// over M rows) ramped like with_ramped_ends' columns: row pieces whose per-core
// share doubles from 1 up to `height`, the middle balanced at that height, the
// tail halving back to 1. Every read of the ramp is then at most twice the
// compute it overlaps, and the fill and drain are those of one-row tiles.
// `per_piece` rows per unit of share (the cores in mode 2). Empty when the
// ramps leave no middle.
std::vector<Span> ramped_rows(int oh, int per_piece, int height) {
  std::vector<int> ramp;
  for (int k = 1; k < height; k *= 2) ramp.push_back(k * per_piece);
  int used = 0;
  for (int r : ramp) used += 2 * r;
  const int mid = oh - used;
  if (mid < 1) return {};
  std::vector<Span> out;
  int y = 0;
  for (int r : ramp) {
    out.push_back({y, r});
    y += r;
  }
  // The middle in whole shares (a piece of the cores' multiple splits evenly),
  // the remainder on its last piece.
  const int units = mid / per_piece;
  if (units < 1) return {};
  const std::vector<Span> middle = balanced(units, int(ceil_div(units, height)));
  for (size_t i = 0; i < middle.size(); ++i) {
    const int size = middle[i].size * per_piece + (i + 1 == middle.size() ? mid % per_piece : 0);
    out.push_back({y, size});
    y += size;
  }
  for (auto it = ramp.rbegin(); it != ramp.rend(); ++it) {
    out.push_back({y, *it});
    y += *it;
  }
  return out;
}

// Heights of the middle of a row ramp: 2^2 .. 2^kRowRampSteps rows per core
// (the estimate's Runs hold 16 piece sizes: 2 x 6 ramp steps + 2).
constexpr int kRowRampSteps = 6;
constexpr int kRowRampConfigs = 8;

// `chosen` (the plan choose_by_replay settled on), or the same work in far
// fewer commands: for the double-buffered configurations (cores, mode,
// channel group, order) among `choices` nearest the fewest estimated cycles,
// the tallest tile that fits with ramped rows (ramped_rows), replayed command
// by command (replay_timeline); the fastest replaces `chosen` when its replay
// is no slower than chosen's. Width-1 fully-connected ops with rows to ramp
// only (the matrix lowering of a 1x1 convolution, docs/compiler.md §3).
TilePlan with_ramped_rows(const LoweredOp& op, const HwConfig& hw, const SramGeometry& geo,
                          const std::vector<Choice>& choices, TilePlan chosen, int64_t fastest) {
  const int oh = op.out_shape.h;
  if (op.unit != Unit::kFullyConnected || op.out_shape.w != 1 || oh < 8) return chosen;
  // The double-buffered configurations within the replay window, each by its
  // fastest estimated choice, fastest first.
  std::vector<const Choice*> configs;
  const double window = double(fastest) * (1.0 + kReplayWindow);
  const auto same_config = [](const Choice& a, const Choice& b) {
    return a.cores == b.cores && a.mode == b.mode && a.channels_per_core == b.channels_per_core &&
           a.weights_outer == b.weights_outer && a.k_per_set == b.k_per_set && a.cols == b.cols;
  };
  const auto earlier = [](const Choice* a, const Choice* b) {
    if (a->estimate.cycles != b->estimate.cycles) return a->estimate.cycles < b->estimate.cycles;
    return a->order < b->order;
  };
  for (const Choice& c : choices) {
    if (!c.double_buffer || double(c.estimate.cycles) > window) continue;
    auto it = std::find_if(configs.begin(), configs.end(),
                           [&](const Choice* x) { return same_config(*x, c); });
    if (it == configs.end()) configs.push_back(&c);
    else if (earlier(&c, *it)) *it = &c;
  }
  std::stable_sort(configs.begin(), configs.end(), earlier);
  if (configs.size() > size_t(kRowRampConfigs)) configs.resize(size_t(kRowRampConfigs));
  const double base = replay_timeline(op, hw, chosen);
  double best = base;
  const size_t chosen_commands =
      chosen.row_pieces.size() * chosen.col_pieces.size() * chosen.groups.size();
  size_t best_commands = chosen_commands;
  const int64_t chosen_bytes = chosen.estimate.read_bytes + chosen.estimate.write_bytes;
  std::optional<TilePlan> winner;
  for (const Choice* c : configs) {
    const LayoutKind kind = layout_kind(c->double_buffer, c->weights_outer, c->k_per_set);
    const int hmax = largest(row_cap(op, c->mode), [&](int r) {
      return make_layout(geo, tile_bytes(op, r, c->cols, c->channels_per_core), kind).has_value();
    });
    const bool mode2 = c->mode == BroadcastMode::SPLIT_HEIGHT;
    // Rows per step of the ramp: one per core in mode 2, else 1, 4 or 16 rows.
    for (int unit : {1, 4, 16}) {
      if (mode2 && unit > 1) break;
      const int per_piece = mode2 ? c->cores : unit;
      for (int steps = 2; steps <= kRowRampSteps; ++steps) {
        const int height = 1 << steps;
        // The SRAM layout of the ramp's tallest share (a remainder of the
        // step on the last middle piece).
        const int cap = mode2 ? height + (oh % per_piece ? 1 : 0) : height * unit + unit - 1;
        if (cap > hmax) break;
        Choice shorter = *c;
        shorter.rows_per_core = cap;
        TilePlan trial = build_plan(op, hw, geo, shorter);
        trial.row_pieces = ramped_rows(oh, per_piece, height);
        if (trial.row_pieces.empty()) break;
        const size_t commands = trial.row_pieces.size() * trial.col_pieces.size() * trial.groups.size();
        if (commands >= chosen_commands) continue;
        // Every piece must split as the emitter will split it (command_split).
        if (mode2) {
          bool ok = true;
          for (Span r : trial.row_pieces) {
            ok = ok && split_across_cores(r.size, trial.cores, trial.rows_per_core, row_avg_cap(op));
          }
          if (!ok) continue;
        }
        // No more DMA bytes than the chosen plan's (the ramp is for commands).
        const PlanEstimate e = estimate(op, hw, trial, runs_of(trial.row_pieces),
                                        runs_of(trial.col_pieces), runs_of(trial.groups));
        if (e.read_bytes + e.write_bytes > chosen_bytes) continue;
        const double cycles = replay_timeline(op, hw, trial);
        if (cycles < best || (cycles <= best && commands < best_commands)) {
          best = cycles;
          best_commands = commands;
          winner = std::move(trial);
        }
      }
    }
  }
  if (!winner) return chosen;
  TilePlan plan = std::move(*winner);
  plan.estimate = estimate(op, hw, plan, runs_of(plan.row_pieces), runs_of(plan.col_pieces),
                           runs_of(plan.groups));
  plan.estimate.cycles = std::max<int64_t>(1, chosen.estimate.cycles - int64_t(base - best + 0.5));
  return plan;
}


// A lower bound of estimate().cycles of every plan of `op` whose commands use
// at most `cores` cores (search pruning, search_tiles). Each command costs at
// least its compute (mac_cycles / act_cycles of its largest core share) and
// at least its write transfer (stage() and the K-per-set max hold both; the
// other terms of estimate() are >= 0). The cost model's MAC cycles are
// additive in rows, columns and output channels, or ceilings of such sums
// (superadditive): the tiles partition the output, so the compute sums to at
// least the whole op's over the cores; the writes sum to the output's bytes.
double cycles_floor(const LoweredOp& op, const HwConfig& hw, int cores) {
  const int oh = op.out_shape.h, ow = op.out_shape.w, channels = op.split_channels();
  const double compute =
      double(std::max(mac_cycles(op, oh, ow, channels), act_cycles(op, oh, ow, channels))) /
      double(cores);
  const double write =
      double(oh) * ow * op.out_channels(channels) * op.elem() / double(hw.ext_bytes_per_cycle);
  return std::max(compute, write);
}

// cycles_floor for the plans of `mode` on `cores` cores (>= cycles_floor):
// a command's busiest core computes at least ceil(rows / cores) of its rows
// (mode 2) or ceil(channels / cores) of its basis channels (mode 1), and those
// ceilings sum over the op's row pieces (channel groups) to at least
// ceil(H / cores) (ceil(C / cores)); the MAC cycles are additive or
// superadditive in each, as in cycles_floor. Mode 2 on few output rows
// (a 7x7 map on 32 cores) cannot be faster than ceil(7 / 32) = 1 row a core.
double mode_cycles_floor(const LoweredOp& op, const HwConfig& hw, int cores, BroadcastMode mode) {
  const int oh = op.out_shape.h, ow = op.out_shape.w, channels = op.split_channels();
  int rows = oh, ch = channels;
  if (mode == BroadcastMode::SPLIT_HEIGHT) rows = int(ceil_div(oh, cores));
  else if (mode == BroadcastMode::SPLIT_KERNEL) ch = int(ceil_div(channels, cores));
  else return cycles_floor(op, hw, cores);
  const double compute =
      double(std::max(mac_cycles(op, rows, ow, ch), act_cycles(op, rows, ow, ch)));
  return std::max(compute, cycles_floor(op, hw, cores));
}

// Whether no plan with a cycles floor of `floor` can matter once a plan of
// `fastest` cycles is known: select_choice keeps plans within kCycleTolerance
// of the fewest cycles and choose_by_replay looks at rivals within
// kReplayWindow of it, and the fewest is at most `fastest`. The margins cover
// estimate()'s rounding to an integer and its floating-point sums.
bool out_of_reach(double floor, int64_t fastest) {
  return floor * (1.0 - 1e-9) - 1.0 >
         double(fastest) * (1.0 + std::max(kCycleTolerance, kReplayWindow));
}

// The chosen plan among `choices` (non-empty): within kCycleTolerance of the
// fewest estimated cycles, then better(), then the canonical search order.
const Choice& select_choice(const std::vector<Choice>& choices) {
  int64_t fastest = choices[0].estimate.cycles;
  for (const Choice& c : choices) fastest = std::min(fastest, c.estimate.cycles);
  const double limit = double(fastest) * (1.0 + kCycleTolerance);
  const Choice* best = nullptr;
  for (const Choice& c : choices) {
    if (double(c.estimate.cycles) > limit) continue;
    if (!best || better(c.estimate, best->estimate) ||
        (!better(best->estimate, c.estimate) && c.order < best->order)) {
      best = &c;
    }
  }
  return *best;
}

TilePlan choose_by_replay(const LoweredOp& op, const HwConfig& hw, const SramGeometry& geo,
                          const std::vector<Choice>& choices, const Choice& best,
                          int64_t fastest) {
  TilePlan chosen = build_plan(op, hw, geo, best);
  if (chosen.estimate.commands > kReplayMaxCommands) {
    return with_ramped_rows(op, hw, geo, choices, std::move(chosen), fastest);
  }
  std::vector<const Choice*> rivals;
  const double window = double(fastest) * (1.0 + kReplayWindow);
  for (const Choice& c : choices) {
    if (&c != &best && double(c.estimate.cycles) <= window &&
        c.estimate.commands <= kReplayMaxCommands) {
      rivals.push_back(&c);
    }
  }
  std::stable_sort(rivals.begin(), rivals.end(), [](const Choice* a, const Choice* b) {
    if (a->estimate.cycles != b->estimate.cycles) return a->estimate.cycles < b->estimate.cycles;
    return a->order < b->order;  // the canonical order (Choice::order), not the visit order
  });
  if (rivals.size() > size_t(kReplayCandidates)) rivals.resize(size_t(kReplayCandidates));
  const Choice* runner_up = nullptr;
  double runner_up_replay = 0;
  for (const Choice* c : rivals) {
    const double r = replay_timeline(op, hw, build_plan(op, hw, geo, *c));
    if (!runner_up || r < runner_up_replay) {
      runner_up = c;
      runner_up_replay = r;
    }
  }
  double base = 0;
  chosen = with_ramped_ends(op, hw, std::move(chosen), &base);
  if (!runner_up) return with_ramped_rows(op, hw, geo, choices, std::move(chosen), fastest);
  double replayed = 0;
  TilePlan other = with_ramped_ends(op, hw, build_plan(op, hw, geo, *runner_up), &replayed);
  if (!replay_gain(base, replayed)) return with_ramped_rows(op, hw, geo, choices, std::move(chosen), fastest);
  other.estimate.cycles =
      std::max<int64_t>(1, chosen.estimate.cycles - int64_t(base - replayed + 0.5));
  return with_ramped_rows(op, hw, geo, choices, std::move(other), fastest);
}

// The planning key of plan_tiles(op, hw, options): every LoweredOp field the
// planner (this file: search_tiles, estimate, command_cost, tile_bytes,
// k_area_bytes, mac_cycles, row_cap, the timeline replay, ...) reads, directly
// or through LoweredOp's accessors (split_channels, in_channels, out_channels,
// weight_bytes, matmul_k, elem, has_bias, bias_entry_bytes), and the whole
// HwConfig and PlanOptions. Not the label: it only names the op in an
// exception, and failures are not memoized. A field the planner starts to
// read must be added here.
std::string plan_key(const LoweredOp& op, const HwConfig& hw, const PlanOptions& options) {
  const int64_t v[] = {
      int64_t(op.unit), op.kernel_h, op.kernel_w, op.stride_h, op.stride_w,
      op.pad_top, op.pad_left, op.pad_bottom, op.pad_right,
      op.in_shape.n, op.in_shape.h, op.in_shape.w, op.in_shape.c,
      op.out_shape.n, op.out_shape.h, op.out_shape.w, op.out_shape.c,
      op.depth_multiplier, op.im2col, op.input2_broadcast, op.int16_maps, op.int4_weights,
      op.has_bias(), op.fp32_scale.empty(), op.real_scale.empty(), op.has_lut, op.pool_fp32,
      op.mac_fp32,
      hw.cores, hw.sram_bytes, hw.dma_bytes_per_cycle, hw.ext_bytes_per_cycle,
      options.allow_double_buffer, options.force_cores, options.force_mode};
  std::string key(reinterpret_cast<const char*>(v), sizeof v);
  key += op.lowering;
  return key;
}

using PlanMemo = std::unordered_map<std::string, TilePlan>;
thread_local PlanMemo* t_plan_memo = nullptr;

// plan_tiles without the memo: the search.
TilePlan search_tiles(const LoweredOp& op, const HwConfig& hw, const PlanOptions& options) {
  const SramGeometry geo = sram_geometry(hw.sram_bytes);
  const int channels = op.split_channels();
  const int oh = op.out_shape.h, ow = op.out_shape.w;
  // Columns: OUT_FM_SPLIT_WIDTH and IN_FM_SPLIT_WIDTH are 8-bit fields.
  const int col_cap =
      std::min({ow, kMaxSplitWidth, (kMaxSplitWidth - op.kernel_w) / op.stride_w + 1});
  check_arg(col_cap >= 1, op.label, ": kernel width ", op.kernel_w, " leaves no tile width");

  // Candidate channels per core: every distinct ceil(C / k). An element-wise or
  // activation op has no window and no weights to reuse, so a smaller channel
  // group only buys a taller tile of the same bytes: a few group sizes cover
  // it (a search over every one was most of the compile time of SiLU-heavy
  // networks).
  std::set<int, std::greater<int>> channel_caps;
  if (op.unit == Unit::kElementwise || op.unit == Unit::kActivation) {
    for (int k : {1, 2, 3, 4, 6, 8, 12, 16, 32, 64}) {
      if (k <= channels) channel_caps.insert(int(ceil_div(channels, k)));
    }
    if (channels > 64) channel_caps.insert(int(ceil_div(channels, channels)));
  } else {
    for (int k = 1; k <= channels; ++k) channel_caps.insert(int(ceil_div(channels, k)));
  }

  // Every (cores, mode, channels per core, order, double buffering, width,
  // height) whose tile fits; each width and height the largest that fits or
  // one that splits the work more evenly.
  std::vector<Choice> choices;
  const bool padding_only_edges = has_padding_only_edges(op);
  int64_t fastest_so_far = std::numeric_limits<int64_t>::max();
  uint64_t order = 0;  // canonical order of the next choice (Choice::order)
  const auto consider = [&](Choice c) {
    const LayoutKind kind = layout_kind(c.double_buffer, c.weights_outer, c.k_per_set);
    const auto fit = [&](int rows, int cols) {
      return make_layout(geo, tile_bytes(op, rows, cols, c.channels_per_core), kind).has_value();
    };
    const int wmax = largest(col_cap, [&](int w) { return fit(1, w); });
    if (wmax == 0) return;
    const int nc_min = int(ceil_div(ow, wmax));
    std::set<int> widths;
    for (int f : {1, 2, 4}) widths.insert(int(ceil_div(ow, std::min(ow, nc_min * f))));
    if (c.mode == BroadcastMode::SPLIT_2D) {
      // Narrower tiles: more commands to pipeline a read-bound small map.
      for (int f : {3, 6, 8}) widths.insert(int(ceil_div(ow, std::min(ow, nc_min * f))));
    }
    const int rcap = row_cap(op, c.mode);
    for (int w : widths) {
      const int hmax = largest(rcap, [&](int r) { return fit(r, w); });
      if (hmax == 0) continue;
      std::set<int> heights = {hmax};
      if (c.mode == BroadcastMode::SPLIT_HEIGHT || c.mode == BroadcastMode::SPLIT_2D) {
        // Rows per core beyond an even share of the whole height buy nothing;
        // below it, fewer rows per core trade halo traffic for shorter
        // pipeline fill and drain.
        const int row_cores = c.mode == BroadcastMode::SPLIT_2D ? c.cores / c.groups2d : c.cores;
        const int even = std::min(hmax, int(ceil_div(oh, row_cores)));
        heights = {even};
        for (int r = 1; r <= std::min(even, 16); ++r) heights.insert(r);
        for (int k = 2; k <= 8; ++k) heights.insert(std::min(even, int(ceil_div(oh, int64_t(row_cores) * k))));
      } else if (c.mode == BroadcastMode::SPLIT_KERNEL && c.double_buffer && hmax == oh) {
        // Mode 1 broadcasts the IFM to every core's 16-byte port: a tile of
        // the whole map keeps the array idle until all of it has arrived,
        // shorter tiles start it after the first and load the next under
        // its compute (MobileNetV2's 14x14x64 -> 384 expansions at 32 cores).
        for (int r : {int(ceil_div(oh, 2)), int(ceil_div(oh, 4)), 1}) heights.insert(r);
      }
      for (int h : heights) {
        c.cols = w;
        c.rows_per_core = h;
        if (padding_only_edges) {
          TilePlan pieces = plan_fields(op, c);
          set_pieces(op, c, &pieces);
          if (!plan_reads_input(op, pieces)) continue;
        }
        c.estimate = estimate_choice(op, hw, c);
        c.order = order++;
        // Mode 3 choices do not prune the others (the classic choice stays as without it).
        if (c.mode != BroadcastMode::SPLIT_2D) fastest_so_far = std::min(fastest_so_far, c.estimate.cycles);
        choices.push_back(c);
      }
    }
  };
  // The mode 3 choices of n cores, in the canonical order from `first`
  // (Choice::order as if searched after modes 1 and 2 of n cores).
  struct Deferred2d {
    int n;
    uint64_t first;
  };
  std::vector<Deferred2d> deferred_2d;
  const auto search_2d = [&](const Deferred2d& d) {
    const int n = d.n;
    const BroadcastMode mode = BroadcastMode::SPLIT_2D;
    order = d.first;
    // G channel groups of up to 64 channels' shares (a core's pass costs
    // the same for any count up to 64) x n / G row pieces; K per set or
    // single-buffered, weights resident (the depthwise winners).
    for (int groups = 2; groups <= n / 2; groups *= 2) {
      std::set<int, std::greater<int>> caps;
      for (int j : {1, 2, 3, 4, 6, 8}) {
        const int cap = int(ceil_div(channels, int64_t(groups) * j));
        caps.insert(cap);
        if (j == 1) {
          for (int m = 64; m < cap; m += 64) caps.insert(m);
        }
      }
      for (int gc : caps) {
        if (gc > group_avg_cap(op)) continue;
        for (int variant = 0; variant < 3; ++variant) {
          if (variant > 0 && !options.allow_double_buffer) continue;
          // A K area per set only for depthwise (a few hundred bytes per
          // group; a weight matrix reloaded with every tile would multiply
          // the weight traffic).
          if (variant == 1 && op.unit != Unit::kDepthwise) continue;
          Choice c;
          c.cores = n;
          c.mode = mode;
          c.groups2d = groups;
          c.channels_per_core = gc;
          c.weights_outer = true;
          c.double_buffer = variant > 0;
          c.k_per_set = variant == 1;
          consider(c);
        }
      }
    }
  };
  // The core counts from the most down: a plan on many cores usually puts
  // the fewer-core ones out of reach (cycles_floor), which are then not
  // searched. Choice::order keeps the tie rules of an ascending search.
  std::vector<int> core_counts;
  for (int n = 1; n <= hw.cores; n *= 2) {
    if (!options.force_cores || n == options.force_cores) core_counts.push_back(n);
  }
  for (auto it = core_counts.rbegin(); it != core_counts.rend(); ++it) {
    const int n = *it;
    // The floor only rises as n falls: every smaller count is out of reach too.
    if (!choices.empty() && out_of_reach(cycles_floor(op, hw, n), fastest_so_far)) break;
    int log2n = 0;
    while ((1 << log2n) < n) ++log2n;
    order = uint64_t(log2n) << 40;
    std::vector<BroadcastMode> modes;
    if (n == 1) {
      modes = {BroadcastMode::NONE};
    } else {
      modes = {BroadcastMode::SPLIT_HEIGHT};
      // Mode 1 splits the kernel operand: conv and FC weights, matmul B's
      // columns, a depthwise convolution's channels (docs/device_model.md §5;
      // depth multiplier 1: each core's channels are its input channels).
      if ((op.unit == Unit::kConv || op.unit == Unit::kFullyConnected ||
           op.unit == Unit::kMatmul ||
           (op.unit == Unit::kDepthwise && op.depth_multiplier == 1)) &&
          channels >= 2) {
        modes.push_back(BroadcastMode::SPLIT_KERNEL);
      }
      // Mode 3 (project extension, docs/device_model.md §5): channel groups x
      // row pieces, for depthwise maps and matrix rows too few for the cores.
      if ((op.unit == Unit::kDepthwise || op.unit == Unit::kFullyConnected) && n >= 4 &&
          channels >= 2 && !op.int16_maps) {
        modes.push_back(BroadcastMode::SPLIT_2D);
      }
    }
    for (BroadcastMode mode : modes) {
      if (options.force_mode >= 0 && n > 1 && int(mode) != options.force_mode) continue;
      if (!choices.empty() && out_of_reach(mode_cycles_floor(op, hw, n, mode), fastest_so_far)) {
        continue;
      }
      if (mode == BroadcastMode::SPLIT_2D) {
        // Searched after the other modes (search_2d): their choice may show
        // that no mode 3 plan on these core counts can beat it.
        deferred_2d.push_back({n, order});
        continue;
      }
      // A depthwise core in mode 1 costs its pixels x taps x ceil(channels / 64)
      // whatever its share below 64, so a group smaller than the op only adds
      // commands: its caps are the even shares of 1..16 groups and the
      // multiples of 64 below them, and a few shares of the op independent of
      // the core count (few, to keep the search small).
      std::set<int, std::greater<int>> dw_caps;
      if (mode == BroadcastMode::SPLIT_KERNEL && op.unit == Unit::kDepthwise) {
        for (int j : {1, 2, 3, 4, 6, 8, 12, 16}) {
          const int cap = int(ceil_div(channels, int64_t(n) * j));
          dw_caps.insert(cap);
          if (j == 1) {
            for (int m = 64; m < cap; m += 64) dw_caps.insert(m);
          }
        }
        // Larger caps size shorter tiles of the same split (the fit is per cap).
        for (int k : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32}) {
          if (k <= channels) dw_caps.insert(int(ceil_div(channels, k)));
        }
      }
      for (int gc : dw_caps.empty() ? channel_caps : dw_caps) {
        if (mode == BroadcastMode::SPLIT_KERNEL && gc > kMaxCoreChannels) continue;
        for (bool weights_outer : {true, false}) {
          if (!weights_outer && !ifm_shared_across_groups(op)) continue;
          for (bool db : {false, true}) {
            if (db && !options.allow_double_buffer) continue;
            Choice c;
            c.cores = n;
            c.mode = mode;
            c.channels_per_core = gc;
            c.weights_outer = weights_outer;
            c.double_buffer = db;
            consider(c);
            if (db && weights_outer && op.unit == Unit::kDepthwise) {
              c.k_per_set = true;
              consider(c);
            }
          }
        }
      }
    }
  }
  // Mode 3 (SPLIT_2D) is chosen among the plans of modes 0-2 (which are
  // chosen exactly as without it) only when the replayed timeline of the
  // plan chosen with it beats theirs (below): no plan on n cores replays in
  // fewer cycles than cycles_floor(n) (its compute and its writes each run
  // one after another), so when no searched core count's floor beats the
  // base's replay by replay_gain, the base is the answer and mode 3 is not
  // searched (the same Program: the rivals below could only lose).
  std::optional<TilePlan> early;  // the base below (the choice of modes 0-2)
  std::optional<double> rb_known;  // its replayed cycles
  if (!choices.empty() && !deferred_2d.empty()) {
    early = choose_by_replay(op, hw, geo, choices, select_choice(choices), fastest_so_far);
    rb_known = replay_timeline(op, hw, *early);
    bool reach = false;
    for (const Deferred2d& d : deferred_2d) {
      reach = reach || replay_gain(*rb_known, cycles_floor(op, hw, d.n) * (1.0 - 1e-9) - 1.0);
    }
    if (!reach) return *early;
  }
  for (const Deferred2d& d : deferred_2d) search_2d(d);
  if (choices.empty()) {
    const TileBytes b = tile_bytes(op, 1, 1, 1);
    throw Unsupported(str_cat(op.label, ": no tile fits one core's SRAM of ", hw.sram_bytes,
                              " bytes (the smallest needs IFM ", b.ifm, " + K ", b.k, " + OFM ",
                              b.ofm, (b.temp ? str_cat(" + operand ", b.temp) : std::string()),
                              " bytes before alignment)"));
  }
  // Mode 3 (SPLIT_2D) is chosen among the plans of modes 0-2 (which are
  // chosen exactly as without it) only when the replayed timeline of the
  // plan chosen with it beats theirs: its estimate sums per size class and,
  // on the small maps it is for, differs from the device by as much as the
  // plans differ.
  std::vector<Choice> classic, two_d;
  for (const Choice& c : choices) {
    (c.mode != BroadcastMode::SPLIT_2D ? classic : two_d).push_back(c);
  }
  const auto choose = [&](const std::vector<Choice>& from) {
    int64_t fastest = from[0].estimate.cycles;
    for (const Choice& c : from) fastest = std::min(fastest, c.estimate.cycles);
    return choose_by_replay(op, hw, geo, from, select_choice(from), fastest);
  };
  if (classic.size() == choices.size()) return early ? std::move(*early) : choose(choices);
  if (classic.empty()) return choose(choices);
  TilePlan base = early ? std::move(*early) : choose(classic);
  // The mode 3 plan: the fastest replayed timeline among its kSplit2dRivals
  // fastest estimates (the estimate chose the wrong one of near plans too
  // often on these small, read-bound maps), with ramped column ends.
  std::stable_sort(two_d.begin(), two_d.end(), [](const Choice& a, const Choice& b) {
    if (a.estimate.cycles != b.estimate.cycles) return a.estimate.cycles < b.estimate.cycles;
    return a.order < b.order;
  });
  // At most kSplit2dMaxCommands commands: the device plans a mode 3
  // command's frame of cores in full when it builds its execution plan (its
  // middle groups and row pieces derived, kernel_plan.cc), and the timeline
  // and recorder work per core, so many small commands on 32 cores cost load
  // time.
  two_d.erase(std::remove_if(two_d.begin(), two_d.end(),
                             [](const Choice& c) { return c.estimate.commands > kSplit2dMaxCommands; }),
              two_d.end());
  if (two_d.size() > size_t(kSplit2dRivals)) two_d.resize(size_t(kSplit2dRivals));
  std::optional<TilePlan> with;
  double rw = 0;
  // The base's replay, once: a rival whose replay cannot beat it (the
  // replayed timeline of any plan on c.cores cores is at least its cycles
  // floor: the compute and the writes each run one after another) is not
  // replayed. Exact: the winner below is the fewest replayed cycles, kept
  // only on replay_gain, which a larger replay gains less by.
  const auto base_replay = [&] {
    if (!rb_known) rb_known = replay_timeline(op, hw, base);
    return *rb_known;
  };
  for (const Choice& c : two_d) {
    if (!replay_gain(base_replay(), cycles_floor(op, hw, c.cores) * (1.0 - 1e-9) - 1.0)) continue;
    TilePlan p = build_plan(op, hw, geo, c);
    if (p.estimate.commands > kReplayMaxCommands) continue;
    double r = 0;
    p = with_ramped_ends(op, hw, std::move(p), &r);
    if (!with || r < rw) {
      with = std::move(p);
      rw = r;
    }
  }
  if (!with) return base;
  const double rb = base_replay();
  if (!replay_gain(rb, rw)) return base;
  // Comparable with the other lowerings of the op: the base's estimate less
  // the time the replay saves (as choose_by_replay does).
  with->estimate.cycles = std::max<int64_t>(1, base.estimate.cycles - int64_t(rb - rw + 0.5));
  return *with;
}

}  // namespace

PlanMemoScope::PlanMemoScope() {
  if (!t_plan_memo) {
    t_plan_memo = new PlanMemo();
    owner_ = true;
  }
}

PlanMemoScope::~PlanMemoScope() {
  if (owner_) {
    delete t_plan_memo;
    t_plan_memo = nullptr;
  }
}

TilePlan plan_tiles(const LoweredOp& op, const HwConfig& hw, const PlanOptions& options) {
  check_arg(op.unit != Unit::kView, "plan_tiles: ", op.label, " moves no data");
  if (!t_plan_memo) return search_tiles(op, hw, options);
  std::string key = plan_key(op, hw, options);
  const auto it = t_plan_memo->find(key);
  if (it != t_plan_memo->end()) return it->second;
  TilePlan plan = search_tiles(op, hw, options);
  t_plan_memo->emplace(std::move(key), plan);
  return plan;
}

}  // namespace nacc::compiler

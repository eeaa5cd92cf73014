// The execution plan (device/plan.h): recording a stream while the
// interpreter checks it, merging the commands of a layer into one host call
// where that is proven exact, and replaying the data effects.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <numeric>
#include <tuple>
#include <unordered_map>

#include "arch/limits.h"
#include "arch/sram.h"
#include "device/plan_internal.h"
#include "device/units/conv.h"
#include "device/units/fully_connected.h"
#include "device/units/mac_fp32_m1.h"

namespace nacc {

ExecutionPlan::ExecutionPlan(std::unique_ptr<device_detail::PlanData> d) : d_(std::move(d)) {}
ExecutionPlan::~ExecutionPlan() = default;
const RunCounters& ExecutionPlan::counters() const { return d_->counters; }
const std::vector<CommandRecord>& ExecutionPlan::timeline() const { return *d_->timeline; }
const std::array<uint64_t, limits::kNumRegions>& ExecutionPlan::region_sizes() const {
  return d_->region_sizes;
}
ExecutionPlan::Summary ExecutionPlan::summary() const { return d_->summary; }

namespace device_detail {

// ---------------------------------------------------------------------------
// Recording.

RegionRef Recorder::ref(uint64_t addr) {
  // Most accesses fall in the region of the last one.
  const size_t l = size_t(last_region);
  if (region_size[l] > 0 && addr >= region_base[l] && addr - region_base[l] < region_size[l]) {
    return RegionRef{last_region, addr - region_base[l]};
  }
  for (int i = 0; i < limits::kNumRegions; ++i) {
    if (region_size[size_t(i)] > 0 && addr >= region_base[size_t(i)] &&
        addr - region_base[size_t(i)] < region_size[size_t(i)]) {
      last_region = i;
      return RegionRef{i, addr - region_base[size_t(i)]};
    }
  }
  if (unsupported.empty()) unsupported = "an access outside the region buffers";
  return RegionRef{};
}

ReadRef Recorder::ref(const Read& r) {
  ReadRef out;
  out.at = ref(r.addr);
  out.rows = r.rows;
  out.cols = r.cols;
  out.bytes = r.bytes;
  out.row_pitch = r.row_pitch;
  out.pix_pitch = r.pix_pitch;
  return out;
}

void Recorder::wrote(const Interval& w) {
  std::vector<Interval> ws{w};
  wrote(ws);
}

void Recorder::wrote(std::vector<Interval>& ws) {
  // Sorted and coalesced, a source overlaps a write iff it overlaps the first
  // interval that ends after the source begins.
  std::sort(ws.begin(), ws.end(), [](const Interval& a, const Interval& b) { return a.lo < b.lo; });
  size_t n = 0;
  for (const Interval& w : ws) {
    if (w.hi <= w.lo) continue;
    if (n > 0 && w.lo <= ws[n - 1].hi) {
      ws[n - 1].hi = std::max(ws[n - 1].hi, w.hi);
    } else {
      ws[n++] = w;
    }
  }
  ws.resize(n);
  if (ws.empty()) return;
  const Interval all{ws.front().lo, ws.back().hi};  // disjoint and sorted: the last ends last
  auto hit = [&](const Interval& s) {
    if (!all.overlaps(s)) return false;  // most sources: another region than the writes
    auto it = std::upper_bound(ws.begin(), ws.end(), s.lo,
                               [](uint64_t lo, const Interval& w) { return lo < w.hi; });
    return it != ws.end() && it->overlaps(s);
  };
  for (CoreResidency& r : cores) {
    for (size_t i = 0; !r.fm_dirty && i < r.fm_src.size(); ++i) r.fm_dirty = hit(r.fm_src[i]);
    if (r.k_dirty || !all.overlaps(r.k_hull)) continue;  // no write reaches the K sources
    for (size_t i = 0; !r.k_dirty && i < r.k_src.size(); ++i) r.k_dirty = hit(r.k_src[i]);
  }
}

namespace {

// A hash of a K area, for finding identical loads (a match is then compared
// byte for byte): FNV-1a's step over 8-byte words in four independent lanes
// (32-byte stripes: ResNet50's 25 MB of weights hash at several bytes per
// cycle, not at one multiply chain's pace), the tail bytewise.
uint64_t digest(const uint8_t* p, size_t n) {
  uint64_t lane[4];
  for (int k = 0; k < 4; ++k) lane[k] = 1469598103934665603ull ^ uint64_t(k);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) {
      uint64_t v;
      std::memcpy(&v, p + i + 8 * k, 8);
      lane[k] = (lane[k] ^ v) * 1099511628211ull;
      lane[k] ^= lane[k] >> 29;
    }
  }
  uint64_t h = lane[0];
  for (int k = 1; k < 4; ++k) h = (h ^ lane[k]) * 1099511628211ull;
  for (; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h ^ n;
}

void unsupported(Recorder& rec, const char* why) {
  if (rec.unsupported.empty()) rec.unsupported = why;
}

bool same_layer(const Setup& a, const Setup& b);
// Turns the held layer (rec.group) into steps and empties it.
void flush_group(Recorder& rec);

}  // namespace

Recorder::Recorder() : plan(std::make_unique<PlanData>()) {}
Recorder::~Recorder() = default;

void load_kernel(Recorder& rec, const Setup& s, const CoreWork& c) {
  if (rec.cores.size() <= size_t(c.core)) rec.cores.resize(size_t(c.core) + 1);
  // The K area [kern.lo, kern.hi), zeroed, then the parts from immutable sources.
  const int64_t lo = c.kern.lo;
  std::vector<uint8_t> area(size_t(c.kern.hi - lo), 0);
  auto loads = [&](const Read& r) { return rec.immutable(rec.ref(r.addr)); };
  auto copy = [&](const Read& r) {
    if (!loads(r)) return;
    Read in_area = r;
    in_area.sram = r.sram - lo;
    copy_in(in_area, area.data());
  };
  if (c.wblock.host && loads(c.wblock)) {
    load_weights(s, c, reinterpret_cast<int8_t*>(area.data() + (c.w_lo - lo)));
  }
  if (c.b_read.host) copy(c.b_read);
  for (const Read& r : c.small_reads) copy(r);
  // Identical K areas (the row bands of a layer that reload its kernel) share one copy.
  const uint64_t d = digest(area.data(), area.size());
  int index = -1;
  auto range = rec.by_digest.equal_range(d);
  for (auto it = range.first; it != range.second; ++it) {
    const KernelData& kd = rec.kernel_data[size_t(it->second)];
    if (kd.lo == lo && kd.bytes == area) {
      index = it->second;
      break;
    }
  }
  if (index < 0) {
    index = int(rec.kernel_data.size());
    rec.kernel_data.push_back(KernelData{lo, std::move(area)});
    rec.by_digest.emplace(d, index);
  }
  rec.cores[size_t(c.core)].loaded = index;
}

void record_kernel(Recorder& rec, const ExecEnv& env, const Setup& s,
                   std::vector<CoreWork>& work) {
  const HandlerContext& ctx = env.ctx;
  if (rec.cores.size() < ctx.cores.size()) rec.cores.resize(ctx.cores.size());
  if (!rec.group.empty() && !same_layer(rec.group.back().s, s)) flush_group(rec);
  KernelTrace kt;
  kt.word = uint32_t(ctx.pc);
  kt.s = s;
  kt.tiles.reserve(work.size());
  const bool k_broadcast = s.mode == value_of(BroadcastMode::SPLIT_HEIGHT);
  for (CoreWork& c : work) {
    Recorder::CoreResidency& res = rec.cores[size_t(c.core)];
    TileTrace& t = kt.tiles.emplace_back();
    t.work = c;  // the tile's part: no host pointers, no allocation
    t.fm = rec.ref(c.fm_read);
    if (c.load_temp) t.temp = rec.ref(c.temp_read);
    t.out = rec.ref(c.ofm_addr);
    if (c.load_fm) {
      res.fm_src = {c.fm_read.interval()};
      res.fm_dirty = false;
    } else if (res.fm_dirty) {
      unsupported(rec, "a resident IFM whose source bytes were written after it was loaded");
    }
    if (!c.kern.empty()) {
      if (c.load_k && k_broadcast && c.core > 0) {
        // Core 0 fetched the broadcast K area; this core received a copy of it.
        const Recorder::CoreResidency& r0 = rec.cores[size_t(work[0].core)];
        res.kdata = r0.kdata;
        res.k_reads = r0.k_reads;
        res.k_src = r0.k_src;
        res.k_hull = r0.k_hull;
        res.k_dirty = false;
      } else if (c.load_k) {
        std::vector<KernelRead> k_reads;
        std::vector<Interval> src;
        auto part = [&](const Read& r) {
          src.push_back(r.interval());
          const ReadRef ref = rec.ref(r);
          if (!rec.immutable(ref.at)) k_reads.push_back(KernelRead{ref, r.sram});
        };
        if (c.wblock.host) {
          src.push_back(c.wblock.interval());
          if (!rec.immutable(rec.ref(c.wblock.addr))) {
            unsupported(rec, "a weight block outside the immutable regions");
          }
        }
        if (c.b_read.host) part(c.b_read);
        for (const Read& r : c.small_reads) part(r);
        res.kdata = res.loaded;  // load_kernel's, for this command
        res.loaded = -1;
        res.k_reads = std::move(k_reads);
        res.k_src = std::move(src);
        res.k_hull = Interval{};
        for (const Interval& i : res.k_src) {
          if (i.hi <= i.lo) continue;
          res.k_hull = res.k_hull.hi <= res.k_hull.lo
                           ? i
                           : Interval{std::min(res.k_hull.lo, i.lo), std::max(res.k_hull.hi, i.hi)};
        }
        res.k_dirty = false;
      } else if (res.k_dirty) {
        unsupported(rec, "a resident K area whose source bytes were written after it was loaded");
      }
      t.kdata = res.kdata;
      if (!res.k_reads.empty()) t.k_reads = res.k_reads;
    }
  }
  std::vector<Interval> writes;
  writes.reserve(work.size());
  for (const CoreWork& c : work) writes.push_back(Interval{c.ofm_addr, c.ofm_addr + c.ofm_span});
  rec.wrote(writes);
  rec.group.push_back(std::move(kt));
}

// Appends items [0, count) to `list` and a step of `kind` that replays them
// (first = their index in `list`); returns the step.
template <class T>
const PlanStep& append_step(PlanData& plan, PlanStep::Kind kind, std::vector<T>& list,
                            const T* items, int count) {
  PlanStep step;
  step.kind = kind;
  step.first = int(list.size());
  step.count = count;
  list.insert(list.end(), items, items + count);
  plan.steps.push_back(step);
  return plan.steps.back();
}

void record_copy(Recorder& rec, uint32_t word, uint64_t src, uint64_t dst, uint64_t len) {
  CopyTrace c;
  c.word = word;
  c.src = rec.ref(src);
  c.dst = rec.ref(dst);
  c.len = len;
  rec.wrote(Interval{dst, dst + len});
  flush_group(rec);
  append_step(*rec.plan, PlanStep::Kind::kCopy, rec.plan->copies, &c, 1);
}

void record_vnchwconv(Recorder& rec, VnchwTrace t, uint64_t s0, uint64_t d0, const Interval& rd,
                      const Interval& wr) {
  t.src = rec.ref(s0);
  t.dst = rec.ref(d0);
  // Replayed from one base per operand: every block must be in its region.
  if (t.src.region < 0 || t.dst.region < 0 || rec.ref(rd.hi - 1).region != t.src.region ||
      rec.ref(wr.hi - 1).region != t.dst.region) {
    if (rec.unsupported.empty()) rec.unsupported = "an NPU_OP_VNCHWCONV operand across regions";
  }
  rec.wrote(wr);
  flush_group(rec);
  append_step(*rec.plan, PlanStep::Kind::kVnchwconv, rec.plan->vnchwconvs, &t, 1);
}

// ---------------------------------------------------------------------------
// Merging the commands of a layer.

namespace {

// The layer a command belongs to: everything but its tile, its channel group
// and the core split. Two commands of one layer agree on all of it.
bool same_layer(const Setup& a, const Setup& b) {
  const ElementwiseParams& x = a.ew;
  const ElementwiseParams& y = b.ew;
  return a.op == b.op && a.fam == b.fam && a.act == b.act && a.quant_en == b.quant_en &&
         a.bias_en == b.bias_en && a.pool_mode == b.pool_mode && a.kx == b.kx && a.ky == b.ky &&
         a.sx == b.sx && a.sy == b.sy && a.pad_l == b.pad_l && a.pad_t == b.pad_t &&
         a.pad_r == b.pad_r && a.pad_b == b.pad_b && a.in_w == b.in_w && a.in_h == b.in_h &&
         a.out_w == b.out_w && a.out_h == b.out_h && a.in_zp == b.in_zp && a.out_zp == b.out_zp &&
         a.act_min == b.act_min && a.act_max == b.act_max && a.in_pix == b.in_pix &&
         a.in_row == b.in_row && a.out_pix == b.out_pix && a.out_row == b.out_row &&
         a.k_pitch == b.k_pitch && a.depth_mult == b.depth_mult && a.needs_bias == b.needs_bias &&
         a.needs_quant == b.needs_quant && a.needs_lut == b.needs_lut &&
         a.real_scale == b.real_scale && a.fp32_scale == b.fp32_scale && a.im2col == b.im2col &&
         a.mac_fp32 == b.mac_fp32 && a.mac_fp32_order == b.mac_fp32_order &&
         a.kblock_log2 == b.kblock_log2 &&
         a.kblock_tail_log2 == b.kblock_tail_log2 && a.kblock_split == b.kblock_split &&
         a.mul32 == b.mul32 && a.i16 == b.i16 && a.elem == b.elem && a.out_elem == b.out_elem &&
         a.mul_s16_s8 == b.mul_s16_s8 &&
         a.quant_entries == b.quant_entries && a.b_zp == b.b_zp && a.ew_fp32 == b.ew_fp32 &&
         a.pool_fp32 == b.pool_fp32 && a.pool_fp32_mode == b.pool_fp32_mode &&
         a.u8_domain == b.u8_domain && a.int4 == b.int4 &&
         a.rgb == b.rgb && a.bias_shift == b.bias_shift && a.out_shift == b.out_shift &&
         a.q7_act == b.q7_act && a.table16 == b.table16 && a.act_int_w == b.act_int_w && x.mode == y.mode &&
         x.input1_offset == y.input1_offset && x.input2_offset == y.input2_offset &&
         x.left_shift == y.left_shift && x.input1_multiplier == y.input1_multiplier &&
         x.input1_shift == y.input1_shift && x.input2_multiplier == y.input2_multiplier &&
         x.input2_shift == y.input2_shift && region_of(a.a_in) == region_of(b.a_in) &&
         region_of(a.a_out) == region_of(b.a_out) && region_of(a.a_k) == region_of(b.a_k);
}

// Families whose input channels follow their output channels (a channel
// group reads its own input channels); the others read every input channel.
bool channelwise(Family f) {
  return f == Family::kDepthwise || f == Family::kPool || f == Family::kElementwise ||
         f == Family::kActivation;
}

// A command's output channel offset within its layer: the channel its
// OUT_DMA_ADDR (pixel (0, 0)) starts at, relative to `base`.
// In output channels (elements of s.out_elem bytes); -1 when not a whole channel.
int64_t channel_offset(const Setup& s, uint64_t base) {
  const int64_t bytes = int64_t(region_offset(s.a_out)) - int64_t(base);
  return bytes % s.out_elem == 0 ? bytes / s.out_elem : -1;
}

struct Box {
  int y0, h, x0, w, c0, nc;
};

// Whether `boxes` partition [0, H) x [0, W) x [0, C) exactly: every cell of
// the grid their edges cut is covered once.
bool partitions(const std::vector<Box>& boxes, int H, int W, int C) {
  std::vector<int> ys{0, H}, xs{0, W}, cs{0, C};
  for (const Box& b : boxes) {
    if (b.h < 1 || b.w < 1 || b.nc < 1 || b.y0 < 0 || b.x0 < 0 || b.c0 < 0 ||
        int64_t(b.y0) + b.h > H || int64_t(b.x0) + b.w > W || int64_t(b.c0) + b.nc > C) {
      return false;
    }
    // Neighbouring boxes often share edges: skip a repeat of the last edge.
    auto edges = [](std::vector<int>& v, int a, int b) {
      if (v.back() != a) v.push_back(a);
      if (v.back() != b) v.push_back(b);
    };
    edges(ys, b.y0, b.y0 + b.h);
    edges(xs, b.x0, b.x0 + b.w);
    edges(cs, b.c0, b.c0 + b.nc);
  }
  for (auto* v : {&ys, &xs, &cs}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  const size_t ny = ys.size() - 1, nx = xs.size() - 1, nc = cs.size() - 1;
  if (ny * nx * nc > (size_t(1) << 24)) return false;  // too fine a grid to check cheaply
  std::vector<uint8_t> hits(ny * nx * nc, 0);
  auto index = [](const std::vector<int>& v, int x) {
    return size_t(std::lower_bound(v.begin(), v.end(), x) - v.begin());
  };
  for (const Box& b : boxes) {
    const size_t y1 = index(ys, b.y0), y2 = index(ys, b.y0 + b.h);
    const size_t x1 = index(xs, b.x0), x2 = index(xs, b.x0 + b.w);
    const size_t c1 = index(cs, b.c0), c2 = index(cs, b.c0 + b.nc);
    for (size_t y = y1; y < y2; ++y) {
      for (size_t x = x1; x < x2; ++x) {
        for (size_t c = c1; c < c2; ++c) {
          if (++hits[(y * nx + x) * nc + c] > 1) return false;
        }
      }
    }
  }
  return std::all_of(hits.begin(), hits.end(), [](uint8_t v) { return v == 1; });
}

// Per-channel data assembled from the tiles' K areas, each channel's entry
// checked equal wherever several tiles hold it.
class Assembly {
 public:
  Assembly(size_t channels, size_t entry_bytes)
      : entry_(entry_bytes), data_(channels * entry_bytes), filled_(channels, 0) {}
  // Entries for channels [c0, c0 + n) at `src` (entry_bytes each); false on a mismatch.
  bool put(int64_t c0, int64_t n, const uint8_t* src) {
    if (n <= 0) return true;
    // Whole runs at once where every entry is filled already (another tile
    // of the layer held the same channels) or none is.
    uint8_t* run = data_.data() + size_t(c0) * entry_;
    const uint8_t* f = filled_.data() + c0;
    const size_t all = size_t(std::count(f, f + n, uint8_t(1)));
    if (all == size_t(n)) return std::memcmp(run, src, size_t(n) * entry_) == 0;
    if (all == 0) {
      std::memcpy(run, src, size_t(n) * entry_);
      std::fill(filled_.begin() + c0, filled_.begin() + c0 + n, uint8_t(1));
      return true;
    }
    for (int64_t i = 0; i < n; ++i) {
      uint8_t* dst = data_.data() + size_t(c0 + i) * entry_;
      if (filled_[size_t(c0 + i)]) {
        if (std::memcmp(dst, src + size_t(i) * entry_, entry_) != 0) return false;
      } else {
        std::memcpy(dst, src + size_t(i) * entry_, entry_);
        filled_[size_t(c0 + i)] = 1;
      }
    }
    return true;
  }
  const std::vector<uint8_t>& data() const { return data_; }
  std::vector<uint8_t> take() { return std::move(data_); }

 private:
  size_t entry_;
  std::vector<uint8_t> data_;
  std::vector<uint8_t> filled_;
};

using Ranges = std::vector<std::pair<RegionRef, uint64_t>>;  // (start, bytes)

// Appends [at, at + n) to `v`, joined with the last range where the two
// overlap or touch: overlap() below gives the same answer for the union.
void add_range(Ranges& v, const RegionRef& at, uint64_t n) {
  if (!v.empty() && n > 0) {
    auto& [r, m] = v.back();
    if (m > 0 && r.region == at.region && at.offset <= r.offset + m && r.offset <= at.offset + n) {
      const uint64_t lo = std::min(r.offset, at.offset);
      m = std::max(r.offset + m, at.offset + n) - lo;
      r.offset = lo;
      return;
    }
  }
  v.push_back({at, n});
}

// The ranges the commands of a layer read and write, for the overlap test.
void group_ranges(const std::vector<KernelTrace>& group, Ranges* reads, Ranges* writes) {
  for (const KernelTrace& kt : group) {
    for (const TileTrace& t : kt.tiles) {
      add_range(*reads, t.fm.at, t.fm.span());
      if (t.work.load_temp) add_range(*reads, t.temp.at, t.temp.span());
      for (const KernelRead& r : t.k_reads) add_range(*reads, r.src.at, r.src.span());
      const uint64_t out_span = uint64_t(t.work.h - 1) * kt.s.out_row +
                                uint64_t(kt.s.w - 1) * kt.s.out_pix +
                                uint64_t(t.work.noc) * uint64_t(kt.s.out_elem);
      add_range(*writes, t.out, out_span);
    }
  }
}

// Whether a byte of some range of `a` is in some range of `b`: the ranges of
// `b` merged per region, each of `a` looked up in them (n log n).
bool overlap(const Ranges& a, const Ranges& b) {
  std::vector<std::pair<std::pair<int, uint64_t>, uint64_t>> ranges;  // ((region, lo), hi)
  ranges.reserve(b.size());
  for (const auto& [r, n] : b) ranges.push_back({{r.region, r.offset}, r.offset + n});
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<std::pair<int, uint64_t>, uint64_t>> merged;
  for (const auto& x : ranges) {
    if (!merged.empty() && merged.back().first.first == x.first.first &&
        x.first.second <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, x.second);
    } else {
      merged.push_back(x);
    }
  }
  for (const auto& [r, n] : a) {
    // The first merged range starting after r.offset; its predecessor may hold it.
    auto it = std::upper_bound(merged.begin(), merged.end(),
                               std::make_pair(std::make_pair(r.region, r.offset), ~uint64_t(0)));
    if (it != merged.end() && it->first.first == r.region && it->first.second < r.offset + n) {
      return true;
    }
    if (it != merged.begin()) {
      --it;
      if (it->first.first == r.region && r.offset < it->second) return true;
    }
  }
  return false;
}

int64_t align64(int64_t v) { return align_up(v, kKAreaAlignment); }

// Where a tile puts its kernel data into the layer's: (kernel data, first
// channel, channels, its K-area offsets).
using Put = std::array<int64_t, 10>;

// A set of placements, open addressing: no allocation per insert.
class PutSet {
 public:
  // False when `p` is in the set already.
  bool insert(const Put& p) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash(p) & mask;; i = (i + 1) & mask) {
      if (!used_[i]) {
        used_[i] = 1;
        slots_[i] = p;
        ++count_;
        return true;
      }
      if (slots_[i] == p) return false;
    }
  }

 private:
  static size_t hash(const Put& p) {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : p) h = (h ^ uint64_t(v)) * 1099511628211ull;
    return size_t(h ^ (h >> 31));
  }
  void grow() {
    std::vector<Put> old;
    std::vector<uint8_t> old_used;
    old.swap(slots_);
    old_used.swap(used_);
    const size_t n = old.empty() ? 64 : old.size() * 2;
    slots_.assign(n, Put{});
    used_.assign(n, 0);
    count_ = 0;
    for (size_t i = 0; i < old.size(); ++i) {
      if (old_used[i]) insert(old[i]);
    }
  }
  std::vector<Put> slots_;
  std::vector<uint8_t> used_;
  size_t count_ = 0;
};

// Whether tile `t` of a non-im2col matmul command whose first output channel
// in the layer is `c_base` reads B as the layer's columns [c_base + oc0,
// + noc) of one [K, *] matrix at column 0 `*b_at` (set by the first tile),
// all tiles alike at run time (`*b_runtime` 1) or none (0).
bool b_column_read(const Setup& s, const TileTrace& t, int64_t c_base, int* b_runtime,
                   RegionRef* b_at) {
  const int runtime = t.k_reads.empty() ? 0 : 1;
  if (*b_runtime >= 0 && runtime != *b_runtime) return false;
  *b_runtime = runtime;
  if (!runtime) return true;
  if (t.k_reads.size() != 1) return false;
  const KernelRead& r = t.k_reads[0];
  const TileWork& w = t.work;
  const int64_t col = c_base + w.oc0;
  if (r.sram != w.w_lo || r.src.rows != s.mat_k || r.src.cols != 1 || r.src.bytes != w.noc ||
      r.src.row_pitch != s.k_pitch || r.src.at.offset < uint64_t(col) ||
      w.weight_count != s.mat_k * w.noc) {
    return false;
  }
  const RegionRef at{r.src.at.region, r.src.at.offset - uint64_t(col)};
  if (b_at->region >= 0 && (at.region != b_at->region || at.offset != b_at->offset)) return false;
  *b_at = at;
  return true;
}

// The merged call of a group, or false when the group is not provably one layer.
bool merge_group(const std::vector<KernelTrace>& group, std::vector<KernelData>& kernel_data,
                 PlanCall* out) {
  const KernelTrace& first = group[0];
  const Setup& s0 = first.s;
  const Family fam = s0.fam;
  // A matrix product whose B is an activation (MEAN's ones-operand matmul, the
  // channel split of NPU_OP_MATMUL over the cores): every tile's one run-time
  // K part is its B columns [K, noc] at B's row pitch, and the merged call
  // reads B's columns [0, C) from where the tiles read theirs. A B from the
  // immutable regions is in the kernel data like a convolution's weights.
  const bool b_matrix = fam == Family::kMatmul && !s0.im2col;
  if (b_matrix && s0.elem != 1) return false;
  int b_runtime = -1;  // 1: every tile reads B at run time, 0: none does
  RegionRef b_at;      // B's column 0 (b_runtime)
  // The layer's output base: the smallest command base; every command's
  // offset from it is its first output channel.
  uint64_t out_base = ~uint64_t(0);
  for (const KernelTrace& kt : group) out_base = std::min<uint64_t>(out_base, region_offset(kt.s.a_out));
  const int m = fam == Family::kDepthwise ? s0.depth_mult : 1;
  std::vector<Box> boxes;
  int channels = 0;
  int64_t in_base = -1, temp_base = -1;
  for (const KernelTrace& kt : group) {
    const Setup& s = kt.s;
    const int64_t c_base = channel_offset(s, out_base);
    if (c_base < 0 || (s0.out_w > 1 && (c_base + s.out_c) * s0.out_elem > int64_t(s0.out_pix))) {
      return false;
    }
    if (channelwise(fam)) {
      if (c_base % m != 0 || s.out_c != s.in_c * m) return false;
      // Output channel c reads input channel c / m of the same pixel: the
      // command's input channels must lie inside one input pixel (two
      // commands writing interleaved output pixels, e.g. the phases of a
      // strided output, read different pixels, not channels of one).
      if ((c_base / m + int64_t(s.in_c)) * s0.elem > int64_t(s0.in_pix)) return false;
      const int64_t ib = int64_t(region_offset(s.a_in)) - c_base / m * s0.elem;
      if (in_base >= 0 && ib != in_base) return false;
      in_base = ib;
    } else {
      if (s.in_c != s0.in_c || region_offset(s.a_in) != region_offset(s0.a_in)) return false;
      in_base = region_offset(s0.a_in);
    }
    if (fam == Family::kElementwise) {
      const int64_t tb = int64_t(region_offset(s.a_k)) - c_base * s0.elem;
      if (temp_base >= 0 && tb != temp_base) return false;
      temp_base = tb;
    }
    if (b_matrix && (s.mat_k != s0.mat_k || s.k_pitch != s0.k_pitch)) return false;
    const size_t first_box = boxes.size();
    for (const TileTrace& t : kt.tiles) {
      if (b_matrix) {
        if (!b_column_read(s, t, c_base, &b_runtime, &b_at)) return false;
      } else if (!t.k_reads.empty()) {
        return false;
      }
      const Box b{t.work.y0, t.work.h, s.x0, s.w, int(c_base) + t.work.oc0, t.work.noc};
      channels = std::max(channels, b.c0 + b.nc);
      // A tile that continues the last box of its command (the next rows of
      // a height split, the next channels of a kernel split) joins it: the
      // cells covered, and how often, stay the same.
      if (boxes.size() > first_box && b.h >= 1 && b.nc >= 1) {
        Box& l = boxes.back();
        if (l.h >= 1 && l.nc >= 1 && l.x0 == b.x0 && l.w == b.w) {
          if (l.c0 == b.c0 && l.nc == b.nc && l.y0 + l.h == b.y0) {
            l.h += b.h;
            continue;
          }
          if (l.y0 == b.y0 && l.h == b.h && l.c0 + l.nc == b.c0) {
            l.nc += b.nc;
            continue;
          }
        }
      }
      boxes.push_back(b);
    }
  }
  if (in_base < 0 || !partitions(boxes, s0.out_h, s0.out_w, channels)) return false;
  if (s0.out_w > 1 && uint64_t(channels) * uint64_t(s0.out_elem) > s0.out_pix) return false;
  {
    Ranges reads, writes;
    group_ranges(group, &reads, &writes);
    if (overlap(reads, writes)) return false;
  }

  // The layer as one command of one core.
  PlanCall call;
  Setup& s = call.s;
  s = s0;
  s.mode = value_of(BroadcastMode::NONE);
  s.ncores = 1;
  s.y0 = 0;
  s.h = s0.out_h;
  s.x0 = 0;
  s.w = s0.out_w;
  s.out_c = channels;
  s.in_c = channelwise(fam) ? channels / m : s0.in_c;
  s.ix0 = -s0.pad_l;
  s.iy0 = -s0.pad_t;
  s.iw = (s.w - 1) * s.sx + s.kx;
  s.ih = (s.h - 1) * s.sy + s.ky;
  s.fm_upd = s.k_upd = true;
  if (s0.im2col) {
    // im2col + matrix with bias is the convolution's arithmetic, bit for bit
    // (docs/device_model.md §4): the merged call runs the convolution.
    s.op = Opcode::NPU_OP_CONV;
    s.fam = Family::kConv;
    s.im2col = false;
    s.mat_k = 0;
  }
  TileWork& c = call.t.work;
  c.core = 0;
  c.y0 = 0;
  c.h = s.h;
  c.oc0 = 0;
  c.noc = channels;
  c.iy0 = s.iy0;
  c.ih = s.ih;
  c.vy0 = 0;
  c.vx0 = 0;
  if (is_window(fam) || s0.im2col) {
    // The input rows and columns the layer's windows reach (an input larger
    // than the windows need keeps its unread tail out of the unit's view).
    c.vh = int(std::min<int64_t>(s0.in_h, int64_t(s0.out_h - 1) * s0.sy + s0.ky - s0.pad_t));
    c.vw = int(std::min<int64_t>(s0.in_w, int64_t(s0.out_w - 1) * s0.sx + s0.kx - s0.pad_l));
    c.pad_t = s0.pad_t;
    c.pad_b = s0.pad_b;
    c.pad_l = s0.pad_l;
    c.pad_r = s0.pad_r;
    if (c.vh < 1 || c.vw < 1 ||
        (c.vh + c.pad_t + c.pad_b - s0.ky) / s0.sy + 1 != s0.out_h ||
        (c.vw + c.pad_l + c.pad_r - s0.kx) / s0.sx + 1 != s0.out_w) {
      return false;
    }
  } else {
    c.vh = s0.out_h;  // pointwise: the whole layer's rows and columns
    c.vw = s0.out_w;
  }
  c.load_fm = true;
  c.load_temp = fam == Family::kElementwise;
  call.t.fm.at = RegionRef{region_of(s0.a_in), uint64_t(in_base)};
  call.t.fm.rows = c.vh;
  call.t.fm.cols = c.vw;
  call.t.fm.bytes = int64_t(s.in_c) * s0.elem;
  call.t.fm.row_pitch = s0.in_row;
  call.t.fm.pix_pitch = s0.in_pix;
  if (c.load_temp) {
    const bool one_pixel = s0.k_pitch == 0;
    call.t.temp.at = RegionRef{region_of(s0.a_k), uint64_t(temp_base)};
    call.t.temp.rows = one_pixel ? 1 : c.vh;
    call.t.temp.cols = one_pixel ? 1 : c.vw;
    call.t.temp.bytes = int64_t(s.in_c) * s0.elem;
    call.t.temp.pix_pitch = s0.k_pitch;
    call.t.temp.row_pitch = s0.k_pitch * uint64_t(s0.in_w);
  }
  call.t.out = RegionRef{region_of(s0.a_out), out_base};

  // The K area: weights, bias, multipliers + shifts or scales, LUT.
  const int64_t taps = int64_t(s0.ky) * s0.kx;
  int64_t wbytes = 0;  // weights per output channel (depthwise: per channel and tap)
  switch (fam) {
    case Family::kConv: wbytes = taps * s0.in_c; break;
    case Family::kDepthwise: wbytes = taps; break;
    case Family::kFullyConnected: wbytes = s0.in_c; break;
    case Family::kMatmul:  // a K-byte column of B per channel (read at run time: none here)
      wbytes = b_runtime == 1 ? 0 : s0.mat_k;
      break;
    default: break;
  }
  const bool per_channel_quant = s0.quant_entries == 0;
  const int64_t quant_n = per_channel_quant ? channels : s0.quant_entries;
  Assembly weights(size_t(channels), size_t(std::max<int64_t>(wbytes, 1)));
  // Bias entries: int32, or int64 with 16-bit feature maps (NACC_SPEC §9).
  Assembly bias(size_t(quant_n), s0.i16 ? 8 : 4), mul(size_t(quant_n), 4),
      shift(size_t(quant_n), 4);
  const size_t scale_bytes = size_t(scale_entry_bytes(s0));
  Assembly scale(size_t(quant_n), scale_bytes);
  Assembly lut(1, size_t(limits::kLutEntries));
  std::vector<uint8_t> tmp, unpacked;
  // Tiles that put the same kernel data at the same channels (the cores of a
  // height split, the row bands of a layer) put the same bytes: once is enough.
  PutSet put_once;
  // A command whose tiles make the placements of the command before (the
  // row bands of a kernel split, its K areas resident) puts nothing new.
  std::vector<std::pair<Put, const TileTrace*>> puts, prev_puts;
  auto same_puts = [&] {
    if (puts.size() != prev_puts.size()) return false;
    for (size_t i = 0; i < puts.size(); ++i) {
      if (puts[i].first != prev_puts[i].first) return false;
    }
    return true;
  };
  for (const KernelTrace& kt : group) {
    const int64_t c_base = channel_offset(kt.s, out_base);
    puts.clear();
    for (const TileTrace& t : kt.tiles) {
      if (t.kdata < 0) {
        if (!t.work.kern.empty()) return false;
        continue;
      }
      const TileWork& w = t.work;
      const Put put{t.kdata, c_base + w.oc0, w.noc, w.w_lo, w.weight_count, w.bias_lo,
                    w.mul_lo, w.shift_lo, w.scale_lo, w.lut_lo};
      // The cores of a height split repeat the last tile's.
      if (!puts.empty() && puts.back().first == put) continue;
      puts.emplace_back(put, &t);
    }
    if (same_puts()) continue;
    prev_puts.swap(puts);
    for (const auto& [put, tile] : prev_puts) {
      if (!put_once.insert(put)) continue;
      const TileTrace& t = *tile;
      const KernelData& kd = kernel_data[size_t(t.kdata)];
      auto at = [&](int64_t sram) { return kd.bytes.data() + (sram - kd.lo); };
      const TileWork& w = t.work;
      const int64_t c0 = put[1];
      const int64_t q0 = per_channel_quant ? c0 : 0;
      const int64_t qn = per_channel_quant ? w.noc : s0.quant_entries;
      if (wbytes > 0) {
        const uint8_t* src = at(w.w_lo);
        if (s0.int4) {
          // The merged call holds the weights unpacked (int8): the plan's
          // kernel data is host memory, not the K area (NACC_SPEC §9).
          unpacked.resize(size_t(w.weight_count));
          unpack_int4(reinterpret_cast<const int8_t*>(src), w.weight_count,
                      reinterpret_cast<int8_t*>(unpacked.data()));
          src = unpacked.data();
        }
        if (fam == Family::kDepthwise) {
          // [ky, kx, noc] -> per channel, its taps.
          tmp.assign(size_t(w.noc * taps), 0);
          for (int64_t tap = 0; tap < taps; ++tap) {
            for (int64_t ch = 0; ch < w.noc; ++ch) tmp[size_t(ch * taps + tap)] = src[tap * w.noc + ch];
          }
          src = tmp.data();
        } else if (fam == Family::kMatmul) {
          // B [K, noc] -> per channel, its column.
          tmp.assign(size_t(w.noc * wbytes), 0);
          for (int64_t kk = 0; kk < wbytes; ++kk) {
            for (int64_t ch = 0; ch < w.noc; ++ch) tmp[size_t(ch * wbytes + kk)] = src[kk * w.noc + ch];
          }
          src = tmp.data();
        }
        if (!weights.put(c0, w.noc, src)) return false;
      }
      if (w.bias_lo >= 0 && !bias.put(q0, qn, at(w.bias_lo))) return false;
      if (w.mul_lo >= 0 && !mul.put(q0, qn, at(w.mul_lo))) return false;
      if (w.shift_lo >= 0 && !shift.put(q0, qn, at(w.shift_lo))) return false;
      if (w.scale_lo >= 0 && !scale.put(q0, qn, at(w.scale_lo))) return false;
      if (w.lut_lo >= 0 && !lut.put(0, 1, at(w.lut_lo))) return false;
    }
  }
  const TileWork& w0 = first.tiles[0].work;
  KernelData kd;
  kd.lo = 0;
  int64_t pos = 0;
  auto place = [&](bool used, const std::vector<uint8_t>& bytes, int64_t* lo) {
    if (!used) return;
    pos = align64(pos);
    *lo = pos;
    kd.bytes.resize(size_t(pos));
    kd.bytes.insert(kd.bytes.end(), bytes.begin(), bytes.end());
    pos += int64_t(bytes.size());
  };
  if (wbytes > 0) {
    std::vector<uint8_t> wv = weights.take();
    if (fam == Family::kDepthwise) {
      // Back to [ky, kx, C].
      std::vector<uint8_t> t2(wv.size());
      for (int64_t ch = 0; ch < channels; ++ch) {
        for (int64_t tap = 0; tap < taps; ++tap) t2[size_t(tap * channels + ch)] = wv[size_t(ch * taps + tap)];
      }
      wv.swap(t2);
    } else if (b_matrix) {
      // Back to B's [K, C].
      std::vector<uint8_t> t2(wv.size());
      for (int64_t ch = 0; ch < channels; ++ch) {
        for (int64_t kk = 0; kk < wbytes; ++kk) {
          t2[size_t(kk * channels + ch)] = wv[size_t(ch * wbytes + kk)];
        }
      }
      wv.swap(t2);
    }
    // Conv and FC keep [C, ...]; the im2col matrix column [C, K] is the
    // convolution's OHWI filter ([C, KH, KW, C_in], K = (ky * KW + kx) * C_in + ci).
    c.w_lo = 0;
    c.weight_count = int64_t(wv.size());
    pos = int64_t(wv.size());
    kd.bytes = std::move(wv);
  } else if (b_runtime == 1) {
    // B's [K, C] bytes, loaded by the replay from where the tiles read theirs.
    c.w_lo = 0;
    c.weight_count = s0.mat_k * channels;
    pos = c.weight_count;
    kd.bytes.assign(size_t(pos), 0);
    KernelRead r;
    r.src.at = b_at;
    r.src.rows = int(s0.mat_k);
    r.src.bytes = channels;
    r.src.row_pitch = s0.k_pitch;
    r.sram = 0;
    call.t.k_reads.push_back(r);
  }
  s.int4 = false;
  c.int4 = false;
  c.bias_lo = c.mul_lo = c.shift_lo = c.scale_lo = c.lut_lo = -1;
  place(w0.bias_lo >= 0, bias.data(), &c.bias_lo);
  place(w0.mul_lo >= 0, mul.data(), &c.mul_lo);
  place(w0.shift_lo >= 0, shift.data(), &c.shift_lo);
  place(w0.scale_lo >= 0, scale.data(), &c.scale_lo);
  place(w0.lut_lo >= 0, lut.data(), &c.lut_lo);
  c.quant_count = quant_n;
  c.kern = SramRange{0, pos};
  if (pos > 0) {
    call.t.kdata = int(kernel_data.size());
    kernel_data.push_back(std::move(kd));
  }
  *out = std::move(call);
  return true;
}

}  // namespace

// The call's weights packed once for its unit's fast path (call.prepared),
// when its kernel data never changes.
static void prepare_call(const PlanData& plan, PlanCall& call) {
  if (call.t.kdata < 0 || !call.t.k_reads.empty()) return;
  if (call.s.i16) return;  // the 16-bit units have no packed form
  const KernelData& kd = plan.kernel_data[size_t(call.t.kdata)];
  const TileWork& w = call.t.work;
  const Setup& s = call.s;
  const auto* k = kd.bytes.data() - kd.lo;
  const auto* weights = reinterpret_cast<const int8_t*>(k + w.w_lo);
  std::vector<int8_t> unpacked;  // an int4 call's unit unpacks; its fast path packs int8
  if (s.int4) {
    unpacked.resize(size_t(w.weight_count));
    unpack_int4(weights, w.weight_count, unpacked.data());
    weights = unpacked.data();
  }
  switch (s.fam) {
    case Family::kConv:
      if (s.mac_fp32) {  // the float32 weights s_w[c] * w in ONNX's K order
        call.prepared = prepare_conv2d_mac_fp32(
            Shape4{w.noc, s.ky, s.kx, s.in_c}, weights,
            w.scale_lo >= 0 ? reinterpret_cast<const float*>(k + w.scale_lo) : nullptr);
        break;
      }
      call.prepared = prepare_conv2d_s8(Shape4{w.noc, s.ky, s.kx, s.in_c}, weights);
      break;
    case Family::kFullyConnected:
      if (s.mac_fp32) {  // the float32 weights s_w[n] * w, laid out for the sum order
        call.prepared = prepare_fully_connected_mac_fp32(
            s.in_c, w.noc, weights,
            w.scale_lo >= 0 ? reinterpret_cast<const float*>(k + w.scale_lo) : nullptr,
            s.mac_fp32_order);
        break;
      }
      call.prepared = prepare_fully_connected_s8(s.in_c, w.noc, weights);
      break;
    case Family::kDepthwise: {
      if (s.mac_fp32) {
        call.prepared = prepare_depthwise_mac_fp32(
            Shape4{1, s.ky, s.kx, w.noc}, weights,
            w.scale_lo >= 0 ? reinterpret_cast<const float*>(k + w.scale_lo) : nullptr);
        break;
      }
      OutputStage os;
      os.multiplier = w.mul_lo >= 0 ? reinterpret_cast<const int32_t*>(k + w.mul_lo) : nullptr;
      os.shift = w.shift_lo >= 0 ? reinterpret_cast<const int32_t*>(k + w.shift_lo) : nullptr;
      if (s.fp32_scale) {
        os.kind = OutputStageKind::kFloat32;
        os.float_scale = reinterpret_cast<const float*>(k + w.scale_lo);
      } else if (s.real_scale) {
        os.kind = OutputStageKind::kRealScale;
      }
      call.prepared = prepare_depthwise_conv2d_s8(
          Shape4{1, s.ky, s.kx, w.noc}, weights,
          w.bias_lo >= 0 ? reinterpret_cast<const int32_t*>(k + w.bias_lo) : nullptr, os);
      break;
    }
    default: break;
  }
}

namespace {

// ---------------------------------------------------------------------------
// Identity copy passes as strided byte copies (docs/host_speed.md "Copy
// passes"). The compiler's copy passes (layout conversion, transpose, space /
// depth, resize replicas) are 1x1 max pools over the full int8 range: each
// output byte is its input byte. Run as unit calls, a pass of one-byte pixels
// costs a pool call per tile; as one strided copy per layer, one pass over
// the bytes.

// Whether the command computes out = in for every byte: a pointwise max pool
// of int8 with no output stage, checked on its own unit (every byte value in
// every channel through run_unit with the command's Setup).
bool identity_copy(const Setup& s) {
  if (s.fam != Family::kPool || s.op != Opcode::NPU_OP_POOL ||
      s.pool_mode != value_of(PoolMode::MAX) || s.kx != 1 || s.ky != 1 || s.sx != 1 ||
      s.sy != 1 || s.pad_l != 0 || s.pad_t != 0 || s.pad_r != 0 || s.pad_b != 0 || s.i16 ||
      s.elem != 1 || s.out_elem != 1 || s.pool_fp32 || s.u8_domain || s.im2col || s.int4 ||
      s.needs_bias || s.needs_quant || s.needs_lut || s.act_min > -128 || s.act_max < 127 ||
      s.in_c < 1 || s.out_c != s.in_c) {
    return false;
  }
  constexpr int kPixels = 256;
  Setup p = s;
  p.h = 1;
  p.w = kPixels;
  TileWork c;
  c.h = c.vh = 1;
  c.vw = kPixels;
  c.noc = s.in_c;
  std::vector<int8_t> in(size_t(kPixels) * size_t(s.in_c)), out(in.size(), 0);
  for (size_t i = 0; i < in.size(); ++i) {
    in[i] = int8_t(uint8_t((i / size_t(s.in_c) + i % size_t(s.in_c)) & 255u));
  }
  TileBuffers b;
  b.in = in.data();
  b.out = out.data();
  try {
    run_unit(p, c, b);
  } catch (const std::exception&) {
    return false;
  }
  return in == out;
}

// The tile as a strided copy (false: not a plain pixel-for-pixel copy).
bool tile_copy(const Setup& s, const TileTrace& t, StridedCopy* d) {
  const TileWork& c = t.work;
  if (c.load_temp || !t.k_reads.empty() || c.pad_t || c.pad_b || c.pad_l || c.pad_r ||
      c.vh != c.h || c.vw != s.w || c.noc != s.in_c || c.h < 1 || s.w < 1 ||
      t.fm.rows != c.h || t.fm.cols != s.w || t.fm.bytes != int64_t(c.noc) ||
      t.fm.at.region < 0 || t.out.region < 0) {
    return false;
  }
  d->src = t.fm.at;
  d->dst = t.out;
  d->n = {1, c.h, s.w};
  d->ss = {0, int64_t(t.fm.row_pitch), int64_t(t.fm.pix_pitch)};
  d->ds = {0, int64_t(s.out_row), int64_t(s.out_pix)};
  d->run = c.noc;
  return true;
}

// Joins `b` (the next copy in stream order) into `a` where the two are one
// copy: `b` continues one dimension of `a` (the next rows of a height split,
// the next column blocks, the next pass of a progression whose bases move by
// the same amount, e.g. one channel each), or `b` is `a` moved (a new
// dimension in a free slot). Both normalized (a count of 1 has stride 0).
bool join_as_is(StridedCopy& a, const StridedCopy& b) {
  const int64_t dsrc = int64_t(b.src.offset) - int64_t(a.src.offset);
  const int64_t ddst = int64_t(b.dst.offset) - int64_t(a.dst.offset);
  auto same_dim = [&](size_t j) {
    return a.n[j] == b.n[j] && a.ss[j] == b.ss[j] && a.ds[j] == b.ds[j];
  };
  for (size_t k = 0; k < 3; ++k) {
    // Continuing dimension k (one of `a` has, or one `b` has and `a` is one
    // element of: a block of one column before blocks of several).
    if (a.n[k] == 1 && b.n[k] == 1) continue;
    bool others = true;
    for (size_t j = 0; j < 3; ++j) others = others && (j == k || same_dim(j));
    if (!others) continue;
    const int64_t sk = a.n[k] > 1 ? a.ss[k] : b.ss[k], dk = a.n[k] > 1 ? a.ds[k] : b.ds[k];
    if (b.n[k] > 1 && (b.ss[k] != sk || b.ds[k] != dk)) continue;
    if (dsrc == a.n[k] * sk && ddst == a.n[k] * dk) {
      a.n[k] += b.n[k];
      a.ss[k] = sk;
      a.ds[k] = dk;
      return true;
    }
  }
  if (!(same_dim(0) && same_dim(1) && same_dim(2))) return false;
  for (size_t k = 0; k < 3; ++k) {
    if (a.n[k] != 1) continue;
    a.n[k] = 2;
    a.ss[k] = dsrc;
    a.ds[k] = ddst;
    return true;
  }
  return false;
}

// join_as_is with b's dimensions in any order (the loop order of a copy is
// free: its writes are disjoint and it reads none of them), so that a tile
// of one row joins a copy whose rows run in another slot.
bool join(StridedCopy& a, const StridedCopy& b) {
  if (a.src.region != b.src.region || a.dst.region != b.dst.region) return false;
  auto one_run = [](const StridedCopy& d) { return d.n[0] == 1 && d.n[1] == 1 && d.n[2] == 1; };
  if (one_run(a) && one_run(b) && b.src.offset == a.src.offset + uint64_t(a.run) &&
      b.dst.offset == a.dst.offset + uint64_t(a.run)) {
    a.run += b.run;  // the bytes after a's on both sides
    return true;
  }
  if (a.run != b.run) return false;
  std::array<size_t, 3> perm{0, 1, 2};
  do {
    StridedCopy c = b;
    for (size_t j = 0; j < 3; ++j) {
      c.n[j] = b.n[perm[j]];
      c.ss[j] = b.ss[perm[j]];
      c.ds[j] = b.ds[perm[j]];
    }
    if (join_as_is(a, c)) return true;
  } while (std::next_permutation(perm.begin(), perm.end()));
  return false;
}

// Folds dimensions whose bytes continue the run or the next dimension, and
// picks the innermost loop.
void normalize(StridedCopy& d) {
  for (bool folded = true; folded;) {  // a dimension whose elements continue the run
    folded = false;
    for (int j = 0; j < 3; ++j) {
      if (d.n[size_t(j)] > 1 && d.ss[size_t(j)] == d.run && d.ds[size_t(j)] == d.run) {
        d.run *= d.n[size_t(j)];
        d.n[size_t(j)] = 1;
        folded = true;
      }
    }
  }
  for (int j = 0; j < 3; ++j) {
    if (d.n[size_t(j)] == 1) d.ss[size_t(j)] = d.ds[size_t(j)] = 0;
  }
  // Dimension j continues dimension k (k's stride times its count is j's).
  for (int j = 0; j < 3; ++j) {
    for (int k = 0; k < 3; ++k) {
      if (j == k || d.n[size_t(j)] == 1 || d.n[size_t(k)] == 1) continue;
      if (d.ss[size_t(j)] == d.n[size_t(k)] * d.ss[size_t(k)] &&
          d.ds[size_t(j)] == d.n[size_t(k)] * d.ds[size_t(k)]) {
        d.n[size_t(k)] *= d.n[size_t(j)];
        d.n[size_t(j)] = 1;
        d.ss[size_t(j)] = d.ds[size_t(j)] = 0;
      }
    }
  }
  int inner = 2;
  for (int j = 0; j < 3; ++j) {
    if (d.n[size_t(j)] > 1 &&
        (d.n[size_t(inner)] == 1 || std::llabs(d.ds[size_t(j)]) < std::llabs(d.ds[size_t(inner)]))) {
      inner = j;
    }
  }
  d.inner = inner;
}

// The layer held in rec.group as strided copies, where every command is an
// identity copy pass, every tile a plain copy, no byte is written twice and
// none of the layer's writes reaches its reads. False: the group stays as
// it is (merged or tile calls).
bool copy_group(Recorder& rec) {
  const std::vector<KernelTrace>& group = rec.group;
  if (!identity_copy(group[0].s)) return false;
  std::vector<StridedCopy> copies;
  // The commands of a layer agree on every field the unit reads but their
  // channels (same_layer): a command of the channels last checked is checked.
  int checked_c = group[0].s.in_c;
  for (const KernelTrace& kt : group) {
    if (kt.s.in_c != checked_c || kt.s.out_c != kt.s.in_c) {
      if (!identity_copy(kt.s)) return false;
      checked_c = kt.s.in_c;
    }
    for (const TileTrace& t : kt.tiles) {
      StridedCopy d;
      if (!tile_copy(kt.s, t, &d)) return false;
      normalize(d);
      copies.push_back(d);
    }
  }
  // Joined level by level (core rows, column blocks, row bands, passes)
  // while that makes fewer copies.
  for (size_t before = copies.size() + 1; copies.size() < before;) {
    before = copies.size();
    size_t n = 0;
    for (size_t i = 0; i < copies.size(); ++i) {
      if (n > 0 && join(copies[n - 1], copies[i])) {
        normalize(copies[n - 1]);
      } else {
        copies[n++] = copies[i];
      }
    }
    copies.resize(n);
  }
  {
    Ranges reads, writes;
    group_ranges(group, &reads, &writes);
    if (overlap(reads, writes)) return false;
  }
  // Every written byte once: a map of the written span of each region.
  std::map<int, std::pair<uint64_t, uint64_t>> span;  // region -> [lo, hi)
  for (const KernelTrace& kt : group) {
    for (const TileTrace& t : kt.tiles) {
      const uint64_t hi = t.out.offset + uint64_t(t.work.h - 1) * kt.s.out_row +
                          uint64_t(kt.s.w - 1) * kt.s.out_pix + uint64_t(t.work.noc);
      auto [it, fresh] = span.try_emplace(t.out.region, t.out.offset, hi);
      if (!fresh) {
        it->second.first = std::min(it->second.first, t.out.offset);
        it->second.second = std::max(it->second.second, hi);
      }
    }
  }
  std::map<int, std::vector<uint8_t>> hit;
  for (const auto& [region, lohi] : span) hit[region].assign(size_t(lohi.second - lohi.first), 0);
  for (const KernelTrace& kt : group) {
    for (const TileTrace& t : kt.tiles) {
      std::vector<uint8_t>& h = hit[t.out.region];
      uint8_t* base = h.data() + (t.out.offset - span[t.out.region].first);
      for (int y = 0; y < t.work.h; ++y) {
        for (int x = 0; x < kt.s.w; ++x) {
          uint8_t* p = base + uint64_t(y) * kt.s.out_row + uint64_t(x) * kt.s.out_pix;
          for (int k = 0; k < t.work.noc; ++k) {
            if (p[k]++ != 0) return false;
          }
        }
      }
    }
  }
  PlanData& plan = *rec.plan;
  const PlanStep& step = append_step(plan, PlanStep::Kind::kStridedCopy, plan.strided_copies,
                                     copies.data(), int(copies.size()));
  plan.summary.kernel_commands += int(group.size());
  plan.summary.copy_pass_commands += int(group.size());
  plan.summary.strided_copies += step.count;
  rec.group.clear();
  return true;
}

void flush_group(Recorder& rec) {
  std::vector<KernelTrace>& group = rec.group;
  if (group.empty()) return;
  if (copy_group(rec)) return;
  PlanData& plan = *rec.plan;
  ExecutionPlan::Summary& sum = plan.summary;
  sum.kernel_commands += int(group.size());
  PlanCall merged;
  if (group.size() + group[0].tiles.size() > 2 && merge_group(group, rec.kernel_data, &merged)) {
    PlanStep step;
    step.first = int(plan.calls.size());
    step.count = 1;
    plan.calls.push_back(std::move(merged));
    plan.steps.push_back(step);
    sum.layer_calls += 1;
    sum.merged_commands += int(group.size());
  } else {
    Ranges reads, writes;
    std::vector<KernelTrace> one(1);
    for (KernelTrace& kt : group) {
      PlanStep step;
      step.first = int(plan.calls.size());
      step.count = int(kt.tiles.size());
      reads.clear();
      writes.clear();
      one[0].s = kt.s;
      one[0].tiles.swap(kt.tiles);
      group_ranges(one, &reads, &writes);
      one[0].tiles.swap(kt.tiles);
      step.stage_inputs = overlap(reads, writes);
      for (TileTrace& t : kt.tiles) plan.calls.push_back(PlanCall{kt.s, std::move(t), nullptr});
      plan.steps.push_back(step);
      sum.tile_calls += step.count;
    }
  }
  group.clear();
}

}  // namespace

std::unique_ptr<PlanData> make_plan(Recorder&& rec) {
  flush_group(rec);
  std::unique_ptr<PlanData> plan = std::move(rec.plan);
  plan->kernel_data = std::move(rec.kernel_data);
  plan->summary.copies = int(plan->copies.size());
  plan->summary.layout_ops = int(plan->vnchwconvs.size());

  // Keep only the kernel data the calls use.
  std::vector<int> remap(plan->kernel_data.size(), -1);
  std::vector<KernelData> used;
  for (PlanCall& call : plan->calls) {
    int& k = call.t.kdata;
    if (k < 0) continue;
    if (remap[size_t(k)] < 0) {
      remap[size_t(k)] = int(used.size());
      used.push_back(std::move(plan->kernel_data[size_t(k)]));
    }
    k = remap[size_t(k)];
  }
  plan->kernel_data = std::move(used);

  // The weights of every call whose kernel data never changes, packed once.
  for (PlanCall& call : plan->calls) prepare_call(*plan, call);
  return plan;
}

// ---------------------------------------------------------------------------
// Replay.

namespace {

// Scratch buffers of the calling thread, grown as needed.
struct Scratch {
  std::vector<uint8_t> in, temp, out, k;
};
Scratch& scratch() {
  static thread_local Scratch s;
  return s;
}

const uint8_t* host(const std::array<RegionMemory, limits::kNumRegions>& regions, const RegionRef& r) {
  return regions[size_t(r.region)].data + r.offset;
}

// The bytes of `r` packed as the SRAM copy holds them: in place when they
// already are, else gathered into `buf`.
const uint8_t* packed(const std::array<RegionMemory, limits::kNumRegions>& regions, const ReadRef& r,
                      std::vector<uint8_t>& buf, bool force_copy) {
  const uint8_t* src = host(regions, r.at);
  if (r.packed() && !force_copy) return src;
  buf.resize(size_t(r.total()));
  uint8_t* dst = buf.data();
  const int64_t row_bytes = int64_t(r.cols) * r.bytes;
  for (int y = 0; y < r.rows; ++y) {
    const uint8_t* row = src + uint64_t(y) * r.row_pitch;
    if (r.cols == 1 || r.pix_pitch == uint64_t(r.bytes)) {
      std::memcpy(dst, row, size_t(row_bytes));
      dst += row_bytes;
      continue;
    }
    for (int x = 0; x < r.cols; ++x) {
      std::memcpy(dst, row + uint64_t(x) * r.pix_pitch, size_t(r.bytes));
      dst += r.bytes;
    }
  }
  return buf.data();
}

// The im2col DMA of gather_im2col, from host memory.
const uint8_t* im2col(const Setup& s, const TileWork& c, const uint8_t* fm, std::vector<uint8_t>& buf) {
  buf.resize(size_t(int64_t(c.h) * s.w * s.mat_k));
  uint8_t* dst = buf.data();
  const uint8_t pad = uint8_t(int8_t(s.in_zp));
  for (int oy = 0; oy < c.h; ++oy) {
    for (int ox = 0; ox < s.w; ++ox) {
      for (int ky = 0; ky < s.ky; ++ky) {
        const int64_t iy = int64_t(c.iy0) + int64_t(oy) * s.sy + ky;
        for (int kx = 0; kx < s.kx; ++kx) {
          const int64_t ix = int64_t(s.ix0) + int64_t(ox) * s.sx + kx;
          if (iy < c.vy0 || iy >= c.vy0 + c.vh || ix < c.vx0 || ix >= c.vx0 + c.vw) {
            std::memset(dst, pad, size_t(s.in_c));
          } else {
            std::memcpy(dst, fm + uint64_t(iy - c.vy0) * s.in_row + uint64_t(ix - c.vx0) * s.in_pix,
                        size_t(s.in_c));
          }
          dst += s.in_c;
        }
      }
    }
  }
  return buf.data();
}

// One strided copy (StridedCopy) on host memory: the innermost dimension in
// chunks whose source and destination bytes stay in the cache while the
// other two dimensions go round.
template <int64_t kRun>
void strided_loops(const StridedCopy& d, const uint8_t* src, uint8_t* dst) {
  const size_t I = size_t(d.inner);
  const size_t A = I == 0 ? 1 : 0, B = I == 2 ? 1 : 2;  // the other two, outer first
  const int64_t run = kRun > 0 ? kRun : d.run;
  const int64_t ni = d.n[I], si = d.ss[I], di = d.ds[I];
  const int64_t chunk = std::max<int64_t>(1, 4096 / std::max<int64_t>(run, 1));
  for (int64_t k0 = 0; k0 < ni; k0 += chunk) {
    const int64_t k1 = std::min(ni, k0 + chunk);
    for (int64_t a = 0; a < d.n[A]; ++a) {
      for (int64_t b = 0; b < d.n[B]; ++b) {
        const uint8_t* s = src + a * d.ss[A] + b * d.ss[B] + k0 * si;
        uint8_t* t = dst + a * d.ds[A] + b * d.ds[B] + k0 * di;
        for (int64_t k = k0; k < k1; ++k, s += si, t += di) {
          if constexpr (kRun == 1) {
            *t = *s;
          } else {
            std::memcpy(t, s, size_t(run));
          }
        }
      }
    }
  }
}

void run_strided_copy(const StridedCopy& d, const std::array<RegionMemory, limits::kNumRegions>& regions) {
  const uint8_t* src = regions[size_t(d.src.region)].data + d.src.offset;
  uint8_t* dst = regions[size_t(d.dst.region)].data + d.dst.offset;
  if (d.n[0] == 1 && d.n[1] == 1 && d.n[2] == 1) {
    std::memcpy(dst, src, size_t(d.run));
    return;
  }
  if (d.run == 1) {
    // A byte-matrix transpose (two dimensions, one contiguous in the source,
    // the other in the destination): 16 x 16 blocks through the layout
    // unit's transpose, the edges byte by byte.
    int p = -1, q = -1, dims = 0;
    for (int j = 0; j < 3; ++j) {
      if (d.n[size_t(j)] == 1) continue;
      ++dims;
      if (d.ds[size_t(j)] == 1) p = j;
      if (d.ss[size_t(j)] == 1) q = j;
    }
    if (dims == 2 && p >= 0 && q >= 0 && p != q && d.n[size_t(p)] >= 16 && d.n[size_t(q)] >= 16) {
      const size_t P = size_t(p), Q = size_t(q);
      const int64_t np = d.n[P] / 16 * 16, nq = d.n[Q] / 16 * 16;
      const uint8_t* rows[16];
      uint8_t* out[16];
      for (int64_t p0 = 0; p0 < np; p0 += 16) {
        for (int64_t q0 = 0; q0 < nq; q0 += 16) {
          for (int i = 0; i < 16; ++i) {
            rows[i] = src + (p0 + i) * d.ss[P] + q0;
            out[i] = dst + (q0 + i) * d.ds[Q] + p0;
          }
          vnchwconv_transpose_b8(rows, out);
        }
      }
      StridedCopy edge = d;  // p in [np, n[p]), every q
      edge.n[P] = d.n[P] - np;
      if (edge.n[P] > 0) strided_loops<1>(edge, src + np * d.ss[P], dst + np * d.ds[P]);
      edge = d;  // p in [0, np), q in [nq, n[q])
      edge.n[P] = np;
      edge.n[Q] = d.n[Q] - nq;
      if (edge.n[Q] > 0) strided_loops<1>(edge, src + nq * d.ss[Q], dst + nq * d.ds[Q]);
      return;
    }
  }
  switch (d.run) {
    case 1: strided_loops<1>(d, src, dst); break;
    case 2: strided_loops<2>(d, src, dst); break;
    case 3: strided_loops<3>(d, src, dst); break;
    case 4: strided_loops<4>(d, src, dst); break;
    case 8: strided_loops<8>(d, src, dst); break;
    case 16: strided_loops<16>(d, src, dst); break;
    default: strided_loops<0>(d, src, dst); break;
  }
}

// Inputs of one call, resolved (and gathered where needed).
struct CallInputs {
  const uint8_t* in = nullptr;
  const uint8_t* temp = nullptr;
  const uint8_t* k = nullptr;  // the K area, indexed by SRAM offset (k + offset)
  std::vector<uint8_t> own_in, own_temp, own_k;  // staged copies
};

void resolve_inputs(const PlanData& plan, const PlanCall& call,
                    const std::array<RegionMemory, limits::kNumRegions>& regions, bool stage,
                    CallInputs& ci, Scratch& sc) {
  const Setup& s = call.s;
  const TileTrace& t = call.t;
  const TileWork& c = t.work;
  std::vector<uint8_t>& in_buf = stage ? ci.own_in : sc.in;
  std::vector<uint8_t>& temp_buf = stage ? ci.own_temp : sc.temp;
  std::vector<uint8_t>& k_buf = stage ? ci.own_k : sc.k;
  ci.in = s.im2col ? im2col(s, c, host(regions, t.fm.at), in_buf)
                   : packed(regions, t.fm, in_buf, stage);
  if (c.load_temp) ci.temp = packed(regions, t.temp, temp_buf, stage);
  if (t.kdata >= 0) {
    const KernelData& kd = plan.kernel_data[size_t(t.kdata)];
    ci.k = kd.bytes.data() - kd.lo;
    if (!t.k_reads.empty()) {
      k_buf.assign(kd.bytes.begin(), kd.bytes.end());
      for (const KernelRead& r : t.k_reads) {
        std::vector<uint8_t> part;
        const uint8_t* src = packed(regions, r.src, part, false);
        std::memcpy(k_buf.data() + (r.sram - kd.lo), src, size_t(r.src.total()));
      }
      ci.k = k_buf.data() - kd.lo;
    }
  }
}

void run_call(const PlanCall& call, const CallInputs& ci,
              const std::array<RegionMemory, limits::kNumRegions>& regions, Scratch& sc) {
  const Setup& s = call.s;
  const TileTrace& t = call.t;
  const TileWork& c = t.work;
  TileBuffers b;
  b.prepared = call.prepared.get();
  b.in = reinterpret_cast<const int8_t*>(ci.in);
  b.temp = reinterpret_cast<const int8_t*>(ci.temp);
  if (ci.k) {
    auto i32 = [&](int64_t lo) { return lo >= 0 ? reinterpret_cast<const int32_t*>(ci.k + lo) : nullptr; };
    b.weights = reinterpret_cast<const int8_t*>(ci.k + c.w_lo);
    b.bias = i32(c.bias_lo);
    b.mul = i32(c.mul_lo);
    b.shift = i32(c.shift_lo);
    b.scale = c.scale_lo >= 0 ? ci.k + c.scale_lo : nullptr;
    b.lut = c.lut_lo >= 0 ? reinterpret_cast<const int8_t*>(ci.k + c.lut_lo) : nullptr;
  }
  uint8_t* dst = regions[size_t(t.out.region)].data + t.out.offset;
  const uint64_t px_bytes = uint64_t(c.noc) * uint64_t(s.out_elem);  // one output pixel
  const bool direct = (s.w == 1 || s.out_pix == px_bytes) &&
                      (c.h == 1 || s.out_row == uint64_t(s.w) * px_bytes);
  if (direct) {
    b.out = reinterpret_cast<int8_t*>(dst);
    run_unit(s, c, b);
    return;
  }
  sc.out.resize(size_t(int64_t(c.h) * s.w) * px_bytes);
  b.out = reinterpret_cast<int8_t*>(sc.out.data());
  run_unit(s, c, b);
  const uint8_t* src = sc.out.data();
  for (int y = 0; y < c.h; ++y) {
    uint8_t* row = dst + uint64_t(y) * s.out_row;
    for (int x = 0; x < s.w; ++x) {
      std::memcpy(row + uint64_t(x) * s.out_pix, src, size_t(px_bytes));
      src += px_bytes;
    }
  }
}

}  // namespace

namespace {

// Below this much work a call stays on the calling thread: handing it to the
// pool costs more than it saves. Work is counted in GEMM MACs (about 4 us of
// the int8 GEMM here): a depthwise or pooling window term and an element of a
// pointwise unit cost the host several to many MACs' time (measured on the
// AVX-512 VNNI path, MobileNetV2: depthwise ~3.5x, pooling ~30x, an int8 ADD
// ~100x), so their counts are weighted by that cost, and MobileNetV2's small
// ADDs, its 7x7 depthwise and global pool are split too. The depthwise unit
// computes 4 pixels of a row at once, so a row's pixels count in fours (the
// global average pool, a 7x7 window on one output pixel, costs as much as 4).
constexpr int64_t kParallelMinWork = 1 << 18;

int64_t call_work(const PlanCall& call) {
  const Setup& s = call.s;
  const TileWork& c = call.t.work;
  const int64_t pixels = int64_t(c.h) * s.w;
  switch (s.fam) {
    case Family::kConv: return pixels * c.noc * s.kx * s.ky * s.in_c;
    case Family::kDepthwise: return 4 * int64_t(c.h) * align_up(s.w, 4) * c.noc * s.kx * s.ky;
    case Family::kPool: return 32 * pixels * c.noc * s.kx * s.ky;
    case Family::kFullyConnected: return int64_t(c.h) * c.noc * s.in_c;
    case Family::kMatmul: return pixels * c.noc * (s.im2col ? s.mat_k : s.in_c);
    default: return 64 * pixels * c.noc;
  }
}

// A call's fixed host cost (resolving and gathering its inputs, the unit's
// checks and set-up: about 1-2 us), in the same units: the core tiles of a
// command that did not merge into one layer call (MobileNetV2's global
// average pool at 8 cores runs as 32 tiny matrix products) are worth
// spreading over the threads although each is small.
constexpr int64_t kCallWork = 1 << 16;

// Output rows [r0, r1) of a merged (single-core, whole-layer) call: the tile
// a command for those rows would have, its input rows and padding derived as
// the device derives a tile's halo (docs/device_model.md §3).
bool row_part(const PlanCall& call, int r0, int r1, PlanCall* out) {
  const Setup& s = call.s;
  const TileWork& c = call.t.work;
  *out = call;
  TileWork& p = out->t.work;
  p.y0 = c.y0 + r0;
  p.h = r1 - r0;
  out->t.out.offset += uint64_t(r0) * s.out_row;
  if (is_window(s.fam)) {
    const int64_t iy0 = int64_t(r0) * s.sy - c.pad_t;  // rows of the call's valid input
    const int64_t ih = int64_t(p.h - 1) * s.sy + s.ky;
    const int64_t vy0 = std::max<int64_t>(iy0, 0), vy1 = std::min<int64_t>(iy0 + ih, c.vh);
    if (vy1 <= vy0) return false;
    p.pad_t = int(vy0 - iy0);
    p.pad_b = int(iy0 + ih - vy1);
    p.vh = int(vy1 - vy0);
    p.iy0 = int(c.vy0 + iy0);
    p.vy0 = int(c.vy0 + vy0);
    out->t.fm.at.offset += uint64_t(vy0) * call.t.fm.row_pitch;
    out->t.fm.rows = p.vh;
    return true;
  }
  if (s.fam == Family::kMatmul) return false;
  p.vh = p.h;  // pointwise: input row r is output row r
  out->t.fm.at.offset += uint64_t(r0) * call.t.fm.row_pitch;
  out->t.fm.rows = p.h;
  if (c.load_temp && call.t.temp.rows > 1) {
    out->t.temp.at.offset += uint64_t(r0) * call.t.temp.row_pitch;
    out->t.temp.rows = p.h;
  }
  return true;
}

// Output channels [c0, c1) of a merged convolution or fully connected call.
void channel_part(const PlanCall& call, int c0, int c1, PlanCall* out) {
  const Setup& s = call.s;
  *out = call;
  TileWork& p = out->t.work;
  const int64_t per_channel = s.fam == Family::kConv ? int64_t(s.kx) * s.ky * s.in_c : s.in_c;
  out->prepared = nullptr;  // packed for every channel; this part has a slice
  p.noc = c1 - c0;
  p.oc0 += c0;
  p.w_lo += c0 * per_channel;
  p.weight_count = p.noc * per_channel;
  if (p.bias_lo >= 0) p.bias_lo += (s.i16 ? 8 : 4) * c0;
  if (p.mul_lo >= 0) p.mul_lo += 4 * c0;
  if (p.shift_lo >= 0) p.shift_lo += 4 * c0;
  if (p.scale_lo >= 0) p.scale_lo += scale_entry_bytes(s) * c0;
  out->t.out.offset += uint64_t(c0) * uint64_t(s.out_elem);
}

// Channels [c0, c1) of a merged int8 depthwise call with channel multiplier
// 1: its input channels [c0, c1) (gathered by the replay, the pixels being
// wider), and a K area of its own in `plan` (the weights [ky, kx, C] of the
// call interleave the channels, so no offset selects a slice).
void depthwise_channel_part(PlanData& plan, const PlanCall& call, int c0, int c1, PlanCall* out) {
  const Setup& s = call.s;
  const TileWork& c = call.t.work;
  *out = call;
  TileWork& p = out->t.work;
  out->prepared = nullptr;
  const int nc = c1 - c0;
  KernelData kd;  // copied before plan.kernel_data grows
  const KernelData& src = plan.kernel_data[size_t(call.t.kdata)];
  auto at = [&](int64_t lo) { return src.bytes.data() + (lo - src.lo); };
  auto place = [&](int64_t* lo, const uint8_t* from, int64_t bytes) {
    const int64_t pos = align64(int64_t(kd.bytes.size()));
    kd.bytes.resize(size_t(pos));
    kd.bytes.insert(kd.bytes.end(), from, from + bytes);
    *lo = pos;
  };
  const int64_t taps = int64_t(s.ky) * s.kx;
  std::vector<uint8_t> w(size_t(taps * nc));
  const uint8_t* wsrc = at(c.w_lo);
  for (int64_t t = 0; t < taps; ++t) {
    std::memcpy(w.data() + t * nc, wsrc + t * c.noc + c0, size_t(nc));
  }
  place(&p.w_lo, w.data(), int64_t(w.size()));
  p.weight_count = taps * nc;
  if (c.bias_lo >= 0) place(&p.bias_lo, at(c.bias_lo + 4 * c0), 4 * nc);
  if (c.mul_lo >= 0) place(&p.mul_lo, at(c.mul_lo + 4 * c0), 4 * nc);
  if (c.shift_lo >= 0) place(&p.shift_lo, at(c.shift_lo + 4 * c0), 4 * nc);
  const int64_t scale_bytes = scale_entry_bytes(s);
  if (c.scale_lo >= 0) place(&p.scale_lo, at(c.scale_lo + scale_bytes * c0), scale_bytes * nc);
  if (c.lut_lo >= 0) place(&p.lut_lo, at(c.lut_lo), limits::kLutEntries);
  p.kern = SramRange{0, int64_t(kd.bytes.size())};
  p.quant_count = nc;
  p.noc = nc;
  p.oc0 += c0;
  out->t.kdata = int(plan.kernel_data.size());
  plan.kernel_data.push_back(std::move(kd));
  out->t.fm.at.offset += uint64_t(c0) * uint64_t(s.elem);  // the pitches stay the map's
  out->t.fm.bytes = int64_t(nc) * s.elem;
  out->t.out.offset += uint64_t(c0) * uint64_t(s.out_elem);
}

// How a call is split for `threads` host threads (one part each: a part's
// fixed costs and the GEMM's 8-row tiles make finer parts slower).
struct Split {
  enum class Kind { kNone, kRows, kChannels, kDepthwiseChannels } kind = Kind::kNone;
  std::vector<std::pair<int, int>> ranges;  // rows or channels [first, second) per part
};

// `n` units in `parts` near-equal ranges of whole blocks of `block` units.
std::vector<std::pair<int, int>> even_ranges(int n, int parts, int block) {
  std::vector<std::pair<int, int>> r;
  const int blocks = (n + block - 1) / block;
  for (int i = 0; i < parts; ++i) {
    const int b0 = int(int64_t(blocks) * i / parts), b1 = int(int64_t(blocks) * (i + 1) / parts);
    const int c0 = b0 * block, c1 = std::min(n, b1 * block);
    if (c1 > c0) r.emplace_back(c0, c1);
  }
  return r;
}

// The split whose largest part costs least. A part's cost is modelled in the
// units' own blocks: the GEMM's tiles of 8 output pixels by 16 channels, the
// depthwise unit's 4 pixels of a row by 32 channels, rows elsewhere. Ties
// keep rows (parts that share the call's packed weights and read only their
// own input rows). `depthwise_channels`: the caller can give a depthwise
// part its own K area (prepare_parts).
Split choose_split(const PlanCall& call, int threads, bool depthwise_channels) {
  Split best;
  const Setup& s = call.s;
  const TileWork& c = call.t.work;
  if (threads <= 1 || s.ncores != 1 || call_work(call) < kParallelMinWork) return best;
  const bool gemm = s.fam == Family::kConv || s.fam == Family::kFullyConnected;
  const bool dw = s.fam == Family::kDepthwise;
  auto rows_cost = [&](int h, int noc) -> int64_t {
    if (gemm) return ceil_div(int64_t(h) * s.w, 8) * ceil_div(int64_t(noc), 16);
    if (dw) return int64_t(h) * ceil_div(int64_t(s.w), 4) * ceil_div(int64_t(noc), 32);
    return int64_t(h) * noc;
  };
  int64_t best_cost = INT64_MAX;
  auto consider = [&](Split::Kind kind, std::vector<std::pair<int, int>> ranges) {
    if (ranges.size() < 2) return;
    int64_t worst = 0;
    for (const auto& [a, b] : ranges) {
      worst = std::max(worst, kind == Split::Kind::kRows ? rows_cost(b - a, c.noc) : rows_cost(c.h, b - a));
    }
    if (worst < best_cost) {
      best_cost = worst;
      best.kind = kind;
      best.ranges = std::move(ranges);
    }
  };
  if (c.h >= 2 * threads && s.fam != Family::kMatmul) {
    consider(Split::Kind::kRows, even_ranges(c.h, threads, 1));
  }
  // Channel parts slice the weights at byte offsets: not for packed int4
  // weights (a merged call holds them unpacked, s.int4 = false).
  if (gemm && !s.int4 && c.noc >= 32 * threads) {
    consider(Split::Kind::kChannels, even_ranges(c.noc, threads, 16));
  }
  if (dw && depthwise_channels && !s.i16 && !s.int4 && s.depth_mult == 1 && call.t.kdata >= 0 &&
      call.t.k_reads.empty() && c.noc >= 32 * threads) {
    consider(Split::Kind::kDepthwiseChannels, even_ranges(c.noc, threads, 32));
  }
  return best;
}

// The parts of a call for `threads` host threads; empty: run it whole. With
// `plan`, depthwise calls may split by channels (their parts get K areas of
// their own in it).
std::vector<PlanCall> parallel_parts(const PlanCall& call, int threads, PlanData* plan = nullptr) {
  std::vector<PlanCall> parts;
  const Split split = choose_split(call, threads, plan != nullptr);
  for (const auto& [a, b] : split.ranges) {
    PlanCall part;
    switch (split.kind) {
      case Split::Kind::kRows:
        if (!row_part(call, a, b, &part)) return {};
        break;
      case Split::Kind::kChannels: channel_part(call, a, b, &part); break;
      case Split::Kind::kDepthwiseChannels: depthwise_channel_part(*plan, call, a, b, &part); break;
      case Split::Kind::kNone: return {};
    }
    parts.push_back(std::move(part));
  }
  if (plan && !parts.empty()) {
    (split.kind == Split::Kind::kRows ? plan->summary.row_split_calls
                                      : plan->summary.channel_split_calls) += 1;
  }
  return parts;
}

}  // namespace

namespace {

// The bytes [first, second) of its region that a call writes.
std::pair<uint64_t, uint64_t> out_span(const PlanCall& call) {
  const Setup& s = call.s;
  const TileWork& c = call.t.work;
  const uint64_t lo = call.t.out.offset;
  return {lo, lo + uint64_t(std::max(c.h - 1, 0)) * s.out_row + uint64_t(std::max(s.w - 1, 0)) * s.out_pix +
                  uint64_t(c.noc) * uint64_t(s.out_elem)};
}

// The calls of an unstaged step can run side by side: more than one, no two
// writing the same bytes (the order of the writes would decide the result),
// and enough work for the pool.
bool calls_in_parallel(const PlanData& plan, const PlanStep& step, int threads) {
  if (threads <= 1 || step.kind != PlanStep::Kind::kCalls || step.stage_inputs || step.count < 2) {
    return false;
  }
  int64_t work = 0;
  std::vector<std::tuple<int, uint64_t, uint64_t>> spans;
  for (int i = step.first; i < step.first + step.count; ++i) {
    const PlanCall& call = plan.calls[size_t(i)];
    work += std::max(call_work(call), kCallWork);
    const auto [lo, hi] = out_span(call);
    spans.emplace_back(call.t.out.region, lo, hi);
  }
  if (work < kParallelMinWork) return false;
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) {
    if (std::get<0>(spans[i]) == std::get<0>(spans[i - 1]) &&
        std::get<1>(spans[i]) < std::get<2>(spans[i - 1])) {
      return false;
    }
  }
  return true;
}

}  // namespace

void prepare_parts(PlanData& plan, int threads) {
  plan.parts_threads = threads;
  plan.summary.row_split_calls = plan.summary.channel_split_calls = 0;
  plan.summary.parallel_tile_steps = 0;
  for (PlanStep& step : plan.steps) {
    step.parallel_calls = calls_in_parallel(plan, step, threads);
    plan.summary.parallel_tile_steps += step.parallel_calls ? 1 : 0;
  }
  plan.parts.assign(plan.calls.size(), {});
  for (size_t i = 0; i < plan.calls.size(); ++i) {
    std::vector<PlanCall> parts = parallel_parts(plan.calls[i], threads, &plan);
    // A channel part holds a slice of the weights: packed here, once, like
    // the whole call's (a row part shares the call's packing).
    for (PlanCall& part : parts) {
      if (!part.prepared) prepare_call(plan, part);
    }
    plan.parts[i] = std::move(parts);
  }
}

namespace {

// Runs calls[0, n) on the pool's threads; they write disjoint outputs and
// read no bytes any of them writes. A unit's error is rethrown after all
// have run, the first in call order (the one a serial run raises).
void run_side_by_side(const PlanData& plan, const PlanCall* calls, int n,
                      const std::array<RegionMemory, limits::kNumRegions>& regions, ThreadPool& pool) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  pool.parallel_for(n, [&](int k) {
    try {
      Scratch& own = scratch();
      CallInputs ci;
      resolve_inputs(plan, calls[k], regions, false, ci, own);
      run_call(calls[k], ci, regions, own);
    } catch (...) {
      errors[size_t(k)] = std::current_exception();
    }
  });
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace

void replay_plan(const PlanData& plan, const std::array<RegionMemory, limits::kNumRegions>& regions,
                 ThreadPool& pool) {
  Scratch& sc = scratch();
  const int threads = pool.threads();
  const bool have_parts = plan.parts_threads == threads;
  for (const PlanStep& step : plan.steps) {
    if (step.kind == PlanStep::Kind::kCopy) {
      const CopyTrace& cp = plan.copies[size_t(step.first)];
      std::memmove(regions[size_t(cp.dst.region)].data + cp.dst.offset, host(regions, cp.src),
                   size_t(cp.len));
      continue;
    }
    if (step.kind == PlanStep::Kind::kStridedCopy) {
      for (int i = step.first; i < step.first + step.count; ++i) {
        run_strided_copy(plan.strided_copies[size_t(i)], regions);
      }
      continue;
    }
    if (step.kind == PlanStep::Kind::kVnchwconv) {
      // The unit's loops on device memory: each iteration reads its 16 source
      // blocks before writing (the interpreter's semantics, exec_dma.cc).
      const VnchwTrace& v = plan.vnchwconvs[size_t(step.first)];
      const uint8_t* src = host(regions, v.src);
      uint8_t* dst = regions[size_t(v.dst.region)].data + v.dst.offset;
      uint8_t snapshot[limits::kVnchwBlocksPerOperand][limits::kUbBlockBytes];
      uint8_t* d[limits::kVnchwBlocksPerOperand];
      if (v.elem == VnchwElem::kB8) {  // read in place: the transpose loads every row first
        const uint64_t sh = v.src_high_half ? 16 : 0, dh = v.dst_high_half ? 16 : 0;
        const uint8_t* rows[limits::kVnchwBlocksPerOperand];
        for (int r = 0; r < v.repeat; ++r) {
          for (int k = 0; k < limits::kVnchwBlocksPerOperand; ++k) {
            rows[k] = src + uint64_t(k) * v.src_block_stride + uint64_t(r) * v.src_step + sh;
            d[k] = dst + uint64_t(k) * v.dst_block_stride + uint64_t(r) * v.dst_step + dh;
          }
          vnchwconv_transpose_b8(rows, d);
        }
        continue;
      }
      for (int r = 0; r < v.repeat; ++r) {
        for (int k = 0; k < limits::kVnchwBlocksPerOperand; ++k) {
          const uint8_t* block = src + uint64_t(k) * v.src_block_stride + uint64_t(r) * v.src_step;
          std::memcpy(snapshot[k], block, limits::kUbBlockBytes);
          d[k] = dst + uint64_t(k) * v.dst_block_stride + uint64_t(r) * v.dst_step;
        }
        vnchwconv_iteration(v.elem, v.reverse, snapshot, d, v.dst_high_half, v.src_high_half);
      }
      continue;
    }
    if (step.parallel_calls && have_parts) {
      // One command's core tiles, side by side (prepare_parts: disjoint outputs).
      run_side_by_side(plan, &plan.calls[size_t(step.first)], step.count, regions, pool);
      continue;
    }
    if (!step.stage_inputs) {
      for (int i = step.first; i < step.first + step.count; ++i) {
        const PlanCall& call = plan.calls[size_t(i)];
        std::vector<PlanCall> computed;  // a pool of another size than the plan's
        if (!have_parts) computed = parallel_parts(call, threads);
        const std::vector<PlanCall>& parts = have_parts ? plan.parts[size_t(i)] : computed;
        if (parts.empty()) {
          CallInputs ci;
          resolve_inputs(plan, call, regions, false, ci, sc);
          run_call(call, ci, regions, sc);
          continue;
        }
        // Parts write disjoint outputs and read inputs no part writes (the
        // call's inputs and outputs do not overlap: the step is not staged).
        run_side_by_side(plan, parts.data(), int(parts.size()), regions, pool);
      }
      continue;
    }
    std::vector<CallInputs> staged(size_t(step.count));
    for (int i = 0; i < step.count; ++i) {
      resolve_inputs(plan, plan.calls[size_t(step.first + i)], regions, true, staged[size_t(i)], sc);
    }
    for (int i = 0; i < step.count; ++i) {
      run_call(plan.calls[size_t(step.first + i)], staged[size_t(i)], regions, sc);
    }
  }
}

}  // namespace device_detail
}  // namespace nacc

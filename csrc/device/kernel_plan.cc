// Kernel commands, step 2: each core's part of a command — its tile and
// halo, SRAM layout, bounds-checked external accesses, residency of its IFM
// and K areas, and its work (docs/device_model.md §1, §3, §5, §6).
#include <algorithm>
#include <cstring>

#include "arch/limits.h"
#include "arch/sram.h"
#include "device/kernel.h"

namespace nacc::device_detail {

namespace {

// Useful taps along one axis over the tile's outputs (tile-local coordinates,
// `pad_before` padded positions first): the one formula of arch/cost_model.h
// that the compiler's records and ir::op_macs count with too. The counter
// itself is the device's, computed from the registers it executes.
using cost::valid_taps;

void count_work(const Setup& s, CoreWork& c) {
  const int64_t h = c.h, w = s.w, taps = int64_t(s.ky) * s.kx;
  switch (s.fam) {
    case Family::kConv:
      c.mac_cycles = s.mac_fp32 ? cost::mac_fp32_cycles(h, w, c.noc, taps, s.in_c)
                     : s.i16    ? cost::conv16_mac_cycles(h, w, c.noc, taps, s.in_c)
                                : cost::conv_mac_cycles(h, w, c.noc, taps, s.in_c);
      c.macs = valid_taps(c.h, s.sy, s.ky, c.pad_t, c.vh) *
               valid_taps(s.w, s.sx, s.kx, c.pad_l, c.vw) * s.in_c * c.noc;
      break;
    case Family::kDepthwise:
      // 16-bit maps: 32 channels per tap and cycle instead of 64 (NACC_SPEC §9).
      // c.noc: the core's channels (all of them but in mode 1).
      c.mac_cycles = s.i16 ? cost::window16_mac_cycles(h, w, c.noc, taps)
                           : cost::window_mac_cycles(h, w, c.noc, taps);
      c.macs = valid_taps(c.h, s.sy, s.ky, c.pad_t, c.vh) *
               valid_taps(s.w, s.sx, s.kx, c.pad_l, c.vw) * c.noc;
      break;
    case Family::kPool:
      c.mac_cycles = s.i16 ? cost::window16_mac_cycles(h, w, s.out_c, taps)
                           : cost::window_mac_cycles(h, w, s.out_c, taps);
      break;
    case Family::kMatmul:
      if (s.im2col) {
        // One row of A per output pixel: M = h * w, K = ky * kx * in_c.
        c.mac_cycles = cost::matrix_mac_cycles(h * w, c.noc, s.mat_k);
        c.macs = valid_taps(c.h, s.sy, s.ky, c.pad_t, c.vh) *
                 valid_taps(s.w, s.sx, s.kx, c.pad_l, c.vw) * s.in_c * c.noc;
        break;
      }
      [[fallthrough]];
    case Family::kFullyConnected:
      c.mac_cycles = s.i16 ? cost::matrix16_mac_cycles(h, c.noc, s.in_c)
                           : cost::matrix_mac_cycles(h, c.noc, s.in_c);
      c.macs = h * c.noc * s.in_c;
      break;
    case Family::kElementwise:
      c.mac_cycles = s.mul_s16_s8 ? cost::elementwise_s16_s8_cycles(h * w * s.in_c)
                     : s.i16      ? cost::elementwise16_cycles(h * w * s.in_c)
                                  : cost::elementwise_cycles(h * w * s.in_c);
      break;
    case Family::kActivation: break;
  }
  // The LUT, the q7 and the 16-bit Tanh / Sigmoid tables: one element per
  // cycle (NACC_SPEC §8, §9 "one per cycle").
  if (s.needs_lut || s.q7_act || s.table16) c.act_cycles = cost::activation_cycles(h * w * c.noc);
}

// "SRAM overflow: <what> needs N bytes, area holds M (...)", printed lazily.
template <typename What>
struct AreaOverflow {
  What what;
  int64_t need;
  SramRange area;
};
template <typename What>
std::ostream& operator<<(std::ostream& o, const AreaOverflow<What>& a) {
  return o << "SRAM overflow: " << a.what << " needs " << a.need << " bytes, area holds "
           << a.area.hi - a.area.lo << " (NACC_MEM_RANGE: SRAM [" << a.area.lo << ", " << a.area.hi
           << "))";
}
template <typename What>
AreaOverflow<What> area_overflow(What what, int64_t need, const SramRange& area) {
  return AreaOverflow<What>{what, need, area};
}

// Bounds-checks a read and resolves its host pointer; what() names it in the fault.
template <typename What>
void resolve(const ExecEnv& env, Read& r, What&& what) {
  const BoundBuffer& b = check_access(env, r.addr, r.span(), false, what);
  r.host = b.data + (r.addr - b.address);
}

// "REG = region r + 0x...", printed lazily.
struct RegText {
  Reg r;
  uint32_t value;
  uint64_t extra;
};
std::ostream& operator<<(std::ostream& o, const RegText& t) {
  return o << describe(t.r).name << " = " << region_text(t.value, t.extra);
}
RegText reg_text(Reg r, uint32_t value, uint64_t extra = 0) { return RegText{r, value, extra}; }

// FM_UPD = 0 / K_UPD = 0: the core's IFM / K area must hold what this tile
// would load (its residency key).
void check_residency(const ExecEnv& env, const Setup& s, const CoreWork& c) {
  const int i = c.core;
  const CoreState& cs = env.ctx.cores[size_t(i)];
  if (!s.fm_upd) {
    require(cs.fm.valid && cs.fm.key == c.fm_key,
            "stale feature map: NACC_CTRL.FM_UPD = 0 but the IFM area", core_text(s, i),
            cs.fm.valid ? " holds another input tile (address, pitches, tile registers or "
                          "channels differ)"
                        : " holds no input tile loaded by this stream",
            " (docs/device_model.md §1)");
  }
  if (!c.kern.empty() && !s.k_upd) {
    require(cs.kernel.valid && cs.kernel.key == c.k_key,
            "stale kernel: NACC_CTRL.K_UPD = 0 but the K area", core_text(s, i),
            cs.kernel.valid ? " holds another kernel (IN_K_DMA_ADDR, K_TRANS_LEN, BIAS/QUANT/"
                              "IN_ACT addresses, channel count or K area differ)"
                            : " holds no kernel loaded by this stream",
            " (docs/device_model.md §1)");
  }
}

}  // namespace


// Plans core i: its tile, SRAM layout, external accesses (bounds-checked) and
// whether its IFM and K areas must be loaded or are resident.
CoreWork plan_core(const ExecEnv& env, const Setup& s, int i) {
  const HandlerContext& ctx = env.ctx;
  const int n = s.ncores;
  const bool two_d = s.mode == value_of(BroadcastMode::SPLIT_2D);
  // Mode 3: the core's row piece ri of R and channel group gi of G.
  const int ri = s.row_index(i), gi = s.group_index(i);
  const bool last = two_d ? ri == s.row_pieces - 1 : i == n - 1;
  const bool last_group = two_d ? gi == s.groups - 1 : i == n - 1;
  const int group_n = two_d ? s.groups : n;
  CoreWork c;
  c.core = i;
  c.y0 = s.y0;
  c.h = s.h;
  int64_t iy0 = s.iy0;
  c.ih = s.ih;
  const char* rows_regs = "NACC_IN_FM_SPLIT_H_OFFSET, NACC_IN_FM_SPLIT.IN_FM_SPLIT_LEFT_LEN";
  if (s.mode == value_of(BroadcastMode::SPLIT_HEIGHT) || two_d) {
    c.y0 = s.y0 + ri * s.avg_h;
    c.h = last ? s.ov_h : s.avg_h;
    iy0 = int64_t(s.iy0) + int64_t(ri) * s.avg_in_step;
    c.ih = last ? s.ov_in_rows : s.ih;
    rows_regs = last ? "NACC_IN_FM_SPLIT_H_OFFSET + core x IN_DMA_UNICAST_AVG_OFFSET, "
                       "NACC_BROADCAST_DMA.IN_DMA_UNICAST_OV_OFFSET"
                     : "NACC_IN_FM_SPLIT_H_OFFSET + core x IN_DMA_UNICAST_AVG_OFFSET, "
                       "NACC_IN_FM_SPLIT.IN_FM_SPLIT_LEFT_LEN";
  }
  c.oc0 = 0;
  c.noc = s.out_c;
  if (s.mode == value_of(BroadcastMode::SPLIT_KERNEL) || two_d) {
    c.oc0 = gi * s.oc_per_core;
    c.noc = last_group ? s.out_c - (group_n - 1) * s.oc_per_core : s.oc_per_core;
  }
  // Halo (docs/device_model.md §3, §5).
  const int64_t want_y0 = int64_t(c.y0) * s.sy - s.pad_t;
  const int64_t want_h = int64_t(c.h - 1) * s.sy + s.ky;
  require(iy0 == want_y0 && c.ih == want_h, "input tile does not cover the output tile",
          core_text(s, i), ": rows [", c.y0, ", ", c.y0 + c.h, ") need input rows [", want_y0,
          ", ", want_y0 + want_h, ") but the tile is rows [", iy0, ", ", iy0 + c.ih,
          ") (", rows_regs, ")");
  c.iy0 = int(iy0);  // == want_y0: y0 < OUT_FM_HEIGHT <= 65535
  const int64_t vy1 = std::min<int64_t>(int64_t(c.iy0) + c.ih, s.in_h);
  const int64_t vx1 = std::min<int64_t>(int64_t(s.ix0) + s.iw, s.in_w);
  c.vy0 = std::max(c.iy0, 0);
  c.vx0 = std::max(s.ix0, 0);
  require(vy1 > c.vy0 && vx1 > c.vx0, "input tile rows [", c.iy0, ", ", int64_t(c.iy0) + c.ih,
          ") x columns [", s.ix0, ", ", int64_t(s.ix0) + s.iw, ")", core_text(s, i),
          " holds no pixel of the ", s.in_w, "x", s.in_h, " input (all padding)");
  c.vh = int(vy1 - c.vy0);
  c.vw = int(vx1 - c.vx0);
  c.pad_t = c.vy0 - c.iy0;
  c.pad_b = int(int64_t(c.iy0) + c.ih - vy1);
  c.pad_l = c.vx0 - s.ix0;
  c.pad_r = int(int64_t(s.ix0) + s.iw - vx1);

  // Input channels the core reads, from input channel ic0: all of them, but a
  // depthwise core in mode 1 reads the input channels of its output channels.
  const bool dw_split =
      s.fam == Family::kDepthwise && (s.mode == value_of(BroadcastMode::SPLIT_KERNEL) || two_d);
  const int in_ch = dw_split ? c.noc / s.depth_mult : s.in_c;
  const int ic0 = dw_split ? c.oc0 / s.depth_mult : 0;
  // SRAM layout (docs/device_model.md §1).
  // With im2col the IFM area holds one K-byte row per output pixel of the tile.
  const int64_t ifm_bytes =
      s.im2col ? int64_t(c.h) * s.w * s.mat_k : int64_t(c.vh) * c.vw * in_ch * s.elem;
  require(s.ifm_area.lo + ifm_bytes <= s.ifm_area.hi,
          area_overflow(s.im2col ? "im2col rows" : "IFM tile", ifm_bytes, s.ifm_area),
          core_text(s, i));
  c.ifm = {s.ifm_area.lo, s.ifm_area.lo + ifm_bytes};
  const int64_t ofm_bytes = int64_t(c.h) * s.w * c.noc * s.out_elem;
  require(s.ofm_area.lo + ofm_bytes <= s.ofm_area.hi, area_overflow("OFM tile", ofm_bytes, s.ofm_area),
          core_text(s, i));
  c.ofm = {s.ofm_area.lo, s.ofm_area.lo + ofm_bytes};
  if (s.fam == Family::kElementwise) {
    const int64_t temp_bytes = s.k_pitch == 0 ? int64_t(s.in_c) * s.elem : ifm_bytes;
    require(s.temp_area.lo + temp_bytes <= s.temp_area.hi,
            area_overflow("element-wise operand", temp_bytes, s.temp_area), core_text(s, i));
    c.temp = {s.temp_area.lo, s.temp_area.lo + temp_bytes};
  }
  switch (s.fam) {
    case Family::kConv: c.weight_count = int64_t(c.noc) * s.ky * s.kx * s.in_c; break;
    case Family::kDepthwise: c.weight_count = int64_t(s.ky) * s.kx * c.noc; break;
    case Family::kFullyConnected: c.weight_count = int64_t(c.noc) * s.in_c; break;
    case Family::kMatmul: c.weight_count = s.mat_k * c.noc; break;
    default: break;
  }
  c.int4 = s.int4;
  c.quant_count = s.quant_entries ? s.quant_entries : c.noc;
  int64_t pos = s.k_area.lo;
  c.w_lo = pos;
  pos += c.weight_bytes();
  const int64_t bias_entry = s.i16 ? 8 : 4;  // int64 bias with 16-bit feature maps
  if (s.needs_bias) {
    c.bias_lo = pos = align_up(pos, kKAreaAlignment);
    pos += bias_entry * c.quant_count;
  }
  const int64_t scale_entry = scale_entry_bytes(s);
  const bool scales = s.needs_quant && (s.real_scale || s.fp32_scale || s.mac_fp32);
  if (scales) {
    c.scale_lo = pos = align_up(pos, kKAreaAlignment);
    pos += scale_entry * c.quant_count;
  } else if (s.needs_quant) {
    c.mul_lo = pos = align_up(pos, kKAreaAlignment);
    pos += 4 * c.quant_count;
    c.shift_lo = pos = align_up(pos, kKAreaAlignment);
    pos += 4 * c.quant_count;
  }
  if (s.needs_lut) {
    c.lut_lo = pos = align_up(pos, kKAreaAlignment);
    pos += limits::kLutEntries;
  }
  c.kern = {s.k_area.lo, pos};
  if (pos > s.k_area.hi) {
    throw DeviceFault(str_cat(
        area_overflow(str_cat("kernel data (", c.weight_bytes(), s.int4 ? " int4" : "", " weight bytes",
                              s.needs_bias ? ", bias" : "", s.needs_quant ? ", quantization" : "",
                              s.needs_lut ? ", LUT" : "", ")"),
                      pos - s.k_area.lo, s.k_area),
        core_text(s, i)));
  }

  // External accesses.
  const uint64_t ck = uint64_t(s.mode == value_of(BroadcastMode::SPLIT_KERNEL) ? i : two_d ? gi : 0);
  // Where this core's kernel operand starts: its weight block (mode 1: one
  // per core at the K_TRANS_LEN stride), or matmul B's column oc0.
  const uint64_t k_off =
      s.fam == Family::kMatmul ? uint64_t(c.oc0) * uint64_t(s.elem) : ck * uint64_t(s.k_block);
  c.fm_read.addr = device_address(ctx, s.a_in, uint64_t(c.vy0) * s.in_row + uint64_t(c.vx0) * s.in_pix +
                                                  uint64_t(ic0) * uint64_t(s.elem));
  c.fm_read.rows = c.vh;
  c.fm_read.cols = c.vw;
  c.fm_read.bytes = int64_t(in_ch) * s.elem;
  c.fm_read.row_pitch = s.in_row;
  c.fm_read.pix_pitch = s.in_pix;
  c.fm_read.sram = c.ifm.lo;
  c.fm_key = ResidencyKey{c.fm_read.addr, s.in_row, s.in_pix, uint64_t(int64_t(c.iy0)), uint64_t(c.ih),
              uint64_t(int64_t(s.ix0)), uint64_t(s.iw), uint64_t(in_ch), uint64_t(s.in_h),
              uint64_t(s.in_w), uint64_t(c.ifm.lo), uint64_t(s.im2col),
              uint64_t(s.kx), uint64_t(s.ky), uint64_t(s.sx), uint64_t(s.sy)};
  const uint64_t none = ~uint64_t(0);
  c.k_key = ResidencyKey{uint64_t(s.fam), device_address(ctx, s.a_k, k_off),
             uint64_t(s.k_block), s.fam == Family::kMatmul ? s.k_pitch : 0,
             s.needs_bias ? device_address(ctx, s.a_bias, uint64_t(bias_entry) * uint64_t(c.oc0)) : none,
             s.needs_quant ? device_address(ctx, s.a_mul, (scales ? scale_entry : 4) * uint64_t(c.oc0)) : none,
             s.needs_quant && !scales ? device_address(ctx, s.a_shift, 4 * uint64_t(c.oc0)) : none,
             uint64_t(s.real_scale) | uint64_t(s.fp32_scale) << 1 | uint64_t(s.int4) << 2 |
                 uint64_t(s.mac_fp32) << 3,
             s.needs_lut ? device_address(ctx, s.a_act, 0) : none, uint64_t(c.noc),
             uint64_t(c.weight_count), uint64_t(c.quant_count), uint64_t(c.kern.lo),
             uint64_t(c.kern.hi)};
  if (s.fm_upd) c.load_fm = true;
  if (!c.kern.empty() && s.k_upd) c.load_k = true;
  check_residency(env, s, c);
  // Mode 3: a channel group's kernel is read once, by its first row piece's
  // core, and delivered to the group's other cores (broadcast within the group).
  const bool k_broadcast = s.mode == value_of(BroadcastMode::SPLIT_HEIGHT) || (two_d && ri > 0);
  // Mode 3 fully connected: a row piece's input rows are read once, by its
  // group-0 core, and delivered to the row piece's other cores.
  const bool fm_broadcast = (s.mode == value_of(BroadcastMode::SPLIT_KERNEL) && !dw_split) ||
                            (two_d && !dw_split && gi > 0);
  if (c.load_fm) {
    resolve(env, c.fm_read, [&] {
      return str_cat("IFM tile", core_text(s, i), " (", reg_text(Reg::NACC_IN_FM_DMA_ADDR, s.a_in),
                     ")");
    });
    if (s.im2col) {
      // The DMA moves each valid byte of every output pixel's window (halo
      // bytes as often as windows overlap them); padding positions are
      // filled with the input zero point, not read.
      c.gathered = valid_taps(c.h, s.sy, s.ky, c.pad_t, c.vh) *
                   valid_taps(s.w, s.sx, s.kx, c.pad_l, c.vw) * s.in_c;
      (fm_broadcast ? c.rd_broadcast : c.rd_unicast) += c.gathered;
    } else {
      (fm_broadcast ? c.rd_broadcast : c.rd_unicast) += c.fm_read.total();
    }
  }
  if (c.load_k) {
    int64_t& acc = k_broadcast ? c.rd_broadcast : c.rd_unicast;
    if (has_weights(s.fam)) {
      c.wblock.addr = device_address(ctx, s.a_k, ck * uint64_t(s.k_block));
      c.wblock.bytes = s.k_block;
      c.wblock.sram = c.w_lo;
      resolve(env, c.wblock, [&] {
        return str_cat("weight block", core_text(s, i), " (",
                       reg_text(Reg::NACC_IN_K_DMA_ADDR, s.a_k, ck * uint64_t(s.k_block)),
                       ", K_TRANS_LEN x 16 = ", s.k_block, " bytes)");
      });
      acc += s.k_block;
    }
    if (s.fam == Family::kMatmul) {
      c.b_read.addr = device_address(ctx, s.a_k, k_off);
      c.b_read.rows = int(s.mat_k);
      c.b_read.bytes = c.noc;
      c.b_read.row_pitch = s.k_pitch;
      c.b_read.sram = c.w_lo;
      resolve(env, c.b_read,
              [&] { return str_cat("matmul B", core_text(s, i), " (",
                                   reg_text(Reg::NACC_IN_K_DMA_ADDR, s.a_k, k_off), ")"); });
      acc += c.b_read.total();
    }
    struct Part {
      bool used;
      Reg reg;
      uint32_t addr;
      int64_t sram, bytes;
      uint64_t extra;
      bool broadcast;
    };
    const Part parts[] = {
        {s.needs_bias, Reg::NACC_BIAS_DMA_ADDR, s.a_bias, c.bias_lo, bias_entry * c.quant_count,
         uint64_t(bias_entry) * uint64_t(c.oc0), k_broadcast},
        {s.needs_quant && !scales, Reg::NACC_QUANT_MUL_DMA_ADDR, s.a_mul,
         c.mul_lo, 4 * c.quant_count, 4 * uint64_t(c.oc0), k_broadcast},
        {s.needs_quant && !scales, Reg::NACC_QUANT_SHIFT_DMA_ADDR, s.a_shift,
         c.shift_lo, 4 * c.quant_count, 4 * uint64_t(c.oc0), k_broadcast},
        // float32 (QUANT_FP32_SCALE), 4 float32 (MAC_FP32) or float64 (QUANT_REAL_SCALE) entries
        {scales, Reg::NACC_QUANT_MUL_DMA_ADDR, s.a_mul, c.scale_lo, scale_entry * c.quant_count,
         uint64_t(scale_entry) * uint64_t(c.oc0), k_broadcast},
        {s.needs_lut, Reg::NACC_IN_ACT_DMA_ADDR, s.a_act, c.lut_lo, limits::kLutEntries, 0,
         s.ncores > 1},
    };
    for (const Part& p : parts) {
      if (!p.used) continue;
      Read r;
      r.addr = device_address(ctx, p.addr, p.extra);
      r.bytes = p.bytes;
      r.sram = p.sram;
      resolve(env, r, [&] {
        return str_cat(describe(p.reg).name, core_text(s, i), " (", region_text(p.addr, p.extra),
                       ", ", p.bytes, " bytes)");
      });
      (p.broadcast ? c.rd_broadcast : c.rd_unicast) += r.total();
      c.small_reads.push_back(r);
    }
  }
  if (s.fam == Family::kElementwise) {
    c.load_temp = true;
    Read& t = c.temp_read;
    const uint64_t p = s.k_pitch;
    t.addr = device_address(ctx, s.a_k, uint64_t(c.vy0) * p * uint64_t(s.in_w) + uint64_t(c.vx0) * p);
    t.rows = p == 0 ? 1 : c.vh;
    t.cols = p == 0 ? 1 : c.vw;
    t.bytes = int64_t(s.in_c) * s.elem;
    t.row_pitch = p * uint64_t(s.in_w);
    t.pix_pitch = p;
    t.sram = c.temp.lo;
    resolve(env, t, [&] {
      return str_cat("element-wise operand", core_text(s, i), " (",
                     reg_text(Reg::NACC_IN_K_DMA_ADDR, s.a_k), ")");
    });
    c.rd_unicast += t.total();
  }
  c.ofm_addr = device_address(ctx, s.a_out,
                              uint64_t(c.y0) * s.out_row + uint64_t(s.x0) * s.out_pix +
                                  uint64_t(c.oc0) * uint64_t(s.out_elem));
  c.ofm_span = uint64_t(c.h - 1) * s.out_row + uint64_t(s.w - 1) * s.out_pix +
               uint64_t(c.noc) * uint64_t(s.out_elem);
  const BoundBuffer& ob =
      check_access(env, c.ofm_addr, c.ofm_span, true, [&] {
        return str_cat("OFM tile", core_text(s, i), " (", reg_text(Reg::NACC_OUT_DMA_ADDR, s.a_out),
                       ")");
      });
  c.ofm_host = ob.data + (c.ofm_addr - ob.address);
  c.wr_bytes = ofm_bytes;
  count_work(s, c);
  return c;
}

}  // namespace nacc::device_detail

namespace nacc::device_detail {

namespace {

// The fields of a core's plan that follow its index along a height split's
// or a kernel split's middle cores (docs/device_model.md §5): tile rows,
// first channel, addresses, residency keys. f(field) for each, in one order.
template <typename C, typename F>
void affine_fields(C& c, F&& f) {
  f(c.y0);
  f(c.oc0);
  f(c.iy0);
  f(c.vy0);
  f(c.fm_read.addr);
  f(c.temp_read.addr);
  f(c.b_read.addr);
  f(c.wblock.addr);
  for (auto& r : c.small_reads) f(r.addr);
  f(c.ofm_addr);
  for (auto& v : c.fm_key) f(v);
  for (auto& v : c.k_key) f(v);
}

bool same_shape(const Read& a, const Read& b) {
  return a.rows == b.rows && a.cols == b.cols && a.bytes == b.bytes && a.row_pitch == b.row_pitch &&
         a.pix_pitch == b.pix_pitch && a.sram == b.sram && (a.host == nullptr) == (b.host == nullptr);
}

// Everything of cores a and b but the affine fields (and the host pointers) agrees.
bool same_but_affine(const CoreWork& a, const CoreWork& b) {
  auto range = [](const SramRange& x, const SramRange& y) { return x.lo == y.lo && x.hi == y.hi; };
  if (!(a.h == b.h && a.noc == b.noc && a.ih == b.ih && a.vh == b.vh && a.vx0 == b.vx0 &&
        a.vw == b.vw && a.pad_t == b.pad_t && a.pad_b == b.pad_b && a.pad_l == b.pad_l &&
        a.pad_r == b.pad_r && range(a.ifm, b.ifm) && range(a.kern, b.kern) && range(a.ofm, b.ofm) &&
        range(a.temp, b.temp) && a.w_lo == b.w_lo && a.bias_lo == b.bias_lo &&
        a.mul_lo == b.mul_lo && a.shift_lo == b.shift_lo && a.lut_lo == b.lut_lo &&
        a.scale_lo == b.scale_lo && a.weight_count == b.weight_count &&
        a.quant_count == b.quant_count && a.int4 == b.int4 && a.load_fm == b.load_fm &&
        a.load_k == b.load_k && a.load_temp == b.load_temp && a.gathered == b.gathered &&
        a.mac_cycles == b.mac_cycles && a.act_cycles == b.act_cycles && a.macs == b.macs &&
        a.ofm_span == b.ofm_span && (a.ofm_host == nullptr) == (b.ofm_host == nullptr) &&
        a.rd_unicast == b.rd_unicast && a.rd_broadcast == b.rd_broadcast &&
        a.wr_bytes == b.wr_bytes && !a.error && !b.error)) {
    return false;
  }
  if (!same_shape(a.fm_read, b.fm_read) || !same_shape(a.temp_read, b.temp_read) ||
      !same_shape(a.b_read, b.b_read) || !same_shape(a.wblock, b.wblock) ||
      a.small_reads.size() != b.small_reads.size()) {
    return false;
  }
  for (size_t k = 0; k < a.small_reads.size(); ++k) {
    if (!same_shape(a.small_reads[k], b.small_reads[k])) return false;
  }
  return true;
}

// One access of the middle cores: the buffer holding every core's range
// (their hull: the addresses are affine in the core index), or null.
const BoundBuffer* hull_buffer(const ExecEnv& env, uint64_t a, uint64_t b, uint64_t span, bool write) {
  const uint64_t lo = std::min(a, b), hi = std::max(a, b);
  if (hi + span < hi) return nullptr;
  return find_access(env, lo, hi + span - lo, write);
}

// The middle cores of a line of L cores (line core k is core base + k *
// stride): line cores 2 .. L-3, copies of line core 1, derived from line
// cores 1 and L-2 (planned in full, or derived already), or false when that is not proven: the caller
// then plans every core. Lines: a height split's or a kernel split's cores;
// in mode 3 a channel group's row pieces (`rows`) or a row piece's channel
// groups. Proven: along rows (mode 2, or one group of mode 3) whose cores 1
// and L-2 hold no padding rows, and along channels (mode 1 but depthwise;
// one row piece of mode 3, where EU_BIAS_START_OFFSET is a multiple of the
// depth multiplier by decode, so a depthwise core's first input channel is
// too), every field of a line core's plan is an affine function of k
// (docs/device_model.md §5: AVG_HEIGHT rows at the AVG_OFFSET input step,
// oc_per_core channels at the K_TRANS_LEN stride; in mode 3 a group's
// kernel and a row piece's input are broadcast from its first core, so line
// cores 1 .. L-2 agree in what they read once), so the two planned cores fix
// it; each access's hull lies in one buffer, so every middle core's access
// does; the residency checks, per core state, are made for each core.
bool derive_line(const ExecEnv& env, const Setup& s, std::vector<CoreWork>& work, int base,
                 int stride, int len, bool rows) {
  const int n = len;
  auto core_at = [&](int k) -> CoreWork& { return work[size_t(base + k * stride)]; };
  const CoreWork& a = core_at(1);
  const CoreWork& b = core_at(n - 2);
  if (rows) {
    if (a.pad_t != 0 || a.pad_b != 0 || b.pad_t != 0 || b.pad_b != 0) return false;
  }
  if (!same_but_affine(a, b)) return false;
  constexpr int kMaxFields = 64;
  uint64_t first[kMaxFields], last[kMaxFields];
  int64_t slope[kMaxFields];
  // Where each field sits in a CoreWork and its size: the middle cores, copies
  // of core 1, are written only in the fields that change along the cores.
  size_t at[kMaxFields], size[kMaxFields];
  int nf = 0;
  bool fits = true;
  affine_fields(a, [&](const auto& v) {
    static_assert(sizeof(v) == 8 || sizeof(v) == 4, "an int or a 64-bit field");
    if (nf < kMaxFields) {
      first[nf] = uint64_t(v);
      at[nf] = size_t(reinterpret_cast<const char*>(&v) - reinterpret_cast<const char*>(&a));
      size[nf] = sizeof(v);
    }
    ++nf;
  });
  if (nf > kMaxFields) return false;
  int m = 0;
  affine_fields(b, [&](const auto& v) { last[m++] = uint64_t(v); });
  const int64_t steps = n - 3;
  for (int k = 0; k < nf; ++k) {
    // Most fields do not change along the cores: no division for them.
    const int64_t d = int64_t(last[k] - first[k]);
    slope[k] = d == 0 ? 0 : d / steps;
    if (slope[k] * steps != d) fits = false;
  }
  if (!fits) return false;
  // The buffers of the accesses.
  struct Access {
    const Read* ra;
    const Read* rb;
    const BoundBuffer* buf;
  };
  Access acc[4 + 8];
  int na = 0;
  for (auto [ra, rb] : {std::pair{&a.fm_read, &b.fm_read}, std::pair{&a.temp_read, &b.temp_read},
                        std::pair{&a.b_read, &b.b_read}, std::pair{&a.wblock, &b.wblock}}) {
    if (ra->host) acc[na++] = Access{ra, rb, nullptr};
  }
  if (a.small_reads.size() > 8) return false;
  for (size_t k = 0; k < a.small_reads.size(); ++k) {
    if (a.small_reads[k].host) acc[na++] = Access{&a.small_reads[k], &b.small_reads[k], nullptr};
  }
  for (int k = 0; k < na; ++k) {
    acc[k].buf = hull_buffer(env, acc[k].ra->addr, acc[k].rb->addr, acc[k].ra->span(), false);
    if (!acc[k].buf) return false;
  }
  const BoundBuffer* out = hull_buffer(env, a.ofm_addr, b.ofm_addr, a.ofm_span, true);
  if (!out) return false;
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "a field's low bytes come first");
  int moving[kMaxFields], nm = 0;  // the fields whose slope is not 0
  for (int k = 0; k < nf; ++k) {
    if (slope[k] != 0) moving[nm++] = k;
  }
  for (int i = 2; i <= n - 3; ++i) {
    CoreWork& c = core_at(i);  // a copy of line core 1: the other fields hold first[k] already
    c.core = base + i * stride;
    char* bytes = reinterpret_cast<char*>(&c);
    for (int j = 0; j < nm; ++j) {
      const int k = moving[j];
      // The field's T(base + slope * (i - 1)): its low bytes.
      const uint64_t v = first[k] + uint64_t(slope[k]) * uint64_t(i - 1);
      if (size[k] == 8) {
        std::memcpy(bytes + at[k], &v, 8);
      } else {
        std::memcpy(bytes + at[k], &v, 4);
      }
    }
    auto rebase = [](Read& r, const BoundBuffer* buf) { r.host = buf->data + (r.addr - buf->address); };
    int j = 0;
    for (Read* r : {&c.fm_read, &c.temp_read, &c.b_read, &c.wblock}) {
      if (r->host) rebase(*r, acc[j++].buf);
    }
    for (Read& r : c.small_reads) {
      if (r.host) rebase(r, acc[j++].buf);
    }
    c.ofm_host = out->data + (c.ofm_addr - out->address);
    check_residency(env, s, c);
  }
  return true;
}

// Mode 3's frame: the line positions planned in full along a line of L
// cores (0, 1, L-2, L-1 when L >= 5: the others derived; all of them else).
bool framed(int k, int len) { return len < 5 || k <= 1 || k >= len - 2; }

}  // namespace

void plan_cores(const ExecEnv& env, const Setup& s, std::vector<CoreWork>& work, bool derive) {
  const int n = s.ncores;
  work.clear();
  work.reserve(size_t(n));
  const int G = s.groups, R = s.row_pieces;
  if (derive && s.mode == value_of(BroadcastMode::SPLIT_2D) && (G >= 5 || R >= 5) && G * R == n) {
    try {
      // Group by group: the frame in full (groups 0, 1, G-2, G-1 x row
      // pieces 0, 1, R-2, R-1); a framed group's middle row pieces derived
      // from its row pieces 1 and R-2 once the group is in place; a middle
      // group starts as a copy of group 1 (complete by then), its cores
      // derived per row piece at the end.
      bool ok = true;
      for (int g = 0; g < G && ok; ++g) {
        for (int r = 0; r < R; ++r) {
          const int i = g * R + r;
          if (!framed(g, G)) {
            work.push_back(work[size_t(R + r)]);
          } else if (framed(r, R)) {
            work.push_back(plan_core(env, s, i));
          } else {
            work.push_back(work[size_t(g * R + 1)]);
          }
        }
        if (framed(g, G) && R >= 5) ok = derive_line(env, s, work, g * R, 1, R, true);
      }
      if (G >= 5) {
        for (int r = 0; r < R && ok; ++r) ok = derive_line(env, s, work, r, R, G, false);
      }
      if (ok) return;
    } catch (...) {
      // Planned again core by core below: the first core's fault, as always.
    }
    work.clear();
  } else if (derive && n >= 5 &&
             (s.mode == value_of(BroadcastMode::SPLIT_HEIGHT) ||
              (s.mode == value_of(BroadcastMode::SPLIT_KERNEL) && s.fam != Family::kDepthwise))) {
    try {
      // Cores 0, 1, n-2 and n-1 in full; the middle ones start as copies of core 1.
      CoreWork b = plan_core(env, s, n - 2), l = plan_core(env, s, n - 1);
      work.push_back(plan_core(env, s, 0));
      work.push_back(plan_core(env, s, 1));
      for (int i = 2; i <= n - 3; ++i) work.push_back(work[1]);
      work.push_back(std::move(b));
      work.push_back(std::move(l));
      if (derive_line(env, s, work, 0, 1, n, s.mode == value_of(BroadcastMode::SPLIT_HEIGHT))) return;
    } catch (...) {
      // Planned again core by core below: the first core's fault, as always.
    }
    work.clear();
  }
  for (int i = 0; i < n; ++i) work.push_back(plan_core(env, s, i));
}

}  // namespace nacc::device_detail

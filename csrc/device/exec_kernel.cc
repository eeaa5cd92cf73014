// Kernel commands of the simulated NACC, the reference interpreter
// (docs/device_model.md §1-§6): decodes the compute bank (kernel_decode.cc),
// plans each core (kernel_plan.cc), then per core DMAs the valid input tile
// and the kernel data into its SRAM, runs the unit from SRAM to SRAM
// (kernel_units.cc) and DMAs the output tile out; counts bytes and cycles and
// places the command on the timeline.
#include <algorithm>
#include <cstring>
#include <exception>
#include <vector>

#include "arch/limits.h"
#include "arch/sram.h"
#include "arch/weight_codec.h"
#include "device/kernel.h"
#include "device/plan_internal.h"

namespace nacc::device_detail {

// DMA of one read into SRAM, pitched rows and pixels packed.
void copy_in(const Read& r, uint8_t* sram) {
  uint8_t* dst = sram + r.sram;
  if (r.cols == 1 || r.pix_pitch == uint64_t(r.bytes)) {
    const int64_t row_bytes = int64_t(r.cols) * r.bytes;
    for (int y = 0; y < r.rows; ++y) {
      std::memcpy(dst + y * row_bytes, r.host + uint64_t(y) * r.row_pitch, size_t(row_bytes));
    }
    return;
  }
  for (int y = 0; y < r.rows; ++y) {
    const uint8_t* row = r.host + uint64_t(y) * r.row_pitch;
    for (int x = 0; x < r.cols; ++x) {
      std::memcpy(dst, row + uint64_t(x) * r.pix_pitch, size_t(r.bytes));
      dst += r.bytes;
    }
  }
}

// The im2col DMA: for each output pixel of core c's tile (row-major), its
// ky x kx window of in_c-byte pixels, in (ky, kx, channel) order, into the
// IFM area; window positions outside the input get the input zero point.
void gather_im2col(const Setup& s, const CoreWork& c, uint8_t* sram) {
  uint8_t* dst = sram + c.ifm.lo;
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
            std::memcpy(dst, c.fm_read.host + uint64_t(iy - c.vy0) * s.in_row +
                                 uint64_t(ix - c.vx0) * s.in_pix,
                        size_t(s.in_c));
          }
          dst += s.in_c;
        }
      }
    }
  }
}

// Loads the weight block: u32 little-endian stream length L, then the
// compressed stream (docs/weight_compression.md), decoded into SRAM.
void load_weights(const Setup& s, const CoreWork& c, int8_t* dst) {
  const uint8_t* p = c.wblock.host;
  const uint32_t len = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
  if (int64_t(len) > s.k_block - kWeightLengthBytes) {  // the message only on a fault
    throw DeviceFault(str_cat("weight block", core_text(s, c.core), " at ", hex(c.wblock.addr),
                              " says its stream is ", len, " bytes; the block (K_TRANS_LEN x 16 = ",
                              s.k_block, " bytes) holds at most ", s.k_block - kWeightLengthBytes,
                              " after the 4-byte length"));
  }
  try {
    weight_codec::decode(p + kWeightLengthBytes, len, dst, size_t(c.weight_bytes()));
  } catch (const Error& e) {
    throw DeviceFault(str_cat("weight block", core_text(s, c.core), " at ", hex(c.wblock.addr),
                              " (", c.weight_count, " weights expected",
                              s.int4 ? str_cat(", int4: ", c.weight_bytes(), " bytes") : "",
                              "): ", e.what()));
  }
}

void unpack_int4(const int8_t* packed, int64_t n, int8_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t b = uint8_t(packed[i / 2]);
    const int nib = (i % 2 ? b >> 4 : b) & 0xF;
    out[i] = int8_t(nib >= 8 ? nib - 16 : nib);
  }
}

// DMA of the OFM tile out of SRAM, pitched.
void copy_out(const Setup& s, const CoreWork& c, const uint8_t* sram) {
  const uint8_t* src = sram + c.ofm.lo;
  const int64_t px = int64_t(c.noc) * s.out_elem;  // bytes of one output pixel of the tile
  for (int y = 0; y < c.h; ++y) {
    uint8_t* row = c.ofm_host + uint64_t(y) * s.out_row;
    if (s.out_pix == uint64_t(px)) {
      std::memcpy(row, src, size_t(px * s.w));
      src += px * s.w;
      continue;
    }
    for (int x = 0; x < s.w; ++x) {
      std::memcpy(row + uint64_t(x) * s.out_pix, src, size_t(px));
      src += px;
    }
  }
}

namespace {

void clobber(Resident& r, const SramRange& written) {
  if (r.valid && r.range.overlaps(written)) r.valid = false;
}

}  // namespace

void execute_kernel(ExecEnv& env, Opcode op, uint32_t word) {
  HandlerContext& ctx = env.ctx;
  const Setup s = read_setup(ctx.regs, op, env.hw);
  const int n = s.ncores;
  const bool data = env.data();
  for (int i = 0; i < n && data; ++i) {  // a plan build touches no SRAM (load_kernel)
    auto& sram = ctx.cores[size_t(i)].sram;
    if (sram.empty()) sram.assign(size_t(env.hw.sram_bytes), 0);
  }
  std::vector<CoreWork> work;
  plan_cores(env, s, work, env.rec != nullptr);

  // Race check against the DMA queue (docs/command_stream.md §3.2).
  PendingOp pend;
  pend.word = word;
  pend.op = op;
  pend.reads.reserve(work.size() * 4);
  pend.writes.reserve(work.size());
  for (const CoreWork& c : work) {
    if (c.load_fm) pend.reads.push_back(c.fm_read.interval());
    if (c.load_k) {
      if (c.wblock.host) pend.reads.push_back(c.wblock.interval());
      if (c.b_read.host) pend.reads.push_back(c.b_read.interval());
      for (const Read& r : c.small_reads) pend.reads.push_back(r.interval());
    }
    if (c.load_temp) pend.reads.push_back(c.temp_read.interval());
    pend.writes.push_back(Interval{c.ofm_addr, c.ofm_addr + c.ofm_span});
  }
  check_race(ctx.dmas, pend, "DMA");

  // From here on SRAM changes: forget what the written ranges held.
  for (const CoreWork& c : work) {
    CoreState& cs = ctx.cores[size_t(c.core)];
    for (Resident* r : {&cs.fm, &cs.kernel}) {
      if (c.load_fm) clobber(*r, c.ifm);
      if (c.load_k) clobber(*r, c.kern);
      if (c.load_temp) clobber(*r, c.temp);
      clobber(*r, c.ofm);
    }
    if (c.load_fm) cs.fm.valid = false;
    if (c.load_k) cs.kernel.valid = false;
  }

  // Loads. A broadcast operand (K area in mode 2, IFM in mode 1) is fetched by
  // core 0 and delivered to every core. Building a plan loads only kernel data
  // from immutable regions, into the plan's kernel data (load_kernel), and
  // moves nothing into SRAM.
  if (!data) {
    for (const CoreWork& c : work) {
      if (c.load_k && !(s.mode == value_of(BroadcastMode::SPLIT_HEIGHT) && c.core > 0)) {
        load_kernel(*env.rec, s, c);
      }
    }
  }
  uint8_t* sram0 = data ? ctx.cores[0].sram.data() : nullptr;
  for (const CoreWork& c : work) {
    if (!data) break;
    uint8_t* sram = ctx.cores[size_t(c.core)].sram.data();
    if (c.load_fm) {
      // Mode 1 broadcasts the IFM, but to a depthwise core its own channels.
      if (s.mode == value_of(BroadcastMode::SPLIT_KERNEL) && s.fam != Family::kDepthwise &&
          c.core > 0) {
        std::memcpy(sram + c.ifm.lo, sram0 + work[0].ifm.lo, size_t(c.ifm.hi - c.ifm.lo));
      } else if (s.im2col) {
        gather_im2col(s, c, sram);
      } else {
        copy_in(c.fm_read, sram);
      }
    }
    if (c.load_k) {
      if (s.mode == value_of(BroadcastMode::SPLIT_HEIGHT) && c.core > 0) {
        std::memcpy(sram + c.kern.lo, sram0 + work[0].kern.lo, size_t(c.kern.hi - c.kern.lo));
      } else {
        if (c.wblock.host) load_weights(s, c, reinterpret_cast<int8_t*>(sram + c.w_lo));
        if (c.b_read.host) copy_in(c.b_read, sram);
        for (const Read& r : c.small_reads) copy_in(r, sram);
      }
    }
    if (c.load_temp) copy_in(c.temp_read, sram);
  }
  if (env.rec) record_kernel(*env.rec, env, s, work);

  // Compute, on host threads when the command is worth it.
  if (data) {
    int64_t work_macs = 0;
    for (const CoreWork& c : work) work_macs += std::max(c.macs, c.mac_cycles);
    auto body = [&](int i) {
      try {
        const CoreWork& c = work[size_t(i)];
        run_unit(s, c, sram_buffers(c, ctx.cores[size_t(i)].sram.data()));
      } catch (...) {
        work[size_t(i)].error = std::current_exception();
      }
    };
    if (n > 1 && env.pool.threads() > 1 && work_macs >= env.parallel_min_macs) {
      env.pool.parallel_for(n, body);
    } else {
      for (int i = 0; i < n; ++i) body(i);
    }
    for (const CoreWork& c : work) {
      if (!c.error) continue;
      try {
        std::rethrow_exception(c.error);
      } catch (const DeviceFault&) {
        throw;
      } catch (const Error& e) {
        throw DeviceFault(str_cat(opcode_name(op), " unit", core_text(s, c.core), ": ", e.what()));
      }
    }
    for (const CoreWork& c : work) copy_out(s, c, ctx.cores[size_t(c.core)].sram.data());
  }

  // Residency, counters, timeline.
  int64_t ext_rd = work[0].rd_broadcast, ext_wr = 0;
  for (const CoreWork& c : work) {
    ext_rd += c.rd_unicast;
    ext_wr += c.wr_bytes;
  }
  CommandRecord rec;
  rec.word = word;
  rec.op = op;
  rec.issue = ctx.cp_time;
  rec.start = INT64_MAX;
  rec.ext_read_bytes = ext_rd;
  rec.ext_write_bytes = ext_wr;
  rec.cores.reserve(work.size());
  // transfer_cycles of each core's bytes, computed again only when they
  // differ from the last core's (the cores of a split move the same bytes).
  struct Transfer {
    int64_t ext;
    const HwConfig& hw;
    int64_t bytes = -1, cycles = 0;
    int64_t operator()(int64_t b) {
      if (b != bytes) {
        bytes = b;
        cycles = cost::transfer_cycles(b, ext, hw);
      }
      return cycles;
    }
  };
  Transfer read_cycles{ext_rd, env.hw}, write_cycles{ext_wr, env.hw};
  for (const CoreWork& c : work) {
    CoreState& cs = ctx.cores[size_t(c.core)];
    if (c.load_fm) cs.fm = Resident{true, c.ifm, c.fm_key};
    if (c.load_k) cs.kernel = Resident{true, c.kern, c.k_key};

    const int64_t horizon = std::min(cs.rd_free, cs.mac_free);
    cs.busy.erase(std::remove_if(cs.busy.begin(), cs.busy.end(),
                                 [&](const Busy& b) { return b.until <= horizon; }),
                  cs.busy.end());
    auto busy_until = [&](const SramRange& r) {
      int64_t t = 0;
      for (const Busy& b : cs.busy) {
        if (b.range.overlaps(r)) t = std::max(t, b.until);
      }
      return t;
    };
    CoreSpan sp;
    sp.core = c.core;
    sp.read_bytes = c.rd_unicast + c.rd_broadcast;
    sp.write_bytes = c.wr_bytes;
    sp.mac_cycles = c.mac_cycles;
    sp.act_cycles = c.act_cycles;
    sp.macs = c.macs;
    if (sp.read_bytes > 0) {
      int64_t ready = std::max(ctx.cp_time, cs.rd_free);
      if (c.load_fm) ready = std::max(ready, busy_until(c.ifm));
      if (c.load_k) ready = std::max(ready, busy_until(c.kern));
      if (c.load_temp) ready = std::max(ready, busy_until(c.temp));
      sp.read_start = ready;
      sp.read_end = ready + read_cycles(sp.read_bytes);
      cs.rd_free = sp.read_end;
    } else {
      sp.read_start = sp.read_end = ctx.cp_time;
    }
    const int64_t compute_ready = std::max({ctx.cp_time, cs.mac_free, busy_until(c.ofm)});
    sp.compute_start = std::max(sp.read_end, compute_ready);
    sp.stall_cycles = std::max<int64_t>(0, sp.read_end - compute_ready);
    sp.compute_end = sp.compute_start + std::max(c.mac_cycles, c.act_cycles);
    sp.write_start = std::max(sp.compute_end, cs.wr_free);
    sp.write_end = sp.write_start + write_cycles(sp.write_bytes);
    cs.mac_free = sp.compute_end;
    cs.wr_free = sp.write_end;
    cs.busy.push_back(Busy{c.ifm, sp.compute_end});
    if (!c.kern.empty()) cs.busy.push_back(Busy{c.kern, sp.compute_end});
    if (!c.temp.empty()) cs.busy.push_back(Busy{c.temp, sp.compute_end});
    cs.busy.push_back(Busy{c.ofm, sp.write_end});

    CoreCounters& cc = ctx.run.cores[size_t(c.core)];
    cc.dma_read_bytes += sp.read_bytes;
    cc.dma_write_bytes += sp.write_bytes;
    cc.mac_cycles += sp.mac_cycles;
    cc.act_cycles += sp.act_cycles;
    cc.stall_cycles += sp.stall_cycles;
    cc.busy_cycles += sp.compute_end - sp.compute_start;
    cc.macs += sp.macs;
    cc.kernels += 1;
    int64_t high = c.ofm.hi;
    if (c.load_fm) high = std::max(high, c.ifm.hi);
    if (c.load_k) high = std::max(high, c.kern.hi);
    if (c.load_temp) high = std::max(high, c.temp.hi);
    sp.sram_high = high;
    cc.sram_high_water = std::max(cc.sram_high_water, high);
    ctx.run.sram_high_water = std::max(ctx.run.sram_high_water, high);
    ctx.run.mac_cycles += sp.mac_cycles;
    ctx.run.act_cycles += sp.act_cycles;
    ctx.run.stall_cycles += sp.stall_cycles;
    rec.macs += sp.macs;
    rec.start = std::min(rec.start, sp.read_start);
    rec.end = std::max(rec.end, sp.write_end);
    rec.cores.push_back(sp);
  }
  ctx.run.macs += rec.macs;
  ctx.run.dma_read_bytes += ext_rd;
  ctx.run.dma_write_bytes += ext_wr;
  ctx.run.kernels += 1;
  ctx.run.cycles = std::max(ctx.run.cycles, rec.end);
  pend.end = rec.end;
  ctx.kernels.push_back(std::move(pend));
  ctx.run.timeline.push_back(std::move(rec));
}

}  // namespace nacc::device_detail

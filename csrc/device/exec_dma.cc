// DMA-queue commands of the simulated NACC: NPU_OP_DMA_START (memory-to-memory
// copy) and NPU_OP_VNCHWCONV (the scatter_vnchwconv layout unit run on device
// memory, NACC_SPEC §7). Both are bounds-checked in full before any byte moves.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "arch/cost_model.h"
#include "arch/fields.h"
#include "device/device_internal.h"
#include "device/plan_internal.h"
#include "device/units/vnchwconv.h"

namespace nacc::device_detail {
namespace {

using cost::ceil_div;

// The DMA-queue engine: one port of dma_bytes_per_cycle that reads then
// writes every byte, limited by the shared external bandwidth
// (docs/performance_model.md).
void queue_op(ExecEnv& env, PendingOp&& pend, int64_t bytes_read, int64_t bytes_written) {
  HandlerContext& ctx = env.ctx;
  CommandRecord rec;
  rec.word = pend.word;
  rec.op = pend.op;
  rec.issue = ctx.cp_time;
  rec.start = std::max(ctx.cp_time, ctx.dma_free);
  // One port that reads then writes: every byte through it and the shared port.
  const int64_t bytes = bytes_read + bytes_written;
  rec.end = rec.start + cost::transfer_cycles(bytes, bytes, env.hw);
  rec.ext_read_bytes = bytes_read;
  rec.ext_write_bytes = bytes_written;
  ctx.dma_free = rec.end;
  ctx.run.dma_read_bytes += bytes_read;
  ctx.run.dma_write_bytes += bytes_written;
  ctx.run.dma_ops += 1;
  ctx.run.cycles = std::max(ctx.run.cycles, rec.end);
  pend.end = rec.end;
  ctx.dmas.push_back(std::move(pend));
  ctx.run.timeline.push_back(std::move(rec));
}

}  // namespace

void execute_dma_copy(ExecEnv& env, uint32_t word) {
  HandlerContext& ctx = env.ctx;
  const uint32_t src = ctx.regs.get(Reg::DMA_SRC), dst = ctx.regs.get(Reg::DMA_DST);
  const uint64_t len = ctx.regs.get(Reg::DMA_LEN);
  PendingOp pend;
  pend.word = word;
  pend.op = Opcode::NPU_OP_DMA_START;
  if (len == 0) {
    queue_op(env, std::move(pend), 0, 0);
    return;
  }
  const uint64_t s = device_address(ctx, src, 0), d = device_address(ctx, dst, 0);
  const BoundBuffer& sb =
      check_access(env, s, len, false, [&] {
        return str_cat("DMA source (DMA_SRC = ", region_text(src), ", DMA_LEN = ", len, ")");
      });
  const BoundBuffer& db = check_access(env, d, len, true, [&] {
    return str_cat("DMA destination (DMA_DST = ", region_text(dst), ", DMA_LEN = ", len, ")");
  });
  pend.reads.push_back(Interval{s, s + len});
  pend.writes.push_back(Interval{d, d + len});
  check_race(ctx.kernels, pend, "kernel");
  if (env.rec) {
    record_copy(*env.rec, word, s, d, len);
  } else {
    std::memmove(db.data + (d - db.address), sb.data + (s - sb.address), size_t(len));
  }
  queue_op(env, std::move(pend), int64_t(len), int64_t(len));
}

void execute_vnchwconv(ExecEnv& env, uint32_t word) {
  HandlerContext& ctx = env.ctx;
  const RegisterFile& r = ctx.regs;
  const uint32_t src = r.get(Reg::VNCHWCONV_SRC), dst = r.get(Reg::VNCHWCONV_DST);
  const uint64_t sbs = r.get(Reg::VNCHWCONV_SRC_BLOCK_STRIDE);
  const uint64_t dbs = r.get(Reg::VNCHWCONV_DST_BLOCK_STRIDE);
  const int repeat = int(r.field(fields::VNCHWCONV_CFG::REPEAT));
  const uint64_t src_stride = r.field(fields::VNCHWCONV_STRIDE::SRC_STRIDE),
                 dst_stride = r.field(fields::VNCHWCONV_STRIDE::DST_STRIDE);
  const uint32_t dtype = r.field(fields::VNCHWCONV_CFG::DTYPE);
  PendingOp pend;
  pend.word = word;
  pend.op = Opcode::NPU_OP_VNCHWCONV;
  if (dtype > 2) throw DeviceFault(str_cat("VNCHWCONV_CFG.DTYPE = ", dtype, " is not b8/b16/b32 (0, 1, 2)"));
  if (repeat == 0) {  // [V]: repeat = 0 does nothing
    queue_op(env, std::move(pend), 0, 0);
    return;
  }
  const uint64_t block = uint64_t(limits::kUbBlockBytes);
  auto aligned = [&](uint64_t v) { return v % block == 0; };
  if (!aligned(region_offset(src)) || !aligned(region_offset(dst)) || !aligned(sbs) || !aligned(dbs)) {
    throw DeviceFault(str_cat("VNCHWCONV_SRC/DST offsets and block strides must be multiples of ",
                              block, " bytes (32-byte blocks, NACC_SPEC §7); got SRC ",
                              region_text(src), ", DST ", region_text(dst), ", block strides ",
                              sbs, " / ", dbs));
  }
  const int nb = limits::kVnchwBlocksPerOperand;
  // Every block of every iteration, checked before anything moves; each
  // distinct device block gets one 32-byte slot of a scratch UB so that
  // overlapping source and destination blocks keep the unit's in-place
  // semantics.
  std::vector<uint64_t> slot_addr;
  std::unordered_map<uint64_t, int64_t> slot_of;
  std::vector<std::array<int64_t, 16>> src_slots(static_cast<size_t>(repeat));
  std::vector<std::array<int64_t, 16>> dst_slots(static_cast<size_t>(repeat));
  std::vector<const BoundBuffer*> slot_buf;
  Interval rd{~uint64_t(0), 0}, wr{~uint64_t(0), 0};
  auto slot = [&](uint64_t addr, bool write, const char* what, int k, int it) {
    const BoundBuffer& b = check_access(env, addr, block, write, [&] {
      return str_cat("VNCHWCONV ", what, " block ", k, " of iteration ", it, " (", hex(addr), ")");
    });
    Interval& iv = write ? wr : rd;
    iv.lo = std::min(iv.lo, addr);
    iv.hi = std::max(iv.hi, addr + block);
    auto [it2, fresh] = slot_of.emplace(addr, int64_t(slot_addr.size()));
    if (fresh) {
      slot_addr.push_back(addr);
      slot_buf.push_back(&b);
    }
    return it2->second * int64_t(block);
  };
  const uint64_t s0 = device_address(ctx, src, 0), d0 = device_address(ctx, dst, 0);
  for (int it = 0; it < repeat; ++it) {
    for (int k = 0; k < nb; ++k) {
      src_slots[size_t(it)][size_t(k)] =
          slot(s0 + uint64_t(k) * sbs + uint64_t(it) * src_stride * block, false, "source", k, it);
    }
  }
  for (int it = 0; it < repeat; ++it) {
    for (int k = 0; k < nb; ++k) {
      dst_slots[size_t(it)][size_t(k)] =
          slot(d0 + uint64_t(k) * dbs + uint64_t(it) * dst_stride * block, true, "destination", k, it);
    }
  }
  pend.reads.push_back(rd);
  pend.writes.push_back(wr);
  check_race(ctx.kernels, pend, "kernel");
  const VnchwElem elem = dtype == 0   ? VnchwElem::kB8
                         : dtype == 1 ? VnchwElem::kB16
                                      : VnchwElem::kB32;
  const bool src_high = r.field(fields::VNCHWCONV_CFG::SRC_HIGH_HALF) != 0;
  const bool dst_high = r.field(fields::VNCHWCONV_CFG::DST_HIGH_HALF) != 0;
  const bool reverse = r.field(fields::VNCHWCONV_CFG::REVERSE) != 0;
  if (env.rec) {
    // The unit's parameter checks, as the run below makes them (no data).
    VnchwconvParams probe;
    probe.elem = elem;
    probe.repeat = 0;
    probe.src_high_half = src_high;
    probe.dst_high_half = dst_high;
    try {
      if (reverse) {
        scatter_vnchwconv_reverse(UnifiedBuffer{}, probe);
      } else {
        scatter_vnchwconv(UnifiedBuffer{}, probe);
      }
    } catch (const Error& e) {
      throw DeviceFault(str_cat("vnchwconv unit: ", e.what()));
    }
    // The plan replays the unit's loops on device memory (plan.cc).
    VnchwTrace t;
    t.word = word;
    t.src_block_stride = sbs;
    t.dst_block_stride = dbs;
    t.src_step = src_stride * block;
    t.dst_step = dst_stride * block;
    t.repeat = repeat;
    t.elem = elem;
    t.src_high_half = src_high;
    t.dst_high_half = dst_high;
    t.reverse = reverse;
    record_vnchwconv(*env.rec, t, s0, d0, rd, wr);
    queue_op(env, std::move(pend), int64_t(repeat) * nb * int64_t(block),
             int64_t(repeat) * nb * int64_t(block));
    return;
  }

  std::vector<uint8_t> ub(slot_addr.size() * block);
  for (size_t i = 0; i < slot_addr.size(); ++i) {
    std::memcpy(ub.data() + i * block, slot_buf[i]->data + (slot_addr[i] - slot_buf[i]->address), block);
  }
  VnchwconvParams p;
  p.elem = elem;
  p.repeat = 1;
  p.src_high_half = src_high;
  p.dst_high_half = dst_high;
  const UnifiedBuffer buf{ub.data(), int64_t(ub.size())};
  try {
    for (int it = 0; it < repeat; ++it) {
      p.src = src_slots[size_t(it)];
      p.dst = dst_slots[size_t(it)];
      if (reverse) {
        scatter_vnchwconv_reverse(buf, p);
      } else {
        scatter_vnchwconv(buf, p);
      }
    }
  } catch (const Error& e) {
    throw DeviceFault(str_cat("vnchwconv unit: ", e.what()));
  }
  // Only destination blocks are written back.
  std::vector<bool> is_dst(slot_addr.size(), false);
  for (const auto& ds : dst_slots) {
    for (int64_t off : ds) is_dst[size_t(off / int64_t(block))] = true;
  }
  for (size_t i = 0; i < slot_addr.size(); ++i) {
    if (!is_dst[i]) continue;
    std::memcpy(slot_buf[i]->data + (slot_addr[i] - slot_buf[i]->address), ub.data() + i * block, block);
  }
  const int64_t bytes = int64_t(repeat) * nb * int64_t(block);
  queue_op(env, std::move(pend), bytes, bytes);
}

}  // namespace nacc::device_detail

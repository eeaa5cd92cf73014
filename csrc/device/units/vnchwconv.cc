// The vector layout unit (NACC_SPEC §7): scatter_vnchwconv and its reverse as
// the literal loops of seed [V] over a 512-byte source snapshot per iteration,
// and the whole-tensor NCHW <-> NC1HWC0 conversions tiled through a scratch UB.
#include "device/units/vnchwconv.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "arch/limits.h"
#include "common/error.h"

namespace nacc {

namespace {

constexpr int kBlock = limits::kUbBlockBytes;
constexpr int kPointers = limits::kVnchwBlocksPerOperand;

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
void store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

const char* op_name(VnchwElem elem, bool reverse) {
  switch (elem) {
    case VnchwElem::kB8: return reverse ? "scatter_vnchwconv_reverse_b8" : "scatter_vnchwconv_b8";
    case VnchwElem::kB16:
      return reverse ? "scatter_vnchwconv_reverse_b16" : "scatter_vnchwconv_b16";
    case VnchwElem::kB32:
      return reverse ? "scatter_vnchwconv_reverse_b32" : "scatter_vnchwconv_b32";
  }
  return "scatter_vnchwconv";
}

void validate(const char* op, const UnifiedBuffer& ub, const VnchwconvParams& p) {
  check_arg(ub.size >= 0 && (ub.data != nullptr || ub.size == 0), op,
            ": the UB needs a buffer of size >= 0, got size ", ub.size);
  check_arg(p.elem == VnchwElem::kB8 || p.elem == VnchwElem::kB16 || p.elem == VnchwElem::kB32,
            op, ": element type must be b8, b16 or b32");
  check_arg(p.repeat >= 0 && p.repeat <= limits::kVnchwMaxRepeat, op, ": repeat ", p.repeat,
            " out of range [0, ", limits::kVnchwMaxRepeat, "] (uint8_t, NACC_SPEC §7)");
  check_arg(p.dst_stride >= 0 && p.dst_stride <= limits::kVnchwMaxStride, op, ": dst_stride ",
            p.dst_stride, " out of range [0, ", limits::kVnchwMaxStride,
            "] blocks (uint16_t, NACC_SPEC §7)");
  check_arg(p.src_stride >= 0 && p.src_stride <= limits::kVnchwMaxStride, op, ": src_stride ",
            p.src_stride, " out of range [0, ", limits::kVnchwMaxStride,
            "] blocks (uint16_t, NACC_SPEC §7)");
  if (p.elem != VnchwElem::kB8) {
    check_arg(!p.dst_high_half && !p.src_high_half, op,
              ": dst_high_half / src_high_half exist only for b8 (C0 = 32), not for ",
              vnchw_elem_name(p.elem));
  }
  const auto check_pointers = [&](const std::array<int64_t, 16>& ptrs, const char* operand) {
    for (int i = 0; i < kPointers; ++i) {
      const int64_t a = ptrs[i];
      check_arg(a >= 0 && a <= limits::kUbMaxBlockAddress && a % kBlock == 0, op, ": ", operand,
                " block ", i, " address ", a, " must be a multiple of ", kBlock, " in [0, ",
                limits::kUbMaxBlockAddress,
                "] (a 16-bit pointer to 32-byte UB blocks, NACC_SPEC §7)");
    }
  };
  check_pointers(p.dst, "dst");
  check_pointers(p.src, "src");
}

// Every block of every iteration must lie inside the UB. Addresses grow with
// the iteration, so checking the last iteration suffices to accept; on failure
// the iterations are scanned in order to name the first bad access.
void check_bounds(const char* op, const UnifiedBuffer& ub, const VnchwconvParams& p) {
  if (p.repeat == 0) return;
  const auto fits = [&](int64_t addr) { return addr + kBlock <= ub.size; };
  const int64_t last = p.repeat - 1;
  bool ok = true;
  for (int i = 0; i < kPointers; ++i) {
    ok = ok && fits(p.src[i] + last * p.src_stride * kBlock) &&
         fits(p.dst[i] + last * p.dst_stride * kBlock);
  }
  if (ok) return;
  for (int64_t r = 0; r < p.repeat; ++r) {
    for (int operand = 0; operand < 2; ++operand) {
      const auto& ptrs = operand == 0 ? p.src : p.dst;
      const int64_t stride = operand == 0 ? p.src_stride : p.dst_stride;
      for (int i = 0; i < kPointers; ++i) {
        const int64_t addr = ptrs[i] + r * stride * kBlock;
        if (!fits(addr)) {
          throw DeviceFault(str_cat(op, ": bus error: ", operand == 0 ? "src" : "dst", " block ", i,
                                    " at iteration ", r, operand == 0 ? " reads" : " writes",
                                    " bytes [", addr, ", ",
                                    addr + kBlock, ") outside the UB of ", ub.size,
                                    " bytes (pointer ", ptrs[i], " + ", r, " * stride ", stride,
                                    " * 32)"));
        }
      }
    }
  }
}

// bit-reversed 4-bit indices: four rounds of "row 2i and 2i+1 interleaved
// into rows i and i+8" take element (a, b) to row rev(b), column rev(a)
// (each round rotates the index bits by one), so the rows go in in rev order
// and come out in rev order.
constexpr int kRev4[16] = {0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15};

}  // namespace

void vnchwconv_transpose_b8(const uint8_t* const* rows, uint8_t* const* out) {
  __m128i x[16], y[16];
  for (int i = 0; i < 16; ++i) {
    x[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[kRev4[i]]));
  }
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 8; ++i) {
      y[i] = _mm_unpacklo_epi8(x[2 * i], x[2 * i + 1]);
      y[i + 8] = _mm_unpackhi_epi8(x[2 * i], x[2 * i + 1]);
    }
    for (int i = 0; i < 16; ++i) x[i] = y[i];
  }
  for (int j = 0; j < 16; ++j) _mm_storeu_si128(reinterpret_cast<__m128i*>(out[j]), x[kRev4[j]]);
}

namespace {

// One iteration. `s[k]` is source block k (a snapshot), `d[e]` destination
// block e in the UB. The loops are [V]'s, with the b16 correction of §7.
void forward_iteration(VnchwElem elem, const uint8_t (*s)[kBlock], uint8_t* const* d,
                       bool dst_high_half, bool src_high_half) {
  switch (elem) {
    case VnchwElem::kB32:
      for (int e = 0; e < 16; e += 2) {
        for (int k = 0; k < 8; ++k) {
          store<uint32_t>(d[e] + 4 * k, load<uint32_t>(s[k] + 4 * (e / 2)));
          store<uint32_t>(d[e + 1] + 4 * k, load<uint32_t>(s[k + 8] + 4 * (e / 2)));
        }
      }
      break;
    case VnchwElem::kB16:
      for (int e = 0; e < 16; ++e) {
        for (int k = 0; k < 16; ++k) {
          store<uint16_t>(d[e] + 2 * k, load<uint16_t>(s[k] + 2 * e));
        }
      }
      break;
    case VnchwElem::kB8: {
      // d[e][k + dh] = s[k][e + sh]: a 16 x 16 byte transpose; the half-blocks
      // are stored in e order (a block listed twice ends with the later e's
      // bytes, as element by element).
      const int dh = dst_high_half ? 16 : 0, sh = src_high_half ? 16 : 0;
      const uint8_t* rows[16];
      uint8_t* out[16];
      for (int i = 0; i < 16; ++i) rows[i] = s[i] + sh, out[i] = d[i] + dh;
      vnchwconv_transpose_b8(rows, out);
      break;
    }
  }
}

// The same loops with every assignment turned around (NACC_SPEC §7 reverse).
void reverse_iteration(VnchwElem elem, const uint8_t (*s)[kBlock], uint8_t* const* d,
                       bool dst_high_half, bool src_high_half) {
  switch (elem) {
    case VnchwElem::kB32:
      for (int e = 0; e < 16; e += 2) {
        for (int k = 0; k < 8; ++k) {
          store<uint32_t>(d[k] + 4 * (e / 2), load<uint32_t>(s[e] + 4 * k));
          store<uint32_t>(d[k + 8] + 4 * (e / 2), load<uint32_t>(s[e + 1] + 4 * k));
        }
      }
      break;
    case VnchwElem::kB16:
      for (int e = 0; e < 16; ++e) {
        for (int k = 0; k < 16; ++k) {
          store<uint16_t>(d[k] + 2 * e, load<uint16_t>(s[e] + 2 * k));
        }
      }
      break;
    case VnchwElem::kB8: {
      // d[k][e + dh] = s[e][k + sh]: the same transpose, the half-blocks stored
      // in k order (for each byte the loop's last writer of a block listed
      // twice is the larger k).
      const int dh = dst_high_half ? 16 : 0, sh = src_high_half ? 16 : 0;
      const uint8_t* rows[16];
      uint8_t* out[16];
      for (int i = 0; i < 16; ++i) rows[i] = s[i] + sh, out[i] = d[i] + dh;
      vnchwconv_transpose_b8(rows, out);
      break;
    }
  }
}

void run(const UnifiedBuffer& ub, const VnchwconvParams& p, bool reverse) {
  const char* op = op_name(p.elem, reverse);
  validate(op, ub, p);
  check_bounds(op, ub, p);
  // The source register: all 16 blocks are read before any element is written.
  uint8_t snapshot[kPointers][kBlock];
  uint8_t* d[kPointers];
  for (int64_t r = 0; r < p.repeat; ++r) {
    for (int k = 0; k < kPointers; ++k) {
      std::memcpy(snapshot[k], ub.data + p.src[k] + r * p.src_stride * kBlock, kBlock);
      d[k] = ub.data + p.dst[k] + r * p.dst_stride * kBlock;
    }
    if (reverse) {
      reverse_iteration(p.elem, snapshot, d, p.dst_high_half, p.src_high_half);
    } else {
      forward_iteration(p.elem, snapshot, d, p.dst_high_half, p.src_high_half);
    }
  }
}

// ---- whole-tensor conversions ------------------------------------------------

// The scratch UB: one core's SRAM (NACC_SPEC §1); half holds the NCHW rows of
// a tile, half its NC1HWC0 slab.
constexpr int64_t kScratchUbBytes = limits::kDefaultSramBytes;

struct TileLayout {
  VnchwElem elem;
  int elem_bytes;
  int c0;                // channels per C1 slab
  int elems_per_block;   // 32 / elem_bytes
  int64_t tile_hw;       // H*W positions per tile, a multiple of elems_per_block
  int64_t row_bytes;     // one channel's row of the tile in the UB
  int64_t nc_base;       // UB offset of the NC1HWC0 slab (after the C0 rows)
};

TileLayout make_layout(const char* fn, int elem_bytes, int64_t hw) {
  check_arg(elem_bytes == 1 || elem_bytes == 2 || elem_bytes == 4, fn, ": elem_bytes ",
            elem_bytes, " must be 1, 2 or 4 (b8, b16, b32)");
  TileLayout t;
  t.elem = elem_bytes == 1 ? VnchwElem::kB8 : elem_bytes == 2 ? VnchwElem::kB16 : VnchwElem::kB32;
  t.elem_bytes = elem_bytes;
  t.c0 = nc1hwc0_c0(elem_bytes);
  t.elems_per_block = kBlock / elem_bytes;
  // 1024 positions for b8/b16, 512 for b32 (repeat 32, 64, 64: within 255);
  // smaller tensors get a tile just large enough.
  const int64_t max_tile = kScratchUbBytes / 2 / (int64_t{t.c0} * elem_bytes);
  const int64_t rounded = (hw + t.elems_per_block - 1) / t.elems_per_block * t.elems_per_block;
  t.tile_hw = std::max<int64_t>(t.elems_per_block, std::min(max_tile, rounded));
  t.row_bytes = t.tile_hw * elem_bytes;
  t.nc_base = t.c0 * t.row_bytes;
  return t;
}

// Runs the transposition of one tile of `used_hw` positions (a multiple of
// elems_per_block): NCHW rows at UB offset 0 <-> NC1HWC0 slab at nc_base.
void transpose_tile(const UnifiedBuffer& ub, const TileLayout& t, int64_t used_hw, bool reverse) {
  const int64_t repeat = used_hw / t.elems_per_block;
  // One iteration covers elems_per_block positions: the rows advance one block,
  // the slab elems_per_block * C0 * elem_bytes bytes (16 blocks; b8: 32).
  const int64_t slab_stride = int64_t{t.elems_per_block} * t.c0 * t.elem_bytes / kBlock;
  const auto issue = [&](int channel_half, int hw_half) {
    VnchwconvParams p;
    p.elem = t.elem;
    p.repeat = repeat;
    std::array<int64_t, 16> rows, slab;
    for (int i = 0; i < kPointers; ++i) {
      rows[i] = (16 * channel_half + i) * t.row_bytes;  // channel row 16*half + i
      slab[i] = t.nc_base + (16 * hw_half + i) * kBlock;  // slab block of position 16*half + i
    }
    // The NCHW side's high half selects H*W positions 16..31 of a row block,
    // the NC1HWC0 side's selects channels 16..31 of a position (b8 only).
    if (!reverse) {
      p.src = rows, p.src_stride = 1, p.src_high_half = hw_half != 0;
      p.dst = slab, p.dst_stride = slab_stride, p.dst_high_half = channel_half != 0;
      scatter_vnchwconv(ub, p);
    } else {
      p.dst = rows, p.dst_stride = 1, p.dst_high_half = hw_half != 0;
      p.src = slab, p.src_stride = slab_stride, p.src_high_half = channel_half != 0;
      scatter_vnchwconv_reverse(ub, p);
    }
  };
  if (t.elem == VnchwElem::kB8) {
    // C0 = 32 channels x 32 positions per block: four half-by-half transposes.
    for (int channel_half = 0; channel_half < 2; ++channel_half) {
      for (int hw_half = 0; hw_half < 2; ++hw_half) issue(channel_half, hw_half);
    }
  } else {
    issue(0, 0);
  }
}

void check_dims(const char* fn, int64_t N, int64_t C, int64_t H, int64_t W) {
  check_arg(N >= 0 && C >= 0 && H >= 0 && W >= 0, fn, ": dimensions must be >= 0, got N=", N,
            " C=", C, " H=", H, " W=", W);
}

void convert(const char* fn, int elem_bytes, int64_t N, int64_t C, int64_t H, int64_t W,
             const uint8_t* src, uint8_t* dst, bool reverse) {
  check_dims(fn, N, C, H, W);
  const int64_t HW = H * W;
  const TileLayout t = make_layout(fn, elem_bytes, HW);
  const int64_t C1 = (C + t.c0 - 1) / t.c0;
  if (N == 0 || C == 0 || HW == 0) return;
  std::vector<uint8_t> scratch(2 * t.nc_base, 0);
  const UnifiedBuffer ub{scratch.data(), static_cast<int64_t>(scratch.size())};
  const int64_t eb = elem_bytes;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c1 = 0; c1 < C1; ++c1) {
      const int64_t channels = std::min<int64_t>(t.c0, C - c1 * t.c0);
      const int64_t rows_offset = (n * C + c1 * t.c0) * HW * eb;  // channel c1*C0 in NCHW
      const int64_t slab_offset = (n * C1 + c1) * HW * t.c0 * eb;
      for (int64_t hw0 = 0; hw0 < HW; hw0 += t.tile_hw) {
        const int64_t valid = std::min(t.tile_hw, HW - hw0);
        const int64_t used = (valid + t.elems_per_block - 1) / t.elems_per_block *
                             t.elems_per_block;
        // The copies stand for the device's DMA in and out of the UB. Positions
        // [valid, used) of the rows hold stale bytes: they only reach slab
        // positions >= valid, which are never copied out.
        if (!reverse) {
          for (int64_t k = 0; k < channels; ++k) {
            std::memcpy(ub.data + k * t.row_bytes, src + rows_offset + (k * HW + hw0) * eb,
                        valid * eb);
          }
          // Channel padding of the last slab: zero rows become zero channels.
          for (int64_t k = channels; k < t.c0; ++k) {
            std::memset(ub.data + k * t.row_bytes, 0, used * eb);
          }
          transpose_tile(ub, t, used, false);
          std::memcpy(dst + slab_offset + hw0 * t.c0 * eb, ub.data + t.nc_base,
                      valid * t.c0 * eb);
        } else {
          std::memcpy(ub.data + t.nc_base, src + slab_offset + hw0 * t.c0 * eb,
                      valid * t.c0 * eb);
          transpose_tile(ub, t, used, true);
          for (int64_t k = 0; k < channels; ++k) {
            std::memcpy(dst + rows_offset + (k * HW + hw0) * eb, ub.data + k * t.row_bytes,
                        valid * eb);
          }
        }
      }
    }
  }
}

}  // namespace

const char* vnchw_elem_name(VnchwElem elem) {
  switch (elem) {
    case VnchwElem::kB8: return "b8";
    case VnchwElem::kB16: return "b16";
    case VnchwElem::kB32: return "b32";
  }
  return "?";
}

void scatter_vnchwconv(const UnifiedBuffer& ub, const VnchwconvParams& params) {
  run(ub, params, false);
}

void scatter_vnchwconv_reverse(const UnifiedBuffer& ub, const VnchwconvParams& params) {
  run(ub, params, true);
}

void vnchwconv_iteration(VnchwElem elem, bool reverse, const uint8_t (*src)[32],
                         uint8_t* const* dst, bool dst_high_half, bool src_high_half) {
  if (reverse) {
    reverse_iteration(elem, src, dst, dst_high_half, src_high_half);
  } else {
    forward_iteration(elem, src, dst, dst_high_half, src_high_half);
  }
}

int nc1hwc0_c0(int elem_bytes) {
  check_arg(elem_bytes == 1 || elem_bytes == 2 || elem_bytes == 4, "nc1hwc0_c0: elem_bytes ",
            elem_bytes, " must be 1, 2 or 4");
  return elem_bytes == 1 ? limits::kC0For8Bit : limits::kC0For16And32Bit;
}

void nchw_to_nc1hwc0(int elem_bytes, int64_t N, int64_t C, int64_t H, int64_t W,
                     const void* src, void* dst) {
  convert("nchw_to_nc1hwc0", elem_bytes, N, C, H, W, static_cast<const uint8_t*>(src),
          static_cast<uint8_t*>(dst), false);
}

void nc1hwc0_to_nchw(int elem_bytes, int64_t N, int64_t C, int64_t H, int64_t W,
                     const void* src, void* dst) {
  convert("nc1hwc0_to_nchw", elem_bytes, N, C, H, W, static_cast<const uint8_t*>(src),
          static_cast<uint8_t*>(dst), true);
}

}  // namespace nacc

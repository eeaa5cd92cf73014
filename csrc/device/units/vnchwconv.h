// The vector layout unit (NACC_SPEC §7, seed [V]): scatter_vnchwconv, a
// 32-byte-block transposition inside the unified buffer (UB) that turns NCHW
// data into NC1HWC0, its reverse (the project's definition), and whole-tensor
// NCHW <-> NC1HWC0 conversions built from those two operations.
#pragma once

#include <array>
#include <cstdint>

namespace nacc {

// Element width of the transposition (the suffix of scatter_vnchwconv_b8/b16/b32).
enum class VnchwElem { kB8, kB16, kB32 };

// "b8", "b16" or "b32".
const char* vnchw_elem_name(VnchwElem elem);

// The unified buffer the unit works in: `size` bytes at `data` (not owned).
// Block addresses are byte offsets into it.
struct UnifiedBuffer {
  uint8_t* data = nullptr;
  int64_t size = 0;
};

// Operands of one scatter_vnchwconv instruction.
//
// dst / src: the register pairs (VAd, VAd+1) and (VAn, VAn+1): 16 block
//   pointers each, entries 0..7 from the first register, 8..15 from the second.
//   Each is a UB byte address, a multiple of 32 in [0, limits::kUbMaxBlockAddress]
//   (a 16-bit pointer counting 32-byte blocks, NACC_SPEC §7); blocks may repeat
//   and need not be contiguous.
// repeat: iterations, [0, 255]; 0 does nothing.
// dst_stride / src_stride: [0, 65535] in 32-byte blocks; iteration r uses
//   pointer + r * stride * 32 for every pointer of the operand.
// dst_high_half / src_high_half: b8 only (must be false for b16 / b32).
struct VnchwconvParams {
  VnchwElem elem = VnchwElem::kB16;
  std::array<int64_t, 16> dst{};
  std::array<int64_t, 16> src{};
  int64_t repeat = 1;
  int64_t dst_stride = 0;
  int64_t src_stride = 0;
  bool dst_high_half = false;
  bool src_high_half = false;
};

// scatter_vnchwconv (NCHW -> NC1HWC0), the loops of [V] as written. dst[e][k]
// is element k of destination block e, src[k][e] element e of source block k;
// b32 elements are 4 bytes (8 per block), b16 2 bytes (16), b8 1 byte (32).
//   b32: for e in 0,2,..,14: for k in 0..7:
//          dst[e][k] = src[k][e/2];  dst[e+1][k] = src[k+8][e/2]
//   b16: for e in 0..15: for k in 0..15: dst[e][k] = src[k][e]
//        ([V] writes e=e+2; NACC_SPEC §7 corrects it to e++, a full transpose)
//   b8:  for e in 0..15: for k in 0..15:
//          dst[e][k + 16*dst_high_half] = src[k][e + 16*src_high_half]
// Semantics the seed leaves open (project decisions):
//  - An iteration first reads its 16 source blocks (512 B, like loading a
//    vector register), then writes the destination elements in the loop order
//    above. Source and destination may overlap (src == dst with stride 0 is an
//    in-place transpose); when a destination block appears twice, the later
//    write in loop order wins. Iterations run in order 0..repeat-1.
//  - Bounds: every block touched by any iteration must lie in [0, ub.size).
//    All iterations are checked before anything is written; on a violation the
//    UB is unchanged and DeviceFault names the operand, block index, iteration
//    and address of the first bad access (iterations in order, src before dst,
//    lower block index first). The device raises that as a bus-error interrupt.
//  - Parameter errors (repeat, stride, pointer range or alignment, high-half
//    flags on b16/b32) throw InvalidArgument before anything happens.
void scatter_vnchwconv(const UnifiedBuffer& ub, const VnchwconvParams& params);

// The reverse (NC1HWC0 -> NCHW), not in [V]; NACC_SPEC §7 defines it as the
// same block transposition with source and destination roles exchanged: every
// assignment of the loops above is turned around, so here `src` holds the
// NC1HWC0-side blocks (the forward op's destination) and `dst` the NCHW-side
// blocks (the forward op's source):
//   b32: for e in 0,2,..,14: for k in 0..7:
//          dst[k][e/2] = src[e][k];  dst[k+8][e/2] = src[e+1][k]
//   b16: for e in 0..15: for k in 0..15: dst[k][e] = src[e][k]
//   b8:  for e in 0..15: for k in 0..15:
//          dst[k][e + 16*dst_high_half] = src[e][k + 16*src_high_half]
// Each flag refers to this call's own operand, so reverse(dst=A, src=B, dh=x,
// sh=y) restores exactly the bytes forward(dst=B, src=A, dh=y, sh=x) read.
// Operand rules, ordering, bounds and errors as scatter_vnchwconv.
void scatter_vnchwconv_reverse(const UnifiedBuffer& ub, const VnchwconvParams& params);

// One iteration of the loops above without any check: `src` is the snapshot
// of the 16 source blocks (read before any write), `dst` the 16 destination
// block pointers (forward: NC1HWC0 side; reverse: NCHW side). The device's
// execution plan replays NPU_OP_VNCHWCONV with it directly on device memory
// (device/plan.cc), after the command's checks passed when it was recorded.
void vnchwconv_iteration(VnchwElem elem, bool reverse, const uint8_t (*src)[32],
                         uint8_t* const* dst, bool dst_high_half, bool src_high_half);

// The b8 iteration's data movement: out[j][i] = rows[i][j] for i, j < 16
// (16 rows of 16 bytes; rows[k] = source block k + 16 * src_high_half,
// out[e] = destination block e + 16 * dst_high_half, in either direction).
// Every row is read before any byte is written, so the rows may be device
// memory the outputs overlap (the unit's snapshot); outputs are written in
// index order.
void vnchwconv_transpose_b8(const uint8_t* const* rows, uint8_t* const* out);

// C0 of NC1HWC0 for an element width (NACC_SPEC §7): 32 for 1 byte, 16 for 2 and 4.
int nc1hwc0_c0(int elem_bytes);

// Whole-tensor NCHW -> NC1HWC0, one element of `elem_bytes` in {1, 2, 4}
// (the data type does not matter, only its width: b8, b16, b32).
//   src  Format [N, C, H, W], contiguous
//   dst  Format [N, C1, H, W, C0], contiguous, C1 = ceil(C / C0); channels
//        c >= C of the last C1 slab are zero.
// Runs the way the device does it: tiles of C0 channels x up to 1024 (b32:
// 512) H*W positions are copied ("DMA") into a 64 KB scratch UB, transposed
// there by scatter_vnchwconv (one call per tile for b16/b32, four for b8: the
// two channel halves x the two H*W halves of a block), and copied out. The
// only other work is plain copies and, for a last C1 slab with C % C0 != 0,
// zero-filled rows for the missing channels. An H*W tail (not a multiple of the
// elements per block) needs no fill: the transposition moves H*W position p to
// output row p only, so the rounded-up positions are computed and not copied out.
// N, C, H, W >= 0; src and dst must not overlap.
void nchw_to_nc1hwc0(int elem_bytes, int64_t N, int64_t C, int64_t H, int64_t W,
                     const void* src, void* dst);

// Whole-tensor NC1HWC0 -> NCHW with scatter_vnchwconv_reverse, same tiling.
//   src  Format [N, C1, H, W, C0], C1 = ceil(C / C0); channels >= C are ignored
//   dst  Format [N, C, H, W]
void nc1hwc0_to_nchw(int elem_bytes, int64_t N, int64_t C, int64_t H, int64_t W,
                     const void* src, void* dst);

}  // namespace nacc

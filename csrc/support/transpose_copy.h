// TRANSPOSE of an int8 tensor as DMA copy passes (compiler/lower.h
// lower_transpose), one decision shared by the capability rules and the
// compiler.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nacc::support {

// One loop of the copy: `size` steps, `in_stride` / `out_stride` bytes apart
// in the input and the output.
struct CopyDim {
  int64_t size = 1, in_stride = 0, out_stride = 0;
};

// out[i] = in[j] with j[perm[k]] = i[k] as nested loops over the output's
// dimensions (size-1 ones dropped, neighbours contiguous in both tensors
// merged): `run` bytes contiguous in both (the last dimensions when they stay
// innermost: the channels of an H/W swap; 1 otherwise), `cols` and `rows` the
// next two loops (a copy pass's pixels and rows, through the DMA pitches),
// `outer` the rest, one pass per combination.
struct TransposeCopy {
  int64_t run = 1;
  CopyDim cols, rows;
  std::vector<CopyDim> outer;  // outermost first
  int64_t passes() const;
};

// The copy of a dense tensor of `shape` permuted by `perm` (a permutation of
// [0, rank)), or nullopt with *why.
std::optional<TransposeCopy> transpose_copy(const std::vector<int64_t>& shape,
                                            const std::vector<int>& perm, std::string* why);

// At most this many copy passes per TRANSPOSE.
inline constexpr int64_t kMaxTransposePasses = 256;

// Why the copy does not fit the DMA (more than kMaxTransposePasses passes, a
// loop above the 16-bit feature-map sizes, a pitch above its register
// field), or nullopt.
std::optional<std::string> transpose_copy_error(const TransposeCopy& t);

// Whether a TRANSPOSE of a runtime int8 tensor of `in_shape` by `perm` runs
// on the layout unit instead (compiler/lower.h LoweredOp::LayoutConversion):
// NCHW [1, C, H, W] -> NHWC (perm 0, 2, 3, 1; *to_nhwc = true) or NHWC
// [1, H, W, C] -> NCHW (perm 0, 3, 1, 2), with C > 1 and H*W > 1 (else no
// byte moves) and C rounded up to C0 at most 65535 (the unit's 16-bit
// destination stride, NACC_SPEC §7). elem_bytes: 1 (int8, the b8 form, C0 =
// 32) or 2 (int16, b16, C0 = 16).
bool layout_transpose(const std::vector<int64_t>& in_shape, const std::vector<int>& perm,
                      bool* to_nhwc = nullptr, int elem_bytes = 1);

}  // namespace nacc::support

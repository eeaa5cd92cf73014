// NCHW <-> NHWC at the partition boundary (layout.h): a transpose of each
// image's [C, H*W] matrix, in tiles that stay in L1.
#include "ep/layout.h"

#include <algorithm>
#include <cstring>

namespace nacc::ep {

namespace {

constexpr int64_t kTile = 32;  // channels x pixels per transposed tile

// out[j * rows + i] = in[i * cols + j] ^ flip, for an
// [rows, cols] matrix `in` and its [cols, rows] transpose `out`.
void transpose(int64_t rows, int64_t cols, const uint8_t* in, uint8_t* out, uint8_t flip) {
  for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
    const int64_t i1 = std::min(rows, i0 + kTile);
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t j1 = std::min(cols, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i) {
        const uint8_t* src = in + i * cols;
        for (int64_t j = j0; j < j1; ++j) out[j * rows + i] = src[j] ^ flip;
      }
    }
  }
}

// transpose() for 2-byte elements (no flip: int16 only).
void transpose16(int64_t rows, int64_t cols, const uint8_t* in, uint8_t* out) {
  for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
    const int64_t i1 = std::min(rows, i0 + kTile);
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t j1 = std::min(cols, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i) {
        const uint8_t* src = in + i * cols * 2;
        for (int64_t j = j0; j < j1; ++j) std::memcpy(out + (j * rows + i) * 2, src + j * 2, 2);
      }
    }
  }
}

}  // namespace

void nchw_to_nhwc_16bit(int64_t N, int64_t C, int64_t H, int64_t W, const uint8_t* src,
                        uint8_t* dst) {
  const int64_t image = C * H * W * 2;
  for (int64_t n = 0; n < N; ++n) transpose16(C, H * W, src + n * image, dst + n * image);
}

void nhwc_to_nchw_16bit(int64_t N, int64_t C, int64_t H, int64_t W, const uint8_t* src,
                        uint8_t* dst) {
  const int64_t image = C * H * W * 2;
  for (int64_t n = 0; n < N; ++n) transpose16(H * W, C, src + n * image, dst + n * image);
}

void copy_8bit(int64_t bytes, const uint8_t* src, uint8_t* dst, bool flip_sign) {
  if (!flip_sign) {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    return;
  }
  for (int64_t i = 0; i < bytes; ++i) dst[i] = src[i] ^ 0x80;
}

void nchw_to_nhwc_8bit(int64_t N, int64_t C, int64_t H, int64_t W, const uint8_t* src,
                       uint8_t* dst, bool flip_sign) {
  const int64_t image = C * H * W;
  for (int64_t n = 0; n < N; ++n) {
    transpose(C, H * W, src + n * image, dst + n * image, flip_sign ? 0x80 : 0);
  }
}

void nhwc_to_nchw_8bit(int64_t N, int64_t C, int64_t H, int64_t W, const uint8_t* src,
                       uint8_t* dst, bool flip_sign) {
  const int64_t image = C * H * W;
  for (int64_t n = 0; n < N; ++n) {
    transpose(H * W, C, src + n * image, dst + n * image, flip_sign ? 0x80 : 0);
  }
}

}  // namespace nacc::ep

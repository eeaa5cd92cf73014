// NCHW <-> NHWC at the partition boundary through NC1HWC0 (layout.h).
#include "ep/layout.h"

#include <algorithm>
#include <cstring>

#include "arch/limits.h"
#include "device/units/vnchwconv.h"

namespace nacc::ep {

namespace {

constexpr int64_t kC0 = limits::kC0For8Bit;  // 32 channels per slab for 8-bit data

void flip(uint8_t* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) p[i] ^= 0x80;
}

}  // namespace

void copy_8bit(int64_t bytes, const uint8_t* src, uint8_t* dst, bool flip_sign) {
  std::memcpy(dst, src, static_cast<size_t>(bytes));
  if (flip_sign) flip(dst, bytes);
}

void nchw_to_nhwc_8bit(int64_t N, int64_t C, int64_t H, int64_t W, const uint8_t* src,
                       uint8_t* dst, bool flip_sign) {
  const int64_t c1 = (C + kC0 - 1) / kC0;
  std::vector<uint8_t> slabs(static_cast<size_t>(N * c1 * H * W * kC0));
  nchw_to_nc1hwc0(1, N, C, H, W, src, slabs.data());
  // Gather: pixel (n, h, w) of slab s holds channels [s*C0, s*C0 + C0).
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t s = 0; s < c1; ++s) {
      const int64_t channels = std::min(kC0, C - s * kC0);
      const uint8_t* slab = slabs.data() + (n * c1 + s) * H * W * kC0;
      for (int64_t p = 0; p < H * W; ++p) {
        std::memcpy(dst + (n * H * W + p) * C + s * kC0, slab + p * kC0,
                    static_cast<size_t>(channels));
      }
    }
  }
  if (flip_sign) flip(dst, N * C * H * W);
}

void nhwc_to_nchw_8bit(int64_t N, int64_t C, int64_t H, int64_t W, const uint8_t* src,
                       uint8_t* dst, bool flip_sign) {
  const int64_t c1 = (C + kC0 - 1) / kC0;
  std::vector<uint8_t> slabs(static_cast<size_t>(N * c1 * H * W * kC0), 0);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t s = 0; s < c1; ++s) {
      const int64_t channels = std::min(kC0, C - s * kC0);
      uint8_t* slab = slabs.data() + (n * c1 + s) * H * W * kC0;
      for (int64_t p = 0; p < H * W; ++p) {
        std::memcpy(slab + p * kC0, src + (n * H * W + p) * C + s * kC0,
                    static_cast<size_t>(channels));
      }
    }
  }
  nc1hwc0_to_nchw(1, N, C, H, W, slabs.data(), dst);
  if (flip_sign) flip(dst, N * C * H * W);
}

}  // namespace nacc::ep

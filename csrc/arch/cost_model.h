// The NACC performance model (NACC_SPEC §8, docs/performance_model.md) as
// one set of formulas. The compiler's tiling estimate, the per-op §8 bound of
// its records and the device's counters all call these, so the three cannot
// drift apart.
//
//   MAC array, per core and command (64 int8 lanes along input channels):
//     convolution      rows * cols * C_out * KH * KW * ceil(C_in / 64)
//     matrix product   M * N * ceil(K / 64)   (fully connected: M = rows, K = C_in;
//                                             im2col: M = rows * cols, K = KH*KW*C_in)
//     depthwise, pool  rows * cols * ceil(C / 64) * KH * KW   (64 channels per tap)
//     element-wise     ceil(3 * elements / 16)   (two reads and a write over the
//                                                 16-byte-per-cycle bus)
//     float32 conv     rows * cols * ceil(C_out / 16) * KH * KW * C_in   (MAC_FP32: 16
//                                             float32 FMA lanes along output channels)
//   activation unit   one element per cycle (Tanh, Sigmoid, LUT)
//   DMA               max(ceil(core bytes / DMA port), ceil(external bytes / shared bandwidth))
//   §8 bound of an op max(MAC cycles / cores, activation cycles / cores,
//                         move-once bytes / min(shared bandwidth, cores * DMA port))
#pragma once

#include <algorithm>
#include <cstdint>

#include "arch/hw_config.h"
#include "arch/limits.h"
#include "arch/sram.h"

namespace nacc::cost {

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Useful taps along one window axis: over `outputs` output positions, the
// kernel taps (`dilation` apart) that land on the `valid` input positions
// after `pad_before` padded ones. A useful MAC is a product with a valid
// input element: the compiler's OpRecord::macs and ir::op_macs count with it.
constexpr int64_t valid_taps(int64_t outputs, int64_t stride, int64_t kernel, int64_t pad_before,
                             int64_t valid, int64_t dilation = 1) {
  int64_t total = 0;
  for (int64_t o = 0; o < outputs; ++o) {
    const int64_t first = o * stride - pad_before;
    if (dilation == 1) {
      const int64_t lo = std::max<int64_t>(first, 0), hi = std::min(first + kernel, valid);
      if (hi > lo) total += hi - lo;
      continue;
    }
    for (int64_t k = 0; k < kernel; ++k) {
      const int64_t p = first + k * dilation;
      if (p >= 0 && p < valid) ++total;
    }
  }
  return total;
}

// Passes through the 64-lane MAC array for a reduction of `depth` int8 terms.
constexpr int64_t lane_groups(int64_t depth) { return ceil_div(depth, limits::kMacLanes); }

constexpr int64_t conv_mac_cycles(int64_t rows, int64_t cols, int64_t out_c, int64_t taps,
                                  int64_t in_c) {
  return rows * cols * out_c * taps * lane_groups(in_c);
}
// 16-bit feature maps (DATA_FORM = 01, NACC_SPEC §9): the array computes
// 32 int16 x int8 products per cycle per core, half the 8-bit rate.
constexpr int64_t conv16_mac_cycles(int64_t rows, int64_t cols, int64_t out_c, int64_t taps,
                                    int64_t in_c) {
  return rows * cols * out_c * taps * ceil_div(in_c, limits::kMacLanes16);
}
// The other units on 16-bit maps: fully connected ceil(K / 32) passes, depthwise
// and pooling 32 channels per tap, the element-wise unit moves 2 bytes an element.
constexpr int64_t matrix16_mac_cycles(int64_t m, int64_t n, int64_t k) {
  return m * n * ceil_div(k, limits::kMacLanes16);
}
constexpr int64_t window16_mac_cycles(int64_t rows, int64_t cols, int64_t channels, int64_t taps) {
  return rows * cols * ceil_div(channels, limits::kMacLanes16) * taps;
}
constexpr int64_t elementwise16_cycles(int64_t elements) {
  return ceil_div(3 * 2 * elements, kBusBeatBytes);
}
// MUL_S16_S8: two int16 operands read, one int8 written, 5 bytes an element
// through the same 16-byte bus.
constexpr int64_t elementwise_s16_s8_cycles(int64_t elements) {
  return ceil_div((2 * 2 + 1) * elements, kBusBeatBytes);
}
// NACC_ACT_PARA.MAC_FP32 (docs/performance_model.md): 16 float32 fused
// multiply-add lanes per core, each lane one output channel's in-order
// chain over K = taps * in_c (ONNX's order forbids a dot-product tree along K).
constexpr int64_t mac_fp32_cycles(int64_t rows, int64_t cols, int64_t out_c, int64_t taps,
                                  int64_t in_c) {
  return rows * cols * ceil_div(out_c, limits::kMacFp32Lanes) * taps * in_c;
}
constexpr int64_t matrix_mac_cycles(int64_t m, int64_t n, int64_t k) {
  return m * n * lane_groups(k);
}
constexpr int64_t window_mac_cycles(int64_t rows, int64_t cols, int64_t channels, int64_t taps) {
  return rows * cols * lane_groups(channels) * taps;
}
constexpr int64_t elementwise_cycles(int64_t elements) {
  return ceil_div(3 * elements, kBusBeatBytes);
}
constexpr int64_t activation_cycles(int64_t elements) { return elements; }

// A transfer of `core_bytes` through one core's DMA port while `ext_bytes`
// cross the shared external port.
constexpr int64_t transfer_cycles(int64_t core_bytes, int64_t ext_bytes, const HwConfig& hw) {
  return std::max(ceil_div(core_bytes, hw.dma_bytes_per_cycle),
                  ceil_div(ext_bytes, hw.ext_bytes_per_cycle));
}

// The bandwidth of the §8 bound: the lesser of the shared port and all cores' ports.
constexpr int64_t bound_bandwidth(const HwConfig& hw) {
  return std::min<int64_t>(hw.ext_bytes_per_cycle, int64_t(hw.dma_bytes_per_cycle) * hw.cores);
}

// The §8 per-op bound: work spread over every core, every byte moved once.
constexpr int64_t op_bound_cycles(int64_t mac_cycles, int64_t act_cycles, int64_t read_bytes,
                                  int64_t write_bytes, const HwConfig& hw) {
  const int64_t bw = bound_bandwidth(hw);
  return std::max({ceil_div(mac_cycles, hw.cores), ceil_div(act_cycles, hw.cores),
                   ceil_div(read_bytes, bw), ceil_div(write_bytes, bw)});
}

}  // namespace nacc::cost

// Internal to the MAC unit: the int8 GEMMs shared by conv2d_s8,
// fully_connected_s8 and matmul_s8, each with the same fused, vectorised
// requantize-to-int8 epilogue (AVX2):
//  - gemm_s8_avx2: int8 operands sign-extended to int16, multiplied pairwise
//    with _mm256_madd_epi16 into int32 accumulators; call only when
//    nacc::use_avx2() is true;
//  - gemm_s8_vnni: vpdpbusd (unsigned x signed bytes, four products per
//    int32 lane) with AVX-512 VNNI (zmm) or AVX-VNNI (ymm), for a right
//    operand with zero point 0 (filters and weights: TFLite and ONNX int8
//    weights are symmetric); call only when use_avx_vnni() or
//    use_avx512_vnni() is true.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "arch/unit_params.h"
#include "device/units/prepared.h"

// The exported AVX2 functions carry the target attribute on their declaration
// too (GCC would otherwise take the definition for a second function version).
#define NACC_AVX2_TARGET __attribute__((target("avx2,fma")))

namespace nacc::detail {

// The int32 accumulator of output column n becomes an int8 output through
// the unit's OutputStage (arch/unit_params.h, every kind but kFixedPoint16x8):
// the epilogue vectorises requantize_output() and gives its bits.
// The right operand B(n, k) - zero_point, n < N, k < K, packed once per call
// for the micro-kernel: int16 in [-255, 255], K rounded up to even (kp), N
// rounded up to 16, layout [N/16][kp/2][16][2]: one 256-bit load holds the
// (k, k+1) pair of 16 consecutive columns, the second operand of
// _mm256_madd_epi16. Padding is 0.
class PackedB {
 public:
  // B(n, k) = b[n * n_stride + k * k_stride].
  PackedB(const int8_t* b, int n, int k, std::ptrdiff_t n_stride, std::ptrdiff_t k_stride,
          int32_t zero_point = 0);
  int n() const { return n_; }
  int k() const { return k_; }
  int kp() const { return kp_; }
  int blocks() const { return (n_ + 15) / 16; }
  const int16_t* block(int nb) const { return data_.data() + static_cast<size_t>(nb) * kp_ * 16; }

 private:
  int n_, k_, kp_;
  std::vector<int16_t> data_;
};

// The right operand B(n, k) (zero point 0) for vpdpbusd: int8 as stored, K
// rounded up to a multiple of 4 (k4), N up to 16, layout [N/16][k4/4][16][4]:
// one 512-bit load holds four consecutive k of 16 columns (a 256-bit load, of
// 8 columns); padding is 0. col_sum(n) = sum_k B(n, k), for the correction
// of the +128 that makes the left operand unsigned (see gemm_s8_vnni).
class PackedB4 {
 public:
  PackedB4(const int8_t* b, int n, int k, std::ptrdiff_t n_stride, std::ptrdiff_t k_stride);
  int n() const { return n_; }
  int k() const { return k_; }
  int k4() const { return k4_; }
  int blocks() const { return (n_ + 15) / 16; }
  const int8_t* block(int nb) const { return data_.data() + static_cast<size_t>(nb) * k4_ * 16; }
  const int32_t* col_sums() const { return col_sum_.data(); }

 private:
  int n_, k_, k4_;
  std::vector<int8_t> data_;
  std::vector<int32_t> col_sum_;
};

// True when the units may use gemm_s8_vnni now: the active kernel path is
// avx_vnni or higher and the CPU has either width.
bool use_vnni();

// A right operand packed once (device/units/prepared.h): the convolution's
// filter [C_out, K] or the fully connected layer's weights [N, K]. It keeps
// the int8 weights and packs each form on first use, once (thread-safe): the
// form of the kernel path active when it is made at once, the other only if a
// later run switches paths (tests, benchmarks). A VNNI machine so never holds
// the int16 packing it does not use.
class PackedFilter : public PreparedWeights {
 public:
  PackedFilter(const int8_t* w, int n, int k);
  const PackedB& int16() const;
  const PackedB4& vnni() const;

 private:
  std::vector<int8_t> w_;
  int n_, k_;
  mutable std::once_flag int16_once_, vnni_once_;
  mutable std::unique_ptr<PackedB> int16_;
  mutable std::unique_ptr<PackedB4> vnni_;
};

// Fills rows [m0, m0 + rows) of the left operand for gemm_s8_vnni into
// `panel`, row r at panel + r * k4, as the unsigned bytes A(m, k) + 128 (the
// int8 value with its sign bit flipped); a padded position of a convolution
// holds a_zero_point + 128; columns [K, k4) may hold anything (B is 0 there).
using FillRowsU8 = std::function<void(int m0, int rows, uint8_t* panel)>;

// The product of gemm_s8_avx2, for the left operand A with zero point
// a_zero_point: vpdpbusd sums (A + 128) * B, so the epilogue's column offset
// is col_offset[n] - (a_zero_point + 128) * col_sum(n) (mod 2^32: exact).
void gemm_s8_vnni(int m, const PackedB4& b, const FillRowsU8& fill_rows, int32_t a_zero_point,
                  const int32_t* col_offset, const OutputStage& rq, int8_t* out,
                  std::ptrdiff_t out_row_stride);

// The same product for a few rows A [M][K] (row-major int8, zero point
// a_zero_point) with packed weights, one row at a time, the output rows
// contiguous (N apart): the fully connected GEMV case when the weights were
// packed once (prepared). AVX-512 VNNI only (use_avx512_vnni()).
void gemv_s8_vnni(int m, const PackedB4& b, const int8_t* a, int32_t a_zero_point,
                  const int32_t* col_offset, const OutputStage& rq, int8_t* out);

// dst[i] = uint8(src[i] + 128), i < count.
void flip_s8_to_u8(const int8_t* src, int count, uint8_t* dst);
// `rows` consecutive rows of k int8 values at src as gemm_s8_vnni panel rows
// of k4 bytes (flip_s8_to_u8, then zeros up to k4).
void flip_rows_u8(const int8_t* src, int rows, int k, int k4, uint8_t* panel);

// Fills rows [m0, m0 + rows) of the left operand A into `panel`, row r at
// panel + r * kp, as int16 values A(m, k) - a_zero_point (in [-255, 255]);
// column K (when K is odd) must be 0.
using FillRows = std::function<void(int m0, int rows, int16_t* panel)>;

// out[m * out_row_stride + n] = requantize(sum_k A'(m, k) B'(n, k) + col_offset[n])
// for m < M, n < N, with A', B' the zero-point-adjusted operands (the pairwise
// products fit _mm256_madd_epi16 without saturation: 2 * 255 * 255 < 2^31), and
// the sums wrapping modulo 2^32 like TFLite's int32 accumulator. col_offset
// (the bias) may be null.
NACC_AVX2_TARGET void gemm_s8_avx2(int m, const PackedB& b, const FillRows& fill_rows,
                                   const int32_t* col_offset, const OutputStage& rq, int8_t* out,
                                   std::ptrdiff_t out_row_stride);

// The same product for a few rows without packing: A [M][K] (zero point
// a_zero_point) and B [N][K] (zero point 0) both row-major int8, dot products
// along K — the fully-connected GEMV case, where packing the weights would
// cost more than using them once. col_offset may be null.
NACC_AVX2_TARGET void gemv_s8_avx2(int m, int n, int k, const int8_t* a, int32_t a_zero_point,
                                   const int8_t* b, const int32_t* col_offset,
                                   const OutputStage& rq, int8_t* out);

// dst[i] = src[i] - offset as int16, i < count.
NACC_AVX2_TARGET void widen_s8_avx2(const int8_t* src, int count, int32_t offset, int16_t* dst);

}  // namespace nacc::detail

// Internal to the MAC unit: the AVX2 int8 GEMM shared by conv2d_s8,
// fully_connected_s8 and matmul_s8 — int8 operands sign-extended to int16,
// multiplied pairwise with _mm256_madd_epi16 into int32 accumulators, and a
// fused, vectorised requantize-to-int8 epilogue. Every function here executes
// AVX2: call only when nacc::use_avx2() is true.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
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

// A right operand packed once (device/units/prepared.h): the convolution's
// filter [C_out, K] or the fully connected layer's weights [N, K].
struct PackedFilter : PreparedWeights {
  PackedFilter(const int8_t* w, int n, int k);
  PackedB b;
};

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

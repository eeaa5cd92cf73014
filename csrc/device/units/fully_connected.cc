// The MAC unit's fully-connected and matrix-multiply modes (NACC_SPEC §1),
// bit-exact to TFLite's reference FULLY_CONNECTED and BATCH_MATMUL int8
// kernels: plain reference loops, and AVX2 paths on the shared int8 GEMM.
#include "device/units/fully_connected.h"

#include <immintrin.h>

#include <cmath>
#include <memory>
#include <vector>

#include "arch/fixed_point.h"
#include "arch/unit_checks.h"
#include "common/cpu.h"
#include "common/error.h"
#include "device/units/gemm_s8.h"

namespace nacc {

namespace {

// Below this many rows the weights are used too few times to repay packing
// them; the unpacked dot-product kernel is faster.
constexpr int kFullyConnectedPackRows = 32;

// A matrix product of fewer rows than this accumulates B's rows straight into
// the outputs' sums instead of packing B: a one-row product ([1, K] x [K, N],
// the ones-operand MEAN) uses each B element once, so packing it costs more
// than the product.
constexpr int kMatmulDirectRows = 4;

// acc[c] += a * (b[c] - b_zero_point) for c in [0, n), modulo 2^32 as the
// int32 accumulator wraps.
__attribute__((target("avx2"))) void add_scaled_row_avx2(int32_t a, const int8_t* b,
                                                         int32_t b_zero_point, int n,
                                                         uint32_t* acc) {
  const __m256i va = _mm256_set1_epi32(a);
  const __m256i vz = _mm256_set1_epi32(b_zero_point);
  int c = 0;
  for (; c + 8 <= n; c += 8) {
    const __m256i bv =
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + c)));
    const __m256i p = _mm256_mullo_epi32(_mm256_sub_epi32(bv, vz), va);
    auto* dst = reinterpret_cast<__m256i*>(acc + c);
    _mm256_storeu_si256(dst, _mm256_add_epi32(_mm256_loadu_si256(dst), p));
  }
  for (; c < n; ++c) {
    acc[c] += static_cast<uint32_t>(a) * static_cast<uint32_t>(int32_t{b[c]} - b_zero_point);
  }
}

}  // namespace

void fully_connected_s8(int32_t input_zero_point, const OutputStage& out_stage, int m, int k, int n,
                        const int8_t* input, const int8_t* weights, const int32_t* bias,
                        int8_t* output, const PreparedWeights* prepared) {
  constexpr const char* kOp = "fully_connected_s8";
  detail::check_extent(kOp, "m (rows)", m);
  detail::check_extent(kOp, "k (input depth)", k);
  detail::check_extent(kOp, "n (output units)", n);
  detail::check_not_null(kOp, "input", input);
  detail::check_not_null(kOp, "weights", weights);
  detail::check_not_null(kOp, "output", output);
  detail::check_zero_point(kOp, "input_zero_point", input_zero_point);
  detail::check_output_stage(kOp, out_stage, n);

  if (!use_avx2()) {
    // Reference: TFLite FullyConnected / FullyConnectedPerChannel (weights zero point 0).
    for (int row = 0; row < m; ++row) {
      const int8_t* x = input + static_cast<int64_t>(row) * k;
      for (int col = 0; col < n; ++col) {
        const int8_t* w = weights + static_cast<int64_t>(col) * k;
        int64_t acc = 0;
        for (int i = 0; i < k; ++i) acc += int64_t{w[i]} * (int64_t{x[i]} - input_zero_point);
        if (bias != nullptr) acc += bias[col];
        output[static_cast<int64_t>(row) * n + col] =
            requantize_output(out_stage, col, static_cast<int32_t>(static_cast<uint32_t>(acc)));
      }
    }
    return;
  }

  // AVX2: sum_k (x - input_zero_point) * w on int16 operands, bias in the epilogue.
  const auto* ready = dynamic_cast<const detail::PackedFilter*>(prepared);
  if (m < kFullyConnectedPackRows) {
    if (ready && use_avx512_vnni()) {  // weights packed once: vpdpbusd on x + 128
      detail::gemv_s8_vnni(m, ready->vnni(), input, input_zero_point, bias, out_stage, output);
      return;
    }
    detail::gemv_s8_avx2(m, n, k, input, input_zero_point, weights, bias, out_stage, output);
    return;
  }
  if (detail::use_vnni()) {  // vpdpbusd on x + 128 (gemm_s8_vnni)
    std::unique_ptr<detail::PackedB4> own4;
    if (!ready) own4 = std::make_unique<detail::PackedB4>(weights, n, k, k, 1);
    const detail::PackedB4& packed4 = ready ? ready->vnni() : *own4;
    const int k4 = packed4.k4();
    detail::gemm_s8_vnni(
        m, packed4,
        [&](int m0, int rows, uint8_t* panel) {
          detail::flip_rows_u8(input + static_cast<int64_t>(m0) * k, rows, k, k4, panel);
        },
        input_zero_point, bias, out_stage, output, n);
    return;
  }
  std::unique_ptr<detail::PackedB> own;
  if (!ready) own = std::make_unique<detail::PackedB>(weights, n, k, k, 1);
  const detail::PackedB& packed = ready ? ready->int16() : *own;
  const int kp = packed.kp();
  detail::gemm_s8_avx2(
      m, packed,
      [&](int m0, int rows, int16_t* panel) {
        if (kp == k) {  // the rows are one contiguous block
          detail::widen_s8_avx2(input + static_cast<int64_t>(m0) * k, rows * k, input_zero_point,
                                panel);
          return;
        }
        for (int r = 0; r < rows; ++r) {
          int16_t* dst = panel + static_cast<std::ptrdiff_t>(r) * kp;
          detail::widen_s8_avx2(input + static_cast<int64_t>(m0 + r) * k, k, input_zero_point,
                                dst);
          dst[k] = 0;  // kp = k + 1
        }
      },
      bias, out_stage, output, n);
}

std::shared_ptr<const PreparedWeights> prepare_fully_connected_s8(int k, int n,
                                                                  const int8_t* weights) {
  if (!cpu_has_avx2()) return nullptr;
  return std::make_shared<detail::PackedFilter>(weights, n, k);
}

void matmul_s8(int32_t a_zero_point, int32_t b_zero_point, const OutputStage& out_stage, int m,
               int k, int n, const int8_t* a, const int8_t* b, int8_t* output) {
  constexpr const char* kOp = "matmul_s8";
  detail::check_extent(kOp, "m (rows of a)", m);
  detail::check_extent(kOp, "k (columns of a, rows of b)", k);
  detail::check_extent(kOp, "n (columns of b)", n);
  detail::check_not_null(kOp, "a", a);
  detail::check_not_null(kOp, "b", b);
  detail::check_not_null(kOp, "output", output);
  detail::check_zero_point(kOp, "a_zero_point", a_zero_point);
  detail::check_zero_point(kOp, "b_zero_point", b_zero_point);
  detail::check_output_stage(kOp, out_stage, n);

  if (!use_avx2()) {
    // Reference: TFLite BatchMatMul<int8_t, int32_t> for one batch.
    for (int row = 0; row < m; ++row) {
      for (int col = 0; col < n; ++col) {
        int64_t acc = 0;
        for (int i = 0; i < k; ++i) {
          const int64_t av = a[static_cast<int64_t>(row) * k + i];
          const int64_t bv = b[static_cast<int64_t>(i) * n + col];
          acc += (av - a_zero_point) * (bv - b_zero_point);
        }
        output[static_cast<int64_t>(row) * n + col] =
            requantize_output(out_stage, col, static_cast<int32_t>(static_cast<uint32_t>(acc)));
      }
    }
    return;
  }

  if (m < kMatmulDirectRows) {
    thread_local std::vector<uint32_t> acc;
    acc.resize(static_cast<size_t>(n));
    for (int row = 0; row < m; ++row) {
      std::fill(acc.begin(), acc.end(), 0u);
      for (int i = 0; i < k; ++i) {
        const int32_t av = int32_t{a[static_cast<int64_t>(row) * k + i]} - a_zero_point;
        if (av != 0) {
          add_scaled_row_avx2(av, b + static_cast<int64_t>(i) * n, b_zero_point, n, acc.data());
        }
      }
      int8_t* out = output + static_cast<int64_t>(row) * n;
      for (int col = 0; col < n; ++col) {
        out[col] = requantize_output(out_stage, col, static_cast<int32_t>(acc[size_t(col)]));
      }
    }
    return;
  }

  if (b_zero_point == 0 && detail::use_vnni()) {  // gemm_s8_vnni
    const detail::PackedB4 packed4(b, n, k, 1, n);
    const int k4 = packed4.k4();
    detail::gemm_s8_vnni(
        m, packed4,
        [&](int m0, int rows, uint8_t* panel) {
          detail::flip_rows_u8(a + static_cast<int64_t>(m0) * k, rows, k, k4, panel);
        },
        a_zero_point, nullptr, out_stage, output, n);
    return;
  }
  // AVX2: both operands enter the GEMM with their zero points subtracted.
  const detail::PackedB packed(b, n, k, 1, n, b_zero_point);
  const int kp = packed.kp();
  detail::gemm_s8_avx2(
      m, packed,
      [&](int m0, int rows, int16_t* panel) {
        for (int r = 0; r < rows; ++r) {
          int16_t* dst = panel + static_cast<std::ptrdiff_t>(r) * kp;
          detail::widen_s8_avx2(a + static_cast<int64_t>(m0 + r) * k, k, a_zero_point, dst);
          if (kp > k) dst[k] = 0;
        }
      },
      nullptr, out_stage, output, n);
}

}  // namespace nacc

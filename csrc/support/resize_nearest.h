// RESIZE_NEAREST_NEIGHBOR as integer replication (compiler/lower.h
// lower_resize_nearest): whether TFLite's index mapping of an op is
// in = out / f on each axis, which the rules and the compiler both ask.
#pragma once

#include <optional>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace nacc::support {

// TFLite 2.21's reference index (reference_ops GetNearestNeighbor): the input
// row / column of output index `out_index`, in float32 as TFLite computes it.
int tflite_nearest_index(int out_index, int in_size, int out_size, bool align_corners,
                         bool half_pixel_centers);

// The factor f = out_size / in_size when out_size is a multiple of in_size
// and TFLite maps every output index o to o / f (integer division);
// otherwise nullopt with *why saying which index breaks it.
std::optional<int> nearest_replication_factor(int in_size, int out_size, bool align_corners,
                                              bool half_pixel_centers, std::string* why);

// At most this many (row, column) replicas (copy passes) per op
// (docs/device_model.md §4).
inline constexpr int kMaxResizeReplicas = 256;

// ---- RESIZE_BILINEAR (compiler/lower.h lower_resize_bilinear) ----------------------

// TFLite 2.21's int8 bilinear resize (reference_ops::ResizeBilinearInteger)
// along one axis: output o reads inputs i0 <= i1 with 10-bit weights
// 1024 - f and f (f = scaled - 1024 i0; scale_10 = (1024 in + out/2) / out,
// or (1024 (in - 1) + (out - 1)/2) / (out - 1) with align_corners; scaled =
// o scale_10 (+ scale_10 / 2 - 512 with half_pixel_centers); i0 = max(scaled
// / 1024, 0), i1 = min((scaled + 1023) / 1024, in - 1), C++ division). The
// 2-D result is (sum of the four products + 2^19 sign) / 2^20.
struct BilinearIndex {
  int i0 = 0, i1 = 0;
  int32_t w0 = 0, w1 = 0;  // 10-bit weights of i0 and i1 (w0 + w1 = 1024)
};
BilinearIndex tflite_bilinear_index(int out_index, int in_size, int out_size, bool align_corners,
                                    bool half_pixel_centers);

// One axis as runs of outputs o = out_start + factor*m, m in [0, count),
// each reading the `taps` (1 or 2) inputs from in_start + m with the same
// integer weights w[t] (the 10-bit weights of the index, merged where i0 =
// i1, divided by the axis's common divisor: they sum to `denominator`).
struct BilinearRun {
  int out_start = 0, count = 0, in_start = 0, taps = 1;
  int32_t w[2] = {0, 0};
};
struct BilinearAxis {
  int factor = 1;
  int32_t denominator = 1;  // 1024 / the gcd of 1024 and every weight
  std::vector<BilinearRun> runs;
};

// The runs of an axis resized from in_size to out_size = factor * in_size,
// or nullopt with *why (not a whole factor, a negative merged weight).
std::optional<BilinearAxis> bilinear_axis(int in_size, int out_size, bool align_corners,
                                          bool half_pixel_centers, std::string* why);

// At most this many depthwise passes (row runs x column runs) per op.
inline constexpr int kMaxBilinearPasses = 256;

// Why the two axes cannot run as exact depthwise passes (a weight product
// above 127, denominators whose product is past the exact division's range,
// too many passes), or nullopt.
std::optional<std::string> bilinear_error(const BilinearAxis& rows, const BilinearAxis& cols);

}  // namespace nacc::support

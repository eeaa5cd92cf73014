// RESIZE_NEAREST_NEIGHBOR as integer replication (compiler/lower.h
// lower_resize_nearest): whether TFLite's index mapping of an op is
// in = out / f on each axis, which the rules and the compiler both ask.
#pragma once

#include <optional>
#include <string>

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

}  // namespace nacc::support

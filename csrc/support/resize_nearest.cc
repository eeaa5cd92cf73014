// RESIZE_NEAREST_NEIGHBOR's index mapping (see resize_nearest.h).
#include "support/resize_nearest.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace nacc::support {

int tflite_nearest_index(int out_index, int in_size, int out_size, bool align_corners,
                         bool half_pixel_centers) {
  const float scale = (align_corners && out_size > 1)
                          ? static_cast<float>(in_size - 1) / static_cast<float>(out_size - 1)
                          : static_cast<float>(in_size) / static_cast<float>(out_size);
  const float offset = half_pixel_centers ? 0.5f : 0.0f;
  const float x = (static_cast<float>(out_index) + offset) * scale;
  // TfLiteRound is std::round (half away from zero) on float.
  int v = align_corners ? static_cast<int>(std::round(x)) : static_cast<int>(std::floor(x));
  v = std::min(v, in_size - 1);
  if (half_pixel_centers) v = std::max(v, 0);
  return v;
}

std::optional<int> nearest_replication_factor(int in_size, int out_size, bool align_corners,
                                              bool half_pixel_centers, std::string* why) {
  if (in_size < 1 || out_size < in_size || out_size % in_size != 0) {
    if (why) *why = str_cat(out_size, " is not a whole multiple of ", in_size);
    return std::nullopt;
  }
  const int f = out_size / in_size;
  for (int o = 0; o < out_size; ++o) {
    const int i = tflite_nearest_index(o, in_size, out_size, align_corners, half_pixel_centers);
    if (i != o / f) {
      if (why) {
        *why = str_cat("output index ", o, " reads input ", i, ", not ", o / f,
                       align_corners ? " (align_corners)" : "");
      }
      return std::nullopt;
    }
  }
  return f;
}

}  // namespace nacc::support

// RESIZE_NEAREST_NEIGHBOR's index mapping (see resize_nearest.h).
#include "support/resize_nearest.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.h"
#include "quant/tflite.h"

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

// ---- RESIZE_BILINEAR ----------------------------------------------------------------

BilinearIndex tflite_bilinear_index(int out_index, int in_size, int out_size, bool align_corners,
                                    bool half_pixel_centers) {
  check_arg(in_size >= 1 && out_size >= 1 && out_index >= 0 && out_index < out_size,
            "tflite_bilinear_index: index ", out_index, " of ", out_size, " from ", in_size);
  int32_t scale = ((1 << 10) * in_size + out_size / 2) / out_size;
  if (align_corners && out_size > 1) {
    scale = ((1 << 10) * (in_size - 1) + (out_size - 1) / 2) / (out_size - 1);
  }
  const int32_t scaled =
      half_pixel_centers ? out_index * scale + scale / 2 - (1 << 9) : out_index * scale;
  BilinearIndex b;
  b.i0 = std::max(scaled / (1 << 10), 0);
  b.i1 = std::min((scaled + (1 << 10) - 1) / (1 << 10), in_size - 1);
  b.w1 = scaled - (1 << 10) * b.i0;
  b.w0 = (1 << 10) - b.w1;
  return b;
}

std::optional<BilinearAxis> bilinear_axis(int in_size, int out_size, bool align_corners,
                                          bool half_pixel_centers, std::string* why) {
  if (in_size < 1 || out_size < in_size || out_size % in_size != 0) {
    if (why) *why = str_cat(out_size, " is not a whole multiple of ", in_size);
    return std::nullopt;
  }
  BilinearAxis a;
  a.factor = out_size / in_size;
  // Per output: the first input read, the taps and their 10-bit weights.
  struct Tap {
    int first, taps;
    int32_t w[2];
  };
  std::vector<Tap> taps(static_cast<size_t>(out_size));
  int32_t g = 1 << 10;
  for (int o = 0; o < out_size; ++o) {
    const BilinearIndex b =
        tflite_bilinear_index(o, in_size, out_size, align_corners, half_pixel_centers);
    Tap t{b.i0, 1, {b.w0, 0}};
    if (b.i1 == b.i0) {
      t.w[0] = b.w0 + b.w1;
    } else if (b.i1 == b.i0 + 1) {
      t = Tap{b.i0, 2, {b.w0, b.w1}};
    } else {
      if (why) *why = str_cat("output index ", o, " reads inputs ", b.i0, " and ", b.i1);
      return std::nullopt;
    }
    if (t.w[0] < 0 || t.w[1] < 0 || (t.taps == 2 && (t.w[0] == 0 || t.w[1] == 0))) {
      if (t.taps == 2 && t.w[0] >= 0 && t.w[1] >= 0) {  // one weight 0: one tap
        t = t.w[0] == 0 ? Tap{b.i1, 1, {t.w[1], 0}} : Tap{b.i0, 1, {t.w[0], 0}};
      } else {
        if (why) *why = str_cat("output index ", o, " has the weights ", t.w[0], " / ", t.w[1]);
        return std::nullopt;
      }
    }
    for (int k = 0; k < t.taps; ++k) g = std::gcd(g, t.w[k]);
    taps[size_t(o)] = t;
  }
  a.denominator = (1 << 10) / g;
  // Runs: per residue of the factor, consecutive outputs with the same taps
  // and weights whose first input advances by one.
  for (int r = 0; r < a.factor; ++r) {
    for (int o = r; o < out_size; o += a.factor) {
      Tap t = taps[size_t(o)];
      for (int k = 0; k < t.taps; ++k) t.w[k] /= g;
      BilinearRun* last = a.runs.empty() ? nullptr : &a.runs.back();
      if (last && last->out_start % a.factor == r && last->taps == t.taps && last->w[0] == t.w[0] &&
          last->w[1] == t.w[1] && last->in_start + last->count == t.first &&
          last->out_start + a.factor * last->count == o) {
        ++last->count;
      } else {
        BilinearRun run;
        run.out_start = o;
        run.count = 1;
        run.in_start = t.first;
        run.taps = t.taps;
        run.w[0] = t.w[0];
        run.w[1] = t.w[1];
        a.runs.push_back(run);
      }
    }
  }
  return a;
}

std::optional<std::string> bilinear_error(const BilinearAxis& rows, const BilinearAxis& cols) {
  int32_t wy = 0, wx = 0;
  for (const BilinearRun& r : rows.runs) wy = std::max({wy, r.w[0], r.w[1]});
  for (const BilinearRun& c : cols.runs) wx = std::max({wx, c.w[0], c.w[1]});
  if (int64_t(wy) * wx > 127) {
    return str_cat("weights up to ", wy, " x ", wx, " (denominators ", rows.denominator, " x ",
                   cols.denominator, ") exceed an int8 weight");
  }
  const int64_t d = int64_t(rows.denominator) * cols.denominator;
  if (d > kMaxAveragePoolCells) {
    return str_cat("the division by ", rows.denominator, " x ", cols.denominator, " = ", d,
                   " exceeds ", kMaxAveragePoolCells);
  }
  const int64_t passes = int64_t(rows.runs.size()) * int64_t(cols.runs.size());
  if (passes > kMaxBilinearPasses) return str_cat(passes, " passes");
  return std::nullopt;
}

}  // namespace nacc::support

// A 4-D NHWC shape as the compute units use it. N must be 1 for feature maps
// (NACC_SPEC §1); filters reuse the struct as [O, H, W, I].
#pragma once

#include <cstdint>
#include <string>

#include "common/error.h"

namespace nacc {

struct Shape4 {
  int n = 1, h = 1, w = 1, c = 1;

  int64_t elements() const {
    return static_cast<int64_t>(n) * h * w * c;
  }
  bool operator==(const Shape4& o) const { return n == o.n && h == o.h && w == o.w && c == o.c; }
  bool operator!=(const Shape4& o) const { return !(*this == o); }
  std::string str() const { return str_cat("[", n, ",", h, ",", w, ",", c, "]"); }
};

}  // namespace nacc

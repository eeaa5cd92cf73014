// The compiler's weight compressor (NACC_SPEC §6): encodes an int8 weight
// buffer into the self-describing stream that arch/weight_codec.h decodes,
// trying every mode and keeping the smallest. Format: docs/weight_compression.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "arch/weight_codec.h"

namespace nacc::weight_codec {

// Stream bytes of each mode for one buffer (header included), for reports.
struct ModeSizes {
  size_t raw = 0;
  size_t zrun_rice = 0;
  size_t lut = 0;
  size_t of(Mode mode) const;
};

// The mode `encode` picks: fewest bytes; a tie goes to the simpler mode
// (raw before zrun_rice before lut).
Mode choose(const ModeSizes& sizes);

// Encodes `n` int8 values (n <= 2^32 - 1; n = 0 gives a header-only stream) in
// `mode`, or in the mode `choose` picks when `mode` is empty. Throws
// InvalidArgument when n is too large. The result always decodes to the input.
std::vector<uint8_t> encode(const int8_t* data, size_t n, std::optional<Mode> mode = std::nullopt);

// The size of every mode's stream for the same input (what encode would return).
ModeSizes encoded_sizes(const int8_t* data, size_t n);

// Encodes once in every mode: the smallest stream, its mode and all sizes.
struct Encoded {
  std::vector<uint8_t> stream;
  Mode mode = Mode::kRaw;
  ModeSizes sizes;
};
Encoded encode_best(const int8_t* data, size_t n);

}  // namespace nacc::weight_codec

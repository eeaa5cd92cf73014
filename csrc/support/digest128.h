// Digest128: the fast 128-bit content digest of the compiled-Program cache
// keys (graph_digest.h): a non-cryptographic hash over 32-byte stripes, four
// independent 64-bit word lanes with two accumulators each, so the 25 MB of a
// ResNet50's weights hash in a few milliseconds (SHA-256 took 60-130 ms).
//
// Definition (portable: words are read little-endian on every machine, so a
// digest computed on one host names the same entry on another):
//   state: a[0..3], b[0..3] = kSeedA[i], kSeedB[i]
//   per stripe of 32 bytes, words w[0..3] (u64 LE), for each lane i:
//     a[i] = rotl64(a[i] + w[i] * kP1, 31) * kP2
//     b[i] = rotl64(b[i] ^ (w[i] * kP3), 27) * kP4
//   the last partial stripe is padded with zero bytes (the total length,
//   mixed into the finalization, tells "x" from "x\0").
//   finalization: lo = fold(a) ^ (len * kP5), hi = fold(b) + len, then
//     lo = fmix64(lo ^ rotl64(hi, 17)), hi = fmix64(hi + lo)
//   (fold and fmix64 in digest128.cc); hex: hi then lo, 32 lower-case chars.
//
// Why a wrong cache hit is not a practical risk (the cache must never return
// another partition's Program):
// - Both lane rounds are bijections of the accumulator for a fixed word and of
//   the word for a fixed accumulator, and the finalization is a bijection of
//   (lo, hi): two inputs of the same length that differ in one 8-byte word can
//   never collide. Colliding needs at least two differing words in one lane
//   that cancel in both of its accumulators (two independent multipliers)
//   at once, which for inputs not built to collide happens with probability
//   about 2^-128 per pair (2^-64 per lane accumulator).
// - The digested encoding is length-prefixed and carries every shape, dtype,
//   quantization parameter and attribute (graph_digest.h), and the cache
//   entry's header stores the IR digest next to the key: an entry is used
//   only when both match, and the runtime checks the loaded Program (regions,
//   tensor sizes, hardware) before it runs.
// - It is not collision resistant against someone who constructs inputs on
//   purpose: cache_dir must be as trusted as the model (cache_entry.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace nacc::support {

class Digest128 {
 public:
  Digest128();
  Digest128& update(const void* data, size_t size);
  Digest128& update(const std::string& s) { return update(s.data(), s.size()); }
  // The two 64-bit halves; the object may keep being updated afterwards.
  void digest(uint64_t* hi, uint64_t* lo) const;
  // Lower-case hex (32 characters: hi then lo, each big-endian hex).
  std::string hex_digest() const;

 private:
  void stripes(const uint8_t* p, size_t n);
  uint64_t a_[4];
  uint64_t b_[4];
  uint8_t buf_[32];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

// Hex digest of `size` bytes in one call.
std::string digest128_hex(const void* data, size_t size);

}  // namespace nacc::support

// Digest128 (digest128.h): four word lanes, two accumulators each, per 32-byte stripe.
#include "support/digest128.h"

#include <cstdio>
#include <cstring>

namespace nacc::support {

namespace {

// Odd multipliers with well-spread bits (each a bijection mod 2^64).
constexpr uint64_t kP1 = 0x9e3779b97f4a7c15ull;  // 2^64 / golden ratio
constexpr uint64_t kP2 = 0xc2b2ae3d27d4eb4full;
constexpr uint64_t kP3 = 0xd6e8feb86659fd93ull;
constexpr uint64_t kP4 = 0xff51afd7ed558ccdull;
constexpr uint64_t kP5 = 0x94d049bb133111ebull;
constexpr uint64_t kP6 = 0xbf58476d1ce4e5b9ull;
// Distinct lane seeds, so that equal words in different lanes do not cancel.
constexpr uint64_t kSeedA[4] = {0x243f6a8885a308d3ull, 0x13198a2e03707344ull,
                                0xa4093822299f31d0ull, 0x082efa98ec4e6c89ull};
constexpr uint64_t kSeedB[4] = {0x452821e638d01377ull, 0xbe5466cf34e90c6cull,
                                0xc0ac29b7c97c50ddull, 0x3f84d5b5b5470917ull};

inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// Little-endian on every host (compilers turn this into one load on x86 and Arm).
inline uint64_t load_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A bijective 64-bit finalizer (xor-shift-multiply, full avalanche).
inline uint64_t fmix64(uint64_t x) {
  x ^= x >> 33;
  x *= kP4;
  x ^= x >> 29;
  x *= kP6;
  x ^= x >> 32;
  return x;
}

// The four accumulators of one kind into one word: each pass a bijection of
// the running value for a fixed accumulator.
inline uint64_t fold(const uint64_t (&v)[4], uint64_t m) {
  uint64_t h = 0;
  for (int i = 0; i < 4; ++i) h = rotl64(h ^ fmix64(v[i] + static_cast<uint64_t>(i)), 23) * m + kP1;
  return h;
}

}  // namespace

Digest128::Digest128() {
  std::memcpy(a_, kSeedA, sizeof a_);
  std::memcpy(b_, kSeedB, sizeof b_);
}

void Digest128::stripes(const uint8_t* p, size_t n) {
  // Locals: the eight chains stay in registers (one multiply-rotate chain per
  // accumulator; the multiplies of the eight overlap).
  uint64_t a0 = a_[0], a1 = a_[1], a2 = a_[2], a3 = a_[3];
  uint64_t b0 = b_[0], b1 = b_[1], b2 = b_[2], b3 = b_[3];
  for (size_t s = 0; s < n; ++s, p += 32) {
    const uint64_t w0 = load_le64(p), w1 = load_le64(p + 8), w2 = load_le64(p + 16),
                   w3 = load_le64(p + 24);
    a0 = rotl64(a0 + w0 * kP1, 31) * kP2;
    a1 = rotl64(a1 + w1 * kP1, 31) * kP2;
    a2 = rotl64(a2 + w2 * kP1, 31) * kP2;
    a3 = rotl64(a3 + w3 * kP1, 31) * kP2;
    b0 = rotl64(b0 ^ (w0 * kP3), 27) * kP4;
    b1 = rotl64(b1 ^ (w1 * kP3), 27) * kP4;
    b2 = rotl64(b2 ^ (w2 * kP3), 27) * kP4;
    b3 = rotl64(b3 ^ (w3 * kP3), 27) * kP4;
  }
  a_[0] = a0, a_[1] = a1, a_[2] = a2, a_[3] = a3;
  b_[0] = b0, b_[1] = b1, b_[2] = b2, b_[3] = b3;
}

Digest128& Digest128::update(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  total_ += size;
  if (buf_len_ > 0) {
    const size_t take = size < 32 - buf_len_ ? size : 32 - buf_len_;
    std::memcpy(buf_ + buf_len_, p, take);
    buf_len_ += take;
    p += take;
    size -= take;
    if (buf_len_ < 32) return *this;
    stripes(buf_, 1);
    buf_len_ = 0;
  }
  if (size >= 32) {
    stripes(p, size / 32);
    p += size / 32 * 32;
    size %= 32;
  }
  if (size > 0) {
    std::memcpy(buf_, p, size);
    buf_len_ = size;
  }
  return *this;
}

void Digest128::digest(uint64_t* hi, uint64_t* lo) const {
  Digest128 t = *this;
  if (t.buf_len_ > 0) {
    std::memset(t.buf_ + t.buf_len_, 0, 32 - t.buf_len_);
    t.stripes(t.buf_, 1);
  }
  uint64_t l = fold(t.a_, kP2) ^ (total_ * kP5);
  uint64_t h = fold(t.b_, kP3) + total_;
  l = fmix64(l ^ rotl64(h, 17));
  h = fmix64(h + l);
  *hi = h;
  *lo = l;
}

std::string Digest128::hex_digest() const {
  uint64_t hi = 0, lo = 0;
  digest(&hi, &lo);
  char s[33];
  std::snprintf(s, sizeof s, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return s;
}

std::string digest128_hex(const void* data, size_t size) {
  return Digest128().update(data, size).hex_digest();
}

}  // namespace nacc::support

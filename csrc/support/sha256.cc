// SHA-256 compression function and padding (FIPS 180-4 §5-6).
#include "support/sha256.h"

#include <algorithm>
#include <cstring>

#include "common/cpu.h"
#include "common/error.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define NACC_SHA_NI 1
#else
#define NACC_SHA_NI 0
#endif

namespace nacc::support {

namespace {

constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// The compression function over `n` 64-byte blocks, scalar (FIPS 180-4 §6.2.2).
void blocks_scalar(uint32_t* state, const uint8_t* p, size_t n) {
  for (; n > 0; --n, p += 64) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i) {
    w[i] = uint32_t{p[4 * i]} << 24 | uint32_t{p[4 * i + 1]} << 16 | uint32_t{p[4 * i + 2]} << 8 |
           uint32_t{p[4 * i + 3]};
  }
  for (int i = 16; i < 64; ++i) {
    const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3], e = state[4], f = state[5],
           g = state[6], h = state[7];
  for (int i = 0; i < 64; ++i) {
    const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                        kRound[i] + w[i];
    const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state[0] += a; state[1] += b; state[2] += c; state[3] += d;
  state[4] += e; state[5] += f; state[6] += g; state[7] += h;
  }
}

#if NACC_SHA_NI
// The same function with the SHA extensions. sha256rnds2 runs two rounds on the state held as
// the pairs (A,B,E,F) and (C,D,G,H) with the message words plus round constants in the low
// half of its third operand; sha256msg1/msg2 compute the message schedule four words at a
// time: W[t] = W[t-16] + s0(W[t-15]) (msg1) + W[t-7] (added here) + s1(W[t-2]) (msg2).
__attribute__((target("sha,sse4.1,ssse3"))) void blocks_sha_ni(uint32_t* state,
                                                              const uint8_t* p, size_t n) {
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bll, 0x0405060700010203ll);
  __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(state)),
                                  0xB1);  // C D A B (high to low)
  __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(state + 4)),
                                 0x1B);  // E F G H
  __m128i s0 = _mm_alignr_epi8(tmp, s1, 8);   // A B E F
  s1 = _mm_blend_epi16(s1, tmp, 0xF0);        // C D G H
  for (; n > 0; --n, p += 64) {
    const __m128i save0 = s0, save1 = s1;
    __m128i m[4];
    for (int i = 0; i < 16; ++i) {
      __m128i& w = m[i & 3];
      if (i < 4) {
        w = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i)),
                             bswap);
      } else {  // m[i&3] holds W[4i-16..]; m[(i+1)&3] W[4i-12..]; m[(i+2)&3], m[(i+3)&3] after
        const __m128i w7 = _mm_alignr_epi8(m[(i + 3) & 3], m[(i + 2) & 3], 4);
        w = _mm_sha256msg2_epu32(
            _mm_add_epi32(_mm_sha256msg1_epu32(w, m[(i + 1) & 3]), w7), m[(i + 3) & 3]);
      }
      __m128i k = _mm_add_epi32(
          w, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kRound + 4 * i)));
      s1 = _mm_sha256rnds2_epu32(s1, s0, k);
      k = _mm_shuffle_epi32(k, 0x0E);
      s0 = _mm_sha256rnds2_epu32(s0, s1, k);
    }
    s0 = _mm_add_epi32(s0, save0);
    s1 = _mm_add_epi32(s1, save1);
  }
  tmp = _mm_shuffle_epi32(s0, 0x1B);        // F E B A
  s1 = _mm_shuffle_epi32(s1, 0xB1);         // D C H G
  s0 = _mm_blend_epi16(tmp, s1, 0xF0);      // D C B A
  s1 = _mm_alignr_epi8(s1, tmp, 8);         // H G F E
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state), s0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state + 4), s1);
}
#endif

}  // namespace

bool Sha256::sha_ni_available() {
  const CpuFeatures& f = cpu_features();
  return NACC_SHA_NI && f.sha_ni && f.sse41;
}

Sha256::Sha256(Impl impl)
    : sha_ni_(impl == Impl::kShaNi || (impl == Impl::kAuto && sha_ni_available())),
      h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
         0x5be0cd19} {
  check_arg(!sha_ni_ || sha_ni_available(), "this CPU has no SHA extensions (sha_ni)");
}

void Sha256::blocks(const uint8_t* p, size_t n) {
#if NACC_SHA_NI
  if (sha_ni_) return blocks_sha_ni(h_, p, n);
#endif
  blocks_scalar(h_, p, n);
}

Sha256& Sha256::update(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  total_ += size;
  if (buf_len_ > 0) {  // top up the partial block first
    const size_t n = std::min(size, sizeof buf_ - buf_len_);
    std::memcpy(buf_ + buf_len_, p, n);
    buf_len_ += n;
    p += n;
    size -= n;
    if (buf_len_ < sizeof buf_) return *this;
    blocks(buf_, 1);
    buf_len_ = 0;
  }
  if (size >= sizeof buf_) {  // whole blocks straight from the input
    const size_t n = size / sizeof buf_;
    blocks(p, n);
    p += n * sizeof buf_;
    size -= n * sizeof buf_;
  }
  std::memcpy(buf_, p, size);
  buf_len_ = size;
  return *this;
}

std::string Sha256::hex_digest() {
  const uint64_t bits = total_ * 8;
  const uint8_t one = 0x80, zero = 0;
  update(&one, 1);
  while (buf_len_ != 56) update(&zero, 1);
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
  update(len, 8);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (uint32_t v : h_) {
    for (int i = 28; i >= 0; i -= 4) out += hex[(v >> i) & 0xf];
  }
  return out;
}

}  // namespace nacc::support

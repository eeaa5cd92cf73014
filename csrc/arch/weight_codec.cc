// Decoder of the lossless weight stream (NACC_SPEC §6; format in
// docs/weight_compression.md) and the CRC-32C that guards it. Hostile input is
// expected: every field is range-checked, reads past the end see zero bits and
// are reported, and every loop is bounded by the element count.
#include "arch/weight_codec.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define NACC_HAVE_SSE42_CRC 1
#endif

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/cpu.h"
#include "common/error.h"

namespace nacc::weight_codec {

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::kRaw: return "raw";
    case Mode::kZrunRice: return "zrun_rice";
    case Mode::kLut: return "lut";
  }
  return "?";
}

namespace {

template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
  throw InvalidArgument(str_cat("weight stream: ", args...));
}

std::string hex32(uint32_t v) {
  char buf[11];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

uint32_t load_le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

// ---- CRC-32C ---------------------------------------------------------------

std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}

#ifdef NACC_HAVE_SSE42_CRC
// AVX2 CPUs all have SSE4.2, so the project's AVX2 switch also gates this path.
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(const uint8_t* p, size_t n) {
  uint64_t crc = 0xFFFFFFFFu;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    crc = _mm_crc32_u64(crc, word);
  }
  auto crc32 = static_cast<uint32_t>(crc);
  for (; n > 0; ++p, --n) crc32 = _mm_crc32_u8(crc32, *p);
  return ~crc32;
}
#endif

// ---- Bit reader --------------------------------------------------------------

// Reads a bitstream LSB first: stream bit i is bit (i % 8) of byte i / 8.
// A 64-bit buffer holds the next `avail_` >= 56 bits after refill() (F. Giesen's
// "variant 4" refill: the next load address does not wait for the bits of the
// current symbol). Bits past the end read as zero; overrun() reports having
// consumed any, and every loop is bounded by the element count, so a reader
// running past the end stops and the caller reports the truncation.
class BitReader {
 public:
  BitReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  // Tops the buffer up to at least 56 valid bits.
  void refill() {
    buf_ |= load64(next_) << avail_;
    next_ += (63 - avail_) >> 3;
    avail_ |= 56;
  }
  // Refills only when fewer than `bits` (<= 56) bits are buffered.
  void ensure(unsigned bits) {
    if (avail_ < bits) refill();
  }
  // Reads an unsigned field of `bits` <= 32 bits (refills itself).
  uint32_t read(unsigned bits) {
    refill();
    const auto v = static_cast<uint32_t>(buf_ & ((uint64_t{1} << bits) - 1));
    consume(bits);
    return v;
  }
  // Limited-length Rice code with parameter k <= 15 and escape width w <= 32:
  // t < 16 zero bits, a one bit, then k bits m -> (t << k) | m; or 16 zero
  // bits then w bits x -> x, which must be >= 16 << k (canonical escape).
  // Needs 16 + max(k, w) bits in the buffer (callers refill).
  uint32_t read_rice(unsigned k, unsigned w) {
    const uint64_t bits = buf_;
    const auto t = static_cast<unsigned>(__builtin_ctzll(bits | (uint64_t{1} << kRiceEscapeZeros)));
    if (t < kRiceEscapeZeros) {
      consume(t + 1 + k);
      return (t << k) | static_cast<uint32_t>((bits >> (t + 1)) & ((uint64_t{1} << k) - 1));
    }
    const auto x = static_cast<uint32_t>((bits >> kRiceEscapeZeros) & ((uint64_t{1} << w) - 1));
    consume(kRiceEscapeZeros + w);
    if (x < (kRiceEscapeZeros << k)) {
      fail("non-canonical Rice escape for ", x, " ending at bit ", position(), " (escapes code values >= ",
           kRiceEscapeZeros << k, " for k=", k, ")");
    }
    return x;
  }
  // Bits consumed so far.
  size_t position() const { return 8 * next_ - avail_; }
  bool overrun() const { return position() > 8 * size_; }

 private:
  void consume(unsigned bits) {
    buf_ >>= bits;
    avail_ -= bits;
  }
  // The 8 bytes at `byte`, little-endian; zero past the end.
  uint64_t load64(size_t byte) const {
    uint64_t word = 0;
    if (byte + 8 <= size_) {
      std::memcpy(&word, data_ + byte, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
      word = __builtin_bswap64(word);
#endif
    } else {
      for (size_t i = 0; byte + i < size_ && i < 8; ++i) {
        word |= static_cast<uint64_t>(data_[byte + i]) << (8 * i);
      }
    }
    return word;
  }

  const uint8_t* data_;
  size_t size_;
  size_t next_ = 0;     // next byte to load
  uint64_t buf_ = 0;    // bits from position() on; bits above avail_ are stream bits or zero
  unsigned avail_ = 0;  // valid bits in buf_, <= 63
};

[[noreturn]] void bad_symbol(uint32_t sym, size_t pos, unsigned alphabet) {
  fail("symbol ", sym, " near element ", pos, " is outside the alphabet [0, ", alphabet - 1, "]");
}

struct BlockParams {
  BlockKind kind = BlockKind::kFixed;
  unsigned k = 0;      // Rice parameter of symbols (kRice, kZeroRun)
  unsigned k_run = 0;  // Rice parameter of zero-run lengths (kZeroRun)
};

// Reads one parameter set at a decision point (block `block`).
BlockParams read_params(BitReader& br, const BlockParams* previous, size_t block) {
  if (br.read(1)) {
    if (previous == nullptr) fail("block 0 says 'keep parameters' but there are none to keep");
    return *previous;
  }
  BlockParams p;
  const uint32_t kind = br.read(2);
  if (kind > 2) fail("reserved block kind ", kind, " in block ", block, " (allowed 0..2)");
  p.kind = static_cast<BlockKind>(kind);
  if (p.kind != BlockKind::kFixed) p.k = br.read(3);
  if (p.kind == BlockKind::kZeroRun) p.k_run = br.read(4);
  return p;
}

// One loop per block kind: each decodes from element `pos` and returns where
// it stopped. They are separate functions, and work on a local copy of the
// reader, so that the reader state stays in registers: stores through the
// int8_t output may alias any object whose address escaped.
__attribute__((noinline)) size_t decode_fixed(BitReader& reader, size_t pos, size_t end, unsigned w_sym,
                                              const int8_t* table, unsigned alphabet, int8_t* out) {
  BitReader r = reader;
  for (; pos < end; ++pos) {
    const uint32_t sym = r.read(w_sym);
    if (sym >= alphabet) bad_symbol(sym, pos, alphabet);
    out[pos] = table[sym];
  }
  reader = r;
  return pos;
}

__attribute__((noinline)) size_t decode_rice(BitReader& reader, size_t pos, size_t end, unsigned k,
                                             unsigned w_sym, const int8_t* table, unsigned alphabet,
                                             int8_t* out) {
  BitReader r = reader;
  // Two symbols of at most 16 + 8 bits per refill.
  for (; pos + 2 <= end; pos += 2) {
    r.refill();
    const uint32_t s0 = r.read_rice(k, w_sym);
    const uint32_t s1 = r.read_rice(k, w_sym);
    if (s0 >= alphabet || s1 >= alphabet) bad_symbol(std::max(s0, s1), pos, alphabet);
    out[pos] = table[s0];
    out[pos + 1] = table[s1];
  }
  if (pos < end) {
    r.refill();
    const uint32_t sym = r.read_rice(k, w_sym);
    if (sym >= alphabet) bad_symbol(sym, pos, alphabet);
    out[pos++] = table[sym];
  }
  reader = r;
  return pos;
}

// Pairs (zero run, symbol) while the pair starts before `end`; a run may reach
// past `end` (up to n), so the return value may exceed `end`.
__attribute__((noinline)) size_t decode_zero_runs(BitReader& reader, size_t pos, size_t end, size_t n,
                                                  unsigned k, unsigned k_run, unsigned w_sym,
                                                  unsigned w_run, const int8_t* table, unsigned alphabet,
                                                  int8_t* out) {
  BitReader r = reader;
  const int8_t run_value = table[0];
  while (pos < end) {
    r.refill();
    const uint32_t run = r.read_rice(k_run, w_run);
    if (run > n - pos) fail("zero run of ", run, " at element ", pos, " passes the end (", n, " elements)");
    if (run <= 16 && n - pos >= 16) {
      // Short runs (the common case) as one 16-byte store instead of a memset
      // call; the bytes past the run are written again later.
      std::memset(out + pos, run_value, 16);
    } else if (run > 0) {
      std::memset(out + pos, run_value, run);
    }
    pos += run;
    if (pos == n) break;
    r.ensure(kRiceEscapeZeros + 8);  // a symbol code has at most 16 + 8 bits
    const uint32_t sym = r.read_rice(k, w_sym) + 1;  // symbol 0 only in runs
    if (sym >= alphabet) bad_symbol(sym, pos, alphabet);
    out[pos++] = table[sym];
  }
  reader = r;
  return pos;
}

// Decodes the entropy-coded payload of kZrunRice / kLut. `table` maps symbols
// [0, alphabet) to values; symbol 0 is the one zero runs repeat.
void decode_blocks(const uint8_t* payload, size_t payload_size, const int8_t* table,
                   unsigned alphabet, int8_t* out, size_t n) {
  BitReader br(payload, payload_size);
  const unsigned w_sym = bit_length(alphabet - 1);
  const unsigned w_run = bit_length(n);
  BlockParams params;
  bool have_params = false;
  size_t pos = 0;
  while (pos < n) {
    const size_t block = pos / kBlockElements;
    params = read_params(br, have_params ? &params : nullptr, block);
    have_params = true;
    if (br.overrun()) fail("truncated in block ", block, " (", payload_size, " payload bytes)");
    const size_t end = std::min(n, (block + 1) * kBlockElements);
    switch (params.kind) {
      case BlockKind::kFixed:
        pos = decode_fixed(br, pos, end, w_sym, table, alphabet, out);
        break;
      case BlockKind::kRice:
        pos = decode_rice(br, pos, end, params.k, w_sym, table, alphabet, out);
        break;
      case BlockKind::kZeroRun:
        pos = decode_zero_runs(br, pos, end, n, params.k, params.k_run, w_sym, w_run, table, alphabet, out);
        break;
    }
  }
  if (br.overrun()) {
    fail("truncated: the bitstream needs ", br.position(), " bits, the payload has ", 8 * payload_size);
  }
  const size_t used = (br.position() + 7) / 8;
  if (used != payload_size) {
    fail("bitstream ends after ", used, " bytes but the payload has ", payload_size, " (trailing bytes)");
  }
  if (br.position() % 8 != 0 && (payload[used - 1] >> (br.position() % 8)) != 0) {
    fail("non-zero padding bits in the last byte");
  }
}

}  // namespace

uint32_t crc32c_reference(const void* data, size_t n) {
  static const std::array<uint32_t, 256> table = make_crc32c_table();
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) crc = (crc >> 8) ^ table[(crc ^ p[i]) & 0xFF];
  return ~crc;
}

uint32_t crc32c(const void* data, size_t n) {
#ifdef NACC_HAVE_SSE42_CRC
  if (use_avx2()) return crc32c_sse42(static_cast<const uint8_t*>(data), n);
#endif
  return crc32c_reference(data, n);
}

StreamHeader parse_header(const uint8_t* data, size_t size) {
  if (size < kHeaderBytes) fail("truncated header: ", size, " bytes, need at least ", kHeaderBytes);
  StreamHeader h;
  const unsigned version = data[0] >> 4, mode = data[0] & 0xF;
  if (version != kFormatVersion) fail("format version ", version, " (this decoder reads version ", int{kFormatVersion}, ")");
  if (mode > 2) fail("unknown mode ", mode, " (allowed 0 raw, 1 zrun_rice, 2 lut)");
  h.mode = static_cast<Mode>(mode);
  h.count = load_le32(data + 1);
  h.crc32c = load_le32(data + 5);
  h.payload_offset = kHeaderBytes;
  if (h.mode == Mode::kLut) {
    if (size < kHeaderBytes + 1) fail("truncated header: no palette size byte");
    h.lut_size = static_cast<uint32_t>(data[kHeaderBytes]) + 1;
    h.payload_offset = kHeaderBytes + 1 + h.lut_size;
    if (size < h.payload_offset) {
      fail("truncated palette: ", h.lut_size, " entries need ", h.payload_offset, " bytes, stream has ", size);
    }
    h.lut = reinterpret_cast<const int8_t*>(data + kHeaderBytes + 1);
    bool seen[256] = {};
    for (uint32_t i = 0; i < h.lut_size; ++i) {
      const uint8_t v = data[kHeaderBytes + 1 + i];
      if (seen[v]) fail("palette entry ", i, " repeats value ", int{static_cast<int8_t>(v)});
      seen[v] = true;
    }
  }
  return h;
}

void decode(const uint8_t* data, size_t size, int8_t* out, size_t n) {
  const StreamHeader h = parse_header(data, size);
  if (h.count != n) fail("stream holds ", h.count, " elements, expected ", n);
  const uint8_t* payload = data + h.payload_offset;
  const size_t payload_size = size - h.payload_offset;
  switch (h.mode) {
    case Mode::kRaw:
      if (payload_size != n) fail("raw payload has ", payload_size, " bytes, expected ", n);
      if (n > 0) std::memcpy(out, payload, n);
      break;
    case Mode::kZrunRice: {
      int8_t table[256];
      for (unsigned z = 0; z < 256; ++z) table[z] = unzigzag(static_cast<uint8_t>(z));
      decode_blocks(payload, payload_size, table, 256, out, n);
      break;
    }
    case Mode::kLut:
      decode_blocks(payload, payload_size, h.lut, h.lut_size, out, n);
      break;
  }
  const uint32_t crc = crc32c(out, n);
  if (crc != h.crc32c) {
    fail("CRC-32C mismatch: decoded data has ", hex32(crc), ", header says ", hex32(h.crc32c));
  }
}

}  // namespace nacc::weight_codec

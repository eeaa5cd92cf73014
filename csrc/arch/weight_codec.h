// Lossless weight compression (NACC_SPEC §6): the stream format shared by the
// compiler's encoder (compiler/weight_codec.h) and the decoder that the device's
// weight DMA runs on every compressed transfer. The exact bit layout is in
// docs/weight_compression.md; the constants below are the format's own.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nacc::weight_codec {

// Stream modes; the value is the low nibble of the stream's first byte.
enum class Mode : uint8_t {
  kRaw = 0,        // the n bytes stored as they are
  kZrunRice = 1,   // zig-zag symbols; per block: fixed width, Rice, or zero runs + Rice
  kLut = 2,        // a palette of L <= 256 distinct values; indices coded as in kZrunRice
};

// Returns "raw", "zrun_rice" or "lut".
const char* mode_name(Mode mode);

// ---- Format constants (version 1) ----------------------------------------
constexpr uint8_t kFormatVersion = 1;     // high nibble of byte 0
// Header: byte 0 = version << 4 | mode, u32 LE element count, u32 LE CRC-32C
// of the decoded bytes. kLut adds one byte L - 1 and the L palette bytes.
constexpr size_t kHeaderBytes = 9;
// Block coding parameters may change every kBlockElements output elements.
constexpr size_t kBlockElements = 256;
// Limited-length Rice code: kRiceEscapeZeros zero bits start an escape.
constexpr unsigned kRiceEscapeZeros = 16;
constexpr unsigned kMaxValueRiceK = 7;    // 3-bit field
constexpr unsigned kMaxRunRiceK = 15;     // 4-bit field
// Block kinds, a 2-bit field (3 is reserved and rejected).
enum class BlockKind : uint8_t { kFixed = 0, kRice = 1, kZeroRun = 2 };

// Parsed fixed part of a stream header.
struct StreamHeader {
  Mode mode = Mode::kRaw;
  uint32_t count = 0;        // decoded int8 elements
  uint32_t crc32c = 0;       // CRC-32C (Castagnoli) of the decoded bytes
  uint32_t lut_size = 0;     // L in [1, 256] for kLut, else 0
  const int8_t* lut = nullptr;  // the L palette entries inside the stream (kLut)
  size_t payload_offset = 0;    // bytes before the bitstream / raw bytes
};

// Parses and validates the header of a stream of `size` bytes. Throws
// nacc::InvalidArgument on a bad version/mode, a short header, or a palette
// with duplicate entries.
StreamHeader parse_header(const uint8_t* data, size_t size);

// Decodes a stream of `size` bytes into exactly `n` int8 values at `out`.
// Checks everything: the header's count must equal n, every field and symbol
// must be in range, the stream must end exactly at its last byte with zero
// padding bits, and the CRC-32C of the output must match the header. Any
// violation throws nacc::InvalidArgument with a message starting
// "weight stream:" (the device rethrows it as nacc::DeviceFault); `out` is
// then unspecified. Never reads outside [data, data + size) or writes outside
// [out, out + n); work is O(size + n).
void decode(const uint8_t* data, size_t size, int8_t* out, size_t n);

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, init and final xor
// 0xFFFFFFFF) of `n` bytes. The SSE4.2 crc32 instruction is used on the auto
// kernel path; the plain table loop on the reference path (same result).
uint32_t crc32c(const void* data, size_t n);
uint32_t crc32c_reference(const void* data, size_t n);

// Zig-zag map of the kZrunRice mode: 0, -1, 1, -2, 2, ... -> 0, 1, 2, 3, 4, ...
// Range: int8 -> [0, 255] (127 -> 254, -128 -> 255).
inline uint8_t zigzag(int8_t v) {
  return v >= 0 ? static_cast<uint8_t>(2 * v) : static_cast<uint8_t>(-2 * v - 1);
}
inline int8_t unzigzag(uint8_t z) {
  return (z & 1) ? static_cast<int8_t>(-static_cast<int>(z >> 1) - 1) : static_cast<int8_t>(z >> 1);
}

// Number of bits needed to write x (0 -> 0, 1 -> 1, 255 -> 8, 256 -> 9).
inline unsigned bit_length(uint64_t x) {
  return x == 0 ? 0u : 64u - static_cast<unsigned>(__builtin_clzll(x));
}

}  // namespace nacc::weight_codec

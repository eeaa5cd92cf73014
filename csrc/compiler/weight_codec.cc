// Weight stream encoder (format: docs/weight_compression.md). Values become
// symbols (zig-zag, or palette indices sorted by frequency); every block of
// kBlockElements picks the cheapest of fixed width, Rice(k) and zero runs +
// Rice, counted exactly in bits, and keeps the previous block's choice for 1 bit.
#include "compiler/weight_codec.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#include "common/error.h"

namespace nacc::weight_codec {

namespace {

constexpr unsigned kQ = kRiceEscapeZeros;

// Length in bits of the limited-length Rice code of u (see BitReader::read_rice).
inline uint64_t rice_bits(uint32_t u, unsigned k, unsigned w_escape) {
  const uint32_t q = u >> k;
  return q < kQ ? q + 1 + k : kQ + w_escape;
}

// Sum of rice_bits(runs[i], k, w_escape) over i < n <= kBlockElements,
// branch-free so that the compiler vectorizes it (each term <= 16 + 32 bits).
inline uint64_t run_rice_bits(const uint32_t* runs, size_t n, unsigned k, unsigned w_escape) {
  uint32_t sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t q = runs[i] >> k;
    sum += q < kQ ? q + 1 + k : kQ + w_escape;
  }
  return sum;
}

// Writes a bitstream LSB first (stream bit i = bit i % 8 of byte i / 8): bits
// gather in a 64-bit accumulator and leave it four bytes at a time, stored
// little-endian, which is the same byte order.
class BitWriter {
 public:
  explicit BitWriter(std::vector<uint8_t>& out) : out_(out) {}
  // Appends the low `bits` (<= 32) bits of v.
  void write(uint32_t v, unsigned bits) {
    acc_ |= static_cast<uint64_t>(v & ((uint64_t{1} << bits) - 1)) << fill_;
    fill_ += bits;
    if (fill_ >= 32) {
      const size_t at = out_.size();
      out_.resize(at + 4);
      const uint32_t low = static_cast<uint32_t>(acc_);
      for (int i = 0; i < 4; ++i) out_[at + i] = static_cast<uint8_t>(low >> (8 * i));
      acc_ >>= 32;
      fill_ -= 32;
    }
  }
  void write_rice(uint32_t u, unsigned k, unsigned w_escape) {
    const uint32_t q = u >> k;
    if (q < kQ) {
      write(uint32_t{1} << q, q + 1);  // q zero bits, then a one
      write(u, k);
    } else {
      write(0, kQ);
      write(u, w_escape);
    }
  }
  // Pads the last byte with zero bits.
  void flush() {
    for (; fill_ > 0; fill_ = fill_ > 8 ? fill_ - 8 : 0) {
      out_.push_back(static_cast<uint8_t>(acc_));
      acc_ >>= 8;
    }
    acc_ = 0;
  }

 private:
  std::vector<uint8_t>& out_;
  uint64_t acc_ = 0;
  unsigned fill_ = 0;
};

struct BlockParams {
  BlockKind kind = BlockKind::kFixed;
  unsigned k = 0;
  unsigned k_run = 0;
  bool operator==(const BlockParams& o) const {
    return kind == o.kind && k == o.k && k_run == o.k_run;
  }
};

uint64_t param_bits(const BlockParams& p, const BlockParams* previous) {
  if (previous != nullptr && *previous == p) return 1;
  switch (p.kind) {
    case BlockKind::kFixed: return 1 + 2;
    case BlockKind::kRice: return 1 + 2 + 3;
    case BlockKind::kZeroRun: return 1 + 2 + 3 + 4;
  }
  return 0;
}

// The length of the limited-length Rice code of every symbol for k = 0..7,
// for one escape width: a block's Rice cost is its histogram times a row.
class RiceTable {
 public:
  explicit RiceTable(unsigned w_escape) {
    for (unsigned k = 0; k <= kMaxValueRiceK; ++k) {
      for (unsigned s = 0; s < 256; ++s) bits_[k][s] = static_cast<uint16_t>(rice_bits(s, k, w_escape));
    }
  }
  const uint16_t* row(unsigned k) const { return bits_[k].data(); }

 private:
  std::array<std::array<uint16_t, 256>, kMaxValueRiceK + 1> bits_;
};

// Counts of symbols in [0, alphabet), for the exact Rice cost of a block.
class SymbolHistogram {
 public:
  explicit SymbolHistogram(unsigned alphabet) : alphabet_(alphabet) {}
  void add(uint8_t s) { ++count_[s]; }
  // add() of syms[0, n), in two interleaved histograms (repeated symbols then
  // do not wait on each other's increment) summed at the end.
  void add_all(const uint8_t* syms, size_t n) {
    std::array<uint16_t, 256> odd{};
    size_t i = 0;
    for (; i + 2 <= n; i += 2) ++count_[syms[i]], ++odd[syms[i + 1]];
    if (i < n) ++count_[syms[i]];
    for (unsigned s = 0; s < alphabet_; ++s) count_[s] = uint16_t(count_[s] + odd[s]);
  }
  void clear() { std::fill_n(count_.begin(), alphabet_, uint16_t{0}); }
  // Bits of the limited-length Rice code of all symbols, for k = 0..7 (a dot
  // product over the alphabet per k; the compiler vectorizes it, 8 symbols a
  // step in 16-bit lanes: at most kBlockElements symbols are counted, each
  // code at most kRiceEscapeZeros + 8 bits (the escape width of a symbol), so
  // every partial sum fits).
  std::array<uint64_t, kMaxValueRiceK + 1> rice_costs(const RiceTable& table) const {
    static_assert(kBlockElements * (kRiceEscapeZeros + 8) <= 0xffff, "16-bit Rice cost sums");
    std::array<uint64_t, kMaxValueRiceK + 1> cost{};
    for (unsigned k = 0; k <= kMaxValueRiceK; ++k) {
      const uint16_t* bits = table.row(k);
      uint16_t sum = 0;
      for (unsigned s = 0; s < alphabet_; ++s) sum = uint16_t(sum + count_[s] * bits[s]);
      cost[k] = sum;
    }
    return cost;
  }

 private:
  unsigned alphabet_;
  std::array<uint16_t, 256> count_{};
};

// Writes the symbols syms[0, n) (each < alphabet; symbol 0 is the run symbol)
// as the block-coded bitstream, greedily choosing each block's parameters.
void encode_blocks(const uint8_t* syms, size_t n, unsigned alphabet, std::vector<uint8_t>& out) {
  const unsigned w_sym = bit_length(alphabet - 1);
  const unsigned w_run = bit_length(n);
  BitWriter bw(out);
  BlockParams prev;
  bool have_prev = false;
  // Zero-run pairs starting in the block (at most one per element): run lengths
  // runs[0, nr) and their symbols minus 1, values[0, nv) (nv is nr or nr - 1).
  std::array<uint32_t, kBlockElements> runs;
  std::array<uint8_t, kBlockElements> values;
  size_t nr = 0, nv = 0;
  const RiceTable rice_table(w_sym);
  SymbolHistogram symbols(alphabet);
  size_t pos = 0;
  while (pos < n) {
    const size_t block = pos / kBlockElements;
    const size_t end = std::min(n, (block + 1) * kBlockElements);
    const BlockParams* previous = have_prev ? &prev : nullptr;

    // Per-element kinds cover [pos, end).
    symbols.clear();
    symbols.add_all(syms + pos, end - pos);
    const auto rice = symbols.rice_costs(rice_table);
    BlockParams best{BlockKind::kFixed, 0, 0};
    uint64_t best_bits = (end - pos) * w_sym + param_bits(best, previous);
    for (unsigned k = 0; k <= kMaxValueRiceK; ++k) {
      const BlockParams p{BlockKind::kRice, k, 0};
      const uint64_t bits = rice[k] + param_bits(p, previous);
      if (bits < best_bits) best = p, best_bits = bits;
    }

    // Zero runs cover [pos, zrun_end): the pairs that start before `end`.
    nr = nv = 0;
    symbols.clear();
    size_t p = pos;
    uint32_t max_run = 0;
    while (p < end) {
      size_t q = p;
      while (q < n && syms[q] == 0) ++q;
      runs[nr] = static_cast<uint32_t>(q - p);
      max_run = std::max(max_run, runs[nr++]);
      if (q == n) {
        p = q;
        break;
      }
      values[nv] = static_cast<uint8_t>(syms[q] - 1);
      symbols.add(values[nv++]);
      p = q + 1;
    }
    const size_t zrun_end = p;
    // Run costs for every k_run; no k_run above bit_length(max_run) can win.
    std::array<uint64_t, kMaxRunRiceK + 1> run_cost;
    run_cost.fill(std::numeric_limits<uint64_t>::max());
    for (unsigned k = 0; k <= std::min(kMaxRunRiceK, bit_length(max_run)); ++k) {
      run_cost[k] = run_rice_bits(runs.data(), nr, k, w_run);
    }
    const auto value_cost = symbols.rice_costs(rice_table);
    BlockParams zbest{BlockKind::kZeroRun, 0, 0};
    for (unsigned k = 1; k <= kMaxRunRiceK; ++k) {
      if (run_cost[k] < run_cost[zbest.k_run]) zbest.k_run = k;
    }
    for (unsigned k = 1; k <= kMaxValueRiceK; ++k) {
      if (value_cost[k] < value_cost[zbest.k]) zbest.k = k;
    }
    uint64_t zbits = run_cost[zbest.k_run] + value_cost[zbest.k] + param_bits(zbest, previous);
    if (previous != nullptr && previous->kind == BlockKind::kZeroRun) {
      // Keeping the previous block's zero-run parameters costs 1 bit.
      uint64_t keep_bits = value_cost[previous->k] + 1;
      if (run_cost[previous->k_run] == std::numeric_limits<uint64_t>::max()) {
        run_cost[previous->k_run] = run_rice_bits(runs.data(), nr, previous->k_run, w_run);
      }
      keep_bits += run_cost[previous->k_run];
      if (keep_bits <= zbits) zbest = *previous, zbits = keep_bits;
    }
    // Zero runs may reach past `end`; the per-element kinds would cover that
    // overhang from the next block, at about the cost of one more pair plus a
    // parameter switch to zero runs.
    uint64_t compare_bits = best_bits;
    if (zrun_end > end) {
      const bool last_pair_has_value = nv == nr;
      compare_bits += rice_bits(runs[nr - 1], zbest.k_run, w_run) +
                      (last_pair_has_value ? rice_bits(values[nv - 1], zbest.k, w_sym) : 0) +
                      param_bits(zbest, nullptr);
    }
    if (zbits < compare_bits) best = zbest;

    // Emit.
    if (previous != nullptr && *previous == best) {
      bw.write(1, 1);
    } else {
      bw.write(0, 1);
      bw.write(static_cast<uint32_t>(best.kind), 2);
      if (best.kind != BlockKind::kFixed) bw.write(best.k, 3);
      if (best.kind == BlockKind::kZeroRun) bw.write(best.k_run, 4);
    }
    switch (best.kind) {
      case BlockKind::kFixed:
        for (; pos < end; ++pos) bw.write(syms[pos], w_sym);
        break;
      case BlockKind::kRice:
        for (; pos < end; ++pos) bw.write_rice(syms[pos], best.k, w_sym);
        break;
      case BlockKind::kZeroRun:
        for (size_t i = 0; i < nr; ++i) {
          bw.write_rice(runs[i], best.k_run, w_run);
          if (i < nv) bw.write_rice(values[i], best.k, w_sym);
        }
        pos = zrun_end;
        break;
    }
    prev = best;
    have_prev = true;
  }
  bw.flush();
}

void put_header(std::vector<uint8_t>& out, Mode mode, const int8_t* data, size_t n) {
  const uint32_t count = static_cast<uint32_t>(n);
  const uint32_t crc = crc32c(data, n);
  out.push_back(static_cast<uint8_t>(kFormatVersion << 4 | static_cast<uint8_t>(mode)));
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(count >> (8 * i)));
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(crc >> (8 * i)));
}

std::vector<uint8_t> encode_raw(const int8_t* data, size_t n) {
  std::vector<uint8_t> out;
  out.reserve(kHeaderBytes + n);
  put_header(out, Mode::kRaw, data, n);
  const auto* bytes = reinterpret_cast<const uint8_t*>(data);
  out.insert(out.end(), bytes, bytes + n);
  return out;
}

std::vector<uint8_t> encode_zrun_rice(const int8_t* data, size_t n) {
  std::vector<uint8_t> syms(n);
  for (size_t i = 0; i < n; ++i) syms[i] = zigzag(data[i]);
  std::vector<uint8_t> out;
  out.reserve(kHeaderBytes + n + n / 8 + 64);
  put_header(out, Mode::kZrunRice, data, n);
  encode_blocks(syms.data(), n, 256, out);
  return out;
}

// Palette: the distinct values by descending count (ties: ascending value), so
// index 0 is the most frequent value (the one zero runs repeat) and small
// indices are the frequent ones. An empty buffer gets the palette {0}.
std::vector<uint8_t> encode_lut(const int8_t* data, size_t n) {
  // Four interleaved histograms: repeated values do not wait on each other.
  std::array<std::array<uint32_t, 256>, 4> part{};
  const auto* bytes = reinterpret_cast<const uint8_t*>(data);
  size_t i4 = 0;
  for (; i4 + 4 <= n; i4 += 4) {
    ++part[0][bytes[i4]], ++part[1][bytes[i4 + 1]], ++part[2][bytes[i4 + 2]], ++part[3][bytes[i4 + 3]];
  }
  for (; i4 < n; ++i4) ++part[0][bytes[i4]];
  std::array<size_t, 256> count{};
  for (size_t v = 0; v < 256; ++v) {
    count[v] = size_t{part[0][v]} + part[1][v] + part[2][v] + part[3][v];
  }
  std::vector<int> palette;
  for (int v = -128; v <= 127; ++v) {
    if (count[static_cast<uint8_t>(v)] > 0) palette.push_back(v);
  }
  if (palette.empty()) palette.push_back(0);
  std::stable_sort(palette.begin(), palette.end(), [&](int a, int b) {
    return count[static_cast<uint8_t>(a)] > count[static_cast<uint8_t>(b)];
  });
  std::array<uint8_t, 256> index{};
  for (size_t i = 0; i < palette.size(); ++i) index[static_cast<uint8_t>(palette[i])] = static_cast<uint8_t>(i);
  std::vector<uint8_t> syms(n);
  for (size_t i = 0; i < n; ++i) syms[i] = index[static_cast<uint8_t>(data[i])];
  std::vector<uint8_t> out;
  out.reserve(kHeaderBytes + 1 + palette.size() + n + n / 8 + 64);
  put_header(out, Mode::kLut, data, n);
  out.push_back(static_cast<uint8_t>(palette.size() - 1));
  for (int v : palette) out.push_back(static_cast<uint8_t>(v));
  encode_blocks(syms.data(), n, static_cast<unsigned>(palette.size()), out);
  return out;
}

void check_count(size_t n) {
  check_arg(n <= std::numeric_limits<uint32_t>::max(), "weight_codec.encode: ", n,
            " elements, the stream's count field holds at most 4294967295");
}

}  // namespace

size_t ModeSizes::of(Mode mode) const {
  switch (mode) {
    case Mode::kRaw: return raw;
    case Mode::kZrunRice: return zrun_rice;
    case Mode::kLut: return lut;
  }
  return 0;
}

Mode choose(const ModeSizes& sizes) {
  Mode best = Mode::kRaw;
  for (Mode m : {Mode::kZrunRice, Mode::kLut}) {
    if (sizes.of(m) < sizes.of(best)) best = m;
  }
  return best;
}

Encoded encode_best(const int8_t* data, size_t n) {
  check_count(n);
  std::vector<uint8_t> zrun = encode_zrun_rice(data, n);
  std::vector<uint8_t> lut = encode_lut(data, n);
  Encoded e;
  e.sizes = ModeSizes{kHeaderBytes + n, zrun.size(), lut.size()};
  e.mode = choose(e.sizes);
  switch (e.mode) {
    case Mode::kRaw: e.stream = encode_raw(data, n); break;
    case Mode::kZrunRice: e.stream = std::move(zrun); break;
    case Mode::kLut: e.stream = std::move(lut); break;
  }
  return e;
}

std::vector<uint8_t> encode(const int8_t* data, size_t n, std::optional<Mode> mode) {
  check_count(n);
  if (!mode) return encode_best(data, n).stream;
  switch (*mode) {
    case Mode::kRaw: return encode_raw(data, n);
    case Mode::kZrunRice: return encode_zrun_rice(data, n);
    case Mode::kLut: return encode_lut(data, n);
  }
  throw InvalidArgument("weight_codec.encode: unknown mode");
}

ModeSizes encoded_sizes(const int8_t* data, size_t n) { return encode_best(data, n).sizes; }

}  // namespace nacc::weight_codec

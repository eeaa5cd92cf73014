// The Program container: serialization to the byte layout of
// docs/command_stream.md §9 (magic, version, little-endian length-prefixed
// sections, FNV-1a-64 checksum) and a loader that validates every length,
// count and index against the bytes that remain before trusting it.
#include "runtime/program.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "arch/command_stream.h"
#include "common/error.h"

namespace nacc {

namespace {

constexpr char kMagic[8] = {'N', 'A', 'C', 'C', 'P', 'R', 'O', 'G'};
// 2 adds the op output records, 3 the op lowering, 4 the I/O tensors' region
// offsets (staging regions) and the images of a batch. serialize() writes
// version 3 for a Program of one image without staging regions (every offset
// 0): its bytes are those of before.
constexpr uint32_t kFormatVersion = 4;
constexpr uint32_t kStagingFormatVersion = 4;
constexpr uint32_t kOldestFormatVersion = 1;
constexpr uint32_t kMaxStringBytes = limits::kMaxProgramStringBytes;
constexpr uint32_t kMaxRank = 8;
constexpr int64_t kMaxRegionBytes = limits::kMaxRegionBytes;  // region offsets are 29 bits

uint64_t fnv1a64(const uint8_t* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

class Writer {
 public:
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  }
  void u8(uint8_t v) { out.push_back(v); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(uint8_t(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
  }
  void i32(int32_t v) { u32(uint32_t(v)); }
  void i64(int64_t v) { u64(uint64_t(v)); }
  void f32(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    u32(bits);
  }
  void str(const std::string& s, const char* what) {
    check_arg(s.size() <= kMaxStringBytes, "program: ", what, " of ", s.size(),
              " bytes is longer than ", kMaxStringBytes);
    u32(uint32_t(s.size()));
    bytes(s.data(), s.size());
  }
  std::vector<uint8_t> out;
};

// Reads little-endian values, checking each against the bytes that remain.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  void section(const char* name) { section_ = name; }
  void need(uint64_t bytes) {
    if (bytes > n_ - pos_) {
      throw InvalidArgument(str_cat("program: truncated in ", section_, " (need ", bytes,
                                    " bytes, ", n_ - pos_, " left)"));
    }
  }
  const uint8_t* take(uint64_t bytes) {
    need(bytes);
    const uint8_t* q = p_ + pos_;
    pos_ += size_t(bytes);
    return q;
  }
  uint8_t u8() { return *take(1); }
  uint32_t u32() {
    const uint8_t* q = take(4);
    return uint32_t(q[0]) | uint32_t(q[1]) << 8 | uint32_t(q[2]) << 16 | uint32_t(q[3]) << 24;
  }
  uint64_t u64() {
    const uint8_t* q = take(8);
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = v << 8 | q[i];
    return v;
  }
  int32_t i32() { return int32_t(u32()); }
  int64_t i64() { return int64_t(u64()); }
  float f32() {
    const uint32_t bits = u32();
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
  // A count of items of at least `min_item_bytes` each; rejects counts the
  // remaining bytes cannot hold before anything is allocated.
  uint64_t count(uint64_t raw, uint64_t min_item_bytes, const char* what) {
    if (min_item_bytes > 0 && raw > (n_ - pos_) / min_item_bytes) {
      throw InvalidArgument(str_cat("program: truncated in ", section_, " (", what, " count ", raw,
                                    " needs at least ", raw * min_item_bytes, " bytes, ",
                                    n_ - pos_, " left)"));
    }
    return raw;
  }
  std::string str(const char* what) {
    const uint32_t len = u32();
    if (len > kMaxStringBytes) {
      throw InvalidArgument(str_cat("program: ", section_, ": ", what, " length ", len,
                                    " exceeds ", kMaxStringBytes));
    }
    const uint8_t* q = take(len);
    return std::string(reinterpret_cast<const char*>(q), len);
  }
  size_t pos() const { return pos_; }
  size_t left() const { return n_ - pos_; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  const char* section_ = "header";
};

void write_io(Writer& w, const IoTensor& t, uint32_t version) {
  w.str(t.name, "tensor name");
  check_arg(t.shape.size() <= kMaxRank, "program: tensor '", t.name, "' has rank ", t.shape.size(),
            " > ", kMaxRank);
  w.u32(uint32_t(t.shape.size()));
  for (int64_t d : t.shape) w.i64(d);
  w.i32(t.region);
  w.i64(t.size);
  if (version >= kStagingFormatVersion) w.i64(t.offset);
  w.f32(t.scale);
  w.i32(t.zero_point);
}

IoTensor read_io(Reader& r, uint32_t version) {
  IoTensor t;
  t.name = r.str("tensor name");
  const uint32_t rank = r.u32();
  if (rank > kMaxRank) {
    throw InvalidArgument(str_cat("program: tensor '", t.name, "' rank ", rank, " exceeds ", kMaxRank));
  }
  t.shape.resize(rank);
  for (auto& d : t.shape) d = r.i64();
  t.region = r.i32();
  t.size = r.i64();
  if (version >= kStagingFormatVersion) t.offset = r.i64();
  t.scale = r.f32();
  t.zero_point = r.i32();
  return t;
}

}  // namespace

const char* region_kind_name(RegionKind kind) {
  switch (kind) {
    case RegionKind::kUnused: return "unused";
    case RegionKind::kConstant: return "constant";
    case RegionKind::kInput: return "input";
    case RegionKind::kOutput: return "output";
    case RegionKind::kScratch: return "scratch";
  }
  return "?";
}

RegionKind region_kind_by_name(const std::string& name) {
  for (RegionKind k : {RegionKind::kUnused, RegionKind::kConstant, RegionKind::kInput,
                       RegionKind::kOutput, RegionKind::kScratch}) {
    if (name == region_kind_name(k)) return k;
  }
  throw InvalidArgument(str_cat("region kind '", name,
                                "' is not one of unused, constant, input, output, scratch"));
}

std::vector<uint8_t> Program::serialize() const {
  Writer w;
  w.bytes(kMagic, sizeof kMagic);
  bool staging = false;
  for (const auto* list : {&inputs, &outputs}) {
    for (const IoTensor& t : *list) staging = staging || t.offset != 0;
  }
  for (int i = 0; i < limits::kNumRegions; ++i) staging = staging || this->staged(i);
  const uint32_t version = staging || images != 1 ? kFormatVersion : kStagingFormatVersion - 1;
  w.u32(version);
  w.u32(uint32_t(hw.cores));
  w.i64(hw.sram_bytes);
  w.u32(uint32_t(hw.dma_bytes_per_cycle));
  w.u32(uint32_t(hw.ext_bytes_per_cycle));
  if (version >= kStagingFormatVersion) w.u32(uint32_t(images));
  w.u32(uint32_t(regions.size()));
  for (const RegionDesc& r : regions) {
    w.u8(uint8_t(r.kind));
    w.i32(r.io_index);
    w.i64(r.size);
  }
  w.u64(constants.size());
  w.bytes(constants.data(), constants.size());
  w.u32(uint32_t(commands.size()));
  for (uint32_t v : commands) w.u32(v);
  w.u32(uint32_t(inputs.size()));
  for (const IoTensor& t : inputs) write_io(w, t, version);
  w.u32(uint32_t(outputs.size()));
  for (const IoTensor& t : outputs) write_io(w, t, version);
  w.u32(uint32_t(ops.size()));
  for (const OpRecord& o : ops) {
    w.str(o.name, "op name");
    w.str(o.kind, "op kind");
    w.u32(o.first_word);
    w.u32(o.end_word);
    w.i64(o.macs);
    w.i64(o.bound_cycles);
    w.i64(o.weight_bytes);
    w.i64(o.weight_bytes_stored);
    w.i64(o.min_dma_bytes);
    w.str(o.output_name, "op output name");
    check_arg(o.output_shape.size() <= kMaxRank, "program: op '", o.name, "' output rank ",
              o.output_shape.size(), " > ", kMaxRank);
    w.u32(uint32_t(o.output_shape.size()));
    for (int64_t d : o.output_shape) w.i64(d);
    w.i32(o.output_region);
    w.i64(o.output_offset);
    w.i64(o.output_size);
    w.str(o.lowering, "op lowering");
  }
  w.u64(fnv1a64(w.out.data(), w.out.size()));
  return std::move(w.out);
}

Program Program::deserialize(const uint8_t* data, size_t size, Checksum checksum) {
  check_arg(data != nullptr || size == 0, "program: null data");
  Reader r(data, size);
  Program p;
  r.section("header");
  const uint8_t* magic = r.take(sizeof kMagic);
  check_arg(std::memcmp(magic, kMagic, sizeof kMagic) == 0,
            "program: bad magic (not a NACC program: expected \"NACCPROG\")");
  const uint32_t version = r.u32();
  check_arg(version >= kOldestFormatVersion && version <= kFormatVersion,
            "program: format version ", version, " is not supported (this build reads versions ",
            kOldestFormatVersion, " to ", kFormatVersion, ")");
  r.section("hardware configuration");
  p.hw.cores = int(r.u32());
  p.hw.sram_bytes = r.i64();
  p.hw.dma_bytes_per_cycle = int(r.u32());
  p.hw.ext_bytes_per_cycle = int(r.u32());
  if (version >= kStagingFormatVersion) {
    const uint32_t images = r.u32();
    check_arg(images >= 1 && images <= uint32_t(kMaxImages), "program: ", images,
              " images (must be 1 to ", kMaxImages, ")");
    p.images = int(images);
  }
  r.section("regions");
  const uint32_t nregions = r.u32();
  check_arg(nregions == p.regions.size(), "program: region count ", nregions, " must be ",
            p.regions.size());
  for (RegionDesc& d : p.regions) {
    const uint8_t kind = r.u8();
    check_arg(kind <= uint8_t(RegionKind::kScratch), "program: region kind ", int(kind),
              " is not one of 0..4");
    d.kind = RegionKind(kind);
    d.io_index = r.i32();
    d.size = r.i64();
  }
  r.section("constants");
  const uint64_t nconst = r.count(r.u64(), 1, "constant byte");
  const uint8_t* cdata = r.take(nconst);
  p.constants.assign(cdata, cdata + nconst);
  r.section("commands");
  const uint64_t nwords = r.count(r.u32(), 4, "command word");
  p.commands.resize(size_t(nwords));
  for (auto& v : p.commands) v = r.u32();
  r.section("inputs");
  const uint64_t nin = r.count(r.u32(), 28, "input");
  for (uint64_t i = 0; i < nin; ++i) p.inputs.push_back(read_io(r, version));
  r.section("outputs");
  const uint64_t nout = r.count(r.u32(), 28, "output");
  for (uint64_t i = 0; i < nout; ++i) p.outputs.push_back(read_io(r, version));
  r.section("ops");
  const uint64_t nops = r.count(r.u32(), 56, "op");
  for (uint64_t i = 0; i < nops; ++i) {
    OpRecord o;
    o.name = r.str("op name");
    o.kind = r.str("op kind");
    o.first_word = r.u32();
    o.end_word = r.u32();
    o.macs = r.i64();
    o.bound_cycles = r.i64();
    o.weight_bytes = r.i64();
    o.weight_bytes_stored = r.i64();
    o.min_dma_bytes = r.i64();
    if (version >= 2) {
      o.output_name = r.str("op output name");
      const uint32_t rank = r.u32();
      if (rank > kMaxRank) {
        throw InvalidArgument(str_cat("program: op '", o.name, "' output rank ", rank,
                                      " exceeds ", kMaxRank));
      }
      o.output_shape.resize(rank);
      for (auto& d : o.output_shape) d = r.i64();
      o.output_region = r.i32();
      o.output_offset = r.i64();
      o.output_size = r.i64();
    }
    if (version >= 3) o.lowering = r.str("op lowering");
    p.ops.push_back(std::move(o));
  }
  r.section("checksum");
  const size_t body = r.pos();
  const uint64_t stored = r.u64();
  const uint64_t actual = checksum == Checksum::kVerify ? fnv1a64(data, body) : stored;
  check_arg(stored == actual, "program: checksum mismatch (stored ", stored, ", computed ", actual,
            ": the bytes were corrupted)");
  check_arg(r.left() == 0, "program: ", r.left(), " trailing bytes after the checksum");
  p.validate();
  return p;
}

void Program::validate() const {
  try {
    validate_hw_config(hw);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(str_cat("program: hardware configuration: ", e.what()));
  }
  check_arg(images >= 1 && images <= kMaxImages, "program: ", images,
            " images (must be 1 to ", kMaxImages, ")");
  int constant_regions = 0;
  for (size_t i = 0; i < regions.size(); ++i) {
    const RegionDesc& d = regions[i];
    check_arg(uint8_t(d.kind) <= uint8_t(RegionKind::kScratch), "program: region ", i,
              " has kind ", int(d.kind), ", not one of 0..4");
    const char* kind = region_kind_name(d.kind);
    if (d.kind == RegionKind::kUnused) {
      check_arg(d.size == 0 && d.io_index == -1, "program: unused region ", i,
                " must have size 0 and io_index -1 (has ", d.size, ", ", d.io_index, ")");
      continue;
    }
    check_arg(d.size >= 1 && d.size <= kMaxRegionBytes, "program: ", kind, " region ", i,
              " size ", d.size, " out of range [1, ", kMaxRegionBytes, "]");
    if (d.kind == RegionKind::kConstant) {
      ++constant_regions;
      check_arg(d.size == int64_t(constants.size()), "program: constant region ", i, " size ",
                d.size, " differs from the ", constants.size(), " constant bytes");
    }
    if ((d.kind == RegionKind::kInput || d.kind == RegionKind::kOutput) && d.io_index == -1) {
      // A staging region: two or more tensors name it, at disjoint byte ranges inside it.
      const auto& list = d.kind == RegionKind::kInput ? inputs : outputs;
      std::vector<std::pair<int64_t, int64_t>> ranges;
      for (const IoTensor& t : list) {
        if (t.region != int(i)) continue;
        check_arg(t.offset >= 0 && t.size >= 1 && t.offset <= d.size && t.size <= d.size - t.offset,
                  "program: ", kind, " '", t.name, "' bytes [", t.offset, ", ", t.offset + t.size,
                  ") are not inside its staging region ", i, " of ", d.size, " bytes");
        ranges.push_back({t.offset, t.offset + t.size});
      }
      check_arg(ranges.size() >= 2, "program: staging ", kind, " region ", i, " holds ",
                ranges.size(), " tensors (a staging region holds two or more)");
      std::sort(ranges.begin(), ranges.end());
      for (size_t k = 1; k < ranges.size(); ++k) {
        check_arg(ranges[k].first >= ranges[k - 1].second, "program: staging ", kind, " region ",
                  i, " has overlapping tensors at bytes ", ranges[k].first);
      }
    } else if (d.kind == RegionKind::kInput || d.kind == RegionKind::kOutput) {
      const auto& list = d.kind == RegionKind::kInput ? inputs : outputs;
      check_arg(d.io_index >= 0 && size_t(d.io_index) < list.size(), "program: ", kind, " region ",
                i, " io_index ", d.io_index, " out of range [0, ", int64_t(list.size()) - 1, "]");
      check_arg(list[size_t(d.io_index)].region == int(i), "program: ", kind, " region ", i,
                " names ", kind, " ", d.io_index, " but that tensor is in region ",
                list[size_t(d.io_index)].region);
    } else {
      check_arg(d.io_index == -1, "program: ", kind, " region ", i, " must have io_index -1");
    }
  }
  check_arg(constant_regions <= 1, "program: ", constant_regions,
            " constant regions (the constants are one blob: at most one)");
  check_arg(constant_regions == 1 || constants.empty(), "program: ", constants.size(),
            " constant bytes but no constant region");
  for (int pass = 0; pass < 2; ++pass) {
    const auto& list = pass == 0 ? inputs : outputs;
    const RegionKind want = pass == 0 ? RegionKind::kInput : RegionKind::kOutput;
    const char* what = pass == 0 ? "input" : "output";
    for (size_t i = 0; i < list.size(); ++i) {
      const IoTensor& t = list[i];
      check_arg(t.region >= 0 && t.region < limits::kNumRegions, "program: ", what, " ", i, " '",
                t.name, "' region ", t.region, " out of range [0, 7]");
      const RegionDesc& d = regions[size_t(t.region)];
      check_arg(d.kind == want && (d.io_index == int(i) || d.io_index == -1), "program: ", what,
                " ", i, " '", t.name, "' is in region ", t.region, ", which is a ",
                region_kind_name(d.kind), " region for io_index ", d.io_index);
      const bool staging = d.io_index == -1;
      check_arg(staging || t.offset == 0, "program: ", what, " ", i, " '", t.name, "' offset ",
                t.offset, " in a region of its own (must be 0)");
      check_arg(t.shape.size() <= kMaxRank, "program: ", what, " ", i, " '", t.name, "' rank ",
                t.shape.size(), " > ", kMaxRank);
      int64_t elems = 1;
      for (int64_t dim : t.shape) {
        check_arg(dim >= 1 && dim <= limits::kMaxFeatureMapDim, "program: ", what, " ", i, " '", t.name,
                  "' dimension ", dim, " out of range [1, ", limits::kMaxFeatureMapDim, "]");
        elems *= dim;
        check_arg(elems <= kMaxRegionBytes, "program: ", what, " ", i, " '", t.name,
                  "' has more than ", kMaxRegionBytes, " elements");
      }
      // int8 (1 byte an element) or int16 (2 bytes: 16x8 feature maps, NACC_SPEC §9).
      check_arg((t.size == elems || t.size == 2 * elems) && (staging || t.size == d.size),
                "program: ", what,
                " ", i, " '", t.name, "' size ", t.size, " must equal its element count ", elems,
                " (int8) or twice it (int16) and its region size ", d.size);
      check_arg(std::isfinite(t.scale) && t.scale >= 0.0f, "program: ", what, " ", i, " '", t.name,
                "' scale ", t.scale, " must be finite and >= 0");
      check_arg(t.zero_point >= -128 && t.zero_point <= 127, "program: ", what, " ", i, " '", t.name,
                "' zero point ", t.zero_point, " out of range [-128, 127]");
    }
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpRecord& o = ops[i];
    check_arg(o.first_word <= o.end_word && o.end_word <= commands.size(), "program: op ", i, " '",
              o.name, "' words [", o.first_word, ", ", o.end_word, ") are not inside the ",
              commands.size(), "-word stream");
    if (o.output_region == -1) continue;
    check_arg(o.output_region >= 0 && o.output_region < limits::kNumRegions, "program: op ", i,
              " '", o.name, "' output region ", o.output_region, " out of range [-1, 7]");
    const RegionDesc& d = regions[size_t(o.output_region)];
    check_arg(d.kind == RegionKind::kScratch || d.kind == RegionKind::kOutput ||
                  d.kind == RegionKind::kInput,
              "program: op ", i, " '", o.name, "' output is in region ", o.output_region,
              ", a ", region_kind_name(d.kind), " region (must be scratch, output or input)");
    check_arg(o.output_offset >= 0 && o.output_size >= 0 && o.output_offset <= d.size &&
                  o.output_size <= d.size - o.output_offset,
              "program: op ", i, " '", o.name, "' output bytes [", o.output_offset, ", ",
              o.output_offset + o.output_size, ") are not inside region ", o.output_region,
              " of ", d.size, " bytes");
  }
  try {
    decode_stream(commands);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(str_cat("program: ", e.what()));
  }
}

}  // namespace nacc

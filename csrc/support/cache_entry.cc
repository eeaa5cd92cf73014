// The cache_dir entry container (cache_entry.h).
#include "support/cache_entry.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "common/error.h"
#include "common/version.h"
#include "support/digest128.h"

namespace nacc::support {

namespace {

constexpr char kMagic[8] = {'N', 'A', 'C', 'C', 'C', 'E', 'N', 'T'};
// 2: the payload's Digest128 follows its size.
constexpr uint32_t kContainerVersion = 2;
// Longest header string accepted on load (keys and digests are 32 characters).
constexpr uint32_t kMaxHeaderString = 4096;

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
void put_str(std::vector<uint8_t>& out, const std::string& s) {
  put_u32(out, uint32_t(s.size()));
  out.insert(out.end(), s.begin(), s.end());
}

// Reads the header fields, each checked against the bytes that remain.
class Reader {
 public:
  Reader(const std::vector<uint8_t>& b, size_t pos) : b_(b), pos_(pos) {}
  bool u32(uint32_t* v) {
    if (b_.size() - pos_ < 4) return false;
    *v = 0;
    for (int i = 3; i >= 0; --i) *v = *v << 8 | b_[pos_ + size_t(i)];
    pos_ += 4;
    return true;
  }
  bool u64(uint64_t* v) {
    if (b_.size() - pos_ < 8) return false;
    *v = 0;
    for (int i = 7; i >= 0; --i) *v = *v << 8 | b_[pos_ + size_t(i)];
    pos_ += 8;
    return true;
  }
  bool str(std::string* s) {
    uint32_t n = 0;
    if (!u32(&n) || n > kMaxHeaderString || b_.size() - pos_ < n) return false;
    s->assign(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return true;
  }
  size_t pos() const { return pos_; }
  size_t left() const { return b_.size() - pos_; }

 private:
  const std::vector<uint8_t>& b_;
  size_t pos_;
};

std::string short_hex(const std::string& s) { return s.size() > 16 ? s.substr(0, 16) + "..." : s; }

}  // namespace

std::vector<uint8_t> encode_cache_entry(const CacheEntryId& id, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out(kMagic, kMagic + sizeof kMagic);
  put_u32(out, kContainerVersion);
  put_str(out, id.kind);
  put_str(out, kVersion);
  put_str(out, id.key);
  put_str(out, id.ir_digest);
  put_u64(out, payload.size());
  uint64_t hi = 0, lo = 0;
  Digest128().update(payload.data(), payload.size()).digest(&hi, &lo);
  put_u64(out, hi);
  put_u64(out, lo);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

std::optional<CachePayload> decode_cache_entry(const std::vector<uint8_t>& bytes,
                                               const CacheEntryId& want, std::string* why) {
  const auto fail = [&](std::string reason) -> std::optional<CachePayload> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    return fail("it has no nacc cache header (an entry of an older nacc, or not a nacc cache entry)");
  }
  Reader r(bytes, sizeof kMagic);
  uint32_t version = 0;
  if (!r.u32(&version)) return fail("its header is truncated");
  if (version != kContainerVersion) {
    return fail(str_cat("its container version is ", version, ", this nacc reads ", kContainerVersion));
  }
  CacheEntryId got;
  std::string nacc_version;
  uint64_t size = 0, hi = 0, lo = 0;
  if (!r.str(&got.kind) || !r.str(&nacc_version) || !r.str(&got.key) || !r.str(&got.ir_digest) ||
      !r.u64(&size) || !r.u64(&hi) || !r.u64(&lo)) {
    return fail("its header is truncated or damaged");
  }
  if (got.kind != want.kind) return fail(str_cat("it holds a '", got.kind, "', not a '", want.kind, "'"));
  if (nacc_version != kVersion) {
    return fail(str_cat("it was written by nacc ", nacc_version, ", this is nacc ", kVersion));
  }
  if (got.ir_digest != want.ir_digest) {
    return fail(str_cat("it holds the Program of another partition (IR digest ",
                        short_hex(got.ir_digest), ", this partition's ", short_hex(want.ir_digest),
                        ")"));
  }
  if (got.key != want.key) {
    return fail(str_cat("it was compiled from this partition with other options or hardware (key ",
                        short_hex(got.key), ", expected ", short_hex(want.key), ")"));
  }
  if (size != r.left()) {
    return fail(str_cat("its payload is ", r.left(), " bytes, its header says ", size));
  }
  uint64_t got_hi = 0, got_lo = 0;
  Digest128().update(bytes.data() + r.pos(), size_t(size)).digest(&got_hi, &got_lo);
  if (got_hi != hi || got_lo != lo) {
    return fail("its payload is damaged (its digest differs from the one in its header)");
  }
  return CachePayload{r.pos(), size_t(size)};
}

std::optional<std::vector<uint8_t>> read_cache_file(const std::string& path) {
  // One sized read (an istreambuf_iterator copy goes byte by byte: about 60 M
  // instructions for MobileNetV2's entries at each cached prepare).
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return std::nullopt;
  const std::streamoff size = f.tellg();
  if (size < 0) return std::nullopt;
  f.seekg(0);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  if (size > 0 && !f.read(reinterpret_cast<char*>(bytes.data()), size)) return std::nullopt;
  // A file that grew since tellg (a concurrent writer renames a whole new
  // file in, so this one is complete): take what follows too.
  if (f.peek() != std::ifstream::traits_type::eof()) {
    bytes.insert(bytes.end(), std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  if (f.bad()) return std::nullopt;
  return bytes;
}

void write_cache_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  // Unique per process and call: concurrent writers (threads or processes
  // sharing cache_dir) never write into one temporary file.
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = str_cat(path, ".tmp", ::getpid(), ".", counter.fetch_add(1));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    check_arg(static_cast<bool>(f), "cannot write '", tmp, "'");
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      throw InvalidArgument(str_cat("cannot write '", tmp, "'"));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw InvalidArgument(str_cat("cannot rename '", tmp, "' to '", path, "'"));
  }
}

}  // namespace nacc::support

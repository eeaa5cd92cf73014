// SHA-256 (FIPS 180-4) for the compiled-Program cache keys: a key hashes the
// partition's IR (weights included), the hardware configuration, the compile
// options and the nacc version, so a stale or foreign entry is never reused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace nacc::support {

class Sha256 {
 public:
  // kAuto: the SHA extensions (sha256rnds2) where the CPU has them (AMD Zen, Intel Ice Lake
  // and later; about 6x the scalar rate), else the scalar rounds. Both give the same digest;
  // the choice exists for the tests that compare them.
  enum class Impl { kAuto, kScalar, kShaNi };
  explicit Sha256(Impl impl = Impl::kAuto);
  // True when this CPU can run Impl::kShaNi.
  static bool sha_ni_available();
  Sha256& update(const void* data, size_t size);
  Sha256& update(const std::string& s) { return update(s.data(), s.size()); }
  template <typename T>
  Sha256& update_pod(const T& v) { return update(&v, sizeof v); }
  // Lower-case hex digest (64 characters); the object is spent afterwards.
  std::string hex_digest();

 private:
  void blocks(const uint8_t* p, size_t n);
  bool sha_ni_;
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

}  // namespace nacc::support

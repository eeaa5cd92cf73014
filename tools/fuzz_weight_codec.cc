// Standalone fuzzer of the weight codec (arch/weight_codec.h), meant to run
// under AddressSanitizer + UndefinedBehaviorSanitizer. Round-trips random
// tensors in every mode, then feeds the decoder truncated, bit-flipped,
// byte-mutated, spliced and random streams: each must decode to the original
// or throw nacc::InvalidArgument; any other outcome aborts.
//
// Build and run (one command line):
//   g++ -std=c++17 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all
//       -Icsrc tools/fuzz_weight_codec.cc csrc/arch/weight_codec.cc
//       csrc/compiler/weight_codec.cc csrc/common/cpu.cc -o /tmp/fuzz_weight_codec
//   /tmp/fuzz_weight_codec [seconds=30] [seed=1]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "common/cpu.h"
#include "common/error.h"
#include "arch/weight_codec.h"
#include "compiler/weight_codec.h"

namespace wc = nacc::weight_codec;

namespace {

std::mt19937_64 rng;

size_t pick(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); }

// A random tensor from one of several families (sparse, Laplacian, palette,
// constant, uniform, long runs), of a random size around the block size.
std::vector<int8_t> random_tensor() {
  static const size_t sizes[] = {0, 1, 2, 15, 16, 17, 255, 256, 257, 1000, 4097, 70000};
  const size_t n = rng() % 4 == 0 ? pick(3000) : sizes[pick(std::size(sizes))];
  std::vector<int8_t> v(n);
  const int family = static_cast<int>(pick(6));
  const double b = 0.5 + static_cast<double>(pick(200)) / 10.0;
  std::exponential_distribution<double> ex(1.0 / b);
  const double zero_fraction = static_cast<double>(pick(101)) / 100.0;
  int8_t palette[32];
  for (auto& p : palette) p = static_cast<int8_t>(rng());
  const size_t palette_size = 1 + pick(32);
  for (size_t i = 0; i < n; ++i) {
    switch (family) {
      case 0: v[i] = static_cast<int8_t>(rng()); break;
      case 1: {
        long x = std::lround(ex(rng)) * (rng() & 1 ? 1 : -1);
        v[i] = static_cast<int8_t>(x < -128 ? -128 : x > 127 ? 127 : x);
        if (static_cast<double>(pick(1000)) < 1000 * zero_fraction) v[i] = 0;
        break;
      }
      case 2: v[i] = palette[pick(palette_size)]; break;
      case 3: v[i] = palette[0]; break;
      case 4: v[i] = pick(5000) == 0 ? static_cast<int8_t>(rng()) : 0; break;
      default: v[i] = static_cast<int8_t>(static_cast<int>(pick(3)) - 1); break;
    }
  }
  return v;
}

long accepted_mutants = 0, rejected_mutants = 0;

// Decodes a mutant into an exactly-sized heap buffer (so ASan sees any
// overflow); it must throw InvalidArgument or give back `original`.
void check_mutant(const std::vector<uint8_t>& stream, const std::vector<int8_t>& original) {
  const size_t n = original.size();
  std::unique_ptr<int8_t[]> out(new int8_t[n == 0 ? 1 : n]);
  // Exactly-sized copy of the stream, too: reads past its end are caught.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[stream.size() == 0 ? 1 : stream.size()]);
  if (!stream.empty()) std::memcpy(copy.get(), stream.data(), stream.size());
  try {
    wc::decode(copy.get(), stream.size(), out.get(), n);
  } catch (const nacc::InvalidArgument&) {
    ++rejected_mutants;
    return;
  }
  if (n > 0 && std::memcmp(out.get(), original.data(), n) != 0) {
    std::fprintf(stderr, "FAIL: a mutant decoded to different values without an error\n");
    std::abort();
  }
  ++accepted_mutants;
}

void fuzz_one() {
  const std::vector<int8_t> t = random_tensor();
  const wc::Mode modes[] = {wc::Mode::kRaw, wc::Mode::kZrunRice, wc::Mode::kLut};
  const wc::Mode mode = modes[pick(3)];
  const std::vector<uint8_t> s = wc::encode(t.data(), t.size(), rng() % 4 ? std::optional(mode) : std::nullopt);
  {
    std::vector<int8_t> out(t.size());
    wc::decode(s.data(), s.size(), out.data(), out.size());
    if (out != t) {
      std::fprintf(stderr, "FAIL: round trip differs (n=%zu)\n", t.size());
      std::abort();
    }
  }
  for (int m = 0; m < 24; ++m) {
    std::vector<uint8_t> x = s;
    switch (pick(6)) {
      case 0: x.resize(pick(x.size())); break;                       // truncate
      case 1: if (!x.empty()) x[pick(x.size())] ^= static_cast<uint8_t>(1u << pick(8)); break;
      case 2: for (int i = 0; i < 4 && !x.empty(); ++i) x[pick(x.size())] = static_cast<uint8_t>(rng()); break;
      case 3: x.push_back(static_cast<uint8_t>(rng())); break;       // extend
      case 4: {                                                        // random payload
        const size_t keep = std::min<size_t>(x.size(), wc::kHeaderBytes);
        x.resize(keep + pick(2 * t.size() + 8));
        for (size_t i = keep; i < x.size(); ++i) x[i] = static_cast<uint8_t>(rng());
        break;
      }
      default:                                                         // zero a byte range
        if (!x.empty()) {
          const size_t a = pick(x.size()), len = 1 + pick(16);
          for (size_t i = a; i < x.size() && i < a + len; ++i) x[i] = 0;
        }
    }
    if (x != s) check_mutant(x, t);  // count only real changes
  }
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 30.0;
  rng.seed(argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1);
  const auto start = std::chrono::steady_clock::now();
  long tensors = 0;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    // Alternate the CRC-32C implementations (SSE4.2 / table).
    nacc::set_kernel_path(tensors % 2 ? nacc::KernelPath::kReference : nacc::KernelPath::kAuto);
    fuzz_one();
    ++tensors;
  }
  std::printf("ok: %ld tensors round-tripped, %ld changed streams rejected, %ld decoded identically\n",
              tensors, rejected_mutants, accepted_mutants);
  return 0;
}

// Run-time CPU feature detection and the kernel-path switch (see cpu.h).
#include "common/cpu.h"

#include <atomic>

namespace nacc {
namespace {
std::atomic<KernelPath> g_path{KernelPath::kAuto};
}  // namespace

void set_kernel_path(KernelPath path) { g_path.store(path, std::memory_order_relaxed); }
KernelPath kernel_path() { return g_path.load(std::memory_order_relaxed); }

bool cpu_has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return has;
#else
  return false;
#endif
}

bool cpu_has_fma() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("fma") != 0;
  }();
  return has;
#else
  return false;
#endif
}

bool use_avx2() { return kernel_path() == KernelPath::kAuto && cpu_has_avx2(); }

}  // namespace nacc

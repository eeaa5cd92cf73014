// Run-time CPU feature detection (CPUID, XGETBV, the Linux AMX permission) and
// the process-wide kernel-path switch (see cpu.h).
#include "common/cpu.h"

#include <atomic>
#include <cstdint>
#include <cstring>

#include "common/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define NACC_X86 1
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace nacc {
namespace {

std::atomic<KernelPath> g_path{KernelPath::kAuto};

constexpr KernelPath kIsaPaths[] = {KernelPath::kReference, KernelPath::kAvx2, KernelPath::kAvxVnni,
                                    KernelPath::kAvx512Vnni, KernelPath::kAmx};

// Position in the ISA order (kAuto has none; callers resolve it first).
int rank(KernelPath p) {
  switch (p) {
    case KernelPath::kReference: return 0;
    case KernelPath::kAvx2: return 1;
    case KernelPath::kAvxVnni: return 2;
    case KernelPath::kAvx512Vnni: return 3;
    case KernelPath::kAmx: return 4;
    case KernelPath::kAuto: break;
  }
  return 0;
}

#if NACC_X86
bool bit(uint32_t reg, int n) { return ((reg >> n) & 1u) != 0; }

uint64_t xgetbv0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}
#endif

// Linux gates the AMX tile data state per process (kernel 5.16+): without this
// permission the first tile instruction raises SIGILL.
bool request_amx_permission() {
#if defined(__linux__) && NACC_X86 && defined(SYS_arch_prctl)
  constexpr long kArchGetXcompPerm = 0x1022;
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
  unsigned long mask = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &mask) != 0) return false;
  return ((mask >> kXfeatureXtiledata) & 1ul) != 0;
#else
  return false;
#endif
}

CpuFeatures detect() {
  CpuFeatures f;
#if NACC_X86
  uint32_t a = 0, b = 0, c = 0, d = 0;
  const unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf < 1) return f;
  __cpuid_count(1, 0, a, b, c, d);
  f.sse42 = bit(c, 20);
  f.sse41 = bit(c, 19);
  f.fma = bit(c, 12);
  f.avx = bit(c, 28);
  const bool osxsave = bit(c, 27);
  const uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  f.os_ymm = (xcr0 & 0x6) == 0x6;
  f.os_zmm = f.os_ymm && (xcr0 & 0xE0) == 0xE0;
  f.os_tile = (xcr0 & 0x60000) == 0x60000;
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    const uint32_t max_sub = a;
    f.avx2 = bit(b, 5);
    f.avx512f = bit(b, 16);
    f.sha_ni = bit(b, 29);
    f.avx512dq = bit(b, 17);
    f.avx512bw = bit(b, 30);
    f.avx512vl = bit(b, 31);
    f.avx512_vnni = bit(c, 11);
    f.amx_tile = bit(d, 24);
    f.amx_int8 = bit(d, 25);
    if (max_sub >= 1) {
      __cpuid_count(7, 1, a, b, c, d);
      f.avx_vnni = bit(a, 4);
    }
  }
  if (f.amx_tile && f.amx_int8 && f.os_tile) f.amx_permitted = request_amx_permission();
#endif
  return f;
}

bool available(const CpuFeatures& f, KernelPath p) {
  const bool avx2 = f.avx && f.avx2 && f.fma && f.os_ymm;
  switch (p) {
    case KernelPath::kAuto:
    case KernelPath::kReference: return true;
    case KernelPath::kAvx2: return avx2;
    case KernelPath::kAvxVnni: return avx2 && f.avx_vnni;
    case KernelPath::kAvx512Vnni:
      return avx2 && f.os_zmm && f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl &&
             f.avx512_vnni;
    case KernelPath::kAmx: return avx2 && f.amx_tile && f.amx_int8 && f.amx_permitted;
  }
  return false;
}

// True when units may take `isa`'s code now (see use_*() in cpu.h).
bool enabled(KernelPath isa) {
  static const bool has[] = {true, available(cpu_features(), KernelPath::kAvx2),
                             available(cpu_features(), KernelPath::kAvxVnni),
                             available(cpu_features(), KernelPath::kAvx512Vnni),
                             available(cpu_features(), KernelPath::kAmx)};
  return has[rank(isa)] && rank(active_kernel_path()) >= rank(isa);
}

std::string available_names() {
  std::string s;
  for (KernelPath p : available_kernel_paths()) s += std::string(s.empty() ? "" : ", ") + kernel_path_name(p);
  return s;
}

size_t copy_out(const std::string& s, char* buffer, size_t capacity) {
  if (buffer != nullptr && capacity > 0) {
    const size_t n = s.size() < capacity - 1 ? s.size() : capacity - 1;
    std::memcpy(buffer, s.data(), n);
    buffer[n] = '\0';
  }
  return s.size();
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

std::vector<std::pair<const char*, bool>> cpu_feature_list() {
  const CpuFeatures& f = cpu_features();
  return {{"sse4_1", f.sse41},       {"sse4_2", f.sse42},       {"sha_ni", f.sha_ni},
          {"avx", f.avx},           {"fma", f.fma},
          {"avx2", f.avx2},          {"avx_vnni", f.avx_vnni}, {"avx512f", f.avx512f},
          {"avx512bw", f.avx512bw},  {"avx512dq", f.avx512dq}, {"avx512vl", f.avx512vl},
          {"avx512_vnni", f.avx512_vnni}, {"amx_tile", f.amx_tile}, {"amx_int8", f.amx_int8},
          {"os_ymm", f.os_ymm},      {"os_zmm", f.os_zmm},     {"os_tile", f.os_tile},
          {"amx_permitted", f.amx_permitted}};
}

bool kernel_path_available(KernelPath path) { return available(cpu_features(), path); }

std::vector<KernelPath> available_kernel_paths() {
  std::vector<KernelPath> out;
  for (KernelPath p : kIsaPaths) {
    if (kernel_path_available(p)) out.push_back(p);
  }
  return out;
}

KernelPath best_kernel_path() {
  static const KernelPath best = available_kernel_paths().back();
  return best;
}

const char* kernel_path_name(KernelPath path) {
  switch (path) {
    case KernelPath::kAuto: return "auto";
    case KernelPath::kReference: return "reference";
    case KernelPath::kAvx2: return "avx2";
    case KernelPath::kAvxVnni: return "avx_vnni";
    case KernelPath::kAvx512Vnni: return "avx512_vnni";
    case KernelPath::kAmx: return "amx";
  }
  return "?";
}

bool parse_kernel_path(const std::string& name, KernelPath* out) {
  for (KernelPath p : {KernelPath::kAuto, KernelPath::kReference, KernelPath::kAvx2,
                       KernelPath::kAvxVnni, KernelPath::kAvx512Vnni, KernelPath::kAmx}) {
    if (name == kernel_path_name(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

void set_kernel_path(KernelPath path) {
  check_arg(kernel_path_available(path), "kernel path '", kernel_path_name(path),
            "' is not available on this CPU; available: auto, ", available_names());
  g_path.store(path, std::memory_order_relaxed);
}

KernelPath kernel_path() { return g_path.load(std::memory_order_relaxed); }

KernelPath active_kernel_path() {
  const KernelPath p = kernel_path();
  return p == KernelPath::kAuto ? best_kernel_path() : p;
}

bool cpu_has_avx2() { return kernel_path_available(KernelPath::kAvx2); }

bool use_avx2() { return enabled(KernelPath::kAvx2); }
bool use_avx_vnni() { return enabled(KernelPath::kAvxVnni); }
bool use_avx512_vnni() { return enabled(KernelPath::kAvx512Vnni); }
bool use_amx() { return enabled(KernelPath::kAmx); }

std::string kernel_path_json() {
  std::string s = str_cat("{\"selected\":\"", kernel_path_name(kernel_path()), "\",\"active\":\"",
                          kernel_path_name(active_kernel_path()), "\",\"best\":\"",
                          kernel_path_name(best_kernel_path()), "\",\"available\":[");
  bool first = true;
  for (KernelPath p : available_kernel_paths()) {
    s += str_cat(first ? "" : ",", "\"", kernel_path_name(p), "\"");
    first = false;
  }
  s += "],\"features\":{";
  first = true;
  for (const auto& [name, on] : cpu_feature_list()) {
    s += str_cat(first ? "" : ",", "\"", name, "\":", on ? "true" : "false");
    first = false;
  }
  return s + "}}";
}

}  // namespace nacc

extern "C" int nacc_set_kernel_path(const char* name, char* error, size_t error_size) {
  try {
    nacc::KernelPath path;
    if (name == nullptr || !nacc::parse_kernel_path(name, &path)) {
      throw nacc::InvalidArgument(nacc::str_cat(
          "unknown kernel path '", name ? name : "(null)",
          "'; expected auto, reference, avx2, avx_vnni, avx512_vnni or amx"));
    }
    nacc::set_kernel_path(path);
    return 0;
  } catch (const std::exception& e) {
    nacc::copy_out(e.what(), error, error_size);
    return 1;
  }
}

extern "C" size_t nacc_kernel_path_json(char* buffer, size_t capacity) {
  try {
    return nacc::copy_out(nacc::kernel_path_json(), buffer, capacity);
  } catch (...) {
    return nacc::copy_out("{}", buffer, capacity);
  }
}

// Kernel-path selection: each unit has a plain reference loop and, where it
// pays, ISA-specific paths (AVX2, AVX-VNNI, AVX-512 VNNI, AMX-INT8) compiled
// per function with a target attribute and chosen at run time from CPUID, so a
// build never executes an instruction the CPU (or the OS) does not support.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace nacc {

// The selectable kernel paths. The ISA paths are ordered: a path enables its
// own instructions and those of every lower path the CPU has (see use_*()).
enum class KernelPath {
  kAuto,        // the best path this CPU can run (best_kernel_path())
  kReference,   // the plain reference loops only (test-only switch)
  kAvx2,        // AVX2 + FMA (256-bit integer SIMD)
  kAvxVnni,     // + AVX-VNNI (VEX vpdpbusd, 256-bit)
  kAvx512Vnni,  // + AVX-512 F/BW/DQ/VL and AVX512_VNNI (EVEX vpdpbusd, 512-bit)
  kAmx,         // + AMX-TILE / AMX-INT8 (tdpbssd); needs the Linux XTILEDATA permission
};

// What CPUID and XGETBV report (and, for AMX, whether Linux granted the tile
// state). `os_*` say the OS saves that register state on context switches.
struct CpuFeatures {
  bool sse42 = false;
  bool sse41 = false;
  bool sha_ni = false;          // SHA extensions (sha256rnds2, ...): the cache-key digest
  bool avx = false;
  bool fma = false;
  bool avx2 = false;
  bool avx_vnni = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512dq = false;
  bool avx512vl = false;
  bool avx512_vnni = false;
  bool amx_tile = false;
  bool amx_int8 = false;
  bool os_ymm = false;          // XCR0 SSE + AVX state
  bool os_zmm = false;          // XCR0 opmask + ZMM_Hi256 + Hi16_ZMM
  bool os_tile = false;         // XCR0 XTILECFG + XTILEDATA
  bool amx_permitted = false;   // arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) granted
};

// Detected once per process (the AMX permission is requested then, on a CPU
// that has AMX); thread-safe.
const CpuFeatures& cpu_features();
// cpu_features() as (name, value) pairs, names as /proc/cpuinfo spells the
// flags ("sse4_2", "avx512_vnni", ...; os_* and amx_permitted as above).
std::vector<std::pair<const char*, bool>> cpu_feature_list();

// True when this CPU and OS can run `path` (kAuto and kReference: always).
bool kernel_path_available(KernelPath path);
// The ISA paths this CPU can run, kReference first, in ascending order.
std::vector<KernelPath> available_kernel_paths();
// What kAuto resolves to: the highest available path.
KernelPath best_kernel_path();

// "auto", "reference", "avx2", "avx_vnni", "avx512_vnni", "amx".
const char* kernel_path_name(KernelPath path);
// Parses a name above; false for an unknown one.
bool parse_kernel_path(const std::string& name, KernelPath* out);

// Process-wide selection; safe to call from any thread. Throws
// InvalidArgument for an ISA path this CPU cannot run (the message names the
// available ones). Each shared library (nacc._core, the TFLite delegate, the
// ORT EP) has its own copy of the core and so its own selection: see
// nacc_set_kernel_path below.
void set_kernel_path(KernelPath path);
// The selection as set (kAuto unless changed).
KernelPath kernel_path();
// The path in effect now: kernel_path(), with kAuto resolved.
KernelPath active_kernel_path();

// True when the CPU supports AVX2 and FMA with OS support (independent of the switch).
bool cpu_has_avx2();

// What units may use now. Each is true when the active path is that path or a
// higher one and the CPU has the instructions; so use_avx2() holds on every
// ISA path (units without a VNNI/AMX kernel keep taking their AVX2 code), and
// under kReference all are false.
bool use_avx2();
bool use_avx_vnni();
bool use_avx512_vnni();
bool use_amx();

// {"selected": ..., "active": ..., "best": ..., "available": [...], "features": {...}}
std::string kernel_path_json();

}  // namespace nacc

// The same switch as a C ABI, exported from every nacc library (the delegate's
// and the EP's copies of the core cannot be reached through nacc._core), for
// benchmarks and tests that force a path inside a runtime:
//   nacc_set_kernel_path: 0 on success; 1 with a message in `error` (NUL-
//     terminated, truncated to error_size) for an unknown or unavailable name.
//   nacc_kernel_path_json: writes kernel_path_json() into `buffer` (NUL-
//     terminated, truncated to capacity) and returns its full length.
extern "C" {
__attribute__((visibility("default"))) int nacc_set_kernel_path(const char* name, char* error,
                                                                 size_t error_size);
__attribute__((visibility("default"))) size_t nacc_kernel_path_json(char* buffer, size_t capacity);
}

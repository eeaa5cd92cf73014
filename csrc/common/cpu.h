// Kernel-path selection: each unit has a plain reference loop and, where it
// pays, an AVX2 path compiled per function with a target attribute and chosen
// at run time, so a build never executes AVX2 on a CPU without it.
#pragma once

namespace nacc {

enum class KernelPath {
  kAuto,       // fastest path the CPU supports (AVX2 when present)
  kReference,  // the plain reference loops only (test-only switch)
};

// Process-wide; safe to call from any thread.
void set_kernel_path(KernelPath path);
KernelPath kernel_path();

// True when the CPU supports AVX2 (independent of the switch).
bool cpu_has_avx2();
// True when the CPU supports FMA3 (the float32 units' vector paths use it).
bool cpu_has_fma();
// True when units should take their AVX2 path now.
bool use_avx2();

}  // namespace nacc

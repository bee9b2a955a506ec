#include "cpu_features.h"

// Compiled for the x86-64 baseline (no -target-cpu here): it runs on any CPU, to say whether the
// AVX2 kernels may. CPUID rather than /proc/cpuinfo: it is what the instructions themselves obey
// (an emulator or a container can show another /proc).
int lf_cpu_has_avx2_fma(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 1;
#endif
}

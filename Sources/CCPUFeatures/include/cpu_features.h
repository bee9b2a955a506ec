#ifndef LIVEFILTER_CPU_FEATURES_H
#define LIVEFILTER_CPU_FEATURES_H

/// 1 when this CPU executes AVX2 and FMA instructions and the operating system saves their
/// registers (CPUID with the OS's XSAVE state, as GCC's __builtin_cpu_supports reads it); 1 on
/// non-x86 machines, where the question does not arise.
int lf_cpu_has_avx2_fma(void);

/// A hint to bring the cache line at `p` towards this core for reading; never faults.
static inline void lf_prefetch(const void *p) { __builtin_prefetch(p, 0, 3); }

/// A hint to bring the cache line at `p` towards this core for writing; never faults.
static inline void lf_prefetch_write(const void *p) { __builtin_prefetch(p, 1, 3); }

#endif

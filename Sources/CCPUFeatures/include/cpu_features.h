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

/// Copies the 64 bytes at `source` to `destination` (16-byte aligned; a whole cache line when
/// 64-byte aligned) with non-temporal stores: the line is written without first being read into
/// the cache. Stores made this way are ordered for other threads only after `lf_store_fence`.
static inline void lf_stream_line(void *destination, const void *source) {
    typedef long long lf_v2 __attribute__((vector_size(16), aligned(1)));
    typedef long long lf_a2 __attribute__((vector_size(16)));
    const lf_v2 *s = (const lf_v2 *)source;
    lf_a2 *d = (lf_a2 *)destination;
    __builtin_nontemporal_store((lf_a2)s[0], d);
    __builtin_nontemporal_store((lf_a2)s[1], d + 1);
    __builtin_nontemporal_store((lf_a2)s[2], d + 2);
    __builtin_nontemporal_store((lf_a2)s[3], d + 3);
}

/// Orders the non-temporal stores made before it ahead of every store after it.
static inline void lf_store_fence(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_sfence();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

#endif

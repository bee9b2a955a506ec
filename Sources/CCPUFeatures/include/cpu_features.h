#ifndef LIVEFILTER_CPU_FEATURES_H
#define LIVEFILTER_CPU_FEATURES_H

/// 1 when this CPU executes AVX2 and FMA instructions and the operating system saves their
/// registers (CPUID with the OS's XSAVE state, as GCC's __builtin_cpu_supports reads it); 1 on
/// non-x86 machines, where the question does not arise.
int lf_cpu_has_avx2_fma(void);

/// A hint to bring the cache line at `p` towards this core for reading; never faults.
static inline void lf_prefetch(const void *p) { __builtin_prefetch(p, 0, 3); }

/// `lf_prefetch` into this core's L2 only (PREFETCHT1): for many lines ahead along many rows at
/// once, which brought into L1 would push out each other and the lines in use.
static inline void lf_prefetch_l2(const void *p) { __builtin_prefetch(p, 0, 2); }

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

/// `lf_stream_line` in two 32-byte stores, for AVX2 builds; `destination` 32-byte aligned.
static inline __attribute__((target("avx2"), always_inline)) void lf_stream_line_wide(void *destination, const void *source) {
    typedef long long lf_v4 __attribute__((vector_size(32), aligned(1)));
    typedef long long lf_a4 __attribute__((vector_size(32)));
    const lf_v4 *s = (const lf_v4 *)source;
    lf_a4 *d = (lf_a4 *)destination;
    __builtin_nontemporal_store((lf_a4)s[0], d);
    __builtin_nontemporal_store((lf_a4)s[1], d + 1);
}

/// Orders the non-temporal stores made before it ahead of every store after it.
static inline void lf_store_fence(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_sfence();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

#if defined(__x86_64__)
/// 32 bytes, 32 signed bytes and 16 signed 16-bit lanes: SIMD32<UInt8>, SIMD32<Int8> and
/// SIMD16<Int16> in Swift.
typedef unsigned char lf_u8x32 __attribute__((ext_vector_type(32)));
typedef signed char lf_i8x32 __attribute__((ext_vector_type(32)));
typedef short lf_i16x16 __attribute__((ext_vector_type(16)));

/// `a[i]·w[2j] + b[i]·w[2j+1]` for the low eight i of each 16-byte half (i = 0…7 and 16…23; the
/// bytes interleaved, then one multiply-add of byte pairs, PMADDUBSW). Saturates at ±32767, so
/// the caller's weights keep every pair's sum in range. AVX2: call only from code built for it.
static inline __attribute__((target("avx2"), always_inline)) lf_i16x16 lf_pair_sums_low(lf_u8x32 a, lf_u8x32 b, lf_i8x32 w) {
    typedef char v32c __attribute__((vector_size(32)));
    v32c ab = (v32c)__builtin_shufflevector(a, b, 0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
                                            16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55);
    return (lf_i16x16)__builtin_ia32_pmaddubsw256(ab, (v32c)w);
}

/// `lf_pair_sums_low` for the high eight i of each half (8…15 and 24…31).
static inline __attribute__((target("avx2"), always_inline)) lf_i16x16 lf_pair_sums_high(lf_u8x32 a, lf_u8x32 b, lf_i8x32 w) {
    typedef char v32c __attribute__((vector_size(32)));
    v32c ab = (v32c)__builtin_shufflevector(a, b, 8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47,
                                            24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63);
    return (lf_i16x16)__builtin_ia32_pmaddubsw256(ab, (v32c)w);
}

/// The two halves' sums back as 32 bytes in order, each clamped to 0…255 (PACKUSWB, per 16-byte
/// half: it undoes the interleaving of `lf_pair_sums_low` and `lf_pair_sums_high`).
static inline __attribute__((target("avx2"), always_inline)) lf_u8x32 lf_pack_pair_sums(lf_i16x16 low, lf_i16x16 high) {
    typedef short v16s __attribute__((vector_size(32)));
    return (lf_u8x32)__builtin_ia32_packuswb256((v16s)low, (v16s)high);
}
#endif

#endif

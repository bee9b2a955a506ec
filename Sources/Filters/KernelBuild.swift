import CCPUFeatures
import Foundation

/// Which vector unit the kernels were compiled for. The package manifest builds `Filters` for the
/// CPU of the machine that builds it, as `-march=native` would (AVX2 + FMA, LLVM's "haswell", where
/// the builder's /proc/cpuinfo has them; SSE2 otherwise; `LIVEFILTER_PORTABLE=1` forces SSE2). Swift
/// has no per-function target attribute, so one binary cannot carry both kinds of kernel safely
/// (BENCHMARKS.md, "Portable (SSE2) and AVX2 builds"): a binary built for AVX2 is for AVX2 machines,
/// and `checkCPU()` says so clearly instead of dying on an illegal instruction.
///
/// Everything here is `@inlinable`, so it is compiled into the caller's module with the caller's
/// (baseline) CPU setting: the check itself never runs an AVX2 instruction.
public enum KernelBuild {
    /// "avx2" or "baseline".
    @inlinable public static var target: String { compiledForAVX2 ? "avx2" : "baseline" }

    @inlinable public static var compiledForAVX2: Bool {
        #if LIVEFILTER_AVX2
        true
        #else
        false
        #endif
    }

    /// Whether this CPU executes AVX2 and FMA and the OS saves their registers (CPUID, read by a C
    /// function built for the baseline).
    @inlinable public static var cpuHasAVX2: Bool { lf_cpu_has_avx2_fma() != 0 }

    /// nil when the kernels can run here; else what to do about it.
    @inlinable public static func checkCPU() -> String? {
        guard compiledForAVX2, !cpuHasAVX2 else { return nil }
        return "this livefilter was built for CPUs with AVX2 and FMA (the machine that built it has them) and this CPU has not: "
            + "build it on this machine, or anywhere with LIVEFILTER_PORTABLE=1 swift build -c release"
    }
}

#!/usr/bin/env bash
# Sourced by the build scripts: sets SWIFT_CPU_FLAGS, the `swift build` / `swift test` arguments that
# let the Swift kernels use this machine's vector unit. Swift has no per-function CPU dispatch, so
# the code is built for the CPU it is built on (like -march=native): AVX2 + FMA (x86-64-v3, the
# "haswell" target) when /proc/cpuinfo lists every feature that target assumes, else the x86-64
# baseline (SSE2). The binary then runs on this machine and its like, which is where the README's
# commands build it. LIVEFILTER_PORTABLE=1 forces the baseline, for a binary to copy elsewhere.
# Measured effect (BENCHMARKS.md): blur σ 1 6.9 → 3.8 ms, σ 6 3.1 → 2.0 ms, scale → 720p 7.0 → 5.2 ms.
SWIFT_CPU_FLAGS=()
if [[ "${LIVEFILTER_PORTABLE:-0}" != 1 && "$(uname -m)" == x86_64 && -r /proc/cpuinfo ]]; then
    cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
    have_all=1
    for feature in avx avx2 fma bmi1 bmi2 f16c movbe abm popcnt sse4_2 ssse3 xsave; do
        [[ "$cpu_flags" == *" $feature "* ]] || { have_all=0; break; }
    done
    if [[ $have_all == 1 ]]; then
        SWIFT_CPU_FLAGS=(-Xswiftc -target-cpu -Xswiftc haswell)
    fi
    unset cpu_flags have_all feature
fi

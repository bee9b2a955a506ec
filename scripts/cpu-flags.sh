#!/usr/bin/env bash
# Sourced by the build scripts: SWIFT_CPU_FLAGS, extra `swift build` / `swift test` arguments.
# Empty now: Package.swift itself builds the kernels (the Filters module) for the building machine's
# CPU — AVX2 + FMA where /proc/cpuinfo has every feature LLVM's "haswell" assumes, else the x86-64
# baseline — so a plain `swift build -c release`, and a package depending on LiveFilter, get the same
# kernels as the scripts (BENCHMARKS.md, "Portable (SSE2) and AVX2 builds"). LIVEFILTER_PORTABLE=1
# forces the baseline, for a binary to copy to other machines. Kept so older commands keep working.
SWIFT_CPU_FLAGS=()

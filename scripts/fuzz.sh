#!/usr/bin/env bash
# Builds the libFuzzer targets and runs each for a bounded time on a copy of its seed corpus.
#
#   scripts/fuzz.sh [seconds-per-target]     (default 20)
#
# Targets: FuzzChainGrammar (FilterChain(parsing:), FilterChain(parsingFile:), description
# round trip), FuzzPlaylist (PlaylistParser.parse, HLSLinter(profile:).lint for every profile, the
# exact render round trip, delta merging, Delivery Directives) and FuzzHLSReader (HLSReader against
# a loopback origin answering from the input: the feed must end, the reader must be freed after its
# stop, within bounded times; its inputs are text, with the dictionary Sources/FuzzHLSReader/hls.dict).
# Seeds: Tests/FuzzCorpus/{chain,playlist,reader}. New interesting inputs go to a scratch corpus, not
# the repository; a crash (or a timeout: -timeout is per input) leaves crash-*/timeout-* in
# .build-fuzz/artifacts and makes this script fail.
# Reproduce a crash without libFuzzer: `swift run -c release FuzzPlaylist path/to/crash-file`
# (`FuzzHLSReader --verbose FILE…` also says how each input's feed ended and what the origin was asked).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds="${1:-20}"
# Corpora and artifacts live here; the build is the ordinary one's (.build): with LIVEFILTER_FUZZ=1
# Package.swift instruments only our modules under test and the targets (libFuzzer's coverage,
# AddressSanitizer), so the dependencies already built are reused. A later ordinary build compiles
# those few modules again.
scratch=.build-fuzz
# shellcheck source=scripts/cpu-flags.sh
source scripts/cpu-flags.sh
build() {
    LIVEFILTER_FUZZ=1 swift build -c release "${SWIFT_CPU_FLAGS[@]}" --product "$1"
}
run() {
    local product=$1 seeds=$2
    shift 2
    local corpus="$scratch/corpus/$product"
    mkdir -p "$corpus" "$scratch/artifacts"
    cp -n "$seeds"/* "$corpus"/ 2>/dev/null || true
    echo "== $product: ${seconds}s"
    ".build/release/$product" "$corpus" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
        -rss_limit_mb=2048 -artifact_prefix="$scratch/artifacts/$product-" -print_final_stats=1 "$@" 2>&1 | tail -n 12
    return "${PIPESTATUS[0]}"
}
build FuzzChainGrammar
build FuzzPlaylist
build FuzzHLSReader
status=0
run FuzzChainGrammar Tests/FuzzCorpus/chain || status=$?
run FuzzPlaylist Tests/FuzzCorpus/playlist || status=$?
# An input lasts at most a few hundred milliseconds (the reader is stopped at 250 ms) and the target
# fails itself when the reader outlives its stop by 2 s; -timeout=10 catches what hangs before that.
# lsan.supp: one allocation of Foundation's that LeakSanitizer misreads (the file says which).
LSAN_OPTIONS="suppressions=$PWD/Sources/FuzzHLSReader/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
    run FuzzHLSReader Tests/FuzzCorpus/reader -dict=Sources/FuzzHLSReader/hls.dict || status=$?
exit "$status"

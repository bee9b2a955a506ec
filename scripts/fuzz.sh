#!/usr/bin/env bash
# Builds the libFuzzer targets and runs each for a bounded time on a copy of its seed corpus.
#
#   scripts/fuzz.sh [seconds-per-target]     (default 20)
#
# Targets: FuzzChainGrammar (FilterChain(parsing:), FilterChain(parsingFile:), description
# round trip) and FuzzPlaylist (PlaylistParser.parse, HLSLinter(profile:).lint for every profile, the
# exact render round trip, delta merging, Delivery Directives).
# Seeds: Tests/FuzzCorpus/{chain,playlist}. New interesting inputs go to a scratch corpus, not the
# repository; a crash leaves crash-* in .build-fuzz/artifacts and makes this script fail.
# Reproduce a crash without libFuzzer: `swift run -c release FuzzPlaylist path/to/crash-file`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds="${1:-20}"
scratch=.build-fuzz
build() {
    # -sanitize=fuzzer links libFuzzer (its main); FUZZING drops the replay tool's @main.
    swift build -c release --scratch-path "$scratch" --product "$1" \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DFUZZING
}
run() {
    local product=$1 seeds=$2
    local corpus="$scratch/corpus/$product"
    mkdir -p "$corpus" "$scratch/artifacts"
    cp -n "$seeds"/* "$corpus"/ 2>/dev/null || true
    echo "== $product: ${seconds}s"
    "$scratch/release/$product" "$corpus" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
        -rss_limit_mb=2048 -artifact_prefix="$scratch/artifacts/$product-" -print_final_stats=1 2>&1 | tail -n 12
    return "${PIPESTATUS[0]}"
}
build FuzzChainGrammar
build FuzzPlaylist
status=0
run FuzzChainGrammar Tests/FuzzCorpus/chain || status=$?
run FuzzPlaylist Tests/FuzzCorpus/playlist || status=$?
exit "$status"

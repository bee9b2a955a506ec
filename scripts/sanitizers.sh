#!/usr/bin/env bash
# Runs the test suites under AddressSanitizer and ThreadSanitizer (release, separate scratch paths).
#
#   scripts/sanitizers.sh [address|thread ...] [-- extra swift test arguments]
#
# By default both sanitizers run the unit suites (FiltersTests, PipelineTests, HLSTests). Pass
# `-- --filter EndToEndTests.EndToEnd/Robustness` (or any filter) to run end-to-end tests too: they
# then run the sanitized livefilter binary built next to the test bundle, and a sanitizer report
# in it shows up as a failed test (its stderr is no longer one error line).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
sanitizers=()
while [[ $# -gt 0 && "$1" != "--" ]]; do sanitizers+=("$1"); shift; done
[[ "${1:-}" == "--" ]] && shift
[[ ${#sanitizers[@]} -eq 0 ]] && sanitizers=(address thread)
filters=("$@")
[[ ${#filters[@]} -eq 0 ]] && filters=(--filter '^(FiltersTests|PipelineTests|HLSTests)\.')
# Leaks in FFmpeg's and the runtime's one-time allocations are not what this is for.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=0}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=0:second_deadlock_stack=1}"
status=0
for s in "${sanitizers[@]}"; do
    echo "== $s sanitizer"
    swift build -c release --scratch-path ".build-$s" --sanitize="$s" --build-tests
    swift test -c release --scratch-path ".build-$s" --sanitize="$s" --skip-build "${filters[@]}" || status=$?
done
exit "$status"

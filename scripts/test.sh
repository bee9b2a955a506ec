#!/usr/bin/env bash
# Builds and runs the whole test suite, release mode only: the filter tests compare optimised
# kernels with double-precision references and the end-to-end tests run the release binary
# (.build/release/livefilter). Exits with the test status.
#
#   scripts/test.sh [extra `swift test` arguments, e.g. --filter EndToEndTests]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The tests also play our HLS in GStreamer and headless Chromium: install them too.
export LIVEFILTER_PLAYERS=1
# shellcheck source=scripts/install-deps.sh
source scripts/install-deps.sh

swift build -c release
status=0
# Serial: the timing checks (cancellation within 0.5 s, live latency) must not share the 2 cores.
swift test -c release --no-parallel "$@" || status=$?
exit "$status"

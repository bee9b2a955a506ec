#!/usr/bin/env bash
# The first command to try: installs dependencies, builds the CLI in release mode and filters a
# bundled sample with a preset chain, then shows what came out.
#
#   scripts/demo.sh [CHAIN_FILE]      (default: filters/soft-focus.chain)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=scripts/install-deps.sh
source scripts/install-deps.sh
# shellcheck source=scripts/cpu-flags.sh
source scripts/cpu-flags.sh

chain="${1:-filters/soft-focus.chain}"
input="samples/landscape.mp4"
output="out/landscape-filtered.mp4"

echo "demo: building livefilter (release)"
swift build -c release "${SWIFT_CPU_FLAGS[@]}" --product livefilter

mkdir -p out
echo "demo: livefilter run $input -o $output --chain-file $chain --overwrite"
.build/release/livefilter run "$input" -o "$output" --chain-file "$chain" --overwrite

echo "demo: wrote $(pwd)/$output"
# One line: container, duration, size and bitrate, then each stream.
summary="$({
    ffprobe -v error -show_entries format=format_name,duration,size,bit_rate -of compact=p=0 "$output"
    ffprobe -v error -show_entries stream=codec_type,codec_name,profile,width,height,pix_fmt,r_frame_rate,sample_rate,channels \
        -of compact=p=0 "$output"
} | paste -sd ' ' -)"
echo "demo: ffprobe: $summary"

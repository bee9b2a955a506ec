#!/usr/bin/env bash
# End-to-end benchmark: `livefilter run` against the ffmpeg CLI doing the same work, as whole
# processes, on a generated 1080p30 10 s clip with audio. Median wall time and peak RSS of RUNS runs
# each, alternating the two tools so background load hits both alike.
#
#   scripts/bench-e2e.sh            # RUNS=3
#   RUNS=5 LIVEFILTER=/path/to/livefilter scripts/bench-e2e.sh
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
WORK=${WORK:-out/bench-e2e}
mkdir -p "$WORK"
if [[ -z "${LIVEFILTER:-}" ]]; then
    for candidate in .build-perf/release/livefilter .build/release/livefilter; do
        if [[ -x $candidate ]]; then LIVEFILTER=$candidate; break; fi
    done
fi
[[ -x "${LIVEFILTER:-}" ]] || { echo "no livefilter binary: build with 'swift build -c release' or set LIVEFILTER" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time is missing: apt-get install time" >&2; exit 1; }
command -v ffmpeg >/dev/null || { echo "ffmpeg is missing: apt-get install ffmpeg" >&2; exit 1; }

CLIP=$WORK/natural-1080p30.mp4
if [[ ! -s $CLIP ]]; then
    echo "making $CLIP (testsrc2 blended with a Mandelbrot zoom, temporal grain, 440 Hz sine)…"
    ffmpeg -hide_banner -loglevel error -y \
        -f lavfi -i "testsrc2=size=1920x1080:rate=30" \
        -f lavfi -i "mandelbrot=size=640x360:rate=30,scale=1920:1080" \
        -f lavfi -i "sine=frequency=440:sample_rate=48000" \
        -filter_complex "[0:v][1:v]blend=all_mode=overlay:all_opacity=0.6,noise=alls=10:allf=t+u,format=yuv420p[v]" \
        -map "[v]" -map 2:a -t 10 -c:v libx264 -preset veryfast -crf 16 -c:a aac -b:a 192k "$CLIP"
fi

ENCODE=(--encoder-preset medium --crf 23 --audio-bitrate 128k)
FFENCODE=(-c:v libx264 -preset medium -crf 23 -pix_fmt yuv420p -c:a aac -b:a 128k)
NAMES=("plain transcode" "blur 6|rot 90|mirror|scale" "blur sigma=30")
CHAINS=("" "blur sigma=6 | rotate 90 | mirror | scale fit=720x1280" "blur sigma=30")
GRAPHS=("" "gblur=sigma=6,transpose=1,hflip,scale=720:1280" "gblur=sigma=30")

# run LABEL CMD… : appends "seconds kilobytes" to $WORK/LABEL.times
run() {
    local label=$1; shift
    /usr/bin/time -f "%e %M" -o "$WORK/$label.one" "$@" >/dev/null 2>"$WORK/$label.err" \
        || { echo "FAILED: $*" >&2; cat "$WORK/$label.err" >&2; exit 1; }
    cat "$WORK/$label.one" >> "$WORK/$label.times"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "livefilter: $LIVEFILTER; $(ffmpeg -version | head -1)"
rm -f "$WORK"/*.times
for ((r = 1; r <= RUNS; r++)); do
    for i in "${!NAMES[@]}"; do
        if [[ -z ${CHAINS[$i]} ]]; then
            run "lf$i" "$LIVEFILTER" run "$CLIP" -o "$WORK/lf$i.mp4" "${ENCODE[@]}" -y -q
            run "ff$i" ffmpeg -hide_banner -loglevel error -y -i "$CLIP" "${FFENCODE[@]}" "$WORK/ff$i.mp4"
        else
            run "lf$i" "$LIVEFILTER" run "$CLIP" -o "$WORK/lf$i.mp4" --chain "${CHAINS[$i]}" "${ENCODE[@]}" -y -q
            run "ff$i" ffmpeg -hide_banner -loglevel error -y -i "$CLIP" -vf "${GRAPHS[$i]}" "${FFENCODE[@]}" "$WORK/ff$i.mp4"
        fi
    done
done

printf "\n%-28s %12s %12s %7s %14s %14s\n" "case (10 s 1080p30 + AAC)" "livefilter s" "ffmpeg s" "ratio" "livefilter MB" "ffmpeg MB"
for i in "${!NAMES[@]}"; do
    lt=$(cut -d' ' -f1 "$WORK/lf$i.times" | median); ft=$(cut -d' ' -f1 "$WORK/ff$i.times" | median)
    lm=$(cut -d' ' -f2 "$WORK/lf$i.times" | median); fm=$(cut -d' ' -f2 "$WORK/ff$i.times" | median)
    printf "%-28s %12.2f %12.2f %6.2fx %14.0f %14.0f\n" "${NAMES[$i]}" "$lt" "$ft" "$(echo "$ft / $lt" | bc -l)" \
        "$(echo "$lm / 1024" | bc -l)" "$(echo "$fm / 1024" | bc -l)"
done
echo "(median of $RUNS runs each; ratio = ffmpeg time / livefilter time, > 1 means livefilter is faster; MB = peak RSS)"

echo -e "\nlivefilter --stats for the standard chain:"
"$LIVEFILTER" run "$CLIP" -o "$WORK/stats.mp4" --chain "${CHAINS[1]}" "${ENCODE[@]}" -y -q --stats 2>&1 | sed 's/^/  /'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

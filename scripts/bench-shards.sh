#!/usr/bin/env bash
# Scale-out benchmark: what splitting a job into shards costs, and what it gains on a cluster.
#
#   scripts/bench-shards.sh                       # DURATION=120 SHARDS="2 4 8" SLURM=1
#   DURATION=60 LIVEFILTER=/path/to/livefilter scripts/bench-shards.sh
#
# Content: DURATION s of 1080p30 H.264 (~10 Mb/s, 2 s GOPs) with AAC stereo, a slow pan across a
# photograph from Debian's mate-backgrounds (made by scripts/bench-live.sh), through the standard
# chain "blur 6 | rotate 90 | mirror | scale fit=720x1280" to MP4 at x264 veryfast.
# 1. The single run: wall and CPU seconds.
# 2. For each N: plan time, every task run one after another as plain processes (their CPU summed),
#    join time; overhead = summed task CPU ÷ single-run CPU; pre-roll = frames decoded or encoded twice.
# 3. With SLURM=1 and Slurm installed: N=4 through `run --engine slurm` on a local one-node cluster
#    (scripts/slurm-local.sh), wall time against the single run's.
# 4. The model: wall(M machines) for a one-hour job, from the measured figures (printed with its formula).
#    MODEL_FROM="N OVERHEAD PLAN_S JOIN_S" SINGLE_WALL=S prints only the model from earlier figures.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DURATION=${DURATION:-120}
SHARDS=${SHARDS:-"2 4 8"}
SLURM=${SLURM:-1}
WORK=${WORK:-/tmp/livefilter-bench-shards}
LIVEFILTER=${LIVEFILTER:-$PWD/.build/release/livefilter}
[[ -x $LIVEFILTER ]] || { echo "no livefilter binary at $LIVEFILTER: build with scripts/test.sh or set LIVEFILTER" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time is missing: apt-get install time" >&2; exit 1; }
mkdir -p "$WORK"
CHAIN="blur 6 | rotate 90 | mirror | scale fit=720x1280"
OPTS=(--chain "$CHAIN" --encoder-preset veryfast)

# The model: a one-hour job on M machines, each running one shard at the single run's speed.
# A cut costs a fixed amount of extra work (pre-roll decode, warm-up and cool-down encode, a process's
# start): measured here as seconds of content per extra shard, c = (overhead(N) - 1) x DURATION / (N - 1)
# at the largest N. Then overhead(M) = 1 + (M - 1) x c / 3600 and
# wall(M) = plan + T1 x overhead(M) / M + join, with T1, plan and join scaled from DURATION to an hour.
# model SINGLE_WALL "N OVERHEAD PLAN_S JOIN_S"
model() {
    echo
    t1=$(echo "$1 * 3600 / $DURATION" | bc -l)
    read -r nmax omax pmax jmax <<< "$2"
    per=$(echo "($omax - 1) * $DURATION / ($nmax - 1)" | bc -l)
    echo "model (stated, not measured): one hour of this content takes T1 = $(printf '%.0f' "$t1") s on one such machine;"
    echo "a cut costs c = $(printf '%.1f' "$per") s of content's work (from N=$nmax); overhead(M) = 1 + (M-1) c / 3600;"
    echo "wall(M) = plan + T1 x overhead(M) / M + join (plan and join scaled to an hour: $(printf '%.0f' "$(echo "$pmax * 3600 / $DURATION" | bc -l)") s and $(printf '%.0f' "$(echo "$jmax * 3600 / $DURATION" | bc -l)") s)"
    echo "| machines | overhead | wall (model) | speed-up |"
    echo "|---|---|---|---|"
    for m in 1 2 4 8 16 32 64; do
        o=$(echo "1 + ($m - 1) * $per / 3600" | bc -l)
        p=$(echo "$pmax * 3600 / $DURATION" | bc -l); j=$(echo "$jmax * 3600 / $DURATION" | bc -l)
        w=$(echo "if ($m == 1) $t1 else $p + $t1 * $o / $m + $j" | bc -l)
        printf "| %d | %.3f× | %.0f s | %.1f× |\n" "$m" "$o" "$w" "$(echo "$t1 / $w" | bc -l)"
    done
}

if [[ -n ${MODEL_FROM:-} ]]; then model "${SINGLE_WALL:?SINGLE_WALL is needed with MODEL_FROM}" "$MODEL_FROM"; exit; fi

CLIP=$WORK/natural-pan-${DURATION}s.mp4
if [[ ! -s $CLIP ]]; then
    source_dir=$(SOURCE_ONLY=1 DURATION="$DURATION" LIVEFILTER="$LIVEFILTER" scripts/bench-live.sh | tail -1)
    ffmpeg -hide_banner -loglevel error -y -i "$source_dir/index.m3u8" -c copy "$CLIP"
fi
frames=$(ffprobe -v error -select_streams v:0 -show_entries stream=nb_frames -of csv=p=0 "$CLIP")

# timed LABEL CMD… : runs CMD, leaves "wall cpu" in $WORK/LABEL.t
timed() {
    local label=$1; shift
    /usr/bin/time -f "%e %U %S" -o "$WORK/$label.raw" "$@" >/dev/null 2>"$WORK/$label.err" \
        || { echo "FAILED: $*" >&2; cat "$WORK/$label.err" >&2; exit 1; }
    awk '{printf "%.2f %.2f\n", $1, $2 + $3}' "$WORK/$label.raw" > "$WORK/$label.t"
}
wall() { cut -d' ' -f1 "$WORK/$1.t"; }
cpu() { cut -d' ' -f2 "$WORK/$1.t"; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "clip: $CLIP ($frames frames, ${DURATION} s 1080p30); chain: $CHAIN; x264 veryfast; MP4"

rm -f "$WORK/single.mp4"
timed single "$LIVEFILTER" run "$CLIP" -o "$WORK/single.mp4" "${OPTS[@]}" -q --keyframes-at-source
echo
echo "single run: wall $(wall single) s, CPU $(cpu single) s"
echo
echo "| N | shards | plan s | tasks CPU s (sum) | overhead | frames twice | join s |"
echo "|---|---|---|---|---|---|---|"
for n in $SHARDS; do
    out=$WORK/split-$n.mp4
    rm -rf "$out" "$out.parts" "$WORK/plan-$n.json"
    timed "plan-$n" "$LIVEFILTER" plan "$CLIP" -o "$out" --shards "$n" --plan "$WORK/plan-$n.json" "${OPTS[@]}"
    tasks=$(python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print(len(p['shards']) + (1 if p['audio'] else 0))" "$WORK/plan-$n.json")
    twice=$(python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print(sum(s['prerollFrames'] for s in p['shards']))" "$WORK/plan-$n.json")
    total=0
    for ((k = 0; k < tasks; k++)); do
        timed "task-$n-$k" env JOB_COMPLETION_INDEX=$k "$LIVEFILTER" run --plan "$WORK/plan-$n.json" -q
        total=$(echo "$total + $(cpu "task-$n-$k")" | bc -l)
    done
    timed "join-$n" "$LIVEFILTER" join "$WORK/plan-$n.json" -q
    overhead=$(echo "$total / $(cpu single)" | bc -l)
    printf "| %d | %d | %.2f | %.1f | %.3f× | %d of %d (%.1f%%) | %.2f |\n" "$n" "$((tasks - 1))" "$(wall "plan-$n")" "$total" \
        "$overhead" "$twice" "$frames" "$(echo "100 * $twice / $frames" | bc -l)" "$(wall "join-$n")"
    last="$n $overhead $(wall "plan-$n") $(wall "join-$n")"
done

if [[ $SLURM == 1 ]] && command -v sbatch >/dev/null && command -v unshare >/dev/null; then
    out=$WORK/slurm-4.mp4
    rm -rf "$out" "$out.parts"
    timed slurm4 unshare --pid --fork --kill-child --mount-proc bash scripts/slurm-local.sh with "$WORK/cluster" \
        "$LIVEFILTER" run "$CLIP" -o "$out" --shards 4 --engine slurm "${OPTS[@]}" -q
    echo
    echo "local Slurm (1 node, $(nproc) CPUs), N=4 via run --engine slurm: wall $(wall slurm4) s (cluster start and stop included)" \
         "against the single run's $(wall single) s: $(echo "$(wall single) / $(wall slurm4)" | bc -l | xargs printf '%.2f')× speed-up on one machine"
fi

model "$(wall single)" "$last"

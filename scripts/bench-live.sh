#!/usr/bin/env bash
# Live benchmark: `livefilter run` against the ffmpeg CLI on a LIVE HLS stream, as whole processes.
# A loopback server replays a generated 1080p30 H.264/AAC clip as a live sliding-window playlist on
# the wall clock (scripts/live-publisher.py); each tool in turn (a fresh server each) pulls it, runs
# blur σ 6 | rotate 90 | mirror | scale to 720x1280 and writes 2 s HLS segments. Per run: CPU
# seconds, peak RSS, repeated/dropped frames, latency from input segment published to output segment
# listed, and whether the tool kept up with real time; and how soon after an input segment (or part)
# is published the tool asks for it (reload delay, part delay).
#
#   scripts/bench-live.sh                      # DURATION=60 STREAMS=1 INPUT=plain
#   DURATION=20 STREAMS=2 LIVEFILTER=/path/to/livefilter scripts/bench-live.sh
#   INPUT=block scripts/bench-live.sh          # the server offers blocking playlist reload
#   INPUT=ll PART=0.5 scripts/bench-live.sh    # LL-HLS: 0.5 s parts, preload hints, blocking reload
#
# DURATION  seconds of live source (default 60, at least 16 so there is a steady state)
# STREAMS   copies of each tool run at once, each on its own stream URL and output folder (capacity)
# TOOLS     which tools to run: "lf ff" (default), "lf" or "ff"
# LF_EXTRA  more arguments for livefilter (e.g. "--log-level debug"; its stderr is in sN/stderr)
# INPUT     what the live server offers: plain (default: a sliding-window playlist), block (and
#           blocking playlist reload, _HLS_msn) or ll (LL-HLS: parts, EXT-X-PRELOAD-HINT, blocking
#           reload with _HLS_part). ffmpeg's hls demuxer uses none of it: it is the plain baseline.
# PART      seconds per part with INPUT=ll (default 0.5)
# WORK      where everything goes (default out/bench-live; the source is cached in WORK/source-Ns)
# SOURCE_ONLY=1  make (or find) the source and print its folder, nothing else (bench-e2e.sh uses it)
# PHOTO     the picture to pan across (default: a 3840x2160 one from Debian's mate-backgrounds,
#           installed if missing; delete WORK/source-Ns to remake the source after changing it)
#
# Everything is written under WORK: run/{lf,ff}/server.log (publish times, requests), watch.log
# (when each output segment appeared), sN/ (the tool's HLS output, time.txt, report/progress, stderr);
# run-block/ and run-ll/ instead of run/ with INPUT=block and INPUT=ll.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-60}
STREAMS=${STREAMS:-1}
TOOLS=${TOOLS:-lf ff}
WORK=${WORK:-out/bench-live}
INPUT=${INPUT:-plain}
PART=${PART:-0.5}
PRELOAD=3   # segments already out when a tool joins (see live-publisher.py: joining a running stream)
SEGMENT=2   # seconds per segment, input and output
[[ $DURATION =~ ^[0-9]+$ && $DURATION -ge 16 ]] || { echo "DURATION must be a whole number of seconds >= 16 (got '$DURATION')" >&2; exit 2; }
[[ $STREAMS =~ ^[0-9]+$ && $STREAMS -ge 1 ]] || { echo "STREAMS must be a positive whole number (got '$STREAMS')" >&2; exit 2; }
[[ $TOOLS == "lf ff" || $TOOLS == lf || $TOOLS == ff ]] || { echo "TOOLS must be 'lf ff', 'lf' or 'ff' (got '$TOOLS')" >&2; exit 2; }
[[ $INPUT == plain || $INPUT == block || $INPUT == ll ]] || { echo "INPUT must be plain, block or ll (got '$INPUT')" >&2; exit 2; }
[[ $INPUT != ll ]] || { [[ $PART =~ ^[0-9]*\.?[0-9]+$ ]] && python3 -c "import sys; sys.exit(not 0 < $PART <= $SEGMENT / 2)"; } \
    || { echo "PART must be seconds per part, above 0 and at most half a segment ($SEGMENT s) (got '$PART')" >&2; exit 2; }
if [[ $TOOLS == *lf* && ${SOURCE_ONLY:-0} != 1 ]]; then   # ffmpeg alone, or the source alone, needs no build
    if [[ -z "${LIVEFILTER:-}" ]]; then
        for candidate in .build-perf/release/livefilter .build/release/livefilter; do
            if [[ -x $candidate ]]; then LIVEFILTER=$candidate; break; fi
        done
    fi
    [[ -x "${LIVEFILTER:-}" ]] || { echo "no livefilter binary: build with 'swift build -c release' or set LIVEFILTER" >&2; exit 1; }
    [[ $("$LIVEFILTER" run --help 2>&1) == *--hls-time* ]] \
        || { echo "$LIVEFILTER has no 'run --hls-time': too old for this benchmark, rebuild it" >&2; exit 1; }
fi
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time is missing: apt-get install time" >&2; exit 1; }
for tool in ffmpeg ffprobe python3 timeout setsid; do
    command -v $tool >/dev/null || { echo "$tool is missing (ffmpeg/ffprobe: apt-get install ffmpeg; timeout/setsid: coreutils/util-linux)" >&2; exit 1; }
done
HELPER=scripts/live-publisher.py
mkdir -p "$WORK"
RUNS=$WORK/run; [[ $INPUT == plain ]] || RUNS=$WORK/run-$INPUT
case $INPUT in
    plain) SERVE_ARGS=();;
    block) SERVE_ARGS=(--block-reload);;
    ll) SERVE_ARGS=(--block-reload --parts "$PART");;
esac

# --- 1. the source: a slow pan over a photograph, cached as VOD HLS (media is never committed) ----
SRC=$WORK/source-${DURATION}s
if ! grep -q '#EXT-X-ENDLIST' "$SRC/index.m3u8" 2>/dev/null; then
    if [[ -z "${PHOTO:-}" ]]; then
        if [[ ! -d /usr/share/backgrounds/mate ]]; then
            [[ $(id -u) -eq 0 ]] || { echo "the source photo comes from Debian's mate-backgrounds: sudo apt-get install -y mate-backgrounds (or set PHOTO)" >&2; exit 1; }
            echo "installing mate-backgrounds (the photograph the live source pans across)…"
            DEBIAN_FRONTEND=noninteractive apt-get install -y mate-backgrounds >/dev/null \
                || { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y mate-backgrounds >/dev/null; } \
                || { echo "could not install mate-backgrounds; set PHOTO=/path/to/a/large.jpg" >&2; exit 1; }
        fi
        # A 3840x2160 picture if there is one, else the one with the most pixels: the 1080p window
        # must have room to move, and a downscaled picture would look soft.
        PHOTO=$(find /usr/share/backgrounds/mate -type f \( -iname '*.jpg' -o -iname '*.png' \) -print0 \
            | while IFS= read -r -d '' f; do
                  wh=$(ffprobe -v error -select_streams v:0 -show_entries stream=width,height -of csv=p=0:s=x "$f" || true)
                  [[ $wh =~ ^([0-9]+)x([0-9]+)$ ]] || continue
                  px=$((BASH_REMATCH[1] * BASH_REMATCH[2])); [[ $wh == 3840x2160 ]] && px=999999999999
                  echo "$px $f"
              done | sort -n | tail -1 | cut -d' ' -f2-)
        [[ -n $PHOTO ]] || { echo "no JPEG/PNG under /usr/share/backgrounds/mate; set PHOTO=/path/to/a/large.jpg" >&2; exit 1; }
    fi
    [[ -r $PHOTO ]] || { echo "PHOTO '$PHOTO' is not readable" >&2; exit 1; }
    WH=$(ffprobe -v error -select_streams v:0 -show_entries stream=width,height -of csv=p=0:s=x "$PHOTO" || true)
    [[ $WH =~ ^([0-9]+)x([0-9]+)$ && ${BASH_REMATCH[1]} -ge 1920 && ${BASH_REMATCH[2]} -ge 1080 ]] \
        || { echo "PHOTO '$PHOTO' is '$WH': need a picture of at least 1920x1080" >&2; exit 1; }
    echo "making $SRC: ${DURATION} s 1080p30 H.264 ~10 Mb/s + AAC stereo, panning across $PHOTO (takes about real time)…" >&2
    rm -rf "$SRC.tmp"; mkdir -p "$SRC.tmp"
    # The photo is decoded and converted to BT.709 4:4:4 once, then looped in memory (decoding a 4K
    # JPEG per frame is 10x slower). 4:4:4 lets the crop move by single pixels, so the pan is smooth:
    # x sweeps the whole width, y eases down and back. Temporal grain keeps the encoder honest
    # (a still-life pan is otherwise unrealistically cheap). Fixed 60-frame closed GOPs without
    # scene cuts, so every 2 s segment starts with an IDR, as a live encoder's would.
    ffmpeg -hide_banner -loglevel error -nostdin -y -framerate 30 -i "$PHOTO" \
        -f lavfi -i "aevalsrc=exprs=0.08*sin(2*PI*220*t)+0.01*(2*random(0)-1)|0.08*sin(2*PI*330*t)+0.01*(2*random(1)-1):s=48000:c=stereo" \
        -filter_complex "[0:v]scale=out_color_matrix=bt709:out_range=tv,format=yuv444p,loop=loop=-1:size=1,setpts=N/30/TB,crop=1920:1080:x='(iw-ow)*t/$DURATION':y='(ih-oh)*(0.5-0.4*cos(2*PI*t/$DURATION))',noise=alls=4:allf=t,format=yuv420p[v]" \
        -map "[v]" -map 1:a -t "$DURATION" -r 30 \
        -c:v libx264 -preset veryfast -b:v 10M -maxrate 10M -bufsize 20M -g 60 -keyint_min 60 -sc_threshold 0 -flags +cgop \
        -colorspace bt709 -color_primaries bt709 -color_trc bt709 -c:a aac -b:a 128k \
        -f hls -hls_time $SEGMENT -hls_playlist_type vod -hls_segment_filename "$SRC.tmp/seg%05d.ts" "$SRC.tmp/index.m3u8" \
        || { echo "making the source failed (ffmpeg above)" >&2; exit 1; }
    echo "$PHOTO" > "$SRC.tmp/photo.txt"
    rm -rf "$SRC"; mv "$SRC.tmp" "$SRC"   # only a finished source is ever reused
fi
if [[ ${SOURCE_ONLY:-0} == 1 ]]; then echo "$SRC"; exit 0; fi
echo "source: $SRC ($(grep -c '^seg' "$SRC/index.m3u8") segments of $SEGMENT s, from $(cat "$SRC/photo.txt" 2>/dev/null || echo '?'))"

# --- processes we start, and their removal on any exit --------------------------------------------
SERVER_PID="" WATCH_PID="" TOOL_PIDS=()
stop_all() {
    # Each tool runs in its own process group (setsid): kill the group, so timeout's child goes too.
    for pid in "${TOOL_PIDS[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    [[ -n $WATCH_PID ]] && kill "$WATCH_PID" 2>/dev/null || true
    [[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2>/dev/null || true
    TOOL_PIDS=() WATCH_PID="" SERVER_PID=""
}
trap stop_all EXIT
trap 'echo "interrupted: stopping the tools and the server" >&2; exit 130' INT TERM

URL_OF() { echo "http://127.0.0.1:$PORT/s$1/live.m3u8"; }
# event playlist: every segment stays listed, like ffmpeg's -hls_list_size 0 (livefilter's default
# for a live input is a 6-segment sliding window that deletes old segments).
LF_ARGS=(--chain "blur sigma=6 | rotate 90 | mirror | scale fit=720x1280" --encoder-preset veryfast --crf 23
         --audio-bitrate 128k --hls-time $SEGMENT --hls-playlist event -y -q ${LF_EXTRA:-})
FF_VF="gblur=sigma=6,transpose=1,hflip,scale=720:1280"
# ffmpeg's libx264 keeps its default 250-frame GOP with scene cuts, and its HLS muxer cuts only on
# keyframes, so without forced keyframes its "2 s" segments would be ~8 s; livefilter forces an IDR
# at every multiple of --hls-time. Force the same cadence so segment k means the same media for both.
FF_ENC=(-c:v libx264 -preset veryfast -crf 23 -force_key_frames "expr:gte(t,n_forced*$SEGMENT)" -c:a aac -b:a 128k)
LIMIT=$((DURATION + 90))   # a tool still running this long after starting is stuck: SIGINT, then KILL

# shell_words ARG… : the command line as one would type it (arguments with spaces etc. in "")
shell_words() {
    local a out=()
    for a; do if [[ $a =~ [^A-Za-z0-9_./:=,+-] ]]; then out+=("\"$a\""); else out+=("$a"); fi; done
    echo "${out[*]}"
}

# run_tool lf|ff : fresh server, STREAMS copies of the tool at once, watcher on their playlists
run_tool() {
    local tool=$1 dir=$RUNS/$1 i s
    rm -rf "$dir"; mkdir -p "$dir"
    python3 $HELPER serve --media "$SRC" --log "$dir/server.log" --port-file "$dir/port" \
        --streams "$STREAMS" --preload $PRELOAD --window 6 "${SERVE_ARGS[@]}" 2>"$dir/server.err" &
    SERVER_PID=$!
    # With parts the first start ffprobes every segment (a few seconds; cached in SRC/packets.json).
    for ((i = 0; i < 1200; i++)); do [[ -s $dir/port ]] || ! kill -0 "$SERVER_PID" 2>/dev/null && break; sleep 0.1; done
    [[ -s $dir/port ]] && kill -0 "$SERVER_PID" 2>/dev/null \
        || { echo "the live server did not start:" >&2; cat "$dir/server.err" >&2; exit 1; }
    PORT=$(cat "$dir/port")
    local playlists=()
    for ((i = 1; i <= STREAMS; i++)); do mkdir -p "$dir/s$i"; playlists+=("$dir/s$i/index.m3u8"); done
    python3 $HELPER watch --log "$dir/watch.log" --interval 0.05 "${playlists[@]}" 2>"$dir/watch.err" &
    WATCH_PID=$!
    for ((i = 1; i <= STREAMS; i++)); do
        s=$dir/s$i
        if [[ $tool == lf ]]; then
            CMD=("$LIVEFILTER" run "$(URL_OF $i)" -o "$s/index.m3u8" "${LF_ARGS[@]}" --report "$s/report.json")
        else
            CMD=(ffmpeg -hide_banner -loglevel error -nostdin -y -i "$(URL_OF $i)" -vf "$FF_VF" "${FF_ENC[@]}"
                 -progress "$s/progress.txt" -f hls -hls_time $SEGMENT -hls_list_size 0 "$s/index.m3u8")
        fi
        [[ $i -eq 1 ]] && echo "  $tool ×$STREAMS: $(shell_words "${CMD[@]}" | sed "s|/s1/|/sN/|g; s|:$PORT/|:PORT/|")"
        date +%s.%N > "$s/start"
        # timeout --foreground: stay in setsid's process group (plain timeout makes its own), so
        # stop_all's group kill reaches the tool.
        setsid /usr/bin/time -f "%e %U %S %M" -o "$s/time.txt" timeout --foreground -s INT -k 10 $LIMIT "${CMD[@]}" \
            </dev/null >"$s/stdout" 2>"$s/stderr" &
        TOOL_PIDS+=($!)
    done
    for ((i = 1; i <= STREAMS; i++)); do
        local rc=0
        wait "${TOOL_PIDS[$((i - 1))]}" || rc=$?
        echo $rc > "$dir/s$i/rc"
        if [[ $rc -ne 0 ]]; then
            echo "  $tool #$i exited $rc$([[ $rc -eq 124 ]] && echo " (killed after $LIMIT s)"); its stderr ends:" >&2
            tail -5 "$dir/s$i/stderr" | sed 's/^/    /' >&2
        fi
    done
    TOOL_PIDS=()
    sleep 0.2   # one more watcher poll after the last exit
    kill "$WATCH_PID" 2>/dev/null || true; wait "$WATCH_PID" || true
    kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true
    WATCH_PID="" SERVER_PID=""
}

summarize() {
    python3 $HELPER summarize --tool "$1" --media "$SRC" --run-dir "$RUNS/$1" --streams "$STREAMS" \
        --server-log "$RUNS/$1/server.log" --watch-log "$RUNS/$1/watch.log" \
        --lag-limit $(((PRELOAD + 2) * SEGMENT)) --json "$RUNS/$1/summary.json"
}

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "livefilter: ${LIVEFILTER:-not used}; $(ffmpeg -version | head -1)"
echo "live source: ${DURATION} s, $SEGMENT s segments, window 6, joined with $PRELOAD segments out; $STREAMS stream(s) per tool"
case $INPUT in
    plain) echo "input: plain (sliding-window playlist, no blocking reload)";;
    block) echo "input: block (EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES, _HLS_msn held until the segment is out)";;
    ll) echo "input: ll (LL-HLS: $PART s parts, EXT-X-PRELOAD-HINT, blocking reload with _HLS_msn/_HLS_part)";;
esac
echo "commands (URL http://127.0.0.1:PORT/sN/live.m3u8, one per stream):"
for tool in $TOOLS; do run_tool $tool; done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

printf "\n%-14s %3s %7s %7s %13s %6s %6s %11s %11s %11s %6s  %-5s %s\n" \
    "tool #stream" "rc" "CPU s" "RSS MB" "rep / drop" "p50 s" "p95 s" "reload s" "part s" "out/in s" "lag s" "kept" "notes"
for tool in $TOOLS; do summarize $tool; done
cat <<EOF
CPU s = user + sys; RSS = peak. rep/drop: livefilter frames_repeated/frames_dropped from --report (notes: late
ticks, latency skips); ffmpeg dup_frames/drop_frames from -progress (notes: speed). p50/p95 = latency of output
segment k = time it first appears in the tool's playlist (polled every 50 ms) - time input segment s0+k was
published, s0 = first input segment the tool fetched; steady state = without the first 5 and the last one.
reload s = p50/p95 of the reload delay: input segment published -> the response to the tool's first request for
it starts (with parts: its first part fetched, from that part's publish); part s = the same for every part fetched
(INPUT=ll). A held request (blocked reload, hinted part) starts when the server answers it. Steady state: input
segments from s0+5 on, published after the tool's first request. Per segment: latencies (with TOOLS="lf ff").
out/in = seconds of output segments / seconds of input from s0 on. lag = source's ENDLIST to the tool's ENDLIST.
kept = yes: exit 0, out >= 97% of in, lag <= $(((PRELOAD + 2) * SEGMENT)) s (the $PRELOAD-segment join backlog + 2 segments) and
at most 1% of the frames repeated or dropped; lossy: on time only by repeating/dropping more; NO: fell behind or failed.
EOF
if [[ $TOOLS == "lf ff" ]]; then python3 $HELPER latencies "$RUNS/lf/summary.json" "$RUNS/ff/summary.json"; fi
if [[ $INPUT == ll && " $TOOLS " == *" lf "* ]]; then
    # Input part published -> its pictures decoded (each picture from the moment it and every picture
    # shown before it were published), from livefilter's report; steady state (4 s after its first picture).
    echo "livefilter, input part published -> its pictures decoded (s; within a part = before the next part came out):"
    for ((i = 1; i <= STREAMS; i++)); do
        printf "  #%d %s\n" $i "$(python3 $HELPER decode-latency --media "$SRC" --server-log "$RUNS/lf/server.log" \
            --report "$RUNS/lf/s$i/report.json" || echo '(not measured)')"
    done
fi

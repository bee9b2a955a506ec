#!/usr/bin/env bash
# Frame identity: proves that a change to livefilter leaves every output frame (and the audio, the
# frame timing and the HLS segment schedule) exactly as it was. Record a fixed list of runs with a
# known-good binary, record again with the changed one, compare.
#
#   scripts/frame-identity.sh record LIVEFILTER_BINARY OUTDIR   # runs every case, writes OUTDIR/CASE.framemd5
#   scripts/frame-identity.sh compare DIR_A DIR_B               # one line per case, exit 1 if any differ
#   scripts/frame-identity.sh list                              # the cases and their arguments
#
# Typical use (the baseline built from an older commit in a detached worktree):
#   git worktree add /tmp/lf-baseline <commit>   # build it there: swift build -c release …
#   scripts/frame-identity.sh record /tmp/lf-baseline/.build/release/livefilter /tmp/frame-baseline
#   scripts/frame-identity.sh record .build/release/livefilter /tmp/frame-new
#   scripts/frame-identity.sh compare /tmp/frame-baseline /tmp/frame-new
#
# Each CASE.framemd5 holds: the arguments (paths made relative), the exit code, the names of the files
# left in the output folder (hidden ones included), the video stream's parameters (codec, profile,
# size, pixel format, colour tags, rates, rotation side data), the decoded video frames as ffmpeg's
# framemd5 (timestamps, durations, sizes, MD5 of each frame; read with -noautorotate, so the stored
# pixels are hashed), and the decoded audio the same way (pcm_f32le, so nothing is rounded away).
# HLS: every media playlist's segment names and EXTINF durations, and its frames read through the
# playlist; a master playlist's variant lines (without the measured BANDWIDTH figures) and each of
# its media playlists. A PNG sequence: the file names and the frames decoded in order.
# The hls-in-* cases read HLS inputs: VOD playlists on disk that `record` makes from the samples with
# the ffmpeg CLI by stream copy (MPEG-TS, fMP4, a single file with byte ranges, AES-128, a
# discontinuity), so a reader change is checked against what the same media gives as a file.
# Lines that change for reasons that have nothing to do with the output (ffmpeg's version banner,
# the framemd5 format/version/hash lines, the column header) are left out.
#
# Determinism: livefilter opens libx264 with thread_count 0 (auto: 1.5 frame threads per CPU). With
# VBV rate control (maxrate/bufsize — the CBR presets such as share-small, the HLS ladder's
# renditions with their maxrate of 1.2x the rung's rate, any --maxrate) frame-threaded x264 is NOT deterministic: its rate control uses the sizes of frames in
# flight, which depend on timing, so two runs give different frames (the ffmpeg CLI does the same:
# `-b:v 725k -maxrate 725k -bufsize 725k` gives a new file every run, `-threads 1` does not). CRF and
# plain ABR are deterministic with threads. x264 counts CPUs with sched_getaffinity, so every
# livefilter run here is pinned to one CPU (taskset): x264 then runs one thread and every case is
# repeatable, and x264's output no longer depends on the machine's core count. The outputs are those
# of a one-thread x264, not byte-for-byte what an unpinned run writes; both sides of a comparison are
# recorded the same way, which is what matters.
#
# Options (environment):
#   FRAME_IDENTITY_ONLY=REGEX   record only the cases whose name matches (bash =~)
#   FRAME_IDENTITY_KEEP=1       keep the outputs (OUTDIR/work/CASE/out) instead of deleting them
#   FRAME_IDENTITY_SAMPLES=DIR  the sample clips (default: samples/ beside this script)
#   FRAME_IDENTITY_CPU=N|all    the CPU livefilter is pinned to (default: the first one this process
#                               may use); `all` runs unpinned (VBV cases then differ from run to run)
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
samples="${FRAME_IDENTITY_SAMPLES:-$root/samples}"
filters="$root/filters"
standard_chain="blur sigma=6 | rotate 90 | mirror | scale fit=720x1280"
common_args=(-y -q --encoder-preset veryfast)

usage() {
    sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# ---------------------------------------------------------------------------------------------------
# The cases. run_case NAME SAMPLE OUTPUT [livefilter run options…]; OUTPUT is relative to the case's own
# output folder (for HLS and PNG it names a file in a subfolder made beforehand).
# ---------------------------------------------------------------------------------------------------
all_cases() {
    local sample base
    for sample in landscape.mp4 portrait-rotated.mp4 no-audio.mp4 odd-size.mp4 vfr.mkv transport.ts; do
        base="${sample%.*}"
        run_case "$base-empty" "$sample" out.mp4
        run_case "$base-standard" "$sample" out.mp4 --chain "$standard_chain"
        run_case "$base-share720p" "$sample" out.mp4 --chain-file filters/share-720p.chain
    done
    run_case landscape-mirror-rotate     landscape.mp4 out.mp4 --chain "mirror | rotate 90"
    run_case landscape-fps24             landscape.mp4 out.mp4 --chain "$standard_chain" --fps 24
    run_case landscape-fps30000-1001     landscape.mp4 out.mp4 --chain "$standard_chain" --fps 30000/1001
    run_case landscape-hls-ts            landscape.mp4 hls/index.m3u8 --chain "$standard_chain" --hls-time 2
    run_case landscape-hls-fmp4          landscape.mp4 hls/index.m3u8 --chain "$standard_chain" --hls-time 2 --hls-segment-type fmp4
    run_case landscape-hls-ladder        landscape.mp4 hls/master.m3u8 --chain "blur sigma=6" \
                                     --rendition 640x360@800k --rendition 320x180@300k
    run_case portrait-rotated-keep       portrait-rotated.mp4 out.mp4 --orientation keep
    run_case landscape-png-crop          landscape.mp4 frames/%04d.png --chain "crop 320x180+0+0"
    run_case landscape-preset-share-small landscape.mp4 out.mp4 --preset share-small
    run_case landscape-preset-camera-back landscape.mp4 out.mp4 --preset camera-back
    run_case landscape-mkv               landscape.mp4 out.mkv --chain "$standard_chain"
    run_case landscape-ts                landscape.mp4 out.ts --chain "$standard_chain"
    run_case landscape-no-audio          landscape.mp4 out.mp4 --chain "$standard_chain" --no-audio
    run_case landscape-audio-96k         landscape.mp4 out.mp4 --chain "$standard_chain" --audio-bitrate 96k
    # HLS inputs (VOD, local playlists; made by make_hls_inputs from the samples with stream copy,
    # so both recordings read the same bytes): the HLS reader must hand the demuxer what a file gives.
    run_case hls-in-ts                   hls:ts/index.m3u8 out.mp4 --chain "$standard_chain"
    run_case hls-in-fmp4                 hls:fmp4/index.m3u8 out.mp4 --chain "$standard_chain"
    run_case hls-in-byterange            hls:single/index.m3u8 out.mp4 --chain "$standard_chain"
    run_case hls-in-aes128               hls:aes/index.m3u8 out.mp4 --chain "$standard_chain"
    run_case hls-in-discontinuity        hls:disc/index.m3u8 out.mp4 --chain "$standard_chain"
    run_case hls-in-ts-to-hls            hls:ts/index.m3u8 hls/index.m3u8 --chain "$standard_chain" --hls-time 2
    run_case hls-in-transport            hls:transport/index.m3u8 out.mp4
}

# HLS inputs for the hls-in-* cases, from the samples by stream copy (no encoder: the same bytes on
# every machine with this ffmpeg): MPEG-TS, fMP4, a single file with byte ranges, AES-128 with a fixed
# key and IV, and a discontinuity (the same segments twice, the second run's clock from zero again).
make_hls_inputs() {
    local dir="$1" src="$samples/landscape.mp4"
    mkdir -p "$dir"/{ts,fmp4,single,aes,disc,transport}
    local hls=(ffmpeg -nostdin -v error -y -i "$src" -map 0 -c copy -f hls -hls_time 1 -hls_playlist_type vod)
    "${hls[@]}" -hls_segment_filename "$dir/ts/seg%03d.ts" "$dir/ts/index.m3u8" || return 1
    "${hls[@]}" -hls_segment_type fmp4 -hls_fmp4_init_filename init.mp4 -hls_segment_filename "$dir/fmp4/seg%03d.m4s" \
        "$dir/fmp4/index.m3u8" || return 1
    "${hls[@]}" -hls_flags single_file -hls_segment_filename "$dir/single/all.ts" "$dir/single/index.m3u8" || return 1
    printf '\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f' >"$dir/aes/key.bin"
    printf 'key.bin\n%s\n0f0e0d0c0b0a09080706050403020100\n' "$dir/aes/key.bin" >"$dir/aes/keyinfo"
    "${hls[@]}" -hls_key_info_file "$dir/aes/keyinfo" -hls_segment_filename "$dir/aes/seg%03d.ts" "$dir/aes/index.m3u8" || return 1
    rm -f "$dir/aes/keyinfo"
    cp "$dir"/ts/seg*.ts "$dir/disc/"
    {
        sed '/#EXT-X-ENDLIST/d' "$dir/ts/index.m3u8"
        echo "#EXT-X-DISCONTINUITY"
        grep -v -E '^#EXTM3U|^#EXT-X-(VERSION|TARGETDURATION|MEDIA-SEQUENCE|PLAYLIST-TYPE)' "$dir/ts/index.m3u8"
    } >"$dir/disc/index.m3u8"
    ffmpeg -nostdin -v error -y -i "$samples/transport.ts" -map 0 -c copy -f hls -hls_time 1 -hls_playlist_type vod \
        -hls_segment_filename "$dir/transport/seg%03d.ts" "$dir/transport/index.m3u8" || return 1
}

# Quoted arguments with the repository's paths made relative (so two checkouts give the same line).
shown_args() {
    local a out=()
    for a in "$@"; do
        a="${a//$root\//}"
        if [[ "$a" =~ ^[A-Za-z0-9_./=%@:+,-]+$ ]]; then out+=("$a"); else out+=("'${a//\'/\'\\\'\'}'"); fi
    done
    echo "${out[*]}"
}

# framemd5 of one stream (v or a) of INPUT, header lines that vary with the ffmpeg build removed.
stream_md5() {
    local kind="$1" input="$2"; shift 2
    local codec=()
    [[ "$kind" == a ]] && codec=(-c:a pcm_f32le)
    nice -n 10 ffmpeg -nostdin -hide_banner -v error "$@" -noautorotate -i "$input" -map "0:$kind:0" \
        -fps_mode passthrough "${codec[@]}" -f framemd5 - 2>"$work/ffmpeg.err" \
        | grep -v -E '^#(format|version|hash|software|stream#)'
    local rc=${PIPESTATUS[0]}
    if [[ $rc -ne 0 ]]; then
        echo "ffmpeg failed ($rc): $(head -c 300 "$work/ffmpeg.err" | tr '\n' ' ')"
    elif [[ -s "$work/ffmpeg.err" ]]; then
        # Decoder warnings are part of what the output is; keep them, minus addresses and paths.
        sed -e 's/0x[0-9a-f]\{6,\}/0x…/g' -e "s#$work/##g" "$work/ffmpeg.err" | sed 's/^/ffmpeg: /'
    fi
}

has_stream() {  # has_stream v|a INPUT [input options…]
    local kind="$1" input="$2"; shift 2
    [[ -n "$(ffprobe -v error "$@" -select_streams "$kind:0" -show_entries stream=index -of csv=p=0 "$input" 2>/dev/null)" ]]
}

describe_media() {  # describe_media INPUT [input options…]: stream parameters, video and audio frames
    local input="$1"; shift
    echo "== video stream"
    ffprobe -v error "$@" -select_streams v:0 \
        -show_entries stream=codec_name,profile,level,width,height,pix_fmt,color_range,color_space,color_transfer,color_primaries,r_frame_rate,avg_frame_rate,sample_aspect_ratio:stream_side_data=rotation \
        -of compact "$input" 2>&1
    echo "== audio stream"
    if has_stream a "$input" "$@"; then
        ffprobe -v error "$@" -select_streams a:0 -show_entries stream=codec_name,profile,sample_rate,channels,channel_layout \
            -of compact "$input" 2>&1
    else
        echo "none"
    fi
    echo "== video frames"
    if has_stream v "$input" "$@"; then stream_md5 v "$input" "$@"; else echo "none"; fi
    echo "== audio frames"
    if has_stream a "$input" "$@"; then stream_md5 a "$input" "$@"; else echo "none"; fi
}

describe_media_playlist() {  # the segment schedule, then the frames read through the playlist
    local playlist="$1"
    echo "== playlist $(basename "$playlist")"
    grep -v -E '^#EXT-X-PROGRAM-DATE-TIME' "$playlist"
    describe_media "$playlist" -allowed_extensions ALL
}

describe() {  # describe OUTPUT
    local out="$1"
    if [[ "$out" == *%0*d.png ]]; then
        local dir; dir="$(dirname "$out")"
        echo "== png frames: $(find "$dir" -maxdepth 1 -name '*.png' | wc -l) files"
        if compgen -G "$dir/*.png" >/dev/null; then
            echo "== video frames"
            stream_md5 v "$out" -f image2
        fi
    elif [[ "$out" == *.m3u8 ]]; then
        [[ -f "$out" ]] || { echo "no playlist"; return; }
        if grep -q '^#EXT-X-STREAM-INF' "$out"; then
            echo "== master $(basename "$out")"
            sed -E -e 's/(AVERAGE-)?BANDWIDTH=[0-9]+,?//g' "$out"
            local uri
            while IFS= read -r uri; do
                [[ -z "$uri" || "$uri" == \#* ]] && continue
                describe_media_playlist "$(dirname "$out")/$uri"
            done < <(tr -d '\r' < "$out")
        else
            describe_media_playlist "$out"
        fi
    else
        [[ -f "$out" ]] || { echo "no output file"; return; }
        describe_media "$out"
    fi
}

run_case() {
    local name="$1" sample="$2" output="$3"; shift 3
    local args=("$@")
    # Chain files are given relative to the repository; hand livefilter the absolute path.
    local i
    for i in "${!args[@]}"; do
        [[ "${args[$i]}" == filters/* ]] && args[$i]="$root/${args[$i]}"
    done
    # hls:PATH is an input made by make_hls_inputs, shown as HLSIN/PATH.
    local input="$samples/$sample" shown="samples/$sample"
    if [[ "$sample" == hls:* ]]; then input="$hls_inputs/${sample#hls:}" shown="HLSIN/${sample#hls:}"; fi
    if [[ "$mode" == list ]]; then
        printf '%-30s run %s -o OUT/%s %s\n' "$name" "$shown" "$output" "$(shown_args "${common_args[@]}" "${args[@]}")"
        return
    fi
    if [[ -n "${FRAME_IDENTITY_ONLY:-}" && ! "$name" =~ $FRAME_IDENTITY_ONLY ]]; then return; fi
    local dir="$work/$name/out"
    rm -rf "$work/$name"
    mkdir -p "$(dirname "$dir/$output")"
    local started=$SECONDS
    nice -n 10 "${pin[@]}" "$binary" run "$input" -o "$dir/$output" "${common_args[@]}" "${args[@]}" \
        >"$outdir/logs/$name.stdout" 2>"$outdir/logs/$name.stderr" </dev/null
    local rc=$?
    {
        echo "case: $name"
        echo "args: run $shown -o OUT/$output $(shown_args "${common_args[@]}" "${args[@]}")"
        echo "exit: $rc"
        echo "== files left in the output folder"
        (cd "$dir" && find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort)
        describe "$dir/$output"
    } >"$outdir/$name.framemd5"
    printf '%-30s exit %-3s %3ss  %s video frames\n' "$name" "$rc" $((SECONDS - started)) \
        "$(awk '/^== /{v = ($0 == "== video frames")} v && /^0, /{n++} END{print n+0}' "$outdir/$name.framemd5")"
    [[ "${FRAME_IDENTITY_KEEP:-0}" == 1 ]] || rm -rf "$work/$name"
    return 0
}

record() {
    binary="$1" outdir="$2"
    [[ -x "$binary" ]] || { echo "frame-identity: $binary is not an executable" >&2; exit 2; }
    command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null || { echo "frame-identity: ffmpeg/ffprobe not on PATH" >&2; exit 2; }
    binary="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")"
    mkdir -p "$outdir/logs" || exit 2
    outdir="$(cd "$outdir" && pwd)"
    if [[ "${FRAME_IDENTITY_KEEP:-0}" == 1 ]]; then
        work="$outdir/work"; mkdir -p "$work"
    else
        work="$(mktemp -d /tmp/frame-identity.XXXXXX)"
        trap 'rm -rf "$work"' EXIT
    fi
    pin=()
    local cpu="${FRAME_IDENTITY_CPU:-}"
    if [[ -z "$cpu" ]]; then
        cpu="$(awk '/^Cpus_allowed_list:/ { split($2, a, /[,-]/); print a[1] }' /proc/self/status)"
    fi
    if [[ "$cpu" != all ]]; then
        command -v taskset >/dev/null || { echo "frame-identity: taskset (util-linux) is needed to pin x264 to one thread" >&2; exit 2; }
        pin=(taskset -c "$cpu")
    fi
    {
        echo "binary: $binary"
        echo "pinned: ${pin[*]:-no (FRAME_IDENTITY_CPU=all)}"
        echo "recorded: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(nproc) cores"
        echo "commit: $(git -C "$(dirname "$binary")" rev-parse HEAD 2>/dev/null || echo unknown)"
        echo "ffmpeg: $(ffmpeg -hide_banner -version | head -1)"
    } >"$outdir/logs/RECORDING"
    hls_inputs="$work/hls-inputs"
    make_hls_inputs "$hls_inputs" || { echo "frame-identity: could not make the HLS inputs with ffmpeg" >&2; exit 2; }
    all_cases
}

compare() {
    local a="$1" b="$2" name file different=0 count=0 first
    [[ -d "$a" && -d "$b" ]] || { echo "frame-identity: compare needs two recording folders" >&2; exit 2; }
    local names
    names="$( (cd "$a" && ls -- *.framemd5 2>/dev/null; cd "$b" && ls -- *.framemd5 2>/dev/null) | LC_ALL=C sort -u)"
    [[ -n "$names" ]] || { echo "frame-identity: no *.framemd5 in $a or $b" >&2; exit 2; }
    while IFS= read -r file; do
        name="${file%.framemd5}"
        count=$((count + 1))
        if [[ ! -f "$a/$file" || ! -f "$b/$file" ]]; then
            printf '%-30s DIFFERENT (only in %s)\n' "$name" "$([[ -f "$a/$file" ]] && echo "$a" || echo "$b")"
            different=$((different + 1))
        elif cmp -s "$a/$file" "$b/$file"; then
            printf '%-30s same\n' "$name"
        else
            first="$(diff "$a/$file" "$b/$file" | grep -m1 -E '^[0-9]' )"
            printf '%-30s DIFFERENT (first difference: line %s; diff %s %s)\n' "$name" "${first%%[acd]*}" "$a/$file" "$b/$file"
            different=$((different + 1))
        fi
    done <<<"$names"
    echo "frame-identity: $((count - different)) of $count cases the same"
    [[ $different -eq 0 ]]
}

mode="${1:-}"
case "$mode" in
    record) [[ $# -eq 3 ]] || usage; record "$2" "$3" ;;
    compare) [[ $# -eq 3 ]] || usage; compare "$2" "$3" ;;
    list) hls_inputs=HLSIN; all_cases ;;
    *) usage ;;
esac

#!/usr/bin/env bash
# Regenerates the media in samples/ with the ffmpeg CLI (Debian 12: FFmpeg 5.1, libx264).
# Every clip is synthetic (lavfi sources), so the script needs no input files and the results
# are small. See samples/README.md for what each clip is for.
#
# Usage: samples/make-samples.sh [OUTPUT_DIR]     (default: the directory holding this script)
#
# The output is deterministic in content but not byte-for-byte identical across FFmpeg/x264
# builds; tests must therefore compare against ffprobe of the committed files, not hard-coded hashes.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here}"
mkdir -p "$out"

if ! command -v ffmpeg >/dev/null || ! command -v ffprobe >/dev/null; then
    echo "make-samples: ffmpeg/ffprobe not found; run scripts/install-deps.sh first" >&2
    exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

ff() { ffmpeg -hide_banner -nostdin -loglevel error -y "$@"; }

# The orientation marker: a solid white 96x96 box in the top-left corner of the *stored* frame.
# No other corner of these sources is near-white (testsrc2's corners are red and cyan bars), and
# white survives any RGB<->YUV matrix mix-up, so the mean colour of a corner region tells which
# corner the marker ended up in after rotation or mirroring.
marker="drawbox=x=0:y=0:w=96:h=96:color=white@1.0:t=fill"

# Shared x264 settings: High profile, yuv420p, BT.709 tags, medium quality (keeps clips < 1 MB).
x264=(-c:v libx264 -preset medium -profile:v high -pix_fmt yuv420p -crf 27
      -color_primaries bt709 -color_trc bt709 -colorspace bt709 -color_range tv)

# Stereo test audio: 440 Hz left, 660 Hz right, so a channel swap would be audible/measurable.
stereo_tone() { # $1 = duration in seconds
    echo "aevalsrc=0.25*sin(2*PI*440*t)|0.25*sin(2*PI*660*t):s=48000:c=stereo:d=$1"
}

echo "landscape.mp4"
# 640x360 (16:9), 30 fps, 5 s: testsrc2 (moving pattern, colour bars, counter) blended with a
# zooming Mandelbrot set for fine detail; red marker top-left. H.264 High + stereo AAC 48 kHz.
ff -f lavfi -i "testsrc2=s=640x360:r=30" \
   -f lavfi -i "mandelbrot=s=640x360:r=30:start_scale=2.5:end_scale=0.5:end_pts=400" \
   -f lavfi -i "$(stereo_tone 5)" \
   -filter_complex "[0:v][1:v]blend=all_mode=average,$marker,format=yuv420p[v]" \
   -map "[v]" -map 2:a -t 5 "${x264[@]}" -g 60 \
   -c:a aac -b:a 96k -ar 48000 -ac 2 \
   -movflags +faststart "$out/landscape.mp4"

echo "portrait-rotated.mp4"
# A phone-style clip: stored 640x360 landscape, tagged with a 90-degree display matrix, so a
# player shows it 360x640 portrait. Red marker in the top-left corner of the stored frame.
ff -f lavfi -i "testsrc2=s=640x360:r=30" \
   -f lavfi -i "$(stereo_tone 4)" \
   -filter_complex "[0:v]hue=h=60*t,$marker,format=yuv420p[v]" \
   -map "[v]" -map 1:a -t 4 "${x264[@]}" -g 60 \
   -c:a aac -b:a 96k -ar 48000 -ac 2 \
   "$tmp/portrait-unrotated.mp4"
ff -i "$tmp/portrait-unrotated.mp4" -map 0 -c copy -metadata:s:v:0 rotate=90 \
   -movflags +faststart "$out/portrait-rotated.mp4"

echo "no-audio.mp4"
# 480x360 (4:3), 25 fps, 3 s, video only: Conway's life on a 120x90 grid, scaled up 4x with
# nearest-neighbour (hard edges, lots of motion, yet compresses well).
ff -f lavfi -i "life=s=120x90:r=25:seed=7:mold=10:ratio=0.2:life_color=#e0e060:death_color=#203060:mold_color=#602020" \
   -vf "scale=480:360:flags=neighbor,$marker,format=yuv420p" -t 3 "${x264[@]}" -an \
   -movflags +faststart "$out/no-audio.mp4"

echo "vfr.mkv"
# Genuinely variable frame rate: a 30 fps testsrc2, then `select` drops frames in a pattern that
# changes over time, and -fps_mode vfr keeps the surviving frames' original timestamps:
#   0.0-1.5 s every frame (33 ms apart), 1.5-3.0 s every 3rd (100 ms), 3.0-4.0 s every 2nd (67 ms)
#   except multiples of 7 (so some gaps are 133 ms).
# Matroska (1 ms time base), H.264 + stereo AAC 48 kHz.
ff -f lavfi -i "testsrc2=s=640x360:r=30" \
   -f lavfi -i "$(stereo_tone 4)" \
   -filter_complex "[0:v]trim=duration=4,select='lt(n\,45)+between(n\,45\,89)*not(mod(n\,3))+gte(n\,90)*not(mod(n\,2))*gt(mod(n\,7)\,0)',$marker,format=yuv420p[v]" \
   -map "[v]" -map 1:a -fps_mode vfr "${x264[@]}" \
   -c:a aac -b:a 96k -ar 48000 -ac 2 -t 4 \
   "$out/vfr.mkv"

echo "odd-size.mp4"
# 641x361 (odd width and height): libx264 refuses odd sizes with 4:2:0, so this one is MPEG-4
# Part 2 (Simple Profile), which also exercises a second decoder. 30 fps, 2 s. Mono AAC 44.1 kHz.
ff -f lavfi -i "testsrc2=s=640x360:r=30" \
   -f lavfi -i "sine=frequency=330:sample_rate=44100:duration=2" \
   -filter_complex "[0:v]scale=641:361,$marker,format=yuv420p[v]" \
   -map "[v]" -map 1:a -t 2 -c:v mpeg4 -q:v 5 \
   -c:a aac -b:a 64k -ar 44100 -ac 1 \
   -movflags +faststart "$out/odd-size.mp4"

echo "transport.ts"
# MPEG-TS (as from a broadcast capture or an HLS segment): H.264 + stereo AAC, 640x360, 25 fps,
# 3 s. The TS muxer starts timestamps at 1.4 s, which the decoder must subtract.
ff -f lavfi -i "testsrc2=s=640x360:r=25" \
   -f lavfi -i "$(stereo_tone 3)" \
   -filter_complex "[0:v]$marker,format=yuv420p[v]" \
   -map "[v]" -map 1:a -t 3 "${x264[@]}" -g 50 \
   -c:a aac -b:a 96k -ar 48000 -ac 2 \
   -f mpegts "$out/transport.ts"

echo "done: $(cd "$out" && ls -1 ./*.mp4 ./*.mkv ./*.ts | tr '\n' ' ')"

#!/usr/bin/env bash
# Channel benchmark (issue 31): a live channel whose input goes away and comes back, measured.
#
#   scripts/bench-channel.sh                 # MODE=rtmp CYCLES=100
#   MODE=rtmp CYCLES=10 scripts/bench-channel.sh
#   MODE=srt CYCLES=100 scripts/bench-channel.sh
#   MODE=hls PAUSE=30 scripts/bench-channel.sh
#
# MODE=rtmp: `livefilter run rtmp://127.0.0.1:PORT/live/KEY --listen --on-input-loss hold` writing
#   LL-HLS (1 s segments, 0.5 s parts); an ffmpeg publisher (testsrc2 640x360 at 30 fps + a tone, x264
#   zerolatency, -re) publishes PUBLISH seconds, then is killed (SIGKILL, every other cycle) or quits,
#   and comes back GAP seconds later, CYCLES times; then the channel is stopped with SIGINT.
# MODE=srt: the same with an SRT listener (`srt://127.0.0.1:PORT?mode=listener&passphrase=…`) and
#   publishers sending MPEG-TS over SRT with the passphrase.
# MODE=hls: an HLS origin (python, 1 s segments of the same kind of clip) publishes 20 segments,
#   stops for PAUSE seconds (the playlist no longer changes), and comes back restarted: media
#   sequence 5000, timestamps from 0, 20 more segments, then ENDLIST.
#
# Prints: the channel's exit (and whether it was running after every cycle), losses, each return's
# delay (publisher started / origin's first new segment published → the loss ended in the run's
# report), the output's timestamp holes (ffprobe on every packet), segments that do not decode in
# ffprobe and whether GStreamer plays the playlist, and the LL-HLS part latency from the report
# (a part published − its last picture's input arrival; a frame waits at most a part's duration more).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${MODE:-rtmp}
CYCLES=${CYCLES:-100}
PUBLISH=${PUBLISH:-1.5}
GAP=${GAP:-1.2}
PAUSE=${PAUSE:-30}
WORK=${WORK:-out/bench-channel}
LIVEFILTER=${LIVEFILTER:-.build/release/livefilter}
[[ -x $LIVEFILTER ]] || { echo "no livefilter binary at $LIVEFILTER: swift build -c release" >&2; exit 1; }
[[ $MODE == rtmp || $MODE == srt || $MODE == hls ]] || { echo "MODE must be rtmp, srt or hls" >&2; exit 2; }
for tool in ffmpeg ffprobe python3; do command -v $tool >/dev/null || { echo "$tool is missing" >&2; exit 1; }; done
rm -rf "$WORK"; mkdir -p "$WORK/out"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
LF_PID=""; ORIGIN_PID=""
cleanup() { [[ -n $LF_PID ]] && kill -9 $LF_PID 2>/dev/null; [[ -n $ORIGIN_PID ]] && kill $ORIGIN_PID 2>/dev/null; true; }
trap cleanup EXIT
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $("$LIVEFILTER" --version 2>/dev/null || echo livefilter); $(ffmpeg -version | head -1 | cut -d' ' -f1-3)"

LL=(--hls-time 1 --hls-part 0.5 --hls-segment-type fmp4 --hls-playlist event)
: > "$WORK/returns.txt"
if [[ $MODE == rtmp || $MODE == srt ]]; then
    if [[ $MODE == rtmp ]]; then
        URL="rtmp://127.0.0.1:$PORT/live/KEY" PUB_URL="rtmp://127.0.0.1:$PORT/live/KEY" FORMAT=flv LISTEN=(--listen)
    else
        URL="srt://127.0.0.1:$PORT?mode=listener&passphrase=bench-channel-secret"
        PUB_URL="srt://127.0.0.1:$PORT?passphrase=bench-channel-secret" FORMAT=mpegts LISTEN=()
    fi
    echo "channel: livefilter run '$URL' ${LISTEN[*]} -o $WORK/out/index.m3u8 ${LL[*]} --on-input-loss hold --input-loss-after 0.5"
    "$LIVEFILTER" run "$URL" "${LISTEN[@]}" -o "$WORK/out/index.m3u8" "${LL[@]}" --on-input-loss hold --input-loss-after 0.5 \
        --report "$WORK/report.json" -y --log-level notice 2> "$WORK/stderr.txt" &
    LF_PID=$!
    sleep 1.5
    alive=0
    echo "publisher: ffmpeg -re testsrc2 640x360@30 + sine, x264 zerolatency, -f $FORMAT, $PUBLISH s each (every other one SIGKILLed at 80 %), $GAP s apart, $CYCLES times"
    for ((i = 0; i < CYCLES; i++)); do
        python3 -c 'import time; print(f"{time.time():.3f}")' >> "$WORK/returns.txt"
        ffmpeg -nostdin -v error -re -f lavfi -i testsrc2=size=640x360:rate=30 -f lavfi -i sine=frequency=440:sample_rate=48000 \
            -t "$PUBLISH" -c:v libx264 -preset ultrafast -tune zerolatency -g 30 -c:a aac -f $FORMAT "$PUB_URL" 2>> "$WORK/publisher.txt" &
        pub=$!
        if ((i % 2 == 0)); then sleep "$(python3 -c "print($PUBLISH * 0.8)")"; kill -9 $pub 2>/dev/null || true; fi
        wait $pub 2>/dev/null || true
        kill -0 $LF_PID 2>/dev/null && alive=$((alive + 1))
        sleep "$GAP"
    done
    kill -INT $LF_PID
    rc=0; wait $LF_PID || rc=$?; LF_PID=""
    echo "channel: exit $rc; running after $alive of $CYCLES publishers"
else
    python3 - "$WORK" "$PORT" "$PAUSE" <<'EOF' &
import http.server, os, subprocess, sys, threading, time
work, port, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
media = os.path.join(work, "origin")
os.makedirs(media, exist_ok=True)
subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-f", "lavfi", "-i",
                "sine=frequency=440:sample_rate=48000", "-t", "20", "-c:v", "libx264", "-preset", "ultrafast", "-g", "30",
                "-c:a", "aac", "-f", "hls", "-hls_time", "1", "-hls_list_size", "0", "-hls_segment_filename",
                os.path.join(media, "s%03d.ts"), os.path.join(media, "clip.m3u8")], check=True)
log = open(os.path.join(work, "origin.txt"), "w")
t0 = time.time() + 0.5
def state(now):
    t = now - t0
    if t < 17: return 0, min(20, 3 + int(t)), False           # 3 out at the start, one a second
    if t < 17 + pause: return 0, 20, False                    # stopped: the playlist no longer changes
    k = min(20, 1 + int(t - 17 - pause))
    return 5000, k, k >= 20 and t - 17 - pause > 21           # restarted: sequence 5000, the clip from 0
logged = set()
def playlist():
    seq, count, ended = state(time.time())
    if (seq, count) not in logged:
        logged.add((seq, count)); log.write(f"publish\t{seq + count - 1}\t{time.time():.3f}\n"); log.flush()
    first = max(0, count - 6)
    lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:1", f"#EXT-X-MEDIA-SEQUENCE:{seq + first}"]
    for i in range(first, count): lines += ["#EXTINF:1.000000,", f"s{i:03d}.ts"]
    if ended: lines.append("#EXT-X-ENDLIST")
    return "\n".join(lines) + "\n"
class H(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k): super().__init__(*a, directory=media, **k)
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path.startswith("/live.m3u8"):
            b = playlist().encode(); self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
        else: super().do_GET()
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
EOF
    ORIGIN_PID=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/live.m3u8" >/dev/null && break; sleep 0.2; done
    echo "origin: 1 s segments, 20 published one a second, then none for $PAUSE s, then restarted (media sequence 5000, timestamps from 0), 20 more, ENDLIST"
    echo "channel: livefilter run http://127.0.0.1:$PORT/live.m3u8 -o $WORK/out/index.m3u8 ${LL[*]} --on-input-loss hold --input-loss-after 3"
    rc=0
    "$LIVEFILTER" run "http://127.0.0.1:$PORT/live.m3u8" -o "$WORK/out/index.m3u8" "${LL[@]}" --on-input-loss hold --input-loss-after 3 \
        --report "$WORK/report.json" -y --log-level notice 2> "$WORK/stderr.txt" || rc=$?
    echo "channel: exit $rc"
    # The restarted origin's first segment: its return.
    awk -F'\t' '$2 >= 5000 {print $3; exit}' "$WORK/origin.txt" > "$WORK/returns.txt"
    sed -i '1i 0' "$WORK/returns.txt"   # the first line stands for the start (no loss before it)
fi

python3 - "$WORK" <<'EOF'
import json, os, subprocess, sys
from datetime import datetime
work = sys.argv[1]
out = os.path.join(work, "out", "index.m3u8")
report = json.load(open(os.path.join(work, "report.json")))
losses = report.get("input_losses") or []
returns = [float(x) for x in open(os.path.join(work, "returns.txt")).read().split()]
delays = []
for loss, back in zip(losses, returns[1:]):
    if back <= 0: continue
    began = datetime.fromisoformat(loss["began"].replace("Z", "+00:00")).timestamp()
    delays.append(began + loss["seconds"] - back)
def pct(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else float("nan")
print(f"losses: {len(losses)}, {sum(l['seconds'] for l in losses):.1f} s in all")
if delays:
    print(f"return → loss ended (the first picture back at the tick loop): p50 {pct(delays, .5):.2f} s, p95 {pct(delays, .95):.2f} s, max {max(delays):.2f} s")
packets = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "packet=codec_type,pts_time,duration_time", "-of", "csv=p=0", out],
                         capture_output=True, text=True).stdout
streams = {"video": [], "audio": []}
for line in packets.splitlines():
    f = line.split(",")
    if len(f) >= 3 and f[0] in streams and f[1] not in ("", "N/A"):
        streams[f[0]].append((float(f[1]), float(f[2]) if f[2] not in ("", "N/A") else 0))
for kind, xs in streams.items():
    xs.sort()
    holes = [b[0] - a[0] - a[1] for a, b in zip(xs, xs[1:]) if abs(b[0] - a[0] - a[1]) > 0.005]
    end = xs[-1][0] + xs[-1][1] - xs[0][0] if xs else 0
    print(f"{kind}: {len(xs)} packets, {end:.2f} s, holes > 5 ms: {len(holes)}" + (f" (largest {max(holes, key=abs):.3f} s)" if holes else ""))
text = open(out).read()
segments = [l for l in text.splitlines() if l and not l.startswith("#")]
# An fMP4 segment decodes after its initialization section (EXT-X-MAP).
init = next((l.split('URI="')[1].split('"')[0] for l in text.splitlines() if l.startswith("#EXT-X-MAP:")), None)
head = open(os.path.join(work, "out", init), "rb").read() if init else b""
bad = 0
for name in segments:
    whole = os.path.join(work, "one-segment")
    with open(whole, "wb") as f: f.write(head + open(os.path.join(work, "out", name), "rb").read())
    n = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames",
                        "-of", "csv=p=0", whole], capture_output=True, text=True).stdout.strip()
    if not n.isdigit() or int(n) == 0: bad += 1
print(f"segments: {len(segments)}, not decoding in ffprobe: {bad}; ENDLIST: {'#EXT-X-ENDLIST' in text}")
gst = "/usr/bin/gst-launch-1.0"
if os.path.exists(gst):
    r = subprocess.run([gst, "filesrc", f"location={out}", "!", "hlsdemux", "!", "qtdemux", "!", "h264parse", "!", "avdec_h264", "!", "fakesink"],
                       capture_output=True, text=True, timeout=600)
    print(f"GStreamer hlsdemux: {'plays to the end' if r.returncode == 0 else 'FAILED: ' + r.stderr[-300:]}")
p = report.get("part_latency")
if p:
    print(f"LL-HLS parts: {p['parts']}; part published − its last picture's input arrival: p50 {p['from_input_p50']:.3f} s, p95 {p['from_input_p95']:.3f} s"
          f" (a frame's wait, at most a part more: p95 ≤ {p['from_input_p95'] + 0.5:.3f} s)")
EOF

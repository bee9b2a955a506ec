#!/usr/bin/env bash
# Plays livefilter's HLS output in a real headless browser and checks that it decodes frames and
# that its clock advances.
#
#   scripts/browser-check.sh [--no-install] [--seconds N] [--input FILE] [--chain TEXT] [--shards N] [--live-chart] [--live-control] [--ll | --ll-input URL] [--dateranges]
#
# 1. installs Debian's chromium if it is missing (apt-get; skipped with --no-install: exit 77),
# 2. makes HLS from the input with `livefilter run … -o DIR/index.m3u8` (with --shards N: split into
#    N shards with `livefilter plan`, each task run as a plain process, then `livefilter join`:
#    a master with an EXT-X-MEDIA audio rendition),
# 3. serves DIR with `livefilter serve DIR --listen 127.0.0.1:0` (any free port),
# 4. opens the player page (/) in `chromium --headless=new`, driven over the DevTools protocol on a
#    pipe (--remote-debugging-pipe: NUL-separated JSON on fds 3 and 4, no WebSocket client needed),
#    and every half second reads window.livefilterStats (frames decoded, currentTime, errors),
# 5. passes when frames > 0 and currentTime advanced; the browser and the server are always stopped.
# --live-chart: instead, `livefilter run --realtime --serve` on a 30 s clip (made by ffmpeg's testsrc2),
#    and the page's live chart is checked too: at least 5 samples from /status, then a screenshot of
#    the chart (saved as $CHART_PNG, default /tmp/livefilter-chart.png) must show the fps and latency
#    lines in their colours; prints `browser-check: chart {...}`.
# --live-control: as --live-chart, with `--control` on the same port: the page's chain panel must list
#    the chain's numeric parameters as sliders; the check moves the first slider as a user would
#    (an input event), and passes when PUT /chain answered "applied at tick N" and GET /chain shows
#    the new value; prints `browser-check: control {...}`.
# --ll: Low-Latency HLS in hls.js: `livefilter run --realtime --serve` with 0.5 s parts in 2 s fMP4
#    segments on a clip it makes (N+15 s long; --seconds N, default 60), opened once the playlist
#    lists a whole segment; the page plays it with hls.js (scripts/install-hlsjs.sh; LIVEFILTER_HLSJS). Samples
#    window.livefilterStats every 0.5 s for N s and prints `browser-check: ll {...}`: the hls.js
#    version, hls.latency p50/p95 and the playing date's lag behind the wall clock p50/p95 (both over
#    the samples after the first 10 s), stalls, errors (fatal ones apart), frames. Passes when hls.js
#    played, frames advanced and no error was fatal.
# --dateranges: ad markers as hls.js sees them. A 20 s TS (ffmpeg's testsrc2 and a tone) gets a splice
#    OUT at 6 s (a 4 s break) and its IN at 10 s, SCTE-35 sections made and injected on their own PID
#    by threefive (scripts/splice-oracle.py, sent 2 s ahead as SCTE 67 advises); livefilter filters it
#    into HLS with 2 s segments; passes when hls.js played and lists every EXT-X-DATERANGE of our
#    playlist with the same ID, START-DATE and SCTE35-OUT/-IN. Prints `browser-check: dateranges {...}`.
#
# Exit 0 played, 1 did not play (the samples are printed), 77 skipped (no chromium and --no-install,
# or no python3). LIVEFILTER_BIN picks the binary (default: a release build in .build).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
install=1
ll_input=""
seconds=""
input="$root/samples/landscape.mp4"
chain="mirror | blur 2"
shards=0
chart=0
control=0
ll=0
dateranges=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --no-install) install=0 ;;
        --seconds) seconds="$2"; shift ;;
        --input) input="$2"; shift ;;
        --chain) chain="$2"; shift ;;
        --shards) shards="$2"; shift ;;
        --live-chart) chart=1 ;;
        --live-control) chart=1; control=1 ;;
        --ll) ll=1 ;;
        --ll-input) ll=1; ll_input="$2"; shift ;;
        --dateranges) dateranges=1 ;;
        -h|--help) sed -n '2,39p' "$0"; exit 0 ;;
        *) echo "browser-check: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

say() { echo "browser-check: $*"; }
if [[ -z "$seconds" ]]; then seconds=$([[ "$ll" -eq 1 ]] && echo 60 || echo 6); fi

browser="$(command -v chromium || true)"
if [[ -z "$browser" ]]; then
    if [[ "$install" -eq 0 ]]; then say "skipped: chromium is not installed (apt-get install -y chromium)"; exit 77; fi
    say "installing chromium (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq chromium >/dev/null
    browser="$(command -v chromium)"
fi
if ! command -v python3 >/dev/null; then say "skipped: python3 is needed for the DevTools client"; exit 77; fi

bin="${LIVEFILTER_BIN:-}"
if [[ -z "$bin" ]]; then
    (cd "$root" && source scripts/cpu-flags.sh && swift build -c release "${SWIFT_CPU_FLAGS[@]}" >/dev/null)
    bin="$root/.build/release/livefilter"
fi

work="$(mktemp -d /tmp/livefilter-browser-XXXXXX)"
server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

mkdir "$work/hls"
if [[ "$ll" -eq 1 && -n "$ll_input" ]]; then
    # A live input (an LL-HLS origin): its program date-times carry through, so playingDate is the
    # source's clock and now − playingDate is the viewer's distance from the source.
    "$bin" run "$ll_input" -o "$work/hls/index.m3u8" --chain "$chain" --serve 127.0.0.1:0 ${LL_EXTRA:-} \
        --hls-time 2 --hls-part 0.5 --hls-segment-type fmp4 --quiet >"$work/serve.log" 2>&1 &
    server_pid=$!
elif [[ "$ll" -eq 1 ]]; then
    ffmpeg -v error -f lavfi -i testsrc2=size=640x360:rate=30 -t "$((seconds + 15))" -c:v libx264 -preset ultrafast -g 30 -pix_fmt yuv420p "$work/clip.mp4"
    "$bin" run "$work/clip.mp4" -o "$work/hls/index.m3u8" --chain "$chain" --realtime --serve 127.0.0.1:0 \
        --hls-time 2 --hls-part 0.5 --hls-segment-type fmp4 --quiet >"$work/serve.log" 2>&1 &
    server_pid=$!
elif [[ "$chart" -eq 1 ]]; then
    ffmpeg -v error -f lavfi -i testsrc2=size=640x360:rate=30 -t 30 -c:v libx264 -preset ultrafast -g 30 -pix_fmt yuv420p "$work/clip.mp4"
    control_args=()
    if [[ "$control" -eq 1 ]]; then control_args=(--control 127.0.0.1:0); fi
    "$bin" run "$work/clip.mp4" -o "$work/hls/index.m3u8" --chain "$chain" --hls-time 1 --realtime \
        --serve 127.0.0.1:0 --serve-after "${control_args[@]}" --quiet >"$work/serve.log" 2>&1 &
    server_pid=$!
elif [[ "$shards" -gt 0 ]]; then
    "$bin" plan "$input" -o "$work/hls/index.m3u8" --chain "$chain" --hls-time 1 --shards "$shards" --plan "$work/plan.json" >/dev/null 2>&1
    tasks=$(python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print(len(p['shards']) + (1 if p['audio'] else 0))" "$work/plan.json")
    for ((k = 0; k < tasks; k++)); do JOB_COMPLETION_INDEX=$k "$bin" run --plan "$work/plan.json" --quiet; done
    "$bin" join "$work/plan.json" --quiet
elif [[ "$dateranges" -eq 1 ]]; then
    ffmpeg -v error -f lavfi -i testsrc2=size=640x360:rate=30 -f lavfi -i sine=f=440:sample_rate=48000 -t 20 \
        -c:v libx264 -preset ultrafast -g 30 -pix_fmt yuv420p -c:a aac -f mpegts "$work/plain.ts"
    # Splice times on the TS's own 90 kHz clock: the first picture's time plus 6 s and 10 s.
    first="$(ffprobe -v error -select_streams v -show_entries stream=start_time -of csv=p=0 "$work/plain.ts" | head -1)"
    out_at="$(python3 -c "print(round($first + 6, 6))")"; in_at="$(python3 -c "print(round($first + 10, 6))")"
    out_hex="$(python3 "$root/scripts/splice-oracle.py" insert 21 1 "$out_at" 0 4)"
    in_hex="$(python3 "$root/scripts/splice-oracle.py" insert 21 0 "$in_at" 0)"
    python3 "$root/scripts/splice-oracle.py" inject "$work/plain.ts" "$work/spliced.ts" \
        "$(python3 -c "print($out_at - 2)"):$out_hex" "$(python3 -c "print($in_at - 2)"):$in_hex" >/dev/null
    "$bin" run "$work/spliced.ts" -o "$work/hls/index.m3u8" --chain "blur 4 | mirror" --hls-time 2 --quiet
    # What our playlist says, for the page's hls.js to be compared with.
    python3 - "$work/hls/index.m3u8" >"$work/ranges.json" <<'PY'
import json, re, sys
ranges = []
for line in open(sys.argv[1]):
    if line.startswith("#EXT-X-DATERANGE:"):
        attrs = dict(re.findall(r'([A-Z0-9-]+)=("[^"]*"|[^,]*)', line.strip()[len("#EXT-X-DATERANGE:"):]))
        ranges.append({k: v.strip('"') for k, v in attrs.items()})
print(json.dumps(ranges))
PY
    say "playlist date ranges: $(cat "$work/ranges.json")"
else
    "$bin" run "$input" -o "$work/hls/index.m3u8" --chain "$chain" --hls-time 1 --quiet
fi

if [[ "$chart" -eq 0 && "$ll" -eq 0 ]]; then
    "$bin" serve "$work/hls" --listen 127.0.0.1:0 >"$work/serve.log" 2>&1 &
    server_pid=$!
fi
url=""
for _ in $(seq 50); do
    url="$(grep -o 'http://[0-9.:]*/' "$work/serve.log" | head -1 || true)"
    [[ -n "$url" ]] && break
    sleep 0.1
done
if [[ -z "$url" ]]; then say "FAILED: livefilter serve did not start: $(cat "$work/serve.log")"; exit 1; fi

status=0
say "$("$browser" --version 2>/dev/null | tail -1) playing $url for up to ${seconds}s"
# A live input: a viewer joins a running channel, so the page opens once a few segments are out
# (with an LL input, five: the run's first segments are read whole, before its parts).
min_segments=1; [[ -n "$ll_input" ]] && min_segments=5
CHROMIUM="$browser" timeout --kill-after=5 "$((seconds + 80))" \
    python3 - "$url" "$seconds" "$work/profile" "$chart" "${CHART_PNG:-/tmp/livefilter-chart.png}" "$control" "$ll" "$min_segments" \
        "$([[ "$dateranges" -eq 1 ]] && echo "$work/ranges.json" || true)" <<'PY' || status=$?
import base64, json, os, select, signal, struct, subprocess, sys, time, urllib.request, zlib

url, seconds, profile = sys.argv[1], float(sys.argv[2]), sys.argv[3]
want_chart, chart_png, want_control = sys.argv[4] == "1", sys.argv[5], sys.argv[6] == "1"
want_ll = sys.argv[7] == "1"
min_segments = int(sys.argv[8])
ranges_file = sys.argv[9] if len(sys.argv) > 9 and sys.argv[9] else None
expected_ranges = json.load(open(ranges_file)) if ranges_file else None

def iso_ms(text):
    """Milliseconds since the epoch of an ISO 8601 date (Z or ±hh:mm), None if absent."""
    from datetime import datetime
    if not text: return None
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)

def ranges_match(seen):
    """Each of our playlist's ranges as hls.js read it: (all matched, per-range comparison)."""
    rows = []
    for want in expected_ranges:
        got = (seen or {}).get(want.get("ID")) or {}
        row = {"id": want.get("ID"), "playlist_start": want.get("START-DATE"), "hlsjs_start": got.get("startDate"),
               "scte35_out": (got.get("scte35Out") or "").lower() == (want.get("SCTE35-OUT") or "").lower(),
               "scte35_in": (got.get("scte35In") or "").lower() == (want.get("SCTE35-IN") or "").lower(),
               "hlsjs_valid": got.get("valid"), "duration": got.get("duration")}
        row["ok"] = bool(got) and iso_ms(want.get("START-DATE")) == iso_ms(got.get("startDate")) and row["scte35_out"] and row["scte35_in"]
        rows.append(row)
    return bool(rows) and all(r["ok"] for r in rows), rows

def percentile(values, p):
    """Nearest rank; None for no values."""
    if not values: return None
    values = sorted(values)
    return round(values[max(0, min(len(values) - 1, int(-(-p * len(values) // 100)) - 1))], 3)

if want_ll:
    # Open the page once the live playlist lists a whole segment: the check measures playback, not the
    # stream's first seconds (a playlist of parts only is hls.js's levelEmptyError, and each stall
    # then raises its target latency by liveSyncOnStallIncrease, 1 s, for the rest of the session).
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(url + "index.m3u8", timeout=5).read().count(b"#EXTINF") >= min_segments: break
        except Exception: pass
        time.sleep(0.2)

def png_pixels(data):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB or RGBA PNG, as Chromium writes them."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), f"PNG depth {depth} colour type {color}"
            channels = 4 if color == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows, previous = zlib.decompress(idat), width * channels, [], bytearray(width * channels)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = previous[i], previous[i - channels] if i >= channels else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        previous = line
    return width, height, rows

def count_near(rows, colour, tolerance=40):
    return sum(1 for row in rows for px in row if sum(abs(px[i] - colour[i]) for i in range(3)) <= tolerance)

def child_setup():
    # The browser reads DevTools commands on fd 3 and answers on fd 4; its own process group, so
    # the whole tree (zygote, renderers, GPU process) is killed together.
    r, w = os.dup(to_browser_r), os.dup(from_browser_w)
    os.dup2(r, 3); os.dup2(w, 4)
    os.set_inheritable(3, True); os.set_inheritable(4, True)
    os.setsid()

to_browser_r, to_browser_w = os.pipe()
from_browser_r, from_browser_w = os.pipe()
log = open(profile + ".log", "w")
browser = subprocess.Popen(
    [os.environ["CHROMIUM"], "--headless=new", "--no-sandbox", "--disable-gpu", "--mute-audio", "--no-first-run",
     "--autoplay-policy=no-user-gesture-required", "--user-data-dir=" + profile, "--remote-debugging-pipe",
     "about:blank"],
    preexec_fn=child_setup, pass_fds=(3, 4), stdin=subprocess.DEVNULL, stdout=log, stderr=log)
os.close(to_browser_r); os.close(from_browser_w)

pending, last_id = b"", 0
def call(method, params=None, session=None, timeout=15):
    global pending, last_id
    last_id += 1
    message = {"id": last_id, "method": method, "params": params or {}}
    if session: message["sessionId"] = session
    os.write(to_browser_w, json.dumps(message).encode() + b"\0")
    deadline = time.monotonic() + timeout
    while True:
        while b"\0" in pending:
            raw, pending = pending.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == last_id:
                if "error" in answer: raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
        left = deadline - time.monotonic()
        if left <= 0: raise TimeoutError(f"{method}: no answer from the browser in {timeout}s")
        if select.select([from_browser_r], [], [], left)[0]:
            chunk = os.read(from_browser_r, 1 << 16)
            if not chunk: raise RuntimeError("the browser closed the DevTools pipe (see its log)")
            pending += chunk

samples, ok = [], False
try:
    target = call("Target.createTarget", {"url": url})["targetId"]
    session = call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    # A desktop-sized viewport: the chart sits beside the video.
    call("Emulation.setDeviceMetricsOverride", {"width": 1400, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session)
    expression = ("JSON.stringify(Object.assign({}, window.livefilterStats || {}, {title: document.title,"
                  " width: (document.querySelector('video') || {}).videoWidth,"
                  " height: (document.querySelector('video') || {}).videoHeight, now: Date.now()}))")
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        time.sleep(0.5)
        value = call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)["result"].get("value")
        sample = json.loads(value or "{}")
        sample["elapsed"] = time.monotonic() - start
        samples.append(sample)
        if want_ll: continue
        times = [s.get("currentTime") or 0 for s in samples]
        if (sample.get("frames") or 0) > 0 and len(times) >= 2 and times[-1] > times[0] and times[-1] >= 1.0:
            if expected_ranges is not None and not ranges_match(sample.get("dateRanges"))[0]: continue
            if not want_chart or (sample.get("chartSamples") or 0) >= 5:
                ok = True
                break
    if want_ll:
        steady = [s for s in samples if s["elapsed"] >= 10]
        latencies = [s["latency"] for s in steady if s.get("latency") is not None]
        lags = [(s["now"] - s["playingDate"]) / 1000 for s in steady if s.get("playingDate") and s.get("now")]
        last = samples[-1] if samples else {}
        first_frames = next((s.get("frames") or 0 for s in samples if (s.get("frames") or 0) > 0), 0)
        details = {}
        for e in last.get("errorLog") or []:
            key = e["details"] + (" (fatal)" if e.get("fatal") else "")
            details[key] = details.get(key, 0) + 1
        report = {"hlsjs": last.get("hlsjs"), "seconds": seconds, "samples": len(samples), "steady_samples": len(steady),
                  "latency_p50": percentile(latencies, 50), "latency_p95": percentile(latencies, 95),
                  "lag_p50": percentile(lags, 50), "lag_p95": percentile(lags, 95),
                  "stalls": last.get("stalls"), "errors": last.get("errors"), "fatal_errors": last.get("fatalErrors"),
                  "error_details": details, "stall_at_s": [round((x["t"] - samples[0]["now"]) / 1000, 1) for x in last.get("stallLog") or []],
                  "frames": last.get("frames"), "currentTime": last.get("currentTime"),
                  "size": f"{last.get('width')}x{last.get('height')}"}
        ok = bool(last.get("hlsjs") and (last.get("frames") or 0) > first_frames > 0 and not last.get("fatalErrors"))
        report["ok"] = ok
        print("browser-check: ll " + json.dumps(report))
    if expected_ranges is not None:
        matched, rows = ranges_match(samples[-1].get("dateRanges") if samples else None)
        print("browser-check: dateranges " + json.dumps({"ok": ok and matched, "hlsjs": samples[-1].get("hlsjs") if samples else None,
                                                        "ranges": rows}))
    if ok and want_chart:
        rect = call("Runtime.evaluate", {"expression": "JSON.stringify(document.getElementById('chart').getBoundingClientRect())",
                                         "returnByValue": True}, session)["result"]["value"]
        rect = json.loads(rect)
        shot = call("Page.captureScreenshot", {"format": "png", "clip": {"x": rect["x"], "y": rect["y"], "width": rect["width"],
                                                                        "height": rect["height"], "scale": 1},
                                             "captureBeyondViewport": True}, session, timeout=30)
        data = base64.b64decode(shot["data"])
        with open(chart_png, "wb") as f: f.write(data)
        w, h, rows = png_pixels(data)
        chart = {"samples": samples[-1].get("chartSamples"), "width": w, "height": h, "png": chart_png,
                 "fps_pixels": count_near(rows, (0x4f, 0xc3, 0xf7)), "latency_pixels": count_near(rows, (0xff, 0xb7, 0x4d)),
                 "dropped_pixels": count_near(rows, (0xef, 0x53, 0x50)), "frames": samples[-1].get("frames"),
                 "status": (samples[-1].get("status") or {}).get("phase")}
        print("browser-check: chart " + json.dumps(chart))
    if ok and want_control:
        # Move the first slider as a user would: set its value, fire 'input'; the page PUTs FILTER.key=value.
        ok = False
        moved = call("Runtime.evaluate", {"expression": """(() => {
            const s = document.querySelector('#sliders input[type=range]');
            if (!s) return null;
            s.value = String(Math.min(Number(s.max), Number(s.value) + 7));
            s.dispatchEvent(new Event('input'));
            return JSON.stringify({key: s.dataset.key, value: s.value, sliders: document.querySelectorAll('#sliders input').length});
        })()""", "returnByValue": True}, session)["result"].get("value")
        reply = None
        if moved:
            moved = json.loads(moved)
            for _ in range(40):
                time.sleep(0.25)
                reply = json.loads(call("Runtime.evaluate", {"expression": "JSON.stringify(window.livefilterStats.chainReply || null)",
                                                             "returnByValue": True}, session)["result"].get("value") or "null")
                if reply: break
        served = json.loads(urllib.request.urlopen(url + "chain?format=json", timeout=5).read())
        value = served["parameters"][0]["value"] if served.get("parameters") else None
        ok = bool(moved and reply and reply.get("status") == 200 and reply.get("message", "").startswith("applied at tick")
                  and value is not None and abs(value - float(moved["value"])) < 0.01)
        print("browser-check: control " + json.dumps({"moved": moved, "reply": reply, "chain": served.get("chain"), "ok": ok}))
    try: call("Browser.close", timeout=5)
    except Exception: pass
except Exception as error:
    print(f"browser-check: DevTools: {error}", file=sys.stderr)
finally:
    try: browser.wait(timeout=5)
    except subprocess.TimeoutExpired: pass
    try: os.killpg(browser.pid, signal.SIGKILL)
    except ProcessLookupError: pass
    browser.wait()

last = samples[-1] if samples else {}
summary = {"ok": ok, "frames": last.get("frames"), "currentTime": last.get("currentTime"),
           "first_currentTime": samples[0].get("currentTime") if samples else None,
           "size": f"{last.get('width')}x{last.get('height')}", "error": last.get("error"), "samples": len(samples)}
print("browser-check: stats " + json.dumps(summary))
if not ok:
    for s in samples: print("browser-check: sample " + json.dumps({k: v for k, v in s.items() if k != "status"}), file=sys.stderr)
sys.exit(0 if ok else 1)
PY

if [[ $status -eq 0 && "$ll" -eq 1 ]]; then say "ok: hls.js played the Low-Latency HLS, no fatal error"
elif [[ $status -eq 0 ]]; then say "ok: the browser decoded frames and its clock advanced"
elif [[ "$ll" -eq 1 ]]; then say "FAILED: no LL playback with hls.js (or a fatal hls.js error)"
else say "FAILED: no playback"; fi
exit $status

#!/usr/bin/env python3
"""Helpers for scripts/bench-live.sh (python3 stdlib only).

  serve      replay a VOD HLS folder as a LIVE stream over loopback HTTP, on the wall clock
  watch      poll output playlists and log when each segment first appears
  summarize  turn the logs of one run into the per-stream table
  latencies  print every output segment's latency from summarize's JSON

Logs are tab-separated lines with wall times from time.time() (seconds, ms precision), so the
server, the watcher and the shell share one clock.
"""
import argparse
import http.server
import json
import math
import os
import re
import signal
import statistics
import sys
import threading
import time


def parse_media_playlist(text):
    """[(duration, uri)] of a media playlist, plus whether it has EXT-X-ENDLIST.
    Only complete lines count: a playlist read while being written must not yield half a URI."""
    segments, duration, ended = [], None, False
    lines = text.split("\n")
    if not text.endswith("\n"):
        lines = lines[:-1]
    for line in lines:
        line = line.strip()
        if line.startswith("#EXTINF:"):
            duration = float(line[8:].split(",")[0])
        elif line == "#EXT-X-ENDLIST":
            ended = True
        elif line and not line.startswith("#") and duration is not None:
            segments.append((duration, line))
            duration = None
    return segments, ended


# ---------------------------------------------------------------------------------------- serve

class LiveSource:
    """The schedule: segment n is published at t0 + the durations before it (t0 + n × 2 s here), one
    segment per segment duration, as a live encoder finishes them. t0 lies PRELOAD-1 segments before
    the server starts, so PRELOAD segments are out when a client comes: it joins a stream that has been
    running, as in production. With PRELOAD 3, both ffmpeg (live_start_index -3) and livefilter
    (--live-start edge) start at segment 0, so the whole source is used and the tools start alike.
    Preloaded segments are logged with their nominal (earlier) publish times."""

    def __init__(self, media_dir, window, preload, log):
        with open(os.path.join(media_dir, "index.m3u8")) as f:
            self.segments, _ = parse_media_playlist(f.read())
        if len(self.segments) < preload + 1:
            sys.exit(f"live-publisher: {media_dir}/index.m3u8 has {len(self.segments)} segments, need > {preload}")
        self.media_dir, self.window, self.log = media_dir, window, log
        self.target = math.ceil(max(d for d, _ in self.segments))
        starts = [0.0]
        for d, _ in self.segments[:-1]:
            starts.append(starts[-1] + d)
        now = time.time()
        t0 = now - starts[preload - 1]
        self.publish_at = [t0 + s for s in starts]
        self.index_of = {uri: n for n, (_, uri) in enumerate(self.segments)}
        self.lock = threading.Lock()

    def published(self, now=None):
        """Number of segments out at wall time `now`."""
        now = time.time() if now is None else now
        return sum(1 for t in self.publish_at if t <= now)

    def playlist(self):
        count = self.published()
        first = max(0, count - self.window)
        lines = ["#EXTM3U", "#EXT-X-VERSION:3", f"#EXT-X-TARGETDURATION:{self.target}",
                 f"#EXT-X-MEDIA-SEQUENCE:{first}"]
        for d, uri in self.segments[first:count]:
            lines += [f"#EXTINF:{d:.3f},", uri]
        # The encoder stops: its last playlist update carries the last segment and the end tag.
        if count == len(self.segments):
            lines.append("#EXT-X-ENDLIST")
        return ("\n".join(lines) + "\n").encode()

    def write_log(self, *fields):
        with self.lock:
            self.log.write("\t".join(str(f) for f in fields) + "\n")
            self.log.flush()

    def announce(self):
        """Log each publish time as it happens (preloaded ones with their nominal, earlier time)."""
        for n, t in enumerate(self.publish_at):
            delay = t - time.time()
            if delay > 0:
                time.sleep(delay)
            self.write_log("publish", n, f"{t:.3f}", self.segments[n][1])
        self.write_log("endlist", f"{self.publish_at[-1]:.3f}")


def make_handler(source, streams):
    class Handler(http.server.BaseHTTPRequestHandler):
        # HTTP/1.1 keep-alive, as a CDN would offer; ffmpeg and livefilter both reuse connections.
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass  # every request goes to our own log instead

        def do_GET(self):
            now = time.time()
            status, body, ctype = self.route()
            source.write_log("request", f"{now:.3f}", self.path, status)
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-cache, no-store")
            self.end_headers()
            self.wfile.write(body)

        def route(self):
            # /s<N>/live.m3u8 and /s<N>/<segment>: one schedule, a URL prefix per stream so the
            # request log tells the concurrent clients apart.
            m = re.fullmatch(r"/s(\d+)/([^/?]+)", self.path)
            if not m or not 1 <= int(m.group(1)) <= streams:
                return 404, b"not found\n", "text/plain"
            name = m.group(2)
            if name == "live.m3u8":
                return 200, source.playlist(), "application/vnd.apple.mpegurl"
            n = source.index_of.get(name)
            if n is None or n >= source.published():
                return 404, b"not published\n", "text/plain"
            with open(os.path.join(source.media_dir, name), "rb") as f:
                return 200, f.read(), "video/mp2t"

    return Handler


def serve(args):
    log = open(args.log, "w")
    # Bind first (port 0 = a free port), then start the clock, so no time is lost before clients come.
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), None)
    source = LiveSource(args.media, args.window, args.preload, log)
    server.RequestHandlerClass = make_handler(source, args.streams)
    server.daemon_threads = True
    threading.Thread(target=source.announce, daemon=True).start()
    with open(args.port_file + ".tmp", "w") as f:
        f.write(f"{server.server_address[1]}\n")
    os.rename(args.port_file + ".tmp", args.port_file)  # the shell waits for this file: write it whole
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server.serve_forever()


# ---------------------------------------------------------------------------------------- watch

def watch(args):
    """Poll every playlist each `interval` s; log the first time each segment URI and the end tag
    are seen. Runs until SIGTERM, then polls once more so nothing written at the end is missed."""
    log = open(args.log, "w")
    seen = {p: set() for p in args.playlists}
    ended = set()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def poll():
        now = time.time()
        for stream, path in enumerate(args.playlists, 1):
            try:
                with open(path) as f:
                    segments, end = parse_media_playlist(f.read())
            except (FileNotFoundError, UnicodeDecodeError):
                continue
            for d, uri in segments:
                if uri not in seen[path]:
                    seen[path].add(uri)
                    log.write(f"segment\t{stream}\t{now:.3f}\t{uri}\t{d:.3f}\n")
            if end and path not in ended:
                ended.add(path)
                log.write(f"endlist\t{stream}\t{now:.3f}\n")
        log.flush()

    while not stop.is_set():
        poll()
        stop.wait(args.interval)
    poll()


# ------------------------------------------------------------------------------------ summarize

def read_tsv(path):
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def percentile(values, p):
    """Nearest-rank percentile (no interpolation: with few samples it shows a real sample)."""
    s = sorted(values)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def summarize(args):
    server = read_tsv(args.server_log)
    publish = {int(r[1]): float(r[2]) for r in server if r[0] == "publish"}
    durations = {}
    with open(os.path.join(args.media, "index.m3u8")) as f:
        for n, (d, _) in enumerate(parse_media_playlist(f.read())[0]):
            durations[n] = d
    source_end = max(publish.values())  # the last segment and EXT-X-ENDLIST go out together
    watched = read_tsv(args.watch_log)
    rows = []
    for stream in range(1, args.streams + 1):
        row = {"stream": stream}
        # s0: the first input segment this client fetched, i.e. where it joined the live stream.
        fetched = [int(m.group(1)) for r in server if r[0] == "request"
                   for m in [re.fullmatch(rf"/s{stream}/seg(\d+)\.ts", r[2])] if m]
        outs = [(float(r[2]), float(r[4])) for r in watched if r[0] == "segment" and r[1] == str(stream)]
        endlist = [float(r[2]) for r in watched if r[0] == "endlist" and r[1] == str(stream)]
        sdir = os.path.join(args.run_dir, f"s{stream}")
        row.update(cpu=None, wall=None, rss_mb=None, exit_at=None, rc=-1)
        try:
            with open(os.path.join(sdir, "time.txt")) as f:
                # /usr/bin/time may print "Command exited with non-zero status N" first: take the last line.
                wall, user, sys_, rss = f.read().split("\n")[-2].split()
            row.update(cpu=float(user) + float(sys_), wall=float(wall), rss_mb=int(rss) / 1024)
            with open(os.path.join(sdir, "rc")) as f:
                row["rc"] = int(f.read())
            with open(os.path.join(sdir, "start")) as f:
                row["exit_at"] = float(f.read()) + row["wall"]
        except (OSError, ValueError, IndexError) as e:
            print(f"live-publisher: stream {stream}: no complete timing ({e})", file=sys.stderr)
        row["segments"] = len(outs)
        if fetched:
            s0 = fetched[0]
            row["s0"] = s0
            lat = [t - publish[s0 + k] for k, (t, _) in enumerate(outs) if s0 + k in publish]
            row["latency_all"] = lat
            steady = lat[5:-1]
            row["p50"] = statistics.median(steady) if steady else None
            row["p95"] = percentile(steady, 95) if steady else None
            row["in_s"] = sum(d for n, d in durations.items() if n >= s0)
        row["out_s"] = sum(d for _, d in outs)
        # Lag at the end: from the source's EXT-X-ENDLIST to the tool's own (else to its exit).
        end = endlist[0] if endlist else row["exit_at"]
        row["end_lag"] = None if end is None else end - source_end
        if args.tool == "lf":
            rep_path = os.path.join(sdir, "report.json")
            if os.path.exists(rep_path):
                with open(rep_path) as f:
                    rep = json.load(f)
                ticks = rep.get("ticks") or {}
                row.update(repeated=rep.get("frames_repeated"), dropped=rep.get("frames_dropped"),
                           late=ticks.get("late_ticks"), skips=ticks.get("latency_skips"),
                           written=rep.get("frames_written"))
        else:
            prog_path = os.path.join(sdir, "progress.txt")
            if os.path.exists(prog_path):
                last = {}
                for line in open(prog_path):
                    k, _, v = line.strip().partition("=")
                    last[k] = v
                row.update(repeated=last.get("dup_frames"), dropped=last.get("drop_frames"),
                           written=last.get("frame"), speed=last.get("speed"))
        rows.append(row)

    fmt = lambda v, f="{:.2f}": "-" if v is None else f.format(v)
    name = {"lf": "livefilter", "ff": "ffmpeg"}[args.tool]
    for r in rows:
        on_time = (r["rc"] == 0 and r.get("in_s") is not None and r["out_s"] >= 0.97 * r["in_s"]
                   and r["end_lag"] is not None and r["end_lag"] <= args.lag_limit)
        # Keeping the clock by showing repeats (or skipping frames) is not keeping up: say so.
        lost = max(int(r.get("repeated") or 0), int(r.get("dropped") or 0))
        r["kept"] = "NO" if not on_time else "lossy" if lost > 0.01 * int(r.get("written") or 1) else "yes"
        extra = (f"late {fmt(r.get('late'), '{}')} skips {fmt(r.get('skips'), '{}')}" if args.tool == "lf"
                 else f"speed {r.get('speed') or '-'}")
        print(f"{name + ' #' + str(r['stream']):<14} {r['rc']:>3} {fmt(r['cpu'], '{:.1f}'):>7} {fmt(r['rss_mb'], '{:.0f}'):>7} "
              f"{fmt(r.get('repeated'), '{}'):>6}/{fmt(r.get('dropped'), '{}'):<6} "
              f"{fmt(r.get('p50')):>6} {fmt(r.get('p95')):>6} "
              f"{fmt(r['out_s'], '{:.1f}'):>6}/{fmt(r.get('in_s'), '{:.0f}'):<4} {fmt(r['end_lag'], '{:.1f}'):>6}  "
              f"{r['kept']:<5} s0={r.get('s0', '-')} {extra}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


def latencies(args):
    """Every output segment's latency, for the eye: the start-up catch-up and any drift show here."""
    for path in args.summaries:
        tool = {"lf": "livefilter", "ff": "ffmpeg"}[os.path.basename(os.path.dirname(path))]
        with open(path) as f:
            for r in json.load(f):
                print(f"{tool} #{r['stream']} latency by output segment (s):",
                      " ".join(f"{v:.2f}" for v in r.get("latency_all", [])) or "-")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--media", required=True, help="folder with a VOD index.m3u8 and its segments")
    s.add_argument("--log", required=True)
    s.add_argument("--port-file", required=True)
    s.add_argument("--window", type=int, default=6)
    s.add_argument("--preload", type=int, default=3)
    s.add_argument("--streams", type=int, default=1)
    w = sub.add_parser("watch")
    w.add_argument("--log", required=True)
    w.add_argument("--interval", type=float, default=0.05)
    w.add_argument("playlists", nargs="+")
    m = sub.add_parser("summarize")
    m.add_argument("--tool", choices=["lf", "ff"], required=True)
    m.add_argument("--media", required=True)
    m.add_argument("--run-dir", required=True)
    m.add_argument("--server-log", required=True)
    m.add_argument("--watch-log", required=True)
    m.add_argument("--streams", type=int, default=1)
    m.add_argument("--lag-limit", type=float, default=10.0)
    m.add_argument("--json")
    l = sub.add_parser("latencies")
    l.add_argument("summaries", nargs="+", help="summary.json files written by summarize --json (in run/lf, run/ff)")
    args = p.parse_args()
    {"serve": serve, "watch": watch, "summarize": summarize, "latencies": latencies}[args.cmd](args)


if __name__ == "__main__":
    main()

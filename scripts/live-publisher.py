#!/usr/bin/env python3
"""Helpers for scripts/bench-live.sh (python3 stdlib only).

  serve      replay a VOD HLS folder as a LIVE stream over loopback HTTP, on the wall clock;
             --block-reload: blocking playlist reload; --parts S: LL-HLS parts of about S seconds
  watch      poll output playlists and log when each segment first appears
  summarize  turn the logs of one run into the per-stream table
  latencies  print every output segment's latency (and input segment's reload delay) from summarize's JSON

Logs are tab-separated lines with wall times from time.time() (seconds, ms precision), so the
server, the watcher and the shell share one clock.
"""
import argparse
import bisect
import concurrent.futures
import http.server
import json
import math
import os
import re
import signal
import statistics
import subprocess
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

class Part:
    """One partial segment (LL-HLS, --parts): the bytes [start, end) of its parent segment's file."""

    def __init__(self, start, end, offset, duration, independent):
        # offset: where the part starts in its segment's media time (s); duration: its length (s).
        self.start, self.end, self.offset, self.duration, self.independent = start, end, offset, duration, independent


def probe_video_packets(path):
    """[(dts s, byte pos, keyframe, pts s)] of the video packets of one TS file, in file (decode)
    order. pos is where the packet's PES starts: the first byte of a 188-byte TS packet."""
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_packets",
                          "-show_entries", "packet=pts_time,dts_time,pos,flags", "-of", "json", path],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"live-publisher: ffprobe {path} failed: {out.stderr.strip()}")
    packets = []
    for p in json.loads(out.stdout).get("packets", []):
        t = p.get("dts_time", "N/A")
        t = p.get("pts_time", "N/A") if t == "N/A" else t
        if t == "N/A" or p.get("pos", "N/A") == "N/A":
            continue
        pts = p.get("pts_time", "N/A")
        packets.append((float(t), int(p["pos"]), "K" in p.get("flags", ""), float(pts) if pts != "N/A" else float(t)))
    return packets


def video_packets(media_dir, names):
    """probe_video_packets of every segment, run at start-up in parallel and cached in
    MEDIA/packets.json (keyed by size and mtime), so the next server starts at once."""
    cache_path = os.path.join(media_dir, "packets.json")
    try:
        with open(cache_path) as f:
            cache = json.load(f)
    except (OSError, ValueError):
        cache = {}
    stamp = {}
    for name in names:
        st = os.stat(os.path.join(media_dir, name))
        stamp[name] = f"v2:{st.st_size}:{st.st_mtime_ns}"  # v2: with pts
    todo = [n for n in names if cache.get(n, {}).get("stamp") != stamp[n]]
    if todo:
        print(f"live-publisher: ffprobe of {len(todo)} segments for the part boundaries…", file=sys.stderr)
        with concurrent.futures.ThreadPoolExecutor(max(1, os.cpu_count() or 1)) as pool:
            for name, packets in zip(todo, pool.map(lambda n: probe_video_packets(os.path.join(media_dir, n)), todo)):
                cache[name] = {"stamp": stamp[name], "video": packets}
        try:
            with open(cache_path + ".tmp", "w") as f:
                json.dump(cache, f)
            os.rename(cache_path + ".tmp", cache_path)
        except OSError:
            pass  # a read-only source: probe again next time
    return {n: [tuple(p) for p in cache[n]["video"]] for n in names}


def cut_parts(packets, size, duration, part_target):
    """Parts of one segment: a cut at the video packet whose decode time is nearest each multiple of
    part_target from the segment's first video packet, while that multiple is inside the segment
    (the last part takes the rest, so it may be shorter). Cuts follow decode order, so every part is
    whole frames and each byte goes to exactly one part: the parts, joined, are the segment file.
    Part 0 starts at byte 0, so it keeps the PAT/PMT that open the segment."""
    if not packets:
        return [Part(0, size, 0.0, duration, False)]
    t0 = packets[0][0]
    cuts = [(0, 0.0, packets[0][2])]  # (byte start, offset s, independent)
    last = 0  # index of the packet of the latest cut
    k = 1
    while k * part_target < duration - 1e-3:
        want = k * part_target
        best = min(range(last + 1, len(packets)), key=lambda j: abs(packets[j][0] - t0 - want), default=None)
        if best is not None and packets[best][0] - t0 < duration - 1e-3:
            if packets[best][1] % 188:
                sys.exit(f"live-publisher: video packet at byte {packets[best][1]} is not on a TS packet boundary")
            cuts.append((packets[best][1], packets[best][0] - t0, packets[best][2]))
            last = best
        k += 1
    parts = []
    for i, (start, offset, independent) in enumerate(cuts):
        end, end_offset = (cuts[i + 1][0], cuts[i + 1][1]) if i + 1 < len(cuts) else (size, duration)
        parts.append(Part(start, end, offset, end_offset - offset, independent))
    return parts


class LiveSource:
    """The schedule: segment n is published at t0 + the durations before it (t0 + n × 2 s here), one
    segment per segment duration, as a live encoder finishes them. t0 lies PRELOAD-1 segments before
    the server starts, so PRELOAD segments are out when a client comes: it joins a stream that has been
    running, as in production. With PRELOAD 3, ffmpeg (live_start_index -3) starts at segment 0 and
    works off a 6 s backlog; livefilter (--live-start edge) starts at segment 2, the newest
    (--live-start holdback starts it at segment 0 too).
    Preloaded segments are logged with their nominal (earlier) publish times.

    With parts (LL-HLS), segment n is produced during the segment duration before its publish time:
    its part k is published at (publish time - segment duration) + the part's end offset, so its last
    part comes out with the whole segment, and segments are published at the same times as without
    parts. What is out is a function of the wall clock only; the log shows those nominal times."""

    def __init__(self, media_dir, window, preload, log, block_reload=False, part_target=None):
        with open(os.path.join(media_dir, "index.m3u8")) as f:
            self.segments, _ = parse_media_playlist(f.read())
        if len(self.segments) < preload + 1:
            sys.exit(f"live-publisher: {media_dir}/index.m3u8 has {len(self.segments)} segments, need > {preload}")
        self.media_dir, self.window, self.log = media_dir, window, log
        self.target = math.ceil(max(d for d, _ in self.segments))
        # Blocking reload: LL-HLS needs it (a server with parts MUST offer CAN-BLOCK-RELOAD=YES).
        self.block = block_reload or part_target is not None
        self.parts = None
        self.part_target = part_target
        if part_target:
            names = [uri for _, uri in self.segments]
            packets = video_packets(media_dir, names)
            self.parts = [cut_parts(packets[uri], os.path.getsize(os.path.join(media_dir, uri)), d, part_target)
                          for d, uri in self.segments]
            # Each part's DURATION must be at most PART-TARGET: with a frame rate that does not divide
            # the asked part length, the nearest cut may be one frame late; raise the target to fit.
            longest = max(round(p.duration, 3) for parts in self.parts for p in parts)
            if longest > round(part_target, 3):
                print(f"live-publisher: the longest part is {longest:.3f} s: PART-TARGET raised from {part_target}",
                      file=sys.stderr)
                self.part_target = longest
        self.starts = [0.0]  # media time of each segment's start
        for d, _ in self.segments:
            self.starts.append(self.starts[-1] + d)
        now = time.time()  # after the probing: the clock starts when the server is ready
        t0 = now - self.starts[preload - 1]
        self.publish_at = [t0 + s for s in self.starts[:-1]]
        self.end_at = self.publish_at[-1]  # the last segment and EXT-X-ENDLIST go out together
        self.index_of = {uri: n for n, (_, uri) in enumerate(self.segments)}
        if self.parts:
            self.part_at = []
            for n, ((d, _), parts) in enumerate(zip(self.segments, self.parts)):
                times = [self.publish_at[n] - d + p.offset + p.duration for p in parts]
                times[-1] = self.publish_at[n]  # exactly: the last part and the segment come out together
                self.part_at.append(times)
        self.lock = threading.Lock()

    def published(self, now=None):
        """Number of segments out at wall time `now`."""
        now = time.time() if now is None else now
        return bisect.bisect_right(self.publish_at, now)

    def parts_out(self, n, now):
        """Number of parts of segment n out at wall time `now`."""
        return bisect.bisect_right(self.part_at[n], now) if n < len(self.segments) else 0

    def part_uri(self, n, k):
        return f"{os.path.splitext(self.segments[n][1])[0]}.part{k}.ts"

    def playlist(self, now=None):
        now = time.time() if now is None else now
        count = self.published(now)
        first = max(0, count - self.window)
        lines = ["#EXTM3U", "#EXT-X-VERSION:3", f"#EXT-X-TARGETDURATION:{self.target}"]
        # No LL-HLS tag raises the version: 3 is for the decimal EXTINF (rfc8216bis §7: 9 is for EXT-X-SKIP).
        if self.block:
            control = "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES"
            if self.parts:
                control += f",PART-HOLD-BACK={3 * self.part_target:.3f}"  # at least 2×, SHOULD 3× PART-TARGET
            lines.append(control)
        if self.parts:
            lines.append(f"#EXT-X-PART-INF:PART-TARGET={self.part_target:.3f}")
        lines.append(f"#EXT-X-MEDIA-SEQUENCE:{first}")
        if self.parts:
            # Parts are listed for the segments whose parts all end within three target durations of the
            # end of the playlist (rfc8216bis §6.2.2: older EXT-X-PART tags SHOULD be removed), always
            # whole segments so Part Indexes stay those of the parent; and for the segment in progress.
            in_progress = self.parts_out(count, now) if count < len(self.segments) else 0
            end = self.starts[count] + sum(p.duration for p in self.parts[count][:in_progress]) if in_progress else self.starts[count]
            keep_from = end - 3 * self.target - 1e-6
        for n in range(first, count):
            d, uri = self.segments[n]
            # The capture clock of a live encoder: a segment's first picture was taken its duration
            # before the segment came out. A player's position (playingDate) is then the source's clock.
            lines.append(self.program_date_time(n))
            if self.parts and self.starts[n] + self.parts[n][0].duration >= keep_from:
                lines += [self.part_line(n, k) for k in range(len(self.parts[n]))]
            lines += [f"#EXTINF:{d:.3f},", uri]
        # The encoder stops: its last playlist update carries the last segment and the end tag.
        if count == len(self.segments):
            lines.append("#EXT-X-ENDLIST")
        elif self.parts:
            if in_progress: lines.append(self.program_date_time(count))
            lines += [self.part_line(count, k) for k in range(in_progress)]
            lines.append(f'#EXT-X-PRELOAD-HINT:TYPE=PART,URI="{self.part_uri(count, in_progress)}"')
        return ("\n".join(lines) + "\n").encode()

    def program_date_time(self, n):
        seconds, ms = divmod(int(round((self.publish_at[n] - self.segments[n][0]) * 1000)), 1000)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{ms:03d}Z"
        return f"#EXT-X-PROGRAM-DATE-TIME:{stamp}"

    def part_line(self, n, k):
        p = self.parts[n][k]
        return (f'#EXT-X-PART:DURATION={p.duration:.3f},URI="{self.part_uri(n, k)}"'
                + (",INDEPENDENT=YES" if p.independent else ""))

    def write_log(self, *fields):
        with self.lock:
            self.log.write("\t".join(str(f) for f in fields) + "\n")
            self.log.flush()

    def announce(self):
        """Log each publish time as it happens (preloaded ones with their nominal, earlier time):
        `publish MSN TIME URI` for a segment, `part MSN INDEX TIME URI DURATION INDEPENDENT START END`
        for a part (START, END: its bytes in the segment's file)."""
        events = []
        for n, t in enumerate(self.publish_at):
            if self.parts:
                for k, tk in enumerate(self.part_at[n]):
                    p = self.parts[n][k]
                    events.append((tk, 0, ("part", n, k, f"{tk:.3f}", self.part_uri(n, k), f"{p.duration:.3f}",
                                           int(p.independent), p.start, p.end)))
            events.append((t, 1, ("publish", n, f"{t:.3f}", self.segments[n][1])))
        events.sort(key=lambda e: e[:2])
        for t, _, fields in events:
            sleep_until(t)
            self.write_log(*fields)
        self.write_log("endlist", f"{self.end_at:.3f}")

    def available_at(self, msn, part):
        """Wall time at which the playlist has what `_HLS_msn=msn[&_HLS_part=part]` asks for
        (rfc8216bis §6.2.5.2): segment msn complete; with a part, that part of it, where an index past
        the segment's last part means part 0 of the next segment. Past the end: the end."""
        if part is None or not self.parts:
            return self.publish_at[msn] if msn < len(self.segments) else self.end_at
        if msn < len(self.segments) and part >= len(self.parts[msn]):
            msn, part = msn + 1, 0
        return self.part_at[msn][part] if msn < len(self.segments) else self.end_at

    def too_far_ahead(self, msn, part, now):
        """Why a blocking request is refused with 400 (rfc8216bis §6.2.5.2), or None: _HLS_msn more than
        two beyond the last segment, or _HLS_part more than the Advance Part Limit (3 / PART-TARGET when
        that is under 1 s, else 3) beyond the last part."""
        count = self.published(now)
        if msn > count - 1 + 2:
            return f"_HLS_msn={msn} is more than two segments beyond the last one, {count - 1}"
        if part is None or not self.parts:
            return None
        in_progress = self.parts_out(count, now)
        last_msn, last_part = (count, in_progress - 1) if in_progress else (count - 1, len(self.parts[count - 1]) - 1)
        limit = 3 / self.part_target if self.part_target < 1 else 3
        ahead = part - last_part if msn == last_msn else part + 1 if msn > last_msn else 0
        if ahead > limit:
            return f"_HLS_part={part} of {msn} is more than {limit:g} parts beyond the last one ({last_msn}.{last_part})"
        return None


def sleep_until(t):
    while (delay := t - time.time()) > 0:
        time.sleep(delay)


def delivery_directives(query):
    """(_HLS_msn, _HLS_part) of a playlist request's query; ValueError (answered 400) for a value
    that is not a decimal integer, a directive given twice, or _HLS_part without _HLS_msn. _HLS_skip
    is ignored: the full playlist is served (no CAN-SKIP-UNTIL is offered)."""
    found = {}
    for pair in query.split("&") if query else []:
        name, _, value = pair.partition("=")
        if name not in ("_HLS_msn", "_HLS_part"):
            continue
        if name in found:
            raise ValueError(f"{name} appears twice")
        if not re.fullmatch(r"[0-9]+", value):
            raise ValueError(f"{name}={value} is not a decimal integer")
        found[name] = int(value)
    if "_HLS_part" in found and "_HLS_msn" not in found:
        raise ValueError("_HLS_part needs _HLS_msn")
    return found.get("_HLS_msn"), found.get("_HLS_part")


def make_handler(source, streams):
    hold_limit = 3 * source.target  # a blocked request is answered 503 after three target durations

    class Handler(http.server.BaseHTTPRequestHandler):
        # HTTP/1.1 keep-alive, as a CDN would offer; ffmpeg and livefilter both reuse connections.
        protocol_version = "HTTP/1.1"
        # Headers and body go out in separate writes: with Nagle on, the body waits for the client's
        # delayed ACK (40 ms on Linux), which would count as the tools' delay. Origins set TCP_NODELAY.
        disable_nagle_algorithm = True

        def log_message(self, *args):
            pass  # every request goes to our own log instead

        def do_GET(self):
            arrival = time.time()
            status, body, ctype = self.route(arrival)
            # `request ARRIVAL PATH?QUERY STATUS RESPONSE-START`: they differ for a held request.
            source.write_log("request", f"{arrival:.3f}", self.path, status, f"{time.time():.3f}")
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-cache, no-store")
            self.end_headers()
            self.wfile.write(body)

        def route(self, arrival):
            # /s<N>/live.m3u8 and /s<N>/<segment>: one schedule, a URL prefix per stream so the
            # request log tells the concurrent clients apart.
            path, _, query = self.path.partition("?")
            m = re.fullmatch(r"/s(\d+)/([^/]+)", path)
            if not m or not 1 <= int(m.group(1)) <= streams:
                return 404, b"not found\n", "text/plain"
            name = m.group(2)
            if name == "live.m3u8":
                return self.playlist(query, arrival)
            n = source.index_of.get(name)
            if n is not None:
                if n >= source.published():
                    return 404, b"not published\n", "text/plain"
                with open(os.path.join(source.media_dir, name), "rb") as f:
                    return 200, f.read(), "video/mp2t"
            pm = re.fullmatch(r"(.+)\.part(\d+)\.ts", name)
            n = source.index_of.get(pm.group(1) + ".ts") if pm and source.parts else None
            if n is None or int(pm.group(2)) >= len(source.parts[n]):
                return 404, b"not found\n", "text/plain"
            k = int(pm.group(2))
            # A part not out yet (the preload hint, or a little later) is held until it is, then sent
            # whole; one further off than a blocked playlist may wait is refused at once.
            at = source.part_at[n][k]
            if at - arrival > hold_limit:
                return 404, b"not published\n", "text/plain"
            sleep_until(at)
            p = source.parts[n][k]
            with open(os.path.join(source.media_dir, source.segments[n][1]), "rb") as f:
                f.seek(p.start)
                return 200, f.read(p.end - p.start), "video/mp2t"

        def playlist(self, query, arrival):
            ctype = "application/vnd.apple.mpegurl"
            if not source.block:
                return 200, source.playlist(), ctype  # a plain server ignores the directives
            try:
                msn, part = delivery_directives(query)
            except ValueError as e:
                return 400, f"{e}\n".encode(), "text/plain"
            if msn is None or arrival >= source.end_at:
                return 200, source.playlist(), ctype  # with EXT-X-ENDLIST the directives are ignored
            refusal = source.too_far_ahead(msn, part, arrival)
            if refusal:
                return 400, f"{refusal}\n".encode(), "text/plain"
            at = source.available_at(msn, part)
            if at > arrival + hold_limit:
                sleep_until(arrival + hold_limit)
                return 503, b"not available within three target durations\n", "text/plain"
            sleep_until(at)
            return 200, source.playlist(), ctype

    return Handler


def serve(args):
    if args.parts is not None and not 0 < args.parts < 60:
        sys.exit(f"live-publisher: --parts {args.parts}: a part length in seconds, above 0")
    log = open(args.log, "w")
    # Bind first (port 0 = a free port), then start the clock, so no time is lost before clients come.
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), None)
    source = LiveSource(args.media, args.window, args.preload, log, args.block_reload, args.parts)
    mode = "ll" if source.parts else "block" if source.block else "plain"
    source.write_log("mode", mode, f"{source.part_target:.3f}" if source.parts else "-")
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
    part_publish = {(int(r[1]), int(r[2])): float(r[3]) for r in server if r[0] == "part"}
    # What each input URI is: (segment MSN, None) or (segment MSN, part index).
    item_of = {r[3]: (int(r[1]), None) for r in server if r[0] == "publish"}
    item_of.update({r[4]: (int(r[1]), int(r[2])) for r in server if r[0] == "part"})
    mode = next((r[1] for r in server if r[0] == "mode"), "plain")
    durations = {}
    with open(os.path.join(args.media, "index.m3u8")) as f:
        for n, (d, _) in enumerate(parse_media_playlist(f.read())[0]):
            durations[n] = d
    source_end = max(publish.values())  # the last segment and EXT-X-ENDLIST go out together
    watched = read_tsv(args.watch_log)
    rows = []
    for stream in range(1, args.streams + 1):
        row = {"stream": stream, "input": mode}
        # This client's requests by arrival: (arrival, response start, name, status). The response
        # starts later than the arrival only for a held request (a blocked reload, a hinted part).
        requests = sorted((float(r[1]), float(r[4]) if len(r) > 4 else float(r[1]), m.group(1), int(r[3]))
                          for r in server if r[0] == "request"
                          for m in [re.fullmatch(rf"/s{stream}/([^/?]+)(?:\?.*)?", r[2])] if m)
        media = [(start, item_of[name]) for _, start, name, status in requests if status == 200 and name in item_of]
        # s0: the first input segment this client fetched (whole or a part of it), i.e. where it
        # joined the live stream.
        fetched = [n for _, (n, _) in media]
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
            # Reload delay of segment n: its publish time to the response start of the client's first
            # request for it, or, if it fetched parts of n, for the first of those (from that part's
            # publish time). Part delay: each part's publish time to the response start of its first
            # request. Steady state as for the latency: segments from s0 + 5 on, published after the
            # client's first request.
            joined = requests[0][0]
            reload, part_delay = {}, {}
            for start, (n, k) in media:
                published = publish[n] if k is None else part_publish[(n, k)]
                if n < s0 + 5 or published < joined:
                    continue
                reload.setdefault(n, start - published)
                if k is not None:
                    part_delay.setdefault((n, k), start - published)
            row["reload"] = [[n, round(v, 3)] for n, v in sorted(reload.items())]
            row["reload_p50"] = statistics.median(reload.values()) if reload else None
            row["reload_p95"] = percentile(reload.values(), 95) if reload else None
            row["part_delay"] = [[n, k, round(v, 3)] for (n, k), v in sorted(part_delay.items())]
            row["part_p50"] = statistics.median(part_delay.values()) if part_delay else None
            row["part_p95"] = percentile(part_delay.values(), 95) if part_delay else None
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
    pair = lambda a, b: "-" if a is None else f"{a:.2f}/{b:.2f}"
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
              f"{pair(r.get('reload_p50'), r.get('reload_p95')):>11} {pair(r.get('part_p50'), r.get('part_p95')):>11} "
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
                if r.get("reload"):
                    print(f"{tool} #{r['stream']} reload delay by input segment (MSN:s):",
                          " ".join(f"{n}:{v:.2f}" for n, v in r["reload"]))


def decode_latency(args):
    """Input part published -> its pictures decoded, from a livefilter --report of an LL-HLS input
    (`live_decoding.decoded_at`: [input pts s, Unix time] per picture) and this server's log.
    A picture can be decoded once it and every picture shown before it are published: its
    availability is the latest publish time of the parts holding those pictures (a P picture at a
    part's end is shown after B pictures of the next part, so it is available with that part). The
    latency is decoded - available; "within a part" = decoded before the next part came out."""
    server = read_tsv(args.server_log)
    parts = {}  # segment uri -> [(start byte, end byte, publish time)]
    publishes = []
    for r in server:
        if r[0] == "part":
            if len(r) < 9:
                sys.exit("live-publisher: the server log has no part byte ranges (an older log)")
            n, k = int(r[1]), int(r[2])
            parts.setdefault(n, []).append((int(r[7]), int(r[8]), float(r[3])))
            publishes.append(float(r[3]))
    if not parts:
        sys.exit("live-publisher: the server log lists no parts (not an LL-HLS run)")
    publishes.sort()
    with open(os.path.join(args.media, "index.m3u8")) as f:
        names = [uri for _, uri in parse_media_playlist(f.read())[0]]
    packets = video_packets(args.media, names)
    published = {}  # pts (ms) -> publish time of the part holding it
    for n, name in enumerate(names):
        for _, pos, _, pts in packets[name]:
            for start, end, t in parts.get(n, []):
                if start <= pos < end:
                    published[round(pts * 1000)] = t
    available, latest = {}, 0.0
    for key in sorted(published):
        latest = max(latest, published[key])
        available[key] = latest
    with open(args.report) as f:
        decoded = (json.load(f).get("live_decoding") or {}).get("decoded_at") or []
    if not decoded:
        sys.exit(f"live-publisher: {args.report} has no live_decoding.decoded_at")
    first = min(at for _, at in decoded)
    lat, within = [], 0
    for pts, at in decoded:
        a = available.get(round(pts * 1000))
        # Steady state: pictures published --skip s after the first was decoded (not the join's backlog).
        if a is None or a < first + args.skip:
            continue
        lat.append(at - a)
        following = publishes[bisect.bisect_right(publishes, a)] if bisect.bisect_right(publishes, a) < len(publishes) else math.inf
        within += at < following
    out = {"pictures": len(lat), "p50": percentile(lat, 50) if lat else None, "p95": percentile(lat, 95) if lat else None,
           "max": max(lat) if lat else None, "within_a_part": within / len(lat) if lat else None}
    print(json.dumps(out))


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
    s.add_argument("--block-reload", action="store_true",
                   help="offer blocking playlist reload (CAN-BLOCK-RELOAD=YES, _HLS_msn/_HLS_part held)")
    s.add_argument("--parts", type=float, metavar="SECONDS",
                   help="LL-HLS: publish each segment as parts of about SECONDS (e.g. 0.5); implies --block-reload")
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
    d = sub.add_parser("decode-latency", help="input part published -> its pictures decoded (LL-HLS input, livefilter --report)")
    d.add_argument("--media", required=True)
    d.add_argument("--server-log", required=True)
    d.add_argument("--report", required=True)
    d.add_argument("--skip", type=float, default=4.0, help="seconds after the first picture decoded left out (the join)")
    args = p.parse_args()
    {"serve": serve, "watch": watch, "summarize": summarize, "latencies": latencies,
     "decode-latency": decode_latency}[args.cmd](args)


if __name__ == "__main__":
    main()

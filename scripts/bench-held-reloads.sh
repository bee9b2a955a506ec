#!/usr/bin/env bash
# What 200 players holding blocking playlist reloads cost `livefilter serve`: a scripted writer
# publishes a low-latency rendition (1 s segments of four 0.25 s parts, each file and then the
# playlist renamed into place) while N clients each hold `_HLS_msn/_HLS_part` for the next part and,
# once answered, ask for the one after (as an LL-HLS player does). Prints the server's RSS, threads
# and CPU, idle (writer only) and with the clients, and how long answers took after publication.
# Not a test: a measurement to repeat by hand (docs/hls.md, "Serving low-latency HLS").
#
#   scripts/bench-held-reloads.sh [CLIENTS=200] [SECONDS=20]
# Needs a release build (swift build -c release) and python3.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
clients="${1:-200}"
seconds="${2:-20}"
binary="${LIVEFILTER_BIN:-.build/release/livefilter}"
[[ -x "$binary" ]] || { echo "no $binary: run swift build -c release first" >&2; exit 1; }

work="$(mktemp -d /tmp/bench-held.XXXXXX)"
server_pid=""
cleanup() { [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

"$binary" serve "$work" --listen 127.0.0.1:0 --max-connections 4096 --max-connections-per-client 4096 2>"$work/.serve.log" &
server_pid=$!
port=""
for _ in $(seq 100); do
    port="$(grep -o 'serving .* at http://127.0.0.1:[0-9]*' "$work/.serve.log" 2>/dev/null | grep -o '[0-9]*$' || true)"
    [[ -n "$port" ]] && break
    sleep 0.1
done
[[ -n "$port" ]] || { echo "the server did not start:" >&2; cat "$work/.serve.log" >&2; exit 1; }

python3 - "$work" "$port" "$server_pid" "$clients" "$seconds" <<'PY'
import asyncio, os, sys, threading, time

folder, port, pid, clients, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
PARTS, PART = 4, 0.25
published = {}  # (msn, part) -> monotonic instant of the playlist that lists it
state = {"msn": 0, "part": 0, "stop": False}

def publish(name, data):
    tmp = os.path.join(folder, "." + name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, os.path.join(folder, name))

def playlist():
    msn, part = state["msn"], state["part"]
    first = max(0, msn - 12)
    lines = ["#EXTM3U", "#EXT-X-VERSION:9", "#EXT-X-TARGETDURATION:1",
             "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=6,PART-HOLD-BACK=0.75",
             "#EXT-X-PART-INF:PART-TARGET=0.25", f"#EXT-X-MEDIA-SEQUENCE:{first}", '#EXT-X-MAP:URI="init.mp4"']
    for s in range(first, msn):
        lines += [f'#EXT-X-PART:DURATION=0.25,URI="seg{s}_p{p}.m4s"' for p in range(PARTS)]
        lines += ["#EXTINF:1.00000,", f"seg{s}.m4s"]
    lines += [f'#EXT-X-PART:DURATION=0.25,URI="seg{msn}_p{p}.m4s"' for p in range(part)]
    lines.append(f'#EXT-X-PRELOAD-HINT:TYPE=PART,URI="seg{msn}_p{part}.m4s"')
    return ("\n".join(lines) + "\n").encode()

def writer():
    publish("init.mp4", b"ftyp+moov")
    start = time.monotonic()
    n = 0
    while not state["stop"]:
        msn, part = state["msn"], state["part"]
        publish(f"seg{msn}_p{part}.m4s", os.urandom(20_000))
        state["part"] += 1
        if state["part"] == PARTS:
            publish(f"seg{msn}.m4s", os.urandom(80_000))
            state["msn"], state["part"] = msn + 1, 0
        publish("index.m3u8", playlist())
        published[(msn, part)] = time.monotonic()
        n += 1
        time.sleep(max(0, start + n * PART - time.monotonic()))

def proc():
    status = dict(l.split(":", 1) for l in open(f"/proc/{pid}/status").read().splitlines() if ":" in l)
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime + stime
    return int(status["VmRSS"].split()[0]), int(status["VmHWM"].split()[0]), int(status["Threads"]), ticks / os.sysconf("SC_CLK_TCK")

latencies, answered, errors = [], [0], [0]

async def player():
    reader, writer_ = await asyncio.open_connection("127.0.0.1", port)
    while not state["stop"]:
        msn, part = state["msn"], state["part"]  # the next part: not published yet
        writer_.write(f"GET /index.m3u8?_HLS_msn={msn}&_HLS_part={part} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        await writer_.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        length = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0].split(b":")[1])
        await reader.readexactly(length)
        now = time.monotonic()
        if not head.startswith(b"HTTP/1.1 200"):
            errors[0] += 0 if state["stop"] else 1  # at the end the writer stops: held requests get 503
            continue
        answered[0] += 1
        if (msn, part) in published:
            latencies.append(now - published[(msn, part)])
    writer_.close()

async def main():
    threading.Thread(target=writer, daemon=True).start()
    await asyncio.sleep(3)
    r0, _, t0, c0 = proc()
    await asyncio.sleep(seconds / 2)
    r1, h1, t1, c1 = proc()
    idle_cpu = (c1 - c0) / (seconds / 2)
    tasks = [asyncio.create_task(player()) for _ in range(clients)]
    await asyncio.sleep(2)  # connected and held
    r2, _, t2, c2 = proc()
    start = time.monotonic()
    await asyncio.sleep(seconds)
    r3, h3, t3, c3 = proc()
    held_cpu = (c3 - c2) / (time.monotonic() - start)
    state["stop"] = True
    await asyncio.gather(*tasks, return_exceptions=True)
    latencies.sort()
    q = lambda f: latencies[min(len(latencies) - 1, int(f * len(latencies)))] * 1000 if latencies else float("nan")
    print(f"writer only:   RSS {r1 / 1024:.1f} MiB, threads {t1}, CPU {idle_cpu * 100:.1f}% of a core")
    print(f"{clients} players: RSS {r3 / 1024:.1f} MiB (peak {h3 / 1024:.1f}), threads {t3}, CPU {held_cpu * 100:.1f}% of a core")
    print(f"answers: {answered[0]} in {seconds:.0f} s ({answered[0] / seconds:.0f}/s), {errors[0]} not 200; "
          f"after publication: median {q(0.5):.1f} ms, 99th {q(0.99):.1f} ms, max {q(1.0):.1f} ms")

asyncio.run(main())
PY

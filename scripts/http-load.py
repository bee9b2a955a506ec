#!/usr/bin/env python3
"""Players polling a live HLS playlist over keep-alive connections, as a load on `livefilter serve`.

usage: http-load.py BASE_URL PLAYLIST CLIENTS SECONDS

Each client keeps one HTTP/1.1 connection (reconnecting only if the server closes it), asks for the
playlist about once a second with If-None-Match, and fetches the newest segment it has not fetched.
Prints one JSON line: requests, errors (with the first few), 200/206/304 counts, bytes, reconnects.
Loopback only; standard library only (asyncio streams).
"""
import asyncio, json, sys, time
from urllib.parse import urlsplit

base, playlist, clients, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
host, port = urlsplit(base).hostname, urlsplit(base).port
stats = {"clients": clients, "requests": 0, "errors": 0, "status": {}, "bytes": 0, "reconnects": 0, "first_errors": []}


async def read_response(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return status, headers, body


async def client(index, deadline):
    reader = writer = None
    etag, fetched = None, set()
    await asyncio.sleep(index * 0.005)
    while time.monotonic() < deadline:
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection(host, port)
            extra = f"If-None-Match: {etag}\r\n" if etag else ""
            writer.write(f"GET /{playlist} HTTP/1.1\r\nHost: {host}\r\n{extra}\r\n".encode())
            status, headers, body = await asyncio.wait_for(read_response(reader), 10)
            stats["requests"] += 1
            stats["status"][str(status)] = stats["status"].get(str(status), 0) + 1
            if status == 200:
                etag = headers.get("etag")
                uris = [l for l in body.decode().splitlines() if l and not l.startswith("#")]
                for uri in uris[-1:]:
                    if uri in fetched:
                        continue
                    writer.write(f"GET /{uri} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
                    s, _, segment = await asyncio.wait_for(read_response(reader), 10)
                    stats["requests"] += 1
                    stats["status"][str(s)] = stats["status"].get(str(s), 0) + 1
                    stats["bytes"] += len(segment)
                    # A segment can leave the live window between the playlist and the fetch.
                    if s not in (200, 404):
                        raise RuntimeError(f"segment {uri}: {s}")
                    fetched.add(uri)
            elif status != 304:
                raise RuntimeError(f"playlist: {status}")
            if headers.get("connection", "").lower() == "close":
                writer.close(); writer = None; stats["reconnects"] += 1
        except Exception as error:  # noqa: BLE001 - every failure counts
            stats["errors"] += 1
            if len(stats["first_errors"]) < 5:
                stats["first_errors"].append(f"client {index}: {type(error).__name__}: {error}")
            if writer is not None:
                writer.close()
            writer = None
            stats["reconnects"] += 1
        await asyncio.sleep(1.0)
    if writer is not None:
        writer.close()


async def main():
    deadline = time.monotonic() + seconds
    await asyncio.gather(*(client(i, deadline) for i in range(clients)))
    print(json.dumps(stats))


asyncio.run(main())

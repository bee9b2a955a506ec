#!/usr/bin/env python3
"""Timed ID3 made by tools nobody here wrote, for Tests/BroadcastTests and for checking what FFmpeg
does with it: ID3v2.4 tags written by mutagen (PyPI), carried in MPEG-TS as Apple's "Timed Metadata
for HTTP Live Streaming" says (a PES of stream_id 0xBD with a PTS and data_alignment_indicator on a
stream of type 0x15, a metadata_descriptor 'ID3 ' on it and a metadata_pointer_descriptor in the
program info).

    python3 scripts/timed-id3-oracle.py tags                 ->  [{"name": …, "hex": …, "frames": {…}}, …]
    python3 scripts/timed-id3-oracle.py ts OUT.ts            ->  writes a TS of those tags, one per second
                                                                 from PTS 126000; prints [{"pts": …, "hex": …}, …]
    python3 scripts/timed-id3-oracle.py read HEX …           ->  [{frame id: text or owner/data hex}, …] (mutagen's reading)

The TS framing below is written from the two specifications (ISO/IEC 13818-1 §2.4.3, §2.6.58-61,
Apple's timed metadata document), not from livefilter's code.
"""
import json
import os
import sys
import tempfile

from mutagen.id3 import ID3, PRIV, TIT2, TPE1, TXXX


def tag_bytes(frames):
    tag = ID3()
    for frame in frames:
        tag.add(frame)
    with tempfile.NamedTemporaryFile(delete=False) as f:
        path = f.name
    try:
        tag.save(path, v2_version=4, padding=lambda info: 0)
        with open(path, "rb") as f:
            return f.read()
    finally:
        os.unlink(path)


def tags():
    return [
        ("now-playing", tag_bytes([TIT2(encoding=3, text="Morning Show"), TPE1(encoding=3, text="Radio Ü")])),
        ("beacon", tag_bytes([TXXX(encoding=3, desc="ad-beacon", text="https://ads.example/imp?id=42")])),
        ("priv", tag_bytes([PRIV(owner="com.example.cue", data=bytes(range(32)))])),
        ("long", tag_bytes([TXXX(encoding=3, desc="payload", text="x" * 600)])),
    ]


def read(data):
    reading = {}
    with tempfile.NamedTemporaryFile(delete=False) as f:
        f.write(data)
        path = f.name
    try:
        for frame in ID3(path).values():
            if frame.FrameID == "PRIV":
                reading[f"PRIV:{frame.owner}"] = frame.data.hex()
            elif frame.FrameID == "TXXX":
                reading[f"TXXX:{frame.desc}"] = str(frame.text[0])
            else:
                reading[frame.FrameID] = str(frame.text[0])
    finally:
        os.unlink(path)
    return reading


def crc32(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte << 24
        for _ in range(8):
            crc = (crc << 1 ^ 0x04C11DB7 if crc & 0x80000000 else crc << 1) & 0xFFFFFFFF
    return crc


def section_packet(pid, section, cc):
    payload = bytes([0]) + section
    assert len(payload) <= 184
    return bytes([0x47, 0x40 | pid >> 8, pid & 0xFF, 0x10 | cc]) + payload + b"\xff" * (184 - len(payload))


def psi(table_id, extension, body):
    length = 5 + len(body) + 4
    head = bytes([table_id, 0xB0 | length >> 8, length & 0xFF, extension >> 8, extension & 0xFF, 0xC1, 0, 0])
    section = head + body
    return section + crc32(section).to_bytes(4, "big")


ID3_PID, PMT_PID = 0x102, 0x1000
METADATA_IDS = b"\xff\xff" + b"ID3 " + b"\xff" + b"ID3 " + b"\x00"


def pmt():
    pointer = METADATA_IDS + bytes([0x1F, 0x00, 0x01])  # no locator record, carriage 0 (this TS), program 1
    descriptor = METADATA_IDS + bytes([0x0F])           # no decoder config, no DSM-CC
    pointer, descriptor = bytes([0x25, len(pointer)]) + pointer, bytes([0x26, len(descriptor)]) + descriptor
    body = bytes([0xE0 | ID3_PID >> 8, ID3_PID & 0xFF, 0xF0, len(pointer)]) + pointer
    body += bytes([0x15, 0xE0 | ID3_PID >> 8, ID3_PID & 0xFF, 0xF0, len(descriptor)]) + descriptor
    return psi(0x02, 1, body)


def pes(pts, data):
    pts_bytes = bytes([0x21 | (pts >> 29) & 0x0E, (pts >> 22) & 0xFF, 0x01 | (pts >> 14) & 0xFE,
                       (pts >> 7) & 0xFF, 0x01 | (pts << 1) & 0xFE])
    header = bytes([0x84, 0x80, 5]) + pts_bytes  # '10', data_alignment_indicator; PTS only
    body = header + data
    return b"\x00\x00\x01\xbd" + len(body).to_bytes(2, "big") + body


def pes_packets(pid, data, cc):
    out = []
    first = True
    while data:
        room = 184
        chunk = data[:room]
        if len(chunk) < room:  # the last packet: stuffing in an adaptation field
            fill = room - len(chunk) - 1
            adaptation = bytes([fill]) + (bytes([0x00]) + b"\xff" * (fill - 1) if fill > 0 else b"")
            header = bytes([0x47, (0x40 if first else 0) | pid >> 8, pid & 0xFF, 0x30 | cc])
            out.append(header + adaptation + chunk)
        else:
            out.append(bytes([0x47, (0x40 if first else 0) | pid >> 8, pid & 0xFF, 0x10 | cc]) + chunk)
        data = data[len(chunk):]
        first = False
        cc = (cc + 1) & 15
    return out, cc


def write_ts(path):
    pat = psi(0x00, 1, bytes([0, 1, 0xE0 | PMT_PID >> 8, PMT_PID & 0xFF]))
    packets, cc, made = [], 0, []
    for index, (name, data) in enumerate(tags()):
        pts = 126000 + 90000 * index
        packets += [section_packet(0, pat, index & 15), section_packet(PMT_PID, pmt(), index & 15)]
        more, cc = pes_packets(ID3_PID, pes(pts, data), cc)
        packets += more
        made.append({"name": name, "pts": pts, "hex": data.hex()})
    with open(path, "wb") as f:
        f.write(b"".join(packets))
    return made


if __name__ == "__main__":
    command = sys.argv[1:2]
    if command == ["tags"]:
        print(json.dumps([{"name": n, "hex": d.hex(), "frames": read(d)} for n, d in tags()]))
    elif command == ["ts"] and len(sys.argv) == 3:
        print(json.dumps(write_ts(sys.argv[2])))
    elif command == ["read"]:
        print(json.dumps([read(bytes.fromhex(h)) for h in sys.argv[2:]]))
    else:
        sys.exit(__doc__)

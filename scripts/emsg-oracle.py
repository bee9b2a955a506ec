#!/usr/bin/env python3
"""Event message boxes and fragmented MP4 as tools nobody here wrote see them, for
Tests/BroadcastTests: the `emsg` package (PyPI, an ISO BMFF emsg generator) builds a version-1 box
from its fields; pymp4 (PyPI) reads a file's top-level boxes.

    python3 scripts/emsg-oracle.py build JSON     ->  ["hex of the box the emsg package builds", …]
        JSON: [{"scheme": …, "value": …, "timescale": …, "presentation_time": …,
                "event_duration": …, "id": …, "message": "hex"}, …]
    python3 scripts/emsg-oracle.py boxes FILE     ->  [{"type": "moof", "offset": …, "size": …}, …]  (an emsg's
                                                      bytes as "hex", a sidx's "referenced_sizes")
"""
import json
import sys

from emsg.box import emsg_box
from pymp4.parser import Box


class RawMessage(bytes):
    """The emsg package takes message_data as text and encodes it as UTF-8; binary data (an ID3
    tag, a SCTE-35 section) goes through as it is."""

    def encode(self, *_):
        return bytes(self)


def build(specs):
    out = []
    for spec in specs:
        builder = emsg_box.Builder(value=spec["value"], id=spec["id"], message_data=RawMessage(bytes.fromhex(spec["message"])), version=1)
        builder.set_scheme_id_uri(spec["scheme"]).set_timescale(spec["timescale"])
        builder.set_presentation_time(spec["presentation_time"]).set_event_duration(spec["event_duration"])
        out.append(builder.build().hex())
    return out


def boxes(path):
    """Top-level boxes by their headers; pymp4 parses each of the kinds the tests look into (it
    mis-sizes some children of FFmpeg's empty moov, so a moov is only walked over)."""
    found = []
    data = open(path, "rb").read()
    offset = 0
    while offset + 8 <= len(data):
        size = int.from_bytes(data[offset:offset + 4], "big")
        kind = data[offset + 4:offset + 8].decode("latin-1")
        if size == 1:
            size = int.from_bytes(data[offset + 8:offset + 16], "big")
        elif size == 0:
            size = len(data) - offset
        if size < 8 or offset + size > len(data):
            raise SystemExit(f"box '{kind}' at {offset}: size {size} runs past the file's {len(data)} bytes")
        entry = {"type": kind, "offset": offset, "size": size}
        if kind in ("styp", "sidx", "moof", "mdat"):
            box = Box.parse(data[offset:offset + size])
            if box.type != kind.encode():
                raise SystemExit(f"pymp4 reads the '{kind}' at {offset} as '{box.type}'")
            if kind == "sidx":
                entry["referenced_sizes"] = [r.referenced_size for r in box.references]
        if kind == "emsg":
            entry["hex"] = data[offset:offset + size].hex()
        found.append(entry)
        offset += size
    if offset != len(data):
        raise SystemExit(f"{len(data) - offset} bytes after the last box")
    return found


if __name__ == "__main__":
    if sys.argv[1:2] == ["build"] and len(sys.argv) == 3:
        print(json.dumps(build(json.loads(sys.argv[2]))))
    elif sys.argv[1:2] == ["boxes"] and len(sys.argv) == 3:
        print(json.dumps(boxes(sys.argv[2])))
    else:
        sys.exit(__doc__)

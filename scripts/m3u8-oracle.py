#!/usr/bin/env python3
"""An independent reading of media playlists, for Tests/HLSTests/M3U8OracleTests: prints, as one JSON
document, what the `m3u8` package (PyPI, globocom/m3u8; installed by `LIVEFILTER_PLAYERS=1
scripts/install-deps.sh`) makes of each playlist named on the command line.

    python3 scripts/m3u8-oracle.py a.m3u8 b.m3u8 …   ->   {"a.m3u8": {...}, "b.m3u8": {...}}

Values are m3u8's, as it reads them; the test knows its known departures from rfc8216bis (it leaves
quotes on a part's BYTERANGE, gives EXT-X-BITRATE to the next segment only, does not count
EXT-X-SKIP in a segment's media sequence, and keeps the parts after the last segment as a segment
without URI).
"""
import json
import sys

import m3u8


def key(k):
    if k is None:
        return None
    return {"method": k.method, "uri": k.uri, "iv": k.iv, "keyformat": k.keyformat,
            "keyformatversions": k.keyformatversions}


def unquote(text):
    return text.strip('"') if isinstance(text, str) else text


def part(p):
    return {"uri": p.uri, "duration": p.duration, "byterange": unquote(p.byterange),
            "independent": p.independent == "YES", "gap": p.gap == "YES"}


def daterange(d):
    return {"id": d.id, "class": d.class_, "start_date": d.start_date, "end_date": d.end_date,
            "duration": d.duration, "planned_duration": d.planned_duration, "scte35_cmd": d.scte35_cmd,
            "scte35_out": d.scte35_out, "scte35_in": d.scte35_in, "end_on_next": d.end_on_next == "YES",
            "client": {k: str(v) for k, v in sorted(d.x_client_attrs)}}


def segment(s):
    return {"uri": s.uri, "duration": s.duration, "byterange": s.byterange, "discontinuity": bool(s.discontinuity),
            "gap": bool(s.gap_tag), "key": key(s.key), "parts": [part(p) for p in s.parts],
            "program_date_time": s.program_date_time.isoformat() if s.program_date_time else None,
            "dateranges": [daterange(d) for d in s.dateranges],
            "cue_out_start": bool(s.cue_out_start), "cue_out": bool(s.cue_out), "cue_in": bool(s.cue_in),
            "scte35_duration": s.scte35_duration}


def playlist(path):
    with open(path, encoding="utf-8") as f:
        p = m3u8.loads(f.read())
    control = p.server_control
    hint = p.preload_hint
    return {
        "target_duration": p.target_duration,
        "media_sequence": p.media_sequence or 0,
        "discontinuity_sequence": p.discontinuity_sequence or 0,
        "version": p.version,
        "endlist": bool(p.is_endlist),
        "part_target": p.part_inf.part_target if p.part_inf else None,
        "server_control": None if control is None or not vars(control) else {
            "can_block_reload": control.can_block_reload == "YES",
            "can_skip_until": control.can_skip_until,
            "can_skip_dateranges": control.can_skip_dateranges == "YES",
            "hold_back": control.hold_back,
            "part_hold_back": control.part_hold_back,
        },
        "skipped_segments": p.skip.skipped_segments if p.skip else None,
        "preload_hint": None if hint is None else {
            "type": hint.hint_type, "uri": hint.uri,
            "byterange_start": hint.byterange_start, "byterange_length": hint.byterange_length,
        },
        "rendition_reports": [{"uri": r.uri, "last_msn": r.last_msn, "last_part": r.last_part} for r in p.rendition_reports],
        "map": None if not p.segment_map else {"uri": p.segment_map[0].uri, "byterange": unquote(p.segment_map[0].byterange)},
        "segments": [segment(s) for s in p.segments],
    }


if __name__ == "__main__":
    json.dump({path: playlist(path) for path in sys.argv[1:]}, sys.stdout)

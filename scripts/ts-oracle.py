#!/usr/bin/env python3
"""Reads an MPEG-TS file the way the SCTE-35 tests need, with tools nobody here wrote where one
exists: threefive's Stream (PyPI) finds and decodes the SCTE-35 sections by itself (its own PAT/PMT
reading, stream type 0x86); the rest is a plain walk of the packets written from ISO/IEC 13818-1
(§2.4.3.2-3, §2.4.4), independent of livefilter's Swift code.

    python3 scripts/ts-oracle.py FILE.ts   ->  {"cues": [{"hex", "pid", "pts_adjustment", "splice_time"}],
                                                 "placements": [{"pid", "next_video_pts", "next_video_random_access"}],
                                                 "cc_errors": [...], "pmts": [...distinct PMTs...], "pmt_count": n,
                                                 "video_pes": n, "pes_stream_ids": {"pid": stream_id of its first PES}}

A placement is a SCTE-35 section's first packet and the video PES that follows it; a continuity
error is a packet with payload whose continuity_counter is not the last one + 1 (mod 16) on its PID.
"""
import json
import sys

from threefive import Stream

VIDEO_TYPES = {0x01, 0x02, 0x10, 0x1B, 0x1F, 0x20, 0x24, 0x42, 0xD1, 0xEA}


def pid(packet_data):
    value = packet_data.pid
    return int(value, 16) if isinstance(value, str) else value


def cues(path):
    found = []
    with open(path, "rb") as f:
        for cue in Stream(f).decode_next():
            data = cue.bites
            info, command = cue.info_section, cue.command
            adjustment = round(info.pts_adjustment * 90000)
            time = getattr(command, "pts_time", None)
            found.append({
                "hex": "0x" + data.hex().upper(),
                "pid": pid(cue.packet_data),
                "pts_adjustment": adjustment,
                "splice_time": None if time is None else (round(time * 90000) + adjustment) % (1 << 33),
            })
    return found


def walk(path):
    data = open(path, "rb").read()
    pmt_pid, video, scte = None, set(), set()
    last_cc, cc_errors, pmts, pmt_count, video_pes = {}, [], [], 0, 0
    waiting, placements, stream_ids = [], [], {}
    for offset in range(0, len(data) - 187, 188):
        p = data[offset:offset + 188]
        if p[0] != 0x47:
            cc_errors.append({"offset": offset, "error": "no sync byte"})
            continue
        pid = (p[1] & 0x1F) << 8 | p[2]
        pusi = bool(p[1] & 0x40)
        control = p[3] >> 4 & 3
        start = 5 + p[4] if control & 2 else 4
        has_payload = bool(control & 1) and start < 188
        discontinuity = control & 2 and p[4] > 0 and p[5] & 0x80
        if has_payload and pid != 0x1FFF:
            cc = p[3] & 0x0F
            if pid in last_cc and not discontinuity and cc != (last_cc[pid] + 1) & 0x0F:
                cc_errors.append({"offset": offset, "pid": pid, "expected": (last_cc[pid] + 1) & 0x0F, "got": cc})
            last_cc[pid] = cc
        if not (has_payload and pusi):
            continue
        if pid == 0:
            s = start + 1 + p[start]
            length = (p[s + 1] & 0x0F) << 8 | p[s + 2]
            for e in range(s + 8, s + 3 + length - 4, 4):
                if p[e] or p[e + 1]:
                    pmt_pid = (p[e + 2] & 0x1F) << 8 | p[e + 3]
                    break
        elif pid == pmt_pid:
            pmt_count += 1
            s = start + 1 + p[start]
            end = s + 3 + ((p[s + 1] & 0x0F) << 8 | p[s + 2]) - 4
            info = (p[s + 10] & 0x0F) << 8 | p[s + 11]
            table = {"pcr_pid": (p[s + 8] & 0x1F) << 8 | p[s + 9],
                     "program_descriptors": p[s + 12:s + 12 + info].hex(), "streams": []}
            e = s + 12 + info
            while e < end:
                es_info = (p[e + 3] & 0x0F) << 8 | p[e + 4]
                stream = {"type": p[e], "pid": (p[e + 1] & 0x1F) << 8 | p[e + 2], "descriptors": p[e + 5:e + 5 + es_info].hex()}
                table["streams"].append(stream)
                (video if stream["type"] in VIDEO_TYPES else set()).add(stream["pid"])
                if stream["type"] == 0x86:
                    scte.add(stream["pid"])
                e += 5 + es_info
            if table not in pmts:
                pmts.append(table)
        elif pid in scte:
            waiting.append(pid)
        elif p[start:start + 3] == b"\x00\x00\x01" and pid not in video:
            stream_ids.setdefault(str(pid), p[start + 3])
        elif pid in video and p[start:start + 3] == b"\x00\x00\x01":
            video_pes += 1
            pts = None
            if p[start + 7] & 0x80:
                b = p[start + 9:start + 14]
                pts = (b[0] >> 1 & 7) << 30 | b[1] << 22 | (b[2] >> 1) << 15 | b[3] << 7 | b[4] >> 1
            random_access = bool(control & 2 and p[4] > 0 and p[5] & 0x40)
            for scte_pid in waiting:
                placements.append({"pid": scte_pid, "next_video_pts": pts, "next_video_random_access": random_access})
            waiting = []
    return {"placements": placements, "cc_errors": cc_errors, "pmts": pmts, "pmt_count": pmt_count, "video_pes": video_pes,
            "pes_stream_ids": stream_ids}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    result = walk(sys.argv[1])
    result["cues"] = cues(sys.argv[1])
    print(json.dumps(result))

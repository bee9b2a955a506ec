#!/usr/bin/env python3
"""An independent maker and reader of SCTE-35 splice_info_sections, for Tests/BroadcastTests: the
threefive package (PyPI, futzu/threefive; installed by `LIVEFILTER_PLAYERS=1 scripts/install-deps.sh`).

    python3 scripts/scte35-oracle.py make            ->  [{"name": …, "hex": "0xFC…"}, …]   (sections threefive encodes)
    python3 scripts/scte35-oracle.py decode HEX …    ->  [{...threefive's reading...}, …]

A reading holds what the tests compare: pts_adjustment and splice times in 90 kHz ticks, the
command's fields, each segmentation descriptor's, and whether the CRC_32 threefive computes over the
bytes matches the one they carry.
"""
import json
import sys

from threefive import Cue, SegmentationDescriptor, SpliceInsert, SpliceNull, TimeSignal
from threefive.crc import crc32


def ticks(seconds):
    return None if seconds is None else round(seconds * 90000)


def insert(event, out, pts=None, duration=None, immediate=False, auto_return=True):
    si = SpliceInsert()
    si.splice_event_id = event
    si.splice_event_cancel_indicator = False
    si.out_of_network_indicator = out
    si.program_splice_flag = True
    si.splice_immediate_flag = immediate
    si.event_id_compliance_flag = True
    si.time_specified_flag = pts is not None
    si.pts_time = pts
    si.duration_flag = duration is not None
    si.break_auto_return = auto_return
    si.break_duration = duration
    si.unique_program_id = 7
    si.avail_num = 1
    si.avails_expected = 2
    return si


def signal(pts):
    ts = TimeSignal()
    ts.time_specified_flag = pts is not None
    ts.pts_time = pts
    return ts


def segmentation(event, type_id, duration=None, upid=b"livefilter-ad-1"):
    sd = SegmentationDescriptor()
    sd.segmentation_event_id = hex(event)
    sd.segmentation_event_cancel_indicator = False
    sd.segmentation_event_id_compliance_indicator = True
    sd.program_segmentation_flag = True
    sd.segmentation_duration_flag = duration is not None
    sd.segmentation_duration = duration
    sd.delivery_not_restricted_flag = True
    sd.segmentation_upid_type = 0x0C  # MPU
    sd.segmentation_upid_length = len(upid) + 4
    sd.segmentation_upid = {"format_identifier": "LVFL", "private_data": upid.hex()}
    sd.segmentation_type_id = type_id
    sd.segment_num = 1
    sd.segments_expected = 1
    return sd


def cue(command, adjustment=0.0, descriptors=()):
    c = Cue()
    c.command = command
    c.info_section.pts_adjustment = adjustment
    for d in descriptors:
        c.descriptors.append(d)
    c.encode()
    return c.hex()


def make():
    sections = [
        ("insert-out", cue(insert(1001, True, pts=21.5, duration=30.0), adjustment=1.0)),
        ("insert-in", cue(insert(1001, False, pts=51.5))),
        ("insert-immediate", cue(insert(1002, True, immediate=True, duration=15.0))),
        ("insert-wraps", cue(insert(1003, True, pts=95443.0, duration=10.0), adjustment=20.0)),
        ("null", cue(SpliceNull())),
        ("signal-placement-start", cue(signal(100.0), descriptors=[segmentation(77, 0x34, duration=60.0)])),
        ("signal-placement-end", cue(signal(160.0), descriptors=[segmentation(77, 0x35)])),
        ("signal-program-start", cue(signal(5.0), descriptors=[segmentation(78, 0x10)])),
        # Longer than one TS packet's 183 bytes after the pointer_field: spans packets on a SCTE-35 PID.
        ("signal-long", cue(signal(200.0), descriptors=[segmentation(79 + i, 0x30 + 2 * i, duration=30.0, upid=bytes([0x61 + i]) * 70)
                                                        for i in range(3)])),
    ]
    print(json.dumps([{"name": n, "hex": h} for n, h in sections]))


def decode(texts):
    out = []
    for text in texts:
        c = Cue(text)
        c.decode()
        info, command = c.info_section, c.command
        data = bytes.fromhex(text[2:] if text.lower().startswith("0x") else text)
        reading = {
            "pts_adjustment": ticks(info.pts_adjustment),
            "crc_ok": crc32(data[:-4]) == int.from_bytes(data[-4:], "big"),
            "command_type": command.command_type,
            "descriptors": [],
        }
        if command.command_type == 5:
            reading.update({
                "event_id": command.splice_event_id, "out": command.out_of_network_indicator,
                "immediate": command.splice_immediate_flag, "pts_time": ticks(command.pts_time),
                "break_duration": ticks(command.break_duration), "auto_return": command.break_auto_return,
                "unique_program_id": command.unique_program_id,
            })
        if command.command_type == 6:
            reading["pts_time"] = ticks(command.pts_time)
        for d in c.descriptors:
            if d.tag == 2:
                reading["descriptors"].append({
                    "event_id": int(d.segmentation_event_id, 16), "type_id": d.segmentation_type_id,
                    "duration": ticks(d.segmentation_duration) if d.segmentation_duration_flag else None,
                })
        out.append(reading)
    print(json.dumps(out))


if __name__ == "__main__":
    if sys.argv[1:2] == ["make"]:
        make()
    elif sys.argv[1:2] == ["decode"]:
        decode(sys.argv[2:])
    else:
        sys.exit(__doc__)

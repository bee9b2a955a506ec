#!/usr/bin/env python3
"""Third-party makers of ad markers for Tests/HLSTests (SourceCueTests, SpliceWriterTests): threefive
(PyPI, futzu/threefive) encodes SCTE-35 sections and injects them into an MPEG-TS (its SuperKabuki
inserter: a PID of stream type 0x86 added to the PMT); x9k3 (PyPI, futzu/x9k3) segments such a TS
into HLS with the markers in the playlist. Installed by `LIVEFILTER_PLAYERS=1 scripts/install-deps.sh`.

    python3 scripts/splice-oracle.py insert EVENT OUT PTS ADJUSTMENT [DURATION]  ->  0xFC… (a splice_insert)
    python3 scripts/splice-oracle.py inject IN.ts OUT.ts AT:HEX …                 ->  OUT.ts, each section
                                                                                      sent at the first I-frame at or after AT s
    python3 scripts/splice-oracle.py segment IN.ts FOLDER TAG [AT:HEX …]          ->  FOLDER/index.m3u8 (x9k3, TAG
                                                                                      x_daterange or x_cue, 2 s segments;
                                                                                      sections from IN.ts's PID, or the
                                                                                      sidecar AT:HEX, which leaves the TS as it is)

Times are seconds on the 90 kHz clock, as threefive takes them; decode with scripts/scte35-oracle.py.
"""
import importlib.util
import os
import subprocess
import sys
import tempfile


def scte35_oracle():
    # The sections are made by scripts/scte35-oracle.py's threefive calls (one maker for every test).
    spec = importlib.util.spec_from_file_location("scte35_oracle", os.path.join(os.path.dirname(__file__), "scte35-oracle.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def insert(event, out, pts, adjustment, duration=None):
    oracle = scte35_oracle()
    return oracle.cue(oracle.insert(event, out, pts=pts, duration=duration), adjustment=adjustment)


def inject(source, target, pairs):
    from threefive.superkabuki import SuperKabuki
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as sidecar:
        for pair in pairs:
            at, hexa = pair.split(":", 1)
            sidecar.write(f"{at},{hexa}\n")
    saved = sys.argv
    sys.argv = ["superkabuki", "-i", source, "-o", target, "-s", sidecar.name]
    try:
        SuperKabuki().encode()
    finally:
        sys.argv = saved
        if os.path.exists(sidecar.name):
            os.unlink(sidecar.name)


def segment(source, folder, tag, pairs):
    # Paced in real time (x9k3's live mode): its EXT-X-PROGRAM-DATE-TIME and START-DATE are wall
    # clock, so they follow the media only when it is written at its pace.
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as sidecar:
        for pair in pairs:
            at, hexa = pair.split(":", 1)
            sidecar.write(f"{at},{hexa}\n")
    try:
        subprocess.run(["x9k3", "-i", source, "-o", folder, "-T", tag, "-p", "-t", "2", "-n", "-w", "10", "-s", sidecar.name],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        if os.path.exists(sidecar.name):
            os.unlink(sidecar.name)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["insert"] and len(args) in (5, 6):
        print(insert(int(args[1]), args[2] == "1", float(args[3]), float(args[4]), float(args[5]) if len(args) == 6 else None))
    elif args[:1] == ["inject"] and len(args) >= 4:
        inject(args[1], args[2], args[3:])
    elif args[:1] == ["segment"] and len(args) >= 4:
        segment(args[1], args[2], args[3], args[4:])
    else:
        sys.exit(__doc__)

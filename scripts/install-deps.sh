#!/usr/bin/env bash
# Installs what livefilter needs on Debian 12 besides the Swift toolchain: the FFmpeg 5.1
# development packages, libx264, FreeType and libpng (the text and overlay filters), a font
# (fonts-dejavu-core: DejaVu Sans, the text filter's default), pkg-config and the ffmpeg/ffprobe
# CLIs (used by the tests).
# git and ca-certificates are checked too: SwiftPM needs them to fetch swift-argument-parser.
# Idempotent: does nothing when everything is installed.
#
#   scripts/install-deps.sh          # as root, or: sudo scripts/install-deps.sh
#   LIVEFILTER_PLAYERS=1 …           # also what only the tests need: the independent players they play
#                                    # our HLS with (GStreamer, headless Chromium) and Debian's
#                                    # mate-backgrounds, the photograph PlanarChainTests decode, and
#                                    # Slurm (slurmctld slurmd slurm-client munge) for the scale-out tests,
#                                    # and qemu-user (runs the binary on an emulated CPU without AVX2),
#                                    # and from PyPI the m3u8 package (the HLS tests' independent playlist
#                                    # parser, scripts/m3u8-oracle.py), for the python3 on PATH, and
#                                    # threefive (the SCTE-35 tests' independent library,
#                                    # scripts/scte35-oracle.py), and
#                                    # hls.js for the player page (scripts/install-hlsjs.sh: from the
#                                    # gradio wheel on PyPI to /usr/local/share/livefilter/hls.min.js)
#   source scripts/install-deps.sh   # from another script: also leaves /opt/swift/usr/bin on PATH
#                                    # when `swift` was not already there (demo.sh and test.sh do this)
set -euo pipefail

packages=(libavformat-dev libavcodec-dev libavfilter-dev libswscale-dev libswresample-dev
          libavutil-dev libx264-dev libsrt-gnutls-dev libcurl4-openssl-dev libfreetype-dev libpng-dev fonts-dejavu-core pkg-config ffmpeg git ca-certificates time)
if [[ "${LIVEFILTER_PLAYERS:-0}" == 1 ]]; then
    packages+=(gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-base-apps gstreamer1.0-plugins-good
               gstreamer1.0-plugins-bad gstreamer1.0-libav chromium python3 python3-pip mate-backgrounds qemu-user
               mpv vlc-bin vlc-plugin-base python3-gi gir1.2-gst-rtsp-server-1.0 nghttp2-server openssl)
fi

missing=()
for p in "${packages[@]}"; do
    # dpkg-query prints e.g. "install ok installed"; anything else (or an error) means missing.
    status="$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)"
    if [[ "$status" != "install ok installed" ]]; then
        missing+=("$p")
    fi
done

if ((${#missing[@]} > 0)); then
    if [[ "$(id -u)" -ne 0 ]]; then
        echo "install-deps: missing packages: ${missing[*]}" >&2
        echo "install-deps: run as root: sudo ${BASH_SOURCE[0]}" >&2
        exit 1
    fi
    echo "install-deps: installing ${missing[*]}"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
else
    echo "install-deps: all packages present"
fi

# Slurm's daemons must not start as system services on install (scripts/slurm-local.sh knows how).
if [[ "${LIVEFILTER_PLAYERS:-0}" == 1 ]]; then
    bash "$(dirname "${BASH_SOURCE[0]}")/slurm-local.sh" install
fi

# The m3u8 parser M3U8OracleTests compares ours with, pinned. Debian's own python3 refuses pip
# installs outside a virtual environment (PEP 668); m3u8 is pure Python with no dependencies, so it
# may go into that interpreter's packages. Not fatal: without it those tests are skipped, and say so.
if [[ "${LIVEFILTER_PLAYERS:-0}" == 1 ]] && ! python3 -c 'import m3u8' 2>/dev/null; then
    echo "install-deps: installing the m3u8 Python package"
    python3 -m pip install --quiet 'm3u8==6.0.0' 2>/dev/null \
        || python3 -m pip install --quiet --break-system-packages 'm3u8==6.0.0' \
        || echo "install-deps: could not install m3u8; M3U8OracleTests will be skipped" >&2
fi

# threefive, the SCTE-35 library Tests/BroadcastTests compares ours with (scripts/scte35-oracle.py),
# pinned; pure Python like m3u8. Without it those tests fail and say how to install it.
if [[ "${LIVEFILTER_PLAYERS:-0}" == 1 ]] && ! python3 -c 'import threefive' 2>/dev/null; then
    echo "install-deps: installing the threefive Python package"
    python3 -m pip install --quiet 'threefive==3.1.5' 2>/dev/null \
        || python3 -m pip install --quiet --break-system-packages 'threefive==3.1.5' \
        || echo "install-deps: could not install threefive; BroadcastTests will fail" >&2
fi

# x9k3, the HLS segmenter that puts threefive's SCTE-35 into playlists (CUE-OUT or DATERANGE), for
# Tests/HLSTests' SourceCueTests and SpliceWriterTests (scripts/splice-oracle.py), pinned.
if [[ "${LIVEFILTER_PLAYERS:-0}" == 1 ]] && ! python3 -c 'import x9k3' 2>/dev/null; then
    echo "install-deps: installing the x9k3 Python package"
    python3 -m pip install --quiet 'x9k3==1.0.39' 2>/dev/null \
        || python3 -m pip install --quiet --break-system-packages 'x9k3==1.0.39' \
        || echo "install-deps: could not install x9k3; SourceCueTests and SpliceWriterTests will be skipped" >&2
fi

# The other oracles of Tests/BroadcastTests: mutagen (ID3 tags), pymp4 (MP4 boxes), emsg (emsg boxes).
if [[ "${LIVEFILTER_PLAYERS:-0}" == 1 ]] && ! python3 -c 'import mutagen, pymp4, emsg' 2>/dev/null; then
    echo "install-deps: installing the mutagen, pymp4 and emsg Python packages"
    python3 -m pip install --quiet 'mutagen==1.48.1' 'pymp4==1.4.0' 'emsg==0.0.4' 2>/dev/null \
        || python3 -m pip install --quiet --break-system-packages 'mutagen==1.48.1' 'pymp4==1.4.0' 'emsg==0.0.4' \
        || echo "install-deps: could not install mutagen, pymp4 and emsg; BroadcastTests will fail" >&2
fi

# hls.js for the player page (Low-Latency HLS in the browser). Not fatal: without it the page plays
# HLS natively and the LL browser test is skipped, and says so.
if [[ "${LIVEFILTER_PLAYERS:-0}" == 1 ]]; then
    bash "$(dirname "${BASH_SOURCE[0]}")/install-hlsjs.sh" \
        || echo "install-deps: could not install hls.js; the player page falls back to native HLS" >&2
fi

if ! command -v swift >/dev/null 2>&1; then
    if [[ -x /opt/swift/usr/bin/swift ]]; then
        export PATH="/opt/swift/usr/bin:$PATH"
        echo "install-deps: using Swift from /opt/swift/usr/bin"
    else
        echo "install-deps: swift not found on PATH or in /opt/swift/usr/bin; install the Swift 6 toolchain" >&2
        exit 1
    fi
fi

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
#                                    # and qemu-user (runs the binary on an emulated CPU without AVX2)
#   source scripts/install-deps.sh   # from another script: also leaves /opt/swift/usr/bin on PATH
#                                    # when `swift` was not already there (demo.sh and test.sh do this)
set -euo pipefail

packages=(libavformat-dev libavcodec-dev libavfilter-dev libswscale-dev libswresample-dev
          libavutil-dev libx264-dev libfreetype-dev libpng-dev fonts-dejavu-core pkg-config ffmpeg git ca-certificates time)
if [[ "${LIVEFILTER_PLAYERS:-0}" == 1 ]]; then
    packages+=(gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-base-apps gstreamer1.0-plugins-good
               gstreamer1.0-plugins-bad gstreamer1.0-libav chromium python3 mate-backgrounds qemu-user)
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

if ! command -v swift >/dev/null 2>&1; then
    if [[ -x /opt/swift/usr/bin/swift ]]; then
        export PATH="/opt/swift/usr/bin:$PATH"
        echo "install-deps: using Swift from /opt/swift/usr/bin"
    else
        echo "install-deps: swift not found on PATH or in /opt/swift/usr/bin; install the Swift 6 toolchain" >&2
        exit 1
    fi
fi

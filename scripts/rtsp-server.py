#!/usr/bin/python3
"""A real RTSP server for tests and manual checks: GStreamer's rtsp-server library serving an MP4
(H.264 and AAC) at rtsp://127.0.0.1:PORT/PATH in real time, as a camera or a media server would.

    scripts/rtsp-server.py PORT PATH FILE.mp4

Prints "rtsp-server: ready" on stderr once it listens. Each client that connects shares one playback of the file (a camera
is live: a client joining late sees the picture of now). Needs Debian's python3-gi and
gir1.2-gst-rtsp-server-1.0 (scripts/install-deps.sh installs them with the test tools). Run it with
/usr/bin/python3: Debian's gi is not in other interpreters' paths.
"""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    port, path, media = sys.argv[1], sys.argv[2], sys.argv[3]
    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(port)
    factory = GstRtspServer.RTSPMediaFactory()
    # The file's own H.264 and AAC, packetised as they are (no re-encode); SPS/PPS with every IDR.
    factory.set_launch(
        f'( filesrc location="{media}" ! qtdemux name=d '
        "d.video_0 ! queue ! h264parse config-interval=-1 ! rtph264pay name=pay0 pt=96 "
        "d.audio_0 ! queue ! aacparse ! rtpmp4gpay name=pay1 pt=97 )"
    )
    factory.set_shared(True)
    server.get_mount_points().add_factory("/" + path.lstrip("/"), factory)
    if server.attach(None) == 0:
        sys.exit(f"rtsp-server: cannot listen on 127.0.0.1:{port}")
    print("rtsp-server: ready", file=sys.stderr, flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()

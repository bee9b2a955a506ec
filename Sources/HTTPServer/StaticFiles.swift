import Foundation

/// Serves a folder for HLS players: the right MIME types, playlists never cached, CORS open,
/// nothing outside the folder, and a small player page at `/`.
public struct StaticFiles: Sendable {
    public let root: URL
    /// The playlist the player page plays (relative to `root`), or nil to pick one when asked.
    public let playlist: String?

    public init(root: String, playlist: String? = nil) {
        self.root = URL(fileURLWithPath: root).standardizedFileURL
        self.playlist = playlist
    }

    public static func mimeType(for path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "m3u8": "application/vnd.apple.mpegurl"
        case "ts": "video/mp2t"
        case "m4s": "video/iso.segment"
        case "mp4", "m4v": "video/mp4"
        case "m4a": "audio/mp4"
        case "aac": "audio/aac"
        case "html": "text/html; charset=utf-8"
        case "json": "application/json"
        case "png": "image/png"
        case "vtt": "text/vtt"
        default: "application/octet-stream"
        }
    }

    public func respond(to request: HTTPRequest) -> HTTPResponse {
        let cors: [(String, String)] = [("Access-Control-Allow-Origin", "*"), ("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS"),
                                         ("Access-Control-Allow-Headers", "Range")]
        if request.method == "OPTIONS" { return HTTPResponse(status: 204, headers: cors) }
        guard request.method == "GET" || request.method == "HEAD" else {
            return HTTPResponse(status: 405, headers: cors + [("Allow", "GET, HEAD, OPTIONS")])
        }
        if request.path == "/" || request.path == "/index.html" {
            guard let playlist = playlist ?? defaultPlaylist() else {
                return HTTPResponse(status: 404, headers: cors, body: .data(Data("no playlist here yet\n".utf8)))
            }
            return HTTPResponse(status: 200, headers: cors + [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-cache")],
                                body: .data(Data(PlayerPage.html(playlist: playlist).utf8)))
        }
        // Resolve inside the root only: no "..", no absolute escapes, no symlinks out.
        let relative = request.path.drop(while: { $0 == "/" })
        guard !relative.split(separator: "/").contains(where: { $0 == ".." || $0.hasPrefix(".") }) else {
            return HTTPResponse(status: 404, headers: cors)
        }
        let file = root.appendingPathComponent(String(relative)).standardizedFileURL.resolvingSymlinksInPath()
        guard file.path.hasPrefix(root.resolvingSymlinksInPath().path + "/"),
              let data = FileManager.default.contents(atPath: file.path) else {
            return HTTPResponse(status: 404, headers: cors)
        }
        var headers = cors + [("Content-Type", Self.mimeType(for: file.path))]
        if file.pathExtension.lowercased() == "m3u8" {
            headers.append(("Cache-Control", "no-cache, no-store"))
        } else {
            headers.append(("Cache-Control", "max-age=60"))
        }
        return HTTPResponse(status: 200, headers: headers, body: .data(data))
    }

    /// master.m3u8, else index.m3u8, else the first playlist in the folder.
    func defaultPlaylist() -> String? {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path))?.sorted() ?? []
        for preferred in ["master.m3u8", "index.m3u8"] where names.contains(preferred) { return preferred }
        return names.first { $0.hasSuffix(".m3u8") }
    }
}

/// The player page: native HLS in a `<video>` element (Safari, Chromium), with live statistics
/// a headless browser check can read from the title and `window.livefilterStats`.
enum PlayerPage {
    static func html(playlist: String) -> String {
        let src = playlist.replacingOccurrences(of: "\"", with: "%22")
        return """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <title>livefilter</title>
        <style>
          body { background: #111; color: #ddd; font: 14px system-ui, sans-serif; margin: 2em; }
          video { max-width: 100%; background: #000; }
          #stats { font-family: ui-monospace, monospace; margin-top: 1em; }
        </style>
        </head>
        <body>
        <h1>livefilter</h1>
        <video id="v" src="\(src)" controls autoplay muted playsinline></video>
        <div id="stats">loading \(src)…</div>
        <script>
          const v = document.getElementById('v');
          const out = document.getElementById('stats');
          window.livefilterStats = { frames: 0, currentTime: 0, error: null, retries: 0 };
          // The playlist may not exist yet (run --serve): retry every 2 s for a minute.
          v.addEventListener('error', () => {
            window.livefilterStats.error = v.error ? v.error.code + ' ' + v.error.message : 'error';
            out.textContent = 'error: ' + window.livefilterStats.error;
            document.title = 'livefilter error';
            if (window.livefilterStats.retries++ < 30) setTimeout(() => { v.load(); v.play().catch(() => {}); }, 2000);
          });
          v.addEventListener('playing', () => { window.livefilterStats.error = null; });
          function tick() {
            const q = v.getVideoPlaybackQuality ? v.getVideoPlaybackQuality() : null;
            const frames = q ? q.totalVideoFrames : (v.webkitDecodedFrameCount || 0);
            window.livefilterStats.frames = frames;
            window.livefilterStats.currentTime = v.currentTime;
            out.textContent = 'frames ' + frames + ' · time ' + v.currentTime.toFixed(2) + ' s · ' + v.videoWidth + 'x' + v.videoHeight;
            document.title = 'frames=' + frames + ' time=' + v.currentTime.toFixed(2);
            requestAnimationFrame(tick);
          }
          v.play().catch(() => {});
          tick();
        </script>
        </body>
        </html>
        """
    }
}

import Foundation
import Hummingbird
import Serving

/// Segments cut from a sample by ffmpeg, served over loopback as VOD or as a live sliding window
/// that gains a segment every `interval`, with hostile behaviours for the robustness tests.
/// Binds 127.0.0.1 only; stops with `stop()` (tests call it in `defer`).
final class HLSTestServer: @unchecked Sendable {
    struct Segment { var name: String; var duration: Double }

    enum Hostility: Sendable {
        case none
        /// These segment numbers answer 404.
        case missing(Set<Int>)
        /// Media playlists reference a local file.
        case fileReference
        /// Nothing is ever answered (the connection stays open, silent).
        case silent
        /// A segment is an HTML error page with status 200.
        case htmlSegment(Int)
        /// The server closes the connection half-way through this segment.
        case truncated(Int)
        /// Segments trickle one byte a second.
        case trickle
        /// Playlist redirects to itself.
        case redirectLoop
    }

    let folder: URL
    let segments: [Segment]
    let targetDuration: Int
    let window: Int
    let interval: Double
    var hostility: Hostility
    private let started = Date()
    private var server: HTTPService!
    private let lock = NSLock()
    private var stopped = false
    /// Responses held open until `stop()` (the silent server), by id.
    private var heldOpen: [Int: CheckedContinuation<Void, Never>] = [:]
    private var nextHeld = 0

    var baseURL: String { server.baseURL }
    var vodURL: String { baseURL + "/vod.m3u8" }
    var liveURL: String { baseURL + "/live.m3u8" }
    var masterURL: String { baseURL + "/master.m3u8" }

    /// Cuts `sample` into `segmentSeconds` TS segments with ffmpeg (stream copy keeps it fast; the
    /// sample's GOP decides the real cut points, which the playlist reports).
    static func make(from sample: URL, in sandbox: Sandbox, segmentSeconds: Double = 1, window: Int = 5,
                     interval: Double? = nil, hostility: Hostility = .none, reencode: Bool = false) async throws -> HLSTestServer {
        let folder = sandbox.file("served")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var args = ["-i", sample.path]
        if reencode {
            args += ["-c:v", "libx264", "-preset", "veryfast", "-g", "30", "-keyint_min", "30", "-sc_threshold", "0", "-c:a", "aac"]
        } else {
            args += ["-c", "copy"]
        }
        args += ["-f", "hls", "-hls_time", String(segmentSeconds), "-hls_list_size", "0",
                 "-hls_segment_filename", folder.appendingPathComponent("seg%03d.ts").path,
                 folder.appendingPathComponent("source.m3u8").path]
        try await ffmpeg(args)
        let text = try String(contentsOf: folder.appendingPathComponent("source.m3u8"), encoding: .utf8)
        var segments: [Segment] = []
        var pending: Double?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("#EXTINF:") {
                pending = Double(line.dropFirst(8).split(separator: ",").first ?? "")
            } else if !line.hasPrefix("#"), let d = pending {
                segments.append(Segment(name: String(line), duration: d))
                pending = nil
            }
        }
        let target = Int((segments.map(\.duration).max() ?? segmentSeconds).rounded(.up))
        let server = HLSTestServer(folder: folder, segments: segments, targetDuration: target, window: window,
                                   interval: interval ?? Double(target), hostility: hostility)
        try await server.start()
        return server
    }

    private init(folder: URL, segments: [Segment], targetDuration: Int, window: Int, interval: Double, hostility: Hostility) {
        self.folder = folder
        self.segments = segments
        self.targetDuration = targetDuration
        self.window = window
        self.interval = interval
        self.hostility = hostility
    }

    private func start() async throws {
        server = try await HTTPService.start(host: "127.0.0.1", port: 0) { [self] request, _ in try await respond(request) }
    }

    func stop() {
        let held = lock.withLock {
            stopped = true
            defer { heldOpen.removeAll() }
            return Array(heldOpen.values)
        }
        for response in held { response.resume() }
        server.shutdown()
    }

    /// Returns when the server stops, or when the waiting request is cancelled (its client left).
    private func untilStopped() async {
        let id = lock.withLock { nextHeld += 1; return nextHeld }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let done = lock.withLock { () -> Bool in
                    if stopped || Task.isCancelled { return true }
                    heldOpen[id] = continuation
                    return false
                }
                if done { continuation.resume() }
            }
        } onCancel: {
            lock.withLock { heldOpen.removeValue(forKey: id) }?.resume()
        }
    }

    private var isStopped: Bool { lock.lock(); defer { lock.unlock() }; return stopped }

    /// Segments published so far on the live playlist (one more every `interval`).
    var publishedCount: Int {
        min(segments.count, window + Int(Date().timeIntervalSince(started) / interval))
    }

    private func playlist(live: Bool) -> String {
        let count = live ? publishedCount : segments.count
        let first = live ? max(0, count - window) : 0
        var lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:\(targetDuration)", "#EXT-X-MEDIA-SEQUENCE:\(first)"]
        if !live { lines.append("#EXT-X-PLAYLIST-TYPE:VOD") }
        for i in first..<count {
            lines.append(String(format: "#EXTINF:%.6f,", segments[i].duration))
            if case .fileReference = hostility { lines.append("file:///etc/passwd"); continue }
            lines.append(segments[i].name)
        }
        if !live || count == segments.count { lines.append("#EXT-X-ENDLIST") }
        return lines.joined(separator: "\n") + "\n"
    }

    private func respond(_ request: Request) async throws -> Response {
        let path = request.uri.path
        if case .silent = hostility {
            // Never answers: the connection stays open and silent until the server stops.
            await untilStopped()
            throw CancellationError()
        }
        if case .redirectLoop = hostility, path.hasSuffix(".m3u8") {
            return Response(status: .found, headers: [.location: path])
        }
        switch path {
        case "/vod.m3u8":
            return .playlist(playlist(live: false))
        case "/live.m3u8":
            return .playlist(playlist(live: true))
        case "/master.m3u8":
            return .playlist("""
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=400000,RESOLUTION=320x180
            low/vod.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=1200000,RESOLUTION=640x360
            vod.m3u8

            """)
        default:
            break
        }
        let name = String(path.dropFirst())
        guard let index = segments.firstIndex(where: { $0.name == name }),
              let data = FileManager.default.contents(atPath: folder.appendingPathComponent(name).path) else {
            return .text(.notFound, "not found")
        }
        switch hostility {
        case let .missing(numbers) where numbers.contains(index):
            return .text(.notFound, "gone")
        case let .htmlSegment(n) where n == index:
            return Response(status: .ok, headers: [.contentType: "text/html"],
                            body: ResponseBody(byteBuffer: ByteBuffer(string: "<html><body><h1>502 Bad Gateway</h1></body></html>")))
        case let .truncated(n) where n == index:
            // Announces the whole length, sends half, then the connection is cut.
            return Response(status: .ok, headers: [.contentType: "video/mp2t", .contentLength: "\(data.count)"],
                            body: ResponseBody { writer in
                                try await writer.write(ByteBuffer(bytes: data.prefix(data.count / 2)))
                                throw CancellationError()
                            })
        case .trickle:
            return Response(status: .ok, headers: [.contentType: "video/mp2t", .contentLength: "\(data.count)"],
                            body: ResponseBody { [self] writer in
                                for byte in data where !isStopped {
                                    try await writer.write(ByteBuffer(bytes: [byte]))
                                    // The hostility itself: one byte a second.
                                    try await Task.sleep(for: .seconds(1))
                                }
                                throw CancellationError()
                            })
        default:
            return Response(status: .ok, headers: [.contentType: "video/mp2t"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
        }
    }
}

extension Response {
    static func text(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"], body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    static func playlist(_ text: String) -> Response {
        Response(status: .ok, headers: [.contentType: "application/vnd.apple.mpegurl"], body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}

import Foundation
import HLS
import Serving
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEnd {
    /// Low-Latency HLS as a player meets it over real HTTP: a scripted writer publishes parts and
    /// playlists by rename at known instants, and the server holds blocking reloads and hinted parts
    /// until then — woken by the writer's `notify(path:)`, by a `FolderWatcher` in process, or by
    /// `livefilter serve`'s own inotify watch.
    @Suite("Low-Latency HLS serving")
    struct LowLatencyServing {
        /// How the server hears of a publication.
        enum Source: String, CaseIterable, Sendable {
            /// The writer calls `PublicationBoard.notify(path:)` after each rename (`run --serve`).
            case notify
            /// `FolderWatcher` (inotify) in this process.
            case watcher
            /// The `livefilter serve DIR` binary (inotify).
            case serveCommand
        }

        /// Generous for a loaded two-core machine: an answer after a publication comes within this.
        static let margin: Duration = .seconds(2)

        @Test("a blocking reload is answered after the part's publication, not before; a hinted part is held until it appears",
              arguments: Source.allCases)
        func heldUntilPublished(_ source: Source) async throws {
            let sandbox = try Sandbox("ll-held")
            defer { sandbox.remove() }
            // The served folder (but for `serve`, which needs it) and the rendition's folder in it are
            // made after the server starts, as `run --serve` makes its output folder: a watcher must
            // pick both up.
            let site = sandbox.file("site")
            if source == .serveCommand { try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true) }
            let server = try await LowLatencyServer.start(site, source)
            defer { server.stop() }
            let writer = try ScriptedLLWriter(folder: site.appendingPathComponent("720p"), notify: server.notify)
            try writer.start(segments: 3, parts: 1)

            // A blocking reload for the next part: held while the writer is still on it.
            let next = writer.nextPart
            let reload = RequestOnThread(port: server.port, "/720p/index.m3u8?_HLS_msn=\(next.msn)&_HLS_part=\(next.part)")
            try await server.untilHeld(1)
            try await Task.sleep(for: .milliseconds(600))  // the writer's schedule: the part takes its time
            #expect(reload.isPending, "answered before the part was published")
            let published = ContinuousClock.now
            try writer.publishPart()
            let (response, answered) = try await reload.value
            #expect(response.status == 200)
            #expect(answered >= published && answered - published < Self.margin, "\(answered - published) after the publication")
            let playlist = try #require(try Self.media(response.text))
            #expect(playlist.lastPart?.mediaSequenceNumber == next.msn && playlist.lastPart?.partIndex == next.part,
                    "the answer has the part asked for:\n\(response.text)")
            // rfc8216bis Appendix B.1: a successful blocking response, six Target Durations.
            #expect(response.header("Cache-Control") == "max-age=6")

            // The hinted part: held until its file appears, then served whole; a range of it too.
            let hint = try #require(playlist.preloadHints.first?.uri)
            let hinted = RequestOnThread(port: server.port, "/720p/" + hint)
            let ranged = RequestOnThread(port: server.port, "/720p/" + hint, headers: ["Range": "bytes=10-19"])
            try await server.untilHeld(2)
            try await Task.sleep(for: .milliseconds(600))
            #expect(hinted.isPending && ranged.isPending)
            let partPublished = ContinuousClock.now
            try writer.publishPart()
            let (whole, wholeAt) = try await hinted.value
            let (slice, _) = try await ranged.value
            let bytes = try Data(contentsOf: writer.folder.appendingPathComponent(hint))
            #expect(whole.status == 200 && whole.body == bytes)
            #expect(wholeAt >= partPublished && wholeAt - partPublished < Self.margin)
            #expect(whole.header("Content-Type") == "video/iso.segment")
            #expect(whole.header("Cache-Control") == "max-age=6", "B.1: a successful blocking media response, six Target Durations")
            #expect(slice.status == 206 && slice.body == bytes.subdata(in: 10..<20))

            // Any other missing file: 404 at once, nothing held.
            let before = ContinuousClock.now
            #expect(try RawHTTP.request(port: server.port, "/720p/seg99_p0.m4s").status == 404)
            #expect(ContinuousClock.now - before < .seconds(1))
        }

        @Test("400 for a request too far ahead or _HLS_part alone; 503 after three target durations with the writer stalled")
        func refusals() async throws {
            try await withWriter("ll-refused", segments: 3, parts: 2) { server, writer in
                let last = writer.nextPart.msn - 1  // the last complete segment
                for query in ["_HLS_msn=\(last + 3)", "_HLS_part=1", "_HLS_msn=\(last + 1)&_HLS_part=40", "_HLS_msn=x"] {
                    let before = ContinuousClock.now
                    let refused = try RawHTTP.request(port: server.port, "/720p/index.m3u8?" + query)
                    #expect(refused.status == 400, "\(query): \(refused.status)")
                    #expect(ContinuousClock.now - before < .seconds(1), "\(query): refused at once")
                    #expect(refused.header("Cache-Control") == "max-age=4", "B.1: an unsuccessful blocking response, four Target Durations")
                }
                // The writer stalls: the next part never comes. Target duration 1 s: given up after 3 s.
                let next = writer.nextPart
                let started = ContinuousClock.now
                let reload = RequestOnThread(port: server.port, "/720p/index.m3u8?_HLS_msn=\(next.msn)&_HLS_part=\(next.part)")
                let hinted = RequestOnThread(port: server.port, "/720p/" + writer.partName(next))
                let (stalled, stalledAt) = try await reload.value
                #expect(stalled.status == 503)
                #expect(stalledAt - started >= .milliseconds(2900) && stalledAt - started < .seconds(3) + Self.margin,
                        "\(stalledAt - started)")
                let (notYet, _) = try await hinted.value
                #expect(notYet.status == 503, "still hinted, not published: the writer is late")
                #expect(notYet.header("Cache-Control") == "max-age=1", "B.1: an unsuccessful blocking media response, one Target Duration")
                #expect(server.board.waiting == 0, "no waiter left behind")
            }
        }

        @Test("_HLS_skip: a delta update our parser reads, that merges into an earlier version to give the playlist again")
        func deltaUpdates() async throws {
            try await withWriter("ll-skip", segments: 10, parts: 1) { server, writer in
                let earlier = try #require(try Self.media(RawHTTP.request(port: server.port, "/720p/index.m3u8").text))
                for _ in 0..<6 { try writer.publishPart() }  // a segment and a half later
                let full = try #require(try Self.media(RawHTTP.request(port: server.port, "/720p/index.m3u8").text))

                let response = try RawHTTP.request(port: server.port, "/720p/index.m3u8?_HLS_skip=YES")
                #expect(response.status == 200)
                #expect(response.header("Cache-Control") == "no-cache", "B.1: half a target duration (0.5 s) rounds down to none")
                // By hand: 11 complete 1 s segments 0…10 and CAN-SKIP-UNTIL=6: segments 5…10 hold the
                // boundary's six seconds, 0…4 are skipped. The header and the map stay.
                let expectedStart = """
                    #EXTM3U
                    #EXT-X-VERSION:9
                    #EXT-X-TARGETDURATION:1
                    #EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=6,PART-HOLD-BACK=0.75
                    #EXT-X-PART-INF:PART-TARGET=0.25
                    #EXT-X-MEDIA-SEQUENCE:0
                    #EXT-X-MAP:URI="init.mp4"
                    #EXT-X-SKIP:SKIPPED-SEGMENTS=5

                    """
                #expect(response.text.hasPrefix(expectedStart), "\(response.text)")
                let delta = try #require(try Self.media(response.text))
                #expect(delta.segments.first?.uri == "seg5.m4s")
                #expect(try earlier.applying(delta: delta).withoutVersion() == full.withoutVersion())

                // With a blocking reload: held, then the delta of the version that has the part.
                let next = writer.nextPart
                let reload = RequestOnThread(port: server.port, "/720p/index.m3u8?_HLS_msn=\(next.msn)&_HLS_part=\(next.part)&_HLS_skip=v2")
                try await server.untilHeld(1)
                try writer.publishPart()
                let (held, _) = try await reload.value
                let heldDelta = try #require(try Self.media(held.text))
                // Segment 11 is complete now: 6…11 hold the boundary, 0…5 are skipped.
                #expect(heldDelta.skip == PlaylistSkip(skippedSegments: 6), "v2 without CAN-SKIP-DATERANGES is YES")
                let now = try #require(try Self.media(String(decoding: Data(contentsOf: writer.playlist), as: UTF8.self)))
                #expect(try earlier.applying(delta: heldDelta).withoutVersion() == now.withoutVersion())
            }
        }

        @Test("directives on a playlist without CAN-BLOCK-RELOAD, or with EXT-X-ENDLIST, are ignored: the file as it is")
        func ignoredDirectives() async throws {
            try await withWriter("ll-ignored", segments: 3, parts: 1) { server, writer in
                let text = try String(contentsOf: writer.playlist, encoding: .utf8)
                for (name, edited) in [("plain.m3u8", text.replacingOccurrences(of: "CAN-BLOCK-RELOAD=YES,", with: "")),
                                       ("ended.m3u8", text + "#EXT-X-ENDLIST\n")] {
                    try edited.write(to: writer.folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
                    let before = ContinuousClock.now
                    let r = try RawHTTP.request(port: server.port, "/720p/\(name)?_HLS_msn=99&_HLS_part=0&_HLS_skip=YES")
                    #expect(r.status == 200 && r.text == edited, "\(name)")
                    #expect(r.header("Cache-Control") == "no-cache, no-store", "\(name)")
                    #expect(ContinuousClock.now - before < .seconds(1), "\(name)")
                }
                // Without directives, a low-latency playlist: B.1's half target duration (0.5 s: none).
                let plain = try RawHTTP.request(port: server.port, "/720p/index.m3u8")
                #expect(plain.status == 200 && plain.text == text && plain.header("Cache-Control") == "no-cache")
                #expect(plain.header("ETag") != nil)
            }
        }

        /// A sandbox served in process (the writer notifies the board), and a writer publishing
        /// `720p/` there, started with `segments` complete segments and `parts` parts of the next.
        func withWriter(_ label: String, segments: Int, parts: Int,
                        _ body: (LowLatencyServer, ScriptedLLWriter) async throws -> Void) async throws {
            let sandbox = try Sandbox(label)
            defer { sandbox.remove() }
            let server = try await LowLatencyServer.start(sandbox.url, .notify)
            defer { server.stop() }
            let writer = try ScriptedLLWriter(folder: sandbox.file("720p"), notify: server.notify)
            try writer.start(segments: segments, parts: parts)
            try await body(server, writer)
        }

        static func media(_ text: String) throws -> MediaPlaylist? {
            guard case let .media(playlist) = try PlaylistParser.parse(text) else { return nil }
            return playlist
        }
    }
}

extension MediaPlaylist {
    /// Without the version (a delta update needs 9) and the lines of the text it was read from.
    func withoutVersion() -> MediaPlaylist {
        var copy = self
        copy.version = nil
        for i in copy.segments.indices {
            copy.segments[i].line = 0
            for j in copy.segments[i].parts.indices { copy.segments[i].parts[j].line = 0 }
        }
        if let open = copy.segmentInProgress { copy.segmentInProgress?.parts = open.parts.map { var p = $0; p.line = 0; return p } }
        return copy
    }
}

/// A server of a folder for these tests, by one of the three sources of publications.
struct LowLatencyServer: Sendable {
    let port: Int
    let board: PublicationBoard
    let source: EndToEnd.LowLatencyServing.Source
    private let stopServer: @Sendable () -> Void

    /// What the writer calls after each rename: the board's `notify` only when that is the source.
    var notify: @Sendable (String) -> Void {
        let board = board, source = source
        return { path in if source == .notify { board.notify(path: path) } }
    }

    static func start(_ folder: URL, _ source: EndToEnd.LowLatencyServing.Source) async throws -> LowLatencyServer {
        let board = PublicationBoard()
        switch source {
        case .serveCommand:
            let (child, port) = try await EndToEnd.Serve().startServe(folder)
            return LowLatencyServer(port: port, board: board, source: source, stopServer: { child.send(SIGKILL) })
        case .notify, .watcher:
            let watcher = source == .watcher ? FolderWatcher.start(folder.path, board: board) : nil
            if source == .watcher, watcher == nil { throw ToolFailure("inotify is not available here") }
            let files = StaticFiles(root: folder.path, board: board)
            let server = try await HTTPService.start(host: "127.0.0.1", port: 0, onStop: { watcher?.stop() }) { request, context in
                try await files.respond(to: request, context: context)
            }
            return LowLatencyServer(port: server.port, board: board, source: source, stopServer: { server.shutdown() })
        }
    }

    func stop() { stopServer() }

    /// Until `count` requests are held on the board (in process; the binary's board is out of
    /// sight, so there the writer's schedule alone orders the request before the publication).
    func untilHeld(_ count: Int) async throws {
        guard source != .serveCommand else { return }
        let deadline = ContinuousClock.now + .seconds(20)
        while board.waiting < count {
            guard ContinuousClock.now < deadline else { throw ToolFailure("\(count) requests never held") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// An HTTP request on a thread of its own (the test's raw socket blocks), with the instant its
/// answer arrived.
final class RequestOnThread: Sendable {
    private let result = Mutex<Result<(RawHTTPResponse, ContinuousClock.Instant), any Error>?>(nil)
    private let done = Mutex<CheckedContinuation<Void, Never>?>(nil)

    init(port: Int, _ target: String, headers: [String: String] = [:]) {
        let thread = Thread { [self] in
            let outcome = Result { (try RawHTTP.request(port: port, target, headers: headers, timeout: 30), ContinuousClock.now) }
            result.withLock { $0 = outcome }
            done.withLock { $0.take() }?.resume()
        }
        thread.start()
    }

    var isPending: Bool { result.withLock { $0 == nil } }

    var value: (RawHTTPResponse, ContinuousClock.Instant) {
        get async throws {
            await withCheckedContinuation { continuation in
                let finished = result.withLock { r in
                    done.withLock { d in
                        if r == nil { d = continuation }
                    }
                    return r != nil
                }
                if finished { continuation.resume() }
            }
            return try result.withLock { $0! }.get()
        }
    }
}

/// A writer of a low-latency rendition as `HLSWriter --hls-part` writes one: 1 s segments of four
/// 0.25 s parts (`segN_pI.m4s`, then `segN.m4s`), each file and then `index.m3u8` published by
/// writing a hidden temporary in the folder and renaming it, the playlist hinting the next part.
final class ScriptedLLWriter: @unchecked Sendable {
    let folder: URL
    let playlist: URL
    private let notify: @Sendable (String) -> Void
    private(set) var nextPart: (msn: Int, part: Int) = (0, 0)
    static let partsPerSegment = 4

    init(folder: URL, notify: @escaping @Sendable (String) -> Void) throws {
        self.folder = folder
        playlist = folder.appendingPathComponent("index.m3u8")
        self.notify = notify
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    func partName(_ part: (msn: Int, part: Int)) -> String { "seg\(part.msn)_p\(part.part).m4s" }

    /// `segments` complete segments and `parts` parts of the next, then the playlist.
    func start(segments: Int, parts: Int) throws {
        try publish("init.mp4", Data("ftyp+moov".utf8))
        for _ in 0..<(segments * Self.partsPerSegment + parts) { try publishPartFile() }
        try publishPlaylist()
    }

    /// The next part, then the playlist that lists it.
    func publishPart() throws {
        try publishPartFile()
        try publishPlaylist()
    }

    private func publishPartFile() throws {
        try publish(partName(nextPart), Self.bytes(nextPart))
        nextPart.part += 1
        if nextPart.part == Self.partsPerSegment {
            let whole = (0..<Self.partsPerSegment).map { Self.bytes((nextPart.msn, $0)) }.reduce(Data(), +)
            try publish("seg\(nextPart.msn).m4s", whole)
            nextPart = (nextPart.msn + 1, 0)
        }
    }

    private func publishPlaylist() throws {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:9", "#EXT-X-TARGETDURATION:1",
                     "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=6,PART-HOLD-BACK=0.75",
                     "#EXT-X-PART-INF:PART-TARGET=0.25", "#EXT-X-MEDIA-SEQUENCE:0", "#EXT-X-MAP:URI=\"init.mp4\""]
        func parts(_ msn: Int, _ count: Int) {
            for p in 0..<count {
                lines.append("#EXT-X-PART:DURATION=0.25,URI=\"\(partName((msn, p)))\"" + (p == 0 ? ",INDEPENDENT=YES" : ""))
            }
        }
        for msn in 0..<nextPart.msn {
            parts(msn, Self.partsPerSegment)
            lines += ["#EXTINF:1.00000,", "seg\(msn).m4s"]
        }
        parts(nextPart.msn, nextPart.part)
        lines.append("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"\(partName(nextPart))\"")
        try publish("index.m3u8", Data((lines.joined(separator: "\n") + "\n").utf8))
    }

    /// Written as `.name.tmp`, renamed into place, then announced.
    private func publish(_ name: String, _ data: Data) throws {
        let temporary = folder.appendingPathComponent(".\(name).tmp")
        try data.write(to: temporary)
        guard rename(temporary.path, folder.appendingPathComponent(name).path) == 0 else { throw ToolFailure("rename \(name)") }
        notify(folder.appendingPathComponent(name).path)
    }

    /// A part's bytes: its name over and over, 2 KB.
    static func bytes(_ part: (msn: Int, part: Int)) -> Data {
        Data(String(repeating: "part \(part.msn).\(part.part) ", count: 200).utf8.prefix(2048))
    }
}

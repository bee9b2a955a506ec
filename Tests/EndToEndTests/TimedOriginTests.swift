import Foundation
import Testing

extension EndToEnd {
    /// Live HLS inputs from an origin that publishes on the wall clock (`scripts/live-publisher.py`,
    /// the live bench's origin, which logs when each segment and part is published, where a part's
    /// bytes are, and when each request came and was answered): our reader asks on time, and with
    /// LL-HLS a part's pictures leave the decoder before the next part is published.
    @Suite("Live HLS input against a timed origin", .serialized)
    struct TimedOrigin {
        /// A 14 s clip served live: x264 veryfast (3 B-frames, a B-pyramid), closed 2 s GOPs as a
        /// live encoder's, AAC beside it.
        struct Origin {
            let media: URL
            let log: URL
            let port: Int
            let server: Subprocess
            static let publisher = Paths.packageRoot.appendingPathComponent("scripts/live-publisher.py").path

            static func start(in sandbox: Sandbox, _ mode: [String]) async throws -> Origin {
                let media = sandbox.file("media")
                try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
                try await ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-f", "lavfi", "-i", "sine=frequency=440",
                                  "-t", "14", "-c:v", "libx264", "-preset", "veryfast", "-g", "60", "-keyint_min", "60",
                                  "-sc_threshold", "0", "-flags", "+cgop", "-pix_fmt", "yuv420p", "-c:a", "aac",
                                  "-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod",
                                  "-hls_segment_filename", media.appendingPathComponent("seg%05d.ts").path,
                                  media.appendingPathComponent("index.m3u8").path])
                let log = sandbox.file("server.log"), portFile = sandbox.file("port")
                let server = try Subprocess(Paths.tool("python3"), [publisher, "serve", "--media", media.path, "--log", log.path,
                                                                    "--port-file", portFile.path, "--preload", "1"] + mode)
                var port: Int?
                for _ in 0..<300 where port == nil {
                    port = (try? String(contentsOf: portFile, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
                    if port == nil { try await Task.sleep(for: .milliseconds(100)) }
                }
                guard let port else { server.send(SIGKILL); throw ToolFailure("the origin did not announce its port") }
                return Origin(media: media, log: log, port: port, server: server)
            }

            var url: String { "http://127.0.0.1:\(port)/s1/live.m3u8" }

            /// The server's log, tab-separated fields per line.
            func records() throws -> [[String]] {
                try String(contentsOf: log, encoding: .utf8).split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
            }

            /// For each segment published after the client's first request, its publication → the
            /// answer to the client's first request for its bytes (the segment, or its first part),
            /// from the server's own clock; segments from `skip` after the first one fetched.
            func reloadDelays(skip: Int) throws -> [Double] {
                let log = try records()
                let published = Dictionary(log.filter { $0[0] == "publish" }.map { (Int($0[1])!, Double($0[2])!) }, uniquingKeysWith: min)
                let partPublished = Dictionary(log.filter { $0[0] == "part" && $0[2] == "0" }.map { (Int($0[1])!, Double($0[3])!) },
                                               uniquingKeysWith: min)
                var answered: [Int: Double] = [:]
                for r in log where r[0] == "request" && r[3] == "200" {
                    guard let m = r[2].firstMatch(of: /\/s1\/seg(\d+)(\.part0)?\.ts/), let n = Int(m.1) else { continue }
                    if answered[n] == nil { answered[n] = Double(r[4])! }
                }
                guard let first = answered.keys.min() else { return [] }
                return answered.keys.sorted().filter { $0 >= first + skip }.compactMap { n in
                    let from = partPublished[n] ?? published[n]
                    return from.map { answered[n]! - $0 }
                }
            }

            func stop() { server.send(SIGKILL) }
        }

        func run(_ origin: Origin, in sandbox: Sandbox, report: URL) async throws -> [String: Any] {
            let result = try await LiveFilter.run(["run", origin.url, "-o", sandbox.file("out/index.m3u8").path,
                                                   "--hls-time", "2", "--chain", "mirror", "--encoder-preset", "ultrafast",
                                                   "--report", report.path, "-q"], timeout: .seconds(120))
            try LiveFilter.requireSuccess(result)
            return try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any])
        }

        @Test("LL-HLS input: a part's pictures are decoded before the next part is published (B-frames, MPEG-TS parts)",
              .timeLimit(.minutes(3)))
        func partsDecodedWithinAPart() async throws {
            let sandbox = try Sandbox("ll-input")
            defer { sandbox.remove() }
            let origin = try await Origin.start(in: sandbox, ["--parts", "0.5"])
            defer { origin.stop() }
            let report = sandbox.file("report.json")
            let json = try await run(origin, in: sandbox, report: report)
            let hls = try #require(json["hls_input"] as? [String: Any])
            #expect((hls["parts_read"] as? Int ?? 0) >= 20, "read part by part: \(hls)")
            #expect((json["frames_decoded"] as? Int ?? 0) >= 300, "pictures decoded: \(json["frames_decoded"] ?? "none")")
            let decoding = try #require(json["live_decoding"] as? [String: Any])
            // 16–21 in 12 s of this clip (a part that ends where a mini-GOP does needs none).
            #expect((decoding["held_pictures_released"] as? Int ?? 0) >= 5, "pictures given up early: \(decoding["held_pictures_released"] ?? "none")")
            // Every part requested before it was out (a preload hint or a blocking reload), answered at its publication.
            let delays = try origin.reloadDelays(skip: 2)
            #expect(delays.count >= 3 && delays.allSatisfy { $0 < 0.25 }, "publication -> first part answered: \(delays)")
            // The origin's own account: each picture from the moment it and every picture shown
            // before it were published.
            let measured = try await Subprocess.run(Paths.tool("python3"), [Origin.publisher, "decode-latency", "--media", origin.media.path,
                                                                            "--server-log", origin.log.path, "--report", report.path,
                                                                            "--skip", "3"])
            #expect(measured.succeeded, "\(measured.summary)")
            let figures = try #require(try JSONSerialization.jsonObject(with: measured.stdout) as? [String: Any], "\(measured.stdoutText)")
            let pictures = figures["pictures"] as? Int ?? 0, within = figures["within_a_part"] as? Double ?? 0
            #expect(pictures >= 150, "steady-state pictures measured: \(figures)")
            // Without the demuxer's pause at a part's end and the decoder's early pictures, 77 % came
            // out before the next part (86 % with the pause alone, 92 % with the early pictures alone);
            // with both, 100 % (p95 0.03 s after publication, against 0.50 s).
            #expect(within >= 0.97, "pictures decoded before the next part came out: \(figures)")
        }

        @Test("blocking reload: each new segment is asked for before it is out and answered at its publication",
              .timeLimit(.minutes(3)))
        func blockingReloadFindsSegmentsAtOnce() async throws {
            let sandbox = try Sandbox("block-input")
            defer { sandbox.remove() }
            let origin = try await Origin.start(in: sandbox, ["--block-reload"])
            defer { origin.stop() }
            let json = try await run(origin, in: sandbox, report: sandbox.file("report.json"))
            let hls = try #require(json["hls_input"] as? [String: Any])
            #expect((hls["blocking_reloads"] as? Int ?? 0) >= 4, "\(hls)")
            #expect((json["frames_decoded"] as? Int ?? 0) >= 300, "pictures decoded: \(json["frames_decoded"] ?? "none")")
            let delays = try origin.reloadDelays(skip: 1)
            #expect(delays.count >= 4 && delays.allSatisfy { $0 < 0.25 }, "publication -> segment answered: \(delays)")
        }

        @Test("plain live playlist: reloads find each new segment soon after it is out (not up to a target duration later)",
              .timeLimit(.minutes(3)))
        func plainReloadsOnTime() async throws {
            let sandbox = try Sandbox("plain-input")
            defer { sandbox.remove() }
            let origin = try await Origin.start(in: sandbox, [])
            defer { origin.stop() }
            let json = try await run(origin, in: sandbox, report: sandbox.file("report.json"))
            #expect((json["frames_decoded"] as? Int ?? 0) >= 300, "pictures decoded: \(json["frames_decoded"] ?? "none")")
            // Reloads at RFC 8216's floors drift up to a target duration (2 s) behind each publication;
            // ours lock onto the origin's phase. From the third segment on, each within 0.6 s.
            let delays = try origin.reloadDelays(skip: 2)
            #expect(delays.count >= 3 && delays.allSatisfy { $0 < 0.6 }, "publication -> segment answered: \(delays)")
        }
    }
}

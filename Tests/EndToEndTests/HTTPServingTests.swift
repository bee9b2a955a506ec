import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEnd {
    /// The HTTP side as players and operators meet it (Hummingbird under `livefilter serve`): byte
    /// ranges, conditional requests, keep-alive, limits, a crowd of live players, and a live run's
    /// metrics.
    @Suite("HTTP")
    struct HTTP {
        /// A folder with a real MP4, a TS segment and a playlist, served by `livefilter serve`.
        func served(_ sandbox: Sandbox, extra: [String] = []) async throws -> (Subprocess, Int, URL) {
            let folder = try await Serve().makeHLS(in: sandbox, "site")
            try FileManager.default.copyItem(at: Sample.landscape.url, to: folder.appendingPathComponent("clip.mp4"))
            let (child, port) = try await Serve().startServe(folder, extra: extra)
            return (child, port, folder)
        }

        @Test("byte ranges: 206 slices of an MP4 and of a TS segment (first, open, suffix), 416 past the end, If-Range")
        func byteRanges() async throws {
            let sandbox = try Sandbox("http-range")
            defer { sandbox.remove() }
            let (server, port, folder) = try await served(sandbox)
            defer { server.send(SIGKILL) }
            for file in ["clip.mp4", "index_00000.ts"] {
                let whole = try Data(contentsOf: folder.appendingPathComponent(file))
                let n = whole.count
                let cases: [(range: String, slice: Range<Int>)] = [
                    ("bytes=0-99", 0..<100), ("bytes=1000-", 1000..<n), ("bytes=-500", (n - 500)..<n),
                    ("bytes=\(n - 10)-\(n + 1000)", (n - 10)..<n),
                ]
                for (range, slice) in cases {
                    let r = try RawHTTP.request(port: port, "/" + file, headers: ["Range": range])
                    #expect(r.status == 206, "\(file) \(range): \(r.status)")
                    #expect(r.body == whole.subdata(in: slice), "\(file) \(range): \(r.body.count) bytes")
                    #expect(r.header("Content-Range") == "bytes \(slice.lowerBound)-\(slice.upperBound - 1)/\(n)", "\(file) \(range)")
                    #expect(r.header("Accept-Ranges") == "bytes")
                }
                let past = try RawHTTP.request(port: port, "/" + file, headers: ["Range": "bytes=\(n)-"])
                #expect(past.status == 416 && past.header("Content-Range") == "bytes */\(n)", "\(file): \(past.status)")
                let stale = try RawHTTP.request(port: port, "/" + file, headers: ["Range": "bytes=0-9", "If-Range": "\"old\""])
                #expect(stale.status == 200 && stale.body == whole, "If-Range that no longer holds: the whole file")
                let several = try RawHTTP.request(port: port, "/" + file, headers: ["Range": "bytes=0-1,5-6"])
                #expect(several.status == 200 && several.body == whole, "several ranges: the whole file")
            }
        }

        @Test("conditional requests: 304 on a repeat (ETag, Last-Modified); a republished playlist gets a new ETag")
        func conditional() async throws {
            let sandbox = try Sandbox("http-304")
            defer { sandbox.remove() }
            let (server, port, folder) = try await served(sandbox)
            defer { server.send(SIGKILL) }
            let first = try RawHTTP.request(port: port, "/index_00000.ts")
            let etag = try #require(first.header("ETag"))
            let modified = try #require(first.header("Last-Modified"))
            let again = try RawHTTP.request(port: port, "/index_00000.ts", headers: ["If-None-Match": etag])
            #expect(again.status == 304 && again.body.isEmpty && again.header("ETag") == etag)
            #expect(try RawHTTP.request(port: port, "/index_00000.ts", headers: ["If-Modified-Since": modified]).status == 304)
            #expect(try RawHTTP.request(port: port, "/index_00000.ts", headers: ["If-None-Match": "\"other\""]).status == 200)
            // A live writer replaces the playlist by rename: same size, same second, new ETag.
            let playlist = folder.appendingPathComponent("index.m3u8")
            let before = try #require(try RawHTTP.request(port: port, "/index.m3u8").header("ETag"))
            let text = try Data(contentsOf: playlist)
            try text.write(to: folder.appendingPathComponent(".next"))
            rename(folder.appendingPathComponent(".next").path, playlist.path)
            let after = try RawHTTP.request(port: port, "/index.m3u8", headers: ["If-None-Match": before])
            #expect(after.status == 200 && after.header("ETag") != before, "republished: \(after.status)")
        }

        @Test("keep-alive: several requests on one connection, HEAD included; the player page and 404 too")
        func keepAlive() async throws {
            let sandbox = try Sandbox("http-keepalive")
            defer { sandbox.remove() }
            let (server, port, folder) = try await served(sandbox)
            defer { server.send(SIGKILL) }
            let connection = try RawHTTPConnection(port: port)
            let playlist = try connection.request("/index.m3u8")
            let playlistFile = try Data(contentsOf: folder.appendingPathComponent("index.m3u8"))
            #expect(playlist.status == 200 && playlist.body == playlistFile)
            #expect(playlist.header("Connection")?.lowercased() != "close")
            let head = try connection.request("/clip.mp4", method: "HEAD")
            let clipSize = try Data(contentsOf: Sample.landscape.url).count
            #expect(head.status == 200 && head.header("Content-Length") == String(clipSize))
            let segment = try connection.request("/index_00000.ts", headers: ["Range": "bytes=0-187"])
            #expect(segment.status == 206 && segment.body.count == 188 && segment.body.first == 0x47, "a TS packet")
            #expect(try connection.request("/missing.ts").status == 404)
            #expect(try connection.request("/").status == 200)
        }

        @Test("limits: 503 beyond --max-connections, idle connections closed after --idle-timeout, 431 for headers over 16 KiB")
        func limits() async throws {
            let sandbox = try Sandbox("http-limits")
            defer { sandbox.remove() }
            let (server, port, _) = try await served(sandbox, extra: ["--max-connections", "3", "--idle-timeout", "2"])
            defer { server.send(SIGKILL) }
            // First, on the fresh server: three connections held open; a fourth is told to come back.
            // (A client sees a close a moment before the server has counted it: with nothing closed
            // before them, the three are the only ones counted.)
            let held = try (0..<3).map { _ in try RawHTTPConnection(port: port) }
            for c in held { #expect(try c.request("/index.m3u8").status == 200) }
            let lastActive = ContinuousClock.now
            let refused = try RawHTTP.request(port: port, "/index.m3u8")
            #expect(refused.status == 503 && refused.header("Retry-After") != nil, "over the limit: \(refused.status)")
            // The idle timeout frees them: each is closed by the server, not before it has been idle
            // for about --idle-timeout (the upper bound only allows for a loaded machine).
            for c in held { #expect(c.closedByServer(), "an idle connection is closed") }
            let idle = ContinuousClock.now - lastActive
            #expect(idle >= .milliseconds(1500) && idle < .seconds(8), "closed after \(idle) idle; --idle-timeout 2")
            // Then a new client is served again (three closes counted at most a moment late cannot
            // fill three places), and the header limit holds.
            #expect(try RawHTTP.request(port: port, "/index.m3u8").status == 200, "served again once the idle ones closed")
            let big = try RawHTTP.request(port: port, "/index.m3u8", headers: ["X-Padding": String(repeating: "a", count: 20_000)])
            #expect(big.status == 431, "oversized headers: \(big.status)")
            #expect(try RawHTTP.request(port: port, "/index.m3u8", headers: ["X-Padding": String(repeating: "a", count: 8_000)]).status == 200)
        }

        @Test("200 players poll a live playlist and fetch its segments for 30 s: no error, memory bounded",
              .timeLimit(.minutes(2)))
        func crowd() async throws {
            let sandbox = try Sandbox("http-crowd")
            defer { sandbox.remove() }
            let source = try await Serve().makeHLS(in: sandbox, "source")
            let live = sandbox.file("live")
            try FileManager.default.createDirectory(at: live, withIntermediateDirectories: true)
            let segments = try FileManager.default.contentsOfDirectory(atPath: source.path).filter { $0.hasSuffix(".ts") }.sorted()
            // A live writer: one more segment every 2 s, a 4-segment window, the playlist replaced by
            // rename; players poll every second, so about half their polls are answered 304.
            @Sendable func publish(_ sequence: Int) throws {
                let name = String(format: "live_%05d.ts", sequence)
                try FileManager.default.copyItem(at: source.appendingPathComponent(segments[sequence % segments.count]),
                                                 to: live.appendingPathComponent(name))
                let first = max(0, sequence - 3)
                var text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:\(first)\n"
                for k in first...sequence { text += "#EXTINF:2.000,\n" + String(format: "live_%05d.ts", k) + "\n" }
                try Data(text.utf8).write(to: live.appendingPathComponent(".index.tmp"))
                rename(live.appendingPathComponent(".index.tmp").path, live.appendingPathComponent("index.m3u8").path)
                if first > 2 { unlink(live.appendingPathComponent(String(format: "live_%05d.ts", first - 3)).path) }
            }
            // The first playlist is there before any player asks for it.
            try publish(0)
            let writer = Task {
                for sequence in 1... {
                    try await Task.sleep(for: .seconds(2))  // the scenario: a segment every 2 s
                    try publish(sequence)
                }
            }
            defer { writer.cancel() }
            // 200 players from one address: over the default share of one client (64).
            let (server, port) = try await Serve().startServe(live, extra: ["--max-connections-per-client", "1024"])
            defer { server.send(SIGKILL) }
            let sampler = Task {
                var peak = 0, samples: [Int] = []
                while !Task.isCancelled {
                    if let s = ProcessSample(pid: server.pid) { peak = max(peak, s.residentKB); samples.append(s.residentKB) }
                    try? await Task.sleep(for: .seconds(1))  // the measurement: one memory sample a second
                }
                return (peak, samples)
            }
            let load = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/python3"),
                                                [Paths.packageRoot.appendingPathComponent("scripts/http-load.py").path,
                                                 "http://127.0.0.1:\(port)", "index.m3u8", "200", "30"], timeout: .seconds(90))
            sampler.cancel()
            let (peakKB, samples) = await sampler.value
            #expect(load.succeeded, "load client: \(load.summary)")
            let stats = try #require(try JSONSerialization.jsonObject(with: load.stdout) as? [String: Any], "\(load.stdoutText)")
            let requests = stats["requests"] as? Int ?? 0
            #expect(stats["errors"] as? Int == 0, "errors: \(stats)")
            #expect(requests >= 200 * 25, "requests: \(stats)")
            let status = stats["status"] as? [String: Int] ?? [:]
            #expect((status["304"] ?? 0) > 0 && (status["200"] ?? 0) > 0, "revalidated playlists and fetched segments: \(status)")
            #expect(stats["reconnects"] as? Int == 0, "every client kept its connection: \(stats)")
            // Memory: bounded by the connections, not by the requests (about 6000 of them).
            #expect(peakKB < 160_000, "peak RSS \(peakKB) KB")
            #expect(samples.count > 12, "one memory sample a second over the 30 s of load: \(samples.count)")
            if samples.count > 12 {
                let settled = samples[5], last = samples[samples.count - 1]
                #expect(last - settled < 20_000, "RSS grew from \(settled) KB to \(last) KB under steady load")
            }
            #expect(server.isRunning)
        }

        @Test("run --serve on a live HLS input: /metrics (Prometheus text) and /status (livefilter.status/1) with latency",
              .timeLimit(.minutes(2)))
        func metrics() async throws {
            let sandbox = try Sandbox("http-metrics")
            defer { sandbox.remove() }
            // A 12 s clip published one 1 s segment a second: live for about ten seconds.
            let clip = sandbox.file("clip.mp4")
            try await ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25", "-f", "lavfi", "-i", "sine=frequency=440",
                              "-t", "12", "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-pix_fmt", "yuv420p",
                              "-c:a", "aac", clip.path])
            let source = try await HLSTestServer.make(from: clip, in: sandbox, segmentSeconds: 1, window: 2, interval: 1)
            defer { source.stop() }
            let output = sandbox.file("out/index.m3u8")
            let child = try LiveFilter.start(["run", source.liveURL, "-o", output.path, "--hls-time", "1", "--chain", "blur sigma=2",
                                              "--encoder-preset", "ultrafast", "--serve", "127.0.0.1:0", "--serve-after", "--quiet",
                                              "--progress", "json"])
            defer { child.send(SIGKILL) }
            let port = try await LiveFilter.listeningPort(of: child, announcedBy: "serving ")
            // While it runs: /status shows the frames once the progress they come from has been
            // reported twice (the first report may be published to /status just after its line).
            let written = try await LiveFilter.progress(of: child, "frames written") { $0.framesWritten > 0 }
            _ = try await LiveFilter.progress(of: child, "the next report") { $0.elapsed > written.elapsed }
            let running = try #require(try JSONSerialization.jsonObject(with: RawHTTP.request(port: port, "/status").body) as? [String: Any])
            #expect(running["phase"] as? String == "running" && (running["framesOut"] as? Int ?? 0) > 0, "/status during the run: \(running)")
            // After it: the run says it is done and goes on serving.
            _ = try await child.firstStderrLine("'finished; still serving'", within: .seconds(60)) { $0.hasPrefix("finished; still serving at ") }
            let text = try RawHTTP.request(port: port, "/metrics").text
            #expect(text.contains("livefilter_finished 1"), "\(text)")
            for name in ["livefilter_frames_in_total", "livefilter_frames_out_total", "livefilter_ticks_total", "livefilter_ticks_repeated_total",
                         "livefilter_ticks_dropped_total", "livefilter_input_stalls_total", "livefilter_bytes_written_total",
                         "livefilter_segments_written_total", "livefilter_latency_seconds", "livefilter_segment_latency_seconds_bucket",
                         "livefilter_stage_seconds_total{stage=\"encode\"}", "livefilter_stage_ms_per_frame{stage=\"decode\"}",
                         "livefilter_filter_ms_per_frame{filter=\"blur"] {
                #expect(text.contains(name), "\(name) in /metrics:\n\(text)")
            }
            #expect(!text.split(separator: "\n").contains { !$0.hasPrefix("#") && !$0.hasPrefix("livefilter_") }, "every name is prefixed")
            func metric(_ name: String) -> Double? {
                text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
            }
            let status = try RawHTTP.request(port: port, "/status")
            #expect(status.header("Content-Type") == "application/json")
            let json = try #require(try JSONSerialization.jsonObject(with: status.body) as? [String: Any])
            #expect(json["format"] as? String == "livefilter.status/1")
            #expect(json["phase"] as? String == "finished")
            let framesOut = try #require(json["framesOut"] as? Int)
            #expect(framesOut >= 250, "frames out: \(json)")
            #expect(Double(framesOut) == metric("livefilter_frames_out_total"), "the same number in both")
            #expect(json["segmentsWritten"] as? Int ?? 0 >= 3, "\(json)")
            let latency = try #require(json["latencySeconds"] as? Double, "latency: \(json)")
            #expect(latency > 0 && latency < 15, "latency \(latency) s")
            let stages = json["stagesMsPerFrame"] as? [String: Double] ?? [:]
            #expect((stages["encode"] ?? 0) > 0 && (stages["decode"] ?? 0) > 0, "stages: \(stages)")
            let filters = json["filtersMsPerFrame"] as? [String: Double] ?? [:]
            #expect(filters.keys.contains { $0.hasPrefix("blur") }, "filters: \(filters)")
            child.send(SIGINT)
            #expect(await child.wait(timeout: .seconds(10)).succeeded)
        }
    }
}

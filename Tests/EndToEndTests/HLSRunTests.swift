import Foundation
import Serving
import Testing

/// HLS in and out over loopback HTTP, checked with ffmpeg's own HLS demuxer and `livefilter lint`.
extension EndToEnd {
    /// Serves `folder` on 127.0.0.1 (an ephemeral port) for reading the output back over HTTP.
    static func serve(_ folder: URL) async throws -> HTTPService {
        let files = StaticFiles(root: folder.path)
        return try await HTTPService.start(host: "127.0.0.1", port: 0) { try await files.respond(to: $0, context: $1) }
    }

    /// ffprobe on a URL or path, with frames counted.
    static func probe(_ location: String) async throws -> ProbeInfo {
        let result = try await Subprocess.run(Paths.ffprobe, ["-v", "error", "-print_format", "json", "-show_streams",
                                                              "-show_format", "-count_frames", location])
        guard result.succeeded else { throw ToolFailure(result) }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(ProbeInfo.self, from: result.stdout)
    }

    /// (uri, EXTINF) of each segment of a media playlist.
    static func segments(of playlist: URL) throws -> [(uri: String, duration: Double)] {
        let text = try String(contentsOf: playlist, encoding: .utf8)
        var out: [(String, Double)] = []
        var pending: Double?
        for line in text.split(separator: "\n").map(String.init) {
            if line.hasPrefix("#EXTINF:") { pending = Double(line.dropFirst(8).split(separator: ",").first ?? "") }
            else if !line.hasPrefix("#"), !line.isEmpty, let d = pending { out.append((line, d)); pending = nil }
        }
        return out
    }

    @Test("VOD HLS over HTTP in, chain, HLS out: frames, duration, segments, lint")
    func vodHLSRoundTrip() async throws {
        let sandbox = try Sandbox("hls-vod")
        defer { sandbox.remove() }
        let server = try await HLSTestServer.make(from: Sample.landscape.url, in: sandbox, segmentSeconds: 1)
        defer { server.stop() }
        let outDir = sandbox.file("out")
        try FileManager.default.createDirectory(at: outDir, withIntermediateDirectories: true)
        let playlist = outDir.appendingPathComponent("index.m3u8")
        let result = try await LiveFilter.run(["run", server.vodURL, "-o", playlist.path, "--chain", "mirror",
                                               "--fps", "30", "--hls-time", "2", "--quiet"])
        try LiveFilter.requireSuccess(result)

        let published = try await Self.serve(outDir)
        defer { published.shutdown() }
        let url = published.baseURL + "/index.m3u8"
        let info = try await Self.probe(url)
        let frames = try #require(info.video?.readFrames)
        #expect(frames == 150, "150 frames at 30 fps for the 5 s source, got \(frames)")
        let duration = try #require(info.format?.durationSeconds)
        #expect(abs(duration - 5.0) <= 1.0 / 30 + 0.001, "duration \(duration)")
        #expect(info.audio?.codecName == "aac")

        let lint = try await LiveFilter.run(["lint", url])
        #expect(lint.status == 0, "lint: \(lint.stdoutText) \(lint.stderrText)")

        // Every segment but the last lasts hls-time within a frame, starts with an IDR, decodes alone.
        let segs = try Self.segments(of: playlist)
        #expect(segs.count == 3)
        for (i, seg) in segs.enumerated() {
            if i < segs.count - 1 { #expect(abs(seg.duration - 2.0) <= 1.0 / 30 + 0.001, "\(seg.uri): \(seg.duration)") }
            let file = outDir.appendingPathComponent(seg.uri)
            let first = try #require(try await FFprobe.videoFrames(file).first)
            #expect(first.isKey && first.pictType == "I", "\(seg.uri) starts with \(String(describing: first.pictType))")
            let decode = try await Subprocess.run(Paths.ffmpeg, ["-v", "error", "-i", file.path, "-f", "null", "-"])
            #expect(decode.succeeded && decode.stderrText.isEmpty, "\(seg.uri) alone: \(decode.stderrText)")
        }
    }

    @Test("live HLS in, live HLS out: grows while the input grows, bounded latency, ENDLIST at the end")
    func liveToLive() async throws {
        let sandbox = try Sandbox("hls-live")
        defer { sandbox.remove() }
        let clip = sandbox.file("clip.mp4")
        try await ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                          "-t", "12", "-c:v", "libx264", "-preset", "veryfast", "-g", "30", "-keyint_min", "30", "-sc_threshold", "0",
                          "-c:a", "aac", "-shortest", clip.path])
        let server = try await HLSTestServer.make(from: clip, in: sandbox, segmentSeconds: 1, window: 5, interval: 1)
        defer { server.stop() }
        let outDir = sandbox.file("out")
        try FileManager.default.createDirectory(at: outDir, withIntermediateDirectories: true)
        let playlist = outDir.appendingPathComponent("live.m3u8")
        let report = sandbox.file("report.json")
        // Every publication of the output playlist is a rename into the folder: read each one.
        let watch = try FolderWatch(outDir)
        defer { watch.stop() }
        let child = try LiveFilter.start(["run", server.liveURL, "-o", playlist.path, "--chain", "blur 2 | mirror",
                                          "--hls-time", "1", "--hls-list-size", "3", "--max-latency", "4",
                                          "--report", report.path, "--quiet"])
        defer { child.send(SIGKILL) }
        // The watch ends with the run (or after a minute, and the wait below reports the hang).
        let ended = Task {
            await child.exited()
            watch.stop()
        }
        let limit = Task {
            try await Task.sleep(for: .seconds(60))
            watch.stop()
        }
        defer { ended.cancel(); limit.cancel() }
        // While the input grows, the output playlist is published and grows too, without ENDLIST.
        var sequences: [Int] = []
        var sawOpenPlaylist = false
        for await name in watch.names where name == playlist.lastPathComponent {
            guard let text = try? String(contentsOf: playlist, encoding: .utf8) else { continue }
            if !text.contains("#EXT-X-ENDLIST") { sawOpenPlaylist = true }
            let last = try Self.segments(of: playlist).last?.uri ?? ""
            if let n = Int(last.filter(\.isNumber)) { sequences.append(n) }
        }
        let result = await child.wait(timeout: .seconds(30))
        try LiveFilter.requireSuccess(result)
        #expect(sawOpenPlaylist, "the output playlist was published during the run")
        #expect(Set(sequences).count >= 3, "the output grew while the input grew: \(sequences)")
        let final = try String(contentsOf: playlist, encoding: .utf8)
        #expect(final.contains("#EXT-X-ENDLIST"))
        #expect(!final.contains("#EXT-X-PLAYLIST-TYPE"), "a live input gives a sliding-window playlist")
        #expect(final.contains("#EXT-X-PROGRAM-DATE-TIME:"))
        #expect(try Self.segments(of: playlist).count == 3)

        // Latency stayed within the bound, measured by the run itself.
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any]
        let ticks = try #require(json?["ticks"] as? [String: Any])
        let latency = try #require(ticks["maximum_latency"] as? Double)
        #expect(latency <= 4.0 + 0.1, "maximum latency \(latency) s")

        let published = try await Self.serve(outDir)
        defer { published.shutdown() }
        let lint = try await LiveFilter.run(["lint", published.baseURL + "/live.m3u8", "--profile", "livefilter"])
        #expect(lint.status == 0, "lint: \(lint.stdoutText) \(lint.stderrText)")
        let info = try await Self.probe(published.baseURL + "/live.m3u8")
        #expect((info.video?.readFrames ?? 0) >= 85, "the last window decodes: \(String(describing: info.video?.readFrames))")
    }

    @Test("rendition ladder: master BANDWIDTH within 10% of the measured peak, CODECS from the SPS")
    func renditionLadder() async throws {
        let sandbox = try Sandbox("hls-ladder")
        defer { sandbox.remove() }
        let outDir = sandbox.file("out")
        try FileManager.default.createDirectory(at: outDir, withIntermediateDirectories: true)
        let master = outDir.appendingPathComponent("master.m3u8")
        let result = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", master.path, "--hls-time", "1",
                                               "--rendition", "640x360@900k", "--rendition", "320x180@300k",
                                               "--profile", "high", "--quiet"])
        try LiveFilter.requireSuccess(result)
        let text = try String(contentsOf: master, encoding: .utf8)
        let lines = text.split(separator: "\n").map(String.init)
        // Peak over full-length segments, from the files themselves.
        func peak(_ playlist: String) throws -> Double {
            let segs = try Self.segments(of: outDir.appendingPathComponent(playlist))
            let full = segs.count > 1 ? segs.filter { $0.duration >= 0.5 } : segs
            return try full.map { seg -> Double in
                let size = try FileManager.default.attributesOfItem(atPath: outDir.appendingPathComponent(seg.uri).path)[.size] as! NSNumber
                return size.doubleValue * 8 / seg.duration
            }.max() ?? 0
        }
        // The audio is one EXT-X-MEDIA rendition, not copied into every rung.
        let media = try #require(lines.first { $0.hasPrefix("#EXT-X-MEDIA:TYPE=AUDIO") }, "no audio rendition:\n\(text)")
        let audioURI = try #require(Self.attribute("URI", in: media))
        let audioPeak = try peak(audioURI)
        var checked = 0
        for (i, line) in lines.enumerated() where line.hasPrefix("#EXT-X-STREAM-INF:") {
            let uri = lines[i + 1]
            let bandwidth = try #require(Int(Self.attribute("BANDWIDTH", in: line) ?? ""))
            let average = try #require(Int(Self.attribute("AVERAGE-BANDWIDTH", in: line) ?? ""))
            #expect(average <= bandwidth, "\(uri): a peak is a peak: AVERAGE-BANDWIDTH \(average) > BANDWIDTH \(bandwidth)")
            #expect(Self.attribute("AUDIO", in: line) == "audio", "\(line)")
            let segs = try Self.segments(of: outDir.appendingPathComponent(uri))
            let expected = try peak(uri) + audioPeak
            #expect(abs(Double(bandwidth) - expected) / expected <= 0.10, "\(uri): BANDWIDTH \(bandwidth) vs video + audio peak \(Int(expected))")
            let rung = try await FFprobe.probe(outDir.appendingPathComponent(segs[0].uri))
            #expect(rung.audio == nil, "\(uri): the rung carries no audio of its own")
            // CODECS avc1.PPCCLL against the stream's profile and level.
            let codecs = try #require(Self.attribute("CODECS", in: line))
            let avc = try #require(codecs.split(separator: ",").first { $0.hasPrefix("\"avc1.") || $0.hasPrefix("avc1.") })
            let hex = String(avc.filter { $0 != "\"" }.dropFirst(5))
            let profileIdc = Int(hex.prefix(2), radix: 16)
            let levelIdc = Int(hex.suffix(2), radix: 16)
            let info = try await FFprobe.probe(outDir.appendingPathComponent(segs[0].uri))
            #expect(profileIdc == 100, "High is profile_idc 100: \(hex)")
            #expect(levelIdc == info.video?.level, "level \(String(describing: levelIdc)) vs \(String(describing: info.video?.level))")
            #expect(codecs.contains("mp4a.40.2"))
            checked += 1
        }
        #expect(checked == 2)
    }

    static func attribute(_ name: String, in line: String) -> String? {
        guard let range = line.range(of: name + "=") else { return nil }
        var value = line[range.upperBound...]
        if value.hasPrefix("\"") {
            value = value.dropFirst()
            return String(value.prefix { $0 != "\"" })
        }
        return String(value.prefix { $0 != "," })
    }

    @Test("a playlist that references file:///etc/passwd is refused")
    func fileReferenceRefused() async throws {
        let sandbox = try Sandbox("hls-file")
        defer { sandbox.remove() }
        let server = try await HLSTestServer.make(from: Sample.landscape.url, in: sandbox, hostility: .fileReference)
        defer { server.stop() }
        let result = try await LiveFilter.run(["run", server.vodURL, "-o", sandbox.file("out.mp4").path, "--quiet"], timeout: .seconds(60))
        #expect(result.status != 0 && result.exitedNormally, "\(result.summary)")
        #expect(result.stderrText.contains("livefilter: error:"))
        #expect(!result.stderrText.contains("root:"), "nothing of /etc/passwd leaks")
        #expect(!FileManager.default.fileExists(atPath: sandbox.file("out.mp4").path))
    }

    @Test("a 404 segment is skipped with a warning")
    func missingSegmentSkipped() async throws {
        let sandbox = try Sandbox("hls-404")
        defer { sandbox.remove() }
        let server = try await HLSTestServer.make(from: Sample.landscape.url, in: sandbox, segmentSeconds: 1, hostility: .missing([1]))
        defer { server.stop() }
        let output = sandbox.file("out.mp4")
        let result = try await LiveFilter.run(["run", server.vodURL, "-o", output.path, "--quiet"], timeout: .seconds(90))
        try LiveFilter.requireSuccess(result)
        #expect(result.stderrText.contains("livefilter: warning:"), "stderr: \(result.stderrText)")
        let frames = try #require(try await FFprobe.probe(output, countFrames: true).video?.readFrames)
        #expect(frames > 0 && frames < 150, "frames \(frames)")
    }

    @Test("a silent server ends in a timeout error, not a hang")
    func silentServerTimesOut() async throws {
        let sandbox = try Sandbox("hls-silent")
        defer { sandbox.remove() }
        let server = try await HLSTestServer.make(from: Sample.landscape.url, in: sandbox, hostility: .silent)
        defer { server.stop() }
        let started = Date()
        let result = try await LiveFilter.run(["run", server.vodURL, "-o", sandbox.file("out.mp4").path, "--io-timeout", "2", "--quiet"],
                                              timeout: .seconds(60))
        #expect(!result.timedOut)
        #expect(result.status != 0 && result.exitedNormally, "\(result.summary)")
        #expect(Date().timeIntervalSince(started) < 30)
        LiveFilter.expectError(result, ExitCode(rawValue: result.status) ?? .inputUnreadable)
    }
}

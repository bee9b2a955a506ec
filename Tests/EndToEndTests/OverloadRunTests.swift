import Foundation
import Testing

/// `--overload adapt` end to end: a live HLS input the run cannot keep up with (each picture made
/// 40 ms slower by fault injection, `LIVEFILTER_FAULT_SLOW_PICTURE_MS`: 1.2× real time at 30 fps,
/// on any machine). The run sheds in its stated order — x264 to superfast and ultrafast with the
/// stream's coding tools, from a segment's start (seen in the segments' own x264 SEI), then
/// evenly fewer new pictures — keeps real time, exits 0
/// with an output as long as its input that plays, and says what it shed.
extension EndToEnd {
    @Suite("Overload", .serialized)
    struct OverloadRuns {
        struct Report: Decodable {
            struct Overload: Decodable {
                var steps: [String]
                var maxLevel: Int
                var changes: [Change]
                var ticksShed: Int
                var picturesNotDecoded: Int
                var encoderPresetChanges: Int
                struct Change: Decodable { var outputTime: Double; var level: Int; var steps: [String]; var taken: Bool; var reason: String }
            }
            struct HLSInput: Decodable { var segmentsRead: Int }
            var overload: Overload?
            var hlsInput: HLSInput?
            var framesDecoded: Int
            var framesRepeated: Int
            var framesWritten: Int
        }

        /// A live source of `seconds` (testsrc2 640x360 at 30 fps and a tone) in 1 s segments, served
        /// as a live playlist that `publish(count)` grows (a window of 4) and `publish(…, ended:)` ends.
        struct LiveSource {
            let segments: HLSTestServer
            let playlists: PlaylistServer
            let names: [(String, String)]
            var url: String { playlists.url("/live.m3u8") }
            var seconds: Double { segments.segments.reduce(0) { $0 + $1.duration } }

            static func make(seconds: Int, in sandbox: Sandbox) async throws -> LiveSource {
                let source = sandbox.file("source.mp4")
                try await ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=\(seconds)", "-f", "lavfi", "-i", "sine=frequency=440:duration=\(seconds)",
                                  "-c:v", "libx264", "-preset", "veryfast", "-g", "30", "-c:a", "aac", "-shortest", source.path])
                let segments = try await HLSTestServer.make(from: source, in: sandbox, segmentSeconds: 1)
                let playlists = try await PlaylistServer.start()
                try playlists.files(in: segments.folder)
                let live = LiveSource(segments: segments, playlists: playlists, names: segments.segments.map { ($0.name, String($0.duration)) })
                live.publish(1)
                return live
            }

            func publish(_ count: Int, ended: Bool = false) {
                let window = Array(names.prefix(count).suffix(4))
                playlists.playlist("/live.m3u8", PlaylistServer.mediaPlaylist(window, target: 1, sequence: max(0, count - 4), live: !ended))
            }

            /// One more segment a second, then the end.
            func publishAll() async throws {
                for count in 2...names.count { try await Task.sleep(for: .seconds(1)); publish(count) }
                publish(names.count, ended: true)
            }

            func stop() { segments.stop(); playlists.stop() }
        }

        /// Runs livefilter on `live` with each new picture `slowBy` ms slower (fault injection),
        /// 1 s HLS segments into the sandbox, while the source publishes to its end.
        static func runSlowed(_ live: LiveSource, slowBy ms: Int, _ extra: [String], in sandbox: Sandbox) async throws -> (ProcessResult, Report, URL) {
            let output = sandbox.file("out/index.m3u8")
            let reportFile = sandbox.file("report.json")
            let run = Task {
                try await livefilterInShell("export LIVEFILTER_FAULT_SLOW_PICTURE_MS=\(ms)",
                                            ["run", live.url, "-o", output.path, "--hls-time", "1", "--hls-playlist", "event",
                                             "--report", reportFile.path, "-y", "-q"] + extra, timeout: .seconds(120))
            }
            try await live.publishAll()
            let result = try await run.value
            try LiveFilter.requireSuccess(result)
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            return (result, try decoder.decode(Report.self, from: Data(contentsOf: reportFile)), output)
        }

        /// x264's settings as its SEI names them, for each listed segment that starts a new encoder
        /// (x264 writes the SEI with its first picture).
        static func x264Settings(of playlist: URL) throws -> [(segment: String, settings: String)] {
            let listed = try String(contentsOf: playlist, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("#") }
            return try listed.compactMap { name in
                let bytes = try Data(contentsOf: playlist.deletingLastPathComponent().appendingPathComponent(String(name)))
                let text = String(decoding: bytes.prefix(200_000), as: UTF8.self)
                guard let start = text.range(of: "x264 - core") else { return nil }
                return (String(name), String(text[start.lowerBound...].prefix(2_000)))
            }
        }

        /// One option's value in x264's settings text (" subme=7 " → "7").
        static func value(of option: String, in settings: String) -> String {
            guard let range = settings.range(of: " \(option)=") else { return "-" }
            return String(settings[range.upperBound...].prefix { !$0.isWhitespace })
        }

        @Test("overload: a run far behind on work it has read is not stalled: ENDLIST under load exits 0, every frame accounted for",
              .timeLimit(.minutes(2)))
        func behindIsNotAStall() async throws {
            let sandbox = try Sandbox("overload-stall")
            defer { sandbox.remove() }
            let live = try await LiveSource.make(seconds: 8, in: sandbox)
            defer { live.stop() }
            // 60 ms a picture: 1.8× real time, nothing shed (`off`): at the input's end the run is
            // ~6 s behind, over twice the loss time (2.5 s: above the reload schedule's gaps).
            // Those seconds are work, not the input's silence.
            let (_, report, output) = try await Self.runSlowed(live, slowBy: 60, ["--overload", "off", "--input-loss-after", "2.5"], in: sandbox)
            // Every picture of every segment read was decoded (1 s segments: the run joins at the
            // first or, in phase with the origin, at the next load's newest), and the output lasts
            // as long as that input.
            let read = try #require(report.hlsInput).segmentsRead
            #expect(read >= Int(live.seconds) - 2, "\(read) of \(live.seconds) segments read")
            #expect(report.framesDecoded == read * 30, "\(report.framesDecoded) decoded of \(read) s read")
            #expect(abs(Double(report.framesWritten) / 30 - Double(read)) < 0.5, "\(report.framesWritten) written")
            try await ChannelTests.expectPlayable(output)
        }

        @Test("overload: a live run 1.2× too slow sheds a preset, then evenly fewer pictures; keeps real time, output as long as the input",
              .timeLimit(.minutes(3)))
        func liveRunTooSlowSheds() async throws {
            let sandbox = try Sandbox("overload")
            defer { sandbox.remove() }
            let live = try await LiveSource.make(seconds: 24, in: sandbox)
            defer { live.stop() }
            let (result, report, output) = try await Self.runSlowed(live, slowBy: 40, ["--encoder-preset", "veryfast", "--log-level", "notice"], in: sandbox)
            let overload = try #require(report.overload)
            print("overload: \(overload.changes.map { "\($0.outputTime) s \($0.taken ? "+" : "-")\($0.steps) (\($0.reason))" }), shed \(overload.ticksShed), not decoded \(overload.picturesNotDecoded), repeated \(report.framesRepeated)/\(report.framesWritten)")
            #expect(overload.steps.first == "x264 preset superfast")
            // The preset alone cannot help a slow chain: the run goes on to thin its pictures —
            // non-reference ones, never decoded (x264's B-pictures here), else after decoding.
            #expect(overload.maxLevel >= 3 && overload.ticksShed + overload.picturesNotDecoded > 0, "\(overload)")
            #expect(overload.encoderPresetChanges >= 1)
            // At 0.82× real time both preset steps at once (they cost no picture), then thinning.
            #expect(result.stderrText.contains("overload: shedding (x264 preset superfast; x264 preset ultrafast with the stream's coding tools)"), "\(result.stderrText)")
            // A picture left out by the thinning repeats the last one by choice: not a stalled input.
            #expect(!result.stderrText.contains("input stalled"), "\(result.stderrText)")
            // Evenly, not half the pictures: at most a third repeated, all shed ones among them.
            #expect(report.framesRepeated >= overload.ticksShed && report.framesRepeated * 3 <= report.framesWritten, "\(report.framesRepeated) of \(report.framesWritten)")
            // As long as the input (1 s segments at 30 fps, from the first segment it read).
            let input = Double(try #require(report.hlsInput).segmentsRead)
            #expect(abs(Double(report.framesWritten) / 30 - input) < 1.5, "\(report.framesWritten) frames for \(input) s")
            try await ChannelTests.expectPlayable(output)
            // The segments say which x264 settings made them (x264's SEI): veryfast (subme=2) first,
            // ultrafast (subme=0) once the steps took effect, from a segment's start — every one
            // with CABAC and the 8×8 transform, the stream's coding tools.
            #expect(overload.steps.prefix(2) == ["x264 preset superfast", "x264 preset ultrafast with the stream's coding tools"])
            let encoders = try Self.x264Settings(of: output)
            for (name, settings) in encoders {
                #expect(settings.contains("cabac=1") && settings.contains("8x8dct=1"), "\(name): x264 settings without the stream's coding tools")
            }
            let submes = encoders.map { Self.value(of: "subme", in: $0.settings) }
            #expect(submes.first == "2" && submes.contains("0"), "x264 subme per new encoder: \(submes)")
        }

        @Test("overload: an fMP4 output at the default preset (medium) takes its preset steps under one avcC and decodes whole",
              .timeLimit(.minutes(3)))
        func fragmentedOutputTakesPresetSteps() async throws {
            let sandbox = try Sandbox("overload-fmp4")
            defer { sandbox.remove() }
            let live = try await LiveSource.make(seconds: 16, in: sandbox)
            defer { live.stop() }
            // Medium writes three reference pictures and a psy chroma offset into its parameter
            // sets; every faster encoder must write the same, or the step is refused (the output
            // has one initialisation section).
            let (result, report, output) = try await Self.runSlowed(live, slowBy: 40, ["--hls-segment-type", "fmp4", "--log-level", "notice"], in: sandbox)
            let overload = try #require(report.overload)
            #expect(overload.steps.prefix(4) == ["x264 preset faster", "x264 preset veryfast", "x264 preset superfast",
                                                 "x264 preset ultrafast with the stream's coding tools"])
            #expect(overload.encoderPresetChanges >= 1, "\(overload)")
            #expect(!result.stderrText.contains("not used for"), "\(result.stderrText)")
            let text = try String(contentsOf: output, encoding: .utf8)
            #expect(text.components(separatedBy: "#EXT-X-MAP:").count == 2, "one initialisation section: \(text)")
            // The whole presentation decodes through the one avcC: every picture written, no error.
            let decoded = try await ffmpeg(["-i", output.path, "-map", "0:v", "-f", "null", "-"])
            #expect(decoded.stderrText.isEmpty, "\(decoded.stderrText)")
            let frames = try await FFprobe.probe(output, countFrames: true).video?.readFrames ?? 0
            #expect(frames == report.framesWritten, "\(frames) pictures decoded of \(report.framesWritten) written")
            // Segments from a later encoder say so in x264's SEI (medium: subme=7).
            let submes = try Self.x264Settings(of: output).map { Self.value(of: "subme", in: $0.settings) }
            #expect(submes.first == "7" && submes.dropFirst().contains { $0 != "7" }, "x264 subme per new encoder: \(submes)")
        }
    }
}

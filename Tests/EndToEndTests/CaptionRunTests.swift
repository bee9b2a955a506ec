import Broadcast
import Foundation
import MediaIO
import Testing

/// Closed captions through the chain (issue 46, point 1), end to end: a source whose pictures carry
/// CEA-608 pop-on captions written here from the spec (A/53 `cc_data` on testsrc2's pictures,
/// encoded by libx264 with B-pictures), run through the built binary on every path a picture can
/// take — the planar chain, the RGB chain, a rotation, a three-rung ladder, `--fps 25` from 30,
/// passthrough, a live HLS input, and a live input shedding everything under overload — then read
/// back by FFmpeg's own caption decoder (`movie=…[out0+subcc]`, ccaption): every caption, in order,
/// at the source's time (or spacing, live) ± 2 frames, none twice. `--captions drop`: none.
extension EndToEnd {
    @Suite("Captions", .serialized)
    struct CaptionRuns {
        /// A caption as FFmpeg's decoder shows it: its text and when it appears.
        struct Caption: Equatable, CustomStringConvertible {
            var start: Double
            var text: String
            var description: String { "\(text)@\(String(format: "%.3f", start))" }
        }

        static let texts = ["ONE", "TWO", "THREE", "FOUR", "FIVE", "SIX", "SEVEN"]
        /// The source picture each caption's bytes start on (30 fps): one every 1⅓ s.
        static func firstPicture(of caption: Int) -> Int { 5 + 40 * caption }

        /// A CEA-608 byte with odd parity.
        static func odd(_ byte: UInt8) -> UInt8 { byte.nonzeroBitCount % 2 == 0 ? byte | 0x80 : byte }

        /// A pop-on caption on CC1: resume caption loading, erase non-displayed memory, a row-15
        /// preamble (control codes twice, as 608 sends them), the text, end of caption.
        static func popOn(_ text: String) -> [(UInt8, UInt8)] {
            var pairs: [(UInt8, UInt8)] = []
            func control(_ a: UInt8, _ b: UInt8) { pairs += [(odd(a), odd(b)), (odd(a), odd(b))] }
            control(0x14, 0x20)
            control(0x14, 0x2E)
            control(0x14, 0x70)
            let chars = Array(text.utf8)
            for i in stride(from: 0, to: chars.count, by: 2) {
                pairs.append((odd(chars[i]), i + 1 < chars.count ? odd(chars[i + 1]) : 0x80))
            }
            control(0x14, 0x2F)
            return pairs
        }

        /// Ten seconds of testsrc2 (320x180, 30 fps) from ffmpeg, decoded and encoded again by our
        /// Encoder (x264 veryfast: B-pictures, some never referenced) with each picture's `cc_data`:
        /// a 608 field-1 pair (the captions' bytes, else padding) and a field-2 padding pair.
        static func makeSource(in sandbox: Sandbox) async throws -> URL {
            let clip = sandbox.file("testsrc.mp4")
            try await ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30:duration=10", "-c:v", "libx264", "-preset", "ultrafast",
                              "-pix_fmt", "yuv420p", clip.path])
            var pictures = Array(repeating: [UInt8]([0xFC, 0x80, 0x80, 0xFD, 0x80, 0x80]), count: 300)
            for (index, text) in texts.enumerated() {
                for (i, pair) in popOn(text).enumerated() { pictures[firstPicture(of: index) + i].replaceSubrange(1...2, with: [pair.0, pair.1]) }
            }
            let source = sandbox.file("captioned.ts")
            FFmpegLog.setLevel(.error)
            let demuxer = try Demuxer(url: clip.path)
            let decoder = try Decoder(demuxer: demuxer, streamIndex: demuxer.video.index)
            var settings = VideoEncoderSettings()
            settings.speedPreset = .veryfast
            settings.keyframeInterval = .frames(30)
            let encoder = try Encoder.h264(size: demuxer.video.size, frameRate: MediaIO.Rational(30, 1), timeBase: MediaIO.Rational(1, 30),
                                           color: .bt709, settings: settings, globalHeader: false)
            let muxer = try Muxer(path: source.path, container: .ts, overwrite: false)
            let stream = try muxer.addStream(from: encoder)
            try muxer.begin()
            var index = 0
            func drainEncoder() throws {
                while case let .packet(packet) = try encoder.receive() {
                    packet.duration = 1
                    try muxer.write(packet, toStream: stream, timeBase: encoder.timeBase)
                }
            }
            func drainDecoder() throws {
                while case let .frame(frame) = try decoder.receive(), index < pictures.count {
                    frame.clearPictureType()
                    frame.presentationTimestamp = Int64(index)
                    frame.setCaptionData(pictures[index])
                    index += 1
                    try encoder.send(frame)
                    try drainEncoder()
                }
            }
            let packet = Packet()
            while case .packet = try demuxer.read(into: packet) {
                guard packet.streamIndex == demuxer.video.index else { continue }
                try decoder.send(packet)
                try drainDecoder()
            }
            decoder.sendEndOfStream()
            try drainDecoder()
            try encoder.sendEndOfStream()
            try drainEncoder()
            try muxer.commit()
            #expect(index == 300)
            return source
        }

        /// The source, and the captions FFmpeg's decoder finds in it: what every run must give.
        static func captionedSource(in sandbox: Sandbox) async throws -> (source: URL, captions: [Caption]) {
            let source = try await makeSource(in: sandbox)
            return (source, try await captions(in: source))
        }

        /// The captions FFmpeg's caption decoder finds in `file`'s video (SRT: start times, text).
        static func captions(in file: URL) async throws -> [Caption] {
            let result = try await ffmpeg(["-f", "lavfi", "-i", "movie=\(file.path)[out0+subcc]", "-map", "0:s", "-f", "srt", "-"])
            var out: [Caption] = []
            for block in result.stdoutText.replacingOccurrences(of: "\r", with: "").components(separatedBy: "\n\n") {
                let lines = block.split(separator: "\n").map(String.init)
                guard let timing = lines.firstIndex(where: { $0.contains("-->") }) else { continue }
                let parts = lines[timing].prefix(12).split(whereSeparator: { $0 == ":" || $0 == "," }).compactMap { Double($0) }
                guard parts.count == 4 else { continue }
                let start = parts[0] * 3600 + parts[1] * 60 + parts[2] + parts[3] / 1000
                // The decoder's SRT marks position and font (`{\\an7}`, `<font …>`): the words are what count.
                let text = lines[(timing + 1)...].joined(separator: " ")
                    .replacingOccurrences(of: "<[^>]*>|\\{[^}]*\\}", with: "", options: .regularExpression)
                out.append(Caption(start: start, text: text.trimmingCharacters(in: .whitespaces)))
            }
            return out
        }

        /// Every caption of `source` in `output`, in order, once, each within ± `frames` output
        /// pictures of the output picture that shows its source picture (`relative`: of its distance
        /// from the first caption, for a live run whose output starts where it joined).
        static func expectSame(_ output: [Caption], as source: [Caption], rate: Double, frames: Double = 2, relative: Bool = false,
                               sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(output.map(\.text) == source.map(\.text), "\(output) vs \(source)", sourceLocation: sourceLocation)
            guard output.count == source.count, let first = output.first, let sourceFirst = source.first else { return }
            for (out, src) in zip(output, source) {
                // The output picture showing a source time: the first tick at or after it.
                func shown(_ t: Double) -> Double { (t * rate - 1e-6).rounded(.up) / rate }
                let error = relative ? (out.start - first.start) - (shown(src.start) - shown(sourceFirst.start)) : out.start - shown(src.start)
                #expect(abs(error) <= frames / rate + 0.001, "\(out.text): \(out.start) s, the source's \(src.start) s", sourceLocation: sourceLocation)
            }
        }

        static func run(_ arguments: [String], environment prelude: String? = nil) async throws -> ProcessResult {
            let result = if let prelude { try await livefilterInShell(prelude, arguments) } else { try await LiveFilter.run(arguments) }
            try LiveFilter.requireSuccess(result)
            return result
        }

        @Test("file runs: the planar chain, the RGB chain, a rotation, --fps 25, passthrough — every caption once, in time; --captions drop: none")
        func fileRuns() async throws {
            let sandbox = try Sandbox("captions")
            defer { sandbox.remove() }
            let (source, expected) = try await Self.captionedSource(in: sandbox)
            // The oracle sees what was written: every caption, on the picture of its end-of-caption.
            #expect(expected.map(\.text) == Self.texts, "\(expected)")
            for (index, caption) in expected.enumerated() {
                // The first of the two end-of-caption codes shows it.
                let eoc = Double(Self.firstPicture(of: index) + Self.popOn(Self.texts[index]).count - 2) / 30
                #expect(abs(caption.start - eoc) < 0.002, "\(caption) vs \(eoc)")
            }
            let cases: [(name: String, arguments: [String], rate: Double)] = [
                ("planar", ["--chain", "blur 4 | mirror"], 30),
                ("rgb", ["--chain", "blur 4 | mirror", "--exact-rgb"], 30),
                ("rotate", ["--chain", "rotate 90"], 30),
                ("fps25", ["--chain", "blur 4 | mirror", "--fps", "25"], 25),
                ("passthrough", [], 30),
            ]
            for run in cases {
                let output = sandbox.file("\(run.name).mp4")
                let report = sandbox.file("\(run.name).json")
                _ = try await Self.run(["run", source.path, "-o", output.path, "-q", "--report", report.path] + run.arguments)
                let found = try await Self.captions(in: output)
                print("captions \(run.name): \(found)")
                Self.expectSame(found, as: expected, rate: run.rate)
                let counts = try Self.captionCounts(report)
                #expect(counts.bytesIn == 300 * 6 && counts.bytesOut > 0 && counts.tripletsDropped == 0, "\(run.name): \(counts)")
            }
            for arguments in [["--chain", "blur 4 | mirror"], []] {
                let output = sandbox.file("dropped.mp4")
                let report = sandbox.file("dropped.json")
                _ = try await Self.run(["run", source.path, "-o", output.path, "-q", "-y", "--captions", "drop", "--report", report.path] + arguments)
                #expect(try await Self.captions(in: output).isEmpty)
                let counts = try Self.captionCounts(report)
                #expect(counts.bytesIn == 300 * 6 && counts.bytesOut == 0 && !counts.kept, "\(counts)")
            }
        }

        @Test("a three-rung ladder: every rung carries every caption, in time; the master declares CC1 (dropped: NONE)")
        func ladder() async throws {
            let sandbox = try Sandbox("captions-ladder")
            defer { sandbox.remove() }
            let (source, expected) = try await Self.captionedSource(in: sandbox)
            let master = sandbox.file("out/master.m3u8")
            _ = try await Self.run(["run", source.path, "-o", master.path, "-q", "--chain", "blur 4 | mirror", "--hls-time", "2",
                                    "--rendition", "320x180@400k", "--rendition", "256x144@250k", "--rendition", "160x90@120k"])
            for rung in ["320x180", "256x144", "160x90"] {
                let playlist = sandbox.file("out/master_\(rung).m3u8")
                let found = try await Self.captions(in: playlist)
                print("captions \(rung): \(found)")
                Self.expectSame(found, as: expected, rate: 30)
            }
            // The plan probed the file's first pictures: 608 field 1, channel 1.
            let text = try String(contentsOf: master, encoding: .utf8)
            let lines = text.split(separator: "\n")
            #expect(lines.filter { $0.hasPrefix("#EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS") }.map { $0.contains("INSTREAM-ID=\"CC1\"") } == [true], "\(text)")
            #expect(lines.filter { $0.hasPrefix("#EXT-X-STREAM-INF") }.map { $0.contains("CLOSED-CAPTIONS=\"cc\"") } == [true, true, true], "\(text)")
            let dropped = sandbox.file("dropped/master.m3u8")
            _ = try await Self.run(["run", source.path, "-o", dropped.path, "-q", "--captions", "drop", "--hls-time", "2",
                                    "--rendition", "320x180@400k", "--rendition", "160x90@120k"])
            let droppedLines = try String(contentsOf: dropped, encoding: .utf8).split(separator: "\n")
            #expect(!droppedLines.contains { $0.hasPrefix("#EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS") })
            #expect(droppedLines.filter { $0.hasPrefix("#EXT-X-STREAM-INF") }.map { $0.hasSuffix("CLOSED-CAPTIONS=NONE") } == [true, true])
            #expect(try await Self.captions(in: sandbox.file("dropped/master_320x180.m3u8")).isEmpty)
        }

        @Test("an HLS input's master says what its variant carries; a ladder's master repeats it (CLOSED-CAPTIONS group, or NONE)")
        func declaredByInputMaster() async throws {
            let sandbox = try Sandbox("captions-master")
            defer { sandbox.remove() }
            let (source, _) = try await Self.captionedSource(in: sandbox)
            let segments = try await HLSTestServer.make(from: source, in: sandbox, segmentSeconds: 2)
            defer { segments.stop() }
            let masters = try await PlaylistServer.start()
            defer { masters.stop() }
            // CC3 too: the output repeats the input's word (its data has CC1 only), not a probe.
            masters.playlist("/cc.m3u8", """
                #EXTM3U
                #EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID="c",NAME="English",INSTREAM-ID="CC1"
                #EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID="c",NAME="Spanish",INSTREAM-ID="CC3"
                #EXT-X-STREAM-INF:BANDWIDTH=500000,CLOSED-CAPTIONS="c"
                \(segments.vodURL)

                """)
            masters.playlist("/none.m3u8", "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=500000,CLOSED-CAPTIONS=NONE\n\(segments.vodURL)\n")
            for (name, expected) in [("cc", ["CC1", "CC3"]), ("none", [])] {
                let master = sandbox.file("\(name)/master.m3u8")
                _ = try await Self.run(["run", masters.url("/\(name).m3u8"), "-o", master.path, "-q", "--hls-time", "2",
                                        "--rendition", "320x180@400k", "--rendition", "160x90@120k"])
                let lines = try String(contentsOf: master, encoding: .utf8).split(separator: "\n")
                let ids = lines.filter { $0.hasPrefix("#EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS") }.compactMap { $0.components(separatedBy: "INSTREAM-ID=\"").last?.prefix(3) }
                #expect(ids.map(String.init) == expected, "\(lines)")
                let attribute = expected.isEmpty ? "CLOSED-CAPTIONS=NONE" : "CLOSED-CAPTIONS=\"cc\""
                #expect(lines.filter { $0.hasPrefix("#EXT-X-STREAM-INF") }.map { $0.contains(attribute) } == [true, true], "\(lines)")
            }
        }

        @Test("a job split in three shards and joined: every caption once (a shard's pre-roll is the shard before's)")
        func shards() async throws {
            let sandbox = try Sandbox("captions-shards")
            defer { sandbox.remove() }
            let (source, expected) = try await Self.captionedSource(in: sandbox)
            let output = sandbox.file("joined.mp4")
            let plan = sandbox.file("plan.json").path
            _ = try await Self.run(["plan", source.path, "-o", output.path, "--shards", "3", "--plan", plan, "--fps", "25",
                                    "--chain", "blur 4 | mirror"])
            try await ShardCheck.runTasks(plan: plan, variable: "JOB_COMPLETION_INDEX")
            _ = try await Self.run(["join", plan, "-q"])
            let found = try await Self.captions(in: output)
            print("captions shards: \(found)")
            Self.expectSame(found, as: expected, rate: 25)
        }

        /// The source served as a live HLS playlist that gains a 1 s segment a second (a window of
        /// five), joined at its oldest segment so the whole source is in the output.
        static func liveRun(_ extra: [String], environment: String? = nil, in sandbox: Sandbox)
            async throws -> (found: [Caption], expected: [Caption], report: URL) {
            let (source, expected) = try await captionedSource(in: sandbox)
            let server = try await HLSTestServer.make(from: source, in: sandbox, segmentSeconds: 1)
            defer { server.stop() }
            let output = sandbox.file("live/index.m3u8")
            let report = sandbox.file("live.json")
            _ = try await run(["run", server.liveURL, "-o", output.path, "-q", "--hls-time", "1", "--hls-playlist", "event",
                               "--live-start", "oldest", "--report", report.path] + extra,
                              environment: environment)
            return (try await captions(in: output), expected, report)
        }

        @Test("a live HLS input: every caption, in order, at the source's spacing")
        func liveInput() async throws {
            let sandbox = try Sandbox("captions-live")
            defer { sandbox.remove() }
            let (found, expected, _) = try await Self.liveRun(["--chain", "blur 4 | mirror"], in: sandbox)
            print("captions live: \(found)")
            Self.expectSame(found, as: expected, rate: 30, relative: true)
        }

        @Test("a live input shedding every step (decoder skipping, thinning): shed pictures' captions are carried, not lost")
        func overloadShedding() async throws {
            let sandbox = try Sandbox("captions-overload")
            defer { sandbox.remove() }
            let (found, expected, report) = try await Self.liveRun(["--chain", "blur 4 | mirror", "--overload", "adapt"],
                                                                   environment: "export LIVEFILTER_PIN_OVERLOAD_LEVEL=99", in: sandbox)
            print("captions overload: \(found)")
            Self.expectSame(found, as: expected, rate: 30, relative: true)
            // It did shed: pictures left out before the decoder, and ticks that repeated instead.
            struct Shed: Decodable { struct Overload: Decodable { var picturesNotDecoded: Int; var ticksShed: Int }; var overload: Overload }
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            let shed = try decoder.decode(Shed.self, from: Data(contentsOf: report)).overload
            #expect(shed.picturesNotDecoded > 30, "\(shed)")
            let counts = try Self.captionCounts(report)
            #expect(counts.bytesIn == 300 * 6 && counts.tripletsDropped == 0, "\(counts)")
        }

        struct Counts: Decodable { var bytesIn: Int; var bytesOut: Int; var tripletsDropped: Int; var kept: Bool }

        static func captionCounts(_ report: URL) throws -> Counts {
            struct Report: Decodable { var captions: Counts }
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            return try decoder.decode(Report.self, from: Data(contentsOf: report)).captions
        }
    }
}

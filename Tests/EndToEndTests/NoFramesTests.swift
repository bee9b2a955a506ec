import Foundation
import Testing

/// "No output from no frames": a run that decodes no video frame from an input that claims a video
/// stream fails with a clear error and leaves nothing behind.
///
/// The input is what a new user gets from an interrupted download: a faststart MP4 (moov before
/// mdat) cut a few bytes into its mdat. The moov still lists all 150 video samples, so the file
/// opens and probes as a 640x360 H.264 clip, but not one sample is there to decode. Before the fix
/// `run` exited 0 and wrote a 262-byte MP4 with no frames (or a playlist with no segments).
///
/// The contract: exit 11 (documented in docs/operations.md, "Exit codes"), exactly one stderr line, starting
/// with `livefilter: error:` and saying that no video frame could be decoded, and nothing in the
/// output folder — no output file, no hidden `.NAME.livefilter-*` temporary, no playlist or segment.
extension EndToEnd {
    @Suite("No output from no frames")
    struct NoFrames {
        /// The documented exit code for "the input gave no video frame".
        static let noFramesExit: Int32 = 11

        /// One output kind, and the chain it runs with (an empty chain takes the direct path to the
        /// encoder, a blur the RGB path).
        struct Case: Sendable, CustomTestStringConvertible {
            /// Relative to the output folder.
            var output: String
            var chain: String?
            var testDescription: String { chain.map { "\(output) with \"\($0)\"" } ?? output }
        }

        static let cases: [Case] = [
            Case(output: "out.mp4"),
            Case(output: "out.mp4", chain: "blur sigma=2 | mirror"),
            Case(output: "index.m3u8"),
            Case(output: "%04d.png"),
        ]

        /// Writes `frameless.mp4` into `sandbox`: samples/landscape.mp4 remuxed with +faststart, then
        /// cut right after the moov (and any box between it and the mdat), the mdat's header and 16
        /// bytes of its payload. The top-level boxes are read from the file, not assumed.
        static func makeFramelessMP4(in sandbox: Sandbox) async throws -> URL {
            let faststart = sandbox.file("faststart.mp4")
            try await ffmpeg(["-i", Sample.landscape.url.path, "-map", "0", "-c", "copy", "-movflags", "+faststart", faststart.path])
            let boxes = try MP4Boxes.topLevel(of: faststart)
            let moov = try #require(boxes.firstIndex { $0.type == "moov" }, "no moov in \(boxes.map(\.type))")
            let mdat = try #require(boxes.firstIndex { $0.type == "mdat" }, "no mdat in \(boxes.map(\.type))")
            try #require(moov < mdat, "moov should come before mdat with +faststart: \(boxes.map(\.type))")
            let moovEnd = boxes[moov].offset + boxes[moov].size
            try #require(moovEnd <= boxes[mdat].offset)
            let bytes = try Data(contentsOf: faststart)
            // The mdat header is 8 bytes, or 16 with a 64-bit size (32-bit size field == 1).
            let mdatStart = Int(boxes[mdat].offset)
            let sizeField = bytes[mdatStart..<(mdatStart + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let mdatHeader = sizeField == 1 ? 16 : 8
            let cut = mdatStart + mdatHeader + 16
            try #require(cut < bytes.count - 1000, "the mdat should hold far more than 16 bytes")
            let input = sandbox.file("frameless.mp4")
            try bytes.prefix(cut).write(to: input)
            try FileManager.default.removeItem(at: faststart)
            return input
        }

        /// Video frames ffmpeg itself decodes from `url` (lines of its framemd5 output).
        static func framesFFmpegDecodes(_ url: URL) async throws -> Int {
            let result = try await Subprocess.run(Paths.ffmpeg, ["-hide_banner", "-nostdin", "-v", "error", "-i", url.path,
                                                                 "-map", "0:v:0", "-f", "framemd5", "-"])
            return result.stdoutText.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.count
        }

        /// The hostile input is what the issue describes: it claims a video stream with frames, and
        /// ffmpeg decodes none of it. (Checks the test's own premise, not livefilter.)
        @Test("no frames: the truncated faststart MP4 claims 150 video frames and none decodes")
        func noFramesInputIsWhatTheIssueDescribes() async throws {
            let sandbox = try Sandbox("no-frames")
            defer { sandbox.remove() }
            let input = try await Self.makeFramelessMP4(in: sandbox)
            let info = try await FFprobe.probe(input)
            let video = try #require(info.video, "the input should still claim a video stream")
            #expect(video.codecName == "h264")
            #expect(video.width == 640 && video.height == 360)
            #expect(video.nbFrames == "150", "the moov still lists every sample: \(video.nbFrames ?? "nil")")
            #expect(try await Self.framesFFmpegDecodes(input) == 0)
        }

        @Test("no frames: exit 11, one error line, nothing in the output folder", arguments: cases)
        func noFramesFailsCleanly(_ testCase: Case) async throws {
            let sandbox = try Sandbox("no-frames")
            defer { sandbox.remove() }
            let input = try await Self.makeFramelessMP4(in: sandbox)
            let outDir = sandbox.file("out")
            try FileManager.default.createDirectory(at: outDir, withIntermediateDirectories: true)
            var arguments = ["run", input.path, "-o", outDir.appendingPathComponent(testCase.output).path, "--quiet"]
            if let chain = testCase.chain { arguments += ["--chain", chain] }

            let (result, seconds) = try await timed {
                try await LiveFilter.run(arguments, timeout: .seconds(60))
            }

            #expect(result.exitedNormally && !result.timedOut, "\(result.summary)")
            #expect(result.status == Self.noFramesExit,
                    "expected exit \(Self.noFramesExit) (no video frame decoded): \(result.summary)")
            // FFmpeg's own notes on the damaged file ("partial file") may come first, as warnings.
            let lines = result.stderrLines.filter { !$0.hasPrefix("livefilter: warning:") }
            #expect(lines.count == 1, "expected exactly one error line, got \(lines.count):\n\(result.stderrText)")
            let error = lines.first { $0.hasPrefix("livefilter: error:") }
            #expect(error != nil && lines.first == error,
                    "stderr should be one 'livefilter: error:' line, got:\n\(result.stderrText)")
            #expect(error.map(Self.saysNoVideoFrameDecoded) == true,
                    "the error should say that no video frame could be decoded: \(result.stderrText)")
            for crashMarker in ["Fatal error", "Stack dump", "Current stack trace", "Segmentation fault", "Illegal instruction"] {
                #expect(!result.stderrText.contains(crashMarker), "crash output: \(result.stderrText)")
            }
            #expect(seconds < 10, "a frameless input should fail fast: \(seconds) s")

            // Nothing left: no output, no hidden temporary (contents(of:) lists dot files too), no
            // playlist, no segment, no frame — and nothing written beside the output folder either.
            let left = try sandbox.contents(of: "out").map { name in
                let size = (try? FileManager.default.attributesOfItem(atPath: outDir.appendingPathComponent(name).path)[.size]) as? Int
                return "\(name) (\(size.map(String.init) ?? "?") bytes)"
            }
            #expect(left.isEmpty, "the output folder should be empty, it holds: \(left.joined(separator: ", "))")
            let beside = try sandbox.contents()
            #expect(beside == ["frameless.mp4", "out"], "nothing beside the output folder: \(beside)")
        }

        /// Exit 11 has a row in the exit-code table of docs/operations.md that names what happened.
        @Test("no frames: docs/operations.md documents exit 11")
        func noFramesExitCodeIsDocumented() throws {
            let readme = try String(contentsOf: Paths.packageRoot.appendingPathComponent("docs/operations.md"), encoding: .utf8)
            let row = readme.split(separator: "\n").first { line in
                let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
                return cells.first == "11"
            }
            let documented = try #require(row, "docs/operations.md's \"Exit codes\" table has no row for 11")
            #expect(documented.lowercased().contains("frame"), "the row should say no video frame was decoded: \(documented)")
        }

        /// "no video frame could be decoded", "could not decode any video frame", "decoded no video
        /// frames"…: the line must speak of decoding and of no (or not any) video frame.
        static func saysNoVideoFrameDecoded(_ line: String) -> Bool {
            let text = line.lowercased()
            let aboutDecoding = text.contains("decod")
            let noFrame = ["no video frame", "any video frame", "no frame", "0 video frames", "zero video frames"]
                .contains { text.contains($0) }
            return aboutDecoding && noFrame
        }
    }
}

import Foundation
import Testing

/// Hostile input files: each run ends quickly with one clear error line and a documented exit code,
/// and nothing is left at the output path (RELIABILITY.md, "Hostile inputs").
extension EndToEnd {
    @Suite("Robustness: hostile input files")
    struct RobustnessInputs {
        enum BadFile: String, CaseIterable, Sendable, CustomTestStringConvertible {
            case zeroBytes = "zero-bytes.mp4"
            case randomBytes = "random.mp4"
            case text = "notes.mp4"
            case cutBeforeMoov = "cut-before-moov.mp4"
            var testDescription: String { rawValue }
        }

        /// Writes the bad file into `sandbox`.
        static func make(_ kind: BadFile, in sandbox: Sandbox) async throws -> URL {
            let url = sandbox.file(kind.rawValue)
            switch kind {
            case .zeroBytes:
                try Data().write(to: url)
            case .randomBytes:
                var generator = SystemRandomNumberGenerator()
                try Data((0..<200_000).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(to: url)
            case .text:
                try Data("Meeting notes\n- buy milk\n".utf8).write(to: url)
            case .cutBeforeMoov:
                // Without +faststart the moov is written last: half the file has only ftyp and mdat.
                let whole = sandbox.file("moov-last.mp4")
                try await ffmpeg(["-i", Sample.landscape.url.path, "-c", "copy", whole.path])
                #expect(try !MP4Boxes.moovBeforeMdat(whole))
                let bytes = try Data(contentsOf: whole)
                try bytes.prefix(bytes.count / 2).write(to: url)
                try FileManager.default.removeItem(at: whole)
            }
            return url
        }

        @Test("robustness: hostile file exits 5 in bounded time, nothing written", arguments: BadFile.allCases)
        func robustnessHostileFile(kind: BadFile) async throws {
            let sandbox = try Sandbox("robust-in")
            defer { sandbox.remove() }
            let input = try await Self.make(kind, in: sandbox)
            let (result, seconds) = try await timed {
                try await LiveFilter.run(["run", input.path, "-o", sandbox.file("out.mp4").path, "--chain", "mirror"], timeout: .seconds(30))
            }
            LiveFilter.expectError(result, .notMedia, mentioning: input.lastPathComponent)
            #expect(seconds < 5, "\(seconds) s")
            #expect(try sandbox.contents() == [kind.rawValue], "nothing but the input")
        }

        /// A chain may make a side of one pixel; 4:2:0 takes at least two, so the encoder gets 2 and
        /// the picture's last column or row is repeated (this used to stop the run on a precondition).
        @Test("robustness: a chain that makes a one-pixel side encodes it at 2, the edge repeated",
              arguments: [("crop 1x1+0+0", 2, 2), ("scale 1x100", 2, 100), ("crop 100x1+5+5", 100, 2),
                          ("scale 1x1 | blur sigma=2", 2, 2)])
        func robustnessOnePixelSide(chain: String, width: Int, height: Int) async throws {
            let sandbox = try Sandbox("robust-one-pixel")
            defer { sandbox.remove() }
            let output = sandbox.file("out.mp4")
            let result = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", output.path, "--quiet", "--no-audio",
                                                   "--crf", "0", "--chain", chain], timeout: .seconds(60))
            try LiveFilter.requireSuccess(result)
            let video = try #require(try await FFprobe.probe(output, countFrames: true).video)
            #expect(video.width == width && video.height == height, "\(chain): \(String(describing: video.width))x\(String(describing: video.height))")
            #expect((video.readFrames ?? 0) > 0)
            // The repeated column or row holds the picture's own samples, not black or junk.
            let picture = try await RGBPicture.firstFrame(of: output)
            func pixel(_ x: Int, _ y: Int) -> [Int] { (0..<3).map { Int(picture.pixels[(y * picture.width + x) * 3 + $0]) } }
            for y in 0..<picture.height {
                for x in 0..<picture.width {
                    let twin = pixel(width == 2 ? 0 : x, height == 2 ? 0 : y)
                    #expect(zip(pixel(x, y), twin).allSatisfy { abs($0 - $1) <= 6 }, "\(chain): (\(x), \(y)) \(pixel(x, y)) against \(twin)")
                }
            }
        }

        @Test("robustness: an mp4 cut in the middle of mdat keeps what decodes, warns, exits 0")
        func robustnessCutInMdat() async throws {
            let sandbox = try Sandbox("robust-in")
            defer { sandbox.remove() }
            let input = sandbox.file("cut.mp4")
            let bytes = try Data(contentsOf: Sample.landscape.url)  // faststart: moov first, then mdat
            try bytes.prefix(bytes.count / 2).write(to: input)
            let output = sandbox.file("out.mp4")
            let (result, seconds) = try await timed {
                try await LiveFilter.run(["run", input.path, "-o", output.path, "--chain", "mirror", "--quiet"], timeout: .seconds(60))
            }
            try LiveFilter.requireSuccess(result)
            #expect(seconds < 20)
            #expect(result.stderrLines.allSatisfy { $0.hasPrefix("livefilter: warning:") }, "\(result.stderrText)")
            #expect(result.stderrText.contains("partial file") || result.stderrText.contains("corrupt"), "a warning names the damage: \(result.stderrText)")
            #expect(!result.stderrText.contains("warning: .\n"), "no fragment lines")
            let frames = try #require(try await FFprobe.probe(output, countFrames: true).video?.readFrames)
            #expect(frames > 30 && frames < 150, "what decodes of 150 frames: \(frames)")
            #expect(try sandbox.contents() == ["cut.mp4", "out.mp4"])
        }

        @Test("robustness: an MPEG-TS with corrupted packets continues and counts decode errors")
        func robustnessCorruptTransportStream() async throws {
            let sandbox = try Sandbox("robust-in")
            defer { sandbox.remove() }
            // Every tenth 188-byte packet gets every seventh payload byte replaced (a fixed seed).
            var bytes = [UInt8](try Data(contentsOf: Sample.transport.url))
            var state: UInt32 = 7
            for packet in stride(from: 5, to: bytes.count / 188, by: 10) {
                for offset in stride(from: 4, to: 188, by: 7) {
                    state = state &* 1_103_515_245 &+ 12345
                    bytes[packet * 188 + offset] = UInt8(truncatingIfNeeded: state >> 16)
                }
            }
            let input = sandbox.file("corrupt.ts")
            try Data(bytes).write(to: input)
            let output = sandbox.file("out.mp4")
            let report = sandbox.file("report.json")
            let (result, seconds) = try await timed {
                try await LiveFilter.run(["run", input.path, "-o", output.path, "--chain", "blur 2", "--report", report.path, "--quiet"],
                                         timeout: .seconds(60))
            }
            try LiveFilter.requireSuccess(result)
            #expect(seconds < 20)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any])
            let errors = try #require((json["decode_errors"] ?? json["decodeErrors"]) as? Int, "report: \(json.keys.sorted())")
            #expect(errors > 0, "the summary counts decode errors")
            let info = try await FFprobe.probe(output, countFrames: true)
            #expect((info.video?.readFrames ?? 0) > 10)
            let decode = try await Subprocess.run(Paths.ffmpeg, ["-v", "error", "-nostdin", "-i", output.path, "-map", "0:v", "-f", "null", "-"])
            #expect(decode.succeeded && decode.stderrText.isEmpty, "the output's video is clean (copied AAC keeps its damage): \(decode.stderrText)")
        }

        @Test("robustness: a header claiming 65535x65535 is refused by --max-pixels before decoding (exit 10)")
        func robustnessHugeHeader() async throws {
            let sandbox = try Sandbox("robust-in")
            defer { sandbox.remove() }
            let small = sandbox.file("small.mp4")
            try await ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10", "-t", "1", "-c:v", "libx264", "-preset", "ultrafast",
                              "-profile:v", "baseline", "-pix_fmt", "yuv420p", small.path])
            let huge = sandbox.file("huge.mp4")
            try HugeHeaderMP4.make(from: small, to: huge)
            try FileManager.default.removeItem(at: small)
            // What ffprobe makes of it: FFmpeg refuses the size ("Picture size 65535x65535 is invalid")
            // and its probe resets the stream to 0x0 — so livefilter must look at the header before probing.
            let probed = try await Subprocess.run(Paths.ffprobe, ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", huge.path])
            #expect(probed.stderrText.contains("65535x65535"), "ffprobe: \(probed.stderrText)")
            #expect(probed.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "0,0", "ffprobe: \(probed.stdoutText)")
            let (result, seconds) = try await timed {
                try await LiveFilter.run(["run", huge.path, "-o", sandbox.file("out.mp4").path, "--quiet"], timeout: .seconds(30))
            }
            expectOneLineError(result, MoreExitCodes.inputTooLarge, mentioning: "65535")
            #expect(seconds < 5, "\(seconds) s")
            #expect(try sandbox.contents() == ["huge.mp4"])
            // A tighter limit refuses an ordinary clip the same way.
            let tight = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", sandbox.file("out.mp4").path,
                                                  "--max-pixels", "10000"])
            expectOneLineError(tight, MoreExitCodes.inputTooLarge, mentioning: "max-pixels")
        }

        @Test("robustness: --max-duration bounds the work on a long input")
        func robustnessMaxDuration() async throws {
            let sandbox = try Sandbox("robust-in")
            defer { sandbox.remove() }
            let output = sandbox.file("out.mp4")
            let result = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", output.path, "--max-duration", "1", "--quiet"])
            try LiveFilter.requireSuccess(result)
            let duration = try #require(try await FFprobe.probe(output).format?.durationSeconds)
            #expect(duration > 0.9 && duration < 1.3, "about one second of five: \(duration)")
        }
    }
}

import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEnd {
    /// One output life cycle for every output type (RELIABILITY.md, "Faults"): a run that fails
    /// leaves nothing unfinished and earlier outputs as they were; a run stopped by SIGTERM finishes
    /// a playable output and leaves no temporary file.
    @Suite("Robustness: output life cycle")
    struct RobustnessLifecycle {
        /// An output type, written into the folder `out` of a sandbox.
        enum Kind: String, CaseIterable, Sendable, CustomTestStringConvertible {
            case mp4, mov, mkv, ts, png, hlsTS = "hls-ts", hlsFMP4 = "hls-fmp4", ladder, report

            var testDescription: String { rawValue }

            /// The `-o` name.
            var output: String {
                switch self {
                case .mp4, .report: "out.mp4"
                case .mov: "out.mov"
                case .mkv: "out.mkv"
                case .ts: "out.ts"
                case .png: "%04d.png"
                case .hlsTS, .hlsFMP4: "index.m3u8"
                case .ladder: "master.m3u8"
                }
            }

            /// What the user looks at: the file, the playlist, or the first frame.
            var published: String {
                switch self {
                case .png: "0001.png"
                case .report: "report.json"
                default: output
                }
            }

            func arguments(input: URL, folder: URL) -> [String] {
                // A chain, so every rung of a ladder is scaled from the filtered picture.
                var arguments = ["run", input.path, "-o", folder.appendingPathComponent(output).path, "--chain", "mirror", "--quiet",
                                 "--hls-time", "1"]
                switch self {
                case .hlsFMP4: arguments += ["--hls-segment-type", "fmp4"]
                case .ladder: arguments += ["--rendition", "640x360", "--rendition", "320x180"]
                case .report: arguments += ["--report", folder.appendingPathComponent("report.json").path]
                default: break
                }
                return arguments
            }
        }

        /// A folder holding what an earlier run left under the name this run writes (`-y` replaces
        /// it only when the run finishes).
        static func folderWithEarlierOutput(_ sandbox: Sandbox, _ kind: Kind) throws -> (URL, Data) {
            let folder = sandbox.file("out")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let earlier = Data("the previous good output\n".utf8)
            try earlier.write(to: folder.appendingPathComponent(kind.published))
            return (folder, earlier)
        }

        /// After a failed run: the folder holds exactly the earlier output, unchanged — no temporary
        /// file, no segment, no frame, no playlist of the failed run.
        static func expectUntouched(_ folder: URL, _ kind: Kind, _ earlier: Data, sourceLocation: SourceLocation = #_sourceLocation) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            #expect(names == [kind.published], "left behind: \(names.sorted())", sourceLocation: sourceLocation)
            #expect((try? Data(contentsOf: folder.appendingPathComponent(kind.published))) == earlier,
                    "the earlier output is untouched", sourceLocation: sourceLocation)
        }

        @Test("the encoder failing mid-stream: exit 1, one line, nothing of the run left, the earlier output untouched",
              arguments: Kind.allCases)
        func encoderFailure(kind: Kind) async throws {
            let sandbox = try Sandbox("life-encoder")
            defer { sandbox.remove() }
            let (folder, earlier) = try Self.folderWithEarlierOutput(sandbox, kind)
            // The fault switch makes each encode thread fail after 20 frames, as libx264 would on an
            // internal error; no input makes libx264 fail on its own (RELIABILITY.md).
            let (result, seconds) = try await timed {
                try await livefilterInShell("export LIVEFILTER_FAULT_ENCODER_AFTER=20",
                                            kind.arguments(input: Sample.landscape.url, folder: folder) + ["-y"])
            }
            expectOneLineError(result, 1, mentioning: "encoding")
            #expect(seconds < 20)
            Self.expectUntouched(folder, kind, earlier)
        }

        @Test("disk full (ulimit -f): exit 7 'no space left' naming the output, nothing of the run left, the earlier output untouched",
              arguments: Kind.allCases.filter { $0 != .report })
        func diskFull(kind: Kind) async throws {
            let sandbox = try Sandbox("life-full")
            defer { sandbox.remove() }
            let (folder, earlier) = try Self.folderWithEarlierOutput(sandbox, kind)
            // RLIMIT_FSIZE 30 blocks of 1 KiB: the first write past 30 KiB fails with EFBIG (every
            // output here has a file larger than that: a second of 640x360 video, or one frame).
            let (result, seconds) = try await timed {
                try await livefilterInShell("ulimit -f 30", kind.arguments(input: Sample.landscape.url, folder: folder) + ["-y"])
            }
            LiveFilter.expectError(result, .outputFolder, mentioning: "no space left")
            let named = kind == .ladder ? "master_640x360.m3u8" : kind.output
            #expect(result.stderrText.contains(named), "names the output: \(result.stderrText)")
            #expect(seconds < 20)
            Self.expectUntouched(folder, kind, earlier)
        }

        @Test("disk full writing the report: exit 7 naming it, no report and no temporary file; the finished output stays")
        func diskFullWritingTheReport() async throws {
            let sandbox = try Sandbox("life-report")
            defer { sandbox.remove() }
            // The report (about 1 KiB with these long names) is the one file over the 1 KiB limit: the
            // frames are 8x8 PNGs of a few hundred bytes.
            let long = String(repeating: "x", count: 200)
            let folder = sandbox.file(long)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let input = sandbox.file("input-\(long).mp4")
            try FileManager.default.createSymbolicLink(at: input, withDestinationURL: Sample.landscape.url)
            let report = folder.appendingPathComponent("report.json")
            let result = try await livefilterInShell("ulimit -f 1", ["run", input.path, "-o", folder.appendingPathComponent("%04d.png").path,
                                                                     "--chain", "scale 8x8", "--quiet", "--report", report.path])
            LiveFilter.expectError(result, .outputFolder, mentioning: "no space left")
            #expect(result.stderrText.contains("report.json"), "\(result.stderrText)")
            let names = try sandbox.contents(of: long)
            #expect(!names.contains("report.json"))
            #expect(names.allSatisfy { $0.hasSuffix(".png") && !$0.hasPrefix(".") }, "\(names)")
            #expect(names.count == 150, "the frames were published before the report: \(names.count)")
        }

        /// A 20 s 320x180 clip with audio, made once per test process: the SIGTERM runs are paced in
        /// real time (`--realtime`), so the signal always comes mid-run without keeping the cores busy.
        static func pacedInput() async throws -> URL {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("livefilter-e2e-lifecycle-20s-v1.mp4")
            if FileManager.default.fileExists(atPath: url.path) { return url }
            let partial = url.deletingLastPathComponent().appendingPathComponent(".\(UUID().uuidString).mp4")
            try await ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x180:r=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                              "-t", "20", "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p", "-c:a", "aac",
                              partial.path])
            if rename(partial.path, url.path) != 0 { try? FileManager.default.removeItem(at: partial) }
            return url
        }

        @Test("SIGTERM mid-run: exit 143, a finished playable output, no temporary file", arguments: Kind.allCases)
        func sigterm(kind: Kind) async throws {
            let sandbox = try Sandbox("life-term")
            defer { sandbox.remove() }
            let input = try await Self.pacedInput()
            let folder = sandbox.file("out")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let child = try LiveFilter.start(kind.arguments(input: input, folder: folder) + ["--realtime", "--progress", "json"])
            defer { child.send(SIGKILL) }  // only if the test stopped before the child exited
            // Signalled once it has written frames: a second or so into the 20 s input, which it reads in real time.
            let before = try await LiveFilter.progress(of: child, "frames written") { $0.framesWritten > 0 }
            #expect(child.isRunning, "finished before the signal")
            child.send(SIGTERM)
            let result = await child.wait(timeout: .seconds(60))
            #expect(result.exitedNormally && result.status == MoreExitCodes.terminated, "\(result.summary)")
            #expect(!result.stderrText.contains("livefilter: error:"), "\(result.stderrText)")

            let names = try sandbox.contents(of: "out")
            #expect(!names.contains { $0.hasPrefix(".") }, "temporary files left: \(names)")
            let published = folder.appendingPathComponent(kind.published)
            #expect(FileManager.default.fileExists(atPath: published.path), "\(names)")
            if kind == .report {
                let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: published)) as? [String: Any])
                #expect(json["interrupted"] as? Bool == true)
            }
            if kind.output.hasSuffix(".m3u8") {
                let playlists = names.filter { $0.hasSuffix(".m3u8") && $0 != "master.m3u8" }
                // A ladder: two rungs, and its audio as one rendition of its own.
                #expect(playlists.count == (kind == .ladder ? 3 : 1), "\(names)")
                for name in playlists {
                    let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
                    #expect(text.contains("#EXT-X-ENDLIST"), "\(name) ends:\n\(text)")
                }
            }
            // Playable to its end, what was written before the signal kept, and stopped early: about a second of a 600-frame input.
            let media = folder.appendingPathComponent(kind.output)
            let decode = try await Subprocess.run(Paths.ffmpeg, ["-v", "error", "-nostdin", "-i", media.path, "-map", "0:v:0", "-f", "null", "-"])
            #expect(decode.succeeded && decode.stderrText.isEmpty, "playable: \(decode.stderrText)")
            let frames = kind == .png
                ? names.filter { $0.hasSuffix(".png") }.count
                : try #require(try await FFprobe.probe(media, countFrames: true).video?.readFrames)
            #expect(frames >= max(1, before.framesWritten) && frames < 300, "\(frames) frames, \(before.framesWritten) written before the signal")
        }
    }
}

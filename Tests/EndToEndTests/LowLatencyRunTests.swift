import Foundation
import HLS
import Synchronization
import Testing

extension EndToEnd {
    /// `run --hls-part`: LL-HLS written by the real pipeline, served by `run --serve`, checked with an
    /// LL client's requests, ffprobe and the linter.
    @Suite("Low-Latency HLS runs", .serialized)
    struct LowLatencyRuns {
        func ffprobe(_ arguments: [String]) async throws -> ProcessResult {
            try await Subprocess.run(Paths.ffprobe, arguments, timeout: .seconds(60))
        }

        static func media(_ url: URL) throws -> MediaPlaylist {
            guard case let .media(p) = try PlaylistParser.parse(String(contentsOf: url, encoding: .utf8)) else {
                throw CocoaError(.fileReadCorruptFile)
            }
            return p
        }

        @Test("a live input to LL-HLS under run --serve: a blocking reload for the next part is answered once the writer has it, within a part's time",
              .timeLimit(.minutes(2)))
        func blockingReloadAgainstTheRunningWriter() async throws {
            let sandbox = try Sandbox("ll-run")
            defer { sandbox.remove() }
            let clip = sandbox.file("clip.mp4")
            try await ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-f", "lavfi", "-i", "sine=frequency=440",
                              "-t", "16", "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p",
                              "-c:a", "aac", clip.path])
            let source = try await HLSTestServer.make(from: clip, in: sandbox, segmentSeconds: 1, window: 3, interval: 1)
            defer { source.stop() }
            let output = sandbox.file("out/index.m3u8")
            // When each file of the output appears (inotify), to time the answers against.
            try FileManager.default.createDirectory(at: output.deletingLastPathComponent(), withIntermediateDirectories: true)
            let watch = try FolderWatch(output.deletingLastPathComponent())
            defer { watch.stop() }
            let appeared = Appearances()
            let watching = Task { for await name in watch.names { appeared.saw(name) } }
            defer { watching.cancel() }
            let child = try LiveFilter.start(["run", source.liveURL, "-o", output.path, "--hls-time", "2", "--hls-part", "0.5",
                                              "--hls-segment-type", "fmp4", "--chain", "mirror", "--encoder-preset", "ultrafast",
                                              "--serve", "127.0.0.1:0", "--serve-after", "--quiet"])
            defer { child.send(SIGKILL) }
            let port = try await LiveFilter.listeningPort(of: child, announcedBy: "serving ")
            // The first playlist: then, six times, ask for the part after the last one listed.
            var playlist: MediaPlaylist?
            for _ in 0..<200 where playlist?.lastPart == nil {
                let response = try RawHTTP.request(port: port, "/index.m3u8")
                if response.status == 200, case let .media(p)? = try? PlaylistParser.parse(response.text) { playlist = p }
                if playlist?.lastPart == nil { try await Task.sleep(for: .milliseconds(100)) }
            }
            var current = try #require(playlist, "a playlist with parts")
            // Ask for the part after the last one listed, again and again: while the run catches up
            // (it works off what it read before the edge) the answers come at once; from the first that waits,
            // the run is at the live edge and each answer waits for the writer.
            var waits: [Double] = []
            var afterPublication: [Duration] = []
            var atEdge = false
            for _ in 0..<60 where waits.count < 8 {
                let last = try #require(current.lastPart)
                let open = last.mediaSequenceNumber == current.nextMediaSequenceNumber
                // The next part: in this segment (four 0.5 s parts), or part 0 of the next.
                let next = open || last.partIndex + 1 < 4 ? (last.mediaSequenceNumber, last.partIndex + 1) : (last.mediaSequenceNumber + 1, 0)
                let asked = ContinuousClock.now
                let response = try RawHTTP.request(port: port, "/index.m3u8?_HLS_msn=\(next.0)&_HLS_part=\(next.1)", timeout: 10)
                let waited = ContinuousClock.now - asked
                let seconds = Double(waited.components.seconds) + Double(waited.components.attoseconds) / 1e18
                #expect(response.status == 200, "\(response.status) \(response.text)")
                guard case let .media(answer)? = try? PlaylistParser.parse(response.text) else {
                    Issue.record("not a playlist: \(response.text)"); break
                }
                // Never before the writer has it: the answer lists the part asked for (or later).
                let got = try #require(answer.lastPart)
                #expect(got.mediaSequenceNumber > next.0 || got.mediaSequenceNumber == next.0 && got.partIndex >= next.1,
                        "asked \(next), the answer ends at \(got)")
                // Answered when the part asked for was published, not long after.
                let first = answer.mediaSequenceNumber(ofSegmentAt: 0)
                let parts = next.0 < answer.nextMediaSequenceNumber ? (next.0 >= first ? answer.segments[next.0 - first].parts : [])
                    : answer.segmentInProgress?.parts ?? []
                if next.1 < parts.count, let at = appeared.time(of: parts[next.1].uri) {
                    let after = at.duration(to: asked + waited)
                    if seconds > 0.2 { afterPublication.append(after) }
                }
                #expect(answer.preloadHints.count == 1)
                atEdge = atEdge || seconds > 0.2
                if atEdge { waits.append(seconds) }
                // The hinted part is held until it is complete, then served whole.
                if let hint = answer.preloadHints.first?.uri, waits.count == 3 {
                    let part = try RawHTTP.request(port: port, "/" + hint, timeout: 10)
                    #expect(part.status == 200 && part.body.count > 100, "hinted \(hint): \(part.status)")
                    #expect(part.body == (try? Data(contentsOf: output.deletingLastPathComponent().appendingPathComponent(hint))))
                }
                current = answer
            }
            // A held request is answered right after its part's file appears (the playlist naming it
            // follows the part), however long the input took: margins for a loaded machine.
            #expect(waits.count == 8, "waits at the live edge: \(waits)")
            #expect(!afterPublication.isEmpty && afterPublication.allSatisfy { $0 < .milliseconds(400) },
                    "answers after their part's publication: \(afterPublication), waits \(waits)")
            // Ctrl-C: a finished, playable output (exit 130, as for every interrupted run).
            child.send(SIGINT)
            let ended = await child.wait(timeout: .seconds(20))
            #expect(ended.exitedNormally && ended.status == 130, "\(ended.summary)")
            #expect(try String(contentsOf: output, encoding: .utf8).contains("#EXT-X-ENDLIST"))
            let lint = try await LiveFilter.run(["lint", output.path])
            #expect(lint.succeeded, "\(lint.stdoutText)")
        }

        @Test("a ladder with parts on every rung and the audio rendition: rendition reports, segments are their parts, plays in ffprobe",
              .timeLimit(.minutes(2)))
        func ladderWithParts() async throws {
            let sandbox = try Sandbox("ll-ladder")
            defer { sandbox.remove() }
            let master = sandbox.file("out/master.m3u8")
            let report = sandbox.file("report.json")
            let result = try await LiveFilter.run(["run", Paths.sample("landscape.mp4").path, "-o", master.path,
                                                   "--rendition", "640x360@800k", "--rendition", "320x180@300k",
                                                   "--hls-time", "2", "--hls-part", "0.5", "--hls-playlist", "event",
                                                   "--hls-segment-type", "fmp4", "--encoder-preset", "ultrafast",
                                                   "--report", report.path, "-q"])
            try LiveFilter.requireSuccess(result)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any])
            #expect((json["warnings"] as? [String] ?? []).isEmpty, "\(json["warnings"] ?? "")")
            let folder = master.deletingLastPathComponent()
            let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".m3u8") && $0 != "master.m3u8" }.sorted()
            #expect(names.count == 3, "two rungs and the audio rendition: \(names)")
            for name in names {
                let url = folder.appendingPathComponent(name)
                let playlist = try Self.media(url)
                #expect(playlist.partTarget == 0.5, "\(name)")
                #expect(Set(playlist.renditionReports.map(\.uri)) == Set(names.filter { $0 != name }), "\(name): \(playlist.renditionReports)")
                for segment in playlist.segments {
                    #expect(!segment.parts.isEmpty, "\(name) \(segment.uri) has parts")
                    var joined = Data()
                    for part in segment.parts { joined += try Data(contentsOf: folder.appendingPathComponent(part.uri)) }
                    #expect(joined == (try Data(contentsOf: folder.appendingPathComponent(segment.uri))), "\(name) \(segment.uri)")
                }
                let lint = try await LiveFilter.run(["lint", url.path])
                #expect(lint.succeeded, "\(name): \(lint.stdoutText)")
            }
            // The whole ladder, parts unknown to ffmpeg's reader: every picture of 5 s at the source's 30 fps.
            let frames = try await ffprobe(["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames",
                                            "-of", "csv=p=0", folder.appendingPathComponent(names[0]).path])
            #expect(frames.stdoutText.split(separator: "\n").first == "150", "\(frames.stdoutText)")
        }

        static func tool(_ name: String) -> URL? {
            ["/usr/bin/", "/usr/local/bin/", "/usr/sbin/"].map { URL(fileURLWithPath: $0 + name) }.first { FileManager.default.isExecutableFile(atPath: $0.path) }
        }

        func frames(_ file: URL) async throws -> Int? {
            let probe = try await ffprobe(["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames",
                                           "-of", "csv=p=0", file.path])
            return probe.stdoutText.split(separator: "\n").first.flatMap { Int($0) }
        }

        @Test("LL-HLS output plays, parts ignored, in GStreamer, mpv and VLC: every picture",
              .enabled(if: tool("gst-launch-1.0") != nil && tool("mpv") != nil && tool("cvlc") != nil,
                       "needs GStreamer, mpv and VLC: LIVEFILTER_PLAYERS=1 scripts/install-deps.sh"),
              .timeLimit(.minutes(3)))
        func independentPlayers() async throws {
            let sandbox = try Sandbox("ll-players")
            defer { sandbox.remove() }
            let output = sandbox.file("ll/index.m3u8")
            try LiveFilter.requireSuccess(try await LiveFilter.run(["run", Paths.sample("landscape.mp4").path, "-o", output.path,
                                                                    "--hls-time", "2", "--hls-part", "0.5", "--hls-playlist", "event",
                                                                    "--hls-segment-type", "fmp4", "--encoder-preset", "ultrafast", "-q"]))
            // The reference for VLC: ffmpeg's own HLS of the same clip (VLC's transcoding drops a few
            // pictures at the ends of any input).
            let reference = sandbox.file("ffmpeg/index.m3u8")
            try FileManager.default.createDirectory(at: reference.deletingLastPathComponent(), withIntermediateDirectories: true)
            try await ffmpeg(["-i", Paths.sample("landscape.mp4").path, "-c:v", "libx264", "-preset", "ultrafast", "-f", "hls", "-hls_time", "2",
                              "-hls_segment_type", "fmp4", "-hls_playlist_type", "event", reference.path])
            let expected = 150  // samples/landscape.mp4: 5 s at 30 fps

            // GStreamer: its own HLS demuxer (hlsdemux), every picture decoded.
            let gst = try await Subprocess.run(Self.tool("gst-launch-1.0")!, ["filesrc", "location=\(output.path)", "!", "hlsdemux", "!", "qtdemux",
                                                                          "!", "h264parse", "!", "avdec_h264", "!", "fakesink", "silent=false", "-v"],
                                               timeout: .seconds(60))
            let decoded = gst.stdoutText.split(separator: "\n").filter { $0.contains("fakesink0") && $0.contains("chain") }.count
            #expect(gst.succeeded && decoded == expected, "GStreamer decoded \(decoded): \(gst.summary)")

            // mpv: played through, every picture written out by its encoding mode.
            let played = sandbox.file("mpv.nut")
            let mpv = try await Subprocess.run(Self.tool("mpv")!, ["--no-config", "--really-quiet", "--ao=null", output.path, "--o=\(played.path)",
                                                                "--of=nut", "--ovc=rawvideo"], timeout: .seconds(90))
            let mpvFrames = try await frames(played)
            #expect(mpv.succeeded && mpvFrames == expected, "mpv played \(mpvFrames ?? -1): \(mpv.summary)")

            // VLC (its own adaptive-streaming module), as the same player plays ffmpeg's HLS. VLC
            // refuses to run as root: as nobody, on files nobody may read.
            func vlc(_ playlist: URL, _ name: String) async throws -> Int? {
                let out = sandbox.file(name)
                var arguments = ["-I", "dummy", "--no-audio", "--play-and-exit", playlist.path,
                                 "--sout", "#transcode{vcodec=h264,venc=x264{preset=ultrafast}}:std{access=file,mux=ts,dst=\(out.path)}"]
                var executable = Self.tool("cvlc")!
                if getuid() == 0, let runuser = Self.tool("runuser") {
                    arguments = ["-u", "nobody", "--", executable.path] + arguments
                    executable = runuser
                }
                _ = try await Subprocess.run(executable, arguments, timeout: .seconds(90))
                return try await frames(out)
            }
            // Readable and writable by nobody (the sandbox is root's).
            _ = try await Subprocess.run(URL(fileURLWithPath: "/bin/chmod"), ["-R", "a+rwX", sandbox.url.path], timeout: .seconds(10))
            let ours = try await vlc(output, "vlc-ours.ts"), theirs = try await vlc(reference, "vlc-ffmpeg.ts")
            #expect(ours != nil && ours == theirs && (ours ?? 0) >= expected - 6, "VLC: ours \(ours ?? -1), ffmpeg's \(theirs ?? -1)")
        }

        @Test("an MPEG-TS input to fMP4 HLS copies its ADTS AAC with an AudioSpecificConfig: the audio decodes")
        func transportStreamAudioIntoFragmentedMP4() async throws {
            let sandbox = try Sandbox("ll-adts")
            defer { sandbox.remove() }
            let output = sandbox.file("out/index.m3u8")
            let result = try await LiveFilter.run(["run", Paths.sample("transport.ts").path, "-o", output.path,
                                                   "--hls-segment-type", "fmp4", "--encoder-preset", "ultrafast", "-q"])
            try LiveFilter.requireSuccess(result)
            let audio = try await ffprobe(["-v", "error", "-select_streams", "a:0", "-show_entries", "stream=codec_name,profile,sample_rate,channels",
                                           "-of", "csv=p=0", output.path])
            let source = try await ffprobe(["-v", "error", "-select_streams", "a:0", "-show_entries", "stream=codec_name,profile,sample_rate,channels",
                                            "-of", "csv=p=0", Paths.sample("transport.ts").path])
            #expect(audio.stdoutText.split(separator: "\n").first == source.stdoutText.split(separator: "\n").first, "\(audio.stdoutText)")
            let decode = try await ffmpeg(["-i", output.path, "-map", "0:a", "-f", "null", "-"])
            #expect(decode.stderrText.isEmpty, "\(decode.stderrText)")
        }
    }
}

/// The first time each name appeared in a watched folder.
final class Appearances: Sendable {
    private let times = Mutex<[String: ContinuousClock.Instant]>([:])
    func saw(_ name: String) { times.withLock { if $0[name] == nil { $0[name] = .now } } }
    func time(of name: String) -> ContinuousClock.Instant? { times.withLock { $0[name] } }
}

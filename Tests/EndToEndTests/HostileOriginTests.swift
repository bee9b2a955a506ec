import Foundation
import Hummingbird
import Serving
import Testing

/// A hostile origin against the real binary (issue 45): numbers that used to trap the process,
/// references to local files and private addresses, secrets in URLs and in FFmpeg's own lines,
/// terminal escapes in a caller's stream ID. Every case ends in bounded time with a documented exit
/// code and one error line; no secret and no raw control character reaches stderr.
extension EndToEnd {
    @Suite("Hostile origins")
    struct HostileOriginTests {
        static let traps = ["Swift runtime failure", "Fatal error", "Program crashed", "arithmetic overflow", "Illegal instruction"]

        static func expectRefused(_ result: ProcessResult, seconds: Double, mentioning needle: String,
                                  sourceLocation: SourceLocation = #_sourceLocation) {
            print("refused: exit \(result.status) after \(String(format: "%.1f", seconds)) s: \(result.stderrLines.last ?? "")")
            #expect(!result.timedOut && seconds < 30, "\(seconds) s: \(result.summary)", sourceLocation: sourceLocation)
            #expect(result.exitedNormally && result.status == 10, "exit 10 (refused input) expected: \(result.summary)", sourceLocation: sourceLocation)
            let errors = result.stderrLines.filter { !$0.hasPrefix("livefilter: warning:") }
            #expect(errors.count == 1 && errors[0].hasPrefix("livefilter: error:") && errors[0].contains("is refused"),
                    "one refusal line: \(result.stderrText)", sourceLocation: sourceLocation)
            #expect(result.stderrText.contains(needle), "the error names \(needle): \(result.stderrText)", sourceLocation: sourceLocation)
            #expect(!traps.contains { result.stderrText.contains($0) }, "\(result.stderrText)", sourceLocation: sourceLocation)
        }

        /// A playlist of the landscape sample's 1 s segments with `edit` applied, served over loopback.
        static func served(_ sandbox: Sandbox) async throws -> (HLSTestServer, PlaylistServer, [(String, String)]) {
            let (segments, playlists) = try await EndToEnd.RobustnessHLS.hostileServers(sandbox)
            return (segments, playlists, segments.segments.map { ($0.name, String($0.duration)) })
        }

        enum HostileNumber: String, CaseIterable, CustomTestStringConvertible {
            case discontinuitySequence, mediaSequence, byteRange, mapByteRange, extinf, targetDuration
            var testDescription: String { rawValue }

            func playlist(_ segments: [(String, String)]) -> (String, String) {
                var lines = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-TARGETDURATION:2"]
                switch self {
                case .discontinuitySequence: lines += ["#EXT-X-DISCONTINUITY-SEQUENCE:9223372036854775807"]
                case .mediaSequence: lines += ["#EXT-X-MEDIA-SEQUENCE:9223372036854775807"]
                case .targetDuration: lines[2] = "#EXT-X-TARGETDURATION:9223372036854775807"
                case .mapByteRange: lines += ["#EXT-X-MAP:URI=\"\(segments[0].0)\",BYTERANGE=\"9223372036854775807@9223372036854775807\""]
                default: break
                }
                for (i, (name, duration)) in segments.enumerated() {
                    if i == 1 && self == .discontinuitySequence { lines.append("#EXT-X-DISCONTINUITY") }
                    if i == 0 && self == .byteRange { lines.append("#EXT-X-BYTERANGE:9223372036854775807@9223372036854775807") }
                    lines += ["#EXTINF:\(i == 1 && self == .extinf ? "1e300" : duration),", name]
                }
                lines.append("#EXT-X-ENDLIST")
                let tag = switch self {
                case .discontinuitySequence: "EXT-X-DISCONTINUITY-SEQUENCE"
                case .mediaSequence: "EXT-X-MEDIA-SEQUENCE"
                case .byteRange: "EXT-X-BYTERANGE"
                case .mapByteRange: "EXT-X-MAP"
                case .extinf: "EXTINF"
                case .targetDuration: "EXT-X-TARGETDURATION"
                }
                return (lines.joined(separator: "\n") + "\n", tag)
            }
        }

        @Test("hostile numbers: Int64.max in a sequence, a byte range or a duration is a named refusal (exit 10), never a trap",
              arguments: HostileNumber.allCases)
        func hostileNumbers(kind: HostileNumber) async throws {
            let sandbox = try Sandbox("hostile-origin")
            defer { sandbox.remove() }
            let (segments, playlists, list) = try await Self.served(sandbox)
            defer { segments.stop(); playlists.stop() }
            let (text, tag) = kind.playlist(list)
            playlists.playlist("/n.m3u8", text)
            let output = sandbox.file("out.mp4")
            let (result, seconds) = try await timed {
                try await LiveFilter.run(["run", playlists.url("/n.m3u8"), "-o", output.path, "--io-timeout", "3"], timeout: .seconds(60))
            }
            Self.expectRefused(result, seconds: seconds, mentioning: tag)
            #expect(!FileManager.default.fileExists(atPath: output.path))
        }

        @Test("hostile numbers in a live reload: a playlist that turns hostile mid-run ends the run as refused (exit 10), not as a processing failure")
        func hostileReload() async throws {
            let sandbox = try Sandbox("hostile-origin")
            defer { sandbox.remove() }
            let (segments, playlists, list) = try await Self.served(sandbox)
            defer { segments.stop(); playlists.stop() }
            let loads = Counter()
            playlists.route("/live.m3u8") { _ in
                // Three honest loads (a live window of two 1 s segments, moving on), then Int64.max.
                let n = loads.next()
                if n >= 3 {
                    return .playlist("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:\(n)\n#EXT-X-DISCONTINUITY-SEQUENCE:9223372036854775807\n"
                                     + "#EXT-X-DISCONTINUITY\n#EXTINF:1,\n\(list[n % list.count].0)\n")
                }
                let window = (n..<(n + 2)).map { (list[$0 % list.count].0, list[$0 % list.count].1) }
                return .playlist(PlaylistServer.mediaPlaylist(window, target: 1, sequence: n, live: true))
            }
            let output = sandbox.file("out.mp4")
            let (result, seconds) = try await timed {
                try await LiveFilter.run(["run", playlists.url("/live.m3u8"), "-o", output.path, "--io-timeout", "3"], timeout: .seconds(60))
            }
            #expect(!Self.traps.contains { result.stderrText.contains($0) }, "\(result.stderrText)")
            #expect(!result.timedOut && seconds < 40, "\(seconds) s")
            #expect(result.status == 10, "\(result.summary)")
            #expect(result.stderrText.contains("EXT-X-DISCONTINUITY-SEQUENCE") && result.stderrText.contains("is refused"), "\(result.stderrText)")
        }

        @Test("a remote master whose audio rendition or variant is a local file is refused; nothing local is read",
              arguments: ["audio", "variant"])
        func localFileMaster(reference: String) async throws {
            let sandbox = try Sandbox("hostile-origin")
            defer { sandbox.remove() }
            let (segments, playlists, list) = try await Self.served(sandbox)
            defer { segments.stop(); playlists.stop() }
            // A local playlist that would play if it were read: the proof that it was not.
            let local = sandbox.file("local.m3u8")
            let localText = PlaylistServer.mediaPlaylist(list.map { (segments.folder.appendingPathComponent($0.0).path, $0.1) })
            try localText.write(to: local, atomically: true, encoding: .utf8)
            playlists.playlist("/video.m3u8", PlaylistServer.mediaPlaylist(list))
            let master = reference == "audio"
                ? "#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"en\",DEFAULT=YES,URI=\"file://\(local.path)\"\n#EXT-X-STREAM-INF:BANDWIDTH=900000,AUDIO=\"a\"\nvideo.m3u8\n"
                : "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=900000\nfile://\(local.path)\n"
            playlists.playlist("/master.m3u8", master)
            let output = sandbox.file("out.mp4")
            let (result, seconds) = try await timed {
                try await LiveFilter.run(["run", playlists.url("/master.m3u8"), "-o", output.path, "--io-timeout", "3"], timeout: .seconds(60))
            }
            Self.expectRefused(result, seconds: seconds, mentioning: "may not reference local files")
        }

        @Test("--no-allow-private-networks: a variant on a private address, or a redirect to one, is refused; the default for a loopback input allows it")
        func privateNetworks() async throws {
            let sandbox = try Sandbox("hostile-origin")
            defer { sandbox.remove() }
            let (segments, playlists, list) = try await Self.served(sandbox)
            defer { segments.stop(); playlists.stop() }
            playlists.playlist("/video.m3u8", PlaylistServer.mediaPlaylist(Array(list.prefix(2))))
            playlists.playlist("/master.m3u8", "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=900000\n\(playlists.url("/video.m3u8"))\n")
            playlists.route("/moved.m3u8") { _ in Response(status: .found, headers: [.location: playlists.url("/video.m3u8")]) }
            for input in ["/master.m3u8", "/moved.m3u8"] {
                let output = sandbox.file("out\(input.dropFirst().prefix(5)).mp4")
                let (result, seconds) = try await timed {
                    try await LiveFilter.run(["run", playlists.url(input), "-o", output.path, "--io-timeout", "3", "--no-allow-private-networks"],
                                             timeout: .seconds(60))
                }
                Self.expectRefused(result, seconds: seconds, mentioning: "--allow-private-networks")
            }
            let output = sandbox.file("allowed.mp4")
            let allowed = try await LiveFilter.run(["run", playlists.url("/moved.m3u8"), "-o", output.path, "--quiet"], timeout: .seconds(120))
            #expect(allowed.succeeded, "\(allowed.summary)")
        }

        @Test("secrets in URLs (user-info, tokens and signatures by name) never reach stderr, in errors or warnings")
        func secretsInURLs() async throws {
            let sandbox = try Sandbox("hostile-origin")
            defer { sandbox.remove() }
            let (segments, playlists, list) = try await Self.served(sandbox)
            defer { segments.stop(); playlists.stop() }
            let host = playlists.baseURL.replacingOccurrences(of: "http://", with: "")
            // A missing playlist: the error line.
            let missing = "http://USERTOKEN1@\(host)/missing.m3u8?access_token=S1SECRET&X-Goog-Signature=S2SECRET&n=1"
            let refused = try await LiveFilter.run(["run", missing, "-o", sandbox.file("a.mp4").path], timeout: .seconds(60))
            #expect(refused.status == 4, "\(refused.summary)")
            // A segment that 404s with a token: the warning line.
            var withToken = list
            withToken[1].0 = "gone.ts?token=SEGSECRET1&hdnts=exp=1~hmac=HMACSECRET"
            playlists.playlist("/t.m3u8", PlaylistServer.mediaPlaylist(withToken))
            let warned = try await LiveFilter.run(["run", playlists.url("/t.m3u8") + "?jwt=JWTSECRET1", "-o", sandbox.file("b.mp4").path,
                                                   "--io-timeout", "2"], timeout: .seconds(120))
            #expect(warned.succeeded, "\(warned.summary)")
            #expect(warned.stderrText.contains("gone.ts?token=***"), "the warning names the segment: \(warned.stderrText)")
            for text in [refused.stderrText, warned.stderrText] {
                for secret in ["USERTOKEN1", "S1SECRET", "S2SECRET", "SEGSECRET1", "HMACSECRET", "JWTSECRET1"] {
                    #expect(!text.contains(secret), "\(secret) in: \(text)")
                }
            }
        }

        @Test("a key from LIVEFILTER_INPUT_URL or --secrets is used and hidden; a secrets file others can read is refused")
        func secretsOffTheCommandLine() async throws {
            let sandbox = try Sandbox("hostile-origin")
            defer { sandbox.remove() }
            let (segments, playlists, list) = try await Self.served(sandbox)
            defer { segments.stop(); playlists.stop() }
            playlists.playlist("/ok.m3u8", PlaylistServer.mediaPlaylist(Array(list.prefix(2))))
            let output = sandbox.file("env.mp4")
            let fromEnvironment = try await livefilterInShell("export LIVEFILTER_INPUT_URL='\(playlists.url("/ok.m3u8"))?token=ENVSECRET9'",
                                                               ["run", "-o", output.path, "--quiet"])
            #expect(fromEnvironment.succeeded, "\(fromEnvironment.summary)")
            #expect(playlists.requestLog.contains("/ok.m3u8"))
            let secrets = sandbox.file("secrets")
            try "# channel secrets\nTOKEN=FILESECRET9\n".write(to: secrets, atomically: true, encoding: .utf8)
            chmod(secrets.path, 0o600)
            let missing = try await LiveFilter.run(["run", playlists.url("/missing.m3u8") + "?token=${TOKEN}", "--secrets", secrets.path,
                                                    "-o", sandbox.file("f.mp4").path], timeout: .seconds(60))
            #expect(missing.status == 4 && missing.stderrText.contains("token=***"), "\(missing.summary)")
            #expect(!missing.stderrText.contains("FILESECRET9"), "\(missing.stderrText)")
            chmod(secrets.path, 0o644)
            let open = try await LiveFilter.run(["run", playlists.url("/ok.m3u8") + "?token=${TOKEN}", "--secrets", secrets.path,
                                                 "-o", sandbox.file("g.mp4").path], timeout: .seconds(60))
            #expect(open.status == 2 && open.stderrText.contains("can be read by other users"), "\(open.summary)")
            let unknown = try await LiveFilter.run(["run", playlists.url("/ok.m3u8") + "?token=${NOPE}", "-o", sandbox.file("h.mp4").path],
                                                   timeout: .seconds(60))
            #expect(unknown.status == 2 && unknown.stderrText.contains("${NOPE}"), "\(unknown.summary)")
        }
    }

    /// Pushed inputs: what FFmpeg and libsrt say about a caller, through our log path.
    @Suite("Hostile channel callers", .serialized)
    struct HostileChannelTests {
        @Test("a wrong RTMP key: FFmpeg's own line ('Unexpected stream …, expecting KEY') reaches stderr without either key, --verbose too",
              .timeLimit(.minutes(2)))
        func rtmpKeyInFFmpegLine() async throws {
            let sandbox = try Sandbox("hostile-rtmp")
            defer { sandbox.remove() }
            let port = try ChannelTests.freePort()
            let key = "TOPSECRETKEY7"
            let channel = try await ChannelTests.startChannel(["run", "rtmp://127.0.0.1:\(port)/live/\(key)", "--listen", "--verbose",
                                                               "-o", sandbox.file("out/index.m3u8").path, "--hls-time", "1",
                                                               "--on-input-loss", "hold", "--input-loss-after", "0.5", "-y"])
            defer { channel.send(SIGKILL) }
            let wrong = try ChannelTests.publisher("rtmp://127.0.0.1:\(port)/live/OTHERCHANNELKEY", seconds: 2)
            _ = await wrong.wait(timeout: .seconds(20))
            try await Task.sleep(for: .seconds(0.5))
            channel.send(SIGINT)
            let result = await channel.wait(timeout: .seconds(30))
            let log = result.stderrText
            #expect(log.contains("another app or stream key"), "the refusal is said: \(log)")
            #expect(!log.contains(key) && !log.contains("OTHERCHANNELKEY"), "a key in the log: \(log)")
        }

        @Test("an SRT caller's stream ID with terminal escapes and a forged line is printed escaped", .timeLimit(.minutes(2)))
        func srtStreamIDEscaped() async throws {
            let sandbox = try Sandbox("hostile-srt")
            defer { sandbox.remove() }
            let port = try ChannelTests.freePort()
            let channel = try await ChannelTests.startChannel(["run", "srt://127.0.0.1:\(port)?mode=listener&streamid=cam1", "-o",
                                                               sandbox.file("out/index.m3u8").path, "--hls-time", "1",
                                                               "--on-input-loss", "hold", "--input-loss-after", "0.5", "-y"])
            defer { channel.send(SIGKILL) }
            let hostileID = "x\u{1B}[2J\u{1B}]0;owned\u{07}\nlivefilter: error: forged"
            // FFmpeg's SRT caller URL-decodes its streamid option.
            let encoded = hostileID.utf8.map { String(format: "%%%02X", $0) }.joined()
            let caller = try Subprocess(Paths.ffmpeg, ["-hide_banner", "-nostdin", "-v", "error", "-re", "-f", "lavfi", "-i",
                                                       "testsrc2=size=160x120:rate=30", "-t", "1", "-c:v", "libx264", "-preset", "ultrafast",
                                                       "-f", "mpegts", "srt://127.0.0.1:\(port)?streamid=\(encoded)"])
            _ = await caller.wait(timeout: .seconds(20))
            try await Task.sleep(for: .seconds(0.5))
            channel.send(SIGINT)
            let result = await channel.wait(timeout: .seconds(30))
            let log = result.stderrText
            #expect(log.contains("stream ID"), "the caller is named: \(log)")
            #expect(!log.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 }, "a raw control character in: \(log.debugDescription)")
            #expect(!result.stderrLines.contains { $0.hasPrefix("livefilter: error: forged") }, "a forged line: \(log)")
        }
    }
}

/// A counter shared with a server's handler.
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func next() -> Int { lock.withLock { defer { value += 1 }; return value } }
}

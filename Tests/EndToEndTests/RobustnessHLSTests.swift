import Foundation
import Serving
import Testing

/// Hostile HLS servers and playlists: every run ends in bounded time with a documented exit code,
/// one error line when it fails, and no half-written output (RELIABILITY.md, "Hostile HLS").
extension EndToEnd {
    @Suite("Robustness: hostile HLS")
    struct RobustnessHLS {
        /// Documented exit codes a failed network input may end with.
        static let inputFailureCodes: Set<Int32> = [4, 5, 6, 1, 10]

        /// A failure in bounded time: documented code, one error line, nothing at the output path.
        static func expectBoundedFailure(_ result: ProcessResult, seconds: Double, limit: Double, output: URL,
                                         sourceLocation: SourceLocation = #_sourceLocation) {
            print("bounded failure: exit \(result.status) after \(String(format: "%.1f", seconds)) s: \(result.stderrLines.last ?? "")")
            #expect(!result.timedOut && seconds < limit, "took \(seconds) s: \(result.summary)", sourceLocation: sourceLocation)
            #expect(inputFailureCodes.contains(result.status), "\(result.summary)", sourceLocation: sourceLocation)
            expectOneLineError(result, result.status, sourceLocation: sourceLocation)
            #expect(!FileManager.default.fileExists(atPath: output.path), "nothing at the output path", sourceLocation: sourceLocation)
            let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: output.deletingLastPathComponent().path)) ?? []
            #expect(!leftovers.contains { $0.contains(".livefilter-") }, "temporary files left: \(leftovers)", sourceLocation: sourceLocation)
        }

        /// Segments of the landscape sample (1 s each) on an `HLSTestServer`, plus a `PlaylistServer` for the special playlists.
        static func hostileServers(_ sandbox: Sandbox, hostility: HLSTestServer.Hostility = .none) async throws -> (HLSTestServer, PlaylistServer) {
            let segments = try await HLSTestServer.make(from: Sample.landscape.url, in: sandbox, segmentSeconds: 1, hostility: hostility)
            let playlists = try await PlaylistServer.start()
            try playlists.files(in: segments.folder)
            return (segments, playlists)
        }

        @Test("robustness: absurd or negative EXTINF ends in bounded time", arguments: ["1e9", "-5", "nan", "99999999999999999999"])
        func robustnessAbsurdExtinf(extinf: String) async throws {
            let sandbox = try Sandbox("robust-hls")
            defer { sandbox.remove() }
            let (segments, playlists) = try await Self.hostileServers(sandbox)
            defer { segments.stop(); playlists.stop() }
            let list = segments.segments.enumerated().map { i, s in (s.name, i == 1 ? extinf : String(s.duration)) }
            playlists.playlist("/odd.m3u8", PlaylistServer.mediaPlaylist(list))
            let output = sandbox.file("out.mp4")
            let (result, seconds) = try await timed {
                try await LiveFilter.run(["run", playlists.url("/odd.m3u8"), "-o", output.path, "--quiet", "--io-timeout", "3"], timeout: .seconds(60))
            }
            #expect(!result.timedOut && seconds < 30, "\(seconds) s")
            if result.status == 0 {
                let info = try await FFprobe.probe(output, countFrames: true)
                #expect((info.video?.readFrames ?? 0) > 0)
                #expect((info.format?.durationSeconds ?? 1e9) < 10, "the claimed duration does not leak into the output")
            } else {
                Self.expectBoundedFailure(result, seconds: seconds, limit: 30, output: output)
            }
        }

        @Test("robustness: a redirect loop ends with an error (max redirects)")
        func robustnessRedirectLoop() async throws {
            let sandbox = try Sandbox("robust-hls")
            defer { sandbox.remove() }
            let server = try await HLSTestServer.make(from: Sample.landscape.url, in: sandbox, hostility: .redirectLoop)
            defer { server.stop() }
            let output = sandbox.file("out.mp4")
            let (result, seconds) = try await timed {
                try await LiveFilter.run(["run", server.vodURL, "-o", output.path, "--quiet"], timeout: .seconds(60))
            }
            Self.expectBoundedFailure(result, seconds: seconds, limit: 15, output: output)
        }

        @Test("robustness: a master whose chosen variant never answers fails within --io-timeout + 5 s, naming the variant")
        func robustnessSilentVariant() async throws {
            let sandbox = try Sandbox("robust-hls")
            defer { sandbox.remove() }
            let silent = try await HLSTestServer.make(from: Sample.landscape.url, in: sandbox, hostility: .silent)
            defer { silent.stop() }
            let playlists = try await PlaylistServer.start()
            defer { playlists.stop() }
            playlists.playlist("/master.m3u8", """
                #EXTM3U
                #EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360
                \(silent.vodURL)

                """)
            let output = sandbox.file("out.mp4")
            let (result, seconds) = try await timed {
                try await LiveFilter.run(["run", playlists.url("/master.m3u8"), "-o", output.path, "--quiet", "--io-timeout", "3"],
                                         timeout: .seconds(60))
            }
            Self.expectBoundedFailure(result, seconds: seconds, limit: 3 + 5, output: output)
            #expect(result.stderrText.contains(silent.vodURL), "names the variant: \(result.stderrText)")
        }

        @Test("robustness: a master playlist that lists itself ends with an error")
        func robustnessSelfReferencingMaster() async throws {
            let sandbox = try Sandbox("robust-hls")
            defer { sandbox.remove() }
            let playlists = try await PlaylistServer.start()
            defer { playlists.stop() }
            playlists.playlist("/master.m3u8", """
                #EXTM3U
                #EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360
                master.m3u8
                #EXT-X-STREAM-INF:BANDWIDTH=400000,RESOLUTION=320x180
                /master.m3u8

                """)
            let output = sandbox.file("out.mp4")
            let (result, seconds) = try await timed {
                try await LiveFilter.run(["run", playlists.url("/master.m3u8"), "-o", output.path, "--quiet", "--io-timeout", "3"],
                                         timeout: .seconds(60))
            }
            Self.expectBoundedFailure(result, seconds: seconds, limit: 20, output: output)
            #expect(playlists.requestLog.count < 20_000, "no fetch loop: \(playlists.requestLog.count) requests")
        }

        @Test("robustness: every segment 404 ends with an error, nothing written")
        func robustnessAllSegmentsMissing() async throws {
            let sandbox = try Sandbox("robust-hls")
            defer { sandbox.remove() }
            let server = try await HLSTestServer.make(from: Sample.landscape.url, in: sandbox, hostility: .missing(Set(0..<100)))
            defer { server.stop() }
            let output = sandbox.file("out.mp4")
            let (result, seconds) = try await timed {
                try await LiveFilter.run(["run", server.vodURL, "-o", output.path, "--quiet", "--io-timeout", "3"], timeout: .seconds(90))
            }
            Self.expectBoundedFailure(result, seconds: seconds, limit: 60, output: output)
        }

        enum SegmentFault: String, CaseIterable, Sendable, CustomTestStringConvertible {
            case html, closedMidway
            var testDescription: String { rawValue }
        }

        @Test("robustness: an HTML segment or a connection closed mid-segment is skipped with a warning", arguments: SegmentFault.allCases)
        func robustnessBadSegment(fault: SegmentFault) async throws {
            let sandbox = try Sandbox("robust-hls")
            defer { sandbox.remove() }
            let hostility: HLSTestServer.Hostility = fault == .html ? .htmlSegment(1) : .truncated(1)
            let server = try await HLSTestServer.make(from: Sample.landscape.url, in: sandbox, segmentSeconds: 1, hostility: hostility)
            defer { server.stop() }
            let output = sandbox.file("out.mp4")
            let (result, seconds) = try await timed {
                try await LiveFilter.run(["run", server.vodURL, "-o", output.path, "--quiet", "--io-timeout", "3"], timeout: .seconds(90))
            }
            #expect(!result.timedOut && seconds < 45, "\(seconds) s")
            if result.status == 0 {
                #expect(result.stderrLines.allSatisfy { $0.hasPrefix("livefilter: warning:") }, "\(result.stderrText)")
                let frames = try #require(try await FFprobe.probe(output, countFrames: true).video?.readFrames)
                #expect(frames > 60 && frames <= 150, "the other segments are there: \(frames)")
            } else {
                Self.expectBoundedFailure(result, seconds: seconds, limit: 45, output: output)
            }
        }

        @Test("robustness: a server trickling one byte a second fails by --io-timeout")
        func robustnessTrickle() async throws {
            let sandbox = try Sandbox("robust-hls")
            defer { sandbox.remove() }
            let server = try await HLSTestServer.make(from: Sample.landscape.url, in: sandbox, hostility: .trickle)
            defer { server.stop() }
            let output = sandbox.file("out.mp4")
            let (result, seconds) = try await timed {
                try await LiveFilter.run(["run", server.vodURL, "-o", output.path, "--quiet", "--io-timeout", "2"], timeout: .seconds(90))
            }
            // One byte a second is progress, so a per-read timeout alone never fires; the run must still end.
            #expect(!result.timedOut && seconds < 60, "\(seconds) s: \(result.summary)")
            #expect(result.status != 0, "\(result.summary)")
            Self.expectBoundedFailure(result, seconds: seconds, limit: 60, output: output)
        }

        @Test("robustness: a live playlist that stops updating ends by --stall-timeout (--input-loss-after's former name), exit 9, output finished")
        func robustnessStalledLive() async throws {
            let sandbox = try Sandbox("robust-hls")
            defer { sandbox.remove() }
            let (segments, playlists) = try await Self.hostileServers(sandbox)
            defer { segments.stop(); playlists.stop() }
            // Three segments, no ENDLIST, never updated.
            let list = segments.segments.prefix(3).map { ($0.name, String($0.duration)) }
            playlists.playlist("/live.m3u8", PlaylistServer.mediaPlaylist(Array(list), live: true))
            let output = sandbox.file("out.mp4")
            let (result, seconds) = try await timed {
                try await LiveFilter.run(["run", playlists.url("/live.m3u8"), "-o", output.path, "--quiet", "--stall-timeout", "3",
                                          "--live-start", "oldest"], timeout: .seconds(60))
            }
            expectOneLineError(result, MoreExitCodes.inputStalled, mentioning: "--input-loss-after")
            #expect(seconds < 20, "\(seconds) s")
            let frames = try #require(try await FFprobe.probe(output, countFrames: true).video?.readFrames)
            #expect(frames >= 60, "what arrived was kept: \(frames)")
        }

        enum ForeignReference: String, CaseIterable, Sendable, CustomTestStringConvertible {
            case localTS, absolutePath, concat, data, ftp
            var testDescription: String { rawValue }
        }

        @Test("security: a playlist over HTTP cannot make livefilter read local files or other schemes", arguments: ForeignReference.allCases)
        func robustnessForeignReference(kind: ForeignReference) async throws {
            let sandbox = try Sandbox("robust-hls")
            defer { sandbox.remove() }
            let (segments, playlists) = try await Self.hostileServers(sandbox)
            defer { segments.stop(); playlists.stop() }
            // A perfectly good local segment: if it were read, the run would succeed.
            let local = segments.folder.appendingPathComponent(segments.segments[0].name).path
            let uri = switch kind {
            case .localTS: "file://" + local
            case .absolutePath: local  // resolves against the playlist's http URL, never the disk
            case .concat: "concat:\(local)|\(local)"
            case .data: "data:video/mp2t;base64," + (try Data(contentsOf: URL(fileURLWithPath: local))).base64EncodedString()
            case .ftp: "ftp://127.0.0.1:1/" + segments.segments[0].name
            }
            playlists.playlist("/foreign.m3u8", PlaylistServer.mediaPlaylist([(uri, "1.0"), (uri, "1.0")]))
            let output = sandbox.file("out.mp4")
            let (result, seconds) = try await timed {
                try await LiveFilter.run(["run", playlists.url("/foreign.m3u8"), "-o", output.path, "--quiet", "--io-timeout", "3"],
                                         timeout: .seconds(60))
            }
            Self.expectBoundedFailure(result, seconds: seconds, limit: 30, output: output)
            if kind == .absolutePath {
                #expect(playlists.requestLog.contains(local), "the path was asked of the server: \(playlists.requestLog)")
            }
            // A data: URI is megabytes of base64; the message names it, shortened.
            #expect(result.stderrText.count < 1500, "\(result.stderrText.count) characters of stderr")
        }
    }
}

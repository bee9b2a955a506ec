import Foundation
import Testing

/// Ad markers through a filter, end to end (issue 46, point 3): a TS whose SCTE-35 break (an OUT,
/// then its IN) was made and injected on its own PID by threefive (scripts/splice-oracle.py), run
/// through the built binary into HLS, then read by tools nobody here wrote: the playlist by the `m3u8`
/// package (scripts/m3u8-oracle.py), the sections by threefive (scripts/scte35-oracle.py), the
/// pictures by ffprobe. Each splice must start a segment whose first picture is an IDR and is the
/// output picture that shows the splice's source picture (± 1 output frame), with an
/// EXT-X-DATERANGE whose START-DATE is that segment's EXT-X-PROGRAM-DATE-TIME.
extension EndToEnd {
    @Suite("Ad markers", .serialized)
    struct SpliceRuns {
        struct Source {
            var url: URL
            /// Splice times from the first picture, seconds.
            var outAfter: Double
            var inAfter: Double
        }

        /// 16 s of testsrc2 at 30 fps (a keyframe each second) and a tone, in MPEG-TS; a 3.7 s break
        /// whose OUT (event 21) falls at 5.5 s — mid-GOP and mid-segment — and IN at 9.2 s, each sent
        /// 2 s ahead of its splice, as SCTE 67 advises.
        static func makeSource(in sandbox: Sandbox) async throws -> Source {
            let plain = sandbox.file("plain.ts"), spliced = sandbox.file("spliced.ts")
            let made = try await Subprocess.run(Paths.ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
                                                               "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000", "-t", "16",
                                                               "-c:v", "libx264", "-preset", "veryfast", "-g", "30", "-pix_fmt", "yuv420p",
                                                               "-c:a", "aac", "-f", "mpegts", plain.path])
            #expect(made.succeeded, "\(made.summary)")
            let first = try #require(try await FFprobe.videoFrames(plain).first?.time)
            let outAt = first + 5.5, inAt = first + 9.2
            let outHex = try oracle("splice-oracle.py", ["insert", "21", "1", "\(outAt)", "0", "3.7"])
            let inHex = try oracle("splice-oracle.py", ["insert", "21", "0", "\(inAt)", "0"])
            _ = try oracle("splice-oracle.py", ["inject", plain.path, spliced.path, "\(outAt - 2):\(outHex)", "\(inAt - 2):\(inHex)"])
            return Source(url: spliced, outAfter: 5.5, inAfter: 9.2)
        }

        static func oracle(_ script: String, _ arguments: [String]) throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", Paths.packageRoot.appendingPathComponent("scripts/\(script)").path] + arguments
            let out = Pipe(), err = Pipe()
            (process.standardOutput, process.standardError) = (out, err)
            try process.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            let errors = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw ToolError(message: "\(script) \(arguments.first ?? ""): \(String(decoding: errors, as: UTF8.self))")
            }
            return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }

        struct ToolError: Error, CustomStringConvertible { var message: String; var description: String { message } }

        /// A media playlist as the m3u8 package reads it.
        struct Playlist {
            struct Segment {
                var uri: String
                var start: Double
                var duration: Double
                var date: String?
                var ranges: [[String: Any]]
                var cueOutStart: Bool
                var cueIn: Bool
            }
            var segments: [Segment]
            var targetDuration: Int

            init(_ url: URL) throws {
                let text = try SpliceRuns.oracle("m3u8-oracle.py", [url.path])
                let all = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
                let playlist = try #require(all.values.first as? [String: Any])
                targetDuration = playlist["target_duration"] as? Int ?? 0
                var start = 0.0
                segments = (playlist["segments"] as? [[String: Any]] ?? []).map { s in
                    defer { start += s["duration"] as? Double ?? 0 }
                    return Segment(uri: s["uri"] as? String ?? "", start: start, duration: s["duration"] as? Double ?? 0,
                                   date: s["program_date_time"] as? String, ranges: s["dateranges"] as? [[String: Any]] ?? [],
                                   cueOutStart: s["cue_out_start"] as? Bool ?? false, cueIn: s["cue_in"] as? Bool ?? false)
                }
            }
        }

        /// ISO 8601 (m3u8's `+00:00` or our `Z`) to seconds since the epoch.
        static func seconds(_ date: String?) -> Double? {
            guard let date else { return nil }
            let f = ISO8601DateFormatter()
            f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return f.date(from: date)?.timeIntervalSince1970
        }

        /// Checks one rendition's playlist: the break's range on the segment that starts at the OUT,
        /// IDR first pictures there and at the IN, both within one output frame of the source's times.
        static func checkBreak(in folder: URL, playlist name: String, source: Source, rate: Double,
                               dateRanges: Bool = true, cueTags: Bool = false) async throws {
            let playlist = try Playlist(folder.appendingPathComponent(name))
            let segments = playlist.segments
            #expect(segments.allSatisfy { $0.duration.rounded() <= Double(playlist.targetDuration) }, "EXTINF over the target duration")
            let out = try #require(segments.firstIndex { abs($0.start - source.outAfter) <= 1 / rate + 1e-6 && $0.start > 0 },
                                   "no segment starts within one frame of the OUT at \(source.outAfter) s: \(segments.map(\.start))")
            let back = try #require(segments.firstIndex { abs($0.start - source.inAfter) <= 1 / rate + 1e-6 },
                                    "no segment starts within one frame of the IN at \(source.inAfter) s: \(segments.map(\.start))")
            for index in [out, back] {
                let frames = try await FFprobe.videoFrames(folder.appendingPathComponent(segments[index].uri))
                #expect(frames.first?.isKey == true && frames.first?.pictType == "I", "segment \(index) starts with \(String(describing: frames.first))")
            }
            let ranges = segments.flatMap(\.ranges)
            if dateRanges {
                #expect(ranges.count == 1, "\(ranges)")
                let range = try #require(segments[out].ranges.first, "the range is written before the OUT's segment")
                #expect(range["id"] as? String == "SCTE35-21")
                #expect(seconds(range["start_date"] as? String) == seconds(segments[out].date), "START-DATE is the segment's PDT")
                let duration = try #require(range["duration"] as? Double, "the IN closes the range: \(range)")
                #expect(abs(duration - (segments[back].start - segments[out].start)) < 0.002, "DURATION \(duration)")
                let decoded = try oracle("scte35-oracle.py", ["decode", range["scte35_out"] as? String ?? "", range["scte35_in"] as? String ?? ""])
                let sections = try #require(try JSONSerialization.jsonObject(with: Data(decoded.utf8)) as? [[String: Any]])
                #expect(sections.map { $0["crc_ok"] as? Bool } == [true, true])
                #expect(sections.map { $0["event_id"] as? Int } == [21, 21])
                #expect(sections.map { $0["out"] as? Bool } == [true, false])
                #expect(sections.first?["break_duration"] as? Int == 333_000, "3.7 s in 90 kHz ticks")
            } else {
                #expect(ranges.isEmpty, "\(ranges)")
            }
            #expect(segments[out].cueOutStart == cueTags && segments[back].cueIn == cueTags,
                    "CUE-OUT on \(segments[out].uri): \(segments[out].cueOutStart), CUE-IN on \(segments[back].uri): \(segments[back].cueIn)")
        }

        /// Makes the source and runs livefilter on it into `hls/PLAYLIST` with `arguments`.
        static func run(_ arguments: [String], playlist: String = "index.m3u8") async throws -> (source: Source, folder: URL, sandbox: Sandbox) {
            let sandbox = try Sandbox()
            let source = try await makeSource(in: sandbox)
            let folder = sandbox.file("hls")
            let result = try await LiveFilter.run(["run", source.url.path, "-o", folder.appendingPathComponent(playlist).path, "--hls-time", "2", "--quiet"]
                                                  + arguments)
            #expect(result.succeeded, "\(result.summary)")
            return (source, folder, sandbox)
        }

        @Test("a break through blur | mirror: segments cut on the OUT's and the IN's pictures, IDR, DATERANGE at the PDT, sections as threefive made them")
        func throughTheChain() async throws {
            let report = FileManager.default.temporaryDirectory.appendingPathComponent("splice-report-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: report) }
            let (source, folder, _) = try await Self.run(["--chain", "blur 4 | mirror", "--report", report.path])
            try await Self.checkBreak(in: folder, playlist: "index.m3u8", source: source, rate: 30)
            // The TS segments carry the sections on a SCTE-35 PID too (threefive's own TS reader finds
            // them), each just before its splice's IDR with the splice time moved onto that picture.
            let segments = try Playlist(folder.appendingPathComponent("index.m3u8")).segments
            var found: [Int] = []
            for segment in segments {
                let text = try Self.oracle("ts-oracle.py", [folder.appendingPathComponent(segment.uri).path])
                let ts = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
                #expect((ts["cc_errors"] as? [Any])?.isEmpty == true, "\(segment.uri): \(ts["cc_errors"] ?? "")")
                let cues = ts["cues"] as? [[String: Any]] ?? [], placements = ts["placements"] as? [[String: Any]] ?? []
                for (cue, placement) in zip(cues, placements) {
                    #expect(cue["splice_time"] as? Int == placement["next_video_pts"] as? Int, "\(segment.uri): \(cue) \(placement)")
                    #expect(placement["next_video_random_access"] as? Bool == true)
                }
                found += Array(repeating: segments.firstIndex { $0.uri == segment.uri } ?? -1, count: cues.count)
            }
            #expect(found.map { segments[$0].start }.map { ($0 * 10).rounded() / 10 } == [5.5, 9.2], "sections in segments \(found)")
            let reported = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any])
            let placed = (reported["splices"] as? [String: Any])?["placed"] as? [[String: Any]] ?? []
            #expect(placed.map { $0["kind"] as? String } == ["out", "in"], "\(placed)")
            #expect(placed.allSatisfy { $0["late"] as? Bool == false })
        }

        @Test("--fps 25 from 30: each splice on the first 25 fps picture that shows its source picture, within one output frame")
        func lowerRate() async throws {
            let (source, folder, _) = try await Self.run(["--chain", "blur 2", "--fps", "25"])
            try await Self.checkBreak(in: folder, playlist: "index.m3u8", source: source, rate: 25)
        }

        @Test("a ladder of three rungs and its audio rendition: every rung cut at the same pictures, each playlist with the range")
        func ladder() async throws {
            let (source, folder, _) = try await Self.run(["--chain", "mirror", "--rendition", "320x240@500k", "--rendition", "256x192@300k",
                                                          "--rendition", "160x120@150k"], playlist: "master.m3u8")
            let playlists = try FileManager.default.contentsOfDirectory(atPath: folder.path)
                .filter { $0.hasSuffix(".m3u8") && $0 != "master.m3u8" }.sorted()
            #expect(playlists.count >= 3, "\(playlists)")
            var starts: [[Double]] = []
            for name in playlists {
                let playlist = try Playlist(folder.appendingPathComponent(name))
                // The audio rendition's segments follow the video's cuts to the nearest audio frame.
                let isVideo = try await FFprobe.probe(folder.appendingPathComponent(playlist.segments[0].uri)).video != nil
                if isVideo {
                    try await Self.checkBreak(in: folder, playlist: name, source: source, rate: 30)
                    starts.append(playlist.segments.map(\.start))
                } else {
                    #expect(playlist.segments.flatMap(\.ranges).count == 1, "the audio rendition carries the range too")
                }
            }
            #expect(Set(starts.map { $0.map { ($0 * 1000).rounded() } }).count == 1, "the rungs' segments start at the same times: \(starts)")
        }

        @Test("--ad-markers cue: EXT-X-CUE-OUT on the OUT's segment, CUE-IN on the IN's, no DATERANGE")
        func cueTags() async throws {
            let (source, folder, _) = try await Self.run(["--chain", "mirror", "--ad-markers", "cue"])
            try await Self.checkBreak(in: folder, playlist: "index.m3u8", source: source, rate: 30, dateRanges: false, cueTags: true)
        }

        @Test("a hostile DATERANGE (START-DATE in year 1 or 9999, a huge DURATION) is no trap: the run ends, exit 0",
              arguments: ["0001-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z"])
        func hostileDates(date: String) async throws {
            // Our own HLS of the source (TS segments, PDTs) is the input; its range gets the date.
            let (_, folder, sandbox) = try await Self.run(["--chain", "mirror"])
            let playlist = folder.appendingPathComponent("index.m3u8")
            let text = try String(contentsOf: playlist, encoding: .utf8)
            let hostile = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
                guard line.hasPrefix("#EXT-X-DATERANGE:") else { return String(line) }
                return "#EXT-X-DATERANGE:ID=\"evil\",START-DATE=\"\(date)\",DURATION=999999,SCTE35-OUT=0xFC302500000000000000FFF01405000000157FEFFE00099138FE000514C8000701020000F3ADF35C"
            }.joined(separator: "\n")
            #expect(hostile != text, "the playlist had a range to replace")
            try hostile.write(to: playlist, atomically: true, encoding: .utf8)
            let result = try await LiveFilter.run(["run", playlist.path, "-o", sandbox.file("again/index.m3u8").path, "--hls-time", "2", "-q", "-y"])
            #expect(result.succeeded, "\(result.summary)")
        }

        @Test("--ad-markers none: the splices still start segments on IDR pictures; no tag, no SCTE-35 PID")
        func none() async throws {
            let (source, folder, _) = try await Self.run(["--chain", "mirror", "--ad-markers", "none"])
            try await Self.checkBreak(in: folder, playlist: "index.m3u8", source: source, rate: 30, dateRanges: false, cueTags: false)
            let first = try Playlist(folder.appendingPathComponent("index.m3u8")).segments[0]
            let probe = try await FFprobe.probe(folder.appendingPathComponent(first.uri))
            #expect(probe.streams.count == 2, "video and audio only: \(probe.streams.map(\.codecType))")
        }
    }
}

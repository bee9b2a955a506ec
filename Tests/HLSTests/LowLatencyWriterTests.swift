import Filters
import Foundation
import HLS
import MediaIO
import Synchronization
import Testing

/// LL-HLS output: `HLSWriter` with `partDuration` publishes each part as its own file the moment its
/// last picture's packet is written, then a playlist that lists it with the next part's preload
/// hint; a segment is closed right after its last picture, and its file is its parts' bytes.
@Suite(.serialized)
struct LowLatencyWriterTests {
    /// What the writer published, in order, with what was on disk at that moment.
    final class Publications: Sendable {
        struct Event { var name: String; var videoPts: Int64; var playlist: String? }
        private let state = Mutex<(events: [Event], pts: Int64, problems: [String])>(([], -1, []))
        let folder: String
        init(folder: String) { self.folder = folder }

        func aboutToWrite(videoPts: Int64) { state.withLock { $0.pts = videoPts } }
        var events: [Event] { state.withLock { $0.events } }
        var problems: [String] { state.withLock { $0.problems } }

        /// On the writer's thread, right after the rename: a playlist is read and checked against the folder now.
        func published(_ path: String) {
            let name = (path as NSString).lastPathComponent
            var text: String?
            var problems: [String] = []
            if name.hasSuffix(".m3u8") {
                text = try? String(contentsOfFile: path, encoding: .utf8)
                if let text, case let .media(playlist)? = try? PlaylistParser.parse(text) {
                    let exists = { (uri: String) in FileManager.default.fileExists(atPath: self.folder + "/" + uri) }
                    for segment in playlist.segments where !exists(segment.uri) { problems.append("\(segment.uri) listed before it exists") }
                    for part in playlist.segments.flatMap(\.parts) + (playlist.segmentInProgress?.parts ?? []) where !exists(part.uri) {
                        problems.append("\(part.uri) listed before it exists")
                    }
                    for hint in playlist.preloadHints where exists(hint.uri) { problems.append("hint \(hint.uri) already exists") }
                    if !playlist.endList, playlist.preloadHints.count != 1 { problems.append("\(playlist.preloadHints.count) preload hints") }
                } else {
                    problems.append("unreadable playlist: \(text ?? "-")")
                }
            }
            state.withLock {
                $0.events.append(Event(name: name, videoPts: $0.pts, playlist: text))
                $0.problems += problems
            }
        }
    }

    @Test(arguments: [HLSSegmentType.fmp4, .ts])
    func partsArePublishedTheMomentTheirLastPictureIsWritten(_ type: HLSSegmentType) throws {
        let folder = try ScratchFolder("ll-\(type)")
        defer { folder.remove() }
        let playlistPath = folder.path + "/video.m3u8"
        let options = HLSOutputOptions(segmentDuration: 2, playlistType: .event, segmentType: type, partDuration: 0.5)
        let writer = try HLSWriter(playlistPath: playlistPath, options: options, overwrite: false)
        let log = Publications(folder: folder.path)
        writer.onFilePublished = { log.published($0) }
        try SyntheticStream.write(into: writer, seconds: 6, lowDelay: true, beforeVideoPacket: { log.aboutToWrite(videoPts: $0) })
        #expect(writer.warnings.isEmpty, "\(writer.warnings)")
        #expect(log.problems.isEmpty, "\(log.problems)")

        // 30 fps, 2 s segments of four 0.5 s parts: part p of segment k is published while the packet
        // of its last picture (tick 60k + 15(p+1) - 1) is written — not when the next one comes —
        // and the segment with its last part.
        let events = log.events
        for k in 0..<3 {
            for p in 0..<4 {
                let name = "video_0000\(k).p\(p).\(type == .ts ? "ts" : "m4s")"
                let event = try #require(events.first { $0.name == name }, "\(name) published")
                #expect(event.videoPts == Int64(60 * k + 15 * (p + 1) - 1), "\(name) published at video packet \(event.videoPts)")
            }
            let segment = try #require(events.first { $0.name == "video_0000\(k).\(type == .ts ? "ts" : "m4s")" })
            #expect(segment.videoPts == Int64(60 * k + 59), "segment \(k) published at video packet \(segment.videoPts)")
        }

        // Every playlist published during the run follows RFC 8216bis and livefilter's own rules.
        let playlists = events.compactMap(\.playlist)
        #expect(playlists.count >= 12, "a playlist per part: \(playlists.count)")
        for text in playlists {
            for profile in [HLSLinter.Profile.rfc8216, .livefilter] {
                let lint = HLSLinter(profile: profile).lint(text)
                #expect(lint.violations.isEmpty, "\(profile): \(lint.violations)\n\(text)")
            }
            let playlist = try parseMedia(text)
            #expect(playlist.partTarget == 0.5)
            #expect(playlist.serverControl?.canBlockReload == true)
            #expect(playlist.serverControl?.partHoldBack == 1.5)
            #expect(playlist.serverControl?.canSkipUntil == 12)
            for part in playlist.segments.flatMap(\.parts) + (playlist.segmentInProgress?.parts ?? []) {
                #expect(part.duration <= 0.5 + 1e-9)
                #expect(part.independent == part.uri.contains(".p0."), "\(part.uri) INDEPENDENT=\(part.independent)")
            }
        }
        // A mid-run playlist: the open segment's parts and the next one hinted.
        let midRun = try #require(playlists.map(parseMedia).first { $0.segments.count == 1 && $0.segmentInProgress?.parts.count == 2 })
        #expect(midRun.segmentInProgress?.parts.map(\.uri) == ["video_00001.p0", "video_00001.p1"].map { $0 + (type == .ts ? ".ts" : ".m4s") })
        #expect(midRun.preloadHints == [PreloadHint(type: .part, uri: "video_00001.p2." + (type == .ts ? "ts" : "m4s"))])
        #expect(midRun.segments[0].parts.count == 4)

        // The final playlist: every segment with its parts (within three target durations), no hint.
        let final = try parseMedia(String(contentsOfFile: playlistPath, encoding: .utf8))
        #expect(final.endList && final.preloadHints.isEmpty)
        #expect(final.segments.count == 3)
        for (segment, record) in zip(final.segments, writer.segments) {
            #expect(record.parts.count == 4)
            #expect(abs(record.parts.reduce(0) { $0 + $1.duration } - segment.duration) < 0.0015)
            // A segment is the concatenation of its parts.
            var joined = Data()
            for part in record.parts { joined += try Data(contentsOf: URL(fileURLWithPath: folder.path + "/" + part.uri)) }
            #expect(joined == (try Data(contentsOf: URL(fileURLWithPath: folder.path + "/" + segment.uri))), "\(segment.uri)")
        }

        // A player that starts at an independent part decodes from it: the init segment (fMP4), then
        // parts 0…p, cleanly; part 0 starts with a keyframe.
        let record = writer.segments[1]
        var bytes = try final.map.map { try Data(contentsOf: URL(fileURLWithPath: folder.path + "/" + $0.uri)) } ?? Data()
        for part in record.parts.prefix(2) { bytes += try Data(contentsOf: URL(fileURLWithPath: folder.path + "/" + part.uri)) }
        let joinedPath = folder.path + "/joined." + (type == .ts ? "ts" : "mp4")
        try bytes.write(to: URL(fileURLWithPath: joinedPath))
        let first = try Tools.probe(["-select_streams", "v:0", "-show_frames", "-read_intervals", "%+#1",
                                     "-show_entries", "frame=key_frame,pict_type", joinedPath])
        #expect(first.hasPrefix("1\nI"), "part 0 starts with \(first)")
        let frames = try Tools.probe(["-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames", joinedPath])
        #expect(frames.split(separator: "\n").first == "30", "two parts of 15 pictures: \(frames)")
        let decode = try Tools.run("ffmpeg", ["-v", "error", "-i", joinedPath, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.stderr.isEmpty, "\(decode.stderr)")

        // The playlist as a whole, parts ignored (ffmpeg's reader knows none): every picture.
        let all = try Tools.probe(["-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames", playlistPath])
        #expect(all.split(separator: "\n").first == "180", "\(all)")
    }

    @Test func aLivePlaylistListsPartsOfItsLastSegmentsOnlyAndDeletesOldPartFiles() throws {
        let folder = try ScratchFolder("ll-live")
        defer { folder.remove() }
        let playlistPath = folder.path + "/live.m3u8"
        let options = HLSOutputOptions(segmentDuration: 1, playlistType: .live, listSize: 4, segmentType: .fmp4,
                                       deleteGraceSegments: 1, partDuration: 0.25)
        let writer = try HLSWriter(playlistPath: playlistPath, options: options, overwrite: false)
        let log = Publications(folder: folder.path)
        writer.onFilePublished = { log.published($0) }
        try SyntheticStream.write(into: writer, seconds: 12, audio: false, lowDelay: true, commit: false)
        #expect(log.problems.isEmpty, "\(log.problems)")
        let text = try String(contentsOfFile: playlistPath, encoding: .utf8)
        #expect(HLSLinter(profile: .rfc8216).lint(text).violations.isEmpty, "\(text)")
        let playlist = try parseMedia(text)
        #expect(playlist.segments.count == 4)
        // Three target durations (3 s) from the end: the last segments' parts, not the first's.
        #expect(playlist.segments.first?.parts.isEmpty == true, "\(text)")
        // 0.25 s at 30 fps: parts of 7 pictures (0.233 s), the fifth of 2.
        #expect(playlist.segments.last?.parts.map { Int(($0.duration * 30).rounded()) } == [7, 7, 7, 7, 2], "\(text)")
        // Part files of segments long gone are deleted; those listed exist (checked at each publication).
        let parts = folder.files().filter { $0.contains(".p") }
        #expect(!parts.contains("live_00000.p0.m4s"), "\(parts)")
        #expect(parts.count <= 5 * 7, "\(parts.count) part files kept")
    }

    /// The writer takes its part ticks as given: the plan gives a VOD playlist none (and warns;
    /// `JobPlanTests`), and a part target alone makes no parts.
    @Test func aWriterWithoutPartTicksWritesNoParts() throws {
        let folder = try ScratchFolder("ll-vod")
        defer { folder.remove() }
        let playlistPath = folder.path + "/vod.m3u8"
        let options = HLSOutputOptions(segmentDuration: 2, playlistType: .vod, segmentType: .fmp4, partDuration: 0.5)
        let writer = try HLSWriter(playlistPath: playlistPath, options: options,
                                   schedule: SegmentSchedule(grid: TickGrid(rate: Rational(SyntheticStream.frameRate, 1)), seconds: 2),
                                   overwrite: false, partTicks: nil)
        try SyntheticStream.write(into: writer, seconds: 2, audio: false)
        let text = try String(contentsOfFile: playlistPath, encoding: .utf8)
        #expect(!text.contains("EXT-X-PART"), "\(text)")
        #expect(!folder.files().contains { $0.contains(".p0.") })
    }

    /// A part is only as quick as the encoder: with `lowDelay`, x264 hands back each picture's
    /// packet before the next picture is sent (no look-ahead, no B-frames, no frame threads).
    @Test func aLowDelayEncoderReturnsEachPictureAtOnce() throws {
        var settings = VideoEncoderSettings()
        settings.speedPreset = .veryfast
        settings.lowDelay = true
        let size = SyntheticStream.size
        let encoder = try Encoder.h264(size: size, frameRate: Rational(30, 1), timeBase: Rational(1, 30), color: .bt709,
                                       settings: settings, globalHeader: true)
        let converter = try RGBToFrame(size: size, color: .bt709)
        let image = RGBImage(size: size)
        var late: [Int] = []
        for i in 0..<45 {
            SyntheticStream.paint(image, frame: i)
            let frame = try converter.convert(image)
            frame.presentationTimestamp = Int64(i)
            try encoder.send(frame)
            var received: [Int64] = []
            while case let .packet(p) = try encoder.receive() { received.append(p.presentationTimestamp ?? -1) }
            if received != [Int64(i)] { late.append(i) }
        }
        #expect(late.isEmpty, "pictures whose packet did not come back at once: \(late)")
    }

    @Test func partDurationsOutsideTheirRangeAreRefused() {
        for bad in [0.05, 1.5, .nan] {
            #expect(throws: MediaError.self) { try HLSOutputOptions(segmentDuration: 2, partDuration: bad).validate() }
        }
    }
}

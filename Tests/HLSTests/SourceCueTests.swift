import Broadcast
import Foundation
import HLS
import MediaIO
import Testing

/// Ad markers read from sources nobody here wrote: SCTE-35 sections threefive encodes and injects
/// into an MPEG-TS (a PID of stream type 0x86), x9k3's HLS playlists made from that TS (CUE-OUT and
/// DATERANGE styles), and a playlist this test writes by rfc8216bis's text. Each cue must be at the
/// pts the independent reading gives: threefive's `pts_time + pts_adjustment`, or a segment's first
/// video pts (ffprobe) + START-DATE − its EXT-X-PROGRAM-DATE-TIME.
@Suite(.serialized, .enabled(if: SpliceOracle.available, "needs python3 with threefive and x9k3: LIVEFILTER_PLAYERS=1 scripts/install-deps.sh"))
struct SourceCueTests {
    /// 10 s at 30 fps, a keyframe every second, AAC beside it: the ffmpeg CLI's MPEG-TS starts at 1.4 s.
    static func source(_ folder: ScratchFolder, seconds: Int = 10) throws -> String {
        let path = folder.path + "/source.ts"
        let r = try Tools.run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-f", "lavfi", "-i", "sine",
                                         "-t", "\(seconds)", "-c:v", "libx264", "-g", "30", "-keyint_min", "30", "-sc_threshold", "0",
                                         "-c:a", "aac", "-f", "mpegts", path])
        try #require(r.status == 0, "ffmpeg: \(r.stderr)")
        return path
    }

    /// Every cue of `url`, with the newest video pts read before `takeCues` returned it.
    static func readCues(_ url: String) throws -> (cues: [(cue: SourceCue, newestVideo: Int64?)], videoPTS: [Int64], demuxer: Demuxer) {
        let demuxer = try Demuxer(url: url)
        let packet = Packet()
        var cues: [(SourceCue, Int64?)] = []
        var videoPTS: [Int64] = []
        while try demuxer.read(into: packet) == .packet {
            if packet.streamIndex == demuxer.video.index, let pts = packet.presentationTimestamp, !packet.isSegmentEnd { videoPTS.append(pts) }
            for cue in demuxer.takeCues() { cues.append((cue, videoPTS.max())) }
        }
        return (cues, videoPTS, demuxer)
    }

    @Test func sectionsOfATransportStreamAreCuesAtTheirSpliceTime() throws {
        let folder = try ScratchFolder("cue-ts")
        defer { folder.remove() }
        let source = try Self.source(folder)
        // A break from 5.4 s to 8.4 s on the source's clock, each said as pts_time 2 s before plus a
        // pts_adjustment of 2 s, sent about 2.5 s ahead (threefive sends each at the next I-frame).
        let out = try SpliceOracle.insert(event: 42, out: true, pts: 3.4, adjustment: 2.0, duration: 3.0)
        let into = try SpliceOracle.insert(event: 42, out: false, pts: 6.4, adjustment: 2.0)
        let injected = folder.path + "/cued.ts"
        try SpliceOracle.inject(source, injected, [(2.9, out), (5.9, into)])
        let theirs = try SpliceOracle.decode([out, into])

        let (cues, videoPTS, demuxer) = try Self.readCues(injected)
        // The data stream changes nothing of the choice of streams or their probe.
        #expect(demuxer.audio != nil && demuxer.video.size.width == 320)
        // Every picture the TS holds (threefive's inserter leaves out its last half-written chunk).
        let counted = try Tools.probe(["-count_packets", "-select_streams", "v:0", "-show_entries", "stream=nb_read_packets", injected])
        #expect(videoPTS.count == Int(counted.split(separator: "\n").first ?? ""), "ffprobe: \(counted)")
        try #require(cues.count == 2, "\(cues.map(\.cue))")
        for (i, (cue, newest)) in cues.enumerated() {
            let expected = try #require(theirs[i].pts_time) + theirs[i].pts_adjustment
            #expect(cue.timing == .at(pts: expected), "threefive: pts_time + pts_adjustment = \(expected)")
            #expect(cue.id == "SCTE35-42")
            #expect(cue.section?.hex.lowercased() == [out, into][i].lowercased(), "the section's bytes as sent")
            // Delivered before any picture at or past it.
            #expect(!cue.isLate && (newest ?? .min) < expected)
        }
        #expect(cues.map(\.cue.kind) == [.out, .in])
        #expect(cues[0].cue.plannedDuration == 3.0)
    }

    @Test func x9k3CueTagsApplyAtTheirSegmentsStart() throws {
        let folder = try ScratchFolder("cue-x9k3")
        defer { folder.remove() }
        let injected = try Self.injected(folder)
        let hls = folder.path + "/cue"
        try SpliceOracle.segment(injected, hls, tag: "x_cue")
        let playlistPath = try Self.completed(hls)
        let playlist = try parseMedia(String(contentsOfFile: playlistPath, encoding: .utf8))
        let outAt = try #require(playlist.segments.firstIndex { $0.cueMarkers.contains { if case .out = $0 { true } else { false } } })
        let inAt = try #require(playlist.segments.firstIndex { $0.cueMarkers.contains(.in) })

        let (cues, _, _) = try Self.readCues(playlistPath)
        let tags = cues.map(\.cue).filter { if case .cueTag = $0.marker { true } else { false } }
        try #require(tags.count == 2, "\(tags)")
        #expect(tags[0].kind == .out && tags[1].kind == .in && tags[0].id == tags[1].id)
        #expect(tags[0].plannedDuration == 3.0)
        #expect(tags[0].timing == .at(pts: try Self.firstVideoPTS(hls + "/" + playlist.segments[outAt].uri)))
        #expect(tags[1].timing == .at(pts: try Self.firstVideoPTS(hls + "/" + playlist.segments[inAt].uri)))
        // x9k3 keeps the SCTE-35 PID in its segments: those sections come too, at their splice times.
        let sections = cues.map(\.cue).filter { $0.section != nil && $0.dateRange == nil }
        #expect(sections.map(\.kind) == [.out, .in])
        for cue in sections {
            let hex = try #require(cue.section?.hex)
            let theirs = try #require(try SpliceOracle.decode([hex]).first)
            #expect(cue.timing == .at(pts: try #require(theirs.pts_time) + theirs.pts_adjustment), "threefive: pts_time + pts_adjustment")
        }
    }

    @Test func x9k3DateRangeIsPlacedByItsStartDate() throws {
        let folder = try ScratchFolder("daterange-x9k3")
        defer { folder.remove() }
        // The section given to x9k3 beside the TS (its sidecar): only the playlist carries it.
        let source = try Self.source(folder, seconds: 12)
        let out = try SpliceOracle.insert(event: 42, out: true, pts: 3.4, adjustment: 2.0, duration: 3.0)
        let hls = folder.path + "/dr"
        try SpliceOracle.segment(source, hls, tag: "x_daterange", sections: [(2.9, out)])
        let playlistPath = try Self.completed(hls)
        let playlist = try parseMedia(String(contentsOfFile: playlistPath, encoding: .utf8))
        // x9k3 writes the IN as a second tag without START-DATE, which no client can read: the OUT's range.
        let range = try #require(playlist.dateRanges.first { $0.scte35Out != nil })
        // The segment it falls in: the last one dated at or before its START-DATE.
        let text = try String(contentsOfFile: playlistPath, encoding: .utf8)
        let segment = try #require(playlist.segments.lastIndex { ($0.programDateTime ?? .distantFuture) <= range.startDate }, "\(text)")
        let pdt = try #require(playlist.segments[segment].programDateTime)
        let expected = try Self.firstVideoPTS(hls + "/" + playlist.segments[segment].uri)
            + Int64((range.startDate.timeIntervalSince(pdt) * 90_000).rounded())

        let (cues, _, _) = try Self.readCues(playlistPath)
        let fromRange = cues.map(\.cue).filter { $0.dateRange != nil }
        try #require(fromRange.count == 1, "\(fromRange)")
        #expect(fromRange[0].id == range.id && fromRange[0].kind == .out)
        #expect(fromRange[0].timing == .at(pts: expected))
        let theirs = try SpliceOracle.decode([try #require(range.scte35Out)])
        #expect(fromRange[0].section?.spliceTime == UInt64(try #require(theirs[0].pts_time) + theirs[0].pts_adjustment))
        #expect(fromRange[0].section?.hex.lowercased() == out.lowercased())
    }

    /// A live-style playlist written here by rfc8216bis §4.4.5.1: an OUT with its DURATION known,
    /// so its IN follows at START-DATE + DURATION; a range of another class passed through.
    @Test func dateRangeWrittenByTheRFCsText() throws {
        let folder = try ScratchFolder("daterange-rfc")
        defer { folder.remove() }
        let source = try Self.source(folder)
        let r = try Tools.run("ffmpeg", ["-v", "error", "-y", "-i", source, "-c", "copy", "-f", "hls", "-hls_time", "2",
                                         "-hls_playlist_type", "vod", "-hls_segment_filename", folder.path + "/s%d.ts", folder.path + "/ffmpeg.m3u8"])
        try #require(r.status == 0, "ffmpeg: \(r.stderr)")
        let made = try parseMedia(String(contentsOfFile: folder.path + "/ffmpeg.m3u8", encoding: .utf8))
        let out = try SpliceOracle.insert(event: 7, out: true, pts: 4.5, adjustment: 0, duration: 2.5)
        let dawn = Date(timeIntervalSince1970: 1_800_000_000)
        var text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:\(made.targetDuration)\n"
        var date = dawn
        for (i, segment) in made.segments.enumerated() {
            if i == 1 {
                let start = dawn.addingTimeInterval(made.segments[0].duration + 0.5)
                text += "#EXT-X-DATERANGE:ID=\"break-1\",START-DATE=\"\(HLSDate.format(start))\",DURATION=2.5,PLANNED-DURATION=2.5,SCTE35-OUT=\(out)\n"
                text += "#EXT-X-DATERANGE:ID=\"show\",CLASS=\"com.example.program\",START-DATE=\"\(HLSDate.format(start.addingTimeInterval(0.25)))\",X-TITLE=\"News\"\n"
            }
            text += "#EXT-X-PROGRAM-DATE-TIME:\(HLSDate.format(date))\n#EXTINF:\(segment.duration),\n\(segment.uri)\n"
            date = date.addingTimeInterval(segment.duration)
        }
        text += "#EXT-X-ENDLIST\n"
        let path = folder.path + "/rfc.m3u8"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(HLSLinter(profile: .livefilter).lint(text).violations.filter { $0.rule.hasPrefix("daterange") }.isEmpty)

        let (cues, _, _) = try Self.readCues(path)
        let second = try Self.firstVideoPTS(folder.path + "/" + made.segments[1].uri)
        try #require(cues.count == 3, "\(cues.map(\.cue))")
        #expect(cues[0].cue.id == "break-1" && cues[0].cue.kind == .out && cues[0].cue.timing == .at(pts: second + 45_000))
        #expect(cues[1].cue.id == "break-1" && cues[1].cue.kind == .in && cues[1].cue.timing == .at(pts: second + 45_000 + 225_000))
        #expect(cues[0].cue.section?.hex.lowercased() == out.lowercased())
        #expect(cues[2].cue.id == "show" && cues[2].cue.kind == .command && cues[2].cue.timing == .at(pts: second + 67_500))
        #expect(cues[2].cue.dateRange?.rangeClass == "com.example.program")
        #expect(cues.allSatisfy { !$0.cue.isLate })
    }

    /// A live playlist reloaded: its DATERANGE is repeated on every reload but delivered once; when
    /// the origin adds the break's end (DURATION, END-DATE, SCTE35-IN), the return follows.
    @Test func aLiveDateRangeIsDeliveredOnceAndItsEndFollows() throws {
        let folder = try ScratchFolder("daterange-live")
        defer { folder.remove() }
        let source = try Self.source(folder, seconds: 12)
        let r = try Tools.run("ffmpeg", ["-v", "error", "-y", "-i", source, "-c", "copy", "-f", "hls", "-hls_time", "2",
                                         "-hls_playlist_type", "vod", "-hls_segment_filename", folder.path + "/s%d.ts", folder.path + "/ffmpeg.m3u8"])
        try #require(r.status == 0, "ffmpeg: \(r.stderr)")
        let made = try parseMedia(String(contentsOfFile: folder.path + "/ffmpeg.m3u8", encoding: .utf8))
        try #require(made.segments.count >= 5)
        let out = try SpliceOracle.insert(event: 9, out: true, pts: 5.0, adjustment: 0, duration: 3.0)
        let into = try SpliceOracle.insert(event: 9, out: false, pts: 8.0, adjustment: 0)
        let dawn = Date(timeIntervalSince1970: 1_800_000_000)
        var dates: [Date] = []
        for _ in made.segments { dates.append((dates.last.map { $0.addingTimeInterval(made.segments[dates.count - 1].duration) }) ?? dawn) }
        let start = dates[2].addingTimeInterval(0.5)
        func playlist(segments: Int, ended: Bool) -> String {
            var text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:\(made.targetDuration)\n"
            for i in 0..<segments {
                if i == 2 {
                    let end = ended ? ",END-DATE=\"\(HLSDate.format(start.addingTimeInterval(3)))\",DURATION=3" : ""
                    text += "#EXT-X-DATERANGE:ID=\"ad-1\",START-DATE=\"\(HLSDate.format(start))\"\(end),PLANNED-DURATION=3,SCTE35-OUT=\(out)"
                        + (ended ? ",SCTE35-IN=\(into)" : "") + "\n"
                }
                text += "#EXT-X-PROGRAM-DATE-TIME:\(HLSDate.format(dates[i]))\n#EXTINF:\(made.segments[i].duration),\n\(made.segments[i].uri)\n"
            }
            return text + (ended ? "#EXT-X-ENDLIST\n" : "")
        }
        let path = folder.path + "/live.m3u8"
        try playlist(segments: 3, ended: false).write(toFile: path, atomically: true, encoding: .utf8)
        let second = try Self.firstVideoPTS(folder.path + "/" + made.segments[1].uri)
        let third = try Self.firstVideoPTS(folder.path + "/" + made.segments[2].uri)

        var options = InputOptions()
        options.liveStart = .oldest
        let demuxer = try Demuxer(url: path, options: options)
        #expect(demuxer.isLive)
        let packet = Packet()
        var cues: [SourceCue] = []
        var updated = false
        while try demuxer.read(into: packet) == .packet {
            cues += demuxer.takeCues()
            // The origin adds the end once the reader is into the second segment (it has reloaded the first version by then or will).
            if !updated, packet.streamIndex == demuxer.video.index, (packet.presentationTimestamp ?? .min) >= second {
                updated = true
                try playlist(segments: made.segments.count, ended: true).write(toFile: path, atomically: true, encoding: .utf8)
            }
        }
        cues += demuxer.takeCues()
        let outs = cues.filter { $0.id == "ad-1" && $0.kind == .out }, ins = cues.filter { $0.id == "ad-1" && $0.kind == .in }
        try #require(outs.count == 1 && ins.count == 1, "\(cues)")
        #expect(outs[0].timing == .at(pts: third + 45_000) && outs[0].section?.hex.lowercased() == out.lowercased())
        #expect(ins[0].timing == .at(pts: third + 45_000 + 270_000) && ins[0].section?.hex.lowercased() == into.lowercased())
        #expect(ins[0].duration == 3)
        #expect(cues.count == 2)
    }

    // MARK: Helpers

    /// The source with a break from 5.4 s to 8.4 s (threefive's sections, sent early).
    static func injected(_ folder: ScratchFolder) throws -> String {
        let source = try Self.source(folder, seconds: 12)
        let out = try SpliceOracle.insert(event: 42, out: true, pts: 3.4, adjustment: 2.0, duration: 3.0)
        let into = try SpliceOracle.insert(event: 42, out: false, pts: 6.4, adjustment: 2.0)
        let injected = folder.path + "/cued.ts"
        try SpliceOracle.inject(source, injected, [(2.9, out), (5.9, into)])
        return injected
    }

    /// x9k3 leaves its playlist open (a live window): the run has ended, so say so.
    static func completed(_ folder: String) throws -> String {
        let path = folder + "/index.m3u8"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let complete = folder + "/complete.m3u8"
        try (text + (text.hasSuffix("\n") ? "" : "\n") + "#EXT-X-ENDLIST\n").write(toFile: complete, atomically: true, encoding: .utf8)
        return complete
    }

    static func firstVideoPTS(_ segment: String) throws -> Int64 {
        let text = try Tools.probe(["-select_streams", "v:0", "-show_entries", "packet=pts", "-read_intervals", "%+#1", segment])
        return try #require(Int64(text.split(separator: "\n").first.map(String.init) ?? ""))
    }
}

/// scripts/splice-oracle.py (threefive, x9k3) and scripts/scte35-oracle.py's reading.
enum SpliceOracle {
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts").path
    static let available: Bool = (try? Tools.run("python3", ["-c", "import threefive, x9k3"]).status) == 0

    static func run(_ arguments: [String]) throws -> String {
        let r = try Tools.run("python3", [scripts + "/splice-oracle.py"] + arguments)
        guard r.status == 0 else { throw MediaError.invalidSettings("splice-oracle.py \(arguments.first ?? ""): \(r.stderr)") }
        return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func insert(event: Int, out: Bool, pts: Double, adjustment: Double, duration: Double? = nil) throws -> String {
        try run(["insert", String(event), out ? "1" : "0", String(pts), String(adjustment)] + (duration.map { [String($0)] } ?? []))
    }

    static func inject(_ source: String, _ target: String, _ sections: [(at: Double, hex: String)]) throws {
        _ = try run(["inject", source, target] + sections.map { "\($0.at):\($0.hex)" })
    }

    static func segment(_ source: String, _ folder: String, tag: String, sections: [(at: Double, hex: String)] = []) throws {
        _ = try run(["segment", source, folder, tag] + sections.map { "\($0.at):\($0.hex)" })
    }

    struct Reading: Decodable {
        let pts_adjustment: Int64
        let pts_time: Int64?
        let command_type: Int
        let event_id: Int?
        let out: Bool?
        let break_duration: Int64?
        let crc_ok: Bool
    }

    static func decode(_ hex: [String]) throws -> [Reading] {
        let r = try Tools.run("python3", [scripts + "/scte35-oracle.py", "decode"] + hex)
        guard r.status == 0 else { throw MediaError.invalidSettings("scte35-oracle.py decode: \(r.stderr)") }
        return try JSONDecoder().decode([Reading].self, from: Data(r.stdout.utf8))
    }
}

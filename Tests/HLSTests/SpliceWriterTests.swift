import Broadcast
import Foundation
import HLS
import MediaIO
import Testing

/// `HLSWriter` with a `SpliceBoard`: real x264 packets (keyframes forced on the schedule's ticks and
/// on the splices', as the pipeline forces them), a break scheduled in the middle of segments. Checked
/// with ffprobe (the cut segment starts with a keyframe, the playlist plays), threefive (the
/// SCTE35-OUT/-IN written decode to the source's commands), m3u8 (the ranges read the same) and
/// our linter.
@Suite(.serialized, .enabled(if: SpliceOracle.available && M3U8Oracle.available,
                             "needs python3 with threefive, x9k3 and m3u8: LIVEFILTER_PLAYERS=1 scripts/install-deps.sh"))
struct SpliceWriterTests {
    static let startDate = Date(timeIntervalSince1970: 1_714_564_800)
    /// At 30 fps with 2 s segments (60 ticks): the OUT in segment 1, the IN in segment 3.
    static let outTick: Int64 = 95, inTick: Int64 = 215

    /// The board of a break, its sections made by threefive.
    static func board() throws -> (SpliceBoard, out: String, in: String) {
        let out = try SpliceOracle.insert(event: 42, out: true, pts: 3.4, adjustment: 2.0, duration: 4.0)
        let into = try SpliceOracle.insert(event: 42, out: false, pts: 7.4, adjustment: 2.0)
        let board = SpliceBoard()
        let outSection = try SpliceInfoSection(hex: out), inSection = try SpliceInfoSection(hex: into)
        board.schedule(OutputSplice(tick: outTick, id: "SCTE35-42", kind: .out, section: outSection, plannedDuration: 4))
        board.schedule(OutputSplice(tick: inTick, id: "SCTE35-42", kind: .in, section: inSection))
        // A program boundary of another class passes through, dated where its tick falls; it cuts nothing.
        let program = DateRange(id: "show-7", rangeClass: "com.example.program", startDate: .distantPast, duration: 1.5,
                                clientAttributes: HLSAttributeList.parse("X-TITLE=\"News\"") ?? [])
        board.schedule(OutputSplice(tick: 130, id: "show-7", kind: .command, dateRange: program, duration: 1.5))
        return (board, out, into)
    }

    /// `seconds` of SyntheticStream through a writer with the break's board, keyframes forced at its ticks.
    static func write(_ folder: ScratchFolder, _ options: HLSOutputOptions, seconds: Double, audio: Bool = true,
                      commit: Bool = true) throws -> (writer: HLSWriter, playlist: String, out: String, in: String) {
        let playlistPath = folder.path + "/video.m3u8"
        let writer = try HLSWriter(playlistPath: playlistPath, options: options, overwrite: false, clock: { Self.startDate })
        let (board, out, into) = try Self.board()
        writer.spliceBoard = board
        try SyntheticStream.write(into: writer, seconds: seconds, audio: audio, lowDelay: options.partDuration != nil, commit: commit,
                                  keyframes: [Int(Self.outTick), Int(Self.inTick)])
        return (writer, playlistPath, out, into)
    }

    @Test(arguments: [HLSSegmentType.ts, .fmp4])
    func aBreakCutsSegmentsAtItsTicksAndIsMarked(_ type: HLSSegmentType) throws {
        let folder = try ScratchFolder("splice-\(type)")
        defer { folder.remove() }
        let (writer, playlistPath, out, into) = try Self.write(folder, HLSOutputOptions(segmentDuration: 2, playlistType: .vod, segmentType: type,
                                                                                        adMarkers: .both), seconds: 10)
        #expect(writer.warnings.isEmpty, "\(writer.warnings)")

        // The schedule bends: each splice splits one segment in two, the others stay on the grid.
        #expect(writer.segments.map(\.startTick) == [0, 60, 95, 120, 180, 215, 240])
        #expect(writer.segments.map(\.sequence) == Array(0..<7))
        let text = try String(contentsOfFile: playlistPath, encoding: .utf8)
        let playlist = try parseMedia(text)
        #expect(playlist.targetDuration == 2 && playlist.segments.allSatisfy { $0.duration.rounded() <= 2 })
        #expect(HLSLinter(profile: .livefilter).lint(text).violations.isEmpty, "\(HLSLinter(profile: .livefilter).lint(text).violations)\n\(text)")

        // Each cut segment starts with a keyframe (ffprobe), at the splice's time.
        for index in [2, 5] {
            let segment = folder.path + "/" + playlist.segments[index].uri
            let first = try Tools.probe(["-select_streams", "v:0", "-show_entries", "packet=flags", "-read_intervals", "%+#1",
                                         type == .fmp4 ? "concat:\(folder.path)/video_init.mp4|\(segment)" : segment])
            #expect(first.hasPrefix("K"), "segment \(index) starts with \(first)")
        }
        // The whole playlist plays: every picture once.
        let frames = try Tools.probe(["-count_packets", "-select_streams", "v:0", "-show_entries", "stream=nb_read_packets", playlistPath])
        #expect(frames.split(separator: "\n").first == "300", "ffprobe: \(frames)")

        // EXT-X-DATERANGE: START-DATE is the cut segment's EXT-X-PROGRAM-DATE-TIME (present in VOD
        // because ranges are), END-DATE the return's, one tag per break.
        let dates = playlist.segments.map(\.programDateTime)
        #expect(dates.allSatisfy { $0 != nil })
        let ad = try #require(playlist.dateRanges.first { $0.id == "SCTE35-42" })
        #expect(ad.startDate == dates[2] && ad.endDate == dates[5] && ad.position == 2)
        #expect(ad.plannedDuration == 4 && ad.duration == 4)
        #expect(ad.scte35Out?.lowercased() == out.lowercased() && ad.scte35In?.lowercased() == into.lowercased())
        let theirs = try SpliceOracle.decode([try #require(ad.scte35Out), try #require(ad.scte35In)])
        let source = try SpliceOracle.decode([out, into])
        for (written, original) in zip(theirs, source) {
            #expect(written.crc_ok && written.command_type == 5 && written.event_id == 42)
            #expect(written.out == original.out && written.pts_time == original.pts_time && written.pts_adjustment == original.pts_adjustment)
        }
        let show = try #require(playlist.dateRanges.first { $0.id == "show-7" })
        #expect(show.rangeClass == "com.example.program" && show.position == 3 && show.duration == 1.5)
        let showOffset = show.startDate.timeIntervalSince(try #require(dates[3]))
        #expect(abs(showOffset - 10.0 / 30) < 0.0015, "tick 130 is 10 frames into the segment at 120")
        #expect(show.clientAttributes.map(\.name) == ["X-TITLE"])

        // CUE tags: OUT before the break's first segment, CONT on the others, IN before the first after.
        #expect(playlist.segments[2].cueMarkers == [.out(duration: 4)])
        // ElapsedTime: 25 and 85 frames into the break, in milliseconds.
        #expect(playlist.segments[3].cueMarkers == [.continuing(elapsed: 0.833, duration: 4)])
        #expect(playlist.segments[4].cueMarkers == [.continuing(elapsed: 2.833, duration: 4)])
        #expect(playlist.segments[5].cueMarkers == [.in])
        #expect(playlist.segments[0].cueMarkers.isEmpty && playlist.segments[6].cueMarkers.isEmpty)

        // m3u8 reads the same ranges, each on the segment it stands before.
        let r = try Tools.run("python3", [M3U8Oracle.script, playlistPath])
        try #require(r.status == 0, "m3u8-oracle.py: \(r.stderr)")
        let m3u8 = try #require(try JSONDecoder().decode([String: DateRangeTests.Theirs].self, from: Data(r.stdout.utf8))[playlistPath])
        #expect(m3u8.segments[2].dateranges.map(\.id) == ["SCTE35-42"] && m3u8.segments[3].dateranges.map(\.id) == ["show-7"])
        #expect(m3u8.segments[2].dateranges.first.flatMap { HLSDate.parse($0.start_date) } == dates[2])
        #expect(m3u8.segments[2].dateranges.first?.scte35_out?.lowercased() == out.lowercased())
        #expect(m3u8.segments[2].cue_out_start && m3u8.segments[5].cue_in)
    }

    @Test(arguments: [AdMarkerStyle.daterange, .cue, .none])
    func theStyleChoosesTheTags(_ style: AdMarkerStyle) throws {
        let folder = try ScratchFolder("splice-style-\(style)")
        defer { folder.remove() }
        let (writer, playlistPath, _, _) = try Self.write(folder, HLSOutputOptions(segmentDuration: 2, playlistType: .vod, adMarkers: style),
                                                          seconds: 10, audio: false)
        let text = try String(contentsOfFile: playlistPath, encoding: .utf8)
        #expect(text.contains("#EXT-X-DATERANGE") == (style == .daterange))
        #expect(text.contains("#EXT-X-CUE-OUT:4") == (style == .cue))
        #expect(text.contains("#EXT-X-CUE-IN") == (style == .cue))
        // The cuts do not depend on the tags.
        #expect(writer.segments.map(\.startTick) == [0, 60, 95, 120, 180, 215, 240])
        // A VOD playlist without ranges keeps no dates.
        #expect(text.contains("#EXT-X-PROGRAM-DATE-TIME") == (style == .daterange))
        #expect(HLSLinter(profile: .livefilter).lint(text).violations.isEmpty, "\(text)")
    }

    /// An audio rendition's writer (AAC copied, no video) cuts at its first packet at or after each
    /// splice's time, on the same board as the video's.
    @Test func anAudioRenditionCutsAtItsFirstPacketFromTheSplice() throws {
        let folder = try ScratchFolder("splice-audio")
        defer { folder.remove() }
        let writer = try HLSWriter(playlistPath: folder.path + "/audio.m3u8", options: HLSOutputOptions(segmentDuration: 2, playlistType: .vod),
                                   overwrite: false, clock: { Self.startDate })
        writer.spliceBoard = try Self.board().0
        let demuxer = try Demuxer(url: try SyntheticStream.audioSource(seconds: 10))
        let info = try #require(demuxer.audio)
        let index = try writer.addStream(copying: info.index, of: demuxer)
        try writer.begin()
        let packet = Packet()
        var times: [Double] = []
        while try demuxer.read(into: packet) == .packet {
            guard packet.streamIndex == info.index, let pts = packet.presentationTimestamp else { continue }
            let t = Double(pts - demuxer.start(inTimeBase: info.timeBase)) * info.timeBase.doubleValue
            guard t < 10 else { break }
            times.append(Double(pts) * info.timeBase.doubleValue)
            try writer.write(packet, toStream: index, timeBase: info.timeBase)
        }
        try writer.commit()
        for tick in [Self.outTick, Self.inTick] {
            let due = Double(tick) / 30
            let first = try #require(times.first { $0 >= due - 1e-9 })
            #expect(writer.segments.contains { abs($0.startTime - first) < 1e-6 }, "a segment starts at \(first) s, the first packet from \(due) s")
        }
        // The others stay on the schedule's 2 s grid, within an AAC frame (the grid's ticks round audio to nearest).
        let starts = writer.segments.map(\.startTime)
        let onGrid = starts.filter { abs($0 - ($0 / 2).rounded() * 2) <= 1024.0 / 48_000 + 1e-6 }
        #expect(starts.count == onGrid.count + 2 && onGrid.count == 6, "\(starts)")
        let text = try String(contentsOfFile: folder.path + "/audio.m3u8", encoding: .utf8)
        #expect(HLSLinter(profile: .livefilter).lint(text).violations.isEmpty, "\(text)")
        #expect(try parseMedia(text).dateRanges.first { $0.id == "SCTE35-42" }?.duration != nil)
    }

    /// A live window drops a range with its segment once its break is over and has left the window.
    @Test func aRangeLeavesTheLiveWindowWithItsSegments() throws {
        let folder = try ScratchFolder("splice-live")
        defer { folder.remove() }
        let (writer, playlistPath, _, _) = try Self.write(folder, HLSOutputOptions(segmentDuration: 2, playlistType: .live, listSize: 3),
                                                          seconds: 16, audio: false, commit: false)
        let playlist = try parseMedia(String(contentsOfFile: playlistPath, encoding: .utf8))
        #expect(playlist.mediaSequence > 5 && writer.segments.count > 8)
        #expect(playlist.dateRanges.isEmpty)
        writer.discard()
    }

    /// LL-HLS: the part before the splice ends at it, the segment after starts with an independent
    /// part; a delta update with `_HLS_skip=v2` leaves out the ranges of skipped segments that have ended.
    @Test func aLowLatencyBreakEndsAPartAtTheSpliceAndDeltasSkipItsRange() throws {
        let folder = try ScratchFolder("splice-ll")
        defer { folder.remove() }
        let (writer, playlistPath, _, _) = try Self.write(folder, HLSOutputOptions(segmentDuration: 2, playlistType: .event, segmentType: .fmp4,
                                                                                   partDuration: 0.5), seconds: 22, commit: false)
        #expect(writer.warnings.isEmpty, "\(writer.warnings)")
        let before = writer.segments[1], cut = writer.segments[2]
        #expect(before.parts.map(\.firstTick) == [60, 75, 90] && before.parts.last?.lastTick == 94)
        #expect(cut.startTick == 95 && cut.parts.first?.independent == true && cut.parts.first?.firstTick == 95)

        let text = try String(contentsOfFile: playlistPath, encoding: .utf8)
        #expect(text.contains("CAN-SKIP-DATERANGES=YES"))
        #expect(HLSLinter(profile: .livefilter).lint(text).violations.isEmpty, "\(text)")
        let full = try parseMedia(text)
        #expect(full.dateRanges.map(\.id).sorted() == ["SCTE35-42", "show-7"])
        let delta = full.deltaUpdate(skipping: .segmentsAndDateRanges)
        let skipped = try #require(delta.skip?.skippedSegments)
        #expect(skipped > 5, "the break's segments are older than the Skip Boundary")
        #expect(delta.dateRanges.isEmpty && delta.skip?.recentlyRemovedDateRanges == [])
        let kept = full.deltaUpdate(skipping: .segments)
        #expect(kept.dateRanges.count == 2 && kept.dateRanges.allSatisfy { $0.position == 0 })
        // A client holding the full playlist gets it back from the delta, ranges included.
        let merged = try full.applying(delta: parseMedia(delta.render()))
        #expect(merged.dateRanges.map(\.id).sorted() == ["SCTE35-42", "show-7"])
        #expect(merged.segments.map(\.uri) == full.segments.map(\.uri))
        writer.discard()
    }
}

import Foundation
import HLS
import Testing

/// `EXT-X-DATERANGE` and the older `EXT-X-CUE-*` markers (issue 46, point 2): read as the m3u8
/// package (PyPI, an independent parser) reads them, written back where they stood, merged in delta
/// updates, and checked by the linter.
@Suite("Date ranges and cue markers")
struct DateRangeTests {
    static let sectionOut = "0xFC3025000000015F9000FFF01405000003E97FEFFE001D8698FE002932E0000100000000A9D18A73"
    static let playlist = """
        #EXTM3U
        #EXT-X-VERSION:6
        #EXT-X-TARGETDURATION:2
        #EXT-X-MEDIA-SEQUENCE:10
        #EXT-X-PROGRAM-DATE-TIME:2026-12-07T10:00:00.000Z
        #EXTINF:2,
        s10.ts
        #EXT-X-DATERANGE:ID="ad-1",CLASS="com.example.ad",START-DATE="2026-12-07T10:00:02.000Z",PLANNED-DURATION=4,X-AD-ID="abc",X-COUNT=3,SCTE35-OUT=\(sectionOut)
        #EXT-X-CUE-OUT:4
        #EXTINF:2,
        s11.ts
        #EXT-X-CUE-OUT-CONT:ElapsedTime=2,Duration=4
        #EXTINF:2,
        s12.ts
        #EXT-X-DATERANGE:ID="ad-1",START-DATE="2026-12-07T10:00:02.000Z",END-DATE="2026-12-07T10:00:06.000Z",DURATION=4,SCTE35-IN=0xFC30
        #EXT-X-CUE-IN
        #EXTINF:2,
        s13.ts
        #EXT-X-DATERANGE:ID="next",CLASS="com.apple.hls.interstitial",START-DATE="2026-12-07T10:00:08.000Z",CUE="ONCE",X-ASSET-URI="https://ads.example.com/a.m3u8",END-ON-NEXT=YES

        """

    struct Theirs: Decodable {
        struct Range: Decodable {
            let id: String, `class`: String?, start_date: String, end_date: String?, duration: Double?, planned_duration: Double?
            let scte35_cmd: String?, scte35_out: String?, scte35_in: String?, end_on_next: Bool, client: [String: String]
        }
        struct Segment: Decodable { let uri: String?, dateranges: [Range], cue_out_start: Bool, cue_out: Bool, cue_in: Bool }
        let segments: [Segment]
    }

    static func media(_ text: String) throws -> MediaPlaylist {
        guard case let .media(playlist) = try PlaylistParser.parse(text) else { throw FFmpegPlaylistTests.ToolError.failed("not a media playlist") }
        return playlist
    }

    @Test("read as the m3u8 package reads them, before and after our writer: IDs, dates, durations, SCTE-35, client attributes, cue markers")
    func sameAsM3U8() throws {
        let ours = try Self.media(Self.playlist)
        #expect(ours.dateRanges.map(\.id) == ["ad-1", "ad-1", "next"])
        #expect(ours.dateRanges.map(\.position) == [1, 3, 4])
        #expect(ours.segments.map(\.cueMarkers) == [[], [.out(duration: 4)], [.continuing(elapsed: 2, duration: 4)], [.in]])
        let rendered = ours.render(durations: .exact)
        #expect(try Self.media(rendered) == ours, "written and read again: \(rendered)")

        let folder = try ScratchFolder("daterange")
        defer { folder.remove() }
        let original = folder.path + "/original.m3u8", ourCopy = folder.path + "/ours.m3u8"
        try Self.playlist.write(toFile: original, atomically: true, encoding: .utf8)
        try rendered.write(toFile: ourCopy, atomically: true, encoding: .utf8)
        let r = try Tools.run("python3", [M3U8Oracle.script, original, ourCopy])
        try #require(r.status == 0, "m3u8-oracle.py: \(r.stderr)")
        let oracle = try JSONDecoder().decode([String: Theirs].self, from: Data(r.stdout.utf8))
        for path in [original, ourCopy] {
            let theirs = try #require(oracle[path])
            // m3u8 gives a range to the segment after it; one after the last segment it drops.
            let theirRanges = theirs.segments.flatMap(\.dateranges)
            let placed = ours.dateRanges.filter { $0.position < ours.segments.count }
            #expect(theirRanges.count == placed.count, "\(path)")
            for (mine, their) in zip(placed, theirRanges) {
                #expect(mine.id == their.id && mine.rangeClass == their.class, "\(path)")
                #expect(mine.startDate == HLSDate.parse(their.start_date), "\(path)")
                #expect(mine.endDate == their.end_date.flatMap(HLSDate.parse), "\(path)")
                #expect(mine.duration == their.duration && mine.plannedDuration == their.planned_duration, "\(path)")
                #expect(mine.scte35Out == their.scte35_out && mine.scte35In == their.scte35_in && mine.scte35Command == their.scte35_cmd)
                #expect(mine.endOnNext == their.end_on_next)
                let client = Dictionary(uniqueKeysWithValues: mine.clientAttributes.map {
                    ($0.name.lowercased().replacingOccurrences(of: "-", with: "_"), $0.isQuoted ? "\"\($0.value)\"" : $0.value)
                })
                #expect(client == their.client, "\(path)")
                #expect(placed.firstIndex(of: mine).map { theirs.segments[ours.dateRanges[$0].position].dateranges.contains { $0.id == mine.id } } == true)
            }
            #expect(theirs.segments.map(\.cue_out_start) == ours.segments.map { $0.cueMarkers.contains { if case .out = $0 { true } else { false } } },
                    "\(path)")
            #expect(theirs.segments.map(\.cue_in) == ours.segments.map { $0.cueMarkers.contains(.in) }, "\(path)")
        }
    }

    @Test("a date range that does not read is left out, the playlist kept; the linter says why")
    func malformed() throws {
        let bad = [
            ("ID=\"x\"", "daterange-attributes"),                                                    // no START-DATE
            ("START-DATE=\"2026-12-07T10:00:00Z\"", "daterange-attributes"),                         // no ID
            ("ID=x,START-DATE=\"2026-12-07T10:00:00Z\"", "daterange-attributes"),                    // unquoted ID
            ("ID=\"x\",START-DATE=\"yesterday\"", "daterange-attributes"),
            ("ID=\"x\",START-DATE=\"2026-12-07T10:00:00Z\",DURATION=-1", "daterange-attributes"),
            ("ID=\"x\",START-DATE=\"2026-12-07T10:00:00Z\",SCTE35-OUT=\"0xFC\"", "daterange-attributes"),
            ("ID=\"x\",START-DATE=\"2026-12-07T10:00:00Z\",SCTE35-OUT=0xZZ", "daterange-attributes"),
        ]
        let linter = HLSLinter(profile: .rfc8216)
        for (attributes, rule) in bad {
            let text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-PROGRAM-DATE-TIME:2026-12-07T10:00:00Z\n#EXT-X-DATERANGE:\(attributes)\n#EXTINF:2,\na.ts\n"
            let playlist = try Self.media(text)
            #expect(playlist.dateRanges.isEmpty && playlist.segments.count == 1, "\(attributes)")
            #expect(linter.lint(text).violations.contains { $0.rule == rule }, "\(attributes): \(linter.lint(text).violations)")
        }
        #expect(linter.lint(Self.playlist).violations.filter { $0.severity == .error }.isEmpty, "\(linter.lint(Self.playlist).violations)")
    }

    @Test("the linter: END-DATE = START-DATE + DURATION, END-ON-NEXT's rules, one ID one set of values, a date on the playlist")
    func linted() throws {
        let linter = HLSLinter(profile: .rfc8216)
        func rules(_ ranges: [String], dated: Bool = true) -> Set<String> {
            let text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n" + (dated ? "#EXT-X-PROGRAM-DATE-TIME:2026-12-07T10:00:00Z\n" : "")
                + ranges.map { "#EXT-X-DATERANGE:\($0)\n" }.joined() + "#EXTINF:2,\na.ts\n"
            return Set(linter.lint(text).violations.map(\.rule).filter { $0.hasPrefix("daterange") })
        }
        let start = "START-DATE=\"2026-12-07T10:00:00Z\""
        #expect(rules(["ID=\"a\",\(start),DURATION=4,END-DATE=\"2026-12-07T10:00:04Z\""]).isEmpty)
        #expect(rules(["ID=\"a\",\(start),DURATION=4,END-DATE=\"2026-12-07T10:00:05Z\""]) == ["daterange-end"])
        #expect(rules(["ID=\"a\",\(start),END-DATE=\"2026-12-07T09:00:00Z\""]) == ["daterange-end"])
        #expect(rules(["ID=\"a\",\(start),END-ON-NEXT=YES"]) == ["daterange-end-on-next"])
        #expect(rules(["ID=\"a\",CLASS=\"c\",\(start),DURATION=1,END-ON-NEXT=YES"]) == ["daterange-end-on-next"])
        #expect(rules(["ID=\"a\",CLASS=\"c\",\(start),END-ON-NEXT=YES"]).isEmpty)
        #expect(rules(["ID=\"a\",\(start),PLANNED-DURATION=4", "ID=\"a\",\(start),PLANNED-DURATION=5"]) == ["daterange-same-id"])
        #expect(rules(["ID=\"a\",\(start),PLANNED-DURATION=4", "ID=\"a\",\(start),DURATION=4"]).isEmpty)
        #expect(rules(["ID=\"a\",\(start)"], dated: false) == ["daterange-program-date-time"])
        #expect(rules(["ID=\"a\",\(start),SCTE35-IN=0xFC30"]) == ["daterange-scte35"])
    }

    @Test("a delta update (_HLS_skip=v2) keeps the skipped date ranges but those removed, and places the delta's after the skipped segments")
    func delta() throws {
        let previous = try Self.media(Self.playlist)
        let delta = try Self.media("""
            #EXTM3U
            #EXT-X-VERSION:9
            #EXT-X-TARGETDURATION:2
            #EXT-X-SERVER-CONTROL:CAN-SKIP-UNTIL=12,CAN-SKIP-DATERANGES=YES
            #EXT-X-MEDIA-SEQUENCE:11
            #EXT-X-SKIP:SKIPPED-SEGMENTS=2,RECENTLY-REMOVED-DATERANGES="next"
            #EXT-X-PROGRAM-DATE-TIME:2026-12-07T10:00:06.000Z
            #EXTINF:2,
            s13.ts
            #EXT-X-DATERANGE:ID="late",START-DATE="2026-12-07T10:00:08.000Z",DURATION=2
            #EXTINF:2,
            s14.ts

            """)
        let merged = try previous.applying(delta: delta)
        #expect(merged.segments.map(\.uri) == ["s11.ts", "s12.ts", "s13.ts", "s14.ts"])
        #expect(merged.dateRanges.map(\.id) == ["ad-1", "ad-1", "late"])
        #expect(merged.dateRanges.map(\.position) == [0, 2, 3])
    }
}

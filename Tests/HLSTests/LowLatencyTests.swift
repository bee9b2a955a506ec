import Foundation
import HLS
import Testing

/// Low-Latency HLS playlists: the examples of draft-pantos-hls-rfc8216bis (§9, typed in from the
/// spec text), Apple's public LL-HLS demo stream as a write-up quotes it, and a byte-range-addressed
/// variant of the spec's example.
enum LowLatencyExamples {
    /// The spec's Low-Latency playlist, the response to `_HLS_msn=273&_HLS_part=2`.
    static let spec = """
        #EXTM3U
        # This Playlist is a response to: GET https://example.com/2M/waitForMSN.php?_HLS_msn=273&_HLS_part=2
        #EXT-X-TARGETDURATION:4
        #EXT-X-VERSION:6
        #EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=1.0,CAN-SKIP-UNTIL=12.0
        #EXT-X-PART-INF:PART-TARGET=0.33334
        #EXT-X-MEDIA-SEQUENCE:266
        #EXT-X-PROGRAM-DATE-TIME:2019-02-14T02:13:36.106Z
        #EXT-X-MAP:URI="init.mp4"
        #EXTINF:4.00008,
        fileSequence266.mp4
        #EXTINF:4.00008,
        fileSequence267.mp4
        #EXTINF:4.00008,
        fileSequence268.mp4
        #EXTINF:4.00008,
        fileSequence269.mp4
        #EXTINF:4.00008,
        fileSequence270.mp4
        #EXT-X-PART:DURATION=0.33334,URI="filePart271.0.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart271.1.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart271.2.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart271.3.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart271.4.mp4",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.33334,URI="filePart271.5.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart271.6.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart271.7.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart271.8.mp4",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.33334,URI="filePart271.9.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart271.10.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart271.11.mp4"
        #EXTINF:4.00008,
        fileSequence271.mp4
        #EXT-X-PROGRAM-DATE-TIME:2019-02-14T02:14:00.106Z
        #EXT-X-PART:DURATION=0.33334,URI="filePart272.a.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart272.b.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart272.c.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart272.d.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart272.e.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart272.f.mp4",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.33334,URI="filePart272.g.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart272.h.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart272.i.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart272.j.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart272.k.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart272.l.mp4"
        #EXTINF:4.00008,
        fileSequence272.mp4
        #EXT-X-PART:DURATION=0.33334,URI="filePart273.0.mp4",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.33334,URI="filePart273.1.mp4"
        #EXT-X-PART:DURATION=0.33334,URI="filePart273.2.mp4"
        #EXT-X-PRELOAD-HINT:TYPE=PART,URI="filePart273.3.mp4"

        #EXT-X-RENDITION-REPORT:URI="../1M/waitForMSN.php",LAST-MSN=273,LAST-PART=2
        #EXT-X-RENDITION-REPORT:URI="../4M/waitForMSN.php",LAST-MSN=273,LAST-PART=1

        """

    /// The spec's Playlist Delta Update that follows it, the response to
    /// `_HLS_msn=273&_HLS_part=3&_HLS_skip=YES`: the same playlist one part later, with EXT-X-VERSION 9
    /// and its first three segments, with their tags (the date, the map), replaced by EXT-X-SKIP.
    /// Written as those edits.
    static let specDelta = edit(spec, [
        ("# This Playlist is a response to: GET https://example.com/2M/waitForMSN.php?_HLS_msn=273&_HLS_part=2",
         "# Following the example above, this Playlist is a response to: GET https://example.com/2M/waitForMSN.php?_HLS_msn=273&_HLS_part=3&_HLS_skip=YES"),
        ("#EXT-X-VERSION:6", "#EXT-X-VERSION:9"),
        ("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"filePart273.3.mp4\"",
         "#EXT-X-PART:DURATION=0.33334,URI=\"filePart273.3.mp4\"\n#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"filePart273.4.mp4\""),
        ("LAST-MSN=273,LAST-PART=2", "LAST-MSN=273,LAST-PART=3"),
        ("LAST-MSN=273,LAST-PART=1", "LAST-MSN=273,LAST-PART=3"),
    ], skipping: "#EXT-X-PROGRAM-DATE-TIME:2019-02-14T02:13:36.106Z\n"..."fileSequence268.mp4\n", with: "#EXT-X-SKIP:SKIPPED-SEGMENTS=3\n")

    /// `text` with each (old, new) replaced, and the lines from the first of `skipping`'s bounds
    /// through the second replaced by `skip`.
    private static func edit(_ text: String, _ edits: [(String, String)], skipping: ClosedRange<String>, with skip: String) -> String {
        let edited = edit(text, edits)
        guard let start = edited.range(of: skipping.lowerBound), let end = edited.range(of: skipping.upperBound) else {
            preconditionFailure("the example does not contain the skipped lines")
        }
        return edited.replacingCharacters(in: start.lowerBound..<end.upperBound, with: skip)
    }

    private static func edit(_ text: String, _ edits: [(String, String)]) -> String {
        edits.reduce(text) { text, edit in
            precondition(text.contains(edit.0), "the example does not contain \(edit.0)")
            return text.replacingOccurrences(of: edit.0, with: edit.1)
        }
    }

    /// Apple's LL-HLS demo stream (a CMAF rendition), as a public write-up on LL-HLS players quotes it:
    /// 1.00267 s parts under a 1.004 s PART-TARGET, the last of each segment shorter.
    static let appleDemo = """
        #EXTM3U
        #EXT-X-TARGETDURATION:4
        #EXT-X-VERSION:6
        #EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=24,PART-HOLD-BACK=3.012
        #EXT-X-PART-INF:PART-TARGET=1.004000
        #EXT-X-MEDIA-SEQUENCE:1078262
        #EXT-X-MAP:URI="fileSequence18.mp4"
        #EXTINF:3.98933,
        fileSequence1078262.mp4
        #EXTINF:3.98933,
        fileSequence1078263.mp4
        #EXT-X-PROGRAM-DATE-TIME:2020-10-15T09:26:00.708Z
        #EXTINF:3.98933,
        fileSequence1078264.mp4
        #EXTINF:3.98933,
        fileSequence1078265.mp4
        #EXT-X-PART:DURATION=1.00267,URI="lowLatencySeg.mp4?segment=filePart1078266.1.mp4"
        #EXT-X-PART:DURATION=1.00267,URI="lowLatencySeg.mp4?segment=filePart1078266.2.mp4"
        #EXT-X-PART:DURATION=1.00267,URI="lowLatencySeg.mp4?segment=filePart1078266.3.mp4"
        #EXT-X-PART:DURATION=0.98133,URI="lowLatencySeg.mp4?segment=filePart1078266.4.mp4"
        #EXTINF:3.98933,
        fileSequence1078266.mp4
        #EXT-X-PART:DURATION=1.00267,URI="lowLatencySeg.mp4?segment=filePart1078267.1.mp4"
        #EXT-X-PART:DURATION=1.00267,URI="lowLatencySeg.mp4?segment=filePart1078267.2.mp4"
        #EXT-X-PART:DURATION=1.00267,URI="lowLatencySeg.mp4?segment=filePart1078267.3.mp4"
        #EXT-X-PART:DURATION=0.98133,URI="lowLatencySeg.mp4?segment=filePart1078267.4.mp4"
        #EXTINF:3.98933,
        fileSequence1078267.mp4
        #EXT-X-PART:DURATION=1.00267,URI="lowLatencySeg.mp4?segment=filePart1078268.1.mp4"
        #EXT-X-PRELOAD-HINT:TYPE=PART,URI="lowLatencySeg.mp4?segment=filePart1078268.2.mp4"
        #EXT-X-RENDITION-REPORT:URI="/cmaf/media0/lowLatencyHLS.m3u8",LAST-MSN=1078268,LAST-PART=0
        #EXT-X-RENDITION-REPORT:URI="/cmaf/media1/lowLatencyHLS.m3u8",LAST-MSN=1078268,LAST-PART=0

        """

    /// The spec's playlist with byte-range-addressed parts: each part a range of its parent's file,
    /// the offsets after the first left to follow, and the hint starting where the last part ends.
    static let byteRangeParts = """
        #EXTM3U
        #EXT-X-TARGETDURATION:4
        #EXT-X-VERSION:6
        #EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=1.1,CAN-SKIP-UNTIL=24
        #EXT-X-PART-INF:PART-TARGET=0.33334
        #EXT-X-MEDIA-SEQUENCE:271
        #EXT-X-MAP:URI="init.mp4"
        #EXTINF:4.00008,
        fileSequence271.mp4
        #EXT-X-PART:DURATION=0.33334,URI="fileSequence272.mp4",BYTERANGE="21000@0",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.33334,URI="fileSequence272.mp4",BYTERANGE="18000"
        #EXT-X-PART:DURATION=0.33334,URI="fileSequence272.mp4",BYTERANGE="19500"
        #EXT-X-PRELOAD-HINT:TYPE=PART,URI="fileSequence272.mp4",BYTERANGE-START=58500

        """

    static let all = [spec, specDelta, appleDemo, byteRangeParts]
}

struct LowLatencyTests {
    @Test func parsesTheSpecExample() throws {
        let p = try parseMedia(LowLatencyExamples.spec)
        #expect(p.version == 6 && p.targetDuration == 4 && p.mediaSequence == 266)
        #expect(p.serverControl == ServerControl(canSkipUntil: 12, partHoldBack: 1.0, canBlockReload: true))
        #expect(p.partTarget == 0.33334)
        #expect(p.map?.uri == "init.mp4")
        #expect(p.segments.map(\.uri) == (266...272).map { "fileSequence\($0).mp4" })
        #expect(p.segments.map(\.parts.count) == [0, 0, 0, 0, 0, 12, 12])
        #expect(p.segments[5].parts.indices.filter { p.segments[5].parts[$0].independent } == [4, 8])
        #expect(p.segments[6].parts.first?.uri == "filePart272.a.mp4")
        #expect(p.segments[6].parts.first?.line == 35, "a part remembers its line")
        #expect(p.segments[0].programDateTime == HLSDate.parse("2019-02-14T02:13:36.106Z"))
        #expect(p.segments[6].programDateTime == HLSDate.parse("2019-02-14T02:14:00.106Z"))
        #expect(p.segments[1].programDateTime == nil)
        // The parts after the last segment belong to segment 273, still being written.
        let open = try #require(p.segmentInProgress)
        #expect(open.parts.map(\.uri) == ["filePart273.0.mp4", "filePart273.1.mp4", "filePart273.2.mp4"])
        #expect(open.parts.map(\.independent) == [true, false, false])
        #expect(abs(open.duration - 1.00002) < 1e-9)
        #expect(p.nextMediaSequenceNumber == 273)
        #expect(p.mediaSequenceNumber(ofSegmentAt: 6) == 272)
        #expect(p.lastPart?.mediaSequenceNumber == 273 && p.lastPart?.partIndex == 2)
        #expect(p.preloadHints == [PreloadHint(type: .part, uri: "filePart273.3.mp4")])
        #expect(p.renditionReports == [RenditionReport(uri: "../1M/waitForMSN.php", lastMediaSequenceNumber: 273, lastPartIndex: 2),
                                       RenditionReport(uri: "../4M/waitForMSN.php", lastMediaSequenceNumber: 273, lastPartIndex: 1)])
        #expect(p.renditionReport(uri: "../2M/waitForMSN.php") == RenditionReport(uri: "../2M/waitForMSN.php", lastMediaSequenceNumber: 273, lastPartIndex: 2))
        #expect(p.skip == nil)
    }

    @Test func aDeltaUpdateCountsItsSkippedSegments() throws {
        let delta = try parseMedia(LowLatencyExamples.specDelta)
        #expect(delta.skip == PlaylistSkip(skippedSegments: 3))
        #expect(delta.mediaSequence == 266)
        #expect(delta.segments.first?.uri == "fileSequence269.mp4")
        #expect(delta.mediaSequenceNumber(ofSegmentAt: 0) == 269)
        #expect(delta.nextMediaSequenceNumber == 273)
        #expect(delta.lastPart?.partIndex == 3)
    }

    @Test func byteRangePartsGetAbsoluteOffsets() throws {
        let p = try parseMedia(LowLatencyExamples.byteRangeParts)
        let parts = try #require(p.segmentInProgress?.parts)
        #expect(parts.map(\.byteRange) == [ByteRange(length: 21000, offset: 0), ByteRange(length: 18000), ByteRange(length: 19500)],
                "what was written is kept")
        #expect(parts.map(\.resolvedByteRange) == [ByteRange(length: 21000, offset: 0), ByteRange(length: 18000, offset: 21000),
                                                   ByteRange(length: 19500, offset: 39000)])
        let hint = try #require(p.preloadHints.first)
        #expect(hint.byteRangeStart == 39000 + 19500, "the hint starts where the last part ends")
        #expect(p.render(durations: .exact).contains("BYTERANGE=\"18000\""), "an offset left out stays out")
    }

    @Test func aPartWithoutOffsetMustFollowARangeOfItsResource() {
        let text = LowLatencyExamples.byteRangeParts.replacingOccurrences(of: "BYTERANGE=\"21000@0\"", with: "BYTERANGE=\"21000\"")
        #expect(throws: PlaylistParseError.self) { try PlaylistParser.parse(text) }
    }

    /// render(parse(x)) parses to the same model, and rendering is stable.
    @Test(arguments: LowLatencyExamples.all + [RFCExamples.vod, RFCExamples.live, RFCExamples.encrypted])
    func roundTrips(_ text: String) throws {
        let parsed = try parseMedia(text)
        let rendered = parsed.render(durations: .exact)
        let again = try parseMedia(rendered)
        #expect(again.withoutLines() == parsed.withoutLines(), "\(rendered)")
        #expect(again.render(durations: .exact) == rendered)
    }

    @Test func aDeltaUpdateMergesIntoThePreviousPlaylist() throws {
        let previous = try parseMedia(LowLatencyExamples.spec)
        let delta = try parseMedia(LowLatencyExamples.specDelta)
        let merged = try previous.applying(delta: delta)
        #expect(merged.skip == nil)
        #expect(merged.mediaSequence == 266)
        #expect(merged.segments.map(\.uri) == previous.segments.map(\.uri))
        #expect(merged.segments.first?.programDateTime == previous.segments.first?.programDateTime, "skipped segments keep their tags")
        #expect(merged.map == previous.map, "the delta leaves EXT-X-MAP out; the previous one holds")
        #expect(merged.segmentInProgress?.parts.map(\.uri) == (0...3).map { "filePart273.\($0).mp4" })
        #expect(merged.preloadHints.map(\.uri) == ["filePart273.4.mp4"])
        #expect(merged.lastPart?.mediaSequenceNumber == 273 && merged.lastPart?.partIndex == 3)
        // The same as the full playlist of that moment, apart from the version a delta needs.
        var full = previous
        full.segmentInProgress?.parts.append(PartialSegment(duration: 0.33334, uri: "filePart273.3.mp4"))
        full.preloadHints = [PreloadHint(type: .part, uri: "filePart273.4.mp4")]
        full.renditionReports = delta.renditionReports
        full.version = 9
        #expect(merged.withoutLines() == full.withoutLines())
    }

    @Test func aDeltaNeedsEverySkippedSegment() throws {
        var previous = try parseMedia(LowLatencyExamples.spec)
        previous.segments.removeFirst()
        previous.mediaSequence = 267
        let delta = try parseMedia(LowLatencyExamples.specDelta)
        #expect(throws: PlaylistDeltaError.skippedSegmentsMissing(needed: 266...268, available: 267..<273)) {
            try previous.applying(delta: delta)
        }
        #expect(throws: PlaylistDeltaError.previousIsDelta) { try delta.applying(delta: delta) }
        // A full playlist in answer to _HLS_skip (a server may ignore it) replaces the previous one.
        let full = try parseMedia(LowLatencyExamples.spec)
        #expect(try previous.applying(delta: full) == full)
    }

    @Test func skippedKeysDiscontinuitiesAndRangesCarryOver() throws {
        let header = """
            #EXTM3U
            #EXT-X-VERSION:9
            #EXT-X-TARGETDURATION:2
            #EXT-X-SERVER-CONTROL:CAN-SKIP-UNTIL=12
            #EXT-X-MEDIA-SEQUENCE:100
            #EXT-X-DISCONTINUITY-SEQUENCE:7

            """
        let previous = try parseMedia(header + """
            #EXT-X-KEY:METHOD=AES-128,URI="k1",IV=0x1
            #EXTINF:2,
            #EXT-X-BYTERANGE:1000@0
            all.ts
            #EXT-X-DISCONTINUITY
            #EXT-X-BITRATE:800
            #EXTINF:2,
            #EXT-X-BYTERANGE:1000
            all.ts
            #EXTINF:2,
            #EXT-X-BYTERANGE:1000
            all.ts

            """)
        #expect(previous.segments.map(\.resolvedByteRange?.offset) == [0, 1000, 2000])
        let delta = try parseMedia(header + """
            #EXT-X-SKIP:SKIPPED-SEGMENTS=2
            #EXTINF:2,
            #EXT-X-BYTERANGE:1000
            all.ts
            #EXTINF:2,
            #EXT-X-BYTERANGE:500
            all.ts
            #EXTINF:2,
            other.ts

            """)
        #expect(delta.segments.map(\.resolvedByteRange) == [nil, nil, nil], "the range before them was skipped")
        let merged = try previous.applying(delta: delta)
        #expect(merged.segments.map(\.uri) == ["all.ts", "all.ts", "all.ts", "all.ts", "other.ts"])
        #expect(merged.segments.map(\.resolvedByteRange?.offset) == [0, 1000, 2000, 3000, nil])
        #expect(merged.segments.map { $0.key?.uri } == ["k1", "k1", "k1", "k1", "k1"], "the key before the skip still applies")
        #expect(merged.segments.last?.bitrate == nil, "the rate tag was before a byte range, so applies to none")
        #expect((0..<5).map(merged.discontinuitySequenceNumber(ofSegmentAt:)) == [7, 8, 8, 8, 8])
    }

    @Test func aModelBuiltInCodeRendersLintCleanAndReadsBack() throws {
        let key = EncryptionKey(method: .aes128, uri: "https://keys.example.com/k1", iv: InitializationVector(hexadecimal: "0x0123456789abcdef0123456789abcdef"))
        let playlist = MediaPlaylist(
            version: 6, targetDuration: 2, mediaSequence: 40, independentSegments: true,
            map: MediaInitializationSection(uri: "init.mp4", keys: [key]),
            segments: (40..<43).map { n in
                MediaSegment(duration: 2, uri: "s\(n).m4s", keys: [key],
                             parts: n < 41 ? [] : (0..<4).map { PartialSegment(duration: 0.5, uri: "s\(n).\($0).m4s", independent: $0 == 0) })
            },
            partTarget: 0.5, serverControl: ServerControl(canSkipUntil: 12, holdBack: 6, partHoldBack: 1.5, canBlockReload: true),
            segmentInProgress: SegmentInProgress(parts: [PartialSegment(duration: 0.5, uri: "s43.0.m4s", independent: true)], keys: [key]),
            preloadHints: [PreloadHint(type: .part, uri: "s43.1.m4s")],
            renditionReports: [RenditionReport(uri: "../low/index.m3u8", lastMediaSequenceNumber: 43, lastPartIndex: 0)])
        let text = playlist.render(durations: .exact)
        #expect(HLSLinter(profile: .rfc8216).lint(text, renditionCount: 2).violations.isEmpty, "\(text)")
        #expect(text.components(separatedBy: "#EXT-X-KEY").count == 2, "one key tag, before the map it encrypts:\n\(text)")
        #expect(try parseMedia(text).withoutLines() == playlist)
        #expect(playlist.minimumVersion(durations: .exact) == 6)
    }

    @Test func exactNumbersNeverUseExponents() {
        #expect(HLSNumber.shortest(4.00008) == "4.00008")
        #expect(HLSNumber.shortest(6) == "6")
        #expect(HLSNumber.shortest(0.00001) == "0.00001")
        #expect(HLSNumber.shortest(1.5e-7) == "0.00000015")
        #expect(HLSNumber.shortest(1e22) == "10000000000000000000000")
        #expect(HLSNumber.shortest(-0.25) == "-0.25")
        for value in [0.33334, 1.00267, 3.98933, 1e-5, 123456.789, 2.0020020020] {
            #expect(Double(HLSNumber.shortest(value)) == value)
        }
    }
}

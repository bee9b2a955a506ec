import Foundation
import HLS
import Testing

/// RFC 8216 §8 examples: they must parse and lint clean.
enum RFCExamples {
    static let vod = """
        #EXTM3U
        #EXT-X-TARGETDURATION:10
        #EXT-X-VERSION:3
        #EXTINF:9.009,
        http://media.example.com/first.ts
        #EXTINF:9.009,
        http://media.example.com/second.ts
        #EXTINF:3.003,
        http://media.example.com/third.ts
        #EXT-X-ENDLIST

        """

    static let live = """
        #EXTM3U
        #EXT-X-VERSION:3
        #EXT-X-TARGETDURATION:8
        #EXT-X-MEDIA-SEQUENCE:2680

        #EXTINF:7.975,
        https://priv.example.com/fileSequence2680.ts
        #EXTINF:7.941,
        https://priv.example.com/fileSequence2681.ts
        #EXTINF:7.975,
        https://priv.example.com/fileSequence2682.ts

        """

    static let encrypted = """
        #EXTM3U
        #EXT-X-VERSION:3
        #EXT-X-MEDIA-SEQUENCE:7794
        #EXT-X-TARGETDURATION:15

        #EXT-X-KEY:METHOD=AES-128,URI="https://priv.example.com/key.php?r=52"

        #EXTINF:2.833,
        http://media.example.com/fileSequence52-A.ts
        #EXTINF:15.0,
        http://media.example.com/fileSequence52-B.ts
        #EXTINF:13.333,
        http://media.example.com/fileSequence52-C.ts

        #EXT-X-KEY:METHOD=AES-128,URI="https://priv.example.com/key.php?r=53"

        #EXTINF:15.0,
        http://media.example.com/fileSequence53-A.ts

        """

    static let master = """
        #EXTM3U
        #EXT-X-STREAM-INF:BANDWIDTH=1280000,AVERAGE-BANDWIDTH=1000000
        http://example.com/low.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=2560000,AVERAGE-BANDWIDTH=2000000
        http://example.com/mid.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=7680000,AVERAGE-BANDWIDTH=6000000
        http://example.com/hi.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=65000,CODECS="mp4a.40.5"
        http://example.com/audio-only.m3u8

        """
}

struct PlaylistParserTests {
    @Test func parsesTheRFCVODExample() throws {
        guard case let .media(p) = try PlaylistParser.parse(RFCExamples.vod) else { Issue.record("not media"); return }
        #expect(p.version == 3)
        #expect(p.targetDuration == 10)
        #expect(p.endList)
        #expect(p.segments.map(\.uri) == ["http://media.example.com/first.ts", "http://media.example.com/second.ts",
                                          "http://media.example.com/third.ts"])
        #expect(p.segments.map(\.duration) == [9.009, 9.009, 3.003])
        #expect(p.segments.map(\.line) == [4, 6, 8], "segments remember their EXTINF line")
    }

    @Test func parsesTheRFCMasterExample() throws {
        guard case let .master(m) = try PlaylistParser.parse(RFCExamples.master) else { Issue.record("not master"); return }
        #expect(m.variants.map(\.bandwidth) == [1_280_000, 2_560_000, 7_680_000, 65000])
        #expect(m.variants.map(\.averageBandwidth) == [1_000_000, 2_000_000, 6_000_000, nil])
        #expect(m.variants[3].codecs == "mp4a.40.5")
        #expect(m.variants.map(\.line) == [2, 4, 6, 8])
    }

    @Test func toleratesCRLFByteOrderMarkAndUnknownTags() throws {
        let text = "\u{FEFF}#EXTM3U\r\n#EXT-X-VERSION:3\r\n#EXT-X-TARGETDURATION:4\r\n#EXT-X-SOMETHING-NEW:1\r\n"
            + "# a comment\r\n#EXTINF:4.000,\r\nseg0.ts\r\n#EXT-X-ENDLIST\r\n"
        guard case let .media(p) = try PlaylistParser.parse(text) else { Issue.record("not media"); return }
        #expect(p.segments.count == 1)
        #expect(p.segments[0].uri == "seg0.ts")
        #expect(p.segments[0].line == 6)
        #expect(p.endList)
        #expect(HLSLinter(profile: .rfc8216).lint(text).violations.isEmpty)
    }

    @Test func mediaPlaylistRoundTrips() throws {
        let start = Date(timeIntervalSince1970: 1_714_564_800.25)
        let original = MediaPlaylist(
            version: 6, targetDuration: 2, mediaSequence: 17, playlistType: .event, independentSegments: true,
            map: MediaInitializationSection(uri: "v_init.mp4"),
            segments: (0..<4).map { i in
                MediaSegment(duration: i == 3 ? 1.234 : 2.0, uri: "v_\(17 + i).m4s",
                             programDateTime: start.addingTimeInterval(Double(i) * 2), discontinuity: i == 2)
            },
            endList: true)
        let text = original.render()
        guard case var .media(parsed) = try PlaylistParser.parse(text) else { Issue.record("not media"); return }
        for i in parsed.segments.indices { parsed.segments[i].line = 0 }
        #expect(parsed == original)
        #expect(parsed.render() == text)
        #expect(text.contains("#EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:00.250Z"))
        #expect(text.contains("#EXTINF:2.000,"))
    }

    @Test func masterPlaylistRoundTrips() throws {
        let original = MasterPlaylist(version: 1, independentSegments: true, variants: [
            VariantStream(bandwidth: 1_500_000, averageBandwidth: 1_200_000, resolution: Resolution(width: 640, height: 360),
                          frameRate: 29.97, codecs: "avc1.64001e,mp4a.40.2", uri: "low/index.m3u8"),
            VariantStream(bandwidth: 4_000_000, uri: "high.m3u8"),
        ])
        let text = original.render()
        #expect(text.contains("FRAME-RATE=29.970"))
        guard case var .master(parsed) = try PlaylistParser.parse(text) else { Issue.record("not master"); return }
        for i in parsed.variants.indices { parsed.variants[i].line = 0 }
        #expect(parsed == original)
    }

    @Test func attributeListsKeepQuotedCommas() {
        let list = HLSAttributeList.parse("BANDWIDTH=100,CODECS=\"avc1.4d401f,mp4a.40.2\",RESOLUTION=640x360")
        #expect(list?.map(\.name) == ["BANDWIDTH", "CODECS", "RESOLUTION"])
        #expect(list?["CODECS"]?.value == "avc1.4d401f,mp4a.40.2")
        #expect(list?["CODECS"]?.isQuoted == true)
        #expect(HLSAttributeList.parse("URI=\"unterminated") == nil)
    }

    @Test func decimalsAreLocaleFree() {
        #expect(HLSNumber.decimal(2.0015, places: 3) == "2.002" || HLSNumber.decimal(2.0015, places: 3) == "2.001")
        #expect(HLSNumber.decimal(4, places: 3) == "4.000")
        #expect(HLSNumber.decimal(0.0333, places: 3) == "0.033")
        #expect(HLSNumber.decimal(29.97002997, places: 3) == "29.970")
        #expect(HLSNumber.decimal(-1e20, places: 2) == "-100000000000000000000.00", "no trap past Int64 (the fuzzer's find)")
    }

    @Test func codecStringsFromHeaders() {
        // avcC: version 1, High profile (0x64), constraints 0, level 3.0 (0x1e).
        #expect(CodecStrings.avc1(extradata: [1, 0x64, 0x00, 0x1E, 0xFF, 0xE1]) == "avc1.64001e")
        // Annex B: SPS NAL (0x67), Constrained Baseline (0x42, 0xC0), level 3.1.
        #expect(CodecStrings.avc1(extradata: [0, 0, 0, 1, 0x67, 0x42, 0xC0, 0x1F, 0xDA, 0, 0, 1, 0x68, 0xCE]) == "avc1.42c01f")
        // AudioSpecificConfig 0x12 0x10: object type 2 (AAC-LC), 44.1 kHz, stereo.
        #expect(CodecStrings.mp4a(audioSpecificConfig: [0x12, 0x10]) == "mp4a.40.2")
        #expect(CodecStrings.mp4a(audioSpecificConfig: [0x2B, 0x92, 0x08, 0x00]) == "mp4a.40.5")
        #expect(CodecStrings.h264ProfileAndLevel("avc1.64001f")! == (100, 0, 31))
    }
}

/// EXT-X-PROGRAM-DATE-TIME is read by our own parser (a playlist is untrusted, and ICU under
/// `ISO8601DateFormatter` died on a 40-digit fraction). Foundation's formatter is the oracle for
/// well-formed dates.
struct HLSDateTests {
    @Test(arguments: ["2024-05-01T12:00:00.250Z", "2024-05-01T12:00:00Z", "2010-02-19T14:54:23.031+08:00",
                      "2010-02-19T14:54:23.031-05:30", "2000-02-29T23:59:59.999Z", "1969-12-31T23:59:59.5Z",
                      "2100-03-01T00:00:00+00:00", "2024-12-31T23:59:59.123456Z"])
    func wellFormedDatesMatchFoundation(_ text: String) throws {
        let oracle = ISO8601DateFormatter()
        oracle.formatOptions = text.contains(".") ? [.withInternetDateTime, .withFractionalSeconds] : [.withInternetDateTime]
        let expected = try #require(oracle.date(from: text))
        let parsed = try #require(HLSDate.parse(text))
        #expect(abs(parsed.timeIntervalSince(expected)) < 0.001, "\(text): \(parsed) against \(expected)")
    }

    @Test func compactOffsetsAndLongFractions() throws {
        let compact = try #require(HLSDate.parse("2010-02-19T14:54:23.031+0800"))
        #expect(compact == HLSDate.parse("2010-02-19T14:54:23.031+08:00"))
        // The fuzzer's playlist: 37 fractional digits.
        let long = try #require(HLSDate.parse("2024-01-01T00:00:00.0003333333333333333333333333333333333332Z"))
        #expect(abs(long.timeIntervalSince1970 - 1_704_067_200.000333) < 1e-6)
    }

    @Test(arguments: ["", "2024-05-01", "2024-05-01T12:00:00", "2024-13-01T12:00:00Z", "2023-02-29T12:00:00Z",
                      "2024-05-01T24:00:00Z", "2024-05-01T12:60:00Z", "2024-05-01T12:00:00.Z", "2024-05-01T12:00:00Zjunk",
                      "2024-05-01T12:00:00+25:00", "２０２４-05-01T12:00:00Z", "2024-05-01 12:00:00Z"])
    func malformedDatesAreNil(_ text: String) {
        #expect(HLSDate.parse(text) == nil, "\(text)")
    }

    @Test func formatReadsBack() throws {
        let date = Date(timeIntervalSince1970: 1_714_564_800.25)
        #expect(HLSDate.parse(HLSDate.format(date)) == date)
    }

    /// `format` against Foundation's formatter (the oracle, from the Gregorian reform on), and
    /// format(parse(x)) == x in the proleptic Gregorian calendar both use, back to year 0.
    @Test(arguments: ["2024-05-01T12:00:00.250Z", "2019-02-14T02:13:36.106Z", "1970-01-01T00:00:00.000Z",
                      "1969-12-31T23:59:59.999Z", "2000-02-29T00:00:00.001Z", "1600-03-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z"])
    func formatMatchesFoundation(_ text: String) throws {
        let oracle = ISO8601DateFormatter()
        oracle.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let date = try #require(oracle.date(from: text))
        #expect(HLSDate.format(date) == text)
        #expect(HLSDate.format(try #require(HLSDate.parse(text))) == text)
    }

    @Test func datesBeforeTheGregorianReformKeepTheirDay() throws {
        // The fuzzer's playlist: year 24 moved two days at each render while Foundation formatted it.
        for text in ["0024-01-01T00:00:00.000Z", "0000-01-01T00:00:00.000Z", "1582-10-04T12:00:00.500Z"] {
            #expect(HLSDate.format(try #require(HLSDate.parse(text))) == text)
        }
        #expect(HLSDate.parse("0000-01-01T00:00:00+00:01") == nil, "before year 0 once in UTC")
        #expect(HLSDate.parse("9999-12-31T23:59:59.9999Z") == nil, "year 10000 once rounded to the millisecond")
    }
}

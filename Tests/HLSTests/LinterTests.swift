import HLS
import Testing

/// A good livefilter-style playlist each bad case breaks in one place (LowLatencyLinterTests too).
let goodEvent = """
    #EXTM3U
    #EXT-X-VERSION:3
    #EXT-X-TARGETDURATION:2
    #EXT-X-MEDIA-SEQUENCE:0
    #EXT-X-PLAYLIST-TYPE:EVENT
    #EXT-X-INDEPENDENT-SEGMENTS
    #EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:00.000Z
    #EXTINF:2.000,
    s_00000.ts
    #EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:02.000Z
    #EXTINF:1.500,
    s_00001.ts

    """

/// One broken rule: playlist text, profile, the rule id and the line it must fire on.
struct BadCase: CustomTestStringConvertible, Sendable {
    var name: String
    var text: String
    var profile: HLSLinter.Profile = .rfc8216
    var rule: String
    var line: Int
    var severity: LintSeverity = .error
    var testDescription: String { name }
}

private func replacing(_ old: String, with new: String, in text: String = goodEvent) -> String {
    precondition(text.contains(old), "test fixture does not contain \(old)")
    return text.replacingOccurrences(of: old, with: new)
}

let badCases: [BadCase] = [
    BadCase(name: "no #EXTM3U", text: replacing("#EXTM3U\n", with: "#EXT-X-FOO\n"), rule: "extm3u", line: 1),
    BadCase(name: "target duration missing", text: replacing("#EXT-X-TARGETDURATION:2\n", with: ""),
            rule: "target-duration-missing", line: 1),
    BadCase(name: "target duration not integer", text: replacing("#EXT-X-TARGETDURATION:2\n", with: "#EXT-X-TARGETDURATION:2.5\n"),
            rule: "target-duration-format", line: 3),
    BadCase(name: "segment longer than target", text: replacing("#EXTINF:1.500,", with: "#EXTINF:2.501,"),
            rule: "target-duration-exceeded", line: 11),
    BadCase(name: "EXTINF zero", text: replacing("#EXTINF:1.500,", with: "#EXTINF:0,"), rule: "extinf-value", line: 11),
    BadCase(name: "EXTINF negative", text: replacing("#EXTINF:1.500,", with: "#EXTINF:-1.5,"), rule: "extinf-value", line: 11),
    BadCase(name: "EXTINF infinite", text: replacing("#EXTINF:1.500,", with: "#EXTINF:inf,"), rule: "extinf-value", line: 11),
    BadCase(name: "EXTINF without URI", text: replacing("s_00001.ts\n", with: ""), rule: "extinf-without-uri", line: 11),
    BadCase(name: "URI without EXTINF", text: replacing("#EXTINF:1.500,\n", with: ""), rule: "uri-without-extinf", line: 11),
    BadCase(name: "version missing with float EXTINF", text: replacing("#EXT-X-VERSION:3\n", with: ""),
            rule: "version-missing", line: 1),
    BadCase(name: "version too low for float EXTINF", text: replacing("#EXT-X-VERSION:3", with: "#EXT-X-VERSION:2"),
            rule: "version-too-low", line: 8),
    BadCase(name: "version too low for EXT-X-MAP", text: replacing("#EXT-X-INDEPENDENT-SEGMENTS\n",
            with: "#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-MAP:URI=\"init.mp4\"\n"), rule: "version-too-low", line: 7),
    BadCase(name: "version too low for BYTERANGE", text: replacing("#EXTINF:1.500,\n", with: "#EXTINF:1.500,\n#EXT-X-BYTERANGE:1000@0\n"),
            rule: "version-too-low", line: 12),
    BadCase(name: "version higher than needed", text: replacing("#EXT-X-VERSION:3", with: "#EXT-X-VERSION:6"),
            profile: .livefilter, rule: "version-higher-than-needed", line: 2, severity: .warning),
    BadCase(name: "version not a number", text: replacing("#EXT-X-VERSION:3", with: "#EXT-X-VERSION:three"),
            rule: "version-format", line: 2),
    BadCase(name: "media sequence after first segment", text: replacing("#EXT-X-MEDIA-SEQUENCE:0\n", with: "")
                .replacingOccurrences(of: "s_00000.ts\n", with: "s_00000.ts\n#EXT-X-MEDIA-SEQUENCE:0\n"),
            rule: "media-sequence-position", line: 9),
    BadCase(name: "VOD without ENDLIST", text: replacing("#EXT-X-PLAYLIST-TYPE:EVENT", with: "#EXT-X-PLAYLIST-TYPE:VOD"),
            rule: "endlist-missing", line: 12),
    BadCase(name: "bad playlist type", text: replacing("#EXT-X-PLAYLIST-TYPE:EVENT", with: "#EXT-X-PLAYLIST-TYPE:LIVE"),
            rule: "playlist-type-invalid", line: 5),
    BadCase(name: "duplicate target duration", text: replacing("#EXT-X-MEDIA-SEQUENCE:0\n", with: "#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-TARGETDURATION:2\n"),
            rule: "tag-duplicate", line: 5),
    BadCase(name: "bad date", text: replacing("2024-05-01T12:00:02.000Z", with: "yesterday"),
            rule: "program-date-time-format", line: 10),
    BadCase(name: "segment after ENDLIST", text: goodEvent.replacingOccurrences(of: "#EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:02.000Z\n",
            with: "#EXT-X-ENDLIST\n#EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:02.000Z\n"), rule: "segment-after-endlist", line: 13),
    BadCase(name: "master tag in media playlist", text: replacing("s_00001.ts\n", with: "s_00001.ts\n#EXT-X-STREAM-INF:BANDWIDTH=1\nx.m3u8\n"),
            rule: "mixed-tags", line: 3),
    // livefilter profile
    BadCase(name: "independent segments missing", text: replacing("#EXT-X-INDEPENDENT-SEGMENTS\n", with: ""),
            profile: .livefilter, rule: "independent-segments-missing", line: 1),
    BadCase(name: "event segment without date", text: replacing("#EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:02.000Z\n", with: ""),
            profile: .livefilter, rule: "program-date-time-missing", line: 10),
    BadCase(name: "live segment without date", text: replacing("#EXT-X-PLAYLIST-TYPE:EVENT\n", with: "")
                .replacingOccurrences(of: "#EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:00.000Z\n", with: ""),
            profile: .livefilter, rule: "program-date-time-missing", line: 6),
    // master playlists
    BadCase(name: "variant without BANDWIDTH", text: "#EXTM3U\n#EXT-X-STREAM-INF:RESOLUTION=640x360\nlow.m3u8\n",
            rule: "stream-inf-bandwidth", line: 2),
    BadCase(name: "variant BANDWIDTH not integer", text: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1.5e6\nlow.m3u8\n",
            rule: "stream-inf-bandwidth", line: 2),
    BadCase(name: "variant without URI", text: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000\n#EXT-X-STREAM-INF:BANDWIDTH=2000\nb.m3u8\n",
            rule: "stream-inf-uri", line: 2),
    BadCase(name: "variant without URI at end", text: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000\n",
            rule: "stream-inf-uri", line: 2),
    BadCase(name: "resolution malformed", text: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000,RESOLUTION=640*360\na.m3u8\n",
            rule: "resolution-format", line: 2),
    BadCase(name: "codecs unquoted", text: "#EXTM3U\n\n#EXT-X-STREAM-INF:BANDWIDTH=1000,CODECS=avc1.42c01e\na.m3u8\n",
            rule: "codecs-unquoted", line: 3),
    BadCase(name: "frame rate malformed", text: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000,FRAME-RATE=30/1\na.m3u8\n",
            rule: "frame-rate-format", line: 2),
    BadCase(name: "media tag in master playlist", text: "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-STREAM-INF:BANDWIDTH=1000\na.m3u8\n",
            rule: "mixed-tags", line: 2),
    BadCase(name: "stray URI in master", text: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000\na.m3u8\nb.m3u8\n",
            rule: "uri-without-stream-inf", line: 4),
]

struct LinterTests {
    @Test(arguments: badCases)
    func ruleFiresOnTheRightLine(_ bad: BadCase) {
        #expect(HLSLinter.rules[bad.rule] != nil)
        let report = HLSLinter(profile: bad.profile).lint(bad.text)
        let hits = report.violations.filter { $0.rule == bad.rule }
        #expect(hits.contains { $0.line == bad.line && $0.severity == bad.severity },
                "expected [\(bad.rule)] on line \(bad.line); got \(report.violations)")
    }

    @Test func theFixtureIsClean() {
        #expect(HLSLinter(profile: .livefilter).lint(goodEvent).violations.isEmpty)
    }

    @Test(arguments: [RFCExamples.vod, RFCExamples.live, RFCExamples.encrypted, RFCExamples.master])
    func rfcExamplesPass(_ text: String) {
        let report = HLSLinter(profile: .rfc8216).lint(text)
        #expect(report.violations.isEmpty, "\(report.violations)")
    }

    @Test func masterReportsTheMediaPlaylistsItReferences() {
        let report = HLSLinter().lint(RFCExamples.master)
        #expect(report.kind == .master)
        #expect(report.referencedPlaylists.map(\.uri).count == 4)
        #expect(report.referencedPlaylists.first?.line == 3)
    }

    @Test func integerDurationsNeedOnlyVersionOne() {
        let text = "#EXTM3U\n#EXT-X-VERSION:1\n#EXT-X-TARGETDURATION:4\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-INDEPENDENT-SEGMENTS\n#EXTINF:4,\na.ts\n#EXT-X-ENDLIST\n"
        #expect(HLSLinter(profile: .livefilter).lint(text).violations.isEmpty)
    }

    @Test func fmp4PlaylistNeedsVersionSix() {
        let text = "#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-TARGETDURATION:4\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-INDEPENDENT-SEGMENTS\n"
            + "#EXT-X-MAP:URI=\"init.mp4\"\n#EXTINF:4.000,\na.m4s\n#EXT-X-ENDLIST\n"
        #expect(HLSLinter(profile: .livefilter).lint(text).violations.isEmpty)
        let seven = text.replacingOccurrences(of: "VERSION:6", with: "VERSION:7")
        #expect(HLSLinter(profile: .livefilter).lint(seven).violations.map(\.rule) == ["version-higher-than-needed"])
        #expect(HLSLinter(profile: .rfc8216).lint(seven).violations.isEmpty, "a higher version is legal RFC 8216")
    }

    @Test func writtenPlaylistsLintClean() {
        var p = MediaPlaylist(targetDuration: 4, playlistType: .vod, independentSegments: true,
                              segments: [MediaSegment(duration: 4, uri: "a.ts"), MediaSegment(duration: 2.5, uri: "b.ts")],
                              endList: true)
        #expect(HLSLinter(profile: .livefilter).lint(p.render()).violations.isEmpty)
        p.map = MediaInitializationSection(uri: "init.mp4")
        #expect(p.minimumVersion() == 6)
        #expect(HLSLinter(profile: .livefilter).lint(p.render()).violations.isEmpty)
    }
}

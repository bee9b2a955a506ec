import HLS
import Testing

/// A clean LL-HLS rendition each bad case breaks in one place (line numbers in the comments).
private let goodLowLatency = """
    #EXTM3U
    #EXT-X-VERSION:6
    #EXT-X-TARGETDURATION:2
    #EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=1.5,CAN-SKIP-UNTIL=12
    #EXT-X-PART-INF:PART-TARGET=0.5
    #EXT-X-MEDIA-SEQUENCE:10
    #EXT-X-MAP:URI="init.mp4"
    #EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:00.000Z
    #EXTINF:2.000,
    s10.m4s
    #EXT-X-PART:DURATION=0.5,URI="s11.0.m4s",INDEPENDENT=YES
    #EXT-X-PART:DURATION=0.5,URI="s11.1.m4s"
    #EXT-X-PART:DURATION=0.5,URI="s11.2.m4s"
    #EXT-X-PART:DURATION=0.5,URI="s11.3.m4s"
    #EXTINF:2.000,
    s11.m4s
    #EXT-X-PART:DURATION=0.5,URI="s12.0.m4s",INDEPENDENT=YES
    #EXT-X-PART:DURATION=0.5,URI="s12.1.m4s"
    #EXT-X-PRELOAD-HINT:TYPE=PART,URI="s12.2.m4s"
    #EXT-X-RENDITION-REPORT:URI="../low/index.m3u8",LAST-MSN=12,LAST-PART=1

    """
// Lines: 4 SERVER-CONTROL, 5 PART-INF, 7 MAP, 9 EXTINF s10, 11–14 parts of s11, 17–18 parts of 12,
// 19 PRELOAD-HINT, 20 RENDITION-REPORT.

private func ll(_ old: String, _ new: String) -> String { edit(goodLowLatency, old, new) }
/// LinterTests' livefilter-style TS event playlist, for the key, range and gap rules.
private func ts(_ old: String, _ new: String) -> String { edit(goodEvent, old, new) }
private func edit(_ text: String, _ old: String, _ new: String) -> String {
    precondition(text.contains(old), "test fixture does not contain \(old)")
    return text.replacingOccurrences(of: old, with: new)
}

let lowLatencyBadCases: [BadCase] = [
    BadCase(name: "part without PART-INF", text: ll("#EXT-X-PART-INF:PART-TARGET=0.5\n", ""), rule: "part-inf-missing", line: 10),
    BadCase(name: "PART-INF without PART-TARGET", text: ll("PART-TARGET=0.5", "TARGET=0.5"), rule: "server-control-attributes", line: 5),
    BadCase(name: "PART-HOLD-BACK under 2 × PART-TARGET", text: ll("PART-HOLD-BACK=1.5", "PART-HOLD-BACK=0.9"), rule: "part-hold-back", line: 4),
    BadCase(name: "PART-HOLD-BACK under 3 × PART-TARGET", text: ll("PART-HOLD-BACK=1.5", "PART-HOLD-BACK=1.2"),
            rule: "part-hold-back", line: 4, severity: .warning),
    BadCase(name: "PART-HOLD-BACK missing", text: ll("PART-HOLD-BACK=1.5,", ""), rule: "part-hold-back", line: 4),
    BadCase(name: "HOLD-BACK under 3 × target", text: ll("CAN-SKIP-UNTIL=12", "CAN-SKIP-UNTIL=12,HOLD-BACK=4"), rule: "hold-back", line: 4),
    BadCase(name: "CAN-SKIP-UNTIL under 6 × target", text: ll("CAN-SKIP-UNTIL=12", "CAN-SKIP-UNTIL=6"), rule: "can-skip-until", line: 4),
    BadCase(name: "CAN-SKIP-DATERANGES without CAN-SKIP-UNTIL", text: ll(",CAN-SKIP-UNTIL=12", ",CAN-SKIP-DATERANGES=YES"),
            rule: "can-skip-until", line: 4),
    BadCase(name: "CAN-BLOCK-RELOAD=NO", text: ll("CAN-BLOCK-RELOAD=YES", "CAN-BLOCK-RELOAD=NO"), rule: "server-control-attributes", line: 4),
    BadCase(name: "second SERVER-CONTROL", text: ll("#EXT-X-MEDIA-SEQUENCE:10\n", "#EXT-X-MEDIA-SEQUENCE:10\n#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES\n"),
            rule: "tag-duplicate", line: 7),
    BadCase(name: "part longer than PART-TARGET", text: ll("0.5,URI=\"s11.1.m4s\"", "0.6,URI=\"s11.1.m4s\""), rule: "part-duration-exceeded", line: 12),
    BadCase(name: "part under 85% of PART-TARGET", text: ll("0.5,URI=\"s11.1.m4s\"", "0.4,URI=\"s11.1.m4s\""), rule: "part-duration-short", line: 12),
    BadCase(name: "part without URI", text: ll("URI=\"s11.2.m4s\"", "X=1"), rule: "part-attributes", line: 13),
    BadCase(name: "INDEPENDENT=NO", text: ll("URI=\"s12.0.m4s\",INDEPENDENT=YES", "URI=\"s12.0.m4s\",INDEPENDENT=NO"), rule: "part-attributes", line: 17),
    BadCase(name: "date after the first part", text: ll("#EXT-X-PART:DURATION=0.5,URI=\"s11.1.m4s\"\n",
                                                        "#EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:02.000Z\n#EXT-X-PART:DURATION=0.5,URI=\"s11.1.m4s\"\n"),
            rule: "part-tag-order", line: 12),
    // Parts of s10 end 6.5 s and 6 s before the end (7 s): only the first is over 3 target durations.
    BadCase(name: "parts kept too long", text: ll("#EXTINF:2.000,\ns10.m4s\n", "#EXT-X-PART:DURATION=0.5,URI=\"s10.0.m4s\",INDEPENDENT=YES\n"
                                                     + "#EXT-X-PART:DURATION=0.5,URI=\"s10.1.m4s\"\n#EXTINF:2.000,\ns10.m4s\n#EXTINF:2.000,\ns10b.m4s\n"),
            rule: "part-too-old", line: 9, severity: .warning),
    BadCase(name: "parts in an I-frame playlist", text: ll("#EXT-X-MEDIA-SEQUENCE:10\n", "#EXT-X-MEDIA-SEQUENCE:10\n#EXT-X-I-FRAMES-ONLY\n"),
            rule: "parts-in-i-frames-playlist", line: 12, severity: .warning),
    BadCase(name: "two PART hints", text: ll("#EXT-X-RENDITION-REPORT", "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"s12.3.m4s\"\n#EXT-X-RENDITION-REPORT"),
            rule: "preload-hint-duplicate", line: 20, severity: .warning),
    BadCase(name: "hint with ENDLIST", text: goodLowLatency + "#EXT-X-ENDLIST\n", rule: "preload-hint-with-endlist", line: 19),
    BadCase(name: "hint of an unknown TYPE", text: ll("TYPE=PART,URI=\"s12.2.m4s\"", "TYPE=SEGMENT,URI=\"s12.2.m4s\""), rule: "preload-hint-attributes", line: 19),
    BadCase(name: "hint start not an integer", text: ll("URI=\"s12.2.m4s\"", "URI=\"s12.2.m4s\",BYTERANGE-START=1.5"), rule: "preload-hint-attributes", line: 19),
    BadCase(name: "report LAST-MSN not an integer", text: ll("LAST-MSN=12", "LAST-MSN=x"), rule: "rendition-report-attributes", line: 20),
    BadCase(name: "part range without offset", text: ll("URI=\"s11.1.m4s\"", "URI=\"s11.1.m4s\",BYTERANGE=\"100\""), rule: "byterange-offset", line: 12),
    BadCase(name: "skip without CAN-SKIP-UNTIL", text: ll("#EXT-X-VERSION:6", "#EXT-X-VERSION:9").replacingOccurrences(of: ",CAN-SKIP-UNTIL=12", with: "")
                .replacingOccurrences(of: "#EXT-X-MAP:URI=\"init.mp4\"\n", with: "#EXT-X-MAP:URI=\"init.mp4\"\n#EXT-X-SKIP:SKIPPED-SEGMENTS=2\n"),
            rule: "skip-not-advertised", line: 8),
    BadCase(name: "skip needs version 9", text: ll("#EXT-X-MAP:URI=\"init.mp4\"\n", "#EXT-X-MAP:URI=\"init.mp4\"\n#EXT-X-SKIP:SKIPPED-SEGMENTS=2\n"),
            rule: "version-too-low", line: 8),
    BadCase(name: "skip after a segment", text: ll("#EXT-X-VERSION:6", "#EXT-X-VERSION:9").replacingOccurrences(of: "s10.m4s\n", with: "s10.m4s\n#EXT-X-SKIP:SKIPPED-SEGMENTS=2\n"),
            rule: "skip-invalid", line: 11),
    BadCase(name: "part in a master playlist", text: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000\na.m3u8\n#EXT-X-PART:DURATION=1,URI=\"p\"\n",
            rule: "mixed-tags", line: 4),
    // Keys, ranges, gaps and bit rates on a TS playlist.
    BadCase(name: "unknown METHOD", text: ts("#EXTINF:2.000,", "#EXT-X-KEY:METHOD=AES-129,URI=\"k\"\n#EXTINF:2.000,"), rule: "key-attributes", line: 8),
    BadCase(name: "NONE with a URI", text: ts("#EXTINF:2.000,", "#EXT-X-KEY:METHOD=NONE,URI=\"k\"\n#EXTINF:2.000,"), rule: "key-attributes", line: 8),
    BadCase(name: "AES-128 without URI", text: ts("#EXTINF:2.000,", "#EXT-X-KEY:METHOD=AES-128\n#EXTINF:2.000,"), rule: "key-attributes", line: 8),
    BadCase(name: "KEYFORMATVERSIONS malformed", text: ts("#EXT-X-VERSION:3", "#EXT-X-VERSION:5").replacingOccurrences(of: "#EXTINF:2.000,",
            with: "#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"k\",KEYFORMAT=\"x\",KEYFORMATVERSIONS=\"1/b\"\n#EXTINF:2.000,"), rule: "key-attributes", line: 8),
    BadCase(name: "IV not hexadecimal", text: ts("#EXTINF:2.000,", "#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=0x12G4\n#EXTINF:2.000,"), rule: "key-iv", line: 8),
    BadCase(name: "IV over 128 bits", text: ts("#EXTINF:2.000,", "#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=0x1" + String(repeating: "0", count: 32) + "\n#EXTINF:2.000,"),
            rule: "key-iv", line: 8),
    BadCase(name: "IV with SAMPLE-AES-CTR", text: ts("#EXTINF:2.000,", "#EXT-X-KEY:METHOD=SAMPLE-AES-CTR,URI=\"k\",IV=0x1\n#EXTINF:2.000,"), rule: "key-iv", line: 8),
    BadCase(name: "AES-128 map without IV", text: ts("#EXT-X-VERSION:3", "#EXT-X-VERSION:6").replacingOccurrences(of: "#EXT-X-INDEPENDENT-SEGMENTS\n",
            with: "#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n#EXT-X-MAP:URI=\"init.mp4\"\n"), rule: "key-iv-for-map", line: 8),
    BadCase(name: "range without offset after a whole segment", text: ts("#EXT-X-VERSION:3", "#EXT-X-VERSION:4")
                .replacingOccurrences(of: "#EXTINF:1.500,\n", with: "#EXTINF:1.500,\n#EXT-X-BYTERANGE:1000\n"), rule: "byterange-offset", line: 12),
    BadCase(name: "map range without offset", text: ts("#EXT-X-VERSION:3", "#EXT-X-VERSION:6").replacingOccurrences(of: "#EXT-X-INDEPENDENT-SEGMENTS\n",
            with: "#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-MAP:URI=\"init.mp4\",BYTERANGE=\"700\"\n"), rule: "byterange-offset", line: 7),
    BadCase(name: "GAP with a value", text: ts("#EXTINF:1.500,", "#EXT-X-GAP:YES\n#EXTINF:1.500,"), rule: "gap", line: 11),
    BadCase(name: "GAP before no segment", text: goodEvent + "#EXT-X-GAP\n", rule: "gap", line: 13),
    BadCase(name: "BITRATE not an integer", text: ts("#EXTINF:1.500,", "#EXT-X-BITRATE:1.5\n#EXTINF:1.500,"), rule: "tag-value", line: 11),
]

struct LowLatencyLinterTests {
    @Test(arguments: lowLatencyBadCases)
    func ruleFiresOnTheRightLine(_ bad: BadCase) {
        #expect(HLSLinter.rules[bad.rule] != nil)
        let report = HLSLinter(profile: bad.profile).lint(bad.text)
        #expect(report.violations.contains { $0.rule == bad.rule && $0.line == bad.line && $0.severity == bad.severity },
                "expected [\(bad.rule)] on line \(bad.line); got \(report.violations)")
    }

    @Test func theFixturesAreClean() {
        #expect(HLSLinter(profile: .rfc8216).lint(goodLowLatency).violations.isEmpty)
        #expect(HLSLinter(profile: .rfc8216).lint(goodEvent).violations.isEmpty)
        #expect(HLSLinter(profile: .rfc8216).lint(LowLatencyExamples.appleDemo).violations.isEmpty)
        #expect(HLSLinter(profile: .rfc8216).lint(LowLatencyExamples.byteRangeParts).violations.isEmpty)
    }

    /// The spec's own example breaks two of its rules: CAN-SKIP-UNTIL=12 with a 4 s target (a MUST:
    /// 6 × 4 = 24) and PART-HOLD-BACK=1.0 just under 3 × 0.33334 (a SHOULD).
    @Test(arguments: [LowLatencyExamples.spec, LowLatencyExamples.specDelta])
    func theSpecExamplesBreakTwoRules(_ text: String) {
        let found = HLSLinter(profile: .rfc8216).lint(text).violations
        #expect(found.map(\.rule) == ["can-skip-until", "part-hold-back"], "\(found)")
        #expect(found.map(\.severity) == [.error, .warning])
    }

    /// The parts allowed under 85% of PART-TARGET: the last of a parent, INDEPENDENT ones, GAP ones and
    /// the one before a GAP; and the last part so far of the segment in progress (it may be its last).
    @Test func shortPartsTheSpecAllows() {
        let text = ll("0.5,URI=\"s11.3.m4s\"", "0.1,URI=\"s11.3.m4s\"")
            .replacingOccurrences(of: "0.5,URI=\"s11.0.m4s\",INDEPENDENT=YES", with: "0.2,URI=\"s11.0.m4s\",INDEPENDENT=YES")
            .replacingOccurrences(of: "0.5,URI=\"s11.1.m4s\"", with: "0.3,URI=\"s11.1.m4s\"")
            .replacingOccurrences(of: "0.5,URI=\"s11.2.m4s\"", with: "0.4,URI=\"s11.2.m4s\",GAP=YES")
            .replacingOccurrences(of: "0.5,URI=\"s12.1.m4s\"", with: "0.2,URI=\"s12.1.m4s\"")
        #expect(HLSLinter(profile: .rfc8216).lint(text).violations.isEmpty)
    }

    @Test func renditionReportsAreCheckedWhenTheRenditionsAreKnown() {
        let linter = HLSLinter(profile: .rfc8216)
        #expect(linter.lint(goodLowLatency, renditionCount: 2).violations.isEmpty)
        let missing = linter.lint(goodLowLatency, renditionCount: 3).violations
        #expect(missing.map(\.rule) == ["rendition-report-missing"] && missing.first?.severity == .warning)
        #expect(linter.lint(goodLowLatency).violations.isEmpty, "alone, a playlist cannot know its siblings")
        #expect(linter.lint(goodEvent, renditionCount: 3).violations.isEmpty, "only LL-HLS renditions report")
    }
}

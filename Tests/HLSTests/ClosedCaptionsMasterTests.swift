import HLS
import MediaIO
import Testing

/// A master playlist's closed captions (rfc8216bis §4.4.6.1–2): what `MasterPlaylistWriter` writes
/// for each of the plan's declarations, read back by our parser and clean under our linter, and the
/// linter's rules each caught on a playlist that breaks only that rule.
@Suite("Closed captions in master playlists")
struct ClosedCaptionsMasterTests {
    static let rungs = [HLSRendition(uri: "a.m3u8", peakBitRate: 900_000, averageBitRate: 800_000, resolution: nil, frameRate: nil, codecs: "avc1.64001f"),
                        HLSRendition(uri: "b.m3u8", peakBitRate: 300_000, averageBitRate: 250_000, resolution: nil, frameRate: nil, codecs: "avc1.64000d")]

    struct NotAMaster: Error {}

    static func master(_ text: String) throws -> MasterPlaylist {
        guard case let .master(master) = try PlaylistParser.parse(text) else { throw NotAMaster() }
        return master
    }

    @Test("services: one EXT-X-MEDIA each in group cc, CLOSED-CAPTIONS=\"cc\" on every variant; version 7 for SERVICEn")
    func services() throws {
        let text = MasterPlaylistWriter.render(Self.rungs, closedCaptions: .services(["CC1", "SERVICE1"]))
        let lines = text.split(separator: "\n")
        #expect(lines.contains("#EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID=\"cc\",NAME=\"CEA-608 CC1\",DEFAULT=YES,AUTOSELECT=YES,INSTREAM-ID=\"CC1\""), "\(text)")
        #expect(lines.contains("#EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID=\"cc\",NAME=\"CEA-708 SERVICE1\",DEFAULT=NO,AUTOSELECT=YES,INSTREAM-ID=\"SERVICE1\""))
        #expect(lines.filter { $0.hasPrefix("#EXT-X-STREAM-INF") }.allSatisfy { $0.hasSuffix(",CLOSED-CAPTIONS=\"cc\"") }, "\(text)")
        #expect(lines.contains("#EXT-X-VERSION:7"))
        let parsed = try Self.master(text)
        #expect(parsed.media.map(\.instreamID) == ["CC1", "SERVICE1"] && parsed.media.allSatisfy { $0.kind == .closedCaptions && $0.uri.isEmpty })
        #expect(parsed.variants.map(\.closedCaptions) == [.group("cc"), .group("cc")])
        for profile in [HLSLinter.Profile.rfc8216, .livefilter] {
            #expect(HLSLinter(profile: profile).lint(text).errors.isEmpty, "\(HLSLinter(profile: profile).lint(text).violations)")
        }
        // Only 608: version 1 still does.
        #expect(MasterPlaylistWriter.render(Self.rungs, closedCaptions: .services(["CC1"])).contains("#EXT-X-VERSION:1\n"))
    }

    @Test("none: CLOSED-CAPTIONS=NONE on every variant; unknown: no attribute at all")
    func noneAndUnknown() throws {
        let none = MasterPlaylistWriter.render(Self.rungs, closedCaptions: .none)
        #expect(none.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-STREAM-INF") }.allSatisfy { $0.hasSuffix(",CLOSED-CAPTIONS=NONE") })
        let expected: [VariantStream.ClosedCaptions?] = [VariantStream.ClosedCaptions.none, VariantStream.ClosedCaptions.none]
        #expect(try Self.master(none).variants.map(\.closedCaptions) == expected)
        #expect(HLSLinter(profile: .rfc8216).lint(none).errors.isEmpty)
        let unknown = MasterPlaylistWriter.render(Self.rungs)
        #expect(!unknown.contains("CLOSED-CAPTIONS"))
        #expect(try Self.master(unknown).variants.allSatisfy { $0.closedCaptions == nil })
    }

    @Test("the linter's CLOSED-CAPTIONS rules, each on a playlist that breaks only it")
    func linterRules() {
        let linter = HLSLinter(profile: .rfc8216)
        func rules(media: [String], variants: [String]) -> Set<String> {
            let text = "#EXTM3U\n#EXT-X-VERSION:7\n" + media.map { "#EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID=\"cc\",NAME=\"x\",\($0)\n" }.joined()
                + variants.enumerated().map { "#EXT-X-STREAM-INF:BANDWIDTH=1000\($1.isEmpty ? "" : ",")\($1)\nv\($0).m3u8\n" }.joined()
            return Set(linter.lint(text).errors.map(\.rule).filter { $0.hasPrefix("closed-captions") })
        }
        let cc = "CLOSED-CAPTIONS=\"cc\""
        #expect(rules(media: ["INSTREAM-ID=\"CC1\"", "INSTREAM-ID=\"SERVICE63\""], variants: [cc, cc]).isEmpty)
        #expect(rules(media: ["INSTREAM-ID=\"CC1\""], variants: ["CLOSED-CAPTIONS=\"other\"", cc]) == ["closed-captions-group"])
        #expect(rules(media: ["INSTREAM-ID=\"CC1\""], variants: ["CLOSED-CAPTIONS=cc", cc]) == ["closed-captions-group"])
        for bad in ["INSTREAM-ID=\"CC5\"", "INSTREAM-ID=\"SERVICE64\"", "INSTREAM-ID=\"SERVICE0\"", "INSTREAM-ID=\"cc1\"", "INSTREAM-ID=CC1", "LANGUAGE=\"en\""] {
            #expect(rules(media: [bad], variants: [cc, cc]) == ["closed-captions-instream-id"], "\(bad)")
        }
        #expect(rules(media: ["INSTREAM-ID=\"CC1\"", "INSTREAM-ID=\"CC1\""], variants: [cc, cc]) == ["closed-captions-instream-id"])
        #expect(rules(media: ["INSTREAM-ID=\"CC1\",URI=\"cc.m3u8\""], variants: [cc, cc]) == ["closed-captions-uri"])
        #expect(rules(media: [], variants: ["CLOSED-CAPTIONS=NONE", "CLOSED-CAPTIONS=NONE"]).isEmpty)
        #expect(rules(media: [], variants: ["CLOSED-CAPTIONS=NONE", ""]) == ["closed-captions-none"])
        #expect(rules(media: ["INSTREAM-ID=\"CC1\""], variants: ["CLOSED-CAPTIONS=NONE", cc]) == ["closed-captions-none"])
    }
}

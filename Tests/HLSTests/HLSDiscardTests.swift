import Foundation
import HLS
import MediaIO
import Testing

/// What `HLSWriter.discard()` leaves, by playlist type (its documentation): a VOD rendition
/// nothing of its own, an event or live one what it published, ended.
@Suite(.serialized)
struct HLSDiscardTests {
    static func options(_ type: HLSSegmentType, _ playlist: HLSPlaylistKind) -> HLSOutputOptions {
        HLSOutputOptions(segmentDuration: 1, playlistType: playlist, segmentType: type)
    }

    @Test(arguments: HLSSegmentType.allCases)
    func vodDiscardLeavesNoFileOfTheRunAndTheEarlierOutputAsItWas(_ type: HLSSegmentType) throws {
        let folder = try ScratchFolder("discard-vod-\(type.rawValue)")
        defer { folder.remove() }
        let playlist = folder.path + "/v.m3u8"
        try "earlier\n".write(toFile: playlist, atomically: false, encoding: .utf8)
        let writer = try HLSWriter(playlistPath: playlist, options: Self.options(type, .vod), overwrite: true)
        try SyntheticStream.write(into: writer, seconds: 2.5, commit: false)
        #expect(writer.segments.count == 2)
        #expect(folder.files().filter { !$0.hasPrefix(".") } == ["v.m3u8"], "VOD publishes nothing before commit: \(folder.files())")
        writer.discard()
        writer.discard()
        #expect(folder.files() == ["v.m3u8"])
        #expect(try String(contentsOfFile: playlist, encoding: .utf8) == "earlier\n")
    }

    @Test(arguments: zip([HLSPlaylistKind.event, .live], [HLSSegmentType.ts, .fmp4]))
    func liveDiscardKeepsWhatWasPublishedAndEndsThePlaylist(_ kind: HLSPlaylistKind, _ type: HLSSegmentType) throws {
        let folder = try ScratchFolder("discard-\(kind.rawValue)-\(type.rawValue)")
        defer { folder.remove() }
        let playlist = folder.path + "/v.m3u8"
        let writer = try HLSWriter(playlistPath: playlist, options: Self.options(type, kind), overwrite: false)
        try SyntheticStream.write(into: writer, seconds: 2.5, commit: false)
        let before = try String(contentsOfFile: playlist, encoding: .utf8)
        #expect(!before.contains("#EXT-X-ENDLIST"))
        writer.discard()
        #expect(!folder.files().contains { $0.hasPrefix(".") }, "the half-written segment is removed: \(folder.files())")
        guard case let .media(media) = try PlaylistParser.parse(String(contentsOfFile: playlist, encoding: .utf8)) else {
            Issue.record("not a media playlist")
            return
        }
        #expect(media.endList, "players stop waiting")
        #expect(media.segments.map(\.uri) == writer.segments.map(\.uri))
        #expect(media.segments.count == 2)
        let published = Set(["v.m3u8"] + writer.segments.map(\.uri) + (type == .fmp4 ? ["v_init.mp4"] : []))
        #expect(Set(folder.files()) == published)
        let decode = try Tools.run("ffmpeg", ["-v", "error", "-i", playlist, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.stderr.isEmpty, "\(decode.stderr)")
    }

    @Test func liveDiscardBeforeTheFirstSegmentRemovesThePublishedInitSegment() throws {
        let folder = try ScratchFolder("discard-init")
        defer { folder.remove() }
        let writer = try HLSWriter(playlistPath: folder.path + "/v.m3u8", options: Self.options(.fmp4, .event), overwrite: false)
        try SyntheticStream.write(into: writer, seconds: 0.5, commit: false)
        #expect(folder.files().contains("v_init.mp4"), "event publishes the init segment at begin")
        writer.discard()
        #expect(folder.files().isEmpty, "\(folder.files())")
    }

    @Test func discardAfterCommitChangesNothing() throws {
        let folder = try ScratchFolder("discard-after")
        defer { folder.remove() }
        let writer = try HLSWriter(playlistPath: folder.path + "/v.m3u8", options: Self.options(.ts, .vod), overwrite: false)
        try SyntheticStream.write(into: writer, seconds: 2)
        let files = folder.files()
        #expect(files.count == 3, "\(files)")
        writer.discard()
        #expect(folder.files() == files)
    }
}

import Foundation
import HLS
import MediaIO
import Testing

/// Our parser against an independent one: the `m3u8` Python package (PyPI; globocom/m3u8), through
/// `scripts/m3u8-oracle.py`, on the LL-HLS examples, the RFC examples and playlists the ffmpeg CLI
/// writes. Counts, URIs, durations, byte ranges as written, keys, parts, Media Sequence Numbers and
/// the LL-HLS tags must agree. `LIVEFILTER_PLAYERS=1 scripts/install-deps.sh` installs m3u8.
@Suite(.serialized, .enabled(if: M3U8Oracle.available, "needs python3 with the m3u8 package: LIVEFILTER_PLAYERS=1 scripts/install-deps.sh"))
struct M3U8OracleTests {
    @Test func everyPlaylistReadsTheSameInBothParsers() throws {
        let folder = try ScratchFolder("m3u8-oracle")
        defer { folder.remove() }
        var texts = ["ll-spec": LowLatencyExamples.spec, "ll-delta": LowLatencyExamples.specDelta, "ll-apple": LowLatencyExamples.appleDemo,
                     "ll-byterange": LowLatencyExamples.byteRangeParts, "rfc-vod": RFCExamples.vod, "rfc-live": RFCExamples.live,
                     "rfc-encrypted": RFCExamples.encrypted, "mixed": M3U8Oracle.mixed]
        _ = FileManager.default.createFile(atPath: folder.path + "/key.bin", contents: Data(FFmpegPlaylistTests.key))
        try "https://keys.example.com/k\n\(folder.path)/key.bin\n00000000000000000000000000000abc\n"
            .write(toFile: folder.path + "/key.info", atomically: true, encoding: .utf8)
        for (name, options) in [("ffmpeg-key", ["-hls_key_info_file", folder.path + "/key.info"]),
                                ("ffmpeg-single-ts", ["-hls_flags", "single_file"]),
                                ("ffmpeg-single-fmp4", ["-hls_flags", "single_file", "-hls_segment_type", "fmp4"]),
                                ("ffmpeg-fmp4", ["-hls_segment_type", "fmp4", "-hls_flags", "discont_start+program_date_time"])] {
            texts[name] = try FFmpegPlaylistTests.ffmpeg(folder, name + ".m3u8", options).text
        }
        let paths = texts.keys.sorted().map { folder.path + "/" + $0 + ".txt" }
        for (name, path) in zip(texts.keys.sorted(), paths) { try texts[name]!.write(toFile: path, atomically: true, encoding: .utf8) }
        let oracle = try M3U8Oracle.read(paths)
        for (name, path) in zip(texts.keys.sorted(), paths) {
            let theirs = try #require(oracle[path], "m3u8 read \(name)")
            try M3U8Oracle.compare(try parseMedia(texts[name]!), theirs, name)
        }
    }
}

extension M3U8OracleTests {
    /// What our LL-HLS writer publishes — mid-run (the open segment's parts, the preload hint) and
    /// at the end — reads the same in the independent parser.
    @Test func livefiltersLowLatencyPlaylistsReadTheSame() throws {
        let folder = try ScratchFolder("m3u8-oracle-ll")
        defer { folder.remove() }
        let playlistPath = folder.path + "/ll.m3u8"
        let writer = try HLSWriter(playlistPath: playlistPath,
                                   options: HLSOutputOptions(segmentDuration: 2, playlistType: .event, segmentType: .fmp4, partDuration: 0.5),
                                   overwrite: false)
        let log = LowLatencyWriterTests.Publications(folder: folder.path)
        writer.onFilePublished = { log.published($0) }
        try SyntheticStream.write(into: writer, seconds: 5, lowDelay: true)
        let texts = log.events.compactMap(\.playlist)
        // Every third version, and the last: open parts, complete segments with parts, the end.
        let chosen = Array(texts.enumerated().filter { $0.offset % 3 == 1 }.map(\.element).prefix(5)) + [texts.last!]
        let paths = chosen.indices.map { folder.path + "/version\($0).txt" }
        for (text, path) in zip(chosen, paths) { try text.write(toFile: path, atomically: true, encoding: .utf8) }
        let oracle = try M3U8Oracle.read(paths)
        for (text, path) in zip(chosen, paths) {
            let theirs = try #require(oracle[path])
            try M3U8Oracle.compare(try parseMedia(text), theirs, (path as NSString).lastPathComponent + "\n" + text)
        }
    }
}

enum M3U8Oracle {
    static let available: Bool = (try? Tools.run("python3", ["-c", "import m3u8"]).status) == 0

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/m3u8-oracle.py").path

    /// Keys, a gap, a discontinuity, byte ranges without offsets, and a bit rate: RFC 8216's tags a client reads.
    static let mixed = """
        #EXTM3U
        #EXT-X-VERSION:4
        #EXT-X-TARGETDURATION:6
        #EXT-X-MEDIA-SEQUENCE:30
        #EXT-X-DISCONTINUITY-SEQUENCE:2
        #EXT-X-KEY:METHOD=AES-128,URI="https://k.example.com/1",IV=0x00000000000000000000000000000001
        #EXT-X-PROGRAM-DATE-TIME:2024-05-01T12:00:00.250Z
        #EXTINF:6.006,
        #EXT-X-BYTERANGE:75232@0
        main.ts
        #EXTINF:6.006,
        #EXT-X-BYTERANGE:82112
        main.ts
        #EXT-X-GAP
        #EXTINF:6.006,
        #EXT-X-BYTERANGE:69864
        main.ts
        #EXT-X-DISCONTINUITY
        #EXT-X-KEY:METHOD=NONE
        #EXT-X-BITRATE:1200
        #EXTINF:4.5,
        ad.ts
        #EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://k2",KEYFORMAT="com.apple.streamingkeydelivery",KEYFORMATVERSIONS="1"
        #EXTINF:5,
        main2.ts
        #EXT-X-ENDLIST

        """

    struct Playlist: Decodable {
        struct Control: Decodable {
            let can_block_reload: Bool, can_skip_until: Double?, can_skip_dateranges: Bool, hold_back: Double?, part_hold_back: Double?
        }
        struct Hint: Decodable { let type: String, uri: String, byterange_start: Int?, byterange_length: Int? }
        struct Report: Decodable { let uri: String, last_msn: Int?, last_part: Int? }
        struct Map: Decodable { let uri: String, byterange: String? }
        struct Key: Decodable { let method: String, uri: String?, iv: String?, keyformat: String?, keyformatversions: String? }
        struct Part: Decodable { let uri: String, duration: Double, byterange: String?, independent: Bool, gap: Bool }
        struct Segment: Decodable {
            let uri: String?, duration: Double?, byterange: String?, discontinuity: Bool, gap: Bool, key: Key?, parts: [Part]
            let program_date_time: String?
        }
        let target_duration: Int, media_sequence: Int, discontinuity_sequence: Int, version: Int?, endlist: Bool
        let part_target: Double?, server_control: Control?, skipped_segments: Int?, preload_hint: Hint?
        let rendition_reports: [Report], map: Map?, segments: [Segment]
    }

    static func read(_ paths: [String]) throws -> [String: Playlist] {
        let r = try Tools.run("python3", [script] + paths)
        guard r.status == 0 else { throw FFmpegPlaylistTests.ToolError.failed("m3u8-oracle.py: \(r.stderr)") }
        return try JSONDecoder().decode([String: Playlist].self, from: Data(r.stdout.utf8))
    }

    static func compare(_ ours: MediaPlaylist, _ theirs: Playlist, _ name: String) throws {
        let c = Comment(rawValue: name)
        #expect(ours.targetDuration == theirs.target_duration, c)
        #expect(ours.mediaSequence == theirs.media_sequence, c)
        #expect(ours.discontinuitySequence == theirs.discontinuity_sequence, c)
        #expect(ours.version == theirs.version, c)
        #expect(ours.endList == theirs.endlist, c)
        #expect(ours.partTarget == theirs.part_target, c)
        #expect(ours.skip?.skippedSegments == theirs.skipped_segments, c)
        #expect(ours.map?.uri == theirs.map?.uri && ours.map?.byteRange?.description == theirs.map?.byterange, c)
        if let control = theirs.server_control {
            #expect(ours.serverControl == ServerControl(canSkipUntil: control.can_skip_until, canSkipDateRanges: control.can_skip_dateranges,
                                                        holdBack: control.hold_back, partHoldBack: control.part_hold_back,
                                                        canBlockReload: control.can_block_reload), c)
        } else {
            #expect(ours.serverControl == nil, c)
        }
        // m3u8 keeps one preload hint (clients use the first of a TYPE) and every rendition report.
        #expect(ours.preloadHints.first.map { [$0.type.rawValue, $0.uri, "\($0.byteRangeStart ?? -1)", "\($0.byteRangeLength ?? -1)"] }
                == theirs.preload_hint.map { [$0.type, $0.uri, "\($0.byterange_start ?? -1)", "\($0.byterange_length ?? -1)"] }, c)
        #expect(ours.renditionReports == theirs.rendition_reports.map {
            RenditionReport(uri: $0.uri, lastMediaSequenceNumber: $0.last_msn, lastPartIndex: $0.last_part)
        }, c)

        // m3u8 keeps the parts after the last segment as a segment without URI.
        var segments = theirs.segments
        let trailing = segments.last?.uri == nil ? segments.removeLast().parts : []
        try #require(ours.segments.count == segments.count, c)
        let skipped = ours.skip?.skippedSegments ?? 0
        for (i, (mine, their)) in zip(ours.segments, segments).enumerated() {
            let at = Comment(rawValue: "\(name), segment \(i)")
            #expect(mine.uri == their.uri && mine.duration == their.duration, at)
            #expect(mine.byteRange?.description == their.byterange, at)
            #expect(mine.discontinuity == their.discontinuity && mine.gap == their.gap, at)
            #expect(ours.mediaSequenceNumber(ofSegmentAt: i) == theirs.media_sequence + skipped + i, at)
            // m3u8 knows one key per segment: the last EXT-X-KEY before it.
            if let key = their.key {
                let last = try #require(mine.keys.last, at)
                #expect(last.method.rawValue == key.method && last.uri == key.uri && last.keyFormat == key.keyformat, at)
                #expect(last.iv == key.iv.flatMap { InitializationVector(hexadecimal: $0) }, at)
                #expect(last.keyFormatVersions?.map(String.init).joined(separator: "/") == key.keyformatversions, at)
            } else {
                #expect(mine.keys.isEmpty, at)
            }
            #expect(mine.programDateTime == their.program_date_time.flatMap { HLSDate.parse($0) }, at)
            compare(mine.parts, their.parts, at)
        }
        compare(ours.segmentInProgress?.parts ?? [], trailing, Comment(rawValue: "\(name), segment in progress"))
    }

    static func compare(_ ours: [PartialSegment], _ theirs: [Playlist.Part], _ c: Comment) {
        #expect(ours.map(\.uri) == theirs.map(\.uri), c)
        #expect(ours.map(\.duration) == theirs.map(\.duration), c)
        #expect(ours.map { $0.byteRange?.description } == theirs.map(\.byterange), c)
        #expect(ours.map(\.independent) == theirs.map(\.independent) && ours.map(\.gap) == theirs.map(\.gap), c)
    }
}

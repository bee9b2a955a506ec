import Filters
import Foundation
import HLS
import MediaIO
import Testing

/// A fixed wall clock, so EXT-X-PROGRAM-DATE-TIME is predictable.
private let startDate = Date(timeIntervalSince1970: 1_714_564_800)

struct WriterCase: CustomTestStringConvertible, Sendable {
    var segmentType: HLSSegmentType
    var playlistType: HLSPlaylistKind
    var testDescription: String { "\(segmentType.rawValue) \(playlistType.rawValue)" }
}

/// Writes ~10 s through `HLSWriter` and checks the result with ffprobe/ffmpeg and the linter.
@Suite(.serialized)
struct HLSWriterTests {
    static let seconds = 10.0
    static let hlsTime = 2.0
    static let frameDuration = 1.0 / 30

    /// Reads the playlist the writer produced.
    func mediaPlaylist(_ path: String) throws -> MediaPlaylist {
        guard case let .media(p) = try PlaylistParser.parse(String(contentsOfFile: path, encoding: .utf8)) else {
            throw MediaError.invalidSettings("\(path) is not a media playlist")
        }
        return p
    }

    @Test(arguments: [WriterCase(segmentType: .ts, playlistType: .vod), WriterCase(segmentType: .fmp4, playlistType: .vod),
                      WriterCase(segmentType: .ts, playlistType: .event), WriterCase(segmentType: .fmp4, playlistType: .event)])
    func writesAPlayableRendition(_ c: WriterCase) throws {
        let folder = try ScratchFolder("\(c.segmentType)-\(c.playlistType)")
        defer { folder.remove() }
        let playlistPath = folder.path + "/video.m3u8"
        let writer = try HLSWriter(playlistPath: playlistPath,
                                   options: HLSOutputOptions(segmentDuration: Self.hlsTime, playlistType: c.playlistType,
                                                             segmentType: c.segmentType),
                                   overwrite: false, clock: { startDate })
        try SyntheticStream.write(into: writer, seconds: Self.seconds)
        #expect(writer.warnings.isEmpty, "\(writer.warnings)")

        // The playlist: what we wrote, and lint-clean under livefilter's publishing rules.
        let text = try String(contentsOfFile: playlistPath, encoding: .utf8)
        let lint = HLSLinter(profile: .livefilter).lint(text)
        #expect(lint.violations.isEmpty, "\(lint.violations)\n\(text)")
        let playlist = try mediaPlaylist(playlistPath)
        #expect(playlist.targetDuration == 2)
        #expect(playlist.version == (c.segmentType == .ts ? 3 : 6))
        #expect(playlist.endList)
        #expect(playlist.playlistType == (c.playlistType == .vod ? .vod : .event))
        #expect((playlist.map != nil) == (c.segmentType == .fmp4))
        #expect(playlist.segments.count == 5)
        #expect(playlist.segments.map(\.uri) == writer.segments.map(\.uri))
        if c.playlistType == .event {
            let dates = playlist.segments.compactMap(\.programDateTime)
            #expect(dates.count == 5)
            for (i, d) in dates.enumerated() {
                #expect(abs(d.timeIntervalSince(startDate) - Double(i) * Self.hlsTime) < 0.0015, "PDT = start + media time")
            }
        }

        // Segment durations: hls_time within one frame, except the last (shorter or equal).
        for (i, s) in playlist.segments.enumerated() {
            if i < playlist.segments.count - 1 {
                #expect(abs(s.duration - Self.hlsTime) <= Self.frameDuration + 1e-6, "segment \(i) lasts \(s.duration)")
            } else {
                #expect(s.duration <= Self.hlsTime + Self.frameDuration)
            }
        }
        #expect(writer.segments.allSatisfy { $0.startsWithKeyframe })

        // The whole playlist through ffmpeg's HLS demuxer: every frame, the right duration, audio too.
        let frames = try Tools.probe(["-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames", playlistPath])
        // The HLS demuxer lists each stream twice (once in its program): read the first line.
        #expect(frames.split(separator: "\n").first == "300", "\(frames)")
        let duration = Double(try Tools.probe(["-show_entries", "format=duration", playlistPath]).split(separator: "\n").first ?? "") ?? 0
        #expect(abs(duration - Self.seconds) <= Self.frameDuration + 1e-6, "duration \(duration)")
        let codecs = try Tools.probe(["-show_entries", "stream=codec_name", playlistPath])
        #expect(Set(codecs.split(separator: "\n")) == ["aac", "h264"])
        let decode = try Tools.run("ffmpeg", ["-v", "error", "-i", playlistPath, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.stderr.isEmpty, "\(decode.stderr)")

        // Each segment alone (fMP4: behind its init segment) starts with a keyframe and decodes cleanly.
        for s in playlist.segments {
            var path = folder.path + "/" + s.uri
            if let map = playlist.map {
                let joined = folder.path + "/joined-" + s.uri + ".mp4"
                let bytes = try Data(contentsOf: URL(fileURLWithPath: folder.path + "/" + map.uri))
                    + Data(contentsOf: URL(fileURLWithPath: path))
                try bytes.write(to: URL(fileURLWithPath: joined))
                path = joined
            }
            let first = try Tools.probe(["-select_streams", "v:0", "-show_frames", "-read_intervals", "%+#1",
                                         "-show_entries", "frame=key_frame,pict_type", path])
            #expect(first.hasPrefix("1\nI"), "\(s.uri) starts with \(first)")
            let alone = try Tools.run("ffmpeg", ["-v", "error", "-i", path, "-f", "null", "-"])
            #expect(alone.status == 0 && alone.stderr.isEmpty, "\(s.uri): \(alone.stderr)")
        }

        // Files: mode 0644, no temporary left behind.
        for name in folder.files() {
            #expect(!name.hasSuffix(".tmp"), "\(name) left behind")
            let attributes = try FileManager.default.attributesOfItem(atPath: folder.path + "/" + name)
            if !name.hasPrefix("joined-") { #expect((attributes[.posixPermissions] as? Int) == 0o644, "\(name)") }
        }
    }

    @Test func liveWindowSlidesAndOldSegmentsAreDeletedAfterTheGrace() throws {
        let folder = try ScratchFolder("live")
        defer { folder.remove() }
        let playlistPath = folder.path + "/live.m3u8"
        let options = HLSOutputOptions(segmentDuration: 1, playlistType: .live, listSize: 3, segmentType: .ts)
        let writer = try HLSWriter(playlistPath: playlistPath, options: options, overwrite: false, clock: { startDate })
        var mostSegmentFiles = 0
        var playlistsSeen = 0
        var lastSequence = -1
        try SyntheticStream.write(into: writer, seconds: Self.seconds) {
            let files = folder.files()
            mostSegmentFiles = max(mostSegmentFiles, files.filter { $0.hasPrefix("live_") }.count)
            // A player polling now sees a complete playlist whose window only moves forward.
            if let text = try? String(contentsOfFile: playlistPath, encoding: .utf8),
               let parsed = try? PlaylistParser.parse(text), case let .media(p) = parsed {
                playlistsSeen += 1
                #expect(p.segments.count <= 3)
                #expect(p.mediaSequence >= lastSequence)
                lastSequence = p.mediaSequence
                for s in p.segments { #expect(FileManager.default.fileExists(atPath: folder.path + "/" + s.uri)) }
            }
        }
        #expect(playlistsSeen > 0)
        // listSize (3) + grace (default listSize = 3) + the one being written.
        #expect(mostSegmentFiles <= 3 + 3 + 1, "\(mostSegmentFiles) segment files on disk at once")
        #expect(writer.segments.count == 10)

        let text = try String(contentsOfFile: playlistPath, encoding: .utf8)
        let lint = HLSLinter(profile: .livefilter).lint(text)
        #expect(lint.violations.isEmpty, "\(lint.violations)\n\(text)")
        let playlist = try mediaPlaylist(playlistPath)
        #expect(playlist.playlistType == nil)
        #expect(playlist.mediaSequence == 7)
        #expect(playlist.segments.map(\.uri) == ["live_00007.ts", "live_00008.ts", "live_00009.ts"])
        #expect(playlist.segments.allSatisfy { $0.programDateTime != nil })
        #expect(playlist.endList, "finish() ends a live playlist too")
        // Segments 0…3 left the window more than 3 segments ago: deleted. 4…6 are in their grace period.
        let remaining = folder.files().filter { $0.hasPrefix("live_") && $0.hasSuffix(".ts") }
        #expect(remaining == (4...9).map { String(format: "live_%05d.ts", $0) })
        // The window still plays.
        let frames = try Tools.probe(["-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames", playlistPath])
        #expect(frames.split(separator: "\n").first == "90", "\(frames)")
    }

    @Test(arguments: [H264Profile.baseline, .high])
    func masterPlaylistStatesMeasuredBandwidthAndRealCodecs(_ profile: H264Profile) throws {
        let folder = try ScratchFolder("master-\(profile)")
        defer { folder.remove() }
        var renditions: [HLSRendition] = []
        for type in HLSSegmentType.allCases {
            try FileManager.default.createDirectory(atPath: folder.path + "/" + type.rawValue, withIntermediateDirectories: true)
            let writer = try HLSWriter(playlistPath: folder.path + "/\(type.rawValue)/index.m3u8",
                                       options: HLSOutputOptions(segmentDuration: Self.hlsTime, segmentType: type), overwrite: false)
            // ultrafast turns CABAC and 8x8 transforms off, which makes x264 write Constrained Baseline
            // even when High is allowed; veryfast really uses High.
            try SyntheticStream.write(into: writer, seconds: Self.seconds, profile: profile,
                                      preset: profile == .high ? .veryfast : .ultrafast)
            renditions.append(writer.rendition(uri: "\(type.rawValue)/index.m3u8"))
        }
        let masterPath = folder.path + "/master.m3u8"
        let master = try MasterPlaylistWriter(path: masterPath, overwrite: false, publishesDuringRun: false)
        master.renditions = renditions
        try master.commit()
        let text = try String(contentsOfFile: masterPath, encoding: .utf8)
        let lint = HLSLinter(profile: .livefilter).lint(text)
        #expect(lint.violations.isEmpty, "\(lint.violations)\n\(text)")
        guard case let .master(master) = try PlaylistParser.parse(text) else { Issue.record("not a master playlist"); return }
        #expect(master.variants.count == 2)

        for variant in master.variants {
            let mediaPath = folder.path + "/" + variant.uri
            let media = try mediaPlaylist(mediaPath)
            let base = (mediaPath as NSString).deletingLastPathComponent
            // Peak segment bit rate from the files on disk and their EXTINF (a short last segment is noise).
            var rates: [Double] = []
            for (i, s) in media.segments.enumerated() {
                if i == media.segments.count - 1, i > 0, s.duration < Self.hlsTime / 2 { continue }
                let size = try FileManager.default.attributesOfItem(atPath: base + "/" + s.uri)[.size] as! Int
                rates.append(Double(size) * 8 / s.duration)
            }
            let peak = rates.max() ?? 0
            #expect(abs(Double(variant.bandwidth) - peak) <= 0.10 * peak, "BANDWIDTH \(variant.bandwidth) vs measured \(peak)")
            #expect((variant.averageBandwidth ?? 0) <= variant.bandwidth)
            #expect(variant.resolution == Resolution(width: 640, height: 360))
            #expect(variant.frameRate == 30)

            // CODECS against what ffprobe reads from the SPS.
            let codecs = variant.codecs?.split(separator: ",").map(String.init) ?? []
            #expect(codecs.count == 2 && codecs.last == "mp4a.40.2", "\(codecs)")
            let probed = try Tools.probe(["-select_streams", "v:0", "-show_entries", "stream=profile,level", mediaPath])
                .split(separator: "\n").map(String.init)
            let profileIDC = ["Constrained Baseline": 66, "Baseline": 66, "Main": 77, "High": 100][probed.first ?? ""]
            guard let avc = codecs.first.flatMap(CodecStrings.h264ProfileAndLevel) else {
                Issue.record("no avc1 codec in \(codecs)")
                continue
            }
            #expect(avc.profile == profileIDC, "\(codecs[0]) vs ffprobe \(probed)")
            #expect(avc.level == Int(probed.last ?? ""), "\(codecs[0]) vs ffprobe \(probed)")
            if profile == .baseline { #expect(avc.constraints & 0x40 != 0, "Constrained Baseline sets constraint_set1") }
            #expect(avc.profile == (profile == .baseline ? 66 : 100), "\(codecs[0]) for --profile \(profile)")
        }
        // The master plays through ffmpeg's HLS demuxer.
        let frames = try Tools.probe(["-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames", masterPath])
        #expect(frames.split(separator: "\n").first == "300")
    }

    @Test(.enabled(if: Tools.which("gst-discoverer-1.0") != nil,
                   "GStreamer is not installed here (gst-discoverer-1.0 missing): its check is skipped"))
    func gstreamerDiscoversThePlaylist() throws {
        let folder = try ScratchFolder("gst")
        defer { folder.remove() }
        let writer = try HLSWriter(playlistPath: folder.path + "/g.m3u8",
                                   options: HLSOutputOptions(segmentDuration: Self.hlsTime), overwrite: false)
        try SyntheticStream.write(into: writer, seconds: 4)
        let r = try Tools.run("gst-discoverer-1.0", ["file://" + folder.path + "/g.m3u8"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("video") || r.stdout.contains("H.264"), "\(r.stdout)")
    }

    @Test func refusesToOverwriteWithoutPermission() throws {
        let folder = try ScratchFolder("exists")
        defer { folder.remove() }
        let path = folder.path + "/x.m3u8"
        try "#EXTM3U\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: MediaError.outputExists(path)) {
            try HLSWriter(playlistPath: path, options: HLSOutputOptions(), overwrite: false)
        }
        #expect(throws: MediaError.outputFolderMissing(folder.path + "/nope")) {
            try HLSWriter(playlistPath: folder.path + "/nope/x.m3u8", options: HLSOutputOptions(), overwrite: false)
        }
        #expect(throws: MediaError.self) {
            try HLSWriter(playlistPath: path, options: HLSOutputOptions(segmentNamePattern: "seg.ts"), overwrite: true)
        }
    }

    @Test func fetchReadsFilesAndReportsMissingOnes() throws {
        let folder = try ScratchFolder("fetch")
        defer { folder.remove() }
        let path = folder.path + "/p.m3u8"
        try RFCExamples.vod.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try fetchText(path, timeout: .seconds(5), maxBytes: 1 << 20) == RFCExamples.vod)
        #expect(try fetchText("file:" + path, timeout: .seconds(5), maxBytes: 1 << 20) == RFCExamples.vod)
        #expect(throws: MediaError.inputNotFound(folder.path + "/missing.m3u8")) {
            try fetchText(folder.path + "/missing.m3u8", timeout: .seconds(5), maxBytes: 1 << 20)
        }
        #expect(throws: MediaError.self) { try fetchText(path, timeout: .seconds(5), maxBytes: 10) }
    }
}

import Foundation
import Testing

/// Short HLS inputs made by the ffmpeg CLI at test time: a lavfi test pattern and a tone at 30 fps,
/// H.264 with a keyframe every 30 frames and AAC, cut by ffmpeg's hls muxer into 1 s segments (each
/// starts on a keyframe). 4 s at 320x240 is about 200 kB and takes about 0.3 s to make.
enum SyntheticHLS {
    static let fps = 30
    /// One frame at `fps`, in seconds.
    static let frame = 1.0 / Double(fps)

    struct Clip: Sendable {
        var seconds = 4
        var size = "320x240"
        /// The lavfi video source: testsrc2, smptebars, …
        var pattern = "testsrc2"
        var tone = 440
        /// Added to every timestamp (`-output_ts_offset`), for timelines that do not start near 0.
        var offset: Double = 0

        var frames: Int { seconds * SyntheticHLS.fps }
    }

    /// How ffmpeg's hls muxer lays the segments out.
    enum Layout: String, Sendable, CaseIterable, CustomTestStringConvertible {
        /// `NAME-00.ts` …
        case ts
        /// `NAME-init.mp4` (EXT-X-MAP) and `NAME-00.m4s` …
        case fmp4
        /// One `NAME.ts`, each segment an EXT-X-BYTERANGE of it.
        case singleFileTS
        /// One `NAME.m4s`: the init section and each segment an EXT-X-BYTERANGE of it.
        case singleFileFMP4

        var testDescription: String { rawValue }

        var options: [String] {
            switch self {
            case .ts: []
            case .fmp4: ["-hls_segment_type", "fmp4"]
            case .singleFileTS: ["-hls_flags", "single_file"]
            case .singleFileFMP4: ["-hls_flags", "single_file", "-hls_segment_type", "fmp4"]
            }
        }
    }

    /// Encodes `clip` straight into HLS: `folder/NAME.m3u8` (VOD, ENDLIST) and its media, laid out
    /// as `layout` says. `extra` goes to ffmpeg before the output (keys, `-start_number`). Returns the
    /// playlist's file URL.
    @discardableResult
    static func make(_ clip: Clip = Clip(), _ layout: Layout = .ts, in folder: URL, name: String = "index",
                     extra: [String] = []) async throws -> URL {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let playlist = folder.appendingPathComponent(name + ".m3u8")
        var arguments = ["-f", "lavfi", "-i", "\(clip.pattern)=size=\(clip.size):rate=\(fps)",
                         "-f", "lavfi", "-i", "sine=frequency=\(clip.tone):sample_rate=48000", "-t", String(clip.seconds),
                         "-c:v", "libx264", "-preset", "veryfast", "-g", String(fps), "-keyint_min", String(fps), "-sc_threshold", "0",
                         "-c:a", "aac"]
        if clip.offset != 0 { arguments += ["-output_ts_offset", String(clip.offset)] }
        arguments += ["-f", "hls", "-hls_time", "1", "-hls_list_size", "0", "-hls_playlist_type", "vod"] + layout.options
        switch layout {
        case .ts: arguments += ["-hls_segment_filename", folder.appendingPathComponent(name + "-%02d.ts").path]
        case .fmp4: arguments += ["-hls_fmp4_init_filename", name + "-init.mp4",
                                  "-hls_segment_filename", folder.appendingPathComponent(name + "-%02d.m4s").path]
        case .singleFileTS, .singleFileFMP4: break  // the file is named after the playlist
        }
        try await ffmpeg(arguments + extra + [playlist.path])
        return playlist
    }

    /// A VOD media playlist: the header, `body` line by line (tags and URIs), ENDLIST.
    static func playlist(_ body: [String], version: Int = 3, sequence: Int = 0) -> String {
        (["#EXTM3U", "#EXT-X-VERSION:\(version)", "#EXT-X-TARGETDURATION:1", "#EXT-X-MEDIA-SEQUENCE:\(sequence)",
          "#EXT-X-PLAYLIST-TYPE:VOD"] + body + ["#EXT-X-ENDLIST"]).joined(separator: "\n") + "\n"
    }

    /// `#EXTINF:1.0,` and the URI, for each name.
    static func entries(_ names: [String]) -> [String] {
        names.flatMap { ["#EXTINF:1.000000,", $0] }
    }
}

/// What the HLS input tests measure of an output: ffprobe's counted video frames, the video and audio
/// streams' durations, the picture size, and the largest step between consecutive video timestamps
/// (from `-show_frames`: a hole or a jump in the timeline shows there).
struct OutputTimeline: Sendable, CustomStringConvertible {
    var frames: Int
    var videoSeconds: Double
    var audioSeconds: Double?
    var width: Int
    var height: Int
    var largestStep: Double

    static func measure(_ file: URL) async throws -> OutputTimeline {
        let info = try await FFprobe.probe(file, countFrames: true)
        let video = try #require(info.video, "no video stream in \(file.lastPathComponent)")
        let times = try await FFprobe.videoFrames(file).compactMap(\.time).sorted()
        let steps = zip(times.dropFirst(), times).map { $0 - $1 }
        return OutputTimeline(frames: video.readFrames ?? 0, videoSeconds: video.durationSeconds ?? 0,
                              audioSeconds: info.audio?.durationSeconds, width: video.width ?? 0, height: video.height ?? 0,
                              largestStep: steps.max() ?? 0)
    }

    var description: String {
        let audio = audioSeconds.map { String(format: "%.3f s", $0) } ?? "none"
        return "\(frames) frames, \(width)x\(height), video \(String(format: "%.3f", videoSeconds)) s, audio \(audio), "
            + "largest step \(String(format: "%.3f", largestStep)) s"
    }

    /// The whole input, continuous: `frames` frames (± one per boundary between joined clips), as
    /// long as they last at 30 fps (± one frame per boundary, + one), no step over two frames, and
    /// the audio as long as the video within 0.1 s.
    func expectWhole(frames expected: Int, boundaries: Int = 0, sourceLocation: SourceLocation = #_sourceLocation) {
        let frame = SyntheticHLS.frame
        let seconds = Double(expected) * frame
        #expect(abs(frames - expected) <= boundaries, "frames: expected \(expected) ± \(boundaries): \(self)",
                sourceLocation: sourceLocation)
        #expect(abs(videoSeconds - seconds) <= Double(boundaries + 1) * frame + 0.001,
                "video duration: expected \(seconds) s: \(self)", sourceLocation: sourceLocation)
        #expect(largestStep <= 2 * frame + 0.001, "a timestamp step over two frames: \(self)", sourceLocation: sourceLocation)
        #expect(abs((audioSeconds ?? 0) - seconds) <= 0.1, "audio duration: expected \(seconds) s: \(self)",
                sourceLocation: sourceLocation)
    }
}

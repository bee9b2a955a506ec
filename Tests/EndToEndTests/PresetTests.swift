import Foundation
import Testing

/// Export presets on the samples (landscape, portrait with a rotation tag, 4:3 without audio,
/// variable frame rate), checked with ffprobe and by where the white marker ends up.
extension EndToEnd {
    struct PresetCase: Sendable, CustomTestStringConvertible {
        var preset: String
        var sample: Sample
        var testDescription: String { "\(preset) on \(sample.rawValue)" }
    }

    static let presetCases: [PresetCase] = ["share-small", "compress-720p", "compact", "medium", "camera-back", "camera-front"]
        .flatMap { p in [Sample.landscape, .portraitRotated, .noAudio, .vfr].map { PresetCase(preset: p, sample: $0) } }

    /// Display size of each sample (portrait-rotated is shown 360x640).
    static func shownSize(_ sample: Sample) -> (width: Int, height: Int) {
        switch sample {
        case .portraitRotated: (360, 640)
        case .noAudio: (480, 360)
        default: (640, 360)
        }
    }

    /// The box a preset promises to fit the picture into (`livefilter presets`: "fit inside 512x288
    /// (16:9) or 480x360 (4:3)"), turned for a portrait picture, and the multiple its sides are
    /// rounded to; nil for the presets that keep these small sizes or only turn the picture.
    static func box(_ preset: String, shown: (width: Int, height: Int)) -> (width: Int, height: Int, multiple: Int)? {
        let wide = Double(max(shown.width, shown.height)) / Double(min(shown.width, shown.height)) > 1.55
        let landscape: (Int, Int, Int)
        switch preset {
        case "share-small": landscape = wide ? (512, 288, 16) : (480, 360, 16)
        case "medium": landscape = wide ? (568, 320, 2) : (480, 360, 2)
        default: return nil
        }
        return shown.height > shown.width ? (landscape.1, landscape.0, landscape.2) : landscape
    }

    /// The output's size against what the preset promises: inside its box, never enlarged, as large
    /// as the box allows (up to the rounding to its multiple), the picture's shape kept within that
    /// rounding; the presets without a box keep the size, the camera fixes turn it a quarter.
    static func expectSize(_ c: PresetCase, width: Int, height: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        let shown = shownSize(c.sample)
        let size = "\(width)x\(height) from \(shown.width)x\(shown.height)"
        switch c.preset {
        case "camera-back", "camera-front":
            // Pixels as stored, turned a quarter: the stored size swapped.
            let stored = c.sample == .portraitRotated ? (640, 360) : shown
            #expect(width == stored.1 && height == stored.0, "turned a quarter: \(size)", sourceLocation: sourceLocation)
            return
        default:
            break
        }
        guard let box = box(c.preset, shown: shown) else {
            #expect(width == shown.width && height == shown.height, "kept: \(size)", sourceLocation: sourceLocation)
            return
        }
        #expect(width <= box.width && height <= box.height, "inside \(box.width)x\(box.height): \(size)", sourceLocation: sourceLocation)
        #expect(width <= shown.width && height <= shown.height, "not enlarged: \(size)", sourceLocation: sourceLocation)
        #expect(width % box.multiple == 0 && height % box.multiple == 0, "multiples of \(box.multiple): \(size)",
                sourceLocation: sourceLocation)
        let reach = min(Double(box.width) / Double(shown.width), Double(box.height) / Double(shown.height), 1)
        let fitted = (Double(shown.width) * reach, Double(shown.height) * reach)
        #expect(Double(width) > fitted.0 - Double(box.multiple) && Double(height) > fitted.1 - Double(box.multiple),
                "as large as the box allows (\(Int(fitted.0))x\(Int(fitted.1)) before rounding): \(size)", sourceLocation: sourceLocation)
    }

    /// Where the white marker (top-left of the stored frame) must be in the output.
    static func expectedMarker(_ c: PresetCase) -> RGBPicture.Corner {
        switch c.preset {
        case "camera-back": .bottomLeft      // turned 270° clockwise
        case "camera-front": .topLeft        // turned 90° clockwise, then mirrored
        default: c.sample == .portraitRotated ? .bottomLeft : .topLeft  // upright, as ffmpeg's autorotate shows it
        }
    }

    @Test("presets", arguments: presetCases)
    func preset(_ c: PresetCase) async throws {
        let sandbox = try Sandbox("preset")
        defer { sandbox.remove() }
        let output = sandbox.file("out.mp4")
        let result = try await LiveFilter.run(["run", c.sample.url.path, "-o", output.path, "--preset", c.preset])
        try LiveFilter.requireSuccess(result)
        let info = try await FFprobe.probe(output)
        let video = try #require(info.video)
        Self.expectSize(c, width: try #require(video.width), height: try #require(video.height))
        #expect(video.displayMatrix == nil, "no rotation tag")
        #expect(video.rFrameRate == video.avgFrameRate, "constant rate: \(String(describing: video.rFrameRate)) vs \(String(describing: video.avgFrameRate))")
        #expect(try MP4Boxes.moovBeforeMdat(output), "faststart")

        let videoRate = Double(video.bitRateValue ?? 0)
        switch c.preset {
        case "share-small":
            #expect(video.profile == "Constrained Baseline" && video.level == 30)
            #expect(video.rFrameRate == "30/1")
            #expect(abs(videoRate - 725_000) / 725_000 <= 0.10, "video \(videoRate)")
            if c.sample.hasAudio {
                #expect(info.audio?.codecName == "aac" && info.audio?.channels == 1 && info.audio?.sampleRateValue == 44_100)
                #expect(abs(Double(info.audio?.bitRateValue ?? 0) - 64_000) / 64_000 <= 0.10)
            }
        case "compact":
            #expect(video.profile == "High" && video.level == 41)
            #expect(abs(videoRate - 768_000) / 768_000 <= 0.10, "video \(videoRate)")
            let keys = try await FFprobe.videoFrames(output).enumerated().filter { $0.element.isKey }.map(\.offset)
            #expect(keys == Array(stride(from: 0, to: keys.count * 30, by: 30)), "keyframes every 30 frames: \(keys)")
            if c.sample.hasAudio {
                #expect(info.audio?.sampleRateValue == 22_050)
                #expect(abs(Double(info.audio?.bitRateValue ?? 0) - 80_000) / 80_000 <= 0.10)
            }
        case "medium":
            #expect(abs(videoRate - 713_000) / 713_000 <= 0.10, "video \(videoRate)")
            if c.sample.hasAudio { #expect(info.audio?.channels == 1 && info.audio?.sampleRateValue == 44_100) }
        case "compress-720p":
            let source = try await FFprobe.probe(c.sample.url)
            let target = min(try await Self.videoBitRate(of: c.sample.url), 3_500_000)
            #expect(abs(videoRate - target) / target <= 0.10, "video \(videoRate) vs min(source, 3.5M) \(target)")
            if c.sample.hasAudio { #expect(info.audio?.codecName == "aac" && info.audio?.sampleRateValue == source.audio?.sampleRateValue) }
        default:
            break
        }
        if !c.sample.hasAudio { #expect(info.audio == nil) }

        let picture = try await RGBPicture.firstFrame(of: output)
        #expect(picture.isWhite(Self.expectedMarker(c)), "marker should be \(Self.expectedMarker(c)); white corners: \(picture.whiteCorners)")

        // Fixed-bitrate presets: the size estimate holds within 10%.
        if ["share-small", "compact", "medium"].contains(c.preset) {
            let estimate = try await LiveFilter.run(["estimate", c.sample.url.path, "--preset", c.preset])
            try LiveFilter.requireSuccess(estimate)
            let bytes = try #require(Double(estimate.stdoutText.split(separator: " ").first ?? ""))
            let actual = Double(try FileManager.default.attributesOfItem(atPath: output.path)[.size] as! NSNumber)
            #expect(abs(actual - bytes) / bytes <= 0.10, "estimate \(bytes) vs actual \(actual)")
        }
    }

    /// The video stream's bitrate from its packet sizes (ffprobe), whatever the container states.
    static func videoBitRate(of url: URL) async throws -> Double {
        let result = try await Subprocess.run(Paths.ffprobe, ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                              "packet=size", "-of", "csv=p=0", url.path])
        let bytes = result.stdoutText.split(separator: "\n").compactMap { Double($0) }.reduce(0, +)
        let duration = try await FFprobe.measuredVideoDuration(url)
        return bytes * 8 / duration
    }

    @Test("explicit options override a preset")
    func presetOverride() async throws {
        let sandbox = try Sandbox("preset-override")
        defer { sandbox.remove() }
        let output = sandbox.file("out.mp4")
        let result = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", output.path, "--preset", "share-small",
                                               "--profile", "main", "--audio-channels", "2", "--quiet"])
        try LiveFilter.requireSuccess(result)
        let info = try await FFprobe.probe(output)
        #expect(info.video?.profile == "Main")
        #expect(info.audio?.channels == 2 && info.audio?.sampleRateValue == 44_100)
        #expect(info.video?.width == 512)
    }
}

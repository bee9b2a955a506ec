import Filters
import Foundation
import MediaIO
import Pipeline
import Testing

/// The plan decides the video path and the run takes it: every picture of a run goes the way the
/// plan (and the summary) says, with no silent change of path. Real decodes of the bundled clips.
struct VideoPathTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var sample: String
        var chain: String
        var exactRGB = false
        var testDescription: String { "\(sample): \(chain.isEmpty ? "(empty)" : chain)\(exactRGB ? " --exact-rgb" : "")" }
    }

    @Test(arguments: [
        Case(sample: "landscape.mp4", chain: ""),
        Case(sample: "landscape.mp4", chain: "blur 3 | rotate 90"),
        Case(sample: "landscape.mp4", chain: "scale 321x181"),
        Case(sample: "landscape.mp4", chain: "crop 101x61+3+5"),
        Case(sample: "landscape.mp4", chain: "text \"{frame}\" | mirror"),
        Case(sample: "landscape.mp4", chain: "rotate 12.5"),
        Case(sample: "landscape.mp4", chain: "mirror", exactRGB: true),
        Case(sample: "odd-size.mp4", chain: ""),
        Case(sample: "odd-size.mp4", chain: "mirror"),
        Case(sample: "portrait-rotated.mp4", chain: "scale fit=320x320"),
        Case(sample: "transport.ts", chain: "grayscale | blur 2"),
        Case(sample: "vfr.mkv", chain: "pixelate 8"),
    ])
    func everyPictureTakesThePlannedPath(_ c: Case) async throws {
        var config = JobConfiguration(input: LibraryAPITests.root.appendingPathComponent("samples/\(c.sample)").path, output: "null",
                                      chain: try FilterChain(parsing: c.chain))
        config.exactRGB = c.exactRGB
        config.maxDuration = 1
        let session = ExportSession(config)
        let planned = try await session.open().plan.videoPath
        let summary = try await session.run()
        #expect(summary.framesFiltered + (planned == .passthrough ? summary.framesWritten : 0) > 0)
        #expect(summary.videoPaths.count == 1, "\(summary.videoPaths)")
        #expect(summary.videoPaths.first?.path == summary.videoPath)
        #expect(summary.videoPath == JobSummaryPath(planned).value, "the summary reports the plan's path")
    }
}

/// The summary's name for a planned path (the mapping is the library's own; this one is written out).
private struct JobSummaryPath {
    let value: JobSummary.VideoPath
    init(_ path: VideoPath) {
        value = switch path {
        case .passthrough: .passthrough
        case .planar: .planar
        case .rgbChain: .rgbChain
        }
    }
}

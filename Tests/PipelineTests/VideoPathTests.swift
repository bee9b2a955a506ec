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

/// The planner's question and the renderer's answer are one: for every filter of the catalog's kind,
/// on streams of each matrix and range, `supports` is true exactly when the renderer can be built.
struct PlanarPredicateTests {
    static let chains = ["", "mirror", "rotate 90 | blur 3", "grayscale", "grayscale bt601", "eq contrast=1.2", "invert",
                         "pixelate 8", "pixelate 7", "boxblur 2", "sharpen", "fade in=0,1", "text \"{frame}\"", "crop 100x60+2+4",
                         "crop 101x61+3+5", "scale 320x180", "scale 321x181", "rotate 12.5", "blur 4 | scale fit=160x160",
                         "blur sigma=4 region=10,10,64,64", "grayscale | eq brightness=0.1"]

    @Test(arguments: [YUVMatrix.bt709, .bt601], [YUVRange.limited, .full])
    func supportsIsWhetherTheRendererBuilds(_ matrix: YUVMatrix, _ range: YUVRange) throws {
        let color = YUVConverter(matrix: matrix, range: .limited)
        for text in Self.chains {
            let chain = try FilterChain(parsing: text)
            for size in [FrameSize(640, 360), FrameSize(642, 362), FrameSize(639, 360)] {
                let built = PlanarChainRenderer(chain: chain, inputSize: size, color: color, inputRange: range) != nil
                #expect(PlanarChainRenderer.supports(chain, inputSize: size, color: color, inputRange: range) == built,
                        "\(text.isEmpty ? "(empty)" : text) at \(size), \(matrix) \(range): built \(built)")
            }
        }
    }
}

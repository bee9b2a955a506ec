import Foundation
import Testing

extension EndToEnd {
    /// Compares the four corner colours of two pictures of the same size (tolerance for compression).
    private func expectSameCorners(_ ours: RGBPicture, _ reference: RGBPicture, tolerance: Double = 40,
                                   sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(ours.width == reference.width && ours.height == reference.height,
                "size \(ours.width)x\(ours.height) vs reference \(reference.width)x\(reference.height)",
                sourceLocation: sourceLocation)
        guard ours.width == reference.width, ours.height == reference.height else { return }
        for corner in RGBPicture.Corner.allCases {
            let a = ours.meanColour(corner), b = reference.meanColour(corner)
            #expect(colourDistance(a, b) <= tolerance, "\(corner): ours \(a.map(Int.init)) vs reference \(b.map(Int.init))",
                    sourceLocation: sourceLocation)
        }
        #expect(ours.whiteCorners == reference.whiteCorners, "marker corner", sourceLocation: sourceLocation)
    }

    /// Default `--orientation auto`: the display matrix is applied to the pixels exactly as ffmpeg's
    /// autorotate does (marker ends bottom-left, 360x640) and the output carries no matrix.
    @Test("auto orientation matches ffmpeg's autorotate")
    func autoOrientation() async throws {
        let sandbox = try Sandbox("orient")
        defer { sandbox.remove() }
        let output = sandbox.file("out.mp4")
        let result = try await LiveFilter.run(["run", Sample.portraitRotated.url.path, "-o", output.path, "--quiet"])
        try LiveFilter.requireSuccess(result)

        let reference = try await RGBPicture.firstFrame(of: Sample.portraitRotated.url)  // ffmpeg autorotates
        #expect(reference.width == 360 && reference.height == 640)
        #expect(reference.whiteCorners == [.bottomLeft], "sample/ffmpeg assumption: marker bottom-left after autorotate")

        let video = try #require(try await FFprobe.probe(output).video)
        #expect(video.displayMatrix == nil)
        let ours = try await RGBPicture.firstFrame(of: output)
        expectSameCorners(ours, reference)
    }

    /// `--orientation keep`: stored pixels and stored size (640x360), marker still top-left, and the
    /// input's display matrix copied unchanged.
    @Test("--orientation keep keeps the stored frame")
    func keepOrientation() async throws {
        let sandbox = try Sandbox("keep")
        defer { sandbox.remove() }
        let output = sandbox.file("out.mp4")
        let result = try await LiveFilter.run([
            "run", Sample.portraitRotated.url.path, "-o", output.path, "--orientation", "keep", "--quiet",
        ])
        try LiveFilter.requireSuccess(result)
        let video = try #require(try await FFprobe.probe(output).video)
        #expect(video.width == 640 && video.height == 360)
        // The tag is the input's, so a player turns the output exactly as it turns the input.
        let source = try #require(try await FFprobe.probe(Sample.portraitRotated.url).video)
        #expect(source.rotation != 0 && video.rotation == source.rotation,
                "rotation tag \(video.rotation), input's \(source.rotation)")
        let shownOutput = try await RGBPicture.firstFrame(of: output)
        let shownInput = try await RGBPicture.firstFrame(of: Sample.portraitRotated.url)
        #expect(shownOutput.width == shownInput.width && shownOutput.whiteCorners == shownInput.whiteCorners)
        // The stored pixels (ignoring any matrix the output may carry): marker where it was stored.
        let stored = try await RGBPicture.firstFrame(of: output, autorotate: false)
        #expect(stored.whiteCorners == [.topLeft])
    }

    /// Filters that move pixels, compared with libavfilter doing the same on the same input.
    @Test("geometry filters match libavfilter", arguments: [
        ("mirror", "hflip"),
        ("mirror horizontal", "hflip"),
        ("mirror vertical", "vflip"),
        // Positive angles turn clockwise, as in ffmpeg's transpose=clock and ImageMagick's -rotate 90.
        ("rotate 90", "transpose=clock"),
        ("rotate -90", "transpose=cclock"),
        ("rotate 180", "hflip,vflip"),
    ])
    func geometryMatchesFFmpeg(chain: String, reference filter: String) async throws {
        let sandbox = try Sandbox("geometry")
        defer { sandbox.remove() }
        let output = sandbox.file("out.mp4")
        let result = try await LiveFilter.run([
            "run", Sample.landscape.url.path, "-o", output.path, "--chain", chain, "--quiet",
        ])
        try LiveFilter.requireSuccess(result)
        let reference = try await RGBPicture.firstFrame(of: Sample.landscape.url, filter: filter)
        let ours = try await RGBPicture.firstFrame(of: output)
        #expect(reference.whiteCorners.count == 1)
        expectSameCorners(ours, reference)
    }
}

import Foundation
import Testing

extension EndToEnd {
    /// The output container follows the extension; every one holds H.264 (and AAC when there is audio).
    @Test("output containers by extension", arguments: [
        ("mov", "mov"), ("mkv", "matroska"), ("ts", "mpegts"), ("mp4", "mp4"),
    ])
    func containers(extension ext: String, formatNameContains expected: String) async throws {
        let sandbox = try Sandbox("container")
        defer { sandbox.remove() }
        let output = sandbox.file("out.\(ext)")
        let result = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", output.path, "--quiet"])
        try LiveFilter.requireSuccess(result)

        let probed = try await FFprobe.probe(output, countFrames: true)
        #expect(probed.format?.formatName?.contains(expected) == true, "format \(String(describing: probed.format?.formatName))")
        #expect(probed.video?.codecName == "h264")
        #expect(probed.video?.readFrames == 150)
        #expect(probed.audio?.codecName == "aac")
        #expect(try sandbox.contents() == ["out.\(ext)"])
    }

    /// `dir/%05d.png` writes one numbered PNG per frame.
    @Test("image sequence output")
    func imageSequence() async throws {
        let sandbox = try Sandbox("png")
        defer { sandbox.remove() }
        let frames = sandbox.file("frames")
        try FileManager.default.createDirectory(at: frames, withIntermediateDirectories: true)
        let result = try await LiveFilter.run([
            "run", Sample.noAudio.url.path, "-o", frames.appendingPathComponent("%05d.png").path, "--quiet",
        ])
        try LiveFilter.requireSuccess(result)

        let sourceFrames = try #require(try await FFprobe.probe(Sample.noAudio.url, countFrames: true).video?.readFrames)
        let names = try sandbox.contents(of: "frames")
        #expect(names.count == sourceFrames, "\(names.count) files for \(sourceFrames) frames")
        #expect(names.allSatisfy { $0.count == 9 && $0.hasSuffix(".png") && Int($0.prefix(5)) != nil },
                "names: \(names.prefix(3))…")
        let first = try #require(names.first)
        let png = try #require(try await FFprobe.probe(frames.appendingPathComponent(first)).video)
        #expect(png.codecName == "png")
        #expect(png.width == 480 && png.height == 360)
    }
}

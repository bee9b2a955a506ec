import Foundation
import Testing

extension EndToEnd {
    /// `--fps 15` on a constant 30 fps clip drops every other frame and keeps the duration.
    @Test("--fps 15 halves a 30 fps clip")
    func halveFrameRate() async throws {
        let sandbox = try Sandbox("fps")
        defer { sandbox.remove() }
        let output = sandbox.file("out.mp4")
        let result = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", output.path, "--fps", "15", "--quiet"])
        try LiveFilter.requireSuccess(result)

        let sourceFrames = try #require(try await FFprobe.probe(Sample.landscape.url, countFrames: true).video?.readFrames)
        let video = try #require(try await FFprobe.probe(output, countFrames: true).video)
        let frames = try #require(video.readFrames)
        #expect(abs(frames - sourceFrames / 2) <= 1, "frames: \(frames), source \(sourceFrames)")
        #expect(video.rFrameRate == "15/1")

        let sourceDuration = try await FFprobe.measuredVideoDuration(Sample.landscape.url)
        let duration = try await FFprobe.measuredVideoDuration(output)
        #expect(abs(duration - sourceDuration) <= 1.0 / 15 + 0.002, "duration \(duration) vs source \(sourceDuration)")
    }

    /// `--fps 15` on variable-rate input gives a constant-rate output.
    @Test("--fps 15 on VFR input gives constant 15 fps")
    func vfrToConstant() async throws {
        let sandbox = try Sandbox("vfr")
        defer { sandbox.remove() }
        let output = sandbox.file("out.mp4")
        let result = try await LiveFilter.run(["run", Sample.vfr.url.path, "-o", output.path, "--fps", "15", "--quiet"])
        try LiveFilter.requireSuccess(result)

        let video = try #require(try await FFprobe.probe(output).video)
        #expect(video.rFrameRate == "15/1")
        #expect(video.avgFrameRate == "15/1")
        // And frame by frame: every gap is 1/15 s.
        let times = try await FFprobe.videoFrames(output).compactMap(\.time).sorted()
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(!gaps.isEmpty)
        #expect(gaps.allSatisfy { abs($0 - 1.0 / 15) < 0.002 }, "gaps: \(Set(gaps.map { ($0 * 1000).rounded() }).sorted()) ms")

        let sourceDuration = try await FFprobe.measuredVideoDuration(Sample.vfr.url)
        let duration = try await FFprobe.measuredVideoDuration(output)
        #expect(abs(duration - sourceDuration) <= 0.134 + 0.002, "duration \(duration) vs source \(sourceDuration)")
    }

    /// NTSC-style rational rates are accepted.
    @Test("--fps 30000/1001")
    func rationalFrameRate() async throws {
        let sandbox = try Sandbox("ntsc")
        defer { sandbox.remove() }
        let output = sandbox.file("out.mp4")
        let result = try await LiveFilter.run([
            "run", Sample.landscape.url.path, "-o", output.path, "--fps", "30000/1001", "--quiet",
        ])
        try LiveFilter.requireSuccess(result)
        let video = try #require(try await FFprobe.probe(output).video)
        #expect(video.rFrameRate == "30000/1001")
    }
}

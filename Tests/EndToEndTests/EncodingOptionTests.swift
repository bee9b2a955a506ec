import Foundation
import Testing

extension EndToEnd {
    /// Encodes landscape.mp4 with `options` into `sandbox` and returns the output file.
    private func encode(_ options: [String], in sandbox: Sandbox, name: String = "out.mp4",
                        sourceLocation: SourceLocation = #_sourceLocation) async throws -> URL {
        let output = sandbox.file(name)
        let sample = Sample.landscape
        let result = try await LiveFilter.run(["run", sample.url.path, "-o", output.path, "--quiet"] + options,
                                              sourceLocation: sourceLocation)
        try LiveFilter.requireSuccess(result, sourceLocation: sourceLocation)
        return output
    }

    /// ABR: the video stream's bitrate lands within ±25% of the target on a 5 s clip.
    @Test("--video-bitrate 500k")
    func videoBitrate() async throws {
        let sandbox = try Sandbox("encode")
        defer { sandbox.remove() }
        let output = try await encode(["--video-bitrate", "500k"], in: sandbox)
        let video = try #require(try await FFprobe.probe(output).video)
        let bitRate = try #require(video.bitRateValue)
        #expect((375_000...625_000).contains(bitRate), "video bit_rate \(bitRate)")
    }

    /// CRF: lower CRF means a bigger file.
    @Test("--crf orders file sizes")
    func crf() async throws {
        let sandbox = try Sandbox("encode")
        defer { sandbox.remove() }
        let good = try await encode(["--crf", "18", "--no-audio"], in: sandbox, name: "crf18.mp4")
        let poor = try await encode(["--crf", "35", "--no-audio"], in: sandbox, name: "crf35.mp4")
        let goodSize = try FileManager.default.attributesOfItem(atPath: good.path)[.size] as? Int ?? 0
        let poorSize = try FileManager.default.attributesOfItem(atPath: poor.path)[.size] as? Int ?? 0
        #expect(goodSize > poorSize, "crf 18: \(goodSize) bytes, crf 35: \(poorSize) bytes")
    }

    @Test("--profile", arguments: [("baseline", "Constrained Baseline"), ("main", "Main"), ("high", "High")])
    func profile(option: String, expected: String) async throws {
        let sandbox = try Sandbox("encode")
        defer { sandbox.remove() }
        let output = try await encode(["--profile", option], in: sandbox)
        #expect(try await FFprobe.probe(output).video?.profile == expected)
    }

    /// A fixed keyframe cadence: key frames exactly at multiples of the interval (no scene cuts).
    @Test("--keyframe-interval", arguments: [("1s", 30), ("60", 60), ("2s", 60)])
    func keyframeInterval(option: String, every frames: Int) async throws {
        let sandbox = try Sandbox("encode")
        defer { sandbox.remove() }
        let output = try await encode(["--keyframe-interval", option], in: sandbox)
        let keyIndices = try await FFprobe.videoFrames(output).enumerated().filter { $0.element.isKey }.map(\.offset)
        let expected = Array(stride(from: 0, to: 150, by: frames))
        #expect(keyIndices == expected)
    }

    /// Rate control with a VBV cap still produces a decodable H.264 stream of the right length.
    @Test("--maxrate and --bufsize with --crf")
    func maxrate() async throws {
        let sandbox = try Sandbox("encode")
        defer { sandbox.remove() }
        let output = try await encode(["--crf", "23", "--maxrate", "800k", "--bufsize", "1600k",
                                            "--encoder-preset", "veryfast"], in: sandbox)
        let video = try #require(try await FFprobe.probe(output, countFrames: true).video)
        #expect(video.codecName == "h264")
        #expect(video.readFrames == 150)
        #expect((video.bitRateValue ?? .max) <= 800_000 * 5 / 4)
    }
}

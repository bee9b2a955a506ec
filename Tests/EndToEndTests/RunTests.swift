import Foundation
import Testing

extension EndToEnd {
    /// The main job on every sample: filter, re-encode to H.264 Main 3.1 in MP4, and check the result
    /// against the source.
    @Test("run with a chain on every sample", arguments: Sample.allCases)
    func runOnEverySample(sample: Sample) async throws {
        let sandbox = try Sandbox("run")
        defer { sandbox.remove() }
        let output = sandbox.file("out.mp4")
        let result = try await LiveFilter.run([
            "run", sample.url.path, "-o", output.path,
            "--chain", "blur sigma=2 | mirror", "--profile", "main", "--level", "3.1", "--quiet",
        ])
        try LiveFilter.requireSuccess(result)

        let source = try await FFprobe.probe(sample.url, countFrames: true)
        let probed = try await FFprobe.probe(output, countFrames: true)
        let sourceVideo = try #require(source.video)
        let video = try #require(probed.video, "no video stream in output")

        #expect(video.codecName == "h264")
        #expect(video.profile == "Main")
        #expect(video.level == 31)
        #expect(video.pixFmt == "yuv420p")
        #expect(video.displayMatrix == nil, "output must not carry a display matrix (pixels are already rotated)")

        // Size: as displayed (rotation applied), odd sizes rounded to even.
        let shown = try #require(sourceVideo.displaySize)
        expectEvenRounded(video.width, from: shown.width, "width")
        expectEvenRounded(video.height, from: shown.height, "height")

        // Timing.
        let sourceDuration = try await FFprobe.measuredVideoDuration(sample.url)
        let duration = try await FFprobe.measuredVideoDuration(output)
        if sample.isConstantRate {
            let sourceFrames = try #require(sourceVideo.readFrames)
            #expect(video.readFrames == sourceFrames, "frame count: source \(sourceFrames), output \(String(describing: video.readFrames))")
            let oneFrame = 1 / sample.nominalFPS
            #expect(abs(duration - sourceDuration) <= oneFrame + 0.002,
                    "duration \(duration) vs source \(sourceDuration)")
        } else {
            // Variable rate: no frame-count rule; the duration must hold within the longest gap (133 ms).
            #expect((video.readFrames ?? 0) > 0)
            #expect(abs(duration - sourceDuration) <= 0.134 + 0.002,
                    "duration \(duration) vs source \(sourceDuration)")
        }

        // Audio: kept (AAC) when the source had it, absent when not.
        if sample.hasAudio {
            let audio = try #require(probed.audio, "source has audio but output has none")
            #expect(audio.codecName == "aac")
            #expect(probed.audioStreams.count == source.audioStreams.count)
        } else {
            #expect(probed.audio == nil)
        }

        #expect(try MP4Boxes.moovBeforeMdat(output), "mp4 output should be faststart (moov before mdat)")
        #expect(try sandbox.contents() == ["out.mp4"], "no stray files next to the output")
    }

    /// With no options, AAC audio is copied, so its sample rate and channel count are the source's.
    @Test("AAC audio is copied by default", arguments: [Sample.landscape, .oddSize])
    func audioCopied(sample: Sample) async throws {
        let sandbox = try Sandbox("audio")
        defer { sandbox.remove() }
        let output = sandbox.file("out.mp4")
        let result = try await LiveFilter.run(["run", sample.url.path, "-o", output.path, "--quiet"])
        try LiveFilter.requireSuccess(result)
        let source = try #require(try await FFprobe.probe(sample.url).audio)
        let audio = try #require(try await FFprobe.probe(output).audio)
        #expect(audio.codecName == "aac")
        #expect(audio.sampleRate == source.sampleRate)
        #expect(audio.channels == source.channels)
    }

    /// Audio options re-encode to AAC with the requested parameters; `--no-audio` drops it.
    @Test("audio options")
    func audioOptions() async throws {
        let sandbox = try Sandbox("audio-options")
        defer { sandbox.remove() }
        let resampled = sandbox.file("resampled.mp4")
        let result = try await LiveFilter.run([
            "run", Sample.oddSize.url.path, "-o", resampled.path,
            "--audio-rate", "48000", "--audio-channels", "2", "--audio-bitrate", "128k", "--quiet",
        ])
        try LiveFilter.requireSuccess(result)
        let audio = try #require(try await FFprobe.probe(resampled).audio)
        #expect(audio.codecName == "aac")
        #expect(audio.sampleRateValue == 48000)
        #expect(audio.channels == 2)

        let silent = sandbox.file("silent.mp4")
        let noAudio = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", silent.path, "--no-audio", "--quiet"])
        try LiveFilter.requireSuccess(noAudio)
        #expect(try await FFprobe.probe(silent).audio == nil)
    }
}

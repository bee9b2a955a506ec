import Foundation
import Testing

extension EndToEnd {
    /// Audio follows the ticked video timeline: over a 10-minute run at a new frame rate, audio and
    /// video start together and end within one video frame of each other.
    @Test("A/V stay within one frame over 10 minutes on the tick clock")
    func audioVideoSyncOverTenMinutes() async throws {
        let sandbox = try Sandbox("sync")
        defer { sandbox.remove() }
        let source = sandbox.file("long.mp4")
        // 10 minutes, tiny picture: cheap to make and to process. Audio is a 1 kHz tone, 30 fps video.
        try await ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000",
                          "-t", "600", "-c:v", "libx264", "-preset", "ultrafast", "-g", "300", "-c:a", "aac", "-b:a", "64k",
                          "-shortest", source.path], timeout: .seconds(300))
        let output = sandbox.file("out.mp4")
        let result = try await LiveFilter.run(["run", source.path, "-o", output.path, "--fps", "25", "--chain", "mirror",
                                               "--audio-bitrate", "64k", "--encoder-preset", "ultrafast", "--quiet"],
                                              timeout: .seconds(600))
        try LiveFilter.requireSuccess(result)
        let info = try await FFprobe.probe(output)
        let video = try #require(info.video), audio = try #require(info.audio)
        let videoEnd = (video.startSeconds ?? 0) + (video.durationSeconds ?? 0)
        let audioEnd = (audio.startSeconds ?? 0) + (audio.durationSeconds ?? 0)
        #expect(abs((video.startSeconds ?? 0) - (audio.startSeconds ?? 0)) <= 1.0 / 25, "starts \(String(describing: video.startSeconds)) / \(String(describing: audio.startSeconds))")
        #expect(abs(videoEnd - audioEnd) <= 1.0 / 25 + 0.025, "ends: video \(videoEnd) s, audio \(audioEnd) s")
        #expect(abs(videoEnd - 600) <= 1.0 / 25 + 0.001, "video lasts the input's 600 s: \(videoEnd)")
    }
}

import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEnd {
    /// Ctrl-C mid-run: exit 130, the output is a finished, playable MP4 holding what was done so far,
    /// and nothing temporary is left next to it.
    @Test("SIGINT finishes a playable partial output and exits 130")
    func interrupt() async throws {
        let sandbox = try Sandbox("sigint")
        defer { sandbox.remove() }
        // A long, heavy input: 20 s of 1280x720 at 30 fps (ultrafast, so making it is quick).
        let input = sandbox.file("long.mp4")
        try await ffmpeg([
            "-f", "lavfi", "-i", "testsrc2=s=1280x720:r=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
            "-t", "20", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", input.path,
        ], timeout: .seconds(180))
        let outDir = sandbox.file("out")
        try FileManager.default.createDirectory(at: outDir, withIntermediateDirectories: true)
        let output = outDir.appendingPathComponent("partial.mp4")

        let child = try LiveFilter.start(["run", input.path, "-o", output.path, "--chain", "blur sigma=30", "--quiet",
                                          "--progress", "json"])
        defer { child.send(SIGKILL) }  // only if the test stopped before the child exited
        // Interrupted once it has written frames (its progress says so), whenever that is on a busy machine.
        let before = try await LiveFilter.progress(of: child, "frames written") { $0.framesWritten > 0 }
        #expect(child.isRunning, "the run finished before it could be interrupted; make the input longer")
        child.send(SIGINT)
        let result = await child.wait(timeout: .seconds(60))

        #expect(result.exitedNormally && !result.timedOut, "\(result.summary)")
        #expect(result.status == ExitCode.interrupted.rawValue, "\(result.summary)")
        #expect(!result.stderrText.contains("Fatal error"))

        // Playable: probes, decodes without errors, and holds at least what was written before the signal.
        let probed = try await FFprobe.probe(output, countFrames: true)
        let video = try #require(probed.video)
        #expect(video.codecName == "h264")
        #expect((video.readFrames ?? 0) >= before.framesWritten,
                "the output keeps what was written before the signal: \(before.framesWritten) frames, now \(video.readFrames ?? 0)")
        let decode = try await Subprocess.run(Paths.ffmpeg, ["-v", "error", "-nostdin", "-i", output.path, "-f", "null", "-"])
        #expect(decode.succeeded, "\(decode.summary)")
        #expect(decode.stderrText.isEmpty, "decode errors: \(decode.stderrText)")
        // Partial: shorter than the input.
        #expect((probed.format?.durationSeconds ?? 20) < 19.5)

        #expect(try sandbox.contents(of: "out") == ["partial.mp4"], "temporary files left behind")
    }
}

import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEnd.ChannelTests {
    /// Stopping is always possible: a channel whose listener waits for its first publisher stops at
    /// SIGINT or SIGTERM within a second (before: SIGINT was not answered, the open could not be
    /// cancelled), with the interrupted run's exit code and message, and leaves nothing behind.
    @Test("channel: SIGINT or SIGTERM while the listener waits for its first publisher stops it within 1.5 s",
          .timeLimit(.minutes(1)),
          arguments: [(Push.rtmp, SIGINT), (Push.srt, SIGINT), (Push.rtmp, SIGTERM), (Push.srt, SIGTERM)])
    func stopWhileWaitingForPublisher(push: Push, signal: Int32) async throws {
        let sandbox = try Sandbox("stop-waiting-\(push.rawValue)-\(signal)")
        defer { sandbox.remove() }
        let port = try Self.freePort()
        let output = sandbox.file("out/index.m3u8")
        // Returns once the channel says it waits (and half a second more: its listener is up).
        let channel = try await Self.startChannel(["run"] + push.endpoints(port: port).input
                                                  + ["-o", output.path, "--on-input-loss", "hold", "-y"])
        defer { channel.send(SIGKILL) }  // only if the test stopped before the channel exited
        #expect(channel.isRunning, "the channel ended before it was stopped")

        let sent = ContinuousClock.now
        channel.send(signal)
        let result = await channel.wait(timeout: .seconds(10))
        let took = ContinuousClock.now - sent

        #expect(!result.timedOut, "not exited 10 s after the signal: \(result.summary)")
        #expect(took < .milliseconds(1500), "exited \(took) after the signal")
        #expect(result.exitedNormally, "killed by the signal instead of stopping: \(result.summary)")
        #expect(result.status == (signal == SIGTERM ? 143 : ExitCode.interrupted.rawValue), "\(result.summary)")
        #expect(result.stderrText.contains("stopped by signal \(signal)"), "\(result.summary)")
        #expect(!result.stderrText.contains("error:"), "\(result.summary)")
        // Nothing was written, nothing temporary stays (the output folder, if made, is empty or gone).
        let left = (try? sandbox.contents(of: "out")) ?? []
        #expect(left.isEmpty, "left in the output folder: \(left)")
    }
}

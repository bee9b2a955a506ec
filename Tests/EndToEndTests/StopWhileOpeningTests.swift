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

    /// The other kinds of input stop while they open too, under a second: a UDP input waiting for
    /// its sender, an HLS playlist and a file over HTTP whose origin takes the connection and never
    /// answers, an RTSP server that never answers (each opened through its own `PacketSource`).
    enum Opening: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case udp, hlsSilentOrigin, fileSilentOrigin, rtspSilentServer
        /// `livefilter plan` (a shard plan opens and scans its input) against a silent HTTP file.
        case planSilentOrigin
        var testDescription: String { rawValue }
    }

    @Test("run and plan: SIGINT while the input opens (UDP, a silent HLS origin, a silent HTTP file, a silent RTSP server; a plan's silent HTTP file) stops it within 1 s",
          .timeLimit(.minutes(1)), arguments: Opening.allCases)
    func stopWhileOpening(input: Opening) async throws {
        let sandbox = try Sandbox("stop-opening-\(input.rawValue)")
        defer { sandbox.remove() }
        // A loopback port that takes connections (the kernel's backlog) and never answers.
        let silent = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(silent) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(silent, $0, length) == 0 && getsockname(silent, $0, &length) == 0 }
        }
        #expect(bound && listen(silent, 8) == 0)
        let silentPort = Int(UInt16(bigEndian: address.sin_port))
        let arguments: [String] = switch input {
        case .udp: ["udp://127.0.0.1:\(try Self.freePort())"]
        case .hlsSilentOrigin: ["http://127.0.0.1:\(silentPort)/live.m3u8", "--allow-private-networks"]
        case .fileSilentOrigin: ["http://127.0.0.1:\(silentPort)/clip.mp4", "--allow-private-networks"]
        case .rtspSilentServer: ["rtsp://127.0.0.1:\(silentPort)/live"]
        case .planSilentOrigin: ["http://127.0.0.1:\(silentPort)/clip.mp4", "--allow-private-networks",
                                 "--shards", "2", "--plan", sandbox.file("plan.json").path]
        }
        let output = sandbox.file("out.mp4")
        let command = input == .planSilentOrigin ? "plan" : "run"
        let run = try LiveFilter.start([command] + arguments + ["-o", output.path, "-y"])
        defer { run.send(SIGKILL) }  // only if the test stopped before the run exited
        // Well into the open (the signal handlers are installed before it starts).
        try await Task.sleep(for: .seconds(1.5))
        #expect(run.isRunning, "the run ended before it was stopped")

        let sent = ContinuousClock.now
        run.send(SIGINT)
        let result = await run.wait(timeout: .seconds(10))
        let took = ContinuousClock.now - sent

        #expect(!result.timedOut, "not exited 10 s after the signal: \(result.summary)")
        #expect(took < .seconds(1), "exited \(took) after the signal")
        #expect(result.status == ExitCode.interrupted.rawValue, "\(result.summary)")
        #expect(result.stderrText.contains("stopped by signal \(SIGINT)"), "\(result.summary)")
        #expect(!FileManager.default.fileExists(atPath: output.path), "an output was written")
        #expect(!FileManager.default.fileExists(atPath: sandbox.file("plan.json").path), "a plan was written")
    }
}

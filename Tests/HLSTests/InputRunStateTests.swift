import Foundation
import MediaIO
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// An input's state belongs to its run: two inputs opened at once in one process (the library)
/// keep their warnings apart — livefilter's own lines and FFmpeg's, which its process-wide log
/// callback routes to the input whose call logged them — and every kind of input stops opening
/// promptly when told to.
@Suite("Inputs: per-run warnings, a stop during the open", .serialized)
struct InputRunStateTests {
    static func loopbackPort(listening: Bool) -> (fd: Int32, port: Int) { Loopback.port(listening: listening) }
    static func closedPort() -> Int { loopbackPort(listening: false).port }

    /// Opens `url` on a thread of its own (as the run does), returning what the open threw.
    static func open(_ url: String, options: InputOptions, interrupt: InputInterrupt = InputInterrupt()) async -> (any Error)? {
        await withCheckedContinuation { continuation in
            Thread {
                do { _ = try Demuxer(url: url, options: options, interrupt: interrupt); continuation.resume(returning: nil) } catch {
                    continuation.resume(returning: error)
                }
            }.start()
        }
    }

    @Test("two inputs opened at once: each run's warnings hold its own lines (FFmpeg's included), never the other's",
          .timeLimit(.minutes(1)))
    func warningsDoNotMix() async throws {
        FFmpegLog.captureNetworkWarnings(verbose: false)
        let ports = (Self.closedPort(), Self.closedPort())
        let logs = (InputWarningLog(), InputWarningLog())
        var a = InputOptions(), b = InputOptions()
        a.warnings = logs.0
        b.warnings = logs.1
        a.ioTimeout = .seconds(2)
        b.ioTimeout = .seconds(2)
        // Two opens each, interleaved on two threads: FFmpeg logs each refused connection (and its reconnects).
        async let first: Void = { for _ in 0..<2 { _ = await Self.open("http://127.0.0.1:\(ports.0)/a.mp4", options: a) } }()
        async let second: Void = { for _ in 0..<2 { _ = await Self.open("http://127.0.0.1:\(ports.1)/b.mp4", options: b) } }()
        _ = await (first, second)
        let linesA = logs.0.drain(), linesB = logs.1.drain()
        #expect(!linesA.isEmpty && !linesB.isEmpty, "FFmpeg's refused connections were not routed: \(linesA) \(linesB)")
        #expect(linesA.allSatisfy { !$0.contains(":\(ports.1)") }, "run A saw run B's lines: \(linesA)")
        #expect(linesB.allSatisfy { !$0.contains(":\(ports.0)") }, "run B saw run A's lines: \(linesB)")
        #expect(linesA.contains { $0.contains(":\(ports.0)") }, "\(linesA)")
        #expect(linesB.contains { $0.contains(":\(ports.1)") }, "\(linesB)")
        // Nothing of either is left for the process-wide list.
        let unowned = FFmpegLog.drainCapturedWarnings()
        #expect(unowned.allSatisfy { !$0.contains(":\(ports.0)") && !$0.contains(":\(ports.1)") }, "\(unowned)")
    }

    @Test("a pushed input's warnings are its run's", .timeLimit(.minutes(1)))
    func pushedInputWarnings() async throws {
        let port = Self.closedPort()
        let log = InputWarningLog(), other = InputWarningLog()
        var options = InputOptions()
        options.warnings = log
        let interrupt = InputInterrupt()
        Task {
            try? await Task.sleep(for: .milliseconds(300))
            interrupt.stop()
        }
        // An SRT listener says which of the URL's options it does not apply, then waits until stopped.
        let error = await Self.open("srt://127.0.0.1:\(port)?mode=listener&maxbw=100", options: options, interrupt: interrupt)
        #expect(error != nil)
        let lines = log.drain()
        #expect(lines.contains { $0.contains("does not apply maxbw") }, "\(lines) \(String(describing: error))")
        #expect(other.drain().isEmpty)
    }

    enum Kind: String, CaseIterable, Sendable { case fileOverHTTP, hls, rtmpListener, srtListener, udp, rtspCaller }

    @Test("every kind of input stops opening within a second of its stop", .timeLimit(.minutes(1)),
          arguments: Kind.allCases)
    func stopWhileOpening(kind: Kind) async throws {
        let silent = Self.loopbackPort(listening: true)
        defer { close(silent.fd) }
        let free = Self.closedPort()
        var options = InputOptions()
        options.ioTimeout = .seconds(30)
        options.allowPrivateNetworks = true
        let url: String
        switch kind {
        case .fileOverHTTP: url = "http://127.0.0.1:\(silent.port)/clip.mp4"
        case .hls: url = "http://127.0.0.1:\(silent.port)/live.m3u8"
        case .rtmpListener:
            url = "rtmp://127.0.0.1:\(free)/live/key"
            options.listen = true
        case .srtListener: url = "srt://127.0.0.1:\(free)?mode=listener"
        case .udp: url = "udp://127.0.0.1:\(free)"
        case .rtspCaller: url = "rtsp://127.0.0.1:\(silent.port)/live"
        }
        let interrupt = InputInterrupt()
        let opening = Task { await Self.open(url, options: options, interrupt: interrupt) }
        try await Task.sleep(for: .milliseconds(500))
        let stopped = ContinuousClock.now
        interrupt.stop()
        let error = await opening.value
        let took = ContinuousClock.now - stopped
        #expect(error != nil, "\(kind): opened without a publisher or an answer")
        #expect(took < .seconds(1), "\(kind): the open returned \(took) after its stop")
    }
}

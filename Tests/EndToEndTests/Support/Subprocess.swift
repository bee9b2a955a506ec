import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The outcome of a finished child process.
struct ProcessResult: Sendable {
    var executable: String
    var arguments: [String]
    /// Exit status, or the signal number when `exitedNormally` is false.
    var status: Int32
    var exitedNormally: Bool
    var timedOut: Bool
    var stdout: Data
    var stderr: Data

    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    var stderrText: String { String(decoding: stderr, as: UTF8.self) }
    /// Non-empty stderr lines.
    var stderrLines: [String] {
        stderrText.split(whereSeparator: \.isNewline).map(String.init)
            .filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
    }
    /// Exited by itself with status 0.
    var succeeded: Bool { exitedNormally && !timedOut && status == 0 }

    /// For test failure messages.
    var summary: String {
        let how = timedOut ? "timed out" : exitedNormally ? "exit \(status)" : "signal \(status)"
        let tail = stderrText.split(whereSeparator: \.isNewline).suffix(8).joined(separator: "\n")
        return "\(executable) \(arguments.joined(separator: " ")) -> \(how)\n\(tail)"
    }
}

/// A child process with stdout and stderr going to temporary files (so a chatty child can never
/// block on a full pipe), waited for without blocking a Swift concurrency thread, and killed when
/// it outlives its time limit.
final class Subprocess: @unchecked Sendable {
    private let process = Process()
    private let stdoutURL: URL
    private let stderrURL: URL
    private let lock = NSLock()
    private var exited = false
    private var waiter: CheckedContinuation<Void, Never>?
    private var killedForTimeout = false

    init(_ executable: URL, _ arguments: [String], currentDirectory: URL? = nil,
         environment: [String: String]? = nil) throws {
        let tmp = FileManager.default.temporaryDirectory
        let id = UUID().uuidString
        stdoutURL = tmp.appendingPathComponent("livefilter-e2e-\(id).out")
        stderrURL = tmp.appendingPathComponent("livefilter-e2e-\(id).err")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        process.executableURL = executable
        process.arguments = arguments
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        if let environment { process.environment = environment }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        process.terminationHandler = { [weak self] _ in self?.markExited() }
        try process.run()
    }

    var processIdentifier: Int32 { process.processIdentifier }
    var isRunning: Bool { lock.withLock { !exited } }

    /// Sends a signal (e.g. `SIGINT`) to the child.
    func send(_ signal: Int32) {
        if isRunning { kill(process.processIdentifier, signal) }
    }

    /// Waits for the child to exit; after `timeout` it is killed with SIGKILL and reported as timed out.
    func wait(timeout: Duration = .seconds(120)) async -> ProcessResult {
        let watchdog = Task { [self] in
            try await Task.sleep(for: timeout)
            if isRunning {
                lock.withLock { killedForTimeout = true }
                kill(process.processIdentifier, SIGKILL)
            }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow: Bool = lock.withLock {
                if exited { return true }
                waiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
        watchdog.cancel()
        // terminationHandler can run before Process has recorded the status; waitUntilExit is
        // immediate once the child is reaped.
        process.waitUntilExit()
        let result = ProcessResult(
            executable: process.executableURL?.lastPathComponent ?? "?",
            arguments: process.arguments ?? [],
            status: process.terminationStatus,
            exitedNormally: process.terminationReason == .exit,
            timedOut: lock.withLock { killedForTimeout },
            stdout: (try? Data(contentsOf: stdoutURL)) ?? Data(),
            stderr: (try? Data(contentsOf: stderrURL)) ?? Data())
        try? FileManager.default.removeItem(at: stdoutURL)
        try? FileManager.default.removeItem(at: stderrURL)
        return result
    }

    private func markExited() {
        let continuation: CheckedContinuation<Void, Never>? = lock.withLock {
            exited = true
            defer { waiter = nil }
            return waiter
        }
        continuation?.resume()
    }

    /// Runs a command to completion.
    static func run(_ executable: URL, _ arguments: [String], currentDirectory: URL? = nil,
                    timeout: Duration = .seconds(120)) async throws -> ProcessResult {
        try await Subprocess(executable, arguments, currentDirectory: currentDirectory).wait(timeout: timeout)
    }
}

/// Thrown by helpers when a tool they rely on fails; the message carries the tool's stderr.
struct ToolFailure: Error, CustomStringConvertible {
    var description: String
    init(_ result: ProcessResult) { description = result.summary }
    init(_ message: String) { description = message }
}

/// Runs ffmpeg (`-hide_banner -nostdin -y -v error` prepended) and throws unless it succeeds.
@discardableResult
func ffmpeg(_ arguments: [String], timeout: Duration = .seconds(120)) async throws -> ProcessResult {
    let result = try await Subprocess.run(
        Paths.ffmpeg, ["-hide_banner", "-nostdin", "-y", "-v", "error"] + arguments, timeout: timeout)
    guard result.succeeded else { throw ToolFailure(result) }
    return result
}

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
///
/// Spawned with `posix_spawn` rather than Foundation's `Process`: a child inherits its spawner's
/// signal mask, and inside the test runner SIGINT and SIGTERM are blocked (the child of a `Process`
/// here starts with `SigBlk: …4002`), so a `livefilter` started that way would never see the SIGINT
/// test's Ctrl-C. Here the child gets what a shell gives it: an empty mask and default handlers.
/// The working directory is inherited; pass absolute paths.
final class Subprocess: @unchecked Sendable {
    let pid: pid_t
    private let executable: String
    private let arguments: [String]
    private let stdoutURL: URL
    private let stderrURL: URL
    private let lock = NSLock()
    private var exitStatus: Int32?  // raw wait status once reaped
    private var killedForTimeout = false

    init(_ executable: URL, _ arguments: [String]) throws {
        self.executable = executable.path
        self.arguments = arguments
        let tmp = FileManager.default.temporaryDirectory
        let id = UUID().uuidString
        stdoutURL = tmp.appendingPathComponent("livefilter-e2e-\(id).out")
        stderrURL = tmp.appendingPathComponent("livefilter-e2e-\(id).err")

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutURL.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderrURL.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable.path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, executable.path, &actions, &attributes, argv, environ)
        guard rc == 0 else {
            throw ToolFailure("cannot start \(executable.path): \(String(cString: strerror(rc)))")
        }
        pid = child
    }

    var processIdentifier: Int32 { pid }

    /// Reaps the child if it has exited (never blocks).
    private func poll() -> Bool {
        lock.withLock {
            if exitStatus != nil { return true }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { exitStatus = status }
            return exitStatus != nil
        }
    }

    var isRunning: Bool { !poll() }

    /// Sends a signal (e.g. `SIGINT`) to the child.
    func send(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Waits for the child to exit; after `timeout` it is killed with SIGKILL and reported as timed out.
    func wait(timeout: Duration = .seconds(120)) async -> ProcessResult {
        let deadline = ContinuousClock.now + timeout
        while !poll() {
            if ContinuousClock.now >= deadline {
                lock.withLock { killedForTimeout = true }
                kill(pid, SIGKILL)
                while !poll() { try? await Task.sleep(for: .milliseconds(10)) }
                break
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        let status = lock.withLock { exitStatus ?? 0 }
        let signal = status & 0x7f
        let result = ProcessResult(
            executable: URL(fileURLWithPath: executable).lastPathComponent,
            arguments: arguments,
            status: signal == 0 ? (status >> 8) & 0xff : signal,
            exitedNormally: signal == 0,
            timedOut: lock.withLock { killedForTimeout },
            stdout: (try? Data(contentsOf: stdoutURL)) ?? Data(),
            stderr: (try? Data(contentsOf: stderrURL)) ?? Data())
        try? FileManager.default.removeItem(at: stdoutURL)
        try? FileManager.default.removeItem(at: stderrURL)
        return result
    }

    /// Runs a command to completion.
    static func run(_ executable: URL, _ arguments: [String],
                    timeout: Duration = .seconds(120)) async throws -> ProcessResult {
        try await Subprocess(executable, arguments).wait(timeout: timeout)
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

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

/// A child process with stdout and stderr going to temporary files, or stderr to a pipe drained as
/// it is written (either way a chatty child can never block on a full pipe), waited for without
/// blocking a Swift concurrency thread, and killed when it outlives its time limit.
///
/// Spawned with `posix_spawn` rather than Foundation's `Process`: a child inherits its spawner's
/// signal mask, and inside the test runner SIGINT and SIGTERM are blocked (the child of a `Process`
/// here starts with `SigBlk: …4002`), so a `livefilter` started that way would never see the SIGINT
/// test's Ctrl-C. Here the child gets what a shell gives it: an empty mask and default handlers.
/// The working directory is inherited; pass absolute paths.
///
/// Nothing here polls: a thread of its own waits for the child's exit and wakes whoever waits for
/// it, and with `streamingStderr` another reads stderr as it is written, so a test can wait for a
/// line (`firstStderrLine`) instead of sleeping until it has probably been written.
final class Subprocess: @unchecked Sendable {
    let pid: pid_t
    private let executable: String
    private let arguments: [String]
    private let stdoutURL: URL
    /// Where stderr goes: a file read after the exit, or a pipe read as the child writes.
    private let stderrFile: URL?
    private let stderrPipe: LinePipe?
    private let lock = NSLock()
    private var exitStatus: Int32?  // raw wait status once reaped
    private var exitWaiters: [CheckedContinuation<Void, Never>] = []
    private var killedForTimeout = false

    /// - Parameter streamingStderr: read stderr through a pipe as the child writes it (for
    ///   `firstStderrLine`). Only for a child that starts no process of its own, such as livefilter:
    ///   the pipe ends, and `wait` returns, when every holder of its write end has exited.
    /// - Parameter environment: variables set for the child on top of this process's.
    init(_ executable: URL, _ arguments: [String], streamingStderr: Bool = false, environment: [String: String] = [:]) throws {
        self.executable = executable.path
        self.arguments = arguments
        let tmp = FileManager.default.temporaryDirectory
        let id = UUID().uuidString
        stdoutURL = tmp.appendingPathComponent("livefilter-e2e-\(id).out")
        let pipe = streamingStderr ? try LinePipe() : nil
        stderrPipe = pipe
        stderrFile = streamingStderr ? nil : tmp.appendingPathComponent("livefilter-e2e-\(id).err")

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutURL.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        if let pipe {
            posix_spawn_file_actions_adddup2(&actions, pipe.writeEnd, 2)
        } else if let stderrFile {
            posix_spawn_file_actions_addopen(&actions, 2, stderrFile.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        }

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
        var variables = ProcessInfo.processInfo.environment
        variables.merge(environment) { $1 }
        let envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        let rc = posix_spawn(&child, executable.path, &actions, &attributes, argv, envp)
        pipe?.startReading()  // the child holds its own copy of the write end now (or there is no child)
        guard rc == 0 else {
            throw ToolFailure("cannot start \(executable.path): \(String(cString: strerror(rc)))")
        }
        pid = child
        startReaper()
    }

    var processIdentifier: Int32 { pid }
    private var name: String { URL(fileURLWithPath: executable).lastPathComponent }

    /// A thread waits for the child's exit without reaping it (`WNOWAIT`), then reaps it under the
    /// lock: while `exitStatus` is nil the pid is still ours, so `send` never signals a recycled one.
    private func startReaper() {
        Thread { [self] in
            var info = siginfo_t()
            while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
            let waiters = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
                var status: Int32 = 0
                // Someone else reaped it (no test does): report exit 255 rather than wait forever.
                exitStatus = waitpid(pid, &status, 0) == pid ? status : 255 << 8
                defer { exitWaiters.removeAll() }
                return exitWaiters
            }
            for waiter in waiters { waiter.resume() }
        }.start()
    }

    /// Returns once the child has exited (woken by the reaper thread).
    func exited() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = lock.withLock { () -> Bool in
                if exitStatus != nil { return true }
                exitWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    var isRunning: Bool { lock.withLock { exitStatus == nil } }

    /// Sends a signal (e.g. `SIGINT`) to the child, unless it has already exited.
    func send(_ signal: Int32) {
        lock.withLock { if exitStatus == nil { _ = kill(pid, signal) } }
    }

    /// Waits for the child to exit; after `timeout` it is killed with SIGKILL and reported as timed out.
    func wait(timeout: Duration = .seconds(120)) async -> ProcessResult {
        // A deadline, not a poll: the exit itself wakes this task, and the limit is cancelled then.
        let limit = Task { [self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            // A livefilter that outlived its limit hangs somewhere: its threads' stacks go to the
            // test log before it is killed (a rare hang is otherwise gone with the process).
            if isRunning, name == "livefilter" { Self.printStacks(of: pid) }
            lock.withLock {
                guard exitStatus == nil else { return }
                killedForTimeout = true
                kill(pid, SIGKILL)
            }
        }
        await exited()
        limit.cancel()
        let status = lock.withLock { exitStatus ?? 0 }
        let signal = status & 0x7f
        let stderr = if let stderrPipe { await stderrPipe.whole() } else { stderrFile.flatMap { try? Data(contentsOf: $0) } ?? Data() }
        let result = ProcessResult(
            executable: name,
            arguments: arguments,
            status: signal == 0 ? (status >> 8) & 0xff : signal,
            exitedNormally: signal == 0,
            timedOut: lock.withLock { killedForTimeout },
            stdout: (try? Data(contentsOf: stdoutURL)) ?? Data(),
            stderr: stderr)
        try? FileManager.default.removeItem(at: stdoutURL)
        if let stderrFile { try? FileManager.default.removeItem(at: stderrFile) }
        return result
    }

    /// Every thread's stack of a running process, by gdb (when installed), printed to the test log.
    private static func printStacks(of pid: pid_t) {
        let gdb = URL(fileURLWithPath: "/usr/bin/gdb")
        guard FileManager.default.isExecutableFile(atPath: gdb.path) else { return }
        let process = Process()
        process.executableURL = gdb
        process.arguments = ["-p", "\(pid)", "-batch", "-ex", "thread apply all bt"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        guard (try? process.run()) != nil else { return }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        print("=== livefilter \(pid) outlived its time limit; its threads:\n\(text)\n=== end of stacks")
    }

    /// The first stderr line for which `matches` holds, as soon as the child writes it (the child
    /// must be started with `streamingStderr`). Throws, quoting what the child wrote, when its stderr
    /// ends first or nothing matches within `timeout` — a failed test instead of a hang.
    func firstStderrLine(_ what: String, within timeout: Duration,
                         where matches: @escaping @Sendable (String) -> Bool) async throws -> String {
        guard let stderrPipe else { throw ToolFailure("waiting for \(what): \(executable) was not started with streamingStderr") }
        switch await first(of: stderrPipe.lines(), within: timeout, where: matches) {
        case let .found(line):
            return line
        case let .ended(seen):
            throw ToolFailure("waited for \(what) on the stderr of \(name): it ended (the child exited) first; "
                              + "its last lines:\n" + seen.suffix(8).joined(separator: "\n"))
        case let .timedOut(seen):
            throw ToolFailure("waited for \(what) on the stderr of \(name): nothing within \(timeout); "
                              + "its last lines:\n" + seen.suffix(8).joined(separator: "\n"))
        }
    }

    /// Runs a command to completion.
    static func run(_ executable: URL, _ arguments: [String], timeout: Duration = .seconds(120),
                    environment: [String: String] = [:]) async throws -> ProcessResult {
        try await Subprocess(executable, arguments, environment: environment).wait(timeout: timeout)
    }
}

/// The read end of a pipe a child writes to, drained by a thread of its own as the child writes (so
/// the child never blocks on a full pipe): kept whole for the result, and split into lines for a
/// test that waits for one.
final class LinePipe: @unchecked Sendable {
    let writeEnd: Int32
    private let readEnd: Int32
    private let lock = NSLock()
    private var bytes = Data()
    private var lineStart = 0
    private var complete: [String] = []
    private var ended = false
    private var subscribers: [Int: AsyncStream<String>.Continuation] = [:]
    private var nextSubscriber = 0
    private var endWaiters: [CheckedContinuation<Void, Never>] = []

    init() throws {
        (readEnd, writeEnd) = try closeOnExecPipe()
    }

    /// Called once the child has its copy of the write end: closes ours, so the pipe ends with the child.
    func startReading() {
        close(writeEnd)
        let fd = readEnd
        Thread { [self] in
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = read(fd, &chunk, chunk.count)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                append(chunk[0..<n])
            }
            close(fd)
            end()
        }.start()
    }

    private func append(_ chunk: ArraySlice<UInt8>) {
        lock.withLock {
            bytes.append(contentsOf: chunk)
            while let newline = bytes[lineStart...].firstIndex(of: UInt8(ascii: "\n")) {
                publishLocked(String(decoding: bytes[lineStart..<newline], as: UTF8.self))
                lineStart = newline + 1
            }
        }
    }

    /// Yields under the lock, so a new subscriber gets each line exactly once (replayed or yielded).
    private func publishLocked(_ line: String) {
        complete.append(line)
        for subscriber in subscribers.values { subscriber.yield(line) }
    }

    private func end() {
        let (streams, waiters) = lock.withLock {
            if lineStart < bytes.count { publishLocked(String(decoding: bytes[lineStart...], as: UTF8.self)) }
            ended = true
            defer { subscribers.removeAll(); endWaiters.removeAll() }
            return (Array(subscribers.values), endWaiters)
        }
        // Outside the lock: finishing runs each stream's onTermination, which takes the lock.
        for stream in streams { stream.finish() }
        for waiter in waiters { waiter.resume() }
    }

    /// Every line written so far, then each new one as it is written; ends with the pipe.
    func lines() -> AsyncStream<String> {
        AsyncStream { continuation in
            let id = lock.withLock { () -> Int? in
                for line in complete { continuation.yield(line) }
                if ended { return nil }
                nextSubscriber += 1
                subscribers[nextSubscriber] = continuation
                return nextSubscriber
            }
            guard let id else { return continuation.finish() }
            continuation.onTermination = { [weak self] _ in
                guard let self else { return }
                _ = lock.withLock { subscribers.removeValue(forKey: id) }
            }
        }
    }

    /// Everything the child wrote, once the pipe has ended.
    func whole() async -> Data {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = lock.withLock { () -> Bool in
                if ended { return true }
                endWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
        return lock.withLock { bytes }
    }
}

/// A connected pair of descriptors (read end, write end), both close-on-exec from the start: no
/// child spawned meanwhile by another test inherits one and keeps the pair open. A socket pair, as
/// Swift's Glibc does not see pipe2(2); a child writes its stderr to it as to a pipe.
func closeOnExecPipe() throws -> (read: Int32, write: Int32) {
    var ends: [Int32] = [-1, -1]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
        throw ToolFailure("socketpair: \(String(cString: strerror(errno)))")
    }
    shutdown(ends[0], Int32(SHUT_WR))
    shutdown(ends[1], Int32(SHUT_RD))
    return (ends[0], ends[1])
}

/// How waiting for an element of a stream ended; what the stream gave meanwhile, for the message.
enum FirstOutcome: Sendable {
    case found(String)
    case ended(seen: [String])
    case timedOut(seen: [String])
}

/// The first element of `stream` for which `matches` holds, or how the wait ended without one.
/// The time limit is a deadline raced against the stream, not a poll.
func first(of stream: AsyncStream<String>, within timeout: Duration,
           where matches: @escaping @Sendable (String) -> Bool) async -> FirstOutcome {
    enum Part: Sendable { case stream(FirstOutcome), deadline }
    return await withTaskGroup(of: Part.self) { group in
        group.addTask {
            var seen: [String] = []
            for await element in stream {
                if matches(element) { return .stream(.found(element)) }
                seen.append(element)
            }
            return .stream(.ended(seen: seen))  // the stream ended, or the deadline cancelled this task
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return .deadline
        }
        let winner = await group.next()!
        group.cancelAll()
        if case let .stream(outcome) = winner { return outcome }
        while let part = await group.next() {
            if case .stream(.found(let element)) = part { return .found(element) }
            if case .stream(.ended(let seen)) = part { return .timedOut(seen: seen) }
        }
        return .timedOut(seen: [])
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

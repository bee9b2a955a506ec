import CFFmpeg
import Dispatch
import Foundation
import Glibc

/// The stop of one input: the flag FFmpeg's interrupt callback reads (`lf_interrupt_state`), made
/// before the input is opened, so that a stop reaches the open too — a listener waiting for its
/// first publisher, a slow origin, a probe — and not only the reads after it.
///
/// `stop()` may come from any thread (a task's cancellation handler, a signal's): it sets the flag,
/// which every blocking FFmpeg call sees at its next interrupt check (FFmpeg's network waits look
/// every 100 ms at most), wakes whoever `sleep`s or waits on `wakeDescriptor` (libsrt's epoll), and
/// runs the actions registered with `onStop` (cancelling an HLS reader's opening task). Final: an
/// input once stopped stays stopped.
public final class InputInterrupt: @unchecked Sendable {
    /// FFmpeg's view; owned here, freed when the last owner (the demuxer, the opening task) lets go.
    let state: UnsafeMutablePointer<lf_interrupt_state>
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var actions: [@Sendable () -> Void] = []
    private var stopped = false
    private var wake: (read: Int32, write: Int32)?

    public init() {
        state = .allocate(capacity: 1)
        state.initialize(to: lf_interrupt_state())
    }

    deinit {
        if let wake {
            close(wake.read)
            close(wake.write)
        }
        state.deallocate()
    }

    private func locked<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }

    /// Whether the input was stopped.
    public var isStopped: Bool { locked { stopped } }

    /// Stops the input: every blocking read or open returns promptly, at once or at its next check.
    public func stop() {
        let toRun: [@Sendable () -> Void] = locked {
            guard !stopped else { return [] }
            stopped = true
            // A plain store of an aligned Int32, read by the callback on FFmpeg's thread.
            state.pointee.stop = 1
            if let wake {
                var byte: UInt8 = 1
                _ = write(wake.write, &byte, 1)
            }
            condition.broadcast()
            defer { actions = [] }
            return actions
        }
        for action in toRun { action() }
    }

    /// Calls `action` once when the input is stopped (at once when it is already).
    func onStop(_ action: @escaping @Sendable () -> Void) {
        let now: Bool = locked {
            if stopped { return true }
            actions.append(action)
            return false
        }
        if now { action() }
    }

    /// Waits until `deadline` or the stop, whichever comes first; returns whether the input was stopped.
    func sleep(until deadline: ContinuousClock.Instant) -> Bool {
        locked {
            while !stopped {
                let left = ContinuousClock.now.duration(to: deadline)
                if left <= .zero { break }
                let c = left.components
                _ = condition.wait(until: Date(timeIntervalSinceNow: Double(c.seconds) + Double(c.attoseconds) / 1e18))
            }
            return stopped
        }
    }

    /// A descriptor that becomes readable at the stop (and stays so), for waits that take system
    /// descriptors (libsrt's epoll); made on first use, closed with this.
    func wakeDescriptor() -> Int32? {
        locked {
            if let wake { return wake.read }
            var fds: [Int32] = [-1, -1]
            guard pipe(&fds) == 0 else { return nil }
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            wake = (fds[0], fds[1])
            if stopped {
                var byte: UInt8 = 1
                _ = write(fds[1], &byte, 1)
            }
            return fds[0]
        }
    }

    /// Runs async work to completion from a thread that may block (an input opens on a thread of
    /// its own: `Demuxer.open`). The stop cancels the work's task, so the wait ends as soon as the
    /// work honours cancellation (the HLS reader's requests and retry waits do).
    func waitFor<T: Sendable, E: Error>(_ operation: @escaping @Sendable () async throws(E) -> T) throws(E) -> T {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: Result<T, E>!
        let task = Task {
            do throws(E) { result = .success(try await operation()) } catch { result = .failure(error) }
            done.signal()
        }
        onStop { task.cancel() }
        done.wait()
        return try result.get()
    }
}

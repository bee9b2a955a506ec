import Dispatch
import Foundation
import Glibc
import MediaIO
import Synchronization

/// Turns SIGINT and SIGTERM into a stop: the run's task is cancelled (`onStop`) and whoever waits
/// (`wait()`) is resumed, so a run finishes a playable output. Nothing polls the flag. A second
/// signal leaves at once, removing every unfinished temporary file.
///
/// Made before the input is opened: opening (a listener waiting for its first publisher, a slow
/// origin, a probe) is stopped by a signal too (`cancelling`), not only the run after it.
final class StopSignals: @unchecked Sendable {
    private let received = Atomic<Int32>(0)
    private let waiting = Mutex<[@Sendable () -> Void]>([])
    // Kept alive for the life of the process; only touched in init.
    private let sources: [any DispatchSourceSignal]

    init() {
        let signals = [SIGINT, SIGTERM]
        for s in signals { Glibc.signal(s, SIG_IGN) }
        // A file-size limit then fails the write (EFBIG) instead of killing the process.
        Glibc.signal(SIGXFSZ, SIG_IGN)
        Glibc.signal(SIGPIPE, SIG_IGN)
        sources = signals.map { DispatchSource.makeSignalSource(signal: $0, queue: .global()) }
        for (source, sig) in zip(sources, signals) {
            source.setEventHandler { [self] in
                if received.exchange(sig, ordering: .relaxed) != 0 {
                    // Leaving without unwinding: no run discards its outputs, so no temporary file may stay.
                    AtomicFile.removeUnfinishedTemporaries()
                    Foundation.exit(128 + sig)
                }
                for action in waiting.withLock({ list in defer { list = [] }; return list }) { action() }
            }
            source.resume()
        }
    }

    /// The first signal received, or nil.
    var signal: Int32? {
        let s = received.load(ordering: .relaxed)
        return s == 0 ? nil : s
    }

    /// Calls `action` once, at the first signal (at once if one came already).
    func onStop(_ action: @escaping @Sendable () -> Void) {
        let now: Bool = waiting.withLock { list in
            if signal != nil { return true }
            list.append(action)
            return false
        }
        if now { action() }
    }

    /// Runs `operation` in a task of its own that the first signal cancels (at once if one came
    /// already), as does cancelling the calling task; returns what it returns.
    func cancelling<T: Sendable>(_ operation: @escaping @Sendable () async -> T) async -> T {
        let task = Task { await operation() }
        onStop { task.cancel() }
        return await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
    }

    /// Suspends until the first signal.
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            onStop { continuation.resume() }
        }
    }
}

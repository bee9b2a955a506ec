import Foundation

/// The stage threads of one run. A stage is a function from its input channel to its output
/// channels, run on a thread of its own: decoding, filtering and encoding are long synchronous C
/// and SIMD work, and a network read can block for seconds, so none of it runs on Swift's
/// cooperative pool. The first stage to fail cancels every channel, so all the others stop within
/// the element they are working on; `wait()` suspends (it does not block) until all have returned.
final class StageGroup: @unchecked Sendable {
    private let lock = NSLock()
    private var running = 0
    private var firstError: (any Error)?
    private var cancelActions: [@Sendable () -> Void] = []
    private var cancelled = false
    private var waiter: CheckedContinuation<Void, Never>?

    /// Registers what tearing the run down means (cancel a channel, interrupt a network read).
    func onCancel(_ action: @escaping @Sendable () -> Void) {
        lock.lock()
        cancelActions.append(action)
        let already = cancelled
        lock.unlock()
        if already { action() }
    }

    /// Starts `body` on a thread of its own.
    func start(_ name: String, _ body: @escaping @Sendable () throws -> Void) {
        lock.lock()
        running += 1
        lock.unlock()
        let thread = Thread { [self] in
            do {
                try body()
            } catch is ChannelCancelled {
                // Torn down by someone else: that stage's error (or the stop) is the story.
            } catch {
                record(error)
            }
            stageEnded()
        }
        thread.name = "livefilter.\(name)"
        thread.stackSize = 4 << 20
        thread.start()
    }

    /// Cancels every channel and interruptible read: every stage leaves within one element.
    func cancel() {
        lock.lock()
        let actions = cancelled ? [] : cancelActions
        cancelled = true
        lock.unlock()
        for action in actions { action() }
    }

    /// The first error a stage threw.
    var error: (any Error)? {
        lock.lock(); defer { lock.unlock() }
        return firstError
    }

    /// Suspends until every stage started so far has returned.
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.lock()
            if running == 0 {
                lock.unlock()
                continuation.resume()
            } else {
                waiter = continuation
                lock.unlock()
            }
        }
    }

    /// Runs blocking work (finishing files, a faststart rewrite) on a stage thread and awaits it.
    func perform(_ name: String, _ body: @escaping @Sendable () throws -> Void) async throws {
        start(name, body)
        await wait()
        if let error { throw error }
    }

    private func record(_ error: any Error) {
        lock.lock()
        if firstError == nil { firstError = error }
        lock.unlock()
        cancel()
    }

    private func stageEnded() {
        lock.lock()
        running -= 1
        let resume = running == 0 ? waiter : nil
        if resume != nil { waiter = nil }
        lock.unlock()
        resume?.resume()
    }
}

import Foundation

/// Thrown by a channel operation after `cancel()`: the run is being torn down, not a failure.
public struct ChannelCancelled: Error, Equatable {}

/// The one connection between pipeline stages: a bounded first-in first-out channel.
///
/// Stage threads block on it (`send`/`receive`); the tick task, which runs in Swift concurrency,
/// suspends on it (the `async` overloads) and never blocks a cooperative thread. Back-pressure:
/// a send waits while `capacity` elements are queued. End of stream: each of the `producers` calls
/// `finish()`; receivers drain what is queued and then get nil. Failure: `fail(_:)` hands the
/// producer's error to the receiver after the queued elements. Cancellation: `cancel()` drops
/// everything and makes every waiting or later operation throw `ChannelCancelled` at once, so a
/// stop reaches every stage within the frame it is working on. No operation polls or sleeps.
public final class Channel<Element>: @unchecked Sendable {
    private let condition = NSCondition()
    /// Queued elements from `head` on; a slot is emptied as it is taken, so the channel never keeps
    /// a frame alive after handing it over.
    private var items: [Element?] = []
    private var head = 0
    private var openProducers: Int
    private var failure: (any Error)?
    private var cancelled = false
    /// Suspended tasks, resumed on every change to re-check (few waiters: the tick task).
    private var waiters: [CheckedContinuation<Void, Never>] = []
    /// Woken under the lock, resumed after it is released (`locked`).
    private var wokenTasks: [CheckedContinuation<Void, Never>] = []
    public let capacity: Int

    public init(capacity: Int, producers: Int = 1) {
        self.capacity = max(1, capacity)
        openProducers = max(1, producers)
    }

    private var count: Int { items.count - head }

    // MARK: Producer side

    /// Waits for room, then queues `element`.
    public func send(_ element: Element) throws(ChannelCancelled) {
        try locked { () throws(ChannelCancelled) in
            while count >= capacity && !cancelled { condition.wait() }
            try enqueueLocked(element)
        }
    }

    /// Queues `element` if there is room now; false when full. Never waits.
    public func trySend(_ element: Element) throws(ChannelCancelled) -> Bool {
        try locked { () throws(ChannelCancelled) -> Bool in
            guard count < capacity || cancelled else { return false }
            try enqueueLocked(element)
            return true
        }
    }

    /// Suspends until there is room, then queues `element`. Throws `CancellationError` when the
    /// task is cancelled while it waits (an embedding app cancelling an export).
    public func send(_ element: Element) async throws {
        while true {
            try Task.checkCancellation()
            let done: Result<Bool, ChannelCancelled> = lockedAttempt { () throws(ChannelCancelled) -> Bool in
                guard count < capacity || cancelled else { return false }
                try enqueueLocked(element)
                return true
            }
            if try done.get() { return }
            await waitForChange { count < capacity || cancelled }
        }
    }

    /// One producer is done. With `discardingPending`, queued elements are dropped (a quick stop).
    public func finish(discardingPending: Bool = false) {
        change {
            openProducers = max(0, openProducers - 1)
            if discardingPending { items.removeAll(); head = 0 }
        }
    }

    /// The receiver gets `error` after the elements already queued.
    public func fail(_ error: any Error) {
        change { if failure == nil { failure = error } }
    }

    /// Tears the channel down: queued elements are dropped and every operation throws `ChannelCancelled`.
    public func cancel() {
        change {
            cancelled = true
            items.removeAll()
            head = 0
        }
    }

    // MARK: Receiver side

    /// The next element, waiting for one; nil once every producer has finished and the queue is drained.
    public func receive() throws -> Element? {
        try locked { () throws -> Element? in
            while !isReadyLocked { condition.wait() }
            return try dequeueLocked()
        }
    }

    /// The next element, suspending for one; nil at the end of the stream. Throws
    /// `CancellationError` when the task is cancelled while it waits.
    public func receive() async throws -> Element? {
        while true {
            try Task.checkCancellation()
            let attempt: Result<Element??, any Error> = lockedAttempt { () throws -> Element?? in
                guard isReadyLocked else { return .none }
                return .some(try dequeueLocked())
            }
            if let result = try attempt.get() { return result }
            await waitForChange { isReadyLocked }
        }
    }

    /// Suspends until `receive` would not wait (an element, the end, a failure or a cancellation
    /// is there), taking nothing; returns at once when the task is cancelled. A receiver that must
    /// also keep a deadline races this against its clock.
    public func waitUntilReady() async {
        while !Task.isCancelled {
            let ready: Result<Bool, Never> = lockedAttempt { isReadyLocked }
            if case .success(true) = ready { return }
            // Any change wakes it (room made by a receive too): look again.
            await waitForChange { isReadyLocked }
        }
    }

    /// What is there now, without waiting: `.some(nil)` at the end of the stream, nil when empty.
    public func tryReceive() throws -> Element?? {
        try locked { () throws -> Element?? in
            guard isReadyLocked else { return nil }
            return .some(try dequeueLocked())
        }
    }

    /// How many elements are queued now (a snapshot: producers and consumers may change it next).
    public var queued: Int {
        condition.lock()
        defer { condition.unlock() }
        return count
    }

    // MARK: Internals (called with the lock held unless named otherwise)

    private var isReadyLocked: Bool { count > 0 || cancelled || failure != nil || openProducers == 0 }

    private func enqueueLocked(_ element: Element) throws(ChannelCancelled) {
        guard !cancelled else { throw ChannelCancelled() }
        items.append(element)
        wakeLocked()
    }

    private func dequeueLocked() throws -> Element? {
        if cancelled { throw ChannelCancelled() }
        if count > 0 {
            let element = items[head].take()
            head += 1
            // Compact now and then: amortised O(1) without a ring buffer's index arithmetic.
            if head >= 32 && head * 2 >= items.count { items.removeFirst(head); head = 0 }
            wakeLocked()
            return element
        }
        if let failure { throw failure }
        return nil  // every producer finished
    }

    private func change(_ body: () -> Void) {
        locked {
            body()
            wakeLocked()
        }
    }

    /// Wakes blocked threads, and the suspended tasks once the lock is released (`locked`); they
    /// re-check their condition.
    private func wakeLocked() {
        condition.broadcast()
        wokenTasks += waiters
        waiters.removeAll()
    }

    /// Runs `body` with the lock held, then resumes the tasks it woke, the lock released. Never a
    /// task resumed under the lock: resuming takes the task's status lock, which the runtime holds
    /// while the task is cancelled and its cancellation handler (`waitForChange`'s) waits for this
    /// lock — a stage thread resuming the tick task under the lock while that task's group was
    /// cancelled deadlocked a live run under load (output stopped, SIGINT unanswered).
    private func locked<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        condition.lock()
        let result: Result<T, E>
        do throws(E) { result = .success(try body()) } catch { result = .failure(error) }
        let resumed = wokenTasks
        wokenTasks.removeAll()
        condition.unlock()
        for task in resumed { task.resume() }
        return try result.get()
    }

    private func lockedAttempt<T, E: Error>(_ body: () throws(E) -> T) -> Result<T, E> {
        locked { () -> Result<T, E> in
            do throws(E) { return .success(try body()) } catch { return .failure(error) }
        }
    }

    /// Suspends until the next change, unless `ready` already holds; task cancellation counts as a change.
    private func waitForChange(until ready: () -> Bool) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                condition.lock()
                if ready() || Task.isCancelled {
                    condition.unlock()
                    continuation.resume()
                } else {
                    waiters.append(continuation)
                    condition.unlock()
                }
            }
        } onCancel: {
            change {}
        }
    }
}

import Dispatch
import Foundation
import Pipeline
import Synchronization
import Testing

/// The one connection between stages: order, back-pressure, end of stream, failure after the
/// queued elements, and cancellation that wakes every waiter at once — on threads and in tasks.
struct ChannelTests {
    struct Boom: Error, Equatable {}

    /// Runs `body` on a new thread; the semaphore is signalled when it returns.
    static func thread(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        Thread { body(); done.signal() }.start()
        return done
    }

    @Test func elementsArriveInOrderThenTheEnd() throws {
        let channel = Channel<Int>(capacity: 3)
        let done = Self.thread {
            for i in 0..<500 { try? channel.send(i) }
            channel.finish()
        }
        var received: [Int] = []
        while let value = try channel.receive() { received.append(value) }
        #expect(received == Array(0..<500))
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(try channel.receive() == nil, "the end stays the end")
    }

    @Test func trySendQueuesWhileThereIsRoomAndNeverWaits() throws {
        let channel = Channel<Int>(capacity: 2)
        #expect(try channel.trySend(1) && channel.trySend(2))
        #expect(try !channel.trySend(3), "full: refused at once")
        #expect(try channel.receive() == 1)
        #expect(try channel.trySend(3))
        #expect(try channel.receive() == 2 && channel.receive() == 3)
        channel.cancel()
        #expect(throws: ChannelCancelled.self) { try channel.trySend(4) }
    }

    @Test func aFullChannelHoldsItsProducerBack() throws {
        let channel = Channel<Int>(capacity: 2)
        let sent = Atomic<Int>(0), mostQueued = Atomic<Int>(0)
        let atThird = DispatchSemaphore(value: 0), pastThird = DispatchSemaphore(value: 0)
        let done = Self.thread {
            for i in 0..<5 {
                if i == 2 { atThird.signal() }
                try? channel.send(i)
                sent.add(1, ordering: .relaxed)
                mostQueued.max(channel.queued, ordering: .relaxed)
                if i == 2 { pastThird.signal() }
            }
        }
        // Two in, and the producer is at the third send: the channel is full and the send waits. That it
        // does not return needs some time to show; the wait ends at once if it does return.
        #expect(atThird.wait(timeout: .now() + 5) == .success)
        #expect(pastThird.wait(timeout: .now() + 0.2) == .timedOut, "the third send returned with two queued")
        #expect(sent.load(ordering: .relaxed) == 2 && channel.queued == 2)
        // Taking one lets it go on.
        #expect(try channel.receive() == 0)
        #expect(pastThird.wait(timeout: .now() + 5) == .success, "a receive wakes the waiting send")
        for expected in 1..<5 { #expect(try channel.receive() == expected) }
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(sent.load(ordering: .relaxed) == 5)
        #expect(mostQueued.load(ordering: .relaxed) <= 2, "never more than the capacity queued")
    }

    @Test func aFailureComesAfterWhatWasQueued() throws {
        let channel = Channel<Int>(capacity: 4)
        try channel.send(1)
        try channel.send(2)
        channel.fail(Boom())
        #expect(try channel.receive() == 1)
        #expect(try channel.receive() == 2)
        #expect(throws: Boom.self) { try channel.receive() }
    }

    @Test func theEndWaitsForEveryProducer() throws {
        let channel = Channel<Int>(capacity: 4, producers: 2)
        try channel.send(1)
        channel.finish()
        #expect(try channel.tryReceive() == .some(1))
        #expect(try channel.tryReceive() == nil, "one producer is still open: nothing yet, not the end")
        channel.finish()
        #expect(try channel.tryReceive() == .some(nil), "both finished: the end")
    }

    @Test func cancelWakesBlockedThreadsAtOnce() throws {
        let empty = Channel<Int>(capacity: 1)
        let full = Channel<Int>(capacity: 1)
        try full.send(0)
        let outcomes = Mutex<[String]>([])
        let waiting = DispatchSemaphore(value: 0)
        let receiver = Self.thread {
            waiting.signal()
            do { _ = try empty.receive(); outcomes.withLock { $0.append("received") } } catch { outcomes.withLock { $0.append("\(error)") } }
        }
        let sender = Self.thread {
            waiting.signal()
            do { try full.send(1); outcomes.withLock { $0.append("sent") } } catch { outcomes.withLock { $0.append("\(error)") } }
        }
        // Both are at their call, and neither returns: they wait (a wait that ends at once if one returns).
        #expect(waiting.wait(timeout: .now() + 5) == .success && waiting.wait(timeout: .now() + 5) == .success)
        #expect(receiver.wait(timeout: .now() + 0.1) == .timedOut, "a receive on an empty channel returned")
        #expect(sender.wait(timeout: .now() + 0.1) == .timedOut, "a send on a full channel returned")
        let start = ContinuousClock.now
        empty.cancel()
        full.cancel()
        #expect(receiver.wait(timeout: .now() + 2) == .success)
        #expect(sender.wait(timeout: .now() + 2) == .success)
        // Woken, not found by a later look: what lets a stop reach every stage at once (Ctrl-C's
        // 0.5 s). Waking two threads takes microseconds; the bound leaves room for a loaded machine.
        #expect(ContinuousClock.now - start < .milliseconds(500))
        #expect(outcomes.withLock { $0 } == ["ChannelCancelled()", "ChannelCancelled()"])
        #expect(throws: ChannelCancelled.self) { try full.send(2) }
    }

    @Test func aTaskSuspendsInsteadOfBlockingAndWakesOnData() async throws {
        let executor = ObservedExecutor()
        defer { executor.shutdown() }
        let channel = Channel<Int>(capacity: 1)
        let receiving = Task(executorPreference: executor) {
            var received: [Int] = []
            while let value = try await channel.receive() { received.append(value) }
            return received
        }
        // The task's one thread comes back idle while the channel is still empty: it suspended in
        // receive() instead of blocking its thread.
        #expect(executor.waitUntilIdle(timeout: 5), "receive() on an empty channel blocked its thread")
        let producer = Self.thread {
            for i in 0..<50 { try? channel.send(i) }
            channel.finish()
        }
        #expect(try await receiving.value == Array(0..<50))
        #expect(producer.wait(timeout: .now() + 5) == .success)
    }

    @Test func cancellingTheTaskEndsAWaitingSendOrReceive() async throws {
        let executor = ObservedExecutor()
        defer { executor.shutdown() }
        let full = Channel<Int>(capacity: 1)
        try await full.send(0)
        let sending = Task(executorPreference: executor) { try await full.send(1) }
        let empty = Channel<Int>(capacity: 1)
        let receiving = Task(executorPreference: executor) { try await empty.receive() }
        // Both have run as far as they can: suspended in the send and the receive.
        #expect(executor.waitUntilIdle(timeout: 5))
        sending.cancel()
        receiving.cancel()
        await #expect(throws: CancellationError.self) { try await sending.value }
        await #expect(throws: CancellationError.self) { try await receiving.value }
        #expect(try full.tryReceive() == .some(0))
        #expect(try full.tryReceive() == nil, "the cancelled send queued nothing")
    }
}

/// An executor for the tasks under test that runs their jobs one at a time on a thread of its own
/// and says when it has nothing to run: every task that prefers it is then suspended (or done), so a
/// test knows a task waits without sleeping to let it get there (swift-nio's EmbeddedEventLoop and
/// swift-clocks' TestClock make time the same kind of observable step).
final class ObservedExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var running = false
    private var stopped = false

    init() {
        Thread { [self] in runJobs() }.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.withLock {
            jobs.append(job)
            condition.broadcast()
        }
    }

    /// Blocks until no job is queued or running: true, or false when `timeout` (seconds) passes first.
    func waitUntilIdle(timeout: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while running || !jobs.isEmpty {
            if !condition.wait(until: deadline) { return false }
        }
        return true
    }

    /// Ends the thread once the jobs queued so far have run.
    func shutdown() {
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
    }

    private func runJobs() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopped { condition.wait() }
            if jobs.isEmpty { condition.unlock(); return }
            let job = jobs.removeFirst()
            running = true
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
            condition.withLock {
                running = false
                condition.broadcast()
            }
        }
    }
}

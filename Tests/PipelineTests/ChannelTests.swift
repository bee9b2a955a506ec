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

    @Test func aFullChannelHoldsItsProducerBack() throws {
        let channel = Channel<Int>(capacity: 2)
        let sent = Atomic<Int>(0)
        let done = Self.thread {
            for i in 0..<5 {
                try? channel.send(i)
                sent.add(1, ordering: .relaxed)
            }
        }
        // The producer gets two in, then waits: give it ample time to (wrongly) get further.
        let deadline = ContinuousClock.now + .seconds(2)
        while sent.load(ordering: .relaxed) < 2, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.001) }
        Thread.sleep(forTimeInterval: 0.2)
        #expect(sent.load(ordering: .relaxed) == 2)
        #expect(try channel.receive() == 0)
        for expected in 1..<5 { #expect(try channel.receive() == expected) }
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(sent.load(ordering: .relaxed) == 5)
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
        let receiver = Self.thread {
            do { _ = try empty.receive(); outcomes.withLock { $0.append("received") } } catch { outcomes.withLock { $0.append("\(error)") } }
        }
        let sender = Self.thread {
            do { try full.send(1); outcomes.withLock { $0.append("sent") } } catch { outcomes.withLock { $0.append("\(error)") } }
        }
        Thread.sleep(forTimeInterval: 0.1)
        let start = ContinuousClock.now
        empty.cancel()
        full.cancel()
        #expect(receiver.wait(timeout: .now() + 2) == .success)
        #expect(sender.wait(timeout: .now() + 2) == .success)
        #expect(ContinuousClock.now - start < .milliseconds(500))
        #expect(outcomes.withLock { $0 } == ["ChannelCancelled()", "ChannelCancelled()"])
        #expect(throws: ChannelCancelled.self) { try full.send(2) }
    }

    @Test func aTaskSuspendsInsteadOfBlockingAndWakesOnData() async throws {
        let channel = Channel<Int>(capacity: 1)
        let producer = Self.thread {
            Thread.sleep(forTimeInterval: 0.05)
            for i in 0..<50 { try? channel.send(i) }
            channel.finish()
        }
        var received: [Int] = []
        while let value = try await channel.receive() { received.append(value) }
        #expect(received == Array(0..<50))
        #expect(producer.wait(timeout: .now() + 5) == .success)
    }

    @Test func cancellingTheTaskEndsAWaitingSendOrReceive() async throws {
        let full = Channel<Int>(capacity: 1)
        try await full.send(0)
        let sending = Task { try await full.send(1) }
        let empty = Channel<Int>(capacity: 1)
        let receiving = Task { try await empty.receive() }
        try await Task.sleep(for: .milliseconds(50))
        sending.cancel()
        receiving.cancel()
        await #expect(throws: CancellationError.self) { try await sending.value }
        await #expect(throws: CancellationError.self) { try await receiving.value }
        #expect(try full.tryReceive() == .some(0))
        #expect(try full.tryReceive() == nil, "the cancelled send queued nothing")
    }
}

import Foundation
import MediaIO
import Synchronization

/// A bounded first-in first-out hand-over between two threads: `push` waits while full, `pop`
/// waits while empty. `close()` ends it (pushes fail, pops drain then return nil); `fail(_:)`
/// makes the consumer's next pop throw the producer's error.
final class StageQueue<Element>: @unchecked Sendable {
    private let condition = NSCondition()
    private var items: [Element] = []
    private var closed = false
    private var failure: (any Error)?
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Waits for room; false when the queue was closed.
    @discardableResult
    func push(_ item: Element) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while items.count >= capacity && !closed { condition.wait() }
        guard !closed else { return false }
        items.append(item)
        condition.broadcast()
        return true
    }

    /// The next element; waits unless `wait` is false (then nil means "nothing yet").
    /// Nil after `close()` once drained.
    func pop(wait: Bool = true) throws -> Element? {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty && !closed && failure == nil && wait { condition.wait() }
        if !items.isEmpty {
            let item = items.removeFirst()
            condition.broadcast()
            return item
        }
        if let failure { throw failure }
        return nil
    }

    /// Drops everything waiting (a quick stop does not encode frames still queued).
    func removeAll() {
        condition.lock()
        items.removeAll()
        condition.broadcast()
        condition.unlock()
    }

    func fail(_ error: any Error) {
        condition.lock()
        failure = error
        condition.broadcast()
        condition.unlock()
    }

    func close() {
        condition.lock()
        closed = true
        items.removeAll()
        condition.broadcast()
        condition.unlock()
    }
}

/// A worker thread that can be joined.
final class StageThread: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let thread: Thread

    init(name: String, _ body: @escaping @Sendable () -> Void) {
        let done = self.done
        thread = Thread {
            body()
            done.signal()
        }
        thread.name = name
        thread.stackSize = 4 << 20
        thread.start()
    }

    func join() {
        done.wait()
        done.signal()
    }
}

/// Decoding on its own thread, a few frames ahead of the filter stage, so decode, filter and
/// encode run at the same time on different cores. Frames keep their order.
final class DecodeStage: @unchecked Sendable {
    enum Event {
        case frame(TimedFrame)
        case end(MediaTime)
    }

    private let input: MediaInput
    private let queue: StageQueue<Event>
    private let stopping = Atomic<Bool>(false)
    private let decodedCount = Atomic<Int>(0)
    private let mediaTimeBits = Atomic<UInt64>(0)
    private var thread: StageThread?

    init(input: MediaInput, capacity: Int = 4) {
        self.input = input
        queue = StageQueue(capacity: capacity)
    }

    func start() {
        thread = StageThread(name: "livefilter.decode") { [self] in run() }
    }

    private func run() {
        do {
            while !stopping.load(ordering: .relaxed) {
                switch try input.poll() {
                case let .frame(frame):
                    decodedCount.store(input.framesDecoded, ordering: .relaxed)
                    mediaTimeBits.store(input.mediaTime.bitPattern, ordering: .relaxed)
                    guard queue.push(.frame(frame)) else { return }
                case .notYet:
                    usleep(2000)
                case .end:
                    decodedCount.store(input.framesDecoded, ordering: .relaxed)
                    queue.push(.end(input.lastFrameEnd ?? .zero))
                    return
                }
            }
        } catch {
            queue.fail(error)
        }
    }

    /// The next event; with `wait: false`, nil when the decoder has nothing ready (live inputs).
    func next(wait: Bool) throws -> Event? {
        try queue.pop(wait: wait)
    }

    /// Stops decoding and waits for the thread to leave.
    func stop() {
        stopping.store(true, ordering: .relaxed)
        queue.close()
        thread?.join()
        thread = nil
    }

    var framesDecoded: Int { decodedCount.load(ordering: .relaxed) }
    var mediaTime: Double { Double(bitPattern: mediaTimeBits.load(ordering: .relaxed)) }
}

import Foundation
import HLS

/// What the reader knows of a segment when its first byte goes into the feed.
public struct FeedSegment: Sendable {
    /// Media Sequence Number.
    public var sequenceNumber: Int
    /// Discontinuity Sequence Number: a new one starts a new timeline.
    public var discontinuitySequence: Int
    public var uri: String
    public var duration: Double
    /// EXT-X-PROGRAM-DATE-TIME of the segment's first sample, where the playlist gives one.
    public var programDateTime: Date?
    /// AES-128: the bytes that follow are the ciphertext of the whole segment (CBC, PKCS7).
    public var aes128: AESParameters?
    /// The initialization section (EXT-X-MAP) the segment needs.
    public var initialization: InitializationBytes?
    /// The demuxer must start afresh here although the timeline goes on: the stream was cut (a
    /// seek, a segment given up half-way in a container that cannot resynchronise, a restarted origin).
    public var restart: Bool
    /// The first bytes come from a part, not the start of a whole segment resource (LL-HLS).
    public var firstPart: Int?
    /// The older ad markers written before the segment (`EXT-X-CUE-OUT`, `-CUE-OUT-CONT`, `-CUE-IN`).
    public var cueMarkers: [CueMarker] = []
    /// Every EXT-X-DATERANGE of the playlist as it was when the segment was taken from it: the
    /// demuxer places each by its START-DATE against the segments' dates, and sees the updates.
    public var dateRanges: [DateRange] = []
}

/// An initialization section's bytes and what identifies it (URI and range).
public struct InitializationBytes: Sendable, Equatable {
    public var identity: String
    public var bytes: [UInt8]
    /// Set when the section itself is encrypted (AES-128 with an explicit IV).
    public var aes128: AESParameters?
}

/// An AES-128 key and initialization vector (16 bytes each). Decryption is the demuxer's (libavutil's AES).
public struct AESParameters: Sendable, Equatable {
    public var key: [UInt8]
    public var iv: [UInt8]
}

/// The hand-off between the HLS reader (async, on the cooperative pool) and the demuxer's read
/// callback (blocking, on the read stage's thread): segments' bytes in order, with a bound on what
/// waits so a fast network cannot fill memory. The consumer blocks on a condition variable; the
/// producer awaits room without a thread.
public final class ByteFeed: @unchecked Sendable {
    public enum Item: Sendable {
        case segment(FeedSegment)
        case bytes([UInt8])
        /// The segment's bytes are complete (`complete`), or it was given up part-way.
        case segmentEnd(complete: Bool)
        /// An LL-HLS part's bytes are complete: a demuxer may give up what it holds here (parts are
        /// cut where a picture starts) when the next part is not here yet.
        case partEnd
    }

    /// How the feed ended, after its last item.
    public enum End: Sendable {
        case endOfStream
        case failed(HLSInputError)
        case cancelled
    }

    private let condition = NSCondition()
    private var items: [Item] = []
    private var head = 0
    private var queuedBytes = 0
    private var end: End?
    private var roomWaiters: [CheckedContinuation<Void, Never>] = []
    private let capacity: Int

    /// - Parameter capacity: bytes that may wait; the producer waits beyond it.
    public init(capacity: Int) {
        self.capacity = capacity
    }

    // MARK: producer

    /// Appends an item; waits while the feed is full. Throws `CancellationError` once the feed is closed.
    public func push(_ item: Item) async throws {
        while true {
            let full: Bool = condition.withLock {
                if end != nil { return false }
                return queuedBytes >= capacity
            }
            if !full { break }
            await withCheckedContinuation { continuation in
                condition.lock()
                if end != nil || queuedBytes < capacity {
                    condition.unlock()
                    continuation.resume()
                } else {
                    roomWaiters.append(continuation)
                    condition.unlock()
                }
            }
        }
        try condition.withLock {
            if end != nil { throw CancellationError() }
            if case let .bytes(b) = item { queuedBytes += b.count }
            items.append(item)
            condition.broadcast()
        }
    }

    /// No more items: the consumer reads what is queued, then `end`.
    public func finish(_ how: End) {
        let waiters: [CheckedContinuation<Void, Never>] = condition.withLock {
            if end == nil { end = how }
            condition.broadcast()
            defer { roomWaiters = [] }
            return roomWaiters
        }
        waiters.forEach { $0.resume() }
    }

    /// Drops what is queued and ends the feed at once (a stop).
    public func cancel() {
        let waiters: [CheckedContinuation<Void, Never>] = condition.withLock {
            items = []
            head = 0
            queuedBytes = 0
            end = .cancelled
            condition.broadcast()
            defer { roomWaiters = [] }
            return roomWaiters
        }
        waiters.forEach { $0.resume() }
    }

    /// Whether the feed was cancelled (the reader stops at its next push).
    public var isCancelled: Bool { condition.withLock { if case .cancelled = end { return true } else { return false } } }

    // MARK: consumer

    public enum Next {
        case item(Item)
        case end(End)
    }

    /// The next item, blocking until there is one or the feed ends.
    /// Nothing is queued and the feed has not ended: `next()` would wait for the network.
    public var wouldWait: Bool { condition.withLock { head == items.count && end == nil } }

    public func next() -> Next {
        condition.lock()
        while head == items.count && end == nil { condition.wait() }
        if head == items.count {
            let how = end!
            condition.unlock()
            return .end(how)
        }
        let item = items[head]
        // Release the bytes now: a consumed slot stays in the array until it is compacted.
        items[head] = .segmentEnd(complete: true)
        head += 1
        if head > 1024 { items.removeFirst(head); head = 0 }
        var waiters: [CheckedContinuation<Void, Never>] = []
        if case let .bytes(b) = item {
            queuedBytes -= b.count
            if queuedBytes < capacity { waiters = roomWaiters; roomWaiters = [] }
        }
        condition.unlock()
        waiters.forEach { $0.resume() }
        return .item(item)
    }
}

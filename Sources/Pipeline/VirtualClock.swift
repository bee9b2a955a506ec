import MediaIO
import Synchronization

/// A clock whose time moves only when asked: `sleep(until:)` jumps straight to the deadline and
/// `advance(by:)` models work that takes time. Offline runs use it to go as fast as the machine
/// can while keeping the display-link logic; tests use it to run a live schedule without sleeping.
public final class VirtualClock: Clock, Sendable {
    public struct Instant: InstantProtocol, Sendable {
        public var offset: Duration
        public init(offset: Duration) { self.offset = offset }
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }

    private let current = Mutex(Instant(offset: .zero))

    public init() {}

    public var now: Instant { current.withLock { $0 } }
    public var minimumResolution: Duration { .zero }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        current.withLock { if $0 < deadline { $0 = deadline } }
    }

    /// Moves time forward, as work that takes `duration` would.
    public func advance(by duration: Duration) {
        current.withLock { $0 = $0.advanced(by: duration) }
    }
}

extension Rational {
    /// `count` periods of this rate (count × den / num seconds), exact to the attosecond.
    func duration(ofTicks count: Int64) -> Duration {
        let total = count * Int64(denominator)
        let seconds = total / Int64(numerator)
        let remainder = total % Int64(numerator)
        let attoseconds = Int64((Double(remainder) / Double(numerator) * 1e18).rounded())
        return Duration(secondsComponent: seconds, attosecondsComponent: attoseconds)
    }
}

import Synchronization

/// When a quick stop began draining: encoders stop taking packets from their look-ahead after it,
/// and the audio encoder's tail is not flushed. Nil for a run that ends normally.
final class StopDeadline: Sendable {
    private let deadline = Mutex<ContinuousClock.Instant?>(nil)

    func set(_ instant: ContinuousClock.Instant) { deadline.withLock { $0 = instant } }
    var instant: ContinuousClock.Instant? { deadline.withLock { $0 } }
}

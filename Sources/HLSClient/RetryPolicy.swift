/// How long to wait before trying again after a run of failures: doubling from `first`, never more
/// than `longest`. One policy for every retry of an input — the HLS reader's segment, key and map
/// requests and its playlist reloads, a pushed input's reconnects — each with its own numbers. The
/// caller decides when to give up (a time window, a stop); the policy only spaces the attempts.
public struct RetryPolicy: Sendable, Equatable {
    /// The wait after the first failure.
    public var first: Duration
    /// The longest wait, however many failures came before.
    public var longest: Duration

    public init(first: Duration, longest: Duration) {
        self.first = first
        self.longest = max(first, longest)
    }

    /// The wait after the `failures`-th failure in a row (1 for the first).
    public func delay(afterFailures failures: Int) -> Duration {
        var delay = first
        var n = max(1, failures)
        // Doubling stops at `longest`: no shift that overflows for a huge count.
        while n > 1 && delay < longest {
            delay *= 2
            n -= 1
        }
        return min(delay, longest)
    }

    /// Waits `delay(afterFailures:)`; false when the task was cancelled meanwhile (the wait ends then).
    public func wait(afterFailures failures: Int) async -> Bool {
        (try? await Task.sleep(for: delay(afterFailures: failures))) != nil && !Task.isCancelled
    }

    /// A segment, key or map request of the HLS reader: 0.2, 0.4, 0.8, then 1 s (within `--io-timeout`).
    public static let segment = RetryPolicy(first: .milliseconds(200), longest: .seconds(1))
    /// A live playlist's failed reload: 0.2 s doubling to 2 s (the stall timeout decides when to stop).
    public static let reload = RetryPolicy(first: .milliseconds(200), longest: .seconds(2))
    /// A pushed input's caller that cannot connect (an RTSP server restarting): 0.25 s doubling to
    /// 2 s, not thousands of attempts a second.
    public static let reconnect = RetryPolicy(first: .milliseconds(250), longest: .seconds(2))
}

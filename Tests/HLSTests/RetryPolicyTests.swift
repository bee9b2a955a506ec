import HLSClient
import Testing

/// One retry policy for the HLS reader's segment, key and map requests, its playlist reloads and a
/// pushed input's reconnects: the schedules as they were written three ways before, now one rule.
@Suite("RetryPolicy: one back-off for the reader and the reconnects")
struct RetryPolicyTests {
    static func ms(_ policy: RetryPolicy, _ failures: ClosedRange<Int>) -> [Int64] {
        failures.map { n in
            let c = policy.delay(afterFailures: n).components
            return c.seconds * 1000 + c.attoseconds / 1_000_000_000_000_000
        }
    }

    @Test("segments, keys and maps: 0.2, 0.4, 0.8 s, then 1 s")
    func segment() {
        #expect(Self.ms(.segment, 1...6) == [200, 400, 800, 1000, 1000, 1000])
    }

    @Test("playlist reloads: 0.2 s doubling to 2 s")
    func reload() {
        #expect(Self.ms(.reload, 1...7) == [200, 400, 800, 1600, 2000, 2000, 2000])
    }

    @Test("a pushed input's caller that cannot connect: 0.25 s doubling to 2 s")
    func reconnect() {
        #expect(Self.ms(.reconnect, 1...6) == [250, 500, 1000, 2000, 2000, 2000])
    }

    @Test("never shorter than the first, never longer than the longest, never decreasing; no overflow for any count",
          arguments: [RetryPolicy.segment, .reload, .reconnect, RetryPolicy(first: .milliseconds(3), longest: .seconds(3600))])
    func bounded(policy: RetryPolicy) {
        var previous = Duration.zero
        for n in [0, 1, 2, 3, 10, 63, 64, 65, 1_000, Int.max] {
            let d = policy.delay(afterFailures: n)
            #expect(d >= policy.first && d <= policy.longest, "after \(n): \(d)")
            #expect(d >= previous, "after \(n): \(d) < \(previous)")
            previous = d
        }
        #expect(policy.delay(afterFailures: .max) == policy.longest)
    }

    @Test("a longest below the first is the first: the policy never waits less than it says first")
    func inverted() {
        #expect(RetryPolicy(first: .seconds(1), longest: .milliseconds(10)).delay(afterFailures: 5) == .seconds(1))
    }

    @Test("a wait ends with its task's cancellation, at once", .timeLimit(.minutes(1)))
    func cancelledWait() async {
        let policy = RetryPolicy(first: .seconds(30), longest: .seconds(30))
        let started = ContinuousClock.now
        let waiting = Task { await policy.wait(afterFailures: 1) }
        try? await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        let completed = await waiting.value
        #expect(!completed)
        #expect(ContinuousClock.now - started < .seconds(2))
    }
}

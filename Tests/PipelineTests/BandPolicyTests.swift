@_spi(Testing) import Pipeline
import Testing

/// When the filter stage lets its passes split across cores: only when it is busy most of the time,
/// after its warm-up, and back on one core when the work would fit there with room to spare.
@Suite struct BandPolicyTests {
    static let ms: UInt64 = 1_000_000

    /// Feeds `pictures` pictures of `busy` ms each, one every `period` ms; returns the bands after each.
    static func feed(_ policy: inout BandPolicy, pictures: Int, busy: Double, period: Double, from start: inout UInt64) -> [Int] {
        (0..<pictures).map { _ in
            start += UInt64(period * Double(ms))
            policy.record(busyNanoseconds: UInt64(busy * Double(ms)), finishedAt: start)
            return policy.bands
        }
    }

    static let afterWarmUp = 1 + BandPolicy.window * (BandPolicy.warmUpWindows + 1)

    @Test func aStageThatKeepsUpStaysOnOneCore() {
        var policy = BandPolicy(available: 2), now: UInt64 = 0
        // 1.3 ms of 33 (a live 1080p30 chain) and 1.8 of 5 (a null run, the decoder the slowest stage).
        #expect(Self.feed(&policy, pictures: 200, busy: 1.3, period: 33.3, from: &now).allSatisfy { $0 == 1 })
        #expect(Self.feed(&policy, pictures: 200, busy: 1.8, period: 5, from: &now).allSatisfy { $0 == 1 })
        // Just under the threshold.
        #expect(Self.feed(&policy, pictures: 200, busy: 3.7, period: 5, from: &now).allSatisfy { $0 == 1 })
    }

    @Test func aBusyStageSplitsAfterItsWarmUpAndStaysSplit() {
        var policy = BandPolicy(available: 2), now: UInt64 = 0
        let bands = Self.feed(&policy, pictures: 100, busy: 9, period: 10, from: &now)
        #expect(bands[..<(Self.afterWarmUp - 1)].allSatisfy { $0 == 1 }, "the warm-up windows decide nothing")
        #expect(bands[Self.afterWarmUp - 1] == 2)
        // Split, the work takes a little over half as long: 0.55 of the time, ×2 is above joinBelow.
        #expect(Self.feed(&policy, pictures: 200, busy: 5.5, period: 10, from: &now).allSatisfy { $0 == 2 })
        // The load falls (a lighter chain): 0.1 of the time, at most 0.2 on one core. Back to one band.
        let lighter = Self.feed(&policy, pictures: 2 * BandPolicy.window, busy: 1, period: 10, from: &now)
        #expect(lighter.last == 1)
    }

    @Test func oneCoreNeverSplits() {
        var policy = BandPolicy(available: 1), now: UInt64 = 0
        #expect(Self.feed(&policy, pictures: 200, busy: 10, period: 10, from: &now).allSatisfy { $0 == 1 })
    }

    @Test func theTimeBeforeTheFirstPictureIsNotCounted() {
        var policy = BandPolicy(available: 2)
        // Start-up took a second, then pictures arrive back to back, all work.
        var now: UInt64 = 1000 * Self.ms
        #expect(Self.feed(&policy, pictures: 100, busy: 4, period: 4, from: &now).last == 2)
    }
}

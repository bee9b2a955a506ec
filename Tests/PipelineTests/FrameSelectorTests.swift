import MediaIO
import Pipeline
import Testing

/// The display-link rule on synthetic timestamps: tick k shows the newest frame with time ≤ k/rate.
struct FrameSelectorTests {
    /// Runs frames (times in 1/1000 s) through a selector; returns, per tick, the frame index shown.
    func schedule(_ times: [Int64], end: Int64, rate: Rational) -> (shown: [Int], fresh: [Bool], dropped: Int, repeated: Int) {
        var selector = FrameSelector<Int>(rate: rate)
        var ticks: [FrameSelector<Int>.Tick] = []
        for (i, t) in times.enumerated() {
            ticks += selector.offer(i, at: MediaTime(value: t, numerator: 1, denominator: 1000))
        }
        ticks += selector.finish(at: MediaTime(value: end, numerator: 1, denominator: 1000))
        #expect(ticks.map(\.index) == Array(0..<Int64(ticks.count)), "ticks are numbered 0, 1, 2, …")
        return (ticks.map(\.payload), ticks.map(\.isNewFrame), selector.droppedFrames, selector.repeatedTicks)
    }

    /// Independent statement of the rule, by brute force over each tick.
    func expectedShown(_ times: [Int64], end: Int64, rate: Rational) -> [Int] {
        var shown: [Int] = []
        var k = 0
        while true {
            // Tick k at k * den / num seconds = k * den * 1000 / num milliseconds (exact compare).
            let targetTimesNum = Int64(k) * Int64(rate.denominator) * 1000
            if !(targetTimesNum < end * Int64(rate.numerator)) && k > 0 { break }
            let newest = times.indices.last(where: { times[$0] * Int64(rate.numerator) <= targetTimesNum }) ?? 0
            shown.append(newest)
            k += 1
        }
        return shown
    }

    @Test func sameRatePassesEveryFrameOnce() {
        let times = (0..<30).map { Int64($0) * 1000 / 30 }
        let r = schedule(times, end: 1000, rate: Rational(30, 1))
        #expect(r.shown == Array(0..<30))
        #expect(r.fresh.allSatisfy { $0 })
        #expect(r.dropped == 0 && r.repeated == 0)
    }

    @Test func halfRateDropsEveryOtherFrame() {
        let times = (0..<60).map { Int64($0) * 1000 / 60 }
        let r = schedule(times, end: 1000, rate: Rational(30, 1))
        #expect(r.shown == Array(stride(from: 0, to: 60, by: 2)))
        #expect(r.dropped == 30 && r.repeated == 0)
    }

    @Test func doubleRateRepeatsEachFrameOnceWithoutRefiltering() {
        let times = (0..<15).map { Int64($0) * 1000 / 15 }
        let r = schedule(times, end: 1000, rate: Rational(30, 1))
        #expect(r.shown == (0..<15).flatMap { [$0, $0] })
        #expect(r.fresh == (0..<15).flatMap { _ in [true, false] })
        #expect(r.repeated == 15 && r.dropped == 0)
    }

    @Test(arguments: [Rational(30, 1), Rational(30000, 1001), Rational(24, 1), Rational(25, 2)])
    func variableFrameRateMatchesTheRule(rate: Rational) {
        // Irregular input: bursts, gaps and a stall of 700 ms.
        var times: [Int64] = [0, 10, 20, 33, 90, 100, 101, 140, 840, 850, 900, 1000, 1033, 1066, 1500, 1510]
        times.sort()
        let end: Int64 = 1600
        let r = schedule(times, end: end, rate: rate)
        #expect(r.shown == expectedShown(times, end: end, rate: rate))
        // Duration is preserved within one output frame.
        let outDuration = Double(r.shown.count) * Double(rate.denominator) / Double(rate.numerator)
        #expect(abs(outDuration - 1.6) <= Double(rate.denominator) / Double(rate.numerator) + 1e-9)
    }

    @Test func stalledInputRepeatsTheLastFrame() {
        let r = schedule([0, 33, 66], end: 1000, rate: Rational(30, 1))
        #expect(r.shown.count == 30)
        #expect(r.shown.suffix(27).allSatisfy { $0 == 2 })
        #expect(r.repeated == 27)
    }

    @Test func frameExactlyOnATickBelongsToThatTick() {
        // 1/30 s in a 1/90000 time base is exactly 3000: the frame must show at tick 1, not tick 2.
        var selector = FrameSelector<Int>(rate: Rational(30, 1))
        var ticks = selector.offer(0, at: MediaTime(value: 0, numerator: 1, denominator: 90000))
        ticks += selector.offer(1, at: MediaTime(value: 3000, numerator: 1, denominator: 90000))
        ticks += selector.finish(at: MediaTime(value: 6000, numerator: 1, denominator: 90000))
        #expect(ticks.map(\.payload) == [0, 1])
    }

    @Test func lateStartHoldsTheFirstFrameBackwards() {
        let r = schedule([500, 533], end: 566, rate: Rational(30, 1))
        #expect(r.shown.count == 17)
        #expect(r.shown.prefix(16).allSatisfy { $0 == 0 })
    }

    @Test func exactTimeComparison() {
        let a = MediaTime(value: 1001, numerator: 1, denominator: 30000)
        let b = MediaTime(value: 1, numerator: 1001, denominator: 30000)
        #expect(a == b)
        #expect(MediaTime(value: 1, numerator: 1, denominator: 3) < MediaTime(value: 333_334, numerator: 1, denominator: 1_000_000))
    }
}

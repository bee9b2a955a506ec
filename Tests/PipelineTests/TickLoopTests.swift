import MediaIO
import Pipeline
import Testing

/// A synthetic input: frame i has media time `times[i]` (ms) and becomes available at `arrivals[i]`
/// on the virtual clock. Offline inputs (no arrivals) always have the next frame ready.
struct ScriptedInput: TickInput {
    let clock: VirtualClock
    let times: [Int64]
    let arrivals: [Int64]?
    let end: Int64
    var next = 0
    var newestArrived: Int64?
    /// Frames that come back after an input loss (`.resume`).
    var resumes: Set<Int> = []

    /// When frame i is decoded (≥ its arrival), for inputs whose decoder trails the delivery.
    let decoded: [Int64]?

    /// - Parameter decodeMilliseconds: frame i's decoding time (a decoder that decodes one frame
    ///   at a time, starting when the frame has arrived and the previous one is done).
    init(clock: VirtualClock, times: [Int64], arrivals: [Int64]? = nil, end: Int64, decodeMilliseconds: ((Int) -> Int64)? = nil) {
        self.clock = clock
        self.times = times
        self.arrivals = arrivals
        self.end = end
        if let arrivals, let decodeMilliseconds {
            var done: [Int64] = []
            for (i, arrival) in arrivals.enumerated() { done.append(max(arrival, done.last ?? 0) + decodeMilliseconds(i)) }
            decoded = done
        } else {
            decoded = nil
        }
    }

    static func ms(_ v: Int64) -> MediaTime { MediaTime(value: v, numerator: 1, denominator: 1000) }

    /// 20 s of 30 fps live input in 2 s segments, each published when it ends, joined 6 s (three
    /// segments) behind the edge: the first 4 s are there at once.
    static func joinedSixSecondsBehind(clock: VirtualClock, decodeMilliseconds: ((Int) -> Int64)? = nil) -> ScriptedInput {
        let segment: Int64 = 2000
        let times = (0..<600).map { Int64($0) * 1000 / 30 }
        let arrivals = times.map { max(0, ($0 / segment + 1) * segment - 3 * segment) }
        return ScriptedInput(clock: clock, times: times, arrivals: arrivals, end: 20_000, decodeMilliseconds: decodeMilliseconds)
    }

    var nowMilliseconds: Int64 {
        let c = clock.now.offset.components
        return c.seconds * 1000 + c.attoseconds / 1_000_000_000_000_000
    }

    mutating func poll() throws -> TickInputEvent<Int> {
        guard next < times.count else { return .end(Self.ms(end)) }
        if let arrivals {
            guard (decoded ?? arrivals)[next] <= nowMilliseconds else { return .notYet }
            newestArrived = times[next]
        }
        defer { next += 1 }
        return resumes.contains(next) ? .resume(next, Self.ms(times[next])) : .frame(next, Self.ms(times[next]))
    }

    /// Sleeps until the next frame is decoded or the deadline, whichever comes first: exactly when
    /// a real input would wake the loop.
    mutating func wait<C: Clock>(until deadline: C.Instant?, on clock: C) async throws where C.Duration == Duration {
        guard let ready = next < times.count ? (decoded ?? arrivals)?[next] : nil else {
            if let deadline { try await clock.sleep(until: deadline, tolerance: nil) }
            return
        }
        let wake = clock.now.advanced(by: .milliseconds(max(0, ready - nowMilliseconds)))
        try await clock.sleep(until: deadline.map { min($0, wake) } ?? wake, tolerance: nil)
    }

    var runsAheadOfClock: Bool { arrivals != nil }
    /// Arrived but not yet decoded.
    var hasBacklog: Bool { next < times.count && arrivals.map { $0[next] <= nowMilliseconds } == true }
    /// Frames last a 30 fps period.
    var nextFrameNotBefore: MediaTime? { next == 0 ? nil : Self.ms(times[next - 1] + 33) }

    var liveEdge: MediaTime? {
        guard arrivals != nil else { return nil }
        // Everything that has arrived by now, not just what was polled.
        let now = nowMilliseconds
        let arrived = zip(times, arrivals!).filter { $0.1 <= now }.map(\.0).max()
        return arrived.map(Self.ms)
    }
}

struct TickLoopTests {
    @Test func offlineRunMatchesTheSelectorRule() async throws {
        let times: [Int64] = [0, 10, 20, 33, 90, 100, 101, 140, 840, 850, 900, 1000, 1033, 1066, 1500, 1510]
        let clock = VirtualClock()
        var input = ScriptedInput(clock: clock, times: times, end: 1600)
        var shown: [Int] = []
        let stats = try await TickLoop<Int>(rate: Rational(30, 1)).run(clock: clock, input: &input) { shown.append($0.payload) }

        var selector = FrameSelector<Int>(rate: Rational(30, 1))
        var expected: [Int] = []
        for (i, t) in times.enumerated() { expected += selector.offer(i, at: ScriptedInput.ms(t)).map(\.payload) }
        expected += selector.finish(at: ScriptedInput.ms(1600)).map(\.payload)
        #expect(shown == expected)
        #expect(stats.ticks == 48)
        #expect(stats.droppedFrames == selector.droppedFrames)
        #expect(stats.repeatedTicks == selector.repeatedTicks)
    }

    @Test func stalledLiveInputRepeatsTheLastFrame() async throws {
        // 30 fps frames, arriving on time, except a 1 s stall after frame 30 (frames 31… arrive late in a burst).
        let times = (0..<90).map { Int64($0) * 1000 / 30 }
        let arrivals = times.enumerated().map { $0.offset <= 30 ? $0.element : max($0.element, 2000) }
        let clock = VirtualClock()
        var input = ScriptedInput(clock: clock, times: times, arrivals: arrivals, end: 3000)
        var ticks: [(index: Int64, frame: Int, new: Bool)] = []
        let stats = try await TickLoop<Int>(rate: Rational(30, 1), maxLatency: .seconds(5)).run(clock: clock, input: &input) {
            ticks.append(($0.index, $0.payload, $0.isNewFrame))
        }
        // Ticks keep coming at a constant rate through the stall, showing frame 30 again.
        #expect(ticks.map(\.index) == Array(0..<Int64(ticks.count)))
        let stalled = ticks.filter { $0.index > 30 && $0.index < 60 }
        #expect(stalled.allSatisfy { $0.frame == 30 && !$0.new })
        #expect(stats.repeatedTicks >= 29)
        #expect(ticks.count >= 90)
    }

    @Test func inputBackAfterALossIsShownAResumeDelayLaterWithTheOutputContinuous() async throws {
        // 2 s of 30 fps on time; then nothing until 5 s on the wall clock; then the input is back
        // (its stitched timeline goes on from 2 s) in real time for 2 s.
        let times = (0..<120).map { Int64($0) * 1000 / 30 }
        let arrivals = times.enumerated().map { $0.offset < 60 ? $0.element : 5000 + $0.element - 2000 }
        let clock = VirtualClock()
        var input = ScriptedInput(clock: clock, times: times, arrivals: arrivals, end: 4000)
        input.resumes = [60]
        var ticks: [(index: Int64, frame: Int, new: Bool)] = []
        var resumedAt: [MediaTime] = []
        let stats = try await TickLoop<Int>(rate: Rational(30, 1), maxLatency: .seconds(10))
            .run(clock: clock, input: &input, resumeDelay: .seconds(1), onResume: { resumedAt.append($0) }) {
                ticks.append(($0.index, $0.payload, $0.isNewFrame))
            }
        #expect(resumedAt.count == 1)
        // One tick per output period, no index missing: the output's timeline never jumps.
        #expect(ticks.map(\.index) == Array(0..<Int64(ticks.count)))
        // Frame 60 arrives at 5.0 s on the clock (tick 150) and is shown a second later.
        let first = try #require(ticks.first { $0.frame == 60 })
        #expect((179...181).contains(first.index), "frame 60 at tick \(first.index)")
        // Until then the last picture is held; after, every returning frame is shown once.
        #expect(ticks.filter { $0.index > 59 && $0.index < first.index }.allSatisfy { $0.frame == 59 && !$0.new })
        #expect(Set(ticks.filter(\.new).map(\.frame)) == Set(0..<120))
        #expect(stats.droppedFrames == 0)
    }

    @Test func slowChainOnLiveClockDropsFramesAndKeepsLatencyBounded() async throws {
        // 20 s of 30 fps live input arriving in real time; filtering takes 2.5 frame periods.
        let times = (0..<600).map { Int64($0) * 1000 / 30 }
        let clock = VirtualClock()
        var input = ScriptedInput(clock: clock, times: times, arrivals: times, end: 20_000)
        var newFrames = 0
        var indices: [Int64] = []
        let stats = try await TickLoop<Int>(rate: Rational(30, 1), maxLatency: .seconds(1)).run(clock: clock, input: &input) { tick in
            indices.append(tick.index)
            if tick.isNewFrame {
                newFrames += 1
                clock.advance(by: .milliseconds(83))
            }
        }
        #expect(indices == Array(0..<Int64(indices.count)), "output stays constant-rate")
        #expect(stats.droppedFrames > 100, "a slow chain drops input frames")
        #expect(stats.lateTicks > 0)
        #expect(stats.maximumLatency <= .seconds(1) + .milliseconds(100))
        #expect(newFrames < 300)
        // Wall time tracks media time: the run does not fall behind by more than the latency bound.
        #expect(clock.now.offset <= .seconds(21) + .milliseconds(500))
    }

    @Test func liveInputFarAheadIsSkippedToTheEdge() async throws {
        // A whole 10 s arrives at once (segments fetched in a burst) while max latency is 2 s.
        let times = (0..<300).map { Int64($0) * 1000 / 30 }
        let clock = VirtualClock()
        var input = ScriptedInput(clock: clock, times: times, arrivals: times.map { _ in 0 }, end: 10_000)
        var count = 0
        let stats = try await TickLoop<Int>(rate: Rational(30, 1), maxLatency: .seconds(2)).run(clock: clock, input: &input) { _ in count += 1 }
        #expect(stats.latencySkips >= 1)
        #expect(stats.droppedFrames > 100)
        #expect(count < 150)
    }

    @Test func liveRunJoinedBehindTheEdgeCatchesUpThenKeepsPace() async throws {
        // 20 s of 30 fps live input in 2 s segments; the run joins with 3 segments (6 s) already
        // published, then a segment arrives every 2 s, whole. Each frame takes 10 ms to filter.
        let clock = VirtualClock()
        var input = ScriptedInput.joinedSixSecondsBehind(clock: clock)
        var emitted: [(index: Int64, at: Int64, new: Bool)] = []
        let stats = try await TickLoop<Int>(rate: Rational(30, 1), maxLatency: .seconds(10)).run(clock: clock, input: &input) { tick in
            if tick.isNewFrame { clock.advance(by: .milliseconds(10)) }
            let now = clock.now.offset.components
            emitted.append((tick.index, now.seconds * 1000 + now.attoseconds / 1_000_000_000_000_000, tick.isNewFrame))
        }
        #expect(emitted.map(\.index) == Array(0..<600))
        #expect(stats.repeatedTicks == 0 && stats.droppedFrames == 0, "every frame shown once")
        // The 6 s joined behind the edge are worked through in 180 × 10 ms, not 6 s of clock.
        #expect(emitted[179].at <= 2000)
        // After that, each segment's last tick is emitted once its 60 frames are done (600 ms of
        // work) after it arrived: the display link no longer lags by the join distance.
        for first in stride(from: 240, to: 600, by: 60) {
            let last = emitted[first + 59]
            let arrival = input.arrivals![first + 59]
            #expect(last.at - arrival <= 700, "segment at tick \(first): emitted \(last.at) ms, arrived \(arrival) ms")
        }
        #expect(stats.lateTicks == 0)
    }

    @Test(arguments: [(startDelay: 2000, repeats: false), (startDelay: 0, repeats: true)])
    func liveRunJoinedAtTheNewestSegmentHasASegmentOfSlack(startDelay: Int64, repeats: Bool) async throws {
        // `--live-start edge`: the run joins at the newest segment (read at once), then each
        // segment comes 2 s after the one before, some up to 1.5 s late (a reload that missed it).
        // With the plan's start delay of one target duration nothing repeats and each segment is
        // out within its work of its arrival; without it, every late segment repeats pictures.
        let clock = VirtualClock()
        let late: [Int64] = [0, 900, 200, 1500, 0, 1200, 600, 1400, 100, 1000]
        let times = (0..<600).map { Int64($0) * 1000 / 30 }
        let arrivals = (0..<600).map { Int64($0 / 60) * 2000 + late[$0 / 60] }
        var input = ScriptedInput(clock: clock, times: times, arrivals: arrivals, end: 20_000)
        var emitted: [(index: Int64, at: Int64)] = []
        let stats = try await TickLoop<Int>(rate: Rational(30, 1), maxLatency: .seconds(10))
            .run(clock: clock, input: &input, startDelay: .milliseconds(startDelay)) { tick in
                if tick.isNewFrame { clock.advance(by: .milliseconds(10)) }
                let now = clock.now.offset.components
                emitted.append((tick.index, now.seconds * 1000 + now.attoseconds / 1_000_000_000_000_000))
            }
        #expect(emitted.map(\.index) == Array(0..<600))
        if repeats {
            #expect(stats.repeatedTicks > 30, "\(stats.repeatedTicks) repeated")
        } else {
            #expect(stats.repeatedTicks == 0 && stats.droppedFrames == 0 && stats.lateTicks == 0)
            for first in stride(from: 0, to: 600, by: 60) {
                let last = emitted[first + 59]
                #expect(last.at - arrivals[first + 59] <= 700, "segment at tick \(first): emitted \(last.at) ms, arrived \(arrivals[first + 59]) ms")
            }
        }
    }

    @Test func liveRunWarmingUpBehindTheEdgeIsNotLate() async throws {
        // As above, but the first second of frames takes 50 ms each (encoder and caches warming
        // up, another stream starting on the same cores): behind the first frame's schedule, yet
        // every picture it works on was already waiting, so nothing is late and nothing repeats.
        let clock = VirtualClock()
        var input = ScriptedInput.joinedSixSecondsBehind(clock: clock)
        var shown = 0
        let stats = try await TickLoop<Int>(rate: Rational(30, 1), maxLatency: .seconds(10)).run(clock: clock, input: &input) { tick in
            if tick.isNewFrame { clock.advance(by: .milliseconds(shown < 30 ? 50 : 10)); shown += 1 }
        }
        #expect(stats.lateTicks == 0 && stats.repeatedTicks == 0 && stats.droppedFrames == 0)
        // Caught up once the backlog and the segment that came meanwhile were done: 30 × 50 ms +
        // 210 × 10 ms, then it waited for the segment published at 4 s.
        let caughtUp = try #require(stats.caughtUpAfter)
        #expect(caughtUp >= .milliseconds(3500) && caughtUp <= .milliseconds(4100), "caught up after \(caughtUp)")
    }

    @Test func liveRunTooSlowToCatchUpIsLateAfterTheLatencyBound() async throws {
        // Joined 6 s behind, every frame takes 50 ms: it never catches up, so after the latency
        // bound's time its ticks count as late again (and shed work) instead of hiding the lag.
        let clock = VirtualClock()
        var input = ScriptedInput.joinedSixSecondsBehind(clock: clock)
        var repeatsCatchingUp = 0
        let stats = try await TickLoop<Int>(rate: Rational(30, 1), maxLatency: .seconds(4)).run(clock: clock, input: &input) { tick in
            if !tick.isNewFrame, clock.now.offset < .seconds(4) { repeatsCatchingUp += 1 }
            if tick.isNewFrame { clock.advance(by: .milliseconds(50)) }
        }
        // The skip to the edge at the start was a whole number of periods: while it catches up,
        // each tick has its own frame (an odd skip repeated one tick in three).
        #expect(stats.latencySkips == 1 && repeatsCatchingUp == 0)
        #expect(stats.caughtUpAfter == nil)
        #expect(stats.lateTicks > 0 && stats.repeatedTicks > 0, "\(stats)")
    }

    @Test func liveRunWaitingForItsDecoderIsStillCatchingUp() async throws {
        // Joined 6 s behind; the decoder takes 45 ms a frame for its first 30 frames (threads
        // starting), then 5 ms. The loop waits for the decoder, not for the input: it is catching
        // up, not at the edge, so nothing is late; it reaches the edge later and keeps pace there.
        let clock = VirtualClock()
        var input = ScriptedInput.joinedSixSecondsBehind(clock: clock, decodeMilliseconds: { $0 < 30 ? 45 : 5 })
        let stats = try await TickLoop<Int>(rate: Rational(30, 1), maxLatency: .seconds(10)).run(clock: clock, input: &input) { tick in
            if tick.isNewFrame { clock.advance(by: .milliseconds(10)) }
        }
        #expect(stats.lateTicks == 0 && stats.repeatedTicks == 0 && stats.droppedFrames == 0)
        let caughtUp = try #require(stats.caughtUpAfter)
        #expect(caughtUp >= .milliseconds(2000), "caught up after \(caughtUp): it waited for the decoder, not the input")
    }
}

import MediaIO
import Pipeline
import Testing

/// `--overload adapt`: the plan's steps, the controller's decisions on made-up observations, and
/// the tick loop waiting for a late frame instead of repeating and dropping it.
struct OverloadTests {
    static func plan(inputRate: Double = 30, preset: EncoderSpeedPreset = .veryfast, swaps: Bool = true) -> OverloadPlan {
        OverloadPlan(inputRate: inputRate, tickRate: 30, preset: preset, presetSwaps: swaps, segmentSeconds: 2, maxLatency: .seconds(10))
    }

    @Test func stepsGoFromTheCheapestForTheViewer() {
        #expect(Self.plan().steps == [.encoderPreset(.superfast), .skipNonReferenceDeblocking, .thinTicks(every: 8),
                                      .thinTicks(every: 4), .skipNonReferencePictures, .thinTicks(every: 2)])
        // The grid drops half of a 60 fps input anyway: skipping non-reference pictures comes first.
        #expect(Self.plan(inputRate: 60).steps.first == .skipNonReferencePictures)
        // From medium: three presets, one at a time; none without a reopenable encoder.
        #expect(Self.plan(preset: .medium).steps.prefix(3) == [.encoderPreset(.faster), .encoderPreset(.veryfast), .encoderPreset(.superfast)])
        #expect(!Self.plan(swaps: false).steps.contains { if case .encoderPreset = $0 { true } else { false } })
        #expect(Self.plan(preset: .superfast).steps.first == .skipNonReferenceDeblocking)
        let plan = Self.plan()
        #expect(plan.effect(at: 0) == OverloadEffect(preset: .veryfast))
        #expect(plan.effect(at: 4) == OverloadEffect(preset: .superfast, skipsNonReferencePictures: false, skipsNonReferenceDeblocking: true, thinEvery: 4))
    }

    /// Feeds one observation per 1/30 s for `seconds`; returns the level at the end.
    static func feed(_ controller: OverloadController, from start: inout ContinuousClock.Instant, seconds: Double,
                     behind: (Double) -> Double, idle: Double = 0) -> Int {
        let ticks = Int(seconds * 30)
        for k in 0..<ticks {
            let t = Double(k) / 30
            _ = controller.observe(behind: behind(t), idle: idle / 30, now: start.advanced(by: .milliseconds(Int64(t * 1000))), outputTime: t)
        }
        start = start.advanced(by: .milliseconds(Int64(seconds * 1000)))
        return controller.level
    }

    @Test func fallingBehindStepsUpAWindowAtATimeAndTheCalmStepsDownSlower() {
        let controller = OverloadController(plan: Self.plan())
        var now = ContinuousClock.now
        // 2 s behind and not catching up: one step per window (3 s) after the first.
        let window = controller.plan.window
        #expect(window == 3)
        let up = Self.feed(controller, from: &now, seconds: 4 * window + 0.5, behind: { _ in 2 })
        #expect(up >= 2 && up <= 4, "level \(up) after four windows behind")
        // At the edge and idle a third of the time: three calm windows per step back, not sooner.
        let afterTwo = Self.feed(controller, from: &now, seconds: 2 * window + 0.5, behind: { _ in 0.1 }, idle: 0.3)
        #expect(afterTwo == up)
        let later = Self.feed(controller, from: &now, seconds: 12 * window, behind: { _ in 0.1 }, idle: 0.3)
        #expect(later < up)
        #expect(controller.maxLevel == up)
        // Idle most of the time (the load went): a step back every window or two.
        let quiet = Self.feed(controller, from: &now, seconds: 2 * Double(later) * window + 1, behind: { _ in 0.1 }, idle: 0.8)
        #expect(quiet == 0)
        #expect(controller.changes.first.map { $0.change.steps(of: controller.plan).first } == .encoderPreset(.superfast))
    }

    @Test func aRunCatchingUpFastEnoughIsLeftAlone() {
        let controller = OverloadController(plan: Self.plan())
        var now = ContinuousClock.now
        // Joined 6 s behind, gaining 0.3 s a second: at the limit in 18 s without shedding.
        let level = Self.feed(controller, from: &now, seconds: 18, behind: { max(0.3, 6 - 0.3 * $0) })
        #expect(level == 0, "\(controller.changes.map(\.change.reason))")
        // Gaining 0.1 s a second from 6 s behind is too slow: it sheds.
        let slow = OverloadController(plan: Self.plan())
        #expect(Self.feed(slow, from: &now, seconds: 12, behind: { 6 - 0.1 * $0 }) > 0)
    }

    @Test func aRunThatKeepsUpNeverSheds() {
        let controller = OverloadController(plan: Self.plan())
        var now = ContinuousClock.now
        // An HLS input's edge moves two seconds at a time; a run that keeps up reaches it each time.
        let level = Self.feed(controller, from: &now, seconds: 60, behind: { 2 - $0.truncatingRemainder(dividingBy: 2) * 1.5 }, idle: 0.2)
        #expect(level == 0 && controller.changes.isEmpty)
    }

    @Test func aLateFrameIsWaitedForNotRepeatedOverAndDropped() async throws {
        // A pushed input at the edge (each frame arrives at its time); its decoder takes 40 ms a
        // frame for 8 s (a 20 % shortfall), then 10 ms. Without a budget the late ticks (after the
        // start's catch-up, the latency bound's 3 s) repeat the last picture and the late frames
        // are dropped after; with one, each frame is shown late.
        func run(budget: Duration?) async throws -> TickStatistics {
            let clock = VirtualClock()
            let times = (0..<300).map { Int64($0) * 1000 / 30 }
            var input = ScriptedInput(clock: clock, times: times, arrivals: times, end: 10_000, decodeMilliseconds: { $0 < 240 ? 40 : 10 })
            return try await TickLoop<Int>(rate: Rational(30, 1), maxLatency: .seconds(3))
                .run(clock: clock, input: &input, waitBudget: budget) { _ in }
        }
        let off = try await run(budget: nil)
        let adapt = try await run(budget: .seconds(3))
        #expect(off.repeatedTicks > 10 && off.droppedFrames > 10, "\(off)")
        #expect(adapt.repeatedTicks == 0 && adapt.droppedFrames == 0, "\(adapt)")
        #expect(adapt.ticks == 300)
    }
}

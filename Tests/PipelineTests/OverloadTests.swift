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
        #expect(Self.plan().steps == [.encoderPreset(.superfast), .thinTicks(every: 8), .thinTicks(every: 4),
                                      .skipNonReferencePictures, .thinTicks(every: 2)])
        // The grid drops half of a 60 fps input anyway: skipping non-reference pictures comes first.
        #expect(Self.plan(inputRate: 60).steps.first == .skipNonReferencePictures)
        // From medium: three presets, one at a time; none without a reopenable encoder.
        #expect(Self.plan(preset: .medium).steps.prefix(3) == [.encoderPreset(.faster), .encoderPreset(.veryfast), .encoderPreset(.superfast)])
        #expect(!Self.plan(swaps: false).steps.contains { if case .encoderPreset = $0 { true } else { false } })
        #expect(Self.plan(preset: .superfast).steps.first == .thinTicks(every: 8))
        let plan = Self.plan()
        #expect(plan.effect(at: 0) == OverloadEffect(preset: .veryfast))
        #expect(plan.effect(at: 3) == OverloadEffect(preset: .superfast, thinEvery: 4))
        #expect(plan.effect(at: 4) == OverloadEffect(preset: .superfast, skipsNonReferencePictures: true, thinEvery: 4))
    }

    /// Feeds one observation per 1/30 s of wall time for `seconds`, the output advancing at
    /// `speed` × real time; returns the level at the end.
    static func feed(_ controller: OverloadController, from start: inout ContinuousClock.Instant, output: inout Double, seconds: Double,
                     speed: Double = 1, behind: (Double) -> Double, idle: Double = 0) -> Int {
        let ticks = Int(seconds * 30)
        for k in 0..<ticks {
            let t = Double(k) / 30
            _ = controller.observe(behind: behind(t), idle: idle / 30, now: start.advanced(by: .milliseconds(Int64(t * 1000))),
                                   outputTime: output + speed * t)
        }
        start = start.advanced(by: .milliseconds(Int64(seconds * 1000)))
        output += speed * seconds
        return controller.level
    }

    @Test func fallingBehindStepsUpAWindowAtATimeAndTheCalmStepsDownSlower() {
        let controller = OverloadController(plan: Self.plan())
        var now = ContinuousClock.now
        var output = 0.0
        // 2 s behind and not catching up: one step per window (3 s) after the first.
        let window = controller.plan.window
        #expect(window == 3)
        let up = Self.feed(controller, from: &now, output: &output, seconds: 4 * window + 0.5, behind: { _ in 2 })
        #expect(up >= 2 && up <= 4, "level \(up) after four windows behind")
        // At the edge and idle a third of the time: three calm windows per step back, not sooner.
        let afterTwo = Self.feed(controller, from: &now, output: &output, seconds: 2 * window + 0.5, behind: { _ in 0.1 }, idle: 0.3)
        #expect(afterTwo == up)
        let later = Self.feed(controller, from: &now, output: &output, seconds: 12 * window, behind: { _ in 0.1 }, idle: 0.3)
        #expect(later < up)
        #expect(controller.maxLevel == up)
        // Idle most of the time (the load went): a step back every window or two.
        let quiet = Self.feed(controller, from: &now, output: &output, seconds: 2 * Double(later) * window + 1, behind: { _ in 0.1 }, idle: 0.8)
        #expect(quiet == 0)
        #expect(controller.changes.first.map { $0.change.steps(of: controller.plan).first } == .encoderPreset(.superfast))
    }

    @Test func aRunCatchingUpFastEnoughIsLeftAlone() {
        let controller = OverloadController(plan: Self.plan())
        var now = ContinuousClock.now
        var output = 0.0
        // Joined 6 s behind, working at 1.3× real time: at the limit in 18 s without shedding.
        let level = Self.feed(controller, from: &now, output: &output, seconds: 18, speed: 1.3, behind: { max(0.3, 6 - 0.3 * $0) })
        #expect(level == 0, "\(controller.changes.map(\.change.reason))")
        // At 1.1× from 6 s behind it is too slow: it sheds.
        let slow = OverloadController(plan: Self.plan())
        #expect(Self.feed(slow, from: &now, output: &output, seconds: 12, speed: 1.1, behind: { 6 - 0.1 * $0 }) > 0)
        // An input that arrived in a burst: the edge jumped 4 s ahead, and the run works through it
        // at 1.5× (its distance to the edge grew before, not its slowness): no step.
        let burst = OverloadController(plan: Self.plan())
        #expect(Self.feed(burst, from: &now, output: &output, seconds: 8, speed: 1.5, behind: { max(0.2, 4 - 0.5 * $0) }) == 0)
    }

    @Test func aStepBackThatDoesNotHoldMakesTheNextOneWaitLonger() {
        let controller = OverloadController(plan: Self.plan())
        var now = ContinuousClock.now
        var output = 0.0
        let window = controller.plan.window
        // Behind: one step. Calm (idle a third): back after three windows. Behind again at once:
        // up. Then three calm windows are not enough any more.
        #expect(Self.feed(controller, from: &now, output: &output, seconds: window + 0.5, behind: { _ in 2 }) == 1)
        #expect(Self.feed(controller, from: &now, output: &output, seconds: 4 * window + 0.5, behind: { _ in 0.1 }, idle: 0.3) == 0)
        // (the step back's cooldown, two windows, passes first)
        #expect(Self.feed(controller, from: &now, output: &output, seconds: 3 * window + 0.5, behind: { _ in 2 }) == 1)
        #expect(Self.feed(controller, from: &now, output: &output, seconds: 4 * window + 0.5, behind: { _ in 0.1 }, idle: 0.3) == 1)
        #expect(Self.feed(controller, from: &now, output: &output, seconds: 4 * window, behind: { _ in 0.1 }, idle: 0.3) == 0)
    }

    @Test func aRunThatKeepsUpNeverSheds() {
        let controller = OverloadController(plan: Self.plan())
        var now = ContinuousClock.now
        var output = 0.0
        // An HLS input's edge moves two seconds at a time; a run that keeps up reaches it each time.
        let level = Self.feed(controller, from: &now, output: &output, seconds: 60, behind: { 2 - $0.truncatingRemainder(dividingBy: 2) * 1.5 }, idle: 0.2)
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

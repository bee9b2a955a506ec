import Filters
import Foundation
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
        #expect(Self.plan().steps == [.encoderPreset(.superfast), .encoderPreset(.ultrafast), .thinTicks(every: 8),
                                      .thinTicks(every: 4), .skipNonReferencePictures, .thinTicks(every: 2)])
        // The grid drops half of a 60 fps input anyway: skipping non-reference pictures comes first.
        #expect(Self.plan(inputRate: 60).steps.first == .skipNonReferencePictures)
        // From medium: four presets, one at a time; none without a reopenable encoder.
        #expect(Self.plan(preset: .medium).steps.prefix(5) == [.encoderPreset(.faster), .encoderPreset(.veryfast), .encoderPreset(.superfast),
                                                                .encoderPreset(.ultrafast), .thinTicks(every: 8)])
        #expect(Self.plan(preset: .slow).steps.prefix(5) == [.encoderPreset(.faster), .encoderPreset(.veryfast), .encoderPreset(.superfast),
                                                              .encoderPreset(.ultrafast), .thinTicks(every: 8)])
        #expect(!Self.plan(swaps: false).steps.contains { if case .encoderPreset = $0 { true } else { false } })
        #expect(Self.plan(preset: .superfast).steps.first == .encoderPreset(.ultrafast))
        #expect(Self.plan(preset: .ultrafast).steps.first == .thinTicks(every: 8))
        let plan = Self.plan()
        #expect(plan.effect(at: 0) == OverloadEffect(preset: .veryfast))
        #expect(plan.effect(at: 4) == OverloadEffect(preset: .ultrafast, thinEvery: 4))
        #expect(plan.effect(at: 5) == OverloadEffect(preset: .ultrafast, skipsNonReferencePictures: true, thinEvery: 4))
    }

    /// A preset step swaps the encoder at a keyframe under the output's one global header (an MP4's
    /// or fMP4's `avcC`), and a player should never see the parameter sets change: each faster
    /// encoder's SPS and PPS must be the stream's byte for byte — from medium (three reference
    /// pictures, a chroma QP offset for psychovisual tuning) down to ultrafast (no CABAC of its
    /// own). Without `parameterSetsOf` they differ: the check can fail. Live settings: the
    /// low-delay tune, fixed 2 s keyframes; CRF and a capped bitrate; profiles that take tools back.
    @Test("overload: every preset step's parameter sets are the stream's, byte for byte",
          arguments: [(EncoderSpeedPreset.veryfast, H264Profile?.none), (.veryfast, .high), (.veryfast, .main), (.veryfast, .baseline),
                      (.superfast, nil), (.faster, nil), (.fast, nil), (.medium, nil), (.medium, .main), (.slow, nil)])
    func presetStepsKeepTheParameterSets(base: EncoderSpeedPreset, profile: H264Profile?) throws {
        for (size, rate) in [(FrameSize(720, 1280), VideoEncoderSettings.RateControl.crf(23)), (FrameSize(1280, 720), .averageBitrate(3_000_000))] {
            func header(_ preset: EncoderSpeedPreset, of stream: EncoderSpeedPreset?) throws -> [UInt8] {
                var settings = VideoEncoderSettings()
                settings.speedPreset = preset
                settings.rateControl = rate
                settings.maxRate = 4_000_000
                settings.bufferSize = 4_000_000
                settings.profile = profile
                settings.keyframeInterval = .seconds(2)
                settings.fixedKeyframeCadence = true
                settings.lowDelay = true
                settings.parameterSetsOf = stream
                return try Encoder.h264(size: size, frameRate: Rational(30, 1), timeBase: Rational(1, 90_000), color: .bt709,
                                        settings: settings, globalHeader: true).globalHeader
            }
            let stream = try header(base, of: nil)
            #expect(!stream.isEmpty)
            let steps = Self.plan(preset: base).steps.compactMap { if case let .encoderPreset(p) = $0 { p } else { nil } }
            #expect(steps.last == .ultrafast)
            for faster in steps {
                #expect(try header(faster, of: base) == stream, "\(faster) from \(base), \(size.width)x\(size.height)")
            }
            // The check can fail: plain ultrafast writes other sets (Constrained Baseline but
            // for a baseline stream, whose sets it shares).
            if profile != .baseline { #expect(try header(.ultrafast, of: nil) != stream) }
        }
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

    @Test func aRunFarTooSlowTakesEveryPresetStepAtOnceButThinsOneStepAtATime() {
        // 0.7× real time: both preset steps in one change (they cost no picture)…
        let controller = OverloadController(plan: Self.plan())
        var now = ContinuousClock.now
        var output = 0.0
        let first = Self.feed(controller, from: &now, output: &output, seconds: controller.plan.window + 0.1, speed: 0.7, behind: { 2 + 0.3 * $0 })
        #expect(first == 2)
        #expect(controller.changes.first.map { $0.change.steps(of: controller.plan) } == [.encoderPreset(.superfast), .encoderPreset(.ultrafast)])
        // …then the thinning one step at a time.
        _ = Self.feed(controller, from: &now, output: &output, seconds: 3 * controller.plan.window, speed: 0.7, behind: { 3 + 0.3 * $0 })
        #expect(controller.changes.dropFirst().allSatisfy { $0.change.to - $0.change.from == 1 }, "\(controller.changes.map(\.change.to))")
        #expect(controller.level > 2)
        // At 0.9× one preset step.
        let mild = OverloadController(plan: Self.plan())
        #expect(Self.feed(mild, from: &now, output: &output, seconds: mild.plan.window + 0.1, speed: 0.9, behind: { 2 + 0.1 * $0 }) == 1)
    }

    @Test func aStepBackWaitsForAMachineWithRoom() {
        // Idle half the time at the edge, but the machine (other channels) 10 % idle: no step back.
        let busy = OverloadController(plan: Self.plan(), machineIdle: { 0.1 })
        var now = ContinuousClock.now
        var output = 0.0
        #expect(Self.feed(busy, from: &now, output: &output, seconds: 2 * busy.plan.window + 0.5, behind: { _ in 2 }) >= 1)
        let level = busy.level
        #expect(Self.feed(busy, from: &now, output: &output, seconds: 10 * busy.plan.window, behind: { _ in 0.1 }, idle: 0.6) == level)
        // The same run on a machine 40 % idle steps back.
        let roomy = OverloadController(plan: Self.plan(), machineIdle: { 0.4 })
        #expect(Self.feed(roomy, from: &now, output: &output, seconds: 2 * roomy.plan.window + 0.5, behind: { _ in 2 }) >= 1)
        #expect(Self.feed(roomy, from: &now, output: &output, seconds: 10 * roomy.plan.window, behind: { _ in 0.1 }, idle: 0.6) < roomy.maxLevel)
        #expect(roomy.changes.last?.change.reason.contains("the machine 40% idle") == true)
        // Read from /proc/stat here: a fraction once there are two samples.
        let machine = MachineIdle()
        _ = machine.sample()
        Thread.sleep(forTimeInterval: 0.1)
        let idle = machine.sample()
        #expect(idle.map { (0...1).contains($0) } == true, "\(String(describing: idle))")
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

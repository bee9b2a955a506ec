import HLS
import Logging
import MediaIO

/// What the tick stage is told by the plan: how output time is made, which part of it this run
/// makes, where keyframes go and when a live input has gone silent for good.
struct TickSpec {
    var timing: OutputTiming
    /// The live input's latency bound (nil: not live).
    var maxLatency: Duration?
    var isLive: Bool
    /// A file paced on the wall clock (`--realtime`).
    var realtime: Bool
    var keyframes: KeyframeRule
    /// A shard's part: the ticks (or kept timestamps) fed to the encoder.
    var fed: Range<Int64>?
    /// A shard on the tick clock: tick 0's input time, and the ticks to make.
    var tickWindow: TickWindow?
    /// A shard that seeks: its first fed frame must be exactly its planned keyframe (timestamps kept).
    var seeks: Bool
    var stallTimeout: Duration?
    /// What a lost live input does: end the run, or keep the channel up on the last picture or a slate.
    var inputLoss: InputLossPolicy
    /// How many ticks after the one it arrives at a returning input's first frame is due: the
    /// distance a live run joins behind the newest segment (one or three), so the frames after it are not
    /// due the moment they arrive. The ticks in between run at once (the held picture), and the
    /// returning frames are shown as soon as they are decoded, as after the join.
    var resumeDelay: Duration
    /// A live input's clock starts this long after its first frame, so a frame a little late is
    /// still on time: a pushed input's jitter, or an HLS segment published late when the run
    /// joined at the newest one (one target duration). Zero when an HLS run joins three segments
    /// back (that distance is the slack).
    var startDelay: Duration
    /// Seconds of input after which the run ends normally (`--max-duration`).
    var maxDuration: Double?
    var input: String
}

extension JobPlan {
    /// Segments behind the newest a live HLS input is joined (and a restarted origin followed):
    /// the ticks' slack against a segment that comes late.
    private var joinSegments: Int { configuration.inputOptions.liveStart.segmentsBehindNewest }

    var tickSpec: TickSpec {
        let timeBase = input.video.timeBase
        let tickWindow: TickWindow? = window.flatMap { window in
            guard timing.isConstantRate else { return nil }
            return TickWindow(origin: MediaTime(value: window.tickOrigin, numerator: Int64(timeBase.numerator),
                                                denominator: Int64(timeBase.denominator)),
                              firstTick: window.fed.lowerBound, endTick: window.fed.upperBound == .max ? nil : window.fed.upperBound)
        }
        return TickSpec(timing: timing, maxLatency: maxLatency, isLive: isLive, realtime: configuration.realtime,
                        keyframes: keyframes, fed: window?.fed, tickWindow: tickWindow, seeks: window?.seekKeyframe != nil,
                        stallTimeout: stallTimeout, inputLoss: inputLoss,
                        resumeDelay: .milliseconds(Int64(1000 * (input.targetDuration.map { Double(joinSegments * $0) } ?? 0.5))),
                        startDelay: isLive ? .milliseconds(Int64(1000 * (input.targetDuration.map { joinSegments == 1 ? Double($0) : 0 } ?? 0.5))) : .zero,
                        maxDuration: configuration.maxDuration,
                        input: configuration.input)
    }
}

/// The tick stage, run in the calling task: takes decoded frames, decides which picture each output
/// tick shows (or keeps each frame's own time), and hands the filter stage its work with the plan's
/// keyframe decision. It ends at the input's end, at `--max-duration`, when the task is cancelled
/// (a stop), or when a live input has been silent past the stall timeout.
final class TickStage {
    private let spec: TickSpec
    private let decode: DecodeStage
    private let reader: ReadStage
    private let filter: Channel<FilterWork>
    private let arrivals: ArrivalLog?
    private let audio: AudioStage?
    private let metrics: RunMetrics
    private let log: Logger
    /// `--overload adapt`: the level, decided from each tick's distance to the live edge.
    let overload: OverloadController?
    /// New pictures not shown by `OverloadStep.thinTicks` (their tick repeated the last picture).
    private(set) var ticksShed = 0

    private(set) var ticksShown = 0
    private(set) var ticksRepeated = 0
    /// Frames decoded only to reach a shard's first picture, and frames out of order (timestamps kept).
    private(set) var prerollFrames = 0
    private(set) var framesDropped = 0
    private(set) var statistics: TickStatistics?
    /// The seconds a live input was silent, when that ended the run.
    private(set) var stalledSeconds: Int?
    private(set) var interrupted = false
    private(set) var truncated = false
    /// The channel's input losses (`--on-input-loss hold|slate`).
    let losses = InputLossRecord()
    /// `--on-input-loss slate=FILE`: the filter stage shows the slate while the input is lost.
    private var showsSlate: Bool { if case .slate = spec.inputLoss { true } else { false } }
    /// The audio's output time at tick 0 (the first picture's input time): silence fills up to
    /// each lost tick's end on the audio's timeline.
    private var audioTimeOfTickZero: Double?
    /// The input was lost and no new picture has been shown since.
    private var heldSinceLoss = false
    /// The previous tick showed a new frame (a repeat after one begins an input stall).
    private var previousTickWasNew = false
    private var lastOutputPts: Int64 = .min

    init(spec: TickSpec, decode: DecodeStage, reader: ReadStage, filter: Channel<FilterWork>, arrivals: ArrivalLog?,
         audio: AudioStage?, overload: OverloadController?, metrics: RunMetrics, log: Logger) {
        (self.spec, self.decode, self.reader, self.filter) = (spec, decode, reader, filter)
        (self.arrivals, self.audio, self.metrics, self.log) = (arrivals, audio, metrics, log)
        self.overload = overload
    }

    /// Runs to the end; `tick` is called after every picture handed on (progress).
    func run(tick: () -> Void) async throws {
        do {
            switch spec.timing {
            case let .ticks(grid): try await runTicks(rate: grid.rate, tick: tick)
            case .sourceTimestamps: try await runTimestamps(tick: tick)
            }
        } catch is CancellationError {
            // The calling task was cancelled while the stage waited: a stop, at once.
            interrupted = true
        }
    }

    /// Checked once per tick (no wait): a cancelled task or `--max-duration` ends the stage.
    private func stopping() -> Bool {
        if Task.isCancelled { interrupted = true }
        if let limit = spec.maxDuration, decode.mediaTime >= limit { truncated = true }
        return interrupted || truncated
    }

    private func runTicks(rate: Rational, tick: () -> Void) async throws {
        let loop = TickLoop<TimedFrame>(rate: rate, maxLatency: spec.maxLatency)
        let period = 1 / rate.doubleValue
        let emit: (FrameSelector<TimedFrame>.Tick) async throws -> Void = { [self] t in
            ticksShown += 1
            let keyframe = spec.keyframes.forces(at: t.index, sourceKeyframe: t.isNewFrame && t.payload.frame.isKeyframe)
            if audioTimeOfTickZero == nil, t.isNewFrame { audioTimeOfTickZero = t.payload.time.seconds - Double(t.index) * period }
            if t.isNewFrame { heldSinceLoss = false } else if losses.isLost { heldSinceLoss = true }
            if !t.isNewFrame, heldSinceLoss {
                // Lost, or back but not yet shown (the resume delay's ticks): still the loss's picture.
                // The channel stays up: the slate (or the last picture again), and silence beside it.
                if losses.isLost { metrics.inputLossLasted(seconds: period) }
                arrivals?.lost(tick: t.index)
                if let base = audioTimeOfTickZero { audio?.fillSilence(through: base + Double(t.index + 1) * period) }
                if showsSlate {
                    ticksRepeated += 1
                    previousTickWasNew = false
                    try await filter.send(.slate(pts: t.index, duration: 1, keyframe: keyframe))
                    tick()
                    return
                }
            }
            if t.isNewFrame, let every = overload?.effect.thinEvery, !decode.thinsAtDecode, t.index % Int64(every) == Int64(every - 1) {
                // Shed evenly: this tick repeats the last picture (no filtering, a cheap encode).
                ticksShed += 1
                ticksRepeated += 1
                metrics.tickShed()
                try await filter.send(.repeatLast(pts: t.index, duration: 1, keyframe: keyframe, cheap: true))
                tick()
                return
            }
            if !t.isNewFrame, !heldSinceLoss, overload != nil, decode.pictureLeftOut(after: t.payload) {
                // The next picture was left out to shed load (counted as not decoded): a repeat
                // by the overload's choice, not a stalled input.
                ticksRepeated += 1
                try await filter.send(.repeatLast(pts: t.index, duration: 1, keyframe: keyframe, cheap: true))
                tick()
                return
            }
            if t.isNewFrame {
                arrivals?.shown(tick: t.index, framePts: t.payload.time.value + decode.origin)
                previousTickWasNew = true
                try await filter.send(.show(t.payload.frame, pts: t.index, duration: 1, keyframe: keyframe))
            } else {
                if previousTickWasNew, spec.isLive {
                    metrics.inputStalled()
                    log.notice("input stalled: repeating the last picture", metadata: ["tick": "\(t.index)"])
                }
                previousTickWasNew = false
                ticksRepeated += 1
                // Under overload a repeat costs the encoder as little as it can (skips).
                try await filter.send(.repeatLast(pts: t.index, duration: 1, keyframe: keyframe, cheap: (overload?.level ?? 0) > 0))
            }
            tick()
        }
        if spec.isLive, let stallTimeout = spec.stallTimeout {
            var live = LiveTickInput(decode: decode, reader: reader, stallTimeout: stallTimeout,
                                     losses: spec.inputLoss.keepsChannelUp ? losses : nil) { [self] lost in
                let at = Double(ticksShown) * period
                if lost {
                    losses.began(outputTime: at)
                    metrics.inputLossBegan()
                    log.notice("input lost: no media for \(stallTimeout.seconds) s; \(showsSlate ? "showing the slate" : "holding the last picture"), audio silent, until it is back",
                               metadata: ["input": "\(spec.input.redactingSecrets)", "output_time": "\(at)"])
                } else {
                    let seconds = losses.ended()
                    metrics.inputLossEnded()
                    log.notice("input back after \(String(format: "%.1f", seconds)) s lost: the channel follows it again",
                               metadata: ["input": "\(spec.input.redactingSecrets)", "output_time": "\(at)"])
                }
            }
            let observe: (Double?, Duration) -> Void = { [self] behind, idle in
                guard let overload else { return }
                if let change = overload.observe(behind: behind, idle: idle.seconds, now: .now, outputTime: Double(ticksShown) * period) {
                    metrics.overloadLevel(change.to)
                    let steps = change.steps(of: overload.plan).map(\.description).joined(separator: "; ")
                    log.notice(change.taken ? "overload: shedding (\(steps)) — \(change.reason)"
                                            : "overload: taking back (\(steps)) — \(change.reason)",
                               metadata: ["level": "\(change.to)", "output_time": "\(Double(ticksShown) * period)"])
                }
            }
            statistics = try await loop.run(clock: ContinuousClock(), input: &live, resumeDelay: spec.resumeDelay, startDelay: spec.startDelay,
                                            timestampSlack: 1, waitBudget: overload?.plan.waitBudget, observe: observe, shouldStop: stopping,
                                            onSkip: { [audio, log] in
                                                log.notice("behind the live edge by more than --max-latency: skipped ahead",
                                                           metadata: ["to": "\($0.seconds)"])
                                                audio?.skip(to: $0)
                                            },
                                            onResume: { [audio] in audio?.skip(to: $0) },
                                            emit: emit)
            stalledSeconds = live.stalledSeconds
            return
        }
        var file = FileTickInput(decode: decode)
        do {
            if spec.realtime {
                statistics = try await loop.run(clock: ContinuousClock(), input: &file, window: spec.tickWindow,
                                                shouldStop: stopping, emit: emit)
            } else {
                statistics = try await loop.run(clock: VirtualClock(), input: &file, window: spec.tickWindow,
                                                shouldStop: stopping, emit: emit)
            }
        } catch let late as TickWindowLate {
            throw MediaError.inputChanged(spec.input, reason: "read from the planned keyframe, its first frame (\(late.firstFrame)) comes after the shard's first tick \(late.firstTick)")
        }
    }

    /// Timestamps kept: every frame once, strictly increasing (a shard: those in its window).
    private func runTimestamps(tick: () -> Void) async throws {
        while !stopping() {
            guard case let .frame(timed)? = try await decode.frames.receive() else { break }
            let pts = timed.relativePts
            if let fed = spec.fed {
                if pts < fed.lowerBound { prerollFrames += 1; continue }
                if pts >= fed.upperBound { break }
                if spec.seeks, lastOutputPts == .min, pts != fed.lowerBound {
                    throw MediaError.inputChanged(spec.input, reason: "the shard's first frame is at \(pts), not at its planned keyframe \(fed.lowerBound)")
                }
            }
            guard pts > lastOutputPts else { framesDropped += 1; continue }
            lastOutputPts = pts
            try await filter.send(.show(timed.frame, pts: pts, duration: timed.duration,
                                        keyframe: spec.keyframes.forces(at: pts, sourceKeyframe: timed.frame.isKeyframe)))
            tick()
        }
    }
}

/// A file or VOD input for the tick loop: `poll` suspends until the decode stage's next frame.
struct FileTickInput: TickInput {
    let decode: DecodeStage

    mutating func poll() async throws -> TickInputEvent<TimedFrame> {
        switch try await decode.frames.receive() {
        case let .frame(f)?: .frame(f, f.time)
        case let .end(t)?: .end(t)
        case nil: .end(.zero)
        }
    }

    /// Never called: `poll` waits for the decoder itself and never answers `.notYet`.
    mutating func wait<C: Clock>(until deadline: C.Instant?, on clock: C) async throws where C.Duration == Duration {
        await decode.frames.waitUntilReady()
    }

    var liveEdge: MediaTime? { nil }
}

/// A live input for the tick loop: `poll` takes what the decode stage has ready and never waits;
/// `wait` suspends until the decode stage has a frame, the tick's deadline, or the moment the
/// input's silence would become a stall, whichever comes first.
struct LiveTickInput: TickInput {
    let decode: DecodeStage
    let reader: ReadStage
    let stallTimeout: Duration
    /// Set when the input went silent for longer than the stall timeout (and that ends the run).
    private(set) var stalledSeconds: Int?
    private var lastEnd: MediaTime = .zero
    /// Non-nil: a silence past the stall timeout is a loss the channel outlives, not the end.
    private let losses: InputLossRecord?
    /// Told when a loss begins (true) and ends (false).
    private let onLossChange: (Bool) -> Void
    private var lost = false

    init(decode: DecodeStage, reader: ReadStage, stallTimeout: Duration, losses: InputLossRecord? = nil,
         onLossChange: @escaping (Bool) -> Void = { _ in }) {
        self.decode = decode
        self.reader = reader
        self.stallTimeout = stallTimeout
        self.losses = losses
        self.onLossChange = onLossChange
    }

    mutating func poll() throws -> TickInputEvent<TimedFrame> {
        switch try decode.frames.tryReceive() {
        case let .some(.frame(f)?):
            lastEnd = MediaTime(value: f.time.value + f.duration, numerator: f.time.numerator, denominator: f.time.denominator)
            if lost {
                lost = false
                onLossChange(false)
                return .resume(f, f.time)
            }
            return .frame(f, f.time)
        case let .some(.end(t)?):
            return .end(t)
        case .some(nil):
            return .end(lastEnd)
        case nil:
            // A stall is the input's silence: not time spent on packets already read (a backlog
            // for the decoder), and nothing once reading has ended.
            let silent = reader.secondsSinceLastPacket
            if silent > stallTimeout.seconds, !reader.hasEnded, !hasBacklog {
                guard losses != nil else {
                    stalledSeconds = Int(silent)
                    return .end(lastEnd)
                }
                if !lost {
                    lost = true
                    onLossChange(true)
                }
            }
            return .notYet
        }
    }

    mutating func wait<C: Clock>(until deadline: C.Instant?, on clock: C) async throws where C.Duration == Duration {
        // The silence becomes a stall or a loss (for `poll` to report) this long from now; once
        // lost, only a frame or the tick's deadline wakes.
        let stallIn = max(.zero, stallTimeout - .seconds(reader.secondsSinceLastPacket)) + .milliseconds(1)
        var until = clock.now.advanced(by: lost ? .seconds(3600) : stallIn)
        if let deadline, deadline < until { until = deadline }
        let frames = decode.frames
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [until] in try await clock.sleep(until: until, tolerance: nil) }
            group.addTask { await frames.waitUntilReady() }
            // The first to finish decides; the other is cancelled (its error, if any, dropped).
            try await group.next()
            group.cancelAll()
        }
    }

    var liveEdge: MediaTime? {
        reader.newestVideoTimestamp.map { decode.time($0 - decode.origin) }
    }

    var runsAheadOfClock: Bool { true }
    var nextFrameNotBefore: MediaTime? { lastEnd == .zero ? nil : lastEnd }
    var hasBacklog: Bool { reader.packets.queued > 0 }
}

import HLS
import Logging
import MediaIO

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
    let losses = InputLossState()
    /// Pictures the decoder shed, as their messages arrived.
    private let shed = ShedPictures()
    /// Every source picture's caption bytes, re-paced onto the ticks' pictures.
    let captions: CaptionCollector
    /// The caption counts so far (atomics: read by progress on any thread).
    var captionCounts: CaptionCounts {
        CaptionCounts(bytesIn: captions.bytesIn, bytesOut: captions.bytesOut, tripletsDropped: captions.tripletsDropped,
                      kept: spec.captions.keeps)
    }
    /// The run's splices (`SpliceBoard`, shared with the HLS writers): each source cue is placed on
    /// the tick that shows its picture, which becomes a keyframe; the writers cut a segment there.
    private let splices: SpliceBoard?
    private var spliceTimer: SpliceTimer
    /// The cues placed so far, for the report.
    var placedSplices: [PlacedSplice] { spliceTimer.placed }
    var unplacedSplices: Int { spliceTimer.unplaced }
    /// `--on-input-loss slate=FILE`: the filter stage shows the slate while the input is lost.
    private var showsSlate: Bool { if case .slate = spec.live?.inputLoss { true } else { false } }
    /// The audio's output time at tick 0 (the first picture's input time): silence fills up to
    /// each lost tick's end on the audio's timeline.
    private var audioTimeOfTickZero: Double?
    /// The previous tick showed a new frame (a repeat after one begins an input stall).
    private var previousTickWasNew = false
    private var lastOutputPts: Int64 = .min
    /// The x264 preset the encoders were last told to use (`FilterWork.usePreset`).
    private var presetSent: EncoderSpeedPreset?

    init(spec: TickSpec, decode: DecodeStage, reader: ReadStage, filter: Channel<FilterWork>, arrivals: ArrivalLog?,
         audio: AudioStage?, overload: OverloadController?, splices: SpliceBoard?, metrics: RunMetrics, log: Logger) {
        (self.spec, self.decode, self.reader, self.filter) = (spec, decode, reader, filter)
        (self.arrivals, self.audio, self.metrics, self.log) = (arrivals, audio, metrics, log)
        self.overload = overload
        captions = CaptionCollector(plan: spec.captions)
        self.splices = splices
        spliceTimer = SpliceTimer(origin: decode.origin, secondsPerUnit: decode.timeBase.doubleValue)
    }

    /// Places the cues whose picture this tick shows: each is scheduled on the board before the
    /// picture goes on, and a cut (a break's OUT or IN) makes the picture a keyframe. True when one cuts.
    private func placeSplices(tick: Int64, seconds: Double, showing relativePts: Int64, duration: Int64, isNew: Bool) -> Bool {
        spliceTimer.take(reader.cues.take())
        var cuts = false
        for cue in spliceTimer.due(tick: tick, outputSeconds: seconds, showing: relativePts, duration: duration, isNewFrame: isNew) {
            let splice = OutputSplice(cue, tick: tick)
            splices?.schedule(splice)
            cuts = cuts || splice.cuts
            let late = spliceTimer.placed.last?.late == true
            metrics.splicePlaced(late: late)
            if late { log.warning("splice placed late", metadata: ["id": "\(cue.id)", "kind": "\(cue.kind)", "tick": "\(tick)"]) }
            log.notice("splice placed", metadata: ["id": "\(cue.id)", "kind": "\(cue.kind)", "tick": "\(tick)", "seconds": "\(seconds)"])
        }
        return cuts
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
        let loop = TickLoop<TimedFrame>(rate: rate, maxLatency: spec.live?.maxLatency, catchUpBound: spec.live?.catchUpBound)
        let period = 1 / rate.doubleValue
        let emit: (FrameSelector<TimedFrame>.Tick) async throws -> Void = { [self] t in
            ticksShown += 1
            let splice = placeSplices(tick: t.index, seconds: Double(t.index) * period, showing: t.payload.relativePts,
                                      duration: t.payload.duration, isNew: t.isNewFrame)
            let keyframe = splice || spec.keyframes.forces(at: t.index, sourceKeyframe: t.isNewFrame && t.payload.frame.isKeyframe)
            if keyframe, let overload, overload.effect.preset != (presetSent ?? overload.plan.basePreset) {
                // A preset step is an order to the encoders, taken at this keyframe.
                presetSent = overload.effect.preset
                try await filter.send(.usePreset(overload.effect.preset))
            }
            if audioTimeOfTickZero == nil, t.isNewFrame { audioTimeOfTickZero = t.payload.time.seconds - Double(t.index) * period }
            if t.isNewFrame { losses.newPictureShown() }
            if !t.isNewFrame, losses.showsLossPicture {
                // Lost, or back but not yet shown (the resume delay's ticks): still the loss's picture.
                // The channel stays up: the slate (or the last picture again), and silence beside it.
                if losses.isLost { metrics.inputLossLasted(seconds: period) }
                arrivals?.lost(tick: t.index)
                if let base = audioTimeOfTickZero { audio?.fillSilence(through: base + Double(t.index + 1) * period) }
                if showsSlate {
                    ticksRepeated += 1
                    previousTickWasNew = false
                    try await filter.send(.slate(pts: t.index, duration: 1, keyframe: keyframe,
                                                 ancillary: Ancillary(captions: captions.nextPicture(showing: nil))))
                    tick()
                    return
                }
            }
            if t.isNewFrame, let every = overload?.effect.thinEvery, !t.payload.thinnedAtDecode, t.index % Int64(every) == Int64(every - 1) {
                // Shed evenly: this tick repeats the last picture (no filtering, a cheap encode).
                ticksShed += 1
                ticksRepeated += 1
                metrics.tickShed()
                // The shed picture's time is reached: its captions go on the repeat.
                let ancillary = Ancillary(captions: captions.nextPicture(showing: t.payload.relativePts))
                try await filter.send(.repeatLast(pts: t.index, duration: 1, keyframe: keyframe, cheap: true, ancillary: ancillary))
                tick()
                return
            }
            if !t.isNewFrame, !losses.showsLossPicture, overload != nil, shed.leftOut(after: t.payload) {
                // The next picture was left out to shed load (counted as not decoded): a repeat
                // by the overload's choice, not a stalled input.
                ticksRepeated += 1
                try await filter.send(.repeatLast(pts: t.index, duration: 1, keyframe: keyframe, cheap: true,
                                                  ancillary: Ancillary(captions: captions.nextPicture(showing: nil))))
                tick()
                return
            }
            if t.isNewFrame {
                // A shard's first picture: what its pre-roll carried is the shard before's to show.
                if ticksShown == 1, spec.tickWindow != nil { captions.discard(before: t.payload.relativePts) }
                arrivals?.shown(tick: t.index, framePts: t.payload.time.value + decode.origin)
                previousTickWasNew = true
                let ancillary = Ancillary(captions: captions.nextPicture(showing: t.payload.relativePts))
                try await filter.send(.show(t.payload.frame, pts: t.index, duration: 1, keyframe: keyframe, ancillary: ancillary))
            } else {
                if previousTickWasNew, spec.isLive {
                    metrics.inputStalled()
                    log.notice("input stalled: repeating the last picture", metadata: ["tick": "\(t.index)"])
                }
                previousTickWasNew = false
                ticksRepeated += 1
                // Under overload a repeat costs the encoder as little as it can (skips).
                try await filter.send(.repeatLast(pts: t.index, duration: 1, keyframe: keyframe, cheap: (overload?.level ?? 0) > 0,
                                                  ancillary: Ancillary(captions: captions.nextPicture(showing: nil))))
            }
            tick()
        }
        if let liveSpec = spec.live {
            let stallTimeout = liveSpec.lossTime
            var live = LiveTickInput(decode: decode, reader: reader, stallTimeout: stallTimeout, shed: shed, captions: captions,
                                     losses: liveSpec.inputLoss.keepsChannelUp ? losses : nil) { [self] lost in
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
            statistics = try await loop.run(clock: ContinuousClock(), input: &live, resumeDelay: liveSpec.resumeDelay, startDelay: liveSpec.startDelay,
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
        var file = FileTickInput(decode: decode, captions: captions)
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
            guard let event = try await decode.frames.receive() else { break }
            if case let .leftOut(time, bytes) = event {
                captions.collect(bytes, at: time)
                continue
            }
            guard case let .frame(timed) = event else { break }
            let pts = timed.relativePts
            if let fed = spec.fed {
                // A shard's pre-roll: its pictures (and captions) are the shard before's.
                if pts < fed.lowerBound { prerollFrames += 1; continue }
                if pts >= fed.upperBound { break }
                if spec.seeks, lastOutputPts == .min, pts != fed.lowerBound {
                    throw MediaError.inputChanged(spec.input, reason: "the shard's first frame is at \(pts), not at its planned keyframe \(fed.lowerBound)")
                }
            }
            captions.collect(timed.frame.captionData, at: pts)
            guard pts > lastOutputPts else { framesDropped += 1; continue }
            lastOutputPts = pts
            // Paced at the source's nominal rate: each picture its own bytes, unless some wait.
            let splice = placeSplices(tick: pts, seconds: Double(pts) * decode.timeBase.doubleValue, showing: pts, duration: timed.duration, isNew: true)
            try await filter.send(.show(timed.frame, pts: pts, duration: timed.duration,
                                        keyframe: splice || spec.keyframes.forces(at: pts, sourceKeyframe: timed.frame.isKeyframe),
                                        ancillary: Ancillary(captions: captions.nextPicture(showing: pts))))
            tick()
        }
    }
}

/// A file or VOD input for the tick loop: `poll` suspends until the decode stage's next frame.
struct FileTickInput: TickInput {
    let decode: DecodeStage
    /// Every picture's caption bytes, collected here whether or not a tick shows it.
    let captions: CaptionCollector

    mutating func poll() async throws -> TickInputEvent<TimedFrame> {
        while true {
            switch try await decode.frames.receive() {
            case let .frame(f)?:
                captions.collect(f.frame.captionData, at: f.relativePts)
                return .frame(f, f.time)
            case let .leftOut(time, bytes)?:
                captions.collect(bytes, at: time)
                continue
            case let .end(t)?: return .end(t)
            case nil: return .end(.zero)
            }
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
    private let losses: InputLossState?
    /// Told when a loss begins (true) and ends (false): it moves `losses` on.
    private let onLossChange: (Bool) -> Void
    private var lost: Bool { losses?.isLost == true }

    /// Where the decoder's `.leftOut` messages go.
    private let shed: ShedPictures
    /// Every picture's caption bytes (shed ones' too), collected as its event arrives.
    private let captions: CaptionCollector

    init(decode: DecodeStage, reader: ReadStage, stallTimeout: Duration, shed: ShedPictures = ShedPictures(),
         captions: CaptionCollector, losses: InputLossState? = nil, onLossChange: @escaping (Bool) -> Void = { _ in }) {
        self.decode = decode
        self.captions = captions
        self.reader = reader
        self.stallTimeout = stallTimeout
        self.shed = shed
        self.losses = losses
        self.onLossChange = onLossChange
    }

    mutating func poll() throws -> TickInputEvent<TimedFrame> {
        var event = try decode.frames.tryReceive()
        // A shed picture's message is noted and the next event taken: the tick asks about it later.
        while case let .some(.leftOut(time, bytes)?) = event {
            shed.record(time)
            captions.collect(bytes, at: time)
            event = try decode.frames.tryReceive()
        }
        switch event {
        case let .some(.frame(f)?):
            lastEnd = MediaTime(value: f.time.value + f.duration, numerator: f.time.numerator, denominator: f.time.denominator)
            if lost {
                onLossChange(false)
                // The input's timeline may start again: what waits from before goes out first.
                captions.flushWaiting()
                captions.collect(f.frame.captionData, at: f.relativePts)
                return .resume(f, f.time)
            }
            captions.collect(f.frame.captionData, at: f.relativePts)
            return .frame(f, f.time)
        case let .some(.end(t)?):
            return .end(t)
        case .some(.leftOut?):
            return .notYet  // taken above
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
                if !lost { onLossChange(true) }
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

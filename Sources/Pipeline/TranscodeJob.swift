import Dispatch
import Filters
import Foundation
import HLS
import Logging
import MediaIO
import Synchronization

/// One job: opens the input, makes the plan, and executes it.
///
/// `init` does every check that can fail before work starts (input, chain geometry, output
/// settings), so a bad job fails at start-up with nothing written.
public final class TranscodeJob {
    public let demuxer: Demuxer
    /// Every decision of the run, made once.
    public let plan: JobPlan
    /// Changes the chain while the job runs; nil unless `JobConfiguration.chainControl` is set.
    public let chainControl: ChainControl?

    public init(configuration: JobConfiguration) throws(JobError) {
        do {
            demuxer = try Demuxer(url: configuration.input, options: configuration.inputOptions)
        } catch {
            throw .media(error)
        }
        let video = demuxer.video
        // Only a preset that follows the source's rate needs it measured (a scan of the file).
        let bitRate = configuration.preset == nil ? video.bitRate
            : video.bitRate ?? Demuxer.measuredVideoBitRate(url: configuration.input)
        let facts = InputFacts(url: configuration.input, video: video, audio: demuxer.audio, isLive: demuxer.isLive,
                               duration: demuxer.duration, videoBitRate: bitRate)
        plan = try JobPlan(configuration: configuration, input: facts)
        chainControl = configuration.chainControl ? ChainControl(plan: plan) : nil
    }

    /// Runs to the end of the input, or until `shouldStop` says so (then the output is finished
    /// with what was done). Progress is reported a few times a second.
    /// With `abandon` answering true once stopped, nothing is finished or kept: temporary files are
    /// removed and `JobError.cancelled` is thrown. With `quickStop`, a stopped run drains the
    /// encoder's look-ahead (about a second of work at 1080p) for at most 300 ms: the output ends at
    /// the last frame the encoder produced by then.
    public func run(progress: (JobProgress) -> Void = { _ in }, shouldStop: () -> Bool = { false },
                    abandon: () -> Bool = { false }, quickStop: Bool = false) async throws(JobError) -> JobSummary {
        let summary: JobSummary
        let log = Logger(label: "livefilter.pipeline")
        log.info("run", metadata: ["input": "\(plan.configuration.input)", "output": "\(plan.configuration.output)",
                                   "path": "\(plan.videoPath)", "live": "\(demuxer.isLive)",
                                   "size": "\(plan.geometry.encodeSize.width)x\(plan.geometry.encodeSize.height)"])
        do {
            defer { chainControl?.end() }
            let execution = try PlanExecution(plan: plan, demuxer: demuxer, control: chainControl, log: log)
            summary = try await execution.run(progress: progress, shouldStop: shouldStop, abandon: abandon, quickStop: quickStop)
            log.info("finished", metadata: ["frames": "\(summary.framesWritten)", "bytes": "\(summary.bytes)",
                                            "seconds": "\(summary.wallTime)", "interrupted": "\(summary.interrupted)"])
        } catch {
            // The caller reports the error it is thrown; the log only traces it.
            log.debug("failed", metadata: ["error": "\(error)"])
            throw .media(error)
        }
        if summary.abandoned { throw .cancelled }
        return summary
    }

    // MARK: The plan's facts, for callers that read them from the job

    public var configuration: JobConfiguration { plan.configuration }
    /// The chain actually run: the orientation fix first, then the user's chain.
    public var effectiveChain: FilterChain { plan.geometry.chain }
    public var chainOutputSize: FrameSize { plan.geometry.chainOutputSize }
    public var encodeSize: FrameSize { plan.geometry.encodeSize }
    public var container: OutputContainer { plan.container }
    /// The output frame rate (constant rate) or nominal rate (timestamps kept).
    public var outputRate: Rational { plan.timing.rate }
    /// Whether output runs on the tick clock (constant rate), rather than keeping timestamps.
    public var usesTickClock: Bool { plan.timing.isConstantRate }
    /// HLS options with the playlist type settled (HLS outputs).
    public var hlsOptions: HLSOutputOptions { plan.hlsOptions ?? plan.configuration.hls }
    /// The encoded outputs: one per rendition.
    public var renditions: [(size: FrameSize, bitRate: Int?)] { plan.renditions.map { ($0.size, $0.bitRate) } }
}

/// Executes a plan once: builds the outputs and the stages the plan names, connects them with
/// channels, runs the tick stage in the calling task and waits for the rest.
///
/// ```
/// read ─▶ decode ─▶ tick ─▶ filter ─▶ encode (per rendition) ─▶ mux (per output) ─▶ files
///            └────────▶ audio ───────────────────────────────────────▶ mux (every output)
/// ```
private final class PlanExecution {
    let plan: JobPlan
    let demuxer: Demuxer
    let timing = TimingRecorder()
    let group = StageGroup()
    let outputs: RunOutputs
    let reader: ReadStage
    let decode: DecodeStage
    let filter: FilterStage
    let encoders: [EncodeStage]
    let audio: AudioStage?
    /// Set when a quick stop begins: encoders drain their look-ahead only until then.
    let stopDeadline = StopDeadline()
    var summary: JobSummary
    var ticksShown = 0
    var ticksRepeated = 0
    /// The previous tick showed a new frame (a repeat after one begins an input stall).
    var previousTickWasNew = false
    let metrics: RunMetrics
    /// Live inputs: packet arrival times, for each output segment's latency.
    let arrivals: ArrivalLog?
    var lastOutputPts: Int64 = .min
    let start = DispatchTime.now()
    var lastReport = DispatchTime.now()

    let log: Logger

    init(plan: JobPlan, demuxer: Demuxer, control: ChainControl?, log: Logger) throws(MediaError) {
        self.plan = plan
        self.log = log
        self.demuxer = demuxer
        let video = plan.input.video
        let geometry = plan.geometry
        summary = JobSummary(outputPath: plan.configuration.output, inputSize: video.size, outputSize: geometry.encodeSize,
                             roundedFrom: geometry.roundedFrom, appliedRotation: geometry.orientation.appliedRotation,
                             videoPath: JobSummary.VideoPath(plan.videoPath), audioPath: JobSummary.AudioPath(plan.audio))
        metrics = RunMetrics(dimensions: plan.configuration.metricsLabels.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        // Latency is a segment's: measured for HLS outputs (input read → output segment published).
        if case .hls = plan.output { arrivals = ArrivalLog() } else { arrivals = nil }
        // Output path checks come before any file is created.
        outputs = try RunOutputs(plan: plan, timing: timing)
        outputs.onSegmentPublished { [metrics, arrivals, log] record in
            let latency = arrivals?.latency(ofSegmentStartingAt: record.startTick)
            metrics.segmentPublished(latency: latency)
            log.debug("segment published", metadata: ["uri": "\(record.uri)", "seconds": "\(record.duration)",
                                                      "bytes": "\(record.bytes)", "latency": "\(latency.map { "\($0.seconds)" } ?? "-")"])
        }
        // A shard reads from its keyframe on: before any stage reads.
        if let seek = plan.shard?.seekKeyframe { try demuxer.seekVideo(toKeyframeAt: seek) }
        let timeBase = plan.timing.isConstantRate ? plan.timing.rate.inverse : video.timeBase
        let constantRate = plan.timing.isConstantRate
        var encoders: [EncodeStage] = []
        for (rendition, mux) in zip(plan.renditions, outputs.media) {
            let encoder = plan.container.isImageSequence
                ? try Encoder.png(size: rendition.size, timeBase: timeBase)
                : try Encoder.h264(size: rendition.size, frameRate: plan.timing.rate, timeBase: timeBase, color: plan.color,
                                   settings: rendition.encoder, globalHeader: mux.sink.wantsGlobalHeader)
            let stage = try EncodeStage(encoder: encoder, mux: mux, constantRate: constantRate, schedule: plan.segmentSchedule,
                                        keep: plan.shard.map { $0.start..<($0.end ?? .max) },
                                        timing: timing, stopDeadline: stopDeadline)
            if let matrix = plan.displayMatrixTag { outputs.tagDisplayMatrix(of: mux, stream: stage.streamIndex, matrix) }
            encoders.append(stage)
        }
        if plan.output == .discard {
            encoders = [EncodeStage(discardingIn: timeBase, timing: timing, stopDeadline: stopDeadline)]
        }
        self.encoders = encoders
        filter = try FilterStage(plan: plan, outputs: encoders, timeBase: timeBase, control: control, log: log, timing: timing)
        reader = ReadStage(demuxer: demuxer, audioStream: plan.audio == .none ? nil : demuxer.audio?.index,
                           capacity: demuxer.isLive ? 8192 : 64, arrivals: arrivals)
        decode = try DecodeStage(demuxer: demuxer, packets: reader.packets, withAudio: plan.audio != .none,
                                 nominalRate: plan.timing.rate, timing: timing)
        audio = try AudioStage(plan: plan.audio, demuxer: demuxer, input: decode.audio, outputs: outputs.audioTargets,
                               stopDeadline: stopDeadline)
        if audio == nil { decode.audio?.finish() }
        try outputs.begin()
    }

    func run(progress: (JobProgress) -> Void, shouldStop: () -> Bool, abandon: () -> Bool,
             quickStop: Bool) async throws(MediaError) -> JobSummary {
        summary.inputWasLive = demuxer.isLive
        summary.variant = demuxer.chosenVariant
        for stage in outputs.allMux { stage.start(in: group) }
        for stage in encoders { stage.start(in: group) }
        audio?.start(in: group)
        filter.start(in: group)
        decode.start(in: group)
        reader.start(in: group)

        var stalled: Int?
        var failure: (any Error)?
        do {
            stalled = try await tickStage(progress: progress, shouldStop: shouldStop)
        } catch is CancellationError {
            // The calling task was cancelled while the tick stage waited: a stop, at once.
            summary.interrupted = true
        } catch {
            failure = error
        }
        // The tick stage is done: no more pictures. Stop reading (a stop may leave input unread).
        reader.stop()
        decode.frames.cancel()
        if failure == nil, summary.interrupted, abandon() {
            summary.abandoned = true
            group.cancel()
        } else if failure == nil, summary.interrupted, quickStop {
            stopDeadline.set(ContinuousClock.now + .milliseconds(300))
            filter.work.finish(discardingPending: true)
        } else {
            filter.work.finish()
        }
        if failure != nil { group.cancel() }
        await group.wait()

        if let error = group.error ?? failure.flatMap({ $0 is ChannelCancelled ? nil : $0 }) {
            outputs.discard()
            throw Self.mediaError(error)
        }
        if summary.abandoned {
            outputs.discard()
            return summary
        }
        // A run that decoded no picture from an input that claims video leaves nothing behind.
        if decode.framesDecoded == 0, !summary.interrupted {
            outputs.discard()
            throw .noVideoFrames(plan.configuration.input)
        }
        do {
            try await group.perform("commit") { [outputs] in try outputs.commit() }
        } catch {
            outputs.discard()
            throw Self.mediaError(error)
        }
        summary.outputs = outputs.playlists
        summary.hlsRenditions = outputs.hlsRenditions
        summary.warnings += outputs.lint()
        let result = finalSummary(progress)
        if let stalled { throw .inputStalled(plan.configuration.input, seconds: stalled) }
        return result
    }

    static func mediaError(_ error: any Error) -> MediaError { asMediaError(error) }

    /// The tick stage, in the calling task: takes decoded frames, decides which picture each output
    /// tick shows (or keeps each frame's own time), and hands the filter stage its work. Returns the
    /// seconds a live input was silent when that ended the run.
    func tickStage(progress: (JobProgress) -> Void, shouldStop: () -> Bool) async throws -> Int? {
        func stopping() -> Bool {
            if shouldStop() { summary.interrupted = true }
            return summary.interrupted || limitReached()
        }
        switch plan.timing {
        case let .ticks(grid):
            let loop = TickLoop<TimedFrame>(rate: grid.rate, maxLatency: plan.maxLatency)
            let emit: (FrameSelector<TimedFrame>.Tick) async throws -> Void = { [self] tick in
                ticksShown += 1
                if tick.isNewFrame {
                    arrivals?.shown(tick: tick.index, framePts: tick.payload.time.value + decode.origin)
                    previousTickWasNew = true
                    let frame = tick.payload.frame
                    try await filter.work.send(.show(frame, pts: tick.index, duration: 1,
                                                     keyframe: plan.configuration.keyframesAtSource && frame.isKeyframe
                                                         || tick.index == plan.shard?.start))
                } else {
                    if previousTickWasNew, demuxer.isLive {
                        metrics.inputStalled()
                        log.notice("input stalled: repeating the last picture", metadata: ["tick": "\(tick.index)"])
                    }
                    previousTickWasNew = false
                    ticksRepeated += 1
                    try await filter.work.send(.repeatLast(pts: tick.index, duration: 1))
                }
                reportIfDue(progress)
            }
            if demuxer.isLive {
                var live = LiveTickInput(decode: decode, reader: reader, stallTimeout: stallTimeout)
                summary.ticks = try await loop.run(clock: ContinuousClock(), input: &live, shouldStop: stopping,
                                                   onSkip: { [audio, log] in
                                                       log.notice("behind the live edge by more than --max-latency: skipped ahead",
                                                                   metadata: ["to": "\($0.seconds)"])
                                                       audio?.skip(to: $0)
                                                   }, emit: emit)
                return live.stalledSeconds
            }
            var file = FileTickInput(decode: decode)
            let window = plan.shard.map {
                TickWindow(origin: decode.time($0.tickOrigin), firstTick: $0.encodeFrom ?? $0.start, endTick: $0.encodeUntil ?? $0.end)
            }
            do {
                if plan.configuration.realtime {
                    summary.ticks = try await loop.run(clock: ContinuousClock(), input: &file, window: window, shouldStop: stopping, emit: emit)
                } else {
                    summary.ticks = try await loop.run(clock: VirtualClock(), input: &file, window: window, shouldStop: stopping, emit: emit)
                }
            } catch let late as TickWindowLate {
                throw MediaError.inputChanged(plan.configuration.input, reason: "read from the planned keyframe, its first frame (\(late.firstFrame)) comes after the shard's first tick \(late.firstTick)")
            }
        case .sourceTimestamps:
            // Timestamps kept: every frame once, strictly increasing (a shard: those in its window).
            let window = plan.shard
            while !stopping() {
                guard case let .frame(timed)? = try await decode.frames.receive() else { break }
                let pts = timed.relativePts
                if let window {
                    let first = window.encodeFrom ?? window.start
                    if pts < first { summary.prerollFrames += 1; continue }
                    if let end = window.encodeUntil ?? window.end, pts >= end { break }
                    if window.seekKeyframe != nil, lastOutputPts == .min, pts != first {
                        throw MediaError.inputChanged(plan.configuration.input, reason: "the shard's first frame is at \(pts), not at its planned keyframe \(first)")
                    }
                }
                guard pts > lastOutputPts else { summary.framesDropped += 1; continue }
                lastOutputPts = pts
                try await filter.work.send(.show(timed.frame, pts: pts, duration: timed.duration,
                                                 keyframe: plan.configuration.keyframesAtSource && timed.frame.isKeyframe
                                                     || pts == plan.shard?.start))
                reportIfDue(progress)
            }
        }
        return nil
    }

    /// Whether `--max-duration` of input has been processed.
    func limitReached() -> Bool {
        if let limit = plan.configuration.maxDuration, decode.mediaTime >= limit { summary.truncated = true }
        return summary.truncated
    }

    /// How long a live input may deliver nothing before the run ends: as asked, else 3 × the
    /// playlist's target duration + 10 s.
    var stallTimeout: Duration {
        if let asked = plan.configuration.stallTimeout { return asked }
        let config = plan.configuration
        return .seconds(3 * (Self.targetDuration(of: config.input, options: config.inputOptions) ?? 4) + 10)
    }

    /// EXT-X-TARGETDURATION of a playlist (of its first variant, for a master), if it can be read.
    static func targetDuration(of url: String, options: InputOptions) -> Int? {
        guard let text = try? fetchText(url, timeout: options.ioTimeout, maxBytes: 4 << 20),
              let playlist = try? PlaylistParser.parse(text) else { return nil }
        switch playlist {
        case let .media(media):
            return media.targetDuration > 0 ? media.targetDuration : nil
        case let .master(master):
            guard let first = master.variants.first, let base = URL(string: url),
                  let variant = URL(string: first.uri, relativeTo: base)?.absoluteString,
                  let text = try? fetchText(variant, timeout: options.ioTimeout, maxBytes: 4 << 20),
                  case let .media(media)? = try? PlaylistParser.parse(text) else { return nil }
            return media.targetDuration > 0 ? media.targetDuration : nil
        }
    }

    func finalSummary(_ progress: (JobProgress) -> Void) -> JobSummary {
        summary.framesDecoded = decode.framesDecoded
        summary.framesWritten = encoders[0].framesWritten
        summary.framesFiltered = filter.framesFiltered
        summary.chainChanges = filter.chainChanges
        summary.decodeErrors = decode.decodeErrors + (audio?.decodeErrors ?? 0)
        summary.duration = encoders[0].duration
        if let ticks = summary.ticks {
            summary.framesDropped = ticks.droppedFrames
            summary.framesRepeated = ticks.repeatedTicks
            summary.prerollFrames = ticks.prerollFrames
        }
        summary.bytes = outputs.committedBytes
        summary.timings = timing.timings
        summary.filterPasses = filter.passes
        summary.wallTime = seconds(since: start)
        reportIfDue(progress, force: true)
        return summary
    }

    func reportIfDue(_ progress: (JobProgress) -> Void, force: Bool = false) {
        let now = DispatchTime.now()
        guard force || now.uptimeNanoseconds - lastReport.uptimeNanoseconds > 250_000_000 else { return }
        lastReport = now
        let elapsed = seconds(since: start)
        let written = encoders[0].framesWritten
        let mediaTime = decode.mediaTime
        let decoded = decode.framesDecoded
        var p = JobProgress(mediaTime: mediaTime, duration: demuxer.duration, framesDecoded: decoded,
                            framesWritten: written, framesPerSecond: elapsed > 0 ? Double(written) / elapsed : 0,
                            speed: elapsed > 0 ? mediaTime / elapsed : 0, elapsed: elapsed)
        p.audioTime = audio?.handledTime
        p.phase = force ? (summary.interrupted ? .interrupted : .finished) : .running
        p.ticks = ticksShown
        p.repeated = ticksRepeated
        p.filtered = filter.framesFiltered
        p.dropped = plan.timing.isConstantRate ? max(0, decoded - (ticksShown - ticksRepeated) - 1) : summary.framesDropped
        if force, let t = summary.ticks { p.dropped = t.droppedFrames; p.repeated = t.repeatedTicks }
        p.bytes = force ? summary.bytes : outputs.bytesWritten
        p.timings = timing.timings
        p.filterPasses = filter.passes
        metrics.update(p)
        progress(p)
    }

    func seconds(since t: DispatchTime) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - t.uptimeNanoseconds) / 1e9
    }
}

/// A stage's error as the `MediaError` a job reports.
func asMediaError(_ error: any Error) -> MediaError {
    switch error {
    case let error as MediaError: error
    case let error as FFmpegError: .processing(error)
    default: .processing(FFmpegError(.operationNotPermitted, operation: "\(error)"))
    }
}

extension JobSummary.VideoPath {
    init(_ path: VideoPath) {
        switch path { case .passthrough: self = .passthrough; case .planar: self = .planar; case .rgbChain: self = .rgbChain }
    }
}

extension JobSummary.AudioPath {
    init(_ plan: AudioPlan) {
        switch plan { case .none: self = .none; case .copy: self = .copy; case .aac: self = .aac }
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

    var liveEdge: MediaTime? { nil }
}

/// A live input for the tick loop: `poll` takes what the decode stage has ready and never waits;
/// the tick clock wakes the loop.
struct LiveTickInput: TickInput {
    let decode: DecodeStage
    let reader: ReadStage
    let stallTimeout: Duration
    /// Set when the input went silent for longer than the stall timeout.
    private(set) var stalledSeconds: Int?
    private var lastEnd: MediaTime = .zero

    init(decode: DecodeStage, reader: ReadStage, stallTimeout: Duration) {
        self.decode = decode
        self.reader = reader
        self.stallTimeout = stallTimeout
    }

    mutating func poll() throws -> TickInputEvent<TimedFrame> {
        switch try decode.frames.tryReceive() {
        case let .some(.frame(f)?):
            lastEnd = MediaTime(value: f.time.value + f.duration, numerator: f.time.numerator, denominator: f.time.denominator)
            return .frame(f, f.time)
        case let .some(.end(t)?):
            return .end(t)
        case .some(nil):
            return .end(lastEnd)
        case nil:
            let silent = reader.secondsSinceLastPacket
            if silent > Double(stallTimeout.components.seconds) {
                stalledSeconds = Int(silent)
                return .end(lastEnd)
            }
            return .notYet
        }
    }

    var liveEdge: MediaTime? {
        reader.newestVideoTimestamp.map { decode.time($0 - decode.origin) }
    }

    var runsAheadOfClock: Bool { true }
    var nextFrameNotBefore: MediaTime? { lastEnd == .zero ? nil : lastEnd }
    var hasBacklog: Bool { reader.packets.queued > 0 }
}

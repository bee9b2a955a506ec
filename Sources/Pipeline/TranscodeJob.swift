import Dispatch
import Filters
import Foundation
import MediaIO

/// One run: decode the input, take frames on the output clock, filter them in RGB, encode, mux.
///
/// `init` does every check that can fail before work starts (input, chain geometry, output path),
/// so a bad job fails at start-up with nothing written.
public final class TranscodeJob {
    public let configuration: JobConfiguration
    public let demuxer: Demuxer
    /// The chain actually run: the orientation fix first, then the user's chain.
    public let effectiveChain: FilterChain
    public let chainOutputSize: FrameSize
    public let encodeSize: FrameSize
    public let container: OutputContainer
    /// The output frame rate (for CFR) or nominal rate (timestamps kept).
    public let outputRate: Rational
    let appliedRotation: Int

    public init(configuration requested: JobConfiguration) throws(JobError) {
        var configuration = requested
        guard let container = OutputContainer(path: configuration.output) else {
            throw .media(.unsupportedOutput(configuration.output, reason: "unknown output type"))
        }
        self.container = container
        do {
            demuxer = try Demuxer(url: configuration.input, options: configuration.inputOptions)
        } catch {
            throw .media(error)
        }
        let video = demuxer.video
        if let preset = configuration.preset {
            let audioRate = demuxer.audio?.bitRate ?? 0
            let sourceRate = video.bitRate ?? demuxer.bitRate.map { max(0, $0 - audioRate) }
            do {
                try preset.apply(to: &configuration, source: video, sourceBitRate: sourceRate)
            } catch {
                throw .chain(error)
            }
        }
        self.configuration = configuration

        var filters = configuration.chain.filters
        var rotation = 0
        if (configuration.orientation ?? .auto) == .auto, video.rotationClockwise != 0 {
            if let quarter = video.quarterTurnRotation {
                rotation = quarter
                if quarter != 0 { filters.insert(Rotate(quarterTurns: quarter / 90), at: 0) }
            } else {
                rotation = Int(video.rotationClockwise.rounded())
                filters.insert(Rotate(degrees: video.rotationClockwise), at: 0)
            }
        }
        appliedRotation = rotation
        do {
            var size = try FilterChain(filters).outputSize(for: video.size)
            if let alignment = configuration.alignment, let align = alignment.filter(for: size) {
                filters.append(align)
                size = try align.outputSize(for: size)
            }
            effectiveChain = FilterChain(filters)
            chainOutputSize = size
        } catch {
            throw .chain(error)
        }
        if container.isImageSequence {
            encodeSize = chainOutputSize
        } else {
            // yuv420p needs even sizes: drop the odd last column/row rather than resample.
            encodeSize = FrameSize(width: max(2, chainOutputSize.width & ~1), height: max(2, chainOutputSize.height & ~1))
        }
        outputRate = configuration.frameRate ?? video.frameRate.flatMap { $0.isPositive && $0.doubleValue <= 1000 ? $0 : nil } ?? Rational(30, 1)
    }

    /// Runs to the end of the input, or until `shouldStop` says so (then the output is finished
    /// with what was done). Progress is reported a few times a second.
    /// With `abandon` answering true once stopped, nothing is finished or kept: temporary files are
    /// removed and `JobError.cancelled` is thrown.
    public func run(progress: (JobProgress) -> Void = { _ in }, shouldStop: () -> Bool = { false },
                    abandon: () -> Bool = { false }) async throws(JobError) -> JobSummary {
        let summary: JobSummary
        do {
            summary = try await TranscodeRun(job: self).run(progress: progress, shouldStop: shouldStop, abandon: abandon)
        } catch {
            throw .media(error)
        }
        if summary.abandoned { throw .cancelled }
        return summary
    }

    /// Whether output runs on the tick clock (constant rate), rather than keeping timestamps.
    public var usesTickClock: Bool {
        configuration.frameRate != nil || configuration.realtime || demuxer.isLive
    }
}

/// Decoded frames to filtered RGB: colour conversion, then the chain.
final class FrameFilter {
    private let toRGB: FrameToRGB
    private let source: RGBImage
    private let chain: ChainRenderer
    private let timing: TimingRecorder
    private(set) var framesFiltered = 0

    init(video: VideoStreamInfo, chain: FilterChain, timing: TimingRecorder) throws(MediaError) {
        toRGB = FrameToRGB(outputSize: video.size, color: video.colorSpace)
        source = RGBImage(size: video.size)
        do {
            self.chain = try ChainRenderer(chain: chain, inputSize: video.size)
        } catch {
            throw .invalidSettings(error.description)
        }
        self.timing = timing
    }

    /// The filtered picture; valid until the next call.
    func filter(_ frame: Frame) throws -> RGBImage {
        try timing.measure(.toRGB) { () throws(MediaError) in try toRGB.convert(frame, into: source) }
        framesFiltered += 1
        return timing.measure(.filter) { chain.render(source) }
    }
}

/// The state of one pass over the input: built by `TranscodeJob.run`, used once.
private final class TranscodeRun {
    let job: TranscodeJob
    let config: JobConfiguration
    let timing = TimingRecorder()
    let input: MediaInput
    let audio: AudioStage?
    let filter: FrameFilter?
    let branch: VideoBranch
    let sink: any PacketSink
    let output: AtomicOutput?
    let sequence: AtomicImageSequence?
    let constantRate: Bool
    var summary: JobSummary
    var ticksShown = 0
    var ticksRepeated = 0
    var lastOutputPts: Int64 = .min

    let start = DispatchTime.now()
    var lastReport = DispatchTime.now()

    init(job: TranscodeJob) throws(MediaError) {
        self.job = job
        config = job.configuration
        let demuxer = job.demuxer
        let video = demuxer.video
        let isPNG = job.container.isImageSequence
        let passthrough = !isPNG && job.effectiveChain.isEmpty && job.encodeSize == video.size && video.pixelFormatName == "yuv420p"
        summary = JobSummary(outputPath: config.output, inputSize: video.size, outputSize: job.encodeSize,
                             roundedFrom: job.encodeSize == job.chainOutputSize ? nil : job.chainOutputSize,
                             appliedRotation: job.appliedRotation,
                             videoPath: passthrough ? .passthrough : .rgbChain, audioPath: .none)

        // Output path checks come before any file is created.
        let muxer: Muxer
        if isPNG {
            let sequence = try AtomicImageSequence(pattern: config.output, overwrite: config.overwrite)
            try sequence.create()
            muxer = try Muxer(path: sequence.temporaryPattern, container: job.container)
            self.sequence = sequence
            output = nil
        } else {
            let output = try AtomicOutput(path: config.output, overwrite: config.overwrite, temporaryExtension: job.container.rawValue)
            muxer = try Muxer(path: output.temporaryPath, container: job.container)
            muxer.displayPath = config.output
            self.output = output
            sequence = nil
        }
        if job.container == .mp4 || job.container == .mov { muxer.headerOptions = [("movflags", "+faststart")] }
        sink = muxer

        let constantRate = job.usesTickClock
        self.constantRate = constantRate
        let timeBase = constantRate ? job.outputRate.inverse : video.timeBase
        let color = Self.outputColor(for: video)
        let encoder = isPNG
            ? try Encoder.png(size: job.encodeSize, timeBase: timeBase)
            : try Encoder.h264(size: job.encodeSize, frameRate: job.outputRate, timeBase: timeBase, color: color,
                               settings: config.video, globalHeader: muxer.wantsGlobalHeader)
        filter = passthrough ? nil : try FrameFilter(video: video, chain: job.effectiveChain, timing: timing)
        branch = try VideoBranch(size: job.encodeSize, chainOutputSize: job.chainOutputSize, encoder: encoder, sink: muxer,
                                 rgbInput: !passthrough, constantRate: constantRate, keyframeEveryTicks: nil,
                                 color: color, timing: timing)
        if config.orientation == .keep, video.rotationClockwise != 0 {
            muxer.setRotation(streamIndex: branch.streamIndex, clockwiseDegrees: video.rotationClockwise)
        }
        audio = try AudioStage(demuxer: demuxer, settings: isPNG ? .none : config.audio, sinks: [muxer])
        summary.audioPath = switch audio?.mode {
        case .copy: .copy
        case .aac: .aac
        case nil: .none
        }
        input = try MediaInput(demuxer: demuxer, audio: audio, timing: timing, nominalRate: job.outputRate)
        try muxer.writeHeader()
    }

    /// The output's colour tags: the source's where it states them, else BT.709 for HD, BT.601 for SD.
    static func outputColor(for video: VideoStreamInfo) -> ColorDescription {
        let unspecified: Int32 = 2
        var c = video.colorSpace
        let hd = video.size.height >= 720 || video.size.width >= 1280
        if c.matrix == unspecified || c.matrix == 0 { c.matrix = hd ? 1 : 6 }  // BT709 : SMPTE170M
        if c.primaries == unspecified || c.primaries == 0 { c.primaries = hd ? 1 : 6 }
        if c.transfer == unspecified || c.transfer == 0 { c.transfer = hd ? 1 : 6 }
        c.isFullRange = false
        return c
    }

    func run(progress: (JobProgress) -> Void, shouldStop: () -> Bool, abandon: () -> Bool) async throws(MediaError) -> JobSummary {
        summary.inputWasLive = job.demuxer.isLive
        summary.variant = job.demuxer.chosenVariant
        var stalled: Int?
        do {
            if constantRate {
                let loop = TickLoop<TimedFrame>(rate: job.outputRate, maxLatency: job.demuxer.isLive ? config.maxLatency : nil)
                func emit(_ tick: FrameSelector<TimedFrame>.Tick) async throws {
                    try show(tick)
                    reportIfDue(progress)
                }
                func stopping() -> Bool {
                    if shouldStop() { summary.interrupted = true }
                    return summary.interrupted || limitReached()
                }
                if job.demuxer.isLive {
                    let queue = LivePacketQueue(demuxer: job.demuxer)
                    input.reader = queue
                    queue.start()
                    defer { queue.stop() }
                    var live = LiveTickInput(input: input, queue: queue, stallTimeout: stallTimeout)
                    summary.ticks = try await loop.run(clock: ContinuousClock(), input: &live, shouldStop: stopping,
                                                       onSkip: { [audio] in audio?.skip(to: $0) }, emit: emit)
                    stalled = live.stalledSeconds
                } else {
                    var file = FileTickInput(input: input)
                    if config.realtime {
                        summary.ticks = try await loop.run(clock: ContinuousClock(), input: &file, shouldStop: stopping, emit: emit)
                    } else {
                        summary.ticks = try await loop.run(clock: VirtualClock(), input: &file, shouldStop: stopping, emit: emit)
                    }
                }
            } else {
                while true {
                    if shouldStop() { summary.interrupted = true; break }
                    if limitReached() { break }
                    guard let timed = try input.nextFrame() else { break }
                    try writeWithOwnTimestamp(timed)
                    reportIfDue(progress)
                }
            }
            if summary.interrupted && abandon() {
                // Nothing to finish: the temporary output is removed when this run is released.
                summary.abandoned = true
                return summary
            }
            try branch.finish()
            if summary.interrupted || summary.truncated || stalled != nil { try audio?.finishInput() }
        } catch let error as FFmpegError {
            throw MediaError.processing(error)
        } catch let error as MediaError {
            throw error
        } catch {
            throw MediaError.processing(FFmpegError(code: -1, operation: "\(error)"))
        }
        try sink.finish()
        try output?.commit()
        try sequence?.commit()
        let result = finalSummary(progress)
        if let stalled { throw MediaError.inputStalled(config.input, seconds: stalled) }
        return result
    }

    /// Whether `--max-duration` of input has been processed.
    func limitReached() -> Bool {
        if let limit = config.maxDuration, input.mediaTime >= limit { summary.truncated = true }
        return summary.truncated
    }

    /// How long a live input may deliver nothing before the run ends.
    var stallTimeout: Duration {
        config.stallTimeout ?? .seconds(3 * 4 + 10)
    }

    /// One output tick: filter the frame if it is new, else show the last picture again.
    func show(_ tick: FrameSelector<TimedFrame>.Tick) throws {
        ticksShown += 1
        if !tick.isNewFrame { ticksRepeated += 1 }
        if tick.isNewFrame {
            if let filter {
                try branch.encode(filter.filter(tick.payload.frame), pts: tick.index, duration: 1)
            } else {
                try branch.encodePassthrough(tick.payload.frame, pts: tick.index, duration: 1)
            }
        } else {
            try branch.encodeRepeat(pts: tick.index, duration: 1)
        }
    }

    /// Timestamps kept: every frame once, strictly increasing.
    func writeWithOwnTimestamp(_ timed: TimedFrame) throws {
        let pts = timed.relativePts
        guard pts > lastOutputPts else { summary.framesDropped += 1; return }
        lastOutputPts = pts
        if let filter {
            try branch.encode(filter.filter(timed.frame), pts: pts, duration: timed.duration)
        } else {
            try branch.encodePassthrough(timed.frame, pts: pts, duration: timed.duration)
        }
    }

    func finalSummary(_ progress: (JobProgress) -> Void) -> JobSummary {
        summary.framesDecoded = input.framesDecoded
        summary.framesWritten = branch.framesWritten
        summary.framesFiltered = filter?.framesFiltered ?? 0
        summary.decodeErrors = input.decodeErrors
        summary.duration = branch.duration
        if let ticks = summary.ticks {
            summary.framesDropped = ticks.droppedFrames
            summary.framesRepeated = ticks.repeatedTicks
        }
        summary.bytes = sink.bytesWritten
        if summary.bytes == 0, let size = try? FileManager.default.attributesOfItem(atPath: config.output)[.size] as? NSNumber {
            summary.bytes = size.int64Value
        }
        summary.timings = timing.timings
        summary.wallTime = seconds(since: start)
        reportIfDue(progress, force: true)
        return summary
    }

    func reportIfDue(_ progress: (JobProgress) -> Void, force: Bool = false) {
        let now = DispatchTime.now()
        guard force || now.uptimeNanoseconds - lastReport.uptimeNanoseconds > 250_000_000 else { return }
        lastReport = now
        let elapsed = seconds(since: start)
        let written = branch.framesWritten
        var p = JobProgress(mediaTime: input.mediaTime, duration: job.demuxer.duration, framesDecoded: input.framesDecoded,
                            framesWritten: written, framesPerSecond: elapsed > 0 ? Double(written) / elapsed : 0,
                            speed: elapsed > 0 ? input.mediaTime / elapsed : 0, elapsed: elapsed)
        p.audioTime = audio?.mediaTime
        p.phase = force ? (summary.interrupted ? .interrupted : .finished) : .running
        p.ticks = ticksShown
        p.repeated = ticksRepeated
        p.filtered = filter?.framesFiltered ?? 0
        p.dropped = constantRate ? max(0, input.framesDecoded - (ticksShown - ticksRepeated) - 1) : summary.framesDropped
        if force, let t = summary.ticks { p.dropped = t.droppedFrames; p.repeated = t.repeatedTicks }
        p.bytes = force ? summary.bytes : sink.bytesWritten
        p.timings = timing.timings
        progress(p)
    }

    func seconds(since t: DispatchTime) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - t.uptimeNanoseconds) / 1e9
    }
}

/// A file or VOD input for the tick loop: `poll` decodes the next frame (blocking on I/O).
struct FileTickInput: TickInput {
    let input: MediaInput

    mutating func poll() throws -> TickInputEvent<TimedFrame> {
        switch try input.poll() {
        case let .frame(f): .frame(f, f.time)
        case .notYet: .notYet
        case .end: .end(input.lastFrameEnd ?? .zero)
        }
    }

    var liveEdge: MediaTime? { nil }
}

/// A live input for the tick loop: packets arrive on a reader thread; `poll` never waits for them.
struct LiveTickInput: TickInput {
    let input: MediaInput
    let queue: LivePacketQueue
    let stallTimeout: Duration
    /// Set when the input went silent for longer than the stall timeout.
    private(set) var stalledSeconds: Int?

    init(input: MediaInput, queue: LivePacketQueue, stallTimeout: Duration) {
        self.input = input
        self.queue = queue
        self.stallTimeout = stallTimeout
    }

    mutating func poll() throws -> TickInputEvent<TimedFrame> {
        switch try input.poll() {
        case let .frame(f):
            return .frame(f, f.time)
        case .notYet:
            let silent = queue.secondsSinceLastPacket
            if silent > Double(stallTimeout.components.seconds) {
                stalledSeconds = Int(silent)
                return .end(input.lastFrameEnd ?? .zero)
            }
            return .notYet
        case .end:
            return .end(input.lastFrameEnd ?? .zero)
        }
    }

    var liveEdge: MediaTime? {
        queue.newestVideoTimestamp.map { input.time($0 - input.origin) }
    }
}

import Dispatch
import Filters
import Foundation
import HLS
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
            let sourceRate = video.bitRate ?? Demuxer.measuredVideoBitRate(url: configuration.input)
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
    /// removed and `JobError.cancelled` is thrown. With `quickStop`, a stopped run drains the
    /// encoder's look-ahead (about a second of work at 1080p) for at most 300 ms: the output ends at
    /// the last frame the encoder produced by then.
    public func run(progress: (JobProgress) -> Void = { _ in }, shouldStop: () -> Bool = { false },
                    abandon: () -> Bool = { false }, quickStop: Bool = false) async throws(JobError) -> JobSummary {
        let summary: JobSummary
        do {
            summary = try await withTaskExecutorPreference(JobExecutor()) { () async throws(MediaError) -> JobSummary in
                try await TranscodeRun(job: self).run(progress: progress, shouldStop: shouldStop, abandon: abandon,
                                                      quickStop: quickStop)
            }
        } catch {
            throw .media(error)
        }
        if summary.abandoned { throw .cancelled }
        return summary
    }

    /// Whether output runs on the tick clock (constant rate), rather than keeping timestamps.
    public var usesTickClock: Bool {
        configuration.frameRate != nil || configuration.realtime || demuxer.isLive || container == .hls
    }

    /// HLS options with the playlist type settled: live for a live input, VOD otherwise, unless set.
    public var hlsOptions: HLSOutputOptions {
        var options = configuration.hls
        if configuration.hlsPlaylistType == nil { options.playlistType = demuxer.isLive ? .live : .vod }
        return options
    }

    /// The encoded outputs: one per rendition, or the chain's (even) size.
    public var renditions: [(size: FrameSize, bitRate: Int?)] {
        if configuration.renditions.isEmpty { return [(encodeSize, nil)] }
        return configuration.renditions.map { r in
            // Fit the rendition's box with the chain's aspect, on even sizes.
            let fitted = aspectFit(chainOutputSize, in: r.size)
            return (FrameSize(width: max(2, fitted.width & ~1), height: max(2, fitted.height & ~1)), r.bitRate)
        }
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
        self.chain.measuresPasses = true
        self.timing = timing
    }

    var passes: [FilterPassTime] { zip(chain.passNames, chain.passNanoseconds).map(FilterPassTime.init) }

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
    /// Mirrors and quarter turns done on the decoded planes (the RGB filter stays as a fallback
    /// for frames that change format or size mid-stream).
    let mover: PlanarFrameMover?
    let branches: [VideoBranch]
    let sinks: [any PacketSink]
    var hlsWriters: [(writer: HLSWriter, uri: String)] = []
    let output: AtomicOutput?
    let sequence: AtomicImageSequence?
    let constantRate: Bool
    var decode: DecodeStage?
    var summary: JobSummary
    var ticksShown = 0
    var framesMoved = 0
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
        let passthrough = !isPNG && job.effectiveChain.isEmpty && job.encodeSize == video.size && video.pixelFormat == .yuv420p
        // A chain of mirrors and quarter turns runs on the YUV planes: exact and no colour conversion.
        if !isPNG, !passthrough, video.pixelFormat == .yuv420p, video.colorSpace.range == .limited,
           let move = job.effectiveChain.planarMove(for: video.size),
           move.outputSize(for: video.size) == job.encodeSize, job.renditions.allSatisfy({ $0.size == job.encodeSize }) {
            mover = PlanarFrameMover(move: move, inputSize: video.size)
        } else {
            mover = nil
        }
        summary = JobSummary(outputPath: config.output, inputSize: video.size, outputSize: job.encodeSize,
                             roundedFrom: job.encodeSize == job.chainOutputSize ? nil : job.chainOutputSize,
                             appliedRotation: job.appliedRotation,
                             videoPath: passthrough ? .passthrough : (mover != nil ? .planar : .rgbChain), audioPath: .none)

        let constantRate = job.usesTickClock
        self.constantRate = constantRate
        let timeBase = constantRate ? job.outputRate.inverse : video.timeBase
        let color = ColorDescription.outputTags(forSource: video.colorSpace, size: video.size)
        filter = passthrough ? nil : try FrameFilter(video: video, chain: job.effectiveChain, timing: timing)

        // Output path checks come before any file is created.
        var branches: [VideoBranch] = []
        var sinks: [any PacketSink] = []
        if job.container == .hls {
            let options = job.hlsOptions
            try options.validate()
            output = nil
            sequence = nil
            let folder = (config.output as NSString).deletingLastPathComponent
            let stem = ((config.output as NSString).lastPathComponent as NSString).deletingPathExtension
            let segmentTicks = max(1, Int((options.segmentDuration * job.outputRate.doubleValue).rounded()))
            for rendition in job.renditions {
                let path = job.renditions.count == 1 && config.renditions.isEmpty
                    ? config.output
                    : (folder.isEmpty ? "" : folder + "/") + "\(stem)_\(rendition.size.width)x\(rendition.size.height).m3u8"
                let writer = try HLSWriter(playlistPath: path, options: options, overwrite: config.overwrite)
                // Video comes from an encode thread, audio from the decode thread: one writer at a time.
                let shared = LockedSink(writer)
                var settings = config.video
                if let bitRate = rendition.bitRate {
                    settings.rateControl = .averageBitrate(bitRate)
                    settings.maxRate = settings.maxRate ?? bitRate * 6 / 5
                    settings.bufferSize = settings.bufferSize ?? bitRate * 2
                }
                settings.fixedKeyframeCadence = true
                settings.keyframeInterval = .frames(segmentTicks)
                let encoder = try Encoder.h264(size: rendition.size, frameRate: job.outputRate, timeBase: timeBase, color: color,
                                               settings: settings, globalHeader: writer.wantsGlobalHeader)
                let rate = job.outputRate
                let segment = options.segmentDuration
                branches.append(try VideoBranch(
                    size: rendition.size, chainOutputSize: job.chainOutputSize, encoder: encoder, sink: shared,
                    rgbInput: !passthrough, constantRate: true,
                    keyframeAt: { tick in Self.startsSegment(tick: tick, rate: rate, segmentDuration: segment) },
                    color: color, timing: timing))
                sinks.append(shared)
                hlsWriters.append((writer, (path as NSString).lastPathComponent))
            }
        } else {
            let muxer: Muxer
            if isPNG {
                let sequence = try AtomicImageSequence(pattern: config.output, overwrite: config.overwrite)
                try sequence.create()
                muxer = try Muxer(path: sequence.temporaryPattern, container: job.container)
                muxer.displayPath = config.output
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
            let encoder = isPNG
                ? try Encoder.png(size: job.encodeSize, timeBase: timeBase)
                : try Encoder.h264(size: job.encodeSize, frameRate: job.outputRate, timeBase: timeBase, color: color,
                                   settings: config.video, globalHeader: muxer.wantsGlobalHeader)
            let shared = LockedSink(muxer)
            let branch = try VideoBranch(size: job.encodeSize, chainOutputSize: job.chainOutputSize, encoder: encoder, sink: shared,
                                         rgbInput: !passthrough, constantRate: constantRate, keyframeAt: nil,
                                         color: color, timing: timing)
            if config.orientation == .keep, video.rotationClockwise != 0 {
                muxer.setRotation(streamIndex: branch.streamIndex, clockwiseDegrees: video.rotationClockwise)
            }
            branches.append(branch)
            sinks.append(shared)
        }
        self.branches = branches
        self.sinks = sinks
        audio = try AudioStage(demuxer: demuxer, settings: isPNG ? .none : config.audio, sinks: sinks)
        summary.audioPath = switch audio?.mode {
        case .copy: .copy
        case .aac: .aac
        case nil: .none
        }
        input = try MediaInput(demuxer: demuxer, audio: audio, timing: timing, nominalRate: job.outputRate)
        for sink in sinks { try sink.writeHeader() }
        if hlsWriters.count > 1 { try writeMaster() }
    }

    /// Whether output tick `tick` starts an HLS segment: the first tick at or after each multiple
    /// of the segment duration, so cuts stay on the ideal grid even when it is not a whole number of frames.
    static func startsSegment(tick: Int64, rate: Rational, segmentDuration: Double) -> Bool {
        if tick == 0 { return true }
        let t = Double(tick) * Double(rate.denominator) / Double(rate.numerator)
        let previous = Double(tick - 1) * Double(rate.denominator) / Double(rate.numerator)
        let eps = 1e-9
        return ((t + eps) / segmentDuration).rounded(.down) > ((previous + eps) / segmentDuration).rounded(.down)
    }

    /// The master playlist of a rendition ladder, with bandwidths measured from the segments written.
    func writeMaster() throws(MediaError) {
        let renditions = zip(hlsWriters, job.renditions).map { entry, rendition in
            var r = entry.writer.rendition(uri: entry.uri)
            // Before any segment exists, the configured rate stands in (rewritten at the end).
            if r.peakBitRate == 0, let b = rendition.bitRate {
                r.peakBitRate = b * 6 / 5 + (job.demuxer.audio == nil ? 0 : 128_000)
                r.averageBitRate = b + (job.demuxer.audio == nil ? 0 : 128_000)
            }
            if r.resolution == nil { r.resolution = rendition.size }
            return r
        }
        try MasterPlaylistWriter(path: config.output).write(renditions)
    }

    func run(progress: (JobProgress) -> Void, shouldStop: () -> Bool, abandon: () -> Bool,
             quickStop: Bool) async throws(MediaError) -> JobSummary {
        summary.inputWasLive = job.demuxer.isLive
        summary.variant = job.demuxer.chosenVariant
        var stalled: Int?
        var liveQueue: LivePacketQueue?
        if job.demuxer.isLive {
            let queue = LivePacketQueue(demuxer: job.demuxer)
            input.reader = queue
            queue.start()
            liveQueue = queue
        }
        // Decode runs on its own thread, a few frames ahead; each branch encodes on its own thread.
        let decode = DecodeStage(input: input)
        self.decode = decode
        decode.start()
        var stagesStopped = false
        func stopStages() {
            guard !stagesStopped else { return }
            stagesStopped = true
            decode.stop()
            liveQueue?.stop()
        }
        defer {
            stopStages()
            for branch in branches { branch.abandon() }
        }
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
                if let liveQueue {
                    var live = LiveTickInput(stage: decode, input: input, queue: liveQueue, stallTimeout: stallTimeout)
                    summary.ticks = try await loop.run(clock: ContinuousClock(), input: &live, shouldStop: stopping,
                                                       onSkip: { [audio] in audio?.skip(to: $0) }, emit: emit)
                    stalled = live.stalledSeconds
                } else {
                    var file = FileTickInput(stage: decode)
                    if config.realtime {
                        summary.ticks = try await loop.run(clock: ContinuousClock(), input: &file, shouldStop: stopping, emit: emit)
                    } else {
                        summary.ticks = try await loop.run(clock: VirtualClock(), input: &file, shouldStop: stopping, emit: emit)
                    }
                }
            } else {
                reading: while true {
                    if shouldStop() { summary.interrupted = true; break }
                    if limitReached() { break }
                    switch try decode.next(wait: true) {
                    case let .frame(timed)?: try writeWithOwnTimestamp(timed)
                    case .end?, nil: break reading
                    }
                    reportIfDue(progress)
                }
            }
            stopStages()
            if summary.interrupted && abandon() {
                // Nothing to finish: the temporary output is removed when this run is released.
                summary.abandoned = true
                return summary
            }
            // A quick stop drains the encoders for at most 300 ms: the output keeps what came out by then.
            let deadline = summary.interrupted && quickStop ? ContinuousClock.now + .milliseconds(300) : nil
            for branch in branches { try branch.finish(deadline: deadline) }
            if deadline == nil { try audio?.finishInput() }
        } catch let error as FFmpegError {
            throw MediaError.processing(error)
        } catch let error as MediaError {
            throw error
        } catch {
            throw MediaError.processing(FFmpegError(.operationNotPermitted, operation: "\(error)"))
        }
        for sink in sinks { try sink.finish() }
        try output?.commit()
        try sequence?.commit()
        if hlsWriters.count > 1 { try writeMaster() }
        lintOwnOutput()
        let result = finalSummary(progress)
        if let stalled { throw MediaError.inputStalled(config.input, seconds: stalled) }
        return result
    }

    /// Whether `--max-duration` of input has been processed.
    func limitReached() -> Bool {
        if let limit = config.maxDuration, (decode?.mediaTime ?? 0) >= limit { summary.truncated = true }
        return summary.truncated
    }

    /// How long a live input may deliver nothing before the run ends: as asked, else 3 × the
    /// playlist's target duration + 10 s.
    var stallTimeout: Duration {
        if let asked = config.stallTimeout { return asked }
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

    /// `run` checks its own HLS output against RFC 8216 and the publishing rules.
    func lintOwnOutput() {
        guard !hlsWriters.isEmpty else { return }
        summary.outputs = hlsWriters.count > 1 ? [config.output] + hlsWriters.map(\.writer.playlistPath) : [config.output]
        for writer in hlsWriters { summary.warnings += writer.writer.warnings }
        for path in summary.outputs {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            let report = HLSLinter(profile: .livefilter).lint(text)
            summary.warnings += report.violations.map { "\(path):\($0)" }
        }
    }

    /// One output tick: filter the frame if it is new, else show the last picture again.
    func show(_ tick: FrameSelector<TimedFrame>.Tick) throws {
        ticksShown += 1
        if !tick.isNewFrame { ticksRepeated += 1 }
        if tick.isNewFrame {
            if let moved = try movedOnPlanes(tick.payload.frame) {
                for branch in branches { try branch.encodePlanar(moved, pts: tick.index, duration: 1) }
            } else if let filter {
                // The chain runs once per frame; each rendition scales from its result.
                let image = try filter.filter(tick.payload.frame)
                for branch in branches { try branch.encode(image, pts: tick.index, duration: 1) }
            } else {
                for branch in branches { try branch.encodePassthrough(tick.payload.frame, pts: tick.index, duration: 1) }
            }
        } else {
            for branch in branches { try branch.encodeRepeat(pts: tick.index, duration: 1) }
        }
    }

    /// The frame moved on its planes, when the chain allows it and the frame is as expected.
    func movedOnPlanes(_ frame: Frame) throws -> Frame? {
        guard let mover, mover.accepts(frame) else { return nil }
        framesMoved += 1
        return try timing.measure(.filter) { () throws(MediaError) in try mover.apply(frame) }
    }

    /// Timestamps kept: every frame once, strictly increasing.
    func writeWithOwnTimestamp(_ timed: TimedFrame) throws {
        let pts = timed.relativePts
        guard pts > lastOutputPts else { summary.framesDropped += 1; return }
        lastOutputPts = pts
        if let moved = try movedOnPlanes(timed.frame) {
            for branch in branches { try branch.encodePlanar(moved, pts: pts, duration: timed.duration) }
        } else if let filter {
            let image = try filter.filter(timed.frame)
            for branch in branches { try branch.encode(image, pts: pts, duration: timed.duration) }
        } else {
            for branch in branches { try branch.encodePassthrough(timed.frame, pts: pts, duration: timed.duration) }
        }
    }

    func finalSummary(_ progress: (JobProgress) -> Void) -> JobSummary {
        summary.framesDecoded = decode?.framesDecoded ?? input.framesDecoded
        summary.framesWritten = branches[0].framesWritten
        summary.framesFiltered = (filter?.framesFiltered ?? 0) + framesMoved
        summary.decodeErrors = input.decodeErrors
        summary.duration = branches[0].duration
        if let ticks = summary.ticks {
            summary.framesDropped = ticks.droppedFrames
            summary.framesRepeated = ticks.repeatedTicks
        }
        summary.bytes = sinks.reduce(0) { $0 + $1.bytesWritten }
        if summary.bytes == 0, let size = try? FileManager.default.attributesOfItem(atPath: config.output)[.size] as? NSNumber {
            summary.bytes = size.int64Value
        }
        summary.timings = timing.timings
        summary.filterPasses = filter?.passes ?? []
        summary.wallTime = seconds(since: start)
        reportIfDue(progress, force: true)
        return summary
    }

    func reportIfDue(_ progress: (JobProgress) -> Void, force: Bool = false) {
        let now = DispatchTime.now()
        guard force || now.uptimeNanoseconds - lastReport.uptimeNanoseconds > 250_000_000 else { return }
        lastReport = now
        let elapsed = seconds(since: start)
        let written = branches[0].framesWritten
        let mediaTime = decode?.mediaTime ?? 0
        let decoded = decode?.framesDecoded ?? 0
        var p = JobProgress(mediaTime: mediaTime, duration: job.demuxer.duration, framesDecoded: decoded,
                            framesWritten: written, framesPerSecond: elapsed > 0 ? Double(written) / elapsed : 0,
                            speed: elapsed > 0 ? mediaTime / elapsed : 0, elapsed: elapsed)
        p.audioTime = audio?.handledTime
        p.phase = force ? (summary.interrupted ? .interrupted : .finished) : .running
        p.ticks = ticksShown
        p.repeated = ticksRepeated
        p.filtered = filter?.framesFiltered ?? 0
        p.dropped = constantRate ? max(0, decoded - (ticksShown - ticksRepeated) - 1) : summary.framesDropped
        if force, let t = summary.ticks { p.dropped = t.droppedFrames; p.repeated = t.repeatedTicks }
        p.bytes = force ? summary.bytes : sinks.reduce(0) { $0 + $1.bytesWritten }
        p.timings = timing.timings
        p.filterPasses = filter?.passes ?? []
        progress(p)
    }

    func seconds(since t: DispatchTime) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - t.uptimeNanoseconds) / 1e9
    }
}

/// A file or VOD input for the tick loop: `poll` waits for the decode thread's next frame.
struct FileTickInput: TickInput {
    let stage: DecodeStage

    mutating func poll() throws -> TickInputEvent<TimedFrame> {
        switch try stage.next(wait: true) {
        case let .frame(f)?: .frame(f, f.time)
        case let .end(t)?: .end(t)
        case nil: .end(.zero)
        }
    }

    var liveEdge: MediaTime? { nil }
}

/// A live input for the tick loop: packets arrive on a reader thread and are decoded on another;
/// `poll` never waits for them.
struct LiveTickInput: TickInput {
    let stage: DecodeStage
    let input: MediaInput
    let queue: LivePacketQueue
    let stallTimeout: Duration
    /// Set when the input went silent for longer than the stall timeout.
    private(set) var stalledSeconds: Int?
    private var lastEnd: MediaTime = .zero

    init(stage: DecodeStage, input: MediaInput, queue: LivePacketQueue, stallTimeout: Duration) {
        self.stage = stage
        self.input = input
        self.queue = queue
        self.stallTimeout = stallTimeout
    }

    mutating func poll() throws -> TickInputEvent<TimedFrame> {
        switch try stage.next(wait: false) {
        case let .frame(f)?:
            lastEnd = MediaTime(value: f.time.value + f.duration, numerator: f.time.numerator, denominator: f.time.denominator)
            return .frame(f, f.time)
        case let .end(t)?:
            return .end(t)
        case nil:
            let silent = queue.secondsSinceLastPacket
            if silent > Double(stallTimeout.components.seconds) {
                stalledSeconds = Int(silent)
                return .end(lastEnd)
            }
            return .notYet
        }
    }

    var liveEdge: MediaTime? {
        queue.newestVideoTimestamp.map { input.time($0 - input.origin) }
    }
}

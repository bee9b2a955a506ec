import struct Foundation.Date
import Dispatch
import Synchronization
import Logging
import MediaIO

/// How a stopped run (its task cancelled) ends.
enum StopBehavior: Sendable {
    /// Finish the outputs with what was done: the encoders drain their look-ahead (the CLI's Ctrl-C).
    case finish
    /// The same, but the look-ahead is drained for at most 300 ms: the output ends at the last
    /// frame the encoder produced by then (a library's cancelled export).
    case finishQuickly
    /// Keep nothing: temporary files are removed and the run reports `JobError.cancelled`.
    case abandon
}

/// Executes a plan once: builds the outputs and the stages from the plan's specs, connects them with
/// channels, runs the tick stage in the calling task and waits for the rest. It decides nothing.
///
/// ```
/// read ─▶ decode ─▶ tick ─▶ filter ─▶ encode (per rendition) ─▶ mux (per output) ─▶ files
///            └────────▶ audio ───────────────────────────────────────▶ mux (every output)
/// ```
final class PlanExecution {
    private let plan: JobPlan
    private let group = StageGroup()
    private let outputs: RunOutputs
    private let reader: ReadStage
    private let decode: DecodeStage
    private let filter: FilterStage
    private let encoders: [EncodeStage]
    private let audio: AudioStage?
    private let ticks: TickStage
    private let progress: RunProgress
    /// Set when a quick stop begins: encoders drain their look-ahead only until then.
    private let stopDeadline = StopDeadline()
    private var summary: JobSummary
    /// LL-HLS parts' latencies (live inputs), summarised when the run ends.
    private let partLatencies: PartLatencyLog
    /// What an HLS input's reader did, read when the run ends.
    private let inputStatistics: () -> HLSInputStatistics?

    init(plan: JobPlan, demuxer: Demuxer, control: ChainControl?, log: Logger,
         report: @escaping (JobProgress) -> Void) throws(MediaError) {
        self.plan = plan
        let timing = TimingRecorder()
        let geometry = plan.geometry
        summary = JobSummary(outputPath: plan.outputPath, inputSize: plan.input.video.size, outputSize: geometry.encodeSize,
                             roundedFrom: geometry.roundedFrom, appliedRotation: geometry.orientation.appliedRotation,
                             videoPath: JobSummary.VideoPath(plan.videoPath), audioPath: JobSummary.AudioPath(plan.audio))
        summary.inputWasLive = plan.isLive
        summary.variant = demuxer.chosenVariant
        inputStatistics = { [demuxer] in demuxer.hlsStatistics }
        let metrics = RunMetrics(dimensions: plan.metricsLabels.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        // Latency is a segment's: measured for HLS outputs (input read → output segment published).
        let arrivals: ArrivalLog? = if case .hls = plan.output { ArrivalLog() } else { nil }
        // Output path checks come before any file is created.
        outputs = try RunOutputs(plan: plan, timing: timing)
        if let arrivals, let clock = demuxer.sourceClock {
            outputs.useSourceDates { tick in arrivals.framePts(shownAt: tick).flatMap { clock.date(ofVideoTimestamp: $0) } }
        }
        let partLatencies = PartLatencyLog()
        self.partLatencies = partLatencies
        outputs.onPartPublished { [metrics, arrivals] record in
            let latency = arrivals?.latency(ofPartEndingAt: record.lastTick)
            metrics.partPublished(latency: latency?.fromInput)
            if let latency { partLatencies.record(fromTick: latency.fromTick, fromInput: latency.fromInput) }
        }
        outputs.onSegmentPublished { [metrics, arrivals, log] record in
            let latency = arrivals?.latency(ofSegmentStartingAt: record.startTick)
            metrics.segmentPublished(latency: latency)
            log.debug("segment published", metadata: ["uri": "\(record.uri)", "seconds": "\(record.duration)",
                                                      "bytes": "\(record.bytes)", "latency": "\(latency.map { "\($0.seconds)" } ?? "-")"])
        }
        let read = plan.decodeSpec
        demuxer.marksSegmentEnds = read.marksSegmentEnds
        // A channel's pushed input waits for its publisher to come back instead of ending.
        demuxer.reconnects = read.reconnects
        // A shard reads from its keyframe on: before any stage reads.
        if let seek = read.seekKeyframe { try demuxer.seekVideo(toKeyframeAt: seek) }
        let machineIdle = MachineIdle()
        let overload = plan.liveSpec?.overload.map { OverloadController(plan: $0, machineIdle: machineIdle.sample) }
        var encoders: [EncodeStage] = []
        for (spec, mux) in zip(plan.encodeSpecs, outputs.media) {
            let stage = try EncodeStage(spec: spec, mux: mux, timing: timing, stopDeadline: stopDeadline)
            if let matrix = spec.displayMatrix { outputs.tagDisplayMatrix(of: mux, stream: stage.streamIndex, matrix) }
            if !spec.presetSteps.isEmpty {
                let size = spec.size
                stage.onPresetChange = { [metrics, log] preset, refused in
                    if let refused {
                        log.warning("overload: x264 preset \(preset.rawValue) not used for \(size.width)x\(size.height): \(refused)")
                    } else {
                        metrics.encoderPresetChanged()
                        log.notice("overload: \(size.width)x\(size.height) encoded with x264 preset \(preset.rawValue) from this keyframe")
                    }
                }
            }
            encoders.append(stage)
        }
        if case .discard = plan.outputSpec.kind {
            encoders = [EncodeStage(discardingIn: plan.filterSpec.timeBase, timing: timing, stopDeadline: stopDeadline)]
        }
        self.encoders = encoders
        filter = try FilterStage(spec: plan.filterSpec, outputs: encoders, control: control, log: log, timing: timing)
        reader = ReadStage(demuxer: demuxer, audioStream: read.audioStream, capacity: read.readCapacity, arrivals: arrivals)
        decode = try DecodeStage(spec: read, demuxer: demuxer, packets: reader.packets, timing: timing)
        decode.overload = overload
        audio = try AudioStage(plan: plan.audio, demuxer: demuxer, origin: plan.input.audioStart, input: decode.audio,
                               outputs: outputs.audioTargets, stopDeadline: stopDeadline)
        if audio == nil { decode.audio?.finish() }
        audio?.fillsGaps = plan.liveSpec?.inputLoss.keepsChannelUp ?? false
        ticks = TickStage(spec: plan.tickSpec, decode: decode, reader: reader, filter: filter.work, arrivals: arrivals,
                          audio: audio, overload: overload, splices: outputs.splices, metrics: metrics, log: log)
        progress = RunProgress(plan: plan, decode: decode, filter: filter, encoders: encoders, audio: audio, outputs: outputs,
                               ticks: ticks, timing: timing, metrics: metrics, report: report)
        try outputs.begin()
    }

    /// Runs until the input ends, `--max-duration`, a stall, or the task is cancelled (then as
    /// `onStop` says).
    func run(onStop: StopBehavior) async throws(MediaError) -> JobSummary {
        for stage in outputs.allMux { stage.start(in: group) }
        for stage in encoders { stage.start(in: group) }
        audio?.start(in: group)
        filter.start(in: group)
        decode.start(in: group)
        reader.start(in: group)

        var failure: (any Error)?
        do {
            try await ticks.run(tick: progress.reportIfDue)
        } catch {
            failure = error
        }
        // The tick stage is done: no more pictures. Stop reading (a stop may leave input unread).
        reader.stop()
        decode.frames.cancel()
        let stopped = failure == nil && ticks.interrupted
        if stopped, onStop == .abandon {
            summary.abandoned = true
            group.cancel()
        } else if stopped, onStop == .finishQuickly {
            stopDeadline.set(ContinuousClock.now + .milliseconds(300))
            filter.work.finish(discardingPending: true)
        } else {
            filter.work.finish()
        }
        if failure != nil { group.cancel() }
        await group.wait()

        if let error = group.error ?? failure.flatMap({ $0 is ChannelCancelled ? nil : $0 }) {
            outputs.discard()
            throw asMediaError(error)
        }
        if summary.abandoned {
            outputs.discard()
            return summary
        }
        // A run that decoded no picture from an input that claims video leaves nothing behind.
        if decode.framesDecoded == 0, !ticks.interrupted {
            outputs.discard()
            throw .noVideoFrames(plan.input.url)
        }
        do {
            try await group.perform("commit") { [outputs] in try outputs.commit() }
        } catch {
            outputs.discard()
            throw asMediaError(error)
        }
        summary.hlsInput = inputStatistics()
        summary.partLatency = partLatencies.summary
        if let log = decode.decodeTimes {
            summary.decoding = JobSummary.LiveDecoding(decodedAt: log.all, heldPicturesReleased: decode.heldPicturesReleased)
        }
        summary.inputLosses = ticks.losses.losses.map {
            JobSummary.InputLoss(began: $0.began, outputTime: $0.outputTime, seconds: $0.seconds ?? Date().timeIntervalSince($0.began))
        }
        if let overload = ticks.overload {
            summary.overload = OverloadSummary(
                steps: overload.plan.steps.map(\.description), maxLevel: overload.maxLevel, finalLevel: overload.level,
                changes: overload.changes.map {
                    .init(outputTime: $0.outputTime, level: $0.change.to,
                          steps: $0.change.steps(of: overload.plan).map(\.description), taken: $0.change.taken, reason: $0.change.reason)
                },
                picturesNotDecoded: decode.picturesNotDecoded, ticksShed: ticks.ticksShed,
                encoderPresetChanges: encoders.map(\.presetChanges).reduce(0, +))
        }
        summary.outputs = outputs.playlists
        summary.hlsRenditions = outputs.hlsRenditions
        summary.warnings += plan.warnings + outputs.lint()
        progress.finish(&summary)
        if let stalled = ticks.stalledSeconds { throw .inputStalled(plan.input.url, seconds: stalled) }
        return summary
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

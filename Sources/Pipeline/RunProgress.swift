import Dispatch
import MediaIO

/// A run's progress, made a few times a second from what the stages count, and its final summary.
/// Every progress snapshot also advances the run's metrics (swift-metrics).
final class RunProgress {
    private let plan: JobPlan
    private let duration: Double?
    private let decode: DecodeStage
    private let filter: FilterStage
    private let encoders: [EncodeStage]
    private let audio: AudioStage?
    private let outputs: RunOutputs
    private let ticks: TickStage
    private let timing: TimingRecorder
    private let metrics: RunMetrics
    private let report: (JobProgress) -> Void
    private let start = DispatchTime.now()
    private var lastReport = DispatchTime.now()

    init(plan: JobPlan, decode: DecodeStage, filter: FilterStage, encoders: [EncodeStage], audio: AudioStage?,
         outputs: RunOutputs, ticks: TickStage, timing: TimingRecorder, metrics: RunMetrics,
         report: @escaping (JobProgress) -> Void) {
        (self.plan, self.duration, self.decode, self.filter) = (plan, plan.input.duration, decode, filter)
        (self.encoders, self.audio, self.outputs, self.ticks) = (encoders, audio, outputs, ticks)
        (self.timing, self.metrics, self.report) = (timing, metrics, report)
    }

    /// Reports progress when the last report is a quarter of a second old.
    func reportIfDue() {
        let now = DispatchTime.now()
        guard now.uptimeNanoseconds - lastReport.uptimeNanoseconds > 250_000_000 else { return }
        send(phase: .running, bytes: outputs.bytesWritten)
    }

    /// The run's summary once every stage has ended and the outputs are committed; the last progress report.
    func finish(_ summary: inout JobSummary) {
        summary.framesDecoded = decode.framesDecoded
        summary.framesWritten = encoders[0].framesWritten
        summary.framesFiltered = filter.framesFiltered
        summary.chainChanges = filter.chainChanges
        summary.videoPaths = filter.pathIntervals
        summary.decodeErrors = decode.decodeErrors + (audio?.decodeErrors ?? 0)
        summary.duration = encoders[0].duration
        summary.interrupted = ticks.interrupted
        summary.truncated = ticks.truncated
        summary.ticks = ticks.statistics
        summary.prerollFrames = ticks.prerollFrames
        summary.framesDropped = ticks.framesDropped
        if let stats = ticks.statistics {
            summary.framesDropped = stats.droppedFrames
            summary.framesRepeated = stats.repeatedTicks + ticks.ticksShed
            summary.prerollFrames = stats.prerollFrames
        }
        summary.bytes = outputs.committedBytes
        summary.timings = timing.timings
        summary.filterPasses = filter.passes
        summary.captions = ticks.captionCounts
        summary.splices = ticks.placedSplices
        summary.splicesUnplaced = ticks.unplacedSplices
        summary.wallTime = elapsed
        send(phase: summary.interrupted ? .interrupted : .finished, bytes: summary.bytes)
    }

    private var elapsed: Double { Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9 }

    private func send(phase: JobProgress.Phase, bytes: Int64) {
        lastReport = DispatchTime.now()
        let elapsed = elapsed
        let written = encoders[0].framesWritten
        let mediaTime = decode.mediaTime
        let decoded = decode.framesDecoded
        var p = JobProgress(mediaTime: mediaTime, duration: duration, framesDecoded: decoded,
                            framesWritten: written, framesPerSecond: elapsed > 0 ? Double(written) / elapsed : 0,
                            speed: elapsed > 0 ? mediaTime / elapsed : 0, elapsed: elapsed)
        p.audioTime = audio?.handledTime
        p.phase = phase
        p.ticks = ticks.ticksShown
        p.repeated = ticks.ticksRepeated
        p.filtered = filter.framesFiltered
        // Shed ticks (`--overload adapt`) are repeats; their pictures are shed, not dropped.
        p.dropped = plan.timing.isConstantRate ? max(0, decoded - (ticks.ticksShown - ticks.ticksRepeated) - 1 - ticks.ticksShed) : ticks.framesDropped
        if phase != .running, let stats = ticks.statistics { p.dropped = stats.droppedFrames; p.repeated = stats.repeatedTicks + ticks.ticksShed }
        p.picturesNotDecoded = decode.picturesNotDecoded
        p.captions = ticks.captionCounts
        p.bytes = bytes
        p.timings = timing.timings
        p.filterPasses = filter.passes
        metrics.update(p)
        report(p)
    }
}

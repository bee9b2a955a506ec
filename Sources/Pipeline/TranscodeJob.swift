import Dispatch
import Filters
import Foundation
import HLS
import Logging
import MediaIO

/// One job opened: the input and the plan made from it. Running it is `ExportSession`'s business
/// (the library's front door, which the CLI uses too).
///
/// Opening does every check that can fail before work starts (input, chain geometry, output
/// settings), so a bad job fails at start-up with nothing written.
public final class TranscodeJob: @unchecked Sendable {
    public let demuxer: Demuxer
    /// Every decision of the run, made once.
    public let plan: JobPlan
    /// Changes the chain while the job runs; nil unless `JobConfiguration.chainControl` is set.
    public let chainControl: ChainControl?

    /// Opens the input and plans, in the calling thread: blocking I/O (a network input's open and
    /// probe, a preset's bit-rate scan, a live playlist's target duration). From async code use `open`.
    /// `interrupt.stop()` (from any thread) ends the open: it then throws.
    public init(configuration: JobConfiguration, interrupt: InputInterrupt = InputInterrupt()) throws(JobError) {
        do {
            var options = configuration.inputOptions
            // The input's metrics (the HLS reader's) carry the run's labels, as RunMetrics' do.
            options.metricDimensions = configuration.metricsLabels.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
            demuxer = try Demuxer(url: configuration.input, options: options, interrupt: interrupt)
        } catch {
            throw .media(error)
        }
        // Only a preset that follows the source's rate needs it measured (a scan of the file).
        let bitRate = configuration.preset == nil ? demuxer.video.bitRate
            : demuxer.video.bitRate ?? Demuxer.measuredVideoBitRate(url: configuration.input, interrupt: interrupt)
        plan = try JobPlan(configuration: configuration, input: InputFacts(demuxer: demuxer, configuration: configuration,
                                                                           videoBitRate: bitRate))
        chainControl = configuration.chainControl ? ChainControl(plan: plan) : nil
    }

    /// Opens the input and plans on a thread of its own, so no thread of the cooperative pool
    /// blocks on the network or the disk. Cancelling the calling task stops the open wherever it
    /// is (a listener waiting for its publisher, a slow origin, a probe): it throws `.cancelled`.
    public static func open(_ configuration: JobConfiguration) async throws(JobError) -> TranscodeJob {
        // The stop exists before the open starts, so a cancellation at any moment reaches it.
        let interrupt = InputInterrupt()
        let result: Result<TranscodeJob, JobError> = await offThePool(onCancel: { interrupt.stop() }) {
            do throws(JobError) { return .success(try TranscodeJob(configuration: configuration, interrupt: interrupt)) } catch { return .failure(error) }
        }
        // An input opened as the stop came is stopped too: its job could read nothing.
        if interrupt.isStopped { throw .cancelled }
        return try result.get()
    }

    /// Runs to the end of the input, or until the calling task is cancelled (a stop: then as
    /// `onStop` says). Progress is reported a few times a second.
    func run(onStop: StopBehavior, progress: @escaping (JobProgress) -> Void) async throws(JobError) -> JobSummary {
        let summary: JobSummary
        let log = Logger(label: "livefilter.pipeline")
        log.info("run", metadata: ["input": "\(plan.input.url.redactingSecrets)", "output": "\(plan.outputPath)",
                                   "path": "\(plan.videoPath)", "live": "\(plan.isLive)",
                                   "size": "\(plan.geometry.encodeSize.width)x\(plan.geometry.encodeSize.height)"])
        do {
            defer { chainControl?.end() }
            let execution = try PlanExecution(plan: plan, demuxer: demuxer, control: chainControl, log: log, report: progress)
            summary = try await execution.run(onStop: onStop)
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

    /// The input as asked (a URL or path; may hold secrets: redact before showing it).
    public var inputURL: String { plan.input.url }
    /// What a lost live input does (`--on-input-loss`).
    public var inputLoss: InputLossPolicy { plan.inputLoss }
    /// The chain actually run: the orientation fix first, then the user's chain.
    public var effectiveChain: FilterChain { plan.geometry.chain }
    public var chainOutputSize: FrameSize { plan.geometry.chainOutputSize }
    public var encodeSize: FrameSize { plan.geometry.encodeSize }
    public var container: OutputContainer { plan.container }
    /// The output frame rate (constant rate) or nominal rate (timestamps kept).
    public var outputRate: Rational { plan.timing.rate }
    /// Whether output runs on the tick clock (constant rate), rather than keeping timestamps.
    public var usesTickClock: Bool { plan.timing.isConstantRate }
    /// HLS options with the playlist type settled (nil: not an HLS output).
    public var hlsOptions: HLSOutputOptions? { plan.hlsOptions }
    /// The encoded outputs: one per rendition.
    public var renditions: [(size: FrameSize, bitRate: Int?)] { plan.renditions.map { ($0.size, $0.bitRate) } }
}

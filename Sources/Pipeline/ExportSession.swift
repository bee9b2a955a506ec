import Filters
import MediaIO
import Synchronization

/// The library's front door, which the CLI uses too: one job from input to output, with progress
/// as an `AsyncSequence`, cancellation by cancelling the task, and one error type (`ExportError`).
///
/// ```swift
/// var job = JobConfiguration(input: "in.mp4", output: "out.mp4",
///                            chain: FilterChain([GaussianBlur(sigma: 6), Mirror(axis: .horizontal)]))
/// job.video.rateControl = .averageBitrate(2_000_000)
/// let session = ExportSession(job)
/// Task { for await p in session.progress { print(p.fraction) } }
/// let result = try await session.run()
/// ```
///
/// A caller that needs the plan before the run (a server showing it, a chain editor) calls `open()`
/// first; `run()` opens the input itself otherwise. Opening and every blocking step run off Swift's
/// cooperative pool.
public final class ExportSession: Sendable {
    /// What to do with the output when the task is cancelled.
    public enum CancellationBehavior: Sendable {
        /// Leave nothing unfinished behind (`OutputArtifact.discard`); `run` throws an `ExportError`
        /// of kind `.cancelled`. An event or live HLS output keeps the segments it published, its
        /// playlist ended.
        case removeOutput
        /// Finish a playable output with what was done, draining the encoder's look-ahead for at
        /// most 300 ms; `run` returns the summary, `interrupted` set.
        case finishPartialOutput
        /// The same, with every picture already handed to the encoder written (the CLI's Ctrl-C).
        case finishOutput
    }

    /// One progress event. Fractions are in 0…1, never decrease, and the last event of a
    /// finished job has `fraction == 1`.
    public struct Progress: Sendable {
        public var videoFraction: Double
        public var audioFraction: Double?
        public var fraction: Double
        public var framesPerSecond: Double
        public var speed: Double
        public var estimatedTimeRemaining: Double?
        public var framesWritten: Int
        /// Everything the pipeline counts (ticks, repeats, bytes, stage timings), for detailed displays.
        public var details: JobProgress
    }

    public let configuration: JobConfiguration
    public let cancellationBehavior: CancellationBehavior
    /// Progress events; the sequence ends when the job ends.
    public let progress: AsyncStream<Progress>
    private let continuation: AsyncStream<Progress>.Continuation
    private let opened = Mutex<TranscodeJob?>(nil)

    public init(_ configuration: JobConfiguration, onCancel: CancellationBehavior = .removeOutput) {
        self.configuration = configuration
        cancellationBehavior = onCancel
        (progress, continuation) = AsyncStream.makeStream(of: Progress.self, bufferingPolicy: .bufferingNewest(64))
    }

    /// Opens the input and makes the plan (once): the job's plan and, with `chainControl` set, its
    /// `ChainControl`, for callers that need them before `run`.
    @discardableResult
    public func open() async throws(ExportError) -> TranscodeJob {
        if let job = opened.withLock({ $0 }) { return job }
        let job: TranscodeJob
        do { job = try await TranscodeJob.open(configuration) } catch { throw ExportError(error) }
        opened.withLock { $0 = job }
        return job
    }

    /// Runs the job. Throws `ExportError` when the job fails, and when the task was cancelled with
    /// `.removeOutput`; with the other behaviours a cancelled run returns its summary, `interrupted` set.
    public func run() async throws(ExportError) -> JobSummary {
        defer { continuation.finish() }
        let job = try await open()
        let onStop: StopBehavior = switch cancellationBehavior {
        case .removeOutput: .abandon
        case .finishPartialOutput: .finishQuickly
        case .finishOutput: .finish
        }
        var fractions = ProgressFractions()
        do {
            return try await job.run(onStop: onStop) { [continuation] p in
                continuation.yield(fractions.progress(p))
            }
        } catch {
            throw ExportError(error)
        }
    }
}

/// Fractions that never go back: a stream's duration is a guess until the end.
private struct ProgressFractions {
    private var video = 0.0, audio = 0.0, total = 0.0

    mutating func progress(_ p: JobProgress) -> ExportSession.Progress {
        let duration = p.duration ?? 0
        var videoNow = duration > 0 ? min(1, p.mediaTime / duration) : 0
        var audioNow = p.audioTime.map { duration > 0 ? min(1, $0 / duration) : 0 }
        let finished = p.phase == .finished
        if finished { videoNow = 1; if audioNow != nil { audioNow = 1 } }
        video = max(video, videoNow)
        if let a = audioNow { audio = max(audio, a) }
        let combined = audioNow == nil ? video : (video + audio) / 2
        total = finished ? 1 : min(max(total, combined), 0.999)
        return ExportSession.Progress(videoFraction: video, audioFraction: audioNow == nil ? nil : audio, fraction: total,
                                      framesPerSecond: p.framesPerSecond, speed: p.speed,
                                      estimatedTimeRemaining: finished ? 0 : p.estimatedTimeRemaining,
                                      framesWritten: p.framesWritten, details: p)
    }
}

/// Why an export failed, with a message and what to do about it.
public struct ExportError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable {
        case inputUnreadable, notMedia, noVideoTrack, badChain, encoderMissing, outputNotWritable, outputExists
        case diskFull, invalidSettings, inputStalled, processingFailed
        /// The task was cancelled and, as asked (`.removeOutput`), nothing was kept.
        case cancelled
    }

    public let kind: Kind
    public let message: String
    public let recoverySuggestion: String
    public let underlying: JobError

    public init(_ error: JobError) {
        underlying = error
        message = error.description
        recoverySuggestion = error.recoverySuggestion
        switch error {
        case .chain: kind = .badChain
        case .cancelled: kind = .cancelled
        case let .media(m):
            kind = switch m {
            case .inputNotFound, .inputUnreadable, .inputChanged: .inputUnreadable
            case .notMediaFile, .decoderMissing, .inputTooLarge, .inputRefused, .noVideoFrames: .notMedia
            case .noVideoStream: .noVideoTrack
            case .encoderMissing: .encoderMissing
            case .outputFolderMissing, .outputNotWritable, .unsupportedOutput: .outputNotWritable
            case .outputExists: .outputExists
            case .invalidSettings: .invalidSettings
            case .inputStalled: .inputStalled
            case .diskFull: .diskFull
            case .processing: .processingFailed
            }
        }
    }

    public var description: String { "\(message) (\(recoverySuggestion))" }
}

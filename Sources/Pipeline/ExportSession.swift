import Filters
import MediaIO
import Synchronization

/// The library's front door: one job from input to output, with progress as an `AsyncSequence`
/// and cancellation by cancelling the task.
///
/// ```swift
/// var job = JobConfiguration(input: "in.mp4", output: "out.mp4",
///                            chain: FilterChain([GaussianBlur(sigma: 6), Mirror(axis: .horizontal)]))
/// job.video.rateControl = .averageBitrate(2_000_000)
/// let session = ExportSession(job)
/// Task { for await p in session.progress { print(p.fraction) } }
/// let result = try await session.run()
/// ```
public final class ExportSession: Sendable {
    /// What to do with the output when the task is cancelled.
    public enum CancellationBehavior: Sendable {
        /// Finish a playable file with what was done, then throw `CancellationError`.
        case finishPartialOutput
        /// Leave nothing unfinished behind (`OutputArtifact.discard`), then throw `CancellationError`.
        /// An event or live HLS output keeps the segments it published, its playlist ended.
        case removeOutput
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
    }

    public let configuration: JobConfiguration
    public let cancellationBehavior: CancellationBehavior
    /// Progress events; the sequence ends when the job ends.
    public let progress: AsyncStream<Progress>
    private let continuation: AsyncStream<Progress>.Continuation
    private let cancelled = Atomic<Bool>(false)

    public init(_ configuration: JobConfiguration, onCancel: CancellationBehavior = .removeOutput) {
        self.configuration = configuration
        cancellationBehavior = onCancel
        (progress, continuation) = AsyncStream.makeStream(of: Progress.self, bufferingPolicy: .bufferingNewest(64))
    }

    /// Runs the job. Throws `ExportError` when the job fails and `CancellationError` when the task
    /// was cancelled (after finishing or removing the output, as chosen).
    public func run() async throws -> JobSummary {
        defer { continuation.finish() }
        let job: TranscodeJob
        do {
            job = try TranscodeJob(configuration: configuration)
        } catch {
            throw ExportError(error)
        }
        var last = (video: 0.0, audio: 0.0, total: 0.0)
        let summary: JobSummary
        do {
            summary = try await withTaskCancellationHandler {
                try await job.run(
                    progress: { [continuation] p in
                        let duration = p.duration ?? 0
                        var video = duration > 0 ? min(1, p.mediaTime / duration) : 0
                        var audio = p.audioTime.map { duration > 0 ? min(1, $0 / duration) : 0 }
                        let finished = p.phase == .finished
                        if finished { video = 1; if audio != nil { audio = 1 } }
                        last.video = max(last.video, video)
                        if let a = audio { last.audio = max(last.audio, a) }
                        let combined = audio == nil ? last.video : (last.video + last.audio) / 2
                        last.total = finished ? 1 : min(max(last.total, combined), 0.999)
                        continuation.yield(Progress(videoFraction: last.video, audioFraction: audio == nil ? nil : last.audio,
                                                    fraction: last.total, framesPerSecond: p.framesPerSecond, speed: p.speed,
                                                    estimatedTimeRemaining: finished ? 0 : p.estimatedTimeRemaining,
                                                    framesWritten: p.framesWritten))
                    },
                    shouldStop: { cancelled.load(ordering: .relaxed) },
                    abandon: { cancellationBehavior == .removeOutput },
                    quickStop: true)
            } onCancel: {
                cancelled.store(true, ordering: .relaxed)
            }
        } catch JobError.cancelled {
            throw CancellationError()
        } catch let error as JobError {
            throw ExportError(error)
        }
        if summary.interrupted { throw CancellationError() }
        return summary
    }
}

/// Why an export failed, with a message and what to do about it.
public struct ExportError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable {
        case inputUnreadable, notMedia, noVideoTrack, badChain, encoderMissing, outputNotWritable, outputExists
        case diskFull, invalidSettings, inputStalled, processingFailed
    }

    public let kind: Kind
    public let message: String
    public let recoverySuggestion: String
    public let underlying: JobError

    init(_ error: JobError) {
        underlying = error
        message = error.description
        recoverySuggestion = error.recoverySuggestion
        switch error {
        case .chain: kind = .badChain
        case .cancelled: kind = .processingFailed
        case let .media(m):
            kind = switch m {
            case .inputNotFound, .inputUnreadable, .inputChanged: .inputUnreadable
            case .notMediaFile, .decoderMissing, .inputTooLarge, .noVideoFrames: .notMedia
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

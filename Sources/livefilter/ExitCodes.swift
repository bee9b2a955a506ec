import Filters
import MediaIO
import Pipeline

/// The documented exit codes (docs/operations.md, "Exit codes").
enum LiveFilterExit: Int32 {
    case ok = 0
    case processingFailed = 1
    case usage = 2
    case badChain = 3
    case inputUnreadable = 4
    case notMedia = 5
    case noVideo = 6
    case outputNotWritable = 7
    case outputExists = 8
    case inputStalled = 9
    case inputTooLarge = 10
    case noVideoFrames = 11
    /// A shard's input differs from the one its plan was made from.
    case inputChanged = 12
    /// `join` found parts missing or incomplete (or another join holds the plan).
    case partsIncomplete = 13
    /// A cluster task (Slurm) failed or was cancelled.
    case clusterTaskFailed = 14
    /// The binary's kernels were built for AVX2 and this CPU has none (build it here, or portable).
    case unsupportedCPU = 15
    case interrupted = 130
    case terminated = 143
}

/// A failure with its message and exit code, printed once by `main`.
struct CommandFailure: Error {
    var message: String
    var code: LiveFilterExit

    init(_ message: String, code: LiveFilterExit) {
        self.message = message
        self.code = code
    }

    init(_ error: MediaError) {
        let code: LiveFilterExit = switch error {
        case .inputNotFound, .inputUnreadable: .inputUnreadable
        case .notMediaFile, .decoderMissing: .notMedia
        case .noVideoStream: .noVideo
        case .outputFolderMissing, .outputNotWritable: .outputNotWritable
        case .outputExists: .outputExists
        case .invalidSettings, .unsupportedOutput: .usage
        case .encoderMissing, .processing: .processingFailed
        case .inputStalled: .inputStalled
        case .inputTooLarge, .inputRefused: .inputTooLarge
        case .noVideoFrames: .noVideoFrames
        case .diskFull: .outputNotWritable
        case .inputChanged: .inputChanged
        }
        self.init("\(error.description); \(error.recoverySuggestion)", code: code)
    }

    /// With `context`, the last network warning FFmpeg gave (e.g. why a segment was refused).
    init(_ error: JobError, context: String?) {
        self.init(error)
        if let context, case .media = error { message += " (\(context))" }
    }

    init(_ error: JobError) {
        switch error {
        case let .media(media): self.init(media)
        case let .chain(chain): self.init("the filter chain does not fit this input: \(chain)", code: .badChain)
        case .cancelled: self.init("cancelled", code: .interrupted)
        }
    }
}

import HLS

/// What went wrong with a job, in words a user can act on.
public enum MediaError: Error, CustomStringConvertible, Sendable, Equatable {
    case inputNotFound(String)
    case inputUnreadable(String, reason: String)
    case notMediaFile(String, reason: String)
    case noVideoStream(String)
    /// The input claims a video stream but not one frame of it decodes (a truncated or damaged file).
    case noVideoFrames(String)
    case decoderMissing(String)
    case encoderMissing(String)
    case outputFolderMissing(String)
    case outputNotWritable(String, reason: String)
    case outputExists(String)
    case unsupportedOutput(String, reason: String)
    case invalidSettings(String)
    /// The input asks for more work than allowed (--max-pixels).
    case inputTooLarge(String, reason: String)
    /// The input's origin asks for what livefilter does not do for it: a playlist number out of
    /// bounds, a local file or a private address referenced from a remote playlist.
    case inputRefused(String, reason: String)
    /// The output's file system is full (or the file hit a size limit).
    case diskFull(String)
    /// A live input delivered nothing for too long.
    case inputStalled(String, seconds: Int)
    /// A failure while decoding, encoding or writing after the job had started.
    case processing(FFmpegError)
    /// A shard's input is not what its plan was made from (changed, replaced, or read differently).
    case inputChanged(String, reason: String)

    public var description: String {
        switch self {
        // A URL's secrets (a passphrase, a token, an RTMP stream key) stay out of messages: they end in logs.
        case let .inputNotFound(path): "input '\(path.redactingSecrets)' does not exist"
        case let .inputUnreadable(path, reason): "cannot read input '\(path.redactingSecrets)': \(reason)"
        case let .notMediaFile(path, reason): "input '\(path.redactingSecrets)' is not a media file livefilter can read (\(reason))"
        case let .noVideoStream(path): "input '\(path.redactingSecrets)' has no video stream"
        case let .noVideoFrames(path): "no video frame could be decoded from '\(path.redactingSecrets)': its video stream is empty, truncated or damaged; nothing was written"
        case let .decoderMissing(codec): "no decoder for codec '\(codec)' in this FFmpeg build"
        case let .encoderMissing(codec): "no encoder '\(codec)' in this FFmpeg build"
        case let .outputFolderMissing(path): "output folder '\(path)' does not exist"
        case let .outputNotWritable(path, reason): "cannot write output '\(path)': \(reason)"
        case let .outputExists(path): "output '\(path)' already exists"
        case let .unsupportedOutput(path, reason): "cannot write '\(path)': \(reason)"
        case let .invalidSettings(reason): "invalid settings: \(reason)"
        case let .diskFull(path): "no space left writing '\(path)'"
        case let .inputTooLarge(url, reason): "input '\(url.redactingSecrets)' is refused: \(reason)"
        case let .inputRefused(url, reason): "input '\(url.redactingSecrets)' is refused: \(reason)"
        case let .inputStalled(url, seconds): "input '\(url.redactingSecrets)' delivered nothing for \(seconds) s; the output was finished with what arrived"
        case let .processing(error): error.description
        case let .inputChanged(url, reason): "input '\(url.redactingSecrets)' is not the input the plan was made from: \(reason)"
        }
    }

    /// What the user can do about it.
    public var recoverySuggestion: String {
        switch self {
        case .inputNotFound: "check the path or URL"
        case .inputUnreadable: "check the file's permissions, or that the URL is reachable"
        case .notMediaFile: "pass a video file or an HLS playlist"
        case .noVideoStream: "livefilter filters video; pass an input with a video stream"
        case .noVideoFrames: "check the input plays (ffprobe -count_frames), or re-download or re-export it"
        case .decoderMissing: "install Debian's libavcodec59 with that decoder, or transcode the input first"
        case .encoderMissing: "install libavcodec-extra or libx264 (scripts/install-deps.sh)"
        case .outputFolderMissing: "create the folder first"
        case .outputNotWritable: "choose a folder you can write to"
        case .outputExists: "pass --overwrite (-y) to replace it, or choose another name"
        case .unsupportedOutput: "use .mp4, .mov, .mkv, .ts, .m3u8 or a PNG pattern such as frames/%05d.png"
        case .invalidSettings: "see livefilter run --help"
        case .inputTooLarge: "raise --max-pixels if the input is trusted"
        case let .inputRefused(_, reason):
            reason.contains("--allow-private-networks") ? "pass --allow-private-networks if the origin is yours and on a private network"
                : "ask the origin's operator to fix its playlist"
        case .diskFull: "free space on the output's file system, or write elsewhere"
        case .inputStalled: "check that the stream is still being published, raise --input-loss-after, or keep the channel up with --on-input-loss hold"
        case .processing: "the input may be damaged; run with a different input or report the problem"
        case .inputChanged: "make the plan again (livefilter plan …) and run every shard of the new plan"
        }
    }
}

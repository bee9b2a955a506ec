import CFFmpeg
import CFFmpegLog
import HLS

/// A failed FFmpeg call: which operation, FFmpeg's code and its text for it.
public struct FFmpegError: Error, CustomStringConvertible, Sendable, Equatable {
    /// FFmpeg's AVERROR code, shown in the description for bug reports.
    public let code: Int32
    public let operation: String

    init(code: Int32, operation: String) {
        self.code = code
        self.operation = operation
    }

    /// Failures livefilter raises itself, reported in FFmpeg's terms so they take the same path
    /// (and read the same) as FFmpeg's own.
    public enum Kind: Sendable {
        /// AVERROR(EIO), "Input/output error": what a failing encoder or writer reports.
        case inputOutput
        /// AVERROR(EPERM), "Operation not permitted": a failure from outside FFmpeg, carried as one.
        case operationNotPermitted
    }

    /// `operation` failed with `kind`, e.g. an injected encoder fault.
    public init(_ kind: Kind, operation: String) {
        let code = switch kind {
        case .inputOutput: lf_averror(EIO)
        case .operationNotPermitted: lf_averror(EPERM)
        }
        self.init(code: code, operation: operation)
    }

    /// FFmpeg's own text for the code, e.g. "Invalid data found when processing input".
    public var reason: String { ffmpegErrorText(code) }

    public var description: String { "\(operation) failed: \(reason) (\(code))" }

    public var isEndOfFile: Bool { code == lf_averror_eof() }
    public var isTryAgain: Bool { code == lf_averror_eagain() }
    public var isExit: Bool { code == lf_averror_exit() }
    /// Damaged input data; also AVERROR_PATCHWELCOME, which the ADTS-to-ASC filter returns for a
    /// corrupt AAC header (a damaged packet, not a missing feature).
    public var isInvalidData: Bool { code == lf_averror_invaliddata() || code == lf_averror_patchwelcome() }
}

/// FFmpeg's text for an error code.
func ffmpegErrorText(_ code: Int32) -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    return buffer.withUnsafeMutableBufferPointer { buf in
        String(cString: lf_err2str(code, buf.baseAddress!, buf.count))
    }
}

/// The one funnel for FFmpeg return codes: negative codes throw, others pass through.
@discardableResult
func check(_ code: Int32, _ operation: @autoclosure () -> String) throws(FFmpegError) -> Int32 {
    if code < 0 { throw FFmpegError(code: code, operation: operation()) }
    return code
}

/// Quiets FFmpeg's own logging (x264 logs at info level by default).
public enum FFmpegLog {
    public enum Level: Int32, Sendable { case quiet = -8, error = 16, warning = 24, info = 32, verbose = 40, debug = 48 }
    public static func setLevel(_ level: Level) { lf_log_quiet(level.rawValue) }

    /// Keeps FFmpeg quiet except for network and playlist warnings, which are captured for
    /// `drainCapturedWarnings()`; with `verbose`, FFmpeg's own warnings are printed too.
    public static func captureNetworkWarnings(verbose: Bool) { lf_log_capture(verbose ? 1 : 0) }

    /// Hides the secrets of `url` (its key, passphrase, tokens: `KnownSecrets.register(secretsOf:)`)
    /// from every message from now on, FFmpeg's own log lines included.
    public static func hideSecrets(of url: String) {
        for secret in KnownSecrets.register(secretsOf: url) { lf_log_add_secret(secret) }
    }

    /// Hides one secret value (a token, a key) from every message from now on.
    public static func hideSecret(_ value: String) {
        KnownSecrets.register(value)
        if value.count >= 4 { lf_log_add_secret(value) }
    }

    /// Captured warnings no input owns (FFmpeg logged them outside any input's call: an output's
    /// network, a thread of FFmpeg's own), oldest first. An input's are its `InputWarningLog`'s.
    public static func drainCapturedWarnings() -> [String] {
        var lines: [String] = []
        var buffer = [CChar](repeating: 0, count: 320)
        while lf_log_next(&buffer, Int32(buffer.count)) != 0 {
            lines.append(String(cString: buffer))
        }
        return lines
    }
}

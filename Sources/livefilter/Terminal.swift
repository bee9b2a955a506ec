import Foundation
import HLS

/// Writes to stderr (the C global `stderr` is not concurrency-safe in Swift 6).
enum Terminal {
    static let isInteractive = isatty(STDERR_FILENO) == 1

    static func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    static func line(_ text: String) { write(text + "\n") }

    // Errors and warnings carry text from the network (URLs, a caller's stream ID, FFmpeg's lines):
    // secrets hidden and control characters escaped before they reach a terminal or a log.
    static func error(_ message: String) { line("livefilter: error: \(message.forLogs)") }

    static func warning(_ message: String) { line("livefilter: warning: \(message.forLogs)") }
}

/// Formatting helpers for progress and summaries.
enum Format {
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "--:--" }
        let s = Int(seconds.rounded())
        return s >= 3600 ? String(format: "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60) : String(format: "%d:%02d", s / 60, s % 60)
    }

    static func bytes(_ n: Int64) -> String {
        let v = Double(n)
        if v >= 1_073_741_824 { return String(format: "%.2f GB", v / 1_073_741_824) }
        if v >= 1_048_576 { return String(format: "%.2f MB", v / 1_048_576) }
        if v >= 1024 { return String(format: "%.1f kB", v / 1024) }
        return "\(n) B"
    }

    static func bitRate(_ bps: Double) -> String {
        bps >= 1_000_000 ? String(format: "%.2f Mb/s", bps / 1_000_000) : String(format: "%.0f kb/s", bps / 1000)
    }
}

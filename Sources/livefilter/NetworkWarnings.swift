import MediaIO

/// FFmpeg's network and playlist warnings, cleaned up for one line each and de-duplicated
/// (a 404 segment is reported once, not once per retry).
enum NetworkWarnings {
    nonisolated(unsafe) private static var seen = Set<String>()

    static func drain() -> [String] {
        var out: [String] = []
        for raw in FFmpegLog.drainCapturedWarnings() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty, seen.insert(line).inserted else { continue }
            out.append(line)
        }
        return out
    }
}

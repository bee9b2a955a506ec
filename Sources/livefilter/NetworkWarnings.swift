import MediaIO
import Metrics

/// FFmpeg's network and playlist warnings, cleaned up for one line each and de-duplicated
/// (a 404 segment is reported once, not once per retry).
enum NetworkWarnings {
    nonisolated(unsafe) private static var seen = Set<String>()

    /// Muxer notes that say nothing a user can act on: the fMP4 HLS writer keeps its timeline with
    /// an edit list on an empty moov (see `ContainerOptions`), which movenc always remarks on; an
    /// audio-only MPEG-TS (an HLS audio rendition) times its PCR from AAC's 1024-sample frames,
    /// which mpegtsenc cannot read from the stream and always remarks on.
    static let harmless = ["No meaningful edit list will be written when using empty_moov without delay_moov",
                           "frame size not set"]

    static let reconnectMarkers = ["reconnect", "retrying with new connection", "keepalive request failed"]

    static func drain() -> [String] {
        var out: [String] = []
        for raw in FFmpegLog.drainCapturedWarnings() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            // FFmpeg's HTTP and HLS readers say when they open a connection again after a failure.
            if reconnectMarkers.contains(where: { line.localizedCaseInsensitiveContains($0) }) {
                Counter(label: "livefilter_input_reconnects_total").increment()
            }
            // A listener's wait for a publisher, interrupted by a stop (a port that cannot be had
            // is reported by the input's own error).
            if line.hasPrefix("Cannot open connection tcp://"), line.contains("?listen") { continue }
            guard !line.isEmpty, !harmless.contains(where: line.hasPrefix), seen.insert(line).inserted else { continue }
            out.append(line)
        }
        return out
    }
}

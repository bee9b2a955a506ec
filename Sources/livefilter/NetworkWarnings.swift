import MediaIO
import Metrics

/// FFmpeg's network and playlist warnings, cleaned up for one line each and de-duplicated
/// (a 404 segment is reported once, not once per retry).
enum NetworkWarnings {
    /// Lines already reported, newest last: a repeat is counted, not printed again. Bounded, so a
    /// stream of distinct lines (a refused caller after another) cannot grow memory without end.
    nonisolated(unsafe) private static var seen = RecentLines(capacity: 512)

    /// Muxer notes that say nothing a user can act on: the fMP4 HLS writer keeps its timeline with
    /// an edit list on an empty moov (see `ContainerOptions`), which movenc always remarks on; an
    /// audio-only MPEG-TS (an HLS audio rendition) times its PCR from AAC's 1024-sample frames,
    /// which mpegtsenc cannot read from the stream and always remarks on; a TS's SCTE-35 stream has
    /// no timestamps to estimate a duration from (its sections are read, timed by their splice times).
    static let harmless = ["No meaningful edit list will be written when using empty_moov without delay_moov",
                           "frame size not set", "start time for stream"]

    static let reconnectMarkers = ["reconnect", "retrying with new connection", "keepalive request failed"]

    /// The run's input warnings, then FFmpeg's lines no input owns.
    static func drain(_ input: InputWarningLog) -> [String] {
        var out: [String] = []
        for raw in input.drain() + FFmpegLog.drainCapturedWarnings() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            // FFmpeg's HTTP and HLS readers say when they open a connection again after a failure.
            if reconnectMarkers.contains(where: { line.localizedCaseInsensitiveContains($0) }) {
                Counter(label: "livefilter_input_reconnects_total").increment()
            }
            // A listener's wait for a publisher, interrupted by a stop (a port that cannot be had
            // is reported by the input's own error).
            if line.hasPrefix("Cannot open connection tcp://"), line.contains("?listen") { continue }
            guard !line.isEmpty, !harmless.contains(where: line.hasPrefix) else { continue }
            guard seen.insert(line) else {
                Counter(label: "livefilter_warnings_repeated_total").increment()
                continue
            }
            out.append(line)
        }
        return out
    }
}

/// A set of the last `capacity` distinct lines: inserting a line already there says so; past the
/// capacity the oldest is forgotten (and would be reported again).
struct RecentLines {
    let capacity: Int
    private var order: [String] = []
    private var members: Set<String> = []
    private var start = 0

    init(capacity: Int) { self.capacity = capacity }

    var count: Int { members.count }

    /// True when `line` is new (then remembered).
    mutating func insert(_ line: String) -> Bool {
        guard !members.contains(line) else { return false }
        if order.count < capacity {
            order.append(line)
        } else {
            members.remove(order[start])
            order[start] = line
            start = (start + 1) % capacity
        }
        members.insert(line)
        return true
    }
}

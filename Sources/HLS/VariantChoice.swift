import Foundation

/// How a variant of a master playlist is chosen.
public enum VariantChoice: Sendable, Equatable, CustomStringConvertible {
    case highest, lowest
    /// The Nth variant in playlist order, from 0.
    case index(Int)
    /// The highest variant whose bandwidth is at most this many bits per second.
    case maxBandwidth(Int)

    public init?(parsing text: String) {
        switch text {
        case "highest": self = .highest
        case "lowest": self = .lowest
        default:
            if text.hasPrefix("max-bandwidth="), let b = Int(text.dropFirst(14)), b > 0 { self = .maxBandwidth(b) }
            else if let n = Int(text), n >= 0 { self = .index(n) }
            else { return nil }
        }
    }

    public var description: String {
        switch self {
        case .highest: "highest"
        case .lowest: "lowest"
        case let .index(n): "\(n)"
        case let .maxBandwidth(b): "max-bandwidth=\(b)"
        }
    }
}

/// Where reading a live playlist starts (and where a restarted origin is followed from).
public enum LiveStart: String, Sendable, CaseIterable {
    /// The newest complete segment: a live processor's output is itself held back by its players,
    /// so joining further back only adds latency that must then be worked off faster than real
    /// time — on a loaded machine, for tens of seconds. The tick clock starts a target duration
    /// after the first frame instead, so a segment that comes a little late is still on time.
    case edge
    /// Three segments from the end, as players and FFmpeg (`live_start_index -3`) start: more
    /// of the stream in the output, a backlog to work off first.
    case holdback
    /// The oldest segment still listed.
    case oldest

    /// Segments behind the newest where a live stream is joined once the start is behind (and a
    /// restarted origin followed): the reader starts there, and the tick clock's slack is that many
    /// target durations.
    public var segmentsBehindNewest: Int { self == .edge ? 1 : 3 }
}

extension VariantChoice {
    /// The variant this choice picks: ranked by BANDWIDTH, else by pixels.
    public func pick(from variants: [VariantStream]) -> VariantStream? {
        func rank(_ v: VariantStream) -> Int { v.bandwidth > 0 ? v.bandwidth : (v.resolution.map { $0.width * $0.height } ?? 0) }
        switch self {
        case .highest: return variants.max { rank($0) < rank($1) }
        case .lowest: return variants.min { rank($0) < rank($1) }
        case let .index(n): return n < variants.count ? variants[n] : variants.last
        case let .maxBandwidth(b):
            return variants.filter { $0.bandwidth <= b }.max { rank($0) < rank($1) } ?? variants.min { rank($0) < rank($1) }
        }
    }
}

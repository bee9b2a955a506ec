/// Why an HLS input cannot be read, each with what the user can do about it. MediaIO maps these
/// onto its `MediaError` cases (not found, unreadable, not media).
public enum HLSInputError: Error, Sendable, CustomStringConvertible {
    /// The playlist (or the variant chosen) does not exist.
    case notFound(String)
    /// The playlist could not be fetched (network, timeout, status).
    case unreadable(String, reason: String)
    /// The text is not a playlist we can play.
    case notPlaylist(String, reason: String)
    /// Segments failed one after another: nothing more can be read.
    case segmentsFailing(String, reason: String)

    public var description: String {
        switch self {
        case let .notFound(url): "'\(url.forMessages)' does not exist"
        case let .unreadable(url, reason): "cannot read '\(url.forMessages)': \(reason)"
        case let .notPlaylist(url, reason): "'\(url.forMessages)' is not a playlist livefilter can read: \(reason)"
        case let .segmentsFailing(url, reason): "the segments of '\(url.forMessages)' cannot be read: \(reason)"
        }
    }
}

import HLS

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
    /// The playlist asks for what livefilter does not do for an origin: a number beyond the bounds
    /// it reads (`PlaylistNumber`), a local file or a private address from a remote playlist.
    case refused(String, reason: String)

    /// A playlist that does not parse: refused when a number in it is out of bounds, else not a playlist.
    public init(parsing error: PlaylistParseError, url: String) {
        self = error.isOutOfBounds ? .refused(url, reason: error.description) : .notPlaylist(url, reason: error.description)
    }

    public var description: String {
        switch self {
        case let .notFound(url): "'\(url.forMessages)' does not exist"
        case let .unreadable(url, reason): "cannot read '\(url.forMessages)': \(reason)"
        case let .notPlaylist(url, reason): "'\(url.forMessages)' is not a playlist livefilter can read: \(reason)"
        case let .segmentsFailing(url, reason): "the segments of '\(url.forMessages)' cannot be read: \(reason)"
        case let .refused(url, reason): "'\(url.forMessages)' is refused: \(reason)"
        }
    }
}

import Foundation

/// How an input is opened.
public struct InputOptions: Sendable {
    /// Abort a network read that makes no progress for this long.
    public var ioTimeout: Duration = .seconds(10)
    /// Protocols a playlist may reference when the input itself came over the network.
    public var networkProtocols = "http,https,tls,tcp,crypto"
    /// Which variant of an HLS master playlist to read.
    public var variant: VariantChoice = .highest
    /// Where a live HLS input starts.
    public var liveStart: LiveStart = .edge
    /// HTTP redirects followed before giving up.
    public var maxRedirects = 5
    /// Largest picture accepted (width × height); larger headers are refused before decoding.
    public var maxPixels = 8192 * 4320
    public init() {}
}

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

/// Where reading a live playlist starts.
public enum LiveStart: String, Sendable, CaseIterable {
    /// Near the newest segment (three from the end, as players do).
    case edge
    /// The oldest segment still listed.
    case oldest
}

import Foundation

/// The Delivery Directives of a Media Playlist request (rfc8216bis §6.2.5): query parameters a client
/// adds to ask for a blocking reload (`_HLS_msn`, `_HLS_part`, §6.2.5.2) or a delta update
/// (`_HLS_skip`, §6.2.5.1). A client builds the URL with `url(for:)`; a server reads a request's
/// query with `init(query:)` and decides with `check(against:)` and `isSatisfied(by:)`.
public struct DeliveryDirectives: Sendable, Equatable {
    /// `_HLS_skip`: what a delta update may leave out.
    public enum Skip: String, Sendable, CaseIterable {
        /// `YES`: old segments (needs CAN-SKIP-UNTIL).
        case segments = "YES"
        /// `v2`: old segments and old EXT-X-DATERANGE tags (needs CAN-SKIP-DATERANGES=YES).
        case segmentsAndDateRanges = "v2"
    }

    /// `_HLS_msn`: hold the response until the playlist has this Media Sequence Number.
    public var mediaSequenceNumber: Int?
    /// `_HLS_part`: and this Part Index of it. Only with `mediaSequenceNumber`.
    public var partIndex: Int?
    public var skip: Skip?

    public init(mediaSequenceNumber: Int? = nil, partIndex: Int? = nil, skip: Skip? = nil) {
        (self.mediaSequenceNumber, self.partIndex, self.skip) = (mediaSequenceNumber, partIndex, skip)
    }

    /// Query parameters starting with `_HLS_` are reserved for Delivery Directives (§6.2.5).
    public static let reservedPrefix = "_HLS_"

    /// The query items of these directives, in the order the spec's examples use: `_HLS_msn`,
    /// `_HLS_part`, `_HLS_skip`.
    public var queryItems: [URLQueryItem] {
        var items: [URLQueryItem] = []
        if let mediaSequenceNumber { items.append(URLQueryItem(name: "_HLS_msn", value: String(mediaSequenceNumber))) }
        if let partIndex { items.append(URLQueryItem(name: "_HLS_part", value: String(partIndex))) }
        if let skip { items.append(URLQueryItem(name: "_HLS_skip", value: skip.rawValue)) }
        return items
    }

    /// `playlistURL` with these directives: its own query items are kept, in order and as encoded
    /// (an authentication token, say), except earlier `_HLS_` directives, which these replace.
    /// Nil when `partIndex` is set without `mediaSequenceNumber` (a server must refuse that, §6.2.5.2).
    public func url(for playlistURL: URL) -> URL? {
        guard partIndex == nil || mediaSequenceNumber != nil,
              var components = URLComponents(url: playlistURL, resolvingAgainstBaseURL: true) else { return nil }
        var items = (components.percentEncodedQueryItems ?? []).filter { !$0.name.hasPrefix(Self.reservedPrefix) }
        items += queryItems  // decimal digits and YES/v2: nothing to percent-encode
        components.percentEncodedQueryItems = items.isEmpty ? nil : items
        return components.url
    }

    /// Reads the directives of a request's query string (`a=1&_HLS_msn=273&_HLS_part=2`, without
    /// the `?`). Other parameters are ignored. Throws, as a server answers 400 Bad Request, for a
    /// directive that is not a decimal integer or YES/v2, one given twice, or `_HLS_part` without
    /// `_HLS_msn` (§6.2.5.2).
    public init(query: String?) throws(DeliveryDirectivesError) {
        // Split by hand: a request's query is untrusted, and URLComponents traps (a fatal error, not
        // nil) when given a query with characters that are not allowed there.
        var seen: Set<String> = []
        for pair in (query ?? "").split(separator: "&") {
            let halves = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = String(halves[0]).removingPercentEncoding, name.hasPrefix(Self.reservedPrefix),
                  ["_HLS_msn", "_HLS_part", "_HLS_skip"].contains(name) else { continue }  // others are reserved for later versions
            guard seen.insert(name).inserted else { throw .repeated(name) }
            let raw = halves.count > 1 ? String(halves[1]) : ""
            guard let value = raw.removingPercentEncoding else { throw .invalidValue(name: name, value: raw) }
            switch name {
            case "_HLS_skip":
                guard let skip = Skip(rawValue: value) else { throw .invalidValue(name: name, value: value) }
                self.skip = skip
            default:
                // decimal-integer (RFC 8216 §4.2): digits only, no sign.
                guard !value.isEmpty, value.allSatisfy(\.isASCIIDigit), let n = Int(value) else {
                    throw .invalidValue(name: name, value: value)
                }
                if name == "_HLS_msn" { mediaSequenceNumber = n } else { partIndex = n }
            }
        }
        if partIndex != nil && mediaSequenceNumber == nil { throw .partWithoutMediaSequenceNumber }
    }

    /// The directives of a request URL's query.
    public init(url: URL) throws(DeliveryDirectivesError) {
        try self.init(query: URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedQuery)
    }

    /// What a server makes of these directives for the current version of the playlist
    /// (rfc8216bis §6.2.5.1, §6.2.5.2): the directives it must ignore are dropped (all of them with
    /// EXT-X-ENDLIST; `_HLS_skip` without CAN-SKIP-UNTIL; `v2` without CAN-SKIP-DATERANGES falls back to
    /// YES), and a request too far ahead throws, as the server answers 400 Bad Request: `_HLS_msn`
    /// more than two beyond the last segment, or `_HLS_part` more than the Advance Part Limit (three
    /// divided by the Part Target Duration when that is under a second, else three) beyond the last part.
    public func check(against playlist: MediaPlaylist) throws(DeliveryDirectivesError) -> DeliveryDirectives {
        if playlist.endList { return DeliveryDirectives() }
        var honoured = self
        if let control = playlist.serverControl, control.canSkipUntil != nil {
            if skip == .segmentsAndDateRanges, !control.canSkipDateRanges { honoured.skip = .segments }
        } else {
            honoured.skip = nil
        }
        guard let msn = mediaSequenceNumber else { return honoured }
        let lastMSN = playlist.nextMediaSequenceNumber - 1  // the last complete segment
        let (distance, overflow) = msn.subtractingReportingOverflow(lastMSN)
        if overflow ? msn > lastMSN : distance > 2 { throw .tooFarAhead(requested: msn, last: lastMSN) }
        if let part = partIndex, let target = playlist.partTarget, target > 0, let last = playlist.lastPart {
            let limit = target < 1 ? 3 / target : 3
            // Parts beyond the last one; past its segment, at least the requested index + 1.
            let ahead = msn == last.mediaSequenceNumber ? Double(part) - Double(last.partIndex)
                : msn > last.mediaSequenceNumber ? Double(part) + 1 : 0
            if ahead > limit { throw .tooFarAhead(requested: msn, last: lastMSN) }
        }
        return honoured
    }

    /// Whether `playlist` already has what `_HLS_msn`/`_HLS_part` ask for, so a blocked request can
    /// be answered (§6.2.5.2): a segment of that Media Sequence Number or later; with `_HLS_part`, that
    /// part of the segment or any later part. A Part Index past the last part of a complete segment
    /// means part 0 of the next one. True without `_HLS_msn`.
    public func isSatisfied(by playlist: MediaPlaylist) -> Bool {
        guard let msn = mediaSequenceNumber else { return true }
        if playlist.endList { return true }
        guard let part = partIndex else { return msn < playlist.nextMediaSequenceNumber }
        let first = playlist.mediaSequenceNumber(ofSegmentAt: 0)
        if msn < playlist.nextMediaSequenceNumber {
            // A complete segment: the part is there (or was, for an old one), or the index is past its
            // last part and means part 0 of the next segment, which exists when that segment is
            // complete or has a part.
            if msn < first { return true }
            let parts = playlist.segments[msn - first].parts
            return part < parts.count || msn < playlist.nextMediaSequenceNumber - 1
                || !(playlist.segmentInProgress?.parts.isEmpty ?? true)
        }
        guard msn == playlist.nextMediaSequenceNumber, let open = playlist.segmentInProgress else { return false }
        return part < open.parts.count
    }
}

/// Why a request's Delivery Directives are refused: a server answers 400 Bad Request (rfc8216bis §6.2.5.2).
public enum DeliveryDirectivesError: Error, Sendable, Equatable, CustomStringConvertible {
    case partWithoutMediaSequenceNumber
    case invalidValue(name: String, value: String)
    case repeated(String)
    /// `_HLS_msn`/`_HLS_part` beyond what the server will have soon; `last` is the last segment's number.
    case tooFarAhead(requested: Int, last: Int)

    public var description: String {
        switch self {
        case .partWithoutMediaSequenceNumber: "_HLS_part needs _HLS_msn"
        case let .invalidValue(name, value): "\(name)=\(value) is not a valid value"
        case let .repeated(name): "\(name) appears more than once"
        case let .tooFarAhead(requested, last): "_HLS_msn=\(requested) is too far beyond the last segment \(last)"
        }
    }
}

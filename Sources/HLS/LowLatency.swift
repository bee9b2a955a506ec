import Foundation

// Low-Latency HLS (draft-pantos-hls-rfc8216bis, "rfc8216bis" below): partial segments, preload hints,
// server control, delta updates and rendition reports.

/// One EXT-X-PART (rfc8216bis §4.4.4.9): a piece of a Parent Segment, published before the whole.
/// Its Media Sequence Number is its parent's; its Part Index is its position among the parent's parts.
public struct PartialSegment: Sendable, Equatable {
    public var duration: Double
    public var uri: String
    /// INDEPENDENT=YES: the part contains an independent frame (a client may start or switch here).
    public var independent: Bool
    /// BYTERANGE as written; its offset may be absent (it then follows the previous part of the parent).
    public var byteRange: ByteRange?
    /// `byteRange` with its offset filled in (the parser resolves an omitted offset); nil for a whole resource.
    public var resolvedByteRange: ByteRange?
    /// GAP=YES: the part is not available.
    public var gap: Bool
    /// Line of the EXT-X-PART tag in the parsed text (0 when built in code).
    public var line: Int

    public init(duration: Double, uri: String, independent: Bool = false, byteRange: ByteRange? = nil,
                gap: Bool = false, line: Int = 0, resolvedByteRange: ByteRange? = nil) {
        (self.duration, self.uri, self.independent, self.byteRange, self.gap, self.line) = (duration, uri, independent, byteRange, gap, line)
        self.resolvedByteRange = resolvedByteRange ?? (byteRange?.offset != nil ? byteRange : nil)
    }

    var attributeList: String {
        var attributes = ["DURATION=\(HLSNumber.shortest(duration))", "URI=\"\(uri)\""]
        if independent { attributes.append("INDEPENDENT=YES") }
        if let byteRange { attributes.append("BYTERANGE=\"\(byteRange)\"") }
        if gap { attributes.append("GAP=YES") }
        return attributes.joined(separator: ",")
    }
}

/// The Parent Segment a live LL-HLS playlist is still writing: its parts so far, after the last
/// complete segment and before its EXTINF, with the tags that already apply to it. Its Media
/// Sequence Number is `MediaPlaylist.nextMediaSequenceNumber`.
public struct SegmentInProgress: Sendable, Equatable {
    public var parts: [PartialSegment]
    public var discontinuity: Bool
    public var programDateTime: Date?
    /// The EXT-X-KEY tags in force (see `MediaSegment.keys`).
    public var keys: [EncryptionKey]
    /// The EXT-X-MAP in force when it is not the playlist's first, as `MediaSegment.map`.
    public var map: MediaInitializationSection?

    public init(parts: [PartialSegment], discontinuity: Bool = false, programDateTime: Date? = nil, keys: [EncryptionKey] = [],
                map: MediaInitializationSection? = nil) {
        self.map = map
        (self.parts, self.discontinuity, self.programDateTime, self.keys) = (parts, discontinuity, programDateTime, keys)
    }

    /// Sum of the part durations so far.
    public var duration: Double { parts.reduce(0) { $0 + $1.duration } }
}

/// EXT-X-PRELOAD-HINT (rfc8216bis §4.4.5.3): a resource the server will deliver as soon as it exists.
public struct PreloadHint: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        /// The next partial segment.
        case part = "PART"
        /// The next Media Initialization Section.
        case map = "MAP"
    }

    public var type: Kind
    public var uri: String
    /// BYTERANGE-START; nil means 0.
    public var byteRangeStart: Int?
    /// BYTERANGE-LENGTH; nil means to the end of the resource (request up to 2^53-1, RFC 8673).
    public var byteRangeLength: Int?

    public init(type: Kind, uri: String, byteRangeStart: Int? = nil, byteRangeLength: Int? = nil) {
        self.type = type
        self.uri = uri
        self.byteRangeStart = byteRangeStart
        self.byteRangeLength = byteRangeLength
    }

    var attributeList: String {
        var attributes = ["TYPE=\(type.rawValue)", "URI=\"\(uri)\""]
        if let byteRangeStart { attributes.append("BYTERANGE-START=\(byteRangeStart)") }
        if let byteRangeLength { attributes.append("BYTERANGE-LENGTH=\(byteRangeLength)") }
        return attributes.joined(separator: ",")
    }
}

/// EXT-X-SERVER-CONTROL (rfc8216bis §4.4.3.8): which Delivery Directives the server honours.
public struct ServerControl: Sendable, Equatable {
    /// CAN-SKIP-UNTIL, seconds: the Skip Boundary of delta updates (`_HLS_skip`); at least 6 × the target duration.
    public var canSkipUntil: Double?
    /// CAN-SKIP-DATERANGES=YES: delta updates may skip old EXT-X-DATERANGE tags too (`_HLS_skip=v2`).
    public var canSkipDateRanges: Bool
    /// HOLD-BACK, seconds from the end where playback starts; nil means 3 × the target duration.
    public var holdBack: Double?
    /// PART-HOLD-BACK, the same in low-latency mode; required with EXT-X-PART-INF.
    public var partHoldBack: Double?
    /// CAN-BLOCK-RELOAD=YES: `_HLS_msn`/`_HLS_part` requests are held until the playlist has that part.
    public var canBlockReload: Bool

    public init(canSkipUntil: Double? = nil, canSkipDateRanges: Bool = false, holdBack: Double? = nil,
                partHoldBack: Double? = nil, canBlockReload: Bool = false) {
        (self.canSkipUntil, self.canSkipDateRanges, self.holdBack) = (canSkipUntil, canSkipDateRanges, holdBack)
        (self.partHoldBack, self.canBlockReload) = (partHoldBack, canBlockReload)
    }

    var attributeList: String {
        var attributes: [String] = []
        if canBlockReload { attributes.append("CAN-BLOCK-RELOAD=YES") }
        if let canSkipUntil { attributes.append("CAN-SKIP-UNTIL=\(HLSNumber.shortest(canSkipUntil))") }
        if canSkipDateRanges { attributes.append("CAN-SKIP-DATERANGES=YES") }
        if let holdBack { attributes.append("HOLD-BACK=\(HLSNumber.shortest(holdBack))") }
        if let partHoldBack { attributes.append("PART-HOLD-BACK=\(HLSNumber.shortest(partHoldBack))") }
        return attributes.joined(separator: ",")
    }
}

/// EXT-X-SKIP (rfc8216bis §4.4.5.2): in a Playlist Delta Update, the first segments left out.
public struct PlaylistSkip: Sendable, Equatable {
    /// SKIPPED-SEGMENTS: how many segments, from EXT-X-MEDIA-SEQUENCE on, the tag replaces.
    public var skippedSegments: Int
    /// RECENTLY-REMOVED-DATERANGES (with `_HLS_skip=v2`): IDs of date ranges removed lately.
    public var recentlyRemovedDateRanges: [String]?

    public init(skippedSegments: Int, recentlyRemovedDateRanges: [String]? = nil) {
        (self.skippedSegments, self.recentlyRemovedDateRanges) = (skippedSegments, recentlyRemovedDateRanges)
    }

    var attributeList: String {
        var attributes = ["SKIPPED-SEGMENTS=\(skippedSegments)"]
        if let ids = recentlyRemovedDateRanges { attributes.append("RECENTLY-REMOVED-DATERANGES=\"\(ids.joined(separator: "\t"))\"") }
        return attributes.joined(separator: ",")
    }
}

/// EXT-X-RENDITION-REPORT (rfc8216bis §4.4.5.4): how far another rendition has got, so a client can
/// switch to it with one blocking request.
public struct RenditionReport: Sendable, Equatable {
    /// The other rendition's Media Playlist, relative to this one.
    public var uri: String
    /// LAST-MSN: the Media Sequence Number of its last segment (of its last part, with parts).
    /// The server may leave it out when it equals this playlist's.
    public var lastMediaSequenceNumber: Int?
    /// LAST-PART: the Part Index of its last part in that segment.
    public var lastPartIndex: Int?

    public init(uri: String, lastMediaSequenceNumber: Int? = nil, lastPartIndex: Int? = nil) {
        (self.uri, self.lastMediaSequenceNumber, self.lastPartIndex) = (uri, lastMediaSequenceNumber, lastPartIndex)
    }

    var attributeList: String {
        var attributes = ["URI=\"\(uri)\""]
        if let lastMediaSequenceNumber { attributes.append("LAST-MSN=\(lastMediaSequenceNumber)") }
        if let lastPartIndex { attributes.append("LAST-PART=\(lastPartIndex)") }
        return attributes.joined(separator: ",")
    }
}

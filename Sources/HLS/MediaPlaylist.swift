import Foundation

/// EXT-X-PLAYLIST-TYPE (RFC 8216 §4.3.3.5). A live playlist has no type tag.
public enum PlaylistType: String, Sendable, Equatable, CaseIterable {
    case vod = "VOD"
    case event = "EVENT"
}

/// EXT-X-BYTERANGE / the BYTERANGE attribute of EXT-X-MAP: `length[@offset]`.
public struct ByteRange: Sendable, Equatable, CustomStringConvertible {
    public var length: Int
    public var offset: Int?

    public init(length: Int, offset: Int? = nil) {
        self.length = length
        self.offset = offset
    }

    public init?(parsing text: some StringProtocol) {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        // decimal-integers (RFC 8216 §4.3.2.2), bounded: an offset plus a length never overflows.
        guard parts.count <= 2, let n = PlaylistNumber.integer(parts[0]) else { return nil }
        length = n
        if parts.count == 2 {
            guard let o = PlaylistNumber.integer(parts[1]), o + n <= PlaylistNumber.largestInteger else { return nil }
            offset = o
        }
    }

    public var description: String { offset.map { "\(length)@\($0)" } ?? "\(length)" }
}

/// EXT-X-MAP: where the Media Initialization Section (fMP4 `ftyp`+`moov`) is.
public struct MediaInitializationSection: Sendable, Equatable {
    public var uri: String
    public var byteRange: ByteRange?
    /// The EXT-X-KEY tags before the EXT-X-MAP: they encrypt the section too (RFC 8216 §4.3.2.4).
    public var keys: [EncryptionKey]

    /// Whether `other` names the same bytes (URI and range; the keys in force aside).
    public func isSameResource(as other: MediaInitializationSection?) -> Bool {
        uri == other?.uri && byteRange == other?.byteRange
    }

    public init(uri: String, byteRange: ByteRange? = nil, keys: [EncryptionKey] = []) {
        self.uri = uri
        self.byteRange = byteRange
        self.keys = keys
    }
}

/// One media segment: its EXTINF duration and URI plus the tags that apply to it.
public struct MediaSegment: Sendable, Equatable {
    public var duration: Double
    public var title: String
    public var uri: String
    public var programDateTime: Date?
    public var discontinuity: Bool
    /// EXT-X-BYTERANGE as written; its offset may be absent (it then follows the previous segment's range).
    public var byteRange: ByteRange?
    /// Line of the EXTINF tag in the parsed text (0 when built in code).
    public var line: Int
    /// The EXT-X-KEY tags in force: empty before any key tag, `[.methodNone]` after METHOD=NONE, else one
    /// key per KEYFORMAT (RFC 8216 §4.3.2.4). See `key` and `isEncrypted`.
    public var keys: [EncryptionKey]
    /// EXT-X-GAP: the segment has no media and should not be loaded.
    public var gap: Bool
    /// EXT-X-BITRATE in force, kilobits per second (it does not apply to byte-range segments).
    public var bitrate: Int?
    /// The EXT-X-PART tags of this segment, before its EXTINF (LL-HLS; empty otherwise).
    public var parts: [PartialSegment]
    /// `byteRange` with its offset filled in: the parser resolves an omitted offset from the previous
    /// segment's range, so a client always has absolute offsets. Nil for a whole resource.
    public var resolvedByteRange: ByteRange?
    /// The EXT-X-MAP in force when it is not the playlist's first (`MediaPlaylist.map`): a stream whose
    /// initialization section changes (after a discontinuity). Nil means the playlist's map.
    public var map: MediaInitializationSection?
    /// The older ad markers written before this segment (`EXT-X-CUE-OUT`, `-CUE-OUT-CONT`, `-CUE-IN`).
    public var cueMarkers: [CueMarker]

    public init(duration: Double, uri: String, title: String = "", programDateTime: Date? = nil,
                discontinuity: Bool = false, byteRange: ByteRange? = nil, line: Int = 0,
                keys: [EncryptionKey] = [], gap: Bool = false, bitrate: Int? = nil, parts: [PartialSegment] = [],
                resolvedByteRange: ByteRange? = nil, map: MediaInitializationSection? = nil, cueMarkers: [CueMarker] = []) {
        self.map = map
        self.cueMarkers = cueMarkers
        self.duration = duration
        self.uri = uri
        self.title = title
        self.programDateTime = programDateTime
        self.discontinuity = discontinuity
        self.byteRange = byteRange
        self.line = line
        self.keys = keys
        self.gap = gap
        self.bitrate = bitrate
        self.parts = parts
        self.resolvedByteRange = resolvedByteRange ?? (byteRange?.offset != nil ? byteRange : nil)
    }

    /// The key that encrypts the segment (the first of its KEYFORMATs), nil when it is clear.
    public var key: EncryptionKey? { keys.first { $0.method != .none } }
    public var isEncrypted: Bool { key != nil }
}

/// A Media Playlist (RFC 8216 §4.3.3): the segments of one rendition.
public struct MediaPlaylist: Sendable, Equatable {
    /// EXT-X-VERSION; nil when the tag is absent (which means version 1).
    public var version: Int?
    public var targetDuration: Int
    /// EXT-X-MEDIA-SEQUENCE: the number of the first segment, skipped ones included.
    public var mediaSequence: Int
    /// EXT-X-DISCONTINUITY-SEQUENCE: the discontinuity number of the first segment.
    public var discontinuitySequence: Int
    public var playlistType: PlaylistType?
    public var independentSegments: Bool
    public var iFramesOnly: Bool
    /// The first EXT-X-MAP; a segment under a later, different one names it (`MediaSegment.map`).
    public var map: MediaInitializationSection?
    public var segments: [MediaSegment]
    public var endList: Bool
    /// EXT-X-PART-INF:PART-TARGET, seconds: the Part Target Duration (LL-HLS).
    public var partTarget: Double?
    public var serverControl: ServerControl?
    /// EXT-X-SKIP: set in a Playlist Delta Update, whose `segments` then start after the skipped ones.
    /// `applying(delta:)` merges it with the previous playlist.
    public var skip: PlaylistSkip?
    /// The parts after the last complete segment (LL-HLS), nil when there are none.
    public var segmentInProgress: SegmentInProgress?
    public var preloadHints: [PreloadHint]
    public var renditionReports: [RenditionReport]
    /// The EXT-X-DATERANGE tags, in the order written (each says where it stood: `DateRange.position`).
    public var dateRanges: [DateRange]

    public init(version: Int? = nil, targetDuration: Int, mediaSequence: Int = 0, discontinuitySequence: Int = 0,
                playlistType: PlaylistType? = nil, independentSegments: Bool = false, iFramesOnly: Bool = false,
                map: MediaInitializationSection? = nil, segments: [MediaSegment] = [], endList: Bool = false,
                partTarget: Double? = nil, serverControl: ServerControl? = nil, skip: PlaylistSkip? = nil,
                segmentInProgress: SegmentInProgress? = nil, preloadHints: [PreloadHint] = [],
                renditionReports: [RenditionReport] = [], dateRanges: [DateRange] = []) {
        self.dateRanges = dateRanges
        self.version = version
        self.targetDuration = targetDuration
        self.mediaSequence = mediaSequence
        self.discontinuitySequence = discontinuitySequence
        self.playlistType = playlistType
        self.independentSegments = independentSegments
        self.iFramesOnly = iFramesOnly
        self.map = map
        self.segments = segments
        self.endList = endList
        self.partTarget = partTarget
        self.serverControl = serverControl
        self.skip = skip
        self.segmentInProgress = segmentInProgress
        self.preloadHints = preloadHints
        self.renditionReports = renditionReports
    }

    /// Sum of the EXTINF durations.
    /// The initialization section of `segments[index]`.
    public func initializationSection(ofSegmentAt index: Int) -> MediaInitializationSection? { segments[index].map ?? map }

    public var totalDuration: Double { segments.reduce(0) { $0 + $1.duration } }

    /// The Media Sequence Number of `segments[index]` (skipped segments count).
    public func mediaSequenceNumber(ofSegmentAt index: Int) -> Int { mediaSequence + (skip?.skippedSegments ?? 0) + index }

    /// The Media Sequence Number after the last complete segment: that of `segmentInProgress`.
    public var nextMediaSequenceNumber: Int { mediaSequenceNumber(ofSegmentAt: segments.count) }

    /// The Discontinuity Sequence Number of `segments[index]`: EXT-X-DISCONTINUITY-SEQUENCE plus the
    /// discontinuities up to it. In a delta update the skipped segments' discontinuities are unknown:
    /// apply the delta (`applying(delta:)`) first.
    public func discontinuitySequenceNumber(ofSegmentAt index: Int) -> Int {
        discontinuitySequence + segments[...index].count(where: \.discontinuity)
    }

    /// The last partial segment: its Media Sequence Number and Part Index (what `_HLS_msn`/`_HLS_part`
    /// and EXT-X-RENDITION-REPORT speak of). Nil without parts.
    public var lastPart: (mediaSequenceNumber: Int, partIndex: Int)? {
        if let parts = segmentInProgress?.parts, !parts.isEmpty { return (nextMediaSequenceNumber, parts.count - 1) }
        guard let last = segments.last, !last.parts.isEmpty else { return nil }
        return (nextMediaSequenceNumber - 1, last.parts.count - 1)
    }

    /// This playlist's EXT-X-RENDITION-REPORT as another rendition's playlist states it.
    public func renditionReport(uri: String) -> RenditionReport {
        if let lastPart { return RenditionReport(uri: uri, lastMediaSequenceNumber: lastPart.mediaSequenceNumber, lastPartIndex: lastPart.partIndex) }
        return RenditionReport(uri: uri, lastMediaSequenceNumber: segments.isEmpty ? nil : nextMediaSequenceNumber - 1)
    }
}

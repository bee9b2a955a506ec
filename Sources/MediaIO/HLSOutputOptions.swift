import Foundation

/// How an HLS playlist grows (RFC 8216 §6.2.1).
public enum HLSPlaylistKind: String, Sendable, CaseIterable {
    /// EXT-X-PLAYLIST-TYPE:VOD: written once, complete, at the end.
    case vod
    /// EXT-X-PLAYLIST-TYPE:EVENT: rewritten after each segment, append only.
    case event
    /// No type: a sliding window of the newest `listSize` segments.
    case live
}

/// The container of each segment.
public enum HLSSegmentType: String, Sendable, CaseIterable {
    /// MPEG-TS (.ts): each segment starts with PAT/PMT and decodes on its own.
    case ts
    /// Fragmented MP4 (.m4s + an init segment named by EXT-X-MAP).
    case fmp4

    var fileExtension: String { self == .ts ? "ts" : "m4s" }
}

/// How `HLSWriter` cuts and publishes a rendition. Defaults follow ffmpeg's hls muxer except
/// `segmentDuration` (4 s, Apple's authoring recommendation of 2017 was 6 s; 4 s halves startup).
public struct HLSOutputOptions: Sendable, Equatable {
    /// Target length of each segment in seconds (ffmpeg's hls_time). Segments are cut at the first video
    /// keyframe at or after each multiple of it, so the pipeline must force keyframes at those ticks.
    public var segmentDuration: Double
    public var playlistType: HLSPlaylistKind
    /// Segments listed in a live playlist (ffmpeg's hls_list_size). Ignored for VOD and EVENT.
    public var listSize: Int
    public var segmentType: HLSSegmentType
    /// File name of segment N, with one `%d` or `%0Nd` (default `<playlist-stem>_%05d.ts` or `.m4s`).
    public var segmentNamePattern: String?
    /// File name of the fMP4 init segment (default `<playlist-stem>_init.mp4`).
    public var initSegmentName: String?
    /// A live segment that left the window is deleted only after this many more segments (default `listSize`).
    public var deleteGraceSegments: Int?
    /// Low-Latency HLS (rfc8216bis): each segment is also published as parts of at most this many
    /// seconds (EXT-X-PART-INF:PART-TARGET), each its own file, the moment it is complete. Live and
    /// event playlists only: a VOD playlist is published whole at the end and ignores it (a warning).
    public var partDuration: Double?
    /// The tags that mark the splices of the writer's `SpliceBoard` (`--ad-markers`; default
    /// DATERANGE). Without a board, nothing is marked.
    public var adMarkers: AdMarkerStyle

    public init(segmentDuration: Double = 4, playlistType: HLSPlaylistKind = .vod, listSize: Int = 6,
                segmentType: HLSSegmentType = .ts, segmentNamePattern: String? = nil, initSegmentName: String? = nil,
                deleteGraceSegments: Int? = nil, partDuration: Double? = nil, adMarkers: AdMarkerStyle = .daterange) {
        self.partDuration = partDuration
        self.adMarkers = adMarkers
        self.segmentDuration = segmentDuration
        self.playlistType = playlistType
        self.listSize = listSize
        self.segmentType = segmentType
        self.segmentNamePattern = segmentNamePattern
        self.initSegmentName = initSegmentName
        self.deleteGraceSegments = deleteGraceSegments
    }

    /// EXT-X-TARGETDURATION, fixed for the whole run: ceil(segmentDuration).
    public var targetDuration: Int { Int(segmentDuration.rounded(.up)) }

    /// Segments kept after leaving the live window.
    public var graceSegments: Int { deleteGraceSegments ?? listSize }

    /// Checks ranges and the name pattern; the message says what to change.
    public func validate() throws(MediaError) {
        guard segmentDuration.isFinite, segmentDuration >= 0.5, segmentDuration <= 60 else {
            throw .invalidSettings("HLS segment duration \(segmentDuration) s is outside 0.5…60 s")
        }
        guard listSize >= 1 else { throw .invalidSettings("HLS list size must be at least 1 (got \(listSize))") }
        if let part = partDuration {
            // Below 0.1 s a part holds two or three frames and the playlist is rewritten faster than
            // players reload it; a part as long as the segment is no part.
            guard part.isFinite, part >= 0.1, part <= segmentDuration / 2 else {
                throw .invalidSettings("HLS part duration \(part) s is outside 0.1 s … half the segment duration (\(segmentDuration / 2) s)")
            }
        }
        if let grace = deleteGraceSegments, grace < 0 {
            throw .invalidSettings("HLS delete grace must be 0 or more segments (got \(grace))")
        }
        if let pattern = segmentNamePattern {
            guard NumberedFileName(pattern) != nil else {
                throw .invalidSettings("HLS segment name '\(pattern)' needs exactly one %d or %0Nd and no '/'")
            }
        }
        if let name = initSegmentName, name.isEmpty || name.contains("/") {
            throw .invalidSettings("HLS init segment name '\(name)' must be a plain file name")
        }
    }
}

/// `name_%05d.ts`, `%04d.png`: a file name with one number in it, `%d` or `%0Nd` (N up to two
/// digits; the number is zero-padded to N, as FFmpeg's image2 and hls muxers do), and `%%` for a
/// literal percent sign. No other directive and no '/'; the name never reaches a format function.
struct NumberedFileName: Equatable {
    var prefix: String
    var width: Int
    var suffix: String

    init?(_ pattern: some StringProtocol) {
        guard !pattern.contains("/") else { return nil }
        var prefix = "", suffix = ""
        var width: Int?
        var i = pattern.startIndex
        while i < pattern.endIndex {
            let c = pattern[i]
            i = pattern.index(after: i)
            var literal = c
            if c == "%" {
                if i < pattern.endIndex, pattern[i] == "%" {
                    i = pattern.index(after: i)
                    literal = "%"
                } else {
                    // The counter, once.
                    guard width == nil else { return nil }
                    var digits = ""
                    while i < pattern.endIndex, pattern[i].isASCII, pattern[i].isNumber { digits.append(pattern[i]); i = pattern.index(after: i) }
                    guard digits.count <= 2, i < pattern.endIndex, pattern[i] == "d" else { return nil }
                    i = pattern.index(after: i)
                    width = Int(digits) ?? 0
                    continue
                }
            }
            if width == nil { prefix.append(literal) } else { suffix.append(literal) }
        }
        guard let width else { return nil }
        self.prefix = prefix
        self.width = width
        self.suffix = suffix
    }

    func name(_ n: Int) -> String {
        let s = String(n)
        return prefix + String(repeating: "0", count: max(0, width - s.count)) + s + suffix
    }
}

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
        guard parts.count <= 2, let n = Int(parts[0]), n >= 0 else { return nil }
        length = n
        if parts.count == 2 {
            guard let o = Int(parts[1]), o >= 0 else { return nil }
            offset = o
        }
    }

    public var description: String { offset.map { "\(length)@\($0)" } ?? "\(length)" }
}

/// EXT-X-MAP: where the Media Initialization Section (fMP4 `ftyp`+`moov`) is.
public struct MediaInitializationSection: Sendable, Equatable {
    public var uri: String
    public var byteRange: ByteRange?

    public init(uri: String, byteRange: ByteRange? = nil) {
        self.uri = uri
        self.byteRange = byteRange
    }
}

/// One media segment: its EXTINF duration and URI plus the tags that apply to it alone.
public struct MediaSegment: Sendable, Equatable {
    public var duration: Double
    public var title: String
    public var uri: String
    public var programDateTime: Date?
    public var discontinuity: Bool
    public var byteRange: ByteRange?
    /// Line of the EXTINF tag in the parsed text (0 when built in code).
    public var line: Int

    public init(duration: Double, uri: String, title: String = "", programDateTime: Date? = nil,
                discontinuity: Bool = false, byteRange: ByteRange? = nil, line: Int = 0) {
        self.duration = duration
        self.uri = uri
        self.title = title
        self.programDateTime = programDateTime
        self.discontinuity = discontinuity
        self.byteRange = byteRange
        self.line = line
    }
}

/// A Media Playlist (RFC 8216 §4.3.3): the segments of one rendition.
public struct MediaPlaylist: Sendable, Equatable {
    /// EXT-X-VERSION; nil when the tag is absent (which means version 1).
    public var version: Int?
    public var targetDuration: Int
    public var mediaSequence: Int
    public var discontinuitySequence: Int
    public var playlistType: PlaylistType?
    public var independentSegments: Bool
    public var iFramesOnly: Bool
    public var map: MediaInitializationSection?
    public var segments: [MediaSegment]
    public var endList: Bool

    public init(version: Int? = nil, targetDuration: Int, mediaSequence: Int = 0, discontinuitySequence: Int = 0,
                playlistType: PlaylistType? = nil, independentSegments: Bool = false, iFramesOnly: Bool = false,
                map: MediaInitializationSection? = nil, segments: [MediaSegment] = [], endList: Bool = false) {
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
    }

    /// The lowest EXT-X-VERSION the features in use need (RFC 8216 §7) when durations are written
    /// with `durationDecimals` decimals (any decimal point needs version 3).
    public func minimumVersion(durationDecimals: Int = 3) -> Int {
        var v = 1
        let decimalText = durationDecimals > 0 && !segments.isEmpty
        if decimalText || segments.contains(where: { !HLSNumber.isIntegral($0.duration) }) { v = max(v, 3) }
        if iFramesOnly || segments.contains(where: { $0.byteRange != nil }) { v = max(v, 4) }
        if map != nil { v = max(v, iFramesOnly ? 5 : 6) }
        return v
    }

    /// Sum of the EXTINF durations.
    public var totalDuration: Double { segments.reduce(0) { $0 + $1.duration } }

    /// The playlist text. `EXT-X-VERSION` is `version` or, when nil, `minimumVersion(durationDecimals:)`;
    /// durations get `durationDecimals` decimals (3 keeps a frame exact at common rates).
    public func render(durationDecimals: Int = 3) -> String {
        var out = "#EXTM3U\n"
        out += "#EXT-X-VERSION:\(version ?? minimumVersion(durationDecimals: durationDecimals))\n"
        out += "#EXT-X-TARGETDURATION:\(targetDuration)\n"
        out += "#EXT-X-MEDIA-SEQUENCE:\(mediaSequence)\n"
        if discontinuitySequence != 0 { out += "#EXT-X-DISCONTINUITY-SEQUENCE:\(discontinuitySequence)\n" }
        if let playlistType { out += "#EXT-X-PLAYLIST-TYPE:\(playlistType.rawValue)\n" }
        if independentSegments { out += "#EXT-X-INDEPENDENT-SEGMENTS\n" }
        if iFramesOnly { out += "#EXT-X-I-FRAMES-ONLY\n" }
        if let map {
            out += "#EXT-X-MAP:URI=\"\(map.uri)\""
            if let range = map.byteRange { out += ",BYTERANGE=\"\(range)\"" }
            out += "\n"
        }
        for segment in segments {
            if segment.discontinuity { out += "#EXT-X-DISCONTINUITY\n" }
            if let date = segment.programDateTime {
                out += "#EXT-X-PROGRAM-DATE-TIME:\(HLSDate.format(date))\n"
            }
            out += "#EXTINF:\(HLSNumber.decimal(segment.duration, places: durationDecimals)),\(segment.title)\n"
            if let range = segment.byteRange { out += "#EXT-X-BYTERANGE:\(range)\n" }
            out += segment.uri + "\n"
        }
        if endList { out += "#EXT-X-ENDLIST\n" }
        return out
    }
}

/// RESOLUTION=WxH.
public struct Resolution: Sendable, Equatable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Parses the decimal-resolution form `1280x720` (nothing else).
    public init?(parsing text: some StringProtocol) {
        let parts = text.split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) }),
              let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0 else { return nil }
        width = w
        height = h
    }

    public var description: String { "\(width)x\(height)" }
}

/// One EXT-X-STREAM-INF and its URI line.
public struct VariantStream: Sendable, Equatable {
    /// Peak segment bit rate, bits per second.
    public var bandwidth: Int
    public var averageBandwidth: Int?
    public var resolution: Resolution?
    public var frameRate: Double?
    public var codecs: String?
    /// GROUP-ID of the EXT-X-MEDIA audio renditions this variant plays with (AUDIO=).
    public var audioGroup: String?
    public var uri: String
    /// Line of the EXT-X-STREAM-INF tag in the parsed text (0 when built in code).
    public var line: Int

    public init(bandwidth: Int, averageBandwidth: Int? = nil, resolution: Resolution? = nil, frameRate: Double? = nil,
                codecs: String? = nil, audioGroup: String? = nil, uri: String, line: Int = 0) {
        self.audioGroup = audioGroup
        self.bandwidth = bandwidth
        self.averageBandwidth = averageBandwidth
        self.resolution = resolution
        self.frameRate = frameRate
        self.codecs = codecs
        self.uri = uri
        self.line = line
    }
}

/// One EXT-X-MEDIA tag (RFC 8216 §4.3.4.1): an alternative rendition, here an audio track that
/// every variant of its group plays alongside its video.
public struct AlternativeRendition: Sendable, Equatable {
    public enum Kind: String, Sendable { case audio = "AUDIO", subtitles = "SUBTITLES" }
    public var kind: Kind
    public var groupID: String
    public var name: String
    public var language: String?
    public var isDefault: Bool
    public var autoselect: Bool
    /// Channel count (CHANNELS=), for audio.
    public var channels: Int?
    public var uri: String

    public init(kind: Kind = .audio, groupID: String, name: String, language: String? = nil, isDefault: Bool = true,
                autoselect: Bool = true, channels: Int? = nil, uri: String) {
        (self.kind, self.groupID, self.name, self.language) = (kind, groupID, name, language)
        (self.isDefault, self.autoselect, self.channels, self.uri) = (isDefault, autoselect, channels, uri)
    }
}

/// A Master Playlist (RFC 8216 §4.3.4): the variants of one presentation.
public struct MasterPlaylist: Sendable, Equatable {
    public var version: Int?
    public var independentSegments: Bool
    /// EXT-X-MEDIA renditions (written before the variants).
    public var media: [AlternativeRendition]
    public var variants: [VariantStream]

    public init(version: Int? = nil, independentSegments: Bool = false, media: [AlternativeRendition] = [],
                variants: [VariantStream] = []) {
        self.version = version
        self.independentSegments = independentSegments
        self.media = media
        self.variants = variants
    }

    /// The playlist text. Variants are written in the given order (players pick the first to start).
    public func render() -> String {
        var out = "#EXTM3U\n"
        if let version { out += "#EXT-X-VERSION:\(version)\n" }
        if independentSegments { out += "#EXT-X-INDEPENDENT-SEGMENTS\n" }
        for m in media {
            var attributes = ["TYPE=\(m.kind.rawValue)", "GROUP-ID=\"\(m.groupID)\"", "NAME=\"\(m.name)\""]
            if let language = m.language { attributes.append("LANGUAGE=\"\(language)\"") }
            attributes.append("DEFAULT=\(m.isDefault ? "YES" : "NO")")
            attributes.append("AUTOSELECT=\(m.autoselect ? "YES" : "NO")")
            if let channels = m.channels { attributes.append("CHANNELS=\"\(channels)\"") }
            attributes.append("URI=\"\(m.uri)\"")
            out += "#EXT-X-MEDIA:" + attributes.joined(separator: ",") + "\n"
        }
        for v in variants {
            var attributes = ["BANDWIDTH=\(v.bandwidth)"]
            if let average = v.averageBandwidth { attributes.append("AVERAGE-BANDWIDTH=\(average)") }
            if let resolution = v.resolution { attributes.append("RESOLUTION=\(resolution)") }
            if let rate = v.frameRate { attributes.append("FRAME-RATE=\(HLSNumber.decimal(rate, places: 3))") }
            if let codecs = v.codecs { attributes.append("CODECS=\"\(codecs)\"") }
            if let group = v.audioGroup { attributes.append("AUDIO=\"\(group)\"") }
            out += "#EXT-X-STREAM-INF:" + attributes.joined(separator: ",") + "\n"
            out += v.uri + "\n"
        }
        return out
    }
}

/// A parsed playlist of either kind.
public enum Playlist: Sendable, Equatable {
    case media(MediaPlaylist)
    case master(MasterPlaylist)
}

/// Locale-free number formatting for playlists.
public enum HLSNumber {
    /// `value` with exactly `places` decimals, rounded half away from zero ("2.002", "4.000").
    public static func decimal(_ value: Double, places: Int) -> String {
        precondition(places >= 0 && places <= 9, "decimal places out of range")
        guard value.isFinite else { return "0" }
        var scale: Int64 = 1
        for _ in 0..<places { scale *= 10 }
        let scaled = Int64((abs(value) * Double(scale)).rounded())
        let sign = value < 0 && scaled != 0 ? "-" : ""
        let whole = scaled / scale
        guard places > 0 else { return "\(sign)\(whole)" }
        var fraction = String(scaled % scale)
        fraction = String(repeating: "0", count: places - fraction.count) + fraction
        return "\(sign)\(whole).\(fraction)"
    }

    static func isIntegral(_ value: Double) -> Bool { value.rounded() == value }
}

/// EXT-X-PROGRAM-DATE-TIME values: ISO 8601 with milliseconds and a zone.
public enum HLSDate {
    /// `2024-05-01T12:00:00.250Z`.
    public static func format(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        f.timeZone = TimeZone(secondsFromGMT: 0)
        return f.string(from: date)
    }

    /// Parses an ISO 8601 date-time with a zone: `YYYY-MM-DDThh:mm:ss`, any number of fractional
    /// digits, then `Z`, `±hh:mm` or `±hhmm`; nil for anything else. Read here, not by
    /// `ISO8601DateFormatter`: ICU, under it, died on a divide by zero reading a fraction of 40
    /// digits (a playlist the fuzzer wrote), and a playlist is untrusted input.
    public static func parse(_ text: some StringProtocol) -> Date? {
        var bytes = Array(text.utf8)[...]
        func number(_ digits: Int) -> Int? {
            guard bytes.count >= digits else { return nil }
            var value = 0
            for _ in 0..<digits {
                let b = bytes.removeFirst()
                guard (48...57).contains(b) else { return nil }
                value = value * 10 + Int(b - 48)
            }
            return value
        }
        func take(_ characters: String) -> Bool {
            guard let b = bytes.first, characters.utf8.contains(b) else { return false }
            bytes.removeFirst()
            return true
        }
        guard let year = number(4), take("-"), let month = number(2), take("-"), let day = number(2), take("Tt"),
              let hour = number(2), take(":"), let minute = number(2), take(":"), let second = number(2),
              (1...12).contains(month), (1...daysIn(month, of: year)).contains(day),
              hour < 24, minute < 60, second <= 60 else { return nil }
        var fraction = 0.0
        if take(".") {
            var scale = 0.1, digits = 0
            while let b = bytes.first, (48...57).contains(b) {
                fraction += Double(b - 48) * scale
                scale /= 10
                digits += 1
                bytes.removeFirst()
            }
            guard digits > 0 else { return nil }
        }
        var offset = 0
        if !take("Zz") {
            guard let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") else { return nil }
            bytes.removeFirst()
            guard let hours = number(2) else { return nil }
            _ = take(":")
            guard let minutes = number(2), hours < 24, minutes < 60 else { return nil }
            offset = (hours * 60 + minutes) * 60 * (sign == UInt8(ascii: "-") ? -1 : 1)
        }
        guard bytes.isEmpty else { return nil }
        let days = daysFromEpoch(year: year, month: month, day: day)
        let seconds = ((days * 24 + hour) * 60 + minute) * 60 + second - offset
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// Days in `month` (1…12) of `year` (Gregorian).
    static func daysIn(_ month: Int, of year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to the date (proleptic Gregorian; H. Hinnant's days-from-civil).
    static func daysFromEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

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

    public init(duration: Double, uri: String, title: String = "", programDateTime: Date? = nil,
                discontinuity: Bool = false, byteRange: ByteRange? = nil, line: Int = 0,
                keys: [EncryptionKey] = [], gap: Bool = false, bitrate: Int? = nil, parts: [PartialSegment] = [],
                resolvedByteRange: ByteRange? = nil, map: MediaInitializationSection? = nil) {
        self.map = map
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

    public init(version: Int? = nil, targetDuration: Int, mediaSequence: Int = 0, discontinuitySequence: Int = 0,
                playlistType: PlaylistType? = nil, independentSegments: Bool = false, iFramesOnly: Bool = false,
                map: MediaInitializationSection? = nil, segments: [MediaSegment] = [], endList: Bool = false,
                partTarget: Double? = nil, serverControl: ServerControl? = nil, skip: PlaylistSkip? = nil,
                segmentInProgress: SegmentInProgress? = nil, preloadHints: [PreloadHint] = [],
                renditionReports: [RenditionReport] = []) {
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
              let w = PlaylistNumber.integer(parts[0]), let h = PlaylistNumber.integer(parts[1]), w > 0, h > 0,
              w <= PlaylistNumber.largestDimension, h <= PlaylistNumber.largestDimension else { return nil }
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
            if !m.uri.isEmpty { attributes.append("URI=\"\(m.uri)\"") }
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
        let magnitude = (abs(value) * Double(scale)).rounded()
        // Past 2^63 (a fuzzed duration of 1e300) a Double has no fraction left to write.
        guard magnitude < 0x1p63 else { return shortest(value.rounded()) + (places > 0 ? "." + String(repeating: "0", count: places) : "") }
        let scaled = Int64(magnitude)
        let sign = value < 0 && scaled != 0 ? "-" : ""
        let whole = scaled / scale
        guard places > 0 else { return "\(sign)\(whole)" }
        var fraction = String(scaled % scale)
        fraction = String(repeating: "0", count: places - fraction.count) + fraction
        return "\(sign)\(whole).\(fraction)"
    }

    /// The shortest decimal text that reads back as `value` ("4.00008", "0.33334", "6"), never in
    /// exponent form (RFC 8216 §4.2 has none): what keeps a parsed number exact through a render.
    public static func shortest(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        if isIntegral(value), abs(value) < 1e15 { return String(Int64(value)) }
        let text = "\(value)"  // Swift prints the shortest round-trip form, with an exponent at the extremes
        guard let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }), let exponent = Int(text[text.index(after: e)...]) else {
            return text
        }
        var mantissa = String(text[..<e])
        let negative = mantissa.hasPrefix("-")
        if negative { mantissa.removeFirst() }
        let point = mantissa.firstIndex(of: ".").map { mantissa.distance(from: mantissa.startIndex, to: $0) } ?? mantissa.count
        var digits = mantissa.filter(\.isASCIIDigit)
        var position = point + exponent  // where the decimal point goes in `digits`
        if position <= 0 {
            digits = String(repeating: "0", count: 1 - position) + digits
            position = 1
        } else if position > digits.count {
            digits += String(repeating: "0", count: position - digits.count)
        }
        var whole = String(digits.prefix(position)), fraction = String(digits.dropFirst(position))
        while fraction.hasSuffix("0") { fraction.removeLast() }
        while whole.count > 1, whole.hasPrefix("0") { whole.removeFirst() }
        return (negative ? "-" : "") + whole + (fraction.isEmpty ? "" : "." + fraction)
    }

    static func isIntegral(_ value: Double) -> Bool { value.rounded() == value }
}

/// EXT-X-PROGRAM-DATE-TIME values: ISO 8601 with milliseconds and a zone.
public enum HLSDate {
    /// `2024-05-01T12:00:00.250Z`: UTC, to the nearest millisecond, in the proleptic Gregorian
    /// calendar `parse` reads (ISO8601DateFormatter, used before, wrote Julian dates before 1582, so
    /// a year-24 date moved two days at each render; the fuzzer's find). Years outside 0…9999,
    /// which `parse` does not read, get a sign and more digits.
    public static func format(_ date: Date) -> String {
        let ms = (date.timeIntervalSince1970 * 1000).rounded()
        let total = ms.isNaN ? 0 : Int64(min(max(ms, -1e17), 1e17))  // ±3 million years: no Int overflow below
        let day = Int(total >= 0 ? total / 86_400_000 : (total - 86_399_999) / 86_400_000)
        let inDay = Int(total - Int64(day) * 86_400_000)
        let (year, month, dayOfMonth) = civil(daysFromEpoch: day)
        func pad(_ n: Int, _ width: Int) -> String {
            let digits = String(abs(n))
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        let yearText = (0...9999).contains(year) ? pad(year, 4) : (year < 0 ? "-" : "+") + pad(year, 6)
        return "\(yearText)-\(pad(month, 2))-\(pad(dayOfMonth, 2))T\(pad(inDay / 3_600_000, 2)):\(pad(inDay / 60000 % 60, 2)):"
            + "\(pad(inDay / 1000 % 60, 2)).\(pad(inDay % 1000, 3))Z"
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
        // A zone offset or a fraction that rounds up can leave years 0…9999: `format` could not write
        // such a date in a form this reads, so it is not read either.
        let ms = ((Double(seconds) + fraction) * 1000).rounded()
        guard ms >= Double(daysFromEpoch(year: 0, month: 1, day: 1)) * 86_400_000,
              ms < Double(daysFromEpoch(year: 10000, month: 1, day: 1)) * 86_400_000 else { return nil }
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// Year, month and day of the day `days` from 1970-01-01 (proleptic Gregorian; H. Hinnant's
    /// civil-from-days, the inverse of `daysFromEpoch`).
    static func civil(daysFromEpoch days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
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

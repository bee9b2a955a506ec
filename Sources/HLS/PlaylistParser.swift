import Foundation

/// One line of a playlist with its 1-based number (RFC 8216 §4.1: tags, URIs, comments, blanks).
public struct PlaylistLine: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// `#EXT…` with the text after the first ':' (nil for a tag without value such as #EXT-X-ENDLIST).
        case tag(name: String, value: String?)
        case uri(String)
        /// A line starting with '#' but not '#EXT'.
        case comment
        case blank
    }

    public var number: Int
    public var kind: Kind
    public var text: String

    /// Splits playlist text into lines: tolerant of a UTF-8 byte-order mark and of CRLF or CR endings.
    /// Trailing whitespace is dropped (a URI never ends in a space).
    public static func split(_ text: String) -> [PlaylistLine] {
        var body = Substring(text)
        if body.first == "\u{FEFF}" { body = body.dropFirst() }
        // "\r\n" is one Character in Swift, so isNewline splits CRLF once.
        let raw = body.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
        var lines: [PlaylistLine] = []
        lines.reserveCapacity(raw.count)
        for (i, piece) in raw.enumerated() {
            var s = Substring(piece)
            while let last = s.last, last == " " || last == "\t" { s = s.dropLast() }
            let line = String(s)
            let kind: Kind
            if line.isEmpty {
                kind = .blank
            } else if line.hasPrefix("#EXT") {
                if let colon = line.firstIndex(of: ":") {
                    kind = .tag(name: String(line[..<colon]), value: String(line[line.index(after: colon)...]))
                } else {
                    kind = .tag(name: line, value: nil)
                }
            } else if line.hasPrefix("#") {
                kind = .comment
            } else {
                kind = .uri(line.trimmingCharacters(in: .whitespaces))
            }
            lines.append(PlaylistLine(number: i + 1, kind: kind, text: line))
        }
        // A final newline leaves one empty piece: it is not a line of its own.
        if let last = lines.last, last.kind == .blank, text.last?.isNewline == true { lines.removeLast() }
        return lines
    }
}

/// One `NAME=value` of an attribute list (RFC 8216 §4.2).
public struct HLSAttribute: Sendable, Equatable {
    public var name: String
    /// The value without quotes.
    public var value: String
    public var isQuoted: Bool
}

public enum HLSAttributeList {
    /// Parses `A=1,B="x,y",C=0x1F`. Returns nil when the list is malformed (unterminated quote,
    /// missing '=', empty name).
    public static func parse(_ text: some StringProtocol) -> [HLSAttribute]? {
        var result: [HLSAttribute] = []
        var i = text.startIndex
        while i < text.endIndex {
            guard let eq = text[i...].firstIndex(of: "=") else { return nil }
            let name = text[i..<eq].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, !name.contains(",") else { return nil }
            var j = text.index(after: eq)
            let value: String
            var quoted = false
            if j < text.endIndex, text[j] == "\"" {
                let start = text.index(after: j)
                guard let close = text[start...].firstIndex(of: "\"") else { return nil }
                value = String(text[start..<close])
                quoted = true
                j = text.index(after: close)
                // Only a comma (or the end) may follow a quoted string.
                if j < text.endIndex && text[j] != "," { return nil }
            } else {
                let end = text[j...].firstIndex(of: ",") ?? text.endIndex
                value = String(text[j..<end])
                j = end
            }
            result.append(HLSAttribute(name: name, value: value, isQuoted: quoted))
            if j < text.endIndex { j = text.index(after: j) }  // skip ','
            i = j
        }
        return result
    }
}

extension Array where Element == HLSAttribute {
    public subscript(name: String) -> HLSAttribute? { first { $0.name == name } }
}

/// Why a playlist could not be read into a model.
public struct PlaylistParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var message: String
    /// A number is well formed but beyond what livefilter reads (`PlaylistNumber`): the input is
    /// refused, rather than not a playlist.
    public var isOutOfBounds = false
    public var description: String { "line \(line): \(message)" }
}

/// Tags that only appear in Master Playlists (RFC 8216 §4.3.4).
let masterTags: Set<String> = ["#EXT-X-MEDIA", "#EXT-X-STREAM-INF", "#EXT-X-I-FRAME-STREAM-INF",
                               "#EXT-X-SESSION-DATA", "#EXT-X-SESSION-KEY"]
/// Tags that only appear in Media Playlists (RFC 8216 §4.3.2, §4.3.3).
/// With rfc8216bis's EXT-X-GAP, EXT-X-BITRATE and the low-latency tags (§4.4.3, §4.4.4, §4.4.5).
let mediaTags: Set<String> = ["#EXTINF", "#EXT-X-BYTERANGE", "#EXT-X-DISCONTINUITY", "#EXT-X-KEY", "#EXT-X-MAP",
                              "#EXT-X-PROGRAM-DATE-TIME", "#EXT-X-DATERANGE", "#EXT-X-TARGETDURATION",
                              "#EXT-X-MEDIA-SEQUENCE", "#EXT-X-DISCONTINUITY-SEQUENCE", "#EXT-X-ENDLIST",
                              "#EXT-X-PLAYLIST-TYPE", "#EXT-X-I-FRAMES-ONLY", "#EXT-X-GAP", "#EXT-X-BITRATE",
                              "#EXT-X-PART-INF", "#EXT-X-SERVER-CONTROL", "#EXT-X-PART", "#EXT-X-SKIP",
                              "#EXT-X-PRELOAD-HINT", "#EXT-X-RENDITION-REPORT"]

/// Reads playlist text into `Playlist`. Tolerant: unknown tags and comments are skipped; only what
/// makes a model impossible throws. `HLSLinter` judges conformance.
///
/// In a media playlist, a tag that says what the media is (EXTINF, EXT-X-KEY, EXT-X-BYTERANGE,
/// EXT-X-MAP, EXT-X-PART, EXT-X-SKIP) throws when it cannot be read, since a client would fetch or
/// decrypt the wrong bytes; a hint (EXT-X-PRELOAD-HINT, EXT-X-RENDITION-REPORT, EXT-X-BITRATE, the
/// attributes of EXT-X-SERVER-CONTROL and EXT-X-PART-INF) that cannot be read is left out.
public enum PlaylistParser {
    public static func parse(_ text: String) throws(PlaylistParseError) -> Playlist {
        let lines = PlaylistLine.split(text)
        guard let first = lines.first, first.text == "#EXTM3U" else {
            throw PlaylistParseError(line: 1, message: "the first line is not #EXTM3U")
        }
        let isMaster = lines.contains { if case let .tag(name, _) = $0.kind { masterTags.contains(name) } else { false } }
        return isMaster ? .master(try parseMaster(lines)) : .media(try parseMedia(lines))
    }

    static func parseMaster(_ lines: [PlaylistLine]) throws(PlaylistParseError) -> MasterPlaylist {
        var playlist = MasterPlaylist()
        var pending: (attributes: [HLSAttribute], line: Int)?
        for line in lines {
            switch line.kind {
            case let .tag(name, value):
                switch name {
                case "#EXT-X-VERSION": playlist.version = PlaylistNumber.integer(value ?? "")
                case "#EXT-X-INDEPENDENT-SEGMENTS": playlist.independentSegments = true
                case "#EXT-X-STREAM-INF":
                    guard let attributes = HLSAttributeList.parse(value ?? "") else {
                        throw PlaylistParseError(line: line.number, message: "EXT-X-STREAM-INF has a malformed attribute list")
                    }
                    pending = (attributes, line.number)
                case "#EXT-X-MEDIA":
                    // Audio, subtitle and closed-caption renditions; VIDEO is not modelled.
                    guard let a = HLSAttributeList.parse(value ?? "") else {
                        throw PlaylistParseError(line: line.number, message: "EXT-X-MEDIA has a malformed attribute list")
                    }
                    guard let type = a["TYPE"]?.value, let kind = AlternativeRendition.Kind(rawValue: type) else { break }
                    guard let group = a["GROUP-ID"], group.isQuoted, let name = a["NAME"], name.isQuoted else {
                        throw PlaylistParseError(line: line.number, message: "EXT-X-MEDIA needs a quoted GROUP-ID and NAME")
                    }
                    playlist.media.append(AlternativeRendition(
                        kind: kind, groupID: group.value, name: name.value, language: a["LANGUAGE"].flatMap { $0.isQuoted ? $0.value : nil },
                        isDefault: a["DEFAULT"]?.value == "YES", autoselect: a["AUTOSELECT"]?.value == "YES",
                        channels: a["CHANNELS"].flatMap { PlaylistNumber.integer($0.value.split(separator: "/").first ?? "") },
                        instreamID: a["INSTREAM-ID"].flatMap { $0.isQuoted ? $0.value : nil },
                        uri: a["URI"].flatMap { $0.isQuoted ? $0.value : nil } ?? ""))
                default: break
                }
            case let .uri(uri):
                guard let info = pending else { continue }
                guard let bandwidth = info.attributes["BANDWIDTH"].flatMap({ PlaylistNumber.integer($0.value) }) else {
                    throw PlaylistParseError(line: info.line, message: "EXT-X-STREAM-INF has no BANDWIDTH decimal-integer (at most 2^53 − 1)")
                }
                let a = info.attributes
                playlist.variants.append(VariantStream(
                    bandwidth: bandwidth, averageBandwidth: a["AVERAGE-BANDWIDTH"].flatMap { PlaylistNumber.integer($0.value) },
                    resolution: a["RESOLUTION"].flatMap { Resolution(parsing: $0.value) },
                    frameRate: a["FRAME-RATE"].flatMap { Double($0.value) }.flatMap { $0.isFinite && $0 > 0 && $0 <= 1_000 ? $0 : nil }, codecs: a["CODECS"]?.value,
                    audioGroup: a["AUDIO"].flatMap { $0.isQuoted ? $0.value : nil },
                    closedCaptions: a["CLOSED-CAPTIONS"].flatMap { $0.isQuoted ? .group($0.value) : $0.value == "NONE" ? VariantStream.ClosedCaptions.none : nil },
                    uri: uri, line: info.line))
                pending = nil
            case .comment, .blank:
                break
            }
        }
        if let pending { throw PlaylistParseError(line: pending.line, message: "EXT-X-STREAM-INF has no URI line after it") }
        return playlist
    }
}

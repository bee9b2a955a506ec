import Foundation

/// How bad a violation is: an error breaks RFC 8216 or players; a warning is legal but not what we publish.
public enum LintSeverity: String, Sendable, Codable, Comparable {
    case warning, error

    public static func < (a: Self, b: Self) -> Bool { a == .warning && b == .error }
}

/// One broken rule, on the line where it shows.
public struct LintViolation: Sendable, Equatable, Codable, CustomStringConvertible {
    public var line: Int
    /// A stable kebab-case id such as `target-duration-exceeded`.
    public var rule: String
    public var severity: LintSeverity
    public var message: String

    public init(line: Int, rule: String, severity: LintSeverity, message: String) {
        self.line = line
        self.rule = rule
        self.severity = severity
        self.message = message
    }

    public var description: String { "\(line): \(severity.rawValue): [\(rule)] \(message)" }
}

/// What the linter found in one playlist.
public struct LintReport: Sendable, Equatable {
    public enum Kind: String, Sendable, Codable { case master, media }

    public var kind: Kind
    public var violations: [LintViolation]
    /// URIs a master playlist points at (variants, renditions, I-frame playlists), with their lines.
    public var referencedPlaylists: [(uri: String, line: Int)]

    public var hasErrors: Bool { violations.contains { $0.severity == .error } }
    public var errors: [LintViolation] { violations.filter { $0.severity == .error } }

    public static func == (a: Self, b: Self) -> Bool {
        a.kind == b.kind && a.violations == b.violations
            && a.referencedPlaylists.map(\.uri) == b.referencedPlaylists.map(\.uri)
    }
}

/// Checks playlist text against RFC 8216 and, with the `.livefilter` profile, against what livefilter
/// publishes. Every rule has an id (see `HLSLinter.rules`) and reports the line where it breaks.
public struct HLSLinter: Sendable {
    public enum Profile: String, Sendable, CaseIterable {
        /// RFC 8216 only.
        case rfc8216
        /// RFC 8216 plus livefilter's publishing rules: EXT-X-VERSION present and the lowest possible,
        /// EXT-X-INDEPENDENT-SEGMENTS, EXT-X-PROGRAM-DATE-TIME on every segment of event and live playlists,
        /// CODECS/RESOLUTION/AVERAGE-BANDWIDTH on every variant.
        case livefilter
    }

    /// Every rule id with a one-line summary (the CLI's help and the tests use it).
    public static let rules: [String: String] = [
        "extm3u": "the first line must be #EXTM3U",
        "tag-duplicate": "a playlist tag appears more than once",
        "tag-value": "a tag's value is malformed",
        "mixed-tags": "master playlist tags and media playlist tags in one file",
        "target-duration-missing": "EXT-X-TARGETDURATION is required",
        "target-duration-format": "EXT-X-TARGETDURATION must be a decimal integer",
        "target-duration-exceeded": "an EXTINF rounded to the nearest integer exceeds EXT-X-TARGETDURATION",
        "extinf-value": "EXTINF must be a positive, finite number",
        "extinf-without-uri": "EXTINF must be followed by a URI line",
        "uri-without-extinf": "a segment URI must follow an EXTINF",
        "version-missing": "EXT-X-VERSION is absent",
        "version-format": "EXT-X-VERSION must be a positive integer",
        "version-too-low": "a feature needs a higher EXT-X-VERSION",
        "version-higher-than-needed": "EXT-X-VERSION is higher than the features need",
        "media-sequence-position": "EXT-X-MEDIA-SEQUENCE / EXT-X-DISCONTINUITY-SEQUENCE must come before the first segment",
        "media-sequence-format": "EXT-X-MEDIA-SEQUENCE must be a decimal integer",
        "playlist-type-invalid": "EXT-X-PLAYLIST-TYPE must be VOD or EVENT",
        "endlist-missing": "a VOD playlist must end with EXT-X-ENDLIST",
        "segment-after-endlist": "no segment may follow EXT-X-ENDLIST",
        "program-date-time-format": "EXT-X-PROGRAM-DATE-TIME must be ISO 8601 with a time zone",
        "map-uri": "EXT-X-MAP needs a quoted URI",
        "stream-inf-bandwidth": "EXT-X-STREAM-INF needs a decimal-integer BANDWIDTH",
        "stream-inf-uri": "EXT-X-STREAM-INF must be followed by a URI line",
        "uri-without-stream-inf": "a URI in a master playlist must follow EXT-X-STREAM-INF",
        "attribute-list": "an attribute list is malformed",
        "resolution-format": "RESOLUTION must be WIDTHxHEIGHT",
        "codecs-unquoted": "CODECS must be a quoted string",
        "frame-rate-format": "FRAME-RATE must be a positive decimal number",
        "average-bandwidth": "AVERAGE-BANDWIDTH must be a decimal integer not above BANDWIDTH",
        "independent-segments-missing": "livefilter outputs carry EXT-X-INDEPENDENT-SEGMENTS",
        "program-date-time-missing": "livefilter event and live playlists date every segment",
        "stream-inf-incomplete": "livefilter variants state CODECS, RESOLUTION, FRAME-RATE and AVERAGE-BANDWIDTH",
        "uri-unreachable": "a playlist the master references cannot be read (reported by `livefilter lint`)",
    ].merging(MediaTagChecks.rules) { own, _ in own }.merging(DateRangeChecks.rules) { own, _ in own }

    public var profile: Profile

    public init(profile: Profile = .rfc8216) {
        self.profile = profile
    }

    public func lint(_ text: String) -> LintReport {
        lint(text, renditionCount: nil)
    }

    /// Lints a Media Playlist known to be one of `renditionCount` renditions of a multivariant
    /// playlist: an LL-HLS one is also checked for a rendition report of every other rendition
    /// (rfc8216bis Appendix B.1). A master playlist is linted as by `lint(_:)`.
    public func lint(_ text: String, renditionCount: Int) -> LintReport {
        lint(text, renditionCount: Optional(renditionCount))
    }

    private func lint(_ text: String, renditionCount: Int?) -> LintReport {
        let lines = PlaylistLine.split(text)
        var found: [LintViolation] = []
        func report(_ line: Int, _ rule: String, _ severity: LintSeverity, _ message: String) {
            assert(Self.rules[rule] != nil, "unknown rule \(rule)")
            found.append(LintViolation(line: line, rule: rule, severity: severity, message: message))
        }

        if lines.first?.text != "#EXTM3U" {
            report(1, "extm3u", .error, "the first line is '\(lines.first?.text.prefix(40) ?? "")', not #EXTM3U")
        }

        // Which kind: any master-only tag makes a master playlist; mixing is itself an error.
        var masterLines: [(Int, String)] = [], mediaLines: [(Int, String)] = []
        for line in lines {
            guard case let .tag(name, _) = line.kind else { continue }
            if masterTags.contains(name) { masterLines.append((line.number, name)) }
            if mediaTags.contains(name) { mediaLines.append((line.number, name)) }
        }
        let kind: LintReport.Kind = masterLines.isEmpty ? .media : .master
        if !masterLines.isEmpty && !mediaLines.isEmpty {
            for (number, name) in mediaLines {
                report(number, "mixed-tags", .error, "\(name.dropFirst()) is a media playlist tag in a master playlist")
            }
        }

        var referenced: [(uri: String, line: Int)] = []
        if kind == .master {
            lintMaster(lines, report: report, referenced: &referenced)
        } else {
            lintMedia(lines, renditionCount: renditionCount, report: report)
        }
        found.sort { ($0.line, $0.severity == .error ? 0 : 1) < ($1.line, $1.severity == .error ? 0 : 1) }
        return LintReport(kind: kind, violations: found, referencedPlaylists: referenced)
    }

    // MARK: - Shared checks

    /// Needs of one playlist: (version, line, reason) for each feature that raises the version.
    private typealias Need = (version: Int, line: Int, reason: String)

    private func checkVersion(declared: (value: Int, line: Int)?, needs: [Need],
                              report: (Int, String, LintSeverity, String) -> Void) {
        let required = needs.map(\.version).max() ?? 1
        guard let declared else {
            if required > 1 {
                let need = needs.first { $0.version == required }!
                report(1, "version-missing", .error,
                       "EXT-X-VERSION is absent (version 1) but \(need.reason) (line \(need.line)) needs version \(required)")
            } else if profile == .livefilter {
                report(1, "version-missing", .error, "EXT-X-VERSION is absent; livefilter states it (1 is enough here)")
            }
            return
        }
        if declared.value < required {
            for need in needs where need.version > declared.value {
                report(need.line, "version-too-low", .error,
                       "\(need.reason) needs EXT-X-VERSION \(need.version) or higher, the playlist declares \(declared.value)")
            }
        } else if declared.value > required, profile == .livefilter {
            let why = needs.first { $0.version == required }.map { " (\($0.reason))" } ?? ""
            report(declared.line, "version-higher-than-needed", .warning,
                   "EXT-X-VERSION is \(declared.value) but the features in use need only \(required)\(why)")
        }
    }

    private static let singleTags: Set<String> = ["#EXT-X-VERSION", "#EXT-X-TARGETDURATION", "#EXT-X-MEDIA-SEQUENCE",
                                                  "#EXT-X-DISCONTINUITY-SEQUENCE", "#EXT-X-PLAYLIST-TYPE",
                                                  "#EXT-X-ENDLIST", "#EXT-X-I-FRAMES-ONLY", "#EXT-X-INDEPENDENT-SEGMENTS",
                                                  "#EXT-X-PART-INF", "#EXT-X-SERVER-CONTROL", "#EXT-X-SKIP"]

    private func parseVersion(_ value: String?, line: Int, declared: inout (value: Int, line: Int)?,
                              report: (Int, String, LintSeverity, String) -> Void) {
        guard let v = value.flatMap({ Int($0) }), v >= 1 else {
            report(line, "version-format", .error, "EXT-X-VERSION '\(value ?? "")' is not a positive integer")
            return
        }
        if declared == nil { declared = (v, line) }
    }

    // MARK: - Media playlists

    private func lintMedia(_ lines: [PlaylistLine], renditionCount: Int?, report: (Int, String, LintSeverity, String) -> Void) {
        var seen: Set<String> = []
        var declaredVersion: (value: Int, line: Int)?
        var needs: [Need] = []
        var target: Int?
        var targetLine = 0
        var playlistType: String?
        var endListLine: Int?
        var firstSegmentLine: Int?
        var independent = false
        var iFramesOnly = false
        var mapLines: [Int] = []
        var pendingExtinf: (line: Int, duration: Double?)?
        var segmentHasDate = false
        var segments: [(extinf: Int, duration: Double?, dated: Bool)] = []
        var checks = MediaTagChecks(renditionCount: renditionCount)
        var dateRanges = DateRangeChecks()

        for line in lines {
            switch line.kind {
            case let .tag(name, value):
                if Self.singleTags.contains(name) {
                    if seen.contains(name) { report(line.number, "tag-duplicate", .error, "\(name.dropFirst()) appears more than once") }
                    seen.insert(name)
                }
                checks.tag(name, value, line: line.number, needs: &needs, report: report)
                if name == "#EXT-X-DATERANGE" { dateRanges.dateRange(value, line: line.number, report: report) }
                if name == "#EXT-X-PROGRAM-DATE-TIME" { dateRanges.programDateTime() }
                switch name {
                case "#EXT-X-VERSION":
                    parseVersion(value, line: line.number, declared: &declaredVersion, report: report)
                case "#EXT-X-TARGETDURATION":
                    targetLine = line.number
                    if let v = value, !v.isEmpty, v.allSatisfy(\.isASCIIDigit), let n = Int(v) {
                        target = n
                    } else {
                        report(line.number, "target-duration-format", .error, "EXT-X-TARGETDURATION '\(value ?? "")' is not a decimal integer")
                        target = value.flatMap { Double($0) }.flatMap { Int(exactly: $0.rounded(.up)) } ?? target  // no trap on 1e51
                    }
                case "#EXT-X-MEDIA-SEQUENCE", "#EXT-X-DISCONTINUITY-SEQUENCE":
                    if let first = firstSegmentLine {
                        report(line.number, "media-sequence-position", .error, "\(name.dropFirst()) comes after the first segment (line \(first))")
                    }
                    if !(value.map { !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) } ?? false) {
                        report(line.number, "media-sequence-format", .error, "\(name.dropFirst()) '\(value ?? "")' is not a decimal integer")
                    }
                case "#EXT-X-PLAYLIST-TYPE":
                    playlistType = value
                    if PlaylistType(rawValue: value ?? "") == nil {
                        report(line.number, "playlist-type-invalid", .error, "EXT-X-PLAYLIST-TYPE '\(value ?? "")' is neither VOD nor EVENT")
                    }
                case "#EXT-X-ENDLIST":
                    endListLine = line.number
                case "#EXT-X-INDEPENDENT-SEGMENTS":
                    independent = true
                case "#EXT-X-I-FRAMES-ONLY":
                    iFramesOnly = true
                    needs.append((4, line.number, "EXT-X-I-FRAMES-ONLY"))
                case "#EXT-X-BYTERANGE":
                    needs.append((4, line.number, "EXT-X-BYTERANGE"))
                    if ByteRange(parsing: value ?? "") == nil {
                        report(line.number, "tag-value", .error, "EXT-X-BYTERANGE '\(value ?? "")' is not n[@o]")
                    }
                case "#EXT-X-MAP":
                    mapLines.append(line.number)
                    if let attributes = HLSAttributeList.parse(value ?? "") {
                        if let uri = attributes["URI"] {
                            if !uri.isQuoted { report(line.number, "map-uri", .error, "the URI of EXT-X-MAP must be quoted") }
                        } else {
                            report(line.number, "map-uri", .error, "EXT-X-MAP has no URI attribute")
                        }
                        if attributes["BYTERANGE"] != nil { needs.append((4, line.number, "BYTERANGE in EXT-X-MAP")) }
                    } else {
                        report(line.number, "attribute-list", .error, "EXT-X-MAP has a malformed attribute list")
                    }
                case "#EXT-X-KEY":
                    if let attributes = HLSAttributeList.parse(value ?? "") {
                        if attributes["IV"] != nil { needs.append((2, line.number, "the IV attribute of EXT-X-KEY")) }
                        if attributes["KEYFORMAT"] != nil || attributes["KEYFORMATVERSIONS"] != nil {
                            needs.append((5, line.number, "KEYFORMAT in EXT-X-KEY"))
                        }
                    } else {
                        report(line.number, "attribute-list", .error, "EXT-X-KEY has a malformed attribute list")
                    }
                case "#EXT-X-PROGRAM-DATE-TIME":
                    if HLSDate.parse(value ?? "") == nil {
                        report(line.number, "program-date-time-format", .error, "'\(value ?? "")' is not an ISO 8601 date-time with a zone")
                    }
                    segmentHasDate = true
                case "#EXTINF":
                    if let pending = pendingExtinf {
                        report(pending.line, "extinf-without-uri", .error, "EXTINF is not followed by a segment URI")
                    }
                    if firstSegmentLine == nil { firstSegmentLine = line.number }
                    let text = (value ?? "").split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first
                        .map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                    let duration = Double(text)
                    let wellFormed = !text.isEmpty && text.allSatisfy { $0.isASCIIDigit || $0 == "." }
                    if let d = duration, d.isFinite, d > 0, wellFormed {
                        if text.contains(".") { needs.append((3, line.number, "a decimal EXTINF duration")) }
                        pendingExtinf = (line.number, d)
                    } else {
                        report(line.number, "extinf-value", .error, "EXTINF duration '\(text)' is not a positive finite number")
                        pendingExtinf = (line.number, nil)
                    }
                default:
                    break
                }
            case let .uri(uri):
                if let endListLine {
                    report(line.number, "segment-after-endlist", .error, "segment '\(uri)' comes after EXT-X-ENDLIST (line \(endListLine))")
                }
                checks.segment(uri, line: line.number, duration: pendingExtinf?.duration, report: report)
                if let pending = pendingExtinf {
                    segments.append((pending.line, pending.duration, segmentHasDate))
                } else {
                    report(line.number, "uri-without-extinf", .error, "URI '\(uri)' has no EXTINF before it")
                    if firstSegmentLine == nil { firstSegmentLine = line.number }
                }
                pendingExtinf = nil
                segmentHasDate = false
            case .comment, .blank:
                break
            }
        }
        if let pending = pendingExtinf {
            report(pending.line, "extinf-without-uri", .error, "EXTINF is not followed by a segment URI")
        }

        if let target {
            for s in segments {
                guard let d = s.duration, d.rounded() > Double(target) else { continue }
                report(s.extinf, "target-duration-exceeded", .error,
                       "EXTINF \(d) rounds to \(Int(exactly: d.rounded()).map(String.init) ?? "\(d.rounded())"), above EXT-X-TARGETDURATION \(target) (line \(targetLine))")
            }
        } else if !seen.contains("#EXT-X-TARGETDURATION") {
            report(1, "target-duration-missing", .error, "EXT-X-TARGETDURATION is missing")
        }

        for line in mapLines {
            needs.append(iFramesOnly ? (5, line, "EXT-X-MAP in an I-frame playlist") : (6, line, "EXT-X-MAP in a media playlist"))
        }
        checkVersion(declared: declaredVersion, needs: needs, report: report)

        let lastLine = lines.last?.number ?? 1
        checks.finish(target: target, iFramesOnly: iFramesOnly, endListLine: endListLine, lastLine: lastLine, report: report)
        dateRanges.finish(report: report)
        if playlistType == "VOD", endListLine == nil {
            report(lastLine, "endlist-missing", .error, "a VOD playlist must end with EXT-X-ENDLIST")
        }

        if profile == .livefilter {
            if !independent {
                report(1, "independent-segments-missing", .error, "EXT-X-INDEPENDENT-SEGMENTS is missing")
            }
            if playlistType != "VOD" {
                for s in segments where !s.dated {
                    report(s.extinf, "program-date-time-missing", .error,
                           "segment has no EXT-X-PROGRAM-DATE-TIME (\(playlistType == "EVENT" ? "event" : "live") playlist)")
                }
            }
        }
    }

    // MARK: - Master playlists

    private func lintMaster(_ lines: [PlaylistLine], report: (Int, String, LintSeverity, String) -> Void,
                            referenced: inout [(uri: String, line: Int)]) {
        var seen: Set<String> = []
        var declaredVersion: (value: Int, line: Int)?
        var needs: [Need] = []
        var independent = false
        var pendingStreamInf: Int?
        var captions = ClosedCaptionUse()

        for line in lines {
            switch line.kind {
            case let .tag(name, value):
                if name == "#EXT-X-VERSION" || name == "#EXT-X-INDEPENDENT-SEGMENTS" {
                    if seen.contains(name) { report(line.number, "tag-duplicate", .error, "\(name.dropFirst()) appears more than once") }
                    seen.insert(name)
                }
                if let pending = pendingStreamInf, name == "#EXT-X-STREAM-INF" || name == "#EXT-X-I-FRAME-STREAM-INF" || name == "#EXT-X-MEDIA" {
                    report(pending, "stream-inf-uri", .error, "EXT-X-STREAM-INF is not followed by a URI line")
                    pendingStreamInf = nil
                }
                switch name {
                case "#EXT-X-VERSION":
                    parseVersion(value, line: line.number, declared: &declaredVersion, report: report)
                case "#EXT-X-INDEPENDENT-SEGMENTS":
                    independent = true
                case "#EXT-X-STREAM-INF", "#EXT-X-I-FRAME-STREAM-INF":
                    guard let attributes = HLSAttributeList.parse(value ?? "") else {
                        report(line.number, "attribute-list", .error, "\(name.dropFirst()) has a malformed attribute list")
                        if name == "#EXT-X-STREAM-INF" { pendingStreamInf = line.number }
                        continue
                    }
                    checkVariant(attributes, name: String(name.dropFirst()), line: line.number, report: report)
                    if name == "#EXT-X-STREAM-INF" {
                        captions.variants.append((attributes["CLOSED-CAPTIONS"], line.number))
                        pendingStreamInf = line.number
                    } else if let uri = attributes["URI"] {
                        referenced.append((uri.value, line.number))
                    } else {
                        report(line.number, "stream-inf-uri", .error, "EXT-X-I-FRAME-STREAM-INF has no URI attribute")
                    }
                case "#EXT-X-MEDIA":
                    guard let attributes = HLSAttributeList.parse(value ?? "") else {
                        report(line.number, "attribute-list", .error, "EXT-X-MEDIA has a malformed attribute list")
                        continue
                    }
                    if attributes["TYPE"]?.value == "CLOSED-CAPTIONS" { captions.media(attributes, line: line.number, report: report) }
                    if let uri = attributes["URI"], attributes["TYPE"]?.value != "CLOSED-CAPTIONS" { referenced.append((uri.value, line.number)) }
                    if let id = attributes["INSTREAM-ID"], id.value.hasPrefix("SERVICE") {
                        needs.append((7, line.number, "a SERVICE INSTREAM-ID"))
                    }
                default:
                    break
                }
            case let .uri(uri):
                if pendingStreamInf != nil {
                    referenced.append((uri, line.number))
                    pendingStreamInf = nil
                } else {
                    report(line.number, "uri-without-stream-inf", .error, "URI '\(uri)' does not follow an EXT-X-STREAM-INF")
                }
            case .comment, .blank:
                break
            }
        }
        if let pending = pendingStreamInf {
            report(pending, "stream-inf-uri", .error, "EXT-X-STREAM-INF is not followed by a URI line")
        }
        captions.finish(report: report)
        checkVersion(declared: declaredVersion, needs: needs, report: report)
        if profile == .livefilter, !independent {
            report(1, "independent-segments-missing", .error, "EXT-X-INDEPENDENT-SEGMENTS is missing")
        }
    }

    private func checkVariant(_ a: [HLSAttribute], name: String, line: Int, report: (Int, String, LintSeverity, String) -> Void) {
        let bandwidth = a["BANDWIDTH"].flatMap { attr in attr.value.allSatisfy(\.isASCIIDigit) ? Int(attr.value) : nil }
        if a["BANDWIDTH"] == nil {
            report(line, "stream-inf-bandwidth", .error, "\(name) has no BANDWIDTH")
        } else if bandwidth == nil {
            report(line, "stream-inf-bandwidth", .error, "BANDWIDTH '\(a["BANDWIDTH"]!.value)' is not a decimal integer")
        }
        if let average = a["AVERAGE-BANDWIDTH"] {
            if let n = Int(average.value), average.value.allSatisfy(\.isASCIIDigit) {
                if let bandwidth, n > bandwidth {
                    report(line, "average-bandwidth", .warning, "AVERAGE-BANDWIDTH \(n) is above the peak BANDWIDTH \(bandwidth)")
                }
            } else {
                report(line, "average-bandwidth", .error, "AVERAGE-BANDWIDTH '\(average.value)' is not a decimal integer")
            }
        }
        if let resolution = a["RESOLUTION"], resolution.isQuoted || Resolution(parsing: resolution.value) == nil {
            report(line, "resolution-format", .error, "RESOLUTION '\(resolution.value)' is not WIDTHxHEIGHT")
        }
        if let codecs = a["CODECS"], !codecs.isQuoted {
            report(line, "codecs-unquoted", .error, "CODECS must be a quoted string: CODECS=\"\(codecs.value)\"")
        }
        if let rate = a["FRAME-RATE"] {
            let ok = !rate.isQuoted && rate.value.allSatisfy { $0.isASCIIDigit || $0 == "." } && (Double(rate.value) ?? 0) > 0
            if !ok { report(line, "frame-rate-format", .error, "FRAME-RATE '\(rate.value)' is not a positive decimal number") }
        }
        if profile == .livefilter, name == "EXT-X-STREAM-INF" {
            let missing = ["CODECS", "RESOLUTION", "FRAME-RATE", "AVERAGE-BANDWIDTH"].filter { a[$0] == nil }
            if !missing.isEmpty {
                report(line, "stream-inf-incomplete", .warning, "EXT-X-STREAM-INF lacks \(missing.joined(separator: ", "))")
            }
        }
    }
}

/// A master's closed captions (rfc8216bis §4.4.6.1–2): each EXT-X-MEDIA TYPE=CLOSED-CAPTIONS has a
/// valid INSTREAM-ID (CC1–CC4, SERVICE1–63), unique in its group, and no URI; a variant's
/// CLOSED-CAPTIONS names a group that exists or is NONE, and NONE is on every variant or none.
private struct ClosedCaptionUse {
    var groups: [String: Set<String>] = [:]
    var variants: [(attribute: HLSAttribute?, line: Int)] = []

    mutating func media(_ a: [HLSAttribute], line: Int, report: (Int, String, LintSeverity, String) -> Void) {
        if a["URI"] != nil { report(line, "closed-captions-uri", .error, "EXT-X-MEDIA TYPE=CLOSED-CAPTIONS must not have a URI: the captions are in the video") }
        guard let group = a["GROUP-ID"]?.value else { return }
        guard let id = a["INSTREAM-ID"], id.isQuoted, AlternativeRendition.isValidInstreamID(id.value) else {
            report(line, "closed-captions-instream-id", .error,
                   "EXT-X-MEDIA TYPE=CLOSED-CAPTIONS needs a quoted INSTREAM-ID of CC1–CC4 or SERVICE1–63, has \(a["INSTREAM-ID"]?.value ?? "none")")
            groups[group, default: []] = groups[group] ?? []
            return
        }
        if groups[group]?.contains(id.value) == true {
            report(line, "closed-captions-instream-id", .error, "INSTREAM-ID \(id.value) appears twice in group \(group)")
        }
        groups[group, default: []].insert(id.value)
    }

    func finish(report: (Int, String, LintSeverity, String) -> Void) {
        var none: [Int] = [], other: [Int] = []
        for (attribute, line) in variants {
            guard let attribute else { other.append(line); continue }
            if attribute.isQuoted {
                other.append(line)
                if groups[attribute.value] == nil {
                    report(line, "closed-captions-group", .error, "CLOSED-CAPTIONS=\"\(attribute.value)\" names no EXT-X-MEDIA TYPE=CLOSED-CAPTIONS group")
                }
            } else if attribute.value == "NONE" {
                none.append(line)
            } else {
                report(line, "closed-captions-group", .error, "CLOSED-CAPTIONS must be a quoted GROUP-ID or NONE, is \(attribute.value)")
            }
        }
        if !none.isEmpty, let first = other.first {
            report(first, "closed-captions-none", .error, "CLOSED-CAPTIONS=NONE on some variants (line \(none[0])) must be on every EXT-X-STREAM-INF")
        }
    }
}

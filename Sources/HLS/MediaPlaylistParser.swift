import Foundation

extension PlaylistParser {
    static func parseMedia(_ lines: [PlaylistLine]) throws(PlaylistParseError) -> MediaPlaylist {
        var playlist = MediaPlaylist(targetDuration: 0)
        var sawTarget = false
        // A later EXT-X-MAP that differs from the playlist's first (`MediaSegment.map`).
        var currentMap: MediaInitializationSection?
        // Tags that apply to the next segment only.
        var pending: (duration: Double, title: String, line: Int)?
        var pendingDate: Date?
        var pendingDiscontinuity = false
        var pendingRange: ByteRange?
        var pendingGap = false
        var pendingParts: [PartialSegment] = []
        var pendingCues: [CueMarker] = []
        // Tags that apply until the next of their kind.
        var keys: [EncryptionKey] = []
        var bitrate: Int?
        for line in lines {
            func fail(_ message: String) -> PlaylistParseError { PlaylistParseError(line: line.number, message: message) }
            func outOfBounds(_ message: String) -> PlaylistParseError {
                PlaylistParseError(line: line.number, message: message, isOutOfBounds: true)
            }
            switch line.kind {
            case let .tag(name, value):
                let v = value ?? ""
                switch name {
                case "#EXT-X-VERSION":
                    playlist.version = try PlaylistNumber.required(v, "EXT-X-VERSION", line: line.number)
                case "#EXT-X-TARGETDURATION":
                    let n = try PlaylistNumber.required(v, "EXT-X-TARGETDURATION", line: line.number)
                    guard Double(n) <= PlaylistNumber.largestSeconds else {
                        throw outOfBounds("EXT-X-TARGETDURATION \(n) is longer than livefilter reads (at most \(Int(PlaylistNumber.largestSeconds)) s)")
                    }
                    playlist.targetDuration = n
                    sawTarget = true
                case "#EXT-X-MEDIA-SEQUENCE":
                    playlist.mediaSequence = try PlaylistNumber.required(v, "EXT-X-MEDIA-SEQUENCE", line: line.number)
                case "#EXT-X-DISCONTINUITY-SEQUENCE":
                    playlist.discontinuitySequence = try PlaylistNumber.required(v, "EXT-X-DISCONTINUITY-SEQUENCE", line: line.number)
                case "#EXT-X-PLAYLIST-TYPE":
                    playlist.playlistType = PlaylistType(rawValue: v)
                case "#EXT-X-INDEPENDENT-SEGMENTS":
                    playlist.independentSegments = true
                case "#EXT-X-I-FRAMES-ONLY":
                    playlist.iFramesOnly = true
                case "#EXT-X-ENDLIST":
                    playlist.endList = true
                case "#EXT-X-MAP":
                    guard let attributes = HLSAttributeList.parse(v), let uri = quotedString(attributes["URI"]) else {
                        throw fail("EXT-X-MAP needs a URI attribute")
                    }
                    var range: ByteRange?
                    if let text = attributes["BYTERANGE"]?.value {
                        guard let r = ByteRange(parsing: text) else {
                            throw ByteRange.isBeyondBounds(text) ? outOfBounds("the BYTERANGE of EXT-X-MAP, '\(text.prefix(60))', ends beyond the largest offset livefilter reads (2^53 − 1)")
                                : fail("the BYTERANGE of EXT-X-MAP, '\(text.prefix(60))', is not n@o")
                        }
                        range = r
                    }
                    let section = MediaInitializationSection(uri: uri, byteRange: range, keys: keys)
                    if playlist.map == nil { playlist.map = section }
                    // The same resource again (a discontinuity repeats it) is the playlist's map.
                    currentMap = section.isSameResource(as: playlist.map) ? nil : section
                case "#EXTINF":
                    let parts = v.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false)
                    let text = parts[0].trimmingCharacters(in: .whitespaces)
                    guard let d = PlaylistNumber.seconds(text) else {
                        if let value = Double(text), value.isFinite, value > PlaylistNumber.largestSeconds {
                            throw outOfBounds("EXTINF duration \(text.prefix(40)) is longer than livefilter reads (at most \(Int(PlaylistNumber.largestSeconds)) s)")
                        }
                        throw fail("EXTINF duration '\(parts[0].prefix(40))' is not a number of seconds from 0 to \(Int(PlaylistNumber.largestSeconds))")
                    }
                    pending = (d, parts.count > 1 ? String(parts[1]) : "", line.number)
                case "#EXT-X-PROGRAM-DATE-TIME":
                    pendingDate = HLSDate.parse(v)
                case "#EXT-X-DISCONTINUITY":
                    pendingDiscontinuity = true
                case "#EXT-X-BYTERANGE":
                    guard let range = ByteRange(parsing: v) else {
                        throw ByteRange.isBeyondBounds(v) ? outOfBounds("EXT-X-BYTERANGE '\(v.prefix(60))' ends beyond the largest offset livefilter reads (2^53 − 1)")
                            : fail("EXT-X-BYTERANGE '\(v.prefix(60))' is not n[@o]")
                    }
                    pendingRange = range
                case "#EXT-X-KEY":
                    keys = try key(v, line: line.number).applied(to: keys)
                case "#EXT-X-GAP":
                    pendingGap = true
                case "#EXT-X-BITRATE":
                    if let rate = PlaylistNumber.integer(v) { bitrate = rate }
                case "#EXT-X-PART-INF":
                    playlist.partTarget = HLSAttributeList.parse(v)?["PART-TARGET"].flatMap { PlaylistNumber.seconds($0.value) }
                case "#EXT-X-SERVER-CONTROL":
                    playlist.serverControl = serverControl(HLSAttributeList.parse(v) ?? [])
                case "#EXT-X-SKIP":
                    guard playlist.skip == nil else { throw fail("EXT-X-SKIP appears more than once") }
                    guard playlist.segments.isEmpty, pendingParts.isEmpty, pending == nil else {
                        throw fail("EXT-X-SKIP must replace the first segments: it comes after a segment")
                    }
                    guard let attributes = HLSAttributeList.parse(v), let count = attributes["SKIPPED-SEGMENTS"].flatMap({ PlaylistNumber.integer($0.value) })
                    else { throw fail("EXT-X-SKIP needs a decimal-integer SKIPPED-SEGMENTS") }
                    let removed = quotedString(attributes["RECENTLY-REMOVED-DATERANGES"]).map { $0.split(separator: "\t").map(String.init) }
                    playlist.skip = PlaylistSkip(skippedSegments: count, recentlyRemovedDateRanges: removed)
                case "#EXT-X-PART":
                    pendingParts.append(try part(v, line: line.number, after: pendingParts.last))
                case "#EXT-X-PRELOAD-HINT":
                    if let hint = preloadHint(v) { playlist.preloadHints.append(hint) }
                case "#EXT-X-RENDITION-REPORT":
                    if let report = renditionReport(v) { playlist.renditionReports.append(report) }
                case "#EXT-X-DATERANGE":
                    // One that does not read is left out, as a client ignores it (the linter says why).
                    if let range = DateRange(attributes: v, position: playlist.segments.count, line: line.number) {
                        playlist.dateRanges.append(range)
                    }
                case "#EXT-X-CUE-OUT", "#EXT-X-CUE-OUT-CONT", "#EXT-X-CUE-IN":
                    if let marker = CueMarker(tag: name, value: value) { pendingCues.append(marker) }
                default:
                    break
                }
            case let .uri(uri):
                guard let info = pending else { throw fail("URI '\(uri)' has no EXTINF before it") }
                var resolved: ByteRange?
                if let range = pendingRange {
                    resolved = try resolve(range, uri: uri, after: playlist.segments.last, firstAfterSkip: playlist.skip != nil,
                                           line: line.number)
                }
                playlist.segments.append(MediaSegment(
                    duration: info.duration, uri: uri, title: info.title, programDateTime: pendingDate,
                    discontinuity: pendingDiscontinuity, byteRange: pendingRange, line: info.line, keys: keys, gap: pendingGap,
                    bitrate: pendingRange == nil ? bitrate : nil, parts: pendingParts, resolvedByteRange: resolved,
                    map: currentMap, cueMarkers: pendingCues))
                pending = nil
                pendingCues = []
                pendingDate = nil
                pendingDiscontinuity = false
                pendingRange = nil
                pendingGap = false
                pendingParts = []
            case .comment, .blank:
                break
            }
        }
        if !pendingParts.isEmpty {
            playlist.segmentInProgress = SegmentInProgress(parts: pendingParts, discontinuity: pendingDiscontinuity,
                                                           programDateTime: pendingDate, keys: keys, map: currentMap)
        }
        if !sawTarget { throw PlaylistParseError(line: 1, message: "EXT-X-TARGETDURATION is missing") }
        // Every Media Sequence Number the model speaks of (and a request a few segments ahead) stays
        // within the bound the parser reads numbers to.
        let (count, countOverflow) = (playlist.skip?.skippedSegments ?? 0).addingReportingOverflow(playlist.segments.count)
        let (last, overflow) = playlist.mediaSequence.addingReportingOverflow(count)
        if countOverflow || overflow || last > PlaylistNumber.largestInteger {
            throw PlaylistParseError(line: 1, message: "EXT-X-MEDIA-SEQUENCE \(playlist.mediaSequence) is too large for its segments",
                                     isOutOfBounds: true)
        }
        return playlist
    }

    /// A segment's range with its offset: as written, or right after the previous segment's range of
    /// the same resource (RFC 8216 §4.3.2.2: without one the client MUST fail). Nil when the previous
    /// range is unknown because EXT-X-SKIP left it out (`applying(delta:)` resolves it).
    private static func resolve(_ range: ByteRange, uri: String, after previous: MediaSegment?, firstAfterSkip: Bool,
                                line: Int) throws(PlaylistParseError) -> ByteRange? {
        if range.offset != nil { return range }
        guard let previous else {
            if firstAfterSkip { return nil }
            throw PlaylistParseError(line: line, message: "EXT-X-BYTERANGE '\(range)' has no offset and no segment before it")
        }
        guard previous.uri == uri, previous.byteRange != nil else {
            throw PlaylistParseError(line: line, message: "EXT-X-BYTERANGE '\(range)' has no offset but the segment before it is not a range of '\(uri)'")
        }
        guard let before = previous.resolvedByteRange else { return nil }
        guard let resolved = range.following(before) else {
            throw PlaylistParseError(line: line, message: "EXT-X-BYTERANGE '\(range)' ends beyond the largest offset livefilter reads (2^53 − 1)",
                                     isOutOfBounds: true)
        }
        return resolved
    }

    private static func key(_ value: String, line: Int) throws(PlaylistParseError) -> EncryptionKey {
        func fail(_ message: String) -> PlaylistParseError { PlaylistParseError(line: line, message: message) }
        guard let a = HLSAttributeList.parse(value) else { throw fail("EXT-X-KEY has a malformed attribute list") }
        guard let methodText = a["METHOD"]?.value else { throw fail("EXT-X-KEY has no METHOD") }
        let method = EncryptionMethod(rawValue: methodText)
        if method == .none { return .methodNone }
        guard let uri = quotedString(a["URI"]) else { throw fail("EXT-X-KEY METHOD=\(method) has no URI") }
        var iv: InitializationVector?
        if let text = a["IV"]?.value {
            guard let parsed = InitializationVector(hexadecimal: text) else { throw fail("the IV '\(text)' is not a 128-bit hexadecimal-sequence") }
            iv = parsed
        }
        var versions: [Int]?
        if let text = a["KEYFORMATVERSIONS"]?.value {
            let numbers = text.split(separator: "/", omittingEmptySubsequences: false).map { Int($0) }
            guard numbers.allSatisfy({ ($0 ?? 0) > 0 }) else { throw fail("KEYFORMATVERSIONS '\(text)' is not positive integers separated by '/'") }
            versions = numbers.compactMap { $0 }
        }
        let format = a["KEYFORMAT"].map { quotedString($0) }
        if format == .some(nil) { throw fail("KEYFORMAT holds a '\"'") }
        return EncryptionKey(method: method, uri: uri, iv: iv, keyFormat: format ?? nil, keyFormatVersions: versions)
    }

    private static func part(_ value: String, line: Int, after previous: PartialSegment?) throws(PlaylistParseError) -> PartialSegment {
        func fail(_ message: String) -> PlaylistParseError { PlaylistParseError(line: line, message: message) }
        guard let a = HLSAttributeList.parse(value), let uri = quotedString(a["URI"]),
              let duration = a["DURATION"].flatMap({ PlaylistNumber.seconds($0.value) }) else {
            throw fail("EXT-X-PART needs a URI and a DURATION")
        }
        var part = PartialSegment(duration: duration, uri: uri, independent: a["INDEPENDENT"]?.value == "YES",
                                  gap: a["GAP"]?.value == "YES", line: line)
        if let text = a["BYTERANGE"]?.value {
            guard let range = ByteRange(parsing: text) else {
                throw ByteRange.isBeyondBounds(text)
                    ? PlaylistParseError(line: line, message: "the BYTERANGE of EXT-X-PART, '\(text.prefix(60))', ends beyond the largest offset livefilter reads (2^53 − 1)",
                                         isOutOfBounds: true)
                    : fail("the BYTERANGE of EXT-X-PART, '\(text.prefix(60))', is not n[@o]")
            }
            part.byteRange = range
            if range.offset != nil {
                part.resolvedByteRange = range
            } else {
                // Without an offset the part follows the previous part of its parent (rfc8216bis §4.4.4.9).
                guard let previous, previous.uri == uri, let before = previous.resolvedByteRange else {
                    throw fail("the BYTERANGE of EXT-X-PART has no offset and does not follow a part of '\(uri)'")
                }
                guard let resolved = range.following(before) else {
                    throw PlaylistParseError(line: line, message: "the BYTERANGE of EXT-X-PART ends beyond the largest offset livefilter reads (2^53 − 1)",
                                             isOutOfBounds: true)
                }
                part.resolvedByteRange = resolved
            }
        }
        return part
    }

    private static func serverControl(_ a: [HLSAttribute]) -> ServerControl {
        func seconds(_ name: String) -> Double? { a[name].flatMap { PlaylistNumber.seconds($0.value) } }
        return ServerControl(canSkipUntil: seconds("CAN-SKIP-UNTIL"), canSkipDateRanges: a["CAN-SKIP-DATERANGES"]?.value == "YES",
                             holdBack: seconds("HOLD-BACK"), partHoldBack: seconds("PART-HOLD-BACK"),
                             canBlockReload: a["CAN-BLOCK-RELOAD"]?.value == "YES")
    }

    /// Nil for a hint a client must ignore: an unknown TYPE (rfc8216bis §6.3.8) or unreadable attributes.
    private static func preloadHint(_ value: String) -> PreloadHint? {
        guard let a = HLSAttributeList.parse(value), let type = a["TYPE"].flatMap({ PreloadHint.Kind(rawValue: $0.value) }),
              let uri = quotedString(a["URI"]) else { return nil }
        let start = a["BYTERANGE-START"].map { PlaylistNumber.integer($0.value) }
        let length = a["BYTERANGE-LENGTH"].map { PlaylistNumber.integer($0.value) }
        if start == .some(nil) || length == .some(nil) { return nil }
        // A range whose end is past the largest offset cannot be asked for.
        if let s = start ?? nil, let l = length ?? nil, s + l > PlaylistNumber.largestInteger { return nil }
        return PreloadHint(type: type, uri: uri, byteRangeStart: start ?? nil, byteRangeLength: length ?? nil)
    }

    private static func renditionReport(_ value: String) -> RenditionReport? {
        guard let a = HLSAttributeList.parse(value), let uri = quotedString(a["URI"]) else { return nil }
        let msn = a["LAST-MSN"].map { PlaylistNumber.integer($0.value) }, part = a["LAST-PART"].map { PlaylistNumber.integer($0.value) }
        if msn == .some(nil) || part == .some(nil) { return nil }
        return RenditionReport(uri: uri, lastMediaSequenceNumber: msn ?? nil, lastPartIndex: part ?? nil)
    }
}

/// An attribute's value, if a quoted-string can carry it: nil when it holds a '"' (which only an
/// unquoted value can), since no rendering could write it back.
private func quotedString(_ attribute: HLSAttribute?) -> String? {
    guard let value = attribute?.value, !value.contains("\"") else { return nil }
    return value
}

extension ByteRange {
    /// Whether `text` is a well-formed `n[@o]` that `init(parsing:)` refused for its size.
    static func isBeyondBounds(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count <= 2 && parts.allSatisfy { PlaylistNumber.decimalInteger($0) != .notDecimalInteger }
    }

    /// This range starting right after `previous` (which has an offset); nil if its end would pass
    /// the largest offset read (`PlaylistNumber.largestInteger`), so no sum on it can overflow.
    func following(_ previous: ByteRange) -> ByteRange? {
        let (end, o1) = (previous.offset ?? 0).addingReportingOverflow(previous.length)
        let (last, o2) = end.addingReportingOverflow(length)
        return o1 || o2 || last > PlaylistNumber.largestInteger ? nil : ByteRange(length: length, offset: end)
    }
}

import Foundation

/// How EXTINF durations are written.
public enum HLSDurationStyle: Sendable, Equatable {
    /// Exactly this many decimals (3 keeps a frame exact at common rates; livefilter's playlists).
    case decimals(Int)
    /// The shortest text that reads back as the same number: a parsed playlist renders to text that
    /// parses to the same model.
    case exact
}

extension MediaPlaylist {
    /// The lowest EXT-X-VERSION the features in use need (RFC 8216 §7, rfc8216bis §8) when durations
    /// are written with `durationDecimals` decimals (any decimal point needs version 3).
    public func minimumVersion(durationDecimals: Int = 3) -> Int {
        minimumVersion(durations: .decimals(durationDecimals))
    }

    /// The lowest EXT-X-VERSION the features in use need when durations are written in `style`.
    public func minimumVersion(durations style: HLSDurationStyle) -> Int {
        var v = 1
        let decimalText = if case let .decimals(n) = style { n > 0 && !segments.isEmpty } else { false }
        if decimalText || segments.contains(where: { !HLSNumber.isIntegral($0.duration) }) { v = max(v, 3) }
        if iFramesOnly || segments.contains(where: { $0.byteRange != nil }) { v = max(v, 4) }
        if map != nil { v = max(v, iFramesOnly ? 5 : 6) }
        let keys = allKeys
        if keys.contains(where: { $0.iv != nil }) { v = max(v, 2) }
        if keys.contains(where: { $0.keyFormat != nil || $0.keyFormatVersions != nil }) { v = max(v, 5) }
        if let skip { v = max(v, skip.recentlyRemovedDateRanges == nil ? 9 : 10) }
        return v
    }

    /// Every key the text will carry: the map's, the segments' and the segment in progress's.
    private var allKeys: [EncryptionKey] {
        (map?.keys ?? []) + segments.flatMap(\.keys) + (segmentInProgress?.keys ?? [])
    }

    /// The playlist text. `EXT-X-VERSION` is `version` or, when nil, `minimumVersion(durationDecimals:)`;
    /// durations get `durationDecimals` decimals (3 keeps a frame exact at common rates).
    public func render(durationDecimals: Int = 3) -> String {
        render(durations: .decimals(durationDecimals))
    }

    /// The playlist text with EXTINF durations written in `style`; `.exact` round-trips a parsed
    /// playlist. Other numbers (part durations, hold-backs) are always written exactly.
    ///
    /// Tags are written where they change: EXT-X-KEY before the first segment they apply to (and
    /// before EXT-X-MAP when they encrypt it), EXT-X-BITRATE where the rate changes. Two things a
    /// model built in code can say but text cannot: a segment with no keys after encrypted ones is
    /// written as METHOD=NONE (reads back as `[.methodNone]`), and a nil `bitrate` after a rate keeps the rate.
    public func render(durations style: HLSDurationStyle) -> String {
        func duration(_ value: Double) -> String {
            switch style {
            case let .decimals(places): HLSNumber.decimal(value, places: places)
            case .exact: HLSNumber.shortest(value)
            }
        }
        var out = "#EXTM3U\n"
        func line(_ text: String) { out += text + "\n" }
        line("#EXT-X-VERSION:\(version ?? minimumVersion(durations: style))")
        line("#EXT-X-TARGETDURATION:\(targetDuration)")
        if let serverControl { line("#EXT-X-SERVER-CONTROL:" + serverControl.attributeList) }
        if let partTarget { line("#EXT-X-PART-INF:PART-TARGET=\(HLSNumber.shortest(partTarget))") }
        line("#EXT-X-MEDIA-SEQUENCE:\(mediaSequence)")
        if discontinuitySequence != 0 { line("#EXT-X-DISCONTINUITY-SEQUENCE:\(discontinuitySequence)") }
        if let playlistType { line("#EXT-X-PLAYLIST-TYPE:\(playlistType.rawValue)") }
        if independentSegments { line("#EXT-X-INDEPENDENT-SEGMENTS") }
        if iFramesOnly { line("#EXT-X-I-FRAMES-ONLY") }
        var keys: [EncryptionKey] = []
        var currentMap = map
        func mapTag(_ map: MediaInitializationSection) {
            EncryptionKey.tags(from: keys, to: map.keys).forEach(line)
            keys = map.keys
            line("#EXT-X-MAP:URI=\"\(map.uri)\"" + (map.byteRange.map { ",BYTERANGE=\"\($0)\"" } ?? ""))
        }
        if let map { mapTag(map) }
        // A later map is written where it takes over (after the discontinuity that brings it).
        func mapChange(to segmentMap: MediaInitializationSection?) {
            let wanted = segmentMap ?? map
            guard let wanted, !wanted.isSameResource(as: currentMap) else { return }
            mapTag(wanted)
            currentMap = wanted
        }
        if let skip { line("#EXT-X-SKIP:" + skip.attributeList) }
        // The tags a parent segment shares with its first part come before the parts (rfc8216bis §4.4.4.9).
        func parentTags(discontinuity: Bool, segmentKeys: [EncryptionKey], date: Date?) {
            if discontinuity { line("#EXT-X-DISCONTINUITY") }
            EncryptionKey.tags(from: keys, to: segmentKeys).forEach(line)
            keys = segmentKeys
            if let date { line("#EXT-X-PROGRAM-DATE-TIME:\(HLSDate.format(date))") }
        }
        var bitrate: Int?
        var ranges = dateRanges.enumerated().sorted { ($0.element.position, $0.offset) < ($1.element.position, $1.offset) }.map(\.element)[...]
        func dateRangeTags(before index: Int) {
            while let range = ranges.first, range.position <= index {
                line("#EXT-X-DATERANGE:" + range.attributeList)
                ranges = ranges.dropFirst()
            }
        }
        for (index, segment) in segments.enumerated() {
            dateRangeTags(before: index)
            if segment.discontinuity { line("#EXT-X-DISCONTINUITY") }
            mapChange(to: segment.map)
            parentTags(discontinuity: false, segmentKeys: segment.keys, date: segment.programDateTime)
            segment.cueMarkers.forEach { line($0.tag) }
            for part in segment.parts { line("#EXT-X-PART:" + part.attributeList) }
            if segment.byteRange == nil, let rate = segment.bitrate, rate != bitrate {
                line("#EXT-X-BITRATE:\(rate)")
                bitrate = rate
            }
            if segment.gap { line("#EXT-X-GAP") }
            line("#EXTINF:\(duration(segment.duration)),\(segment.title)")
            if let range = segment.byteRange { line("#EXT-X-BYTERANGE:\(range)") }
            line(segment.uri)
        }
        dateRangeTags(before: .max)
        if let open = segmentInProgress {
            if open.discontinuity { line("#EXT-X-DISCONTINUITY") }
            mapChange(to: open.map)
            parentTags(discontinuity: false, segmentKeys: open.keys, date: open.programDateTime)
            for part in open.parts { line("#EXT-X-PART:" + part.attributeList) }
        }
        for hint in preloadHints { line("#EXT-X-PRELOAD-HINT:" + hint.attributeList) }
        for report in renditionReports { line("#EXT-X-RENDITION-REPORT:" + report.attributeList) }
        if endList { line("#EXT-X-ENDLIST") }
        return out
    }
}

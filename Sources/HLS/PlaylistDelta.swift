/// Why a Playlist Delta Update could not be merged: the client must then reload the playlist without
/// `_HLS_skip` (rfc8216bis §6.3.7).
public enum PlaylistDeltaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The playlist to merge into is itself a delta update (it has EXT-X-SKIP).
    case previousIsDelta
    /// Some skipped segments (Media Sequence Numbers `needed`) are not among the complete segments of
    /// the previous playlist (`available`).
    case skippedSegmentsMissing(needed: ClosedRange<Int>, available: Range<Int>)
    /// A segment's EXT-X-BYTERANGE has no offset and the segment before it is not a range of its resource.
    case byteRangeUnresolvable(mediaSequenceNumber: Int)

    public var description: String {
        switch self {
        case .previousIsDelta:
            "the previous playlist is itself a delta update"
        case let .skippedSegmentsMissing(needed, available):
            "the delta update skips segments \(needed.lowerBound)…\(needed.upperBound) but the previous playlist has "
                + (available.isEmpty ? "none" : "\(available.lowerBound)…\(available.upperBound - 1)")
        case let .byteRangeUnresolvable(msn):
            "segment \(msn) has a byte range without offset that follows no range of its resource"
        }
    }
}

extension MediaPlaylist {
    /// The full playlist a Playlist Delta Update stands for (rfc8216bis §6.2.5.1, §6.3.7): the segments
    /// EXT-X-SKIP replaced, taken from `self` (the previous full version of the playlist), then the
    /// delta's. Everything else is the delta's. A `delta` without EXT-X-SKIP is a full playlist and
    /// is returned as it is.
    ///
    /// A skipped segment's tags go with it, so the segments of the delta before its first EXT-X-KEY
    /// take the keys of the last skipped segment, and those before its first EXT-X-BITRATE its rate;
    /// an EXT-X-MAP the delta leaves out is the previous one.
    public func applying(delta: MediaPlaylist) throws(PlaylistDeltaError) -> MediaPlaylist {
        guard let skip = delta.skip else { return delta }
        guard self.skip == nil else { throw .previousIsDelta }
        var merged = delta
        merged.skip = nil
        guard skip.skippedSegments > 0 else { return merged }
        let first = delta.mediaSequence, last = first + skip.skippedSegments - 1
        let available = mediaSequence..<(mediaSequence + segments.count)
        guard available.contains(first), available.contains(last) else {
            throw .skippedSegmentsMissing(needed: first...last, available: available)
        }
        let skipped = Array(segments[(first - mediaSequence)...(last - mediaSequence)])
        let carried = skipped.last!
        // Tags applied to skipped segments were skipped with them (rfc8216bis §4.4.5.2); those that
        // also apply to later segments are the last skipped segment's.
        let carriedRate = skipped.last { $0.byteRange == nil }?.bitrate
        var keysDeclared = false, rateDeclared = false
        for i in merged.segments.indices {
            keysDeclared = keysDeclared || !merged.segments[i].keys.isEmpty
            if !keysDeclared { merged.segments[i].keys = carried.keys }
            if merged.segments[i].byteRange == nil {
                rateDeclared = rateDeclared || merged.segments[i].bitrate != nil
                if !rateDeclared { merged.segments[i].bitrate = carriedRate }
            }
        }
        if !keysDeclared, merged.segmentInProgress?.keys.isEmpty == true { merged.segmentInProgress?.keys = carried.keys }
        if merged.map == nil { merged.map = map }
        merged.segments = skipped + merged.segments
        // The delta's date ranges stood after the skipped segments. With `_HLS_skip=v2` the server
        // left out older ones too (rfc8216bis §4.4.5.2): the previous playlist's are kept, but for
        // those it names as removed (RECENTLY-REMOVED-DATERANGES) or sends again.
        for i in merged.dateRanges.indices { merged.dateRanges[i].position += skipped.count }
        if let removed = skip.recentlyRemovedDateRanges {
            let sent = Set(merged.dateRanges.map(\.id)).union(removed)
            let shift = first - mediaSequence
            let kept = dateRanges.filter { !sent.contains($0.id) }.map { range in
                var range = range
                range.position = max(0, range.position - shift)
                return range
            }
            merged.dateRanges = kept + merged.dateRanges
        }
        // Byte ranges the delta could not resolve follow the skipped segments' ranges.
        for i in merged.segments.indices.dropFirst() where merged.segments[i].byteRange != nil && merged.segments[i].resolvedByteRange == nil {
            let previous = merged.segments[i - 1], range = merged.segments[i].byteRange!
            guard previous.uri == merged.segments[i].uri, let before = previous.resolvedByteRange,
                  let resolved = range.following(before) else {
                throw .byteRangeUnresolvable(mediaSequenceNumber: merged.mediaSequenceNumber(ofSegmentAt: i))
            }
            merged.segments[i].resolvedByteRange = resolved
        }
        return merged
    }
}

extension MediaPlaylist {
    /// The Playlist Delta Update a server answers `_HLS_skip` with (rfc8216bis §6.2.5.1, §4.4.5.2): the
    /// first segments replaced by EXT-X-SKIP, so that `previous.applying(delta:)` of it gives back
    /// `self` to a client holding an earlier full version (`version` aside: EXT-X-SKIP needs 9,
    /// RECENTLY-REMOVED-DATERANGES 10).
    ///
    /// `skip` is what the server honours (`DeliveryDirectives.check(against:)`). A segment is skipped
    /// only when the complete segments after it last at least the Skip Boundary (CAN-SKIP-UNTIL), so a
    /// client that may ask for a delta (its copy less than half the boundary old, §6.3.7) still has
    /// every skipped segment. `self` as it is when there is no boundary, it has EXT-X-ENDLIST, or
    /// nothing is that old.
    ///
    /// What stays is what the model carries outside the skipped segments: the header (EXT-X-MEDIA-SEQUENCE
    /// and EXT-X-DISCONTINUITY-SEQUENCE still count the skipped segments), the first EXT-X-MAP, and, as
    /// `render` writes a segment's keys and rate where they change, the EXT-X-KEY and EXT-X-BITRATE in
    /// force at the first segment kept. The date ranges stay before the segment they stood before
    /// (one before a skipped segment: before the first kept). With `.segmentsAndDateRanges` and the
    /// server's CAN-SKIP-DATERANGES=YES, the ranges whose tags stood before skipped segments and whose
    /// end is known are left out too: the client's copy, younger than half the Skip Boundary, has them
    /// as they are (an open range may have changed since, so it is sent). Which ranges left the
    /// playlist lately (RECENTLY-REMOVED-DATERANGES, required then) this model does not know: none
    /// are named, and a client keeps a removed range until its next full reload.
    public func deltaUpdate(skipping skip: DeliveryDirectives.Skip) -> MediaPlaylist {
        guard !endList, self.skip == nil, let boundary = serverControl?.canSkipUntil else { return self }
        // Segments from the end whose durations reach the boundary are kept; the rest can go.
        var kept = 0, recent = 0.0
        while kept < segments.count, recent < boundary {
            recent += segments[segments.count - 1 - kept].duration
            kept += 1
        }
        let skipped = segments.count - kept
        guard skipped > 0 else { return self }
        var delta = self
        delta.segments.removeFirst(skipped)
        let skipsRanges = skip == .segmentsAndDateRanges && serverControl?.canSkipDateRanges == true
        delta.dateRanges = dateRanges.compactMap { range in
            let ended = range.endDate != nil || range.duration != nil || range.endOnNext
            if skipsRanges, range.position < skipped, ended { return nil }
            var moved = range
            moved.position = max(0, range.position - skipped)
            return moved
        }
        delta.skip = PlaylistSkip(skippedSegments: skipped,
                                  recentlyRemovedDateRanges: skip == .segmentsAndDateRanges ? [] : nil)
        if let version { delta.version = max(version, skip == .segmentsAndDateRanges ? 10 : 9) }
        return delta
    }
}

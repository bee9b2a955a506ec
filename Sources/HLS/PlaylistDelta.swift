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

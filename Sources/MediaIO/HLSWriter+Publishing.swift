import Foundation
import HLS

/// Publishing: the media playlist written (with LL-HLS's parts, hint and reports) and the files
/// that have left it deleted. The cutting that decides what is published is in HLSWriter.swift.
extension HLSWriter {
    /// Part files go once their segment's parts have long left the playlist (which lists them for
    /// about three target durations): a player still reading an old playlist finds them.
    func deleteOldParts() {
        let keep = max(6, 3 * Int((Double(options.targetDuration) / options.segmentDuration).rounded(.up)) + 3)
        while partsDeletedThrough + 1 < segments.count - keep {
            partsDeletedThrough += 1
            for part in segments[partsDeletedThrough].parts { unlink(folder + "/" + part.uri) }
        }
    }

    /// Live: a segment leaves the playlist when `listSize` newer ones exist, and its file goes
    /// `deleteGraceSegments` segments later, so a client that just read the old playlist can still fetch it.
    func deleteExpiredSegments() {
        let firstListed = max(0, segments.count - options.listSize)
        let deleteBefore = firstListed - options.graceSegments
        while deletedThrough + 1 < deleteBefore {
            deletedThrough += 1
            unlink(folder + "/" + segments[deletedThrough].uri)
        }
        forgetOldRanges(before: firstSegmentNumber + max(0, deleteBefore))
    }

    func publishPlaylist(ended: Bool = false) throws(MediaError) {
        if options.playlistType == .vod && !ended { return }
        let listed = options.playlistType == .live ? Array(segments.suffix(options.listSize)) : segments
        let firstListed = listed.first?.sequence ?? firstSegmentNumber + segments.count
        // LL-HLS shows a range with its segment's first part; otherwise with the segment.
        let ranges = dateRanges(firstListed: firstListed, listedCount: listed.count, includingOpen: partTicks != nil && segmentOpen && !ended,
                                windowStart: listed.first?.clockDate)
        let cueTags = options.adMarkers.writesCueTags
        // Every segment is dated where date ranges are written (a VOD playlist too): START-DATE needs the clock.
        let dated = options.playlistType != .vod || !ranges.isEmpty
        var playlist = MediaPlaylist(
            targetDuration: options.targetDuration,
            mediaSequence: listed.first?.sequence ?? firstSegmentNumber + segments.count,
            playlistType: options.playlistType == .vod ? .vod : options.playlistType == .event ? .event : nil,
            independentSegments: true,
            map: initSegmentName.map { MediaInitializationSection(uri: $0) },
            segments: listed.map { record in
                var segment = MediaSegment(duration: record.duration, uri: record.uri, programDateTime: dated ? record.clockDate : nil)
                if cueTags { segment.cueMarkers = record.cueMarkers }
                return segment
            },
            endList: ended)
        playlist.dateRanges = ranges
        if partTicks != nil, let partTarget = options.partDuration { addLowLatencyTags(to: &playlist, listed: listed, partTarget: partTarget) }
        try AtomicFile.write(Array(playlist.render(durationDecimals: 3).utf8), to: playlistPath, displayPath: playlistPath)
        onFilePublished?(playlistPath)
    }

    /// LL-HLS (rfc8216bis): the parts of the last segments and of the open one, the next part's
    /// preload hint, what the server honours, and the other renditions' progress.
    func addLowLatencyTags(to playlist: inout MediaPlaylist, listed: [HLSSegmentRecord], partTarget: Double) {
        playlist.partTarget = partTarget
        // Three part targets of hold-back (the spec's SHOULD); delta updates may skip what is more
        // than six target durations old (its minimum Skip Boundary).
        // Date ranges of skipped segments may be skipped too (`_HLS_skip=v2`) where the writer marks splices.
        playlist.serverControl = ServerControl(canSkipUntil: Double(6 * options.targetDuration),
                                               canSkipDateRanges: spliceBoard != nil && options.adMarkers.writesDateRanges,
                                               partHoldBack: 3 * partTarget, canBlockReload: true)
        let open = segmentOpen ? openParts : []
        let end = (listed.last.map { $0.startTime + $0.duration } ?? segmentStart ?? 0) + open.reduce(0) { $0 + $1.duration }
        // Parts are listed while they end within three target durations of the playlist's end (§6.2.2).
        let horizon = end - 3 * Double(options.targetDuration) - 1e-6
        for (i, record) in listed.enumerated() {
            guard let first = record.parts.first, record.startTime + first.duration >= horizon else { continue }
            playlist.segments[i].parts = record.parts.map(\.partialSegment)
        }
        let openSequence = firstSegmentNumber + segments.count
        if !open.isEmpty {
            playlist.segmentInProgress = SegmentInProgress(parts: open.map(\.partialSegment),
                                                           programDateTime: segmentStart.map { programDate(start: $0, tick: segmentStartTick) } ?? nil)
        }
        let lastPart: (msn: Int, index: Int)? = !open.isEmpty ? (openSequence, open.count - 1)
            : segments.last.flatMap { $0.parts.isEmpty ? nil : ($0.sequence, $0.parts.count - 1) }
        if !playlist.endList {
            // The next part: the open segment's next, or the first of the segment the next packet starts.
            let next = Self.partName(segment: namePattern.name(openSequence), index: segmentOpen ? open.count : 0)
            playlist.preloadHints = [PreloadHint(type: .part, uri: next)]
        }
        if let progress = renditionProgress {
            let uri = (playlistPath as NSString).lastPathComponent
            progress.record(uri, msn: lastPart?.msn ?? max(firstSegmentNumber, openSequence - 1), part: lastPart?.index)
            playlist.renditionReports = progress.reports(excluding: uri)
        }
    }
}

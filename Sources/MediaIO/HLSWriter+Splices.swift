import Foundation
import HLS

/// A date range the writer has placed: the segment it starts at, and whether its break is still open.
struct WrittenRange {
    var sequence: Int
    var range: DateRange
    /// The output tick it starts at: a break's DURATION is measured on the tick grid, not between
    /// program dates (a source's clock drifts a little against its media).
    var tick: Int64
    /// The source's ID (the range's own may carry a suffix when the source reused it).
    var sourceID: String
    /// An OUT not yet closed by its IN.
    var isOpen: Bool
}

/// Splices (`SpliceBoard`): which segment each belongs to, the EXT-X-DATERANGE and CUE tags that
/// mark it. A cutting splice (OUT, IN) belongs to the segment that starts at (or first after) its
/// tick, placed when that segment starts, so an LL-HLS playlist shows it with the segment's first
/// part; its START-DATE is that segment's EXT-X-PROGRAM-DATE-TIME. A command belongs to the segment
/// its tick falls in, dated by its offset in it, placed when the segment closes.
extension HLSWriter {
    /// A segment starts at `tick`: the OUTs and INs at or before it that no segment has taken.
    func placeCuttingSplices(sequence: Int, start: Double, tick: Int64) {
        openSegmentMarkers = []
        guard let board = spliceBoard else { return }
        let due = board.entries(before: tick + 1).filter { $0.splice.cuts && !placedSplices.contains($0.serial) }
        guard !due.isEmpty else { return }
        let date = programDate(start: start, tick: tick)
        for entry in due {
            placedSplices.insert(entry.serial)
            // The section goes on the TS PID just before the splice's IDR (the next keyframe the
            // muxer writes), its splice time moved onto that picture's PTS (`pts_adjustment`).
            if let section = entry.splice.section { enqueueOnPID(section) }
            place(entry.splice, sequence: sequence, date: date)
            switch entry.splice.kind {
            case .out:
                openSegmentMarkers = [.out(duration: entry.splice.plannedDuration ?? entry.splice.duration)]
                cueBreak = (start, entry.splice.plannedDuration ?? entry.splice.duration)
            case .in:
                openSegmentMarkers = [.in]
                cueBreak = nil
            case .command: break
            }
        }
    }

    /// The open segment (`sequence`, ticks before `endTick`) closes: the commands in it are placed,
    /// and at the run's end every splice left. Returns its CUE tags.
    func placeSplices(closing sequence: Int, start: Double, date: Date?, endTick: Int64) -> [CueMarker] {
        var markers = openSegmentMarkers
        openSegmentMarkers = []
        if let board = spliceBoard {
            let due = board.entries(before: endTick).filter { !placedSplices.contains($0.serial) && (!$0.splice.cuts || finished) }
            for entry in due {
                placedSplices.insert(entry.serial)
                let offset = max(0, schedule.grid.seconds(ofTick: entry.splice.tick) - schedule.grid.seconds(ofTick: segmentStartTick))
                place(entry.splice, sequence: sequence, date: entry.splice.cuts ? date : date?.addingTimeInterval(offset))
            }
        }
        if markers.isEmpty, let open = cueBreak {
            markers = [.continuing(elapsed: (max(0, start - open.start) * 1000).rounded() / 1000, duration: open.planned)]
        }
        return markers
    }

    /// Writes (or closes) the range of one splice, starting at `date`.
    private func place(_ splice: OutputSplice, sequence: Int, date: Date?) {
        guard let date else {
            warnings.append("the splice \(splice.id) at tick \(splice.tick) has no program date to place it: no EXT-X-DATERANGE")
            return
        }
        if splice.kind == .in, let i = writtenRanges.lastIndex(where: { $0.sourceID == splice.id && $0.isOpen }) {
            // The IN closes its OUT's range: one tag, its end now known.
            writtenRanges[i].isOpen = false
            let start = writtenRanges[i].range.startDate
            writtenRanges[i].range.scte35In = splice.section?.hex
            writtenRanges[i].range.endDate = date
            let media = schedule.grid.seconds(ofTick: splice.tick) - schedule.grid.seconds(ofTick: writtenRanges[i].tick)
            writtenRanges[i].range.duration = (max(0, media) * 1000).rounded() / 1000
            writtenRanges[i].range.endDate = start.addingTimeInterval(writtenRanges[i].range.duration!)
            return
        }
        let source = splice.dateRange
        // A source that reuses an ID (splice_event_id wraps, a new break) gets a range of its own.
        let id = writtenRanges.contains { $0.range.id == splice.id } ? "\(splice.id)-\(splice.tick)" : splice.id
        var range = DateRange(id: id, rangeClass: source?.rangeClass, startDate: date, cue: source?.cue,
                              plannedDuration: splice.plannedDuration, endOnNext: source?.endOnNext ?? false,
                              clientAttributes: source?.clientAttributes ?? [])
        let hex = splice.section?.hex
        switch splice.kind {
        case .out: range.scte35Out = hex
        case .in: range.scte35In = hex
        case .command: range.scte35Command = hex
        }
        if let duration = splice.duration, !range.endOnNext {
            range.duration = duration
            range.endDate = date.addingTimeInterval(duration)
        }
        writtenRanges.append(WrittenRange(sequence: sequence, range: range, tick: splice.tick, sourceID: splice.id,
                                          isOpen: splice.kind == .out && range.duration == nil))
    }

    /// The ranges a playlist listing the segments from `firstListed` carries (before `segmentCount`
    /// listed, the open segment's placed after them), each before the segment it starts at. A range
    /// leaves with its segment, unless it is still open or ends within the listed segments.
    func dateRanges(firstListed: Int, listedCount: Int, includingOpen: Bool, windowStart: Date?) -> [DateRange] {
        guard options.adMarkers.writesDateRanges else { return [] }
        let openSequence = firstListed + listedCount
        return writtenRanges.compactMap { written in
            if written.sequence >= openSequence, !includingOpen { return nil }
            if written.sequence < firstListed {
                // Its segment has left the window: kept while its break is open or ends inside the window.
                let endsInside = written.range.endDate.map { end in windowStart.map { end > $0 } ?? false } ?? false
                guard written.isOpen || endsInside else { return nil }
            }
            var range = written.range
            range.position = max(0, min(written.sequence, openSequence) - firstListed)
            return range
        }
    }

    /// Ranges of segments deleted long ago are forgotten.
    func forgetOldRanges(before sequence: Int) {
        writtenRanges.removeAll { $0.sequence < sequence && !$0.isOpen }
    }
}

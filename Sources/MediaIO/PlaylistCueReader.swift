import Broadcast
import Foundation
import HLS
import HLSClient

/// An HLS input's playlist ad markers turned into `SourceCue`s on the video's clock, one segment at
/// a time, as the demuxer reaches each segment's first video packet.
///
/// - `EXT-X-DATERANGE` is placed by its START-DATE: the segment it falls in (by the segments'
///   `EXT-X-PROGRAM-DATE-TIME` and durations) has its first video pts, and the range starts
///   START-DATE − that segment's date later. It is delivered when that segment begins (a range
///   that started before the segment being read — one announced late, or seen on joining — at
///   once, `isLate`). The playlist repeats it on every reload: delivered once, by ID; when its
///   attributes change (END-DATE, DURATION or SCTE35-IN added) an update follows, an `.in` at its end.
/// - `EXT-X-CUE-OUT`/`-CUE-IN` apply at the start of the segment they stand before; a
///   `-CUE-OUT-CONT` with no OUT seen (a join in the middle of a break) stands for its OUT,
///   `ElapsedTime` before, late.
struct PlaylistCueReader {
    private var ledger = CueLedger()
    /// The break the CUE tags opened, not yet closed: its ID.
    private var openBreak: String?
    private(set) var cues: [SourceCue] = []
    /// Ranges that could not be placed (no EXT-X-PROGRAM-DATE-TIME) or whose SCTE-35 does not read.
    private(set) var rejected = 0

    /// Segment `segment`'s first video packet is out, at `pts` in `timeBase`.
    mutating func segmentStarts(_ segment: FeedSegment, pts: Int64, timeBase: Rational) {
        readCueTags(segment, pts: pts, timeBase: timeBase)
        guard !segment.dateRanges.isEmpty else { return }
        guard let date = segment.programDateTime else { rejected += segment.dateRanges.count; return }
        // Where the next segment's date takes over: a live origin's dates drift a little from the
        // EXTINF sums, and a range between the two belongs to this segment (the last dated before it).
        let end = date.addingTimeInterval(segment.duration + 0.05)
        func at(_ instant: Date) -> Int64 { Self.pts(pts, plus: instant.timeIntervalSince(date), timeBase: timeBase) }
        for range in segment.dateRanges.sorted(by: { $0.startDate < $1.startDate }) {
            // A range of a later segment waits for it (the playlist lists it again).
            guard range.startDate < end else { continue }
            let rangeEnd = range.endDate ?? range.duration.map { range.startDate.addingTimeInterval($0) }
            let verdict = ledger.note(range.id, content: range.attributeList)
            // Over before the segment being read (seen on joining): nothing left to do.
            if verdict == .new, let rangeEnd, rangeEnd < date { continue }
            switch verdict {
            case .seen: continue
            case .new:
                guard var cue = Self.cue(for: range) else { rejected += 1; continue }
                cue.timing = .at(pts: at(range.startDate))
                cue.isLate = range.startDate < date.addingTimeInterval(-0.0005)
                cues.append(cue)
                // An OUT whose end is already known: its return follows.
                if cue.kind == .out, let rangeEnd { cues.append(returning(range, at: at(rangeEnd), late: rangeEnd < date, update: false)) }
            case .update:
                if let rangeEnd {
                    cues.append(returning(range, at: at(rangeEnd), late: rangeEnd < date, update: true))
                } else if var cue = Self.cue(for: range) {
                    (cue.timing, cue.isUpdate, cue.isLate) = (.at(pts: at(range.startDate)), true, range.startDate < date)
                    cues.append(cue)
                }
            }
        }
    }

    /// `pts` moved by `seconds` from a playlist (a START-DATE against a PDT, an ElapsedTime): bounded
    /// to a day either way and saturated, so a hostile date (year 1 or 9999) or a timescale of
    /// billions cannot trap; a range that far off is late or never reached, which is what it is.
    static func pts(_ pts: Int64, plus seconds: Double, timeBase: Rational) -> Int64 {
        let bounded = seconds.isFinite ? min(max(seconds, -86_400), 86_400) : 0
        let units = Int64((bounded * Double(timeBase.denominator) / Double(max(1, timeBase.numerator))).rounded())
        let (sum, overflow) = pts.addingReportingOverflow(units)
        return overflow ? (units < 0 ? .min : .max) : sum
    }

    /// The cue a range starts with: its SCTE35-OUT, -IN or -CMD read, or the range itself.
    static func cue(for range: DateRange) -> SourceCue? {
        let duration = range.duration ?? range.endDate.map { $0.timeIntervalSince(range.startDate) }
        func scte35(_ hex: String, _ kind: SourceCue.Kind) -> SourceCue? {
            guard let section = try? SpliceInfoSection(hex: hex) else { return nil }
            return SourceCue(id: range.id, kind: kind, marker: .scte35(section), timing: .immediate,
                             plannedDuration: range.plannedDuration ?? { if case let .out(s) = section.cue { s } else { nil } }(),
                             duration: duration, dateRange: range)
        }
        if let out = range.scte35Out { return scte35(out, .out) }
        if let into = range.scte35In { return scte35(into, .in) }
        if let command = range.scte35Command {
            // A time signal that opens or closes an avail is an OUT or IN all the same.
            guard let cue = scte35(command, .command), let section = cue.section else { return nil }
            var typed = cue
            switch section.cue {
            case .out: typed.kind = .out
            case .in: typed.kind = .in
            case .command: break
            }
            return typed
        }
        return SourceCue(id: range.id, kind: .command, marker: .dateRange(range), timing: .immediate,
                         plannedDuration: range.plannedDuration, duration: duration, dateRange: range)
    }

    /// The return of a break whose end the range states.
    private func returning(_ range: DateRange, at pts: Int64, late: Bool, update: Bool) -> SourceCue {
        let duration = range.duration ?? range.endDate.map { $0.timeIntervalSince(range.startDate) }
        let marker: SourceCue.Marker = range.scte35In.flatMap { try? SpliceInfoSection(hex: $0) }.map { .scte35($0) } ?? .dateRange(range)
        return SourceCue(id: range.id, kind: .in, marker: marker, timing: .at(pts: pts), plannedDuration: range.plannedDuration,
                         duration: duration, dateRange: range, isUpdate: update, isLate: late)
    }

    private mutating func readCueTags(_ segment: FeedSegment, pts: Int64, timeBase: Rational) {
        for (n, marker) in segment.cueMarkers.enumerated() {
            // A segment read again after a restart brings its tags again.
            guard ledger.note("CUE|\(segment.sequenceNumber)|\(n)", content: marker.tag) == .new else { continue }
            switch marker {
            case let .out(duration):
                let id = "CUE-\(segment.sequenceNumber)"
                openBreak = id
                cues.append(SourceCue(id: id, kind: .out, marker: .cueTag(marker), timing: .at(pts: pts), plannedDuration: duration))
            case let .continuing(elapsed, duration):
                guard openBreak == nil else { continue }
                let id = "CUE-\(segment.sequenceNumber)-joined"
                openBreak = id
                cues.append(SourceCue(id: id, kind: .out, marker: .cueTag(marker), timing: .at(pts: Self.pts(pts, plus: -(elapsed ?? 0), timeBase: timeBase)),
                                      plannedDuration: duration,
                                      isLate: true))
            case .in:
                let id = openBreak ?? "CUE-\(segment.sequenceNumber)"
                openBreak = nil
                cues.append(SourceCue(id: id, kind: .in, marker: .cueTag(marker), timing: .at(pts: pts)))
            }
        }
    }

    mutating func take() -> [SourceCue] {
        defer { cues = [] }
        return cues
    }
}

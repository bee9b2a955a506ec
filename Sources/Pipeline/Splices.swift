import Broadcast
import MediaIO
import Synchronization

/// The cues the read stage takes from the demuxer (`Demuxer.takeCues`), waiting for the tick stage.
/// The read stage posts a packet's cues before it sends the packet on, so a cue is here before any
/// picture it applies to can be shown.
final class CueInbox: Sendable {
    private let pending = Mutex<[SourceCue]>([])

    func post(_ cues: [SourceCue]) {
        guard !cues.isEmpty else { return }
        pending.withLock { $0.append(contentsOf: cues) }
    }

    func take() -> [SourceCue] {
        pending.withLock { cues in
            defer { cues.removeAll() }
            return cues
        }
    }
}

/// A splice as the run placed it: the report's record and the accuracy check's.
public struct PlacedSplice: Sendable, Equatable, Codable {
    public var id: String
    /// "out", "in" or "command".
    public var kind: String
    /// The source time it asked for (seconds from the input's start), nil for "at once".
    public var sourceSeconds: Double?
    /// The output tick that shows it, and that tick's time.
    public var tick: Int64
    public var outputSeconds: Double
    /// It came after the tick that showed its picture: placed on the next picture shown.
    public var late: Bool
    /// The source said "at once" (`splice_immediate_flag`): placed on the next tick.
    public var immediate: Bool
}

/// Decides the output tick of each cue: the first tick that shows a new source picture at or after
/// the cue's time (a quarter of a picture early still counts: a splice time rounded to the 90 kHz
/// clock). A picture the tick grid does not show (a lower `--fps`) passes its splice to the next one
/// shown, so a splice is at most one output picture late. A cue "at once" is placed on the next tick;
/// one that came after its picture was shown, on the next new picture (and counted late).
public struct SpliceTimer: Sendable {
    /// The video stream's pts of relative time 0 (the decode stage's origin).
    private let origin: Int64
    private var waiting: [(relative: Int64?, cue: SourceCue)] = []
    /// Breaks whose return this timer scheduled from the OUT's `break_auto_return` duration, and
    /// whether that return has been placed: the source's own IN, when it comes first, replaces it;
    /// after it, it is not placed again.
    private var autoReturns: [String: Bool] = [:]
    public private(set) var placed: [PlacedSplice] = []
    private let secondsPerUnit: Double

    /// - Parameters: origin: the video stream's pts of relative time 0; secondsPerUnit: its time base.
    public init(origin: Int64, secondsPerUnit: Double) {
        self.origin = origin
        self.secondsPerUnit = secondsPerUnit
    }

    /// Takes new cues. An update of a range already placed (a DATERANGE given its END-DATE) changes
    /// nothing here: the writer closes a break's range at its IN.
    public mutating func take(_ cues: [SourceCue]) {
        for cue in cues where !cue.isUpdate {
            if cue.kind == .in, let placed = autoReturns[cue.id] {
                if placed { continue }
                waiting.removeAll { $0.cue.id == cue.id && $0.cue.kind == .in && $0.cue.section == nil }
                autoReturns[cue.id] = nil
            }
            // A cue the demuxer calls late (its section came with or after its picture) still has
            // its time: the read stage runs ahead of the ticks, so the picture is usually still to come.
            var relative: Int64?
            if case let .at(pts) = cue.timing {
                // Kept within ±2^62: the comparisons and sums below never trap on a stream's odd times.
                let (difference, overflow) = pts.subtractingReportingOverflow(origin)
                let limit: Int64 = 1 << 62
                relative = overflow ? (pts < 0 ? -limit : limit) : min(max(difference, -limit), limit)
            }
            waiting.append((relative, cue))
        }
        // The order a break's OUT and IN must keep, also when an IN's time came before its OUT's.
        waiting.sort { ($0.relative ?? .min) < ($1.relative ?? .min) }
    }

    /// The cues this tick shows. `relativePts`: the source picture the tick shows (relative, in the
    /// stream's time base), `duration` its length; `isNewFrame`: the tick shows it for the first time.
    public mutating func due(tick: Int64, outputSeconds: Double, showing relativePts: Int64, duration: Int64, isNewFrame: Bool) -> [SourceCue] {
        guard !waiting.isEmpty else { return [] }
        let slack = max(0, duration / 4)
        var due: [SourceCue] = []
        var returns: [(relative: Int64?, cue: SourceCue)] = []
        let ready = waiting.filter { entry in
            guard let relative = entry.relative else { return true }
            return isNewFrame && relative - slack <= relativePts
        }
        guard !ready.isEmpty else { return [] }
        waiting.removeFirst(ready.count)  // sorted: the ready ones are first (a cue "at once" sorts first)
        for entry in ready {
            due.append(entry.cue)
            if entry.cue.kind == .in, autoReturns[entry.cue.id] == false { autoReturns[entry.cue.id] = true }
            if let relative = entry.relative, let back = autoReturn(of: entry.cue, at: relative) { returns.append(back) }
            // Late: shown on a picture more than one picture after its own (it came after the tick
            // that showed its picture).
            let late = entry.relative.map { relativePts - $0 > duration + slack } ?? false
            placed.append(PlacedSplice(id: entry.cue.id, kind: "\(entry.cue.kind)", sourceSeconds: entry.relative.map { Double($0) * secondsPerUnit },
                                       tick: tick, outputSeconds: outputSeconds, late: late,
                                       immediate: entry.cue.timing == .immediate))
        }
        if !returns.isEmpty {
            waiting += returns
            waiting.sort { ($0.relative ?? .min) < ($1.relative ?? .min) }
        }
        return due
    }

    /// A splice insert that leaves the network with `break_auto_return` and a `break_duration`
    /// comes back by itself (SCTE 35 §9.7.2): its IN, `break_duration` after the OUT, unless the
    /// source sends one first.
    private mutating func autoReturn(of cue: SourceCue, at relative: Int64) -> (relative: Int64?, cue: SourceCue)? {
        guard cue.kind == .out, case let .insert(insert)? = cue.section?.command, let breakDuration = insert.breakDuration,
              breakDuration.autoReturn, autoReturns[cue.id] == nil else { return nil }
        // break_duration is 33 bits (under 27 h); the sums saturate all the same, as times from a
        // stream do not bound themselves.
        let units = Int64((Double(breakDuration.ticks) / 90000 / secondsPerUnit).rounded())
        let (at, overflow) = relative.addingReportingOverflow(units)
        guard !overflow else { return nil }
        autoReturns[cue.id] = false
        let (pts, wrapped) = origin.addingReportingOverflow(at)
        let back = SourceCue(id: cue.id, kind: .in, marker: .cueTag(.in), timing: .at(pts: wrapped ? .max : pts),
                             plannedDuration: cue.plannedDuration, duration: Double(breakDuration.ticks) / 90000)
        return (at, back)
    }

    /// Cues still waiting for their picture (the input ended first).
    public var unplaced: Int { waiting.count }
}

import Broadcast
import Foundation
import HLS
import Synchronization

/// Which ad-marker tags an HLS playlist carries (`--ad-markers`).
public enum AdMarkerStyle: String, Sendable, CaseIterable {
    /// `EXT-X-DATERANGE` with the SCTE-35 section as `SCTE35-OUT`/`-IN`/`-CMD` (rfc8216bis §4.4.5.1.1).
    case daterange
    /// The older `EXT-X-CUE-OUT`/`-CUE-OUT-CONT`/`-CUE-IN` that many players and SSAI servers still read.
    case cue
    /// Both.
    case both
    /// Neither: splices still cut segments (and keyframes), the playlist says nothing.
    case none

    var writesDateRanges: Bool { self == .daterange || self == .both }
    var writesCueTags: Bool { self == .cue || self == .both }
}

/// One splice an output carries: the tick (on the writers' `SegmentSchedule` grid) that starts a
/// segment, and what the playlist says there.
public struct OutputSplice: Sendable, Equatable {
    /// The output tick of the splice's picture. An `.out` or `.in` starts a segment (and an LL-HLS
    /// part) exactly there; a `.command` is dated there and cuts nothing.
    public var tick: Int64
    /// The DATERANGE ID (the source's). An `.in` with the ID of an open `.out` closes that range
    /// (END-DATE, DURATION, SCTE35-IN on the same tag).
    public var id: String
    public var kind: SourceCue.Kind
    /// The section, as the output writes it (re-timed to the output's clock if the caller wishes:
    /// `SpliceInfoSection.adjusted(by:)` keeps its command and descriptors).
    public var section: SpliceInfoSection?
    /// The source's DATERANGE (another class passed through, or the one the SCTE-35 came in): its
    /// CLASS, CUE, END-ON-NEXT and client attributes are kept; its dates are replaced by ours.
    public var dateRange: DateRange?
    /// Seconds.
    public var plannedDuration: Double?
    public var duration: Double?

    public init(tick: Int64, id: String, kind: SourceCue.Kind, section: SpliceInfoSection? = nil, dateRange: DateRange? = nil,
                plannedDuration: Double? = nil, duration: Double? = nil) {
        (self.tick, self.id, self.kind, self.section, self.dateRange) = (tick, id, kind, section, dateRange)
        (self.plannedDuration, self.duration) = (plannedDuration, duration)
    }

    /// The splice for a source's cue at output tick `tick`.
    public init(_ cue: SourceCue, tick: Int64) {
        self.init(tick: tick, id: cue.id, kind: cue.kind, section: cue.section, dateRange: cue.dateRange,
                  plannedDuration: cue.plannedDuration, duration: cue.duration)
    }

    /// Whether the splice starts a segment.
    public var cuts: Bool { kind != .command }
}

/// The splices of a run, shared by every writer of it (each rendition's `HLSWriter`, the audio
/// rendition's): the pipeline schedules a splice before it sends the picture of its tick (and forces
/// that picture to be an IDR); each writer cuts there when its packets reach the tick. Thread-safe.
public final class SpliceBoard: Sendable {
    struct Entry: Sendable {
        var serial: Int
        var splice: OutputSplice
    }
    private let state = Mutex<(entries: [Entry], serial: Int)>(([], 0))

    public init() {}

    /// Adds a splice; a second one with the same ID, kind and tick is ignored.
    public func schedule(_ splice: OutputSplice) {
        state.withLock { s in
            guard !s.entries.contains(where: { $0.splice.id == splice.id && $0.splice.kind == splice.kind && $0.splice.tick == splice.tick })
            else { return }
            let at = s.entries.firstIndex { $0.splice.tick > splice.tick } ?? s.entries.count
            s.entries.insert(Entry(serial: s.serial, splice: splice), at: at)
            s.serial += 1
        }
    }

    /// Every splice scheduled, in tick order.
    public var splices: [OutputSplice] { state.withLock { $0.entries.map(\.splice) } }

    /// The first tick in `after+1 ... through` that starts a segment.
    func firstCut(after: Int64, through: Int64) -> Int64? {
        state.withLock { s in s.entries.first { $0.splice.cuts && $0.splice.tick > after && $0.splice.tick <= through }?.splice.tick }
    }

    /// The splices before tick `end`, in tick order.
    func entries(before end: Int64) -> [Entry] {
        state.withLock { s in Array(s.entries.prefix { $0.splice.tick < end }) }
    }
}

import Broadcast
import Foundation
import HLS

/// An ad marker (or another timed range) a source announced, as the read stage takes it from the
/// `Demuxer` (`takeCues()`): what it is, its identity, and the source picture it applies to.
///
/// Sources: an MPEG-TS PID of stream type 0x86 (files, UDP, SRT, an HLS input's TS segments), an
/// HLS playlist's `EXT-X-DATERANGE` (`SCTE35-OUT`/`-IN`/`-CMD`, or another `CLASS` passed through),
/// and the older `EXT-X-CUE-OUT`/`-CUE-OUT-CONT`/`-CUE-IN`.
public struct SourceCue: Sendable, Equatable {
    /// What the source sent.
    public enum Marker: Sendable, Equatable {
        /// A SCTE-35 `splice_info_section` (from a TS PID, or a DATERANGE's hex).
        case scte35(SpliceInfoSection)
        /// A DATERANGE without SCTE-35 (an interstitial, a program boundary): passed through with
        /// its times mapped.
        case dateRange(DateRange)
        /// `EXT-X-CUE-OUT`, `-CUE-OUT-CONT` (a join in the middle of a break) or `-CUE-IN`.
        case cueTag(CueMarker)
    }

    /// What the cue does to the program.
    public enum Kind: Sendable, Equatable {
        /// A break starts (a splice out of the network): the output cuts here.
        case out
        /// The program returns: the output cuts here.
        case `in`
        /// Anything else (a time signal without an avail, a range of another class): carried, not cut.
        case command
    }

    /// When the cue applies.
    public enum Timing: Sendable, Equatable {
        /// At this presentation timestamp of the video stream (its time base, the packets' clock).
        case at(pts: Int64)
        /// At once: when it arrived (SCTE-35 `splice_immediate_flag`, or a time the source did not say).
        case immediate
    }

    /// Stable across playlist reloads and repeated sections: a DATERANGE's ID; `SCTE35-<event id>`
    /// (splice_event_id or segmentation_event_id: a break's OUT and IN share it); `CUE-<MSN>` for
    /// the older tags (the IN takes its OUT's).
    public var id: String
    public var kind: Kind
    public var marker: Marker
    public var timing: Timing
    /// Seconds the break is planned to last (`break_duration`, a segmentation duration,
    /// PLANNED-DURATION, CUE-OUT's duration), when said.
    public var plannedDuration: Double?
    /// Seconds it lasted, once known (a DATERANGE's DURATION or END-DATE).
    public var duration: Double?
    /// The DATERANGE it came in (its CLASS, client attributes), when it came in one.
    public var dateRange: DateRange?
    /// A cue already delivered that the source changed (a DATERANGE given its END-DATE with the IN).
    public var isUpdate: Bool
    /// The cue arrived after a video packet whose pts reaches its time: its picture has gone by.
    public var isLate: Bool

    public init(id: String, kind: Kind, marker: Marker, timing: Timing, plannedDuration: Double? = nil, duration: Double? = nil,
                dateRange: DateRange? = nil, isUpdate: Bool = false, isLate: Bool = false) {
        (self.id, self.kind, self.marker, self.timing) = (id, kind, marker, timing)
        (self.plannedDuration, self.duration, self.dateRange, self.isUpdate, self.isLate) = (plannedDuration, duration, dateRange, isUpdate, isLate)
    }

    /// The SCTE-35 section, when the cue carries one.
    public var section: SpliceInfoSection? {
        if case let .scte35(section) = marker { return section }
        return nil
    }

    /// A cue for a SCTE-35 section (nil for `splice_null`, a heartbeat, and a cancelled event).
    init?(section: SpliceInfoSection, timing: Timing) {
        let kind: Kind
        var planned: Double?
        switch section.cue {
        case let .out(seconds): (kind, planned) = (.out, seconds)
        case .in: kind = .in
        case .command: kind = .command
        }
        switch section.command {
        case .null: return nil
        case let .insert(insert) where insert.isCancel: return nil
        default: break
        }
        self.init(id: Self.id(of: section), kind: kind, marker: .scte35(section), timing: timing, plannedDuration: planned)
    }

    /// `SCTE35-<event id>`: a splice insert's, else the first segmentation descriptor's, else the splice time's.
    static func id(of section: SpliceInfoSection) -> String {
        if case let .insert(insert) = section.command { return "SCTE35-\(insert.eventID)" }
        for case let .segmentation(descriptor) in section.descriptors { return "SCTE35-\(descriptor.eventID)" }
        return "SCTE35-CMD-\(section.spliceTime.map(String.init) ?? "now")"
    }
}

/// What a source has delivered, so a tag repeated on every playlist reload, or a section repeated
/// before its splice (SCTE 67 recommends several), is delivered once; a DATERANGE whose attributes
/// changed is delivered again as an update.
struct CueLedger {
    private var delivered: [String: String] = [:]
    private var order: [String] = []

    /// Whether the cue under `key` with this `content` is new (or changed: `.update`); records it.
    enum Verdict { case new, update, seen }

    mutating func note(_ key: String, content: String) -> Verdict {
        if let known = delivered[key] {
            guard known != content else { return .seen }
            delivered[key] = content
            return .update
        }
        delivered[key] = content
        order.append(key)
        // A live input runs for days: remember the last few hundred cues.
        if order.count > 512 { for old in order.prefix(256) { delivered[old] = nil }; order.removeFirst(256) }
        return .new
    }
}

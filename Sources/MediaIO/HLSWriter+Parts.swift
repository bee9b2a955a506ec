import Foundation
import HLS
import Synchronization

/// Where the open segment and its open part end on the tick grid, and whether the packets of the
/// cutting stream written so far complete them: the writer closes a segment (or part) right after
/// its last picture's packet instead of at the next one, which a live input may deliver a whole
/// segment later. A value, updated once per cutting-stream packet.
///
/// Complete means every tick of the span has its packet: x264 emits one packet per frame it is
/// fed and the tick stage feeds every tick, so the count is exact; with B-frames the last picture
/// in display order comes before the pictures it references, which the count waits for. A span with
/// ticks missing (a live run that skipped to the edge) is never complete early and is cut at the
/// next packet past it, as before.
struct SegmentProgress {
    /// The tick of the segment's first packet.
    let firstTick: Int64
    /// The first tick of the next segment: the schedule's, or a splice's before it.
    private(set) var endTick: Int64
    /// Ticks per part (LL-HLS), nil without parts. Parts are aligned to the segment's first tick.
    let partTicks: Int64?
    private(set) var packets: Int64 = 0
    private(set) var lastTick: Int64 = .min
    /// The open part's first tick and its packets; nil between a closed part and the next packet.
    private(set) var part: (firstTick: Int64, packets: Int64, lastTick: Int64)?

    init(firstTick: Int64, endTick: Int64, partTicks: Int64?) {
        (self.firstTick, self.endTick, self.partTicks) = (firstTick, max(endTick, firstTick + 1), partTicks)
    }

    /// The end (exclusive) of the part that a packet at `tick` belongs in.
    func partEnd(containing tick: Int64) -> Int64 {
        guard let partTicks else { return endTick }
        let index = max(0, tick - firstTick) / partTicks
        return min(endTick, firstTick + (index + 1) * partTicks)
    }

    /// Whether a packet at `tick` starts a new part: none is open, or it is past the open part's end.
    func startsPart(at tick: Int64) -> Bool {
        guard partTicks != nil else { return false }
        guard let part else { return true }
        return tick >= partEnd(containing: part.firstTick)
    }

    /// A splice starts the next segment at `tick`, before the schedule's end (never at or before
    /// the first tick: no segment is empty).
    mutating func end(at tick: Int64) { endTick = max(firstTick + 1, min(endTick, tick)) }

    mutating func openPart(at tick: Int64) { part = (tick, 0, .min) }
    mutating func closePart() { part = nil }

    mutating func note(tick: Int64) {
        packets += 1
        lastTick = max(lastTick, tick)
        if var open = part {
            open.packets += 1
            open.lastTick = max(open.lastTick, tick)
            part = open
        }
    }

    /// Every tick of the segment has its packet.
    var isComplete: Bool { lastTick == endTick - 1 && packets == endTick - firstTick }

    /// Every tick of the open part has its packet.
    var isPartComplete: Bool {
        guard let part else { return false }
        let end = partEnd(containing: part.firstTick)
        return part.lastTick == end - 1 && part.packets == end - part.firstTick
    }
}

/// How far each media playlist of a ladder has got, for the EXT-X-RENDITION-REPORT tags every
/// playlist carries (rfc8216bis §4.4.5.4): each writer records its own after publishing and reads
/// the others' when it renders. Writers run on their own mux threads, hence the lock.
public final class HLSRenditionProgress: Sendable {
    private let last = Mutex<[String: (msn: Int, part: Int?)]>([:])
    /// Every playlist of the ladder (names relative to the folder they share), in the master's order.
    public let playlists: [String]

    public init(playlists: [String]) { self.playlists = playlists }

    func record(_ uri: String, msn: Int, part: Int?) { last.withLock { $0[uri] = (msn, part) } }

    /// Reports for every playlist but `uri` that has published something.
    func reports(excluding uri: String) -> [RenditionReport] {
        let known = last.withLock { $0 }
        return playlists.filter { $0 != uri }.compactMap { other in
            known[other].map { RenditionReport(uri: other, lastMediaSequenceNumber: $0.msn, lastPartIndex: $0.part) }
        }
    }
}

extension HLSPartRecord {
    var partialSegment: PartialSegment { PartialSegment(duration: duration, uri: uri, independent: independent) }
}

extension HLSWriter {
    /// Part `index` of segment file `segment`: `out_00012.m4s` → `out_00012.p3.m4s`.
    static func partName(segment: String, index: Int) -> String {
        let url = segment as NSString
        return "\(url.deletingPathExtension).p\(index).\(url.pathExtension)"
    }
}

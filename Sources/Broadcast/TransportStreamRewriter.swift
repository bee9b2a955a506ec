/// Why MPEG-TS bytes could not be given a SCTE-35 PID.
public enum TransportStreamError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A packet does not start with the sync byte 0x47 (bytes count from the rewriter's first).
    case lostSync(byteOffset: Int)
    /// The PMT section continues in another packet; only one-packet PMTs (FFmpeg's) are rewritten.
    case pmtSpansPackets
    /// The PMT with the SCTE-35 stream added would not fit in one packet.
    case pmtOverflow(sectionBytes: Int, room: Int)
    case malformedTable(String)
    /// The PMT declares the PID chosen for SCTE-35 for another stream.
    case pidInUse(UInt16)

    public var description: String {
        switch self {
        case let .lostSync(offset): "MPEG-TS lost sync at byte \(offset): the muxer's output is not 188-byte packets"
        case .pmtSpansPackets: "the PMT spans TS packets; livefilter adds a SCTE-35 PID only to a PMT that fits one packet (fewer streams, or no SCTE-35 PID)"
        case let .pmtOverflow(bytes, room): "the PMT with a SCTE-35 stream would be \(bytes) bytes, one packet holds \(room): carry fewer streams, or the markers in the playlist only"
        case let .malformedTable(why): "a malformed MPEG-TS table: \(why)"
        case let .pidInUse(pid): "PID \(pid) (0x\(String(pid, radix: 16))) is already another stream's: choose another SCTE-35 PID"
        }
    }
}

/// Gives MPEG-TS output a SCTE-35 PID, as FFmpeg 5.1's mpegts muxer cannot (it writes a data
/// stream as stream_type 0x06 PES; SCTE 35 §8 wants sections on a PID of stream_type 0x86).
///
/// Sits between the muxer and the file, over bytes in arbitrary chunks (a partial packet is kept
/// for the next chunk): it learns the PMT's PID from the PAT, rewrites every PMT it passes (FFmpeg
/// sends one at each segment's start, so every segment stays valid alone) to declare one more
/// stream — stream_type 0x86 on a PID not in use, a `CUEI` registration descriptor in the program
/// info (SCTE 35 §8.1) and a cue_identifier_descriptor (all commands); with a timed ID3 stream, the
/// metadata_pointer_descriptor FFmpeg leaves out — and puts each queued
/// `splice_info_section` into packets of that PID (pointer_field, PUSI, stuffing 0xFF, its own
/// continuity counter) in front of the video PES its placement names.
///
/// A writer that forces the splice's IDR queues the section with `.videoPES(ptsAtLeast:)` (the
/// IDR's PTS on the TS clock) or `.nextKeyframe` before it writes that picture; the muxer's
/// interleaving may hold a few earlier pictures, which is why the placement is a rule, not "now".
/// With `aligningSpliceTime` the section's `pts_adjustment` is rewritten so its splice time is the
/// PTS of the picture it stands in front of (our timeline, not the source's).
public struct TransportStreamRewriter: Sendable {
    /// Where a queued section goes.
    public enum Placement: Sendable, Equatable {
        /// At the next packet boundary once the PMT declaring the PID has been written, never in
        /// front of PSI/SI tables (a section queued between segments goes after the next one's PMT).
        case nextPacket
        /// Before the first packet of the next video PES.
        case nextVideoPES
        /// Before the next video PES whose first packet says random access (FFmpeg sets
        /// `random_access_indicator` on keyframes).
        case nextKeyframe
        /// Before the first video PES whose PTS (90 kHz, mod 2^33, on the TS clock) is at or after this.
        case videoPES(ptsAtLeast: UInt64)
    }

    private struct Queued: Sendable {
        var section: SpliceInfoSection
        var placement: Placement
        var aligningSpliceTime: Bool
    }

    /// The PID the sections go on: nil until the first PMT has been seen.
    public private(set) var scte35PID: UInt16?
    /// Sections written into the stream, and PMTs rewritten.
    public private(set) var sectionsWritten = 0
    public private(set) var tablesRewritten = 0
    /// Bytes of a packet not yet complete: 0 after the muxer has flushed whole packets (a segment cut).
    public var heldBytes: Int { partial.count }
    public var queuedSections: Int { queue.count }

    private let preferredPID: UInt16
    private var queue: [Queued] = []
    private var partial: [UInt8] = []
    private var bytesIn = 0
    private var pmtPID: UInt16?
    private var videoPIDs: [UInt16] = []
    private var continuity: UInt8 = 0
    /// The PMT already had a 0x86 stream: our packets continue its continuity counter.
    private var adoptedPID = false
    /// PIDs that have carried packets: never chosen for SCTE-35.
    private var seen = [UInt64](repeating: 0, count: 128)

    /// - Parameter preferredPID: the SCTE-35 PID, when no stream uses it (else the next free one);
    ///   500 (0x1F4) is common practice. If the PMT already declares a 0x86 stream, that one is used.
    public init(preferredPID: UInt16 = 0x1F4) {
        precondition(preferredPID >= 0x20 && preferredPID < 0x1FFF, "a SCTE-35 PID is an elementary stream PID, 0x0020…0x1FFE")
        self.preferredPID = preferredPID
    }

    /// Queues `section` for the place `placement` names (sections keep their queue order).
    public mutating func enqueue(_ section: SpliceInfoSection, at placement: Placement, aligningSpliceTime: Bool = false) {
        queue.append(Queued(section: section, placement: placement, aligningSpliceTime: aligningSpliceTime))
    }

    /// The bytes to write in place of `bytes`: every complete packet, rewritten or added to.
    public mutating func rewrite(_ bytes: UnsafeRawBufferPointer) throws(TransportStreamError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + partial.count + 188 * 2)
        var index = 0
        if !partial.isEmpty {
            let take = min(188 - partial.count, bytes.count)
            partial += bytes[0..<take]
            index = take
            if partial.count == 188 {
                let packet = partial
                partial = []
                var result: Result<Void, TransportStreamError> = .success(())
                packet.withUnsafeBufferPointer { p in result = Result { () throws(TransportStreamError) in try process(p, into: &out) } }
                try result.get()
            }
        }
        let typed = bytes.bindMemory(to: UInt8.self)
        while bytes.count - index >= 188 {
            try process(UnsafeBufferPointer(rebasing: typed[index..<index + 188]), into: &out)
            index += 188
        }
        partial += bytes[index...]
        return out
    }

    public mutating func rewrite(_ bytes: [UInt8]) throws(TransportStreamError) -> [UInt8] {
        var result: Result<[UInt8], TransportStreamError> = .success([])
        bytes.withUnsafeBytes { raw in result = Result { () throws(TransportStreamError) in try rewrite(raw) } }
        return try result.get()
    }

    // MARK: Packets

    private mutating func process(_ p: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) throws(TransportStreamError) {
        defer { bytesIn += 188 }
        guard p[0] == 0x47 else { throw .lostSync(byteOffset: bytesIn) }
        let pid = UInt16(p[1] & 0x1F) << 8 | UInt16(p[2])
        let unitStart = p[1] & 0x40 != 0
        let control = p[3] >> 4 & 3
        let payload = control & 2 != 0 ? 5 + Int(p[4]) : 4
        let hasPayload = control & 1 != 0 && payload < 188
        seen[Int(pid) >> 6] |= 1 << UInt64(pid & 63)

        // Not in front of the tables a segment starts with (SDT, PAT, PMT): a player that joins
        // there must read the PMT before the PID means anything. After the PMT instead.
        if scte35PID != nil, pid >= 0x20, pid != pmtPID { emit(where: { $0 == .nextPacket }, pts: nil, into: &out) }
        if pid == 0, unitStart, hasPayload {
            learnProgramAssociation(p, payload)
        } else if pid == pmtPID, hasPayload {
            guard unitStart else { throw .pmtSpansPackets }
            out += try programMap(p, payload)
            emit(where: { $0 == .nextPacket }, pts: nil, into: &out)
            return
        } else if pid == scte35PID, adoptedPID, hasPayload {
            continuity = (p[3] & 0x0F + 1) & 0x0F
        } else if unitStart, hasPayload, videoPIDs.contains(pid), !queue.isEmpty {
            let randomAccess = control & 2 != 0 && p[4] > 0 && p[5] & 0x40 != 0
            let pts = Self.presentationTime(p, payload)
            emit(where: { placement in
                switch placement {
                case .nextPacket, .nextVideoPES: true
                case .nextKeyframe: randomAccess
                case let .videoPES(least): pts.map { ($0 &- least) & Self.ptsMask < 1 << 32 } ?? false
                }
            }, pts: pts, into: &out)
        }
        out += p
    }

    /// The PTS of a PES that starts in this packet, when its header says one and lies in it.
    private static func presentationTime(_ p: UnsafeBufferPointer<UInt8>, _ start: Int) -> UInt64? {
        guard start + 14 <= 188, p[start] == 0, p[start + 1] == 0, p[start + 2] == 1, p[start + 7] & 0x80 != 0 else { return nil }
        let b = (start + 9..<start + 14).map { UInt64(p[$0]) }
        return (b[0] >> 1 & 0x07) << 30 | b[1] << 22 | (b[2] >> 1) << 15 | b[3] << 7 | b[4] >> 1
    }

    private static let ptsMask: UInt64 = (1 << 33) - 1

    /// Writes, in queue order, every queued section whose placement `matches`.
    private mutating func emit(where matches: (Placement) -> Bool, pts: UInt64?, into out: inout [UInt8]) {
        guard let pid = scte35PID, !queue.isEmpty else { return }
        var kept: [Queued] = []
        for item in queue {
            guard matches(item.placement) else {
                kept.append(item)
                continue
            }
            var section = item.section
            if item.aligningSpliceTime, let pts, let time = section.spliceTime {
                section = section.adjusted(by: Int64(pts) - Int64(time))
            }
            writeSection(section.bytes, pid: pid, into: &out)
            sectionsWritten += 1
        }
        queue = kept
    }

    /// One section from a packet of its own: pointer_field 0, continued in as many packets as it
    /// needs, the last filled with 0xFF (stuffing after a section ends the packet's sections).
    private mutating func writeSection(_ section: [UInt8], pid: UInt16, into out: inout [UInt8]) {
        var offset = 0
        var first = true
        while first || offset < section.count {
            out += [0x47, (first ? 0x40 : 0) | UInt8(pid >> 8), UInt8(pid & 0xFF), 0x10 | continuity]
            continuity = (continuity + 1) & 0x0F
            var room = 184
            if first {
                out.append(0)
                room -= 1
            }
            let take = min(room, section.count - offset)
            out += section[offset..<offset + take]
            out += repeatElement(0xFF, count: room - take)
            offset += take
            first = false
        }
    }

    // MARK: Tables

    private mutating func learnProgramAssociation(_ p: UnsafeBufferPointer<UInt8>, _ payload: Int) {
        let start = payload + 1 + Int(p[payload])
        guard start + 8 <= 188, p[start] == 0x00 else { return }
        let end = start + 3 + (Int(p[start + 1] & 0x0F) << 8 | Int(p[start + 2]))
        guard end <= 188, end - start >= 12, MPEGCRC32.checksum(p[start..<end]) == 0 else { return }
        // The first program's PMT (HLS and livefilter's files carry one program); number 0 is the NIT.
        for entry in stride(from: start + 8, to: end - 4 - 3, by: 4) where p[entry] != 0 || p[entry + 1] != 0 {
            pmtPID = UInt16(p[entry + 2] & 0x1F) << 8 | UInt16(p[entry + 3])
            return
        }
    }

    /// The PMT packet rewritten: same header and adaptation field, the table with our stream.
    private mutating func programMap(_ p: UnsafeBufferPointer<UInt8>, _ payload: Int) throws(TransportStreamError) -> [UInt8] {
        let packet = Array(p)
        let start = payload + 1 + Int(p[payload])
        guard start < 188 else { throw .malformedTable("PMT: pointer_field points past its packet") }
        var table = try ProgramMapTable(packet, at: start)
        let end = start + 3 + (Int(p[start + 1] & 0x0F) << 8 | Int(p[start + 2]))
        guard packet[end...].allSatisfy({ $0 == 0xFF }) else { throw .malformedTable("PMT: another section follows it in its packet") }

        let declared = table.streams.first { $0.type == 0x86 }
        if scte35PID == nil {
            if let declared {
                scte35PID = declared.pid
                adoptedPID = true
            } else {
                scte35PID = try freePID(table)
            }
        }
        guard let pid = scte35PID else { return packet }
        if !table.streams.contains(where: { $0.type == 0x86 && $0.pid == pid }) {
            guard table.pcrPID != pid, !table.streams.contains(where: { $0.pid == pid }) else { throw .pidInUse(pid) }
            table.streams.append(.init(type: 0x86, pid: pid, descriptors: [Self.cueIdentifier]))
        }
        if !table.programDescriptors.contains(where: { $0.tag == 0x05 && $0.body.starts(with: Self.cuei) }) {
            table.programDescriptors.insert(.init(tag: 0x05, body: Self.cuei), at: 0)
        }
        // Timed ID3 (FFmpeg writes stream type 0x15 with its metadata_descriptor) also wants a
        // metadata_pointer_descriptor in the program info (Apple's timed metadata spec), which FFmpeg 5.1 leaves out.
        let id3 = table.streams.contains { $0.type == 0x15 && $0.descriptors.contains { $0.tag == 0x26 && $0.body.starts(with: Self.id3Formats) } }
        if id3, !table.programDescriptors.contains(where: { $0.tag == 0x25 }) {
            let number = [UInt8(table.programNumber >> 8), UInt8(table.programNumber & 0xFF)]
            table.programDescriptors.append(.init(tag: 0x25, body: Self.id3Formats + [0x00, 0x1F] + number))
        }
        videoPIDs = table.streams.filter { Self.videoTypes.contains($0.type) }.map(\.pid)
        let section = table.section
        guard start + section.count <= 188 else { throw .pmtOverflow(sectionBytes: section.count, room: 188 - start) }
        tablesRewritten += 1
        return Array(packet[..<start]) + section + repeatElement(0xFF, count: 188 - start - section.count)
    }

    /// The preferred PID, or the next one no table names and no packet has used.
    private func freePID(_ table: ProgramMapTable) throws(TransportStreamError) -> UInt16 {
        var pid = preferredPID
        for _ in 0x20..<0x1FFF {
            let used = seen[Int(pid) >> 6] & 1 << UInt64(pid & 63) != 0 || pid == pmtPID || pid == table.pcrPID
                || table.streams.contains { $0.pid == pid }
            if !used { return pid }
            pid = pid == 0x1FFE ? 0x20 : pid + 1
        }
        throw .pidInUse(preferredPID)
    }

    /// registration_descriptor's format_identifier for SCTE-35 ("CUEI", SCTE 35 §8.1).
    private static let cuei: [UInt8] = Array("CUEI".utf8)
    /// metadata application format 0xFFFF and format 0xFF, both identified as "ID3 " (Apple's timed
    /// metadata); a pointer descriptor follows them with service 0, no locator record, carriage flags 0.
    private static let id3Formats: [UInt8] = [0xFF, 0xFF] + Array("ID3 ".utf8) + [0xFF] + Array("ID3 ".utf8)
    /// cue_identifier_descriptor (SCTE 35 §8.2), cue_stream_type 0x01: all commands.
    private static let cueIdentifier = ProgramMapTable.Descriptor(tag: 0x8A, body: [0x01])
    /// MPEG-1/2 video, MPEG-4 part 2, H.264 (and its SVC/MVC), HEVC, CAVS, Dirac, VC-1.
    private static let videoTypes: Set<UInt8> = [0x01, 0x02, 0x10, 0x1B, 0x1F, 0x20, 0x24, 0x42, 0xD1, 0xEA]
}

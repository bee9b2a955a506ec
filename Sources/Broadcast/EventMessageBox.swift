/// Why event messages could not be put into a fragment's bytes.
public enum EventMessageBoxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bytes hold no `moof`: not a fragment of fragmented MP4 (an init segment, or TS).
    case noMovieFragment
    /// A box's size runs past the bytes, or is smaller than its header.
    case malformedBox(offset: Int)
    /// The fragment's `tfhd` gives an absolute `base_data_offset`: bytes put before the `moof`
    /// would move its samples away from where it says they are.
    case absoluteDataOffset

    public var description: String {
        switch self {
        case .noMovieFragment: "no 'moof' box in the fragment: event messages go before a fragment's moof (fMP4 media segments and parts only)"
        case let .malformedBox(offset): "the box at byte \(offset) has a size that does not fit the fragment's bytes: not fragmented MP4 as written"
        case .absoluteDataOffset: "the fragment's tfhd has an absolute base_data_offset: write fragments with default-base-is-moof (FFmpeg's movflag default_base_moof, as CMAF and HLS want) to carry event messages"
        }
    }
}

/// A version-1 `emsg` box (ISO/IEC 23009-1 §5.10.3.3, `DASHEventMessageBox`): how fragmented MP4
/// carries timed metadata FFmpeg 5.1's mp4 muxer has no track for — timed ID3 (AOM's "Carriage of
/// ID3 Timed Metadata in CMAF", the scheme Apple's HLS uses) and SCTE-35 (SCTE 214-3). An `emsg`
/// goes before the `moof` of the fragment whose time span holds it (`inserted(_:into:)`).
public struct EventMessageBox: Sendable, Equatable {
    /// AOM's scheme for ID3 timed metadata: the message is one whole ID3v2 tag.
    public static let id3Scheme = "https://aomedia.org/emsg/ID3"
    /// SCTE 214-3's scheme for a binary SCTE-35 `splice_info_section`.
    public static let scte35Scheme = "urn:scte:scte35:2013:bin"

    public var schemeIDURI: String
    public var value: String
    /// Ticks per second of `presentationTime` and `eventDuration`.
    public var timescale: UInt32
    /// When the event starts, on the media timeline (version 1: absolute, not a segment's delta).
    public var presentationTime: UInt64
    /// nil: unknown (written as 0xFFFFFFFF).
    public var eventDuration: UInt32?
    /// Identifies the event within the scheme: a repeated message has the same id, and a player
    /// acts on it once.
    public var id: UInt32
    public var messageData: [UInt8]

    public init(schemeIDURI: String, value: String = "", timescale: UInt32, presentationTime: UInt64, eventDuration: UInt32? = nil,
                id: UInt32, messageData: [UInt8]) {
        precondition(timescale > 0, "an emsg timescale is ticks per second")
        self.schemeIDURI = schemeIDURI
        self.value = value
        self.timescale = timescale
        self.presentationTime = presentationTime
        self.eventDuration = eventDuration
        self.id = id
        self.messageData = messageData
    }

    /// A timed ID3 tag (the whole ID3v2 tag, header included) at `presentationTime`.
    public static func id3(_ tag: [UInt8], timescale: UInt32, presentationTime: UInt64, id: UInt32) -> EventMessageBox {
        EventMessageBox(schemeIDURI: id3Scheme, timescale: timescale, presentationTime: presentationTime, id: id, messageData: tag)
    }

    /// A SCTE-35 section at `presentationTime` (the splice's picture), lasting the break's
    /// duration when it states one.
    public static func scte35(_ section: SpliceInfoSection, timescale: UInt32, presentationTime: UInt64, eventDuration: UInt32? = nil,
                              id: UInt32) -> EventMessageBox {
        EventMessageBox(schemeIDURI: scte35Scheme, timescale: timescale, presentationTime: presentationTime, eventDuration: eventDuration,
                        id: id, messageData: section.bytes)
    }

    /// The box: size, 'emsg', version 1, flags 0, the fields, the two strings null-terminated, the message.
    public var bytes: [UInt8] {
        var box: [UInt8] = []
        box.reserveCapacity(36 + schemeIDURI.utf8.count + value.utf8.count + messageData.count)
        box += [0, 0, 0, 0] + Array("emsg".utf8) + [1, 0, 0, 0]
        Self.append(timescale, to: &box)
        Self.append(UInt32(presentationTime >> 32), to: &box)
        Self.append(UInt32(truncatingIfNeeded: presentationTime), to: &box)
        Self.append(eventDuration ?? 0xFFFF_FFFF, to: &box)
        Self.append(id, to: &box)
        box += Array(schemeIDURI.utf8) + [0] + Array(value.utf8) + [0]
        box += messageData
        let size = UInt32(box.count)
        box.replaceSubrange(0..<4, with: [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)])
        return box
    }

    /// `fragment` (a media segment or an LL-HLS part: optional `styp`, `sidx`/`prft`…, then
    /// `moof`, `mdat`, …) with `boxes` just before its first `moof`, in order. A `sidx` before it
    /// (FFmpeg's `dash` movflag writes one) has its first reference grown by the bytes added, since
    /// that subsegment now starts with them. The fragment's sample offsets must be relative to its
    /// `moof` (default-base-is-moof, as CMAF and FFmpeg's HLS muxing write them).
    public static func inserted(_ boxes: [EventMessageBox], into fragment: [UInt8]) throws(EventMessageBoxError) -> [UInt8] {
        guard !boxes.isEmpty else { return fragment }
        var fragment = fragment
        var segmentIndex: Range<Int>?
        var offset = 0
        while offset + 8 <= fragment.count {
            var size = UInt64(fragment[offset]) << 24 | UInt64(fragment[offset + 1]) << 16 | UInt64(fragment[offset + 2]) << 8 | UInt64(fragment[offset + 3])
            var header: UInt64 = 8
            if size == 1 {  // a 64-bit largesize follows the type
                guard offset + 16 <= fragment.count else { throw .malformedBox(offset: offset) }
                size = (0..<8).reduce(0) { $0 << 8 | UInt64(fragment[offset + 8 + $1]) }
                header = 16
            } else if size == 0 {  // to the end of the bytes
                size = UInt64(fragment.count - offset)
            }
            guard size >= header, size <= UInt64(fragment.count - offset) else { throw .malformedBox(offset: offset) }
            let type = fragment[offset + 4..<offset + 8]
            if type.elementsEqual("moof".utf8) {
                guard !Self.hasAbsoluteDataOffset(fragment[offset + Int(header)..<offset + Int(size)]) else { throw .absoluteDataOffset }
                let added = boxes.flatMap(\.bytes)
                if let segmentIndex { try growFirstReference(of: segmentIndex, by: added.count, in: &fragment) }
                return Array(fragment[..<offset]) + added + fragment[offset...]
            }
            if type.elementsEqual("sidx".utf8), segmentIndex == nil { segmentIndex = offset..<offset + Int(size) }
            offset += Int(size)
        }
        throw .noMovieFragment
    }

    /// Whether a `traf`'s `tfhd` in these `moof` children has base-data-offset-present (tf_flags 0x000001).
    private static func hasAbsoluteDataOffset(_ children: ArraySlice<UInt8>) -> Bool {
        var offset = children.startIndex
        while offset + 8 <= children.endIndex {
            let size = Int(children[offset]) << 24 | Int(children[offset + 1]) << 16 | Int(children[offset + 2]) << 8 | Int(children[offset + 3])
            guard size >= 8, offset + size <= children.endIndex else { return false }
            let type = children[offset + 4..<offset + 8]
            if type.elementsEqual("traf".utf8), hasAbsoluteDataOffset(children[offset + 8..<offset + size]) { return true }
            if type.elementsEqual("tfhd".utf8), size >= 12, children[offset + 11] & 0x01 != 0 { return true }
            offset += size
        }
        return false
    }

    /// `sidx` (ISO/IEC 14496-12 §8.16.3): after the full box header, reference_ID and timescale,
    /// the earliest presentation time and first offset (32 bits each in version 0, 64 in 1), two
    /// reserved bytes and reference_count; then each reference's type bit and 31-bit size.
    private static func growFirstReference(of box: Range<Int>, by count: Int, in bytes: inout [UInt8]) throws(EventMessageBoxError) {
        guard box.count > 12 else { throw .malformedBox(offset: box.lowerBound) }
        let reference = box.lowerBound + 12 + 8 + (bytes[box.lowerBound + 8] == 0 ? 8 : 16) + 4
        guard reference + 4 <= box.upperBound, bytes[reference - 2] != 0 || bytes[reference - 1] != 0 else { return }
        let word = UInt32(bytes[reference]) << 24 | UInt32(bytes[reference + 1]) << 16 | UInt32(bytes[reference + 2]) << 8 | UInt32(bytes[reference + 3])
        let size = UInt64(word & 0x7FFF_FFFF) + UInt64(count)
        guard size <= 0x7FFF_FFFF else { throw .malformedBox(offset: box.lowerBound) }
        let grown = word & 0x8000_0000 | UInt32(size)
        bytes.replaceSubrange(reference..<reference + 4, with: [UInt8(grown >> 24), UInt8(grown >> 16 & 0xFF), UInt8(grown >> 8 & 0xFF), UInt8(grown & 0xFF)])
    }

    private static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes += [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}

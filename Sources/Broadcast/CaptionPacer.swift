import Foundation

/// One `cc_data` construct of ATSC A/53 closed-caption data, as FFmpeg hands it with a decoded
/// picture (`AV_FRAME_DATA_A53_CC`) and libx264 writes it back as SEI: a marker/validity/type byte
/// (`0xF8 | cc_valid << 2 | cc_type`) and two data bytes.
public struct CaptionTriplet: Sendable, Equatable, CustomStringConvertible {
    public var header: UInt8
    public var data1: UInt8
    public var data2: UInt8

    public init(header: UInt8, data1: UInt8, data2: UInt8) { (self.header, self.data1, self.data2) = (header, data1, data2) }

    /// `cc_type`: 0 and 1 are CEA-608 byte pairs of field 1 (CC1/CC2) and field 2 (CC3/CC4);
    /// 2 and 3 are CEA-708 DTVCC data (3 starts a packet).
    public var type: UInt8 { header & 0x03 }
    public var isValid: Bool { header & 0x04 != 0 }
    /// A 608 pair that says nothing (both bytes 0x80: null characters with odd parity).
    public var isPadding: Bool { !isValid || (type < 2 && data1 & 0x7F == 0 && data2 & 0x7F == 0) }
    public var description: String { String(format: "%02x%02x%02x", header, data1, data2) }

    /// The triplets of an `AV_FRAME_DATA_A53_CC` buffer (a trailing partial triplet is ignored).
    public static func split(_ bytes: some Collection<UInt8>) -> [CaptionTriplet] {
        let bytes = Array(bytes)
        return stride(from: 0, to: bytes.count - bytes.count % 3, by: 3).map {
            CaptionTriplet(header: bytes[$0], data1: bytes[$0 + 1], data2: bytes[$0 + 2])
        }
    }

    public static func join(_ triplets: [CaptionTriplet]) -> [UInt8] { triplets.flatMap { [$0.header, $0.data1, $0.data2] } }
}

/// Re-paces A/53 caption data from the source's pictures onto the output's: the display link
/// repeats a picture (its caption bytes must not be sent twice), leaves pictures out (theirs must
/// not be lost), and `--fps` changes how many pictures carry them. Each source picture's data is
/// queued as it passes the tick stage, shown or not; each output picture takes, in order, at most
/// one CEA-608 pair per field (a decoder takes one per field per frame) and the CEA-708 share of
/// A/53's 9600 bit/s at the output's rate — as caption re-packers do. Padding is dropped on the way
/// in, so a rate change does not make a backlog of nothing.
public struct CaptionPacer: Sendable {
    private var field1: [CaptionTriplet] = []
    private var field2: [CaptionTriplet] = []
    private var dtvcc: [CaptionTriplet] = []
    /// Triplets per output picture: A/53's `cc_count` at this rate (20 at 29.97 and 30, 24 at 25,
    /// 10 at 59.94), the 608 pairs included.
    public let capacity: Int
    /// Bytes in and out, for the report and `/status`.
    public private(set) var bytesIn = 0
    public private(set) var bytesOut = 0
    /// Triplets dropped because the queue held more than `maxBacklog` of one kind (a source that
    /// sends more than the output can carry, for minutes); counted, never silent.
    public private(set) var dropped = 0
    private let maxBacklog: Int

    /// - Parameter outputRate: output pictures per second.
    public init(outputRate: Double) {
        let rate = outputRate.isFinite && outputRate > 0 ? outputRate : 30
        capacity = max(2, min(31, Int((600 / rate).rounded(.toNearestOrAwayFromZero))))
        maxBacklog = max(600, Int(rate * 60))
    }

    /// The caption bytes of one source picture, in presentation order (whether or not it is shown).
    public mutating func append(sourcePicture bytes: some Collection<UInt8>) {
        bytesIn += bytes.count - bytes.count % 3
        for triplet in CaptionTriplet.split(bytes) where !triplet.isPadding {
            switch triplet.type {
            case 0: Self.push(triplet, &field1, &dropped, limit: maxBacklog)
            case 1: Self.push(triplet, &field2, &dropped, limit: maxBacklog)
            default: Self.push(triplet, &dtvcc, &dropped, limit: maxBacklog)
            }
        }
    }

    /// The caption bytes the next output picture carries (empty: none).
    public mutating func nextPicture() -> [UInt8] {
        var out: [CaptionTriplet] = []
        if !field1.isEmpty { out.append(field1.removeFirst()) }
        if !field2.isEmpty { out.append(field2.removeFirst()) }
        // A DTVCC packet's start and its data go in order; a packet may span pictures (A/53 allows it).
        let share = min(dtvcc.count, capacity - out.count)
        out += dtvcc.prefix(share)
        dtvcc.removeFirst(share)
        let bytes = CaptionTriplet.join(out)
        bytesOut += bytes.count
        return bytes
    }

    /// Triplets waiting for a picture.
    public var backlog: Int { field1.count + field2.count + dtvcc.count }

    /// Queues are short (a caption is a few pairs a second); past `limit` the oldest go.
    private static func push(_ triplet: CaptionTriplet, _ queue: inout [CaptionTriplet], _ dropped: inout Int, limit: Int) {
        queue.append(triplet)
        if queue.count > limit {
            dropped += queue.count - limit
            queue.removeFirst(queue.count - limit)
        }
    }
}

/// The caption services a stream's A/53 data carries, named as an HLS master playlist's
/// `INSTREAM-ID` names them: CC1–CC4 for CEA-608 (field 1 carries CC1 and CC2, field 2 CC3 and
/// CC4; a control code's channel bit says which), SERVICE1–63 for CEA-708 (each DTVCC service
/// block's number). Fed with pictures' `cc_data` (a file's first seconds, when a plan probes it).
public struct CaptionServices: Sendable, Equatable {
    private var seen: Set<String> = []
    /// The 608 channel each field's data is on now (a control code switches it).
    private var channel2 = [false, false]
    /// A DTVCC packet being gathered: its bytes, and how many it should have.
    private var packet: [UInt8] = []
    private var packetSize = 0

    public init() {}

    /// One picture's `cc_data`.
    public mutating func add(_ bytes: some Collection<UInt8>) {
        for triplet in CaptionTriplet.split(bytes) where triplet.isValid {
            switch triplet.type {
            case 0, 1: add608(field: Int(triplet.type), triplet.data1 & 0x7F, triplet.data2 & 0x7F)
            case 3:
                finishPacket()
                let code = Int(triplet.data1 & 0x3F)
                packetSize = code == 0 ? 128 : code * 2
                packet = [triplet.data1, triplet.data2]
            default:
                packet += [triplet.data1, triplet.data2]
            }
            if !packet.isEmpty, packet.count >= packetSize { finishPacket() }
        }
    }

    /// INSTREAM-IDs seen, CC1–CC4 first, then SERVICEn in number order.
    public var instreamIDs: [String] {
        let cc = (1...4).map { "CC\($0)" }.filter(seen.contains)
        let services = seen.compactMap { $0.hasPrefix("SERVICE") ? Int($0.dropFirst(7)) : nil }.sorted().map { "SERVICE\($0)" }
        return cc + services
    }

    private mutating func add608(field: Int, _ a: UInt8, _ b: UInt8) {
        guard a != 0 || b != 0 else { return }  // padding
        // Control codes (0x10–0x1F first byte): bit 3 is the data channel (CC1/CC3 or CC2/CC4).
        if (0x10...0x1F).contains(a) { channel2[field] = a & 0x08 != 0 }
        seen.insert("CC\(field * 2 + (channel2[field] ? 2 : 1))")
    }

    /// Service blocks of a whole DTVCC packet: a header (service number, block size), its data.
    private mutating func finishPacket() {
        defer { packet = []; packetSize = 0 }
        guard packet.count > 1 else { return }
        var at = 1
        let end = min(packet.count, max(packetSize, 2))
        while at < end {
            var service = Int(packet[at] >> 5)
            let size = Int(packet[at] & 0x1F)
            guard service != 0, size != 0 else { return }  // a null block ends the packet's blocks
            at += 1
            if service == 7 {
                guard at < end else { return }
                service = Int(packet[at] & 0x3F)
                at += 1
            }
            if (1...63).contains(service) { seen.insert("SERVICE\(service)") }
            at += size
        }
    }
}

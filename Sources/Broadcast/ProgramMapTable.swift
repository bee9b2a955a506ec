/// A `TS_program_map_section` (ISO/IEC 13818-1 §2.4.4.9), read whole and written back whole with
/// a new `section_length` and CRC_32: what `TransportStreamRewriter` changes to declare a PID.
struct ProgramMapTable: Equatable {
    /// A descriptor: its tag and its body (without the tag and length bytes).
    struct Descriptor: Equatable {
        var tag: UInt8
        var body: [UInt8]
    }

    struct Stream: Equatable {
        var type: UInt8
        var pid: UInt16
        var descriptors: [Descriptor]
    }

    var programNumber: UInt16
    /// The byte after program_number: reserved, version_number, current_next_indicator, kept as read.
    var versionByte: UInt8
    var sectionNumber: UInt8
    var lastSectionNumber: UInt8
    var pcrPID: UInt16
    var programDescriptors: [Descriptor]
    var streams: [Stream]

    /// Reads a section that starts at `bytes[start]` (table_id) and lies whole in `bytes`.
    init(_ bytes: [UInt8], at start: Int) throws(TransportStreamError) {
        guard start + 3 <= bytes.count else { throw .pmtSpansPackets }
        guard bytes[start] == 0x02 else { throw .malformedTable("PMT: table_id 0x\(String(bytes[start], radix: 16)), not 0x02") }
        let length = Int(bytes[start + 1] & 0x0F) << 8 | Int(bytes[start + 2])
        let end = start + 3 + length
        guard end <= bytes.count else { throw .pmtSpansPackets }
        guard length >= 13 else { throw .malformedTable("PMT: section_length \(length) is shorter than its fixed fields") }
        guard MPEGCRC32.checksum(bytes[start..<end]) == 0 else { throw .malformedTable("PMT: CRC_32 does not match") }
        programNumber = UInt16(bytes[start + 3]) << 8 | UInt16(bytes[start + 4])
        versionByte = bytes[start + 5]
        sectionNumber = bytes[start + 6]
        lastSectionNumber = bytes[start + 7]
        pcrPID = UInt16(bytes[start + 8] & 0x1F) << 8 | UInt16(bytes[start + 9])
        let infoLength = Int(bytes[start + 10] & 0x0F) << 8 | Int(bytes[start + 11])
        let loopEnd = end - 4
        var position = start + 12
        guard position + infoLength <= loopEnd else { throw .malformedTable("PMT: program_info_length runs past the section") }
        programDescriptors = try Self.descriptors(bytes, position..<position + infoLength)
        position += infoLength
        streams = []
        while position < loopEnd {
            guard position + 5 <= loopEnd else { throw .malformedTable("PMT: a stream entry is cut short") }
            let esInfoLength = Int(bytes[position + 3] & 0x0F) << 8 | Int(bytes[position + 4])
            guard position + 5 + esInfoLength <= loopEnd else { throw .malformedTable("PMT: ES_info_length runs past the section") }
            streams.append(Stream(type: bytes[position], pid: UInt16(bytes[position + 1] & 0x1F) << 8 | UInt16(bytes[position + 2]),
                                  descriptors: try Self.descriptors(bytes, position + 5..<position + 5 + esInfoLength)))
            position += 5 + esInfoLength
        }
    }

    /// The section, CRC_32 included; reserved bits written as ones.
    var section: [UInt8] {
        var body: [UInt8] = [UInt8(programNumber >> 8), UInt8(programNumber & 0xFF), versionByte, sectionNumber, lastSectionNumber,
                             0xE0 | UInt8(pcrPID >> 8), UInt8(pcrPID & 0xFF)]
        let info = Self.bytes(programDescriptors)
        body += [0xF0 | UInt8(info.count >> 8), UInt8(info.count & 0xFF)] + info
        for stream in streams {
            let esInfo = Self.bytes(stream.descriptors)
            body += [stream.type, 0xE0 | UInt8(stream.pid >> 8), UInt8(stream.pid & 0xFF), 0xF0 | UInt8(esInfo.count >> 8), UInt8(esInfo.count & 0xFF)]
            body += esInfo
        }
        let length = body.count + 4
        var section: [UInt8] = [0x02, 0xB0 | UInt8(length >> 8), UInt8(length & 0xFF)] + body
        let crc = MPEGCRC32.checksum(section)
        section += [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
        return section
    }

    private static func descriptors(_ bytes: [UInt8], _ range: Range<Int>) throws(TransportStreamError) -> [Descriptor] {
        var result: [Descriptor] = []
        var position = range.lowerBound
        while position < range.upperBound {
            guard position + 2 <= range.upperBound, position + 2 + Int(bytes[position + 1]) <= range.upperBound else {
                throw .malformedTable("PMT: a descriptor runs past its loop")
            }
            let length = Int(bytes[position + 1])
            result.append(Descriptor(tag: bytes[position], body: Array(bytes[position + 2..<position + 2 + length])))
            position += 2 + length
        }
        return result
    }

    private static func bytes(_ descriptors: [Descriptor]) -> [UInt8] {
        descriptors.flatMap { [$0.tag, UInt8($0.body.count)] + $0.body }
    }
}

import Foundation

/// Why bytes are not a SCTE-35 `splice_info_section` livefilter can carry.
public enum SCTE35Error: Error, Sendable, Equatable, CustomStringConvertible {
    case truncated
    case notASpliceInfoSection(tableID: UInt8)
    case lengthMismatch(declared: Int, actual: Int)
    case badChecksum
    case malformed(String)

    public var description: String {
        switch self {
        case .truncated: "the SCTE-35 section ends before its fields do"
        case let .notASpliceInfoSection(id): "table_id 0x\(String(id, radix: 16)) is not a splice_info_section (0xfc)"
        case let .lengthMismatch(declared, actual): "section_length says \(declared) bytes, \(actual) are there"
        case .badChecksum: "the SCTE-35 section's CRC_32 does not match its bytes"
        case let .malformed(why): "a malformed SCTE-35 section: \(why)"
        }
    }
}

/// A `splice_time()`: when, on the 90 kHz clock before `pts_adjustment`; nil when not specified.
public typealias SplicePTS = UInt64

/// `splice_insert()` (SCTE-35 §9.7.3): a splice out of or back into the network, at a time or at once.
public struct SpliceInsert: Sendable, Equatable {
    public var eventID: UInt32
    public var isCancel: Bool
    public var outOfNetwork: Bool
    public var programSplice: Bool
    public var immediate: Bool
    /// The program's splice time (`program_splice_flag` set and not immediate).
    public var spliceTime: SplicePTS?
    /// Component splices: each component's tag and time.
    public var components: [(tag: UInt8, time: SplicePTS?)]
    /// `break_duration()`: 90 kHz ticks, and whether the splicer returns by itself.
    public var breakDuration: (autoReturn: Bool, ticks: UInt64)?
    public var uniqueProgramID: UInt16
    public var availNum: UInt8
    public var availsExpected: UInt8

    public static func == (a: Self, b: Self) -> Bool {
        a.eventID == b.eventID && a.isCancel == b.isCancel && a.outOfNetwork == b.outOfNetwork && a.programSplice == b.programSplice
            && a.immediate == b.immediate && a.spliceTime == b.spliceTime
            && a.components.map(\.tag) == b.components.map(\.tag) && a.components.map(\.time) == b.components.map(\.time)
            && a.breakDuration?.autoReturn == b.breakDuration?.autoReturn && a.breakDuration?.ticks == b.breakDuration?.ticks
            && a.uniqueProgramID == b.uniqueProgramID && a.availNum == b.availNum && a.availsExpected == b.availsExpected
    }
}

/// The section's command (SCTE-35 §9.7). Commands livefilter does not interpret keep their bytes.
public enum SpliceCommand: Sendable, Equatable {
    case null
    case insert(SpliceInsert)
    /// `time_signal()`: a time for the descriptors (segmentation descriptors say what happens then).
    case timeSignal(SplicePTS?)
    /// `splice_schedule()`, `bandwidth_reservation()`, `private_command()` or a type not defined.
    case other(type: UInt8, bytes: [UInt8])
    /// The command and descriptors are encrypted (`encrypted_packet`): carried, not read.
    case encrypted(type: UInt8)

    public var type: UInt8 {
        switch self {
        case .null: 0x00
        case .insert: 0x05
        case .timeSignal: 0x06
        case let .other(type, _), let .encrypted(type): type
        }
    }
}

/// `segmentation_descriptor()` (SCTE-35 §10.3.3): what a time signal starts or ends.
public struct SegmentationDescriptor: Sendable, Equatable {
    public var eventID: UInt32
    public var isCancel: Bool
    /// `segmentation_type_id` (table 23): 0x22 break start, 0x30 provider advertisement start, …
    public var typeID: UInt8
    /// 90 kHz ticks (40 bits), when stated.
    public var durationTicks: UInt64?
    public var upidType: UInt8
    public var upid: [UInt8]
    public var segmentNumber: UInt8
    public var segmentsExpected: UInt8

    /// The type IDs that open an avail (break, advertisement, placement opportunity, overlay,
    /// promotion, ad block; provider and distributor): each closes with the next ID.
    static let availStarts: Set<UInt8> = [0x22, 0x30, 0x32, 0x34, 0x36, 0x38, 0x3A, 0x3C, 0x3E, 0x44, 0x46]
    public var startsAvail: Bool { !isCancel && Self.availStarts.contains(typeID) }
    public var endsAvail: Bool { !isCancel && typeID > 0 && Self.availStarts.contains(typeID - 1) }
}

/// A splice descriptor: a segmentation descriptor read, any other kept as bytes.
public enum SpliceDescriptor: Sendable, Equatable {
    case segmentation(SegmentationDescriptor)
    case other(tag: UInt8, bytes: [UInt8])
}

/// One SCTE-35 `splice_info_section` (ANSI/SCTE 35 2022 §9.6), as it travels in an MPEG-TS PID
/// (stream type 0x86) or in an HLS `EXT-X-DATERANGE` (`SCTE35-OUT`/`-IN`/`-CMD`, hex). Read once,
/// checked (table ID, length, CRC_32), and kept as its bytes: carrying it on means rewriting only
/// `pts_adjustment` (and the CRC), so every field a downstream splicer reads stays as the source sent it.
public struct SpliceInfoSection: Sendable, Equatable {
    /// The section, CRC included.
    public private(set) var bytes: [UInt8]
    public let protocolVersion: UInt8
    public let isEncrypted: Bool
    /// Added (mod 2^33) to every time in the section to put it on the stream's clock.
    public private(set) var ptsAdjustment: UInt64
    public let tier: UInt16
    public let command: SpliceCommand
    public let descriptors: [SpliceDescriptor]

    static let ptsModulus: UInt64 = 1 << 33

    public init(_ section: some Collection<UInt8>) throws(SCTE35Error) {
        let bytes = Array(section)
        var reader = BitReader(bytes)
        let tableID = UInt8(try reader.bits(8))
        guard tableID == 0xFC else { throw .notASpliceInfoSection(tableID: tableID) }
        try reader.skip(4)  // section_syntax_indicator, private_indicator, sap_type
        let sectionLength = Int(try reader.bits(12))
        guard sectionLength + 3 == bytes.count else { throw .lengthMismatch(declared: sectionLength + 3, actual: bytes.count) }
        guard bytes.count >= 17 else { throw .truncated }
        guard MPEGCRC32.checksum(bytes) == 0 else { throw .badChecksum }
        protocolVersion = UInt8(try reader.bits(8))
        isEncrypted = try reader.flag()
        try reader.skip(6)  // encryption_algorithm
        ptsAdjustment = try reader.bits(33)
        try reader.skip(8)  // cw_index
        tier = UInt16(try reader.bits(12))
        let commandLength = Int(try reader.bits(12))
        let commandType = UInt8(try reader.bits(8))
        self.bytes = bytes
        if isEncrypted {
            command = .encrypted(type: commandType)
            descriptors = []
            return
        }
        let commandStart = reader.byteOffset
        switch commandType {
        case 0x00: command = .null
        case 0x05: command = .insert(try Self.spliceInsert(&reader))
        case 0x06: command = .timeSignal(try Self.spliceTime(&reader))
        default:
            // 0xFFF is the legacy "length not given", readable only for the commands above.
            guard commandLength != 0xFFF else { throw .malformed("command type 0x\(String(commandType, radix: 16)) without a splice_command_length") }
            command = .other(type: commandType, bytes: try reader.bytes(commandLength))
        }
        if commandLength != 0xFFF {
            guard reader.byteOffset - commandStart <= commandLength else { throw .malformed("the command is longer than splice_command_length") }
            try reader.skip((commandStart + commandLength - reader.byteOffset) * 8)
        }
        let loopLength = Int(try reader.bits(16))
        guard loopLength * 8 <= reader.bitsLeft - 32 else { throw .truncated }
        let loopEnd = reader.byteOffset + loopLength
        var descriptors: [SpliceDescriptor] = []
        while reader.byteOffset < loopEnd {
            let tag = UInt8(try reader.bits(8))
            let length = Int(try reader.bits(8))
            guard reader.byteOffset + length <= loopEnd else { throw .malformed("a descriptor runs past the descriptor loop") }
            let body = try reader.bytes(length)
            if tag == 0x02, body.count >= 4, body[0..<4].elementsEqual([0x43, 0x55, 0x45, 0x49]) {  // "CUEI"
                descriptors.append(.segmentation(try Self.segmentation(body)))
            } else {
                descriptors.append(.other(tag: tag, bytes: body))
            }
        }
        self.descriptors = descriptors
    }

    /// From `0xFC30…` (an `EXT-X-DATERANGE` attribute: hexadecimal, the `0x` prefix optional).
    public init(hex: String) throws(SCTE35Error) {
        var digits = Substring(hex)
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") { digits = digits.dropFirst(2) }
        guard digits.count % 2 == 0, digits.count <= 8192 else { throw .malformed("not an even number of hexadecimal digits") }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            guard digits[index..<next].allSatisfy(\.isHexDigit), let byte = UInt8(digits[index..<next], radix: 16) else { throw .malformed("'\(digits[index..<next])' is not hexadecimal") }
            bytes.append(byte)
            index = next
        }
        try self.init(bytes)
    }

    /// `0xFC30…`, as an `EXT-X-DATERANGE`'s `SCTE35-OUT`/`-IN`/`-CMD` attribute writes it.
    public var hex: String { "0x" + bytes.map { String(format: "%02X", $0) }.joined() }

    /// The section on a clock `ticks` (90 kHz) later: `pts_adjustment` moved by that much
    /// (mod 2^33) and the CRC written again; nothing else changes.
    public func adjusted(by ticks: Int64) -> SpliceInfoSection {
        var copy = self
        let modulus = Int64(Self.ptsModulus)
        let adjustment = UInt64(((Int64(ptsAdjustment) + ticks % modulus) % modulus + modulus) % modulus)
        copy.ptsAdjustment = adjustment
        copy.bytes[4] = copy.bytes[4] & 0xFE | UInt8(adjustment >> 32)
        for i in 0..<4 { copy.bytes[5 + i] = UInt8(truncatingIfNeeded: adjustment >> (24 - 8 * UInt64(i))) }
        let crc = MPEGCRC32.checksum(copy.bytes.dropLast(4))
        for i in 0..<4 { copy.bytes[copy.bytes.count - 4 + i] = UInt8(truncatingIfNeeded: crc >> (24 - 8 * UInt32(i))) }
        return copy
    }

    /// When the splice happens on the stream's clock (90 kHz, mod 2^33, `pts_adjustment` added):
    /// a splice insert's program time, or a time signal's; nil for "at once" or no time.
    public var spliceTime: UInt64? {
        let time: SplicePTS? = switch command {
        case let .insert(insert): insert.spliceTime
        case let .timeSignal(time): time
        default: nil
        }
        return time.map { ($0 + ptsAdjustment) % Self.ptsModulus }
    }

    /// What the section does to the program, as a playlist says it: an avail opens (`SCTE35-OUT`,
    /// with its planned duration in seconds when stated), closes (`SCTE35-IN`), or anything else (`SCTE35-CMD`).
    public enum Cue: Sendable, Equatable {
        case out(plannedSeconds: Double?)
        case `in`
        case command
    }

    public var cue: Cue {
        switch command {
        case let .insert(insert) where !insert.isCancel:
            return insert.outOfNetwork ? .out(plannedSeconds: insert.breakDuration.map { Double($0.ticks) / 90_000 }) : .in
        case .timeSignal:
            for case let .segmentation(descriptor) in descriptors {
                if descriptor.startsAvail { return .out(plannedSeconds: descriptor.durationTicks.map { Double($0) / 90_000 }) }
                if descriptor.endsAvail { return .in }
            }
            return .command
        default:
            return .command
        }
    }

    // MARK: Syntax

    private static func spliceTime(_ reader: inout BitReader) throws(SCTE35Error) -> SplicePTS? {
        guard try reader.flag() else {
            try reader.skip(7)
            return nil
        }
        try reader.skip(6)
        return try reader.bits(33)
    }

    private static func spliceInsert(_ reader: inout BitReader) throws(SCTE35Error) -> SpliceInsert {
        var insert = SpliceInsert(eventID: UInt32(try reader.bits(32)), isCancel: try reader.flag(), outOfNetwork: false, programSplice: false,
                                  immediate: false, spliceTime: nil, components: [], breakDuration: nil, uniqueProgramID: 0,
                                  availNum: 0, availsExpected: 0)
        try reader.skip(7)
        guard !insert.isCancel else { return insert }
        insert.outOfNetwork = try reader.flag()
        insert.programSplice = try reader.flag()
        let hasDuration = try reader.flag()
        insert.immediate = try reader.flag()
        try reader.skip(4)  // event_id_compliance_flag, reserved
        if insert.programSplice {
            if !insert.immediate { insert.spliceTime = try spliceTime(&reader) }
        } else {
            let count = Int(try reader.bits(8))
            for _ in 0..<count {
                let tag = UInt8(try reader.bits(8))
                insert.components.append((tag, insert.immediate ? nil : try spliceTime(&reader)))
            }
        }
        if hasDuration {
            let autoReturn = try reader.flag()
            try reader.skip(6)
            insert.breakDuration = (autoReturn, try reader.bits(33))
        }
        insert.uniqueProgramID = UInt16(try reader.bits(16))
        insert.availNum = UInt8(try reader.bits(8))
        insert.availsExpected = UInt8(try reader.bits(8))
        return insert
    }

    private static func segmentation(_ body: [UInt8]) throws(SCTE35Error) -> SegmentationDescriptor {
        var reader = BitReader(body, byteOffset: 4)
        var descriptor = SegmentationDescriptor(eventID: UInt32(try reader.bits(32)), isCancel: try reader.flag(), typeID: 0,
                                                durationTicks: nil, upidType: 0, upid: [], segmentNumber: 0, segmentsExpected: 0)
        try reader.skip(7)
        guard !descriptor.isCancel else { return descriptor }
        let programSegmentation = try reader.flag()
        let hasDuration = try reader.flag()
        try reader.skip(6)  // delivery_not_restricted_flag and the restrictions (or reserved)
        if !programSegmentation {
            let count = Int(try reader.bits(8))
            try reader.skip(count * 48)  // component_tag, reserved, pts_offset
        }
        if hasDuration { descriptor.durationTicks = try reader.bits(40) }
        descriptor.upidType = UInt8(try reader.bits(8))
        let upidLength = Int(try reader.bits(8))
        descriptor.upid = try reader.bytes(upidLength)
        descriptor.typeID = UInt8(try reader.bits(8))
        descriptor.segmentNumber = UInt8(try reader.bits(8))
        descriptor.segmentsExpected = UInt8(try reader.bits(8))
        return descriptor
    }
}

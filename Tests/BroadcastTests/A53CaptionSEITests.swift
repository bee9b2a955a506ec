import Broadcast
import Testing

/// The A/53 caption SEI reader on access units built here from H.264's syntax (§7.3.2.3 SEI,
/// §7.4.1 emulation prevention, Annex B start codes, avcC length prefixes) and A/53 Part 4's
/// `cc_data`, not from the code under test. PipelineTests/A53CaptionSEIOracleTests compares it with
/// what FFmpeg's H.264 decoder attaches to the pictures libx264 wrote.
@Suite("A/53 caption SEI")
struct A53CaptionSEITests {
    /// `user_data_registered_itu_t_t35` carrying `cc_data` (A/53 Part 4 §6.2.3).
    static func a53Payload(_ triplets: [UInt8], country: UInt8 = 0xB5, provider: UInt16 = 0x0031,
                           identifier: String = "GA94", typeCode: UInt8 = 3, processFlag: Bool = true) -> [UInt8] {
        let count = UInt8(triplets.count / 3)
        return [country, UInt8(provider >> 8), UInt8(provider & 0xFF)] + Array(identifier.utf8) + [typeCode,
                (processFlag ? 0x40 : 0) | 0x80 | count, 0xFF] + triplets + [0xFF]
    }

    /// One sei_message: payloadType and payloadSize coded as runs of 0xFF (§7.3.2.3.1).
    static func message(type: Int, _ payload: [UInt8]) -> [UInt8] {
        func coded(_ value: Int) -> [UInt8] { Array(repeating: 0xFF, count: value / 255) + [UInt8(value % 255)] }
        return coded(type) + coded(payload.count) + payload
    }

    /// An SEI NAL unit: header (nal_ref_idc 0, type 6), the messages, rbsp_trailing_bits, and an
    /// emulation-prevention byte wherever two zeros are followed by a byte ≤ 3 (§7.4.1).
    static func seiNAL(_ messages: [[UInt8]]) -> [UInt8] {
        let rbsp: [UInt8] = messages.flatMap { $0 } + [0x80]
        var out: [UInt8] = [0x06]
        var zeros = 0
        for byte in rbsp {
            if zeros == 2, byte <= 3 { out.append(3); zeros = 0 }
            out.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return out
    }

    /// A slice NAL unit's stand-in (type 1), with zeros that a start-code scan must not split on.
    static let slice: [UInt8] = [0x21, 0x9A, 0x00, 0x00, 0x03, 0x01, 0x42, 0x17]

    static func annexB(_ units: [[UInt8]]) -> [UInt8] {
        units.enumerated().flatMap { index, unit in (index == 0 ? [0, 0, 0, 1] : [0, 0, 1]) + unit }
    }

    static func lengthPrefixed(_ units: [[UInt8]], size: Int) -> [UInt8] {
        units.flatMap { unit in (0..<size).reversed().map { UInt8(truncatingIfNeeded: unit.count >> (8 * $0)) } + unit }
    }

    /// 608 pairs and 708 data, with zero bytes so emulation prevention is needed inside the payload.
    static let triplets: [UInt8] = [0xFC, 0x94, 0x20, 0xFC, 0x00, 0x00, 0xFD, 0x00, 0x01, 0xFF, 0x02, 0x21, 0xFE, 0x00, 0x00, 0xFE, 0x03, 0x00]

    @Test("Annex B and length-prefixed access units give the same cc_data, emulation prevention removed", arguments: [nil, 1, 2, 4] as [Int?])
    func framings(lengthSize: Int?) {
        // cc_data never holds 00 00 0x (every triplet starts ≥ 0xF8); a message before it can, and
        // the reader must remove its emulation prevention to find where the captions start.
        let zeros = Self.message(type: 5, [0, 0, 1, 0, 0, 0, 0, 3, 0, 0, 2, 9])
        let sei = Self.seiNAL([zeros, Self.message(type: 4, Self.a53Payload(Self.triplets))])
        #expect(sei.count >= zeros.count + Self.message(type: 4, Self.a53Payload(Self.triplets)).count + 2 + 4,
                "the test's SEI needs emulation prevention")
        let aud: [UInt8] = [0x09, 0xF0]
        let units = [aud, sei, Self.slice]
        let bytes = lengthSize.map { Self.lengthPrefixed(units, size: $0) } ?? Self.annexB(units)
        #expect(A53CaptionSEI.captionData(inH264: bytes, lengthSize: lengthSize) == Self.triplets)
    }

    @Test("every A/53 message of an access unit, in order; other SEI payloads and registrations are skipped")
    func severalMessages() {
        let first: [UInt8] = [0xFC, 0xC1, 0xC2]
        let second: [UInt8] = [0xFD, 0x15, 0x2C, 0xFF, 0x41, 0x42]
        let unregistered = Self.message(type: 5, Array(repeating: 0xAB, count: 300))  // payloadSize coded 0xFF 0x2D
        let afd = Self.message(type: 4, [0xB5, 0x00, 0x31] + Array("DTG1".utf8) + [0x41, 0xF8])
        let otherCountry = Self.message(type: 4, Self.a53Payload([0xFC, 0x11, 0x11], country: 0xB4))
        let otherProvider = Self.message(type: 4, Self.a53Payload([0xFC, 0x12, 0x12], provider: 0x002F))
        let notCaptions = Self.message(type: 4, Self.a53Payload([0xFC, 0x13, 0x13], typeCode: 6))
        let notProcessed = Self.message(type: 4, Self.a53Payload([0xFC, 0x14, 0x14], processFlag: false))
        let units = [Self.seiNAL([unregistered, Self.message(type: 4, Self.a53Payload(first)), afd, otherCountry]),
                     Self.seiNAL([otherProvider, notCaptions, notProcessed, Self.message(type: 4, Self.a53Payload(second))]),
                     Self.slice]
        #expect(A53CaptionSEI.captionData(inH264: Self.annexB(units), lengthSize: nil) == first + second)
    }

    @Test("no SEI, or a cut-short one, gives nothing and never traps")
    func malformed() {
        #expect(A53CaptionSEI.captionData(inH264: Self.annexB([Self.slice]), lengthSize: nil).isEmpty)
        let whole = Self.annexB([Self.seiNAL([Self.message(type: 4, Self.a53Payload(Self.triplets))])])
        for cut in 0..<whole.count {
            let bytes = Array(whole.prefix(cut))
            let read = A53CaptionSEI.captionData(inH264: bytes, lengthSize: nil)
            // Only the rbsp_trailing_bits missing: the message is whole, as FFmpeg reads it too.
            #expect(read == (cut == whole.count - 1 ? Self.triplets : []), "cut at \(cut): \(read)")
            _ = A53CaptionSEI.captionData(inH264: bytes, lengthSize: 4)
        }
        // A length prefix longer than what follows.
        #expect(A53CaptionSEI.captionData(inH264: [0, 0, 1, 0, 6, 4], lengthSize: 4).isEmpty)
        // cc_count says more triplets than the payload holds.
        var lying = Self.a53Payload([0xFC, 0x20, 0x20])
        lying[8] = 0xC0 | 9
        #expect(A53CaptionSEI.captionData(inH264: Self.annexB([Self.seiNAL([Self.message(type: 4, lying)])]), lengthSize: nil).isEmpty)
    }
}

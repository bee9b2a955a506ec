/// Reads ATSC A/53 closed-caption data straight from an H.264 access unit's SEI, for the pictures a
/// decoder never outputs (shed under overload: their captions must still reach the viewer).
///
/// The path, as H.264 (§7.3.2.3, D.1.6) and A/53 Part 4 (§6.2.3) spell it: a NAL unit of type 6,
/// its emulation-prevention bytes removed; SEI messages of `payloadType` 4
/// (`user_data_registered_itu_t_t35`) with `itu_t_t35_country_code` 0xB5 (USA),
/// `itu_t_t35_provider_code` 0x0031 (ATSC), `user_identifier` "GA94", `user_data_type_code` 3
/// (`cc_data`): `process_cc_data_flag`, `cc_count`, `em_data`, then `cc_count` triplets. The result
/// is what FFmpeg's decoder attaches to the picture as `AV_FRAME_DATA_A53_CC`: every such message's
/// triplets, in order. Malformed input yields what was read before it, never a trap.
public enum A53CaptionSEI {
    /// The `cc_data` triplets of every A/53 caption SEI in `accessUnit` (empty: none). `lengthSize`:
    /// the NAL units are length-prefixed with that many bytes (avcC: MP4, FLV); nil: Annex B start
    /// codes (MPEG-TS, HLS).
    public static func captionData(inH264 accessUnit: UnsafeRawBufferPointer, lengthSize: Int?) -> [UInt8] {
        var out: [UInt8] = []
        forEachNALUnit(accessUnit.bindMemory(to: UInt8.self), lengthSize: lengthSize) { nal in
            // nal_unit_type 6: SEI. A picture's SEI comes before its first slice.
            guard let header = nal.first, header & 0x1F == 6 else { return }
            messages(rbsp(nal.dropFirst()), into: &out)
        }
        return out
    }

    /// The same, from bytes in an array.
    public static func captionData(inH264 accessUnit: [UInt8], lengthSize: Int?) -> [UInt8] {
        accessUnit.withUnsafeBytes { captionData(inH264: $0, lengthSize: lengthSize) }
    }

    /// Calls `body` with each NAL unit (header byte first) of an Annex B or length-prefixed stream.
    static func forEachNALUnit(_ bytes: UnsafeBufferPointer<UInt8>, lengthSize: Int?, _ body: (Slice<UnsafeBufferPointer<UInt8>>) -> Void) {
        if let lengthSize {
            guard (1...4).contains(lengthSize) else { return }
            var at = 0
            while at + lengthSize <= bytes.count {
                var length = 0
                for i in 0..<lengthSize { length = length << 8 | Int(bytes[at + i]) }
                at += lengthSize
                guard length > 0, length <= bytes.count - at else { return }
                body(bytes[at..<at + length])
                at += length
            }
            return
        }
        // Annex B: a unit runs from after its start code (00 00 01, or 00 00 00 01) to the next.
        var start: Int?
        var i = 0
        while i + 2 < bytes.count {
            if bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 {
                if let s = start {
                    var end = i
                    while end > s, bytes[end - 1] == 0 { end -= 1 }  // trailing_zero_8bits, a 4-byte start code's zero
                    body(bytes[s..<end])
                }
                i += 3
                start = i
            } else {
                i += 1
            }
        }
        if let s = start, s < bytes.count { body(bytes[s..<bytes.count]) }
    }

    /// The raw byte sequence payload: every 0x03 that follows two zero bytes is emulation prevention.
    static func rbsp(_ payload: Slice<UnsafeBufferPointer<UInt8>>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(payload.count)
        var zeros = 0
        for byte in payload {
            if zeros >= 2, byte == 3 {
                zeros = 0
                continue
            }
            zeros = byte == 0 ? zeros + 1 : 0
            out.append(byte)
        }
        return out
    }

    /// Each `sei_message` of an SEI RBSP; A/53 caption payloads append their triplets to `out`.
    static func messages(_ rbsp: [UInt8], into out: inout [UInt8]) {
        var at = 0
        // more_rbsp_data: what is left is more than the trailing bits (0x80).
        while at < rbsp.count, !(rbsp.count - at == 1 && rbsp[at] == 0x80) {
            guard let type = ffCoded(rbsp, &at), let size = ffCoded(rbsp, &at), size <= rbsp.count - at else { return }
            if type == 4 { registeredUserData(rbsp[at..<at + size], into: &out) }
            at += size
        }
    }

    /// payloadType and payloadSize: a run of 0xFF bytes (255 each) and a last byte.
    private static func ffCoded(_ bytes: [UInt8], _ at: inout Int) -> Int? {
        var value = 0
        while at < bytes.count {
            let byte = bytes[at]
            at += 1
            value += Int(byte)
            if byte != 0xFF { return value }
            guard value < 1 << 20 else { return nil }
        }
        return nil
    }

    /// `user_data_registered_itu_t_t35`, when it is ATSC's A/53 `cc_data`.
    private static func registeredUserData(_ payload: ArraySlice<UInt8>, into out: inout [UInt8]) {
        var p = payload
        guard let country = p.popFirst(), country == 0xB5 else { return }
        guard p.count >= 2 + 4 + 1 + 2 else { return }
        let provider = UInt16(p[p.startIndex]) << 8 | UInt16(p[p.startIndex + 1])
        p = p.dropFirst(2)
        guard provider == 0x0031, Array(p.prefix(4)) == Array("GA94".utf8) else { return }
        p = p.dropFirst(4)
        guard p.popFirst() == 3, let flags = p.popFirst() else { return }  // user_data_type_code 3: cc_data
        // process_em_data_flag, process_cc_data_flag, additional_data_flag, cc_count (5 bits).
        guard flags & 0x40 != 0 else { return }
        let count = Int(flags & 0x1F)
        p = p.dropFirst()  // em_data
        // The triplets, then marker_bits (0xFF): a payload without room for both is cut short.
        guard count > 0, p.count > count * 3 else { return }
        out += p.prefix(count * 3)
    }
}

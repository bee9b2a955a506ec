/// RFC 6381 codec strings (`CODECS="avc1.64001f,mp4a.40.2"`) read from the real stream's headers.
public enum CodecStrings {
    /// `avc1.PPCCLL` from H.264 extradata: either an avcC record (byte 0 == 1; bytes 1–3 are profile,
    /// constraint flags and level) or Annex B NAL units (the first SPS's three bytes after its header).
    public static func avc1(extradata: [UInt8]) -> String? {
        if extradata.count >= 4, extradata[0] == 1 {
            return format(profile: extradata[1], constraints: extradata[2], level: extradata[3])
        }
        return avc1(annexB: extradata)
    }

    /// `avc1.PPCCLL` from the first SPS in an Annex B byte stream (extradata or a keyframe packet).
    public static func avc1(annexB bytes: [UInt8]) -> String? {
        for start in nalPayloadStarts(bytes) where start + 3 < bytes.count {
            // nal_unit_type 7 is the SPS. profile_idc is never 0, so no emulation-prevention byte
            // can sit among the three bytes we read.
            if bytes[start] & 0x1F == 7 {
                return format(profile: bytes[start + 1], constraints: bytes[start + 2], level: bytes[start + 3])
            }
        }
        return nil
    }

    /// `mp4a.40.N` from an AudioSpecificConfig (ISO 14496-3 §1.6.2.1): N is the audio object type
    /// (2 for AAC-LC, 5 for HE-AAC, 29 for HE-AACv2).
    public static func mp4a(audioSpecificConfig asc: [UInt8]) -> String? {
        guard let first = asc.first else { return nil }
        var objectType = Int(first >> 3)
        if objectType == 31 {
            // Escape: 32 + the next six bits.
            guard asc.count >= 2 else { return nil }
            objectType = 32 + Int((first & 0x07) << 3 | asc[1] >> 5)
        }
        return objectType > 0 ? "mp4a.40.\(objectType)" : nil
    }

    /// `mp4a.40.N` from an ADTS header (profile field + 1).
    public static func mp4a(adtsHeader h: [UInt8]) -> String? {
        guard h.count >= 7, h[0] == 0xFF, h[1] & 0xF0 == 0xF0 else { return nil }
        return "mp4a.40.\(Int(h[2] >> 6) + 1)"
    }

    /// The H.264 profile_idc and level_idc of an `avc1.PPCCLL` string.
    public static func h264ProfileAndLevel(_ codec: String) -> (profile: Int, constraints: Int, level: Int)? {
        guard codec.hasPrefix("avc1."), codec.count == 11 else { return nil }
        let hex = Array(codec.dropFirst(5))
        guard let p = Int(String(hex[0..<2]), radix: 16), let c = Int(String(hex[2..<4]), radix: 16),
              let l = Int(String(hex[4..<6]), radix: 16) else { return nil }
        return (p, c, l)
    }

    private static func format(profile: UInt8, constraints: UInt8, level: UInt8) -> String {
        "avc1." + hex(profile) + hex(constraints) + hex(level)
    }

    private static func hex(_ b: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(b >> 4)], digits[Int(b & 0x0F)]])
    }

    /// Offsets of the first byte after each 00 00 01 start code.
    private static func nalPayloadStarts(_ b: [UInt8]) -> [Int] {
        var starts: [Int] = []
        var i = 0
        while i + 2 < b.count {
            if b[i] == 0, b[i + 1] == 0, b[i + 2] == 1 {
                starts.append(i + 3)
                i += 3
            } else {
                i += 1
            }
        }
        return starts
    }
}

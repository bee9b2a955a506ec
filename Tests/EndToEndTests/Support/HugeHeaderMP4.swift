import Foundation

/// Makes an MP4 whose headers claim a 65535×65535 picture from a small Baseline H.264 clip, for the
/// `--max-pixels` test: the `tkhd` width/height, the `avc1` sample entry's width/height, and the SPS
/// in `avcC` (4096×4096 macroblocks = 65536×65536, the nearest size an SPS can code) are patched.
/// FFmpeg's SPS parser refuses that size, so nothing overrides the container: ffprobe reports
/// 65535×65535. The clip must have no audio and its `moov` after `mdat` (ffmpeg's default), so the
/// longer SPS moves no chunk offsets.
enum HugeHeaderMP4 {
    static let claimed = 65535

    static func make(from small: URL, to output: URL) throws {
        var bytes = [UInt8](try Data(contentsOf: small))
        // tkhd: width and height are its last 8 bytes, 16.16 fixed point.
        let tkhd = try find("tkhd", in: bytes)
        let tkhdEnd = tkhd - 4 + Int(be32(bytes, tkhd - 4))
        put32(&bytes, tkhdEnd - 8, UInt32(claimed) << 16)
        put32(&bytes, tkhdEnd - 4, UInt32(claimed) << 16)
        // avc1 (VisualSampleEntry): 8 bytes of SampleEntry + 16 of pre_defined/reserved, then width, height.
        let avc1 = try find("avc1", in: bytes, after: try find("stsd", in: bytes))
        put16(&bytes, avc1 + 28, UInt16(claimed))
        put16(&bytes, avc1 + 30, UInt16(claimed))
        // avcC: version, profile, compat, level, lengthSize, numSPS, spsLength(16), sps…
        let avcC = try find("avcC", in: bytes, after: avc1)
        let spsLengthAt = avcC + 4 + 6
        let spsLength = Int(be16(bytes, spsLengthAt))
        let sps = Array(bytes[(spsLengthAt + 2)..<(spsLengthAt + 2 + spsLength)])
        let patched = try patchSPS(sps, widthInMbs: 4096, heightInMbs: 4096)
        let delta = patched.count - sps.count
        bytes.replaceSubrange((spsLengthAt + 2)..<(spsLengthAt + 2 + spsLength), with: patched)
        put16(&bytes, spsLengthAt, UInt16(patched.count))
        // Every box enclosing avcC grows by delta.
        for name in ["moov", "trak", "mdia", "minf", "stbl", "stsd", "avc1", "avcC"] {
            let at = try lastIndex(of: name, in: bytes, before: avcC + 1) - 4
            put32(&bytes, at, be32(bytes, at) + UInt32(bitPattern: Int32(delta)))
        }
        try Data(bytes).write(to: output)
    }

    /// Rewrites a Baseline/Main SPS NAL (with its header byte) with a new size and no cropping.
    static func patchSPS(_ nal: [UInt8], widthInMbs: Int, heightInMbs: Int) throws -> [UInt8] {
        var rbsp: [UInt8] = []  // emulation prevention removed
        var zeros = 0
        for b in nal.dropFirst() {
            if zeros >= 2 && b == 3 { zeros = 0; continue }
            zeros = b == 0 ? zeros + 1 : 0
            rbsp.append(b)
        }
        var r = BitReader(rbsp)
        var w = BitWriter()
        let profile = r.bits(8)
        guard [66, 77, 88].contains(profile) else { throw ToolFailure("SPS profile \(profile): make the clip with -profile:v baseline") }
        w.put(profile, 8); w.put(r.bits(8), 8); w.put(r.bits(8), 8)  // constraints, level
        w.ue(r.ue())                                                     // seq_parameter_set_id
        w.ue(r.ue())                                                     // log2_max_frame_num_minus4
        let pocType = r.ue(); w.ue(pocType)
        if pocType == 0 { w.ue(r.ue()) }
        else if pocType == 1 { throw ToolFailure("pic_order_cnt_type 1 not handled") }
        w.ue(r.ue())                                                     // max_num_ref_frames
        w.put(r.bits(1), 1)                                              // gaps_in_frame_num_allowed
        _ = r.ue(); w.ue(widthInMbs - 1)
        _ = r.ue(); w.ue(heightInMbs - 1)
        let frameMbsOnly = r.bits(1); w.put(frameMbsOnly, 1)
        if frameMbsOnly == 0 { w.put(r.bits(1), 1) }
        w.put(r.bits(1), 1)                                              // direct_8x8_inference
        if r.bits(1) == 1 { for _ in 0..<4 { _ = r.ue() } }              // old cropping dropped
        w.put(0, 1)
        while r.remaining > 0 { w.put(r.bits(1), 1) }                    // VUI and the stop bit, as they were
        var out: [UInt8] = [nal[0]]
        zeros = 0
        for b in w.bytes {
            if zeros >= 2 && b <= 3 { out.append(3); zeros = 0 }
            out.append(b)
            zeros = b == 0 ? zeros + 1 : 0
        }
        return out
    }

    struct BitReader {
        let bytes: [UInt8]
        var position = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        var remaining: Int { bytes.count * 8 - position }
        mutating func bits(_ n: Int) -> Int {
            var v = 0
            for _ in 0..<n {
                v = v << 1 | Int(bytes[position / 8] >> (7 - UInt8(position % 8)) & 1)
                position += 1
            }
            return v
        }
        mutating func ue() -> Int {
            var zeros = 0
            while bits(1) == 0 { zeros += 1 }
            return (1 << zeros) - 1 + bits(zeros)
        }
    }

    struct BitWriter {
        var bytes: [UInt8] = []
        var count = 0
        mutating func put(_ value: Int, _ n: Int) {
            for i in stride(from: n - 1, through: 0, by: -1) {
                if count % 8 == 0 { bytes.append(0) }
                if (value >> i) & 1 == 1 { bytes[bytes.count - 1] |= 1 << (7 - UInt8(count % 8)) }
                count += 1
            }
        }
        mutating func ue(_ value: Int) {
            let v = value + 1
            let length = Int.bitWidth - v.leadingZeroBitCount
            put(0, length - 1)
            put(v, length)
        }
    }

    private static func find(_ type: String, in bytes: [UInt8], after start: Int = 0) throws -> Int {
        let t = Array(type.utf8)
        for i in start..<(bytes.count - 4) where Array(bytes[i..<(i + 4)]) == t { return i }
        throw ToolFailure("no '\(type)' box")
    }

    private static func lastIndex(of type: String, in bytes: [UInt8], before end: Int) throws -> Int {
        let t = Array(type.utf8)
        for i in stride(from: end - 1, through: 0, by: -1) where Array(bytes[i..<(i + 4)]) == t { return i }
        throw ToolFailure("no '\(type)' box")
    }

    private static func be32(_ b: [UInt8], _ i: Int) -> UInt32 {
        UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
    }
    private static func be16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) << 8 | UInt16(b[i + 1]) }
    private static func put32(_ b: inout [UInt8], _ i: Int, _ v: UInt32) {
        for k in 0..<4 { b[i + k] = UInt8(truncatingIfNeeded: v >> (24 - 8 * UInt32(k))) }
    }
    private static func put16(_ b: inout [UInt8], _ i: Int, _ v: UInt16) {
        b[i] = UInt8(v >> 8); b[i + 1] = UInt8(truncatingIfNeeded: v)
    }
}

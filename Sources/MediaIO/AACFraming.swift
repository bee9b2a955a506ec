import CFFmpeg

/// ADTS-framed AAC (from MPEG-TS or a `.aac` file) copied into MP4: FFmpeg's `aac_adtstoasc`
/// filter takes each frame's ADTS header off. The mp4 muxer inserts it by itself only where it
/// writes the moov at the end; an fMP4 init segment (HLS) is written before any packet, so the
/// muxer refused the first ADTS frame ("Malformed AAC bitstream") and the AudioSpecificConfig the
/// moov needs was missing. This owns its `AVBSFContext`.
final class ADTSToRaw {
    private var context: UnsafeMutablePointer<AVBSFContext>?

    init?(parameters: UnsafePointer<AVCodecParameters>, timeBase: AVRational) {
        guard let filter = av_bsf_get_by_name("aac_adtstoasc") else { return nil }
        var ctx: UnsafeMutablePointer<AVBSFContext>?
        guard av_bsf_alloc(filter, &ctx) >= 0, let ctx else { return nil }
        context = ctx
        guard avcodec_parameters_copy(ctx.pointee.par_in, parameters) >= 0 else { return nil }
        ctx.pointee.time_base_in = timeBase
        guard av_bsf_init(ctx) >= 0 else { return nil }
    }

    deinit { av_bsf_free(&context) }

    /// Whether a packet starts with the ADTS sync word (raw AAC never does, as its first bits).
    static func isADTS(_ packet: Packet) -> Bool {
        guard let data = packet.pointer.pointee.data, packet.pointer.pointee.size > 7 else { return false }
        return data[0] == 0xFF && data[1] & 0xF0 == 0xF0
    }

    /// The raw AAC frames of an ADTS-framed packet (one in practice), timestamps kept.
    func convert(_ packet: Packet) throws(MediaError) -> [Packet] {
        guard let context else { return [packet] }
        let code = av_bsf_send_packet(context, packet.pointer)
        if code < 0 { throw .processing(FFmpegError(code: code, operation: "aac_adtstoasc")) }
        var out: [Packet] = []
        while true {
            let p = Packet()
            let received = av_bsf_receive_packet(context, p.pointer)
            if received == lf_averror_eagain() || received == lf_averror_eof() { break }
            if received < 0 { throw .processing(FFmpegError(code: received, operation: "aac_adtstoasc")) }
            out.append(p)
        }
        return out
    }

    /// The 2-byte AudioSpecificConfig (ISO/IEC 14496-3 §1.6.2.1) of a plain AAC stream: object type,
    /// sampling frequency index, channel configuration, and a GASpecificConfig of zeros. nil for a
    /// rate or layout it cannot state in two bytes.
    static func audioSpecificConfig(profile: Int32, sampleRate: Int32, channels: Int32) -> [UInt8]? {
        let rates: [Int32] = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
        guard let frequency = rates.firstIndex(of: sampleRate) else { return nil }
        // FF_PROFILE_AAC_* is the object type minus one; unknown is AAC-LC.
        let objectType = profile >= 0 && profile < 31 ? Int(profile) + 1 : 2
        let configuration: Int
        switch channels {
        case 1...6: configuration = Int(channels)
        case 8: configuration = 7
        default: return nil
        }
        let bits = objectType << 11 | frequency << 7 | configuration << 3
        return [UInt8(bits >> 8), UInt8(bits & 0xFF)]
    }
}

import CFFmpeg
import Broadcast

extension Frame {
    /// The picture's ATSC A/53 closed-caption data (`AV_FRAME_DATA_A53_CC`: `cc_data` triplets, as
    /// FFmpeg's H.264, HEVC and MPEG-2 decoders attach them from the picture's SEI or user data),
    /// empty when it has none.
    public var captionData: [UInt8] {
        guard let side = av_frame_get_side_data(pointer, AV_FRAME_DATA_A53_CC), side.pointee.size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: side.pointee.data, count: Int(side.pointee.size)))
    }

    /// Whether the picture carries caption data (no copy).
    public var hasCaptionData: Bool { av_frame_get_side_data(pointer, AV_FRAME_DATA_A53_CC) != nil }

    /// Replaces the picture's caption data (empty: none). libx264 writes it back as an A/53 SEI
    /// (FFmpeg's `a53cc`, on by default); a repeated or shed picture is given its own, or none.
    public func setCaptionData(_ bytes: [UInt8]) {
        av_frame_remove_side_data(pointer, AV_FRAME_DATA_A53_CC)
        guard !bytes.isEmpty, let side = av_frame_new_side_data(pointer, AV_FRAME_DATA_A53_CC, bytes.count) else { return }
        bytes.withUnsafeBufferPointer { side.pointee.data.update(from: $0.baseAddress!, count: bytes.count) }
    }
}

extension Packet {
    /// The packet's bytes, read-only, for as long as `body` runs (no copy).
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard let data = pointer.pointee.data, pointer.pointee.size > 0 else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeRawBufferPointer(start: data, count: Int(pointer.pointee.size)))
    }

    /// The A/53 caption data in an H.264 packet's SEI (`A53CaptionSEI`): what the decoder would
    /// attach to its picture, for a picture that is not decoded. `lengthSize` as `h264IsIDR`'s.
    public func h264CaptionData(lengthSize: Int?) -> [UInt8] {
        withUnsafeBytes { A53CaptionSEI.captionData(inH264: $0, lengthSize: lengthSize) }
    }
}

import CFFmpeg

extension Frame {
    /// The picture's ATSC A/53 closed-caption data (`AV_FRAME_DATA_A53_CC`: `cc_data` triplets, as
    /// FFmpeg's H.264, HEVC and MPEG-2 decoders attach them from the picture's SEI or user data),
    /// empty when it has none.
    public var captionData: [UInt8] {
        guard let side = av_frame_get_side_data(pointer, AV_FRAME_DATA_A53_CC), side.pointee.size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: side.pointee.data, count: Int(side.pointee.size)))
    }

    /// Replaces the picture's caption data (empty: none). libx264 writes it back as an A/53 SEI
    /// (FFmpeg's `a53cc`, on by default); a repeated or shed picture is given its own, or none.
    public func setCaptionData(_ bytes: [UInt8]) {
        av_frame_remove_side_data(pointer, AV_FRAME_DATA_A53_CC)
        guard !bytes.isEmpty, let side = av_frame_new_side_data(pointer, AV_FRAME_DATA_A53_CC, bytes.count) else { return }
        bytes.withUnsafeBufferPointer { side.pointee.data.update(from: $0.baseAddress!, count: bytes.count) }
    }
}

import CFFmpeg
import class Filters.RGBImage

/// A decoded or to-be-encoded frame that owns its `AVFrame`.
/// One owner at a time; `@unchecked Sendable` so it can move between pipeline stages.
public final class Frame: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<AVFrame>

    init() {
        guard let frame = av_frame_alloc() else { fatalError("av_frame_alloc: out of memory") }
        pointer = frame
    }

    deinit {
        var frame: UnsafeMutablePointer<AVFrame>? = pointer
        av_frame_free(&frame)
    }

    /// Presentation time in the time base of the stream it came from (best effort).
    public var timestamp: Int64? {
        let t = pointer.pointee.best_effort_timestamp
        if t != lf_nopts_value() { return t }
        let p = pointer.pointee.pts
        return p == lf_nopts_value() ? nil : p
    }

    /// The decoder marked this picture a keyframe (an IDR or recovery point of the input).
    public var isKeyframe: Bool { pointer.pointee.key_frame != 0 }

    public var width: Int { Int(pointer.pointee.width) }
    public var height: Int { Int(pointer.pointee.height) }
    public var sampleCount: Int { Int(pointer.pointee.nb_samples) }
    public var sampleRate: Int { Int(pointer.pointee.sample_rate) }
    public var durationInStreamTimeBase: Int64 { pointer.pointee.pkt_duration }
    /// Set when the decoder flagged the frame as damaged.
    public var isCorrupt: Bool { pointer.pointee.flags & AV_FRAME_FLAG_CORRUPT != 0 || pointer.pointee.decode_error_flags != 0 }

    /// A checksum (FNV-1a) of the visible pixels of every plane of an 8-bit planar picture, like
    /// one line of ffmpeg's framemd5: two pictures with equal sums are the same picture.
    public var pictureChecksum: UInt64 {
        var hash: UInt64 = 0xcbf29ce484222325
        guard let descriptor = av_pix_fmt_desc_get(AVPixelFormat(rawValue: pointer.pointee.format)) else { return hash }
        let planes = Int(av_pix_fmt_count_planes(AVPixelFormat(rawValue: pointer.pointee.format)))
        for plane in 0..<planes {
            guard let base = withUnsafePointer(to: pointer.pointee.data, { $0.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { $0[plane] } }) else { continue }
            let stride = Int(withUnsafePointer(to: pointer.pointee.linesize) { $0.withMemoryRebound(to: Int32.self, capacity: 8) { $0[plane] } })
            let chroma = plane == 1 || plane == 2
            let w = chroma ? -((-width) >> Int(descriptor.pointee.log2_chroma_w)) : width
            let h = chroma ? -((-height) >> Int(descriptor.pointee.log2_chroma_h)) : height
            for y in 0..<h {
                let row = base + y * stride
                for x in 0..<w { hash = (hash ^ UInt64(row[x])) &* 0x100000001b3 }
            }
        }
        return hash
    }

    var pts: Int64 {
        get { pointer.pointee.pts }
        set { pointer.pointee.pts = newValue }
    }

    /// A new reference to the same buffers (cheap: no pixel copy).
    func reference() -> Frame {
        let copy = Frame()
        av_frame_ref(copy.pointer, pointer)
        return copy
    }
}

/// A compressed packet that owns its `AVPacket`.
public final class Packet: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<AVPacket>

    public init() {
        guard let packet = av_packet_alloc() else { fatalError("av_packet_alloc: out of memory") }
        pointer = packet
    }

    deinit {
        var packet: UnsafeMutablePointer<AVPacket>? = pointer
        av_packet_free(&packet)
    }

    public var streamIndex: Int { Int(pointer.pointee.stream_index) }

    /// The mark `Demuxer.read` gives at the end of a live input's independent segment when
    /// `marksSegmentEnds` is set: no data, the video stream's index, `AV_PKT_FLAG_DISCARD`.
    public var isSegmentEnd: Bool {
        pointer.pointee.size == 0 && pointer.pointee.data == nil && pointer.pointee.flags & AV_PKT_FLAG_DISCARD != 0
    }

    func makeSegmentEnd(stream: Int) {
        unref()
        pointer.pointee.stream_index = Int32(stream)
        pointer.pointee.flags = AV_PKT_FLAG_DISCARD
    }
    /// A marker for the audio stage, not media: fill the audio with silence to where the tick stage
    /// asked (an input loss). No data, stream index -1.
    public var isSilenceRequest: Bool { pointer.pointee.size == 0 && pointer.pointee.data == nil && pointer.pointee.stream_index == -1 }

    public func markAsSilenceRequest() {
        unref()
        pointer.pointee.stream_index = -1
    }

    public var size: Int { Int(pointer.pointee.size) }

    /// An H.264 packet's picture is referenced by no other (its first slice's `nal_ref_idc` is 0):
    /// a decoder may skip it without harm to the rest. Nil when no slice is found.
    public func h264IsNonReference(lengthSize: Int?) -> Bool? {
        h264FirstSliceHeader(lengthSize: lengthSize).map { ($0 >> 5) & 3 == 0 }
    }

    /// An H.264 packet's picture is an IDR picture (its first slice NAL is of type 5): it starts a
    /// new coded video sequence, referring to nothing before it. Nil when no slice is found.
    public func h264IsIDR(lengthSize: Int?) -> Bool? {
        h264FirstSliceHeader(lengthSize: lengthSize).map { $0 & 0x1f == 5 }
    }

    /// The header byte of the packet's first slice NAL (type 1 or 5). Reads Annex B start codes,
    /// or `lengthSize`-byte length prefixes (avcC: FLV, MP4) when given.
    private func h264FirstSliceHeader(lengthSize: Int?) -> UInt8? {
        guard let data = pointer.pointee.data, pointer.pointee.size > 0 else { return nil }
        let bytes = UnsafeBufferPointer(start: data, count: Int(pointer.pointee.size))
        func slice(_ header: UInt8) -> UInt8? {
            let type = header & 0x1f
            return type == 1 || type == 5 ? header : nil
        }
        if let lengthSize, (1...4).contains(lengthSize) {
            var at = 0
            while at + lengthSize < bytes.count {
                var length = 0
                for i in 0..<lengthSize { length = length << 8 | Int(bytes[at + i]) }
                at += lengthSize
                guard length > 0, at < bytes.count else { return nil }
                if let answer = slice(bytes[at]) { return answer }
                at += length
            }
            return nil
        }
        var i = 0
        while i + 3 < bytes.count {
            if bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 {
                if let answer = slice(bytes[i + 3]) { return answer }
                i += 3
            } else {
                i += 1
            }
        }
        return nil
    }

    func unref() { av_packet_unref(pointer) }
}

extension Frame {
    /// The presentation timestamp, in the time base of whoever reads the frame next.
    public var presentationTimestamp: Int64 {
        get { pointer.pointee.pts }
        set { pointer.pointee.pts = newValue }
    }

    /// Marks the frame as a keyframe request for the encoder (HLS segment boundaries).
    public func requestKeyframe() {
        pointer.pointee.pict_type = AV_PICTURE_TYPE_I
    }

    /// Forgets the decoder's picture type: libx264 would otherwise copy the source's I/P/B decisions.
    public func clearPictureType() {
        pointer.pointee.pict_type = AV_PICTURE_TYPE_NONE
        pointer.pointee.key_frame = 0
    }

    /// Asks the encoder to spend as little as it can on this picture (a repeat of the last one, shed
    /// under overload): one region of interest over the whole picture at the largest quantiser
    /// offset. libx264 then codes it as skips (the reference already is this picture): 3.5 instead
    /// of 8.5 ms at superfast, and a few bytes. Not for keyframes.
    public func markAsCheapRepeat() {
        let size = MemoryLayout<AVRegionOfInterest>.size
        guard let data = av_frame_new_side_data(pointer, AV_FRAME_DATA_REGIONS_OF_INTEREST, size) else { return }
        data.pointee.data.withMemoryRebound(to: AVRegionOfInterest.self, capacity: 1) { roi in
            roi.pointee = AVRegionOfInterest(self_size: UInt32(size), top: 0, bottom: pointer.pointee.height,
                                             left: 0, right: pointer.pointee.width, qoffset: AVRational(num: 1, den: 1))
        }
    }

    /// A new reference to the same picture, so it can be sent again with another timestamp.
    public func newReference() -> Frame { reference() }

    /// An rgb24 frame holding a copy of `image`, for RGB encoders such as PNG.
    public convenience init(copying image: RGBImage) throws(MediaError) {
        self.init()
        let f = pointer
        f.pointee.width = Int32(image.width)
        f.pointee.height = Int32(image.height)
        f.pointee.format = AV_PIX_FMT_RGB24.rawValue
        if av_frame_get_buffer(f, 64) < 0 { throw .invalidSettings("out of memory for an RGB frame") }
        let dst = lf_frame_data(f, 0)!
        let stride = Int(lf_frame_linesize(f, 0))
        for y in 0..<image.height {
            (dst + y * stride).update(from: image.row(y), count: image.width * 3)
        }
    }
}

extension Packet {
    /// Presentation timestamp in the time base of the packet's producer; nil when unset.
    public var presentationTimestamp: Int64? {
        let p = pointer.pointee.pts
        return p == lf_nopts_value() ? nil : p
    }

    public var duration: Int64 {
        get { pointer.pointee.duration }
        set { pointer.pointee.duration = newValue }
    }

    /// Moves pts and dts earlier by `offset` (e.g. to start the output at zero).
    public func shiftTimestamps(by offset: Int64) {
        if pointer.pointee.pts != lf_nopts_value() { pointer.pointee.pts -= offset }
        if pointer.pointee.dts != lf_nopts_value() { pointer.pointee.dts -= offset }
    }
}

extension Packet {
    /// A new packet referencing the same data (no copy), e.g. to write one packet to two sinks.
    public func clone() -> Packet {
        let copy = Packet()
        av_packet_ref(copy.pointer, pointer)
        return copy
    }

    /// Whether the packet starts with a keyframe.
    public var isKeyframe: Bool { pointer.pointee.flags & AV_PKT_FLAG_KEY != 0 }
}

extension Packet {
    /// Takes over `other`'s data, leaving it empty.
    public func take(from other: Packet) {
        av_packet_unref(pointer)
        av_packet_move_ref(pointer, other.pointer)
    }

    /// Decode timestamp (or pts), if set.
    public var decodeTimestamp: Int64? {
        let d = pointer.pointee.dts
        if d != lf_nopts_value() { return d }
        return presentationTimestamp
    }
}

import CFFmpeg

/// Decodes one stream's packets into frames. Owns its `AVCodecContext`.
public final class Decoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    public let timeBase: Rational
    /// An audio decoder's sample rate (0 for video).
    public var sampleRate: Int { Int(context.pointee.sample_rate) }
    /// Frames the decoder flagged as damaged, and packets it rejected.
    public private(set) var decodeErrors = 0

    /// Normal flow of a decoder: never thrown.
    public enum Output {
        case frame(Frame)
        case needsInput
        case endOfStream
    }

    /// Whether `releaseHeldPicture` may be used: H.264 decoded by slice threads only (a frame
    /// thread would answer a packet a few packets later, and each of those would release one more).
    public let releasesHeldPictures: Bool

    /// - Parameter releasingHeldPictures: a live input's decoder, asked to give up the pictures it
    ///   holds for reordering once every earlier picture is out (`releaseHeldPicture`). H.264 only.
    public init(demuxer: Demuxer, streamIndex: Int, releasingHeldPictures: Bool = false) throws(MediaError) {
        let stream = demuxer.stream(streamIndex)
        let par = stream.pointee.codecpar!
        guard let codec = avcodec_find_decoder(par.pointee.codec_id) else {
            throw .decoderMissing(String(cString: avcodec_get_name(par.pointee.codec_id)))
        }
        guard let ctx = avcodec_alloc_context3(codec) else { throw .decoderMissing("out of memory") }
        var owned: UnsafeMutablePointer<AVCodecContext>? = ctx
        do throws(FFmpegError) {
            try check(avcodec_parameters_to_context(ctx, par), "avcodec_parameters_to_context")
            // 5.1 decoders do not fill frame time bases; give them the stream's.
            ctx.pointee.pkt_timebase = stream.pointee.time_base
            ctx.pointee.thread_count = 0
            if releasingHeldPictures && par.pointee.codec_id == AV_CODEC_ID_H264 {
                ctx.pointee.thread_type = FF_THREAD_SLICE
            }
            // A stream that changes to a huge size mid-way is refused, not allocated.
            ctx.pointee.max_pixels = Int64(demuxer.maxPixels)
            try check(avcodec_open2(ctx, codec, nil), "avcodec_open2(\(String(cString: codec.pointee.name)))")
        } catch {
            avcodec_free_context(&owned)
            throw .notMediaFile(demuxer.url, reason: error.description)
        }
        context = ctx
        timeBase = Rational(stream.pointee.time_base)
        releasesHeldPictures = releasingHeldPictures && par.pointee.codec_id == AV_CODEC_ID_H264
    }

    deinit {
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&c)
    }

    /// H.264's NAL framing in this stream's packets: the length prefix's size (avcC: FLV, MP4), or
    /// nil for Annex B start codes (MPEG-TS). Only meaningful when `isH264`.
    public var h264LengthSize: Int? {
        guard let data = context.pointee.extradata, context.pointee.extradata_size >= 5, data[0] == 1 else { return nil }
        return Int(data[4] & 3) + 1
    }

    public var isH264: Bool { context.pointee.codec_id == AV_CODEC_ID_H264 }

    /// Overload shedding (`--overload adapt`): skip decoding pictures nothing references (no
    /// error spreads). Takes effect from the next packet (frame threads copy the field).
    public func skipsNonReferencePictures(_ skips: Bool) {
        context.pointee.skip_frame = skips ? AVDISCARD_NONREF : AVDISCARD_DEFAULT
    }

    /// Sends one packet. A damaged packet is counted, not thrown: the stream goes on.
    public func send(_ packet: Packet) throws(FFmpegError) {
        let code = avcodec_send_packet(context, packet.pointer)
        if code == lf_averror_invaliddata() { decodeErrors += 1; return }
        if code == lf_averror_eagain() {
            // Caller must drain first; the contract of `receive` keeps this from happening.
            throw FFmpegError(code: code, operation: "avcodec_send_packet (decoder full)")
        }
        try check(code, "avcodec_send_packet")
    }

    /// Asks the decoder for the earliest picture it holds for reordering, references kept: a packet
    /// that is only an H.264 end-of-sequence NAL makes FFmpeg's decoder output its lowest-POC delayed
    /// picture (`send_next_delayed_frame`) without the drain that would drop its references. The
    /// caller knows no earlier picture is still to come; `receive` then gives it. Needs
    /// `releasesHeldPictures`. Under `skipsNonReferencePictures` the NAL (nal_ref_idc 0) is skipped.
    public func releaseHeldPicture() throws(FFmpegError) {
        guard releasesHeldPictures else { return }
        let prefix: [UInt8] = h264LengthSize.map { [UInt8](repeating: 0, count: $0 - 1) + [1] } ?? [0, 0, 0, 1]
        let nal = prefix + [0x0A]
        let packet = Packet()
        try check(av_new_packet(packet.pointer, Int32(nal.count)), "av_new_packet")
        nal.withUnsafeBufferPointer { packet.pointer.pointee.data.update(from: $0.baseAddress!, count: nal.count) }
        try send(packet)
    }

    /// Signals end of input so the decoder flushes its delayed frames.
    public func sendEndOfStream() {
        _ = avcodec_send_packet(context, nil)
    }

    /// After `sendEndOfStream` and `receive` down to `.endOfStream`: takes packets again, starting
    /// from a keyframe (references are gone). For a live input drained at each independent segment's end.
    public func resume() {
        avcodec_flush_buffers(context)
    }

    /// `samples` of silence in this audio decoder's output format (what its frames carry), at `pts`
    /// in its time base: what fills an input loss, through the same conversion as decoded audio.
    public func silence(samples: Int, pts: Int64) -> Frame? {
        let frame = Frame()
        let f = frame.pointer
        f.pointee.format = context.pointee.sample_fmt.rawValue
        f.pointee.sample_rate = context.pointee.sample_rate
        f.pointee.nb_samples = Int32(samples)
        var layout = context.pointee.ch_layout
        if layout.order == AV_CHANNEL_ORDER_UNSPEC { _ = lf_channel_layout_default(&layout, layout.nb_channels) }
        guard av_channel_layout_copy(&f.pointee.ch_layout, &layout) >= 0, av_frame_get_buffer(f, 0) >= 0 else { return nil }
        av_samples_set_silence(f.pointee.extended_data, 0, Int32(samples), layout.nb_channels, context.pointee.sample_fmt)
        f.pointee.pts = pts
        return frame
    }

    public func receive() throws(FFmpegError) -> Output {
        let frame = Frame()
        let code = avcodec_receive_frame(context, frame.pointer)
        if code == lf_averror_eagain() { return .needsInput }
        if code == lf_averror_eof() { return .endOfStream }
        if code == lf_averror_invaliddata() { decodeErrors += 1; return .needsInput }
        try check(code, "avcodec_receive_frame")
        if frame.isCorrupt { decodeErrors += 1 }
        return .frame(frame)
    }
}

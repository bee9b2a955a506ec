import CFFmpeg
import struct Filters.FrameSize

/// Encodes frames into packets. Owns its `AVCodecContext`.
public final class Encoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    public let timeBase: Rational
    public let codecName: String

    public enum Output {
        case packet(Packet)
        case needsInput
        case endOfStream
    }

    /// Opens `codecName` after `configure` sets the context's fields and private options.
    init(codecName: String, globalHeader: Bool, configure: (UnsafeMutablePointer<AVCodecContext>) throws(MediaError) -> Void) throws(MediaError) {
        guard let codec = avcodec_find_encoder_by_name(codecName) else { throw .encoderMissing(codecName) }
        guard let ctx = avcodec_alloc_context3(codec) else { throw .encoderMissing("\(codecName): out of memory") }
        var owned: UnsafeMutablePointer<AVCodecContext>? = ctx
        do throws(MediaError) {
            try configure(ctx)
            if globalHeader { ctx.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
            let code = avcodec_open2(ctx, codec, nil)
            if code < 0 {
                throw MediaError.invalidSettings("the \(codecName) encoder rejected the settings: \(ffmpegErrorText(code))")
            }
        } catch {
            avcodec_free_context(&owned)
            throw error
        }
        context = ctx
        timeBase = Rational(ctx.pointee.time_base)
        self.codecName = codecName
    }

    deinit {
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&c)
    }

    /// The pixel format a video encoder takes (yuv420p for H.264, rgb24 for PNG); nil for audio.
    public var inputPixelFormat: PixelFormat? {
        context.pointee.pix_fmt == AV_PIX_FMT_NONE ? nil : PixelFormat(context.pointee.pix_fmt)
    }

    /// The codec's global header (for H.264 with a global header: its SPS and PPS), empty without one.
    public var globalHeader: [UInt8] {
        guard let data = context.pointee.extradata, context.pointee.extradata_size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(context.pointee.extradata_size)))
    }

    /// Samples per frame the encoder wants (1024 for AAC), or 0 when any size goes.
    public var frameSize: Int { Int(context.pointee.frame_size) }

    public func send(_ frame: Frame) throws(FFmpegError) {
        try check(avcodec_send_frame(context, frame.pointer), "encoding (\(codecName))")
    }

    public func sendEndOfStream() throws(FFmpegError) {
        let code = avcodec_send_frame(context, nil)
        if code != lf_averror_eof() { try check(code, "flushing \(codecName)") }
    }

    public func receive() throws(FFmpegError) -> Output {
        let packet = Packet()
        let code = avcodec_receive_packet(context, packet.pointer)
        if code == lf_averror_eagain() { return .needsInput }
        if code == lf_averror_eof() { return .endOfStream }
        try check(code, "avcodec_receive_packet (\(codecName))")
        return .packet(packet)
    }
}

extension Encoder {
    /// libx264 with the given settings, yuv420p, tagged with `color`.
    public static func h264(size: FrameSize, frameRate: Rational, timeBase: Rational, color: ColorDescription,
                            settings: VideoEncoderSettings, globalHeader: Bool) throws(MediaError) -> Encoder {
        try Encoder(codecName: "libx264", globalHeader: globalHeader) { ctx throws(MediaError) in
            ctx.pointee.width = Int32(size.width)
            ctx.pointee.height = Int32(size.height)
            ctx.pointee.pix_fmt = AV_PIX_FMT_YUV420P
            ctx.pointee.time_base = timeBase.av
            ctx.pointee.framerate = frameRate.av
            ctx.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
            ctx.pointee.colorspace = color.avMatrix
            ctx.pointee.color_primaries = color.avPrimaries
            ctx.pointee.color_trc = color.avTransfer
            // Limited whatever `color.range` says: RGBToFrame writes limited-range samples.
            ctx.pointee.color_range = AVCOL_RANGE_MPEG
            ctx.pointee.thread_count = 0
            let priv = ctx.pointee.priv_data
            av_opt_set(priv, "preset", settings.speedPreset.rawValue, 0)
            // A picture's A/53 caption data (`Frame.setCaptionData`) is written as SEI: FFmpeg's
            // default, stated so no later change of defaults drops captions silently.
            av_opt_set_int(priv, "a53cc", 1, 0)
            switch settings.rateControl ?? .crf(23) {
            case let .crf(crf):
                av_opt_set_double(priv, "crf", crf, 0)
            case let .averageBitrate(bps):
                ctx.pointee.bit_rate = Int64(bps)
            }
            if let maxRate = settings.maxRate { ctx.pointee.rc_max_rate = Int64(maxRate) }
            if let bufferSize = settings.bufferSize { ctx.pointee.rc_buffer_size = Int32(clamping: bufferSize) }
            if let profile = settings.profile { av_opt_set(priv, "profile", profile.rawValue, 0) }
            if let level = settings.level {
                guard let idc = H264Level.idc(level) else {
                    throw .invalidSettings("level '\(level)' is not one of \(H264Level.all.joined(separator: ", "))")
                }
                ctx.pointee.level = Int32(idc)
            }
            var params: [String] = []
            if let interval = settings.keyframeInterval {
                let gop = interval.frames(at: frameRate)
                ctx.pointee.gop_size = Int32(gop)
                ctx.pointee.keyint_min = Int32(gop)
                params.append("scenecut=0")
            }
            if settings.fixedKeyframeCadence, !params.contains("scenecut=0") { params.append("scenecut=0") }
            if settings.constantBitRate, case let .averageBitrate(bps)? = settings.rateControl {
                // CBR HRD: the VBV rate equals the target and a one-second buffer; x264 pads with filler.
                ctx.pointee.rc_max_rate = Int64(bps)
                ctx.pointee.rc_buffer_size = Int32(clamping: settings.bufferSize ?? bps)
                av_opt_set(priv, "nal-hrd", "cbr", 0)
            }
            if let stream = settings.parameterSetsOf {
                params += settings.speedPreset.x264Parameters(keepingParameterSetsOf: stream, profile: settings.profile)
            }
            if settings.fixedKeyframeCadence { av_opt_set(priv, "forced-idr", "1", 0) }
            if settings.lowDelay {
                // x264's own low-latency tune; FFmpeg's wrapper would otherwise pick frame threads
                // from the context's thread type, each holding a picture back.
                av_opt_set(priv, "tune", "zerolatency", 0)
                ctx.pointee.thread_type = FF_THREAD_SLICE
            }
            if !params.isEmpty { av_opt_set(priv, "x264-params", params.joined(separator: ":"), 0) }
        }
    }

    /// Lossless PNG for inspecting frames (rgb24).
    public static func png(size: FrameSize, timeBase: Rational) throws(MediaError) -> Encoder {
        try Encoder(codecName: "png", globalHeader: false) { ctx throws(MediaError) in
            ctx.pointee.width = Int32(size.width)
            ctx.pointee.height = Int32(size.height)
            ctx.pointee.pix_fmt = AV_PIX_FMT_RGB24
            ctx.pointee.time_base = timeBase.av
        }
    }

    /// FFmpeg's native AAC-LC encoder.
    public static func aac(sampleRate: Int, channels: Int, bitRate: Int, globalHeader: Bool) throws(MediaError) -> Encoder {
        try Encoder(codecName: "aac", globalHeader: globalHeader) { ctx throws(MediaError) in
            ctx.pointee.sample_rate = Int32(sampleRate)
            ctx.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
            ctx.pointee.bit_rate = Int64(bitRate)
            ctx.pointee.time_base = AVRational(num: 1, den: Int32(sampleRate))
            av_channel_layout_uninit(&ctx.pointee.ch_layout)
            _ = lf_channel_layout_default(&ctx.pointee.ch_layout, Int32(channels))
        }
    }
}

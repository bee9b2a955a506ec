import CFFmpeg

/// Resamples, remixes and re-frames decoded audio for an encoder (AAC wants 1024-sample frames)
/// through a small libavfilter graph: abuffer → aresample → aformat → abuffersink.
public final class AudioConverter {
    private let graph: UnsafeMutablePointer<AVFilterGraph>
    private let source: UnsafeMutablePointer<AVFilterContext>
    private let sink: UnsafeMutablePointer<AVFilterContext>
    /// Time base of frames that come out: 1 / output sample rate.
    public let outputTimeBase: Rational

    public init(decoder: Decoder, sampleRate: Int, channels: Int, frameSize: Int) throws(MediaError) {
        guard let graph = avfilter_graph_alloc() else { throw .invalidSettings("avfilter_graph_alloc: out of memory") }
        self.graph = graph
        let dec = decoder.context.pointee
        var layout = [CChar](repeating: 0, count: 128)
        var inLayout = dec.ch_layout
        if inLayout.order == AV_CHANNEL_ORDER_UNSPEC {
            var def = AVChannelLayout()
            _ = lf_channel_layout_default(&def, inLayout.nb_channels)
            inLayout = def
        }
        _ = withUnsafePointer(to: &inLayout) { av_channel_layout_describe($0, &layout, layout.count) }
        let sampleFormat = av_get_sample_fmt_name(dec.sample_fmt).map { String(cString: $0) } ?? "fltp"
        let tb = decoder.timeBase
        let args = "time_base=\(tb.numerator)/\(tb.denominator):sample_rate=\(dec.sample_rate):sample_fmt=\(sampleFormat):channel_layout=\(String(cString: layout))"
        var src: UnsafeMutablePointer<AVFilterContext>? = nil
        var snk: UnsafeMutablePointer<AVFilterContext>? = nil
        var resample: UnsafeMutablePointer<AVFilterContext>? = nil
        var format: UnsafeMutablePointer<AVFilterContext>? = nil
        var outLayout = AVChannelLayout()
        _ = lf_channel_layout_default(&outLayout, Int32(channels))
        var outLayoutName = [CChar](repeating: 0, count: 128)
        _ = withUnsafePointer(to: &outLayout) { av_channel_layout_describe($0, &outLayoutName, outLayoutName.count) }
        let formatArgs = "sample_fmts=fltp:sample_rates=\(sampleRate):channel_layouts=\(String(cString: outLayoutName))"
        let codes = [
            avfilter_graph_create_filter(&src, avfilter_get_by_name("abuffer"), "in", args, nil, graph),
            avfilter_graph_create_filter(&resample, avfilter_get_by_name("aresample"), "resample", "", nil, graph),
            avfilter_graph_create_filter(&format, avfilter_get_by_name("aformat"), "format", formatArgs, nil, graph),
            avfilter_graph_create_filter(&snk, avfilter_get_by_name("abuffersink"), "out", nil, nil, graph),
        ]
        guard codes.allSatisfy({ $0 >= 0 }), let src, let snk, let resample, let format,
              avfilter_link(src, 0, resample, 0) >= 0, avfilter_link(resample, 0, format, 0) >= 0,
              avfilter_link(format, 0, snk, 0) >= 0, avfilter_graph_config(graph, nil) >= 0 else {
            var g: UnsafeMutablePointer<AVFilterGraph>? = graph
            avfilter_graph_free(&g)
            throw .invalidSettings("cannot convert audio (\(args)) to \(formatArgs)")
        }
        if frameSize > 0 { av_buffersink_set_frame_size(snk, UInt32(frameSize)) }
        source = src
        sink = snk
        outputTimeBase = Rational(1, sampleRate)
    }

    deinit {
        var g: UnsafeMutablePointer<AVFilterGraph>? = graph
        avfilter_graph_free(&g)
    }

    /// Feeds one decoded frame (its pts in the decoder's time base), or nil at end of stream.
    public func send(_ frame: Frame?) throws(FFmpegError) {
        let code = av_buffersrc_add_frame_flags(source, frame?.pointer, Int32(AV_BUFFERSRC_FLAG_KEEP_REF))
        try check(code, "audio conversion")
    }

    /// The next converted frame, if one is ready.
    public func receive() throws(FFmpegError) -> Frame? {
        let frame = Frame()
        let code = av_buffersink_get_frame(sink, frame.pointer)
        if code == lf_averror_eagain() || code == lf_averror_eof() { return nil }
        try check(code, "audio conversion")
        return frame
    }
}

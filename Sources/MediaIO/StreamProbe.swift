import CFFmpeg

/// Probes an opened input's streams (`avformat_find_stream_info`) with every decoder refusing a
/// picture over `maxPixels` instead of allocating it: the one probe every kind of input uses.
/// Returns FFmpeg's code (negative: the probe failed; the caller closes the context).
func probeStreams(_ ctx: UnsafeMutablePointer<AVFormatContext>, maxPixels: Int) -> Int32 {
    let streamCount = Int(ctx.pointee.nb_streams)
    var probeOptions = [OpaquePointer?](repeating: nil, count: max(1, streamCount))
    for i in 0..<streamCount { av_dict_set(&probeOptions[i], "max_pixels", String(maxPixels), 0) }
    defer { for i in 0..<probeOptions.count { av_dict_free(&probeOptions[i]) } }
    return probeOptions.withUnsafeMutableBufferPointer { avformat_find_stream_info(ctx, $0.baseAddress) }
}

import CFFmpeg
import CFFmpegLog

/// A demuxer over bytes livefilter's own code reads — an HLS run of segments (`HLSByteSource`), an
/// SRT listener's connection (`SRTListener`) — through a custom AVIO. FFmpeg frees the format
/// context but not a custom AVIO: `close` frees both.
enum CustomIODemuxer {
    typealias Read = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32

    enum Failure: Error {
        case outOfMemory
        /// avformat_open_input's code (`AVERROR_EXIT`: stopped).
        case opening(Int32)
        /// avformat_find_stream_info's code.
        case probing(Int32)
    }

    /// Opens and probes a demuxer reading through `read` with `source` as its opaque pointer (kept
    /// alive by the caller for the context's life), streams probed with `maxPixels` as their limit.
    static func open(source: AnyObject, read: Read, name: String, format: UnsafePointer<AVInputFormat>?,
                     options: [(String, String)], maxPixels: Int,
                     interrupt: UnsafeMutablePointer<lf_interrupt_state>) -> Result<UnsafeMutablePointer<AVFormatContext>, Failure> {
        guard let ctx = avformat_alloc_context() else { return .failure(.outOfMemory) }
        guard let buffer = av_malloc(1 << 16),
              let pb = avio_alloc_context(buffer.assumingMemoryBound(to: UInt8.self), 1 << 16, 0,
                                          Unmanaged.passUnretained(source).toOpaque(), read, nil, nil) else {
            avformat_free_context(ctx)
            return .failure(.outOfMemory)
        }
        pb.pointee.seekable = 0
        ctx.pointee.pb = pb
        ctx.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        lf_set_interrupt(ctx, interrupt)
        var dict: OpaquePointer? = nil
        defer { av_dict_free(&dict) }
        for (key, value) in options { av_dict_set(&dict, key, value, 0) }
        var opened: UnsafeMutablePointer<AVFormatContext>? = ctx
        let code = avformat_open_input(&opened, name, format, &dict)
        guard code >= 0, let opened else {
            // avformat_open_input frees the context on failure, not our AVIO.
            freeIO(pb)
            return .failure(.opening(code))
        }
        let info = probeStreams(opened, maxPixels: maxPixels)
        if info < 0 {
            close(opened)
            return .failure(.probing(info))
        }
        return .success(opened)
    }

    /// Closes a format context, and its AVIO when it is a custom one.
    static func close(_ ctx: UnsafeMutablePointer<AVFormatContext>) {
        let customIO = ctx.pointee.flags & AVFMT_FLAG_CUSTOM_IO != 0 ? ctx.pointee.pb : nil
        var c: UnsafeMutablePointer<AVFormatContext>? = ctx
        avformat_close_input(&c)
        if let customIO { freeIO(customIO) }
    }

    private static func freeIO(_ pb: UnsafeMutablePointer<AVIOContext>) {
        var io: UnsafeMutablePointer<AVIOContext>? = pb
        av_freep(&io!.pointee.buffer)
        avio_context_free(&io)
    }
}

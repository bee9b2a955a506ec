import CFFmpeg
import Foundation

/// Output containers livefilter writes, chosen by the output path.
public enum OutputContainer: String, Sendable, CaseIterable {
    case mp4, mov, mkv, ts, pngSequence = "png", hls = "m3u8"

    /// The container for a path: by extension, or a PNG sequence for a `%d`-style pattern ending in .png.
    public init?(path: String) {
        let ext = (path as NSString).pathExtension.lowercased()
        if ext == "png" {
            guard path.contains("%") else { return nil }
            self = .pngSequence
            return
        }
        switch ext {
        case "mp4", "m4v": self = .mp4
        case "mov": self = .mov
        case "mkv": self = .mkv
        case "ts": self = .ts
        case "m3u8": self = .hls
        default: return nil
        }
    }

    var muxerName: String {
        switch self {
        case .mp4: "mp4"
        case .mov: "mov"
        case .mkv: "matroska"
        case .ts: "mpegts"
        case .pngSequence: "image2"
        case .hls: "hls"
        }
    }

    public var isImageSequence: Bool { self == .pngSequence }
}

/// Writes encoded streams into one container. Owns its `AVFormatContext`.
public final class Muxer: PacketSink {
    let context: UnsafeMutablePointer<AVFormatContext>
    public let path: String
    /// The name errors mention (the final path when `path` is a temporary one).
    public var displayPath: String
    public let container: OutputContainer
    private var headerWritten = false
    private var trailerWritten = false
    private var sourceTimeBases: [AVRational] = []
    /// Muxer options applied by `writeHeader()`, such as movflags.
    public var headerOptions: [(String, String)] = []

    public init(path: String, container: OutputContainer) throws(MediaError) {
        self.path = path
        self.displayPath = path
        self.container = container
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        let code = avformat_alloc_output_context2(&ctx, nil, container.muxerName, path)
        guard code >= 0, let ctx else {
            throw .unsupportedOutput(path, reason: ffmpegErrorText(code))
        }
        context = ctx
    }

    deinit {
        // An unfinished muxer is an abandoned output: no trailer (faststart would re-open the file).
        if context.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0, context.pointee.pb != nil {
            avio_closep(&context.pointee.pb)
        }
        avformat_free_context(context)
    }

    /// Whether encoders feeding this muxer must put codec headers in extradata.
    public var wantsGlobalHeader: Bool {
        context.pointee.oformat.pointee.flags & AVFMT_GLOBALHEADER != 0
    }

    /// Adds a stream fed by `encoder`; returns its index.
    public func addStream(from encoder: Encoder) throws(MediaError) -> Int {
        guard let stream = avformat_new_stream(context, nil) else { throw .invalidSettings("avformat_new_stream failed") }
        let code = avcodec_parameters_from_context(stream.pointee.codecpar, encoder.context)
        if code < 0 { throw .processing(FFmpegError(code: code, operation: "avcodec_parameters_from_context")) }
        stream.pointee.time_base = encoder.context.pointee.time_base
        if encoder.context.pointee.codec_type == AVMEDIA_TYPE_VIDEO {
            stream.pointee.avg_frame_rate = encoder.context.pointee.framerate
        }
        sourceTimeBases.append(encoder.context.pointee.time_base)
        return Int(stream.pointee.index)
    }

    /// Adds a stream whose packets are copied unchanged from `demuxer`'s stream `index`.
    public func addStream(copying index: Int, of demuxer: Demuxer) throws(MediaError) -> Int {
        let source = demuxer.stream(index)
        guard let stream = avformat_new_stream(context, nil) else { throw .invalidSettings("avformat_new_stream failed") }
        let code = avcodec_parameters_copy(stream.pointee.codecpar, source.pointee.codecpar)
        if code < 0 { throw .processing(FFmpegError(code: code, operation: "avcodec_parameters_copy")) }
        // The source container's tag may mean nothing in this one.
        stream.pointee.codecpar.pointee.codec_tag = 0
        stream.pointee.time_base = source.pointee.time_base
        sourceTimeBases.append(source.pointee.time_base)
        return Int(stream.pointee.index)
    }

    /// Tags a video stream with a display-matrix rotation (degrees clockwise) so players turn it.
    public func setRotation(streamIndex: Int, clockwiseDegrees: Double) {
        guard clockwiseDegrees != 0, let stream = context.pointee.streams[streamIndex] else { return }
        guard let data = av_stream_new_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, 9 * MemoryLayout<Int32>.size) else { return }
        data.withMemoryRebound(to: Int32.self, capacity: 9) { matrix in
            av_display_rotation_set(matrix, -clockwiseDegrees)
        }
    }

    public func writeHeader() throws(MediaError) {
        try writeHeader(options: headerOptions)
    }

    /// Opens the file and writes the header. `options` are muxer options such as movflags.
    public func writeHeader(options: [(String, String)]) throws(MediaError) {
        if context.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 {
            let code = avio_open(&context.pointee.pb, path, AVIO_FLAG_WRITE)
            if code < 0 { throw .outputNotWritable(displayPath, reason: ffmpegErrorText(code)) }
        }
        var dict: OpaquePointer? = nil
        defer { av_dict_free(&dict) }
        for (key, value) in options { av_dict_set(&dict, key, value, 0) }
        let code = avformat_write_header(context, &dict)
        if code < 0 { throw failure(code, "writing the \(container.rawValue) header of \(displayPath)") }
        headerWritten = true
        // Options the muxer did not consume are typos or wrong for this container: say so.
        if let left = av_dict_get(dict, "", nil, AV_DICT_IGNORE_SUFFIX) {
            throw .invalidSettings("muxer option '\(String(cString: left.pointee.key))' is not known to \(container.muxerName)")
        }
    }

    /// The time base the muxer chose for a stream (valid after `writeHeader`).
    public func timeBase(ofStream index: Int) -> Rational {
        Rational(context.pointee.streams[index]!.pointee.time_base)
    }

    /// Writes `packet` (timestamps in `timeBase`) to stream `index`, interleaved.
    public func write(_ packet: Packet, toStream index: Int, timeBase: Rational) throws(MediaError) {
        let p = packet.pointer
        p.pointee.stream_index = Int32(index)
        av_packet_rescale_ts(p, timeBase.av, context.pointee.streams[index]!.pointee.time_base)
        p.pointee.pos = -1
        let code = av_interleaved_write_frame(context, p)
        if code < 0 { throw failure(code, "writing \(displayPath)") }
    }

    /// Flushes interleaving queues and writes the trailer (index, moov).
    public func finish() throws(MediaError) {
        guard headerWritten, !trailerWritten else { return }
        trailerWritten = true
        let code = av_write_trailer(context)
        if code < 0 { throw failure(code, "finishing \(displayPath)") }
        if context.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0, context.pointee.pb != nil {
            // avio buffers: a full disk may only show up when the last bytes are flushed.
            avio_flush(context.pointee.pb)
            let ioError = context.pointee.pb.pointee.error
            let closeCode = avio_closep(&context.pointee.pb)
            if ioError < 0 { throw failure(ioError, "writing \(displayPath)") }
            if closeCode < 0 { throw failure(closeCode, "closing \(displayPath)") }
        }
    }

    /// A write failure, told apart when the disk is full or the file hit its size limit.
    private func failure(_ code: Int32, _ operation: String) -> MediaError {
        if code == lf_averror(ENOSPC) || code == lf_averror(EFBIG) || code == lf_averror(EDQUOT) { return .diskFull(displayPath) }
        // Writing creates nothing but our own files: a missing one means the folder was removed mid-run
        // (image2 reports a file it cannot open as EIO).
        if code == lf_averror(ENOENT) || (container == .pngSequence && code == lf_averror(EIO)) { return .outputNotWritable(displayPath, reason: "the output folder was removed during the run") }
        return .processing(FFmpegError(code: code, operation: operation))
    }

    /// Bytes written so far.
    public var bytesWritten: Int64 {
        guard let pb = context.pointee.pb else { return 0 }
        return avio_tell(pb)
    }
}

import CFFmpeg
import struct Filters.FrameSize
import Foundation

/// Output containers livefilter writes, chosen by the output path.
public enum OutputContainer: String, Sendable, CaseIterable {
    case mp4, mov, mkv, ts, pngSequence = "png", hls = "m3u8"
    /// No output: pictures are made up to the encoder's input and dropped (ffmpeg's `-f null -`),
    /// for measuring and for dry runs. Named by the path `null`.
    case null

    /// The container for a path: by extension, a PNG sequence for a `%d`-style pattern ending in
    /// .png, or no output for the path `null`.
    public init?(path: String) {
        if path == "null" {
            self = .null
            return
        }
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

    /// The libavformat muxer writing this container; nil for outputs of several files.
    var muxerName: String? {
        switch self {
        case .mp4: "mp4"
        case .mov: "mov"
        case .mkv: "matroska"
        case .ts: "mpegts"
        case .pngSequence, .hls, .null: nil
        }
    }

    public var isImageSequence: Bool { self == .pngSequence }
}

/// Writes encoded streams into one container. Owns its `AVFormatContext`.
///
/// The destination is a file (`init(path:container:options:overwrite:)`): FFmpeg writes into a hidden
/// temporary name beside `path` (an `AtomicFile`), which `commit` renames onto `path`; or a byte sink
/// (`init(streamingTo:…)`), whose bytes the HLS writer cuts into segments.
public final class Muxer: PacketSink {
    let context: UnsafeMutablePointer<AVFormatContext>
    /// The output's name (the file appears there at `commit`).
    public let path: String
    public var displayPath: String { path }
    public let container: OutputContainer
    public let options: ContainerOptions
    private var finishedBytes: Int64?

    private enum Destination {
        case file(AtomicFile)
        /// A custom AVIOContext whose write callback feeds the sink.
        case bytes(SegmentByteSink, UnsafeMutablePointer<AVIOContext>)
    }
    private let destination: Destination
    private var headerWritten = false
    private var trailerWritten = false

    /// Facts of an added stream that writers of several files need (HLS: cutting, the master playlist).
    struct StreamFacts {
        var sourceTimeBase: AVRational
        var isVideo: Bool
        /// Positive for a video stream with a known rate.
        var frameRate: AVRational
        var size: FrameSize?
    }
    private(set) var streamFacts: [StreamFacts] = []
    /// Copied AAC streams of an MP4/MOV output: ADTS frames lose their headers on the way in.
    private var adtsFilters: [Int: ADTSToRaw] = [:]

    /// A container file at `path`. Checks the destination (folder, existing file, `overwrite`) and
    /// the options; creates nothing until `begin`.
    public init(path: String, container: OutputContainer, options: ContainerOptions = ContainerOptions(),
                overwrite: Bool) throws(MediaError) {
        guard let name = container.muxerName else { throw .unsupportedOutput(path, reason: "not a single-file container") }
        try options.validate(for: container, path: path)
        let file = try AtomicFile(path: path, overwrite: overwrite)
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        // The muxer's URL is the temporary file: faststart reads it back by name at the end.
        let code = avformat_alloc_output_context2(&ctx, nil, name, file.temporaryPath)
        guard code >= 0, let ctx else { throw .unsupportedOutput(path, reason: ffmpegErrorText(code)) }
        context = ctx
        self.path = path
        self.container = container
        self.options = options
        destination = .file(file)
    }

    /// A muxer whose bytes go to `sink` through a custom AVIOContext (not seekable). `displayPath`
    /// names the output in errors (an HLS playlist).
    init(streamingTo sink: SegmentByteSink, container: OutputContainer, options: ContainerOptions,
         displayPath: String) throws(MediaError) {
        guard let name = container.muxerName else { throw .unsupportedOutput(displayPath, reason: "not a single-file container") }
        try options.validate(for: container, path: displayPath)
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        let code = avformat_alloc_output_context2(&ctx, nil, name, nil)
        guard code >= 0, let ctx else { throw .unsupportedOutput(displayPath, reason: ffmpegErrorText(code)) }
        // libavformat calls back with bytes; the opaque pointer is the unretained sink, which this
        // muxer keeps alive as long as the AVIOContext.
        let bufferSize: Int32 = 64 * 1024
        guard let buffer = av_malloc(Int(bufferSize))?.assumingMemoryBound(to: UInt8.self),
              let pb = avio_alloc_context(buffer, bufferSize, 1, Unmanaged.passUnretained(sink).toOpaque(), nil,
                                          { opaque, buf, size -> Int32 in
                                              guard let opaque, let buf, size >= 0 else { return lf_averror(EINVAL) }
                                              let sink = Unmanaged<SegmentByteSink>.fromOpaque(opaque).takeUnretainedValue()
                                              return sink.receive(buf, count: Int(size))
                                          }, nil) else {
            avformat_free_context(ctx)
            throw .outputNotWritable(displayPath, reason: "out of memory")
        }
        pb.pointee.seekable = 0
        ctx.pointee.pb = pb
        ctx.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        context = ctx
        path = displayPath
        self.container = container
        self.options = options
        destination = .bytes(sink, pb)
    }

    deinit {
        switch destination {
        case .file:
            // An unfinished muxer is an abandoned output: no trailer (faststart would re-open the file).
            // The AtomicFile removes its temporary file when released.
            if context.pointee.pb != nil { avio_closep(&context.pointee.pb) }
        case let .bytes(_, pb):
            av_freep(&pb.pointee.buffer)
            var p: UnsafeMutablePointer<AVIOContext>? = pb
            avio_context_free(&p)
            context.pointee.pb = nil
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
        let enc = encoder.context.pointee
        stream.pointee.time_base = enc.time_base
        let isVideo = enc.codec_type == AVMEDIA_TYPE_VIDEO
        if isVideo {
            stream.pointee.avg_frame_rate = enc.framerate
        }
        streamFacts.append(StreamFacts(sourceTimeBase: enc.time_base, isVideo: isVideo, frameRate: isVideo ? enc.framerate : AVRational(),
                                       size: isVideo ? FrameSize(width: Int(enc.width), height: Int(enc.height)) : nil))
        return Int(stream.pointee.index)
    }

    /// Adds a stream whose packets are copied unchanged from `demuxer`'s stream `index`.
    public func addStream(copying index: Int, of demuxer: Demuxer) throws(MediaError) -> Int {
        try addStream(copying: demuxer.stream(index))
    }

    /// Adds a stream whose packets are copied unchanged from a part file's stream `index` (a join).
    public func addStream(copying index: Int, of part: PartReader) throws(MediaError) -> Int {
        try addStream(copying: part.stream(index))
    }

    private func addStream(copying source: UnsafeMutablePointer<AVStream>) throws(MediaError) -> Int {
        guard let stream = avformat_new_stream(context, nil) else { throw .invalidSettings("avformat_new_stream failed") }
        let code = avcodec_parameters_copy(stream.pointee.codecpar, source.pointee.codecpar)
        if code < 0 { throw .processing(FFmpegError(code: code, operation: "avcodec_parameters_copy")) }
        // The source container's tag may mean nothing in this one.
        stream.pointee.codecpar.pointee.codec_tag = 0
        // A display matrix (`--orientation keep`) travels with the stream, as players read it.
        var size: Int = 0
        if let matrix = av_stream_get_side_data(source, AV_PKT_DATA_DISPLAYMATRIX, &size), size > 0,
           let copy = av_stream_new_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, size) {
            copy.update(from: matrix, count: size)
        }
        // Demuxers leave an AAC stream's frame size unset; muxers want it (and warn without it).
        if stream.pointee.codecpar.pointee.codec_id == AV_CODEC_ID_AAC, stream.pointee.codecpar.pointee.frame_size == 0 {
            stream.pointee.codecpar.pointee.frame_size = 1024
        }
        if stream.pointee.codecpar.pointee.codec_id == AV_CODEC_ID_AAC, container == .mp4 || container == .mov,
           let par = stream.pointee.codecpar {
            // ADTS sources (MPEG-TS) carry no AudioSpecificConfig: the moov, written first in fMP4, needs one.
            if par.pointee.extradata_size == 0,
               let config = ADTSToRaw.audioSpecificConfig(profile: par.pointee.profile, sampleRate: par.pointee.sample_rate,
                                                          channels: par.pointee.ch_layout.nb_channels),
               let data = av_mallocz(config.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) {
                data.copyMemory(from: config, byteCount: config.count)
                par.pointee.extradata = data.assumingMemoryBound(to: UInt8.self)
                par.pointee.extradata_size = Int32(config.count)
            }
            adtsFilters[Int(stream.pointee.index)] = ADTSToRaw(parameters: par, timeBase: source.pointee.time_base)
        }
        stream.pointee.time_base = source.pointee.time_base
        let par = source.pointee.codecpar.pointee
        let isVideo = par.codec_type == AVMEDIA_TYPE_VIDEO
        if isVideo {
            stream.pointee.avg_frame_rate = source.pointee.avg_frame_rate
        }
        streamFacts.append(StreamFacts(sourceTimeBase: source.pointee.time_base, isVideo: isVideo,
                                       frameRate: isVideo ? source.pointee.avg_frame_rate : AVRational(),
                                       size: isVideo ? FrameSize(width: Int(par.width), height: Int(par.height)) : nil))
        return Int(stream.pointee.index)
    }

    /// Tags a video stream with a display matrix (the input's, copied as it is) so players turn and
    /// mirror it as they would the input.
    public func setDisplayMatrix(streamIndex: Int, _ matrix: DisplayMatrix) {
        guard let stream = context.pointee.streams[streamIndex],
              let data = av_stream_new_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, 9 * MemoryLayout<Int32>.size) else { return }
        data.withMemoryRebound(to: Int32.self, capacity: 9) { target in
            for (i, value) in matrix.values.enumerated() { target[i] = value }
        }
    }

    /// Creates the temporary file (for a file destination) and writes the header with `options`.
    public func begin() throws(MediaError) {
        guard !headerWritten else { return }
        if case let .file(file) = destination {
            try file.begin()
            // FFmpeg writes the temporary file by name; the AtomicFile only renames or removes it.
            try file.close()
            let code = avio_open(&context.pointee.pb, file.temporaryPath, AVIO_FLAG_WRITE)
            if code < 0 { throw .outputNotWritable(displayPath, reason: ffmpegErrorText(code)) }
        }
        var dict = options.dictionary()
        defer { av_dict_free(&dict) }
        let code = avformat_write_header(context, &dict)
        if code < 0 { throw failure(code, "writing the \(container.rawValue) header of \(displayPath)") }
        headerWritten = true
        // Options the muxer did not consume are typos or wrong for this container: say so.
        if let left = av_dict_get(dict, "", nil, AV_DICT_IGNORE_SUFFIX) {
            throw .invalidSettings("muxer option '\(String(cString: left.pointee.key))' is not known to \(container.muxerName ?? container.rawValue)")
        }
        if case let .bytes(sink, pb) = destination {
            avio_flush(pb)
            if let error = sink.error(naming: displayPath) { throw error }
        }
    }

    /// The time base the muxer chose for a stream (valid after `begin`).
    public func timeBase(ofStream index: Int) -> Rational {
        Rational(context.pointee.streams[index]!.pointee.time_base)
    }

    /// The codec parameters of stream `index` (for codec strings).
    func codecParameters(ofStream index: Int) -> AVCodecParameters {
        context.pointee.streams[index]!.pointee.codecpar.pointee
    }

    /// Writes `packet` (timestamps in `timeBase`) to stream `index`, interleaved.
    public func write(_ packet: Packet, toStream index: Int, timeBase: Rational) throws(MediaError) {
        if let filter = adtsFilters[index], ADTSToRaw.isADTS(packet) {
            for raw in try filter.convert(packet) { try write(raw, toStream: index, timeBase: timeBase) }
            return
        }
        let p = packet.pointer
        p.pointee.stream_index = Int32(index)
        av_packet_rescale_ts(p, timeBase.av, context.pointee.streams[index]!.pointee.time_base)
        p.pointee.pos = -1
        let code = av_interleaved_write_frame(context, p)
        if case let .bytes(sink, _) = destination, let error = sink.error(naming: displayPath) { throw error }
        if code < 0 { throw failure(code, "writing \(displayPath)") }
    }

    /// Pushes everything written so far to the destination: the interleaving queue, the muxer's own
    /// buffers (pending PES packets for TS, a moof+mdat fragment for fragmented MP4) and the AVIO
    /// buffer. A byte sink has every byte written before this call when it returns.
    func flush() throws(MediaError) {
        _ = av_interleaved_write_frame(context, nil)
        _ = av_write_frame(context, nil)
        avio_flush(context.pointee.pb)
        if case let .bytes(sink, _) = destination, let error = sink.error(naming: displayPath) { throw error }
    }

    /// MPEG-TS: the next packet is preceded by PAT and PMT (the start of a segment).
    func resendHeaders() {
        if container == .ts { ContainerOptions.resendTransportStreamHeaders(context) }
    }

    /// Flushes interleaving queues and writes the trailer (index, moov); a file is closed and renamed
    /// onto `path`. A byte sink has received every byte when this returns.
    public func commit() throws(MediaError) {
        guard headerWritten, !trailerWritten else { return }
        trailerWritten = true
        let code = av_write_trailer(context)
        switch destination {
        case let .file(file):
            if code < 0 { throw failure(code, "finishing \(displayPath)") }
            if context.pointee.pb != nil {
                // avio buffers: a full disk may only show up when the last bytes are flushed.
                avio_flush(context.pointee.pb)
                // The size of the finished file (faststart moved the index, not the end).
                finishedBytes = avio_size(context.pointee.pb)
                let ioError = context.pointee.pb.pointee.error
                let closeCode = avio_closep(&context.pointee.pb)
                if ioError < 0 { throw failure(ioError, "writing \(displayPath)") }
                if closeCode < 0 { throw failure(closeCode, "closing \(displayPath)") }
            }
            try file.commit()
        case let .bytes(sink, pb):
            avio_flush(pb)
            if let error = sink.error(naming: displayPath) { throw error }
            if code < 0 { throw .processing(FFmpegError(code: code, operation: "finishing \(displayPath)")) }
        }
    }

    /// Abandons the output: no trailer; a file destination's temporary file is removed. A byte
    /// sink's current file is its writer's to discard.
    public func discard() {
        guard case let .file(file) = destination else { return }
        if context.pointee.pb != nil { avio_closep(&context.pointee.pb) }
        file.discard()
    }

    /// A write failure, told apart when the disk is full, the file hit its size limit or the
    /// folder was removed.
    private func failure(_ code: Int32, _ operation: String) -> MediaError {
        // AVERROR(e) is -e on the platforms FFmpeg supports (FFmpeg's own codes are far below -4096).
        if code < 0, code > -4096, let error = AtomicFile.ioFailure(errno: -code, path: displayPath) { return error }
        return .processing(FFmpegError(code: code, operation: operation))
    }

    /// Bytes written so far; after `commit`, the finished file's size.
    public var bytesWritten: Int64 {
        if let finishedBytes { return finishedBytes }
        guard let pb = context.pointee.pb else { return 0 }
        return avio_tell(pb)
    }
}

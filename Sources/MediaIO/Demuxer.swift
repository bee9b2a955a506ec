import CFFmpeg
import Foundation

/// How an input is opened.
public struct InputOptions: Sendable {
    /// Abort a network read that makes no progress for this long.
    public var ioTimeout: Duration = .seconds(15)
    /// Protocols a playlist may reference when the input itself came over the network.
    public var networkProtocols = "http,https,tls,tcp,crypto"
    public init() {}
}

/// Reads packets from a file or URL. Owns its `AVFormatContext`.
public final class Demuxer {
    let context: UnsafeMutablePointer<AVFormatContext>
    public let url: String
    public let video: VideoStreamInfo
    public let audio: AudioStreamInfo?
    /// Container start time in seconds (MPEG-TS and HLS start near 1.4 s), or 0.
    public let startTime: Double
    /// Container duration in seconds, if known.
    public let duration: Double?
    public let formatName: String
    public let bitRate: Int?
    /// Non-zero makes every blocking FFmpeg read return AVERROR_EXIT.
    private let interruptFlag: UnsafeMutablePointer<Int32>

    public init(url: String, options: InputOptions = InputOptions()) throws(MediaError) {
        self.url = url
        let isNetwork = url.contains("://") && !url.hasPrefix("file:")
        if !isNetwork {
            let path = url.hasPrefix("file:") ? String(url.dropFirst(5)) : url
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw .inputNotFound(url)
            }
            if isDirectory.boolValue { throw .inputUnreadable(url, reason: "it is a directory") }
            guard access(path, R_OK) == 0 else { throw .inputUnreadable(url, reason: "permission denied") }
        }

        interruptFlag = .allocate(capacity: 1)
        interruptFlag.initialize(to: 0)
        var ctx: UnsafeMutablePointer<AVFormatContext>? = avformat_alloc_context()
        guard ctx != nil else { interruptFlag.deallocate(); throw .inputUnreadable(url, reason: "out of memory") }
        lf_set_interrupt(ctx, interruptFlag)

        var dict: OpaquePointer? = nil
        defer { av_dict_free(&dict) }
        if isNetwork {
            let micros = options.ioTimeout.components.seconds * 1_000_000
            av_dict_set(&dict, "rw_timeout", String(micros), 0)
            av_dict_set(&dict, "protocol_whitelist", options.networkProtocols, 0)
            av_dict_set(&dict, "reconnect", "1", 0)
        } else {
            av_dict_set(&dict, "protocol_whitelist", "file,crypto,data", 0)
        }

        let openCode = avformat_open_input(&ctx, url, nil, &dict)
        guard openCode >= 0, let opened = ctx else {
            interruptFlag.deallocate()
            let error = FFmpegError(code: openCode, operation: "avformat_open_input")
            if openCode == lf_averror_invaliddata() { throw .notMediaFile(url, reason: error.reason) }
            if openCode == lf_averror(ENOENT) || openCode == lf_averror_http_not_found() { throw .inputNotFound(url) }
            throw .inputUnreadable(url, reason: error.reason)
        }
        context = opened

        let infoCode = avformat_find_stream_info(opened, nil)
        if infoCode < 0 {
            var c: UnsafeMutablePointer<AVFormatContext>? = opened
            avformat_close_input(&c)
            interruptFlag.deallocate()
            throw .notMediaFile(url, reason: FFmpegError(code: infoCode, operation: "avformat_find_stream_info").reason)
        }

        formatName = String(cString: opened.pointee.iformat.pointee.name)
        let start = opened.pointee.start_time
        startTime = start != lf_nopts_value() ? Double(start) / Double(AV_TIME_BASE) : 0
        let d = opened.pointee.duration
        duration = d > 0 && d != lf_nopts_value() ? Double(d) / Double(AV_TIME_BASE) : nil
        bitRate = opened.pointee.bit_rate > 0 ? Int(opened.pointee.bit_rate) : nil

        let videoIndex = av_find_best_stream(opened, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        let audioIndex = av_find_best_stream(opened, AVMEDIA_TYPE_AUDIO, -1, videoIndex >= 0 ? videoIndex : -1, nil, 0)
        var videoStream: UnsafeMutablePointer<AVStream>? = nil
        if videoIndex >= 0, let s = opened.pointee.streams[Int(videoIndex)],
           s.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC == 0,
           s.pointee.codecpar.pointee.width > 0 {
            videoStream = s
        }
        guard let videoStream else {
            var c: UnsafeMutablePointer<AVFormatContext>? = opened
            avformat_close_input(&c)
            interruptFlag.deallocate()
            throw .noVideoStream(url)
        }
        video = VideoStreamInfo(stream: videoStream)
        if audioIndex >= 0, let s = opened.pointee.streams[Int(audioIndex)], s.pointee.codecpar.pointee.ch_layout.nb_channels > 0 {
            audio = AudioStreamInfo(stream: s)
        } else {
            audio = nil
        }
        // Drop packets of streams we never read, so the demuxer does not queue them.
        for i in 0..<Int(opened.pointee.nb_streams) where i != video.index && i != audio?.index {
            opened.pointee.streams[i]?.pointee.discard = AVDISCARD_ALL
        }
    }

    deinit {
        var c: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&c)
        interruptFlag.deallocate()
    }

    func stream(_ index: Int) -> UnsafeMutablePointer<AVStream> {
        context.pointee.streams[index]!
    }

    /// Makes every blocking read return promptly (from any thread).
    public func interrupt() {
        // A plain store of an aligned Int32 is atomic on every platform Swift runs on.
        interruptFlag.pointee = 1
    }

    public enum ReadResult { case packet, endOfFile }

    /// Reads the next packet of the video or audio stream into `packet`.
    public func read(into packet: Packet) throws(FFmpegError) -> ReadResult {
        while true {
            packet.unref()
            let code = av_read_frame(context, packet.pointer)
            if code == lf_averror_eof() { return .endOfFile }
            try check(code, "reading \(url)")
            let index = packet.streamIndex
            if index == video.index || index == audio?.index { return .packet }
        }
    }
}

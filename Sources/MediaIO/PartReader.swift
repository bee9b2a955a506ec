import CFFmpeg
import Foundation

/// Reads the packets of a file livefilter wrote itself (a shard's video part, the audio task's
/// part), every stream, without decoding: for joining parts by stream copy. Unlike `Demuxer`, it
/// takes a file without video (an audio part). Owns its `AVFormatContext`.
public final class PartReader {
    public let path: String
    private var context: UnsafeMutablePointer<AVFormatContext>

    public init(path: String) throws(MediaError) {
        guard FileManager.default.fileExists(atPath: path) else { throw .inputNotFound(path) }
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        var dict: OpaquePointer? = nil
        av_dict_set(&dict, "protocol_whitelist", "file", 0)
        defer { av_dict_free(&dict) }
        let code = avformat_open_input(&ctx, path, nil, &dict)
        guard code >= 0, let opened = ctx else { throw .notMediaFile(path, reason: ffmpegErrorText(code)) }
        let info = avformat_find_stream_info(opened, nil)
        if info < 0 {
            avformat_close_input(&ctx)
            throw .notMediaFile(path, reason: ffmpegErrorText(info))
        }
        context = opened
        self.path = path
    }

    deinit {
        var c: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&c)
    }

    public var streamCount: Int { Int(context.pointee.nb_streams) }

    func stream(_ index: Int) -> UnsafeMutablePointer<AVStream> { context.pointee.streams[index]! }

    public func isVideo(_ index: Int) -> Bool { stream(index).pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO }

    public func timeBase(_ index: Int) -> Rational { Rational(stream(index).pointee.time_base) }

    /// The first video stream, if any.
    public var videoStream: Int? { (0..<streamCount).first { isVideo($0) } }
    /// The first audio stream, if any.
    public var audioStream: Int? {
        (0..<streamCount).first { stream($0).pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO }
    }

    /// The next packet; false at the end.
    public func read(into packet: Packet) throws(MediaError) -> Bool {
        packet.unref()
        let code = av_read_frame(context, packet.pointer)
        if code == lf_averror_eof() { return false }
        if code < 0 { throw .processing(FFmpegError(code: code, operation: "reading \(path)")) }
        return true
    }
}

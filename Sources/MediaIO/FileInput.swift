import CFFmpeg
import Foundation
import HLS
import struct Filters.FrameSize

/// An input FFmpeg opens with its own protocols and demuxers: a file, or a file over the network
/// (http, https, …). One run, one context, owned here. A playlist is never read this way (FFmpeg's
/// `hls` demuxer is not used): one by its name goes to `HLSPlaylistInput`, and one FFmpeg
/// recognises by its content too (the init returns nil).
final class FileInput: PacketSource {
    let url: String
    let context: UnsafeMutablePointer<AVFormatContext>
    private let interrupt: InputInterrupt
    /// For a network file: how long one packet may take to arrive (microseconds), else 0.
    private let packetDeadline: Int64
    /// SCTE-35 sections of an MPEG-TS file (one run: no shift).
    private var splices = SpliceSectionReader()

    var formatName: String { String(cString: context.pointee.iformat.pointee.name) }
    var duration: Double? {
        let d = context.pointee.duration
        return d > 0 && d != lf_nopts_value() ? Double(d) / Double(AV_TIME_BASE) : nil
    }
    var isLive: Bool { false }

    /// Nil when `url` is a playlist after all.
    init?(url: String, isNetwork: Bool, options: InputOptions, interrupt: InputInterrupt) throws(MediaError) {
        guard let opened = try Self.openWithFFmpeg(url, isNetwork: isNetwork, options: options, interrupt: interrupt.state) else { return nil }
        self.url = url
        self.interrupt = interrupt
        context = opened
        // A network file: how long one packet may take (the HLS reader has its own per-segment limits).
        packetDeadline = isNetwork ? 3 * options.ioTimeout.microseconds : 0
    }

    deinit {
        var c: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&c)
    }

    func read(into packet: Packet, video: Int, audio: Int?) throws(FFmpegError) -> Demuxer.ReadResult {
        let flag = interrupt.state
        while true {
            packet.unref()
            if packetDeadline > 0 { lf_interrupt_arm(flag, packetDeadline) }
            let code = av_read_frame(context, packet.pointer)
            if packetDeadline > 0 {
                if code < 0, lf_interrupt_expired(flag) != 0 {
                    throw FFmpegError(code: lf_averror(ETIMEDOUT),
                                      operation: "reading \(url) (no packet within \(packetDeadline / 1_000_000) s, 3 × --io-timeout)")
                }
                lf_interrupt_arm(flag, 0)
            }
            if code == lf_averror_eof() { return .endOfFile }
            try check(code, "reading \(url)")
            let index = packet.streamIndex
            if index == video { splices.noteVideo(pts: packet.presentationTimestamp, shiftMicros: 0) }
            if index == video || index == audio { return .packet }
            if SpliceSectionReader.isSpliceStream(context, index), let tb = context.pointee.streams[video]?.pointee.time_base {
                splices.read(packet, videoTimeBase: tb, shiftMicros: 0)
            }
        }
    }

    func takeCues() -> [SourceCue] { splices.take() }

    /// Opens `url` with FFmpeg's own protocols and demuxers, streams probed. Nil when it is an HLS
    /// playlist (FFmpeg's `hls` demuxer is never used: our reader reads playlists).
    static func openWithFFmpeg(_ url: String, isNetwork: Bool, options: InputOptions,
                               interrupt: UnsafeMutablePointer<lf_interrupt_state>) throws(MediaError) -> UnsafeMutablePointer<AVFormatContext>? {
        var ctx: UnsafeMutablePointer<AVFormatContext>? = avformat_alloc_context()
        guard ctx != nil else { throw .inputUnreadable(url, reason: "out of memory") }
        lf_set_interrupt(ctx, interrupt)

        var dict: OpaquePointer? = nil
        defer { av_dict_free(&dict) }
        let micros = options.ioTimeout.microseconds
        if isNetwork {
            av_dict_set(&dict, "rw_timeout", String(micros), 0)
            av_dict_set(&dict, "protocol_whitelist", options.networkProtocols, 0)
            av_dict_set(&dict, "max_redirects", String(options.maxRedirects), 0)
            av_dict_set(&dict, "reconnect", "1", 0)
            av_dict_set(&dict, "reconnect_on_network_error", "1", 0)
            av_dict_set(&dict, "reconnect_delay_max", "4", 0)
        } else {
            av_dict_set(&dict, "protocol_whitelist", "file,crypto,data," + options.networkProtocols, 0)
        }

        // Opening and probing must finish within a few --io-timeouts, however slowly bytes trickle in.
        if isNetwork { lf_interrupt_arm(interrupt, 3 * micros) }
        let openCode = avformat_open_input(&ctx, url, nil, &dict)
        guard openCode >= 0, let opened = ctx else {
            let expired = lf_interrupt_expired(interrupt) != 0
            let error = FFmpegError(code: openCode, operation: "avformat_open_input")
            if openCode == lf_averror_invaliddata() { throw .notMediaFile(url, reason: error.reason) }
            if expired {
                throw .inputUnreadable(url, reason: "it did not open within \(3 * micros / 1_000_000) s (3 × --io-timeout)")
            }
            if openCode == lf_averror(ENOENT) || openCode == lf_averror_http_not_found() { throw .inputNotFound(url) }
            throw .inputUnreadable(url, reason: error.reason)
        }
        if String(cString: opened.pointee.iformat.pointee.name) == "hls" {
            var c: UnsafeMutablePointer<AVFormatContext>? = opened
            avformat_close_input(&c)
            lf_interrupt_arm(interrupt, 0)
            return nil
        }

        // A size the container's header states is refused before probing: FFmpeg's probe would
        // reset an invalid size (65535x65535) to 0 and report "no video stream" instead.
        let streamCount = Int(opened.pointee.nb_streams)
        for i in 0..<streamCount {
            guard let par = opened.pointee.streams[i]?.pointee.codecpar, par.pointee.codec_type == AVMEDIA_TYPE_VIDEO else { continue }
            let w = Int(par.pointee.width), h = Int(par.pointee.height)
            if w * h > options.maxPixels || w > 16384 || h > 16384 {
                var c: UnsafeMutablePointer<AVFormatContext>? = opened
                avformat_close_input(&c)
                throw .inputTooLarge(url, reason: "its header says \(w)x\(h), over the limit of \(options.maxPixels) pixels (--max-pixels)")
            }
        }
        let infoCode = probeStreams(opened, maxPixels: options.maxPixels)
        if infoCode < 0 {
            var c: UnsafeMutablePointer<AVFormatContext>? = opened
            avformat_close_input(&c)
            if lf_interrupt_expired(interrupt) != 0 {
                throw .inputUnreadable(url, reason: "it did not open within \(3 * micros / 1_000_000) s (3 × --io-timeout)")
            }
            throw .notMediaFile(url, reason: FFmpegError(code: infoCode, operation: "avformat_find_stream_info").reason)
        }
        return opened
    }

}

extension Demuxer {
    /// The variant (program) to read, and the stream indices that belong to it.
    static func chooseVariant(_ ctx: UnsafeMutablePointer<AVFormatContext>, _ choice: VariantChoice) -> (VariantInfo?, Set<Int>?) {
        let count = Int(ctx.pointee.nb_programs)
        guard count > 1 else { return (nil, nil) }
        var variants: [(info: VariantInfo, streams: Set<Int>)] = []
        for p in 0..<count {
            guard let program = ctx.pointee.programs[p] else { continue }
            var streams = Set<Int>()
            var size: FrameSize?
            for j in 0..<Int(program.pointee.nb_stream_indexes) {
                let index = Int(program.pointee.stream_index[j])
                streams.insert(index)
                if let par = ctx.pointee.streams[index]?.pointee.codecpar, par.pointee.codec_type == AVMEDIA_TYPE_VIDEO, par.pointee.width > 0 {
                    size = FrameSize(width: Int(par.pointee.width), height: Int(par.pointee.height))
                }
            }
            var bandwidth: Int?
            if let entry = av_dict_get(program.pointee.metadata, "variant_bitrate", nil, 0) {
                bandwidth = Int(String(cString: entry.pointee.value))
            }
            variants.append((VariantInfo(index: p, count: count, bandwidth: bandwidth, size: size), streams))
        }
        func rank(_ v: VariantInfo) -> Int { v.bandwidth ?? (v.size.map { $0.pixelCount } ?? 0) }
        let chosen: (info: VariantInfo, streams: Set<Int>)?
        switch choice {
        case .highest: chosen = variants.max { rank($0.info) < rank($1.info) }
        case .lowest: chosen = variants.min { rank($0.info) < rank($1.info) }
        case let .index(n): chosen = n < variants.count ? variants[n] : variants.last
        case let .maxBandwidth(b):
            chosen = variants.filter { ($0.info.bandwidth ?? 0) <= b }.max { rank($0.info) < rank($1.info) }
                ?? variants.min { rank($0.info) < rank($1.info) }
        }
        return (chosen?.info, chosen?.streams)
    }

}

extension Duration {
    /// Whole microseconds, as FFmpeg's timeouts take them.
    var microseconds: Int64 {
        let c = components
        return c.seconds * 1_000_000 + c.attoseconds / 1_000_000_000_000
    }
}

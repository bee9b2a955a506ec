import CFFmpeg
import HLS
import struct Filters.FrameSize
import Foundation

/// A variant of a master playlist, as read.
public struct VariantInfo: Sendable {
    public var index: Int
    public var count: Int
    public var bandwidth: Int?
    public var size: FrameSize?
}

/// Reads packets from a file or URL. Owns its `AVFormatContext`.
public final class Demuxer {
    let context: UnsafeMutablePointer<AVFormatContext>
    public let url: String
    public let video: VideoStreamInfo
    public let audio: AudioStreamInfo?
    /// Container start time in seconds (MPEG-TS and HLS start near 1.4 s), or 0. For display:
    /// timestamps are made relative with `start(inTimeBase:)`, which is exact.
    public let startTime: Double
    /// The container's start in FFmpeg's microseconds (`AVFormatContext.start_time`), 0 when unknown.
    private let startMicroseconds: Int64
    /// Container duration in seconds, if known.
    public let duration: Double?
    public let formatName: String
    public let bitRate: Int?
    /// The variant read, when the input was a master playlist with several.
    public let chosenVariant: VariantInfo?
    /// Whether the input is a live stream (an HLS playlist without an end).
    public var isLive: Bool { formatName == "hls" && duration == nil }

    /// The container's start in `timeBase` units, rounded to the nearest (FFmpeg's `av_rescale_q`,
    /// integer arithmetic): every stage that makes timestamps relative uses this one value.
    public func start(inTimeBase timeBase: Rational) -> Int64 {
        av_rescale_q(startMicroseconds, AVRational(num: 1, den: AV_TIME_BASE),
                     AVRational(num: Int32(timeBase.numerator), den: Int32(timeBase.denominator)))
    }
    /// The picture-size limit decoders enforce.
    public let maxPixels: Int
    /// Non-zero makes every blocking FFmpeg read return AVERROR_EXIT.
    private let interruptFlag: UnsafeMutablePointer<lf_interrupt_state>
    /// For a network VOD input: how long one packet may take to arrive (microseconds), else 0.
    private let packetDeadline: Int64

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

        let isPlaylist = url.lowercased().hasSuffix(".m3u8") || url.lowercased().contains(".m3u8?")
        if isPlaylist { try Self.checkMasterPlaylist(url, options: options) }

        interruptFlag = .allocate(capacity: 1)
        interruptFlag.initialize(to: lf_interrupt_state())
        var ctx: UnsafeMutablePointer<AVFormatContext>? = avformat_alloc_context()
        guard ctx != nil else { interruptFlag.deallocate(); throw .inputUnreadable(url, reason: "out of memory") }
        lf_set_interrupt(ctx, interruptFlag)

        var dict: OpaquePointer? = nil
        defer { av_dict_free(&dict) }
        let c = options.ioTimeout.components
        let micros = c.seconds * 1_000_000 + c.attoseconds / 1_000_000_000_000
        if isNetwork {
            av_dict_set(&dict, "rw_timeout", String(micros), 0)
            // A playlist fetched over the network may reference network media only.
            av_dict_set(&dict, "protocol_whitelist", options.networkProtocols, 0)
            av_dict_set(&dict, "max_redirects", String(options.maxRedirects), 0)
            av_dict_set(&dict, "reconnect", "1", 0)
            av_dict_set(&dict, "reconnect_on_network_error", "1", 0)
            av_dict_set(&dict, "reconnect_delay_max", "4", 0)
        } else {
            av_dict_set(&dict, "protocol_whitelist", "file,crypto,data," + options.networkProtocols, 0)
        }
        if isPlaylist {
            av_dict_set(&dict, "live_start_index", options.liveStart == .edge ? "-3" : "0", 0)
            // Our own stall timeout decides when a silent playlist has ended.
            av_dict_set(&dict, "m3u8_hold_counters", "1000000", 0)
            av_dict_set(&dict, "max_reload", "1000000", 0)
        }

        // Opening and probing must finish within a few --io-timeouts, however slowly bytes trickle in.
        if isNetwork { lf_interrupt_arm(interruptFlag, 3 * micros) }
        let openCode = avformat_open_input(&ctx, url, nil, &dict)
        guard openCode >= 0, let opened = ctx else {
            let expired = lf_interrupt_expired(interruptFlag) != 0
            interruptFlag.deallocate()
            let error = FFmpegError(code: openCode, operation: "avformat_open_input")
            if openCode == lf_averror_invaliddata() { throw .notMediaFile(url, reason: error.reason) }
            if expired {
                throw .inputUnreadable(url, reason: "it did not open within \(3 * micros / 1_000_000) s (3 × --io-timeout)")
            }
            if openCode == lf_averror(ENOENT) || openCode == lf_averror_http_not_found() { throw .inputNotFound(url) }
            throw .inputUnreadable(url, reason: error.reason)
        }
        context = opened

        // A size the container's header states is refused before probing: FFmpeg's probe would
        // reset an invalid size (65535x65535) to 0 and report "no video stream" instead.
        let streamCount = Int(opened.pointee.nb_streams)
        for i in 0..<streamCount {
            guard let par = opened.pointee.streams[i]?.pointee.codecpar, par.pointee.codec_type == AVMEDIA_TYPE_VIDEO else { continue }
            let w = Int(par.pointee.width), h = Int(par.pointee.height)
            if w * h > options.maxPixels || w > 16384 || h > 16384 {
                var c: UnsafeMutablePointer<AVFormatContext>? = opened
                avformat_close_input(&c)
                interruptFlag.deallocate()
                throw .inputTooLarge(url, reason: "its header says \(w)x\(h), over the limit of \(options.maxPixels) pixels (--max-pixels)")
            }
        }
        // Decoders probing the streams refuse pictures over the limit instead of allocating them.
        var probeOptions = [OpaquePointer?](repeating: nil, count: max(1, streamCount))
        for i in 0..<streamCount { av_dict_set(&probeOptions[i], "max_pixels", String(options.maxPixels), 0) }
        let infoCode = probeOptions.withUnsafeMutableBufferPointer { avformat_find_stream_info(opened, $0.baseAddress) }
        for i in 0..<probeOptions.count { av_dict_free(&probeOptions[i]) }
        if infoCode < 0 {
            var c: UnsafeMutablePointer<AVFormatContext>? = opened
            avformat_close_input(&c)
            if lf_interrupt_expired(interruptFlag) != 0 {
                interruptFlag.deallocate()
                throw .inputUnreadable(url, reason: "it did not open within \(3 * micros / 1_000_000) s (3 × --io-timeout)")
            }
            interruptFlag.deallocate()
            throw .notMediaFile(url, reason: FFmpegError(code: infoCode, operation: "avformat_find_stream_info").reason)
        }

        formatName = String(cString: opened.pointee.iformat.pointee.name)
        let start = opened.pointee.start_time
        startMicroseconds = start != lf_nopts_value() ? start : 0
        startTime = Double(startMicroseconds) / Double(AV_TIME_BASE)
        let d = opened.pointee.duration
        duration = d > 0 && d != lf_nopts_value() ? Double(d) / Double(AV_TIME_BASE) : nil
        // A live input waits for new segments inside reads; its silence is --stall-timeout's business.
        lf_interrupt_arm(interruptFlag, 0)
        packetDeadline = isNetwork && !(formatName == "hls" && duration == nil) ? 3 * micros : 0
        bitRate = opened.pointee.bit_rate > 0 ? Int(opened.pointee.bit_rate) : nil

        // A master playlist shows up as one program per variant: choose one, discard the rest.
        let (variant, wanted) = Self.chooseVariant(opened, options.variant)
        chosenVariant = variant
        if let wanted {
            for i in 0..<Int(opened.pointee.nb_streams) where !wanted.contains(i) {
                opened.pointee.streams[i]?.pointee.discard = AVDISCARD_ALL
            }
        }
        var videoIndex = av_find_best_stream(opened, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        if let wanted, !wanted.contains(Int(videoIndex)) {
            videoIndex = Int32(wanted.first { opened.pointee.streams[$0]!.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO } ?? -1)
        }
        var audioIndex = av_find_best_stream(opened, AVMEDIA_TYPE_AUDIO, -1, videoIndex >= 0 ? videoIndex : -1, nil, 0)
        if let wanted, !wanted.contains(Int(audioIndex)) {
            audioIndex = Int32(wanted.first { opened.pointee.streams[$0]!.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO } ?? -1)
        }
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
        if video.size.width * video.size.height > options.maxPixels || video.size.width > 16384 || video.size.height > 16384 {
            var c: UnsafeMutablePointer<AVFormatContext>? = opened
            avformat_close_input(&c)
            interruptFlag.deallocate()
            throw .inputTooLarge(url, reason: "its video is \(video.size), over the limit of \(options.maxPixels) pixels")
        }
        self.maxPixels = options.maxPixels
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

    /// The variant (program) to read, and the stream indices that belong to it.
    private static func chooseVariant(_ ctx: UnsafeMutablePointer<AVFormatContext>, _ choice: VariantChoice) -> (VariantInfo?, Set<Int>?) {
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
        interruptFlag.pointee.stop = 1
    }

    public enum ReadResult { case packet, endOfFile }

    /// Reads the next packet of the video or audio stream into `packet`.
    public func read(into packet: Packet) throws(FFmpegError) -> ReadResult {
        while true {
            packet.unref()
            if packetDeadline > 0 { lf_interrupt_arm(interruptFlag, packetDeadline) }
            let code = av_read_frame(context, packet.pointer)
            if packetDeadline > 0 {
                if code < 0, lf_interrupt_expired(interruptFlag) != 0 {
                    throw FFmpegError(code: lf_averror(ETIMEDOUT),
                                      operation: "reading \(url) (no packet within \(packetDeadline / 1_000_000) s, 3 × --io-timeout)")
                }
                lf_interrupt_arm(interruptFlag, 0)
            }
            if code == lf_averror_eof() { return .endOfFile }
            try check(code, "reading \(url)")
            let index = packet.streamIndex
            if index == video.index || index == audio?.index { return .packet }
        }
    }
}

extension Demuxer {
    /// Moves reading to the keyframe at or before `seconds` (relative to the start), for snapshots.
    public func seek(to seconds: Double) throws(MediaError) {
        let target = Int64(((startTime + max(0, seconds)) * Double(AV_TIME_BASE)).rounded())
        let code = avformat_seek_file(context, -1, .min, target, target, 0)
        if code < 0 {
            // Some inputs (raw streams) cannot seek: start over from the beginning instead.
            let rewind = av_seek_frame(context, -1, 0, AVSEEK_FLAG_BACKWARD)
            if rewind < 0 { throw .processing(FFmpegError(code: code, operation: "seeking to \(seconds) s")) }
        }
    }
}

extension Decoder {
    /// Drops frames held from before a seek.
    public func flush() {
        avcodec_flush_buffers(context)
    }
}

extension Demuxer {
    /// The video stream's bitrate measured from its packets, for files whose container states none
    /// (Matroska, MPEG-TS). Reads the packets without decoding; nil for live or unreadable inputs.
    public static func measuredVideoBitRate(url: String) -> Int? {
        guard let scan = try? Demuxer(url: url), !scan.isLive, let duration = scan.duration, duration > 0 else { return nil }
        if let audio = scan.audio { scan.stream(audio.index).pointee.discard = AVDISCARD_ALL }
        let packet = Packet()
        var bytes = 0
        while (try? scan.read(into: packet)) == .packet {
            if packet.streamIndex == scan.video.index { bytes += packet.size }
        }
        return Int(Double(bytes) * 8 / duration)
    }
}

extension Demuxer {
    /// Checks a master playlist before FFmpeg's HLS reader opens it:
    /// - one that lists itself as a variant sends that reader into a loop of fetches: refused;
    /// - the variant that will be played is fetched once, within `--io-timeout`. A variant that never
    ///   answers would otherwise cost the reader's retries (30–40 s at the default 10 s), and its
    ///   error would not say which URL it was.
    static func checkMasterPlaylist(_ url: String, options: InputOptions) throws(MediaError) {
        guard let text = try? fetchText(url, timeout: options.ioTimeout, maxBytes: 4 << 20),
              case let .master(master)? = try? PlaylistParser.parse(text) else { return }
        let base = url.contains("://") ? (URL(string: url) ?? URL(fileURLWithPath: url)) : URL(fileURLWithPath: url)
        func normalized(_ u: URL) -> String { u.standardized.absoluteString }
        let me = normalized(base)
        for variant in master.variants {
            guard let resolved = URL(string: variant.uri, relativeTo: base) else { continue }
            if normalized(resolved.absoluteURL) == me {
                throw .notMediaFile(url, reason: "the master playlist lists itself as a variant (line \(variant.line))")
            }
        }
        guard let chosen = chosenVariant(master.variants, options.variant),
              let resolved = URL(string: chosen.uri, relativeTo: base)?.absoluteURL else { return }
        let variantURL = resolved.isFileURL ? resolved.path : resolved.absoluteString
        guard variantURL.contains("://") else { return }
        do {
            _ = try fetchText(variantURL, timeout: options.ioTimeout, maxBytes: 4 << 20)
        } catch {
            if case .inputNotFound = error { throw .inputNotFound(variantURL) }
            let seconds = options.ioTimeout.components.seconds
            var why = error.description
            if case let .inputUnreadable(_, reason) = error { why = reason }
            throw .inputUnreadable(variantURL, reason: "the variant of \(url) chosen to play (\(options.variant)) did not answer within "
                                   + "\(seconds) s (--io-timeout): \(why)")
        }
    }

    /// The variant `choice` picks, ranked as `chooseVariant` ranks FFmpeg's programs (bandwidth, else pixels).
    static func chosenVariant(_ variants: [VariantStream], _ choice: VariantChoice) -> VariantStream? {
        func rank(_ v: VariantStream) -> Int { v.bandwidth > 0 ? v.bandwidth : (v.resolution.map { $0.width * $0.height } ?? 0) }
        switch choice {
        case .highest: return variants.max { rank($0) < rank($1) }
        case .lowest: return variants.min { rank($0) < rank($1) }
        case let .index(n): return n < variants.count ? variants[n] : variants.last
        case let .maxBandwidth(b):
            return variants.filter { $0.bandwidth <= b }.max { rank($0) < rank($1) } ?? variants.min { rank($0) < rank($1) }
        }
    }
}

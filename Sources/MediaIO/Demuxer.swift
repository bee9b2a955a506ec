import CFFmpeg
import HLS
import HLSClient
import struct Filters.FrameSize
import Foundation

/// What the HLS reader did: reloads, segments and parts read, retries, skips, reload delays.
public typealias HLSInputStatistics = HLSReaderStatistics.Snapshot

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
    public let isLive: Bool
    /// An HLS input, read by our client; nil for everything FFmpeg opens itself.
    let hls: HLSInput?
    /// A pushed or streamed live input (RTMP, SRT, UDP, RTSP); nil for everything else.
    let stream: StreamInput?
    /// A pushed input whose connection ends is opened again (the listener takes the next
    /// publisher), the timeline going on: a channel that outlives its input. Set from the plan.
    public var reconnects: Bool {
        get { stream?.reconnects ?? false }
        set { stream?.reconnects = newValue }
    }
    /// Times a pushed input's publisher connected again.
    public var reconnections: Int { stream?.reconnections ?? 0 }

    /// Whether opening `url` waits for a publisher to push to it (an RTMP `--listen`, an SRT
    /// listener, UDP), which may take as long as the publisher does.
    public static func waitsForPublisher(_ url: String, options: InputOptions) -> Bool {
        guard StreamInput.handles(url), StreamInput.isListener(url, options: options) else { return false }
        // One that will be refused (no key off loopback) does not wait.
        do { try StreamInput.checkAuthentication(url, options: options) } catch { return false }
        return true
    }
    /// Its audio rendition, when the variant's audio is a playlist of its own; its stream's index is
    /// past the main input's (`audioIndexBase` + its own).
    let hlsAudio: HLSInput?
    private let audioIndexBase: Int
    /// A live HLS input's video ends each independent segment with a packet `isSegmentEnd`, the
    /// moment its last bytes are read (MPEG-TS would hold its last frames until the next segment),
    /// so a decoder can drain what it holds (`Decoder.sendEndOfStream`, then `resume`). Only when every
    /// segment so far began with a keyframe, and not with an audio rendition of its own. Off by default.
    public var marksSegmentEnds = false {
        didSet { hls?.pausesAtSegmentEnds = marksSegmentEnds && isLive && hlsAudio == nil }
    }

    /// One packet read ahead from each of `hls` and `hlsAudio`, to hand out in time order.
    private var aheadMain: Packet?, aheadAudio: Packet?
    private var mainEnded = false, audioEnded = false
    /// An HLS input's program date-times, by video timestamp; nil for other inputs.
    public var sourceClock: SourceClock? { hls?.clock }
    /// An HLS input's EXT-X-TARGETDURATION (seconds); nil for other inputs.
    public var targetDuration: Int? { hls.map { $0.reader.info.targetDuration } }
    /// What the HLS reader did (retries, skips, reloads); nil for other inputs.
    public var hlsStatistics: HLSInputStatistics? { hls?.reader.statistics.snapshot }
    /// An HLS input whose origin was refused mid-run (`HLSInputError.refused`): the error to end with,
    /// rather than the read error FFmpeg saw.
    public var inputRefusal: MediaError? { hls?.refusal ?? hlsAudio?.refusal }

    /// The container's start in `timeBase` units, rounded to the nearest (FFmpeg's `av_rescale_q`,
    /// integer arithmetic): every stage that makes timestamps relative uses this one value.
    public func start(inTimeBase timeBase: Rational) -> Int64 {
        av_rescale_q(startMicroseconds, AVRational(num: 1, den: AV_TIME_BASE),
                     AVRational(num: Int32(timeBase.numerator), den: Int32(timeBase.denominator)))
    }
    /// The picture-size limit decoders enforce.
    public let maxPixels: Int
    /// The stop: makes every blocking FFmpeg read (and the open) return AVERROR_EXIT.
    private let interruption: InputInterrupt
    private var interruptFlag: UnsafeMutablePointer<lf_interrupt_state> { interruption.state }
    /// For a network VOD input: how long one packet may take to arrive (microseconds), else 0.
    private let packetDeadline: Int64

    /// Opens `url`, blocking until its streams are probed (a listener: until a publisher sends
    /// video). `interrupt.stop()`, from any thread, ends the wait: the open then throws.
    public init(url: String, options: InputOptions = InputOptions(), interrupt: InputInterrupt = InputInterrupt()) throws(MediaError) {
        self.url = url
        interruption = interrupt
        let isNetwork = url.contains("://") && !url.hasPrefix("file:")
        // Its key, passphrase and tokens stay out of every message from here on, FFmpeg's lines included.
        if isNetwork { FFmpegLog.hideSecrets(of: url) }
        if !isNetwork {
            let path = url.hasPrefix("file:") ? String(url.dropFirst(5)) : url
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw .inputNotFound(url)
            }
            if isDirectory.boolValue { throw .inputUnreadable(url, reason: "it is a directory") }
            guard access(path, R_OK) == 0 else { throw .inputUnreadable(url, reason: "permission denied") }
        }

        let opened: UnsafeMutablePointer<AVFormatContext>
        do {
            if StreamInput.handles(url) {
                let input = try StreamInput(url: url, options: options, interrupt: interrupt)
                stream = input
                hls = nil
                opened = input.first
            } else if Self.looksLikePlaylist(url) {
                let input = try Self.openHLS(url, options: options, interrupt: interrupt)
                hls = input
                stream = nil
                opened = input.first
            } else if let ctx = try Self.openWithFFmpeg(url, isNetwork: isNetwork, options: options, interrupt: interrupt.state) {
                hls = nil
                stream = nil
                opened = ctx
            } else {
                // FFmpeg recognised a playlist by its content: our reader takes it.
                let input = try Self.openHLS(url, options: options, interrupt: interrupt)
                hls = input
                stream = nil
                opened = input.first
            }
        }
        context = opened
        audioIndexBase = Int(opened.pointee.nb_streams)
        if let input = hls, let rendition = input.reader.info.audioRendition {
            do {
                hlsAudio = try Self.openHLS(rendition.absoluteString, options: options, interrupt: interrupt)
            } catch {
                InputWarnings.add("the audio rendition \(rendition.absoluteString) cannot be read (\(error)); the video is read without it")
                hlsAudio = nil
            }
        } else {
            hlsAudio = nil
        }

        formatName = hls == nil ? String(cString: opened.pointee.iformat.pointee.name) : "hls"
        let start = opened.pointee.start_time
        startMicroseconds = start != lf_nopts_value() ? start : 0
        startTime = Double(startMicroseconds) / Double(AV_TIME_BASE)
        let d = opened.pointee.duration
        if let hls {
            duration = hls.reader.info.duration
            isLive = hls.reader.info.isLive
        } else if stream != nil {
            duration = nil
            isLive = true
        } else {
            duration = d > 0 && d != lf_nopts_value() ? Double(d) / Double(AV_TIME_BASE) : nil
            isLive = false
        }
        lf_interrupt_arm(interrupt.state, 0)
        // A network file: how long one packet may take (the HLS reader has its own per-segment limits).
        let c = options.ioTimeout.components
        let micros = c.seconds * 1_000_000 + c.attoseconds / 1_000_000_000_000
        packetDeadline = isNetwork && hls == nil && stream == nil ? 3 * micros : 0
        if let variant = hls?.reader.info.variant {
            bitRate = variant.averageBandwidth ?? variant.bandwidth
        } else {
            bitRate = opened.pointee.bit_rate > 0 ? Int(opened.pointee.bit_rate) : nil
        }

        // A multi-program input (an MPEG-TS with several programs): choose one, discard the rest.
        // An HLS master's variant was chosen by the reader.
        let (variant, wanted) = hls == nil ? Self.chooseVariant(opened, options.variant) : (nil, nil)
        chosenVariant = hls.flatMap { input in
            input.reader.info.variant.map { v in
                VariantInfo(index: input.reader.info.variantIndex ?? 0, count: input.reader.info.variantCount,
                            bandwidth: v.bandwidth, size: v.resolution.map { FrameSize(width: $0.width, height: $0.height) })
            }
        } ?? variant
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
            if hls == nil && stream == nil {
                var c: UnsafeMutablePointer<AVFormatContext>? = opened
                avformat_close_input(&c)
            }
            throw .noVideoStream(url)
        }
        video = VideoStreamInfo(stream: videoStream)
        if video.size.width * video.size.height > options.maxPixels || video.size.width > 16384 || video.size.height > 16384 {
            if hls == nil && stream == nil {
                var c: UnsafeMutablePointer<AVFormatContext>? = opened
                avformat_close_input(&c)
            }
            throw .inputTooLarge(url, reason: "its video is \(video.size), over the limit of \(options.maxPixels) pixels")
        }
        self.maxPixels = options.maxPixels
        if let rendition = hlsAudio?.first {
            // The audio rendition's stream stands in for any audio muxed with the video.
            let inner = av_find_best_stream(rendition, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
            if inner >= 0, let s = rendition.pointee.streams[Int(inner)], s.pointee.codecpar.pointee.ch_layout.nb_channels > 0 {
                var info = AudioStreamInfo(stream: s)
                info.index = audioIndexBase + Int(inner)
                audio = info
            } else {
                audio = nil
            }
        } else if audioIndex >= 0, let s = opened.pointee.streams[Int(audioIndex)], s.pointee.codecpar.pointee.ch_layout.nb_channels > 0 {
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
        if hls == nil && stream == nil {
            var c: UnsafeMutablePointer<AVFormatContext>? = context
            avformat_close_input(&c)
        }
    }

    func stream(_ index: Int) -> UnsafeMutablePointer<AVStream> {
        if let rendition = hlsAudio?.first, index >= audioIndexBase { return rendition.pointee.streams[index - audioIndexBase]! }
        return context.pointee.streams[index]!
    }

    /// Makes every blocking read return promptly (from any thread).
    public func interrupt() {
        interruption.stop()
        hls?.reader.stop()
        hlsAudio?.reader.stop()
    }

    public enum ReadResult { case packet, endOfFile }

    /// Reads the next packet of the video or audio stream into `packet`.
    public func read(into packet: Packet) throws(FFmpegError) -> ReadResult {
        if let stream { return try stream.read(into: packet, video: video.index, audio: audio?.index) ? .packet : .endOfFile }
        if let hls {
            if hlsAudio != nil { return try readWithRendition(into: packet) }
            switch try hls.read(into: packet, video: video.index, audio: audio?.index) {
            case .packet: return .packet
            case .segmentEnd:
                packet.makeSegmentEnd(stream: video.index)
                return .packet
            case .end: return .endOfFile
            }
        }
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
    /// The next packet of an HLS input whose audio is a rendition of its own: the video's and the
    /// rendition's packets merged in time order (both renditions share one timeline).
    private func readWithRendition(into packet: Packet) throws(FFmpegError) -> ReadResult {
        guard let hls, let hlsAudio, let audio else { return .endOfFile }
        if aheadMain == nil && !mainEnded {
            let p = Packet()
            if try hls.readPacket(into: p, video: video.index, audio: nil) { aheadMain = p } else { mainEnded = true }
        }
        if aheadAudio == nil && !audioEnded {
            let p = Packet()
            if try hlsAudio.readPacket(into: p, video: -1, audio: audio.index - audioIndexBase) {
                p.pointer.pointee.stream_index = Int32(audio.index)
                aheadAudio = p
            } else {
                audioEnded = true
            }
        }
        func micros(_ p: Packet?, _ timeBase: Rational) -> Int64? {
            guard let p else { return nil }
            let ts = p.pointer.pointee.dts != lf_nopts_value() ? p.pointer.pointee.dts : p.pointer.pointee.pts
            if ts == lf_nopts_value() { return .min }
            return av_rescale_q(ts, AVRational(num: Int32(timeBase.numerator), den: Int32(timeBase.denominator)),
                                AVRational(num: 1, den: AV_TIME_BASE))
        }
        let m = micros(aheadMain, video.timeBase), a = micros(aheadAudio, audio.timeBase)
        let takeAudio: Bool
        switch (m, a) {
        case (nil, nil): return .endOfFile
        case (nil, _): takeAudio = true
        case (_, nil): takeAudio = false
        case let (m?, a?): takeAudio = a < m
        }
        let chosen = takeAudio ? aheadAudio! : aheadMain!
        packet.unref()
        av_packet_move_ref(packet.pointer, chosen.pointer)
        if takeAudio { aheadAudio = nil } else { aheadMain = nil }
        return .packet
    }

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
    /// A stop of `interrupt` ends the scan (the figure is then of what was read).
    public static func measuredVideoBitRate(url: String, interrupt: InputInterrupt = InputInterrupt()) -> Int? {
        guard let scan = try? Demuxer(url: url, interrupt: interrupt), !scan.isLive, let duration = scan.duration, duration > 0 else { return nil }
        if let audio = scan.audio { scan.stream(audio.index).pointee.discard = AVDISCARD_ALL }
        let packet = Packet()
        var bytes = 0
        while (try? scan.read(into: packet)) == .packet {
            if packet.streamIndex == scan.video.index { bytes += packet.size }
        }
        return Int(Double(bytes) * 8 / duration)
    }
}

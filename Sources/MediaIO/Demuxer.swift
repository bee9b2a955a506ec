import CFFmpeg
import CFFmpegLog
import HLS
import HLSClient
import struct Filters.FrameSize
import Foundation

/// A variant of a master playlist, as read.
public struct VariantInfo: Sendable {
    public var index: Int
    public var count: Int
    public var bandwidth: Int?
    public var size: FrameSize?
    /// What the master says of closed captions in this variant's video.
    public var closedCaptions: ClosedCaptionDeclaration = .unknown
}

/// Reads the packets of one input — a file, an HLS playlist or a pushed stream (its `PacketSource`)
/// — and describes it: the video and audio streams chosen, its start, duration, liveness.
public final class Demuxer {
    /// Where the packets come from: one of the three kinds of input.
    let source: any PacketSource
    var context: UnsafeMutablePointer<AVFormatContext> { source.context }
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
    /// Whether the input is live (an HLS playlist without an end, a pushed stream).
    public let isLive: Bool
    /// A pushed input whose connection ends is opened again (the listener takes the next
    /// publisher), the timeline going on: a channel that outlives its input. Set from the plan.
    public var reconnects: Bool {
        get { source.reconnects }
        set { source.reconnects = newValue }
    }
    /// Times a pushed input's publisher connected again.
    public var reconnections: Int { source.reconnections }

    /// Whether opening `url` waits for a publisher to push to it (an RTMP `--listen`, an SRT
    /// listener, UDP), which may take as long as the publisher does.
    public static func waitsForPublisher(_ url: String, options: InputOptions) -> Bool {
        guard StreamInput.handles(url), StreamInput.isListener(url, options: options) else { return false }
        // One that will be refused (no key off loopback) does not wait.
        do { try StreamInput.checkAuthentication(url, options: options) } catch { return false }
        return true
    }
    /// A live HLS input's video ends each independent segment with a packet `isSegmentEnd`, the
    /// moment its last bytes are read (MPEG-TS would hold its last frames until the next segment),
    /// so a decoder can drain what it holds (`Decoder.sendEndOfStream`, then `resume`). Only when every
    /// segment so far began with a keyframe, and not with an audio rendition of its own. Off by default.
    public var marksSegmentEnds = false {
        didSet { source.markSegmentEnds(marksSegmentEnds) }
    }

    /// An HLS input's program date-times, by video timestamp; nil for other inputs.
    public var sourceClock: SourceClock? { source.sourceClock }
    /// An HLS input's EXT-X-TARGETDURATION (seconds); nil for other inputs.
    public var targetDuration: Int? { source.targetDuration }
    /// What the HLS reader did (retries, skips, reloads); nil for other inputs.
    public var hlsStatistics: HLSInputStatistics? { source.hlsStatistics }
    /// An HLS input whose origin was refused mid-run (`HLSInputError.refused`): the error to end with,
    /// rather than the read error FFmpeg saw.
    public var inputRefusal: MediaError? { source.refusal }

    /// The container's start in `timeBase` units, rounded to the nearest (FFmpeg's `av_rescale_q`,
    /// integer arithmetic): every stage that makes timestamps relative uses this one value.
    public func start(inTimeBase timeBase: Rational) -> Int64 {
        av_rescale_q(startMicroseconds, AVRational(num: 1, den: AV_TIME_BASE),
                     AVRational(num: Int32(timeBase.numerator), den: Int32(timeBase.denominator)))
    }
    /// The picture-size limit decoders enforce.
    public let maxPixels: Int
    /// This input's warnings (its own and FFmpeg's lines while it opens and reads): the run's alone.
    public let warnings: InputWarningLog
    /// The stop: makes every blocking FFmpeg read (and the open) return AVERROR_EXIT.
    private let interruption: InputInterrupt

    /// Opens `url`, blocking until its streams are probed (a listener: until a publisher sends
    /// video). `interrupt.stop()`, from any thread, ends the wait: the open then throws. From async
    /// code, `open(url:options:interrupt:)` runs this on a thread of its own, cancelled with its task.
    public init(url: String, options: InputOptions = InputOptions(), interrupt: InputInterrupt = InputInterrupt()) throws(MediaError) {
        self.url = url
        interruption = interrupt
        let warnings = options.warnings ?? InputWarningLog()
        self.warnings = warnings
        // FFmpeg's lines while this thread opens the input are this input's.
        let route = lf_log_route(warnings.sink)
        defer { lf_log_route(route) }
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

        let source = try Self.openSource(url, isNetwork: isNetwork, options: options, interrupt: interrupt, warnings: warnings)
        self.source = source
        let opened = source.context
        formatName = source.formatName
        let start = opened.pointee.start_time
        startMicroseconds = start != lf_nopts_value() ? start : 0
        startTime = Double(startMicroseconds) / Double(AV_TIME_BASE)
        duration = source.duration
        isLive = source.isLive
        lf_interrupt_arm(interrupt.state, 0)
        bitRate = source.bitRate

        // A multi-program input (an MPEG-TS with several programs): choose one, discard the rest.
        // An HLS master's variant was chosen by the reader.
        let (variant, wanted) = source.choosesVariant ? (nil, nil) : Self.chooseVariant(opened, options.variant)
        chosenVariant = source.variant ?? variant
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
        // A refused input is closed with its source, as this init throws.
        guard let videoStream else { throw .noVideoStream(url) }
        video = VideoStreamInfo(stream: videoStream)
        if video.size.width * video.size.height > options.maxPixels || video.size.width > 16384 || video.size.height > 16384 {
            throw .inputTooLarge(url, reason: "its video is \(video.size), over the limit of \(options.maxPixels) pixels")
        }
        self.maxPixels = options.maxPixels
        if source.hasSeparateAudio {
            // The audio rendition's stream stands in for any audio muxed with the video.
            audio = source.separateAudio
        } else if audioIndex >= 0, let s = opened.pointee.streams[Int(audioIndex)], s.pointee.codecpar.pointee.ch_layout.nb_channels > 0 {
            audio = AudioStreamInfo(stream: s)
        } else {
            audio = nil
        }
        // Drop packets of streams we never read, so the demuxer does not queue them; SCTE-35
        // sections are read (`takeCues`), never handed out as packets.
        for i in 0..<Int(opened.pointee.nb_streams) where i != video.index && i != audio?.index
            && !SpliceSectionReader.isSpliceStream(opened, i) {
            opened.pointee.streams[i]?.pointee.discard = AVDISCARD_ALL
        }
    }

    func stream(_ index: Int) -> UnsafeMutablePointer<AVStream> { source.stream(index) }

    /// Makes every blocking read return promptly (from any thread).
    public func interrupt() {
        // The HLS readers stop with it (`InputInterrupt.onStop`).
        interruption.stop()
    }

    public enum ReadResult { case packet, endOfFile }

    /// Reads the next packet of the video or audio stream into `packet`.
    public func read(into packet: Packet) throws(FFmpegError) -> ReadResult {
        // FFmpeg's lines while this thread reads are this input's.
        let route = lf_log_route(warnings.sink)
        defer { lf_log_route(route) }
        return try source.read(into: packet, video: video.index, audio: audio?.index)
    }

    /// The ad markers read since the last call, in the order they came: SCTE-35 sections of an
    /// MPEG-TS PID (stream type 0x86), an HLS playlist's `EXT-X-DATERANGE` and `EXT-X-CUE-*` tags.
    /// Each is delivered once (a tag repeated on every reload, a section repeated before its splice);
    /// a DATERANGE that changes later comes again as an update (`SourceCue.isUpdate`).
    ///
    /// Call it after each `read`. The guarantee: a cue is returned no later than the call after the
    /// `read` of the first video packet whose pts reaches its time, so a stage holding the pictures
    /// it has read can act on the exact one. A playlist's cue comes with the first video packet of
    /// the segment its time falls in (for a CUE tag: the segment it stands before); a TS section comes
    /// where the multiplex carries it, usually seconds before its splice. One that came after its
    /// picture (a section sent late, a DATERANGE added to a segment already read) is still
    /// delivered, `isLate`.
    public func takeCues() -> [SourceCue] { source.takeCues() }

    /// Whether ad markers may come: from a live input or an HLS playlist at any time, from a file
    /// only if it has a SCTE-35 stream. An output with no chance of any leaves its MPEG-TS as it was.
    public var mayCarryAdMarkers: Bool {
        if isLive || source is HLSPlaylistInput { return true }
        return (0..<Int(context.pointee.nb_streams)).contains { SpliceSectionReader.isSpliceStream(context, $0) }
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

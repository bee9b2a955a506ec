import CFFmpeg
import Foundation
import HLS
import HLSClient
import struct Filters.FrameSize

/// A playlist read by our HLS reader (`HLSReader`) and demuxed by FFmpeg run by run (`HLSInput`),
/// with the variant's audio rendition read by a reader of its own when its audio is a playlist of
/// its own: its stream's index is past the video's input's (`audioIndexBase` + its own), and the
/// two are merged in time order (both renditions share one timeline).
final class HLSPlaylistInput: PacketSource {
    let main: HLSInput
    /// The audio rendition, when the variant's audio is a playlist of its own.
    let audioRendition: HLSInput?
    private let audioIndexBase: Int
    /// One packet read ahead from each of `main` and `audioRendition`, to hand out in time order.
    private var aheadMain: Packet?, aheadAudio: Packet?
    private var mainEnded = false, audioEnded = false

    /// A playlist by its name: our HLS reader opens it. (A playlist by another name is recognised
    /// by FFmpeg's probe and handed over too: `FileInput` returns nil.)
    static func looksLikePlaylist(_ url: String) -> Bool {
        let lower = url.lowercased()
        let path = lower.split(separator: "?", maxSplits: 1).first.map(String.init) ?? lower
        return path.hasSuffix(".m3u8") || path.hasSuffix(".m3u") || lower.contains(".m3u8?")
    }

    init(url: String, options: InputOptions, interrupt: InputInterrupt, warnings: InputWarningLog) throws(MediaError) {
        main = try Self.openReader(url, options: options, interrupt: interrupt, warnings: warnings)
        audioIndexBase = Int(main.first.pointee.nb_streams)
        if let rendition = main.reader.info.audioRendition {
            do {
                audioRendition = try Self.openReader(rendition.absoluteString, options: options, interrupt: interrupt, warnings: warnings)
            } catch {
                warnings.add("the audio rendition \(rendition.absoluteString) cannot be read (\(error)); the video is read without it")
                audioRendition = nil
            }
        } else {
            audioRendition = nil
        }
    }

    var context: UnsafeMutablePointer<AVFormatContext> { main.first }
    var formatName: String { "hls" }
    var duration: Double? { main.reader.info.duration }
    var isLive: Bool { main.reader.info.isLive }
    var bitRate: Int? {
        if let variant = main.reader.info.variant { return variant.averageBandwidth ?? variant.bandwidth }
        return context.pointee.bit_rate > 0 ? Int(context.pointee.bit_rate) : nil
    }
    var choosesVariant: Bool { true }
    var variant: VariantInfo? {
        let info = main.reader.info
        return info.variant.map { v in
            VariantInfo(index: info.variantIndex ?? 0, count: info.variantCount,
                        bandwidth: v.bandwidth, size: v.resolution.map { FrameSize(width: $0.width, height: $0.height) },
                        closedCaptions: info.closedCaptions)
        }
    }
    var hasSeparateAudio: Bool { audioRendition != nil }
    var separateAudio: AudioStreamInfo? {
        guard let rendition = audioRendition?.first else { return nil }
        let inner = av_find_best_stream(rendition, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
        guard inner >= 0, let s = rendition.pointee.streams[Int(inner)], s.pointee.codecpar.pointee.ch_layout.nb_channels > 0 else { return nil }
        var info = AudioStreamInfo(stream: s)
        info.index = audioIndexBase + Int(inner)
        return info
    }
    var sourceClock: SourceClock? { main.clock }
    var targetDuration: Int? { main.reader.info.targetDuration }
    var hlsStatistics: HLSInputStatistics? { HLSInputStatistics(main.reader.statistics.snapshot) }
    var refusal: MediaError? { main.refusal ?? audioRendition?.refusal }

    /// The video playlist's markers (an audio rendition's repeat them, if it has any).
    func takeCues() -> [SourceCue] { main.takeCues() }

    func markSegmentEnds(_ marks: Bool) {
        main.pausesAtSegmentEnds = marks && isLive && audioRendition == nil
    }

    func stream(_ index: Int) -> UnsafeMutablePointer<AVStream> {
        if let rendition = audioRendition?.first, index >= audioIndexBase { return rendition.pointee.streams[index - audioIndexBase]! }
        return context.pointee.streams[index]!
    }

    func read(into packet: Packet, video: Int, audio: Int?) throws(FFmpegError) -> Demuxer.ReadResult {
        if audioRendition != nil { return try readWithRendition(into: packet, video: video, audio: audio) }
        switch try main.read(into: packet, video: video, audio: audio) {
        case .packet: return .packet
        case .segmentEnd:
            packet.makeSegmentEnd(stream: video)
            return .packet
        case .end: return .endOfFile
        }
    }

    /// The next packet of the video's and the rendition's, merged in time order.
    private func readWithRendition(into packet: Packet, video: Int, audio: Int?) throws(FFmpegError) -> Demuxer.ReadResult {
        guard let audioRendition, let audio else { return .endOfFile }
        if aheadMain == nil && !mainEnded {
            let p = Packet()
            if try main.readPacket(into: p, video: video, audio: nil) { aheadMain = p } else { mainEnded = true }
        }
        if aheadAudio == nil && !audioEnded {
            let p = Packet()
            if try audioRendition.readPacket(into: p, video: -1, audio: audio - audioIndexBase) {
                p.pointer.pointee.stream_index = Int32(audio)
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
        let m = micros(aheadMain, Rational(stream(video).pointee.time_base))
        let a = micros(aheadAudio, Rational(stream(audio).pointee.time_base))
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

    /// Opens one playlist with our reader and the demuxer on its first run of segments.
    private static func openReader(_ url: String, options: InputOptions, interrupt: InputInterrupt,
                                   warnings: InputWarningLog) throws(MediaError) -> HLSInput {
        var readerOptions = HLSReaderOptions()
        readerOptions.ioTimeout = options.ioTimeout
        readerOptions.maxRedirects = options.maxRedirects
        readerOptions.variant = options.variant
        readerOptions.liveStart = options.liveStart
        readerOptions.allowPrivateNetworks = options.allowPrivateNetworks
        readerOptions.warn = { warnings.add($0) }
        readerOptions.metricDimensions = options.metricDimensions
        let reader: HLSReader
        let configured = readerOptions
        do {
            reader = try interrupt.waitFor { () async throws(HLSInputError) -> HLSReader in try await HLSReader.open(url, options: configured) }
        } catch {
            if interrupt.isStopped { throw .inputUnreadable(url, reason: "reading was stopped") }
            throw HLSInput.error(for: .failed(error), url: url, before: true)
        }
        reader.start()
        // A stop while the first segments are read ends the reader's feed, so the probe returns.
        interrupt.onStop { reader.stop() }
        return try HLSInput(reader: reader, maxPixels: options.maxPixels, interrupt: interrupt.state)
    }
}

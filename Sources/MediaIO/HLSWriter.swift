import CFFmpeg
import Foundation
import Filters
import HLS

/// One published segment, with what was measured while writing it.
public struct HLSSegmentRecord: Sendable, Equatable {
    /// Media sequence number (0 for the first segment of the run).
    public var sequence: Int
    /// File name, relative to the playlist's folder.
    public var uri: String
    /// Start of the segment in seconds of the writer's input timeline.
    public var startTime: Double
    /// EXTINF duration in seconds.
    public var duration: Double
    public var bytes: Int
    /// The segment's first video packet is a keyframe.
    public var startsWithKeyframe: Bool
    /// EXT-X-PROGRAM-DATE-TIME (event and live playlists).
    public var programDateTime: Date?
}

/// Writes one HLS rendition (segments + media playlist) from encoded packets, following RFC 8216.
///
/// Design: ONE libavformat muxer (`mpegts` or `mp4`) for the whole run, writing through a custom
/// AVIOContext whose bytes are cut into files at segment boundaries. One muxer keeps timestamps,
/// MPEG-TS continuity counters and PCR continuous across segments (a muxer per segment would reset
/// the counters and make avoid_negative_ts shift only the first segment). At each cut the writer
/// flushes the interleaving queue (`av_interleaved_write_frame(nil)`), the muxer (`av_write_frame(nil)`:
/// pending PES packets for TS, a moof+mdat fragment for fMP4) and the AVIO buffer, so every byte before
/// the cut lands in the old file. For TS it then sets `mpegts_flags=+resend_headers`, so each segment
/// begins with PAT/PMT; the muxer prepends the SPS/PPS from (Annex B) extradata to every keyframe, so
/// each segment decodes on its own. For fMP4 the muxer writes ftyp+moov at the header (`empty_moov`),
/// which becomes the init segment, and one fragment per segment (`frag_custom`).
///
/// Segments and playlists are written to `name.tmp` and renamed into place (mode 0644).
/// Call order is `PacketSink`'s; after `finish()` the playlist ends with EXT-X-ENDLIST.
public final class HLSWriter: PacketSink {
    public let playlistPath: String
    public let options: HLSOutputOptions
    /// Measured facts of every segment written, in order (including live segments already deleted).
    public private(set) var segments: [HLSSegmentRecord] = []
    /// Things that make the output less than ideal but not wrong, e.g. a keyframe arriving late.
    public private(set) var warnings: [String] = []
    /// RFC 6381 codecs of the streams, e.g. `avc1.64001e,mp4a.40.2` (known after `writeHeader`, or
    /// after the first keyframe when the video has no extradata).
    public var codecsString: String { streams.compactMap(\.codec).joined(separator: ",") }
    /// Video size and frame rate, for the master playlist.
    public private(set) var resolution: FrameSize?
    public private(set) var frameRate: Rational?

    private let context: UnsafeMutablePointer<AVFormatContext>
    private var io: UnsafeMutablePointer<AVIOContext>?
    private let sink = SegmentByteSink()
    private let folder: String
    private let namePattern: SegmentNamePattern
    private let initSegmentName: String?
    private let overwrite: Bool
    private let clock: @Sendable () -> Date

    private struct StreamState {
        var sourceTimeBase: AVRational
        var isVideo: Bool
        /// One frame in `sourceTimeBase` (for packets from libx264, which come without a duration).
        var frameDuration: Int64
        var codec: String?
    }
    private var streams: [StreamState] = []
    /// The stream whose keyframes cut segments: the first video stream, else the first stream.
    private var cutStream: Int? { streams.firstIndex(where: \.isVideo) ?? (streams.isEmpty ? nil : 0) }

    /// Packets of the other streams (audio), held until the video has reached their time, so a cut
    /// puts each audio packet in the segment its time belongs to (the video encoder runs behind).
    private var held: [(packet: Packet, index: Int, timeBase: Rational, time: Double)] = []
    private var headerWritten = false
    private var finished = false
    private var totalBytes: Int64 = 0
    // The open segment.
    private var segmentOpen = false
    private var segmentStart: Double?
    private var segmentStartsWithKeyframe = false
    private var nextCut = 0.0
    private var mediaEnd = 0.0
    // Program date time: wall clock at the first segment's start, then media time added.
    private var originWallClock: Date?
    private var originMediaTime = 0.0
    private var deletedThrough = -1

    /// - Parameters:
    ///   - playlistPath: the media playlist (`.m3u8`); segments go next to it.
    ///   - overwrite: replace an existing playlist and segments of the same names.
    ///   - clock: wall clock for EXT-X-PROGRAM-DATE-TIME (tests pass a fixed one).
    public init(playlistPath: String, options: HLSOutputOptions, overwrite: Bool,
                clock: @escaping @Sendable () -> Date = { Date() }) throws(MediaError) {
        try options.validate()
        self.playlistPath = playlistPath
        self.options = options
        self.overwrite = overwrite
        self.clock = clock
        let url = URL(fileURLWithPath: playlistPath)
        folder = url.deletingLastPathComponent().path
        let stem = url.deletingPathExtension().lastPathComponent
        // A '%' in the playlist's name would make the default segment pattern ambiguous (it used to trap here).
        guard let pattern = SegmentNamePattern(options.segmentNamePattern ?? "\(stem)_%05d.\(options.segmentType.fileExtension)") else {
            throw .unsupportedOutput(playlistPath, reason: "an HLS playlist name must not contain '%'")
        }
        namePattern = pattern
        initSegmentName = options.segmentType == .fmp4 ? (options.initSegmentName ?? "\(stem)_init.mp4") : nil

        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .outputFolderMissing(folder)
        }
        guard access(folder, W_OK) == 0 else { throw .outputNotWritable(playlistPath, reason: "the folder is not writable") }
        if !overwrite {
            for name in [url.lastPathComponent, namePattern.name(0)] + (initSegmentName.map { [$0] } ?? [])
            where FileManager.default.fileExists(atPath: folder + "/" + name) {
                throw .outputExists(folder + "/" + name)
            }
        }

        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        let muxer = options.segmentType == .ts ? "mpegts" : "mp4"
        let code = avformat_alloc_output_context2(&ctx, nil, muxer, nil)
        guard code >= 0, let ctx else { throw .unsupportedOutput(playlistPath, reason: ffmpegErrorText(code)) }
        context = ctx

        // Custom output: libavformat calls back with bytes; the opaque pointer is the unretained sink,
        // which lives as long as this writer (and so as long as the AVIOContext).
        let bufferSize: Int32 = 64 * 1024
        guard let buffer = av_malloc(Int(bufferSize))?.assumingMemoryBound(to: UInt8.self),
              let pb = avio_alloc_context(buffer, bufferSize, 1, Unmanaged.passUnretained(sink).toOpaque(), nil,
                                          { opaque, buf, size -> Int32 in
                                              guard let opaque, let buf, size >= 0 else { return lf_averror(EINVAL) }
                                              let sink = Unmanaged<SegmentByteSink>.fromOpaque(opaque).takeUnretainedValue()
                                              return sink.receive(buf, count: Int(size))
                                          }, nil) else {
            avformat_free_context(ctx)
            throw .outputNotWritable(playlistPath, reason: "out of memory")
        }
        pb.pointee.seekable = 0
        io = pb
        ctx.pointee.pb = pb
        ctx.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
    }

    public func discardUnfinished() {
        sink.end()?.discard()
    }

    deinit {
        // An unfinished run leaves published segments but no half-written file.
        sink.end()?.discard()
        if let pb = io {
            av_freep(&pb.pointee.buffer)
            var p: UnsafeMutablePointer<AVIOContext>? = pb
            avio_context_free(&p)
            io = nil
        }
        context.pointee.pb = nil
        avformat_free_context(context)
    }

    // MARK: - PacketSink

    /// Both containers want codec headers out of band: mp4 needs avcC/ASC, and for TS the muxer
    /// re-sends the Annex B extradata before each keyframe and builds ADTS headers from the ASC.
    public var wantsGlobalHeader: Bool { true }

    public var bytesWritten: Int64 { totalBytes + Int64(sink.file?.byteCount ?? 0) }

    public func addStream(from encoder: Encoder) throws(MediaError) -> Int {
        guard let stream = avformat_new_stream(context, nil) else { throw .invalidSettings("avformat_new_stream failed") }
        let code = avcodec_parameters_from_context(stream.pointee.codecpar, encoder.context)
        if code < 0 { throw .processing(FFmpegError(code: code, operation: "avcodec_parameters_from_context")) }
        let enc = encoder.context.pointee
        stream.pointee.time_base = enc.time_base
        let isVideo = enc.codec_type == AVMEDIA_TYPE_VIDEO
        var frameDuration: Int64 = 0
        if isVideo {
            stream.pointee.avg_frame_rate = enc.framerate
            if enc.framerate.num > 0, enc.framerate.den > 0 {
                frameDuration = max(1, av_rescale_q(1, AVRational(num: enc.framerate.den, den: enc.framerate.num), enc.time_base))
                frameRate = Rational(enc.framerate)
            }
            resolution = FrameSize(width: Int(enc.width), height: Int(enc.height))
        }
        streams.append(StreamState(sourceTimeBase: enc.time_base, isVideo: isVideo, frameDuration: frameDuration, codec: nil))
        return Int(stream.pointee.index)
    }

    public func addStream(copying index: Int, of demuxer: Demuxer) throws(MediaError) -> Int {
        let source = demuxer.stream(index)
        guard let stream = avformat_new_stream(context, nil) else { throw .invalidSettings("avformat_new_stream failed") }
        let code = avcodec_parameters_copy(stream.pointee.codecpar, source.pointee.codecpar)
        if code < 0 { throw .processing(FFmpegError(code: code, operation: "avcodec_parameters_copy")) }
        stream.pointee.codecpar.pointee.codec_tag = 0
        stream.pointee.time_base = source.pointee.time_base
        let par = source.pointee.codecpar.pointee
        let isVideo = par.codec_type == AVMEDIA_TYPE_VIDEO
        var frameDuration: Int64 = 0
        if isVideo {
            let rate = source.pointee.avg_frame_rate
            stream.pointee.avg_frame_rate = rate
            if rate.num > 0, rate.den > 0 {
                frameDuration = max(1, av_rescale_q(1, AVRational(num: rate.den, den: rate.num), source.pointee.time_base))
                frameRate = Rational(rate)
            }
            resolution = FrameSize(width: Int(par.width), height: Int(par.height))
        }
        streams.append(StreamState(sourceTimeBase: source.pointee.time_base, isVideo: isVideo, frameDuration: frameDuration, codec: nil))
        return Int(stream.pointee.index)
    }

    public func writeHeader() throws(MediaError) {
        guard !headerWritten else { return }
        guard !streams.isEmpty else { throw .invalidSettings("an HLS output needs at least one stream") }
        for i in streams.indices { streams[i].codec = codecString(ofStream: i, keyframe: nil) }
        if overwrite { unlink(playlistPath) }

        var dict: OpaquePointer? = nil
        defer { av_dict_free(&dict) }
        if options.segmentType == .fmp4 {
            // empty_moov: ftyp+moov at the header = the init segment. frag_custom: a fragment only when we
            // flush, i.e. one moof+mdat per segment. default_base_moof: offsets relative to each moof, so a
            // segment stands alone. skip_trailer: no mfra index at the end of the last segment.
            av_dict_set(&dict, "movflags", "+frag_custom+empty_moov+default_base_moof+skip_trailer", 0)
        }
        let code = avformat_write_header(context, &dict)
        if code < 0 { throw .processing(FFmpegError(code: code, operation: "writing the HLS \(options.segmentType.rawValue) header")) }
        headerWritten = true
        if let left = av_dict_get(dict, "", nil, AV_DICT_IGNORE_SUFFIX) {
            throw .invalidSettings("muxer option '\(String(cString: left.pointee.key))' is not known to this FFmpeg")
        }
        avio_flush(io)
        try checkSink()
        if let initSegmentName {
            let bytes = sink.takePending()
            guard !bytes.isEmpty else { throw .processing(FFmpegError(code: lf_averror(EIO), operation: "writing the fMP4 init segment")) }
            try AtomicFile.write(bytes, to: folder + "/" + initSegmentName)
        }
        // The first playlist appears with the first segment: an empty one would be version 1 and then
        // jump to 3, and players treat a missing playlist and an empty live one alike (retry).
    }

    public func write(_ packet: Packet, toStream index: Int, timeBase: Rational) throws(MediaError) {
        guard headerWritten, !finished else { throw .invalidSettings("HLSWriter.write called outside writeHeader…finish") }
        if let cut = cutStream, index != cut, streams[cut].isVideo {
            let ts = packet.presentationTimestamp ?? packet.decodeTimestamp ?? 0
            held.append((packet.clone(), index, timeBase, Double(ts) * timeBase.doubleValue))
            return
        }
        if index == cutStream, let pts = packet.presentationTimestamp {
            // Audio before this picture belongs before it (and before a cut it may start).
            // A keyframe may start a segment at its pts: audio before that pts goes first.
            let dts = Double(packet.decodeTimestamp ?? pts) * timeBase.doubleValue
            try releaseHeld(before: packet.isKeyframe ? Double(pts) * timeBase.doubleValue : min(dts, Double(pts) * timeBase.doubleValue))
        }
        try writeNow(packet, toStream: index, timeBase: timeBase)
    }

    /// Writes held packets whose time is before `time` (all of them with `.infinity`).
    private func releaseHeld(before time: Double) throws(MediaError) {
        var count = 0
        while count < held.count, held[count].time < time { count += 1 }
        guard count > 0 else { return }
        let ready = held.prefix(count)
        held.removeFirst(count)
        for h in ready { try writeNow(h.packet, toStream: h.index, timeBase: h.timeBase) }
    }

    private func writeNow(_ packet: Packet, toStream index: Int, timeBase: Rational) throws(MediaError) {
        let p = packet.pointer
        let state = streams[index]
        if p.pointee.duration == 0, state.frameDuration > 0 {
            p.pointee.duration = av_rescale_q(state.frameDuration, state.sourceTimeBase, timeBase.av)
        }
        if index == cutStream, let pts = packet.presentationTimestamp {
            let time = Double(pts) * timeBase.doubleValue
            let end = Double(pts + max(0, p.pointee.duration)) * timeBase.doubleValue
            if streams[index].codec == nil, packet.isKeyframe {
                streams[index].codec = codecString(ofStream: index, keyframe: packet)
            }
            try cutIfNeeded(at: time, keyframe: packet.isKeyframe)
            mediaEnd = max(mediaEnd, end)
        }
        if !segmentOpen { try openSegment() }

        p.pointee.stream_index = Int32(index)
        av_packet_rescale_ts(p, timeBase.av, context.pointee.streams[index]!.pointee.time_base)
        p.pointee.pos = -1
        let code = av_interleaved_write_frame(context, p)
        try checkSink()
        if code < 0 { throw .processing(FFmpegError(code: code, operation: "writing \(playlistPath)")) }
    }

    /// Flushes the last segment and writes the final playlist with EXT-X-ENDLIST (every playlist type:
    /// the end of input and Ctrl-C both end the presentation).
    public func finish() throws(MediaError) {
        guard headerWritten, !finished else { return }
        try releaseHeld(before: .infinity)
        finished = true
        let code = av_write_trailer(context)
        avio_flush(io)
        try checkSink()
        if code < 0 { throw .processing(FFmpegError(code: code, operation: "finishing \(playlistPath)")) }
        if segmentOpen, let start = segmentStart {
            try closeSegment(duration: mediaEnd - start)
        } else {
            sink.end()?.discard()
        }
        try publishPlaylist(ended: true)
    }

    // MARK: - Measurements

    /// Largest segment bit rate (bytes × 8 / EXTINF), ignoring a last segment shorter than half the
    /// target when there are others (its rate is noise). RFC 8216's BANDWIDTH.
    public var peakBitRate: Int {
        var considered = segments
        if considered.count > 1, let last = considered.last, last.duration < options.segmentDuration / 2 {
            considered.removeLast()
        }
        let rates = considered.filter { $0.duration > 0 }.map { Double($0.bytes) * 8 / $0.duration }
        return Int((rates.max() ?? 0).rounded(.up))
    }

    /// Total segment bytes × 8 / total duration. RFC 8216's AVERAGE-BANDWIDTH.
    public var averageBitRate: Int {
        let seconds = segments.reduce(0) { $0 + $1.duration }
        guard seconds > 0 else { return 0 }
        return Int((Double(segments.reduce(0) { $0 + $1.bytes }) * 8 / seconds).rounded(.up))
    }

    /// This rendition as a master playlist entry; `uri` is the media playlist relative to the master.
    public func rendition(uri: String) -> HLSRendition {
        HLSRendition(uri: uri, peakBitRate: peakBitRate, averageBitRate: averageBitRate, resolution: resolution,
                     frameRate: frameRate, codecs: codecsString)
    }

    // MARK: - Segments

    private func cutIfNeeded(at time: Double, keyframe: Bool) throws(MediaError) {
        let tolerance = 1e-6
        guard let start = segmentStart else {
            // First packet of the cutting stream: the timeline starts here.
            segmentStart = time
            segmentStartsWithKeyframe = keyframe
            nextCut = ((time + tolerance) / options.segmentDuration).rounded(.down) * options.segmentDuration + options.segmentDuration
            originWallClock = clock()
            originMediaTime = time
            return
        }
        guard keyframe, time >= nextCut - tolerance, time > start else { return }
        if time > nextCut + options.segmentDuration / 2 {
            warnings.append("no keyframe at \(HLSNumber.decimal(nextCut, places: 3)) s: segment \(segments.count) was cut at "
                            + "\(HLSNumber.decimal(time, places: 3)) s; force keyframes every \(options.segmentDuration) s")
        }
        // Everything queued before this keyframe belongs to the segment that ends here.
        _ = av_interleaved_write_frame(context, nil)
        _ = av_write_frame(context, nil)
        avio_flush(io)
        try checkSink()
        try closeSegment(duration: time - start)
        segmentStart = time
        segmentStartsWithKeyframe = true
        nextCut = ((time + tolerance) / options.segmentDuration).rounded(.down) * options.segmentDuration + options.segmentDuration
        if options.segmentType == .ts {
            // One-shot flag: PAT and PMT go out again before the next packet, at the top of the new file.
            av_opt_set(context.pointee.priv_data, "mpegts_flags", "+resend_headers", 0)
        }
        try openSegment()
    }

    private func openSegment() throws(MediaError) {
        let name = namePattern.name(segments.count)
        try sink.begin(OpenFile(creating: AtomicFile.temporaryPath(for: folder + "/" + name)))
        segmentOpen = true
    }

    private func closeSegment(duration: Double) throws(MediaError) {
        guard let file = sink.end() else { return }
        segmentOpen = false
        let sequence = segments.count
        let name = namePattern.name(sequence)
        let bytes = file.byteCount
        try file.commit(as: folder + "/" + name)
        totalBytes += Int64(bytes)
        let start = segmentStart ?? 0
        let date = options.playlistType == .vod ? nil : originWallClock.map { $0.addingTimeInterval(start - originMediaTime) }
        segments.append(HLSSegmentRecord(sequence: sequence, uri: name, startTime: start, duration: max(0, duration),
                                         bytes: bytes, startsWithKeyframe: segmentStartsWithKeyframe, programDateTime: date))
        if duration.rounded() > Double(options.targetDuration) {
            warnings.append("segment \(sequence) lasts \(HLSNumber.decimal(duration, places: 3)) s, above the target duration \(options.targetDuration) s")
        }
        if options.playlistType != .vod, !finished { try publishPlaylist() }
        if options.playlistType == .live { deleteExpiredSegments() }
    }

    /// Live: a segment leaves the playlist when `listSize` newer ones exist, and its file goes
    /// `deleteGraceSegments` segments later, so a client that just read the old playlist can still fetch it.
    private func deleteExpiredSegments() {
        let firstListed = max(0, segments.count - options.listSize)
        let deleteBefore = firstListed - options.graceSegments
        while deletedThrough + 1 < deleteBefore {
            deletedThrough += 1
            unlink(folder + "/" + segments[deletedThrough].uri)
        }
    }

    private func publishPlaylist(ended: Bool = false) throws(MediaError) {
        if options.playlistType == .vod && !ended { return }
        let listed = options.playlistType == .live ? Array(segments.suffix(options.listSize)) : segments
        let playlist = MediaPlaylist(
            targetDuration: options.targetDuration,
            mediaSequence: listed.first?.sequence ?? segments.count,
            playlistType: options.playlistType == .vod ? .vod : options.playlistType == .event ? .event : nil,
            independentSegments: true,
            map: initSegmentName.map { MediaInitializationSection(uri: $0) },
            segments: listed.map { MediaSegment(duration: $0.duration, uri: $0.uri, programDateTime: $0.programDateTime) },
            endList: ended)
        try AtomicFile.write(playlist.render(durationDecimals: 3), to: playlistPath)
    }

    private func checkSink() throws(MediaError) {
        if AtomicFile.isDiskFull(sink.failure) { throw .diskFull(playlistPath) }
        if let reason = sink.failureText { throw .outputNotWritable(sink.file?.temporaryPath ?? playlistPath, reason: reason) }
    }

    // MARK: - Codec strings

    private func codecString(ofStream index: Int, keyframe: Packet?) -> String? {
        let par = context.pointee.streams[index]!.pointee.codecpar.pointee
        let extradata: [UInt8] = par.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(par.extradata_size))) } ?? []
        switch par.codec_id {
        case AV_CODEC_ID_H264:
            if let s = CodecStrings.avc1(extradata: extradata) { return s }
            return keyframe.flatMap { CodecStrings.avc1(annexB: $0.bytes) }
        case AV_CODEC_ID_AAC:
            if let s = CodecStrings.mp4a(audioSpecificConfig: extradata) { return s }
            if let s = keyframe.flatMap({ CodecStrings.mp4a(adtsHeader: Array($0.bytes.prefix(7))) }) { return s }
            // FF_PROFILE_AAC_LOW (1) and friends are object type - 1.
            return par.profile >= 0 ? "mp4a.40.\(par.profile + 1)" : "mp4a.40.2"
        default:
            return nil
        }
    }
}

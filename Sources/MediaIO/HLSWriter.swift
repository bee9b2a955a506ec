import CFFmpeg
import Foundation
import struct Filters.FrameSize
import HLS

/// Writes one HLS rendition (segments + media playlist) from encoded packets, following RFC 8216.
///
/// Design: ONE `Muxer` (`mpegts`, or `mp4` for fMP4) for the whole run, writing through a custom
/// AVIOContext into a `SegmentByteSink` whose bytes are cut into files at segment boundaries. One
/// muxer keeps timestamps, MPEG-TS continuity counters and PCR continuous across segments (a muxer per
/// segment would reset the counters and make avoid_negative_ts shift only the first segment). At each
/// cut the writer flushes the muxer (`Muxer.flush`: interleaving queue, pending PES packets for TS or
/// a moof+mdat fragment for fMP4, the AVIO buffer), so every byte before the cut lands in the old
/// file. For TS the next segment then begins with PAT/PMT (`Muxer.resendHeaders`); the muxer prepends
/// the SPS/PPS from (Annex B) extradata to every keyframe, so each segment decodes on its own. For fMP4
/// the muxer writes ftyp+moov at the header, which becomes the init segment, and one fragment per
/// segment (`ContainerOptions.hlsFragmented`).
///
/// Every file is an `AtomicFile` (hidden temporary name, renamed into place, mode 0644).
///
/// Life cycle (`OutputArtifact`), by playlist type:
/// - VOD publishes nothing before `commit`: segments and the init segment wait under their
///   temporary names, and `commit` renames them and then writes the playlist (with EXT-X-ENDLIST).
///   `discard` removes all of them: a failed VOD run leaves no playlist and no segment of its own,
///   and an earlier output under the same names (`overwrite`) as it was.
/// - Event and live publish as they go, by design (players follow the playlist during the run): the
///   init segment at `begin`, each segment and a new playlist when the segment is complete. `commit`
///   publishes the last segment and the playlist with EXT-X-ENDLIST. `discard` removes the
///   half-written segment and leaves what was published listed, publishing the playlist once more
///   with EXT-X-ENDLIST so players stop waiting for segments that will not come (best effort: on a
///   full disk the previous playlist stays); a run that published no segment removes its init
///   segment. With `overwrite`, `begin` removes an earlier playlist of the same name, which would
///   otherwise list segments this run replaces.
public final class HLSWriter: PacketSink {
    public let playlistPath: String
    public var displayPath: String { playlistPath }
    public let options: HLSOutputOptions
    public let schedule: SegmentSchedule
    /// Measured facts of every segment written, in order (including live segments already deleted).
    public private(set) var segments: [HLSSegmentRecord] = []
    /// Things that make the output less than ideal but not wrong, e.g. a keyframe arriving late.
    public private(set) var warnings: [String] = []
    /// RFC 6381 codecs of the streams, e.g. `avc1.64001e,mp4a.40.2` (known after `begin`, or
    /// after the first keyframe when the video has no extradata).
    public var codecsString: String { streams.compactMap(\.codec).joined(separator: ",") }
    /// Video size and frame rate, for the master playlist.
    public private(set) var resolution: FrameSize?
    public private(set) var frameRate: Rational?

    private let muxer: Muxer
    private let sink = SegmentByteSink()
    private let folder: String
    private let namePattern: NumberedFileName
    private let initSegmentName: String?
    private let overwrite: Bool
    private let clock: @Sendable () -> Date
    /// Event and live playlists publish segments as they are complete; VOD ones at `commit`.
    private var publishesDuringRun: Bool { options.playlistType != .vod }
    /// VOD: the finished segments (and the init segment), waiting under temporary names for `commit`.
    private let unpublished = AtomicFileBatch()
    /// Called on the writer's thread after each segment is published during the run (event and
    /// live playlists), with the segment: for metrics and latency.
    public var onSegmentPublished: (@Sendable (HLSSegmentRecord) -> Void)?
    private var segmentStartTick: Int64 = 0
    /// Event and live: the init segment, published at `begin`.
    private var publishedInitSegment: String?

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
    private var committed = false
    private var discarded = false
    private var totalBytes: Int64 = 0
    // The open segment.
    private var segmentOpen = false
    private var segmentStart: Double?
    private var segmentStartsWithKeyframe = false
    /// The schedule's segment the open segment belongs to.
    private var currentSegment: Int64 = 0
    private var mediaEnd = 0.0
    // Program date time: wall clock at the first segment's start, then media time added.
    private var originWallClock: Date?
    private var originMediaTime = 0.0
    /// The input's wall-clock time of the picture at a tick, where the input has one (an HLS input's
    /// EXT-X-PROGRAM-DATE-TIME): segments then carry the source's clock, not ours.
    public var sourceDate: (@Sendable (Int64) -> Date?)?
    /// The last segment dated by the source: later ones without a date of their own follow it.
    private var sourceAnchor: (time: Double, date: Date)?
    private var deletedThrough = -1
    /// The number of the first segment written (a shard of a split job starts at its place in the whole).
    private let firstSegmentNumber: Int
    /// The schedule's last segment, when known: an audio rendition ends with its video's segments.
    private let lastSegment: Int64?
    /// Every packet is written this much later (seconds, exact): see `timelineOffset(for:)`.
    private let offset: Rational

    /// The writer's timestamps are the output's time plus this constant, so that no timestamp is
    /// negative (x264's reordering delay and AAC's priming start before zero) and the container never
    /// shifts by what its first packet happens to be: every part of a split job, and the audio
    /// rendition written on its own, then land on the timeline a single run gives. 1.4 s, as the
    /// ffmpeg CLI's MPEG-TS and HLS outputs start, or whole seconds covering three frames at low rates.
    public static func timelineOffset(for rate: Rational) -> Rational {
        let threeFrames = 3 / rate.doubleValue + 0.1
        return threeFrames <= 1.4 ? Rational(7, 5) : Rational(Int(threeFrames.rounded(.up)), 1)
    }

    /// Checks the destination; creates nothing.
    /// - Parameters:
    ///   - playlistPath: the media playlist (`.m3u8`); segments go next to it.
    ///   - schedule: where segments start, on the output's tick grid: the same value forces the
    ///     encoder's keyframes, so cuts and keyframes cannot disagree.
    ///   - overwrite: replace an existing playlist and segments of the same names.
    ///   - clock: wall clock for EXT-X-PROGRAM-DATE-TIME (tests pass a fixed one).
    ///   - firstSegmentNumber: the number of the first segment's file (and its media sequence number).
    ///   - lastSegment: the schedule's last segment, when known (later media joins it).
    public init(playlistPath: String, options: HLSOutputOptions, schedule: SegmentSchedule, overwrite: Bool,
                firstSegmentNumber: Int = 0, lastSegment: Int64? = nil,
                clock: @escaping @Sendable () -> Date = { Date() }) throws(MediaError) {
        try options.validate()
        self.firstSegmentNumber = firstSegmentNumber
        self.lastSegment = lastSegment
        offset = Self.timelineOffset(for: schedule.grid.rate)
        self.playlistPath = playlistPath
        self.options = options
        self.schedule = schedule
        self.overwrite = overwrite
        self.clock = clock
        let url = URL(fileURLWithPath: playlistPath)
        folder = url.deletingLastPathComponent().path
        let stem = url.deletingPathExtension().lastPathComponent
        // A '%' in the playlist's name would make the default segment pattern ambiguous (it used to trap here).
        guard let pattern = NumberedFileName(options.segmentNamePattern ?? "\(stem)_%05d.\(options.segmentType.fileExtension)") else {
            throw .unsupportedOutput(playlistPath, reason: "an HLS playlist name must not contain '%'")
        }
        namePattern = pattern
        initSegmentName = options.segmentType == .fmp4 ? (options.initSegmentName ?? "\(stem)_init.mp4") : nil
        // The playlist, the first segment and the init segment stand for an earlier output.
        try AtomicFile.checkDestination(playlistPath, overwrite: overwrite)
        for name in [namePattern.name(firstSegmentNumber)] + (initSegmentName.map { [$0] } ?? []) {
            try AtomicFile.checkDestination(folder + "/" + name, overwrite: overwrite)
        }
        muxer = try Muxer(streamingTo: sink, container: options.segmentType == .ts ? .ts : .mp4,
                          options: options.segmentType == .fmp4 ? .hlsFragmented : ContainerOptions(), displayPath: playlistPath)
    }

    // MARK: - PacketSink

    /// Both containers want codec headers out of band: mp4 needs avcC/ASC, and for TS the muxer
    /// re-sends the Annex B extradata before each keyframe and builds ADTS headers from the ASC.
    public var wantsGlobalHeader: Bool { true }

    public var bytesWritten: Int64 { totalBytes + Int64(sink.file?.byteCount ?? 0) }

    public func addStream(from encoder: Encoder) throws(MediaError) -> Int {
        noteStream(try muxer.addStream(from: encoder))
    }

    public func addStream(copying index: Int, of demuxer: Demuxer) throws(MediaError) -> Int {
        noteStream(try muxer.addStream(copying: index, of: demuxer))
    }

    /// What cutting and the master playlist need to know of a stream the muxer added.
    private func noteStream(_ index: Int) -> Int {
        let facts = muxer.streamFacts[index]
        var frameDuration: Int64 = 0
        if facts.isVideo {
            let rate = facts.frameRate
            if rate.num > 0, rate.den > 0 {
                frameDuration = max(1, av_rescale_q(1, AVRational(num: rate.den, den: rate.num), facts.sourceTimeBase))
                frameRate = Rational(rate)
            }
            resolution = facts.size
        }
        streams.append(StreamState(sourceTimeBase: facts.sourceTimeBase, isVideo: facts.isVideo, frameDuration: frameDuration, codec: nil))
        return index
    }

    /// Writes the header; the fMP4 init segment is published now (event, live) or at `commit` (VOD).
    public func begin() throws(MediaError) {
        guard !headerWritten, !discarded else { return }
        guard !streams.isEmpty else { throw .invalidSettings("an HLS output needs at least one stream") }
        for i in streams.indices { streams[i].codec = Self.codecString(of: muxer.codecParameters(ofStream: i), keyframe: nil) }
        if overwrite, publishesDuringRun { unlink(playlistPath) }
        try muxer.begin()
        headerWritten = true
        if let initSegmentName {
            let bytes = sink.takePending()
            guard !bytes.isEmpty else { throw .processing(FFmpegError(code: lf_averror(EIO), operation: "writing the fMP4 init segment")) }
            let path = folder + "/" + initSegmentName
            let file = AtomicFile(unchecked: path, displayPath: playlistPath)
            try file.begin()
            try file.write(bytes)
            if publishesDuringRun {
                try file.commit()
                publishedInitSegment = path
            } else {
                try unpublished.add(file)
            }
        }
        // The first playlist appears with the first segment: an empty one would be version 1 and then
        // jump to 3, and players treat a missing playlist and an empty live one alike (retry).
    }

    public func write(_ packet: Packet, toStream index: Int, timeBase: Rational) throws(MediaError) {
        guard headerWritten, !finished, !discarded else { throw .invalidSettings("HLSWriter.write called outside begin…commit") }
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
                streams[index].codec = Self.codecString(of: muxer.codecParameters(ofStream: index), keyframe: packet)
            }
            let tick = rescale(pts, from: timeBase.av, to: schedule.grid.timeBase.av)
            try cutIfNeeded(at: time, tick: tick, keyframe: packet.isKeyframe)
            mediaEnd = max(mediaEnd, end)
        }
        if !segmentOpen { try openSegment() }
        let shift = av_rescale_q(Int64(offset.numerator), AVRational(num: 1, den: Int32(offset.denominator)), timeBase.av)
        packet.shiftTimestamps(by: -shift)
        try muxer.write(packet, toStream: index, timeBase: timeBase)
    }

    /// Flushes the last segment, publishes the segments not yet published (VOD) and writes the
    /// final playlist with EXT-X-ENDLIST (every playlist type: the end of input and Ctrl-C both end
    /// the presentation).
    public func commit() throws(MediaError) {
        guard headerWritten, !finished, !discarded else { return }
        try releaseHeld(before: .infinity)
        finished = true
        try muxer.commit()
        if segmentOpen, let start = segmentStart {
            try closeSegment(duration: mediaEnd - start)
        } else {
            sink.end()?.discard()
        }
        try unpublished.commit()
        try publishPlaylist(ended: true)
        committed = true
    }

    /// Removes what this run has not finished; see the type's documentation for what that means for
    /// each playlist type. Idempotent; a no-op after `commit`.
    public func discard() {
        guard !committed, !discarded else { return }
        discarded = true
        held.removeAll()
        sink.end()?.discard()
        unpublished.discard()
        guard publishesDuringRun else { return }
        if segments.isEmpty {
            if let publishedInitSegment { unlink(publishedInitSegment) }
        } else {
            try? publishPlaylist(ended: true)
        }
    }

    // MARK: - Segments

    /// The schedule's segment of a tick: media before zero (AAC priming) is in the first segment,
    /// media after `lastSegment` (an audio track's tail past the video) in the last.
    private func segmentOf(_ tick: Int64) -> Int64 {
        let segment = max(0, schedule.segment(ofTick: tick))
        return lastSegment.map { min($0, segment) } ?? segment
    }

    /// A segment's EXT-X-PROGRAM-DATE-TIME: the source's clock for the picture at its first tick,
    /// else (or until the source has one) the wall clock at the first packet plus media time.
    private func programDate(start: Double, tick: Int64) -> Date? {
        if let date = sourceDate?(tick) {
            sourceAnchor = (start, date)
            return date
        }
        if let anchor = sourceAnchor { return anchor.date.addingTimeInterval(start - anchor.time) }
        return originWallClock.map { $0.addingTimeInterval(start - originMediaTime) }
    }

    /// Cuts before a keyframe whose tick the schedule puts in a later segment than the open one.
    private func cutIfNeeded(at time: Double, tick: Int64, keyframe: Bool) throws(MediaError) {
        guard let start = segmentStart else {
            // First packet of the cutting stream: the timeline starts here.
            segmentStart = time
            segmentStartTick = tick
            segmentStartsWithKeyframe = keyframe
            currentSegment = segmentOf(tick)
            originWallClock = clock()
            originMediaTime = time
            return
        }
        let segment = segmentOf(tick)
        guard keyframe, segment > currentSegment, time > start else { return }
        let due = schedule.grid.seconds(ofTick: schedule.firstTick(ofSegment: currentSegment + 1))
        if time > due + options.segmentDuration / 2 {
            warnings.append("no keyframe at \(HLSNumber.decimal(due, places: 3)) s: segment \(segments.count) was cut at "
                            + "\(HLSNumber.decimal(time, places: 3)) s; force keyframes every \(options.segmentDuration) s")
        }
        // Everything queued before this keyframe belongs to the segment that ends here.
        try muxer.flush()
        try closeSegment(duration: time - start)
        segmentStart = time
        segmentStartTick = tick
        segmentStartsWithKeyframe = true
        currentSegment = segment
        // TS: PAT and PMT go out again before the next packet, at the top of the new file.
        muxer.resendHeaders()
        try openSegment()
    }

    private func openSegment() throws(MediaError) {
        let file = AtomicFile(unchecked: folder + "/" + namePattern.name(firstSegmentNumber + segments.count), displayPath: playlistPath)
        try file.begin()
        try sink.begin(file)
        segmentOpen = true
    }

    private func closeSegment(duration: Double) throws(MediaError) {
        guard let file = sink.end() else { return }
        segmentOpen = false
        let sequence = firstSegmentNumber + segments.count
        let name = namePattern.name(sequence)
        let bytes = file.byteCount
        if publishesDuringRun {
            try file.commit()
        } else {
            try unpublished.add(file)
        }
        totalBytes += Int64(bytes)
        let start = segmentStart ?? 0
        let date = options.playlistType == .vod ? nil : programDate(start: start, tick: segmentStartTick)
        segments.append(HLSSegmentRecord(sequence: sequence, uri: name, startTime: start, duration: max(0, duration),
                                         bytes: bytes, startsWithKeyframe: segmentStartsWithKeyframe, programDateTime: date,
                                         startTick: segmentStartTick))
        if duration.rounded() > Double(options.targetDuration) {
            warnings.append("segment \(sequence) lasts \(HLSNumber.decimal(duration, places: 3)) s, above the target duration \(options.targetDuration) s")
        }
        if options.playlistType != .vod, !finished {
            try publishPlaylist()
            onSegmentPublished?(segments[segments.count - 1])
        }
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
        try AtomicFile.write(Array(playlist.render(durationDecimals: 3).utf8), to: playlistPath, displayPath: playlistPath)
    }
}

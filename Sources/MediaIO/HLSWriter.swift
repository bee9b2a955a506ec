import Broadcast
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
/// This file cuts (packets into segments and parts, when each is complete); publishing the playlist
/// and deleting what left it is `HLSWriter+Publishing.swift`; parts' bookkeeping `HLSWriter+Parts.swift`.
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
    public internal(set) var warnings: [String] = []
    /// RFC 6381 codecs of the streams, e.g. `avc1.64001e,mp4a.40.2` (known after `begin`, or
    /// after the first keyframe when the video has no extradata).
    public var codecsString: String { streams.compactMap(\.codec).joined(separator: ",") }
    /// Video size and frame rate, for the master playlist.
    public private(set) var resolution: FrameSize?
    public private(set) var frameRate: Rational?

    private let muxer: Muxer
    private let sink: SegmentByteSink
    let folder: String
    let namePattern: NumberedFileName
    let initSegmentName: String?
    private let overwrite: Bool
    private let clock: @Sendable () -> Date
    /// Event and live playlists publish segments as they are complete; VOD ones at `commit`.
    private var publishesDuringRun: Bool { options.playlistType != .vod }
    /// VOD: the finished segments (and the init segment), waiting under temporary names for `commit`.
    private let unpublished = AtomicFileBatch()
    /// Called on the writer's thread after each segment is published during the run (event and
    /// live playlists), with the segment: for metrics and latency.
    public var onSegmentPublished: (@Sendable (HLSSegmentRecord) -> Void)?
    /// Called on the writer's thread after each LL-HLS part is published, with the part and its
    /// segment's media sequence number.
    public var onPartPublished: (@Sendable (HLSPartRecord, Int) -> Void)?
    /// Called on the writer's thread with the path of every file it publishes during the run (init
    /// segment, part, segment, playlist), right after the rename: a server holding blocking playlist
    /// reloads or a hinted part's request wakes on it.
    public var onFilePublished: (@Sendable (String) -> Void)?
    /// A ladder's shared progress, for this playlist's EXT-X-RENDITION-REPORT tags (LL-HLS).
    public var renditionProgress: HLSRenditionProgress?
    /// The run's splices, shared by every writer of it (set before `begin`): each `.out`/`.in`
    /// starts a segment (and a part) at its tick, and the playlist marks them (`options.adMarkers`).
    /// See `HLSWriter+Splices.swift`.
    public var spliceBoard: SpliceBoard? {
        // MPEG-TS segments carry the sections on a SCTE-35 PID of their own (FFmpeg 5.1's muxer
        // cannot): the PMT of every segment declares it, from the header on.
        didSet { sink.rewriter = spliceBoard != nil && options.segmentType == .ts && options.adMarkers != .none ? TransportStreamRewriter() : nil }
    }
    /// Splices already placed (the board's serials), the ranges written, the break open for CUE tags.
    var placedSplices = Set<Int>()
    var writtenRanges: [WrittenRange] = []
    var cueBreak: (start: Double, planned: Double?)?
    /// The open segment's CUE tags, decided when it starts.
    var openSegmentMarkers: [CueMarker] = []
    var segmentStartTick: Int64 = 0
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
    var finished = false
    private var committed = false
    private var discarded = false
    private var totalBytes: Int64 = 0
    // The open segment.
    var segmentOpen = false
    /// The open segment's span on the tick grid and what of it is written (nil before the first packet).
    private var progress: SegmentProgress?
    /// The open segment was closed after its last picture: the next cutting packet starts the next one.
    private var closedAtLastPicture = false
    /// The cutting stream's keyframes are the schedule's (an encoder the tick stage forces keyframes
    /// into), so a segment can be closed after its last picture, before the next keyframe arrives.
    private var keyframesOnSchedule = false
    /// LL-HLS: ticks per part (nil without parts), the open segment's published parts, the open part.
    let partTicks: Int64?
    var openParts: [HLSPartRecord] = []
    private var partStart: (time: Double, keyframe: Bool)?
    /// Segments whose part files are deleted (they left the playlist a while ago).
    var partsDeletedThrough = -1
    var segmentStart: Double?
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
    var deletedThrough = -1
    /// The number of the first segment written (a shard of a split job starts at its place in the whole).
    let firstSegmentNumber: Int
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
    ///   - partTicks: LL-HLS: ticks per part, as the plan decided them (nil: no parts; a VOD
    ///     playlist, which appears whole at the end, has none). `options.partDuration` is the
    ///     playlist's part target.
    ///   - clock: wall clock for EXT-X-PROGRAM-DATE-TIME (tests pass a fixed one).
    ///   - firstSegmentNumber: the number of the first segment's file (and its media sequence number).
    ///   - lastSegment: the schedule's last segment, when known (later media joins it).
    public init(playlistPath: String, options: HLSOutputOptions, schedule: SegmentSchedule, overwrite: Bool,
                partTicks: Int64? = nil, firstSegmentNumber: Int = 0, lastSegment: Int64? = nil,
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
        // The playlist states the part target; the ticks are the plan's (`OutputSpec.HLS.partTicks`).
        if let partTicks, partTicks < 1 || options.partDuration == nil {
            throw .invalidSettings("HLS parts of \(partTicks) ticks need a positive count and a part target duration")
        }
        self.partTicks = partTicks
        sink = SegmentByteSink(keepsParts: partTicks != nil)
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
        let index = noteStream(try muxer.addStream(from: encoder))
        if index == cutStream, streams[index].isVideo { keyframesOnSchedule = true }
        return index
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
                onFilePublished?(path)
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
            // Audio frames fall between ticks: one reaches a splice only at or after its time.
            let reach = streams[index].isVideo ? tick : av_rescale_q_rnd(pts, timeBase.av, schedule.grid.timeBase.av, AV_ROUND_DOWN)
            try cutIfNeeded(at: time, tick: tick, reach: reach, keyframe: packet.isKeyframe)
            // A splice scheduled inside the open segment ends it there (the schedule bends).
            if let open = progress, let splice = spliceBoard?.firstCut(after: open.firstTick, through: open.endTick - 1) {
                progress?.end(at: splice)
            }
            try cutPartIfNeeded(at: time, end: end, tick: tick, keyframe: packet.isKeyframe)
            progress?.note(tick: tick)
            mediaEnd = max(mediaEnd, end)
        }
        if !segmentOpen { try openSegment() }
        let shift = av_rescale_q(Int64(offset.numerator), AVRational(num: 1, den: Int32(offset.denominator)), timeBase.av)
        packet.shiftTimestamps(by: -shift)
        try muxer.write(packet, toStream: index, timeBase: timeBase)
        if index == cutStream { try closeIfComplete() }
    }

    /// Flushes the last segment, publishes the segments not yet published (VOD) and writes the
    /// final playlist with EXT-X-ENDLIST (every playlist type: the end of input and Ctrl-C both end
    /// the presentation).
    public func commit() throws(MediaError) {
        guard headerWritten, !finished, !discarded else { return }
        if closedAtLastPicture, !held.isEmpty {
            // The last segment ended with its last picture. Audio past it is the encoder's last
            // frame overhanging the picture (dropped, as a segment of its own would be a blip), or
            // audio that outlasts the video, which gets a segment of its own.
            let end = held.map { $0.time + Double(max(0, $0.packet.pointer.pointee.duration)) * $0.timeBase.doubleValue }.max() ?? mediaEnd
            if end - mediaEnd < 0.1 {
                held.removeAll()
            } else {
                closedAtLastPicture = false
                startSegment(at: mediaEnd, tick: progress?.endTick ?? segmentStartTick, keyframe: false)
                mediaEnd = end
            }
        }
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

    /// Queues a splice's section for the TS PID, in front of the next keyframe (the splice's IDR).
    func enqueueOnPID(_ section: SpliceInfoSection) {
        sink.rewriter?.enqueue(section, at: .nextKeyframe, aligningSpliceTime: true)
    }

    // MARK: - Cutting

    /// The schedule's segment of a tick: media before zero (AAC priming) is in the first segment,
    /// media after `lastSegment` (an audio track's tail past the video) in the last.
    private func segmentOf(_ tick: Int64) -> Int64 {
        let segment = max(0, schedule.segment(ofTick: tick))
        return lastSegment.map { min($0, segment) } ?? segment
    }

    /// A segment's EXT-X-PROGRAM-DATE-TIME: the source's clock for the picture at its first tick,
    /// else (or until the source has one) the wall clock at the first packet plus media time.
    func programDate(start: Double, tick: Int64) -> Date? {
        if let date = sourceDate?(tick) {
            sourceAnchor = (start, date)
            return date
        }
        if let anchor = sourceAnchor { return anchor.date.addingTimeInterval(start - anchor.time) }
        return originWallClock.map { $0.addingTimeInterval(start - originMediaTime) }
    }

    /// Cuts before a keyframe whose tick the schedule puts in a later segment than the open one;
    /// after a segment closed at its last picture, the packet starts the next segment.
    /// `reach`: the last tick the packet has reached (its own for video; an audio frame's tick rounded down).
    private func cutIfNeeded(at time: Double, tick: Int64, reach: Int64, keyframe: Bool) throws(MediaError) {
        guard let start = segmentStart else {
            // First packet of the cutting stream: the timeline starts here.
            originWallClock = clock()
            originMediaTime = time
            startSegment(at: time, tick: tick, keyframe: keyframe)
            return
        }
        if closedAtLastPicture {
            closedAtLastPicture = false
            if !keyframe {
                warnings.append("segment \(firstSegmentNumber + segments.count) does not start with a keyframe "
                                + "(at \(HLSNumber.decimal(time, places: 3)) s)")
            }
            startSegment(at: time, tick: tick, keyframe: keyframe)
            return
        }
        let segment = segmentOf(tick)
        // A splice between the segment's start and this packet starts a segment too.
        let splice = spliceBoard?.firstCut(after: segmentStartTick, through: reach)
        guard keyframe, segment > currentSegment || splice != nil, time > start else { return }
        if let splice, splice < tick, let cut = cutStream, streams[cut].isVideo {
            warnings.append("no keyframe at the splice's tick \(splice): its segment starts \(tick - splice) ticks late; the encoder must force a keyframe there")
        }
        let due = schedule.grid.seconds(ofTick: schedule.firstTick(ofSegment: currentSegment + 1))
        if segment > currentSegment, splice == nil, time > due + options.segmentDuration / 2 {
            warnings.append("no keyframe at \(HLSNumber.decimal(due, places: 3)) s: segment \(segments.count) was cut at "
                            + "\(HLSNumber.decimal(time, places: 3)) s; force keyframes every \(options.segmentDuration) s")
        }
        // Everything queued before this keyframe belongs to the segment that ends here.
        try muxer.flush()
        try closeSegment(duration: time - start)
        // TS: PAT and PMT go out again before the next packet, at the top of the new file.
        muxer.resendHeaders()
        startSegment(at: time, tick: tick, keyframe: true)
        try openSegment()
    }

    private func startSegment(at time: Double, tick: Int64, keyframe: Bool) {
        segmentStart = time
        segmentStartTick = tick
        segmentStartsWithKeyframe = keyframe
        currentSegment = segmentOf(tick)
        progress = SegmentProgress(firstTick: tick, endTick: schedule.firstTick(ofSegment: currentSegment + 1), partTicks: partTicks)
        openParts = []
        partStart = nil
        placeCuttingSplices(sequence: firstSegmentNumber + segments.count, start: time, tick: tick)
    }

    /// LL-HLS: closes the open part before a packet past its end, and opens one for the packet.
    /// Video parts end on the tick grid; audio frames (21 ms of AAC) do not fall on it, so an
    /// audio part ends before the frame that would take it past the part target.
    private func cutPartIfNeeded(at time: Double, end: Double, tick: Int64, keyframe: Bool) throws(MediaError) {
        guard partTicks != nil, let target = options.partDuration, let current = progress, let cut = cutStream else { return }
        let starts = streams[cut].isVideo ? current.startsPart(at: tick)
            : partStart.map { end - $0.time > target + 1e-6 } ?? true
        guard starts else { return }
        if partStart != nil {
            try muxer.flush()
            try closePart(end: time)
        }
        partStart = (time, keyframe)
        progress?.openPart(at: tick)
    }

    /// After a cutting-stream packet: a segment whose every picture is written is closed now (live
    /// and event playlists, keyframes on the schedule), else a part whose every picture is. The audio
    /// held up to the end goes in first; audio that arrives later starts the next part.
    private func closeIfComplete() throws(MediaError) {
        // One packet per tick holds for video; audio parts and segments end at the packet past them.
        guard let current = progress, let start = segmentStart, segmentOpen, let cut = cutStream, streams[cut].isVideo else { return }
        if publishesDuringRun, keyframesOnSchedule, current.isComplete {
            try releaseHeld(before: mediaEnd)
            try muxer.flush()
            try closeSegment(duration: mediaEnd - start)
            muxer.resendHeaders()
            closedAtLastPicture = true
        } else if current.isPartComplete {
            try releaseHeld(before: mediaEnd)
            try muxer.flush()
            try closePart(end: mediaEnd)
        }
    }

    /// Publishes the open part's bytes as its own file (atomically), then the playlist unless the
    /// segment closes with it.
    private func closePart(end: Double, publishingPlaylist: Bool = true) throws(MediaError) {
        guard let open = partStart, let part = progress?.part else { return }
        let bytes = sink.takePart()
        partStart = nil
        progress?.closePart()
        guard !bytes.isEmpty else { return }
        let sequence = firstSegmentNumber + segments.count
        let name = Self.partName(segment: namePattern.name(sequence), index: openParts.count)
        let path = folder + "/" + name
        try AtomicFile.write(bytes, to: path, displayPath: playlistPath)
        // Microseconds: the playlist states the duration exactly, without binary noise (0.3, not 0.29999…).
        let duration = (max(0, end - open.time) * 1e6).rounded() / 1e6
        let record = HLSPartRecord(uri: name, duration: duration, independent: open.keyframe, bytes: bytes.count,
                                   firstTick: part.firstTick, lastTick: part.lastTick)
        openParts.append(record)
        onFilePublished?(path)
        onPartPublished?(record, sequence)
        if publishingPlaylist { try publishPlaylist() }
    }

    private func openSegment() throws(MediaError) {
        let file = AtomicFile(unchecked: folder + "/" + namePattern.name(firstSegmentNumber + segments.count), displayPath: playlistPath)
        try file.begin()
        try sink.begin(file)
        segmentOpen = true
    }

    private func closeSegment(duration: Double) throws(MediaError) {
        if partStart != nil { try closePart(end: (segmentStart ?? 0) + duration, publishingPlaylist: false) }
        guard let file = sink.end() else { return }
        // Where an MPEG-TS segment's bytes are final: a section inserter (SCTE-35 on its own PID,
        // `pts_adjustment` rewritten for this timeline) would rewrite them here, before the commit.
        segmentOpen = false
        let sequence = firstSegmentNumber + segments.count
        let name = namePattern.name(sequence)
        let bytes = file.byteCount
        if publishesDuringRun {
            try file.commit()
            onFilePublished?(folder + "/" + name)
        } else {
            try unpublished.add(file)
        }
        totalBytes += Int64(bytes)
        let start = segmentStart ?? 0
        // A VOD playlist states the dates only to place its date ranges.
        let date = programDate(start: start, tick: segmentStartTick)
        let markers = placeSplices(closing: sequence, start: start, date: date, endTick: (progress?.lastTick ?? segmentStartTick) + 1)
        segments.append(HLSSegmentRecord(sequence: sequence, uri: name, startTime: start, duration: max(0, duration),
                                         bytes: bytes, startsWithKeyframe: segmentStartsWithKeyframe,
                                         programDateTime: options.playlistType == .vod ? nil : date,
                                         startTick: segmentStartTick, parts: openParts, cueMarkers: markers, clockDate: date))
        openParts = []
        if duration.rounded() > Double(options.targetDuration) {
            warnings.append("segment \(sequence) lasts \(HLSNumber.decimal(duration, places: 3)) s, above the target duration \(options.targetDuration) s")
        }
        if options.playlistType != .vod, !finished {
            try publishPlaylist()
            onSegmentPublished?(segments[segments.count - 1])
        }
        if options.playlistType == .live { deleteExpiredSegments() }
        if partTicks != nil { deleteOldParts() }
    }
}

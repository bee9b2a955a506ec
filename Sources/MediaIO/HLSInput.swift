import CFFmpeg
import Foundation
import HLS
import HLSClient

/// An HLS input read by our client (`HLSReader`), demuxed by FFmpeg: one `AVFormatContext` per run
/// of the byte source (custom AVIO), its packets mapped onto the first run's streams and time bases,
/// and, after a discontinuity, shifted so the timeline goes on where the previous run ended.
/// Owns every context it opens; the first stays open (its streams describe the input) until the end.
final class HLSInput {
    let reader: HLSReader
    let source: HLSByteSource
    let first: UnsafeMutablePointer<AVFormatContext>
    private var current: UnsafeMutablePointer<AVFormatContext>
    private let maxPixels: Int
    private let interrupt: UnsafeMutablePointer<lf_interrupt_state>
    /// Later runs onto the first's streams and timeline.
    private var stitcher: TimelineStitcher
    private var timeline: Int
    /// The runs opened, for the report.
    private(set) var runs = 1
    /// End MPEG-TS runs' reading at each segment's end the network has not yet followed, so the
    /// demuxer gives up the frames it holds (`HLSByteSource.pausesAtSegmentEnds`); `read` then
    /// answers `.segmentEnd` while every segment so far has begun with a keyframe.
    var pausesAtSegmentEnds = false {
        didSet { source.pausesAtSegmentEnds = pausesAtSegmentEnds && Self.isTransportStream(current) }
    }
    /// Every segment's first video packet so far was a keyframe: a decoder may drain at their ends.
    private(set) var segmentsStartWithKeyframes = true
    private var lastVideoSegment: Int?
    /// Each segment's EXT-X-PROGRAM-DATE-TIME at its first video packet.
    let clock: SourceClock
    private var lastDatedSegment: Int?
    /// Ad markers: the playlist's (DATERANGE, CUE tags) and the TS segments' SCTE-35 sections.
    private var playlistCues = PlaylistCueReader()
    private var splices = SpliceSectionReader()

    init(reader: HLSReader, maxPixels: Int, interrupt: UnsafeMutablePointer<lf_interrupt_state>) throws(MediaError) {
        self.reader = reader
        self.maxPixels = maxPixels
        self.interrupt = interrupt
        source = HLSByteSource(reader: reader)
        let name = reader.info.inputURL
        guard let header = source.beginRun() else {
            reader.stop()
            let skipped = reader.statistics.snapshot.segmentsSkipped
            if skipped > 0, case .endOfStream? = source.end {
                throw .inputUnreadable(name, reason: "none of its segments could be read (\(skipped) skipped; the warnings name them)")
            }
            throw Self.error(for: source.end, url: name, before: true)
        }
        timeline = header.discontinuitySequence
        do {
            first = try Self.openRun(source, name: name, maxPixels: maxPixels, interrupt: interrupt)
        } catch {
            reader.stop()
            if let end = source.end, case .failed = end { throw Self.error(for: end, url: name, before: true) }
            throw error
        }
        current = first
        let video = av_find_best_stream(first, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        let timeBase = video >= 0 ? first.pointee.streams[Int(video)]?.pointee.time_base : nil
        clock = SourceClock(timeBase: timeBase.map(Rational.init) ?? Rational(1, 90_000))
        stitcher = TimelineStitcher(first: first)
    }

    deinit {
        reader.stop()
        if current != first { Self.close(current) }
        Self.close(first)
    }

    /// Why the reader refused its origin mid-run (a reload with a number out of bounds, a reference
    /// it does not follow), as the error the run ends with; nil otherwise.
    var refusal: MediaError? {
        guard case let .failed(error)? = source.end, case .refused = error else { return nil }
        return Self.error(for: source.end, url: reader.info.inputURL, before: false)
    }

    static func error(for end: ByteFeed.End?, url: String, before: Bool) -> MediaError {
        switch end {
        case let .failed(error)?:
            switch error {
            case let .notFound(u): return .inputNotFound(u)
            case let .notPlaylist(u, reason): return .notMediaFile(u, reason: reason)
            case let .unreadable(u, reason): return .inputUnreadable(u, reason: reason)
            case let .segmentsFailing(u, reason): return .inputUnreadable(u, reason: reason)
            case let .refused(u, reason): return .inputRefused(u, reason: reason)
            }
        case .cancelled?: return .inputUnreadable(url, reason: "reading was stopped")
        default: return .notMediaFile(url, reason: before ? "the playlist has no media to read" : "the stream ended")
        }
    }

    /// Opens a demuxer on the source's current run: custom AVIO, formats limited to what HLS carries
    /// (a segment probed as a playlist or concat list could make FFmpeg open other URLs).
    static func openRun(_ source: HLSByteSource, name: String, maxPixels: Int,
                        interrupt: UnsafeMutablePointer<lf_interrupt_state>) throws(MediaError) -> UnsafeMutablePointer<AVFormatContext> {
        let format = source.header?.initialization != nil ? av_find_input_format("mov") : nil
        let opened = CustomIODemuxer.open(source: source, read: { opaque, buf, size in
            Unmanaged<HLSByteSource>.fromOpaque(opaque!).takeUnretainedValue().read(buf!, size)
        }, name: name, format: format, options: [("format_whitelist", "mpegts,mov,aac,mp3,ac3,eac3,flac,h264,hevc")],
           maxPixels: maxPixels, interrupt: interrupt)
        switch opened {
        case let .success(ctx): return ctx
        case .failure(.outOfMemory): throw .inputUnreadable(name, reason: "out of memory")
        case let .failure(.opening(code)):
            if code == lf_averror_exit() { throw .inputUnreadable(name, reason: "reading was stopped") }
            throw .notMediaFile(name, reason: "its segments are not media FFmpeg can read: " + FFmpegError(code: code, operation: "opening").reason)
        case let .failure(.probing(code)):
            throw .notMediaFile(name, reason: FFmpegError(code: code, operation: "avformat_find_stream_info").reason)
        }
    }

    static func close(_ ctx: UnsafeMutablePointer<AVFormatContext>) { CustomIODemuxer.close(ctx) }

    enum ReadOutcome { case packet, segmentEnd, end }

    static func isTransportStream(_ ctx: UnsafeMutablePointer<AVFormatContext>) -> Bool {
        ctx.pointee.iformat.map { String(cString: $0.pointee.name) == "mpegts" } ?? false
    }

    /// The next packet, segment ends passed over.
    func readPacket(into packet: Packet, video: Int, audio: Int?) throws(FFmpegError) -> Bool {
        while true {
            switch try read(into: packet, video: video, audio: audio) {
            case .packet: return true
            case .segmentEnd: continue
            case .end: return false
            }
        }
    }

    /// The next packet of the input, on the first run's streams and timeline; `.segmentEnd` when
    /// reading paused at an independent segment's end (`pausesAtSegmentEnds`).
    func read(into packet: Packet, video: Int, audio: Int?) throws(FFmpegError) -> ReadOutcome {
        while true {
            packet.unref()
            let code = av_read_frame(current, packet.pointer)
            if code == lf_averror_eof(), source.pausedAtSegmentEnd {
                // The demuxer has given up what it held; the next segment's bytes follow on this run.
                source.pausedAtSegmentEnd = false
                current.pointee.pb.pointee.eof_reached = 0
                // A part's end is no segment's: the decoder keeps its references (it gives up
                // what it can on its own, `Decoder.releaseHeldPicture`).
                if source.pausedAtPartEnd { source.pausedAtPartEnd = false; continue }
                if segmentsStartWithKeyframes { return .segmentEnd }
                continue
            }
            if code == lf_averror_eof() || (code < 0 && source.hasNextRun) {
                if source.hasNextRun {
                    try nextRun(video: video, audio: audio)
                    continue
                }
                if case let .failed(error)? = source.end {
                    throw FFmpegError(code: lf_averror(EIO), operation: error.description)
                }
                return .end
            }
            if code == lf_averror_exit() || (code < 0 && source.end.map { if case .cancelled = $0 { true } else { false } } == true) {
                throw FFmpegError(code: lf_averror_exit(), operation: "reading \(reader.info.inputURL)")
            }
            try check(code, "reading \(reader.info.inputURL)")
            if video >= 0, SpliceSectionReader.isSpliceStream(current, packet.streamIndex), let tb = first.pointee.streams[video]?.pointee.time_base {
                splices.read(packet, videoTimeBase: tb, shiftMicros: stitcher.offset)
                continue
            }
            guard let outer = stitcher.streamMap[packet.streamIndex], outer == video || outer == audio else { continue }
            if current != first { stitcher.remap(packet, from: current, to: outer) }
            fillTimestamps(packet, stream: outer)
            // The video's end is the timeline's (an audio rendition read alone: the audio's).
            if outer == (video >= 0 ? video : audio) {
                if let ts = stitcher.noteTimeline(packet, stream: outer) {
                    // The first picture of each segment dates the segment's pictures.
                    let position = packet.pointer.pointee.pos
                    if position >= 0, let segment = source.segment(at: position), segment.sequenceNumber != lastDatedSegment {
                        lastDatedSegment = segment.sequenceNumber
                        if let date = segment.programDateTime { clock.record(pts: ts, date: date) }
                    }
                }
                if outer == video, let segment = packet.pointer.pointee.pos >= 0 ? source.segment(at: packet.pointer.pointee.pos) : nil,
                   segment.sequenceNumber != lastVideoSegment {
                    lastVideoSegment = segment.sequenceNumber
                    if !packet.isKeyframe { segmentsStartWithKeyframes = false }
                    if let pts = packet.presentationTimestamp, let tb = first.pointee.streams[video]?.pointee.time_base {
                        playlistCues.segmentStarts(segment, pts: pts, timeBase: Rational(tb))
                    }
                }
                if outer == video { splices.noteVideo(pts: packet.presentationTimestamp, shiftMicros: stitcher.offset) }
            }
            return .packet
        }
    }

    /// One section in both the playlist (a DATERANGE's hex) and the segments' PID: the first delivered.
    private var sectionsDelivered = CueLedger()

    /// The ad markers read since the last call: the playlist's first, then the sections'.
    func takeCues() -> [SourceCue] {
        (playlistCues.take() + splices.take()).filter { cue in
            guard let section = cue.section else { return true }
            let verdict = sectionsDelivered.note("\(SourceCue.id(of: section))|\(cue.kind)|\(section.spliceTime.map(String.init) ?? "now")", content: "")
            return cue.isUpdate || verdict == .new
        }
    }

    /// Where each stream's last packet ended (its time base): the next one's time when it has none.
    private var streamEnds: [Int: Int64] = [:]

    /// Gives a packet without timestamps the end of the one before: an ADTS parser splitting a PES
    /// of several AAC frames leaves all but the first undated when the stream was probed from memory.
    private func fillTimestamps(_ packet: Packet, stream: Int) {
        let p = packet.pointer
        if p.pointee.pts == lf_nopts_value() && p.pointee.dts == lf_nopts_value(), let end = streamEnds[stream] {
            p.pointee.pts = end
            p.pointee.dts = end
        }
        if p.pointee.duration <= 0, let st = first.pointee.streams[stream], let par = st.pointee.codecpar,
           par.pointee.codec_type == AVMEDIA_TYPE_AUDIO, par.pointee.sample_rate > 0 {
            // An audio frame's duration from its sample count.
            let samples = av_get_audio_frame_duration2(par, p.pointee.size)
            if samples > 0 {
                p.pointee.duration = av_rescale_q(Int64(samples), AVRational(num: 1, den: par.pointee.sample_rate), st.pointee.time_base)
            }
        }
        let ts = p.pointee.pts != lf_nopts_value() ? p.pointee.pts : p.pointee.dts
        if ts != lf_nopts_value(), p.pointee.duration > 0 { streamEnds[stream] = ts + p.pointee.duration }
    }

    /// Opens the demuxer on the next run and maps its streams; after a discontinuity its timeline
    /// continues from the newest end seen.
    private func nextRun(video: Int, audio: Int?) throws(FFmpegError) {
        guard let header = source.beginRun() else { return }
        let name = reader.info.inputURL
        let next: UnsafeMutablePointer<AVFormatContext>
        do {
            next = try Self.openRun(source, name: name, maxPixels: maxPixels, interrupt: interrupt)
        } catch {
            throw FFmpegError(code: lf_averror_invaliddata(), operation: "segment \(header.sequenceNumber) of \(name): \(error)")
        }
        if current != first { Self.close(current) }
        current = next
        runs += 1
        source.pausesAtSegmentEnds = pausesAtSegmentEnds && Self.isTransportStream(next)
        let newTimeline = header.discontinuitySequence != timeline
        timeline = header.discontinuitySequence
        try stitcher.adopt(next, video: video, audio: audio, newClock: newTimeline, what: "segment \(header.sequenceNumber) of \(name)")
    }
}

/// An HLS input's wall clock: the EXT-X-PROGRAM-DATE-TIME of each segment at the timestamp of its
/// first video packet, so any picture's source time can be found (from any thread).
public final class SourceClock: Sendable {
    private let entries = Mutex<[(pts: Int64, date: Date)]>([])
    private let timeBase: Rational

    init(timeBase: Rational) { self.timeBase = timeBase }

    func record(pts: Int64, date: Date) {
        entries.withLock { list in
            list.append((pts, date))
            if list.count > 4096 { list.removeFirst(2048) }
        }
    }

    /// The source's wall-clock time of the video picture with timestamp `pts` (the input's time base).
    public func date(ofVideoTimestamp pts: Int64) -> Date? {
        entries.withLock { list in
            guard let anchor = list.last(where: { $0.pts <= pts }) else { return nil }
            let seconds = Double(pts - anchor.pts) * Double(timeBase.numerator) / Double(timeBase.denominator)
            // Further than a few minutes from its segment's date, a date would be a guess.
            return seconds < 600 ? anchor.date.addingTimeInterval(seconds) : nil
        }
    }
}

import Synchronization

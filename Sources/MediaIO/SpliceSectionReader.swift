import Broadcast
import CFFmpeg

/// SCTE-35 sections an MPEG-TS demuxer hands over (FFmpeg 5.1's mpegts: a data stream of codec
/// `scte_35` for a PID of stream type 0x86; each packet one whole `splice_info_section`, CRC
/// included, its pts the program's PCR at arrival) turned into `SourceCue`s on the video's clock.
///
/// The splice time is `splice_time.pts_time + pts_adjustment` (mod 2^33) on the source's 90 kHz
/// clock; it is unwrapped next to the newest video picture of the same run, then moved the way that
/// run's packets are (`shiftMicros`: the `TimelineStitcher`'s offset), so a cue follows its pictures
/// across discontinuities and reconnects. One per input; used on the read thread.
struct SpliceSectionReader {
    private var ledger = CueLedger()
    /// The newest video pts delivered (the first run's video time base), and the shift it was moved by.
    private var newestVideo: (pts: Int64, shiftMicros: Int64)?
    private(set) var cues: [SourceCue] = []
    /// Sections that did not read (bad CRC, truncated): for the input's warnings.
    private(set) var rejected = 0

    static let clock = AVRational(num: 1, den: 90_000)
    static let modulus: Int64 = 1 << 33

    /// Whether stream `index` of `context` carries SCTE-35 sections.
    static func isSpliceStream(_ context: UnsafeMutablePointer<AVFormatContext>, _ index: Int) -> Bool {
        guard index >= 0, index < Int(context.pointee.nb_streams) else { return false }
        return context.pointee.streams[index]?.pointee.codecpar.pointee.codec_id == AV_CODEC_ID_SCTE_35
    }

    /// A video packet went out at `pts` (the first run's video time base), moved by `shiftMicros`.
    mutating func noteVideo(pts: Int64?, shiftMicros: Int64) {
        guard let pts else { return }
        if let newest = newestVideo, newest.pts >= pts, newest.shiftMicros == shiftMicros { return }
        newestVideo = (max(pts, newestVideo?.pts ?? .min), shiftMicros)
    }

    /// Reads a section packet of the current run; its cue (if new) waits in `cues`.
    mutating func read(_ packet: Packet, videoTimeBase: AVRational, shiftMicros: Int64) {
        let section: SpliceInfoSection
        do { section = try SpliceInfoSection(packet.bytes) } catch { rejected += 1; return }
        guard let splice = section.spliceTime else {
            // Immediate (or no time): applies on arrival.
            append(SourceCue(section: section, timing: .immediate), key: "now", section: section)
            return
        }
        let shift = av_rescale_q(shiftMicros, AVRational(num: 1, den: AV_TIME_BASE), videoTimeBase)
        // The run's own clock near where the cue arrived: the newest picture, else the section's PCR.
        let reference: Int64
        if let newest = newestVideo {
            reference = av_rescale_q(newest.pts - av_rescale_q(newest.shiftMicros, AVRational(num: 1, den: AV_TIME_BASE), videoTimeBase),
                                     videoTimeBase, Self.clock)
        } else {
            reference = packet.presentationTimestamp ?? 0
        }
        let unwrapped = Self.unwrap(Int64(splice), near: reference)
        let pts = av_rescale_q(unwrapped, Self.clock, videoTimeBase) + shift
        guard var cue = SourceCue(section: section, timing: .at(pts: pts)) else { return }
        cue.isLate = newestVideo.map { $0.pts >= pts } ?? false
        append(cue, key: String(splice), section: section)
    }

    /// The value ≡ `ticks` (mod 2^33) nearest `reference`.
    static func unwrap(_ ticks: Int64, near reference: Int64) -> Int64 {
        let base = reference - ((reference % modulus) + modulus) % modulus
        let candidates = [base - modulus + ticks, base + ticks, base + modulus + ticks]
        return candidates.min { abs($0 - reference) < abs($1 - reference) }!
    }

    private mutating func append(_ cue: SourceCue?, key: String, section: SpliceInfoSection) {
        guard let cue else { return }
        // A section repeated before its splice is one cue; its bytes (pts_adjustment aside) say which.
        guard ledger.note("\(cue.id)|\(cue.kind)|\(key)", content: "") == .new else { return }
        cues.append(cue)
    }

    mutating func take() -> [SourceCue] {
        defer { cues = [] }
        return cues
    }
}

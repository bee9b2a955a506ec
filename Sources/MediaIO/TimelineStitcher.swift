import CFFmpeg

/// Joins the runs of one input — demuxers opened one after another on a stream that was cut (an
/// HLS discontinuity, a publisher that reconnected) — into one: each later run's streams mapped onto
/// the first run's (indices, time bases), new codec parameters carried on the next packet as
/// `AV_PKT_DATA_NEW_EXTRADATA`, and, where the new run's clock starts afresh, its timestamps shifted
/// so the timeline goes on where the previous run ended. The first run's context describes the
/// input for the whole run; the caller owns every context.
struct TimelineStitcher {
    let first: UnsafeMutablePointer<AVFormatContext>
    /// The current run's stream → the first run's stream index.
    private(set) var streamMap: [Int: Int] = [:]
    /// Added to the current run's timestamps, in microseconds.
    private(set) var offset: Int64 = 0
    /// The newest end (pts + duration) of a timeline-stream packet on the output timeline, microseconds.
    private(set) var newestEnd: Int64 = .min
    private var extradata: [Int: [UInt8]] = [:]
    /// Extradata to attach to the next packet of a stream (new codec parameters).
    private var newExtradata: [Int: [UInt8]] = [:]
    /// Each stream's newest timestamp on the output timeline in this run (microseconds), for
    /// `followClockJump`: a jump is a new clock.
    private var lastMicros: [Int: Int64] = [:]

    static let microseconds = AVRational(num: 1, den: AV_TIME_BASE)

    init(first: UnsafeMutablePointer<AVFormatContext>) {
        self.first = first
        for i in 0..<Int(first.pointee.nb_streams) {
            streamMap[i] = i
            if let par = first.pointee.streams[i]?.pointee.codecpar { extradata[i] = Self.extradata(par) }
        }
    }

    static func extradata(_ par: UnsafeMutablePointer<AVCodecParameters>) -> [UInt8] {
        guard let data = par.pointee.extradata, par.pointee.extradata_size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(par.pointee.extradata_size)))
    }

    /// Maps `next`'s streams onto the first run's `video` and `audio` (either may be absent: -1 or
    /// nil). With `newClock`, the new run's first timestamp follows the newest end seen.
    /// - Parameter what: names the run in an error ("segment 12 of URL", "the publisher's new connection").
    mutating func adopt(_ next: UnsafeMutablePointer<AVFormatContext>, video: Int, audio: Int?, newClock: Bool,
                        what: String) throws(FFmpegError) {
        streamMap = [:]
        lastMicros = [:]
        func match(_ outer: Int?, _ type: AVMediaType) throws(FFmpegError) {
            guard let outer, outer >= 0, let want = first.pointee.streams[outer]?.pointee.codecpar else { return }
            let index = av_find_best_stream(next, type, -1, -1, nil, 0)
            guard index >= 0, let par = next.pointee.streams[Int(index)]?.pointee.codecpar else { return }
            if par.pointee.codec_id != want.pointee.codec_id {
                let from = String(cString: avcodec_get_name(want.pointee.codec_id)), to = String(cString: avcodec_get_name(par.pointee.codec_id))
                throw FFmpegError(code: lf_averror_patchwelcome(),
                                  operation: "\(what) changes the \(type == AVMEDIA_TYPE_VIDEO ? "video" : "audio") codec from \(from) to \(to), which one run cannot follow")
            }
            streamMap[Int(index)] = outer
            let data = Self.extradata(par)
            if !data.isEmpty, data != extradata[outer] {
                extradata[outer] = data
                newExtradata[outer] = data
            }
        }
        try match(video, AVMEDIA_TYPE_VIDEO)
        try match(audio, AVMEDIA_TYPE_AUDIO)
        guard newClock else { return }
        // The new timeline's first picture follows the last one; its audio keeps its place beside it.
        var start = next.pointee.start_time
        if let (inner, _) = streamMap.first(where: { $0.value == (video >= 0 ? video : audio) }), let stream = next.pointee.streams[inner],
           stream.pointee.start_time != lf_nopts_value() {
            start = av_rescale_q(stream.pointee.start_time, stream.pointee.time_base, Self.microseconds)
        }
        if start != lf_nopts_value(), newestEnd != .min { offset = newestEnd - start }
    }

    /// A stream of the current run that appeared after it was adopted (an RTMP publisher's audio
    /// whose first packet came after the probe): mapped onto the first run's `outer` if that has no
    /// stream of this run yet and the codec is the same. Whether it now maps.
    mutating func mapLate(_ inner: Int, of current: UnsafeMutablePointer<AVFormatContext>, onto outer: Int) -> Bool {
        guard !streamMap.values.contains(outer), let par = current.pointee.streams[inner]?.pointee.codecpar,
              let want = first.pointee.streams[outer]?.pointee.codecpar, par.pointee.codec_type == want.pointee.codec_type,
              par.pointee.codec_id == want.pointee.codec_id else { return false }
        streamMap[inner] = outer
        let data = Self.extradata(par)
        if !data.isEmpty, data != extradata[outer] {
            extradata[outer] = data
            newExtradata[outer] = data
        }
        return true
    }

    /// The current run's clock started afresh mid-run: its later timestamps move by this much more.
    mutating func shiftClock(byMicroseconds shift: Int64) { offset += shift }

    /// Moves a packet of a later run (`current`) onto the first run's stream `outer`, time base and timeline.
    mutating func remap(_ packet: Packet, from current: UnsafeMutablePointer<AVFormatContext>, to outer: Int) {
        let p = packet.pointer
        let inner = current.pointee.streams[Int(p.pointee.stream_index)]!.pointee.time_base
        let tb = first.pointee.streams[outer]!.pointee.time_base
        av_packet_rescale_ts(p, inner, tb)
        let shift = av_rescale_q(offset, Self.microseconds, tb)
        if p.pointee.pts != lf_nopts_value() { p.pointee.pts += shift }
        if p.pointee.dts != lf_nopts_value() { p.pointee.dts += shift }
        p.pointee.stream_index = Int32(outer)
        if let data = newExtradata.removeValue(forKey: outer), let side = av_packet_new_side_data(p, AV_PKT_DATA_NEW_EXTRADATA, data.count) {
            data.withUnsafeBufferPointer { side.update(from: $0.baseAddress!, count: data.count) }
        }
    }

    /// Records a packet of the timeline's stream (on the first run's stream `outer`): where its
    /// timeline has reached. Returns the packet's timestamp (pts, else dts), if it has one.
    @discardableResult
    mutating func noteTimeline(_ packet: Packet, stream outer: Int) -> Int64? {
        guard let tb = first.pointee.streams[outer]?.pointee.time_base else { return nil }
        let p = packet.pointer.pointee
        let ts = p.pts != lf_nopts_value() ? p.pts : p.dts
        guard ts != lf_nopts_value() else { return nil }
        newestEnd = max(newestEnd, av_rescale_q(ts + max(0, p.duration), tb, Self.microseconds))
        return ts
    }

    /// Within one run a sender may restart its clock (an MPEG-TS sender restarted on the same UDP
    /// port, an encoder reset): a timestamp that goes back, or jumps ahead by more than a few
    /// seconds, starts a new clock that continues where the timeline is. `packet` is already on
    /// the first run's stream `outer` (`remap`); it is moved with the clock. Returns the shift
    /// (microseconds) when the clock jumped.
    mutating func followClockJump(_ packet: Packet, stream outer: Int) -> Int64? {
        guard let tb = first.pointee.streams[outer]?.pointee.time_base else { return nil }
        let p = packet.pointer
        let ts = p.pointee.dts != lf_nopts_value() ? p.pointee.dts : p.pointee.pts
        guard ts != lf_nopts_value() else { return nil }
        let micros = av_rescale_q(ts, tb, Self.microseconds)
        if let last = lastMicros[outer], micros < last - 1_000_000 || micros > last + 5_000_000, newestEnd != .min {
            let shift = newestEnd - micros
            shiftClock(byMicroseconds: shift)
            let units = av_rescale_q(shift, Self.microseconds, tb)
            if p.pointee.pts != lf_nopts_value() { p.pointee.pts += units }
            if p.pointee.dts != lf_nopts_value() { p.pointee.dts += units }
            lastMicros = [outer: micros + shift]
            return shift
        }
        lastMicros[outer] = max(lastMicros[outer] ?? .min, micros)
        return nil
    }
}

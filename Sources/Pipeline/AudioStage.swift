import MediaIO
import Synchronization

/// The audio stage: packets from the read stage to every output's mux stage — copied when the plan
/// says so, else decoded, resampled, re-framed and encoded to AAC once, each packet going to every
/// output. Runs on its own thread; at the end of the input it flushes its encoder.
final class AudioStage: @unchecked Sendable {
    enum Mode { case copy, aac }

    let mode: Mode
    private let input: Channel<Packet>
    private let sinks: [(mux: MuxStage, stream: Int)]
    private let origin: Int64
    private let copyTimeBase: Rational
    private let decoder: Decoder?
    private let converter: AudioConverter?
    private let encoder: Encoder?
    private let stopDeadline: StopDeadline

    /// Adds an audio stream to every output; nil when the plan has no audio.
    /// - Parameter origin: the container's start in the audio time base (`InputFacts.audioStart`).
    init?(plan: AudioPlan, demuxer: Demuxer, origin: Int64, input: Channel<Packet>?, outputs: [MuxStage],
          stopDeadline: StopDeadline) throws(MediaError) {
        guard let audio = demuxer.audio, let input, !outputs.isEmpty else { return nil }
        self.input = input
        self.stopDeadline = stopDeadline
        self.origin = origin
        copyTimeBase = audio.timeBase
        var added: [(MuxStage, Int)] = []
        switch plan {
        case .none:
            return nil
        case .copy:
            mode = .copy
            for mux in outputs { added.append((mux, try mux.sink.addStream(copying: audio.index, of: demuxer))) }
            decoder = nil; converter = nil; encoder = nil
        case let .aac(_, sampleRate, channels, bitRate):
            mode = .aac
            let decoder = try Decoder(demuxer: demuxer, streamIndex: audio.index)
            let encoder = try Encoder.aac(sampleRate: sampleRate, channels: channels, bitRate: bitRate,
                                          globalHeader: outputs.contains { $0.sink.wantsGlobalHeader })
            converter = try AudioConverter(decoder: decoder, sampleRate: sampleRate, channels: channels, frameSize: encoder.frameSize)
            self.decoder = decoder
            self.encoder = encoder
            for mux in outputs { added.append((mux, try mux.sink.addStream(from: encoder))) }
        }
        sinks = added
    }

    func start(in group: StageGroup) {
        group.start("audio") { [self] in
            do {
                while let packet = try input.receive() { try handle(packet) }
                // A quick stop does not flush the AAC encoder's tail.
                if stopDeadline.instant == nil { try finishInput() }
            } catch let error as FFmpegError {
                throw MediaError.processing(error)
            }
            for target in sinks { target.mux.input.finish() }
        }
    }

    /// Read after the stage has ended.
    var decodeErrors: Int { (decoder?.decodeErrors ?? 0) + damagedPackets + sinks.reduce(0) { $0 + $1.mux.droppedPackets } }
    private var damagedPackets = 0

    /// Input time cut out by the live loop's latency skips: later audio moves earlier by this much,
    /// and audio that would overlap what was already written is dropped, keeping A/V in sync.
    /// Set by the tick stage (latency skips), read by the audio stage's thread.
    private let shiftUnits = Mutex<Int64>(0)
    private var shift: Int64 { shiftUnits.withLock { $0 } }
    private var writtenEnd: Int64 = .min
    private var finished = false
    /// Seconds of input audio handled so far (read from other threads for progress).
    private let handledBits = Atomic<UInt64>(0)
    var handledTime: Double { Double(bitPattern: handledBits.load(ordering: .relaxed)) }
    /// The last copied packet's timestamp: a damaged input (corrupt TS) can repeat or reverse it,
    /// which the muxer refuses as fatal, so such a packet is dropped and counted instead.
    private var lastCopiedPts: Int64 = .min

    func skip(to total: MediaTime) {
        let units = Int64((total.seconds / copyTimeBase.doubleValue).rounded())
        shiftUnits.withLock { $0 = units }
    }

    /// Where silence should reach on the audio's output timeline (seconds): set by the tick stage
    /// at each tick the input is lost, acted on by the audio stage's thread (woken by a marker packet).
    private let silenceTarget = Mutex<Double?>(nil)
    private let wakePending = Atomic<Bool>(false)
    /// Samples of silence written to fill input losses.
    private(set) var silentSamples = 0
    /// A channel that outlives its input's losses: a gap in the audio (the loss, the returning
    /// input's first picture shown a little after it arrives) is filled with silence. Set before start.
    var fillsGaps = false

    /// Fills the audio with silence up to `seconds` of output (a lost input's tick): the audio
    /// stays as long as the video, and a muxer that interleaves never waits for audio that will not come.
    func fillSilence(through seconds: Double) {
        guard mode == .aac else { return }
        silenceTarget.withLock { $0 = max($0 ?? seconds, seconds) }
        // One wake at a time, and never a wait: this runs on the tick loop, and when the loss
        // begins the channel may still be full of the input's last packets while this stage waits
        // on an output that waits on the ticks. Full: the stage is busy, and the next tick asks again.
        if !wakePending.exchange(true, ordering: .acquiringAndReleasing) {
            let marker = Packet()
            marker.markAsSilenceRequest()
            if (try? input.trySend(marker)) != true { wakePending.store(false, ordering: .releasing) }
        }
    }

    private func writeSilence() throws {
        wakePending.store(false, ordering: .releasing)
        guard let target = silenceTarget.withLock({ $0 }) else { return }
        try writeSilence(until: Int64((target / copyTimeBase.doubleValue).rounded(.down)))
    }

    /// Silence from the end of what was written up to `units` (the input audio's time base, output timeline).
    private func writeSilence(until units: Int64) throws {
        guard let decoder, writtenEnd != .min else { return }
        let rate = Double(decoder.sampleRate)
        guard rate > 0 else { return }
        // Counted in samples, not in the stream's time base: RTMP's is a millisecond, and a
        // 1024-sample frame rounded to it would drift (0.33 ms a frame) until audio that comes
        // back overlaps the silence and goes backwards.
        let tb = copyTimeBase.doubleValue
        var start = max(silenceEnd ?? 0, Double(writtenEnd) * tb)
        let until = Double(units) * tb
        while until - start >= 0.5 / rate {
            let samples = min(1024, Int(((until - start) * rate).rounded(.up)))
            guard let frame = decoder.silence(samples: samples, pts: Int64((start / tb).rounded(.down))) else { return }
            start += Double(samples) / rate
            silenceEnd = start
            writtenEnd = max(writtenEnd, Int64((start / tb).rounded(.up)))
            silentSamples += samples
            try converter!.send(frame)
            try drainConverter()
        }
    }

    /// Where the silence written so far ends, exactly (seconds on the audio's output timeline).
    private var silenceEnd: Double?

    func handle(_ packet: Packet) throws {
        if packet.isSilenceRequest {
            try writeSilence()
            return
        }
        if let pts = packet.presentationTimestamp {
            let t = Double(pts - origin + packet.duration) * copyTimeBase.doubleValue
            if t > handledTime { handledBits.store(t.bitPattern, ordering: .relaxed) }
        }
        switch mode {
        case .copy:
            packet.shiftTimestamps(by: origin + shift)
            let pts = packet.presentationTimestamp ?? writtenEnd
            if shift > 0, pts < writtenEnd { return }
            if packet.presentationTimestamp != nil {
                guard pts > lastCopiedPts else { damagedPackets += 1; return }
                lastCopiedPts = pts
            }
            writtenEnd = max(writtenEnd, pts + max(packet.duration, 1))
            try write(packet, timeBase: copyTimeBase)
        case .aac:
            try decoder!.send(packet)
            try drainDecoder()
        }
    }

    /// Flushes the decoder, converter and encoder at the end of the input.
    func finishInput() throws {
        guard !finished else { return }
        finished = true
        guard mode == .aac, let decoder, let converter, let encoder else { return }
        decoder.sendEndOfStream()
        try drainDecoder()
        try converter.send(nil)
        try drainConverter()
        try encoder.sendEndOfStream()
        try drainEncoder()
    }

    private func drainDecoder() throws {
        while case let .frame(frame) = try decoder!.receive() {
            if let ts = frame.timestamp {
                let pts = ts - origin - shift
                // After a latency skip, a loss (silence written) or in a channel (a publisher's new
                // connection continues the timeline from the video's end, its audio a little before
                // the end of the audio already written), audio already covered is dropped: the
                // encoder's timestamps must not go back.
                // (Overlaps smaller than half the frame are the time base's rounding, not audio again.)
                let frameUnits = Int64((Double(frame.sampleCount) / Double(max(1, frame.sampleRate)) / copyTimeBase.doubleValue).rounded())
                if fillsGaps, pts + frameUnits / 2 < writtenEnd { continue }
                if shift != 0 || silentSamples > 0, pts < writtenEnd, !fillsGaps { continue }
                // A channel's audio has no holes: more than a frame's gap is silence.
                if fillsGaps, writtenEnd != .min, Double(pts - writtenEnd) * copyTimeBase.doubleValue > 0.03 {
                    try writeSilence(until: pts)
                }
                frame.presentationTimestamp = pts
                let samples = Double(frame.sampleCount) / Double(max(1, frame.sampleRate))
                writtenEnd = pts + Int64((samples / copyTimeBase.doubleValue).rounded())
            } else if fillsGaps {
                // Undated (a new connection's first PES): it follows what was written, or, before
                // anything was, it cannot be placed. The encoder would make up a time that goes back.
                guard writtenEnd != .min else { continue }
                frame.presentationTimestamp = writtenEnd
                let samples = Double(frame.sampleCount) / Double(max(1, frame.sampleRate))
                writtenEnd += Int64((samples / copyTimeBase.doubleValue).rounded())
            }
            try converter!.send(frame)
            try drainConverter()
        }
    }

    private func drainConverter() throws {
        while let frame = try converter!.receive() {
            try encoder!.send(frame)
            try drainEncoder()
        }
    }

    private func drainEncoder() throws {
        while case let .packet(packet) = try encoder!.receive() {
            try write(packet, timeBase: encoder!.timeBase)
        }
    }

    private func write(_ packet: Packet, timeBase: Rational) throws {
        for (i, target) in sinks.enumerated() {
            // Writing consumes the packet: every output but the last gets its own reference.
            let p = i == sinks.count - 1 ? packet : packet.clone()
            try target.mux.input.send(MuxItem(packet: p, stream: target.stream, timeBase: timeBase, droppableIfInvalid: true))
        }
    }
}


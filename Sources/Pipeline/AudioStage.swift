import MediaIO
import Synchronization

/// Audio from the input to every sink: copied when it is AAC and nothing was asked, else decoded,
/// resampled, re-framed and encoded to AAC once, with each packet written to every sink.
final class AudioStage: @unchecked Sendable {
    enum Mode { case copy, aac }

    let mode: Mode
    private let sinks: [(sink: any PacketSink, stream: Int)]
    private let origin: Int64
    private let copyTimeBase: Rational
    private let decoder: Decoder?
    private let converter: AudioConverter?
    private let encoder: Encoder?

    /// Adds an audio stream to every sink; returns nil when there is no audio to write.
    init?(demuxer: Demuxer, settings: AudioSettings, sinks: [any PacketSink]) throws(MediaError) {
        guard let audio = demuxer.audio, settings != .none, !sinks.isEmpty else { return nil }
        origin = Int64((demuxer.startTime / audio.timeBase.doubleValue).rounded())
        copyTimeBase = audio.timeBase
        if settings == .automatic, audio.isAAC {
            mode = .copy
            var added: [(any PacketSink, Int)] = []
            for sink in sinks { added.append((sink, try sink.addStream(copying: audio.index, of: demuxer))) }
            self.sinks = added
            decoder = nil; converter = nil; encoder = nil
            return
        }
        mode = .aac
        var aac = AACSettings()
        if case let .aac(s) = settings { aac = s }
        let channels = aac.channels ?? min(audio.channels, 2)
        let rate = aac.sampleRate ?? Self.aacSampleRate(near: audio.sampleRate)
        let bitRate = aac.bitRate ?? AACSettings.defaultBitRatePerChannel * channels
        let decoder = try Decoder(demuxer: demuxer, streamIndex: audio.index)
        let encoder = try Encoder.aac(sampleRate: rate, channels: channels, bitRate: bitRate,
                                      globalHeader: sinks.contains { $0.wantsGlobalHeader })
        converter = try AudioConverter(decoder: decoder, sampleRate: rate, channels: channels, frameSize: encoder.frameSize)
        self.decoder = decoder
        self.encoder = encoder
        var added: [(any PacketSink, Int)] = []
        for sink in sinks { added.append((sink, try sink.addStream(from: encoder))) }
        self.sinks = added
    }

    var decodeErrors: Int { (decoder?.decodeErrors ?? 0) + damagedPackets }
    private var damagedPackets = 0

    /// Input time cut out by the live loop's latency skips: later audio moves earlier by this much,
    /// and audio that would overlap what was already written is dropped, keeping A/V in sync.
    /// Set by the tick thread (latency skips), read by the decode thread.
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

    /// AAC's sampling rates; anything else is resampled to the nearest one.
    static func aacSampleRate(near rate: Int) -> Int {
        let rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000]
        return rates.min(by: { abs($0 - rate) < abs($1 - rate) }) ?? 48000
    }

    func handle(_ packet: Packet) throws {
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
                if shift > 0, pts < writtenEnd { continue }
                frame.presentationTimestamp = pts
                let samples = Double(frame.sampleCount) / Double(max(1, frame.sampleRate))
                writtenEnd = pts + Int64((samples / copyTimeBase.doubleValue).rounded())
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
            // Writing consumes the packet: every sink but the last gets its own reference.
            let p = i == sinks.count - 1 ? packet : packet.clone()
            do {
                try target.sink.write(p, toStream: target.stream, timeBase: timeBase)
            } catch let error as MediaError {
                // A damaged packet (e.g. a broken ADTS header in a corrupt TS) is dropped, not fatal.
                guard case let .processing(e) = error, e.isInvalidData else { throw error }
                damagedPackets += 1
            }
        }
    }
}


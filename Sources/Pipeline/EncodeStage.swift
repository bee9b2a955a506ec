import Filters
import Foundation
import MediaIO
import Synchronization

/// What the filter stage hands an encode stage.
/// `ancillary` goes on the very frame the encoder is sent (its captions replace the decoder's).
enum EncodeWork: @unchecked Sendable {
    /// Encode `frame` at `pts`; `remember` is the picture a later repeat shows again.
    case picture(Frame, remember: Frame, pts: Int64, duration: Int64, keyframe: Bool = false, ancillary: Ancillary = .none)
    /// Show the remembered picture again (no filtering, no conversion). `cheap`: the encoder spends
    /// as little as it can on it (shed under overload; never for a keyframe).
    case repeatLast(pts: Int64, duration: Int64, keyframe: Bool = false, cheap: Bool = false, ancillary: Ancillary = .none)
    /// `--overload adapt`: encode with this x264 preset from the next keyframe on.
    case usePreset(EncoderSpeedPreset)
}

/// An encoded packet on its way to a sink, with the stream it belongs to there.
struct MuxItem: @unchecked Sendable {
    var packet: Packet
    var stream: Int
    var timeBase: Rational
    /// A packet the muxer refuses as invalid data is dropped and counted, not fatal (copied audio
    /// from a damaged input, e.g. a broken ADTS header in a corrupt TS).
    var droppableIfInvalid = false
}

/// One rendition's encode stage: pictures in, H.264 (or PNG) packets out to its sink's mux stage.
/// Keyframes are made where the work says (the plan's `KeyframeRule`, applied by the tick stage).
/// For `-o null` there is no encoder: pictures are counted and dropped.
final class EncodeStage: @unchecked Sendable {
    let input: Channel<EncodeWork>
    private var encoder: Encoder?
    /// `--overload adapt`: the encoder is reopened at a keyframe with the preset the last
    /// `.usePreset` asked for, with the spec's settings for it. `onPresetChange` is told each
    /// change, or a refusal (a global header that would change); set before the stage starts.
    private var wantedPreset: EncoderSpeedPreset?
    private let spec: EncodeSpec?
    var onPresetChange: (_ preset: EncoderSpeedPreset, _ refused: String?) -> Void = { _, _ in }
    private var preset: EncoderSpeedPreset?
    private var refusedPresets: Set<EncoderSpeedPreset> = []
    private let presetChangeCount = Atomic<Int>(0)
    private let mux: MuxStage?
    private let stream: Int
    private let constantRate: Bool
    private var keep: Range<Int64>?
    private let timing: TimingRecorder
    private let stopDeadline: StopDeadline
    private let written = Atomic<Int>(0)
    /// Written by the encode thread; read after it has ended.
    private var encodedEnd: Int64 = 0
    private var discardTimeBase = Rational(1, 1)

    /// The encoder the spec asks for (PNG or x264), its stream added to `mux`'s sink. A shard's
    /// encoder (`spec.keep`) also sees the pictures before and after its range (rate control and
    /// look-ahead as in a single run), whose packets are dropped here.
    init(spec: EncodeSpec, mux: MuxStage, timing: TimingRecorder, stopDeadline: StopDeadline) throws(MediaError) {
        let encoder = try Self.encoder(spec, settings: nil, globalHeader: mux.sink.wantsGlobalHeader)
        self.spec = spec
        keep = spec.keep
        self.encoder = encoder
        self.mux = mux
        constantRate = spec.constantRate
        self.timing = timing
        self.stopDeadline = stopDeadline
        stream = try mux.sink.addStream(from: encoder)
        input = Channel(capacity: 3)
    }

    /// An encoder for `spec`; `settings` replaces its x264 settings (a preset step).
    private static func encoder(_ spec: EncodeSpec, settings: VideoEncoderSettings?, globalHeader: Bool) throws(MediaError) -> Encoder {
        switch spec.codec {
        case .png:
            try Encoder.png(size: spec.size, timeBase: spec.timeBase)
        case let .h264(planned):
            try Encoder.h264(size: spec.size, frameRate: spec.frameRate, timeBase: spec.timeBase, color: spec.color,
                             settings: settings ?? planned, globalHeader: globalHeader)
        }
    }

    /// The `-o null` stage: takes pictures as an encoder would, then drops them.
    init(discardingIn timeBase: Rational, timing: TimingRecorder, stopDeadline: StopDeadline) {
        encoder = nil
        mux = nil
        spec = nil
        constantRate = true
        self.timing = timing
        self.stopDeadline = stopDeadline
        stream = 0
        discardTimeBase = timeBase
        input = Channel(capacity: 3)
    }

    var streamIndex: Int { stream }

    func start(in group: StageGroup) {
        group.onCancel { [input] in input.cancel() }
        group.start("encode") { [self] in try run() }
    }

    private func run() throws {
        guard encoder != nil, let mux else { return try discardAll() }
        var durations: [Int64: Int64] = [:]
        var lastDuration: Int64 = 1
        var remembered: Frame?
        var sent = 0
        func encode(_ frame: Frame, pts: Int64, duration: Int64, keyframe: Bool = false, ancillary: Ancillary) throws {
            sent += 1
            // Fault injection (RELIABILITY.md): the failure path exercised for real.
            if let limit = spec?.failsAfter, sent > limit {
                throw MediaError.processing(FFmpegError(.inputOutput, operation: "encoding (\(encoder!.codecName)) [injected fault after \(limit) frames]"))
            }
            frame.presentationTimestamp = pts
            if keyframe { frame.requestKeyframe() }
            // This picture's own captions (libx264 writes them as A/53 SEI): the decoder's on a
            // passed-through picture are replaced, never sent twice; PNG ignores them.
            if !ancillary.captions.isEmpty || frame.hasCaptionData { frame.setCaptionData(ancillary.captions) }
            if !constantRate { durations[pts] = duration }
            lastDuration = duration
            // Read at each picture: an overload step may have reopened it at a keyframe.
            let encoder = self.encoder!
            try timing.measure(.encode) { () throws(FFmpegError) in try encoder.send(frame) }
            try drain(deadline: nil, durations: &durations, lastDuration: lastDuration)
        }
        preset = spec?.preset
        while let work = try input.receive() {
            switch work {
            case .picture(_, _, _, _, true, _), .repeatLast(_, _, true, _, _):
                try changePresetIfAsked(durations: &durations, lastDuration: lastDuration)
            default: break
            }
            switch work {
            case let .usePreset(wanted):
                wantedPreset = wanted
            case let .picture(frame, remember, pts, duration, keyframe, ancillary):
                remembered = remember
                // A reference of its own: the remembered picture (the same frame on some paths)
                // keeps no caption bytes for a repeat to send again.
                try encode(frame === remember ? frame.newReference() : frame, pts: pts, duration: duration, keyframe: keyframe,
                           ancillary: ancillary)
            case let .repeatLast(pts, duration, keyframe, cheap, ancillary):
                guard let remembered else { continue }
                let again = remembered.newReference()
                again.clearPictureType()
                if cheap, !keyframe { again.markAsCheapRepeat() }
                try encode(again, pts: pts, duration: duration, keyframe: keyframe, ancillary: ancillary)
            }
        }
        // A quick stop drains the encoder's look-ahead only until its deadline.
        try encoder!.sendEndOfStream()
        try drain(deadline: stopDeadline.instant, durations: &durations, lastDuration: lastDuration)
        mux.input.finish()
    }

    /// At a keyframe: the overload level asks for another preset. The encoder holds no picture
    /// (the plan allows preset steps only with the low-delay tune); a new one opens with the
    /// preset, and its first picture is this keyframe. Where the output carries a global header,
    /// the new SPS/PPS must be the old ones byte for byte, else the step is refused (once).
    private func changePresetIfAsked(durations: inout [Int64: Int64], lastDuration: Int64) throws {
        guard let wanted = wantedPreset, let spec, let current = encoder, let preset else { return }
        guard wanted != preset, !refusedPresets.contains(wanted) else { return }
        guard let settings = spec.presetSteps[wanted] else { return }
        let next = try Self.encoder(spec, settings: settings, globalHeader: mux?.sink.wantsGlobalHeader ?? false)
        let header = current.globalHeader
        if !header.isEmpty, next.globalHeader != header {
            refusedPresets.insert(wanted)
            onPresetChange(wanted, "its parameter sets differ from the output's header")
            return
        }
        try current.sendEndOfStream()
        try drain(deadline: nil, durations: &durations, lastDuration: lastDuration)
        encoder = next
        self.preset = wanted
        presetChangeCount.add(1, ordering: .relaxed)
        onPresetChange(wanted, nil)
    }

    /// Times the encoder was reopened with another preset.
    var presetChanges: Int { presetChangeCount.load(ordering: .relaxed) }

    private func discardAll() throws {
        while let work = try input.receive() {
            switch work {
            case let .picture(_, _, pts, duration, _, _), let .repeatLast(pts, duration, _, _, _):
                encodedEnd = max(encodedEnd, pts + duration)
                written.add(1, ordering: .relaxed)
            case .usePreset:
                break
            }
        }
    }

    private func drain(deadline: ContinuousClock.Instant?, durations: inout [Int64: Int64], lastDuration: Int64) throws {
        guard let encoder, let mux else { return }
        while case let .packet(packet) = try timing.measure(.encode, { () throws(FFmpegError) in try encoder.receive() }) {
            if let deadline, ContinuousClock.now > deadline, framesWritten > 0 { return }
            // libx264 leaves durations at zero; muxers want them.
            let pts = packet.presentationTimestamp ?? 0
            packet.duration = constantRate ? 1 : (durations.removeValue(forKey: pts) ?? lastDuration)
            if let keep, !keep.contains(pts) { continue }
            encodedEnd = max(encodedEnd, pts + packet.duration)
            written.add(1, ordering: .relaxed)
            try mux.input.send(MuxItem(packet: packet, stream: stream, timeBase: encoder.timeBase))
        }
    }

    var framesWritten: Int { written.load(ordering: .relaxed) }
    /// Output duration in seconds; read after the stage has ended.
    var duration: Double { Double(encodedEnd) * (encoder?.timeBase ?? discardTimeBase).doubleValue }
}

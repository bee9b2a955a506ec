import Filters
import MediaIO

/// One encoded video output: converter, encoder and the sink its packets go to.
/// A file output has one branch; an HLS ladder has one per rendition.
final class VideoBranch {
    let size: FrameSize
    let sink: any PacketSink
    let encoder: Encoder
    let streamIndex: Int
    private let toYUV: RGBToFrame?
    /// Scales the chain's output to this branch's size (renditions); nil when sizes match.
    private let scaler: (any FilterRenderer)?
    private let scaled: RGBImage?
    private let timing: TimingRecorder
    /// Constant rate: pts are tick numbers and every packet lasts one tick.
    private let constantRate: Bool
    /// Forces an IDR on the ticks where this says so (HLS segment boundaries).
    private let keyframeAt: ((Int64) -> Bool)?
    private var lastInput: Frame?
    private var packetDurations: [Int64: Int64] = [:]
    private var lastDuration: Int64 = 1
    private(set) var framesWritten = 0
    /// End of the last packet, in the encoder's time base.
    private(set) var endPts: Int64 = 0

    init(size: FrameSize, chainOutputSize: FrameSize, encoder: Encoder, sink: any PacketSink, rgbInput: Bool,
         constantRate: Bool, keyframeAt: ((Int64) -> Bool)?, color: ColorDescription, timing: TimingRecorder) throws(MediaError) {
        self.size = size
        self.encoder = encoder
        self.sink = sink
        self.constantRate = constantRate
        self.keyframeAt = keyframeAt
        self.timing = timing
        streamIndex = try sink.addStream(from: encoder)
        let isRGBEncoder = encoder.codecName == "png"
        toYUV = rgbInput && !isRGBEncoder ? try RGBToFrame(size: size, color: color) : nil
        // Sizes that differ by more than the odd-pixel crop need a real scale.
        if rgbInput, abs(chainOutputSize.width - size.width) > 1 || abs(chainOutputSize.height - size.height) > 1 {
            do {
                let renderer = try Scale(width: size.width, height: size.height).makeRenderer(for: chainOutputSize)
                scaler = renderer
                scaled = RGBImage(size: renderer.outputSize)
            } catch {
                throw .invalidSettings("cannot scale \(chainOutputSize) to \(size): \(error)")
            }
        } else {
            scaler = nil
            scaled = nil
        }
    }

    /// Encodes a newly filtered picture.
    func encode(_ image: RGBImage, pts: Int64, duration: Int64) throws {
        var source = image
        if let scaler, let scaled {
            timing.measure(.filter) { scaler.render(image, into: scaled) }
            source = scaled
        }
        let frame: Frame
        if let toYUV {
            frame = try timing.measure(.toYUV) { () throws(MediaError) in try toYUV.convert(source) }
        } else {
            frame = try Frame(copying: source)
        }
        lastInput = frame
        try send(frame, pts: pts, duration: duration)
    }

    /// Encodes a decoded frame as it is (no RGB round trip).
    func encodePassthrough(_ frame: Frame, pts: Int64, duration: Int64) throws {
        let input = frame.newReference()
        input.clearPictureType()
        lastInput = input
        try send(input, pts: pts, duration: duration)
    }

    /// Shows the previous picture again at a new time, without filtering or converting it again.
    func encodeRepeat(pts: Int64, duration: Int64) throws {
        guard let lastInput else { return }
        let again = lastInput.newReference()
        again.clearPictureType()
        try send(again, pts: pts, duration: duration)
    }

    private func send(_ frame: Frame, pts: Int64, duration: Int64) throws {
        frame.presentationTimestamp = pts
        if let keyframeAt, keyframeAt(pts) { frame.requestKeyframe() }
        if !constantRate { packetDurations[pts] = duration }
        lastDuration = duration
        try timing.measure(.encode) { () throws(FFmpegError) in try encoder.send(frame) }
        try drain()
    }

    /// Flushes the encoder's delayed frames into the sink.
    /// Flushes the encoder's delayed frames into the sink. With a `deadline`, frames still inside
    /// the encoder when it passes are dropped: what came out is a playable prefix.
    func finish(deadline: ContinuousClock.Instant? = nil) throws {
        try encoder.sendEndOfStream()
        try drain(deadline: deadline)
    }

    private func drain(deadline: ContinuousClock.Instant? = nil) throws {
        while case let .packet(packet) = try timing.measure(.encode, { () throws(FFmpegError) in try encoder.receive() }) {
            if let deadline, ContinuousClock.now > deadline, framesWritten > 0 { return }
            // libx264 leaves durations at zero; muxers want them.
            let pts = packet.presentationTimestamp ?? 0
            packet.duration = constantRate ? 1 : (packetDurations.removeValue(forKey: pts) ?? lastDuration)
            endPts = max(endPts, pts + packet.duration)
            framesWritten += 1
            try timing.measure(.mux) { () throws(MediaError) in
                try sink.write(packet, toStream: streamIndex, timeBase: encoder.timeBase)
            }
        }
    }

    /// Output duration in seconds.
    var duration: Double { Double(endPts) * encoder.timeBase.doubleValue }
}

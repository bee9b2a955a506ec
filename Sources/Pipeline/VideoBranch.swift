import Filters
import Foundation
import MediaIO
import Synchronization

/// One encoded video output: converter, encoder and the sink its packets go to.
/// A file output has one branch; an HLS ladder has one per rendition.
final class VideoBranch: @unchecked Sendable {
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

    init(size: FrameSize, chainOutputSize: FrameSize, encoder: Encoder, sink: any PacketSink, rgbInput: Bool,
         constantRate: Bool, keyframeAt: ((Int64) -> Bool)?, color: ColorDescription, timing: TimingRecorder) throws(MediaError) {
        self.size = size
        self.encoder = encoder
        self.sink = sink
        self.constantRate = constantRate
        self.keyframeAt = keyframeAt
        self.timing = timing
        streamIndex = try sink.addStream(from: encoder)
        let isRGBEncoder = encoder.inputPixelFormat == .rgb24
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

    /// Encodes a frame already moved on its planes (mirrors, quarter turns), no RGB round trip.
    func encodePlanar(_ frame: Frame, pts: Int64, duration: Int64) throws {
        lastInput = frame
        let input = frame.newReference()
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
        startWorkerIfNeeded()
        guard jobs.push(.frame(frame, duration: duration)) else { throw workerFailure ?? CancellationError() }
    }

    /// Flushes the encoder's delayed frames into the sink and waits for the encode thread.
    /// With a `deadline`, frames still inside the encoder when it passes are dropped: what came
    /// out is a playable prefix.
    func finish(deadline: ContinuousClock.Instant? = nil) throws {
        startWorkerIfNeeded()
        if deadline != nil { jobs.removeAll() }
        jobs.push(.finish(deadline))
        worker?.join()
        worker = nil
        if let workerFailure { throw workerFailure }
    }

    /// Stops the encode thread without finishing (after a failure or an abandoned run).
    func abandon() {
        jobs.close()
        worker?.join()
        worker = nil
        // No-op after a finished run; after an error, no half-written segment outlives the process.
        sink.discardUnfinished()
    }

    // MARK: The encode thread: encoder and sink, one frame after another in order.

    private enum Job {
        case frame(Frame, duration: Int64)
        case finish(ContinuousClock.Instant?)
    }

    private let jobs = StageQueue<Job>(capacity: 3)
    private var worker: StageThread?
    private let failure = Mutex<(any Error)?>(nil)
    private var workerFailure: (any Error)? { failure.withLock { $0 } }
    private let written = Atomic<Int>(0)
    /// Written by the encode thread; read after it has been joined.
    private var encodedEnd: Int64 = 0

    var framesWritten: Int { written.load(ordering: .relaxed) }
    var endPts: Int64 { encodedEnd }

    private func startWorkerIfNeeded() {
        guard worker == nil else { return }
        worker = StageThread(name: "livefilter.encode") { [self] in encodeLoop() }
    }

    /// Fault injection for the reliability tests (RELIABILITY.md): the encoder "fails" after this
    /// many frames, as libx264 would on an internal error, so the failure path is exercised for real.
    private static let injectedFailureAfter: Int? =
        ProcessInfo.processInfo.environment["LIVEFILTER_FAULT_ENCODER_AFTER"].flatMap { Int($0) }

    private func encodeLoop() {
        var durations: [Int64: Int64] = [:]
        var lastDuration: Int64 = 1
        var sent = 0
        do {
            while let job = try jobs.pop() {
                switch job {
                case let .frame(frame, duration):
                    sent += 1
                    if let limit = Self.injectedFailureAfter, sent > limit {
                        throw FFmpegError(.inputOutput, operation: "encoding (\(encoder.codecName)) [injected fault after \(limit) frames]")
                    }
                    if !constantRate { durations[frame.presentationTimestamp] = duration }
                    lastDuration = duration
                    try timing.measure(.encode) { () throws(FFmpegError) in try encoder.send(frame) }
                    try drain(deadline: nil, durations: &durations, lastDuration: lastDuration)
                case let .finish(deadline):
                    try encoder.sendEndOfStream()
                    try drain(deadline: deadline, durations: &durations, lastDuration: lastDuration)
                    return
                }
            }
        } catch {
            failure.withLock { $0 = error }
            jobs.close()
        }
    }

    private func drain(deadline: ContinuousClock.Instant?, durations: inout [Int64: Int64], lastDuration: Int64) throws {
        while case let .packet(packet) = try timing.measure(.encode, { () throws(FFmpegError) in try encoder.receive() }) {
            if let deadline, ContinuousClock.now > deadline, framesWritten > 0 { return }
            // libx264 leaves durations at zero; muxers want them.
            let pts = packet.presentationTimestamp ?? 0
            packet.duration = constantRate ? 1 : (durations.removeValue(forKey: pts) ?? lastDuration)
            encodedEnd = max(encodedEnd, pts + packet.duration)
            written.add(1, ordering: .relaxed)
            try timing.measure(.mux) { () throws(MediaError) in
                try sink.write(packet, toStream: streamIndex, timeBase: encoder.timeBase)
            }
        }
    }

    /// Output duration in seconds.
    var duration: Double { Double(endPts) * encoder.timeBase.doubleValue }
}

import Filters
import Foundation
import MediaIO

/// A decoded video frame with its time relative to the input's start.
struct TimedFrame {
    var frame: Frame
    /// Presentation time, relative to the container's start time.
    var time: MediaTime
    /// How long the frame lasts, in the same units as `time`.
    var duration: Int64
    /// `time`'s value, in the video stream's time base.
    var relativePts: Int64 { time.value }
}

/// Shared stage timer: components on every thread add their wall time here.
final class TimingRecorder: @unchecked Sendable {
    private var recorded = StageTimings()
    private let lock = NSLock()

    var timings: StageTimings {
        lock.lock(); defer { lock.unlock() }
        return recorded
    }

    @inline(__always)
    func measure<T, E: Error>(_ stage: StageTimings.Stage, _ body: () throws(E) -> T) throws(E) -> T {
        let start = DispatchTime.now().uptimeNanoseconds
        defer {
            let elapsed = DispatchTime.now().uptimeNanoseconds - start
            lock.lock()
            recorded.add(stage, nanoseconds: elapsed)
            lock.unlock()
        }
        return try body()
    }
}

/// Reads the input: demuxes, decodes video into timed frames, and hands audio packets to the
/// audio stage as they come, so audio is written in step with video.
final class MediaInput {
    let demuxer: Demuxer
    let decoder: Decoder
    let audio: AudioStage?
    let timing: TimingRecorder
    let timeBase: Rational
    let origin: Int64
    let nominalDuration: Int64
    private let packet = Packet()
    /// Where packets come from: the demuxer itself, or a live queue.
    var reader: any PacketReader
    private var decoded: [TimedFrame] = []
    private var decoderFlushed = false
    private var lastPts: Int64?
    private var lastDuration: Int64
    private(set) var framesDecoded = 0
    /// Seconds of input read so far (end of the newest frame).
    private(set) var mediaTime = 0.0

    init(demuxer: Demuxer, audio: AudioStage?, timing: TimingRecorder, nominalRate: Rational) throws(MediaError) {
        self.demuxer = demuxer
        self.audio = audio
        self.timing = timing
        decoder = try Decoder(demuxer: demuxer, streamIndex: demuxer.video.index)
        reader = demuxer
        timeBase = demuxer.video.timeBase
        origin = Int64((demuxer.startTime / timeBase.doubleValue).rounded())
        nominalDuration = max(1, Int64((1 / nominalRate.doubleValue / timeBase.doubleValue).rounded()))
        lastDuration = nominalDuration
    }

    var decodeErrors: Int { decoder.decodeErrors + (audio?.decodeErrors ?? 0) }

    enum Poll { case frame(TimedFrame), notYet, end }

    /// The next video frame in presentation order, or nil at the end of the input (blocking reads).
    func nextFrame() throws -> TimedFrame? {
        while true {
            switch try poll() {
            case let .frame(f): return f
            case .end: return nil
            case .notYet: usleep(1000)
            }
        }
    }

    /// The end of the newest frame decoded, relative to the start.
    var lastFrameEnd: MediaTime? {
        lastPts.map { time($0 - origin + lastDuration) }
    }

    /// The next video frame if the packets for it are there; `.notYet` when a live queue is dry.
    func poll() throws -> Poll {
        while decoded.isEmpty {
            if decoderFlushed { return .end }
            let result = try timing.measure(.demux, { () throws(FFmpegError) in try reader.nextPacket(into: packet) })
            switch result {
            case nil:
                return .notYet
            case .endOfFile:
                decoder.sendEndOfStream()
                decoderFlushed = true
                try drainDecoder()
                try audio?.finishInput()
            case .packet:
                if packet.streamIndex == demuxer.video.index {
                    try timing.measure(.decode) { () throws(FFmpegError) in try decoder.send(packet) }
                    try drainDecoder()
                } else {
                    try audio?.handle(packet)
                }
            }
        }
        return .frame(decoded.removeFirst())
    }

    private func drainDecoder() throws {
        while case let .frame(frame) = try timing.measure(.decode, { () throws(FFmpegError) in try decoder.receive() }) {
            framesDecoded += 1
            // Frames without a timestamp follow the previous one.
            let pts = frame.timestamp ?? ((lastPts ?? origin) + lastDuration)
            if frame.durationInStreamTimeBase > 0 {
                lastDuration = frame.durationInStreamTimeBase
            } else if let lastPts, pts > lastPts {
                lastDuration = pts - lastPts
            }
            lastPts = pts
            let relative = pts - origin
            mediaTime = Double(relative + lastDuration) * timeBase.doubleValue
            decoded.append(TimedFrame(frame: frame, time: time(relative), duration: lastDuration))
        }
    }

    func time(_ relative: Int64) -> MediaTime {
        MediaTime(value: relative, numerator: Int64(timeBase.numerator), denominator: Int64(timeBase.denominator))
    }
}

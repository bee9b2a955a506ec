import Filters
import MediaIO

/// Single filtered frames at chosen times: for `livefilter snapshot`, contact sheets and
/// before/after comparisons.
public final class Snapshotter {
    public private(set) var demuxer: Demuxer
    private var decoder: Decoder
    private let input: String
    private let inputOptions: InputOptions
    private let toRGB: FrameToRGB
    private let source: RGBImage
    private let upright: ChainRenderer
    private let chain: ChainRenderer
    private let origin: Int64
    public var duration: Double? { demuxer.duration }

    /// Opens the input; `chain` runs after the orientation fix (when `orientation` is `.auto`).
    public init(input: String, chain: FilterChain, orientation: OrientationPolicy = .auto,
                inputOptions: InputOptions = InputOptions()) throws(JobError) {
        self.input = input
        self.inputOptions = inputOptions
        do {
            demuxer = try Demuxer(url: input, options: inputOptions)
            decoder = try Decoder(demuxer: demuxer, streamIndex: demuxer.video.index)
        } catch {
            throw .media(error)
        }
        let video = demuxer.video
        toRGB = FrameToRGB(outputSize: video.size, color: video.colorSpace)
        source = RGBImage(size: video.size)
        do {
            // The same geometry rule as `run`: any rotation tag, mirrored matrices included.
            let geometry = try OutputGeometry(video: video, chain: chain, orientation: orientation, evenSize: false)
            upright = try ChainRenderer(chain: FilterChain(geometry.orientation.filters), inputSize: video.size)
            self.chain = try ChainRenderer(chain: geometry.chain, inputSize: video.size)
        } catch {
            throw .chain(error)
        }
        origin = demuxer.start(inTimeBase: video.timeBase)
    }

    /// The frame shown at `seconds` (the newest frame whose time is ≤ it): upright source and filtered.
    /// Both images are new (not reused by the next call).
    public func frame(at seconds: Double) throws(JobError) -> (before: RGBImage, after: RGBImage) {
        let frame: Frame
        do {
            frame = try decodeFrame(at: seconds)
            try toRGB.convert(frame, into: source)
        } catch let error as MediaError {
            throw .media(error)
        } catch let error as FFmpegError {
            throw .media(.processing(error))
        } catch {
            throw .media(.invalidSettings("\(error)"))
        }
        let before = upright.render(source)
        let beforeCopy = RGBImage(size: before.size)
        beforeCopy.copyPixels(from: before)
        // The chain at the snapshot's time: keyframes, `enable=` and tracks as `run` evaluates them.
        let after = chain.render(source, at: FrameTime(seconds: seconds, frame: 0))
        let afterCopy = RGBImage(size: after.size)
        afterCopy.copyPixels(from: after)
        return (beforeCopy, afterCopy)
    }

    /// Seeks before `seconds` and decodes forward. Indexed containers land on a keyframe at or before
    /// the target; MPEG-TS (no index) can land after it, even when asked for its start, so when the
    /// first frame decoded is already past the target, or none decodes, start further back, and in the
    /// end open the input again and decode from its first packet.
    private func decodeFrame(at seconds: Double) throws -> Frame {
        var back = 0.0
        while true {
            let start = max(0, seconds - back)
            if let frame = try decodeFrame(at: seconds, seekingTo: start, fromStart: start == 0) { return frame }
            if start == 0 {
                throw MediaError.notMediaFile(demuxer.url, reason: "no video frame could be decoded near \(seconds) s")
            }
            back = back == 0 ? 2 : back * 4
        }
    }

    /// The newest frame with time ≤ `seconds` after seeking to `start`, or nil when the first frame
    /// decoded is later than that (unless `fromStart`: then the first frame is the answer).
    private func decodeFrame(at seconds: Double, seekingTo start: Double, fromStart: Bool) throws -> Frame? {
        if fromStart {
            demuxer = try Demuxer(url: input, options: inputOptions)
            decoder = try Decoder(demuxer: demuxer, streamIndex: demuxer.video.index)
        } else {
            try demuxer.seek(to: start)
            decoder.flush()
        }
        let tb = demuxer.video.timeBase.doubleValue
        let target = Int64((seconds / tb).rounded()) + origin
        let packet = Packet()
        var best: Frame?
        var flushed = false
        while true {
            var output = try decoder.receive()
            if case .needsInput = output {
                if flushed { output = .endOfStream } else {
                    switch try demuxer.read(into: packet) {
                    case .endOfFile:
                        decoder.sendEndOfStream()
                        flushed = true
                    case .packet:
                        if packet.streamIndex == demuxer.video.index { try decoder.send(packet) }
                    }
                    continue
                }
            }
            switch output {
            case let .frame(f):
                let pts = f.timestamp ?? target
                if pts <= target { best = f; continue }
                if best == nil && !fromStart { return nil }
                return best ?? f
            case .endOfStream:
                return best
            case .needsInput:
                continue
            }
        }
    }
}

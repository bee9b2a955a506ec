import Filters
import MediaIO

/// Single filtered frames at chosen times: for `livefilter snapshot`, contact sheets and
/// before/after comparisons.
public final class Snapshotter {
    public let demuxer: Demuxer
    private let decoder: Decoder
    private let toRGB: FrameToRGB
    private let source: RGBImage
    private let upright: ChainRenderer
    private let chain: ChainRenderer
    private let origin: Int64
    public var duration: Double? { demuxer.duration }

    /// Opens the input; `chain` runs after the orientation fix (when `orientation` is `.auto`).
    public init(input: String, chain: FilterChain, orientation: OrientationPolicy = .auto,
                inputOptions: InputOptions = InputOptions()) throws(JobError) {
        do {
            demuxer = try Demuxer(url: input, options: inputOptions)
            decoder = try Decoder(demuxer: demuxer, streamIndex: demuxer.video.index)
        } catch {
            throw .media(error)
        }
        let video = demuxer.video
        var fix: [any Filter] = []
        if orientation == .auto, let q = video.quarterTurnRotation, q != 0 { fix = [Rotate(quarterTurns: q / 90)] }
        toRGB = FrameToRGB(outputSize: video.size, color: video.colorSpace)
        source = RGBImage(size: video.size)
        do {
            upright = try ChainRenderer(chain: FilterChain(fix), inputSize: video.size)
            self.chain = try ChainRenderer(chain: FilterChain(fix + chain.filters), inputSize: video.size)
        } catch {
            throw .chain(error)
        }
        origin = Int64((demuxer.startTime / video.timeBase.doubleValue).rounded())
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
        let after = chain.render(source)
        let afterCopy = RGBImage(size: after.size)
        afterCopy.copyPixels(from: after)
        return (beforeCopy, afterCopy)
    }

    private func decodeFrame(at seconds: Double) throws -> Frame {
        try demuxer.seek(to: seconds)
        decoder.flush()
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
                if pts <= target || best == nil { best = f }
                if pts > target { return best! }
            case .endOfStream:
                if let best { return best }
                throw MediaError.notMediaFile(demuxer.url, reason: "no video frame could be decoded near \(seconds) s")
            case .needsInput:
                continue
            }
        }
    }
}

import Filters
import MediaIO

/// Decoded frames to filtered RGB: colour conversion, then the chain.
final class FrameFilter {
    private let toRGB: FrameToRGB
    private let source: RGBImage
    private let chain: ChainRenderer
    private let timing: TimingRecorder

    /// `assumedMatrix` stands in for a stream that does not say its matrix: the one the output is
    /// tagged with, so an untagged picture keeps its colours (and matches the planar path's).
    init(video: VideoStreamInfo, chain: FilterChain, assumedMatrix: ColorMatrix, timing: TimingRecorder) throws(MediaError) {
        var color = video.colorSpace
        if color.matrix == .unspecified { color.matrix = assumedMatrix }
        toRGB = FrameToRGB(outputSize: video.size, color: color)
        source = RGBImage(size: video.size)
        do {
            self.chain = try ChainRenderer(chain: chain, inputSize: video.size)
        } catch {
            throw .invalidSettings(error.description)
        }
        self.chain.measuresPasses = true
        self.timing = timing
    }

    var passes: [FilterPassTime] { zip(chain.passNames, chain.passNanoseconds).map(FilterPassTime.init) }

    /// Whether the chain's picture changes with time alone (then a repeated tick is filtered again).
    var isTimeDependent: Bool { chain.isTimeDependent }

    /// The filtered picture at `time`; valid until the next call. With `convert` false the last
    /// frame's conversion is reused (a repeated tick of a time-dependent chain).
    func filter(_ frame: Frame, at time: FrameTime, convert: Bool = true) throws(MediaError) -> RGBImage {
        if convert || !chain.isTimeDependent || !converted {
            try timing.measure(.toRGB) { () throws(MediaError) in try toRGB.convert(frame, into: source) }
            converted = true
        }
        // A chain that works in place may change `source` only when nothing will read it again.
        return timing.measure(.filter) { chain.render(source, at: time, sourceIsScratch: !chain.isTimeDependent) }
    }
    private var converted = false
}

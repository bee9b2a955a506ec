import Filters
import MediaIO

/// Runs a chain on decoded yuv420p frames plane by plane (`PlanarChainRenderer`): the chain's
/// picture with no trip through RGB. It reaches the frames only through MediaIO's planar view and
/// pool (`Frame.planarView`, `PlanarFramePool`): running a chain is the filter stage's work, not I/O.
public final class PlanarFrameFilter {
    public let inputSize: FrameSize
    public let outputSize: FrameSize
    public let renderer: PlanarChainRenderer
    private let pool: PlanarFramePool

    /// The range of the pictures it takes; its output is always limited range.
    public let inputRange: ColorRange

    /// Nil when the chain cannot run on the planes of this size (see `PlanarChainRenderer`).
    /// `color` is the stream's matrix: it gives a pad's fill colour as samples. `inputRange` .full:
    /// the pictures are full-range 4:2:0 (yuvj420p), written as limited range by a first pass.
    public init?(chain: FilterChain, inputSize: FrameSize, color: ColorDescription, inputRange: ColorRange = .limited) {
        let converter = YUVConverter(matrix: color.matrix.yuvMatrix, range: .limited)
        guard let renderer = PlanarChainRenderer(chain: chain, inputSize: inputSize, color: converter,
                                                 inputRange: inputRange == .full ? .full : .limited) else { return nil }
        self.inputSize = inputSize
        self.inputRange = inputRange
        self.renderer = renderer
        outputSize = renderer.outputSize
        pool = PlanarFramePool(size: outputSize)
    }

    /// Whether `frame` is a 4:2:0 picture of the expected size and range (a stream can change mid-way).
    public func accepts(_ frame: Frame) -> Bool { Self.accepts(frame, size: inputSize, range: inputRange) }

    /// Whether `frame` is an 8-bit 4:2:0 picture of `size` whose samples are in `range`
    /// (`sampleRange`, an untagged frame taken to be in the stream's `range`).
    public static func accepts(_ frame: Frame, size: FrameSize, range: ColorRange = .limited) -> Bool {
        frame.isPlanarYUV420(size: size, range: range)
    }

    /// A new frame holding the filtered picture at `time`.
    public func apply(_ frame: Frame, at time: FrameTime = .zero) throws(MediaError) -> Frame {
        try pool.makeFrame(from: frame) { renderer.render(frame.planarView, into: $0, at: time) }
    }
}

import Filters
import MediaIO

/// The planar path's work on one picture: the chain on the decoded planes, then each rendition's
/// scale on the planes (a ladder), so no rung goes through RGB either.
final class PlanarPath {
    /// Nil for an empty chain on limited-range pictures: the decoded picture is the chain's.
    let chain: PlanarFrameFilter?
    /// Per rendition, the scale from the chain's picture to its size; nil where it takes the picture as it is.
    private let scalers: [PlanarFrameFilter?]
    private let inputSize: FrameSize

    /// Whether the chain, and each rendition's scale from its picture, run on the planes: the one
    /// rule the plan decides the video path by (`JobPlan.videoPath`), and what `init` builds.
    static func isFeasible(chain: FilterChain, input: VideoStreamInfo, color: ColorDescription, chainOutputSize: FrameSize,
                           renditionSizes: [FrameSize]) -> Bool {
        let range: YUVRange = input.decodedRange == .full ? .full : .limited
        // The stream's matrix, as `PlanarFrameFilter` gives it to the renderers.
        let converter = YUVConverter(matrix: color.matrix.yuvMatrix, range: .limited)
        guard chain.isEmpty && range == .limited
            || PlanarChainRenderer.supports(chain, inputSize: input.size, color: converter, inputRange: range) else { return false }
        return renditionSizes.allSatisfy {
            $0 == chainOutputSize || PlanarChainRenderer.supports(FilterChain([Scale(width: $0.width, height: $0.height)]),
                                                                  inputSize: chainOutputSize, color: converter)
        }
    }

    /// Builds what `isFeasible` allowed; a failure here is a disagreement between the rule and the
    /// renderers, reported as such rather than run another way.
    init(chain: FilterChain, spec: FilterSpec) throws(MediaError) {
        inputSize = spec.input.size
        let inputRange = spec.input.decodedRange
        func unbuildable(_ what: String) -> MediaError {
            .invalidSettings("the planned planar path could not build \(what) (the plan's rule and the renderers disagree: run with --exact-rgb and report it)")
        }
        if chain.isEmpty, inputRange == .limited {
            self.chain = nil
        } else {
            guard let filter = PlanarFrameFilter(chain: chain, inputSize: inputSize, color: spec.color,
                                                 inputRange: inputRange) else { throw unbuildable("the chain '\(chain)'") }
            filter.renderer.measuresPasses = true
            self.chain = filter
        }
        let size = self.chain?.outputSize ?? inputSize
        var scalers: [PlanarFrameFilter?] = []
        for renditionSize in spec.renditionSizes {
            guard renditionSize != size else {
                scalers.append(nil)
                continue
            }
            // The scale RenditionConverter does on RGB, on the planes.
            let scale = FilterChain([Scale(width: renditionSize.width, height: renditionSize.height)])
            guard let scaler = PlanarFrameFilter(chain: scale, inputSize: size, color: spec.color) else {
                throw unbuildable("the scale to \(renditionSize)")
            }
            scalers.append(scaler)
        }
        self.scalers = scalers
    }

    var isTimeDependent: Bool { chain?.renderer.isTimeDependent == true }
    var passes: [FilterPassTime] {
        chain.map { zip($0.renderer.passNames, $0.renderer.passNanoseconds).map(FilterPassTime.init) } ?? []
    }

    func accepts(_ frame: Frame) -> Bool { chain?.accepts(frame) ?? PlanarFrameFilter.accepts(frame, size: inputSize) }

    /// Each rendition's picture of `frame` at `time`.
    func apply(_ frame: Frame, at time: FrameTime) throws(MediaError) -> [Frame] {
        let picture: Frame
        if let chain {
            picture = try chain.apply(frame, at: time)
        } else {
            // The decoder's picture type would force keyframes where the source had them.
            picture = frame.newReference()
            picture.clearPictureType()
        }
        return try scalers.map { scaler throws(MediaError) in try scaler?.apply(picture) ?? picture }
    }
}

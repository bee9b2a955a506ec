/// Removes colour: every pixel becomes its luma, R = G = B = Y.
///
/// `matrix` chooses the luma weights: `bt709` (default: HD and the colour the output is tagged
/// with) or `bt601`, which is what ffmpeg's `format=gray` computes (and what the tests compare with).
/// Integer weights in 1/65536 that add up to exactly 65536, so white stays 255 and grey stays grey.
public struct Grayscale: Filter, Hashable {
    public enum Matrix: String, CaseIterable, Sendable {
        case bt709, bt601

        /// (R, G, B) weights in 1/65536, summing to 65536.
        var weights: (r: Int32, g: Int32, b: Int32) {
            switch self {
            case .bt709: (13933, 46871, 4732)    // 0.2126, 0.7152, 0.0722
            case .bt601: (19595, 38470, 7471)    // 0.299, 0.587, 0.114
            }
        }
    }

    public enum Parameters {
        public static let matrix = ValueParameter<Matrix>.choice("matrix", default: .bt709, summary: "the luma weights")
    }

    public var matrix: Matrix

    public init(matrix: Matrix = Parameters.matrix.defaultValue) {
        self.matrix = matrix
    }

    public var description: String { matrix == Parameters.matrix.defaultValue ? "grayscale" : "grayscale \(matrix.rawValue)" }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize { input }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        GrayscaleRenderer(size: input, weights: matrix.weights)
    }
}

private final class GrayscaleRenderer: FilterRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let weights: (r: Int32, g: Int32, b: Int32)
    private let bands: Int

    init(size: FrameSize, weights: (r: Int32, g: Int32, b: Int32)) {
        inputSize = size
        self.weights = weights
        bands = Parallel.bandCount(for: size.height, minimumPerBand: 32)
    }

    func render(_ source: RGBImage, into destination: RGBImage) {
        let width = inputSize.width
        let (wr, wg, wb) = weights
        Parallel.forEachBand(of: inputSize.height, bands: bands) { _, rows in
            for y in rows {
                let s = source.row(y), d = destination.row(y)
                for x in 0..<width {
                    let p = 3 * x
                    let luma = (wr &* Int32(s[p]) &+ wg &* Int32(s[p + 1]) &+ wb &* Int32(s[p + 2]) &+ 32768) >> 16
                    let v = UInt8(truncatingIfNeeded: luma)
                    d[p] = v
                    d[p + 1] = v
                    d[p + 2] = v
                }
            }
        }
    }
}

extension Grayscale: PlanarFilter {
    /// On the planes of a stream whose matrix has these luma weights, grey is the luma plane as it
    /// is and both chroma planes at their neutral 128: no arithmetic at all. Any other matrix: nil
    /// (the RGB path).
    public func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        guard color.range == .limited, color.matrix == (matrix == .bt709 ? .bt709 : .bt601) else { return nil }
        let size = picture.shifted(by: role.shift)
        return role == .luma ? CopyRenderer(size: size) : PlaneFillRenderer(size: size, value: 128)
    }
}

/// Writes one value everywhere (a neutral chroma plane).
final class PlaneFillRenderer: PlaneRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let value: UInt8

    init(size: FrameSize, value: UInt8) {
        inputSize = size
        self.value = value
    }

    func render(_ source: Plane, into destination: Plane) {
        for y in 0..<destination.height { destination.row(y).update(repeating: value, count: destination.width) }
    }
}

/// Gaussian blur with standard deviation `sigma` in pixels (0 is no blur), clamp-to-edge like Core Image's
/// `clampedToExtent`: a constant picture stays exactly constant, with no dark rim.
///
/// With a `region`, only that rectangle is blurred (a privacy blur) and its samples are clamped to
/// the rectangle; the pixels outside are copied unchanged.
///
/// Sigmas below 2 use a direct separable FIR of radius ⌈4σ⌉. From 2 up, the picture is averaged
/// in f×f blocks (f a power of two chosen from sigma), the small picture is blurred with a short
/// FIR and interpolated back linearly, the variances adding up to exactly σ² (see
/// `GaussianBlurDecimated.swift`): the cost per pixel no longer depends on sigma, and the result
/// stays above 50 dB PSNR against the exact Gaussian.
public struct GaussianBlur: Filter, Hashable {
    public enum Parameters {
        /// 0 leaves the picture as it is (a keyframed blur fading in starts there).
        public static let sigma = NumericParameter<Double>("sigma", in: 0...100, summary: "standard deviation in pixels")
    }

    @available(*, deprecated, renamed: "Parameters.sigma.range") public static var sigmaRange: ClosedRange<Double> { Parameters.sigma.range }

    /// Formerly the sigma above which a recursive (Deriche) filter replaced the FIR. The renderer
    /// now decimates from sigma 2 up and no longer uses it; kept for source compatibility.
    public static let recursiveThreshold = 4.0

    public var sigma: Double
    public var region: PixelRect?

    public init(sigma: Double, region: PixelRect? = nil) {
        self.sigma = sigma
        self.region = region
    }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize {
        try Parameters.sigma.check(sigma, filter: description)
        if let region, !region.isInside(input) {
            throw .invalidGeometry(filter: description,
                                   reason: "the region \(region.width)x\(region.height) at (\(region.x), \(region.y)) does not lie inside the \(input) frame")
        }
        return input
    }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        _ = try outputSize(for: input)
        if sigma == 0 { return CopyRenderer(size: input) }
        return GaussianBlurRenderer(sigma: sigma, region: region ?? PixelRect(x: 0, y: 0, width: input.width, height: input.height),
                                    inputSize: input)
    }

    public var description: String {
        var text = "blur sigma=\(formatNumber(sigma))"
        if let region { text += " x=\(region.x) y=\(region.y) w=\(region.width) h=\(region.height)" }
        return text
    }
}

extension GaussianBlur: PlanarFilter {
    public func acceptsPlanes(of picture: FrameSize) -> Bool { region?.isEven ?? true }

    /// A chroma plane is half size, so its blur is half as wide: σ/2 there is σ on the picture.
    public func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        guard acceptsPlanes(of: picture) else { return nil }
        let size = picture.shifted(by: role.shift)
        let rect = (region ?? PixelRect(x: 0, y: 0, width: picture.width, height: picture.height)).shifted(by: role.shift)
        if sigma == 0 { return CopyRenderer(size: size) }
        return GaussianBlurRenderer(sigma: sigma / Double(1 << role.shift), region: rect, inputSize: size, channels: 1)
    }
}

final class GaussianBlurRenderer: FilterRenderer, PlaneRenderer {
    let inputSize: FrameSize
    let outputSize: FrameSize
    private let region: PixelRect
    private let workers: Int
    /// 3 for packed RGB, 1 for a plane.
    private let channels: Int
    /// Small sigmas: direct FIR taps; per band a padded row and a ring of 2R + 1 filtered rows.
    private let taps: [Float]
    private let ringStride: Int
    private let rowScratch: [ScratchBuffer<Float>]
    private let ringScratch: [ScratchBuffer<Float>]
    /// Sigma ≥ 2: decimate, blur small, interpolate back.
    private let decimated: DecimatedBlur?

    init(sigma: Double, region: PixelRect, inputSize: FrameSize, channels: Int = 3, workers: Int = Parallel.workerCount) {
        self.inputSize = inputSize
        outputSize = inputSize
        self.region = region
        self.workers = workers
        self.channels = channels
        decimated = DecimationPlan(sigma: sigma).map {
            DecimatedBlur(plan: $0, width: region.width, height: region.height, channels: channels, workers: workers)
        }
        let samples = channels * region.width
        ringStride = (samples + 15) / 16 * 16 + 16
        if decimated == nil {
            taps = gaussianTaps(sigma: sigma)
            let padded = channels * (region.width + 2 * (taps.count - 1)) + 32
            rowScratch = (0..<workers).map { _ in ScratchBuffer(count: padded, zero: 0) }
            let ring = ringStride * (2 * taps.count - 1) + 16
            ringScratch = (0..<workers).map { _ in ScratchBuffer(count: ring, zero: 0) }
        } else {
            taps = []
            rowScratch = []
            ringScratch = []
        }
    }

    /// The whole picture blurred and resized to `output` in one pass (a decimated blur only: nil
    /// when `sigma` is below the decimation range).
    init?(sigma: Double, inputSize: FrameSize, resizedTo output: FrameSize, channels: Int, workers: Int = Parallel.workerCount) {
        guard let plan = DecimationPlan(sigma: sigma) else { return nil }
        self.inputSize = inputSize
        outputSize = output
        region = PixelRect(x: 0, y: 0, width: inputSize.width, height: inputSize.height)
        self.workers = workers
        self.channels = channels
        decimated = DecimatedBlur(plan: plan, width: inputSize.width, height: inputSize.height, output: output,
                                  channels: channels, workers: workers)
        taps = []
        ringStride = 0
        rowScratch = []
        ringScratch = []
    }

    func render(_ source: RGBImage, into destination: RGBImage) {
        precondition(channels == 3, "a plane blur renders planes")
        copyOutside(source.baseAddress, source.bytesPerRow, destination.baseAddress, destination.bytesPerRow)
        blur(PixelRegion(source, region), PixelRegion(destination, region))
    }

    func render(_ source: Plane, into destination: Plane) {
        precondition(channels == 1, "an RGB blur renders RGB images")
        copyOutside(source.base, source.stride, destination.base, destination.stride)
        blur(PixelRegion(source, region), PixelRegion(destination, region))
    }

    private func blur(_ input: PixelRegion, _ output: PixelRegion) {
        if outputSize != inputSize, let decimated {
            var whole = output
            (whole.width, whole.height) = (outputSize.width, outputSize.height)
            decimated.render(input, whole)
            return
        }
        if let decimated {
            decimated.render(input, output)
            return
        }
        let h = region.height
        let rowScratch = rowScratch, ringScratch = ringScratch, taps = taps, ringStride = ringStride
        let rowBands = Parallel.bandCount(for: h, minimumPerBand: 32, workers: workers)
        Parallel.forEachBand(of: h, bands: rowBands) { band, rows in
            FIRBlurKernel.fused(rows: rows, source: input, destination: output, taps: taps, padded: rowScratch[band].base,
                                ring: ringScratch[band].base, ringStride: ringStride)
        }
    }

    /// Copies the pixels outside the blurred region unchanged.
    private func copyOutside(_ source: UnsafeMutablePointer<UInt8>, _ sourceStride: Int,
                             _ destination: UnsafeMutablePointer<UInt8>, _ destinationStride: Int) {
        let r = region, c = channels
        guard r.size != inputSize else { return }
        let rowBytes = c * inputSize.width
        for y in 0..<inputSize.height {
            let s = source + y * sourceStride, d = destination + y * destinationStride
            if y < r.y || y >= r.y + r.height {
                d.update(from: s, count: rowBytes)
            } else {
                d.update(from: s, count: c * r.x)
                let right = c * (r.x + r.width)
                (d + right).update(from: s + right, count: rowBytes - right)
            }
        }
    }
}

/// Hands the picture on unchanged (a blur of sigma 0).
final class CopyRenderer: FilterRenderer, PlaneRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }

    init(size: FrameSize) { inputSize = size }

    func render(_ source: RGBImage, into destination: RGBImage) { destination.copyPixels(from: source) }

    func render(_ source: Plane, into destination: Plane) {
        destination.copyPixels(from: source)
    }
}

/// A whole-picture blur and the scale after it as one planar pass: the decimated blur's small
/// picture is interpolated straight onto the scaled grid, so the full-size blurred picture is never
/// made. Only where that is the same picture: the blur must be wide enough (σ on every plane at
/// least 1.5 times the scale's stretch: the picture holds nothing the scale's antialiasing would remove) and in
/// the decimated range. The scale kernel's own variance is added to σ (bicubic's is about zero).
struct BlurAndScale: PlanarFilter {
    let sigma: Double
    let input: FrameSize
    let output: FrameSize

    init?(blur: GaussianBlur, scale: Scale, input: FrameSize, output: FrameSize) {
        let stretch = max(1, Double(input.width) / Double(output.width), Double(input.height) / Double(output.height))
        // Second moment of the resampling kernel, in output pixels (Keys cubic a = −0.6: −0.0267).
        let variance = switch scale.method {
        case .bicubic: -0.0267
        case .bilinear: 1.0 / 6
        case .area: 1.0 / 12
        }
        let sigma = (blur.sigma * blur.sigma + stretch * stretch * variance).squareRoot()
        for role in PlaneRole.allCases {
            let planeSigma = sigma / Double(1 << role.shift)
            guard planeSigma >= 1.5 * stretch, DecimationPlan(sigma: planeSigma) != nil else { return nil }
        }
        self.sigma = sigma
        self.input = input
        self.output = output
    }

    func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize { output }
    func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        throw .invalidGeometry(filter: description, reason: "a planar pass only")
    }
    func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        GaussianBlurRenderer(sigma: sigma / Double(1 << role.shift), inputSize: picture.shifted(by: role.shift),
                             resizedTo: output.shifted(by: role.shift), channels: 1)
    }
    var description: String { "blur and scale" }
}

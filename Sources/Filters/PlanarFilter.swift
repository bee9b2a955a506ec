// The chain's meaning is RGB, but Y′CbCr ↔ RGB is one affine map per pixel. A filter whose output
// samples are weighted sums of input samples with weights adding up to one (blur, scale, crop,
// pad, pixel moves) commutes with that map: running it on the decoded Y, Cb and Cr planes gives
// the picture the RGB chain would give, with no conversion at all. The differences are rounding
// (one step per pass instead of two conversions), RGB clipping of out-of-gamut colours, and how
// chroma between 4:2:0 samples is reconstructed; `PlanarChainTests` bounds them against the RGB
// chain on decoded media.

/// Renders one filter on one plane of a fixed size. Not shared between threads at once.
public protocol PlaneRenderer: AnyObject {
    var inputSize: FrameSize { get }
    var outputSize: FrameSize { get }
    /// Writes the filtered `source` into `destination` (sized `outputSize`); they never alias.
    func render(_ source: Plane, into destination: Plane)
}

/// A plane renderer that can write its destination around the cache (non-temporal stores of
/// whole lines). The planar chain asks it to for the pass that writes the chain's output, which
/// nothing reads again soon (the encoder takes it frames later); an intermediate buffer, read by
/// the next pass at once, stays in the cache.
protocol StreamingPlaneRenderer: PlaneRenderer {
    var streamsOutput: Bool { get set }
}

/// A filter that gives its RGB picture when run on each plane of a 4:2:0 picture on its own.
public protocol PlanarFilter: Filter {
    /// The renderer for `role`'s plane of a `picture`-sized input, or nil when this geometry does
    /// not fall on whole chroma samples (an odd offset or size). `color` gives fill colours' samples.
    func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)?
    /// Whether `makePlaneRenderer` would give a renderer, without making one.
    func acceptsPlanes(of picture: FrameSize) -> Bool
    /// Whether its plane renderers draw in place (`InPlacePlaneRenderer`): the planar chain then
    /// copies the decoder's picture before the first of them.
    var drawsInPlace: Bool { get }
}

extension PlanarFilter {
    public func acceptsPlanes(of picture: FrameSize) -> Bool { true }
    public var drawsInPlace: Bool { false }
}

/// A plane renderer whose picture depends on the output time (`enable=`, keyframes): the planar
/// chain calls this instead of `render(_:into:)`.
public protocol TimedPlaneRenderer: PlaneRenderer {
    func render(_ source: Plane, into destination: Plane, at time: FrameTime)
}

/// A plane renderer that draws over part of the picture, in place (text, an overlay): the planar
/// chain gives it the plane it is building and skips a copy.
public protocol InPlacePlaneRenderer: PlaneRenderer {
    func renderInPlace(_ plane: Plane, at time: FrameTime)
}

extension InPlacePlaneRenderer {
    /// The picture at `time` drawn on a copy of `source`.
    func render(_ source: Plane, into destination: Plane, at time: FrameTime) {
        destination.copyPixels(from: source)
        renderInPlace(destination, at: time)
    }

    public func render(_ source: Plane, into destination: Plane) { render(source, into: destination, at: .zero) }
}

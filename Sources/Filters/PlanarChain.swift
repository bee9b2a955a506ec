import Dispatch

// The chain's meaning is RGB, but Y′CbCr ↔ RGB is one affine map per pixel. A filter whose output
// samples are weighted sums of input samples with weights adding up to one (blur, scale, crop,
// pad, pixel moves) commutes with that map: running it on the decoded Y, Cb and Cr planes gives
// the picture the RGB chain would give, with no conversion at all. The differences are rounding
// (one step per pass instead of two conversions), RGB clipping of out-of-gamut colours, and how
// chroma between 4:2:0 samples is reconstructed; `PlanarChainTests` bounds them against the RGB
// chain on decoded media.

/// One 8-bit plane: `width`×`height` samples, rows `stride` bytes apart. A view: it does not own
/// the memory (an `AVFrame`'s plane or a `PlaneBuffer`). `ownsRowPadding`: a row's bytes past
/// `width`, up to `stride`, are its own padding, which a pass may overwrite (`PlanarYUV420View`).
public struct Plane: @unchecked Sendable {
    public var base: UnsafeMutablePointer<UInt8>
    public var width: Int
    public var height: Int
    public var stride: Int
    public var ownsRowPadding: Bool

    public init(base: UnsafeMutablePointer<UInt8>, width: Int, height: Int, stride: Int, ownsRowPadding: Bool = false) {
        (self.base, self.width, self.height, self.stride, self.ownsRowPadding) = (base, width, height, stride, ownsRowPadding)
    }

    public var size: FrameSize { FrameSize(width: width, height: height) }
    @inline(__always) func row(_ y: Int) -> UnsafeMutablePointer<UInt8> { base + y * stride }

    /// Copies `source`'s samples (the same size) into this plane.
    func copyPixels(from source: Plane) {
        for y in 0..<source.height { row(y).update(from: source.row(y), count: source.width) }
    }
}

/// Rows of samples at `base`, `stride` bytes apart, whatever their layout (RGB pixels, one plane).
struct SampleRows: @unchecked Sendable {
    let base: UnsafeMutablePointer<UInt8>
    let stride: Int

    init(base: UnsafeMutablePointer<UInt8>, stride: Int) { (self.base, self.stride) = (base, stride) }
    init(_ image: RGBImage) { self.init(base: image.baseAddress, stride: image.bytesPerRow) }
    init(_ plane: Plane) { self.init(base: plane.base, stride: plane.stride) }

    @inline(__always) func row(_ y: Int) -> UnsafeMutablePointer<UInt8> { base + y * stride }
}

/// Which plane of a 4:2:0 picture a plane renderer works on; chroma planes are half size each way.
public enum PlaneRole: Int, CaseIterable, Sendable {
    case luma, cb, cr

    /// log2 of the subsampling: sizes and positions on this plane are the picture's shifted by it.
    public var shift: Int { self == .luma ? 0 : 1 }
}

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

/// An 8-bit plane that owns its memory; rows 64-byte aligned, with a spare row for vector reads.
final class PlaneBuffer {
    let plane: Plane

    init(size: FrameSize) {
        let stride = (size.width + 63) / 64 * 64
        let count = stride * (size.height + 1)
        let raw = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 64)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: count)
        plane = Plane(base: raw.bindMemory(to: UInt8.self, capacity: count), width: size.width, height: size.height, stride: stride,
                      ownsRowPadding: true)
    }

    deinit { UnsafeMutableRawPointer(plane.base).deallocate() }
}

/// Runs a chain on the three planes of 4:2:0 pictures of a fixed size, when every filter in it is
/// planar and every size and offset along it is even (so chroma stays exactly half of luma).
/// Runs of mirrors and quarter turns are fused into one exact move, as in `ChainRenderer`, and the
/// move is put off past blurs and scales, so it moves the fewest samples.
public final class PlanarChainRenderer {
    public let inputSize: FrameSize
    public let outputSize: FrameSize
    /// One name per pass, as in `ChainRenderer`.
    public let passNames: [String]
    /// With `measuresPasses` on, the wall time each pass has taken so far (all planes), in nanoseconds.
    public private(set) var passNanoseconds: [UInt64]
    public var measuresPasses = false
    /// Whether some pass changes with time (text with a clock): then every picture is filtered at
    /// its own time even when it repeats the last input.
    public let isTimeDependent: Bool
    /// Per plane: each pass's renderer and the buffer it writes: nil for the last writing pass,
    /// which writes the destination, and for a pass that draws in place on what the pass before
    /// it wrote.
    private let planes: [[Stage]]

    private struct Stage {
        var renderer: any PlaneRenderer
        var output: PlaneBuffer?
        var inPlace: (any InPlacePlaneRenderer)?
        var timed: (any TimedPlaneRenderer)?

        init(renderer: any PlaneRenderer, output: PlaneBuffer?, inPlace: (any InPlacePlaneRenderer)?) {
            (self.renderer, self.output, self.inPlace) = (renderer, output, inPlace)
            timed = renderer as? any TimedPlaneRenderer
        }
    }

    /// Nil when the chain cannot run on the planes of `inputSize` pictures.
    /// `inputRange` .full: the source's samples are full range (yuvj420p); a first pass writes them
    /// as limited range (`RangeToLimited`), which the chain's filters and the output are in.
    public init?(chain: FilterChain, inputSize: FrameSize, color: YUVConverter, inputRange: YUVRange = .limited) {
        guard let passes = Self.executedPasses(of: chain, inputSize: inputSize, inputRange: inputRange) else { return nil }
        self.inputSize = inputSize
        var planes: [[Stage]] = []
        for role in PlaneRole.allCases {
            guard let renderers = Self.renderers(of: passes, inputSize: inputSize, role: role, color: color) else { return nil }
            // Ping-pong as in ChainRenderer: a writing pass reuses the buffer of the writing pass
            // before the previous one; the last writing pass writes the destination.
            let lastWriting = renderers.lastIndex { !($0 is any InPlacePlaneRenderer) }
            var stages: [Stage] = []
            var written: [PlaneBuffer?] = []
            for (index, renderer) in renderers.enumerated() {
                if let inPlace = renderer as? any InPlacePlaneRenderer, index > 0 {
                    stages.append(Stage(renderer: renderer, output: nil, inPlace: inPlace))
                    continue
                }
                guard index != lastWriting else {
                    (renderer as? any StreamingPlaneRenderer)?.streamsOutput = true
                    stages.append(Stage(renderer: renderer, output: nil, inPlace: nil))
                    continue
                }
                let reusable = written.count >= 2 ? written[written.count - 2] : nil
                let output = reusable?.plane.size == renderer.outputSize ? reusable! : PlaneBuffer(size: renderer.outputSize)
                stages.append(Stage(renderer: renderer, output: output, inPlace: nil))
                written.append(output)
            }
            planes.append(stages)
        }
        self.planes = planes
        outputSize = passes.last?.outputSize ?? inputSize
        passNames = passes.map(\.name)
        passNanoseconds = Array(repeating: 0, count: passes.count)
        isTimeDependent = chain.filters.contains { ($0 as? any TimeVaryingFilter)?.isTimeDependent == true }
    }

    /// Whether `init` succeeds for these arguments: the same passes, and every pass's plane renderer
    /// for each plane with the stream's colours (`eq` and `grayscale` are planar only on streams of
    /// their matrix), without the buffers. The one rule a planner asks.
    public static func supports(_ chain: FilterChain, inputSize: FrameSize, color: YUVConverter,
                                inputRange: YUVRange = .limited) -> Bool {
        guard let passes = executedPasses(of: chain, inputSize: inputSize, inputRange: inputRange) else { return false }
        return PlaneRole.allCases.allSatisfy { renderers(of: passes, inputSize: inputSize, role: $0, color: color) != nil }
    }

    /// The passes `init` runs: the chain's, after a range pass for full-range pictures, or after a
    /// copy when the first draws in place (it needs a picture of its own, never the decoder's).
    private static func executedPasses(of chain: FilterChain, inputSize: FrameSize, inputRange: YUVRange) -> [Pass]? {
        // An empty chain on full-range pictures is the range pass alone.
        let rangeOnly = chain.isEmpty && inputRange == .full && inputSize.width % 2 == 0 && inputSize.height % 2 == 0
        guard var passes = rangeOnly ? [] : passes(of: chain, inputSize: inputSize) else { return nil }
        if inputRange == .full {
            passes.insert(Pass(filter: RangeToLimited(), name: "range", outputSize: inputSize), at: 0)
        } else if let first = passes.first, first.filter.drawsInPlace {
            passes.insert(Pass(filter: PlanarMoveFilter(move: PlanarMove(transform: .identity)), name: "copy", outputSize: inputSize), at: 0)
        }
        return passes
    }

    /// One plane's renderers for `passes`, or nil when a filter cannot run on it.
    private static func renderers(of passes: [Pass], inputSize: FrameSize, role: PlaneRole,
                                  color: YUVConverter) -> [any PlaneRenderer]? {
        var renderers: [any PlaneRenderer] = []
        var size = inputSize
        for pass in passes {
            guard let renderer = pass.filter.makePlaneRenderer(picture: size, role: role, color: color) else { return nil }
            renderers.append(renderer)
            size = pass.outputSize
        }
        return renderers
    }

    private struct Pass {
        var filter: any PlanarFilter
        var name: String
        var outputSize: FrameSize
    }

    /// The chain as planar passes (fused moves), or nil when a filter is not planar or a size is odd.
    private static func passes(of chain: FilterChain, inputSize: FrameSize) -> [Pass]? {
        guard !chain.isEmpty, inputSize.width % 2 == 0, inputSize.height % 2 == 0 else { return nil }
        var passes: [Pass] = []
        var size = inputSize
        var pending: MoveRun?
        /// A scale right after a whole-picture blur: one pass that interpolates the blurred small
        /// picture straight onto the scale's grid (`BlurAndScale`), when that gives the same picture.
        func fuseBlurAndScale() {
            guard passes.count >= 2, let scale = passes[passes.count - 1].filter as? Scale,
                  let blur = passes[passes.count - 2].filter as? GaussianBlur, blur.region == nil else { return }
            let input = passes.count >= 3 ? passes[passes.count - 3].outputSize : inputSize
            guard let fused = BlurAndScale(blur: blur, scale: scale, input: input, output: passes[passes.count - 1].outputSize) else { return }
            let name = passes[passes.count - 2].name + " + " + passes[passes.count - 1].name
            passes.removeLast(2)
            passes.append(Pass(filter: fused, name: name, outputSize: fused.output))
        }
        func flush() {
            if let p = pending, !p.transform.isIdentity {
                passes.append(Pass(filter: PlanarMoveFilter(move: PlanarMove(transform: p.transform)), name: p.name, outputSize: p.outputSize))
            }
            pending = nil
        }
        for filter in chain.filters {
            if let next = MoveRun.fold(filter, at: size, into: &pending) {
                size = next
                continue
            }
            // A pending move commutes with a whole-picture blur and with a scale (its target turned
            // back): those run first, and the move once at the end, on the smaller picture.
            if let p = pending, !p.transform.isIdentity {
                if let blur = filter as? GaussianBlur, blur.region == nil {
                    passes.append(Pass(filter: blur, name: blur.description, outputSize: p.input))
                    continue
                }
                if let scale = filter as? Scale, let target = try? scale.outputSize(for: size), target.width % 2 == 0,
                   target.height % 2 == 0 {
                    let unturned = p.transform.transposes ? target.swapped : target
                    passes.append(Pass(filter: Scale(.exact(unturned), method: scale.method), name: scale.description, outputSize: unturned))
                    pending?.input = unturned
                    size = target
                    fuseBlurAndScale()
                    continue
                }
            }
            flush()
            guard let planar = filter as? any PlanarFilter, let next = try? filter.outputSize(for: size),
                  next.width % 2 == 0, next.height % 2 == 0 else { return nil }
            passes.append(Pass(filter: planar, name: filter.description, outputSize: next))
            size = next
            fuseBlurAndScale()
        }
        flush()
        // A chain of moves that cancel out still runs: one identity copy.
        if passes.isEmpty {
            passes.append(Pass(filter: PlanarMoveFilter(move: PlanarMove(transform: .identity)), name: "copy", outputSize: size))
        }
        return passes
    }

    /// Filters `source` (sized `inputSize`) into `destination` (sized `outputSize`), as the picture at `time`.
    public func render(_ source: PlanarYUV420View, into destination: PlanarYUV420View, at time: FrameTime = .zero) {
        precondition(FrameSize(source.width, source.height) == inputSize, "PlanarChainRenderer made for \(inputSize)")
        precondition(FrameSize(destination.width, destination.height) == outputSize, "PlanarChainRenderer makes \(outputSize)")
        let sources = source.planes, destinations = destination.planes
        for (plane, stages) in planes.enumerated() {
            var current = sources[plane]
            for (index, stage) in stages.enumerated() {
                let start = measuresPasses ? DispatchTime.now().uptimeNanoseconds : 0
                if let inPlace = stage.inPlace {
                    inPlace.renderInPlace(current, at: time)
                } else {
                    let target = stage.output?.plane ?? destinations[plane]
                    if let timed = stage.timed {
                        timed.render(current, into: target, at: time)
                    } else {
                        stage.renderer.render(current, into: target)
                    }
                    current = target
                }
                if measuresPasses { passNanoseconds[index] += DispatchTime.now().uptimeNanoseconds - start }
            }
        }
    }
}

extension PlanarYUV420View {
    /// Y, Cb, Cr as planes.
    var planes: [Plane] {
        [Plane(base: y, width: width, height: height, stride: yStride, ownsRowPadding: ownsRowPadding),
         Plane(base: u, width: chromaWidth, height: chromaHeight, stride: uStride, ownsRowPadding: ownsRowPadding),
         Plane(base: v, width: chromaWidth, height: chromaHeight, stride: vStride, ownsRowPadding: ownsRowPadding)]
    }
}

extension PixelRect {
    /// Every edge on an even pixel: the rectangle falls on whole 4:2:0 chroma samples.
    var isEven: Bool { x % 2 == 0 && y % 2 == 0 && width % 2 == 0 && height % 2 == 0 }

    func shifted(by shift: Int) -> PixelRect {
        PixelRect(x: x >> shift, y: y >> shift, width: width >> shift, height: height >> shift)
    }
}

extension FrameSize {
    func shifted(by shift: Int) -> FrameSize { FrameSize(width: width >> shift, height: height >> shift) }
}

// MARK: The planar filters

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

extension Scale: PlanarFilter {
    /// Not for a downscale so strong that 16-bit weights lose the kernel's shape (`PlaneScaler.isPrecise`).
    public func acceptsPlanes(of picture: FrameSize) -> Bool {
        guard let output = try? outputSize(for: picture) else { return false }
        return [0, 1].allSatisfy {
            PlaneScaler.isPrecise(method: method, inputSize: picture.shifted(by: $0), outputSize: output.shifted(by: $0))
        }
    }

    public func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        guard let output = try? outputSize(for: picture) else { return nil }
        return PlaneScaler(method: method, inputSize: picture.shifted(by: role.shift), outputSize: output.shifted(by: role.shift))
    }
}

extension Crop: PlanarFilter {
    public func acceptsPlanes(of picture: FrameSize) -> Bool { rect.isEven }

    public func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        guard rect.isEven, rect.isInside(picture) else { return nil }
        let plane = rect.shifted(by: role.shift)
        return PlaneRectRenderer(inputSize: picture.shifted(by: role.shift), outputSize: plane.size, rect: plane)
    }
}

extension Pad: PlanarFilter {
    /// Where the picture sits on the canvas (centred), or nil when the canvas is smaller.
    func offsets(for input: FrameSize) -> (x: Int, y: Int)? {
        guard width >= input.width, height >= input.height else { return nil }
        return ((width - input.width) / 2, (height - input.height) / 2)
    }

    public func acceptsPlanes(of picture: FrameSize) -> Bool {
        guard let offset = offsets(for: picture) else { return false }
        return offset.x % 2 == 0 && offset.y % 2 == 0 && width % 2 == 0 && height % 2 == 0
    }

    public func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        guard acceptsPlanes(of: picture), let offset = offsets(for: picture) else { return nil }
        let samples = color.samples(of: fill)
        let value = role == .luma ? samples.y : role == .cb ? samples.cb : samples.cr
        let input = picture.shifted(by: role.shift)
        return PlaneRectRenderer(inputSize: input, outputSize: FrameSize(width: width, height: height).shifted(by: role.shift),
                                 rect: PixelRect(x: 0, y: 0, width: input.width, height: input.height),
                                 x: offset.x >> role.shift, y: offset.y >> role.shift, fill: value)
    }
}

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

/// A fused run of mirrors and quarter turns, as a planar pass.
struct PlanarMoveFilter: PlanarFilter {
    let move: PlanarMove
    func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize { move.outputSize(for: input) }
    func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        D4Renderer(transform: move.transform, inputSize: input)
    }
    func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        PlaneMoveRenderer(move: move, inputSize: picture.shifted(by: role.shift))
    }
    var description: String { "move" }
}

// MARK: Plane renderers

final class PlaneMoveRenderer: StreamingPlaneRenderer {
    let inputSize: FrameSize
    let outputSize: FrameSize
    private let move: PlanarMove
    var streamsOutput = false

    init(move: PlanarMove, inputSize: FrameSize) {
        self.move = move
        self.inputSize = inputSize
        outputSize = move.outputSize(for: inputSize)
    }

    func render(_ source: Plane, into destination: Plane) {
        move.apply(source.base, sourceStride: source.stride, size: inputSize, into: destination.base, destinationStride: destination.stride,
                   streaming: streamsOutput, ownsRowPadding: destination.ownsRowPadding)
    }
}

/// Copies `rect` of the source plane to (x, y) of the destination; the rest of the destination is
/// `fill` (a pad's canvas). A crop is the rectangle at (0, 0) with nothing left to fill.
final class PlaneRectRenderer: PlaneRenderer {
    let inputSize: FrameSize
    let outputSize: FrameSize
    private let rect: PixelRect
    private let x: Int, y: Int
    private let fill: UInt8

    init(inputSize: FrameSize, outputSize: FrameSize, rect: PixelRect, x: Int = 0, y: Int = 0, fill: UInt8 = 0) {
        (self.inputSize, self.outputSize, self.rect, self.x, self.y, self.fill) = (inputSize, outputSize, rect, x, y, fill)
    }

    func render(_ source: Plane, into destination: Plane) {
        let w = outputSize.width
        for v in 0..<outputSize.height {
            let d = destination.row(v)
            guard v >= y, v < y + rect.height else { d.update(repeating: fill, count: w); continue }
            d.update(repeating: fill, count: x)
            (d + x).update(from: source.row(rect.y + v - y) + rect.x, count: rect.width)
            (d + x + rect.width).update(repeating: fill, count: w - x - rect.width)
        }
    }
}

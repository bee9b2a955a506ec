import Dispatch

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

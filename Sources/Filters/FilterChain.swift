import Dispatch

/// An ordered list of filters, written in the chain grammar as `filter ('|' filter)*` with
/// `filter := name arg*` and `arg := value | key=value` (see `FilterCatalog.definitions`).
public struct FilterChain: Sendable, CustomStringConvertible {
    public var filters: [any Filter]

    public init(_ filters: [any Filter] = []) {
        self.filters = filters
    }

    /// Parses the one-line form, e.g. `scale fit=1280x720 | blur 6 | rotate 90`. Blank text is the
    /// empty chain. Double quotes keep spaces, `|` and `#` in a value (`text "a | b"`); inside them
    /// `\"` and `\\` stand for `"` and `\`. `files` says which files the text may make it read
    /// (`overlay FILE`, `font=`, `track=`): any, as the operator's own chain, unless told otherwise.
    public init(parsing text: String, files: ChainFileAccess = .unrestricted) throws(ChainSyntaxError) {
        filters = []
        guard text.unicodeScalars.contains(where: { !$0.properties.isWhitespace }) else { return }
        for (index, tokens) in try ChainTokenizer.filters(text).enumerated() {
            guard !tokens.isEmpty else { throw .emptyFilter(position: index + 1) }
            filters.append(try FilterCatalog.parseFilter(tokens, files: files))
        }
    }

    /// Parses the file form: one filter per line (or several joined by `|`), `#` outside quotes
    /// starts a comment, blank lines are ignored. Errors say which line. Lines end at `\n` (a `\r`
    /// before it is white space), split as scalars like the words (`\r\n` is one `Character`).
    public init(parsingFile text: String, files: ChainFileAccess = .unrestricted) throws(ChainSyntaxError) {
        filters = []
        for (number, line) in text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let content = ChainTokenizer.strippingComment(Substring(line))
            guard content.unicodeScalars.contains(where: { !$0.properties.isWhitespace }) else { continue }
            do {
                filters += try FilterChain(parsing: String(content), files: files).filters
            } catch {
                throw .onLine(number + 1, error)
            }
        }
    }

    public var isEmpty: Bool { filters.isEmpty }

    /// The output size of the whole chain for `input`; throws at the first filter that cannot apply.
    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize {
        var size = input
        for filter in filters { size = try filter.outputSize(for: size) }
        return size
    }

    /// The chain in the grammar; `FilterChain(parsing: chain.description)` gives it back.
    public var description: String { filters.map(\.description).joined(separator: " | ") }
}

/// Renders a chain for one stream of frames of a fixed size. Runs of mirrors and quarter turns are
/// fused into one exact D4 pass; buffers are allocated once, here.
public final class ChainRenderer {
    public let inputSize: FrameSize
    public let outputSize: FrameSize
    private struct Stage {
        var renderer: any FilterRenderer
        /// Where the pass writes; nil for a pass that works in place on the current picture.
        var output: RGBImage?
        /// An in-place first pass copies a source it may not change here first.
        var spare: RGBImage?
    }
    private let stages: [Stage]
    /// One name per pass: the filter as written, or a fused run's filters joined by " + ".
    public let passNames: [String]
    /// With `measuresPasses` on, the wall time each pass has taken so far, in nanoseconds.
    public private(set) var passNanoseconds: [UInt64]
    /// Off by default: then `render` reads no clock.
    public var measuresPasses = false
    /// Whether some pass changes with time (`enable=`, keyframes, a track): then every picture is
    /// filtered at its own time even when it repeats the last input.
    public let isTimeDependent: Bool

    public init(chain: FilterChain, inputSize: FrameSize) throws(FilterError) {
        self.inputSize = inputSize
        var renderers: [any FilterRenderer] = []
        var names: [String] = []
        var size = inputSize
        var pending: MoveRun?
        func flush() {
            if let p = pending, !p.transform.isIdentity {
                renderers.append(D4Renderer(transform: p.transform, inputSize: p.input))
                names.append(p.name)
            }
            pending = nil
        }
        for filter in chain.filters {
            if let next = MoveRun.fold(filter, at: size, into: &pending) {
                size = next
                continue
            }
            flush()
            let renderer = try filter.makeRenderer(for: size)
            renderers.append(renderer)
            names.append(filter.description)
            size = renderer.outputSize
        }
        flush()
        outputSize = size
        isTimeDependent = chain.filters.contains { ($0 as? any TimeVaryingFilter)?.isTimeDependent == true }
        // Each pass writes into a buffer of its size that is not the one it reads: at most two per
        // size, whatever the chain's length. An in-place pass writes into what it reads.
        var pool: [RGBImage] = []
        var current: RGBImage?  // nil: the caller's source (or the first pass's spare copy of it)
        var stages: [Stage] = []
        for (index, renderer) in renderers.enumerated() {
            if renderer is any InPlaceFilterRenderer {
                let spare = index == 0 ? RGBImage(size: renderer.inputSize) : nil
                stages.append(Stage(renderer: renderer, output: nil, spare: spare))
                continue
            }
            let output = pool.first { $0.size == renderer.outputSize && $0 !== current } ?? {
                let image = RGBImage(size: renderer.outputSize)
                pool.append(image)
                return image
            }()
            stages.append(Stage(renderer: renderer, output: output, spare: nil))
            current = output
        }
        self.stages = stages
        passNames = names
        passNanoseconds = Array(repeating: 0, count: stages.count)
    }

    /// Filters `source` (sized `inputSize`) as the first picture, at time zero. The result is
    /// owned by the renderer and valid until the next call; with no stages it is `source` itself.
    public func render(_ source: RGBImage) -> RGBImage {
        render(source, at: .zero)
    }

    /// Filters `source` as the picture at `time`. With `sourceIsScratch` the chain may change
    /// `source` (a pass that works in place then needs no copy of it).
    public func render(_ source: RGBImage, at time: FrameTime, sourceIsScratch: Bool = false) -> RGBImage {
        precondition(source.size == inputSize, "ChainRenderer made for \(inputSize), got \(source.size)")
        var current = source
        for (index, stage) in stages.enumerated() {
            let start = measuresPasses ? DispatchTime.now().uptimeNanoseconds : 0
            if let output = stage.output {
                stage.renderer.render(current, into: output, time: time)
                current = output
            } else if let inPlace = stage.renderer as? any InPlaceFilterRenderer {
                if let spare = stage.spare, !sourceIsScratch {
                    spare.copyPixels(from: current)
                    current = spare
                }
                inPlace.renderInPlace(current, at: time)
            }
            if measuresPasses { passNanoseconds[index] += DispatchTime.now().uptimeNanoseconds - start }
        }
        return current
    }

    /// How many passes a frame goes through (fused D4 runs count once).
    public var passCount: Int { stages.count }
}
